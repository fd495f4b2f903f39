"""One line on a tracking run's promise: did the bounds hold, by how much, and were they guaranteed?

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

from .._format import format_value

__all__ = ["bounds_verdict", "sensor_text"]

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
    """
    units = units or {}
    bounds = bounds or {}
    coverage = bounds.get("coverage")  # a loop through a sensor: what the theory covers (robustrack.loop)
    if coverage and coverage.startswith("no bound"):
        return f"{coverage} (under this sensor model; the run is only measured)"
    if not any(_finite(bounds.get(key)) for key, *_ in _ERRORS):
        return "nothing promised: " + ("no compensator bound to judge" if not bounds else "the compensator promises "
                                       "no bound (a baseline)")
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
    # through a sensor, what the theory covers (never "guaranteed" for a loop it does not cover)
    covered = not coverage or coverage.startswith("guaranteed")
    head = ("bounds NOT held" if not held else "bounds held" if not coverage else "bounds held under this sensor model"
            if covered else f"bounds held, not guaranteed (the sensor is outside what the bound covers — "
            f"{coverage.removeprefix('not guaranteed: ')})")
    assumed = ("" if assumptions is None else " (assumptions NOT held: not guaranteed)" if not assumptions
               else f" (assumptions held: {coverage or 'guaranteed'})" if held and covered else " (assumptions held)")
    return head + ": " + ", ".join(parts) + window + assumed


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
    from .._format import format_value

    parts = []
    for key, label in (("q_noise", "q noise σ"), ("q_resolution", "resolution"), ("qd_noise", "q̇ noise σ")):
        v = sensor.get(key)
        if v and (not isinstance(v, list) or any(v)):
            parts.append(f"{label} {format_value(v) if not isinstance(v, list) else [format_value(x) for x in v]}")
    velocity = sensor.get("velocity", "exact")
    parts.append(f"velocity {velocity}" + (f" ({format_value(sensor.get('velocity_cutoff'), 'Hz')})"
                                            if velocity == "filtered" else ""))
    if sensor.get("delay"):
        parts.append(f"delay {format_value(sensor['delay'], 's')}")
    if sample_period:
        parts.append(f"{format_value(1.0 / sample_period, 'Hz')} loop")
    parts.append(f"seed {sensor.get('seed', 0)}")
    return ", ".join(parts)
