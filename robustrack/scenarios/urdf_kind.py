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

    [uncertainty]                 # the actual plant: these parameters + dm
    parameters = ["payload_mass"]
    dm = [0.4]

    [compensator] / [actuators] / [simulation]   # as the catalog's tracking kinds; actuators with
                                                 # B = I and no tau_max get the URDF's effort limits

The plant is :class:`~robustrack.plants.URDFPlant` (M by CRBA, Q from Pinocchio's nonlinear effects
and the URDF's joint damping and friction; its parameters ``m_<link>``, ``payload_mass``,
``payload_com``); the reference a :class:`~robustrack.requirements.JointTrajectory`, which starts at
rest at ``home`` (q_d(0) = home, q̇_d(0) = 0), so the initial state is
:func:`~robustrack.requirements.consistent_initial_state` of (home, 0) — home itself. The actual plant
is the nominal one with ``uncertainty.parameters`` shifted by ``dm`` (as in the ``python`` kind,
:mod:`~robustrack.scenarios.parameter_shift`); campaigns and ``robustrack gamma`` perturb those
parameters (default ``payload_mass``).

A relative ``plant.urdf`` is found beside the scenario file and stored with its absolute path (the
configuration is complete on its own). Loading a scenario checks its keys and that the file (or the
example-robot-data robot) exists, without Pinocchio or sympy (``robustrack list`` and ``show`` start in a
blink); building it (``run`` and every command, before any time is spent) reads the robot with Pinocchio
(``pip install 'robustrack[robots]'``, said in one line when missing) and refuses what needs its joints —
``[reference]`` and ``[actuators]`` not one entry per joint, ``[uncertainty]`` parameters it lacks — naming
the key. The tracking loop runs on numpy (Pinocchio is not compiled into it), with the controlled
system's Jacobian from Pinocchio's RNEA derivatives.
"""

from __future__ import annotations

import numpy as np

from ..errors import ConstraintError, InitialStateError, ParameterError, ScenarioError
from ..tracking.defaults import DEFAULT_TRACKING_METHOD
from .config import Names, resolve_file, validate
from .parameter_shift import check_parameter_shift, shifted_plant
from .registry import ScenarioKind, register_kind
from .tracking_kinds import (ACTUATOR_DEFAULTS, COMPENSATOR_CHOICES, COMPENSATOR_DEFAULTS, TUNABLE_TYPES,
                             _tracking_problem, actuators_check)

__all__ = ["URDFKind", "URDF_SCHEMA"]

#: The schema of the ``urdf`` kind (module docstring); ``[reference]`` lists have one entry per joint.
URDF_SCHEMA = {
    "plant": {"urdf": "", "robot": "", "payload_frame": "", "payload_mass": 0.0, "payload_com": [0.0, 0.0, 0.0],
              "locked": Names(), "locked_at": []},
    "reference": {"home": [], "amplitude": [], "frequency": []},
    "constraint": {"xi": 1.0, "omega": 10.0},
    "uncertainty": {"parameters": Names(["payload_mass"]), "dm": []},
    "compensator": dict(COMPENSATOR_DEFAULTS),
    "actuators": dict(ACTUATOR_DEFAULTS),
    "simulation": {"t_end": 10.0, "method": DEFAULT_TRACKING_METHOD, "rtol": 1e-8, "atol": 1e-12,
                   "n_points": 1001, "uncompensated": True, "transient": -1.0},
}


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


def _robot(cfg, where):
    """The nominal plant, with the rules that need the robot's joints (Pinocchio): ``[reference]`` one number per
    joint, ``[actuators]`` one row per joint, ``[uncertainty]`` parameters the robot has."""
    plant = _plant(cfg, where)
    r = cfg["reference"]
    for key in ("home", "amplitude", "frequency"):
        if len(r[key]) != plant.n:
            raise ScenarioError(f"{where('reference', key)} must have {plant.n} numbers, one per joint "
                                f"{list(plant.coordinates)}; got {len(r[key])}: {r[key]!r}.")
    actuators_check(plant.n)(cfg, where)
    check_parameter_shift(cfg["uncertainty"], plant, where)
    return plant


def _build(cfg):
    """The TrackingProblem of a ``urdf`` scenario: the robot read (Pinocchio) and checked, the reference, the start."""
    from ..requirements import consistent_initial_state

    nominal = _robot(cfg, _key)
    reference = _reference(cfg, nominal, _key)
    actual = shifted_plant(nominal, cfg["uncertainty"])
    try:
        q0, qd0 = consistent_initial_state(reference, cfg["reference"]["home"], np.zeros(nominal.n))
    except InitialStateError as exc:  # pragma: no cover - q_d(0) = home is consistent by construction
        raise ScenarioError(f"{_key('reference', 'home')}: {exc}") from None
    a = cfg["actuators"]
    if a["B"] and not a["tau_max"] and np.array_equal(np.array(a["B"], dtype=float), np.eye(nominal.n)):
        cfg = {**cfg, "actuators": {**a, "tau_max": nominal.effort_limit.tolist()}}  # joint torques: the URDF's limits
    return _tracking_problem(cfg, nominal, nominal if actual is None else actual, reference, q0, qd0)


register_kind(URDFKind(
    "urdf",
    URDF_SCHEMA,
    _build,
    "A robot from its URDF (Pinocchio): [plant] urdf = 'robot.urdf' or robot = 'ur5', payload_frame, payload_mass, "
    "payload_com; [reference] home, amplitude, frequency: q_d = home + a (1 − cos ωt); [constraint] xi, omega "
    "(stabilization); [uncertainty] parameters, dm: the actual plant; [compensator], [actuators], [simulation] as "
    "the catalog's tracking kinds. Needs pip install 'robustrack[robots]'.",
    tracking=True,
    uncertain=("payload_mass",),
    choices=COMPENSATOR_CHOICES,
    tunable=TUNABLE_TYPES,
))
