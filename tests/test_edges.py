"""Trust at the loop's edges (issue 54): boxes that reach no plant, extreme and damaged input, comparisons that say
what they compare, and the first impression's warts.

Every case asserts the message (one line on the CLI, naming the key or argument typed, never ``robustrack: internal
error``) and that no input file changed. The controller's boundary is in ``tests/test_boundary.py``.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest
from test_bad_input import assert_one_line_error, cli

from robustrack.errors import ParameterError

CATALOG = Path(__file__).resolve().parents[1] / "robustrack" / "scenarios" / "catalog"


def _digest(*paths) -> list:
    return [hashlib.sha256(Path(p).read_bytes()).hexdigest() for p in paths]


def _refused(capsys, argv, inputs, *needles) -> str:
    """Run the CLI; assert one line, no internal error, each needle in it, the inputs unchanged; the line."""
    before = _digest(*inputs)
    code, _, err = cli(capsys, *argv)
    line = assert_one_line_error(code, err)
    assert "internal error" not in line and code != 3, line
    for needle in needles:
        assert needle in line, line
    assert _digest(*inputs) == before
    return line


# --------------------------------------------------------------------------- a box that reaches no plant
def _duffing(folder, extra: str, short: bool = True) -> Path:
    """duffing-tracking with ``extra`` appended (its `dm` emptied for named tables), on a 0.3-s horizon."""
    text = (CATALOG / "duffing-tracking.toml").read_text(encoding="utf-8")
    text = text.replace("dm = [0.2, -0.1]", "dm = []")
    if short:
        text = text.replace("t_end = 10.0", "t_end = 0.3").replace("n_points = 1001", "n_points = 31")
    path = folder / "box.toml"
    path.write_text(text + "\n" + extra, encoding="utf-8")
    return path


NEGATIVE_MASS = """
[uncertainty.parameters.m1]
range = [-0.5, 2.5]

[uncertainty.parameters.m2]
percent = 10
"""


@pytest.mark.parametrize("command", [["certify"], ["worst-case", "--budget", "5"], ["montecarlo", "--samples", "4"],
                                     ["gamma", "--samples", "8"]])
def test_a_box_reaching_a_negative_mass_is_refused_before_any_study(tmp_path, capsys, command, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = _duffing(tmp_path, NEGATIVE_MASS)
    _refused(capsys, [command[0], path, *command[1:]], [path], "`uncertainty.parameters.m1` = -0.5",
             "its range's lower end", "`m1` must be > 0", "narrow the range")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["box.toml"]  # nothing written


def test_a_box_whose_corner_has_an_indefinite_mass_matrix_is_refused_by_certify():
    """A plant of energies has no rule on its parameters: its M along the nominal run is what refuses the corner
    (the pendulum of tests/test_certify.py: M = m L², not positive definite at m = −0.5)."""
    pytest.importorskip("flint")
    from test_certify import _pendulum_problem

    from robustrack.certification import ParameterBox, certify
    from robustrack.certification.box import check_physical

    pb = _pendulum_problem(t_end=0.2)
    with pytest.raises(ParameterError, match=r"the box \(m, L\) reaches a plant .* refuses, at `m` = -0.5 \(its "
                                             r"range's lower end; the others nominal\)") as err:
        certify(pb, ParameterBox(("m", "L"), (-0.5, 0.9), (2.0, 1.1)), budget_s=5)
    assert "is not positive definite at t = 0" in str(err.value)
    y = pb.nominal_run().solution(np.linspace(0.0, 0.2, 11))  # a box of positive masses passes, at the same states
    check_physical(pb.nominal, ParameterBox(("m", "L"), (1.0, 0.9), (2.0, 1.1)), y[:, :1], y[:, 1:])


# --------------------------------------------------------------------------- no internal error
SHORT = ["--set", "simulation.t_end=0.3", "--set", "simulation.n_points=31"]
SAMPLED = ["--set", "compensator.sample_period=0.01"]


def test_a_position_noise_of_ten_radians_ends_the_run_with_one_time_not_an_internal_error(tmp_path, capsys,
                                                                                        monkeypatch):
    """The loop diverges in its first hold interval (no u ever held): the run fails, said with one time."""
    monkeypatch.chdir(tmp_path)
    code, _, err = cli(capsys, "run", "triple-pendulum", *SHORT, *SAMPLED, "--set", "sensor.q_noise=10")
    line = assert_one_line_error(code, err, "RK45 failed at t = 0: ")
    assert code == 2 and line.count("t = ") + line.count("t ≈ ") == 1, line


@pytest.mark.parametrize("key, value", [("actual.viscous", "1e200"), ("actual.coulomb", "[0, 1e200, 0]"),
                                        ("actual.disturbance.amplitude", "1e16")])
def test_an_extreme_force_is_refused_at_load_naming_its_key(capsys, key, value):
    extra = ["--set", "actual.disturbance.kind=step"] if "disturbance" in key else []
    _refused(capsys, ["run", "triple-pendulum", *SHORT, *extra, "--set", f"{key}={value}"], [],
             f"`{key}` = ", "is beyond 1e+15")


def test_a_solver_that_cannot_start_says_why_in_python():
    """Past the scenario's load-time check (a plant built in Python): BDF's first step overflows, said as a
    SolverError, not a ZeroDivisionError."""
    from robustrack.errors import SolverError
    from robustrack.plants import ForcedPlant
    from robustrack.scenarios import load_scenario
    from robustrack.uncertainty import JointFriction

    pb = load_scenario("triple-pendulum", ["simulation.t_end=0.3"]).build()
    with pytest.raises(SolverError, match="BDF could not start at t = 0: the controlled system's right-hand side"):
        pb.replace(actual=ForcedPlant(pb.actual, JointFriction(viscous=1e200))).simulate()


@pytest.fixture(scope="module")
def saved_run(tmp_path_factory):
    """`robustrack run duffing-tracking --save run.npz` on a 0.3-s horizon, and damaged copies of it."""
    import contextlib
    import io

    from robustrack.cli import main

    folder = tmp_path_factory.mktemp("run")
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["run", "duffing-tracking", *SHORT, "--save", str(folder / "run.npz")]) == 0
    data = (folder / "run.npz").read_bytes()
    (folder / "truncated.npz").write_bytes(data[: len(data) // 2])
    crc = bytearray(data)
    crc[len(crc) // 3] ^= 0xFF  # inside a member's deflated bytes: its CRC-32 fails
    (folder / "crc.npz").write_bytes(bytes(crc))
    arrays = dict(np.load(folder / "run.npz"))
    arrays.update(mujoco_t=arrays["t"], mujoco_q=arrays["qc"], mujoco_qd=arrays["qcd"])  # no mujoco_tau
    np.savez(folder / "no_tau.npz", **arrays)
    return folder


@pytest.mark.parametrize("name, argv, needles", [
    ("truncated.npz", [], ["is not a robustrack run file (BadZipFile", "save it again"]),
    ("crc.npz", [], ["is not a robustrack run file (", "damaged .npz"]),
    ("no_tau.npz", ["--log", "mujoco"], ["its MuJoCo log misses `mujoco_tau`", "(it holds `mujoco_t`"]),
])
def test_a_damaged_run_file_is_named_not_an_internal_error(saved_run, capsys, name, argv, needles):
    path = saved_run / name
    _refused(capsys, ["identify", path, "--scenario", "duffing-tracking", *SHORT, *argv], [path], *needles)


# --------------------------------------------------------------------------- comparisons that say what they compare
def test_margins_refuses_a_sample_period_longer_than_the_run(capsys):
    _refused(capsys, ["margins", "triple-pendulum", "--set", "simulation.t_end=0.05", "--sample-period", "1"], [],
             "the sample period 1 s", "is not shorter than the run (0.05 s)")
    _refused(capsys, ["margins", "triple-pendulum", "--set", "simulation.t_end=0.05", "--set",
                      "compensator.sample_period=0.01", "--set", "sensor.delay=0.1"], [],
             "the sensor's delay 0.1 s (sensor.delay) is not shorter than the run (0.05 s)")


def test_vectorized_functions_answering_one_plant_for_a_batch_of_sampled_plants_are_refused():
    """A campaign's chunk passes each parameter with a leading sample axis: a vectorized M that reads its first
    entry answers the 4 plants with plant 0's M (it was broadcast); a broadcasting one is accepted."""
    from robustrack.plants import Plant
    from robustrack.plants.motion import BATCH, check_batch_contract

    def Q(q, qd, m):
        return -10.0 * np.asarray(q) - 9.81 * np.asarray(m)[..., None] * np.array([0.0, 1.0])

    first = Plant.from_functions(lambda q, m: np.eye(2) * np.asarray(m).reshape(-1)[0], Q, params={"m": 1.0},
                                 names=["x", "y"], vectorized=True)
    with pytest.raises(ParameterError, match=rf"your `M` \(Plant.from_functions, vectorized=True\) answers a batch "
                                             rf"of {BATCH} sampled plants with one plant's answer: row 1"):
        check_batch_contract(first, None, [0.1, 0.2], [0.0, 0.0], 0.0)
    broadcast = Plant.from_functions(lambda q, m: np.eye(2) * np.asarray(m)[..., None, None], Q, params={"m": 1.0},
                                     names=["x", "y"], vectorized=True)
    check_batch_contract(broadcast, None, [0.1, 0.2], [0.0, 0.0], 0.0)
    assert BATCH == 4


def test_a_python_kind_sensor_says_what_makes_it_accepted(tmp_path, capsys):
    import shutil

    from robustrack.scenarios import load_scenario

    for f in (Path(__file__).parent / "data" / "own_arm").iterdir():
        if f.is_file():  # (CI's compileall leaves a __pycache__ folder beside them)
            shutil.copy(f, tmp_path / f.name)
    path = tmp_path / "arm.toml"
    path.write_text(path.read_text(encoding="utf-8") + "\n[sensor]\nq_noise = 1e-4\n", encoding="utf-8")
    _refused(capsys, ["run", path, "--set", "simulation.t_end=0.1"], [path, tmp_path / "my_arm.py"],
             "[sensor] is the sensor of a compensator this file builds", "`compensator.type` is 'problem'",
             "--set compensator.type=gss", "--set uncertainty.gamma=")
    sensor = load_scenario(str(path), ["compensator.type=gss", "compensator.sample_period=1e-3",
                                       "uncertainty.gamma=10"]).build().sensor
    assert sensor.q_noise == 1e-4  # what the message names is accepted


def test_tune_names_only_what_it_would_accept(capsys):
    from robustrack.scenarios import load_scenario

    _refused(capsys, ["tune", "triple-pendulum", "--set", "compensator.type=none"], [],
             "`tune` designs a compensator's gains, and scenario 'triple-pendulum' has none", "--compensator gss")
    line = _refused(capsys, ["tune", "triple-pendulum"], [], "or a [sensor] table (")
    sets = [s for s in line.split("(")[-1].split(")")[0].split() if s != "--set"]  # the --set items it suggests
    assert sets == ["compensator.sample_period=1e-3", "sensor.q_noise=..."]
    assert load_scenario("triple-pendulum", [sets[0], "sensor.q_noise=1e-4"]).build().sensor is not None


def test_export_prints_a_build_command_that_survives_a_space():
    """What a shell reads of the printed command: each path one word (the CLI prints build_command(-o))."""
    import shlex

    from robustrack.cli import build_command

    words = shlex.split(build_command("c out"))
    assert words[:5] == ["cmake", "-S", "c out", "-B", "c out/build"] and words[-1] == "c out/build/rt_example"
    assert build_command("plain") == "cmake -S plain -B plain/build && cmake --build plain/build && plain/build/rt_example"


# --------------------------------------------------------------------------- first impression
def test_the_residual_caption_names_its_symbol_once():
    from types import SimpleNamespace

    from robustrack.reports.captions import residual_caption
    from robustrack.tracking.problem import ResidualInfo

    t = np.linspace(0.0, 1.0, 11)
    result = SimpleNamespace(t=t, residual_nominal=np.exp(-5 * t)[:, None], residual_controlled=(np.exp(-5 * t) + 1e-6)
                             [:, None], metrics={"max_abs_e": 1e-6, "max_abs_edot": 1e-5})
    info = ResidualInfo("φ = q − q_d(t)", "rad", "joint reference φ = q − q_d(t)", None, None)
    text = residual_caption(result, info, {"q": "rad", "qd": "rad/s"})
    assert text.startswith("|φ| (rad), φ = q − q_d(t), of the nominal") and "|φ_c − φ|" in text
    assert "q_d(t)_c" not in text and text.count("q − q_d(t)") == 1


def test_the_flagship_report_opens_with_its_verdict_not_an_alarm():
    """triple-pendulum's 5.3 kN·m is its own motion's (the velocity terms of the whirl its energy requirement asks
    for, 5.2 kN·m): said after the verdict with that reason, not as "Look twice"."""
    from robustrack.reports.describe import verdict_lines
    from robustrack.scenarios import load_scenario
    from robustrack.scenarios.units import tracking_units

    pb = load_scenario("triple-pendulum", ["simulation.uncompensated=false"]).build()
    lines = verdict_lines(pb.simulate(), pb.nominal, tracking_units(pb.nominal))
    assert lines[0].startswith("Verdict: bounds held") and not any("Look twice" in line for line in lines)
    assert "the requirement's own demand" in lines[-1] and "5307 N·m" in lines[-1] and "5231 N·m" in lines[-1]


def test_tune_o_writes_named_parameters_in_the_current_form(tmp_path):
    """The older list (ur5-payload-sensed's `parameters = ["payload_mass"]`, drawn uniform ±10 % by default) is written
    as its table, percent = 10: the same box, loaded without the older form's notice."""
    import warnings

    from robustrack.errors import RobustrackNotice
    from robustrack.scenarios import load_scenario
    from robustrack.scenarios.parameter_shift import DEFAULT_SPREAD
    from robustrack.scenarios.toml_writer import scenario_toml

    sc = load_scenario("ur5-payload-sensed")
    assert sc.config["uncertainty"]["parameters"] == ["payload_mass"]
    path = tmp_path / "tuned.toml"
    path.write_text(scenario_toml(sc, current_form=True), encoding="utf-8")
    with warnings.catch_warnings():
        warnings.simplefilter("error", RobustrackNotice)  # the older form's notice would fail here
        again = load_scenario(str(path))
    assert again.config["uncertainty"]["parameters"] == {"payload_mass": {"percent": 100 * DEFAULT_SPREAD}}
    assert again.config["uncertainty"]["dm"] == sc.config["uncertainty"]["dm"]
    assert "parameters = [" in scenario_toml(sc)  # `show` keeps the configuration as it is


def test_a_box_reaching_no_plant_names_an_array_entry_as_typed(tmp_path, capsys, monkeypatch):
    """The pendulum's m2 is an entry of its mass array `m`: the message names the table the user wrote."""
    monkeypatch.chdir(tmp_path)
    text = (CATALOG / "triple-pendulum.toml").read_text(encoding="utf-8").replace("dm = [0.1, -0.2, 0.3]", "dm = []")
    path = tmp_path / "pendulum.toml"
    path.write_text(text + "\n[uncertainty.parameters.m2]\nrange = [-1.0, 3.0]\n", encoding="utf-8")
    _refused(capsys, ["gamma", path, "--samples", "4"], [path], "at `uncertainty.parameters.m2` = -1 (its range's "
             "lower end; the others nominal): `m` must be > 0")


def test_a_solver_that_cannot_start_names_the_scenarios_forces(capsys, monkeypatch):
    """Past the load-time limit (raised here to reach the solver), BDF's failed start names [actual]'s keys."""
    import robustrack.scenarios.actual_forces as actual_forces

    monkeypatch.setattr(actual_forces, "MAX_MAGNITUDE", 1e300)
    line = _refused(capsys, ["run", "triple-pendulum", *SHORT, "--set", "actual.viscous=1e200"], [],
                    "BDF could not start at t = 0", "This scenario's actual plant carries `actual.viscous` = 1e+200")
    assert line.count("t = ") == 1  # one time
