"""What the CLI prints: `show` is a file `run` accepts, and `run` gives every number its unit.

Truths: tomllib and load_scenario reading the printed text back (the same configuration
as the catalog file), and the plant's coordinates (the Duffing oscillator's are
positions: no "rad" may appear).
"""

from __future__ import annotations

import re

import pytest

from robustrack.cli import main
from robustrack.scenarios import list_scenarios, load_scenario

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

CATALOG = [s.name for s in list_scenarios()]


def _show(capsys, *args):
    assert main(["show", *args]) == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("name", CATALOG)
def test_show_prints_a_file_that_loads_to_the_same_scenario(name, capsys, tmp_path):
    text = _show(capsys, name)
    doc = tomllib.loads(text)  # valid TOML as printed, comments included
    assert doc["scenario"]["name"] == name
    path = tmp_path / f"{name}.toml"
    path.write_text(text, encoding="utf-8")
    shown, original = load_scenario(path), load_scenario(name)
    assert (shown.name, shown.kind, shown.title, shown.source) == (original.name, original.kind, original.title,
                                                                   original.source)
    assert shown.config == original.config


def test_show_with_overrides_round_trips_the_overrides(capsys, tmp_path):
    sets = ["--set", "uncertainty.dm=[0.5, -0.8, 1.5]", "--set", "compensator.gss.gamma_prime=800"]
    path = tmp_path / "tp.toml"
    path.write_text(_show(capsys, "triple-pendulum", *sets), encoding="utf-8")
    expected = load_scenario("triple-pendulum", ["uncertainty.dm=[0.5, -0.8, 1.5]", "compensator.gss.gamma_prime=800"])
    assert load_scenario(path).config == expected.config
    assert expected.config != load_scenario("triple-pendulum").config


def test_run_accepts_what_show_printed(capsys, tmp_path):
    path = tmp_path / "duffing.toml"
    path.write_text(_show(capsys, "duffing-tracking"), encoding="utf-8")
    assert main(["run", str(path), "--set", "simulation.t_end=0.2", "--set", "simulation.n_points=51"]) == 0
    assert capsys.readouterr().out.startswith("duffing-tracking: ")


def _lines(out):
    return {m.group(1): m.group(2) for m in re.finditer(r"^  (\w+)\s{2,}(.+)$", out, re.M)}


def test_run_prints_every_number_with_the_plants_units(capsys):
    assert main(["run", "duffing-tracking", "--set", "simulation.t_end=0.3"]) == 0
    out = capsys.readouterr().out
    assert "rad" not in out  # x1, x2 are positions
    lines = _lines(out)
    expect = {"max_abs_e": " m", "max_abs_edot": " m/s", "rms_e": " m", "iae_e": " m·s", "max_abs_Qu": " N",
              "max_abs_Qc": " N", "effort_Qu": " N·s", "chattering_Qu": " N/s", "max_norm_dq": " m/s²",
              "max_constraint_residual_controlled": " m", "actual_max_abs_e": " m"}
    for key, unit in expect.items():
        assert lines[key].endswith(unit), (key, lines[key])
    assert lines["reaching_time"] == "inside the bounds from the start (t = 0 s)"
    assert lines["transient_s"] == "0 s (judged from the start)"
    assert re.search(r"promised bound on ‖e‖∞ / ‖ė‖∞\s+\S+ m / \S+ m/s", out)
    assert re.search(r"judged at Γ \(bound on ‖δq‖∞\)\s+10 m/s²", out)


def test_run_of_the_pendulum_prints_radians_and_newton_metres(capsys):
    assert main(["run", "triple-pendulum", "--set", "simulation.t_end=0.1", "--compensator", "none"]) == 0
    lines = _lines(capsys.readouterr().out)
    assert lines["max_abs_e"].endswith(" rad") and lines["max_abs_Qc"].endswith(" N·m")
    assert lines["reaching_time"] == "— (nothing promised)"
