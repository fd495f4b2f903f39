"""Tests of robustrack.constraints.

Independent truths: A q̈ − b is compared with φ̈ (resp. ψ̇) computed by
high-order central finite differences of a separately written numpy φ (ψ)
along smooth trajectories with analytic q, q̇, q̈; closed forms from the seeds
(KU 38, W 2.3.7); invariants (batch elements equal single evaluations).
"""

from __future__ import annotations

import functools
import math

import numpy as np

from robustrack.plants import PendulumEnergyConstraint, pendulum_energy_constraint
import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from robustrack.constraints import (
    Constraint,
    FunctionConstraint,
    Holonomic,
    Nonholonomic,
    NormGain,
    Stabilization,
    StackedConstraint,
    stack,
)
from robustrack.errors import ConstraintError

SETTINGS = settings(max_examples=40, deadline=None)


# --------------------------------------------------------------------------- #
# finite differences along a smooth trajectory
# --------------------------------------------------------------------------- #
def fd_weights(deriv: int, half: int) -> np.ndarray:
    """Central-difference weights on offsets −half…half (unit step), from the Taylor system."""
    offs = np.arange(-half, half + 1, dtype=float)
    V = np.array([offs**k / math.factorial(k) for k in range(2 * half + 1)])
    rhs = np.zeros(2 * half + 1)
    rhs[deriv] = 1.0
    return np.linalg.solve(V, rhs)


HALF, H = 4, 1e-2  # 8th-order stencils
W1, W2 = fd_weights(1, HALF) / H, fd_weights(2, HALF) / H**2


class Trajectory:
    """q_i(t) = a_i + b_i sin(w_i t + p_i) + c_i t², with exact q̇, q̈."""

    def __init__(self, a, b, w, p, c):
        self.a, self.b, self.w, self.p, self.c = map(np.asarray, (a, b, w, p, c))

    def q(self, t):
        t = np.asarray(t)[..., None]
        return self.a + self.b * np.sin(self.w * t + self.p) + self.c * t**2

    def qd(self, t):
        t = np.asarray(t)[..., None]
        return self.b * self.w * np.cos(self.w * t + self.p) + 2 * self.c * t

    def qdd(self, t):
        t = np.asarray(t)[..., None]
        return -self.b * self.w**2 * np.sin(self.w * t + self.p) + 2 * self.c


def trajectories(n: int):
    unit = st.floats(-1.0, 1.0, allow_nan=False)
    vec = st.lists(unit, min_size=n, max_size=n)
    freq = st.lists(st.floats(0.2, 3.0), min_size=n, max_size=n)
    return st.builds(
        lambda a, b, w, p, c, t0: (Trajectory(a, b, w, np.array(p) * 3, np.array(c) * 0.5), t0),
        vec, vec, freq, vec, vec, st.floats(0.0, 2.0),
    )


def along(fun, traj, t0, *, velocities=False):
    """fun(q, [qd,] t) on the stencil around t0 → (value, first, second derivative)."""
    ts = t0 + H * np.arange(-HALF, HALF + 1)
    vals = fun(traj.q(ts), traj.qd(ts), ts) if velocities else fun(traj.q(ts), ts)
    vals = np.asarray(vals, dtype=float)  # (stencil, m)
    return vals[HALF], W1 @ vals, W2 @ vals


def check_close(lhs, rhs, scale, rtol=1e-7):
    lhs, rhs = np.asarray(lhs), np.asarray(rhs)
    assert np.all(np.abs(lhs - rhs) <= rtol * (1.0 + scale)), (lhs, rhs)


def accel_form(c, traj, t0):
    """A q̈ − b at the trajectory point, and a scale for tolerances."""
    A, b = c.matrices(traj.q(t0), traj.qd(t0), t0)
    Aq = A @ traj.qdd(t0)
    return Aq - b, np.max(np.abs(Aq)) + np.max(np.abs(b))


# --------------------------------------------------------------------------- #
# the test constraints, each with an independent numpy φ / ψ
# --------------------------------------------------------------------------- #
x, y, z, t, L, al, mu = sp.symbols("x y z t L alpha mu", real=True)
xd, yd, zd = sp.symbols("xd yd zd", real=True)
L_VAL, AL_VAL, MU_VAL = 1.3, 4.0, -0.1

HOLONOMIC = {
    # planar pendulum in Cartesian coordinates
    "circle": (
        lambda stab: Holonomic(x**2 + y**2 - L**2, [x, y], stabilization=stab, params={L: L_VAL}),
        lambda q, t: (q[..., 0] ** 2 + q[..., 1] ** 2 - L_VAL**2)[..., None],
        2,
    ),
    # KU ex. 3: rheonomic x1 − x2 = e^{−αt} sin 2πt
    "duffing": (
        lambda stab: Holonomic(
            x - y - sp.exp(-al * t) * sp.sin(2 * sp.pi * t), [x, y], t, stabilization=stab, params={al: AL_VAL}
        ),
        lambda q, t: (q[..., 0] - q[..., 1] - np.exp(-AL_VAL * t) * np.sin(2 * np.pi * t))[..., None],
        2,
    ),
    # KU ex. 2: nonlinear length constraint
    "ku2": (
        lambda stab: Holonomic(
            sp.Eq(x**2 + y**2, L**2 * (1 - mu * sp.sin(x**2))), [x, y], stabilization=stab,
            params={L: L_VAL, mu: MU_VAL},
        ),
        lambda q, t: (q[..., 0] ** 2 + q[..., 1] ** 2 - L_VAL**2 * (1 - MU_VAL * np.sin(q[..., 0] ** 2)))[..., None],
        2,
    ),
    # two rows from a traced callable, rheonomic, on three coordinates
    "traced": (
        lambda stab: Holonomic(
            lambda q, tt: [q[0] * q[1] - sp.sin(tt), q[2] ** 3 + sp.cos(q[0] * tt)], 3, stabilization=stab
        ),
        lambda q, t: np.stack(
            [q[..., 0] * q[..., 1] - np.sin(t), q[..., 2] ** 3 + np.cos(q[..., 0] * t)], axis=-1
        ),
        3,
    ),
}

NONHOLONOMIC = {
    # Appell's particle, nonlinear in the velocities (W ch. 3)
    "appell": (
        lambda stab: Nonholonomic(zd**2 - xd**2 - yd**2, [x, y, z], [xd, yd, zd], stabilization=stab),
        lambda q, qd, t: (qd[..., 2] ** 2 - qd[..., 0] ** 2 - qd[..., 1] ** 2)[..., None],
        3,
    ),
    # KU ex. 1
    "ku1": (
        lambda stab: Nonholonomic(yd - z * xd, [x, y, z], [xd, yd, zd], stabilization=stab),
        lambda q, qd, t: (qd[..., 1] - q[..., 2] * qd[..., 0])[..., None],
        3,
    ),
    # skate-like, rheonomic and nonlinear, two rows
    "skate": (
        lambda stab: Nonholonomic(
            [xd * sp.sin(z) - yd * sp.cos(z) + t * xd**2, zd * sp.exp(x * t) - yd * y], [x, y, z], [xd, yd, zd], t,
            stabilization=stab,
        ),
        lambda q, qd, t: np.stack(
            [
                qd[..., 0] * np.sin(q[..., 2]) - qd[..., 1] * np.cos(q[..., 2]) + t * qd[..., 0] ** 2,
                qd[..., 2] * np.exp(q[..., 0] * t) - qd[..., 1] * q[..., 1],
            ],
            axis=-1,
        ),
        3,
    ),
}

XI, OMEGA, ALPHA = 0.7, 3.0, 2.5


@functools.cache
def built_h(name):
    """(plain, stabilized, φ, n) of a holonomic case, built when a test first asks (sympy work, on the worker that
    runs it: xdist's every worker collects this module)."""
    make, phi, n = HOLONOMIC[name]
    return make(None), make(Stabilization.second_order(XI, OMEGA)), phi, n


@functools.cache
def built_n(name):
    """(plain, stabilized, ψ, n) of a nonholonomic case (as :func:`built_h`)."""
    make, psi, n = NONHOLONOMIC[name]
    return make(None), make(Stabilization.first_order(ALPHA)), psi, n


# --------------------------------------------------------------------------- #
# A q̈ − b = φ̈ (holonomic), = ψ̇ (nonholonomic); stabilized variants
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize("name", list(HOLONOMIC))
def test_holonomic_acceleration_form_is_phi_ddot(name):
    plain, stab, phi, n = built_h(name)

    @SETTINGS
    @given(trajectories(n))
    def check(tr):
        traj, t0 = tr
        f0, f1, f2 = along(phi, traj, t0)
        lhs, scale = accel_form(plain, traj, t0)
        check_close(lhs, f2, scale + np.max(np.abs(f2)))
        lhs_s, scale_s = accel_form(stab, traj, t0)
        target = f2 + 2 * XI * OMEGA * f1 + OMEGA**2 * f0
        check_close(lhs_s, target, scale_s + np.max(np.abs(target)))
        # the raw residual is φ itself
        check_close(plain.residual(traj.q(t0), traj.qd(t0), t0), f0, np.max(np.abs(f0)), rtol=1e-12)

    check()


@pytest.mark.parametrize("name", list(NONHOLONOMIC))
def test_nonholonomic_acceleration_form_is_psi_dot(name):
    plain, stab, psi, n = built_n(name)

    @SETTINGS
    @given(trajectories(n))
    def check(tr):
        traj, t0 = tr
        f0, f1, _ = along(psi, traj, t0, velocities=True)
        lhs, scale = accel_form(plain, traj, t0)
        check_close(lhs, f1, scale + np.max(np.abs(f1)))
        lhs_s, scale_s = accel_form(stab, traj, t0)
        target = f1 + ALPHA * f0
        check_close(lhs_s, target, scale_s + np.max(np.abs(target)))
        check_close(plain.residual(traj.q(t0), traj.qd(t0), t0), f0, np.max(np.abs(f0)), rtol=1e-12)

    check()


def test_ku1_closed_form():
    """KU 38: A = [−z, 1, 0], b = ż ẋ for ẏ = z ẋ."""
    c = built_n("ku1")[0]
    rng = np.random.default_rng(1)
    q, qd = rng.normal(size=(20, 3)), rng.normal(size=(20, 3))
    A, b = c.matrices(q, qd, 0.0)
    expected_A = np.stack([-q[:, 2], np.ones(20), np.zeros(20)], axis=-1)[:, None, :]
    np.testing.assert_allclose(A, expected_A, rtol=1e-14)
    np.testing.assert_allclose(b[:, 0], qd[:, 2] * qd[:, 0], rtol=1e-14)


@SETTINGS
@given(trajectories(3))
def test_state_dependent_gains(tr):
    """ψ̇ + α ψ with α a sympy expression and with a numeric callable α(q, qd, t, A)."""
    traj, t0 = tr
    psi = NONHOLONOMIC["appell"][1]
    f0, f1, _ = along(psi, traj, t0, velocities=True)
    q0, qd0 = traj.q(t0), traj.qd(t0)

    c_sym = Nonholonomic(zd**2 - xd**2 - yd**2, [x, y, z], [xd, yd, zd], t,
                         stabilization=Stabilization.first_order(1 + x**2 + t), params={})
    lhs, scale = accel_form(c_sym, traj, t0)
    target = f1 + (1 + q0[0] ** 2 + t0) * f0
    check_close(lhs, target, scale + np.max(np.abs(target)))

    c_num = _APPELL_NORMGAIN
    lhs, scale = accel_form(c_num, traj, t0)
    A_true = np.array([-2 * qd0[0], -2 * qd0[1], 2 * qd0[2]])  # ∂ψ/∂q̇ by hand
    target = f1 + 0.3 * np.linalg.norm(A_true) ** 2 * f0
    check_close(lhs, target, scale + np.max(np.abs(target)))


_APPELL_NORMGAIN = Nonholonomic(
    zd**2 - xd**2 - yd**2, [x, y, z], [xd, yd, zd], stabilization=Stabilization.first_order(NormGain(0.3, 2))
)


def test_normgain_multirow_uses_spectral_norm():
    A = np.array([[[3.0, 0.0], [0.0, 4.0]], [[1.0, 1.0], [1.0, 1.0]]])
    np.testing.assert_allclose(NormGain(2.0, 1)(None, None, 0.0, A), 2 * np.array([4.0, 2.0]))


# --------------------------------------------------------------------------- #
# batch shapes and broadcasting
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize("batch", [(), (4,), (2, 3)])
@pytest.mark.parametrize("which", ["circle", "traced", "ku1", "skate"])
def test_batch_shapes_match_single_evaluations(batch, which):
    c = (built_h(which) if which in HOLONOMIC else built_n(which))[1]
    rng = np.random.default_rng(7)
    q, qd = rng.normal(size=batch + (c.n,)), rng.normal(size=batch + (c.n,))
    tt = rng.uniform(0, 2, size=batch)
    A, b = c.matrices(q, qd, tt)
    r = c.residual(q, qd, tt)
    assert A.shape == batch + (c.m, c.n) and b.shape == batch + (c.m,) and r.shape == batch + (c.m,)
    for idx in np.ndindex(*batch):
        A1, b1 = c.matrices(q[idx], qd[idx], float(tt[idx]))
        np.testing.assert_allclose(A[idx], A1, rtol=1e-13, atol=1e-13)
        np.testing.assert_allclose(b[idx], b1, rtol=1e-13, atol=1e-13)
        np.testing.assert_allclose(r[idx], c.residual(q[idx], qd[idx], float(tt[idx])), rtol=1e-13, atol=1e-13)


def test_constant_entries_broadcast_and_scalar_time():
    c = built_n("ku1")[0]  # A = [−z, 1, 0]: two constant entries
    q = np.zeros((2, 5, 3))
    A, b = c.matrices(q, q, 0.0)
    assert A.shape == (2, 5, 1, 3)
    assert np.all(A[..., 0, 1] == 1.0) and np.all(A[..., 0, 2] == 0.0) and np.all(b == 0.0)
    A.sum()  # a real array, not ragged objects
    assert A.dtype == float


def test_time_broadcasts_against_batch():
    c = built_h("duffing")[0]
    q = np.zeros((3, 4, 2))
    ts = np.linspace(0.1, 0.9, 4)  # broadcasts against the last batch axis
    r = c.residual(q, None, ts)
    expected = -np.exp(-AL_VAL * ts) * np.sin(2 * np.pi * ts)
    np.testing.assert_allclose(r[..., 0], np.broadcast_to(expected, (3, 4)), rtol=1e-13)
    with pytest.raises(ConstraintError, match="broadcast"):
        c.matrices(q, q, np.zeros(5))


def test_params_array_and_with_params():
    c = built_h("circle")[0]
    q = np.array([[0.3, 0.4], [1.0, 2.0]])
    qd = np.array([[1.0, -1.0], [0.5, 2.0]])
    # closed forms: A = [2x, 2y], b = −2(ẋ² + ẏ²), φ = x² + y² − L²
    A, b = c.matrices(q, qd)
    np.testing.assert_allclose(A[:, 0], 2 * q)
    np.testing.assert_allclose(b[:, 0], -2 * (qd**2).sum(-1))
    c2 = c.with_params({L: np.array([1.0, 3.0])})  # one value per batch element
    np.testing.assert_allclose(c2.residual(q, qd)[:, 0], (q**2).sum(-1) - np.array([1.0, 9.0]))
    np.testing.assert_allclose(c.residual(q, qd)[:, 0], (q**2).sum(-1) - L_VAL**2)  # original unchanged
    with pytest.raises(ConstraintError, match="no parameter"):
        c.with_params({mu: 1.0})


# --------------------------------------------------------------------------- #
# the triple-pendulum energy requirement (W 2.3.4–2.3.7)
# --------------------------------------------------------------------------- #
@SETTINGS
@given(
    st.lists(st.floats(-4, 4), min_size=3, max_size=3),
    st.lists(st.floats(-5, 5), min_size=3, max_size=3),
)
def test_pendulum_energy_closed_form(th, thd):
    th, thd = np.array(th), np.array(thd)
    L1, g, gain, m1 = 1.0, 9.81, 0.02, 1.0
    c = _PENDULUM
    A, b = c.matrices(th, thd, 0.0)
    psi = 0.5 * L1 * thd[0] ** 2 - g * np.cos(th[0])
    A_true = np.array([[L1 * thd[0], 0.0, 0.0]])
    alpha = gain * np.linalg.norm(A_true, 2) ** 4
    np.testing.assert_allclose(A, A_true, rtol=1e-14, atol=1e-300)
    np.testing.assert_allclose(b, [-g * thd[0] * np.sin(th[0]) - alpha * psi], rtol=1e-12, atol=1e-12)
    energy = 0.5 * m1 * L1**2 * thd[0] ** 2 - m1 * g * L1 * np.cos(th[0])
    np.testing.assert_allclose(c.energy(th, thd), energy, rtol=1e-12, atol=1e-12)


_PENDULUM = pendulum_energy_constraint(m1=1.0)


def test_pendulum_energy_other_parameters_and_links():
    c = pendulum_energy_constraint(L1=1.5, g=3.0, gain=0.0, n=5, m1=2.0)
    assert isinstance(c, PendulumEnergyConstraint) and (c.n, c.m) == (5, 1)
    rng = np.random.default_rng(3)
    th, thd = rng.normal(size=(6, 5)), rng.normal(size=(6, 5))
    A, b = c.matrices(th, thd)
    np.testing.assert_allclose(A[:, 0, 0], 1.5 * thd[:, 0])
    assert np.all(A[:, 0, 1:] == 0)
    np.testing.assert_allclose(b[:, 0], -3.0 * thd[:, 0] * np.sin(th[:, 0]))  # gain 0: ψ̇ = 0
    np.testing.assert_allclose(c.energy(th, thd), 2.0 * (0.5 * 1.5**2 * thd[:, 0] ** 2 - 1.5 * 3.0 * np.cos(th[:, 0])))
    with pytest.raises(ConstraintError, match="m1"):
        pendulum_energy_constraint().energy(th[0], thd[0])
    with pytest.raises(ConstraintError, match="L1"):
        pendulum_energy_constraint(L1=-1.0)


def test_pendulum_at_rest_point_gives_finite_b():
    """A = 0 where θ̇1 = 0: α = 0 there, b stays finite."""
    A, b = _PENDULUM.matrices([1.0, 0.0, 0.0], [0.0, 0.0, 0.0])
    assert np.all(A == 0) and b.tolist() == [0.0]


# --------------------------------------------------------------------------- #
# stacking (W 5.2.8)
# --------------------------------------------------------------------------- #
def test_stack_rows_in_order():
    sphere = Holonomic(x**2 + y**2 + z**2 - 1, [x, y, z])
    ku1 = built_n("ku1")[0]
    fixed = FunctionConstraint(lambda q, qd, t: np.array([[0.0, 0.0, 1.0]]), lambda q, qd, t: np.array([7.0]), 3, 1,
                               residual=lambda q, qd, t: q[..., 2:] - 1.0)
    s = stack(sphere, stack(ku1, fixed))
    assert isinstance(s, StackedConstraint) and (s.n, s.m) == (3, 3) and len(s.constraints) == 3
    assert s.slices == (slice(0, 1), slice(1, 2), slice(2, 3))
    rng = np.random.default_rng(5)
    q, qd = rng.normal(size=(4, 3)), rng.normal(size=(4, 3))
    A, b = s.matrices(q, qd, 0.0)
    assert A.shape == (4, 3, 3) and b.shape == (4, 3)
    np.testing.assert_allclose(A[:, 0], 2 * q)                       # sphere: A = 2qᵀ
    np.testing.assert_allclose(b[:, 0], -2 * (qd**2).sum(-1))        # b = −2|q̇|²
    np.testing.assert_allclose(A[:, 1], np.stack([-q[:, 2], np.ones(4), np.zeros(4)], -1))
    np.testing.assert_allclose(b[:, 1], qd[:, 2] * qd[:, 0])
    np.testing.assert_allclose(A[:, 2], np.broadcast_to([0.0, 0.0, 1.0], (4, 3)))
    np.testing.assert_allclose(b[:, 2], 7.0)
    r = s.residual(q, qd, 0.0)
    np.testing.assert_allclose(r, np.stack([(q**2).sum(-1) - 1, qd[:, 1] - q[:, 2] * qd[:, 0], q[:, 2] - 1], -1))


def test_stack_refuses_mismatched_n():
    with pytest.raises(ConstraintError, match=r"n=2.*n=3"):
        stack(built_h("circle")[0], built_n("ku1")[0])
    with pytest.raises(ConstraintError, match="Constraint"):
        stack(built_h("circle")[0], "x**2")
    with pytest.raises(ConstraintError):
        stack()


# --------------------------------------------------------------------------- #
# bad input
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize(
    "build, match",
    [
        (lambda: Holonomic("x**2 + y**2 - 1", [x, y]), "sympy expression"),
        (lambda: Holonomic(object(), [x, y]), "sympy expression"),
        (lambda: Holonomic(x**2 + y**2 - 1, [x]), r"\['y'\]"),
        (lambda: Holonomic(x**2 - L**2, [x]), "params"),
        (lambda: Holonomic(x**2 - 1, ["x"]), "Symbols"),
        (lambda: Holonomic(x**2 - 1, [x, x]), "distinct"),
        (lambda: Holonomic(x**2 - 1, x), "sequence"),
        (lambda: Holonomic(sp.sin(t), [x], t), "does not depend"),
        (lambda: Holonomic(lambda q: q[0] * q[3], 2), "failed"),
        (lambda: Holonomic(lambda q: np.sin(q[0]), 1), "sympy functions"),
        (lambda: Holonomic(x - 1, [x], params={"L": 1.0}), "Symbols"),
        (lambda: Holonomic(x - L, [x], params={L: np.inf}), "finite"),
        (lambda: Holonomic(x - 1, [x], stabilization=Stabilization.first_order(1.0)), "second_order"),
        (lambda: Nonholonomic(yd - z * xd, [x, y, z], [xd, yd]), "one velocity"),
        (lambda: Nonholonomic(yd - z * xd, [x, y, z]), "qd"),
        (lambda: Nonholonomic(x - 1, [x], [xd]), "Holonomic"),
        (lambda: Nonholonomic(xd, [x], [xd], stabilization=Stabilization.second_order(1, 1)), "first_order"),
        (lambda: Nonholonomic(xd, [x], [xd], stabilization=Stabilization.first_order(1 + L)), "alpha"),
        (lambda: Nonholonomic(xd, [x], [xd], stabilization=2.0), "Stabilization"),
        (lambda: Stabilization.second_order(1.0, -2.0), "omega"),
        (lambda: Stabilization.second_order(0.0, 2.0), "xi"),
        (lambda: Stabilization.first_order(-1.0), "alpha"),
        (lambda: Stabilization.first_order("fast"), "alpha"),
        (lambda: NormGain(0.02, -1), "power"),
    ],
)
def test_bad_input_is_refused_with_a_message(build, match):
    with pytest.raises(ConstraintError, match=match):
        build()


def test_bad_evaluation_input():
    c = built_h("circle")[0]
    with pytest.raises(ConstraintError, match=r"shape \(\.\.\., 2\)"):
        c.matrices([1.0, 2.0, 3.0], [0.0, 0.0, 0.0])
    with pytest.raises(ConstraintError, match="numeric"):
        c.matrices(["a", "b"], [0.0, 0.0])
    neg = Nonholonomic(xd, [x], [xd], stabilization=Stabilization.first_order(lambda q, qd, t, A: -1.0))
    with pytest.raises(ConstraintError, match=">= 0"):
        neg.matrices([0.0], [1.0])


def test_function_constraint_broadcasts_over_qd_and_time():
    fc = FunctionConstraint(lambda q, qd, t: np.array([[1.0, 0.0]]), lambda q, qd, t: np.sin(t)[..., None], 2, 1)
    A, b = fc.matrices([0.0, 0.0], np.zeros((3, 2)), np.array([0.0, 1.0, 2.0]))
    assert A.shape == (3, 1, 2) and b.shape == (3, 1)
    np.testing.assert_allclose(b[:, 0], np.sin([0.0, 1.0, 2.0]))
    with pytest.raises(NotImplementedError):
        fc.residual([0.0, 0.0], [0.0, 0.0])
    assert isinstance(fc, Constraint)
