"""Each catalog model is written once (its sympy form); its numpy evaluation is lambdified from it.

The independent truth here is the seeds' closed forms of M, Q, A, b and the raw rows, typed in numpy
below from the papers (KU, K, W 2.3 and 4.4, S): the same formulas that were the hand-written numpy
methods until the models got one source (robustrack/plants/symbolic_model.py). Each generated evaluation
is compared with them at random states: one state, a batch, and sampled parameters (arrays with sample
axes, the Monte Carlo shape), including the terms the defaults zero out (μ ≠ 0, a body torque).

Tolerance: 1e-12 relative (the largest deviation over the entries, divided by the largest entry of the
closed form), the reasoning of tests/test_symbolic_forms.py: both sides are double-precision evaluations
of one closed form written in two ways (sympy's expanded and cse'd order against the paper's), so they
differ by a few ulps (~1e-16) of the largest intermediate term; a wrong term, sign or factor shows at
O(1) (sympy's own power expansion combined with cse once gave a wrong Duffing b here, off by 0.78).
"""

from __future__ import annotations

import dataclasses
import math
import pickle
import zlib

import numpy as np
import pytest

from robustrack.plants import NLinkPendulum, examples as E, pendulum_energy_constraint

RTOL = 1e-12  # see the module docstring


def _rows(*rows):
    """Stack rows of broadcastable entries into (..., m, n)."""
    batch = np.broadcast_shapes(*(np.shape(e) for row in rows for e in row))
    return np.stack([np.stack([np.broadcast_to(e, batch) for e in row], -1) for row in rows], -2)


def _diag(q, *entries):
    """diag(entries) with the batch axes of q and of the entries."""
    batch = np.broadcast_shapes(q.shape[:-1], *(np.shape(e) for e in entries))
    M = np.zeros(batch + (len(entries),) * 2)
    for i, e in enumerate(entries):
        M[..., i, i] = e
    return M


def _E(u):
    """W (4.4.21)."""
    u0, u1, u2, u3 = (u[..., i] for i in range(4))
    return _rows([-u1, u0, u3, -u2], [-u2, -u3, u0, u1], [-u3, u2, -u1, u0])


# name → (M(p, q), Q(p, q, q̇)) of the plant p: the seeds' closed forms
PLANT_TRUTH = {
    "free-particle": (lambda p, q: _diag(q, p.m, p.m, p.m), lambda p, q, v: np.zeros(np.shape(p.m) + (3,)) + 0 * q),
    "cartesian-pendulum": (lambda p, q: _diag(q, p.m, p.m),  # KU (33), y down
                           lambda p, q, v: np.stack(np.broadcast_arrays(0 * q[..., 0], p.m * p.g + 0 * q[..., 1]), -1)),
    "coupled-duffing": (lambda p, q: _diag(q, p.m1, p.m2), lambda p, q, v: np.stack(np.broadcast_arrays(  # KU (35a–b)
        -(p.k1 * (q[..., 0] - q[..., 1]) + p.c1 * (v[..., 0] - v[..., 1]) + p.kbar1 * (q[..., 0] - q[..., 1]) ** 3),
        -p.k2 * q[..., 1] - p.c2 * v[..., 1] - p.kbar2 * q[..., 1] ** 3
        + p.k1 * (q[..., 0] - q[..., 1]) + p.c1 * (v[..., 0] - v[..., 1]) + p.kbar1 * (q[..., 0] - q[..., 1]) ** 3), -1)),
    "chaplygin-sleigh": (lambda p, q: _diag(q, p.m, p.m, p.inertia),  # K
                         lambda p, q, v: np.stack(np.broadcast_arrays(p.m * p.g, 0 * q[..., 1], 0 * q[..., 2]), -1)),
    "rolling-wheel": (lambda p, q: _diag(q, p.m * p.R**2 + p.I_c, 0 * p.m),  # W (4.4.3)
                      lambda p, q, v: np.stack(np.broadcast_arrays(0 * q[..., 0], p.m * p.g + 0 * q[..., 1]), -1)),
    "two-mass-springs": (lambda p, q: _diag(q, p.m1, p.m2), lambda p, q, v: np.stack(np.broadcast_arrays(  # W (4.4.10)
        -p.k1 * q[..., 0] + p.k2 * (q[..., 1] - q[..., 0] - p.l10 - p.d),
        -p.k2 * (q[..., 1] - q[..., 0] - p.l10 - p.d)), -1)),
    "quaternion-rigid-body": (  # W (4.4.22)–(4.4.23): M = 4 Eᵀ J E, Q = −8 Ėᵀ J E u̇ + 2 Eᵀ Γ
        lambda p, q: 4.0 * np.einsum("...ki,...k,...kj->...ij", _E(q), p.J, _E(q)),
        lambda p, q, v: -8.0 * np.einsum("...ki,...k->...i", _E(v), p.J * np.einsum("...kj,...j->...k", _E(q), v))
        + 2.0 * np.einsum("...ki,...k->...i", _E(q), p.torque)),
    "two-ellipse-particles": (lambda p, q: _diag(q, p.m1, p.m1, p.m2, p.m2),
                              lambda p, q, v: np.zeros(np.shape(p.m1) + (4,)) + 0 * q),
    "speed-reducer": (lambda p, q: _diag(q, p.a, p.b, p.m),  # S (2.1)
                      lambda p, q, v: np.stack(np.broadcast_arrays(0 * q[..., 0], 0 * q[..., 1], -p.k * q[..., 2]), -1)),
}


def _pendulum_truth(p):
    """W (2.3.2)–(2.3.3): M_ij = μ_ij L_i L_j cos(θ_i − θ_j), Q_i = −Σ_j μ_ij L_i L_j θ̇_j² sin(θ_i − θ_j) − μ_i g L_i sin θ_i."""
    r = np.arange(p.n)
    mu = np.flip(np.cumsum(np.flip(p.m, -1), -1), -1)
    coupling = mu[..., np.maximum.outer(r, r)] * (p.L[..., :, None] * p.L[..., None, :])

    def M(q):
        return coupling * np.cos(q[..., :, None] - q[..., None, :])

    def Q(q, v):
        centripetal = np.sum(coupling * np.sin(q[..., :, None] - q[..., None, :]) * (v**2)[..., None, :], axis=-1)
        return -centripetal - np.asarray(p.g)[..., None] * mu * p.L * np.sin(q)

    return M, Q


# name → (constraint keywords, A, b, raw rows) of the seeds, as functions of (plant, keywords, q, q̇, t)
def _cartesian(p, kw, q, v, t):
    x, y, xd, yd, muL2 = q[..., 0], q[..., 1], v[..., 0], v[..., 1], kw["mu"] * kw["L"] ** 2  # KU (34)
    A = _rows([2 * x * (1 + muL2 * np.cos(x * x)), 2 * y])
    b = -2 * (xd * xd + yd * yd) - 2 * muL2 * xd * xd * (np.cos(x * x) - 2 * x * x * np.sin(x * x))
    return A, b[..., None], (x * x + y * y - kw["L"] ** 2 * (1 - kw["mu"] * np.sin(x * x)))[..., None]


def _duffing(p, kw, q, v, t):
    al, amp, om = kw["alpha"], kw["amplitude"], kw["omega"]  # KU (35c)
    one = np.ones(q.shape[:-1])
    sdd = amp * np.exp(-al * t) * ((al * al - om * om) * np.sin(om * t) - 2 * al * om * np.cos(om * t))
    return (_rows([one, -one]), (sdd + 0 * one)[..., None],
            (q[..., 0] - q[..., 1] - amp * np.exp(-al * t) * np.sin(om * t))[..., None])


def _ellipses(p, kw, q, v, t):
    eps, pp, c = (np.asarray(kw[k]) for k in ("eps", "p", "c"))  # W (4.4.27)–(4.4.30)
    x, y, xd, yd = q[..., 0::2], q[..., 1::2], v[..., 0::2], v[..., 1::2]
    r, h, z = np.hypot(x, y), x * yd - y * xd, 0 * x[..., 0]
    A = _rows([x[..., 0] / r[..., 0] - eps[0], y[..., 0] / r[..., 0], z, z],
              [z, z, x[..., 1] / r[..., 1] - eps[1], y[..., 1] / r[..., 1]],
              [-y[..., 0], x[..., 0], z, z], [z, z, -y[..., 1], x[..., 1]])
    return A, np.concatenate([-h * h / r**3, 0 * h], -1), np.concatenate([r - eps * x - pp, h - c], -1)


CONSTRAINT_TRUTH = {
    "free-particle": ({}, lambda p, kw, q, v, t: (  # KU (36)
        _rows([-q[..., 2], 1 + 0 * q[..., 2], 0 * q[..., 2]]), (v[..., 2] * v[..., 0])[..., None],
        (v[..., 1] - q[..., 2] * v[..., 0])[..., None])),
    "cartesian-pendulum": ({"L": 20.0, "mu": -0.1}, _cartesian),
    "coupled-duffing": ({"alpha": 0.4, "amplitude": 1.3, "omega": 2 * math.pi}, _duffing),
    "chaplygin-sleigh": ({}, lambda p, kw, q, v, t: (  # K
        _rows([np.sin(q[..., 2]), -np.cos(q[..., 2]), 0 * q[..., 2]]),
        (-v[..., 2] * (v[..., 0] * np.cos(q[..., 2]) + v[..., 1] * np.sin(q[..., 2])))[..., None],
        (v[..., 0] * np.sin(q[..., 2]) - v[..., 1] * np.cos(q[..., 2]))[..., None])),
    "rolling-wheel": ({"beta": 0.4}, lambda p, kw, q, v, t: (  # W (4.4.4)–(4.4.5)
        _rows([p.R * math.sin(kw["beta"]) + 0 * q[..., 0], -1 + 0 * q[..., 0]]), 0 * q[..., :1],
        (p.R * math.sin(kw["beta"]) * q[..., 0] - q[..., 1])[..., None])),
    "two-mass-springs": ({}, lambda p, kw, q, v, t: (  # W (4.4.12)–(4.4.13)
        _rows([p.k1 + p.k2 + 0 * q[..., 0], -p.k2 + 0 * q[..., 0]]), 0 * q[..., :1],
        ((p.k1 + p.k2) * q[..., 0] - p.k2 * q[..., 1] + p.k2 * (p.l10 + p.d))[..., None])),
    "quaternion-rigid-body": ({}, lambda p, kw, q, v, t: (  # W 4.4.4
        q[..., None, :], -np.sum(v * v, -1)[..., None], 0.5 * (np.sum(q * q, -1) - 1)[..., None])),
    "two-ellipse-particles": ({"eps": (0.2, 0.6), "p": (1.5, 0.5), "c": (0.7, -1.1)}, _ellipses),
    "speed-reducer": ({"r": 0.3}, lambda p, kw, q, v, t: (  # S (2.2d)
        _rows([q[..., 2], -kw["r"] + 0 * q[..., 2], 0 * q[..., 2]]), (-v[..., 2] * v[..., 0])[..., None],
        (q[..., 2] * v[..., 0] - kw["r"] * v[..., 1])[..., None])),
}


def _relative(a, ref) -> float:
    a, ref = np.asarray(a, float), np.asarray(ref, float)
    assert a.shape == ref.shape, (a.shape, ref.shape)
    scale = np.max(np.abs(ref)) if ref.size else 0.0
    return float(np.max(np.abs(a - ref)) / scale) if scale else (0.0 if not np.any(a) else np.inf)


def _plant(name):
    plant = E.EXAMPLE_PLANTS[name]()
    if name == "quaternion-rigid-body":
        plant = plant.replace(torque=(0.3, -0.2, 0.5))  # the term the default zeroes out
    if name == "two-mass-springs":
        plant = plant.replace(m1=0.4)
    return plant


def _sampled(plant, rng, shape):
    """Every parameter times a random factor of sample shape ``shape`` (vector parameters keep their last axis)."""
    kw = {}
    for f in dataclasses.fields(plant):
        v = np.asarray(getattr(plant, f.name), float)
        kw[f.name] = (v if v.any() else v + 0.5) * rng.uniform(0.7, 1.3, shape + v.shape)
    return plant.replace(**kw)


def _states(rng, n, batch=(64,)):
    q, v = rng.normal(size=(2,) + batch + (n,))
    return q, v, rng.uniform(0.0, 5.0, batch)


@pytest.mark.parametrize("name", sorted(PLANT_TRUTH))
def test_seed_plants_equal_the_seeds_closed_forms(name):
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    M_true, Q_true = PLANT_TRUTH[name]
    plant = _plant(name)
    q, v, t = _states(rng, plant.n)
    sampled = _sampled(plant, rng, (5, 1))  # 5 plants × 64 states
    worst = 0.0
    for p in (plant, sampled):
        worst = max(worst, _relative(p.mass_matrix(q, t), M_true(p, q)), _relative(p.given_force(q, v, t), Q_true(p, q, v)))
    worst = max(worst, _relative(plant.mass_matrix(q[0], t[0]), M_true(plant, q[0])),
                _relative(plant.given_force(q[0], v[0], t[0]), Q_true(plant, q[0], v[0])))
    assert worst <= RTOL


@pytest.mark.parametrize("name", sorted(CONSTRAINT_TRUTH))
def test_seed_constraints_equal_the_seeds_closed_forms(name):
    rng = np.random.default_rng(zlib.crc32(name.encode()) + 1)
    kw, truth = CONSTRAINT_TRUTH[name]
    plant = _plant(name)
    q, v, t = _states(rng, plant.n)
    worst = 0.0
    cases = [(plant, (q, v, t)), (plant, (q[0], v[0], t[0])),
             (_sampled(plant, rng, (64,)), (q, v, t))]  # plant-supplied values (R, k1, …) paired with the states
    for p, (qq, vv, tt) in cases:
        con = E.EXAMPLE_CONSTRAINTS[name](p, **kw)
        A_true, b_true, raw_true = truth(p, kw, qq, vv, tt)
        A, b = con.matrices(qq, vv, tt)
        worst = max(worst, _relative(A, A_true), _relative(b, b_true), _relative(con.residual(qq, vv, tt), raw_true))
    assert worst <= RTOL


@pytest.mark.parametrize("n", [1, 3, 5])
def test_pendulum_and_its_energy_requirement_equal_w_2_3(n):
    rng = np.random.default_rng(n)
    plant = NLinkPendulum(m=rng.uniform(0.5, 3.0, n), L=rng.uniform(0.5, 2.0, n), g=9.81)
    sampled = plant.replace(m=plant.m * rng.uniform(0.8, 1.2, (6, 1, n)), g=rng.uniform(9.0, 10.0, (6, 1)))
    q, v, t = _states(rng, n)
    worst = 0.0
    for p, qq, vv in ((plant, q, v), (sampled, q, v), (plant, q[0], v[0])):
        M, Q = _pendulum_truth(p)
        worst = max(worst, _relative(p.mass_matrix(qq), M(qq)), _relative(p.given_force(qq, vv), Q(qq, vv)))
    L1, g, c = float(plant.L[0]), 9.81, 0.3
    con = pendulum_energy_constraint(L1=L1, g=g, gain=c, n=n)
    for qq, vv in ((q, v), (q[0], v[0])):
        a = L1 * vv[..., 0]  # W (2.3.7) with α = c ‖A‖₂⁴
        psi = 0.5 * L1 * vv[..., 0] ** 2 - g * np.cos(qq[..., 0])
        b = -g * vv[..., 0] * np.sin(qq[..., 0]) - c * a**4 * psi
        A_true = np.zeros(np.shape(a) + (1, n))
        A_true[..., 0, 0] = a
        A, b_gen = con.matrices(qq, vv, 0.0)
        worst = max(worst, _relative(A, A_true), _relative(b_gen, b[..., None]), _relative(con.residual(qq, vv), psi[..., None]))
    assert worst <= RTOL


def test_the_complex_step_passes_through_the_generated_evaluation():
    """The numpy reference differentiates the plant by the complex step (tracking/rhs.py): the generated
    M and Q keep the imaginary part, and Im f(x + i h e_k)/h is ∂f/∂x_k of the closed form (to rounding)."""
    rng = np.random.default_rng(3)
    plant = NLinkPendulum(m=[1.0, 2.0, 3.0], L=[1.0, 1.5, 2.0])
    q, v = rng.normal(size=(2, 3))
    h, k = 1e-30, 1
    qc = q.astype(complex)
    qc[k] += 1j * h
    vc = v.astype(complex)
    vc[0] += 1j * h
    dM = np.imag(plant.mass_matrix(qc)) / h
    i = np.arange(3)
    mu = np.flip(np.cumsum(np.flip(plant.m)))[np.maximum.outer(i, i)] * np.outer(plant.L, plant.L)
    dM_true = -mu * np.sin(q[:, None] - q[None, :]) * ((i[:, None] == k).astype(float) - (i[None, :] == k))
    assert _relative(dM, dM_true) <= RTOL
    dQ = np.imag(plant.given_force(q, vc)) / h  # ∂Q/∂θ̇1 = −2 μ_i1 L_i L_1 θ̇1 sin(θ_i − θ_1)
    assert _relative(dQ, -2 * mu[:, 0] * v[0] * np.sin(q - q[0])) <= RTOL


@pytest.mark.parametrize("name", sorted(CONSTRAINT_TRUTH))
def test_seed_models_pickle_with_the_standard_library(name):
    """A campaign sends plants and constraints to worker processes with pickle (no cloudpickle on a base
    install): they travel as their parameters and source functions (no lambdified code) and compute the
    same numbers."""
    kw, _ = CONSTRAINT_TRUTH[name]
    plant = _plant(name)
    con = E.EXAMPLE_CONSTRAINTS[name](plant, **kw)
    q, v, t = _states(np.random.default_rng(0), plant.n, (4,))
    plant.mass_matrix(q), con.matrices(q, v, t)  # lambdified and cached: must not travel
    data = pickle.dumps((plant, con))
    assert b"_lambdifygenerated" not in data and b"sympy" not in data
    plant2, con2 = pickle.loads(data)
    np.testing.assert_array_equal(plant2.given_force(q, v, t), plant.given_force(q, v, t))
    for x, y in zip(con2.matrices(q, v, t), con.matrices(q, v, t)):
        np.testing.assert_array_equal(x, y)
    assert con2.codegen().key == con.codegen().key


def test_pendulum_models_pickle_with_the_standard_library():
    plant, con = NLinkPendulum(m=[1.0, 2.0], L=[1.0, 0.5]), pendulum_energy_constraint(n=2, gain=0.3)
    q = np.array([0.3, -0.2])
    plant.mass_matrix(q), con.matrices(q, q)
    plant2, con2 = pickle.loads(pickle.dumps((plant, con)))
    np.testing.assert_array_equal(plant2.mass_matrix(q), plant.mass_matrix(q))
    np.testing.assert_array_equal(con2.matrices(q, q)[1], con.matrices(q, q)[1])
