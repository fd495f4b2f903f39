"""Scenarios: the seed examples as validated TOML configurations, and running them.

Importing this package registers the built-in scenario kinds (:mod:`.kinds`,
:mod:`.model_kinds`, :mod:`.tracking_kinds`, :mod:`.python_kind`, :mod:`.urdf_kind`) in :data:`KINDS`
(:mod:`robustrack.scenarios.registry`).
"""

from .registry import KINDS, Problem, ScenarioKind, get_kind, register_kind
from . import anatomy_kinds, kinds, model_kinds, python_kind, tracking_kinds, urdf_kind  # noqa: F401, E402  (register the built-in kinds
from .scenario import Scenario, list_scenarios, load_scenario
from .runner import run_scenario

__all__ = ["KINDS", "Problem", "Scenario", "ScenarioKind", "get_kind", "list_scenarios", "load_scenario",
           "register_kind", "run_scenario"]
