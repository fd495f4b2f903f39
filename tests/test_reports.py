"""Tracking reports: files, self-containedness, numbers, determinism, figures, and a real browser.

Short horizon (t_end = 0.5 s) so the module runs in well under a minute. Truths are
independent of the report code: the metrics of a separate ``run_tracking`` call,
the PNG signature and decoder, the pendulum's closed-form kinematics, tomllib, and
headless Chromium counting the images it could decode.
"""

from __future__ import annotations

import base64
import dataclasses
import io
import json
import math
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from matplotlib import image as mpimg

from robustrack._format import format_value
from robustrack._json import to_jsonable
from robustrack.cli import main as cli_main
from robustrack.errors import OutputExistsError, ParameterError, ScenarioError
from robustrack.campaigns import figures as F
from robustrack.tracking import figures as RF
from robustrack.reports import report as report_module
from robustrack.reports import report_scenario, write_report
from robustrack.reports.report import figure_png, report_figures
from robustrack.scenarios import load_scenario
from robustrack.scenarios.gamma import run_gamma
from robustrack.scenarios.tracking_kinds import run_tracking

from browser import chromium as _chromium, headless as _headless

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

SET = ["simulation.t_end=0.5", "simulation.n_points=251"]
GAMMA = {"gamma_samples": 64, "gamma_spread": 0.1, "seed": 3}
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
FIGURES = ("trajectory", "coordinates", "errors", "forces", "power", "residual", "gamma")


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    """The same report written twice into two folders."""
    a = report_scenario("triple-pendulum", tmp_path_factory.mktemp("a"), overrides=SET, **GAMMA)
    b = report_scenario("triple-pendulum", tmp_path_factory.mktemp("b"), overrides=SET, **GAMMA)
    return a, b


def test_a_fully_actuated_report_keeps_its_window(reports):
    """The triple pendulum is fully actuated: its report judges the bounds from the start, at the Γ it names
    (the underactuated counterpart claims no window: test_judging_window.py)."""
    md = reports[0].markdown.read_text(encoding="utf-8")
    assert "judged from the start" in md and "Γ the bounds are judged at" in md and "## Promised bounds" in md
    assert "no bound is judged in this run" not in md


@pytest.fixture(scope="module")
def run():
    """An independent run of the same scenario: (scenario, result, gamma estimate)."""
    sc = load_scenario("triple-pendulum", SET)
    result, _ = run_tracking(sc)
    estimate = run_gamma(sc, GAMMA["gamma_samples"], GAMMA["gamma_spread"], seed=GAMMA["seed"]).estimate
    return sc, result, estimate


def _decode_png(data: bytes) -> np.ndarray:
    assert data.startswith(PNG_SIGNATURE)
    return mpimg.imread(io.BytesIO(data), format="png")


# --------------------------------------------------------------------------- #
# files and self-containedness
# --------------------------------------------------------------------------- #
def test_files_exist(reports):
    paths = reports[0]
    for p in (paths.html, paths.markdown, paths.summary, paths.scenario_toml):
        assert p.is_file() and p.stat().st_size > 0
    assert sorted(p.stem for p in paths.figures) == sorted(FIGURES)
    for p in paths.figures:
        img = _decode_png(p.read_bytes())
        assert img.shape[0] > 200 and img.shape[1] > 400


def test_html_is_self_contained(reports):
    text = reports[0].html.read_text(encoding="utf-8")
    assert "http" not in text
    assert 'src="figures/' not in text
    for tag in ("<script", "<link", "<iframe", "@import", "url("):
        assert tag not in text.lower()
    srcs = re.findall(r'<img [^>]*src="([^"]*)"', text)
    assert len(srcs) == len(FIGURES) == text.count("<img ")
    for src in srcs:
        prefix = "data:image/png;base64,"
        assert src.startswith(prefix)
        img = _decode_png(base64.b64decode(src[len(prefix):], validate=True))
        assert img.std() > 0  # not a blank image


def test_markdown_references_existing_pngs(reports):
    paths = reports[0]
    text = paths.markdown.read_text(encoding="utf-8")
    refs = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", text)
    assert sorted(Path(r).stem for r in refs) == sorted(FIGURES)
    for ref in refs:
        target = paths.out_dir / ref
        assert target.is_file() and target.read_bytes().startswith(PNG_SIGNATURE)
    for heading in ("## What was run", "## Results", "## Random seeds", "## Package versions", "## Solver statistics",
                    "## Full scenario configuration", "## Wall times"):
        assert heading in text


# --------------------------------------------------------------------------- #
# numbers
# --------------------------------------------------------------------------- #
def test_summary_numbers_equal_an_independent_run(reports, run):
    _, result, estimate = run
    doc = json.loads(reports[0].summary.read_text(encoding="utf-8"))
    assert doc["metrics"] == to_jsonable(result.metrics)
    assert doc["bounds"] == to_jsonable(result.info["bounds"])
    assert doc["gamma"]["gamma_prime"] == estimate.gamma_prime
    assert doc["gamma"]["exact"]["max"] == float(estimate.exact.max())
    assert doc["seeds"]["Γ Monte Carlo (uniform mass draws)"] == GAMMA["seed"]
    assert doc["solver"]["nfev"] == result.solver["nfev"] and "wall_s" not in doc["solver"]
    import numpy, scipy, matplotlib, control, sympy  # noqa: E401
    for mod in (numpy, scipy, matplotlib, control, sympy):
        assert doc["versions"][mod.__name__] == mod.__version__
    # wall times only in their one place
    assert set(doc["wall_times_s"]) and all(v is None or v > 0 for v in doc["wall_times_s"].values())
    assert "wall" not in json.dumps({k: v for k, v in doc.items() if k != "wall_times_s"})


def test_generating_twice_gives_the_same_report(reports):
    a, b = reports
    da, db = (json.loads(p.summary.read_text(encoding="utf-8")) for p in (a, b))
    da.pop("wall_times_s"), db.pop("wall_times_s")
    assert da == db
    for pa, pb in zip(a.figures, b.figures):
        assert pa.name == pb.name and pa.read_bytes() == pb.read_bytes()
    cut = lambda p: p.markdown.read_text(encoding="utf-8").split("## Wall times")[0]  # noqa: E731
    assert cut(a) == cut(b)


def test_scenario_toml_reproduces_the_configuration(reports, run):
    sc = run[0]
    path = reports[0].scenario_toml
    parsed = tomllib.loads(path.read_text(encoding="utf-8"))
    assert parsed["scenario"]["name"] == sc.name and parsed["scenario"]["kind"] == sc.kind
    assert load_scenario(path).config == sc.config
    # the Markdown shows the same text
    assert path.read_text(encoding="utf-8").strip() in reports[0].markdown.read_text(encoding="utf-8")


def test_pngs_carry_no_software_or_date_metadata(run):
    _, result, _ = run
    fig = RF.forces_figure(result)
    one, two = figure_png(fig), figure_png(fig)
    assert one == two
    assert b"matplotlib" not in one.lower() and b"tIME" not in one


# --------------------------------------------------------------------------- #
# figures
# --------------------------------------------------------------------------- #
def _lines(ax):
    return [ln for ln in ax.get_lines() if ln.get_label() and not ln.get_label().startswith("_")]


def test_every_axes_is_labelled_and_legends_where_several_lines(run):
    sc, result, estimate = run
    figs = report_figures(result, sc.build().nominal, gamma=estimate)
    assert [f.name for f in figs] == list(FIGURES)
    for f in figs:
        assert f.caption and f.title
        for ax in f.figure.axes:
            assert ax.get_ylabel(), (f.name, "ylabel")
            siblings = ax.get_shared_x_axes().get_siblings(ax)
            assert any(s.get_xlabel() for s in siblings), (f.name, "xlabel")
            assert ax.get_xlabel() == "" or "(" in ax.get_xlabel()  # units in parentheses
            assert "(" in ax.get_ylabel()
            if len(_lines(ax)) >= 2:
                assert ax.get_legend() is not None or f.figure.legends, f.name


def test_trajectory_is_the_last_bob_by_closed_form_kinematics(run):
    sc, result, _ = run
    p = sc.config["plant"]
    L = np.asarray(p["L"])
    fig = RF.trajectory_figure(result, sc.build().nominal)
    ax = fig.axes[0]
    nominal = next(ln for ln in ax.get_lines() if ln.get_label().startswith("nominal"))
    x = (L * np.sin(result.q)).sum(axis=1)
    y = -(L * np.cos(result.q)).sum(axis=1)
    np.testing.assert_allclose(nominal.get_xdata(), x, rtol=0, atol=1e-12)
    np.testing.assert_allclose(nominal.get_ydata(), y, rtol=0, atol=1e-12)
    labels = [ln.get_label() for ln in ax.get_lines()]
    assert any(lb.startswith("start") for lb in labels) and any(lb.startswith("end") for lb in labels)
    assert any("uncompensated" in lb for lb in labels)


def test_error_band_is_the_promised_bound(run):
    _, result, _ = run
    fig = RF.errors_figure(result)
    for ax, key, gid, err in zip(fig.axes, ("e", "edot"), ("bound-e", "bound-edot"), (result.e, result.edot)):
        line = next(ln for ln in ax.get_lines() if ln.get_gid() == gid)
        assert np.all(np.asarray(line.get_ydata(), dtype=float) == result.info["bounds"][key])
        band = [pt for pt in ax.patches if np.isclose(pt.get_y() + pt.get_height(), result.info["bounds"][key],
                                                      rtol=1e-12)]
        assert band, "shaded band from 0 to the bound"
        assert ax.get_yscale() == "log"
        # per-coordinate |e_i| curves are the data
        curves = [ln for ln in ax.get_lines() if ln.get_gid() is None and ln.get_label().startswith("|")]
        assert len(curves) == err.shape[1]
        np.testing.assert_array_equal(np.nan_to_num(curves[0].get_ydata()), np.abs(err[:, 0]))


def test_no_bound_promised_is_said(run):
    _, result, _ = run
    bare = result.with_info(bounds={"e": math.inf, "edot": None})
    fig = RF.errors_figure(bare)
    for ax in fig.axes:
        assert "no bound promised" in ax.get_title()
        assert not [ln for ln in ax.get_lines() if ln.get_gid()]
        assert "no bound promised" in [t.get_text() for t in ax.get_legend().get_texts()]


def test_gamma_density_marks_gamma_prime_and_integrates_to_one(run):
    _, _, estimate = run
    fig = F.gamma_density_figure(estimate)
    ax = fig.axes[0]
    gp = next(ln for ln in ax.get_lines() if ln.get_gid() == "gamma-prime")
    assert np.all(np.asarray(gp.get_xdata(), dtype=float) == estimate.gamma_prime)
    # both histograms are densities: the area under each outline is 1 (shoelace formula)
    assert len(ax.patches) == 2
    for patch in ax.patches:
        x, y = patch.get_path().vertices.T
        area = 0.5 * abs(np.dot(x, np.roll(y, 1)) - np.dot(y, np.roll(x, 1)))
        assert area == pytest.approx(1.0, rel=1e-9)
    texts = [t.get_text() for t in fig.legends[0].get_texts()]
    assert any("exact" in t for t in texts) and any("first order" in t for t in texts)


def test_residual_figure_without_constraint(run):
    _, result, _ = run
    bare = dataclasses.replace(result, residual_nominal=None, residual_controlled=None)
    ax = RF.residual_figure(bare).axes[0]
    assert "none" in ax.get_title() and ax.get_ylabel() and ax.get_xlabel()


# --------------------------------------------------------------------------- #
# refusals
# --------------------------------------------------------------------------- #
def test_constrained_scenario_is_refused(tmp_path):
    with pytest.raises(ScenarioError, match="not a tracking scenario"):
        report_scenario("duffing", tmp_path)
    assert not (tmp_path / "report.html").exists()


@pytest.mark.parametrize("bad", [-1, 2.5, True])
def test_bad_gamma_samples(tmp_path, bad):
    with pytest.raises(ParameterError, match="gamma_samples"):
        report_scenario("triple-pendulum", tmp_path, gamma_samples=bad)


def _no_run(*args, **kwargs):
    raise AssertionError("a refused output folder must be refused before anything runs")


def test_non_empty_folder_is_refused_before_anything_runs(tmp_path, monkeypatch, capsys):
    out = tmp_path / "out"
    out.mkdir()
    (out / "notes.txt").write_text("mine", encoding="utf-8")
    monkeypatch.setattr("robustrack.scenarios.tracking_kinds.run_tracking", _no_run)
    with pytest.raises(OutputExistsError, match=r"not empty \(1 entries: notes.txt\).*--overwrite"):
        report_scenario("triple-pendulum", out, overrides=SET)
    assert cli_main(["report", "triple-pendulum", "-o", str(out)]) == 2
    assert "--overwrite" in capsys.readouterr().err
    (tmp_path / "file").write_text("x", encoding="utf-8")
    with pytest.raises(OutputExistsError, match="is a file"):
        report_scenario("triple-pendulum", tmp_path / "file", overwrite=True)
    assert [p.name for p in out.iterdir()] == ["notes.txt"]
    assert (out / "notes.txt").read_text(encoding="utf-8") == "mine"


def test_overwrite_replaces_the_previous_report_and_keeps_other_files(reports, tmp_path):
    assert set(FIGURES) == set(report_module._FIGURE_NAMES)
    out = tmp_path / "again"
    shutil.copytree(reports[0].out_dir, out)
    (out / "notes.txt").write_text("mine", encoding="utf-8")
    paths = report_scenario("triple-pendulum", out, overrides=SET, overwrite=True)  # no Γ this time
    assert (out / "notes.txt").read_text(encoding="utf-8") == "mine"
    assert sorted(p.name for p in (out / "figures").iterdir()) == sorted(f"{n}.png" for n in FIGURES[:-1])
    doc = json.loads(paths.summary.read_text(encoding="utf-8"))
    assert doc["gamma"] is None and "gamma.png" not in paths.markdown.read_text(encoding="utf-8")


def test_plant_without_positions_gets_no_trajectory_figure(tmp_path):
    """The Duffing oscillator has no XY picture: the report leaves that figure out and uses metres."""
    assert not load_scenario("duffing-tracking").build().nominal.has_positions
    assert load_scenario("triple-pendulum").build().nominal.has_positions
    paths = report_scenario("duffing-tracking", tmp_path / "d", overrides=["simulation.t_end=0.5"])
    assert sorted(p.stem for p in paths.figures) == sorted(set(FIGURES) - {"trajectory", "gamma"})
    text = paths.markdown.read_text(encoding="utf-8")
    assert "trajectory.png" not in text and "| max ‖e‖∞ |" in text and " m |" in text
    # units come from the plant (positions in metres), not a hard-coded "rad"
    assert "rad" not in text and "m/s² |" in text and " N |" in text
    _assert_every_number_has_a_unit(text, {"m", "m/s", "m/s²", "N", "N·s", "N/s", "kg", "s", "1/s"})
    with pytest.raises(ParameterError, match="positions"):
        RF.trajectory_figure(run_tracking(load_scenario("duffing-tracking", ["simulation.t_end=0.1"]))[0],
                            load_scenario("duffing-tracking").build().nominal)


# --------------------------------------------------------------------------- #
# a real browser
# --------------------------------------------------------------------------- #
_PROBE = ("<script>window.addEventListener('load',function(){var a=Array.prototype.slice.call(document.images);"
          "document.title='images loaded '+a.filter(function(i){return i.complete&&i.naturalWidth>0;}).length"
          "+' of '+a.length;});</script>")


def test_html_renders_in_headless_chromium(reports, tmp_path):
    browser = _chromium()
    if browser is None:
        pytest.skip("chromium not installed: no headless browser to render report.html (apt-get install chromium)")
    html_path = reports[0].html
    shot = tmp_path / "shot.png"
    subprocess.run(_headless(browser, tmp_path / "p1", f"--screenshot={shot}", "--window-size=1280,4000",
                             html_path.resolve().as_uri()), check=True, capture_output=True, timeout=120)
    img = _decode_png(shot.read_bytes())
    assert img.shape[:2] == (4000, 1280)
    gray = img[..., :3].mean(axis=-1)
    assert (gray < 0.5).mean() > 0.002 and gray.std() > 0.05  # text and figures, not a blank page
    # every image decodes in the browser; a broken one added as a control must be caught
    probe = tmp_path / "probe.html"
    broken = '<img src="data:image/png;base64,AAAA" alt="broken control">'
    probe.write_text(html_path.read_text(encoding="utf-8").replace("</body>", broken + _PROBE + "</body>"),
                     encoding="utf-8")
    dom = subprocess.run(_headless(browser, tmp_path / "p2", "--dump-dom", probe.as_uri()), check=True,
                         capture_output=True, text=True, timeout=120).stdout
    n = len(FIGURES)
    assert f"<title>images loaded {n} of {n + 1}</title>" in dom


# --------------------------------------------------------------------------- #
# the report explains itself: what ran, units, true captions
# --------------------------------------------------------------------------- #
#: Rows whose values are dimensionless or not numbers.
_NO_UNIT = ("α0", "σ (", "α_c", "n (", "assumptions held", "bounds held", "solver", "control", "compensator",
            "system", "constraint")
_NUMBER = re.compile(r"^(\[[^\]]*\]|[-+]?(?:\d+\.?\d*|\.\d+)(?:e[-+]?\d+)?)(?: (.*))?$")


def _table_rows(text, heading):
    part = text.split(f"## {heading}\n", 1)[1].split("\n## ", 1)[0]
    rows = [ln for ln in part.splitlines() if ln.startswith("| ")][1:]
    return [[c.strip() for c in re.split(r"(?<!\\)\|", ln)[1:-1]] for ln in rows]


def _assert_every_number_has_a_unit(text, units):
    """In "What was run" and "Results", each number (or list of numbers) is followed by one of ``units``."""
    checked = 0
    for heading in ("What was run", "Results"):
        for item, value, *_ in _table_rows(text, heading):
            if item.startswith(_NO_UNIT):
                continue
            for part in re.split(r" / | – ", value):
                match = _NUMBER.match(part)
                if match:
                    assert match.group(2) in units, (heading, item, value)
                    checked += 1
    assert checked >= 15


def test_what_was_run_states_compensator_parameters_masses_horizon_and_solvers(reports, run):
    sc = run[0]
    text = reports[0].markdown.read_text(encoding="utf-8")
    rows = {r[0]: r[1:] for r in _table_rows(text, "What was run")}
    c = sc.config["compensator"]
    gss = c["gss"]  # the table of the compensator that ran, named as in the file
    assert rows["K (compensator.gss.K)"][0] == f"{gss['K']:g} 1/s"
    assert rows["Γ′ (compensator.gss.gamma_prime)"][0] == f"{gss['gamma_prime']:g} rad/s²"
    assert rows["β0 (compensator.gss.beta0)"][0] == f"{gss['beta0']:g} rad/s²"
    assert rows["ε (compensator.eps)"][0] == f"{c['eps']:g} rad/s"
    assert rows["α0 (compensator.gss.alpha0)"][0] == f"{gss['alpha0']:g}"
    assert rows["σ (compensator.gss.sigma)"][0] == f"{gss['sigma']:g}"
    assert rows["α_c (compensator.alpha_c)"][0] == f"{c['alpha_c']:g}"
    dm, m = sc.config["uncertainty"]["dm"], sc.config["plant"]["m"]
    assert rows["δm (uncertainty.dm)"][0] == "[" + ", ".join(f"{x:g}" for x in dm) + "] kg"
    actual = "[" + ", ".join(f"{a + b:.4g}" for a, b in zip(m, dm)) + "] kg"
    assert actual in rows["δm (uncertainty.dm)"][1]
    assert rows["horizon"][0] == f"0 s – {sc.config['simulation']['t_end']:g} s"
    assert rows["solver (controlled system)"][0].startswith(f"{sc.config['simulation']['method']}, rtol 1e-08")
    _assert_every_number_has_a_unit(text, {"rad", "rad/s", "rad/s²", "N·m", "N·m·s", "N·m/s", "m/s²", "kg", "s",
                                           "1/s"})


def test_header_cites_the_sources_of_the_compensator_that_ran(tmp_path):
    from robustrack.controllers import COMPENSATORS

    for name in ("gd", "lqr"):
        text = report_scenario("triple-pendulum", tmp_path / name, overrides=["simulation.t_end=0.05"],
                            compensator=name).markdown.read_text(encoding="utf-8")
        header = text.split("## What was run")[0]
        assert COMPENSATORS[name].source in header
        others = [cls.source for key, cls in COMPENSATORS.items() if cls.source != COMPENSATORS[name].source]
        assert not any(src in header for src in others), name


def _in_order(text: str, marks: list) -> bool:
    """Every mark is in ``text``, each after the one before."""
    positions = [text.find(m) for m in marks]
    return -1 not in positions and positions == sorted(positions)


def test_the_report_opens_with_its_verdict_and_key_figure_in_both_formats(reports, run):
    """Issue 43: the answer first — the verdict with the run's own numbers and the errors figure, then the results,
    then what was run (the configuration); a catalog seed scenario cites the settings it takes from W."""
    from robustrack.controllers import GSS
    from robustrack.tracking.assess import bounds_verdict

    _, result, _ = run
    verdict = bounds_verdict(result.metrics, result.info["bounds"], units=result.info["units"],
                             note=result.info.get("bounds_note"))  # the independent run's verdict
    md, page = reports[0].markdown.read_text(encoding="utf-8"), reports[0].html.read_text(encoding="utf-8")
    assert _in_order(md, ["## Verdict", f"**Verdict: {verdict}**", "](figures/errors.png)", "## Results",
                          "## Figures", "## What was run"])
    assert _in_order(page, ["<h2>Verdict</h2>", f"<b>Verdict: {verdict}</b>", '<figure id="errors"',
                            "<h2>Results</h2>", "<h2>Figures</h2>", "<h2>What was run</h2>"])
    for text in (md, page):  # the uncompensated comparison said in words, beside its number
        assert "driven by the nominal force Qᶜ(t) alone, open loop" in text.split("Results")[0]
        assert f"settings {GSS.settings_source}" in text


@pytest.mark.parametrize("compensator, word", [("none", "nothing promised"), ("smc", "no bound: no box passes")])
def test_a_verdict_that_judges_nothing_says_why_first(compensator, word, tmp_path):
    sets = ["simulation.t_end=0.05", "simulation.n_points=26"]
    result, _ = run_tracking(load_scenario("triple-pendulum", sets, compensator=compensator))
    assert result.metrics["bounds_held"] is None  # the truth: nothing judged
    paths = report_scenario("triple-pendulum", tmp_path / compensator, overrides=sets, compensator=compensator)
    md = paths.markdown.read_text(encoding="utf-8")
    head = md.split("## Results")[0]
    assert f"**Verdict: {word}" in head
    if compensator == "smc":  # the seed's sliding mode at 1 ms: its sampled box (docs/theory/sensing.md) has no solution
        assert result.info["bounds"]["coverage"].startswith("no bound") and "the run is only measured" in head


def test_reaching_time_at_the_start_is_said_as_inside_from_the_start(reports, run):
    _, result, _ = run
    assert result.metrics["reaching_time"] == result.t[0] == 0.0  # e(0) = ė(0) = 0, inside at once
    text = reports[0].markdown.read_text(encoding="utf-8")
    assert "reaching time: inside the bounds from the start (t = 0 s)" in text
    assert "reaching time 0 s" not in text


def test_gamma_figure_marks_the_gamma_the_run_used(run):
    sc, result, estimate = run
    fig = report_figures(result, sc.build().nominal, gamma=estimate)[-1]
    ax = fig.figure.axes[0]
    lines = {ln.get_gid(): float(np.asarray(ln.get_xdata(), dtype=float)[0]) for ln in ax.get_lines() if ln.get_gid()}
    used = sc.config["uncertainty"]["gamma"]  # uncertainty.gamma of the scenario: the Γ the bounds were judged at
    assert lines["gamma-used"] == used == result.info["bounds"]["gamma"]
    assert lines["gamma-prime"] == estimate.gamma_prime != used
    assert lines["dq-run"] == result.metrics["max_norm_dq"]
    # the run's δq is taken at the controlled states, the Monte Carlo's at the nominal ones: the caption
    # says how far apart they were (the run's own max ‖e‖∞, in the coordinates' unit)
    assert f"within max ‖e‖∞ = {format_value(result.metrics['max_abs_e'], 'rad')} of the nominal" in fig.caption
    above = int(np.count_nonzero(np.asarray(estimate.exact) > used))
    assert f"Γ = {used:g} rad/s² (uncertainty.gamma)" in fig.caption
    assert (f"{above} of the {len(estimate.exact)} sampled plants" in fig.caption if above
            else "no sampled plant exceeds it" in fig.caption)
    # a run without a compensator uses no Γ: nothing marked as used
    bare = result.with_info(compensator=None, bounds=None)
    fig = report_figures(bare, sc.build().nominal, gamma=estimate)[-1]
    assert "gamma-used" not in {ln.get_gid() for ln in fig.figure.axes[0].get_lines()}
    assert "uses no Γ" in fig.caption


@pytest.fixture(scope="module")
def long_run():
    """Long enough (7 s) for the nominal energy residual to decay well below the tracking error's imprint."""
    sc = load_scenario("triple-pendulum", ["simulation.t_end=7", "simulation.n_points=701"])
    return sc, run_tracking(sc)[0]


def test_residual_caption_and_gap_curve_are_true_of_the_run(long_run):
    from robustrack._format import format_value
    from robustrack.reports.captions import AGREE_FRACTION, residual_agreement

    sc, result = long_run
    p = sc.config["plant"]
    L1, g = p["L"][0], p["g"]
    psi = lambda q, qd: 0.5 * L1 * qd[:, 0] ** 2 - g * np.cos(q[:, 0])  # noqa: E731  (W 2.3.5 / (m1 L1))
    r, rc = psi(result.q, result.qd), psi(result.qc, result.qcd)
    # the residuals are this closed form (to rounding: ψ is O(10) at the start)
    np.testing.assert_allclose(result.residual_nominal[:, 0], r, rtol=0, atol=1e-12)
    np.testing.assert_allclose(result.residual_controlled[:, 0], rc, rtol=0, atol=1e-12)
    gap = rc - r
    # the dotted curve is the gap
    fig = report_figures(result, sc.build().nominal, residual=sc.build().residual)[-1]
    assert fig.name == "residual"
    line = next(ln for ln in fig.figure.axes[0].get_lines() if ln.get_gid() == "residual-gap")
    np.testing.assert_allclose(np.nan_to_num(np.asarray(line.get_ydata(), dtype=float)), np.abs(gap), atol=1e-12)
    # "the imprint of the tracking error": to first order ∂ψ/∂θ1 e1 + ∂ψ/∂θ̇1 ė1 = g sin θ1 e1 + L1 θ̇1 ė1;
    # the rest is second order in (e, ė) ~ (1e-4, 5e-3), i.e. below 1e-3 of the gap
    first = g * np.sin(result.q[:, 0]) * result.e[:, 0] + L1 * result.qd[:, 0] * result.edot[:, 0]
    assert np.abs(gap - first).max() <= 1e-2 * np.abs(gap).max()
    # "the curves agree until t ≈ T": the gap stays under 10 % of |ψ| up to T and exceeds it right after
    agree = residual_agreement(result)
    T = agree["agree_until"]
    i = int(np.searchsorted(result.t, T))
    assert np.all(np.abs(gap[: i + 1]) <= AGREE_FRACTION * np.abs(r[: i + 1]))
    assert np.abs(gap[i + 1]) > AGREE_FRACTION * np.abs(r[i + 1])
    assert 1.0 < T < 4.0  # the nominal residual is O(1) at first and decays (stabilized, W 2.3.6)
    # "... and the controlled one stays at the imprint's level": over the last second it is far above the nominal
    last = result.t >= result.t[-1] - 1.0
    assert np.abs(rc[last]).max() > 10 * np.abs(r[last]).max()
    assert agree["max_gap_after"] == pytest.approx(np.abs(gap[i + 1:]).max())
    assert f"until t ≈ {format_value(T, 's', digits=3)}" in fig.caption
    assert f"at most {format_value(agree['max_gap_after'], 'm/s²', digits=3)}" in fig.caption


def test_campaign_caption_counts_the_plants_inside_the_bound():
    from robustrack.reports.captions import campaign_caption

    text = campaign_caption([1e-4, 2e-4, 3e-4], 2.5e-4, "rad")
    assert "2 of the 3 plants lie at or left of it (largest 0.0003 rad)" in text and "0.00025 rad" in text
    assert "No bound on ‖e‖∞ is promised." in campaign_caption([1.0], float("inf"), "rad")
