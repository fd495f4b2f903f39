"""Margins of a design against its loop: the largest position noise, encoder resolution, delay and sample period.

The constrained-nonlinear analogue of gain and phase margins (docs/guide/robot.md). Each sweep starts from the
scenario's own sensor and rate and changes one field (the others as declared); every figure is judged against one
yardstick B, twice the bound of the loop as declared where the theory guarantees one (else twice the design's
exact-measurement bound), and says how it was found:

- **theory** — from the sampled loop's bound (:func:`~robustrack.loop.sensed_bounds`, docs/theory/sensing.md): the
  largest value at which the loop is guaranteed a bound ≤ B. It is a theorem, so it is at most the simulated figure
  whenever the run's Γ and μ hold;
- **simulation** — by bisection on runs of the sampled loop: the largest value at which the run reaches the end with
  its error inside B (after the transient). The value between the last tolerated and the first refused run is
  bracketed to a factor of ``1.25`` (noise, period), one bit of an encoder, or one sample of delay.

Each :class:`Margin` also says the declared value and whether it passes, and flags a theory figure below it.
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
    declared : float or None
        The scenario's own value of the field.
    passes : bool or None
        Whether the declared value is tolerated (theory: guaranteed a bound ≤ B; simulation: the run stayed inside B).
    """

    what: str
    how: str
    value: float | None
    refused: float | None
    unit: str
    note: str
    runs: int = 0
    declared: float | None = None
    passes: bool | None = None

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


def _yardstick(problem, run):
    """(key, bound, said) every margin is judged against: twice the declared loop's guaranteed bound where there is one,
    else twice the design's exact-measurement bound; on ‖e‖∞ where finite, else on ‖ė‖∞."""
    from .bounds import sensed_bounds

    exact = problem.compensator.bounds(problem.gamma)
    key = "e" if math.isfinite(exact.e) else "edot"
    declared = sensed_bounds(problem, run)
    if declared.coverage.startswith("guaranteed") and math.isfinite(getattr(declared, key)):
        return key, 2.0 * getattr(declared, key), "twice the declared loop's guaranteed bound"
    return key, 2.0 * getattr(exact, key), "twice the design's exact-measurement bound (the declared loop has none)"


def tolerates(problem, sensor, bound=None) -> bool:
    """Whether the sampled loop through ``sensor`` reaches the end with its error inside ``bound`` after the
    transient (one simulation, the uncompensated copy left out).

    Parameters
    ----------
    problem : TrackingProblem
        With a compensator and a ``sample_period`` (the sensor's delay a whole number of its periods).
    sensor : Sensor
    bound : float, optional
        Default: the yardstick of the module docstring.

    Returns
    -------
    bool
    """
    if bound is None:
        key, bound, _ = _yardstick(problem, problem.nominal_run())
    else:
        key = "e" if math.isfinite(problem.compensator.bounds(problem.gamma).e) else "edot"
    r = problem.replace(sensor=sensor, uncompensated=False).simulate(raise_on_failure=False)
    if not r.success:
        return False
    m = r.metrics
    seen = m.max_abs_e_after_transient if key == "e" else m.max_abs_edot_after_transient
    return seen is not None and math.isfinite(seen) and seen <= bound


def _guaranteed(problem, run, key, bound) -> bool:
    from .bounds import sensed_bounds

    b = sensed_bounds(problem, run)
    return b.coverage.startswith("guaranteed") and getattr(b, key) <= bound


def _theory(what, grid, make, run, key, bound, unit, declared) -> Margin:
    """The largest value of ``grid`` (increasing) at which ``make(v)`` (a problem) is guaranteed a bound ≤ ``bound``."""
    best = None
    for v in grid:
        if not _guaranteed(make(v), run, key, bound):
            break
        best = v
    passes = _guaranteed(make(declared), run, key, bound)
    note = "largest value at which the loop is guaranteed a bound ≤ B (docs/theory/sensing.md)"
    if best is not None and declared is not None and best < declared:
        note += f" — BELOW the declared {declared:.3g} {unit}"
    return Margin(what, "theory", best, None, unit, note, 0, declared, passes)


def margins(problem, *, base=None, progress=None) -> list[Margin]:
    """The design's margins against position noise, encoder resolution, delay and sample period (module docstring).

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
        q_noise, q_resolution, delay, sample_period: theory, then simulation.
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
    problem = problem.replace(sensor=base)
    run = problem.replace(sensor=None).nominal_run()
    key, bound, said = _yardstick(problem, run)
    say = progress or (lambda text: None)
    D = base.delay_samples(h)
    out = []

    def field(name, v):
        return problem.replace(sensor=dataclasses.replace(base, **{name: v}))

    def sweep(what, grid, make, unit, declared, ratio=None, whole=None):
        out.append(_theory(what, grid, make, run, key, bound, unit, declared))
        sim = _bisect(what, grid, make, say, unit, key, bound, ratio=ratio, whole=whole)
        out.append(dataclasses.replace(sim, declared=declared,
                                       passes=tolerates(make(declared), make(declared).sensor, bound)
                                       if declared not in (sim.value, sim.refused) else declared == sim.value))

    sq = float(np.max(base.q_noise))
    noise = sorted({sq, *(sq * 2.0 ** k for k in range(1, 12))} if sq > 0 else {10.0 ** k for k in range(-10, 0)})
    sweep("q_noise", noise, lambda v: field("q_noise", v), "rad", sq, ratio=NOISE_RATIO)
    res = float(np.max(base.q_resolution))
    bits = range(24, 7, -1) if res == 0 else range(round(math.log2(2 * math.pi / res)), 7, -1)
    sweep("q_resolution", [2 * math.pi / 2.0 ** b for b in bits], lambda v: field("q_resolution", v), "rad", res)
    span = float(problem.t_span[1]) - float(problem.t_span[0])  # a delay or period the run can show: shorter than it
    sweep("delay", [k * h for k in sorted({D, *(2 ** j for j in range(11))} - {0}) if k >= D and k * h < span] or [h],
          lambda v: field("delay", v), "s", D * h, whole=h)

    def period(v):  # the delay kept in samples, as a fixed-rate loop keeps it
        return problem.replace(sample_period=v, sensor=dataclasses.replace(base, delay=D * v))

    sweep("sample_period", [h * 1.25 ** k for k in range(0, 25) if h * 1.25 ** k < span / 2], period, "s", h,
          ratio=NOISE_RATIO)
    return [dataclasses.replace(m, note=f"{m.note}; B = {bound:.3g} on ‖{'e' if key == 'e' else 'ė'}‖∞, {said}")
            for m in out]


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


def _bisect(what, grid, make, say, unit, key, bound, ratio=None, whole=None) -> Margin:
    """The simulated margin: the grid walked up until a run is refused, then the bracket narrowed."""

    def tolerated(v):
        pb = make(v)
        return tolerates(pb, pb.sensor, bound)

    runs = 0
    lo = hi = None
    for v in grid:
        runs += 1
        ok = tolerated(v)
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
                if ratio is None and what == "q_resolution":  # an encoder: a whole number of bits
                    bits = round(math.log2(2 * math.pi / mid))
                    mid = 2 * math.pi / 2.0 ** bits
                    if mid in (lo, hi):
                        break
            runs += 1
            ok = tolerated(mid)
            say(f"{what} = {mid:.3g}: {'tolerated' if ok else 'refused'}")
            lo, hi = (mid, hi) if ok else (lo, mid)
    note = ("the loop reaches the end with its error inside B"
            + ("" if hi is not None else f" at every value tried (up to {grid[-1]:.3g})")
            + ("" if lo is not None else f"; refused already at {grid[0]:.3g}"))
    return Margin(what, "simulation", lo, hi, unit, note, runs)
