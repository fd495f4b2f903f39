"""A robot as it is: effort limits known by default, a redundant requirement said before running, locked joints in
MuJoCo (docs/guide/robot.md, "Effort limits", "Redundant robots"; robustrack.tracking.actuators.effort_limits,
robustrack.tracking.redundancy).

Independent truths: the URDF's own <limit effort> (read by Pinocchio), the clipping of the unclipped force computed
without actuators, the rank of A by an SVD, MuJoCo's model of the same URDF.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

from robustrack.errors import LimitNotice, ParameterError
from robustrack.scenarios import load_scenario
from robustrack.tracking.actuators import effort_exceeded, effort_limits
from robustrack.tracking.redundancy import RedundancyNotice, free_directions

EYE6 = "[" + ",".join("[" + ",".join("1" if i == j else "0" for j in range(6)) + "]" for i in range(6)) + "]"

PANDA_CIRCLE = """
[scenario]
name = "panda-circle"
kind = "urdf"
title = "Panda, fingers locked: the hand on a 5-cm circle, orientation held"

[plant]
robot = "panda"
payload_frame = "panda_hand"
payload_mass = 1.0
locked = ["panda_finger_joint1", "panda_finger_joint2"]

[reference]
home = [0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785]

[[constraint.frame]]
frame = "panda_hand"
type = "plane"
normal = [0.0, 0.0, 1.0]

[[constraint.frame]]
frame = "panda_hand"
type = "circle"
center = [0.25701957, 0.0, 0.590269558]
radius = 0.05
frequency = 2.0
axes = [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]

[[constraint.frame]]
frame = "panda_hand"
type = "orientation"

[uncertainty]
gamma = 20.0  # a robot declares its own Γ (no default from another plant)

[uncertainty.parameters.payload_mass]
range = [0.5, 1.5]

[compensator]
type = "gss"
f = "tanh"
eps = 0.1
sample_period = 2e-3

[compensator.gss]
gamma_prime = 3.3
K = 10.0
beta0 = 10.0
alpha0 = 0.5
sigma = 1.0

[simulation]
t_end = 0.2
n_points = 21
"""


@pytest.fixture
def panda_circle(tmp_path) -> Path:
    pytest.importorskip("pinocchio")
    path = tmp_path / "panda-circle.toml"
    path.write_text(PANDA_CIRCLE)
    return path


# --------------------------------------------------------------------------- #
# effort limits
# --------------------------------------------------------------------------- #
def test_a_urdf_scenario_has_its_urdfs_effort_limits_and_the_seeds_have_none():
    pin = pytest.importorskip("pinocchio")
    pb = load_scenario("ur5-payload", ["simulation.t_end=0.1"]).build()
    from robustrack.plants import example_robot_urdf

    urdf = np.array(pin.buildModelFromUrdf(example_robot_urdf("ur5")).effortLimit, dtype=float)
    assert np.array_equal(effort_limits(pb), urdf) and urdf.tolist() == [150.0, 150.0, 150.0, 28.0, 28.0, 28.0]
    assert pb.actuators.per_joint
    # an [actuators] table given by the user is kept: limits of its own, or a general B (per actuator, not joint)
    mine = load_scenario("ur5-payload", [f"actuators.B={EYE6}", "actuators.tau_max=[100]"]).build()
    assert effort_limits(mine).tolist() == [100.0] * 6
    # the reference runs (the seed scenarios, no URDF robot) have none: unchanged
    assert effort_limits(load_scenario("triple-pendulum").build()) is None
    assert effort_limits(load_scenario("triple-pendulum-underactuated").build()) is None  # B is 3 × 2


def test_a_robot_built_in_a_script_has_its_urdfs_effort_limits_unless_told_none():
    pin = pytest.importorskip("pinocchio")
    from robustrack.controllers import GSS
    from robustrack.plants import example_robot_urdf
    from robustrack.plants.urdf import URDFPlant
    from robustrack.tracking import TrackingProblem

    plant = URDFPlant(example_robot_urdf("ur5"))
    q0 = np.array([0.0, -1.2, 1.4, -1.5, -1.57, 0.0])
    pb = TrackingProblem(plant, None, GSS(K=5.0, gamma_prime=3.3), q0, np.zeros(6), (0.0, 0.1))
    urdf = np.array(pin.buildModelFromUrdf(example_robot_urdf("ur5")).effortLimit, dtype=float)
    assert np.array_equal(effort_limits(pb), urdf) and pb.actuators.per_joint  # as a `urdf` scenario has them
    assert np.array_equal(effort_limits(pb.replace(t_span=(0.0, 0.2))), urdf)  # kept by replace
    # None says "no actuators": the force acts unclipped, as before
    assert effort_limits(TrackingProblem(plant, None, None, q0, np.zeros(6), (0.0, 0.1), actuators=None)) is None
    # a plant that declares no limits (a pendulum of the seeds) gets none
    from robustrack.plants import NLinkPendulum

    swing = TrackingProblem(NLinkPendulum(m=(1.0,), L=(1.0,)), None, None, [0.1], [0.0], (0.0, 0.1))
    assert swing.actuators is None
    with pytest.raises(ParameterError, match='`actuators` must be a robustrack.tracking.Actuators, None or "auto"'):
        TrackingProblem(plant, None, None, q0, np.zeros(6), (0.0, 0.1), actuators="motors")


def test_effort_exceeded_names_each_joint_its_peak_and_when():
    t = np.linspace(0.0, 1.0, 11)
    tau = np.zeros((11, 3))
    tau[:, 0] = 10 * np.sin(np.pi * t)       # peaks 10 at t = 0.5, over 8 from t = 0.3 to 0.7
    tau[:, 2] = -3.0 * t                     # reaches −3 at t = 1, over 2.5 from t = 0.9
    rows = effort_exceeded(t, tau, [8.0, 1.0, 2.5], ["a", "b", "c"])
    assert [r["joint"] for r in rows] == ["a", "c"]
    assert rows[0]["peak"] == pytest.approx(10.0) and rows[0]["t_peak"] == t[5] and rows[0]["first"] == t[3]
    assert rows[0]["fraction"] == pytest.approx(5 / 11)
    assert rows[1]["peak"] == pytest.approx(3.0) and rows[1]["first"] == t[9] and rows[1]["limit"] == 2.5
    assert effort_exceeded(t, tau, [np.inf, 1.0, 3.0]) == []


def test_a_run_over_a_limit_saturates_says_the_joint_and_the_controller_gives_its_force(capsys):
    """ur5-payload with the shoulder-lift motor limited to 43 N·m (the nominal motion asks ~44): the run saturates,
    a LimitNotice names the joint, the time and the peak, and the Controller (which clips at the same limits) gives
    the simulation's applied force Qᶜ + Qᵘ at its states — the force computed without actuators, clipped."""
    pytest.importorskip("pinocchio")
    sets = ["simulation.t_end=0.4", "simulation.n_points=41", "simulation.uncompensated=false",
            f"actuators.B={EYE6}", "actuators.tau_max=[150,43,150,28,28,28]"]
    pb = load_scenario("ur5-payload", sets).build()
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        r = pb.simulate()
    said = [str(w.message) for w in seen if issubclass(w.category, LimitNotice) and "effort limits" in str(w.message)]
    assert len(said) == 1 and "shoulder_lift_joint asked" in said[0] and "limit 43 N·m" in said[0]
    assert "shoulder_pan_joint" not in said[0]
    demand = r.metrics.max_abs_tau_demand_per_actuator
    assert demand[1] > 43.0 and max(r.metrics.max_abs_tau_per_actuator) <= 150.0
    assert r.metrics.max_abs_tau_per_actuator[1] == 43.0 and r.metrics.bounds_held is None  # not judged
    ctrl = pb.controller()
    free = pb.replace(actuators=None).controller()
    applied = r.Qc + r.Qu
    worst, clipped = 0.0, 0
    for k in range(r.t.size):
        tau = ctrl(r.t[k], r.qc[k], r.qcd[k])
        unlimited = free(r.t[k], r.qc[k], r.qcd[k])
        want = np.clip(unlimited, -pb.actuators.tau_max, pb.actuators.tau_max)
        assert np.array_equal(tau, want)  # the controller's clipping is np.clip of the unlimited force
        worst = max(worst, float(np.abs(tau - applied[k]).max() / np.abs(unlimited).max()))
        clipped += ctrl.saturated
    # the same formulas in another order (compiled kernels against the assembly): 1e-12 of the unclipped force (the
    # saturated law asks up to ~1e5 N·m, whose rounding reaches the joints left unclipped through M u)
    assert worst <= 1e-12 and clipped > 0


def test_the_run_prints_peak_effort_per_joint_against_its_limit(capsys):
    pytest.importorskip("pinocchio")
    from robustrack.cli import main

    assert main(["run", "ur5-payload", "--set", "simulation.t_end=0.2", "--set", "simulation.n_points=21",
                 "--set", f"actuators.B={EYE6}", "--set", "actuators.tau_max=[150,43,150,28,28,28]"]) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if "effort: peak |τ| / limit per joint" in x)
    assert "shoulder_lift_joint" in line and "/43 !" in line and "/150," in line
    assert "effort limits EXCEEDED (saturated)" in out and "shoulder_lift_joint asked" in out


# --------------------------------------------------------------------------- #
# redundant robots
# --------------------------------------------------------------------------- #
def test_a_redundant_robot_is_said_before_running(panda_circle):
    """The 7-joint Panda (fingers locked) held on a plane, a circle and an orientation: 6 rows, rank 6 < 7 — one free
    direction, said when the nominal run starts (before any integration); the UR5's 6 rows on 6 joints say nothing."""
    pb = load_scenario(str(panda_circle)).build()
    A = pb.constraint.matrices(pb.q0, pb.qd0, 0.0)[0]
    assert A.shape == (6, 7) and np.linalg.matrix_rank(A) == 6 and free_directions(pb.constraint, pb.q0, pb.qd0, 0.0) == 1
    from robustrack.tracking import simulate as sim

    calls = []
    real = sim.integrate_nominal
    with warnings.catch_warnings(record=True) as seen, pytest.MonkeyPatch.context() as mp:
        warnings.simplefilter("always")
        mp.setattr(sim, "integrate_nominal", lambda *a, **k: (calls.append(len(seen)), real(*a, **k))[1])
        pb.nominal_run()
        pb.nominal_run()  # once per problem
    said = [str(w.message) for w in seen if issubclass(w.category, RedundancyNotice)]
    assert len(said) == 1 and "rank 6 on the robot's 7 joints: 1 direction of motion is left free" in said[0]
    assert calls and calls[0] >= 1  # said before the nominal integration started
    ur5 = load_scenario("ur5-plane-circle", ["simulation.t_end=0.1"]).build()
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        ur5.nominal_run()
    assert not [w for w in seen if issubclass(w.category, RedundancyNotice)]


# --------------------------------------------------------------------------- #
# the Panda with locked fingers in MuJoCo
# --------------------------------------------------------------------------- #
def test_the_panda_with_locked_fingers_runs_in_mujoco(panda_circle):
    """The docs' recipe (fingers locked) as the actual plant in MuJoCo: the loop runs, its error agrees with
    robustrack's own sampled run (the whole τ held against u held: ~h² effects, 7.5e-7 rad measured at 500 Hz)."""
    pytest.importorskip("mujoco")
    from robustrack.loop.mujoco import run_mujoco

    pb = load_scenario(str(panda_circle), ["simulation.uncompensated=false"]).build()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RedundancyNotice)
        r = pb.simulate()
        mj = run_mujoco(pb)
    assert mj.success and mj.q.shape[1] == 7
    assert abs(mj.max_abs_e() - r.metrics.max_abs_e) < 1e-5 * max(1.0, r.metrics.max_abs_e) + 2e-6


def test_the_reports_effort_figure_draws_each_joints_limits():
    pytest.importorskip("pinocchio")
    from robustrack.reports.report import _effort_figures, _run_units

    pb = load_scenario("ur5-payload", ["simulation.t_end=0.2", "simulation.n_points=21",
                                       "simulation.uncompensated=false", f"actuators.B={EYE6}",
                                       "actuators.tau_max=[150,43,150,28,28,28]"]).build()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LimitNotice)
        r = pb.simulate()
    (effort,) = _effort_figures(r, _run_units(r, pb.nominal))  # what report_figures adds after "forces"
    assert effort.name == "effort"
    assert "shoulder_lift_joint" in effort.caption and "the motors saturated" in effort.caption
    axes = effort.figure.axes
    assert len(axes) == 6
    for ax, lim in zip(axes, [150, 43, 150, 28, 28, 28]):
        levels = sorted(line.get_ydata()[0] for line in ax.lines if line.get_linestyle() == "--")
        assert levels == [-lim, lim]
    trace = axes[1].lines[0].get_ydata()
    assert np.abs(trace).max() == 43.0  # the applied shoulder torque runs along its limit
    # no limits, no figure (the reference runs draw what they drew)
    assert _effort_figures(r.with_info(actuators=None), {"Q": "N·m"}) == []


def test_the_monte_carlo_summary_puts_each_joints_peak_beside_its_limit(capsys, tmp_path):
    pytest.importorskip("pinocchio")
    from robustrack.campaigns.store import CampaignStore
    from robustrack.cli import main

    store = tmp_path / "mc.sqlite"
    args = ["montecarlo", "ur5-payload", "--samples", "3", "--workers", "1", "--store", str(store),
            "--set", "simulation.t_end=0.4", "--set", f"actuators.B={EYE6}",
            "--set", "actuators.tau_max=[150,42,150,28,28,28]"]
    assert main(args) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if "peak |τ| / limit" in x)
    assert "shoulder_lift_joint" in line and "/42," in line and "elbow_joint" in line
    assert "effort limits EXCEEDED (the motors saturated) in" in out and "shoulder_lift_joint in" in out
    # what the line is made of: each sample's peak per joint, kept in the store
    records = CampaignStore.read(store).records()
    assert len(records) == 3 and all(len(r.max_abs_tau) == 6 for r in records)
    assert max(r.max_abs_tau[1] for r in records) > 42.0 >= max(r.max_abs_tau[4] for r in records)


def test_the_campaign_summarys_effort_entry_counts_the_samples_over_a_limit():
    from robustrack.campaigns.loop import SampleRecord
    from robustrack.campaigns.montecarlo import summarize

    def rec(i, tau):
        return SampleRecord(i, (0.0,), True, 1e-3, 1e-2, 1.0, True, max_abs_tau=tau)

    records = [rec(0, (10.0, 1.0)), rec(1, (30.0, 1.0)), rec(2, (5.0, 3.0)), rec(3, (25.0, 2.5))]
    bounds = {"e": 1.0, "edot": 1.0, "effort_limits": {"joints": ["a", "b"], "limits": [20.0, 2.0]}}
    effort = summarize(records, 4, bounds=bounds)["effort"]
    assert effort["max"] == [30.0, 3.0] and effort["limits"] == [20.0, 2.0]
    assert effort["over_per_joint"] == [2, 2] and effort["samples_over"] == 3 and effort["measured"] == 4
    assert "effort" not in summarize(records, 4, bounds={"e": 1.0, "edot": 1.0})


def test_a_store_written_before_the_peaks_per_joint_is_read_and_resumed(tmp_path):
    """A campaign store whose samples table lacks ``max_abs_tau`` (written by an earlier robustrack): read with None
    for it, and opened for writing it gains the column, keeping its samples."""
    import sqlite3

    from robustrack.campaigns.loop import SampleRecord
    from robustrack.campaigns.store import CampaignStore

    path = tmp_path / "old.sqlite"
    store = CampaignStore.open(path, {"scenario": "x"})
    store.add([SampleRecord(0, (0.1,), True, 1e-3, 1e-2, 1.0, True)])
    store.close()
    db = sqlite3.connect(str(path))
    with db:
        db.execute("ALTER TABLE samples DROP COLUMN max_abs_tau")  # as an earlier robustrack wrote it
    db.close()
    assert CampaignStore.read(path).records()[0].max_abs_tau is None
    store = CampaignStore.open(path, {"scenario": "x"})
    store.add([SampleRecord(1, (0.2,), True, 1e-3, 1e-2, 1.0, True, max_abs_tau=(3.0, 4.0))])
    store.close()
    records = CampaignStore.read(path).records()
    assert [r.max_abs_tau for r in records] == [None, (3.0, 4.0)] and records[0].dm == (0.1,)
