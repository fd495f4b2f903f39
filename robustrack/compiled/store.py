"""The store of generated files: a structure's functions and a user's wrappers as modules of the kernel cache.

One home for what :mod:`~robustrack.compiled.loop` (a symbolic structure's functions, a robot's moving
targets) and :mod:`~robustrack.compiled.user` (the wrappers of a user's own functions) both keep in
:func:`~robustrack.compiled.cache.cache_dir`: the file of a key (:func:`path`), imported once per process
(:func:`load`, :func:`import_file`, the registry :data:`LOADED` under :data:`LOCK`), repaired when damaged
(:func:`forget_numba_cache`), and the content keys of generators (:func:`file_digest`, :func:`digest`).
Reading, writing (atomically) and regenerating a damaged file are :mod:`robustrack._generated`'s, as for the
models' numpy modules. It orchestrates and compiles nothing itself,
so it is not part of the kernels' cache key (:data:`robustrack.compiled.loop.NOT_KERNELS`); every
generated file's key carries its generator's own digest instead.
"""

from __future__ import annotations

import functools
import hashlib
import os
import tempfile
import threading
import warnings
from pathlib import Path

from .. import _generated
from .cache import cache_dir
from .notice import CompileNotice

__all__ = ["LOCK", "LOADED", "path", "load", "import_file", "forget_numba_cache", "file_digest", "digest",
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

    :func:`robustrack._generated.load` (the one loader of generated files): a cached file that is damaged (cut
    short, overwritten, not importable) is generated again — here with a notice, and numba's machine code of it
    removed (:func:`forget_numba_cache`): a broken cache costs a recompile, never a failed run.

    Parameters
    ----------
    key : str
    generate : callable
        ``generate() -> str``, the module's source (ending in :data:`robustrack._generated.END`).

    Returns
    -------
    module
    """
    with LOCK:
        if key not in LOADED:
            LOADED[key] = _generated.load(path(key), _module_name(key), generate, register=True, damaged=_repair)
        return LOADED[key]


def _repair(file: Path, exc: BaseException) -> None:
    """Say that a cached kernel file was damaged, and remove numba's machine code of it (generated again next)."""
    warnings.warn(f"the cached kernel file {file} was damaged ({type(exc).__name__}: {exc}); generated "
                  "and compiled it again.", CompileNotice, stacklevel=4)  # the caller of load()
    forget_numba_cache(file)


def _module_name(key: str) -> str:
    return f"robustrack_kernels_{key}"


def import_file(key: str, file: Path, preset=None):
    """Import the cached file ``file`` as ``robustrack_kernels_<key>``
    (:func:`robustrack._generated.module_from_source`, entered in :data:`sys.modules` for numba's cache).

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
    return _generated.module_from_source(_module_name(key), file.read_text(encoding="utf-8"), str(file),
                                         preset=preset, register=True)


def forget_numba_cache(file: Path) -> None:
    """Remove numba's cached machine code of the generated file ``file`` (it may be as damaged as the file).

    Parameters
    ----------
    file : pathlib.Path
    """
    for cached in (cache_dir() / "numba").rglob(f"{file.stem}.*"):  # every version's (numba_dir)
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
    if folder in _WRITABLE and folder.is_dir():  # written to once per process and folder (every sample's loop asks)
        return folder
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
    _WRITABLE.add(folder)
    return folder


#: The kernel cache folders :func:`check_cache_dir` found writable in this process.
_WRITABLE: set = set()
