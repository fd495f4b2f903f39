"""Issue 41: trust — outputs never replace inputs, a certificate is checked whole, robots of one joint.

Every refusal is asserted as the user meets it: the exit status, ONE line on stderr naming the option or
key and what to do, and nothing written (the inputs byte-identical, no new file in the folder). The
certificates are real ones (``run_certify`` on a 0.3-s Duffing horizon, about a second), edited the way
an auditor would edit them.
"""

from __future__ import annotations

import copy
import json
import os

import pytest

from robustrack.cli import main
from robustrack.errors import ParameterError

OVERRIDES = ["simulation.t_end=0.3", "simulation.n_points=31"]
SETS = [x for o in OVERRIDES for x in ("--set", o)]


def _snapshot(folder):
    """Every file under ``folder`` with its bytes (symbolic links as their target's name)."""
    out = {}
    for root, _, files in os.walk(folder):
        for name in files:
            path = os.path.join(root, name)
            out[os.path.relpath(path, folder)] = (os.readlink(path) if os.path.islink(path)
                                                  else open(path, "rb").read())
    return out


def _refused(capsys, argv, folder, *needles):
    """Run the CLI; assert it refused with one line naming each needle and wrote nothing in ``folder``."""
    before = _snapshot(folder)
    status = main(argv)
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert status == 2, err
    assert len(lines) == 1 and lines[0].startswith("robustrack: error: "), err
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    assert "Traceback" not in err
    assert _snapshot(folder) == before
    return lines[0]


@pytest.fixture(scope="module")
def cert_doc():
    """What `robustrack certify duffing-tracking --set ... --json FILE` writes (a box-level certificate)."""
    pytest.importorskip("flint")
    from robustrack._json import to_jsonable
    from robustrack.scenarios import load_scenario
    from robustrack.scenarios.certify import run_certify

    cert = run_certify(load_scenario("duffing-tracking", OVERRIDES), 0.1, tolerance=0.2, budget_s=60)
    return to_jsonable({"scenario": "duffing-tracking", **cert.to_dict()})


@pytest.fixture
def files(tmp_path, monkeypatch, capsys):
    """A working folder holding a scenario file (with a symbolic and a hard link to it), a certificate, a
    store and a saved run (their bytes only: every refusal comes before any of them is read)."""
    monkeypatch.chdir(tmp_path)
    folder = tmp_path
    assert main(["show", "duffing-tracking"]) == 0
    text = capsys.readouterr().out
    (folder / "sc.toml").write_text(text, encoding="utf-8")
    (folder / "c.json").write_text('{"level": "box"}\n', encoding="utf-8")
    (folder / "s.sqlite").write_bytes(b"SQLite format 3\x00 not really")
    (folder / "run.npz").write_bytes(b"PK\x03\x04 a saved run")
    os.symlink("sc.toml", folder / "link.toml")
    os.symlink("c.json", folder / "link.json")
    os.link(folder / "sc.toml", folder / "hard.toml")
    (folder / "sub").mkdir()
    return folder


# --------------------------------------------------------------------- outputs never replace inputs (item 2)

SAME_AS_INPUT = [
    # (argv, the output option, the input's label)
    (["run", "sc.toml", "--json", "sc.toml"], "--json", "`NAME`"),
    (["run", "sc.toml", "--json", "link.toml"], "--json", "`NAME`"),  # through a symbolic link
    (["run", "link.toml", "--json", "sc.toml"], "--json", "`NAME`"),  # the input is the link
    (["run", "sc.toml", "--json", "hard.toml"], "--json", "`NAME`"),  # a hard link: one file on disk
    (["run", "sc.toml", "--json", "sub/../sc.toml"], "--json", "`NAME`"),
    (["run", "sc.toml", "--save", "sc.toml"], "--save", "`NAME`"),
    (["gamma", "sc.toml", "--json", "sc.toml"], "--json", "`NAME`"),
    (["certify", "sc.toml", "--json", "sc.toml"], "--json", "`NAME`"),
    (["identify", "run.npz", "--json", "run.npz"], "--json", "`RUN.npz`"),
    (["identify", "run.npz", "--scenario", "sc.toml", "--json", "sc.toml"], "--json", "`--scenario`"),
    (["montecarlo", "sc.toml", "--certificate", "c.json", "--json", "c.json"], "--json", "`--certificate`"),
    (["montecarlo", "sc.toml", "--certificate", "c.json", "--json", "link.json"], "--json", "`--certificate`"),
    (["montecarlo", "sc.toml", "--certificate", "c.json", "--store", "c.json"], "--store", "`--certificate`"),
    (["montecarlo", "sc.toml", "--store", "sc.toml"], "--store", "`NAME`"),
    (["montecarlo", "--store", "s.sqlite", "--summary", "--json", "s.sqlite"], "--json", "`--store`"),
    (["worst-case", "sc.toml", "--certificate", "c.json", "--json", "c.json"], "--json", "`--certificate`"),
    (["worst-case", "sc.toml", "--store", "s.sqlite", "--json", "s.sqlite"], "--json", "`--store`"),
    (["tune", "sc.toml", "--target-e", "1", "--certificate", "c.json", "--json", "c.json"], "--json",
     "`--certificate`"),
    (["tune", "sc.toml", "--target-e", "1", "--certificate", "c.json", "--store", "c.json"], "--store",
     "`--certificate`"),
]


@pytest.mark.parametrize("argv, option, label", SAME_AS_INPUT, ids=[" ".join(c[0]) for c in SAME_AS_INPUT])
def test_an_output_that_is_an_input_is_refused_before_anything_runs(files, capsys, argv, option, label):
    line = _refused(capsys, argv, files, f"`{option}`", label, "Nothing was run or written")
    assert "an input of this command" in line and f"Give `{option}` another path" in line


BOTH_OUTPUTS = [
    (["run", "sc.toml", "--save", "x.npz", "--json", "x.npz"], "--json", "--save"),
    (["run", "sc.toml", "--save", "x.npz", "--json", "sub/../x.npz"], "--json", "--save"),
    (["montecarlo", "sc.toml", "--store", "s.sqlite", "--json", "s.sqlite"], "--json", "--store"),
    (["tune", "sc.toml", "--target-e", "1", "--store", "t.sqlite", "--json", "t.sqlite"], "--json", "--store"),
]


@pytest.mark.parametrize("argv, first, second", BOTH_OUTPUTS, ids=[" ".join(c[0]) for c in BOTH_OUTPUTS])
def test_two_outputs_of_one_file_are_refused(files, capsys, argv, first, second):
    line = _refused(capsys, argv, files, f"`{first}`", f"`{second}`", "give each its own path")
    assert str(files) in line  # the resolved path


@pytest.mark.parametrize("inside", ["scenario.toml", "summary.json", "report.md", "figures/e.png"])
def test_a_report_folder_that_holds_an_input_under_a_name_it_writes_is_refused(files, capsys, inside):
    rep = files / "rep"
    (rep / "figures").mkdir(parents=True)
    (rep / inside).write_bytes((files / "sc.toml").read_bytes())
    if inside == "scenario.toml":
        argv = ["report", "rep/scenario.toml", "-o", "rep", "--overwrite"]
        label = "`NAME`"
    else:  # another input the report reads, kept in its folder
        argv = ["report", "sc.toml", "-o", "rep", "--overwrite", "--campaign", f"rep/{inside}"]
        label = "`--campaign`"
    _refused(capsys, argv, files, "`-o`", label, inside.split("/")[0])


def test_a_report_folder_holding_the_certificate_as_its_summary_is_refused(files, capsys):
    (files / "rep").mkdir()
    (files / "rep" / "summary.json").write_bytes((files / "c.json").read_bytes())
    _refused(capsys, ["report", "sc.toml", "-o", "rep", "--overwrite", "--certificate", "rep/summary.json"], files,
             "`-o`", "`--certificate`")


def test_the_default_report_folder_counts_too(files, capsys):
    """Without -o the report goes to report-NAME: a scenario file kept there as scenario.toml is an input."""
    (files / "report-scenario").mkdir()
    os.replace(files / "hard.toml", files / "report-scenario" / "scenario.toml")
    _refused(capsys, ["report", "report-scenario/scenario.toml", "--overwrite"], files, "`-o`", "`NAME`")


def test_a_comparison_folder_holding_an_input_under_its_names_is_refused(files, capsys):
    (files / "cmp").mkdir()
    (files / "cmp" / "arm.toml").write_text('[scenario]\nname = "arm"\nkind = "urdf"\n[plant]\n'
                                            'urdf = "comparison.csv"\n', encoding="utf-8")
    (files / "cmp" / "comparison.csv").write_text("<robot/>", encoding="utf-8")
    _refused(capsys, ["compare", "cmp/arm.toml", "-o", "cmp"], files, "`-o`", "`plant.urdf` in `NAME`")


def test_a_file_the_scenario_names_is_an_input(files, capsys):
    """plant.urdf and a factory's FILE.py:FUNCTION, relative to the scenario's folder."""
    (files / "sub" / "arm.urdf").write_text("<robot/>", encoding="utf-8")
    (files / "sub" / "robot.toml").write_text('[scenario]\nname = "r"\nkind = "urdf"\n[plant]\nurdf = "arm.urdf"\n',
                                              encoding="utf-8")
    _refused(capsys, ["run", "sub/robot.toml", "--json", "sub/arm.urdf"], files, "`plant.urdf` in `NAME`")
    (files / "sub" / "arm.py").write_text("def problem():\n    raise SystemExit\n", encoding="utf-8")
    (files / "sub" / "py.toml").write_text('[scenario]\nname = "p"\nkind = "python"\n[problem]\n'
                                           'factory = "arm.py:problem"\n', encoding="utf-8")
    _refused(capsys, ["run", "sub/py.toml", "--json", "sub/arm.py"], files, "`problem.factory` in `NAME`")
    _refused(capsys, ["run", "sub/robot.toml", "--set", "plant.urdf=sub/arm.py", "--json", "sub/arm.py"], files,
             "`--set plant.urdf` in `NAME`")


def test_a_catalog_file_is_an_input_too(files, capsys):
    from robustrack.scenarios.scenario import catalog_path

    target = catalog_path() / "duffing.toml"
    before = target.read_bytes()
    _refused(capsys, ["run", "duffing", "--json", str(target)], files, "`--json`", "`NAME`")
    assert target.read_bytes() == before


def test_distinct_outputs_still_run(files, capsys):
    assert main(["run", "sc.toml", *SETS, "--json", "sub/out.json", "--save", "sub/out.npz"]) == 0
    assert json.loads((files / "sub" / "out.json").read_text())["metrics"]
    assert (files / "sub" / "out.npz").stat().st_size > 0
