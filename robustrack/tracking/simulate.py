"""The steps of a tracking run: the three systems of W 5.2 in order, then their assessment.

Each step is one function of a :class:`~robustrack.tracking.problem.TrackingProblem`:
:func:`integrate_nominal_run` solves the nominal system once, :func:`prepare` checks an actual
plant and picks the kernels, :mod:`~robustrack.tracking.integrate` integrates the controlled
and the uncompensated systems, :func:`assemble` puts the result together and measures it
(:mod:`~robustrack.tracking.assess`).
"""

from __future__ import annotations

import contextlib
import weakref
import dataclasses
from dataclasses import dataclass

import numpy as np

from ..errors import ParameterError, SolverError
from ..plants.base import first_limit
from ..plants.motion import contact_forces
from .along import assumption_norms, control_force, controls, merge, solution_points
from .assess import (assumptions_held, default_transient, dropped_term, dropped_term_gain, peak_metrics,
                     start_in_invariant_set, tracking_metrics)
from ..plants.motion import check_batch_contract, check_mass_matrix
from .backend import CompilationFallback, nominal_loop, prepare as prepare_loop
from .redundancy import say_free_directions
from .integrate import integrate_controlled, integrate_nominal, integrate_uncompensated, say_limits
from .results import RunInfo, TrackingResult
from .rhs import nominal_motion

__all__ = ["integrate_nominal_run", "track", "track_peaks", "TrackingPeaks", "NominalRun",
           "prepare", "assemble", "Setup", "CompilationFallback", "check_positive_definite"]


@dataclass(frozen=True)
class NominalRun:
    """The nominal system of a problem integrated once (W 5.2.9–5.2.11): shared by every actual plant.

    Attributes
    ----------
    problem : TrackingProblem
        What was solved (its grid, tolerances and backend serve every run tracked against it).
    solution : NominalSolution
        Steps and DOP853 dense output (:mod:`robustrack.tracking.integrate`).
    actuators : BoundActuators or None
        The problem's actuators bound to the nominal plant and constraint (None: none).
    """

    problem: TrackingProblem
    solution: object
    actuators: object = None

    nominal = property(lambda self: self.problem.nominal, doc="The nominal plant.")
    constraint = property(lambda self: self.problem.constraint, doc="The constraint (None: unconstrained).")
    q0 = property(lambda self: self.problem.q0, doc="Initial positions of the nominal system.")
    qd0 = property(lambda self: self.problem.qd0, doc="Initial velocities of the nominal system.")
    t_span = property(lambda self: self.problem.t_span, doc="The horizon (t0, t1).")
    t_eval = property(lambda self: self.problem.t_eval, doc="Output grid of every run tracked against it.")
    rtol = property(lambda self: self.problem.rtol, doc="Relative tolerance of every solve.")
    atol = property(lambda self: self.problem.atol, doc="Absolute tolerance of every solve.")
    backend = property(lambda self: self.problem.backend, doc='"auto" or "numpy".')

    def kept(self, name: str, compute):
        """``compute()``, computed once per run and kept beside the frozen fields (not one of them): what every
        actual plant tracked against the run shares (a campaign's samples ask again and again).

        Parameters
        ----------
        name : str
            The attribute it is kept as (``_`` and a name of what it is).
        compute : callable
            ``compute()``, its value (called at the first request only).

        Returns
        -------
        object
        """
        found = self.__dict__.get(name, _NOT_KEPT)
        if found is _NOT_KEPT:
            found = compute()
            object.__setattr__(self, name, found)
        return found


_NOT_KEPT = object()


def integrate_nominal_run(problem: TrackingProblem) -> NominalRun:
    """Integrate a problem's nominal system once; :func:`track` then follows it with any actual plant.

    Parameters
    ----------
    problem : TrackingProblem

    Returns
    -------
    NominalRun

    Raises
    ------
    RealizabilityError
        The actuators cannot realize the constraint force at the start or along the run.
    SolverError
        The nominal system's solver failed.
    """
    if not getattr(problem, "is_tracking_problem", False):  # (this module never imports the problem's)
        raise ParameterError(f"`problem` must be a robustrack.tracking.TrackingProblem; got "
                             f"{type(problem).__name__}.")
    nominal, constraint, actuators = problem.nominal, problem.constraint, problem.actuators
    t0, t1 = problem.t_span
    bound = None if actuators is None else actuators.bind(nominal, constraint)
    # clear errors (shapes, rank condition, realizability) before solving
    nominal_motion(nominal, constraint, problem.q0, problem.qd0, t0, actuators=bound)
    if problem not in _SAID_FREE:  # a redundant robot: said before running, once per problem
        _SAID_FREE.add(problem)
        say_free_directions(nominal, constraint, problem.q0, problem.qd0, t0)
    loop = nominal_loop(problem, bound)
    with _user_exceptions() as raised:
        sol = integrate_nominal(loop, problem.q0, problem.qd0, (t0, t1), rtol=problem.rtol, atol=problem.atol)
    if raised or (not sol.stats.success and "not finite" in str(sol.stats.message)):
        # a user's function raised (numba's cfunc prints and swallows it) or gave NaN on the compiled path: the
        # numpy reference from the start meets the same call and names the function with t, q, q̇ (one line)
        with _user_exceptions():
            integrate_nominal(nominal_loop(problem, bound, reference=True), problem.q0, problem.qd0, (t0, t1),
                              rtol=problem.rtol, atol=problem.atol)
        if raised:
            raise ParameterError(f"a function of the nominal plant or constraint raised on the compiled path "
                                 f"({raised[0]}) where the same run in Python did not: check it for state-dependent "
                                 "branches numba treats differently, or run with backend='numpy'.")
    if not sol.stats.success:
        if bound is not None:
            _realizability_at_failure(problem, bound, sol)
        raise SolverError(f"the nominal system: DOP853 failed at t = {sol.t[-1]:.6g}: {sol.stats.message}",
                          t_reached=float(sol.t[-1]), partial=None)
    return NominalRun(problem, sol, bound)


def _realizability_at_failure(problem, bound, sol):
    """Raise RealizabilityError if an actuated nominal solve failed for want of a realizable force.

    The compiled kernels return NaN where τᶜ does not exist; the numpy reference, restarted
    from the last accepted step, meets the same state and names the time, the state and why.
    """
    n = problem.n
    y = sol.y[-1]
    integrate_nominal(nominal_loop(problem, bound, reference=True), y[:n], y[n:], (float(sol.t[-1]), problem.t_span[1]),
                      rtol=problem.rtol, atol=problem.atol)


@dataclass(frozen=True)
class Setup:
    """The validated inputs of one tracked actual plant and the loop that integrates it.

    Attributes
    ----------
    x0 : ndarray (2n + n_z,)
        The controlled system's initial state (q_c, q̇_c, z).
    sample_period : float or None
    transient : float
        Start of the bound check from t0, s.
    loop : Loop
        :func:`~robustrack.tracking.backend.prepare`'s (compiled, or numpy after a notice).
    start_note : str or None
        Why the run is only observed: its start lies outside the bound's invariant set
        (:func:`~robustrack.tracking.assess.start_in_invariant_set`); None when it lies inside, or nothing is promised.
    """

    x0: np.ndarray
    sample_period: float | None
    transient: float
    loop: object
    start_note: str | None = None


def prepare(run: NominalRun, actual, *, measure: bool = False) -> Setup:
    """Check an actual plant against a run and load the loop's kernels.

    Parameters
    ----------
    run : NominalRun
    actual : Plant
    measure : bool
        With the kernels that measure along a run (keyword-only; :func:`track_peaks`, a campaign).

    Returns
    -------
    Setup
        The controlled system's initial state, the sampling, the transient and the
        loop (:func:`~robustrack.tracking.backend.prepare`: numpy after a :class:`CompilationFallback` notice).
    """
    pb = run.problem
    nominal, compensator = pb.nominal, pb.compensator
    n = nominal.n
    if actual.n != n:
        raise ParameterError(f"The actual plant has {actual.n} coordinates; the nominal has {n}.")
    qc0 = pb.q0.copy() if pb.qc0 is None else pb.qc0.copy()
    qcd0 = pb.qd0.copy() if pb.qcd0 is None else pb.qcd0.copy()
    check_positive_definite(actual, "actual", qc0, pb.t_span[0])  # before a solve that would divide by it
    if actual is not nominal:
        check_batch_contract(actual, None, qc0, qcd0, pb.t_span[0])
    # M symmetric and positive definite at a few states along the nominal run, in Python: the compiled loop does
    # not check M as it integrates (a non-symmetric M ran there and reported "bounds held")
    sol = run.solution
    states, times = run.kept("_mass_check_states", lambda: _mass_check_states(sol))
    run.kept("_nominal_mass_checked", lambda: check_mass_matrix(nominal, states[:, :n], states[:, n:2 * n], times,
                                                                 role="nominal", definite=False) or True)
    check_mass_matrix(actual, states[:, :n], states[:, n:2 * n], times, role="actual")
    z0 = compensator.initial_state(n) if compensator is not None else np.zeros(0)
    transient, start_note = run.kept("_transient", lambda: _transient(pb, qc0, qcd0))
    loop = prepare_loop(pb, actual, run.actuators, stacklevel=4, measure=measure)
    return Setup(np.concatenate([qc0, qcd0, z0]), pb.sample_period, transient, loop, start_note)


def _mass_check_states(sol):
    """The (at most 5) states along a nominal solution where :func:`prepare` checks M: (states, times)."""
    picks = np.unique(np.linspace(0, len(sol.t) - 1, min(len(sol.t), 5)).astype(int))
    return np.asarray(sol.y)[picks], np.asarray(sol.t)[picks]


def _transient(pb, qc0, qcd0):
    """(the transient, why the start is only observed or None) of a problem whose controlled system starts at
    (qc0, qcd0): the same for every actual plant tracked against its run."""
    t0, t1 = pb.t_span
    inside, start_note = starting_set(pb, qc0 - pb.q0, qcd0 - pb.qd0)
    transient = pb.transient
    if transient is None:
        transient = default_transient(qc0 - pb.q0, qcd0 - pb.qd0, t1 - t0, inside=inside)
    return float(transient), start_note


def starting_set(pb, e0, edot0):
    """:func:`~robustrack.tracking.assess.start_in_invariant_set` of a problem's exact-measurement bound at its Γ
    ((None, None) in a sampled loop: its box holds the start or its coverage says not, docs/theory/sensing.md)."""
    if pb.compensator is None or pb.sensor is not None or pb.sample_period is not None:
        return None, None
    return start_in_invariant_set(pb.compensator, pb.compensator.bounds(pb.gamma), e0, edot0)


#: The problems whose free directions were said (:func:`~robustrack.tracking.redundancy.say_free_directions`).
_SAID_FREE = weakref.WeakSet()


def track(run: NominalRun, actual=None, *, uncompensated: bool = False, raise_on_failure: bool = True,
          progress=None):
    """Follow a nominal run with one actual plant: the controlled system (and the uncompensated copy).

    Parameters
    ----------
    run : NominalRun
        From :meth:`TrackingProblem.nominal_run` (its problem gives the compensator, the
        sampling, the grid, the tolerances and the backend).
    actual : Plant, optional
        Default: the problem's actual plant, else its nominal one.
    uncompensated, raise_on_failure, progress
        As :func:`~robustrack.tracking.simulate_tracking` (keyword-only); ``uncompensated`` defaults to False here.

    Returns
    -------
    TrackingResult

    Raises
    ------
    ParameterError
        Invalid inputs.
    SolverError
        The controlled system's solver failed and ``raise_on_failure`` is True.
    """
    pb = run.problem
    actual = actual if actual is not None else (pb.actual if pb.actual is not None else pb.nominal)
    setup = prepare(run, actual)
    nominal, constraint, compensator, nom = pb.nominal, pb.constraint, pb.compensator, run.solution
    with _user_exceptions() as raised:
        ctl = integrate_controlled(setup.loop, nom, setup.x0, pb.t_span, pb.t_eval,
                                   sample_period=setup.sample_period, method=pb.method, rtol=pb.rtol, atol=pb.atol,
                                   progress=progress, sensor=pb.sensor)
    if raised or (not ctl.stats.success and ctl.t_steps is not None and len(ctl.t_steps)):
        _name_user_failure(nominal, actual, ctl, raised)
    unc = None
    if uncompensated and compensator is None:
        # no compensator: the controlled system IS the uncompensated one, already integrated
        unc = (ctl.t, ctl.x, ctl.t_steps, ctl.x_steps, ctl.stats)
    elif uncompensated:
        unc = integrate_uncompensated(setup.loop, nom, setup.x0[: 2 * nominal.n], pb.t_span, pb.t_eval,
                                      rtol=pb.rtol, atol=pb.atol)
    if progress is not None:
        progress(float(ctl.t[-1]) if ctl.t.size else pb.t_span[0], pb.t_span[1])
    result = assemble(run, actual, setup, ctl, unc)
    say_limits(actual, result.t, result.qc, result.qcd, "the controlled system")
    say_efforts(result)
    if not result.success:
        reached = float(result.t[-1]) if result.t.size else pb.t_span[0]
        if ctl.u_times is not None and ctl.u_times.size:  # a sampled run: the last sample it computed
            reached = max(reached, float(ctl.u_times[-1]))
        _fail(f"{ctl.stats.method} failed at t = {reached:.6g}: {result.solver['message']}", reached, result,
              raise_on_failure)
    return result


@dataclass(frozen=True)
class TrackingPeaks:
    """What a campaign keeps of one tracked actual plant (:func:`track_peaks`).

    Attributes
    ----------
    success : bool
        The controlled solve reached the end of the horizon.
    message : str
        The solver's message.
    t_reached : float
        Where the controlled solve stopped.
    max_abs_e, max_abs_edot, max_abs_Qu : float or None
        max ‖e‖∞, max ‖ė‖∞, max ‖Qᵘ‖∞ on the solution (every accepted step and the
        output grid); None when the solve produced nothing.
    bounds_held : bool or None
        Whether the promised bounds held after the transient (None: nothing promised, or
        not judged — ``bounds_note`` says why).
    bounds_note : str or None
    method : str
        The controlled system's integrator.
    max_norm_dq, max_norm_Mtilde : float or None
        max_t ‖δq‖∞ and max_t ‖M̃_a‖∞ along the solution (what the bounds assume,
        :func:`~robustrack.tracking.assess.uncertainty_along_run`); None when nothing was solved.
    assumptions_held : bool or None
        :func:`~robustrack.tracking.assess.assumptions_held` (None: the bound assumes nothing of them).
    max_norm_P : float or None
        GD's max_t ‖(I − M̃_a)(e + K_i∫e)‖∞ (W 8.2.17); None for the other compensators.
    """

    success: bool
    message: str
    t_reached: float
    max_abs_e: float | None
    max_abs_edot: float | None
    max_abs_Qu: float | None
    bounds_held: bool | None
    bounds_note: str | None
    method: str
    max_norm_dq: float | None = None
    max_norm_Mtilde: float | None = None
    assumptions_held: bool | None = None
    max_norm_P: float | None = None
    #: Each actuator's peak demanded |τ| (the law's, before the motors clip it); None without actuators.
    max_abs_tau: tuple | None = None


def track_peaks(run: NominalRun, actual, *, sensor=None) -> TrackingPeaks:
    """:func:`track` for campaigns: the controlled system only, and only its peaks and the bound check.

    The same solve and the same points as :func:`track`, without the result arrays, the residuals
    and the uncompensated system that make up most of :func:`assemble`'s cost. The loop measures the peaks and
    the assumptions at the solution's points (:meth:`~robustrack.tracking.backend.Loop.measure`): the compiled
    loop on kernels (the nominal at the output grid kept with the run after the first sample, at the steps the
    one the BDF evaluated), the numbers of ``TrackingResult.metrics`` to rounding (the same formulas in another
    order), the verdicts the same; the numpy loop bit for bit. A failed solve is returned
    (``success`` False, peaks up to where it stopped), never raised.

    Parameters
    ----------
    run : NominalRun
    actual : Plant
    sensor : Sensor, optional
        The sensor of this plant's run (a campaign sample's own noise stream; keyword-only); default the problem's.

    Returns
    -------
    TrackingPeaks

    Raises
    ------
    ParameterError
        Invalid inputs (as :func:`track`).
    """
    pb = run.problem
    compensator = pb.compensator
    if run.actuators is not None:
        # actuated: Qᵘ, saturation and whether the promise applies need the whole assessment
        result = track(run, actual, raise_on_failure=False)
        m = result.metrics
        return TrackingPeaks(result.success, result.solver.get("message", ""),
                             float(result.t[-1]) if result.t.size else float(pb.t_span[0]),
                             m.max_abs_e, m.max_abs_edot, m.max_abs_Qu, m.bounds_held, result.info["bounds_note"],
                             result.solver.get("method", ""), m.max_norm_dq, m.max_norm_Mtilde, m.assumptions_held,
                             m.max_norm_P, None if m.max_abs_tau_demand_per_actuator is None
                             else tuple(m.max_abs_tau_demand_per_actuator))
    setup = prepare(run, actual, measure=True)
    ctl = integrate_controlled(setup.loop, run.solution, setup.x0, pb.t_span, pb.t_eval,
                               sample_period=setup.sample_period, method=pb.method, rtol=pb.rtol, atol=pb.atol,
                               sensor=pb.sensor if sensor is None else sensor)
    note = None
    peaks = {"max_abs_e": None, "max_abs_edot": None, "max_abs_Qu": None, "bounds_held": None}
    seen = {"max_norm_dq": None, "max_norm_Mtilde": None, "assumptions_held": None, "max_norm_P": None}
    measured = setup.loop.measure(run, ctl)
    if measured is not None:
        bounds = pb.promised_bounds(run)
        tf, norms = measured  # row norms: peak_metrics' row maxima of them are the rows' norms, bit for bit
        peaks = peak_metrics(tf, norms[:, 0:1], norms[:, 1:2], norms[:, 2:3], bounds,
                             transient=pb.t_span[0] + setup.transient)
        P = (None if dropped_term_gain(compensator) is None else
             float(dropped_term(compensator, norms[:, 3], norms[:, 5]).max()))
        seen = _seen(pb, bounds, float(norms[:, 3].max()), float(norms[:, 4].max()), P)
        if _estimator_note(pb, run, ctl, bounds) is not None:
            seen["assumptions_held"] = False
    reached = float(ctl.t[-1]) if ctl.t.size else float(pb.t_span[0])
    if note is None and not ctl.stats.success and peaks["bounds_held"]:
        note = _stopped_note(ctl, reached)
    if note is not None:
        peaks["bounds_held"] = None
    return TrackingPeaks(bool(run.solution.stats.success and ctl.stats.success), ctl.stats.message, reached,
                         peaks["max_abs_e"], peaks["max_abs_edot"], peaks["max_abs_Qu"], peaks["bounds_held"],
                         note, ctl.stats.method, **seen)


def _assumptions_seen(pb, actual, tf, xf, yf, Qcf, bounds) -> dict:
    """max ‖δq‖∞, max ‖M̃_a‖∞ on the solution points (t, controlled x, nominal y, Qᶜ there) and whether
    the bounds' assumptions held: what :func:`assemble` reports."""
    dq, mt, P = assumption_norms(pb.nominal, actual, pb.compensator, tf, xf, yf, Qcf)
    return _seen(pb, bounds, float(dq.max()), float(mt.max()),
                 None if P is None else float(dropped_term(pb.compensator, dq, P).max()))


def _seen(pb, bounds, dq, mt, P) -> dict:
    """The largest ‖δq‖∞, ‖M̃_a‖∞ (and GD's, GD-bar's :func:`~robustrack.tracking.assess.dropped_term`) seen, and
    whether the bounds' assumptions held."""
    return {"max_norm_dq": dq, "max_norm_Mtilde": mt, "max_norm_P": P,
            "assumptions_held": assumptions_held(bounds, pb.compensator, dq, mt, P)}


def _stopped_note(ctl, reached) -> str:
    """Why a run that stopped before the end has no verdict on its bounds (the last sample or output time)."""
    last = float(ctl.u_times[-1]) if ctl.u_times is not None and ctl.u_times.size else float(reached)
    return f"the run stopped at t = {max(last, float(reached)):.6g} s before the end: the bounds are not judged"


def _estimator_note(pb, run, ctl, bounds):
    """:func:`robustrack.loop.bounds.estimator_assumption` for a sampled run (None for a continuous one)."""
    if pb.sample_period is None or bounds is None:
        return None
    from ..loop.bounds import estimator_assumption

    return estimator_assumption(pb, run, ctl, bounds)


def _nonfinite_metrics(metrics: dict) -> list:
    """Names of the metrics that hold inf or NaN (per-coordinate lists included)."""
    bad = []
    for k, v in metrics.items():
        vals = v if isinstance(v, list) else [v]
        if any(isinstance(x, float) and not np.isfinite(x) for x in vals):
            bad.append(k)
    return bad


def _fail(message, reached, partial, raise_on_failure):
    if raise_on_failure or partial is None:
        raise SolverError(message, t_reached=float(reached), partial=partial)


def _forces(nominal, constraint, actuators, u, t, x, y):
    """(Qᶜ, Qᵘ, unclipped command τᶜ + τᵘ or None) at times t: what acts on the controlled system.

    Without actuators Qᵘ = M(q_c) u (W 5.2.17); with them the applied force is B sat(τᶜ + τᵘ)
    and Qᵘ is what it adds to the nominal Qᶜ = B τᶜ.
    """
    n = nominal.n
    if t.size == 0:
        return np.zeros((0, n)), np.zeros((0, n)), None
    if actuators is None:
        Qc = nominal_motion(nominal, constraint, y[:, :n], y[:, n:], t).Qc
        return Qc, control_force(nominal, u, t, x), None
    Qc, tau_c, _ = actuators.nominal(y[:, :n], y[:, n:], t)
    applied, tau_raw = actuators.command(x[:, :n], t, tau_c, u)
    Qu = np.where(actuators.exact(tau_raw), control_force(nominal, u, t, x), applied - Qc)
    return Qc, Qu, tau_raw


def assemble(run: NominalRun, actual, setup: Setup, ctl, unc) -> TrackingResult:
    """The result on the output grid, with metrics taken on every accepted step too.

    Parameters
    ----------
    run : NominalRun
        Its problem gives the nominal plant, the constraint, the compensator and Γ.
    actual : Plant
        The tracked actual plant.
    setup : Setup
    ctl : ControlledSolution
    unc : tuple or None
        :func:`~robustrack.tracking.integrate.integrate_uncompensated`'s result.

    Returns
    -------
    TrackingResult
    """
    pb = run.problem
    nominal, constraint, compensator = pb.nominal, pb.constraint, pb.compensator
    n = nominal.n
    nom = run.solution
    act = run.actuators
    T = ctl.t
    Y = nom(T)
    q, qd = Y[:, :n], Y[:, n:]
    X = ctl.x
    qc, qcd, z = X[:, :n], X[:, n:2 * n], X[:, 2 * n:]
    Qc, Qu, tau_raw = _forces(nominal, constraint, act, controls(compensator, ctl, T, X, Y, n), T, X, Y)
    qa = qad = None
    stop = None  # where the uncompensated copy leaves the actual robot's joint limits (it stops there)
    if unc is not None:
        tg, xg, ts_, xs_, _ = unc
        xa = np.full((T.size, 2 * n), np.nan)
        xa[: tg.size] = xg[: T.size]
        if actual.position_limits is not None:
            tm, xm = merge(tg, xg, ts_, xs_)
            stop = first_limit(tm, xm[:, :n], actual.position_limits)
        if stop is not None:  # the motion beyond is not one the robot can make: not reported
            xa[T > stop[0]] = np.nan
        qa, qad = xa[:, :n], xa[:, n:]
    contact = contact_forces(nominal, constraint, q, qd, T) if T.size else None
    res_nom = res_con = None
    if constraint is not None and T.size:
        try:
            res_nom = constraint.residual(q, qd, T)
            res_con = constraint.residual(qc, qcd, T)
        except NotImplementedError:
            pass

    # the solution itself: output grid + every accepted step of the controlled system
    reached = T[-1] if T.size else run.t_span[0]
    tf, xf, yf = solution_points(run, ctl)
    bounds = pb.promised_bounds(run)
    transient = run.t_span[0] + setup.transient
    metrics = {}
    bounds_note = None
    if tf.size:
        ef, edf = xf[:, :n] - yf[:, :n], xf[:, n:2 * n] - yf[:, n:]
        Qcf, Quf, tau_raw_f = _forces(nominal, constraint, act, controls(compensator, ctl, tf, xf, yf, n), tf, xf, yf)
        rn = rc = None
        if res_nom is not None:
            rn = constraint.residual(yf[:, :n], yf[:, n:], tf)
            rc = constraint.residual(xf[:, :n], xf[:, n:2 * n], tf)
        qa_err = None
        if unc is not None:
            tg, xg, ts_, xs_, _ = unc
            ta, xa_ = merge(tg, xg, ts_[ts_ <= reached], xs_[ts_ <= reached])
            if stop is not None:
                keep = ta <= stop[0]
                ta, xa_ = ta[keep], xa_[keep]
            qa_err = xa_[:, :n] - nom(ta)[:, :n]
        Qu_held = None
        if ctl.u_times is not None and compensator is not None and ctl.u_times.size:
            xk = ctl.x_steps[: ctl.u_times.size]
            Qu_held = _forces(nominal, constraint, act, ctl.u_held, ctl.u_times, xk, nom(ctl.u_times))[1]
        metrics = tracking_metrics(tf, ef, edf, Quf, Qcf, bounds, transient=transient,
                                   residual_nominal=rn, residual_controlled=rc, qa_error=qa_err, Qu_held=Qu_held)
        metrics.update(_assumptions_seen(pb, actual, tf, xf, yf, Qcf, bounds))
        metrics["start_note"] = setup.start_note
        lagged = _estimator_note(pb, run, ctl, bounds)
        if lagged is not None:  # the loop's acceleration went above the one the sampled bound derives
            metrics["assumptions_held"] = False
            bounds_note = lagged
        if act is not None:
            bounds_note = _actuated_metrics(metrics, act, tf, yf, tau_raw_f, transient, compensator is not None)
    ok = bool(nom.stats.success and ctl.stats.success)
    bad = _nonfinite_metrics(metrics)
    solver_failure = ctl.stats.to_dict()
    if ok and bad:
        # a run whose numbers are not finite is a failure, never a success with NaN metrics
        ok = False
        solver_failure["message"] = (f"the run produced non-finite values ({', '.join(bad[:4])}"
                                     f"{', ...' if len(bad) > 4 else ''} are inf or NaN)")
    if not ok and metrics.get("bounds_held"):  # a run that stopped is never "held": its end was not seen
        metrics["bounds_held"] = None
        failed = _stopped_note(ctl, reached)
        bounds_note = failed + ("; " + bounds_note if bounds_note else "")
    info = {
        "bounds_note": bounds_note,
        "compensator": None if compensator is None else {
            "name": getattr(compensator, "name", type(compensator).__name__),
            "params": {k: (v.name if hasattr(v, "g") else v) for k, v in compensator.params.items()},
            "control_function": None if not hasattr(compensator, "f") else {
                "name": compensator.f.name, "eps": compensator.f.eps},
        },
        "bounds": None if bounds is None else bounds.to_dict(),
        "metrics": metrics,
        "solver": {**solver_failure, "success": ok},
        "solvers": {"nominal": nom.stats.to_dict(), "controlled": ctl.stats.to_dict(),
                    "uncompensated": None if unc is None else unc[4].to_dict()},
        "sample_period": setup.sample_period,
        "constrained": constraint is not None,
        "contact": None if contact is None else contact[0],
        "coordinates": list(nominal.coordinates),
        "uncompensated_limit": None if stop is None else {"t": stop[0], "joint": nominal.coordinates[stop[1]]},
        "actuators": None if act is None else {
            **act.actuators.to_dict(), "fully_actuated": act.actuators.fully_actuated(n, run.q0, run.t_span[0]),
            "per_joint": act.actuators.per_joint,
            "exceeded": _exceeded(act, tf, tau_raw_f, nominal.coordinates) if tf.size else []},
    }
    tau = None if tau_raw is None else act.actuators.saturate(tau_raw)
    return TrackingResult(t=T, q=q, qd=qd, qc=qc, qcd=qcd, Qc=Qc, Qu=Qu, z=z, qa=qa, qad=qad,
                          residual_nominal=res_nom, residual_controlled=res_con,
                          u_times=ctl.u_times, u_held=ctl.u_held, tau=tau, run_info=RunInfo(**info),
                          contact=None if contact is None else contact[1],
                          problem=pb if actual is pb.actual or pb.actual is None and actual is pb.nominal
                          else pb.replace(actual=actual))


def _exceeded(act, tf, tau_raw_f, coordinates) -> list:
    """:func:`~robustrack.tracking.actuators.effort_exceeded` of a run, its actuators named by their joints when
    B = I."""
    from .actuators import effort_exceeded

    names = list(coordinates) if act.actuators.per_joint else None
    return effort_exceeded(tf, tau_raw_f, act.actuators.tau_max, names)


def say_efforts(result, what: str = "the controlled system") -> None:
    """One :class:`~robustrack.errors.LimitNotice` naming the actuators whose demanded command exceeded its limit
    (the joint, the peak and when; the motor gave the limit); nothing when none did or without actuators."""
    rows = (result.info.get("actuators") or {}).get("exceeded") or ()
    if not rows:
        return
    import warnings

    from ..errors import LimitNotice
    from ..plants.units import coordinate_units
    from .actuators import effort_note

    per_joint = result.info["actuators"].get("per_joint")
    unit = coordinate_units(result.problem.nominal).Q if per_joint and result.problem is not None else None
    warnings.warn(f"{what}: the {'effort limits' if per_joint else 'actuator limits'} are exceeded, so the motors "
                  f"saturate: {effort_note(rows, unit)}.", LimitNotice, stacklevel=3)


def _actuated_metrics(metrics, act, tf, yf, tau_raw_f, transient, compensated):
    """Saturation, the commands and the realizability margin of an actuated run; whether the promise applies.

    Sets ``bounds_held`` to None where the compensator's bound does not apply
    (:func:`~robustrack.tracking.actuators.promise_note`) and returns the note saying why.
    """
    from .actuators import promise_note, saturation

    n, k = yf.shape[1] // 2, act.actuators.k
    sat = saturation(tf, tau_raw_f, act.actuators.tau_max, transient)
    metrics.update(sat)
    metrics["max_abs_tau_per_actuator"] = np.abs(act.actuators.saturate(tau_raw_f)).max(axis=0).tolist()
    metrics["max_abs_tau_demand_per_actuator"] = np.abs(np.real(tau_raw_f)).max(axis=0).tolist()
    metrics["min_realizability_margin"] = float(np.min(act.nominal(yf[:, :n], yf[:, n:], tf)[2]))
    if not compensated:
        return None
    fully = act.actuators.fully_actuated(n, yf[0, :n], float(tf[0]))
    from ..plants.units import coordinate_units

    applies, note = promise_note(fully, n, k, sat, transient, metrics["max_abs_e_per_coordinate"],
                                 coordinate_units(act.plant).per_coordinate("q"))
    if not applies:
        metrics["bounds_held"] = None
    return note


def check_positive_definite(plant, role: str, q0, t0: float) -> None:
    """Refuse a plant whose M(q0, t0) is not positive definite: W 5.2.17 divides the actual system by it.

    The tracking loop's controlled actual system is M_a q̈ = Q_a + Qᶜ + M u; a massless body or
    redundant coordinates (positive semi-definite M) need the auxiliary system of W ch. 4,
    :func:`robustrack.tracking.singular.simulate_singular_tracking`. (The nominal system alone takes
    a singular M: :meth:`TrackingProblem.nominal_run` solves it on the augmented system.)

    Parameters
    ----------
    plant : Plant
    role : str
        "actual" or "nominal", for the message.
    q0 : ndarray (n,)
    t0 : float

    Raises
    ------
    ParameterError
        M(q0, t0) has no Cholesky factor (the message names the way out).
    """
    M = np.asarray(plant.mass_matrix(q0, t0), dtype=float)
    try:
        np.linalg.cholesky(M)
        return
    except np.linalg.LinAlgError:
        pass
    eig = np.linalg.eigvalsh(0.5 * (M + M.T)) if np.all(np.isfinite(M)) else np.array([np.nan])
    raise ParameterError(
        f"the {role} plant's mass matrix M(q0) is not positive definite (smallest eigenvalue "
        f"{float(np.min(eig)):.3g}): the tracking loop solves the actual system M_a q̈ = Q_a + Qᶜ + Qᵘ "
        "(W 5.2.17) with it. For a massless body or redundant coordinates, give the physical constraints "
        "apart and use robustrack.tracking.singular.simulate_singular_tracking (the auxiliary system of W ch. 4).")


class _Unraisable(list):
    """The exceptions numba's compiled callbacks (a user's function in a cfunc) could not raise, as one line each."""



@contextlib.contextmanager
def _user_exceptions():
    """Inside the block, an exception a compiled callback swallows (``Exception ignored in ...`` with a traceback on
    stderr) is kept, as ``Type: message``, in the list the block gets — not printed; the caller names it."""
    import sys

    caught = _Unraisable()
    previous = sys.unraisablehook

    def keep(unraisable):
        if unraisable.exc_type is not None:
            caught.append(f"{unraisable.exc_type.__name__}: {unraisable.exc_value}")

    sys.unraisablehook = keep
    try:
        yield caught
    finally:
        sys.unraisablehook = previous


def _name_user_failure(nominal, actual, ctl, raised) -> None:
    """After a controlled run on which a user's function raised or gave a non-finite value: evaluate the plants'
    Python functions at the run's last accepted states, from the last back, and refuse naming the first culprit
    with t, q, q̇ (:func:`~robustrack.tracking.rhs.nonfinite_source`); a raise met only between them is named
    with the exception and the interval."""
    from .rhs import python_source

    t_steps = np.asarray(ctl.t_steps if ctl.t_steps is not None else ctl.t)
    x_steps = np.asarray(ctl.x_steps if ctl.x_steps is not None else ctl.x)
    n = nominal.n
    for i in range(len(t_steps) - 1, max(len(t_steps) - 4, -1), -1):
        why = python_source(nominal, actual, float(t_steps[i]), x_steps[i][:n], x_steps[i][n:2 * n])
        if why is not None:
            raise ParameterError(why)
    if raised:
        last = float(t_steps[-1]) if len(t_steps) else float("nan")
        q = np.round(x_steps[-1][:n], 6).tolist() if len(x_steps) else []
        raise ParameterError(f"a function of the plant raised on the compiled path ({raised[0]}) just after "
                             f"t = {last:.6g}, q_c = {q} (the compiled loop cannot say at which state): check the "
                             "functions given to Plant.from_functions there, or run with backend='numpy' to have "
                             "the call named.")
