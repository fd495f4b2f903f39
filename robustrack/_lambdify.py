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

from ._lazy import sympy as sp

__all__ = ["Lambdified", "lambdify"]


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
