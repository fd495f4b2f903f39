"""The seed studies of the motion a constraint produces, and of the force that produces it.

- :mod:`~robustrack.studies.constraint_models` — the constraint-model builders: the vakonomic model and
  Kozlov's limits (docs/theory/constraint-models.md);
- :mod:`~robustrack.studies.conflation` — the conflated (wrong) models of W ch. 3, checked against the
  fundamental equation;
- :mod:`~robustrack.studies.lusternik` — Lusternik's model of a force nonlinear in q̇;
- :mod:`~robustrack.studies.anatomy` — the anatomy of a control force (S 1.7): its power, work and workless part;

They stand on plants and constraints only (a layer below the tracking loop); the scenario kinds of
:mod:`robustrack.scenarios` and the scripts of docs/results run them. The pieces the core uses live in the core and
are re-exported here: the servo model and its realizability margin (:mod:`robustrack.plants.servo`), the power and
work of Qᶜ and Qᵘ along a tracking run (:mod:`robustrack.plants.power`).
"""

from .anatomy import (
    ANATOMY_UNITS, ConstraintDerivatives, constraint_derivatives, ReactionTerms, lusternik_terms, power, work,
    RunAnatomy, reaction_anatomy, TERMS,
)
from .conflation import (
    ConflatedModel, ConflatedRun, conflated_model, check_not_conflated, conflation_footprint,
    ConflationExample, w_chapter3_examples,
)
from .constraint_models import (
    NoConstraint, VakonomicMotion, vakonomic_motion, lagrangian_derivative, VakonomicPlant,
    VakonomicConstraint, VakonomicModel, ServoForce, realizability_margin, servo_force, ServoModel,
    anisotropic_friction_plant, added_mass_plant, DEFAULT_REALIZABILITY_RCOND, skate_model,
    nonholonomic_skate, vakonomic_skate_reduced, skate_penalty_plant, speed_reducer_model,
    variational_speed_reducer_reduced,
)
from .lusternik import (
    LusternikMotion, lusternik_motion, LusternikModel, speed_holding_model, dalembert_speed_holding,
    lusternik_speed_holding,
)
from ..plants.power import (
    ForcePower, ControlPower, force_power, control_power,
)

__all__ = [
    "ANATOMY_UNITS", "ConstraintDerivatives", "constraint_derivatives", "ReactionTerms", "lusternik_terms",
    "power", "work", "RunAnatomy", "reaction_anatomy", "TERMS", "ConflatedModel", "ConflatedRun",
    "conflated_model", "check_not_conflated", "conflation_footprint", "ConflationExample",
    "w_chapter3_examples", "NoConstraint", "VakonomicMotion", "vakonomic_motion", "lagrangian_derivative",
    "VakonomicPlant", "VakonomicConstraint", "VakonomicModel", "ServoForce", "realizability_margin",
    "servo_force", "ServoModel", "anisotropic_friction_plant", "added_mass_plant",
    "DEFAULT_REALIZABILITY_RCOND", "skate_model", "nonholonomic_skate", "vakonomic_skate_reduced",
    "skate_penalty_plant", "speed_reducer_model", "variational_speed_reducer_reduced", "LusternikMotion",
    "lusternik_motion", "LusternikModel", "speed_holding_model", "dalembert_speed_holding",
    "lusternik_speed_holding", "ForcePower", "ControlPower", "force_power", "control_power",
]
