"""Frame constraints: a robot's frame held at a point, on a plane or a line, in an orientation, or on a path.

Built from a :class:`~robustrack.plants.URDFPlant` and a frame name, each is a holonomic constraint
φ(q, t) = 0 (W 2.2; stabilized φ̈ + 2ξω φ̇ + ω² φ = 0, W 2.3.6 and ``docs/theory``) with its
acceleration form A q̈ = b from the frame's Jacobian J (world-aligned at the frame origin) and J̇q̇
(the classical acceleration of the origin, and the angular acceleration, at q̈ = 0):

- position rows along unit directions d (world): φ = dᵀ (p(q) − x(t)), A = dᵀ J_v,
  b = dᵀ (ẍ − J̇q̇_v) − 2ξω φ̇ − ω² φ — :meth:`FrameConstraint.point` (d = the three axes),
  :meth:`~FrameConstraint.plane` (the normal), :meth:`~FrameConstraint.line` (two normals of the line),
  :meth:`~FrameConstraint.trajectory` (a moving target x_d(t): sympy expressions in t, as
  :class:`~robustrack.requirements.TaskSpaceTrajectory` takes them);
- orientation rows: φ = log(R(q) R*ᵀ)∨ (rad, world), A = J_ω, b = −J̇q̇_ω − 2ξω ω − ω² φ —
  :meth:`~FrameConstraint.orientation`; :meth:`~FrameConstraint.pose` is a point and an orientation.
  (φ̇ is the frame's angular velocity ω, which is d/dt of φ where φ = 0: the stabilization pulls small
  errors back; the rows are exact at the constraint.)

Each is a :class:`~robustrack.constraints.Constraint` like every other: ``matrices``, ``residual``
(φ: m or rad), ``velocity_residual`` (φ̇), all rows holonomic, so
:func:`~robustrack.requirements.consistent_initial_state` finds a start on it; :func:`~robustrack.constraints.stack`
combines them (with each other and with any constraint). :meth:`FrameConstraint.contact` turns the
multipliers λ of Qᶜ = Aᵀλ (:func:`robustrack.mechanics.constraint_multipliers`) into the force (N) — and,
for orientation rows, the moment (N·m) — the constraint exerts on the robot at the frame's origin,
expressed in the frame: what a run reports beside Qᶜ.

Two evaluations of the same rows: the numpy reference here (Pinocchio's frame Jacobian and classical
acceleration, one state at a time), and the compiled loop's (:meth:`FrameConstraint.codegen`, a
:class:`~robustrack.symbolic.KernelForm` of :mod:`robustrack.compiled.rigid_body`: the robot and the rows as
data; a moving target adds a small function of t generated once per structure). Once a compiled loop has loaded
the robots' kernels in this process, a batch of states (a run's output times) goes through them in one call —
A, b, φ, φ̇ and the frames' rotations together (:mod:`robustrack.compiled.evaluate`); one state stays with
Pinocchio.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from .._evaluator import batch as batch_evaluation
from .._lazy import sympy as sp
from ..constraints import Constraint, Stabilization
from ..errors import ConstraintError
from ..symbolic import KernelForm, expression_key

__all__ = ["FrameConstraint"]

_KINDS = ("point", "plane", "line", "trajectory", "orientation")


@dataclasses.dataclass(frozen=True, eq=False)
class _Block:
    """One frame's rows: position rows along ``dirs`` (k × 3) to a target, or three orientation rows."""

    kind: str  # one of _KINDS
    frame: str
    frame_id: int
    joint: int  # 0-based
    placement: tuple  # (rotation 3 × 3, origin 3) in the joint's frame
    dirs: np.ndarray  # k × 3 (position rows)
    point: np.ndarray | None  # fixed target point
    rotation: np.ndarray | None  # target rotation (orientation rows)
    target: tuple | None  # (x_d exprs (3), t symbol) of a moving target
    xi: float
    omega: float

    @property
    def m(self) -> int:
        return 3 if self.kind == "orientation" else self.dirs.shape[0]


def _vector(x, name: str, unit: bool = False) -> np.ndarray:
    try:
        v = np.asarray(x, dtype=float).reshape(-1)
    except (TypeError, ValueError):
        raise ConstraintError(f"`{name}` must be 3 numbers (x, y, z in the world frame); got {x!r}.") from None
    if v.shape != (3,) or not np.all(np.isfinite(v)):
        raise ConstraintError(f"`{name}` must be 3 finite numbers (x, y, z in the world frame); got {x!r}.")
    if unit:
        norm = np.linalg.norm(v)
        if norm < 1e-12:
            raise ConstraintError(f"`{name}` must be a nonzero direction; got {x!r}.")
        v = v / norm
    return v


def _rotation(R, name: str) -> np.ndarray:
    try:
        R = np.asarray(R, dtype=float)
    except (TypeError, ValueError):
        raise ConstraintError(f"`{name}` must be a 3 × 3 rotation matrix; got {R!r}.") from None
    if R.shape != (3, 3) or not np.all(np.isfinite(R)) or np.abs(R @ R.T - np.eye(3)).max() > 1e-9 or \
            np.linalg.det(R) < 0:
        raise ConstraintError(f"`{name}` must be a 3 × 3 rotation matrix (orthonormal, det +1, to 1e-9); got {R!r}.")
    return R


def _normals(d) -> np.ndarray:
    """Two unit vectors orthogonal to the unit vector d and to each other (2 × 3)."""
    other = np.eye(3)[int(np.argmin(np.abs(d)))]
    e1 = np.cross(d, other)
    e1 /= np.linalg.norm(e1)
    return np.array([e1, np.cross(d, e1)])


class FrameConstraint(Constraint):
    """Rows on frames of a robot (module docstring); build one with the class methods.

    Parameters
    ----------
    robot : URDFPlant
        The robot (its kinematics; any of its parameter copies).
    blocks : sequence
        Built by the class methods (:meth:`point`, :meth:`plane`, :meth:`line`, :meth:`trajectory`,
        :meth:`orientation`, :meth:`pose`); ``a & b`` joins two frame constraints of one robot.

    Examples
    --------
    >>> from robustrack.plants import URDFPlant, example_robot_urdf
    >>> arm = URDFPlant(example_robot_urdf("ur5"))
    >>> table = FrameConstraint.plane(arm, "tool0", point=[0.4, 0.1, 0.2], normal=[0, 0, 1])
    >>> table.m, table.n
    (1, 6)
    """

    #: Its batches are the package's kernels or Pinocchio state by state, tested against single states
    #: (``tests/test_rigid_body.py``): the run's batch-contract check skips it (:mod:`robustrack.plants.motion`).
    _own_batches = True

    def __init__(self, robot, blocks):
        from .urdf import URDFPlant

        if not isinstance(robot, URDFPlant):
            raise ConstraintError(f"`robot` must be a robustrack.plants.URDFPlant; got {type(robot).__name__}.")
        self.robot = robot
        self.blocks = tuple(blocks)
        self.n = robot.n
        self.m = sum(b.m for b in self.blocks)
        self._numeric = None
        self._targets = None
        self._form = ()
        self._last = None

    def __getstate__(self):  # campaign workers get a copy: Pinocchio's data and the lambdified targets are rebuilt there
        return {**self.__dict__, "_numeric": None, "_targets": None, "_form": (), "_last": None}

    # -- builders -----------------------------------------------------------

    @classmethod
    def point(cls, robot, frame: str, point, *, stabilization: Stabilization | None = None) -> "FrameConstraint":
        """The frame's origin held at ``point`` (3 rows, m, world frame)."""
        return cls(robot, [_block(robot, frame, "point", np.eye(3), point=_vector(point, "point"),
                                  stabilization=stabilization)])

    @classmethod
    def plane(cls, robot, frame: str, point, normal, *, stabilization: Stabilization | None = None
              ) -> "FrameConstraint":
        """The frame's origin on the plane through ``point`` with normal ``normal`` (1 row, world frame)."""
        n = _vector(normal, "normal", unit=True)
        return cls(robot, [_block(robot, frame, "plane", n[None, :], point=_vector(point, "point"),
                                  stabilization=stabilization)])

    @classmethod
    def line(cls, robot, frame: str, point, direction, *, stabilization: Stabilization | None = None
             ) -> "FrameConstraint":
        """The frame's origin on the line through ``point`` along ``direction`` (2 rows, world frame)."""
        d = _vector(direction, "direction", unit=True)
        return cls(robot, [_block(robot, frame, "line", _normals(d), point=_vector(point, "point"),
                                  stabilization=stabilization)])

    @classmethod
    def orientation(cls, robot, frame: str, rotation, *, stabilization: Stabilization | None = None
                    ) -> "FrameConstraint":
        """The frame's orientation held at ``rotation`` (3 × 3, world frame; 3 rows, rad)."""
        return cls(robot, [_block(robot, frame, "orientation", np.zeros((0, 3)), rotation=_rotation(rotation, "rotation"),
                                  stabilization=stabilization)])

    @classmethod
    def pose(cls, robot, frame: str, point, rotation, *, stabilization: Stabilization | None = None
             ) -> "FrameConstraint":
        """The frame's full pose held: its origin at ``point`` and its orientation at ``rotation`` (6 rows)."""
        return cls.point(robot, frame, point, stabilization=stabilization) & cls.orientation(
            robot, frame, rotation, stabilization=stabilization)

    @classmethod
    def trajectory(cls, robot, frame: str, x_d, t=None, *, directions=None,
                   stabilization: Stabilization | None = None) -> "FrameConstraint":
        """The frame's origin following x_d(t) (3 sympy expressions in t, m, world frame).

        Parameters
        ----------
        robot : URDFPlant
        frame : str
        x_d : sequence of 3 sympy expressions in ``t``
            The path (as :class:`~robustrack.requirements.TaskSpaceTrajectory` takes it).
        t : sympy Symbol, optional
            Its time symbol (default ``Symbol("t")``, matched by name).
        directions : array_like (k, 3), optional
            Follow the path along these directions only (e.g. the two axes of a plane the point is held
            on by another constraint); default the three axes.
        stabilization : Stabilization, optional
            ``Stabilization.second_order(xi, omega)``.
        """
        xd = [sp.sympify(e) for e in (x_d if not isinstance(x_d, sp.MatrixBase) else list(x_d))]
        if len(xd) != 3:
            raise ConstraintError(f"`x_d` must be 3 expressions (x, y, z of the path in m); got {len(xd)}.")
        tt = sp.Symbol("t", real=True) if t is None else t
        found = {s for e in xd for s in e.free_symbols if s.name == tt.name}
        tt = found.pop() if len(found) == 1 else tt
        stray = set().union(*(e.free_symbols for e in xd)) - {tt}
        if stray:
            raise ConstraintError(f"`x_d` must be expressions in the time `{tt}` alone; it also contains "
                                  f"{sorted(map(str, stray))}.")
        dirs = np.eye(3) if directions is None else np.asarray(directions, dtype=float)
        if dirs.ndim != 2 or dirs.shape[1] != 3 or not 1 <= dirs.shape[0] <= 3 or not np.all(np.isfinite(dirs)):
            raise ConstraintError(f"`directions` must be 1 to 3 directions (k × 3); got {directions!r}.")
        norms = np.linalg.norm(dirs, axis=1)
        if np.any(norms < 1e-12):
            raise ConstraintError(f"`directions` must be nonzero; got {directions!r}.")
        return cls(robot, [_block(robot, frame, "trajectory", dirs / norms[:, None], target=(tuple(xd), tt),
                                  stabilization=stabilization)])

    def __and__(self, other) -> "FrameConstraint":
        """The rows of both (one robot), in order."""
        if not isinstance(other, FrameConstraint):
            return NotImplemented
        if other.robot.robot is not self.robot.robot:
            raise ConstraintError("`&` joins frame constraints of one robot; these are of two.")
        return FrameConstraint(self.robot, self.blocks + other.blocks)

    # -- the constraint contract (numpy: Pinocchio) -------------------------

    @property
    def holonomic_rows(self) -> np.ndarray:
        """All True: every row is a position-level φ(q, t)."""
        return np.ones(self.m, dtype=bool)

    def matrices(self, q, qd, t=0.0):
        """A (..., m, n) and b (..., m) (module docstring), by Pinocchio's frame kinematics."""
        A, b, _, _ = self._each(q, qd, t)
        return A, b

    def residual(self, q, qd=None, t=0.0):
        """φ (..., m): m for position rows, rad for orientation rows."""
        return self._each(q, qd, t)[2]

    def velocity_residual(self, q, qd, t=0.0):
        """φ̇ (..., m): the origin's velocity along the rows' directions minus the target's, or ω."""
        return self._each(q, qd, t)[3]

    def contact(self, q, qd, t, lam) -> np.ndarray:
        """The force (and moment) the rows exert on the robot at each frame's origin, in that frame.

        Parameters
        ----------
        q, qd : array_like (..., n)
        t : float or array_like
        lam : array_like (..., m)
            The multipliers of these rows in Qᶜ = Aᵀλ (:func:`robustrack.mechanics.constraint_multipliers`).

        Returns
        -------
        ndarray (..., 3 × blocks)
            Per block: F (N) for position rows, the moment (N·m) for orientation rows, in the frame's axes
            (:attr:`contact_labels`).
        """
        lam = np.asarray(lam, dtype=float)
        rot = self._each(q, qd, t, rotations=True)
        out, row = [], 0
        for i, blk in enumerate(self.blocks):
            dirs = np.eye(3) if blk.kind == "orientation" else blk.dirs
            world = lam[..., row:row + blk.m] @ dirs  # Σ_r λ_r d_r (world)
            out.append(np.einsum("...ji,...j->...i", rot[..., i, :, :], world))  # Rᵀ F
            row += blk.m
        return np.concatenate(out, axis=-1)

    @property
    def contact_labels(self) -> list:
        """The names and units of :meth:`contact`'s columns, e.g. ``"tool0 plane F_z (N)"``."""
        labels = []
        for blk in self.blocks:
            what, unit = ("M", "N·m") if blk.kind == "orientation" else ("F", "N")
            labels += [f"{blk.frame} {blk.kind} {what}_{a} ({unit})" for a in "xyz"]
        return labels

    def target_values(self, t) -> np.ndarray:
        """x, ẋ, ẍ (world, m) of each moving target at the times ``t``: 9 columns per block that has one, in order
        (the program's targets, :meth:`codegen`).

        Parameters
        ----------
        t : array_like (N,)

        Returns
        -------
        ndarray (N, 9 × moving targets)
        """
        t = np.asarray(t, dtype=float).reshape(-1)
        columns = []
        for target in self._target_functions():
            if target is not None:
                columns += [np.broadcast_to(np.asarray(e, dtype=float), t.shape) for part in target(t) for e in part]
        out = np.empty((t.size, len(columns)))
        for j, column in enumerate(columns):
            out[:, j] = column
        return out

    def _target_functions(self) -> list:
        """Per block, x_d(t), ẋ_d(t), ẍ_d(t) of its moving target lambdified (None: a fixed target)."""
        if self._targets is None:
            self._targets = [None if b.target is None else sp.lambdify(b.target[1], [
                list(b.target[0]), [e.diff(b.target[1]) for e in b.target[0]],
                [e.diff(b.target[1], 2) for e in b.target[0]]], modules="numpy") for b in self.blocks]
        return self._targets

    def _batch(self, q, qd, t):
        """(A, b, φ, φ̇, poses) of a batch of states by the compiled evaluator (:mod:`robustrack.compiled.evaluate`),
        or None where it is not loaded. The last batch is kept: a run's post-processing asks A and b, φ and the
        frames' rotations at the same states one after the other (answered with copies: the caller owns them)."""
        last = self._last
        if last is None or not all(np.array_equal(x, y) for x, y in zip(last[0], (q, qd, t))):
            rows = batch_evaluation(self, "frames", q, qd, t)
            if rows is None:
                return None
            last = self._last = ((q.copy(), qd.copy(), t.copy()), rows)
        return tuple(x.copy() for x in last[1])

    def _each(self, q, qd, t, rotations=False):
        """(A, b, φ, φ̇) at every state of the batch, or the frames' rotations (..., blocks, 3, 3): a batch through the
        compiled kernels where they are loaded (:meth:`_batch`), one state (and any batch otherwise) through
        Pinocchio — the reference; the two agree to ≤ 1e-11 relative (``tests/test_rigid_body.py``)."""
        from .urdf import _pinocchio

        n, m = self.n, self.m
        q = np.asarray(q, dtype=float)
        qd = np.zeros_like(q) if qd is None else np.asarray(qd, dtype=float)
        for label, x in (("q", q), ("qd", qd)):
            if x.ndim < 1 or x.shape[-1] != n:
                raise ConstraintError(f"`{label}` must have shape (..., {n}); got {x.shape}.")
        t = np.asarray(t, dtype=float)
        try:
            batch = np.broadcast_shapes(q.shape[:-1], qd.shape[:-1], t.shape)
        except ValueError:
            raise ConstraintError(f"The batch axes of q, qd and t must broadcast together; got {q.shape[:-1]}, "
                                  f"{qd.shape[:-1]}, {t.shape}.") from None
        q, qd, t = (np.broadcast_to(q, batch + (n,)), np.broadcast_to(qd, batch + (n,)), np.broadcast_to(t, batch))
        if batch:
            rows = self._batch(q, qd, t)
            if rows is not None:
                return rows[4][..., :9].reshape(batch + (len(self.blocks), 3, 3)) if rotations else rows[:4]
        pin = _pinocchio()
        if self._numeric is None:
            model = pin.Model(self.robot.robot.model)
            self._numeric = (model, model.createData())
        model, data = self._numeric
        targets = self._target_functions()
        lwa = pin.ReferenceFrame.LOCAL_WORLD_ALIGNED
        if rotations:
            out = np.empty(batch + (len(self.blocks), 3, 3))
        else:
            A, b, phi, phid = np.empty(batch + (m, n)), np.empty(batch + (m,)), np.empty(batch + (m,)), np.empty(batch + (m,))
        for idx in np.ndindex(*batch):
            qp = self.robot.robot.to_pinocchio(q[idx])
            v = qd[idx]
            pin.computeJointJacobians(model, data, qp)
            pin.forwardKinematics(model, data, qp, v, np.zeros(n))
            row = 0
            for i, blk in enumerate(self.blocks):
                pose = pin.updateFramePlacement(model, data, blk.frame_id)
                if rotations:
                    out[idx + (i,)] = pose.rotation
                    continue
                J = np.array(pin.getFrameJacobian(model, data, blk.frame_id, lwa))
                vel = pin.getFrameVelocity(model, data, blk.frame_id, lwa)
                acc = pin.getFrameClassicalAcceleration(model, data, blk.frame_id, lwa)
                k = blk.m
                if blk.kind == "orientation":
                    e = np.array(pin.log3(np.array(pose.rotation) @ blk.rotation.T))
                    w = np.array(vel.angular)
                    A[idx + (slice(row, row + k),)] = J[3:]
                    b[idx + (slice(row, row + k),)] = (-np.array(acc.angular) - 2 * blk.xi * blk.omega * w
                                                       - blk.omega ** 2 * e)
                    phi[idx + (slice(row, row + k),)] = e
                    phid[idx + (slice(row, row + k),)] = w
                else:
                    if blk.target is None:
                        x, xd, xdd = blk.point, np.zeros(3), np.zeros(3)
                    else:
                        x, xd, xdd = (np.array(a, dtype=float) for a in targets[i](float(t[idx])))
                    f = blk.dirs @ (np.array(pose.translation) - x)
                    fd = blk.dirs @ (np.array(vel.linear) - xd)
                    A[idx + (slice(row, row + k),)] = blk.dirs @ J[:3]
                    b[idx + (slice(row, row + k),)] = (blk.dirs @ (xdd - np.array(acc.linear))
                                                       - 2 * blk.xi * blk.omega * fd - blk.omega ** 2 * f)
                    phi[idx + (slice(row, row + k),)] = f
                    phid[idx + (slice(row, row + k),)] = fd
                row += k
        return out if rotations else (A, b, phi, phid)

    # -- the compiled form --------------------------------------------------

    def codegen(self) -> KernelForm | None:
        """The rows for the compiled loop: the robot and the rows as data (:mod:`robustrack.compiled.rigid_body`).

        Returns
        -------
        KernelForm or None
            None where the robot has none (:attr:`no_form_reason`).
        """
        if self._form == ():  # built once: the constraint is immutable
            robot = self.robot.packed
            if robot is None:
                self._form = None
            else:
                program, exprs, t = _program(self.blocks)
                values = np.concatenate([robot, program])
                self._form = (KernelForm("frames", values, {"ab": "frames_ab"}, combine=_combine) if not exprs else
                              KernelForm("frames/" + expression_key(tuple(exprs), t), values, {"ab": None},
                                         (tuple(exprs), t), combine=_combine))
        return self._form

    @property
    def no_form_reason(self) -> str:
        """Why the compiled loop cannot take these rows (the robot's reason)."""
        return f"is on a robot that {self.robot.no_form_reason}"

    def __repr__(self) -> str:
        parts = ", ".join(f"{b.frame} {b.kind}" for b in self.blocks)
        return f"FrameConstraint({parts}; n={self.n}, m={self.m})"


def _block(robot, frame, kind, dirs, *, point=None, rotation=None, target=None, stabilization=None) -> _Block:
    """A block of rows on ``frame`` of ``robot`` (checks the frame and the stabilization)."""
    from .urdf import URDFPlant

    if not isinstance(robot, URDFPlant):
        raise ConstraintError(f"`robot` must be a robustrack.plants.URDFPlant; got {type(robot).__name__}.")
    model = robot.robot.model
    if not isinstance(frame, str) or not model.existFrame(frame):
        names = [f.name for f in model.frames]
        raise ConstraintError(f"`frame`: the robot has no frame {frame!r}; its frames are {names}.")
    if stabilization is not None and (not isinstance(stabilization, Stabilization) or stabilization.order != 2):
        raise ConstraintError("`stabilization`: a frame constraint φ(q, t) = 0 is stabilized at second order, "
                              "φ̈ + 2ξω φ̇ + ω² φ = 0: use Stabilization.second_order(xi, omega).")
    fid = model.getFrameId(frame)
    f = model.frames[fid]
    placement = (np.array(f.placement.rotation), np.array(f.placement.translation))
    xi, om = (0.0, 0.0) if stabilization is None else (stabilization.xi, stabilization.omega)
    return _Block(kind, frame, int(fid), int(f.parentJoint) - 1, placement, np.asarray(dirs, dtype=float), point,
                  rotation, target, float(xi), float(om))


def _program(blocks):
    """The rows as :func:`robustrack.compiled.rigid_body.frame_rows` reads them (:mod:`robustrack.plants.robot_data`),
    and the moving targets' expressions (x, ẋ, ẍ of each: 9 per target) with their time symbol."""
    from .robot_data import pack_block

    records, exprs, t = [], [], None
    for blk in blocks:
        timed = -1
        if blk.target is not None:
            xd, tt = blk.target
            if t is not None and tt != t:
                xd = tuple(e.xreplace({tt: t}) for e in xd)
            t = t if t is not None else tt
            timed = len(exprs) // 9
            exprs += list(xd) + [e.diff(t) for e in xd] + [e.diff(t, 2) for e in xd]
        records.append(pack_block(blk.kind == "orientation", blk.joint, blk.placement, blk.dirs, blk.point, blk.rotation,
                                  blk.xi, blk.omega, timed))
    head = np.array([len(blocks), sum(b.m for b in blocks)], dtype=float)
    return np.concatenate([head] + records), exprs, t


def _combine(forms):
    """One form of stacked frame constraints' forms, their rows in order; None unless all are frame constraints of
    robots with the same kinematics."""
    from .robot_data import B_K, B_KIND, B_TIMED, program_blocks

    if not all(isinstance(f, KernelForm) and f.key.startswith("frames") for f in forms):
        return None
    robots, records = zip(*(program_blocks(f.values) for f in forms))
    if any(r.shape != robots[0].shape for r in robots):
        return None
    exprs, t, blocks, rows = [], None, [], 0
    for form, recs in zip(forms, records):
        offset = len(exprs) // 9
        if form.targets:
            these, tt = form.targets
            if t is not None and tt != t:
                these = tuple(e.xreplace({tt: t}) for e in these)
            t = t if t is not None else tt
            exprs += list(these)
        for rec in recs:
            rec = rec.copy()
            if rec[B_TIMED] >= 0:
                rec[B_TIMED] += offset
            rows += 3 if rec[B_KIND] == 1.0 else int(rec[B_K])
            blocks.append(rec)
    values = np.concatenate([robots[0], [len(blocks), rows]] + blocks)
    if not exprs:
        return KernelForm("frames", values, {"ab": "frames_ab"}, combine=_combine)
    return KernelForm("frames/" + expression_key(tuple(exprs), t), values, {"ab": None}, (tuple(exprs), t),
                      combine=_combine)
