"""The report's robustness section: histogram of max ‖e‖∞ with the promised bound, held fraction, worst sample."""

import json

import numpy as np
import pytest

from robustrack.cli import main
from robustrack.errors import ParameterError
from robustrack.campaigns import figures as F
from robustrack.reports import report_scenario, write_report

SHORT = ["simulation.t_end=0.5"]


def test_report_with_a_campaign_store(tmp_path, capsys):
    store = str(tmp_path / "c.sqlite")
    assert main(["montecarlo", "duffing-tracking", "--samples", "6", "--workers", "1", "--store", store,
                 "--set", SHORT[0]]) == 0
    paths = report_scenario("duffing-tracking", tmp_path / "rep", overrides=SHORT, campaign=store)
    names = [p.stem for p in paths.figures]
    assert "campaign" in names and "campaign-worst" in names
    doc = json.loads(paths.summary.read_text())
    assert doc["campaign"]["completed"] == 6 and doc["campaign"]["held_fraction"] == 1.0
    assert "wall_s" not in doc["campaign"]
    md = paths.markdown.read_text()
    assert "Robustness campaign" in md and "worst sample" in md
    with pytest.raises(ParameterError, match="other settings"):
        report_scenario("duffing-tracking", tmp_path / "rep2", campaign=store)  # not the campaign's horizon
    capsys.readouterr()


def test_report_runs_its_own_montecarlo(tmp_path):
    paths = report_scenario("duffing-tracking", tmp_path / "rep", overrides=SHORT, montecarlo=4, seed=2)
    doc = json.loads(paths.summary.read_text())
    assert doc["campaign"]["samples"] == 4 and doc["campaign"]["seed"] == 2


def test_histogram_marks_the_promised_bound():
    fig = F.campaign_histogram_figure(np.array([1e-4, 2e-4, 1.5e-4]), bound=5e-4, unit="m")
    lines = [a for ax in fig.axes for a in ax.get_lines() if a.get_gid() == "campaign-bound"]
    assert len(lines) == 1 and lines[0].get_xdata()[0] == pytest.approx(5e-4)
    with pytest.raises(ParameterError):
        F.campaign_histogram_figure([])
