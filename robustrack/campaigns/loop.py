"""One sample's evaluation: a campaign's record of one actual plant.

A campaign evaluates a :class:`~robustrack.tracking.TrackingProblem` (what every sample
shares: the nominal plant, the constraint, the compensator, the initial state, the horizon
and the solver settings). :meth:`~robustrack.tracking.TrackingProblem.nominal_run` integrates
the nominal system once; :func:`evaluate_sample` then follows it with one actual plant
(:meth:`~robustrack.tracking.TrackingProblem.peaks`: the controlled system only, its peaks and
bound check) and keeps the numbers a campaign reports as a :class:`SampleRecord`. A failing
solve becomes a failed record, never an exception.
"""

from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass

import numpy as np

from ..tracking.problem import describe_value

__all__ = ["SampleRecord", "evaluate_sample", "describe_value"]


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


def evaluate_sample(loop, run, actual, index: int, dm) -> SampleRecord:
    """Track ``run`` with one actual plant and keep a campaign's numbers; never raises on a failed solve.

    Parameters
    ----------
    loop : TrackingProblem
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
        peaks = loop.peaks(run, actual)
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
