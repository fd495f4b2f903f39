"""Reports present results (issue #19): a run of a plant built in a script, and a campaign's result.

Truths: the result objects themselves — the report's summary.json must carry exactly the run's
metrics and the campaign's summary, its figures must be the ones the results can draw, and no
simulation may run while the report is written (the integrators are replaced by a trap).
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import sympy as sp

from robustrack.campaigns import ParameterUncertainty, monte_carlo
from robustrack.constraints import Holonomic, Stabilization
from robustrack.controllers import GSS, control_function
from robustrack.errors import ParameterError
from robustrack.plants import LagrangianPlant
from robustrack.reports import write_report
from robustrack.reports.describe import force_scale_note
from robustrack.scenarios.units import tracking_units
from robustrack.tracking import TrackingProblem


def _arm():
    """A mass on a spring and a pendulum hanging from it: a plant no catalog scenario holds."""
    t = sp.Symbol("t")
    x, th = sp.Function("x")(t), sp.Function("theta")(t)
    m1, m2, k, L, g = sp.symbols("m1 m2 k L g", positive=True)
    xd, thd = x.diff(t), th.diff(t)
    T = sp.Rational(1, 2) * (m1 + m2) * xd ** 2 + m2 * L * xd * thd * sp.cos(th) + sp.Rational(1, 2) * m2 * L ** 2 * thd ** 2
    V = sp.Rational(1, 2) * k * x ** 2 - m2 * g * L * sp.cos(th)
    plant = LagrangianPlant.from_energies([x, th], T, V, params={m1: 1.0, m2: 0.5, k: 4.0, L: 0.8, g: 9.81})
    # requirement: the pendulum swings as θ = 0.3 sin t (stabilized, W 2.2 / docs/theory/stabilization.md)
    q = sp.symbols("q1 q2")
    requirement = Holonomic(q[1] - 0.3 * sp.sin(t), list(q), t, stabilization=Stabilization.second_order(xi=1.0, omega=2.0))
    return plant, requirement


@pytest.fixture(scope="module")
def problem():
    plant, requirement = _arm()
    gss = GSS(K=10, gamma_prime=50, beta0=10, alpha0=0.5, sigma=1,
              f=control_function("signed-quadratic", eps=1e-2, alpha_c=2))
    actual = plant.replace(m2=0.6)
    return TrackingProblem(plant, requirement, gss, [0.0, 0.0], [0.0, 0.3], (0.0, 1.0), actual=actual,
                           n_points=101)


def _trap(monkeypatch):
    """Make every integration entry point raise: a report that simulates fails the test."""
    import robustrack.tracking.integrate as integrate

    def boom(*a, **k):
        raise AssertionError("the report ran a simulation")

    for name in ("integrate_nominal", "integrate_controlled", "integrate_uncompensated"):
        monkeypatch.setattr(integrate, name, boom)


@pytest.fixture(scope="module")
def script_report(problem, tmp_path_factory):
    """The script's run and its report, written once (under :func:`_trap`: the report runs nothing) for the
    tests that read it."""
    result = problem.simulate()
    with pytest.MonkeyPatch.context() as monkeypatch:
        _trap(monkeypatch)
        return result, write_report(result, tmp_path_factory.mktemp("script") / "rep")


def test_report_of_a_plant_built_in_a_script(problem, script_report):
    result, paths = script_report
    assert result.problem is problem  # the run keeps what produced it
    doc = json.loads(paths.summary.read_text(encoding="utf-8"))
    assert doc["scenario"] is None and doc["config"] is None and paths.scenario_toml is None
    assert "built in a script" in doc["title"]
    assert doc["metrics"]["max_abs_e"] == result.metrics["max_abs_e"]
    assert doc["metrics"]["bounds_held"] == result.metrics["bounds_held"]
    assert {f["file"] for f in doc["figures"]} == {f"figures/{n}.png" for n in
                                                  ("coordinates", "errors", "forces", "power", "residual")}
    md = paths.markdown.read_text(encoding="utf-8")
    # the run rows name what the actual plant changed, from the plants themselves
    assert "parameter m2: nominal → actual" in md and "0.5 → 0.6" in md
    assert "A plant built in a script." in paths.html.read_text(encoding="utf-8")


def test_a_loaded_result_needs_its_problem(problem, tmp_path):
    from robustrack.tracking import TrackingResult

    result = problem.simulate()
    result.save(tmp_path / "run")
    loaded = TrackingResult.load(tmp_path / "run")
    with pytest.raises(ParameterError, match="pass `problem=`"):
        write_report(loaded, tmp_path / "rep")
    paths = write_report(loaded, tmp_path / "rep2", problem=problem)
    assert json.loads(paths.summary.read_text(encoding="utf-8"))["metrics"]["max_abs_e"] == \
        result.metrics["max_abs_e"]
    with pytest.raises(ParameterError, match="must be a TrackingResult"):
        write_report("triple-pendulum", tmp_path / "rep3")


def test_campaign_report_from_a_study_result(problem, tmp_path, monkeypatch):
    """A Monte Carlo of the script's loop (serial: its sympy-built constraint stays in this process),
    presented beside the run: the section's numbers are the study's summary."""
    unc = ParameterUncertainty(("m1", "m2"), spread=0.1, seed=3)
    study = monte_carlo(problem, unc, 4, workers=1, progress=None)
    run = problem.simulate()
    worst = study.worst
    worst_run = problem.track(problem.nominal_run(), unc.actual(problem.nominal, worst.dm, worst.index))
    _trap(monkeypatch)
    paths = write_report(run, tmp_path / "rep", campaign=study, campaign_worst=worst_run)
    doc = json.loads(paths.summary.read_text(encoding="utf-8"))
    summary = study.summary()
    assert doc["campaign"]["completed"] == summary["completed"] == 4
    assert doc["campaign"]["max_abs_e"]["max"] == summary["max_abs_e"]["max"]
    assert {"figures/campaign.png", "figures/campaign-worst.png"} <= {f["file"] for f in doc["figures"]}
    fig = study.plot(unit="m")
    assert fig.axes and any(a.get_gid() == "campaign-bound" for a in fig.axes[0].get_children())


def _in_order(text: str, marks: list) -> bool:
    """Every mark is in ``text``, each after the one before."""
    positions = [text.find(m) for m in marks]
    return -1 not in positions and positions == sorted(positions)


def test_a_users_own_system_reads_verdict_first_and_cites_the_law_not_the_seeds_settings(script_report):
    """Issue 43: the answer first in both formats (the verdict, the errors against their bounds, the results,
    then the configuration), and no citation of W's settings for a plant W never had — only the law's source."""
    result, paths = script_report
    md, page = paths.markdown.read_text(encoding="utf-8"), paths.html.read_text(encoding="utf-8")
    word = {True: "bounds held", False: "bounds NOT held"}[result.metrics["bounds_held"]]  # the run's own verdict
    assert _in_order(md, [f"**Verdict: {word}:", "](figures/errors.png)", "## Results", "## What was run"])
    assert _in_order(page, [f"<b>Verdict: {word}:", '<figure id="errors"', "<h2>Results</h2>",
                            "<h2>What was run</h2>"])
    assert md.count("(figures/errors.png)") == 1 and page.count('<figure id="errors"') == 1  # not twice
    assert GSS.settings_source and GSS.source
    for text in (md, page):
        assert GSS.source in text and GSS.settings_source not in text and "settings W" not in text


def test_an_implausible_nominal_force_is_flagged(tmp_path):
    """The flag's truth is the plant's closed form: at rest it exerts (−k x, −m2 g L sin θ), along the motion
    (m2 L θ̇² sin θ − k x, −m2 g L sin θ); a nominal force more than 10 times the larger of the two is flagged, a
    plausible one is not (issue 54: judged against the motion the requirement asks for)."""
    plant, gentle = _arm()
    t = sp.Symbol("t")
    q = sp.symbols("q1 q2")
    violent = Holonomic(q[1] - 0.02 * sp.sin(60 * t), list(q), t,
                        stabilization=Stabilization.second_order(xi=1.0, omega=2.0))
    p = plant.params
    for name, requirement, qd0 in (("gentle", gentle, [0.0, 0.3]), ("violent", violent, [0.0, 1.2])):
        result = TrackingProblem(plant, requirement, GSS(), [0.0, 0.0], qd0, (0.0, 1.0), n_points=201,
                                 uncompensated=False).simulate()
        x, th, thd = result.q[:, 0], result.q[:, 1], result.qd[:, 1]
        gravity = np.abs(p["m2"] * p["g"] * p["L"] * np.sin(th)).max()
        at_rest = max(np.abs(p["k"] * x).max(), gravity)
        moving = max(np.abs(p["m2"] * p["L"] * thd ** 2 * np.sin(th) - p["k"] * x).max(), gravity)
        implausible = result.metrics["max_abs_Qc"] > 10 * max(at_rest, moving)
        assert implausible == (name == "violent"), (name, result.metrics["max_abs_Qc"], at_rest, moving)
        assert (force_scale_note(result, plant, tracking_units(plant)) is not None) == implausible, name
        if not implausible:
            continue  # the report shows the note the function gives: the flagged one is written below
        paths = write_report(result, tmp_path / name)
        for text in (paths.markdown.read_text(encoding="utf-8"), paths.html.read_text(encoding="utf-8")):
            assert ("implausible magnitude" in text) == implausible, name
            head = text.split("Results")[0]
            assert ("implausible magnitude" in head) == implausible  # said with the verdict, before the results
