"""Issue 23 item 5: the fundamental equation judges rank and consistency scale-free.

Truth: the KKT (bordered) system ``[M Aᵀ; A 0] [q̈; −λ] = [Q; b]`` solved by ``scipy.linalg.solve`` for a
positive-definite M and the constraint's rows in their own (unscaled) units — multiplying a row of
``A q̈ = b`` by s ≠ 0 does not change the set of q̈ that satisfy it, so the scaled system has the same
constrained acceleration (Gauss's principle: the minimizer of (q̈ − a)ᵀ M (q̈ − a) on that set).

Tolerance 1e-9 relative (the issue's): the unscaled systems drawn here have condition numbers below
~1e3, so both the KKT solve and the fundamental equation are exact to ~1e-13; after row normalization
the scaled system is the unscaled one up to rounding of the row norms (1 ulp), so the engine's answer
carries ~1e-13, four orders inside the bound. Before the fix q̈ was 30–190 % off (the row was dropped).
"""

import warnings

import numpy as np
import pytest
import scipy.linalg

from robustrack import mechanics
from robustrack.compiled import mechanics as mk
from robustrack.errors import ConstraintNotice


def _kkt(M, Q, A, b):
    n, m = M.shape[0], A.shape[0]
    K = np.block([[M, A.T], [A, np.zeros((m, m))]])
    return scipy.linalg.solve(K, np.concatenate([Q, b]))[:n]


def _system(rng, n=4, m=2):
    G = rng.normal(size=(n, n))
    M = G @ G.T + n * np.eye(n)
    return M, rng.normal(size=n), rng.normal(size=(m, n)), rng.normal(size=m)


def _rel(a, b):
    return float(np.max(np.abs(a - b)) / np.max(np.abs(b)))


@pytest.mark.parametrize("scale", [1e-13, 1e13])
@pytest.mark.parametrize("seed", range(8))
def test_a_scaled_consistent_row_gives_the_kkt_answer(seed, scale):
    rng = np.random.default_rng(seed)
    M, Q, A, b = _system(rng)
    truth = _kkt(M, Q, A, b)
    As, bs = A.copy(), b.copy()
    As[1] *= scale
    bs[1] *= scale
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConstraintNotice)  # a kept row: no notice
        got = mechanics.solve_constrained(M, Q, As, bs)
    assert _rel(got.qdd, truth) <= 1e-9
    qdd, Qc = np.empty(4), np.empty(4)
    assert mk.fundamental(M, Q, As, bs, qdd, Qc)
    assert _rel(qdd, truth) <= 1e-9
    # the kernel twin and the numpy function: the same arithmetic in another order (tests/test_kernels.py)
    assert _rel(qdd, got.qdd) <= 1e-12 and _rel(Qc, got.Qc) <= 1e-12


def test_a_batch_mixing_scaled_and_plain_rows_is_exact_for_each():
    rng = np.random.default_rng(41)
    systems = [_system(rng) for _ in range(3)]
    M, Q, A, b = (np.stack(x) for x in zip(*systems))
    A[1, 1] *= 1e-13
    b[1, 1] *= 1e-13
    got = mechanics.solve_constrained(M, Q, A, b).qdd
    for k, (Mk, Qk, Ak, bk) in enumerate(systems):
        assert _rel(got[k], _kkt(Mk, Qk, Ak, bk)) <= 1e-9


def test_unscaled_systems_are_computed_as_before():
    """Where the cut-off keeps every row, the answer is the unscaled pseudo-inverse's, bit for bit."""
    rng = np.random.default_rng(5)
    M, Q, A, b = _system(rng)
    L = np.linalg.cholesky(M)
    LiT = np.linalg.inv(L).T
    a = np.linalg.solve(M, Q)
    B = A @ LiT
    expected = a + LiT @ (np.linalg.pinv(B, rcond=mechanics.DEFAULT_RCOND) @ (b - A @ a))
    assert np.array_equal(mechanics._scale_free(B, np.linalg.pinv(B, rcond=1e-12), 1e-12),
                          np.linalg.pinv(B, rcond=1e-12))
    assert _rel(mechanics.solve_constrained(M, Q, A, b).qdd, expected) <= 1e-12


def test_a_row_really_dropped_gets_one_notice():
    """Row 2 = 2 × row 1 with b2 ≠ 2 b1: dependent and inconsistent; q̈ is the least-squares compromise."""
    rng = np.random.default_rng(3)
    M, Q, A, b = _system(rng)
    A[1] = 2.0 * A[0]
    b[1] = 2.0 * b[0] + 1.0
    with pytest.warns(ConstraintNotice, match=r"constraint rows \[0, 1\] of A q̈ = b cannot be met") as rec:
        mechanics.solve_constrained(M, Q, A, b)
    assert len(rec) == 1 and "\n" not in str(rec[0].message)
    # a dependent but consistent row is redundant, not dropped: no notice
    b[1] = 2.0 * b[0]
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConstraintNotice)
        got = mechanics.solve_constrained(M, Q, A, b)
    assert _rel(got.qdd, _kkt(M, Q, A[:1], b[:1])) <= 1e-9


def test_a_zero_row_with_nonzero_b_gets_a_notice_and_hot_loops_stay_quiet():
    rng = np.random.default_rng(4)
    M, Q, A, b = _system(rng)
    A[1] = 0.0
    with pytest.warns(ConstraintNotice, match=r"row \[1\]"):
        mechanics.solve_constrained(M, Q, A, b)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConstraintNotice)
        mechanics.solve_constrained(M, Q, A, b, check=False)  # the integrators' path: said once per run instead


def test_row_misfit_is_scale_free():
    rng = np.random.default_rng(6)
    M, Q, A, b = _system(rng)
    qdd = rng.normal(size=4)
    base = mechanics.row_misfit(A, b, qdd)
    A2, b2 = A * np.array([[1e-13], [1e13]]), b * np.array([1e-13, 1e13])
    assert np.allclose(mechanics.row_misfit(A2, b2, qdd), base, rtol=1e-12)


@pytest.mark.parametrize("seed", range(5))
def test_a_constraint_that_cancels_the_whole_acceleration_gets_no_notice(seed):
    """A = I, b = 0 (a robot held at rest by a joint reference): q̈ = 0 exactly in exact arithmetic, so the
    computed q̈ is rounding of order ε ‖M⁻¹Q‖. Judged against ‖q̈‖ alone that rounding was a misfit of order
    one and a false "rows cannot be met" notice on every call; against ‖q̈‖ + ‖M⁻¹Q‖ it is ~1e-16, and an
    inconsistent system is still named (test_a_row_really_dropped_gets_one_notice)."""
    rng = np.random.default_rng(seed)
    n = 6
    X = rng.normal(size=(n, n))
    M, Q = X @ X.T + n * np.eye(n), 100 * rng.normal(size=n)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConstraintNotice)
        motion = mechanics.solve_constrained(M, Q, np.eye(n), np.zeros(n))
    a = np.linalg.solve(M, Q)
    # the rounding left in q̈ is a few ε times the acceleration the constraint cancelled
    assert np.abs(motion.qdd).max() <= 1e-13 * np.abs(a).max()
    assert np.all(mechanics.row_misfit(np.eye(n), np.zeros(n), motion.qdd, a) <= 1e-14)
