"""A robot's model as one flat float64 array: what the compiled rigid-body kernels read (numpy only).

The compiled kernels (:mod:`robustrack.compiled.rigid_body`) take a robot as DATA, not as structure: the
parent of each joint, its type and axis, its placement in the parent joint's frame, the inertia of the
body it moves, its armature, damping and Coulomb friction, and the gravity — read from Pinocchio's
``Model`` (so every URDF Pinocchio reads is a robot here). Payload and link masses are numbers in this
array, so a campaign over them compiles nothing new; the array is the parameter vector ``p`` of the
generated-function signature (:data:`robustrack.compiled.systems.PLANT_FUNCTION`).

Layout (offsets are constants of this module, shared with the kernels):

- a header of :data:`HEADER` numbers: ``[MAGIC, n, JOINT_SIZE, first joint, gravity, total size, 0, 0]``;
- one record of :data:`JOINT_SIZE` numbers per joint 0 … n−1 (Pinocchio's order: a parent comes before its
  children): ``parent`` (−1: the world), ``type`` (:data:`REVOLUTE` or :data:`PRISMATIC`), the unit ``axis``
  (3, in the joint's frame), the joint placement in its parent joint's frame (rotation ``ROT`` 3 × 3 row-major,
  translation ``POS`` 3), the body's spatial inertia about the joint origin (mass ``MASS``, first moment
  ``LEVER`` = m c, rotational inertia about the origin ``INERTIA`` 3 × 3 row-major: I_c − m [c]ₓ²),
  ``ARMATURE``, ``DAMPING`` and ``FRICTION``;
- gravity (3), Pinocchio's ``model.gravity.linear``.

A frame constraint's parameter array is the packed robot followed by its program
(:mod:`robustrack.plants.frames`): ``[blocks, rows m]`` then :data:`BLOCK` numbers per block — ``B_KIND``
(0 position rows, 1 orientation rows), ``B_JOINT`` (0-based), the frame's placement in the joint (``B_FROT``
3 × 3, ``B_FPOS`` 3), ``B_K`` rows, their unit directions ``B_DIRS`` (3 × 3, k used; world), a fixed target
point ``B_POINT``, a target rotation ``B_TROT`` (3 × 3), ``B_XI`` and ``B_OMEGA`` of the stabilization (0: none)
and ``B_TIMED``, the index of the block's moving target (−1: fixed; else 9 numbers x, ẋ, ẍ of the target
function at t).

Joints: revolute and continuous are an angle (a continuous joint's angle θ is Pinocchio's (cos θ, sin θ)),
prismatic a length, fixed joints are merged into their bodies by Pinocchio's URDF parser. Any other joint
(helical, planar, spherical, a floating base, a mimic joint) is not packed: :func:`unsupported_joint` names it
and the tracking loop runs on numpy (with the notice saying so).
"""

from __future__ import annotations

import numpy as np

__all__ = ["MAGIC", "HEADER", "JOINT_SIZE", "REVOLUTE", "PRISMATIC", "N_AT", "SIZE_AT", "JOINTS_AT", "GRAVITY_AT",
           "PARENT", "TYPE", "AXIS", "ROT", "POS", "MASS", "LEVER", "INERTIA", "ARMATURE", "DAMPING", "FRICTION",
           "joint_axes", "unsupported_joint", "pack_robot", "pack_size", "PROGRAM_HEADER", "BLOCK", "B_KIND", "B_JOINT",
           "B_FROT", "B_FPOS", "B_K", "B_DIRS", "B_POINT", "B_TROT", "B_XI", "B_OMEGA", "B_TIMED", "pack_block",
           "program_blocks"]

MAGIC = 28.0  # issue 28: a packed robot starts with it (a sanity check of the kernels' input)
HEADER = 8
N_AT, SIZE_AT, JOINTS_AT, GRAVITY_AT = 1, 5, 3, 4
JOINT_SIZE = 33
PARENT, TYPE, AXIS, ROT, POS, MASS, LEVER, INERTIA, ARMATURE, DAMPING, FRICTION = (0, 1, 2, 5, 14, 17, 18, 21, 30,
                                                                                   31, 32)
REVOLUTE, PRISMATIC = 0.0, 1.0


def joint_axes(pin, model) -> list:
    """Per joint 1 … njoints−1: ``(kind, axis)`` with kind "revolute", "continuous", "prismatic" or None.

    The axis is read from the joint's motion subspace S (Pinocchio's local joint Jacobian at the neutral
    configuration): (0, a) for a revolute joint, (a, 0) for a prismatic one — whatever Pinocchio's joint model
    (RX, RevoluteUnaligned, RUBZ, PrismaticUnaligned …).

    Parameters
    ----------
    pin : module
        pinocchio.
    model : pinocchio.Model

    Returns
    -------
    list of (str or None, ndarray (3,) or None)
    """
    data = model.createData()
    q = pin.neutral(model)
    pin.computeJointJacobians(model, data, q)
    out = []
    for j in range(1, model.njoints):
        joint = model.joints[j]
        if joint.nv != 1 or joint.nq not in (1, 2):
            out.append((None, None))
            continue
        # (6, nv): a robot of one joint gets a flat (6,) array from Pinocchio's bindings
        S = np.array(pin.getJointJacobian(model, data, j, pin.ReferenceFrame.LOCAL)).reshape(6, model.nv)[:, joint.idx_v]
        lin, ang = S[:3], S[3:]
        if np.linalg.norm(lin) < 1e-12 and abs(np.linalg.norm(ang) - 1) < 1e-12:
            out.append(("continuous" if joint.nq == 2 else "revolute", ang / np.linalg.norm(ang)))
        elif np.linalg.norm(ang) < 1e-12 and abs(np.linalg.norm(lin) - 1) < 1e-12 and joint.nq == 1:
            out.append(("prismatic", lin / np.linalg.norm(lin)))
        else:
            out.append((None, None))
    return out


def unsupported_joint(model, axes) -> str | None:
    """The first joint the kernels cannot take, as "joint NAME (Pinocchio's JointModelX)"; None if all can.

    Parameters
    ----------
    model : pinocchio.Model
    axes : list
        :func:`joint_axes` of the model.

    Returns
    -------
    str or None
    """
    for j, (kind, _) in enumerate(axes, start=1):
        if kind is None:
            return f"joint {model.names[j]!r} ({model.joints[j].shortname()})"
    return None


def pack_size(n: int) -> int:
    """The length of a packed robot.

    Parameters
    ----------
    n : int
        Its joints.

    Returns
    -------
    int
    """
    return HEADER + JOINT_SIZE * n + 3


def pack_robot(model, axes) -> np.ndarray:
    """The flat array of ``model`` (its inertias as they are: the plant sets payload and link masses first).

    Parameters
    ----------
    model : pinocchio.Model
        Joints with one velocity each (:func:`joint_axes` gives a kind for every one).
    axes : list
        :func:`joint_axes` of the model.

    Returns
    -------
    ndarray (:func:`pack_size` (n),)
    """
    n = model.njoints - 1
    out = np.zeros(pack_size(n))
    out[0], out[N_AT], out[2], out[JOINTS_AT], out[GRAVITY_AT], out[SIZE_AT] = (
        MAGIC, n, JOINT_SIZE, HEADER, HEADER + JOINT_SIZE * n, pack_size(n))
    armature = np.asarray(getattr(model, "armature", np.zeros(model.nv)), dtype=float)
    damping, friction = np.asarray(model.damping, dtype=float), np.asarray(model.friction, dtype=float)
    for j in range(1, model.njoints):
        kind, axis = axes[j - 1]
        rec = out[HEADER + JOINT_SIZE * (j - 1): HEADER + JOINT_SIZE * j]
        iv = model.joints[j].idx_v
        placement, inertia = model.jointPlacements[j], model.inertias[j]
        m, c = float(inertia.mass), np.array(inertia.lever, dtype=float)
        rec[PARENT] = model.parents[j] - 1
        rec[TYPE] = PRISMATIC if kind == "prismatic" else REVOLUTE
        rec[AXIS:AXIS + 3] = axis
        rec[ROT:ROT + 9] = np.array(placement.rotation).reshape(-1)
        rec[POS:POS + 3] = np.array(placement.translation)
        rec[MASS] = m
        rec[LEVER:LEVER + 3] = m * c
        rec[INERTIA:INERTIA + 9] = (np.array(inertia.inertia) + m * (c @ c * np.eye(3) - np.outer(c, c))).reshape(-1)
        rec[ARMATURE], rec[DAMPING], rec[FRICTION] = armature[iv], damping[iv], friction[iv]
    out[HEADER + JOINT_SIZE * n:] = np.array(model.gravity.linear)
    return out


PROGRAM_HEADER = 2
BLOCK = 40
B_KIND, B_JOINT, B_FROT, B_FPOS, B_K, B_DIRS, B_POINT, B_TROT, B_XI, B_OMEGA, B_TIMED = (0, 1, 2, 11, 14, 15, 24, 27,
                                                                                        36, 37, 38)


def pack_block(orientation: bool, joint: int, placement, dirs, point, rotation, xi: float, omega: float,
               timed: int) -> np.ndarray:
    """One block of a frame-constraint program (module docstring).

    Parameters
    ----------
    orientation : bool
        Orientation rows (else position rows along ``dirs``).
    joint : int
        The frame's joint, 0-based.
    placement : (ndarray (3, 3), ndarray (3,))
        The frame in its joint's frame.
    dirs : ndarray (k, 3)
        Position rows' unit directions (world).
    point : ndarray (3,) or None
        A fixed target point.
    rotation : ndarray (3, 3) or None
        The target rotation.
    xi, omega : float
        Stabilization (0: none).
    timed : int
        The moving target's index (−1: fixed).

    Returns
    -------
    ndarray (BLOCK,)
    """
    rec = np.zeros(BLOCK)
    rec[B_KIND] = 1.0 if orientation else 0.0
    rec[B_JOINT] = joint
    rec[B_FROT:B_FROT + 9] = np.asarray(placement[0], dtype=float).reshape(-1)
    rec[B_FPOS:B_FPOS + 3] = placement[1]
    k = 3 if orientation else len(dirs)
    rec[B_K] = k
    if not orientation:
        rec[B_DIRS:B_DIRS + 3 * k] = np.asarray(dirs, dtype=float).reshape(-1)
    if point is not None:
        rec[B_POINT:B_POINT + 3] = point
    if rotation is not None:
        rec[B_TROT:B_TROT + 9] = np.asarray(rotation, dtype=float).reshape(-1)
    rec[B_XI], rec[B_OMEGA], rec[B_TIMED] = xi, omega, timed
    return rec


def program_blocks(values) -> tuple:
    """The packed robot and the blocks of a frame constraint's parameter array.

    Parameters
    ----------
    values : ndarray
        A packed robot followed by a program (module docstring).

    Returns
    -------
    (ndarray, list of ndarray)
        The robot and the (BLOCK,) records.
    """
    size = int(values[SIZE_AT])
    count = int(values[size])
    start = size + PROGRAM_HEADER
    return values[:size], [values[start + BLOCK * i: start + BLOCK * (i + 1)] for i in range(count)]
