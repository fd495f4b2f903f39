"""Robots from URDF through Pinocchio: M by CRBA, Q = −(nonlinear effects) − joint damping and friction.

:class:`URDFPlant` reads a URDF file (or takes a ``pinocchio.Model``) and gives the plant contract
(W 2.2 step 1, M(q) q̈ = Q(q, q̇)) of its joints:

- ``M(q)`` by the composite rigid body algorithm (``pinocchio.crba``, upper triangle mirrored);
- ``Q(q, q̇) = −nle(q, q̇) − D q̇ − F sign(q̇)``: Pinocchio's nonlinear effects (Coriolis, centrifugal
  and gravity terms of the inverse dynamics at q̈ = 0) and the URDF's ``<dynamics damping friction>``
  (Coulomb friction is discontinuous at q̇ = 0: a run with friction ≠ 0 needs a small step there);
- :meth:`URDFPlant.derivatives`: ∂Q/∂q, ∂Q/∂q̇ exactly from Pinocchio's RNEA derivatives
  (``computeRNEADerivatives`` at q̈ = 0) and ∂M/∂q from n more of them (at q̈ = e_k).

Uncertain parameters, by name, through ``replace(...)`` like every plant: ``m_<link>`` the mass of
the body each joint moves (named by its first link; mass and rotational inertia scale together, the
centre of mass stays — a denser link), ``com_<link>`` (m, 3) that body's centre of mass in its link's
frame (the joint's frame; the rotational inertia about the centre of mass stays — the body shifted),
``payload_mass`` (kg) and ``payload_com`` (m, 3, in the payload frame) of a point payload at
``payload_frame``. Each point's coordinates are also named one by one, ``payload_com_x`` … ``com_<link>_z``
(:meth:`URDFPlant.parameter_components`: a named uncertain parameter is one number, docs/guide/uncertainty.md).
Parameter arrays with sample axes (the batch contract of :class:`~robustrack.plants.Plant`) are evaluated
sample by sample (Pinocchio is scalar).

Pinocchio (``pip install robustrack[robots]``: ``pin``, ``example-robot-data``) is imported when a
URDF plant is built, never at ``import robustrack``. Joints with one velocity are accepted: revolute,
prismatic and continuous — a continuous joint's coordinate is its angle θ (rad, unbounded), given to
Pinocchio as its (cos θ, sin θ); a floating base or a planar joint is refused.

The compiled tracking loop runs the same dynamics through robustrack's own rigid-body kernels
(:mod:`robustrack.compiled.rigid_body`, checked against Pinocchio in ``tests/test_rigid_body.py``) over
the robot as data (:attr:`URDFPlant.packed`, :mod:`robustrack.plants.robot_data`): :meth:`URDFPlant.codegen`
is a :class:`~robustrack.symbolic.KernelForm`, and a new payload or link mass compiles nothing. A joint
the kernels do not take (helical, …, from a ``pinocchio.Model``) or sampled parameter arrays keep the
loop on numpy, said in one line (:attr:`URDFPlant.no_form_reason`). Once a compiled loop has loaded those
kernels in this process, batches of states (a run's post-processing, Γ's samples) of M, Q and the joints'
positions go through them too (:mod:`robustrack.compiled.evaluate`; the same numbers to ≤ 1e-11 relative); one
state, and sampled parameters, stay with Pinocchio.
"""

from __future__ import annotations

import dataclasses
import os
import types
from typing import Any, Mapping

import numpy as np

from .._evaluator import batch
from .._validate import as_float_array, finite
from ..errors import ParameterError
from .base import Plant

__all__ = ["URDFPlant", "example_robot_urdf", "example_robot_names"]

def _pinocchio():
    try:
        import pinocchio
    except ImportError:
        raise ParameterError("URDF plants need Pinocchio: pip install 'robustrack[robots]' (the packages pin and "
                             "example-robot-data).") from None
    return pinocchio


#: Short names kept for the UR arms: their ``*_robot.urdf`` (``ur3.urdf`` is another model of the UR3).
_UR = {"ur3": "ur_description/urdf/ur3_robot.urdf", "ur5": "ur_description/urdf/ur5_robot.urdf",
       "ur10": "ur_description/urdf/ur10_robot.urdf"}


def _robots_folder() -> str | None:
    """example-robot-data's ``robots`` folder in this environment (installed by pip as a cmeel package), or None."""
    import sysconfig

    for root in sorted({sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}):
        path = os.path.join(root, "cmeel.prefix", "share", "example-robot-data", "robots")
        if os.path.isdir(path):
            return path
    return None


def example_robot_names() -> dict:
    """The robots example-robot-data ships here, by name: ``{name: path relative to its robots folder}``.

    A robot's name is its URDF file's stem (``panda``, ``z1``, ``talos_reduced``), without a ``_robot`` suffix
    (``ur5_robot.urdf`` is ``ur5``); where two folders ship the same stem the first in sorted order has it
    (the other is reached by its relative path). Empty when example-robot-data is not installed.

    Returns
    -------
    dict of str to str
    """
    folder = _robots_folder()
    if folder is None:
        return {}
    names: dict = {}
    for rel in sorted(os.path.relpath(os.path.join(d, f), folder) for d, _, files in os.walk(folder)
                      for f in files if f.endswith(".urdf")):
        stem = os.path.basename(rel)[:-len(".urdf")]
        names.setdefault(stem[:-len("_robot")] if stem.endswith("_robot") else stem, rel)
    return {**names, **{k: v for k, v in _UR.items() if os.path.exists(os.path.join(folder, v))}}


def example_robot_urdf(name: str = "ur5") -> str:
    """The path of a URDF shipped by the ``example-robot-data`` package (e.g. the UR5).

    Parameters
    ----------
    name : str
        A robot's name (:func:`example_robot_names`: ``"ur5"``, ``"panda"``, ``"z1"``, …) or a path
        relative to its ``robots`` folder (``"panda_description/urdf/panda.urdf"``).

    Returns
    -------
    str

    Raises
    ------
    ParameterError
        example-robot-data is not installed (the message says how to install it), or it has no such robot
        (the message lists the names it has, the nearest first).
    """
    import difflib

    folder = _robots_folder()
    if folder is None:
        raise ParameterError(f"robot `{name}` comes from example-robot-data, which is not installed: pip install "
                             "'robustrack[robots]', or give the path of your own URDF.")
    names = example_robot_names()
    rel = names.get(name, name)
    path = os.path.join(folder, rel)
    if str(name).endswith(".urdf") or name in names:
        if os.path.isfile(path):
            return path
    near = difflib.get_close_matches(str(name), list(names), n=3, cutoff=0.6)
    hint = f"did you mean {' or '.join(repr(x) for x in near)}? " if near else ""
    raise ParameterError(f"example-robot-data (installed in {folder}) has no robot `{name}`; {hint}its robots: "
                         f"{', '.join(sorted(names, key=str.lower))} (or a URDF path relative to that folder, or your own URDF).")


@dataclasses.dataclass(frozen=True, eq=False)
class _Robot:
    """The nominal Pinocchio model and what the parameters act on (shared by every ``replace`` copy)."""

    model: Any  # pinocchio.Model (nominal inertias)
    source: str
    names: tuple  # joint names = coordinates
    kinds: tuple
    bodies: tuple  # parameter name m_<link> of each joint 1..n
    payload_joint: int
    payload_placement: Any  # pinocchio.SE3 of the payload frame in its joint
    payload_frame: str
    axes: tuple = ()  # per joint (kind, axis): robot_data.joint_axes
    unsupported: str | None = None  # the first joint the compiled kernels do not take (robot_data.unsupported_joint)
    continuous: tuple = ()  # the coordinates that are continuous joints' angles (Pinocchio: cos θ, sin θ)
    coms: tuple = ()  # parameter name com_<link> of each joint 1..n (its body's centre of mass, in its frame)
    locked: tuple = ()  # (joint name, position) of each joint held (``locked``): not coordinates

    @property
    def points(self) -> tuple:
        """The parameters that are points (x, y, z): the payload's and each body's centre of mass."""
        return ("payload_com",) + self.coms

    def to_pinocchio(self, q):
        """Pinocchio's configuration of q (..., n): a continuous joint's angle θ becomes (cos θ, sin θ)."""
        if not self.continuous:
            return q
        parts, start = [], 0
        for i in self.continuous:
            parts += [q[..., start:i], np.cos(q[..., i:i + 1]), np.sin(q[..., i:i + 1])]
            start = i + 1
        parts.append(q[..., start:])
        return np.concatenate(parts, axis=-1)


def check_link_inertias(path) -> None:
    """Refuse a URDF whose ``<inertial>`` is not a physical body's, naming the link (Pinocchio reads it as written).

    A body's mass is finite and >= 0; its rotational inertia about the centre of mass (``<inertia ixx ixy ixz
    iyy iyz izz>``, a symmetric matrix) is positive semi-definite — every principal moment >= 0; a point mass's
    zero inertia is accepted — and its principal moments satisfy the triangle inequality I₁ + I₂ >= I₃ (each is
    ∫ of a sum of two squared coordinates: I₁ + I₂ − I₃ = 2 ∫ z² dm >= 0). Both to 1e-9 of the trace plus
    1e-12 kg m² (the rounding of a CAD export, and exported noise around zero). A negative moment or one that breaks the inequality makes M(q) of a body that
    cannot exist; runs then report bounds "held" for it (docs/guide/robot.md, "Your robot"). Only the links a joint
    moves are checked: a link fixed to the world (a base, and what is bolted to it) enters no M(q), and robots'
    URDFs often give such links placeholder inertias.

    Parameters
    ----------
    path : str
        The URDF file.

    Raises
    ------
    ParameterError
        The first link whose mass or inertia is not physical, with its values and the rule.
    """
    import xml.etree.ElementTree as ET

    try:
        root = ET.parse(path).getroot()
    except (ET.ParseError, OSError):
        return  # Pinocchio read it: its own parser's errors are already said
    keys = ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")
    moving = _moving_links(root)
    for link in root.iter("link"):
        inertial = link.find("inertial")
        if inertial is None or link.get("name") not in moving:
            continue  # fixed to the world: enters no M(q), whatever it holds (a base's placeholder inertia)
        name = link.get("name")
        where = f"`source` {path!r}: link {name!r}"
        mass_el, inertia_el = inertial.find("mass"), inertial.find("inertia")
        try:
            mass = float(mass_el.get("value", "0")) if mass_el is not None else 0.0
            v = {k: float(inertia_el.get(k, "0")) if inertia_el is not None else 0.0 for k in keys}
        except ValueError as exc:
            raise ParameterError(f"{where}: its <inertial> holds a value that is not a number ({exc}); fix the URDF.") \
                from None
        if not (np.isfinite(mass) and mass >= 0) or not all(np.isfinite(x) for x in v.values()):
            raise ParameterError(f"{where}: mass {mass!r} and <inertia> {v} must be finite, the mass >= 0; fix the "
                                 "URDF.")
        inertia = np.array([[v["ixx"], v["ixy"], v["ixz"]], [v["ixy"], v["iyy"], v["iyz"]],
                            [v["ixz"], v["iyz"], v["izz"]]])
        moments = np.linalg.eigvalsh(inertia)
        slack = 1e-9 * float(np.sum(np.abs(moments))) + 1e-12  # rounding, and exported noise around zero
        shown = ", ".join(f"{m:.6g}" for m in moments)
        if moments[0] < -slack:
            raise ParameterError(f"{where}: <inertia> has a negative principal moment ({shown} kg m²): a rotational "
                                 "inertia is positive semi-definite; fix the link's ixx … izz in the URDF.")
        if moments[0] + moments[1] < moments[2] - slack:
            raise ParameterError(f"{where}: <inertia>'s principal moments ({shown} kg m²) break the triangle "
                                 f"inequality I₁ + I₂ >= I₃ ({moments[0] + moments[1]:.6g} < {moments[2]:.6g}): no "
                                 "body has them; fix the link's ixx … izz in the URDF.")


def _moving_links(root) -> set:
    """The URDF's links that some joint other than ``fixed`` moves: the link below such a joint and its subtree."""
    below = {}  # parent link -> [(child link, joint type)]
    for joint in root.iter("joint"):
        parent, child = joint.find("parent"), joint.find("child")
        if parent is not None and child is not None:
            below.setdefault(parent.get("link"), []).append((child.get("link"), joint.get("type", "fixed")))
    moving, stack = set(), [(link, False) for link in below]
    while stack:
        link, moves = stack.pop()
        for child, kind in below.get(link, ()):
            child_moves = moves or kind != "fixed"
            if child_moves and child not in moving:
                moving.add(child)
                stack.append((child, True))
            elif not child_moves:
                stack.append((child, False))
    return moving


def _first_links(pin, model) -> tuple:
    """Per joint 1..n, the name of its first BODY frame (the link it moves)."""
    out = []
    for j in range(1, model.njoints):
        links = [f.name for f in model.frames if f.type == pin.FrameType.BODY and f.parentJoint == j]
        out.append(links[0] if links else model.names[j])
    return tuple(out)


def _kind(shortname: str):
    if "Revolute" in shortname or shortname.startswith("JointModelR"):
        return "angle"
    if "Prismatic" in shortname or shortname.startswith("JointModelP"):
        return "length"
    return None


@dataclasses.dataclass(frozen=True, eq=False, init=False)
class URDFPlant(Plant):
    """A robot's joints from its URDF (or a ``pinocchio.Model``), through Pinocchio (module docstring).

    Parameters
    ----------
    source : str, os.PathLike or pinocchio.Model
        The URDF file, or a model already built (its inertias are the nominal ones).
    payload_frame : str, optional
        The frame carrying the payload (default the model's last frame, e.g. the UR5's ``tool0``).
    payload_mass : float, default 0
        The payload's mass in kg (a point mass; a parameter, like the others).
    payload_com : array_like (3,), default (0, 0, 0)
        Its position in ``payload_frame``, m.
    locked : mapping of str to float, or sequence of str, optional
        Joints held at a position (keyword-only): ``{"panda_finger_joint1": 0.04, ...}``, or names held at
        Pinocchio's neutral position. They leave the coordinates (``pinocchio.buildReducedModel``: their
        bodies ride on the joint before them), e.g. a gripper's fingers while the arm is tracked.
    **params
        Other parameter values, e.g. ``m_forearm_link=2.5``.

    Examples
    --------
    >>> arm = URDFPlant(example_robot_urdf("ur5"), payload_mass=1.0)
    >>> arm.coordinates[:2], arm.replace(payload_mass=1.2).params["payload_mass"]
    (('shoulder_pan_joint', 'shoulder_lift_joint'), 1.2)
    """

    robot: _Robot
    values: Mapping[str, Any]
    #: Its batches are the package's kernels or Pinocchio state by state, tested against single states
    #: (``tests/test_rigid_body.py``): the run's batch-contract check skips it (:mod:`robustrack.plants.motion`).
    _own_batches = True

    def __init__(self, source, *, payload_frame: str | None = None, payload_mass=0.0, payload_com=(0.0, 0.0, 0.0),
                 locked=None, **params):
        pin = _pinocchio()
        if isinstance(source, (str, os.PathLike)):
            path = os.fspath(source)
            if not os.path.isfile(path):
                raise ParameterError(f"`source`: no URDF file {path!r}.")
            try:
                model = pin.buildModelFromUrdf(path)
            except Exception as exc:  # Pinocchio's parser error says what is wrong in the file
                raise ParameterError(f"`source`: Pinocchio could not read the URDF {path!r}: {exc}") from None
            check_link_inertias(path)
            label = path
        elif isinstance(source, pin.Model):
            model, label = pin.Model(source), f"pinocchio.Model {source.name!r}"
        else:
            raise ParameterError(f"`source` must be a URDF path or a pinocchio.Model; got {type(source).__name__}.")
        held = ()
        if locked is not None:
            model, held = _locked(pin, model, locked, label)
        from .robot_data import joint_axes, unsupported_joint

        axes = joint_axes(pin, model)
        odd = [model.names[j] for j in range(1, model.njoints)
               if model.joints[j].nv != 1 or (model.joints[j].nq != 1 and axes[j - 1][0] != "continuous")]
        if odd or model.nv == 0:
            raise ParameterError(f"`source`: {label} has joints {odd or 'none'} with other than one velocity and one "
                                 f"coordinate (nq = {model.nq}, nv = {model.nv}); URDFPlant takes revolute, continuous "
                                 "and prismatic joints, no floating base.")
        frames = [f.name for f in model.frames]
        frame = payload_frame if payload_frame is not None else frames[-1]
        if frame not in frames:
            raise ParameterError(f"`payload_frame`: {label} has no frame {frame!r}; its frames are {frames}.")
        f = model.frames[model.getFrameId(frame)]
        names = tuple(model.names[j] for j in range(1, model.njoints))
        kinds = tuple(_kind(model.joints[j].shortname()) for j in range(1, model.njoints))
        links = _first_links(pin, model)
        bodies = tuple(f"m_{link}" for link in links)
        coms = tuple(f"com_{link}" for link in links)
        continuous = tuple(j for j, (kind, _) in enumerate(axes) if kind == "continuous")
        robot = _Robot(model, label, names, kinds, bodies, int(f.parentJoint), f.placement, frame, tuple(axes),
                       unsupported_joint(model, axes), continuous, coms, held)
        values = {b: model.inertias[j + 1].mass for j, b in enumerate(bodies)}
        values.update({c: np.array(model.inertias[j + 1].lever, dtype=float) for j, c in enumerate(coms)})
        values.update(payload_mass=payload_mass, payload_com=payload_com)
        _init(self, robot, {**values, **params})

    @classmethod
    def _make(cls, robot: _Robot, values: dict) -> "URDFPlant":
        self = object.__new__(cls)
        _init(self, robot, values)
        return self

    def __getstate__(self):
        return {"robot": self.robot, "values": dict(self.values)}

    def __setstate__(self, state):
        _init(self, state["robot"], state["values"])

    # -- the plant contract -------------------------------------------------

    @property
    def coordinates(self) -> tuple[str, ...]:
        """The joint names, in Pinocchio's order."""
        return self.robot.names

    @property
    def coordinate_kinds(self) -> tuple:
        """``"angle"`` for revolute joints, ``"length"`` for prismatic ones."""
        return self.robot.kinds

    @property
    def params(self) -> dict:
        """``m_<link>`` and ``com_<link>`` per moving body, ``payload_mass``, ``payload_com``."""
        return dict(self.values)

    def parameter_components(self) -> dict:
        """The coordinates of the points, one number each: ``payload_com_x`` → ``("payload_com", 0)``, …,
        ``com_<link>_z`` → ``("com_<link>", 2)`` (named uncertain parameters are numbers).

        Returns
        -------
        dict of str to (str, int)
        """
        return {f"{point}_{axis}": (point, i) for point in self.robot.points for i, axis in enumerate("xyz")}

    @property
    def frame(self) -> str:
        """The payload frame."""
        return self.robot.payload_frame

    def replace(self, **params) -> "URDFPlant":
        """A copy with some parameters changed (arrays with leading sample axes allowed)."""
        unknown = sorted(set(params) - set(self.values))
        if unknown:
            raise ParameterError(f"URDFPlant has no parameter(s) {unknown}; its parameters are {sorted(self.values)}.")
        return URDFPlant._make(self.robot, {**self.values, **params})

    def mass_matrix(self, q, t=0.0) -> np.ndarray:
        """M(q) by CRBA, shape (..., n, n)."""
        fast = batch(self, "mass", q)
        if fast is not None:
            return fast
        return self._each(lambda pin, m, d, q, v: _crba(pin, m, d, q), (q,), (self.n, self.n), t)

    def given_force(self, q, qd, t=0.0) -> np.ndarray:
        """Q(q, q̇) = −nle(q, q̇) − D q̇ − F sign(q̇), shape (..., n)."""
        fast = batch(self, "force", q, qd)
        if fast is not None:
            return fast
        model = self.robot.model
        damping, friction = np.asarray(model.damping), np.asarray(model.friction)

        def one(pin, m, d, q, v):
            return -pin.nonLinearEffects(m, d, q, v) - damping * v - friction * np.sign(v)

        return self._each(one, (q, qd), (self.n,), t)

    def derivatives(self, q, qd, t=0.0) -> tuple:
        """∂M/∂q (..., n, n, n; ``[i, j, k] = ∂M_ij/∂q_k``), ∂Q/∂q and ∂Q/∂q̇ (..., n, n), exact (RNEA derivatives).

        Parameters
        ----------
        q, qd : array_like (..., n)
        t : float

        Returns
        -------
        (ndarray, ndarray, ndarray)
        """
        n = self.n
        damping = np.asarray(self.robot.model.damping)

        def one(pin, m, d, q, v):
            zero = np.zeros(n)
            dq0, dv0, _ = (np.array(x) for x in pin.computeRNEADerivatives(m, d, q, v, zero))
            dqg = np.array(pin.computeRNEADerivatives(m, d, q, zero, zero)[0])  # gravity only (v = 0, q̈ = 0)
            dM = np.empty((n, n, n))
            for k in range(n):  # ∂(M e_k)/∂q = ∂τ(q, 0, e_k)/∂q − ∂τ(q, 0, 0)/∂q (nle at v = 0 is gravity)
                dM[:, k, :] = np.array(pin.computeRNEADerivatives(m, d, q, zero, np.eye(n)[k])[0]) - dqg
            return np.concatenate([dM.reshape(-1), (-dq0).reshape(-1), (-dv0 - np.diag(damping)).reshape(-1)])

        flat = self._each(one, (q, qd), (n * n * n + 2 * n * n,), t)
        batch = flat.shape[:-1]
        return (flat[..., :n ** 3].reshape(batch + (n, n, n)),
                flat[..., n ** 3:n ** 3 + n * n].reshape(batch + (n, n)),
                flat[..., n ** 3 + n * n:].reshape(batch + (n, n)))

    @property
    def effort_limit(self) -> np.ndarray:
        """The URDF's ``<limit effort>`` per joint (N·m or N), inf where it gives none: the default actuator limits
        (:meth:`robustrack.tracking.Actuators.joint_torques`)."""
        return _limit(self.robot.model.effortLimit)

    @property
    def velocity_limit(self) -> np.ndarray:
        """The URDF's ``<limit velocity>`` per joint (rad/s or m/s), inf where it gives none (:meth:`motion_notes`)."""
        return _limit(self.robot.model.velocityLimit)

    @property
    def position_limits(self):
        """The URDF's ``<limit lower upper>`` per coordinate, (lo, hi), ±inf where it gives none (a continuous joint):
        where the robot stops (docs/guide/robot.md, "Joint limits")."""
        model = self.robot.model
        lo, hi = np.full(self.n, -np.inf), np.full(self.n, np.inf)
        for i, j in enumerate(range(1, model.njoints)):
            if i in self.robot.continuous or model.joints[j].nq != 1:
                continue
            a, b = float(model.lowerPositionLimit[model.joints[j].idx_q]), float(model.upperPositionLimit[model.joints[j].idx_q])
            if np.isfinite(a) and np.isfinite(b) and a < b and max(abs(a), abs(b)) < 1e300:
                lo[i], hi[i] = a, b
        return lo, hi

    def motion_notes(self, t, q, qd) -> list:
        """:meth:`Plant.motion_notes <robustrack.plants.Plant.motion_notes>` of the URDF's position and velocity
        limits: a sentence per joint the motion breaks them, naming its limit, the extreme value and when it was first
        broken."""
        return (position_notes(self.coordinates, self.position_limits, t, q)
                + velocity_notes(self.coordinates, self.coordinate_kinds, self.velocity_limit, t, qd))

    #: :meth:`derivatives` are exact: the numpy tracking loop builds the controlled system's Jacobian from them
    #: (:func:`robustrack.tracking.rhs.controlled_jacobian`) instead of differencing the right-hand side.
    exact_derivatives = True

    def inverse_dynamics_derivatives(self, q, qd, qdd, t=0.0) -> tuple:
        """∂τ/∂q and ∂τ/∂q̇ (..., n, n) of τ = M(q) q̈ − Q(q, q̇) at a given q̈: one RNEA derivative call per state.

        The same numbers as ``Σ_j ∂M_ij/∂q_k q̈_j − ∂Q_i/∂q_k`` and ``−∂Q_i/∂q̇_k`` from :meth:`derivatives`
        (to rounding), at a sixth of its cost for a 6-joint arm (no ∂M/∂q tensor is formed).

        Parameters
        ----------
        q, qd, qdd : array_like (..., n)
            The state and the acceleration q̈ held fixed.
        t : float

        Returns
        -------
        (ndarray, ndarray)
        """
        n = self.n
        damping = np.diag(np.asarray(self.robot.model.damping))

        def one(pin, m, d, q, v, a):
            dq, dv, _ = pin.computeRNEADerivatives(m, d, q, v, a)
            return np.concatenate([np.reshape(dq, -1), np.reshape(dv + damping, -1)])

        flat = self._each(one, (q, qd, qdd), (2 * n * n,), t)
        batch = flat.shape[:-1]
        return flat[..., :n * n].reshape(batch + (n, n)), flat[..., n * n:].reshape(batch + (n, n))

    def frame_position(self, q, frame: str | None = None) -> np.ndarray:
        """The position of ``frame`` (default the payload frame) in the world, shape (..., 3), m.

        Parameters
        ----------
        q : array_like (..., n)
        frame : str, optional

        Returns
        -------
        ndarray (..., 3)
        """
        model = self.robot.model
        name = self.frame if frame is None else frame
        if not model.existFrame(name):
            raise ParameterError(f"`frame`: the robot has no frame {name!r}.")
        fid = model.getFrameId(name)

        def one(pin, m, d, q, v):
            pin.framesForwardKinematics(m, d, q)
            return np.array(d.oMf[fid].translation)

        return self._each(one, (q,), (3,), 0.0)

    def frame_pose(self, q, frame: str | None = None) -> tuple:
        """The rotation (3 × 3) and origin (3, m) of ``frame`` in the world at one configuration q (n,).

        Parameters
        ----------
        q : array_like (n,)
        frame : str, optional
            Default the payload frame.

        Returns
        -------
        (ndarray (3, 3), ndarray (3,))
        """
        pin = _pinocchio()
        model = self.robot.model
        name = self.frame if frame is None else frame
        if not isinstance(name, str) or not model.existFrame(name):
            raise ParameterError(f"`frame`: the robot has no frame {name!r}; its frames are "
                                 f"{[f.name for f in model.frames]}.")
        q = as_float_array(q, "q")
        if q.shape != (self.n,):
            raise ParameterError(f"`q` must have {self.n} entries {self.coordinates}; got shape {q.shape}.")
        data = model.createData()
        pin.framesForwardKinematics(model, data, self.robot.to_pinocchio(q))
        pose = data.oMf[model.getFrameId(name)]
        return np.array(pose.rotation), np.array(pose.translation)

    def positions(self, q) -> np.ndarray:
        """The joints' origins in the world, shape (..., n, 3) (for plots)."""
        fast = batch(self, "positions", q)
        if fast is not None:
            return fast
        n = self.n

        def one(pin, m, d, q, v):
            pin.forwardKinematics(m, d, q)
            return np.array([d.oMi[j].translation for j in range(1, n + 1)]).reshape(-1)

        return self._each(one, (q,), (n * 3,), 0.0).reshape(np.shape(q)[:-1] + (n, 3))

    def codegen(self):
        """The robot for the compiled loop: the rigid-body kernels over its packed model (a :class:`KernelForm`).

        None where the kernels cannot take it (:attr:`no_form_reason`): a joint other than revolute,
        continuous or prismatic, or parameter arrays with sample axes.

        Returns
        -------
        KernelForm or None
        """
        packed = self.packed
        if packed is None:
            return None
        from ..symbolic import KernelForm

        return KernelForm("robot", packed, {name: name for name in ("mass", "force", "mass_dq", "force_dq",
                                                                    "force_dqd")})

    @property
    def packed(self) -> np.ndarray | None:
        """This robot as the compiled kernels read it (:mod:`robustrack.plants.robot_data`; its payload and link
        masses included); None where they cannot (:attr:`no_form_reason`)."""
        scratch = self._scratch
        if "packed" not in scratch:
            from .robot_data import pack_robot

            ok = self.robot.unsupported is None and scratch["scalar"]
            scratch["packed"] = pack_robot(scratch["model"], self.robot.axes) if ok else None
        return scratch["packed"]

    @property
    def no_form_reason(self) -> str:
        """Why the compiled loop cannot take this robot (said by the tracking loop's notice when it runs on numpy)."""
        if self.robot.unsupported is not None:
            return (f"has the {self.robot.unsupported}, which the compiled rigid-body kernels do not take (revolute, "
                    "continuous and prismatic joints)")
        return "has parameter arrays with sample axes (the compiled kernels take one robot at a time)"

    # -- evaluation ---------------------------------------------------------

    def _each(self, fn, states, tail, t):
        """``fn(pin, model, data, q, v[, a])`` at every state of the broadcast batch (parameters per sample).

        One state (1-d float arrays, a scalar t) with scalar parameters — every call of the tracking
        loop's right-hand sides — goes straight to ``fn`` (a Python call, not the batch machinery).
        """
        pin = _pinocchio()
        n = self.n
        scratch = self._scratch
        model, data = scratch["model"], scratch["data"]
        if scratch["scalar"] and np.ndim(t) == 0 and all(
                type(x) is np.ndarray and x.shape == (n,) and x.dtype == np.float64 for x in states):
            args = states if len(states) > 1 else (states[0], np.zeros(n))
            return np.reshape(fn(pin, model, data, self.robot.to_pinocchio(args[0]), *args[1:]), tail)
        arrays = []
        for label, x in zip(("q", "qd", "qdd"), states):
            arr = as_float_array(x, label, ndim_min=1)
            if np.iscomplexobj(arr):
                raise ParameterError(f"`{label}`: a URDF plant takes real states (no complex step).")
            if arr.shape[-1] != n:
                raise ParameterError(f"`{label}` must have {n} entries {self.coordinates} on its last axis; got "
                                     f"shape {arr.shape}.")
            arrays.append(arr)
        params = {k: np.asarray(v) for k, v in self.values.items()}
        points = self.robot.points
        core = {k: (1 if k in points else 0) for k in params}
        shapes = [a.shape[:-1] for a in arrays] + [np.shape(t)] + [v.shape[:v.ndim - core[k]] for k, v in params.items()]
        try:
            batch = np.broadcast_shapes(*shapes)
        except ValueError:
            raise ParameterError(f"The batch axes of q, qd, t and the parameter arrays must broadcast together; got "
                                 f"{shapes}.") from None
        arrays = [np.broadcast_to(a, batch + (n,)) for a in arrays]
        sampled = {k: np.broadcast_to(v, batch + v.shape[v.ndim - core[k]:]) for k, v in params.items() if v.ndim > core[k]}
        out = np.empty(batch + tail)
        for idx in np.ndindex(*batch):
            if sampled:
                key = tuple(np.asarray(v[idx]).tobytes() for v in sampled.values())
                if key != scratch.get("key"):
                    _set_inertias(pin, model, self.robot, {**self.values, **{k: v[idx] for k, v in sampled.items()}})
                    scratch["key"] = key
            args = [a[idx] for a in arrays]
            args[0] = self.robot.to_pinocchio(args[0])
            if len(args) == 1:
                args.append(np.zeros(n))
            out[idx] = np.reshape(fn(pin, model, data, *args), tail)
        return out


_LOWER: dict = {}


def _crba(pin, model, data, q):
    M = pin.crba(model, data, q)  # a new array; Pinocchio fills its upper triangle only
    n = M.shape[0]
    if n not in _LOWER:
        i, j = np.tril_indices(n, -1)
        _LOWER[n] = (i, j, j, i)
    i, j, ti, tj = _LOWER[n]
    M[i, j] = M[ti, tj]
    return M


def _locked(pin, model, locked, label):
    """The model with the ``locked`` joints held (``pinocchio.buildReducedModel``), and (name, position) of each."""
    names = list(model.names)[1:]
    if isinstance(locked, Mapping):
        held = dict(locked)
    elif isinstance(locked, (list, tuple)) and all(isinstance(x, str) for x in locked):
        held = dict.fromkeys(locked)
    else:
        raise ParameterError(f"`locked` must map joint names to positions, or list joint names; got {locked!r}.")
    unknown = [j for j in held if j not in names]
    if unknown:
        raise ParameterError(f"`locked`: {label} has no joint(s) {unknown}; its joints are {names}.")
    q_ref = pin.neutral(model)
    for name, value in held.items():
        joint = model.joints[model.getJointId(name)]
        if value is not None:
            if joint.nq != 1:
                raise ParameterError(f"`locked`: joint {name!r} has {joint.nq} coordinates; give it without a "
                                     "position (held at Pinocchio's neutral one).")
            q_ref[joint.idx_q] = float(finite(as_float_array(value, f"locked[{name!r}]"), f"locked[{name!r}]"))
    if len(held) == len(names):
        raise ParameterError(f"`locked` holds every joint of {label}: nothing would move.")
    # a continuous joint (cos θ, sin θ) is held at its neutral angle 0
    positions = tuple((j, float(q_ref[model.joints[model.getJointId(j)].idx_q])
                       if model.joints[model.getJointId(j)].nq == 1 else 0.0) for j in held)
    return pin.buildReducedModel(model, [model.getJointId(j) for j in held], q_ref), positions


def _limit(values) -> np.ndarray:
    """A URDF limit vector with the absent ones (0, or Pinocchio's "no limit" of ~1e308) as inf."""
    lim = np.array(values, dtype=float)
    lim[~(lim > 0) | (lim > 1e300)] = np.inf
    return lim


def position_notes(names, limits, t, q) -> list:
    """One sentence per coordinate that leaves its URDF position range along ``(t, q)`` (:meth:`URDFPlant.motion_notes`)."""
    t, q = np.asarray(t, dtype=float), np.asarray(q, dtype=float)
    notes = []
    if t.size == 0:
        return notes
    lo, hi = limits
    out = (q < lo) | (q > hi)
    for j in np.nonzero(out.any(axis=0))[0]:
        notes.append(f"joint {names[j]!r} leaves its URDF position range [{lo[j]:.4g}, {hi[j]:.4g}], first at t = "
                     f"{float(t[np.argmax(out[:, j])]):.4g} s (the robot stops there)")
    return notes


def velocity_notes(names, kinds, limit, t, qd) -> list:
    """One sentence per coordinate whose |q̇| exceeds ``limit`` along ``(t, qd)`` (see :meth:`URDFPlant.motion_notes`)."""
    t, qd = np.asarray(t, dtype=float), np.asarray(qd, dtype=float)
    notes = []
    if t.size == 0:
        return notes
    over = np.abs(qd) > limit
    for j in np.nonzero(over.any(axis=0))[0]:
        unit = {"angle": "rad/s", "length": "m/s"}.get(kinds[j], "[q]/s")
        first = float(t[np.argmax(over[:, j])])
        notes.append(f"joint {names[j]!r} exceeds its URDF velocity limit {limit[j]:.4g} {unit}: |q̇| up to "
                     f"{np.max(np.abs(qd[:, j])):.4g} {unit}, first at t = {first:.4g} s")
    return notes


def _init(self, robot: _Robot, values: dict):
    """Validate the parameters and set up this plant's own Pinocchio model (inertias from its values)."""
    pin = _pinocchio()
    points = robot.points
    allowed = set(robot.bodies) | {"payload_mass"} | set(points)
    unknown = sorted(set(values) - allowed)
    if unknown:
        raise ParameterError(f"URDFPlant has no parameter(s) {unknown}; its parameters are {sorted(allowed)}.")
    clean = {}
    for name, value in values.items():
        arr = finite(as_float_array(value, name), name)
        if name in points and (arr.ndim < 1 or arr.shape[-1] != 3):
            frame = f"frame {robot.payload_frame!r}" if name == "payload_com" else f"the frame of link {name[4:]!r}"
            raise ParameterError(f"`{name}` must be a point (x, y, z) in m in {frame}; got shape {arr.shape}.")
        if name not in points and np.any(arr < 0):
            raise ParameterError(f"`{name}` is a mass and must be >= 0 kg; got {value!r}.")
        if arr.ndim:
            arr = arr.copy()
            arr.setflags(write=False)
        clean[name] = float(arr) if arr.ndim == 0 else arr
    object.__setattr__(self, "robot", robot)
    object.__setattr__(self, "values", types.MappingProxyType(clean))
    model = pin.Model(robot.model)
    scalar = {k: v for k, v in clean.items() if np.ndim(v) == (1 if k in points else 0)}
    if len(scalar) == len(clean):
        _set_inertias(pin, model, robot, clean)
    object.__setattr__(self, "_scratch", {"model": model, "data": model.createData(),
                                          "scalar": len(scalar) == len(clean)})


def _set_inertias(pin, model, robot: _Robot, values):
    """Each joint's inertia = nominal × (m_link / nominal m_link) at its centre of mass com_link (the rotational
    inertia about it unchanged but for the scale), plus the point payload."""
    for j, name in enumerate(robot.bodies, start=1):
        nominal = robot.model.inertias[j]
        scale = float(values[name]) / nominal.mass if nominal.mass > 0 else 0.0
        com = np.asarray(values[robot.coms[j - 1]], dtype=float) if robot.coms else np.asarray(nominal.lever)
        moved = not np.array_equal(com, np.asarray(nominal.lever))
        # unchanged: kept as given (an identification's perturbed inertia need not pass Inertia's positivity check)
        model.inertias[j] = nominal if scale == 1.0 and not moved else pin.Inertia(
            nominal.mass * scale, com if moved else nominal.lever, nominal.inertia * scale)
    mass = float(values["payload_mass"])
    if mass > 0:
        com = robot.payload_placement.act(np.asarray(values["payload_com"], dtype=float))
        point = pin.Inertia(mass, com, np.zeros((3, 3)))
        model.inertias[robot.payload_joint] = model.inertias[robot.payload_joint] + point
