"""Running robustrack's own sources on traced numbers: straight-line code for the C export (docs/guide/robot.md,
"Export to C").

The C export holds no second copy of an algorithm. It runs the one source each algorithm has — unchanged — on
:class:`Traced` numbers, and prints what they recorded:

- the laws of :mod:`robustrack.controllers.laws` (called as they are, on traced ``e``, ``ė``, ``z`` and parameters);
- the rigid-body algorithms of :mod:`robustrack.compiled.rigid_body` — ``crba``, ``given_force``, ``frame_rows`` and
  every helper they call — from the Python functions of their numba dispatchers (``py_func``);
- a plant's Python functions (:meth:`robustrack.plants.Plant.from_functions`).

Each arithmetic operation or numpy ufunc on a :class:`Traced` appends one step ``w<k> = <op>(operands)`` to a
:class:`Program` (straight-line code; a step computed twice is kept once) and returns a Traced naming it. sympy holds
each small step and prints it (``sympy.printing.c``); the steps no output needs are dropped. Measured on the UR5
(M, Q and three frame constraints' rows): sympy expressions grown whole and simplified by ``sympy.cse`` took 262 s;
one step per operation takes ~1 s to trace and ~1 s to print (63 kB of C).

A function is traced through :func:`traceable`: the same code object, rebuilt over a copy of its globals in which
every numba dispatcher (and every plain function of the same module) is itself rebuilt, ``np`` is
:func:`numpy_for_tracing` (numpy whose array makers make object arrays, so a traced number can be stored, and whose
ufuncs apply elementwise to them) and ``min``/``max`` of two numbers are sympy's Min/Max (``fmin``/``fmax`` in C).
Data stay floats: a robot's numbers become C constants, and a branch on them (a joint's type) is taken as the
compiled code takes it.

Branches. A comparison needs values. A Traced knows its value when it is a parameter (then the branch is just taken)
or a state at a sample of the nominal run (``Program.traced(..., value=)``: the branch is taken as at the sample and
recorded in :attr:`Program.guards` with where it is in the source; the export checks every guard at every step of the
nominal run, and the C checks them at every call). A Traced without a value — the measured state: the law's e, ė, z,
the mass matrix's q — refuses to branch (:class:`Untraceable`), as does a function the tracer does not translate
(``math.cos``, ``np.linalg``): the caller names the code and says what to write instead.
"""

from __future__ import annotations

import builtins
import sys
import types
from pathlib import Path

import numpy as np
import sympy as sp

__all__ = ["Program", "Traced", "Untraceable", "traceable", "numpy_for_tracing", "expression", "UFUNCS", "RIGID_BODY",
           "rigid_body", "robot_rows"]


class Untraceable(Exception):
    """What the tracer cannot follow: a branch on a value known only at run time, or a function it does not
    translate. The message says what and where; the caller says whose code it is (an ExportError)."""


def _n(x) -> bool:
    return x.is_Number


def _num(x) -> float:
    return float(x)


def _key(x):
    """A deterministic order of a commutative step's operands (symbols by name, numbers by value)."""
    return (1, x.name) if x.is_Symbol else (0, "", float(x)) if x.is_Number else (2, str(x))


_FLOATS: dict = {}


def _float(v: float):
    """sympy's Float of a double (one object per value)."""
    x = _FLOATS.get(v)
    if x is None:
        if len(_FLOATS) > 100_000:  # a long session exporting many designs: start again
            _FLOATS.clear()
        x = _FLOATS[v] = sp.Float(v)
    return x


def _add(a, b):
    if _n(b) and _num(b) == 0.0:
        return a
    if _n(a) and _num(a) == 0.0:
        return b
    if _n(a) and _n(b):
        return _float(_num(a) + _num(b))
    return sp.Add._from_args(sorted((a, b), key=_key))


def _neg(a):
    return _float(-_num(a)) if _n(a) else sp.Mul._from_args((sp.S.NegativeOne, a))


def _sub(a, b):
    if _n(b) and _num(b) == 0.0:
        return a
    if a == b and a.is_Symbol:
        return _float(0.0)
    if _n(a) and _n(b):
        return _float(_num(a) - _num(b))
    if _n(a) and _num(a) == 0.0:
        return _neg(b)
    return sp.Add._from_args((a, _neg(b)))


def _mul(a, b):
    for x, y in ((a, b), (b, a)):
        if _n(x):
            v = _num(x)
            if _n(y):
                return _float(v * _num(y))
            if v == 0.0:
                return _float(0.0)
            if v == 1.0:
                return y
            if v == -1.0:
                return _neg(y)
    return sp.Mul._from_args(sorted((a, b), key=_key))


def _div(a, b):
    if _n(b) and _num(b) == 1.0:
        return a
    if _n(a) and _n(b):
        with np.errstate(all="ignore"):
            return _float(float(np.float64(_num(a)) / np.float64(_num(b))))
    return sp.Mul._from_args((a, sp.Pow(b, sp.S.NegativeOne, evaluate=False)))


def _pow(a, b):
    if _n(b) and _num(b) == 1.0:
        return a
    return sp.Pow(a, b, evaluate=False)


def _function(f):
    return lambda *args: f(*args, evaluate=False)


def _ufunc_table() -> dict:
    return {np.add: _add, np.subtract: _sub, np.multiply: _mul, np.true_divide: _div, np.power: _pow,
            np.negative: _neg, np.positive: lambda a: a, np.square: lambda a: _mul(a, a), np.conjugate: lambda a: a,
            np.sqrt: _function(sp.sqrt), np.cbrt: _function(sp.cbrt), np.exp: _function(sp.exp),
            np.log: _function(sp.log), np.sin: _function(sp.sin), np.cos: _function(sp.cos),
            np.tan: _function(sp.tan), np.arcsin: _function(sp.asin), np.arccos: _function(sp.acos),
            np.arctan: _function(sp.atan), np.arctan2: _function(sp.atan2), np.sinh: _function(sp.sinh),
            np.cosh: _function(sp.cosh), np.tanh: _function(sp.tanh), np.absolute: _function(sp.Abs),
            np.sign: _function(sp.sign), np.maximum: _function(sp.Max), np.minimum: _function(sp.Min),
            np.fmax: _function(sp.Max), np.fmin: _function(sp.Min)}


#: numpy's ufuncs a :class:`Traced` answers, and the sympy step each becomes (built unevaluated, after folding the
#: identities that are exact in floating point: x + 0, x − 0, x − x, x · 1, x · 0, x / 1, constants computed in
#: double precision as the compiled code computes them).
UFUNCS = _ufunc_table()

_COMPARE = {np.less: sp.Lt, np.less_equal: sp.Le, np.greater: sp.Gt, np.greater_equal: sp.Ge, np.equal: sp.Eq,
            np.not_equal: sp.Ne}

_HERE = str(Path(__file__).resolve())


def _where() -> str:
    """The source line that asked (the first frame outside this module and numpy): ``file line N (function)``."""
    frame = sys._getframe(1)
    while frame is not None:
        name = frame.f_code.co_filename
        if str(Path(name).resolve()) != _HERE and "numpy" not in Path(name).parts:
            return f"{Path(name).name} line {frame.f_lineno} ({frame.f_code.co_name})"
        frame = frame.f_back
    return "an unknown line"  # pragma: no cover


def expression(x):
    """The sympy expression of a traced or plain number.

    Parameters
    ----------
    x : Traced, bool, int, float or sympy expression

    Returns
    -------
    sympy expression
    """
    if isinstance(x, Traced):
        return x.expr
    if isinstance(x, (bool, np.bool_, int, np.integer, float, np.floating)):
        return _float(float(x))
    if isinstance(x, sp.Basic):
        return x
    raise Untraceable(f"meets {type(x).__name__} {x!r} where a real number was expected")


def _value(x):
    if isinstance(x, Traced):
        return x.value
    if isinstance(x, (bool, np.bool_, int, np.integer, float, np.floating)):
        return np.float64(x)
    return None


def _fixed(x) -> bool:
    return x.fixed if isinstance(x, Traced) else True


class Program:
    """Straight-line code: ``let(expr)`` names a value (``w<k>``), identical expressions once; and the branches on
    the state the traced code took (:attr:`guards`).

    Parameters
    ----------
    prefix : str
        The steps' names (``w`` → ``w0``, ``w1``, …).
    times : ndarray, optional
        The times of the samples the state's values are given at (:meth:`traced`): the nominal run's steps; a
        branch on the state must go the same way at all of them.

    Attributes
    ----------
    steps : list of (sympy Symbol, sympy expression)
        In order: a step uses earlier steps only.
    guards : list of (sympy relational, str)
        The conditions the traced code found true at every sample, and where each comparison is in the source.
    """

    def __init__(self, prefix: str = "w", times=None):
        self.prefix, self.times, self.steps, self.guards, self._memo = prefix, times, [], [], {}

    def let(self, expr):
        """A symbol bound to ``expr`` (a new step unless an identical one exists; an atom is returned as it is)."""
        expr = sp.sympify(expr)
        if expr.is_Atom:
            return expr
        sym = self._memo.get(expr)
        if sym is None:
            sym = sp.Symbol(f"{self.prefix}{len(self.steps)}", real=True)
            self.steps.append((sym, expr))
            self._memo[expr] = sym
        return sym

    def traced(self, expr, value=None, fixed: bool = False) -> "Traced":
        """A :class:`Traced` input of this program: a symbol (``q[0]``, ``rt_law_p[3]``) or an expression.

        Parameters
        ----------
        expr : sympy expression
        value : float or ndarray, optional
            Its value (a parameter's), or its values at the samples (:attr:`times`); None: known only at run time.
        fixed : bool
            A constant (a parameter): a branch on it is not a guard.
        """
        value = None if value is None else (np.float64(value) if np.ndim(value) == 0 else np.asarray(value, float))
        return Traced(self.let(expr), self, value, fixed)

    def guard(self, condition, where: str) -> None:
        """Record a branch on the state: ``condition`` held at every sample (``where``: its source line)."""
        if condition is sp.true:
            return
        if condition is sp.false:  # pragma: no cover - sympy disagreeing with the float comparison
            raise Untraceable(f"finds a comparison false that its values made true ({where})")
        self.guards.append((condition, where))

    def needed(self, outputs) -> list:
        """The steps ``outputs`` and the guards use, in order (the others dropped).

        Parameters
        ----------
        outputs : iterable of sympy expressions

        Returns
        -------
        list of (Symbol, expression)
        """
        defs = dict(self.steps)
        keep: set = set()
        stack = [sp.sympify(e) for e in outputs] + [g for g, _ in self.guards]
        while stack:
            for s in stack.pop().free_symbols:
                if s in defs and s not in keep:
                    keep.add(s)
                    stack.append(defs[s])
        return [(s, e) for s, e in self.steps if s in keep]


def _apply(program, ufunc, operands):
    """``ufunc(*operands)`` traced: one step, the value carried where every operand's is known."""
    values = [_value(x) for x in operands]
    value = None
    if all(v is not None for v in values):
        with np.errstate(all="ignore"):
            value = ufunc(*values)
    expr = program.let(UFUNCS[ufunc](*(expression(x) for x in operands)))
    return Traced(expr, program, value, all(_fixed(x) for x in operands))


class Traced:
    """A number in traced code: a sympy atom (a symbol naming a step, an input, or a constant) of a
    :class:`Program`, with its value where known (module docstring).

    Arithmetic and the ufuncs of :data:`UFUNCS` add steps; comparisons take a branch only on known values (and
    record it as a guard when the value is the state's at a sample); ``float()`` and ``int()`` are refused (a
    library taking floats cannot be traced).

    Parameters
    ----------
    expr : sympy expression
    program : Program
    value : numpy.float64, optional
    fixed : bool
        A constant: a branch on it is no guard.
    """

    __slots__ = ("expr", "program", "value", "fixed")
    __hash__ = None

    def __init__(self, expr, program, value=None, fixed: bool = False):
        self.expr, self.program, self.value, self.fixed = expr, program, value, fixed

    def __repr__(self) -> str:
        return f"Traced({self.expr}, value={self.value})"

    def _binary(self, other, ufunc, reflected=False):
        if isinstance(other, np.ndarray):
            return NotImplemented
        return _apply(self.program, ufunc, (other, self) if reflected else (self, other))

    def __add__(self, o):
        return self._binary(o, np.add)

    def __radd__(self, o):
        return self._binary(o, np.add, True)

    def __sub__(self, o):
        return self._binary(o, np.subtract)

    def __rsub__(self, o):
        return self._binary(o, np.subtract, True)

    def __mul__(self, o):
        return self._binary(o, np.multiply)

    def __rmul__(self, o):
        return self._binary(o, np.multiply, True)

    def __truediv__(self, o):
        return self._binary(o, np.true_divide)

    def __rtruediv__(self, o):
        return self._binary(o, np.true_divide, True)

    def __pow__(self, o):
        return self._binary(o, np.power)

    def __rpow__(self, o):
        return self._binary(o, np.power, True)

    def __neg__(self):
        return _apply(self.program, np.negative, (self,))

    def __pos__(self):
        return self

    def __abs__(self):
        return _apply(self.program, np.absolute, (self,))

    @property
    def real(self):
        """Itself: traced numbers are real."""
        return self

    @property
    def imag(self):
        """0.0: traced numbers are real."""
        return 0.0

    def conjugate(self):
        """Itself: traced numbers are real."""
        return self

    def _compare(self, other, ufunc):
        if isinstance(other, np.ndarray):
            return NotImplemented
        where = _where()
        va, vb = _value(self), _value(other)
        if va is None or vb is None:
            raise Untraceable(f"branches on a value known only at run time (a comparison at {where})")
        sides = np.asarray(ufunc(va, vb))
        outcome = bool(sides.flat[0])
        if (sides != outcome).any():
            j = int(np.flatnonzero(sides != outcome)[0])
            times = self.program.times
            at = f"t = {times[j]:.6g} s" if times is not None and j < len(times) else f"sample {j}"
            raise Untraceable(f"takes both sides of a branch on the state along the nominal run (a comparison at "
                              f"{where}: one side at its start, the other at {at})")
        if not (self.fixed and _fixed(other)):
            relation = _COMPARE[ufunc](self.expr, expression(other), evaluate=False)
            self.program.guard(relation if outcome else sp.Not(relation), where)
        return outcome

    def __lt__(self, o):
        return self._compare(o, np.less)

    def __le__(self, o):
        return self._compare(o, np.less_equal)

    def __gt__(self, o):
        return self._compare(o, np.greater)

    def __ge__(self, o):
        return self._compare(o, np.greater_equal)

    def __eq__(self, o):
        return self._compare(o, np.equal)

    def __ne__(self, o):
        return self._compare(o, np.not_equal)

    def __bool__(self):
        return self._compare(0.0, np.not_equal)

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if method != "__call__" or kwargs or (ufunc not in UFUNCS and ufunc not in _COMPARE):
            known = ", ".join(sorted(u.__name__ for u in UFUNCS))
            raise Untraceable(f"calls numpy's {ufunc.__name__}{'' if method == '__call__' else '.' + method} "
                              f"(at {_where()}), which the C export does not translate (it translates {known} and "
                              "Python's arithmetic)")
        if any(isinstance(x, np.ndarray) for x in inputs):  # with an array: element by element
            return _each(ufunc, inputs)
        if ufunc in _COMPARE:
            first = next(x for x in inputs if isinstance(x, Traced))
            a, b = inputs
            return first._compare(b, ufunc) if a is first else first._compare(a, _REVERSED[ufunc])
        return _apply(self.program, ufunc, inputs)


_REVERSED = {np.less: np.greater, np.less_equal: np.greater_equal, np.greater: np.less,
             np.greater_equal: np.less_equal, np.equal: np.equal, np.not_equal: np.not_equal}

# numpy's object loops call a method named as the ufunc (np.cos(array of Traced) → x.cos())
for _ufunc in UFUNCS:
    if not hasattr(Traced, _ufunc.__name__):
        setattr(Traced, _ufunc.__name__, (lambda u: lambda self, *others: u(self, *others))(_ufunc))


# --------------------------------------------------------------------------- #
# rebuilding a function over traced globals
# --------------------------------------------------------------------------- #
class _NumpyForTracing(types.ModuleType):
    """numpy, except the attributes set on it (:func:`numpy_for_tracing`)."""

    def __getattr__(self, name):
        return getattr(np, name)


def _maker(real, fill):
    def make(shape, dtype=None, *args, **kwargs):
        if dtype is not None and np.dtype(dtype).kind in "biu":  # integers and flags stay numbers
            return real(shape, dtype, *args, **kwargs)
        return np.full(shape, fill, dtype=object)
    make.__name__ = real.__name__
    return make


def _like(real, fill):
    def make(a, dtype=None, *args, **kwargs):
        if dtype is not None and np.dtype(dtype).kind in "biu":
            return real(a, dtype, *args, **kwargs)
        return np.full(np.shape(a), fill, dtype=object)
    make.__name__ = real.__name__
    return make


def _each(ufunc, args):
    """``ufunc`` element by element over arrays holding traced numbers (an object array of the results)."""
    boxed = [x if isinstance(x, np.ndarray) else np.array(x, dtype=object) for x in args]  # no Traced at the top
    return np.frompyfunc(ufunc, ufunc.nin, 1)(*boxed)


def _elementwise(ufunc):
    def call(*args, **kwargs):
        if not kwargs and any(isinstance(a, np.ndarray) and a.dtype == object for a in args):
            return _each(ufunc, args)
        return ufunc(*args, **kwargs)
    call.__name__ = ufunc.__name__
    return call


_NUMPY = None


def numpy_for_tracing():
    """numpy as traced code sees it (module docstring): ``empty``, ``zeros``, ``ones``, ``full``, ``eye``,
    ``identity`` and the ``*_like`` makers make object arrays (an integer or boolean dtype is kept), and the ufuncs
    of :data:`UFUNCS` apply element by element to object arrays (each element a :class:`Traced` or a float).

    Returns
    -------
    module
    """
    global _NUMPY
    if _NUMPY is None:
        shim = _NumpyForTracing("numpy")
        shim.empty, shim.zeros, shim.ones = _maker(np.empty, 0.0), _maker(np.zeros, 0.0), _maker(np.ones, 1.0)
        shim.empty_like, shim.zeros_like = _like(np.empty_like, 0.0), _like(np.zeros_like, 0.0)
        shim.ones_like = _like(np.ones_like, 1.0)
        shim.full = lambda shape, fill, dtype=None: np.full(shape, fill, dtype=object)
        shim.eye = lambda N, M=None, k=0, dtype=None: np.eye(N, M, k).astype(object)
        shim.identity = lambda n, dtype=None: np.identity(n).astype(object)
        for name in dir(np):
            value = getattr(np, name)
            if isinstance(value, np.ufunc) and value in UFUNCS:
                setattr(shim, name, _elementwise(value))
        _NUMPY = shim
    return _NUMPY


def _min(*args, **kwargs):
    if len(args) == 2 and not kwargs and any(isinstance(a, Traced) for a in args):
        return np.minimum(*args)
    return builtins.min(*args, **kwargs)


def _max(*args, **kwargs):
    if len(args) == 2 and not kwargs and any(isinstance(a, Traced) for a in args):
        return np.maximum(*args)
    return builtins.max(*args, **kwargs)


def _names(code) -> set:
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _names(const)
    return names


def _rebuildable(value, module: str) -> bool:
    """A numba dispatcher (its Python function), or a plain function of the traced function's own module."""
    if isinstance(getattr(value, "py_func", None), types.FunctionType):
        return True
    return isinstance(value, types.FunctionType) and value.__module__ == module


def traceable(fn, rebuilt: dict | None = None):
    """``fn`` (a Python function or a numba dispatcher) rebuilt to run on traced numbers (module docstring).

    Parameters
    ----------
    fn : callable
    rebuilt : dict, optional
        Functions rebuilt so far (shared by the calls of one trace, so each is rebuilt once).

    Returns
    -------
    callable
        ``fn`` itself where it has no Python code (a builtin, a callable object).
    """
    rebuilt = {} if rebuilt is None else rebuilt
    py = getattr(fn, "py_func", fn)
    if not isinstance(py, types.FunctionType):
        return fn
    if py in rebuilt:
        return rebuilt[py]
    scope = dict(py.__globals__)
    cells = None
    if py.__closure__ is not None:
        cells = []
        for cell in py.__closure__:
            try:
                content = cell.cell_contents
            except ValueError:  # an empty cell
                cells.append(cell)
                continue
            cells.append(types.CellType(numpy_for_tracing() if content is np else content))
        cells = tuple(cells)
    new = types.FunctionType(py.__code__, scope, py.__name__, py.__defaults__, cells)
    new.__kwdefaults__ = py.__kwdefaults__
    rebuilt[py] = new
    if cells is not None:
        for cell in cells:
            try:
                content = cell.cell_contents
            except ValueError:
                continue
            if _rebuildable(content, py.__module__):
                cell.cell_contents = traceable(content, rebuilt)
    for name in _names(py.__code__):
        if name in scope:
            value = scope[name]
            if value is np:
                scope[name] = numpy_for_tracing()
            elif _rebuildable(value, py.__module__):
                scope[name] = traceable(value, rebuilt)
    scope.setdefault("min", _min)
    scope.setdefault("max", _max)
    return new


# --------------------------------------------------------------------------- #
# what the export traces
# --------------------------------------------------------------------------- #
#: The slots of a robot's :class:`~robustrack.symbolic.KernelForm` and the rigid-body algorithm each runs
#: (:mod:`robustrack.compiled.rigid_body`): M by CRBA, Q by RNEA, a frame constraint's rows.
RIGID_BODY = {"mass": "crba", "force": "given_force", "ab": "frame_rows"}


def rigid_body(slot: str, rebuilt: dict | None = None):
    """The rigid-body algorithm of a robot's form slot (:data:`RIGID_BODY`), rebuilt to run on traced numbers.

    Parameters
    ----------
    slot : str
        ``"mass"``, ``"force"`` or ``"ab"``.
    rebuilt : dict, optional
        See :func:`traceable`.

    Returns
    -------
    callable
        ``crba(md, q, M)``, ``given_force(md, q, qd, Q)`` or ``frame_rows(q, qd, c, targets, out, residuals)``.
    """
    from ..compiled import rigid_body as kernels

    return traceable(getattr(kernels, RIGID_BODY[slot]), rebuilt)


def robot_rows(values) -> tuple:
    """``(n, m)`` of a frame constraint's packed data (the robot followed by its program,
    :mod:`robustrack.plants.robot_data`).

    Parameters
    ----------
    values : ndarray
    """
    from ..plants.robot_data import N_AT, SIZE_AT

    size = int(values[SIZE_AT])
    return int(values[N_AT]), int(values[size + 1])
