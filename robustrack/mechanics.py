"""The fundamental equation of constrained motion, as pure array functions.

For the unconstrained system ``M q̈ = Q`` (``a = M⁻¹Q``) and constraints
``A q̈ = b``, the constrained motion is (W 2.2.7–2.2.9, KU 30–32, docs/theory/fundamental-equation.md)::

    Qᶜ = M^{1/2} (A M^{-1/2})⁺ (b − A a),      q̈ = a + M⁻¹ Qᶜ

and, for non-ideal constraints with work vector C (W 4.2.6–4.2.8)::

    q̈ = a + M^{-1/2} B⁺ (b − A a) + M^{-1/2} (I − B⁺B) M^{-1/2} C,   B = A M^{-1/2}.

Implementation notes
--------------------
* No matrix square roots: any factor of M works, and we use the Cholesky factor
  ``M = L Lᵀ`` (so ``M^{1/2} → L``, ``M^{-1/2} → L⁻ᵀ``, ``B = A L⁻ᵀ``). This form keeps
  ``B⁺`` correct when A → 0 (e.g. the triple pendulum's A = [L1 θ̇1, 0, 0] at turning
  points) where ``Aᵀ(A M⁻¹ Aᵀ)⁺`` underflows (docs/theory/fundamental-equation.md). At exactly ``A = 0`` the
  Moore–Penrose answer is ``Qᶜ = 0``.
* Positive *semi*-definite M (W ch. 4): elements of the batch whose M has no Cholesky
  factor are solved through the augmented system ``M + α² Aᵀ G A``, ``Q + α² Aᵀ G b``
  (W 4.3.8–4.3.10, 4.3.39), which is positive definite exactly when
  ``rank [M; A] = n``; otherwise :class:`~robustrack.errors.RankConditionError`.
  The result does not depend on α or G (W Result 4.2).
* Rank-deficient or inconsistent ``A q̈ = b``: ``B⁺`` gives the least-squares
  compromise (Gauss's principle in the M-weighted sense); the residual
  ``‖A q̈ − b‖₂`` is returned by :func:`solve_constrained` so it is never silent.
* Rank is judged scale-free: the relative cut-off ``rcond`` of ``B⁺`` would drop a
  consistent, independent row only because its units make it small (a row times
  1e-13, or the others times 1e13). Where the cut-off keeps fewer than ``min(m, n)``
  directions, the rows of B are normalized (``D B`` with ``D = diag(1/‖B_i‖)``; for a
  consistent system ``(D B)⁺ D r`` is the same minimum-norm solution of ``B w = r``) and
  that inverse is used where it keeps more. Everywhere else the computation is the
  unscaled one, bit for bit. A row that is still not met — judged against its own
  scale ``‖A_i‖ ‖q̈‖ + |b_i|`` (:func:`row_misfit`) beyond what the solve's rounding explains
  (:func:`solve_rounding`: cond(B) · ε, so a consistent constraint near a singular configuration, where B is
  ill-conditioned, is not called inconsistent) — gets one :class:`~robustrack.errors.ConstraintNotice`
  (checked calls only; runs say it once through
  :func:`~robustrack.tracking.assess.least_squares_note`).
* Quasi-velocities (Udwadia–Phohomsiri 2007, UP 3.25 and 3.47; docs/theory/fundamental-equation.md): for
  ``q̇ = H(q,t) s``, ``M_s ṡ = S`` and constraints ``A_s ṡ = b_s``, pass
  ``(M_s, S, A_s, b_s, C)`` in place of ``(M, Q, A, b, C)``: the closed form is the same
  (tested on a rigid body in angular velocities).
* Every function accepts leading batch axes: ``M (..., n, n)``, ``Q (..., n)``,
  ``A (..., m, n)``, ``b (..., m)``, ``C (..., n)``; one call handles one system or
  a stack of ten thousand.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._validate import as_float_array, broadcast_batch
from .errors import ConstraintNotice, MassMatrixError, ParameterError, RankConditionError

__all__ = [
    "ConstrainedMotion",
    "solve_constrained",
    "constraint_force",
    "constraint_multipliers",
    "constrained_acceleration",
    "augmented_system",
    "DEFAULT_RCOND",
    "ROW_MISFIT_RTOL",
    "row_misfit",
    "solve_rounding",
]

#: Relative tolerance on singular values (of B = A L⁻ᵀ) and eigenvalues (of M) below
#: which they count as zero.
DEFAULT_RCOND = 1e-12

#: A row of ``A q̈ = b`` counts as not met when ``|(A q̈ − b)_i|`` exceeds this times its own scale
#: ``‖A_i‖ ‖q̈‖ + |b_i|`` (√ε: a kept, consistent row is met to about cond · ε).
ROW_MISFIT_RTOL = 1.5e-8


@dataclass(frozen=True)
class ConstrainedMotion:
    """Result of :func:`solve_constrained`.

    Attributes
    ----------
    qdd : ndarray (..., n)
        Constrained acceleration q̈.
    Qc : ndarray (..., n)
        Constraint force Qᶜ = M q̈ − Q (ideal plus non-ideal part).
    residual : ndarray (...)
        ‖A q̈ − b‖₂: zero (to rounding) where ``A q̈ = b`` is consistent, the
        least-squares misfit where it is not.
    augmented : ndarray of bool (...)
        Where the augmented (singular-M) system was used.
    multipliers : ndarray (..., m) or None
        λ of Qᶜ = Aᵀλ (:func:`constraint_multipliers`, the same numbers) where asked for, else None.
    """

    qdd: np.ndarray
    Qc: np.ndarray
    residual: np.ndarray
    augmented: np.ndarray
    multipliers: np.ndarray | None = None


def _mT(X):
    return np.swapaxes(X, -1, -2)


def _check_shapes(M, Q, A, b, C):
    M, Q, A, b = (as_float_array(X, name) for X, name in ((M, "M"), (Q, "Q"), (A, "A"), (b, "b")))
    if M.ndim < 2 or M.shape[-1] != M.shape[-2]:
        raise ParameterError(f"`M` must have shape (..., n, n); got {M.shape}.")
    n = M.shape[-1]
    if Q.ndim < 1 or Q.shape[-1] != n:
        raise ParameterError(f"`Q` must have shape (..., {n}) to match `M`; got {Q.shape}.")
    if A.ndim < 2 or A.shape[-1] != n:
        raise ParameterError(f"`A` must have shape (..., m, {n}) to match `M`; got {A.shape}.")
    m = A.shape[-2]
    if b.ndim < 1 or b.shape[-1] != m:
        raise ParameterError(f"`b` must have shape (..., {m}) to match `A`; got {b.shape}.")
    shapes = {"M": M.shape[:-2], "Q": Q.shape[:-1], "A": A.shape[:-2], "b": b.shape[:-1]}
    if C is not None:
        C = as_float_array(C, "C")
        if C.ndim < 1 or C.shape[-1] != n:
            raise ParameterError(f"`C` must have shape (..., {n}) to match `M`; got {C.shape}.")
        shapes["C"] = C.shape[:-1]
    batch = broadcast_batch(shapes)
    if C is not None:
        C = np.broadcast_to(C, batch + (n,))
    for name, X in (("M", M), ("Q", Q), ("A", A), ("b", b)) + ((("C", C),) if C is not None else ()):
        if not np.all(np.isfinite(X)):
            raise ParameterError(f"All components of `{name}` must be finite.")
    M = np.broadcast_to(M, batch + (n, n))
    Q = np.broadcast_to(Q, batch + (n,))
    A = np.broadcast_to(A, batch + (m, n))
    b = np.broadcast_to(b, batch + (m,))
    return M, Q, A, b, C


def _check_symmetric(M):
    scale = np.max(np.abs(M), axis=(-1, -2), keepdims=True)
    asym = np.max(np.abs(M - _mT(M)), axis=(-1, -2), keepdims=True)
    bad = asym > 1e-10 * np.maximum(scale, np.finfo(float).tiny)
    if np.any(bad):
        idx = tuple(int(i) for i in np.argwhere(bad[..., 0, 0])[0])
        raise MassMatrixError(
            "The mass matrix `M` must be symmetric; "
            f"M{list(idx) if idx else ''} differs from its transpose by {float(asym[idx].max()):.3g} "
            f"(scale {float(scale[idx].max()):.3g})."
        )


def augmented_system(M, Q, A, b, alpha=1.0, G=None):
    """The augmented ("auxiliary") system of W (4.3.8)–(4.3.10).

    ``M_AG = M + α² Aᵀ G A``, ``Q_AG = Q + α² Aᵀ G b``; positive definite when M is
    positive semi-definite and ``rank [M; A] = n``. Any nonzero α and any G > 0 give
    the same constrained motion (W Result 4.2).

    Parameters
    ----------
    M, Q, A, b : array_like
        Shapes ``(..., n, n)``, ``(..., n)``, ``(..., m, n)``, ``(..., m)``.
    alpha : float or array_like (...), optional
        Nonzero scale α (default 1).
    G : array_like (..., m, m), optional
        Symmetric positive definite weight (default identity).

    Returns
    -------
    M_AG, Q_AG : ndarray
    """
    M, Q, A, b = _check_shapes(M, Q, A, b, None)[:4]
    alpha = as_float_array(alpha, "alpha")
    if np.any(alpha == 0) or not np.all(np.isfinite(alpha)):
        raise ParameterError(f"`alpha` must be finite and nonzero (W 4.3.8); got {alpha!r}.")
    a2 = (alpha**2)[..., None, None]
    if G is None:
        GA = A
        Gb = b
    else:
        G = np.asarray(G, dtype=float)
        if G.shape[-2:] != (A.shape[-2],) * 2:
            raise ParameterError(f"`G` must have shape (..., m, m) with m = {A.shape[-2]}; got {G.shape}.")
        GA = G @ A
        Gb = (G @ b[..., None])[..., 0]
    M_AG = M + a2 * (_mT(A) @ GA)
    Q_AG = Q + a2[..., 0] * (_mT(A) @ Gb[..., None])[..., 0]
    return M_AG, Q_AG


def _pinv(B, rcond):
    """Moore–Penrose inverse of a stack; single rows (m = 1) in closed form."""
    if B.shape[-2] == 1:
        # B⁺ = Bᵀ / ‖B‖² (and 0 at B = 0), computed without squaring tiny entries away.
        scale = np.max(np.abs(B), axis=-1, keepdims=True)  # (..., 1, 1)
        nonzero = scale > 0
        Bs = np.divide(B, scale, out=np.zeros_like(B), where=nonzero)
        denom = np.sum(Bs * Bs, axis=-1, keepdims=True) * scale
        return _mT(np.divide(Bs, denom, out=np.zeros_like(Bs), where=nonzero))
    return _scale_free(B, np.linalg.pinv(B, rcond=rcond), rcond)


def _scale_free(B, Bp, rcond):
    """``Bp`` (= B⁺ with the relative cut-off), or where the cut-off dropped a direction that row
    normalization keeps, ``(D B)⁺ D`` with ``D = diag(1/‖B_i‖)`` (zero rows stay zero).

    The rank the cut-off kept is ``tr(B B⁺)`` (B B⁺ is the projector on the kept directions);
    ``tr(B (DB)⁺ D) = tr((DB)(DB)⁺)`` is the rank kept after normalization. Elements that keep
    ``min(m, n)`` directions are returned unchanged.
    """
    full = min(B.shape[-2], B.shape[-1])
    kept = np.trace(B @ Bp, axis1=-2, axis2=-1)
    low = kept < full - 0.5
    if not np.any(low):
        return Bp
    rho = np.linalg.norm(B, axis=-1)
    D = np.divide(1.0, rho, out=np.zeros_like(rho), where=rho > 0)
    Bn = np.linalg.pinv(B * D[..., None], rcond=rcond) * D[..., None, :]
    better = low & (np.trace(B @ Bn, axis1=-2, axis2=-1) > kept + 0.5)
    return np.where(better[..., None, None], Bn, Bp)


def row_misfit(A, b, qdd, a=None):
    """Each row's misfit ``|(A q̈ − b)_i|`` relative to its own scale ``‖A_i‖₂ (‖q̈‖₂ + ‖a‖₂) + |b_i|`` (..., m).

    Scale-free: a row multiplied by any nonzero number keeps its relative misfit. (‖A_i‖ ‖q̈‖, not
    ``Σ_j |A_ij q̈_j|``: a row orthogonal to q̈ would turn the rounding of q̈ into a misfit of order one.)
    ``a = M⁻¹Q``, the unconstrained acceleration, enters the scale because q̈ = a + M⁻¹Qᶜ (W 2.2.7) is
    computed from it: where the constraint cancels it (A = I, b = 0: q̈ = 0) the rounding of q̈ is of
    the order of ε ‖a‖, not of ε ‖q̈‖.

    Parameters
    ----------
    A : ndarray (..., m, n)
    b : ndarray (..., m)
    qdd : ndarray (..., n)
    a : ndarray (..., n), optional
        The unconstrained acceleration M⁻¹Q (None: not known; the scale is ‖A_i‖ ‖q̈‖ + |b_i|).

    Returns
    -------
    ndarray (..., m)
    """
    res = np.abs((A @ qdd[..., None])[..., 0] - b)
    size = np.linalg.norm(qdd, axis=-1)
    if a is not None:
        size = size + np.linalg.norm(a, axis=-1)
    scale = np.linalg.norm(A, axis=-1) * size[..., None] + np.abs(b)
    return res / np.maximum(scale, np.finfo(float).tiny)


def solve_rounding(B, rcond=DEFAULT_RCOND):
    """The relative misfit rounding leaves in a consistent ``A q̈ = b``: cond(B) · ε, B = A L⁻ᵀ (..., 1).

    The solve goes through B⁺ (W 2.2.9), which amplifies the rounding of its right-hand side by the condition
    number of B over the directions it keeps; near a singular configuration B is ill-conditioned and a
    consistent row is met only to about cond(B) · ε. The condition number is taken scale-free (the rows of B
    normalized, as the rank is judged) over the singular values above ``rcond`` times the largest.

    Parameters
    ----------
    B : ndarray (..., m, n)
    rcond : float

    Returns
    -------
    ndarray (..., 1)
        cond(B) · ε per element (ε where B is zero).
    """
    rho = np.linalg.norm(B, axis=-1, keepdims=True)
    Bn = np.divide(B, rho, out=np.zeros_like(B), where=rho > 0)
    s = np.linalg.svd(Bn, compute_uv=False)
    top = s[..., :1]
    smallest = np.min(np.where(s > rcond * top, s, np.inf), axis=-1, keepdims=True)
    cond = np.where(np.isfinite(smallest), top / np.where(np.isfinite(smallest), smallest, 1.0), 1.0)
    return cond * np.finfo(float).eps


def _notice_rows(A, b, qdd, a, B) -> None:
    """One :class:`ConstraintNotice` naming the rows of ``A q̈ = b`` the solution does not meet, beyond the
    solve's rounding (:func:`solve_rounding`)."""
    with np.errstate(all="ignore"):
        rel = row_misfit(A, b, qdd, a)
    bad = rel > ROW_MISFIT_RTOL
    if not np.any(bad):
        return
    allowed = np.maximum(ROW_MISFIT_RTOL, solve_rounding(B))
    bad = rel > allowed
    if not np.any(bad):
        return
    rows = sorted({int(i) for i in np.nonzero(bad)[-1]})
    import warnings

    warnings.warn(f"constraint row{'s' if len(rows) > 1 else ''} {rows} of A q̈ = b cannot be met (dependent on "
                  f"the other rows and inconsistent with them, or zero with b ≠ 0; relative misfit up to "
                  f"{float(np.max(rel[bad])):.2g}, beyond the solve's rounding cond(B)·ε = "
                  f"{float(np.max(np.broadcast_to(allowed, rel.shape)[bad])):.2g}): q̈ is the least-squares "
                  "compromise (Gauss's principle), not a motion that keeps every row.", ConstraintNotice, stacklevel=3)


def _cholesky_or_augment(M, Q, A, b, alpha, G, rcond):
    """Cholesky factor L of M (and L⁻¹) where M is safely definite, of the augmented system elsewhere.

    Returns ``(L, Li, M_eff, Q_eff, augmented)``. Cholesky also "succeeds" on a
    numerically singular M (a pivot of 1e-11 where the smallest eigenvalue is 1e-16),
    so success is checked with the condition estimate ``tr(M) ‖L⁻¹‖_F² ≥ cond(M)``
    (at most n² times cond(M)); elements failing it are classified by their eigenvalues.
    """
    try:
        L = np.linalg.cholesky(M)
        Li = np.linalg.inv(L)
    except np.linalg.LinAlgError:
        Li = None
    if Li is not None:
        cond_bound = np.trace(M, axis1=-2, axis2=-1) * np.sum(Li * Li, axis=(-2, -1))
        if np.all(cond_bound * rcond < 1.0):
            return L, Li, M, Q, np.zeros(M.shape[:-2], dtype=bool)
    # Some element is not positive definite: classify each one.
    w = np.linalg.eigvalsh(M)
    scale = np.maximum(np.max(np.abs(w), axis=-1), np.finfo(float).tiny)
    wmin = np.min(w, axis=-1)
    if np.any(wmin < -1e3 * rcond * scale):
        idx = np.unravel_index(np.argmin(wmin / scale), wmin.shape)
        raise MassMatrixError(
            "The mass matrix `M` must be positive semi-definite; "
            f"M{list(idx) if idx else ''} has eigenvalue {float(wmin[idx]):.3g} "
            f"(largest {float(scale[idx]):.3g})."
        )
    singular = wmin <= rcond * scale
    M_AG, Q_AG = augmented_system(M, Q, A, b, alpha, G)
    M_eff = np.where(singular[..., None, None], M_AG, M)
    Q_eff = np.where(singular[..., None], Q_AG, Q)
    w_eff = np.linalg.eigvalsh(M_eff)
    s_eff = np.maximum(np.max(np.abs(w_eff), axis=-1), np.finfo(float).tiny)
    fails = np.min(w_eff, axis=-1) <= rcond * s_eff
    if np.any(fails):
        idx = tuple(int(i) for i in np.argwhere(fails)[0]) if fails.ndim else ()
        n = M.shape[-1]
        rank = np.linalg.matrix_rank(np.concatenate([M[idx], A[idx]], axis=-2))
        raise RankConditionError(
            f"The mass matrix is singular and rank [M; A] = {int(rank)} < n = {n}"
            f"{' at batch index ' + str(list(idx)) if idx else ''}: the constrained accelerations "
            "are not unique (W ch. 4). Add constraints that fix the coordinates M does not "
            "weigh, or give those coordinates mass."
        )
    L = np.linalg.cholesky(M_eff)
    return L, np.linalg.inv(L), M_eff, Q_eff, singular


def solve_constrained(M, Q, A, b, C=None, *, alpha=1.0, G=None, rcond=DEFAULT_RCOND, check=True,
                      multipliers=False):
    """Constrained acceleration, constraint force and residual (W 2.2.7–2.2.9, 4.2.8).

    Parameters
    ----------
    M : array_like (..., n, n)
        Mass matrix, symmetric positive semi-definite.
    Q : array_like (..., n)
        Given forces.
    A : array_like (..., m, n)
        Constraint matrix of ``A q̈ = b`` (rows may be dependent).
    b : array_like (..., m)
    C : array_like (..., n), optional
        Non-ideal constraint work vector (W 4.2.6): ``vᵀQᶜ = vᵀC`` for all ``A v = 0``.
    alpha, G : optional
        Augmented-system parameters used where M is singular (W 4.3.8); the answer
        does not depend on them.
    rcond : float
        Relative cut-off for singular values of ``B = A L⁻ᵀ`` and eigenvalues of M.
    check : bool
        Validate shapes, finiteness and symmetry, and give a
        :class:`~robustrack.errors.ConstraintNotice` for rows of ``A q̈ = b`` the answer does
        not meet (turn off only in hot loops over already-validated inputs).
    multipliers : bool
        Also λ of Qᶜ = Aᵀλ (keyword-only; ideal constraints, no C): :func:`constraint_multipliers`' numbers from
        this solve's pseudo-inverse, without a second one.

    Returns
    -------
    ConstrainedMotion
        ``qdd``, ``Qc`` (with ``M q̈ = Q + Qᶜ``), ``residual = ‖A q̈ − b‖₂``,
        ``augmented`` (where the singular-M path was used) and, where asked, ``multipliers``.

    Raises
    ------
    MassMatrixError
        M not symmetric, or indefinite.
    RankConditionError
        M singular and ``rank [M; A] < n``.
    """
    if check:
        M, Q, A, b, C = _check_shapes(M, Q, A, b, C)
        _check_symmetric(M)
    else:
        M, Q, A, b = (np.asarray(X, dtype=float) for X in (M, Q, A, b))
        if C is not None:
            C = np.asarray(C, dtype=float)
    L, Li, M_eff, Q_eff, augmented = _cholesky_or_augment(M, Q, A, b, alpha, G, rcond)
    # Work with Li = L⁻¹ (one batched inversion of a triangular factor, then products):
    # a = M⁻¹Q = Liᵀ Li Q; B = A L⁻ᵀ = A Liᵀ.
    LiT = _mT(Li)
    a = LiT @ (Li @ Q_eff[..., None])
    B = A @ LiT
    Bp = _pinv(B, rcond)
    r = b[..., None] - A @ a
    w = Bp @ r  # (..., n, 1)
    lam = (_mT(Bp) @ w)[..., 0] if multipliers and C is None else None  # as constraint_multipliers computes it
    if C is not None:
        z = Li @ C[..., None]
        w = w + z - Bp @ (B @ z)
    qdd = (a + LiT @ w)[..., 0]
    if np.any(augmented):
        # Qᶜ of the real system: M q̈ − Q (equals the augmented one when consistent).
        Qc_real = (M @ qdd[..., None])[..., 0] - Q
        Qc = np.where(augmented[..., None], Qc_real, (L @ w)[..., 0])
    else:
        Qc = (L @ w)[..., 0]
    residual = np.linalg.norm((A @ qdd[..., None])[..., 0] - b, axis=-1)
    if check:
        _notice_rows(A, b, qdd, a[..., 0], B)
    return ConstrainedMotion(qdd=qdd, Qc=Qc, residual=residual, augmented=augmented, multipliers=lam)


def constraint_force(M, Q, A, b, C=None, *, alpha=1.0, G=None, rcond=DEFAULT_RCOND, check=True):
    """Constraint force Qᶜ of the fundamental equation (W 2.2.8, 4.2.8).

    ``Qᶜ = L (A L⁻ᵀ)⁺ (b − A a)`` (+ the non-ideal term when C is given), with
    ``M = L Lᵀ``. See :func:`solve_constrained` for parameters; use it when you
    also need the residual ``‖A q̈ − b‖``.
    """
    return solve_constrained(M, Q, A, b, C, alpha=alpha, G=G, rcond=rcond, check=check).Qc


def constraint_multipliers(M, Q, A, b, *, rcond=DEFAULT_RCOND):
    """The multipliers λ of the ideal constraint force, Qᶜ = Aᵀλ (W 2.2.8): one per row of A q̈ = b.

    ``λ = (A M⁻¹ Aᵀ)⁺ (b − A a) = B⁺ᵀ B⁺ (b − A a)`` with ``B = A L⁻ᵀ``, ``M = L Lᵀ``: then
    ``Aᵀλ = L Bᵀ B⁺ᵀ B⁺ r = L B⁺ r``, the Qᶜ of :func:`solve_constrained`. For dependent rows it is the
    λ of least norm (Pinocchio's ``constraintDynamics`` converges to the same one). A row's λ is the force
    the constraint exerts along it (N for a row in m, N·m for one in rad): the contact force of a frame
    constraint (:meth:`robustrack.plants.FrameConstraint.contact`).

    Parameters
    ----------
    M : array_like (..., n, n)
        Positive definite (a singular M is solved through the augmented system, W 4.3.8, whose λ it is).
    Q : array_like (..., n)
    A : array_like (..., m, n)
    b : array_like (..., m)
    rcond : float

    Returns
    -------
    ndarray (..., m)
    """
    M, Q, A, b, _ = _check_shapes(M, Q, A, b, None)
    L, Li, _, Q_eff, _ = _cholesky_or_augment(M, Q, A, b, 1.0, None, rcond)
    LiT = _mT(Li)
    a = LiT @ (Li @ Q_eff[..., None])
    Bp = _pinv(A @ LiT, rcond)
    return (_mT(Bp) @ (Bp @ (b[..., None] - A @ a)))[..., 0]


def constrained_acceleration(M, Q, A, b, C=None, *, alpha=1.0, G=None, rcond=DEFAULT_RCOND, check=True):
    """Constrained acceleration q̈ = a + M⁻¹Qᶜ (W 2.2.7, 4.2.8).

    See :func:`solve_constrained` for parameters; use it when you also need the
    residual ``‖A q̈ − b‖``.
    """
    return solve_constrained(M, Q, A, b, C, alpha=alpha, G=G, rcond=rcond, check=check).qdd
