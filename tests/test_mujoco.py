"""MuJoCo as the actual plant (robustrack.loop.mujoco): its model is the URDFPlant's, and the designed controller
run against it in a fixed-rate loop reproduces robustrack's own sampled run.

Independent truth: MuJoCo's own rigid-body algorithms and integrator, on the model written from the same URDF.
"""

from __future__ import annotations

import numpy as np
import pytest

mujoco = pytest.importorskip("mujoco")
pytest.importorskip("pinocchio")

from robustrack.errors import ScenarioError  # noqa: E402
from robustrack.loop.mujoco import mujoco_model, run_mujoco  # noqa: E402
from robustrack.plants import URDFPlant, example_robot_urdf  # noqa: E402
from robustrack.scenarios import load_scenario  # noqa: E402


#: The docs' Panda recipe (docs/guide/robot.md): the fingers locked, here off their neutral 0 so that a held position
#: that MuJoCo's model put elsewhere would move the payload's frame and be seen; and a revolute joint (the last wrist
#: joint) locked at 0.7 rad, which turns the hand and its payload.
PANDA_FINGERS = {"panda_finger_joint1": 0.03, "panda_finger_joint2": 0.01}
PANDA_WRIST = {"panda_joint7": 0.7, **PANDA_FINGERS}


@pytest.mark.parametrize("robot, payload, scaled, locked", [
    ("ur5", 2.4, False, None), ("panda", 1.0, False, None), ("ur5", 0.5, True, None),
    ("panda", 1.0, False, PANDA_FINGERS), ("panda", 2.0, True, PANDA_WRIST)])
def test_mujocos_mass_matrix_and_forces_are_the_urdf_plants(robot, payload, scaled, locked):
    # two implementations of CRBA/RNEA in double precision on one model: 1e-12 relative is ~5000 ulp of slack.
    # Locked joints: welded in MuJoCo's model at their held positions, reduced out of Pinocchio's (buildReducedModel)
    plant = URDFPlant(example_robot_urdf(robot), payload_mass=payload, payload_com=[0.0, 0.01, 0.05], locked=locked,
                      payload_frame="panda_hand" if locked else None)
    if scaled:  # an actual plant's link masses (a campaign's sample): MuJoCo's model carries them
        first, third = plant.robot.bodies[0], plant.robot.bodies[2]
        plant = plant.replace(**{first: 1.3 * plant.params[first], third: 0.8 * plant.params[third]})
    model, text = mujoco_model(plant)
    assert "<visual" not in text and "<mimic" not in text
    data = mujoco.MjData(model)
    rng = np.random.default_rng(0)
    for _ in range(20):
        q, qd = rng.uniform(-1.5, 1.5, plant.n), rng.uniform(-1.0, 1.0, plant.n)
        data.qpos[:], data.qvel[:] = q, qd
        mujoco.mj_forward(model, data)
        M = np.zeros((plant.n, plant.n))
        mujoco.mj_fullM(model, data, M)
        Mr, Qr = plant.mass_matrix(q, 0.0), plant.given_force(q, qd, 0.0)
        assert np.abs(M - Mr).max() <= 1e-12 * np.abs(Mr).max()
        assert np.abs(data.qfrc_passive - data.qfrc_bias - Qr).max() <= 1e-12 * max(1.0, np.abs(Qr).max())


@pytest.fixture(scope="module")
def ur5_in_mujoco():
    """ur5-payload at 1 kHz for 1 s: (problem, robustrack's sampled run, the MuJoCo loop's run)."""
    pb = load_scenario("ur5-payload", ["compensator.sample_period=1e-3", "simulation.t_end=1.0",
                                       "simulation.uncompensated=false"]).build()
    return pb, pb.simulate(), run_mujoco(pb)


def test_the_controller_against_mujoco_reproduces_robustracks_held_run(ur5_in_mujoco):
    # robustrack holds u (Qᶜ(t) + M(q_c) u continuous); the MuJoCo loop holds the whole τ, as a robot does, and
    # integrates with RK4 at h/10: at 1 kHz the peaks agree to ~1e-7 rad (the issue asks 1e-6)
    pb, r, mj = ur5_in_mujoco
    assert mj.success and not mj.limits_hit
    assert abs(mj.max_abs_e() - r.metrics.max_abs_e) < 1e-6


def test_the_payload_is_identified_from_mujocos_log_of_q_qd_and_the_held_torque(ur5_in_mujoco):
    """MuJoCo as the robot: its log (q, q̇ at the samples, the τ held on each interval) identifies the actual payload
    (2.4 kg at (0, 0, 0.05) m) with `held=True`, the left rule exact for a held τ. What is left is MuJoCo's RK4 at
    h/10 and the quadrature of the smooth terms: measured 2e-8 kg and 6e-8 m; 1e-5 asked. Taken as a smooth force
    instead, the staircase costs more than three decades (7e-5 kg, 1.9e-3 m): the test asks it to be 10× worse."""
    import warnings

    from robustrack.identification import PoorExcitation
    from robustrack.identification.payload import identify_payload

    pb, _, mj = ur5_in_mujoco
    tau = np.vstack([mj.tau, mj.tau[-1:]])  # held on [t_k, t_k+1); the last sample's value is no left end
    log = {"t": mj.t, "qc": mj.q, "qcd": mj.qd, "Qc": np.zeros_like(tau), "Qu": tau}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PoorExcitation)  # the payload's zero components: estimates ≈ 0 ± small
        held = identify_payload(log, pb.nominal, held=True)
        smooth = identify_payload(log, pb.nominal)
    assert pb.actual.params["payload_mass"] == 2.4
    assert held.mass == pytest.approx(2.4, rel=1e-5) and np.allclose(held.com, [0, 0, 0.05], rtol=0, atol=1e-5)
    assert abs(smooth.mass - 2.4) > 10 * abs(held.mass - 2.4)


def test_a_noisy_loop_diverges_in_mujoco_too_and_the_scenario_checks_its_engine():
    pb = load_scenario("ur5-payload", ["compensator.sample_period=1e-3", "simulation.t_end=0.2",
                                       "simulation.uncompensated=false", "sensor.q_noise=1e-4",
                                       "sensor.velocity=difference"]).build()
    mj = run_mujoco(pb.replace(actuators=None))  # no effort limits: τ grows without bound
    assert not mj.success and "diverged" in mj.message
    # with the UR5's effort limits (a urdf scenario's default) the motors clip τ, as a robot's drivers do: the loop
    # runs to the end, its τ chattering between the limits (measured: max‖e‖∞ 1.1e-2 rad over the 0.2 s)
    mj = run_mujoco(pb)
    limits = pb.actuators.tau_max
    assert mj.success and np.all(np.abs(mj.tau) <= limits) and np.any(np.abs(mj.tau).max(axis=0) == limits)
    with pytest.raises(ScenarioError, match="compensator.sample_period"):
        load_scenario("ur5-payload", ["actual.engine=mujoco"])
    with pytest.raises(ScenarioError, match="actual.engine"):
        load_scenario("ur5-payload", ["actual.engine=drake", "compensator.sample_period=1e-3"])


def test_the_uncompensated_copy_stops_at_the_first_joint_limit():
    # robustrack's actual UR5 under the open-loop Qᶜ(t) drifts until a joint reaches its URDF limit: the copy is
    # reported up to there (the robot stops; MuJoCo, which enforces the limits, stops the drift near 7.6 rad too)
    from robustrack.plants.base import first_limit

    pb = load_scenario("ur5-payload", ["simulation.t_end=3.0", "simulation.n_points=301"]).build()
    r = pb.simulate()
    stop = r.info["uncompensated_limit"]
    lo, hi = pb.actual.position_limits
    assert stop is not None and stop["joint"] in pb.actual.coordinates
    inside = ~np.isnan(r.qa[:, 0])
    assert np.all((r.qa[inside] >= lo) & (r.qa[inside] <= hi))  # nothing reported beyond the limit
    assert np.all(r.t[~inside] > stop["t"]) and (~inside).any()
    assert first_limit(np.array([0.0, 1.0]), np.array([[0.0] * 6, [10.0] + [0.0] * 5]), (lo, hi)) == (1.0, 0)
    # the triple pendulum declares no limits: its drift is reported whole, as before
    assert load_scenario("triple-pendulum").build().actual.position_limits is None


def test_a_campaign_with_mujoco_as_the_actual_plant_samples_mujoco_and_agrees_with_robustracks():
    """`[actual] engine = "mujoco"`: each sampled actual plant (here the payload mass) is written as a MuJoCo model
    and run in the fixed-rate loop; its peaks agree with robustrack's own sampled run of the same plant to the 1e-6
    rad of the held-run comparison above, and the store's description names the engine."""
    from robustrack.loop.mujoco import MujocoProblem
    from robustrack.scenarios.campaign import run_montecarlo

    sets = ["compensator.sample_period=1e-3", "simulation.t_end=0.3", "simulation.uncompensated=false"]
    own = run_montecarlo("ur5-payload", 2, seed=3, overrides=sets, workers=1, progress=None)
    mj = run_montecarlo("ur5-payload", 2, seed=3, overrides=[*sets, "actual.engine=mujoco"], workers=1,
                        progress=None)
    assert mj.settings["loop"]["actual_engine"]["engine"] == "mujoco"
    from robustrack.reports.text import format_montecarlo

    assert "actual plants run against MuJoCo (RK4, 10 steps a sample" in format_montecarlo(mj.summary()).splitlines()[0]
    for a, b in zip(own.records, mj.records):
        assert a.dm == b.dm and a.success and b.success
        assert abs(a.max_abs_e - b.max_abs_e) < 1e-6 and b.held == a.held
    with pytest.raises(Exception, match="integral gain"):
        MujocoProblem.of(load_scenario("ur5-payload", [*sets, "compensator.type=gd", "compensator.gd.Ki=1.0"]).build())


def test_mujocos_held_torque_loop_has_its_own_bound_with_the_held_torques_term():
    """The sampled bound's theorem holds u and applies Qᶜ(t) + M(q_c) u continuously; MuJoCo's loop holds the whole
    τ = Qᶜ(t_k) + M(q̂) u (docs/theory/sensing.md, "A loop that holds τ"): its GSS bound adds that term to Γ — a
    larger box, still guaranteed here — and a law whose box does not count it is not guaranteed in MuJoCo."""
    from robustrack.campaigns.loop import campaign_bounds
    from robustrack.loop.mujoco import MujocoProblem

    pb = load_scenario("ur5-payload-sensed", ["simulation.t_end=0.2", "simulation.n_points=21"]).build()
    run = pb.nominal_run()
    own = pb.promised_bounds(run)
    assert own.coverage.startswith("guaranteed for this loop") and "held_torque" not in own.terms
    mj = MujocoProblem.of(pb)
    theirs = mj.promised_bounds(run)
    assert theirs.coverage.startswith("guaranteed for this loop") and theirs.terms["held_torque"] > 0
    assert theirs.e > own.e and theirs.edot > own.edot  # a larger disturbance: a larger least box
    assert campaign_bounds(mj)["coverage"] == theirs.coverage  # what the campaign's "guaranteed" count reads
    from robustrack.scenarios.tracking_kinds import _held_torque_bounds

    beside = _held_torque_bounds(pb, run, own.to_dict())  # what `run` judges MuJoCo's run against, beside robustrack's
    assert (beside["e"], beside["edot"], beside["coverage"]) == (theirs.e, theirs.edot, theirs.coverage)
    # a 5-ms delay: robustrack's loop (u held) still has its box, with the held τ's term no box passes — MuJoCo's
    # runs are measured against the former, said not guaranteed
    late = load_scenario("ur5-payload-sensed", ["simulation.t_end=0.2", "simulation.n_points=21",
                                                "sensor.delay=5e-3"]).build()
    late_run = late.nominal_run()
    own, theirs = late.promised_bounds(late_run), MujocoProblem.of(late).promised_bounds(late_run)
    assert own.coverage.startswith("guaranteed") and (theirs.e, theirs.edot) == (own.e, own.edot)
    assert theirs.coverage.startswith("not guaranteed: the loop holds the whole τ") and "no box passes" in theirs.coverage
    gd = MujocoProblem.of(load_scenario("ur5-payload-sensed", ["simulation.t_end=0.2", "compensator.type=gd",
                                                               "compensator.gd.Ki=0"]).build())
    assert not gd.promised_bounds().coverage.startswith("guaranteed")


def test_run_saves_mujocos_log_and_identify_reads_it(tmp_path, capsys):
    """The command line end to end: `run --save` with actual.engine = "mujoco" keeps MuJoCo's log beside robustrack's
    run, `identify --log mujoco` finds the payload in it (the Python pipeline's tolerance and reasoning:
    test_the_payload_is_identified_from_mujocos_log_of_q_qd_and_the_held_torque), and a run without the log is
    refused saying how to save one."""
    import json

    from robustrack.cli import main

    run, plain = tmp_path / "mj.npz", tmp_path / "plain.npz"
    sets = ["--set", "compensator.sample_period=1e-3", "--set", "simulation.t_end=1",
            "--set", "simulation.uncompensated=false"]
    assert main(["run", "ur5-payload", *sets, "--set", "actual.engine=mujoco", "--save", str(run)]) == 0
    with np.load(run) as z:
        assert z["mujoco_t"].shape == (1001,) and z["mujoco_tau"].shape == (1000, 6)
    assert main(["identify", str(run), "--log", "mujoco", "--json", str(tmp_path / "id.json")]) == 0
    doc = json.loads((tmp_path / "id.json").read_text())
    assert doc["log"] == "mujoco" and "MuJoCo's log" in capsys.readouterr().out
    assert doc["payload"]["mass"] == pytest.approx(2.4, rel=1e-5)
    assert main(["run", "ur5-payload", *sets, "--save", str(plain)]) == 0
    capsys.readouterr()
    assert main(["identify", str(plain), "--log", "mujoco"]) == 2
    assert "holds no MuJoCo log: save the run with it" in capsys.readouterr().err
