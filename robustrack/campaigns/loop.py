"""The closed loop a campaign evaluates, and one sample's evaluation.

A :class:`ClosedLoop` holds what every sample shares: the nominal plant, the
constraint, the compensator, the initial state, the horizon and the solver
settings. :meth:`ClosedLoop.nominal_run` integrates the nominal system once
(:func:`robustrack.tracking.simulate.integrate_nominal_run`); :func:`evaluate_sample`
then follows it with one actual plant (:func:`robustrack.tracking.simulate.track_peaks`:
the controlled system only, its peaks and bound check) and keeps the numbers a campaign reports as a
:class:`SampleRecord`. A failing solve becomes a failed record, never an exception.
"""

from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass

import numpy as np

from ..tracking.defaults import DEFAULT_ATOL, DEFAULT_RTOL, DEFAULT_TRACKING_METHOD

__all__ = ["ClosedLoop", "SampleRecord", "evaluate_sample", "describe_value"]


@dataclass(frozen=True, eq=False)
class ClosedLoop:
    """What every sample of a campaign shares (the inputs of :func:`~robustrack.tracking.simulate_tracking`).

    Attributes
    ----------
    nominal : Plant
        The nominal model; the actual plants are drawn around it.
    constraint : Constraint or None
        The stacked constraints (None: the unconstrained variant).
    compensator : Compensator or None
    q0, qd0 : array_like (n,)
        Initial state of the nominal system (the actual systems start there too).
    t_span : (float, float)
    sample_period : float or None
        Zero-order-hold period of the control (None: continuous).
    gamma : float or None
        Γ for the promised bounds (None: the compensator's design value).
    transient : float or None
        Start of the bound check (None: automatic).
    n_points : int
        Output grid of each run (metrics are also taken on every accepted step).
    method : str
        Integrator of the controlled loop.
    rtol, atol : float
    backend : {"auto", "numpy"}
    actuators : Actuators or None
        The input matrix and limits the forces go through (None: every direction).
    """

    nominal: object
    constraint: object
    compensator: object
    q0: object
    qd0: object
    t_span: tuple
    sample_period: float | None = None
    gamma: float | None = None
    transient: float | None = None
    n_points: int = 1001
    method: str = DEFAULT_TRACKING_METHOD
    rtol: float = DEFAULT_RTOL
    atol: float = DEFAULT_ATOL
    backend: str = "auto"
    actuators: object = None

    def nominal_run(self):
        """Integrate the nominal system once (shared by every sample).

        Returns
        -------
        NominalRun
            From :func:`robustrack.tracking.simulate.integrate_nominal_run`.
        """
        from ..tracking.simulate import integrate_nominal_run

        return integrate_nominal_run(self.nominal, self.constraint, self.q0, self.qd0, self.t_span,
                                     n_points=self.n_points, rtol=self.rtol, atol=self.atol, backend=self.backend,
                                     actuators=self.actuators)

    def check(self, run) -> None:
        """Validate the compensator and sampling against ``run`` before any sample (warns once on a fallback).

        Parameters
        ----------
        run : NominalRun
            From :meth:`nominal_run`.

        Returns
        -------
        None
        """
        from ..tracking.simulate import prepare

        prepare(run, self.nominal, self.compensator, sample_period=self.sample_period, transient=self.transient,
                method=self.method)

    def track(self, run, actual):
        """Follow ``run`` with one actual plant: the controlled system's peaks and bound check (failures returned).

        Parameters
        ----------
        run : NominalRun
        actual : Plant

        Returns
        -------
        TrackingPeaks
            :func:`robustrack.tracking.simulate.track_peaks` — the same numbers as the metrics of
            ``robustrack run`` with this plant.
        """
        from ..tracking.simulate import track_peaks

        return track_peaks(run, actual, self.compensator, sample_period=self.sample_period, gamma=self.gamma,
                           transient=self.transient, method=self.method)

    def promised_bounds(self):
        """The bounds the compensator promises at ``gamma`` (None without a compensator).

        Returns
        -------
        PromisedBounds or None
        """
        return None if self.compensator is None else self.compensator.bounds(self.gamma)

    def describe(self) -> dict:
        """A JSON-ready description (what a store compares to refuse other settings).

        Returns
        -------
        dict
            Plant type and parameters, constraint type, compensator name and
            parameters (its control function by name, ε and shape), initial state,
            horizon and solver settings.
        """
        comp = self.compensator
        return {
            "nominal": {"type": type(self.nominal).__name__, "params": describe_value(self.nominal.params)},
            "constraint": None if self.constraint is None else type(self.constraint).__name__,
            "compensator": None if comp is None else {
                "name": getattr(comp, "name", type(comp).__name__), "params": describe_value(comp.params)},
            "q0": describe_value(self.q0), "qd0": describe_value(self.qd0),
            "t_span": describe_value(self.t_span), "sample_period": self.sample_period, "gamma": self.gamma,
            "transient": self.transient, "n_points": int(self.n_points), "method": self.method,
            "rtol": float(self.rtol), "atol": float(self.atol), "backend": self.backend,
        }


def describe_value(v):
    """A JSON-ready form of a parameter value (arrays as lists, control functions by name, ε and shape).

    Parameters
    ----------
    v : object
        A number, array, mapping, sequence, control function or anything else
        (then its ``repr``).

    Returns
    -------
    object
        Plain Python numbers, strings, lists and dicts.
    """
    if isinstance(v, dict):
        return {str(k): describe_value(x) for k, x in v.items()}
    if isinstance(v, (list, tuple, np.ndarray)):
        return [describe_value(x) for x in np.asarray(v, dtype=object).tolist()] if np.ndim(v) else \
            describe_value(np.asarray(v).item())
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, (int, np.integer)):
        return int(v)
    if isinstance(v, (float, np.floating)):
        v = float(v)
        return v if math.isfinite(v) else repr(v)
    if v is None or isinstance(v, str):
        return v
    if hasattr(v, "g") and hasattr(v, "eps") and hasattr(v, "name"):  # a ControlFunction
        return {"name": v.name, "eps": float(v.eps), "params": describe_value(getattr(v, "params", {}))}
    return repr(v)


@dataclass(frozen=True)
class SampleRecord:
    """One sampled actual plant's outcome.

    Attributes
    ----------
    index : int
        The sample's index (its δ is a function of the seed and this index alone).
    dm : tuple of float
        The sampled δ of the uncertain parameter(s) (actual = nominal + δ).
    success : bool
        The controlled solve reached the end.
    max_abs_e, max_abs_edot, max_abs_Qu : float or None
        max ‖e‖∞, max ‖ė‖∞, max ‖Qᵘ‖∞ over the run (None when the solve produced nothing).
    held : bool or None
        Whether the promised bounds held after the transient (None: nothing promised or
        not judged, e.g. a sampled sign law; False for a failed solve that was judged).
    error : str or None
        Why the sample failed.
    wall_s, cpu_s : float
        Its wall and CPU time (in the process that ran it).
    """

    index: int
    dm: tuple
    success: bool
    max_abs_e: float | None
    max_abs_edot: float | None
    max_abs_Qu: float | None
    held: bool | None
    error: str | None = None
    wall_s: float = 0.0
    cpu_s: float = 0.0

    def to_dict(self) -> dict:
        """The record as a plain dict (JSON-ready).

        Returns
        -------
        dict
        """
        d = dataclasses.asdict(self)
        d["dm"] = list(self.dm)
        return d

    def results(self) -> tuple:
        """The numbers that must not depend on where or when the sample ran (no timings).

        Returns
        -------
        tuple
            ``(index, dm, success, max_abs_e, max_abs_edot, max_abs_Qu, held, error)``.
        """
        return (self.index, tuple(self.dm), self.success, self.max_abs_e, self.max_abs_edot, self.max_abs_Qu,
                self.held, self.error)


def _float(v):
    return None if v is None else float(v)


def evaluate_sample(loop: ClosedLoop, run, actual, index: int, dm) -> SampleRecord:
    """Track ``run`` with one actual plant and keep a campaign's numbers; never raises on a failed solve.

    Parameters
    ----------
    loop : ClosedLoop
    run : NominalRun
        ``loop.nominal_run()`` (computed once per process).
    actual : Plant or Exception
        The sample's actual plant, or the exception raised while building it (recorded).
    index : int
    dm : array_like (k,)
        The sample's δ, recorded as given.

    Returns
    -------
    SampleRecord
    """
    start, cpu = time.perf_counter(), time.process_time()
    dm = tuple(float(x) for x in np.ravel(dm))
    peaks, error, success = None, None, False
    try:
        if isinstance(actual, BaseException):
            raise actual
        peaks = loop.track(run, actual)
        values = (peaks.max_abs_e, peaks.max_abs_edot, peaks.max_abs_Qu)
        success = peaks.success and None not in values
        if not success:
            error = f"SolverError: {peaks.method} failed at t = {peaks.t_reached:.6g}: {peaks.message}"
        elif not all(math.isfinite(v) for v in values):
            # a NaN or inf peak is no result: the sample failed, whatever the solver said
            success = False
            error = (f"NonFiniteResult: max|e| = {peaks.max_abs_e}, max|ė| = {peaks.max_abs_edot}, "
                     f"max|Qᵘ| = {peaks.max_abs_Qu}")
    except Exception as exc:  # one sample's failure is recorded; the campaign goes on
        error = f"{type(exc).__name__}: {exc}"
    held = None
    if peaks is not None and peaks.bounds_held is not None:
        held = bool(peaks.bounds_held) and success
    return SampleRecord(
        index=int(index), dm=dm, success=success,
        max_abs_e=None if peaks is None else _float(peaks.max_abs_e),
        max_abs_edot=None if peaks is None else _float(peaks.max_abs_edot),
        max_abs_Qu=None if peaks is None else _float(peaks.max_abs_Qu),
        held=held, error=error, wall_s=time.perf_counter() - start, cpu_s=time.process_time() - cpu,
    )
