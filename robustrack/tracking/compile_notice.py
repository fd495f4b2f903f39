"""Saying what is compiled: what, that it happens once (per machine or per structure), where it is cached,
and afterwards how long it took. No numpy, no numba: the CLI installs its reporter before anything heavy.

The API gives one :class:`CompileNotice` (a warning) after compiling; the CLI prints one line before and
one after (:func:`compile_reporter`), and its progress lines leave the compile time out
(:func:`compile_seconds`).
"""

from __future__ import annotations

import contextlib
import time
import warnings

from ..errors import RobustrackNotice

__all__ = ["CompileNotice", "compile_reporter", "compiling", "compile_seconds"]

_REPORTERS: list = []
_SECONDS = [0.0]


class CompileNotice(RobustrackNotice):
    """Kernels were compiled: what, once per machine or per structure, where they are cached, how long it took."""


def compile_seconds() -> float:
    """Seconds this process has spent compiling kernels so far (progress and ETA leave them out)."""
    return _SECONDS[0]


@contextlib.contextmanager
def compile_reporter(start, done):
    """Report compiling through ``start(what, where)`` and ``done(what, seconds)`` instead of a notice.

    Parameters
    ----------
    start : callable
        ``start(what, where)`` before compiling begins.
    done : callable
        ``done(what, seconds)`` after.
    """
    _REPORTERS.append((start, done))
    try:
        yield
    finally:
        _REPORTERS.remove((start, done))


@contextlib.contextmanager
def compiling(structures, kernels, where):
    """Time the block and say what it compiled (nothing said when it compiles nothing).

    Parameters
    ----------
    structures : list of str
        Keys of the plant structures whose functions are generated in the block.
    kernels : list of str
        The parts of the package's kernels compiled in the block (once per machine), e.g.
        "the nominal system and DOP853"; empty: none.
    where : path
        The cache folder.
    """
    parts = []
    if kernels:
        parts.append(f"robustrack's kernels: {', '.join(kernels)} (once per machine)")
    if structures:
        parts.append(f"the plant structure {', '.join(sorted(set(structures)))} (once per structure)")
    if not parts:
        yield
        return
    what = "; ".join(parts)
    if _REPORTERS:
        _REPORTERS[-1][0](what, str(where))
    began = time.perf_counter()
    try:
        yield
    finally:
        seconds = time.perf_counter() - began
        _SECONDS[0] += seconds
    if _REPORTERS:
        _REPORTERS[-1][1](what, seconds)
    else:
        warnings.warn(f"compiled {what} in {seconds:.1f} s; cached in {where}, later runs load it.", CompileNotice,
                      stacklevel=4)
