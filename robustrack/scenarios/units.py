"""Units of what a scenario run reports, from the plant's coordinate kinds.

The plant says what its coordinates are (:func:`robustrack.plants.units.coordinate_units`:
angles → rad, rad/s, rad/s², N·m; lengths → m, m/s, m/s², N); a tracking scenario adds
the unit of its constraint residual (``TrackingProblem.residual``, a :class:`ResidualInfo`).
From these, :func:`tracking_units` gives the unit of every metric of a tracking run
(:class:`~robustrack.tracking.TrackingMetrics`), of the promised bounds and of Γ, and
:func:`constrained_units` those of a constrained simulation (its residual per row, A q̈ − b,
the scenario's extras); the run summary carries them (``summary["units"]``), and the CLI,
comparison tables and reports print them after each number.
"""

from __future__ import annotations

import re

from ..plants.units import common_unit, coordinate_units
from ..tracking.problem import ResidualInfo

__all__ = ["TRACKING_METRIC_UNITS", "CONSTRAINED_METRIC_UNITS", "BOUND_UNITS", "MASS_UNIT",
           "residual_info", "per_time", "tracking_units", "constrained_units", "scenario_units"]

#: Metric of a tracking run → unit template ({q}, {qd}, {qdd}, {Q} of the plant, {residual}).
TRACKING_METRIC_UNITS = {
    "max_abs_e": "{q}", "max_abs_edot": "{qd}", "rms_e": "{q}", "rms_edot": "{qd}", "iae_e": "{q}·s",
    "max_abs_e_per_coordinate": "{q}", "max_abs_edot_per_coordinate": "{qd}",
    "rms_e_per_coordinate": "{q}", "rms_edot_per_coordinate": "{qd}", "iae_e_per_coordinate": "{q}·s",
    "max_abs_Qu": "{Q}", "max_abs_Qc": "{Q}", "effort_Qu": "{Q}·s", "chattering_Qu": "{Q}/s",
    "transient_s": "s", "reaching_time": "s",
    "max_abs_e_after_transient": "{q}", "max_abs_edot_after_transient": "{qd}",
    "bounds_held": "",
    "max_constraint_residual_nominal": "{residual}", "max_constraint_residual_controlled": "{residual}",
    "max_constraint_residual_gap": "{residual}",
    "actual_max_abs_e": "{q}", "actual_max_abs_e_per_coordinate": "{q}",
    "max_norm_dq": "{qdd}", "max_norm_Mtilde": "", "max_norm_P": "{qdd}", "assumptions_held": "", "start_note": "",
    # actuated runs: the commands τ in the generalized force's unit (B dimensionless, as in the catalog)
    "saturation_fraction": "", "first_saturation_time": "s", "first_saturation_after_transient": "s",
    "max_abs_tau_per_actuator": "{Q}", "max_abs_tau_demand_per_actuator": "{Q}", "min_realizability_margin": "",
}

#: Metric of a constrained run (``robustrack run`` of a kind without compensator) → unit template;
#: ``{accel}`` is the unit of A q̈ − b. A scenario's extras bring their own templates (``Problem.units``).
CONSTRAINED_METRIC_UNITS = {
    "max_constraint_residual": "{residual}", "final_constraint_residual": "{residual}",
    "max_constraint_residual_per_row": "{residual}", "max_error_vs_closed_form": "{q}",
    "max_accel_residual": "{accel}",
}

#: Promised bound → unit template: on ‖e‖∞, on ‖ė‖∞, and the Γ on ‖δq‖∞ it assumes.
BOUND_UNITS = {"e": "{q}", "edot": "{qd}", "gamma": "{qdd}"}

#: Unit of ``uncertainty.dm``: the scenarios perturb masses (the plants' parameters are SI).
MASS_UNIT = "kg"

#: The residual unit written when the constraint does not state one.
UNKNOWN_RESIDUAL = "[constraint]"


_SUPERSCRIPTS = {1: "", 2: "²", 3: "³", 4: "⁴", 5: "⁵"}


def per_time(unit: str, order: int) -> str:
    """``unit`` divided by ``s`` to the power ``order``: the unit of an ``order``-th time derivative.

    Parameters
    ----------
    unit : str
        E.g. ``"m"``, ``"m/s"``, ``"m²/s²"``, ``""`` (dimensionless).
    order : int
        0, 1 or 2 … (the derivative's order).

    Returns
    -------
    str

    Examples
    --------
    >>> per_time("m", 2), per_time("m/s", 1), per_time("m²/s²", 1), per_time("", 2), per_time("N·s", 1)
    ('m/s²', 'm/s²', 'm²/s³', '1/s²', 'N')
    """
    if order == 0:
        return unit
    if unit.endswith("·s"):  # N·s per s is N
        return per_time(unit[:-2], order - 1)
    inverse = {v: k for k, v in _SUPERSCRIPTS.items() if v}
    match = re.fullmatch(r"(.*)/s([²³⁴⁵]?)", unit)
    base, power = (match.group(1), inverse.get(match.group(2), 1)) if match else (unit, 0)
    return f"{base or '1'}/s{_SUPERSCRIPTS[power + order]}"


def residual_info(symbol: str, description: str, rows) -> ResidualInfo:
    """A :class:`ResidualInfo` from the unit and kind of each constraint row.

    Parameters
    ----------
    symbol : str
        φ, ψ, or e.g. ``"(φ₁, φ₂, ψ₁, ψ₂)"``.
    description : str
        What the residual is.
    rows : sequence of (str, int)
        Per row: the unit of its raw value and how often it is differentiated to the
        acceleration form ``A q̈ = b`` — 2 for a holonomic row φ (A q̈ − b = φ̈), 1 for a
        velocity row ψ (ψ̇; a stabilized row ψ̇ + αψ has the same unit).

    Returns
    -------
    ResidualInfo
    """
    rows = tuple(rows)
    units = tuple(u for u, _ in rows)
    return ResidualInfo(symbol, common_unit(units), description, units,
                        common_unit(tuple(per_time(u, o) for u, o in rows)))


def tracking_units(plant, residual_unit: str | None = None) -> dict:
    """The units of a tracking run's numbers.

    Parameters
    ----------
    plant : Plant
        The nominal plant; its ``coordinate_kinds`` give the units.
    residual_unit : str, optional
        Unit of the constraint residual (φ or ψ); None: ``"[constraint]"`` (unknown), or
        no constraint.

    Returns
    -------
    dict
        ``{"q", "qd", "qdd", "Q", "residual"}`` (the ∞-norm units), ``"coordinates"``
        (:meth:`CoordinateUnits.to_dict`), ``"metrics"`` (metric name → unit, every
        name of :data:`TRACKING_METRIC_UNITS`) and ``"bounds"`` (``e``, ``edot``,
        ``gamma`` → unit). ``""`` is dimensionless.

    Examples
    --------
    >>> from robustrack.plants import CoupledDuffing
    >>> u = tracking_units(CoupledDuffing(), "m")
    >>> u["metrics"]["max_abs_edot"], u["metrics"]["effort_Qu"], u["bounds"]["gamma"]
    ('m/s', 'N·s', 'm/s²')
    """
    cu = coordinate_units(plant)
    residual = residual_unit or UNKNOWN_RESIDUAL

    def fill(template: str) -> str:
        return cu.fill(template.replace("{residual}", residual))

    return {"q": cu.q, "qd": cu.qd, "qdd": cu.qdd, "Q": cu.Q, "residual": residual,
            "coordinates": cu.to_dict(),
            "metrics": {k: fill(v) for k, v in TRACKING_METRIC_UNITS.items()},
            "bounds": {k: fill(v) for k, v in BOUND_UNITS.items()}}


def constrained_units(plant, residual: ResidualInfo | None = None, extra: dict | None = None) -> dict:
    """The units of a constrained run's numbers (``robustrack run`` of a kind without compensator).

    Parameters
    ----------
    plant : Plant
        Its ``coordinate_kinds`` give the units of q, q̇, q̈ and Q.
    residual : ResidualInfo, optional
        What the constraint's residual is; None: a constraint without rows (residual and
        A q̈ − b dimensionless, both empty).
    extra : dict, optional
        The scenario's extra metrics → unit templates (``{q}``, ``{qd}``, ``{qdd}``,
        ``{Q}``, ``{residual}``, or a plain unit such as ``"J"``).

    Returns
    -------
    dict
        ``{"q", "qd", "qdd", "Q", "residual", "residual_rows", "accel_residual"}``,
        ``"coordinates"`` (:meth:`CoordinateUnits.to_dict`) and ``"metrics"`` (every
        name of :data:`CONSTRAINED_METRIC_UNITS` and of ``extra`` → unit).

    Examples
    --------
    >>> from robustrack.plants.examples import ChaplyginSleigh
    >>> info = residual_info("ψ", "knife edge", [("m/s", 1)])
    >>> u = constrained_units(ChaplyginSleigh(), info, {"x_end": "m"})
    >>> u["metrics"]["max_constraint_residual"], u["metrics"]["max_accel_residual"], u["metrics"]["x_end"]
    ('m/s', 'm/s²', 'm')
    """
    cu = coordinate_units(plant)
    r = "" if residual is None else residual.unit
    accel = "" if residual is None else (residual.accel if residual.accel is not None else UNKNOWN_RESIDUAL + "/s")

    def fill(template: str) -> str:
        return cu.fill(template.replace("{residual}", r).replace("{accel}", accel))

    return {"q": cu.q, "qd": cu.qd, "qdd": cu.qdd, "Q": cu.Q, "residual": r,
            "residual_rows": [] if residual is None else list(residual.rows), "accel_residual": accel,
            "coordinates": cu.to_dict(),
            "metrics": {k: fill(v) for k, v in {**CONSTRAINED_METRIC_UNITS, **(extra or {})}.items()}}


def scenario_units(scenario) -> dict:
    """The units of a scenario's run (builds it: plant and constraint, no run).

    Parameters
    ----------
    scenario : Scenario
        A tracking scenario (its nominal plant and residual description are used) or a
        constrained simulation (its plant, residual description and extras' units).

    Returns
    -------
    dict
        As :func:`tracking_units`, or :func:`constrained_units` for a constrained simulation.
    """
    from .declared_gamma import without_gamma

    pb = without_gamma(scenario).build()  # the units do not depend on Γ (the Γ study prints them before one is set)
    residual = getattr(pb, "residual", None)
    if not hasattr(pb, "nominal"):  # a constrained simulation
        return constrained_units(pb.plant, residual, getattr(pb, "units", None))
    return tracking_units(pb.nominal, None if residual is None else residual.unit)
