"""The compiled path: robustrack's numba kernels, integrators and cache, in one package with one door.

The numpy reference (:mod:`robustrack.mechanics`, :mod:`robustrack.tracking.rhs`, the compensators'
``__call__``) is the oracle; this package is its compiled backend. What it holds:

- :mod:`~robustrack.compiled.loop` — the door: :func:`compiled_loop` (the kernels' record of a loop,
  compiling what this machine has not yet), :func:`compile_kernels`, :func:`fallback_reason`, the cache key;
- :mod:`~robustrack.compiled.backend` — :class:`~robustrack.compiled.backend.CompiledBackend`, the tracking loop
  on the kernels (the compiled side of :func:`robustrack.tracking.backend.prepare`);
- :mod:`~robustrack.compiled.store` — the generated files of the cache (written, imported, repaired);
- :mod:`~robustrack.compiled.mechanics` — linear algebra and the fundamental equation (W 2.2.7–2.2.9);
- :mod:`~robustrack.compiled.laws` — the control laws and control functions;
- :mod:`~robustrack.compiled.actuators` — Gauss's actuator force and saturation;
- :mod:`~robustrack.compiled.systems` — the nominal, controlled and uncompensated systems (W 5.2.9–5.2.17)
  and the controlled system's exact Jacobian;
- :mod:`~robustrack.compiled.motion` — the constrained motion as a C function;
- :mod:`~robustrack.compiled.dop853`, :mod:`~robustrack.compiled.bdf`, :mod:`~robustrack.compiled.hold`,
  :mod:`~robustrack.compiled.stepping` — the integrators, generic in the right-hand side;
- :mod:`~robustrack.compiled.rigid_body` — the rigid-body algorithms of robots (CRBA, RNEA, frame kinematics and
  frame constraints, derivatives by the complex step) over a robot packed as data, compiled once per machine;
- :mod:`~robustrack.compiled.codegen` — a plant structure's own small functions from its symbolic form;
- :mod:`~robustrack.compiled.cache` — where compiled code is kept, and numba's private APIs it needs;
- :mod:`~robustrack.compiled.notice` — compiling said as compiling.

Everything but a structure's own functions is generic in the plant and compiled once per machine.
"""

import importlib

from .. import _evaluator

_WHERE = {"compiled_loop": "loop", "compile_kernels": "loop", "fallback_reason": "loop", "cache_dir": "loop",
          "CompiledLoop": "loop", "CompileNotice": "notice"}

__all__ = ["compiled_loop", "compile_kernels", "fallback_reason", "cache_dir", "CompiledLoop", "CompileNotice"]


def __getattr__(name):  # numba is imported by the modules, on first use
    if name in _WHERE:
        value = getattr(importlib.import_module(f".{_WHERE[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class _FirstUse:
    """The numpy side's door to the compiled evaluator opened at the first use of a compiled form
    (:func:`robustrack._evaluator.first_use`; docs/guide/compiled.md, "After the run: one evaluator"): numba and the
    compiled modules are imported only when a call could use them — one float64 state of objects with a compiled
    form, or a batch of a robot or a frame constraint."""

    @staticmethod
    def motion(plant, constraint, q, qd, t, force):
        if getattr(q, "ndim", None) != 1 or _without_forms(plant, constraint):
            return None
        from .loop import motion_first_use

        return motion_first_use(plant, constraint, q, qd, t, force)

    @staticmethod
    def batch(obj, q):
        from ..plants import FrameConstraint, URDFPlant  # (imported: obj is one of the plants' objects)

        if _BATCH_ASKED or getattr(q, "ndim", 0) < 2 or not isinstance(obj, (URDFPlant, FrameConstraint)):
            return False
        _BATCH_ASKED.append(True)
        from .loop import batch_first_use

        return batch_first_use(obj, q)


_BATCH_ASKED: list = []


def _without_forms(plant, constraint) -> bool:
    """Whether the plant or the constraint has no compiled form (a Python callable, sampled parameters), asked once
    per pair of objects (a form is built anew at every ``codegen()`` of some objects: ~10 µs a call)."""
    if _NO_FORMS.get(plant, constraint, False):
        return True
    if not (_no_form(plant) or (constraint is not None and _no_form(constraint))):
        return False
    _NO_FORMS.put(plant, constraint, True)
    return True


_NO_FORMS = _evaluator.Pairs()


def _no_form(obj) -> bool:
    codegen = getattr(obj, "codegen", None)
    return not callable(codegen) or codegen() is None


_evaluator.first_use(_FirstUse)
