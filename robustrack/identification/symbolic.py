"""The regressor Y = ∂(M q̈ − Q)/∂θ derived with sympy from a plant's symbolic form.

Helper of :mod:`robustrack.identification`: a plant's ``codegen()`` gives M(q, t), Q(q, q̇, t)
and their parameter symbols (:class:`robustrack.symbolic.SymbolicForm`). For the chosen
parameters θ_k, Y_k = (∂M/∂θ_k) q̈ − ∂Q/∂θ_k is derived once per structure and parameter
list (cached for the process) and turned into a vectorized numpy function. The equations must
be linear in the chosen θ, ∂Y_k/∂θ_l ≡ 0: proved by sympy (expanded, the derivative is the
zero matrix), or where sympy cannot decide, checked at the run's own states and refused if
it fails.
"""

from __future__ import annotations

import numpy as np

from ..errors import ParameterError

__all__ = ["symbolic_form", "symbolic_regressor", "form_parameter_names", "nonlinear_pairs"]


def symbolic_form(plant):
    """The plant's sympy form (:class:`robustrack.symbolic.SymbolicForm`), or None: a robot's, a user's functions' or
    a forced robot's form is code, not expressions (:mod:`robustrack.symbolic`), so it names no parameter symbols.

    Parameters
    ----------
    plant : Plant

    Returns
    -------
    SymbolicForm or None
    """
    from ..symbolic import SymbolicForm

    form = plant.codegen() if hasattr(plant, "codegen") else None
    return form if isinstance(form, SymbolicForm) else None


def form_parameter_names(form, n: int) -> list[str]:
    """The names of a symbolic form's parameter symbols, in the order of ``form.values``.

    Parameters
    ----------
    form : SymbolicForm
        A plant's ``codegen()``.
    n : int
        The plant's number of coordinates.

    Returns
    -------
    list of str
    """
    return list(_derive(form.key, form.build, n, None).names)


def symbolic_regressor(form, n: int, names: tuple, q, qd, qdd, t):
    """(Y (T, n, P), θ₀ (P,)) at the samples, from the form's sympy M and Q.

    Parameters
    ----------
    form : SymbolicForm
        The plant's ``codegen()`` (M, Q and every parameter symbol).
    n : int
        Coordinates of the plant (the size of q).
    names : tuple of str
        The parameters θ (symbols of the form).
    q, qd, qdd : ndarray (T, n)
    t : ndarray (T,)

    Returns
    -------
    Y : ndarray (T, n, P)
        ∂(M q̈ − Q)/∂θ_k.
    nominal : ndarray (P,)
        The form's values of θ.

    Raises
    ------
    ParameterError
        M q̈ − Q is not linear in the chosen parameters along the given samples.
    """
    derived = _derive(form.key, form.build, n, tuple(names))
    values = [np.asarray(v) for v in form.values]
    columns = [*q.T, *qd.T, *qdd.T, t, *values]
    shape = q.shape[:-1]
    P = len(names)
    Y = np.stack([np.broadcast_to(np.asarray(e, dtype=float), shape) for e in derived.func(*columns)], axis=-1)
    Y = Y.reshape(shape + (n, P))
    if derived.check is not None:
        curvature = np.stack([np.broadcast_to(np.asarray(e, dtype=float), shape) for e in derived.check(*columns)])
        if np.max(np.abs(curvature)) > 1e-9 * (np.max(np.abs(Y)) + np.finfo(float).tiny):
            pairs = ", ".join(f"({a}, {b})" for a, b in derived.nonlinear)
            raise ParameterError(f"the equations of motion are not linear in the parameters {list(names)}: "
                                 f"∂²(M q̈ − Q)/∂θ∂θ′ ≠ 0 for {pairs}; identify only parameters M and Q are "
                                 "linear in (masses, inertias).")
    nominal = np.array([float(form.values[derived.names.index(p)]) for p in names])
    return Y, nominal


def nonlinear_pairs(form, n: int, names) -> tuple:
    """The pairs of parameters whose second derivative ∂²(M q̈ − Q)/∂θ∂θ′ sympy does not find identically zero.

    The structural test of :func:`symbolic_regressor` (before any data): a pair ``(a, a)`` says M q̈ − Q is not
    linear in ``a`` alone (a length: M holds m L²), a pair ``(a, b)`` that it is linear in each but not in both
    together (m and g: Q holds m g). An expression sympy cannot prove zero counts as a pair (conservative).

    Parameters
    ----------
    form : SymbolicForm
        The plant's ``codegen()``.
    n : int
        The plant's number of coordinates.
    names : sequence of str
        Symbols of the form.

    Returns
    -------
    tuple of (str, str)
        In the order of ``names`` (``a`` before or equal to ``b``).
    """
    key = (form.key, n, tuple(names), "pairs")
    if key not in _CACHE:
        import sympy as sp

        q, qd, qdd = sp.symbols(f"q0:{n}"), sp.symbols(f"qd0:{n}"), sp.symbols(f"qdd0:{n}")
        M, Q, params = form.build(q, qd, sp.Symbol("t"))
        by_name = {p.name: p for p in params}
        unknown = [p for p in names if p not in by_name]
        if unknown:
            raise ParameterError(f"the plant's symbolic form has no parameter(s) {unknown}; it has {list(by_name)}.")
        r = M * sp.Matrix(qdd) - Q
        Y = [r.diff(by_name[a]) for a in names]
        _CACHE[key] = tuple((a, b) for i, a in enumerate(names) for b in names[i:]
                            if not sp.expand(Y[i].diff(by_name[b])).is_zero_matrix)
    return _CACHE[key]


class _Derived:
    __slots__ = ("func", "check", "nonlinear", "names")

    def __init__(self, func, check, nonlinear, names):
        self.func, self.check, self.nonlinear, self.names = func, check, nonlinear, names


_CACHE: dict = {}


def _derive(key, build, n, names):
    """The lambdified regressor entries (row-major n × P) and the parameter names, once per structure.

    Cached on (structure key, n, names): the form's key names its expressions (two plants with one
    key differ in parameter values only), while ``build`` is a new object for every plant.
    """
    if (key, n, names) not in _CACHE:
        _CACHE[(key, n, names)] = _derive_now(build, n, names)
    return _CACHE[(key, n, names)]


def _derive_now(build, n, names):
    import sympy as sp

    q, qd, qdd = sp.symbols(f"q0:{n}"), sp.symbols(f"qd0:{n}"), sp.symbols(f"qdd0:{n}")
    t = sp.Symbol("t")
    M, Q, params = build(q, qd, t)
    param_names = tuple(p.name for p in params)
    if names is None:
        return _Derived(None, None, (), param_names)
    unknown = [p for p in names if p not in param_names]
    if unknown:
        raise ParameterError(f"the plant's symbolic form has no parameter(s) {unknown}; it has {list(param_names)}.")
    chosen = [params[param_names.index(p)] for p in names]
    r = M * sp.Matrix(qdd) - Q
    Y = [r.diff(theta) for theta in chosen]
    nonlinear = [(names[i], names[j]) for i in range(len(names)) for j in range(i, len(names))
                 if not sp.expand(Y[i].diff(chosen[j])).is_zero_matrix]
    args = (*q, *qd, *qdd, t, *params)
    func = sp.lambdify(args, [Y[k][i] for i in range(n) for k in range(len(chosen))], modules="numpy", cse=True)
    check = None
    if nonlinear:
        check = sp.lambdify(args, [Y[names.index(a)].diff(chosen[names.index(b)])[i]
                                   for a, b in nonlinear for i in range(n)], modules="numpy", cse=True)
    return _Derived(func, check, tuple(nonlinear), param_names)
