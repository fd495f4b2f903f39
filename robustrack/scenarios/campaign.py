"""Campaigns of a scenario: the adapter between a tracking scenario and :mod:`robustrack.campaigns`.

:class:`ScenarioLoop` is a picklable factory of a scenario's
:class:`~robustrack.tracking.TrackingProblem` (each worker process builds its own: some
constraints hold closures that do not pickle). The uncertain parameters are the
kind's masses (``Scenario.spec.uncertain``: ``m`` for the pendulum, ``m1, m2`` for the
Duffing oscillator), drawn uniform ±spread as ``robustrack gamma`` draws them; the
scenario's own ``uncertainty.dm`` is not used (each sample has its own δm), so
``robustrack run NAME --set uncertainty.dm=[...]`` with a sample's δm reruns that sample.

:func:`run_montecarlo`, :func:`run_worst_case` and :func:`run_tune` are the
``robustrack montecarlo``, ``worst-case`` and ``tune`` commands without the printing;
:mod:`robustrack.reports.text` gives the text.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .._format import format_value, typed_float
from .._validate import positive_int
from ..errors import ParameterError, ScenarioError
from .compensator_table import compensator_keys
from .parameter_shift import DEFAULT_SPREAD, has_named_parameters, scenario_uncertain_set
from .scenario import Scenario, resolve_scenario

__all__ = ["ScenarioLoop", "resolve_campaign_scenario", "campaign_settings", "run_montecarlo", "run_worst_case",
           "run_tune", "design_for_scenario_sensor", "scenario_uncertain_set", "campaign_uncertainty", "DEFAULT_SPREAD", "ARGUMENT_NAMES", "certificate_summary", "covering_certificate"]

#: How the command line names the arguments (for messages).
#: How the studies name their arguments in messages: the Python names; a caller that takes them under
#: other names (the command line: ``--samples``, ``--gamma-samples`` …) passes its own as ``labels``.
ARGUMENT_NAMES = {k: k for k in ("samples", "store", "spread", "seed", "workers", "scheduler", "budget", "gamma",
                                 "gamma_samples", "certificate", "corners")}


def _names(labels) -> dict:
    """:data:`ARGUMENT_NAMES` with the caller's ``labels`` over them."""
    return {**ARGUMENT_NAMES, **(labels or {})}


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
            A :class:`~robustrack.loop.mujoco.MujocoProblem` with ``[actual] engine = "mujoco"``: each sampled
            actual plant then runs against MuJoCo.
        """
        from . import kinds, model_kinds, tracking_kinds  # noqa: F401  (register the kinds in a fresh worker

        problem = self.scenario.build()
        actual = self.scenario.config.get("actual", {})
        if actual.get("engine", "robustrack") == "mujoco":
            from ..loop.mujoco import MujocoProblem, mujoco_available

            if mujoco_available():  # else robustrack's own actual plant, as resolve_campaign_scenario said
                return MujocoProblem.of(problem, substeps=actual["substeps"], integrator=actual["integrator"])
        return problem


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
    sc = resolve_scenario(scenario, overrides, compensator=compensator, f=f)  # validated once
    if not sc.spec.tracking:
        raise ScenarioError(f"scenario {sc.name!r} (kind {sc.kind!r}) has no compensator; campaigns need a tracking "
                            "scenario, e.g. triple-pendulum or duffing-tracking.")
    if sc.config.get("actual", {}).get("engine", "robustrack") == "mujoco":
        from ..loop.mujoco import mujoco_available

        if not mujoco_available():
            import warnings

            from ..errors import RobustrackNotice

            warnings.warn(f"{sc.name}: actual.engine = \"mujoco\" and MuJoCo is not installed (pip install "
                          "'robustrack[mujoco]'): the campaign's samples run robustrack's own actual plant.",
                          RobustrackNotice, stacklevel=3)
    return sc


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


def _uncertainty(sc: Scenario, spread, seed, labels, study: str | None = None, *, fixed_forces: bool = False):
    from ..campaigns import ParameterUncertainty
    from ..campaigns.sampling import check_seed, check_spread

    from .actual_forces import scenario_forces

    seed = check_seed(seed, labels["seed"])
    nominal = sc.build().nominal if study is None and has_named_parameters(sc) else None  # built once, for both
    named = scenario_uncertain_set(sc, study, nominal)
    # friction and disturbance of [actual]: each sample's δQ (its coefficients named parameters, where tables name them)
    forces = scenario_forces(sc.config, None if named is None else nominal.coordinates)
    if forces is not None and fixed_forces:
        forces = dataclasses.replace(forces, spread=0.0)  # one δQ for every plant: at the given coefficients
    if named is not None:
        if spread is not None:
            raise ParameterError(f"`{labels['spread']}` does not apply: scenario {sc.name!r} names its uncertain "
                                 "parameters ([uncertainty.parameters.NAME]), each with its own range and "
                                 "distribution; leave it out, or change the tables.")
        return ParameterUncertainty(parameters=named, seed=seed, disturbance=forces)
    spread = check_spread(DEFAULT_SPREAD if spread is None else spread, labels["spread"])
    return ParameterUncertainty(parameter=sc.spec.uncertain_parameters(sc.config), spread=spread, seed=seed,
                                disturbance=forces)


def campaign_uncertainty(sc: Scenario, spread, seed: int):
    """The :class:`~robustrack.campaigns.ParameterUncertainty` a campaign of ``sc`` draws (``montecarlo``), e.g. to
    rebuild one of its samples' plants.

    Parameters
    ----------
    sc : Scenario
    spread : float or None
        The older forms' spread (None with named parameters, whose own ranges are drawn).
    seed : int

    Returns
    -------
    ParameterUncertainty
    """
    if has_named_parameters(sc):
        spread = None
    return _uncertainty(sc, spread, seed, _names(None))


def run_montecarlo(scenario, samples: int, spread: float | None = None, seed: int = 0, *, compensator=None, f=None, overrides=(),
                   store=None, workers=None, scheduler=None, chunk=None, progress="auto", labels=None):
    """A closed-loop Monte Carlo of a tracking scenario (``robustrack montecarlo``).

    Parameters
    ----------
    scenario : Scenario, str or Path
    samples : int
    spread : float, optional
        Uniform ±spread (relative) on each mass, in [0, 1) (default 0.1). Refused for a scenario with
        named uncertain parameters (``[uncertainty.parameters.NAME]``): they are drawn from their own
        distributions.
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
        How messages name the arguments (default: their Python names, :data:`ARGUMENT_NAMES`).

    Returns
    -------
    CampaignResult
        Its ``summary()`` is the command's JSON document.
    """
    from ..campaigns import monte_carlo
    from ..campaigns.executors import check_scheduler, check_workers
    from ..campaigns.montecarlo import check_samples
    from ..campaigns.store import check_store_path

    labels = _names(labels)
    samples = check_samples(samples, labels["samples"])
    if workers is not None:
        check_workers(workers, labels["workers"])
    if scheduler is not None:
        check_scheduler(scheduler, labels["scheduler"])
    if store is not None:
        check_store_path(store, labels["store"])
    sc = resolve_campaign_scenario(scenario, compensator=compensator, f=f, overrides=overrides)
    unc = _uncertainty(sc, spread, seed, labels)
    return monte_carlo(ScenarioLoop(sc), unc, samples, workers=workers, scheduler=scheduler, store=store,
                       settings=campaign_settings(sc), chunk=chunk, progress=progress, labels=labels,
                       info={"overrides": list(overrides or []), "compensator_flag": compensator, "f_flag": f,
                             "scenario_arg": str(scenario) if isinstance(scenario, (str, Path)) else None})


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


def run_worst_case(scenario, spread: float | None = None, *, budget=None, seed: int = 0, compensator=None, f=None, overrides=(),
                   store=None, workers=None, scheduler=None, progress=None, labels=None, certificate=None):
    """Search the δm box of a tracking scenario for its worst plant (``robustrack worst-case``).

    Parameters
    ----------
    scenario : Scenario, str or Path
    spread : float, optional
        The box: ±spread (relative) on each mass (default 0.1). Refused for a scenario with named
        uncertain parameters: the box is theirs, and their distributions are ignored (the result's
        ``box_note`` says so).
    budget : int, optional
        Closed-loop evaluations (default: the store's sample count, else 200).
    seed : int
    compensator, f : str, optional
    overrides : sequence of str
    store : str or Path, optional
        A Monte Carlo store of the same scenario, compensator, spread and configuration:
        its worst sample seeds the search.
    certificate : str or Path, optional
        A certificate of the scenario (``robustrack certify NAME --json PATH``): its lower-bound plant
        (the plant with the largest certified ‖δq‖∞) seeds the search too, clipped to the box.
    workers : int, optional
    scheduler : str, optional
    progress : callable, optional
        ``progress(evaluations, budget, best)``.
    labels : dict, optional
        How messages name the arguments (default: their Python names, :data:`ARGUMENT_NAMES`).

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

    labels = _names(labels)
    if workers is not None:
        check_workers(workers, labels["workers"])
    if scheduler is not None:
        check_scheduler(scheduler, labels["scheduler"])
    sc = resolve_campaign_scenario(scenario, compensator=compensator, f=f, overrides=overrides)
    unc = _uncertainty(sc, spread, seed, labels, fixed_forces=True)
    start, mc_worst = [], None
    if store is not None:
        mc = load_campaign(store, name=labels["store"])
        mine = campaign_settings(sc)
        theirs = {k: mc.settings.get(k) for k in mine}
        drawn = mc.settings.get("uncertainty") or {}
        if theirs != mine or drawn.get("spread") != unc.spread or \
                drawn.get("parameters") != unc.describe().get("parameters"):
            raise ParameterError(f"`{labels['store']}` {str(store)!r} holds a Monte Carlo of other settings (scenario, "
                                 "compensator, spread or configuration); give the store of this campaign.")
        w = mc.worst
        if w is not None:
            start = [w.dm]
            mc_worst = {"sample": w.index, "dm": list(w.dm), "max_abs_e": w.max_abs_e, "samples": len(mc.records)}
        if budget is None:
            budget = len(mc.records)
    cert = None
    if certificate is not None:
        cert = covering_certificate(certificate, sc, unc.spread, unc.parameter, labels)
        nominal = sc.build().nominal
        if unc.parameters is not None:  # named: the witness as a δ of each named value (clipped by the search)
            start.append(_named_witness(cert, unc.parameters, nominal, sc.config))
        else:
            from ..uncertainty import parameter_values

            half = np.asarray(unc.spread) * np.abs(np.atleast_1d(parameter_values(nominal, unc.parameter)))
            start.append(np.clip(cert["delta"], -half, half))
    budget = 200 if budget is None else budget
    positive_int(budget, labels["budget"], minimum=5, what="closed-loop evaluations")
    result = worst_case(ScenarioLoop(sc), unc, budget=budget, seed=seed, start=start, workers=workers,
                        scheduler=scheduler, settings=campaign_settings(sc), progress=progress, labels=labels)
    doc = result.to_dict()
    doc["montecarlo_worst"] = mc_worst
    doc["certificate"] = cert
    doc["reproduce"] = _reproduce(sc, result.worst.dm, overrides, compensator, f)
    return WorstCaseStudy(result, doc)


def _named_witness(cert: dict, named, nominal, cfg) -> np.ndarray:
    """A certificate's lower-bound plant (its largest certified ‖δq‖∞: plant parameters and friction) as the δ of
    each named parameter from its nominal, in the set's order: a point of a worst-case search over the set's box.

    The plant's parameters come from the witness's offset over the certificate's box (``delta``, read per parameter
    by :meth:`ParameterBox.values <robustrack.certification.ParameterBox.values>`; a named entry such as ``m2`` is
    component 1 of ``m``), the friction coefficients from its forces; a parameter the certificate does not vary is
    at its nominal plant's value."""
    from ..certification import ParameterBox
    from ..uncertainty import friction_coefficient, parameter_values
    from .actual_forces import friction_parameters

    friction = friction_parameters(cfg, nominal.coordinates)
    components = nominal.parameter_components()
    box = cert["box"]
    shift = ParameterBox(tuple(box), tuple(v[0] for v in box.values()), tuple(v[1] for v in box.values())).values(
        cert["delta"])
    forces = cert.get("witness_forces") or {}
    out = []
    for p in named:
        if p.name in friction:
            kind, j = friction_coefficient(p.name, nominal.coordinates)
            value = forces[kind][j] if forces.get(kind) is not None else friction[p.name]
        else:
            field, index = components.get(p.name, (p.name, None))
            delta = shift.get(field, 0.0)
            value = float(parameter_values(nominal, p.name)) + float(delta if index is None else delta[index])
        out.append(float(value) - p.nominal)
    return np.array(out)


def certificate_summary(path, name: str) -> dict:
    """What a saved certificate says of Γ (:func:`robustrack.certification.certificate_summary`).

    Parameters
    ----------
    path : str, Path, dict or Certificate
    name : str
        How messages name the argument (``"--certificate"``).

    Returns
    -------
    dict
        ``delta`` (ndarray), ``t``, ``gamma_lower``, ``gamma_upper``, ``level``, ``finished``, ``box``, ...

    Raises
    ------
    ParameterError
        Not a certificate's JSON.
    """
    from ..certification.saved import certificate_summary as read

    return read(path, name)


def covering_certificate(certificate, sc: Scenario, spread, parameter, labels=None) -> dict:
    """A saved certificate read back and checked to cover a study of ``sc``: its named set's box, or ±``spread``.

    The study's box is the box of the scenario's named uncertain parameters (``[uncertainty.parameters.NAME]``,
    :meth:`~robustrack.certification.ParameterBox.of_set`: their ranges, the distributions ignored) when it
    names them — ``spread`` and ``parameter`` are then not used; else ±spread·|value| around the nominal
    plant's values of ``parameter``, as the campaigns sample it. :func:`robustrack.certification.check_covers`
    refuses a certificate of another box, horizon, initial state or scenario.

    Parameters
    ----------
    certificate : str, Path, dict or Certificate
    sc : Scenario
        The study's scenario (with its overrides).
    spread : float or sequence of float
        The older forms' relative spread (one number, or one per component of the parameters).
    parameter : sequence of str
        The older forms' varied plant parameters.
    labels : dict, optional
        How messages name the arguments (``certificate``, ``spread``; default :data:`ARGUMENT_NAMES`).

    Returns
    -------
    dict
        As :func:`certificate_summary`.

    Raises
    ------
    ParameterError
        Not a certificate, or one that does not cover the study (its box, its problem, or the actual plants'
        friction and disturbance: :func:`~robustrack.scenarios.certify.scenario_force_box`).
    """
    from ..certification import ParameterBox
    from ..certification.saved import check_covers
    from .certify import scenario_force_box

    labels = _names(labels)
    summary = certificate_summary(certificate, labels["certificate"])
    problem = sc.build()
    named = scenario_uncertain_set(sc, nominal=problem.nominal)
    forces = scenario_force_box(sc, problem)  # [actual]'s friction (named coefficients' ranges) and disturbance
    if named is not None:
        from .actual_forces import friction_parameters

        friction = friction_parameters(sc.config, problem.nominal.coordinates)
        own = [p for p in named if p.name not in friction]  # the friction coefficients' ranges are in `forces`
        if not own:
            raise ParameterError(f"`{labels['certificate']}` cannot cover scenario {sc.name!r}: every named parameter "
                                 "is a friction coefficient, and a certificate's box holds one of the plant's too.")
        check_covers(summary, problem, ParameterBox.of_set(problem.nominal, own), labels["certificate"],
                     scenario=sc.name, named=True, forces=forces)
        return summary
    values = [np.asarray(problem.nominal.params[p], dtype=float) for p in parameter]
    flat = np.concatenate([np.atleast_1d(v) for v in values])
    half = np.broadcast_to(np.asarray(spread, dtype=float), flat.shape) * np.abs(flat)
    lows, highs, i = [], [], 0
    for v in values:
        h = half[i:i + max(v.size, 1)].reshape(v.shape)
        lows.append(v - h)
        highs.append(v + h)
        i += max(v.size, 1)
    check_covers(summary, problem, ParameterBox(tuple(parameter), tuple(lows), tuple(highs)), labels["certificate"],
                 spread_name=labels["spread"], scenario=sc.name, forces=forces)
    return summary


def run_target(sc: Scenario) -> str:
    """How ``robustrack run`` names a scenario: its catalog name, or the path of the file it came from.

    Parameters
    ----------
    sc : Scenario

    Returns
    -------
    str
        The name for a catalog scenario or one built in Python; else the TOML file's path
        (shell-quoted where it needs to be).
    """
    import shlex
    from pathlib import Path

    from .scenario import catalog_path

    if sc.path is None or Path(sc.path).parent == catalog_path().resolve():
        return sc.name
    return shlex.quote(sc.path)


def _reproduce(sc, dm, overrides, compensator, f) -> str:
    parts = [f"robustrack run {run_target(sc)}"]
    if compensator:
        parts.append(f"--compensator {compensator}")
    if f:
        parts.append(f"--f {f}")
    parts += [f"--set '{o}'" for o in overrides or []]
    if "parameters" in sc.config.get("uncertainty", {}) and not sc.config["uncertainty"]["parameters"]:
        names = ", ".join(f'"{n}"' for n in sc.spec.uncertain_parameters(sc.config))
        parts.append(f"--set 'uncertainty.parameters=[{names}]'")  # a python scenario's δ names its parameters
    parts.append("--set 'uncertainty.dm=[" + ", ".join(typed_float(x) for x in dm) + "]'")
    return " ".join(parts)


#: Verifications a tuning makes at most (raising Γ to what the previous one measured) before giving up.
TUNE_ROUNDS = 3


def _value(table: dict, key: str):
    """The value of ``key`` (``eps``, or ``gss.K`` in a sub-table) in a ``[compensator]`` table."""
    for part in key.split("."):
        table = table[part]
    return table


def run_tune(scenario, spread: float | None = None, *, target_e=None, target_edot=None, compensator=None, f=None,
             overrides=(), gamma=None, gamma_samples: int = 1014, samples: int = 100, seed: int = 0, store=None,
             workers=None, scheduler=None, progress="auto", labels=None, certificate=None, corners=None):
    """Tune a scenario's compensator to a target promised bound, then verify with a Monte Carlo (``robustrack tune``).

    Parameters
    ----------
    scenario : Scenario, str or Path
    spread : float, optional
        ±spread on each mass: the uncertainty set of Γ and of the verification (default 0.1). Refused for a
        scenario with named uncertain parameters (``[uncertainty.parameters.NAME]``): Γ's Monte Carlo and the
        verification then draw them from their own distributions, as ``montecarlo`` does (the same seed, the
        same stream: the verification's sample i is ``montecarlo``'s sample i).
    target_e, target_edot : float, optional
        Targets on the promised ‖e‖∞ / ‖ė‖∞ bounds.
    compensator, f : str, optional
    overrides : sequence of str
    gamma : float, optional
        Γ (default: the certificate's, else the Γ Monte Carlo's Γ′ = 1.2 × p99 of max_t ‖δq‖∞, W 7.3).
    certificate : str, Path, dict or Certificate, optional
        A certificate of the scenario covering ±``spread``, or the box of its named uncertain parameters
        (``robustrack certify NAME --json FILE``; :func:`covering_certificate`): Γ is
        its certified upper bound of sup ‖δq‖∞, valid for every plant in the box, and the document says
        so (``certified``); refused with ``gamma``, or when it covers other plants, another horizon or
        another initial state.
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
    labels : dict, optional
        How messages name the arguments (default: their Python names, :data:`ARGUMENT_NAMES`).
    corners : int, optional
        Corners of the declared box the tuned design is also run on (default
        :data:`~robustrack.campaigns.box_verification.DEFAULT_CORNERS`; 0: none): the Monte Carlo draws the
        distributions, the corners the ends of the ranges (:mod:`robustrack.campaigns.box_verification`).

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

    labels = _names(labels)
    samples = check_samples(samples, labels["samples"])
    from .declared_gamma import without_gamma

    # every verified run sets uncertainty.gamma (the tuning's Γ), so a scenario that declares none is tuned here
    sc = without_gamma(resolve_campaign_scenario(scenario, compensator=compensator, f=f, overrides=overrides))
    unc = _uncertainty(sc, spread, seed, labels)
    if sc.config["compensator"]["type"] == "problem":  # the python kind: the factory's own compensator
        raise ScenarioError(f"scenario {sc.name!r} keeps its factory's compensator (`compensator.type` = "
                            "'problem'); tune builds one from the [compensator] table and tunes its keys: give "
                            "--compensator gss, gd or gdbar.")
    comp = sc.build().compensator
    if comp is None:
        raise ParameterError("`--compensator` none has nothing to tune; choose gss, gd or gdbar.")
    cert = None
    if certificate is not None:
        if gamma is not None:
            raise ParameterError(f"give `{labels['gamma']}` or `{labels['certificate']}`, not both: with a certificate "
                                 "Γ is its certified upper bound of sup ‖δq‖∞.")
        from ..certification.saved import certified_gamma_text

        cert = covering_certificate(certificate, sc, unc.spread, unc.names, labels)
        plants = (f"the box of {', '.join(unc.names)}" if unc.parameters is not None else
                  f"±{format_value(100 * np.max(unc.spread))} % on {', '.join(unc.names)}")
        gamma, source = cert["gamma_upper"], (f"certificate: {certified_gamma_text(cert, format_value)}, for every "
                                              f"plant in {plants}")
    elif gamma is None:
        gdoc = run_gamma(sc, int(gamma_samples), unc.spread, seed=unc.seed,
                         labels={"samples": labels["gamma_samples"]}).to_dict()
        drawn = "" if unc.parameters is None else f" of {', '.join(unc.names)} from their distributions"
        gamma, source = float(gdoc["gamma_prime"]), (f"Γ Monte Carlo: {gamma_samples} samples{drawn}, "
                                                     f"{format_value(gdoc['margin'])} × "
                                                     f"p{format_value(100 * gdoc['quantile'])} of max_t ‖δq‖∞")
    else:
        gamma = float(gamma)
        if not math.isfinite(gamma) or gamma < 0:
            raise ParameterError(f"`{labels['gamma']}` must be a finite number >= 0; got {gamma!r}.")
        source = f"given ({labels['gamma']})"
    from pathlib import Path

    keys = compensator_keys(comp)  # tuned parameter → its key after "compensator."
    rounds = []
    while True:
        # only gains whose assumptions held on every verified plant are proposed: when the verification
        # measures max ‖δq‖∞ above Γ, Γ is raised to 1.2 × that (the Γ Monte Carlo's margin) and the
        # tuning verified again (at most TUNE_ROUNDS times)
        tuned = tune_compensator(comp, gamma=gamma, target_e=target_e, target_edot=target_edot)
        sets = [f"compensator.{keys[k]}={float(v)!r}" for k, v in tuned.params.items()]
        sets.append(f"uncertainty.gamma={gamma!r}")  # the Γ the promise is judged at (the tuning's)
        where = store if store is None or not rounds else \
            Path(store).with_name(f"{Path(store).stem}-round{len(rounds) + 1}{Path(store).suffix}")
        verified = run_montecarlo(sc.with_overrides(sets), samples, unc.spread, unc.seed, store=where,
                                  workers=workers, scheduler=scheduler, progress=progress, labels=labels)
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
    if cert is not None:
        summary["certified"] = cert  # the verification shows the certificate beside its sampled fractions
    box, box_note, broke = _tuned_corners(sc.with_overrides(sets), unc, corners, labels)
    effort = summary.get("effort") or {}
    proposed = not a.get("failed") and broke is None and not effort.get("samples_over")
    why_not = None if proposed else ("not proposed: " + "; ".join(
        ([f"the bound's assumptions failed on {a['failed']} of {summary['judged']} verified plants ("
          + "; ".join(f"{d['assumption']} by {format_value(d['excess'])}" for d in a["by_assumption"].values()
                      if d["failed"]) + ") — the promise is not a certificate for this uncertainty"]
         if a.get("failed") else [])
        + ([f"the torque exceeded an effort limit on {effort['samples_over']} of {effort['measured']} verified plants"]
           if effort.get("samples_over") else [])
        + ([f"{broke.plant_text()} breaks it: {broke.broke}"] if broke is not None else [])))
    te, ted = tuned.target_e, tuned.target_edot
    met = bool(summary["failed"] == 0 and summary["completed"] == samples
               and (te is None or (summary["max_abs_e"]["max"] or math.inf) <= te)
               and (ted is None or (summary["max_abs_edot"]["max"] or math.inf) <= ted))
    doc = {"scenario": sc.name, "compensator": sc.config["compensator"]["type"], "spread": unc.spread,
           "parameters": None if unc.parameters is None else unc.parameters.describe(), "seed": unc.seed,
           "target": {"e": te, "edot": ted}, "gamma": {"value": gamma, "source": source},
           "tuned": {"params": tuned.params, "set": sets, "bounds": {"e": tuned.bounds.e, "edot": tuned.bounds.edot},
                     "effort": tuned.effort},
           "before": {"params": {k: _value(sc.config["compensator"], keys[k]) for k in tuned.params},
                      "bounds": {"e": tuned.before_bounds.e, "edot": tuned.before_bounds.edot},
                      "effort": tuned.before_effort},
           "note": tuned.note, "verification": summary, "measured_within_target": met,
           "proposed": proposed, "not_proposed_because": why_not, "rounds": rounds,
           "certificate": cert, "certified": _certified_promise(cert, gamma, tuned.bounds),
           "corners": [p.to_dict() for p in box], "corners_note": box_note}
    return TuneStudy(tuned, verified, doc)


def _tuned_corners(sc, unc, corners, labels):
    """The tuned scenario run on the corners of the declared box (:func:`~robustrack.campaigns.box_verification.verify_design`,
    no Monte Carlo: ``run_tune``'s own draws the distributions): the plants run, the note, and the one that broke it."""
    from ..campaigns.box_verification import DEFAULT_CORNERS, verify_design
    from .._validate import positive_int

    corners = positive_int(DEFAULT_CORNERS if corners is None else corners, labels["corners"], minimum=0)
    if not corners:
        return [], None, None
    plants, note = verify_design(sc.build(), unc, corners=corners, samples=0)
    broke = plants[-1] if plants and plants[-1].broke is not None else None
    return plants, note, broke


def design_for_scenario_sensor(scenario, *, spread=None, seed: int = 0, corners=None, samples=None, max_runs: int = 12,
                               progress=None, labels=None):
    """``tune`` of a scenario with a sensor: :func:`~robustrack.campaigns.sensed_design.design_for_sensor` verified
    over the scenario's declared uncertainty (the ``montecarlo`` set: its named parameters' box and distributions, or
    ±``spread`` on the masses; :mod:`robustrack.campaigns.box_verification`).

    Parameters
    ----------
    scenario : Scenario
        A tracking scenario with a ``[sensor]`` table.
    spread : float, optional
        ±spread on the masses (default 0.1); refused with named uncertain parameters, as ``montecarlo`` refuses it.
    seed : int
        The Monte Carlo's draws (each plant's sensor noise is seeded from the sensor's seed and its index).
    corners, samples : int, optional
        Corners of the box and Monte Carlo plants per candidate (module defaults).
    max_runs : int
    progress : callable, optional
    labels : dict, optional
        How messages name the arguments (:data:`ARGUMENT_NAMES`).

    Returns
    -------
    SensedDesign
    """
    from ..campaigns.sensed_design import design_for_sensor

    labels = _names(labels)
    unc = _uncertainty(scenario, spread, seed, labels)
    try:
        return design_for_sensor(scenario.build(), max_runs=max_runs, progress=progress, uncertainty=unc,
                                 corners=corners, samples=samples)
    except ParameterError as exc:
        message = str(exc)
        for key in ("corners", "samples"):
            message = message.replace(f"`{key}`", f"`{labels[key]}`")
        if message == str(exc):
            raise
        raise ParameterError(message) from None


def _certified_promise(cert, gamma, bounds):
    """What a certificate proves of the tuned promise (None without one): Γ ≥ the certified sup ‖δq‖∞ holds
    for every plant in the box, at the certificate's level (box: along the nominal motion; closed: over the
    tube of the certified settings' bound, not the tuned one's — certify the tuned gains again to close it).

    ``certified`` is False when the verification raised Γ above the certified upper bound: it measured
    max ‖δq‖∞ above it in the closed loop (the actual motion, which a box-level certificate does not cover),
    so the promise then rests on that measurement, not on the certificate (``not_certified_because``)."""
    if cert is None:
        return None
    certified = float(gamma) <= cert["gamma_upper"]
    return {"gamma": float(gamma), "e": float(bounds.e), "edot": float(bounds.edot), "level": cert["level"],
            "finished": cert["finished"], "gamma_upper": cert["gamma_upper"], "certified": certified,
            "not_certified_because": None if certified else (
                f"Γ = {format_value(gamma)} was raised above the certified {format_value(cert['gamma_upper'])} "
                "because the verification measured max ‖δq‖∞ above it in the closed loop: the promise rests on that "
                "measurement, not on the certificate (certify --level closed with the tuned gains)")}


# ------------------------------------------------------------------------------ text
