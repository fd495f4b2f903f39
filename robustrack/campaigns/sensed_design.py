"""Design for the sensor: the control function, ε and velocity filter whose bound under the sensor is the tightest
that a run through the sensor holds (docs/guide/robot.md, "Design for your sensor").

The promised bound of a high-gain design (small ε) is tight only for a loop that measures exactly; through a sensor
the bound widens with the measurement error the gain amplifies (:func:`robustrack.loop.sensed_bounds`), and a
sampled loop whose gain is too high for its period and its filter's lag diverges outright. The search:

1. candidates: g ∈ {the design's, tanh, signed quadratic} × ε on a log grid (1e-3 … 1, 16 values) × the velocity
   estimator (a measured velocity stays measured; an estimated one: the backward difference, or the filtered
   difference with cutoffs 0.025, 0.05, 0.1, 0.2 of the sample rate); the gains, Γ′ and the rest of the design
   kept;
2. each candidate's bound under the sensor (theory, no simulation); those without a finite bound are dropped, and
   so are those whose gain at the edge of their box, κ = |∂u/∂ė| (:func:`~robustrack.campaigns.tuning.control_effort`),
   makes κ (h + 1/(2π f_c)) > 1 — a heuristic of the sampled loop (the hold and the filter's lag act as a delay; a
   first-order loop under a delay d is stable for κ d < π/2), which orders the work, never the verdict;
3. in order of the bound, tightest first, a run of the sampled loop through the sensor; the first that reaches the
   end with its error inside its own bound under the sensor is the design. At most ``max_runs`` runs.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from ..errors import ParameterError

__all__ = ["SensedDesign", "design_for_sensor"]

#: The filtered estimator's cutoffs tried, as fractions of the sample rate 1/h.
CUTOFFS = (0.025, 0.05, 0.1, 0.2)
#: ε tried (log grid).
EPSILONS = tuple(float(v) for v in np.geomspace(1e-3, 1.0, 16))


@dataclass(frozen=True)
class SensedDesign:
    """The design :func:`design_for_sensor` chose, and how.

    Attributes
    ----------
    f : str
        The control function g.
    eps : float
    velocity : str
    velocity_cutoff : float
        Hz (0 unless filtered).
    bounds : PromisedBounds
        Its bound under the sensor (``coverage`` says what it covers).
    held : bool
        Whether the run through the sensor held it.
    runs : list of dict
        The candidates run, in order: their settings, bound, and outcome.
    candidates : int
        Candidates with a finite bound under the sensor that passed the gain heuristic.
    """

    f: str
    eps: float
    velocity: str
    velocity_cutoff: float
    bounds: object
    held: bool
    runs: list
    candidates: int

    def overrides(self) -> list[str]:
        """The ``--set`` items (and TOML keys) that make a scenario this design."""
        return [f'compensator.f="{self.f}"', f"compensator.eps={self.eps!r}", f'sensor.velocity="{self.velocity}"',
                f"sensor.velocity_cutoff={self.velocity_cutoff!r}"]

    def to_dict(self) -> dict:
        return {"f": self.f, "eps": self.eps, "velocity": self.velocity, "velocity_cutoff": self.velocity_cutoff,
                "bounds": self.bounds.to_dict(), "held": self.held, "runs": self.runs, "candidates": self.candidates,
                "overrides": self.overrides()}


def _candidates(problem):
    """(compensator, sensor, settings) of every candidate (module docstring, step 1)."""
    from ..controllers import control_function

    comp, sensor, h = problem.compensator, problem.sensor, problem.sample_period
    f = comp.f
    shape = {"alpha_c": getattr(f, "alpha_c", None)} if getattr(f, "alpha_c", None) is not None else {}
    names = list(dict.fromkeys([f.name, "tanh", "signed-quadratic"]))
    if sensor.velocity == "exact":
        velocities = [("exact", 0.0)]
    else:
        velocities = [("difference", 0.0)] + [("filtered", c / h) for c in CUTOFFS]
    for name in names:
        for eps in EPSILONS:
            try:
                g = control_function(name, eps=eps, **({} if name == "tanh" else shape))
                c = dataclasses.replace(comp, f=g)
            except (ParameterError, TypeError, ValueError):
                continue
            for velocity, cutoff in velocities:
                s = dataclasses.replace(sensor, velocity=velocity, velocity_cutoff=cutoff)
                yield c, s, {"f": name, "eps": eps, "velocity": velocity, "velocity_cutoff": cutoff}


def design_for_sensor(problem, *, max_runs: int = 12, progress=None) -> SensedDesign:
    """The design whose bound under the problem's sensor is the tightest a run through the sensor holds.

    Parameters
    ----------
    problem : TrackingProblem
        With a compensator that has a control function, a ``sample_period`` and a ``sensor``.
    max_runs : int
        Simulations at most (keyword-only).
    progress : callable, optional
        ``progress(text)`` after each run.

    Returns
    -------
    SensedDesign

    Raises
    ------
    ParameterError
        No sensor, no sample period, a compensator without a control function, no candidate with a bound, or
        none held within ``max_runs``.
    """
    from ..loop import sensed_bounds
    from .tuning import control_effort

    if problem.sensor is None or problem.sample_period is None:
        raise ParameterError("design for the sensor: the problem needs a `sensor` and a `sample_period` (a [sensor] "
                             "table and compensator.sample_period in a scenario).")
    if getattr(problem.compensator, "f", None) is None:
        raise ParameterError("design for the sensor: the compensator has no control function to tune.")
    run = problem.nominal_run()
    h = problem.sample_period
    scored = []
    for comp, sensor, settings in _candidates(problem):
        pb = problem.replace(compensator=comp, sensor=sensor, uncompensated=False)
        b = sensed_bounds(pb, run)
        key = "e" if math.isfinite(b.e) else "edot"
        if not math.isfinite(getattr(b, key)) or b.coverage.startswith("no bound"):
            continue
        kappa = control_effort(comp, problem.gamma)
        lag = h + (1.0 / (2 * math.pi * sensor.velocity_cutoff) if sensor.velocity == "filtered" else 0.0)
        if not kappa * lag <= 1.0:
            continue
        scored.append((getattr(b, key), settings, pb, b))
    if not scored:
        raise ParameterError("design for the sensor: no candidate has a bound under this sensor with a gain its loop "
                             "can hold (the measurement error is too large for every ε up to 1).")
    scored.sort(key=lambda item: item[0])
    say = progress or (lambda text: None)
    tried = []
    for bound, settings, pb, b in scored[:max_runs]:
        r = pb.simulate(raise_on_failure=False)
        held = bool(r.success and r.metrics.bounds_held)
        tried.append({**settings, "bound": bound, "success": bool(r.success), "held": held,
                      "max_abs_e": r.metrics.max_abs_e_after_transient if r.success else None})
        say(f"g = {settings['f']}, ε = {settings['eps']:.3g}, velocity {settings['velocity']}"
            + (f" {settings['velocity_cutoff']:g} Hz" if settings["velocity"] == "filtered" else "")
            + f": bound {bound:.3g} — {'held' if held else 'failed' if not r.success else 'not held'}")
        if held:
            return SensedDesign(settings["f"], settings["eps"], settings["velocity"], settings["velocity_cutoff"], b,
                                True, tried, len(scored))
    raise ParameterError(f"design for the sensor: none of the {len(tried)} tightest candidates held its bound through "
                         f"the sensor (of {len(scored)} with a bound); a larger max_runs tries more.")
