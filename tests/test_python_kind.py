"""A user's own system through the whole toolchain: ``[scenario] kind = "python"`` (issue 20, part 4).

The system is ``tests/data/own_arm/my_arm.py`` — a two-link arm built with sympy in a script, its tip
on a moving line — named by ``arm.toml``. The same numbers must come out of the script and out of
every command that takes the TOML: the scenario adds nothing but the path to it, so the runs are the
same computation and are compared exactly (==), not to a tolerance.
"""

import json
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from robustrack.campaigns import ParameterUncertainty, load_campaign, monte_carlo
from robustrack.errors import ScenarioError
from robustrack.scenarios import load_scenario
from robustrack.scenarios.python_kind import load_factory

DATA = Path(__file__).parent / "data" / "own_arm"
CLI = [sys.executable, "-m", "robustrack.cli"]


@pytest.fixture
def arm(tmp_path):
    """The arm's TOML and script copied to a folder of their own (the factory is found beside the TOML)."""
    for name in ("arm.toml", "my_arm.py"):
        shutil.copy(DATA / name, tmp_path / name)
    return tmp_path / "arm.toml"


def _script_problem(toml):
    return load_factory(f"{toml.parent / 'my_arm.py'}:problem")()


def _cli(capsys, monkeypatch, *args, cwd=None, check=True):
    """The command line in this process (test_bad_input's :func:`cli`: ``robustrack.cli.main``, what ``robustrack``
    runs), started in ``cwd``: its exit code and what it printed. A process of its own would add ~2.5 s of start-up
    per call."""
    from types import SimpleNamespace

    from test_bad_input import cli

    with monkeypatch.context() as m:
        if cwd is not None:
            m.chdir(cwd)
        code, out, err = cli(capsys, *args)
    done = SimpleNamespace(returncode=code, stdout=out, stderr=err)
    if check:
        assert done.returncode == 0, done.stderr
    return done


def test_run_from_the_toml_is_the_scripts_run(arm, tmp_path, capsys, monkeypatch):
    script = _script_problem(arm).simulate()
    # started in another folder: the factory is found beside the TOML
    _cli(capsys, monkeypatch, "run", arm, "--json", tmp_path / "run.json", cwd=tmp_path.parent)
    doc = json.loads((tmp_path / "run.json").read_text())
    for key in ("max_abs_e", "max_abs_edot", "max_abs_Qu", "max_norm_dq", "max_norm_Mtilde"):
        assert doc["metrics"][key] == script.metrics[key], key
    assert doc["bounds"]["held"] is True and doc["bounds"]["assumptions_held"] is True
    assert doc["compensator"] == "gss"  # type "problem": the factory's compensator, named by itself


def test_show_round_trips_and_states_the_factorys_settings(arm, tmp_path, capsys, monkeypatch):
    sc = load_scenario(str(arm))
    pb = _script_problem(arm)
    assert sc.config["simulation"]["t_end"] == pb.t_span[1] and sc.config["simulation"]["n_points"] == pb.t_eval.size
    assert sc.config["problem"]["factory"] == f"{(arm.parent / 'my_arm.py').resolve()}:problem"
    shown = tmp_path / "shown.toml"
    shown.write_text(_cli(capsys, monkeypatch, "show", arm).stdout)
    assert load_scenario(str(shown)).config == sc.config


def test_overrides_act_as_for_catalog_scenarios(arm):
    sc = load_scenario(str(arm), ["simulation.t_end=0.5", "uncertainty.dm=[0.2]"])
    pb = sc.build()
    assert pb.t_span == (0.0, 0.5) and pb.t_eval[-1] == 0.5
    assert pb.actual.params["m2"] == pytest.approx(0.7)  # nominal 0.5 + 0.2
    # a compensator built from the table is judged at the Γ the scenario declares (the factory gives none)
    built = load_scenario(str(arm), ["compensator.type='gdbar'", "compensator.gdbar.k=7",
                                     "uncertainty.gamma=20"]).build().compensator
    assert built.name == "gdbar" and built.params["k"] == 7.0
    assert load_scenario(str(arm)).build().compensator.name == "gss"  # the factory's


def test_montecarlo_killed_and_resumed_gives_the_scripts_samples(arm, tmp_path, capsys, monkeypatch):
    # the script's campaign: the factory's problem and the same draws (uniform ±20 % on m2, seed 5)
    n = 120
    unc = ParameterUncertainty(parameter="m2", spread=0.2, seed=5)
    script = monte_carlo(_script_problem(arm), unc, n, workers=1, progress=None)
    store = tmp_path / "arm.db"
    args = ["montecarlo", arm, "--samples", n, "--spread", 0.2, "--seed", 5, "--workers", 2, "--chunk", 1,
            "--store", store]
    proc = subprocess.Popen([*CLI, *map(str, args)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    end = time.monotonic() + 120
    while time.monotonic() < end and proc.poll() is None:
        try:
            db = sqlite3.connect(f"file:{store}?mode=ro", uri=True, timeout=5)
            stored = db.execute("SELECT COUNT(*) FROM samples").fetchone()[0]
            db.close()
        except sqlite3.Error:
            stored = 0
        if stored >= 10:
            break
        time.sleep(0.005)
    killed = proc.poll() is None
    if killed:
        proc.send_signal(signal.SIGKILL)
    proc.wait()
    _cli(capsys, monkeypatch, *args)  # resume
    resumed = load_campaign(store)
    got = {r.index: r for r in resumed.records}
    want = {r.index: r for r in script.records}
    assert sorted(got) == sorted(want) == list(range(n))
    for i in want:
        assert np.array_equal(got[i].dm, want[i].dm)
        assert got[i].max_abs_e == want[i].max_abs_e and got[i].held == want[i].held
    if killed:
        assert len({s["id"] for s in resumed.sessions}) >= 2  # it did resume


def test_worst_case_reproduce_line_reruns_the_worst_plant(arm, tmp_path):
    from robustrack.scenarios.campaign import run_worst_case

    study = run_worst_case(str(arm), 0.2, budget=12, seed=1, progress=None)
    line = study.to_dict()["reproduce"]
    assert line.startswith(f"robustrack run {arm}")
    dm = study.worst.dm
    sc = load_scenario(str(arm), [f"uncertainty.dm=[{float(dm[0])!r}]"])
    assert sc.build().simulate().metrics["max_abs_e"] == study.worst.max_abs_e


@pytest.mark.slow  # duplicates, run by default: the run's equality by test_run_from_the_toml_is_the_scripts_run; the
# TOML's report (its numbers those of an independent run, its constraint row "Holonomic, 1 row") by
# test_introduces_itself.py::test_report_ends_with_the_verdict_and_its_numbers[…arm.toml]; a report of a run made
# in a script by test_report_results.py::test_report_of_a_plant_built_in_a_script
def test_report_of_the_toml_and_of_the_script_say_the_same(arm, tmp_path, capsys, monkeypatch):
    from robustrack.reports import write_report

    _cli(capsys, monkeypatch, "report", arm, "-o", tmp_path / "from_toml")
    write_report(_script_problem(arm).simulate(), tmp_path / "from_script")
    a = json.loads((tmp_path / "from_toml" / "summary.json").read_text())
    b = json.loads((tmp_path / "from_script" / "summary.json").read_text())
    assert a["metrics"]["max_abs_e"] == b["metrics"]["max_abs_e"]
    text = (tmp_path / "from_toml" / "report.md").read_text()
    assert "Holonomic, 1 row" in text  # the user's constraint, not "none"


def test_gamma_perturbs_the_named_parameter(arm):
    from robustrack.scenarios.gamma import run_gamma

    doc = run_gamma(load_scenario(str(arm)), 64, 0.2).to_dict()
    assert doc["parameter"] in ("m2", ["m2"])


@pytest.mark.parametrize("problem, message", [
    ({}, "needs [problem] with `factory`"),
    ({"factory": "my_arm.py"}, "must be 'FILE.py:FUNCTION'"),
    ({"factory": "nowhere.py:problem"}, "no Python file"),
    ({"factory": "my_arm.py:nothing"}, "has no function 'nothing'"),
    ({"factory": "my_arm.py:arm"}, "must return a robustrack.tracking.TrackingProblem; got LagrangianPlant"),
    ({"factory": "no_such_module_xyz:problem"}, "importing module 'no_such_module_xyz' failed"),
])
def test_bad_factory_is_named(arm, problem, message):
    body = "\n".join(f'{k} = "{v}"' for k, v in problem.items())
    arm.write_text(f'[scenario]\nname = "x"\nkind = "python"\n\n[problem]\n{body}\n')
    with pytest.raises(ScenarioError, match=re_escape(message)):
        load_scenario(str(arm))


def test_a_factory_that_raises_is_named_with_its_line(arm):
    (arm.parent / "broken.py").write_text("def problem():\n    return 1 / 0\n")
    arm.write_text('[scenario]\nname = "x"\nkind = "python"\n[problem]\nfactory = "broken.py:problem"\n')
    with pytest.raises(ScenarioError, match=r"ZeroDivisionError: division by zero \(.*broken.py:2\)"):
        load_scenario(str(arm))


@pytest.mark.parametrize("extra, message", [
    ("[compensator]\ngamma = 50.0\n", "`compensator.gamma` is set, but `compensator.type` is 'problem'"),
    ("[uncertainty]\ndm = [0.1]\n", "`uncertainty.parameters` is empty"),
    ('[uncertainty]\nparameters = ["m2"]\ndm = [0.1, 0.2]\n', "must have 1 numbers"),
    ('[uncertainty]\nparameters = ["mass"]\n', "mass"),
    ('[uncertainty]\nparameters = [1]\n', "must be a list of names"),
])
def test_bad_tables_are_named(arm, extra, message):
    arm.write_text('[scenario]\nname = "x"\nkind = "python"\n[problem]\nfactory = "my_arm.py:problem"\n' + extra)
    with pytest.raises(ScenarioError, match=re_escape(message)):
        load_scenario(str(arm))


def test_cli_errors_are_one_line_and_tune_asks_for_a_compensator(arm, capsys, monkeypatch):
    arm.write_text('[scenario]\nname = "x"\nkind = "python"\n[problem]\nfactory = "my_arm.py:nothing"\n')
    done = _cli(capsys, monkeypatch, "run", arm, check=False)
    assert done.returncode == 2 and "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1
    shutil.copy(DATA / "arm.toml", arm)
    done = _cli(capsys, monkeypatch, "tune", arm, "--spread", 0.2, "--target-e", 1e-3, check=False)
    assert done.returncode == 2 and "give --compensator gss, gd or gdbar" in done.stderr


def re_escape(text):
    import re

    return re.escape(text)


def test_a_factory_imports_a_module_beside_it_and_the_import_path_is_restored(arm, tmp_path, capsys, monkeypatch):
    """Item 7 of issue 32: as ``python FILE.py`` would, the factory's file imports a module from its folder (at
    its top and inside the factory); afterwards ``sys.path`` is what it was (the folder is added only for it)."""
    (tmp_path / "my_arm.py").rename(tmp_path / "arm_parts.py")  # the arm itself now lives in a helper module
    (tmp_path / "my_arm.py").write_text(
        "from arm_parts import problem as _imported_at_the_top  # noqa: F401\n\n\n"
        "def problem():\n"
        "    import arm_parts  # and lazily, inside the factory\n\n"
        "    return arm_parts.problem()\n", encoding="utf-8")
    before = list(sys.path)
    sc = load_scenario(str(arm))
    problem = sc.build()
    assert sys.path == before and str(tmp_path) not in sys.path
    assert problem is not None
    # the command line, started in another folder, runs it with the script's numbers
    script = load_factory(f"{tmp_path / 'arm_parts.py'}:problem")().simulate()
    _cli(capsys, monkeypatch, "run", arm, "--json", tmp_path / "run.json", cwd=tmp_path.parent)
    doc = json.loads((tmp_path / "run.json").read_text())
    assert doc["metrics"]["max_abs_e"] == script.metrics["max_abs_e"]
    assert sys.path == before
