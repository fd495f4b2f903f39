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

The ``[compensator]`` table is the union of the compensators' parameters; each
compensator takes the keys it uses (``gamma`` is Γ′ for GSS, Γ for GD, and the
reporting Γ for GD-bar; ``Kp``, ``Kd_ct`` for computed torque; ``lqr_q`` (weights on
e², ė²) and ``lqr_r`` for LQR, designed on ë = u). ``sample_period = 0`` means continuous control; a
discontinuous f (sign, and the classical presets) then runs with a zero-order
hold of period ``sign_sample_period``.

The ``[actuators]`` table (every tracking kind) gives the machine's actuators
(:mod:`robustrack.tracking.actuators`): ``B``, the input matrix as rows (n rows, one
column per actuator, independent columns; ``[]``: none — Qᶜ and Qᵘ act as generalized
forces in every direction), and ``tau_max``, the limits (``[]``: unlimited; one number
for all, or one per actuator; ``inf`` allowed). Both are checked when the scenario is
loaded, with the key's name and line in the message.
"""

from __future__ import annotations

import warnings

import numpy as np

from ..campaigns.tuning import TUNABLE
from ..controllers import COMPENSATORS, CONTROL_FUNCTIONS, control_function, make_compensator
from ..errors import ControlFunctionError, ParameterError, ScenarioError
from ..plants import NLinkPendulum, pendulum_energy_constraint
from ..plants.examples import CoupledDuffing, coupled_duffing_constraint
from ..plants.units import coordinate_units
from ..tracking.defaults import DEFAULT_TRACKING_METHOD
from ..tracking.problem import ResidualInfo, TrackingProblem, check_compensator_force
from .kinds import duffing_start, plant_defaults
from .config import Limits, Rows
from .registry import ScenarioKind, choice_key, register_kind

__all__ = ["build_compensator", "compensation", "compensator_keys", "COMPENSATOR_DEFAULTS",
           "COMPENSATOR_CHOICES", "TUNABLE_TYPES", "ACTUATOR_DEFAULTS", "run_tracking", "actuators_check"]

#: The [actuators] table: none (Qᶜ and Qᵘ act in every direction), no limits (inf: unlimited).
ACTUATOR_DEFAULTS = {"B": Rows(), "tau_max": Limits()}

#: The [compensator] table: W's settings (7.3, 8.2.43, 8.3.24).
COMPENSATOR_DEFAULTS = {
    "type": "gss",
    "f": "signed-quadratic",
    "eps": 1e-2,
    "alpha_c": 2.0,
    "p": 2.0,
    "gamma": 100.0,
    "K": 10.0,
    "beta0": 10.0,
    "alpha0": 0.5,
    "sigma": 1.0,
    "Ki": 0.0,
    "Kd": 3.0,
    "rho0": 1.0,
    "alpha_eps": 2.0,
    "k": 10.0,
    "n": 1.0,
    "Kp": 100.0,
    "Kd_ct": 20.0,
    "lqr_q": [100.0, 1.0],
    "lqr_r": 1e-2,
    "sample_period": 0.0,
    "sign_sample_period": 1e-3,
}

# which [compensator] keys each compensator takes (scenario key -> constructor argument)
_ARGS = {
    "gss": {"K": "K", "gamma": "gamma_prime", "beta0": "beta0", "alpha0": "alpha0", "sigma": "sigma"},
    "gd": {"Ki": "Ki", "Kd": "Kd", "gamma": "gamma", "rho0": "rho0", "alpha0": "alpha0", "sigma": "sigma",
           "alpha_eps": "alpha_eps"},
    "gdbar": {"k": "k", "n": "n", "sigma": "sigma", "alpha0": "alpha0"},
}
_ARGS["smc"], _ARGS["leitmann-corless"] = _ARGS["gss"], _ARGS["gd"]
_ARGS["lyapunov-redesign"] = {k: v for k, v in _ARGS["gdbar"].items() if k != "n"}
_ARGS["computed-torque"] = {"Kp": "Kp", "Kd_ct": "Kd"}
_ARGS["lqr"] = {"lqr_q": "Q", "lqr_r": "R"}
_FIXED_F = {"smc", "leitmann-corless", "lyapunov-redesign", "computed-torque", "lqr"}  # take no `f`

#: The values `compensator.type` and `compensator.f` accept (every tracking kind's ``choices``, refused
#: otherwise at load; the CLI's --compensator choices and --f list): the registered compensators and
#: "none" (:data:`robustrack.controllers.COMPENSATORS`), the control functions
#: (:data:`robustrack.controllers.CONTROL_FUNCTIONS`).
COMPENSATOR_CHOICES = {"compensator.type": ("none", *COMPENSATORS), "compensator.f": tuple(CONTROL_FUNCTIONS)}

#: The compensators `robustrack tune` can tune (:data:`robustrack.campaigns.tuning.TUNABLE`).
TUNABLE_TYPES = tuple(name for name in COMPENSATORS if name in TUNABLE)


def build_compensator(c: dict):
    """The compensator of a ``[compensator]`` table (None for type "none").

    Parameters
    ----------
    c : dict
        A complete ``[compensator]`` table (keys of :data:`COMPENSATOR_DEFAULTS`).
        ``type`` (case-insensitive) picks the compensator, which takes only its own
        keys (``gamma`` is Γ′ for GSS, Γ for GD, the reporting Γ for GD-bar); for the
        compensators that take a control function, ``f``, ``eps``, ``alpha_c`` and
        (signed-power) ``p`` build it.

    Returns
    -------
    Compensator or None
        Built by :func:`robustrack.controllers.make_compensator`; None for ``"none"``.

    Raises
    ------
    ScenarioError
        A ``type`` not in :data:`COMPENSATOR_CHOICES` (the valid ones listed).
    """
    kind = choice_key(c["type"])
    if kind == "none":
        return None
    if kind not in _ARGS:
        raise ScenarioError(f"`compensator.type` must be one of {list(COMPENSATOR_CHOICES['compensator.type'])}; "
                            f"got {c['type']!r}.")
    params = {arg: c[key] for key, arg in _ARGS[kind].items()}  # scenario key -> constructor argument
    try:
        if kind not in _FIXED_F:
            shape = {"signed-quadratic": {"alpha_c": c["alpha_c"]}, "cubic": {"alpha_c": c["alpha_c"]},
                     "signed-power": {"alpha_c": c["alpha_c"], "p": c["p"]}}.get(choice_key(c["f"]), {})
            params["f"] = control_function(c["f"], eps=c["eps"], **shape)
        return make_compensator(kind, **params)
    except (ParameterError, ControlFunctionError) as exc:
        raise ScenarioError(in_key_names(exc, kind)) from None


def in_key_names(exc, kind: str) -> str:
    """An error message about a compensator's arguments, in the ``[compensator]`` keys the user typed.

    The constructors name their arguments (``gamma_prime``, ``Kd``, ``R``); a scenario's user
    typed ``compensator.gamma``, ``compensator.Kd_ct``, ``compensator.lqr_r``.

    Parameters
    ----------
    exc : Exception
        The error raised by a compensator or control-function constructor (or the force check).
    kind : str
        The compensator's registry name (its ``compensator.type``).

    Returns
    -------
    str
        The message with each backticked argument name replaced by its key.
    """
    names = {arg: f"compensator.{key}" for arg, key in _key_names(kind).items()}
    message = str(exc)
    for arg, key in names.items():
        message = message.replace(f"`{arg}`", f"`{key}`")
    return message


def compensator_keys(compensator) -> dict:
    """The ``[compensator]`` key of each parameter of a compensator built from a scenario.

    Parameters
    ----------
    compensator : Compensator
        Built by :func:`build_compensator` (its registry ``name`` is used).

    Returns
    -------
    dict
        Constructor argument (e.g. ``gamma_prime``) → scenario key (``gamma``), plus
        ``eps``, ``alpha_c``, ``p`` for the laws that take a control function; empty for
        a compensator no scenario builds.
    """
    return _key_names(getattr(compensator, "name", ""))


def _key_names(kind: str) -> dict:
    """Constructor argument → ``[compensator]`` key of a compensator kind (with ε, α_c, p where it takes f)."""
    keys = {arg: key for key, arg in _ARGS.get(kind, {}).items()}
    if kind in _ARGS and kind not in _FIXED_F:
        keys.update({"eps": "eps", "alpha_c": "alpha_c", "p": "p"})
    return keys


def _build_triple_pendulum(cfg) -> TrackingProblem:
    p = cfg["plant"]
    nominal = NLinkPendulum(m=tuple(p["m"]), L=tuple(p["L"]), g=p["g"])
    m_actual = np.asarray(p["m"]) + np.asarray(cfg["uncertainty"]["dm"])
    if np.any(m_actual <= 0):
        raise ScenarioError(f"`uncertainty.dm` makes an actual mass ≤ 0: m + δm = {m_actual.tolist()}.")
    actual = nominal.replace(m=tuple(m_actual))
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
                           actual=actual, **compensation(cfg["compensator"], nominal.n, sim["t_end"]),
                           transient=None if sim["transient"] < 0 else sim["transient"],
                           residual=residual, actuators=_actuators(cfg["actuators"]),
                           uncompensated=sim["uncompensated"], n_points=sim["n_points"], method=sim["method"],
                           rtol=sim["rtol"], atol=sim["atol"])


def compensation(c: dict, n: int, t_end: float) -> dict:
    """The :class:`~robustrack.tracking.problem.TrackingProblem` fields a ``[compensator]`` table sets.

    Parameters
    ----------
    c : dict
        A complete ``[compensator]`` table (:data:`COMPENSATOR_DEFAULTS`'s keys).
    n : int
        Coordinates of the plant (the compensator's force must have n entries).
    t_end : float
        The horizon's end (a hold period must fit in it).

    Returns
    -------
    dict
        ``compensator`` (:func:`build_compensator`), ``sample_period`` (``sample_period``, or for a
        discontinuous f without one, ``sign_sample_period``; None: continuous) and ``gamma``.

    Raises
    ------
    ScenarioError
        A value the compensator or the hold refuses, named by its ``compensator.KEY``.
    """
    from ..tracking.integrate import check_hold_intervals  # scipy.integrate: not at import (list, show

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
    return {"compensator": comp, "sample_period": h, "gamma": c["gamma"]}


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


register_kind(ScenarioKind(
    "triple-pendulum-tracking",
    {"plant": {"m": [1.0, 2.0, 3.0], "L": [1.0, 1.5, 2.0], "g": 9.81},
     "constraint": {"enabled": True, "gain": 0.02},
     "initial": {"q": [1.0, 0.0, 0.0], "qd": [0.001, 0.0, 0.0]},
     "uncertainty": {"dm": [0.1, -0.2, 0.3]},
     "compensator": dict(COMPENSATOR_DEFAULTS),
     "actuators": dict(ACTUATOR_DEFAULTS),
     "simulation": {"t_end": 10.0, "method": DEFAULT_TRACKING_METHOD, "rtol": 1e-8, "atol": 1e-12,
                    "n_points": 1001, "uncompensated": True, "transient": -1.0}},
    _build_triple_pendulum,
    "Triple pendulum under the energy constraint; actual masses m + δm; a compensator makes the "
    "actual system follow the nominal one (W §7.3, §8.2.5, §8.3.4). transient < 0: automatic. "
    "[actuators] B (rows), tau_max: the forces through actuators (default none: every direction).",
    tracking=True,
    check=actuators_check(3),
    choices=COMPENSATOR_CHOICES,
    tunable=TUNABLE_TYPES,
))


def _build_duffing_tracking(cfg) -> TrackingProblem:
    p, c = cfg["plant"], cfg["constraint"]
    nominal = CoupledDuffing(**p)
    dm = cfg["uncertainty"]["dm"]
    m_actual = (p["m1"] + dm[0], p["m2"] + dm[1])
    if min(m_actual) <= 0:
        raise ScenarioError(f"`uncertainty.dm` makes an actual mass ≤ 0: (m1, m2) + δm = {list(m_actual)}.")
    actual = nominal.replace(m1=m_actual[0], m2=m_actual[1])
    constraint = coupled_duffing_constraint(nominal, alpha=c["alpha"], amplitude=c["amplitude"], omega=c["omega"])
    residual = ResidualInfo("φ", coordinate_units(nominal).q,  # a difference of positions
                            "Tracking constraint residual φ = x₁ − x₂ − A e^(−αt) sin ωt")
    return _tracking_problem(cfg, nominal, actual, constraint, *duffing_start(cfg), residual)


register_kind(ScenarioKind(
    "duffing-tracking",
    {"plant": plant_defaults(CoupledDuffing),
     "constraint": {"alpha": 0.4, "amplitude": 1.0, "omega": 2 * np.pi},
     "initial": {"q": [1.0, 1.0], "x2_dot": 2.0},
     "uncertainty": {"dm": [0.2, -0.1]},
     "compensator": {**COMPENSATOR_DEFAULTS, "gamma": 10.0},
     "actuators": dict(ACTUATOR_DEFAULTS),
     "simulation": {"t_end": 10.0, "method": DEFAULT_TRACKING_METHOD, "rtol": 1e-8, "atol": 1e-12,
                    "n_points": 1001, "uncompensated": True, "transient": -1.0}},
    _build_duffing_tracking,
    "Coupled Duffing oscillator (KU ex. 3) whose nominal controller forces x1 − x2 = A e^{−αt} sin ωt; "
    "actual masses m + δm; a compensator makes the actual system follow the nominal one. "
    "ẋ1(0) follows from the constraint. transient < 0: automatic.",
    tracking=True,
    uncertain=("m1", "m2"),
    check=actuators_check(2),
    choices=COMPENSATOR_CHOICES,
    tunable=TUNABLE_TYPES,
))


#: metrics that only an actuated run has (left out of an unactuated run's summary)
_ACTUATED_METRICS = ("saturation_fraction", "first_saturation_time", "first_saturation_after_transient",
                     "max_abs_tau_per_actuator", "min_realizability_margin")


def _summary_metrics(metrics, actuated: bool):
    metrics = metrics if actuated else {k: v for k, v in metrics.items() if k not in _ACTUATED_METRICS}
    # GD's third assumption (W 8.2.17): measured for GD only, left out of the other compensators' summaries
    return {k: v for k, v in metrics.items() if not (k == "max_norm_P" and v is None)}


def _compensator_name(typed: str, compensator) -> str:
    """The compensator as ``robustrack run`` names it: the ``compensator.type`` typed, or for a python
    scenario that keeps its factory's ("problem"), the compensator's own name."""
    if typed != "problem":
        return typed
    return "none" if compensator is None else getattr(compensator, "name", type(compensator).__name__)


def run_tracking(scenario, *, progress=None):
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
    result = pb.simulate(progress=progress).with_info(scenario=scenario.to_dict(), units=units)
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
        "bounds": {"e": bounds.get("e"), "edot": bounds.get("edot"), "held": result.metrics.get("bounds_held"),
                   "assumptions_held": result.metrics.get("assumptions_held"),
                   "region": bounds.get("region"), "formula": bounds.get("formula"),
                   "assumptions": bounds.get("assumptions"), "gamma": bounds.get("gamma"),
                   "note": result.info.get("bounds_note")},
        "power": result.power(pb.nominal).summary(),  # of Qᶜ and Qᵘ: work, workless share (tracking.power)
        "contact": result.contact_peaks(),  # frame constraints' forces beside Qᶜ (max |·| per column)
        "solver": result.solver,
        "solvers": result.info["solvers"],
        "units": units,
        "config": scenario.config,
    }
    return result, summary
