"""Baseline compensators (computed torque, LQR) against independent truths.

Truths: the poles of ë = u with u read off the compensator are the roots of
s² + K_d s + K_p; the LQR gain equals R⁻¹BᵀP with P from scipy's Riccati solver;
the double pendulum's linearization about its downward equilibrium in closed form;
a perturbed triple pendulum tracks far better with either baseline than without.
"""

import dataclasses
import math

import numpy as np
import pytest
from scipy.linalg import solve_continuous_are

from robustrack.plants import pendulum_energy_constraint
from robustrack.controllers import make_compensator
from robustrack.controllers.baselines import LQR, ComputedTorque
from robustrack.controllers.compensators import Compensator
from robustrack.errors import ParameterError
from robustrack.plants import NLinkPendulum, triple_pendulum
from robustrack.tracking import simulate_tracking

G = 9.81
NOMINAL = triple_pendulum()
ACTUAL = NOMINAL.replace(m=(1.1, 1.8, 3.3))  # W 7.3 case 1
CONSTRAINT = pendulum_energy_constraint(L1=1.0, g=G, gain=0.02, n=3, m1=1.0)
Q0, QD0 = np.array([1.0, 0.0, 0.0]), np.array([0.001, 0.0, 0.0])


def _feedback(comp, n):
    """F with u = F [e; ė], read off the compensator on unit vectors (it must be linear)."""
    X = np.eye(2 * n)
    F = comp(0.0, X[:, :n], X[:, n:], np.zeros((2 * n, 0))).T
    x = np.random.default_rng(0).normal(size=2 * n)
    np.testing.assert_allclose(comp(0.0, x[:n], x[n:]), F @ x, rtol=1e-12, atol=1e-12)
    return F


def _error_loop(F, n):
    """State matrix of d/dt [e; ė] = [ė; u], u = F [e; ė]."""
    return np.block([[np.zeros((n, n)), np.eye(n)], [F]])


def _sorted(z):
    return np.array(sorted(np.asarray(z, dtype=complex), key=lambda c: (round(c.real, 6), round(c.imag, 6))))


@pytest.mark.parametrize("Kp, Kd", [(100.0, 20.0), ([100.0, 25.0, 4.0], [20.0, 6.0, 5.0]), (50.0, [3.0, 30.0, 10.0])])
def test_computed_torque_places_the_nominal_error_poles(Kp, Kd):
    n = 3
    c = ComputedTorque(Kp=Kp, Kd=Kd)
    poles = np.linalg.eigvals(_error_loop(_feedback(c, n), n))
    kp, kd = np.broadcast_to(Kp, n), np.broadcast_to(Kd, n)
    designed = np.concatenate([np.roots([1.0, kd[i], kp[i]]) for i in range(n)])
    # a double root (ζ = 1) is only determined to ~√(machine ε) by eigvals
    np.testing.assert_allclose(_sorted(poles), _sorted(designed), atol=1e-6)


def test_computed_torque_default_is_critically_damped_at_10_rad_per_s():
    poles = np.linalg.eigvals(_error_loop(_feedback(ComputedTorque(), 2), 2))
    np.testing.assert_allclose(poles, -10.0, atol=1e-6)


def test_lqr_default_gain_is_the_riccati_gain_of_the_double_integrator():
    n = 3
    A = np.block([[np.zeros((n, n)), np.eye(n)], [np.zeros((n, 2 * n))]])
    B = np.vstack([np.zeros((n, n)), np.eye(n)])
    Q, R = np.diag([100.0] * n + [1.0] * n), 1e-2 * np.eye(n)
    P = solve_continuous_are(A, B, Q, R)
    K = np.linalg.solve(R, B.T @ P)
    c = LQR()
    np.testing.assert_allclose(c.gain_matrix(n), K, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(_feedback(c, n), -K, rtol=1e-9, atol=1e-9)
    # hand closed form of the scalar double integrator: k_p = √(q_e/r), k_d = √(q_ė/r + 2k_p)
    np.testing.assert_allclose(K[0, [0, n]], [100.0, math.sqrt(300.0)], rtol=1e-9)


def test_lqr_per_coordinate_weights():
    qe, qed, r = np.array([100.0, 50.0, 10.0]), np.array([1.0, 0.0, 4.0]), np.array([0.01, 0.02, 0.01])
    c = LQR(Q=(qe, qed), R=r)
    A = np.block([[np.zeros((3, 3)), np.eye(3)], [np.zeros((3, 6))]])
    B = np.vstack([np.zeros((3, 3)), np.eye(3)])
    P = solve_continuous_are(A, B, np.diag(np.concatenate([qe, qed])), np.diag(r))
    np.testing.assert_allclose(c.gain_matrix(3), np.diag(1 / r) @ B.T @ P, rtol=1e-9, atol=1e-9)
    # diagonal weights decouple the coordinates: each is the scalar double integrator's closed form
    kp = np.sqrt(qe / r)
    np.testing.assert_allclose(c.gain_matrix(3), np.hstack([np.diag(kp), np.diag(np.sqrt(qed / r + 2 * kp))]),
                               rtol=1e-9, atol=1e-9)


def test_lqr_gain_is_python_controls_without_importing_it():
    """The gain of a coupled design model is control.lqr's (python-control, the package the baseline was first built
    on; an independent assembly of K and the poles), and designing one imports no python-control (~2.4 s)."""
    import subprocess
    import sys

    import control

    rng = np.random.default_rng(7)
    A = rng.normal(size=(4, 4))
    B = rng.normal(size=(4, 2))
    G = rng.normal(size=(4, 4))
    c = LQR(A=A, B=B, Q=G @ G.T + np.eye(4), R=np.array([[2.0, 0.3], [0.3, 1.0]]))
    K, _, poles = control.lqr(A, B, G @ G.T + np.eye(4), np.array([[2.0, 0.3], [0.3, 1.0]]))
    np.testing.assert_allclose(c.gain_matrix(2), K, rtol=1e-9, atol=1e-9)
    code = ("import sys; from robustrack.controllers import LQR; LQR().gain_matrix(3); "
            "print('control' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_lqr_from_linearization_uses_the_linearized_error_dynamics():
    """Double pendulum at rest at the bottom: ë = −M⁻¹K e + u (closed form), K from scipy's ARE."""
    m1, m2, L1, L2 = 1.0, 2.0, 1.0, 1.5
    plant = NLinkPendulum(m=[m1, m2], L=[L1, L2], g=G)
    c = LQR.from_linearization(plant, None, [0.0, 0.0], [0.0, 0.0], Q=(10.0, 1.0), R=0.1)
    M = np.array([[(m1 + m2) * L1**2, m2 * L1 * L2], [m2 * L1 * L2, m2 * L2**2]])
    Kv = np.diag([(m1 + m2) * G * L1, m2 * G * L2])
    A = np.block([[np.zeros((2, 2)), np.eye(2)], [-np.linalg.solve(M, Kv), np.zeros((2, 2))]])
    B = np.vstack([np.zeros((2, 2)), np.eye(2)])
    np.testing.assert_allclose(c.A, A, atol=1e-4)
    np.testing.assert_allclose(c.B, B, atol=1e-6)
    P = solve_continuous_are(c.A, c.B, np.diag([10.0, 10.0, 1.0, 1.0]), 0.1 * np.eye(2))
    np.testing.assert_allclose(c.gain_matrix(2), (B.T @ P) / 0.1, rtol=1e-6, atol=1e-6)
    assert np.all(np.linalg.eigvals(A - B @ c.gain_matrix(2)).real < 0)


def test_lqr_from_linearization_on_the_constrained_triple_pendulum_is_near_the_double_integrator():
    """B = [0; I] (u is an acceleration); A's lower blocks are the nominal Jacobian (not zero)."""
    c = LQR.from_linearization(NOMINAL, CONSTRAINT, Q0, QD0)
    np.testing.assert_allclose(c.B, np.vstack([np.zeros((3, 3)), np.eye(3)]), atol=1e-6)
    np.testing.assert_allclose(c.A[:3], np.hstack([np.zeros((3, 3)), np.eye(3)]), atol=1e-9)
    assert np.abs(c.A[3:, :3]).max() > 1.0
    assert np.all(np.linalg.eigvals(c.A - c.B @ c.gain_matrix(3)).real < 0)
    with pytest.raises(ParameterError, match="designed for 3 coordinates"):
        c.gain_matrix(2)


@pytest.fixture(scope="module")
def uncompensated_error():
    r = simulate_tracking(NOMINAL, CONSTRAINT, None, Q0, QD0, (0.0, 1.0), actual=ACTUAL, n_points=201, uncompensated=False)
    return r.metrics["max_abs_e"]


@pytest.mark.parametrize("make", [ComputedTorque, LQR, lambda: LQR.from_linearization(NOMINAL, CONSTRAINT, Q0, QD0)],
                         ids=["computed-torque", "lqr", "lqr-linearized"])
def test_baselines_track_far_better_than_no_compensation(make, uncompensated_error):
    comp = make()
    r = simulate_tracking(NOMINAL, CONSTRAINT, comp, Q0, QD0, (0.0, 1.0), actual=ACTUAL, n_points=201, uncompensated=False)
    assert uncompensated_error > 1e-2
    assert r.metrics["max_abs_e"] < 0.2 * uncompensated_error  # measured ≈ 0.12–0.13
    assert r.info["compensator"]["name"] == comp.name
    assert r.bounds["e"] == math.inf and r.bounds["edot"] == math.inf


def test_contract_bounds_and_registry_by_class():
    for comp in (ComputedTorque(), LQR()):
        assert isinstance(comp, Compensator)
        assert comp.discontinuous is False and comp.n_states(3) == 0 and comp.initial_state(3).shape == (0,)
        b = comp.bounds(gamma=100.0)
        assert b.e == b.edot == math.inf and b.gamma is None
        assert "no robust bound" in b.region
        with pytest.raises(dataclasses.FrozenInstanceError):
            comp.R = 1.0  # frozen
    c = make_compensator(ComputedTorque, Kp=[1.0, 2.0], Kd=3.0)
    assert c.params["Kp"].tolist() == [1.0, 2.0] and c.Kd == 3.0
    assert make_compensator(LQR, R=1.0).gain_matrix(1)[0, 0] == pytest.approx(10.0)  # √(q_e/r)


def test_parameter_validation():
    with pytest.raises(ParameterError, match="`Kp` must be > 0"):
        ComputedTorque(Kp=0.0)
    with pytest.raises(ParameterError, match="`Kd` must be > 0"):
        ComputedTorque(Kd=[1.0, -1.0])
    with pytest.raises(ParameterError, match=r"`Kp` must be a scalar or one value per coordinate"):
        ComputedTorque(Kp=np.ones((2, 2)))
    with pytest.raises(ParameterError, match="numeric"):
        ComputedTorque(Kp="fast")
    with pytest.raises(ParameterError, match=r"pair \(q_e, q_ė\)"):
        LQR(Q=(1.0, 2.0, 3.0))
    with pytest.raises(ParameterError, match="q_e > 0"):
        LQR(Q=(0.0, 1.0))
    with pytest.raises(ParameterError, match="`R` must be > 0"):
        LQR(R=0.0)
    with pytest.raises(ParameterError, match="given together"):
        LQR(A=np.zeros((2, 2)))
    A2, B2 = np.array([[0.0, 1.0], [0.0, 0.0]]), np.array([[0.0], [1.0]])
    with pytest.raises(ParameterError, match=r"`B` must have shape \(2, 1\)"):
        LQR(A=A2, B=np.ones((2, 2)))
    with pytest.raises(ParameterError, match=r"`A` must be a square \(2n, 2n\)"):
        LQR(A=np.zeros((3, 3)), B=np.zeros((3, 1)))
    with pytest.raises(ParameterError, match="positive semi-definite"):
        LQR(Q=np.array([[1.0, 0.0], [0.0, -1.0]]), A=A2, B=B2)
    with pytest.raises(ParameterError, match="symmetric positive definite"):
        LQR(R=-1.0, A=A2, B=B2)
    with pytest.raises(ParameterError, match="detectable"):
        LQR(Q=np.diag([0.0, 1.0]), A=A2, B=B2)  # e unobserved: a pole stays at 0

