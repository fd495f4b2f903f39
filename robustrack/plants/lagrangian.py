"""Plants derived from a Lagrangian with sympy (W 2.2 step 1; docs/theory/fundamental-equation.md).

The user describes the unconstrained system by its kinetic energy T(q, q̇, t)
(quadratic in q̇), potential energy V(q, t) and optional generalized
non-conservative forces F(q, q̇, t). Lagrange's equations

    d/dt ∂T/∂q̇ − ∂T/∂q = −∂V/∂q + F

are written M q̈ = Q with

    M = ∂²T/∂q̇²
    Q = −(∂/∂q (∂T/∂q̇)) q̇ − ∂²T/∂q̇∂t + ∂T/∂q − ∂V/∂q + F ,

derived once symbolically and turned into vectorized numpy functions
(``sympy.lambdify`` with ``cse=True``). Parameters stay arguments of those
functions: ``plant.replace(m1=1.1)`` gives the perturbed plant without deriving
again, and parameter values may be arrays whose axes broadcast against the batch
axes of ``q`` (leading axes of ``q`` (..., n) ↔ the whole shape of each value).

Equations of motion already formed by ``sympy.physics.mechanics``
(``LagrangesMethod``, ``KanesMethod`` with u = q̇, ``System``) are accepted too:
see :meth:`LagrangianPlant.from_sympy_mechanics`.
"""

from __future__ import annotations

import dataclasses
import functools
import types
from typing import Any, Mapping, Sequence

import numpy as np
from .._lazy import sympy as sp
from .._lambdify import evaluate as _evaluate, lambdify

from .._validate import as_float_array, finite
from ..errors import ParameterError
from ..symbolic import SymbolicForm, expression_key
from .base import Plant

__all__ = ["LagrangianPlant"]


# --------------------------------------------------------------------------
# Symbols: the user's coordinates/velocities/time → private dummies
# --------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, eq=False)
class _Symbols:
    """The user's q, q̇, t and the private dummies the derivation works with."""

    names: tuple[str, ...]
    qs: tuple[sp.Dummy, ...]
    us: tuple[sp.Dummy, ...]
    t: sp.Dummy
    rule: dict  # user expression → dummy (q̇ before q: xreplace matches whole nodes first)
    back: dict  # dummy → user expression

    @classmethod
    def make(cls, q, qd=None, t=None) -> "_Symbols":
        q = list(q)
        if not q:
            raise ParameterError("`q` must list at least one generalized coordinate; got none.")
        if all(isinstance(qi, sp.core.function.AppliedUndef) for qi in q):
            t_user = q[0].args[0] if t is None else sp.sympify(t)
            bad = [qi for qi in q if qi.args != (t_user,)]
            if bad:
                raise ParameterError(
                    f"Every coordinate in `q` must be a function of the time `{t_user}` alone; "
                    f"got {bad}."
                )
            if qd is not None:
                raise ParameterError(
                    "`qd` is only for coordinates given as plain Symbols; the velocities of "
                    "dynamicsymbols are their time derivatives."
                )
            qd = [qi.diff(t_user) for qi in q]
            names = tuple(str(qi.func) for qi in q)
        elif all(isinstance(qi, sp.Symbol) for qi in q):
            if qd is None or len(list(qd)) != len(q):
                raise ParameterError(
                    f"With coordinates given as plain Symbols, `qd` must list one velocity Symbol "
                    f"per coordinate ({len(q)}); got {qd!r}. Or use dynamicsymbols for `q`."
                )
            qd = list(qd)
            t_user = None if t is None else sp.sympify(t)
            names = tuple(qi.name for qi in q)
        else:
            raise ParameterError(
                f"`q` must be all sympy Symbols or all dynamicsymbols (functions of t); got {q}."
            )
        if len(set(q) | set(qd)) != 2 * len(q):
            raise ParameterError(f"`q` and `qd` must be {2 * len(q)} distinct symbols; got {q}, {qd}.")
        qs = tuple(sp.Dummy(name) for name in names)
        us = tuple(sp.Dummy(name + "_dot") for name in names)
        t_dummy = sp.Dummy("t")
        rule = {**dict(zip(qd, us)), **dict(zip(q, qs))}
        back = {**dict(zip(qs, q)), **dict(zip(us, qd))}
        if t_user is not None:
            rule[t_user] = t_dummy
            back[t_dummy] = t_user
        return cls(names, qs, us, t_dummy, rule, back)

    @property
    def n(self) -> int:
        return len(self.qs)

    def convert(self, expr, name: str) -> sp.Expr:
        """The user's expression in dummies; refuse q̈ and unknown functions of time."""
        expr = sp.sympify(expr)
        stray = expr.atoms(sp.Derivative) - set(self.rule)
        if stray:
            raise ParameterError(
                f"`{name}` contains derivatives other than the velocities q̇: "
                f"{sorted(map(str, stray))}."
            )
        out = expr.xreplace(self.rule)
        undef = [f.xreplace(self.back) for f in out.atoms(sp.core.function.AppliedUndef)]
        if undef:
            raise ParameterError(
                f"`{name}` depends on functions {sorted(map(str, undef))} that are not coordinates; "
                "make them coordinates or write them as explicit functions of t."
            )
        return out

    @property
    def own(self) -> set:
        return {*self.qs, *self.us, self.t}


# --------------------------------------------------------------------------
# The derivation
# --------------------------------------------------------------------------


def lagrange_equations(T, V, q, qd, t, F=None) -> tuple:
    """Lagrange's equations d/dt ∂T/∂q̇ − ∂T/∂q = −∂V/∂q + F written as M q̈ = Q (sympy; W 2.2 step 1).

    ``M = ∂²T/∂q̇²``, ``Q = −(∂p/∂q) q̇ − ∂p/∂t + ∂T/∂q − ∂V/∂q + F`` with ``p = ∂T/∂q̇``: the one derivation of
    :class:`LagrangianPlant` and of the seed plants (:mod:`robustrack.plants.examples`);
    docs/theory/fundamental-equation.md.

    Parameters
    ----------
    T, V : sympy expression (or anything ``sympy.sympify`` takes)
        Kinetic energy T(q, q̇, t) and potential energy V(q, t).
    q, qd : sequence of sympy Symbols
        Coordinates and velocities.
    t : sympy Symbol
    F : sequence of sympy expressions, optional
        Generalized non-conservative forces, one per coordinate (default none).

    Returns
    -------
    M : sympy.Matrix (n × n)
    Q : sympy.Matrix (n × 1)
    """
    T, V = sp.sympify(T), sp.sympify(V)
    n = len(q)
    p = [sp.diff(T, v) for v in qd]
    M = sp.Matrix(n, n, lambda i, j: sp.diff(p[i], qd[j]))
    Q = sp.Matrix([
        -sum(sp.diff(p[i], qj) * vj for qj, vj in zip(q, qd)) - sp.diff(p[i], t)
        + sp.diff(T, q[i]) - sp.diff(V, q[i]) + (0 if F is None else F[i])
        for i in range(n)
    ])
    return M, Q


def _lagrange(T, V, F, s: _Symbols) -> tuple[sp.Matrix, sp.Matrix]:
    """:func:`lagrange_equations` of a user's description, refused where it is not a mechanical Lagrangian
    (V reads q̇, or T is not quadratic in q̇)."""
    if V.has(*s.us):
        raise ParameterError(
            "`V` must not depend on the velocities; put velocity-dependent forces in `forces`."
        )
    M, Q = lagrange_equations(T, V, s.qs, s.us, s.t, F)
    if M.has(*s.us):
        raise ParameterError(
            "`T` must be quadratic in the velocities: ∂²T/∂q̇² still depends on q̇."
        )
    return M, Q


@dataclasses.dataclass(frozen=True, eq=False)
class _Model:
    """The derived equations: symbolic M, Q (in dummies) and their numpy functions."""

    symbols: _Symbols
    M: sp.Matrix
    Q: sp.Matrix
    parameters: tuple[sp.Symbol, ...]  # lambdify argument order
    required: frozenset  # names appearing in M or Q
    allowed: frozenset  # names appearing in the user's description
    M_func: Any
    Q_func: Any

    @classmethod
    def build(cls, s: _Symbols, M, Q, described) -> "_Model":
        by_name: dict[str, sp.Symbol] = {}
        for sym in sorted(described, key=lambda x: x.name):
            if by_name.setdefault(sym.name, sym) != sym:
                raise ParameterError(
                    f"Two different symbols are named `{sym.name}` (different assumptions?); "
                    "parameter names must be unique."
                )
        used = (M.free_symbols | Q.free_symbols) - s.own
        parameters = tuple(sorted(used, key=lambda x: x.name))
        q_args = [*s.qs, s.t, *parameters]
        return cls(
            symbols=s,
            M=M,
            Q=Q,
            parameters=parameters,
            required=frozenset(p.name for p in parameters),
            allowed=frozenset(by_name),
            M_func=lambdify(q_args, list(M), modules="numpy", cse=True),
            Q_func=lambdify([*s.qs, *s.us, s.t, *parameters], list(Q), modules="numpy", cse=True),
        )

    def __repr__(self) -> str:
        return f"<Lagrangian model q={self.symbols.names}>"

    @functools.cached_property
    def codegen_key(self) -> str:
        """``expression_key`` of M, Q and the parameter names (the structure of the compiled loop).

        The private dummies q, q̇, t are replaced by fixed placeholder symbols first: a
        Dummy's ``srepr`` carries a per-process index, which would make the key (and the
        cached module) differ between runs.
        """
        s = self.symbols
        canon = {x: sp.Symbol(f"__rtk_{kind}{i}") for kind, xs in (("q", s.qs), ("qd", s.us))
                 for i, x in enumerate(xs)}
        canon[s.t] = sp.Symbol("__rtk_t")
        return expression_key(self.M.xreplace(canon), self.Q.xreplace(canon),
                              tuple(p.name for p in self.parameters))


def _lagrangian_form(model: _Model, q, qd, t):
    """``(M, Q, params)`` of ``model`` in the code generator's symbols (see :class:`SymbolicForm`).

    The parameters become Dummies of the same names and assumptions, so no parameter can
    be mistaken for one of the generator's own q, q̇ or t symbols.
    """
    s = model.symbols
    params = tuple(sp.Dummy(p.name, **p.assumptions0) for p in model.parameters)
    rule = {**dict(zip(s.qs, q)), **dict(zip(s.us, qd)), s.t: t, **dict(zip(model.parameters, params))}
    return model.M.xreplace(rule), model.Q.xreplace(rule), params


# --------------------------------------------------------------------------
# The plant
# --------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, eq=False)
class LagrangianPlant(Plant):
    """A plant M(q, t) q̈ = Q(q, q̇, t) derived from T, V, F with sympy (W 2.2 step 1).

    Build it with :meth:`from_energies` or :meth:`from_sympy_mechanics`, not directly.

    Parameters
    ----------
    model : _Model
        The derived equations (shared, never re-derived, by :meth:`replace`).
    values : mapping of str to float or array
        Numeric value of every parameter symbol; arrays broadcast against the
        batch axes of ``q``. Every symbol appearing in M or Q needs a value.

    Notes
    -----
    M may be singular (positive semi-definite); nothing here inverts it.
    ``replace(**{name: value})`` changes parameter values; ``params`` lists them.

    Examples
    --------
    >>> import sympy as sp
    >>> x, v, m, k = sp.symbols("x v m k")
    >>> spring = LagrangianPlant.from_energies([x], m * v**2 / 2, k * x**2 / 2,
    ...                                        qd=[v], params={m: 2.0, k: 8.0})
    >>> spring.unconstrained_acceleration([0.5], [0.0]).tolist()
    [-2.0]
    >>> spring.replace(k=4.0).given_force([0.5], [0.0]).tolist()
    [-2.0]
    """

    model: _Model
    values: Mapping[str, Any]
    kinds: tuple | None = None

    def __post_init__(self):
        if self.kinds is not None:
            from .units import COORDINATE_KINDS

            kinds = tuple(self.kinds)
            if len(kinds) != self.model.symbols.n or any(k not in COORDINATE_KINDS for k in kinds):
                raise ParameterError(
                    f"`kinds` must give one of {[k for k in COORDINATE_KINDS if k]} (or None: unknown) for each "
                    f"coordinate {self.model.symbols.names}; got {self.kinds!r}.")
            object.__setattr__(self, "kinds", kinds)
        values = dict(self.values)
        unknown = sorted(set(values) - self.model.allowed - self.model.required)
        if unknown:
            raise ParameterError(
                f"Unknown parameter(s) {unknown}; this model's parameters are "
                f"{sorted(self.model.allowed | self.model.required)}."
            )
        missing = sorted(self.model.required - set(values))
        if missing:
            raise ParameterError(
                f"Missing value(s) for parameter(s) {missing}: every symbol in M or Q needs a "
                "number (no defaults)."
            )
        clean = {}
        for name, value in values.items():
            arr = finite(as_float_array(value, name), name)
            if arr.ndim:
                arr = arr.copy()
                arr.setflags(write=False)
            clean[name] = float(arr) if arr.ndim == 0 else arr
        object.__setattr__(self, "values", types.MappingProxyType(clean))

    def __reduce__(self):  # the values' read-only view does not pickle; campaigns send plants to workers
        return (type(self), (self.model, dict(self.values), self.kinds))

    # -- construction -------------------------------------------------------

    @classmethod
    def from_energies(
        cls,
        q: Sequence,
        T,
        V,
        forces: Sequence | None = None,
        params: Mapping | None = None,
        t=None,
        *,
        qd: Sequence | None = None,
        kinds: Sequence | None = None,
    ) -> "LagrangianPlant":
        """Derive the plant from kinetic and potential energy.

        Parameters
        ----------
        q : sequence of sympy dynamicsymbols or Symbols
            The n generalized coordinates. With dynamicsymbols (functions of t)
            the velocities are their derivatives; with plain Symbols give ``qd``.
        T : sympy expression
            Kinetic energy T(q, q̇, t), quadratic in q̇.
        V : sympy expression
            Potential energy V(q, t).
        forces : sequence of n sympy expressions, optional
            Generalized non-conservative forces F(q, q̇, t).
        params : mapping of sympy Symbol or str to float or array
            A value for every other symbol of T, V, forces.
        t : sympy Symbol, optional
            The time symbol (default: the argument of the dynamicsymbols; with
            plain Symbols, no explicit time unless given).
        qd : sequence of sympy Symbols, optional
            Velocity symbols, only when ``q`` are plain Symbols.
        kinds : sequence of str, optional
            What each coordinate is (``"angle"``, ``"length"``, ``"dimensionless"``):
            the plant's ``coordinate_kinds``, which give the units of what it reports
            (:mod:`robustrack.plants.units`). Default: unknown (``[q]``).

        Returns
        -------
        LagrangianPlant
        """
        s = _Symbols.make(q, qd, t)
        T_s, V_s = s.convert(T, "T"), s.convert(V, "V")
        if forces is None:
            F_s = [sp.Integer(0)] * s.n
        else:
            F_s = [s.convert(f, f"forces[{i}]") for i, f in enumerate(forces)]
            if len(F_s) != s.n:
                raise ParameterError(
                    f"`forces` must hold one expression per coordinate ({s.n}); got {len(F_s)}."
                )
        M, Q = _lagrange(T_s, V_s, F_s, s)
        described = (T_s.free_symbols | V_s.free_symbols).union(*(f.free_symbols for f in F_s))
        model = _Model.build(s, M, Q, described - s.own)
        return cls(model=model, values=_names(params), kinds=None if kinds is None else tuple(kinds))

    @classmethod
    def from_sympy_mechanics(cls, method_or_system, params: Mapping | None = None, *,
                             kinds: Sequence | None = None) -> "LagrangianPlant":
        """Take M and the forcing from a ``sympy.physics.mechanics`` model.

        Parameters
        ----------
        method_or_system : LagrangesMethod, KanesMethod or System
            A ``LagrangesMethod`` (its equations are formed here if they are not
            yet), a ``KanesMethod`` whose generalized speeds are the coordinate
            rates (u_i = q̇_i) and whose ``kanes_equations`` can run or have run,
            or a ``System`` (sympy ≥ 1.13; ``form_eoms()`` is called if needed).
            No constraint equations: constraints are separate objects in robustrack.
        params : mapping of sympy Symbol or str to float or array
            A value for every parameter symbol.
        kinds : sequence of str, optional
            What each coordinate is (``"angle"``, ``"length"``, ``"dimensionless"``), as in
            :meth:`from_energies`: the units of everything reported. Default unknown.

        Returns
        -------
        LagrangianPlant
            Its coordinates are named after the dynamicsymbols (``q1(t)`` → ``q1``): a constraint
            written in Symbols of those names (or in the dynamicsymbols themselves) matches them.
        """
        q, M, F = _mechanics_equations(method_or_system)
        from sympy.physics.mechanics import dynamicsymbols

        s = _Symbols.make(q, None, dynamicsymbols._t)
        M_s, F_s = s.convert(M, "mass_matrix"), s.convert(F, "forcing")
        if M_s.has(*s.us):
            raise ParameterError("The mass matrix of the sympy model depends on the velocities.")
        model = _Model.build(s, M_s, F_s, (M_s.free_symbols | F_s.free_symbols) - s.own)
        return cls(model=model, values=_names(params), kinds=None if kinds is None else tuple(kinds))

    # -- the plant contract -------------------------------------------------

    @property
    def coordinates(self) -> tuple[str, ...]:
        """Names of the generalized coordinates, in order."""
        return self.model.symbols.names

    @property
    def coordinate_kinds(self) -> tuple:
        """What each coordinate is, as given to :meth:`from_energies` (``kinds``); None: unknown."""
        return self.kinds if self.kinds is not None else (None,) * self.n

    def _state(self, x, name: str) -> np.ndarray:
        arr = as_float_array(x, name, ndim_min=1)
        if arr.shape[-1] != self.n:
            raise ParameterError(
                f"`{name}` must have {self.n} entries {self.coordinates} on its last axis; "
                f"got shape {arr.shape}."
            )
        return arr

    def _parameter_values(self) -> list[np.ndarray]:
        return [np.asarray(self.values[p.name]) for p in self.model.parameters]

    def mass_matrix(self, q, t=0.0) -> np.ndarray:
        """M(q, t) = ∂²T/∂q̇², shape (..., n, n) (may be singular)."""
        return _evaluate(
            self.model.M_func,
            [self._state(q, "q")],
            as_float_array(t, "t"),
            self._parameter_values(),
            (self.n, self.n),
        )

    def given_force(self, q, qd, t=0.0) -> np.ndarray:
        """Q(q, q̇, t), shape (..., n): every term of Lagrange's equations but M q̈."""
        return _evaluate(
            self.model.Q_func,
            [self._state(q, "q"), self._state(qd, "qd")],
            as_float_array(t, "t"),
            self._parameter_values(),
            (self.n,),
        )

    # -- parameters and symbols ---------------------------------------------

    @property
    def params(self) -> dict:
        """The parameter values (name → value)."""
        return dict(self.values)

    def replace(self, **params) -> "LagrangianPlant":
        """A copy with some parameter values changed; the equations are not re-derived."""
        valid = self.model.allowed | self.model.required
        unknown = sorted(set(params) - valid)
        if unknown:
            raise ParameterError(
                f"Unknown parameter(s) {unknown}; this model's parameters are {sorted(valid)}."
            )
        return dataclasses.replace(self, values={**self.values, **params})

    @property
    def symbolic_mass_matrix(self) -> sp.Matrix:
        """M in the user's symbols (q, q̇, t and parameters)."""
        return self.model.M.xreplace(self.model.symbols.back)

    @property
    def symbolic_given_force(self) -> sp.Matrix:
        """Q in the user's symbols (q, q̇, t and parameters)."""
        return self.model.Q.xreplace(self.model.symbols.back)

    def codegen(self) -> SymbolicForm | None:
        """The derived M, Q for the compiled tracking loop (:mod:`robustrack.symbolic`).

        Returns
        -------
        SymbolicForm or None
            Keyed by the expressions and the parameter names, so every plant of one model
            (``replace`` changes values only) shares one compiled module; the values follow
            the model's parameter order. None when a value is an array (sampled plants).
        """
        values = [self.values[p.name] for p in self.model.parameters]
        if any(np.ndim(v) != 0 for v in values):
            return None
        return SymbolicForm(f"LagrangianPlant/{self.model.codegen_key}", np.array(values, dtype=float),
                            functools.partial(_lagrangian_form, self.model))


def _names(params: Mapping | None) -> dict:
    """Parameter mapping keyed by name (sympy Symbols or str accepted)."""
    out: dict[str, Any] = {}
    for key, value in (params or {}).items():
        name = key.name if isinstance(key, sp.Symbol) else key
        if not isinstance(name, str):
            raise ParameterError(f"Parameter keys must be sympy Symbols or str; got {key!r}.")
        if name in out:
            raise ParameterError(f"Parameter `{name}` is given twice.")
        out[name] = value
    return out


# --------------------------------------------------------------------------
# sympy.physics.mechanics adapters
# --------------------------------------------------------------------------


def _mechanics_equations(obj):
    """(q, M, forcing) of a LagrangesMethod, KanesMethod (u = q̇) or System."""
    from sympy.physics import mechanics as me

    System = getattr(me, "System", None)
    pydy_like = not isinstance(obj, (me.LagrangesMethod, me.KanesMethod)) and hasattr(obj, "eom_method")
    if pydy_like and not (System is not None and isinstance(obj, System)):  # pydy.system.System: its KanesMethod
        obj = obj.eom_method
    elif System is not None and isinstance(obj, System):
        if obj.eom_method is None:
            try:
                obj.form_eoms()
            except Exception as exc:  # sympy's own message says what is missing
                raise ParameterError(f"`System.form_eoms()` failed: {exc}") from exc
        obj = obj.eom_method
    if isinstance(obj, me.LagrangesMethod):
        if len(obj.coneqs):
            raise ParameterError(
                "The LagrangesMethod has constraint equations; a plant is the UNCONSTRAINED system "
                "(W 2.2 step 1). Build it without constraints and give them as robustrack constraints."
            )
        if obj.eom is None:
            obj.form_lagranges_equations()
        return list(obj.q), obj.mass_matrix, obj.forcing
    if isinstance(obj, me.KanesMethod):
        return _kane_equations(obj)
    raise ParameterError(
        "`method_or_system` must be a sympy.physics.mechanics LagrangesMethod, KanesMethod or System "
        f"(sympy.physics.mechanics.System), or a pydy.system.System; got {type(obj).__module__}."
        f"{type(obj).__qualname__}."
    )


def _kane_equations(km):
    from sympy.physics.mechanics import dynamicsymbols

    q, u = list(km.q), list(km.u)
    if getattr(km, "_udep", None) or getattr(km, "_qdep", None) or getattr(km, "_uaux", None):
        raise ParameterError(
            "The KanesMethod has dependent coordinates/speeds or auxiliary speeds; a plant is the "
            "UNCONSTRAINED system (W 2.2 step 1): give constraints as robustrack constraints."
        )
    t = dynamicsymbols._t
    kdd = km.kindiffdict()
    for qi, ui in zip(q, u):
        if len(q) != len(u) or sp.simplify(kdd[qi.diff(t)] - ui) != 0:
            raise ParameterError(
                "KanesMethod: the generalized speeds must be the coordinate rates, u_i = q̇_i "
                f"(in order); got {qi.diff(t)} = {kdd[qi.diff(t)]} for u = {ui}. Rebuild it with "
                "kd_eqs = [q_i' - u_i], or use LagrangesMethod."
            )
    try:
        M, F = km.mass_matrix, km.forcing
    except ValueError:
        try:
            km.kanes_equations()
        except Exception as exc:
            raise ParameterError(
                "KanesMethod: call `kanes_equations(bodies, loads)` first "
                f"(forming them here failed: {exc})."
            ) from exc
        M, F = km.mass_matrix, km.forcing
    to_qd = {ui: qi.diff(t) for qi, ui in zip(q, u)}
    to_qd.update({ui.diff(t): qi.diff(t, 2) for qi, ui in zip(q, u)})
    return q, M.xreplace(to_qd), F.xreplace(to_qd)
