"""The Lusternik (vakonomic) equations S (1.6)–(1.7) for constraints nonlinear in the velocities.

:class:`~robustrack.studies.constraint_models.VakonomicModel` takes Φ linear in q̇ (its
reaction has no inertial term). S §3 applies the same variational recipe to any
F(q, q̇, t) = 0 — e.g. a constraint that holds the speed, S (3.5) — and then the
reaction (1.7) carries the inertial term ``−μᵃ F_a,q̇q̇ q̈``. With ``M q̈ − Q = R``
(S 1.6a) and the differentiated constraint ``Ḟ = 0`` (``A q̈ = b``, A = ∂F/∂q̇, the
constraint's own acceleration form, with its stabilization if it has one), q̈ and μ̇
solve the linear saddle-point system

    [ M + μᵃ F_a,q̇q̇   Aᵀ ] [ q̈ ]   [ Q + μᵃ (F_a,q − F_a,q̇q q̇ − F_a,q̇t) ]
    [ A               0  ] [ μ̇ ] = [ b                                   ]

(:func:`lusternik_motion`), whose matrix is invertible where ``M + μ·F_q̇q̇`` is
positive definite on the kernel of A and A has full row rank.

To run through :func:`robustrack.tracking.simulate_constrained` like every other model,
:class:`LusternikModel` carries μ as the velocity of extra coordinates ν (ν̇ = μ) and
prescribes all n + m accelerations ``(q̈, ν̈ = μ̇)`` as constraint rows (after the
constraint's own rows ``A q̈ = b``, which they satisfy): the fundamental equation
(W 2.2.9) then returns exactly these accelerations, and its constraint force
``M q̈ − Q`` *is* the Lusternik reaction R of (1.6a) — in the run's ``Qc`` — whatever
way it was computed. The raw residuals are F (and 0 for the prescribing rows).

S §3's example: the speed-holding particle
------------------------------------------
A particle of mass m in the plane, in the uniform field V = m g y, under the program
constraint ``F = ½ (ẋ² + ẏ²) − c²/2 = 0`` (:func:`speed_holding_model`), held by the
Appell–Chetaev (d'Alembert) reaction, S (3.6), or by the Lusternik one, S (3.5).
Closed forms (derived here; θ is the heading, q̇ = c (cos θ, sin θ), k = m g):

* (3.6): θ̇ = −(g/c) cos θ, so ``asinh(tan θ) = asinh(tan θ0) − g t / c``,
  ``x − x0 = −(c²/g)(θ − θ0)``, ``y − y0 = (c²/g) ln(cos θ / cos θ0)``, λ = k sin θ / c.
* (3.5): dotting with q̇ (q̇·q̈ = 0 on F = 0) gives ``μ̇ = −k ẏ / c²``; the normal part
  gives ``θ̇ = −k cos θ / (c (m + μ))``. Hence ``d(m + μ)/dθ = (m + μ) tan θ``, so
  ``m + μ = W0 cos θ0 / cos θ`` (W0 = m + μ0) and ``tan θ = tan θ0 − κ t`` with
  ``κ = k / (c W0 cos θ0)``; ``x − x0 = −(c/κ)(asinh tan θ − asinh tan θ0)``,
  ``y − y0 = −(c/κ)(sec θ − sec θ0)``, and ``ν = ∫μ dt`` in closed form.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .anatomy import constraint_derivatives
from .constraint_models import VakonomicModel, VakonomicPlant
from ..constraints import Constraint, Nonholonomic
from ..errors import ConstraintError, ParameterError
from ..plants.base import Plant
from ..plants.motion import check_constraint_fits

__all__ = ["LusternikMotion", "lusternik_motion", "LusternikModel", "speed_holding_model", "dalembert_speed_holding",
           "lusternik_speed_holding"]


@dataclass(frozen=True)
class LusternikMotion:
    """Result of :func:`lusternik_motion`.

    Attributes
    ----------
    qdd : ndarray (..., n)
    mu_dot : ndarray (..., m)
        S's multiplier rates μ̇ (the Appell–Chetaev multiplier is λ = −μ̇, S 3.4).
    reaction : ndarray (..., n)
        ``M q̈ − Q``: the reaction R of S (1.6a)–(1.7).
    """

    qdd: np.ndarray
    mu_dot: np.ndarray
    reaction: np.ndarray


def lusternik_motion(M, Q, A, b, qd, mu, d) -> LusternikMotion:
    """q̈ and μ̇ of S (1.6)–(1.7) at given states: the saddle-point system of the module docstring.

    Parameters
    ----------
    M : array_like (..., n, n)
        Mass matrix.
    Q : array_like (..., n)
        Given forces.
    A, b : array_like (..., m, n), (..., m)
        The constraint's acceleration form ``A q̈ = b`` (A = ∂F/∂q̇).
    qd : array_like (..., n)
        Velocities.
    mu : array_like (..., m)
        S's multipliers μ.
    d : ConstraintDerivatives
        The rows' derivatives at the same states (:func:`robustrack.studies.anatomy.constraint_derivatives`).

    Returns
    -------
    LusternikMotion

    Raises
    ------
    ConstraintError
        The saddle-point matrix is singular (``M + μ·F_q̇q̇`` degenerate on the kernel of
        A, or dependent rows of A): q̈ and μ̇ are not determined.
    """
    M, Q, A, b, qd, mu = (np.asarray(x, dtype=float) for x in (M, Q, A, b, qd, mu))
    n, m = M.shape[-1], A.shape[-2]
    Mmu = M + np.einsum("...a,...aij->...ij", mu, d.F_qdqd)
    # μᵃ (F_a,q − F_a,q̇q q̇ − F_a,q̇t): the position, velocity and rheonomic terms of S (1.7)
    qd_force = np.einsum("...a,...ai->...i", mu, d.F_q - d.F_qdt - np.einsum("...aij,...j->...ai", d.F_qdq, qd))
    batch = np.broadcast_shapes(Mmu.shape[:-2], A.shape[:-2], Q.shape[:-1], b.shape[:-1], mu.shape[:-1])
    K = np.zeros(batch + (n + m, n + m))
    K[..., :n, :n] = Mmu
    K[..., :n, n:] = np.swapaxes(A, -1, -2)
    K[..., n:, :n] = A
    rhs = np.concatenate([np.broadcast_to(Q + qd_force, batch + (n,)),
                          np.broadcast_to(b, batch + (m,))], axis=-1)
    cond = np.linalg.cond(K) if K.size else np.zeros(batch)
    if np.any(~(cond < 1e12)):
        raise ConstraintError(
            "The Lusternik saddle-point matrix [[M + μ F_q̇q̇, Aᵀ], [A, 0]] is singular (condition number "
            f"{float(np.max(cond)):.3g}): M + μ·F_q̇q̇ is not positive definite along the constraint (for S 3.5, "
            "m + μ ≤ 0), or the rows of A = ∂F/∂q̇ are dependent or vanish. Choose λ(0)/μ(0) with M + μ·F_q̇q̇ > 0, "
            "or stop the run earlier.")
    x = np.linalg.solve(K, rhs[..., None])[..., 0]
    qdd, mu_dot = x[..., :n], x[..., n:]
    return LusternikMotion(qdd=qdd, mu_dot=mu_dot, reaction=np.einsum("...ij,...j->...i", M, qdd) - Q)


class _LusternikConstraint(Constraint):
    """The rows of :class:`LusternikModel` on (q, ν): ``A q̈ = b``, ``I q̈ = q̈_L``, ``ν̈ = μ̇_L``.

    The first m rows are the constraint's own acceleration form (raw residual F); the
    next n prescribe q̈ (consistent with the first m: ``A q̈_L = b`` by construction), the
    last m give ``ν̈ = μ̇``; their raw residuals are 0.
    """

    def __init__(self, model: "LusternikModel"):
        self.model = model
        self.k, mb = model.base_plant.n, model.base_constraint.m
        self.n, self.m = self.k + mb, self.k + 2 * mb

    def matrices(self, q, qd, t=0.0):
        qb, qdb, mu = self.model.split(q, qd)
        A, b = self.model.base_constraint.matrices(qb, qdb, t)
        mo = self.model.motion(qb, qdb, mu, t)
        mb = A.shape[-2]
        batch = np.broadcast_shapes(A.shape[:-2], mo.qdd.shape[:-1])
        Ae = np.zeros(batch + (self.m, self.n))
        Ae[..., :mb, : self.k] = A
        Ae[..., mb:, :] = np.eye(self.n)
        be = np.concatenate([np.broadcast_to(b, batch + (mb,)), np.broadcast_to(mo.qdd, batch + (self.k,)),
                             np.broadcast_to(mo.mu_dot, batch + (mb,))], axis=-1)
        return Ae, be

    def residual(self, q, qd, t=0.0):
        qb, qdb, _ = self.model.split(q, qd)
        r = self.model.base_constraint.residual(qb, qdb, t)
        return np.concatenate([r, np.zeros(r.shape[:-1] + (self.n,))], axis=-1)


class _LusternikPlant(VakonomicPlant):
    """diag(M, I) on (q, ν) with the base given force (no bracket term): see :class:`LusternikModel`."""

    @property
    def coordinates(self) -> tuple[str, ...]:
        """The base coordinates, then ν (``nu`` or ``nu1 … num``), with ν̇ = μ."""
        extra = ("nu",) if self.m == 1 else tuple(f"nu{i + 1}" for i in range(self.m))
        return tuple(self.base.coordinates) + extra


def _no_bracket(m, n):
    def bracket(q, qd, t=0.0):
        q = np.asarray(q, dtype=float)
        return np.zeros(q.shape[:-1] + (m, n))

    return bracket


class LusternikModel:
    """The Lusternik (vakonomic) model S (1.6)–(1.7) of F(q, q̇, t) = 0, F linear in q̇ or not.

    ``M q̈ = Q + R``, R of S (1.7) with S's multipliers μ, ``F = 0``. Runs through
    :func:`robustrack.tracking.simulate_constrained` as ``(model.plant, model.constraint)``
    on coordinates ``(q, ν)`` with ν̇ = μ (see the module docstring); the run's ``Qc``
    holds ``(R, μ̇)``. :func:`robustrack.studies.anatomy.reaction_anatomy` splits R into its terms.
    For F linear in q̇ it is :class:`~robustrack.studies.constraint_models.VakonomicModel` with
    μ = −λ (a cross-check the tests make).

    Parameters
    ----------
    plant : Plant
        The unconstrained system.
    constraint : Nonholonomic
        The rows F = 0 (a first-order stabilization is kept in ``Ḟ + αF = 0``).

    Attributes
    ----------
    plant, constraint : the extended plant and its acceleration rows
    base_plant, base_constraint : the arguments
    derivatives : callable
        ``derivatives(q, qd, t) -> ConstraintDerivatives``.
    """

    def __init__(self, plant: Plant, constraint: Nonholonomic):
        if not isinstance(plant, Plant):
            raise ParameterError(f"`plant` must be a robustrack Plant; got {type(plant).__name__}.")
        if not isinstance(constraint, Nonholonomic):
            raise ConstraintError(f"`constraint` must be a robustrack.constraints.Nonholonomic (F(q, q̇, t) = 0 as "
                                  f"sympy rows); got {type(constraint).__name__}.")
        check_constraint_fits(plant, constraint)
        from .conflation import check_not_conflated

        check_not_conflated(plant, constraint)
        self.base_plant, self.base_constraint = plant, constraint
        self.derivatives = constraint_derivatives(constraint)
        self.plant = _LusternikPlant(plant, _no_bracket(constraint.m, plant.n), constraint.m)
        self.constraint = _LusternikConstraint(self)

    def motion(self, q, qd, mu, t=0.0) -> LusternikMotion:
        """:func:`lusternik_motion` at base states (q, q̇) and multipliers μ.

        Parameters
        ----------
        q, qd : array_like (..., n)
        mu : array_like (..., m)
        t : float or array_like

        Returns
        -------
        LusternikMotion
        """
        A, b = self.base_constraint.matrices(q, qd, t)
        return lusternik_motion(self.base_plant.mass_matrix(q, t), self.base_plant.given_force(q, qd, t), A, b, qd,
                                mu, self.derivatives(q, qd, t))

    def initial_state(self, q0, qd0, mu0, *, t0: float = 0.0, tol: float = 1e-9):
        """The extended initial state ``((q0, ν0 = 0), (q̇0, μ0))``.

        Parameters
        ----------
        q0, qd0 : array_like (n,)
            A start on F = 0 (the model keeps Ḟ = 0, so a violated start stays violated).
        mu0 : float or array_like (m,)
            S's multipliers μ(0): the model's extra initial data.
        t0 : float
            Initial time.
        tol : float
            Largest |F(q0, q̇0)| accepted, relative to ``1 + ‖∂F/∂q̇‖ ‖q̇0‖``.

        Returns
        -------
        q0_ext, qd0_ext : ndarray (n + m,)

        Raises
        ------
        ParameterError
            Wrong shapes, non-finite values, or a start off the constraint.
        """
        try:  # the same extended layout ((q, 0), (q̇, multiplier)) and checks as the vakonomic model's
            return VakonomicModel.initial_state(self, q0, qd0, mu0, t0=t0, tol=tol)
        except ParameterError as exc:  # its messages name λ0; here the argument is S's μ0
            raise ParameterError(str(exc).replace("lam0", "mu0").replace("λ", "μ")) from None

    def split(self, q, qd):
        """``(q, q̇, μ)`` from extended states ``(q, ν)``, ``(q̇, μ)`` (any leading axes).

        Parameters
        ----------
        q, qd : array_like (..., n + m)

        Returns
        -------
        q, qd, mu : ndarray
        """
        q, qd = np.asarray(q, dtype=float), np.asarray(qd, dtype=float)
        k = self.base_plant.n
        if q.shape[-1:] != (self.plant.n,) or qd.shape[-1:] != (self.plant.n,):
            raise ParameterError(f"the state must have shape (..., {self.plant.n}) {self.plant.coordinates}; got "
                                 f"{q.shape}, {qd.shape}.")
        return q[..., :k], qd[..., :k], qd[..., k:]


def speed_holding_model(m, g, c):
    """The speed-holding particle: ``(plant, constraint)`` (S §3, g_ij = δ_ij, V = m g y).

    Parameters
    ----------
    m : float
        Mass (> 0).
    g : float
        Field strength (V = m g y).
    c : float
        The speed held (> 0).

    Returns
    -------
    plant : LagrangianPlant
        On (x, y), from T = m(ẋ² + ẏ²)/2 and V = m g y.
    constraint : Nonholonomic
        ``F = (ẋ² + ẏ²)/2 − c²/2``.
    """
    import sympy as sp

    from ..plants.lagrangian import LagrangianPlant

    x, y, xd, yd, ms, gs, cs = sp.symbols("x y x_dot y_dot m g c", real=True)
    plant = LagrangianPlant.from_energies([x, y], ms * (xd**2 + yd**2) / 2, ms * gs * y, qd=[xd, yd],
                                          params={ms: m, gs: g}, kinds=("length", "length"))
    return plant, Nonholonomic((xd**2 + yd**2) / 2 - cs**2 / 2, [x, y], [xd, yd], params={cs: c})


def dalembert_speed_holding(t, *, g, c, theta0):
    """Closed form of S (3.6) from the origin: ``(q (T, 2), θ (T,))`` (S §3's example in the module docstring).

    Parameters
    ----------
    t : array_like (T,)
    g, c, theta0 : float
        Field, speed, initial heading in (−π/2, π/2) (keyword-only).
    """
    t = np.asarray(t, dtype=float)
    theta = np.arctan(np.sinh(np.arcsinh(math.tan(theta0)) - g * t / c))
    x = -(c**2 / g) * (theta - theta0)
    y = (c**2 / g) * np.log(np.cos(theta) / math.cos(theta0))
    return np.stack([x, y], axis=-1), theta


def lusternik_speed_holding(t, *, m, g, c, theta0, mu0):
    """Closed form of S (3.5) from the origin: ``(q (T, 3) = (x, y, ν = ∫μ dt), μ (T,))`` (S §3's example in the module docstring).

    Parameters
    ----------
    t : array_like (T,)
    m, g, c, theta0, mu0 : float
        Mass, field, speed, initial heading in (−π/2, π/2), μ(0) with m + μ0 > 0 (keyword-only).
    """
    t = np.asarray(t, dtype=float)
    W0, cos0, s0 = m + mu0, math.cos(theta0), math.tan(theta0)
    kappa = m * g / (c * W0 * cos0)
    s = s0 - kappa * t  # tan θ
    sec = np.sqrt(1.0 + s**2)
    x = -(c / kappa) * (np.arcsinh(s) - math.asinh(s0))
    y = -(c / kappa) * (sec - math.sqrt(1.0 + s0**2))
    mu = W0 * cos0 * sec - m

    def prim(u):  # ∫ √(1 + u²) du
        return 0.5 * (u * np.sqrt(1.0 + u**2) + np.arcsinh(u))

    nu = W0 * cos0 * (prim(s0) - prim(s)) / kappa - m * t
    return np.stack([x, y, nu], axis=-1), mu
