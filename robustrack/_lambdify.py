"""``sympy.lambdify`` whose result pickles with the standard library.

A function made by :func:`sympy.lambdify` lives in no module (``_lambdifygenerated``), so
:mod:`pickle` cannot send it to a campaign's worker processes, and every object holding one
(a :class:`~robustrack.constraints.Holonomic`, a :class:`~robustrack.requirements.TaskSpaceTrajectory`,
a :class:`~robustrack.plants.LagrangianPlant`) could only travel with ``cloudpickle``, which a base
install does not have. :class:`Lambdified` keeps the arguments and expressions it was made from,
pickles those (sympy expressions pickle), and lambdifies them again when unpickled: the same
numbers, from the same expressions, in every process.
"""

from __future__ import annotations

import numpy as np

from ._lazy import sympy as sp
from ._validate import broadcast_batch

__all__ = ["Lambdified", "lambdify", "evaluate"]


class Lambdified:
    """A callable ``sympy.lambdify(args, expr, **options)`` that pickles as its expressions.

    Parameters
    ----------
    args : sympy Symbol or sequence of them
        The arguments, as :func:`sympy.lambdify` takes them.
    expr : sympy expression or (nested) list of them
    **options
        Passed to :func:`sympy.lambdify` (``modules``, ``cse``).

    Examples
    --------
    >>> import pickle, sympy
    >>> x = sympy.Symbol("x")
    >>> f = pickle.loads(pickle.dumps(lambdify([x], [x**2, sympy.sin(x)], modules="numpy")))
    >>> [float(v) for v in f(2.0)][0]
    4.0
    """

    __slots__ = ("args", "expr", "options", "_func")

    def __init__(self, args, expr, **options):
        self.args, self.expr, self.options = args, expr, options
        self._func = sp.lambdify(args, expr, **options)

    def __call__(self, *values):
        return self._func(*values)

    def __reduce__(self):
        return (_rebuild, (self.args, self.expr, self.options))

    def __repr__(self) -> str:
        return f"Lambdified({self.args!r} -> {self.expr!r})"


def _rebuild(args, expr, options) -> Lambdified:
    return Lambdified(args, expr, **options)


def lambdify(args, expr, **options) -> Lambdified:
    """:func:`sympy.lambdify` whose result pickles (see :class:`Lambdified`).

    Parameters
    ----------
    args, expr, **options
        As for :func:`sympy.lambdify`.

    Returns
    -------
    Lambdified
    """
    return Lambdified(args, expr, **options)


def evaluate(func, states, t, values, shape_tail: tuple) -> np.ndarray:
    """Call a lambdified list of entries on a batch of states and assemble shape ``batch + shape_tail``.

    The arguments broadcast by numpy's rules: the states' coordinate columns ``q[..., i]`` (batch axes),
    the time and the parameter values (scalars, or arrays whose axes broadcast against the batch
    axes: sampled plants). One state with scalar values is evaluated on Python floats (a few µs
    less per call of the numpy reference's right-hand side). Complex states give a complex result
    (the complex-step Jacobian of the numpy reference, docs/theory/fundamental-equation.md).

    Parameters
    ----------
    func : callable
        ``func(*columns, t, *values)`` returning the entries in row-major order (a :class:`Lambdified`
        list of expressions), the columns those of ``states`` in order.
    states : list of ndarray
        ``[q]`` or ``[q, qd]``, each of shape ``(..., n)``.
    t : ndarray
        The time, a scalar or an array broadcasting with the batch axes.
    values : sequence of float or ndarray
        The parameter values, in the order of the parameter symbols of ``func`` (real).
    shape_tail : tuple of int
        The shape of one evaluation (``(n, n)`` for M, ``(n,)`` for Q).

    Returns
    -------
    ndarray
        Shape ``batch + shape_tail``.

    Raises
    ------
    ParameterError
        The batch axes of the states, the time and the parameters do not broadcast.
    """
    dtype = complex if t.dtype.kind == "c" or any(s.dtype.kind == "c" for s in states) else float
    if t.ndim == 0 and all(s.ndim == 1 for s in states):
        if all(type(v) is float for v in values):  # the plants' own scalars: no numpy call per value
            scalars = values
        elif all(np.ndim(v) == 0 for v in values):
            scalars = [float(v) for v in values]
        else:
            scalars = None
        if scalars is not None:
            args = [x for s in states for x in s.tolist()]
            return np.array(func(*args, t.item(), *scalars), dtype=dtype).reshape(shape_tail)
    shapes = {s.shape[:-1] for s in states} | {t.shape} | {np.shape(v) for v in values}
    shapes.discard(())
    if len(shapes) <= 1:  # the common cases, without numpy's broadcasting of shapes
        batch = shapes.pop() if shapes else ()
    else:
        batch = broadcast_batch({**{f"state {i + 1}": s.shape[:-1] for i, s in enumerate(states)}, "t": t.shape,
                                 **{f"parameter {i + 1}": np.shape(v) for i, v in enumerate(values)}})
    entries = func(*(s[..., i] for s in states for i in range(s.shape[-1])), t, *values)
    out = np.empty(batch + (len(entries),), dtype=dtype)
    for k, entry in enumerate(entries):
        out[..., k] = entry  # constant entries broadcast to the batch shape
    return out.reshape(batch + shape_tail)
