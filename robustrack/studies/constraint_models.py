"""Which motion does a constraint produce? Nonholonomic, vakonomic, servo and limit models.

The fundamental equation (:mod:`robustrack.mechanics`) gives the motion of an *ideal*
(d'Alembert) constraint, whose force may act in every direction the constraint does not
allow motion in. The same constraint Φ(q, q̇, t) = 0 can be read — and realized — in
other ways, and they move the system differently (K, "Dynamics in systems with
constraints"; S §1–2). This module builds each reading as an ordinary plant +
constraint pair for :func:`robustrack.tracking.simulate_constrained`, so every model
runs through the same solver and reports the same quantities.

The models (K: Kozlov's slides, seed 003; S: Sławianowski, seed 002)
-----------------------------------------------------------------------
Nonholonomic (d'Alembert–Lagrange; K "Nonholonomic model" NH; S 1.11, 2.2)
    ``[T] = F + λ ∂Φ/∂q̇``, ``Φ = 0``. This is the fundamental equation itself:
    a plant and a :class:`~robustrack.constraints.Nonholonomic` constraint, nothing more.

Vakonomic (variational; K "Vakonomic model"; S 1.6–1.7, 1.13 (Lusternik), 2.6)
    ``[T] = F + λ [Φ] + λ̇ ∂Φ/∂q̇``, ``Φ = 0``, with the Lagrangian derivative
    ``[Φ] = d/dt ∂Φ/∂q̇ − ∂Φ/∂q``. The multiplier λ is a *state*: the equations are
    first order in λ and need λ(0) (:meth:`VakonomicModel.initial_state` asks for it).
    For Φ linear in q̇ (every mechanical constraint, S §1; K "usually Φ = (a(x), ẋ)")
    ``[Φ]`` depends on (q, q̇, t) only, and at a given λ the equations are the
    fundamental equation with the given force ``Q + [Φ]ᵀλ`` and the ideal constraint
    ``A q̈ = b``, whose constraint force is ``Aᵀ λ̇`` (:func:`vakonomic_motion`). Sign
    convention: K's λ; S's multiplier in (1.7), (2.6) is μ_S = −λ.

Servo (Beghin, in K "Servo constraints")
    ``[T] = F + N λ``, ``Φ = 0``: the constraint is enforced by forces along *given*
    directions N(q, t) (an actuator input matrix, n × k), not by the ideal reaction.
    λ solves ``A M⁻¹ N λ = b − A a`` (:func:`servo_force`); that needs ``A M⁻¹ N`` of
    full row rank — for one constraint and one actuator K's condition
    ``(A⁻¹N, ∂Φ/∂q̇) ≠ 0`` (K writes A for the mass matrix). Where it fails, no force
    along N keeps the constraint: :class:`ServoModel` stops with a
    :class:`~robustrack.errors.RealizabilityError` (time, state, why) and never
    returns a least-squares force. The servo force enters the fundamental equation as
    a non-ideal work vector C = N λ (W 4.2.6–4.2.8): a C that already satisfies the
    constraint passes through it unchanged (``Qᶜ = C``), so the motion is exactly the
    servo motion.

Limits (K Theorems 1 and 2)
    Anisotropic viscous friction ``R_N = ½ N (a·q̇)²`` (no constraint at all,
    :func:`anisotropic_friction_plant`) tends to the *nonholonomic* motion as N → ∞
    (Theorem 1); an added mass ``½ N (a·q̇)²`` in the Lagrangian
    (:func:`added_mass_plant`) tends to a *vakonomic* one (Theorem 2; the limit's
    multiplier is λ = −lim N (a·q̇), so a start on the constraint gives λ(0) = 0).

The substituted ("conflated") Lagrangians of W ch. 3 are in :mod:`robustrack.studies.conflation`.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import dataclass
from typing import Callable

import numpy as np

from .._validate import positive_int
from ..constraints import Constraint, Nonholonomic
from ..errors import ConstraintError, ParameterError
from ..mechanics import DEFAULT_RCOND, solve_constrained
from ..plants.base import Plant
from ..plants.motion import check_constraint_fits
from ..plants.servo import (DEFAULT_REALIZABILITY_RCOND, ServoForce, ServoModel, realizability_margin,  # noqa: F401
                            servo_force)

__all__ = [
    "NoConstraint",
    "VakonomicMotion",
    "vakonomic_motion",
    "lagrangian_derivative",
    "VakonomicPlant",
    "VakonomicConstraint",
    "VakonomicModel",
    "ServoForce",
    "realizability_margin",
    "servo_force",
    "ServoModel",
    "anisotropic_friction_plant",
    "added_mass_plant",
    "DEFAULT_REALIZABILITY_RCOND",
    "skate_model",
    "nonholonomic_skate",
    "vakonomic_skate_reduced",
    "skate_penalty_plant",
    "speed_reducer_model",
    "variational_speed_reducer_reduced",
]



def _mT(X):
    return np.swapaxes(X, -1, -2)


# --------------------------------------------------------------------------- #
# no constraint (the friction and added-mass plants are unconstrained)
# --------------------------------------------------------------------------- #
class NoConstraint(Constraint):
    """Zero constraint rows on n coordinates: ``A`` is ``(..., 0, n)``, Qᶜ = 0.

    For systems that are free (the friction and added-mass limits of K Theorems 1–2)
    but run through :func:`robustrack.tracking.simulate_constrained`, which takes a
    constraint. There are no raw residuals to report (shape ``(..., 0)``).

    Parameters
    ----------
    n : int
        Number of coordinates (>= 1).
    """

    def __init__(self, n: int):
        self.n, self.m = positive_int(n, "n", error=ConstraintError), 0

    def _batch(self, q, qd, t):
        q = np.asarray(q, dtype=float)
        qd = np.zeros_like(q) if qd is None else np.asarray(qd, dtype=float)
        if q.ndim < 1 or q.shape[-1] != self.n or qd.shape[-1] != self.n:
            raise ConstraintError(f"`q` and `qd` must have shape (..., {self.n}); got {q.shape}, {qd.shape}.")
        return np.broadcast_shapes(q.shape[:-1], qd.shape[:-1], np.shape(t))

    def matrices(self, q, qd, t=0.0):
        batch = self._batch(q, qd, t)
        return np.zeros(batch + (0, self.n)), np.zeros(batch + (0,))

    def residual(self, q, qd=None, t=0.0):
        return np.zeros(self._batch(q, qd, t) + (0,))


# --------------------------------------------------------------------------- #
# vakonomic model: pure array math
# --------------------------------------------------------------------------- #
@dataclass(frozen=True)
class VakonomicMotion:
    """Result of :func:`vakonomic_motion`.

    Attributes
    ----------
    qdd : ndarray (..., n)
        Acceleration q̈.
    lam_dot : ndarray (..., m)
        Rate λ̇ of the multipliers.
    reaction : ndarray (..., n)
        The vakonomic reaction ``[Φ]ᵀλ + (∂Φ/∂q̇)ᵀ λ̇`` (S 1.14 with μ_S = −λ): ``M q̈ = Q + reaction``.
    residual : ndarray (...)
        ‖A q̈ − b‖₂ (rounding only: the rows are checked independent).
    """

    qdd: np.ndarray
    lam_dot: np.ndarray
    reaction: np.ndarray
    residual: np.ndarray


def vakonomic_motion(M, Q, A, b, lam, bracket, *, rcond=DEFAULT_RCOND) -> VakonomicMotion:
    """q̈ and λ̇ of the vakonomic equations at given states (K "Vakonomic model"; S 1.13).

    For Φ(q, q̇, t) linear in q̇, with ``A = ∂Φ/∂q̇`` and ``A q̈ = b`` the differentiated
    constraint (Φ̇ = 0), the vakonomic equations

        M q̈ = Q + [Φ]ᵀ λ + Aᵀ λ̇,    A q̈ = b

    are, at fixed λ, the fundamental equation (W 2.2.9) with given force
    ``Q_λ = Q + [Φ]ᵀλ``: ``q̈ = a_λ + M⁻¹Aᵀ(AM⁻¹Aᵀ)⁻¹(b − A a_λ)``, and its constraint
    force ``Qᶜ = Aᵀλ̇`` gives ``λ̇ = (AAᵀ)⁻¹ A Qᶜ``.

    Parameters
    ----------
    M : array_like (..., n, n)
        Mass matrix (symmetric positive semi-definite; singular M as in
        :func:`~robustrack.mechanics.solve_constrained`).
    Q : array_like (..., n)
        Given forces (every term of Lagrange's equations but M q̈).
    A : array_like (..., m, n)
        ``∂Φ/∂q̇``; its rows must be independent (∂Φ/∂q̇ ≠ 0, K).
    b : array_like (..., m)
        Right-hand side of the differentiated constraint ``A q̈ = b``.
    lam : array_like (..., m)
        The multipliers λ (a state of the vakonomic model).
    bracket : array_like (..., m, n)
        Lagrangian derivatives ``[Φ] = d/dt ∂Φ/∂q̇ − ∂Φ/∂q`` of the rows
        (:func:`lagrangian_derivative`).
    rcond : float
        Relative cut-off passed to :func:`~robustrack.mechanics.solve_constrained`.

    Returns
    -------
    VakonomicMotion
        ``qdd``, ``lam_dot``, ``reaction`` and ``residual``.

    Raises
    ------
    ConstraintError
        Dependent (or vanishing) rows of A: λ̇ is not determined.
    """
    A = np.asarray(A, dtype=float)
    lam = np.asarray(lam, dtype=float)
    bracket = np.asarray(bracket, dtype=float)
    if bracket.shape[-2:] != A.shape[-2:] or lam.shape[-1:] != A.shape[-2:-1]:
        raise ParameterError(
            f"`bracket` must have the shape of `A` (..., {A.shape[-2]}, {A.shape[-1]}) and `lam` (..., "
            f"{A.shape[-2]}); got {bracket.shape} and {lam.shape}."
        )
    force = np.einsum("...mn,...m->...n", bracket, lam)
    motion = solve_constrained(M, np.asarray(Q, dtype=float) + force, A, b, rcond=rcond)
    AAt = A @ _mT(A)
    scale = np.max(np.abs(AAt), axis=(-1, -2))
    det = np.linalg.det(AAt)
    m = A.shape[-2]
    if np.any(~(np.abs(det) > (1e3 * np.finfo(float).eps * scale) ** m)):
        raise ConstraintError(
            "The rows of ∂Φ/∂q̇ are dependent (or vanish) at some state, so the vakonomic multiplier rate λ̇ "
            "is not determined (K requires ∂Φ/∂q̇ ≠ 0): drop the dependent rows."
        )
    lam_dot = np.linalg.solve(AAt, (A @ motion.Qc[..., None]))[..., 0]
    return VakonomicMotion(qdd=motion.qdd, lam_dot=lam_dot, reaction=motion.Qc + force, residual=motion.residual)


def lagrangian_derivative(constraint: Nonholonomic):
    """The Lagrangian derivative ``[Φ] = d/dt ∂Φ/∂q̇ − ∂Φ/∂q`` of constraint rows linear in q̇ (K).

    Derived symbolically from ``constraint.expr``: with ``Φ_q̇q̇ = 0``,
    ``(d/dt ∂Φ/∂q̇)_j = Σ_k ∂²Φ/∂q̇_j∂q_k q̇_k + ∂²Φ/∂q̇_j∂t``; the result is compiled
    to numpy (parameters as in the constraint).

    Parameters
    ----------
    constraint : Nonholonomic
        The rows Φ(q, q̇, t), linear in q̇ (affine: a(q, t)·q̇ + c(q, t)).

    Returns
    -------
    callable
        ``bracket(q, qd, t) -> (..., m, n)``.

    Raises
    ------
    ConstraintError
        ``constraint`` is not a :class:`~robustrack.constraints.Nonholonomic`, or its rows
        are not linear in q̇ (then ``[Φ]`` contains q̈ and the vakonomic mass matrix
        ``M − λ Φ_q̇q̇`` depends on λ; not supported).
    """
    import sympy as sp

    if not isinstance(constraint, Nonholonomic):
        raise ConstraintError(
            f"`constraint` must be a robustrack.constraints.Nonholonomic (its symbolic rows give [Φ]); "
            f"got {type(constraint).__name__}."
        )
    q, qd, t = sp.Matrix(constraint.q), sp.Matrix(constraint.qd), constraint.t
    rows = constraint.expr
    Phi_qd = rows.jacobian(qd)
    for i in range(rows.shape[0]):
        if any(sp.simplify(e) != 0 for e in Phi_qd.row(i).jacobian(qd)):
            raise ConstraintError(
                f"Row {i} of the constraint, {rows[i]}, is not linear in the velocities: its vakonomic "
                "equations carry λ ∂²Φ/∂q̇² q̈ (a λ-dependent mass matrix), which this model does not "
                "support. Use a constraint linear in q̇ (every mechanical constraint is, S §1)."
            )
    ddt = sp.Matrix(rows.shape[0], len(q), lambda i, j: sum(Phi_qd[i, j].diff(q[k]) * qd[k] for k in range(len(q)))
                    + Phi_qd[i, j].diff(t))
    bracket = ddt - rows.jacobian(q)
    params = constraint.params
    args = [*q, *qd, t, *params]
    f = sp.lambdify(args, list(bracket), modules="numpy", cse=True)
    m, n = bracket.shape
    pvals = [np.asarray(v, dtype=float) for v in params.values()]

    def evaluate(qv, qdv, tv=0.0):
        qv = np.asarray(qv, dtype=float)
        qdv = np.asarray(qdv, dtype=float)
        tv = np.asarray(tv, dtype=float)
        batch = np.broadcast_shapes(qv.shape[:-1], qdv.shape[:-1], tv.shape, *(p.shape for p in pvals))
        vals = f(*(qv[..., i] for i in range(n)), *(qdv[..., i] for i in range(n)), tv, *pvals)
        out = np.empty(batch + (m * n,))
        for j, v in enumerate(vals):
            out[..., j] = v
        return out.reshape(batch + (m, n))

    evaluate.expr = bracket
    return evaluate


# --------------------------------------------------------------------------- #
# vakonomic model: as a plant + constraint on (q, μ), μ̇ = λ
# --------------------------------------------------------------------------- #
def _mu_names(m: int) -> tuple[str, ...]:
    return ("mu",) if m == 1 else tuple(f"mu{i + 1}" for i in range(m))


@dataclass(frozen=True, eq=False)
class VakonomicPlant(Plant):
    """The vakonomic system's "unconstrained" part on (q, μ) with μ̇ = λ (see :class:`VakonomicModel`).

    ``M = diag(M_base, I_m)``, ``Q = (Q_base + [Φ]ᵀ λ, 0)`` with λ = μ̇ the last m velocities.
    Build it with :class:`VakonomicModel`, not directly.

    Parameters
    ----------
    base : Plant
        The plant of the unconstrained system (coordinates q).
    bracket : callable
        ``[Φ](q, qd, t) -> (..., m, n)`` (:func:`lagrangian_derivative`).
    m : int
        Number of constraint rows (multipliers).
    """

    base: Plant
    bracket: Callable
    m: int

    @property
    def coordinates(self) -> tuple[str, ...]:
        """The base coordinates, then μ (``mu`` or ``mu1 … mum``), with μ̇ = λ."""
        return tuple(self.base.coordinates) + _mu_names(self.m)

    @property
    def coordinate_kinds(self) -> tuple:
        """The base plant's, then None (unknown) for each μ."""
        return tuple(self.base.coordinate_kinds) + (None,) * self.m

    def _split(self, x):
        x = np.asarray(x, dtype=float)
        if x.ndim < 1 or x.shape[-1] != self.n:
            raise ParameterError(f"the state must have shape (..., {self.n}) {self.coordinates}; got {x.shape}.")
        k = self.base.n
        return x[..., :k], x[..., k:]

    def mass_matrix(self, q, t=0.0):
        qb, _ = self._split(q)
        Mb = self.base.mass_matrix(qb, t)
        batch, k = Mb.shape[:-2], self.base.n
        M = np.zeros(batch + (self.n, self.n))
        M[..., :k, :k] = Mb
        M[..., range(k, self.n), range(k, self.n)] = 1.0
        return M

    def given_force(self, q, qd, t=0.0):
        qb, _ = self._split(q)
        qdb, lam = self._split(qd)
        Qb = self.base.given_force(qb, qdb, t) + np.einsum("...mn,...m->...n", self.bracket(qb, qdb, t), lam)
        return np.concatenate([Qb, np.zeros(Qb.shape[:-1] + (self.m,))], axis=-1)


class VakonomicConstraint(Constraint):
    """The vakonomic system's constraint rows on (q, μ): ``A q̈ = b`` and ``μ̈ = λ̇`` (see :class:`VakonomicModel`).

    The first m rows are the base constraint's ``A q̈ = b`` (Φ̇ = 0, or its stabilized
    form); the last m rows, ``μ̈ = λ̇(q, q̇, λ, t)``, carry the multiplier rate of
    :func:`vakonomic_motion`. Their raw residuals are Φ and, for the μ rows (which hold by
    construction), 0.

    Parameters
    ----------
    base_plant : Plant
        The plant of the unconstrained system.
    base : Nonholonomic
        The constraint Φ = 0 (linear in q̇).
    bracket : callable
        ``[Φ](q, qd, t)`` (:func:`lagrangian_derivative`).
    """

    def __init__(self, base_plant: Plant, base: Constraint, bracket: Callable):
        self.base_plant, self.base, self.bracket = base_plant, base, bracket
        self.k = base.n
        self.n, self.m = base.n + base.m, 2 * base.m

    def _split(self, x):
        x = np.asarray(x, dtype=float)
        if x.ndim < 1 or x.shape[-1] != self.n:
            raise ConstraintError(f"the state must have shape (..., {self.n}); got {x.shape}.")
        return x[..., : self.k], x[..., self.k :]

    def motion(self, q, qd, t=0.0) -> VakonomicMotion:
        """:func:`vakonomic_motion` at extended states ``(q, μ)``, ``(q̇, λ)``."""
        qb, _ = self._split(q)
        qdb, lam = self._split(qd)
        A, b = self.base.matrices(qb, qdb, t)
        return vakonomic_motion(self.base_plant.mass_matrix(qb, t), self.base_plant.given_force(qb, qdb, t), A, b,
                                lam, self.bracket(qb, qdb, t))

    def matrices(self, q, qd, t=0.0):
        qb, _ = self._split(q)
        qdb, lam = self._split(qd)
        A, b = self.base.matrices(qb, qdb, t)
        lam_dot = vakonomic_motion(self.base_plant.mass_matrix(qb, t), self.base_plant.given_force(qb, qdb, t), A, b,
                                   lam, self.bracket(qb, qdb, t)).lam_dot
        mb = self.base.m
        batch = np.broadcast_shapes(A.shape[:-2], lam_dot.shape[:-1])
        Ae = np.zeros(batch + (self.m, self.n))
        Ae[..., :mb, : self.k] = A
        Ae[..., range(mb, self.m), range(self.k, self.n)] = 1.0
        be = np.concatenate([np.broadcast_to(b, batch + (mb,)), np.broadcast_to(lam_dot, batch + (mb,))], axis=-1)
        return Ae, be

    def residual(self, q, qd, t=0.0):
        qb, _ = self._split(q)
        qdb, _ = self._split(qd)
        r = self.base.residual(qb, qdb, t)
        return np.concatenate([r, np.zeros(r.shape[:-1] + (self.base.m,))], axis=-1)


class VakonomicModel:
    """The vakonomic (variational) model of Φ(q, q̇, t) = 0 for a plant (K; S 1.13, 2.6).

    Equations ``[T] = F + λ[Φ] + λ̇ ∂Φ/∂q̇``, ``Φ = 0``, Φ linear in q̇. The multiplier
    λ is a state; it is carried as the velocity of extra coordinates μ (μ̇ = λ, one per
    row), so that the whole model is a plant (:class:`VakonomicPlant`) with a
    constraint (:class:`VakonomicConstraint`) on (q, μ) and runs through
    :func:`robustrack.tracking.simulate_constrained` unchanged:

        diag(M, I) (q̈, μ̈) = (Q + [Φ]ᵀ μ̇, 0) + Qᶜ,   A q̈ = b,   μ̈ = λ̇,

    with λ̇ from :func:`vakonomic_motion`; the constraint force is ``Qᶜ = (Aᵀλ̇, λ̇)``.

    Why μ and not λ itself: the plant contract is second order in q. The vakonomic
    system is also the *unconstrained* Lagrangian system ``L + μ̇Φ`` on (q, μ) (its
    μ-equation is Φ̇ = 0; K "Servo constraints" with N = Φ), but that Lagrangian's mass
    matrix ``[[M, Φ_q̇ᵀ], [Φ_q̇, 0]]`` is indefinite, so the fundamental equation cannot
    take it; the form above keeps M > 0.

    Parameters
    ----------
    plant : Plant
        The unconstrained system (never one with a constraint substituted into its
        Lagrangian, W ch. 3: see :func:`robustrack.studies.conflation.check_not_conflated`).
    constraint : Nonholonomic
        The rows Φ = 0, linear in q̇ (a first-order stabilization is kept).

    Attributes
    ----------
    plant : VakonomicPlant
    constraint : VakonomicConstraint
    base_plant, base_constraint : the arguments
    bracket : callable
        ``[Φ](q, qd, t)``.
    """

    def __init__(self, plant: Plant, constraint: Nonholonomic):
        if not isinstance(plant, Plant):
            raise ParameterError(f"`plant` must be a robustrack Plant; got {type(plant).__name__}.")
        check_constraint_fits(plant, constraint)
        from .conflation import check_not_conflated

        check_not_conflated(plant, constraint)
        self.base_plant, self.base_constraint = plant, constraint
        self.bracket = lagrangian_derivative(constraint)
        self.plant = VakonomicPlant(plant, self.bracket, constraint.m)
        self.constraint = VakonomicConstraint(plant, constraint, self.bracket)

    def initial_state(self, q0, qd0, lam0, *, t0: float = 0.0, tol: float = 1e-9):
        """The extended initial state ``((q0, μ0 = 0), (q̇0, λ0))``.

        Parameters
        ----------
        q0, qd0 : array_like (n,)
            Initial configuration and velocity; they must satisfy Φ = 0 (the model keeps
            Φ̇ = 0, so a violated start stays violated).
        lam0 : float or array_like (m,)
            Initial multipliers λ(0) — the vakonomic model's extra initial data (K).
        t0 : float
            Initial time (for rheonomic Φ).
        tol : float
            Largest |Φ(q0, q̇0)| accepted, relative to ``1 + ‖∂Φ/∂q̇‖ ‖q̇0‖``.

        Returns
        -------
        q0_ext, qd0_ext : ndarray (n + m,)

        Raises
        ------
        ParameterError
            Wrong shapes, non-finite values, or a start off the constraint.
        """
        n, m = self.base_plant.n, self.base_constraint.m
        q0 = np.asarray(q0, dtype=float).reshape(-1)
        qd0 = np.asarray(qd0, dtype=float).reshape(-1)
        lam0 = np.broadcast_to(np.asarray(lam0, dtype=float), (m,)).copy() if np.ndim(lam0) == 0 or np.size(lam0) == m \
            else None
        if lam0 is None or q0.shape != (n,) or qd0.shape != (n,):
            raise ParameterError(f"`q0`, `qd0` must have shape ({n},) and `lam0` ({m},) (one λ per constraint row); "
                                 f"got {np.shape(q0)}, {np.shape(qd0)}, {np.shape(lam0)}.")
        if not (np.all(np.isfinite(q0)) and np.all(np.isfinite(qd0)) and np.all(np.isfinite(lam0))):
            raise ParameterError("All components of `q0`, `qd0` and `lam0` must be finite.")
        phi = self.base_constraint.residual(q0, qd0, t0)
        A, _ = self.base_constraint.matrices(q0, qd0, t0)
        limit = tol * (1.0 + np.linalg.norm(A) * np.linalg.norm(qd0))
        if np.max(np.abs(phi)) > limit:
            raise ParameterError(
                f"The initial state violates the constraint: Φ(q0, q̇0) = {phi.tolist()} (tolerance {limit:.3g}). The "
                "vakonomic model keeps Φ̇ = 0, so it must start on Φ = 0: choose `qd0` on the constraint."
            )
        return np.concatenate([q0, np.zeros(m)]), np.concatenate([qd0, lam0])

    def split(self, q, qd):
        """``(q, q̇, λ)`` from extended states ``(q, μ)``, ``(q̇, λ)`` (any leading axes).

        Parameters
        ----------
        q, qd : array_like (..., n + m)
            Extended coordinates and velocities (e.g. a result's ``q``, ``qd``).

        Returns
        -------
        q, qd, lam : ndarray
            Shapes ``(..., n)``, ``(..., n)``, ``(..., m)``.
        """
        q, qd = np.asarray(q, dtype=float), np.asarray(qd, dtype=float)
        k = self.base_plant.n
        return q[..., :k], qd[..., :k], qd[..., k:]

    def motion(self, q, qd, lam, t=0.0) -> VakonomicMotion:
        """:func:`vakonomic_motion` at base states (q, q̇) and multipliers λ.

        Parameters
        ----------
        q, qd : array_like (..., n)
            Base coordinates and velocities.
        lam : array_like (..., m)
            Multipliers.
        t : float or array_like
            Time(s).

        Returns
        -------
        VakonomicMotion
        """
        A, b = self.base_constraint.matrices(q, qd, t)
        return vakonomic_motion(self.base_plant.mass_matrix(q, t), self.base_plant.given_force(q, qd, t), A, b, lam,
                                self.bracket(q, qd, t))


# --------------------------------------------------------------------------- #
# the limits of K Theorems 1 and 2
# --------------------------------------------------------------------------- #
def _penalty_inputs(T, V, constraint, N, params, name):
    import sympy as sp

    if not isinstance(constraint, Nonholonomic):
        raise ConstraintError(f"`constraint` of {name}() must be a robustrack.constraints.Nonholonomic; "
                              f"got {type(constraint).__name__}.")
    lagrangian_derivative(constraint)  # refuses rows nonlinear in q̇ (K takes Φ = (a(x), ẋ))
    N_sym = sp.Symbol("N", positive=True)
    used = {s.name for s in sp.sympify(T).free_symbols | sp.sympify(V).free_symbols | constraint.expr.free_symbols}
    if "N" in used:
        raise ParameterError(f"{name}() names its coefficient `N`: T, V and the constraint must not use a symbol N.")
    N = float(N)
    if not (np.isfinite(N) and N >= 0):
        raise ParameterError(f"`N` must be a finite number >= 0; got {N!r}.")
    values = {**constraint.params, **dict(params or {}), N_sym: N}
    values = {k: (float(v) if np.ndim(v) == 0 else np.asarray(v)) for k, v in values.items()}
    return N_sym, values


def anisotropic_friction_plant(T, V, constraint: Nonholonomic, N: float, *, params=None):
    """The free system with anisotropic viscous friction ``R_N = ½ N Σ Φᵢ²`` (K Theorem 1).

    Lagrange's equations ``[L] = −∂R_N/∂q̇`` (K eq. 1) with Φ = a(q)·q̇: the friction
    force is ``−N Σᵢ Φᵢ ∂Φᵢ/∂q̇``. No constraint is imposed; as N → ∞ the motion from a
    start with Φ = 0 tends to the *nonholonomic* motion ``[L] = λ a``, ``Φ = 0``.

    Parameters
    ----------
    T, V : sympy expressions
        Kinetic and potential energy of the unconstrained system, in the constraint's
        coordinate and velocity symbols (``constraint.q``, ``constraint.qd``).
    constraint : Nonholonomic
        The rows Φ, linear in q̇ (it is not imposed: it only shapes R_N).
    N : float
        Friction coefficient (>= 0); the plant parameter ``N`` (``plant.replace(N=…)``).
    params : mapping, optional
        Values of the other symbols of T and V (keyword-only).

    Returns
    -------
    LagrangianPlant
        Unconstrained; run it with :class:`NoConstraint`.
    """
    from ..plants.lagrangian import LagrangianPlant

    N_sym, values = _penalty_inputs(T, V, constraint, N, params, "anisotropic_friction_plant")
    rows = constraint.expr
    forces = [-N_sym * sum(rows[i] * rows[i].diff(v) for i in range(rows.shape[0])) for v in constraint.qd]
    return LagrangianPlant.from_energies(list(constraint.q), T, V, forces, params=values, t=constraint.t,
                                         qd=list(constraint.qd))


def added_mass_plant(T, V, constraint: Nonholonomic, N: float, *, params=None):
    """The free system with an added mass ``½ N Σ Φᵢ²`` in its kinetic energy (K Theorem 2).

    ``L_N = T + ½ N Σ Φᵢ² − V`` with Φ = a(q)·q̇; no constraint is imposed. As N → ∞ the
    motion from a start with Φ = 0 tends to an extremal of Lagrange's problem
    ``δ∫L dt = 0`` under Φ = 0: a *vakonomic* motion, whose multiplier is
    ``λ = −lim N Φ`` (so λ(0) = 0 for a start on the constraint).

    Parameters
    ----------
    T, V : sympy expressions
        Kinetic and potential energy of the unconstrained system, in the constraint's
        coordinate and velocity symbols.
    constraint : Nonholonomic
        The rows Φ, linear in q̇ (not imposed).
    N : float
        Added-mass coefficient (>= 0); the plant parameter ``N``.
    params : mapping, optional
        Values of the other symbols of T and V (keyword-only).

    Returns
    -------
    LagrangianPlant
        Unconstrained; run it with :class:`NoConstraint`.
    """
    from ..plants.lagrangian import LagrangianPlant

    N_sym, values = _penalty_inputs(T, V, constraint, N, params, "added_mass_plant")
    rows = constraint.expr
    T_N = T + N_sym / 2 * sum(rows[i] ** 2 for i in range(rows.shape[0]))
    return LagrangianPlant.from_energies(list(constraint.q), T_N, V, params=values, t=constraint.t,
                                         qd=list(constraint.qd))


# --------------------------------------------------------------------------------------------- #
# The two examples of the seeds: K's Chaplygin skate and S's speed reducer, in their models,      #
# with the reduced equations that check each model independently (the scenarios' references).    #
# --------------------------------------------------------------------------------------------- #
#: Tolerances of the independent reduced-equation integrations: tighter than any
#: scenario's (rtol 1e-10), so their own error is negligible next to the run's.
_REDUCED_RTOL, _REDUCED_ATOL = 1e-12, 1e-13


def skate_model(m=1.0, inertia=1.0, g=1.0):
    """The Chaplygin skate on an inclined plane in sympy: ``(T, V, Φ)`` (K, "Example: the Chaplygin skate").

    ``T = ½ m (ẋ² + ẏ²) + ½ I φ̇²``, ``V = −m g x`` (x down the slope; K takes
    m = I = g = 1), and the knife edge ``Φ = ẋ sin φ − ẏ cos φ`` as a
    :class:`~robustrack.constraints.Nonholonomic` on (x, y, φ).

    Parameters
    ----------
    m : float
        Mass (> 0).
    inertia : float
        Moment of inertia about the contact point (> 0).
    g : float
        Gravity along the slope (>= 0).

    Returns
    -------
    T, V : sympy expressions
    constraint : Nonholonomic
    """
    import sympy as sp


    x, y, phi = sp.symbols("x y phi", real=True)
    xd, yd, phid = sp.symbols("x_dot y_dot phi_dot", real=True)
    T = m * (xd**2 + yd**2) / 2 + inertia * phid**2 / 2
    V = -m * g * x
    return T, V, Nonholonomic(xd * sp.sin(phi) - yd * sp.cos(phi), [x, y, phi], [xd, yd, phid])


def nonholonomic_skate(t, omega, g):
    """K's closed form of the nonholonomic skate (zero start except φ̇(0) = ω; m = I = 1).

    Parameters
    ----------
    t : array_like (T,)
        Times.
    omega : float
        φ̇(0) (nonzero).
    g : float
        Gravity along the slope.

    Returns
    -------
    ndarray (T, 3)
        Columns x, y, φ.
    """
    return np.stack([g * np.sin(omega * t) ** 2 / (2 * omega**2),
                     g * (omega * t - 0.5 * np.sin(2 * omega * t)) / (2 * omega**2), omega * t], axis=-1)


def vakonomic_skate_reduced(t, *, m, inertia, g, q0, qd0, lam0):
    """The vakonomic skate by its reduced equations, integrated independently (K; derived here).

    Derivation. With ``T = ½m(ẋ² + ẏ²) + ½Iφ̇²``, ``F = (mg, 0, 0)`` and
    ``Φ = ẋ sin φ − ẏ cos φ``: ``∂Φ/∂q̇ = (sin φ, −cos φ, 0)`` and
    ``[Φ] = d/dt ∂Φ/∂q̇ − ∂Φ/∂q = (φ̇ cos φ, φ̇ sin φ, −(ẋ cos φ + ẏ sin φ))``. The vakonomic
    equations ``[T] = F + λ[Φ] + λ̇ ∂Φ/∂q̇`` read

        m ẍ = m g + λ φ̇ cos φ + λ̇ sin φ  = m g + d/dt(λ sin φ)
        m ÿ =       λ φ̇ sin φ − λ̇ cos φ  =     − d/dt(λ cos φ)
        I φ̈ = −λ (ẋ cos φ + ẏ sin φ),

    so ``p := m ẋ − λ sin φ = m g t + c1`` and ``s := m ẏ + λ cos φ = c2`` with
    ``c1 = m ẋ0 − λ0 sin φ0``, ``c2 = m ẏ0 + λ0 cos φ0``. Then Φ = 0 gives
    ``λ = s cos φ − p sin φ``, hence ``m ẋ = p + λ sin φ``, ``m ẏ = s − λ cos φ``,
    ``m (ẋ cos φ + ẏ sin φ) = p cos φ + s sin φ`` and

        I φ̈ = (p sin φ − s cos φ)(p cos φ + s sin φ) / m .

    For K's start (zero except φ̇(0) = ω) and λ(0) = 0 with m = I = g = 1: c1 = c2 = 0,
    ``φ̈ = t² sin φ cos φ``, ``ẋ = t cos² φ ≥ 0`` — the skate slides down — and
    ``ẏ = t sin φ cos φ``: K's equations ("Let φ = 0 and ẏ + λ cos φ = 0 for t = 0").
    Integrated here for (φ, φ̇, x, y, μ) with μ̇ = λ, by scipy DOP853 at rtol 1e-12.

    Parameters
    ----------
    t : array_like (T,)
        Output times, increasing, starting at 0.
    m, inertia, g : float
        Mass, moment of inertia, gravity along the slope (keyword-only).
    q0, qd0 : array_like (3,)
        Start (x, y, φ), (ẋ, ẏ, φ̇), on the constraint (keyword-only).
    lam0 : float
        λ(0) (keyword-only).

    Returns
    -------
    q : ndarray (T, 4)
        Columns x, y, φ, μ = ∫λ dt (the vakonomic model's extended coordinates).
    lam : ndarray (T,)
        λ(t).
    """
    from scipy.integrate import solve_ivp

    t = np.asarray(t, dtype=float)
    x0, y0, phi0 = (float(v) for v in q0)
    xd0, yd0, _ = (float(v) for v in qd0)
    c1 = m * xd0 - lam0 * math.sin(phi0)
    c2 = m * yd0 + lam0 * math.cos(phi0)

    def lam_of(tt, phi):
        return c2 * np.cos(phi) - (m * g * tt + c1) * np.sin(phi)

    def rhs(tt, s):
        phi, w = s[0], s[1]
        p = m * g * tt + c1
        lam = lam_of(tt, phi)
        return [w, (p * math.sin(phi) - c2 * math.cos(phi)) * (p * math.cos(phi) + c2 * math.sin(phi)) / (m * inertia),
                (p + lam * math.sin(phi)) / m, (c2 - lam * math.cos(phi)) / m, lam]

    sol = solve_ivp(rhs, (float(t[0]), float(t[-1])), [phi0, float(qd0[2]), x0, y0, 0.0], t_eval=t,
                    method="DOP853", rtol=_REDUCED_RTOL, atol=_REDUCED_ATOL)
    phi, _, x, y, mu = sol.y
    return np.stack([x, y, phi, mu], axis=-1), lam_of(sol.t, phi)


@functools.lru_cache(maxsize=8)
def skate_penalty_plant(which, m, inertia, g):
    """The skate's friction or added-mass plant at N = 1 (K Theorems 1, 2), derived once per (which, m, I, g).

    Parameters
    ----------
    which : {"friction", "added_mass"}
        :func:`anisotropic_friction_plant` or :func:`added_mass_plant` of :func:`skate_model`.
    m, inertia, g : float
        As :func:`skate_model`.

    Returns
    -------
    Plant
        With parameter N = 1 (``plant.replace(N=...)`` sets it) and kinds (length, length, angle).
    """
    T, V, phi_c = skate_model(m, inertia, g)
    build = anisotropic_friction_plant if which == "friction" else added_mass_plant
    return dataclasses.replace(build(T, V, phi_c, 1.0), kinds=("length", "length", "angle"))  # x, y, φ


def speed_reducer_model(r):
    """The speed reducer's rolling constraint ``Φ = x φ̇ − r ψ̇`` in sympy (S 2.2d), on (φ, ψ, x).

    Parameters
    ----------
    r : float
        Radius of rotor B (> 0).

    Returns
    -------
    Nonholonomic
    """
    import sympy as sp


    phi, psi, x = sp.symbols("phi psi x", real=True)
    phid, psid, xd = sp.symbols("phi_dot psi_dot x_dot", real=True)
    return Nonholonomic(x * phid - r * psid, [phi, psi, x], [phid, psid, xd])


def variational_speed_reducer_reduced(t, *, a, b, m, k, r, x0, xd0, phid0, lam0):
    """The speed reducer's variational (Lusternik) motion by its reduced equations (S 2.6–2.8, re-derived).

    Derivation. ``L = aφ̇²/2 + bψ̇²/2 + mẋ²/2 − kx²/2`` (S 2.1, V = kx²/2) and
    ``Φ = x φ̇ − r ψ̇`` (S 2.2d): ``∂Φ/∂q̇ = (x, −r, 0)``, ``[Φ] = (ẋ, 0, −φ̇)``. The
    vakonomic equations ``[T] = F + λ[Φ] + λ̇ ∂Φ/∂q̇`` are

        a φ̈ = λ ẋ + λ̇ x = d/dt(λ x),   b ψ̈ = −λ̇ r,   m ẍ = −k x − λ φ̇,

    S (2.6) with S's multiplier μ_S = −λ. Integrating the first two (S 2.7):
    ``a φ̇ − λ x = A``, ``b ψ̇ + λ r = B`` (constants from the start). With ψ̇ = x φ̇ / r:

        φ̇ = (A + B x / r) / (a + b x² / r²),   λ = (B − (b/r) x φ̇) / r,
        m ẍ + k x + λ φ̇ = 0,                    ψ̇ = x φ̇ / r,

    S (2.8) — note that the extraction of S (2.4), (2.6b)–(2.8) carries sign slips
    (``a − b x²/r²`` for ``a + b x²/r²``; ``bψ̇ + rμ`` with the constraint as printed in
    2.2d); the form here follows from (2.1), (2.2d) and the variational principle and is
    checked against the integrals A, B and the energy. The translation is driven by
    the "helical" force −λφ̇ (S), which the d'Alembert model (S 2.2c: m ẍ = −V') lacks.
    Integrated for (x, ẋ, φ, ψ, μ), μ̇ = λ, by scipy DOP853 at rtol 1e-12.

    Parameters
    ----------
    t : array_like (T,)
        Output times, increasing, starting at 0 (φ(0) = ψ(0) = 0).
    a, b, m, k, r : float
        Rotor inertias, mass and spring of rotor B, radius of B (keyword-only).
    x0, xd0, phid0 : float
        Start: x, ẋ, φ̇ (ψ̇(0) = x0 φ̇0 / r from the constraint) (keyword-only).
    lam0 : float
        λ(0) (keyword-only).

    Returns
    -------
    q : ndarray (T, 4)
        Columns φ, ψ, x, μ = ∫λ dt.
    lam : ndarray (T,)
        λ(t).
    """
    from scipy.integrate import solve_ivp

    t = np.asarray(t, dtype=float)
    A = a * phid0 - lam0 * x0
    B = b * x0 * phid0 / r + lam0 * r

    def phid_lam(x):
        phid = (A + B * x / r) / (a + b * x**2 / r**2)
        return phid, (B - b / r * x * phid) / r

    def rhs(_, s):
        x, xd = s[0], s[1]
        phid, lam = phid_lam(x)
        return [xd, (-k * x - lam * phid) / m, phid, x * phid / r, lam]

    sol = solve_ivp(rhs, (float(t[0]), float(t[-1])), [x0, xd0, 0.0, 0.0, 0.0], t_eval=t, method="DOP853",
                    rtol=_REDUCED_RTOL, atol=_REDUCED_ATOL)
    x, _, phi, psi, mu = sol.y
    return np.stack([phi, psi, x, mu], axis=-1), phid_lam(x)[1]
