"""A model written once, as its symbolic form; the numpy evaluation is made from it.

The seed plants and their constraints (:mod:`robustrack.plants.examples`), the n-link pendulum and its
energy requirement (:mod:`robustrack.plants.pendulum`) are each written once: the sympy expressions of
M(q, t), Q(q, q̇, t) (a Lagrangian, docs/theory/fundamental-equation.md) or the raw rows φ(q, t), ψ(q, q̇, t)
of a constraint, from which A, b follow by differentiation (W 2.2). Both backends are made from that
one source:

* the compiled loop generates its kernels from the :class:`~robustrack.symbolic.SymbolicForm`
  (``codegen()``, :mod:`robustrack.compiled.loop`);
* the numpy evaluation (``mass_matrix``, ``given_force``, ``matrices``, ``residual``) is the same
  expressions through :func:`sympy.lambdify` (``cse=True``, as :class:`~robustrack.plants.LagrangianPlant`
  and the sympy-built constraints do). Parameter values stay arguments, so sampled plants (parameter
  arrays broadcasting against the batch axes, docs/guide/own-plant.md) evaluate in one call and
  ``replace`` lambdifies nothing.

The generated numpy text is kept once per machine (:func:`robustrack._lambdify.module_source`, a file
``models/rtk_numpy_<digest>.py`` of the cache folder :func:`robustrack._generated.cache_root`, which
``ROBUSTRACK_CACHE_DIR`` sets): the first process that evaluates a structure imports sympy and writes
it; later processes import the file, without sympy (a warm ``robustrack run``). The digest is of the
form's key, the build's (and raw rows') source, n, this generator, :mod:`robustrack._lambdify`,
:mod:`robustrack.constraints` (the differentiation of raw rows) and sympy's release: any change generates
a new file. A damaged file is generated again; where the folder cannot be written the text is
executed in memory (the same text: the same numbers), each process generating it again.

Nothing holds a lambdified function: plants and constraints pickle as their parameters and their
module-level source functions (a campaign's worker processes, with or without cloudpickle).
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import inspect
from pathlib import Path
from typing import Callable

import numpy as np

from .. import _lambdify, constraints
from .._generated import cache_root, load
from .._lambdify import evaluate, module_source
from .._validate import as_float_array
from ..constraints import FunctionConstraint
from ..errors import ParameterError
from ..symbolic import SymbolicForm, built
from .base import Plant

__all__ = ["SymbolicPlant", "form_constraint", "scalar_values"]

#: (form key, part) → the numpy functions of that structure, loaded (or generated) on first use in this process.
_FUNCTIONS: dict = {}


def _check_names(key, state, params):
    """A parameter named like a state symbol would be the same argument twice: refuse the model."""
    clash = {p.name for p in params} & {s.name for s in state}
    if clash:  # pragma: no cover - a model written with such names
        raise AssertionError(f"{key}: parameter names {sorted(clash)} are the state's names (q0…, qd0…, t).")


@functools.lru_cache(maxsize=None)
def _printer():
    """sympy's numpy printer writing x³ and x⁴ as products (made on first use: sympy is imported lazily).

    numpy raises an array to the power 3 or 4 through ``pow`` per element, ~0.2 µs each (x⁴ of 1000
    states: 200 µs, against 1 µs for x·x·x·x: the energy requirement's α = c (L1 θ̇1)⁴ made the
    pendulum's b 8× slower than written by hand). Products differ from ``pow`` by rounding only. (sympy's
    own ``create_expand_pow_optimization`` is not used: its unevaluated products confuse ``cse``.)
    """
    from sympy.printing.numpy import NumPyPrinter
    from sympy.printing.precedence import PRECEDENCE

    class ProductPowers(NumPyPrinter):
        def _print_Pow(self, expr, rational=False):
            if expr.exp.is_Integer and 3 <= int(expr.exp) <= 4:
                base = self.parenthesize(expr.base, PRECEDENCE["Pow"], strict=False)
                return "(" + "*".join([base] * int(expr.exp)) + ")"
            return super()._print_Pow(expr, rational=rational)

    return ProductPowers


def _module_source(key: str, functions) -> str:
    """The module of ``(name, args, exprs)`` functions: common subexpressions once, x³ and x⁴ as products
    (:func:`_printer`), each entry list row-major."""
    return module_source([(name, args, list(exprs)) for name, args, exprs in functions], repr(key),
                         modules="numpy", cse=True, printer=_printer())


@functools.lru_cache(maxsize=None)
def _generator_digest() -> bytes:
    """What every generated text depends on besides the model: this file, :mod:`robustrack._lambdify`, the
    differentiation of raw rows (:mod:`robustrack.constraints`) and sympy's release (read, not imported)."""
    import importlib.util

    files = [__file__, _lambdify.__file__, constraints.__file__]
    spec = importlib.util.find_spec("sympy")
    if spec is not None and spec.origin:
        files.append(str(Path(spec.origin).with_name("release.py")))
    sha = hashlib.sha256()
    for file in files:
        try:
            sha.update(Path(file).read_bytes())
        except OSError:  # pragma: no cover - no readable source (a frozen install)
            sha.update(file.encode())
    return sha.digest()


@functools.lru_cache(maxsize=None)
def _source_digest(function) -> str:
    """The hash of a build function's source (of a ``functools.partial``'s function), read once per process."""
    function = getattr(function, "func", function)
    try:
        source = inspect.getsource(function)
    except (OSError, TypeError):  # pragma: no cover - no source: its qualified name
        source = f"{getattr(function, '__module__', '')}.{getattr(function, '__qualname__', repr(function))}"
    return hashlib.sha256(source.encode()).hexdigest()[:12]


def _generated_file(key: str, part: str, n: int, sources) -> Path:
    """The cached file of a structure's numpy functions: ``models/rtk_numpy_<digest>.py`` of the cache folder.

    Parameters
    ----------
    key : str
        The form's key.
    part : str
        ``"plant"`` or ``"constraint"``.
    n : int
        The coordinates.
    sources : sequence of callable
        The functions the expressions are built by (their source is part of the digest).

    Returns
    -------
    pathlib.Path
    """
    text = repr((key, part, n, tuple(_source_digest(s) for s in sources)))
    digest = hashlib.sha256(_generator_digest() + text.encode()).hexdigest()[:20]
    return cache_root() / "models" / f"rtk_numpy_{digest}.py"


def _functions(key: str, part: str, n: int, sources, generate, names) -> dict:
    """The functions ``names`` of a structure: from this process, the cache folder, or ``generate()``."""
    funcs = _FUNCTIONS.get((key, part))
    if funcs is None:
        file = _generated_file(key, part, n, sources)
        module = load(file, f"robustrack_models_{file.stem}", generate, names=names)
        funcs = _FUNCTIONS[(key, part)] = {name: getattr(module, name) for name in names}
    return funcs


def _plant_functions(key: str, build: Callable, n: int):
    """``(M(q, t, p), Q(q, q̇, t, p))`` of a plant's form, loaded or generated once per key."""

    def generate():
        (q, qd, t), (M, Q, params) = built(key, build, n)  # shared with the compiled loop's code generator
        _check_names(key, (*q, *qd, t), params)
        return _module_source(key, [("M", [*q, t, *params], M), ("Q", [*q, *qd, t, *params], Q)])

    funcs = _functions(key, "plant", n, (build,), generate, ("M", "Q"))
    return funcs["M"], funcs["Q"]


def _constraint_functions(key: str, build: Callable, raw: Callable, n: int):
    """``{"A", "b", "residual"}`` of a constraint's form and raw rows, functions of (q, q̇, t, p), once per key."""

    def generate():
        (q, qd, t), (A, b, params) = built(key, build, n)  # shared with the compiled loop's code generator
        _check_names(key, (*q, *qd, t), params)
        rows, raw_params = raw(q, qd, t)
        if tuple(raw_params) != tuple(params):  # pragma: no cover - a model written inconsistently
            raise AssertionError(f"{key}: the raw rows take parameters {raw_params}, the form {params}.")
        args = [*q, *qd, t, *params]
        return _module_source(key, [("A", args, A), ("b", args, b), ("residual", args, rows)])

    return _functions(key, "constraint", n, (build, raw), generate, ("A", "b", "residual"))


def scalar_values(values) -> np.ndarray | None:
    """The parameter values as one float vector, or None when any is an array (sampled plants: no form).

    Parameters
    ----------
    values : sequence of float or ndarray

    Returns
    -------
    ndarray or None
    """
    if any(np.ndim(v) != 0 for v in values):
        return None
    return np.array([float(v) for v in values], dtype=float)


@dataclasses.dataclass(frozen=True, eq=False)
class SymbolicPlant(Plant):
    """A plant whose M and Q are written once, as a symbolic form (W 2.2 step 1).

    Subclasses (frozen dataclasses) implement :meth:`form_source`; ``mass_matrix``, ``given_force``
    and ``codegen`` follow from it. Parameter values may be arrays broadcasting against the batch
    axes of ``q`` (the batch contract of :class:`~robustrack.plants.Plant`).
    """

    def form_source(self) -> tuple:
        """The model's one source: ``(key, build, values)``.

        Returns
        -------
        tuple
            ``key`` (str): the structure (:attr:`robustrack.symbolic.SymbolicForm.key`);
            ``build(q, qd, t) -> (M, Q, params)``, a module-level function (or a ``functools.partial``
            of one) building sympy Matrices; ``values``: one value per parameter symbol, in order, each a
            float or an array broadcasting against the batch axes.
        """
        raise NotImplementedError

    def _coordinate_array(self, x, name: str) -> np.ndarray:
        """``x`` as an array whose last axis holds the n coordinates (complex kept: the complex step)."""
        arr = as_float_array(x, name)
        if arr.ndim < 1 or arr.shape[-1] != self.n:
            raise ParameterError(f"`{name}` must have shape (..., {self.n}); got shape {arr.shape}.")
        return arr

    @functools.cached_property
    def _source(self) -> tuple:
        """:meth:`form_source`, once per plant (the plant is frozen); scalar values as Python floats."""
        key, build, values = self.form_source()
        return key, build, [float(v) if np.ndim(v) == 0 else v for v in values]

    def mass_matrix(self, q, t=0.0) -> np.ndarray:
        """M(q, t), shape ``(..., n, n)``, evaluated from the symbolic form."""
        key, build, values = self._source
        M = _plant_functions(key, build, self.n)[0]
        return evaluate(M, [self._coordinate_array(q, "q")], as_float_array(t, "t"), values, (self.n, self.n))

    def given_force(self, q, qd, t=0.0) -> np.ndarray:
        """Q(q, q̇, t), shape ``(..., n)``, evaluated from the symbolic form."""
        key, build, values = self._source
        Q = _plant_functions(key, build, self.n)[1]
        states = [self._coordinate_array(q, "q"), self._coordinate_array(qd, "qd")]
        return evaluate(Q, states, as_float_array(t, "t"), values, (self.n,))

    def codegen(self) -> SymbolicForm | None:
        """The symbolic form for the compiled tracking loop (:mod:`robustrack.symbolic`).

        Returns
        -------
        SymbolicForm or None
            The structure's key, the parameter values and the build of :meth:`form_source`; None when
            a parameter is an array (sampled plants).
        """
        return self._form

    @functools.cached_property
    def _form(self) -> SymbolicForm | None:
        """:meth:`codegen`, once per plant (the plant is frozen, the form's values read-only): a campaign sample's
        loop asks for it several times."""
        key, build, values = self._source
        values = scalar_values(values)
        return None if values is None else SymbolicForm(key, values, build)


# ----------------------------------------------------------------------------- constraints
class _Part:
    """One numpy function of a constraint's form (``"A"``, ``"b"`` or ``"residual"``) at given values.

    A module-level class holding only the source functions, the values and the names, so the
    constraint pickles with the standard library; the lambdified function is looked up by key.
    """

    __slots__ = ("key", "build", "raw", "values", "part", "tail")

    def __init__(self, key, build, raw, values, part, tail):
        self.key, self.build, self.raw, self.values, self.part, self.tail = key, build, raw, values, part, tail

    def __call__(self, q, qd, t):
        f = _constraint_functions(self.key, self.build, self.raw, q.shape[-1])[self.part]
        return evaluate(f, [q, qd], t, self.values, self.tail)

    def __reduce__(self):
        return (_Part, (self.key, self.build, self.raw, self.values, self.part, self.tail))


def form_constraint(key: str, build: Callable, raw: Callable, values, *, n: int, m: int) -> FunctionConstraint:
    """A constraint written once: its raw rows φ/ψ and the form built from them, evaluated in numpy.

    Parameters
    ----------
    key : str
        The structure (:attr:`robustrack.symbolic.SymbolicForm.key`).
    build : callable
        ``build(q, qd, t) -> (A, b, params)``: A (m × n) and b (m × 1), as sympy Matrices, derived from
        the raw rows (``robustrack.constraints._holonomic_acceleration``, ``_nonholonomic_acceleration``).
    raw : callable
        ``raw(q, qd, t) -> (rows, params)``: the m raw rows φ / ψ and the same parameter symbols.
    values : sequence of float or ndarray
        One value per parameter, in order; arrays broadcast against the batch axes of ``q``.
    n, m : int
        Coordinates and rows.

    Returns
    -------
    FunctionConstraint
        ``matrices`` and ``residual`` evaluated from the form; ``codegen()`` is the form (None when a
        value is an array).
    """
    values = tuple(float(v) if np.ndim(v) == 0 else v for v in values)
    parts = {part: _Part(key, build, raw, values, part, tail)
             for part, tail in (("A", (m, n)), ("b", (m,)), ("residual", (m,)))}
    scalars = scalar_values(values)
    form = None if scalars is None else SymbolicForm(key, scalars, build)
    return FunctionConstraint(parts["A"], parts["b"], n=n, m=m, residual=parts["residual"], codegen=form)
