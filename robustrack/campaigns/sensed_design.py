"""Design for the sensor: the control function, ε and velocity filter whose bound under the sensor is the tightest
that a run through the sensor holds (docs/guide/robot.md, "Design for your sensor").

The promised bound of a high-gain design (small ε) is tight only for a loop that measures exactly; through a sensor
the bound widens with the measurement error the gain amplifies (:func:`robustrack.loop.sensed_bounds`), and a
sampled loop whose gain is too high for its period and its filter's lag diverges outright. The search:

0. given a declared uncertainty with a box, its corners' ‖M̃ₐ‖∞ and ‖δq‖∞ along the nominal motion
   (:func:`~robustrack.campaigns.box_verification.box_assumptions`): a Γ below their ‖δq‖∞ is refused; where
   ‖M̃ₐ‖∞ stays below 1, α0 is lowered if the declared 1 − α0/σ does not cover it (leaving :data:`ROOM`); where it
   reaches 1, no candidate can be guaranteed over the box (GSS's bound has one gain for every joint), α0 — then only
   a scale of the gain — is searched too (:data:`OBSERVED_ALPHA0`), and each candidate is verified by observation
   only: its runs must hold the bound they report and stay inside the effort limits;
1. candidates: g ∈ {the design's, tanh, saturation} × ε on a log grid (1e-3 … 1, 7 values) × the
   velocity estimator (a measured velocity stays measured; an estimated one: the backward difference, or the
   filtered difference with cutoffs 0.025, 0.05, 0.1, 0.2 of the sample rate) × GSS's surface gain K at 0.5, 1, 1.5 and
   2 times the design's and β0 at 0.5, 1 and 2 times (a smaller gain keeps the torque inside the effort limits); Γ′, σ
   and the rest kept;
2. each candidate's bound in the sampled loop (theory, no simulation: docs/theory/sensing.md); those without a finite
   bound are dropped. Those the theory *guarantees* for this loop come first; then, among the rest, those whose force
   bound stays inside the effort limits (:func:`~robustrack.loop.bounds.torque_reach`), tightest first; then those
   whose force can reach a limit, the least force (the law's largest output U) first;
3. in that order, each candidate is verified over the declared uncertainty (given ``uncertainty``:
   :mod:`robustrack.campaigns.box_verification` — the corners of the box, then a small Monte Carlo with the sensor's
   seeds varied; each run must hold its bound, with ‖M̃ₐ‖∞ ≤ 1 − α0/σ and ‖δq‖∞ ≤ Γ along it unless step 0 found
   that impossible, and every joint inside its effort limit), else by one run of the problem's actual plant; the first
   candidate that holds on every verified plant is the design, a rejected one is reported with the plant that broke
   it. At most ``max_runs`` candidates.
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
EPSILONS = tuple(float(v) for v in np.geomspace(1e-3, 1.0, 7))


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
        Candidates with a finite bound in the sampled loop.
    gains : dict
        The compensator's gains the search changed (GSS's ``K``, ``beta0``), empty when kept.
    guaranteed : int
        Candidates whose bound the theory guarantees for this loop.
    verified : list of VerifiedPlant
        The plants the design held on (:mod:`robustrack.campaigns.box_verification`; empty: verified on the problem's
        actual plant alone).
    verification_note : str or None
        What the verified set leaves out (corners not run, no box).
    box : BoxAssumptions or None
        ‖M̃ₐ‖∞ and ‖δq‖∞ at the box's corners along the nominal motion
        (:func:`~robustrack.campaigns.box_verification.box_assumptions`; None: no box).
    no_guarantee : str or None
        Why no design can be guaranteed over the box (‖M̃ₐ‖∞ reaches 1 at a corner): the design is then verified by
        observation only. None: the search ranked the guaranteed candidates first.
    """

    f: str
    eps: float
    velocity: str
    velocity_cutoff: float
    bounds: object
    held: bool
    runs: list
    candidates: int
    gains: dict = dataclasses.field(default_factory=dict)
    guaranteed: int = 0
    verified: list = dataclasses.field(default_factory=list)
    verification_note: str | None = None
    box: object = None
    no_guarantee: str | None = None

    def overrides(self, section: str = "gss") -> list[str]:
        """The ``--set`` items (and TOML keys) that make a scenario this design; the gains under
        ``compensator.<section>`` (the scenario's ``compensator.type``)."""
        return ([f'compensator.f="{self.f}"', f"compensator.eps={self.eps!r}", f'sensor.velocity="{self.velocity}"',
                 f"sensor.velocity_cutoff={self.velocity_cutoff!r}"]
                + [f"compensator.{section}.{k}={v!r}" for k, v in self.gains.items()])

    def to_dict(self) -> dict:
        return {"f": self.f, "eps": self.eps, "velocity": self.velocity, "velocity_cutoff": self.velocity_cutoff,
                "gains": self.gains, "bounds": self.bounds.to_dict(), "held": self.held, "runs": self.runs,
                "candidates": self.candidates, "guaranteed": self.guaranteed, "overrides": self.overrides(),
                "verified": [p.to_dict() for p in self.verified], "verification_note": self.verification_note,
                "box": None if self.box is None else self.box.to_dict(), "no_guarantee": self.no_guarantee}


def _candidates(problem, observed: bool = False):
    """(compensator, sensor, settings) of every candidate (module docstring, step 1); ``observed``: no candidate can
    be guaranteed over the box, and α0 is searched too (:data:`OBSERVED_ALPHA0`)."""
    from ..controllers import control_function

    comp, sensor, h = problem.compensator, problem.sensor, problem.sample_period
    f = comp.f
    shape = {"alpha_c": getattr(f, "alpha_c", None)} if getattr(f, "alpha_c", None) is not None else {}
    names = list(dict.fromkeys([f.name, "tanh", "saturation"]))
    if sensor.velocity == "exact":
        velocities = [("exact", 0.0)]
    else:
        velocities = [("difference", 0.0)] + [("filtered", c / h) for c in CUTOFFS]
    for name in names:
        for eps in EPSILONS:
            try:
                g = control_function(name, eps=eps, **({} if name in ("tanh", "saturation") else shape))
            except (ParameterError, TypeError, ValueError):
                continue
            for gains in _gain_steps(comp, observed):
                try:
                    c = dataclasses.replace(comp, f=g, **gains)
                except (ParameterError, TypeError, ValueError):
                    continue
                for velocity, cutoff in velocities:
                    s = dataclasses.replace(sensor, velocity=velocity, velocity_cutoff=cutoff)
                    yield c, s, {"f": name, "eps": eps, "velocity": velocity, "velocity_cutoff": cutoff,
                                 "gains": gains}


#: GSS's surface gain K and β0 tried, as multiples of the design's.
GAIN_STEPS = ((0.5, 1.0, 1.5, 2.0), (0.5, 1.0, 2.0))


#: α0 tried besides the design's where no candidate can be guaranteed over the box: it then only scales the gain
#: β = (Γ′ + β0)/α0, and a larger α0 is a smaller gain, inside tighter effort limits.
OBSERVED_ALPHA0 = (0.75, 0.9)


def _gain_steps(comp, observed: bool = False):
    """The gains tried: K and β0 at :data:`GAIN_STEPS` × the design's for GSS (and its presets), and with ``observed``
    α0 at :data:`OBSERVED_ALPHA0` too; else the design's."""
    from ..controllers import GSS

    if not isinstance(comp, GSS):
        return [{}]
    K = np.asarray(comp.K, dtype=float)
    alphas = [None] + ([a for a in OBSERVED_ALPHA0 if a > comp.alpha0] if observed else [])
    out = []
    for a in GAIN_STEPS[0]:
        for b in GAIN_STEPS[1]:
            for alpha0 in alphas:
                step = {}
                if a != 1.0:
                    step["K"] = float(a * K) if K.ndim == 0 else tuple(float(v) for v in a * K)
                if b != 1.0:
                    step["beta0"] = float(b * comp.beta0)
                if alpha0 is not None:
                    step["alpha0"] = float(alpha0)
                out.append(step)
    return out


def design_for_sensor(problem, *, max_runs: int = 12, progress=None, uncertainty=None, corners: int | None = None,
                      samples: int | None = None) -> SensedDesign:
    """The design whose bound under the problem's sensor is the tightest that holds on every verified plant.

    Parameters
    ----------
    problem : TrackingProblem
        With a compensator that has a control function, a ``sample_period`` and a ``sensor``.
    max_runs : int
        Candidates verified at most (keyword-only).
    progress : callable, optional
        ``progress(text)`` after each candidate.
    uncertainty : ParameterUncertainty, optional
        The declared uncertainty each candidate is verified over (module docstring, step 3); None: one run of the
        problem's actual plant.
    corners, samples : int, optional
        Corners of the box and Monte Carlo plants of that verification (default
        :data:`~robustrack.campaigns.box_verification.DEFAULT_CORNERS`, ``DEFAULT_SAMPLES``).

    Returns
    -------
    SensedDesign

    Raises
    ------
    ParameterError
        No sensor, no sample period, a compensator without a control function, no candidate with a bound, or
        none held within ``max_runs`` (the message names the plant that broke each candidate tried).
    """
    from ..loop import sensed_bounds
    from .box_verification import (DEFAULT_CORNERS, DEFAULT_SAMPLES, box_assumptions, values_text,
                                   verification_plants, verify_design)

    if problem.sensor is None or problem.sample_period is None:
        raise ParameterError("design for the sensor: the problem needs a `sensor` and a `sample_period` (a [sensor] "
                             "table and compensator.sample_period in a scenario).")
    if getattr(problem.compensator, "f", None) is None:
        raise ParameterError("design for the sensor: the compensator has no control function to tune.")
    corners = DEFAULT_CORNERS if corners is None else corners
    samples = DEFAULT_SAMPLES if samples is None else samples
    if uncertainty is not None:  # bad sizes, or a set the plant does not have, refused before the search
        verification_plants(uncertainty, problem.nominal, corners=corners, samples=samples)
    run = problem.nominal_run()
    box = None if uncertainty is None else box_assumptions(problem, uncertainty, run, corners=corners)
    problem, chosen, guarantee = _fit_alpha0(problem, box)
    say = progress or (lambda text: None)
    if box is not None:
        say(f"the box's {box.corners} corners along the nominal motion: max ‖M̃ₐ‖∞ {box.mtilde:.4g} "
            f"({values_text(box.mtilde_at)}), max ‖δq‖∞ {box.dq:.4g} ({values_text(box.dq_at)})"
            + (f"; α0 set to {chosen['alpha0']:.4g}" if "alpha0" in chosen else "")
            + (f"; not guaranteed over the box: {guarantee}" if guarantee else ""))
    scored = []
    for comp, sensor, settings in _candidates(problem, observed=guarantee is not None):
        pb = problem.replace(compensator=comp, sensor=sensor, uncompensated=False)
        b = sensed_bounds(pb, run)
        key = "e" if math.isfinite(b.e) else "edot"
        if not math.isfinite(getattr(b, key)) or b.coverage.startswith("no bound"):
            continue
        settings = {**settings, "gains": {**chosen, **settings["gains"]}}
        saturates = "the torque can reach" in b.coverage
        if guarantee is not None:  # no candidate's bound is a theorem over the box
            b = dataclasses.replace(b, coverage=f"not guaranteed over the declared box: {guarantee}")
        # the candidates whose force can reach a limit last, the least force first among them: what a run measures
        # of its torque decides, and the smaller the law's force the likelier it stays inside the limits
        rank = float(b.terms.get("force", math.inf)) if saturates else getattr(b, key)
        scored.append((not b.coverage.startswith("guaranteed"), saturates, rank, getattr(b, key), settings, pb, b))
    if not scored:
        raise ParameterError("design for the sensor: no candidate has a bound in this sampled loop (the hold, the "
                             "delay or the measurement error is more than every ε up to 1 and gain up to 2× "
                             "dominates; docs/theory/sensing.md).")
    scored.sort(key=lambda item: item[:3])
    guaranteed = sum(1 for item in scored if not item[0])
    tried = []
    for *_, bound, settings, pb, b in scored[:max_runs]:
        plants, note = ([], None) if uncertainty is None else verify_design(
            pb, uncertainty, corners=corners, samples=samples, assumptions=guarantee is None)
        if uncertainty is None:
            r = pb.simulate(raise_on_failure=False)
            held, why = bool(r.success and r.metrics.bounds_held), None
            outcome = {"success": bool(r.success), "max_abs_e": r.metrics.max_abs_e_after_transient
                       if r.success else None}
            verdict = "held" if held else "failed" if not r.success else "not held"
        else:
            broke = plants[-1] if plants and plants[-1].broke is not None else None
            held = bool(plants) and broke is None
            why = None if broke is None else f"{broke.plant_text()}: {broke.broke}"
            outcome = {"success": all(p.record.success for p in plants), "plants": len(plants),
                       "broken_by": None if broke is None else broke.to_dict(),
                       "max_abs_e": max((p.record.max_abs_e for p in plants if p.record.max_abs_e is not None),
                                        default=None)}
            verdict = f"held on {len(plants)} plants" if held else f"rejected: {why}"
        tried.append({**settings, "bound": bound, "coverage": b.coverage, "held": held, "rejected_because": why,
                      **outcome})
        say(f"g = {settings['f']}, ε = {settings['eps']:.3g}, velocity {settings['velocity']}"
            + (f" {settings['velocity_cutoff']:g} Hz" if settings["velocity"] == "filtered" else "")
            + f": bound {bound:.3g} — {verdict}")
        if held:
            return SensedDesign(settings["f"], settings["eps"], settings["velocity"], settings["velocity_cutoff"], b,
                                True, tried, len(scored), settings["gains"], guaranteed, plants, note, box, guarantee)
    over = "" if uncertainty is None else " on every verified plant (corners of the declared box, a small Monte Carlo)"
    raise ParameterError(f"design for the sensor: none of the {len(tried)} tightest candidates held its bound through "
                         f"the sensor{over} (of {len(scored)} with a bound); a larger max_runs tries more."
                         + _rejections(tried))


#: The share of the room 1 − max ‖M̃ₐ‖∞ (over the box's corners, along the nominal motion) that α0 leaves for the
#: controlled motion's departure from the nominal one: μ = max ‖M̃ₐ‖∞ + ROOM (1 − max ‖M̃ₐ‖∞).
ROOM = 0.25


def _fit_alpha0(problem, box):
    """(problem, gains, no_guarantee): α0 lowered where the box's ‖M̃ₐ‖∞ needs it (module docstring, step 0).

    GSS's bound assumes ‖M̃ₐ‖∞ ≤ μ = 1 − α0/σ along the run. Where the corners reach m < 1 along the nominal
    motion and the declared μ is below m, α0 = σ (1 − ROOM) (1 − m), i.e. μ = m + :data:`ROOM` (1 − m) (the gain
    σβ grows as α0 falls); a declared μ ≥ m is kept, the verification's runs checking it along their own motion.
    Where a corner reaches 1 no α0 helps: the reason is returned and every candidate is verified by observation
    only. Γ below the corners' ‖δq‖∞ is refused here, naming the keys, before any candidate runs.
    """
    from .box_verification import values_text

    comp = problem.compensator
    if box is None or not hasattr(comp, "alpha0"):
        return problem, {}, None
    at = {"mtilde": values_text(box.mtilde_at), "dq": values_text(box.dq_at)}
    if not box.mtilde < 1.0:
        return problem, {}, (f"‖M̃ₐ‖∞ reaches {box.mtilde:.3g} at {at['mtilde']} along the nominal motion, and "
                             "GSS's bound needs it below 1 with one gain σβ for every joint (docs/theory/sensing.md)")
    gamma = problem.gamma if problem.gamma is not None else getattr(comp, "gamma_prime", None)
    if gamma is not None and not box.dq <= float(gamma):
        raise ParameterError(
            f"design for the sensor: the declared Γ = {float(gamma):.4g} is below max ‖δq‖∞ = {box.dq:.4g} at "
            f"{at['dq']} along the nominal motion: no design's bound can hold there. Declare a Γ that covers the "
            "range (`uncertainty.gamma` and the compensator's Γ′; `robustrack gamma NAME` estimates it over the "
            "declared set).")
    if 1.0 - comp.alpha0 / comp.sigma >= box.mtilde:  # the declared μ covers the corners: kept (the runs check it)
        return problem, {}, None
    alpha0 = float(comp.sigma * (1.0 - ROOM) * (1.0 - box.mtilde))
    return problem.replace(compensator=dataclasses.replace(comp, alpha0=alpha0)), {"alpha0": alpha0}, None


def _rejections(tried) -> str:
    """The plants that broke the candidates tried, each once with how many it broke and the first reason; and, when
    one broke a bound's assumption, what the search cannot change (Γ and σ are kept, α0 set by step 0) and what to
    do."""
    by_plant = {}
    for t in tried:
        if t.get("broken_by"):
            plant, why = t["rejected_because"].split(": ", 1)
            by_plant.setdefault(plant, []).append(why)
    if not by_plant:
        return ""
    text = " Broken by: " + "; ".join(f"{plant} ({len(whys)} of them; first: {whys[0]})"
                                       for plant, whys in by_plant.items())
    if any("assumption" in why for whys in by_plant.values() for why in whys):
        text += (". The search keeps Γ and σ, and sets α0 from the box's corners along the nominal motion, so a "
                 "candidate cannot mend an assumption the controlled motion breaks: declare a Γ that covers "
                 "the range (`uncertainty.gamma` and `compensator.gss.gamma_prime`; `robustrack gamma NAME` estimates "
                 "it over the declared set), lower `compensator.gss.alpha0` so that 1 − α0/σ exceeds the largest "
                 "‖M̃ₐ‖∞ (GSS has no bound once it reaches 1), or narrow the declared range.")
    return text
