"""Robust tracking with a positive semi-definite mass matrix (W ch. 10 on W ch. 4–7).

W's controlled actual system ``M_a q̈_c = Q_a + Qᶜ + M u`` (W 5.2.17) needs M_a > 0. With a
singular M (a massless body, redundant coordinates) the plant moves only together with the
*physical* constraints ``A_p q̈ = b_p`` that close its null space (``rank [M_a; A_p] = n``,
W 4.3), which nature enforces on the actual plant as on the nominal one. The control
requirements ``A_c q̈ = b_c`` are realized by the control force only. Here (derivation and
proofs: ``docs/theory/singular-tracking.md``):

* **nominal** — the fundamental equation on the auxiliary (augmented) system of
  ``[A_p; A_c]`` (W 4.3.8–4.3.10, 5.2.8–5.2.11): q̈, ``Qᶜ = M q̈ − Q``;
* **controlled actual** — ``M_a q̈_c = Q_a + Qᶜ(t) + Qᵘ + A_pᵀ λ``, ``A_p q̈_c = b_p``, solved
  on the auxiliary system ``M_a + α² A_pᵀ G A_p`` (W Result 4.2); the motion does not depend on
  α, G, nor on forces along range(A_pᵀ) (the physical reaction absorbs them);
* **compensator on the auxiliary system** — d independent coordinates S (``S Z = I``) and the
  basis ``Z(q_c) = [I; −A_dep⁻¹ A_ind]`` of null(A_p): the compensator sees the reduced errors
  ``ε = S e``, ``ε̇ = S ė`` and its acceleration ``û`` is applied as
  ``Qᵘ = M Z û = M_AG Z û`` (the two agree because ``A_p Z = 0``). Then, exactly,

      ε̈ = δq_r + û − M̃_r û,   δq_r = S δq,   M̃_r = I − (Zᵀ M_a Z)⁻¹ Zᵀ M Z,

  W's error equation (5.3.3) for the d-dimensional positive definite reduced system, so the
  compensator's bound (GSS: W 7.2.26–7.2.28) holds for ε under ``‖δq_r‖∞ ≤ Γ`` and
  ``‖M̃_r‖∞ ≤ 1 − α0/σ``; δq is (5.3.5) with constrained accelerations:
  ``δq = q̈_a(q_c, q̇_c; Qᶜ) − q̈(q, q̇)``. The full errors are ``e = Z ε`` for linear
  A_p (to first order otherwise): ``‖e‖∞ ≤ ‖Z‖∞ ‖ε‖∞``.

Without physical constraints and M > 0 (``Z = I``) every formula is W's.

This is a separate entry point on the numpy path: :func:`simulate_singular_tracking`
integrates with scipy (the compiled kernels solve the actual system with a Cholesky factor of
M_a and take no physical constraint), using the engine's public pieces:
:meth:`~robustrack.tracking.TrackingProblem.nominal_run` for the nominal system,
:func:`~robustrack.mechanics.solve_constrained` for every constrained acceleration,
:func:`~robustrack.tracking.assess.peak_metrics` for the bound check.

The seed's problem
------------------
A tracking problem with a positive semi-definite mass matrix: W 4.4.2's springs with m1 = 0.

wall–k1–(massless body 1)–k2–m2 (:class:`~robustrack.plants.examples.TwoMassSprings`,
``M = diag(0, m2)``, W 4.4.10). The physical constraint is the massless body's force balance
``φ_p = (k1 + k2) x1 − k2 x2 + k2 (l10 + d) = 0`` (W 4.4.12–4.4.13), kept by the plant; the
control requirement makes m2 follow ``x2 = l10 + d + a sin(ω t)``, stabilized
(φ̈ + 2ξω_c φ̇ + ω_c² φ = 0, docs/theory/stabilization.md). The actual m2 is uncertain; the massless body stays
massless (a structural zero). Run by :func:`~robustrack.tracking.singular.simulate_singular_tracking`
(``python scripts/singular_tracking_report.py``; ``docs/results/singular-tracking.md``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .._validate import finite
from ..constraints import Constraint, stack
from ..errors import ParameterError, RankConditionError, SolverError
from ..mechanics import solve_constrained
from .assess import assumptions_held, peak_metrics

__all__ = ["independent_coordinates", "null_basis", "reduced_uncertainty", "physical_motion",
           "SingularTracking", "SingularTrackingResult", "simulate_singular_tracking", "singular_monte_carlo",
           "OLD_ORDER",
           "SingularProblem", "massless_springs_problem"]


def independent_coordinates(A_p, *, rtol: float = 1e-10) -> tuple:
    """d = n − rank A_p coordinates whose values fix the others through ``A_p`` (pivoted QR).

    The pivot columns of a column-pivoted QR of A_p are the dependent coordinates (their block
    of A_p is the best conditioned one); the rest are independent.

    Parameters
    ----------
    A_p : array_like (m_p, n)
        The physical constraints' matrix at one state.
    rtol : float
        Relative cut-off on the diagonal of R below which a pivot counts as zero.

    Returns
    -------
    tuple of int
        The independent coordinates, increasing.
    """
    from scipy.linalg import qr

    A_p = np.atleast_2d(np.asarray(A_p, dtype=float))
    n = A_p.shape[-1]
    if A_p.shape[0] == 0:
        return tuple(range(n))
    _, R, piv = qr(A_p, pivoting=True, mode="economic")
    d = np.abs(np.diag(R))
    rank = int(np.sum(d > rtol * max(d.max(initial=0.0), np.finfo(float).tiny)))
    return tuple(sorted(int(i) for i in piv[rank:]))


def null_basis(A_p, independent) -> np.ndarray:
    """Z with ``A_p Z = 0`` and ``Z[independent] = I`` (so ``S Z = I``), shape ``(..., n, d)``.

    ``Z_dep = −A_dep⁺ A_ind`` (A_dep: the columns of the dependent coordinates).

    Parameters
    ----------
    A_p : ndarray (..., m_p, n)
    independent : sequence of int
        The d independent coordinates.

    Returns
    -------
    ndarray (..., n, d)

    Raises
    ------
    RankConditionError
        The dependent coordinates' columns do not span the range of A_p there: the chosen
        ``independent`` coordinates are not independent (the message says which to change).
    """
    A_p = np.asarray(A_p, dtype=float)
    n = A_p.shape[-1]
    ind = list(independent)
    dep = [i for i in range(n) if i not in ind]
    batch = A_p.shape[:-2]
    Z = np.zeros(batch + (n, len(ind)))
    Z[..., ind, range(len(ind))] = 1.0
    if dep:
        Z[..., dep, :] = -np.linalg.pinv(A_p[..., dep]) @ A_p[..., ind]
    scale = max(float(np.abs(A_p).max(initial=0.0)), np.finfo(float).tiny)
    miss = float(np.abs(A_p @ Z).max(initial=0.0))
    if miss > 1e-9 * scale * max(1.0, float(np.abs(Z).max(initial=0.0))):
        raise RankConditionError(
            f"`independent` = {list(ind)}: the physical constraints do not fix the coordinates {dep} from "
            f"them (‖A_p Z‖ = {miss:.3g}); pick other independent coordinates (independent_coordinates(A_p) "
            "proposes some) or check the physical constraints.")
    return Z


def physical_motion(plant, physical, q, qd, t, force=None, *, alpha=1.0, G=None):
    """q̈ of ``M q̈ = Q + force + A_pᵀ λ`` with ``A_p q̈ = b_p`` (W 4.3.8–4.3.10, Result 4.2).

    :func:`~robustrack.mechanics.solve_constrained` on the plant and the physical constraints:
    where M is singular it solves the auxiliary system ``M + α² A_pᵀ G A_p`` (the answer does
    not depend on α, G); with ``physical`` None, ``q̈ = M⁻¹ (Q + force)``.

    Parameters
    ----------
    plant : Plant
    physical : Constraint or None
    q, qd : ndarray (..., n)
    t : float or ndarray
    force : ndarray (..., n), optional
        Applied force (Qᶜ + Qᵘ of the tracking loop).
    alpha, G
        The auxiliary system's α and G (keyword-only).

    Returns
    -------
    ConstrainedMotion
    """
    Q = plant.given_force(q, qd, t)
    if force is not None:
        Q = Q + force
    M = plant.mass_matrix(q, t)
    if physical is None:
        A = np.zeros(np.shape(q)[:-1] + (0, plant.n))
        b = np.zeros(np.shape(q)[:-1] + (0,))
    else:
        A, b = physical.matrices(q, qd, t)
    return solve_constrained(M, Q, A, b, alpha=alpha, G=G, check=False)


def reduced_uncertainty(nominal, actual, physical, independent, q, qd, qc, qcd, Qc, t):
    """What the reduced bound assumes, along a run: ‖δq_r‖∞ and ‖M̃_r‖∞ (module docstring).

    ``δq_r = S (q̈_a(q_c, q̇_c; Qᶜ) − q̈(q, q̇; Qᶜ))`` with both accelerations constrained by the
    physical constraints (W 5.3.5 on the auxiliary system); ``M̃_r = I − (Zᵀ M_a Z)⁻¹ Zᵀ M Z``
    at q_c (W 5.3.4 on the reduced system).

    Parameters
    ----------
    nominal, actual : Plant
    physical : Constraint or None
    independent : sequence of int
    q, qd, qc, qcd, Qc : ndarray (T, n)
    t : ndarray (T,)

    Returns
    -------
    dict
        ``dq_r`` (T, d), ``dq_norm`` (T,), ``Mtilde_norm`` (T,), ``Z_norm`` (T,) (‖Z‖∞ at q_c).
    """
    ind = list(independent)
    acc_a = physical_motion(actual, physical, qc, qcd, t, Qc).qdd
    acc = physical_motion(nominal, physical, q, qd, t, Qc).qdd
    dq_r = (acc_a - acc)[..., ind]
    Z = _basis(physical, qc, qcd, t, ind, nominal.n)
    Zt = np.swapaxes(Z, -1, -2)
    Mr = Zt @ nominal.mass_matrix(qc, t) @ Z
    Mar = Zt @ actual.mass_matrix(qc, t) @ Z
    Mt = np.eye(len(ind)) - np.linalg.solve(Mar, Mr)
    return {"dq_r": dq_r, "dq_norm": np.abs(dq_r).max(axis=-1), "Mtilde_norm": np.abs(Mt).sum(axis=-1).max(axis=-1),
            "Z_norm": np.abs(Z).sum(axis=-1).max(axis=-1)}


def _basis(physical, q, qd, t, ind, n):
    if physical is None:
        return np.broadcast_to(np.eye(n), np.shape(q)[:-1] + (n, n))
    return null_basis(physical.matrices(q, qd, t)[0], ind)


@dataclass(frozen=True)
class SingularTracking:
    """The validated problem of :func:`simulate_singular_tracking`; :meth:`rhs` is the controlled actual system."""

    nominal: object
    actual: object
    physical: Constraint | None
    constraint: Constraint | None
    compensator: object
    independent: tuple
    alpha: float
    G: object

    @property
    def n(self) -> int:
        return self.nominal.n

    def forces(self, t, x, y):
        """(Qᶜ(t), Qᵘ, û) at the controlled state x = (q_c, q̇_c, z) and the nominal state y = (q, q̇)."""
        n, ind = self.n, list(self.independent)
        q, qd = y[..., :n], y[..., n:2 * n]
        qc, qcd, z = x[..., :n], x[..., n:2 * n], x[..., 2 * n:]
        Qc = np.zeros_like(q) if self.constraint is None else solve_constrained(
            self.nominal.mass_matrix(q, t), self.nominal.given_force(q, qd, t),
            *self.constraint.matrices(q, qd, t), alpha=self.alpha, G=None, check=False).Qc
        if self.compensator is None:
            return Qc, np.zeros_like(q), np.zeros(q.shape[:-1] + (len(ind),))
        uh = self.compensator(t, (qc - q)[..., ind], (qcd - qd)[..., ind], z)
        Z = _basis(self.physical, qc, qcd, t, ind, n)
        Qu = (self.nominal.mass_matrix(qc, t) @ (Z @ uh[..., None]))[..., 0]  # Qᵘ = M Z û
        return Qc, Qu, uh

    def rhs(self, t, x, y):
        """d/dt (q_c, q̇_c, z): ``M_a q̈_c = Q_a + Qᶜ + Qᵘ + A_pᵀλ``, ``A_p q̈_c = b_p``."""
        n, ind = self.n, list(self.independent)
        Qc, Qu, _ = self.forces(t, x, y)
        qc, qcd, z = x[..., :n], x[..., n:2 * n], x[..., 2 * n:]
        acc = physical_motion(self.actual, self.physical, qc, qcd, t, Qc + Qu, alpha=self.alpha, G=self.G).qdd
        if self.compensator is not None and z.shape[-1]:
            zdot = self.compensator.state_derivative(t, (qc - y[..., :n])[..., ind], (qcd - y[..., n:])[..., ind], z)
        else:
            zdot = z * 0
        return np.concatenate([qcd, acc, zdot], axis=-1)


@dataclass(frozen=True)
class SingularTrackingResult:
    """A tracking run on the auxiliary system (:func:`simulate_singular_tracking`).

    Attributes
    ----------
    t : ndarray (T,)
        Output times.
    q, qd : ndarray (T, n)
        The nominal system.
    qc, qcd : ndarray (T, n)
        The controlled actual system.
    qa, qad : ndarray (T, n) or None
        The actual system under Qᶜ(t) alone.
    Qc, Qu : ndarray (T, n)
        The nominal control force and the compensator's force Qᵘ = M Z û.
    e, edot : ndarray (T, n)
        e = q_c − q, ė = q̇_c − q̇ (W 7.2.1–7.2.2).
    independent : tuple of int
        The coordinates S the compensator sees.
    residual_physical : ndarray (T, m_p) or None
        The physical constraints' residual on the controlled actual system.
    metrics : dict
        On every accepted step and the output grid: ``max_abs_e``, ``max_abs_edot`` (full errors),
        ``max_abs_eps``, ``max_abs_epsdot`` (reduced errors ε = S e), ``bounds_held`` (ε against
        the compensator's bound), ``bounds_held_full`` (e, ė against the lifted bound
        ``max ‖Z‖∞ ×`` the compensator's), ``max_norm_dq_r``, ``max_norm_Mtilde_r``,
        ``assumptions_held``, ``max_norm_Z``, ``actual_max_abs_e`` (uncompensated),
        ``max_abs_Qu``, ``max_abs_Qc``, ``max_physical_residual``.
    bounds : PromisedBounds or None
        The compensator's bound on the reduced errors.
    success : bool
    """

    t: np.ndarray
    q: np.ndarray
    qd: np.ndarray
    qc: np.ndarray
    qcd: np.ndarray
    qa: np.ndarray | None
    qad: np.ndarray | None
    Qc: np.ndarray
    Qu: np.ndarray
    independent: tuple
    residual_physical: np.ndarray | None
    metrics: dict
    bounds: object
    success: bool
    e: np.ndarray
    edot: np.ndarray


def _check_problem(nominal, actual, physical, requirement, compensator, independent, q0, qd0):
    n = nominal.n
    if actual.n != n:
        raise ParameterError(f"The actual plant has {actual.n} coordinates; the nominal has {n}.")
    for name, c in (("physical", physical), ("requirement", requirement)):
        if c is not None and (not isinstance(c, Constraint) or c.n != n):
            raise ParameterError(f"`{name}` must be a Constraint on the plant's {n} coordinates; got {c!r}.")
    if compensator is not None and getattr(compensator, "discontinuous", False):
        raise ParameterError("`compensator`: a discontinuous control function (sign) stalls the adaptive "
                             "integrator of this loop; take a continuous one (saturation, signed-quadratic, ...).")
    q0 = finite(q0, "q0").reshape(-1)
    qd0 = finite(qd0, "qd0").reshape(-1)
    if q0.shape != (n,) or qd0.shape != (n,):
        raise ParameterError(f"`q0` and `qd0` must have shape ({n},); got {q0.shape} and {qd0.shape}.")
    if independent is None:
        independent = (tuple(range(n)) if physical is None
                       else independent_coordinates(physical.matrices(q0, qd0, 0.0)[0]))
    independent = tuple(int(i) for i in independent)
    if len(set(independent)) != len(independent) or not all(0 <= i < n for i in independent):
        raise ParameterError(f"`independent` must list distinct coordinates in 0..{n - 1}; got {list(independent)}.")
    if physical is None and len(independent) != n:
        raise ParameterError(f"`independent`: without physical constraints all {n} coordinates are independent.")
    return q0, qd0, independent


def _integrate_batch(loop, run, x0, k, method, rtol, atol):
    """Integrate k controlled actual systems at once (one ODE, block-diagonal Jacobian sparsity).

    ``x0 (k, s)``; the plants' parameters carry the sample axis (shape (k,) or (k, bodies)).
    Returns scipy's solution of the flattened state (k·s,).
    """
    from scipy.integrate import solve_ivp
    from scipy.sparse import block_diag

    s = x0.shape[-1]

    def fun(t, x):
        y = run.solution(np.array([t]))[0]
        return loop.rhs(t, x.reshape(k, s), y).reshape(-1)

    kw = {}
    if method in ("BDF", "Radau"):  # finite differences over s column groups, not k·s columns
        kw["jac_sparsity"] = block_diag([np.ones((s, s))] * k, format="csc")
    sol = solve_ivp(fun, run.t_span, x0.reshape(-1), method=method, t_eval=run.t_eval, rtol=rtol, atol=atol,
                    dense_output=True, **kw)
    if not sol.success:
        raise SolverError(f"the controlled actual system: {method} failed at t = {sol.t[-1]:.6g}: {sol.message}",
                          t_reached=float(sol.t[-1]), partial=None)
    return sol


def _prepare(nominal, actual, physical, requirement, compensator, q0, qd0, t_span, independent, alpha, G,
             grid, rtol, atol, qc0=None, qcd0=None):
    from .problem import TrackingProblem

    q0, qd0, independent = _check_problem(nominal, actual, physical, requirement, compensator, independent, q0, qd0)
    n, d = nominal.n, len(independent)
    parts = [c for c in (physical, requirement) if c is not None]
    constraint = None if not parts else (parts[0] if len(parts) == 1 else stack(*parts))
    run = TrackingProblem(nominal, constraint, None, q0, qd0, t_span, **grid, rtol=rtol, atol=atol,
                          backend="numpy").nominal_run()
    qc0 = q0 if qc0 is None else finite(qc0, "qc0").reshape(n)
    qcd0 = qd0 if qcd0 is None else finite(qcd0, "qcd0").reshape(n)
    z0 = compensator.initial_state(d) if compensator is not None else np.zeros(0)
    x0 = np.concatenate([qc0, qcd0, z0])
    return run, constraint, independent, x0


#: The positional parameters :func:`simulate_singular_tracking` took in earlier versions (still run, with a notice).
OLD_ORDER = ("nominal", "actual", "physical", "requirement", "compensator", "q0", "qd0", "t_span")
#: The keywords of that form, now fields of the :class:`~robustrack.tracking.TrackingProblem`.
_OLD_SETTINGS = ("qc0", "qcd0", "gamma", "uncompensated", "n_points", "method", "rtol", "atol")
#: The same for :func:`singular_monte_carlo` (its samples come after the problem's fields), and the grid that form
#: had by default (201 points; the problem's default is 1001).
_OLD_MC_ORDER = ("nominal", "physical", "requirement", "compensator", "q0", "qd0", "t_span", "samples")
_OLD_MC_SETTINGS = ("gamma", "n_points", "method", "rtol", "atol")
_OLD_MC_DEFAULTS = {"n_points": 201}


def _the_problem(function, takes, args, keywords, order, settings, new_form, defaults=None):
    """``(problem, fields)`` of a call of ``function``: ``args`` = (problem, physical, …) and ``keywords`` the
    problem's fields to change; or, in the earlier form that re-listed the problem's fields (``order`` by position,
    ``settings`` by keyword, ``defaults`` where not given), the problem made of them, said with an
    :class:`OldCallOrder` notice naming ``new_form``. ``fields``: the call's other arguments by name
    (``physical``, …). Then the problem's settings the auxiliary system cannot take are refused."""
    import warnings

    from .problem import OldCallOrder, TrackingProblem

    if getattr(args[0], "is_tracking_problem", False):
        if len(args) > len(takes):
            raise ParameterError(f"{function}({', '.join(takes)}, ...) takes {len(takes)} positional arguments; "
                                 f"got {len(args)}.")
        problem = args[0].replace(**keywords) if keywords else args[0]
        fields = dict(zip(takes[1:], args[1:]))
    else:
        if len(args) > len(order):
            raise ParameterError(f"{function} takes ({', '.join(takes)}); got {len(args)} positional arguments.")
        given = dict(zip(order, args))
        twice = sorted(set(given) & set(keywords))
        unknown = sorted(set(keywords) - set(order) - set(settings))
        missing = [n for n in order if n not in given and n not in keywords]
        if twice or unknown or missing:
            what = (f"`{twice[0]}` twice" if twice else f"unknown keyword(s) {unknown}" if unknown
                    else f"no {missing}")
            raise ParameterError(f"{function}({', '.join(takes)}, independent=..., alpha=..., G=...): got {what}.")
        f = {**(defaults or {}), **given, **keywords}
        warnings.warn(f"{function}({', '.join(order)}, ...) is the old form; write {new_form} (the old form will be "
                      "refused in a later release).", OldCallOrder, stacklevel=3)
        problem = TrackingProblem(f["nominal"], f["requirement"], f["compensator"], f["q0"], f["qd0"], f["t_span"],
                                  actual=f.get("actual"), backend="numpy", **{k: f[k] for k in settings if k in f})
        fields = {k: f[k] for k in takes[1:]}
    refused = [k for k in ("sample_period", "actuators", "transient") if getattr(problem, k) is not None]
    if refused:
        raise ParameterError(f"{function}: the problem's {', '.join(f'`{k}`' for k in refused)} "
                             "cannot be used on the auxiliary system (continuous control, forces in every "
                             "direction, the automatic transient); leave them None.")
    return problem, fields


def simulate_singular_tracking(problem, physical=None, *old, independent=None, alpha=1.0, G=None, **changes):
    """Robust tracking of a plant whose mass matrix may be singular (module docstring; W ch. 4–7, 10).

    The tracking problem is the one description (:class:`~robustrack.tracking.TrackingProblem`): its
    constraint is the control requirement, realized by the control force Qᶜ; the physical constraints
    that close the mass matrix's null space come beside it. The earlier form
    ``simulate_singular_tracking(nominal, actual, physical, requirement, compensator, q0, qd0, t_span, ...)``
    still runs, with an :class:`~robustrack.tracking.problem.OldCallOrder` notice naming the call to write.

    Parameters
    ----------
    problem : TrackingProblem
        ``nominal``, ``actual`` (mass matrices positive semi-definite, ``rank [M; A_p] = n``, both),
        ``constraint`` — the control requirements A_c q̈ = b_c (W 5.2.8) —, ``compensator`` (works on the d
        reduced errors: ``û = compensator(t, S e, S ė, z)``), ``q0``, ``qd0`` (on the physical constraints),
        ``t_span``, ``qc0``, ``qcd0``, ``gamma``, ``uncompensated``, the output grid, ``method`` (of the
        controlled system; the nominal and uncompensated systems use DOP853), ``rtol``, ``atol``. It runs
        on numpy (scipy) whatever its ``backend``; ``sample_period``, ``actuators`` and ``transient`` are
        refused (continuous control, forces in every direction, the bound judged after the automatic
        transient).
    physical : Constraint or None
        The physical constraints A_p q̈ = b_p that hold on every plant (the massless body's force
        balance W 4.4.12, the quaternion's norm W 4.4.22, ...); their reaction is the plant's own.
    *old
        The earlier form's remaining positional arguments (with a notice).
    independent : sequence of int, optional
        The coordinates S (default :func:`independent_coordinates` of A_p at the start).
    alpha, G : optional
        The auxiliary system's α and G (W 4.3.8); nothing depends on them.
    **changes
        Fields of ``problem`` to change (``problem.replace(**changes)``), e.g. ``actual``, ``n_points``.

    Returns
    -------
    SingularTrackingResult

    Raises
    ------
    ParameterError
        Bad inputs (the argument is named).
    RankConditionError
        ``rank [M_a; A_p] < n`` at the start, or ``independent`` not independent.
    SolverError
        A solver failed.
    """
    pb, fields = _the_problem("simulate_singular_tracking", ("problem", "physical"), (problem, physical, *old),
                              changes, OLD_ORDER, _OLD_SETTINGS, "simulate_singular_tracking(TrackingProblem(nominal, "
                              "requirement, compensator, q0, qd0, t_span, actual=actual, ...), physical)")
    physical = fields.get("physical")
    nominal, requirement, compensator = pb.nominal, pb.constraint, pb.compensator
    actual = pb.actual if pb.actual is not None else pb.nominal
    gamma, uncompensated, method, rtol, atol = pb.gamma, pb.uncompensated, pb.method, pb.rtol, pb.atol
    run, constraint, independent, x0 = _prepare(nominal, actual, physical, requirement, compensator, pb.q0, pb.qd0,
                                                 pb.t_span, independent, alpha, G, {"t_eval": pb.t_eval}, rtol, atol,
                                                 pb.qc0, pb.qcd0)
    n, d = nominal.n, len(independent)
    loop = SingularTracking(nominal, actual, physical, constraint, compensator, independent, alpha, G)
    loop.rhs(run.t_span[0], x0, run.solution(np.array([run.t_span[0]]))[0])  # clear errors before solving
    ctl = _integrate_batch(loop, run, x0[None], 1, method, rtol, atol)
    t_eval = run.t_eval
    qa = qad = None
    max_qa_err = None
    if uncompensated and compensator is not None:
        bare = SingularTracking(nominal, actual, physical, constraint, None, independent, alpha, G)
        unc = _integrate_batch(bare, run, x0[None, :2 * n], 1, "DOP853", rtol, atol)
        qa, qad = unc.y[:n].T, unc.y[n:2 * n].T
        max_qa_err = float(np.abs(qa - run.solution(t_eval)[:, :n]).max())
    tf = np.union1d(t_eval, ctl.sol.ts)  # the solution itself: output grid and every step
    metrics, bounds = _assess(loop, compensator, gamma, tf, ctl.sol(tf).T, run.solution(tf), n, d)
    Y, X = run.solution(t_eval), ctl.y.T
    Qc, Qu, _ = loop.forces(t_eval, X, Y)
    metrics["actual_max_abs_e"] = max_qa_err
    metrics["max_abs_Qc"] = float(np.abs(Qc).max())
    res = None
    if physical is not None:
        try:
            res = physical.residual(X[:, :n], X[:, n:2 * n], t_eval)
            metrics["max_physical_residual"] = float(np.abs(res).max())
        except NotImplementedError:
            pass
    return SingularTrackingResult(t=t_eval, q=Y[:, :n], qd=Y[:, n:], qc=X[:, :n], qcd=X[:, n:2 * n], qa=qa, qad=qad,
                                  Qc=Qc, Qu=Qu, independent=independent, residual_physical=res, metrics=metrics,
                                  bounds=bounds, success=True, e=X[:, :n] - Y[:, :n], edot=X[:, n:2 * n] - Y[:, n:])


def singular_monte_carlo(problem, physical=None, samples=None, *old, independent=None, alpha=1.0, G=None,
                         **changes) -> list:
    """Track k sampled actual plants at once (one batched solve) and assess each (W 7.3's Monte Carlo).

    The same description as :func:`simulate_singular_tracking`: a :class:`~robustrack.tracking.TrackingProblem`
    (its ``actual`` is not read: the samples are the actual plants) and the physical constraints beside it. The
    earlier form ``singular_monte_carlo(nominal, physical, requirement, compensator, q0, qd0, t_span, samples, ...)``
    still runs, with an :class:`~robustrack.tracking.problem.OldCallOrder` notice naming the call to write.

    Parameters
    ----------
    problem : TrackingProblem
        ``nominal``, ``constraint`` (the control requirements), ``compensator``, ``q0``, ``qd0``, ``t_span``,
        ``qc0``, ``qcd0``, ``gamma``, the output grid, ``method``, ``rtol``, ``atol``, as
        :func:`simulate_singular_tracking` reads them (``uncompensated`` is not run here).
    physical : Constraint or None
        The physical constraints, as :func:`simulate_singular_tracking`.
    samples : dict
        Parameter name → the k actual values (shape (k,), or (k, bodies) for a per-body
        parameter): sample i is ``nominal.replace(name=values[i], ...)``.
    *old
        The earlier form's remaining positional arguments (with a notice).
    independent, alpha, G
        As :func:`simulate_singular_tracking` (keyword-only).
    **changes
        Fields of ``problem`` to change (``problem.replace(**changes)``), e.g. ``n_points``.

    Returns
    -------
    list of dict
        Per sample: its parameters and the metrics of :class:`SingularTrackingResult`.
    """
    pb, fields = _the_problem("singular_monte_carlo", ("problem", "physical", "samples"),
                              (problem, physical, samples, *old), changes, _OLD_MC_ORDER, _OLD_MC_SETTINGS,
                              "singular_monte_carlo(TrackingProblem(nominal, requirement, compensator, q0, qd0, "
                              "t_span, ...), physical, samples)", _OLD_MC_DEFAULTS)
    physical, samples = fields.get("physical"), fields.get("samples")
    nominal, compensator = pb.nominal, pb.compensator
    if not samples:
        raise ParameterError("`samples` must map at least one parameter name to its sampled values.")
    values = {name: np.asarray(v, dtype=float) for name, v in samples.items()}
    k = {v.shape[0] if v.ndim else 0 for v in values.values()}
    if len(k) != 1 or 0 in k:
        raise ParameterError(f"`samples`: every parameter needs the same number k >= 1 of values (first axis); "
                             f"got {({n: v.shape for n, v in values.items()})}.")
    k = k.pop()
    plants = [nominal.replace(**{name: v[i] for name, v in values.items()}) for i in range(k)]
    batch = nominal.replace(**values)
    run, constraint, independent, x0 = _prepare(nominal, plants[0], physical, pb.constraint, compensator, pb.q0,
                                                 pb.qd0, pb.t_span, independent, alpha, G, {"t_eval": pb.t_eval},
                                                 pb.rtol, pb.atol, pb.qc0, pb.qcd0)
    n, d, s = nominal.n, len(independent), x0.size
    loop = SingularTracking(nominal, batch, physical, constraint, compensator, independent, alpha, G)
    X0 = np.broadcast_to(x0, (k, s))
    loop.rhs(run.t_span[0], X0, run.solution(np.array([run.t_span[0]]))[0])
    ctl = _integrate_batch(loop, run, X0, k, pb.method, pb.rtol, pb.atol)
    tf = np.union1d(run.t_eval, ctl.sol.ts)
    XF = ctl.sol(tf).T.reshape(tf.size, k, s)
    YF = run.solution(tf)
    out = []
    for i, plant in enumerate(plants):
        one = SingularTracking(nominal, plant, physical, constraint, compensator, independent, alpha, G)
        m, _ = _assess(one, compensator, pb.gamma, tf, XF[:, i], YF, n, d)
        out.append({"params": {name: v[i].tolist() for name, v in values.items()}, **m})
    return out


def _assess(loop, compensator, gamma, tf, xf, yf, n, d):
    """Peaks of the full and reduced errors, the bound check (reduced and lifted) and the assumptions.

    The reduced errors ε = S e are judged against the compensator's bound; the full errors
    against the lifted bound ``max ‖Z‖∞ ×`` it (e = Z ε for linear physical constraints).
    """
    from dataclasses import replace

    ind = list(loop.independent)
    e, ed = xf[:, :n] - yf[:, :n], xf[:, n:2 * n] - yf[:, n:]
    Qc, Qu, _ = loop.forces(tf, xf, yf)
    bounds = compensator.bounds(gamma) if compensator is not None else None
    seen = reduced_uncertainty(loop.nominal, loop.actual, loop.physical, ind, yf[:, :n], yf[:, n:], xf[:, :n],
                               xf[:, n:2 * n], Qc, tf)
    z_norm = float(seen["Z_norm"].max())
    reduced = peak_metrics(tf, e[:, ind], ed[:, ind], Qu, bounds)
    lifted = None if bounds is None else replace(bounds, e=z_norm * bounds.e, edot=z_norm * bounds.edot)
    full = peak_metrics(tf, e, ed, Qu, lifted)
    m = {"max_abs_e": full["max_abs_e"], "max_abs_edot": full["max_abs_edot"], "max_abs_Qu": full["max_abs_Qu"],
         "max_abs_eps": reduced["max_abs_e"], "max_abs_epsdot": reduced["max_abs_edot"],
         "bounds_held": reduced["bounds_held"], "bounds_held_full": full["bounds_held"],
         "bound_e": None if bounds is None else bounds.e, "bound_edot": None if bounds is None else bounds.edot,
         "bound_e_full": None if lifted is None else lifted.e,
         "bound_edot_full": None if lifted is None else lifted.edot,
         "max_norm_dq_r": float(seen["dq_norm"].max()), "max_norm_Mtilde_r": float(seen["Mtilde_norm"].max()),
         "max_norm_Z": z_norm}
    m["assumptions_held"] = assumptions_held(bounds, compensator, m["max_norm_dq_r"], m["max_norm_Mtilde_r"])
    return m, bounds

@dataclass(frozen=True)
class SingularProblem:
    """Everything :func:`~robustrack.tracking.singular.simulate_singular_tracking` takes but the actual plant."""

    nominal: object
    physical: object
    requirement: object
    compensator: object
    q0: tuple
    qd0: tuple
    t_span: tuple

    def args(self, actual):
        """The positional arguments of ``simulate_singular_tracking``'s earlier form for this actual plant
        (:data:`~robustrack.tracking.singular.OLD_ORDER`)."""
        return (self.nominal, actual, self.physical, self.requirement, self.compensator, self.q0, self.qd0,
                self.t_span)

    def tracking_problem(self, actual, **settings):
        """The :class:`~robustrack.tracking.TrackingProblem` of this actual plant (the requirement its constraint).

        Parameters
        ----------
        actual : Plant
        **settings
            Other fields of the problem (``n_points``, ``uncompensated``, ...).

        Returns
        -------
        TrackingProblem
            On numpy (the singular loop's backend); ``simulate_singular_tracking(problem, self.physical)``.
        """
        from .problem import TrackingProblem

        return TrackingProblem(self.nominal, self.requirement, self.compensator, self.q0, self.qd0, self.t_span,
                               actual=actual, backend="numpy", **settings)


def massless_springs_problem(*, m2: float = 1.0, amplitude: float = 0.3, omega: float = 2.0, xi: float = 1.0,
                             omega_c: float = 5.0, gamma_prime: float = 5.0, t_end: float = 10.0) -> SingularProblem:
    """W 4.4.2 (m1 = 0, k1 = 2, k2 = 3, l10 = 1, d = 0.2) tracked with GSS on the auxiliary system.

    GSS: K = 10, β0 = 10, α0 = 0.5, σ = 1, signed quadratic g with α_c = 2, ε = 1e-2 (W 7.3's
    settings) and Γ′ = ``gamma_prime`` (the largest ‖δq_r‖∞ over the ±30 % box of m2 is 0.51 m/s²).
    ``α0 = 0.5`` admits ‖M̃_r‖∞ = |δm2|/(m2 + δm2) ≤ 0.5, i.e. δm2 ≥ −m2/3.

    Parameters
    ----------
    m2 : float
        Nominal mass of body 2, kg.
    amplitude, omega : float
        The reference ``x2 = l10 + d + amplitude sin(omega t)`` (m, rad/s).
    xi, omega_c : float
        Its stabilization.
    gamma_prime : float
        GSS's Γ′ (m/s²).
    t_end : float
        Horizon, s.

    Returns
    -------
    SingularProblem
        Starting on both constraints: x2 = l10 + d, ẋ2 = amplitude·omega, x1 and ẋ1 from φ_p.
    """
    import sympy as sp

    from ..constraints import Holonomic, Stabilization
    from ..controllers import GSS, control_function
    from ..plants.examples import TwoMassSprings, two_mass_springs_constraint

    nominal = TwoMassSprings(m1=0.0, m2=m2)
    x1, x2, t = sp.symbols("x1 x2 t")
    rest = nominal.l10 + nominal.d
    requirement = Holonomic([x2 - rest - amplitude * sp.sin(omega * t)], [x1, x2], t,
                            stabilization=Stabilization.second_order(xi, omega_c))
    ratio = nominal.k2 / (nominal.k1 + nominal.k2)  # φ_p = 0: x1 = ratio (x2 − l10 − d)
    v0 = amplitude * omega
    gss = GSS(K=10.0, gamma_prime=gamma_prime, beta0=10.0, alpha0=0.5, sigma=1.0,
              f=control_function("signed-quadratic", eps=1e-2, alpha_c=2.0))
    return SingularProblem(nominal, two_mass_springs_constraint(nominal), requirement, gss, (0.0, rest),
                           (ratio * v0, v0), (0.0, float(t_end)))
