"""The scenario catalog: validation errors, and every seed scenario against its truth."""

import json
import subprocess
import sys

from pathlib import Path

import numpy as np
import pytest

from robustrack.cli import main
from robustrack.errors import ScenarioError
from robustrack.scenarios import KINDS, list_scenarios, load_scenario, run_scenario
from robustrack.scenarios.runner import run_constrained_scenario
from robustrack.scenarios.scenario import catalog_path

CATALOG_ALL = list_scenarios()
CATALOG = [s.name for s in CATALOG_ALL if not KINDS[s.kind].tracking]


def test_catalog_has_the_seed_scenarios():
    for name in ["triple-pendulum-energy", "duffing", "cartesian-pendulum", "nonholonomic-particle",
                 "chaplygin-skate", "rolling-wheel", "quaternion-rigid-body", "two-ellipses",
                 "two-masses-springs", "speed-reducer", "appell-particle", "duffing-tracking", "triple-pendulum", "triple-pendulum-unconstrained"]:
        assert name in [s.name for s in CATALOG_ALL]


# Short horizons keep the suite fast; each truth is independent of the engine.
SHORT = {
    "triple-pendulum-energy": ("simulation.t_end=3", {}),
    "duffing": ("simulation.t_end=2", {"max_error_vs_closed_form": 1e-8}),
    "cartesian-pendulum": ("simulation.t_end=2", {"max_error_vs_closed_form": 1e-7}),
    "nonholonomic-particle": ("simulation.t_end=10", {"max_error_vs_closed_form": 1e-8}),
    "chaplygin-skate": ("simulation.t_end=10", {"max_error_vs_closed_form": 1e-8}),
    # issue 12's models (thorough checks in test_model_scenarios.py); rtol 1e-10 runs
    "chaplygin-skate-vakonomic": ("simulation.t_end=1", {"max_error_vs_closed_form": 1e-8, "energy_drift": 1e-8}),
    "speed-reducer-variational": ("simulation.t_end=2", {"max_error_vs_closed_form": 1e-8, "energy_drift": 1e-8}),
    # issue 21: S (3.6) and (3.5), closed forms (thorough checks in test_anatomy.py); rtol 1e-10 runs
    "speed-holding-particle": ("simulation.t_end=2", {"max_error_vs_closed_form": 1e-8, "max_speed_error": 1e-8}),
    "speed-holding-particle-lusternik": ("simulation.t_end=2", {"max_error_vs_closed_form": 1e-8,
                                                                "energy_balance_error": 1e-7}),
    "suslov-servo": ("simulation.t_end=10", {"max_abs_omega_dot_l": 1e-9, "energy_drift": 1e-9}),
    "skate-friction": ("simulation.t_end=2", {}),  # the error vs the limit is O(1/N): not a solver truth
    "skate-added-mass": ("simulation.t_end=1", {}),
    "rolling-wheel": ("simulation.t_end=2", {"max_error_vs_closed_form": 1e-9, "max_Qc_error_vs_closed_form": 1e-9}),
    "quaternion-rigid-body": ("simulation.t_end=2", {"max_Qc_error_vs_closed_form": 1e-8, "energy_drift": 1e-8,
                                                     "max_constraint_residual": 1e-8}),
    "two-ellipses": ("simulation.t_end=1", {"max_Qc_error_vs_closed_form": 1e-8, "max_constraint_residual": 1e-8}),
    "two-masses-springs": ("simulation.t_end=10", {"max_error_vs_closed_form": 1e-8,
                                                   "max_constraint_residual": 1e-10}),
    "appell-particle": ("simulation.t_end=2", {"max_error_vs_closed_form": 1e-9, "max_constraint_residual": 1e-9}),
    "speed-reducer": ("simulation.t_end=10", {"max_x_error_vs_closed_form": 1e-8,
                                              "max_phi_dot_error_vs_closed_form": 1e-8,
                                              "rotational_energy_drift": 1e-8, "max_constraint_residual": 1e-8}),
}


@pytest.mark.parametrize("name", CATALOG)
def test_every_scenario_meets_its_truth(name):
    override, limits = SHORT[name]
    _, summary = run_constrained_scenario(load_scenario(name, [override]))
    assert summary["solver"]["success"]
    accel = summary["metrics"]["max_accel_residual"]
    if name in ("skate-friction", "skate-added-mass"):  # penalty models: no constraint rows, nothing to measure
        assert accel is None and summary["metrics"]["max_constraint_residual"] is None
    else:
        assert accel < 1e-9
    for key, limit in limits.items():
        assert summary["metrics"][key] < limit, (key, summary["metrics"][key])


def test_appell_particle_refuses_the_singular_point():
    """Rising, ż reaches 0 at t = 2ż(0)/g, where A = 2(−ẋ, −ẏ, ż) vanishes: refused, with the time."""
    with pytest.raises(ScenarioError, match=r"t = 2ż\(0\)/g = 0.2039 s"):
        run_constrained_scenario(load_scenario("appell-particle", ["initial.rising=true"]))
    _, summary = run_constrained_scenario(load_scenario("appell-particle", ["initial.rising=true",
                                                                            "simulation.t_end=0.15"]))
    assert summary["metrics"]["max_error_vs_closed_form"] < 1e-9


@pytest.mark.parametrize("compensator", ["gss", "gd", "gdbar"])
def test_duffing_tracking_stays_inside_the_promised_bounds(compensator):
    """The second tracking scenario: KU's forced Duffing oscillator with masses (m1, m2) + δm."""
    doc = run_scenario(load_scenario("duffing-tracking", ["simulation.t_end=4"]), compensator=compensator)
    m, b = doc["metrics"], doc["bounds"]
    assert doc["solver"]["success"] and b["assumptions_held"] and b["held"]
    assert m["max_abs_edot"] <= b["edot"] and m["max_abs_e"] <= b["e"]
    assert m["max_abs_e"] < 0.02 * m["actual_max_abs_e"]  # the uncompensated plant drifts by ~1 m
    assert m["max_constraint_residual_nominal"] < 1e-6


def test_energy_control_decays_initial_violation():
    """W 2.3: E1(0) ≈ −5.3 J decays under Ė1 + α E1 = 0, α = 0.02‖A‖⁴."""
    result, summary = run_constrained_scenario(load_scenario("triple-pendulum-energy", ["simulation.t_end=6"]))
    m = summary["metrics"]
    assert m["E1_initial"] == pytest.approx(9.81 * np.cos(1.0) - 0.5e-6, rel=1e-9)
    assert m["E1_final"] < 1e-3 * m["E1_initial"]


def test_duffing_slow_decay_variant():
    _, summary = run_constrained_scenario(load_scenario("duffing", ["constraint.alpha=0.4", "simulation.t_end=3"]))
    assert summary["metrics"]["max_error_vs_closed_form"] < 1e-8


@pytest.mark.parametrize("kind", ["catalog", "python", "urdf"])
def test_a_misspelt_key_anywhere_is_named_with_its_line_and_the_nearest_key(kind, tmp_path):
    """Item 9 of issue 32: ``factroy = …`` in a python kind's [problem] said "needs [problem] with `factory`"
    (no key, no line); a misspelt [scenario] key had no line. Every table of every kind — [scenario] too — now
    names the unknown key or section with its line (counted here from the text) and difflib's nearest known one."""
    import shutil

    if kind == "catalog":
        text, edits = (catalog_path() / "duffing.toml").read_text(), [("t_end = ", "t_ned = "), ("[plant]", "[plnat]")]
    elif kind == "python":
        for name in ("arm.toml", "my_arm.py"):
            shutil.copy(Path(__file__).parent / "data" / "own_arm" / name, tmp_path / name)
        text, edits = (tmp_path / "arm.toml").read_text(), [("factory = ", "factroy = "),
                                                           ("parameters = ", "paramters = ")]
    else:
        text, edits = (catalog_path() / "ur5-payload.toml").read_text(), [("payload_mass = ", "payload_mas = ")]
    edits.append(("title = ", "titel = "))
    path = tmp_path / "bad.toml"
    for old, new in edits:
        assert old in text, old
        bad = text.replace(old, new, 1)
        path.write_text(bad)
        line = 1 + next(i for i, ln in enumerate(bad.splitlines()) if ln.startswith(new))
        word = new.strip(" =[]")
        right = old.strip(" =[]")
        if new.startswith("["):
            match = rf"bad.toml \(line {line}\): unknown section \[{word}\] \(did you mean `{right}`\?\)"
        else:
            match = rf"bad.toml \(line {line}\): unknown key `\w+\.{word}` \(did you mean `\w+\.{right}`\?\); \["
        with pytest.raises(ScenarioError, match=match):
            load_scenario(str(path))
    with pytest.raises(ScenarioError, match=r"unknown key `simulation.zzz`; \[simulation\] accepts"):  # none near
        load_scenario("duffing", ["simulation.zzz=1"])


@pytest.mark.parametrize("typed", ["tripple-pendulum", "duffing_tracking", "ur5-payloud"])
def test_a_mistyped_scenario_name_gets_the_nearest_catalog_name(typed):
    """Issue 43: as for a mistyped key, the nearest known name — here the catalog's files, listed independently."""
    import difflib

    names = sorted(p.stem for p in catalog_path().glob("*.toml"))
    (near,) = difflib.get_close_matches(typed, names, n=1)
    assert near != typed
    with pytest.raises(ScenarioError, match=rf"unknown scenario '{typed}' \(did you mean `{near}`\?\); the catalog has"):
        load_scenario(typed)
    with pytest.raises(ScenarioError) as far:  # nothing near: no suggestion, the list only
        load_scenario("zzzz")
    assert "did you mean" not in str(far.value) and "the catalog has" in str(far.value)


def test_unknown_key_names_key_and_line(tmp_path):
    text = (catalog_path() / "duffing.toml").read_text()
    bad = text.replace("k2 = 12.0", "k2 = 12.0\nk3 = 1.0")
    path = tmp_path / "bad.toml"
    path.write_text(bad)
    with pytest.raises(ScenarioError, match=r"bad.toml \(line \d+\): unknown key `plant.k3`"):
        load_scenario(str(path))
    path.write_text(text.replace("t_end = 10.0", "t_end = 0.0"))
    line = 1 + text.splitlines().index("t_end = 10.0")
    with pytest.raises(ScenarioError, match=rf"bad.toml \(line {line}\): `simulation.t_end` must be"):
        load_scenario(str(path))


@pytest.mark.parametrize("override, match", [
    ("plant.m3=1", "unknown key `plant.m3`"),
    ("nosection.x=1", "unknown section"),
    ("simulation.t_end=abc", "must be a number"),
    ("simulation.t_end=-1", r"`simulation.t_end` must be > 0"),
    ("simulation.n_points=1", r"`simulation.n_points` must be an integer in \[2, 1,000,000\]"),
    ("simulation.rtol=0", r"`simulation.rtol` must be in \[2.22e-14, 1\)"),
    ("simulation.atol=inf", r"`simulation.atol` must be a finite number"),
    ("initial.q=[1.0]", "list of 2 numbers"),
    ("t_end=3", "SECTION.KEY"),
])
def test_bad_overrides(override, match):
    with pytest.raises(ScenarioError, match=match):
        load_scenario("duffing", [override])


def test_unknown_scenario_lists_catalog(tmp_path):
    with pytest.raises(ScenarioError, match="duffing"):
        load_scenario("no-such-scenario")
    with pytest.raises(ScenarioError, match="not found"):
        load_scenario(str(tmp_path / "missing.toml"))


def test_compensator_flag_refused_for_constrained_scenarios():
    with pytest.raises(ScenarioError, match="tracking scenarios"):
        run_scenario(load_scenario("duffing"), compensator="gss")


def test_cli_run_writes_json(tmp_path, capsys):
    out = tmp_path / "r.json"
    assert main(["run", "chaplygin-skate", "--set", "simulation.t_end=2", "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert doc["scenario"] == "chaplygin-skate"
    assert doc["metrics"]["max_error_vs_closed_form"] < 1e-8
    assert doc["metrics"]["max_constraint_residual"] < 1e-8
    for key in ("method", "rtol", "atol", "nfev", "success", "wall_s"):
        assert key in doc["solver"]
    assert "max_error_vs_closed_form" in capsys.readouterr().out


def test_cli_errors_are_clear(capsys):
    assert main(["run", "duffing", "--set", "plant.m3=1"]) == 2
    assert "unknown key `plant.m3`" in capsys.readouterr().err


def test_console_entry_point_lists_catalog():
    proc = subprocess.run([sys.executable, "-m", "robustrack.cli", "list"], capture_output=True, text=True,
                          check=True)
    assert "triple-pendulum-energy" in proc.stdout and "duffing" in proc.stdout
