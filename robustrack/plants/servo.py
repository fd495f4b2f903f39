"""Servo constraints (Beghin, in Kozlov's slides, seed K): a constraint Φ = 0 realized by forces λ N along fixed
directions N, and where it is realizable (docs/theory/constraint-models.md).

A servo force is realizable only where (A M⁻¹ N) is non-singular — :func:`realizability_margin` measures how far
from singular, :func:`servo_force` solves for λ, :class:`ServoModel` is a plant with such a constraint (refused with
:class:`~robustrack.errors.RealizabilityError` where the margin is lost). The core uses them for underactuated
tracking (:mod:`robustrack.tracking.actuators`); the seed studies (:mod:`robustrack.studies.constraint_models`)
import them from here.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..constraints import Constraint
from ..errors import MassMatrixError, ParameterError, RealizabilityError
from ..mechanics import DEFAULT_RCOND
from .base import Plant
from .motion import check_constraint_fits

__all__ = ["DEFAULT_REALIZABILITY_RCOND", "ServoForce", "ServoModel", "realizability_margin", "servo_force"]

#: A servo constraint counts as realizable where the realizability margin
#: ``σ_min(A M⁻¹ N) / (‖A‖₂ ‖M⁻¹N‖₂)`` (the |cosine| between ∂Φ/∂q̇ and M⁻¹N for one row
#: and one actuator) is at least this. Below it λ would be a ratio of rounding errors.
DEFAULT_REALIZABILITY_RCOND = 1e-9


def _mT(X):
    return np.swapaxes(X, -1, -2)


# --------------------------------------------------------------------------- #
# servo constraints (Beghin, in K): pure array math
# --------------------------------------------------------------------------- #
@dataclass(frozen=True)
class ServoForce:
    """Result of :func:`servo_force`.

    Attributes
    ----------
    lam : ndarray (..., k)
        Actuator amplitudes λ (NaN where not realizable: never a least-squares value).
    force : ndarray (..., n)
        The servo force ``N λ`` (NaN where not realizable).
    margin : ndarray (...)
        Realizability margin (:func:`realizability_margin`).
    realizable : ndarray of bool (...)
        ``margin >= rcond``.
    """

    lam: np.ndarray
    force: np.ndarray
    margin: np.ndarray
    realizable: np.ndarray


def _solve_spd(M, X, what):
    try:
        return np.linalg.solve(M, X)
    except np.linalg.LinAlgError:
        raise MassMatrixError(f"A servo constraint needs an invertible mass matrix (it uses M⁻¹{what}); "
                              "M is singular.") from None


def _directions(N, n):
    N = np.asarray(N, dtype=float)
    if N.ndim == 1:
        N = N[:, None]
    if N.ndim < 2 or N.shape[-2] != n:
        raise ParameterError(f"`N` (actuator directions) must have shape (..., {n}, k) or ({n},); got {N.shape}.")
    if not np.all(np.isfinite(N)):
        raise ParameterError("All components of `N` (actuator directions) must be finite.")
    return N


def realizability_margin(M, A, N) -> np.ndarray:
    """How far a servo constraint is from unrealizable: ``σ_r(A M⁻¹ N) / (‖A‖₂ ‖M⁻¹N‖₂)``, r = rank A.

    Beghin's condition (K, "Servo constraints"): the constraint ``A q̈ = b`` can be kept
    by forces ``N λ`` iff ``A M⁻¹ N`` (m × k) has the rank r of A (full row rank m for
    independent rows). The margin is its r-th singular value scaled to [0, 1]; for one row
    and one actuator it is ``|(M⁻¹N, ∂Φ/∂q̇)| / (‖M⁻¹N‖ ‖∂Φ/∂q̇‖)``, the |cosine| of the
    angle in K's condition. 0 when k < r (fewer actuators than independent constraints);
    1 where A = 0 (rank 0: nothing to realize; :func:`servo_force` then asks b = 0). The rank of A counts singular values above ``DEFAULT_RCOND`` (:mod:`robustrack.mechanics`)
    times the largest.

    Parameters
    ----------
    M : array_like (..., n, n)
        Mass matrix (invertible).
    A : array_like (..., m, n)
        Constraint rows (∂Φ/∂q̇ for a velocity constraint).
    N : array_like (..., n, k) or (n,)
        Actuator directions (columns).

    Returns
    -------
    ndarray (...)
        The margin in [0, 1].
    """
    M = np.asarray(M, dtype=float)
    A = np.asarray(A, dtype=float)
    N = _directions(N, M.shape[-1])
    MiN = _solve_spd(M, np.broadcast_to(N, M.shape[:-2] + N.shape[-2:]) if N.ndim == 2 else N, "N")
    return _margin(A, A @ MiN, MiN)[0]


def _margin(A, G, MiN):
    """(margin, rank A) of :func:`realizability_margin` from A, G = A M⁻¹N and M⁻¹N."""
    batch = np.broadcast_shapes(A.shape[:-2], G.shape[:-2])
    m = A.shape[-2]
    if m == 0:  # no constraint rows: nothing to realize
        return np.ones(batch), np.zeros(batch, dtype=int)
    sA = np.linalg.svd(A, compute_uv=False)
    rank = np.broadcast_to(np.sum(sA > DEFAULT_RCOND * sA[..., :1], axis=-1), batch)
    s = np.linalg.svd(G, compute_uv=False)
    s = np.concatenate([s, np.zeros(s.shape[:-1] + (m + 1 - s.shape[-1],))], axis=-1)  # σ_r = 0 for r > k
    s_r = np.take_along_axis(s, np.maximum(rank - 1, 0)[..., None], axis=-1)[..., 0]
    scale = np.broadcast_to(sA[..., 0], batch) * np.linalg.norm(MiN, ord=2, axis=(-2, -1))
    margin = np.divide(s_r, scale, out=np.zeros(batch), where=scale > 0)
    return np.where(rank == 0, 1.0, margin), rank


def servo_force(M, Q, A, b, N, *, rcond=DEFAULT_REALIZABILITY_RCOND) -> ServoForce:
    """The force ``N λ`` along given directions that keeps ``A q̈ = b`` (Beghin, in K; docs/theory/constraint-models.md).

    ``M q̈ = Q + N λ`` with ``A q̈ = b`` gives ``G λ = r`` with ``G = A M⁻¹ N``,
    ``r = b − A a``, ``a = M⁻¹Q``. Among its solutions λ is the one Gauss's principle picks
    (docs/theory/fundamental-equation.md: q̈ minimizes ``(q̈ − a)ᵀ M (q̈ − a)``; with ``q̈ − a = M⁻¹Nλ`` that is
    ``λᵀ W λ``, ``W = Nᵀ M⁻¹ N``)::

        λ = W⁻¹ Gᵀ (G W⁻¹ Gᵀ)⁺ r = S⁻¹ (G S⁻¹)⁺ r,   S = W^{1/2}

    (Lagrange's rule: ``W λ = Gᵀ μ``, ``G λ = r``; for dependent columns of N, W⁻¹ is
    the pseudo-inverse and λ the least-norm minimizer). For k = m and G invertible it is
    ``G⁻¹ r``; for invertible N it is ``N⁻¹ Qᶜ`` with the ideal ``Qᶜ = Aᵀ(AM⁻¹Aᵀ)⁺ r`` of the
    fundamental equation (W 2.2.9): every force is available, and the same minimum is
    taken over all of them. The force ``N λ`` does not depend on how N's columns are
    scaled or mixed. λ exists where ``A M⁻¹ N`` has the rank of A
    (:func:`realizability_margin` ≥ ``rcond``) and, for dependent rows of A, r lies in its
    range (residual ≤ √ε ‖r‖); elsewhere λ and the force are NaN — no least-squares
    compromise.

    Parameters
    ----------
    M : array_like (..., n, n)
        Mass matrix (invertible).
    Q : array_like (..., n)
        Given forces.
    A : array_like (..., m, n)
        Constraint matrix.
    b : array_like (..., m)
        Right-hand side of ``A q̈ = b``.
    N : array_like (..., n, k) or (n,)
        Actuator directions (columns).
    rcond : float
        Smallest margin counted as realizable; default :data:`DEFAULT_REALIZABILITY_RCOND`.

    Returns
    -------
    ServoForce
        ``lam``, ``force``, ``margin``, ``realizable``.
    """
    M = np.asarray(M, dtype=float)
    Q = np.asarray(Q, dtype=float)
    A = np.asarray(A, dtype=float)
    b = np.asarray(b, dtype=float)
    N = _directions(N, M.shape[-1])
    batch = np.broadcast_shapes(M.shape[:-2], Q.shape[:-1], A.shape[:-2], b.shape[:-1], N.shape[:-2])
    N = np.broadcast_to(N, batch + N.shape[-2:])
    M = np.broadcast_to(M, batch + M.shape[-2:])
    a = _solve_spd(M, np.broadcast_to(Q, batch + Q.shape[-1:])[..., None], "Q")[..., 0]
    MiN = _solve_spd(M, N, "N")
    G = A @ MiN
    margin, rank = _margin(A, G, MiN)
    r = b - (A @ a[..., None])[..., 0]
    # λ = S⁻¹ (G S⁻¹)⁺ r with S = W^{1/2} (pseudo-inverse root on dependent columns of N): the
    # minimum of ‖S λ‖² under G λ = r, conditioned like G itself (not like G W⁺ Gᵀ)
    W = _mT(N) @ MiN
    w, V = np.linalg.eigh(0.5 * (W + _mT(W)))
    keep = w > DEFAULT_RCOND * w[..., -1:]
    S_inv = (V * np.where(keep, 1.0 / np.sqrt(np.where(keep, w, 1.0)), 0.0)[..., None, :]) @ _mT(V)
    lam = (S_inv @ np.linalg.pinv(G @ S_inv) @ r[..., None])[..., 0]
    ok = margin >= rcond
    if np.any(rank < A.shape[-2]):  # dependent rows: r must be reachable (consistent constraints)
        gap = np.linalg.norm((G @ lam[..., None])[..., 0] - r, axis=-1)
        ok = ok & ((rank == A.shape[-2]) | (gap <= np.sqrt(np.finfo(float).eps) * np.linalg.norm(r, axis=-1)))
    lam = np.where(ok[..., None], lam, np.nan)
    force = (N @ lam[..., None])[..., 0]
    return ServoForce(lam=lam, force=force, margin=margin, realizable=ok)


class ServoModel:
    """A constraint realized by actuator forces along given directions (Beghin, in K).

    ``M q̈ = Q + N(q, t) λ``, ``A q̈ = b``. Use :meth:`force` as the ``nonideal`` work
    vector of :func:`robustrack.tracking.simulate_constrained` (a C that keeps the
    constraint passes through the fundamental equation unchanged, W 4.2.8, so the run
    is the servo motion and its ``Qc`` is ``N λ``). Every evaluation checks
    realizability (:func:`realizability_margin`); where it fails, a
    :class:`~robustrack.errors.RealizabilityError` names the time, the state and why.

    Parameters
    ----------
    plant : Plant
        The unconstrained system (invertible M).
    constraint : Constraint
        The constraint to realize (``matrices(q, qd, t) -> (A, b)``).
    directions : array_like (n,) or (n, k), or callable
        The actuator directions N: constant columns, or ``N(q, t) -> (..., n, k)``.
    rcond : float
        Smallest realizability margin accepted (keyword-only); default
        :data:`DEFAULT_REALIZABILITY_RCOND`.
    directions_name : str
        What the directions are called in messages (keyword-only): "N" (K's servo
        directions) by default, "B" for a tracking loop's actuators.
    """

    def __init__(self, plant: Plant, constraint: Constraint, directions, *, rcond=DEFAULT_REALIZABILITY_RCOND,
                 directions_name: str = "N"):
        check_constraint_fits(plant, constraint)
        if not (isinstance(rcond, (int, float)) and 0 < rcond < 1):
            raise ParameterError(f"`rcond` must be a number in (0, 1); got {rcond!r}.")
        from .conflation import check_not_conflated

        check_not_conflated(plant, constraint)
        self.plant, self.constraint, self.rcond = plant, constraint, float(rcond)
        self.directions_name = str(directions_name)
        if callable(directions):
            self._N = directions
        else:
            N = _directions(directions, plant.n)
            if N.ndim != 2:
                raise ParameterError(
                    f"constant `directions` must have shape ({plant.n},) or ({plant.n}, k); got {N.shape}.")
            self._N = lambda q, t: N

    def directions(self, q, t=0.0) -> np.ndarray:
        """N(q, t), shape ``(..., n, k)`` (or ``(n, k)`` when constant).

        Parameters
        ----------
        q : array_like (..., n)
            Coordinates.
        t : float or array_like
            Time(s).

        Returns
        -------
        ndarray
        """
        return _directions(self._N(np.asarray(q, dtype=float), t), self.plant.n)

    def evaluate(self, q, qd, t=0.0) -> ServoForce:
        """:func:`servo_force` at states (q, q̇, t), without raising.

        Parameters
        ----------
        q, qd : array_like (..., n)
            States.
        t : float or array_like
            Time(s), broadcasting with the batch axes.

        Returns
        -------
        ServoForce
        """
        q, qd = np.asarray(q, dtype=float), np.asarray(qd, dtype=float)
        A, b = self.constraint.matrices(q, qd, t)
        return servo_force(self.plant.mass_matrix(q, t), self.plant.given_force(q, qd, t), A, b,
                           self.directions(q, t), rcond=self.rcond)

    def force(self, q, qd, t=0.0) -> np.ndarray:
        """The servo force ``N λ`` at states (q, q̇, t); raises where it does not exist.

        Parameters
        ----------
        q, qd : array_like (..., n)
            States.
        t : float or array_like
            Time(s), broadcasting with the batch axes.

        Returns
        -------
        ndarray (..., n)

        Raises
        ------
        RealizabilityError
            At the first state where ``A M⁻¹ N`` loses full row rank: the message gives
            the time, the state, ``A M⁻¹ N`` and the margin.
        """
        return self.solve(q, qd, t).force

    __call__ = force

    def solve(self, q, qd, t=0.0) -> ServoForce:
        """:meth:`evaluate`, raising where the constraint is not realizable (as :meth:`force`).

        Parameters
        ----------
        q, qd, t
            As :meth:`evaluate`.

        Returns
        -------
        ServoForce
            λ, the force N λ and the margins, all realizable.
        """
        res = self.evaluate(q, qd, t)
        if not np.all(res.realizable):
            self._refuse(res, q, qd, t)
        return res

    def _refuse(self, res, q, qd, t):
        q, qd = np.asarray(q, dtype=float), np.asarray(qd, dtype=float)
        bad = np.argwhere(~np.atleast_1d(res.realizable))[0]
        idx = tuple(int(i) for i in bad) if np.ndim(res.realizable) else ()
        tq = np.broadcast_to(np.asarray(t, dtype=float), np.shape(res.realizable))
        ti = float(tq[idx]) if idx else float(np.asarray(t, dtype=float).reshape(-1)[0])
        qi = np.broadcast_to(q, np.shape(res.realizable) + q.shape[-1:])[idx] if idx else q
        qdi = np.broadcast_to(qd, np.shape(res.realizable) + qd.shape[-1:])[idx] if idx else qd
        A, _ = self.constraint.matrices(qi, qdi, ti)
        N = self.directions(qi, ti)
        G = A @ np.linalg.solve(self.plant.mass_matrix(qi, ti), N)
        margin = float(np.asarray(res.margin)[idx]) if idx else float(res.margin)
        N_ = self.directions_name
        raise RealizabilityError(
            f"servo constraint not realizable at t = {ti:.6g}, q = {np.round(qi, 6).tolist()}, "
            f"q̇ = {np.round(qdi, 6).tolist()}: A M⁻¹ {N_} = {np.round(G, 12).tolist()} does not have the rank of A "
            f"({np.linalg.matrix_rank(A)}) (realizability margin {margin:.3g} < rcond {self.rcond:g}; Beghin's "
            f"condition (M⁻¹{N_}, ∂Φ/∂q̇) ≠ 0, K), or b − A M⁻¹Q is out of its reach. No force along the actuator "
            f"directions {N_} changes the constraint's rate here; choose directions {N_} with a component along "
            "M⁻¹-weighted ∂Φ/∂q̇, or stop before this state.",
            t=ti, q=np.array(qi), qd=np.array(qdi), margin=margin)

    def check(self, q, qd, t=0.0) -> np.ndarray:
        """Raise :class:`~robustrack.errors.RealizabilityError` unless realizable at (q, q̇, t); return the margin.

        Parameters
        ----------
        q, qd : array_like (..., n)
            States.
        t : float or array_like
            Time(s).

        Returns
        -------
        ndarray (...)
            The realizability margin(s).
        """
        return self.solve(q, qd, t).margin
