"""Γ of an actuated scenario uses the force the actuators apply, B τᶜ, along the servo motion
(docs/theory/constraint-models.md, W 5.3.5) — checked against an independent computation: the servo motion integrated
by scipy with τᶜ from the KKT system of Gauss's principle, and δq by numpy.linalg.solve per sample."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from robustrack.errors import ScenarioError
from robustrack.scenarios import load_scenario
from robustrack.scenarios.gamma import run_gamma

SET = ["simulation.t_end=0.4", "simulation.n_points=41"]


def _kkt_tau(M, Q, A, b, B):
    """Gauss's command: minimize τᵀWτ (W = BᵀM⁻¹B) subject to C τ = b − A a (C = A M⁻¹ B), by its KKT system."""
    Minv = np.linalg.inv(M)
    W, C, r = B.T @ Minv @ B, A @ Minv @ B, b - A @ (Minv @ Q)
    k, m = W.shape[0], C.shape[0]
    K = np.block([[W, C.T], [C, np.zeros((m, m))]])
    return np.linalg.solve(K, np.concatenate([np.zeros(k), r]))[:k]


def _ideal_Qc(M, Q, A, b):
    Minv = np.linalg.inv(M)
    return A.T @ np.linalg.pinv(A @ Minv @ A.T) @ (b - A @ (Minv @ Q))


# Torques at joints 2 and 3 only: the energy constraint's ideal Qᶜ = Aᵀλ acts on θ1 alone (A = [L1 θ̇1, 0, 0]),
# outside the range of this B, so the servo motion and its force B τᶜ differ from the ideal ones.
# (The catalog's B has e1 as a column: there B τᶜ = Qᶜ, and Γ is the same either way — checked below.)
OFF_AXIS = "actuators.B=[[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]]"


@pytest.mark.parametrize("B, differs", [(OFF_AXIS, True), (None, False)])
def test_gamma_uses_the_actuators_force(B, differs):
    sc = load_scenario("triple-pendulum-underactuated", SET + ([B] if B else []))
    pb = sc.build()
    plant, con, B = pb.nominal, pb.constraint, np.asarray(pb.actuators.B)
    study = run_gamma(sc, 12, 0.1, seed=5)
    estimate, doc = study.estimate, study.to_dict()

    def force(q, qd, t):
        M, Q = plant.mass_matrix(q, t), plant.given_force(q, qd, t)
        A, b = con.matrices(q, qd, t)
        return M, Q, B @ _kkt_tau(M, Q, np.atleast_2d(A), np.atleast_1d(b), B), A, b

    def rhs(t, y):
        M, Q, F, _, _ = force(y[:3], y[3:], t)
        return np.concatenate([y[3:], np.linalg.solve(M, Q + F)])

    sim = sc.config["simulation"]
    t = np.linspace(0.0, sim["t_end"], sim["n_points"])
    sol = solve_ivp(rhs, (0.0, sim["t_end"]), np.concatenate([pb.q0, pb.qd0]), t_eval=t, method="DOP853",
                    rtol=1e-11, atol=1e-13)
    mine, ideal = np.zeros(estimate.n_samples), np.zeros(estimate.n_samples)
    for j, (q, qd) in enumerate(zip(sol.y[:3].T, sol.y[3:].T)):
        M, Q, F, A, b = force(q, qd, t[j])
        Qc = _ideal_Qc(M, Q, np.atleast_2d(A), np.atleast_1d(b))
        for s, m in enumerate(np.asarray(estimate.samples)):
            act = plant.replace(m=tuple(m))
            Ma, Qa = act.mass_matrix(q, t[j]), act.given_force(q, qd, t[j])
            dq = np.linalg.solve(Ma, Qa + F) - np.linalg.solve(M, Q + F)
            dq_ideal = np.linalg.solve(Ma, Qa + Qc) - np.linalg.solve(M, Q + Qc)
            mine[s] = max(mine[s], np.abs(dq).max())
            ideal[s] = max(ideal[s], np.abs(dq_ideal).max())
    # the nominal motion is integrated at rtol 1e-8 (the scenario's), mine at 1e-11: the states agree to
    # ~1e-8 relative over 0.4 s, δq (a difference of two accelerations of O(10) rad/s²) to ~1e-6 relative
    np.testing.assert_allclose(estimate.exact, mine, rtol=1e-5)
    # off-axis, the ideal Qᶜ would give another Γ (the test tells the two forces apart); with the
    # catalog's B both are the same force
    gap = np.max(np.abs(ideal - mine) / mine)
    assert gap > 1e-2 if differs else gap < 1e-6
    assert doc["samples"] == 12


def test_gamma_refuses_a_saturated_nominal_command():
    sc = load_scenario("triple-pendulum-underactuated", [*SET, "actuators.tau_max=[1.0, 1.0]"])
    with pytest.raises(ScenarioError, match=r"nominal command saturates .*tau_max = 1 .*No Γ is estimated"):
        run_gamma(sc, 12, 0.1, seed=5)
