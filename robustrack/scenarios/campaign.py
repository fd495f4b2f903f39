"""Campaigns of a scenario: the adapter between a tracking scenario and :mod:`robustrack.campaigns`.

:class:`ScenarioLoop` is a picklable factory of a scenario's
:class:`~robustrack.tracking.TrackingProblem` (each worker process builds its own: some
constraints hold closures that do not pickle). The uncertain parameters are the
kind's masses (``get_kind(kind).uncertain``: ``m`` for the pendulum, ``m1, m2`` for the
Duffing oscillator), drawn uniform ±spread as ``robustrack gamma`` draws them; the
scenario's own ``uncertainty.dm`` is not used (each sample has its own δm), so
``robustrack run NAME --set uncertainty.dm=[...]`` with a sample's δm reruns that sample.

:func:`run_montecarlo`, :func:`run_worst_case` and :func:`run_tune` are the
``robustrack montecarlo``, ``worst-case`` and ``tune`` commands without the printing;
:func:`format_montecarlo`, :func:`format_worst_case` and :func:`format_tune` give the text.
"""

from __future__ import annotations

from dataclasses import dataclass

from .._format import format_value, typed_float, with_unit
from .._validate import positive_int
from ..errors import ParameterError, ScenarioError
from .registry import get_kind
from .scenario import Scenario, load_scenario
from .units import MASS_UNIT

__all__ = ["ScenarioLoop", "resolve_campaign_scenario", "campaign_settings", "run_montecarlo", "run_worst_case",
           "run_tune", "format_montecarlo", "format_worst_case", "format_tune", "TUNED_KEYS", "CLI_LABELS"]

#: Tuned compensator parameter → its ``[compensator]`` key.
TUNED_KEYS = {"K": "K", "eps": "eps", "gamma_prime": "gamma", "gamma": "gamma", "Kd": "Kd", "k": "k"}

#: How the command line names the arguments (for messages).
CLI_LABELS = {"samples": "--samples", "store": "--store", "spread": "--spread", "seed": "--seed",
              "workers": "--workers", "scheduler": "--scheduler", "budget": "--budget"}


@dataclass(frozen=True)
class ScenarioLoop:
    """A picklable factory of a tracking scenario's closed loop.

    Parameters
    ----------
    scenario : Scenario
        A tracking scenario (overrides applied).
    """

    scenario: Scenario

    def __call__(self):
        """Build the closed loop (the scenario's actual plant is not used).

        Returns
        -------
        TrackingProblem
        """
        from . import kinds, model_kinds, tracking_kinds  # noqa: F401  (register the kinds in a fresh worker)

        return self.scenario.build()


def resolve_campaign_scenario(scenario, *, compensator=None, f=None, overrides=()) -> Scenario:
    """The tracking scenario of a campaign: loaded, overrides and ``compensator``/``f`` applied.

    Parameters
    ----------
    scenario : Scenario, str or Path
        A scenario, catalog name or TOML path.
    compensator, f : str, optional
        Override ``compensator.type`` / ``compensator.f``.
    overrides : sequence of str
        ``SECTION.KEY=VALUE`` items.

    Returns
    -------
    Scenario

    Raises
    ------
    ScenarioError
        Unknown scenario, bad override, or not a tracking scenario.
    """
    overrides = list(overrides or [])
    sc = scenario.with_overrides(overrides) if isinstance(scenario, Scenario) and overrides else scenario
    if not isinstance(sc, Scenario):
        sc = load_scenario(str(scenario), overrides or None)
    if not get_kind(sc.kind).tracking:
        raise ScenarioError(f"scenario {sc.name!r} (kind {sc.kind!r}) has no compensator; campaigns need a tracking "
                            "scenario, e.g. triple-pendulum or duffing-tracking.")
    extra = ([f"compensator.type={compensator!r}"] if compensator else []) + ([f"compensator.f={f!r}"] if f else [])
    return sc.with_overrides(extra) if extra else sc


def campaign_settings(sc: Scenario) -> dict:
    """What identifies a scenario's campaign besides the loop and the draws: name, compensator, f, configuration.

    Parameters
    ----------
    sc : Scenario

    Returns
    -------
    dict
    """
    c = sc.config["compensator"]
    return {"scenario": sc.name, "compensator": c["type"], "f": c.get("f"), "config": sc.config}


def _uncertainty(sc: Scenario, spread, seed):
    from ..campaigns import ParameterUncertainty
    from ..campaigns.sampling import check_seed, check_spread

    spread = check_spread(spread, CLI_LABELS["spread"])
    seed = check_seed(seed, CLI_LABELS["seed"])
    return ParameterUncertainty(parameter=get_kind(sc.kind).uncertain, spread=spread, seed=seed)


def run_montecarlo(scenario, samples: int, spread: float, seed: int = 0, *, compensator=None, f=None, overrides=(),
                   store=None, workers=None, scheduler=None, chunk=None, progress="auto", labels=None):
    """A closed-loop Monte Carlo of a tracking scenario (``robustrack montecarlo``).

    Parameters
    ----------
    scenario : Scenario, str or Path
    samples : int
    spread : float
        Uniform ±spread (relative) on each mass, in [0, 1).
    seed : int
    compensator, f : str, optional
        Override ``compensator.type`` / ``compensator.f``.
    overrides : sequence of str
        ``--set`` items.
    store : str or Path, optional
        The resumable SQLite store.
    workers : int, optional
    scheduler : str, optional
        A Dask scheduler address.
    chunk : int, optional
    progress : "auto", "bar", "lines", None or callable
    labels : dict, optional
        How messages name the arguments (default: the command line's flags).

    Returns
    -------
    CampaignResult
        Its ``summary()`` is the command's JSON document.
    """
    from ..campaigns import monte_carlo
    from ..campaigns.executors import check_scheduler, check_workers
    from ..campaigns.montecarlo import check_samples
    from ..campaigns.store import check_store_path

    labels = {**CLI_LABELS, **(labels or {})}
    samples = check_samples(samples, labels["samples"])
    if workers is not None:
        check_workers(workers, labels["workers"])
    if scheduler is not None:
        check_scheduler(scheduler, labels["scheduler"])
    if store is not None:
        check_store_path(store, labels["store"])
    sc = resolve_campaign_scenario(scenario, compensator=compensator, f=f, overrides=overrides)
    unc = _uncertainty(sc, spread, seed)
    return monte_carlo(ScenarioLoop(sc), unc, samples, workers=workers, scheduler=scheduler, store=store,
                       settings=campaign_settings(sc), chunk=chunk, progress=progress, labels=labels,
                       info={"overrides": list(overrides or []), "compensator_flag": compensator, "f_flag": f})


@dataclass(frozen=True)
class WorstCaseStudy:
    """The worst-case search of a scenario (``robustrack worst-case``).

    Attributes
    ----------
    result : WorstCaseResult
        The search (:func:`robustrack.campaigns.worst_case`): the worst plant and every evaluation.
    doc : dict
        JSON-ready: ``result.to_dict()`` with ``montecarlo_worst`` (the seeding store's worst
        sample, or None) and ``reproduce`` (the ``robustrack run`` line of the worst plant).
    """

    result: object
    doc: dict

    @property
    def worst(self):
        """The worst evaluated plant (a SampleRecord)."""
        return self.result.worst

    def to_dict(self) -> dict:
        """The study as a JSON-ready dict (a copy of ``doc``)."""
        return dict(self.doc)


@dataclass(frozen=True)
class TuneStudy:
    """A tuning and its verification (``robustrack tune``).

    Attributes
    ----------
    tuned : TuneResult
        The compensator parameters whose promised bound meets the target (:func:`robustrack.campaigns.tune_compensator`).
    verified : CampaignResult
        The closed-loop Monte Carlo of the tuned compensator.
    doc : dict
        JSON-ready: target, Γ and its source, the tuned and former parameters, bounds and
        efforts, the verification's summary and ``measured_within_target``.
    """

    tuned: object
    verified: object
    doc: dict

    def to_dict(self) -> dict:
        """The study as a JSON-ready dict (a copy of ``doc``)."""
        return dict(self.doc)

    def plot(self, *, unit: str | None = None):
        """The verification's histogram of max ‖e‖∞ (:meth:`CampaignResult.plot`)."""
        return self.verified.plot(unit=unit)


def run_worst_case(scenario, spread: float, *, budget=None, seed: int = 0, compensator=None, f=None, overrides=(),
                   store=None, workers=None, scheduler=None, progress=None):
    """Search the δm box of a tracking scenario for its worst plant (``robustrack worst-case``).

    Parameters
    ----------
    scenario : Scenario, str or Path
    spread : float
        The box: ±spread (relative) on each mass.
    budget : int, optional
        Closed-loop evaluations (default: the store's sample count, else 200).
    seed : int
    compensator, f : str, optional
    overrides : sequence of str
    store : str or Path, optional
        A Monte Carlo store of the same scenario, compensator, spread and configuration:
        its worst sample seeds the search.
    workers : int, optional
    scheduler : str, optional
    progress : callable, optional
        ``progress(evaluations, budget, best)``.

    Returns
    -------
    WorstCaseStudy
        The result and its JSON document (with ``montecarlo_worst`` when a store was given).

    Raises
    ------
    ParameterError
        A store of another campaign, or bad values.
    """
    from ..campaigns import load_campaign, worst_case
    from ..campaigns.executors import check_scheduler, check_workers

    if workers is not None:
        check_workers(workers, CLI_LABELS["workers"])
    if scheduler is not None:
        check_scheduler(scheduler, CLI_LABELS["scheduler"])
    sc = resolve_campaign_scenario(scenario, compensator=compensator, f=f, overrides=overrides)
    unc = _uncertainty(sc, spread, seed)
    start, mc_worst = [], None
    if store is not None:
        mc = load_campaign(store, name=CLI_LABELS["store"])
        mine = campaign_settings(sc)
        theirs = {k: mc.settings.get(k) for k in mine}
        if theirs != mine or (mc.settings.get("uncertainty") or {}).get("spread") != unc.spread:
            raise ParameterError(f"`--store` {str(store)!r} holds a Monte Carlo of other settings (scenario, "
                                 "compensator, spread or configuration); give the store of this campaign.")
        w = mc.worst
        if w is not None:
            start = [w.dm]
            mc_worst = {"sample": w.index, "dm": list(w.dm), "max_abs_e": w.max_abs_e, "samples": len(mc.records)}
        if budget is None:
            budget = len(mc.records)
    budget = 200 if budget is None else budget
    positive_int(budget, "--budget", minimum=5, what="closed-loop evaluations")
    result = worst_case(ScenarioLoop(sc), unc, budget=budget, seed=seed, start=start, workers=workers,
                        scheduler=scheduler, settings=campaign_settings(sc), progress=progress, labels=CLI_LABELS)
    doc = result.to_dict()
    doc["montecarlo_worst"] = mc_worst
    doc["reproduce"] = _reproduce(sc, result.worst.dm, overrides, compensator, f)
    return WorstCaseStudy(result, doc)


def _reproduce(sc, dm, overrides, compensator, f) -> str:
    parts = [f"robustrack run {sc.name}"]
    if compensator:
        parts.append(f"--compensator {compensator}")
    if f:
        parts.append(f"--f {f}")
    parts += [f"--set '{o}'" for o in overrides or []]
    parts.append("--set 'uncertainty.dm=[" + ", ".join(typed_float(x) for x in dm) + "]'")
    return " ".join(parts)


#: Verifications a tuning makes at most (raising Γ to what the previous one measured) before giving up.
TUNE_ROUNDS = 3


def run_tune(scenario, spread: float, *, target_e=None, target_edot=None, compensator=None, f=None, overrides=(),
             gamma=None, gamma_samples: int = 1014, samples: int = 100, seed: int = 0, store=None, workers=None,
             scheduler=None, progress="auto"):
    """Tune a scenario's compensator to a target promised bound, then verify with a Monte Carlo (``robustrack tune``).

    Parameters
    ----------
    scenario : Scenario, str or Path
    spread : float
        ±spread on each mass: the uncertainty set of Γ and of the verification.
    target_e, target_edot : float, optional
        Targets on the promised ‖e‖∞ / ‖ė‖∞ bounds.
    compensator, f : str, optional
    overrides : sequence of str
    gamma : float, optional
        Γ (default: the Γ Monte Carlo's Γ′ = 1.2 × p99 of max_t ‖δq‖∞, W 7.3).
    gamma_samples : int
        Samples of that Γ Monte Carlo.
    samples : int
        Samples of the verifying closed-loop Monte Carlo.
    seed : int
    store : str or Path, optional
        Store of the verifying Monte Carlo.
    workers : int, optional
    scheduler : str, optional
    progress : "auto", "bar", "lines", None or callable

    Returns
    -------
    TuneStudy
        The tuning, the verification and the JSON document (``proposed``: the bound's assumptions
        held on every verified plant — else Γ is raised to 1.2 × the measured max ‖δq‖∞ and the
        tuning verified again, up to :data:`TUNE_ROUNDS` times, each round in ``rounds``).
    """
    import math

    from ..campaigns import tune_compensator
    from ..campaigns.montecarlo import check_samples
    from .gamma import run_gamma

    samples = check_samples(samples, CLI_LABELS["samples"])
    sc = resolve_campaign_scenario(scenario, compensator=compensator, f=f, overrides=overrides)
    unc = _uncertainty(sc, spread, seed)
    comp = sc.build().compensator
    if comp is None:
        raise ParameterError("`--compensator` none has nothing to tune; choose gss, gd or gdbar.")
    if gamma is None:
        gdoc = run_gamma(sc, int(gamma_samples), unc.spread, seed=unc.seed).to_dict()
        gamma, source = float(gdoc["gamma_prime"]), (f"Γ Monte Carlo: {gamma_samples} samples, "
                                                     f"{format_value(gdoc['margin'])} × "
                                                     f"p{format_value(100 * gdoc['quantile'])} of max_t ‖δq‖∞")
    else:
        gamma = float(gamma)
        if not math.isfinite(gamma) or gamma < 0:
            raise ParameterError(f"`--gamma` must be a finite number >= 0; got {gamma!r}.")
        source = "given (--gamma)"
    from pathlib import Path

    rounds = []
    while True:
        # only gains whose assumptions held on every verified plant are proposed: when the verification
        # measures max ‖δq‖∞ above Γ, Γ is raised to 1.2 × that (the Γ Monte Carlo's margin) and the
        # tuning verified again (at most TUNE_ROUNDS times)
        tuned = tune_compensator(comp, gamma=gamma, target_e=target_e, target_edot=target_edot)
        sets = [f"compensator.{TUNED_KEYS[k]}={float(v)!r}" for k, v in tuned.params.items()]
        if "gamma" not in {TUNED_KEYS[k] for k in tuned.params}:
            sets.append(f"compensator.gamma={gamma!r}")  # GD-bar: the Γ its promise is judged at
        where = store if store is None or not rounds else \
            Path(store).with_name(f"{Path(store).stem}-round{len(rounds) + 1}{Path(store).suffix}")
        verified = run_montecarlo(sc.with_overrides(sets), samples, unc.spread, unc.seed, store=where,
                                  workers=workers, scheduler=scheduler, progress=progress)
        summary = verified.summary()
        a = summary.get("assumptions") or {}
        dq = (a.get("by_assumption") or {}).get("max_norm_dq") or {}
        rounds.append({"gamma": gamma, "assumptions_failed": a.get("failed", 0), "max_norm_dq": dq.get("max"),
                       "store": None if where is None else str(where)})
        if not a.get("failed") or not dq.get("failed") or len(rounds) >= TUNE_ROUNDS:
            break
        gamma, source = 1.2 * float(dq["max"]), (f"raised to 1.2 × the max ‖δq‖∞ the verification measured "
                                                 f"({format_value(dq['max'])}, above Γ = {format_value(gamma)})")
    a = summary.get("assumptions") or {}
    proposed = not a.get("failed")
    why_not = None if proposed else (
        f"not proposed: the bound's assumptions failed on {a['failed']} of {summary['judged']} verified plants ("
        + "; ".join(f"{d['assumption']} by {format_value(d['excess'])}" for d in a["by_assumption"].values()
                    if d["failed"]) + ") — the promise is not a certificate for this uncertainty")
    te, ted = tuned.target_e, tuned.target_edot
    met = bool(summary["failed"] == 0 and summary["completed"] == samples
               and (te is None or (summary["max_abs_e"]["max"] or math.inf) <= te)
               and (ted is None or (summary["max_abs_edot"]["max"] or math.inf) <= ted))
    doc = {"scenario": sc.name, "compensator": sc.config["compensator"]["type"], "spread": unc.spread,
           "seed": unc.seed, "target": {"e": te, "edot": ted}, "gamma": {"value": gamma, "source": source},
           "tuned": {"params": tuned.params, "set": sets, "bounds": {"e": tuned.bounds.e, "edot": tuned.bounds.edot},
                     "effort": tuned.effort},
           "before": {"params": {k: sc.config["compensator"][TUNED_KEYS[k]] for k in tuned.params},
                      "bounds": {"e": tuned.before_bounds.e, "edot": tuned.before_bounds.edot},
                      "effort": tuned.before_effort},
           "note": tuned.note, "verification": summary, "measured_within_target": met,
           "proposed": proposed, "not_proposed_because": why_not, "rounds": rounds}
    return TuneStudy(tuned, verified, doc)


# ------------------------------------------------------------------------------ text
def _units(units, *keys):
    """The units of ``keys`` ("q", "qd", ...) in a :func:`~robustrack.scenarios.units.tracking_units` dict (None: none)."""
    return [(units or {}).get(k) for k in keys]


def _spread_text(spread) -> str:
    """A relative spread (one number, or one per parameter) in percent: ``±10 %``, ``±(10, 20) %``."""
    if isinstance(spread, (int, float)) and not isinstance(spread, bool):
        return f"±{format_value(100 * spread)} %"
    if isinstance(spread, (list, tuple)) and all(isinstance(s, (int, float)) for s in spread):
        return f"±({', '.join(format_value(100 * s) for s in spread)}) %"
    return f"spread {spread}"


def format_montecarlo(doc: dict, result=None, units=None) -> str:
    """A Monte Carlo summary as text, every number with its unit.

    Parameters
    ----------
    doc : dict
        ``CampaignResult.summary()``.
    result : CampaignResult, optional
        For where it ran and what this call ran.
    units : dict, optional
        :func:`robustrack.scenarios.units.tracking_units` of the scenario; None: numbers
        without units.

    Returns
    -------
    str
    """
    uq, uqd, uQ, uqdd = _units(units, "q", "qd", "Q", "qdd")
    params = ", ".join(doc["parameter"] or [])
    name = doc["scenario"] or doc.get("plant") or "a script's loop"  # a campaign built in a script: its plant
    from ..campaigns.montecarlo import certificate_lines

    lines = [f"Monte Carlo: {name}, {doc['compensator']}, {doc['samples']} samples, {doc.get('kind') or 'uniform'} "
             f"{_spread_text(doc['spread'])} on {params}, seed {doc['seed']}",
             f"  completed {doc['completed']} / {doc['samples']}, failed {doc['failed']}"
             + (f" ({', '.join(f'{k} {v}' for k, v in doc['failure_kinds'].items())})" if doc["failed"] else "")]
    b = doc.get("bound") or {}
    promised = (f"   promised ‖e‖∞ ≤ {format_value(b.get('e'), uq)}, ‖ė‖∞ ≤ {format_value(b.get('edot'), uqd)} at "
                f"Γ = {format_value(b.get('gamma'), uqdd)}" if b else "")
    cert = certificate_lines(doc, dq_unit=uqdd, gamma_command=gamma_command(doc))
    lines += ["  " + cert[0] + promised] + ["  " + line for line in cert[1:]]
    lines.append(f"  {'':<20}{'median':>11}{'p95':>11}{'p99':>11}{'max':>11}")
    for key, label, unit in (("max_abs_e", "max ‖e‖∞", uq), ("max_abs_edot", "max ‖ė‖∞", uqd),
                             ("max_abs_Qu", "max ‖Qᵘ‖∞", uQ)):
        q = doc[key]
        lines.append(f"  {with_unit(label, unit):<20}" + "".join(f"{format_value(q[k], digits=3):>11}"
                                                              for k in ("median", "p95", "p99", "max")))
    w = doc["worst"]
    if w:
        lines.append(f"  worst: sample {w['sample']}, δm = [{', '.join(typed_float(x) for x in w['dm'])}] {MASS_UNIT}, "
                     f"max ‖e‖∞ = {format_value(w['max_abs_e'], uq, digits=6)}, held: {format_value(w['held'])}, "
                     f"{_assumptions_text({**w, 'limits': (doc.get('assumptions') or {}).get('limits')}, uqdd)}")
    for fail in doc["failures"][:5]:
        lines.append(f"  failed: sample {fail['sample']}: {fail['error']}")
    if len(doc["failures"]) > 5:
        lines.append(f"  … and {len(doc['failures']) - 5} more failures (all in the JSON)")
    where = ""
    if result is not None and result.executor:
        where = f", {result.ran} run now on {result.executor}"
    lines.append(f"  wall {format_value(doc['wall_s'], 's', digits=3)}, cpu {format_value(doc['cpu_s'], 's', digits=3)}"
                 f"{where}")
    return "\n".join(lines)


def gamma_command(doc: dict) -> str | None:
    """The ``robustrack gamma`` command that estimates Γ for a campaign's uncertainty (None: not a scenario's).

    Parameters
    ----------
    doc : dict
        A campaign summary or worst-case document (``scenario``, ``spread``, ``seed``).

    Returns
    -------
    str or None
    """
    if not doc.get("scenario") or not isinstance(doc.get("spread"), (int, float)):
        return None
    seed = f" --seed {doc['seed']}" if doc.get("seed") is not None else ""
    return f"robustrack gamma {doc['scenario']} --spread {doc['spread']:g}{seed}"


def _assumptions_text(w: dict, uqdd) -> str:
    """A sample's assumptions verdict with its margins: ``assumptions held: no (max ‖δq‖∞ = 139 > Γ = 100 …)``."""
    if w.get("assumptions_held") is None:
        return "assumptions: not measured"
    limits = w.get("limits") or {}
    parts = []
    for key, label, unit, limit_name in (("max_norm_dq", "max ‖δq‖∞", uqdd, "Γ"),
                                         ("max_norm_Mtilde", "max ‖M̃ₐ‖∞", None, "1 − α0/σ")):
        if w.get(key) is None:
            continue
        limit = limits.get(key)
        rel = "" if limit is None else (f" ≤ {limit_name} = {format_value(limit, unit)}" if w[key] <= limit else
                                        f" > {limit_name} = {format_value(limit, unit)}")
        parts.append(f"{label} = {format_value(w[key], unit)}{rel}")
    return f"assumptions held: {format_value(w['assumptions_held'])} ({', '.join(parts)})"


def format_worst_case(doc: dict, units=None) -> str:
    """A worst-case search as text, every number with its unit.

    Parameters
    ----------
    doc : dict
        From :func:`run_worst_case`.
    units : dict, optional
        :func:`robustrack.scenarios.units.tracking_units` of the scenario; None: numbers
        without units.

    Returns
    -------
    str
    """
    uq, uqd, uqdd = _units(units, "q", "qd", "qdd")
    w = doc["worst"]
    b = doc.get("bound") or {}
    limits = b.get("assumption_limits") or {}
    lines = [f"Worst case: {doc['scenario']}, {doc['compensator']}, δm box ±{format_value(100 * doc['spread'])} %, "
             f"{doc['evaluations']} evaluations (population {doc['population']}, {doc['generations']} generations, "
             f"seed {doc['seed']}), {doc['failed']} failed",
             f"  worst δm = [{', '.join(typed_float(x) for x in w['dm'])}] {MASS_UNIT}",
             f"  max ‖e‖∞ = {format_value(w['max_abs_e'], uq, digits=6)}, max ‖ė‖∞ = "
             f"{format_value(w['max_abs_edot'], uqd, digits=6)}; promised ‖e‖∞ ≤ {format_value(b.get('e'), uq)}: "
             f"held {format_value(w['held'])}, guaranteed {format_value(w.get('guaranteed'))}",
             f"  {_assumptions_text({**w, 'limits': limits}, uqdd)}"]
    if w.get("max_norm_dq") is not None and limits.get("max_norm_dq") is not None \
            and not w["max_norm_dq"] <= limits["max_norm_dq"]:
        cmd = gamma_command({**doc, "seed": None})  # doc's seed is the search's, not the draws'
        lines.append(f"  Γ is exceeded at this plant: the bound held without its guarantee; "
                     f"{'`' + cmd + '` estimates' if cmd else 'a Γ Monte Carlo (robustrack gamma) estimates'} Γ′ "
                     f"for this uncertainty — at least {format_value(w['max_norm_dq'], uqdd)} covers this plant "
                     "(set it as compensator.gamma)")
    mc = doc.get("montecarlo_worst")
    if mc:
        lines.append(f"  Monte Carlo worst ({mc['samples']} samples): sample {mc['sample']}, max ‖e‖∞ = "
                     f"{format_value(mc['max_abs_e'], uq, digits=6)} (the search started from it)")
    lines.append(f"  reproduce: {doc['reproduce']}")
    lines.append(f"  wall {format_value(doc['wall_s'], 's', digits=3)}")
    return "\n".join(lines)


def format_tune(doc: dict, units=None) -> str:
    """A tuning and its verification as text, every number with its unit.

    Parameters
    ----------
    doc : dict
        From :func:`run_tune`.
    units : dict, optional
        :func:`robustrack.scenarios.units.tracking_units` of the scenario; None: numbers
        without units.

    Returns
    -------
    str
    """
    from ..controllers import COMPENSATORS
    from ..plants.units import fill_units

    uq, uqd, uqdd = _units(units, "q", "qd", "qdd")
    t, b = doc["tuned"], doc["before"]
    tgt = doc["target"]
    info = getattr(COMPENSATORS.get(doc["compensator"]), "parameter_info", {})

    def param(k, v):
        template = info.get(k, ("", "", ""))[1]
        unit = fill_units(template, *_units(units, "q", "qd", "qdd", "Q")) if units and template else None
        return f"{k}={format_value(v, unit)}"

    head = f"  {'':<10}{'parameters':<58}{with_unit('promised e', uq):>16}{with_unit('promised ė', uqd):>18}" \
           f"{'gain (1/s)':>11}"
    row = lambda label, d: (f"  {label:<10}{', '.join(param(k, v) for k, v in d['params'].items()):<58}"  # noqa: E731
                            f"{format_value(d['bounds']['e'], digits=3):>16}"
                            f"{format_value(d['bounds']['edot'], digits=3):>18}{format_value(d['effort'], digits=3):>11}")
    lines = [f"Tuning {doc['compensator']} on {doc['scenario']}: target promised ‖e‖∞ ≤ "
             f"{format_value(tgt['e'], uq, digits=3)}, ‖ė‖∞ ≤ {format_value(tgt['edot'], uqd, digits=3)}; "
             f"Γ = {format_value(doc['gamma']['value'], uqdd)} ({doc['gamma']['source']})",
             "  " + doc["note"], head, row("before", b), row("tuned", t),
             ("  use it with: " + " ".join(f"--set {s}" for s in t["set"]) if doc.get("proposed", True) else
              "  " + doc["not_proposed_because"]),
             "  verification:"]
    lines += ["  " + line for line in format_montecarlo(doc["verification"], units=units).splitlines()]
    lines.append(f"  measured max errors within the target on every sample: {format_value(doc['measured_within_target'])}")
    return "\n".join(lines)
