"""The anatomy of a control force: the Lusternik reaction split into the terms of S (1.7).

Sławianowski (S, seed 002) §1 writes the reaction of the constrained variational
(Lusternik, vakonomic) problem ``δ∫L dt = 0``, ``F_a(q, q̇, t) = 0`` as (S 1.6–1.7)

    R = μᵃ ∂F_a/∂q − d/dt(μᵃ ∂F_a/∂q̇)
      = −μᵃ F_a,q̇q̇ q̈          inertial     (S 3.7: a control force P q̈)
        −μᵃ F_a,q̇q q̇           velocity     (S 3.8: R q̇ + S q̇)
        +μᵃ F_a,q               position
        −μ̇ᵃ F_a,q̇               frictional   (the Appell–Chetaev reaction, S 3.4, λ = −μ̇)
        −μᵃ F_a,q̇t              rheonomic    (0 for S's scleronomic F; a direct force F(t))

(``F_a,q̇q`` is the matrix ∂²F_a/∂q̇ⁱ∂qʲ). §3 reads the velocity term's matrix
``K = −μᵃ F_a,q̇q`` as two classes of control force: its symmetric part ``R = (K + Kᵀ)/2``
(damping, S 3.8) and its antisymmetric part ``S = (K − Kᵀ)/2`` (gyroscopic, "dual to
velocity vectors": ``q̇ᵀ S q̇ = 0``, no work). :func:`lusternik_terms` computes the six
forces; :func:`reaction_anatomy` does it along a run of a
:class:`~robustrack.studies.constraint_models.VakonomicModel` (Φ linear in q̇, Kozlov's λ = −μ)
or a :class:`~robustrack.studies.lusternik.LusternikModel` (any F), with each term's power
``q̇ᵀ(term)`` and work.

For F linear and homogeneous in q̇ (``F = ω(q)·q̇``, every mechanical constraint, S 1.9)
the velocity and position terms together are the curl-like term of S (1.13a),
``μ(∂ω_j/∂qⁱ − ∂ω_i/∂qʲ) q̇ʲ = 2 S q̇``: the damping part ``R q̇`` is cancelled by the
symmetric half of the position term, and the whole variational reaction does no work
along the actual velocity (S 1.14, ``R^var·q̇ = 0``).

Sign convention: S's multiplier μ (here ``mu``). :mod:`robustrack.studies.constraint_models`
carries Kozlov's λ_K = −μ.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..constraints import Nonholonomic
from ..errors import ConstraintError, ParameterError
from ..plants.power import power, work

__all__ = ["ANATOMY_UNITS", "ConstraintDerivatives", "constraint_derivatives", "ReactionTerms", "lusternik_terms", "power", "work",
           "RunAnatomy", "reaction_anatomy", "TERMS"]

#: The terms of S (1.7), the velocity term split into damping (R q̇) and gyroscopic (S q̇) parts.
TERMS = ("inertial", "damping", "gyroscopic", "position", "frictional", "rheonomic")


@dataclass(frozen=True)
class ConstraintDerivatives:
    """The derivatives of constraint rows F_a(q, q̇, t) that S (1.7) needs, at states.

    Attributes
    ----------
    F : ndarray (..., m)
    F_q, F_qd : ndarray (..., m, n)
        ∂F_a/∂qⁱ and ∂F_a/∂q̇ⁱ.
    F_qdqd, F_qdq : ndarray (..., m, n, n)
        ∂²F_a/∂q̇ⁱ∂q̇ʲ and ∂²F_a/∂q̇ⁱ∂qʲ (row a, index i, index j).
    F_qdt : ndarray (..., m, n)
        ∂²F_a/∂q̇ⁱ∂t.
    F_t : ndarray (..., m)
    """

    F: np.ndarray
    F_q: np.ndarray
    F_qd: np.ndarray
    F_qdqd: np.ndarray
    F_qdq: np.ndarray
    F_qdt: np.ndarray
    F_t: np.ndarray


def constraint_derivatives(constraint: Nonholonomic) -> Callable:
    """The derivatives of S (1.7) of a constraint's rows, derived with sympy and compiled to numpy.

    Parameters
    ----------
    constraint : Nonholonomic
        The rows F(q, q̇, t) (linear in q̇ or not; holonomic rows are written
        ``∂G/∂q · q̇``, S 1.10).

    Returns
    -------
    callable
        ``derivs(q, qd, t=0.0) -> ConstraintDerivatives``, any leading axes.

    Raises
    ------
    ConstraintError
        ``constraint`` is not a :class:`~robustrack.constraints.Nonholonomic` (its symbolic
        rows are needed).
    """
    import sympy as sp

    if not isinstance(constraint, Nonholonomic):
        raise ConstraintError(f"`constraint` must be a robustrack.constraints.Nonholonomic (its symbolic rows F give "
                              f"the terms of S 1.7); got {type(constraint).__name__}.")
    q, qd, t = sp.Matrix(constraint.q), sp.Matrix(constraint.qd), constraint.t
    F = constraint.expr
    m, n = F.shape[0], len(q)
    F_q, F_qd = F.jacobian(q), F.jacobian(qd)
    F_qdqd = [F_qd.row(a).T.jacobian(qd) for a in range(m)]
    F_qdq = [F_qd.row(a).T.jacobian(q) for a in range(m)]
    F_qdt, F_t = F_qd.diff(t), F.diff(t)
    parts = [list(F), list(F_q), list(F_qd), [e for X in F_qdqd for e in X], [e for X in F_qdq for e in X],
             list(F_qdt), list(F_t)]
    shapes = [(m,), (m, n), (m, n), (m, n, n), (m, n, n), (m, n), (m,)]
    flat = [e for p in parts for e in p]
    params = constraint.params
    f = sp.lambdify([*q, *qd, t, *params], flat, modules="numpy", cse=True)
    pvals = [np.asarray(v, dtype=float) for v in params.values()]

    def derivs(qv, qdv, tv=0.0) -> ConstraintDerivatives:
        qv, qdv, tv = (np.asarray(x, dtype=float) for x in (qv, qdv, tv))
        if qv.shape[-1:] != (n,) or qdv.shape[-1:] != (n,):
            raise ParameterError(f"`q` and `qd` must have shape (..., {n}); got {qv.shape}, {qdv.shape}.")
        batch = np.broadcast_shapes(qv.shape[:-1], qdv.shape[:-1], tv.shape, *(p.shape for p in pvals))
        vals = f(*(qv[..., i] for i in range(n)), *(qdv[..., i] for i in range(n)), tv, *pvals)
        out, k = [], 0
        for shape in shapes:
            size = int(np.prod(shape))
            block = np.empty(batch + (size,))
            for j in range(size):
                block[..., j] = vals[k + j]
            out.append(block.reshape(batch + shape))
            k += size
        return ConstraintDerivatives(*out)

    return derivs


@dataclass(frozen=True)
class ReactionTerms:
    """The terms of the Lusternik reaction S (1.7) at states (see the module docstring).

    Attributes
    ----------
    inertial, damping, gyroscopic, position, frictional, rheonomic : ndarray (..., n)
        The generalized forces; their sum is the reaction R (``M q̈ = Q + R``).
    R, S : ndarray (..., n, n)
        The symmetric (damping) and antisymmetric (gyroscopic) parts of the velocity
        term's matrix ``K = −μᵃ F_a,q̇q`` (S 3.8): ``damping = R q̇``, ``gyroscopic = S q̇``.
    """

    inertial: np.ndarray
    damping: np.ndarray
    gyroscopic: np.ndarray
    position: np.ndarray
    frictional: np.ndarray
    rheonomic: np.ndarray
    R: np.ndarray
    S: np.ndarray

    @property
    def total(self) -> np.ndarray:
        """The sum of the six terms: the reaction R of S (1.7)."""
        return sum(getattr(self, k) for k in TERMS)

    def as_dict(self) -> dict:
        """``{term name: force}`` in the order of :data:`TERMS`."""
        return {k: getattr(self, k) for k in TERMS}


def lusternik_terms(d: ConstraintDerivatives, qd, qdd, mu, mu_dot) -> ReactionTerms:
    """The terms of the Lusternik reaction S (1.7) from the constraint's derivatives (pure array math).

    Parameters
    ----------
    d : ConstraintDerivatives
        At the states (:func:`constraint_derivatives`).
    qd, qdd : array_like (..., n)
        Velocities and accelerations.
    mu, mu_dot : array_like (..., m)
        S's multipliers μ and their rates μ̇ (Kozlov's λ = −μ).

    Returns
    -------
    ReactionTerms
    """
    qd, qdd, mu, mu_dot = (np.asarray(x, dtype=float) for x in (qd, qdd, mu, mu_dot))
    K = -np.einsum("...a,...aij->...ij", mu, d.F_qdq)
    R, S = 0.5 * (K + np.swapaxes(K, -1, -2)), 0.5 * (K - np.swapaxes(K, -1, -2))
    return ReactionTerms(
        inertial=-np.einsum("...a,...aij,...j->...i", mu, d.F_qdqd, qdd),
        damping=np.einsum("...ij,...j->...i", R, qd),
        gyroscopic=np.einsum("...ij,...j->...i", S, qd),
        position=np.einsum("...a,...ai->...i", mu, d.F_q),
        frictional=-np.einsum("...a,...ai->...i", mu_dot, d.F_qd),
        rheonomic=-np.einsum("...a,...ai->...i", mu, d.F_qdt),
        R=R, S=S)


@dataclass(frozen=True)
class RunAnatomy:
    """The reaction of a vakonomic run split into the terms of S (1.7), with powers and works.

    Attributes
    ----------
    t : ndarray (T,)
    terms : ReactionTerms
        Each term along the run, ``(T, n)``.
    reaction : ndarray (T, n)
        The total reaction from the equations of motion, ``M q̈ − Q`` (S 1.6a) with the
        run's own q̈ — the independent truth the terms must sum to.
    powers, works : dict {term: ndarray (T,)}
        ``q̇ᵀ(term)`` and its trapezoidal work (:func:`work`); key ``"total"`` for the reaction.
    mu, mu_dot : ndarray (T, m)
        S's multipliers and their rates along the run.
    sum_mismatch : float
        ``max_t ‖Σ terms − reaction‖∞`` relative to the run's force scale
        (the largest ‖term‖∞ or ‖reaction‖∞ over the run).
    gyroscopic_power_ratio : float
        ``max_t |q̇ᵀ S q̇|`` relative to the run's power scale (the largest
        ``Σ_terms |q̇ᵀ term|``).
    """

    t: np.ndarray
    terms: ReactionTerms
    reaction: np.ndarray
    powers: dict
    works: dict
    mu: np.ndarray
    mu_dot: np.ndarray
    sum_mismatch: float
    gyroscopic_power_ratio: float

    def metrics(self) -> dict:
        """A scenario's metrics of the split (flat, JSON-ready; units in :data:`ANATOMY_UNITS`).

        ``anatomy_sum_mismatch``, ``gyroscopic_power_ratio``, per term ``max_abs_<term>_power`` and
        ``<term>_work`` (the work over the run), and ``reaction_work``, the work of the whole reaction.
        """
        out = {"anatomy_sum_mismatch": self.sum_mismatch, "gyroscopic_power_ratio": self.gyroscopic_power_ratio}
        for k in TERMS:
            out[f"max_abs_{k}_power"] = float(np.max(np.abs(self.powers[k])))
            out[f"{k}_work"] = float(self.works[k][-1])
        out["reaction_work"] = float(self.works["total"][-1])
        return out

    def summary(self) -> dict:
        """JSON-ready: the checks, and each term's largest |force|, largest |power| and final work."""
        out = {"sum_mismatch": self.sum_mismatch, "gyroscopic_power_ratio": self.gyroscopic_power_ratio}
        for k, f in {**self.terms.as_dict(), "total": self.reaction}.items():
            out[k] = {"max_abs_force": float(np.max(np.abs(f))), "max_abs_power": float(np.max(np.abs(self.powers[k]))),
                      "work": float(self.works[k][-1])}
        return out


#: Units of :meth:`RunAnatomy.metrics` in a model whose forces are N and velocities m/s (or N·m and rad/s).
ANATOMY_UNITS = {"anatomy_sum_mismatch": "", "gyroscopic_power_ratio": "", "reaction_work": "J",
                 **{f"max_abs_{k}_power": "W" for k in TERMS}, **{f"{k}_work": "J" for k in TERMS}}


def _run_states(model, result):
    """(q, q̇, q̈, μ, μ̇, t) of the base system along a run of ``model``, in S's sign (μ)."""
    from .constraint_models import VakonomicModel

    t = np.asarray(result.t, dtype=float)
    k = model.base_plant.n
    q, qd, qdd = (np.asarray(x, dtype=float)[..., :k] for x in (result.q, result.qd, result.qdd))
    ext_v, ext_a = np.asarray(result.qd, dtype=float)[..., k:], np.asarray(result.qdd, dtype=float)[..., k:]
    if isinstance(model, VakonomicModel):  # Kozlov's λ = μ̇_ext is −μ_S (constraint_models)
        return q, qd, qdd, -ext_v, -ext_a, t
    return q, qd, qdd, ext_v, ext_a, t


def reaction_anatomy(model, result) -> RunAnatomy:
    """Split the reaction of a vakonomic run into the terms of S (1.7); their powers and works.

    Parameters
    ----------
    model : VakonomicModel or LusternikModel
        The model the run integrated (:class:`~robustrack.studies.constraint_models.VakonomicModel`,
        :class:`~robustrack.studies.lusternik.LusternikModel`).
    result : ConstrainedResult
        Its run (:func:`robustrack.tracking.simulate_constrained` of ``model.plant``,
        ``model.constraint``): extended states and accelerations ``q, qd, qdd``.

    Returns
    -------
    RunAnatomy

    Raises
    ------
    ParameterError
        ``model`` is not one of the two models, or ``result`` does not have its extended
        coordinates.
    """
    for name in ("base_plant", "base_constraint"):
        if not hasattr(model, name):
            raise ParameterError(f"`model` must be a VakonomicModel or a LusternikModel; got {type(model).__name__}.")
    n_ext = model.plant.n
    if np.shape(result.q)[-1:] != (n_ext,) or getattr(result, "qdd", None) is None:
        raise ParameterError(f"`result` must be a run of the model (extended coordinates {model.plant.coordinates}, "
                             f"with q̈); got q of shape {np.shape(result.q)}.")
    q, qd, qdd, mu, mu_dot, t = _run_states(model, result)
    plant = model.base_plant
    derivs = getattr(model, "derivatives", None) or constraint_derivatives(model.base_constraint)
    terms = lusternik_terms(derivs(q, qd, t), qd, qdd, mu, mu_dot)
    reaction = np.einsum("...ij,...j->...i", plant.mass_matrix(q, t), qdd) - plant.given_force(q, qd, t)
    forces = {**terms.as_dict(), "total": reaction}
    powers = {k: power(f, qd) for k, f in forces.items()}
    works = {k: work(t, p) for k, p in powers.items()}
    force_scale = max(float(np.max(np.abs(f))) for f in forces.values()) if t.size else 0.0
    power_scale = float(np.max(sum(np.abs(powers[k]) for k in TERMS))) if t.size else 0.0
    mismatch = float(np.max(np.abs(terms.total - reaction))) if t.size else 0.0
    gyro = float(np.max(np.abs(powers["gyroscopic"]))) if t.size else 0.0
    return RunAnatomy(t=t, terms=terms, reaction=reaction, powers=powers, works=works, mu=mu, mu_dot=mu_dot,
                      sum_mismatch=mismatch / force_scale if force_scale > 0 else mismatch,
                      gyroscopic_power_ratio=gyro / power_scale if power_scale > 0 else gyro)
