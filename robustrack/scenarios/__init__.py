"""Scenarios: the seed examples as validated TOML configurations, and running them."""

from .scenario import KINDS, Problem, Scenario, ScenarioKind, list_scenarios, load_scenario, register_kind
from .runner import run_scenario

__all__ = ["KINDS", "Problem", "Scenario", "ScenarioKind", "list_scenarios", "load_scenario",
           "register_kind", "run_scenario"]
