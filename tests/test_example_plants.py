"""The example plants of the seed papers against closed forms from the papers (KU, W 4.4, K, S).

Every truth here is independent of the code under test: a closed form printed in a
seed, a classical law (Euler's rigid-body equations, energy conservation, the
angle form of the pendulum), or finite differences of the raw constraint.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.integrate import solve_ivp

from robustrack.errors import ParameterError
from robustrack.mechanics import constrained_acceleration, solve_constrained
from robustrack.plants.base import Plant
from robustrack.plants.examples import (
    EXAMPLE_CONSTRAINTS,
    EXAMPLE_PLANTS,
    CartesianPendulum,
    ChaplyginSleigh,
    CoupledDuffing,
    FreeParticle,
    QuaternionRigidBody,
    RollingWheel,
    SpeedReducer,
    TwoEllipseParticles,
    TwoMassSprings,
    cartesian_pendulum_constraint,
    chaplygin_sleigh_constraint,
    coupled_duffing_constraint,
    free_particle_constraint,
    quaternion_matrix,
    quaternion_rigid_body_constraint,
    rolling_wheel_constraint,
    speed_reducer_constraint,
    two_ellipse_particles_constraint,
    two_mass_springs_constraint,
)

FAST = settings(max_examples=40, deadline=None)
reals = st.floats(-5.0, 5.0, allow_nan=False)
pos = st.floats(0.1, 10.0)


def motion(plant, con, q, qd, t=0.0):
    A, b = con.matrices(q, qd, t)
    return solve_constrained(plant.mass_matrix(q, t), plant.given_force(q, qd, t), A, b)


def integrate(plant, con, q0, qd0, t_end, t_eval):
    n = plant.n

    def rhs(t, y):
        q, qd = y[:n], y[n:]
        A, b = con.matrices(q, qd, t)
        qdd = constrained_acceleration(plant.mass_matrix(q, t), plant.given_force(q, qd, t), A, b,
                                       check=False)  # hot loop; inputs validated by the plant
        return np.concatenate([qd, qdd])

    sol = solve_ivp(rhs, (0.0, t_end), np.concatenate([q0, qd0]), method="DOP853",
                    rtol=1e-10, atol=1e-12, t_eval=t_eval)
    assert sol.success, sol.message
    return sol.t, sol.y[:n], sol.y[n:]


# ---------------------------------------------------------------- KU example 1, eq. 38
@FAST
@given(st.tuples(*[reals] * 6))
def test_free_particle_matches_ku38(s):
    q, qd = np.array(s[:3]), np.array(s[3:])
    plant = FreeParticle()
    mo = motion(plant, free_particle_constraint(plant), q, qd)
    x_d, z, z_d = qd[0], q[2], qd[2]
    truth = z_d * x_d / (1 + z * z) * np.array([-z, 1.0, 0.0])
    np.testing.assert_allclose(mo.qdd, truth, rtol=1e-10, atol=1e-12)


# ---------------------------------------------------------------- KU example 2, μ = 0
@FAST
@given(st.floats(-1.5, 1.5), st.floats(-3.0, 3.0))
def test_rigid_cartesian_pendulum_matches_angle_form(theta, thetad):
    plant = CartesianPendulum()
    L, g = 20.0, plant.g
    q = L * np.array([math.sin(theta), math.cos(theta)])  # y points down
    qd = L * thetad * np.array([math.cos(theta), -math.sin(theta)])
    mo = motion(plant, cartesian_pendulum_constraint(plant, L=L, mu=0.0), q, qd)
    thdd = -g / L * math.sin(theta)
    truth = L * np.array([math.cos(theta) * thdd - math.sin(theta) * thetad**2,
                          -math.sin(theta) * thdd - math.cos(theta) * thetad**2])
    np.testing.assert_allclose(mo.qdd, truth, rtol=1e-9, atol=1e-9)


def test_nonlinear_pendulum_conserves_energy():
    """KU Fig. 2 case (μ = −0.1, a = 4): a scleronomic ideal constraint does no work."""
    plant = CartesianPendulum()
    con = cartesian_pendulum_constraint(plant, mu=-0.1)
    t, q, qd = integrate(plant, con, np.array([0.0, 20.0]), np.array([4.0, 0.0]), 2.0,
                         np.linspace(0, 2, 21))
    energy = 0.5 * np.sum(qd**2, axis=0) - plant.g * q[1]
    assert np.max(np.abs(energy - energy[0])) < 1e-9 * abs(energy[0])
    assert np.max(np.abs(con.residual(q.T, qd.T, t))) < 1e-6


# ---------------------------------------------------------------- KU example 3
@FAST
@given(st.tuples(*[reals] * 4))
def test_duffing_unconstrained_motion_is_ku35ab(s):
    x1, x2, v1, v2 = s
    plant = CoupledDuffing()
    a1, a2 = plant.unconstrained_acceleration(np.array([x1, x2]), np.array([v1, v2]))
    m1, m2, k1, k2, kb1, kb2, c1, c2 = 2.0, 1.0, 10.0, 12.0, 1.0, 2.0, 0.1, 0.15
    d, dd = x1 - x2, v1 - v2
    terms_a = [m1 * a1, k1 * d, c1 * dd, kb1 * d**3]                      # KU (35a)
    terms_b = [m2 * a2, k2 * x2, -k1 * d, c2 * v2, -c1 * dd, kb2 * x2**3, -kb1 * d**3]  # (35b)
    for terms in (terms_a, terms_b):
        assert abs(sum(terms)) <= 1e-12 * (1 + sum(abs(x) for x in terms))


@pytest.mark.parametrize("alpha", [4.0, 0.4])
def test_duffing_tracks_decaying_sinusoid(alpha):
    plant = CoupledDuffing()
    con = coupled_duffing_constraint(plant, alpha=alpha)
    # KU ICs: x1 = x2 = 1, ẋ2 = 2; ẋ1 from d/dt(x1 − x2) = ṡ(0) = A ω = 2π.
    t, q, _ = integrate(plant, con, np.array([1.0, 1.0]), np.array([2.0 + 2 * math.pi, 2.0]),
                        10.0, np.linspace(0, 10, 2001))
    err = q[0] - q[1] - np.exp(-alpha * t) * np.sin(2 * math.pi * t)
    assert np.max(np.abs(err)) <= 1e-8


# ---------------------------------------------------------------- K: Chaplygin skate
@pytest.mark.parametrize("omega", [1.0, 2.5])
def test_chaplygin_sleigh_closed_form(omega):
    plant = ChaplyginSleigh()
    t, q, _ = integrate(plant, chaplygin_sleigh_constraint(plant), np.zeros(3),
                        np.array([0.0, 0.0, omega]), 10.0, np.linspace(0, 10, 501))
    w = omega
    x = np.sin(w * t) ** 2 / (2 * w * w)
    y = (w * t - 0.5 * np.sin(2 * w * t)) / (2 * w * w)
    np.testing.assert_allclose(q[0], x, atol=1e-8)
    np.testing.assert_allclose(q[1], y, atol=1e-8)
    np.testing.assert_allclose(q[2], w * t, atol=1e-8)


# ---------------------------------------------------------------- W 4.4.1 rolling wheel
@FAST
@given(pos, st.floats(0.1, 2.0), st.floats(0.0, 5.0), st.floats(0.05, 1.5), reals, reals)
def test_rolling_wheel_closed_form(m, R, Ic, beta, theta, thetad):
    plant = RollingWheel(m=m, R=R, I_c=Ic, g=9.81)
    q = np.array([theta, R * theta * math.sin(beta)])
    qd = np.array([thetad, R * thetad * math.sin(beta)])
    mo = motion(plant, rolling_wheel_constraint(plant, beta=beta), q, qd)
    assert mo.augmented  # M = diag(mR² + I_c, 0) is singular
    sb, g = math.sin(beta), 9.81
    thdd = m * g * R * sb / (m * R * R + Ic)                       # W (4.4.6)
    np.testing.assert_allclose(mo.qdd, [thdd, R * sb * thdd], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(mo.Qc, [m * g * R * sb, -m * g], rtol=1e-9, atol=1e-9)  # (4.4.9)


# ---------------------------------------------------------------- W 4.4.2 two masses, m1 = 0
@FAST
@given(pos, pos, pos, st.floats(0.0, 2.0), st.floats(0.0, 1.0), reals, reals, reals, reals)
def test_massless_node_gives_springs_in_series(m2, k1, k2, l10, d, x1, x2, v1, v2):
    plant = TwoMassSprings(m1=0.0, m2=m2, k1=k1, k2=k2, l10=l10, d=d)
    q, qd = np.array([x1, x2]), np.array([v1, v2])
    mo = motion(plant, two_mass_springs_constraint(plant), q, qd)
    x2dd = -k1 * k2 / (k1 + k2) * (x2 - l10 - d) / m2                # W (4.4.15)
    scale = abs(x2dd) + k1 * k2 / (k1 + k2) * (abs(x2) + l10 + d + 1) / m2
    assert abs(mo.qdd[1] - x2dd) <= 1e-9 * scale
    assert abs(mo.qdd[0] - k2 / (k1 + k2) * x2dd) <= 1e-9 * scale


# ---------------------------------------------------------------- W 4.4.4 quaternions
def _random_rotation_states(rng, n):
    u = rng.normal(size=(n, 4))
    u /= np.linalg.norm(u, axis=-1, keepdims=True)
    omega = rng.normal(scale=2.0, size=(n, 3))
    ud = 0.5 * np.einsum("...ki,...k->...i", quaternion_matrix(u), omega)  # u̇ = ½ Eᵀ ω
    return u, ud, omega


def test_quaternion_constraint_force_w4426():
    rng = np.random.default_rng(1)
    u, ud, omega = _random_rotation_states(rng, 300)
    J = rng.uniform(0.5, 5.0, size=(300, 3))
    plant = QuaternionRigidBody(J=J)
    mo = motion(plant, quaternion_rigid_body_constraint(plant), u, ud)
    assert np.all(mo.augmented)  # M = 4 Eᵀ J E has rank 3
    np.testing.assert_allclose(2 * np.einsum("...ki,...i->...k", quaternion_matrix(u), ud),
                               omega, atol=1e-12)  # ω = 2 E u̇ recovered
    truth = -2.0 * np.sum(omega * J * omega, axis=-1)[:, None] * u
    np.testing.assert_allclose(mo.Qc, truth, rtol=1e-8, atol=1e-9 * np.max(np.abs(truth)))


def test_quaternion_body_obeys_euler_equations():
    rng = np.random.default_rng(2)
    u, ud, omega = _random_rotation_states(rng, 200)
    J = np.array([1.0, 2.5, 4.0])
    torque = rng.normal(size=(200, 3))
    plant = QuaternionRigidBody(J=J, torque=torque)
    mo = motion(plant, quaternion_rigid_body_constraint(plant), u, ud)
    omega_d = 2 * np.einsum("...ki,...i->...k", quaternion_matrix(u), mo.qdd)  # Ė u̇ = 0
    euler = J * omega_d + np.cross(omega, J * omega)
    np.testing.assert_allclose(euler, torque, atol=1e-9)


# ---------------------------------------------------------------- W 4.4.5 two ellipses
def test_two_ellipses_constraint_forces_are_inverse_square():
    rng = np.random.default_rng(3)
    eps, p, c = np.array([0.6, 0.2]), np.array([1.0, 3.0]), np.array([1.5, -2.0])
    plant = TwoEllipseParticles(m1=1.3, m2=0.7)
    con = two_ellipse_particles_constraint(plant, eps=eps, p=p, c=c)
    th = rng.uniform(-math.pi, math.pi, size=(100, 2))
    r = p / (1 - eps * np.cos(th))             # r = ε x + p with x = r cos θ
    thd = c / r**2                              # r² θ̇ = c
    rd = -eps * c * np.sin(th) / p
    x, y = r * np.cos(th), r * np.sin(th)
    xd = rd * np.cos(th) - r * np.sin(th) * thd
    yd = rd * np.sin(th) + r * np.cos(th) * thd
    q = np.stack([x[:, 0], y[:, 0], x[:, 1], y[:, 1]], axis=-1)
    qd = np.stack([xd[:, 0], yd[:, 0], xd[:, 1], yd[:, 1]], axis=-1)
    assert np.max(np.abs(con.residual(q, qd))) < 1e-12  # states lie on the manifold
    mo = motion(plant, con, q, qd)
    k = c**2 / (p * r**3)                       # W (4.4.31): q̈_i = −c_i² /(p_i r_i³) (x_i, y_i)
    qdd = np.stack([-k[:, 0] * x[:, 0], -k[:, 0] * y[:, 0],
                    -k[:, 1] * x[:, 1], -k[:, 1] * y[:, 1]], axis=-1)
    m = np.array([1.3, 1.3, 0.7, 0.7])
    np.testing.assert_allclose(mo.qdd, qdd, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(mo.Qc, m * qdd, rtol=1e-9, atol=1e-12)  # (4.4.35)
    # central and inverse-square: |Qᶜ_i| r_i² = m_i c_i² / p_i
    mag = np.linalg.norm(mo.Qc.reshape(-1, 2, 2), axis=-1) * r**2
    np.testing.assert_allclose(mag, np.broadcast_to(np.array([1.3, 0.7]) * c**2 / p, mag.shape),
                               rtol=1e-9)


# ---------------------------------------------------------------- S §2 speed reducer
def test_speed_reducer_dalembert_motion():
    """S (2.2): x oscillates on its own; ½(a + b x²/r²) φ̇² is conserved; ψ̇ = x φ̇ / r."""
    plant = SpeedReducer(a=1.0, b=0.5, m=2.0, k=3.0)
    r = 0.4
    con = speed_reducer_constraint(plant, r=r)
    x0, xd0, phid0 = 0.8, -0.3, 1.7
    t, q, qd = integrate(plant, con, np.array([0.0, 0.0, x0]),
                         np.array([phid0, x0 * phid0 / r, xd0]), 10.0, np.linspace(0, 10, 201))
    Om = math.sqrt(3.0 / 2.0)
    x = x0 * np.cos(Om * t) + xd0 / Om * np.sin(Om * t)
    phid = phid0 * np.sqrt((1.0 + 0.5 * x0**2 / r**2) / (1.0 + 0.5 * x**2 / r**2))
    np.testing.assert_allclose(q[2], x, atol=1e-8)
    np.testing.assert_allclose(qd[0], phid, atol=1e-8)
    np.testing.assert_allclose(qd[1], x * phid / r, atol=1e-8)


# ---------------------------------------------------------------- A, b vs the raw constraint
# Number of time derivatives that turn each residual row into A q̈ − b.
ORDERS = {
    "free-particle": [1], "cartesian-pendulum": [2], "coupled-duffing": [2],
    "chaplygin-sleigh": [1], "rolling-wheel": [2], "two-mass-springs": [2],
    "quaternion-rigid-body": [2], "two-ellipse-particles": [2, 2, 1, 1], "speed-reducer": [1],
}
CONSTRAINT_KW = {"cartesian-pendulum": {"mu": -0.1, "L": 2.0}, "coupled-duffing": {"alpha": 0.4}}


@pytest.mark.parametrize("name", sorted(EXAMPLE_CONSTRAINTS))
def test_A_b_are_derivatives_of_the_raw_constraint(name):
    plant = EXAMPLE_PLANTS[name]()
    con = EXAMPLE_CONSTRAINTS[name](plant, **CONSTRAINT_KW.get(name, {}))
    rng = np.random.default_rng(sorted(EXAMPLE_CONSTRAINTS).index(name))
    n = plant.n
    q0, v, w, ph = rng.normal(size=(4, n))
    q0 = q0 + 2.0  # keep the ellipses away from r = 0
    om = rng.uniform(0.5, 2.0, size=n)

    def traj(t):  # a smooth, arbitrary (not constrained) path and its derivatives
        s = np.sin(om * t + ph)
        return q0 + v * t + w * s, v + w * om * np.cos(om * t + ph), -w * om**2 * s

    orders = np.array(ORDERS[name])
    assert con.m == len(orders)
    h = 1e-3
    for t in (0.3, 1.1, 2.6):
        q, qd, qdd = traj(t)
        A, b = con.matrices(q, qd, t)
        lhs = A @ qdd - b

        def raw(dt):
            qq, qqd, _ = traj(t + dt)
            return con.residual(qq, qqd, t + dt)

        f = {k: raw(k * h) for k in (-2, -1, 0, 1, 2)}
        d1 = (-f[2] + 8 * f[1] - 8 * f[-1] + f[-2]) / (12 * h)
        d2 = (-f[2] + 16 * f[1] - 30 * f[0] + 16 * f[-1] - f[-2]) / (12 * h * h)
        fd = np.where(orders == 2, d2, d1)
        scale = np.abs(A) @ np.abs(qdd) + np.abs(b) + 1.0
        np.testing.assert_allclose(lhs, fd, atol=1e-6 * np.max(scale))


# ---------------------------------------------------------------- contract
@pytest.mark.parametrize("name", sorted(EXAMPLE_PLANTS))
def test_plants_follow_the_contract(name):
    cls = EXAMPLE_PLANTS[name]
    plant = cls()
    assert isinstance(plant, Plant)
    rng = np.random.default_rng(0)
    q, qd = rng.normal(size=(2, 7, 5, plant.n))
    M, Q = plant.mass_matrix(q), plant.given_force(q, qd)
    assert M.shape == (7, 5, plant.n, plant.n) and Q.shape == (7, 5, plant.n)
    np.testing.assert_allclose(M, np.swapaxes(M, -1, -2))
    assert np.all(np.linalg.eigvalsh(M) > -1e-12)  # positive semi-definite
    # one batch element equals the unbatched call
    np.testing.assert_allclose(plant.given_force(q[3, 2], qd[3, 2]), Q[3, 2])
    con = EXAMPLE_CONSTRAINTS[name](plant)
    A, b = con.matrices(q, qd, 0.5)
    assert A.shape == (7, 5, con.m, plant.n) and b.shape == (7, 5, con.m)
    with pytest.raises(ParameterError, match="shape"):
        plant.mass_matrix(np.zeros(plant.n + 1))


def test_array_parameters_broadcast_over_samples():
    """Monte Carlo: one plant with sampled masses evaluates all samples at once."""
    m = np.array([1.0, 1.5, 2.0])
    plant = CoupledDuffing(m1=m)
    M = plant.mass_matrix(np.zeros((3, 2)))
    np.testing.assert_allclose(M[:, 0, 0], m)
    plant = QuaternionRigidBody(J=[[1, 2, 3], [2, 3, 4]])
    assert plant.mass_matrix(np.tile([1.0, 0, 0, 0], (2, 1))).shape == (2, 4, 4)


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda: CoupledDuffing(m1=-1.0), "`m1` must be > 0"),
        (lambda: TwoMassSprings(m1=-0.1), "`m1` must be >= 0"),
        (lambda: RollingWheel(R=float("nan")), "`R`"),
        (lambda: QuaternionRigidBody(J=(1.0, 2.0)), "`J` must have shape"),
        (lambda: ChaplyginSleigh().replace(mass=2.0), "no parameter"),
        (lambda: rolling_wheel_constraint(RollingWheel(), beta=2.0), "`beta`"),
        (lambda: two_ellipse_particles_constraint(TwoEllipseParticles(), eps=(0.5, 1.2)), "`eps`"),
        (lambda: speed_reducer_constraint(SpeedReducer(), r=0.0), "`r` must be > 0"),
        (lambda: free_particle_constraint(SpeedReducer()), "FreeParticle"),
    ],
)
def test_bad_parameters_are_refused(make, match):
    with pytest.raises(ParameterError, match=match):
        make()
