"""A posture task in the null space of a requirement (robustrack.posture; docs/guide/robot.md, "Redundant robots").

Independent truths: the closed form of Peters, Mistry, Udwadia, Nakanishi & Schaal (2008, eq. 11 with the metric M),
q̈ = q̈_d + M^{-1/2} (A M^{-1/2})⁺ (b − A q̈_d), computed here with scipy's matrix square root (the class builds
[A; N M] rows for the fundamental equation instead, never a square root); the URDF's joint ranges and speed limits.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.linalg

from robustrack.errors import ParameterError
from robustrack.plants import NLinkPendulum, pendulum_energy_constraint
from robustrack.posture import PostureTask
from robustrack.tracking.rhs import nominal_motion


def test_the_motion_is_the_closest_to_the_posture_that_meets_the_requirement():
    plant = NLinkPendulum(m=(1.0, 1.5, 0.7), L=(1.0, 0.8, 1.2))
    energy = pendulum_energy_constraint(1.0, m1=1.0)
    task = PostureTask(energy, plant, kp=[4.0, 9.0, 1.0], kd=3.0, center=[0.1, -0.2, 0.3])
    rng = np.random.default_rng(5)
    for _ in range(20):
        q, qd, t = rng.uniform(-1, 1, 3), rng.uniform(-1, 1, 3), rng.uniform(0, 2)
        got = nominal_motion(plant, task, q, qd, t).qdd
        M, Q = plant.mass_matrix(q, t), plant.given_force(q, qd, t)
        A, b = energy.matrices(q, qd, t)
        want_d = np.linalg.solve(M, Q) - np.array([4.0, 9.0, 1.0]) * (q - [0.1, -0.2, 0.3]) - 3.0 * qd
        Mh = np.real(scipy.linalg.sqrtm(np.linalg.inv(M)))  # M^{-1/2}
        want = want_d + Mh @ np.linalg.pinv(A @ Mh) @ (b - A @ want_d)
        # two formulas for one linear-algebra answer on a 3 × 3 system of condition ~10²: 1e-10 of |q̈| leaves a
        # margin of ~10⁴ ulp-scale errors; a missing N or M would change q̈ at the 1e-1 level
        assert np.abs(got - want).max() <= 1e-10 * max(1.0, np.abs(want).max())
        assert abs(A @ got - b).max() <= 1e-10 * max(1.0, abs(b).max())  # the requirement first, exactly
    # the free directions differ from Gauss's plain choice: the posture acts where the requirement leaves room
    assert np.abs(got - nominal_motion(plant, energy, q, qd, t).qdd).max() > 1e-2


def test_bad_gains_and_centers_are_refused():
    plant = NLinkPendulum(m=(1.0, 1.0), L=(1.0, 1.0))
    energy = pendulum_energy_constraint(1.0, n=2, m1=1.0)
    with pytest.raises(ParameterError, match="`kp` must be one number or 2 numbers, each >= 0"):
        PostureTask(energy, plant, kp=-1.0)
    with pytest.raises(ParameterError, match="`center` must have 2 numbers"):
        PostureTask(energy, plant, center=[0.0])
    task = PostureTask(energy, plant)  # no position limits: centered at 0
    assert task.center.tolist() == [0.0, 0.0] and task.m == 2
    with pytest.raises(ParameterError, match="leaves no direction free"):
        PostureTask(PostureTask(energy, plant), plant)


@pytest.fixture
def panda_circle(tmp_path):
    pytest.importorskip("pinocchio")
    from test_robot_limits import PANDA_CIRCLE

    path = tmp_path / "panda-circle.toml"
    path.write_text(PANDA_CIRCLE)
    return path


def test_the_panda_circle_keeps_its_joints_in_range_with_the_posture(panda_circle):
    """The 7-joint Panda's hand on a 5-cm circle, orientation held (6 rows): without a posture the free direction
    drifts — joint 1 to −6.1 rad, joints at 8–21 rad/s within 3 s (the issue's −6 rad, 18 rad/s); with the
    joint-centering posture (K_p 10, K_d 2√10) every joint stays inside its range and speed limit, and the hand's
    rows hold to the same residual."""
    from robustrack.scenarios import load_scenario

    pb = load_scenario(str(panda_circle), ["simulation.t_end=3.0", "compensator.sample_period=0"]).build()
    lo, hi = pb.nominal.position_limits
    speed = pb.nominal.velocity_limit
    T = np.linspace(0.0, 3.0, 601)
    runs = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, c in (("plain", pb.constraint), ("posture", PostureTask(pb.constraint, pb.nominal))):
            Y = pb.replace(constraint=c, backend="numpy" if name == "posture" else "auto").nominal_run().solution(T)
            runs[name] = (Y[:, :7], Y[:, 7:])
    q, qd = runs["plain"]
    assert q[:, 0].min() < lo[0] and np.any(np.abs(qd).max(axis=0) > speed)  # the drift the notice warns of
    q, qd = runs["posture"]
    assert np.all(q >= lo) and np.all(q <= hi) and np.all(np.abs(qd) <= speed)
    assert np.abs(pb.constraint.residual(q, qd, T)).max() < 1e-8  # the circle, plane and orientation still held


def test_a_urdf_scenario_takes_the_posture_from_its_table(panda_circle):
    from robustrack.errors import ScenarioError
    from robustrack.scenarios import load_scenario

    pb = load_scenario(str(panda_circle), ["constraint.posture.kp=10", "constraint.posture.kd=6"]).build()
    assert isinstance(pb.constraint, PostureTask) and (pb.constraint.kp, pb.constraint.kd) == (10.0, 6.0)
    lo, hi = pb.nominal.position_limits
    assert np.allclose(pb.constraint.center, 0.5 * (lo + hi))
    plain = load_scenario(str(panda_circle)).build()
    assert not isinstance(plain.constraint, PostureTask)  # kp = kd = 0: none
    assert np.array_equal(pb.q0, plain.q0)  # the start is the requirement's own
    with pytest.raises(ScenarioError, match="constraint.posture.kp` must be a number >= 0"):
        load_scenario(str(panda_circle), ["constraint.posture.kp=-1"])
