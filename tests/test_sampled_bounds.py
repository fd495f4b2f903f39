"""The sampled loop's bounds (robustrack.controllers.sampled, docs/theory/sensing.md), each step at its worst point.

Truths: the continuous bound (GSS.bounds(), another code path) as the hold's period goes to 0; the O(h) band of a
sampled sliding mode (Su, Drakunov & Özgüner 2000); the estimators' errors attained by the worst measurement
sequence (alternating noise, a constant acceleration); the dominance step at the adversarial measurement (the largest
|f| on another joint), where the older (1 − μ) g((S − η)/ε) is broken; and the error dynamics ë = δq + (I − M̃_a) u
integrated exactly under adversarial δq, M̃_a and measurement errors, which never leave a box that passed.
"""

from __future__ import annotations

import functools
import itertools
import math

import numpy as np
import pytest

from robustrack.controllers import GD, GSS, control_function
from robustrack.controllers.sampled import LoopErrors, gss_box
from robustrack.loop import Sensor
from robustrack.loop.sensor import estimate_velocity


def _loop(n=1, h=1e-3, D=0, de=0.0, noise=0.0, lag=0.0, accel=0.0, e0=0.0, ed0=0.0, adds=True):
    full = lambda v: np.full(n, float(v))  # noqa: E731
    return LoopErrors(h, D, full(de), full(noise), lag, full(ed0), adds, full(accel), full(e0), full(ed0))


def _gss(comp, gamma, loop):
    mu = 1.0 - comp.alpha0 / comp.sigma
    k = np.broadcast_to(np.asarray(comp.K, dtype=float), loop.de.shape)
    sup = math.inf if comp.f.unbounded else float(comp.f.g(np.array(1e300)))
    return gss_box(k, comp.f.g, comp.f.eps, sup, comp._gain, mu, gamma, loop), mu, k


# --------------------------------------------------------------------------- #
# limits with an independent truth
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize("f", ["tanh", "signed-quadratic"])
def test_the_hold_alone_tends_to_the_continuous_bound_at_order_h(f):
    comp = GSS(f=control_function(f, eps=0.01, **({"alpha_c": 2.0} if f != "tanh" else {})))
    gamma = 50.0
    S0 = 0.5 * comp._box(gamma)  # the continuous L_ε/2 (W 7.2.26), iterated by another code path
    slopes = []
    for h in (1e-7, 5e-8):
        box, *_ = _gss(comp, gamma, LoopErrors.exact(h, 3))
        slopes.append((box.size - S0) / h)
    # the bisection resolves S to 1e-13 relative, the gaps here are ~1e-2 of S0: (S(h) − S0)/h is positive and
    # settles as h → 0 (O(h), its slope's change of order h itself)
    assert slopes[0] > 0 and slopes[1] == pytest.approx(slopes[0], rel=0.02)


def test_a_sampled_sliding_modes_band_is_of_order_h():
    # g = sign: the continuous bound is s → 0; sampled, the quasi-sliding band is O(h) (Su, Drakunov & Özgüner)
    comp = GSS(f=control_function("sign", eps=1.0))
    sizes = [_gss(comp, 50.0, LoopErrors.exact(h, 2))[0].size for h in (1e-4, 1e-5, 1e-6)]
    assert sizes[0] / sizes[1] == pytest.approx(10.0, rel=0.05) and sizes[1] / sizes[2] == pytest.approx(10.0, rel=0.01)


def test_more_delay_more_noise_a_larger_box_or_none():
    comp = GSS(f=control_function("tanh", eps=0.05))
    sizes = [_gss(comp, 10.0, _loop(3, D=D, de=1e-5, noise=1e-3))[0].size for D in (0, 1, 2, 4)]
    assert sizes == sorted(sizes) and sizes[0] < sizes[-1]
    # a bounded g cannot dominate an arbitrarily large velocity error: no bound, not a smaller one
    assert _gss(comp, 10.0, _loop(3, noise=50.0))[0] is None


# --------------------------------------------------------------------------- #
# each step at its worst point
# --------------------------------------------------------------------------- #
def test_the_dominance_step_at_the_adversarial_measurement_and_the_older_step_broken():
    # at the largest |s_0| = S, ŝ_0 = S − η (toward 0) and ŝ_1 = S + η on the other joint, M̃_a's row pushing f(ŝ_1)
    # against s_0: s_0 [(I − M̃_a) f(ŝ)]_0 = S (g((S − η)/ε) − μ g((S + η)/ε)), the bound attained
    eps, mu, S, eta = 0.158, 0.5, 0.2, 0.11
    g = np.tanh
    Mt = np.array([[0.0, mu], [mu, 0.0]])
    s_hat = np.array([S - eta, S + eta])
    term = S * ((np.eye(2) - Mt) @ g(s_hat / eps))[0]
    assert term == pytest.approx(S * (g((S - eta) / eps) - mu * g((S + eta) / eps)), rel=1e-14)
    # the older step, (1 − μ) g((S − η)/ε), promised more than this state has: it is false
    assert term < S * (1 - mu) * g((S - eta) / eps) - 1e-3


def test_the_backward_differences_error_is_attained_by_the_worst_sequence():
    h, de, A = 1e-3, 2e-5, 3.0
    s = Sensor(q_resolution=2 * de, velocity="difference")  # rounding: δe = Δ/2
    loop = s.error_bound(h, np.array([A]), 100).loop
    bound = loop.velocity_error(0.0)[0]
    assert bound == pytest.approx(2 * de / h + h * A / 2, rel=1e-15)
    # q = A t²/2, measured +δe now and −δe before: (q_k − q_{k−1})/h − q̇(t_k) = 2δe/h − hA/2; with A < 0 both add
    t = np.array([0.0, h])
    q = -A * t**2 / 2 + np.array([-de, de])
    err = estimate_velocity(q[1:], q[:1], np.zeros(1), h)[0] - (-A * h)
    assert err == pytest.approx(bound, rel=1e-9)


def test_the_filtered_differences_error_tends_to_its_bound_on_the_worst_sequence():
    h, de, A, fc = 1e-3, 2e-5, -3.0, 25.0
    s = Sensor(q_resolution=2 * de, velocity="filtered", velocity_cutoff=fc)
    bound = s.error_bound(h, np.array([abs(A)]), 100).loop.velocity_error(0.0)[0]
    # every past measurement −δe, the present +δe; a constant acceleration: the filter's lag and the noise at their
    # worst (summation by parts, docs/theory/sensing.md); after many samples the error is the bound to 1e-9
    k_end = 4000
    t = h * np.arange(k_end + 1)
    q = A * t**2 / 2
    v = 0.0
    for k in range(1, k_end + 1):
        now = q[k] + (de if k == k_end else -de)
        v = estimate_velocity(np.array([now]), np.array([q[k - 1] - de]), np.array([v]), h, fc)[0]
    err = abs(v - A * t[-1])
    assert err <= bound * (1 + 1e-12) and err == pytest.approx(bound, rel=1e-9)


def test_a_truncating_encoder_errs_by_up_to_one_quantum_and_the_bound_says_so():
    q_res = 1e-3
    r, t = Sensor(q_resolution=q_res), Sensor(q_resolution=q_res, quantization="truncate")
    q = np.array([0.9999 * q_res])
    z = np.zeros(1)
    seen_r = r.measure(0, q, z, 1e-3, None, z, z, z)[0]
    seen_t = t.measure(0, q, z, 1e-3, None, z, z, z)[0]
    assert abs(seen_t - q)[0] > q_res / 2  # the rounding bound Δ/2 would be broken
    assert abs(seen_t - q)[0] <= t.error_bound(1e-3, z, 10).e[0] == q_res
    assert abs(seen_r - q)[0] <= r.error_bound(1e-3, z, 10).e[0] == q_res / 2


def test_a_scenarios_sensor_takes_the_encoders_quantization_by_key():
    from robustrack.errors import ScenarioError
    from robustrack.scenarios import load_scenario

    sets = ["simulation.t_end=0.1", "compensator.sample_period=1e-3", "sensor.q_resolution=1e-4"]
    pb = load_scenario("triple-pendulum", sets + ["sensor.quantization=truncate"]).build()
    assert pb.sensor.quantization == "truncate" and pb.sensor.error_bound(1e-3, np.zeros(3), 10).e[0] == 1e-4
    with pytest.raises(ScenarioError, match=r"`sensor.quantization` must be one of \['round', 'truncate'\]"):
        load_scenario("triple-pendulum", sets + ["sensor.quantization=floor"]).build()


def test_two_noisy_streams_are_inside_jointly_at_the_confidence():
    from scipy.stats import norm

    both = Sensor(q_noise=1e-4, qd_noise=1e-3, confidence=0.99).error_bound(1e-3, np.zeros(2), 500)
    # one union bound over all 2 streams × 500 samples × 2 joints: P(all inside) ≥ 0.99 jointly, not 2·0.99 − 1
    z = norm.isf(0.01 / (2 * 2000))
    assert both.z == pytest.approx(z, rel=1e-12) and both.loop.de[0] == pytest.approx(z * 1e-4, rel=1e-12)
    assert both.loop.noise_edot[0] == pytest.approx(z * 1e-3, rel=1e-12)


def test_the_estimators_start_from_the_reference_velocity_is_in_the_error():
    s = Sensor(velocity="difference")
    loop = s.error_bound(1e-3, np.zeros(1), 10, edot0=np.array([0.3])).loop
    assert loop.velocity_error(0.0)[0] == 0.3  # the first sample's v̂ is the reference's: off by |ė(0)|
    f = Sensor(velocity="filtered", velocity_cutoff=10.0).error_bound(1e-3, np.zeros(1), 10, edot0=np.array([0.3]))
    assert f.loop.velocity_error(0.0)[0] == pytest.approx(0.3)  # forgotten geometrically: added to the rest


# --------------------------------------------------------------------------- #
# the theorem against the error dynamics at their worst
# --------------------------------------------------------------------------- #
def _adversarial_gss_run(comp, gamma, mu, loop, k, strategy, rng, T=0.4, sub=8):
    """ë = δq + (I − M̃_a) u_applied integrated exactly (piecewise-constant ë on sub-steps of the hold) with δq,
    M̃_a and the measurement errors chosen against the box: the largest s_i is pushed outward, the measurement
    error points toward 0 on it and away on the others, M̃_a couples them with row sums μ. Returns the largest
    ‖s‖∞, the largest |e_i| k_i and the largest ‖ė‖∞ seen."""
    n, h, D = loop.de.size, loop.h, loop.delay
    e = loop.e0 * rng.choice([-1, 1], n)
    ed = loop.edot0 * rng.choice([-1, 1], n)
    f = comp.f
    queue = [np.zeros(n)] * D
    worst_s = worst_e = worst_ed = 0.0
    for _ in range(int(round(T / h))):
        s = k * e + ed
        i = int(np.argmax(np.abs(s)))
        sign = np.sign(s[i]) or 1.0
        if strategy == "adversarial":
            dq_e = -sign * loop.de * np.where(np.arange(n) == i, 1.0, -1.0)
            dv = -sign * loop.velocity_error(0.0) * np.where(np.arange(n) == i, 1.0, -1.0)
        else:
            dq_e = loop.de * rng.uniform(-1, 1, n)
            dv = loop.velocity_error(0.0) * rng.uniform(-1, 1, n)
        e_hat, v_hat = e + dq_e, ed + dv
        u = -k * v_hat - comp._gain * f(k * e_hat + v_hat)
        queue.append(u)
        u_applied = queue.pop(0)
        dt = h / sub
        for _ in range(sub):
            s = k * e + ed
            i = int(np.argmax(np.abs(s)))
            sign = np.sign(s[i]) or 1.0
            dq = gamma * sign * np.where(np.arange(n) == i, 1.0, rng.uniform(-1, 1, n))
            Mt = np.zeros((n, n))
            if n > 1:  # row sums μ: the coupling that pushes f of the other joints against s_i
                for r in range(n):
                    Mt[r, (r + 1) % n] = mu * (-np.sign(u_applied[(r + 1) % n]) * np.sign(s[r]) or 1.0)
            else:
                Mt[0, 0] = mu * (1.0 if sign * u_applied[0] < 0 else -1.0)
            edd = dq + (np.eye(n) - Mt) @ u_applied
            e = e + ed * dt + 0.5 * edd * dt**2
            ed = ed + edd * dt
            s = k * e + ed
            worst_s = max(worst_s, float(np.abs(s).max()))
            worst_e = max(worst_e, float(np.max(np.abs(e) * k)))
            worst_ed = max(worst_ed, float(np.abs(ed).max()))
    return worst_s, worst_e, worst_ed


@pytest.mark.parametrize("seed", range(6))
def test_no_guaranteed_box_is_left_under_adversarial_error_dynamics(seed):
    tried, left = _adversarial_designs(seed)
    assert tried >= 4 and left == 0  # (6 designs × 2 strategies a seed; those with a box are run)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(6, 66))
def test_no_guaranteed_box_is_left_under_adversarial_error_dynamics_many(seed):
    assert _adversarial_designs(seed)[1] == 0


def _adversarial_designs(seed):
    rng = np.random.default_rng(seed)
    tried = left = 0
    for _ in range(6):
        n = int(rng.integers(1, 3))
        f = str(rng.choice(["tanh", "saturation", "signed-quadratic"]))
        eps = float(10 ** rng.uniform(-2, -0.5))
        comp = GSS(K=float(rng.uniform(2, 20)), gamma_prime=float(rng.uniform(1, 20)), beta0=float(rng.uniform(1, 30)),
                   alpha0=float(rng.uniform(0.5, 0.95)),
                   f=control_function(f, eps=eps, **({"alpha_c": 2.0} if f == "signed-quadratic" else {})))
        gamma = comp.gamma_prime * float(rng.uniform(0.3, 1.0))
        h = float(10 ** rng.uniform(-4, -2.5))
        loop = _loop(n, h=h, D=int(rng.integers(0, 3)), de=float(10 ** rng.uniform(-7, -4)),
                     noise=float(10 ** rng.uniform(-5, -2)), lag=0.0, e0=0.0, ed0=0.0)
        box, mu, k = _gss(comp, gamma, loop)
        if box is None:
            continue
        for strategy in ("adversarial", "random"):
            s, ke, ed = _adversarial_gss_run(comp, gamma, mu, loop, k, strategy, rng, T=min(0.3, 300 * h))
            tried += 1
            # the box holds s, |e_i| k_i ≤ S and ‖ė‖∞ ≤ 2S (up to the exact integration's rounding)
            if not (s <= box.size * (1 + 1e-9) and ke <= box.size * (1 + 1e-9) and ed <= box.edot * (1 + 1e-9)):
                left += 1
    return tried, left


def test_gd_has_a_sampled_box_and_a_loop_it_cannot_dominate_has_none():
    comp = GD(f=control_function("tanh", eps=0.05), Kd=3.0)
    b = comp.sampled_bounds(20.0, _loop(2, D=1, de=1e-6, noise=1e-4))
    assert math.isfinite(b.edot) and b.edot > comp.bounds(20.0).edot and math.isinf(b.e)
    # with K_d = 0 a bounded g cannot dominate a large velocity error (with K_d > 0 the linear damping always does)
    assert math.isinf(GD(f=control_function("tanh", eps=0.05), Kd=0.0).sampled_bounds(100.0, _loop(2, noise=10.0)).edot)
    assert GD(Ki=0.5, Kd=3.0).sampled_bounds(20.0, _loop(2)) is None  # the integral of a measurement error grows


def test_the_box_must_hold_the_start_and_the_samples_before_the_first_control():
    comp = GSS(f=control_function("tanh", eps=0.05))
    rest, *_ = _gss(comp, 10.0, _loop(2, D=2))
    assert rest is not None
    far, *_ = _gss(comp, 10.0, _loop(2, D=2, e0=10 * rest.size))
    assert far is None or far.size > 10 * rest.size * 10.0  # outside the least box: only a larger one may hold it
    # nothing acts for D samples: the start drifts by |ė0| D h + Γ (D h)²/2; a start inside holds
    assert _gss(comp, 10.0, _loop(2, D=2, e0=0.1 * rest.size / 10.0))[0] is not None


def test_every_sign_pattern_of_the_worst_point_repels_at_the_box():
    # the derivative of the largest |s_i| at the box's boundary, over every vertex of the uncertainty: δq = ±Γ,
    # M̃_a's entries ±μ/(n−1) per row, ė at ±2S, the argument errors ±η, ±ν (n = 2)
    comp = GSS(K=[5.0, 12.0], f=control_function("tanh", eps=0.05))
    gamma = 8.0
    loop = _loop(2, D=1, de=1e-5, noise=2e-3)
    box, mu, k = _gss(comp, gamma, loop)
    S, eta, nu = box.size, box.terms["eta"], box.terms["nu"]
    worst = -math.inf
    for dq0, m01, m10, s1s, ed1, a0, a1, b0, b1 in itertools.product((-1, 1), repeat=9):
        s = np.array([S, s1s * S])
        edot = np.array([2 * S, ed1 * 2 * S])  # at a corner: s_0 = S with e_0 = −S/k_0
        Mt = np.array([[0.0, m01 * mu], [m10 * mu, 0.0]])
        s_hat = s + np.array([a0 * eta, a1 * eta])
        v_err = np.array([b0 * nu, b1 * nu])
        sdot = (np.array([dq0 * gamma, gamma]) + Mt @ (k * edot) - (np.eye(2) - Mt) @ (k * v_err)
                - comp._gain * (np.eye(2) - Mt) @ comp.f(s_hat))
        worst = max(worst, sdot[0])
    assert worst < 0


# --------------------------------------------------------------------------- #
# the real loop: a user's plant from functions, random designs × sensors × seeds × periods × delays
# --------------------------------------------------------------------------- #
@functools.lru_cache(maxsize=None)
def _users_plants(scale, force):
    """A nominal plant from two functions and an actual one (M scaled, a disturbance); one structure each per
    (scale, force), compiled once."""
    from robustrack.plants import Plant

    def M(q, t):
        return np.array([[2.0 + np.cos(q[1]), 0.3], [0.3, 1.0]])

    def Q(q, qd, t):
        return np.array([-9.81 * np.sin(q[0]), -0.5 * qd[1]])

    def Ma(q, t):
        return scale * np.array([[2.0 + np.cos(q[1]), 0.3], [0.3, 1.0]])

    def Qa(q, qd, t):
        return np.array([-9.81 * scale * np.sin(q[0]) + force * np.sin(7.0 * t), -0.5 * qd[1]])

    return Plant.from_functions(M, Q, names=("a", "b")), Plant.from_functions(Ma, Qa, names=("a", "b"))


def _random_loop_runs(seeds):
    """(runs, guaranteed, broken): runs of random designs and loops; guaranteed = coverage "guaranteed" with the
    run's assumptions held; broken = such a run that diverged or ended outside its bound."""
    from robustrack.tracking import TrackingProblem

    runs = guaranteed = 0
    broken = []
    for seed in seeds:
        rng = np.random.default_rng(1000 + seed)
        nominal, actual = _users_plants(float(rng.choice([0.92, 1.08])), float(rng.choice([0.5, 2.0])))
        f = str(rng.choice(["tanh", "saturation"]))
        comp = GSS(K=float(rng.uniform(2, 10)), gamma_prime=float(rng.uniform(10, 30)),
                   beta0=float(rng.uniform(5, 50)), alpha0=float(rng.uniform(0.6, 0.9)),
                   f=control_function(f, eps=float(10 ** rng.uniform(-1.3, -0.3))))
        h = float(rng.choice([1e-3, 2e-3, 5e-3]))
        velocity = str(rng.choice(["exact", "difference", "filtered"]))
        sensor = Sensor(q_noise=float(rng.choice([0.0, 1e-5, 1e-4])), q_resolution=float(rng.choice([0.0, 1e-4])),
                        velocity=velocity, velocity_cutoff=float(0.1 / h) if velocity == "filtered" else 0.0,
                        delay=int(rng.integers(0, 3)) * h, seed=int(seed),
                        quantization=str(rng.choice(["round", "truncate"])))
        pb = TrackingProblem(nominal, None, comp, [0.3, -0.2], [0.0, 0.5], (0.0, 0.5), actual=actual,
                             sample_period=h, sensor=sensor, gamma=comp.gamma_prime, n_points=51,
                             uncompensated=False)
        r = pb.simulate(raise_on_failure=False)
        runs += 1
        cov = (r.info["bounds"] or {}).get("coverage") or ""
        if cov.startswith("guaranteed") and r.metrics.get("assumptions_held") is not False:
            guaranteed += 1
            if not (r.success and r.metrics.bounds_held):
                broken.append((seed, r.solver.get("message"), r.metrics.get("max_abs_e"), r.bounds["e"]))
    return runs, guaranteed, broken


def test_no_guaranteed_run_of_a_users_plant_ends_outside_its_bound_or_diverges():
    runs, guaranteed, broken = _random_loop_runs(range(6))
    assert broken == [] and guaranteed >= 2  # the property is tested on guaranteed runs, not vacuously


@pytest.mark.slow
def test_no_guaranteed_run_ends_outside_its_bound_over_many_loops():
    runs, guaranteed, broken = _random_loop_runs(range(6, 406))
    assert broken == [] and guaranteed >= 100


def test_guaranteed_only_where_the_force_bound_stays_inside_the_effort_limits():
    # τ_i = Qᶜ_i + (M u)_i, |u_j| ≤ U (the box's law output): |τ_i| ≤ max|Qᶜ_i| + max Σ_j |M_ij| U along the nominal
    from robustrack.loop import sensed_bounds
    from robustrack.loop.bounds import torque_reach
    from robustrack.scenarios import load_scenario
    from robustrack.tracking.actuators import Actuators
    from robustrack.tracking.rhs import nominal_motion

    pb = load_scenario("triple-pendulum", ["simulation.t_end=0.3", "compensator.f=tanh", "compensator.eps=0.3",
                                           "compensator.gss.beta0=100", "compensator.sample_period=1e-3"]).build()
    run = pb.nominal_run()
    b = sensed_bounds(pb, run)
    sol = run.solution
    t = np.unique(np.concatenate([sol.t, np.linspace(sol.t[0], sol.t[-1], 201)]))
    y = sol(t)
    reach = (np.abs(nominal_motion(pb.nominal, pb.constraint, y[:, :3], y[:, 3:], t).Qc).max(axis=0)
             + np.abs(pb.nominal.mass_matrix(y[:, :3], t)).sum(axis=2).max(axis=0) * b.terms["force"])
    wide = pb.replace(actuators=Actuators(np.eye(3), tau_max=1.01 * reach))
    assert torque_reach(wide, run, b) is None
    assert sensed_bounds(wide, wide.nominal_run()).coverage.startswith("guaranteed for this loop")
    tight = np.where(np.arange(3) == 1, 0.99 * reach, 1.01 * reach)  # the second joint's limit just below its reach
    narrow = pb.replace(actuators=Actuators(np.eye(3), tau_max=tight))
    joint, bound, limit = torque_reach(narrow, run, b)
    assert joint == pb.nominal.coordinates[1] and bound == pytest.approx(reach[1], rel=1e-12) and limit == tight[1]
    assert sensed_bounds(narrow, narrow.nominal_run()).coverage.startswith(
        f"not guaranteed: the torque can reach the effort limit of {joint}")


def test_the_held_torques_term_bounds_what_a_held_torque_adds_at_its_worst_points():
    """A loop that holds τ = Qᶜ(t_k) + M(q̂) u (MuJoCo's, a robot's) adds M_a⁻¹[(Qᶜ(t_k) − Qᶜ(t)) + (M(q̂) − M(q_c)) u]
    to ë beside the theorem's loop; LoopErrors.held_torque bounds it from terms along the nominal motion
    (robustrack.loop.bounds.held_torque_terms). The truth: that term computed exactly, with the actual plant (a
    heavier payload), at 600 times inside samples, q̂ taken (D + 1) h before at the encoder's worst corner and u at
    its worst sign pattern per row (|u_j| = U): the largest of it within the bound, and the bound not vacuous."""
    pytest.importorskip("pinocchio")
    import dataclasses

    from robustrack.loop.bounds import held_torque_terms, nominal_acceleration
    from robustrack.scenarios import load_scenario
    from robustrack.tracking.rhs import nominal_motion

    pb = load_scenario("ur5-payload-sensed", ["simulation.t_end=1.0", "simulation.n_points=101"]).build()
    run, n, h = pb.nominal_run(), pb.n, pb.sample_period
    err = pb.sensor.error_bound(h, nominal_acceleration(run), 1001, np.zeros(n), np.zeros(n))
    loop = dataclasses.replace(err.loop, **held_torque_terms(pb, run))
    actual = pb.nominal.replace(payload_mass=2.4)
    U, D = 20.0, loop.delay
    worst, mu = 0.0, 0.0
    for t in np.linspace((D + 1) * h, 1.0 - h, 600) + 0.37 * h:  # inside samples, not on their instants
        tk = math.floor(t / h) * h
        y, ym, yk = run.solution(t), run.solution(tk - D * h), run.solution(tk)
        qc, q_then = y[:n], ym[:n]
        qhat = q_then + loop.de * np.sign(q_then - qc)  # the measurement's error away from q_c
        dQc = (nominal_motion(pb.nominal, pb.constraint, yk[:n], yk[n:], tk).Qc
               - nominal_motion(pb.nominal, pb.constraint, y[:n], y[n:], t).Qc)
        Ma = actual.mass_matrix(qc, t)
        mu = max(mu, np.abs(np.eye(n) - np.linalg.solve(Ma, pb.nominal.mass_matrix(qc, t))).sum(axis=1).max())
        r = np.linalg.solve(Ma, dQc)
        B = np.linalg.solve(Ma, pb.nominal.mass_matrix(qhat, t) - pb.nominal.mass_matrix(qc, t))
        worst = max(worst, float(np.max(np.abs(r) + U * np.abs(B).sum(axis=1))))
    bound = loop.held_torque(mu, 0.0, U)  # q_c on the nominal motion: S = 0
    assert worst <= bound
    assert worst >= 0.1 * bound  # first-order terms along the motion: the same order as what they bound
