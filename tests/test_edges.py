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
