"""The planar n-link pendulum: point masses on massless rigid links (W 2.3).

Angles θ_i are measured from the DOWNWARD vertical; the pivot is the origin,
x points right and y up. With the tail masses μ_ij = Σ_{k ≥ max(i, j)} m_k and
μ_i = μ_ii = Σ_{k ≥ i} m_k, Lagrange's equations give (W (2.3.1)–(2.3.3) for N = 3)

    M_ij = μ_ij L_i L_j cos(θ_i − θ_j)
    Q_i  = −Σ_j μ_ij L_i L_j θ̇_j² sin(θ_i − θ_j) − μ_i g L_i sin θ_i .

Batch rule: ``q, qd`` have shape ``(..., N)``; the parameters ``m`` and ``L``
have shape ``(..., N)`` with the body index on the LAST axis, and their leading
axes broadcast against the batch axes of ``q`` by numpy's rules (right-aligned).
``g`` is a scalar or an array broadcasting against the batch axes. For example
``m`` of shape ``(S, 1, N)`` with ``q`` of shape ``(T, N)`` gives ``M`` of shape
``(S, T, N, N)``: S sampled plants at T states in one call.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import numbers
import re

import numpy as np

from .._validate import as_float_array, finite, positive, positive_int
from ..constraints import Constraint, _nonholonomic_acceleration, _state
from ..errors import ConstraintError, ParameterError
from .symbolic_model import SymbolicPlant, form_constraint

__all__ = ["NLinkPendulum", "triple_pendulum", "PendulumEnergyConstraint", "pendulum_energy_constraint"]

_PER_BODY = re.compile(r"(m|L)([1-9][0-9]*)")


def _frozen(arr: np.ndarray) -> np.ndarray:
    arr = np.array(arr, dtype=float)  # a private copy the caller cannot mutate
    arr.setflags(write=False)
    return arr


@dataclasses.dataclass(frozen=True, eq=False)
class NLinkPendulum(SymbolicPlant):
    """Planar chain of N point masses on massless rigid links, W (2.3.1)–(2.3.3).

    Parameters
    ----------
    m : array_like, shape (..., N)
        Bob masses in kg, all > 0. Body index on the last axis; leading axes
        (sampled plants) broadcast against the batch axes of ``q``.
    L : array_like, shape (..., N)
        Link lengths in m, all > 0, same N as ``m``.
    g : float or array_like, default 9.81
        Gravitational acceleration (m/s², pointing down), finite.

    Notes
    -----
    Coordinates are ``theta1 … thetaN`` (rad, from the downward vertical).
    ``replace`` also accepts per-body names: ``plant.replace(m2=2.2, L1=1.1)``
    changes one component of ``m`` or ``L``.

    Examples
    --------
    >>> p = NLinkPendulum(m=[1.0, 2.0], L=[1.0, 0.5])
    >>> p.mass_matrix([0.0, 0.0]).tolist()
    [[3.0, 1.0], [1.0, 0.5]]
    >>> p.replace(m2=3.0).m.tolist()
    [1.0, 3.0]
    """

    m: np.ndarray
    L: np.ndarray
    g: float | np.ndarray = 9.81

    #: Its batches are the package's generated numpy functions, tested row by row against single states and single
    #: plants (``tests/test_plants_pendulum.py``): a run's batch-contract check skips it, as every campaign sample
    #: asked it again (:func:`robustrack.plants.motion.check_batch_contract`).
    _own_batches = True

    def __post_init__(self):
        m = positive(as_float_array(self.m, "m", ndim_min=1), "m")
        L = positive(as_float_array(self.L, "L", ndim_min=1), "L")
        if m.shape[-1] == 0:
            raise ParameterError("`m` must hold at least one mass (last axis); got shape (..., 0).")
        if m.shape[-1] != L.shape[-1]:
            raise ParameterError(
                f"`m` and `L` must have the same number of links on their last axis; "
                f"got m with {m.shape[-1]} (shape {m.shape}) and L with {L.shape[-1]} "
                f"(shape {L.shape})."
            )
        try:
            np.broadcast_shapes(m.shape[:-1], L.shape[:-1])
        except ValueError:
            raise ParameterError(
                f"The leading (sample) axes of `m` {m.shape} and `L` {L.shape} must broadcast "
                "together; the body index is the last axis."
            ) from None
        g = finite(self.g, "g")
        object.__setattr__(self, "m", _frozen(m))
        object.__setattr__(self, "L", _frozen(L))
        object.__setattr__(self, "g", float(g) if g.ndim == 0 else _frozen(g))

    # -- the plant contract -------------------------------------------------

    @functools.cached_property
    def coordinates(self) -> tuple[str, ...]:
        """``("theta1", …, "thetaN")``: link angles from the downward vertical."""
        return tuple(f"theta{i + 1}" for i in range(self.m.shape[-1]))

    @property
    def coordinate_kinds(self) -> tuple[str, ...]:
        """Every coordinate is an angle (rad; generalized forces are torques, N·m)."""
        return ("angle",) * self.n

    @functools.cached_property
    def n(self) -> int:
        """Number of links N."""
        return int(self.m.shape[-1])

    @functools.cached_property
    def _tail_mass(self) -> np.ndarray:
        """μ_i = Σ_{k≥i} m_k, shape (..., N)."""
        return np.flip(np.cumsum(np.flip(self.m, -1), -1), -1)

    def _coordinate_array(self, x, name: str) -> np.ndarray:
        arr = as_float_array(x, name, ndim_min=1)
        if arr.shape[-1] != self.n:
            raise ParameterError(
                f"`{name}` must have {self.n} coordinates on its last axis "
                f"{self.coordinates}; got shape {arr.shape}."
            )
        return arr

    def _g(self):
        return np.asarray(self.g)[..., None]

    def form_source(self) -> tuple:
        """The one source of M and Q: W (2.3.2)–(2.3.3) in sympy (:meth:`SymbolicPlant.form_source`).

        Returns
        -------
        tuple
            ``("NLinkPendulum/N", build, values)``: ``m1 … mN, L1 … LN, g`` are runtime values, so every
            plant with N links shares one compiled module and one numpy evaluation; each value keeps the
            sample axes of ``m``, ``L``, ``g``.
        """
        values = [self.m[..., i] for i in range(self.n)] + [self.L[..., i] for i in range(self.n)] + [self.g]
        return f"NLinkPendulum/{self.n}", functools.partial(_symbolic_pendulum, self.n), values

    # -- geometry and energy -----------------------------------------------

    def _links(self, q):
        """The pendulum's geometry (W 2.3): link i as the vector L_i (sin θ_i, −cos θ_i), given as its two parts
        ``(L sin θ, L cos θ)``, shape (..., N) each; bob k sits at the sum of links 1…k (:meth:`positions`) and
        moves with its time derivative (:meth:`velocities`)."""
        return self.L * np.sin(q), self.L * np.cos(q)

    def positions(self, q) -> np.ndarray:
        """Bob positions, shape (..., N, 2), pivot at the origin, y up.

        x_k = Σ_{i≤k} L_i sin θ_i,  y_k = −Σ_{i≤k} L_i cos θ_i.
        """
        sin, cos = self._links(self._coordinate_array(q, "q"))
        return _chain(sin, -cos)

    def velocities(self, q, qd) -> np.ndarray:
        """Bob velocities, shape (..., N, 2): the time derivative of :meth:`positions`,
        ẋ_k = Σ_{i≤k} L_i cos θ_i θ̇_i,  ẏ_k = Σ_{i≤k} L_i sin θ_i θ̇_i."""
        sin, cos = self._links(self._coordinate_array(q, "q"))
        qd = self._coordinate_array(qd, "qd")
        return _chain(cos * qd, sin * qd)

    def kinetic_energy(self, q, qd) -> np.ndarray:
        """T = ½ q̇ᵀ M(q) q̇, shape (...)."""
        qd_arr = self._coordinate_array(qd, "qd")
        return 0.5 * np.einsum("...i,...ij,...j->...", qd_arr, self.mass_matrix(q), qd_arr)

    def potential_energy(self, q) -> np.ndarray:
        """V = Σ_k m_k g y_k = −g Σ_i μ_i L_i cos θ_i, shape (...); datum y = 0 at the pivot."""
        q = self._coordinate_array(q, "q")
        return -np.asarray(self.g) * np.sum(self._tail_mass * self.L * np.cos(q), axis=-1)

    def body_energies(self, q, qd) -> np.ndarray:
        """Energy of each bob, E_k = ½ m_k |v_k|² + m_k g y_k, shape (..., N).

        ``body_energies(q, qd)[..., 0]`` is W's E₁ of (2.3.5),
        E₁ = ½ m₁ L₁² θ̇₁² − m₁ g L₁ cos θ₁; the sum over k is T + V.
        """
        v = self.velocities(q, qd)
        y = self.positions(q)[..., 1]
        return 0.5 * self.m * np.sum(v**2, axis=-1) + self.m * self._g() * y

    # -- parameters ---------------------------------------------------------

    def replace(self, **params) -> "NLinkPendulum":
        """A validated copy with some parameters changed.

        Accepts the fields ``m``, ``L``, ``g`` and per-body names ``m1 … mN``,
        ``L1 … LN`` (one component; a value array broadcasts against the
        leading axes of ``m`` or ``L``).
        """
        whole, per_body = {}, {}
        for key, value in params.items():
            match = _PER_BODY.fullmatch(key)
            if match and int(match.group(2)) <= self.n:
                per_body[key] = (match.group(1), int(match.group(2)) - 1, value)
            elif key in ("m", "L", "g"):
                whole[key] = value
            else:
                raise ParameterError(
                    f"NLinkPendulum has no parameter `{key}`; its parameters are "
                    f"m, L, g and the per-body names m1…m{self.n}, L1…L{self.n}."
                )
        changed = {}
        for key, (field, index, value) in per_body.items():
            if field in whole:
                raise ParameterError(
                    f"Give either `{field}` or per-body `{key}`, not both."
                )
            base = changed.get(field, getattr(self, field))
            value = as_float_array(value, key)
            shape = np.broadcast_shapes(base.shape[:-1], value.shape) + base.shape[-1:]
            arr = np.array(np.broadcast_to(base, shape))
            arr[..., index] = value
            changed[field] = arr
        return dataclasses.replace(self, **whole, **changed)


def _chain(x, y) -> np.ndarray:
    """The bobs' points (..., N, 2) of the links' parts ``x``, ``y`` (..., N): bob k at the sum of links 1…k."""
    return np.stack(np.broadcast_arrays(np.cumsum(x, axis=-1), np.cumsum(y, axis=-1)), axis=-1)


def _symbolic_pendulum(N, q, qd, t):
    """M, Q of W (2.3.2)–(2.3.3) in sympy, with the masses, lengths and g as symbols."""
    import sympy as sp

    m = sp.symbols(f"m1:{N + 1}", positive=True)
    L = sp.symbols(f"L1:{N + 1}", positive=True)
    g = sp.Symbol("g")
    mu = [sum(m[k] for k in range(i, N)) for i in range(N)]
    M = sp.Matrix(N, N, lambda i, j: mu[max(i, j)] * L[i] * L[j] * sp.cos(q[i] - q[j]))
    Q = sp.Matrix([
        -sum(mu[max(i, j)] * L[i] * L[j] * qd[j] ** 2 * sp.sin(q[i] - q[j]) for j in range(N))
        - mu[i] * g * L[i] * sp.sin(q[i])
        for i in range(N)
    ])
    return M, Q, (*m, *L, g)


def triple_pendulum(**overrides) -> NLinkPendulum:
    """W's reference triple pendulum (W 2.3.2): m = (1, 2, 3) kg, L = (1, 1.5, 2) m, g = 9.81.

    Parameters
    ----------
    **overrides
        Any of ``m``, ``L``, ``g`` (or per-body ``m1``, ``L3``, …), replacing the defaults.

    Examples
    --------
    >>> triple_pendulum(m3=3.3).m.tolist()
    [1.0, 2.0, 3.3]
    """
    return NLinkPendulum(m=(1.0, 2.0, 3.0), L=(1.0, 1.5, 2.0), g=9.81).replace(**overrides)


# --------------------------------------------------------------------------- #
# the triple pendulum's energy requirement (W 2.3.4–2.3.7)
# --------------------------------------------------------------------------- #
class PendulumEnergyConstraint(Constraint):
    """Energy requirement E1 = 0 on the first link of an n-link pendulum (W 2.3.4–2.3.7).

    Coordinates θ1 … θn are measured from the downward vertical. The energy of
    mass m1 (W 2.3.5), with the X-axis as datum, is

        E1 = ½ m1 L1² θ̇1² − m1 g L1 cos θ1,

    and the constraint is E1 / (m1 L1) = ψ = ½ L1 θ̇1² − g cos θ1 = 0, stabilized
    as ψ̇ + α ψ = 0 (W 2.3.6), which gives (W 2.3.7)

        A = [L1 θ̇1, 0, …, 0],   b = −g θ̇1 sin θ1 − α (½ L1 θ̇1² − g cos θ1),

    with α = gain · ‖A‖₂⁴ (the reading of the text in docs/theory/stabilization.md). The masses do not
    enter A, b; ``m1`` is needed only by :meth:`energy`. ψ is written once, in sympy: A and b are
    derived from it as for a :class:`~robustrack.constraints.Nonholonomic` row, for the compiled loop
    (:meth:`codegen`) and the numpy evaluation alike (:mod:`robustrack.plants.symbolic_model`).

    Parameters
    ----------
    L1 : float
        Length of the first link (> 0), m.
    g : float
        Gravitational acceleration (> 0), m/s².
    gain : float
        c in α = c ‖A‖₂⁴ (>= 0; 0 means no stabilization, ψ̇ = 0).
    n : int
        Number of links / coordinates (>= 1), default 3.
    m1 : float, optional
        Mass of the first bob (> 0), kg, for :meth:`energy`.
    """

    def __init__(self, L1: float = 1.0, g: float = 9.81, gain: float = 0.02, *, n: int = 3, m1: float | None = None):
        self.L1 = _constraint_number(L1, "L1", positive_only=True)
        self.g = _constraint_number(g, "g", positive_only=True)
        self.gain = _constraint_number(gain, "gain", positive_only=False)
        self.m1 = None if m1 is None else _constraint_number(m1, "m1", positive_only=True)
        self.n, self.m = positive_int(n, "n", what="number of links", error=ConstraintError), 1
        self._rows = form_constraint(f"PendulumEnergy/{self.n}", functools.partial(_symbolic_energy, self.n),
                                     _energy_row, (self.L1, self.g, self.gain), n=self.n, m=1)

    def residual(self, q, qd=None, t=0.0) -> np.ndarray:
        """ψ = ½ L1 θ̇1² − g cos θ1, shape ``(..., 1)``."""
        return self._rows.residual(q, qd, t)

    def matrices(self, q, qd, t=0.0):
        """A = [L1 θ̇1, 0, …], b = −g θ̇1 sin θ1 − α ψ with α = gain ‖A‖₂⁴ (W 2.3.7)."""
        q, qd, t, _ = _state(q, qd, t, self.n)  # validated once; the form's A and b evaluated as they are
        return self._rows._A(q, qd, t), self._rows._b(q, qd, t)

    def energy(self, q, qd, t=0.0) -> np.ndarray:
        """E1 = m1 L1 ψ = ½ m1 L1² θ̇1² − m1 g L1 cos θ1 (W 2.3.5), shape ``(...,)``."""
        if self.m1 is None:
            raise ConstraintError("`energy` needs the mass `m1`: build the constraint with m1=<kg>.")
        return self.m1 * self.L1 * self.residual(q, qd, t)[..., 0]

    def codegen(self):
        """A, b derived from ψ by sympy (as for a :class:`~robustrack.constraints.Nonholonomic` row), for the compiled loop."""
        return self._rows.codegen()

    def __repr__(self) -> str:
        return f"PendulumEnergyConstraint(L1={self.L1!r}, g={self.g!r}, gain={self.gain!r}, n={self.n})"


def _constraint_number(x, name: str, *, positive_only: bool) -> float:
    v = x.item() if isinstance(x, np.ndarray) and x.ndim == 0 else x
    ok = not isinstance(v, bool) and isinstance(v, numbers.Real) and math.isfinite(v)
    if not ok or (v <= 0 if positive_only else v < 0):
        raise ConstraintError(f"`{name}` must be a finite number {'> 0' if positive_only else '>= 0'}; got {x!r}.")
    return float(v)


def _energy_row(q, qd, t):
    """W (2.3.5): the one row ψ = E1 / (m1 L1) = ½ L1 θ̇1² − g cos θ1, and the symbols (L1, g, c) of the form."""
    import sympy as sp

    L1, g, c = sp.symbols("L1 g c")
    return [sp.Rational(1, 2) * L1 * qd[0] ** 2 - g * sp.cos(q[0])], (L1, g, c)


def _symbolic_energy(n, q, qd, t):
    """A, b of ψ̇ + α ψ = 0 differentiated by sympy, α = c (A Aᵀ)² (W 2.3.6–2.3.7)."""
    import sympy as sp

    (psi,), (L1, g, c) = _energy_row(q, qd, t)
    A, b = _nonholonomic_acceleration([psi], q, qd, t)
    alpha = c * sp.sqrt(sum(a**2 for a in A)) ** 4
    return A, b - alpha * sp.Matrix([psi]), (L1, g, c)


def pendulum_energy_constraint(
    L1: float = 1.0, g: float = 9.81, gain: float = 0.02, *, n: int = 3, m1: float | None = None
) -> PendulumEnergyConstraint:
    """The triple pendulum's stabilized energy constraint (W 2.3.4–2.3.7).

    See :class:`PendulumEnergyConstraint`; the defaults are the seed's
    (L1 = 1 m, g = 9.81 m/s², α = 0.02 ‖A‖₂⁴, three links).

    Parameters
    ----------
    L1 : float
        Length of the first link (> 0), m; default 1.
    g : float
        Gravitational acceleration (> 0), m/s²; default 9.81.
    gain : float
        c in α = c ‖A‖₂⁴ (>= 0; 0 means no stabilization, ψ̇ = 0); default 0.02.
    n : int
        Number of links / coordinates (>= 1), keyword-only; default 3.
    m1 : float, optional
        Mass of the first bob (> 0), kg, keyword-only; needed only by
        :meth:`PendulumEnergyConstraint.energy`.

    Returns
    -------
    PendulumEnergyConstraint
        The constraint ψ̇ + α ψ = 0 on n coordinates, one row.
    """
    return PendulumEnergyConstraint(L1, g, gain, n=n, m1=m1)
