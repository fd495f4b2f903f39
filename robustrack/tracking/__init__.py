"""The closed loop: nominal, controlled actual and uncompensated systems (W 5.2; THEORY §5).

One job a module:

- :mod:`~robustrack.tracking.rhs` — the right-hand sides (numpy reference);
- :mod:`~robustrack.tracking.compiled` — the same, compiled (numba, generated from the
  plants' symbolic forms) with the exact Jacobian, cached;
- :mod:`~robustrack.tracking.integrate` — integration: nominal (dense output), controlled
  (continuous or sample-and-hold), uncompensated; :func:`simulate_constrained`;
- :mod:`~robustrack.tracking.assess` — metrics, promised bounds, held or not;
- :mod:`~robustrack.tracking.results` — :class:`TrackingResult` (typed metrics,
  save/load, plot());
- :mod:`~robustrack.tracking.simulate` — :func:`simulate_tracking`, the steps in order.
"""

from .integrate import (DEFAULT_ATOL, DEFAULT_RTOL, DEFAULT_TRACKING_METHOD, ConstrainedResult, SolverStats,
                        simulate_constrained)
from .results import TrackingMetrics, TrackingResult
from .simulate import CompilationFallback, simulate_tracking

__all__ = ["simulate_tracking", "simulate_constrained", "TrackingResult", "TrackingMetrics", "ConstrainedResult",
           "SolverStats", "CompilationFallback", "DEFAULT_RTOL", "DEFAULT_ATOL", "DEFAULT_TRACKING_METHOD"]
