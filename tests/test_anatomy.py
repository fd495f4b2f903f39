"""The anatomy of a control force (issue 21 part 1): S (1.7) split, Lusternik model, S (3.5)–(3.6).

Truths used: a sympy derivation of R = μ ∂F/∂q − d/dt(μ ∂F/∂q̇) (S 1.7) along symbolic
curves; the closed forms of the speed-holding particle derived in
:mod:`robustrack.scenarios.anatomy_kinds`; the identity "velocity + position terms = the
curl term of S (1.13a)" for F linear in q̇; the energy balance; and the independent
VakonomicModel for F linear in q̇.
"""

import math

import numpy as np
import pytest
import sympy as sp

from robustrack.studies.anatomy import TERMS, constraint_derivatives, lusternik_terms, power, reaction_anatomy, work
from robustrack.studies.constraint_models import VakonomicModel, skate_model, speed_reducer_model
from robustrack.constraints import Nonholonomic
from robustrack.errors import ConstraintError, ParameterError
from robustrack.studies.lusternik import LusternikModel, dalembert_speed_holding, lusternik_speed_holding, speed_holding_model
from robustrack.plants.examples import ChaplyginSleigh, SpeedReducer
from robustrack.scenarios import load_scenario
from robustrack.scenarios.runner import run_constrained_scenario
from robustrack.tracking import simulate_constrained

# Solver tolerance of every run here: rtol 1e-10, atol 1e-12 over a few seconds. The global
# error of DOP853 at that setting is a few 1e-10 relative; positions here are O(1–10) m, so
# 1e-8 leaves two decades for error growth over the run.
RTOL, ATOL = 1e-10, 1e-12
TOL_TRAJ = 1e-8


def _run(model, q0, qd0, t_end, n_points=301):
    return simulate_constrained(model.plant, model.constraint, q0, qd0, (0.0, t_end), n_points=n_points,
                                method="DOP853", rtol=RTOL, atol=ATOL)


# ----------------------------------------------------------------- S (1.7) against sympy
def test_terms_sum_to_the_sympy_reaction_for_a_rheonomic_velocity_nonlinear_constraint():
    """R = μF_q − d/dt(μF_q̇), differentiated by sympy along q(t), μ(t), equals the sum of the six terms."""
    t = sp.Symbol("t", real=True)
    q = sp.symbols("q1:4", real=True)
    qd = sp.symbols("q1:4_dot", real=True)
    a = sp.Symbol("a", real=True)
    F = [qd[0] ** 2 * sp.sin(q[1]) + a * q[2] * qd[1] * qd[2] + sp.cos(t) * q[0] * qd[2] + q[1] ** 2 * t,
         qd[0] * q[2] - qd[1] * sp.exp(q[0]) + qd[2] ** 3 / 3]
    con = Nonholonomic(F, list(q), list(qd), t, params={a: 0.7})
    # symbolic curves to differentiate along
    qf = [sp.Function(f"x{i}")(t) for i in range(3)]
    muf = [sp.Function(f"m{i}")(t) for i in range(2)]
    subs = {**{q[i]: qf[i] for i in range(3)}, **{qd[i]: qf[i].diff(t) for i in range(3)}, a: 0.7}
    Fc = [f.subs(subs, simultaneous=True) for f in F]
    R = [sum(muf[k] * Fc[k].diff(qf[i]) - (muf[k] * Fc[k].diff(qf[i].diff(t))).diff(t) for k in range(2))
         for i in range(3)]
    rng = np.random.default_rng(1)
    qv, qdv, qddv, muv, mudv = (rng.normal(size=s) for s in (3, 3, 3, 2, 2))
    tv = 0.37
    num = {}
    for i in range(3):
        num[qf[i].diff(t, 2)] = qddv[i]
        num[qf[i].diff(t)] = qdv[i]
    for k in range(2):
        num[muf[k].diff(t)] = mudv[k]
    for i in range(3):
        num[qf[i]] = qv[i]
    for k in range(2):
        num[muf[k]] = muv[k]
    truth = np.array([float(sp.N(r.subs(num).subs(t, tv))) for r in R])
    terms = lusternik_terms(constraint_derivatives(con)(qv, qdv, tv), qdv, qddv, muv, mudv)
    # a handful of products of O(1) numbers: rounding ~1e-15; 1e-12 is loose and still catches any wrong sign
    assert np.max(np.abs(terms.total - truth)) <= 1e-12 * max(1.0, np.max(np.abs(truth)))
    assert np.allclose(terms.R, np.swapaxes(terms.R, -1, -2), rtol=0, atol=0)
    assert np.allclose(terms.S, -np.swapaxes(terms.S, -1, -2), rtol=0, atol=0)
    assert np.any(terms.rheonomic != 0) and np.any(terms.inertial != 0) and np.any(terms.gyroscopic != 0)


def test_gyroscopic_part_does_no_work_and_damping_does():
    """S (3.8): q̇ᵀ S q̇ = 0 for the antisymmetric part; the symmetric part R q̇ works (a batch of states)."""
    x, y, xd, yd = sp.symbols("x y x_dot y_dot", real=True)
    con = Nonholonomic(x * y * xd + sp.sin(x) * yd + y**2 * xd * yd, [x, y], [xd, yd])
    rng = np.random.default_rng(2)
    q, qd, qdd = (rng.normal(size=(50, 2)) for _ in range(3))
    mu, mud = rng.normal(size=(50, 1)), rng.normal(size=(50, 1))
    terms = lusternik_terms(constraint_derivatives(con)(q, qd), qd, qdd, mu, mud)
    scale = np.abs(power(terms.damping, qd)) + np.abs(power(terms.gyroscopic, qd))
    assert np.max(np.abs(power(terms.gyroscopic, qd)) / scale) <= 1e-12
    assert np.min(np.abs(power(terms.damping, qd))) > 0


# --------------------------------------------------------- vakonomic runs (F linear in q̇)
@pytest.fixture(scope="module")
def skate_runs():
    plant = ChaplyginSleigh(m=1.0, inertia=1.0, g=1.0)
    _, _, phi = skate_model()
    out = {}
    for cls, lam in ((VakonomicModel, 0.7), (LusternikModel, -0.7)):  # Kozlov's λ = −μ (S)
        model = cls(plant, phi)
        q0, qd0 = model.initial_state([0.0, 0.0, 0.0], [0.0, 0.0, 1.0], lam)
        out[cls.__name__] = (model, _run(model, q0, qd0, 3.0))
    return out


def test_parts_sum_to_the_reaction_of_a_vakonomic_run_and_the_gyroscopic_part_is_workless(skate_runs):
    model, res = skate_runs["VakonomicModel"]
    an = reaction_anatomy(model, res)
    # the terms come from F's second derivatives, the reaction from M q̈ − Q with the run's q̈
    # (VakonomicModel: [Φ]ᵀλ + Aᵀλ̇): they agree to rounding, ~1e-16 of the force scale
    assert an.sum_mismatch <= 1e-12
    assert an.gyroscopic_power_ratio <= 1e-12
    assert np.max(np.abs(an.terms.inertial)) == 0.0  # F linear in q̇: no inertial term
    # velocity + position = the curl term of S (1.13a) = 2 S q̇ (F homogeneous in q̇)
    curl = an.terms.damping + an.terms.gyroscopic + an.terms.position
    assert np.max(np.abs(curl - 2 * an.terms.gyroscopic)) <= 1e-12 * np.max(np.abs(an.terms.position))
    # ... and R^var does no work along the actual motion (S 1.14): |q̇ᵀR| = |μ̇ F| with F the run's drift
    F = res.residual[:, 0]
    assert np.max(np.abs(an.powers["total"])) <= np.max(np.abs(an.mu_dot[:, 0] * F)) + 1e-12 * np.max(
        np.abs(an.powers["damping"]))
    assert np.max(np.abs(an.powers["damping"])) > 1.0  # the damping part alone does work; the position term cancels it


def test_lusternik_model_is_the_vakonomic_model_for_linear_constraints(skate_runs):
    (_, vak), (_, lus) = skate_runs["VakonomicModel"], skate_runs["LusternikModel"]
    assert np.max(np.abs(vak.q[:, :3] - lus.q[:, :3])) <= TOL_TRAJ
    assert np.max(np.abs(vak.qd[:, 3] + lus.qd[:, 3])) <= TOL_TRAJ  # λ = −μ


def test_speed_reducer_anatomy():
    plant = SpeedReducer(a=1.0, b=0.5, m=2.0, k=3.0)
    model = VakonomicModel(plant, speed_reducer_model(0.4))
    q0, qd0 = model.initial_state([0.0, 0.0, 0.8], [1.7, 0.8 * 1.7 / 0.4, -0.3], 0.2)
    an = reaction_anatomy(model, _run(model, q0, qd0, 5.0, 501))
    assert an.sum_mismatch <= 1e-12 and an.gyroscopic_power_ratio <= 1e-12
    assert np.max(np.abs(an.terms.gyroscopic)) > 0.1  # S: the helical force is gyroscopic


def test_reaction_anatomy_refuses_other_models():
    with pytest.raises(ParameterError, match="VakonomicModel or a LusternikModel"):
        reaction_anatomy(object(), None)


# ------------------------------------------------------------ S (3.5)–(3.6): closed forms
@pytest.mark.parametrize("m, g, c, theta0, mu0", [(1.0, 9.81, 3.0, 0.3, 0.0), (2.0, 4.0, 1.5, -0.4, 0.5)])
def test_lusternik_speed_holding_against_its_closed_form(m, g, c, theta0, mu0):
    """A user's own plant in a script: S (3.5) with its closed form, speed c held, energy balance."""
    plant, con = speed_holding_model(m, g, c)
    model = LusternikModel(plant, con)
    q0, qd0 = model.initial_state([0.0, 0.0], [c * math.cos(theta0), c * math.sin(theta0)], mu0)
    res = _run(model, q0, qd0, 1.5)
    ref, mu = lusternik_speed_holding(res.t, m=m, g=g, c=c, theta0=theta0, mu0=mu0)
    assert np.max(np.abs(res.q - ref)) <= TOL_TRAJ
    assert np.max(np.abs(res.qd[:, 2] - mu)) <= TOL_TRAJ
    q, qd, mus = model.split(res.q, res.qd)
    assert np.max(np.abs(np.hypot(qd[:, 0], qd[:, 1]) - c)) <= TOL_TRAJ
    E = 0.5 * m * (qd**2).sum(-1) + m * g * q[:, 1]
    # E(t) − E(0) = −c² (μ − μ0): the frictional term's work (the inertial one does none on F = 0)
    assert np.max(np.abs(E - E[0] + c**2 * (mus[:, 0] - mu0))) <= TOL_TRAJ * m * g * 10
    an = reaction_anatomy(model, res)
    assert an.sum_mismatch <= 1e-12 and an.gyroscopic_power_ratio <= 1e-12
    # the inertial term −μ q̈ is orthogonal to q̇ on F = 0: no work (to the run's accuracy)
    assert np.max(np.abs(an.powers["inertial"])) <= 1e-9 * np.max(np.abs(an.powers["frictional"]))
    assert np.max(np.abs(an.terms.inertial)) > 0.1
    # Qᶜ of the run is the Lusternik reaction −μ q̈ − μ̇ q̇ of S (3.5a)
    Rq = -mus * res.qdd[:, :2] - res.qdd[:, 2:] * qd
    assert np.max(np.abs(res.Qc[:, :2] - Rq)) <= 1e-12 * np.max(np.abs(Rq))


def test_dalembert_speed_holding_against_its_closed_form():
    m, g, c, th = 1.5, 9.81, 3.0, 0.3
    plant, con = speed_holding_model(m, g, c)
    res = simulate_constrained(plant, con, [0.0, 0.0], [c * math.cos(th), c * math.sin(th)], (0.0, 1.5),
                               n_points=301, method="DOP853", rtol=RTOL, atol=ATOL)
    assert np.max(np.abs(res.q - dalembert_speed_holding(res.t, g=g, c=c, theta0=th)[0])) <= TOL_TRAJ
    lam = m * g * res.qd[:, 1] / c**2  # S (3.6): the reaction λ q̇
    assert np.max(np.abs(res.Qc - lam[:, None] * res.qd)) <= TOL_TRAJ * m * g


def test_the_two_reactions_part_ways():
    """Same start, μ0 = 0: same initial acceleration, then the Lusternik particle is heavier (m + μ grows)."""
    t = np.linspace(0.0, 1.5, 7)
    qa = dalembert_speed_holding(t, g=9.81, c=3.0, theta0=0.3)[0]
    ql = lusternik_speed_holding(t, m=1.0, g=9.81, c=3.0, theta0=0.3, mu0=0.0)[0][:, :2]
    assert np.max(np.abs(qa[-1] - ql[-1])) > 0.5


@pytest.mark.parametrize("name", ["speed-holding-particle", "speed-holding-particle-lusternik"])
def test_catalog_scenarios(name):
    _, summary = run_constrained_scenario(load_scenario(name))
    m = summary["metrics"]
    assert m["max_error_vs_closed_form"] <= TOL_TRAJ
    assert m["max_speed_error"] <= TOL_TRAJ
    if name.endswith("lusternik"):
        assert m["energy_balance_error"] <= 1e-7
        assert m["anatomy_sum_mismatch"] <= 1e-12 and m["gyroscopic_power_ratio"] <= 1e-12
    else:
        assert m["max_reaction_error_vs_closed_form"] <= 1e-7


def test_lusternik_refuses_nonpositive_effective_mass():
    plant, con = speed_holding_model(1.0, 9.81, 3.0)
    model = LusternikModel(plant, con)
    with pytest.raises(ConstraintError, match="m \\+ μ"):
        model.motion(np.zeros(2), np.array([3.0, 0.0]), np.array([-1.0]))


def test_work_is_the_trapezoid_rule():
    t = np.linspace(0.0, 1.0, 2001)
    W = work(t, np.cos(t))
    assert abs(W[-1] - math.sin(1.0)) <= (1.0 / 2000) ** 2  # trapezoid error ≤ h² max|P''| (b − a)/12


def test_terms_are_named_in_order():
    assert TERMS == ("inertial", "damping", "gyroscopic", "position", "frictional", "rheonomic")


def test_vakonomic_skate_scenario_reports_the_anatomy_and_powers():
    """chaplygin-skate-vakonomic (a VakonomicModel run) reports the split of S (1.7), powers and works.

    Truths: the run's own reaction M q̈ − Q (the terms must sum to it, to rounding); energy: the skate's
    only non-conservative force is the reaction, so E(t) − E(0) equals its work — the trapezoidal
    work on 301 points over 3 s is O(h²) ≈ 1e-4 of the powers (~4 W) at most, and measured ~5e-10
    because the reaction's power is nearly zero; the works of the six terms add up to the reaction's.
    """
    from robustrack.studies.anatomy import TERMS

    _, summary = run_constrained_scenario(load_scenario("chaplygin-skate-vakonomic"))
    m = summary["metrics"]
    assert m["anatomy_sum_mismatch"] <= 1e-12 and m["gyroscopic_power_ratio"] <= 1e-12
    assert m["energy_balance_error"] <= 1e-4
    assert sum(m[f"{k}_work"] for k in TERMS) == pytest.approx(m["reaction_work"], abs=1e-12)
    assert m["max_abs_damping_power"] > 1.0  # the split is not trivial: damping and position terms work
    assert summary["units"]["metrics"]["max_abs_damping_power"] == "W"
