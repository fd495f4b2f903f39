"""python-control adapters against independent truths.

Truths: the simple pendulum's closed-form dynamics and equilibria under a constant
torque; the constrained acceleration satisfies A q̈ = b with an ideal (range Aᵀ)
constraint force (Gauss's principle) and equals Udwadia–Phohomsiri's stacked form
(W 4.2.9); the double pendulum's linearization about the downward equilibrium
A = [[0, I], [−M⁻¹K, 0]], K = Hessian of V; a central-difference Jacobian of the
stacked-form acceleration; and ``simulate_tracking`` integrated by another solver.
"""

import control
import numpy as np
import pytest

from robustrack.plants import pendulum_energy_constraint
from robustrack.controllers import GD, GSS, sliding_mode
from robustrack.errors import ParameterError
from robustrack.interop import closed_loop_iosystem, linearize_about, plant_iosystem, tracking_rhs
from robustrack.plants import NLinkPendulum, triple_pendulum
from robustrack.tracking import simulate_tracking

G = 9.81
NOMINAL = triple_pendulum()
ACTUAL = NOMINAL.replace(m=(1.1, 1.8, 3.3))  # W 7.3 case 1
CONSTRAINT = pendulum_energy_constraint(L1=1.0, g=G, gain=0.02, n=3, m1=1.0)
Q0, QD0 = np.array([1.0, 0.0, 0.0]), np.array([0.001, 0.0, 0.0])
IVP = dict(rtol=1e-8, atol=1e-12)


def _stacked_acceleration(M, Q, A, b):
    """q̈ = [(I − A⁺A) M ; A]⁺ [(I − A⁺A) Q ; b] (Udwadia–Phohomsiri 2006, W 4.2.9)."""
    P = np.eye(M.shape[0]) - np.linalg.pinv(A) @ A
    return np.linalg.lstsq(np.vstack([P @ M, A]), np.concatenate([P @ Q, b]), rcond=None)[0]


def test_plant_iosystem_names_and_simple_pendulum_dynamics():
    m, L = 2.0, 1.5
    sys = plant_iosystem(NLinkPendulum(m=[m], L=[L], g=G), name="pend")
    assert sys.name == "pend"
    assert sys.state_labels == ["theta1", "theta1_dot"] == sys.output_labels
    assert sys.input_labels == ["Q_u1"]
    rng = np.random.default_rng(0)
    for th, thd, u in rng.uniform(-3, 3, (5, 3)):
        dx = sys.dynamics(0.0, [th, thd], [u])
        np.testing.assert_allclose(dx, [thd, -G / L * np.sin(th) + u / (m * L**2)], rtol=1e-13, atol=1e-13)
        np.testing.assert_array_equal(sys.output(0.0, [th, thd], [u]), [th, thd])


def test_plant_iosystem_connects_by_signal_name_with_control_interconnect():
    """A python-control PD law wired to the plant by names reproduces the closed-form loop."""
    from scipy.integrate import solve_ivp

    m, L, Kp, Kd, r = 2.0, 1.5, 30.0, 8.0, 4.0
    plant = plant_iosystem(NLinkPendulum(m=[m], L=[L], g=G), name="plant")
    pd = control.nlsys(None, lambda t, x, u, params: [-Kp * u[0] - Kd * u[1] + u[2]],
                       inputs=["theta1", "theta1_dot", "r"], outputs=["Q_u1"], name="pd")
    loop = control.interconnect([plant, pd], inputs=["r"], outputs=["theta1", "theta1_dot"])
    T = np.linspace(0.0, 3.0, 61)
    resp = control.input_output_response(loop, timepts=T, inputs=np.full(T.size, r), initial_state=[1.0, 0.0],
                                         solve_ivp_kwargs=dict(rtol=1e-10, atol=1e-12))
    truth = solve_ivp(lambda t, x: [x[1], -G / L * np.sin(x[0]) + (r - Kp * x[0] - Kd * x[1]) / (m * L**2)],
                      (0.0, 3.0), [1.0, 0.0], t_eval=T, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(resp.outputs, truth.y, atol=1e-9)


def test_plant_iosystem_accepts_a_batch_of_states_as_columns():
    sys = plant_iosystem(NOMINAL)
    rng = np.random.default_rng(1)
    X, U = rng.normal(size=(6, 4)), rng.normal(size=(3, 4))
    batch = sys.updfcn(0.0, X, U, {})
    for k in range(4):
        np.testing.assert_allclose(batch[:, k], sys.dynamics(0.0, X[:, k], U[:, k]), rtol=1e-12, atol=1e-12)


def test_constant_torque_equilibrium_is_kept_by_input_output_response():
    """sin θ* = u/(m g L): starting there, the pendulum stays (the input reaches the plant)."""
    m, L, u = 1.0, 2.0, 5.0
    sys = plant_iosystem(NLinkPendulum(m=[m], L=[L], g=G))
    th = np.arcsin(u / (m * G * L))
    T = np.linspace(0.0, 2.0, 21)
    resp = control.input_output_response(sys, timepts=T, inputs=np.full((1, T.size), u),
                                         initial_state=[th, 0.0], solve_ivp_kwargs=IVP)
    np.testing.assert_allclose(resp.states[0], th, atol=1e-8)
    resp0 = control.input_output_response(sys, timepts=T, initial_state=[th, 0.0], solve_ivp_kwargs=IVP)
    assert np.abs(resp0.states[0] - th).max() > 0.1  # without the torque it swings


def test_constrained_plant_iosystem_is_the_fundamental_equation_with_the_input_in_Q():
    sys = plant_iosystem(NOMINAL, constraint=CONSTRAINT)
    rng = np.random.default_rng(2)
    for _ in range(5):
        q, qd, u = rng.uniform(-1, 1, 3), rng.uniform(0.3, 1.5, 3), rng.normal(scale=5, size=3)
        qdd = sys.dynamics(0.3, np.concatenate([q, qd]), u)[3:]
        M, Q = NOMINAL.mass_matrix(q), NOMINAL.given_force(q, qd)
        A, b = CONSTRAINT.matrices(q, qd, 0.3)
        np.testing.assert_allclose(A @ qdd, b, rtol=1e-10, atol=1e-10)  # the constraint holds
        Qc = M @ qdd - Q - u
        P = np.eye(3) - np.linalg.pinv(A) @ A  # ideal: Qᶜ in range(Aᵀ), no work on A v = 0
        np.testing.assert_allclose(P @ Qc, 0.0, atol=1e-9 * (1 + np.abs(Qc).max()))
        np.testing.assert_allclose(qdd, _stacked_acceleration(M, Q + u, A, b), rtol=1e-9, atol=1e-9)


def test_linearization_about_the_double_pendulums_downward_equilibrium():
    m1, m2, L1, L2 = 1.0, 2.0, 1.0, 1.5
    lin = linearize_about(NLinkPendulum(m=[m1, m2], L=[L1, L2], g=G), None, [0.0, 0.0], [0.0, 0.0])
    M = np.array([[(m1 + m2) * L1**2, m2 * L1 * L2], [m2 * L1 * L2, m2 * L2**2]])
    K = np.diag([(m1 + m2) * G * L1, m2 * G * L2])  # Hessian of V = −(m1+m2) g L1 cos θ1 − m2 g L2 cos θ2
    A = np.block([[np.zeros((2, 2)), np.eye(2)], [-np.linalg.solve(M, K), np.zeros((2, 2))]])
    B = np.vstack([np.zeros((2, 2)), np.linalg.inv(M)])
    np.testing.assert_allclose(lin.A, A, atol=1e-4)
    np.testing.assert_allclose(lin.B, B, atol=1e-6)
    np.testing.assert_allclose(lin.C, np.eye(4))
    assert lin.state_labels == ["theta1", "theta2", "theta1_dot", "theta2_dot"]
    # small oscillations: ω² are the eigenvalues of M⁻¹K
    w2 = np.sort(np.linalg.eigvals(np.linalg.solve(M, K)).real)
    np.testing.assert_allclose(np.sort(np.abs(np.linalg.eigvals(lin.A).imag))[::2] ** 2, w2, rtol=1e-5)


def test_constrained_linearization_matches_central_differences_of_the_stacked_form():
    q, qd, t, u = np.array([0.9, 0.2, -0.1]), np.array([0.7, -0.3, 0.4]), 0.5, np.array([1.0, -2.0, 0.5])
    lin = linearize_about(NOMINAL, CONSTRAINT, q, qd, t, u=u)

    def f(x, uu):
        qq, qqd = x[:3], x[3:]
        A, b = CONSTRAINT.matrices(qq, qqd, t)
        qdd = _stacked_acceleration(NOMINAL.mass_matrix(qq), NOMINAL.given_force(qq, qqd) + uu, A, b)
        return np.concatenate([qqd, qdd])

    x0, h = np.concatenate([q, qd]), 1e-5
    J = np.column_stack([(f(x0 + h * d, u) - f(x0 - h * d, u)) / (2 * h) for d in np.eye(6)])
    Bj = np.column_stack([(f(x0, u + h * d) - f(x0, u - h * d)) / (2 * h) for d in np.eye(3)])
    np.testing.assert_allclose(lin.A, J, atol=2e-4 * np.abs(J).max())
    np.testing.assert_allclose(lin.B, Bj, atol=1e-5 * np.abs(Bj).max())


def test_linearize_about_rejects_bad_points():
    with pytest.raises(ParameterError, match=r"`q` and `qd` must have shape \(3,\)"):
        linearize_about(NOMINAL, None, [0.0, 0.0], [0.0, 0.0, 0.0])
    with pytest.raises(ParameterError, match="`u`"):
        linearize_about(NOMINAL, None, np.zeros(3), np.zeros(3), u=[1.0])
    with pytest.raises(ParameterError, match="`eps`"):
        linearize_about(NOMINAL, None, np.zeros(3), np.zeros(3), eps=0.0)


@pytest.mark.parametrize("compensator, t_end", [(GSS(), 1.0), (GD(), 0.3)], ids=["gss", "gd"])
def test_closed_loop_input_output_response_reproduces_simulate_tracking(compensator, t_end):
    """Radau through python-control vs LSODA in simulate_tracking: agree to the tolerance.

    rtol = 1e-8 on states of order 1 lets each solver err by ~1e-9 in q_c and q; e is
    their difference (max|e| ≈ 5e-5 here), so e agrees to ~1e-5 of its size (measured
    1.1e-5 for GSS), q to ~1e-8.
    """
    r = simulate_tracking(NOMINAL, CONSTRAINT, compensator, Q0, QD0, (0.0, t_end), actual=ACTUAL, n_points=101,
                          uncompensated=True)
    sys = closed_loop_iosystem(NOMINAL, ACTUAL, CONSTRAINT, compensator, uncompensated=True)
    x0 = np.concatenate([Q0, QD0, Q0, QD0, compensator.initial_state(3), Q0, QD0])
    resp = control.input_output_response(sys, timepts=r.t, initial_state=x0, solve_ivp_method="Radau",
                                         solve_ivp_kwargs=IVP)
    y, x = resp.outputs, resp.states
    assert sys.ninputs == 0 and sys.nstates == 18 + compensator.n_states(3)
    e_scale = np.abs(r.e).max()
    assert e_scale > 1e-6  # there is an error to reproduce
    # simulate_tracking integrates q (DOP853) and q_c (LSODA) in separate solves, so their errors
    # (each ≲ rtol·|q| ≈ 1e-8) no longer cancel in e = q_c − q: that floor, or 1e-4 of e's size.
    np.testing.assert_allclose(y[:3].T, r.e, rtol=0, atol=max(1e-4 * e_scale, 2e-8))
    # ė is a difference of two velocities of size ~1–3 rad/s, each integrated to rtol 1e-8
    # by a different solver: their error, not ė's size, sets the floor (~1e-7).
    np.testing.assert_allclose(y[3:6].T, r.edot, rtol=0, atol=max(1e-4 * np.abs(r.edot).max(), 2e-7))
    np.testing.assert_allclose(x[:3].T, r.q, atol=1e-6)
    if r.z.size:
        np.testing.assert_allclose(x[12:12 + r.z.shape[1]].T, r.z, rtol=0, atol=1e-6 * (1 + np.abs(r.z).max()))
    np.testing.assert_allclose(x[-6:-3].T, r.qa, atol=1e-6)
    np.testing.assert_array_equal(y[6:], x)  # the states follow e, ė among the outputs
    assert sys.state_labels[6] == "theta1_c" and sys.output_labels[3] == "edot_theta1"


def test_disturbance_input_acts_on_the_actual_plant():
    """Identical plants, no constraint, no compensator: q_c is the plant driven by the force d."""
    pend = NLinkPendulum(m=[1.0, 2.0], L=[1.0, 0.5], g=G)
    loop = closed_loop_iosystem(pend, pend, None, None, disturbance=True)
    assert loop.input_labels == ["d_theta1", "d_theta2"]
    T = np.linspace(0.0, 1.0, 51)
    d = np.vstack([-1.0 * np.ones_like(T), 0.5 * np.ones_like(T)])  # constant: no interpolation kinks
    q0 = [0.3, -0.2, 0.0, 0.1]
    resp = control.input_output_response(loop, timepts=T, inputs=d, initial_state=q0 + q0, solve_ivp_kwargs=IVP)
    ref = control.input_output_response(plant_iosystem(pend), timepts=T, inputs=d, initial_state=q0,
                                        solve_ivp_kwargs=IVP)
    assert np.abs(resp.states[4:8] - resp.states[:4]).max() > 0.05  # the force moved it
    np.testing.assert_allclose(resp.states[4:8], ref.states, atol=1e-7)
    free = control.input_output_response(plant_iosystem(pend), timepts=T, initial_state=q0, solve_ivp_kwargs=IVP)
    np.testing.assert_allclose(resp.states[:4], free.states, atol=1e-7)  # the nominal is undisturbed


def test_closed_loop_refuses_discontinuous_compensators_and_mismatched_plants():
    with pytest.raises(ParameterError, match="sample_period"):
        closed_loop_iosystem(NOMINAL, ACTUAL, CONSTRAINT, sliding_mode())
    with pytest.raises(ParameterError, match="actual plant has 2"):
        tracking_rhs(NOMINAL, NLinkPendulum(m=[1.0, 1.0], L=[1.0, 1.0]), None, None)
    with pytest.raises(ParameterError, match="constraint acts on 3"):
        plant_iosystem(NLinkPendulum(m=[1.0], L=[1.0]), constraint=CONSTRAINT)
