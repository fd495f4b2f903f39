"""The ``[actual]`` table's friction and ``[actual.disturbance]``: forces the actual plant has and the model leaves out.

A scenario of the ``urdf``, ``python``, ``triple-pendulum-tracking`` or ``duffing-tracking`` kind reads
(docs/guide/uncertainty.md)::

    [actual]
    viscous = [2.0, 2.0, 1.0, 0.5, 0.5, 0.5]    # b_i, N·m·s/rad: one number for every joint, or one per joint
    coulomb = [3.0, 3.0, 2.0, 1.0, 1.0, 1.0]    # F_c,i, N·m (tanh-smoothed)
    coulomb_width = 0.01                        # v_s, rad/s: the velocity over which the Coulomb force turns
    friction_spread = 0.5                       # each coefficient ±50 % (uniform) in montecarlo and gamma

    [actual.disturbance]
    kind = "noise"          # "none" (the default: no disturbance, the other keys ignored) | "step" | "sinusoid" |
                            # "noise" (seeded band-limited)
    amplitude = 2.0         # D, N·m: ‖d‖∞ ≤ D (one number for every joint, or one per joint)
    frequency = 5.0         # rad/s: the sinusoid's ω, the noise's cutoff
    start = 0.0             # s: when the step switches on
    seed = 0                # the noise's frequencies, phases and weights
    components = 16         # sinusoids per joint in the noise

The forces are :class:`~robustrack.uncertainty.ActualForces`: the run's actual plant has them at the given
coefficients; a campaign's sample i and the Γ Monte Carlo draw each coefficient ``c (1 + spread U(−1, 1))``
from ``default_rng([seed, i])``; a worst-case search holds them at the given values. The nominal model has
none of them, so they enter δQ, Γ and the certificate (``robustrack certify``: the friction over its box, the
disturbance by its bound; :func:`robustrack.scenarios.certify.scenario_force_box`). Checked at load (values, the
kind, the keys each kind takes) and at build (one number per joint).

Each coefficient is also a named number, ``viscous_<joint>`` and ``coulomb_<joint>``
(:func:`friction_parameters`): an ``[uncertainty.parameters.viscous_<joint>]`` table makes it a named
uncertain parameter with its own range and distribution (nominal: the value given here), drawn per sample
with the plant's parameters, searched by ``worst-case`` and shifted by ``uncertainty.dm`` in ``run``
(``friction_spread`` must then be 0).
"""

from __future__ import annotations

from ..errors import ParameterError, ScenarioError
from .config import PerJoint, Table

__all__ = ["FORCES_SCHEMA", "DISTURBANCE_KINDS", "check_forces", "scenario_forces", "check_force_sizes",
           "friction_parameters", "scenario_friction", "run_forces"]

#: The ``[actual.disturbance]`` kinds and the keys each uses (beyond ``kind`` and ``amplitude``).
DISTURBANCE_KINDS = {"none": (), "step": ("start",), "sinusoid": ("frequency",),
                     "noise": ("frequency", "seed", "components")}

#: The ``[actual]`` keys of the forces (module docstring), merged into a kind's ``[actual]`` schema.
FORCES_SCHEMA = {
    "viscous": PerJoint(0.0), "coulomb": PerJoint(0.0), "coulomb_width": 0.01, "friction_spread": 0.0,
    "disturbance": Table({"kind": "none", "amplitude": PerJoint(0.0), "frequency": 0.0, "start": 0.0, "seed": 0,
                          "components": 16}),
}


def _values(v) -> list:
    return v if isinstance(v, list) else [v]


#: The largest friction coefficient or disturbance amplitude ``[actual]`` takes (N·m·s/rad, N·m, N): beyond it the
#: force's sum with the plant's own forces (order 1–1e3 in the units the scenarios use) keeps none of their digits
#: in double precision (16 significant digits), and the integrators' first step overflows.
MAX_MAGNITUDE = 1e15


def forces_said(cfg: dict) -> str:
    """``[actual]``'s friction and disturbance that are not zero, by key (```actual.viscous` = 2.0, …``), for a
    message that names them (a solver that could not start on them); "" when there are none."""
    a = cfg.get("actual") or {}
    d = a.get("disturbance") or {}
    keys = [("viscous", a.get("viscous", 0.0)), ("coulomb", a.get("coulomb", 0.0))]
    if d.get("kind", "none") != "none":
        keys.append(("disturbance.amplitude", d.get("amplitude", 0.0)))
    return ", ".join(f"`actual.{k}` = {v!r}" for k, v in keys if any(abs(x) > 0 for x in _values(v)))


def check_forces(cfg: dict, where) -> None:
    """Refuse ``[actual]`` forces no run can use (load time): negative coefficients, a width ≤ 0, a spread
    outside [0, 1], an unknown disturbance kind or a key its kind does not use, a missing frequency.

    Parameters
    ----------
    cfg : dict
        The validated configuration (its ``actual`` section holds :data:`FORCES_SCHEMA`'s keys).
    where : callable
        ``where(section, key)``: how messages name a key (with its line).

    Raises
    ------
    ScenarioError
        Naming the key and the rule.
    """
    a = cfg["actual"]
    for key in ("viscous", "coulomb"):
        if any(v < 0 for v in _values(a[key])):
            raise ScenarioError(f"{where('actual', key)} must be >= 0 (friction opposes the motion); got {a[key]!r}.")
    for key, values in (("viscous", a["viscous"]), ("coulomb", a["coulomb"]),
                        ("disturbance.amplitude", a["disturbance"]["amplitude"])):
        if any(abs(v) > MAX_MAGNITUDE for v in _values(values)):
            raise ScenarioError(f"{where('actual', key)} = {values!r} is beyond {MAX_MAGNITUDE:g}: a force that "
                                "large leaves none of the plant's own forces in double precision (the run cannot "
                                "follow it); give it in the plant's units (N·m·s/rad, N·m), of the plant's scale.")
    if not a["coulomb_width"] > 0:
        raise ScenarioError(f"{where('actual', 'coulomb_width')} must be > 0 (rad/s, the velocity over which the "
                            f"Coulomb force turns; e.g. 0.01); got {a['coulomb_width']!r}.")
    if not 0 <= a["friction_spread"] <= 1:
        raise ScenarioError(f"{where('actual', 'friction_spread')} must be in [0, 1] (0.5 = ±50 % of each friction "
                            f"coefficient); got {a['friction_spread']!r}.")
    d = a["disturbance"]
    kind = d["kind"]
    if kind not in DISTURBANCE_KINDS:
        raise ScenarioError(f"{where('actual', 'disturbance.kind')} must be one of {list(DISTURBANCE_KINDS)}; got "
                            f"{kind!r}.")
    defaults = FORCES_SCHEMA["disturbance"]
    for key in ("frequency", "start", "seed", "components"):
        if kind != "none" and key not in DISTURBANCE_KINDS[kind] and d[key] != defaults[key]:
            raise ScenarioError(f"{where('actual', f'disturbance.{key}')}: a disturbance of kind {kind!r} does not use "
                                f"it (it takes {['amplitude', *DISTURBANCE_KINDS[kind]]}); remove it.")
    if kind in ("sinusoid", "noise") and not d["frequency"] > 0:
        raise ScenarioError(f"{where('actual', 'disturbance.frequency')} must be > 0 (rad/s: the sinusoid's ω, the "
                            f"noise's cutoff) for a disturbance of kind {kind!r}; got {d['frequency']!r}.")
    if not isinstance(d["seed"], int) or d["seed"] < 0:
        raise ScenarioError(f"{where('actual', 'disturbance.seed')} must be an integer >= 0; got {d['seed']!r}.")
    if not isinstance(d["components"], int) or d["components"] < 1:
        raise ScenarioError(f"{where('actual', 'disturbance.components')} must be an integer >= 1; got "
                            f"{d['components']!r}.")
    if a.get("engine", "robustrack") != "robustrack" and scenario_forces(cfg) is not None:
        raise ScenarioError(f"{where('actual', 'engine')}: MuJoCo's actual plant does not take robustrack's friction "
                            "and disturbance (`actual.viscous`, `coulomb`, `disturbance`); use engine = "
                            "\"robustrack\" or leave the forces out.")


def check_force_sizes(cfg: dict, n: int, coordinates, where) -> None:
    """Refuse per-joint lists that are not one number per joint (build time, when the robot's joints are known).

    Parameters
    ----------
    cfg : dict
        The validated configuration.
    n : int
        The number of joints.
    coordinates : sequence of str
        Their names, for the message.
    where : callable
        ``where(section, key)``.

    Raises
    ------
    ScenarioError
    """
    a = cfg["actual"]
    for key, value in (("viscous", a["viscous"]), ("coulomb", a["coulomb"]),
                       ("disturbance.amplitude", a["disturbance"]["amplitude"])):
        if isinstance(value, list) and len(value) != n:
            raise ScenarioError(f"{where('actual', key)} must be one number, or {n} numbers (one per joint "
                                f"{list(coordinates)}); got {len(value)}: {value!r}.")


def friction_parameters(cfg: dict, coordinates) -> dict:
    """The friction coefficients of ``[actual]`` as named numbers: ``{viscous_<joint>: b, coulomb_<joint>: F_c}``.

    Parameters
    ----------
    cfg : dict
        A validated configuration (a kind without the ``[actual]`` friction keys has none: {}).
    coordinates : sequence of str
        The joints' names (the plant's coordinates).

    Returns
    -------
    dict of str to float
        One entry per joint and coefficient (a single number given for every joint is each joint's), in the
        order viscous then Coulomb.
    """
    a = cfg.get("actual") or {}
    if "viscous" not in a:
        return {}
    out = {}
    for key in ("viscous", "coulomb"):
        values = _values(a[key])
        values = values * len(coordinates) if len(values) == 1 else values
        out.update({f"{key}_{c}": float(v) for c, v in zip(coordinates, values)})
    return out


def scenario_friction(cfg: dict, coordinates):
    """``[actual]``'s joint friction with one coefficient per joint (zeros included) and its ``coulomb_width``, or
    None for a kind without the friction keys.

    Parameters
    ----------
    cfg : dict
        A validated configuration.
    coordinates : sequence of str
        The joints' names.

    Returns
    -------
    JointFriction or None
    """
    from ..uncertainty import JointFriction

    given = friction_parameters(cfg, coordinates)
    if not given:
        return None
    return JointFriction([given[f"viscous_{c}"] for c in coordinates], [given[f"coulomb_{c}"] for c in coordinates],
                         cfg["actual"]["coulomb_width"])


def _named_friction(cfg: dict, coordinates) -> tuple:
    """The named uncertain parameters (``[uncertainty.parameters.NAME]`` tables) that are friction coefficients."""
    tables = (cfg.get("uncertainty") or {}).get("parameters")
    if not isinstance(tables, dict) or coordinates is None:
        return ()
    given = friction_parameters(cfg, coordinates)
    return tuple(name for name in tables if name in given)


def scenario_forces(cfg: dict, coordinates=None):
    """The :class:`~robustrack.uncertainty.ActualForces` of a configuration's ``[actual]`` table, or None.

    Parameters
    ----------
    cfg : dict
        A validated configuration (a kind without these keys has none).
    coordinates : sequence of str, optional
        The plant's joints. Given, and with friction coefficients among the named uncertain parameters, the
        forces name their coefficients (``ActualForces(coordinates=...)``: a campaign's set varies them), even
        where ``[actual]`` gives them as 0.

    Returns
    -------
    ActualForces or None
        None when there is no friction (given or named) and no disturbance.
    """
    a = cfg.get("actual") or {}
    if "viscous" not in a:
        return None
    from ..uncertainty import (ActualForces, BandLimitedDisturbance, JointFriction, SinusoidalDisturbance,
                               StepDisturbance)

    named = _named_friction(cfg, coordinates)
    has_friction = any(v != 0 for v in _values(a["viscous"]) + _values(a["coulomb"]))
    d = a["disturbance"]
    try:
        if named:  # one coefficient per joint, each a named number
            friction = scenario_friction(cfg, coordinates)
        else:
            friction = JointFriction(a["viscous"], a["coulomb"], a["coulomb_width"]) if has_friction else None
        disturbance = {"none": lambda: None,
                       "step": lambda: StepDisturbance(d["amplitude"], d["start"]),
                       "sinusoid": lambda: SinusoidalDisturbance(d["amplitude"], d["frequency"]),
                       "noise": lambda: BandLimitedDisturbance(d["amplitude"], d["frequency"], d["seed"],
                                                               d["components"])}[d["kind"]]()
        if friction is None and disturbance is None:
            return None
        if named and a["friction_spread"]:
            raise ScenarioError(f"`actual.friction_spread` = {a['friction_spread']:g} draws every friction coefficient, "
                                f"but `uncertainty.parameters.{named[0]}` names one with its own range: set "
                                "friction_spread = 0, or remove the friction tables.")
        return ActualForces(friction, a["friction_spread"], disturbance, coordinates=tuple(coordinates) if named else ())
    except ParameterError as exc:  # the load-time check refuses these first; a configuration built in Python
        raise ScenarioError(f"`actual`: {exc}") from None


def run_forces(cfg: dict, coordinates):
    """The δQ of a scenario's run: ``[actual]``'s forces, with the named friction coefficients shifted by their
    entries of ``uncertainty.dm`` (one per named parameter, in the tables' order), or None.

    Parameters
    ----------
    cfg : dict
        A validated configuration.
    coordinates : sequence of str
        The plant's joints.

    Returns
    -------
    Disturbance or None
    """
    forces = scenario_forces(cfg, coordinates)
    if forces is None:
        return None
    unc = cfg.get("uncertainty") or {}
    dm, tables = unc.get("dm") or [], unc.get("parameters")
    if not dm or not forces.coordinates or not isinstance(tables, dict):
        return forces.given()
    given = forces.parameters
    try:
        return forces.at({name: given[name] + float(d) for name, d in zip(tables, dm) if name in given})
    except ParameterError as exc:  # e.g. a negative coefficient
        raise ScenarioError(f"`uncertainty.dm` = {dm} on the friction coefficients: {exc}") from None
