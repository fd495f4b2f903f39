"""Issue 12's scenarios: which motion a constraint produces (nonholonomic, vakonomic, servo, limits).

Truths: K's closed form of the nonholonomic skate; the vakonomic skate's reduced
equations (their derivation checked symbolically here, and K's printed form); the
speed reducer's variational integrals (S 2.7) and energy; the constraint and the energy
for the servo; K Theorems 1–2 (errors falling like 1/N).
"""

import numpy as np
import pytest
import sympy as sp

from robustrack.cli import main
from robustrack.errors import RealizabilityError, ScenarioError
from robustrack.scenarios import load_scenario
from robustrack.scenarios.runner import run_constrained_scenario


def _run(name, *overrides):
    return run_constrained_scenario(load_scenario(name, list(overrides)))


def test_chaplygin_skate_meets_the_closed_form_over_ten_seconds():
    """rtol 1e-10 over 10 s: the global error stays well under the issue's 1e-7."""
    result, summary = _run("chaplygin-skate")
    assert summary["config"]["simulation"]["t_end"] == 10.0 and result.coordinates == ("x", "y", "phi")
    assert summary["metrics"]["max_error_vs_closed_form"] < 1e-7
    assert np.max(result.q[:, 0]) <= 0.5 + 1e-9  # x = sin²t / 2: on average it does not slide down


def test_vakonomic_skate_follows_its_reduced_equations_and_slides_down():
    result, summary = _run("chaplygin-skate-vakonomic")
    m = summary["metrics"]
    # the run (rtol 1e-10) against the reduced equations (rtol 1e-12): the issue asks 1e-6
    assert m["max_error_vs_closed_form"] < 1e-6
    assert m["energy_drift"] < 1e-8 and m["max_constraint_residual"] < 1e-8
    x = result.q[:, 0]
    assert np.all(np.diff(x) >= -1e-12) and m["x_end"] > 1.0  # ẋ = t cos² φ ≥ 0: slides down
    assert m["x_end_nonholonomic"] < 0.5  # the nonholonomic skate stays within x ≤ 1/(2ω²)
    # K's printed equations for this start: ẋ = t cos² φ, ẏ = t sin φ cos φ, and λ = −t sin φ
    t, phi, qd = result.t, result.q[:, 2], result.qd
    np.testing.assert_allclose(qd[:, 0], t * np.cos(phi) ** 2, atol=1e-7)
    np.testing.assert_allclose(qd[:, 1], t * np.sin(phi) * np.cos(phi), atol=1e-7)
    np.testing.assert_allclose(qd[:, 3], -t * np.sin(phi), atol=1e-7)


def test_vakonomic_skate_reduced_equations_solve_the_vakonomic_equations():
    """Symbolic check of the derivation in constraint_models.vakonomic_skate_reduced: with λ, ẋ, ẏ
    from the integrals and φ̈ from the reduced equation, [T] − F − λ[Φ] − λ̇ ∂Φ/∂q̇ = 0 and Φ = 0,
    the Lagrangian derivatives taken here by sympy from L and Φ."""
    t = sp.Symbol("t")
    m, inertia, g, c1, c2 = sp.symbols("m I g c1 c2", positive=True)
    X, Y, P, Lam = (sp.Function(n)(t) for n in ("X", "Y", "P", "Lam"))
    q = [X, Y, P]
    v = sp.symbols("v0:3")
    T = m * (v[0] ** 2 + v[1] ** 2) / 2 + inertia * v[2] ** 2 / 2
    F = [m * g, 0, 0]
    Phi = v[0] * sp.sin(P) - v[1] * sp.cos(P)
    on = {v[i]: q[i].diff(t) for i in range(3)}

    def lagrange_derivative(f, i):
        return sp.diff(f.diff(v[i]).subs(on), t) - f.subs(on).diff(q[i])

    p = m * g * t + c1
    lam = c2 * sp.cos(P) - p * sp.sin(P)
    xd, yd = (p + lam * sp.sin(P)) / m, (c2 - lam * sp.cos(P)) / m
    phidd = (p * sp.sin(P) - c2 * sp.cos(P)) * (p * sp.cos(P) + c2 * sp.sin(P)) / (m * inertia)
    for i in range(3):
        r = (lagrange_derivative(T, i) - F[i] - Lam * lagrange_derivative(Phi, i)
             - Lam.diff(t) * Phi.diff(v[i]).subs(on))
        r = r.subs({X.diff(t, 2): xd.diff(t), Y.diff(t, 2): yd.diff(t)}).subs({X.diff(t): xd, Y.diff(t): yd})
        r = r.subs(Lam.diff(t), lam.diff(t)).subs(Lam, lam).subs(P.diff(t, 2), phidd)
        assert sp.simplify(r) == 0, i
    assert sp.simplify(Phi.subs({v[0]: xd, v[1]: yd})) == 0


def test_speed_reducer_variational_vs_dalembert():
    result, summary = _run("speed-reducer-variational", "simulation.t_end=5")
    m = summary["metrics"]
    assert m["max_error_vs_closed_form"] < 1e-6  # vs the reduced equations (S 2.8 re-derived)
    # rtol 1e-10 over 5 s: S (2.7)'s integrals and the energy drift by ~1e-9 at most
    assert m["energy_drift"] < 1e-8 and m["integral_A_drift"] < 1e-8 and m["integral_B_drift"] < 1e-8
    assert m["max_x_difference_vs_dalembert"] > 0.1  # the helical force −λφ̇ moves x
    _, dal = _run("speed-reducer", "simulation.t_end=5")
    assert dal["metrics"]["max_x_error_vs_closed_form"] < 1e-8  # d'Alembert: x autonomous (S 2.2c)


def test_suslov_servo_default_keeps_the_constraint_and_the_energy():
    _, summary = _run("suslov-servo")
    m = summary["metrics"]
    assert m["max_abs_omega_dot_l"] < 1e-9 and m["energy_drift"] < 1e-9
    assert m["min_realizability_margin"] == pytest.approx(1.0)


def test_suslov_servo_refuses_a_perpendicular_actuator_before_running(capsys):
    scenario = load_scenario("suslov-servo", ["servo.n=[1, 0, 0]"])
    with pytest.raises(RealizabilityError, match=r"cannot be realized.*\(J⁻¹n, l\) = 0.*every state"):
        scenario.build()  # the build refuses: no integration starts
    assert main(["run", "suslov-servo", "--set", "servo.n=[1, 0, 0]"]) == 2
    err = capsys.readouterr().err
    assert "realiz" in err and "servo.n" in err


def test_suslov_servo_start_off_the_constraint_is_refused():
    with pytest.raises(ScenarioError, match=r"`initial.omega`.*violates.*ω·l"):
        load_scenario("suslov-servo", ["servo.l=[1, 1, 1]", "servo.n=[1, 1, 1]"]).build()
    _, summary = _run("suslov-servo", "servo.l=[1, 1, 1]", "servo.n=[1, 1, 1]", "initial.omega=[1, -0.5, -0.5]",
                      "simulation.t_end=5")
    assert summary["metrics"]["max_abs_omega_dot_l"] < 1e-9 and summary["metrics"]["energy_drift"] < 1e-9


@pytest.mark.parametrize("name, key, t_end", [("skate-friction", "friction.N", 3.2),
                                              ("skate-added-mass", "added_mass.N", 2.0)])
def test_penalty_limits_converge_like_one_over_n(name, key, t_end):
    """K Theorem 1 (friction → nonholonomic) and Theorem 2 (added mass → vakonomic with λ(0) = 0), each over a
    horizon that keeps the test fast: the error at N = 1e4 is about 100× smaller than at N = 1e2 (the issue asks
    ≥ 10×). The errors (≥ 1e-4) dwarf the solver's (rtol 1e-10). Friction over 3.2 s, one period of the skate's
    x = sin²t / 2 (the ratio is 98 over 2 s, 99 over 5 and over the default 10 s); added mass over 2 s
    (over 1 s its N = 1e4 error, 2e-5, would come near the solver's)."""
    e2 = _run(name, f"{key}=1e2", f"simulation.t_end={t_end}")[1]["metrics"]["max_error_vs_closed_form"]
    e4 = _run(name, f"{key}=1e4", f"simulation.t_end={t_end}")[1]["metrics"]["max_error_vs_closed_form"]
    assert e2 / e4 >= 10
    assert 50 < e2 / e4 < 200  # like 1/N


def test_cli_runs_a_vakonomic_scenario(tmp_path, capsys):
    out = tmp_path / "v.json"
    assert main(["run", "chaplygin-skate-vakonomic", "--set", "simulation.t_end=1", "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "x_end" in text and "energy_drift" in text
