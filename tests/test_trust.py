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

import numpy as np
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


# --------------------------------------------------------------------- a certificate is checked whole (item 1)

def _edit(doc, path, value):
    """A copy of ``doc`` with the key at ``path`` (dotted; ``-`` deletes) set to ``value``."""
    out = copy.deepcopy(doc)
    *parents, last = path.split(".")
    node = out
    for key in parents:
        node = node[int(key) if isinstance(node, list) else key]
    last = int(last) if isinstance(node, list) else last
    if value == "-":
        del node[last]
    else:
        node[last] = value
    return out


NAN = float("nan")
DQ = "bounds.max_norm_dq"
EDITS = [
    # (key edited, new value, what the message names)
    (f"{DQ}.upper", 1.0, f"`{DQ}` has lower"),  # upper below lower: "sup ∈ [2.62, 1]"
    (f"{DQ}.lower", NAN, f"`{DQ}.lower` must be finite"),
    (f"{DQ}.lower", -5.0, f"`{DQ}.lower` = -5.0 is below 0"),
    (f"{DQ}.lower", "2.6", f"`{DQ}.lower` must be a finite number"),
    (f"{DQ}.upper", -1.0, f"`{DQ}.upper` = -1.0 is below 0"),
    (f"{DQ}.finished", "yes", f"`{DQ}.finished` must be true or false"),
    (f"{DQ}.witness.delta", [0.1], f"`{DQ}.witness.delta` has 1 values, 2 expected"),
    (f"{DQ}.witness.delta", [NAN, NAN], f"`{DQ}.witness.delta` must be finite"),
    (f"{DQ}.witness.delta", [0.1, 0.1, 0.1], f"`{DQ}.witness.delta` has 3 values"),
    (f"{DQ}.witness.t", 99.0, f"`{DQ}.witness.t` = 99.0 s is outside the run"),
    (f"{DQ}.witness.params.m1", 5.0, f"`{DQ}.witness.params.m1` = 5.0 is not inside the box"),
    (f"{DQ}.witness.params", {"m1": 2.0}, f"`{DQ}.witness.params` must give the box's parameters"),
    (f"{DQ}.witness", None, f"`{DQ}.witness` must be a table"),
    ("bounds.max_norm_Mtilde.lower", -0.1, "`bounds.max_norm_Mtilde.lower` = -0.1 is below 0"),
    ("bounds.max_norm_dq", "-", "`bounds` has no `max_norm_dq`"),
    ("bounds.energy", {"upper": 1.0, "lower": 0.0}, "`bounds.energy` is not a certified quantity"),
    ("bounds", {}, "`bounds` must be a non-empty table"),
    ("box.m1", [NAN, NAN], "`box.m1` must be finite"),
    ("box.m1", [2.2, 1.8], "`box.m1` must have lower <= upper"),
    ("box.m1", [1.8], "`box.m1` must be [lower, upper]"),
    ("box.m1", [[1.8, 1.0], 2.2], "`box.m1` must have lower <= upper, of one shape"),
    ("box.m1", [[[1.8]], [[2.2]]], "`box.m1` must be a finite number or a list"),
    ("box", {}, "`box` must be a non-empty table"),
    ("level", "closed", "`level` is 'closed' but `tube` is missing"),
    ("level", "proved", "`level` must be one of ['box', 'closed']"),
    ("closed", True, "`level` is 'box' but the file carries `closed` = True"),
    ("tube", [0.1, 0.1], "`level` is 'box' but the file carries a `tube`"),
    ("finished", False, "`finished` = False but the bounds' are [True, True]"),
    ("t_span", [0.3, 0.0], "`t_span` must be [t0, t1] with t0 < t1"),
    ("t_span", [0.0, float("inf")], "`t_span` must be finite"),
    ("t_span", 0.3, "`t_span` has 1 values, 2 expected"),
    ("tolerance", 0.0, "`tolerance` must be in (0, 1)"),
    ("scenario", "-", "no `scenario`"),
    ("reference", "-", "no `reference`"),
    ("reference.qd0", [1.0], "`reference.qd0` has 1 values, 2 expected (as many as q0)"),
    ("reference.q0", [NAN, 1.0], "`reference.q0` must be finite"),
    ("scenario", 7, "`scenario` must be a scenario's name"),
]


@pytest.mark.parametrize("key, value, needle", EDITS, ids=[f"{k}={v!r}" for k, v, _ in EDITS])
def test_an_edited_certificate_is_refused_naming_the_field(cert_doc, tmp_path, key, value, needle):
    from robustrack.certification import certificate_summary

    certificate_summary(cert_doc, "--certificate")  # the certificate as written is accepted
    path = tmp_path / "c.json"
    path.write_text(json.dumps(_edit(cert_doc, key, value)), encoding="utf-8")  # NaN as JSON's NaN, as edited
    with pytest.raises(ParameterError) as err:
        certificate_summary(path, "--certificate")
    message = str(err.value)
    assert message.startswith(f"`--certificate` {str(path)!r}: ") and needle in message, message
    assert "(edited or damaged): certify again" in message


def _closed(doc, **changes):
    """The box certificate made into a consistent closed one (tube, Γ, the conditions), then ``changes``."""
    out = _edit(_edit(_edit(doc, "level", "closed"), "tube", [1e-3, 1e-2]), "gamma", 10.0)
    upper = doc["bounds"]["max_norm_dq"]["upper"]
    out["conditions"] = [{"name": "gamma", "value": upper, "limit": 10.0, "held": True, "text": ""},
                         {"name": "initial", "value": 0.0, "limit": 1e-3, "held": True, "text": ""}]
    out["closed"] = True
    out.update(changes)
    return out


def test_a_closed_certificate_is_accepted_when_its_conditions_agree(cert_doc):
    from robustrack.certification import certificate_summary

    s = certificate_summary(_closed(cert_doc))
    assert s["level"] == "closed" and s["closed"] is True


CLOSED_EDITS = [
    ({"closed": False}, "`closed` = False but its conditions held"),
    ({"gamma": 1.0}, "the `gamma` condition says held = True but sup ‖δq‖∞ <="),
    ({"gamma": None}, "`level` is 'closed' but `gamma` is missing"),
    ({"conditions": []}, "`level` is 'closed' but `conditions` is missing"),
    ({"conditions": [{"name": "initial", "held": True}]}, "`conditions` has no `gamma` condition"),
    ({"conditions": [{"name": "gamma", "held": "yes"}]}, "`conditions` must be a list of"),
    ({"tube": [-1.0, 0.1]}, "`tube` = [-1.0, 0.1] is below 0"),
    ({"tube": [0.1]}, "`tube` has 1 values, 2 expected"),
    ({"tube": {"kind": "gss", "e0": 1e-3, "rate": 0.0, "edot": NAN, "e_end": 1e-3}}, "`tube.edot` must be finite"),
    ({"tube": {"kind": "pid", "e0": 1e-3, "rate": 0.0, "edot": 0.1, "e_end": 1e-3}}, "`tube.kind` must be"),
]


@pytest.mark.parametrize("changes, needle", CLOSED_EDITS, ids=[str(c) for c, _ in CLOSED_EDITS])
def test_a_closed_certificate_that_contradicts_itself_is_refused(cert_doc, changes, needle):
    from robustrack.certification import certificate_summary

    with pytest.raises(ParameterError, match="certify again") as err:
        certificate_summary(_closed(cert_doc, **changes), "--certificate")
    assert needle in str(err.value), str(err.value)


@pytest.mark.parametrize("text, needle", [
    ("[" * 100_000 + "]" * 100_000, "nested deeper than Python reads"),
    ("[]", "a certificate is a JSON object"),
    ("{", "is not a certificate written by `robustrack certify --json` (JSONDecodeError"),
    ('"box"', "a certificate is a JSON object"),
])
def test_a_file_that_is_no_certificate_is_refused(tmp_path, text, needle):
    from robustrack.certification import certificate_summary

    path = tmp_path / "c.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ParameterError) as err:
        certificate_summary(path, "--certificate")
    assert str(err.value).startswith(f"`--certificate` {str(path)!r}") and needle in str(err.value)


CLI_EDITS = [
    # (command, key, value, needle): the CLI says it in one line, writes nothing, runs nothing
    (["worst-case", "duffing-tracking", "--budget", "5"], f"{DQ}.witness.delta", [0.1], f"`{DQ}.witness.delta`"),
    (["worst-case", "duffing-tracking", "--budget", "5"], f"{DQ}.witness.delta", [NAN, NAN],
     f"`{DQ}.witness.delta` must be finite"),
    (["montecarlo", "duffing-tracking", "--samples", "2"], f"{DQ}.upper", 1.0, f"`{DQ}` has lower"),
    (["montecarlo", "duffing-tracking", "--samples", "2"], "box.m1", [NAN, NAN], "`box.m1` must be finite"),
    (["tune", "duffing-tracking", "--target-e", "1", "--samples", "2"], "level", "closed", "`tube` is missing"),
    (["report", "duffing-tracking", "-o", "rep"], f"{DQ}.lower", NAN, f"`{DQ}.lower` must be finite"),
    (["worst-case", "duffing-tracking", "--budget", "5"], "deep", None, "nested deeper"),
]


@pytest.mark.parametrize("argv, key, value, needle", CLI_EDITS, ids=[f"{c[0][0]} {c[1]}" for c in CLI_EDITS])
def test_the_cli_refuses_an_edited_certificate_in_one_line(cert_doc, tmp_path, monkeypatch, capsys, argv, key, value,
                                                           needle):
    monkeypatch.chdir(tmp_path)
    text = "[" * 50_000 + "]" * 50_000 if key == "deep" else json.dumps(_edit(cert_doc, key, value))
    (tmp_path / "c.json").write_text(text, encoding="utf-8")
    extra = [] if argv[0] == "report" else ["--workers", "1", "--json", "out.json"]
    line = _refused(capsys, [*argv, *SETS, "--certificate", "c.json", *extra], tmp_path, "`--certificate`", needle)
    assert "certify again" in line


def test_a_certificate_on_parameters_the_plant_lacks_is_refused(cert_doc, tmp_path, monkeypatch, capsys):
    """A box of the plant's dimension: `m2` renamed `k` (consistently, witnesses too) certifies another plant."""
    doc = copy.deepcopy(cert_doc)
    doc["box"]["k"] = doc["box"].pop("m2")
    for b in doc["bounds"].values():
        b["witness"]["params"]["k"] = b["witness"]["params"].pop("m2")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "c.json").write_text(json.dumps(doc), encoding="utf-8")
    _refused(capsys, ["montecarlo", "duffing-tracking", "--samples", "2", *SETS, "--workers", "1", "--certificate",
                      "c.json"], tmp_path, "certifies a box on `k`", "the study's plant has no such parameter")


# --------------------------------------------------------------------- certify --gamma, tune's certified Γ (item 1)

@pytest.mark.parametrize("level", [[], ["--level", "box"]])
def test_certify_refuses_gamma_without_the_closed_level(tmp_path, monkeypatch, capsys, level):
    monkeypatch.chdir(tmp_path)
    _refused(capsys, ["certify", "duffing-tracking", *SETS, "--gamma", "5", *level, "--json", "c.json"], tmp_path,
             "`--gamma` 5", "add `--level closed`")


def test_certify_api_refuses_gamma_at_the_box_level():
    pytest.importorskip("flint")
    from robustrack.certification import ParameterBox, certify
    from robustrack.scenarios import load_scenario

    problem = load_scenario("duffing-tracking", OVERRIDES).build()
    with pytest.raises(ParameterError, match=r"`gamma` = 5\.0 is the Γ .* give level='closed' too"):
        certify(problem, ParameterBox.around(problem.nominal, 0.1, ("m1", "m2")), gamma=5.0)


@pytest.mark.parametrize("gamma, certified", [(4.02, True), (3.0, True), (5.79, False)])
def test_a_tuned_gamma_above_the_certified_one_is_not_called_certified(gamma, certified):
    from robustrack.reports.text import _certified_promise_lines
    from robustrack.scenarios.campaign import _certified_promise

    class Bounds:
        e, edot = 0.01, 0.1

    cert = {"level": "box", "finished": True, "gamma_upper": 4.02}
    p = _certified_promise(cert, gamma, Bounds)
    assert p["certified"] is certified
    (line,) = _certified_promise_lines(p, 0.3, "rad", "rad/s", "rad/s²")
    if certified:
        assert "Γ certified for every plant in ±30 %" in line and p["not_certified_because"] is None
    else:
        assert "NOT certified" in line and "raised above the certified 4.02" in line and "certified for" not in line


@pytest.mark.parametrize("gamma", [10.0, 1.0])
def test_real_closed_certificates_read_back_whole(tmp_path, gamma):
    """What `certify --level closed` writes is accepted, closed (Γ = 10) or not (Γ = 1, below the lower bound)."""
    pytest.importorskip("flint")
    from robustrack._json import to_jsonable
    from robustrack.certification import certificate_summary
    from robustrack.scenarios import load_scenario
    from robustrack.scenarios.certify import run_certify

    cert = run_certify(load_scenario("duffing-tracking", OVERRIDES), 0.1, tolerance=0.2, level="closed", gamma=gamma,
                       budget_s=60)
    path = tmp_path / "closed.json"
    path.write_text(json.dumps(to_jsonable(cert.to_dict()), allow_nan=False), encoding="utf-8")
    s = certificate_summary(path, "--certificate")
    assert s["level"] == "closed" and s["closed"] is cert.closed is (gamma == 10.0)
    with pytest.raises(ParameterError, match="`closed` = True but its conditions held"):
        certificate_summary(_edit(json.loads(path.read_text()), "closed", not cert.closed) if not cert.closed else
                            _edit(_edit(json.loads(path.read_text()), "conditions.-1.held", False), "closed", True))


# --------------------------------------------------------------------- robots of one joint (item 4)

def _one_joint_urdf(folder):
    """tests/data/two_link_arm.urdf without its elbow and second link: a pendulum of one revolute joint."""
    import re

    src = (__import__("pathlib").Path(__file__).parent / "data" / "two_link_arm.urdf").read_text(encoding="utf-8")
    one = re.sub(r'  <joint name="elbow".*?</link>\n', "", src, flags=re.S)
    one = one.replace('<parent link="link2"/>\n    <child link="tool"/>', '<parent link="link1"/>\n    <child link="tool"/>')
    assert one.count("<joint ") == 2  # the shoulder and the fixed tool joint
    path = folder / "one.urdf"
    path.write_text(one, encoding="utf-8")
    return path


G, DAMPING = 9.81, 0.05


@pytest.mark.parametrize("q, qd", [(0.3, 0.1), (-1.2, 2.0), (0.0, 0.0)])
def test_a_robot_of_one_joint_is_the_rod_pendulum(tmp_path, q, qd):
    """M = I_yy + m lc² (link1: m = 1, lc = 0.25, I_yy = m L²/12 with L = 0.5); Q = −m g lc cos q − b q̇ (the joint
    turns about −y, so q > 0 lifts the link)."""
    pytest.importorskip("pinocchio")
    import numpy as np

    from robustrack.plants.urdf import URDFPlant

    plant = URDFPlant(_one_joint_urdf(tmp_path))
    assert plant.n == 1
    M = plant.mass_matrix(np.array([q]))
    assert M.shape == (1, 1) and M[0, 0] == pytest.approx(0.5 ** 2 / 12 + 0.25 ** 2, rel=1e-12)
    Q = plant.given_force(np.array([q]), np.array([qd]))
    assert Q == pytest.approx([-G * 0.25 * np.cos(q) - DAMPING * qd], rel=1e-9, abs=1e-12)
    batch = plant.mass_matrix(np.array([[q], [q + 1.0]]))
    assert batch.shape == (2, 1, 1)


def test_locking_all_but_one_joint_leaves_a_one_joint_robot():
    """The two-link arm with its elbow locked straight: one rigid rod of both links about the shoulder."""
    pytest.importorskip("pinocchio")
    import numpy as np
    from pathlib import Path

    from robustrack.plants.urdf import URDFPlant

    plant = URDFPlant(Path(__file__).parent / "data" / "two_link_arm.urdf", locked={"elbow": 0.0})
    assert plant.n == 1
    inertia = 0.5 ** 2 / 12 + 0.25 ** 2 + 0.010666666666666666 + 0.8 * (0.5 + 0.2) ** 2
    assert plant.mass_matrix(np.array([0.4]))[0, 0] == pytest.approx(inertia, rel=1e-12)
    torque = -G * (1.0 * 0.25 + 0.8 * 0.7) * np.cos(0.4) - DAMPING * 0.3
    assert plant.given_force(np.array([0.4]), np.array([0.3])) == pytest.approx([torque], rel=1e-9)


# --------------------------------------------------------------------- a certificate is bound to its problem (item 1)

def test_a_new_certificate_records_the_fingerprint_of_its_problem(cert_doc):
    fp = cert_doc["fingerprint"]
    assert fp["scenario"] == "duffing-tracking" and fp["plant.model"].startswith("examples.CoupledDuffing/")
    assert [k for k in fp if k.startswith("plant.") and k != "plant.model"] == [
        "plant.m1", "plant.m2", "plant.k1", "plant.k2", "plant.kbar1", "plant.kbar2", "plant.c1", "plant.c2"]
    assert fp["constraint.omega"] == pytest.approx(6.283185307179586) and fp["t_span"] == [0.0, 0.3]
    assert fp["reference.q0"] == cert_doc["reference"]["q0"] and fp["solver.rtol"] == 1e-8


OTHER_PROBLEMS = [
    # (--set of the study, the first field that differs, as the message names it)
    ("plant.k1=20", "`plant.k1`: certified 10, this study 20"),
    ("plant.c2=0.3", "`plant.c2`: certified 0.15, this study 0.3"),
    ("plant.m1=2.1", "`plant.m1`: certified 2, this study 2.1"),  # another nominal mass, its box inside the old one
    ("constraint.omega=3", "`constraint.omega`: certified 6.28318530718, this study 3"),
    ("constraint.alpha=0.5", "`constraint.alpha`: certified 0.4, this study 0.5"),
    ("initial.x2_dot=1", "`reference.qd0`: certified [8.28318530718, 2], this study [7.28318530718, 1]"),
    ("simulation.rtol=1e-6", "`solver.rtol`: certified 1e-08, this study 1e-06"),
    ("simulation.atol=1e-10", "`solver.atol`: certified 1e-12, this study 1e-10"),
    ("simulation.t_end=0.4", "`t_span`: certified [0, 0.3], this study [0, 0.4]"),
]
STUDIES = [
    ["montecarlo", "duffing-tracking", "--samples", "2", "--workers", "1", "--json", "out.json"],
    ["worst-case", "duffing-tracking", "--budget", "5", "--workers", "1", "--json", "out.json"],
    ["tune", "duffing-tracking", "--target-e", "1", "--samples", "2", "--workers", "1", "--json", "out.json"],
    ["report", "duffing-tracking", "-o", "rep"],
]


@pytest.mark.parametrize("study", STUDIES, ids=[s[0] for s in STUDIES])
@pytest.mark.parametrize("change, needle", OTHER_PROBLEMS, ids=[c for c, _ in OTHER_PROBLEMS])
def test_a_study_of_another_problem_is_refused_naming_the_first_field(cert_doc, tmp_path, monkeypatch, capsys, study,
                                                                      change, needle):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "c.json").write_text(json.dumps(cert_doc), encoding="utf-8")
    line = _refused(capsys, [*study, *SETS, "--set", change, "--certificate", "c.json"], tmp_path,
                    "`--certificate` certifies another problem — ", needle)
    assert "certify the study's scenario with the same --set" in line


def test_the_api_refuses_a_certificate_of_other_lengths_and_gravity(cert_doc):
    """The issue's case in Python: the same scenario with other plant parameters, through covering_certificate."""
    from robustrack.scenarios import load_scenario
    from robustrack.scenarios.campaign import covering_certificate

    sc = load_scenario("duffing-tracking", [*OVERRIDES, "plant.kbar1=3", "plant.k2=30"])
    with pytest.raises(ParameterError, match=r"`plant.k2`: certified 12, this study 30"):
        covering_certificate(cert_doc, sc, 0.1, ["m1", "m2"])
    covering_certificate(cert_doc, load_scenario("duffing-tracking", OVERRIDES), 0.1, ["m1", "m2"])  # the same: used


def test_worst_case_refuses_a_certificate_whose_witness_was_edited(cert_doc, tmp_path, monkeypatch, capsys):
    """Issue 54: `worst-case --certificate` started from a forged witness δ (zeros: the nominal plant); the δ is
    re-derived from the witness's params (params = nominal + δ) before any study uses it."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "c.json").write_text(json.dumps(_edit(cert_doc, f"{DQ}.witness.delta", [0.0, 0.0])),
                                     encoding="utf-8")
    _refused(capsys, ["worst-case", "duffing-tracking", *SETS, "--budget", "5", "--certificate", "c.json"], tmp_path,
             "`--certificate`: `bounds.max_norm_dq.witness.delta` [0.0, 0.0] does not give the witness's params",
             "params = nominal + δ", "certify again")


@pytest.mark.parametrize("key, value, needle", [
    ("fingerprint", "-", "no `fingerprint` — the problem it certifies"),
    ("fingerprint", [1, 2], "`fingerprint` must be a table with"),
    ("fingerprint.solver.rtol", "-", "`fingerprint` must be a table with"),
    ("fingerprint.t_span", [0.0, 5.0], "`fingerprint` disagrees with the file's own fields (`t_span`"),
    ("fingerprint.scenario", "triple-pendulum", "`fingerprint` disagrees with the file's own fields (`scenario`"),
])
def test_a_certificate_without_a_whole_fingerprint_is_refused(cert_doc, key, value, needle):
    from robustrack.certification import certificate_summary

    doc = copy.deepcopy(cert_doc)
    head, _, rest = key.partition(".")
    if not rest:
        doc = _edit(doc, head, value)
    elif value == "-":
        del doc[head][rest]
    else:
        doc[head][rest] = value
    with pytest.raises(ParameterError, match="certify again") as err:
        certificate_summary(doc, "--certificate")
    assert needle in str(err.value), str(err.value)


# --------------------------------------------------------------------- certify --verify (item 1)

def _verify(capsys, folder, doc, *argv):
    """Write ``doc`` as c.json, run `certify --verify c.json ARGV`; (status, stdout), nothing written."""
    (folder / "c.json").write_text(json.dumps(doc), encoding="utf-8")
    before = _snapshot(folder)
    status = main(["certify", "--verify", "c.json", *argv])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    assert _snapshot(folder) == before
    return status, captured.out


def test_verify_says_a_real_certificate_is_consistent(cert_doc, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    status, out = _verify(capsys, tmp_path, cert_doc, *SETS)
    assert status == 0, out
    assert "[ok] the witness of max_norm_dq: re-evaluated" in out and "[ok] the fingerprint" in out
    assert "[ok] sampled plants under the upper bound of max_norm_Mtilde" in out
    assert out.rstrip().splitlines()[-1].startswith("consistent: ")


def test_verify_rebuilds_the_problem_from_the_source_certify_records(cert_doc, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    doc = {**cert_doc, "source": {"name": "duffing-tracking", "set": OVERRIDES}}
    assert _verify(capsys, tmp_path, doc)[0] == 0
    status, out = _verify(capsys, tmp_path, cert_doc)  # no source, no --set: the catalog's 10-s horizon
    assert status == 1 and "NOT consistent: the fingerprint" in out and "`t_span`: certified [0, 0.3]" in out


def _scaled(doc, key, factor):
    out = copy.deepcopy(doc)
    b = out["bounds"][key]
    b["lower"] = b["lower"] * factor
    return out


VERIFY_FAILS = [
    # (the certificate, extra argv, the check that fails, a needle of its line)
    (lambda d: _scaled(d, "max_norm_dq", 0.9), SETS, "the witness of max_norm_dq", "against the lower bound"),
    (lambda d: _scaled(d, "max_norm_Mtilde", 0.5), SETS, "the witness of max_norm_Mtilde", "against the lower bound"),
    (lambda d: _edit(d, f"{DQ}.witness.t", 0.1), SETS, "the witness of max_norm_dq", "at t = 0.1 s"),
    (lambda d: _edit(_edit(_edit(d, f"{DQ}.upper", d["bounds"]["max_norm_dq"]["lower"]), f"{DQ}.finished", True),
                     "finished", True), SETS, "`promised_at_certified_gamma.gamma`", "the certified Γ"),
    (lambda d: _edit(_edit(_edit(_edit(d, f"{DQ}.upper", d["bounds"]["max_norm_dq"]["lower"]), f"{DQ}.finished",
                                 True), "finished", True), "promised_at_certified_gamma", "-"),
     SETS, "sampled plants under the upper bound of max_norm_dq", "is 2.6"),
    (lambda d: _edit(d, "fingerprint", "-"), SETS, "the file", "no `fingerprint`"),
    (lambda d: _edit(d, f"{DQ}.upper", 1.0), SETS, "the file", f"`{DQ}` has lower"),
    (lambda d: d, [*SETS, "--set", "plant.c1=0.2"], "the fingerprint", "`plant.c1`: certified 0.1, this study 0.2"),
    (lambda d: d, ["duffing", *SETS], "the fingerprint", "certifies scenario 'duffing-tracking', not 'duffing'"),
    # issue 54: the stored figures a claim rests on, re-derived (a forged witness δ, a forged promised bound)
    (lambda d: _edit(d, f"{DQ}.witness.delta", [0.0, 0.0]), SETS, f"`{DQ}.witness.delta`",
     "does not give the witness's params"),
    (lambda d: _edit(d, "bounds.max_norm_Mtilde.witness.delta", [0.2, 0.0]), SETS,
     "`bounds.max_norm_Mtilde.witness.delta`", "does not give the witness's params"),
    (lambda d: _edit(d, "promised_at_certified_gamma.e", 1e-9), SETS, "`promised_at_certified_gamma.e`",
     "stored 1e-09, recomputed"),
    (lambda d: _edit(d, "promised_at_certified_gamma.gamma", 1.0), SETS, "`promised_at_certified_gamma.gamma`",
     "the certified Γ"),
]


@pytest.mark.parametrize("make, argv, check, needle", VERIFY_FAILS, ids=[f"{c[2]}-{i}" for i, c in
                                                                           enumerate(VERIFY_FAILS)])
def test_verify_names_the_first_check_that_fails(cert_doc, tmp_path, monkeypatch, capsys, make, argv, check, needle):
    monkeypatch.chdir(tmp_path)
    status, out = _verify(capsys, tmp_path, make(cert_doc), *argv)
    last = out.rstrip().splitlines()[-1]
    assert status == 1, out
    assert last.startswith(f"NOT consistent: {check} — ") and needle in last, last
    assert f"[FAILS] {check}" in out


def test_verify_writes_nothing_and_certify_needs_a_name(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "c.json").write_text("{}", encoding="utf-8")
    _refused(capsys, ["certify", "--verify", "c.json", "--json", "v.json"], tmp_path, "`--verify`", "leave out `--json`")
    _refused(capsys, ["certify", "--verify", "c.json", "--json", "c.json"], tmp_path, "`--json`", "`--verify`")
    _refused(capsys, ["certify"], tmp_path, "give a scenario NAME to certify", "`--verify FILE`")


# --------------------------------------------------------------------- link inertias, circle axes (item 4)

LINK2 = '<inertia ixx="0.0001" ixy="0" ixz="0" iyy="0.010666666666666666" iyz="0" izz="0.010666666666666666"/>'
BAD_INERTIAS = [
    # (link2's <inertia>, <mass>, what the message says)
    ('<inertia ixx="-0.0001" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/>', "0.8",
     "has a negative principal moment (-0.0001, 0.01, 0.01 kg m²)"),
    ('<inertia ixx="0.01" ixy="0.02" ixz="0" iyy="0.01" iyz="0" izz="0.01"/>', "0.8",
     "has a negative principal moment (-0.01, 0.01, 0.03 kg m²)"),  # not positive semi-definite off the diagonal
    ('<inertia ixx="0.001" ixy="0" ixz="0" iyy="0.001" iyz="0" izz="0.01"/>', "0.8",
     "break the triangle inequality I₁ + I₂ >= I₃ (0.002 < 0.01)"),
    (LINK2, "-0.8", "must be finite, the mass >= 0"),
    ('<inertia ixx="nan" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/>', "0.8", "must be finite"),
    ('<inertia ixx="heavy" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/>', "0.8", "is not a number"),
]


@pytest.mark.parametrize("inertia, mass, needle", BAD_INERTIAS, ids=[n[:30] for _, _, n in BAD_INERTIAS])
def test_a_link_inertia_no_body_has_is_refused_naming_the_link(tmp_path, inertia, mass, needle):
    pytest.importorskip("pinocchio")
    from pathlib import Path

    from robustrack.plants.urdf import URDFPlant

    src = (Path(__file__).parent / "data" / "two_link_arm.urdf").read_text(encoding="utf-8")
    assert src.count(LINK2) == 1
    bad = src.replace(LINK2, inertia).replace('<mass value="0.8"/>', f'<mass value="{mass}"/>')
    path = tmp_path / "bad.urdf"
    path.write_text(bad, encoding="utf-8")
    with pytest.raises(ParameterError) as err:
        URDFPlant(path)
    message = str(err.value)
    assert message.startswith(f"`source` {str(path)!r}: link 'link2': ") and needle in message, message
    assert "URDF" in message.split(needle)[-1] + message  # the fix: the URDF's values


def test_physical_inertias_load_a_point_mass_and_the_catalog_robots(tmp_path):
    pytest.importorskip("pinocchio")
    from pathlib import Path

    from robustrack.plants.urdf import URDFPlant, check_link_inertias, example_robot_urdf

    src = (Path(__file__).parent / "data" / "two_link_arm.urdf").read_text(encoding="utf-8")
    point = tmp_path / "point.urdf"  # a point mass: zero inertia, a valid body
    point.write_text(src.replace(LINK2, '<inertia ixx="0" ixy="0" ixz="0" iyy="0" iyz="0" izz="0"/>'), encoding="utf-8")
    assert URDFPlant(point).n == 2
    for name in ("ur5", "panda"):
        check_link_inertias(example_robot_urdf(name))
    # a link fixed to the world enters no M(q): its placeholder inertia (legged robots' bases, tiago's antennas
    # give (~0, ~0, 3e-6) or a negative moment) is not checked; the same inertia on a moving link is refused
    bad = '<inertial><mass value="1"/><inertia ixx="-0.0001" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial>'
    static = tmp_path / "static.urdf"
    static.write_text(src.replace('<link name="base"/>', f'<link name="base">{bad}</link>'), encoding="utf-8")
    assert URDFPlant(static).n == 2
    bolted = tmp_path / "bolted.urdf"  # bolted to the base through a fixed joint: still the world's
    bolted.write_text(src.replace('<link name="base"/>', f'<link name="base"/><link name="plate">{bad}</link>'
                                  '<joint name="bolt" type="fixed"><parent link="base"/><child link="plate"/></joint>'),
                      encoding="utf-8")
    assert URDFPlant(bolted).n == 2
    carried = tmp_path / "carried.urdf"  # the same plate fixed to the tool: it moves with the arm
    carried.write_text(src.replace('<link name="tool"/>', f'<link name="tool"/><link name="plate">{bad}</link>'
                                   '<joint name="bolt" type="fixed"><parent link="tool"/><child link="plate"/></joint>'),
                       encoding="utf-8")
    with pytest.raises(ParameterError, match="link 'plate': <inertia> has a negative principal moment"):
        URDFPlant(carried)


AXES = [
    # (axes, what the message says)
    ("[[1.0, 0.0, 0.0], [2.0, 0.0, 0.0]]", "got lengths [1.0, 2.0] and e1 · e2 = 2 (parallel: no plane); write two "
                                           "perpendicular unit vectors"),
    ("[[2.0, 0.0, 0.0], [0.0, 1.0, 0.0]]", "got lengths [2.0, 1.0] and e1 · e2 = 0; write [[1.0, 0.0, 0.0], [0.0, 1.0, "
                                           "0.0]] (the same plane, made orthonormal)"),
    ("[[0.0, 0.0, 2.0], [0.0, 2.0, 0.0]]", "got lengths [2.0, 2.0]"),  # both of length 2: a doubled radius
    ("[[1.0, 0.0, 0.0], [1.0, 1.0, 0.0]]", "e1 · e2 = 1; write [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]"),
    ("[[0.0, 0.0, 0.0], [0.0, 1.0, 0.0]]", "got lengths [0.0, 1.0]"),
]


@pytest.mark.parametrize("axes, needle", AXES, ids=[a for a, _ in AXES])
def test_circle_axes_that_are_not_orthonormal_are_refused_naming_the_key(tmp_path, monkeypatch, capsys, axes,
                                                                         needle):
    from robustrack.scenarios.scenario import catalog_path

    monkeypatch.chdir(tmp_path)
    text = (catalog_path() / "ur5-plane-circle.toml").read_text(encoding="utf-8")
    good = "axes = [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]"
    assert text.count(good) == 1
    text = text.replace('parameters = ["payload_mass"]\n', "")  # the kind's default, without the older form's notice
    (tmp_path / "circle.toml").write_text(text.replace(good, f"axes = {axes}"), encoding="utf-8")
    line = _refused(capsys, ["run", "circle.toml", "--json", "out.json"], tmp_path,
                    "`constraint.frame[2].axes` must be orthonormal — unit length and perpendicular", needle)
    assert "the circle's radius is measured along them" in line


# --------------------------------------------------------------------- identification knows what it was given (item 3)

@pytest.fixture
def saved_run(tmp_path, monkeypatch, capsys):
    """`robustrack run duffing-tracking --save run.npz` on the short horizon (it records its scenario)."""
    monkeypatch.chdir(tmp_path)
    assert main(["run", "duffing-tracking", *SETS, "--save", "run.npz"]) == 0
    capsys.readouterr()
    return tmp_path


GIVEN_OTHER = [
    (["--set", "plant.k1=20"], "`plant.k1`: recorded 10, given 20"),
    (["--set", "plant.c1=0.5"], "`plant.c1`: recorded 0.1, given 0.5"),
    (["--set", "constraint.amplitude=2"], "`constraint.amplitude`: recorded 1, given 2"),
    (["--set", "simulation.rtol=1e-6"], "`solver.rtol`: recorded 1e-08, given 1e-06"),
    # issue 54: the whole of what made the run, the friction, disturbance and sensor included
    (["--set", "actual.viscous=0.9"], "`actual.viscous`: recorded 0, given 0.9"),
    (["--set", "actual.disturbance.kind=step", "--set", "actual.disturbance.amplitude=0.5"],
     "`actual.disturbance.kind`: recorded none, given step"),
    (["--set", "compensator.sample_period=0.01", "--set", "sensor.q_noise=0.001"], "`sample_period`: recorded none, "
                                                                                   "given 0.01"),
]


@pytest.mark.parametrize("extra, needle", GIVEN_OTHER, ids=[e[-1] for e, _ in GIVEN_OTHER])
def test_identify_refuses_a_scenario_other_than_the_recorded_one(saved_run, capsys, extra, needle):
    line = _refused(capsys, ["identify", "run.npz", "--scenario", "duffing-tracking", *SETS, *extra, "--json",
                             "id.json"], saved_run, "`--scenario`: run.npz records the scenario it was made with",
                    needle)
    assert "leave out --scenario (the recorded one is used)" in line


def test_identify_refuses_another_scenario_by_name_and_accepts_the_recorded_one(saved_run, capsys):
    (saved_run / "other.toml").write_text((saved_run / "run.npz").exists() and _show(capsys, "duffing-tracking")
                                          .replace('name = "duffing-tracking"', 'name = "my-duffing"'),
                                          encoding="utf-8")
    _refused(capsys, ["identify", "run.npz", "--scenario", "other.toml", *SETS], saved_run,
             "`scenario`: recorded 'duffing-tracking', given 'my-duffing'")
    assert main(["identify", "run.npz", "--scenario", "duffing-tracking", *SETS]) == 0
    assert "condition number" in capsys.readouterr().out


def _show(capsys, name):
    assert main(["show", name]) == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("array, cut, needle", [
    ("Qu", 3, "`Qu` has 28"), ("qcd", 1, "`qcd` has 30"), ("Qc", 31, "`Qc` has 0"), ("t", 2, "`qc` has 31"),
])
def test_identify_names_arrays_of_different_lengths(saved_run, capsys, array, cut, needle):
    import numpy as np

    data = dict(np.load(saved_run / "run.npz"))
    data[array] = data[array][:len(data[array]) - cut]
    np.savez(saved_run / "cut.npz", **data)
    line = _refused(capsys, ["identify", "cut.npz", "--json", "id.json"], saved_run,
                    "'cut.npz': its arrays must have one row per time of `t`", needle)
    assert "save it again with `robustrack run NAME --save RUN.npz`" in line


# --------------------------------------------------------------------- identification judges its excitation (item 3)

def _edited_run(folder, name, **arrays):
    import numpy as np

    data = dict(np.load(folder / "run.npz"))
    for key, edit in arrays.items():
        data[key] = edit(data[key].copy())
    np.savez(folder / name, **data)


@pytest.mark.parametrize("accelerations", ["none", "differences"])
def test_identify_refuses_a_run_that_does_not_move(saved_run, capsys, accelerations):
    import numpy as np

    _edited_run(saved_run, "still.npz", qc=lambda q: np.repeat(q[:1], len(q), axis=0), qcd=np.zeros_like)
    form = "integral" if accelerations == "none" else "differential"
    line = _refused(capsys, ["identify", "still.npz", "--accelerations", accelerations, "--json", "id.json"],
                    saved_run, f"the run does not excite m1, m2 ({form} form)", "constant q",
                    "the estimate would be the nominal values with infinite standard errors",
                    "Identify from a run with more motion")
    assert not (saved_run / "id.json").exists() and "nan" not in line and "inf of" not in line


@pytest.mark.parametrize("key, needle", [("qc", "`qc` holds nan at row 5 (t = 0.05)"),
                                         ("qcd", "`qcd` holds nan at row 5 (t = 0.05)"),
                                         ("Qu", "`Qu` holds nan at row 5 (t = 0.05)"),
                                         ("t", "`t` holds nan at row 5")])
def test_identify_names_the_array_row_and_time_of_a_nan(saved_run, capsys, key, needle):
    import numpy as np

    def spoil(x):
        x[5] = np.nan
        return x

    _edited_run(saved_run, "nan.npz", **{key: spoil})
    _refused(capsys, ["identify", "nan.npz", "--json", "id.json"], saved_run, "'nan.npz': " + needle,
             "a damaged log", "record the run again")


@pytest.mark.parametrize("accelerations", [None, "differences"])
def test_the_api_refuses_a_pendulum_at_rest_and_names_a_nan(accelerations):
    import numpy as np

    from robustrack.identification import identify
    from robustrack.plants import NLinkPendulum

    nominal = NLinkPendulum(m=[1.0, 2.0], L=[1.0, 0.5])
    q = np.zeros((51, 2))
    run = {"t": np.linspace(0, 1, 51), "qc": q, "qcd": q, "Qc": q, "Qu": q}
    with pytest.raises(ParameterError, match=r"does not excite m1, m2 .*more motion"):
        identify(run, nominal, "m1,m2", accelerations=accelerations)
    q = np.c_[np.sin(run["t"]), np.cos(run["t"])]
    q[7, 1] = np.inf
    with pytest.raises(ParameterError, match=r"the run: `qc` holds inf at row 7 \(t = 0.14\)"):
        identify({**run, "qc": q}, nominal, "m1,m2", accelerations=accelerations)


def test_a_standard_error_as_large_as_its_estimate_is_warned():
    """Noise far above a weak excitation: the condition number is fine, the standard error is not."""
    import numpy as np

    from robustrack.identification import PoorExcitation, identify_motion
    from robustrack.plants import NLinkPendulum

    nominal = NLinkPendulum(m=[1.0, 2.0], L=[1.0, 0.5])
    t = np.linspace(0, 2, 201)
    q = 1e-3 * np.c_[np.sin(3 * t), np.cos(2 * t)]
    qd = 1e-3 * np.c_[3 * np.cos(3 * t), -2 * np.sin(2 * t)]
    qdd = 1e-3 * np.c_[-9 * np.sin(3 * t), -4 * np.cos(2 * t)]
    force = (nominal.mass_matrix(q) @ qdd[..., None])[..., 0] - nominal.given_force(q, qd)
    force = force + np.random.default_rng(1).normal(0, 1.0, force.shape)
    with pytest.warns(PoorExcitation, match=r"standard error as large as .*use a run with more motion"):
        ident = identify_motion(nominal, "m1,m2", t, q, qd, qdd, force)
    assert ident.poorly_excited and set(ident.poorly_excited) <= {"m1", "m2"}


# --------------------------------------------------------------------- plants from functions and factories (item 5)

def _function_problem(M, Q, backend, n=2):
    import sympy as sp

    from robustrack.constraints import Holonomic, Stabilization
    from robustrack.controllers import GSS, control_function
    from robustrack.plants import Plant
    from robustrack.tracking import TrackingProblem

    plant = Plant.from_functions(M, Q, params={"m": 1.0}, names=["x", "y"])
    x, y, t = sp.symbols("x y t")
    con = Holonomic(x - 0.3 * sp.sin(t), [x, y], t, stabilization=Stabilization.second_order(xi=1.0, omega=5.0))
    gss = GSS(K=5.0, gamma_prime=60.0, beta0=5.0, alpha0=0.15, sigma=1.0, f=control_function("tanh", eps=1e-2))
    return TrackingProblem(plant, con, gss, q0=[0.0, 0.0], qd0=[0.3, 0.0], t_span=(0.0, 1.0),
                           actual=plant.replace(m=1.2), n_points=21, backend=backend)


def _M_asym(q, m):
    return np.array([[m, 0.3], [0.0, m]])


def _M_indefinite(q, m):
    return np.array([[m, 0.0], [0.0, -m]])


def _M_late_asym(q, m):  # symmetric at the start, not once x has moved
    return np.array([[m, 0.0], [q[0], m]])


def _M(q, m):
    return np.array([[m, 0.0], [0.0, m]])


def _Q(q, qd, m):
    return np.array([-4.0 * q[0], -4.0 * q[1]])


def _Q_nan(q, qd, m):
    return np.array([np.nan if q[0] > 0.1 else -4.0 * q[0], 0.0])


def _Q_raises(q, qd, m):
    if q[0] > 0.1:
        raise ValueError("boom")
    return np.array([-4.0 * q[0], 0.0])


def _Q_raises_actual(q, qd, m):  # only the actual plant (m = 1.2): the controlled run, not the nominal one
    if q[0] > 0.1 and m > 1.1:
        raise ValueError("boom")
    return np.array([-4.0 * q[0], 0.0])


BAD_M = [(_M_asym, "is not symmetric at t = 0, q = [0.0, 0.0], q̇ = [0.3, 0.0]: M − Mᵀ reaches 0.3"),
         (_M_indefinite, "is not positive definite at t = 0, q = [0.0, 0.0], q̇ = [0.3, 0.0]"),
         (_M_late_asym, "is not symmetric at t = ")]


@pytest.mark.parametrize("backend", ["auto", "numpy"])
@pytest.mark.parametrize("M, needle", BAD_M, ids=[m.__name__ for m, _ in BAD_M])
def test_a_mass_matrix_no_body_has_is_refused_on_both_paths(backend, M, needle):
    from robustrack.errors import MassMatrixError

    with pytest.raises(MassMatrixError) as info:
        _function_problem(M, _Q, backend).simulate()
    message = str(info.value)
    assert f"your function `{M.__name__}` (the M given to Plant.from_functions)" in message and needle in message
    assert "fix M" in message


NOT_FINITE = [(_Q_nan, "returned NaN at t = 0.3398"), (_Q_raises, "raised ValueError: boom at t = 0.3398"),
              (_Q_raises_actual, "raised ValueError: boom at t = 0.3")]


@pytest.mark.parametrize("backend", ["auto", "numpy"])
@pytest.mark.parametrize("Q, needle", NOT_FINITE, ids=[q.__name__ for q, _ in NOT_FINITE])
def test_a_function_that_fails_mid_run_is_named_in_one_line_on_both_paths(capfd, backend, Q, needle):
    with pytest.raises(ParameterError) as info:
        _function_problem(_M, Q, backend).simulate()
    message = str(info.value)
    assert f"your function `{Q.__name__}` (the Q given to Plant.from_functions) {needle}" in message
    assert ", q = [0.1" in message and ", q̇ = [0.2" in message and "\n" not in message
    assert "Exception ignored" not in capfd.readouterr().err


def test_a_vectorized_function_answering_one_state_for_a_batch_is_refused():
    import numpy as np

    from robustrack.plants import Plant
    from robustrack.tracking import simulate_constrained

    def M(q, m):  # vectorized=True, but it answers with the first state's (and the first plant's) matrix
        first, m = np.asarray(q).reshape(-1, 2)[0], float(np.asarray(m).reshape(-1)[0])
        return np.array([[m * (1 + first[0] ** 2), 0.0], [0.0, m]])

    plant = Plant.from_functions(M, lambda q, qd, m: -q, params={"m": 1.0}, names=["x", "y"], vectorized=True)
    with pytest.raises(ParameterError, match=r"row 1 of its `M` for 4 different states is not its `M` of state 1 "
                                             r"alone .* it answers a batch with one state's answer"):
        simulate_constrained(plant, None, [0.1, 0.2], [0.0, 0.0], (0.0, 1.0))
    constant = Plant.from_functions(lambda q, m: np.asarray(m)[..., None, None] * np.eye(2), lambda q, qd, m: -q,
                                    params={"m": 1.0}, names=["x", "y"], vectorized=True)  # a constant M, broadcast
    simulate_constrained(constant, None, [0.1, 0.2], [0.0, 0.0], (0.0, 1.0))


def test_a_users_subclass_of_a_robot_is_checked_though_the_robot_is_not():
    """A robot and its frame constraints skip the batch-contract check (their batches are the package's, tested row
    by row in tests/test_rigid_body.py); the skip is the class's own, so a user's subclass breaking the contract is
    refused as any user plant is."""
    import numpy as np

    from robustrack.plants import FrameConstraint, URDFPlant, example_robot_urdf
    from robustrack.plants.motion import check_batch_contract

    class FirstStateForce(URDFPlant):
        def given_force(self, q, qd, t=0.0):
            Q = np.asarray(super().given_force(q, qd, t))
            return np.broadcast_to(Q.reshape(-1, self.n)[0], Q.shape)  # one state's answer for a batch

    home = np.array([0.0, -1.2, 1.4, -1.5, -1.57, 0.0])
    arm = URDFPlant(example_robot_urdf("ur5"))
    held = FrameConstraint.point(arm, "tool0", arm.frame_pose(home, "tool0")[1])
    check_batch_contract(arm, held, home, np.ones(6), 0.0)
    with pytest.raises(ParameterError, match=r"FirstStateForce.*row 1 of its `Q` for 4 different states"):
        check_batch_contract(FirstStateForce(example_robot_urdf("ur5")), held, home, np.ones(6), 0.0)


@pytest.mark.parametrize("where, code, needle", [
    ("top", "import sys\nsys.exit()\n", "it called sys.exit()"),
    ("top", "import sys\nsys.exit(0)\n", "it called sys.exit(0)"),
    ("factory", "def problem():\n    raise SystemExit(3)\n", "it called sys.exit(3)"),
])
def test_sys_exit_in_a_factory_is_an_error_naming_the_file(tmp_path, monkeypatch, capsys, where, code, needle):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "quits.py").write_text(code, encoding="utf-8")
    (tmp_path / "q.toml").write_text('[scenario]\nname = "q"\nkind = "python"\n[problem]\n'
                                     'factory = "quits.py:problem"\n', encoding="utf-8")
    line = _refused(capsys, ["run", "q.toml", "--json", "out.json"], tmp_path, "`problem.factory`", "quits.py",
                    needle, "not exit", 'if __name__ == "__main__":')
    assert ("importing" in line) == (where == "top")


_FACTORY = '''
import numpy as np
import sympy as sp
from robustrack.constraints import Holonomic, Stabilization
from robustrack.controllers import GSS, control_function
from robustrack.plants import Plant
from robustrack.tracking import TrackingProblem


def M(q, m):
    return np.array([[m + 0.1 * np.cos(q[0]) ** 2]])


def Q(q, qd, m, k):
    return np.array([-k * q[0] - 0.1 * qd[0]])


def problem():
    plant = Plant.from_functions(M, Q, params={"m": 1.0, "k": 4.0}, names=["x"])
    x, t = sp.symbols("x t")
    con = Holonomic(x - 0.2 * sp.sin(t), [x], t, stabilization=Stabilization.second_order(xi=1.0, omega=5.0))
    gss = GSS(K=5.0, gamma_prime=60.0, beta0=5.0, alpha0=0.15, sigma=1.0, f=control_function("tanh", eps=1e-2))
    return TrackingProblem(plant, con, gss, q0=[0.0], qd0=[0.2], t_span=(0.0, 0.5), actual=plant.replace(m=1.2),
                           n_points=21)
'''


def test_copies_and_twins_of_a_factory_never_poison_each_others_compiled_functions(tmp_path, kernels_only_cache):
    # both twins of a/arm.py in one cache: b/arm.py (the folder copied) and a/arm2.py (the same text, another
    # file); each twin runs before a and again after it, so every one of the three compiles beside the others
    # and is run again once they are all compiled (two separate tests, one twin each, cost a compile and two
    # processes more)
    import shutil
    import subprocess
    import sys

    a = tmp_path / "a"
    a.mkdir()
    (a / "arm.py").write_text(_FACTORY, encoding="utf-8")
    (a / "arm.toml").write_text('[scenario]\nname = "arm"\nkind = "python"\n[problem]\nfactory = "arm.py:problem"\n',
                                encoding="utf-8")
    shutil.copytree(a, tmp_path / "b")  # the copied folder
    copied = tmp_path / "b" / "arm.toml"
    (a / "arm2.py").write_text(_FACTORY, encoding="utf-8")  # the same text, another file
    other = a / "arm2.toml"
    other.write_text((a / "arm.toml").read_text().replace("arm.py", "arm2.py"), encoding="utf-8")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # this checkout's robustrack, not an installed one
    env = {**os.environ, "ROBUSTRACK_CACHE_DIR": str(kernels_only_cache),
           "PYTHONPATH": os.pathsep.join([root, *filter(None, [os.environ.get("PYTHONPATH")])])}
    runs = [subprocess.run([sys.executable, "-m", "robustrack.cli", "run", str(toml)], env=env, capture_output=True,
                           text=True, cwd=toml.parent) for toml in (copied, other, a / "arm.toml", copied, other)]
    for done in runs:
        assert done.returncode == 0, done.stderr
        assert "ModuleNotFoundError" not in done.stderr and "runs on numpy" not in done.stderr, done.stderr
        assert "[compiled]" in done.stdout and "[numpy]" not in done.stdout
    assert not list(kernels_only_cache.rglob("*.failed"))
