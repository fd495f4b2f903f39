"""The promised bounds of a loop that measures through a sensor: widened, and said for what they cover.

:func:`sensed_bounds` bounds the sensor's measurement error over a run (:meth:`robustrack.loop.Sensor.error_bound`)
and asks the compensator for its bound under that error (:meth:`robustrack.controllers.Compensator.measured_bounds`,
GSS's sliding box with ŝ = s + K δe + δė, GD's and GD-bar's ė box). The result says what the theory covers
(docs/theory/sensing.md): "guaranteed under this sensor model" (at the noise's confidence where it is random),
"not guaranteed" (a delay: the bound is computed without it, and the run only checks it) or "no bound" (a
compensator without a derivation, or a measurement error the gain cannot dominate).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

__all__ = ["sensed_bounds", "nominal_acceleration", "estimator_assumption"]

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
    found = run.__dict__.get("_qdd_max")
    if found is not None:
        return found
    sol = run.solution
    n = run.problem.n
    t = np.unique(np.concatenate([np.linspace(a, b, _POINTS_PER_STEP, endpoint=False)
                                  for a, b in zip(sol.t[:-1], sol.t[1:])] + [sol.t[-1:]]))
    qd = sol(t)[:, n:]
    found = np.abs(np.gradient(qd, t, axis=0)).max(axis=0) if t.size > 2 else np.zeros(n)
    object.__setattr__(run, "_qdd_max", found)  # a cache beside the frozen fields
    return found


def sensed_bounds(problem, run):
    """The bounds of ``problem``'s compensator under its sensor, with what they cover (``coverage``).

    Parameters
    ----------
    problem : TrackingProblem
        With a ``sensor`` and a ``sample_period``.
    run : NominalRun
        Its nominal run (the acceleration an estimated velocity lags by).

    Returns
    -------
    PromisedBounds
        ``coverage`` set; e and ė infinite where there is no bound.
    """
    comp, sensor, h = problem.compensator, problem.sensor, problem.sample_period
    samples = int(math.ceil((problem.t_span[1] - problem.t_span[0]) / h - 1e-9)) + 1
    err = sensor.error_bound(h, nominal_acceleration(run), samples)
    base = comp.bounds(problem.gamma)
    measured = comp.measured_bounds(problem.gamma, err.e, err.edot)
    if measured is None or not (math.isfinite(measured.e) or math.isfinite(measured.edot)):
        why = (f"{getattr(comp, 'name', type(comp).__name__)} has no bound derived under measurement error"
               if measured is None else "the measurement error is more than the compensator's gain dominates "
               "(the widened box has no solution)")
        return dataclasses.replace(base, e=math.inf, edot=math.inf, region="none under this sensor model",
                                   assumptions=f"{base.assumptions}; {err.why}", coverage=f"no bound: {why}")
    coverage = ("guaranteed under this sensor model" + (f" at {100 * err.confidence:.4g} % confidence"
                                                        if err.confidence is not None else "")
                if err.covered else f"not guaranteed: {err.why.split(';')[0]}")
    return dataclasses.replace(measured, assumptions=f"{measured.assumptions}; {err.why}", coverage=coverage)


def estimator_assumption(problem, run, ctl) -> str | None:
    """Whether a run kept the acceleration an estimated velocity's lag bound assumed (:meth:`Sensor.error_bound
    <robustrack.loop.Sensor.error_bound>` takes the nominal motion's sup |q̈|): None when it did (or the velocity is
    measured), else why not — the controlled motion's increments |Δq̇_c|/h between samples, which a noisy high-gain
    loop drives far above the nominal's, exceeded it, and the bound's assumption did not hold.

    Parameters
    ----------
    problem : TrackingProblem
        With a ``sensor``.
    run : NominalRun
    ctl : ControlledSolution
        Of the sampled loop (its states at the sample instants).

    Returns
    -------
    str or None
    """
    sensor = problem.sensor
    if sensor is None or sensor.velocity == "exact" or ctl.x_steps.shape[0] < 2:
        return None
    n = problem.n
    a = nominal_acceleration(run)
    dt = np.diff(ctl.t_steps)
    seen = (np.abs(np.diff(ctl.x_steps[:, n:2 * n], axis=0)) / dt[:, None]).max(axis=0)
    over = seen > a * (1.0 + 1e-9)
    if not over.any():
        return None
    j = int(np.argmax(seen / np.where(a > 0, a, 1e-300)))
    return (f"the controlled motion's acceleration between samples reached {seen[j]:.4g} (coordinate {j}) above the "
            f"nominal's {a[j]:.4g} that the estimated velocity's lag bound assumes: not guaranteed")
