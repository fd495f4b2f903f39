"""Tracking with actuators (issue 12, item 5): forces B τ, |τ_a| ≤ τ_max,a.

Independent truths: the KKT system of Gauss's problem and scipy's optimizer for τᶜ; the
ideal force of the fundamental equation for invertible B; the M-weighted least squares for
τᵘ; the unactuated run (bit for bit) for B = I; the stabilized constraint's own law
Ė = −αE along a servo run; the cofactor of M⁻¹ that vanishes where θ2 = θ3 (a torque on
link 3 alone cannot reach θ̈1 there); the saturation of −m sin t at m/2 (2/3 of the time).
"""

import warnings

import numpy as np
import pytest
import sympy as sp
from scipy.optimize import minimize

from robustrack.studies.constraint_models import realizability_margin, servo_force
from robustrack.constraints import Holonomic
from robustrack.controllers import GSS, control_function
from robustrack.errors import ParameterError, RealizabilityError, ScenarioError
from robustrack.mechanics import constraint_force
from robustrack.plants import pendulum_energy_constraint, triple_pendulum
from robustrack.plants.examples import FreeParticle
from robustrack.tracking import Actuators, CompilationFallback, TrackingProblem, simulate_tracking
from robustrack.tracking.actuators import compensator_command, promise_note, saturation
from robustrack.compiled import systems as rk
from robustrack.compiled.loop import compiled_loop, kernel_law, no_dense
from robustrack.compiled.backend import CompiledBackend
from robustrack.tracking.integrate import integrate_nominal
from robustrack.tracking.rhs import complex_step_jacobian, controlled_rhs, nominal_motion, uncompensated_rhs

RNG = np.random.default_rng(12)
NOMINAL = triple_pendulum()
ACTUAL = NOMINAL.replace(m=(1.1, 1.8, 3.3))
ENERGY = pendulum_energy_constraint(L1=1.0, g=9.81, gain=0.02, n=3, m1=1.0)
Q0, QD0 = np.array([1.0, 0.0, 0.0]), np.array([0.001, 0.0, 0.0])
JOINTS_1_2 = [[1.0, -1.0], [0.0, 1.0], [0.0, 0.0]]  # joint torques τ1, τ2: Q = (τ1 − τ2, τ2, 0)
GSS_W = GSS(K=10, gamma_prime=100, beta0=10, alpha0=0.5, sigma=1,
            f=control_function("signed-quadratic", eps=1e-2, alpha_c=2.0))


def _spd(n):
    X = RNG.normal(size=(n, n))
    return X @ X.T + n * np.eye(n)


def _rel(a, b) -> float:
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-300))


# --------------------------------------------------------------------------- the formulas
@pytest.mark.parametrize("n, m, k", [(3, 1, 1), (3, 1, 2), (4, 2, 2), (4, 2, 3), (5, 2, 4)])
def test_actuated_constraint_force_is_gauss_minimum(n, m, k):
    """τᶜ minimizes (q̈ − a)ᵀM(q̈ − a) = τᵀWτ under A q̈ = b: equal to the KKT solution (to rounding)
    and to scipy's SLSQP (to its tolerance), and it keeps A q̈ = b."""
    M, Q, A, b, B = _spd(n), RNG.normal(size=n), RNG.normal(size=(m, n)), RNG.normal(size=m), RNG.normal(size=(n, k))
    res = servo_force(M, Q, A, b, B)
    assert res.realizable
    a = np.linalg.solve(M, Q)
    Y = np.linalg.solve(M, B)
    W, C, r = B.T @ Y, A @ Y, b - A @ a
    kkt = np.block([[W, C.T], [C, np.zeros((m, m))]])
    tau_kkt = np.linalg.solve(kkt, np.concatenate([np.zeros(k), r]))[:k]
    assert _rel(res.lam, tau_kkt) < 1e-10
    qdd = a + Y @ res.lam
    np.testing.assert_allclose(A @ qdd, b, atol=1e-12 * (1 + np.abs(b).max()))
    opt = minimize(lambda tau: tau @ W @ tau, np.zeros(k), jac=lambda tau: 2 * W @ tau, method="SLSQP",
                   constraints=[{"type": "eq", "fun": lambda tau: C @ tau - r, "jac": lambda tau: C}],
                   options={"ftol": 1e-14, "maxiter": 500})
    assert opt.success
    # SLSQP stops at ftol 1e-14 on the objective: its τ agrees to ~1e-7 relative
    assert _rel(res.lam, opt.x) < 1e-6
    assert res.lam @ W @ res.lam <= opt.fun * (1 + 1e-10)


def test_invertible_b_gives_the_ideal_constraint_force():
    """For invertible B every force is available: B τᶜ = Qᶜ = Aᵀ(AM⁻¹Aᵀ)⁺(b − Aa) (W 2.2.9)."""
    for n, m in ((3, 1), (4, 2), (6, 3)):
        for _ in range(10):
            M, Q, A, b = _spd(n), RNG.normal(size=n), RNG.normal(size=(m, n)), RNG.normal(size=m)
            B = np.eye(n) + 0.3 * RNG.normal(size=(n, n))
            ideal = constraint_force(M, Q, A, b)
            assert _rel(servo_force(M, Q, A, b, B).force, ideal) < 1e-12
            assert _rel(servo_force(M, Q, A, b, np.eye(n)).force, ideal) < 1e-12


def test_compensator_command_is_the_m_weighted_closest_force():
    """τᵘ = W⁻¹Bᵀu minimizes (M⁻¹Bτ − u)ᵀ M (M⁻¹Bτ − u) (a least-squares problem with the
    Cholesky factor M = LLᵀ); for invertible B, B τᵘ = M u."""
    for n, k in ((3, 1), (3, 2), (5, 3)):
        M, B, u = _spd(n), RNG.normal(size=(n, k)), RNG.normal(size=n)
        L = np.linalg.cholesky(M)
        want = np.linalg.lstsq(L.T @ np.linalg.solve(M, B), L.T @ u, rcond=None)[0]
        assert _rel(compensator_command(M, B, u), want) < 1e-10
    M, B, u = _spd(4), RNG.normal(size=(4, 4)), RNG.normal(size=4)
    assert _rel(B @ compensator_command(M, B, u), M @ u) < 1e-12


def test_realizability_margin_counts_the_rank_of_a():
    """Dependent constraint rows: C = A M⁻¹ B needs the rank of A, not m; an inconsistent b is out of reach."""
    M = np.diag([1.0, 2.0, 3.0])
    A = np.array([[1.0, 0.0, 0.0], [2.0, 0.0, 0.0]])  # rank 1
    B = np.array([1.0, 1.0, 0.0])
    assert realizability_margin(M, A, B) > 0.1
    Q = np.array([0.0, 0.0, 1.0])
    ok = servo_force(M, Q, A, np.array([1.0, 2.0]), B)  # consistent rows
    assert ok.realizable and np.allclose(A @ np.linalg.solve(M, Q + ok.force), [1.0, 2.0])
    bad = servo_force(M, Q, A, np.array([1.0, 0.0]), B)  # inconsistent: never a least-squares force
    assert not bad.realizable and np.isnan(bad.force).all()


def test_actuators_validate_their_arguments():
    with pytest.raises(ParameterError, match="independent"):
        Actuators([[1.0, 2.0], [2.0, 4.0], [0.0, 0.0]])
    with pytest.raises(ParameterError, match="tau_max"):
        Actuators(JOINTS_1_2, [1.0, -2.0])
    with pytest.raises(ParameterError, match="tau_max"):
        Actuators(JOINTS_1_2, [1.0, 2.0, 3.0])
    with pytest.raises(ParameterError, match="inputs"):
        Actuators(lambda q, t: np.eye(3))
    with pytest.raises(ParameterError, match="3 coordinates"):
        simulate_tracking(NOMINAL, ENERGY, None, Q0, QD0, (0, 0.1), actual=ACTUAL, actuators=Actuators(np.eye(2)))
    act = Actuators(JOINTS_1_2, 5.0)
    np.testing.assert_array_equal(act.tau_max, [5.0, 5.0])
    np.testing.assert_array_equal(act.saturate([7.0, -2.0]), [5.0, -2.0])


# --------------------------------------------------------------------------- the compiled kernels
@pytest.mark.parametrize("B, tau_max", [(np.eye(3), np.inf), (np.eye(3), 3e4), (JOINTS_1_2, np.inf),
                                        (JOINTS_1_2, [2e4, 1e4]), ([[1.0], [0.3], [-0.5]], 8e3)],
                         ids=["I", "I-limited", "joints12", "joints12-limited", "one"])
def test_compiled_actuated_kernels_equal_the_numpy_reference(B, tau_max):
    """Right-hand sides, the exact Jacobian (vs the complex step of the numpy reference), the held
    control, the nominal servo motion and the uncompensated copy: ≤ 1e-12 relative, as test_compiled."""
    act = Actuators(B, tau_max)
    bound = act.bind(NOMINAL, ENERGY)
    loop = compiled_loop(NOMINAL, ACTUAL, ENERGY, act)
    nom = integrate_nominal(CompiledBackend(loop), Q0 + [0, 0.3, -0.2], QD0 + [1.0, 0, 0], (0.0, 0.3))
    assert nom.stats.success
    n = 3
    law = kernel_law(GSS_W, n)
    saturated = set()
    for _ in range(12):
        t = float(RNG.uniform(0.0, 0.3))
        y = nom(t)
        q, qd = y[:n], y[n:]
        x = np.concatenate([q + RNG.normal(0, 2e-3, n), qd + RNG.normal(0, 2e-2, n)])
        Qc, tau_c, _ = bound.nominal(q, qd, t)
        args = (nom.dense, loop.model, law, np.zeros(n), False)

        def ref(tt, X):
            return controlled_rhs(NOMINAL, ACTUAL, GSS_W, tt, X, q, qd, Qc, actuators=bound, tau_c=tau_c)

        assert _rel(rk.controlled_rhs(loop.controlled, t, x, *args), ref(t, x)) <= 1e-12
        assert _rel(rk.controlled_jac(loop.controlled, t, x, *args), complex_step_jacobian(ref, t, x)) <= 1e-12
        u = RNG.normal(0, 50.0, n)
        held = args[:-2] + (u, True)
        assert _rel(rk.controlled_rhs(loop.controlled, t, x, *held), controlled_rhs(
            NOMINAL, ACTUAL, GSS_W, t, x, q, qd, Qc, u_held=u, actuators=bound, tau_c=tau_c)) <= 1e-12
        tau_raw = bound.command(x[:n], t, tau_c, GSS_W(t, x[:n] - q, x[n:] - qd, np.zeros(0)))[1]
        saturated.add(bool(np.any(np.abs(tau_raw) > act.tau_max)))
        ys = np.concatenate([RNG.uniform(-2, 2, n), RNG.normal(0, 2, n)])
        mot = nominal_motion(NOMINAL, ENERGY, ys[:n], ys[n:], t, actuators=bound)
        assert _rel(rk.system_rhs(loop.nominal, t, ys, no_dense(2 * loop.n), loop.model),
                    np.concatenate([ys[n:], mot.qdd])) <= 1e-12
        assert _rel(rk.system_rhs(loop.uncompensated, t, ys, nom.dense, loop.model),
                    uncompensated_rhs(ACTUAL, t, ys, Qc, actuators=bound, tau_c=tau_c)) <= 1e-12
    if act.limited:  # both branches (within the limits and clipped) were exercised (|τ| ~ 1e2–3e5 here)
        assert saturated == {True, False}


def test_b_identity_is_the_unactuated_run_bit_for_bit():
    """B = I, no limits: every force is available, and the run is the unactuated one to the last bit
    (compiled, 10 s) and on the numpy reference (short)."""
    plain = simulate_tracking(NOMINAL, ENERGY, GSS_W, Q0, QD0, (0.0, 10.0), actual=ACTUAL)
    eye = simulate_tracking(NOMINAL, ENERGY, GSS_W, Q0, QD0, (0.0, 10.0), actual=ACTUAL, actuators=Actuators(np.eye(3)))
    for name in ("q", "qd", "qc", "qcd", "qa", "Qc"):
        np.testing.assert_array_equal(getattr(eye, name), getattr(plain, name), err_msg=name)
    assert eye.metrics["max_abs_e"] == plain.metrics["max_abs_e"]
    assert eye.metrics["bounds_held"] is True and plain.metrics["bounds_held"] is True
    np.testing.assert_array_equal(eye.Qu, plain.Qu)
    assert _rel(eye.tau, plain.Qc + plain.Qu) < 1e-12  # τ = τᶜ + τᵘ = B⁻¹Qᶜ + W⁻¹Bᵀu = Qᶜ + M u
    assert eye.metrics["saturation_fraction"] == 0.0 and eye.metrics["first_saturation_time"] is None
    kw = dict(n_points=11, backend="numpy", uncompensated=False)
    a = simulate_tracking(NOMINAL, ENERGY, GSS_W, Q0, QD0, (0.0, 0.05), actual=ACTUAL, **kw)
    b = simulate_tracking(NOMINAL, ENERGY, GSS_W, Q0, QD0, (0.0, 0.05), actual=ACTUAL, actuators=Actuators(np.eye(3)), **kw)
    np.testing.assert_array_equal(a.qc, b.qc)


# --------------------------------------------------------------------------- servo runs
def test_constraint_holds_along_an_actuated_run():
    """B spans (1, 1, 0) and (0, 0, 1): the ideal force (along θ1 only) is not available, so the nominal
    motion is the servo one — different from the ideal — and still A q̈ = b: the stabilized energy
    E1 = ½θ̇1² − g cos θ1 follows Ė1 = −α E1, α = 0.02 θ̇1⁴ (W 2.3.7), integrated here by quadrature."""
    act = Actuators([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    run = TrackingProblem(NOMINAL, ENERGY, None, Q0, QD0, (0.0, 5.0), actuators=act).nominal_run()
    ideal = TrackingProblem(NOMINAL, ENERGY, None, Q0, QD0, (0.0, 5.0)).nominal_run()
    t = np.linspace(0.0, 5.0, 20001)
    y, yi = run.solution(t), ideal.solution(t)
    assert np.max(np.abs(y[:, :3] - yi[:, :3])) > 1e-2  # a different motion
    mot = nominal_motion(NOMINAL, ENERGY, y[:, :3], y[:, 3:], t, actuators=run.actuators)
    A, b = ENERGY.matrices(y[:, :3], y[:, 3:], t)
    assert np.max(mot.residual / (1 + np.abs(b[:, 0]))) < 1e-12
    E = 0.5 * y[:, 3] ** 2 - 9.81 * np.cos(y[:, 0])
    alpha = 0.02 * y[:, 3] ** 4
    integral = np.concatenate([[0.0], np.cumsum(0.5 * (alpha[1:] + alpha[:-1]) * np.diff(t))])
    # trapezoid on 20001 points (h = 2.5e-4) of a smooth integrand: error ≪ 1e-7; the solve keeps the
    # states to rtol 1e-8 of their size (θ̇1 up to a few rad/s, g = 9.81): E to ~1e-7 absolute
    assert E[-1] / E[0] < 1e-3  # the requirement is met: E1 → 0 (it starts at −5.3)
    np.testing.assert_allclose(E, E[0] * np.exp(-integral), rtol=1e-7, atol=1e-7)


def test_link_3_torque_is_refused_where_it_cannot_reach_theta1():
    """Q = (0, 0, τ): (M⁻¹)₁₃ ∝ sin(θ1 − θ2) sin(θ2 − θ3) (cofactor of M), so C = L1 θ̇1 (M⁻¹)₁₃ vanishes
    where θ2 = θ3. At q0 = (1, 0, 0): refused before any solve; from (1, 0.5, 0.2): the run stops where
    θ2 − θ3 crosses 0, with the time, the state and why — on both backends."""
    act = Actuators([0.0, 0.0, 1.0])
    with pytest.raises(RealizabilityError, match=r"not realizable at t = 0, q = \[1\.0, 0\.0, 0\.0\].*rank of A"):
        TrackingProblem(NOMINAL, ENERGY, None, Q0, QD0, (0.0, 10.0), actuators=act).nominal_run()
    for backend in ("auto", "numpy"):
        with pytest.raises(RealizabilityError, match="not realizable at t = 0.1") as info:
            TrackingProblem(NOMINAL, ENERGY, None, [1.0, 0.5, 0.2], QD0, (0.0, 10.0), actuators=act,
                            backend=backend).nominal_run()
        err = info.value
        assert 0.05 < err.t < 0.2 and err.margin < 1e-9
        assert abs(np.sin(err.q[0] - err.q[1]) * np.sin(err.q[1] - err.q[2])) < 1e-6


def test_underactuated_pendulum_tracks_the_actuated_links_and_promises_nothing():
    """Joint torques at joints 1 and 2: the energy constraint's force acts on θ1 only, inside range(B),
    so B τᶜ is the ideal Qᶜ; θ1, θ2 are followed, θ3 is not, and the bound is not judged."""
    res = simulate_tracking(NOMINAL, ENERGY, GSS_W, Q0, QD0, (0.0, 10.0), actual=ACTUAL, actuators=Actuators(JOINTS_1_2))
    y = np.concatenate([res.q, res.qd], axis=1)
    ideal = nominal_motion(NOMINAL, ENERGY, y[:, :3], y[:, 3:], res.t).Qc
    assert _rel(res.Qc, ideal) < 1e-12
    e = res.metrics["max_abs_e_per_coordinate"]
    assert max(e[:2]) < 1e-3 and e[2] > 1.0
    assert res.metrics["bounds_held"] is None
    assert res.info["bounds_note"].startswith("not promised: underactuated")
    assert res.info["actuators"]["fully_actuated"] is False
    assert res.tau.shape == (res.t.size, 2)
    np.testing.assert_allclose(res.Qc + res.Qu, res.tau @ np.asarray(JOINTS_1_2).T, rtol=0,
                               atol=1e-12 * np.abs(res.tau).max())


# --------------------------------------------------------------------------- saturation
def _sine_follower(tau_max, t_end=2 * np.pi, compensator=None, transient=None):
    """A free particle of mass 2 made to follow x = sin t: Qᶜ = (−2 sin t, 0, 0) (no given forces).

    On the numpy reference: this structure serves only these tests, and compiling it would cost about a
    minute on a fresh machine for a second of numpy. The compiled actuated kernels (saturation included)
    are checked against the numpy reference in test_compiled_actuated_kernels_equal_the_numpy_reference."""
    x, y, z, t = sp.symbols("x y z t")
    con = Holonomic(x - sp.sin(t), [x, y, z], t)
    plant = FreeParticle(m=2.0)
    return simulate_tracking(plant, con, compensator, np.zeros(3), [1.0, 0.0, 0.0],
                             (0.0, t_end), actual=plant.replace(m=2.2), actuators=Actuators(np.eye(3), tau_max), transient=transient,
                             backend="numpy")


def test_saturation_fraction_on_a_known_case():
    """τᶜ = −2 sin t against τ_max = 1: saturated where |sin t| > 1/2, 2/3 of [0, 2π], first at π/6."""
    res = _sine_follower(1.0)
    np.testing.assert_allclose(res.info["actuators"]["tau_max"], [1.0, 1.0, 1.0])
    m = res.metrics
    # the indicator's trapezoid errs by at most half a step at each of its 4 switches (steps ≤ 2π/1000)
    assert m["saturation_fraction"] == pytest.approx(2 / 3, abs=4 * 0.5 * (2 * np.pi / 1000) / (2 * np.pi))
    assert m["first_saturation_time"] == pytest.approx(np.pi / 6, abs=2 * np.pi / 1000)
    assert np.max(np.abs(res.tau)) == pytest.approx(1.0)
    assert m["bounds_held"] is None  # no compensator: nothing promised
    free = _sine_follower(np.inf)
    assert free.metrics["saturation_fraction"] == 0.0 and free.metrics["first_saturation_time"] is None


def test_saturation_after_the_transient_means_the_bound_is_not_judged():
    gss = GSS(K=10, gamma_prime=10, beta0=10, alpha0=0.5, sigma=1,
              f=control_function("signed-quadratic", eps=1e-2, alpha_c=2.0))
    res = _sine_follower(1.0, t_end=1.0, compensator=gss)
    first = res.metrics["first_saturation_after_transient"]
    # the actual mass is 2.2: the command ≈ −2.2 sin t reaches 1 at asin(1/2.2) ≈ 0.47, before π/6
    assert 0.4 < first < np.pi / 6 + 0.01
    assert res.metrics["bounds_held"] is None
    assert res.info["bounds_note"].startswith(f"not judged from t = {first:.6g} s on")
    ok = _sine_follower(1.0, t_end=0.4, compensator=gss)  # 2.2 sin 0.4 ≈ 0.86 < 1
    assert ok.metrics["first_saturation_time"] is None and ok.metrics["bounds_held"] is True


def test_saturation_report_and_promise_note():
    t = np.linspace(0.0, 1.0, 11)
    tau = np.zeros((11, 2))
    tau[3:6, 1] = 5.0
    s = saturation(t, tau, np.array([1.0, 1.0]), transient=0.5)
    assert s == {"saturation_fraction": pytest.approx(0.3), "first_saturation_time": pytest.approx(0.3),
                 "first_saturation_after_transient": pytest.approx(0.5)}
    assert promise_note(True, 3, 3, saturation(t, tau, np.array([9.0, 9.0]), 0.0), 0.0) == (True, None)
    applies, note = promise_note(True, 3, 3, saturation(t, tau, np.array([1.0, 1.0]), 0.6), 0.6)
    assert applies and "during the transient only" in note
    applies, note = promise_note(False, 3, 2, s, 0.5, [1e-4, 2e-4, 3.0])
    assert not applies and "underactuated" in note and "saturate from t = 0.5" in note and "3" in note


def test_a_callable_input_matrix_runs_on_numpy_with_a_notice():
    act = Actuators(lambda q, t: np.broadcast_to(np.asarray(JOINTS_1_2), np.shape(q)[:-1] + (3, 2)), inputs=2)
    with pytest.warns(CompilationFallback, match="B\\(q, t\\) is a Python callable"):
        res = simulate_tracking(NOMINAL, ENERGY, GSS_W, Q0, QD0, (0.0, 0.05), actual=ACTUAL, n_points=6, actuators=act,
                                uncompensated=False)
    const = simulate_tracking(NOMINAL, ENERGY, GSS_W, Q0, QD0, (0.0, 0.05), actual=ACTUAL, n_points=6,
                              actuators=Actuators(JOINTS_1_2), uncompensated=False)
    # the same equations on two implementations of BDF (scipy's, its compiled port): tolerance-level agreement
    np.testing.assert_allclose(res.qc, const.qc, rtol=0, atol=1e-8)


def test_campaign_closed_loop_passes_the_actuators():
    loop = TrackingProblem(NOMINAL, ENERGY, GSS_W, Q0, QD0, (0.0, 0.2), n_points=11, actuators=Actuators(JOINTS_1_2))
    run = loop.nominal_run()
    assert run.actuators is not None
    res = loop.track(run, ACTUAL)
    assert res.metrics["bounds_held"] is None and res.info["actuators"]["k"] == 2


# --------------------------------------------------------------------------- the scenario
def test_underactuated_scenario_in_the_catalog():
    from robustrack.cli import main
    from robustrack.scenarios import list_scenarios, load_scenario

    names = {s.name: s for s in list_scenarios()}
    s = names["triple-pendulum-underactuated"]
    assert "Servo constraints" in s.source and s.config["actuators"]["B"] == JOINTS_1_2
    assert main(["show", "triple-pendulum-underactuated"]) == 0
    with pytest.raises(ScenarioError, match=r"`actuators.B` must have 3 rows"):
        load_scenario("triple-pendulum", ["actuators.B=[[1.0], [0.0]]"])
    with pytest.raises(ScenarioError, match=r"`actuators.B` must have independent columns"):
        load_scenario("triple-pendulum", ["actuators.B=[[1, 2], [0, 0], [0, 0]]"])
    with pytest.raises(ScenarioError, match=r"`actuators.B` must be a list of rows"):
        load_scenario("triple-pendulum", ["actuators.B=[1, 0, 0]"])
    with pytest.raises(ScenarioError, match=r"`actuators.tau_max` must be \[\] \(unlimited\), one number or 2"):
        load_scenario("triple-pendulum-underactuated", ["actuators.tau_max=[1, 2, 3]"])
    with pytest.raises(ScenarioError, match=r"`actuators.tau_max` limits actuators, but `actuators.B` is empty"):
        load_scenario("triple-pendulum", ["actuators.tau_max=[10]"])
    with pytest.raises(ScenarioError, match=r"`actuators.tau_max` must be"):
        load_scenario("triple-pendulum-underactuated", ["actuators.tau_max=[0, 5]"])
    load_scenario("triple-pendulum-underactuated", ["actuators.tau_max=[inf, 5e3]"])


def test_actuator_keys_in_a_toml_file_are_named_with_their_line(tmp_path):
    from robustrack.scenarios import load_scenario

    path = tmp_path / "mine.toml"
    path.write_text('[scenario]\nname = "mine"\nkind = "triple-pendulum-tracking"\n\n[actuators]\n'
                    'B = [[1.0], [0.0]]\n', encoding="utf-8")
    with pytest.raises(ScenarioError, match=r"mine.toml \(line 6\): `actuators.B` must have 3 rows"):
        load_scenario(path)


def test_cli_runs_the_underactuated_scenario_and_says_why_nothing_is_promised(capsys):
    from robustrack.cli import main

    with warnings.catch_warnings():
        warnings.simplefilter("error", CompilationFallback)  # it runs compiled
        assert main(["run", "triple-pendulum-underactuated", "--set", "simulation.t_end=1",
                     "--set", "actuators.tau_max=[50, 5]"]) == 0
    out = capsys.readouterr().out
    assert "held: —" in out and "not promised: underactuated" in out
    assert "saturation_fraction" in out and "saturate from t = " in out
    assert main(["run", "triple-pendulum", "--set", "simulation.t_end=0.2"]) == 0
    assert "saturation_fraction" not in capsys.readouterr().out  # unactuated runs do not list them
