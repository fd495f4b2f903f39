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

from . import compiled  # noqa: F401 - light (numba is imported on first use): opens the numpy side's door to it

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


def __dir__():
    return sorted(__all__)
