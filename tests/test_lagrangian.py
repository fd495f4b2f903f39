"""LagrangianPlant against hand-derived equations of motion and sympy.physics.mechanics."""

from __future__ import annotations

import functools

import numpy as np
import pytest
import sympy as sp
import sympy.physics.mechanics as me
from hypothesis import given, settings
from hypothesis import strategies as st

import robustrack.plants.lagrangian as lagrangian_module
from robustrack.errors import ParameterError
from robustrack.plants import LagrangianPlant

t = me.dynamicsymbols._t
finite = st.floats(-3.0, 3.0)


# -- hand-derived closed forms ------------------------------------------------


@functools.lru_cache(maxsize=None)
def _simple_pendulum():
    th = me.dynamicsymbols("theta")
    m, l, g = sp.symbols("m l g", positive=True)
    T = m * l**2 * th.diff(t) ** 2 / 2
    V = -m * g * l * sp.cos(th)
    return LagrangianPlant.from_energies([th], T, V, params={m: 2.0, l: 0.5, g: 9.81})


def simple_pendulum(**values):
    return _simple_pendulum().replace(**values)


@settings(max_examples=25, deadline=None)
@given(finite, finite)
def test_simple_pendulum(theta, omega):
    plant = simple_pendulum()
    # m l² θ̈ = −m g l sin θ
    np.testing.assert_allclose(plant.mass_matrix([theta]), [[2.0 * 0.25]], rtol=1e-15)
    expected = -2.0 * 9.81 * 0.5 * np.sin(theta)
    np.testing.assert_allclose(plant.given_force([theta], [omega]), [expected], rtol=1e-14, atol=1e-15)
    assert plant.coordinates == ("theta",)


def spring_mass_chain(**values):
    """Wall –k1– m1 –k2– m2 (derived afresh on every call)."""
    return _spring_mass_chain(tuple(sorted(values.items())))


@functools.lru_cache(maxsize=None)
def _spring_mass_chain(values):
    """Wall –k1– m1 –k2– m2, with a damper c on m2; plain Symbols with explicit qd."""
    x1, x2, v1, v2 = sp.symbols("x1 x2 v1 v2")
    m1, m2, k1, k2, c = sp.symbols("m1 m2 k1 k2 c")
    T = (m1 * v1**2 + m2 * v2**2) / 2
    V = k1 * x1**2 / 2 + k2 * (x2 - x1) ** 2 / 2
    params = {"m1": 1.0, "m2": 2.0, "k1": 10.0, "k2": 12.0, "c": 0.3, **dict(values)}
    return LagrangianPlant.from_energies([x1, x2], T, V, forces=[0, -c * v2], params=params, qd=[v1, v2])


@settings(max_examples=25, deadline=None)
@given(st.lists(finite, min_size=4, max_size=4))
def test_spring_mass_chain(state):
    x, v = np.array(state[:2]), np.array(state[2:])
    plant = spring_mass_chain()
    K = np.array([[10.0 + 12.0, -12.0], [-12.0, 12.0]])
    np.testing.assert_allclose(plant.mass_matrix(x), np.diag([1.0, 2.0]), rtol=1e-15)
    np.testing.assert_allclose(plant.given_force(x, v), -K @ x - np.array([0.0, 0.3 * v[1]]), atol=1e-12)


@functools.lru_cache(maxsize=None)
def oscillating_support_pendulum():
    """Pivot at y = a cos(Ω t)."""
    th = me.dynamicsymbols("theta")
    m, l, g, a, W = sp.symbols("m l g a Omega")
    x = l * sp.sin(th)
    y = a * sp.cos(W * t) - l * sp.cos(th)
    T = m * (x.diff(t) ** 2 + y.diff(t) ** 2) / 2
    V = m * g * y
    vals = {"m": 1.5, "l": 0.8, "g": 9.81, "a": 0.1, "Omega": 20.0}
    return LagrangianPlant.from_energies([th], T, V, params=vals)


@settings(max_examples=25, deadline=None)
@given(finite, finite, st.floats(0.0, 10.0))
def test_rheonomic_pendulum_on_oscillating_support(theta, omega, time):
    """m l² θ̈ = −m l (g + ÿ_s) sin θ with ÿ_s = −a Ω² cos Ω t.

    The ÿ_s term comes only from −∂²T/∂q̇∂t, the explicit time dependence of T.
    """
    plant = oscillating_support_pendulum()
    ydd = -0.1 * 20.0**2 * np.cos(20.0 * time)
    np.testing.assert_allclose(plant.mass_matrix([theta], time), [[1.5 * 0.64]], rtol=1e-14)
    expected = -1.5 * 0.8 * (9.81 + ydd) * np.sin(theta)
    Q = plant.given_force([theta], [omega], time)
    np.testing.assert_allclose(Q, [expected], rtol=1e-12, atol=1e-12)


@functools.lru_cache(maxsize=None)
def rotating_frame_particle():
    x, y = me.dynamicsymbols("x y")
    m, w = sp.symbols("m omega")
    T = m * ((x.diff(t) - w * y) ** 2 + (y.diff(t) + w * x) ** 2) / 2
    return LagrangianPlant.from_energies([x, y], T, 0, params={"m": 2.0, "omega": 0.7})


@settings(max_examples=25, deadline=None)
@given(st.lists(finite, min_size=4, max_size=4))
def test_rotating_frame_coriolis_terms(state):
    """Particle in a frame rotating at ω, T linear + quadratic in q̇ (gyroscopic):
    m ẍ = 2 m ω ẏ + m ω² x,  m ÿ = −2 m ω ẋ + m ω² y."""
    plant = rotating_frame_particle()
    (px, py), (vx, vy) = state[:2], state[2:]
    expected = 2.0 * np.array([2 * 0.7 * vy + 0.7**2 * px, -2 * 0.7 * vx + 0.7**2 * py])
    np.testing.assert_allclose(plant.mass_matrix([px, py]), 2.0 * np.eye(2), rtol=1e-15)
    np.testing.assert_allclose(plant.given_force([px, py], [vx, vy]), expected, rtol=1e-12, atol=1e-12)


def test_time_dependent_force_broadcasts_over_time_axis():
    x = me.dynamicsymbols("x")
    m, F0, W = sp.symbols("m F0 Omega")
    plant = LagrangianPlant.from_energies(
        [x], m * x.diff(t) ** 2 / 2, 0, forces=[F0 * sp.sin(W * t)],
        params={"m": 1.0, "F0": 3.0, "Omega": 2.0},
    )
    times = np.linspace(0.0, 1.0, 7)
    Q = plant.given_force(np.zeros(1), np.zeros(1), times)
    assert Q.shape == (7, 1)
    np.testing.assert_allclose(Q[:, 0], 3.0 * np.sin(2.0 * times), rtol=1e-14)


def test_singular_mass_matrix_is_allowed():
    x, y = me.dynamicsymbols("x y")
    m, k = sp.symbols("m k")
    T, V = m * x.diff(t) ** 2 / 2, k * (x - y) ** 2 / 2  # y carries no mass
    plant = LagrangianPlant.from_energies([x, y], T, V, params={"m": 1.0, "k": 2.0})
    np.testing.assert_array_equal(plant.mass_matrix([0.3, 0.1]), [[1.0, 0.0], [0.0, 0.0]])
    np.testing.assert_allclose(plant.given_force([0.3, 0.1], [0.0, 0.0]), [-0.4, 0.4])


# -- batch shapes ---------------------------------------------------------------


def test_constant_entries_broadcast_to_batch_shape():
    plant = spring_mass_chain()
    q = np.zeros((5, 4, 2))
    assert plant.mass_matrix(q).shape == (5, 4, 2, 2)
    assert plant.given_force(q, q).shape == (5, 4, 2)


def test_parameter_arrays_broadcast_against_batch_equal_loop():
    rng = np.random.default_rng(7)
    S, T = 3, 4
    m = rng.uniform(0.5, 2.0, size=(S, 1))
    g = rng.uniform(9.0, 10.0, size=(S, 1))
    q, qd = rng.normal(size=(T, 1)), rng.normal(size=(T, 1))
    batch = simple_pendulum().replace(m=m, g=g)
    M, Q = batch.mass_matrix(q), batch.given_force(q, qd)
    assert M.shape == (S, T, 1, 1) and Q.shape == (S, T, 1)
    for s in range(S):
        one = simple_pendulum(m=float(m[s, 0]), g=float(g[s, 0]))
        for k in range(T):
            np.testing.assert_allclose(M[s, k], one.mass_matrix(q[k]), rtol=1e-15)
            np.testing.assert_allclose(Q[s, k], one.given_force(q[k], qd[k]), rtol=1e-14)


# -- parameters -----------------------------------------------------------------


def test_replace_does_not_rederive_and_equals_fresh_plant(monkeypatch):
    plant = spring_mass_chain()

    def forbidden(*args, **kwargs):
        raise AssertionError("replace must not derive or lambdify again")

    monkeypatch.setattr(lagrangian_module, "_lagrange", forbidden)
    monkeypatch.setattr(lagrangian_module.sp, "lambdify", forbidden)
    perturbed = plant.replace(m1=1.1, k2=13.0)
    monkeypatch.undo()

    assert perturbed.model is plant.model
    assert perturbed.params["m1"] == 1.1 and plant.params["m1"] == 1.0
    fresh = spring_mass_chain(m1=1.1, k2=13.0)
    q, qd = np.array([0.2, -0.4]), np.array([1.0, 0.5])
    np.testing.assert_array_equal(perturbed.mass_matrix(q), fresh.mass_matrix(q))
    np.testing.assert_array_equal(perturbed.given_force(q, qd), fresh.given_force(q, qd))
    assert not np.array_equal(perturbed.given_force(q, qd), plant.given_force(q, qd))


def test_missing_and_unknown_parameters():
    th = me.dynamicsymbols("theta")
    m, l, g = sp.symbols("m l g")
    T, V = m * l**2 * th.diff(t) ** 2 / 2, -m * g * l * sp.cos(th)
    with pytest.raises(ParameterError, match=r"Missing value.*\['g'\]"):
        LagrangianPlant.from_energies([th], T, V, params={m: 1.0, l: 1.0})
    with pytest.raises(ParameterError, match=r"Unknown parameter.*\['mass'\].*\['g', 'l', 'm'\]"):
        LagrangianPlant.from_energies([th], T, V, params={"m": 1.0, "l": 1.0, "g": 1.0, "mass": 1.0})
    plant = LagrangianPlant.from_energies([th], T, V, params={"m": 1.0, "l": 1.0, "g": 1.0})
    with pytest.raises(ParameterError, match=r"Unknown parameter.*\['L'\].*\['g', 'l', 'm'\]"):
        plant.replace(L=2.0)
    with pytest.raises(ParameterError, match=r"`m` must be finite|components of `m`"):
        plant.replace(m=np.nan)


def test_ill_formed_descriptions_are_refused():
    x = me.dynamicsymbols("x")
    f = me.dynamicsymbols("f")
    m = sp.Symbol("m")
    with pytest.raises(ParameterError, match="quadratic in the velocities"):
        LagrangianPlant.from_energies([x], m * x.diff(t) ** 4, 0, params={"m": 1.0})
    with pytest.raises(ParameterError, match="derivatives other than the velocities"):
        LagrangianPlant.from_energies([x], m * x.diff(t) ** 2 / 2, 0, forces=[x.diff(t, 2)], params={m: 1})
    with pytest.raises(ParameterError, match=r"functions \['f\(t\)'\] that are not coordinates"):
        LagrangianPlant.from_energies([x], m * x.diff(t) ** 2 / 2, f * x, params={"m": 1.0})
    with pytest.raises(ParameterError, match="one expression per coordinate"):
        LagrangianPlant.from_energies([x], m * x.diff(t) ** 2 / 2, 0, forces=[0, 0], params={"m": 1.0})
    with pytest.raises(ParameterError, match="`qd` must list one velocity"):
        LagrangianPlant.from_energies([sp.Symbol("y")], 0, 0)
    plant = LagrangianPlant.from_energies([x], m * x.diff(t) ** 2 / 2, 0, params={"m": 1.0})
    with pytest.raises(ParameterError, match=r"`q` must have 1 entries.*shape \(2,\)"):
        plant.mass_matrix([0.0, 0.0])


def test_symbolic_matrices_in_user_symbols():
    th = me.dynamicsymbols("theta")
    m, l, g = sp.symbols("m l g", positive=True)
    plant = simple_pendulum()
    assert sp.simplify(plant.symbolic_mass_matrix[0, 0] - m * l**2) == 0
    assert sp.simplify(plant.symbolic_given_force[0] + m * g * l * sp.sin(th)) == 0


# -- sympy.physics.mechanics -------------------------------------------------------

q1, q2 = me.dynamicsymbols("q1 q2")
u1, u2 = me.dynamicsymbols("u1 u2")
m1, m2, l1, l2, g = sp.symbols("m1 m2 l1 l2 g")
VALUES = {m1: 1.0, m2: 2.0, l1: 1.0, l2: 1.5, g: 9.81}


def double_pendulum_points(frame, origin, speeds=None):
    """Bobs of a planar double pendulum (angles from the downward vertical)."""
    P1 = origin.locatenew("P1", l1 * (sp.sin(q1) * frame.x - sp.cos(q1) * frame.y))
    P2 = P1.locatenew("P2", l2 * (sp.sin(q2) * frame.x - sp.cos(q2) * frame.y))
    sub = speeds or {}
    P1.set_vel(frame, P1.pos_from(origin).dt(frame).subs(sub))
    P2.set_vel(frame, P2.pos_from(origin).dt(frame).subs(sub))
    return me.Particle("b1", P1, m1), me.Particle("b2", P2, m2)


@functools.lru_cache(maxsize=None)
def double_pendulum_from_energies():
    x1, y1 = l1 * sp.sin(q1), -l1 * sp.cos(q1)
    x2, y2 = x1 + l2 * sp.sin(q2), y1 - l2 * sp.cos(q2)
    T = (m1 * (x1.diff(t) ** 2 + y1.diff(t) ** 2) + m2 * (x2.diff(t) ** 2 + y2.diff(t) ** 2)) / 2
    V = g * (m1 * y1 + m2 * y2)
    return LagrangianPlant.from_energies([q1, q2], T, V, params=VALUES)


def lagranges_method():
    N, O = me.ReferenceFrame("N"), me.Point("O")
    O.set_vel(N, 0)
    b1, b2 = double_pendulum_points(N, O)
    loads = [(b1.point, -m1 * g * N.y), (b2.point, -m2 * g * N.y)]
    return me.LagrangesMethod(me.Lagrangian(N, b1, b2), [q1, q2], forcelist=loads, frame=N)


def kanes_method(kd_eqs=(q1.diff(t) - u1, q2.diff(t) - u2)):
    N, O = me.ReferenceFrame("N"), me.Point("O")
    O.set_vel(N, 0)
    b1, b2 = double_pendulum_points(N, O, {q1.diff(t): u1, q2.diff(t): u2})
    km = me.KanesMethod(N, [q1, q2], [u1, u2], kd_eqs=list(kd_eqs))
    km.kanes_equations([b1, b2], [(b1.point, -m1 * g * N.y), (b2.point, -m2 * g * N.y)])
    return km


def mechanics_system():
    system = me.System()
    N, O = system.frame, system.fixed_point
    b1, b2 = double_pendulum_points(N, O, {q1.diff(t): u1, q2.diff(t): u2})
    system.add_coordinates(q1, q2)
    system.add_speeds(u1, u2)
    system.add_kdes(q1.diff(t) - u1, q2.diff(t) - u2)
    system.add_bodies(b1, b2)
    system.apply_uniform_gravity(-g * N.y)
    return system


@pytest.mark.parametrize("build", [lagranges_method, kanes_method, mechanics_system])
def test_from_sympy_mechanics_agrees_with_from_energies(build):
    plant = LagrangianPlant.from_sympy_mechanics(build(), VALUES)
    truth = double_pendulum_from_energies()
    assert plant.coordinates == truth.coordinates == ("q1", "q2")
    rng = np.random.default_rng(11)
    q, qd = rng.uniform(-3, 3, size=(20, 2)), rng.uniform(-3, 3, size=(20, 2))
    np.testing.assert_allclose(plant.mass_matrix(q), truth.mass_matrix(q), rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(plant.given_force(q, qd), truth.given_force(q, qd), rtol=1e-12, atol=1e-12)
    perturbed = plant.replace(m2=2.5)
    np.testing.assert_allclose(
        perturbed.given_force(q, qd), truth.replace(m2=2.5).given_force(q, qd), rtol=1e-12, atol=1e-12
    )


def test_from_sympy_mechanics_refusals():
    with pytest.raises(ParameterError, match=r"u_i = q̇_i"):
        LagrangianPlant.from_sympy_mechanics(kanes_method((q1.diff(t) - 2 * u1, q2.diff(t) - u2)), VALUES)
    N, O = me.ReferenceFrame("N"), me.Point("O")
    O.set_vel(N, 0)
    b1, b2 = double_pendulum_points(N, O)
    constrained = me.LagrangesMethod(me.Lagrangian(N, b1, b2), [q1, q2], hol_coneqs=[q1 - q2])
    with pytest.raises(ParameterError, match="constraint equations"):
        LagrangianPlant.from_sympy_mechanics(constrained, VALUES)
    with pytest.raises(ParameterError, match="LagrangesMethod, KanesMethod or System"):
        LagrangianPlant.from_sympy_mechanics("not a model", VALUES)
    with pytest.raises(ParameterError, match=r"Missing value.*\['g'\]"):
        LagrangianPlant.from_sympy_mechanics(lagranges_method(), {m1: 1.0, m2: 2.0, l1: 1.0, l2: 1.5})
