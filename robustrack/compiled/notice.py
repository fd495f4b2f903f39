"""Saying what is compiled: what, that it happens once (per machine or per structure), where it is cached,
and afterwards how long it took. No numpy, no numba: the CLI installs its reporter before anything heavy.

The API gives one :class:`CompileNotice` (a warning) after compiling; the CLI prints one line before and
one after (:func:`compile_reporter`), and its progress lines leave the compile time out
(:func:`compile_seconds`).
"""

from __future__ import annotations

import contextlib
import sys
import time
import warnings

from ..errors import RobustrackNotice

__all__ = ["CompileNotice", "compile_reporter", "compiling", "compile_seconds", "check_interrupted", "numba_reason"]

_REPORTERS: list = []
_SECONDS = [0.0]
_DROPPED: list = []  # a Ctrl-C Python dropped while compiling (see compiling)


class CompileNotice(RobustrackNotice):
    """Kernels were compiled: what, once per machine or per structure, where they are cached, how long it took."""


def numba_reason(exc: BaseException) -> str:
    """The first telling line of numba's error ``exc`` (not its "Failed in …" and "During: …" frames), without the
    terminal's colour codes numba writes into it: what a one-line notice quotes.

    Parameters
    ----------
    exc : BaseException

    Returns
    -------
    str
    """
    import re

    lines = [re.sub(r"\x1b\[[0-9;]*m", "", ln).strip() for ln in str(exc).splitlines()]
    lines = [ln for ln in lines if ln]
    telling = [ln for ln in lines if not ln.startswith(("Failed in", "During:"))]
    return (telling or lines or ["no message"])[0]


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
    previous = sys.unraisablehook
    sys.unraisablehook = _keep_interrupts(previous)
    try:
        yield
        check_interrupted()
    except Exception:
        if _DROPPED:  # the dropped Ctrl-C broke the compile (numba then failed to save what LLVM never produced:
            raise KeyboardInterrupt from None  # "no compiled object yet"): the user's Ctrl-C, not an internal error
        raise
    finally:
        sys.unraisablehook = previous
        _DROPPED.clear()
        seconds = time.perf_counter() - began
        _SECONDS[0] += seconds
    if _REPORTERS:
        _REPORTERS[-1][1](what, seconds)
    else:
        warnings.warn(f"compiled {what} in {seconds:.1f} s; cached in {where}, later runs load it.", CompileNotice,
                      stacklevel=4)


def _keep_interrupts(previous):
    """``sys.unraisablehook`` while compiling: a KeyboardInterrupt raised where Python cannot propagate it
    is kept for :func:`check_interrupted` (and not printed); anything else goes to ``previous``.

    numba creates and drops many weak references while it compiles; a Ctrl-C that arrives while one of
    their callbacks runs is printed as "Exception ignored … KeyboardInterrupt" and dropped, and the compile
    would go on to its end.
    """

    def hook(unraisable):
        if isinstance(unraisable.exc_value, KeyboardInterrupt):
            _DROPPED.append(True)
            return
        previous(unraisable)

    return hook


def check_interrupted() -> None:
    """Raise the Ctrl-C that Python dropped while compiling (see :func:`compiling`), if there was one.

    Called between kernels and at the end of a compile, so Ctrl-C stops a compile within one kernel.

    Raises
    ------
    KeyboardInterrupt
    """
    if _DROPPED:
        _DROPPED.clear()
        raise KeyboardInterrupt
