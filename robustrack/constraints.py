"""Constraint objects: A(q, q̇, t) q̈ = b(q, q̇, t) (docs/theory/fundamental-equation.md, docs/theory/stabilization.md).

A constraint gives its acceleration form through :meth:`Constraint.matrices`
and its raw residuals (φ for holonomic, ψ for nonholonomic rows) through
:meth:`Constraint.residual`, for reporting. All arrays carry optional leading
batch axes: ``q, qd: (..., n)`` → ``A: (..., m, n)``, ``b: (..., m)``; ``t`` is a
scalar or an array broadcasting with the batch axes.

What is here
------------
:class:`Holonomic`
    φ(q, t) = 0, differentiated twice: A = ∂φ/∂q, A q̈ = b is φ̈ = 0 (W 2.2, KU 6).
:class:`Nonholonomic`
    ψ(q, q̇, t) = 0, linear or nonlinear in q̇, differentiated once:
    A = ∂ψ/∂q̇, b = −(∂ψ/∂q q̇ + ∂ψ/∂t) (W 2.2, W ch. 3, KU 7).
:class:`Stabilization`
    Constraints that start violated (W 2.3.6, ref [39]; docs/theory/stabilization.md):
    ``Stabilization.first_order(alpha)`` replaces ψ = 0 by ψ̇ + α ψ = 0 and
    ``Stabilization.second_order(xi, omega)`` replaces φ = 0 by
    φ̈ + 2ξω φ̇ + ω² φ = 0. The first belongs to nonholonomic rows, the second to
    holonomic rows; the other pairing is refused with a :class:`ConstraintError`.
:class:`NormGain`
    The state-dependent gain α = c ‖A‖₂ᵖ (the triple pendulum's α = 0.02 ‖A‖₂⁴).
:func:`stack` / :class:`StackedConstraint`
    Physical constraints and control requirements concatenated into one
    A q̈ = b (W 5.2.8).

(The triple pendulum's energy requirement lives beside the pendulum:
:func:`robustrack.plants.pendulum_energy_constraint`.)

Why sympy
---------
φ and ψ are given as sympy expressions (or Python callables traced with sympy
symbols). They are differentiated symbolically, once, at construction: the
derivatives are exact (no finite-difference step to tune, no truncation error
that would show up as a constraint drift of its own), hold for rheonomic and
velocity-nonlinear constraints alike, and cost nothing at run time. The
resulting A and b are then compiled to numpy with ``sympy.lambdify(...,
cse=True)`` — common subexpressions (sines, cosines, products that appear in
several entries) are evaluated once per call — and evaluated on whole batches
of states in one call. sympy is already a runtime dependency (plants from a
Lagrangian); automatic differentiation would add one.

Parameters
----------
``params`` maps sympy Symbols to numbers: ``Holonomic(x**2 + y**2 - L**2, [x, y],
params={L: 20.0})``. Parameters are kept as symbols through the derivation and
passed to the compiled functions as trailing arguments, so
:meth:`with_params` gives a constraint with new values without differentiating
again, and a value may be an array broadcasting with the batch axes (one
constraint, many sampled parameter values). Every symbol in φ or ψ must be a
coordinate, a velocity, the time, or a key of ``params``: a missing parameter is
an error, never a silent default.
"""

from __future__ import annotations

import copy
import dataclasses
import inspect
import numbers
from typing import Callable, Sequence

import numpy as np
from ._lazy import sympy as sp
from ._lambdify import lambdify

from .symbolic import SymbolicForm, expression_key
from .errors import ConstraintError

__all__ = [
    "Constraint",
    "FunctionConstraint",
    "Stabilization",
    "NormGain",
    "Holonomic",
    "Nonholonomic",
    "StackedConstraint",
    "stack",
]


# --------------------------------------------------------------------------- #
# numeric helpers shared by every constraint
# --------------------------------------------------------------------------- #
def _coords(x, name: str, n: int) -> np.ndarray:
    """``x`` as a float array whose last axis has length ``n``."""
    try:
        arr = np.asarray(x, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ConstraintError(f"`{name}` must be numeric; got {x!r} ({exc}).") from None
    if arr.ndim < 1 or arr.shape[-1] != n:
        raise ConstraintError(
            f"`{name}` must have shape (..., {n}) for a constraint on n={n} coordinates; "
            f"got shape {arr.shape}."
        )
    return arr


def _time(t) -> np.ndarray:
    try:
        return np.asarray(t, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ConstraintError(f"`t` must be numeric; got {t!r} ({exc}).") from None


def _batch(*shapes) -> tuple[int, ...]:
    distinct = {s for s in shapes if s != ()}
    if len(distinct) <= 1:  # the common cases, without numpy's overhead
        return distinct.pop() if distinct else ()
    try:
        return np.broadcast_shapes(*shapes)
    except ValueError:
        raise ConstraintError(
            "The batch axes of `q`, `qd`, `t` (and of any array-valued parameter) must "
            f"broadcast together; got batch shapes {list(shapes)}."
        ) from None


def _state(q, qd, t, n: int):
    """Validated ``(q, qd, t, batch)``; ``qd=None`` means zeros (holonomic residuals)."""
    q = _coords(q, "q", n)
    qd = np.zeros_like(q) if qd is None else _coords(qd, "qd", n)
    t = _time(t)
    return q, qd, t, _batch(q.shape[:-1], qd.shape[:-1], t.shape)


# --------------------------------------------------------------------------- #
# the contract
# --------------------------------------------------------------------------- #
class Constraint:
    """Base class: ``m`` rows on ``n`` coordinates.

    Subclasses implement :meth:`matrices` and, where they can, :meth:`residual`.
    """

    n: int
    m: int

    def matrices(self, q, qd, t=0.0) -> tuple[np.ndarray, np.ndarray]:
        """Return ``(A, b)`` with shapes ``(..., m, n)`` and ``(..., m)``."""
        raise NotImplementedError

    def residual(self, q, qd, t=0.0) -> np.ndarray:
        """Raw constraint values (φ or ψ per row), shape ``(..., m)``; 0 when satisfied."""
        raise NotImplementedError(f"{type(self).__name__} does not define raw residuals.")

    def velocity_residual(self, q, qd, t=0.0) -> np.ndarray:
        """The velocity-level rows, shape ``(..., m)``: φ̇ = A q̇ + ∂φ/∂t for holonomic rows, ψ for the others.

        Their Jacobian in q̇ is A of :meth:`matrices` for both kinds of row: what
        :func:`robustrack.requirements.consistent_initial_state` solves A q̇ = −∂φ/∂t (and ψ = 0) with.
        """
        raise NotImplementedError(f"{type(self).__name__} does not define velocity-level residuals.")

    @property
    def holonomic_rows(self) -> np.ndarray | None:
        """Which rows are position-level φ(q, t) (bool, shape (m,)); None when unknown (a user's A, b)."""
        return None

    def __repr__(self) -> str:
        return f"{type(self).__name__}(n={self.n}, m={self.m})"


class FunctionConstraint(Constraint):
    """A constraint given directly by user callables for A and b.

    With the rows' kind (``holonomic``) and their values (``residual``, and ``velocity_residual`` for
    holonomic rows) it gets the same help as a symbolic constraint:
    :func:`~robustrack.requirements.consistent_initial_state` finds a start on it, and a
    ``stabilization`` adds its terms to b — φ̈ + 2ξω φ̇ + ω² φ = 0 (``b − 2ξω φ̇ − ω² φ``; docs/theory/stabilization.md) for
    holonomic rows, ψ̇ + α ψ = 0 (``b − α ψ``; W 2.3.6) for velocity rows — so ``b`` is the unstabilized
    one (A q̈ = b is φ̈ = 0, resp. ψ̇ = 0).

    Parameters
    ----------
    A, b : callable
        ``A(q, qd, t) -> (..., m, n)``, ``b(q, qd, t) -> (..., m)``.
    n, m : int
        Number of coordinates and of constraint rows.
    residual : callable, optional
        ``residual(q, qd, t) -> (..., m)`` raw values φ/ψ for reporting.
    codegen : SymbolicForm, optional
        The same A, b as sympy expressions (keyword-only), for the compiled tracking
        loop (:mod:`robustrack.symbolic`); None (default): the loop runs on numpy.
    holonomic : bool, optional
        Keyword-only: the rows are position-level φ(q, t) (True) or velocity-level ψ(q, q̇, t) (False);
        None (default): not said (no initial-state help, no stabilization).
    velocity_residual : callable, optional
        Keyword-only: ``φ̇(q, qd, t) = A q̇ + ∂φ/∂t -> (..., m)`` of holonomic rows (required with them).
    stabilization : Stabilization, optional
        Keyword-only: second order for holonomic rows, first order (a constant α) for velocity rows.
    """

    def __init__(self, A: Callable, b: Callable, n: int, m: int, residual: Callable | None = None, *,
                 codegen: SymbolicForm | None = None, holonomic: bool | None = None,
                 velocity_residual: Callable | None = None, stabilization: "Stabilization | None" = None):
        if not callable(A) or not callable(b):
            raise ConstraintError("`A` and `b` must be callables (q, qd, t) -> array.")
        if residual is not None and not callable(residual):
            raise ConstraintError(f"`residual` must be a callable (q, qd, t) -> array or None; got {residual!r}.")
        if codegen is not None and not isinstance(codegen, SymbolicForm):
            raise ConstraintError(f"`codegen` must be a robustrack.symbolic.SymbolicForm or None; got {codegen!r}.")
        if int(n) < 1 or int(m) < 1:
            raise ConstraintError(f"`n` and `m` must be >= 1; got n={n}, m={m}.")
        _check_function_rows(holonomic, residual, velocity_residual, stabilization, codegen)
        self._A, self._b, self._res, self._form = A, b, residual, codegen
        self._vel, self._holonomic, self.stabilization = velocity_residual, holonomic, stabilization
        self.n, self.m = int(n), int(m)

    def codegen(self) -> SymbolicForm | None:
        """The symbolic form of A, b given at construction (None if none was given)."""
        return self._form

    @property
    def holonomic_rows(self) -> np.ndarray | None:
        """All True (``holonomic=True``), all False (``False``), or None when not said."""
        return None if self._holonomic is None else np.full(self.m, bool(self._holonomic))

    def velocity_residual(self, q, qd, t=0.0):
        """φ̇ (``velocity_residual``) of holonomic rows, ψ (``residual``) of velocity rows, shape ``(..., m)``."""
        if self._holonomic is None or (self._holonomic and self._vel is None) or self._res is None:
            return super().velocity_residual(q, qd, t)
        fn, name = (self._vel, "velocity_residual") if self._holonomic else (self._res, "residual")
        return self._call(fn, name, q, qd, t, (self.m,))

    def _call(self, fn, name, q, qd, t, tail):
        q, qd, t, batch = _state(q, qd, t, self.n)
        val = np.asarray(fn(q, qd, t), dtype=float)
        try:
            batch = _batch(batch, val.shape[: val.ndim - len(tail)])
            return np.broadcast_to(val, batch + tail)
        except (ValueError, ConstraintError):
            raise ConstraintError(
                f"`{name}` returned shape {val.shape}; expected (..., {', '.join(map(str, tail))}) "
                f"broadcasting with the batch shape {batch}."
            ) from None

    def matrices(self, q, qd, t=0.0):
        A = self._call(self._A, "A", q, qd, t, (self.m, self.n))
        b = self._call(self._b, "b", q, qd, t, (self.m,))
        stab = self.stabilization
        if stab is not None and stab.order == 2:
            xi, om = stab.xi, stab.omega
            b = b - 2 * xi * om * self.velocity_residual(q, qd, t) - om**2 * self.residual(q, qd, t)
        elif stab is not None:
            b = b - stab.alpha * self.residual(q, qd, t)
        batch = _batch(A.shape[:-2], b.shape[:-1])
        return np.broadcast_to(A, batch + A.shape[-2:]), np.broadcast_to(b, batch + b.shape[-1:])

    def residual(self, q, qd, t=0.0):
        if self._res is None:
            return super().residual(q, qd, t)
        return self._call(self._res, "residual", q, qd, t, (self.m,))


def _check_function_rows(holonomic, residual, velocity_residual, stabilization, codegen) -> None:
    """The rules of :class:`FunctionConstraint`'s row kind, residuals and stabilization (each names its argument)."""
    if holonomic is not None and not isinstance(holonomic, (bool, np.bool_)):
        raise ConstraintError(f"`holonomic` must be True (rows φ(q, t)), False (rows ψ(q, q̇, t)) or None; got "
                              f"{holonomic!r}.")
    if velocity_residual is not None and not callable(velocity_residual):
        raise ConstraintError(f"`velocity_residual` must be a callable (q, qd, t) -> array or None; got "
                              f"{velocity_residual!r}.")
    if holonomic is not None and residual is None:
        raise ConstraintError("`residual` (φ or ψ of the rows) is needed with `holonomic`: the initial-state help "
                              "and the stabilization are built on it.")
    if holonomic and velocity_residual is None:
        raise ConstraintError("`velocity_residual` (φ̇ = A q̇ + ∂φ/∂t) is needed with `holonomic=True`.")
    if stabilization is None:
        return
    if not isinstance(stabilization, Stabilization):
        raise ConstraintError(f"`stabilization` must be a Stabilization or None; got {stabilization!r}.")
    if holonomic is None:
        raise ConstraintError("`stabilization` needs `holonomic` (True: rows φ(q, t), second order; False: rows "
                              "ψ(q, q̇, t), first order) and the rows' `residual`.")
    if codegen is not None:
        raise ConstraintError("`stabilization` and `codegen` together: put the stabilization terms into the symbolic "
                              "form's b instead (the compiled loop runs the form as it is).")
    if holonomic and stabilization.order != 2:
        raise ConstraintError("`stabilization`: holonomic rows φ(q, t) = 0 are stabilized at second order, "
                              "Stabilization.second_order(xi, omega).")
    if not holonomic and (stabilization.order != 1 or not isinstance(stabilization.alpha, float)):
        raise ConstraintError("`stabilization`: velocity rows ψ(q, q̇, t) = 0 are stabilized at first order with a "
                              "constant, Stabilization.first_order(alpha).")


# --------------------------------------------------------------------------- #
# stabilization (W 2.3.6, docs/theory/stabilization.md)
# --------------------------------------------------------------------------- #
def _positive_number(x, name: str) -> float:
    if isinstance(x, np.ndarray) and x.ndim == 0:
        x = x.item()
    if isinstance(x, bool) or not isinstance(x, (numbers.Real, sp.Number)):
        raise ConstraintError(f"`{name}` must be a real number > 0; got {x!r}.")
    val = float(x)
    if not np.isfinite(val) or val <= 0:
        raise ConstraintError(f"`{name}` must be a finite number > 0; got {x!r}.")
    return val


@dataclasses.dataclass(frozen=True)
class Stabilization:
    """How a constraint that starts violated is driven back (W 2.3.6; docs/theory/stabilization.md).

    Build one with :meth:`first_order` (nonholonomic rows: ψ̇ + α ψ = 0) or
    :meth:`second_order` (holonomic rows: φ̈ + 2ξω φ̇ + ω² φ = 0).

    Attributes
    ----------
    order : int
        1 or 2.
    alpha : float, sympy.Expr or callable, or None
        First order only. A constant > 0; a sympy expression in the coordinates,
        velocities, time and parameters of the constraint (a scalar, the same for
        every row); or a callable ``alpha(q, qd, t, A) -> (...)`` or scalar,
        evaluated numerically after A (values must be >= 0), e.g. :class:`NormGain`.
    xi, omega : float or None
        Second order only: damping ratio ξ > 0 and natural frequency ω > 0.
    """

    order: int
    alpha: object = None
    xi: float | None = None
    omega: float | None = None

    def __post_init__(self):
        if self.order == 1:
            if self.xi is not None or self.omega is not None:
                raise ConstraintError("A first-order stabilization takes `alpha` only, not `xi`/`omega`.")
            a = self.alpha
            if isinstance(a, sp.Basic) and not isinstance(a, sp.Number):
                if not isinstance(a, sp.Expr):
                    raise ConstraintError(f"`alpha` must be a scalar sympy expression; got {a!r}.")
            elif callable(a) and not isinstance(a, sp.Basic):
                pass
            else:
                object.__setattr__(self, "alpha", _positive_number(a, "alpha"))
        elif self.order == 2:
            if self.alpha is not None:
                raise ConstraintError("A second-order stabilization takes `xi` and `omega`, not `alpha`.")
            object.__setattr__(self, "xi", _positive_number(self.xi, "xi"))
            object.__setattr__(self, "omega", _positive_number(self.omega, "omega"))
        else:
            raise ConstraintError(f"`order` must be 1 or 2; got {self.order!r}.")

    @classmethod
    def first_order(cls, alpha) -> "Stabilization":
        """ψ̇ + α ψ = 0 (W 2.3.6): b gains −α ψ."""
        return cls(order=1, alpha=alpha)

    @classmethod
    def second_order(cls, xi, omega) -> "Stabilization":
        """φ̈ + 2ξω φ̇ + ω² φ = 0 (docs/theory/stabilization.md): b gains −2ξω φ̇ − ω² φ."""
        return cls(order=2, xi=xi, omega=omega)

    @property
    def numeric_alpha(self) -> bool:
        """True when α is a callable evaluated numerically from (q, q̇, t, A)."""
        return self.order == 1 and callable(self.alpha) and not isinstance(self.alpha, (sp.Basic, float))


@dataclasses.dataclass(frozen=True)
class NormGain:
    """The state-dependent gain α = c ‖A‖₂ᵖ (W 2.3.7 text: α = 0.02 ‖A‖₂⁴).

    It grows with the constraint's sensitivity and vanishes where A → 0 (the
    triple pendulum's turning points), which keeps the constraint force bounded
    there (docs/theory/stabilization.md). Use as ``Stabilization.first_order(NormGain(0.02, 4))``.

    Parameters
    ----------
    gain : float
        c > 0.
    power : float
        p >= 0 (default 4).
    """

    gain: float
    power: float = 4.0

    def __post_init__(self):
        object.__setattr__(self, "gain", _positive_number(self.gain, "gain"))
        if isinstance(self.power, bool) or not isinstance(self.power, numbers.Real) or not (
            np.isfinite(self.power) and self.power >= 0
        ):
            raise ConstraintError(f"`power` must be a finite real number >= 0; got {self.power!r}.")
        object.__setattr__(self, "power", float(self.power))

    def __call__(self, q, qd, t, A) -> np.ndarray:
        """α at the states of ``A`` (shape ``(..., m, n)``) → shape ``(...)``."""
        A = np.asarray(A, dtype=float)
        if A.shape[-2] == 1:  # one row: the spectral norm is the Euclidean norm of the row
            norm = np.sqrt(np.einsum("...ij,...ij->...", A, A))
        else:
            norm = np.linalg.norm(A, ord=2, axis=(-2, -1))
        return self.gain * norm**self.power


# --------------------------------------------------------------------------- #
# symbolic input checking
# --------------------------------------------------------------------------- #
def _plain(s):
    """A dynamicsymbol q1(t) as the plain Symbol ``q1`` (matched to a plant's coordinates by name)."""
    if isinstance(s, sp.core.function.AppliedUndef):
        return sp.Symbol(str(s.func), real=True)
    return s


def _symbols(x, name: str) -> tuple[sp.Symbol, ...]:
    if isinstance(x, (str, bytes)) or not isinstance(x, (Sequence, sp.MatrixBase, np.ndarray)):
        raise ConstraintError(f"`{name}` must be a sequence of sympy Symbols; got {x!r}.")
    syms = tuple(_plain(s) for s in x)
    if not syms:
        raise ConstraintError(f"`{name}` must hold at least one sympy Symbol; got an empty sequence.")
    bad = [s for s in syms if not isinstance(s, sp.Symbol)]
    if bad:
        raise ConstraintError(
            f"`{name}` must hold sympy Symbols (e.g. sympy.symbols('x y')); got {bad[0]!r} "
            f"of type {type(bad[0]).__name__}."
        )
    if len(set(syms)) != len(syms):
        raise ConstraintError(f"`{name}` must hold distinct Symbols; got {syms}.")
    return syms


def _time_symbol(t) -> sp.Symbol:
    if t is None:
        return sp.Symbol("t", real=True)
    if not isinstance(t, sp.Symbol):
        raise ConstraintError(f"`t` must be a sympy Symbol or None; got {t!r} of type {type(t).__name__}.")
    return t


def _trace(fn, name: str, *args):
    """Call a user function with sympy symbols; the last argument (t) is optional."""
    try:
        sig = inspect.signature(fn)
        try:
            sig.bind(*args)
        except TypeError:
            sig.bind(*args[:-1])
            args = args[:-1]
    except (TypeError, ValueError):
        pass  # no inspectable signature (builtins): call with everything
    try:
        return fn(*args)
    except Exception as exc:  # noqa: BLE001 - any failure while tracing is the user's expression
        raise ConstraintError(
            f"Calling `{name}` with sympy symbols failed ({type(exc).__name__}: {exc}). "
            f"`{name}` must build its expression from the symbols it is given using sympy "
            "functions (sympy.sin, not numpy.sin), and index no more coordinates than there are."
        ) from None


def _rows(expr, name: str) -> sp.Matrix:
    """One or several constraint rows as a column Matrix of scalar sympy expressions."""
    if isinstance(expr, sp.MatrixBase):
        if min(expr.shape) > 1:
            raise ConstraintError(f"`{name}` must be a vector of rows; got a {expr.shape} Matrix.")
        items = list(expr)
    elif isinstance(expr, (list, tuple, np.ndarray)):
        items = list(np.asarray(expr, dtype=object).ravel()) if isinstance(expr, np.ndarray) else list(expr)
    else:
        items = [expr]
    if not items:
        raise ConstraintError(f"`{name}` must have at least one row; got {expr!r}.")
    rows = []
    for i, e in enumerate(items):
        if isinstance(e, sp.Equality):
            e = e.lhs - e.rhs
        try:
            e = sp.sympify(e, strict=True)
        except (sp.SympifyError, TypeError, ValueError):
            raise ConstraintError(
                f"Row {i} of `{name}` must be a sympy expression (or sympy.Eq); got {e!r} "
                f"of type {type(e).__name__}. Strings are not parsed: build expressions from Symbols."
            ) from None
        if not isinstance(e, sp.Expr) or isinstance(e, sp.MatrixBase):
            raise ConstraintError(
                f"Row {i} of `{name}` must be a scalar sympy expression; got {e!r} of type {type(e).__name__}."
            )
        rows.append(e)
    return sp.Matrix(rows)


def _params(params, taken: set) -> dict:
    if params is None:
        return {}
    if not isinstance(params, dict):
        raise ConstraintError(f"`params` must be a dict {{sympy Symbol: number}}; got {params!r}.")
    out = {}
    for k, v in params.items():
        if not isinstance(k, sp.Symbol):
            raise ConstraintError(f"`params` keys must be sympy Symbols; got {k!r} of type {type(k).__name__}.")
        if k in taken:
            raise ConstraintError(f"`params` key {k} is also a coordinate, velocity or time symbol.")
        out[k] = _param_value(k, v)
    return out


def _param_value(k, v) -> np.ndarray:
    try:
        arr = np.asarray(v, dtype=float)
    except (TypeError, ValueError):
        raise ConstraintError(f"`params[{k}]` must be numeric; got {v!r}.") from None
    if not np.all(np.isfinite(arr)):
        raise ConstraintError(f"`params[{k}]` must be finite; got {v!r}.")
    return arr


# --------------------------------------------------------------------------- #
# the acceleration form of raw rows (W 2.2)
# --------------------------------------------------------------------------- #
def _holonomic_acceleration(phi, q, qd, t):
    """A, b of rows φ(q, t) = 0 differentiated twice: ``A = ∂φ/∂q``, ``A q̈ − b = φ̈`` exactly (W 2.2, KU 6).

    With φ̇ = (∂φ/∂q) q̇ + ∂φ/∂t, ``b = −(∂φ̇/∂q q̇ + ∂φ̇/∂t)``. The one home of this derivation: the
    :class:`Holonomic` constraints and the catalog's models (:mod:`robustrack.plants.symbolic_model`).

    Parameters
    ----------
    phi : sympy Matrix (m × 1) or sequence of sympy expressions
        The rows φ.
    q, qd : sequence of sympy Symbols
        Coordinates and velocities (n each).
    t : sympy Symbol
        The time.

    Returns
    -------
    tuple of sympy Matrix
        ``(A (m × n), b (m × 1), φ̇ (m × 1))``.
    """
    phi, qv, qdv = sp.Matrix(phi), sp.Matrix(q), sp.Matrix(qd)
    A = phi.jacobian(qv)
    phi_dot = A * qdv + phi.diff(t)
    return A, -(phi_dot.jacobian(qv) * qdv + phi_dot.diff(t)), phi_dot


def _nonholonomic_acceleration(psi, q, qd, t):
    """A, b of rows ψ(q, q̇, t) = 0 differentiated once: ``A = ∂ψ/∂q̇``, ``A q̈ − b = ψ̇`` exactly (W 2.2, KU 7).

    ``b = −(∂ψ/∂q q̇ + ∂ψ/∂t)``. The one home of this derivation: the :class:`Nonholonomic` constraints and
    the catalog's models (:mod:`robustrack.plants.symbolic_model`).

    Parameters
    ----------
    psi : sympy Matrix (m × 1) or sequence of sympy expressions
        The rows ψ.
    q, qd : sequence of sympy Symbols
        Coordinates and velocities (n each).
    t : sympy Symbol
        The time.

    Returns
    -------
    tuple of sympy Matrix
        ``(A (m × n), b (m × 1))``.
    """
    psi, qv, qdv = sp.Matrix(psi), sp.Matrix(q), sp.Matrix(qd)
    return psi.jacobian(qdv), -(psi.jacobian(qv) * qdv + psi.diff(t))


# --------------------------------------------------------------------------- #
# symbolic constraints
# --------------------------------------------------------------------------- #
class _SymbolicConstraint(Constraint):
    """Shared machinery: symbols, parameters, compiled A, b and residual."""


    def _setup(self, rows, q, qd, t, params, allowed: set, name: str):
        self.q, self.qd, self.t = q, qd, t
        self.n, self.m = len(q), rows.shape[0]
        taken = set(q) | set(qd) | {t}
        if len(taken) != 2 * len(q) + 1:
            raise ConstraintError(f"The symbols of `q`, `qd` and `t` must all be distinct; got {q}, {qd}, {t}.")
        self._param_values = _params(params, taken)
        unknown = rows.free_symbols - allowed - set(self._param_values)
        if unknown:
            raise ConstraintError(
                f"`{name}` contains symbol(s) {sorted(map(str, unknown))} that are not among its "
                f"allowed symbols {[str(s) for s in sorted(allowed, key=str)]}; give their values "
                "in `params` (or pass them as coordinates / the time symbol `t`)."
            )

    def _compile(self, A, b, residual, stabilization, *, psi=None):
        """Lambdify A, b (and ψ when α is numeric) into one cse'd function."""
        self.A_expr, self.b_expr, self.stabilization = A, b, stabilization
        self._numeric_alpha = stabilization is not None and stabilization.numeric_alpha
        args = [*self.q, *self.qd, self.t, *self._param_values]
        flat = list(A) + list(b) + (list(psi) if self._numeric_alpha else [])
        self._f_matrices = lambdify(args, flat, modules="numpy", cse=True)
        self._f_residual = lambdify(args, list(residual), modules="numpy", cse=True)

    def _evaluate(self, f, k, q, qd, t):
        q, qd, t, batch = _state(q, qd, t, self.n)
        pvals = tuple(self._param_values.values())
        batch = _batch(batch, *(p.shape for p in pvals))
        n = self.n
        vals = f(*(q[..., i] for i in range(n)), *(qd[..., i] for i in range(n)), t, *pvals)
        if batch == ():
            out = np.array(vals, dtype=float)
        else:
            out = np.empty(batch + (k,))
            for j, v in enumerate(vals):
                out[..., j] = v
        return out, (q, qd, t)

    def matrices(self, q, qd, t=0.0):
        """A and b (stabilized if asked), shapes ``(..., m, n)`` and ``(..., m)``."""
        m, n = self.m, self.n
        k = m * n + m * (2 if self._numeric_alpha else 1)
        out, (q, qd, t) = self._evaluate(self._f_matrices, k, q, qd, t)
        batch = out.shape[:-1]
        A = out[..., : m * n].reshape(batch + (m, n))
        b = out[..., m * n : m * n + m]
        if self._numeric_alpha:
            alpha = np.asarray(self.stabilization.alpha(q, qd, t, A), dtype=float)
            if not ((alpha >= 0) & (alpha < np.inf)).all():
                raise ConstraintError(f"The stabilization gain `alpha` must be finite and >= 0; got {alpha!r}.")
            b = b - alpha[..., None] * out[..., m * n + m :]
        return A, b

    def residual(self, q, qd=None, t=0.0):
        """The raw rows (φ or ψ), shape ``(..., m)``; ``qd`` is unused by holonomic rows."""
        return self._evaluate(self._f_residual, self.m, q, qd, t)[0]

    def velocity_residual(self, q, qd, t=0.0):
        """φ̇ (holonomic rows) or ψ (nonholonomic rows), shape ``(..., m)`` (see :meth:`Constraint.velocity_residual`)."""
        if not hasattr(self, "_f_velocity"):
            rows = self.phi_dot if isinstance(self, Holonomic) else self.expr
            args = [*self.q, *self.qd, self.t, *self._param_values]
            self._f_velocity = lambdify(args, list(rows), modules="numpy", cse=True)
        return self._evaluate(self._f_velocity, self.m, q, qd, t)[0]

    @property
    def holonomic_rows(self) -> np.ndarray:
        """All True for :class:`Holonomic`, all False for :class:`Nonholonomic`."""
        return np.full(self.m, isinstance(self, Holonomic))

    def codegen(self):
        """The symbolic form of A, b for the compiled loop (:mod:`robustrack.symbolic`).

        None when α is a numeric callable other than a one-row :class:`NormGain`, or a
        parameter holds an array (sampled values).
        """
        alpha = self.stabilization.alpha if self._numeric_alpha else None
        if alpha is not None and not (isinstance(alpha, NormGain) and self.m == 1):
            return None
        values = [np.asarray(v, dtype=float) for v in self._param_values.values()]
        if any(v.ndim != 0 for v in values):
            return None
        psi = self.expr
        key = self.__dict__.get("_form_key")  # the expressions never change (with_params keeps them): hashed once
        if key is None:
            key = self._form_key = expression_key(type(self).__name__, self.A_expr, self.b_expr, psi, tuple(self.q),
                                                  tuple(self.qd), self.t, tuple(self._param_values),
                                                  None if alpha is None else (alpha.gain, alpha.power))

        def build(q, qd, t):
            subs = {**dict(zip(self.q, q)), **dict(zip(self.qd, qd)), self.t: t}
            A = self.A_expr.xreplace(subs)
            b = self.b_expr.xreplace(subs)
            if alpha is not None:  # α = c ‖A‖₂ᵖ of one row, as NormGain computes it
                norm = sp.sqrt(sum(a**2 for a in A))
                b = b - alpha.gain * norm**alpha.power * psi.xreplace(subs)
            return A, b, tuple(self._param_values)

        return SymbolicForm(f"{type(self).__name__}/{key}", np.array([float(v) for v in values]), build)

    def with_params(self, params: dict) -> "_SymbolicConstraint":
        """A copy with new parameter values (no new differentiation or compilation)."""
        if not isinstance(params, dict):
            raise ConstraintError(f"`params` must be a dict {{sympy Symbol: number}}; got {params!r}.")
        unknown = [k for k in params if k not in self._param_values]
        if unknown:
            raise ConstraintError(
                f"{type(self).__name__} has no parameter(s) {unknown}; its parameters are "
                f"{list(self._param_values)}."
            )
        new = copy.copy(self)
        new._param_values = {**self._param_values, **{k: _param_value(k, v) for k, v in params.items()}}
        return new

    @property
    def params(self) -> dict:
        """Parameter values (Symbol → array)."""
        return dict(self._param_values)

    def __repr__(self) -> str:
        rows = ", ".join(str(e) for e in self.expr)
        stab = f", stabilization={self.stabilization}" if self.stabilization else ""
        return f"{type(self).__name__}([{rows}], q={list(self.q)}{stab})"


class Holonomic(_SymbolicConstraint):
    """Holonomic (possibly rheonomic) constraint rows φ(q, t) = 0 (W 2.2; KU 6).

    Differentiated twice, symbolically: with φ̇ = (∂φ/∂q) q̇ + ∂φ/∂t,

        A = ∂φ/∂q,   b = −(∂φ̇/∂q q̇ + ∂φ̇/∂t)   [ − 2ξω φ̇ − ω² φ ],

    so that A q̈ − b = φ̈ exactly (resp. φ̈ + 2ξω φ̇ + ω² φ when stabilized,
    docs/theory/stabilization.md).

    Parameters
    ----------
    phi : sympy expression, sequence of them, column Matrix, or callable
        The rows φ. ``sympy.Eq(lhs, rhs)`` means lhs − rhs. A callable is traced:
        ``phi(q_syms)`` or ``phi(q_syms, t_sym)`` must return the rows.
    q : sequence of sympy Symbol, or int
        The coordinates, in order. An int n (callable ``phi`` only) makes symbols
        ``q0 … q{n-1}``.
    t : sympy Symbol, optional
        The time symbol, when φ depends on time (rheonomic).
    stabilization : Stabilization, optional
        ``Stabilization.second_order(xi, omega)``; first order is refused.
    params : dict {sympy Symbol: float or array}, optional
        Parameter values (see the module docstring).

    Attributes
    ----------
    expr : sympy.Matrix
        φ, shape (m, 1). Also ``phi_dot`` (φ̇), ``A_expr``, ``b_expr`` (b with the
        stabilization terms), ``q``, ``qd`` (velocity symbols made here), ``t``.

    Examples
    --------
    >>> import sympy as sp
    >>> x, y, L = sp.symbols("x y L")
    >>> pend = Holonomic(x**2 + y**2 - L**2, [x, y], params={L: 2.0})
    >>> A, b = pend.matrices([0.0, 2.0], [1.0, 0.0])
    >>> A.tolist(), b.tolist()
    ([[0.0, 4.0]], [-2.0])
    """

    def __init__(self, phi, q, t=None, *, stabilization: Stabilization | None = None, params=None):
        t = _time_symbol(t)
        if callable(phi) and not isinstance(phi, sp.Basic):
            q = _coordinate_symbols(q, "q", "q")
            phi = _trace(phi, "phi", q, t)
        else:
            q = _symbols(q, "q")
        rows = _by_name(_rows(_dynamic_to_plain(phi), "phi"), q)
        t = _time_in(rows, t)
        qd = tuple(sp.Dummy(f"{s.name}_dot", real=True) for s in q)
        self._setup(rows, q, qd, t, params, set(q) | {t}, "phi")
        if stabilization is not None and not isinstance(stabilization, Stabilization):
            raise ConstraintError(f"`stabilization` must be a Stabilization or None; got {stabilization!r}.")
        if stabilization is not None and stabilization.order != 2:
            raise ConstraintError(
                "A holonomic constraint φ(q, t) = 0 is stabilized at second order, "
                "φ̈ + 2ξω φ̇ + ω² φ = 0: use Stabilization.second_order(xi, omega). "
                "(First-order ψ̇ + αψ = 0 is for Nonholonomic rows.)"
            )
        J, b, phi_dot = _holonomic_acceleration(rows, q, qd, t)
        _no_dependence(J, rows, "phi", "q")
        if stabilization is not None:
            xi, om = stabilization.xi, stabilization.omega
            b = b - 2 * xi * om * phi_dot - om**2 * rows
        self.expr, self.phi_dot = rows, phi_dot
        self._compile(J, b, rows, stabilization)


class Nonholonomic(_SymbolicConstraint):
    """Nonholonomic (possibly rheonomic, possibly velocity-nonlinear) rows ψ(q, q̇, t) = 0.

    Differentiated once, symbolically (W 2.2, W ch. 3; KU 7):

        A = ∂ψ/∂q̇,   b = −(∂ψ/∂q q̇ + ∂ψ/∂t)   [ − α ψ ],

    so that A q̈ − b = ψ̇ exactly (resp. ψ̇ + α ψ when stabilized, W 2.3.6).

    Parameters
    ----------
    psi : sympy expression, sequence of them, column Matrix, or callable
        The rows ψ. A callable is traced: ``psi(q_syms, qd_syms)`` or
        ``psi(q_syms, qd_syms, t_sym)``.
    q, qd : sequence of sympy Symbol (same length), or int / None
        Coordinates and velocities, in order. For a callable ``psi``, ``q`` may
        be an int n and ``qd`` None (symbols ``q0…``, ``q0_dot…`` are made).
    t : sympy Symbol, optional
        The time symbol (rheonomic rows).
    stabilization : Stabilization, optional
        ``Stabilization.first_order(alpha)``, α a constant, a sympy expression in
        q, q̇, t and the parameters, or a callable ``alpha(q, qd, t, A)`` such as
        :class:`NormGain`. Second order is refused.
    params : dict {sympy Symbol: float or array}, optional
        Parameter values (see the module docstring).

    Attributes
    ----------
    expr : sympy.Matrix
        ψ, shape (m, 1). Also ``A_expr``, ``b_expr`` (b with a symbolic −αψ term;
        a callable α is applied numerically), ``q``, ``qd``, ``t``.

    Examples
    --------
    KU example 1, ẏ = z ẋ (KU 38): A = [−z, 1, 0], b = ż ẋ.

    >>> import sympy as sp
    >>> x, y, z, xd, yd, zd = sp.symbols("x y z xd yd zd")
    >>> c = Nonholonomic(yd - z * xd, [x, y, z], [xd, yd, zd])
    >>> A, b = c.matrices([0.0, 0.0, 2.0], [3.0, 6.0, 5.0])
    >>> A.tolist(), b.tolist()
    ([[-2.0, 1.0, 0.0]], [15.0])
    """


    def __init__(self, psi, q, qd=None, t=None, *, stabilization: Stabilization | None = None, params=None):
        t = _time_symbol(t)
        if callable(psi) and not isinstance(psi, sp.Basic):
            q = _coordinate_symbols(q, "q", "q")
            qd = (
                tuple(sp.Symbol(f"{s.name}_dot", real=True) for s in q)
                if qd is None
                else _symbols(qd, "qd")
            )
            _same_length(q, qd)
            psi = _trace(psi, "psi", q, qd, t)
        else:
            q = _symbols(q, "q")
            if qd is None:
                raise ConstraintError("`qd` (the velocity Symbols, one per coordinate) is required.")
            qd = _symbols(qd, "qd")
            _same_length(q, qd)
        rows = _rows(psi, "psi")
        self._setup(rows, q, qd, t, params, set(q) | set(qd) | {t}, "psi")
        if stabilization is not None and not isinstance(stabilization, Stabilization):
            raise ConstraintError(f"`stabilization` must be a Stabilization or None; got {stabilization!r}.")
        if stabilization is not None and stabilization.order != 1:
            raise ConstraintError(
                "A nonholonomic constraint ψ(q, q̇, t) = 0 is stabilized at first order, "
                "ψ̇ + αψ = 0: use Stabilization.first_order(alpha). "
                "(Second-order φ̈ + 2ξωφ̇ + ω²φ = 0 is for Holonomic rows.)"
            )
        A, b = _nonholonomic_acceleration(rows, q, qd, t)
        _no_dependence(A, rows, "psi", "qd")
        if stabilization is not None and not stabilization.numeric_alpha:
            alpha = sp.sympify(stabilization.alpha)
            unknown = alpha.free_symbols - set(q) - set(qd) - {t} - set(self._param_values)
            if unknown:
                raise ConstraintError(
                    f"The stabilization gain `alpha` = {alpha} contains symbol(s) "
                    f"{sorted(map(str, unknown))} that are not coordinates, velocities, time or params."
                )
            b = b - alpha * rows
        self.expr = rows
        self._compile(A, b, rows, stabilization, psi=rows)


def _dynamic_to_plain(expr):
    """Rows written in dynamicsymbols q1(t) become rows in Symbols named q1 (no velocities in φ)."""
    def convert(e):
        if isinstance(e, sp.Basic):
            if e.atoms(sp.Derivative):
                return e  # left for the caller's checks (a holonomic φ has no velocities)
            undef = e.atoms(sp.core.function.AppliedUndef)
            return e.xreplace({u: _plain(u) for u in undef}) if undef else e
        return e

    if isinstance(expr, (list, tuple)):
        return type(expr)(convert(e) for e in expr)
    if isinstance(expr, sp.MatrixBase):
        return expr.applyfunc(convert)
    return convert(expr)


def _by_name(rows, q):
    """Symbols in ``rows`` named like a coordinate but not that Symbol (other assumptions) are that coordinate.

    A name that matches two different Symbols of ``rows`` is refused; symbols named like no coordinate are
    left for the "unknown symbol" check (a misspelt coordinate is reported, never guessed).
    """
    names = {s.name: s for s in q}
    swap = {s: names[s.name] for s in rows.free_symbols if s.name in names and s not in q}
    return rows.xreplace(swap) if swap else rows


def _time_in(rows, t):
    """The time symbol: ``t`` as given, or a free Symbol named ``t`` when none was given (rheonomic φ(q, t))."""
    if t.name != "t" or t in rows.free_symbols:
        return t
    named = [s for s in rows.free_symbols if s.name == "t"]
    return named[0] if len(named) == 1 else t


def _coordinate_symbols(q, name: str, prefix: str):
    if isinstance(q, numbers.Integral) and not isinstance(q, bool):
        if q < 1:
            raise ConstraintError(f"`{name}` as a number of coordinates must be >= 1; got {q}.")
        return tuple(sp.Symbol(f"{prefix}{i}", real=True) for i in range(q))
    return _symbols(q, name)


def _same_length(q, qd):
    if len(q) != len(qd):
        raise ConstraintError(
            f"`qd` must hold one velocity Symbol per coordinate: {len(q)} coordinates {list(q)} "
            f"but {len(qd)} velocities {list(qd)}."
        )


def _no_dependence(J, rows, name, wrt):
    for i in range(J.shape[0]):
        if all(e == 0 for e in J.row(i)):
            hint = (
                "a constraint that does not involve velocities is holonomic: use Holonomic"
                if wrt == "qd"
                else "it constrains nothing (0 = φ(t))"
            )
            raise ConstraintError(
                f"Row {i} of `{name}`, {rows[i]}, does not depend on `{wrt}`, so its row of A is "
                f"identically zero; {hint}."
            )


# --------------------------------------------------------------------------- #
# stacking (W 5.2.8)
# --------------------------------------------------------------------------- #
class StackedConstraint(Constraint):
    """Rows of several constraints on the same coordinates, in order (W 5.2.8).

    Physical constraints A_p q̈ = b_p and control requirements A_c q̈ = b_c become
    one A q̈ = b with A = [A_p; A_c], b = [b_p; b_c]. Build with :func:`stack`.

    Attributes
    ----------
    constraints : tuple of Constraint
        The members (nested stacks are flattened).
    slices : tuple of slice
        The rows of each member in A, b and the residuals.
    """

    def __init__(self, *constraints: Constraint):
        flat: list[Constraint] = []
        for i, c in enumerate(constraints):
            if isinstance(c, StackedConstraint):
                flat.extend(c.constraints)
            elif isinstance(c, Constraint):
                flat.append(c)
            else:
                raise ConstraintError(f"Argument {i} to stack must be a Constraint; got {c!r} of type {type(c).__name__}.")
        if not flat:
            raise ConstraintError("stack needs at least one constraint.")
        first = flat[0]
        for c in flat[1:]:
            if c.n != first.n:
                raise ConstraintError(
                    f"Stacked constraints must share n: {first!r} has n={first.n} coordinates but "
                    f"{c!r} has n={c.n}."
                )
        self.constraints = tuple(flat)
        self.n = first.n
        starts = np.cumsum([0] + [c.m for c in flat])
        self.slices = tuple(slice(int(a), int(b)) for a, b in zip(starts[:-1], starts[1:]))
        self.m = int(starts[-1])

    @staticmethod
    def _concat(parts, tail_ndim):
        batch = _batch(*(p.shape[: p.ndim - tail_ndim] for p in parts))
        parts = [np.broadcast_to(p, batch + p.shape[p.ndim - tail_ndim :]) for p in parts]
        return np.concatenate(parts, axis=-tail_ndim)

    def matrices(self, q, qd, t=0.0):
        """The members' A and b concatenated row-wise."""
        pairs = [c.matrices(q, qd, t) for c in self.constraints]
        return self._concat([p[0] for p in pairs], 2), self._concat([p[1] for p in pairs], 1)

    def residual(self, q, qd, t=0.0):
        """The members' residuals concatenated (every member must define them)."""
        return self._concat([c.residual(q, qd, t) for c in self.constraints], 1)

    def velocity_residual(self, q, qd, t=0.0):
        """The members' velocity-level rows concatenated."""
        return self._concat([c.velocity_residual(q, qd, t) for c in self.constraints], 1)

    @property
    def holonomic_rows(self) -> np.ndarray | None:
        """The members' row kinds concatenated (None if a member's are unknown)."""
        parts = [c.holonomic_rows for c in self.constraints]
        return None if any(p is None for p in parts) else np.concatenate(parts)

    def codegen(self) -> SymbolicForm | None:
        """The members' forms stacked (A = [A_1; A_2; …], b likewise), for the compiled loop.

        None when a member has none. Each member's parameters become Dummies of their own, so
        two members with a parameter of the same name (``L``) stay two parameters.

        Returns
        -------
        SymbolicForm or None
        """
        forms = []
        for c in self.constraints:
            codegen = getattr(c, "codegen", None)
            form = codegen() if callable(codegen) else None
            if form is None:
                return None
            forms.append(form)
        if not all(isinstance(f, SymbolicForm) for f in forms):  # prebuilt kernels' forms combine their own way
            combine = getattr(forms[0], "combine", None)
            return combine(forms) if combine is not None else None
        key = "Stacked/" + "+".join(f.key for f in forms)
        values = np.concatenate([f.values for f in forms]) if forms else np.zeros(0)
        builds = tuple(f.build for f in forms)

        def build(q, qd, t):
            As, bs, params = [], [], []
            for b_ in builds:
                A, b, P = b_(q, qd, t)
                own = {p: sp.Dummy(p.name, **p.assumptions0) for p in P}
                As.append(sp.Matrix(A).xreplace(own))
                bs.append(sp.Matrix(b).xreplace(own))
                params.extend(own[p] for p in P)
            return sp.Matrix.vstack(*As), sp.Matrix.vstack(*bs), tuple(params)

        return SymbolicForm(key, values, build)

    @property
    def no_form_reason(self) -> str:
        """Why the compiled loop cannot take this stack: a member's reason, or members of two kinds of form."""
        for c in self.constraints:
            codegen = getattr(c, "codegen", None)
            if not callable(codegen) or codegen() is None:
                why = getattr(c, "no_form_reason", None) or "has no symbolic form"
                return f"has a member {type(c).__name__} that {why}"
        return ("stacks frame constraints (robustrack.plants.FrameConstraint) with other kinds of constraint: the "
                "compiled loop takes a stack of frame constraints, or of symbolic ones")

    def __repr__(self) -> str:
        return f"StackedConstraint({', '.join(map(repr, self.constraints))})"


def stack(*constraints: Constraint) -> StackedConstraint:
    """Concatenate the rows of ``constraints`` (same n) into one constraint (W 5.2.8).

    Parameters
    ----------
    *constraints : Constraint
        The members, in row order (at least one; all with the same number n of
        coordinates). A :class:`StackedConstraint` among them is flattened into its
        members.

    Returns
    -------
    StackedConstraint
        ``A = [A_1; A_2; …]``, ``b = [b_1; b_2; …]``: its m is the sum of the members' m.

    Raises
    ------
    ConstraintError
        If an argument is not a Constraint or two members have different n.
    """
    return StackedConstraint(*constraints)
