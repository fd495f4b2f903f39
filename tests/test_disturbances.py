"""Bounded disturbances and friction in the actual plant (issue 42, item 2; docs/guide/uncertainty.md).

The forces against their formulas, ‖d‖∞ ≤ D on a fine grid, ActualForces' draws (a campaign's sample i and
the Γ Monte Carlo's row i the same), a run's δq carrying the disturbance, and the ``[actual]`` table.
"""

import math
import warnings

import numpy as np
import pytest

from robustrack.errors import ParameterError, ScenarioError
from robustrack.plants.base import Plant
from robustrack.uncertainty import (ActualForces, BandLimitedDisturbance, JointFriction, SinusoidalDisturbance,
                                    StepDisturbance, SumDisturbance, actual_plant)

T = np.linspace(0.0, 60.0, 60_001)  # 1 ms over 60 s: ≥ 60 samples per period of a 10 rad/s component


def test_step_is_its_formula():
    d = StepDisturbance([2.0, -1.0, 0.5], start=0.3)
    out = d(np.zeros(3), np.zeros(3), T)
    want = np.where(T[:, None] >= 0.3, [2.0, -1.0, 0.5], 0.0)
    assert np.array_equal(out, want)  # exact: no arithmetic
    assert d.bound == 2.0 == np.max(np.abs(out))  # the bound is attained
    with pytest.raises(ParameterError, match="start"):
        StepDisturbance(1.0, start=math.nan)


def test_band_limited_noise_is_its_documented_sum_of_sinusoids():
    d = BandLimitedDisturbance([2.0, 1.0], cutoff=10.0, seed=7, components=5)
    t = T[:2001]
    out = d(np.zeros(2), np.zeros(2), t)
    for i, a in enumerate([2.0, 1.0]):  # rebuilt from the docstring's construction, coordinate by coordinate
        rng = np.random.default_rng([7, i])
        omega = 10.0 * (1.0 - rng.random(5))
        phase = 2 * np.pi * rng.random(5)
        w = 0.5 + 0.5 * rng.random(5)
        want = a * np.sum(w / w.sum() * np.sin(np.outer(t, omega) + phase), axis=1)
        # the same operations in another order: a few ulps of the amplitude
        assert np.allclose(out[:, i], want, rtol=0, atol=1e-13)
        assert np.all(omega <= 10.0) and np.all(omega > 0)
    # deterministic in t (integrators retry steps): the same object, the same seed again, the same values
    assert np.array_equal(d(np.zeros(2), np.zeros(2), t), out)
    assert np.array_equal(BandLimitedDisturbance([2.0, 1.0], 10.0, 7, 5)(np.zeros(2), np.zeros(2), t), out)
    # coordinate i does not depend on how many coordinates there are
    assert np.array_equal(BandLimitedDisturbance(2.0, 10.0, 7, 5)(np.zeros(4), np.zeros(4), t)[:, 0], out[:, 0])


@pytest.mark.parametrize("d", [
    StepDisturbance(2.0, start=1.0),
    SinusoidalDisturbance(2.0, omega=[1.0, 3.0, 7.0], phase=[0.0, 1.0, 2.0]),
    BandLimitedDisturbance(2.0, cutoff=10.0, seed=0),
    BandLimitedDisturbance(2.0, cutoff=3.0, seed=11, components=2),
])
def test_the_bound_holds_on_a_fine_grid(d):
    out = d(np.zeros(3), np.zeros(3), T)
    assert np.max(np.abs(out)) <= d.bound == 2.0  # Σ w = 1 makes it exact, not up to rounding of a clip
    # and the force is not vanishingly small: every coordinate reaches a good part of D (noise: ≥ 0.45 D over
    # 60 s with 16 components, the least seen over seeds 0–20 was 0.47 D; two components reach ~0.9 D)
    assert np.min(np.max(np.abs(out), axis=0)) >= 0.45 * d.bound


def test_a_sum_is_the_sum_of_its_terms_and_bound():
    f, s = JointFriction(coulomb=[1.0, 0.5]), StepDisturbance(2.0)
    d = f + s + SinusoidalDisturbance(0.5, omega=2.0)
    assert isinstance(d, SumDisturbance) and len(d.terms) == 3  # flattened
    q, qd, t = np.zeros((4, 2)), np.linspace(-1, 1, 8).reshape(4, 2), np.linspace(0, 1, 4)
    want = f(q, qd, t) + s(q, qd, t) + 0.5 * np.sin(2.0 * t)[:, None]
    assert np.allclose(d(q, qd, t), want, rtol=1e-15, atol=0)
    assert d.bound == 3.5 and (JointFriction(viscous=1.0) + s).bound == math.inf
    with pytest.raises(TypeError):
        f + 1.0


def test_actual_forces_draws_are_reproducible_and_inside_their_range():
    forces = ActualForces(JointFriction([2.0, 1.0], [3.0, 0.5], 0.05), spread=0.5, disturbance=StepDisturbance(2.0))
    batch = forces.batch(50, seed=3).terms[0]
    assert batch.viscous.shape == (50, 1, 2)
    for i in (0, 17, 49):  # a campaign's sample i and the Γ Monte Carlo's row i: one draw
        one = forces(np.random.default_rng([3, i]), None).terms[0]
        assert np.array_equal(one.viscous, batch.viscous[i, 0]) and np.array_equal(one.coulomb, batch.coulomb[i, 0])
    ratio = batch.viscous[:, 0] / [2.0, 1.0]
    assert np.all((0.5 <= ratio) & (ratio <= 1.5)) and np.ptp(ratio) > 0.5  # spread over most of ±50 %
    fixed = ActualForces(forces.friction, 0.0, forces.disturbance)
    assert fixed.deterministic and not forces.deterministic
    assert fixed.draw(np.random.default_rng(0)).terms[0] is forces.friction
    with pytest.raises(ParameterError, match="spread"):
        ActualForces(forces.friction, spread=1.5)


# --------------------------------------------------------------------------- a run's δq carries d(t)
def _spring(m=2.0, k=4.0):
    """Two unit springs with constant diagonal M = m I: δq of an additive force d is M⁻¹ d = d / m exactly."""
    return Plant.from_functions(lambda q, m, k: np.diag([m, m]), lambda q, qd, m, k: -k * q,
                                params={"m": m, "k": k}, names=["a", "b"], kinds=["length", "length"])


def test_uncertainty_along_a_run_is_the_disturbance_over_the_mass():
    from robustrack.tracking.assess import uncertainty_along_run

    plant, D = _spring(), 2.0
    actual = actual_plant(plant, dQ=StepDisturbance([D, -0.5 * D]))
    t = np.linspace(0, 1, 11)
    q, qd, Qc = np.c_[np.sin(t), np.cos(t)], np.c_[np.cos(t), -np.sin(t)], np.zeros((11, 2))
    dq = uncertainty_along_run(plant, actual, q, qd, q, qd, Qc, t)["dq_norm"]
    # δM = 0 and q_c = q: δq = M⁻¹ d, ‖·‖∞ = D / m at every time (to the rounding of one solve)
    assert np.allclose(dq, D / 2.0, rtol=1e-14, atol=0)
    none = uncertainty_along_run(plant, plant, q, qd, q, qd, Qc, t)["dq_norm"]
    assert np.all(none == 0)


def test_a_closed_loop_runs_max_norm_dq_includes_the_disturbance():
    from robustrack.controllers import GSS
    from robustrack.tracking.problem import TrackingProblem

    plant, D, m, k = _spring(), 2.0, 2.0, 4.0

    def run(actual):
        problem = TrackingProblem(plant, None, GSS(K=5.0, gamma_prime=10.0), [0.1, 0.0], [0.0, 0.2], (0.0, 1.0),
                                  n_points=101, actual=actual, uncompensated=False)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the numpy path's one-line notice
            return problem.simulate().metrics

    without = run(actual_plant(plant, params={"m": 2.2}))
    with_d = run(actual_plant(plant, params={"m": 2.2}, dQ=BandLimitedDisturbance(D, cutoff=10.0, seed=1)))
    step = run(actual_plant(plant, dQ=StepDisturbance(D)))
    # the step alone (δM = 0): δq = M⁻¹ (d − k (q_c − q)), so | ‖δq‖∞ − D/m | ≤ k max|e| / m
    assert abs(step["max_norm_dq"] - D / m) <= k * step["max_abs_e"] / m + 1e-12
    # with δM too: ‖δq‖∞ rises by at most ‖M_a⁻¹‖ D = D / 2.2, and the noise reaches ≥ 0.45 D (test above)
    rise = with_d["max_norm_dq"] - without["max_norm_dq"]
    assert 0.2 * D / 2.2 < rise <= D / 2.2 + k * with_d["max_abs_e"] / 2.2


# --------------------------------------------------------------------------- the [actual] table (urdf kind)
def _urdf_scenario(tmp_path, actual: str):
    from robustrack.plants.urdf import example_robot_urdf

    pytest.importorskip("pinocchio")
    path = tmp_path / "arm.toml"
    path.write_text(f'[scenario]\nname = "arm"\nkind = "urdf"\n\n[plant]\nurdf = "{example_robot_urdf("ur5")}"\n\n'
                    '[reference]\nhome = [0.0, -1.2, 1.4, -1.5, -1.57, 0.0]\namplitude = [0.1, 0.1, 0.1, 0.1, 0.1, '
                    '0.1]\nfrequency = [1.0, 1.0, 1.0, 1.0, 1.0, 1.0]\n\n[simulation]\nt_end = 0.2\nn_points = 21\n\n'
                    '[uncertainty]\ngamma = 20.0\n\n' + actual)  # a robot declares its own Γ
    return str(path)


@pytest.mark.parametrize("actual, word", [
    ("[actual]\nviscous = -1.0\n", r"`actual\.viscous` must be >= 0"),
    ("[actual]\ncoulomb_width = 0.0\n", r"`actual\.coulomb_width` must be > 0"),
    ("[actual]\nfriction_spread = 2.0\n", r"`actual\.friction_spread` must be in \[0, 1\]"),
    ("[actual.disturbance]\nkind = 'gust'\n", r"`actual\.disturbance\.kind` must be one of"),
    ("[actual.disturbance]\nkind = 'step'\nfrequency = 3.0\n", r"`actual\.disturbance\.frequency`.*does not use"),
    ("[actual.disturbance]\nkind = 'noise'\namplitude = 2.0\n", r"`actual\.disturbance\.frequency` must be > 0"),
    ("[actual.disturbance]\nkind = 'step'\namplitde = 2.0\n", r"actual\.disturbance\.amplitde"),
])
def test_bad_forces_are_refused_at_load_naming_the_key(tmp_path, actual, word):
    from robustrack.scenarios import load_scenario

    with pytest.raises(ScenarioError, match=word):
        load_scenario(_urdf_scenario(tmp_path, actual))


def test_the_actual_table_builds_friction_and_disturbance_into_the_actual_plant(tmp_path):
    from robustrack.scenarios import load_scenario
    from robustrack.scenarios.actual_forces import scenario_forces

    sc = load_scenario(_urdf_scenario(tmp_path, "[actual]\nviscous = [1.0, 1.0, 1.0, 0.5, 0.5, 0.5]\ncoulomb = 2.0\n"
                                                "friction_spread = 0.5\n[actual.disturbance]\nkind = 'step'\n"
                                                "amplitude = 2.0\nstart = 0.1\n"))
    problem = sc.build()
    q, qd = np.array([0.0, -1.2, 1.4, -1.5, -1.57, 0.0]), np.array([0.1, -0.2, 0.3, 0.0, 1.0, -1.0])
    got = problem.actual.given_force(q, qd, 0.5) - problem.nominal.given_force(q, qd, 0.5)
    want = -np.array([1.0, 1.0, 1.0, 0.5, 0.5, 0.5]) * qd - 2.0 * np.tanh(qd / 0.01) + 2.0
    assert np.allclose(got, want, rtol=0, atol=1e-12)  # Pinocchio's Q cancels to rounding of ~10 N·m terms
    assert scenario_forces(sc.config).spread == 0.5
    with pytest.raises(ScenarioError, match=r"`actual\.viscous` must be one number, or 6 numbers"):
        load_scenario(_urdf_scenario(tmp_path, "[actual]\nviscous = [1.0, 2.0]\n")).build()


def test_ur5_friction_runs_and_its_studies_see_the_forces():
    """The catalog scenario on a short horizon: the run's δq, a Monte Carlo sample's plant and the Γ Monte Carlo."""
    pytest.importorskip("pinocchio")
    from robustrack.scenarios import load_scenario
    from robustrack.scenarios.campaign import run_montecarlo
    from robustrack.scenarios.gamma import run_gamma
    from robustrack.scenarios.tracking_kinds import run_tracking

    sets = ["simulation.t_end=0.3", "simulation.n_points=31", "simulation.uncompensated=false"]
    sc = load_scenario("ur5-friction", sets)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the numpy path's notice
        result, _ = run_tracking(sc)
        off = load_scenario("ur5-friction", sets + ["actual.viscous=0", "actual.coulomb=0",
                                                     "actual.disturbance.kind=none"])
        without, _ = run_tracking(off)
    # the payload alone gives ‖δq‖∞ ≈ 2.4 rad/s² (ur5-payload); friction and the noise add tens of rad/s²
    assert without.metrics["max_norm_dq"] < 3.0 < 20.0 < result.metrics["max_norm_dq"] < sc.config["uncertainty"]["gamma"]
    from robustrack.reports.text import format_gamma, format_montecarlo

    g = run_gamma(sc, 20, seed=0).doc
    # the friction coefficients are named parameters (±50 % each), drawn with the payload's mass and centre of mass
    assert g["actual_forces"]["named"] and g["exact"]["max"] > 20.0
    mc = run_montecarlo(sc, 2, workers=1, progress=None)
    assert mc.summary()["completed"] == 2 and all(r.max_norm_dq > 20.0 for r in mc.records)
    said = "friction (viscous ≤ 2, Coulomb ≤ 3), BandLimitedDisturbance ‖d‖∞ ≤ 2"
    named = "viscous_shoulder_pan_joint [1, 3] uniform"
    assert said in format_gamma(g) and said in format_montecarlo(mc.summary())
    assert named in format_gamma(g) and named in format_montecarlo(mc.summary())


def test_worst_case_takes_one_force_for_every_plant_and_refuses_a_drawn_family():
    from robustrack.campaigns import ParameterUncertainty, worst_case

    drawn = ActualForces(JointFriction(1.0, 1.0), spread=0.5)
    with pytest.raises(ParameterError, match="draws per sample"):
        worst_case(None, ParameterUncertainty(disturbance=drawn), budget=5)
    fixed = ParameterUncertainty(disturbance=ActualForces(JointFriction(1.0, 1.0)))
    assert "held at its given values" in fixed.box_note()
