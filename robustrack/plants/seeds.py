"""The example systems of the seed papers, with their seed constraints.

Each plant is the *unconstrained* system ``M(q, t) q̈ = Q(q, q̇, t)`` of one worked
example (THEORY §3, §8); its seed constraint comes from a separate function
``<name>_constraint(plant, **constraint_parameters)`` returning a
:class:`robustrack.constraints.FunctionConstraint`. Parameters that enter only the
constraint (an incline angle, an ellipse, a prescribed trajectory) are keywords of
that function, not fields of the plant, so the three steps of W 2.2 stay apart.

The matrices ``A``, ``b`` below were derived by hand from the seed constraints
(differentiate a holonomic φ twice, a nonholonomic ψ once), scaled so that
``A q̈ − b`` equals φ̈ (resp. ψ̇) exactly, including off the constraint manifold.
``residual`` returns the raw φ or ψ.

Seeds: W = Wanichanon (2012), KU = Kalaba & Udwadia (1993), K = Kozlov (2014),
S = Sławianowski (1990); see ``shared/seeds/README.md``.
"""

from __future__ import annotations

import dataclasses
import math
from typing import ClassVar

import numpy as np

from .._validate import finite, positive, scalar
from ..constraints import FunctionConstraint
from ..errors import ParameterError
from .base import Plant

__all__ = [
    "FreeParticle",
    "CartesianPendulum",
    "CoupledDuffing",
    "ChaplyginSleigh",
    "RollingWheel",
    "TwoMassSprings",
    "QuaternionRigidBody",
    "TwoEllipseParticles",
    "SpeedReducer",
    "free_particle_constraint",
    "cartesian_pendulum_constraint",
    "coupled_duffing_constraint",
    "chaplygin_sleigh_constraint",
    "rolling_wheel_constraint",
    "two_mass_springs_constraint",
    "quaternion_rigid_body_constraint",
    "two_ellipse_particles_constraint",
    "speed_reducer_constraint",
    "quaternion_matrix",
    "SEED_PLANTS",
    "SEED_CONSTRAINTS",
]


# ----------------------------------------------------------------------------- helpers
def _set_checked(plant, *, pos=(), nonneg=(), fin=()):
    """Validate the named fields of a frozen plant and store them as floats/arrays."""
    for name in pos:
        object.__setattr__(plant, name, positive(getattr(plant, name), name))
    for name in nonneg:
        object.__setattr__(plant, name, positive(getattr(plant, name), name, allow_zero=True))
    for name in fin:
        arr = finite(getattr(plant, name), name)
        object.__setattr__(plant, name, float(arr) if arr.ndim == 0 else arr)


def _coords(x, n: int, name: str) -> np.ndarray:
    """``x`` as a float array whose last axis has length ``n``."""
    arr = np.asarray(x, dtype=float)
    if arr.ndim < 1 or arr.shape[-1] != n:
        raise ParameterError(f"`{name}` must have shape (..., {n}); got shape {arr.shape}.")
    return arr


def _batch(q: np.ndarray, *params) -> tuple[int, ...]:
    """Broadcast shape of the batch axes of ``q`` and of scalar-per-plant parameters."""
    return np.broadcast_shapes(q.shape[:-1], *(np.shape(p) for p in params))


def _diag(*entries, batch) -> np.ndarray:
    """Batched diagonal matrix from broadcastable entries."""
    n = len(entries)
    M = np.zeros(tuple(batch) + (n, n))
    for i, e in enumerate(entries):
        M[..., i, i] = e
    return M


def _check_plant(plant, cls, fn: str):
    if not isinstance(plant, cls):
        raise ParameterError(
            f"`plant` of {fn}() must be a {cls.__name__}; got {type(plant).__name__}."
        )


def _stack_rows(*rows) -> np.ndarray:
    """Stack A rows (each a list of broadcastable entries) into ``(..., m, n)``."""
    batch = np.broadcast_shapes(*(np.shape(e) for row in rows for e in row))
    return np.stack(
        [np.stack([np.broadcast_to(e, batch) for e in row], axis=-1) for row in rows], axis=-2
    )


# ----------------------------------------------------------------------------- KU ex. 1
@dataclasses.dataclass(frozen=True, eq=False)
class FreeParticle(Plant):
    """A particle free of given forces in 3-D space (KU example 1, W ch. 3).

    ``q = (x, y, z)``, ``M = m I``, ``Q = 0``. Its seed constraint is Rosenberg's
    nonholonomic ``ẏ = z ẋ`` (KU eq. 36), :func:`free_particle_constraint`; the
    constrained acceleration is KU (38), ``q̈ = ż ẋ /(1 + z²) · (−z, 1, 0)``.

    Parameters
    ----------
    m : float or array_like, default 1.0
        Particle mass, > 0 (KU uses unit mass).
    """

    coordinates: ClassVar[tuple[str, ...]] = ("x", "y", "z")
    m: float = 1.0

    def __post_init__(self):
        _set_checked(self, pos=("m",))

    def mass_matrix(self, q, t=0.0):
        q = _coords(q, 3, "q")
        return _diag(self.m, self.m, self.m, batch=_batch(q, self.m))

    def given_force(self, q, qd, t=0.0):
        q = _coords(q, 3, "q")
        return np.zeros(_batch(q, self.m) + (3,))

    def positions(self, q):
        q = _coords(q, 3, "q")
        return q[..., None, :]


def free_particle_constraint(plant: FreeParticle) -> FunctionConstraint:
    """Rosenberg's constraint ``ψ = ẏ − z ẋ = 0`` (KU eq. 36).

    ``A = [−z, 1, 0]``, ``b = ż ẋ`` (one row).

    Parameters
    ----------
    plant : FreeParticle

    Returns
    -------
    FunctionConstraint
        ``n = 3``, ``m = 1``; ``residual`` is ψ.
    """
    _check_plant(plant, FreeParticle, "free_particle_constraint")

    def A(q, qd, t):
        z = q[..., 2]
        return _stack_rows([-z, np.ones_like(z), np.zeros_like(z)])

    def b(q, qd, t):
        qd = np.asarray(qd, dtype=float)
        return (qd[..., 2] * qd[..., 0])[..., None]

    def psi(q, qd, t):
        qd = np.asarray(qd, dtype=float)
        return (qd[..., 1] - q[..., 2] * qd[..., 0])[..., None]

    return FunctionConstraint(A, b, n=3, m=1, residual=psi)


# ----------------------------------------------------------------------------- KU ex. 2
@dataclasses.dataclass(frozen=True, eq=False)
class CartesianPendulum(Plant):
    """Pendulum bob in Cartesian coordinates, y pointing DOWN (KU example 2, eq. 33).

    ``q = (x, y)``, ``M = m I``, ``Q = (0, m g)``. The length constraint
    ``x² + y² = L² (1 − μ sin x²)`` (KU eq. 34) is
    :func:`cartesian_pendulum_constraint`. Seed ICs: ``x = 0, y = L, ẏ = 0, ẋ = a``.

    Parameters
    ----------
    m : float or array_like, default 1.0
        Bob mass, > 0.
    g : float or array_like, default 4π
        Gravitational acceleration, >= 0 (KU takes 4π).
    """

    coordinates: ClassVar[tuple[str, ...]] = ("x", "y")
    m: float = 1.0
    g: float = 4.0 * math.pi

    def __post_init__(self):
        _set_checked(self, pos=("m",), nonneg=("g",))

    def mass_matrix(self, q, t=0.0):
        q = _coords(q, 2, "q")
        return _diag(self.m, self.m, batch=_batch(q, self.m))

    def given_force(self, q, qd, t=0.0):
        q = _coords(q, 2, "q")
        batch = _batch(q, self.m, self.g)
        Q = np.zeros(batch + (2,))
        Q[..., 1] = self.m * self.g
        return Q

    def positions(self, q):
        """Bob position with the vertical axis pointing UP: ``(x, −y)``."""
        q = _coords(q, 2, "q")
        return np.stack([q[..., 0], -q[..., 1]], axis=-1)[..., None, :]


def cartesian_pendulum_constraint(
    plant: CartesianPendulum, *, L: float = 20.0, mu: float = 0.0
) -> FunctionConstraint:
    """Length constraint ``φ = x² + y² − L² (1 − μ sin x²) = 0`` (KU eq. 34).

    Differentiating twice:
    ``A = [2x (1 + μ L² cos x²), 2y]``,
    ``b = −2 (ẋ² + ẏ²) − 2 μ L² ẋ² (cos x² − 2 x² sin x²)``.

    Parameters
    ----------
    plant : CartesianPendulum
    L : float, default 20.0
        Nominal length, > 0 (KU: 20).
    mu : float, default 0.0
        Nonlinearity of the length; KU uses 0 (rigid) and −0.1.

    Returns
    -------
    FunctionConstraint
        ``n = 2``, ``m = 1``; ``residual`` is φ (KU Fig. 1(g)'s "error").
    """
    _check_plant(plant, CartesianPendulum, "cartesian_pendulum_constraint")
    L = positive(scalar(L, "L"), "L")
    mu = scalar(mu, "mu")
    muL2 = mu * L * L

    def A(q, qd, t):
        x, y = q[..., 0], q[..., 1]
        return _stack_rows([2.0 * x * (1.0 + muL2 * np.cos(x * x)), 2.0 * y])

    def b(q, qd, t):
        qd = np.asarray(qd, dtype=float)
        x, xd, yd = q[..., 0], qd[..., 0], qd[..., 1]
        x2 = x * x
        return (
            -2.0 * (xd * xd + yd * yd) - 2.0 * muL2 * xd * xd * (np.cos(x2) - 2.0 * x2 * np.sin(x2))
        )[..., None]

    def phi(q, qd, t):
        x, y = q[..., 0], q[..., 1]
        return (x * x + y * y - L * L * (1.0 - mu * np.sin(x * x)))[..., None]

    return FunctionConstraint(A, b, n=2, m=1, residual=phi)


# ----------------------------------------------------------------------------- KU ex. 3
@dataclasses.dataclass(frozen=True, eq=False)
class CoupledDuffing(Plant):
    """Coupled damped Duffing oscillator (KU example 3, eqs. 35a–b).

    ``q = (x1, x2)``, ``M = diag(m1, m2)``; with ``δ = x1 − x2``::

        Q1 = −k1 δ − c1 δ̇ − k̄1 δ³
        Q2 = −k2 x2 − c2 ẋ2 − k̄2 x2³ + k1 δ + c1 δ̇ + k̄1 δ³

    The tracking requirement ``x1 − x2 = A e^{−αt} sin ωt`` (KU eq. 35c) is
    :func:`coupled_duffing_constraint`. Seed ICs: ``x1 = 1, x2 = 1, ẋ2 = 2``,
    ẋ1 from the constraint.

    Parameters
    ----------
    m1, m2 : float or array_like, default 2.0, 1.0
        Masses, > 0.
    k1, k2 : float or array_like, default 10.0, 12.0
        Linear stiffnesses (coupling, ground), >= 0.
    kbar1, kbar2 : float or array_like, default 1.0, 2.0
        Cubic stiffnesses k̄1 (coupling), k̄2 (ground), >= 0.
    c1, c2 : float or array_like, default 0.1, 0.15
        Dampers (coupling, ground), >= 0.
    """

    coordinates: ClassVar[tuple[str, ...]] = ("x1", "x2")
    m1: float = 2.0
    m2: float = 1.0
    k1: float = 10.0
    k2: float = 12.0
    kbar1: float = 1.0
    kbar2: float = 2.0
    c1: float = 0.1
    c2: float = 0.15

    def __post_init__(self):
        _set_checked(
            self, pos=("m1", "m2"), nonneg=("k1", "k2", "kbar1", "kbar2", "c1", "c2")
        )

    def mass_matrix(self, q, t=0.0):
        q = _coords(q, 2, "q")
        return _diag(self.m1, self.m2, batch=_batch(q, self.m1, self.m2))

    def given_force(self, q, qd, t=0.0):
        q = _coords(q, 2, "q")
        qd = _coords(qd, 2, "qd")
        x2, x2d = q[..., 1], qd[..., 1]
        d, dd = q[..., 0] - x2, qd[..., 0] - x2d
        coupling = self.k1 * d + self.c1 * dd + self.kbar1 * d**3
        Q1 = -coupling
        Q2 = -self.k2 * x2 - self.c2 * x2d - self.kbar2 * x2**3 + coupling
        return np.stack(np.broadcast_arrays(Q1, Q2), axis=-1)


def coupled_duffing_constraint(
    plant: CoupledDuffing,
    *,
    alpha: float = 4.0,
    amplitude: float = 1.0,
    omega: float = 2.0 * math.pi,
) -> FunctionConstraint:
    """Tracking requirement ``φ = x1 − x2 − A e^{−αt} sin ωt = 0`` (KU eq. 35c).

    ``A = [1, −1]``, ``b = s̈(t) = A e^{−αt} ((α² − ω²) sin ωt − 2αω cos ωt)``.

    Parameters
    ----------
    plant : CoupledDuffing
    alpha : float, default 4.0
        Decay rate α (KU: 4 and 0.4).
    amplitude : float, default 1.0
        Amplitude A.
    omega : float, default 2π
        Angular frequency ω.

    Returns
    -------
    FunctionConstraint
        ``n = 2``, ``m = 1``; ``residual`` is φ (KU Fig. 5's tracking error).
    """
    _check_plant(plant, CoupledDuffing, "coupled_duffing_constraint")
    al = scalar(alpha, "alpha")
    amp = scalar(amplitude, "amplitude")
    om = scalar(omega, "omega")

    def s(t):
        t = np.asarray(t, dtype=float)
        return amp * np.exp(-al * t) * np.sin(om * t)

    def A(q, qd, t):
        one = np.ones(q.shape[:-1])
        return _stack_rows([one, -one])

    def b(q, qd, t):
        t = np.asarray(t, dtype=float)
        sdd = amp * np.exp(-al * t) * (
            (al * al - om * om) * np.sin(om * t) - 2.0 * al * om * np.cos(om * t)
        )
        return np.broadcast_to(sdd, q.shape[:-1])[..., None]

    def phi(q, qd, t):
        return (q[..., 0] - q[..., 1] - s(t))[..., None]

    return FunctionConstraint(A, b, n=2, m=1, residual=phi)


# ----------------------------------------------------------------------------- K skate
@dataclasses.dataclass(frozen=True, eq=False)
class ChaplyginSleigh(Plant):
    """Chaplygin skate (sleigh) on an inclined plane (K, "Example: the Chaplygin skate").

    ``q = (x, y, φ)`` with x pointing down the slope, ``L = ½ m (ẋ² + ẏ²) + ½ I φ̇² + m g x``,
    so ``M = diag(m, m, I)``, ``Q = (m g, 0, 0)``; K takes ``m = I = g = 1``. The
    knife-edge constraint ``ẋ sin φ − ẏ cos φ = 0`` is :func:`chaplygin_sleigh_constraint`.
    With zero ICs except ``φ̇(0) = ω`` the nonholonomic motion is (K)
    ``x = g sin²(ωt)/(2ω²)``, ``y = g (ωt − ½ sin 2ωt)/(2ω²)``, ``φ = ωt``.

    Parameters
    ----------
    m : float or array_like, default 1.0
        Mass, > 0.
    inertia : float or array_like, default 1.0
        Moment of inertia about the vertical axis through the contact point, > 0.
    g : float or array_like, default 1.0
        Gravity component along the slope (the +x direction), >= 0.
    """

    coordinates: ClassVar[tuple[str, ...]] = ("x", "y", "phi")
    m: float = 1.0
    inertia: float = 1.0
    g: float = 1.0

    def __post_init__(self):
        _set_checked(self, pos=("m", "inertia"), nonneg=("g",))

    def mass_matrix(self, q, t=0.0):
        q = _coords(q, 3, "q")
        return _diag(self.m, self.m, self.inertia, batch=_batch(q, self.m, self.inertia))

    def given_force(self, q, qd, t=0.0):
        q = _coords(q, 3, "q")
        Q = np.zeros(_batch(q, self.m, self.g) + (3,))
        Q[..., 0] = self.m * self.g
        return Q

    def positions(self, q):
        q = _coords(q, 3, "q")
        return q[..., None, :2]


def chaplygin_sleigh_constraint(plant: ChaplyginSleigh) -> FunctionConstraint:
    """Knife-edge constraint ``ψ = ẋ sin φ − ẏ cos φ = 0`` (K).

    ``A = [sin φ, −cos φ, 0]``, ``b = −φ̇ (ẋ cos φ + ẏ sin φ)``.

    Parameters
    ----------
    plant : ChaplyginSleigh

    Returns
    -------
    FunctionConstraint
        ``n = 3``, ``m = 1``; ``residual`` is ψ.
    """
    _check_plant(plant, ChaplyginSleigh, "chaplygin_sleigh_constraint")

    def A(q, qd, t):
        ph = q[..., 2]
        return _stack_rows([np.sin(ph), -np.cos(ph), np.zeros_like(ph)])

    def b(q, qd, t):
        qd = np.asarray(qd, dtype=float)
        ph = q[..., 2]
        return (-qd[..., 2] * (qd[..., 0] * np.cos(ph) + qd[..., 1] * np.sin(ph)))[..., None]

    def psi(q, qd, t):
        qd = np.asarray(qd, dtype=float)
        ph = q[..., 2]
        return (qd[..., 0] * np.sin(ph) - qd[..., 1] * np.cos(ph))[..., None]

    return FunctionConstraint(A, b, n=3, m=1, residual=psi)


# ----------------------------------------------------------------------------- W 4.4.1
@dataclasses.dataclass(frozen=True, eq=False)
class RollingWheel(Plant):
    """Wheel rolling down an incline, with a SINGULAR mass matrix (W 4.4.1, eqs. 4.4.1–4.4.9).

    ``q = (θ, y)``, y the downward vertical displacement of the centre;
    ``L = ½ (m R² + I_c) θ̇² + m g y`` (W 4.4.2), so
    ``M = diag(m R² + I_c, 0)`` (positive semi-definite) and ``Q = (0, m g)`` (W 4.4.3).
    The rolling constraint ``y = R θ sin β`` (W 4.4.4) is :func:`rolling_wheel_constraint`;
    the result (W 4.4.6, 4.4.9) is ``θ̈ = m g R sin β /(m R² + I_c)``, ``ÿ = R sin β θ̈``,
    ``Qᶜ = (m g R sin β, −m g)``. W gives no numbers; the defaults are a uniform
    disc (``I_c = ½ m R²``) of 1 kg and radius 0.5 m.

    Parameters
    ----------
    m : float or array_like, default 1.0
        Mass, > 0.
    R : float or array_like, default 0.5
        Radius, > 0.
    I_c : float or array_like, default 0.125
        Moment of inertia about the centre, >= 0.
    g : float or array_like, default 9.81
        Gravitational acceleration, >= 0.
    """

    coordinates: ClassVar[tuple[str, ...]] = ("theta", "y")
    m: float = 1.0
    R: float = 0.5
    I_c: float = 0.125
    g: float = 9.81

    def __post_init__(self):
        _set_checked(self, pos=("m", "R"), nonneg=("I_c", "g"))

    def mass_matrix(self, q, t=0.0):
        q = _coords(q, 2, "q")
        batch = _batch(q, self.m, self.R, self.I_c)
        return _diag(self.m * self.R**2 + self.I_c, 0.0, batch=batch)

    def given_force(self, q, qd, t=0.0):
        q = _coords(q, 2, "q")
        Q = np.zeros(_batch(q, self.m, self.g) + (2,))
        Q[..., 1] = self.m * self.g
        return Q


def rolling_wheel_constraint(
    plant: RollingWheel, *, beta: float = math.pi / 6
) -> FunctionConstraint:
    """Rolling without slipping, ``φ = R θ sin β − y = 0`` (W 4.4.4–4.4.5).

    ``A = [R sin β, −1]``, ``b = 0``.

    Parameters
    ----------
    plant : RollingWheel
        Supplies R (scalar, or broadcasting against the batch axes of q).
    beta : float, default π/6
        Incline angle, 0 < β < π/2 (W gives no value).

    Returns
    -------
    FunctionConstraint
        ``n = 2``, ``m = 1``; ``residual`` is φ.
    """
    _check_plant(plant, RollingWheel, "rolling_wheel_constraint")
    beta = scalar(beta, "beta")
    if not 0.0 < beta < math.pi / 2:
        raise ParameterError(f"`beta` must lie in (0, π/2) (W 4.4.1); got {beta!r}.")
    Rs = plant.R * math.sin(beta)

    def A(q, qd, t):
        return _stack_rows([np.broadcast_to(Rs, q.shape[:-1]), -np.ones(q.shape[:-1])])

    def b(q, qd, t):
        return np.zeros(q.shape[:-1] + (1,))

    def phi(q, qd, t):
        return (Rs * q[..., 0] - q[..., 1])[..., None]

    return FunctionConstraint(A, b, n=2, m=1, residual=phi)


# ----------------------------------------------------------------------------- W 4.4.2
@dataclasses.dataclass(frozen=True, eq=False)
class TwoMassSprings(Plant):
    """Two masses in a line, wall–k1–m1–k2–m2; ``m1 = 0`` allowed (W 4.4.2, eqs. 4.4.10–4.4.15).

    ``x1 = X1 − l10``, ``x2 = X2 − l20`` (X the positions, l the unstretched spring
    lengths, d the length of mass m1), so spring 1 stretches by ``x1`` and spring 2 by
    ``e2 = x2 − x1 − l10 − d``. ``M = diag(m1, m2)``,
    ``Q = (−k1 x1 + k2 e2, −k2 e2)`` (W 4.4.10). With ``m1 = 0`` (the default, the seed's
    case) M is singular and the seed adds the massless-node constraint
    :func:`two_mass_springs_constraint`; then m2 moves on k1, k2 in series (W 4.4.15):
    ``m2 ẍ2 = −k1 k2 /(k1 + k2) · (x2 − l10 − d)``. W gives no numbers; the defaults are
    illustrative.

    Parameters
    ----------
    m1 : float or array_like, default 0.0
        Mass of the first body, >= 0.
    m2 : float or array_like, default 1.0
        Mass of the second body, > 0.
    k1, k2 : float or array_like, default 2.0, 3.0
        Spring stiffnesses, > 0.
    l10 : float or array_like, default 1.0
        Unstretched length of spring 1, >= 0.
    d : float or array_like, default 0.2
        Length of the first body, >= 0.
    """

    coordinates: ClassVar[tuple[str, ...]] = ("x1", "x2")
    m1: float = 0.0
    m2: float = 1.0
    k1: float = 2.0
    k2: float = 3.0
    l10: float = 1.0
    d: float = 0.2

    def __post_init__(self):
        _set_checked(self, pos=("m2", "k1", "k2"), nonneg=("m1", "l10", "d"))

    def mass_matrix(self, q, t=0.0):
        q = _coords(q, 2, "q")
        return _diag(self.m1, self.m2, batch=_batch(q, self.m1, self.m2))

    def given_force(self, q, qd, t=0.0):
        q = _coords(q, 2, "q")
        x1 = q[..., 0]
        e2 = q[..., 1] - x1 - self.l10 - self.d
        return np.stack(np.broadcast_arrays(-self.k1 * x1 + self.k2 * e2, -self.k2 * e2), axis=-1)


def two_mass_springs_constraint(plant: TwoMassSprings) -> FunctionConstraint:
    """Force balance of a massless first body, ``φ = (k1 + k2) x1 − k2 x2 + k2 (l10 + d) = 0``.

    W (4.4.12) ``k1 x1 = k2 e2``; differentiated twice, W (4.4.13):
    ``A = [k1 + k2, −k2]``, ``b = 0``. Meaningful for ``m1 = 0``.

    Parameters
    ----------
    plant : TwoMassSprings
        Supplies k1, k2, l10, d (scalars, or broadcasting against the batch axes of q).

    Returns
    -------
    FunctionConstraint
        ``n = 2``, ``m = 1``; ``residual`` is φ (= −Q1).
    """
    _check_plant(plant, TwoMassSprings, "two_mass_springs_constraint")
    k1, k2, l10, d = plant.k1, plant.k2, plant.l10, plant.d

    def A(q, qd, t):
        batch = q.shape[:-1]
        return _stack_rows([np.broadcast_to(k1 + k2, batch), np.broadcast_to(-k2, batch)])

    def b(q, qd, t):
        return np.zeros(q.shape[:-1] + (1,))

    def phi(q, qd, t):
        return ((k1 + k2) * q[..., 0] - k2 * q[..., 1] + k2 * (l10 + d))[..., None]

    return FunctionConstraint(A, b, n=2, m=1, residual=phi)


# ----------------------------------------------------------------------------- W 4.4.4
def quaternion_matrix(u) -> np.ndarray:
    """The 3×4 matrix E(u) of W (4.4.21), shape ``(..., 3, 4)``.

    For a unit quaternion ``u = (u0, u1, u2, u3)`` (scalar first), ``E u = 0``,
    ``E Eᵀ = I₃`` and the body angular velocity is ``ω = 2 E u̇ = −2 Ė u``.

    Parameters
    ----------
    u : array_like, shape (..., 4)
        Quaternions, scalar first; leading batch axes are kept. Unit norm is not
        checked (the identities above need it).

    Returns
    -------
    numpy.ndarray, shape (..., 3, 4)
        E(u), rows ``[−u1, u0, u3, −u2]``, ``[−u2, −u3, u0, u1]``, ``[−u3, u2, −u1, u0]``.
    """
    u = _coords(u, 4, "u")
    u0, u1, u2, u3 = (u[..., i] for i in range(4))
    return np.stack(
        [
            np.stack([-u1, u0, u3, -u2], axis=-1),
            np.stack([-u2, -u3, u0, u1], axis=-1),
            np.stack([-u3, u2, -u1, u0], axis=-1),
        ],
        axis=-2,
    )


@dataclasses.dataclass(frozen=True, eq=False)
class QuaternionRigidBody(Plant):
    """Rotational dynamics of a rigid body in unit quaternions (W 4.4.4, eqs. 4.4.20–4.4.26).

    ``q = u`` (4 components, scalar first), ``T = ½ ωᵀ J ω = 2 u̇ᵀ Eᵀ J E u̇`` (W 4.4.20),
    so (W 4.4.22, 4.4.23) ::

        M = 4 Eᵀ J E            (rank 3: singular)
        Q = −8 Ėᵀ J E u̇ + 2 Eᵀ Γ_B

    with ``E = E(u)`` of :func:`quaternion_matrix`, ``Ė = E(u̇)`` and Γ_B the body-frame
    torque. The unit-norm constraint is :func:`quaternion_rigid_body_constraint`; the
    constraint force is ``Qᶜ = −2 (ωᵀ J ω) u`` (W 4.4.26). W gives no numbers.

    Parameters
    ----------
    J : array_like, shape (..., 3), default (1, 2, 3)
        Principal moments of inertia, > 0.
    torque : array_like, shape (..., 3), default (0, 0, 0)
        Constant body-frame torque Γ_B (torque-free by default).
    """

    coordinates: ClassVar[tuple[str, ...]] = ("u0", "u1", "u2", "u3")
    J: np.ndarray | tuple = (1.0, 2.0, 3.0)
    torque: np.ndarray | tuple = (0.0, 0.0, 0.0)

    def __post_init__(self):
        _set_checked(self, pos=("J",), fin=("torque",))
        for name in ("J", "torque"):
            val = np.atleast_1d(getattr(self, name))
            if val.shape[-1] != 3:
                raise ParameterError(f"`{name}` must have shape (..., 3); got shape {val.shape}.")
            object.__setattr__(self, name, val)

    def mass_matrix(self, q, t=0.0):
        E = quaternion_matrix(q)
        return 4.0 * np.einsum("...ki,...k,...kj->...ij", E, self.J, E)

    def given_force(self, q, qd, t=0.0):
        E = quaternion_matrix(q)
        Ed = quaternion_matrix(qd)
        JEud = self.J * np.einsum("...kj,...j->...k", E, qd)
        return -8.0 * np.einsum("...ki,...k->...i", Ed, JEud) + 2.0 * np.einsum(
            "...ki,...k->...i", E, self.torque
        )


def quaternion_rigid_body_constraint(plant: QuaternionRigidBody) -> FunctionConstraint:
    """Unit norm ``φ = ½ (uᵀu − 1) = 0`` (W 4.4.4): ``A = uᵀ``, ``b = −u̇ᵀu̇``.

    The ½ makes ``A q̈ − b = φ̈`` exactly; near the unit sphere φ ≈ ‖u‖ − 1.

    Parameters
    ----------
    plant : QuaternionRigidBody

    Returns
    -------
    FunctionConstraint
        ``n = 4``, ``m = 1``; ``residual`` is φ.
    """
    _check_plant(plant, QuaternionRigidBody, "quaternion_rigid_body_constraint")

    def A(q, qd, t):
        return np.asarray(q, dtype=float)[..., None, :]

    def b(q, qd, t):
        qd = np.asarray(qd, dtype=float)
        return -np.sum(qd * qd, axis=-1)[..., None]

    def phi(q, qd, t):
        return 0.5 * (np.sum(q * q, axis=-1) - 1.0)[..., None]

    return FunctionConstraint(A, b, n=4, m=1, residual=phi)


# ----------------------------------------------------------------------------- W 4.4.5
@dataclasses.dataclass(frozen=True, eq=False)
class TwoEllipseParticles(Plant):
    """Two free particles in the plane, later held on confocal ellipses (W 4.4.5, 4.4.27–4.4.31).

    ``q = (x1, y1, x2, y2)``, ``M = diag(m1, m1, m2, m2)``, ``Q = 0``. The constraints
    (ellipse with a focus at the origin, constant areal velocity) are
    :func:`two_ellipse_particles_constraint`; the constraint forces are the
    inverse-square central forces ``Qᶜ_i = −m_i c_i² /(p_i r_i³) (x_i, y_i)`` (W 4.4.35).
    W gives no numbers; the defaults are illustrative.

    Parameters
    ----------
    m1, m2 : float or array_like, default 1.0, 2.0
        Particle masses, > 0.
    """

    coordinates: ClassVar[tuple[str, ...]] = ("x1", "y1", "x2", "y2")
    m1: float = 1.0
    m2: float = 2.0

    def __post_init__(self):
        _set_checked(self, pos=("m1", "m2"))

    def mass_matrix(self, q, t=0.0):
        q = _coords(q, 4, "q")
        return _diag(self.m1, self.m1, self.m2, self.m2, batch=_batch(q, self.m1, self.m2))

    def given_force(self, q, qd, t=0.0):
        q = _coords(q, 4, "q")
        return np.zeros(_batch(q, self.m1, self.m2) + (4,))

    def positions(self, q):
        q = _coords(q, 4, "q")
        return q.reshape(q.shape[:-1] + (2, 2))


def two_ellipse_particles_constraint(
    plant: TwoEllipseParticles,
    *,
    eps=(0.5, 0.3),
    p=(1.0, 2.0),
    c=(1.0, 2.0),
) -> FunctionConstraint:
    """Confocal ellipses with constant areal velocities (W 4.4.27–4.4.30).

    Rows 1–2, holonomic: ``φ_i = r_i − ε_i x_i − p_i = 0`` (W 4.4.27, ``r_i = √(x_i² + y_i²)``),
    ``A_i = [x_i/r_i − ε_i, y_i/r_i]``, ``b_i = −(x_i ẏ_i − y_i ẋ_i)²/r_i³``.
    Rows 3–4, nonholonomic: ``ψ_i = x_i ẏ_i − y_i ẋ_i − c_i = 0`` (W 4.4.28),
    ``A = [−y_i, x_i]``, ``b = 0``. On the constraint manifold ``b_i = −c_i²/r_i³``, the
    seed's form (W 4.4.30); the form used here is the exact φ̈ everywhere.

    Parameters
    ----------
    plant : TwoEllipseParticles
    eps : pair of float, default (0.5, 0.3)
        Eccentricities, 0 <= ε_i < 1.
    p : pair of float, default (1.0, 2.0)
        Semi-latera recta, > 0.
    c : pair of float, default (1.0, 2.0)
        Areal-velocity constants (twice the areal velocity), finite.

    Returns
    -------
    FunctionConstraint
        ``n = 4``, ``m = 4``; ``residual`` is ``(φ1, φ2, ψ1, ψ2)``.
    """
    _check_plant(plant, TwoEllipseParticles, "two_ellipse_particles_constraint")
    pairs = {}
    for name, val in (("eps", eps), ("p", p), ("c", c)):
        arr = finite(val, name)
        if arr.shape != (2,):
            raise ParameterError(
                f"`{name}` must be a pair (one per particle); got shape {arr.shape}."
            )
        pairs[name] = arr
    eps, p, c = pairs["eps"], positive(pairs["p"], "p"), pairs["c"]
    if np.any(eps < 0) or np.any(eps >= 1):
        raise ParameterError(f"`eps` must satisfy 0 <= eps < 1 (ellipses); got {eps!r}.")

    def split(q):
        q = np.asarray(q, dtype=float)
        return q[..., 0::2], q[..., 1::2]  # (..., 2) each: x_i, y_i

    def A(q, qd, t):
        x, y = split(q)
        r = np.hypot(x, y)
        zero = np.zeros_like(x[..., 0])
        ax, ay = x / r - eps, y / r
        return _stack_rows(
            [ax[..., 0], ay[..., 0], zero, zero],
            [zero, zero, ax[..., 1], ay[..., 1]],
            [-y[..., 0], x[..., 0], zero, zero],
            [zero, zero, -y[..., 1], x[..., 1]],
        )

    def b(q, qd, t):
        x, y = split(q)
        xd, yd = split(qd)
        r = np.hypot(x, y)
        h = x * yd - y * xd
        return np.concatenate([-h * h / r**3, np.zeros_like(h)], axis=-1)

    def residual(q, qd, t):
        x, y = split(q)
        xd, yd = split(qd)
        return np.concatenate([np.hypot(x, y) - eps * x - p, x * yd - y * xd - c], axis=-1)

    return FunctionConstraint(A, b, n=4, m=4, residual=residual)


# ----------------------------------------------------------------------------- S 2
@dataclasses.dataclass(frozen=True, eq=False)
class SpeedReducer(Plant):
    """Frictional speed reducer (S §2, eqs. 2.1–2.5): two rotors and a sliding rotor.

    ``q = (φ, ψ, x)``: rotation of rotor A, rotation of rotor B, translation of B along its
    axis. ``L = a φ̇²/2 + b ψ̇²/2 + m ẋ²/2 − V(x)`` (S 2.1) with ``V = k x²/2`` (S leaves V
    open), so ``M = diag(a, b, m)``, ``Q = (0, 0, −k x)``. The rolling constraint
    ``x φ̇ − r ψ̇ = 0`` is :func:`speed_reducer_constraint`; ideal (d'Alembert) reactions
    give S (2.2): translation autonomous, ``½ (a + b x²/r²) φ̇²`` conserved. S gives no
    numbers; the defaults are illustrative.

    Parameters
    ----------
    a, b : float or array_like, default 1.0, 0.5
        Moments of inertia of rotors A and B, > 0.
    m : float or array_like, default 1.0
        Mass of rotor B, > 0.
    k : float or array_like, default 1.0
        Stiffness of the translational potential V = k x²/2, >= 0.
    """

    coordinates: ClassVar[tuple[str, ...]] = ("phi", "psi", "x")
    a: float = 1.0
    b: float = 0.5
    m: float = 1.0
    k: float = 1.0

    def __post_init__(self):
        _set_checked(self, pos=("a", "b", "m"), nonneg=("k",))

    def mass_matrix(self, q, t=0.0):
        q = _coords(q, 3, "q")
        return _diag(self.a, self.b, self.m, batch=_batch(q, self.a, self.b, self.m))

    def given_force(self, q, qd, t=0.0):
        q = _coords(q, 3, "q")
        Q = np.zeros(_batch(q, self.k) + (3,))
        Q[..., 2] = -self.k * q[..., 2]
        return Q


def speed_reducer_constraint(plant: SpeedReducer, *, r: float = 0.5) -> FunctionConstraint:
    """Rolling contact ``ψ = x φ̇ − r ψ̇ = 0`` (S 2.2d): ``A = [x, −r, 0]``, ``b = −ẋ φ̇``.

    Parameters
    ----------
    plant : SpeedReducer
    r : float, default 0.5
        Radius of rotor B, > 0.

    Returns
    -------
    FunctionConstraint
        ``n = 3``, ``m = 1``; ``residual`` is ψ.
    """
    _check_plant(plant, SpeedReducer, "speed_reducer_constraint")
    r = positive(scalar(r, "r"), "r")

    def A(q, qd, t):
        x = q[..., 2]
        return _stack_rows([x, np.full_like(x, -r), np.zeros_like(x)])

    def b(q, qd, t):
        qd = np.asarray(qd, dtype=float)
        return (-qd[..., 2] * qd[..., 0])[..., None]

    def psi(q, qd, t):
        qd = np.asarray(qd, dtype=float)
        return (q[..., 2] * qd[..., 0] - r * qd[..., 1])[..., None]

    return FunctionConstraint(A, b, n=3, m=1, residual=psi)


# ----------------------------------------------------------------------------- registries
SEED_PLANTS: dict[str, type[Plant]] = {
    "free-particle": FreeParticle,
    "cartesian-pendulum": CartesianPendulum,
    "coupled-duffing": CoupledDuffing,
    "chaplygin-sleigh": ChaplyginSleigh,
    "rolling-wheel": RollingWheel,
    "two-mass-springs": TwoMassSprings,
    "quaternion-rigid-body": QuaternionRigidBody,
    "two-ellipse-particles": TwoEllipseParticles,
    "speed-reducer": SpeedReducer,
}
"""Seed plants by name."""

SEED_CONSTRAINTS = {
    "free-particle": free_particle_constraint,
    "cartesian-pendulum": cartesian_pendulum_constraint,
    "coupled-duffing": coupled_duffing_constraint,
    "chaplygin-sleigh": chaplygin_sleigh_constraint,
    "rolling-wheel": rolling_wheel_constraint,
    "two-mass-springs": two_mass_springs_constraint,
    "quaternion-rigid-body": quaternion_rigid_body_constraint,
    "two-ellipse-particles": two_ellipse_particles_constraint,
    "speed-reducer": speed_reducer_constraint,
}
"""Seed constraint factories by the same names: ``SEED_CONSTRAINTS[name](plant, **kw)``."""
