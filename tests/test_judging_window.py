"""A run that judges no bound names no judging window (issue 11): the underactuated pendulum's
bound is not promised, so no "judged from t = 0 s", no "promised ‖e‖∞ ≤", no "Γ they are judged at";
a fully actuated run keeps them."""

from __future__ import annotations

import json
import re

import pytest

from robustrack.cli import main
from robustrack.reports import report_scenario, write_report
from robustrack.reports.text import bounds_judged, format_metric

SET = ["simulation.t_end=0.3", "simulation.n_points=61"]
CLAIMS = ("judged from the start", "judged over the whole run", "judged after", "inside the bounds from the start",
          "Γ the bounds are judged at", "Γ they are judged at", "promised ‖e‖∞ ≤", "promised bound",
          "judged at Γ", "## Promised bounds")


@pytest.mark.parametrize("bounds, held, expected", [
    ({"e": 1e-3, "edot": 1e-2}, True, True), ({"e": 1e-3, "edot": 1e-2}, False, True),
    ({"e": 1e-3, "edot": 1e-2}, None, False),  # promised by the theory, not judged in the run
    ({"e": float("inf"), "edot": float("inf")}, True, False), (None, None, False), ({}, True, False)])
def test_bounds_judged(bounds, held, expected):
    assert bounds_judged(bounds, held) is expected


def test_format_metric_claims_a_window_only_when_judged():
    units = {"metrics": {"transient_s": "s", "reaching_time": "s"}}
    judged = {"e": 1e-3, "edot": 1e-2, "held": True}
    not_judged = {**judged, "held": None}
    assert format_metric("transient_s", 0.0, units, judged) == "0 s (judged from the start)"
    assert format_metric("reaching_time", 0.0, units, judged) == "inside the bounds from the start (t = 0 s)"
    assert "judged from" not in format_metric("transient_s", 0.0, units, not_judged)
    assert format_metric("transient_s", 0.0, units, not_judged) == "0 s (no bound is judged in this run)"
    assert format_metric("reaching_time", 0.0, units, not_judged) == "— (no bound is judged in this run)"


def _claims(text):
    return [c for c in CLAIMS if c in text]


def test_underactuated_cli_and_report_claim_no_window(tmp_path, capsys):
    assert main(["run", "triple-pendulum-underactuated", *[a for s in SET for a in ("--set", s)],
                 "--json", str(tmp_path / "run.json")]) == 0
    out = capsys.readouterr().out
    summary = json.loads((tmp_path / "run.json").read_text(encoding="utf-8"))
    assert summary["bounds"]["held"] is None and "not promised" in summary["bounds"]["note"]
    # the note's measured errors carry the coordinates' unit (the pendulum's angles)
    assert re.search(r"per coordinate [-\d.e+]+ rad, [-\d.e+]+ rad, [-\d.e+]+ rad", summary["bounds"]["note"])
    assert _claims(out) == [], out
    assert "compensator's bound (not promised)" in out
    paths = report_scenario("triple-pendulum-underactuated", tmp_path / "rep", overrides=SET)
    md = paths.markdown.read_text(encoding="utf-8")
    assert _claims(md) == [], [line for line in md.splitlines() if _claims(line)]
    assert "no bound is judged in this run" in md and "not promised for this run" in md


# the fully actuated counterpart (the triple pendulum's report keeps its judging window) reads the report
# test_reports.py writes anyway: test_reports.py::test_a_fully_actuated_report_keeps_its_window
