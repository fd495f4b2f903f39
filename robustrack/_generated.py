"""Generated Python modules kept in the machine's cache folder: written once, then imported by path.

The numpy evaluation of the catalog's models (docs/guide/own-plant.md: one symbolic source per model) is
Python source that sympy generates; generating it costs sympy's import and ``lambdify`` (about a second
per process). It is written once per machine into the cache folder (:func:`cache_root`, the folder the
compiled kernels live under too) and later processes import the file, without sympy.

* :func:`load`: the module of a file, the file written by ``generate()`` where it is missing, written again
  where it is damaged (cut short, overwritten, not importable), and made in memory from the generated text
  where the folder cannot be written (the same text: the same numbers).
* Files are written through :func:`robustrack._files.write_atomic` (a temporary file renamed into place), so
  processes starting together never read a half-written file; two writers write the same text.
* The compiled kernels' generated files (:mod:`robustrack.compiled.store`) are loaded here too: entered in
  :data:`sys.modules` (numba's cache needs it) and said when repaired.

This module imports neither sympy nor numba: a low layer that plants and the compiled backend may both use.
"""

from __future__ import annotations

import os
import sys
import threading
import types
from pathlib import Path

from ._files import write_atomic

__all__ = ["cache_root", "load", "module_from_source", "END"]

#: The last line of every generated module: a file without it was cut short.
END = "# end of generated module\n"

#: Held while a generated module is loaded (threads share one generation); re-entrant: a generator may load
#: another generated module (a kernel's text made from a model whose numpy module is generated too).
_LOCK = threading.RLock()


def cache_root() -> Path:
    """The machine's cache folder of robustrack: generated modules, and the compiled kernels below it.

    Returns
    -------
    pathlib.Path
        ``$ROBUSTRACK_CACHE_DIR``, else ``$XDG_CACHE_HOME/robustrack``, else ``~/.cache/robustrack``
        (not created here).
    """
    chosen = (os.environ.get("ROBUSTRACK_CACHE_DIR"), os.environ.get("XDG_CACHE_HOME"), os.environ.get("HOME"))
    root = _ROOTS.get(chosen)
    if root is None:  # once per process and setting: every campaign sample asks (a path built, the home looked up)
        root = chosen[0]
        if not root:
            root = os.path.join(chosen[1], "robustrack") if chosen[1] else os.path.join(Path.home(), ".cache",
                                                                                          "robustrack")
        root = _ROOTS[chosen] = Path(root)
    return root


#: :func:`cache_root` by the variables that choose it (ROBUSTRACK_CACHE_DIR, XDG_CACHE_HOME, HOME).
_ROOTS: dict = {}


def module_from_source(name: str, source: str, filename: str, *, preset=None,
                       register: bool = False) -> types.ModuleType:
    """Execute ``source`` as a new module named ``name``.

    Parameters
    ----------
    name : str
        The module's ``__name__``.
    source : str
        Its whole text.
    filename : str
        Where tracebacks say it is (the cached file, or a ``<...>`` name for text made in memory).
    preset : dict, optional
        Names set in the module before it runs (keyword-only).
    register : bool
        Enter the module in :data:`sys.modules` before it runs (keyword-only; removed again if it fails):
        numba's cache looks a compiled function's module up there while compiling. Default: not entered.

    Returns
    -------
    module
    """
    module = types.ModuleType(name)
    module.__file__ = filename
    vars(module).update(preset or {})
    if register:
        sys.modules[name] = module
    try:
        exec(compile(source, filename, "exec"), vars(module))  # noqa: S102 - robustrack's own generated text
    except BaseException:
        if register:
            sys.modules.pop(name, None)
        raise
    return module


def load(file: Path, name: str, generate, *, names=(), register: bool = False, damaged=None) -> types.ModuleType:
    """The module of the generated file ``file``: imported if whole, else generated (again) and written.

    The file is read and compiled here (no ``__pycache__`` beside it, so a rewritten file is never
    shadowed by a stale bytecode file). A file that cannot be decoded, does not end with :data:`END`, does not
    execute or lacks one of ``names`` is damaged: it is generated again and replaced. Where the file cannot be
    written (a read-only cache folder), the generated text is executed in memory: the same module.

    Parameters
    ----------
    file : pathlib.Path
        The cached file (its folder is created if missing).
    name : str
        The module's name.
    generate : callable
        ``generate() -> str``, the module's text, ending with :data:`END` (called only when needed).
    names : sequence of str
        The attributes the module must define (keyword-only).
    register : bool
        As :func:`module_from_source` (keyword-only).
    damaged : callable, optional
        ``damaged(file, exc)``, called before a damaged file is generated again (keyword-only): the compiled
        kernels' store says so and removes numba's machine code of it. Default: repaired silently.

    Returns
    -------
    module
    """
    with _LOCK:
        text = damage = None
        try:
            text = file.read_text(encoding="utf-8")
        except FileNotFoundError:  # missing: generated below
            pass
        except (OSError, UnicodeDecodeError) as exc:  # unreadable: damaged
            damage = exc
        if text is not None:
            try:
                return _checked(module_from_source(name, text, str(file), register=register)
                                if text.endswith(END) else None, names)
            except Exception as exc:  # noqa: BLE001 - a damaged file (any error of its text) is generated again
                damage = exc
        if damage is not None and damaged is not None:
            damaged(file, damage)
        text = generate()
        try:
            write_atomic(file, text)
        except OSError:  # the cache folder cannot be written: this process keeps the module in memory
            return _checked(module_from_source(name, text, f"<{file.name}>", register=register), names)
        return _checked(module_from_source(name, text, str(file), register=register), names)


def _checked(module, names):
    """``module`` if it defines every one of ``names`` (raises ``ValueError`` otherwise, or for None)."""
    if module is None:
        raise ValueError("the generated file was cut short")
    missing = [n for n in names if not hasattr(module, n)]
    if missing:
        raise ValueError(f"the generated module lacks {missing}")
    return module

