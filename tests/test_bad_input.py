"""The adversarial corpus of issue 11: bad input over the CLI, scenario files and the Python API.

Every case ends in a named :mod:`robustrack.errors` exception (API) or, on the CLI, a non-zero
exit code with exactly ONE line on stderr and no traceback — or in a correct result. Most cases
fail at the boundary (argument parsing, TOML loading, the compensator check) and take
milliseconds; the few that must start a run use duffing-tracking over 0.2–0.5 s. Ctrl-C is sent
to real subprocesses (it must reach a real process). Module-level imports are the API that
existed before issue 11, so the same file measures the code before and after it.
"""

import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from robustrack.cli import main
from robustrack.errors import (ConstraintError, ControlFunctionError, ParameterError, RobustrackError,
                               ScenarioError, SolverError)

SHORT = "simulation.t_end=0.2"


def cli(capsys, *argv):
    """Run the CLI in-process: (exit code, stdout, stderr)."""
    try:
        code = main([str(a) for a in argv])
    except SystemExit as exc:  # argparse
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err


def assert_one_line_error(code, err, match=None):
    assert code not in (0, None), err
    assert "Traceback" not in err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1, err
    if match is not None:
        assert match in lines[0], lines[0]
    return lines[0]


@pytest.fixture
def nothing_integrates(monkeypatch):
    """Refused before any time is spent, asserted by behaviour rather than by a wall clock (which a loaded
    machine can stretch): every integration a command could start — a tracking problem's nominal run and
    :func:`~robustrack.tracking.simulate_constrained` — fails the test if it is reached."""
    import robustrack.tracking as tracking
    from robustrack.tracking import constrained, simulate

    def started(*args, **kwargs):
        raise AssertionError("an integration started: the bad input was not refused first")

    # the package's lazy attribute first: read after integrate's was patched, it would cache the stand-in
    monkeypatch.setattr(tracking, "simulate_constrained", started)
    monkeypatch.setattr(constrained, "simulate_constrained", started)
    monkeypatch.setattr(simulate, "integrate_nominal", started)


# ----------------------------------------------------------------------------------------- #
# 1. command-line arguments (refused by the parser, one line, exit 2)
# ----------------------------------------------------------------------------------------- #
ARGUMENTS = [
    (["gamma", "duffing-tracking", "--samples", "abc"], "--samples"),
    (["gamma", "duffing-tracking", "--samples", "0"], "--samples"),
    (["gamma", "duffing-tracking", "--samples", "-5"], "--samples"),
    (["gamma", "duffing-tracking", "--samples", "1.5"], "--samples"),
    (["gamma", "duffing-tracking", "--samples", "nan"], "--samples"),
    (["gamma", "duffing-tracking", "--samples", "inf"], "--samples"),
    (["gamma", "duffing-tracking", "--samples", "1e400"], "--samples"),
    (["gamma", "duffing-tracking", "--spread", "nan"], "--spread"),
    (["gamma", "duffing-tracking", "--spread", "inf"], "--spread"),
    (["gamma", "duffing-tracking", "--spread", "ten"], "--spread"),
    (["gamma", "duffing-tracking", "--seed", "-1"], "--seed"),
    (["gamma", "duffing-tracking", "--seed", "1.5"], "--seed"),
    (["gamma", "duffing-tracking", "--quantile", "nan"], "--quantile"),
    (["gamma", "duffing-tracking", "--margin", "-inf"], "--margin"),
    (["montecarlo", "duffing-tracking", "--samples", "0"], "--samples"),
    (["montecarlo", "duffing-tracking", "--workers", "0"], "--workers"),
    (["montecarlo", "duffing-tracking", "--workers", "two"], "--workers"),
    (["montecarlo", "duffing-tracking", "--chunk", "0"], "--chunk"),
    (["montecarlo", "duffing-tracking", "--spread", "nan"], "--spread"),
    (["worst-case", "duffing-tracking", "--budget", "4"], "--budget"),
    (["worst-case", "duffing-tracking", "--budget", "x"], "--budget"),
    (["tune", "duffing-tracking", "--compensator", "gss", "--target-e", "nan"], "--target-e"),
    (["tune", "duffing-tracking", "--compensator", "gss", "--target-e", "1e-3", "--gamma", "inf"], "--gamma"),
    (["tune", "duffing-tracking", "--compensator", "gss", "--target-e", "1e-3", "--gamma-samples", "0"],
     "--gamma-samples"),
    (["report", "duffing-tracking", "--gamma-samples", "-1"], "--gamma-samples"),
    (["report", "duffing-tracking", "--montecarlo", "-3"], "--montecarlo"),
    (["report", "duffing-tracking", "--gamma-spread", "nan"], "--gamma-spread"),
    (["compare", "duffing-tracking", "--jobs", "0"], "--jobs"),
    (["run", "duffing-tracking", "--compensator", "pid"], "--compensator"),
    (["run"], "name"),
    (["nosuchcommand"], "nosuchcommand"),
    (["run", "duffing-tracking", "--nosuchoption"], "--nosuchoption"),
    ([], "required"),
]


@pytest.mark.parametrize("argv, match", ARGUMENTS, ids=[" ".join(a[0]) or "empty" for a in ARGUMENTS])
def test_bad_arguments_one_line(capsys, argv, match):
    code, out, err = cli(capsys, *argv)
    assert code == 2
    assert_one_line_error(code, err, match)


@pytest.mark.parametrize("text, value", [("1000", 1000), ("5e7", 50_000_000), ("10_000", 10_000), (" 7 ", 7)])
def test_counts_in_scientific_notation_are_read(text, value):
    from robustrack._validate import cli_int

    assert cli_int(text, "--samples") == value


# ----------------------------------------------------------------------------------------- #
# 2. scenario files
# ----------------------------------------------------------------------------------------- #
GOOD_HEAD = b'[scenario]\nname = "x"\nkind = "duffing-tracking"\n'
FILES = {
    "not-utf8": (b"\xff\xfe[scenario]\n", "UTF-8"),
    "latin1-comment": (GOOD_HEAD + "# m\xe4ss\n".encode("latin-1"), "UTF-8"),
    "truncated-string": (b'[scenario]\nname = "x"\nkind = "duf', "invalid TOML"),
    "truncated-table": (GOOD_HEAD + b"[plant\n", "invalid TOML"),
    "truncated-list": (GOOD_HEAD + b"[initial]\nq = [1.0,", "invalid TOML"),
    "empty": (b"", "[scenario]"),
    "nul-bytes": (b"\x00\x00\x00", "invalid TOML"),
    "binary": (bytes(range(256)), "UTF-8"),
    "no-scenario-table": (b"[plant]\nm1 = 1.0\n", "[scenario]"),
    "scenario-not-table": (b'scenario = "x"\n', "[scenario]"),
    "unknown-kind": (b'[scenario]\nname = "x"\nkind = "rocket"\n', "unknown scenario kind"),
    "name-not-string": (b'[scenario]\nname = 3\nkind = "duffing-tracking"\n', "name"),
    "unknown-meta-key": (GOOD_HEAD + b'author = "me"\n', "scenario.author"),
    "unknown-section": (GOOD_HEAD + b"[engine]\nx = 1\n", "unknown section"),
    "unknown-key": (GOOD_HEAD + b"[plant]\nm3 = 1.0\n", "plant.m3"),
    "section-not-table": (b"plant = 3\n" + GOOD_HEAD, "[plant]"),
    "wrong-type": (GOOD_HEAD + b'[plant]\nm1 = "heavy"\n', "plant.m1"),
    "bool-for-number": (GOOD_HEAD + b"[plant]\nm1 = true\n", "plant.m1"),
    "list-length": (GOOD_HEAD + b"[initial]\nq = [1.0]\n", "initial.q"),
    "list-of-strings": (GOOD_HEAD + b'[initial]\nq = ["a", "b"]\n', "initial.q"),
    "nan-value": (GOOD_HEAD + b"[plant]\nm1 = nan\n", "plant.m1"),
    "inf-value": (GOOD_HEAD + b"[simulation]\nt_end = inf\n", "simulation.t_end"),
    "nan-in-list": (GOOD_HEAD + b"[initial]\nq = [nan, 1.0]\n", "initial.q"),
    "negative-horizon": (GOOD_HEAD + b"[simulation]\nt_end = -1.0\n", "simulation.t_end"),
    "rtol-below-floor": (GOOD_HEAD + b"[simulation]\nrtol = 1e-15\n", "simulation.rtol"),
    "negative-sample-period": (GOOD_HEAD + b"[compensator]\nsample_period = -1.0\n", "compensator.sample_period"),
    "duplicate-key": (GOOD_HEAD + b"[plant]\nm1 = 1.0\nm1 = 2.0\n", "invalid TOML"),
}


@pytest.mark.parametrize("name", sorted(FILES))
def test_bad_scenario_files(capsys, tmp_path, name):
    content, match = FILES[name]
    path = tmp_path / "bad.toml"
    path.write_bytes(content)
    code, out, err = cli(capsys, "run", path)
    assert code == 2 and out == ""
    assert_one_line_error(code, err, match)
    with pytest.raises(ScenarioError):
        from robustrack.scenarios import load_scenario

        load_scenario(str(path))


def test_scenario_path_that_is_a_folder(capsys, tmp_path):
    folder = tmp_path / "dir.toml"
    folder.mkdir()
    for command in ("run", "show", "gamma", "report"):
        code, out, err = cli(capsys, command, folder)
        assert_one_line_error(code, err, "folder")


@pytest.mark.parametrize("name", ["missing.toml", "nosuchscenario", "../../etc/passwd"])
def test_unknown_scenarios(capsys, tmp_path, name):
    code, out, err = cli(capsys, "run", name if not name.endswith(".toml") else tmp_path / name)
    assert_one_line_error(code, err)


# ----------------------------------------------------------------------------------------- #
# 3. --set values: the key typed and the allowed range in the message, before any run
# ----------------------------------------------------------------------------------------- #
SETS = [
    (["simulation.t_end=0"], "`simulation.t_end` must be > 0"),
    (["simulation.t_end=-1"], "`simulation.t_end` must be > 0"),
    (["simulation.t_end=nan"], "`simulation.t_end` must be a finite number"),
    (["simulation.t_end=inf"], "`simulation.t_end` must be a finite number"),
    (["simulation.t_end=abc"], "`simulation.t_end` must be a number"),
    (["simulation.rtol=1e-15"], "`simulation.rtol` must be in [2.22e-14, 1)"),
    (["simulation.rtol=0"], "`simulation.rtol` must be in"),
    (["simulation.rtol=1"], "`simulation.rtol` must be in"),
    (["simulation.rtol=-1e-8"], "`simulation.rtol` must be in"),
    (["simulation.atol=0"], "`simulation.atol` must be in [1e-20, ∞)"),
    (["simulation.atol=-1e-12"], "`simulation.atol` must be in [1e-20, ∞)"),
    (["simulation.atol=1e-200"], "`simulation.atol` must be in [1e-20, ∞)"),  # was ZeroDivisionError (issue 23)
    (["simulation.atol=1e-30"], "`simulation.atol` must be in [1e-20, ∞)"),  # was a 6.5-minute run (issue 23)
    (["simulation.n_points=1"], "`simulation.n_points` must be an integer in [2, 1,000,000]"),
    (["simulation.n_points=1e9"], "`simulation.n_points`"),
    (["simulation.n_points=2.5"], "`simulation.n_points`"),
    (["simulation.method=\"Euler\""], "method"),
    ([SHORT, "simulation.transient=5"], "`simulation.transient` must be < `simulation.t_end`"),
    ([SHORT, "simulation.transient=0.2"], "`simulation.transient` must be < `simulation.t_end`"),
    (["compensator.sample_period=-1"], "`compensator.sample_period` must be >= 0"),
    (["compensator.sample_period=nan"], "`compensator.sample_period` must be a finite number"),
    (["compensator.sign_sample_period=0", "compensator.f=\"sign\""], "`compensator.sign_sample_period` must be > 0"),
    (["compensator.sample_period=1e-12"], "`compensator.sample_period` = 1e-12 s makes"),
    (["compensator.eps=0"], "`compensator.eps` must be > 0"),
    (["compensator.eps=-0.01"], "`compensator.eps` must be > 0"),
    (["compensator.eps=1e-300"], "`compensator.eps` = 1e-300"),
    (["compensator.gss.gamma_prime=1e308"], "`compensator.gss.gamma_prime` = 1e+308"),
    (["compensator.gss.gamma_prime=-1"], "`compensator.gss.gamma_prime` must be >= 0"),
    (["compensator.gss.gamma_prime=nan"], "`compensator.gss.gamma_prime` must be a finite number"),
    (["uncertainty.gamma=nan"], "`uncertainty.gamma` must be a finite number"),
    (["compensator.gss.K=0"], "`compensator.gss.K` must be > 0"),
    (["compensator.gss.K=-10"], "`compensator.gss.K` must be > 0"),
    (["compensator.gss.K=1e308", "compensator.gss.gamma_prime=1e308"], "`compensator.gss.K`"),
    (["compensator.gss.alpha0=0"], "`compensator.gss.alpha0`"),
    (["compensator.gss.alpha0=1.5"], "`compensator.gss.alpha0`"),
    (["compensator.gss.beta0=-1"], "`compensator.gss.beta0`"),
    (["compensator.gss.sigma=0"], "`compensator.gss.sigma`"),
    (["compensator.gss.gama=1"], "unknown key `compensator.gss.gama`"),
    (["compensator.gss=3"], "`compensator.gss` must be a table"),
    (["compensator.alpha_c=0"], "`compensator.alpha_c`"),
    (["compensator.f=\"signed-power\"", "compensator.p=-2"], "`compensator.p`"),
    (["compensator.type=\"gd\"", "compensator.gd.gamma=-3"], "`compensator.gd.gamma` must be >= 0"),
    (["compensator.type=\"gd\"", "compensator.gd.Kd=-1"], "`compensator.gd.Kd`"),
    (["compensator.type=\"gdbar\"", "compensator.gdbar.k=0"], "`compensator.gdbar.k`"),
    (["compensator.type=\"lqr\"", "compensator.lqr.R=0"], "`compensator.lqr.R`"),
    (["compensator.type=\"computed-torque\"", "compensator.computed-torque.Kd=-1"], "`compensator.computed-torque.Kd`"),
    (["compensator.type=\"bogus\""], "`compensator.type` must be one of"),
    (["compensator.f=\"bogus\""], "bogus"),
    (["uncertainty.dm=[-5.0, 0.0]"], "mass ≤ 0"),
    (["uncertainty.dm=[0.1]"], "uncertainty.dm"),
    (["plant.m1=0"], "`plant.m1` must be > 0"),
    (["plant.m1=-2"], "`plant.m1` must be > 0"),
    (["initial.q=[1.0, 2.0, 3.0]"], "initial.q"),
    (["nosection.x=1"], "unknown section"),
    (["plant.m9=1"], "unknown key `plant.m9`"),
    (["t_end=3"], "SECTION.KEY"),
    (["simulation.t_end"], "SECTION.KEY=VALUE"),
    (["a.b.c.d=1"], "SECTION.KEY"),
]


@pytest.mark.parametrize("sets, match", SETS, ids=[";".join(s) for s, _ in SETS])
def test_bad_set_values_name_the_key(capsys, sets, match, nothing_integrates):
    argv = ["run", "duffing-tracking"]
    for item in sets:
        argv += ["--set", item]
    code, out, err = cli(capsys, *argv)
    assert_one_line_error(code, err, match)
    assert out == ""  # refused before anything ran: no metrics printed


@pytest.mark.parametrize("sets, new, match", [
    (["compensator.gamma=-1"], "`compensator.gss.gamma_prime` and `uncertainty.gamma`",
     "`compensator.gamma` (read as `compensator.gss.gamma_prime`) must be >= 0"),
    (["compensator.K=0"], "`compensator.gss.K`", "`compensator.K` (read as `compensator.gss.K`) must be > 0"),
    (["compensator.type=\"lqr\"", "compensator.lqr_r=0"], "`compensator.lqr.R`",
     "`compensator.lqr_r` (read as `compensator.lqr.R`)"),
    (["compensator.type=\"computed-torque\"", "compensator.Kd_ct=-1"], "`compensator.computed-torque.Kd`",
     "`compensator.Kd_ct` (read as `compensator.computed-torque.Kd`)"),
])
def test_bad_old_spellings_name_the_key_as_typed(capsys, sets, new, match, nothing_integrates):
    """An old flat [compensator] key: one notice line naming its new key, then the error naming the key typed."""
    argv = ["run", "duffing-tracking"]
    for item in sets:
        argv += ["--set", item]
    code, out, err = cli(capsys, *argv)
    notice, error = [ln for ln in err.splitlines() if ln.strip()]
    assert notice.startswith("robustrack: notice: duffing-tracking.toml (with --set): old key") and new in notice
    assert code not in (0, None) and error.startswith("robustrack: error: ") and match in error
    assert out == ""


@pytest.mark.parametrize("sets, match", [
    (["constraint.L=0"], "`constraint.L` must be > 0"),
    (["constraint.L=-20"], "`constraint.L` must be > 0"),
    (["plant.m=-1"], "`plant.m` must be > 0"),
    (["initial.a=nan"], "`initial.a` must be a finite number"),
])
def test_constrained_scenario_errors_name_the_key(capsys, sets, match):
    argv = ["run", "cartesian-pendulum"]
    for item in sets:
        argv += ["--set", item]
    code, out, err = cli(capsys, *argv)
    assert_one_line_error(code, err, match)


def test_rtol_at_the_floor_is_accepted():
    from robustrack.scenarios import load_scenario

    s = load_scenario("duffing-tracking", [f"simulation.rtol={float(100 * np.finfo(float).eps)!r}"])
    assert s.config["simulation"]["rtol"] == 100 * np.finfo(float).eps


# ----------------------------------------------------------------------------------------- #
# 4. outputs that cannot be written: refused BEFORE the run, nothing half-written
# ----------------------------------------------------------------------------------------- #
def _unwritable(tmp_path, kind):
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    return {"under-a-file": blocker / "out.json", "proc": Path("/proc/robustrack-nope/out.json"),
            "folder": tmp_path}[kind]


@pytest.mark.parametrize("kind", ["under-a-file", "proc", "folder"])
@pytest.mark.parametrize("command", [
    ["run", "duffing-tracking", "--set", SHORT],
    ["gamma", "duffing-tracking", "--samples", "10"],
    ["montecarlo", "duffing-tracking", "--samples", "2", "--set", SHORT],
    ["worst-case", "duffing-tracking", "--budget", "5", "--set", SHORT],
    ["tune", "duffing-tracking", "--compensator", "gss", "--target-e", "1e-3", "--gamma", "10", "--set", SHORT],
])
def test_json_output_checked_before_the_run(capsys, tmp_path, command, kind, nothing_integrates):
    target = _unwritable(tmp_path, kind)
    code, out, err = cli(capsys, *command, "--json", target)
    assert_one_line_error(code, err, "--json")
    assert out == ""


@pytest.mark.parametrize("command", [["report", "duffing-tracking", "--set", SHORT],
                                     ["compare", "duffing-tracking", "--set", SHORT]])
@pytest.mark.parametrize("kind", ["a-file", "under-a-file", "proc"])
def test_output_folder_checked_before_the_run(capsys, tmp_path, command, kind):
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    target = {"a-file": blocker, "under-a-file": blocker / "out", "proc": Path("/proc/robustrack-nope")}[kind]
    code, out, err = cli(capsys, *command, "-o", target)
    assert_one_line_error(code, err, "-o")
    assert out == ""


@pytest.mark.parametrize("option", [["run", "duffing-tracking", "--set", SHORT, "--json"],
                                    ["run", "duffing-tracking", "--set", SHORT, "--save"],
                                    ["montecarlo", "duffing-tracking", "--samples", "2", "--set", SHORT, "--store"]],
                         ids=["--json", "--save", "--store"])
def test_an_output_file_in_a_missing_folder_is_refused_and_no_folder_made(capsys, tmp_path, option,
                                                                          nothing_integrates):
    """Item 10 of issue 32: ``--json /nonexistent/dir/x.json`` made the whole tree, silently. A file's folder
    must exist: one line naming the option and the folder, nothing run, nothing created."""
    suffix = {"--json": "x.json", "--save": "x.npz", "--store": "x.sqlite"}[option[-1]]
    target = tmp_path / "no" / "such" / suffix
    code, out, err = cli(capsys, *option, target)
    line = assert_one_line_error(code, err, f"`{option[-1]}`")
    assert f"its folder {str(target.parent)!r} does not exist" in line and "Nothing was run" in line
    assert out == "" and sorted(p.name for p in tmp_path.iterdir()) == []


def test_an_output_folder_is_made_by_design_and_said(capsys, tmp_path):
    """``-o DIR`` names a folder the command fills: made with its missing parents, and a line says so."""
    target = tmp_path / "new" / "report"
    code, out, err = cli(capsys, "report", "duffing-tracking", "--set", SHORT, "--gamma-samples", "20", "-o", target)
    assert code == 0, err
    assert out.splitlines()[0] == f"created the output folder {target} (-o makes it, with any missing parent folders)"
    assert (target / "report.html").is_file()


def test_run_json_is_written_whole(capsys, tmp_path):
    target = tmp_path / "deep" / "run.json"
    target.parent.mkdir()
    code, out, err = cli(capsys, "run", "duffing-tracking", "--set", SHORT, "--json", target)
    assert code == 0, err
    doc = json.loads(target.read_text())
    assert doc["solver"]["success"] is True
    assert sorted(p.name for p in target.parent.iterdir()) == ["run.json"]  # no temporary file left


def test_atomic_write_keeps_the_old_file_when_the_write_fails(tmp_path, monkeypatch):
    from robustrack import _files

    target = tmp_path / "x.json"
    target.write_text("old")

    def boom(*a, **k):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(_files.os, "replace", boom)
    with pytest.raises(OSError):
        _files.write_atomic(target, "new")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["x.json"]


# ----------------------------------------------------------------------------------------- #
# 5. sizes: memory estimated and refused up front
# ----------------------------------------------------------------------------------------- #
@pytest.mark.parametrize("samples", ["1e12", "1000000000000", "9e15"])
def test_gamma_samples_too_large_refused_before_anything(capsys, samples, nothing_integrates):
    code, out, err = cli(capsys, "gamma", "duffing-tracking", "--samples", samples)
    line = assert_one_line_error(code, err, "`--samples`")
    assert "GiB" in line


@pytest.mark.parametrize("argv, match", [
    (["--spread", "1.5"], "`--spread`"),
    (["--spread", "-0.1"], "`--spread`"),
    (["--quantile", "2"], "`--quantile`"),
    (["--quantile", "0"], "`--quantile`"),
    (["--margin", "0.5"], "`--margin`"),
    (["--parameter", "mass"], "mass"),
])
def test_gamma_settings_refused_by_their_names(capsys, argv, match):
    code, out, err = cli(capsys, "gamma", "duffing-tracking", "--samples", "10", *argv)
    assert_one_line_error(code, err, match)


def test_montecarlo_samples_too_large(capsys):
    code, out, err = cli(capsys, "montecarlo", "duffing-tracking", "--samples", "1e12")
    assert_one_line_error(code, err, "`--samples`")


def test_sample_parameters_memory_guard():
    from robustrack.uncertainty import sample_parameters

    with pytest.raises(ParameterError, match="`n`.*GiB"):
        sample_parameters([1.0, 2.0], 10**13, spread=0.1, seed=0)


# ----------------------------------------------------------------------------------------- #
# 6. NaN is never success; silently wrong answers
# ----------------------------------------------------------------------------------------- #
@pytest.mark.parametrize("command", [["run"], ["report", "-o", "REPORT"]])
@pytest.mark.parametrize("item", ["compensator.eps=1e-300", "compensator.gss.gamma_prime=1e308"])
def test_overflowing_compensators_are_refused(capsys, tmp_path, command, item):
    command = [c if c != "REPORT" else str(tmp_path / "r") for c in command]
    code, out, err = cli(capsys, command[0], "duffing-tracking", *command[1:], "--set", SHORT, "--set", item)
    assert_one_line_error(code, err, "not finite")


def test_nonfinite_metrics_are_a_failure():
    from robustrack.tracking.simulate import _nonfinite_metrics

    assert _nonfinite_metrics({"a": 1.0, "b": [1.0, math.nan], "c": None, "d": math.inf, "e": True}) == ["b", "d"]


def test_run_producing_nan_is_a_failed_run():
    """A user compensator that returns NaN: the run fails (SolverError, success False), never succeeds."""
    import warnings

    from robustrack.controllers.compensators import GSS
    from robustrack.scenarios import load_scenario
    from robustrack.tracking import simulate_tracking

    class NaNLater(GSS):
        def __call__(self, t, e, edot, z=None):
            u = super().__call__(t, e, edot, z)
            return u * np.where(np.asarray(t) > 0.02, np.nan, 1.0)

    pb = load_scenario("duffing-tracking", [SHORT]).build()
    comp = NaNLater(K=10.0, gamma_prime=10.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(SolverError):
            simulate_tracking(pb.nominal, pb.constraint, comp, pb.q0, pb.qd0, (0.0, 0.05), actual=pb.actual,
                              n_points=11)
        res = simulate_tracking(pb.nominal, pb.constraint, comp, pb.q0, pb.qd0, (0.0, 0.05), actual=pb.actual,
                                n_points=11, raise_on_failure=False)
    assert res.success is False


def test_transient_covering_nothing_is_not_a_no():
    """Nothing after the transient: nothing was judged, so bounds_held is None (not False)."""
    from robustrack.controllers.compensators import PromisedBounds
    from robustrack.tracking.assess import tracking_metrics

    t = np.linspace(0, 1, 11)
    z = np.zeros((11, 2))
    b = PromisedBounds(e=1.0, edot=1.0, region="", formula="", assumptions="")
    assert tracking_metrics(t, z, z, z, z, b, transient=2.0)["bounds_held"] is None
    assert tracking_metrics(t, z, z, z, z, b, transient=0.5)["bounds_held"] is True
    assert tracking_metrics(t, z + 2, z, z, z, b, transient=0.5)["bounds_held"] is False


def test_transient_inside_the_horizon_is_judged(capsys, tmp_path):
    out_json = tmp_path / "run.json"
    code, out, err = cli(capsys, "run", "duffing-tracking", "--set", SHORT, "--set", "simulation.transient=0.1",
                         "--json", out_json)
    assert code == 0, err
    doc = json.loads(out_json.read_text())
    assert doc["metrics"]["transient_s"] == 0.1
    assert doc["bounds"]["held"] in (True, False)


def test_inconsistent_constraints_are_said():
    """A q̈ = b with rows (1, 0) q̈ = 0 and (1, 0) q̈ = 1: least squares gives q̈1 = 1/2, misfit 1/√2."""
    from robustrack.constraints import FunctionConstraint
    from robustrack.plants.examples import FreeParticle
    from robustrack.tracking.assess import least_squares_note

    plant = FreeParticle()

    def A(q, qd, t):
        return np.broadcast_to(np.array([[1.0, 0, 0], [1.0, 0, 0]]), np.shape(q)[:-1] + (2, 3))

    def b(q, qd, t):
        return np.broadcast_to(np.array([0.0, 1.0]), np.shape(q)[:-1] + (2,))

    con = FunctionConstraint(A, b, n=3, m=2)
    q = np.zeros((4, 3))
    note = least_squares_note(plant, con, q, q, np.linspace(0, 1, 4))
    # judged row by row against each row's own scale ‖A_i‖ ‖q̈‖ + |b_i| (issue 23: scale-free):
    # row 1: |½ − 0| / (1 · ½ + 0) = 1; row 2: |½ − 1| / (1 · ½ + 1) = 1/3; the largest is 1
    assert note is not None and "4 of 4" in note and "misfit 1)" in note
    consistent = FunctionConstraint(lambda q, qd, t: A(q, qd, t)[..., :1, :], lambda q, qd, t: b(q, qd, t)[..., 1:],
                                    n=3, m=1)
    assert least_squares_note(plant, consistent, q, q, np.linspace(0, 1, 4)) is None


def test_inconsistent_constraints_notice_on_the_cli(capsys, monkeypatch):
    import robustrack.scenarios.runner as runner

    monkeypatch.setattr(runner, "least_squares_note", lambda *a, **k: "the constraints A q̈ = b are inconsistent",
                        raising=False)
    import robustrack.tracking.assess as assess

    monkeypatch.setattr(assess, "least_squares_note", lambda *a, **k: "the constraints A q̈ = b are inconsistent")
    code, out, err = cli(capsys, "run", "nonholonomic-particle", "--set", "simulation.t_end=0.1")
    assert code == 0
    assert "robustrack: notice:" in err and "inconsistent" in err


# ----------------------------------------------------------------------------------------- #
# 7. the Python API: named errors, never raw numpy/json/zip ones
# ----------------------------------------------------------------------------------------- #
EYE = np.eye(3)
Z3, Z13, Z1 = np.zeros(3), np.zeros((1, 3)), np.zeros(1)
MECHANICS = {
    "M-string": ("abc", Z3, Z13, Z1),
    "Q-string": (EYE, "abc", Z13, Z1),
    "Q-list-of-strings": (EYE, ["a", "b", "c"], Z13, Z1),
    "A-string": (EYE, Z3, "A", Z1),
    "b-none": (EYE, Z3, Z13, None),
    "M-dict": ({"M": 1}, Z3, Z13, Z1),
    "batch-M-Q": (np.tile(EYE, (4, 1, 1)), np.zeros((5, 3)), Z13, Z1),
    "batch-A-b": (EYE, Z3, np.zeros((3, 1, 3)), np.zeros((2, 1))),
    "batch-M-A": (np.tile(EYE, (4, 1, 1)), np.zeros((4, 3)), np.zeros((3, 1, 3)), np.zeros((3, 1))),
    "M-not-square": (np.zeros((3, 2)), Z3, Z13, Z1),
    "Q-wrong-n": (EYE, np.zeros(2), Z13, Z1),
    "A-wrong-n": (EYE, Z3, np.zeros((1, 2)), Z1),
    "b-wrong-m": (EYE, Z3, Z13, np.zeros(2)),
    "M-nan": (EYE * np.nan, Z3, Z13, Z1),
    "Q-inf": (EYE, np.full(3, np.inf), Z13, Z1),
    "M-scalar": (1.0, Z3, Z13, Z1),
    "M-nonsymmetric": (np.triu(np.ones((3, 3))), Z3, Z13, Z1),
    "M-indefinite": (np.diag([1.0, -1.0, 1.0]), Z3, Z13, Z1),
}


@pytest.mark.parametrize("name", sorted(MECHANICS))
@pytest.mark.parametrize("function", ["solve_constrained", "constraint_force", "constrained_acceleration"])
def test_mechanics_refuses_bad_arrays(function, name):
    import robustrack

    with pytest.raises(RobustrackError):
        getattr(robustrack, function)(*MECHANICS[name])


@pytest.mark.parametrize("args", [
    ("abc", Z3, Z13, Z1), (EYE, Z3, np.zeros((2, 3)), Z1), (EYE, Z3, Z13, Z1, 0.0), (EYE, Z3, Z13, Z1, "x"),
])
def test_augmented_system_refuses_bad_arrays(args):
    from robustrack.mechanics import augmented_system

    with pytest.raises(ParameterError):
        augmented_system(*args)


@pytest.mark.parametrize("call", [
    lambda p: p.mass_matrix("abc"),
    lambda p: p.mass_matrix([[0.0, 0.0]]),
    lambda p: p.given_force(np.zeros((4, 3)), np.zeros((5, 3))),
    lambda p: p.given_force("q", np.zeros(3)),
    lambda p: p.replace(m=(1.0, 2.0)),
    lambda p: p.replace(m="heavy"),
    lambda p: p.replace(mass=1.0),
    lambda p: p.replace(m=(1.0, -2.0, 3.0)),
], ids=["M-string", "M-wrong-n", "force-batch", "force-string", "m-length", "m-string", "unknown-param", "m-neg"])
def test_pendulum_refuses_bad_input(call):
    from robustrack.plants import NLinkPendulum

    with pytest.raises(RobustrackError):
        call(NLinkPendulum(m=(1.0, 2.0, 3.0), L=(1.0, 1.5, 2.0)))


@pytest.mark.parametrize("call", [
    lambda p: p.mass_matrix("abc"),
    lambda p: p.given_force(np.zeros((4, 2)), np.zeros((5, 2))),
    lambda p: p.replace(m1=np.ones(5)).mass_matrix(np.zeros((4, 2))),
    lambda p: p.replace(m1=-1.0),
    lambda p: p.replace(k1="stiff"),
], ids=["M-string", "force-batch", "param-batch", "m1-neg", "k1-string"])
def test_duffing_plant_refuses_bad_input(call):
    from robustrack.plants.examples import CoupledDuffing

    with pytest.raises(RobustrackError):
        call(CoupledDuffing())


@pytest.fixture(scope="module")
def duffing_problem():
    from robustrack.scenarios import load_scenario

    return load_scenario("duffing-tracking", [SHORT]).build()


TRACKING = {
    "q0-string": dict(q0="abc"),
    "q0-wrong-n": dict(q0=[1.0, 2.0, 3.0]),
    "qd0-nan": dict(qd0=[np.nan, 0.0]),
    "t_span-reversed": dict(t_span=(1.0, 0.0)),
    "t_span-three": dict(t_span=(0.0, 0.1, 0.2)),
    "t_span-string": dict(t_span="0..1"),
    "rtol-below-floor": dict(rtol=1e-15),
    "rtol-zero": dict(rtol=0.0),
    "atol-negative": dict(atol=-1.0),
    "atol-1e-30": dict(atol=1e-30),
    "atol-1e-200": dict(atol=1e-200),
    "n_points-one": dict(n_points=1),
    "n_points-float": dict(n_points=10.0),
    "method": dict(method="Euler"),
    "sample_period-negative": dict(sample_period=-1.0),
    "sample_period-tiny": dict(sample_period=1e-12),
    "transient-too-long": dict(transient=5.0),
    "transient-negative": dict(transient=-0.1),
    "transient-nan": dict(transient=np.nan),
    "backend": dict(backend="gpu"),
    "t_eval-unsorted": dict(t_eval=[0.1, 0.0]),
    "qc0-string": dict(qc0="x"),
}


@pytest.mark.parametrize("name", sorted(TRACKING))
def test_simulate_tracking_refuses_before_running(duffing_problem, name, nothing_integrates):
    from robustrack.tracking import simulate_tracking

    pb = duffing_problem
    kw = dict(q0=pb.q0, qd0=pb.qd0, t_span=(0.0, 0.2))
    kw.update(TRACKING[name])
    q0, qd0, t_span = kw.pop("q0"), kw.pop("qd0"), kw.pop("t_span")
    with pytest.raises(RobustrackError):
        simulate_tracking(pb.nominal, pb.constraint, pb.compensator, q0, qd0, t_span, actual=pb.actual, **kw)


def test_simulate_tracking_refuses_an_overflowing_compensator(duffing_problem):
    from robustrack.controllers import make_compensator
    from robustrack.tracking import simulate_tracking

    pb = duffing_problem
    with pytest.raises(ParameterError, match="`gamma_prime` = 1e\\+308"):
        simulate_tracking(pb.nominal, pb.constraint, make_compensator("gss", gamma_prime=1e308),
                          pb.q0, pb.qd0, (0.0, 0.2), actual=pb.actual)


@pytest.mark.parametrize("kind, params", [
    ("gss", dict(K=0.0)), ("gss", dict(K="ten")), ("gss", dict(gamma_prime=np.nan)), ("gss", dict(alpha0=2.0)),
    ("gd", dict(Kd=-1.0)), ("gdbar", dict(k=-1.0)), ("nosuch", {}), ("gss", dict(nosuch=1.0)),
])
def test_make_compensator_refuses(kind, params):
    from robustrack.controllers import make_compensator

    with pytest.raises(ParameterError):
        make_compensator(kind, **params)


@pytest.mark.parametrize("name, eps, kw", [("sign", 0.0, {}), ("tanh", -1.0, {}), ("tanh", "small", {}),
                                           ("nosuch", 0.1, {}), ("signed-power", 0.1, dict(p=-1.0, alpha_c=1.0))])
def test_control_function_refuses(name, eps, kw):
    from robustrack.controllers import control_function

    with pytest.raises((ParameterError, ControlFunctionError)):
        control_function(name, eps, **kw)


SAMPLES = {
    "n-zero": dict(n=0),
    "n-float": dict(n=10.0),
    "n-string": dict(n="10"),
    "n-bool": dict(n=True),
    "seed-negative": dict(seed=-1),
    "spread-nan": dict(spread=np.nan),
    "spread-shape": dict(spread=[0.1, 0.2, 0.3]),
    "nominal-string": dict(nominal_value="m"),
    "kind": dict(kind="cauchy"),
}


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_sample_parameters_refuses(name):
    from robustrack.uncertainty import sample_parameters

    kw = dict(nominal_value=[1.0, 2.0], n=10, spread=0.1, seed=0)
    kw.update(SAMPLES[name])
    with pytest.raises(ParameterError):
        sample_parameters(kw.pop("nominal_value"), kw.pop("n"), **kw)


# ----------------------------------------------------------------------------------------- #
# 8. saved results that are corrupt or truncated
# ----------------------------------------------------------------------------------------- #
def _saved(tmp_path):
    from robustrack.tracking.results import RunInfo, TrackingResult

    T, n = 5, 2
    z = np.zeros((T, n))
    r = TrackingResult(t=np.linspace(0, 1, T), q=z, qd=z, qc=z, qcd=z, Qc=z, Qu=z, z=np.zeros((T, 0)),
                       run_info=RunInfo(metrics={}, solver={"success": True}))
    return r.save(tmp_path / "run")


def _corrupt(kind, npz, js):
    raw = npz.read_bytes()
    edits = {
        "npz-truncated": lambda: npz.write_bytes(raw[: len(raw) // 2]),
        "npz-empty": lambda: npz.write_bytes(b""),
        "npz-bitflip": lambda: npz.write_bytes(raw[:100] + bytes([raw[100] ^ 0xFF]) + raw[101:]),
        "npz-text": lambda: npz.write_text("not a zip"),
        "npz-missing": lambda: npz.unlink(),
        "npz-folder": lambda: (npz.unlink(), npz.mkdir()),
        "npz-wrong-arrays": lambda: np.savez(npz, t=np.zeros(3)),
        "npz-inconsistent": lambda: np.savez(npz, t=np.zeros(3), **{k: np.zeros((5, 2)) for k in
                                                                   ("q", "qd", "qc", "qcd", "Qc", "Qu", "z")}),
        "npz-object-array": lambda: np.savez(npz, t=np.array([{}, 1], dtype=object)),
        "json-truncated": lambda: js.write_text('{"metrics": '),
        "json-empty": lambda: js.write_text(""),
        "json-binary": lambda: js.write_bytes(b"\xff\xfe\x00\x01"),
        "json-list": lambda: js.write_text("[1, 2]"),
        "json-missing": lambda: js.unlink(),
    }
    edits[kind]()


CORRUPT = ["npz-truncated", "npz-empty", "npz-bitflip", "npz-text", "npz-missing", "npz-folder", "npz-wrong-arrays",
           "npz-inconsistent", "npz-object-array", "json-truncated", "json-empty", "json-binary", "json-list",
           "json-missing"]


@pytest.mark.parametrize("kind", CORRUPT)
def test_corrupt_saved_results_raise_a_named_error(tmp_path, kind):
    from robustrack.tracking.results import TrackingResult

    npz, js = _saved(tmp_path)
    _corrupt(kind, npz, js)
    with pytest.raises(RobustrackError):
        TrackingResult.load(tmp_path / "run")


def test_saved_result_round_trip(tmp_path):
    from robustrack.tracking.results import TrackingResult

    npz, js = _saved(tmp_path)
    back = TrackingResult.load(npz)
    assert back.t.shape == (5,) and back.info["solver"]["success"] is True
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.json", "run.npz"]


@pytest.mark.parametrize("content", [b"", b"not json", b'{"rows": 3}', b"[1]", b"\xff\xfe"])
def test_corrupt_comparison_json(tmp_path, content):
    from robustrack.scenarios.compare import ComparisonTable

    path = tmp_path / "comparison.json"
    path.write_bytes(content)
    with pytest.raises(ParameterError):
        ComparisonTable.from_json(path)


@pytest.mark.parametrize("content", [b"SQLite format 3\x00" + b"\x00" * 50, b"SQLite format 3\x00" + b"\xff" * 4096,
                                     b"hello"])
def test_corrupt_campaign_store(capsys, tmp_path, content):
    store = tmp_path / "c.sqlite"
    store.write_bytes(content)
    code, out, err = cli(capsys, "montecarlo", "--store", store, "--summary")
    assert_one_line_error(code, err, "--store")


def _version_1_store(capsys, tmp_path):
    """A store as robustrack wrote it before issue 23 (version 1: no assumptions, margins or outcome)."""
    import sqlite3

    store = tmp_path / "v1.sqlite"
    code, _, err = cli(capsys, "montecarlo", "duffing-tracking", "--samples", 3, "--set", SHORT, "--workers", 1,
                       "--store", store)
    assert code == 0, err
    db = sqlite3.connect(store)
    with db:
        for col in ("max_norm_dq", "max_norm_Mtilde", "assumptions_held", "outcome"):
            db.execute(f"ALTER TABLE samples DROP COLUMN {col}")
        db.execute("UPDATE meta SET value='1' WHERE key='version'")
    db.close()
    return store


def test_a_version_1_store_is_refused_for_a_run_and_read_for_a_summary(capsys, tmp_path):
    store = _version_1_store(capsys, tmp_path)
    code, out, err = cli(capsys, "montecarlo", "duffing-tracking", "--samples", 3, "--set", SHORT, "--workers", 1,
                         "--store", store)
    line = assert_one_line_error(code, err, "--store")
    assert "version 1" in line and "--summary" in line and "nothing was run" in line
    code, out, err = cli(capsys, "montecarlo", "--store", store, "--summary")
    assert code == 0 and "bounds held (observed): 3 / 3" in out and "guaranteed" in out and "unknown" in out


@pytest.mark.parametrize("version", ["0", "3", "two"])
def test_a_store_of_an_unknown_version_is_refused(capsys, tmp_path, version):
    import sqlite3

    store = _version_1_store(capsys, tmp_path)
    db = sqlite3.connect(store)
    with db:
        db.execute("UPDATE meta SET value=? WHERE key='version'", (version,))
    db.close()
    code, out, err = cli(capsys, "montecarlo", "--store", store, "--summary")
    assert f"version {version}" in assert_one_line_error(code, err, "--store")


def test_a_scheduler_port_that_never_answers_is_one_line_within_the_timeout(capsys, monkeypatch):
    import socket
    import threading

    monkeypatch.setenv("ROBUSTRACK_SCHEDULER_TIMEOUT", "2.5")  # the wait is the point: shorter than the default

    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(4)
    held = []  # the accepted connections stay open (a collected one would close: "connection reset")

    def accept_and_never_answer():
        try:
            for _ in range(4):
                held.append(srv.accept()[0])
        except OSError:  # the socket was closed at the end of the test
            pass

    threading.Thread(target=accept_and_never_answer, daemon=True).start()
    try:
        start = time.monotonic()
        code, out, err = cli(capsys, "montecarlo", "duffing-tracking", "--samples", 2, "--set", SHORT,
                             "--scheduler", f"tcp://127.0.0.1:{srv.getsockname()[1]}")
        # the probe's hard timeout, not the 90 s until the listener closed (before); the margin is for importing
        # distributed on a loaded machine (the clock runs from before the import)
        assert time.monotonic() - start < 2.5 + 60.0
        assert "did not answer" in assert_one_line_error(code, err, "--scheduler")
    finally:
        srv.close()
        for conn in held:
            conn.close()


@pytest.mark.parametrize("value", ["soon", "0", "-3", "inf", "nan"])
def test_a_bad_scheduler_timeout_is_one_line_naming_the_variable(capsys, monkeypatch, value):
    """ROBUSTRACK_SCHEDULER_TIMEOUT is read where a scheduler is used, before anything connects or runs."""
    from robustrack.campaigns.executors import SCHEDULER_TIMEOUT_S, scheduler_timeout

    monkeypatch.delenv("ROBUSTRACK_SCHEDULER_TIMEOUT", raising=False)
    assert scheduler_timeout() == SCHEDULER_TIMEOUT_S
    monkeypatch.setenv("ROBUSTRACK_SCHEDULER_TIMEOUT", " 12.5 ")
    assert scheduler_timeout() == 12.5
    monkeypatch.setenv("ROBUSTRACK_SCHEDULER_TIMEOUT", value)
    code, out, err = cli(capsys, "montecarlo", "duffing-tracking", "--samples", 2, "--set", SHORT,
                         "--scheduler", "tcp://127.0.0.1:9")
    message = assert_one_line_error(code, err, "ROBUSTRACK_SCHEDULER_TIMEOUT")
    assert repr(value) in message and "positive number of seconds" in message


# ----------------------------------------------------------------------------------------- #
# 9. the CLI wrapper: --debug, internal errors, progress
# ----------------------------------------------------------------------------------------- #
def test_debug_shows_the_traceback(tmp_path):
    folder = tmp_path / "dir.toml"
    folder.mkdir()
    from robustrack.cli import main as cli_main

    with pytest.raises(ScenarioError):
        cli_main(["--debug", "run", str(folder)])


def test_unexpected_errors_are_one_line(capsys, monkeypatch):
    import robustrack.cli as cli_module

    def broken(args):
        raise KeyError("oops")

    monkeypatch.setattr(cli_module, "cmd_list", broken)
    code, out, err = cli(capsys, "list")
    assert code == 3
    assert_one_line_error(code, err, "internal error: KeyError")


@pytest.mark.parametrize("exc, match", [(MemoryError(), "out of memory"),
                                        (PermissionError(13, "Permission denied", "/x"), "Permission denied"),
                                        (KeyboardInterrupt(), "interrupted")])
def test_wrapper_turns_faults_into_one_line(capsys, monkeypatch, exc, match):
    import robustrack.cli as cli_module

    def broken(args):
        raise exc

    monkeypatch.setattr(cli_module, "cmd_list", broken)
    code, out, err = cli(capsys, "list")
    assert code == (130 if isinstance(exc, KeyboardInterrupt) else 2)
    assert_one_line_error(code, err, match)


def test_progress_lines_without_a_terminal(capsys, monkeypatch):
    import robustrack.cli as cli_module

    clock = iter([0.0, 1.0, 6.0, 7.0, 12.5, 20.0])
    monkeypatch.setattr(cli_module.time, "perf_counter", lambda: next(clock))
    show = cli_module._progress()  # reads the clock once (start = 0)
    for t in (1.0, 2.0, 3.0, 4.0, 10.0):  # at 1, 6, 7, 12.5, 20 s
        show(t, 10.0)
    lines = capsys.readouterr().err.splitlines()
    # a line at 6 s (5 s after the start) and at 12.5 s; none at the end, none in between
    assert len(lines) == 2 and "t = 2 / 10 s" in lines[0] and "left" in lines[0]


# ----------------------------------------------------------------------------------------- #
# 10. Ctrl-C: exit 130, one line, finished work kept (real processes)
# ----------------------------------------------------------------------------------------- #
def _interrupt(argv, delay, cwd):
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    # the child gets Ctrl-C's default disposition even where the suite itself was started with SIGINT
    # ignored (a background job of a non-interactive shell), which the child would inherit
    proc = subprocess.Popen([sys.executable, "-m", "robustrack.cli", *argv], cwd=cwd, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    time.sleep(delay)
    assert proc.poll() is None, "the command ended before Ctrl-C"
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    return proc.returncode, out, err


@pytest.mark.parametrize("argv", [["run", "triple-pendulum", "--set", "simulation.t_end=1000"],
                                  ["gamma", "triple-pendulum", "--samples", "2e6"]],
                         ids=["run", "gamma"])
def test_ctrl_c_is_one_line_and_130(tmp_path, argv):
    code, out, err = _interrupt(argv, 4.0, tmp_path)
    assert code == 130, err  # (a KeyboardInterrupt inside a numba kernel's return used to crash: -11)
    # progress lines aside, and the once-per-machine compile's notices (a fresh machine may meet the plant's
    # structure here first: "compiling the plant structure …", "compiled in … s")
    messages = [ln for ln in err.splitlines() if ln.startswith("robustrack")
                and not ln.startswith(("robustrack: compiling ", "robustrack: compiled in "))]
    assert "Traceback" not in err and len(messages) == 1 and "interrupted" in messages[0], err


# ----------------------------------------------------------------------------------------- #
# 11. properties (hypothesis)
# ----------------------------------------------------------------------------------------- #
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(max_size=12))
def test_any_text_as_a_horizon(text):
    from robustrack.scenarios import load_scenario

    try:
        s = load_scenario("duffing-tracking", [f"simulation.t_end={text}"])
    except ScenarioError:
        return
    t_end = s.config["simulation"]["t_end"]
    assert math.isfinite(t_end) and t_end > 0


@settings(max_examples=60, deadline=None)
@given(key=st.sampled_from(["eps", "gss.gamma_prime", "gss.K", "gss.beta0", "gss.alpha0", "gss.sigma", "alpha_c",
                            "sample_period"]),
       value=st.floats(allow_nan=True, allow_infinity=True))
def test_any_compensator_number(key, value):
    from robustrack.scenarios import load_scenario

    try:
        pb = load_scenario("duffing-tracking", [SHORT, f"compensator.{key}={value!r}".replace("nan", "nan")
                                                .replace("inf", "inf")]).build()
    except ScenarioError as exc:
        assert f"compensator.{key}" in str(exc)
        return
    if pb.compensator is not None:  # what builds has a finite force at a unit error
        u = pb.compensator(0.0, np.ones(2), np.ones(2), pb.compensator.initial_state(2))
        assert np.all(np.isfinite(u))


@settings(max_examples=80, deadline=None)
@given(st.text(max_size=10))
def test_any_text_as_a_count(text):
    from robustrack._validate import cli_int

    try:
        value = cli_int(text, "--samples")
    except ParameterError as exc:
        assert "`--samples`" in str(exc)
        return
    assert isinstance(value, int) and value >= 1


@settings(max_examples=60, deadline=None)
@given(shapes=st.lists(st.lists(st.integers(0, 3), max_size=3), min_size=4, max_size=4))
def test_any_shapes_in_the_fundamental_equation(shapes):
    from robustrack.mechanics import solve_constrained

    M = np.broadcast_to(np.eye(2), tuple(shapes[0]) + (2, 2))
    Q = np.zeros(tuple(shapes[1]) + (2,))
    A = np.ones(tuple(shapes[2]) + (1, 2))
    b = np.zeros(tuple(shapes[3]) + (1,))
    try:
        motion = solve_constrained(M, Q, A, b)
    except ParameterError:
        return
    assert np.all(np.isfinite(motion.qdd))


# ----------------------------------------------------------------------------------------- #
# 9. issue 23: engine and API edges — refused before any work, or a correct result; notices one line
# ----------------------------------------------------------------------------------------- #
def test_simulate_constrained_without_a_constraint_is_the_unconstrained_system():
    """Before: the whole horizon integrated, then a raw AttributeError. Truth: a free particle under no force
    moves uniformly, q(t) = q0 + qd0 t (to the solver's tolerance, rtol 1e-10 on values of order 1)."""
    from robustrack.plants.examples import FreeParticle
    from robustrack.tracking import simulate_constrained

    plant = FreeParticle()
    q0, qd0 = np.array([1.0, -2.0, 0.5]), np.array([0.3, 0.0, -1.0])
    res = simulate_constrained(plant, None, q0, qd0, (0.0, 2.0), n_points=5, rtol=1e-10)
    assert res.residual is None and np.all(res.accel_residual == 0)
    assert np.allclose(res.q, q0 + res.t[:, None] * qd0, rtol=0, atol=1e-8)


@pytest.mark.parametrize("overrides", [42, 3.5, b"simulation.t_end=1", ["simulation.t_end=1", 7], {"a": 1}])
def test_load_scenario_refuses_overrides_of_another_type(overrides):
    from robustrack.scenarios import load_scenario

    with pytest.raises(ScenarioError, match="`overrides` must be a list of 'SECTION.KEY=VALUE' strings"):
        load_scenario("duffing-tracking", overrides)


def test_load_scenario_takes_one_override_as_a_string():
    from robustrack.scenarios import load_scenario

    assert load_scenario("duffing-tracking", "simulation.t_end=0.3").config["simulation"]["t_end"] == 0.3


@pytest.mark.parametrize("progress", ["bogus", 3, "Auto"])
def test_worst_case_refuses_a_bad_progress_before_running(progress, monkeypatch):
    from robustrack.campaigns import ParameterUncertainty, worst_case
    from robustrack.campaigns import worstcase

    monkeypatch.setattr(worstcase, "make_executor", lambda *a, **k: pytest.fail("an executor was started"))
    with pytest.raises(ParameterError, match="`progress` must be"):
        worst_case(object(), ParameterUncertainty(), budget=5, progress=progress)


def test_worst_case_takes_progress_auto_as_monte_carlo_does(capsys, duffing_problem):
    """Before: scipy's RuntimeError after the run started. Now lines on stderr (not a terminal), the search runs."""
    from robustrack.campaigns import ParameterUncertainty, worst_case
    from robustrack.tracking import TrackingProblem

    pb = duffing_problem
    loop = TrackingProblem(pb.nominal, pb.constraint, pb.compensator, pb.q0, pb.qd0, (0.0, 0.2), n_points=51)
    result = worst_case(loop, ParameterUncertainty(parameter="m1", spread=0.1), budget=6, workers=1,
                        progress="auto")
    err = capsys.readouterr().err
    assert result.evaluations >= 5 and f"worst-case: {result.evaluations}/{result.evaluations}" in err
    assert "Traceback" not in err


@pytest.mark.parametrize("x, text", [(0.1 * 3, "0.3"), (-0.1, "-0.1"), (0.2, "0.2"), (1 / 3, repr(1 / 3)),
                                     (0.013312745610742871, repr(0.013312745610742871)), (2.0, "2.0"), (1e-7, "1e-07")])
def test_dm_is_printed_as_typed(x, text):
    """A box corner computed as 0.1 × 3 prints as the 0.3 the user set; a random draw keeps every digit."""
    from robustrack._format import typed_float

    assert typed_float(x) == text
    assert abs(float(text) - x) <= math.ulp(x)  # what is printed reruns the same plant, to one ulp


def test_a_campaign_built_in_a_script_is_named_by_its_plant(duffing_problem):
    from robustrack.campaigns import ParameterUncertainty, monte_carlo
    from robustrack.tracking import TrackingProblem
    from robustrack.reports.text import format_montecarlo

    pb = duffing_problem
    loop = TrackingProblem(pb.nominal, pb.constraint, pb.compensator, pb.q0, pb.qd0, (0.0, 0.2), n_points=51)
    result = monte_carlo(loop, ParameterUncertainty(parameter=("m1", "m2"), spread=(0.1, 0.2)), 3, workers=1,
                         progress=None)
    head = format_montecarlo(result.summary()).splitlines()[0]
    assert head.startswith("Monte Carlo: CoupledDuffing, ") and "None" not in head
    assert "uniform ±(10, 20) % on m1, m2" in head


def test_the_numpy_fallback_notice_is_one_line_in_a_script(tmp_path):
    """A script (no CLI) whose constraint has no symbolic form: one line on stderr, no file:line, no source."""
    script = tmp_path / "own.py"
    script.write_text(textwrap_dedent('''
        import numpy as np
        from robustrack.constraints import FunctionConstraint
        from robustrack.controllers import GSS, control_function
        from robustrack.plants.examples import CoupledDuffing
        from robustrack.tracking import simulate_tracking

        plant = CoupledDuffing()
        con = FunctionConstraint(lambda q, qd, t: np.broadcast_to(np.array([[1.0, -1.0]]), np.shape(q)[:-1] + (1, 2)),
                                 lambda q, qd, t: np.zeros(np.shape(q)[:-1] + (1,)), n=2, m=1)
        gss = GSS(K=10, gamma_prime=10, beta0=1, alpha0=0.5, sigma=1, f=control_function("signed-quadratic", eps=1e-2, alpha_c=2))
        simulate_tracking(plant, con, gss, [1.0, 1.0], [0.0, 0.0], (0.0, 0.05), n_points=11)
    '''))
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    notices = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert notices == [next(ln for ln in notices if "runs on numpy" in ln)], proc.stderr
    assert notices[0].startswith("robustrack: notice: tracking loop runs on numpy (slower): ")


def textwrap_dedent(text):
    import textwrap

    return textwrap.dedent(text)
