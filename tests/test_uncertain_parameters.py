"""Named uncertain parameters (robustrack.uncertainty.parameters): distributions, box, campaigns on a user's plant.

Statistical tolerances are 3 standard errors of the estimated quantity over N draws (a fixed seed makes each
test deterministic; 3 SE is what a correct sampler passes with probability ≈ 0.997 for a random seed, so a
wrong σ or mean — by more than a few per cent — fails).
"""

import math

import warnings

import numpy as np
import pytest

from robustrack.campaigns import ParameterUncertainty, monte_carlo, worst_case
from robustrack.controllers import GSS
from robustrack.errors import ParameterError
from robustrack.plants.base import Plant
from robustrack.tracking.problem import TrackingProblem
from robustrack.uncertainty import UncertainParameter, UncertainSet
from robustrack.uncertainty import sample_parameters

N = 10_000


def test_repr_reads_like_ureal():
    assert repr(UncertainParameter("m1", 1.0, percent=10)) == \
        "m1: uncertain real, nominal = 1, range = [0.9, 1.1], uniform"
    assert repr(UncertainParameter("k", 2.0, sigma=0.1)) == "k: uncertain real, nominal = 2, normal σ = 0.1"
    assert repr(UncertainParameter("g", 9.81, cases=[9.78, 9.83])) == \
        "g: uncertain real, nominal = 9.81, cases [9.78, 9.83]"


def test_normal_mean_and_sigma_within_three_standard_errors():
    p = UncertainParameter("k", 4.0, distribution="normal", sigma=0.4)
    x = p.sample(N, np.random.default_rng(11))
    # SE of the mean σ/√N; of the sample standard deviation σ/√(2(N−1)) (normal data)
    assert abs(x.mean() - 4.0) <= 3 * 0.4 / math.sqrt(N)
    assert abs(x.std(ddof=1) - 0.4) <= 3 * 0.4 / math.sqrt(2 * (N - 1))


def test_truncated_normal_stays_in_its_range_with_the_truncated_mean():
    from scipy.stats import truncnorm

    lo, hi, mu, sigma = 0.9, 1.3, 1.0, 0.2
    p = UncertainParameter("m", mu, range=(lo, hi), sigma=sigma)
    assert p.distribution == "truncated-normal"
    x = p.sample(N, 5)
    assert x.min() >= lo and x.max() <= hi
    law = truncnorm((lo - mu) / sigma, (hi - mu) / sigma, loc=mu, scale=sigma)
    # asymmetric truncation moves the mean above μ (by ≈ 0.06 here, ~60 SE): the check sees a plain clip or a
    # rejection from the wrong law; 3 SE with the truncated law's own σ
    assert abs(x.mean() - law.mean()) <= 3 * law.std() / math.sqrt(N)


def test_cases_sample_only_the_cases_each_about_equally_often():
    cases = (9.78, 9.81, 9.83)
    x = UncertainParameter("g", 9.81, cases=cases).sample(N, 2)
    assert set(np.unique(x)) == set(cases)
    counts = np.array([np.sum(x == c) for c in cases])
    p = 1 / 3  # binomial count: SE √(N p (1 − p))
    assert np.all(np.abs(counts - N * p) <= 3 * math.sqrt(N * p * (1 - p)))


def test_a_percent_uniform_set_draws_what_the_spread_sampler_draws():
    # the same generator stream, mapped the same way: bit for bit, so old and new forms reproduce each other
    s = UncertainSet([UncertainParameter("m1", 1.0, percent=10), UncertainParameter("m2", 2.0, percent=10)])
    assert np.array_equal(s.sample(50, 7), sample_parameters([1.0, 2.0], 50, spread=0.1, seed=7).values)


def test_box_ignores_the_distribution_and_a_normal_has_none():
    s = UncertainSet([UncertainParameter("m", 1.0, range=(0.8, 1.3), sigma=0.1),
                      UncertainParameter("g", 9.81, cases=(9.83, 9.78))])
    lo, hi = s.box()
    assert lo.tolist() == [0.8, 9.78] and hi.tolist() == [1.3, 9.83]
    assert "distributions are ignored" in s.box_note() and "truncated-normal" in s.box_note()
    with pytest.raises(ParameterError, match="truncated-normal"):
        UncertainParameter("k", 1.0, sigma=0.1).box()


@pytest.mark.parametrize("kwargs, word", [
    ({"percent": 10, "range": (0.9, 1.1)}, "not both"),
    ({"range": (1.1, 1.2)}, "must hold its nominal"),
    ({"distribution": "normal"}, "sigma"),
    ({"distribution": "normal", "sigma": 0.1, "range": (0.9, 1.1)}, "truncated-normal"),
    ({"sigma": -1.0}, "> 0"),
    ({"distribution": "lognormal", "percent": 5}, "one of"),
    ({"cases": []}, "at least one"),
    ({}, "give its bounds"),
])
def test_bad_parameters_are_refused_naming_the_key(kwargs, word):
    with pytest.raises(ParameterError, match=word):
        UncertainParameter("m", 1.0, **kwargs)


# --------------------------------------------------------------------------- a plant not in the catalog
def _M(q, m, k):
    return np.array([[m]])


def _Q(q, qd, m, k):
    return np.array([-k * q[0] - 0.2 * qd[0]])


def _loop():
    plant = Plant.from_functions(_M, _Q, params={"m": 1.0, "k": 4.0}, names=["x"], kinds=["length"])
    return TrackingProblem(plant, None, GSS(K=5.0, gamma_prime=10.0), [0.1], [0.0], (0.0, 0.3), n_points=31)


def _named(seed=3):
    return ParameterUncertainty(parameters=[UncertainParameter("m", 1.0, percent=20),
                                            UncertainParameter("k", 4.0, sigma=0.4)], seed=seed)


def test_a_users_plant_with_named_parameters_through_a_small_monte_carlo():
    unc = _named()
    result = monte_carlo(_loop, unc, 6, workers=1, progress=None)
    doc = result.summary()
    assert doc["completed"] == 6 and doc["failed"] == 0
    assert [p["name"] for p in doc["parameters"]] == ["m", "k"] and doc["kind"] == "named"
    # each sample's δ is its draw from the set minus the plant's values, as the set samples them
    want = unc.parameters.sample(6, np.random.default_rng(3)) - [1.0, 4.0]
    got = np.array([r.dm for r in sorted(result.records, key=lambda r: r.index)])
    assert np.array_equal(got, want)
    assert np.all(np.abs(got[:, 0]) <= 0.2 * 1.0 + 1e-15)
    actual = unc.actual(_loop().nominal, got[2], 2)
    assert (actual.params["m"], actual.params["k"]) == (1.0 + got[2, 0], 4.0 + got[2, 1])


def test_worst_case_searches_the_box_and_says_the_distribution_is_ignored():
    unc = ParameterUncertainty(parameters=[UncertainParameter("m", 1.0, range=(0.8, 1.3), sigma=0.1),
                                           UncertainParameter("k", 4.0, percent=10)], seed=0)
    result = worst_case(_loop, unc, budget=6, workers=1)
    doc = result.to_dict()
    assert "distributions are ignored" in doc["box_note"]
    lo, hi = np.array([0.8 - 1.0, -0.4]), np.array([1.3 - 1.0, 0.4])
    for r in result.records:
        assert np.all(np.asarray(r.dm) >= lo - 1e-12) and np.all(np.asarray(r.dm) <= hi + 1e-12)
    with pytest.raises(ParameterError, match="no box"):
        ParameterUncertainty(parameters=[UncertainParameter("m", 1.0, sigma=0.1)]).box(_loop().nominal)


def test_named_parameters_refuse_spread_and_a_sampler():
    p = UncertainParameter("m", 1.0, percent=5)
    with pytest.raises(ParameterError, match="leave them out"):
        ParameterUncertainty(parameters=[p], spread=0.3)
    with pytest.raises(ParameterError, match="not both"):
        ParameterUncertainty(parameters=[p], sampler=lambda rng, n: np.ones((n, 1)))


# --------------------------------------------------------------------------- the TOML tables (python kind)
FACTORY = '''
import numpy as np
from robustrack.controllers import GSS
from robustrack.plants.base import Plant
from robustrack.tracking.problem import TrackingProblem


def M(q, m, k):
    return np.array([[m]])


def Q(q, qd, m, k):
    return np.array([-k * q[0] - 0.2 * qd[0]])


def problem():
    plant = Plant.from_functions(M, Q, params={"m": 1.0, "k": 4.0}, names=["x"], kinds=["length"])
    return TrackingProblem(plant, None, GSS(K=5.0, gamma_prime=10.0), [0.1], [0.0], (0.0, 0.3), n_points=31)
'''


def _scenario(tmp_path, uncertainty: str):
    (tmp_path / "spring.py").write_text(FACTORY)
    path = tmp_path / "spring.toml"
    path.write_text('[scenario]\nname = "spring"\nkind = "python"\n\n[problem]\nfactory = "spring.py:problem"\n\n'
                    + uncertainty)
    return str(path)


NAMED = '''[uncertainty.parameters.m]
range = [0.8, 1.3]
sigma = 0.1

[uncertainty.parameters.k]
cases = [3.5, 4.0, 4.5]
'''


def test_toml_tables_drive_montecarlo_worst_case_and_gamma(tmp_path):
    from robustrack.reports.text import format_gamma, format_worst_case
    from robustrack.scenarios.campaign import run_montecarlo, run_worst_case
    from robustrack.scenarios.gamma import run_gamma

    path = _scenario(tmp_path, NAMED)
    mc = run_montecarlo(path, 4, seed=2, workers=1, progress=None)
    want = UncertainSet([UncertainParameter("m", 1.0, range=(0.8, 1.3), sigma=0.1),
                         UncertainParameter("k", 4.0, cases=(3.5, 4.0, 4.5))]).sample(4, 2) - [1.0, 4.0]
    got = np.array([r.dm for r in sorted(mc.records, key=lambda r: r.index)])
    assert np.array_equal(got, want)
    assert mc.summary()["parameters"][0]["distribution"] == "truncated-normal"
    doc = run_worst_case(path, budget=5, workers=1).to_dict()
    assert "distributions are ignored" in format_worst_case(doc)
    g = run_gamma(path, 200, seed=1).doc
    assert g["sampling"] == "named" and "truncated normal" in format_gamma(g)
    with pytest.raises(ParameterError, match="does not apply"):
        run_montecarlo(path, 4, 0.2, workers=1, progress=None)


def test_the_older_list_gives_a_notice_and_the_same_draws_as_before(tmp_path):
    from robustrack.errors import RobustrackNotice
    from robustrack.scenarios.campaign import run_montecarlo

    with pytest.warns(RobustrackNotice, match=r"older form.*\[uncertainty\.parameters\.NAME\]"):
        path = _scenario(tmp_path, '[uncertainty]\nparameters = ["m", "k"]\n')
        mc = run_montecarlo(path, 4, 0.2, seed=5, workers=1, progress=None)
    got = np.array([r.dm for r in sorted(mc.records, key=lambda r: r.index)])
    # what the list form drew before named parameters existed: sample_parameters' uniform ±spread
    assert np.array_equal(got, sample_parameters([1.0, 4.0], 4, spread=0.2, seed=5).values - [1.0, 4.0])
    assert mc.summary()["parameters"] is None and mc.summary()["spread"] == 0.2
    # the text robustrack records of it (a saved run's scenario, read back by `identify`) gives no second notice:
    # the user was told when the file was loaded
    from robustrack.scenarios import load_scenario
    from robustrack.scenarios.scenario import scenario_from_toml

    with pytest.warns(RobustrackNotice, match="older form"):
        text = load_scenario(path).to_toml()
    with warnings.catch_warnings():
        warnings.simplefilter("error", RobustrackNotice)
        assert scenario_from_toml(text, "run.npz (its recorded scenario)").config["uncertainty"]["parameters"] == \
            ["m", "k"]


@pytest.mark.parametrize("table, word", [
    ("[uncertainty.parameters.mass]\npercent = 5\n", "mass"),
    ("[uncertainty.parameters.m]\npercnt = 5\n", "did you mean"),
    ("[uncertainty.parameters.m]\nrange = [1.1, 1.2]\n", "must hold its nominal"),
    ("[uncertainty.parameters.m]\nsigma = 'big'\n", "must be a finite number"),
])
def test_bad_tables_are_refused_at_load_naming_the_key(tmp_path, table, word):
    from robustrack.errors import ScenarioError
    from robustrack.scenarios import load_scenario

    with pytest.raises(ScenarioError, match=word):
        load_scenario(_scenario(tmp_path, table))


# --------------------------------------------------------------------------- friction in the actual plant
def test_joint_friction_is_its_formula_and_enters_the_actual_plants_given_force():
    from robustrack.uncertainty import JointFriction, actual_plant

    f = JointFriction(viscous=[0.5, 0.1], coulomb=[2.0, 1.0], smoothing=0.05)
    qd = np.array([[0.3, -0.01], [-2.0, 0.0]])
    want = -np.array([0.5, 0.1]) * qd - np.array([2.0, 1.0]) * np.tanh(qd / 0.05)
    assert np.allclose(f(np.zeros_like(qd), qd), want, rtol=1e-15, atol=0)
    assert f.bound == math.inf and JointFriction(coulomb=[2.0, 1.0]).bound == 2.0
    plant = Plant.from_functions(lambda q, m: np.diag([m, m]), lambda q, qd, m: -q, params={"m": 1.0},
                                 names=["a", "b"])
    actual = actual_plant(plant, dQ=f)
    q = np.array([0.2, -0.1])
    assert np.allclose(actual.given_force(q, qd[0]) - plant.given_force(q, qd[0]), want[0], rtol=1e-14, atol=0)
    with pytest.raises(ParameterError, match="smoothing"):
        JointFriction(coulomb=1.0, smoothing=0.0)


def test_gamma_with_friction_exceeds_gamma_without():
    from robustrack.plants import NLinkPendulum
    from robustrack.uncertainty import JointFriction, estimate_gamma, sample_parameters

    plant = NLinkPendulum(m=(1.0, 2.0, 3.0), L=(1.0, 1.0, 1.0), g=9.81)

    class Motion:  # a nominal motion with velocities (friction acts on q̇), Qᶜ = 0
        t = np.linspace(0.0, 1.0, 21)
        q = 0.3 * np.sin(np.outer(t, [1.0, 2.0, 3.0]))
        qd = 0.3 * np.cos(np.outer(t, [1.0, 2.0, 3.0])) * [1.0, 2.0, 3.0]
        Qc = np.zeros((21, 3))

    draws = sample_parameters(plant.m, 200, spread=0.1, seed=0)
    without = estimate_gamma(plant, Motion, draws)
    friction = JointFriction(viscous=0.5, coulomb=1.0, smoothing=0.01)
    with_f = estimate_gamma(plant, Motion, draws, dQ=friction)
    # friction adds M_a⁻¹ δQ with ‖δQ‖∞ up to 0.5·0.9 + 1 ≈ 1.4 N·m: a clear rise of every quantile
    assert with_f.summary()["exact"]["max"] > without.summary()["exact"]["max"]
    assert with_f.summary()["exact"]["median"] > without.summary()["exact"]["median"]
