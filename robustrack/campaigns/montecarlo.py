"""Closed-loop Monte Carlo: does the compensator keep its promise on every sampled actual plant?

:func:`monte_carlo` draws N actual plants (:class:`~robustrack.campaigns.sampling.ParameterUncertainty`),
integrates the nominal system once and follows it with each actual plant
(:func:`~robustrack.campaigns.loop.evaluate_sample`: the full controlled loop, metrics
on every accepted step), on an executor (:mod:`~robustrack.campaigns.executors`),
optionally writing every finished sample to a resumable SQLite store
(:mod:`~robustrack.campaigns.store`). :func:`summarize` turns the records into the
campaign's summary.

Summary (``CampaignResult.summary()``)
-------------------------------------
``samples`` asked, ``completed`` (the samples that ran: succeeded or failed), ``failed``
(the controlled solve failed, or building the plant did; each listed in ``failures`` with
its error, and counted by error type in ``failure_kinds``); ``not_run`` — samples that did
not run (cancelled, worker lost, interrupted: :data:`~robustrack.campaigns.loop.NOT_RUN`),
never counted in a fraction and run again on resume; ``held`` and ``held_fraction`` — the
*observed* fraction: samples whose promised bounds held after the transient, over the
samples judged (successful ones whose bound was judged, plus every failed one, which
counts as not held; None when nothing is judged, e.g. without a compensator or for a
sampled sign law); ``guaranteed`` and ``guaranteed_fraction`` — the bound held *and* its
assumptions held along the run (max ‖δq‖∞ ≤ Γ, max ‖M̃ₐ‖∞ ≤ 1 − α0/σ), over the same
samples: what the compensator's theorem certifies; ``assumptions`` — which assumption
failed on how many samples, its largest value and excess over its limit; the median, p95, p99 (``numpy.quantile``, linear) and max of
max ‖e‖∞, max ‖ė‖∞ and max ‖Qᵘ‖∞ over the successful samples; the ``worst`` sample (largest
max ‖e‖∞; the lowest index on a tie) with its δ; the promised ``bound``; ``wall_s`` (all
sessions of a stored campaign) and ``cpu_s`` (the samples' CPU time). ``wall_s`` and
``cpu_s`` are the only entries that differ between two runs of the same campaign.
"""

from __future__ import annotations

import contextlib
import time
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from .._validate import available_memory, positive_int
from ..errors import ParameterError, RobustrackError
from .executors import ExecutorLost, Job, make_executor, pack_job, register_prepared
from .._json import describe_value
from .loop import SampleRecord, campaign_bounds, not_run_records
from .progress import make_progress
from .store import CampaignStore, check_store_path

__all__ = ["monte_carlo", "CampaignResult", "CampaignInterrupted", "CampaignAborted", "summarize", "certificate_lines", "load_campaign", "check_samples",
           "QUANTILES", "MAX_SAMPLES"]

#: The quantiles of a summary, by name.
QUANTILES = {"median": 0.5, "p95": 0.95, "p99": 0.99}

#: A hard ceiling on the number of samples of one campaign (split larger ones by seed).
MAX_SAMPLES = 100_000_000

#: Bytes a sample holds in memory while a campaign runs (its δ row, record and bookkeeping): an upper estimate.
_BYTES_PER_SAMPLE = 1200


class CampaignInterrupted(RobustrackError):
    """A campaign was stopped (Ctrl-C) before it finished; finished samples are kept in its store.

    Attributes
    ----------
    result : CampaignResult
        What had finished (``complete`` is False).
    """

    def __init__(self, message: str, result=None):
        super().__init__(message)
        self.result = result


class CampaignAborted(RobustrackError):
    """A campaign lost where its samples run (e.g. its Dask scheduler); finished samples are kept in its store.

    Attributes
    ----------
    result : CampaignResult
        What had finished (``complete`` is False; the samples that did not run are kept as
        ``interrupted`` records and run again on resume).
    """

    def __init__(self, message: str, result=None):
        super().__init__(message)
        self.result = result


def check_samples(samples, name: str = "samples", *, k: int = 3) -> int:
    """Validate a number of samples: an integer >= 1 that fits in memory.

    Parameters
    ----------
    samples : int
    name : str
        The argument's name for messages (e.g. ``"--samples"``).
    k : int
        Uncertain parameters per sample (for the memory estimate).

    Returns
    -------
    int

    Raises
    ------
    ParameterError
        Not an integer, <= 0, above :data:`MAX_SAMPLES`, or more than half of the
        memory available would be needed.
    """
    samples = positive_int(samples, name, what="the number of sampled plants")
    need = samples * (_BYTES_PER_SAMPLE + 8 * k)
    avail = available_memory()
    if samples > MAX_SAMPLES or (avail is not None and need > 0.5 * avail):
        avail_txt = "" if avail is None else f", {avail / 2**30:.1f} GiB available"
        raise ParameterError(
            f"`{name}` = {samples} is too many for one campaign: about {need / 2**30:.1f} GiB of draws and records"
            f"{avail_txt} (limit: half the available memory and {MAX_SAMPLES:,} samples). Run fewer samples, or "
            "split the campaign into several seeds."
        )
    return samples


def _quantiles(values) -> dict:
    if not len(values):
        return {name: None for name in (*QUANTILES, "max")}
    arr = np.asarray(values, dtype=float)
    out = {name: float(np.quantile(arr, q)) for name, q in QUANTILES.items()}
    out["max"] = float(arr.max())
    return out


def _assumption_report(judged, limits, texts=None) -> dict | None:
    """Which of the bound's assumptions failed on the judged samples, and by how much (``texts``: the
    compensator's :func:`~robustrack.tracking.assess.assumption_texts`, default :data:`ASSUMPTIONS`)."""
    known = [r for r in judged if r.assumptions_held is not None]
    if not known:
        return None
    from ..tracking.assess import ASSUMPTIONS

    out = {"limits": limits, "texts": {**ASSUMPTIONS, **(texts or {})},
           "held": sum(1 for r in known if r.assumptions_held),
           "failed": sum(1 for r in known if not r.assumptions_held), "unknown": len(judged) - len(known),
           "by_assumption": {}, "samples": []}
    for key, text in out["texts"].items():
        limit = (limits or {}).get(key)
        values = [(getattr(r, key), r) for r in known if getattr(r, key) is not None]
        if limit is None or not values:
            continue
        value, worst = max(values, key=lambda vr: (vr[0], -vr[1].index))
        over = [r for v, r in values if not v <= limit]
        out["by_assumption"][key] = {"assumption": text, "limit": limit, "max": value, "excess": value - limit,
                                     "failed": len(over), "worst_sample": worst.index, "worst_dm": list(worst.dm)}
    out["samples"] = [{"sample": r.index, "dm": list(r.dm), "max_norm_dq": r.max_norm_dq,
                       "max_norm_Mtilde": r.max_norm_Mtilde, "max_norm_P": r.max_norm_P, "held": r.held}
                      for r in known if not r.assumptions_held]
    return out


def _effort_summary(ok, effort: dict) -> dict:
    """Each joint's largest demanded |τ| over the samples against its effort limit, and the samples over a limit
    (docs/guide/robot.md, "Effort limits")."""
    limits = np.asarray(effort["limits"], dtype=float)
    peaks = np.array([r.max_abs_tau for r in ok if r.max_abs_tau is not None], dtype=float).reshape(-1, limits.size)
    over = peaks > limits
    return {"joints": list(effort["joints"]), "limits": limits.tolist(),
            "max": peaks.max(axis=0).tolist() if peaks.size else None,
            "samples_over": int(over.any(axis=1).sum()), "measured": int(peaks.shape[0]),
            "over_per_joint": over.sum(axis=0).astype(int).tolist()}


def summarize(records, samples: int, *, settings: dict | None = None, bounds: dict | None = None,
              wall_s: float | None = None, cpu_s: float | None = None) -> dict:
    """The summary of a campaign's records (module docstring).

    Only samples that ran are counted (:data:`~robustrack.campaigns.loop.RAN`); those that did
    not (cancelled, worker lost, interrupted) are listed apart and run again on resume.

    Parameters
    ----------
    records : iterable of SampleRecord
    samples : int
        Samples asked for.
    settings : dict, optional
        The campaign's settings (``scenario``, ``compensator``, ``uncertainty`` …).
    bounds : dict, optional
        The promised bounds (:func:`~robustrack.campaigns.loop.campaign_bounds`).
    wall_s, cpu_s : float, optional
        Wall time (default: the records' own) and CPU time (default: the sum of the records').

    Returns
    -------
    dict
        JSON-ready: ``scenario``, ``compensator``, ``samples``, ``completed`` (samples that ran),
        ``failed``, ``not_run`` (count), ``not_run_kinds`` (by outcome), ``not_run_samples``,
        ``outcomes`` (count per outcome), ``spread``, ``seed``, ``parameter``, ``held``, ``judged``,
        ``held_fraction`` (observed: the bound held), ``guaranteed``, ``guaranteed_fraction``
        (the bound held *and* its assumptions held; None when no assumption was measured),
        ``assumptions`` (limits, how many failed, per assumption its largest value, excess over
        its limit and worst sample, and the failing samples; None when nothing was measured),
        ``max_abs_e``, ``max_abs_edot``, ``max_abs_Qu`` (each ``{median, p95, p99, max}``),
        ``worst`` (``sample``, ``dm``, ``max_abs_e``, ``max_abs_edot``, ``held``,
        ``assumptions_held``, ``max_norm_dq``, ``max_norm_Mtilde``), ``bound`` (``e``, ``edot``,
        ``gamma``), ``failures``, ``failure_kinds``, ``wall_s``, ``cpu_s``.
    """
    settings = settings or {}
    everything = sorted(records, key=lambda r: r.index)
    recs = [r for r in everything if r.ran]
    not_run = [r for r in everything if not r.ran]
    ok = [r for r in recs if r.success and r.max_abs_e is not None]
    failed = [r for r in recs if not r.success]
    judged = [r for r in ok if r.held is not None]
    held = sum(1 for r in judged if r.held)
    denominator = len(judged) + len(failed)
    b = bounds or {}
    assumptions = (_assumption_report(judged + failed, b.get("assumption_limits"), b.get("assumption_texts"))
                   if judged else None)
    guaranteed = None if assumptions is None else sum(1 for r in judged if r.guaranteed)
    coverage = b.get("coverage")  # a loop through a sensor: only what the theory covers is guaranteed
    if guaranteed is not None and coverage and not coverage.startswith("guaranteed"):
        guaranteed = 0
    if guaranteed is not None and b.get("start_note"):  # started outside the invariant set: observed only
        guaranteed = 0
    worst = None
    if ok:
        values = np.array([r.max_abs_e for r in ok])
        w = ok[int(np.argmax(values))]
        worst = {"sample": w.index, "dm": list(w.dm), "max_abs_e": w.max_abs_e, "max_abs_edot": w.max_abs_edot,
                 "held": w.held, "assumptions_held": w.assumptions_held, "max_norm_dq": w.max_norm_dq,
                 "max_norm_Mtilde": w.max_norm_Mtilde, "max_norm_P": w.max_norm_P}
    unc = settings.get("uncertainty", {})
    loop = settings.get("loop", {})
    comp = settings.get("compensator")
    if comp is None:
        comp = (loop.get("compensator") or {}).get("name") if loop else None
    return {
        "scenario": settings.get("scenario"),
        "plant": (loop.get("nominal") or {}).get("type") if loop else None,  # names a script's campaign
        "compensator": comp if comp is not None else "none",
        "samples": int(samples),
        "completed": len(recs),
        "failed": len(failed),
        "not_run": len(not_run),
        "not_run_kinds": dict(sorted(Counter(r.outcome for r in not_run).items())),
        "not_run_samples": [r.index for r in not_run],
        "outcomes": dict(sorted(Counter(r.outcome for r in recs).items())),
        "spread": unc.get("spread"),
        "kind": unc.get("kind"),
        "seed": unc.get("seed"),
        "parameter": unc.get("parameter"),
        "parameters": unc.get("parameters"),  # named uncertain parameters (each one's description), else None
        # the actual plant's friction and disturbance (ActualForces.describe), only where a campaign has them
        **({"actual_forces": unc["disturbance"]} if isinstance(unc.get("disturbance"), dict) else {}),
        # the actual plants' engine where it is not robustrack's own (MujocoProblem.describe)
        **({"actual_engine": loop["actual_engine"]} if isinstance(loop.get("actual_engine"), dict) else {}),
        "held": held if judged else None,
        "judged": denominator if judged else 0,
        "held_fraction": (held / denominator) if judged else None,
        "guaranteed": guaranteed,
        "guaranteed_fraction": None if guaranteed is None else guaranteed / denominator,
        "coverage": coverage,
        "assumptions": assumptions,
        "max_abs_e": _quantiles([r.max_abs_e for r in ok]),
        "max_abs_edot": _quantiles([r.max_abs_edot for r in ok]),
        "max_abs_Qu": _quantiles([r.max_abs_Qu for r in ok]),
        **({"effort": _effort_summary(ok, b["effort_limits"])} if b.get("effort_limits") else {}),
        "worst": worst,
        "bound": ({"e": b.get("e"), "edot": b.get("edot"), "gamma": b.get("gamma"),
                   **({"start_note": b["start_note"]} if b.get("start_note") else {})} if b else None),
        "failures": [{"sample": r.index, "dm": list(r.dm), "error": r.error, "outcome": r.outcome} for r in failed],
        "failure_kinds": dict(sorted(Counter((r.error or "failed").split(":", 1)[0] for r in failed).items())),
        "wall_s": float(sum(r.wall_s for r in recs)) if wall_s is None else float(wall_s),
        "cpu_s": float(sum(r.cpu_s for r in recs)) if cpu_s is None else float(cpu_s),
    }


def _fraction(n, d) -> str:
    from .._format import format_value

    return f"{n} / {d} ({format_value(100 * n / d, digits=3)} %)" if d else f"{n} / 0"


def certificate_lines(doc: dict, *, dq_unit: str | None = None, gamma_command: str | None = None,
                      resume: str = "run the same campaign again") -> list[str]:
    """What a summary certifies, as text: observed and guaranteed fractions, the failed assumptions, Γ advice.

    Parameters
    ----------
    doc : dict
        :func:`summarize`'s summary (or :meth:`CampaignResult.summary`).
    dq_unit : str, optional
        Unit of ‖δq‖∞ (and Γ), e.g. ``"rad/s²"``.
    gamma_command : str, optional
        The command that estimates Γ for this uncertainty (shown when Γ was exceeded).
    resume : str
        How to run the samples that did not run.

    Returns
    -------
    list of str
        Lines without indentation: ``bounds held (observed)``, ``guaranteed``, one line per
        failed assumption, the Γ advice, and the samples that did not run.
    """
    from .._format import format_value

    lines = []
    if doc["held_fraction"] is None:
        lines.append("bounds held: not judged (nothing promised, a sampled sign law, or the motors saturated)")
    else:
        lines.append(f"bounds held (observed): {_fraction(doc['held'], doc['judged'])}")
        a = doc.get("assumptions")
        if doc.get("guaranteed") is None:
            lines.append("guaranteed (bound held with its assumptions): unknown — the assumptions were not measured "
                         "(the bound assumes no Γ, or the store was written before they were kept)")
        else:
            start = (doc.get("bound") or {}).get("start_note")
            lines.append(f"guaranteed (bound held with its assumptions): {_fraction(doc['guaranteed'], doc['judged'])}"
                         + (f" — {start}" if start else "")
                         + (f"; assumptions failed on {a['failed']}" if a and a["failed"] else "")
                         + (f" — under the sensor model: {doc['coverage']}" if doc.get("coverage") else ""))
        for key, d in ((a or {}).get("by_assumption") or {}).items():
            unit = dq_unit if key in ("max_norm_dq", "max_norm_P") else None  # both in the units of q̈
            state = (f"failed on {d['failed']} samples: max {format_value(d['max'], unit)} at sample "
                     f"{d['worst_sample']} is {format_value(d['excess'], unit)} over the limit "
                     f"{format_value(d['limit'], unit)}" if d["failed"] else
                     f"held: max {format_value(d['max'], unit)} ≤ {format_value(d['limit'], unit)}")
            lines.append(f"  assumption {d['assumption']}: {state}")
        dq = ((a or {}).get("by_assumption") or {}).get("max_norm_dq")
        if dq and dq["failed"]:
            how = (f"`{gamma_command}` estimates Γ′ for this uncertainty" if gamma_command else
                   "a Γ Monte Carlo (robustrack gamma) estimates Γ′ for this uncertainty")
            lines.append(f"Γ is exceeded: max ‖δq‖∞ = {format_value(dq['max'], dq_unit)} > Γ = "
                         f"{format_value(dq['limit'], dq_unit)} along the controlled runs; {how} — a Γ of at least "
                         f"{format_value(dq['max'], dq_unit)} covers every sample seen (set it as uncertainty.gamma and the compensator's design value Γ′ or Γ)")
    if doc.get("not_run"):
        kinds = ", ".join(f"{k} {v}" for k, v in doc["not_run_kinds"].items())
        lines.append(f"did not run: {doc['not_run']} samples ({kinds}) — not counted in any fraction; {resume} to "
                     "run them")
    return lines


@dataclass(frozen=True)
class CampaignResult:
    """A Monte Carlo campaign's records and how it ran.

    Attributes
    ----------
    records : tuple of SampleRecord
        By index (only finished samples; see ``complete``).
    samples : int
        Samples asked for.
    settings : dict
        What defines the campaign (compared by its store).
    bounds : dict or None
        The promised bounds (``PromisedBounds.to_dict()``).
    wall_s, cpu_s : float
    complete : bool
        Every sample finished.
    store : str or None
        The store's path.
    executor : str
        Where this run's samples ran.
    ran : int
        Samples run by this call (the rest came from the store).
    sessions : list of dict
        The store's runs of this campaign (empty without a store).
    """

    records: tuple
    samples: int
    settings: dict
    bounds: dict | None
    wall_s: float
    cpu_s: float
    complete: bool = True
    store: str | None = None
    executor: str = ""
    ran: int = 0
    sessions: list = field(default_factory=list)

    def summary(self) -> dict:
        """The campaign's summary (:func:`summarize`).

        Returns
        -------
        dict
        """
        return summarize(self.records, self.samples, settings=self.settings, bounds=self.bounds,
                         wall_s=self.wall_s, cpu_s=self.cpu_s)

    def __repr__(self) -> str:
        """A summary (the counts, the fractions, the worst sample) — not every record."""
        from .._format import format_value

        doc = self.summary()
        pct = lambda x: "—" if x is None else format_value(100 * x, "%", digits=3)  # noqa: E731
        worst = doc.get("worst") or {}
        lines = [f"CampaignResult({doc.get('scenario') or 'campaign'}, {doc.get('compensator') or '?'}: "
                 f"{doc['completed']} of {self.samples} samples ran, {doc['failed']} failed"
                 f"{', complete' if self.complete else ', INCOMPLETE'})",
                 f"  bounds held (observed) {pct(doc.get('held_fraction'))}, guaranteed {pct(doc.get('guaranteed_fraction'))}"]
        if worst:
            lines.append(f"  worst: sample {worst.get('sample')}, δ = {format_value(worst.get('dm'))}, "
                         f"max‖e‖∞ {format_value(worst.get('max_abs_e'))}, held {format_value(worst.get('held'))}")
        return "\n".join(lines)

    @property
    def worst(self) -> SampleRecord | None:
        """The successful sample of largest max ‖e‖∞ (lowest index on a tie), or None."""
        ok = [r for r in self.records if r.success and r.max_abs_e is not None]
        return None if not ok else ok[int(np.argmax([r.max_abs_e for r in ok]))]

    def max_abs_e(self) -> np.ndarray:
        """max ‖e‖∞ of the successful samples, by index.

        Returns
        -------
        ndarray
        """
        return np.array([r.max_abs_e for r in self.records if r.success and r.max_abs_e is not None])

    def to_dict(self) -> dict:
        """The summary plus every record and the settings.

        Returns
        -------
        dict
        """
        return {**self.summary(), "settings": self.settings, "records": [r.to_dict() for r in self.records]}

    def plot(self, *, unit: str | None = None):
        """The histogram of max ‖e‖∞ over the samples, the promised bound marked.

        Parameters
        ----------
        unit : str, optional
            Unit of e (default: unknown, ``[q]``).

        Returns
        -------
        matplotlib.figure.Figure
            :func:`~robustrack.campaigns.figures.campaign_histogram_figure`.
        """
        from .figures import campaign_histogram_figure

        doc = self.summary()
        return campaign_histogram_figure(self.max_abs_e(), bound=(doc.get("bound") or {}).get("e"), unit=unit,
                                         title=f"Closed-loop Monte Carlo: {doc['completed']} plants")


def load_campaign(path, *, name: str = "store") -> CampaignResult:
    """Read a campaign from its store without running anything.

    Parameters
    ----------
    path : str or Path
    name : str
        The argument's name for messages.

    Returns
    -------
    CampaignResult
        ``complete`` says whether every sample is stored; ``wall_s`` sums the sessions.

    Raises
    ------
    ParameterError
        Not a campaign store (:meth:`CampaignStore.read`).
    """
    with CampaignStore.read(path, name=name) as store:
        records = tuple(store.records())
        sessions = store.sessions()
        bounds = store.get_meta("bounds")
        settings = store.settings
    samples = int(settings.get("samples", len(records)))
    return CampaignResult(records, samples, settings, bounds, float(sum(s["wall_s"] for s in sessions)),
                          float(sum(r.cpu_s for r in records)), complete=sum(1 for r in records if r.ran) == samples,
                          store=str(path),
                          executor="", ran=0, sessions=sessions)


def _chunks(items, size):
    return [items[i:i + size] for i in range(0, len(items), size)]


def _auto_chunk(pending: int, workers: int) -> int:
    return int(max(1, min(8, pending // max(1, 20 * workers))))


def monte_carlo(loop, uncertainty, samples: int, *, workers: int | None = None, scheduler: str | None = None,
                executor=None, store=None, settings: dict | None = None, chunk: int | None = None,
                progress="auto", desc: str = "montecarlo", labels: dict | None = None,
                info: dict | None = None) -> CampaignResult:
    """Run a closed-loop Monte Carlo campaign (module docstring).

    Parameters
    ----------
    loop : TrackingProblem or callable
        The closed loop, or a picklable zero-argument factory returning it (each worker
        process calls it once; use one when the constraint or plant does not pickle).
    uncertainty : ParameterUncertainty
        How the actual plants are drawn (its seed fixes every sample's δ).
    samples : int
        Number N of sampled actual plants.
    workers : int, optional
        Local worker processes (1: this process; default: the machine's cores).
    scheduler : str, optional
        A Dask scheduler address instead of a local pool (``tcp://HOST:PORT``).
    executor : object, optional
        An executor of :mod:`~robustrack.campaigns.executors` to use (and not close).
    store : str or Path, optional
        An SQLite file: finished samples are written as they complete, and a campaign
        of the same settings resumes from it (others are refused).
    settings : dict, optional
        Extra JSON-ready description of the campaign (e.g. ``scenario``, ``overrides``),
        added to what the store compares.
    chunk : int, optional
        Samples per task (and per store transaction); default 1–8 by size.
    progress : "auto", "bar", "lines", None or callable
        See :func:`~robustrack.campaigns.progress.make_progress`.
    desc : str
        Label of the progress output.
    labels : dict, optional
        How messages name the arguments (e.g. ``{"store": "--store"}`` for a command line).
    info : dict, optional
        JSON-ready notes kept in the store but not compared (e.g. the ``--set`` items as typed).

    Returns
    -------
    CampaignResult

    Raises
    ------
    ParameterError
        Bad ``samples``, ``workers``, ``chunk``, store or scheduler — all before any sample runs.
    CampaignInterrupted
        Ctrl-C: the finished samples are stored (with ``store``); ``.result`` holds them.
    """
    from .sampling import ParameterUncertainty

    if not isinstance(uncertainty, ParameterUncertainty):
        raise ParameterError(f"`uncertainty` must be a ParameterUncertainty; got {type(uncertainty).__name__}.")
    name = {"samples": "samples", "store": "store", **(labels or {})}
    samples = check_samples(samples, name["samples"])
    if chunk is not None:
        positive_int(chunk, "chunk")
    if store is not None:
        check_store_path(store, name["store"])
    own_executor = executor is None
    if own_executor:
        executor = make_executor(workers, scheduler, names=name)
    db = None
    try:
        job = Job(loop, uncertainty)
        built = job.build()
        key, payload = pack_job(job)
        run = built.nominal_run()
        built.check(run)
        bounds = campaign_bounds(built)
        deltas = uncertainty.draw(built.nominal, samples)
        doc = {"samples": samples, "uncertainty": uncertainty.describe(), "loop": built.describe(),
               **describe_value(settings or {})}
        register_prepared(key, built, run, uncertainty)
        previous: list[SampleRecord] = []
        if store is not None:
            db = CampaignStore.open(store, doc, name=name["store"])
            db.set_meta("bounds", bounds)
            if info:
                db.set_meta("info", describe_value(info))
            previous = [r for r in db.records() if r.ran]  # those that did not run are run again
        done_idx = {r.index for r in previous}
        pending = [(i, tuple(float(x) for x in deltas[i])) for i in range(samples) if i not in done_idx]
        size = chunk or _auto_chunk(len(pending), getattr(executor, "workers", 1))
        records = {r.index: r for r in previous}
        failed = sum(1 for r in previous if not r.success)
        start = time.perf_counter()
        if db is not None:
            db.start_session(executor.description)
        reporter = make_progress(progress if pending else None, samples, len(previous), desc=desc)
        ran = 0

        def stop(outcome, why):
            # the samples that had not finished are kept as not run (run again on resume)
            rest = not_run_records([it for it in pending if it[0] not in records or not records[it[0]].ran],
                                   outcome, why)
            if db is not None and rest:
                with contextlib.suppress(Exception):
                    db.add(rest, wall_s=time.perf_counter() - start)
            records.update({r.index: r for r in rest})
            reporter.close()
            return _result(list(records.values()), samples, doc, bounds, db, time.perf_counter() - start, store,
                           executor, ran, complete=False)

        try:
            for _, recs in executor.run(key, payload, _chunks(pending, size)):
                if db is not None:
                    db.add(recs, wall_s=time.perf_counter() - start)
                records.update({r.index: r for r in recs})
                ran += sum(1 for r in recs if r.ran)
                failed += sum(1 for r in recs if not r.success and r.ran)
                reporter.update(sum(1 for r in records.values() if r.ran), failed)
        except KeyboardInterrupt:
            executor.abort()
            result = stop("interrupted", "the campaign was interrupted (Ctrl-C) before this sample finished")
            kept = sum(1 for r in result.records if r.ran)
            where = (f"{kept} of {samples} samples are stored in {store}; run the same command again to "
                     "resume" if db is not None else
                     f"{kept} of {samples} samples had finished; nothing is kept without a store "
                     "(pass a store — --store PATH — to make a campaign resumable)")
            raise CampaignInterrupted(f"interrupted: {where}.", result) from None
        except ExecutorLost as exc:
            result = stop("interrupted", str(exc))
            kept = sum(1 for r in result.records if r.ran)
            where = (f"the {kept} finished samples are stored in {store}; run the same command again (with a "
                     "working cluster) to run the other " f"{samples - kept}" if db is not None else
                     f"{kept} of {samples} samples had finished; nothing is kept without a store (pass one — "
                     "--store PATH — to make a campaign resumable)")
            raise CampaignAborted(f"{exc}; {where}.", result) from None
        reporter.close()
        wall = time.perf_counter() - start
        done = sum(1 for r in records.values() if r.ran)
        return _result(list(records.values()), samples, doc, bounds, db, wall, store, executor, ran,
                       complete=done == samples)
    finally:
        if db is not None:
            db.close()
        if own_executor:
            executor.close()


def _result(records, samples, doc, bounds, db, wall, store, executor, ran, *, complete) -> CampaignResult:
    sessions = []
    total_wall = wall
    if db is not None:
        db.end_session(wall)
        sessions = db.sessions()
        total_wall = float(sum(s["wall_s"] for s in sessions))
    records = tuple(sorted(records, key=lambda r: r.index))
    return CampaignResult(records, samples, doc, bounds, total_wall, float(sum(r.cpu_s for r in records)),
                          complete=complete, store=None if store is None else str(store),
                          executor=executor.description, ran=ran, sessions=sessions)


