"""Compiled twins of :mod:`robustrack.mechanics`: small dense linear algebra and the fundamental equation.

One state at a time, plain loops over float64 arrays (no BLAS call for a 3 × 3), compiled by
numba once per machine and cached (:mod:`robustrack.compiled.loop` says where). The numpy
functions of :mod:`robustrack.mechanics` are the oracle these are tested against
(``tests/test_kernels.py``) and the fallback where nothing is compiled.

- :func:`fundamental` — q̈ and Qᶜ of ``M q̈ = Q + Qᶜ``, ``A q̈ = b`` with a Cholesky factor
  (W 2.2.7–2.2.9), the augmented system ``M + AᵀA`` where M is singular (W 4.3.8), as
  :func:`robustrack.mechanics.solve_constrained`;
- :func:`cholesky`, :func:`spd_solve` …, :func:`lu_factor`, :func:`lu_solve` — what it and the
  integrators need.
"""

import math

import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.core.extending import intrinsic

from .cache import kernel

from ..mechanics import DEFAULT_RCOND as RCOND

__all__ = ["cholesky", "cholesky_solve_into", "cholesky_solve_columns_into", "lower_inverse", "spd_solve", "spd_solve_into", "spd_solve_columns",
           "spd_solve_columns_into", "row_pinv", "full_rank_pinv", "scale_free_pinv", "mat_mul",
           "norm2", "symmetric_part", "lu_factor", "lu_solve", "fundamental", "fundamental_into", "fundamental_into_row",
           "fundamental_work_size", "PINV_FUNCTION", "matrix_view"]


@intrinsic
def matrix_view(typingctx, flat, start, rows, cols):
    """``flat[start:start + rows * cols].reshape((rows, cols))`` of a C-contiguous float64 vector: the same view (its
    memory, C order), built without numba's reshape, which calls a C helper at every view (~3 % of a campaign
    sample's instructions went to it: six views of the scratch at each nominal motion)."""
    if not (isinstance(flat, types.Array) and flat.ndim == 1 and flat.layout == "C" and flat.dtype == types.float64):
        return None
    result = types.Array(types.float64, 2, "C")

    def codegen(context, builder, signature, args):
        from numba.core.imputils import impl_ret_borrowed

        src = context.make_array(signature.args[0])(context, builder, args[0])
        start_, rows_, cols_ = (context.cast(builder, v, t, types.intp) for v, t in zip(args[1:], signature.args[1:]))
        view = context.make_array(result)(context, builder)
        item = context.get_constant(types.intp, 8)
        context.populate_array(view, data=builder.gep(src.data, [start_]),
                               shape=cgutils.pack_array(builder, [rows_, cols_]),
                               strides=cgutils.pack_array(builder, [builder.mul(cols_, item), item]), itemsize=item,
                               meminfo=src.meminfo, parent=src.parent)
        return impl_ret_borrowed(context, builder, result, view._getvalue())

    return result(flat, start, rows, cols), codegen


@kernel(refcounts=False)
def cholesky(M, L):
    """Lower factor L of M = L Lᵀ in place; False if a pivot is not positive (compiled apart and called:
    LLVM inlines it where that pays, numba's inlining at each of its call sites cost compile time)."""
    n = M.shape[0]
    for j in range(n):
        s = M[j, j]
        for k in range(j):
            s -= L[j, k] * L[j, k]
        if not s > 0.0:
            return False
        d = math.sqrt(s)
        L[j, j] = d
        for i in range(j):
            L[i, j] = 0.0
        for i in range(j + 1, n):
            s = M[i, j]
            for k in range(j):
                s -= L[i, k] * L[j, k]
            L[i, j] = s / d
    return True


@kernel
def lower_inverse(L, Li):
    """Li = L⁻¹ of a lower-triangular L."""
    n = L.shape[0]
    for j in range(n):
        for i in range(n):
            Li[i, j] = 0.0
        Li[j, j] = 1.0 / L[j, j]
        for i in range(j + 1, n):
            s = 0.0
            for k in range(j, i):
                s -= L[i, k] * Li[k, j]
            Li[i, j] = s / L[i, i]


@kernel
def definite_factor(M, L, Li):
    """Whether M is positive definite well enough for the Cholesky form of the fundamental equation: ``M = L Lᵀ``
    exists and ``tr M · ‖L⁻¹‖²_F · rcond < 1`` (a bound on its condition number; else the augmented system,
    :func:`robustrack.mechanics._cholesky_or_augment`, W 4.3.8). Fills L and Li = L⁻¹ on the way."""
    if not cholesky(M, L):
        return False
    lower_inverse(L, Li)
    n = M.shape[0]
    tr = 0.0
    fro = 0.0
    for i in range(n):
        tr += M[i, i]
        for j in range(n):
            fro += Li[i, j] * Li[i, j]
    return tr * fro * RCOND < 1.0


@kernel(inline=True)
def spd_solve(M, F, out):
    """out = M⁻¹ F for a symmetric positive definite M (Cholesky); False if M is not."""
    n = M.shape[0]
    return spd_solve_into(M, F, out, np.empty((n, n)), np.empty(n))


@kernel(inline=True)
def spd_solve_into(M, F, out, L, y):
    """:func:`spd_solve` with its factor L (n × n) and forward solution y (n) in the caller's workspace."""
    if not cholesky(M, L):
        return False
    cholesky_solve_into(L, F, out, y)
    return True


@kernel(inline=True)
def cholesky_solve_into(L, F, out, y):
    """out = (L Lᵀ)⁻¹ F with the factor L of :func:`cholesky` (forward solution y: n, the caller's): one factor
    serves several right-hand sides, each solved with the arithmetic of :func:`spd_solve_into`."""
    n = L.shape[0]
    for i in range(n):
        s = F[i]
        for k in range(i):
            s -= L[i, k] * y[k]
        y[i] = s / L[i, i]
    for i in range(n - 1, -1, -1):
        s = y[i]
        for k in range(i + 1, n):
            s -= L[k, i] * out[k]
        out[i] = s / L[i, i]


@kernel
def spd_solve_columns(M, F, out):
    """out = M⁻¹ F column by column (F: n × k)."""
    n = F.shape[0]
    return spd_solve_columns_into(M, F, out, np.empty((n, n)))


@kernel(inline=True)
def cholesky_solve_columns_into(L, B, X, Y):
    """X = (L Lᵀ)⁻¹ B for the k columns of B (n × k) at once, with the factor L of :func:`cholesky` (Y: n × k, the
    caller's; it may be X itself: the solve is then in place). Each column gets the arithmetic of
    :func:`cholesky_solve_into`, in the same order, so the same floats; the columns' division chains are
    independent and overlap (one at a time, they wait on each other's divisions)."""
    n, k = B.shape
    for i in range(n):
        d = L[i, i]
        for j in range(k):
            s = B[i, j]
            for m in range(i):
                s -= L[i, m] * Y[m, j]
            Y[i, j] = s / d
    for i in range(n - 1, -1, -1):
        d = L[i, i]
        for j in range(k):
            s = Y[i, j]
            for m in range(i + 1, n):
                s -= L[m, i] * X[m, j]
            X[i, j] = s / d


@kernel(inline=True)
def spd_solve_columns_into(M, F, out, L):
    """:func:`spd_solve_columns` with its factor L (n × n) in the caller's workspace: M factored once, the columns
    solved together (:func:`cholesky_solve_columns_into`, in place in ``out``)."""
    if not cholesky(M, L):
        return False
    cholesky_solve_columns_into(L, F, out, out)
    return True


@kernel
def row_pinv(B, Bp):
    """Moore–Penrose inverse of one row B (1 × n) → Bp (n × 1), scaled; 0 at B = 0."""
    n = B.shape[1]
    scale = 0.0
    for j in range(n):
        scale = max(scale, abs(B[0, j]))
    if scale == 0.0:
        for j in range(n):
            Bp[j, 0] = 0.0
        return
    denom = 0.0
    for j in range(n):
        v = B[0, j] / scale
        denom += v * v
    denom *= scale
    for j in range(n):
        Bp[j, 0] = (B[0, j] / scale) / denom


@kernel
def _projector_trace(B, Bp):
    """tr(B Bp): the number of directions a pseudo-inverse Bp of B keeps."""
    s = 0.0
    for r in range(B.shape[0]):
        for k in range(B.shape[1]):
            s += B[r, k] * Bp[k, r]
    return s


@kernel
def full_rank_pinv(B, Bp):
    """Bp = B⁺ = Q R⁻ᵀ of a B (m × n) of full row rank, from Householder's QR of Bᵀ = Q R; True where it is B⁺
    with the relative cut-off's every direction kept, False (Bp meaningless) where that is not certain.

    The singular values of R are B's, so ``κ₂(B) ≤ ‖R‖_F ‖R⁻¹‖_F``: where that bound times the cut-off is below
    1/2, σ_min > 2 rcond σ_max and the SVD's pseudo-inverse (:func:`numpy.linalg.pinv`) keeps all m directions —
    the same matrix, to rounding, at a tenth of the cost (no SVD). m > n, a zero pivot or a larger bound: False.
    """
    m, n = B.shape
    if m > n:
        return False
    W = np.empty((n, m))  # Bᵀ: the reflectors' vectors go below the diagonal's column, R on and above it
    V = np.zeros((n, m))
    for i in range(n):
        for j in range(m):
            W[i, j] = B[j, i]
    for k in range(m):
        norm = 0.0
        for i in range(k, n):
            norm += W[i, k] * W[i, k]
        norm = math.sqrt(norm)
        if norm == 0.0:
            return False
        alpha = -norm if W[k, k] >= 0.0 else norm
        vv = 0.0
        for i in range(k, n):
            V[i, k] = W[i, k]
        V[k, k] -= alpha
        for i in range(k, n):
            vv += V[i, k] * V[i, k]
        vv = math.sqrt(vv)
        for i in range(k, n):
            V[i, k] /= vv
        for j in range(k, m):  # W[k:, j] −= 2 v (vᵀ W[k:, j])
            s = 0.0
            for i in range(k, n):
                s += V[i, k] * W[i, j]
            for i in range(k, n):
                W[i, j] -= 2.0 * V[i, k] * s
        W[k, k] = alpha
    Ri = np.zeros((m, m))  # R⁻¹, upper triangular
    fro_r = 0.0
    fro_ri = 0.0
    for j in range(m):
        Ri[j, j] = 1.0 / W[j, j]
        for i in range(j - 1, -1, -1):
            s = 0.0
            for k in range(i + 1, j + 1):
                s += W[i, k] * Ri[k, j]
            Ri[i, j] = -s / W[i, i]
        for i in range(j + 1):
            fro_r += W[i, j] * W[i, j]
            fro_ri += Ri[i, j] * Ri[i, j]
    if not math.sqrt(fro_r * fro_ri) * RCOND < 0.5:
        return False
    for i in range(n):  # Bp = Q [R⁻ᵀ; 0], Q = H₀ H₁ … H_{m−1}
        for j in range(m):
            Bp[i, j] = Ri[j, i] if i < m else 0.0
    for k in range(m - 1, -1, -1):
        for j in range(m):
            s = 0.0
            for i in range(k, n):
                s += V[i, k] * Bp[i, j]
            for i in range(k, n):
                Bp[i, j] -= 2.0 * V[i, k] * s
    return True


@kernel
def scale_free_pinv(B):
    """B⁺ with the relative cut-off, or ``(D B)⁺ D`` (D = diag(1/‖B_i‖)) where the cut-off dropped a direction
    that row normalization keeps — the twin of :func:`robustrack.mechanics._scale_free` (m ≥ 2). Rows of full
    rank well within the cut-off take :func:`full_rank_pinv`, the others the SVD."""
    m, n = B.shape
    Bp = np.empty((n, m))
    if full_rank_pinv(B, Bp):
        return Bp
    Bp = np.linalg.pinv(B, RCOND)
    kept = _projector_trace(B, Bp)
    if kept >= min(m, n) - 0.5:
        return Bp
    D = np.zeros(m)
    Bs = np.empty((m, n))
    for r in range(m):
        s = 0.0
        for k in range(n):
            s += B[r, k] * B[r, k]
        if s > 0.0:
            D[r] = 1.0 / math.sqrt(s)
        for k in range(n):
            Bs[r, k] = B[r, k] * D[r]
    Bn = np.linalg.pinv(Bs, RCOND)
    for k in range(n):
        for r in range(m):
            Bn[k, r] *= D[r]
    if _projector_trace(B, Bn) > kept + 0.5:
        return Bn
    return Bp


@kernel
def mat_mul(X, Y):
    """X Y of small dense matrices (plain loops: no BLAS call for a 3 × 3)."""
    out = np.zeros((X.shape[0], Y.shape[1]))
    for i in range(X.shape[0]):
        for j in range(Y.shape[1]):
            s = 0.0
            for k in range(X.shape[1]):
                s += X[i, k] * Y[k, j]
            out[i, j] = s
    return out


@kernel(inline=True)
def symmetric_part(W):
    """½ (W + Wᵀ) of a square W."""
    n = W.shape[0]
    out = np.empty((n, n))
    for i in range(n):
        for j in range(n):
            out[i, j] = 0.5 * (W[i, j] + W[j, i])
    return out


@kernel(inline=True)
def norm2(x):
    """Euclidean norm of the entries of x (1-D or 2-D)."""
    s = 0.0
    for v in x.ravel():
        s += v * v
    return math.sqrt(s)


@kernel
def lu_factor(A, LU, piv):
    """LU with partial pivoting of a small dense A (LU, piv written in place); False if singular."""
    n = A.shape[0]
    for i in range(n):
        for j in range(n):
            LU[i, j] = A[i, j]
    for k in range(n):
        p = k
        big = abs(LU[k, k])
        for i in range(k + 1, n):
            if abs(LU[i, k]) > big:
                big = abs(LU[i, k])
                p = i
        piv[k] = p
        if big == 0.0:
            return False
        if p != k:
            for j in range(n):
                tmp = LU[k, j]
                LU[k, j] = LU[p, j]
                LU[p, j] = tmp
        for i in range(k + 1, n):
            LU[i, k] /= LU[k, k]
            f = LU[i, k]
            for j in range(k + 1, n):
                LU[i, j] -= f * LU[k, j]
    return True


@kernel
def lu_solve(LU, piv, b, out):
    n = LU.shape[0]
    for i in range(n):
        out[i] = b[i]
    for k in range(n):
        p = piv[k]
        if p != k:
            tmp = out[k]
            out[k] = out[p]
            out[p] = tmp
    for i in range(n):
        s = out[i]
        for k in range(i):
            s -= LU[i, k] * out[k]
        out[i] = s
    for i in range(n - 1, -1, -1):
        s = out[i]
        for k in range(i + 1, n):
            s -= LU[i, k] * out[k]
        out[i] = s / LU[i, i]


@kernel
def fundamental(M, Q, A, b, qdd, Qc):
    """q̈ and Qᶜ of M q̈ = Q + Qᶜ, A q̈ = b (W 2.2.7–2.2.9, 4.3.8); False if not solvable."""
    return fundamental_into(M, Q, A, b, qdd, Qc, np.empty(fundamental_work_size(M.shape[0], A.shape[0])), 0)


@kernel(inline=True)
def fundamental_work_size(n, m):
    """The length of :func:`fundamental_into`'s scratch for n coordinates and m constraint rows."""
    return 3 * n * n + 4 * n + 2 * m * n + m


#: ``pinv(B, m, n, Bp)``: the C function writing :func:`scale_free_pinv` of B (m × n, m ≥ 2) to Bp (n × m),
#: pointers to C-contiguous float64 arrays (:func:`robustrack.compiled.motion.rows_pinv`).
PINV_FUNCTION = types.void(types.CPointer(types.float64), types.int64, types.int64, types.CPointer(types.float64))


@intrinsic
def _pinv_at(typingctx, address, B, Bp):
    """Bp = :func:`scale_free_pinv` of B by the C function at ``address`` (:data:`PINV_FUNCTION`); B (m × n) and
    Bp (n × m) C-contiguous float64 (refused at compile time otherwise)."""
    for arr in (B, Bp):
        if not (isinstance(arr, types.Array) and arr.ndim == 2 and arr.layout == "C" and arr.dtype == types.float64):
            return None

    def codegen(context, builder, signature, args):
        b = context.make_array(signature.args[1])(context, builder, args[1])
        bp = context.make_array(signature.args[2])(context, builder, args[2])
        m, n = cgutils.unpack_tuple(builder, b.shape, 2)
        fnty = ir.FunctionType(ir.VoidType(), [b.data.type, m.type, n.type, bp.data.type])
        builder.call(builder.inttoptr(args[0], fnty.as_pointer()), [b.data, m, n, bp.data])
        return context.get_dummy_value()

    return types.void(types.int64, B, Bp), codegen


def _fundamental_into(rows: bool):
    """:func:`fundamental_into`, or with ``rows`` False its variant that links no pseudo-inverse of two or more
    rows (numba drops the branch on the constant): for m ≥ 2 it calls the C function at ``pinv``
    (:data:`PINV_FUNCTION`, compiled only where a loop has two or more rows — LAPACK's SVD and the scale-free
    pseudo-inverse are ~3 s of a new machine's compile) and returns False where there is none (0). The
    constrained motion of the loops (:func:`robustrack.compiled.motion.motion`) is the variant."""

    @kernel(inline=True)
    def fundamental_into(M, Q, A, b, qdd, Qc, work, pinv):
        """:func:`fundamental` with its scratch in ``work`` (length :func:`fundamental_work_size`; m ≥ 2 still
        allocates the pseudo-inverse); ``pinv`` is read by the variant only."""
        n = M.shape[0]
        m = A.shape[0]
        L = matrix_view(work, 0, n, n)
        Li = matrix_view(work, n * n, n, n)
        Me = matrix_view(work, 2 * n * n, n, n)
        o = 3 * n * n
        Qe = work[o:o + n]
        v = work[o + n:o + 2 * n]
        a = work[o + 2 * n:o + 3 * n]
        w = work[o + 3 * n:o + 4 * n]
        o += 4 * n
        B = matrix_view(work, o, m, n)
        Bp = matrix_view(work, o + m * n, n, m)
        res = work[o + 2 * m * n:o + 2 * m * n + m]
        augmented = not definite_factor(M, L, Li)
        for i in range(n):
            Qe[i] = Q[i]
        if augmented:
            for i in range(n):
                for j in range(n):
                    Me[i, j] = M[i, j]
            for i in range(n):
                for j in range(n):
                    s = 0.0
                    for r in range(m):
                        s += A[r, i] * A[r, j]
                    Me[i, j] += s
                s = 0.0
                for r in range(m):
                    s += A[r, i] * b[r]
                Qe[i] += s
            if not cholesky(Me, L):
                return False
            lower_inverse(L, Li)
        # a = Liᵀ Li Q ; B = A Liᵀ
        for i in range(n):
            s = 0.0
            for k in range(i + 1):
                s += Li[i, k] * Qe[k]
            v[i] = s
        for i in range(n):
            s = 0.0
            for k in range(i, n):
                s += Li[k, i] * v[k]
            a[i] = s
        for i in range(n):
            w[i] = 0.0
        if m > 0:
            for r in range(m):
                for j in range(n):
                    s = 0.0
                    for k in range(j + 1):
                        s += A[r, k] * Li[j, k]
                    B[r, j] = s
            if m == 1:
                row_pinv(B, Bp)
            elif rows:
                Bp = scale_free_pinv(B)
            elif pinv == 0:
                return False
            else:
                _pinv_at(pinv, B, Bp)
            for r in range(m):
                s = 0.0
                for k in range(n):
                    s += A[r, k] * a[k]
                res[r] = b[r] - s
            for i in range(n):
                s = 0.0
                for r in range(m):
                    s += Bp[i, r] * res[r]
                w[i] = s
        for i in range(n):
            s = 0.0
            for k in range(i, n):
                s += Li[k, i] * w[k]
            qdd[i] = a[i] + s
        if augmented:
            for i in range(n):
                s = 0.0
                for k in range(n):
                    s += M[i, k] * qdd[k]
                Qc[i] = s - Q[i]
        else:
            for i in range(n):
                s = 0.0
                for k in range(i + 1):
                    s += L[i, k] * w[k]
                Qc[i] = s
        return True

    return fundamental_into


#: q̈ and Qᶜ with the caller's scratch, any number of constraint rows (:func:`_fundamental_into`).
fundamental_into = _fundamental_into(True)
#: The same with the pseudo-inverse of two or more rows a C function at an address (False for m ≥ 2 without one).
fundamental_into_row = _fundamental_into(False)
