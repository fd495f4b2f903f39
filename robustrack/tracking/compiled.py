"""The compiled tracking loop: numba kernels generated from the plants' symbolic forms.

What is compiled
----------------
For a nominal plant, an actual plant and a constraint that each give a
:class:`~robustrack.symbolic.SymbolicForm`, this module writes ONE Python module:
functions generated from the sympy expressions (M, Q of both plants, ∂M/∂q, ∂Q/∂q,
∂Q/∂q̇ of the actual plant, ∂M/∂q of the nominal one, A and b of the constraint,
each with common subexpressions eliminated) followed by the kernels of
:mod:`robustrack.tracking._template` (the fundamental equation, the controlled
system, its exact Jacobian, the compensators). Every function is compiled with
``numba.njit(cache=True)``. Parameter values (masses, lengths, gains) are runtime
arguments, so one module serves every plant of a structure: the nominal and all its
perturbed actual plants, every compensator and control function.

Why numba (measured in ``benchmarks/bench_backends.py``; numbers in ``docs/``): the
loop is driven by scipy's integrators, which call the right-hand side from Python
thousands of times, so the cost that matters is one call from Python. numba's
dispatcher costs about a microsecond; a CasADi ``Function`` called from Python costs
several, and its C code generation needs a compiler at run time, which numba does
not. sympy's ``lambdify`` alone (no compiler) stays at Python speed.

The cache
---------
Modules live in :func:`cache_dir` (``$ROBUSTRACK_CACHE_DIR``, else
``$XDG_CACHE_HOME/robustrack``, else ``~/.cache/robustrack``), named by a hash of the
structure keys and of this code generator and template, so a change to either
makes new modules. numba keeps their machine code beside them (``__pycache__``).
The first run of a structure generates and compiles (seconds); later runs load.
The kernels that call no generated function (linear algebra, the fundamental
equation, actuators, compensators, integrator helpers) live in one common module
(``rtk_common_*.py``), compiled once per machine and imported by every structure's
module, which compiles only its structure-specific kernels.
Two processes starting at once may both generate: each writes to a temporary file
and renames it into place (atomic), and numba writes its cache files the same way,
so they never see a half-written file.

When nothing is compiled
------------------------
A plant or constraint without a symbolic form (a user's Python callable), a
compensator or control function that is not built in, or numba missing: the loop
runs on the numpy reference (:mod:`robustrack.tracking.rhs`) and
:func:`compiled_loop` says why in one line (:func:`fallback_reason`).
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import inspect
import os
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np

__all__ = ["CompiledLoop", "compiled_loop", "fallback_reason", "cache_dir", "pack_compensator"]

_HERE = Path(__file__).resolve().parent
_TEMPLATE = _HERE / "_template.py"
_LOCK = threading.Lock()
_LOADED: dict[str, object] = {}

# compensator and control-function kinds, as in _template.py
_C_NONE, _C_GSS, _C_GD, _C_GDBAR, _C_LINEAR = 0, 1, 2, 3, 4
_G_SIGN, _G_SATURATION, _G_TANH, _G_POWER = 0, 1, 2, 3


def cache_dir() -> Path:
    """Where compiled modules are kept (see the module docstring).

    Returns
    -------
    pathlib.Path
        ``$ROBUSTRACK_CACHE_DIR``, else ``$XDG_CACHE_HOME/robustrack``, else
        ``~/.cache/robustrack``; a subfolder per Python and numba version.
    """
    root = os.environ.get("ROBUSTRACK_CACHE_DIR")
    if not root:
        xdg = os.environ.get("XDG_CACHE_HOME")
        root = os.path.join(xdg, "robustrack") if xdg else os.path.join(Path.home(), ".cache", "robustrack")
    import numba

    return Path(root) / f"kernels-py{sys.version_info[0]}{sys.version_info[1]}-numba{numba.__version__}"


# --------------------------------------------------------------------------- #
# compensators and control functions: kind + parameter vector
# --------------------------------------------------------------------------- #
def _pack_f(f):
    """(kind, [α_c, p]) of a built-in control function; None for a user's g."""
    from ..controllers import functions as fn

    if f.g is fn._sign:
        return _G_SIGN, [0.0, 0.0]
    if f.g is fn._saturation:
        return _G_SATURATION, [0.0, 0.0]
    if f.g is np.tanh:
        return _G_TANH, [0.0, 0.0]
    if isinstance(f.g, fn._Power):
        return _G_POWER, [float(f.g.alpha_c), float(f.g.p)]
    return None


def pack_compensator(compensator, n: int):
    """``(kind, g_kind, params)`` of a built-in compensator for the kernels; None otherwise.

    Parameters
    ----------
    compensator : Compensator or None
        None packs as "no compensation" (u = 0).
    n : int
        Number of coordinates (per-coordinate gains are broadcast to n).

    Returns
    -------
    tuple (int, int, ndarray) or None
        None for a compensator class or control function the kernels do not know
        (a user's subclass or g): the loop then runs on numpy.
    """
    from ..controllers import baselines, compensators as cm

    if compensator is None:
        return _C_NONE, 0, np.zeros(1)
    cls = type(compensator)
    f = getattr(compensator, "f", None)
    g = _pack_f(f) if f is not None else (0, [0.0, 0.0])
    if g is None:
        return None
    gk, gp = g
    if cls in (cm.GSS, cm.SlidingMode):
        K = np.broadcast_to(np.asarray(compensator.K, dtype=float), (n,))
        return _C_GSS, gk, np.array([compensator._gain, f.eps, *gp, *K])
    if cls in (cm.GD, cm.LeitmannCorless):
        return _C_GD, gk, np.array([compensator._gain, f.eps, *gp, compensator.Ki, compensator.Kd])
    if cls in (cm.GDBar, cm.LyapunovRedesign):
        return _C_GDBAR, gk, np.array([compensator.sigma, f.eps, *gp, compensator.k, compensator._power])
    if cls is baselines.ComputedTorque:
        Kp = np.broadcast_to(np.asarray(compensator.Kp, dtype=float), (n,))
        Kd = np.broadcast_to(np.asarray(compensator.Kd, dtype=float), (n,))
        return _C_LINEAR, 0, np.hstack([np.diag(Kp), np.diag(Kd)]).reshape(-1)
    if cls is baselines.LQR:
        return _C_LINEAR, 0, np.asarray(compensator.gain_matrix(n), dtype=float).reshape(-1)
    return None


# --------------------------------------------------------------------------- #
# the compiled loop of one structure
# --------------------------------------------------------------------------- #
@dataclass(frozen=True)
class CompiledLoop:
    """The kernels of one (nominal, actual, constraint) structure and their parameters.

    Attributes
    ----------
    module : module
        The compiled functions (``nominal_rhs``, ``controlled_rhs``, ``controlled_jac``,
        ``uncompensated_rhs``, ``bdf_advance``, ``dop853_run``, …).
    pn, pa, c : ndarray
        Parameter values of the nominal plant, the actual plant and the constraint.
    m : int
        Constraint rows (0: no constraint).
    act : ndarray ((n + 1) × k)
        The actuators ``[B; τ_max]`` (:meth:`~robustrack.tracking.actuators.Actuators.packed`);
        k = 0 columns without actuators (the kernels then skip every actuator branch).
    """

    module: object
    pn: np.ndarray
    pa: np.ndarray
    c: np.ndarray
    m: int
    act: np.ndarray


def fallback_reason(nominal, actual, constraint, actuators=None) -> str | None:
    """Why the loop of these objects cannot be compiled (None if it can).

    Parameters
    ----------
    nominal, actual : Plant
    constraint : Constraint or None
    actuators : Actuators, optional
        A callable input matrix B(q, t) has no compiled form.

    Returns
    -------
    str or None
        One line naming the object without a symbolic form, or numba missing.
    """
    for what, obj in (("nominal plant", nominal), ("actual plant", actual), ("constraint", constraint)):
        if obj is not None and _form(obj) is None:
            return f"the {what} {type(obj).__name__} has no symbolic form"
    if actuators is not None and actuators.B is None:
        return "the actuators' input matrix B(q, t) is a Python callable"
    try:
        import numba  # noqa: F401
    except ImportError:  # pragma: no cover - numba is a dependency
        return "numba is not installed"
    return None


def _form(obj):
    codegen = getattr(obj, "codegen", None)
    return codegen() if callable(codegen) else None


def compiled_loop(nominal, actual, constraint, actuators=None) -> CompiledLoop | None:
    """Load (or generate, compile and cache) the kernels for these plants and constraint.

    Parameters
    ----------
    nominal, actual : Plant
        The nominal model and the actual plant (same coordinates).
    constraint : Constraint or None
        The stacked constraint of the nominal controller (None: unconstrained).
    actuators : Actuators, optional
        Constant input matrix and limits, passed to the kernels at run time (the same
        module serves every B; none: unactuated).

    Returns
    -------
    CompiledLoop or None
        None when :func:`fallback_reason` gives a reason.
    """
    if fallback_reason(nominal, actual, constraint, actuators) is not None:
        return None
    fn, fa = _form(nominal), _form(actual)
    fc = _form(constraint) if constraint is not None else None
    common = _load("common_" + _module_key("common"), _generate_common)
    key = _module_key(nominal.n, *(_form_key(f) for f in (fn, fa, fc)))
    module = _load(key, lambda: _generate(nominal.n, fn, fa, fc, common.__name__))
    m = int(constraint.m) if constraint is not None else 0
    c = fc.values if fc is not None else np.zeros(1)
    act = np.zeros((nominal.n + 1, 0)) if actuators is None else actuators.packed(nominal.n)
    return CompiledLoop(module, np.array(fn.values), np.array(fa.values), np.array(c), m, act)


def _form_key(form):
    """A form's key and the source of the code that builds its expressions (so an edit recompiles)."""
    if form is None:
        return None
    build = getattr(form.build, "func", form.build)
    try:
        return form.key, _source_digest(build)
    except TypeError:  # an unhashable callable: not cached
        return form.key, _source_digest.__wrapped__(build)


@functools.lru_cache(maxsize=None)
def _source_digest(build) -> str:
    """The hash of a build function's source, read once per process (every tracked sample asks for it)."""
    try:
        source = inspect.getsource(build)
    except (OSError, TypeError):
        source = repr(build)
    return hashlib.sha256(source.encode()).hexdigest()[:12]


@functools.lru_cache(maxsize=1)
def _generator_digest() -> bytes:
    """The template's and this generator's source, hashed once per process."""
    return hashlib.sha256(_TEMPLATE.read_bytes() + Path(__file__).read_bytes()).digest()


def _module_key(n, *keys) -> str:
    h = hashlib.sha256()
    h.update(_generator_digest())
    h.update(repr((n, keys)).encode())
    return h.hexdigest()[:20]


def _load(key: str, generate):
    """The module ``rtk_{key}.py`` of the cache, written by ``generate()`` if missing; imported once."""
    with _LOCK:
        if key in _LOADED:
            return _LOADED[key]
        folder = cache_dir()
        path = folder / f"rtk_{key}.py"
        if not path.exists():
            folder.mkdir(parents=True, exist_ok=True)
            source = generate()
            fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".rtk_{key}", suffix=".tmp")
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(source)
            os.replace(tmp, path)
        name = f"robustrack_kernels_{key}"
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        _LOADED[key] = module
        return module


# --------------------------------------------------------------------------- #
# code generation (sympy; only on a cache miss)
# --------------------------------------------------------------------------- #
# the functions generated from a structure's symbolic forms (see _generate)
_GENERATED = ("nom_mass", "nom_force", "nom_mass_dq", "act_mass", "act_force", "act_mass_dq", "act_force_dq",
              "act_force_dqd", "con_ab")
_HEADER = '"""Generated by robustrack.tracking.compiled; do not edit."""\nimport numba as _nb\n'  # + the template's imports


@functools.lru_cache(maxsize=1)
def _split_template() -> tuple[str, str, tuple[str, ...]]:
    """The template's kernels in two parts: (common source, structure source, names the common part defines).

    A kernel that calls a generated function (``nom_mass`` …), directly or through another
    kernel, is structure-specific; every other statement (constants, linear algebra, the
    fundamental equation, actuators, compensators, BDF/DOP853 helpers) goes to ONE common
    module, compiled once per machine and shared by every structure. Before the split each
    structure's module compiled its own copy (what that cost: ``docs/results/performance.md``).
    """
    import ast

    text = _TEMPLATE.read_text(encoding="utf-8").split('"""', 2)[2]
    lines = text.splitlines()
    tree = ast.parse(text)
    calls = {node.name: {c.func.id for c in ast.walk(node) if isinstance(c, ast.Call) and isinstance(c.func, ast.Name)}
             for node in tree.body if isinstance(node, ast.FunctionDef)}
    specific = set(_GENERATED)
    grown = True
    while grown:  # the closure of "calls a structure-specific function"
        grown = False
        for name, callees in calls.items():
            if name not in specific and callees & specific:
                specific.add(name)
                grown = True
    common, structure, names = [], [], []
    start = 0
    for node in tree.body:  # each statement with the comment lines above it
        chunk = lines[start:node.end_lineno]
        start = node.end_lineno
        if isinstance(node, ast.FunctionDef) and node.name in specific:
            structure.append("\n".join(chunk))
            continue
        common.append("\n".join(chunk))
        if isinstance(node, ast.FunctionDef):
            names.append(node.name)
        elif isinstance(node, ast.Assign):
            names += [t.id for target in node.targets for t in ast.walk(target) if isinstance(t, ast.Name)]
    return "\n".join(common) + "\n", "\n".join(structure) + "\n", tuple(names)


def _jit(body: str) -> str:
    """``body`` with every top-level ``def`` compiled by ``numba.njit(cache=True)``."""
    out = []
    for line in body.splitlines():
        if line.startswith("def "):
            out.append("@_nb.njit(cache=True)")
        out.append(line)
    return "\n".join(out) + "\n"


def _generate_common() -> str:
    """The source of the common kernels (:func:`_split_template`)."""
    return _HEADER + _jit(_split_template()[0])


def _generate(n: int, fn, fa, fc, common: str) -> str:
    """The source of one structure's module: its generated functions, then the structure-specific kernels,
    which take everything else from the loaded common module ``common``."""
    import sympy as sp

    q = sp.symbols(f"q0:{n}", real=True)
    qd = sp.symbols(f"qd0:{n}", real=True)
    t = sp.Symbol("t", real=True)
    Mn, Qn, Pn = fn.build(q, qd, t)
    Ma, Qa, Pa = fa.build(q, qd, t)
    Mn, Qn, Ma, Qa = (sp.Matrix(X) for X in (Mn, Qn, Ma, Qa))
    qv, qdv = sp.Matrix(q), sp.Matrix(qd)
    state = (q, qd, t)
    mat = [(i, j) for i in range(n) for j in range(n)]
    vec = [(i,) for i in range(n)]
    cube = [(k, i, j) for k in range(n) for i in range(n) for j in range(n)]
    parts = [
        _function("nom_mass", "q, t, p, out", [(Mn[i, j], "out", ij) for i, j in mat for ij in [(i, j)]], state, Pn),
        _function("nom_force", "q, qd, t, p, out", [(Qn[i], "out", (i,)) for (i,) in vec], state, Pn),
        _function("nom_mass_dq", "q, t, p, out", [(Mn[i, j].diff(q[k]), "out", (k, i, j)) for k, i, j in cube],
                  state, Pn),
        _function("act_mass", "q, t, p, out", [(Ma[i, j], "out", (i, j)) for i, j in mat], state, Pa),
        _function("act_force", "q, qd, t, p, out", [(Qa[i], "out", (i,)) for (i,) in vec], state, Pa),
        _function("act_mass_dq", "q, t, p, out", [(Ma[i, j].diff(q[k]), "out", (k, i, j)) for k, i, j in cube],
                  state, Pa),
        _function("act_force_dq", "q, qd, t, p, out",
                  [(Qa[i].diff(q[j]), "out", (i, j)) for i, j in mat], state, Pa),
        _function("act_force_dqd", "q, qd, t, p, out",
                  [(Qa[i].diff(qd[j]), "out", (i, j)) for i, j in mat], state, Pa),
    ]
    if fc is None:
        parts.append("def con_ab(q, qd, t, p, A, b):\n    return\n")
    else:
        A, b, Pc = fc.build(q, qd, t)
        A, b = sp.Matrix(A), sp.Matrix(b)
        rows = [(A[r, j], "A", (r, j)) for r in range(A.shape[0]) for j in range(n)]
        rows += [(b[r], "b", (r,)) for r in range(A.shape[0])]
        parts.append(_function("con_ab", "q, qd, t, p, A, b", rows, state, Pc))
    del qv, qdv
    _, structure, names = _split_template()
    imports = ("import math\n\nimport numpy as np\n\n" + f"from {common} import (  # noqa: F401\n"
               + "".join(f"    {name},\n" for name in names) + ")\n\n")
    return _HEADER + imports + _jit("\n\n".join(parts) + "\n\n" + structure)


def _function(name: str, args: str, entries, state, params) -> str:
    """``def name(args)`` assigning each (expression, array, index) of ``entries``, with cse."""
    import sympy as sp
    from sympy.printing.pycode import PythonCodePrinter

    q, qd, t = state
    subs = {t: sp.Symbol("t")}
    loads = []
    for prefix, syms in (("q", q), ("qd", qd), ("p", params)):
        for i, s in enumerate(syms):
            subs[s] = sp.Symbol(f"{prefix}_{i}")
            loads.append((f"{prefix}_{i}", f"{prefix}_{i} = {prefix}[{i}]"))
    exprs = [sp.sympify(e).xreplace(subs) for e, _, _ in entries]
    free = set().union(*(e.free_symbols for e in exprs)) if exprs else set()
    stray = free - set(subs.values())
    if stray:
        raise ValueError(f"{name}: symbols {sorted(map(str, stray))} are neither coordinates nor parameters")
    available = {name_ for name_, _ in loads}
    if any(name_.startswith("qd_") for name_ in map(str, free)) and "qd" not in args.split(", "):
        raise ValueError(f"{name}: depends on the velocities but takes none")
    used = {str(s) for s in free} & available
    body = [line for name_, line in loads if name_ in used]
    replacements, reduced = sp.cse(exprs, symbols=sp.numbered_symbols("x_"), optimizations="basic")
    printer = PythonCodePrinter({"fully_qualified_modules": True, "standard": "python3"})
    for sym, expr in replacements:
        body.append(f"{sym} = {printer.doprint(expr)}")
    for expr, (_, target, index) in zip(reduced, entries):
        body.append(f"{target}[{', '.join(map(str, index))}] = {printer.doprint(expr)}")
    return f"def {name}({args}):\n" + "".join(f"    {line}\n" for line in body or ["pass"])
