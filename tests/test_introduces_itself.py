"""The package introduces itself: LICENSE as declared, `list` without internal issue numbers, `report`'s
last line a verdict with its numbers, and results whose repr is a summary rather than every sample.

Truths: pyproject.toml read by tomllib; the catalog's own sources; independent runs of the same scenario
(their metrics, formatted by the one value formatter); the summaries' own numbers.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from robustrack._format import format_value
from robustrack.cli import main as cli_main
from robustrack.plants.units import coordinate_units
from robustrack.scenarios import list_scenarios, load_scenario
from robustrack.scenarios.tracking_kinds import run_tracking

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
OWN_ARM = ROOT / "tests" / "data" / "own_arm" / "arm.toml"
SHORT = ["simulation.t_end=0.5", "simulation.n_points=251"]


def test_license_file_matches_pyproject():
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["license"]
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert declared == "MIT" and text.startswith("MIT License") and "Permission is hereby granted" in text
    assert (ROOT / "CHANGELOG.md").read_text(encoding="utf-8").startswith("# Changelog")


def test_list_names_each_source_without_issue_numbers(capsys):
    assert cli_main(["list"]) == 0
    out = capsys.readouterr().out
    for s in list_scenarios():
        assert s.source in out and s.title in out
    assert not re.search(r"issue|#\d", out, re.IGNORECASE), [ln for ln in out.splitlines() if "issue" in ln.lower()]


def _report_lines(capsys, tmp_path, *args):
    assert cli_main(["report", *args, "-o", str(tmp_path / "r")]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    summary = json.loads((tmp_path / "r" / "summary.json").read_text(encoding="utf-8"))
    return lines, summary


@pytest.mark.parametrize("name", ["triple-pendulum", str(OWN_ARM)])
def test_report_ends_with_the_verdict_and_its_numbers(name, capsys, tmp_path):
    sets = SHORT if name == "triple-pendulum" else []
    lines, summary = _report_lines(capsys, tmp_path, name, *[a for s in sets for a in ("--set", s)])
    last = lines[-1]
    # an independent run of the same scenario: the verdict's numbers and word are its own
    result, _ = run_tracking(load_scenario(name, sets or None))
    m, b = result.metrics, result.bounds
    assert m.bounds_held is not None
    assert last.startswith("verdict: bounds held: " if m.bounds_held else "verdict: bounds NOT held: ")
    unit_e, unit_ed = summary["units"]["q"], summary["units"]["qd"]
    assert f"max‖e‖∞ {format_value(m.max_abs_e_after_transient, unit_e)} " in last
    assert f"{format_value(b['e'], unit_e)}" in last and f"{format_value(b['edot'], unit_ed)}" in last
    assert ("assumptions held: guaranteed" in last) == bool(m.bounds_held and m.assumptions_held)
    assert summary["metrics"]["bounds_held"] == m.bounds_held
    if name == str(OWN_ARM):  # the report of a TOML naming a script shows the script's own constraint, not "none"
        assert "Holonomic, 1 row" in (tmp_path / "r" / "report.md").read_text(encoding="utf-8")


def test_report_verdict_when_nothing_is_promised_or_judged(capsys, tmp_path):
    lines, _ = _report_lines(capsys, tmp_path / "none", "triple-pendulum", "--compensator", "none", "--set", SHORT[0])
    assert lines[-1] == "verdict: nothing promised: no compensator bound to judge"
    lines, summary = _report_lines(capsys, tmp_path / "under", "triple-pendulum-underactuated", "--set", SHORT[0])
    assert summary["metrics"]["bounds_held"] is None
    assert lines[-1] == f"verdict: no bound judged in this run: {summary['bounds_note']}"


@pytest.fixture(scope="module")
def own_arm_runs():
    """The user's own arm (a LagrangianPlant from a script, tests/data/own_arm): a run, a Γ estimate, a campaign."""
    from robustrack.scenarios.campaign import run_montecarlo
    from robustrack.scenarios.gamma import run_gamma

    sc = load_scenario(str(OWN_ARM), ["simulation.t_end=0.3"])
    result, _ = run_tracking(sc)
    gamma = run_gamma(sc, 40, 0.1, seed=2).estimate
    campaign = run_montecarlo(sc, 3, 0.1, 0, progress=None)
    return result, gamma, campaign


def _short(text: str, lines: int):
    assert len(text.splitlines()) <= lines and len(text) < 160 * lines, text
    assert "array(" not in text and "..." not in text, text


def test_tracking_result_repr_is_a_summary(own_arm_runs):
    result = own_arm_runs[0]
    text = repr(result)
    _short(text, 3)
    m = result.metrics
    assert text.startswith(f"TrackingResult({result.info['compensator']['name']}, n = 2, ")
    units = coordinate_units(result.problem.nominal)  # the plant's units (its coordinates' kinds)
    assert f"max‖e‖∞ {format_value(m.max_abs_e, units.q)}" in text
    assert f"max‖Qᶜ‖∞ {format_value(m.max_abs_Qc, units.Q)}" in text
    assert ("bounds held:" in text) == (m.bounds_held is True)


def test_gamma_estimate_repr_is_a_summary(own_arm_runs):
    gamma = own_arm_runs[1]
    text = repr(gamma)
    _short(text, 1)
    ex = gamma.summary()["exact"]
    assert f"{gamma.n_samples} samples of m2" in text
    for value in (ex["median"], ex["p99"], ex["max"], gamma.gamma_prime):
        assert format_value(value) in text


def test_campaign_repr_is_a_summary(own_arm_runs):
    campaign = own_arm_runs[2]
    text = repr(campaign)
    _short(text, 3)
    doc = campaign.summary()
    assert f"{doc['completed']} of {campaign.samples} samples ran, {doc['failed']} failed" in text
    assert f"(observed) {format_value(100 * doc['held_fraction'], '%', digits=3)}" in text
    assert f"sample {doc['worst']['sample']}" in text
