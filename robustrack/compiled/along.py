"""A run's peaks and what its bounds assume, measured on compiled kernels at the points of its solution.

What a campaign sample keeps (:func:`~robustrack.tracking.simulate.track_peaks`) at every point of the
solution — the output grid merged with every accepted step:

- ‖e‖∞, ‖ė‖∞ and ‖Qᵘ‖∞ with Qᵘ = M(q_c) u (W 5.2.17), the peaks of
  :func:`~robustrack.tracking.assess.peak_metrics`;
- ‖δq‖∞ with δq = M_a⁻¹(q_c)(Q_a + Qᶜ) − M⁻¹(q)(Q + Qᶜ) (W 5.3.5), ‖M̃_a‖∞ with M̃_a = I − M_a⁻¹(q_c) M(q_c)
  (W 5.3.4) and, for GD, ‖(I − M̃_a)(e + K_i z)‖∞ (W 8.2.17), for GD-bar ‖(I − M̃_a)e‖∞ (W 8.3.16): what
  :func:`~robustrack.tracking.assess.uncertainty_along_run` measures in numpy (the oracle,
  ``tests/test_along.py``), one state at a time here.

The nominal side (q, q̇, Qᶜ at a time) is the same for every actual plant tracked against one nominal run:
:func:`nominal_along` evaluates it once per run at the output grid (the grid points of every sample), and
:func:`measure_along` takes it as rows, so a sample evaluates the fundamental equation only at its own
accepted steps. docs/theory/nominal-actual.md defines the measured quantities. Compiled once per machine and cached.
"""

import numpy as np
from .cache import kernel

from .laws import law_u
from .mechanics import cholesky, cholesky_solve_columns_into, cholesky_solve_into
from .systems import actual_force, call, nominal_at

__all__ = ["nominal_along", "measure_along", "ALONG_COLUMNS"]

#: The columns of :func:`measure_along`'s result, in order.
ALONG_COLUMNS = ("e", "edot", "Qu", "dq", "Mtilde", "P")


@kernel
def nominal_along(T, nom, md):
    """The nominal side at the times T: rows [q, q̇, Qᶜ] (T × 3n) from the dense output ``nom`` and the
    fundamental equation (:func:`~robustrack.compiled.systems.nominal_at`); NaN rows where the motion is not
    defined."""
    n = nom.yold.shape[1] // 2
    out = np.empty((T.shape[0], 3 * n))
    q = np.empty(n)
    qd = np.empty(n)
    Qc = np.empty(n)
    tau = np.empty(md.act.shape[1])
    for r in range(T.shape[0]):
        ok = nominal_at(T[r], nom, md, q, qd, Qc, tau)
        for i in range(n):
            out[r, i] = q[i] if ok else np.nan
            out[r, n + i] = qd[i] if ok else np.nan
            out[r, 2 * n + i] = Qc[i] if ok else np.nan
    return out


@kernel(inline=True)
def _peak(a, b):
    """max(a, |b|), NaN once either is NaN (as numpy's max: a non-finite point is never hidden)."""
    v = abs(b)
    if a != a or v != v:
        return np.nan
    return a if a >= v else v


@kernel
def measure_along(T, X, Y, U, md, law, Ki):
    """The per-point norms of the module docstring at the points (T, X) of a controlled solution.

    ``T`` (N), ``X`` (N × (2n + n_z)): times and controlled states (q_c, q̇_c, z); ``Y`` (N × 3n): the nominal
    side there, rows [q, q̇, Qᶜ] (:func:`nominal_along`); ``U`` (N × n) the held u of a sampled run, or no rows
    (u from the law, :func:`~robustrack.compiled.laws.law_u`); ``md``: the
    :class:`~robustrack.compiled.systems.Model`, ``law``: the :class:`~robustrack.controllers.codes.Law`; ``Ki``: GD's integral gain
    or 0 for GD-bar (:func:`~robustrack.tracking.assess.dropped_term_gain`), NaN for the other laws. Returns N × 6,
    the columns :data:`ALONG_COLUMNS` (P is NaN when ``Ki`` is; a row is NaN where
    M or M_a is not positive definite).
    """
    N = T.shape[0]
    n = Y.shape[1] // 3
    nz = X.shape[1] - 2 * n
    out = np.empty((N, 6))
    _measure_rows(T, X, Y, U, md, law, Ki, out, np.empty((13, n)), np.empty((8, n, n)), np.empty(nz), np.empty((n, nz)),
                  np.empty((n, n + 1)))
    return out


@kernel(refcounts=False)
def _measure_rows(T, X, Y, U, md, law, Ki, out, vecs, mats, z, Uz, B):
    """The rows of :func:`measure_along` into ``out`` with its scratch (``vecs``: 13 × n, ``mats``: 8 × n × n,
    ``z``: n_z, ``Uz``: n × n_z, ``B``: n × (n + 1)): no allocation, no reference counted (a call per point of
    every sample)."""
    N = T.shape[0]
    n = Y.shape[1] // 3
    nz = X.shape[1] - 2 * n
    q, qd, qc, qcd, e, ed, u, F = vecs[0], vecs[1], vecs[2], vecs[3], vecs[4], vecs[5], vecs[6], vecs[7]
    Fa, acc, acc_a, y = vecs[8], vecs[9], vecs[10], vecs[11]
    Ue, Ued, Mq, Mc, Ma, L, MaM, La = mats[0], mats[1], mats[2], mats[3], mats[4], mats[5], mats[6], mats[7]
    gd = Ki == Ki
    for r in range(N):
        t = T[r]
        ne = 0.0
        ned = 0.0
        for i in range(n):
            q[i] = Y[r, i]
            qd[i] = Y[r, n + i]
            qc[i] = X[r, i]
            qcd[i] = X[r, n + i]
            e[i] = qc[i] - q[i]
            ed[i] = qcd[i] - qd[i]
            ne = _peak(ne, e[i])
            ned = _peak(ned, ed[i])
        for i in range(nz):
            z[i] = X[r, 2 * n + i]
        if U.shape[0] > 0:
            for i in range(n):
                u[i] = U[r, i]
        else:
            law_u(law, e, ed, z, u, Ue, Ued, Uz)
        call(md.nom_mass, qc, qcd, t, md.pn, Mc)
        call(md.act_mass, qc, qcd, t, md.pa, Ma)
        actual_force(qc, qcd, t, md, Fa, vecs[12])
        call(md.nom_mass, q, qd, t, md.pn, Mq)
        call(md.nom_force, q, qd, t, md.pn, F)
        nQu = 0.0
        for i in range(n):
            s = 0.0
            for k in range(n):
                s += Mc[i, k] * u[k]
            nQu = _peak(nQu, s)
            Fa[i] += Y[r, 2 * n + i]
            F[i] += Y[r, 2 * n + i]
        out[r, 0] = ne
        out[r, 1] = ned
        out[r, 2] = nQu
        # M_a⁻¹(q_c)(Q_a + Qᶜ), M_a⁻¹ M(q_c) = I − M̃_a (the columns of B = [Q_a + Qᶜ, M(q_c)], one factor of M_a)
        # and M⁻¹(q)(Q + Qᶜ)
        ok = cholesky(Ma, La) and cholesky(Mq, L)
        if ok:
            for i in range(n):
                B[i, 0] = Fa[i]
                for k in range(n):
                    B[i, 1 + k] = Mc[i, k]
            cholesky_solve_columns_into(La, B, B, B)
            for i in range(n):
                acc_a[i] = B[i, 0]
                for k in range(n):
                    MaM[i, k] = B[i, 1 + k]
            cholesky_solve_into(L, F, acc, y)
        if not ok:
            for c in range(3, 6):
                out[r, c] = np.nan
            continue
        ndq = 0.0
        for i in range(n):
            ndq = _peak(ndq, acc_a[i] - acc[i])
        nMt = 0.0
        for i in range(n):
            s = 0.0
            for k in range(n):
                s += abs((1.0 if i == k else 0.0) - MaM[i, k])
            nMt = _peak(nMt, s)
        nP = np.nan
        if gd:
            nP = 0.0
            for i in range(n):
                s = 0.0
                for k in range(n):
                    s += MaM[i, k] * (e[k] + Ki * z[k] if nz > 0 else e[k])  # GD: e + K_i z; GD-bar: e (no z)
                nP = _peak(nP, s)
        out[r, 3] = ndq
        out[r, 4] = nMt
        out[r, 5] = nP
