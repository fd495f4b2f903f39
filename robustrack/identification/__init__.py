"""Identifying the actual plant's parameters from tracking data or a robot's log (W ch. 10).

- :mod:`~robustrack.identification.regression` — the regressor Y of r(θ) = M q̈ − Q, linear in the
  parameters, and least squares with cluster-robust standard errors (the differential form);
- :mod:`~robustrack.identification.integral` — the integral (momentum) form: q, q̇ and the force, no q̈;
- :mod:`~robustrack.identification.symbolic` — the regressor by sympy where the plant has a symbolic form;
- :mod:`~robustrack.identification.payload` — a robot's payload mass, centre of mass and inertia;
- :mod:`~robustrack.identification.friction` — joint friction coefficients (``viscous_<joint>``,
  ``coulomb_<joint>``), closed-form columns beside the plant's parameters;
- :func:`identify` (:mod:`~robustrack.identification.estimate`) — one entry point choosing the form.

A saved run of a scenario is identified at the scenario level (:mod:`robustrack.scenarios.identification`,
``robustrack identify``). Docs: docs/guide/identification.md.
"""

from .estimate import identify
from .integral import DEFAULT_RESOLUTION, DEFAULT_WINDOW, identify_log
from .payload import PAYLOAD_PARAMETERS, PayloadEstimate, PayloadInertialPlant, identify_payload
from .regression import (DEFAULT_CONDITION_LIMIT, Identification, PoorExcitation, Regressor, applied_force,
                         check_finite_run, differentiated_accelerations, identify_motion, linear_parameters,
                         parameter_values, refuse_unexcited, regressor, simulated_accelerations)

__all__ = ["identify", "identify_motion", "identify_log", "identify_payload", "Identification", "Regressor",
           "regressor", "parameter_values", "linear_parameters", "check_finite_run", "refuse_unexcited",
           "simulated_accelerations", "differentiated_accelerations", "applied_force", "PoorExcitation",
           "PayloadInertialPlant", "PayloadEstimate", "PAYLOAD_PARAMETERS", "DEFAULT_CONDITION_LIMIT", "DEFAULT_WINDOW",
           "DEFAULT_RESOLUTION"]
