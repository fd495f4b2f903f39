"""robustrack.plants.motion: the one "plant + constraint → q̈, Qᶜ" helper and its linearization.

Checked against truths derived apart from the code: the KKT (Lagrange-multiplier) form of
Gauss's principle, the pendulum rod tension in closed form, the non-ideal virtual-work
condition (W 4.2.6), and the pendulum's small-motion equation.
"""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp

from robustrack.constraints import FunctionConstraint, Holonomic
from robustrack.errors import ParameterError
from robustrack.interop import linearize_about
from robustrack.plants import (
    CartesianPendulum,
    NLinkPendulum,
    check_constraint_fits,
    constrained_motion,
    linearize_motion,
    pendulum_energy_constraint,
    triple_pendulum,
)

RNG = np.random.default_rng(11)
PLANT = triple_pendulum()
ENERGY = pendulum_energy_constraint(L1=1.0, g=9.81, gain=0.02, n=3, m1=1.0)
# direct solves of well-conditioned 3×3 / 4×4 systems agree with the Cholesky form to rounding:
# relative 1e-10 leaves room for cond(M) ~ 1e2–1e3 of the triple pendulum times 1e-16
RTOL = 1e-10


def _states(k, n=3):
    return RNG.uniform(-2, 2, (k, n)), RNG.uniform(-2, 2, (k, n))


def _kkt(M, Q, A, b):
    """Gauss's principle as the KKT system [[M, Aᵀ], [A, 0]] [q̈; −λ] = [Q; b] (full-row-rank A)."""
    n, m = M.shape[0], A.shape[0]
    K = np.block([[M, A.T], [A, np.zeros((m, m))]])
    sol = np.linalg.solve(K, np.concatenate([Q, b]))
    return sol[:n]


def test_triple_pendulum_motion_is_gauss_minimum_and_keeps_the_constraint():
    """Batch of random states with a random extra force: q̈ equals the KKT solution, A q̈ = b,
    Qᶜ = M q̈ − Q − force."""
    q, qd = _states(20)
    t = RNG.uniform(0, 5, 20)
    force = RNG.normal(size=(20, 3))
    mot = constrained_motion(PLANT, ENERGY, q, qd, t, force=force)
    A, b = ENERGY.matrices(q, qd, t)
    M, Q = PLANT.mass_matrix(q, t), PLANT.given_force(q, qd, t) + force
    for i in range(20):
        truth = _kkt(M[i], Q[i], A[i], b[i])
        np.testing.assert_allclose(mot.qdd[i], truth, rtol=RTOL, atol=RTOL * np.abs(truth).max())
        np.testing.assert_allclose(A[i] @ mot.qdd[i], b[i], rtol=RTOL, atol=RTOL * np.abs(A[i]).max() * 10)
        np.testing.assert_allclose(mot.Qc[i], M[i] @ mot.qdd[i] - Q[i], rtol=1e-9, atol=1e-9 * np.abs(Q[i]).max())
    assert mot.qdd.shape == (20, 3) and mot.residual.shape == (20,) and not mot.augmented.any()


def test_cartesian_pendulum_rod_tension_in_closed_form():
    """Bob on x² + y² = L² (y down, gravity +y): λ = −m (|v|² + g y)/L², Qᶜ = λ q, q̈ = g e_y + Qᶜ/m."""
    m, g, L = 1.7, 9.81, 1.3
    plant = CartesianPendulum(m=m, g=g)
    x, y = sp.symbols("x y")
    rod = Holonomic(x**2 + y**2 - L**2, [x, y])
    th, w = RNG.uniform(-3, 3, 8), RNG.normal(size=8)
    q = L * np.stack([np.sin(th), np.cos(th)], -1)
    qd = L * w[:, None] * np.stack([np.cos(th), -np.sin(th)], -1)  # tangent: q·q̇ = 0
    mot = constrained_motion(plant, rod, q, qd)
    lam = -m * (np.sum(qd**2, -1) + g * q[:, 1]) / L**2
    np.testing.assert_allclose(mot.Qc, lam[:, None] * q, rtol=1e-12, atol=1e-12 * m * g)
    np.testing.assert_allclose(mot.qdd, np.array([0.0, g]) + mot.Qc / m, rtol=1e-12, atol=1e-12 * g)


def test_without_constraint_it_is_the_unconstrained_acceleration():
    q, qd = _states(5)
    mot = constrained_motion(PLANT, None, q, qd, 0.3)
    np.testing.assert_allclose(mot.qdd, PLANT.unconstrained_acceleration(q, qd, 0.3), rtol=1e-13)
    assert np.all(mot.Qc == 0) and np.all(mot.residual == 0) and not mot.augmented.any()


def test_a_given_mass_matrix_is_used_instead_of_the_plants():
    """M= (e.g. a velocity-dependent M+) replaces plant.mass_matrix: doubling M halves a = M⁻¹Q."""
    q, qd = _states(4)
    M = PLANT.mass_matrix(q)
    same = constrained_motion(PLANT, None, q, qd, M=M)
    np.testing.assert_array_equal(same.qdd, constrained_motion(PLANT, None, q, qd).qdd)
    np.testing.assert_allclose(constrained_motion(PLANT, None, q, qd, M=2 * M).qdd, same.qdd / 2, rtol=1e-13)


def test_nonideal_force_does_the_prescribed_virtual_work():
    """W 4.2.6: vᵀ Qᶜ = vᵀ C for every v with A v = 0, and A q̈ = b still holds."""
    q, qd = _states(6)
    C = RNG.normal(size=(6, 3))
    mot = constrained_motion(PLANT, ENERGY, q, qd, nonideal=lambda q_, qd_, t_: C)
    A, b = ENERGY.matrices(q, qd, 0.0)
    for i in range(6):
        null = np.linalg.svd(A[i])[2][1:]  # (2, 3): a basis of {v : A v = 0}
        np.testing.assert_allclose(null @ mot.Qc[i], null @ C[i], atol=1e-10 * np.abs(mot.Qc[i]).max())
        np.testing.assert_allclose(A[i] @ mot.qdd[i], b[i], atol=1e-10 * np.abs(A[i]).max() * np.abs(mot.qdd[i]).max())


def test_inconsistent_constraints_report_the_least_squares_residual():
    """Rows q̈1 = 0 and q̈1 = 1: least squares gives q̈1 = ½, residual ‖(½, −½)‖ = 1/√2."""
    plant = NLinkPendulum(m=[1.0, 1.0], L=[1.0, 1.0], g=0.0)
    con = FunctionConstraint(lambda q, qd, t: np.array([[1.0, 0.0], [1.0, 0.0]]),
                             lambda q, qd, t: np.array([0.0, 1.0]), n=2, m=2)
    mot = constrained_motion(plant, con, np.zeros(2), np.zeros(2))
    assert mot.qdd[0] == pytest.approx(0.5, abs=1e-12)
    assert mot.residual == pytest.approx(1 / np.sqrt(2), abs=1e-12)


def test_linearize_motion_of_a_pendulum_away_from_equilibrium():
    """θ̈ = −(g/L) sin θ + u/(m L²): A = [[0, 1], [−(g/L) cos θ, 0]], B = [0, 1/(m L²)].

    Forward differences with step ε: error ≈ ε/2 · |∂²f| ≤ ε g/L, so atol 1e-5 at ε = 1e-6."""
    m, L, g, th = 1.5, 0.8, 9.81, 0.7
    A, B = linearize_motion(NLinkPendulum(m=[m], L=[L], g=g), None, [th], [0.4], 0.0, [0.3])
    np.testing.assert_allclose(A, [[0.0, 1.0], [-(g / L) * np.cos(th), 0.0]], atol=1e-5)
    np.testing.assert_allclose(B, [[0.0], [1.0 / (m * L**2)]], atol=1e-6)


def test_linearize_about_is_linearize_motion_with_names():
    """One implementation: python-control's linearization carries the same matrices bit for bit."""
    q, qd, u = np.array([0.9, 0.2, -0.1]), np.array([0.7, -0.3, 0.4]), np.array([1.0, -2.0, 0.5])
    A, B = linearize_motion(PLANT, ENERGY, q, qd, 0.5, u)
    lin = linearize_about(PLANT, ENERGY, q, qd, 0.5, u=u)
    np.testing.assert_array_equal(lin.A, A)
    np.testing.assert_array_equal(lin.B, B)
    np.testing.assert_array_equal(lin.C, np.eye(6))
    assert lin.input_labels == ["Q_u1", "Q_u2", "Q_u3"] and lin.name == "NLinkPendulum$linearized"


def test_bad_points_and_mismatched_constraints_are_refused():
    with pytest.raises(ParameterError, match=r"`q` and `qd` must have shape \(3,\)"):
        linearize_motion(PLANT, None, [0.0, 0.0], np.zeros(3))
    with pytest.raises(ParameterError, match="`u`"):
        linearize_motion(PLANT, None, np.zeros(3), np.zeros(3), 0.0, [1.0])
    with pytest.raises(ParameterError, match="`eps`"):
        linearize_motion(PLANT, None, np.zeros(3), np.zeros(3), eps=-1.0)
    with pytest.raises(ParameterError, match="`q` must be finite"):
        linearize_motion(PLANT, None, [np.nan, 0, 0], np.zeros(3))
    two = pendulum_energy_constraint(n=2)
    with pytest.raises(ParameterError, match="acts on 2 coordinates but the plant NLinkPendulum has 3"):
        check_constraint_fits(PLANT, two)
    with pytest.raises(ParameterError, match="acts on 2 coordinates"):
        linearize_motion(PLANT, two, np.zeros(3), np.zeros(3))
    check_constraint_fits(PLANT, None)
    check_constraint_fits(PLANT, ENERGY)
