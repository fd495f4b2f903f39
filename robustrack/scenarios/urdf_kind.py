"""Scenarios of a robot from its URDF: ``kind = "urdf"`` tracks a joint-space reference (Pinocchio).

A scenario file of this kind reads::

    [scenario]
    name = "my-robot"
    kind = "urdf"

    [plant]
    urdf = "robot.urdf"           # a URDF file (relative: beside the scenario file) …
    robot = ""                    # … or an example-robot-data robot: "ur3", "ur5", "ur10"
    payload_frame = ""            # the frame carrying the payload ("": the model's last frame)
    payload_mass = 2.0            # kg, a point mass …
    payload_com = [0.0, 0.0, 0.05]  # … at this point of payload_frame (m)
    locked = []                   # joints held (e.g. a gripper's fingers), at locked_at (default: neutral)
    locked_at = []                # one position per locked joint, or [] for Pinocchio's neutral ones

    [reference]                   # q_d(t) = home + amplitude (1 − cos(frequency t)), per joint
    home = [0.0, -1.2, 1.4, -1.5, -1.57, 0.0]   # rad (m for a prismatic joint): where it starts, at rest
    amplitude = [0.4, 0.3, 0.3, 0.4, 0.3, 0.5]
    frequency = [0.5, 0.7, 0.9, 0.6, 0.8, 1.0]  # rad/s

    [constraint]                  # φ̈ + 2ξω φ̇ + ω² φ = 0 with φ = q − q_d(t) (docs/theory/stabilization.md)
    xi = 1.0
    omega = 10.0

    [[constraint.frame]]          # … or frame constraints instead of the joint reference (any number of tables)
    frame = "tool0"               # a frame of the robot
    type = "plane"                # point | plane | line | orientation | pose | circle
    point = [0.5, 0.1, 0.3]       # m, world ([]: where the frame is at reference.home)
    normal = [0.0, 0.0, 1.0]      # plane: its normal; line: direction = [...]
    # orientation / pose: rotation = [[...], [...], [...]] ([]: as at reference.home)
    # circle: center = [...], radius = 0.1 (m), frequency = 1.0 (rad/s), phase = 0.0 (rad),
    #         axes = [[1, 0, 0], [0, 1, 0]] (the circle's plane: x_d = center + r (cos(ωt + phase) e1
    #         + sin(ωt + phase) e2), followed along e1 and e2 — pair it with a plane table)

    [constraint.posture]          # a redundant robot's free directions held (robustrack.posture): q̈_p =
    kp = 10.0                     # −kp (q − center) − kd q̇ in the requirement's null space; kp = kd = 0: none
    kd = 6.32                     # (1/s², 1/s); center = [] : the middle of each joint's range
    center = []

    [actual]                      # forces the model leaves out (scenarios/actual_forces.py): friction per joint
    viscous = 0.0                 # N·m·s/rad; coulomb = 0.0 (N·m), coulomb_width = 0.01 (rad/s),
    friction_spread = 0.0         # each coefficient ± this (relative) in montecarlo and gamma
    [actual.disturbance]          # kind = "none" | "step" | "sinusoid" | "noise", amplitude (N·m), frequency
    kind = "none"                 # (rad/s), start (s), seed, components

    [uncertainty]                 # the actual plant: these parameters + dm
    parameters = ["payload_mass"]
    dm = [0.4]

    [compensator] / [actuators] / [simulation]   # as the catalog's tracking kinds; without [actuators]
                                                 # (or B = I and no tau_max) a motor per joint at the
                                                 # URDF's effort limits: every run saturates there

The plant is :class:`~robustrack.plants.URDFPlant` (M by CRBA, Q from Pinocchio's nonlinear effects
and the URDF's joint damping and friction; its parameters ``m_<link>``, ``payload_mass``,
``payload_com``); the reference a :class:`~robustrack.requirements.JointTrajectory`, which starts at
rest at ``home`` (q_d(0) = home, q̇_d(0) = 0), so the initial state is
:func:`~robustrack.requirements.consistent_initial_state` of (home, 0) — home itself. With
``[[constraint.frame]]`` tables the requirement is their :class:`~robustrack.plants.FrameConstraint`
rows instead (stabilized by ``xi``, ``omega``; ``reference.home`` is then the guess the start is
projected from, and ``amplitude``/``frequency`` stay empty), and the run reports their contact forces. The actual plant
is the nominal one with ``uncertainty.parameters`` shifted by ``dm`` (as in the ``python`` kind,
:mod:`~robustrack.scenarios.parameter_shift`); campaigns and ``robustrack gamma`` perturb those
parameters (default ``payload_mass``).

A relative ``plant.urdf`` is found beside the scenario file and stored with its absolute path (the
configuration is complete on its own). Loading a scenario checks its keys and that the file (or the
example-robot-data robot) exists, without Pinocchio or sympy (``robustrack list`` and ``show`` start in a
blink); building it (``run`` and every command, before any time is spent) reads the robot with Pinocchio
(``pip install 'robustrack[robots]'``, said in one line when missing) and refuses what needs its joints —
``[reference]`` and ``[actuators]`` not one entry per joint, ``[uncertainty]`` parameters it lacks — naming
the key. The tracking loop is compiled (robustrack's rigid-body kernels over the robot as data,
:mod:`robustrack.compiled.rigid_body`); ``backend = "numpy"`` runs it on Pinocchio.
"""

from __future__ import annotations

import numpy as np

from ..errors import ConstraintError, InitialStateError, ParameterError, ScenarioError
from ..tracking.defaults import DEFAULT_TRACKING_METHOD
from .actual_forces import FORCES_SCHEMA, check_force_sizes, check_forces, friction_parameters, run_forces
from .config import Names, Rows, Table, Tables, resolve_file, validate
from .parameter_shift import check_parameter_shift, parameters_schema, shifted_plant
from .registry import ScenarioKind, register_kind
from .compensator_table import check_compensator, compensator_schema
from .declared_gamma import UNSET
from .tracking_kinds import (ACTUATOR_DEFAULTS, SENSOR_SCHEMA, COMPENSATOR_CHOICES, TUNABLE_TYPES, UPGRADE, _tracking_problem,
                             actuators_check, sensor_of)

__all__ = ["URDFKind", "URDF_SCHEMA", "FRAME_SCHEMA", "FRAME_TYPES"]

#: The keys of a ``[[constraint.frame]]`` table (module docstring).
FRAME_SCHEMA = {"frame": "", "type": "", "point": [], "normal": [], "direction": [], "rotation": Rows(),
                "center": [], "radius": 0.0, "frequency": 0.0, "phase": 0.0, "axes": Rows()}

#: Each frame type's keys: required, then optional.
FRAME_TYPES = {"point": ((), ("point",)), "plane": (("normal",), ("point",)), "line": (("direction",), ("point",)),
               "orientation": ((), ("rotation",)), "pose": ((), ("point", "rotation")),
               "circle": (("center", "radius", "frequency"), ("phase", "axes"))}

#: The schema of the ``urdf`` kind (module docstring); ``[reference]`` lists have one entry per joint.
URDF_SCHEMA = {
    "plant": {"urdf": "", "robot": "", "payload_frame": "", "payload_mass": 0.0, "payload_com": [0.0, 0.0, 0.0],
              "locked": Names(), "locked_at": []},
    "reference": {"home": [], "amplitude": [], "frequency": []},
    "constraint": {"xi": 1.0, "omega": 10.0, "frame": Tables(FRAME_SCHEMA),
                   # a posture task in the requirement's null space (robustrack.posture): off while kp = kd = 0
                   "posture": Table({"kp": 0.0, "kd": 0.0, "center": []})},
    "uncertainty": {"parameters": parameters_schema(["payload_mass"]), "dm": [], "gamma": UNSET},  # no default Γ
    "compensator": compensator_schema(),
    "sensor": dict(SENSOR_SCHEMA),
    # the actual plant's engine: robustrack's own integration, or MuJoCo's (docs/guide/robot.md)
    "actual": {"engine": "robustrack", "substeps": 10, "integrator": "RK4", **FORCES_SCHEMA},
    "actuators": dict(ACTUATOR_DEFAULTS),
    "simulation": {"t_end": 10.0, "method": DEFAULT_TRACKING_METHOD, "rtol": 1e-8, "atol": 1e-12,
                   "n_points": 1001, "uncompensated": True, "transient": -1.0},
}


#: The ``[actual]`` table's engines and MuJoCo's integrators.
ENGINES, INTEGRATORS = ("robustrack", "mujoco"), ("RK4", "Euler", "implicitfast", "implicit")


def _check_actual(cfg, where) -> None:
    """``[actual]``: a known engine and integrator, substeps ≥ 1, and MuJoCo's fixed-rate loop with a sample period."""
    a = cfg["actual"]
    if a["engine"] not in ENGINES:
        raise ScenarioError(f"{where('actual', 'engine')} must be one of {list(ENGINES)}; got {a['engine']!r}.")
    if a["integrator"] not in INTEGRATORS:
        raise ScenarioError(f"{where('actual', 'integrator')} must be one of {list(INTEGRATORS)}; got "
                            f"{a['integrator']!r}.")
    if not isinstance(a["substeps"], int) or a["substeps"] < 1:
        raise ScenarioError(f"{where('actual', 'substeps')} must be an integer >= 1; got {a['substeps']!r}.")
    if a["engine"] == "mujoco" and not cfg["compensator"]["sample_period"] > 0:
        raise ScenarioError(f"{where('compensator', 'sample_period')} must be > 0 with actual.engine = \"mujoco\": "
                            "MuJoCo runs the controller in a fixed-rate loop (e.g. 1e-3 s).")
    check_forces(cfg, where)


def _key(section, key):
    """How a message names a key when there is no file to point into (building from a configuration)."""
    return f"`{section}.{key}`"


def _source(cfg, where) -> str:
    """The URDF file of ``[plant]``: ``urdf`` (made absolute at load), or example-robot-data's ``robot`` (no Pinocchio)."""
    from ..plants.urdf import example_robot_urdf

    p = cfg["plant"]
    try:
        return p["urdf"] if p["urdf"] else example_robot_urdf(p["robot"])
    except ParameterError as exc:
        raise ScenarioError(f"{where('plant', 'robot')}: {exc}") from None


def _plant(cfg, where):
    """The nominal :class:`~robustrack.plants.URDFPlant` of ``[plant]`` (errors name the key)."""
    from ..plants.urdf import URDFPlant

    p = cfg["plant"]
    key = "urdf" if p["urdf"] else "robot"
    if p["locked_at"] and len(p["locked_at"]) != len(p["locked"]):
        raise ScenarioError(f"{where('plant', 'locked_at')} must give one position per joint of `plant.locked` "
                            f"{list(p['locked'])} (or be [] for the neutral ones); got {p['locked_at']!r}.")
    locked = (dict(zip(p["locked"], p["locked_at"])) if p["locked_at"] else list(p["locked"])) or None
    try:
        return URDFPlant(_source(cfg, where), payload_frame=p["payload_frame"] or None, payload_mass=p["payload_mass"],
                         payload_com=p["payload_com"], locked=locked)
    except ParameterError as exc:
        message = str(exc)
        for name in ("payload_frame", "payload_mass", "payload_com", "locked"):
            if f"`{name}`" in message:
                said = message.removeprefix(f"`{name}`: ").replace(f"`{name}`", "it")
                raise ScenarioError(f"{where('plant', name)}: {said}") from None
        raise ScenarioError(f"{where('plant', key)}: {message.replace('`source`: ', '')}") from None


def _stabilization(cfg, where):
    """``Stabilization.second_order(xi, omega)`` of ``[constraint]`` (errors name the key)."""
    from ..constraints import Stabilization

    c = cfg["constraint"]
    try:
        return Stabilization.second_order(xi=c["xi"], omega=c["omega"])
    except (ConstraintError, ParameterError) as exc:
        key = "xi" if "`xi`" in str(exc) else "omega"
        raise ScenarioError(f"{where('constraint', key)}: {str(exc).replace(f'`{key}`', 'it')}") from None


def _reference(cfg, plant, where):
    """The :class:`~robustrack.requirements.JointTrajectory` of ``[reference]`` and ``[constraint]``."""
    from .._lazy import sympy as sp
    from ..requirements import JointTrajectory

    r = cfg["reference"]
    t = sp.Symbol("t", real=True)
    rows = [h + a * (1 - sp.cos(w * t)) for h, a, w in zip(r["home"], r["amplitude"], r["frequency"])]
    return JointTrajectory(rows, names=plant.coordinates, t=t, stabilization=_stabilization(cfg, where))


class URDFKind(ScenarioKind):
    """The ``urdf`` kind: a robot from its URDF tracking a joint-space reference (module docstring)."""

    def validate(self, data: dict, *, origin: str, text: str | None = None, folder=None) -> dict:
        """The complete configuration, the URDF path made absolute (the robot is read when the scenario is built).

        Parameters
        ----------
        data : dict
            Sections → keys → values (without ``[scenario]``).
        origin : str
            The scenario file's name, for messages.
        text : str, optional
            The TOML text, for line numbers.
        folder : pathlib.Path, optional
            The scenario file's folder: a relative ``plant.urdf`` is found there (None: the working folder).

        Returns
        -------
        dict

        Raises
        ------
        ScenarioError
            Neither or both of ``plant.urdf`` and ``plant.robot``, no such file or robot, or a value the
            catalog's tracking kinds refuse. Building (:func:`_build`, before any run) refuses a URDF
            Pinocchio cannot read, ``[reference]`` lists not one number per joint, ``[uncertainty]``
            parameters the robot lacks, a bad ``xi``/``omega``, and says what to install without Pinocchio.
        """
        def check(cfg, where):  # ``where(section, key)``: "FILE (line N): `section.key`"
            self._check(cfg, where)
            check_compensator(cfg, where)
            sensor_of(cfg, where)
            _check_actual(cfg, where)
            p = cfg["plant"]
            if bool(p["urdf"]) == bool(p["robot"]):
                raise ScenarioError(f"{origin}: a scenario of kind 'urdf' needs exactly one of `plant.urdf` (a URDF "
                                    f"file, relative to the scenario file's folder) and `plant.robot` (an "
                                    f"example-robot-data robot such as \"ur5\"); got urdf = {p['urdf']!r}, robot = "
                                    f"{p['robot']!r}.")
            if p["urdf"]:
                p["urdf"] = str(resolve_file(p["urdf"], folder, where("plant", "urdf"), "URDF file"))
            else:
                _source(cfg, where)
            _check_frames(cfg, where)
            _check_posture(cfg, where)

        with self.upgraded(data, origin, text) as (data, text):
            return validate(data, self.schema, origin=origin, text=text, check=check)

    def uncertain_parameters(self, cfg: dict) -> tuple:
        """``uncertainty.parameters`` (default ``("payload_mass",)``).

        Parameters
        ----------
        cfg : dict
            A validated configuration of this kind.

        Returns
        -------
        tuple of str

        Raises
        ------
        ScenarioError
            The list is empty.
        """
        names = tuple(cfg["uncertainty"]["parameters"])
        if not names:
            raise ScenarioError("`uncertainty.parameters` is empty: name the robot's parameters to perturb, e.g. "
                                "--set 'uncertainty.parameters=[\"payload_mass\"]'.")
        return names


def _frame_where(where, i, key):
    """How a message names a key of the i-th ``[[constraint.frame]]`` table (1-based)."""
    return where("constraint", f"frame[{i}].{key}")


def _check_frames(cfg, where) -> None:
    """The ``[[constraint.frame]]`` tables' rules that need no robot: a known type, its keys, their sizes."""
    frames = cfg["constraint"]["frame"]
    r = cfg["reference"]
    if frames and (r["amplitude"] or r["frequency"]):
        raise ScenarioError(f"{where('reference', 'amplitude')}: with [[constraint.frame]] tables the frame "
                            "constraints are the requirement; `reference.amplitude` and `reference.frequency` (the "
                            "joint reference) must be left out (reference.home stays: the start guess).")
    for i, table in enumerate(frames, start=1):
        kind = table["type"]
        if kind not in FRAME_TYPES:
            raise ScenarioError(f"{_frame_where(where, i, 'type')} must be one of {sorted(FRAME_TYPES)}; got {kind!r}.")
        if not table["frame"]:
            raise ScenarioError(f"{_frame_where(where, i, 'frame')}: name the robot's frame (e.g. \"tool0\").")
        required, optional = FRAME_TYPES[kind]
        defaults = FRAME_SCHEMA
        for key in FRAME_SCHEMA:
            if key in ("frame", "type") or key in required or key in optional:
                continue
            if table[key] != defaults[key]:
                raise ScenarioError(f"{_frame_where(where, i, key)}: a frame of type {kind!r} takes "
                                    f"{sorted(required + optional)}; remove `{key}`.")
        for key in required:
            if table[key] == defaults[key]:
                raise ScenarioError(f"{_frame_where(where, i, key)}: a frame of type {kind!r} needs it.")
        for key in ("point", "normal", "direction", "center"):
            if table[key] and len(table[key]) != 3:
                raise ScenarioError(f"{_frame_where(where, i, key)} must be 3 numbers (x, y, z in m, world); got "
                                    f"{table[key]!r}.")
        if table["rotation"] and (len(table["rotation"]) != 3 or len(table["rotation"][0]) != 3):
            raise ScenarioError(f"{_frame_where(where, i, 'rotation')} must be a 3 × 3 rotation matrix (rows); got "
                                f"{table['rotation']!r}.")
        if table["axes"] and (len(table["axes"]) != 2 or len(table["axes"][0]) != 3):
            raise ScenarioError(f"{_frame_where(where, i, 'axes')} must be two directions [[x, y, z], [x, y, z]] (the "
                                f"circle's plane); got {table['axes']!r}.")
        if table["axes"]:
            _check_circle_axes(table["axes"], _frame_where(where, i, "axes"))
        if kind == "circle" and table["radius"] <= 0:
            raise ScenarioError(f"{_frame_where(where, i, 'radius')} must be > 0 (m); got {table['radius']!r}.")
        if kind == "circle" and table["frequency"] == 0:
            raise ScenarioError(f"{_frame_where(where, i, 'frequency')} must be nonzero (rad/s); got 0.")


def _check_posture(cfg, where) -> None:
    """``[constraint.posture]``: gains >= 0 (both 0: no posture)."""
    post = cfg["constraint"]["posture"]
    for key in ("kp", "kd"):
        if not (isinstance(post[key], (int, float)) and not isinstance(post[key], bool) and post[key] >= 0):
            raise ScenarioError(f"{where('constraint.posture', key)} must be a number >= 0 (1/s² for kp, 1/s for kd; "
                                f"both 0: no posture task); got {post[key]!r}.")


def _posture(cfg, requirement, plant, where):
    """The requirement with its null-space posture task (:class:`robustrack.posture.PostureTask`) when
    ``[constraint.posture]`` has a gain; the requirement itself otherwise."""
    post = cfg["constraint"]["posture"]
    if not (post["kp"] or post["kd"]):
        return requirement
    from ..posture import PostureTask

    try:
        return PostureTask(requirement, plant, kp=post["kp"], kd=post["kd"], center=post["center"] or None)
    except ParameterError as exc:
        raise ScenarioError(f"{where('constraint.posture', 'center')}: {exc}") from None


def _check_circle_axes(axes, where: str) -> None:
    """Refuse circle axes that are not orthonormal: x_d = center + r (cos e1 + sin e2) is a circle of radius r only
    for unit, perpendicular e1, e2 (axes of length 2 double it; parallel axes trace a segment). Refused rather
    than normalized: the scenario file would then say another circle than the one run; the message gives the
    orthonormal pair (Gram–Schmidt of the given ones) to write instead."""
    e = np.asarray(axes, dtype=float)
    if e.shape != (2, 3) or not np.all(np.isfinite(e)):
        raise ScenarioError(f"{where} must be two directions of 3 finite numbers; got {axes!r}.")
    lengths = np.linalg.norm(e, axis=1)
    dot = float(e[0] @ e[1])
    if np.all(np.abs(lengths - 1.0) <= 1e-9) and abs(dot) <= 1e-9:
        return
    u = e[0] / lengths[0] if lengths[0] > 0 else None
    v = None if u is None or lengths[1] == 0 else e[1] - (e[1] @ u) * u
    fix = ("two perpendicular unit vectors" if v is None or np.linalg.norm(v) <= 1e-9 * lengths[1] else
           f"{np.round([u, v / np.linalg.norm(v)], 12).tolist()} (the same plane, made orthonormal)")
    raise ScenarioError(f"{where} must be orthonormal — unit length and perpendicular, the circle's radius is "
                        f"measured along them; got lengths {np.round(lengths, 12).tolist()} and e1 · e2 = {dot:.6g}"
                        f"{' (parallel: no plane)' if fix.startswith('two') else ''}; write {fix}.")


def _frames(cfg, plant, where):
    """The :class:`~robustrack.plants.FrameConstraint` of the ``[[constraint.frame]]`` tables (errors name the key)."""
    from .._lazy import sympy as sp
    from ..plants import FrameConstraint

    stab = _stabilization(cfg, where)
    home = np.array(cfg["reference"]["home"], dtype=float)
    joined = None
    for i, table in enumerate(cfg["constraint"]["frame"], start=1):
        kind, frame = table["type"], table["frame"]
        try:
            if kind != "circle":
                at_home = plant.frame_pose(home, frame)
            point = np.array(table["point"]) if table["point"] else (None if kind == "circle" else at_home[1])
            rotation = np.array(table["rotation"]) if table["rotation"] else (None if kind == "circle" else at_home[0])
            if kind == "point":
                c = FrameConstraint.point(plant, frame, point, stabilization=stab)
            elif kind == "plane":
                c = FrameConstraint.plane(plant, frame, point, table["normal"], stabilization=stab)
            elif kind == "line":
                c = FrameConstraint.line(plant, frame, point, table["direction"], stabilization=stab)
            elif kind == "orientation":
                c = FrameConstraint.orientation(plant, frame, rotation, stabilization=stab)
            elif kind == "pose":
                c = FrameConstraint.pose(plant, frame, point, rotation, stabilization=stab)
            else:
                e = np.array(table["axes"]) if table["axes"] else np.eye(3)[:2]
                t = sp.Symbol("t", real=True)
                arg = table["frequency"] * t + table["phase"]
                x_d = [c0 + table["radius"] * (sp.cos(arg) * e1 + sp.sin(arg) * e2)
                       for c0, e1, e2 in zip(table["center"], e[0], e[1])]
                c = FrameConstraint.trajectory(plant, frame, x_d, t, directions=e, stabilization=stab)
        except (ConstraintError, ParameterError) as exc:
            message = str(exc)
            key = next((k for k in ("frame", "point", "normal", "direction", "rotation", "axes")
                        if f"`{k}`" in message or (k == "axes" and "`directions`" in message)), "type")
            raise ScenarioError(f"{_frame_where(where, i, key)}: {message}") from None
        joined = c if joined is None else joined & c
    return joined


def _robot(cfg, where):
    """The nominal plant, with the rules that need the robot's joints (Pinocchio): ``[reference]`` one number per
    joint, ``[actuators]`` one row per joint, ``[uncertainty]`` parameters the robot has."""
    plant = _plant(cfg, where)
    r = cfg["reference"]
    for key in ("home",) if cfg["constraint"]["frame"] else ("home", "amplitude", "frequency"):
        if len(r[key]) != plant.n:
            raise ScenarioError(f"{where('reference', key)} must have {plant.n} numbers, one per joint "
                                f"{list(plant.coordinates)}; got {len(r[key])}: {r[key]!r}.")
    actuators_check(plant.n)(cfg, where)
    check_force_sizes(cfg, plant.n, plant.coordinates, where)
    check_parameter_shift(cfg["uncertainty"], plant, where, friction_parameters(cfg, plant.coordinates))
    return plant


def _build(cfg):
    """The TrackingProblem of a ``urdf`` scenario: the robot read (Pinocchio) and checked, the reference, the start."""
    from ..requirements import consistent_initial_state

    nominal = _robot(cfg, _key)
    frames = cfg["constraint"]["frame"]
    reference = _frames(cfg, nominal, _key) if frames else _reference(cfg, nominal, _key)
    actual = shifted_plant(nominal, cfg["uncertainty"], friction_parameters(cfg, nominal.coordinates))
    forces = run_forces(cfg, nominal.coordinates)
    if forces is not None:  # friction (named coefficients shifted by dm) and disturbance (docs/guide/uncertainty.md)
        from ..plants import ForcedPlant

        actual = ForcedPlant(nominal if actual is None else actual, forces)
    try:
        q0, qd0 = consistent_initial_state(reference, cfg["reference"]["home"], np.zeros(nominal.n))
    except InitialStateError as exc:  # a frame constraint out of reach from home (a joint reference starts there)
        raise ScenarioError(f"{_key('reference', 'home')}: the start cannot be put on the frame constraints from "
                            f"there: {exc}") from None
    a = cfg["actuators"]
    limits = nominal.effort_limit
    if not a["B"] and np.any(np.isfinite(limits)):  # a motor per joint at the URDF's effort limits (the default)
        a = {**a, "B": np.eye(nominal.n).tolist()}
    if a["B"] and not a["tau_max"] and np.array_equal(np.array(a["B"], dtype=float), np.eye(nominal.n)):
        a = {**a, "tau_max": limits.tolist()}  # joint torques: the URDF's limits
    cfg = {**cfg, "actuators": a}
    reference = _posture(cfg, reference, nominal, _key)  # after the start: the posture rows have no position residual
    return _tracking_problem(cfg, nominal, nominal if actual is None else actual, reference, q0, qd0)


register_kind(URDFKind(
    "urdf",
    URDF_SCHEMA,
    _build,
    "A robot from its URDF (Pinocchio): [plant] urdf = 'robot.urdf' or robot = 'ur5', payload_frame, payload_mass, "
    "payload_com; [reference] home, amplitude, frequency: q_d = home + a (1 − cos ωt); [constraint] xi, omega "
    "(stabilization) and [[constraint.frame]] tables (frame, type = point | plane | line | orientation | pose | "
    "circle, …: frame constraints instead of the joint reference); [uncertainty] parameters, dm: the actual plant; [compensator], [actuators], [simulation] as "
    "the catalog's tracking kinds. Needs pip install 'robustrack[robots]'.",
    tracking=True,
    uncertain=("payload_mass",),
    choices=COMPENSATOR_CHOICES,
    tunable=TUNABLE_TYPES,
    upgrade=UPGRADE,
))
