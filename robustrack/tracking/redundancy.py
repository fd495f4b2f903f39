"""Directions of motion a requirement leaves free: n − rank A of ``A q̈ = b`` (docs/guide/robot.md, "Redundant robots").

The fundamental equation (W 2.2.9) determines q̈ wherever A has rank n; with rank A = r < n it fixes r directions and
leaves n − r to the plant's own dynamics under Gauss's principle: the motion keeps the least acceleration, in M's
metric, that meets the requirement (docs/theory/fundamental-equation.md). For a mechanism that is the constrained
motion the seed examples study; for a robot arm it is *redundancy* (a 7-joint Panda asked to hold or move its tool
point and orientation, 6 rows): nothing in the requirement holds the spare joint motion, which can drift through
the robot's joint ranges and speed limits while the tool follows its path. :func:`say_free_directions` says so
before a robot's run (a plant that declares position limits: a URDF robot), naming the count.
"""

from __future__ import annotations

import warnings

import numpy as np

from ..errors import RobustrackNotice

__all__ = ["RedundancyNotice", "free_directions", "say_free_directions", "RANK_RCOND"]

#: A singular value of A below RANK_RCOND × its largest counts as zero (as numpy's matrix_rank, scaled).
RANK_RCOND = 1e-10


class RedundancyNotice(RobustrackNotice):
    """A robot's requirement leaves directions of motion free (rank A < n): said before the run, with the count."""


def free_directions(constraint, q, qd, t) -> int:
    """n − rank A(q, q̇, t): the directions of motion the requirement leaves free at one state.

    Parameters
    ----------
    constraint : Constraint
    q, qd : array_like (n,)
    t : float

    Returns
    -------
    int
        0 when A has rank n (the requirement determines q̈).
    """
    A = np.asarray(constraint.matrices(q, qd, t)[0], dtype=float)
    n = A.shape[-1]
    if A.size == 0:
        return n
    s = np.linalg.svd(A, compute_uv=False)
    return n - int(np.sum(s > RANK_RCOND * s.max())) if s.max() > 0 else n


def say_free_directions(plant, constraint, q0, qd0, t0, rows_of=None) -> int | None:
    """One :class:`RedundancyNotice` when a robot's requirement leaves directions free at its start (before the run).

    Said for plants that declare position limits (:attr:`robustrack.plants.Plant.position_limits`: a URDF robot,
    whose spare motion can leave them); a mechanism's free directions are the constrained motion the seeds study.

    Parameters
    ----------
    plant : Plant
    constraint : Constraint or None
    q0, qd0 : array_like (n,)
    t0 : float
    rows_of : str, optional
        What the rows are, for the message.

    Returns
    -------
    int or None
        The count said (None: not a robot, or nothing free).
    """
    if constraint is None or plant.position_limits is None:
        return None
    free = free_directions(constraint, q0, qd0, t0)
    if free <= 0:
        return None
    n = plant.n
    warnings.warn(
        f"the requirement ({rows_of or type(constraint).__name__}) has rank {n - free} on the robot's {n} joints: "
        f"{free} direction{'s' if free > 1 else ''} of motion {'are' if free > 1 else 'is'} left free (a redundant "
        "robot). The fundamental equation moves {'them' if free > 1 else 'it'} by Gauss's principle (least "
        f"acceleration in M's metric), with nothing to hold {'them' if free > 1 else 'it'}: the joints can drift through the joints' ranges and speed limits while the requirement is "
        "met — add rows for them (a posture or joint reference) or check the joints; docs/guide/robot.md, "
        "\"Redundant robots\".", RedundancyNotice, stacklevel=3)
    return free
