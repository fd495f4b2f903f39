"""Worst-case search: the actual plant in the δ box with the largest tracking error.

:func:`worst_case` maximizes max ‖e‖∞ over the box of uniform draws (±spread·|p| per
parameter) with ``scipy.optimize.differential_evolution`` (deferred updating, so each
generation is evaluated in parallel on the campaign's executor and the result does not
depend on the number of workers; no gradient polish: max ‖e‖∞ of a closed loop is not
smooth). The initial population is a Latin hypercube of the box with, in front, the
points given as ``start`` (e.g. a Monte Carlo's worst sample: the search then cannot
end below it, since differential evolution never loses its best member) and the box's
vertices (where mass errors are largest) when there are few enough of them. The
population and generations are sized so that the evaluations stay within ``budget``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from .._validate import positive_int
from ..errors import ParameterError
from .executors import ExecutorLost, Job, make_executor, pack_job, register_prepared
from .._json import describe_value
from .loop import SampleRecord, campaign_bounds
from .sampling import check_seed

__all__ = ["worst_case", "WorstCaseResult", "population_size"]


def population_size(budget: int, k: int) -> tuple[int, int]:
    """Population P and generations G of a search of ``budget`` evaluations in k dimensions.

    Parameters
    ----------
    budget : int
        Evaluations allowed (>= 5).
    k : int
        Dimensions of the box.

    Returns
    -------
    (P, G) : (int, int)
        ``P·(G + 1) <= budget``: P between 5 and 15·k (about budget/6), G >= 0.
    """
    P = int(min(max(5, budget // 6), 15 * max(k, 1), budget))
    return P, max(0, budget // P - 1)


@dataclass(frozen=True)
class WorstCaseResult:
    """The worst actual plant found.

    Attributes
    ----------
    worst : SampleRecord
        Its δ (``worst.dm``), max ‖e‖∞, max ‖ė‖∞ and whether the promised bound held.
    evaluations : int
        Closed-loop runs made.
    failed : int
        Runs whose solve failed (never chosen as the worst: their error is unknown).
    budget : int
    population, generations : int
    seed : int
    start : list
        The given starting points.
    bounds : dict or None
        The promised bounds.
    settings : dict
    wall_s : float
    records : tuple of SampleRecord
        Every evaluation, in order.
    """

    worst: SampleRecord
    evaluations: int
    failed: int
    budget: int
    population: int
    generations: int
    seed: int
    start: list
    bounds: dict | None
    settings: dict
    wall_s: float
    records: tuple = field(repr=False, default=())

    def to_dict(self) -> dict:
        """JSON-ready: ``scenario``, ``compensator``, ``spread``, ``worst`` (``dm``, ``max_abs_e``,
        ``max_abs_edot``, ``held``, ``assumptions_held``, ``guaranteed``, ``max_norm_dq``,
        ``max_norm_Mtilde``), ``evaluations``, ``failed``, ``budget``, ``population``,
        ``generations``, ``seed``, ``start``, ``bound`` (``e``, ``edot``, ``gamma``,
        ``assumption_limits``), ``wall_s``; ``parameters`` (named uncertain parameters, else None) and
        ``box_note`` (the search is over the box; distributions are ignored).

        Returns
        -------
        dict
        """
        s = self.settings
        w = self.worst
        b = self.bounds or {}
        comp = s.get("compensator") or ((s.get("loop") or {}).get("compensator") or {}).get("name") or "none"
        return {
            "scenario": s.get("scenario"), "compensator": comp,
            "spread": (s.get("uncertainty") or {}).get("spread"),
            "parameters": (s.get("uncertainty") or {}).get("parameters"),
            "box_note": s.get("box_note"),
            "worst": {"dm": list(w.dm), "max_abs_e": w.max_abs_e, "max_abs_edot": w.max_abs_edot, "held": w.held,
                      "assumptions_held": w.assumptions_held,
                      # started outside the bound's invariant set (campaign_bounds' start_note): observed only
                      "guaranteed": w.guaranteed and not b.get("start_note"),
                      "max_norm_dq": w.max_norm_dq, "max_norm_Mtilde": w.max_norm_Mtilde, "max_norm_P": w.max_norm_P},
            "evaluations": self.evaluations, "failed": self.failed, "budget": self.budget,
            "population": self.population, "generations": self.generations, "seed": self.seed,
            "start": [list(map(float, x)) for x in self.start],
            "bound": {"e": b.get("e"), "edot": b.get("edot"), "gamma": b.get("gamma"),
                      "assumption_limits": b.get("assumption_limits"), "assumption_texts": b.get("assumption_texts"),
                      **({"start_note": b["start_note"]} if b.get("start_note") else {})} if b else None,
            "wall_s": self.wall_s,
        }


def _initial_population(lo, hi, P, start, rng) -> np.ndarray:
    from scipy.stats import qmc

    k = lo.size
    unit = qmc.LatinHypercube(d=k, seed=rng).random(P)
    pop = lo + unit * (hi - lo)
    front = [np.clip(np.asarray(s, dtype=float).reshape(k), lo, hi) for s in start]
    if 2**k <= max(P // 2, 1):
        corners = np.array(np.meshgrid(*[(a, b) for a, b in zip(lo, hi)], indexing="ij")).reshape(k, -1).T
        front += list(corners)
    for i, row in enumerate(front[:P]):
        pop[i] = row
    return pop


def _reporter(progress):
    """``progress`` checked now; a function of the evaluation count giving the callback (or None)."""
    from .progress import make_progress

    if progress is None or progress is False:
        return lambda total: None
    if callable(progress):
        return lambda total: progress
    make_progress(progress, 1, stream=_NoStream())  # refuses anything but "auto", "bar", "lines"

    def start(total):
        shown = make_progress(progress, total, desc="worst-case")
        return lambda done, total, best: (shown.update(done, 0), shown.close() if done >= total else None)

    return start


class _NoStream:
    """A stream that writes nothing (to check a ``progress`` value without showing a bar)."""

    def write(self, text):
        return len(text)

    def flush(self):
        pass

    def isatty(self):
        return False


def worst_case(loop, uncertainty, *, budget: int = 200, seed: int | None = None, start=(), workers=None,
               scheduler=None, executor=None, settings: dict | None = None, progress=None,
               labels: dict | None = None) -> WorstCaseResult:
    """Search the δ box for the actual plant with the largest max ‖e‖∞ (module docstring).

    Parameters
    ----------
    loop : TrackingProblem or callable
        As :func:`~robustrack.campaigns.monte_carlo` (a loop or a picklable factory).
    uncertainty : ParameterUncertainty
        Uniform draws without δQ family: its spread defines the box.
    budget : int, default 200
        Closed-loop evaluations allowed (>= 5).
    seed : int, optional
        Seed of the search (default: the uncertainty's).
    start : sequence of array_like (k,)
        Points put in the initial population (e.g. a Monte Carlo's worst δ).
    workers, scheduler, executor
        Where evaluations run, as :func:`~robustrack.campaigns.monte_carlo`.
    settings : dict, optional
        Extra description (e.g. ``scenario``) for the result.
    progress : callable, "auto", "bar", "lines", None or False
        ``progress(evaluations, budget, best_max_abs_e)`` after each generation, or a bar or lines on
        stderr as :func:`~robustrack.campaigns.monte_carlo` takes them (default None: silent).
    labels : dict, optional
        How messages name the arguments (e.g. ``{"scheduler": "--scheduler"}``).

    Returns
    -------
    WorstCaseResult

    Raises
    ------
    ParameterError
        Bad budget or seed, a non-uniform uncertainty or one with a δQ family, no
        successful evaluation at all.
    """
    from scipy.optimize import differential_evolution

    positive_int(budget, "budget", minimum=5, what="closed-loop evaluations")
    budget = int(budget)
    reporter = _reporter(progress)  # checked before anything runs
    seed = uncertainty.seed if seed is None else check_seed(seed)
    if uncertainty.disturbance is not None and not getattr(uncertainty.disturbance, "deterministic", False):
        raise ParameterError("worst_case searches the parameter box; an uncertainty with a δQ `disturbance` "
                             "family that draws per sample is not supported (give one δQ for every plant, e.g. "
                             "ActualForces with spread 0).")
    own = executor is None
    if own:
        executor = make_executor(workers, scheduler, names=labels)
    t0 = time.perf_counter()
    try:
        job = Job(loop, uncertainty)
        built = job.build()
        key, payload = pack_job(job)
        run = built.nominal_run()
        built.check(run)
        register_prepared(key, built, run, uncertainty)
        bounds = campaign_bounds(built)
        lo, hi = uncertainty.box(built.nominal)
        k = lo.size
        P, G = population_size(budget, k)
        progress = reporter(P * (G + 1))
        rng = np.random.default_rng(seed)
        start = [np.asarray(s, dtype=float).reshape(k) for s in start]
        init = _initial_population(lo, hi, P, start, rng)
        degenerate = hi <= lo
        records: list[SampleRecord] = []

        def evaluate(rows):
            items = [(len(records) + i, tuple(float(x) for x in r)) for i, r in enumerate(rows)]
            size = max(1, len(items) // max(1, 2 * getattr(executor, "workers", 1)))
            chunks = [items[i:i + size] for i in range(0, len(items), size)]
            got = {}
            for c, recs in executor.run(key, payload, chunks):
                got[c] = recs
            recs = [r for c in range(len(chunks)) for r in got[c]]
            lost = [r for r in recs if not r.ran]
            if lost:  # a plant that did not run is no evidence either way: the search cannot score it
                raise ExecutorLost(f"worst_case: {len(lost)} of {len(recs)} evaluations of a generation did not "
                                   f"run ({lost[0].outcome}: {lost[0].error}); nothing to report. Check the "
                                   "cluster's workers and run the search again.")
            records.extend(recs)
            if progress is not None:
                best = max((r.max_abs_e for r in records if r.success and r.max_abs_e is not None), default=None)
                progress(len(records), P * (G + 1), best)
            return [-(r.max_abs_e if r.success and r.max_abs_e is not None else 0.0) for r in recs]

        def mapper(func, iterable):
            rows = np.array([np.asarray(x, dtype=float) for x in iterable])
            rows[:, degenerate] = lo[degenerate]
            return evaluate(rows)

        search_lo = np.where(degenerate, np.nextafter(lo, -np.inf), lo)
        search_hi = np.where(degenerate, np.nextafter(hi, np.inf), hi)
        import inspect

        rng_arg = {"rng": rng} if "rng" in inspect.signature(differential_evolution).parameters else {"seed": rng}
        differential_evolution(lambda x: 0.0, list(zip(search_lo, search_hi)), init=init, maxiter=G, polish=False,
                               tol=0.0, atol=0.0, updating="deferred", workers=mapper, mutation=(0.5, 1.0),
                               recombination=0.7, **rng_arg)
        ok = [r for r in records if r.success and r.max_abs_e is not None]
        if not ok:
            first = records[0].error if records else "no evaluation"
            raise ParameterError(f"worst_case: every closed-loop evaluation failed (first: {first}).")
        worst = ok[int(np.argmax([r.max_abs_e for r in ok]))]
        doc = {"budget": budget, "uncertainty": uncertainty.describe(), "loop": built.describe(),
               "box_note": uncertainty.box_note(), **describe_value(settings or {})}
        return WorstCaseResult(worst, len(records), sum(1 for r in records if not r.success), budget, P, G, seed,
                               [s.tolist() for s in start], bounds, doc, time.perf_counter() - t0, tuple(records))
    finally:
        if own:
            executor.close()
