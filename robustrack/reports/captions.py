"""Figure captions computed from the run they describe, so that what they say is true of the figure.

Each caption states what the figure shows and the numbers a reader would look for,
measured on the same arrays the figure draws: the largest error against its bound, Qᵘ
against Qᶜ, when the controlled residual leaves the nominal one and why, which Γ the run
used and how many sampled plants exceed it. Where a claim depends on the data ("the
curves agree", "to the eye"), it is decided here from the data with the threshold given
in the text.
"""

from __future__ import annotations

import numpy as np

from .._format import format_value

__all__ = ["AGREE_FRACTION", "EYE_FRACTION", "residual_agreement", "trajectory_caption", "task_caption",
           "coordinates_caption",
           "errors_caption", "forces_caption", "residual_caption", "gamma_caption", "campaign_caption"]

#: The controlled and nominal residuals "agree" while their gap is below this fraction of |nominal|.
AGREE_FRACTION = 0.1
#: A difference is invisible "to the eye" below this fraction of the plotted range.
EYE_FRACTION = 0.005


def _ninf(x):
    return np.abs(np.asarray(x, dtype=float)).max(axis=-1)


def residual_agreement(result) -> dict | None:
    """Where the controlled residual follows the nominal one, measured on the output grid.

    Parameters
    ----------
    result : TrackingResult
        Its ``residual_nominal`` and ``residual_controlled`` (∞-norm over rows).

    Returns
    -------
    dict or None
        None without both residuals; else ``agree_until`` (the last output time before
        the gap |r_c − r| first exceeds :data:`AGREE_FRACTION` × |r|; None if it never
        does; ``t[0]`` if it does at once), ``max_gap`` (max over the run),
        ``max_gap_after`` (max after ``agree_until``, None if never), ``end_nominal``
        and ``end_controlled`` (|r| and |r_c| at the last time).
    """
    if result.residual_nominal is None or result.residual_controlled is None:
        return None
    r = _ninf(result.residual_nominal)
    rc = _ninf(result.residual_controlled)
    gap = _ninf(np.asarray(result.residual_controlled) - np.asarray(result.residual_nominal))
    apart = np.nonzero(gap > AGREE_FRACTION * r)[0]
    t = np.asarray(result.t)
    if apart.size == 0:
        until, after = None, None
    else:
        i = int(apart[0])
        until = float(t[max(i - 1, 0)])
        after = float(gap[i:].max())
    return {"agree_until": until, "max_gap": float(gap.max()), "max_gap_after": after,
            "end_nominal": float(r[-1]), "end_controlled": float(rc[-1])}


def trajectory_caption(result, plant, body: int = -1) -> str:
    """Caption of :func:`~robustrack.tracking.figures.trajectory_figure`.

    Parameters
    ----------
    result : TrackingResult
    plant : Plant
        The nominal plant (its ``positions``).
    body : int, default -1
        The body drawn.

    Returns
    -------
    str
    """
    pn = np.asarray(plant.positions(result.q))[:, body, :]
    pc = np.asarray(plant.positions(result.qc))[:, body, :]
    apart = float(np.linalg.norm(pc - pn, axis=-1).max())
    extent = float(np.ptp(pn, axis=0).max()) or 1.0
    eye = "lies on the nominal one to the eye" if apart < EYE_FRACTION * extent else "visibly leaves the nominal one"
    text = (f"The last body in the XY plane (metres). The controlled actual system (blue) {eye} (black dashed): "
            f"at most {format_value(apart, 'm', digits=3)} apart. ")
    if result.qa is not None:
        pa = np.asarray(plant.positions(result.qa))[:, body, :]
        text += (f"The uncompensated actual system (red, Qᶜ(t) alone) drifts up to "
                 f"{format_value(float(np.linalg.norm(pa - pn, axis=-1).max()), 'm', digits=3)} away "
                 "(W Figs. 5.1–5.2); its curve joins the output times (simulation.n_points), so a fast-whirling "
                 "motion looks jagged. ")
    return text + "Green dot: start; squares: ends."


def task_caption(result, requirement) -> str:
    """Caption of :func:`~robustrack.tracking.figures.task_space_figure` (numbers in the task's unit).

    Parameters
    ----------
    result : TrackingResult
    requirement : TaskSpaceTrajectory

    Returns
    -------
    str
    """
    from ..requirements import max_abs_task_error

    u = requirement.unit
    text = (f"Left: the tip's path fk(q) in the plane of the first two task coordinates ({u}), the required "
            f"x_d(t) dashed; right: the tip error ‖fk(q) − x_d‖∞ ({u}) against time, log scale. Controlled "
            f"actual: up to {format_value(max_abs_task_error(result, requirement), u)}; nominal: up to "
            f"{format_value(max_abs_task_error(result, requirement, which='nominal'), u)}")
    if result.qa is not None:
        text += (f"; uncompensated (Qᶜ(t) alone): up to "
                 f"{format_value(max_abs_task_error(result, requirement, which='uncompensated'), u)}")
    bound = (result.info.get("bounds") or {}).get("e")
    if bound is not None and np.isfinite(bound) and bound > 0:
        from ..tracking.figures import axis_unit

        text += (f". Dashed green: the promised ‖e‖∞ ≤ {format_value(bound, axis_unit(result, 'q'))}"
                 f" mapped to the tip through the Jacobian along the nominal motion, up to "
                 f"{format_value(float(np.max(requirement.mapped_bound(result.q, bound))), u)}")
    return text + "."


def coordinates_caption(result, units: dict) -> str:
    """Caption of :func:`~robustrack.tracking.figures.coordinates_figure`.

    Parameters
    ----------
    result : TrackingResult
    units : dict
        :func:`robustrack.scenarios.units.tracking_units` of the run.

    Returns
    -------
    str
    """
    uq = units["q"]
    m = result.metrics or {}
    e = m.get("max_abs_e")
    extent = float(np.ptp(np.asarray(result.q), axis=0).max()) or 1.0
    eye = "invisible at this scale" if e is not None and e < EYE_FRACTION * extent else "visible at this scale"
    text = (f"Each coordinate ({uq or 'dimensionless'}) against time: nominal (black dashed), controlled actual "
            f"(blue). The controlled curve differs from the nominal one by at most max ‖e‖∞ = "
            f"{format_value(e, uq)}, {eye}.")
    if result.qa is not None:
        text += (" Red: the uncompensated actual system (Qᶜ(t) alone), up to "
                 f"{format_value(m.get('actual_max_abs_e'), uq)} away.")
    return text


def _judged(result) -> str:
    transient = (result.metrics or {}).get("transient_s") or 0.0
    if transient > 0:
        return f"judged after the grey transient of {format_value(transient, 's')}"
    return "judged over the whole run (it starts on the nominal motion: no transient to forgive)"


def errors_caption(result, units: dict) -> str:
    """Caption of :func:`~robustrack.tracking.figures.errors_figure`.

    Parameters
    ----------
    result : TrackingResult
        Its ``info["bounds"]`` and metrics.
    units : dict
        :func:`robustrack.scenarios.units.tracking_units` of the run.

    Returns
    -------
    str
    """
    m = result.metrics or {}
    b = result.info.get("bounds")
    uq, uqd = units["q"], units["qd"]
    text = "|eᵢ| and |ėᵢ| of each coordinate (e = q_c − q), log axes; the highest curve is the ∞-norm. "
    if not b:
        return text + (f"No compensator: nothing is promised. max ‖e‖∞ = {format_value(m.get('max_abs_e'), uq)}, "
                       f"max ‖ė‖∞ = {format_value(m.get('max_abs_edot'), uqd)}.")
    parts, promised = [], False
    for key, metric, unit, what in (("e", "max_abs_e", uq, "e"), ("edot", "max_abs_edot", uqd, "ė")):
        bound = b.get(key)
        if bound is None or not np.isfinite(bound):
            parts.append(f"no bound on ‖{what}‖∞ is promised (max {format_value(m.get(metric), unit)})")
            continue
        promised = True
        if bound == 0:
            parts.append(f"max ‖{what}‖∞ = {format_value(m.get(metric), unit)} against the promised 0 (ideal "
                         "sliding in continuous time; not drawable on a log axis)")
        else:
            parts.append(f"max ‖{what}‖∞ = {format_value(m.get(metric), unit)} against the promised "
                         f"{format_value(bound, unit)} (dashed green, region shaded)")
    if not promised:
        joined = "; ".join(parts)
        return text + joined[0].upper() + joined[1:] + ". Nothing finite is promised, so nothing is judged."
    held = m.get("bounds_held")
    if held is None:  # promised by the compensator's theory, but not for this run: no judging window
        note = result.info.get("bounds_note")
        return (text + "; ".join(parts).replace("the promised", "the compensator's bound").replace(
            "(dashed green, region shaded)", "(dashed green)") + ". These bounds are not judged in this run"
            + (f": {note}." if note else "."))
    return text + "; ".join(parts) + f". The bounds are {_judged(result)}: {'held' if held else 'NOT held'}."


def effort_caption(result, limits, units: dict) -> str:
    """Caption of :func:`~robustrack.tracking.figures.effort_figure`: each joint's peak demanded |τ| against its
    limit, and where the motors saturated.

    Parameters
    ----------
    result : TrackingResult
    limits : array_like (n,)
    units : dict

    Returns
    -------
    str
    """
    from ..tracking.actuators import effort_note

    uQ = units["Q"]
    m = result.metrics or {}
    peak = m.get("max_abs_tau_demand_per_actuator") or [None] * len(limits)
    names = list(result.info.get("coordinates") or [f"joint {i + 1}" for i in range(len(limits))])
    rows = (result.info.get("actuators") or {}).get("exceeded") or []
    text = ("Each joint's applied τ = Qᶜ + Qᵘ and its effort limits ±τ_max (red dashed; the URDF's <limit effort> "
            "or [actuators].tau_max). Peak |τ| the law asked / limit: "
            + ", ".join(f"{j} {format_value(p, digits=3)}/{format_value(float(lim), uQ, digits=3)}"
                        for j, p, lim in zip(names, peak, limits)) + ". ")
    if rows:
        return text + f"The limits were exceeded and the motors saturated: {effort_note(rows, uQ)}."
    return text + "No joint reached its limit."


def forces_caption(result, units: dict) -> str:
    """Caption of :func:`~robustrack.tracking.figures.forces_figure`.

    Parameters
    ----------
    result : TrackingResult
    units : dict
        :func:`robustrack.scenarios.units.tracking_units` of the run.

    Returns
    -------
    str
    """
    m = result.metrics or {}
    uQ = units["Q"]
    qc, qu = m.get("max_abs_Qc") or 0.0, m.get("max_abs_Qu") or 0.0
    text = ("‖Qᶜ‖∞ (grey: the nominal controller, computed on the nominal motion), ‖Qᵘ‖∞ (orange: the "
            "compensator, Qᵘ = M u) and their sum (blue dashed). ")
    if not result.info.get("compensator"):
        return text + f"No compensator: Qᵘ = 0; max ‖Qᶜ‖∞ = {format_value(qc, uQ)}."
    if qc > 0 and qu < 0.5 * qc:
        share = f"is {format_value(100 * qu / qc, digits=3)} % of max ‖Qᶜ‖∞ = {format_value(qc, uQ)}: small next to it, W's point"
    elif qc > 0:
        share = f"is {format_value(qu / qc, digits=3)} × max ‖Qᶜ‖∞ = {format_value(qc, uQ)}: not small next to it"
    else:
        share = "against max ‖Qᶜ‖∞ = 0 (no nominal control force)"
    return text + (f"max ‖Qᵘ‖∞ = {format_value(qu, uQ)} {share}. "
                   f"Spikes or a dense band in Qᵘ mean chattering (total variation "
                   f"{format_value(m.get('chattering_Qu'), f'{uQ}/s')}).")


def residual_caption(result, residual, units: dict) -> str:
    """Caption of :func:`~robustrack.tracking.figures.residual_figure`, with why the curves part.

    Parameters
    ----------
    result : TrackingResult
    residual : ResidualInfo
        What the residual is (symbol, unit); ignored when the run had no constraint.
    units : dict
        :func:`robustrack.scenarios.units.tracking_units` of the run.

    Returns
    -------
    str
    """
    if result.residual_nominal is None:
        return "No constraint in this run (unconstrained nominal system): there is no residual to show."
    s, _, definition = residual.symbol.partition(" = ")  # "φ = q − q_d(t)": the symbol, then what it is, once
    u = residual.unit
    defined = f", {s} = {definition}," if definition else ""
    text = (f"|{s}| ({u or 'dimensionless'}){defined} of the nominal (black dashed) and the controlled actual system "
            f"(blue), and their gap |{s}_c − {s}| (dotted). ")
    agree = residual_agreement(result)
    if agree is None:
        return text + "Only the nominal residual was recorded."
    why = (f"The controlled system is steered onto the nominal trajectory (it receives Qᶜ(t) computed on the "
           f"nominal state, and Qᵘ against e), not onto the constraint: its residual is the nominal one plus the "
           f"imprint of the tracking error, {s}(q_c, q̇_c) − {s}(q, q̇) ≈ ∂{s}/∂q·e + ∂{s}/∂q̇·ė. ")
    m = result.metrics or {}
    sizes = (f"(max ‖e‖∞ = {format_value(m.get('max_abs_e'), units['q'], digits=3)}, max ‖ė‖∞ = "
             f"{format_value(m.get('max_abs_edot'), units['qd'], digits=3)})")
    gap = format_value(agree["max_gap"], u, digits=3)
    if agree["agree_until"] is None:
        return text + why + (f"Here the gap stays below {format_value(100 * AGREE_FRACTION)} % of |{s}| over the "
                             f"whole run (at most {gap}): the curves agree.")
    ends = (f"at the end |{s}| = {format_value(agree['end_nominal'], u, digits=3)}, |{s}_c| = "
            f"{format_value(agree['end_controlled'], u, digits=3)}")
    if agree["agree_until"] <= float(result.t[0]):
        return text + why + (f"Here the nominal residual is below that imprint from the start, so the controlled "
                             f"residual is the imprint itself, at most {gap} {sizes}; {ends}.")
    return text + why + (f"The curves agree (gap below {format_value(100 * AGREE_FRACTION)} % of |{s}|) until t ≈ "
                         f"{format_value(agree['agree_until'], 's', digits=3)}, while the nominal residual is "
                         f"larger than the imprint; then the nominal residual decays further and the controlled "
                         f"one stays at the imprint's level, at most "
                         f"{format_value(agree['max_gap_after'], u, digits=3)} {sizes}; {ends}. A smaller "
                         "tracking error lowers this floor.")


def gamma_caption(estimate, *, used=None, role=None, run_value=None, unit: str = "", run_error=None,
                  error_unit: str = "") -> str:
    """Caption of :func:`~robustrack.campaigns.figures.gamma_density_figure`.

    Parameters
    ----------
    estimate : GammaEstimate
        The Monte Carlo (its samples, spread, parameter, seed, margin, quantile, Γ′).
    used : float, optional
        The Γ the run's compensator used (keyword-only; None: it uses none).
    role : str, optional
        Its symbol for the compensator (keyword-only), e.g. ``"Γ′ = Γ"`` for GSS; default "Γ".
    run_value : float, optional
        max_t ‖δq(t)‖∞ along the run (keyword-only).
    unit : str
        Unit of δq (keyword-only).
    run_error : float, optional
        max ‖e‖∞ of that run (keyword-only): ``run_value`` is taken at the controlled states, the
        Monte Carlo at the nominal ones, so the caption says how far apart they were.
    error_unit : str
        Unit of e (keyword-only).

    Returns
    -------
    str
    """
    exact = np.asarray(estimate.exact, dtype=float)
    spread = estimate.spread
    spread_txt = f"uniform ±{format_value(100 * float(spread))} % " if np.ndim(spread) == 0 and spread is not None \
        else ""
    param = estimate.parameter if isinstance(estimate.parameter, str) else ", ".join(estimate.parameter)
    text = (f"Densities of max_t ‖δq(t)‖∞ over {exact.size} sampled actual plants ({spread_txt}on {param}, seed "
            f"{estimate.seed}): exact (W 5.3.5, blue) and first order (W 5.3.10, red); they nearly coincide when "
            "the first-order expansion is good (W Figs. 7.1–7.8). ")
    if used is None:
        text += "This run's compensator uses no Γ. "
    else:
        above = int(np.count_nonzero(exact > float(used)))
        text += f"Solid green: the Γ this run used, {role or 'Γ'} = {format_value(float(used), unit)} (uncertainty.gamma); "
        text += ("no sampled plant exceeds it: the bound's assumption ‖δq‖∞ ≤ Γ holds for all of them. " if not above
                 else f"{above} of the {exact.size} sampled plants ({format_value(100 * above / exact.size, digits=3)} "
                      "%) exceed it: for them the bound's assumption ‖δq‖∞ ≤ Γ fails. ")
    if run_value is not None:
        text += f"Dotted: this run's own δm gives max ‖δq‖∞ = {format_value(float(run_value), unit)}"
        text += (". " if run_error is None else
                 f", taken at the controlled states, which stay within max ‖e‖∞ = "
                 f"{format_value(float(run_error), error_unit)} of the nominal ones where the Monte Carlo "
                 "evaluates δq (comparable only when that is small). ")
    gp = float(estimate.gamma_prime)
    return text + (f"Dashed: the Monte Carlo's suggestion Γ′ = {format_value(estimate.margin)} × "
                   f"p{format_value(100 * estimate.quantile)} = {format_value(gp, unit)}; run with "
                   f"--set uncertainty.gamma={format_value(gp)} and the design value (compensator.gss.gamma_prime, "
                   f"compensator.gd.gamma) = {format_value(gp)} to use it.")


def campaign_caption(values, bound, unit: str) -> str:
    """Caption of :func:`~robustrack.campaigns.figures.campaign_histogram_figure`.

    Parameters
    ----------
    values : array_like
        max ‖e‖∞ of each finished sample.
    bound : float or None
        The promised bound on ‖e‖∞ (None or ∞: none).
    unit : str
        Unit of e.

    Returns
    -------
    str
    """
    v = np.asarray(values, dtype=float)
    text = "max ‖e‖∞ of every sampled actual plant (the full closed loop, one run each). "
    if bound is None or not np.isfinite(bound):
        return text + "No bound on ‖e‖∞ is promised."
    inside = int(np.count_nonzero(v <= bound))
    return text + (f"Dashed green: the promised bound {format_value(bound, unit)}; {inside} of the {v.size} plants "
                   f"lie at or left of it (largest {format_value(float(v.max()), unit)}).")
