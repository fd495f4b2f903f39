"""The guard against a conflated plant (W ch. 3, Hamel's paradox): a plant whose Lagrangian had a velocity
constraint substituted into it leaves a footprint — M singular along a coordinate a nonholonomic row still
involves — and gives wrong equations. :func:`check_not_conflated` refuses it wherever a plant meets a constraint
(the servo model here, the seed studies' models in :mod:`robustrack.studies`, which import it from here; the
conflated models themselves are in :mod:`robustrack.studies.conflation`).
"""

from __future__ import annotations

import numpy as np

from ..constraints import Nonholonomic, StackedConstraint
from ..errors import ParameterError

__all__ = ["conflation_footprint", "check_not_conflated"]


def _nonholonomic_rows(constraint):
    members = constraint.constraints if isinstance(constraint, StackedConstraint) else (constraint,)
    rows, start = [], 0
    for c in members:
        if isinstance(c, Nonholonomic):
            rows.extend(range(start, start + c.m))
        start += c.m
    return rows


def _generic_state(n):
    """A fixed, unremarkable state (no zeros, no symmetry) for structural checks."""
    k = np.arange(1, n + 1)
    return 0.31 + 0.173 * k, 0.57 - 0.211 * k


def conflation_footprint(plant, constraint, q=None, qd=None, t=0.0, *, rcond=1e-10) -> str | None:
    """The trace a full substitution leaves: a nonholonomic row acting on a direction M does not weigh.

    If a velocity constraint was substituted into T to eliminate a velocity, M = ∂²T/∂q̇² is
    singular along that coordinate while the constraint row still involves it (W 3.3.1:
    T+ = ẋ² + ẏ² has no ż; W 3.3.2 at α = 1; W 3.3.3). Checked at the given state and at a
    fixed generic state. Holonomic rows are not checked (substituting them is harmless, W 3.3.4).

    Parameters
    ----------
    plant : Plant
        The unconstrained system.
    constraint : Constraint
        Its constraints; the rows of :class:`~robustrack.constraints.Nonholonomic` members are checked.
    q, qd : array_like (n,), optional
        A state to check besides the generic one.
    t : float
        Time.
    rcond : float
        Relative size below which an eigenvalue of M, or a component of a row, counts as zero
        (keyword-only).

    Returns
    -------
    str or None
        A description of the footprint, or None.
    """
    rows = _nonholonomic_rows(constraint)
    if not rows:
        return None
    states = [_generic_state(plant.n)]
    if q is not None and qd is not None:
        states.insert(0, (np.asarray(q, dtype=float), np.asarray(qd, dtype=float)))
    for qs, qds in states:
        M = np.asarray(plant.mass_matrix(qs, t), dtype=float)
        w, U = np.linalg.eigh(M)
        scale = max(float(np.max(np.abs(w))), np.finfo(float).tiny)
        null = U[:, w <= rcond * scale]
        if null.shape[1] == 0:
            continue
        A, _ = constraint.matrices(qs, qds, t)
        for i in rows:
            a = np.asarray(A)[i]
            hit = np.abs(a @ null)
            if np.max(hit, initial=0.0) > 1e-6 * max(np.linalg.norm(a), np.finfo(float).tiny):
                j = int(np.argmax(np.abs(null[:, int(np.argmax(hit))])))
                return (f"the kinetic energy does not weigh the velocity of `{plant.coordinates[j]}` (M is singular "
                        f"along it) but nonholonomic constraint row {i} involves it")
    return None


def check_not_conflated(plant, constraint, q=None, qd=None, t=0.0, *, allow_massless=False) -> None:
    """Refuse a plant whose Lagrangian had a constraint substituted into it (W ch. 3).

    Refuses anything marked ``conflated`` (a :class:`ConflatedModel`) always, and the footprint of
    :func:`conflation_footprint` unless ``allow_massless`` (a genuinely massless
    coordinate under a velocity constraint, which the augmented system of W ch. 4 handles).

    Parameters
    ----------
    plant : Plant
        The unconstrained system.
    constraint : Constraint
        Its constraints.
    q, qd : array_like (n,), optional
        A state to check besides the generic one.
    t : float
        Time.
    allow_massless : bool
        Accept the footprint (keyword-only); a ConflatedModel is refused regardless.

    Raises
    ------
    ParameterError
        With the reason and what to do.
    """
    if getattr(plant, "conflated", False):
        raise ParameterError(
            f"`plant` was made by conflated_model() (substitution {getattr(plant, 'substitution', '?')}): a constraint "
            "substituted into the Lagrangian gives wrong equations for nonholonomic constraints (W ch. 3, Hamel's "
            "paradox). Build the plant from the unconstrained T and V (LagrangianPlant.from_energies) and impose the "
            "constraint separately."
        )
    if allow_massless:
        return
    why = conflation_footprint(plant, constraint, q, qd, t)
    if why is not None:
        raise ParameterError(
            f"`plant` looks conflated with its constraint: {why}. That is what substituting the constraint into the "
            "kinetic energy leaves behind (W 3.3.1), and it gives wrong equations (W ch. 3). Describe the "
            "unconstrained system with independent coordinates (all velocities in T) and impose the constraint "
            "separately; if the coordinate really is massless (W ch. 4), pass allow_massless=True."
        )
