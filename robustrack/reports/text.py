"""What the terminal shows: a run's metrics and the studies' results as text (``robustrack`` prints these).

:func:`format_metric` reads one metric of a tracking run as a reader sees it (value, unit,
and what a special value means; :func:`bounds_judged` says whether a run judged its
bounds); :func:`format_gamma`, :func:`format_montecarlo`, :func:`format_worst_case` and
:func:`format_tune` turn the documents of :mod:`robustrack.scenarios.gamma` and
:mod:`robustrack.scenarios.campaign` into the tables the commands print. Units come from
:mod:`robustrack.scenarios.units`.
"""

from __future__ import annotations

import math

import numpy as np

from .._format import format_value, typed_float, with_unit
from ..scenarios.units import MASS_UNIT
from ..uncertainty import parameter_label

__all__ = ["bounds_judged", "format_metric", "format_gamma", "format_montecarlo", "format_worst_case", "format_tune",
           "gamma_command", "run_lines"]


def _promised(bounds) -> bool:
    values = [bounds.get(k) for k in ("e", "edot")] if bounds else []
    return any(v is not None and math.isfinite(float(v)) for v in values)


def bounds_judged(bounds, held) -> bool:
    """Whether a run judged its bounds: a finite bound on ‖e‖∞ or ‖ė‖∞ and a verdict on it.

    A run with a compensator can still judge nothing: ``held`` is None when the bound does
    not apply to it (underactuated, sampled discontinuous law, saturation; the run's
    ``bounds_note`` says why). Only a judged run has a judging window (the transient, the
    reaching time) worth naming.

    Parameters
    ----------
    bounds : dict or None
        The bounds (``e``, ``edot``), as in a run summary or ``TrackingResult.info``.
    held : bool or None
        The verdict, ``bounds_held``.

    Returns
    -------
    bool
    """
    return _promised(bounds) and held is not None


def format_metric(name: str, value, units: dict | None, bounds: dict | None = None, *, t0: float = 0.0) -> str:
    """A metric of a tracking run as a reader sees it: value, unit, and what a special value means.

    Parameters
    ----------
    name : str
        The metric (a key of :data:`~robustrack.scenarios.units.TRACKING_METRIC_UNITS`, or any other: then no unit).
    value : float, bool, list or None
        Its value.
    units : dict, optional
        :func:`~robustrack.scenarios.units.tracking_units` (``units["metrics"]`` is used); None: no units.
    bounds : dict, optional
        The promised bounds (``e``, ``edot``) and, where known, the verdict ``held``:
        whether anything finite was promised and judged (:func:`bounds_judged`; a missing
        ``held`` counts as judged) decides how ``reaching_time`` and ``transient_s`` read.
    t0 : float, default 0.0
        Start of the run (keyword-only): a reaching time equal to it means "inside from
        the start".

    Returns
    -------
    str
        :func:`robustrack._format.format_value` with the unit; ``reaching_time`` reads
        "inside the bounds from the start (t = 0 s)", "— (nothing promised)", "— (no bound
        is judged in this run)" or "— (the errors end outside the bounds)"; ``transient_s``
        reads "0 s (judged from the start)" when bounds are judged, and "… (no bound is judged
        in this run)" when they are promised but not judged.
    """
    unit = ((units or {}).get("metrics") or {}).get(name)
    judged = bounds_judged(bounds, (bounds or {}).get("held", True))
    not_judged = " (no bound is judged in this run)"
    if name == "transient_s" and _promised(bounds) and not judged:
        return format_value(value, unit) + not_judged
    if name == "reaching_time":
        if not _promised(bounds):
            return "— (nothing promised)"
        if not judged:
            return "—" + not_judged
        if value is None:
            return "— (the errors end outside the bounds)"
        if float(value) <= t0:
            return f"inside the bounds from the start (t = {format_value(t0, 's')})"
    if name == "transient_s" and value == 0:
        return f"{format_value(0.0, unit)} (judged from the start)"
    return format_value(value, unit)


def format_gamma(doc: dict, units: dict | None = None) -> str:
    """The distribution summary of a :func:`run_gamma` document as a small text table.

    Parameters
    ----------
    doc : dict
        The ``doc`` returned by :func:`run_gamma` (its ``scenario``, ``samples``,
        ``spread``, ``parameter``, ``seed``, ``n_times``, ``exact`` / ``first_order`` /
        ``analytic`` summaries, ``quantile``, ``margin``, ``gamma_prime``, ``wall_s`` and
        ``trajectory_wall_s`` are shown).
    units : dict, optional
        :func:`robustrack.scenarios.units.tracking_units` of the scenario (its ``qdd``,
        the unit of δq and Γ); None: numbers without units.

    Returns
    -------
    str
        A header line, one row per distribution (min, median, p95, p99, max) and the
        Γ′ line, joined by newlines.
    """
    unit = (units or {}).get("qdd")
    keys = ("min", "median", "p95", "p99", "max")
    drawn = (_named_text(doc["parameters"]) if doc.get("parameters") else
             f"uniform ±{format_value(doc['spread'])} (relative) on `{parameter_label(doc['parameter'])}`")
    head = (f"Γ Monte Carlo: {doc['scenario']}, {doc['samples']} samples, {drawn}, seed {doc['seed']}, {doc['n_times']} "
            f"times{_forces_text(doc.get('actual_forces'))}")
    rows = [f"{with_unit('max_t ‖δq‖∞', unit):<26}" + "".join(f"{k:>12}" for k in keys)]
    labels = {"exact": "exact (5.3.5)", "first_order": "first order (5.3.10)", "analytic": "bound (5.3.11)"}
    for name, label in labels.items():
        rows.append(f"{label:<26}" + "".join(f"{format_value(doc[name][k]):>12}" for k in keys))
    tail = (f"Γ′ = {format_value(doc['margin'])} × p{format_value(100 * doc['quantile'])}(exact) = "
            f"{format_value(doc['gamma_prime'], unit)}   [Monte Carlo {format_value(doc['wall_s'], 's', digits=3)}, "
            f"nominal trajectory {format_value(doc['trajectory_wall_s'], 's', digits=3)}]")
    return "\n".join([head, *rows, tail])


def _units(units, *keys):
    """The units of ``keys`` ("q", "qd", ...) in a :func:`~robustrack.scenarios.units.tracking_units` dict (None: none)."""
    return [(units or {}).get(k) for k in keys]


def _spread_text(spread) -> str:
    """A relative spread (one number, or one per parameter) in percent: ``±10 %``, ``±(10, 20) %``."""
    if isinstance(spread, (int, float)) and not isinstance(spread, bool):
        return f"±{format_value(100 * spread)} %"
    if isinstance(spread, (list, tuple)) and all(isinstance(s, (int, float)) for s in spread):
        return f"±({', '.join(format_value(100 * s) for s in spread)}) %"
    return f"spread {spread}"


def _forces_text(forces) -> str:
    """The actual plant's friction and disturbance in a clause (``ActualForces.describe``), or ""."""
    if not forces:
        return ""
    parts = []
    if forces.get("viscous") is not None:
        spread = f" ±{format_value(100 * forces['spread'])} %" if forces.get("spread") else ""
        parts.append(f"friction{spread} (viscous ≤ {format_value(max(np.ravel(forces['viscous'])))}, Coulomb ≤ "
                     f"{format_value(max(np.ravel(forces['coulomb'])))})")
    d = forces.get("disturbance")
    if d:
        parts.append(f"{d['type']} ‖d‖∞ ≤ {format_value(d['bound'])}")
    return "; actual plant's δQ: " + ", ".join(parts)


def _named_text(parameters) -> str:
    """Named uncertain parameters in a line: ``m1 [0.9, 1.1] uniform; k normal σ = 0.1``."""
    parts = []
    for p in parameters:
        if p["distribution"] == "cases":
            parts.append(f"{p['name']} cases [{', '.join(format_value(c) for c in p['cases'])}]")
            continue
        box = f" [{format_value(p['range'][0])}, {format_value(p['range'][1])}]" if p.get("range") else ""
        sigma = f" σ = {format_value(p['sigma'])}" if p.get("sigma") is not None else ""
        parts.append(f"{p['name']}{box} {p['distribution'].replace('-', ' ')}{sigma}")
    return "; ".join(parts)


def _delta_text(doc, dm) -> str:
    """A sample's δ: ``δm = [...] kg`` for masses by spread, ``δ(m1, k) = [...]`` for named parameters."""
    values = ", ".join(typed_float(x) for x in dm)
    if doc.get("parameters"):
        return f"δ({', '.join(p['name'] for p in doc['parameters'])}) = [{values}]"
    return f"δm = [{values}] {MASS_UNIT}"


def _engine_text(engine) -> str:
    """", actual plants run against MuJoCo (RK4, 10 steps a sample)" where a campaign's engine is not robustrack's."""
    if not engine:
        return ""
    return (f", actual plants run against MuJoCo ({engine.get('integrator')}, {engine.get('substeps')} steps a "
            "sample; peaks at the sample instants)")


def format_montecarlo(doc: dict, result=None, units=None) -> str:
    """A Monte Carlo summary as text, every number with its unit.

    Parameters
    ----------
    doc : dict
        ``CampaignResult.summary()``.
    result : CampaignResult, optional
        For where it ran and what this call ran.
    units : dict, optional
        :func:`robustrack.scenarios.units.tracking_units` of the scenario; None: numbers
        without units.

    Returns
    -------
    str
    """
    uq, uqd, uQ, uqdd = _units(units, "q", "qd", "Q", "qdd")
    params = ", ".join(doc["parameter"] or [])
    name = doc["scenario"] or doc.get("plant") or "a script's loop"  # a campaign built in a script: its plant
    from ..campaigns.montecarlo import certificate_lines

    drawn = (_named_text(doc["parameters"]) if doc.get("parameters") else
             f"{doc.get('kind') or 'uniform'} {_spread_text(doc['spread'])} on {params}")
    lines = [f"Monte Carlo: {name}, {doc['compensator']}, {doc['samples']} samples, {drawn}, seed {doc['seed']}"
             f"{_forces_text(doc.get('actual_forces'))}{_engine_text(doc.get('actual_engine'))}",
             f"  completed {doc['completed']} / {doc['samples']}, failed {doc['failed']}"
             + (f" ({', '.join(f'{k} {v}' for k, v in doc['failure_kinds'].items())})" if doc["failed"] else "")]
    b = doc.get("bound") or {}
    promised = (f"   promised ‖e‖∞ ≤ {format_value(b.get('e'), uq)}, ‖ė‖∞ ≤ {format_value(b.get('edot'), uqd)} at "
                f"Γ = {format_value(b.get('gamma'), uqdd)}" if b else "")
    cert = certificate_lines(doc, dq_unit=uqdd, gamma_command=gamma_command(doc))
    lines += ["  " + cert[0] + promised] + ["  " + line for line in cert[1:]]
    proved = doc.get("certified")
    if proved:
        from ..certification.saved import gamma_verdict

        verdict = gamma_verdict(proved, b.get("gamma"), lambda v: format_value(v, uqdd))
        verdict = verdict and ": " + verdict
        lines.append(f"  certified over the box ({proved['level']} level"
                     f"{'' if proved.get('finished') else ', unfinished'}): sup ‖δq‖∞ ∈ "
                     f"[{format_value(proved['gamma_lower'], uqdd)}, {format_value(proved['gamma_upper'], uqdd)}]"
                     f"{verdict}")
    lines.append(f"  {'':<20}{'median':>11}{'p95':>11}{'p99':>11}{'max':>11}")
    for key, label, unit in (("max_abs_e", "max ‖e‖∞", uq), ("max_abs_edot", "max ‖ė‖∞", uqd),
                             ("max_abs_Qu", "max ‖Qᵘ‖∞", uQ)):
        q = doc[key]
        lines.append(f"  {with_unit(label, unit):<20}" + "".join(f"{format_value(q[k], digits=3):>11}"
                                                              for k in ("median", "p95", "p99", "max")))
    effort = doc.get("effort")
    if effort and effort.get("max") is not None:  # a robot's joints against their effort limits
        over = [f"{j} in {k}" for j, k in zip(effort["joints"], effort["over_per_joint"]) if k]
        lines.append(f"  {'peak |τ| / limit':<20}" + ", ".join(
            f"{j} {format_value(m, digits=3)}/{format_value(lim, digits=3)}"
            for j, m, lim in zip(effort["joints"], effort["max"], effort["limits"])) + (f" {uQ}" if uQ else ""))
        lines.append(f"  {'':<20}" + (f"effort limits EXCEEDED (the motors saturated) in {effort['samples_over']} of "
                                      f"{effort['measured']} samples: " + ", ".join(over) if over else
                                      f"inside the effort limits in all {effort['measured']} samples"))
    w = doc["worst"]
    if w:
        lines.append(f"  worst: sample {w['sample']}, {_delta_text(doc, w['dm'])}, "
                     f"max ‖e‖∞ = {format_value(w['max_abs_e'], uq, digits=6)}, held: {format_value(w['held'])}, "
                     f"{_assumptions_text({**w, **_limits_and_texts(doc.get('assumptions'))}, uqdd)}")
    for fail in doc["failures"][:5]:
        lines.append(f"  failed: sample {fail['sample']}: {fail['error']}")
    if len(doc["failures"]) > 5:
        lines.append(f"  … and {len(doc['failures']) - 5} more failures (all in the JSON)")
    where = ""
    if result is not None and result.executor:
        where = f", {result.ran} run now on {result.executor}"
    lines.append(f"  wall {format_value(doc['wall_s'], 's', digits=3)}, cpu {format_value(doc['cpu_s'], 's', digits=3)}"
                 f"{where}")
    return "\n".join(lines)


def gamma_command(doc: dict) -> str | None:
    """The ``robustrack gamma`` command that estimates Γ for a campaign's uncertainty (None: not a scenario's).

    Parameters
    ----------
    doc : dict
        A campaign summary or worst-case document (``scenario``, ``spread``, ``seed``).

    Returns
    -------
    str or None
    """
    if not doc.get("scenario") or not isinstance(doc.get("spread"), (int, float)):
        return None
    seed = f" --seed {doc['seed']}" if doc.get("seed") is not None else ""
    return f"robustrack gamma {doc['scenario']} --spread {doc['spread']:g}{seed}"


def _limits_and_texts(assumptions) -> dict:
    """A campaign's assumption report's limits and texts (:func:`~robustrack.campaigns.montecarlo.summarize`)."""
    return {"limits": (assumptions or {}).get("limits"), "texts": (assumptions or {}).get("texts")}


def _assumptions_text(w: dict, uqdd) -> str:
    """A sample's assumptions verdict with its margins: ``assumptions held: no (max ‖δq‖∞ = 139 > Γ = 100 …)``."""
    if w.get("assumptions_held") is None:
        return "assumptions: not measured"
    limits = w.get("limits") or {}
    parts = []
    # GD-bar's P is ‖δq‖∞ + ‖(I − M̃ₐ)e‖∞ against Γ (tracking.assess.GDBAR_P), GD's against ρ0
    from ..tracking.assess import GDBAR_P

    gdbar = (w.get("texts") or {}).get("max_norm_P") == GDBAR_P
    P = (("max (‖δq‖∞ + ‖(I − M̃ₐ)e‖∞)", "Γ") if gdbar else ("max ‖(I − M̃ₐ)(e + K_i∫e)‖∞", "ρ0"))
    for key, label, unit, limit_name in (("max_norm_dq", "max ‖δq‖∞", uqdd, "Γ"),
                                         ("max_norm_Mtilde", "max ‖M̃ₐ‖∞", None, "1 − α0/σ"),
                                         ("max_norm_P", P[0], uqdd, P[1])):
        if w.get(key) is None:
            continue
        limit = limits.get(key)
        rel = "" if limit is None else (f" ≤ {limit_name} = {format_value(limit, unit)}" if w[key] <= limit else
                                        f" > {limit_name} = {format_value(limit, unit)}")
        parts.append(f"{label} = {format_value(w[key], unit)}{rel}")
    return f"assumptions held: {format_value(w['assumptions_held'])} ({', '.join(parts)})"


def format_worst_case(doc: dict, units=None) -> str:
    """A worst-case search as text, every number with its unit.

    Parameters
    ----------
    doc : dict
        From :func:`run_worst_case`.
    units : dict, optional
        :func:`robustrack.scenarios.units.tracking_units` of the scenario; None: numbers
        without units.

    Returns
    -------
    str
    """
    uq, uqd, uqdd = _units(units, "q", "qd", "qdd")
    w = doc["worst"]
    b = doc.get("bound") or {}
    limits = b.get("assumption_limits") or {}
    box = (f"box of {_named_text(doc['parameters'])}" if doc.get("parameters") else
           f"δm box ±{format_value(100 * doc['spread'])} %")
    lines = [f"Worst case: {doc['scenario']}, {doc['compensator']}, {box}, "
             f"{doc['evaluations']} evaluations (population {doc['population']}, {doc['generations']} generations, "
             f"seed {doc['seed']}), {doc['failed']} failed",
             *([f"  {doc['box_note']}"] if doc.get("parameters") and doc.get("box_note") else []),
             f"  worst {_delta_text(doc, w['dm'])}",
             f"  max ‖e‖∞ = {format_value(w['max_abs_e'], uq, digits=6)}, max ‖ė‖∞ = "
             f"{format_value(w['max_abs_edot'], uqd, digits=6)}; promised ‖e‖∞ ≤ {format_value(b.get('e'), uq)}: "
             f"held {format_value(w['held'])}, guaranteed {format_value(w.get('guaranteed'))}",
             f"  {_assumptions_text({**w, 'limits': limits, 'texts': b.get('assumption_texts')}, uqdd)}"]
    if w.get("max_norm_dq") is not None and limits.get("max_norm_dq") is not None \
            and not w["max_norm_dq"] <= limits["max_norm_dq"]:
        cmd = gamma_command({**doc, "seed": None})  # doc's seed is the search's, not the draws'
        lines.append(f"  Γ is exceeded at this plant: the bound held without its guarantee; "
                     f"{'`' + cmd + '` estimates' if cmd else 'a Γ Monte Carlo (robustrack gamma) estimates'} Γ′ "
                     f"for this uncertainty — at least {format_value(w['max_norm_dq'], uqdd)} covers this plant "
                     "(set it as uncertainty.gamma and the compensator's design value Γ′ or Γ)")
    mc = doc.get("montecarlo_worst")
    if mc:
        lines.append(f"  Monte Carlo worst ({mc['samples']} samples): sample {mc['sample']}, max ‖e‖∞ = "
                     f"{format_value(mc['max_abs_e'], uq, digits=6)} (the search started from it)")
    cert = doc.get("certificate")
    if cert:
        lines.append(f"  certificate ({cert['level']} level): sup ‖δq‖∞ ∈ [{format_value(cert['gamma_lower'], uqdd)}, "
                     f"{format_value(cert['gamma_upper'], uqdd)}] over the box, certified; the search started from "
                     f"its lower-bound plant δm = [{', '.join(typed_float(x) for x in cert['delta'])}] {MASS_UNIT}")
    lines.append(f"  reproduce: {doc['reproduce']}")
    lines.append(f"  wall {format_value(doc['wall_s'], 's', digits=3)}")
    return "\n".join(lines)


def _certified_promise_lines(p, spread, uq, uqd, uqdd) -> list:
    """The tuned promise at a certified Γ, with the level it was proved at (no lines without a certificate)."""
    if not p:
        return []
    if p.get("certified") is False:
        return [f"  with Γ = {format_value(p['gamma'], uqdd)} the promised bound is ‖e‖∞ ≤ "
                f"{format_value(p['e'], uq, digits=3)}, ‖ė‖∞ ≤ {format_value(p['edot'], uqd, digits=3)}; NOT "
                f"certified: {p['not_certified_because']}"]
    box = "every plant in the box" if not isinstance(spread, (int, float)) else \
        f"every plant in ±{format_value(100 * spread)} %"
    at = "" if p["gamma"] == p["gamma_upper"] else \
        f" (raised from the certified {format_value(p['gamma_upper'], uqdd)} by the verification)"
    level = ("along the nominal motion (box level; the tube of this promise: robustrack certify --level closed "
             "with the tuned gains)" if p["level"] == "box" else
             "over the tube of the certified settings' bound (closed level; certify the tuned gains with "
             "--level closed to close this promise)")
    return [f"  with Γ = {format_value(p['gamma'], uqdd)}{at} the promised bound is ‖e‖∞ ≤ "
            f"{format_value(p['e'], uq, digits=3)}, ‖ė‖∞ ≤ {format_value(p['edot'], uqd, digits=3)}; Γ certified for "
            f"{box} {level}" + ("" if p["finished"] else "; the certificate is UNFINISHED (its upper bound is valid)")]


def format_tune(doc: dict, units=None) -> str:
    """A tuning and its verification as text, every number with its unit.

    Parameters
    ----------
    doc : dict
        From :func:`run_tune`.
    units : dict, optional
        :func:`robustrack.scenarios.units.tracking_units` of the scenario; None: numbers
        without units.

    Returns
    -------
    str
    """
    from ..controllers import COMPENSATORS
    from ..plants.units import fill_units

    uq, uqd, uqdd = _units(units, "q", "qd", "qdd")
    t, b = doc["tuned"], doc["before"]
    tgt = doc["target"]
    info = getattr(COMPENSATORS.get(doc["compensator"]), "parameter_info", {})

    def param(k, v):
        template = info.get(k, ("", "", ""))[1]
        unit = fill_units(template, *_units(units, "q", "qd", "qdd", "Q")) if units and template else None
        return f"{k}={format_value(v, unit)}"

    head = f"  {'':<10}{'parameters':<58}{with_unit('promised e', uq):>16}{with_unit('promised ė', uqd):>18}" \
           f"{'gain (1/s)':>11}"
    row = lambda label, d: (f"  {label:<10}{', '.join(param(k, v) for k, v in d['params'].items()):<58}"  # noqa: E731
                            f"{format_value(d['bounds']['e'], digits=3):>16}"
                            f"{format_value(d['bounds']['edot'], digits=3):>18}{format_value(d['effort'], digits=3):>11}")
    lines = [f"Tuning {doc['compensator']} on {doc['scenario']}: target promised ‖e‖∞ ≤ "
             f"{format_value(tgt['e'], uq, digits=3)}, ‖ė‖∞ ≤ {format_value(tgt['edot'], uqd, digits=3)}; "
             f"Γ = {format_value(doc['gamma']['value'], uqdd)} ({doc['gamma']['source']})",
             *_certified_promise_lines(doc.get("certified"), doc.get("spread"), uq, uqd, uqdd),
             "  " + doc["note"], head, row("before", b), row("tuned", t),
             ("  use it with: " + " ".join(f"--set {s}" for s in t["set"]) if doc.get("proposed", True) else
              "  " + doc["not_proposed_because"]),
             "  verification:"]
    lines += ["  " + line for line in format_montecarlo(doc["verification"], units=units).splitlines()]
    lines.append(f"  measured max errors within the target on every sample: {format_value(doc['measured_within_target'])}")
    corners = doc.get("corners") or []
    if corners:  # the ends of the declared ranges, beside the Monte Carlo of their distributions
        from ..campaigns.box_verification import values_text as _plant_values

        broke = corners[-1] if corners[-1]["broke"] else None
        lines.append(f"  corners of the declared box: {len(corners) - (broke is not None)} held"
                     + (f"; {corners[-1]['label']} ({_plant_values(corners[-1]['values'])}) broke it: "
                        f"{broke['broke']}" if broke else "")
                     + (f" ({doc['corners_note']})" if doc.get("corners_note") else ""))
    return "\n".join(lines)


def _effort_lines(effort, unit) -> list:
    """The peak demanded |τ| of each joint against its effort limit ("!" where over: the motor gave the limit) and,
    where exceeded, which joint, when and how far (docs/guide/robot.md, "Effort limits")."""
    if not effort or effort.get("peak") is None:
        return []
    out = []
    from ..tracking.actuators import effort_note

    over = {r["joint"] for r in effort["exceeded"]}
    out.append(f"  {'effort: peak |τ| / limit per joint':<36} " + ", ".join(
        f"{j} {format_value(p, digits=3)}/{format_value(lim, digits=3)}{' !' if j in over else ''}"
        for j, p, lim in zip(effort["joints"], effort["peak"], effort["limit"])) + (f" {unit}" if unit else ""))
    if over:
        out.append(f"  {'effort limits EXCEEDED (saturated)':<36} {effort_note(effort['exceeded'], unit)}")
    return out


def run_lines(summary) -> list:
    """The lines ``robustrack run`` prints of a tracking run's summary: the verdict first, the metrics each with its
    unit, the promised bounds (in a sampled loop with what they cover and their terms), MuJoCo's run beside, the
    power of the control forces, the solves.

    Parameters
    ----------
    summary : dict
        :func:`robustrack.scenarios.tracking_kinds.run_tracking`'s summary.

    Returns
    -------
    list of str
    """
    from ..tracking.assess import bounds_verdict, sensor_text, terms_text

    out = []

    units, b = summary.get("units"), summary.get("bounds")
    rows = (units or {}).get("residual_rows") or []
    if b is not None and summary.get("metrics"):  # the answer first, then the numbers behind it
        out.append("  verdict: " + bounds_verdict(summary["metrics"], b, units=units, note=b.get("note")))
    if summary.get("sensor"):
        out.append(f"  {'sensor':<36} {sensor_text(summary['sensor'], summary.get('sample_period'))}")
    out += _effort_lines(summary.get("effort"), ((units or {}).get("metrics") or {}).get("max_abs_Qc"))
    for key, value in summary["metrics"].items():
        if key == "max_constraint_residual_per_row" and len(value) == len(rows):  # rows in different units
            out.append(f"  {'  per row':<36} " + ", ".join(format_value(v, u) for v, u in zip(value, rows)))
        elif not isinstance(value, (list, dict)):
            out.append(f"  {key:<36} {format_metric(key, value, units, b)}")
        if key == "actual_max_abs_e" and summary.get("uncompensated_limit"):
            stop = summary["uncompensated_limit"]
            out.append(f"  {'':<36} (up to t = {format_value(stop['t'], 's')}, where joint {stop['joint']!r} reaches its "
                  "limit: the robot stops there)")
    if b is not None:
        bu = (units or {}).get("bounds") or {}
        judged = bounds_judged(b, b.get("held"))
        label = "promised bound on ‖e‖∞ / ‖ė‖∞" if judged or b.get("e") is None else "compensator's bound (not promised)"
        out.append(f"  {label:<36} {format_value(b.get('e'), bu.get('e'))} / "
              f"{format_value(b.get('edot'), bu.get('edot'))}  held: {format_value(b.get('held'))}"
              + ("" if b.get("e") is not None else "  (no compensator: nothing promised)"))
        if b.get("gamma") is not None:
            label = "judged at Γ (bound on ‖δq‖∞)" if judged else "Γ assumed (bound on ‖δq‖∞)"
            out.append(f"  {label:<36} {format_value(b['gamma'], bu.get('gamma'))}")
        if b.get("note"):
            out.append(f"  {'':<36} ({b['note']})")
        if b.get("coverage"):
            out.append(f"  {'in its sampled loop':<36} {b['coverage']}")
        if b.get("terms"):
            out.append(f"  {'terms of the bound':<36} {terms_text(b['terms'])}")
    mj = summary.get("mujoco")
    if mj:  # the same loop against MuJoCo as the actual plant
        qu = ((units or {}).get("metrics") or {}).get("max_abs_e")
        out.append(f"  {'MuJoCo (' + mj['integrator'] + ', ' + str(mj['substeps']) + ' steps a sample)':<36} "
              + (f"max‖e‖∞ {format_value(mj['max_abs_e'], qu)} (robustrack's actual plant "
                 f"{format_value(mj['robustrack_max_abs_e'], qu)}, difference "
                 f"{format_value(mj['difference_max_abs_e'], qu)}); bounds held: {format_value(mj['bounds_held'])}"
                 + (f" (its loop holds τ: ‖e‖∞ ≤ {format_value(mj['bound_e'], qu)}, {mj['coverage']})"
                    if mj.get("coverage") else "")
                 if mj["success"] else f"FAILED: {mj['message']}")
              + (f"; the motors saturated at {mj['saturated_samples']} samples (τ clamped at the effort limits)"
                 if mj.get("saturated_samples") else "")
              + ("; joint limits reached: " + ", ".join(f"{j} at t = {format_value(t, 's')}"
                                                         for t, j in mj["limits_hit"]) if mj["limits_hit"] else ""))
    for force, pw in ((k, (summary.get("power") or {}).get(k)) for k in ("Qc", "Qu")):
        if pw:  # tracking runs: power and work of the control forces on q_c (plants.power)
            share = format_value(None if pw["workless_share"] is None else 100 * pw["workless_share"], "%", digits=3)
            out.append(f"  {'work of ' + ('Qᶜ' if force == 'Qc' else 'Qᵘ') + ' on q_c (∫|P| dt)':<36} "
                  f"{format_value(pw['work'], 'J')} ({format_value(pw['abs_work'], 'J')}), max |P| "
                  f"{format_value(pw['max_abs_power'], 'W')}, workless share {share}")
    for label, peak in (summary.get("contact") or {}).items():  # frame constraints: the contact force beside Qᶜ
        name, unit = label.rsplit(" (", 1)
        out.append(f"  {'max |' + name + '|':<36} {format_value(peak, unit.rstrip(')'))} (nominal, in the frame)")
    for part, st in (summary.get("solvers") or {"system": summary["solver"]}).items():
        if st:
            out.append(f"  solver ({part}): {st['method']} rtol={format_value(st['rtol'])} atol={format_value(st['atol'])} "
                  f"nfev={st['nfev']} success={format_value(st['success'])} wall={format_value(st['wall_s'], 's', digits=3)} "
                  f"[{st.get('backend', 'numpy')}]")
    return out
