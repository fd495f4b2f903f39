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
- :func:`comp_u` — the compensators' u and ∂u/∂(e, ė, z) (W 7.2.15, 8.2.26, 8.3.20),
  with the control functions g and g′ (W 7.3.1, 7.3.4).
"""

import math

import numpy as np

RCOND = 1e-12

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
    L = np.empty((n, n))
    if not cholesky(M, L):
        return False
    y = np.empty(n)
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


def nominal_motion(q, qd, t, p, c, m, qdd, Qc):
    """The nominal constrained motion at one state: q̈ and Qᶜ (Qᶜ = 0 without a constraint)."""
    n = q.shape[0]
    M = np.empty((n, n))
    Q = np.empty(n)
    nom_mass(q, t, p, M)
    nom_force(q, qd, t, p, Q)
    A = np.zeros((m, n))
    b = np.zeros(m)
    if m > 0:
        con_ab(q, qd, t, c, A, b)
    return fundamental(M, Q, A, b, qdd, Qc)


def nominal_rhs(t, y, p, c, m):
    """dy/dt of the nominal system y = (q, q̇): NaN where the motion is not defined."""
    n = y.shape[0] // 2
    q = y[:n].copy()
    qd = y[n:].copy()
    qdd = np.empty(n)
    Qc = np.empty(n)
    dy = np.empty(2 * n)
    ok = nominal_motion(q, qd, t, p, c, m, qdd, Qc)
    for i in range(n):
        dy[i] = qd[i]
        dy[n + i] = qdd[i] if ok else np.nan
    return dy


def nominal_forces(T, Y, p, c, m):
    """Qᶜ at many nominal states (rows of Y): the constraint force along the run."""
    k = T.shape[0]
    n = Y.shape[1] // 2
    out = np.empty((k, n))
    qdd = np.empty(n)
    Qc = np.empty(n)
    for j in range(k):
        if nominal_motion(Y[j, :n].copy(), Y[j, n:].copy(), T[j], p, c, m, qdd, Qc):
            out[j] = Qc
        else:
            out[j] = np.nan
    return out


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


def nominal_at(t, ts, yold, F, H, p, c, m, q, qd, Qc):
    """Nominal q, q̇ (dense output) and Qᶜ at t; False where the motion is not defined."""
    n = q.shape[0]
    y = np.empty(2 * n)
    dense_eval(t, ts, yold, F, H, y)
    for i in range(n):
        q[i] = y[i]
        qd[i] = y[n + i]
    qdd = np.empty(n)
    return nominal_motion(q, qd, t, p, c, m, qdd, Qc)


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


# --------------------------------------------------------------------------- the controlled actual system
def controlled_parts(t, x, ts, yold, F, H, pn, pa, c, m, kind, gk, cp, uh, held, jac):
    """Shared by the right-hand side and its Jacobian: returns (dx, J) (J empty unless jac)."""
    n = yold.shape[1] // 2
    nz = x.shape[0] - 2 * n
    q = np.empty(n)
    qd = np.empty(n)
    Qc = np.empty(n)
    ok = nominal_at(t, ts, yold, F, H, pn, c, m, q, qd, Qc)
    qc = x[:n].copy()
    qcd = x[n:2 * n].copy()
    z = x[2 * n:].copy()
    e = qc - q
    ed = qcd - qd
    u = np.empty(n)
    Ue = np.empty((n, n))
    Ued = np.empty((n, n))
    Uz = np.empty((n, nz))
    comp_u(kind, gk, cp, e, ed, z, u, Ue, Ued, Uz)
    if held:
        for i in range(n):
            u[i] = uh[i]
        Ue[:, :] = 0.0
        Ued[:, :] = 0.0
        Uz[:, :] = 0.0
    Mn = np.empty((n, n))
    nom_mass(qc, t, pn, Mn)
    Ma = np.empty((n, n))
    act_mass(qc, t, pa, Ma)
    Fa = np.empty(n)
    act_force(qc, qcd, t, pa, Fa)
    for i in range(n):
        s = 0.0
        for k in range(n):
            s += Mn[i, k] * u[k]
        Fa[i] += Qc[i] + s
    acc = np.empty(n)
    ok = ok and spd_solve(Ma, Fa, acc)
    dx = np.empty(2 * n + nz)
    for i in range(n):
        dx[i] = qcd[i]
        dx[n + i] = acc[i] if ok else np.nan
    if kind == C_GD:
        for i in range(nz):
            dx[2 * n + i] = e[i]
    else:
        for i in range(nz):
            dx[2 * n + i] = 0.0
    J = np.zeros((2 * n + nz, 2 * n + nz))
    if not jac:
        return dx, J
    if not ok:
        J[:, :] = np.nan
        return dx, J
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
    S = np.empty((n, 2 * n + nz))
    spd_solve_columns(Ma, R, S)
    for i in range(n):
        J[i, n + i] = 1.0
        for k in range(2 * n + nz):
            J[n + i, k] = S[i, k]
    if kind == C_GD:
        for i in range(nz):
            J[2 * n + i, i] = 1.0
    return dx, J


def controlled_rhs(t, x, ts, yold, F, H, pn, pa, c, m, kind, gk, cp, uh, held):
    """d/dt (q_c, q̇_c, z) of the controlled actual system (W 5.2.17)."""
    return controlled_parts(t, x, ts, yold, F, H, pn, pa, c, m, kind, gk, cp, uh, held, False)[0]


def controlled_jac(t, x, ts, yold, F, H, pn, pa, c, m, kind, gk, cp, uh, held):
    """The exact Jacobian of :func:`controlled_rhs` with respect to (q_c, q̇_c, z)."""
    return controlled_parts(t, x, ts, yold, F, H, pn, pa, c, m, kind, gk, cp, uh, held, True)[1]


def controls(T, X, ts, yold, F, H, pn, c, m, kind, gk, cp):
    """u along a run (rows of X = (q_c, q̇_c, z) at times T)."""
    k = T.shape[0]
    n = yold.shape[1] // 2
    nz = X.shape[1] - 2 * n
    out = np.empty((k, n))
    q = np.empty(n)
    qd = np.empty(n)
    Qc = np.empty(n)
    u = np.empty(n)
    Ue = np.empty((n, n))
    Ued = np.empty((n, n))
    Uz = np.empty((n, nz))
    for j in range(k):
        nominal_at(T[j], ts, yold, F, H, pn, c, m, q, qd, Qc)
        comp_u(kind, gk, cp, X[j, :n] - q, X[j, n:2 * n] - qd, X[j, 2 * n:].copy(), u, Ue, Ued, Uz)
        out[j] = u
    return out


# --------------------------------------------------------------------------- the uncompensated copy
def uncompensated_rhs(t, x, ts, yold, F, H, pn, pa, c, m):
    """d/dt (q_a, q̇_a) of the actual system under Qᶜ(t) alone (W 5.2.16)."""
    n = x.shape[0] // 2
    q = np.empty(n)
    qd = np.empty(n)
    Qc = np.empty(n)
    ok = nominal_at(t, ts, yold, F, H, pn, c, m, q, qd, Qc)
    qa = x[:n].copy()
    qad = x[n:].copy()
    Ma = np.empty((n, n))
    act_mass(qa, t, pa, Ma)
    Fa = np.empty(n)
    act_force(qa, qad, t, pa, Fa)
    for i in range(n):
        Fa[i] += Qc[i]
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


def sampled_run(x0, edges, t_out, rtol, atol, ts, yold, F, H, pn, pa, c, m, kind, gk, cp):
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
    u = np.empty(n)
    Ue = np.empty((n, n))
    Ued = np.empty((n, n))
    Uz = np.empty((n, nz))
    K = np.empty((7, d))
    nfev = 0
    h = 0.0
    for k in range(nint):
        a = edges[k]
        b = edges[k + 1]
        nominal_at(a, ts, yold, F, H, pn, c, m, q, qd, Qc)
        comp_u(kind, gk, cp, x[:n] - q, x[n:2 * n] - qd, x[2 * n:].copy(), u, Ue, Ued, Uz)
        for i in range(n):
            U[k, i] = u[i]
        t = a
        if h <= 0.0 or h > b - a:
            h = b - a
        K[0] = controlled_rhs(t, x, ts, yold, F, H, pn, pa, c, m, kind, gk, cp, u, True)
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
                    K[s] = controlled_rhs(t + DP_C[s] * step, xs, ts, yold, F, H, pn, pa, c, m, kind, gk, cp,
                                          u, True)
                xn = x.copy()
                for r in range(6):
                    xn += step * DP_B[r] * K[r]
                tn = stop if last else t + step
                K[6] = controlled_rhs(tn, xn, ts, yold, F, H, pn, pa, c, m, kind, gk, cp, u, True)
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
