"""What a tracking report says was run: system, δm, compensator and f with every parameter, horizon, solvers.

Every value carries its unit: the coordinates' from the plant's ``coordinate_kinds``
(:func:`robustrack.scenarios.units.tracking_units`), a compensator parameter's from its
``parameter_info`` template filled with them, δm in kg, times in s. The header cites the
scenario's source and the source of the compensator that ran (``Compensator.source``),
not those of the others.
"""

from __future__ import annotations

import numpy as np

from .._format import format_value
from ..controllers import G_FORMULAS
from ..plants.units import fill_units
from ..scenarios.compensator_table import compensator_keys
from ..scenarios.units import MASS_UNIT
from .text import bounds_judged
from ..uncertainty import parameter_values

__all__ = ["sources", "system_name", "plant_text", "compensator_rows", "run_rows", "gamma_role", "compensator_source",
           "verdict_lines", "force_scale_note", "force_scale_reason", "UNCOMPENSATED", "IMPLAUSIBLE_FACTOR"]

#: What the "uncompensated" comparison is, in one sentence (the report's verdict and results table say it).
UNCOMPENSATED = ("the uncompensated actual system is the actual plant driven by the nominal force Qᶜ(t) alone, open "
                 "loop, without the compensator's feedback: nothing corrects its drift, so on a sensitive (chaotic) "
                 "plant it ends far from the nominal motion whatever the compensator achieves")

#: A nominal force Qᶜ is flagged as implausible when its peak exceeds this multiple of the largest force the
#: plant itself exerts at rest along the nominal motion, max ‖Q(q, 0, t)‖∞ (gravity, springs: the scale its
#: masses and gravity set). Beyond an order of magnitude the requirement asks for accelerations far above
#: gravity's — its gains, units or initial state are worth a second look (docs/guide/reports.md, "Implausible
#: magnitudes"). A plant with no force at rest (no gravity, no springs) sets no scale and is not judged.
IMPLAUSIBLE_FACTOR = 10.0


def plant_text(plant) -> str:
    """The plant in the user's names: its class and its coordinates (``FunctionPlant (shoulder, elbow)``).

    Parameters
    ----------
    plant : Plant

    Returns
    -------
    str
    """
    return f"{type(plant).__name__} ({', '.join(str(c) for c in plant.coordinates)})"


def system_name(scenario, problem, title: str | None = None) -> str:
    """What the report calls the system: ``title``, else the scenario's title or name, else the plant.

    Parameters
    ----------
    scenario : Scenario or None
    problem : TrackingProblem
    title : str, optional
        The user's name for it (``write_report(title=...)``).

    Returns
    -------
    str
    """
    if title:
        return str(title)
    if scenario is not None:
        return scenario.title or scenario.name
    return f"{plant_text(problem.nominal)}, built in a script"


def sources(scenario, problem, title: str | None = None) -> str:
    """The report's source line: the scenario's source (or the script's plant), then the compensator's.

    Parameters
    ----------
    scenario : Scenario or None
        Its ``source`` (the system, its constraint and settings); None: a plant built in a script.
    problem : TrackingProblem
        Its compensator's class ``source`` (no compensator: "none").
    title : str, optional
        The user's name for the system (a run built in a script).

    Returns
    -------
    str
    """
    system = f"{system_name(scenario, problem, title)} — plant {plant_text(problem.nominal)}"
    if scenario is not None and scenario.source:
        system = scenario.source
    compensator = problem.compensator
    if compensator is None:
        return f"System: {system}. Compensator: none (u = 0, the actual plant under Qᶜ(t) alone)."
    return (f"System: {system}. Compensator {type(compensator).__name__} ({compensator.name}): "
            f"{compensator_source(compensator, scenario)}.")


def compensator_source(compensator, scenario) -> str:
    """The compensator's citation: where its law and bound come from, and where its settings do only when the
    scenario itself comes from that place.

    A seed scenario (``triple-pendulum``: "W §2.3 …, §7.3 …") runs W's settings, so its report cites them ("W
    ch. 7 (law …, bound …); settings W §7.3"); a user's own system (a script's plant, a scenario file of its own)
    runs the user's settings, and its report cites the law only.

    Parameters
    ----------
    compensator : Compensator
        Its ``source`` (law, bound) and ``settings_source`` (e.g. "W §7.3": a work's short name, then the place).
    scenario : Scenario or None
        The settings are cited when its ``source`` starts with the same work and names the same place.

    Returns
    -------
    str
    """
    law = compensator.source or "—"
    settings = getattr(compensator, "settings_source", "")
    work, _, place = settings.partition(" ")
    cited = scenario.source if scenario is not None else ""
    if settings and cited.startswith(f"{work} ") and place in cited:
        return f"{law}; settings {settings}"
    return law


def _force_scales(result, plant):
    """(peak, at rest, along the motion): max‖Qᶜ‖∞, max ‖Q(q, 0, t)‖∞ and max ‖Q(q, q̇, t)‖∞ along the nominal
    motion (None where the run has no nominal force to judge)."""
    peak = (result.metrics or {}).get("max_abs_Qc")
    q = np.asarray(result.q, dtype=float)
    if peak is None or not np.isfinite(peak) or q.size == 0:
        return None
    t = np.asarray(result.t, dtype=float)
    qd = np.asarray(result.qd, dtype=float)

    def largest(v):
        a = np.asarray(plant.given_force(q, v, t), dtype=float)
        return float(np.abs(a).max()) if a.size else 0.0

    return float(peak), largest(np.zeros_like(q)), largest(qd)


def force_scale_note(result, plant, units: dict) -> str | None:
    """A flag when the nominal force's peak is implausible for the motion the requirement asks for
    (:data:`IMPLAUSIBLE_FACTOR`), else None.

    The requirement's own scale is the larger of the force the plant exerts at rest (gravity, springs) and the force
    it exerts along the nominal motion, max ‖Q(q, q̇, t)‖∞ (with the velocity terms of the motion the requirement
    asks for: a whirling pendulum's centrifugal forces); a peak within :data:`IMPLAUSIBLE_FACTOR` × that is the
    motion's own (:func:`force_scale_reason` says why), beyond it an alarm.

    Parameters
    ----------
    result : TrackingResult
        Its nominal motion (``t``, ``q``, ``qd``) and ``max_abs_Qc``.
    plant : Plant
        The nominal plant: its given force along the nominal motion, ``given_force(q, q̇, t)`` and at rest.
    units : dict
        :func:`robustrack.scenarios.units.tracking_units` of the run (the force unit ``Q``).

    Returns
    -------
    str or None
    """
    scales = _force_scales(result, plant)
    if scales is None:
        return None
    peak, at_rest, moving = scales
    scale = max(at_rest, moving)
    if not np.isfinite(scale) or scale == 0.0 or peak <= IMPLAUSIBLE_FACTOR * scale:
        return None
    unit = units.get("Q")
    return (f"implausible magnitude: the nominal force peaks at max‖Qᶜ‖∞ = {format_value(peak, unit)}, "
            f"{format_value(peak / scale)} × the largest force the plant exerts along the nominal motion "
            f"(max ‖Q(q, q̇, t)‖∞ = {format_value(moving, unit)}; at rest {format_value(at_rest, unit)}: gravity, "
            f"springs); more than {format_value(IMPLAUSIBLE_FACTOR)} × means the requirement demands accelerations "
            "far beyond what the plant's own forces along its motion make plausible — check the constraint's gains, "
            "the units and the initial state")


def force_scale_reason(result, plant, units: dict) -> str | None:
    """Why a nominal force far above the plant's force at rest is real (not an alarm): it is the scale of the
    plant's own forces along the motion the requirement asks for. None where there is nothing to explain (the
    peak within :data:`IMPLAUSIBLE_FACTOR` × the force at rest) or an alarm instead (:func:`force_scale_note`).

    Parameters
    ----------
    result, plant, units
        As :func:`force_scale_note`.

    Returns
    -------
    str or None
    """
    scales = _force_scales(result, plant)
    if scales is None or force_scale_note(result, plant, units) is not None:
        return None
    peak, at_rest, moving = scales
    if not (np.isfinite(at_rest) and at_rest > 0 and peak > IMPLAUSIBLE_FACTOR * at_rest):
        return None
    unit = units.get("Q")
    return (f"The nominal force peaks at max‖Qᶜ‖∞ = {format_value(peak, unit)}, "
            f"{format_value(peak / at_rest)} × what the plant exerts at rest ({format_value(at_rest, unit)}: gravity, "
            f"springs) but of the scale of its own forces along the motion the requirement asks for (max ‖Q(q, q̇, "
            f"t)‖∞ = {format_value(moving, unit)}: the velocity terms of a fast motion): the requirement's own demand.")


def verdict_lines(result, plant, units: dict) -> list:
    """The lines a report opens with: the verdict on the promised bounds (held, not held, not judged and why),
    any implausible magnitude, and what the uncompensated comparison is, with its number.

    Parameters
    ----------
    result : TrackingResult
    plant : Plant
        The nominal plant (:func:`force_scale_note`).
    units : dict
        :func:`robustrack.scenarios.units.tracking_units` of the run.

    Returns
    -------
    list of str
        The verdict first (:func:`robustrack.tracking.assess.bounds_verdict`, capitalized).
    """
    from ..tracking.assess import bounds_verdict

    info, m = result.info, result.metrics or {}
    verdict = bounds_verdict(m, info.get("bounds"), units=units, note=info.get("bounds_note"))
    lines = ["Verdict: " + verdict]
    flag = force_scale_note(result, plant, units)
    if flag:
        lines.append("Look twice — " + flag + ".")
    if m.get("actual_max_abs_e") is not None:
        lines.append(f"For scale, without the compensator: max‖q_a − q‖∞ = "
                     f"{format_value(m['actual_max_abs_e'], units['metrics'].get('actual_max_abs_e'))}; "
                     + UNCOMPENSATED + ".")
    reason = force_scale_reason(result, plant, units)
    if reason:
        lines.append(reason)  # a real force said with its reason, after the verdict's own lines: not an alarm
    return lines


def gamma_role(name: str | None) -> tuple[str, str] | None:
    """What ``uncertainty.gamma``, the Γ the bounds are judged at, is to a compensator (None: it uses no Γ).

    Parameters
    ----------
    name : str or None
        The compensator's registry name (``Compensator.name``); None: no compensator.

    Returns
    -------
    (symbol, role) or None
        E.g. ``("Γ", "the gain β uses the design value Γ′ (compensator.gss.gamma_prime); the bound is judged
        at Γ")`` for GSS.
    """
    if name in ("gss", "smc"):
        return "Γ", (f"the gain β uses the design value Γ′ (compensator.{name}.gamma_prime); the bound is judged "
                     "at Γ")
    if name in ("gd", "leitmann-corless"):
        return "Γ", f"the gain ρ uses compensator.{name}.gamma; the bound is judged at Γ"
    if name in ("gdbar", "lyapunov-redesign"):
        return "Γ", "the law needs none; only the reported bound is judged at it"
    return None


def compensator_rows(compensator, units: dict) -> list:
    """One row per parameter of the compensator and its control function.

    Parameters
    ----------
    compensator : Compensator
        Built from a scenario (its ``parameter_info`` and ``parameter_unit``).
    units : dict
        :func:`robustrack.scenarios.units.tracking_units` of the run.

    Returns
    -------
    list of (str, str, str)
        ``(symbol (compensator.KEY), value with unit, meaning)``.
    """
    keys = compensator_keys(compensator)
    rows = []
    values = {k: v for k, v in compensator.params.items() if k != "f"}
    f = getattr(compensator, "f", None)
    if f is not None and "eps" in keys:
        values.update({"eps": f.eps, **f.params})
    for name, value in values.items():
        symbol, _, meaning = compensator.parameter_info.get(name, (name, "", ""))
        key = keys.get(name)
        label = f"{symbol} (compensator.{key})" if key else symbol
        if isinstance(value, np.ndarray):
            value = value.tolist()
        unit = fill_units(compensator.parameter_unit(name), units["q"], units["qd"], units["qdd"], units["Q"])
        rows.append((label, format_value(value, unit), meaning))
    return rows


def _constraint_text(constraint, residual) -> str:
    """What the nominal controller enforces: the residual's description, else the constraint's type and rows."""
    if constraint is None:
        return "none (unconstrained nominal system)"
    if residual is not None:
        return residual.description
    rows = getattr(constraint, "m", None)
    return f"{type(constraint).__name__}" + (f", {rows} row{'s' if rows != 1 else ''}" if rows is not None else "")


def _masses(scenario, plant):
    """(names, nominal values) of the masses ``uncertainty.dm`` perturbs."""
    params = scenario.spec.uncertain_parameters(scenario.config)
    values = np.atleast_1d(parameter_values(plant, params if len(params) > 1 else params[0])).astype(float)
    if len(params) > 1 or values.size == 1:  # one scalar parameter keeps its own name (payload_mass, not payload_mass1)
        return list(params), values
    names = [f"{params[0]}{i + 1}" for i in range(values.size)]
    return names, values


def _uncertainty_rows(scenario, problem) -> list:
    """The nominal masses and δm of a scenario; for a script's run, the parameters the actual plant changes."""
    if scenario is not None and scenario.config.get("uncertainty", {}).get("dm"):
        names, nominal = _masses(scenario, problem.nominal)
        dm = np.asarray(scenario.config["uncertainty"]["dm"], dtype=float)
        return [("nominal masses (" + ", ".join(names) + ")", format_value(nominal.tolist(), MASS_UNIT), ""),
                ("δm (uncertainty.dm)", format_value(dm.tolist(), MASS_UNIT),
                 f"actual masses m + δm = {format_value((nominal + dm).tolist(), MASS_UNIT)}")]
    actual = problem.actual if problem.actual is not None else problem.nominal
    nominal_params, actual_params = problem.nominal.params, getattr(actual, "params", {})
    changed = problem.nominal.changed_parameters(actual)
    if type(actual) is not type(problem.nominal):
        return [("actual plant", type(actual).__name__, f"the nominal is {type(problem.nominal).__name__}")]
    if not changed:
        return [("actual plant", "the nominal plant", "no uncertainty in this run")]
    return [(f"parameter {k}: nominal → actual", f"{format_value(_plain(nominal_params[k]))} → "
             f"{format_value(_plain(actual_params[k]))}", "") for k in changed]


def _plain(v):
    return v.tolist() if isinstance(v, np.ndarray) else (list(v) if isinstance(v, tuple) else v)


def run_rows(scenario, problem, result, units: dict, title: str | None = None) -> list:
    """The "What was run" table of a report.

    Parameters
    ----------
    scenario : Scenario or None
        The scenario as run (overrides applied); None: a run built in a script (the parameters its
        actual plant changes are listed instead of δm).
    problem : TrackingProblem
        What ran: the nominal and actual plants, the compensator, the residual description.
    result : TrackingResult
        The run (sampling, solvers, transient).
    units : dict
        :func:`robustrack.scenarios.units.tracking_units` of the run.
    title : str, optional
        The user's name for the system (:func:`system_name`).

    Returns
    -------
    list of (str, str, str)
        ``(item, value, note)``: system and coordinates, nominal masses and δm, the
        compensator with its source, f, one row per parameter, the Γ the bounds are
        judged at, the horizon, the transient, the control sampling, and one row per solve.
    """
    cu = units["coordinates"]
    judged = bounds_judged(result.info.get("bounds"), (result.metrics or {}).get("bounds_held"))
    coords = ", ".join(cu["coordinates"])
    kinds = ", ".join(sorted({k or "unknown" for k in cu["kinds"]}))
    residual = problem.residual
    rows = [("system", system_name(scenario, problem, title),
             f"plant {type(problem.nominal).__name__}, coordinates {coords} ({kinds}: e in {units['q'] or '1'}, "
             f"ė in {units['qd']}, forces in {units['Q']})"),
            ("constraint (nominal controller Qᶜ)", _constraint_text(problem.constraint, residual),
             "" if residual is None else f"residual {residual.symbol} in {residual.unit or '1'}"
             + (f" (rows: {', '.join(u or '1' for u in residual.rows)})" if len(set(residual.rows)) > 1 else ""))]
    rows += _uncertainty_rows(scenario, problem)
    comp = problem.compensator
    if comp is None:
        rows.append(("compensator", "none (compensator.type = \"none\")", "u = 0: nothing promised"))
    else:
        rows.append(("compensator", f"{type(comp).__name__} (compensator.type = \"{comp.name}\")",
                     f"source: {compensator_source(comp, scenario)}"))
        f = getattr(comp, "f", None)
        if f is not None:
            formula = G_FORMULAS.get(f.name, "user g")
            rows.append(("control function f", f"{f.name}: f(x) = g(x/ε), g(x) = {formula}",
                         "continuous" if f.continuous else "discontinuous: sampled (zero-order hold)"))
        rows += compensator_rows(comp, units)
        role = gamma_role(comp.name)
        if role is not None:
            gamma = format_value((result.info.get("bounds") or {}).get("gamma"), units["bounds"]["gamma"])
            if judged:
                rows.append((f"Γ the bounds are judged at ({role[0]})", gamma,
                             f"uncertainty.gamma: {role[1]}; the bounds assume ‖δq‖∞ ≤ Γ along the run"))
            else:
                rows.append((f"Γ ({role[0]})", gamma, f"uncertainty.gamma: {role[1].split(';')[0]}; no bound is "
                             "judged in this run (see “bounds held”)"))
    t0, t1 = problem.t_span
    transient = (result.metrics or {}).get("transient_s")
    rows += [("horizon", f"{format_value(float(t0), 's')} – {format_value(float(t1), 's')}",
              f"{problem.t_eval.size} output points (simulation.n_points); maxima are taken at every solver step"),
             ("transient (not judged)" if judged else "transient (simulation.transient)", format_value(transient, "s"),
              ("judged from the start: the run starts on the nominal motion, e(0) = ė(0) = 0"
               if transient == 0 else "the bounds are judged after it (simulation.transient)") if judged else
              "unused: no bound is judged in this run"),
             ("control", "continuous" if not result.info.get("sample_period") else
              f"sampled, zero-order hold h = {format_value(result.info['sample_period'], 's')}", "")]
    for part, st in (result.info.get("solvers") or {}).items():
        if st:
            rows.append((f"solver ({part} system)", f"{st['method']}, rtol {format_value(st['rtol'])}, "
                         f"atol {format_value(st['atol'])}", f"backend {st.get('backend', 'numpy')}"))
    return rows
