"""The scenario-kind registry: kinds registered on import, the lookup's error, one source of choices.

Truths used: the registries the choices must come from (``controllers.COMPENSATORS``,
``controllers.CONTROL_FUNCTIONS``, ``campaigns.tuning.TUNABLE``), read directly, not through
:mod:`robustrack.scenarios.registry`; and KU ex. 3's closed form of ẋ1(0) for a directly built scenario.
"""

import argparse
import copy
import subprocess
import sys

import pytest

from robustrack.campaigns.tuning import TUNABLE
from robustrack.cli import build_parser
from robustrack.controllers import COMPENSATORS, CONTROL_FUNCTIONS
from robustrack.errors import ParameterError, ScenarioError
from robustrack.scenarios import KINDS, Scenario, ScenarioKind, load_scenario, register_kind
from robustrack.scenarios.compare import compare
from robustrack.scenarios.registry import accepted, tunable

FRESH = """
import copy
from robustrack.scenarios.scenario import Scenario
from robustrack.scenarios.registry import KINDS
cfg = copy.deepcopy(KINDS["duffing"].schema)
pb = Scenario("mine", "duffing", "", "", cfg).build()
c = cfg["constraint"]
print(type(pb.plant).__name__, pb.qd0[0] - pb.qd0[1], c["amplitude"] * c["omega"])
try:
    Scenario("mine", "no-such-kind", "", "", {}).build()
except Exception as exc:
    print(type(exc).__name__, exc)
"""


def test_a_scenario_built_in_python_builds_in_a_fresh_interpreter():
    res = subprocess.run([sys.executable, "-c", FRESH], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    built, refused = res.stdout.splitlines()
    name, rate, closed_form = built.split()
    # KU 35c: x1 − x2 = A e^{−αt} sin ωt gives ẋ1(0) − ẋ2(0) = A ω (same float operations: exact)
    assert name == "CoupledDuffing" and float(rate) == float(closed_form)
    assert refused.startswith("ScenarioError unknown scenario kind 'no-such-kind'; known kinds:")
    for kind in ("duffing", "triple-pendulum-tracking", "suslov-servo"):  # one of each built-in module
        assert repr(kind) in refused


def test_an_unknown_kind_is_a_scenario_error_everywhere():
    sc = Scenario("mine", "no-such-kind", "", "", {})
    for call in (sc.build, lambda: sc.with_overrides(["simulation.t_end=1"])):
        with pytest.raises(ScenarioError, match="known kinds: .*'triple-pendulum-tracking'"):
            call()


def _options(sub: str) -> dict:
    parser = build_parser()
    subparsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return {opt: a for a in subparsers.choices[sub]._actions for opt in a.option_strings}


@pytest.mark.parametrize("sub", ["run", "report", "montecarlo", "worst-case"])
def test_cli_compensator_choices_are_the_registries(sub):
    opts = _options(sub)
    assert list(opts["--compensator"].choices) == ["none", *COMPENSATORS]
    assert all(name in opts["--f"].help for name in CONTROL_FUNCTIONS)
    assert opts["--f"].type("Signed_Quadratic") == "Signed_Quadratic"  # spelled as TOML loading accepts it
    with pytest.raises(argparse.ArgumentTypeError, match="`--f` must be one of"):
        opts["--f"].type("bogus")


def test_cli_tune_and_compare_choices_are_the_registries():
    assert set(_options("tune")["--compensator"].choices) == set(TUNABLE) == set(tunable())
    opts = _options("compare")
    assert all(name in opts["--compensators"].help for name in ["none", *COMPENSATORS])
    assert all(name in opts["--f"].help for name in CONTROL_FUNCTIONS)


def test_every_offered_compensator_loads_and_builds():
    # the CLI's choices are what loading accepts, and each one a tracking scenario can build
    tables = {k for k, v in load_scenario("triple-pendulum").config["compensator"].items() if isinstance(v, dict)}
    assert tables == set(COMPENSATORS)  # one [compensator.NAME] table per registered compensator
    for name in accepted("compensator.type"):
        comp = load_scenario("triple-pendulum", [f"compensator.type={name.upper()}"]).build().compensator
        assert (comp is None) if name == "none" else comp.name == name
    for f in accepted("compensator.f"):
        comp = load_scenario("triple-pendulum", ["compensator.type=gss", f"compensator.f={f}"]).build().compensator
        assert comp.f.name == f


@pytest.mark.parametrize("key, value", [("type", "pid"), ("f", "relu")])
def test_loading_refuses_what_the_cli_does_not_offer(key, value):
    with pytest.raises(ScenarioError, match=rf"`compensator.{key}` must be one of .*got '{value}'"):
        load_scenario("duffing-tracking", [f"compensator.{key}={value}"])


def test_register_kind_refuses_bad_declarations():
    kind = KINDS["duffing"]
    with pytest.raises(ScenarioError, match="already registered"):
        register_kind(kind)
    bad = ScenarioKind("test-bad-choices", copy.deepcopy(kind.schema), kind.build, choices={"plant.nope": ("a",)})
    with pytest.raises(ScenarioError, match="not a key of its schema"):
        register_kind(bad)
    assert "test-bad-choices" not in KINDS


def test_compare_refuses_unknown_names_before_running():
    with pytest.raises(ParameterError, match=r"`compensators` must name entries of .*got \['pid'\]"):
        compare("triple-pendulum", compensators="gss,pid", progress=False)
    with pytest.raises(ParameterError, match=r"`fs` must name entries of .*got \['relu'\]"):
        compare("triple-pendulum", fs="sign,relu", progress=False)
