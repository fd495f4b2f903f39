"""The controller in a real loop: the designed controller as an object, the sensor it measures through, and the
bounds that say what survives them (docs/guide/robot.md, docs/theory/sensing.md).

- :class:`Controller` — τ(t, q, q̇) = Qᶜ(t) + M(q) u of a :class:`~robustrack.tracking.TrackingProblem`
  (:meth:`~robustrack.tracking.TrackingProblem.controller`), on the compiled kernels where it can;
- :class:`Sensor` — position noise, encoder quantization, a velocity measured or estimated, a delay;
  ``TrackingProblem(..., sensor=...)`` runs the loop through it at the sample instants;
- :func:`sensed_bounds` — the compensator's bounds widened by the sensor's measurement error, with what the
  theory covers ("guaranteed for this loop", "not guaranteed", "no bound");
- :func:`margins` — the largest noise, encoder resolution and delay a design tolerates (theory and simulation);
- :mod:`robustrack.loop.mujoco` — MuJoCo as the actual plant (``robustrack[mujoco]``), imported on use.
"""

from .bounds import nominal_acceleration, sensed_bounds
from .controller import Controller
from .margins import Margin, margins
from .sensor import VELOCITY_ESTIMATORS, MeasurementError, Sensor

__all__ = ["Controller", "Sensor", "MeasurementError", "VELOCITY_ESTIMATORS", "sensed_bounds",
           "nominal_acceleration", "margins", "Margin"]
