"""Models of a constraint (robustrack.studies.constraint_models): vakonomic, servo, friction and added-mass limits.

Every formula is checked against an independent truth: a saddle-point linear solve
written here, hand-derived Lagrangian derivatives and Lagrange equations, Euler's
equations integrated here, or the constraint itself.
"""

import numpy as np
import pytest
import sympy as sp
from scipy.integrate import solve_ivp

from robustrack.studies.constraint_models import (
    NoConstraint,
    ServoModel,
    VakonomicModel,
    added_mass_plant,
    anisotropic_friction_plant,
    lagrangian_derivative,
    realizability_margin,
    skate_model,
    servo_force,
    vakonomic_motion,
)
from robustrack.constraints import Nonholonomic
from robustrack.errors import ConstraintError, ParameterError, RealizabilityError
from robustrack.plants.rigid_body import EulerRigidBody
from robustrack.plants.examples import ChaplyginSleigh
from robustrack.tracking import simulate_constrained

RNG = np.random.default_rng(12)


def _skate_states(k):
    q = RNG.normal(size=(k, 3))
    qd = RNG.normal(size=(k, 3))
    return q, qd


# ----------------------------------------------------------------------------- [Φ]
def test_lagrangian_derivative_of_the_knife_edge():
    """[Φ] of Φ = ẋ sin φ − ẏ cos φ by hand: (φ̇ cos φ, φ̇ sin φ, −(ẋ cos φ + ẏ sin φ)) (K)."""
    _, _, con = skate_model()
    q, qd = _skate_states(20)
    got = lagrangian_derivative(con)(q, qd)[:, 0, :]
    phi, phid = q[:, 2], qd[:, 2]
    want = np.stack([phid * np.cos(phi), phid * np.sin(phi),
                     -(qd[:, 0] * np.cos(phi) + qd[:, 1] * np.sin(phi))], axis=-1)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-14)


def test_lagrangian_derivative_refuses_velocity_nonlinear_rows():
    x, y, z, xd, yd, zd = sp.symbols("x y z xd yd zd")
    with pytest.raises(ConstraintError, match="not linear in the velocities"):
        lagrangian_derivative(Nonholonomic(zd**2 - xd**2 - yd**2, [x, y, z], [xd, yd, zd]))
    with pytest.raises(ConstraintError, match="Nonholonomic"):
        lagrangian_derivative(NoConstraint(3))


# ------------------------------------------------------------------ vakonomic_motion
def test_vakonomic_motion_solves_the_saddle_point_system():
    """q̈, λ̇ equal a direct solve of [[M, −Aᵀ], [A, 0]] (q̈, λ̇) = (Q + [Φ]ᵀλ, b), batched."""
    k, n, m = 50, 4, 2
    L = RNG.normal(size=(k, n, n))
    M = L @ np.swapaxes(L, -1, -2) + n * np.eye(n)
    Q, A, b = RNG.normal(size=(k, n)), RNG.normal(size=(k, m, n)), RNG.normal(size=(k, m))
    lam, br = RNG.normal(size=(k, m)), RNG.normal(size=(k, m, n))
    got = vakonomic_motion(M, Q, A, b, lam, br)
    K = np.zeros((k, n + m, n + m))
    K[:, :n, :n], K[:, :n, n:], K[:, n:, :n] = M, -np.swapaxes(A, -1, -2), A
    rhs = np.concatenate([Q + np.einsum("kmn,km->kn", br, lam), b], axis=-1)
    sol = np.linalg.solve(K, rhs[..., None])[..., 0]
    # a well-conditioned random system: agreement to a few hundred ulps
    np.testing.assert_allclose(got.qdd, sol[:, :n], rtol=0, atol=1e-11)
    np.testing.assert_allclose(got.lam_dot, sol[:, n:], rtol=0, atol=1e-11)
    np.testing.assert_allclose(got.reaction, np.einsum("kmn,km->kn", br, lam)
                               + np.einsum("kmn,km->kn", A, sol[:, n:]), atol=1e-11)


def test_vakonomic_motion_refuses_dependent_rows():
    A = np.array([[1.0, 0.0], [2.0, 0.0]])
    with pytest.raises(ConstraintError, match="dependent"):
        vakonomic_motion(np.eye(2), np.zeros(2), A, np.zeros(2), np.zeros(2), np.zeros((2, 2)))


def test_vakonomic_model_keeps_the_constraint_and_the_energy():
    """Skate, λ(0) = 0.3: Φ stays 0 and T + V is conserved (the vakonomic reaction does no work
    on motions satisfying a linear Φ: q̇·[Φ] = 0, S 1.14)."""
    _, _, con = skate_model()
    model = VakonomicModel(ChaplyginSleigh(), con)
    q0, qd0 = model.initial_state([0.0, 0.0, 0.2], [0.5 * np.cos(0.2), 0.5 * np.sin(0.2), 1.0], 0.3)
    assert model.plant.coordinates == ("x", "y", "phi", "mu")
    res = simulate_constrained(model.plant, model.constraint, q0, qd0, (0.0, 2.0), n_points=201, rtol=1e-10)
    q, qd, lam = model.split(res.q, res.qd)
    energy = 0.5 * np.sum(qd**2, axis=-1) - q[:, 0]
    # rtol 1e-10 over ~2000 steps: drifts of a few 1e-10
    assert np.max(np.abs(energy - energy[0])) < 1e-8
    assert res.max_constraint_residual < 1e-8
    assert lam[0, 0] == 0.3
    # Qᶜ of the extended system is (Aᵀλ̇, λ̇): its x, y, φ part is ∂Φ/∂q̇ times its μ part
    A, _ = con.matrices(q, qd)
    np.testing.assert_allclose(res.Qc[:, :3], A[:, 0, :] * res.Qc[:, 3:], atol=1e-12)


def test_vakonomic_initial_state_is_checked():
    _, _, con = skate_model()
    model = VakonomicModel(ChaplyginSleigh(), con)
    with pytest.raises(ParameterError, match="violates the constraint"):
        model.initial_state(np.zeros(3), [0.0, 1.0, 0.0], 0.0)  # ẏ ≠ 0 at φ = 0 slips sideways
    with pytest.raises(ParameterError, match="lam0"):
        model.initial_state(np.zeros(3), np.zeros(3), [0.0, 1.0])


# --------------------------------------------------------------------------- servo
def test_realizability_margin_is_the_cosine_in_kozlovs_condition():
    """One row, one actuator: |(M⁻¹N, a)| / (‖M⁻¹N‖ ‖a‖); fewer actuators than rows: 0."""
    M = np.diag([1.0, 2.0, 3.0])
    a, N = RNG.normal(size=(10, 1, 3)), RNG.normal(size=(10, 3, 1))
    MiN = N[:, :, 0] / np.diag(M)
    want = np.abs(np.sum(a[:, 0] * MiN, -1)) / (np.linalg.norm(a[:, 0], axis=-1) * np.linalg.norm(MiN, axis=-1))
    np.testing.assert_allclose(realizability_margin(M, a, N), want, rtol=1e-12)
    assert realizability_margin(M, np.eye(3)[:2], np.array([1.0, 1.0, 1.0])) == 0.0
    assert realizability_margin(M, np.array([[0.0, 0.0, 1.0]]), np.array([1.0, 0.0, 0.0])) == 0.0


def test_servo_force_keeps_the_constraint_and_never_least_squares():
    k, n = 30, 3
    M = np.diag([1.0, 2.0, 3.0])
    Q, A, b = RNG.normal(size=(k, n)), RNG.normal(size=(k, 1, n)), RNG.normal(size=(k, 1))
    N = RNG.normal(size=(k, n, 1))
    res = servo_force(M, Q, A, b, N)
    assert res.realizable.all()
    qdd = np.linalg.solve(M, (Q + res.force)[..., None])[..., 0]
    np.testing.assert_allclose(np.einsum("kmn,kn->km", A, qdd), b, atol=1e-10)
    np.testing.assert_allclose(res.force, N[..., 0] * res.lam, atol=0)
    # N ⟂ M-weighted a: refused as NaN, not a least-squares λ
    bad = servo_force(M, Q[0], np.array([[0.0, 0.0, 1.0]]), b[0], np.array([1.0, 0.0, 0.0]))
    assert not bad.realizable and np.isnan(bad.lam).all() and np.isnan(bad.force).all()


def _euler_servo(J, l, n, w0, t):
    """Euler's equations with the servo torque, written out by hand: J ω̇ = (Jω)×ω + λ n,
    λ = −(l·J⁻¹((Jω)×ω)) / (l·J⁻¹n) so that d/dt(ω·l) = 0."""
    J = np.asarray(J)

    def f(_, w):
        g = np.cross(J * w, w)
        lam = -(l @ (g / J)) / (l @ (n / J))
        return (g + lam * n) / J

    return solve_ivp(f, (t[0], t[-1]), w0, t_eval=t, method="DOP853", rtol=1e-12, atol=1e-13).y.T


def _rigid_body_servo(l, n):
    w = sp.symbols("w1:4")
    pi = sp.symbols("p1:4")
    plant = EulerRigidBody()
    con = Nonholonomic(sum(float(a) * b for a, b in zip(l, w)), list(pi), list(w))
    return plant, con, ServoModel(plant, con, n)


def test_servo_with_n_along_l_is_the_ideal_suslov_constraint():
    """l = n (a non-principal axis): the servo run equals the ideal (fundamental-equation) run,
    ω·l stays 0 and the energy is conserved (the torque λ l does no work when ω ⟂ l)."""
    l = np.array([1.0, 1.0, 1.0]) / np.sqrt(3)
    plant, con, servo = _rigid_body_servo(l, l)
    w0 = np.array([1.0, -0.5, -0.5])
    kw = dict(n_points=201, rtol=1e-10, atol=1e-12)
    res = simulate_constrained(plant, con, np.zeros(3), w0, (0.0, 10.0), nonideal=servo.force, **kw)
    ideal = simulate_constrained(plant, con, np.zeros(3), w0, (0.0, 10.0), **kw)
    # two integrations at rtol 1e-10 of the same equations: differences of a few 1e-10
    np.testing.assert_allclose(res.qd, ideal.qd, atol=1e-8)
    np.testing.assert_allclose(res.Qc, ideal.Qc, atol=1e-8)
    assert np.max(np.abs(res.qd @ l)) < 1e-9
    energy = plant.energy(res.qd)
    assert np.max(np.abs(energy - energy[0])) < 1e-9
    assert not np.allclose(res.qd[-1], w0, atol=0.1)  # not a trivial (steady) motion


def test_servo_with_another_direction_matches_eulers_equations():
    """l = e3, n = (0, 1, 1)/√2: realizable, ω·l kept, energy NOT conserved (the torque works)."""
    l, n = np.array([0.0, 0.0, 1.0]), np.array([0.0, 1.0, 1.0]) / np.sqrt(2)
    plant, con, servo = _rigid_body_servo(l, n)
    w0 = np.array([1.0, 0.5, 0.0])
    res = simulate_constrained(plant, con, np.zeros(3), w0, (0.0, 5.0), nonideal=servo.force, n_points=101,
                               rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(res.qd, _euler_servo(plant.J, l, n, w0, res.t), atol=1e-8)
    np.testing.assert_allclose(res.Qc, servo.force(res.q, res.qd, res.t), atol=1e-10)  # Qᶜ = N λ exactly
    assert np.max(np.abs(res.qd @ l)) < 1e-9
    energy = plant.energy(res.qd)
    assert np.ptp(energy) > 1e-2


def test_servo_refuses_where_realizability_is_lost_along_the_run():
    """N(t) = (sin t, 0, cos t) turns perpendicular to l = e3 at t = π/2: the run stops before it
    with the time and the state, not with a least-squares torque."""
    l = np.array([0.0, 0.0, 1.0])
    plant = EulerRigidBody()
    w = sp.symbols("w1:4")
    con = Nonholonomic(w[2], list(sp.symbols("p1:4")), list(w))
    servo = ServoModel(plant, con, lambda q, t: np.stack([np.sin(t), 0.0 * t, np.cos(t)], axis=-1)[..., None],
                       rcond=1e-3)
    with pytest.raises(RealizabilityError, match=r"not realizable at t = 1\.5[0-9]*, q = .*A M⁻¹ N") as info:
        simulate_constrained(plant, con, np.zeros(3), np.array([1.0, 0.5, 0.0]), (0.0, 3.0),
                             nonideal=servo.force)
    # margin ≈ |cos t| / 3 < 1e-3 only within 3e-3 of π/2
    assert np.pi / 2 - 0.01 < info.value.t < np.pi / 2
    assert info.value.margin < 1e-3 and info.value.q.shape == (3,)
    assert l @ info.value.qd == pytest.approx(0.0, abs=1e-9)


def test_servo_refuses_a_perpendicular_actuator_at_once():
    plant, con, servo = _rigid_body_servo([0.0, 0.0, 1.0], [1.0, 0.0, 0.0])
    with pytest.raises(RealizabilityError, match="t = 0,"):
        servo.check(np.zeros(3), np.array([1.0, 0.5, 0.0]), 0.0)


# ------------------------------------------------------------ friction / added mass
def test_friction_plant_is_lagrange_with_rayleighs_function():
    """Q = (m g, 0, 0) − N Φ (sin φ, −cos φ, 0), M = diag(m, m, I) (K eq. 1 by hand)."""
    m, inertia, g, N = 1.3, 0.7, 0.9, 25.0
    T, V, con = skate_model(m, inertia, g)
    plant = anisotropic_friction_plant(T, V, con, N)
    q, qd = _skate_states(20)
    phi = q[:, 2]
    Phi = qd[:, 0] * np.sin(phi) - qd[:, 1] * np.cos(phi)
    Q = np.stack([m * g - N * Phi * np.sin(phi), N * Phi * np.cos(phi), 0 * phi], -1)
    np.testing.assert_allclose(plant.given_force(q, qd), Q, atol=1e-12)
    np.testing.assert_allclose(plant.mass_matrix(q), np.broadcast_to(np.diag([m, m, inertia]), (20, 3, 3)))
    assert plant.replace(N=2 * N).params["N"] == 2 * N


def test_added_mass_plant_is_lagrange_of_the_penalized_lagrangian():
    """L_N = T + ½ N w² − V, w = ẋ s − ẏ c, v = ẋ c + ẏ s (s, c = sin φ, cos φ), by hand:
    M = diag(m, m, I) + N a aᵀ (a = (s, −c, 0)),
    Q = (m g − N φ̇ (s v + c w), N φ̇ (c v − s w), N w v)."""
    m, inertia, g, N = 1.3, 0.7, 0.9, 25.0
    T, V, con = skate_model(m, inertia, g)
    plant = added_mass_plant(T, V, con, N)
    q, qd = _skate_states(20)
    s, c, phid = np.sin(q[:, 2]), np.cos(q[:, 2]), qd[:, 2]
    w, v = qd[:, 0] * s - qd[:, 1] * c, qd[:, 0] * c + qd[:, 1] * s
    a = np.stack([s, -c, 0 * s], -1)
    M = np.diag([m, m, inertia]) + N * a[:, :, None] * a[:, None, :]
    Q = np.stack([m * g - N * phid * (s * v + c * w), N * phid * (c * v - s * w), N * w * v], -1)
    np.testing.assert_allclose(plant.mass_matrix(q), M, atol=1e-12)
    np.testing.assert_allclose(plant.given_force(q, qd), Q, atol=1e-12)


def test_penalty_plants_refuse_bad_input():
    T, V, con = skate_model()
    with pytest.raises(ParameterError, match="`N`"):
        anisotropic_friction_plant(T, V, con, -1.0)
    x = sp.Symbol("x", real=True)
    with pytest.raises(ParameterError, match="symbol N"):
        added_mass_plant(T + sp.Symbol("N") * x**2, V, con, 1.0)


def test_no_constraint_has_no_rows():
    c = NoConstraint(3)
    A, b = c.matrices(np.zeros((5, 3)), np.zeros((5, 3)))
    assert A.shape == (5, 0, 3) and b.shape == (5, 0) and c.residual(np.zeros(3)).shape == (0,)
    with pytest.raises(ConstraintError):
        NoConstraint(0)


# ---------------------------------------------------------------------- rigid body
def test_euler_rigid_body_is_eulers_equations():
    plant = EulerRigidBody(J=(1.0, 2.0, 3.0))
    w = RNG.normal(size=(7, 3))
    J1, J2, J3 = plant.J
    want = np.stack([(J2 - J3) * w[:, 1] * w[:, 2], (J3 - J1) * w[:, 2] * w[:, 0], (J1 - J2) * w[:, 0] * w[:, 1]], -1)
    np.testing.assert_allclose(plant.given_force(np.zeros((7, 3)), w), want, atol=1e-14)
    np.testing.assert_allclose(plant.energy(w), 0.5 * (J1 * w[:, 0] ** 2 + J2 * w[:, 1] ** 2 + J3 * w[:, 2] ** 2))
    with pytest.raises(ParameterError, match="`J`"):
        EulerRigidBody(J=(1.0, -2.0, 3.0))
