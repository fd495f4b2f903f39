"""robustrack: robust tracking control of constrained mechanical systems.

The short public API; the subpackages hold the rest (see the README):

- :func:`solve_constrained`, :func:`constraint_force`, :func:`constrained_acceleration`:
  the fundamental equation of constrained motion (W 2.2.7–2.2.9, 4.2.8).
- :func:`simulate_constrained`, :func:`simulate_tracking`: constrained and
  robustly controlled systems in time (W 5.2).
- :func:`load_scenario`, :func:`run_scenario`: the scenario catalog.
"""

__version__ = "0.1.0"

from .mechanics import constrained_acceleration, constraint_force, solve_constrained
from .scenarios import load_scenario, run_scenario
from .tracking import simulate_constrained, simulate_tracking

__all__ = [
    "__version__",
    "solve_constrained",
    "constraint_force",
    "constrained_acceleration",
    "simulate_constrained",
    "simulate_tracking",
    "load_scenario",
    "run_scenario",
]
