"""Kernels of the compiled tracking loop: plain Python over float64 arrays.

This file is TEXT for :mod:`robustrack.tracking.compiled`: it is appended to the
functions generated from a plant's and a constraint's symbolic form (``nom_mass``,
``nom_force``, ``act_mass``, ``act_force``, their derivatives and ``con_ab``), every
top-level ``def`` is compiled with ``numba.njit(cache=True)``, and the result is one
cached module per (nominal, actual, constraint) structure. Read as Python it is the
same arithmetic as the numpy reference (:mod:`robustrack.tracking.rhs`), one state at
a time:

- :func:`fundamental` — the fundamental equation with a Cholesky factor
  (W 2.2.7–2.2.9; the augmented system W 4.3.8 where M is singular), as
  :func:`robustrack.mechanics.solve_constrained`;
- :func:`nominal_rhs` — ``M q̈ = Q + Qᶜ`` (W 5.2.9–5.2.11);
- :func:`controlled_rhs`, :func:`controlled_jac` — ``M_a q̈_c = Q_a + Qᶜ(t) + M(q_c) u``
  (W 5.2.17) driven by the nominal solution's dense output, and its exact Jacobian;
- :func:`uncompensated_rhs` — ``M_a q̈_a = Q_a + Qᶜ(t)`` (W 5.2.16);
- :func:`actuated`, :func:`actuator_parts`, :func:`actuator_jac` — with actuators B (``act``, k > 0
  columns; THEORY §8): the nominal force B τᶜ (Gauss's choice, realizability checked), the
  compensator's command τᵘ = W⁻¹Bᵀu and the saturation sat(τᶜ + τᵘ). Every kernel takes ``act``;
  with no columns (no actuators) these branches are skipped and the arithmetic is unchanged. With
  an invertible B (k = n) the forces B τᶜ = Qᶜ and B τᵘ = M u are computed as without actuators
  (the same bits) wherever no command saturates;
- :func:`comp_u` — the compensators' u and ∂u/∂(e, ė, z) (W 7.2.15, 8.2.26, 8.3.20),
  with the control functions g and g′ (W 7.3.1, 7.3.4).
"""

import math

import numpy as np

RCOND = 1e-12
# realizability of an actuated constraint force (robustrack.constraint_models.DEFAULT_REALIZABILITY_RCOND)
REALIZABILITY_RCOND = 1e-9
SQRT_EPS = 1.4901161193847656e-08

# compensator kinds (robustrack.tracking.compiled packs their parameters)
C_NONE, C_GSS, C_GD, C_GDBAR, C_LINEAR = 0, 1, 2, 3, 4
# control-function kinds
G_SIGN, G_SATURATION, G_TANH, G_POWER = 0, 1, 2, 3


# --------------------------------------------------------------------------- linear algebra
def cholesky(M, L):
    """Lower factor L of M = L Lᵀ in place; False if a pivot is not positive."""
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


def spd_solve(M, F, out):
    """out = M⁻¹ F for a symmetric positive definite M (Cholesky); False if M is not."""
    n = M.shape[0]
    return spd_solve_into(M, F, out, np.empty((n, n)), np.empty(n))


def spd_solve_into(M, F, out, L, y):
    """:func:`spd_solve` with its factor L (n × n) and forward solution y (n) in the caller's workspace."""
    n = M.shape[0]
    if not cholesky(M, L):
        return False
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
    return True


def spd_solve_columns(M, F, out):
    """out = M⁻¹ F column by column (F: n × k)."""
    n, k = F.shape
    col = np.empty(n)
    res = np.empty(n)
    for j in range(k):
        for i in range(n):
            col[i] = F[i, j]
        if not spd_solve(M, col, res):
            return False
        for i in range(n):
            out[i, j] = res[i]
    return True


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


# --------------------------------------------------------------------------- fundamental equation
def fundamental(M, Q, A, b, qdd, Qc):
    """q̈ and Qᶜ of M q̈ = Q + Qᶜ, A q̈ = b (W 2.2.7–2.2.9, 4.3.8); False if not solvable."""
    n = M.shape[0]
    m = A.shape[0]
    L = np.empty((n, n))
    Li = np.empty((n, n))
    augmented = True
    if cholesky(M, L):
        lower_inverse(L, Li)
        tr = 0.0
        fro = 0.0
        for i in range(n):
            tr += M[i, i]
            for j in range(n):
                fro += Li[i, j] * Li[i, j]
        augmented = not (tr * fro * RCOND < 1.0)
    Qe = Q.copy()
    if augmented:
        Me = M.copy()
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
    v = np.zeros(n)
    for i in range(n):
        s = 0.0
        for k in range(i + 1):
            s += Li[i, k] * Qe[k]
        v[i] = s
    a = np.zeros(n)
    for i in range(n):
        s = 0.0
        for k in range(i, n):
            s += Li[k, i] * v[k]
        a[i] = s
    w = np.zeros(n)
    if m > 0:
        B = np.zeros((m, n))
        for r in range(m):
            for j in range(n):
                s = 0.0
                for k in range(j + 1):
                    s += A[r, k] * Li[j, k]
                B[r, j] = s
        if m == 1:
            Bp = np.empty((n, 1))
            row_pinv(B, Bp)
        else:
            Bp = np.linalg.pinv(B, RCOND)
        res = np.empty(m)
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


def norm2(x):
    """Euclidean norm of the entries of x (1-D or 2-D)."""
    s = 0.0
    for v in x.ravel():
        s += v * v
    return math.sqrt(s)


def actuated(M, Q, A, b, act, qdd, Qc, tau):
    """q̈, the actuator force Qᶜ = B τᶜ and τᶜ of M q̈ = Q + B τᶜ, A q̈ = b (THEORY §8; Beghin, in K).

    act = [B; τ_max] ((n + 1) × k). τᶜ is Gauss's choice (robustrack.constraint_models.servo_force):
    with Y = M⁻¹B, W = BᵀY = L Lᵀ, C = A Y, r = b − A M⁻¹Q: τᶜ = L⁻ᵀ (C L⁻ᵀ)⁺ r. False where M or W
    is not positive definite or C lacks the rank of A (realizability margin below
    REALIZABILITY_RCOND, or r out of reach for dependent rows of A): no least-squares force.
    """
    n = M.shape[0]
    m = A.shape[0]
    k = act.shape[1]
    Bm = act[:n].copy()
    a = np.empty(n)
    if not spd_solve(M, Q, a):
        return False
    for j in range(k):
        tau[j] = 0.0
    if m > 0:
        Y = np.empty((n, k))
        if not spd_solve_columns(M, Bm, Y):
            return False
        W = mat_mul(Bm.T.copy(), Y)
        L = np.empty((k, k))
        if not cholesky(0.5 * (W + W.T), L):
            return False
        Li = np.empty((k, k))
        lower_inverse(L, Li)
        C = mat_mul(A, Y)
        r = b.copy()
        for i in range(m):
            for j in range(n):
                r[i] -= A[i, j] * a[j]
        Ch = mat_mul(C, Li.T.copy())
        if m == 1:
            Chp = np.empty((k, 1))
            row_pinv(Ch, Chp)
        else:
            Chp = np.linalg.pinv(Ch, RCOND)
        for i in range(k):  # τᶜ = Liᵀ Ĉ⁺ r
            s = 0.0
            for j in range(k):
                for l in range(m):
                    s += Li[j, i] * Chp[j, l] * r[l]
            tau[i] = s
        # realizability: σ_rank(A)(C) / (‖A‖₂ ‖Y‖₂) ≥ REALIZABILITY_RCOND (constraint_models.realizability_margin)
        sA = np.linalg.svd(A)[1] if m > 1 else np.array([norm2(A)])
        rank = 0
        for i in range(sA.shape[0]):
            if sA[i] > RCOND * sA[0]:
                rank += 1
        if rank > 0:
            sC = np.linalg.svd(C)[1] if m > 1 else np.array([norm2(C)])
            sY = np.linalg.svd(Y)[1][0] if k > 1 else norm2(Y)
            s_r = sC[rank - 1] if rank <= sC.shape[0] else 0.0
            if not s_r >= REALIZABILITY_RCOND * sA[0] * sY:
                return False
            if rank < m:  # dependent rows: r must be reachable
                gap = np.zeros(m)
                for i in range(m):
                    gap[i] = -r[i]
                    for j in range(k):
                        gap[i] += C[i, j] * tau[j]
                if not norm2(gap) <= SQRT_EPS * norm2(r):
                    return False
        else:  # A = 0: only b = 0 is reachable
            for i in range(m):
                if b[i] != 0.0:
                    return False
    F = Q.copy()
    for i in range(n):
        s = 0.0
        for j in range(k):
            s += Bm[i, j] * tau[j]
        Qc[i] = s
        F[i] += s
    return spd_solve(M, F, qdd)


def command_buffer(act):
    """A buffer for the k commands τ: without actuators a zero-length view of act (no allocation)."""
    if act.shape[1] == 0:
        return act[act.shape[0] - 1]
    return np.empty(act.shape[1])


def nominal_motion(q, qd, t, p, c, m, act, qdd, Qc, tau):
    """The nominal constrained motion at one state: q̈ and Qᶜ (Qᶜ = 0 without a constraint).

    With k < n actuators Qᶜ = B τᶜ and τᶜ (:func:`actuated`); with k = n (B invertible) Qᶜ is the
    fundamental equation's, as without actuators, and τᶜ = B⁻¹Qᶜ; without, tau (size 0) is untouched.
    """
    n = q.shape[0]
    M = np.empty((n, n))
    Q = np.empty(n)
    nom_mass(q, t, p, M)
    nom_force(q, qd, t, p, Q)
    A = np.zeros((m, n))
    b = np.zeros(m)
    if m > 0:
        con_ab(q, qd, t, c, A, b)
    k = act.shape[1]
    if 0 < k < n:
        return actuated(M, Q, A, b, act, qdd, Qc, tau)
    ok = fundamental(M, Q, A, b, qdd, Qc)
    if k == n:  # invertible B: every force is available, B τᶜ = Qᶜ (THEORY §8), τᶜ = B⁻¹Qᶜ
        LU = np.empty((n, n))
        piv = np.zeros(n, dtype=np.int64)
        ok = ok and lu_factor(act[:n], LU, piv)
        if ok:
            lu_solve(LU, piv, Qc, tau)
    return ok


def nominal_rhs(t, y, p, c, m, act):
    """dy/dt of the nominal system y = (q, q̇): NaN where the motion is not defined."""
    n = y.shape[0] // 2
    q = y[:n].copy()
    qd = y[n:].copy()
    qdd = np.empty(n)
    Qc = np.empty(n)
    tau = command_buffer(act)
    dy = np.empty(2 * n)
    ok = nominal_motion(q, qd, t, p, c, m, act, qdd, Qc, tau)
    for i in range(n):
        dy[i] = qd[i]
        dy[n + i] = qdd[i] if ok else np.nan
    return dy


# --------------------------------------------------------------------------- the nominal solution
def dense_eval(t, ts, yold, F, H, out):
    """The nominal solution at t from its DOP853 interpolants (scipy's Dop853DenseOutput)."""
    nseg = H.shape[0]
    k = np.searchsorted(ts, t, side="right") - 1
    if k < 0:
        k = 0
    if k > nseg - 1:
        k = nseg - 1
    x = (t - ts[k]) / H[k]
    d = out.shape[0]
    nf = F.shape[1]
    for j in range(d):
        out[j] = 0.0
    for i in range(nf):
        f = F[k, nf - 1 - i]
        factor = x if i % 2 == 0 else 1.0 - x
        for j in range(d):
            out[j] = (out[j] + f[j]) * factor
    for j in range(d):
        out[j] += yold[k, j]


def nominal_state(t, ts, yold, F, H, p, c, m, act):
    """(ok, q, q̇, Qᶜ, τᶜ) of the nominal solution at t, in fresh arrays (:func:`nominal_at`)."""
    n = yold.shape[1] // 2
    q = np.empty(n)
    qd = np.empty(n)
    Qc = np.empty(n)
    tau_c = command_buffer(act)
    ok = nominal_at(t, ts, yold, F, H, p, c, m, act, q, qd, Qc, tau_c)
    return ok, q, qd, Qc, tau_c


def nominal_at(t, ts, yold, F, H, p, c, m, act, q, qd, Qc, tau):
    """Nominal q, q̇ (dense output), Qᶜ and (with actuators) τᶜ at t; False where the motion is not defined."""
    n = q.shape[0]
    y = np.empty(2 * n)
    dense_eval(t, ts, yold, F, H, y)
    for i in range(n):
        q[i] = y[i]
        qd[i] = y[n + i]
    qdd = np.empty(n)
    return nominal_motion(q, qd, t, p, c, m, act, qdd, Qc, tau)


# --------------------------------------------------------------------------- control functions
def g_value(kind, x, a, pw):
    """g(x) of the built-in control functions (robustrack.controllers.functions)."""
    if kind == G_SIGN:
        return 1.0 if x > 0 else (-1.0 if x < 0 else 0.0)
    if kind == G_SATURATION:
        return min(max(x, -1.0), 1.0)
    if kind == G_TANH:
        return math.tanh(x)
    if pw == 2.0:
        return a * x * abs(x)
    if pw == 3.0:
        return a * x * x * x
    sgn = 1.0 if x > 0 else (-1.0 if x < 0 else 0.0)
    return a * sgn * abs(x) ** pw


def g_slope(kind, x, a, pw):
    """g′(x) (0 at the kinks of sign and saturation, as their one-sided limits from inside)."""
    if kind == G_SIGN:
        return 0.0
    if kind == G_SATURATION:
        return 1.0 if abs(x) < 1.0 else 0.0
    if kind == G_TANH:
        th = math.tanh(x)
        return 1.0 - th * th
    if pw == 2.0:
        return 2.0 * a * abs(x)
    if pw == 3.0:
        return 3.0 * a * x * x
    return a * pw * abs(x) ** (pw - 1.0)


# --------------------------------------------------------------------------- compensators
def comp_u(kind, gk, cp, e, ed, z, u, Ue, Ued, Uz):
    """u(e, ė, z) and its partial derivatives (n × n, n × n, n × nz) for the built-in laws.

    cp: GSS [σβ, ε, α_c, p, K_1..K_n]; GD [σρ, ε, α_c, p, K_i, K_d]; GD-bar
    [σ, ε, α_c, p, k, 4n−4]; linear [K (n × 2n) row-major] (computed torque, LQR).
    """
    n = e.shape[0]
    for i in range(n):
        u[i] = 0.0
        for j in range(n):
            Ue[i, j] = 0.0
            Ued[i, j] = 0.0
        for j in range(Uz.shape[1]):
            Uz[i, j] = 0.0
    if kind == C_NONE:
        return
    if kind == C_LINEAR:
        for i in range(n):
            s = 0.0
            for j in range(n):
                s += cp[i * 2 * n + j] * e[j]
            for j in range(n):
                s += cp[i * 2 * n + n + j] * ed[j]
            u[i] = -s
            for j in range(n):
                Ue[i, j] = -cp[i * 2 * n + j]
                Ued[i, j] = -cp[i * 2 * n + n + j]
        return
    gain, eps, a, pw = cp[0], cp[1], cp[2], cp[3]
    if kind == C_GSS:
        for i in range(n):
            K = cp[4 + i]
            x = (K * e[i] + ed[i]) / eps
            u[i] = -K * ed[i] - gain * g_value(gk, x, a, pw)
            slope = gain * g_slope(gk, x, a, pw) / eps
            Ue[i, i] = -slope * K
            Ued[i, i] = -K - slope
        return
    if kind == C_GD:
        Ki, Kd = cp[4], cp[5]
        for i in range(n):
            x = ed[i] / eps
            u[i] = -(e[i] + Ki * z[i] + Kd * ed[i]) - gain * g_value(gk, x, a, pw)
            Ue[i, i] = -1.0
            Uz[i, i] = -Ki
            Ued[i, i] = -Kd - gain * g_slope(gk, x, a, pw) / eps
        return
    # GD-bar: u = −(e + k ‖ė‖∞^P ė + σ g(ė/ε))
    k, P = cp[4], cp[5]
    norm = 0.0
    jmax = 0
    for j in range(n):
        if abs(ed[j]) > norm:
            norm = abs(ed[j])
            jmax = j
    scale = norm ** P if P != 0.0 else 1.0
    for i in range(n):
        x = ed[i] / eps
        u[i] = -(e[i] + k * ed[i] * scale + gain * g_value(gk, x, a, pw))
        Ue[i, i] = -1.0
        Ued[i, i] = -k * scale - gain * g_slope(gk, x, a, pw) / eps
        if P != 0.0 and norm > 0.0:
            sgn = 1.0 if ed[jmax] > 0 else -1.0
            Ued[i, jmax] -= k * ed[i] * P * norm ** (P - 1.0) * sgn


# --------------------------------------------------------------------------- actuators
def actuator_parts(Mn, act, tau_c, u):
    """(ok, Y = Mn⁻¹B, H = W⁻¹Bᵀ, Gm = W⁻¹Yᵀ, τᵘ = H u, τ = sat(τᶜ + τᵘ), free) with W = BᵀY (THEORY §8).

    τᵘ makes B τᵘ the M-weighted closest force to Qᵘ = M u; free[a] is 1.0 where actuator a is
    inside its limit, 0.0 where it saturates (there τ_a = ±τ_max,a).
    """
    n = Mn.shape[0]
    k = act.shape[1]
    Bm = act[:n].copy()
    Bt = Bm.T.copy()
    Y = np.empty((n, k))
    H = np.empty((k, n))
    Gm = np.empty((k, n))
    tu = np.zeros(k)
    tau = np.zeros(k)
    free = np.ones(k)
    if not spd_solve_columns(Mn, Bm, Y):
        return False, Y, H, Gm, tu, tau, free
    W = mat_mul(Bt, Y)
    W = 0.5 * (W + W.T)
    if not (spd_solve_columns(W, Bt, H) and spd_solve_columns(W, Y.T.copy(), Gm)):
        return False, Y, H, Gm, tu, tau, free
    for a in range(k):
        s = 0.0
        for j in range(n):
            s += H[a, j] * u[j]
        tu[a] = s
        v = tau_c[a] + s
        lim = act[n, a]
        if v > lim:
            v = lim
            free[a] = 0.0
        elif v < -lim:
            v = -lim
            free[a] = 0.0
        tau[a] = v
    return True, Y, H, Gm, tu, tau, free


def actuator_jac(Mn, Dn, act, tau_c, u, Ue, Ued, Uz, R):
    """R += ∂(B τ)/∂(q_c, q̇_c, z) of :func:`actuator_parts` (n × (2n + nz)).

    ∂τᵘ/∂q_k = W⁻¹Yᵀ (∂M/∂q_k) Y τᵘ + W⁻¹Bᵀ ∂u/∂q_k (from ∂W = −Yᵀ ∂M Y); saturated actuators
    contribute nothing.
    """
    n = Mn.shape[0]
    k = act.shape[1]
    nz = Uz.shape[1]
    ok, Y, H, Gm, tu, tau, free = actuator_parts(Mn, act, tau_c, u)
    v = np.zeros(n)
    for i in range(n):
        for a in range(k):
            v[i] += Y[i, a] * tu[a]
    dtau = np.zeros((k, 2 * n + nz))
    w = np.empty(n)
    for col in range(n):
        for i in range(n):
            s = 0.0
            for j in range(n):
                s += Dn[col, i, j] * v[j]
            w[i] = s
        for a in range(k):
            s = 0.0
            for j in range(n):
                s += Gm[a, j] * w[j] + H[a, j] * Ue[j, col]
            dtau[a, col] = s
            s = 0.0
            for j in range(n):
                s += H[a, j] * Ued[j, col]
            dtau[a, n + col] = s
    for col in range(nz):
        for a in range(k):
            s = 0.0
            for j in range(n):
                s += H[a, j] * Uz[j, col]
            dtau[a, 2 * n + col] = s
    for i in range(n):
        for col in range(2 * n + nz):
            s = 0.0
            for a in range(k):
                s += act[i, a] * free[a] * dtau[a, col]
            R[i, col] += s


# --------------------------------------------------------------------------- the controlled actual system
def nominal_cache(n, k):
    """A one-entry cache of the nominal side, [t, ok, q (n), q̇ (n), Qᶜ (n), τᶜ (k)]: empty (t = NaN) at first."""
    nw = np.empty(2 + 3 * n + k)
    nw[0] = np.nan
    return nw


def nominal_cached(t, ts, yold, F, H, pn, c, m, act, nw):
    """:func:`nominal_at` through the cache ``nw``: the Newton iterations and the Jacobian of a BDF step
    all ask for the same t, so the nominal solution and its fundamental equation are evaluated once."""
    n = yold.shape[1] // 2
    if nw[0] != t:  # also when nw[0] is NaN (empty)
        ok = nominal_at(t, ts, yold, F, H, pn, c, m, act, nw[2:2 + n], nw[2 + n:2 + 2 * n], nw[2 + 2 * n:2 + 3 * n],
                        nw[2 + 3 * n:])
        nw[0] = t
        nw[1] = 1.0 if ok else 0.0
    return nw[1] != 0.0


def controlled_workspace(n, nz, k):
    """Scratch arrays of :func:`controlled_eval`: the nominal cache, vectors, n × n matrices, ∂u/∂z."""
    return nominal_cache(n, k), np.empty((5, n)), np.empty((5, n, n)), np.empty((n, nz))


def controlled_eval(t, x, ts, yold, F, H, pn, pa, c, m, act, kind, gk, cp, uh, held, jac, nw, wv, wm, wz, dx, J):
    """The controlled system at (t, x): writes dx = d/dt (q_c, q̇_c, z) and, if ``jac``, its exact Jacobian J.

    Without actuators (act has no columns) the force is Qᶜ(t) + M(q_c) u (W 5.2.17); with them
    B sat(τᶜ(t) + τᵘ) (:func:`actuator_parts`). ``nw, wv, wm, wz`` are a :func:`controlled_workspace`;
    without actuators the right-hand side allocates nothing: the integrators call it millions of times.
    """
    n = yold.shape[1] // 2
    nz = x.shape[0] - 2 * n
    na = act.shape[1]
    ok = nominal_cached(t, ts, yold, F, H, pn, c, m, act, nw)
    q = nw[2:2 + n]
    qd = nw[2 + n:2 + 2 * n]
    Qc = nw[2 + 2 * n:2 + 3 * n]
    tau_c = nw[2 + 3 * n:]
    qc = x[:n]
    qcd = x[n:2 * n]
    e = wv[0]
    ed = wv[1]
    u = wv[2]
    Fa = wv[3]
    acc = wv[4]
    Ue = wm[0]
    Ued = wm[1]
    Mn = wm[2]
    Ma = wm[3]
    L = wm[4]
    Uz = wz
    for i in range(n):
        e[i] = qc[i] - q[i]
        ed[i] = qcd[i] - qd[i]
    comp_u(kind, gk, cp, e, ed, x[2 * n:], u, Ue, Ued, Uz)
    if held:
        for i in range(n):
            u[i] = uh[i]
        Ue[:, :] = 0.0
        Ued[:, :] = 0.0
        Uz[:, :] = 0.0
    nom_mass(qc, t, pn, Mn)
    act_mass(qc, t, pa, Ma)
    act_force(qc, qcd, t, pa, Fa)
    exact = na == 0
    if na > 0:
        fine, _, _, _, _, tau, free = actuator_parts(Mn, act, tau_c, u)
        ok = ok and fine
        # invertible B, no actuator saturated: B τ = Qᶜ + M u exactly, computed as without B
        exact = na == n and np.all(free == 1.0)
        if not exact:
            for i in range(n):
                s = 0.0
                for a in range(na):
                    s += act[i, a] * tau[a]
                Fa[i] += s
    if exact:
        for i in range(n):
            s = 0.0
            for k in range(n):
                s += Mn[i, k] * u[k]
            Fa[i] += Qc[i] + s
    # the forward solution of M_a acc = F goes to e, no longer needed
    ok = ok and spd_solve_into(Ma, Fa, acc, L, e)
    for i in range(n):
        dx[i] = qcd[i]
        dx[n + i] = acc[i] if ok else np.nan
    if kind == C_GD:
        for i in range(nz):
            dx[2 * n + i] = qc[i] - q[i]
    else:
        for i in range(nz):
            dx[2 * n + i] = 0.0
    if not jac:
        return
    J[:, :] = 0.0
    if not ok:
        J[:, :] = np.nan
        return
    Da = np.empty((n, n, n))
    act_mass_dq(qc, t, pa, Da)
    Dn = np.empty((n, n, n))
    nom_mass_dq(qc, t, pn, Dn)
    Gq = np.empty((n, n))
    act_force_dq(qc, qcd, t, pa, Gq)
    Gqd = np.empty((n, n))
    act_force_dqd(qc, qcd, t, pa, Gqd)
    # ∂F/∂x − (∂M_a/∂x) q̈, then M_a⁻¹ of it
    R = np.zeros((n, 2 * n + nz))
    if exact:
        for i in range(n):
            for k in range(n):
                s = Gq[i, k]
                for j in range(n):
                    s += Dn[k, i, j] * u[j] + Mn[i, j] * Ue[j, k] - Da[k, i, j] * acc[j]
                R[i, k] = s
                s = Gqd[i, k]
                for j in range(n):
                    s += Mn[i, j] * Ued[j, k]
                R[i, n + k] = s
            for k in range(nz):
                s = 0.0
                for j in range(n):
                    s += Mn[i, j] * Uz[j, k]
                R[i, 2 * n + k] = s
    else:
        for i in range(n):
            for k in range(n):
                s = Gq[i, k]
                for j in range(n):
                    s -= Da[k, i, j] * acc[j]
                R[i, k] = s
                R[i, n + k] = Gqd[i, k]
        actuator_jac(Mn, Dn, act, tau_c, u, Ue, Ued, Uz, R)
    S = np.empty((n, 2 * n + nz))
    spd_solve_columns(Ma, R, S)
    for i in range(n):
        J[i, n + i] = 1.0
        for k in range(2 * n + nz):
            J[n + i, k] = S[i, k]
    if kind == C_GD:
        for i in range(nz):
            J[2 * n + i, i] = 1.0


def controlled_rhs(t, x, ts, yold, F, H, pn, pa, c, m, act, kind, gk, cp, uh, held):
    """d/dt (q_c, q̇_c, z) of the controlled actual system (W 5.2.17)."""
    n = yold.shape[1] // 2
    nw, wv, wm, wz = controlled_workspace(n, x.shape[0] - 2 * n, act.shape[1])
    dx = np.empty(x.shape[0])
    controlled_eval(t, x, ts, yold, F, H, pn, pa, c, m, act, kind, gk, cp, uh, held, False, nw, wv, wm, wz, dx,
                    np.empty((0, 0)))
    return dx


def controlled_jac(t, x, ts, yold, F, H, pn, pa, c, m, act, kind, gk, cp, uh, held):
    """The exact Jacobian of :func:`controlled_rhs` with respect to (q_c, q̇_c, z)."""
    n = yold.shape[1] // 2
    d = x.shape[0]
    nw, wv, wm, wz = controlled_workspace(n, d - 2 * n, act.shape[1])
    J = np.empty((d, d))
    controlled_eval(t, x, ts, yold, F, H, pn, pa, c, m, act, kind, gk, cp, uh, held, True, nw, wv, wm, wz,
                    np.empty(d), J)
    return J


# --------------------------------------------------------------------------- the uncompensated copy
def uncompensated_rhs(t, x, ts, yold, F, H, pn, pa, c, m, act):
    """d/dt (q_a, q̇_a) of the actual system under Qᶜ(t) alone (W 5.2.16); with actuators B sat(τᶜ(t))."""
    n = x.shape[0] // 2
    na = act.shape[1]
    ok, q, qd, Qc, tau_c = nominal_state(t, ts, yold, F, H, pn, c, m, act)
    qa = x[:n].copy()
    qad = x[n:].copy()
    Ma = np.empty((n, n))
    act_mass(qa, t, pa, Ma)
    Fa = np.empty(n)
    act_force(qa, qad, t, pa, Fa)
    exact = na == 0 or na == n  # B invertible: B sat(τᶜ) = Qᶜ where no command saturates
    for a in range(na):
        if abs(tau_c[a]) > act[n, a]:
            exact = False
    if exact:
        for i in range(n):
            Fa[i] += Qc[i]
    else:
        for a in range(na):
            v = min(max(tau_c[a], -act[n, a]), act[n, a])
            for i in range(n):
                Fa[i] += act[i, a] * v
    acc = np.empty(n)
    ok = ok and spd_solve(Ma, Fa, acc)
    dx = np.empty(2 * n)
    for i in range(n):
        dx[i] = qad[i]
        dx[n + i] = acc[i] if ok else np.nan
    return dx


# --------------------------------------------------------------------------- sampled (zero-order-hold) control
# Dormand–Prince 5(4), the tableau of scipy's RK45: within a hold interval u is constant
# and the controlled system is not stiff, so an explicit method with error control runs
# the whole horizon inside one compiled call.
DP_C = np.array([0.0, 1 / 5, 3 / 10, 4 / 5, 8 / 9, 1.0])
DP_A = np.array([
    [0.0, 0.0, 0.0, 0.0, 0.0],
    [1 / 5, 0.0, 0.0, 0.0, 0.0],
    [3 / 40, 9 / 40, 0.0, 0.0, 0.0],
    [44 / 45, -56 / 15, 32 / 9, 0.0, 0.0],
    [19372 / 6561, -25360 / 2187, 64448 / 6561, -212 / 729, 0.0],
    [9017 / 3168, -355 / 33, 46732 / 5247, 49 / 176, -5103 / 18656],
])
DP_B = np.array([35 / 384, 0.0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84])
DP_E = np.array([-71 / 57600, 0.0, 71 / 16695, -71 / 1920, 17253 / 339200, -22 / 525, 1 / 40])


def sampled_run(x0, edges, t_out, rtol, atol, ts, yold, F, H, pn, pa, c, m, act, kind, gk, cp):
    """The controlled system under a zero-order hold: u computed at each edge, held to the next.

    Returns (X_out at t_out, U held per interval, X at every edge, number of right-hand
    sides, index of the interval where it failed or -1). t_out must lie in [edges[0], edges[-1]].
    """
    d = x0.shape[0]
    n = yold.shape[1] // 2
    nz = d - 2 * n
    nint = edges.shape[0] - 1
    X_out = np.full((t_out.shape[0], d), np.nan)
    U = np.full((nint, n), np.nan)
    X_edges = np.full((nint + 1, d), np.nan)
    x = x0.copy()
    X_edges[0] = x
    j = 0
    while j < t_out.shape[0] and t_out[j] <= edges[0]:
        X_out[j] = x
        j += 1
    q = np.empty(n)
    qd = np.empty(n)
    Qc = np.empty(n)
    tau_c = command_buffer(act)
    u = np.empty(n)
    Ue = np.empty((n, n))
    Ued = np.empty((n, n))
    Uz = np.empty((n, nz))
    K = np.empty((7, d))
    nw, wv, wm, wz = controlled_workspace(n, nz, act.shape[1])
    no_jac = np.empty((0, 0))
    nfev = 0
    h = 0.0
    for k in range(nint):
        a = edges[k]
        b = edges[k + 1]
        nominal_at(a, ts, yold, F, H, pn, c, m, act, q, qd, Qc, tau_c)
        comp_u(kind, gk, cp, x[:n] - q, x[n:2 * n] - qd, x[2 * n:].copy(), u, Ue, Ued, Uz)
        for i in range(n):
            U[k, i] = u[i]
        t = a
        if h <= 0.0 or h > b - a:
            h = b - a
        controlled_eval(t, x, ts, yold, F, H, pn, pa, c, m, act, kind, gk, cp, u, True, False, nw, wv, wm, wz, K[0],
                        no_jac)
        nfev += 1
        while t < b:
            stop = b
            if j < t_out.shape[0] and t_out[j] < b:
                stop = t_out[j]
            step = min(h, stop - t)
            last = step >= stop - t
            while True:
                for s in range(1, 6):
                    xs = x.copy()
                    for r in range(s):
                        xs += step * DP_A[s, r] * K[r]
                    controlled_eval(t + DP_C[s] * step, xs, ts, yold, F, H, pn, pa, c, m, act, kind, gk, cp, u,
                                    True, False, nw, wv, wm, wz, K[s], no_jac)
                xn = x.copy()
                for r in range(6):
                    xn += step * DP_B[r] * K[r]
                tn = stop if last else t + step
                controlled_eval(tn, xn, ts, yold, F, H, pn, pa, c, m, act, kind, gk, cp, u, True, False, nw, wv, wm,
                                wz, K[6], no_jac)
                nfev += 6
                err = 0.0
                for i in range(d):
                    e_i = 0.0
                    for r in range(7):
                        e_i += DP_E[r] * K[r, i]
                    sc = atol + rtol * max(abs(x[i]), abs(xn[i]))
                    err += (step * e_i / sc) ** 2
                err = math.sqrt(err / d)
                if not err == err:  # NaN: the motion is not defined here
                    return X_out, U, X_edges, nfev, k
                if err <= 1.0:
                    factor = 10.0 if err == 0.0 else min(10.0, 0.9 * err ** -0.2)
                    if not last:
                        h = step * factor
                    else:
                        h = max(h, step * factor) if step < h else step * factor
                    t = tn
                    x = xn
                    K[0] = K[6]
                    break
                step = step * max(0.2, 0.9 * err ** -0.2)
                last = False
                if step < 1e-14 * max(1.0, abs(t)):
                    return X_out, U, X_edges, nfev, k
            while j < t_out.shape[0] and t_out[j] <= t:
                X_out[j] = x
                j += 1
        X_edges[k + 1] = x
    return X_out, U, X_edges, nfev, -1


# --------------------------------------------------------------------------- continuous control: BDF
# A port of scipy's BDF (scipy/integrate/_ivp/bdf.py: variable order 1–5, quasi-constant step
# size, NDF error constants, Newton with the Jacobian reused until it fails to converge) that
# runs the whole horizon in one compiled call, with the exact Jacobian of controlled_jac.
BDF_MAX_ORDER = 5
BDF_NEWTON_MAXITER = 4
BDF_KAPPA = np.array([0.0, -0.1850, -1 / 9, -0.0823, -0.0415, 0.0])
BDF_GAMMA = np.array([0.0, 1.0, 1.5, 11 / 6, 25 / 12, 137 / 60])
BDF_ALPHA = (1.0 - BDF_KAPPA) * BDF_GAMMA
BDF_ERROR_CONST = BDF_KAPPA * BDF_GAMMA + 1.0 / np.arange(1, BDF_MAX_ORDER + 2)


def rms_norm(x):
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i] * x[i]
    return math.sqrt(s / x.shape[0])


def bdf_compute_R(order, factor):
    M = np.zeros((order + 1, order + 1))
    for j in range(order + 1):
        M[0, j] = 1.0
    for i in range(1, order + 1):
        for j in range(1, order + 1):
            M[i, j] = (i - 1 - factor * j) / i
    for i in range(1, order + 1):
        for j in range(order + 1):
            M[i, j] *= M[i - 1, j]
    return M


def bdf_change_D(D, order, factor):
    R = bdf_compute_R(order, factor)
    U = bdf_compute_R(order, 1.0)
    RU = R @ U
    k = order + 1
    new = RU.T @ D[:k]
    for i in range(k):
        D[i] = new[i]


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


def initial_guess(y, f, length, rtol, atol):
    """First half of scipy's select_initial_step: the trial step h0 and the norms it needs."""
    scale = atol + np.abs(y) * rtol
    d0 = rms_norm(y / scale)
    d1 = rms_norm(f / scale)
    h0 = 1e-6 if (d0 < 1e-5 or d1 < 1e-5) else 0.01 * d0 / d1
    return min(h0, length), scale, d1


def initial_step(f, f1, h0, scale, d1, length, order):
    """Second half of scipy's select_initial_step, from f at y and f1 at y + h0 f (error order ``order``)."""
    d2 = rms_norm((f1 - f) / scale) / h0
    if d1 <= 1e-15 and d2 <= 1e-15:
        h1 = max(1e-6, h0 * 1e-3)
    else:
        h1 = (0.01 / max(d1, d2)) ** (1.0 / (order + 1))
    return min(100 * h0, h1, length)


def record(T, X, ns, t, x):
    """Append (t, x) to the growable step record (T, X) holding ns rows; returns (T, X, ns + 1)."""
    if ns == T.shape[0]:
        T2 = np.empty(2 * ns)
        X2 = np.empty((2 * ns, X.shape[1]))
        T2[:ns] = T[:ns]
        X2[:ns] = X[:ns]
        T = T2
        X = X2
    T[ns] = t
    X[ns] = x
    return T, X, ns + 1


def bdf_init(x0, t0, t1, rtol, atol, ts, yold, F, H, pn, pa, c, m, act, kind, gk, cp):
    """Start scipy's BDF at (t0, x0): returns (D, J, info) for :func:`bdf_advance`.

    info = [t, h_abs, order, n_equal_steps, nfev, njev, nlu, have_lu] (floats); LU, piv hold the
    factorization of I − c J that the steps reuse (carried between calls, so pieces step as one call).
    """
    d = x0.shape[0]
    uh = np.zeros(yold.shape[1] // 2)
    y = x0.copy()
    f = controlled_rhs(t0, y, ts, yold, F, H, pn, pa, c, m, act, kind, gk, cp, uh, False)
    h0, scale, d1 = initial_guess(y, f, t1 - t0, rtol, atol)  # scipy's select_initial_step, error order 1
    f1 = controlled_rhs(t0 + h0, y + h0 * f, ts, yold, F, H, pn, pa, c, m, act, kind, gk, cp, uh, False)
    h_abs = initial_step(f, f1, h0, scale, d1, t1 - t0, 1)
    J = controlled_jac(t0, y, ts, yold, F, H, pn, pa, c, m, act, kind, gk, cp, uh, False)
    D = np.zeros((BDF_MAX_ORDER + 3, d))
    D[0] = y
    D[1] = f * h_abs
    info = np.array([t0, h_abs, 1.0, 0.0, 2.0, 1.0, 0.0, 0.0])
    return D, J, info, np.empty((d, d)), np.zeros(d, dtype=np.int64)


def bdf_advance(D, J, info, LU, piv, t1, t_stop, t_out, rtol, atol, ts, yold, F, H, pn, pa, c, m, act, kind, gk, cp):
    """scipy's BDF from the state (D, J, info) until t >= t_stop (or t1): the controlled system.

    Steps are never clipped at t_stop, so advancing in pieces gives the same steps as one
    call. Returns (X_out at t_out (NaN where not reached), step times, step states,
    J, status): status 0 while stepping succeeds, 1 when the step fell below its minimum.
    D and info are updated in place.
    """
    d = D.shape[1]
    uh = np.zeros(yold.shape[1] // 2)
    nfev = int(info[4])
    njev = int(info[5])
    nlu = int(info[6])
    newton_tol = max(10.0 * 2.220446049250313e-16 / rtol, min(0.03, math.sqrt(rtol)))
    X_out = np.full((t_out.shape[0], d), np.nan)
    cap = 1024
    T_steps = np.empty(cap)
    X_steps = np.empty((cap, d))
    ns = 0
    j = 0
    t = info[0]
    h_abs = info[1]
    order = int(info[2])
    n_equal_steps = int(info[3])
    y = D[0].copy()
    while j < t_out.shape[0] and t_out[j] <= t:
        j += 1
    have_lu = info[7] != 0.0
    A = np.empty((d, d))
    dy = np.empty(d)
    fk = np.empty(d)
    nw, wv, wm, wz = controlled_workspace(yold.shape[1] // 2, d - yold.shape[1], act.shape[1])
    no_jac = np.empty((0, 0))
    status = 0
    while t < t1 and t < t_stop:
        min_step = 10.0 * abs(np.nextafter(t, np.inf) - t)
        if h_abs < min_step:
            bdf_change_D(D, order, min_step / h_abs)
            h_abs = min_step
            n_equal_steps = 0
        current_jac = False
        accepted = False
        y_new = y.copy()
        dsum = np.zeros(d)
        n_iter = 0
        error_norm = 0.0
        t_new = t
        while not accepted:
            if h_abs < min_step:
                status = 1
                break
            t_new = t + h_abs
            if t_new > t1:
                t_new = t1
                bdf_change_D(D, order, (t_new - t) / h_abs)
                n_equal_steps = 0
                have_lu = False
            h = t_new - t
            h_abs = h
            y_predict = np.zeros(d)
            for i in range(order + 1):
                y_predict += D[i]
            scale = atol + rtol * np.abs(y_predict)
            psi = np.zeros(d)
            for i in range(1, order + 1):
                psi += D[i] * BDF_GAMMA[i]
            psi /= BDF_ALPHA[order]
            converged = False
            cc = h / BDF_ALPHA[order]
            while not converged:
                if not have_lu:
                    for a in range(d):
                        for b in range(d):
                            A[a, b] = (1.0 if a == b else 0.0) - cc * J[a, b]
                    nlu += 1
                    if not lu_factor(A, LU, piv):
                        break
                    have_lu = True
                # Newton iterations (scipy's solve_bdf_system)
                y_new = y_predict.copy()
                dsum = np.zeros(d)
                dy_norm_old = -1.0
                converged = False
                n_iter = 0
                for k in range(BDF_NEWTON_MAXITER):
                    n_iter = k + 1
                    controlled_eval(t_new, y_new, ts, yold, F, H, pn, pa, c, m, act, kind, gk, cp, uh, False, False,
                                    nw, wv, wm, wz, fk, no_jac)
                    nfev += 1
                    finite = True
                    for i in range(d):
                        if not math.isfinite(fk[i]):
                            finite = False
                    if not finite:
                        break
                    lu_solve(LU, piv, cc * fk - psi - dsum, dy)
                    dy_norm = rms_norm(dy / scale)
                    rate = -1.0
                    if dy_norm_old >= 0.0:
                        rate = dy_norm / dy_norm_old
                    if rate >= 0.0 and (rate >= 1.0 or rate ** (BDF_NEWTON_MAXITER - k) / (1.0 - rate) * dy_norm
                                        > newton_tol):
                        break
                    y_new += dy
                    dsum += dy
                    if dy_norm == 0.0 or (rate >= 0.0 and rate / (1.0 - rate) * dy_norm < newton_tol):
                        converged = True
                        break
                    dy_norm_old = dy_norm
                if not converged:
                    if current_jac:
                        break
                    J = np.empty((d, d))
                    controlled_eval(t_new, y_predict, ts, yold, F, H, pn, pa, c, m, act, kind, gk, cp, uh, False, True,
                                    nw, wv, wm, wz, dy, J)
                    njev += 1
                    have_lu = False
                    current_jac = True
            if not converged:
                h_abs *= 0.5
                bdf_change_D(D, order, 0.5)
                n_equal_steps = 0
                have_lu = False
                continue
            safety = 0.9 * (2 * BDF_NEWTON_MAXITER + 1) / (2 * BDF_NEWTON_MAXITER + n_iter)
            scale = atol + rtol * np.abs(y_new)
            error_norm = rms_norm(BDF_ERROR_CONST[order] * dsum / scale)
            if error_norm > 1.0:
                factor = max(0.2, safety * error_norm ** (-1.0 / (order + 1)))
                h_abs *= factor
                bdf_change_D(D, order, factor)
                n_equal_steps = 0
            else:
                accepted = True
        if status == 1:
            break
        n_equal_steps += 1
        t = t_new
        y = y_new
        D[order + 2] = dsum - D[order + 1]
        D[order + 1] = dsum
        for i in range(order, -1, -1):
            D[i] += D[i + 1]
        if n_equal_steps >= order + 1:
            error_m_norm = np.inf
            if order > 1:
                error_m_norm = rms_norm(BDF_ERROR_CONST[order - 1] * D[order] / scale)
            error_p_norm = np.inf
            if order < BDF_MAX_ORDER:
                error_p_norm = rms_norm(BDF_ERROR_CONST[order + 1] * D[order + 2] / scale)
            best = -1
            best_factor = -1.0
            norms = (error_m_norm, error_norm, error_p_norm)
            for i in range(3):
                fac = np.inf if norms[i] == 0.0 else norms[i] ** (-1.0 / (order + i))
                if fac > best_factor:
                    best_factor = fac
                    best = i
            order += best - 1
            factor = min(10.0, safety * best_factor)
            h_abs *= factor
            bdf_change_D(D, order, factor)
            n_equal_steps = 0
            have_lu = False
        # record the step and the output times it passed (scipy's BdfDenseOutput)
        T_steps, X_steps, ns = record(T_steps, X_steps, ns, t, y)
        while j < t_out.shape[0] and t_out[j] <= t:
            if t_out[j] == t:
                X_out[j] = y
            else:
                hh = h_abs
                val = D[0].copy()
                p = 1.0
                for i in range(order):
                    p *= (t_out[j] - (t - hh * i)) / (hh * (1 + i))
                    val += D[i + 1] * p
                X_out[j] = val
            j += 1
    info[0] = t
    info[1] = h_abs
    info[2] = order
    info[3] = n_equal_steps
    info[4] = nfev
    info[5] = njev
    info[6] = nlu
    info[7] = 1.0 if have_lu else 0.0
    return X_out, T_steps[:ns].copy(), X_steps[:ns].copy(), J, status


# --------------------------------------------------------------------------- the nominal and uncompensated systems: DOP853
# A port of scipy's DOP853 (scipy/integrate/_ivp/rk.py: same tableau, error norm, step control
# and 7th-order dense output), so the whole horizon is one compiled call.
from scipy.integrate._ivp import dop853_coefficients as _dop  # noqa: E402

DOP_NS = _dop.N_STAGES
DOP_A = _dop.A[:DOP_NS, :DOP_NS].copy()
DOP_B = _dop.B.copy()
DOP_C = _dop.C[:DOP_NS].copy()
DOP_E3 = _dop.E3.copy()
DOP_E5 = _dop.E5.copy()
DOP_D = _dop.D.copy()
DOP_A_EXTRA = _dop.A[DOP_NS + 1:].copy()
DOP_C_EXTRA = _dop.C[DOP_NS + 1:].copy()
DOP_NX = _dop.N_STAGES_EXTENDED


def dop_rhs(which, t, y, ts, yold, F, H, pn, pa, c, m, act):
    """The right-hand side DOP853 integrates: 0 the nominal system, 1 the uncompensated copy."""
    if which == 0:
        return nominal_rhs(t, y, pn, c, m, act)
    return uncompensated_rhs(t, y, ts, yold, F, H, pn, pa, c, m, act)


def dop853_run(which, y0, t0, t1, t_out, rtol, atol, dense, ts, yold, F, H, pn, pa, c, m, act):
    """scipy's DOP853 from t0 to t1; returns (step times, step states, interpolants F (only if
    dense), states at t_out, nfev, status 0 ok / 1 step too small / 2 not finite)."""
    d = y0.shape[0]
    cap = 1024
    T = np.empty(cap)
    Y = np.empty((cap, d))
    FF = np.empty((cap if dense else 1, 7, d))
    X_out = np.full((t_out.shape[0], d), np.nan)
    T[0] = t0
    Y[0] = y0
    ns = 1
    j = 0
    while j < t_out.shape[0] and t_out[j] <= t0:
        X_out[j] = y0
        j += 1
    y = y0.copy()
    t = t0
    f = dop_rhs(which, t, y, ts, yold, F, H, pn, pa, c, m, act)
    nfev = 1
    h0, scale, d1 = initial_guess(y, f, t1 - t0, rtol, atol)  # scipy's select_initial_step, error order 7
    f1 = dop_rhs(which, t0 + h0, y + h0 * f, ts, yold, F, H, pn, pa, c, m, act)
    nfev += 1
    h_abs = initial_step(f, f1, h0, scale, d1, t1 - t0, 7)
    K = np.empty((DOP_NX, d))
    status = 0
    while t < t1:
        min_step = 10.0 * abs(np.nextafter(t, np.inf) - t)
        if h_abs < min_step:
            h_abs = min_step
        rejected = False
        y_new = y
        f_new = f
        h = 0.0
        t_new = t
        while True:
            if h_abs < min_step:
                status = 1
                break
            t_new = t + h_abs
            if t_new > t1:
                t_new = t1
            h = t_new - t
            h_abs = h
            K[0] = f
            for s in range(1, DOP_NS):
                dy = np.zeros(d)
                for r in range(s):
                    dy += K[r] * DOP_A[s, r]
                K[s] = dop_rhs(which, t + DOP_C[s] * h, y + dy * h, ts, yold, F, H, pn, pa, c, m, act)
            nfev += DOP_NS - 1
            acc = np.zeros(d)
            for r in range(DOP_NS):
                acc += K[r] * DOP_B[r]
            y_new = y + h * acc
            f_new = dop_rhs(which, t + h, y_new, ts, yold, F, H, pn, pa, c, m, act)
            nfev += 1
            K[DOP_NS] = f_new
            e5 = 0.0
            e3 = 0.0
            finite = True
            for i in range(d):
                s5 = 0.0
                s3 = 0.0
                for r in range(DOP_NS + 1):
                    s5 += K[r, i] * DOP_E5[r]
                    s3 += K[r, i] * DOP_E3[r]
                sc = atol + max(abs(y[i]), abs(y_new[i])) * rtol
                e5 += (s5 / sc) ** 2
                e3 += (s3 / sc) ** 2
                if not math.isfinite(y_new[i]) or not math.isfinite(f_new[i]):
                    finite = False
            if not finite:
                status = 2
                break
            if e5 == 0.0 and e3 == 0.0:
                error_norm = 0.0
            else:
                error_norm = abs(h) * e5 / math.sqrt((e5 + 0.01 * e3) * d)
            if error_norm < 1.0:
                if error_norm == 0.0:
                    factor = 10.0
                else:
                    factor = min(10.0, 0.9 * error_norm ** (-1.0 / 8.0))
                if rejected:
                    factor = min(1.0, factor)
                h_abs *= factor
                break
            h_abs *= max(0.2, 0.9 * error_norm ** (-1.0 / 8.0))
            rejected = True
        if status != 0:
            break
        need = dense or (j < t_out.shape[0] and t_out[j] <= t_new)
        if need:
            for s in range(DOP_NS + 1, DOP_NX):
                dy = np.zeros(d)
                for r in range(s):
                    dy += K[r] * DOP_A_EXTRA[s - DOP_NS - 1, r]
                K[s] = dop_rhs(which, t + DOP_C_EXTRA[s - DOP_NS - 1] * h, y + dy * h, ts, yold, F, H, pn, pa, c, m, act)
            nfev += DOP_NX - DOP_NS - 1
            Fs = np.empty((7, d))
            delta = y_new - y
            Fs[0] = delta
            Fs[1] = h * f - delta
            Fs[2] = 2.0 * delta - h * (f_new + f)
            for r in range(4):
                acc = np.zeros(d)
                for s in range(DOP_NX):
                    acc += K[s] * DOP_D[r, s]
                Fs[3 + r] = h * acc
            while j < t_out.shape[0] and t_out[j] <= t_new:
                x = (t_out[j] - t) / h
                val = np.zeros(d)
                for i in range(7):
                    val = (val + Fs[6 - i]) * (x if i % 2 == 0 else 1.0 - x)
                X_out[j] = val + y
                j += 1
            if dense:
                if ns - 1 == FF.shape[0]:
                    F2 = np.empty((2 * FF.shape[0], 7, d))
                    F2[:ns - 1] = FF[:ns - 1]
                    FF = F2
                FF[ns - 1] = Fs
        T, Y, ns = record(T, Y, ns, t_new, y_new)
        t = t_new
        y = y_new
        f = f_new
    nF = ns - 1 if dense else 0
    return T[:ns].copy(), Y[:ns].copy(), FF[:nF].copy(), X_out, nfev, status
