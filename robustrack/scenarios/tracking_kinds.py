"""Tracking scenarios: nominal controller + compensator + uncertain actual plant (W ch. 5–8).

The ``triple-pendulum`` kind reproduces W §7.3 / §8.2.5 / §8.3.4: the triple
pendulum under the stabilized energy constraint (nominal controller Qᶜ), an
actual plant with masses m + δm, and a compensator from
:data:`robustrack.controllers.COMPENSATORS`. With ``constraint.enabled = false``
it is the unconstrained variant of W Remark 7.2 (eq. 7.3.7).

The ``duffing-tracking`` kind applies the same machinery to a second, non-chaotic
system: KU's coupled Duffing oscillator (ex. 3, eq. 35) forced onto
x1 − x2 = A e^{−αt} sin ωt by the fundamental equation, with actual masses
(m1, m2) + δm. It is not in the seeds (KU has no uncertainty). Γ = 10 is our design
value: ``robustrack gamma duffing-tracking --samples 10028`` (±10 % on m1, m2) gives
p99 5.1, max 5.2 of max_t ‖δq‖∞, and the controlled run measures 5.2.

The ``[compensator]`` table gives ``type``, the control function (``f``, ``eps``, ``alpha_c``, ``p``)
and the hold; each compensator's parameters are in its own table, ``[compensator.gss]``,
``[compensator.gd]``, … named as its class's fields (:mod:`robustrack.scenarios.compensator_table`;
old flat tables are read with a notice). ``uncertainty.gamma`` is Γ, the bound on ‖δq‖∞ the promised
bounds are judged at (< 0: the compensator's design value, Γ′ of GSS, Γ of GD). ``sample_period = 0``
means continuous control; a discontinuous f (sign, and the classical presets) then runs with a
zero-order hold of period ``sign_sample_period``.

The ``[actual]`` table of both kinds adds joint friction and a bounded disturbance to the actual plant
(:mod:`robustrack.scenarios.actual_forces`; none by default): they enter δQ, Γ, campaigns and certificates.

``[uncertainty.parameters.NAME]`` tables name the uncertain parameters as in the ``python`` and ``urdf`` kinds
(:mod:`robustrack.scenarios.parameter_shift`, docs/guide/uncertainty.md): a component of a per-body parameter
(``m2``, ``L3``, ``k1``), a plant constant, or a friction coefficient of ``[actual]`` (``viscous_theta1``,
``coulomb_x2``), each with its range and distribution; ``dm`` then has one entry per named value. Without tables the
kind's masses are the uncertain parameters and ``dm`` shifts them.

The ``[actuators]`` table (every tracking kind) gives the machine's actuators
(:mod:`robustrack.tracking.actuators`): ``B``, the input matrix as rows (n rows, one
column per actuator, independent columns; ``[]``: none — Qᶜ and Qᵘ act as generalized
forces in every direction), and ``tau_max``, the limits (``[]``: unlimited; one number
for all, or one per actuator; ``inf`` allowed). Both are checked when the scenario is
loaded, with the key's name and line in the message.
"""

from __future__ import annotations

import functools
import warnings

import numpy as np

from ..campaigns.tuning import TUNABLE
from ..controllers import COMPENSATORS, CONTROL_FUNCTIONS
from ..errors import ParameterError, ScenarioError, SolverError
from ..plants import NLinkPendulum, pendulum_energy_constraint
from ..plants.examples import CoupledDuffing, coupled_duffing_constraint
from ..plants.units import coordinate_units
from ..tracking.actuators import effort_limits
from ..tracking.defaults import DEFAULT_TRACKING_METHOD
from ..tracking.problem import ResidualInfo, TrackingProblem, check_compensator_force
from .kinds import duffing_start, plant_defaults
from .parameter_shift import check_parameter_shift, named_tables, parameters_schema, shifted_plant
from .actual_forces import FORCES_SCHEMA, check_force_sizes, check_forces, friction_parameters, run_forces
from .compensator_table import (COMPENSATOR_SHARED, build_compensator, check_compensator, compensator_schema,
                                in_key_names, upgrade_flat_table)
from .config import Limits, Numbers, PerJoint, Rows
from .registry import ScenarioKind, choice_key, register_kind

__all__ = ["compensation", "COMPENSATOR_CHOICES", "TUNABLE_TYPES", "ACTUATOR_DEFAULTS", "AUTOMATIC_GAMMA",
           "UPGRADE", "actual_from_dm", "with_forces", "run_tracking", "actuators_check"]

#: The [actuators] table: none (Qᶜ and Qᵘ act in every direction), no limits (inf: unlimited).
ACTUATOR_DEFAULTS = {"B": Rows(), "tau_max": Limits()}

#: The values `compensator.type` and `compensator.f` accept (every tracking kind's ``choices``, refused
#: otherwise at load; the CLI's --compensator choices and --f list): the registered compensators and
#: "none" (:data:`robustrack.controllers.COMPENSATORS`), the control functions
#: (:data:`robustrack.controllers.CONTROL_FUNCTIONS`).
COMPENSATOR_CHOICES = {"compensator.type": ("none", *COMPENSATORS), "compensator.f": tuple(CONTROL_FUNCTIONS)}

#: The compensators `robustrack tune` can tune (:data:`robustrack.campaigns.tuning.TUNABLE`).
TUNABLE_TYPES = tuple(name for name in COMPENSATORS if name in TUNABLE)

#: Γ of the bounds when ``uncertainty.gamma`` < 0: the compensator's design value (Γ′ of GSS, Γ of GD).
AUTOMATIC_GAMMA = -1.0

#: The old flat [compensator] tables are read with a notice naming the new keys (the kinds' ``upgrade``).
UPGRADE = functools.partial(upgrade_flat_table, default_type=COMPENSATOR_SHARED["type"])


#: The masses ``uncertainty.dm`` shifts (and the Γ Monte Carlo perturbs) in the two built-in tracking kinds.
_PENDULUM_MASSES, _DUFFING_MASSES = ("m",), ("m1", "m2")


def actual_from_dm(cfg, nominal, names: tuple):
    """The actual plant of a built-in tracking kind: its ``uncertain`` parameters + ``uncertainty.dm``, or the
    parameters ``[uncertainty.parameters.NAME]`` tables name + ``dm``
    (:func:`~robustrack.scenarios.parameter_shift.shifted_plant`).

    Parameters
    ----------
    cfg : dict
        The validated configuration (``uncertainty.dm``: one δ per value of the kind's parameters, or of the
        named ones).
    nominal : Plant
        The nominal plant.
    names : tuple of str
        The masses δm shifts (the kind's ``uncertain``).

    Returns
    -------
    Plant
        :func:`robustrack.uncertainty.actual_plant` of ``nominal`` and δ.

    Raises
    ------
    ScenarioError
        An actual mass m + δm ≤ 0 (named by ``uncertainty.dm``), or a δ the plant refuses.
    """
    from ..uncertainty import actual_plant, parameter_values

    if named_tables(cfg["uncertainty"]):  # tables: dm shifts their values (the friction's through run_forces)
        actual = shifted_plant(nominal, cfg["uncertainty"], friction_parameters(cfg, nominal.coordinates))
        return nominal if actual is None else actual
    dm = cfg["uncertainty"]["dm"]
    parameter = names if len(names) > 1 else names[0]
    masses = np.atleast_1d(parameter_values(nominal, parameter)) + np.asarray(dm, dtype=float)
    if np.any(masses <= 0):
        what = f"({', '.join(names)})" if len(names) > 1 else names[0]
        raise ScenarioError(f"`uncertainty.dm` makes an actual mass ≤ 0: {what} + δm = {masses.tolist()}.")
    try:
        return actual_plant(nominal, dm=dm, parameter=parameter)
    except ParameterError as exc:
        raise ScenarioError(f"`uncertainty.dm` = {dm}: {exc}") from None


def with_forces(cfg, actual):
    """The actual plant with ``[actual]``'s friction and disturbance (:mod:`robustrack.scenarios.actual_forces`), as a
    :class:`~robustrack.plants.ForcedPlant`; the plant itself where there are none.

    Parameters
    ----------
    cfg : dict
        A validated configuration of a built-in tracking kind.
    actual : Plant
        The actual plant (the nominal one shifted by ``uncertainty.dm``).

    Returns
    -------
    Plant
    """
    forces = run_forces(cfg, actual.coordinates)
    if forces is None:
        return actual
    from ..plants import ForcedPlant

    return ForcedPlant(actual, forces)


def _pendulum(cfg) -> NLinkPendulum:
    p = cfg["plant"]
    return NLinkPendulum(m=tuple(p["m"]), L=tuple(p["L"]), g=p["g"])


def _build_triple_pendulum(cfg) -> TrackingProblem:
    p = cfg["plant"]
    nominal = _pendulum(cfg)
    actual = with_forces(cfg, actual_from_dm(cfg, nominal, _PENDULUM_MASSES))
    constraint = residual = None
    if cfg["constraint"]["enabled"]:
        constraint = pendulum_energy_constraint(L1=p["L"][0], g=p["g"], gain=cfg["constraint"]["gain"],
                                                n=3, m1=p["m"][0])
        # ψ = ½ L1 θ̇1² − g cos θ1: a length times a squared rate (W 2.3.5 divided by m1 L1)
        residual = ResidualInfo("ψ", "m/s²", "Energy constraint residual ψ = E₁/(m₁L₁) = ½L₁θ̇₁² − g cos θ₁")
    return _tracking_problem(cfg, nominal, actual, constraint, np.array(cfg["initial"]["q"]),
                             np.array(cfg["initial"]["qd"]), residual)


def _tracking_problem(cfg, nominal, actual, constraint, q0, qd0, residual=None) -> TrackingProblem:
    """The problem of a tracking scenario: its plants and constraint, the compensator and its sampling from the
    ``[compensator]`` table, the horizon and the solver from ``[simulation]``.

    Every value is checked here, with the key the user typed in the message (the problem checks
    them again, with its own names, when it is made).
    """
    sim = cfg["simulation"]
    return TrackingProblem(nominal=nominal, constraint=constraint, q0=q0, qd0=qd0, t_span=(0.0, sim["t_end"]),
                           actual=actual, **compensation(cfg, nominal.n, sim["t_end"]),
                           transient=None if sim["transient"] < 0 else sim["transient"],
                           residual=residual, actuators=_actuators(cfg["actuators"]),
                           uncompensated=sim["uncompensated"], n_points=sim["n_points"], method=sim["method"],
                           rtol=sim["rtol"], atol=sim["atol"])


#: The ``[sensor]`` table of a tracking scenario (:class:`robustrack.loop.Sensor`; docs/guide/robot.md): every key
#: at its default is "the state itself" (no sensor). ``counts_per_revolution`` > 0 sets the resolution 2π/counts.
SENSOR_SCHEMA = {"q_noise": PerJoint(0.0), "q_resolution": PerJoint(0.0), "counts_per_revolution": 0,
                 "velocity": "exact", "velocity_cutoff": 0.0, "qd_noise": PerJoint(0.0), "delay": 0.0, "seed": 0,
                 "confidence": 0.999, "quantization": "round"}


def sensor_of(cfg: dict, where=None):
    """The :class:`~robustrack.loop.Sensor` of a configuration's ``[sensor]`` table; None where it has none or every
    key is at its default (the controller sees the state).

    Parameters
    ----------
    cfg : dict
        A validated configuration.
    where : callable, optional
        ``where(section, key)``: how a message names a key (with its file and line).

    Returns
    -------
    Sensor or None

    Raises
    ------
    ScenarioError
        A value the sensor refuses, or a sensor without ``compensator.sample_period``, named by its key.
    """
    table = cfg.get("sensor")
    if table is None or all(table[k] == v for k, v in SENSOR_SCHEMA.items()):
        return None
    from ..loop import Sensor

    name = where or (lambda section, key: f"`{section}.{key}`")
    fields = {k: v for k, v in table.items() if k != "counts_per_revolution"}
    counts = table["counts_per_revolution"]
    if counts:
        if not isinstance(counts, int) or counts <= 0 or table["q_resolution"]:
            raise ScenarioError(f"{name('sensor', 'counts_per_revolution')} must be an integer > 0, and "
                                f"`sensor.q_resolution` left 0 (one of the two); got {counts!r}.")
        fields["q_resolution"] = 2 * np.pi / counts
    try:
        sensor = Sensor(**fields)
    except ParameterError as exc:
        message = str(exc)
        for key in fields:
            message = message.replace(f"`{key}`", name("sensor", key))
        raise ScenarioError(message) from None
    h = cfg["compensator"].get("sample_period", 0)
    if not h > 0:
        raise ScenarioError(f"{name('compensator', 'sample_period')} must be > 0 with a [sensor] table: the sensor "
                            "measures at the sample instants of a zero-order hold (e.g. 1e-3 for a 1 kHz loop).")
    try:
        sensor.delay_samples(h)
    except ParameterError as exc:
        raise ScenarioError(str(exc).replace("`sensor.delay`", name("sensor", "delay"))) from None
    return sensor


def compensation(cfg: dict, n: int, t_end: float) -> dict:
    """The :class:`~robustrack.tracking.problem.TrackingProblem` fields ``[compensator]`` and ``uncertainty.gamma``
    set.

    Parameters
    ----------
    cfg : dict
        A validated tracking configuration: its ``[compensator]`` table
        (:func:`~robustrack.scenarios.compensator_table.compensator_schema`) and ``uncertainty.gamma``.
    n : int
        Coordinates of the plant (the compensator's force must have n entries).
    t_end : float
        The horizon's end (a hold period must fit in it).

    Returns
    -------
    dict
        ``compensator`` (:func:`~robustrack.scenarios.compensator_table.build_compensator`), ``sample_period`` (``sample_period``, or for a
        discontinuous f without one, ``sign_sample_period``; None: continuous) and ``gamma``
        (``uncertainty.gamma``; None where it is < 0: the compensator's design value).

    Raises
    ------
    ScenarioError
        A value the compensator or the hold refuses, named by its ``compensator.KEY``.
    """
    from ..tracking.integrate import check_hold_intervals  # scipy.integrate: not at import (list, show

    c = cfg["compensator"]
    comp = build_compensator(c)
    try:
        check_compensator_force(comp, n)
    except ParameterError as exc:
        raise ScenarioError(in_key_names(exc, choice_key(c["type"]))) from None
    h, key = (c["sample_period"], "sample_period") if c["sample_period"] > 0 else (None, None)
    if comp is not None and comp.discontinuous and h is None:
        h, key = c["sign_sample_period"], "sign_sample_period"
    if h is not None:
        try:
            check_hold_intervals(h, t_end, f"compensator.{key}")
        except ParameterError as exc:
            raise ScenarioError(str(exc)) from None
    gamma = cfg["uncertainty"]["gamma"]
    out = {"compensator": comp, "sample_period": h, "gamma": None if gamma < 0 else gamma}
    if "sensor" in cfg:
        out["sensor"] = sensor_of(cfg)
    return out


def _actuators(a):
    """The :class:`~robustrack.tracking.actuators.Actuators` of an ``[actuators]`` table (None: none)."""
    if not a["B"]:
        return None
    from ..tracking.actuators import Actuators

    return Actuators(a["B"], a["tau_max"] if a["tau_max"] else np.inf)


def actuators_check(n: int):
    """The load-time rules of the ``[actuators]`` table for a plant of n coordinates (a kind's ``check``).

    Parameters
    ----------
    n : int
        Number of coordinates of the kind's plant (B's rows).

    Returns
    -------
    callable
        ``check(cfg, where)`` raising :class:`~robustrack.errors.ScenarioError` with the key
        (and line) of the offending value.
    """
    def check(cfg, where):
        B, lim = cfg["actuators"]["B"], cfg["actuators"]["tau_max"]
        if not B:
            if lim:
                raise ScenarioError(f"{where('actuators', 'tau_max')} limits actuators, but `actuators.B` is empty (no "
                                    "actuators); give B (one row per coordinate, one column per actuator) or drop "
                                    "tau_max.")
            return
        Bm = np.array(B)
        k = Bm.shape[1]
        if Bm.shape[0] != n or not np.all(np.isfinite(Bm)):
            raise ScenarioError(f"{where('actuators', 'B')} must have {n} rows (one per coordinate) of finite numbers "
                                f"and one column per actuator; got {Bm.shape[0]} rows of {k}: {B!r}.")
        rank = int(np.linalg.matrix_rank(Bm))
        if k > n or rank < k:
            raise ScenarioError(f"{where('actuators', 'B')} must have independent columns (at most {n}, one per "
                                f"actuator): its rank is {rank} with {k} columns, so some actuators push along the "
                                f"same direction and their commands are not determined; got {B!r}.")
        if len(lim) not in (0, 1, k) or not all(v > 0 for v in lim):
            raise ScenarioError(f"{where('actuators', 'tau_max')} must be [] (unlimited), one number or {k} numbers "
                                f"(one per column of B), each > 0 (inf: unlimited); got {lim!r}.")

    return check


def tracking_check(n: int, coordinates=None, nominal=None, masses=()):
    """The load-time rules of a built-in tracking kind (its ``check``): the compensator is built once
    (:func:`~robustrack.scenarios.compensator_table.check_compensator`: a value it refuses is said before any
    run), then :func:`actuators_check`, and the ``[actual]`` friction and disturbance where the kind has them.

    Parameters
    ----------
    n : int
        Number of coordinates of the kind's plant.
    coordinates : sequence of str, optional
        Their names (for the messages on ``[actual]``'s per-joint lists).
    nominal : callable, optional
        ``nominal(cfg)``, the kind's nominal plant: with it, ``[uncertainty]``'s named parameters are checked
        against the plant (:func:`~robustrack.scenarios.parameter_shift.check_parameter_shift`) and, without
        tables, ``dm``'s length against its masses.
    masses : tuple of str
        The kind's ``uncertain`` masses: without tables, ``dm`` has one number per value of them.

    Returns
    -------
    callable
        ``check(cfg, where)``.
    """
    actuators = actuators_check(n)

    def check(cfg, where):
        check_compensator(cfg, where)
        actuators(cfg, where)
        sensor_of(cfg, where)
        if "actual" in cfg:
            check_forces(cfg, where)
            check_force_sizes(cfg, n, coordinates or [f"q{i + 1}" for i in range(n)], where)
        if nominal is not None:
            try:
                plant = nominal(cfg)
            except ParameterError:
                return  # a plant value it refuses: said by the build, with the key (`plant.m1`)
            _check_uncertainty(cfg, plant, masses, where)

    return check


def _check_uncertainty(cfg, plant, masses, where) -> None:
    """``[uncertainty]`` of a built-in tracking kind: tables checked against the plant, and without tables ``dm``
    one number per value of the kind's masses."""
    from ..uncertainty import parameter_values

    tables, dm = cfg["uncertainty"]["parameters"], cfg["uncertainty"]["dm"]
    if not tables:
        size = np.atleast_1d(parameter_values(plant, masses if len(masses) > 1 else masses[0])).size
        if len(dm) != size:
            raise ScenarioError(f"{where('uncertainty', 'dm')} must be a list of {size} numbers, one per mass "
                                f"({', '.join(masses)}; or name the uncertain parameters in "
                                f"[uncertainty.parameters.NAME] tables); got {len(dm)}: {dm!r}.")
        return
    # tables (a list is refused when the configuration is read: parameters_schema(older=False))
    try:
        check_parameter_shift(cfg["uncertainty"], plant, where, friction_parameters(cfg, plant.coordinates))
    except ScenarioError as exc:
        if "uncertainty.dm" not in str(exc) and "`dm`" not in str(exc):
            raise
        raise ScenarioError(f"{exc} With named parameters, `dm` shifts their values (in the tables' order); "
                            "give `dm = []` for the nominal plant (the kind's own `dm` shifts its masses, "
                            "without tables).") from None


register_kind(ScenarioKind(
    "triple-pendulum-tracking",
    {"plant": {"m": [1.0, 2.0, 3.0], "L": [1.0, 1.5, 2.0], "g": 9.81},
     "constraint": {"enabled": True, "gain": 0.02},
     "initial": {"q": [1.0, 0.0, 0.0], "qd": [0.001, 0.0, 0.0]},
     "uncertainty": {"parameters": parameters_schema(older=False), "dm": Numbers([0.1, -0.2, 0.3]), "gamma": 100.0},
     "compensator": compensator_schema(),
     "sensor": dict(SENSOR_SCHEMA),
     "actuators": dict(ACTUATOR_DEFAULTS),
     "actual": dict(FORCES_SCHEMA),  # friction and a disturbance the model leaves out (actual_forces.py)
     "simulation": {"t_end": 10.0, "method": DEFAULT_TRACKING_METHOD, "rtol": 1e-8, "atol": 1e-12,
                    "n_points": 1001, "uncompensated": True, "transient": -1.0}},
    _build_triple_pendulum,
    "Triple pendulum under the energy constraint; actual masses m + δm; a compensator makes the "
    "actual system follow the nominal one (W §7.3, §8.2.5, §8.3.4). transient < 0: automatic. "
    "[actuators] B (rows), tau_max: the forces through actuators (default none: every direction). "
    "[actual] viscous, coulomb, coulomb_width, friction_spread, [actual.disturbance]: joint friction and a "
    "bounded disturbance in the actual plant (default none). [uncertainty.parameters.NAME] tables: named "
    "uncertain parameters (m2, L3, viscous_theta1, …) instead of the masses; dm then one δ per named value.",
    tracking=True,
    uncertain=_PENDULUM_MASSES,
    check=tracking_check(3, ("theta1", "theta2", "theta3"), _pendulum, _PENDULUM_MASSES),
    choices=COMPENSATOR_CHOICES,
    tunable=TUNABLE_TYPES,
    upgrade=UPGRADE,
))


def _build_duffing_tracking(cfg) -> TrackingProblem:
    p, c = cfg["plant"], cfg["constraint"]
    nominal = CoupledDuffing(**p)
    actual = with_forces(cfg, actual_from_dm(cfg, nominal, _DUFFING_MASSES))
    constraint = coupled_duffing_constraint(nominal, alpha=c["alpha"], amplitude=c["amplitude"], omega=c["omega"])
    residual = ResidualInfo("φ", coordinate_units(nominal).q,  # a difference of positions
                            "Tracking constraint residual φ = x₁ − x₂ − A e^(−αt) sin ωt")
    return _tracking_problem(cfg, nominal, actual, constraint, *duffing_start(cfg), residual)


register_kind(ScenarioKind(
    "duffing-tracking",
    {"plant": plant_defaults(CoupledDuffing),
     "constraint": {"alpha": 0.4, "amplitude": 1.0, "omega": 2 * np.pi},
     "initial": {"q": [1.0, 1.0], "x2_dot": 2.0},
     "uncertainty": {"parameters": parameters_schema(older=False), "dm": Numbers([0.2, -0.1]), "gamma": 10.0},
     "compensator": compensator_schema(design_gamma=10.0),
     "sensor": dict(SENSOR_SCHEMA),
     "actuators": dict(ACTUATOR_DEFAULTS),
     "actual": dict(FORCES_SCHEMA),
     "simulation": {"t_end": 10.0, "method": DEFAULT_TRACKING_METHOD, "rtol": 1e-8, "atol": 1e-12,
                    "n_points": 1001, "uncompensated": True, "transient": -1.0}},
    _build_duffing_tracking,
    "Coupled Duffing oscillator (KU ex. 3) whose nominal controller forces x1 − x2 = A e^{−αt} sin ωt; "
    "actual masses m + δm; a compensator makes the actual system follow the nominal one. "
    "ẋ1(0) follows from the constraint. transient < 0: automatic. [actual]: friction and a bounded disturbance "
    "in the actual plant (default none). [uncertainty.parameters.NAME] tables: named uncertain parameters "
    "instead of the masses; dm then one δ per named value.",
    tracking=True,
    uncertain=_DUFFING_MASSES,
    check=tracking_check(2, ("x1", "x2"), lambda cfg: CoupledDuffing(**cfg["plant"]), _DUFFING_MASSES),
    choices=COMPENSATOR_CHOICES,
    tunable=TUNABLE_TYPES,
    upgrade=UPGRADE,
))


#: metrics that only an actuated run has (left out of an unactuated run's summary)
_ACTUATED_METRICS = ("saturation_fraction", "first_saturation_time", "first_saturation_after_transient",
                     "max_abs_tau_per_actuator", "max_abs_tau_demand_per_actuator", "min_realizability_margin")


def _summary_metrics(metrics, actuated: bool):
    metrics = metrics if actuated else {k: v for k, v in metrics.items() if k not in _ACTUATED_METRICS}
    # GD's and GD-bar's third assumption (W 8.2.17, 8.3.16), and why a run started outside its bound's invariant
    # set is only observed: left out of the summaries of the runs they do not concern
    return {k: v for k, v in metrics.items() if not (k in ("max_norm_P", "start_note") and v is None)}


def _effort(pb, result) -> dict:
    """A run's peak demanded |τ| per joint against its effort limit (docs/guide/robot.md, "Effort limits"): ``joints``,
    ``limit``, ``peak`` (what the law asked; the motors gave at most the limit) and ``exceeded``
    (:func:`~robustrack.tracking.actuators.effort_exceeded`'s rows)."""
    info = result.info["actuators"] or {}
    peak = result.metrics.max_abs_tau_demand_per_actuator if result.metrics is not None else None
    return {"joints": list(pb.nominal.coordinates), "limit": [float(v) for v in effort_limits(pb)],
            "peak": peak, "exceeded": [dict(r) for r in info.get("exceeded") or ()]}


def _compensator_name(typed: str, compensator) -> str:
    """The compensator as ``robustrack run`` names it: the ``compensator.type`` typed, or for a python
    scenario that keeps its factory's ("problem"), the compensator's own name."""
    if typed != "problem":
        return typed
    return "none" if compensator is None else getattr(compensator, "name", type(compensator).__name__)


def run_tracking(scenario, *, progress=None, logs=None):
    """Simulate a tracking scenario; return ``(TrackingResult, summary)``.

    ``summary`` is the JSON document of ``robustrack run`` for tracking scenarios;
    ``progress(t, t_end)`` is passed to :func:`simulate_tracking`.

    Parameters
    ----------
    scenario : Scenario
        A tracking scenario; its ``[simulation]`` table gives ``uncompensated``,
        ``n_points``, ``method``, ``rtol`` and ``atol``.
    progress : callable, optional
        ``progress(t, t_end)`` (keyword-only), passed on to :func:`simulate_tracking`.
    logs : dict, optional
        Filled with the runs beside robustrack's that are not JSON (keyword-only): ``"mujoco"``, the
        :class:`~robustrack.loop.mujoco.MujocoRun` of ``actual.engine = "mujoco"`` (saved by ``run --save``).

    Returns
    -------
    result : TrackingResult
        The run; ``result.run_info.scenario`` holds the scenario.
    summary : dict
        JSON-ready: ``scenario``, ``compensator``, ``control_function``,
        ``sample_period``, ``metrics`` (with actuators also their saturation, commands and
        realizability margin), ``actuators`` (B, τ_max, fully actuated; None without),
        ``bounds`` (``e``, ``edot``, ``held``, ``assumptions_held``, ``region``,
        ``formula``, ``assumptions``, ``gamma``, ``note``: why ``held`` is None — a sampled
        discontinuous law, an underactuated B, saturation after the transient — else None
        or a remark),
        ``solver`` (the controlled system's solve), ``solvers`` (nominal, controlled and
        uncompensated solves: statistics and backend), ``units`` (the unit of every
        metric and bound, :func:`robustrack.scenarios.units.tracking_units`; also in
        ``result.run_info.units``) and ``config``.
    """
    pb: TrackingProblem = scenario.build()
    from ..tracking.assess import LeastSquaresMotion, least_squares_note

    from .units import tracking_units

    units = tracking_units(pb.nominal, None if pb.residual is None else pb.residual.unit)
    try:
        result = pb.simulate(progress=progress)
    except SolverError as exc:
        from .actual_forces import forces_said

        said = forces_said(scenario.config)
        if "could not start" not in str(exc) or not said:
            raise
        raise SolverError(f"{exc} This scenario's actual plant carries {said}: give them in the plant's units, of "
                          "its scale.", exc.t_reached, exc.partial) from None
    result = result.with_info(scenario=scenario.to_dict(), units=units)
    note = least_squares_note(pb.nominal, pb.constraint, result.q, result.qd, result.t)
    if note:
        warnings.warn(f"{scenario.name} (nominal system): {note}", LeastSquaresMotion, stacklevel=2)
    bounds = result.info["bounds"] or {}
    summary = {
        "scenario": scenario.name,
        "compensator": _compensator_name(scenario.config["compensator"]["type"], pb.compensator),
        "control_function": getattr(getattr(pb.compensator, "f", None), "name", None),
        "sample_period": pb.sample_period,
        "metrics": _summary_metrics(result.metrics, pb.actuators is not None),
        "actuators": result.info["actuators"],
        **({"effort": _effort(pb, result)} if effort_limits(pb) is not None else {}),
        "bounds": {"e": bounds.get("e"), "edot": bounds.get("edot"), "held": result.metrics.get("bounds_held"),
                   "assumptions_held": result.metrics.get("assumptions_held"),
                   "region": bounds.get("region"), "formula": bounds.get("formula"),
                   "assumptions": bounds.get("assumptions"), "gamma": bounds.get("gamma"),
                   "note": result.info.get("bounds_note"),
                   **{k: bounds[k] for k in ("coverage", "terms") if bounds.get(k)}},
        **({} if pb.sensor is None else {"sensor": pb.sensor.to_dict()}),
        **({"uncompensated_limit": result.info["uncompensated_limit"]} if result.info.get("uncompensated_limit")
           else {}),
        "power": result.power(pb.nominal).summary(),  # of Qᶜ and Qᵘ: work, workless share (plants.power)
        "contact": result.contact_peaks(),  # frame constraints' forces beside Qᶜ (max |·| per column)
        "solver": result.solver,
        "solvers": result.info["solvers"],
        "units": units,
        "config": scenario.config,
    }
    engine = scenario.config.get("actual", {}).get("engine", "robustrack")
    if engine == "mujoco":
        summary["mujoco"], mj = _mujoco_beside(pb, result, scenario.config["actual"])
        if logs is not None and mj is not None:
            logs["mujoco"] = mj
    return result, summary


def _mujoco_beside(pb, result, actual: dict) -> tuple:
    """The same loop against MuJoCo as the actual plant (:func:`robustrack.loop.mujoco.run_mujoco`), beside
    robustrack's run: its peaks, the bound check, the difference of max‖e‖∞ and the joint limits reached, and the
    run itself. (None, None) and a notice where MuJoCo is not installed."""
    from ..loop.mujoco import mujoco_available, run_mujoco

    if not mujoco_available():
        from ..errors import RobustrackNotice

        warnings.warn("actual.engine = \"mujoco\": MuJoCo is not installed (pip install 'robustrack[mujoco]'); "
                      "the run is robustrack's alone.", RobustrackNotice, stacklevel=3)
        return None, None
    ctrl = pb.controller(period=pb.sample_period)  # its nominal run also serves MuJoCo's bounds
    mj = run_mujoco(pb, controller=ctrl, substeps=actual["substeps"], integrator=actual["integrator"])
    after = float(pb.t_span[0] + result.metrics.transient_s)
    b = _held_torque_bounds(pb, ctrl.run, result.info["bounds"] or {})
    e_after = mj.max_abs_e(after)
    edot_after = float(np.abs(mj.edot[mj.t >= after]).max()) if np.any(mj.t >= after) else float("nan")
    held = (None if not b or not mj.success else
            bool(e_after <= b.get("e", np.inf) and edot_after <= b.get("edot", np.inf)))
    limits = effort_limits(pb)
    K = mj.tau.shape[0]
    saturated = (None if limits is None or mj.demand is None else
                 int(np.count_nonzero(np.any(np.abs(mj.demand) > limits, axis=1))))
    if saturated and np.any(np.any(np.abs(mj.demand) > limits, axis=1) & (mj.t[:K] >= after)):
        held = None  # the motors clipped τ after the transient: the bound assumes the full Qᵘ = M u
    return {"success": mj.success, "message": mj.message, "max_abs_e": mj.max_abs_e(),
            "max_abs_e_after_transient": e_after, "max_abs_edot_after_transient": edot_after,
            "bounds_held": held, "robustrack_max_abs_e": result.metrics.max_abs_e,
            "difference_max_abs_e": abs(mj.max_abs_e() - result.metrics.max_abs_e) if mj.success else None,
            "max_abs_tau": float(np.abs(mj.tau).max()) if mj.tau.size else None,
            "limits_hit": [[t, j] for t, j in mj.limits_hit], "substeps": actual["substeps"],
            "saturated_samples": saturated, "bound_e": b.get("e"), "bound_edot": b.get("edot"),
            "coverage": b.get("coverage"), "integrator": actual["integrator"]}, mj


def _held_torque_bounds(pb, run, own: dict) -> dict:
    """The bounds of MuJoCo's loop, which holds the whole τ (:class:`~robustrack.loop.mujoco.MujocoProblem`,
    docs/theory/sensing.md "A loop that holds τ"); robustrack's own where the problem has no sampled bound."""
    from ..loop.mujoco import MujocoProblem

    if not own or not own.get("coverage"):
        return own
    try:
        bounds = MujocoProblem.of(pb).promised_bounds(run)
    except ParameterError:  # a law MuJoCo's campaigns refuse (GD with K_i > 0): judged against robustrack's bound
        return own
    return bounds.to_dict() if bounds is not None else own
