"""The numpy side's door to the compiled evaluator (:mod:`robustrack.compiled.evaluate`).

Plants and constraints sit below the compiled package and never import it (a lower layer never imports a
higher one); the compiled package registers its evaluator here when it loads the
functions of a compiled form (a robot's, a user's, a frame constraint's). The compiled package's light
``__init__`` (imported with ``robustrack``, numba not) hands over how to load them at their first use
(:func:`first_use`): one state's motion of a plant and a constraint
with compiled forms loads them from the kernel cache, or compiles them once (said as compiling); a batch loads
them where the cache holds them. For any object without compiled forms :func:`batch` and :func:`motion` answer
None and the caller evaluates by itself (numpy, Pinocchio): the same numbers to rounding, one state at a time
(``docs/guide/compiled.md``, "After the run: one evaluator").

No numpy, no numba here: a level-0 helper every layer may use.
"""

from __future__ import annotations

import weakref

__all__ = ["register", "first_use", "batch", "motion", "motion_compiled", "Pairs"]

_EVALUATOR: list = []  # [the module robustrack.compiled.evaluate], once registered
_FIRST_USE: list = []  # [loader]: loads an object's compiled forms at their first use (robustrack.compiled's)


def register(evaluator) -> None:
    """Open the door: ``evaluator`` answers :func:`batch` and :func:`motion` from now on.

    Parameters
    ----------
    evaluator : module
        :mod:`robustrack.compiled.evaluate` (the first one registered stays).
    """
    if not _EVALUATOR:
        _EVALUATOR.append(evaluator)


def first_use(loader) -> None:
    """Say how to load compiled forms at their first use: ``loader.motion(plant, constraint, q, qd, t, force)`` (one
    state's motion, loading or compiling what it needs; None where it cannot answer) and ``loader.batch(obj)``
    (whether the object's batch functions are now loaded, compiling nothing).

    Parameters
    ----------
    loader : object
        ``robustrack.compiled._FirstUse``: the compiled modules imported when first called (the first one given stays).
    """
    if not _FIRST_USE:
        _FIRST_USE.append(loader)


def batch(obj, what: str, q, qd=None, t=0.0):
    """``what`` of ``obj`` over a batch of states by the compiled evaluator.

    See :func:`robustrack.compiled.evaluate.evaluate` for the parameters.

    Returns
    -------
    ndarray, tuple of ndarray, or None
        None where the compiled evaluator cannot answer (not loaded, the object's functions not loaded, one
        state, sampled parameters, complex states): the caller evaluates by itself.
    """
    if _EVALUATOR:
        answer = _EVALUATOR[0].evaluate(obj, what, q, qd, t)
        if answer is not None or not _FIRST_USE:
            return answer
    elif not _FIRST_USE:
        return None
    if not _FIRST_USE[0].batch(obj, q):  # the object's functions loaded now, if the cache holds them (once per object)
        return None
    return _EVALUATOR[0].evaluate(obj, what, q, qd, t) if _EVALUATOR else None


def motion(plant, constraint, q, qd, t, force):
    """One state's constrained motion by the compiled evaluator, or None (the caller solves it on numpy).

    At the first call for a plant and a constraint whose compiled forms this process has not loaded, they are
    loaded from the kernel cache or compiled once (:func:`first_use`).

    See :func:`robustrack.compiled.evaluate.motion` for the parameters.
    """
    if _EVALUATOR:
        answer = _EVALUATOR[0].motion(plant, constraint, q, qd, t, force)
        if answer is not None:
            return answer
    return _FIRST_USE[0].motion(plant, constraint, q, qd, t, force) if _FIRST_USE else None


def motion_compiled() -> bool:
    """Whether :func:`motion` can answer without compiling anything: its kernel is loaded in this process, or this
    machine's cache holds it (a run's start check asks, so that no run compiles it by itself).

    See :func:`robustrack.compiled.evaluate.motion_compiled`.
    """
    return bool(_EVALUATOR) and _EVALUATOR[0].motion_compiled()


class Pairs:
    """Values kept per pair of live objects (a plant, and a constraint or None) by identity, while both live: weak
    references, so a pair that is gone is never matched by new objects at the same addresses. At most ``size``
    pairs (then forgotten at once: asked again, never wrong). Objects without weak references are not kept."""

    def __init__(self, size: int = 256):
        self._book: dict = {}
        self._size = size

    def get(self, a, b, default=None):
        """The value kept for (a, b), else ``default``."""
        hit = self._book.get((id(a), id(b)))
        if hit is not None and hit[0]() is a and hit[1]() is b:
            return hit[2]
        return default

    def put(self, a, b, value) -> None:
        """Keep ``value`` for (a, b)."""
        try:
            refs = (weakref.ref(a), (lambda: None) if b is None else weakref.ref(b))
        except TypeError:  # an object without weak references: asked again at every call
            return
        if len(self._book) > self._size:
            self._book.clear()
        self._book[id(a), id(b)] = refs + (value,)

    def clear(self) -> None:
        self._book.clear()
