"""The controller in a real loop (robustrack.loop): the Controller object, the sensor model in the sampled loop, the
bounds under measurement error and what they cover.

Truths the tests hold the code to: the simulation's own forces (the controller is the one home of τ); the numpy
reference of the sensor (the kernel's twin, the same operations: bit for bit); a sensor that changes nothing
(the run bit for bit the run without one); the bound's own formula at zero measurement error; a hand computation of
the estimators.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from robustrack.controllers import GD, GDBar, GSS, control_function
from robustrack.errors import HorizonError, ParameterError, ScenarioError
from robustrack.loop import Sensor, sensed_bounds
from robustrack.plants import NLinkPendulum, Plant
from robustrack.scenarios import load_scenario
from robustrack.tracking import TrackingProblem

SHORT = ["simulation.t_end=0.5", "simulation.n_points=51", "simulation.uncompensated=false"]


def _pendulum(*more):
    return load_scenario("triple-pendulum", SHORT + ["compensator.f=tanh", "compensator.eps=0.1", *more]).build()


# --------------------------------------------------------------------------- #
# the Controller
# --------------------------------------------------------------------------- #
@pytest.fixture(scope="module")
def pendulum_run():
    pb = _pendulum()
    return pb, pb.simulate()


def test_the_controller_is_the_simulations_force_at_every_output_point(pendulum_run):
    # Continuous GSS: the run applies Qᶜ(t) + M(q_c) u(e, ė) (W 5.2.17); the controller at the same (t, q_c, q̇_c)
    # must give it to rounding (the same formulas, compiled; 1e-12 of the force's size is ~1e4 ulp).
    pb, r = pendulum_run
    ctrl = pb.controller()
    assert ctrl.compiled
    tau = np.array([ctrl(t, q, qd) for t, q, qd in zip(r.t, r.qc, r.qcd)])
    want = r.Qc + r.Qu
    assert np.abs(tau - want).max() <= 1e-12 * np.abs(want).max()


def test_gds_controller_takes_the_integral_state_the_run_carried():
    # GD with K_i > 0: u depends on z = ∫e, a state of the run; given the run's z the controller gives its force
    pb = _pendulum("compensator.type=gd", "compensator.gd.Ki=1.0")
    r = pb.simulate()
    ctrl = pb.controller()
    tau = np.array([ctrl(t, q, qd, z) for t, q, qd, z in zip(r.t, r.qc, r.qcd, r.z)])
    want = r.Qc + r.Qu
    assert np.abs(tau - want).max() <= 1e-12 * np.abs(want).max()


def test_a_urdf_robots_controller_equals_the_numpy_one():
    pytest.importorskip("pinocchio")
    pb = load_scenario("ur5-payload", ["simulation.t_end=0.5", "simulation.n_points=11",
                                       "simulation.uncompensated=false"]).build()
    run = pb.nominal_run()
    fast, slow = pb.controller(run), pb.controller(run, backend="numpy")
    assert fast.compiled
    rng = np.random.default_rng(5)
    for t in rng.uniform(0.0, 0.5, 20):
        q, qd, _ = slow.reference(t)
        q, qd = q + rng.normal(0, 1e-3, 6), qd + rng.normal(0, 1e-2, 6)
        a, b = fast(t, q, qd), slow(t, q, qd)
        assert np.abs(a - b).max() <= 1e-12 * np.abs(b).max()


def test_compiled_and_numpy_controllers_agree_at_random_states(pendulum_run):
    pb, _ = pendulum_run
    run = pb.nominal_run()
    fast, slow = pb.controller(run), pb.controller(run, backend="numpy")
    assert fast.compiled and not slow.compiled
    rng = np.random.default_rng(7)
    for t in rng.uniform(*pb.t_span, 200):
        q, qd, _ = fast.reference(t)
        q, qd = q + rng.normal(0, 1e-2, 3), qd + rng.normal(0, 1e-1, 3)
        a, b = fast(t, q, qd), slow(t, q, qd)
        assert np.abs(a - b).max() <= 1e-12 * max(1.0, np.abs(b).max())


def test_the_loops_instants_read_the_table_and_give_the_same_floats(pendulum_run):
    # period = h: the reference and Qᶜ at t = k h computed once, when the controller is made; a call there reads
    # them — the same kernel's floats, so equal to the bit to a controller without the table
    pb, _ = pendulum_run
    run = pb.nominal_run()
    h = 1e-3
    tab, plain = pb.controller(run, period=h), pb.controller(run, period=0)
    rng = np.random.default_rng(3)
    for k in rng.integers(0, int(pb.t_span[1] / h), 50):
        t = k * h
        q, qd, _ = plain.reference(t)
        q, qd = q + rng.normal(0, 1e-3, 3), qd + rng.normal(0, 1e-2, 3)
        assert np.array_equal(tab(t, q, qd), plain(t, q, qd))
    assert np.array_equal(tab(0.0123456, q, qd), plain(0.0123456, q, qd))  # off the grid: computed
    with pytest.raises(ParameterError, match="period"):
        pb.controller(run, period=-1.0)


def test_a_users_plant_from_functions_gets_a_controller():
    # a plant the catalog does not have, built from two functions (compiled by numba where it can): the controller
    # equals the force assembled by hand from its public parts
    def M(q, t):
        return np.array([[2.0 + np.cos(q[1]), 0.3], [0.3, 1.0]])

    def Q(q, qd, t):
        return np.array([-9.81 * np.sin(q[0]), -0.5 * qd[1]])

    plant = Plant.from_functions(M, Q, names=("a", "b"))
    pb = TrackingProblem(plant, None, GSS(K=5.0, gamma_prime=10.0), [0.2, 0.1], [0.0, 0.0], (0.0, 0.5))
    ctrl = pb.controller()
    t, q, qd = 0.3, np.array([0.25, 0.05]), np.array([0.1, -0.2])
    y = ctrl.run.solution(t)
    u = pb.compensator(t, q - y[:2], qd - y[2:])
    want = ctrl.reference(t)[2] + M(q, t) @ u
    assert np.allclose(ctrl(t, q, qd), want, rtol=1e-12, atol=1e-12)


def test_outside_the_horizon_the_controller_refuses_or_holds(pendulum_run):
    pb, _ = pendulum_run
    ctrl = pb.controller()
    q, qd, _ = ctrl.reference(pb.t_span[1])
    with pytest.raises(HorizonError, match="outside the design horizon"):
        ctrl(pb.t_span[1] + 1.0, q, qd)
    held = pb.controller(beyond="hold")
    assert np.array_equal(held(pb.t_span[1] + 5.0, q, qd), held(pb.t_span[1], q, qd))
    with pytest.raises(ParameterError, match="beyond"):
        pb.controller(beyond="extrapolate")
    with pytest.raises(ParameterError, match=r"shape \(3,\)"):
        ctrl(0.1, q[:2], qd)


def test_update_estimates_the_velocity_by_the_sensors_estimator(pendulum_run):
    pb, _ = pendulum_run
    h = 1e-3
    for velocity, cutoff in (("difference", 0.0), ("filtered", 40.0)):
        sensor = Sensor(velocity=velocity, velocity_cutoff=cutoff)
        ctrl = pb.controller(sensor=sensor)
        q0, v0, _ = ctrl.reference(0.0)
        q1 = ctrl.reference(h)[0] + 1e-4
        assert np.array_equal(ctrl.update(0.0, q0), ctrl(0.0, q0, v0))  # first sample: the reference's velocity
        d = (q1 - q0) / h
        v1 = d if velocity == "difference" else v0 + (1 - math.exp(-2 * math.pi * cutoff * h)) * (d - v0)
        assert np.allclose(ctrl.update(h, q1), ctrl(h, q1, v1), rtol=1e-13, atol=1e-10)
        with pytest.raises(ParameterError, match="not after the previous"):
            ctrl.update(h, q1)
        ctrl.reset()
        assert np.array_equal(ctrl.update(0.0, q0), ctrl(0.0, q0, v0))


# --------------------------------------------------------------------------- #
# the sensor in the sampled loop
# --------------------------------------------------------------------------- #
def test_the_kernels_sensor_is_the_numpy_sensor_bit_for_bit():
    from robustrack.compiled.hold import sense, sensor_code

    n, h, K = 3, 1e-3, 40
    rng = np.random.default_rng(1)
    q = np.cumsum(rng.normal(0, 1e-3, (K, n)), axis=0)
    qd = rng.normal(0, 1.0, (K, n))
    for sensor in (Sensor(q_noise=1e-4, qd_noise=[1e-3, 0.0, 2e-3], seed=4), Sensor.encoder(2**12, velocity="difference"),
                   Sensor(q_noise=1e-5, q_resolution=1e-4, velocity="filtered", velocity_cutoff=30.0, seed=9)):
        v0 = np.array([0.1, -0.2, 0.3])
        code = sensor_code(sensor, n, h, K, v0)
        nu_q, nu_qd = sensor.draws(n, K)
        seen, xm = None, np.empty(2 * n)
        for k in range(K):
            x = np.concatenate([q[k], qd[k]])
            sense(k, x, code, xm)
            seen = sensor.measure(k, q[k], qd[k], h, seen, nu_q[k], nu_qd[k], v0)
            assert np.array_equal(xm, np.concatenate(seen)), (sensor, k)


def test_a_sensor_that_changes_nothing_leaves_the_run_bit_for_bit():
    # 0.1 s: 100 sample periods, each through the sensor (its one code path per sample), and the law's largest
    # ‖u‖ (160, in the initial transient) is reached within them; 0.5 s adds 400 more periods of the same code
    pb = _pendulum("compensator.sample_period=1e-3", "simulation.t_end=0.1", "simulation.n_points=11")
    for backend in ("auto", "numpy"):
        plain = pb.replace(backend=backend).simulate()
        exact = pb.replace(backend=backend, sensor=Sensor(seed=3)).simulate()
        assert np.array_equal(plain.qc, exact.qc) and np.array_equal(plain.u_held, exact.u_held)


def test_compiled_and_numpy_sensed_runs_agree():
    # noise, an encoder, a filtered velocity and a one-sample delay: the same draws and the same operations on
    # both paths; the runs then differ only by the integrators (the compiled RK45 against scipy's, each at rtol
    # 1e-8): without a sensor they differ by ~4e-10 rad here, and the noisy loop amplifies it, so 1e-6 rad.
    sensor = Sensor(q_noise=1e-6, q_resolution=1e-5, velocity="filtered", velocity_cutoff=50.0, delay=1e-3, seed=3)
    pb = _pendulum("compensator.sample_period=1e-3").replace(sensor=sensor)
    a, b = pb.simulate(), pb.replace(backend="numpy").simulate()
    assert a.success and b.success
    assert np.abs(a.qc - b.qc).max() < 1e-6
    # the delay: nothing acts before the first measurement arrives, then the law's u of one sample earlier
    assert np.array_equal(a.u_held[0], np.zeros(3)) and np.abs(a.u_held[1:]).max() > 0


def test_the_sensor_is_refused_where_it_cannot_run():
    pb = _pendulum()
    with pytest.raises(ParameterError, match="sample_period"):
        pb.replace(sensor=Sensor(q_noise=1e-4))
    with pytest.raises(ParameterError, match="whole number of sample periods"):
        pb.replace(sample_period=1e-3, sensor=Sensor(delay=1.5e-3))
    with pytest.raises(ParameterError, match="1e7 sample periods"):
        pb.replace(sample_period=1e-3, sensor=Sensor(delay=1e308))
    with pytest.raises(ParameterError, match="3 joints"):
        pb.replace(sample_period=1e-3, sensor=Sensor(q_noise=[1e-4, 1e-4]))
    with pytest.raises(ParameterError, match="integral gain"):
        pb.replace(sample_period=1e-3, compensator=GD(Ki=1.0), sensor=Sensor(q_noise=1e-4))
    for bad, match in (({"velocity": "kalman"}, "`velocity`"), ({"velocity": "filtered"}, "velocity_cutoff"),
                       ({"velocity_cutoff": 5.0}, "velocity_cutoff"), ({"q_noise": -1.0}, "q_noise"),
                       ({"velocity": "difference", "qd_noise": 0.1}, "qd_noise"), ({"seed": 1.5}, "seed"),
                       ({"confidence": 1.0}, "confidence"), ({"delay": float("nan")}, "delay")):
        with pytest.raises(ParameterError, match=match):
            Sensor(**bad)


def test_the_sensor_table_is_checked_at_load_with_its_keys():
    with pytest.raises(ScenarioError, match="compensator.sample_period"):
        load_scenario("triple-pendulum", ["sensor.q_noise=1e-4"])
    with pytest.raises(ScenarioError, match="`sensor.velocity`"):
        load_scenario("triple-pendulum", ["sensor.velocity=euler", "compensator.sample_period=1e-3"])
    with pytest.raises(ScenarioError, match="sensor.counts_per_revolution"):
        load_scenario("triple-pendulum", ["sensor.counts_per_revolution=-3", "compensator.sample_period=1e-3"])
    sc = load_scenario("triple-pendulum", ["sensor.counts_per_revolution=131072", "sensor.q_noise=[1e-4, 0, 0]",
                                           "compensator.sample_period=1e-3"])
    s = sc.build().sensor
    assert s.q_resolution == 2 * math.pi / 131072 and s.q_noise == (1e-4, 0.0, 0.0)
    assert load_scenario("triple-pendulum").build().sensor is None  # no table: the state itself


def test_a_diverging_sensed_run_fails_with_its_time_and_cause():
    # the seed's GSS (signed quadratic, ε = 0.01) with a differenced noisy q: the gain amplifies the noise
    pb = load_scenario("triple-pendulum", SHORT + ["compensator.sample_period=1e-3", "sensor.q_noise=1e-3",
                                                   "sensor.velocity=difference"]).build()
    r = pb.simulate(raise_on_failure=False)
    assert not r.success
    assert "sensor model" in r.solver["message"] and r.metrics.get("bounds_held") is not True
    assert r.info["bounds"]["coverage"].startswith("no bound")  # and the theory said so before the run


# --------------------------------------------------------------------------- #
# the bounds under measurement error
# --------------------------------------------------------------------------- #
def test_coverage_says_what_the_theory_covers():
    # the sampled loop's bounds (tests/test_sampled_bounds.py checks each step at its worst point): the seed's Γ = 100
    # at 1 kHz is more than a tanh law of ε = 0.1 dominates through the hold alone; ε = 0.3 with β0 = 100 holds a box
    # through the hold, noise (at its confidence) and a delay alike
    pb = _pendulum("compensator.sample_period=1e-3")
    run = pb.nominal_run()
    none = sensed_bounds(pb, run)
    assert none.coverage.startswith("no bound: no box passes") and math.isinf(none.e)
    wide = pb.replace(compensator=GSS(beta0=100.0, f=control_function("tanh", eps=0.3)))
    hold = sensed_bounds(wide, run)
    assert hold.coverage == "guaranteed for this loop" and hold.e > wide.compensator.bounds(pb.gamma).e
    noisy = sensed_bounds(wide.replace(sensor=Sensor(q_noise=1e-6)), run)
    assert noisy.coverage == "guaranteed for this loop at 99.9 % confidence" and noisy.e >= hold.e
    late = sensed_bounds(wide.replace(sensor=Sensor(delay=1e-3)), run)
    assert late.coverage == "guaranteed for this loop" and late.e > hold.e
    assert set(late.terms) >= {"gamma", "coupling", "measurement", "hold_delay", "eddot", "force"}
    gone = sensed_bounds(wide.replace(sensor=Sensor(q_noise=1.0, velocity="difference")), run)
    assert gone.coverage.startswith("no bound") and math.isinf(gone.e)
    # GD-bar (n = 1) with Γ covering ‖δq‖∞ + ‖(I − M̃_a) e‖∞ has a box; without Γ or for n > 1 none is derived
    # (the seed's quadratic g at ε = 0.01 has a box through a 0.1-ms hold at Γ = 1, none at 1 ms: its gain grows)
    hold = Sensor().error_bound(1e-4, np.zeros(3), 10).loop
    assert math.isfinite(GDBar().sampled_bounds(1.0, hold).edot) and GDBar().sampled_bounds(None, hold) is None
    assert math.isinf(GDBar().sampled_bounds(1.0, Sensor().error_bound(1e-3, np.zeros(3), 10).loop).edot)
    assert GDBar(n=2).sampled_bounds(1.0, hold) is None
    # a start outside every box: the bound is only observed
    far = sensed_bounds(wide.replace(qc0=pb.q0 + 1.0), run)
    assert far.coverage.startswith("not guaranteed: the start")


def test_the_error_bound_of_the_estimators_by_hand():
    h, a = 1e-3, np.array([2.0])
    s = Sensor(q_resolution=1e-4, velocity="difference")
    err = s.error_bound(h, a, 1000)
    assert err.confidence is None and err.e[0] == 5e-5
    assert err.loop.velocity_error(0.0)[0] == pytest.approx(2 * 5e-5 / h + h * 2.0 / 2)
    # the controlled motion's acceleration is the nominal's plus the box's Ë
    assert err.loop.velocity_error(3.0)[0] == pytest.approx(2 * 5e-5 / h + h * 5.0 / 2)
    f = Sensor(q_resolution=1e-4, velocity="filtered", velocity_cutoff=50.0)
    al = 1 - math.exp(-2 * math.pi * 50.0 * h)
    assert f.error_bound(h, a, 1000).loop.velocity_error(0.0)[0] == pytest.approx(
        2 * al * 5e-5 / h + (0.5 + (1 - al) / al) * h * 2.0)
    # the noise's quantile: every one of 1000 × 1 draws inside with probability 0.999 (union bound)
    from scipy.stats import norm

    g = Sensor(q_noise=1e-4).error_bound(h, a, 1000)
    assert g.e[0] == pytest.approx(norm.isf(0.001 / 2000) * 1e-4)


def test_the_verdict_says_guaranteed_only_for_a_loop_the_theory_covers():
    from robustrack.tracking.assess import bounds_verdict

    m = {"bounds_held": True, "assumptions_held": True, "max_abs_e_after_transient": 1e-4,
         "max_abs_edot_after_transient": 1e-3}
    out = bounds_verdict(m, {"e": 1e-3, "edot": 1e-2, "coverage": "not guaranteed: the start lies outside ..."})
    assert out.startswith("bounds held (observed), not guaranteed (the start") and "guaranteed for" not in out
    ok = bounds_verdict(m, {"e": 1e-3, "edot": 1e-2, "coverage": "guaranteed for this loop at 99.9 % confidence"})
    assert ok.startswith("bounds held:") and ok.endswith("(assumptions held: guaranteed for this loop at 99.9 % "
                                                         "confidence)")
    none = bounds_verdict(m, {"e": math.inf, "edot": math.inf, "coverage": "no bound: GSS ..."})
    assert none.startswith("no bound")


# --------------------------------------------------------------------------- #
# margins, the design for a sensor, the command line
# --------------------------------------------------------------------------- #
def test_margins_label_theory_and_simulation_and_the_theory_is_below_the_runs():
    from robustrack.loop import margins
    from robustrack.loop.margins import tolerates

    pb = _pendulum("compensator.sample_period=1e-3", "simulation.t_end=0.3", "compensator.eps=0.3",
                   "compensator.gss.beta0=100", "sensor.q_noise=1e-6", "sensor.velocity=difference",
                   "sensor.delay=1e-3")
    found = {(m.what, m.how): m for m in margins(pb)}
    assert set(found) == {(w, h) for w in ("q_noise", "q_resolution", "delay", "sample_period")
                          for h in ("theory", "simulation")}
    for what in ("delay", "sample_period", "q_noise"):
        theory, sim = found[(what, "theory")], found[(what, "simulation")]
        # the declared loop passes both ways; the theorem's figure is at most what the runs tolerate
        assert theory.passes and sim.passes and theory.declared == pytest.approx(pb.sensor.delay if what == "delay"
                                                                                  else theory.declared)
        assert theory.value is not None and sim.value is not None and theory.value <= sim.value
    # within a factor 20 for the delay and the period (the hold-and-delay term has the right order in h)
    assert found[("delay", "simulation")].value / found[("delay", "theory")].value <= 20
    assert found[("sample_period", "simulation")].value / found[("sample_period", "theory")].value <= 20
    sim = found[("delay", "simulation")]
    if sim.refused is not None:  # the bracket is what the runs say: refused at its upper end
        assert not tolerates(pb, dataclasses.replace(pb.sensor, delay=sim.refused))


def test_tune_designs_for_the_sensor_and_writes_a_scenario_run_accepts(tmp_path, capsys):
    from robustrack.cli import main

    pytest.importorskip("pinocchio")
    out = tmp_path / "tuned.toml"
    sets = ["--set", "simulation.t_end=0.5", "--set", "simulation.uncompensated=false", "--set",
            "compensator.sample_period=1e-3", "--set", "sensor.q_noise=1e-5", "--set", "sensor.velocity=difference"]
    assert main(["tune", "ur5-payload", *sets, "-o", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "design: g = " in printed and "held on every verified plant of the declared uncertainty" in printed
    text = out.read_text(encoding="utf-8")  # issue 54: the current form, which loads without the older form's notice
    assert "[uncertainty.parameters.payload_mass]\npercent = 10.0" in text and "parameters = [" not in text
    tuned = load_scenario(str(out))
    assert tuned.build().sensor.q_noise == 1e-5  # the sensor kept, the design changed
    r = tuned.build().simulate()
    assert r.success and r.metrics.bounds_held  # the design holds its bound through the sensor, as tune said
    assert main(["run", str(out)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].startswith("  verdict: bounds held") and lines[2].lstrip().startswith("sensor")
    assert "guaranteed for this loop" in lines[1] or "assumptions NOT held" in lines[1]
    # -o naming the scenario it reads is refused, nothing written
    before = out.read_bytes()
    assert main(["tune", str(out), "-o", str(out)]) == 2 and out.read_bytes() == before


def test_a_guaranteed_runs_acceleration_stays_inside_the_one_its_bound_derives():
    # the lag of an estimated velocity is bounded with the loop's own acceleration (sup|q̈| + Ë of the box), derived
    # before the run; along the run the increments |Δq̇_c|/h (averages over a sample, so at most the sup) stay inside
    from robustrack.loop.bounds import loop_acceleration

    pb = _pendulum("compensator.sample_period=1e-3", "simulation.t_end=0.3", "compensator.eps=0.3",
                   "compensator.gss.beta0=100", "sensor.q_noise=1e-6", "sensor.velocity=filtered",
                   "sensor.velocity_cutoff=100")
    run = pb.nominal_run()
    r = pb.simulate()
    assert r.bounds["coverage"].startswith("guaranteed for this loop") and r.metrics.bounds_held
    assert r.metrics.assumptions_held and "acceleration" not in (r.info["bounds_note"] or "")
    a = loop_acceleration(pb, run, pb.promised_bounds(run))
    seen = np.abs(np.diff(r.qcd, axis=0) / np.diff(r.t)[:, None]).max(axis=0)
    assert np.all(seen <= a)


def test_a_runs_bounds_read_as_the_compensators(pendulum_run):
    # issue 43: result.bounds["e"] was a dict where gss.bounds().e is an attribute; both spellings now work
    pb, r = pendulum_run
    assert r.bounds.e == r.bounds["e"] == pb.compensator.bounds(pb.gamma).e
    with pytest.raises(AttributeError, match="have no 'x'"):
        r.bounds.x


def test_certify_certifies_a_sampled_loops_bound_over_the_box(capsys):
    # the loop's bound at the certified Γ, and the certified sup ‖M̃ₐ‖∞ against its μ (docs/theory/sensing.md)
    pytest.importorskip("flint")
    from robustrack.cli import main

    sets = [x for kv in ["simulation.t_end=0.5", "compensator.f=tanh", "compensator.eps=0.3",
                         "compensator.gss.beta0=100", "compensator.sample_period=1e-3", "sensor.q_noise=1e-6",
                         "sensor.delay=1e-3"] for x in ("--set", kv)]
    assert main(["certify", "triple-pendulum", *sets, "--budget", "20", "--tolerance", "0.2"]) == 0
    out = capsys.readouterr().out
    assert "in its sampled loop (hold, delay, sensor" in out and "guaranteed for this loop" in out
    assert "the loop's bound is certified over the box" in out
    # μ = 0.3 is below the box's sup ‖M̃ₐ‖∞ (≥ 0.35): the same loop is not certified
    assert main(["certify", "triple-pendulum", *sets, "--set", "compensator.gss.alpha0=0.7", "--budget", "20",
                 "--tolerance", "0.2"]) == 0
    assert "NOT certified over the box" in capsys.readouterr().out
