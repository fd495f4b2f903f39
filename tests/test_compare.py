"""Comparison runs: the grid, failed rows, files, resume, and agreement with single runs."""

from __future__ import annotations

import csv
import itertools
import json
import math

import pytest

import robustrack.scenarios.compare as cmp
from robustrack.errors import OutputExistsError, ParameterError, ScenarioError
from robustrack.scenarios import load_scenario, run_scenario
from robustrack.cli import run_compare_cli
from robustrack.scenarios.compare import (COLUMNS, FIXED_F, ComparisonTable, compare, format_case, parse_case,
                                          resolve_cases)
from robustrack.scenarios.reproduction import CASES

SHORT = ["simulation.t_end=0.2", "simulation.n_points=101"]


# ------------------------------------------------------------------ a fake run_scenario

class FakeRuns:
    """Stands in for run_scenario: counts calls; metrics derived from the row's settings."""

    def __init__(self, fail_when=None, interrupt_at=None):
        self.calls = []
        self.fail_when = fail_when or (lambda comp, f, dm: False)
        self.interrupt_at = interrupt_at

    def __call__(self, scenario, compensator=None, f=None):
        self.calls.append((compensator, f))
        if self.interrupt_at is not None and len(self.calls) == self.interrupt_at:
            raise KeyboardInterrupt
        dm = scenario.config["uncertainty"]["dm"]
        if self.fail_when(compensator, f, dm):
            raise ParameterError("fake failure")
        value = sum(abs(x) for x in dm) + len(compensator)
        return {"metrics": {"max_abs_e": value, "rms_e": value / 2, "max_abs_edot": 2 * value,
                            "rms_edot": value, "max_abs_Qu": 1.0, "max_abs_Qc": 2.0, "effort_Qu": 0.5,
                            "chattering_Qu": 3.0, "max_constraint_residual_controlled": 1e-3,
                            "actual_max_abs_e": 9.0},
                "bounds": {"e": math.inf, "edot": 0.25, "held": True, "assumptions_held": False},
                "solver": {"nfev": 7, "success": True}}


@pytest.fixture
def fake(monkeypatch):
    runs = FakeRuns()
    monkeypatch.setattr(cmp, "run_scenario", runs)
    return runs


def _triples(table):
    return [(r["compensator"], r["f"], r["case"]) for r in table.rows]


# ------------------------------------------------------------------ the grid

def test_every_combination_once_and_fixed_f_not_multiplied(fake):
    cases = {"a": ["uncertainty.dm=[0.1, 0, 0]"], "b": ["uncertainty.dm=[0, 0.2, 0]"]}
    table = compare("triple-pendulum", compensators=("gss", "gdbar", "none", "smc", "lqr"),
                    fs=("signed-quadratic", "cubic"), cases=cases, progress=False)
    expected = [(c, f, k) for c in ("gss", "gdbar") for f in ("signed-quadratic", "cubic") for k in "ab"]
    expected += [(c, FIXED_F, k) for c in ("none", "smc", "lqr") for k in "ab"]
    assert sorted(_triples(table)) == sorted(expected)
    assert len(table.rows) == len(expected) == 14
    # the fixed-f rows ran with f=None, the others with their f
    assert fake.calls.count(("none", None)) == 2 and ("gss", "cubic") in fake.calls
    assert all(r["status"] == "ok" for r in table.rows) and not table.failed


def test_comma_lists_and_duplicates(fake):
    table = compare("triple-pendulum", compensators="GSS, gd,gss", fs="cubic", progress=False)
    assert _triples(table) == [("gss", "cubic", "as configured"), ("gd", "cubic", "as configured")]


def test_non_tracking_scenario_and_bad_arguments_raise(fake):
    with pytest.raises(ScenarioError, match="tracking scenario"):
        compare("duffing", progress=False)
    with pytest.raises(ScenarioError, match="unknown scenario"):
        compare("no-such-scenario", progress=False)
    with pytest.raises(ParameterError, match="`jobs`"):
        compare("triple-pendulum", jobs=0, progress=False)
    with pytest.raises(ParameterError, match="`compensators`"):
        compare("triple-pendulum", compensators=" , ", progress=False)
    assert fake.calls == []


# ------------------------------------------------------------------ cases

def test_parse_case_round_trip():
    name, sets = "heavy tip", ["uncertainty.dm=[0, 0, 1.5]", "compensator.gss.gamma_prime=800"]
    assert parse_case(format_case(name, sets)) == (name, sets)
    assert parse_case("x: uncertainty.dm=[0.1,0,0] ; compensator.gss.K=5 ;") == (
        "x", ["uncertainty.dm=[0.1,0,0]", "compensator.gss.K=5"])
    assert parse_case("as is:") == ("as is", [])
    assert parse_case("t:simulation.t_end=1:5") == ("t", ["simulation.t_end=1:5"])  # ':' after the name is kept


@pytest.mark.parametrize("text, match", [
    ("no colon here", "NAME:SECTION.KEY=VALUE"),
    (":uncertainty.dm=[0,0,0]", "name"),
    ("x:uncertainty.dm", "SECTION.KEY=VALUE"),
    ("x:dm=[0,0,0]", "SECTION.KEY"),
])
def test_parse_case_errors(text, match):
    with pytest.raises(ParameterError, match=match):
        parse_case(text)


def test_resolve_cases():
    w = resolve_cases("w")
    assert list(w) == list(CASES)
    assert all(sets == [f"uncertainty.dm={CASES[k]}"] for k, sets in w.items())
    assert resolve_cases(None) == {"as configured": []}
    mixed = resolve_cases(["W", "mine:compensator.gss.K=5", ("pair", ["compensator.gss.K=6"])])
    assert list(mixed) == [*CASES, "mine", "pair"]
    with pytest.raises(ParameterError, match="twice"):
        resolve_cases(["a:compensator.gss.K=1", "a:compensator.gss.K=2"])
    with pytest.raises(ParameterError, match="empty"):
        resolve_cases([])
    with pytest.raises(ParameterError, match="name"):
        format_case("a:b", [])


def test_w_cases_reach_the_plant(fake):
    # the fake's max_abs_e is Σ|δm| + len("none"): the δm of each case reached the scenario
    table = compare("triple-pendulum", compensators="none", cases="w", progress=False)
    for row in table.rows:
        dm = json.loads(CASES[row["case"]])
        assert row["max_abs_e"] == pytest.approx(sum(map(abs, dm)) + 4)


# ------------------------------------------------------------------ real runs

@pytest.fixture(scope="module")
def real(tmp_path_factory):
    out = tmp_path_factory.mktemp("cmp")
    cases = {"one": ["uncertainty.dm=[0.1, -0.2, 0.3]"], "bad": ["compensator.gd.alpha0=1.5", "compensator.gdbar.alpha0=1.5"]}
    table = compare("triple-pendulum", compensators=("gd", "gdbar", "none"), fs=("cubic",),
                    cases=cases, overrides=SHORT, out_dir=out, progress=False)
    return table, out


def test_failed_rows_carry_the_reason_and_the_others_run(real):
    table, _ = real
    by = {(r["compensator"], r["case"]): r for r in table.rows}
    assert len(table.rows) == 6  # an unknown compensator is refused before any row (tests/test_registry.py)
    for comp in ("gd", "gdbar"):
        assert by[comp, "one"]["status"] == "ok" and by[comp, "one"]["error"] is None
        assert by[comp, "bad"]["status"] == "failed" and "alpha0" in by[comp, "bad"]["error"]
        assert by[comp, "bad"]["max_abs_e"] is None
    # "none" takes no alpha0: both its cases run
    assert by["none", "one"]["status"] == by["none", "bad"]["status"] == "ok"
    assert {(r["compensator"], r["case"]) for r in table.failed} == {("gd", "bad"), ("gdbar", "bad")}
    # nothing promised without a compensator, so nothing held or broken
    assert by["none", "one"]["bound_e"] is None and by["none", "one"]["bounds_held"] is None
    assert by["none", "one"]["max_abs_Qu"] == 0.0


def test_numbers_equal_a_direct_run(real):
    table, _ = real
    row = next(r for r in table.rows if (r["compensator"], r["case"]) == ("gd", "one"))
    doc = run_scenario(load_scenario("triple-pendulum", [*SHORT, "uncertainty.dm=[0.1, -0.2, 0.3]"]),
                       compensator="gd", f="cubic")
    m = doc["metrics"]
    for key in ("max_abs_e", "rms_e", "max_abs_edot", "rms_edot", "max_abs_Qu", "max_abs_Qc", "effort_Qu",
                "chattering_Qu", "max_constraint_residual_controlled", "max_constraint_residual_gap",
                "actual_max_abs_e"):
        assert row[key] == pytest.approx(m[key], rel=1e-9, abs=1e-15), key
    assert row["bound_e"] == doc["bounds"]["e"] == math.inf  # GD promises nothing on e
    assert row["bound_edot"] == pytest.approx(doc["bounds"]["edot"], rel=1e-12)
    assert row["bounds_held"] == doc["bounds"]["held"] and row["nfev"] == doc["solver"]["nfev"]
    assert row["overrides"] == "; ".join([*SHORT, "uncertainty.dm=[0.1, -0.2, 0.3]"])


def _from_csv(text):
    if text == "":
        return None
    if text in ("true", "false"):
        return text == "true"
    if text.startswith("["):  # a list (δm) is written as JSON
        return json.loads(text)
    try:
        return float(text)
    except ValueError:
        return text


def test_files_written_and_consistent(real):
    table, out = real
    doc = json.loads((out / "comparison.json").read_text(encoding="utf-8"))
    assert doc["columns"] == list(COLUMNS) and len(doc["rows"]) == len(table.rows)
    with open(out / "comparison.csv", newline="", encoding="utf-8") as fh:
        csv_rows = list(csv.DictReader(fh))
    assert len(csv_rows) == len(doc["rows"])
    for c_row, j_row in zip(csv_rows, doc["rows"]):
        assert list(c_row) == list(COLUMNS)
        for key in COLUMNS:
            value = j_row[key]
            if value == "inf":  # JSON writes non-finite numbers as strings
                value = math.inf
            assert _from_csv(c_row[key]) == value, key
    md = (out / "comparison.md").read_text(encoding="utf-8")
    assert md == table.to_markdown()
    lines = [ln for ln in md.splitlines() if ln.startswith("| ")]
    assert len(lines) == 1 + len(table.rows)
    assert sum("failed: " in ln for ln in lines) == len(table.failed) == 2
    assert ComparisonTable.from_json(out / "comparison.json").rows == table.rows


def test_markdown_three_significant_digits():
    row = dict.fromkeys(COLUMNS)
    row.update(scenario="s", compensator="gd", f="cubic", case="c", max_abs_e=0.000123456, bound_e=math.inf,
               bounds_held=True, nfev=12, status="ok")
    bad = dict(row, status="failed", error="Boom | with a pipe", max_abs_e=None)
    md = ComparisonTable([row, bad]).to_markdown()
    assert "| 0.000123 |" in md and "| ∞ |" in md and "| yes |" in md and "| 12 |" in md
    assert "failed: Boom \\| with a pipe" in md


def test_parallel_rows_equal_serial_rows(real):
    table, _ = real
    cases = {"one": ["uncertainty.dm=[0.1, -0.2, 0.3]"]}
    par = compare("triple-pendulum", compensators=("gd", "gdbar"), fs=("cubic",), cases=cases, overrides=SHORT,
                  jobs=2, progress=False)
    serial = {(r["compensator"], r["case"]): r for r in table.rows}
    assert _triples(par) == [("gd", "cubic", "one"), ("gdbar", "cubic", "one")]
    for r in par.rows:
        s = serial[r["compensator"], r["case"]]
        assert {k: v for k, v in r.items() if k != "wall_s"} == {k: v for k, v in s.items() if k != "wall_s"}


# ------------------------------------------------------------------ resume and progress

def test_resume_skips_finished_rows_and_reruns_failed_ones(monkeypatch, tmp_path):
    kw = dict(compensators=("gss", "none"), fs=("cubic", "tanh"), cases="w", out_dir=tmp_path, progress=False)
    first = FakeRuns(fail_when=lambda comp, f, dm: comp == "gss" and f == "tanh" and dm[0] < 0)
    monkeypatch.setattr(cmp, "run_scenario", first)
    t1 = compare("triple-pendulum", **kw)
    assert len(first.calls) == len(t1.rows) == 9 and len(t1.failed) == 1
    again = FakeRuns()
    monkeypatch.setattr(cmp, "run_scenario", again)
    t2 = compare("triple-pendulum", **kw)
    assert again.calls == [("gss", "tanh")]  # only the failed row ran again
    assert not t2.failed and _triples(t2) == _triples(t1)
    assert [r["max_abs_e"] for r in t2.rows if r["f"] != "tanh"] == \
        [r["max_abs_e"] for r in t1.rows if r["f"] != "tanh"]
    # a grid that contains the finished one (one more compensator) resumes: only the new rows run
    wider = FakeRuns()
    monkeypatch.setattr(cmp, "run_scenario", wider)
    t3 = compare("triple-pendulum", **{**kw, "compensators": ("gss", "none", "gdbar")})
    assert wider.calls == [("gdbar", "cubic")] * 3 and len(t3.rows) == 15
    # GD-bar refuses the bounded tanh when its row's scenario is loaded (W 8.3.7), before anything runs
    refused = [r for r in t3.rows if (r["compensator"], r["f"]) == ("gdbar", "tanh")]
    assert len(refused) == 3 and all(r["status"] == "failed" and "'tanh' is not" in r["error"] for r in refused)


def test_folder_holding_other_work_is_refused_before_anything_runs(monkeypatch, tmp_path):
    kw = dict(compensators=("gss", "none"), fs=("cubic",), cases="w", out_dir=tmp_path, progress=False)
    monkeypatch.setattr(cmp, "run_scenario", FakeRuns())
    compare("triple-pendulum", **kw)
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    untouched = FakeRuns()
    monkeypatch.setattr(cmp, "run_scenario", untouched)
    # other settings (an extra override) would drop the 6 finished rows
    with pytest.raises(OutputExistsError, match=r"6 finished row\(s\) of other settings.*--overwrite"):
        compare("triple-pendulum", overrides=["compensator.gss.K=5"], **kw)
    # a smaller grid would drop the "none" rows
    with pytest.raises(OutputExistsError, match="3 finished row"):
        compare("triple-pendulum", **{**kw, "compensators": ("gss",)})
    # resume=False would replace every row
    with pytest.raises(OutputExistsError, match="6 rows of a previous comparison"):
        compare("triple-pendulum", resume=False, **kw)
    assert untouched.calls == []
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before
    # overwrite=True with resume keeps this grid's rows, drops the others
    kept = compare("triple-pendulum", overwrite=True, **{**kw, "compensators": ("gss",)})
    assert untouched.calls == [] and _triples(kept) == [("gss", "cubic", c) for c in CASES]
    # resume=False, overwrite=True (the CLI's --overwrite) reruns everything
    forced = FakeRuns()
    monkeypatch.setattr(cmp, "run_scenario", forced)
    compare("triple-pendulum", overrides=["compensator.gss.K=5"], resume=False, overwrite=True, **kw)
    assert len(forced.calls) == 6
    # comparison files without their store are not ours to replace
    (tmp_path / "comparison.sqlite").unlink()
    with pytest.raises(OutputExistsError, match="no comparison.sqlite"):
        compare("triple-pendulum", **kw)
    assert run_compare_cli("triple-pendulum", "gss", "cubic", ["w"], tmp_path, [], 1, overwrite=True) == 0


def test_interrupted_comparison_keeps_finished_rows(monkeypatch, tmp_path):
    kw = dict(compensators=("gss", "gd"), fs=("cubic",), cases="w", out_dir=tmp_path, progress=False)
    monkeypatch.setattr(cmp, "run_scenario", FakeRuns(interrupt_at=4))
    with pytest.raises(KeyboardInterrupt):
        compare("triple-pendulum", **kw)
    kept = json.loads((tmp_path / "comparison.json").read_text(encoding="utf-8"))["rows"]
    assert len(kept) == 3
    with open(tmp_path / "comparison.csv", newline="", encoding="utf-8") as fh:
        assert len(list(csv.DictReader(fh))) == 3
    rest = FakeRuns()
    monkeypatch.setattr(cmp, "run_scenario", rest)
    table = compare("triple-pendulum", **kw)
    assert len(rest.calls) == 3 and len(table.rows) == 6


def test_a_store_that_is_not_a_comparison_store_is_an_error(fake, tmp_path):
    (tmp_path / "comparison.json").write_text("{not json", encoding="utf-8")  # resuming reads the store alone
    with pytest.raises(OutputExistsError, match="no comparison.sqlite.*--overwrite"):
        compare("triple-pendulum", out_dir=tmp_path, progress=False)
    (tmp_path / "comparison.sqlite").write_text("not a database", encoding="utf-8")
    with pytest.raises(ParameterError, match="`out_dir`.*comparison.sqlite.*not an SQLite file"):
        compare("triple-pendulum", out_dir=tmp_path, progress=False)
    assert fake.calls == []


def test_progress_callback_and_printed_lines(fake, capsys):
    seen = []
    compare("triple-pendulum", compensators=("gss", "none"), cases="w",
            progress=lambda k, n, row: seen.append((k, n, row["compensator"])))
    assert [(k, n) for k, n, _ in seen] == [(k, 6) for k in range(1, 7)]
    compare("triple-pendulum", compensators=("gd",), fs="cubic", cases="w")
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("[1/3] gd cubic case 1 (δm = [0.1, -0.2, 0.3] kg): done in ")
    assert err[-1].startswith("[3/3] gd cubic ")


def test_cli_function_prints_table_and_exit_code(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(cmp, "run_scenario", FakeRuns())
    rc = run_compare_cli("triple-pendulum", "gss,none", "cubic", ["w"], tmp_path / "o", [], 1)
    out = capsys.readouterr().out
    assert rc == 0 and out.count("| gss | cubic |") == 3 and "comparison.csv" in out
    assert {p.name for p in (tmp_path / "o").iterdir()} == {"comparison.md", "comparison.csv", "comparison.json",
                                                            "comparison.sqlite"}
    monkeypatch.setattr(cmp, "run_scenario", FakeRuns(fail_when=lambda comp, f, dm: comp == "gd"))
    assert run_compare_cli("triple-pendulum", "gss,gd", "cubic", None, None, ["simulation.t_end=1"], 1) == 1
    assert "failed: ParameterError: fake failure" in capsys.readouterr().out


def test_which_compensators_take_f():
    assert all(cmp.takes_control_function(n) for n in ("gss", "gd", "gdbar"))
    assert not any(cmp.takes_control_function(n)
                   for n in ("none", "smc", "leitmann-corless", "lyapunov-redesign", "computed-torque", "lqr"))


def test_itertools_product_matches_grid(fake):
    comps, fs, cases = ("gd", "gss"), ("cubic", "tanh", "saturation"), ["a:compensator.gss.K=1", "b:compensator.gss.K=2"]
    table = compare("triple-pendulum", compensators=comps, fs=fs, cases=cases, progress=False)
    assert _triples(table) == [(c, f, k) for c, f, k in itertools.product(comps, fs, "ab")]


# ------------------------------------------------------------------ tables that explain themselves

def _md_rows(md):
    lines = [ln for ln in md.splitlines() if ln.startswith("| ")]
    split = lambda ln: [c.strip() for c in ln.strip()[1:-1].split(" | ")]  # noqa: E731
    return split(lines[0]), [split(ln) for ln in lines[1:]]


def test_table_headers_carry_the_plants_units_and_cases_their_dm(fake):
    cases = {"heavy tip": ["uncertainty.dm=[0.1, -0.2, 0.3]"], "light": ["uncertainty.dm=[-0.1, 0.05, -0.2]"]}
    header, rows = _md_rows(compare("triple-pendulum", compensators=("gss", "none"), cases=cases,
                                    progress=False).to_markdown())
    for col in ("max‖e‖∞ (rad)", "max‖ė‖∞ (rad/s)", "max‖Qᵘ‖∞ (N·m)", "∫‖Qᵘ‖∞dt (N·m·s)", "bound e (rad)",
                "bound ė (rad/s)", "δm (kg)", "wall (s)", "max residual, controlled (m/s²)"):
        assert col in header, col
    by_case = {r[header.index("case")]: r[header.index("δm (kg)")] for r in rows}
    assert by_case == {"heavy tip": "[0.1, -0.2, 0.3]", "light": "[-0.1, 0.05, -0.2]"}
    # "as configured" gets the scenario's own δm
    header, rows = _md_rows(compare("duffing-tracking", compensators="gss", progress=False).to_markdown())
    assert rows[0][header.index("δm (kg)")] == "[" + ", ".join(
        f"{x:g}" for x in load_scenario("duffing-tracking").config["uncertainty"]["dm"]) + "]"
    assert "max‖e‖∞ (m)" in header and "max‖Qᵘ‖∞ (N)" in header and not any("rad" in h for h in header)


def test_units_and_dm_survive_json_and_a_resumed_table(fake, tmp_path):
    cases = {"one": ["uncertainty.dm=[0.1, -0.2, 0.3]"]}
    table = compare("triple-pendulum", compensators="gss", cases=cases, out_dir=tmp_path, progress=False)
    again = ComparisonTable.from_json(tmp_path / "comparison.json")
    assert again.to_markdown() == table.to_markdown() and again.column_unit("max_abs_e") == "rad"
    assert again.rows[0]["dm"] == [0.1, -0.2, 0.3]
    n = len(fake.calls)
    resumed = compare("triple-pendulum", compensators="gss", cases=cases, out_dir=tmp_path, progress=False)
    assert len(fake.calls) == n and resumed.rows[0]["dm"] == [0.1, -0.2, 0.3]


# ------------------------------------------------------------------ killed and resumed (a real child process)

_KILL_CASES = {"a": ["uncertainty.dm=[0.1, -0.2, 0.3]"], "b": ["uncertainty.dm=[-0.1, 0.05, -0.2]"]}
_KILL_GRID = dict(compensators=("gss", "gd", "gdbar", "none"), fs=("cubic",), cases=_KILL_CASES, overrides=SHORT)
_CHILD = """
import sys, time
from robustrack.scenarios.compare import compare

def progress(k, n, row):
    if k == {stop}:  # row {stop} is stored: wait here to be killed
        print("stored", k, flush=True)
        time.sleep(600)

compare("triple-pendulum", out_dir={out!r}, progress=progress, jobs={jobs}, **{grid!r})
"""


@pytest.mark.parametrize("sig, jobs", [("SIGKILL", 2), ("SIGINT", 1)])
def test_killed_comparison_resumes_from_its_store(monkeypatch, tmp_path, sig, jobs):
    import os
    import signal
    import sqlite3
    import subprocess
    import sys
    import threading
    from pathlib import Path

    stop = 3
    out = tmp_path / "killed"
    root = str(Path(__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": root + os.pathsep + os.environ.get("PYTHONPATH", "")}
    # SIGINT's default disposition in the child: a suite launched as a background job ignores SIGINT, and a
    # child would inherit that (then Ctrl-C never reaches it)
    child = subprocess.Popen([sys.executable, "-c", _CHILD.format(stop=stop, out=str(out), jobs=jobs, grid=_KILL_GRID)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                             preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    guard = threading.Timer(300, child.kill)  # never hang the suite
    guard.start()
    try:
        line = child.stdout.readline()
        assert line.split() == ["stored", str(stop)], child.stderr.read()
        with sqlite3.connect(out / "comparison.sqlite") as db:  # what the store holds when the signal comes
            assert db.execute("SELECT COUNT(*) FROM rows").fetchone()[0] == stop
        child.send_signal(getattr(signal, sig))
        assert child.wait(60) != 0
    finally:
        guard.cancel()
        child.kill()
        child.communicate()
    assert len(json.loads((out / "comparison.json").read_text(encoding="utf-8"))["rows"]) == stop

    calls = []

    def counting(scenario, compensator=None, f=None):
        calls.append((compensator, f))
        return run_scenario(scenario, compensator=compensator, f=f)

    monkeypatch.setattr(cmp, "run_scenario", counting)
    resumed = compare("triple-pendulum", out_dir=out, progress=False, **_KILL_GRID)
    total = len(resumed.rows)
    assert total == 8 and len(calls) == total - stop  # the stored rows were not run again
    from robustrack.campaigns.store import ComparisonStore

    with ComparisonStore.read(out / "comparison.sqlite") as store:
        sessions = sorted(store.row_sessions().values())
    assert sessions == [1] * stop + [2] * (total - stop)

    monkeypatch.setattr(cmp, "run_scenario", run_scenario)
    whole = compare("triple-pendulum", out_dir=tmp_path / "whole", progress=False, **_KILL_GRID)
    assert not whole.failed
    strip = lambda t: [{k: v for k, v in r.items() if k != "wall_s"} for r in t.rows]  # noqa: E731
    assert strip(resumed) == strip(whole)  # bit-identical apart from the wall time
    assert ComparisonTable.from_json(out / "comparison.json").rows == resumed.rows
