"""The promised bounds of a sampled loop — a zero-order hold, a delay, a sensor — and what they cover.

:func:`sensed_bounds` bounds what the law sees wrong over a run (:meth:`robustrack.loop.Sensor.error_bound`) and
asks the compensator for its box in that loop (:meth:`robustrack.controllers.Compensator.sampled_bounds`: a fixed
point over the box the bound describes, docs/theory/sensing.md). The result says what the theory covers:
"guaranteed for this loop" (at the noise's confidence where it is random), "not guaranteed: why" or "no bound: why"
(a compensator without a derivation, or a loop the law cannot dominate).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

__all__ = ["sensed_bounds", "nominal_acceleration", "loop_acceleration", "estimator_assumption", "torque_reach",
           "nominal_forces", "held_torque_terms"]

#: Points per nominal step at which the nominal q̇ is differenced for sup |q̈| (DOP853's steps are long: its
#: interpolant is 7th order, so 8 points a step resolve the acceleration's peaks to ~1e-3 relative).
_POINTS_PER_STEP = 8


def nominal_acceleration(run) -> np.ndarray:
    """sup_t |q̈_i(t)| per coordinate along a nominal run (the dense output's q̇, differenced; kept with the run).

    Parameters
    ----------
    run : NominalRun

    Returns
    -------
    ndarray (n,)
    """
    return run.kept("_qdd_max", lambda: _nominal_acceleration(run))


def _within_steps(sol, per_step: int) -> list:
    """``per_step`` evenly spaced times inside each of the solver's steps (each step's start among them)."""
    return [np.linspace(a, b, per_step, endpoint=False) for a, b in zip(sol.t[:-1], sol.t[1:])]


def _nominal_acceleration(run) -> np.ndarray:
    sol = run.solution
    n = run.problem.n
    t = np.unique(np.concatenate(_within_steps(sol, _POINTS_PER_STEP) + [sol.t[-1:]]))
    qd = sol(t)[:, n:]
    return np.abs(np.gradient(qd, t, axis=0)).max(axis=0) if t.size > 2 else np.zeros(n)


def _derives_held_torque(comp) -> bool:
    """Whether the compensator's sampled box counts a held τ (GSS's, :func:`~robustrack.controllers.sampled.gss_box`)."""
    from ..controllers import GSS

    return isinstance(comp, GSS)


def _confidence(err) -> str:
    return f" at {100 * err.confidence:.4g} % confidence" if err.confidence is not None else ""


def sensed_bounds(problem, run):
    """The bounds of ``problem``'s compensator in its sampled loop, with what they cover (``coverage``).

    The loop is the zero-order hold of ``sample_period``, the sensor's errors and delay (none without a sensor:
    the hold alone); the compensator's :meth:`~robustrack.controllers.Compensator.sampled_bounds` gives the least
    box that passes the fixed point of docs/theory/sensing.md. ``coverage`` says "guaranteed for this loop" (at the
    noise's confidence where it is random), "not guaranteed: why" (the start outside every box that passes) or "no
    bound: why".

    Parameters
    ----------
    problem : TrackingProblem
        With a ``sample_period`` (and a ``sensor``, or None for the hold alone).
    run : NominalRun
        Its nominal run (the nominal acceleration q̈ = q̈_c − ë an estimated velocity differentiates through).

    Returns
    -------
    PromisedBounds
        ``coverage`` set; e and ė infinite where there is no bound.
    """
    if problem is run.problem:  # a run's own problem: computed once per nominal run (a campaign's every sample)
        return run.kept("_sampled_bounds", lambda: _sensed_bounds(problem, run))
    return _sensed_bounds(problem, run)


def _sensed_bounds(problem, run):
    from .sensor import Sensor

    comp, h = problem.compensator, problem.sample_period
    sensor = problem.sensor if problem.sensor is not None else Sensor()
    samples = int(math.ceil((problem.t_span[1] - problem.t_span[0]) / h - 1e-9)) + 1
    e0, ed0 = (np.abs(x) for x in problem.initial_errors())
    err = sensor.error_bound(h, nominal_acceleration(run), samples, e0, ed0)
    held = getattr(problem, "holds_torque", False)  # a loop that holds the whole τ (MuJoCo's, a robot's)
    base = comp.bounds(problem.gamma)
    name = getattr(comp, "name", type(comp).__name__)
    if held and _derives_held_torque(comp):
        terms = held_torque_terms(problem, run)
        found, coverage = _box(comp, problem.gamma, dataclasses.replace(err.loop, **terms), e0, ed0)
        if found is not None and not (math.isfinite(found.e) or math.isfinite(found.edot)):
            own, _ = _box(comp, problem.gamma, err.loop, e0, ed0)
            if own is not None and (math.isfinite(own.e) or math.isfinite(own.edot)):
                found, coverage = own, (
                    "not guaranteed: the loop holds the whole τ = Qᶜ(t_k) + M(q̂) u over a sample, and with the held "
                    "τ's change over a sample no box passes (docs/theory/sensing.md, \"A loop that holds τ\"); its "
                    "runs are measured against the bound of the loop that holds u")
    else:
        found, coverage = _box(comp, problem.gamma, err.loop, e0, ed0)
    if found is None or not (math.isfinite(found.e) or math.isfinite(found.edot)):
        why = (f"{name} has no bound derived in a sampled loop (docs/theory/sensing.md)" if found is None else
               "no box passes: the hold, the delay or the measurement error is more than the law dominates")
        return dataclasses.replace(base, e=math.inf, edot=math.inf, region="none in this sampled loop",
                                   assumptions=f"{base.assumptions}; {err.why}", coverage=f"no bound: {why}")
    reach = torque_reach(problem, run, found)
    if coverage is None and held and not _derives_held_torque(comp):
        coverage = (f"not guaranteed: the loop holds the whole τ = Qᶜ(t_k) + M(q̂) u over a sample, as a motor "
                    f"driver does, and {name}'s bound is derived for a held τ only with GSS (docs/theory/sensing.md)")
    if coverage is None and reach is not None:
        coverage = (f"not guaranteed: the torque can reach the effort limit of {reach[0]} (its bound "
                    f"|Qᶜ| + Σ|M| U = {reach[1]:.4g} > {reach[2]:.4g}); saturation is outside the derivation")
    if coverage is None:
        coverage = "guaranteed for this loop" + _confidence(err)
    return dataclasses.replace(found, assumptions=f"{found.assumptions}; {err.why}", coverage=coverage)


def _box(comp, gamma, loop, e0, ed0):
    """(box, coverage): the compensator's sampled box in ``loop``; where the start lies outside every box that passes
    but the same loop from rest has one, that box, said not guaranteed (coverage None otherwise)."""
    found = comp.sampled_bounds(gamma, loop)
    if found is not None and not math.isfinite(found.edot) and (e0.any() or ed0.any()):
        # is it the start? the same loop from rest: a box exists, the start lies outside it
        rest = comp.sampled_bounds(gamma, dataclasses.replace(loop, e0=0 * e0, edot0=0 * ed0, start_edot=0 * ed0))
        if rest is not None and math.isfinite(rest.edot):
            return rest, ("not guaranteed: the start (|e(0)|, |ė(0)|) lies outside every box that passes; reaching "
                          "one is not proved, so the bound is only observed")
    return found, None


def held_torque_terms(problem, run) -> dict:
    """What a loop that holds the whole τ = Qᶜ(t_k) + M(q̂) u adds, per unit (docs/theory/sensing.md, "A loop that
    holds τ"): :class:`~robustrack.controllers.sampled.LoopErrors`' ``held_force`` = h sup ‖M⁻¹ Q̇ᶜ‖∞,
    ``held_mass`` = sup Σ_k ‖M⁻¹ ∂M/∂q_k‖∞ (so ‖M⁻¹(M(a) − M(b))‖∞ ≤ held_mass ‖a − b‖∞ near the motion) and
    ``speed`` = sup ‖q̇‖∞, all along the nominal motion at 8 points a solver step (central differences for Q̇ᶜ and
    ∂M/∂q).

    Parameters
    ----------
    problem : TrackingProblem
        With a ``sample_period``.
    run : NominalRun

    Returns
    -------
    dict
    """
    rate, L, speed = run.kept("_held_torque_rates", lambda: _held_torque_rates(problem, run))
    return {"held_force": float(problem.sample_period) * rate, "held_mass": L, "speed": speed}


def _held_torque_rates(problem, run) -> tuple:
    """(sup ‖M⁻¹ Q̇ᶜ‖∞, sup Σ_k ‖M⁻¹ ∂M/∂q_k‖∞, sup ‖q̇‖∞) along the nominal motion (:func:`held_torque_terms`)."""
    t, y, force = nominal_forces(problem, run, points=0, per_step=_POINTS_PER_STEP)[:3]
    n = problem.n
    q = y[:, :n]
    Minv = np.linalg.inv(problem.nominal.mass_matrix(q, t))
    dQc = np.gradient(force, t, axis=0) if t.size > 2 else np.zeros_like(force)
    rate = float(np.abs(np.einsum("tij,tj->ti", Minv, dQc)).max())  # sup ‖M⁻¹ Q̇ᶜ‖∞
    step = 1e-6 * np.maximum(1.0, np.abs(q))  # central differences: O(step²) truncation, ~1e-10 rounding relative
    L = np.zeros(t.size)
    for k in range(n):
        dq = np.zeros_like(q)
        dq[:, k] = step[:, k]
        dM = (problem.nominal.mass_matrix(q + dq, t) - problem.nominal.mass_matrix(q - dq, t)) / (2 * step[:, k, None, None])
        L += np.abs(Minv @ dM).sum(axis=-1).max(axis=-1)  # Σ_k ‖M⁻¹ ∂M/∂q_k‖∞
    return rate, float(L.max()), float(np.abs(y[:, n:]).max())


def nominal_forces(problem, run, points: int = 201, per_step: int = 0):
    """The nominal motion and its force at the solver's steps and ``points`` evenly spaced times (the dense output).

    Parameters
    ----------
    problem : TrackingProblem
    run : NominalRun
    points : int
    per_step : int
        Also this many evenly spaced points inside each solver step (0: none).

    Returns
    -------
    t : ndarray (T,)
    y : ndarray (T, 2n)
        (q, q̇).
    force : ndarray (T, n)
        The generalized nominal force Qᶜ (B τᶜ where there are actuators).
    tau : ndarray (T, n) or (T, k)
        What the motors give: τᶜ where there are actuators, else Qᶜ.
    """
    from ..tracking.rhs import nominal_motion

    n, sol = problem.n, run.solution
    inside = _within_steps(sol, per_step) if per_step else []
    t = np.unique(np.concatenate([sol.t, np.linspace(sol.t[0], sol.t[-1], points), *inside]))
    y = sol(t)
    if run.actuators is not None:  # the nominal force is the motors' τᶜ then
        force, tau = run.actuators.nominal(y[:, :n], y[:, n:], t)[:2]
        return t, y, force, tau
    Qc = nominal_motion(problem.nominal, problem.constraint, y[:, :n], y[:, n:], t).Qc
    return t, y, Qc, Qc


def torque_reach(problem, run, bounds):
    """The first joint whose force can reach its effort limit inside the box, or None (docs/theory/sensing.md).

    τ_i = Qᶜ_i + (M u)_i with |u_j| ≤ U (the law's largest output in the box, ``bounds.terms["force"]``):
    |τ_i| ≤ max_t |Qᶜ_i(t)| + max_t Σ_j |M_ij(q(t))| U, along the nominal motion (the controlled one stays in the
    e box of it). Where that reaches a joint's limit (:func:`robustrack.tracking.actuators.effort_limits`), the
    motor may saturate and the bound's derivation, which has the law act unclipped, does not cover the loop.

    Parameters
    ----------
    problem : TrackingProblem
    run : NominalRun
    bounds : PromisedBounds
        With ``terms`` (a sampled box).

    Returns
    -------
    (str, float, float) or None
        The joint's name, its force bound, its limit.
    """
    from ..tracking.actuators import effort_limits

    limits = effort_limits(problem)
    terms = getattr(bounds, "terms", None) or {}
    if limits is None or "force" not in terms:
        return None
    t, y, _, tau = nominal_forces(problem, run)
    M = problem.nominal.mass_matrix(y[:, :problem.n], t)
    reach = np.abs(tau).max(axis=0) + np.abs(M).sum(axis=2).max(axis=0) * float(terms["force"])
    over = np.flatnonzero(reach > limits)
    if over.size == 0:
        return None
    i = int(over[np.argmax((reach / limits)[over])])
    return problem.nominal.coordinates[i], float(reach[i]), float(limits[i])


def loop_acceleration(problem, run, bounds) -> np.ndarray | None:
    """The bound sup |q̈_c,i| ≤ sup |q̈_i| + Ë of the loop's acceleration that ``bounds`` (from :func:`sensed_bounds`)
    was derived with (docs/theory/sensing.md, step 3).

    Parameters
    ----------
    problem : TrackingProblem
    run : NominalRun
    bounds : PromisedBounds

    Returns
    -------
    ndarray (n,) or None
        None where the bounds carry no Ë (not a sampled box).
    """
    terms = getattr(bounds, "terms", None) or {}
    if "eddot" not in terms:
        return None
    return nominal_acceleration(run) + float(terms["eddot"])


def estimator_assumption(problem, run, ctl, bounds=None) -> str | None:
    """A check of the sampled bound's derived acceleration along a run: None when the controlled motion's
    increments |Δq̇_c|/h between samples (averages, so at most the sup) stayed inside sup |q̈| + Ë, else what broke.

    Ë is derived, not assumed (docs/theory/sensing.md): it follows from Γ and μ, which the run checks too, so this
    can only fail with them — a test of the derivation, said as "not guaranteed" if it ever does.

    Parameters
    ----------
    problem : TrackingProblem
        With a ``sample_period``.
    run : NominalRun
    ctl : ControlledSolution
        Of the sampled loop (its states at the sample instants).
    bounds : PromisedBounds, optional
        The run's sampled bounds (made here if not given).

    Returns
    -------
    str or None
    """
    if problem.sample_period is None or ctl.x_steps.shape[0] < 2:
        return None
    bounds = problem.promised_bounds(run) if bounds is None else bounds
    a = loop_acceleration(problem, run, bounds)
    if a is None:
        return None
    n = problem.n
    dt = np.diff(ctl.t_steps)
    seen = (np.abs(np.diff(ctl.x_steps[:, n:2 * n], axis=0)) / dt[:, None]).max(axis=0)
    over = seen > a * (1.0 + 1e-9)
    if not over.any():
        return None
    j = int(np.argmax(seen / np.where(a > 0, a, 1e-300)))
    return (f"the controlled motion's acceleration between samples reached {seen[j]:.4g} (coordinate {j}) above the "
            f"{a[j]:.4g} the sampled bound derives: not guaranteed")
