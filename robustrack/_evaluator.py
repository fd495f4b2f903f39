"""The numpy side's door to the compiled evaluator (:mod:`robustrack.compiled.evaluate`).

Plants and constraints sit below the compiled package and never import it (a lower layer never imports a
higher one); the compiled package registers its evaluator here when it loads the
functions of a compiled form (a robot's, a user's, a frame constraint's). Until then — and for any object whose
compiled functions this process has not loaded — :func:`batch` and :func:`motion` answer None and the caller
evaluates by itself (numpy, Pinocchio): the same numbers to rounding, one state at a time
(``docs/guide/compiled.md``, "After the run: one evaluator").

No numpy, no numba here: a level-0 helper every layer may use.
"""

from __future__ import annotations

__all__ = ["register", "batch", "motion", "motion_compiled"]

_EVALUATOR: list = []  # [the module robustrack.compiled.evaluate], once registered


def register(evaluator) -> None:
    """Open the door: ``evaluator`` answers :func:`batch` and :func:`motion` from now on.

    Parameters
    ----------
    evaluator : module
        :mod:`robustrack.compiled.evaluate` (the first one registered stays).
    """
    if not _EVALUATOR:
        _EVALUATOR.append(evaluator)


def batch(obj, what: str, q, qd=None, t=0.0):
    """``what`` of ``obj`` over a batch of states by the compiled evaluator.

    See :func:`robustrack.compiled.evaluate.evaluate` for the parameters.

    Returns
    -------
    ndarray, tuple of ndarray, or None
        None where the compiled evaluator cannot answer (not loaded, the object's functions not loaded, one
        state, sampled parameters, complex states): the caller evaluates by itself.
    """
    return _EVALUATOR[0].evaluate(obj, what, q, qd, t) if _EVALUATOR else None


def motion(plant, constraint, q, qd, t, force):
    """One state's constrained motion by the compiled evaluator, or None (the caller solves it on numpy).

    See :func:`robustrack.compiled.evaluate.motion` for the parameters.
    """
    return _EVALUATOR[0].motion(plant, constraint, q, qd, t, force) if _EVALUATOR else None


def motion_compiled() -> bool:
    """Whether :func:`motion` can answer without compiling anything: its kernel is loaded in this process, or this
    machine's cache holds it (a run's start check asks, so that no run compiles it by itself).

    See :func:`robustrack.compiled.evaluate.motion_compiled`.
    """
    return bool(_EVALUATOR) and _EVALUATOR[0].motion_compiled()
