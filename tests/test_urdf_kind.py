"""A robot from its URDF as a scenario: ``[scenario] kind = "urdf"`` and the catalog's ``ur5-payload`` (issue 20).

The TOML names ``tests/data/two_link_arm.urdf`` by a relative path; the same problem built in a script
(URDFPlant, JointTrajectory, consistent_initial_state, GSS, TrackingProblem) is the same computation,
so its metrics are compared exactly (==). The numpy path's Jacobian from the plants' exact derivatives
is compared with the forward-difference one it replaces.
"""

import json
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("pinocchio")

from robustrack.cli import main  # noqa: E402
from robustrack.errors import ScenarioError  # noqa: E402
from robustrack.scenarios import load_scenario  # noqa: E402

DATA = Path(__file__).parent / "data"

ARM_TOML = """\
[scenario]
name = "two-link-urdf"
kind = "urdf"

[plant]
urdf = "two_link_arm.urdf"
payload_frame = "tool"
payload_mass = 0.5

[reference]
home = [0.3, 0.6]
amplitude = [0.4, -0.3]
frequency = [1.5, 2.0]

[constraint]
xi = 1.0
omega = 8.0

[uncertainty]
parameters = ["payload_mass"]
dm = [0.05]
gamma = 20.0

[compensator]
type = "gss"

[compensator.gss]
gamma_prime = 20.0

[simulation]
t_end = 1.0
n_points = 101
"""


@pytest.fixture
def arm(tmp_path):
    """The TOML and the URDF in a folder of their own (the URDF is found beside the TOML)."""
    shutil.copy(DATA / "two_link_arm.urdf", tmp_path / "two_link_arm.urdf")
    path = tmp_path / "arm.toml"
    path.write_text(ARM_TOML)
    return path


def _script_problem(urdf):
    """The TOML's problem written as a user would in a script."""
    import sympy as sp

    from robustrack.constraints import Stabilization
    from robustrack.controllers import GSS, control_function
    from robustrack.plants import URDFPlant
    from robustrack.requirements import JointTrajectory, consistent_initial_state
    from robustrack.tracking import TrackingProblem

    nominal = URDFPlant(urdf, payload_frame="tool", payload_mass=0.5)
    t = sp.Symbol("t", real=True)
    ref = JointTrajectory([h + a * (1 - sp.cos(w * t)) for h, a, w in [(0.3, 0.4, 1.5), (0.6, -0.3, 2.0)]],
                          names=nominal.coordinates, t=t, stabilization=Stabilization.second_order(xi=1.0, omega=8.0))
    q0, qd0 = consistent_initial_state(ref, [0.3, 0.6], np.zeros(2))
    gss = GSS(K=10.0, gamma_prime=20.0, beta0=10.0, alpha0=0.5, sigma=1.0,
              f=control_function("signed-quadratic", eps=0.01, alpha_c=2.0))
    return TrackingProblem(nominal, ref, gss, q0, qd0, (0.0, 1.0), actual=nominal.replace(payload_mass=0.55),
                           n_points=101, gamma=20.0)


def test_run_from_the_toml_is_the_scripts_run(arm, tmp_path, capsys, monkeypatch):
    script = _script_problem(DATA / "two_link_arm.urdf").simulate()
    monkeypatch.chdir(tmp_path.parent)  # another folder: the URDF is found beside the TOML
    assert main(["run", str(arm), "--json", str(tmp_path / "run.json")]) == 0
    doc = json.loads((tmp_path / "run.json").read_text())
    for key in ("max_abs_e", "max_abs_edot", "max_abs_Qu", "max_abs_Qc", "max_norm_dq", "max_norm_Mtilde"):
        assert doc["metrics"][key] == script.metrics[key], key
    assert doc["bounds"]["held"] is True and doc["bounds"]["assumptions_held"] is True
    assert doc["solvers"]["controlled"]["backend"] == "compiled"  # the rigid-body kernels (issue 28)


def test_show_round_trips_with_the_urdf_path_made_absolute(arm, tmp_path, capsys):
    sc = load_scenario(str(arm))
    assert sc.config["plant"]["urdf"] == str((tmp_path / "two_link_arm.urdf").resolve())
    assert main(["show", str(arm)]) == 0
    shown = tmp_path / "elsewhere" / "shown.toml"
    shown.parent.mkdir()
    shown.write_text(capsys.readouterr().out)
    assert load_scenario(str(shown)).config == sc.config


def test_ur5_payload_holds_its_bounds_at_a_short_horizon():
    # 0.3 s (about 0.5 s of numpy work): GSS from the start, the +20 % payload; the catalog's Γ = 3.3
    sc = load_scenario("ur5-payload", ["simulation.t_end=0.3", "simulation.n_points=31"])
    pb = sc.build()
    assert pb.actual.params["payload_mass"] == pytest.approx(2.4) and pb.nominal.params["payload_mass"] == 2.0
    m = pb.simulate().metrics
    assert m.bounds_held is True and m.assumptions_held is True


@pytest.mark.parametrize("edit, message", [
    (("urdf = \"two_link_arm.urdf\"", "urdf = \"nowhere.urdf\""), r"arm.toml \(line 6\): `plant.urdf`: no URDF file"),
    (("urdf = \"two_link_arm.urdf\"", "robot = \"ur55\""), r"`plant.robot`: example-robot-data \(installed in .*\) has no robot `ur55`; "
                                                        r"did you mean 'ur5'"),
    (("urdf = \"two_link_arm.urdf\"", "urdf = \"two_link_arm.urdf\"\nrobot = \"ur5\""), r"exactly one of `plant.urdf`"),
    (("home = [0.3, 0.6]", "home = [0.3, 0.6, 0.0]"), r"^`reference.home` must have 2 numbers, one per joint "
                                                      r"\['shoulder', 'elbow'\]; got 3"),
    (("frequency = [1.5, 2.0]", "frequency = [1.5]"), r"`reference.frequency` must have 2 numbers"),
    (("parameters = [\"payload_mass\"]", "parameters = [\"payload_kg\"]"), r"`uncertainty.parameters`: .*payload_kg"),
    (("dm = [0.05]", "dm = [0.05, 0.2]"), r"`uncertainty.dm` must have 1 numbers"),
    (("payload_frame = \"tool\"", "payload_frame = \"hand\""), r"`plant.payload_frame`: .*no frame 'hand'"),
    (("xi = 1.0", "xi = -1.0"), r"^`constraint.xi`: it must be a finite number > 0"),
])
def test_bad_inputs_are_named(arm, edit, message):
    # a missing file or robot is refused when the scenario is loaded (with its line); what needs the robot's
    # joints when it is built (Pinocchio is not imported by `robustrack list` / `show`), before any run
    arm.write_text(ARM_TOML.replace(*edit))
    with pytest.raises(ScenarioError, match=message):
        load_scenario(str(arm)).build()


def test_robot_names_are_the_installed_urdfs_and_an_unknown_one_lists_them(arm, tmp_path, monkeypatch):
    """Items 8 of issue 32 and 4 of issue 28: ``robot = "panda"`` said to install example-robot-data although it
    was installed, and listed no names. Every URDF it ships is a robot by its file's stem (the folder is walked
    here independently); an unknown name lists them with the nearest first; only where the package is missing
    does the message say to install it."""
    import os
    import sysconfig

    from robustrack.plants.urdf import example_robot_names, example_robot_urdf

    names = example_robot_names()
    assert names, "example-robot-data is installed in the test environment ([dev])"
    folder = os.path.dirname(os.path.dirname(os.path.dirname(example_robot_urdf("ur5"))))
    stems = {f[:-5] for _, _, files in os.walk(folder) for f in files if f.endswith(".urdf")}
    assert set(names) <= stems | {s[:-6] for s in stems if s.endswith("_robot")}
    assert {"panda", "ur5", "z1"} <= set(names)
    assert example_robot_urdf("panda").endswith(os.path.join("panda_description", "urdf", "panda.urdf"))
    arm.write_text(ARM_TOML.replace("urdf = \"two_link_arm.urdf\"", "robot = \"panda\""))
    load_scenario(str(arm))  # found: the scenario loads (its [reference] is checked against the joints at build)
    arm.write_text(ARM_TOML.replace("urdf = \"two_link_arm.urdf\"", "robot = \"pandaa\""))
    with pytest.raises(ScenarioError, match=r"arm.toml \(line 6\): `plant.robot`: .* has no robot `pandaa`; did you "
                                            r"mean 'panda'\? its robots: .*\bpanda\b.*\bur5\b") as info:
        load_scenario(str(arm))
    assert "pip install" not in str(info.value) and "\n" not in str(info.value)
    # an environment without example-robot-data (no cmeel prefix in its site-packages): then, and only then, install
    empty = {key: str(tmp_path / "site") for key in ("purelib", "platlib")}
    monkeypatch.setattr(sysconfig, "get_paths", lambda *a, **k: empty)
    with pytest.raises(ScenarioError, match=r"`plant.robot`: robot `pandaa` comes from example-robot-data, which is "
                                            r"not installed: pip install 'robustrack\[robots\]'"):
        load_scenario(str(arm))


def test_without_pinocchio_it_loads_and_building_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "pinocchio", None)  # `import pinocchio` raises ImportError
    sc = load_scenario("ur5-payload")  # `robustrack list` and `show` need no Pinocchio
    with pytest.raises(ScenarioError, match=r"^`plant.robot`: URDF plants need Pinocchio: pip install "
                                            r"'robustrack\[robots\]'") as err:
        sc.build()
    assert "\n" not in str(err.value)


def test_exact_jacobian_agrees_with_forward_differences():
    from robustrack.controllers import GD, GSS
    from robustrack.plants import URDFPlant, example_robot_urdf
    from robustrack.tracking.rhs import batched_jacobian, controlled_jacobian, controlled_rhs

    nominal = URDFPlant(example_robot_urdf("ur5"), payload_mass=2.0, payload_com=[0, 0, 0.05])
    actual = nominal.replace(payload_mass=2.4)
    rng = np.random.default_rng(3)
    for comp in (GSS(K=10.0, gamma_prime=3.0), GD(), None):
        nz = 0 if comp is None else comp.n_states(6)
        q, qd, Qc = rng.normal(size=(3, 6))
        x = np.concatenate([q + 1e-2 * rng.normal(size=6), qd + 1e-2 * rng.normal(size=6), 1e-3 * rng.normal(size=nz)])
        exact = controlled_jacobian(nominal, actual, comp, 0.4, x, q, qd, Qc)
        fd = batched_jacobian(lambda t, X: controlled_rhs(nominal, actual, comp, t, X, q, qd, Qc))(0.4, x)
        # forward differences with steps √ε ≈ 1.5e-8 carry an error ~ step × second derivative, ~1e-7
        # of the largest entry here (measured 2e-9 .. 3e-7); exact = Pinocchio's RNEA derivatives
        assert np.abs(exact - fd).max() <= 1e-6 * np.abs(exact).max(), type(comp).__name__


def test_runs_with_the_exact_and_the_difference_jacobian_agree(monkeypatch):
    from robustrack.tracking import numpy_loop

    pb = _script_problem(DATA / "two_link_arm.urdf")
    exact = pb.simulate()
    assert numpy_loop.has_exact_jacobian(pb.nominal, pb.actual)
    monkeypatch.setattr(numpy_loop, "has_exact_jacobian", lambda *args: False)
    fd = pb.simulate()
    # the Jacobian only steers BDF's steps and Newton iterations: both runs meet rtol = 1e-8, atol = 1e-12,
    # so their states may differ by a few tolerances of the O(1) states (measured 4e-14 rad on q_c: the same steps)
    assert np.abs(exact.qc - fd.qc).max() <= 1e-7
    assert exact.metrics.max_abs_e == pytest.approx(fd.metrics.max_abs_e, rel=1e-4)
    assert exact.info["solvers"]["controlled"]["njev"] > 0


def test_a_function_plant_with_its_derivatives_takes_the_exact_jacobian():
    """Plant.from_functions given dM_dq, dQ_dq, dQ_dqd: the Jacobian from ``derivatives()`` (no RNEA)."""
    from robustrack.controllers import GSS
    from robustrack.plants import Plant
    from robustrack.tracking.rhs import batched_jacobian, controlled_jacobian, controlled_rhs, has_exact_jacobian

    def M(q, a):  # a two-link arm's mass matrix: det = 2 − cos² q2 > 0
        c = np.cos(q[1])
        return [[a + 2 * c, 1 + c], [1 + c, 1.0]]

    def Q(q, qd, k):
        s = np.sin(q[1])
        return [-k * np.sin(q[0]) + s * qd[1] * (2 * qd[0] + qd[1]), -s * qd[0] ** 2 - 0.1 * qd[1]]

    def dM_dq(q, a):  # [i, j, k] = ∂M_ij/∂q_k: only q2 enters
        s = np.sin(q[1])
        out = np.zeros((2, 2, 2))
        out[:, :, 1] = [[-2 * s, -s], [-s, 0.0]]
        return out

    def dQ_dq(q, qd, k):
        c = np.cos(q[1])
        return [[-k * np.cos(q[0]), c * qd[1] * (2 * qd[0] + qd[1])], [0.0, -c * qd[0] ** 2]]

    def dQ_dqd(q, qd, k):
        s = np.sin(q[1])
        return [[2 * s * qd[1], s * (2 * qd[0] + 2 * qd[1])], [-2 * s * qd[0], -0.1]]

    nominal = Plant.from_functions(M, Q, params={"a": 3.0, "k": 9.81}, names=["q1", "q2"],
                                   dM_dq=dM_dq, dQ_dq=dQ_dq, dQ_dqd=dQ_dqd)
    actual = nominal.replace(a=3.3)
    assert has_exact_jacobian(nominal, actual) and not Plant.from_functions(
        M, Q, params={"a": 3.0, "k": 9.81}, names=["q1", "q2"]).exact_derivatives
    comp = GSS(K=10.0, gamma_prime=3.0)
    q, qd, Qc = np.array([0.3, 0.7]), np.array([0.5, -0.4]), np.array([1.0, -2.0])
    x = np.array([0.31, 0.69, 0.52, -0.38])
    exact = controlled_jacobian(nominal, actual, comp, 0.2, x, q, qd, Qc)
    fd = batched_jacobian(lambda t, X: controlled_rhs(nominal, actual, comp, t, X, q, qd, Qc))(0.2, x)
    assert np.abs(exact - fd).max() <= 1e-6 * np.abs(exact).max()  # forward differences: ~1e-7 (as above)


# --------------------------------------------------------------------------- frame constraints (issue 28)
FRAMES_TOML = ARM_TOML.replace("amplitude = [0.4, -0.3]\nfrequency = [1.5, 2.0]\n", "").replace(
    "omega = 8.0\n", """omega = 8.0

[[constraint.frame]]
frame = "tool"
type = "line"
direction = [1.0, 0.0, 0.0]
""")


@pytest.mark.parametrize("edit, message", [
    (("type = \"line\"", "type = \"lin\""), r"`constraint.frame\[1\].type` must be one of \['circle', 'line'"),
    (("direction = [1.0, 0.0, 0.0]", "dirction = [1.0, 0.0, 0.0]"), r"`constraint.frame\[1\]`: unknown key\(s\) "
                                                                     r"\['dirction'\]"),
    (("direction = [1.0, 0.0, 0.0]", "normal = [1.0, 0.0, 0.0]"), r"`constraint.frame\[1\].normal`: a frame of type "
                                                                  r"'line' takes \['direction', 'point'\]"),
    (("type = \"line\"\ndirection = [1.0, 0.0, 0.0]", "type = \"plane\""), r"`constraint.frame\[1\].normal`: a frame "
                                                                           r"of type 'plane' needs it"),
    (("direction = [1.0, 0.0, 0.0]", "direction = [1.0, 0.0]"), r"`constraint.frame\[1\].direction` must be 3"),
    (("home = [0.3, 0.6]", "home = [0.3, 0.6]\namplitude = [0.1, 0.1]"), r"`reference.amplitude`: with "
                                                                         r"\[\[constraint.frame\]\] tables"),
    (("frame = \"tool\"\ntype", "frame = \"hand\"\ntype"), r"^`constraint.frame\[1\].frame`: .*no frame 'hand'"),
    (("direction = [1.0, 0.0, 0.0]", "direction = [0.0, 0.0, 0.0]"), r"`constraint.frame\[1\].direction`: .*nonzero"),
])
def test_frame_tables_are_checked_and_their_keys_named(arm, edit, message):
    arm.write_text(FRAMES_TOML.replace(*edit))
    with pytest.raises(ScenarioError, match=message):
        load_scenario(str(arm)).build()


def test_frame_tables_build_the_users_frame_constraint_and_round_trip(arm, tmp_path, capsys):
    from robustrack.plants import FrameConstraint

    arm.write_text(FRAMES_TOML)
    sc = load_scenario(str(arm))
    pb = sc.build()
    assert isinstance(pb.constraint, FrameConstraint) and pb.constraint.m == 2
    assert np.abs(pb.constraint.residual(pb.q0, pb.qd0, 0.0)).max() < 1e-12  # the start is on the line
    assert main(["show", str(arm)]) == 0
    shown = tmp_path / "shown.toml"
    shown.write_text(capsys.readouterr().out)
    assert load_scenario(str(shown)).config == sc.config


def test_the_plane_and_circle_demo_through_run_montecarlo_and_report(tmp_path, capsys):
    """The catalog's ur5-plane-circle, short: run, a 3-sample Monte Carlo and the report with the contact force."""
    short = ["--set", "simulation.t_end=0.3", "--set", "simulation.n_points=31"]
    assert main(["run", "ur5-plane-circle", *short]) == 0
    out = capsys.readouterr().out
    assert "max |tool0 plane F_z|" in out and "(nominal, in the frame)" in out
    assert main(["montecarlo", "ur5-plane-circle", "--samples", "3", "--workers", "1", *short]) == 0
    assert "completed 3 / 3" in capsys.readouterr().out
    assert main(["report", "ur5-plane-circle", "--out", str(tmp_path / "rep"), *short]) == 0
    assert "max \\|tool0 plane F_z\\| | " in (tmp_path / "rep" / "report.md").read_text()  # (| escaped in Markdown)
