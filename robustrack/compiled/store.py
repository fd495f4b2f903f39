"""The store of generated files: a structure's functions and a user's wrappers as modules of the kernel cache.

One home for what :mod:`~robustrack.compiled.loop` (a symbolic structure's functions, a robot's moving
targets) and :mod:`~robustrack.compiled.user` (the wrappers of a user's own functions) both keep in
:func:`~robustrack.compiled.cache.cache_dir`: the file of a key (:func:`path`), written atomically
(:func:`write`), imported once per process (:func:`load`, :func:`import_file`, the registry
:data:`LOADED` under :data:`LOCK`), repaired when damaged (:func:`forget_numba_cache`), and the content
keys of generators (:func:`file_digest`, :func:`digest`). It orchestrates and compiles nothing itself,
so it is not part of the kernels' cache key (:data:`robustrack.compiled.loop.NOT_KERNELS`); every
generated file's key carries its generator's own digest instead.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import os
import sys
import tempfile
import threading
import warnings
from pathlib import Path

from .cache import cache_dir
from .notice import CompileNotice

__all__ = ["LOCK", "LOADED", "path", "load", "import_file", "write", "forget_numba_cache", "file_digest", "digest",
           "check_cache_dir"]

#: Held while a generated module is loaded or compiled (loading threads share one import).
LOCK = threading.Lock()
#: The generated modules (and user wrappers, keyed ``(key, "cfunc")``) loaded in this process.
LOADED: dict = {}


@functools.lru_cache(maxsize=None)
def file_digest(file: str) -> bytes:
    """The SHA-256 of a file's bytes, read once per process (a generator's source keys its files).

    Parameters
    ----------
    file : str

    Returns
    -------
    bytes
    """
    return hashlib.sha256(Path(file).read_bytes()).digest()


def digest(generator: str, text: str) -> str:
    """A module key: the generator's source and ``text``, hashed (an edit of the generator makes new files).

    Parameters
    ----------
    generator : str
        The generating module's file.
    text : str
        What the generated module depends on (structure key, sizes, names).

    Returns
    -------
    str
        20 hex digits.
    """
    return hashlib.sha256(file_digest(generator) + text.encode()).hexdigest()[:20]


def path(key: str) -> Path:
    """The generated file of ``key``: ``rtk_<key>.py`` in the cache.

    Parameters
    ----------
    key : str

    Returns
    -------
    pathlib.Path
    """
    return cache_dir() / f"rtk_{key}.py"


def load(key: str, generate):
    """The module ``rtk_{key}.py`` of the cache, written by ``generate()`` if missing; imported once.

    A cached file that is damaged (cut short, overwritten, not importable) is generated again, with a
    notice: a broken cache costs a recompile, never a failed run.

    Parameters
    ----------
    key : str
    generate : callable
        ``generate() -> str``, the module's source (ending in :data:`~robustrack.compiled.codegen.END`).

    Returns
    -------
    module
    """
    from .codegen import END

    with LOCK:
        if key in LOADED:
            return LOADED[key]
        file = path(key)
        if not file.exists():
            write(file, generate())
        try:
            if not file.read_text(encoding="utf-8", errors="replace").endswith(END):
                raise ValueError("it was cut short")
            module = import_file(key, file)
        except Exception as exc:  # a damaged file: its text, or numba's cache of it
            warnings.warn(f"the cached kernel file {file} was damaged ({type(exc).__name__}: {exc}); generated "
                          "and compiled it again.", CompileNotice, stacklevel=2)
            forget_numba_cache(file)
            write(file, generate())
            module = import_file(key, file)
        LOADED[key] = module
        return module


def import_file(key: str, file: Path, preset=None):
    """Import the cached file ``file`` as ``robustrack_kernels_<key>``.

    Parameters
    ----------
    key : str
    file : pathlib.Path
    preset : dict, optional
        Names set in the module before it runs.

    Returns
    -------
    module
    """
    name = f"robustrack_kernels_{key}"
    spec = importlib.util.spec_from_file_location(name, file)
    module = importlib.util.module_from_spec(spec)
    vars(module).update(preset or {})
    sys.modules[name] = module  # before executing it: numba's cache looks the module up while compiling
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def write(file: Path, source: str) -> None:
    """Write a generated file atomically (a temporary file renamed into place).

    Parameters
    ----------
    file : pathlib.Path
    source : str
    """
    fd, tmp = tempfile.mkstemp(dir=file.parent, prefix=f".{file.stem}", suffix=".tmp")
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(source)
    os.replace(tmp, file)


def forget_numba_cache(file: Path) -> None:
    """Remove numba's cached machine code of the generated file ``file`` (it may be as damaged as the file).

    Parameters
    ----------
    file : pathlib.Path
    """
    for cached in (cache_dir() / "numba").rglob(f"{file.stem}.*"):
        cached.unlink(missing_ok=True)


def check_cache_dir() -> Path:
    """The kernel cache folder, created if needed; a clear error if it cannot be written.

    Returns
    -------
    pathlib.Path

    Raises
    ------
    KernelCacheError
        The folder cannot be created or written: names it, the variable that chose it and what to do.
    """
    from ..errors import KernelCacheError

    folder = cache_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        tempfile.TemporaryFile(dir=folder).close()
    except OSError as exc:
        chosen = ("ROBUSTRACK_CACHE_DIR" if os.environ.get("ROBUSTRACK_CACHE_DIR")
                  else "XDG_CACHE_HOME" if os.environ.get("XDG_CACHE_HOME") else "the home folder")
        raise KernelCacheError(
            f"the kernel cache {folder} (from {chosen}) cannot be written: {exc.strerror or exc}; compiled kernels "
            "are kept there (without it every run compiles again, ~30 s); set ROBUSTRACK_CACHE_DIR to a writable "
            "folder.") from None
    return folder
