"""The closed loop: nominal, controlled actual and uncompensated systems (W 5.2; docs/theory/nominal-actual.md).

One job a module:

- :mod:`~robustrack.tracking.rhs` — the right-hand sides (numpy reference);
- :mod:`robustrack.compiled` — the compiled path, its own package with one door (compiled once per
  machine; a structure's own small functions generated from its symbolic form);
- :mod:`~robustrack.tracking.backend` — the one door to the backends: :func:`~robustrack.tracking.backend.prepare`
  gives a loop, compiled (:mod:`robustrack.compiled.backend`) or numpy (:mod:`~robustrack.tracking.numpy_loop`);
- :mod:`~robustrack.tracking.integrate` — integration on a loop: nominal (dense output), controlled
  (continuous or sample-and-hold), uncompensated; the solutions and the limits of a run;
- :mod:`~robustrack.tracking.constrained` — :func:`simulate_constrained`, the constrained system alone;
- :mod:`~robustrack.tracking.assess` — metrics, promised bounds, held or not;
- :mod:`~robustrack.tracking.results` — :class:`TrackingResult` (typed, read-only :class:`RunInfo` and metrics,
  save/load, plot());
- :mod:`~robustrack.tracking.actuators` — :class:`Actuators`: an input matrix B and limits
  τ_max (Qᶜ and Qᵘ realized as B τ, realizability checked, saturation reported);
- :mod:`~robustrack.tracking.problem` — :class:`TrackingProblem`: the closed loop, validated once, and
  :func:`simulate_tracking` (builds one and simulates it);
- :mod:`~robustrack.tracking.simulate` — the steps in order (it never imports the problem's module: the
  problem's methods call the steps, one direction only).
"""

import importlib

from .defaults import DEFAULT_ATOL, DEFAULT_RTOL, DEFAULT_TRACKING_METHOD

_WHERE = {"TrackingProblem": "problem", "ResidualInfo": "problem", "simulate_tracking": "problem", "CompilationFallback": "backend", "integrate_nominal_run": "simulate",
          "track": "simulate", "NominalRun": "simulate", "simulate_constrained": "constrained",
          "ConstrainedResult": "constrained", "SolverStats": "integrate", "TrackingResult": "results",
          "TrackingMetrics": "results", "RunInfo": "results", "Actuators": "actuators"}

__all__ = ["TrackingProblem", "ResidualInfo", "simulate_tracking", "integrate_nominal_run", "track", "NominalRun", "simulate_constrained", "TrackingResult", "TrackingMetrics", "ConstrainedResult",
           "SolverStats", "CompilationFallback", "Actuators", "RunInfo", "DEFAULT_RTOL", "DEFAULT_ATOL",
           "DEFAULT_TRACKING_METHOD"]


def __getattr__(name):  # imported on first use: the scenario catalog needs no scipy.integrate
    if name in _WHERE:
        value = getattr(importlib.import_module(f".{_WHERE[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
