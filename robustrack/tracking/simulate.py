"""simulate_tracking: the three systems of W 5.2 in order, then their assessment.

Each step is one function: :func:`prepare` validates and picks the kernels,
:mod:`~robustrack.tracking.integrate` integrates the nominal, the controlled and the
uncompensated systems, :func:`assemble` puts the result together and measures it
(:mod:`~robustrack.tracking.assess`).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from .._validate import finite, positive
from ..errors import ParameterError, RobustrackNotice, SolverError
from .assess import assumptions_held, default_transient, peak_metrics, tracking_metrics, uncertainty_along_run
from .integrate import (DEFAULT_ATOL, DEFAULT_RTOL, DEFAULT_TRACKING_METHOD, check_common, check_hold_intervals,
                        check_method, check_t_span, integrate_controlled, integrate_nominal, integrate_uncompensated,
                        output_times)
from .results import TrackingResult
from .rhs import nominal_motion

__all__ = ["simulate_tracking", "integrate_nominal_run", "track", "track_peaks", "TrackingPeaks", "NominalRun",
           "prepare", "assemble", "Setup", "CompilationFallback", "BACKENDS", "check_compensator_force"]

#: ``backend`` values: "auto" compiles where it can (else numpy with a notice), "numpy" is the reference.
BACKENDS = ("auto", "numpy")


class CompilationFallback(RobustrackNotice):
    """The tracking loop runs on numpy: something in it has no compiled form (one line says what)."""


@dataclass(frozen=True)
class NominalRun:
    """The nominal system integrated once (W 5.2.9–5.2.11): shared by every actual plant tracked against it.

    Attributes
    ----------
    nominal : Plant
    constraint : Constraint or None
    q0, qd0 : ndarray (n,)
    t_span : (float, float)
    t_eval : ndarray (T,)
        Output grid of every run tracked against it.
    rtol, atol : float
    solution : NominalSolution
        Steps and DOP853 dense output (:mod:`robustrack.tracking.integrate`).
    backend : str
        "auto" or "numpy".
    actuators : BoundActuators or None
        The actuators realizing Qᶜ and Qᵘ (:mod:`robustrack.tracking.actuators`); None: Qᶜ and
        Qᵘ act as generalized forces in every direction.
    """

    nominal: object
    constraint: object
    q0: np.ndarray
    qd0: np.ndarray
    t_span: tuple
    t_eval: np.ndarray
    rtol: float
    atol: float
    solution: object
    backend: str
    actuators: object = None


def integrate_nominal_run(nominal, constraint, q0, qd0, t_span, *, t_eval=None, n_points=1001,
                          rtol=DEFAULT_RTOL, atol=DEFAULT_ATOL, backend="auto", actuators=None) -> NominalRun:
    """Validate and integrate the nominal system once; :func:`track` then follows it with any actual plant.

    Parameters
    ----------
    nominal, constraint, q0, qd0, t_span, t_eval, n_points, rtol, atol, backend, actuators
        As :func:`simulate_tracking` (the last seven keyword-only).

    Returns
    -------
    NominalRun

    Raises
    ------
    ParameterError
        Invalid inputs (as :func:`simulate_tracking`).
    RealizabilityError
        The actuators cannot realize the constraint force at the start or along the run.
    SolverError
        The nominal system's solver failed.
    """
    from .actuators import Actuators
    from .compiled import compiled_loop, fallback_reason

    q0, qd0, t0, t1 = check_common(nominal, constraint, q0, qd0, t_span, rtol, atol, DEFAULT_TRACKING_METHOD)
    if backend not in BACKENDS:
        raise ParameterError(f"`backend` must be one of {list(BACKENDS)}; got {backend!r}.")
    if actuators is not None and not isinstance(actuators, Actuators):
        raise ParameterError(f"`actuators` must be a robustrack.tracking.Actuators; got {type(actuators).__name__}.")
    t_eval = output_times(t_eval, n_points, t0, t1)
    bound = None if actuators is None else actuators.bind(nominal, constraint)
    # clear errors (shapes, rank condition, realizability) before solving
    nominal_motion(nominal, constraint, q0, qd0, t0, actuators=bound)
    loop = None
    if backend == "auto" and fallback_reason(nominal, nominal, constraint, actuators) is None:
        loop = compiled_loop(nominal, nominal, constraint, actuators, jacobian=False)
    sol = integrate_nominal(nominal, constraint, q0, qd0, (t0, t1), rtol=rtol, atol=atol, loop=loop, actuators=bound)
    if not sol.stats.success:
        if bound is not None:
            _realizability_at_failure(nominal, constraint, bound, sol, t1, rtol, atol)
        raise SolverError(f"the nominal system: DOP853 failed at t = {sol.t[-1]:.6g}: {sol.stats.message}",
                          t_reached=float(sol.t[-1]), partial=None)
    return NominalRun(nominal, constraint, q0, qd0, (t0, t1), t_eval, float(rtol), float(atol), sol, backend, bound)


def _realizability_at_failure(nominal, constraint, bound, sol, t1, rtol, atol):
    """Raise RealizabilityError if an actuated nominal solve failed for want of a realizable force.

    The compiled kernels return NaN where τᶜ does not exist; the numpy reference, restarted
    from the last accepted step, meets the same state and names the time, the state and why.
    """
    n = nominal.n
    y = sol.y[-1]
    integrate_nominal(nominal, constraint, y[:n], y[n:], (float(sol.t[-1]), t1), rtol=rtol, atol=atol,
                      actuators=bound)


@dataclass(frozen=True)
class Setup:
    """The validated inputs of one tracked actual plant and the kernels it uses."""

    x0: np.ndarray
    sample_period: float | None
    transient: float
    loop: object
    law: tuple | None


def prepare(run: NominalRun, actual, compensator, *, qc0=None, qcd0=None, sample_period=None, transient=None,
            method=DEFAULT_TRACKING_METHOD) -> Setup:
    """Validate the actual plant and compensator of a run and load their kernels.

    Parameters
    ----------
    run : NominalRun
    actual : Plant
    compensator : Compensator or None
    qc0, qcd0, sample_period, transient, method
        As :func:`simulate_tracking` (keyword-only).

    Returns
    -------
    Setup
        The controlled system's initial state, the sampling, the transient and the
        kernels (None: numpy, after a :class:`CompilationFallback` notice).
    """
    from .compiled import compiled_loop, fallback_reason, kernel_law

    nominal, constraint = run.nominal, run.constraint
    n = nominal.n
    check_method(method)
    if actual.n != n:
        raise ParameterError(f"The actual plant has {actual.n} coordinates; the nominal has {n}.")
    qc0 = run.q0.copy() if qc0 is None else finite(qc0, "qc0").reshape(n)
    qcd0 = run.qd0.copy() if qcd0 is None else finite(qcd0, "qcd0").reshape(n)
    if compensator is not None and compensator.discontinuous and sample_period is None:
        raise ParameterError(
            f"the compensator {getattr(compensator, 'name', type(compensator).__name__)!r} uses a "
            "discontinuous control function (sign), which stalls an adaptive integrator; pass "
            "`sample_period` (zero-order-hold control, e.g. 1e-3 s)."
        )
    t0, t1 = run.t_span
    sample_period, transient = _check_loop(compensator, n, t1 - t0, sample_period, transient)
    z0 = compensator.initial_state(n) if compensator is not None else np.zeros(0)
    if transient is None:
        transient = default_transient(qc0 - run.q0, qcd0 - run.qd0, t1 - t0)
    loop = law = None
    actuators = None if run.actuators is None else run.actuators.actuators
    if run.backend == "auto":
        reason = fallback_reason(nominal, actual, constraint, actuators)
        law = kernel_law(compensator, n)
        if reason is None and law is None:
            reason = (f"the compensator {type(compensator).__name__} (or its control function) is not a "
                      "built-in one")
        if reason is None:
            loop = compiled_loop(nominal, actual, constraint, actuators)
        else:
            warnings.warn(f"tracking loop runs on numpy (slower): {reason}.", CompilationFallback, stacklevel=4)
    return Setup(np.concatenate([qc0, qcd0, z0]), sample_period, float(transient), loop, law)


def _check_loop(compensator, n: int, duration: float, sample_period, transient):
    """``(sample_period, transient)`` checked against the horizon, and the compensator's force at a unit error."""
    if sample_period is not None:
        sample_period = float(positive(sample_period, "sample_period"))
        check_hold_intervals(sample_period, duration)
    if transient is not None and not 0 <= float(positive(transient, "transient", allow_zero=True)) < duration:
        raise ParameterError(f"`transient` must be in [0, {duration:g}) s (the bounds are judged after it, inside "
                             f"the horizon); got {transient!r}.")
    check_compensator_force(compensator, n)
    return sample_period, transient


def check_compensator_force(compensator, n: int) -> None:
    """Refuse a compensator whose force is not finite at a unit error: its parameters overflow float64.

    ``u(0, e = 1, ė = 1, z = z0)`` must be finite; a gain like Γ′ = 1e308 or ε = 1e-300 makes
    it inf or NaN, and a run would only produce non-finite numbers.

    Parameters
    ----------
    compensator : Compensator or None
        None passes.
    n : int
        Number of coordinates.

    Raises
    ------
    ParameterError
        ``u`` is not finite there (the message lists the numeric parameters).
    """
    if compensator is None:
        return
    one = np.ones(n)
    with np.errstate(all="ignore"):
        u = np.asarray(compensator(0.0, one, one, compensator.initial_state(n)), dtype=float)
    if np.all(np.isfinite(u)):
        return
    params = {k: v for k, v in compensator.params.items() if isinstance(v, (int, float, np.ndarray, tuple, list))}
    if hasattr(compensator, "f"):
        params["eps"] = compensator.f.eps
    listing = ", ".join(f"`{k}` = {v!r}" for k, v in params.items())
    raise ParameterError(f"the compensator's force is not finite at a unit error (e = ė = 1 gives u = "
                         f"{u.tolist()}): its parameters overflow float64 ({listing}); take smaller gains or bound, "
                         "or a larger ε.")


def simulate_tracking(
    nominal,
    actual,
    constraint,
    compensator,
    q0,
    qd0,
    t_span,
    *,
    qc0=None,
    qcd0=None,
    uncompensated: bool = True,
    sample_period: float | None = None,
    gamma: float | None = None,
    transient: float | None = None,
    t_eval=None,
    n_points: int = 1001,
    method: str = DEFAULT_TRACKING_METHOD,
    rtol: float = DEFAULT_RTOL,
    atol: float = DEFAULT_ATOL,
    raise_on_failure: bool = True,
    progress=None,
    backend: str = "auto",
    actuators=None,
):
    """Track the nominal system with the actual one: nominal, controlled and uncompensated runs.

    The nominal system is integrated first (its own solve, dense output), then the
    controlled actual system driven by it, then — if asked — the actual system under
    Qᶜ(t) alone (W 5.2; :mod:`robustrack.tracking.integrate`). The nominal trajectory
    does not depend on the compensator. Equivalent to :func:`integrate_nominal_run`
    followed by :func:`track` (use those two to track many actual plants against one
    nominal run).

    Parameters
    ----------
    nominal, actual : Plant
        The nominal model (M, Q) and the actual plant (M + δM, Q + δQ), e.g.
        ``nominal.replace(m=...)`` wrapped with a force perturbation.
    constraint : Constraint or None
        The stacked physical constraints and control requirements (W 5.2.8). ``None``
        gives the unconstrained variant (W Remark 7.2, eq. 7.3.7): no Qᶜ, the actual
        system tracks the unconstrained nominal one.
    compensator : Compensator or None
        Gives ``u(t, e, ė, z)``; ``None`` applies no compensation (u = 0).
    q0, qd0 : array_like (n,)
        Initial state of the nominal system.
    t_span : (float, float)
        Start and end time ``(t0, t1)``, t1 > t0.
    qc0, qcd0 : array_like (n,), optional
        Initial state of the actual systems (default: the nominal one, e(0) = 0).
    uncompensated : bool
        Also integrate the actual system under Qᶜ(t) alone (for comparison).
    sample_period : float, optional
        Zero-order-hold period h of the control; ``None`` for continuous control.
        Required for discontinuous control functions (sign), which stall an
        adaptive integrator.
    gamma : float, optional
        Γ used for the promised bounds (default: the compensator's design value).
    transient : float, optional
        Start of the bound check (see :mod:`robustrack.tracking.assess`), measured from
        t0; default :func:`~robustrack.tracking.assess.default_transient`.
    t_eval : array_like, optional
        Output times; default ``n_points`` evenly spaced over ``t_span``.
    n_points : int
        Number of evenly spaced output times when ``t_eval`` is not given; default 1001.
        Metrics are taken on every accepted step as well, not on this grid alone.
    method : str
        Integrator of the controlled loop under continuous control (default BDF: scipy's
        algorithm, run inside the compiled kernels with their exact Jacobian; LSODA, Radau
        … through scipy with that Jacobian); the nominal and uncompensated
        systems use DOP853, sampled control Dormand–Prince 5(4) per hold interval.
    rtol, atol : float
        Tolerances of every solve (default 1e-8, 1e-12 as W 7.3).
    raise_on_failure : bool
        If a solver fails, raise :class:`SolverError` carrying the partial
        result (default); otherwise return it with ``success = False``.
    progress : callable, optional
        ``progress(t, t_end)``, called about once per second of wall time while the
        controlled system is integrated, and once at the end.
    backend : {"auto", "numpy"}
        "auto" runs compiled kernels where the plants, constraint and compensator have
        them (and warns with :class:`CompilationFallback` where not); "numpy" runs the
        reference implementation.
    actuators : Actuators, optional
        An input matrix B and limits τ_max (:mod:`robustrack.tracking.actuators`): Qᶜ is
        realized as B τᶜ (Gauss's choice; the nominal motion is then the servo motion,
        realizability checked) and Qᵘ = M u as B τᵘ, the command clipped to ±τ_max. The
        result reports saturation and says when the promised bound does not apply
        (underactuated B, saturation after the transient). None: Qᶜ and Qᵘ act in every
        direction.

    Returns
    -------
    TrackingResult
        The three systems on the output times, Qᶜ, Qᵘ, residuals, and in ``info`` the
        promised bounds, metrics and solver statistics of each solve.

    Raises
    ------
    ParameterError
        Invalid initial states, ``t_span``, tolerances, ``method``, ``sample_period`` or
        ``backend``; mismatched numbers of coordinates; a discontinuous compensator
        without ``sample_period``.
    RealizabilityError
        The actuators cannot realize the constraint force (before the run, or along it: the
        time, state and reason are in the message).
    SolverError
        A solver failed and ``raise_on_failure`` is True.
    """
    check_method(method)
    t0, t1 = check_t_span(t_span)
    _check_loop(compensator, nominal.n, t1 - t0, sample_period, transient)  # before the nominal solve
    run = integrate_nominal_run(nominal, constraint, q0, qd0, t_span, t_eval=t_eval, n_points=n_points, rtol=rtol,
                                atol=atol, backend=backend, actuators=actuators)
    return track(run, actual, compensator, qc0=qc0, qcd0=qcd0, uncompensated=uncompensated,
                 sample_period=sample_period, gamma=gamma, transient=transient, method=method,
                 raise_on_failure=raise_on_failure, progress=progress)


def track(run: NominalRun, actual, compensator, *, qc0=None, qcd0=None, uncompensated: bool = False,
          sample_period=None, gamma=None, transient=None, method: str = DEFAULT_TRACKING_METHOD,
          raise_on_failure: bool = True, progress=None):
    """Follow a nominal run with one actual plant: the controlled system (and the uncompensated copy).

    Parameters
    ----------
    run : NominalRun
        From :func:`integrate_nominal_run` (its grid, tolerances and backend are used).
    actual : Plant
    compensator : Compensator or None
    qc0, qcd0, uncompensated, sample_period, gamma, transient, method, raise_on_failure, progress
        As :func:`simulate_tracking` (keyword-only); ``uncompensated`` defaults to False here.

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
    setup = prepare(run, actual, compensator, qc0=qc0, qcd0=qcd0, sample_period=sample_period, transient=transient,
                    method=method)
    nominal, constraint, nom = run.nominal, run.constraint, run.solution
    ctl = integrate_controlled(nominal, actual, constraint, compensator, nom, setup.x0, run.t_span, run.t_eval,
                               sample_period=setup.sample_period, method=method, rtol=run.rtol, atol=run.atol,
                               loop=setup.loop, law=setup.law, progress=progress, actuators=run.actuators)
    unc = None
    if uncompensated and compensator is None:
        # no compensator: the controlled system IS the uncompensated one, already integrated
        unc = (ctl.t, ctl.x, ctl.t_steps, ctl.x_steps, ctl.stats)
    elif uncompensated:
        unc = integrate_uncompensated(nominal, actual, constraint, nom, setup.x0[: 2 * nominal.n], run.t_span,
                                      run.t_eval, rtol=run.rtol, atol=run.atol, loop=setup.loop,
                                      actuators=run.actuators)
    if progress is not None:
        progress(float(ctl.t[-1]) if ctl.t.size else run.t_span[0], run.t_span[1])
    result = assemble(nominal, actual, constraint, compensator, run, setup, ctl, unc, gamma)
    if not result.success:
        reached = float(result.t[-1]) if result.t.size else run.t_span[0]
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


def track_peaks(run: NominalRun, actual, compensator, *, sample_period=None, gamma=None, transient=None,
                method: str = DEFAULT_TRACKING_METHOD) -> TrackingPeaks:
    """:func:`track` for campaigns: the controlled system only, and only its peaks and the bound check.

    The same solve and the same points as :func:`track` (so the same numbers, bit for bit, as
    ``TrackingResult.metrics``), without the result arrays, the residuals, Qᶜ along the run and the
    assumption check that make up most of :func:`assemble`'s cost. A failed solve is returned
    (``success`` False, peaks up to where it stopped), never raised.

    Parameters
    ----------
    run : NominalRun
    actual : Plant
    compensator : Compensator or None
    sample_period, gamma, transient, method
        As :func:`simulate_tracking` (keyword-only).

    Returns
    -------
    TrackingPeaks

    Raises
    ------
    ParameterError
        Invalid inputs (as :func:`track`).
    """
    kw = dict(sample_period=sample_period, transient=transient, method=method)
    if run.actuators is not None:
        # actuated: Qᵘ, saturation and whether the promise applies need the whole assessment
        result = track(run, actual, compensator, gamma=gamma, raise_on_failure=False, **kw)
        m = result.metrics
        return TrackingPeaks(result.success, result.solver.get("message", ""),
                             float(result.t[-1]) if result.t.size else float(run.t_span[0]),
                             m.max_abs_e, m.max_abs_edot, m.max_abs_Qu, m.bounds_held, result.info["bounds_note"],
                             result.solver.get("method", ""))
    setup = prepare(run, actual, compensator, **kw)
    ctl = integrate_controlled(run.nominal, actual, run.constraint, compensator, run.solution, setup.x0,
                               run.t_span, run.t_eval, sample_period=setup.sample_period, method=method,
                               rtol=run.rtol, atol=run.atol, loop=setup.loop, law=setup.law)
    n = run.nominal.n
    tf, xf, yf = _solution_points(run, ctl)
    note = _not_judged(compensator, setup)
    peaks = {"max_abs_e": None, "max_abs_edot": None, "max_abs_Qu": None, "bounds_held": None}
    if tf.size:
        bounds = compensator.bounds(gamma) if compensator is not None else None
        Qu = _control_force(run.nominal, _controls(compensator, ctl, tf, xf, yf, n), tf, xf)
        peaks = peak_metrics(tf, xf[:, :n] - yf[:, :n], xf[:, n:2 * n] - yf[:, n:], Qu, bounds,
                             transient=run.t_span[0] + setup.transient)
        if note is not None:
            peaks["bounds_held"] = None
    reached = float(ctl.t[-1]) if ctl.t.size else float(run.t_span[0])
    return TrackingPeaks(bool(run.solution.stats.success and ctl.stats.success), ctl.stats.message, reached,
                         peaks["max_abs_e"], peaks["max_abs_edot"], peaks["max_abs_Qu"], peaks["bounds_held"],
                         note, ctl.stats.method)


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


def _merge(t_a, x_a, t_b, x_b):
    """Two sampled trajectories merged in time order (duplicates kept once)."""
    t = np.concatenate([t_a, t_b])
    x = np.concatenate([x_a, x_b])
    order = np.argsort(t, kind="stable")
    t, x = t[order], x[order]
    keep = np.concatenate([[True], np.diff(t) > 0]) if t.size else np.zeros(0, bool)
    return t[keep], x[keep]


def _controls(compensator, ctl, t, x, y, n):
    """u at times t, controlled states x and nominal states y (the held u under sampled control)."""
    if compensator is None or t.size == 0:
        return np.zeros((t.size, n))
    if ctl.u_times is not None:
        k = np.clip(np.searchsorted(ctl.u_times, t, side="right") - 1, 0, len(ctl.u_times) - 1)
        return ctl.u_held[k]
    return compensator(t[:, None], x[:, :n] - y[:, :n], x[:, n:2 * n] - y[:, n:], x[:, 2 * n:])


def _not_judged(compensator, setup: Setup):
    """Why the promised bounds are not judged in this run (None: they are)."""
    if compensator is not None and compensator.discontinuous and setup.sample_period is not None:
        # a sign law's bounds are continuous-time (s → 0); a zero-order hold of period h keeps the
        # error in a band of order h·|ṡ| instead, which the chattering metric shows.
        return ("continuous-time bound of a discontinuous law; not applicable under sampled "
                f"control (h = {setup.sample_period:g} s)")
    return None


def _solution_points(run: NominalRun, ctl):
    """The solution itself: the output grid merged with every accepted step reached (t, x), and the nominal there."""
    reached = ctl.t[-1] if ctl.t.size else run.t_span[0]
    inside = ctl.t_steps <= reached
    tf, xf = _merge(ctl.t, ctl.x, ctl.t_steps[inside], ctl.x_steps[inside])
    return tf, xf, (run.solution(tf) if tf.size else np.zeros((0, 2 * run.nominal.n)))


def _control_force(nominal, u, t, x):
    """Qᵘ = M(q_c) u at times t and controlled states x (W 5.2.17)."""
    return (nominal.mass_matrix(x[:, :nominal.n], t) @ u[..., None])[..., 0]


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
        return Qc, _control_force(nominal, u, t, x), None
    Qc, tau_c, _ = actuators.nominal(y[:, :n], y[:, n:], t)
    applied, tau_raw = actuators.command(x[:, :n], t, tau_c, u)
    Qu = np.where(actuators.exact(tau_raw), _control_force(nominal, u, t, x), applied - Qc)
    return Qc, Qu, tau_raw


def assemble(nominal, actual, constraint, compensator, run: NominalRun, setup: Setup, ctl, unc, gamma) -> TrackingResult:
    """The result on the output grid, with metrics taken on every accepted step too.

    Parameters
    ----------
    nominal, actual, constraint, compensator
        As :func:`simulate_tracking`.
    run : NominalRun
    setup : Setup
    ctl : ControlledSolution
    unc : tuple or None
        :func:`~robustrack.tracking.integrate.integrate_uncompensated`'s result.
    gamma : float or None
        Γ for the promised bounds (default: the compensator's design value).

    Returns
    -------
    TrackingResult
    """
    n = nominal.n
    nom = run.solution
    act = run.actuators
    T = ctl.t
    Y = nom(T)
    q, qd = Y[:, :n], Y[:, n:]
    X = ctl.x
    qc, qcd, z = X[:, :n], X[:, n:2 * n], X[:, 2 * n:]
    Qc, Qu, tau_raw = _forces(nominal, constraint, act, _controls(compensator, ctl, T, X, Y, n), T, X, Y)
    qa = qad = None
    if unc is not None:
        tg, xg, _, _, _ = unc
        xa = np.full((T.size, 2 * n), np.nan)
        xa[: tg.size] = xg[: T.size]
        qa, qad = xa[:, :n], xa[:, n:]
    res_nom = res_con = None
    if constraint is not None and T.size:
        try:
            res_nom = constraint.residual(q, qd, T)
            res_con = constraint.residual(qc, qcd, T)
        except NotImplementedError:
            pass

    # the solution itself: output grid + every accepted step of the controlled system
    reached = T[-1] if T.size else run.t_span[0]
    tf, xf, yf = _solution_points(run, ctl)
    bounds = compensator.bounds(gamma) if compensator is not None else None
    transient = run.t_span[0] + setup.transient
    metrics = {}
    bounds_note = None
    if tf.size:
        ef, edf = xf[:, :n] - yf[:, :n], xf[:, n:2 * n] - yf[:, n:]
        Qcf, Quf, tau_raw_f = _forces(nominal, constraint, act, _controls(compensator, ctl, tf, xf, yf, n), tf, xf, yf)
        rn = rc = None
        if res_nom is not None:
            rn = constraint.residual(yf[:, :n], yf[:, n:], tf)
            rc = constraint.residual(xf[:, :n], xf[:, n:2 * n], tf)
        qa_err = None
        if unc is not None:
            tg, xg, ts_, xs_, _ = unc
            ta, xa_ = _merge(tg, xg, ts_[ts_ <= reached], xs_[ts_ <= reached])
            qa_err = xa_[:, :n] - nom(ta)[:, :n]
        Qu_held = None
        if ctl.u_times is not None and compensator is not None and ctl.u_times.size:
            xk = ctl.x_steps[: ctl.u_times.size]
            Qu_held = _forces(nominal, constraint, act, ctl.u_held, ctl.u_times, xk, nom(ctl.u_times))[1]
        metrics = tracking_metrics(tf, ef, edf, Quf, Qcf, bounds, transient=transient,
                                   residual_nominal=rn, residual_controlled=rc, qa_error=qa_err, Qu_held=Qu_held)
        seen = uncertainty_along_run(nominal, actual, yf[:, :n], yf[:, n:], xf[:, :n], xf[:, n:2 * n], Qcf, tf)
        metrics["max_norm_dq"] = float(seen["dq_norm"].max())
        metrics["max_norm_Mtilde"] = float(seen["Mtilde_norm"].max())
        metrics["assumptions_held"] = assumptions_held(bounds, compensator, metrics["max_norm_dq"],
                                                       metrics["max_norm_Mtilde"])
        if act is not None:
            bounds_note = _actuated_metrics(metrics, act, tf, yf, tau_raw_f, transient, compensator is not None)
    sampled_note = _not_judged(compensator, setup)
    if sampled_note is not None and metrics:
        metrics["bounds_held"] = None
        bounds_note = sampled_note + ("; " + bounds_note if bounds_note else "")
    ok = bool(nom.stats.success and ctl.stats.success)
    bad = _nonfinite_metrics(metrics)
    solver_failure = ctl.stats.to_dict()
    if ok and bad:
        # a run whose numbers are not finite is a failure, never a success with NaN metrics
        ok = False
        solver_failure["message"] = (f"the run produced non-finite values ({', '.join(bad[:4])}"
                                     f"{', ...' if len(bad) > 4 else ''} are inf or NaN)")
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
        "coordinates": list(nominal.coordinates),
        "actuators": None if act is None else {
            **act.actuators.to_dict(), "fully_actuated": act.actuators.fully_actuated(n, run.q0, run.t_span[0])},
    }
    tau = None if tau_raw is None else act.actuators.saturate(tau_raw)
    return TrackingResult(t=T, q=q, qd=qd, qc=qc, qcd=qcd, Qc=Qc, Qu=Qu, z=z, qa=qa, qad=qad,
                          residual_nominal=res_nom, residual_controlled=res_con,
                          u_times=ctl.u_times, u_held=ctl.u_held, tau=tau, info=info)


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
