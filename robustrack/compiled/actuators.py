"""Compiled twins of :mod:`robustrack.tracking.actuators`: forces realized by actuators B τ (docs/theory/constraint-models.md).

With k columns in ``act = [B; τ_max]`` ((n + 1) × k, :meth:`~robustrack.tracking.Actuators.packed`):

- :func:`actuated` — the nominal force B τᶜ of ``M q̈ = Q + B τᶜ``, ``A q̈ = b`` (Gauss's choice,
  realizability checked), as :func:`robustrack.studies.constraint_models.servo_force`;
- :func:`actuator_parts`, :func:`actuator_jac` — the compensator's command τᵘ = W⁻¹Bᵀu, the saturation
  sat(τᶜ + τᵘ) and their derivatives, as :class:`~robustrack.tracking.actuators.BoundActuators`.

Every kernel of the loop takes ``act``; without actuators it has no columns and these branches are skipped.
Compiled once per machine and cached.
"""

import math

import numpy as np
from .cache import kernel

from ..plants.servo import DEFAULT_REALIZABILITY_RCOND as REALIZABILITY_RCOND
from ..mechanics import DEFAULT_RCOND as RCOND
from .mechanics import (cholesky, fundamental, lower_inverse, lu_factor, lu_solve, mat_mul, norm2, row_pinv,
                                spd_solve, spd_solve_columns, symmetric_part)

__all__ = ["actuated", "constrained_motion", "command_buffer", "actuator_parts", "actuator_jac"]

#: √ε of float64: how far r may lie outside the reach of dependent rows (as constraint_models.servo_force).
SQRT_EPS = math.sqrt(np.finfo(np.float64).eps)


@kernel
def actuated(M, Q, A, b, act, qdd, Qc, tau):
    """q̈, the actuator force Qᶜ = B τᶜ and τᶜ of M q̈ = Q + B τᶜ, A q̈ = b (docs/theory/constraint-models.md; Beghin, in K).

    act = [B; τ_max] ((n + 1) × k). τᶜ is Gauss's choice (robustrack.studies.constraint_models.servo_force):
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
        if not cholesky(symmetric_part(W), L):
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


@kernel(inline=True)
def command_buffer(act):
    """A buffer for the k commands τ: without actuators a zero-length view of act (no allocation)."""
    if act.shape[1] == 0:
        return act[act.shape[0] - 1]
    return np.empty(act.shape[1])


@kernel
def actuator_parts(Mn, act, tau_c, u):
    """(ok, Y = Mn⁻¹B, H = W⁻¹Bᵀ, Gm = W⁻¹Yᵀ, τᵘ = H u, τ = sat(τᶜ + τᵘ), free) with W = BᵀY (docs/theory/constraint-models.md).

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
    W = symmetric_part(W)
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


@kernel
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


@kernel
def constrained_motion(M, Q, A, b, act, qdd, Qc, tau):
    """q̈, Qᶜ and τᶜ of ``M q̈ = Q + Qᶜ``, ``A q̈ = b`` at one state; False where the motion is not defined.

    With k < n actuators Qᶜ = B τᶜ (:func:`actuated`); with k = n (B invertible) Qᶜ is the fundamental
    equation's (W 2.2.7–2.2.9), as without actuators, and τᶜ = B⁻¹Qᶜ (docs/theory/constraint-models.md); without, tau (size 0) is
    untouched. The compiled twin of :func:`robustrack.plants.motion.constrained_motion` with actuators.
    """
    n = M.shape[0]
    k = act.shape[1]
    if 0 < k < n:
        return actuated(M, Q, A, b, act, qdd, Qc, tau)
    ok = fundamental(M, Q, A, b, qdd, Qc)
    if k == n:  # invertible B: every force is available, B τᶜ = Qᶜ (docs/theory/constraint-models.md), τᶜ = B⁻¹Qᶜ
        LU = np.empty((n, n))
        piv = np.zeros(n, dtype=np.int64)
        ok = ok and lu_factor(act[:n], LU, piv)
        if ok:
            lu_solve(LU, piv, Qc, tau)
    return ok
