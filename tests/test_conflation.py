"""W ch. 3: correct vs conflated equations, each against W's closed forms (re-derived by hand
where the extraction is garbled), and the refusals that keep the conflated model out."""

import numpy as np
import pytest
import sympy as sp

from robustrack.studies.conflation import (
    ConflatedModel,
    check_not_conflated,
    conflated_model,
    conflation_footprint,
    w_chapter3_examples,
)
from robustrack.studies.constraint_models import ServoModel, VakonomicModel
from robustrack.constraints import Holonomic, Nonholonomic
from robustrack.errors import ParameterError
from robustrack.mechanics import solve_constrained
from robustrack.plants import LagrangianPlant

RNG = np.random.default_rng(3)
EXAMPLES = w_chapter3_examples()
# the fundamental equation in closed form vs the formulas: rounding only (well-conditioned states)
TOL = 1e-11


def _both(name, q, qd):
    ex = EXAMPLES[name]
    plant, con = ex.correct()
    A, b = con.matrices(q, qd)
    correct = solve_constrained(plant.mass_matrix(q), plant.given_force(q, qd), A, b).qdd
    return correct, ex.conflated().motion(q, qd).qdd


def test_hamel_skate():
    """W 3.1: correct v̇ = s θ̇², I_B θ̈ = −m s θ̇ v (3.1.11 with the constraint); conflated θ̈ = 0,
    v̇ = 0 (3.1.14). States on the constraint: (ẋ, ẏ) = v (cos θ, sin θ)."""
    m, s, IB = 1.0, 0.5, 0.5
    th, v, w = RNG.uniform(-3, 3, 10), RNG.normal(size=10), RNG.normal(size=10)
    q = np.stack([RNG.normal(size=10), RNG.normal(size=10), th], -1)
    qd = np.stack([v * np.cos(th), v * np.sin(th), w], -1)
    correct, conflated = _both("hamel-skate", q, qd)
    vdot, wdot = s * w**2, -m * s * w * v / IB
    want = np.stack([vdot * np.cos(th) - w * v * np.sin(th), vdot * np.sin(th) + w * v * np.cos(th), wdot], -1)
    np.testing.assert_allclose(correct, want, atol=TOL)
    want_c = np.stack([-w * v * np.sin(th), w * v * np.cos(th), 0 * th], -1)
    np.testing.assert_allclose(conflated, want_c, atol=TOL)


def test_appell_particle():
    """W 3.3.7 (correct) and 3.3.11–3.3.13 (conflated), Q = (f, 0, −g), on ż² = ẋ² + ẏ²."""
    f, g = 1.0, 9.81
    xd, yd = RNG.normal(size=10), RNG.normal(size=10)
    zd = np.sqrt(xd**2 + yd**2) * np.sign(RNG.normal(size=10))
    q, qd = RNG.normal(size=(10, 3)), np.stack([xd, yd, zd], -1)
    correct, conflated = _both("appell-particle", q, qd)
    Qx, Qy, Qz = f, 0.0, -g
    d = 2 * zd**2
    want = np.stack([((yd**2 + zd**2) * Qx - xd * yd * Qy + xd * zd * Qz) / d,
                     (-xd * yd * Qx + (xd**2 + zd**2) * Qy + yd * zd * Qz) / d,
                     (xd * zd * Qx + yd * zd * Qy + (xd**2 + yd**2) * Qz) / d], -1)
    np.testing.assert_allclose(correct, want, atol=1e-10)
    want_c = np.stack([(zd * Qx + xd * Qz) / (2 * zd), (zd * Qy + yd * Qz) / (2 * zd),
                       (xd * zd * Qx + yd * zd * Qy + (xd**2 + yd**2) * Qz) / d], -1)
    np.testing.assert_allclose(conflated, want_c, atol=1e-10)
    assert np.max(np.abs(correct - conflated)) > 0.1


def test_appell_particle_with_gravity_alone_the_two_agree():
    """With Q = (0, 0, −g) both give z̈ = −g/2, ẍ/ẋ = ÿ/ẏ = z̈/ż: the push is what separates them."""
    ex = w_chapter3_examples(push=0.0)["appell-particle"]
    plant, con = ex.correct()
    q0, qd0 = np.array(ex.q0), np.array(ex.qd0)
    A, b = con.matrices(q0, qd0)
    a = solve_constrained(plant.mass_matrix(q0), plant.given_force(q0, qd0), A, b).qdd
    np.testing.assert_allclose(ex.conflated().motion(q0, qd0).qdd, a, atol=TOL)
    np.testing.assert_allclose(a, -9.81 / 2 * qd0 / qd0[2], atol=TOL)


@pytest.mark.parametrize("alpha", [0.0, 0.5, 1.0])
def test_w_3_3_2_depends_on_alpha(alpha):
    """ẏ = c z ẋ: correct (3.3.20) ẍ = −c² z ẋ ż/(1 + c²z²), ÿ = c ẋ ż/(1 + c²z²), z̈ = 0;
    conflated (3.3.25, re-derived) ẍ = −(1 + α) c² z ẋ ż/(1 + c²z²), ÿ = c ẋ ż (1 − α c² z²)/(1 + c²z²),
    z̈ = α c² z ẋ²; α = 1 has a singular M+ (W: use 2.2.10) and still follows (3.3.25)."""
    c = 1.0
    q, qd = RNG.normal(size=(10, 3)), RNG.normal(size=(10, 3))
    z, xd, zd = q[:, 2], qd[:, 0], qd[:, 2]
    ex = w_chapter3_examples(alpha=alpha)["w-3.3.2"]
    plant, con = ex.correct()
    A, b = con.matrices(q, qd)
    correct = solve_constrained(plant.mass_matrix(q), plant.given_force(q, qd), A, b).qdd
    conflated = ex.conflated().motion(q, qd).qdd
    den = 1 + c**2 * z**2
    np.testing.assert_allclose(correct, np.stack([-c**2 * z * xd * zd / den, c * xd * zd / den, 0 * z], -1), atol=TOL)
    want_c = np.stack([-(1 + alpha) * c**2 * z * xd * zd / den, c * xd * zd * (1 - alpha * c**2 * z**2) / den,
                       alpha * c**2 * z * xd**2], -1)
    np.testing.assert_allclose(conflated, want_c, atol=1e-10)


def test_w_3_3_3():
    """x = c ẏ ż with V = ½x²: correct (3.3.37) q̈ = (−x, ẋ ż/(c(ẏ² + ż²)), ẋ ẏ/(c(ẏ² + ż²)));
    conflated (3.3.39–3.3.40, re-derived by hand from M+ = [[1,0,0],[0,1−c²ż²,−2c²ẏż],[0,−2c²ẏż,1−c²ẏ²]],
    Q+ = 0): ẍ = 0, (ÿ, z̈) = ẋ (ż(1 + c²ẏ²), ẏ(1 + c²ż²)) / (c(ẏ² + ż² + 2c²ẏ²ż²))."""
    c = 1.0
    q = RNG.normal(size=(10, 3))
    qd = np.concatenate([RNG.normal(size=(10, 1)), RNG.uniform(-0.4, 0.4, (10, 2))], -1)  # M+ stays definite
    x, xd, yd, zd = q[:, 0], qd[:, 0], qd[:, 1], qd[:, 2]
    correct, conflated = _both("w-3.3.3", q, qd)
    d = c * (yd**2 + zd**2)
    np.testing.assert_allclose(correct, np.stack([-x, xd * zd / d, xd * yd / d], -1), atol=1e-10)
    d_c = c * (yd**2 + zd**2 + 2 * c**2 * yd**2 * zd**2)
    np.testing.assert_allclose(conflated, np.stack([0 * x, xd * zd * (1 + c**2 * yd**2) / d_c,
                                                    xd * yd * (1 + c**2 * zd**2) / d_c], -1), atol=1e-10)


def test_w_3_3_4_holonomic_substitution_is_harmless():
    """y = ½z², Q = (0, −g, 0): both give (3.3.61–3.3.63) ẍ = 0, (1 + z²) z̈ = −z ż² − g z, ÿ = ż² + z z̈."""
    g = 1.0
    z, zd = RNG.normal(size=10), RNG.normal(size=10)
    q = np.stack([RNG.normal(size=10), z**2 / 2, z], -1)
    qd = np.stack([RNG.normal(size=10), z * zd, zd], -1)
    correct, conflated = _both("w-3.3.4", q, qd)
    zdd = (-z * zd**2 - g * z) / (1 + z**2)
    want = np.stack([0 * z, zd**2 + z * zdd, zdd], -1)
    np.testing.assert_allclose(correct, want, atol=TOL)
    np.testing.assert_allclose(conflated, want, atol=TOL)


def _run_correct(ex, t_end, n_points):
    """The correct model integrated here with the fundamental equation (numpy; no compiled kernels)."""
    from scipy.integrate import solve_ivp

    plant, con = ex.correct()
    n = plant.n

    def f(t, y):
        A, b = con.matrices(y[:n], y[n:], t)
        return np.concatenate([y[n:], solve_constrained(plant.mass_matrix(y[:n], t),
                                                        plant.given_force(y[:n], y[n:], t), A, b).qdd])

    sol = solve_ivp(f, (0.0, t_end), np.concatenate([ex.q0, ex.qd0]), t_eval=np.linspace(0, t_end, n_points),
                    method="DOP853", rtol=1e-10, atol=1e-12)
    return sol.y[:n].T


def test_conflated_runs_differ_except_for_the_holonomic_example():
    """Both models integrated (horizons ≤ 1 s): the nonholonomic pairs separate, W 3.3.4 does not."""
    for name, ex in EXAMPLES.items():
        t_end = min(ex.t_end, 1.0)
        run_c = ex.conflated().simulate(ex.q0, ex.qd0, t_end, n_points=11)
        assert run_c.success
        diff = np.max(np.abs(_run_correct(ex, t_end, 11) - run_c.q))
        if name == "w-3.3.4":
            assert diff < 1e-8  # two integrations at rtol 1e-10 of the same equations
        else:
            assert diff > 1e-3, name


# ------------------------------------------------------------------------- refusals
def test_the_conflated_model_is_not_a_plant():
    ex = EXAMPLES["appell-particle"]
    cm = ex.conflated()
    assert isinstance(cm, ConflatedModel) and "WRONG" in repr(cm)
    with pytest.raises(ParameterError, match="conflated_model"):
        check_not_conflated(cm, ex.constraint)
    with pytest.raises(ParameterError, match="Plant"):
        VakonomicModel(cm, ex.constraint)


def test_the_footprint_of_a_hand_substituted_lagrangian_is_refused():
    """A user who writes Appell's T+ = ẋ² + ẏ² by hand (W 3.3.8) and builds a plant from it is
    refused by the model builders; the correct T passes; a holonomic substitution (W 3.3.4) passes."""
    x, y, z, xd, yd, zd = sp.symbols("x y z x_dot y_dot z_dot", real=True)
    con = Nonholonomic(zd**2 - xd**2 - yd**2, [x, y, z], [xd, yd, zd])
    wrong = LagrangianPlant.from_energies([x, y, z], xd**2 + yd**2, 9.81 * z, qd=[xd, yd, zd])
    right = LagrangianPlant.from_energies([x, y, z], (xd**2 + yd**2 + zd**2) / 2, 9.81 * z, qd=[xd, yd, zd])
    assert "`z`" in conflation_footprint(wrong, con)
    with pytest.raises(ParameterError, match="looks conflated.*`z`.*W 3.3.1"):
        check_not_conflated(wrong, con)
    with pytest.raises(ParameterError, match="looks conflated"):
        ServoModel(wrong, con, [0.0, 0.0, 1.0])
    check_not_conflated(wrong, con, allow_massless=True)
    check_not_conflated(right, con)
    holo = LagrangianPlant.from_energies([x, y, z], (xd**2 + (1 + z**2) * zd**2) / 2, z**2 / 2, qd=[xd, yd, zd])
    check_not_conflated(holo, Holonomic(y - z**2 / 2, [x, y, z]))


def test_conflated_model_refuses_meaningless_input():
    x, xd = sp.symbols("x x_dot")
    con = Nonholonomic(xd - x, [x], [xd])
    with pytest.raises(ParameterError, match="changes neither"):
        conflated_model([x], xd**2 / 2, 0, {sp.Symbol("w"): 0}, con, qd=[xd])
    with pytest.raises(ParameterError, match="fraction"):
        conflated_model([x], xd**2 / 2, 0, {xd: x}, con, qd=[xd], fraction=1.5)
