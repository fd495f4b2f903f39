"""A plant from the user's functions as the compiled loop takes it: the functions, their parameter layout, a key.

:meth:`FunctionPlant.codegen <robustrack.plants.FunctionPlant.codegen>` returns a :class:`FunctionForm`.
The compiled loop (:mod:`robustrack.compiled.user`) wraps the user's M, Q (and the derivatives given) with
``numba.njit`` into C functions of the one plant signature, exactly as it does with a symbolic form's
generated functions; where numba cannot compile them the loop runs on numpy and says why.

The key is the functions' *content*: a Python function object cannot be cached by identity across
processes, so :func:`function_digest` hashes what decides what it computes — its source (else its
byte code), the values its closure captures, the globals it reads (installed modules by name, numbers,
strings, arrays by their bytes, other functions by their own digest; of a module of the user's own, the
attributes the code may read from it, the same way) and its defaults. A function that reads
anything else (an arbitrary object) has no content key (None): it is compiled in memory, in every
process that runs it, and never cached.
"""

from __future__ import annotations

import dataclasses
import hashlib
import inspect
import marshal
import os
import types
from typing import Any, Mapping

import numpy as np

__all__ = ["FunctionForm", "function_digest", "CompiledFunctions"]

_PLAIN = (bool, int, float, complex, str, bytes, type(None))


def function_digest(fn) -> str | None:
    """The content key of a Python function (see the module docstring); None where it has none.

    Parameters
    ----------
    fn : callable
        A Python function (a lambda, a closure) or a numba dispatcher (its Python function is read).

    Returns
    -------
    str or None
        24 hex digits of a SHA-256, or None when the function reads something without a stable content.
    """
    parts: list[str] = []
    seen: set[int] = set()

    def visit(f) -> bool:
        f = getattr(f, "py_func", f)
        if id(f) in seen:
            return True
        seen.add(id(f))
        code = getattr(f, "__code__", None)
        if code is None:
            return False
        try:
            parts.append(inspect.getsource(f))
        except (OSError, TypeError):  # defined in a REPL or exec'd: its byte code
            parts.append(marshal.dumps(code).hex())
        cells = [c.cell_contents for c in (f.__closure__ or ())]
        names = sorted(_global_names(code))
        known = list(zip(code.co_freevars, cells)) + [(k, f.__globals__[k]) for k in names if k in f.__globals__]
        # a module of the user's own (not an installed package): the attributes the code may read from it
        known += [(f"{k}.{a}", getattr(v, a)) for k, v in known if isinstance(v, types.ModuleType) and _own(v)
                  for a in names if hasattr(v, a)]
        known += [("__defaults__", f.__defaults__), ("__kwdefaults__", f.__kwdefaults__)]
        return all(value(name, v) for name, v in known)

    def value(name: str, v: Any) -> bool:
        if isinstance(v, types.ModuleType):
            parts.append(f"{name}=module {v.__name__}")
        elif isinstance(v, _PLAIN):
            parts.append(f"{name}={v!r}")
        elif isinstance(v, np.ndarray):
            parts.append(f"{name}=array {v.dtype.str} {v.shape} {np.ascontiguousarray(v).tobytes().hex()}")
        elif isinstance(v, (tuple, list)):
            parts.append(f"{name}={type(v).__name__} {len(v)}")
            return all(value(f"{name}[{i}]", x) for i, x in enumerate(v))
        elif isinstance(v, dict):
            parts.append(f"{name}=dict {sorted(map(repr, v))}")
            return all(value(f"{name}[{k!r}]", v[k]) for k in sorted(v, key=repr))
        elif hasattr(getattr(v, "py_func", v), "__code__"):
            parts.append(f"{name}=function")
            return visit(v)
        elif isinstance(v, (types.BuiltinFunctionType, np.ufunc)) or getattr(v, "__module__", "") in ("math", "cmath"):
            parts.append(f"{name}={getattr(v, '__module__', None)}.{getattr(v, '__name__', repr(v))}")
        else:
            return False
        return True

    if not visit(fn):
        return None
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:24]


def _own(module) -> bool:
    """Whether ``module`` is the user's own code (a file outside the Python installation and its packages)."""
    import sys
    import sysconfig

    path = getattr(module, "__file__", None)
    if not path:
        return False
    installed = {sys.prefix, sys.base_prefix, *sysconfig.get_paths().values()}
    return not any(os.path.abspath(path).startswith(os.path.abspath(root)) for root in installed if root)


def _global_names(code) -> set:
    """The names ``code`` (and the code nested in it) may read as globals."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _global_names(const)
    return names


class CompiledFunctions(dict):
    """The user's functions the compiled loop has compiled, by name (``"M"``, ``"Q"``): each its C function
    (a numba ``cfunc``, :func:`robustrack.compiled.user.user_function`). Shared by every plant of one structure —
    sampled copies included — so the numpy side (metrics, Γ) evaluates a batch through them
    (:func:`robustrack.compiled.evaluate.evaluate`, with each state's parameter row) instead of a Python call per
    state; empty in another process (it does not pickle)."""

    def __reduce__(self):
        return (CompiledFunctions, ())


@dataclasses.dataclass(frozen=True, eq=False)
class FunctionForm:
    """A :class:`~robustrack.plants.FunctionPlant` as the compiled loop takes it (like a ``SymbolicForm``).

    Attributes
    ----------
    key : str
        The structure: ``FunctionPlant(<names>)/<digest>``; two forms with the same key have the same
        functions and parameter layout (``replace`` changes values only).
    values : ndarray (P,)
        The parameter values flattened in the order of ``layout``.
    functions : mapping of str to callable
        ``"M"``, ``"Q"`` and the derivatives given (``"dM_dq"``, ``"dQ_dq"``, ``"dQ_dqd"``).
    takes : mapping of str to (tuple of str, bool)
        Per function: the parameter names it takes (by keyword) and whether it takes ``t``.
    layout : tuple of (str, int, tuple)
        Per parameter: its name, its offset in ``values`` and its shape.
    n : int
        Number of coordinates.
    cacheable : bool
        False when a function has no content key (:func:`function_digest`): compiled in memory only.
    compiled : CompiledFunctions
        Where the compiled loop leaves the batch evaluators of what it compiled (the plant's own registry).
    """

    key: str
    values: np.ndarray
    functions: Mapping
    takes: Mapping
    layout: tuple
    n: int
    cacheable: bool
    compiled: CompiledFunctions

    def __post_init__(self):
        values = np.array(self.values, dtype=float).reshape(-1)
        values.setflags(write=False)
        object.__setattr__(self, "values", values)
