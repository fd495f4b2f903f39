"""The example systems of the seed papers, with their seed constraints.

Each plant is the *unconstrained* system ``M(q, t) q̈ = Q(q, q̇, t)`` of one worked
example (docs/theory/fundamental-equation.md, docs/theory/seed-examples.md); its seed constraint comes from a separate function
``<name>_constraint(plant, **constraint_parameters)`` returning a
:class:`robustrack.constraints.FunctionConstraint`. Parameters that enter only the
constraint (an incline angle, an ellipse, a prescribed trajectory) are keywords of
that function, not fields of the plant, so the three steps of W 2.2 stay apart.

Every model is written once, as sympy expressions just above its class or its constraint
function: M and Q from the example's Lagrangian (with a dissipation function or the virtual
power of the given forces), A and b from the seed's raw φ(q, t) differentiated twice or
ψ(q, q̇, t) once, so that ``A q̈ − b`` equals φ̈ (resp. ψ̇) exactly, including off the
constraint manifold; ``residual`` returns the raw φ or ψ. The compiled tracking loop is
generated from these expressions (``codegen()``, :mod:`robustrack.symbolic`), and the numpy
evaluation is lambdified from the same ones (:mod:`robustrack.plants.symbolic_model`).
The closed forms printed in the seeds are the independent truth they are tested against
(``tests/test_example_plants.py``, ``tests/test_model_sources.py``).

Seeds: W = Wanichanon (2012), KU = Kalaba & Udwadia (1993), K = Kozlov (2014),
S = Sławianowski (1990); see ``shared/seeds/README.md``.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import math
from pathlib import Path
from typing import ClassVar

import numpy as np

from .._validate import as_float_array, finite, positive, scalar
from ..constraints import FunctionConstraint, _holonomic_acceleration, _nonholonomic_acceleration
from ..errors import ParameterError
from .lagrangian import lagrange_equations
from .symbolic_model import SymbolicPlant, form_constraint

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
    "EXAMPLE_PLANTS",
    "EXAMPLE_CONSTRAINTS",
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
    arr = as_float_array(x, name)
    if arr.ndim < 1 or arr.shape[-1] != n:
        raise ParameterError(f"`{name}` must have shape (..., {n}); got shape {arr.shape}.")
    return arr


def _check_plant(plant, cls, fn: str):
    if not isinstance(plant, cls):
        raise ParameterError(
            f"`plant` of {fn}() must be a {cls.__name__}; got {type(plant).__name__}."
        )


@functools.lru_cache(maxsize=None)
def _source_tag() -> str:
    """A hash of this file and of Lagrange's equations the plants below are derived with: part of every key, so an
    edit here (or there) never reuses old compiled code.

    The compiled loop caches modules by key (:mod:`robustrack.compiled.loop`); the
    expressions below live in this file and :func:`~robustrack.plants.lagrangian.lagrange_equations`, so a
    changed source is a changed structure.
    """
    import inspect

    try:
        text = Path(__file__).read_bytes() + inspect.getsource(lagrange_equations).encode()
    except OSError:  # pragma: no cover - no readable source (frozen install)
        return "nosource"
    return hashlib.sha256(text).hexdigest()[:12]


def _key(name: str) -> str:
    """The structure key ``examples.<name>/<hash of this file>`` of a plant class or constraint function."""
    return f"examples.{name}/{_source_tag()}"


def _symbols(names: str) -> tuple:
    """Real parameter symbols, as a tuple."""
    import sympy as sp

    return tuple(sp.symbols(names, real=True, seq=True))


def _rayleigh(D, qd):
    """Generalized dissipative forces ``F = −∂D/∂q̇`` of a Rayleigh function D."""
    import sympy as sp

    return [-sp.diff(D, v) for v in qd]


@dataclasses.dataclass(frozen=True, eq=False)
class _SeedPlant(SymbolicPlant):
    """A seed plant: its form is the class's ``_build`` and its parameters are its fields, in order."""

    def form_source(self) -> tuple:
        """``(key, build, values)`` (see :meth:`SymbolicPlant.form_source`): the fields' values in field order."""
        values = [getattr(self, f.name) for f in dataclasses.fields(self)]
        return _key(type(self).__name__), type(self)._build, values


def _seed_constraint_form(rows, factor_b, q, qd, t):
    """A, b of a seed constraint's raw rows (φ rows first, then ψ rows), with its parameter symbols.

    ``factor_b``: b of the φ rows factored (the ellipses' −(x ẏ − y ẋ)²/r³, free of cancellation).
    """
    phi, psi, params = rows(q, qd, t)
    parts = []
    if phi:
        A, b, _ = _holonomic_acceleration(phi, q, qd, t)
        if factor_b:
            import sympy as sp

            b = b.applyfunc(sp.factor)
        parts.append((A, b))
    if psi:
        parts.append(_nonholonomic_acceleration(psi, q, qd, t))
    A, b = parts[0]
    for A2, b2 in parts[1:]:
        A, b = A.col_join(A2), b.col_join(b2)
    return A, b, params


def _seed_raw_rows(rows, q, qd, t):
    """The raw rows ``φ + ψ`` of a seed constraint (its residual), with its parameter symbols."""
    phi, psi, params = rows(q, qd, t)
    return [*phi, *psi], params


def _seed_constraint(name: str, rows, values, *, n: int, m: int, factor_b: bool = False) -> FunctionConstraint:
    """The constraint of the raw rows ``rows(q, qd, t) -> (φ rows, ψ rows, params)`` at parameter ``values``."""
    return form_constraint(_key(name), functools.partial(_seed_constraint_form, rows, factor_b),
                           functools.partial(_seed_raw_rows, rows), values, n=n, m=m)


# ----------------------------------------------------------------------------- KU ex. 1
def _free_particle_form(q, qd, t):
    """KU ex. 1: ``T = ½ m (ẋ² + ẏ² + ż²)``, no given forces."""
    (m,) = _symbols("m")
    M, Q = lagrange_equations(m * sum(v**2 for v in qd) / 2, 0, q, qd, t)
    return M, Q, (m,)


@dataclasses.dataclass(frozen=True, eq=False)
class FreeParticle(_SeedPlant):
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
    coordinate_kinds: ClassVar[tuple[str, ...]] = ("length",) * 3
    _build = staticmethod(_free_particle_form)
    m: float = 1.0

    def __post_init__(self):
        _set_checked(self, pos=("m",))

    def positions(self, q):
        q = _coords(q, 3, "q")
        return q[..., None, :]


def _free_particle_rows(q, qd, t):
    """KU (36): Rosenberg's ``ψ = ẏ − z ẋ``."""
    return [], [qd[1] - q[2] * qd[0]], ()


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
    return _seed_constraint("free_particle_constraint", _free_particle_rows, (), n=3, m=1)


# ----------------------------------------------------------------------------- KU ex. 2
def _cartesian_pendulum_form(q, qd, t):
    """KU ex. 2, y pointing down: ``T = ½ m (ẋ² + ẏ²)``, ``V = −m g y``."""
    m, g = _symbols("m g")
    M, Q = lagrange_equations(m * (qd[0] ** 2 + qd[1] ** 2) / 2, -m * g * q[1], q, qd, t)
    return M, Q, (m, g)


@dataclasses.dataclass(frozen=True, eq=False)
class CartesianPendulum(_SeedPlant):
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
    coordinate_kinds: ClassVar[tuple[str, ...]] = ("length", "length")
    _build = staticmethod(_cartesian_pendulum_form)
    m: float = 1.0
    g: float = 4.0 * math.pi

    def __post_init__(self):
        _set_checked(self, pos=("m",), nonneg=("g",))

    def positions(self, q):
        """Bob position with the vertical axis pointing UP: ``(x, −y)``."""
        q = _coords(q, 2, "q")
        return np.stack([q[..., 0], -q[..., 1]], axis=-1)[..., None, :]


def _cartesian_pendulum_rows(q, qd, t):
    """KU (34): ``φ = x² + y² − L² (1 − μ sin x²)``."""
    import sympy as sp

    L, mu = _symbols("L mu")
    x, y = q
    return [x**2 + y**2 - L**2 * (1 - mu * sp.sin(x**2))], [], (L, mu)


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
    return _seed_constraint("cartesian_pendulum_constraint", _cartesian_pendulum_rows, (L, mu), n=2, m=1)


# ----------------------------------------------------------------------------- KU ex. 3
def _coupled_duffing_form(q, qd, t):
    """KU ex. 3 with δ = x1 − x2: ``T = ½ m1 ẋ1² + ½ m2 ẋ2²``,
    ``V = ½ k1 δ² + ¼ k̄1 δ⁴ + ½ k2 x2² + ¼ k̄2 x2⁴``, Rayleigh ``D = ½ c1 δ̇² + ½ c2 ẋ2²``."""
    m1, m2, k1, k2, kb1, kb2, c1, c2 = params = _symbols("m1 m2 k1 k2 kbar1 kbar2 c1 c2")
    (x1, x2), (v1, v2) = q, qd
    d, dd = x1 - x2, v1 - v2
    T = (m1 * v1**2 + m2 * v2**2) / 2
    V = k1 * d**2 / 2 + kb1 * d**4 / 4 + k2 * x2**2 / 2 + kb2 * x2**4 / 4
    M, Q = lagrange_equations(T, V, q, qd, t, _rayleigh((c1 * dd**2 + c2 * v2**2) / 2, qd))
    return M, Q, params


@dataclasses.dataclass(frozen=True, eq=False)
class CoupledDuffing(_SeedPlant):
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
    coordinate_kinds: ClassVar[tuple[str, ...]] = ("length", "length")
    _build = staticmethod(_coupled_duffing_form)
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


def _coupled_duffing_rows(q, qd, t):
    """KU (35c): ``φ = x1 − x2 − A e^{−αt} sin ωt`` (rheonomic: b depends on t)."""
    import sympy as sp

    al, amp, om = _symbols("alpha amplitude omega")
    return [q[0] - q[1] - amp * sp.exp(-al * t) * sp.sin(om * t)], [], (al, amp, om)


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
    values = (scalar(alpha, "alpha"), scalar(amplitude, "amplitude"), scalar(omega, "omega"))
    return _seed_constraint("coupled_duffing_constraint", _coupled_duffing_rows, values, n=2, m=1)


# ----------------------------------------------------------------------------- K skate
def _chaplygin_sleigh_form(q, qd, t):
    """K, x down the slope: ``T = ½ m (ẋ² + ẏ²) + ½ I φ̇²``, ``V = −m g x``."""
    m, inertia, g = _symbols("m inertia g")
    T = m * (qd[0] ** 2 + qd[1] ** 2) / 2 + inertia * qd[2] ** 2 / 2
    M, Q = lagrange_equations(T, -m * g * q[0], q, qd, t)
    return M, Q, (m, inertia, g)


@dataclasses.dataclass(frozen=True, eq=False)
class ChaplyginSleigh(_SeedPlant):
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
    coordinate_kinds: ClassVar[tuple[str, ...]] = ("length", "length", "angle")
    _build = staticmethod(_chaplygin_sleigh_form)
    m: float = 1.0
    inertia: float = 1.0
    g: float = 1.0

    def __post_init__(self):
        _set_checked(self, pos=("m", "inertia"), nonneg=("g",))

    def positions(self, q):
        q = _coords(q, 3, "q")
        return q[..., None, :2]


def _chaplygin_sleigh_rows(q, qd, t):
    """K: the knife edge ``ψ = ẋ sin φ − ẏ cos φ``."""
    import sympy as sp

    return [], [qd[0] * sp.sin(q[2]) - qd[1] * sp.cos(q[2])], ()


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
    return _seed_constraint("chaplygin_sleigh_constraint", _chaplygin_sleigh_rows, (), n=3, m=1)


# ----------------------------------------------------------------------------- W 4.4.1
def _rolling_wheel_form(q, qd, t):
    """W (4.4.2): ``L = ½ (m R² + I_c) θ̇² + m g y``; T has no ẏ, so M is singular."""
    m, R, I_c, g = _symbols("m R I_c g")
    M, Q = lagrange_equations((m * R**2 + I_c) * qd[0] ** 2 / 2, -m * g * q[1], q, qd, t)
    return M, Q, (m, R, I_c, g)


@dataclasses.dataclass(frozen=True, eq=False)
class RollingWheel(_SeedPlant):
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
    coordinate_kinds: ClassVar[tuple[str, ...]] = ("angle", "length")
    _build = staticmethod(_rolling_wheel_form)
    m: float = 1.0
    R: float = 0.5
    I_c: float = 0.125
    g: float = 9.81

    def __post_init__(self):
        _set_checked(self, pos=("m", "R"), nonneg=("I_c", "g"))


def _rolling_wheel_rows(q, qd, t):
    """W (4.4.4): ``φ = R θ sin β − y``."""
    import sympy as sp

    R, beta = _symbols("R beta")
    return [R * q[0] * sp.sin(beta) - q[1]], [], (R, beta)


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
    return _seed_constraint("rolling_wheel_constraint", _rolling_wheel_rows, (plant.R, beta), n=2, m=1)


# ----------------------------------------------------------------------------- W 4.4.2
def _two_mass_springs_potential(q, k1, k2, l10, d):
    """W (4.4.10): ``V = ½ k1 x1² + ½ k2 e2²`` with the stretch ``e2 = x2 − x1 − l10 − d``."""
    e2 = q[1] - q[0] - l10 - d
    return k1 * q[0] ** 2 / 2 + k2 * e2**2 / 2


def _two_mass_springs_form(q, qd, t):
    """W 4.4.2: ``T = ½ m1 ẋ1² + ½ m2 ẋ2²`` and the springs' V."""
    m1, m2, k1, k2, l10, d = params = _symbols("m1 m2 k1 k2 l10 d")
    T = (m1 * qd[0] ** 2 + m2 * qd[1] ** 2) / 2
    M, Q = lagrange_equations(T, _two_mass_springs_potential(q, k1, k2, l10, d), q, qd, t)
    return M, Q, params


@dataclasses.dataclass(frozen=True, eq=False)
class TwoMassSprings(_SeedPlant):
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
    coordinate_kinds: ClassVar[tuple[str, ...]] = ("length", "length")
    _build = staticmethod(_two_mass_springs_form)
    m1: float = 0.0
    m2: float = 1.0
    k1: float = 2.0
    k2: float = 3.0
    l10: float = 1.0
    d: float = 0.2

    def __post_init__(self):
        _set_checked(self, pos=("m2", "k1", "k2"), nonneg=("m1", "l10", "d"))


def _two_mass_springs_rows(q, qd, t):
    """W (4.4.12): the massless body carries no net force, ``φ = ∂V/∂x1 = 0``."""
    import sympy as sp

    k1, k2, l10, d = params = _symbols("k1 k2 l10 d")
    return [sp.diff(_two_mass_springs_potential(q, k1, k2, l10, d), q[0])], [], params


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
    values = (plant.k1, plant.k2, plant.l10, plant.d)
    return _seed_constraint("two_mass_springs_constraint", _two_mass_springs_rows, values, n=2, m=1)


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
    return np.stack([np.stack(row, axis=-1) for row in _quaternion_rows(*(u[..., i] for i in range(4)))], axis=-2)


def _quaternion_rows(u0, u1, u2, u3) -> list:
    """E(u) of W (4.4.21), row by row, of numbers, arrays or sympy symbols: the one source of
    :func:`quaternion_matrix` and of the quaternion body's symbolic form."""
    return [[-u1, u0, u3, -u2], [-u2, -u3, u0, u1], [-u3, u2, -u1, u0]]


def _quaternion_matrix_symbolic(u):
    """E(u) of W (4.4.21) as a sympy Matrix (3 × 4)."""
    import sympy as sp

    return sp.Matrix(_quaternion_rows(*u))


def _quaternion_rigid_body_form(q, qd, t):
    """W (4.4.20): ``T = ½ ωᵀ J ω`` with ``ω = 2 E(u) u̇``; the body torque Γ_B does the
    virtual power ``Γ_B · ω``, so its generalized force is ``∂(Γ_B · ω)/∂u̇``."""
    import sympy as sp

    J, G = _symbols("J1:4"), _symbols("Gamma1:4")
    w = 2 * _quaternion_matrix_symbolic(q) * sp.Matrix(qd)
    T = sum(J[k] * w[k] ** 2 for k in range(3)) / 2
    power = sum(G[k] * w[k] for k in range(3))
    M, Q = lagrange_equations(T, 0, q, qd, t, [sp.diff(power, v) for v in qd])
    return M, Q, (*J, *G)


@dataclasses.dataclass(frozen=True, eq=False)
class QuaternionRigidBody(_SeedPlant):
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
    coordinate_kinds: ClassVar[tuple[str, ...]] = ("dimensionless",) * 4  # a unit quaternion
    J: np.ndarray | tuple = (1.0, 2.0, 3.0)
    torque: np.ndarray | tuple = (0.0, 0.0, 0.0)

    def __post_init__(self):
        _set_checked(self, pos=("J",), fin=("torque",))
        for name in ("J", "torque"):
            val = np.atleast_1d(getattr(self, name))
            if val.shape[-1] != 3:
                raise ParameterError(f"`{name}` must have shape (..., 3); got shape {val.shape}.")
            object.__setattr__(self, name, val)

    def form_source(self) -> tuple:
        """``(key, build, values)`` (see :meth:`SymbolicPlant.form_source`): ``(J1, J2, J3, Γ1, Γ2, Γ3)``.

        The principal moments and the torque's components, each with the sample axes of ``J``,
        ``torque`` (the body index is their last axis).
        """
        values = [self.J[..., k] for k in range(3)] + [self.torque[..., k] for k in range(3)]
        return _key(type(self).__name__), _quaternion_rigid_body_form, values


def _quaternion_rigid_body_rows(q, qd, t):
    """W 4.4.4: unit norm ``φ = ½ (uᵀu − 1)``."""
    return [(sum(u**2 for u in q) - 1) / 2], [], ()


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
    return _seed_constraint("quaternion_rigid_body_constraint", _quaternion_rigid_body_rows, (), n=4, m=1)


# ----------------------------------------------------------------------------- W 4.4.5
def _two_ellipse_particles_form(q, qd, t):
    """W 4.4.5: ``T = ½ m1 (ẋ1² + ẏ1²) + ½ m2 (ẋ2² + ẏ2²)``, no given forces."""
    m1, m2 = _symbols("m1 m2")
    T = m1 * (qd[0] ** 2 + qd[1] ** 2) / 2 + m2 * (qd[2] ** 2 + qd[3] ** 2) / 2
    M, Q = lagrange_equations(T, 0, q, qd, t)
    return M, Q, (m1, m2)


@dataclasses.dataclass(frozen=True, eq=False)
class TwoEllipseParticles(_SeedPlant):
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
    coordinate_kinds: ClassVar[tuple[str, ...]] = ("length",) * 4
    _build = staticmethod(_two_ellipse_particles_form)
    m1: float = 1.0
    m2: float = 2.0

    def __post_init__(self):
        _set_checked(self, pos=("m1", "m2"))

    def positions(self, q):
        q = _coords(q, 4, "q")
        return q.reshape(q.shape[:-1] + (2, 2))


def _two_ellipse_particles_rows(q, qd, t):
    """W (4.4.27)–(4.4.28): ``φ_i = r_i − ε_i x_i − p_i`` (holonomic), ``ψ_i = x_i ẏ_i − y_i ẋ_i − c_i``.

    φ̈ leaves b = −|v|²/r + (x·v)²/r³; factored (``factor_b``) it is −(x ẏ − y ẋ)²/r³, free of the
    cancellation between two large terms when the velocity is nearly radial.
    """
    import sympy as sp

    eps, p, c = _symbols("eps1:3"), _symbols("p1:3"), _symbols("c1:3")
    x, y, xd, yd = q[0::2], q[1::2], qd[0::2], qd[1::2]
    phi = [sp.sqrt(x[i] ** 2 + y[i] ** 2) - eps[i] * x[i] - p[i] for i in range(2)]
    psi = [x[i] * yd[i] - y[i] * xd[i] - c[i] for i in range(2)]
    return phi, psi, (*eps, *p, *c)


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
    values = [float(v) for v in np.concatenate([eps, p, c])]
    return _seed_constraint("two_ellipse_particles_constraint", _two_ellipse_particles_rows, values, n=4, m=4,
                            factor_b=True)


# ----------------------------------------------------------------------------- S 2
def _speed_reducer_form(q, qd, t):
    """S (2.1): ``T = ½ (a φ̇² + b ψ̇² + m ẋ²)``, ``V = ½ k x²``."""
    a, b, m, k = _symbols("a b m k")
    T = (a * qd[0] ** 2 + b * qd[1] ** 2 + m * qd[2] ** 2) / 2
    M, Q = lagrange_equations(T, k * q[2] ** 2 / 2, q, qd, t)
    return M, Q, (a, b, m, k)


@dataclasses.dataclass(frozen=True, eq=False)
class SpeedReducer(_SeedPlant):
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
    coordinate_kinds: ClassVar[tuple[str, ...]] = ("angle", "angle", "length")
    _build = staticmethod(_speed_reducer_form)
    a: float = 1.0
    b: float = 0.5
    m: float = 1.0
    k: float = 1.0

    def __post_init__(self):
        _set_checked(self, pos=("a", "b", "m"), nonneg=("k",))


def _speed_reducer_rows(q, qd, t):
    """S (2.2d): rolling contact ``ψ = x φ̇ − r ψ̇``."""
    (r,) = _symbols("r")
    return [], [q[2] * qd[0] - r * qd[1]], (r,)


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
    return _seed_constraint("speed_reducer_constraint", _speed_reducer_rows, (r,), n=3, m=1)


# ----------------------------------------------------------------------------- registries
EXAMPLE_PLANTS: dict[str, type[SymbolicPlant]] = {
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
"""The example plants by name."""

EXAMPLE_CONSTRAINTS = {
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
"""Their seed constraint factories by the same names: ``EXAMPLE_CONSTRAINTS[name](plant, **kw)``."""
