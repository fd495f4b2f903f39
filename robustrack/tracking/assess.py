"""Assessment of a tracking run: metrics, the promised bounds, and whether they held.

Metrics (:func:`tracking_metrics`) keep position and velocity errors apart and use
the infinity norm over coordinates as W does; per-coordinate values are given
alongside. They are taken on the solution itself — every accepted step of the
integrators merged with the output grid (``simulate.assemble``) — not on the output
grid alone, which misses peaks (W's GSS case 1: max|ė| 4.28e-3 rad/s on a 1001-point
grid, 4.86e-3 on the steps, converged under grid refinement).

The *transient* is the interval ``[0, transient)`` excluded when checking the
promised bounds. The bounds are statements about an invariant set (docs/theory/compensator-bounds.md): a run
whose error starts inside it (:func:`start_in_invariant_set`; e(0) = ė(0) = 0, W's runs, always does) is judged
from t = 0. A run started outside it is judged after 10 % of the horizon — a rule of thumb, since no reaching
time is proved — and its verdict is then only *observed* (``start_note`` says why), never guaranteed.
``reaching_time`` is the first time from which both errors stay inside their bounds to the end.

The verdict
-----------
One line on a tracking run's promise: did the bounds hold, by how much, and were they guaranteed?

:func:`bounds_verdict` reads the metrics and the promised bounds of a run (a
:class:`~robustrack.tracking.TrackingResult`'s, or the ``metrics`` and ``bounds`` of a report's
``summary.json``) and says it the way the command line ends ``robustrack report`` and a result's ``repr``
summarizes it. The judgement itself is :func:`robustrack.tracking.assess.tracking_metrics`'s
(``bounds_held``): every time after the judging window inside both bounds, which is the same as the largest
errors after the window being inside them — the numbers this line shows.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from .._format import format_value
from ..errors import RobustrackNotice

__all__ = ["tracking_metrics", "peak_metrics", "default_transient", "uncertainty_along_run", "assumptions_held",
           "assumption_limits", "assumption_texts", "ASSUMPTIONS", "dropped_term_gain", "dropped_term",
           "start_in_invariant_set",
           "least_squares_note", "LeastSquaresMotion", "INCONSISTENCY_RTOL",
           "bounds_verdict", "sensor_text"]

#: Relative misfit of a row, |(A q̈ − b)_i| / (‖A_i‖₂ ‖q̈‖₂ + |b_i|) (:func:`robustrack.mechanics.row_misfit`:
#: scale-free, so a row in small units is judged as strictly as the others), above which ``A q̈ = b``
#: counts as inconsistent.
#: Consistent constraints leave rounding, ~1e-16 times the conditioning of B = A M^{-1/2}; 1e-8
#: stays far above that for every catalog scenario (measured ≤ 1e-13) and far below a real misfit.
INCONSISTENCY_RTOL = 1e-8


class LeastSquaresMotion(RobustrackNotice):
    """The constraints were inconsistent along a run: the motion is the least-squares compromise."""


def least_squares_note(plant, constraint, q, qd, t, *, nonideal=None) -> str | None:
    """One sentence when ``A q̈ = b`` was inconsistent at some sampled time of a run, else None.

    The fundamental equation then returns the least-squares compromise (Gauss's principle in the
    M-weighted sense, :mod:`robustrack.mechanics`) instead of a motion that keeps the constraints;
    a run says so instead of reporting it silently.

    Parameters
    ----------
    plant : Plant
    constraint : Constraint or None
        None: nothing to check (None is returned).
    q, qd : ndarray (T, n)
        The states along the run.
    t : ndarray (T,)
        Their times.
    nonideal : callable, optional
        ``C(q, qd, t)`` of a non-ideal constraint (keyword-only).

    Returns
    -------
    str or None
    """
    from ..mechanics import row_misfit
    from ..plants.motion import constrained_motion

    t = np.asarray(t, dtype=float)
    if constraint is None or t.size == 0:
        return None
    A, b = constraint.matrices(q, qd, t)
    with np.errstate(all="ignore"):
        motion = constrained_motion(plant, constraint, q, qd, t, nonideal=nonideal, check=False)
        rel = np.max(row_misfit(A, b, motion.qdd, _unconstrained(plant, q, qd, t)), axis=-1,
                     initial=0.0)  # row by row, each against its own scale
    bad = np.nonzero(rel > INCONSISTENCY_RTOL)[0]
    if bad.size:  # judged against the solve's rounding there (a consistent constraint near a singularity)
        bad = bad[rel[bad] > _rounding(plant, A[bad], q[bad], t[bad])]
    if bad.size == 0:
        return None
    return (f"the constraints A q̈ = b are inconsistent at {bad.size} of {t.size} sampled times (first at "
            f"t = {t[bad[0]]:.4g} s, largest relative misfit {float(np.max(rel[bad])):.2g}): there the motion is the "
            "least-squares compromise of the fundamental equation, not one that keeps the constraints.")


def _rounding(plant, A, q, t):
    """The relative misfit rounding leaves at these states (:func:`~robustrack.mechanics.solve_rounding` of
    B = A L⁻ᵀ, M = L Lᵀ); :data:`INCONSISTENCY_RTOL` where M has no Cholesky factor."""
    from ..mechanics import solve_rounding

    try:
        L = np.linalg.cholesky(plant.mass_matrix(q, t))
    except (np.linalg.LinAlgError, ValueError):
        return INCONSISTENCY_RTOL
    B = np.swapaxes(np.linalg.solve(L, np.swapaxes(A, -1, -2)), -1, -2)  # A L⁻ᵀ
    return np.maximum(INCONSISTENCY_RTOL, solve_rounding(B)[..., 0])


def _unconstrained(plant, q, qd, t):
    """M⁻¹Q at the states (the scale q̈'s rounding has, :func:`~robustrack.mechanics.row_misfit`); None where M
    is singular (the augmented system's motion: judged on q̈ alone)."""
    try:
        return plant.unconstrained_acceleration(q, qd, t)
    except (np.linalg.LinAlgError, AttributeError, TypeError, ValueError):
        return None


#: The assumptions a compensator's bound makes of the uncertainty, by the measured quantity they limit:
#: ``max_norm_dq`` (max_t ‖δq‖∞ ≤ Γ) and ``max_norm_Mtilde`` (max_t ‖M̃_a‖∞ ≤ 1 − α0/σ); W 7.2.9, 8.2.18, 8.3.8;
#: for GD also ``max_norm_P`` (max_t ‖(I − M̃_a)(e + K_i∫e)‖∞ ≤ ρ0: W 8.2.17, "e small", in the form
#: docs/theory/compensator-bounds.md derives GD's bound with). GD-bar's ``max_norm_P`` is another quantity
#: (:data:`GDBAR_P`, :func:`assumption_texts`).
ASSUMPTIONS = {"max_norm_dq": "‖δq‖∞ ≤ Γ", "max_norm_Mtilde": "‖M̃ₐ‖∞ ≤ 1 − α0/σ",
               "max_norm_P": "‖(I − M̃ₐ)(e + K_i∫e)‖∞ ≤ ρ0"}

#: GD-bar's ``max_norm_P``: the largest ‖δq(t)‖∞ + ‖(I − M̃_a)e(t)‖∞ along the run, which its proof needs ≤ Γ at
#: every time (the term W 8.3.16 drops, docs/theory/compensator-bounds.md); its limit is Γ.
GDBAR_P = "‖δq‖∞ + ‖(I − M̃ₐ)e‖∞ ≤ Γ"


def _is_gdbar(compensator) -> bool:
    from ..controllers.compensators import GDBar

    return isinstance(compensator, GDBar)


def assumption_texts(compensator) -> dict:
    """:data:`ASSUMPTIONS` as they read for this compensator (GD-bar's ``max_norm_P`` is :data:`GDBAR_P`).

    Parameters
    ----------
    compensator : Compensator or None

    Returns
    -------
    dict
    """
    return {**ASSUMPTIONS, "max_norm_P": GDBAR_P} if _is_gdbar(compensator) else dict(ASSUMPTIONS)


def dropped_term_gain(compensator):
    """The K_i of the term P whose size the bound assumes: GD's ‖(I − M̃_a)(e + K_i∫e)‖∞ (its K_i), GD-bar's
    ‖(I − M̃_a)e‖∞ (0.0: e alone); None for the compensators whose bound has no such term.

    Parameters
    ----------
    compensator : Compensator or None

    Returns
    -------
    float or None
    """
    Ki = integral_gain(compensator)
    if Ki is not None:
        return Ki
    return 0.0 if _is_gdbar(compensator) else None


def dropped_term(compensator, dq_norm, P_norm):
    """The per-time quantity ``max_norm_P`` is the largest of: GD's P = ‖(I − M̃_a)(e + K_i∫e)‖∞ (≤ ρ0), GD-bar's
    ‖δq‖∞ + ‖(I − M̃_a)e‖∞ (≤ Γ, :data:`GDBAR_P`); ``P_norm`` as :func:`uncertainty_along_run` measures it.

    Parameters
    ----------
    compensator : Compensator or None
    dq_norm, P_norm : ndarray (T,)

    Returns
    -------
    ndarray (T,)
    """
    return np.asarray(dq_norm) + np.asarray(P_norm) if _is_gdbar(compensator) else np.asarray(P_norm)


def start_in_invariant_set(compensator, bounds, e0, edot0):
    """Whether the initial error lies in the set the bound's theorem keeps the error in, and the reason if not.

    GSS (docs/theory/compensator-bounds.md): S = {|s_i| ≤ L_ε/2, |e_i| ≤ L_ε/(2 k_i) for each i}, s = K e + ė,
    L_ε = ``bounds.edot`` — per coordinate (with unequal gains max|e0| ≤ L_ε/(2 min k) does not suffice). GD,
    GD-bar: the ė box ‖ė(0)‖∞ ≤ r (P is checked at every time). Started there, the bound holds from t = 0 while its
    assumptions hold; started outside, nothing proves when (or that) the error reaches it.

    Parameters
    ----------
    compensator : Compensator or None
    bounds : PromisedBounds or None
        The exact-measurement bounds of ``compensator`` (``edot`` is L_ε for GSS, r for GD, GD-bar).
    e0, edot0 : array_like (n,)
        e(0) = q_c(0) − q(0), ė(0).

    Returns
    -------
    (bool or None, str or None)
        (True, None) inside; (False, reason) outside; (None, None) when the bound names no set (no compensator,
        no finite bound, a baseline).
    """
    from ..controllers.compensators import GD, GSS, GDBar

    e0 = np.asarray(e0, dtype=float)
    edot0 = np.asarray(edot0, dtype=float)
    if bounds is None or compensator is None or not math.isfinite(float(bounds.edot)):
        return None, None
    L = float(bounds.edot)
    if isinstance(compensator, GSS):
        k = np.broadcast_to(np.asarray(compensator.K, dtype=float), e0.shape)
        s0 = np.abs(k * e0 + edot0)
        e_limit = L / (2.0 * k)
        bad_s = np.nonzero(s0 > L / 2)[0]
        bad_e = np.nonzero(np.abs(e0) > e_limit)[0]
        if not bad_s.size and not bad_e.size:
            return True, None
        parts = ([f"|s_{i + 1}(0)| = {s0[i]:.3g} > L_ε/2 = {L / 2:.3g}" for i in bad_s[:1]]
                 + [f"|e_{i + 1}(0)| = {abs(e0[i]):.3g} > L_ε/(2k_{i + 1}) = {e_limit[i]:.3g}" for i in bad_e[:1]])
        return False, ("the start lies outside the bound's invariant set {|s_i| ≤ L_ε/2, |e_i| ≤ L_ε/(2k_i)} ("
                       + ", ".join(parts) + "); reaching it is not proved")
    if isinstance(compensator, (GD, GDBar)):
        v = float(np.max(np.abs(edot0), initial=0.0))
        if v <= L:
            return True, None
        return False, (f"the start lies outside the bound's box (‖ė(0)‖∞ = {v:.3g} > r = {L:.3g}); reaching it is not "
                       "proved")
    return None, None


def assumption_limits(bounds, compensator) -> dict | None:
    """The limits the bounds' assumptions put on the measured uncertainty (W 7.2.9, 8.2.18, 8.3.8).

    Parameters
    ----------
    bounds : PromisedBounds or None
    compensator : Compensator or None

    Returns
    -------
    dict or None
        ``{"max_norm_dq": Γ, "max_norm_Mtilde": 1 − α0/σ}`` (keys of :data:`ASSUMPTIONS`), and for GD
        ``"max_norm_P": ρ0``, for GD-bar ``"max_norm_P": Γ`` (:data:`GDBAR_P`); None when the compensator assumes
        nothing of them (no Γ, or no margin α0).
    """
    if bounds is None or bounds.gamma is None or not hasattr(compensator, "alpha0"):
        return None
    limits = {"max_norm_dq": float(bounds.gamma), "max_norm_Mtilde": 1.0 - compensator.alpha0 / compensator.sigma}
    if integral_gain(compensator) is not None:
        limits["max_norm_P"] = float(compensator.rho0)
    elif _is_gdbar(compensator):  # ‖δq‖∞ + ‖(I − M̃_a)e‖∞ ≤ Γ at every time (GDBAR_P)
        limits["max_norm_P"] = float(bounds.gamma)
    return limits


def integral_gain(compensator):
    """K_i of a compensator whose bound assumes ‖(I − M̃_a)(e + K_i∫e)‖∞ ≤ ρ0 (GD, W 8.2.17); None for the others.

    Parameters
    ----------
    compensator : Compensator or None

    Returns
    -------
    float or None
    """
    if compensator is None or not (hasattr(compensator, "rho0") and hasattr(compensator, "Ki")):
        return None
    return float(compensator.Ki)


def assumptions_held(bounds, compensator, max_norm_dq: float, max_norm_Mtilde: float, max_norm_P=None):
    """Whether the bounds' assumptions held along the run (W 7.2.9, 8.2.17, 8.2.18, 8.3.8).

    ‖δq‖∞ ≤ Γ and ‖M̃_a‖∞ ≤ 1 − α0/σ, for GD also ‖(I − M̃_a)(e + K_i∫e)‖∞ ≤ ρ0, for GD-bar
    ‖δq‖∞ + ‖(I − M̃_a)e‖∞ ≤ Γ at every time (:func:`assumption_limits`); None when the compensator assumes
    nothing of them, or when an assumption was not measured and none of the measured ones failed (never "held" for
    a reason not checked).

    Parameters
    ----------
    bounds : PromisedBounds or None
    compensator : Compensator or None
    max_norm_dq, max_norm_Mtilde : float
        The largest ‖δq‖∞ and ‖M̃_a‖∞ seen (:func:`uncertainty_along_run`).
    max_norm_P : float, optional
        The largest :func:`dropped_term` seen (GD's, GD-bar's; None: not measured).

    Returns
    -------
    bool or None
    """
    limits = assumption_limits(bounds, compensator)
    if limits is None:
        return None
    seen = {"max_norm_dq": max_norm_dq, "max_norm_Mtilde": max_norm_Mtilde, "max_norm_P": max_norm_P}
    if any(seen[k] is not None and not seen[k] <= limit for k, limit in limits.items()):
        return False
    return None if any(seen[k] is None for k in limits) else True


def default_transient(e0, edot0, t_end: float, *, inside=None) -> float:
    """0 when the run starts with e = ė = 0 or inside the bound's invariant set, else 10 % of the horizon (module
    docstring).

    Parameters
    ----------
    e0, edot0 : array_like (n,)
        The initial errors e(0) = q_c(0) − q(0) and ė(0).
    t_end : float
        The length of the horizon (t1 − t0).
    inside : bool or None
        :func:`start_in_invariant_set`'s answer (keyword-only); True judges from t = 0.

    Returns
    -------
    float
        The transient, in seconds from the start of the run.
    """
    if inside or (np.all(np.asarray(e0) == 0) and np.all(np.asarray(edot0) == 0)):
        return 0.0
    return 0.1 * float(t_end)


def uncertainty_along_run(nominal, actual, q, qd, qc, qcd, Qc, t, v=None) -> dict:
    """What the bounds assume, measured along a run (W 5.3.3–5.3.6).

    Returns ``dq_norm (T,)``: ‖δq‖∞ with δq = a_a(q_c) − a(q) + (M_a⁻¹(q_c) − M⁻¹(q)) Qᶜ
    (5.3.5), i.e. M_a⁻¹(q_c)(Q_a + Qᶜ) − M⁻¹(q)(Q + Qᶜ); and ``Mtilde_norm (T,)``:
    ‖M̃_a‖∞ (induced, max row sum) with M̃_a = I − M_a⁻¹(q_c) M(q_c) (5.3.4).

    Parameters
    ----------
    nominal, actual : Plant
        The nominal model (M, Q) and the actual plant (M_a, Q_a).
    q, qd : array_like (T, n)
        The nominal system's states along the run.
    qc, qcd : array_like (T, n)
        The controlled actual system's states at the same times.
    Qc : array_like (T, n)
        The nominal control force Qᶜ(t) along the run.
    t : array_like (T,)
        The times (passed to the plants' ``mass_matrix`` and ``given_force``).
    v : array_like (T, n), optional
        For GD, ``e + K_i∫e`` along the run: then also ``P_norm (T,)`` = ‖(I − M̃_a) v‖∞ (W 8.2.17).

    Returns
    -------
    dict
        ``{"dq_norm": ndarray (T,), "Mtilde_norm": ndarray (T,)}`` as above (and ``P_norm``).
    """
    M_q = nominal.mass_matrix(q, t)
    M_c = nominal.mass_matrix(qc, t)
    Ma_c = actual.mass_matrix(qc, t)
    acc_a = np.linalg.solve(Ma_c, (actual.given_force(qc, qcd, t) + Qc)[..., None])[..., 0]
    acc = np.linalg.solve(M_q, (nominal.given_force(q, qd, t) + Qc)[..., None])[..., 0]
    MaM = np.linalg.solve(Ma_c, M_c)  # I − M̃_a
    Mt = np.eye(M_c.shape[-1]) - MaM
    out = {"dq_norm": np.abs(acc_a - acc).max(axis=-1), "Mtilde_norm": np.abs(Mt).sum(axis=-1).max(axis=-1)}
    if v is not None:
        out["P_norm"] = np.abs((MaM @ np.asarray(v, dtype=float)[..., None])[..., 0]).max(axis=-1)
    return out


def _trapz(y, t):
    return float(np.trapezoid(y, t)) if hasattr(np, "trapezoid") else float(np.trapz(y, t))


def _rms(y, t) -> float:
    """Time RMS √(∫ y² dt / (t_end − t_0)) by the trapezoid rule (the samples need not be uniform)."""
    duration = float(t[-1] - t[0]) if t.size > 1 else 0.0
    return float(np.sqrt(_trapz(y**2, t) / duration)) if duration > 0 else float(np.abs(y).max())


def _tv_per_second(Qu, t, u_times=None, u_held=None):
    """Total variation Σ‖ΔQᵘ‖₁ per second: the chattering measure.

    For sampled (zero-order-hold) control the held sequence is piecewise constant, so
    its total variation is exact on the sample grid; otherwise it is taken on the
    output grid (which must resolve the motion).
    """
    duration = float(t[-1] - t[0]) if t.size > 1 else 0.0
    if duration <= 0:
        return 0.0
    seq = u_held if u_held is not None and len(u_held) > 1 else Qu
    return float(np.sum(np.abs(np.diff(seq, axis=0)))) / duration


def _peaks(t, ninf_e, ninf_ed, ninf_Qu, bounds, transient):
    """The peaks and the bound check from the per-time ∞-norms; also returns 'inside the bounds' per time."""
    b_e = float(bounds.e) if bounds is not None else math.inf
    b_ed = float(bounds.edot) if bounds is not None else math.inf
    after = t >= transient
    inside = (ninf_e <= b_e) & (ninf_ed <= b_ed)
    # no promise (both bounds infinite, e.g. the baselines) is not a kept promise, and a transient
    # that covers the whole run leaves nothing judged: None, never a "no"
    promised = math.isfinite(b_e) or math.isfinite(b_ed)
    return {
        "max_abs_e": float(ninf_e.max()),
        "max_abs_edot": float(ninf_ed.max()),
        "max_abs_Qu": float(ninf_Qu.max()),
        "max_abs_e_after_transient": float(ninf_e[after].max()) if after.any() else None,
        "max_abs_edot_after_transient": float(ninf_ed[after].max()) if after.any() else None,
        "bounds_held": bool(np.all(inside[after])) if promised and after.any() else None,
    }, inside


def peak_metrics(t, e, edot, Qu, bounds, *, transient=0.0) -> dict:
    """The peaks of a run and whether the promised bounds held: the part of :func:`tracking_metrics` campaigns need.

    The same definitions (and the same numbers, bit for bit) as :func:`tracking_metrics`, without
    the integrals, per-coordinate values and residuals — a Monte Carlo sample keeps only these.

    Parameters
    ----------
    t, e, edot, Qu, bounds, transient
        As :func:`tracking_metrics`.

    Returns
    -------
    dict
        ``max_abs_e``, ``max_abs_edot``, ``max_abs_Qu``, ``max_abs_e_after_transient``,
        ``max_abs_edot_after_transient``, ``bounds_held``.
    """
    t = np.asarray(t)
    return _peaks(t, np.abs(e).max(axis=-1), np.abs(edot).max(axis=-1), np.abs(Qu).max(axis=-1), bounds,
                  transient)[0]


def tracking_metrics(t, e, edot, Qu, Qc, bounds, *, transient=0.0, residual_nominal=None,
                     residual_controlled=None, qa_error=None, Qu_held=None) -> dict:
    """Metrics of a tracking run (see the module docstring for definitions).

    Returns a dict with overall (infinity norm over coordinates) and
    per-coordinate (``*_per_coordinate`` lists) values. Pass the samples of the
    solution itself (every accepted step, merged with the output grid): peaks
    between the points of a coarse grid are missed otherwise. RMS and IAE are time
    integrals (trapezoid rule), so the samples need not be evenly spaced.

    Parameters
    ----------
    t : array_like (T,)
        Output times, increasing.
    e, edot : ndarray (T, n)
        Tracking errors e = q_c − q and ė along the run.
    Qu : ndarray (T, n)
        The compensator's force Qᵘ = M u on the output times.
    Qc : ndarray (T, n)
        The nominal control (constraint) force Qᶜ on the output times.
    bounds : PromisedBounds or None
        The compensator's promised bounds (its ``e`` and ``edot`` are read; ``inf``:
        none on that error); None: nothing promised (no compensator).
    transient : float
        The time (on the clock of ``t``, not relative to t[0]) from which the bounds
        are checked; default 0 (keyword-only).
    residual_nominal, residual_controlled : ndarray (T, m), optional
        Raw constraint residuals of the nominal and the controlled actual system
        (keyword-only); their maxima are reported when given.
    qa_error : ndarray (T, n), optional
        q_a − q, the uncompensated actual system's error (keyword-only).
    Qu_held : ndarray (K, n), optional
        The held Qᵘ at the K sampling instants of a zero-order-hold control
        (keyword-only); the chattering measure is then taken on it instead of ``Qu``.

    Returns
    -------
    dict
        ``max_abs_e``, ``max_abs_edot``, ``rms_e``, ``rms_edot``, ``iae_e`` and their
        ``*_per_coordinate`` lists; ``max_abs_Qu``, ``max_abs_Qc``, ``effort_Qu``
        (∫‖Qᵘ‖∞ dt), ``chattering_Qu`` (Σ‖ΔQᵘ‖₁ per second); ``transient_s``,
        ``reaching_time`` (None if the errors end outside the bounds),
        ``max_abs_e_after_transient``, ``max_abs_edot_after_transient``,
        ``bounds_held`` (None when nothing finite is promised, or no sample lies after
        the transient: nothing was judged); and, when their inputs
        are given, ``max_constraint_residual_nominal``,
        ``max_constraint_residual_controlled``, ``max_constraint_residual_gap``,
        ``actual_max_abs_e`` and ``actual_max_abs_e_per_coordinate``.
    """
    t = np.asarray(t)
    ae, aed = np.abs(e), np.abs(edot)
    ninf_e, ninf_ed = ae.max(axis=-1), aed.max(axis=-1)
    ninf_Qu, ninf_Qc = np.abs(Qu).max(axis=-1), np.abs(Qc).max(axis=-1)
    peaks, inside = _peaks(t, ninf_e, ninf_ed, ninf_Qu, bounds, transient)
    # reaching time: first t from which 'inside' holds to the end
    if inside[-1]:
        outside_idx = np.nonzero(~inside)[0]
        reaching = float(t[outside_idx[-1] + 1]) if outside_idx.size else float(t[0])
    else:
        reaching = None
    m = {
        "max_abs_e": peaks["max_abs_e"],
        "max_abs_edot": peaks["max_abs_edot"],
        "rms_e": _rms(ninf_e, t),
        "rms_edot": _rms(ninf_ed, t),
        "iae_e": _trapz(ninf_e, t),
        "max_abs_e_per_coordinate": ae.max(axis=0).tolist(),
        "max_abs_edot_per_coordinate": aed.max(axis=0).tolist(),
        "rms_e_per_coordinate": [_rms(e[:, i], t) for i in range(e.shape[1])],
        "rms_edot_per_coordinate": [_rms(edot[:, i], t) for i in range(e.shape[1])],
        "iae_e_per_coordinate": [_trapz(ae[:, i], t) for i in range(ae.shape[1])],
        "max_abs_Qu": peaks["max_abs_Qu"],
        "max_abs_Qc": float(ninf_Qc.max()),
        "effort_Qu": _trapz(ninf_Qu, t),
        "chattering_Qu": _tv_per_second(Qu, t, None, Qu_held),
        "transient_s": float(transient),
        "reaching_time": reaching,
        "max_abs_e_after_transient": peaks["max_abs_e_after_transient"],
        "max_abs_edot_after_transient": peaks["max_abs_edot_after_transient"],
        "bounds_held": peaks["bounds_held"],
    }
    if residual_nominal is not None:
        m["max_constraint_residual_nominal"] = float(np.max(np.abs(residual_nominal)))
    if residual_controlled is not None:
        m["max_constraint_residual_controlled"] = float(np.max(np.abs(residual_controlled)))
        if residual_nominal is not None:
            # how much worse the actual system meets the requirement than the nominal one
            # (the residuals themselves include any initial violation, common to both)
            m["max_constraint_residual_gap"] = float(np.max(np.abs(residual_controlled - residual_nominal)))
    if qa_error is not None:
        m["actual_max_abs_e"] = float(np.abs(qa_error).max())
        m["actual_max_abs_e_per_coordinate"] = np.abs(qa_error).max(axis=0).tolist()
    return m

_ERRORS = (("e", "max_abs_e_after_transient", "max‖e‖∞", "q"), ("edot", "max_abs_edot_after_transient", "max‖ė‖∞", "qd"))


def _finite(x) -> bool:
    return x is not None and math.isfinite(float(x))


def bounds_verdict(metrics: Mapping, bounds: Mapping | None, *, units: Mapping | None = None,
                   note: str | None = None) -> str:
    """The verdict on a run's promised bounds, in one line.

    Parameters
    ----------
    metrics : mapping
        The run's metrics (``TrackingMetrics`` or its dict): ``bounds_held``, ``assumptions_held``,
        ``transient_s``, ``max_abs_e_after_transient``, ``max_abs_edot_after_transient``.
    bounds : mapping or None
        The promised bounds (``e``, ``edot``; ``PromisedBounds.to_dict()``); None: no compensator.
    units : mapping, optional
        Units of e and ė under the keys ``q`` and ``qd`` (e.g. rad, rad/s); None: numbers only.
    note : str, optional
        Why the bounds were not judged (a run's ``bounds_note``), said when they were not.

    A run whose ``start_note`` says it started outside the bound's invariant set (:func:`start_in_invariant_set`)
    is judged after its window and said "held (observed)" with that reason — never "assumptions held".

    Returns
    -------
    str
        ``"bounds held: max‖e‖∞ 1.3e-4 rad ≤ 6.7e-4 rad, … (assumptions held: guaranteed)"``, or ``"bounds NOT
        held: …"``, ``"no bound judged in this run: …"``, ``"nothing promised: …"``.

    Examples
    --------
    >>> m = {"bounds_held": False, "assumptions_held": True, "transient_s": 0.0,
    ...      "max_abs_e_after_transient": 2e-3, "max_abs_edot_after_transient": 1e-2}
    >>> bounds_verdict(m, {"e": 1e-3, "edot": 0.05}, units={"q": "rad", "qd": "rad/s"})
    'bounds NOT held: max‖e‖∞ 0.002 rad > 0.001 rad, max‖ė‖∞ 0.01 rad/s ≤ 0.05 rad/s (assumptions held)'
    >>> bounds_verdict(m, {"e": float("inf"), "edot": float("inf"), "gamma": 100.0, "region": "L_ε = inf"})
    "nothing promised: the compensator's bound is infinite with these settings and Γ = 100 (L_ε = inf); other gains, ε or Γ give a finite one"
    """
    units = units or {}
    bounds = bounds or {}
    coverage = bounds.get("coverage")  # a loop through a sensor: what the theory covers (robustrack.loop)
    if coverage and coverage.startswith("no bound"):
        return f"{coverage} (the run is only measured)"
    if not any(_finite(bounds.get(key)) for key, *_ in _ERRORS):
        if not bounds:
            return "nothing promised: no compensator bound to judge"
        if bounds.get("gamma") is None:  # a baseline's bounds name no Γ (controllers.baselines)
            return "nothing promised: the compensator promises no bound (a baseline)"
        # a law with a bound whose value is infinite at these settings (e.g. GSS's L_ε without a least solution)
        return (f"nothing promised: the compensator's bound is infinite with these settings and Γ = "
                f"{format_value(bounds['gamma'])} ({bounds.get('region', 'no region')}); other gains, ε or Γ give a "
                "finite one")
    held = metrics.get("bounds_held")
    if held is None:
        return "no bound judged in this run" + (f": {note}" if note else "")
    parts = []
    for key, metric, label, unit_key in _ERRORS:
        bound, value = bounds.get(key), metrics.get(metric)
        if _finite(bound) and value is not None:
            unit = units.get(unit_key)
            parts.append(f"{label} {format_value(value, unit)} {'≤' if value <= bound else '>'} "
                         f"{format_value(bound, unit)}")
    transient = metrics.get("transient_s")
    window = f" after t = {format_value(transient, 's')}" if transient else ""
    assumptions = metrics.get("assumptions_held")
    start = metrics.get("start_note")  # the start outside the bound's invariant set: only observed, never guaranteed
    if start:
        head = "bounds held (observed)" if held else "bounds NOT held"
        return (head + ": " + ", ".join(parts) + window
                + f" ({'not guaranteed' if held else 'not covered by the bound'}: {start})")
    # a sampled loop: what the theory covers (never "guaranteed" for a loop it does not cover)
    covered = not coverage or coverage.startswith("guaranteed")
    head = ("bounds NOT held" if not held else "bounds held" if covered else
            f"bounds held (observed), not guaranteed ({coverage.removeprefix('not guaranteed: ')})")
    assumed = ("" if assumptions is None else " (assumptions NOT held: not guaranteed)" if not assumptions
               else f" (assumptions held: {coverage or 'guaranteed'})" if held and covered else " (assumptions held)")
    return head + ": " + ", ".join(parts) + window + assumed


def terms_text(terms: Mapping | None) -> str:
    """The terms of a sampled loop's bound (``PromisedBounds.terms``, docs/theory/sensing.md) in one line: what the
    box dominates, so a reader sees which part makes the bound.

    Parameters
    ----------
    terms : mapping or None
        ``gamma``, ``coupling``, ``measurement``, ``hold_delay``, ``eddot``, ``force`` (and ``held_torque``).

    Returns
    -------
    str
        Empty without terms.

    Examples
    --------
    >>> terms_text({"gamma": 3.3, "coupling": 4.6, "measurement": 6.8, "hold_delay": 11.3, "eddot": 99.0,
    ...             "force": 87.0})
    'dominates Γ 3.3 + coupling 4.6 + measurement 6.8 + hold and delay 11.3 (largest: hold and delay); loop Ë ≤ 99, law U ≤ 87'
    """
    if not terms:
        return ""
    parts = {"Γ": terms.get("gamma", 0.0), "coupling": terms.get("coupling", 0.0),
             "measurement": terms.get("measurement", 0.0), "hold and delay": terms.get("hold_delay", 0.0)}
    if terms.get("held_torque"):  # a loop that holds the whole τ (docs/theory/sensing.md, "A loop that holds τ")
        parts["held τ"] = terms["held_torque"]
    top = max(parts, key=parts.get)
    return ("dominates " + " + ".join(f"{k} {format_value(v)}" for k, v in parts.items()) + f" (largest: {top}); "
            f"loop Ë ≤ {format_value(terms.get('eddot'))}, law U ≤ {format_value(terms.get('force'))}")


def sensor_text(sensor: Mapping, sample_period=None) -> str:
    """A sensor model in one line (:meth:`robustrack.loop.Sensor.to_dict`'s fields).

    Parameters
    ----------
    sensor : mapping
    sample_period : float, optional
        The loop's period (s), said as its rate.

    Returns
    -------
    str
        E.g. ``"q noise σ 0.0001, resolution 4.79e-05, velocity filtered (50 Hz), delay 0.001 s, 1 kHz, seed 0"``.
    """
    parts = []
    for key, label in (("q_noise", "q noise σ"), ("q_resolution", "resolution"), ("qd_noise", "q̇ noise σ")):
        v = sensor.get(key)
        if v and (not isinstance(v, list) or any(v)):
            parts.append(f"{label} {format_value(v) if not isinstance(v, list) else [format_value(x) for x in v]}")
    if sensor.get("quantization") == "truncate":
        parts.append("encoder truncating (error < Δ)")
    velocity = sensor.get("velocity", "exact")
    parts.append(f"velocity {velocity}" + (f" ({format_value(sensor.get('velocity_cutoff'), 'Hz')})"
                                            if velocity == "filtered" else ""))
    if sensor.get("delay"):
        parts.append(f"delay {format_value(sensor['delay'], 's')}")
    if sample_period:
        parts.append(f"{format_value(1.0 / sample_period, 'Hz')} loop")
    parts.append(f"seed {sensor.get('seed', 0)}")
    return ", ".join(parts)
