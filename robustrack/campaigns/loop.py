"""One sample's evaluation: a campaign's record of one actual plant.

A campaign evaluates a :class:`~robustrack.tracking.TrackingProblem` (what every sample
shares: the nominal plant, the constraint, the compensator, the initial state, the horizon
and the solver settings). :meth:`~robustrack.tracking.TrackingProblem.nominal_run` integrates
the nominal system once; :func:`evaluate_sample` then follows it with one actual plant
(:meth:`~robustrack.tracking.TrackingProblem.peaks`: the controlled system only, its peaks and
bound check) and keeps the numbers a campaign reports as a :class:`SampleRecord`. A failing
solve becomes a failed record, never an exception.

Why a sample ended (``SampleRecord.outcome``)
--------------------------------------------
It ran (:data:`RAN`): ``held`` (the promised bounds held after the transient), ``not held``,
``not judged`` (nothing promised, a sampled sign law, or the actuators saturated), ``diverged`` (the controlled solve
failed or gave non-finite numbers) or ``failed`` (building the actual plant raised, or the
sample killed its worker process twice). It did not run (:data:`NOT_RUN`): ``cancelled``
(its task was cancelled), ``worker lost`` (the worker running it died or was lost) or
``interrupted`` (the campaign stopped before it finished). A campaign counts only samples
that ran and runs the others again when resumed.

A sample's bound is *guaranteed* when it held *and* the bound's assumptions held along the
run (``assumptions_held``: max ‖δq‖∞ ≤ Γ and max ‖M̃ₐ‖∞ ≤ 1 − α0/σ, GD's and GD-bar's ``max_norm_P``,
:func:`~robustrack.tracking.assess.assumptions_held`) *and* the samples start in the bound's invariant set
(:func:`campaign_bounds`' ``start_note``: the summaries count none guaranteed otherwise); held without them it is
only observed.
"""

from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass

import numpy as np

from .._json import describe_value

__all__ = ["SampleRecord", "evaluate_sample", "describe_value", "campaign_bounds", "not_run_records", "RAN",
           "NOT_RUN"]

#: Outcomes of a sample that ran (module docstring).
RAN = ("held", "not held", "not judged", "diverged", "failed")
#: Outcomes of a sample that did not run: not counted, run again on resume.
NOT_RUN = ("cancelled", "worker lost", "interrupted")

#: Exceptions (by class name) a task ends with when it did not run to its end on a cluster, and
#: what they mean for its samples; also how a version-1 store's error texts are read.
NOT_RUN_ERRORS = {"CancelledError": "cancelled", "FutureCancelledError": "cancelled", "KilledWorker": "worker lost",
                  "CommClosedError": "worker lost", "StreamClosedError": "worker lost"}


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
        Why the sample failed (or did not run).
    wall_s, cpu_s : float
        Its wall and CPU time (in the process that ran it).
    max_norm_dq, max_norm_Mtilde : float or None
        max_t ‖δq‖∞ and max_t ‖M̃ₐ‖∞ along the run (what the bounds assume; None: not measured).
    assumptions_held : bool or None
        Both stayed within their limits (None: the bound assumes nothing of them, or not measured).
    outcome : str
        Why the sample ended: one of :data:`RAN` or :data:`NOT_RUN` (module docstring); derived
        from ``success``, ``held`` and ``error`` when not given.
    max_norm_P : float or None
        GD's max_t ‖(I − M̃ₐ)(e + K_i∫e)‖∞ (W 8.2.17), GD-bar's max_t (‖δq‖∞ + ‖(I − M̃ₐ)e‖∞) (W 8.3.16); None: not
        GD or GD-bar, or not measured.
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
    max_norm_dq: float | None = None
    max_norm_Mtilde: float | None = None
    assumptions_held: bool | None = None
    outcome: str | None = None
    max_norm_P: float | None = None
    #: Each actuator's peak demanded |τ| (a robot's joints: against its effort limits); None without actuators.
    max_abs_tau: tuple | None = None

    def __post_init__(self):
        outcome = self.outcome
        if outcome is None:
            if self.success:
                outcome = "not judged" if self.held is None else ("held" if self.held else "not held")
            elif (self.error or "").split(":", 1)[0] in NOT_RUN_ERRORS:
                outcome = NOT_RUN_ERRORS[self.error.split(":", 1)[0]]
            else:
                outcome = "failed" if self.error and not self.error.startswith(("SolverError", "NonFiniteResult")) \
                    else "diverged"
        if outcome not in RAN + NOT_RUN:
            raise ValueError(f"`outcome` must be one of {list(RAN + NOT_RUN)}; got {outcome!r}.")
        object.__setattr__(self, "outcome", outcome)

    @property
    def ran(self) -> bool:
        """The sample ran (its outcome is one of :data:`RAN`); False: it is run again on resume."""
        return self.outcome in RAN

    @property
    def guaranteed(self) -> bool:
        """The bound held and its assumptions held along the run (a certificate, not a lucky observation)."""
        return self.outcome == "held" and self.assumptions_held is True

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
            ``(index, dm, success, max_abs_e, max_abs_edot, max_abs_Qu, held, error, max_norm_dq,
            max_norm_Mtilde, assumptions_held, outcome, max_norm_P)``.
        """
        return (self.index, tuple(self.dm), self.success, self.max_abs_e, self.max_abs_edot, self.max_abs_Qu,
                self.held, self.error, self.max_norm_dq, self.max_norm_Mtilde, self.assumptions_held, self.outcome,
                self.max_norm_P)


def _float(v):
    return None if v is None else float(v)


def sample_sensor(sensor, index: int):
    """The sensor of campaign sample ``index``: the problem's with its own noise stream, seeded from the problem's
    seed and the index (``SeedSequence([seed, index])``: the same sample draws the same noise wherever it runs);
    None without a sensor."""
    if sensor is None:
        return None
    seed = int(np.random.SeedSequence([sensor.seed, int(index)]).generate_state(1)[0])
    return dataclasses.replace(sensor, seed=seed)


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
        peaks = loop.peaks(run, actual, sensor=sample_sensor(loop.sensor, index))
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
        max_norm_dq=None if peaks is None else _float(peaks.max_norm_dq),
        max_norm_Mtilde=None if peaks is None else _float(peaks.max_norm_Mtilde),
        assumptions_held=None if peaks is None or peaks.assumptions_held is None else bool(peaks.assumptions_held),
        outcome=None if error is None or success else ("failed" if peaks is None else "diverged"),
        max_norm_P=None if peaks is None else _float(peaks.max_norm_P),
        max_abs_tau=None if getattr(peaks, "max_abs_tau", None) is None else tuple(map(float, peaks.max_abs_tau)),
    )


def not_run_records(items, outcome: str, why: str) -> list[SampleRecord]:
    """Records of ``(index, δ)`` items that did not run (not counted; run again on resume).

    Parameters
    ----------
    items : sequence of (int, sequence of float)
    outcome : str
        One of :data:`NOT_RUN`.
    why : str
        What happened (kept as the records' ``error``).

    Returns
    -------
    list of SampleRecord
    """
    if outcome not in NOT_RUN:
        raise ValueError(f"`outcome` must be one of {list(NOT_RUN)}; got {outcome!r}.")
    return [SampleRecord(int(i), tuple(float(x) for x in dm), False, None, None, None, None, why, outcome=outcome)
            for i, dm in items]


def campaign_bounds(loop) -> dict | None:
    """The promised bounds a campaign reports, with the limits their assumptions put on the uncertainty.

    Parameters
    ----------
    loop : TrackingProblem

    Returns
    -------
    dict or None
        ``PromisedBounds.to_dict()`` plus ``assumption_limits``
        (:func:`~robustrack.tracking.assess.assumption_limits`: ``max_norm_dq`` → Γ,
        ``max_norm_Mtilde`` → 1 − α0/σ, or None), ``assumption_texts`` and, when the samples start outside the
        bound's invariant set, ``start_note`` (then no sample is guaranteed); None without a compensator.
    """
    from ..tracking.assess import assumption_limits, assumption_texts
    from ..tracking.simulate import starting_set

    from ..tracking.actuators import effort_limits

    bounds = loop.promised_bounds()
    if bounds is None:
        return None
    limits = effort_limits(loop)
    e0, edot0 = loop.initial_errors()
    start_note = starting_set(loop, e0, edot0)[1]  # every sample starts with the problem's e(0), ė(0)
    return {**bounds.to_dict(), "assumption_limits": assumption_limits(bounds, loop.compensator),
            "assumption_texts": assumption_texts(loop.compensator),
            **({"start_note": start_note} if start_note else {}),
            **({} if limits is None else {"effort_limits": {"joints": list(loop.nominal.coordinates),
                                                            "limits": limits.tolist()}})}
