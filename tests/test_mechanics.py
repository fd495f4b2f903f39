"""The fundamental equation against independent truths (docs/theory/fundamental-equation.md).

Truths used: the KKT system of Gauss's principle; a constrained least-squares
minimisation built from scipy's null space; the symmetric square root M^{1/2}
(eigendecomposition) instead of our Cholesky factor; the Udwadia–Phohomsiri
formula for singular M (W 4.2.9); closed forms for A → 0.
"""

import numpy as np
import pytest
from hypothesis import example, given, settings, strategies as st
from scipy.linalg import null_space

from robustrack.errors import MassMatrixError, ParameterError, RankConditionError, RobustrackError
from robustrack.mechanics import (
    augmented_system,
    constrained_acceleration,
    constraint_force,
    solve_constrained,
)

SETTINGS = settings(max_examples=60, deadline=None)


def random_pd(rng, n, cond=1e3):
    U, _ = np.linalg.qr(rng.standard_normal((n, n)))
    w = np.exp(rng.uniform(0, np.log(cond), n))
    return (U * w) @ U.T


def random_psd(rng, n, rank):
    X = rng.standard_normal((n, rank))
    return X @ X.T


def sym_sqrt(M):
    w, V = np.linalg.eigh(M)
    return (V * np.sqrt(w)) @ V.T


def kkt_acceleration(M, Q, A, b):
    """Gauss's principle with independent rows: [M Aᵀ; A 0][q̈; −λ] = [Q; b]."""
    n, m = M.shape[0], A.shape[0]
    K = np.block([[M, A.T], [A, np.zeros((m, m))]])
    return np.linalg.solve(K, np.concatenate([Q, b]))[:n]


def gauss_least_squares(M, Q, A, b):
    """Among the least-squares solutions of A x = b, the one minimising (x−a)ᵀM(x−a)."""
    a = np.linalg.solve(M, Q)
    x0 = np.linalg.lstsq(A, b, rcond=None)[0]
    N = null_space(A)
    if N.size == 0:
        return x0
    c = -np.linalg.solve(N.T @ M @ N, N.T @ M @ (x0 - a))
    return x0 + N @ c


def up_formula(M, Q, A, b, C=None):
    """Udwadia–Phohomsiri (W 4.2.9): q̈ = [(I−A⁺A)M; A]⁺ [(I−A⁺A)(Q+C); b]."""
    n = M.shape[0]
    P = np.eye(n) - np.linalg.pinv(A) @ A
    C = np.zeros(n) if C is None else C
    return np.linalg.pinv(np.vstack([P @ M, A])) @ np.concatenate([P @ (Q + C), b])


seeds = st.integers(0, 2**32 - 1)
dims = st.tuples(st.integers(2, 7), st.integers(1, 6)).filter(lambda nm: nm[1] <= nm[0])


@SETTINGS
@given(seeds, dims)
def test_full_rank_matches_kkt_and_satisfies_constraints(seed, nm):
    rng = np.random.default_rng(seed)
    n, m = nm
    M, Q = random_pd(rng, n), rng.standard_normal(n)
    A, b = rng.standard_normal((m, n)), rng.standard_normal(m)
    sol = solve_constrained(M, Q, A, b)
    np.testing.assert_allclose(A @ sol.qdd, b, atol=1e-8 * (1 + np.abs(b).max()))
    np.testing.assert_allclose(sol.qdd, kkt_acceleration(M, Q, A, b), rtol=1e-7, atol=1e-8)
    np.testing.assert_allclose(M @ sol.qdd, Q + sol.Qc, rtol=1e-8, atol=1e-8)
    assert sol.residual < 1e-8 * (1 + np.abs(b).max())


@SETTINGS
@given(seeds, st.integers(3, 7), st.booleans())
def test_rank_deficient_consistent_and_inconsistent(seed, n, consistent):
    rng = np.random.default_rng(seed)
    r = int(rng.integers(1, n))  # rank of A
    A0 = rng.standard_normal((r, n))
    mix = rng.standard_normal((r + 2, r))  # r + 2 rows, rank r: dependent rows
    A = mix @ A0
    b = mix @ rng.standard_normal(r) if consistent else rng.standard_normal(r + 2)
    M, Q = random_pd(rng, n), rng.standard_normal(n)
    sol = solve_constrained(M, Q, A, b)
    truth = gauss_least_squares(M, Q, A, b)
    np.testing.assert_allclose(sol.qdd, truth, rtol=1e-6, atol=1e-7)
    expected_residual = np.linalg.norm(A @ truth - b)
    assert sol.residual == pytest.approx(expected_residual, rel=1e-6, abs=1e-8)
    if consistent:
        assert sol.residual < 1e-8 * (1 + np.abs(b).max())
        # Gauss's minimum among exact solutions: the first r rows are (generically)
        # independent and carry the same information; KKT on them is the truth.
        np.testing.assert_allclose(sol.qdd, kkt_acceleration(M, Q, A[:r], b[:r]), rtol=1e-6, atol=1e-7)
    else:
        assert sol.residual > 1e-6


@SETTINGS
@given(seeds, dims)
def test_gauss_minimum_beats_every_other_solution(seed, nm):
    rng = np.random.default_rng(seed)
    n, m = nm
    M, Q = random_pd(rng, n), rng.standard_normal(n)
    A, b = rng.standard_normal((m, n)), rng.standard_normal(m)
    qdd = constrained_acceleration(M, Q, A, b)
    a = np.linalg.solve(M, Q)
    gauss = lambda x: (x - a) @ M @ (x - a)  # noqa: E731
    N = null_space(A)
    for _ in range(5):
        if N.size == 0:
            break
        other = qdd + N @ rng.standard_normal(N.shape[1])
        assert gauss(other) >= gauss(qdd) - 1e-9 * (1 + gauss(qdd))


@SETTINGS
@given(seeds, dims)
def test_independent_of_factorization(seed, nm):
    """Cholesky factor and symmetric square root give the same Qᶜ (W 2.2.8)."""
    rng = np.random.default_rng(seed)
    n, m = nm
    M, Q = random_pd(rng, n, cond=1e2), rng.standard_normal(n)
    A, b = rng.standard_normal((m, n)), rng.standard_normal(m)
    S = sym_sqrt(M)
    a = np.linalg.solve(M, Q)
    Qc_sqrt = S @ np.linalg.pinv(A @ np.linalg.inv(S)) @ (b - A @ a)
    Qc_ku = A.T @ np.linalg.pinv(A @ np.linalg.solve(M, A.T)) @ (b - A @ a)  # KU 30–32
    Qc = constraint_force(M, Q, A, b)
    np.testing.assert_allclose(Qc, Qc_sqrt, rtol=1e-7, atol=1e-8)
    np.testing.assert_allclose(Qc, Qc_ku, rtol=1e-7, atol=1e-8)


@SETTINGS
@given(seeds, dims)
def test_non_ideal_virtual_work(seed, nm):
    """vᵀQᶜ = vᵀC for every v with A v = 0, and A q̈ = b still holds (W 4.2.6–4.2.8)."""
    rng = np.random.default_rng(seed)
    n, m = nm
    M, Q = random_pd(rng, n, cond=1e2), rng.standard_normal(n)
    A, b, C = rng.standard_normal((m, n)), rng.standard_normal(m), rng.standard_normal(n)
    sol = solve_constrained(M, Q, A, b, C)
    np.testing.assert_allclose(A @ sol.qdd, b, atol=1e-8 * (1 + np.abs(b).max()))
    N = null_space(A)
    if N.size:
        np.testing.assert_allclose(N.T @ sol.Qc, N.T @ C, rtol=1e-7, atol=1e-8)
    # factor-independent closed form (docs/theory/fundamental-equation.md)
    Minv = np.linalg.inv(M)
    P = np.eye(n) - Minv @ A.T @ np.linalg.pinv(A @ Minv @ A.T) @ A
    ideal = constrained_acceleration(M, Q, A, b)
    np.testing.assert_allclose(sol.qdd, ideal + P @ Minv @ C, rtol=1e-7, atol=1e-8)
    np.testing.assert_allclose(sol.qdd, up_formula(M, Q, A, b, C), rtol=1e-6, atol=1e-7)


def _singular_case(rng, n):
    r = int(rng.integers(1, n))
    M = random_psd(rng, n, r)
    m = int(rng.integers(n - r, n + 1))
    A = rng.standard_normal((m, n))
    b = rng.standard_normal(m)
    return M, rng.standard_normal(n), A, b


@SETTINGS
@given(seeds, st.integers(2, 6), st.booleans())
@example(seed=329, n=4, nonideal=False)  # Cholesky "succeeds" on this M (eigenvalue 1e-16 × scale)
def test_singular_mass_augmented_system(seed, n, nonideal):
    rng = np.random.default_rng(seed)
    M, Q, A, b = _singular_case(rng, n)
    C = rng.standard_normal(n) if nonideal else None
    consistent = np.linalg.matrix_rank(A) == A.shape[0]
    if not consistent:
        b = A @ rng.standard_normal(n)  # make A q̈ = b solvable
    sol = solve_constrained(M, Q, A, b, C)
    assert bool(sol.augmented)
    np.testing.assert_allclose(A @ sol.qdd, b, atol=1e-7 * (1 + np.abs(b).max()))
    np.testing.assert_allclose(sol.qdd, up_formula(M, Q, A, b, C), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(M @ sol.qdd, Q + sol.Qc, rtol=1e-7, atol=1e-7)
    # independent of α and G (W Result 4.2)
    m = A.shape[0]
    Gx = random_pd(rng, m, cond=10)
    other = solve_constrained(M, Q, A, b, C, alpha=float(rng.uniform(0.1, 10)), G=Gx)
    np.testing.assert_allclose(other.qdd, sol.qdd, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(other.Qc, sol.Qc, rtol=1e-6, atol=1e-6)


def test_augmented_system_formula():
    rng = np.random.default_rng(1)
    M, Q, A, b = _singular_case(rng, 4)
    G = random_pd(rng, A.shape[0])
    M_AG, Q_AG = augmented_system(M, Q, A, b, alpha=2.0, G=G)
    np.testing.assert_allclose(M_AG, M + 4 * A.T @ G @ A)
    np.testing.assert_allclose(Q_AG, Q + 4 * A.T @ G @ b)
    with pytest.raises(ParameterError, match="alpha"):
        augmented_system(M, Q, A, b, alpha=0.0)


def test_rank_condition_failure_is_named():
    M = np.diag([1.0, 0.0, 0.0])
    A = np.array([[0.0, 1.0, 0.0]])  # leaves the third coordinate free and massless
    with pytest.raises(RankConditionError, match=r"rank \[M; A\] = 2 < n = 3"):
        solve_constrained(M, np.zeros(3), A, np.zeros(1))


def test_bad_mass_matrices():
    A, b = np.array([[1.0, 0.0]]), np.zeros(1)
    with pytest.raises(MassMatrixError, match="symmetric"):
        solve_constrained(np.array([[1.0, 0.5], [0.0, 1.0]]), np.zeros(2), A, b)
    with pytest.raises(MassMatrixError, match="positive semi-definite"):
        solve_constrained(np.diag([1.0, -1.0]), np.zeros(2), A, b)
    with pytest.raises(ParameterError, match="`b` must have shape"):
        solve_constrained(np.eye(2), np.zeros(2), A, np.zeros(2))
    with pytest.raises(ParameterError, match="finite"):
        solve_constrained(np.eye(2), np.array([np.nan, 0.0]), A, b)
    assert issubclass(MassMatrixError, RobustrackError)


def test_batch_equals_loop_and_mixes_singular_elements():
    rng = np.random.default_rng(7)
    K, n, m = 50, 4, 2
    M = np.stack([random_pd(rng, n) if k % 3 else random_psd(rng, n, 2) for k in range(K)])
    Q, A = rng.standard_normal((K, n)), rng.standard_normal((K, m, n))
    b, C = rng.standard_normal((K, m)), rng.standard_normal((K, n))
    batch = solve_constrained(M.reshape(5, 10, n, n), Q.reshape(5, 10, n), A.reshape(5, 10, m, n),
                              b.reshape(5, 10, m), C.reshape(5, 10, n))
    assert batch.qdd.shape == (5, 10, n) and batch.residual.shape == (5, 10)
    for k in range(K):
        one = solve_constrained(M[k], Q[k], A[k], b[k], C[k])
        np.testing.assert_allclose(batch.qdd.reshape(K, n)[k], one.qdd, rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(batch.Qc.reshape(K, n)[k], one.Qc, rtol=1e-9, atol=1e-9)
        assert bool(batch.augmented.reshape(K)[k]) == (k % 3 == 0)


def test_broadcasting_shared_matrices():
    rng = np.random.default_rng(3)
    M = random_pd(rng, 3)
    Q = rng.standard_normal((8, 3))
    A, b = rng.standard_normal((1, 3)), np.zeros(1)
    sol = solve_constrained(M, Q, A, b)
    assert sol.qdd.shape == (8, 3)
    np.testing.assert_allclose(sol.qdd[5], constrained_acceleration(M, Q[5], A, b))


def test_large_stack():
    rng = np.random.default_rng(11)
    K, n = 10_000, 3
    X = rng.standard_normal((K, n, n))
    M = X @ np.swapaxes(X, -1, -2) + np.eye(n)
    Q, A, b = rng.standard_normal((K, n)), rng.standard_normal((K, 1, n)), rng.standard_normal((K, 1))
    sol = solve_constrained(M, Q, A, b)
    np.testing.assert_allclose(np.einsum("kij,kj->ki", A, sol.qdd), b, atol=1e-8)


@pytest.mark.parametrize("thd", [1.0, 1e-3, 1e-100, 1e-200, 1e-300])
def test_vanishing_constraint_row_stays_correct(thd):
    """Triple pendulum's A = [L1 θ̇1, 0, 0] as θ̇1 → 0: q̈1 = b/(L1 θ̇1) exactly (docs/theory/fundamental-equation.md)."""
    M = np.array([[6.0, 1.0, 0.5], [1.0, 11.0, 2.0], [0.5, 2.0, 12.0]])
    Q = np.array([1.0, -2.0, 0.5])
    L1 = 1.0
    A = np.array([[L1 * thd, 0.0, 0.0]])
    target = 0.7  # choose b so that q̈1 = 0.7
    b = np.array([L1 * thd * target])
    sol = solve_constrained(M, Q, A, b)
    assert sol.qdd[0] == pytest.approx(target, rel=1e-12)
    # the other components follow from Gauss: minimise over q̈2, q̈3 with q̈1 fixed
    a = np.linalg.solve(M, Q)
    d1 = target - a[0]
    rest = a[1:] - np.linalg.solve(M[1:, 1:], M[1:, 0] * d1)
    np.testing.assert_allclose(sol.qdd[1:], rest, rtol=1e-10)
    assert np.all(np.isfinite(sol.Qc))


def test_exactly_zero_row_gives_zero_force():
    M, Q = np.diag([2.0, 3.0]), np.array([1.0, 1.0])
    sol = solve_constrained(M, Q, np.zeros((1, 2)), np.zeros(1))
    np.testing.assert_array_equal(sol.Qc, np.zeros(2))
    # inconsistent 0·q̈ = 1: least squares gives the free motion, and the residual says so
    sol = solve_constrained(M, Q, np.zeros((1, 2)), np.ones(1))
    assert sol.residual == pytest.approx(1.0)


@pytest.mark.parametrize("seed", range(5))
def test_quasi_velocity_form_is_the_same_equation(seed):
    """UP (3.25, 3.47): in quasi-velocities s, M_s ṡ = S with A_s ṡ = b_s takes the same closed form.

    Rigid body, s = ω, M_s = J = diag(J1, J2, J3), S = −ω × Jω (Euler), the spin ω3 held
    constant (A_s = [0, 0, 1], b_s = 0) and a non-ideal work vector C (acts only along the
    free directions v = (v1, v2, 0)). Truth: Euler's equations with ω̇3 = 0 —
    J1 ω̇1 = (J2 − J3) ω2 ω3 + C1, J2 ω̇2 = (J3 − J1) ω3 ω1 + C2 — and the constraint torque
    Sᶜ = (C1, C2, −(J1 − J2) ω1 ω2).
    """
    rng = np.random.default_rng(seed)
    J = rng.uniform(0.5, 4.0, 3)
    w = rng.normal(scale=2.0, size=3)
    C = rng.normal(size=3)
    S = -np.cross(w, J * w)
    mo = solve_constrained(np.diag(J), S, np.array([[0.0, 0.0, 1.0]]), np.zeros(1), C)
    wd = [((J[1] - J[2]) * w[1] * w[2] + C[0]) / J[0], ((J[2] - J[0]) * w[2] * w[0] + C[1]) / J[1], 0.0]
    np.testing.assert_allclose(mo.qdd, wd, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(mo.Qc, [C[0], C[1], -(J[0] - J[1]) * w[0] * w[1]], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("consistent", [True, False])
def test_the_inconsistency_notice_is_judged_against_the_conditioning(consistent):
    """Near a singular configuration (one singular value of A at 1e-11…1e-9) a consistent A q̈ = b (b = 0, or
    b = A x) is met only to about cond(B)·ε: no notice (it was called inconsistent before issue 28). A row
    made inconsistent (b off the range of an exactly rank-deficient A) is still named."""
    import warnings

    from robustrack.errors import ConstraintNotice

    rng = np.random.default_rng(11)
    said = []
    for k in range(40):
        n = 6
        U, _ = np.linalg.qr(rng.normal(size=(n, n)))
        V, _ = np.linalg.qr(rng.normal(size=(n, n)))
        smallest = 10 ** rng.uniform(-11, -9) if consistent else 0.0
        A = U @ np.diag([2.0, 1.3, 0.9, 0.5, 0.2, smallest]) @ V.T
        M, Q = np.eye(n) + 0.1 * np.diag(rng.uniform(size=n)), rng.normal(size=n)
        if consistent:
            b = A @ rng.normal(size=n) if k % 2 else np.zeros(n)
        else:
            b = A @ rng.normal(size=n) + U[:, -1]  # a component off the range of A
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            solve_constrained(M, Q, A, b)
        said.append(sum(issubclass(w.category, ConstraintNotice) for w in caught))
    assert said == ([0] * 40 if consistent else [1] * 40)
