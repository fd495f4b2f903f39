"""NLinkPendulum against independent truths.

* a second derivation: Lagrange's equations from T, V written with the Cartesian
  bob positions, done by sympy (``LagrangianPlant.from_energies``), N = 1..4;
* docs/theory/triple-pendulum.md / W (2.3.2)–(2.3.3): the explicit N = 3 formulas typed in by hand;
* invariants: M symmetric positive definite, energy conserved along solutions,
  link lengths preserved by ``positions``;
* batch evaluation (sampled parameters × states) equals a Python loop.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.integrate import solve_ivp
from sympy.physics.mechanics import dynamicsymbols

from robustrack.errors import ParameterError
from robustrack.plants import PLANTS, LagrangianPlant, NLinkPendulum, Plant, get_plant, triple_pendulum

angles = st.floats(-np.pi, np.pi)
rates = st.floats(-5.0, 5.0)
masses = st.floats(0.1, 5.0)
lengths = st.floats(0.1, 3.0)


@functools.lru_cache(maxsize=None)
def cartesian_lagrangian(N: int) -> LagrangianPlant:
    """Lagrange's equations from T = ½ Σ m_k |ṙ_k|², V = Σ m_k g y_k (sympy)."""
    t = dynamicsymbols._t
    th = dynamicsymbols(f"theta1:{N + 1}")
    m = sp.symbols(f"m1:{N + 1}")
    L = sp.symbols(f"L1:{N + 1}")
    g = sp.Symbol("g")
    x = y = sp.Integer(0)
    T = V = sp.Integer(0)
    for k in range(N):
        x += L[k] * sp.sin(th[k])
        y -= L[k] * sp.cos(th[k])
        T += m[k] * (x.diff(t) ** 2 + y.diff(t) ** 2) / 2
        V += m[k] * g * y
    values = {**{s.name: 1.0 for s in m + L}, "g": 9.81}
    return LagrangianPlant.from_energies(th, T, V, params=values)


def as_lagrangian(plant: LagrangianPlant, m, L, g) -> LagrangianPlant:
    named = {f"m{k + 1}": v for k, v in enumerate(m)} | {f"L{k + 1}": v for k, v in enumerate(L)}
    return plant.replace(g=g, **named)


@st.composite
def pendulum_case(draw):
    N = draw(st.integers(1, 4))
    vec = lambda s: np.array(draw(st.lists(s, min_size=N, max_size=N)))  # noqa: E731
    return N, vec(masses), vec(lengths), draw(st.floats(0.0, 20.0)), vec(angles), vec(rates)


@settings(max_examples=60, deadline=None)
@given(pendulum_case())
def test_matches_cartesian_lagrangian_derivation(case):
    N, m, L, g, q, qd = case
    plant = NLinkPendulum(m=m, L=L, g=g)
    truth = as_lagrangian(cartesian_lagrangian(N), m, L, g)
    scale = m.sum() * L.sum() ** 2 * (1.0 + g + np.sum(qd**2))
    np.testing.assert_allclose(plant.mass_matrix(q), truth.mass_matrix(q), atol=1e-12 * scale)
    np.testing.assert_allclose(plant.given_force(q, qd), truth.given_force(q, qd), atol=1e-12 * scale)


def theory_section7(m, L, g, q, qd):
    """docs/theory/triple-pendulum.md (W (2.3.2)–(2.3.3)), typed in entry by entry."""
    m1, m2, m3 = m
    L1, L2, L3 = L
    t1, t2, t3 = q
    w1, w2, w3 = qd
    c, s = np.cos, np.sin
    M = np.array(
        [
            [(m1 + m2 + m3) * L1**2, (m2 + m3) * L1 * L2 * c(t1 - t2), m3 * L1 * L3 * c(t1 - t3)],
            [(m2 + m3) * L1 * L2 * c(t1 - t2), (m2 + m3) * L2**2, m3 * L2 * L3 * c(t2 - t3)],
            [m3 * L1 * L3 * c(t1 - t3), m3 * L2 * L3 * c(t2 - t3), m3 * L3**2],
        ]
    )
    Q = np.array(
        [
            -(m2 + m3) * L1 * L2 * w2**2 * s(t1 - t2)
            - m3 * L1 * L3 * w3**2 * s(t1 - t3)
            - (m1 + m2 + m3) * g * L1 * s(t1),
            (m2 + m3) * L1 * L2 * w1**2 * s(t1 - t2)
            - m3 * L2 * L3 * w3**2 * s(t2 - t3)
            - (m2 + m3) * g * L2 * s(t2),
            m3 * L1 * L3 * w1**2 * s(t1 - t3) + m3 * L2 * L3 * w2**2 * s(t2 - t3) - m3 * g * L3 * s(t3),
        ]
    )
    return M, Q


@settings(max_examples=40, deadline=None)
@given(
    st.lists(masses, min_size=3, max_size=3),
    st.lists(lengths, min_size=3, max_size=3),
    st.lists(angles, min_size=3, max_size=3),
    st.lists(rates, min_size=3, max_size=3),
)
def test_triple_pendulum_equals_theory_section7(m, L, q, qd):
    plant = NLinkPendulum(m=m, L=L, g=9.81)
    M, Q = theory_section7(m, L, 9.81, q, qd)
    np.testing.assert_allclose(plant.mass_matrix(q), M, rtol=1e-13, atol=1e-12)
    np.testing.assert_allclose(plant.given_force(q, qd), Q, rtol=1e-13, atol=1e-11)


def test_triple_pendulum_defaults_are_W_2_3():
    plant = triple_pendulum()
    assert plant.m.tolist() == [1.0, 2.0, 3.0]
    assert plant.L.tolist() == [1.0, 1.5, 2.0]
    assert plant.g == 9.81
    assert plant.coordinates == ("theta1", "theta2", "theta3")
    assert isinstance(plant, Plant) and plant.n == 3


@settings(max_examples=40, deadline=None)
@given(pendulum_case())
def test_mass_matrix_symmetric_positive_definite(case):
    N, m, L, g, q, _ = case
    M = NLinkPendulum(m=m, L=L, g=g).mass_matrix(q)
    np.testing.assert_array_equal(M, M.T)
    assert np.all(np.linalg.eigvalsh(M) > 0)


def test_batch_parameters_times_states_equals_loop():
    rng = np.random.default_rng(3)
    S, T, N = 4, 5, 3
    m = rng.uniform(0.5, 3.0, size=(S, 1, N))
    L = rng.uniform(0.5, 2.0, size=(N,))
    g = rng.uniform(9.0, 10.0, size=(S, 1))
    q = rng.normal(size=(T, N))
    qd = rng.normal(size=(T, N))
    plant = NLinkPendulum(m=m, L=L, g=g)
    M, Q = plant.mass_matrix(q), plant.given_force(q, qd)
    KE, V = plant.kinetic_energy(q, qd), plant.potential_energy(q)
    assert M.shape == (S, T, N, N) and Q.shape == (S, T, N) and KE.shape == V.shape == (S, T)
    assert plant.positions(q).shape == (T, N, 2)  # positions depend on L only
    for s in range(S):
        one = NLinkPendulum(m=m[s, 0], L=L, g=float(g[s, 0]))
        for k in range(T):
            np.testing.assert_allclose(M[s, k], one.mass_matrix(q[k]), rtol=1e-14)
            np.testing.assert_allclose(Q[s, k], one.given_force(q[k], qd[k]), rtol=1e-13, atol=1e-13)
            np.testing.assert_allclose(KE[s, k], one.kinetic_energy(q[k], qd[k]), rtol=1e-13)
            np.testing.assert_allclose(V[s, k], one.potential_energy(q[k]), rtol=1e-13)


def test_own_batches_skip_the_runs_batch_contract_but_a_subclass_is_checked():
    """The two tests above are NLinkPendulum's batch contract, row by row: a run's check (every campaign sample's)
    skips it; a user's subclass (its own code) is checked as any plant."""
    from robustrack.plants import motion

    class Mine(NLinkPendulum):
        pass

    calls = []

    class Counting(NLinkPendulum):
        def mass_matrix(self, q, t=0.0):
            calls.append(np.shape(q))
            return super().mass_matrix(q, t)

    assert motion._own_batches(triple_pendulum()) and not motion._own_batches(Mine(m=[1.0], L=[1.0]))
    motion.check_batch_contract(Counting(m=[1.0, 2.0], L=[1.0, 0.5]), None, np.zeros(2), np.zeros(2), 0.0)
    assert (motion.BATCH, 2) in calls  # the subclass's batch was called


def test_batch_samples_paired_with_states():
    rng = np.random.default_rng(4)
    S, N = 6, 2
    m = rng.uniform(0.5, 3.0, size=(S, N))
    L = rng.uniform(0.5, 2.0, size=(S, N))
    q, qd = rng.normal(size=(S, N)), rng.normal(size=(S, N))
    plant = NLinkPendulum(m=m, L=L)
    Q = plant.given_force(q, qd)
    assert Q.shape == (S, N)
    for s in range(S):
        np.testing.assert_allclose(Q[s], NLinkPendulum(m=m[s], L=L[s]).given_force(q[s], qd[s]), rtol=1e-13)


def test_energy_conserved_along_solution():
    plant = triple_pendulum()
    n = plant.n

    def rhs(t, y):
        return np.concatenate([y[n:], plant.unconstrained_acceleration(y[:n], y[n:])])

    y0 = np.array([1.0, 0.5, -0.3, 0.001, 0.2, 0.0])
    sol = solve_ivp(rhs, (0.0, 2.0), y0, method="DOP853", rtol=1e-10, atol=1e-12, dense_output=True)
    assert sol.success
    y = sol.sol(np.linspace(0.0, 2.0, 201)).T
    E = plant.kinetic_energy(y[:, :n], y[:, n:]) + plant.potential_energy(y[:, :n])
    assert np.ptp(y[:, 0]) > 0.5  # it really swings
    assert np.max(np.abs(E - E[0])) < 1e-8  # J, with |E| ≈ 150 J


@settings(max_examples=30, deadline=None)
@given(pendulum_case())
def test_cartesian_geometry_and_energies(case):
    N, m, L, g, q, qd = case
    plant = NLinkPendulum(m=m, L=L, g=g)
    r = plant.positions(q)
    links = np.diff(np.concatenate([np.zeros((1, 2)), r]), axis=0)
    np.testing.assert_allclose(np.linalg.norm(links, axis=-1), L, rtol=1e-12)
    E = plant.body_energies(q, qd)
    np.testing.assert_allclose(
        E.sum(), plant.kinetic_energy(q, qd) + plant.potential_energy(q), rtol=1e-10, atol=1e-9
    )
    # W (2.3.5): E1 = ½ m1 L1² θ̇1² − m1 g L1 cos θ1
    E1 = 0.5 * m[0] * L[0] ** 2 * qd[0] ** 2 - m[0] * g * L[0] * np.cos(q[0])
    np.testing.assert_allclose(E[0], E1, rtol=1e-12, atol=1e-12)


def test_velocities_are_time_derivative_of_positions():
    plant = triple_pendulum()
    q, qd, h = np.array([0.3, -1.0, 2.0]), np.array([0.7, -0.2, 1.1]), 1e-6
    fd = (plant.positions(q + h * qd) - plant.positions(q - h * qd)) / (2 * h)
    np.testing.assert_allclose(plant.velocities(q, qd), fd, atol=1e-8)


def test_replace_whole_and_per_body():
    plant = triple_pendulum()
    assert plant.replace(m=[2.0, 2.0, 2.0]).m.tolist() == [2.0, 2.0, 2.0]
    assert plant.replace(m2=2.5, L3=1.0).m.tolist() == [1.0, 2.5, 3.0]
    assert plant.replace(m2=2.5, L3=1.0).L.tolist() == [1.0, 1.5, 1.0]
    sampled = plant.replace(m3=np.array([3.1, 3.2]))
    assert sampled.m.shape == (2, 3) and sampled.m[:, 2].tolist() == [3.1, 3.2]
    assert plant.m.tolist() == [1.0, 2.0, 3.0]  # the original is untouched
    with pytest.raises(ValueError):
        plant.m[0] = 5.0  # parameters are read-only


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(m=[1.0, -2.0, 3.0], L=[1.0, 1.0, 1.0]), r"`m` must be > 0"),
        (dict(m=[1.0, 2.0, 3.0], L=[1.0, 0.0, 1.0]), r"`L` must be > 0"),
        (dict(m=[1.0, 2.0, 3.0], L=[1.0, 1.0]), r"same number of links.*m with 3.*L with 2"),
        (dict(m=[1.0, np.inf], L=[1.0, 1.0]), r"`m` must be finite|`m` must be finite|components of `m`"),
        (dict(m=[1.0], L=[1.0], g=np.nan), r"`g`"),
        (dict(m=1.0, L=1.0), r"`m` must have at least 1 dimension"),
        (dict(m=np.ones((2, 3)), L=np.ones((4, 3))), r"must broadcast"),
    ],
)
def test_validation_errors(kwargs, match):
    with pytest.raises(ParameterError, match=match):
        NLinkPendulum(**kwargs)


def test_replace_and_state_errors():
    plant = triple_pendulum()
    with pytest.raises(ParameterError, match=r"no parameter `m4`.*m1…m3"):
        plant.replace(m4=1.0)
    with pytest.raises(ParameterError, match="not both"):
        plant.replace(m=[1.0, 1.0, 1.0], m1=2.0)
    with pytest.raises(ParameterError, match=r"`m` must be > 0"):
        plant.replace(m1=-1.0)
    with pytest.raises(ParameterError, match=r"`q` must have 3 coordinates.*shape \(2,\)"):
        plant.mass_matrix([0.0, 0.0])


def test_registry():
    assert get_plant("triple-pendulum").m.tolist() == [1.0, 2.0, 3.0]
    assert get_plant("n-link-pendulum", m=[1.0, 1.0], L=[1.0, 1.0]).n == 2
    assert get_plant(NLinkPendulum, m=[1.0], L=[1.0]).n == 1
    assert {"n-link-pendulum", "triple-pendulum"} <= set(PLANTS)
    with pytest.raises(ParameterError, match=r"Unknown plant `pendulum`.*triple-pendulum"):
        get_plant("pendulum")
    with pytest.raises(ParameterError, match="plant name"):
        get_plant(42)
