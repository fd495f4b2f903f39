"""Margins of a design against its sensor: the largest position noise, encoder resolution and delay it tolerates.

The constrained-nonlinear analogue of gain and phase margins (docs/guide/robot.md). Each figure says how it was
found:

- **theory** — from the bound under measurement error (:func:`~robustrack.loop.sensed_bounds`): the largest value
  at which the promised ‖e‖∞ bound (‖ė‖∞ for a compensator without an e bound) is at most twice the design's
  exact-measurement bound, i.e. where the sensor has cost no more than the design's own tolerance. None where the
  theory covers nothing (a delay) or gives no bound.
- **simulation** — by bisection on runs of the sampled loop through the sensor: the largest value at which the run
  reaches the end with its error inside the design's exact-measurement bound (after the transient). The value
  between the last tolerated and the first refused run is bracketed to a factor of ``1.25`` (noise), one bit of an
  encoder, or one sample of delay.

Each sweep changes one field of the base sensor (the problem's, else a backward-difference velocity with nothing
else) and keeps the others.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from ..errors import ParameterError

__all__ = ["Margin", "margins", "tolerates"]

#: How finely the simulated noise margin is bracketed (ratio of the refused to the tolerated σ).
NOISE_RATIO = 1.25


@dataclass(frozen=True)
class Margin:
    """One margin of a design (:func:`margins`).

    Attributes
    ----------
    what : str
        ``"q_noise"``, ``"q_resolution"`` or ``"delay"``.
    how : str
        ``"theory"`` or ``"simulation"``.
    value : float or None
        The largest value tolerated (None: none found, or the theory gives none).
    refused : float or None
        The smallest value seen refused (simulation; None: none refused in the range).
    unit : str
    note : str
        The criterion, or why there is no figure.
    runs : int
        Simulations spent.
    """

    what: str
    how: str
    value: float | None
    refused: float | None
    unit: str
    note: str
    runs: int = 0

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


def _yardstick(problem):
    """(key, bound) the margins are judged against: the design's exact-measurement bound on ‖e‖∞, else on ‖ė‖∞."""
    b = problem.compensator.bounds(problem.gamma)
    return ("e", b.e) if math.isfinite(b.e) else ("edot", b.edot)


def tolerates(problem, sensor) -> bool:
    """Whether the sampled loop through ``sensor`` reaches the end with its error inside the design's
    exact-measurement bound after the transient (one simulation, the uncompensated copy left out).

    Parameters
    ----------
    problem : TrackingProblem
        With a compensator and a ``sample_period``.
    sensor : Sensor

    Returns
    -------
    bool
    """
    key, bound = _yardstick(problem)
    r = problem.replace(sensor=sensor, uncompensated=False).simulate(raise_on_failure=False)
    if not r.success:
        return False
    m = r.metrics
    seen = m.max_abs_e_after_transient if key == "e" else m.max_abs_edot_after_transient
    return seen is not None and math.isfinite(seen) and seen <= bound


def _theory(problem, run, make, grid) -> float | None:
    """The largest value of ``grid`` (increasing) whose widened bound is at most twice the design's."""
    from .bounds import sensed_bounds

    key, bound = _yardstick(problem)
    best = None
    for v in grid:
        b = sensed_bounds(problem.replace(sensor=make(v)), run)
        if not getattr(b, key) <= 2.0 * bound:
            break
        best = v
    return best


def margins(problem, *, base=None, progress=None) -> list[Margin]:
    """The design's margins against position noise, encoder resolution and delay (module docstring).

    Parameters
    ----------
    problem : TrackingProblem
        With a compensator; its ``sample_period`` is the loop's (required).
    base : Sensor, optional
        The sensor each sweep changes one field of (default: the problem's, else a backward-difference velocity).
    progress : callable, optional
        ``progress(text)`` after each simulation.

    Returns
    -------
    list of Margin
        q_noise (theory, simulation), q_resolution (theory, simulation), delay (theory, simulation).
    """
    from .sensor import Sensor

    if not getattr(problem, "is_tracking_problem", False):
        hint = (f" (a scenario's name: load_scenario({problem!r}).build(), or `robustrack margins {problem}` on the "
                "command line)" if isinstance(problem, str) else "")
        raise ParameterError(f"margins: `problem` must be a robustrack.tracking.TrackingProblem{hint}; got "
                             f"{type(problem).__name__}.")
    if problem.compensator is None:
        raise ParameterError("margins: the problem has no compensator (nothing is designed).")
    h = problem.sample_period
    if h is None:
        raise ParameterError("margins: the loop needs a `sample_period` (compensator.sample_period), the rate at which "
                             "the sensor measures (e.g. 1e-3 s).")
    base = base or problem.sensor or Sensor(velocity="difference")
    _check_within_run(problem, h, base)
    run = problem.replace(sensor=None).nominal_run()
    say = progress or (lambda text: None)
    unit = "rad"
    out = []

    def swept(what, make):
        return lambda v: dataclasses.replace(base, **make(v))

    # position noise σ: decades from 1e-10 up, then a bisection on the log scale
    noise = swept("q_noise", lambda v: {"q_noise": v})
    decades = [10.0 ** k for k in range(-10, 0)]
    out.append(Margin("q_noise", "theory", _theory(problem, run, noise, decades), None, unit,
                      "largest σ (by decades) at which the bound under the sensor is ≤ 2× the design's"))
    out.append(_bisect("q_noise", decades, noise, problem, say, unit, ratio=NOISE_RATIO))
    # encoder resolution 2π / 2^bits, bits from 24 down to 8
    enc = swept("q_resolution", lambda v: {"q_resolution": v})
    steps = [2 * math.pi / 2.0 ** bits for bits in range(24, 7, -1)]
    out.append(Margin("q_resolution", "theory", _theory(problem, run, enc, steps), None, unit,
                      "largest resolution 2π/2^bits at which the bound under the sensor is ≤ 2× the design's"))
    out.append(_bisect("q_resolution", steps, enc, problem, say, unit))
    # delay: whole samples
    late = swept("delay", lambda v: {"delay": v})
    out.append(Margin("delay", "theory", None, None, "s", "the theory covers no delay (docs/theory/sensing.md)"))
    span = float(problem.t_span[1]) - float(problem.t_span[0])
    delays = [k * h for k in (1, 2, 4, 8, 16, 32) if k * h < span]  # a delay the run can show: shorter than it
    out.append(_bisect("delay", delays, late, problem, say, "s", whole=h))
    return out


def _check_within_run(problem, h: float, base) -> None:
    """A sample period and a delay the run can show: each shorter than the run (a loop sampled once, or a
    measurement that never arrives, tolerates anything and says nothing)."""
    span = float(problem.t_span[1]) - float(problem.t_span[0])
    if not h < span:
        raise ParameterError(f"margins: the sample period {h:g} s (compensator.sample_period, or --sample-period) is "
                             f"not shorter than the run ({span:g} s): the loop would measure once; take a period well "
                             "below the run's length, or a longer simulation.t_end.")
    if not base.delay < span:
        raise ParameterError(f"margins: the sensor's delay {base.delay:g} s (sensor.delay) is not shorter than the run "
                             f"({span:g} s): no measurement would arrive; take a delay of a few samples.")


def _bisect(what, grid, make, problem, say, unit, ratio=None, whole=None) -> Margin:
    """The simulated margin: the grid walked up until a run is refused, then the bracket narrowed."""
    runs = 0
    lo = hi = None
    for v in grid:
        runs += 1
        ok = tolerates(problem, make(v))
        say(f"{what} = {v:.3g}: {'tolerated' if ok else 'refused'}")
        if not ok:
            hi = v
            break
        lo = v
    if hi is not None and lo is not None:
        while True:
            if whole is not None:
                a, b = round(lo / whole), round(hi / whole)
                if b - a <= 1:
                    break
                mid = (a + b) // 2 * whole
            else:
                if hi / lo <= (ratio or 2.0 ** 0.5):
                    break
                mid = math.sqrt(lo * hi)
                if ratio is None:  # an encoder: a whole number of bits
                    bits = round(math.log2(2 * math.pi / mid))
                    mid = 2 * math.pi / 2.0 ** bits
                    if mid in (lo, hi):
                        break
            runs += 1
            ok = tolerates(problem, make(mid))
            say(f"{what} = {mid:.3g}: {'tolerated' if ok else 'refused'}")
            lo, hi = (mid, hi) if ok else (lo, mid)
    note = ("the loop reaches the end with its error inside the design's exact-measurement bound"
            + ("" if hi is not None else f" at every value tried (up to {grid[-1]:.3g})")
            + ("" if lo is not None else f"; refused already at {grid[0]:.3g}"))
    return Margin(what, "simulation", lo, hi, unit, note, runs)
