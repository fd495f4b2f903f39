"""Tests of robustrack.uncertainty and the Γ Monte Carlo (W 5.3.5, 5.3.10–5.3.11, 7.3).

Truths used: the defining formulas evaluated sample by sample with numpy.linalg
(independent of the batched implementation), the free particle's closed form
(M = m I), the Taylor order of the first-order form, norm inequalities, and the
stated sampling distributions.
"""

from __future__ import annotations

import json
import math
from types import SimpleNamespace

import numpy as np
import pytest

from robustrack.errors import MassMatrixError, ParameterError, ScenarioError
from robustrack.plants import CoupledDuffing, FreeParticle, triple_pendulum
from robustrack.scenarios import load_scenario
from robustrack.reports.text import format_gamma
from robustrack.scenarios.gamma import run_gamma
from robustrack.uncertainty import (
    ForcedPlant,
    FunctionDisturbance,
    ParameterSamples,
    SinusoidalDisturbance,
    actual_plant,
    estimate_gamma,
    parameter_label,
    parameter_values,
    sample_parameters,
    uncertainty_acceleration,
    uncertainty_bound,
)

INF = np.inf


def random_trajectory(rng, T, n, scale=1.0):
    """A synthetic 'trajectory' (duck-typed): random states and constraint forces."""
    return SimpleNamespace(
        t=np.linspace(0.0, 1.0, T),
        q=rng.uniform(-np.pi, np.pi, (T, n)),
        qd=rng.normal(0.0, 2.0, (T, n)),
        Qc=scale * rng.normal(0.0, 5.0, (T, n)),
    )


# --------------------------------------------------------------------------- exact vs first order
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_first_order_error_shrinks_quadratically(seed):
    """exact − first order = O(s²): halving the perturbation divides the gap by ~4."""
    rng = np.random.default_rng(seed)
    nominal = triple_pendulum()
    traj = random_trajectory(rng, 5, 3)
    direction = rng.uniform(-1, 1, 3) * nominal.m
    force = rng.uniform(-1, 1, 3)

    def gap(s):
        actual = ForcedPlant(nominal.replace(m=nominal.m + s * direction), lambda q, qd, t: s * force)
        M, Q = nominal.mass_matrix(traj.q), nominal.given_force(traj.q, traj.qd)
        M_a, Q_a = actual.mass_matrix(traj.q), actual.given_force(traj.q, traj.qd)
        # the exact δq of W (5.3.5) straight from its definition
        exact = (np.linalg.solve(M_a, (Q_a + traj.Qc)[..., None])
                 - np.linalg.solve(M, (Q + traj.Qc)[..., None]))[..., 0]
        assert np.allclose(uncertainty_acceleration(M, Q, traj.Qc, M_a, Q_a), exact, rtol=1e-9, atol=1e-12)
        first = uncertainty_acceleration(M, Q, traj.Qc, M_a, Q_a, first_order=True)
        return np.abs(exact - first).max(), np.abs(exact).max()

    g1, e1 = gap(2e-3)
    g2, e2 = gap(1e-3)
    assert g1 < 0.05 * e1  # first order is close ...
    assert 3.6 < g1 / g2 < 4.4  # ... and the gap is second order
    assert 1.9 < e1 / e2 < 2.1  # while δq itself is first order


def test_appendix_a_form_equals_exact():
    """W (A-5) with (M + δM)⁻¹ is algebraically the exact δq at q_c = q."""
    rng = np.random.default_rng(7)
    nominal = triple_pendulum()
    traj = random_trajectory(rng, 4, 3)
    actual = nominal.replace(m=nominal.m * (1 + 0.5 * rng.uniform(-1, 1, 3)))
    M, Q = nominal.mass_matrix(traj.q), nominal.given_force(traj.q, traj.qd)
    M_a, Q_a = actual.mass_matrix(traj.q), actual.given_force(traj.q, traj.qd)
    Ma_inv, M_inv = np.linalg.inv(M_a), np.linalg.inv(M)
    appendix = (-Ma_inv @ (M_a - M) @ M_inv @ (Q + traj.Qc)[..., None] + Ma_inv @ (Q_a - Q)[..., None])[..., 0]
    assert np.allclose(uncertainty_acceleration(M, Q, traj.Qc, M_a, Q_a), appendix, rtol=1e-9, atol=1e-12)


# --------------------------------------------------------------------------- batched == per-sample loop
def loop_reference(nominal, traj, values, dQ=None, names=("m",)):
    """max_t ‖δq‖∞ per sample, one sample and one time at a time, with numpy.linalg."""
    out = np.zeros((len(values), 3))
    profile = np.zeros(traj.t.size)
    for s, value in enumerate(values):
        actual = nominal.replace(**({names[0]: value} if len(names) == 1 else dict(zip(names, value))))
        for k, t in enumerate(traj.t):
            q, qd, Qc = traj.q[k], traj.qd[k], traj.Qc[k]
            M, Q = nominal.mass_matrix(q), nominal.given_force(q, qd)
            M_a, Q_a = actual.mass_matrix(q), actual.given_force(q, qd)
            if dQ is not None:
                Q_a = Q_a + dQ(q, qd, t)
            Minv = np.linalg.inv(M)
            dM, dQt, F = M_a - M, Q_a - Q, Q + Qc
            exact = np.linalg.solve(M_a, Q_a + Qc) - np.linalg.solve(M, F)
            first = -Minv @ dM @ Minv @ F + Minv @ dQt
            bound = np.linalg.norm(Minv, INF) * (np.linalg.norm(dM, INF) * np.linalg.norm(Minv, INF)
                                                 * np.linalg.norm(F, INF) + np.linalg.norm(dQt, INF))
            row = [np.linalg.norm(exact, INF), np.linalg.norm(first, INF), bound]
            out[s] = np.maximum(out[s], row)
            profile[k] = max(profile[k], row[0])
    return out, profile


@pytest.mark.parametrize("chunk", [1, 4, 10_000])
def test_batched_equals_loop(chunk):
    rng = np.random.default_rng(3)
    nominal = triple_pendulum()
    traj = random_trajectory(rng, 6, 3)
    draws = sample_parameters(nominal.m, 5, spread=0.5, seed=11)
    dQ = SinusoidalDisturbance([0.5, -1.0, 2.0], omega=[1.0, 2.0, 3.0], phase=0.3)
    est = estimate_gamma(nominal, traj, draws, dQ=dQ, chunk=chunk)
    ref, profile = loop_reference(nominal, traj, draws.values, dQ)
    assert np.allclose(est.exact, ref[:, 0], rtol=1e-10)
    assert np.allclose(est.first_order, ref[:, 1], rtol=1e-10)
    assert np.allclose(est.analytic, ref[:, 2], rtol=1e-10)
    assert np.allclose(est.profile, profile, rtol=1e-10)
    assert est.seed == 11 and est.spread == 0.5 and est.samples.shape == (5, 3)


def test_several_scalar_parameters_sampled_together_equal_loop():
    """("m1", "m2") of the Duffing oscillator: one column each, the same as replacing both per sample."""
    rng = np.random.default_rng(8)
    nominal = CoupledDuffing()
    traj = random_trajectory(rng, 7, 2)
    nominal_value = parameter_values(nominal, ("m1", "m2"))
    assert nominal_value.tolist() == [2.0, 1.0] and parameter_label(("m1", "m2")) == "m1, m2"
    draws = sample_parameters(nominal_value, 6, spread=0.3, seed=5)
    est = estimate_gamma(nominal, traj, draws, parameter=("m1", "m2"), chunk=4)
    ref, profile = loop_reference(nominal, traj, draws.values, names=("m1", "m2"))
    np.testing.assert_allclose(est.exact, ref[:, 0], rtol=1e-10)
    np.testing.assert_allclose(est.first_order, ref[:, 1], rtol=1e-10)
    np.testing.assert_allclose(est.analytic, ref[:, 2], rtol=1e-10)
    np.testing.assert_allclose(est.profile, profile, rtol=1e-10)
    assert est.parameter == ("m1", "m2") and est.to_dict()["parameter"] == ["m1", "m2"]
    with pytest.raises(ParameterError, match="no parameter `m3`"):
        estimate_gamma(nominal, traj, draws, parameter=("m1", "m3"))
    with pytest.raises(ParameterError, match=r"shape \(N, 2\)"):
        estimate_gamma(nominal, traj, draws.values[:, :1], parameter=("m1", "m2"))
    pendulum = triple_pendulum()
    with pytest.raises(ParameterError, match="`m` is an array"):
        parameter_values(pendulum, ("m", "g"))


def test_analytic_bound_dominates_first_order():
    """(5.3.11) bounds (5.3.10) by the triangle inequality and submultiplicativity."""
    rng = np.random.default_rng(5)
    nominal = triple_pendulum()
    traj = random_trajectory(rng, 20, 3)
    est = estimate_gamma(nominal, traj, sample_parameters(nominal.m, 300, spread=0.3, seed=2))
    assert np.all(est.analytic >= est.first_order * (1 - 1e-12))
    M, Q = nominal.mass_matrix(traj.q), nominal.given_force(traj.q, traj.qd)
    actual = nominal.replace(m=nominal.m * 1.2)
    first = uncertainty_acceleration(M, Q, traj.Qc, actual.mass_matrix(traj.q),
                                     actual.given_force(traj.q, traj.qd), first_order=True)
    bound = uncertainty_bound(M, Q, traj.Qc, actual.mass_matrix(traj.q), actual.given_force(traj.q, traj.qd))
    assert bound.shape == (20,)
    assert np.all(bound >= np.abs(first).max(axis=-1) * (1 - 1e-12))


# --------------------------------------------------------------------------- free particle closed form
def test_free_particle_closed_form():
    """M = m I, Q = 0: exact δq = (1/m_a − 1/m) Qᶜ, first order −δm/m² Qᶜ."""
    rng = np.random.default_rng(4)
    m = 2.0
    nominal = FreeParticle(m=m)
    traj = random_trajectory(rng, 9, 3)
    m_a = np.array([1.0, 1.5, 2.5, 3.9])
    est = estimate_gamma(nominal, traj, m_a)  # scalar parameter: samples of shape (N,)
    peak = np.abs(traj.Qc).max()
    assert np.allclose(est.exact, np.abs(1 / m_a - 1 / m) * peak, rtol=1e-12)
    assert np.allclose(est.first_order, np.abs(m_a - m) / m**2 * peak, rtol=1e-12)
    assert est.seed is None and est.spread is None
    # with a constant given-force perturbation f: δq = (f + Qᶜ)/m_a − Qᶜ/m
    f = np.array([0.3, -0.2, 0.1])
    est = estimate_gamma(nominal, traj, m_a, dQ=FunctionDisturbance(lambda q, qd, t: np.broadcast_to(f, q.shape),
                                                                     bound=0.3))
    expect = np.abs((f + traj.Qc)[None] / m_a[:, None, None] - traj.Qc[None] / m).max(axis=(1, 2))
    assert np.allclose(est.exact, expect, rtol=1e-12)


# --------------------------------------------------------------------------- ForcedPlant, actual_plant
def test_forced_plant_adds_dQ_and_replace_keeps_it():
    rng = np.random.default_rng(6)
    base = triple_pendulum()
    dQ = SinusoidalDisturbance([1.0, 2.0, 3.0], omega=2.0)
    plant = ForcedPlant(base, dQ)
    q, qd, t = rng.normal(size=(4, 3)), rng.normal(size=(4, 3)), np.linspace(0, 1, 4)
    wave = np.array([1.0, 2.0, 3.0]) * np.sin(2.0 * t)[:, None]
    assert np.allclose(plant.given_force(q, qd, t), base.given_force(q, qd) + wave)
    assert np.array_equal(plant.mass_matrix(q), base.mass_matrix(q))
    assert plant.n == 3 and plant.coordinates == base.coordinates and plant.bound == 3.0
    heavier = plant.replace(m=[2.0, 2.0, 3.0])
    assert isinstance(heavier, ForcedPlant) and heavier.dQ is dQ
    assert heavier.m.tolist() == [2.0, 2.0, 3.0] and plant.m.tolist() == [1.0, 2.0, 3.0]
    assert np.allclose(heavier.given_force(q, qd, t), base.replace(m=[2.0, 2.0, 3.0]).given_force(q, qd) + wave)
    assert plant.replace(m3=4.0).m.tolist() == [1.0, 2.0, 4.0]  # base plant's per-body names
    assert plant.replace(dQ=lambda q, qd, t: 0 * q).bound == math.inf
    assert plant.params.keys() == base.params.keys()
    assert np.allclose(plant.kinetic_energy(q, qd), base.kinetic_energy(q, qd))  # delegated
    with pytest.raises(ParameterError, match="no parameter"):
        plant.replace(mass=1.0)
    with pytest.raises(ParameterError, match="last axis"):
        ForcedPlant(base, lambda q, qd, t: np.zeros(2)).given_force(q, qd, t)
    with pytest.raises(ParameterError, match="callable"):
        ForcedPlant(base, 3.0)


def test_actual_plant():
    nominal = triple_pendulum()
    assert np.allclose(actual_plant(nominal, dm=(0.1, -0.2, 0.3)).m, [1.1, 1.8, 3.3])
    assert actual_plant(nominal, params={"g": 9.7}).g == 9.7
    forced = actual_plant(nominal, dm=(0.5, -0.8, 1.5), dQ=SinusoidalDisturbance(1.0, omega=1.0))
    assert isinstance(forced, ForcedPlant) and np.allclose(forced.m, [1.5, 1.2, 4.5])
    with pytest.raises(ParameterError, match="not both"):
        actual_plant(nominal, dm=(0.1, 0, 0), params={"m": [1, 2, 3]})
    with pytest.raises(ParameterError, match="m1.*m2"):  # lists the parameters it has
        from robustrack.plants import CoupledDuffing
        actual_plant(CoupledDuffing(), dm=0.1)
    with pytest.raises(ParameterError, match="> 0"):
        actual_plant(nominal, dm=(-1.0, 0.0, 0.0))


# --------------------------------------------------------------------------- disturbances
def test_sinusoidal_bound_holds_and_is_sharp_on_a_grid():
    d = SinusoidalDisturbance([1.0, -2.0, 0.5], omega=[1.0, 3.0, 7.0], phase=[0.0, 1.0, 2.0])
    t = np.linspace(0.0, 20.0, 20001)
    q = np.zeros((t.size, 3))
    out = d(q, q, t)
    assert out.shape == (t.size, 3)
    peak = np.abs(out).max()
    assert peak <= d.bound and peak > 0.999 * d.bound
    # per-sample amplitudes broadcast against the time axis of q
    amps = np.array([[[1.0, 0.0, 0.0]], [[0.0, 2.0, 0.0]]])  # (N=2, 1, 3)
    ds = SinusoidalDisturbance(amps, omega=1.0)
    assert ds(q[:5], q[:5], t[:5]).shape == (2, 5, 3) and ds.bound == 2.0
    assert SinusoidalDisturbance(0.7, omega=1.0)(q[:4], q[:4], t[:4]).shape == (4, 3)
    with pytest.raises(ParameterError, match="broadcast"):
        SinusoidalDisturbance([1.0, 2.0], omega=[1.0, 2.0, 3.0])
    with pytest.raises(ParameterError, match="finite"):
        SinusoidalDisturbance(np.nan, omega=1.0)


def test_function_disturbance_enforces_its_bound():
    d = FunctionDisturbance(lambda q, qd, t: np.tanh(qd), bound=1.0)
    assert np.abs(d(np.zeros(2), np.array([50.0, -50.0]), 0.0)).max() <= 1.0
    loose = FunctionDisturbance(lambda q, qd, t: 2.0 * np.tanh(qd), bound=1.0)
    with pytest.raises(ParameterError, match="exceeded its declared `bound`"):
        loose(np.zeros(2), np.array([5.0, 0.0]), 0.0)
    with pytest.raises(ParameterError, match="bound"):
        FunctionDisturbance(np.tanh, bound=-1.0)


# --------------------------------------------------------------------------- sampling
def test_sampling_reproducible_and_within_spread():
    nominal = np.array([1.0, 2.0, 3.0])
    a = sample_parameters(nominal, 2000, spread=0.1, seed=42)
    b = sample_parameters(nominal, 2000, spread=0.1, seed=42)
    c = sample_parameters(nominal, 2000, spread=0.1, seed=43)
    assert np.array_equal(a.values, b.values) and not np.array_equal(a.values, c.values)
    assert a.values.shape == (2000, 3) and a.seed == 42 and a.kind == "uniform"
    rel = a.deltas / nominal
    assert np.all(np.abs(rel) <= 0.1)
    assert np.all(rel.max(axis=0) > 0.099) and np.all(rel.min(axis=0) < -0.099)  # fills the box
    assert np.all(np.abs(rel.mean(axis=0)) < 0.01)  # uniform on ±0.1: std of the mean 0.0013
    # seed=None draws a fresh seed and records it
    fresh = sample_parameters(nominal, 10, spread=0.1)
    assert np.array_equal(sample_parameters(nominal, 10, spread=0.1, seed=fresh.seed).values, fresh.values)
    # per-component spread
    d = sample_parameters(nominal, 500, spread=[0.0, 0.1, 0.5], seed=1)
    assert np.all(d.values[:, 0] == 1.0) and np.abs(d.deltas[:, 2]).max() > 0.1 * 3.0
    assert isinstance(a, ParameterSamples) and np.asarray(a).shape == (2000, 3) and len(a) == 2000


def test_sampling_normal_and_callable():
    n = sample_parameters([2.0, 4.0], 20000, spread=0.05, kind="normal", seed=0)
    std = n.deltas.std(axis=0) / np.array([2.0, 4.0])
    assert np.allclose(std, 0.05, rtol=0.03)  # sample std of 20000 normals: ~0.5 % error
    user = sample_parameters([1.0, 2.0], 3, sampler=lambda rng, k: 1.0 + rng.random((k, 2)), seed=5)
    again = np.random.default_rng(5)
    assert np.array_equal(user.values, 1.0 + again.random((3, 2))) and user.kind == "callable"
    with pytest.raises(ParameterError, match=r"shape \(3, 2\)"):
        sample_parameters([1.0, 2.0], 3, sampler=lambda rng, k: rng.random((k, 3)))


def test_sampling_bad_inputs():
    with pytest.raises(ParameterError, match="`spread` must be finite and >= 0"):
        sample_parameters([1.0, 2.0], 5, spread=-0.1)
    with pytest.raises(ParameterError, match="<= 0"):
        sample_parameters([1.0], 1000, spread=2.0, kind="normal", seed=0)
    with pytest.raises(ParameterError, match="spread` >= 1"):
        sample_parameters([1.0], 10, spread=1.0)
    with pytest.raises(ParameterError, match="<= 0"):
        sample_parameters([1.0], 10, sampler=lambda rng, k: -rng.random((k, 1)))
    with pytest.raises(ParameterError, match="kind"):
        sample_parameters([1.0], 10, spread=0.1, kind="lognormal")
    with pytest.raises(ParameterError, match="required"):
        sample_parameters([1.0], 10)
    with pytest.raises(ParameterError, match="`n`"):
        sample_parameters([1.0], 0, spread=0.1)
    with pytest.raises(ParameterError, match="`seed`"):
        sample_parameters([1.0], 3, spread=0.1, seed=-1)
    with pytest.raises(ParameterError, match="nominal_value"):
        sample_parameters([-1.0], 3, spread=0.1)


def test_estimate_gamma_bad_inputs():
    rng = np.random.default_rng(0)
    nominal = triple_pendulum()
    traj = random_trajectory(rng, 3, 3)
    draws = sample_parameters(nominal.m, 4, spread=0.1, seed=0)
    with pytest.raises(ParameterError, match="no parameter `mass`.*'L', 'g', 'm'"):
        estimate_gamma(nominal, traj, draws, parameter="mass")
    with pytest.raises(ParameterError, match=r"shape \(N, 3\)"):
        estimate_gamma(nominal, traj, np.ones((4, 2)))
    with pytest.raises(ParameterError, match="margin"):
        estimate_gamma(nominal, traj, draws, margin=0.5)
    with pytest.raises(ParameterError, match="quantile"):
        estimate_gamma(nominal, traj, draws, quantile=1.5)
    with pytest.raises(ParameterError, match="chunk"):
        estimate_gamma(nominal, traj, draws, chunk=0)
    with pytest.raises(ParameterError, match="lacks `Qc`"):
        estimate_gamma(nominal, SimpleNamespace(t=traj.t, q=traj.q, qd=traj.qd), draws)
    with pytest.raises(ParameterError, match=r"\(3, 3\)"):
        estimate_gamma(nominal, SimpleNamespace(t=traj.t, q=traj.q, qd=traj.qd, Qc=traj.Qc[:, :2]), draws)
    M = nominal.mass_matrix(traj.q)
    with pytest.raises(MassMatrixError, match="positive definite"):
        uncertainty_acceleration(M, traj.qd, traj.Qc, np.zeros_like(M), traj.qd)


# --------------------------------------------------------------------------- the scenario runner
def test_run_gamma_on_triple_pendulum_energy():
    scenario = load_scenario("triple-pendulum-energy").with_overrides(["simulation.t_end=2"])
    seen = []
    study = run_gamma(scenario, 200, 0.1, seed=9, progress=seen.append)
    est, doc = study.estimate, study.to_dict()
    for key in ("scenario", "samples", "spread", "seed", "n_times", "gamma_prime", "quantile", "margin",
                "wall_s", "trajectory_wall_s", "exact", "first_order", "analytic"):
        assert key in doc, key
    assert doc["samples"] == 200 and doc["spread"] == 0.1 and doc["seed"] == 9
    assert doc["n_times"] == scenario.config["simulation"]["n_points"]
    for name in ("exact", "first_order", "analytic"):
        s = doc[name]
        assert 0 < s["min"] <= s["median"] <= s["p95"] <= s["p99"] <= s["max"]
    assert doc["gamma_prime"] == pytest.approx(1.2 * np.quantile(est.exact, 0.99))
    assert doc["gamma_prime"] > doc["exact"]["p99"]
    # the draws are the documented ones: uniform ±10 % of m from default_rng(9)
    expect = sample_parameters([1.0, 2.0, 3.0], 200, spread=0.1, seed=9).values
    assert np.array_equal(est.samples, expect)
    # ±10 %: first order within a few percent of exact (W Figs. 7.2/7.4)
    assert doc["first_order"]["median"] == pytest.approx(doc["exact"]["median"], rel=0.05)
    assert seen and seen[-1] == pytest.approx(1.0) and seen == sorted(seen)
    json.dumps(doc)  # JSON-ready
    assert "exact (5.3.5)" in format_gamma(doc)


def test_run_gamma_refuses_plant_without_parameter():
    with pytest.raises(ScenarioError, match="no parameter `m`.*m1"):
        run_gamma("duffing", 10, 0.1, parameter="m")


def test_run_gamma_samples_the_kinds_masses_by_default():
    doc = run_gamma(load_scenario("duffing-tracking", ["simulation.t_end=1"]), 20, 0.1, seed=1).to_dict()
    assert doc["parameter"] == ["m1", "m2"] and doc["nominal"] == [2.0, 1.0]
    assert "on `m1, m2`" in format_gamma(doc)


def test_run_gamma_on_tracking_scenarios():
    """The tracking scenario has the same nominal system as triple-pendulum-energy: same Γ."""
    short = ["simulation.t_end=1"]
    energy = run_gamma(load_scenario("triple-pendulum-energy", short), 100, 0.1, seed=4).to_dict()
    tracking = run_gamma(load_scenario("triple-pendulum", short), 100, 0.1, seed=4).to_dict()
    for name in ("exact", "first_order"):
        for key in ("median", "max"):
            assert tracking[name][key] == pytest.approx(energy[name][key], rel=1e-4)
    # the unconstrained variant (W Remark 7.2) runs with Qᶜ = 0
    free = run_gamma(load_scenario("triple-pendulum-unconstrained", short), 50, 0.1, seed=4).to_dict()
    assert free["exact"]["max"] > 0 and free["scenario"] == "triple-pendulum-unconstrained"
