"""A robot as a robot (issue 28 item 4): joints locked (a reduced model), the URDF's effort limits as the actuator
limits, its velocity limits checked along a run — each against an independent truth (Pinocchio's full model, the
URDF file's own text)."""

import warnings
import xml.etree.ElementTree as ET

import numpy as np
import pytest
import sympy as sp

pin = pytest.importorskip("pinocchio")

from robustrack.errors import LimitNotice, ParameterError  # noqa: E402
from robustrack.plants import URDFPlant, example_robot_urdf  # noqa: E402

PANDA = "panda_description/urdf/panda.urdf"
FINGERS = {"panda_finger_joint1": 0.02, "panda_finger_joint2": 0.03}


def test_locked_fingers_are_the_full_panda_with_the_fingers_held():
    path = example_robot_urdf(PANDA)
    arm = URDFPlant(path, locked=FINGERS)
    assert arm.n == 7 and "panda_finger_joint1" not in arm.coordinates
    full = pin.buildModelFromUrdf(path)
    data = full.createData()
    rng = np.random.default_rng(5)
    for _ in range(5):
        q7, v7 = rng.uniform(-1.5, 1.5, 7), rng.uniform(-1, 1, 7)
        q, v = np.r_[q7, 0.02, 0.03], np.r_[v7, 0.0, 0.0]
        M = pin.crba(full, data, q)
        M = np.triu(M) + np.triu(M, 1).T
        # fingers held (q̈ = q̇ = 0 there): the first 7 rows of the full robot's dynamics are the reduced robot's;
        # two evaluations of one rigid-body algorithm on different trees: rounding only (entries ≤ ~100)
        assert np.abs(arm.mass_matrix(q7) - M[:7, :7]).max() < 1e-12
        D, F = np.asarray(full.damping)[:7], np.asarray(full.friction)[:7]  # the URDF's <dynamics>, as URDFPlant's Q
        Q = -pin.nonLinearEffects(full, data, q, v)[:7] - D * v7 - F * np.sign(v7)
        assert np.abs(arm.given_force(q7, v7) - Q).max() < 1e-11
    with pytest.raises(ParameterError, match="no joint.*panda_finger_joint3.*panda_joint1"):
        URDFPlant(path, locked=["panda_finger_joint3"])


def _urdf_limits(path, names, key):
    """The <limit> attribute ``key`` of each joint, read from the URDF text itself."""
    joints = {j.get("name"): j for j in ET.parse(path).getroot().findall("joint")}  # not the transmissions' joints
    return np.array([float(joints[n].find("limit").get(key)) for n in names])


def test_effort_limits_are_the_default_actuator_limits():
    from robustrack.tracking import Actuators

    path = example_robot_urdf("ur5")
    ur5 = URDFPlant(path)
    act = Actuators.joint_torques(ur5)
    assert np.array_equal(act.B, np.eye(6))
    assert np.array_equal(act.tau_max, _urdf_limits(path, ur5.coordinates, "effort"))
    assert np.array_equal(ur5.velocity_limit, _urdf_limits(path, ur5.coordinates, "velocity"))
    assert np.array_equal(Actuators.joint_torques(ur5, tau_max=10.0).tau_max, np.full(6, 10.0))


def test_a_motion_beyond_the_velocity_limits_is_said_with_the_joint_and_the_time():
    from robustrack.requirements import JointTrajectory
    from robustrack.tracking import simulate_constrained

    ur5 = URDFPlant(example_robot_urdf("ur5"))
    t = sp.Symbol("t")
    home = [0.0, -1.2, 1.4, -1.5, -1.57, 0.0]
    fast = JointTrajectory([h + (4.0 * sp.sin(t) if i == 5 else 0) for i, h in enumerate(home)],
                           names=ur5.coordinates)  # wrist 3: q̇ = 4 cos t > 3.2 rad/s until t = acos(0.8)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        simulate_constrained(ur5, fast, home, [0, 0, 0, 0, 0, 4.0], (0.0, 1.0), n_points=101)
    said = [str(w.message) for w in caught if issubclass(w.category, LimitNotice)]
    assert len(said) == 1 and "'wrist_3_joint' exceeds its URDF velocity limit 3.2 rad/s" in said[0], said
    assert "first at t = 0 s" in said[0] and "up to 4 rad/s" in said[0]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        slow = JointTrajectory([h + 0.5 * sp.sin(t) for h in home], names=ur5.coordinates)
        simulate_constrained(ur5, slow, home, [0.5] * 6, (0.0, 0.5), n_points=11)
    assert not [w for w in caught if issubclass(w.category, LimitNotice)]


def test_a_scenario_locks_joints_and_takes_the_effort_limits(tmp_path):
    """``kind = "urdf"``: ``[plant] locked`` (and ``locked_at``) hold the Panda's fingers; ``[actuators] B = I``
    without ``tau_max`` takes the URDF's effort limits; a ``locked_at`` of the wrong length is named."""
    from robustrack.errors import ScenarioError
    from robustrack.scenarios import load_scenario

    eye = [[1.0 if i == j else 0.0 for j in range(7)] for i in range(7)]
    toml = f"""
[scenario]
name = "panda-held-fingers"
kind = "urdf"
[plant]
robot = "{PANDA}"
locked = ["panda_finger_joint1", "panda_finger_joint2"]
locked_at = [0.02, 0.03]
[reference]
home = [0.0, -0.5, 0.0, -2.0, 0.0, 1.5, 0.8]
amplitude = [0.2, 0.2, 0.2, 0.2, 0.2, 0.2, 0.2]
frequency = [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0]
[uncertainty]
gamma = 20.0
[actuators]
B = {eye}
[simulation]
t_end = 0.2
"""
    path = tmp_path / "panda.toml"
    path.write_text(toml)
    pb = load_scenario(str(path)).build()
    full = URDFPlant(example_robot_urdf(PANDA), locked=FINGERS)
    assert pb.nominal.coordinates == full.coordinates and pb.nominal.n == 7
    q = np.array([0.1, -0.4, 0.2, -1.9, 0.1, 1.4, 0.7])
    assert np.array_equal(pb.nominal.mass_matrix(q), full.mass_matrix(q))  # the same fingers' positions
    assert np.array_equal(pb.actuators.tau_max, _urdf_limits(example_robot_urdf(PANDA), full.coordinates, "effort"))
    path.write_text(toml.replace("locked_at = [0.02, 0.03]", "locked_at = [0.02]"))
    with pytest.raises(ScenarioError, match="`plant.locked_at` must give one position per joint"):
        load_scenario(str(path)).build()
