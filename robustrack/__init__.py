"""robustrack: robust tracking control of constrained mechanical systems.

The short public API; the subpackages hold the rest (see the README):

- :func:`solve_constrained`, :func:`constraint_force`, :func:`constrained_acceleration`:
  the fundamental equation of constrained motion (W 2.2.7–2.2.9, 4.2.8).
- :func:`simulate_constrained`, :func:`simulate_tracking`: constrained and
  robustly controlled systems in time (W 5.2).
- :func:`load_scenario`, :func:`run_scenario`: the scenario catalog.
- :func:`certify`, :class:`ParameterBox`: Γ and the bounds' assumptions proved over a box of
  plants (docs/theory/certificate.md; needs ``robustrack[certify]``).

The names are imported on first use, so ``import robustrack`` (and the command line's
``list``/``show``) does not load scipy's integrators, sympy or the compiler.
"""

import importlib

from . import _evaluator

__version__ = "0.1.0"

_WHERE = {
    "solve_constrained": "mechanics",
    "constraint_force": "mechanics",
    "constrained_acceleration": "mechanics",
    "simulate_constrained": "tracking",
    "simulate_tracking": "tracking",
    "load_scenario": "scenarios",
    "run_scenario": "scenarios",
    "certify": "certification",
    "ParameterBox": "certification",
}

__all__ = ["__version__", *_WHERE]


def __getattr__(name):
    if name in _WHERE:
        value = getattr(importlib.import_module(f".{_WHERE[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'robustrack' has no attribute {name!r}")


class _FirstUse:
    """The numpy side's door to the compiled evaluator opened at the first use of a compiled form
    (:func:`robustrack._evaluator.first_use`): numba and the compiled package are imported only when a call could
    use them — one float64 state of objects with a compiled form, or a batch."""

    @staticmethod
    def motion(plant, constraint, q, qd, t, force):
        if getattr(q, "ndim", None) != 1 or _without_forms(plant, constraint):
            return None
        from .compiled.loop import motion_first_use

        return motion_first_use(plant, constraint, q, qd, t, force)

    @staticmethod
    def batch(obj, q):
        from .plants import FrameConstraint, URDFPlant  # (imported: obj is one of the plants' objects)

        if _BATCH_ASKED or getattr(q, "ndim", 0) < 2 or not isinstance(obj, (URDFPlant, FrameConstraint)):
            return False
        _BATCH_ASKED.append(True)
        from .compiled.loop import batch_first_use

        return batch_first_use(obj, q)


_BATCH_ASKED: list = []


def _without_forms(plant, constraint) -> bool:
    """Whether the plant or the constraint has no compiled form (a Python callable, sampled parameters), asked once
    per pair of objects (a form is built anew at every ``codegen()`` of some objects: ~10 µs a call)."""
    import weakref

    key = (id(plant), id(constraint))
    hit = _NO_FORMS.get(key)
    if hit is not None and hit[0]() is plant and hit[1]() is constraint:
        return True
    if not (_no_form(plant) or (constraint is not None and _no_form(constraint))):
        return False
    try:
        refs = (weakref.ref(plant), (lambda: None) if constraint is None else weakref.ref(constraint))
    except TypeError:  # an object without weak references: asked at every call
        return True
    if len(_NO_FORMS) > 256:
        _NO_FORMS.clear()
    _NO_FORMS[key] = refs
    return True


_NO_FORMS: dict = {}


def _no_form(obj) -> bool:
    codegen = getattr(obj, "codegen", None)
    return not callable(codegen) or codegen() is None


_evaluator.first_use(_FirstUse)


def __dir__():
    return sorted(__all__)
