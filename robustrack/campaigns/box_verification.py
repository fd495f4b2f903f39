"""A design verified over the declared uncertainty, not one plant (docs/guide/robot.md, "Design for your sensor").

``tune`` accepts a design only when it holds on every plant of a small, deterministic set drawn from the scenario's
declared uncertainty (the :class:`~robustrack.campaigns.ParameterUncertainty` a ``montecarlo`` draws):

1. the corners of the box — the named parameters' ranges (``[uncertainty.parameters.NAME]``), or ±spread on the
   masses — as ``worst-case`` searches it (:meth:`ParameterUncertainty.box`); the corners first, because the
   assumptions ‖M̃ₐ‖∞ ≤ μ and ‖δq‖∞ ≤ Γ are most often broken at the ends of a range (a 0-kg and a 3-kg payload);
   at most ``corners`` of the 2^k, the all-low and all-high first;
2. a small Monte Carlo of the set, drawn from the parameters' distributions (the campaign's draws with its seed),
   each plant with its own noise stream of the sensor (:func:`~robustrack.campaigns.loop.sample_sensor`).

On each plant one run (:func:`~robustrack.campaigns.loop.evaluate_sample`, the campaign's evaluation) must reach its
end with its error inside its bound, the bound's assumptions must hold along it (``assumptions_held``: max ‖δq‖∞ ≤ Γ,
max ‖M̃ₐ‖∞ ≤ 1 − α0/σ; :func:`~robustrack.tracking.assess.assumption_limits`), and no joint may demand more than its
effort limit (the run's peak demanded |τ| against :func:`~robustrack.tracking.actuators.effort_limits`). The first
plant that breaks the design is named — its parameter values, or its sample index and sensor seed — and the
verification stops there. This is a test over a few plants, not a proof over the box: the sensed bound's own theory
(docs/theory/sensing.md) says what is guaranteed.
"""

from __future__ import annotations

import dataclasses
import itertools
from dataclasses import dataclass

import numpy as np

from .._format import format_value
from .._validate import positive_int

__all__ = ["VerifiedPlant", "verification_plants", "verify_design", "values_text", "DEFAULT_CORNERS",
           "DEFAULT_SAMPLES", "BoxAssumptions", "box_assumptions"]

#: Corners of the box run by default (all of them up to three uncertain parameters).
DEFAULT_CORNERS = 8
#: Monte Carlo plants run by default after the corners.
DEFAULT_SAMPLES = 3


@dataclass(frozen=True)
class VerifiedPlant:
    """One plant of a verification and its outcome.

    Attributes
    ----------
    label : str
        ``"corner 2 of 4"``, ``"sample 1"``.
    values : dict
        The plant's uncertain parameters (name → value; a per-body array as a list).
    index : int
        The sample index: its sensor's noise stream (and δQ draw) is seeded from it.
    sensor_seed : int or None
        That sensor's seed (None without a sensor).
    record : SampleRecord
        The run's numbers (:func:`~robustrack.campaigns.loop.evaluate_sample`).
    broke : str or None
        Why this plant breaks the design (None: it held, with its assumptions and inside the effort limits).
    """

    label: str
    values: dict
    index: int
    sensor_seed: int | None
    record: object
    broke: str | None

    def plant_text(self) -> str:
        """The plant in words: ``corner 1 of 2 (payload_mass = 1.8)``, with the sensor's seed of a sample."""
        values = values_text(self.values)
        corner = self.sensor_seed is None or self.label.startswith("corner")
        seed = "" if corner else f", sensor seed {self.sensor_seed}"
        return f"{self.label} ({values}{seed})"

    def to_dict(self) -> dict:
        return {"label": self.label, "values": dict(self.values), "index": self.index,
                "sensor_seed": self.sensor_seed, "broke": self.broke, "held": self.broke is None,
                "max_abs_e": self.record.max_abs_e, "max_abs_edot": self.record.max_abs_edot,
                "max_norm_dq": self.record.max_norm_dq, "max_norm_Mtilde": self.record.max_norm_Mtilde,
                "assumptions_held": self.record.assumptions_held,
                "max_abs_tau": None if self.record.max_abs_tau is None else list(self.record.max_abs_tau)}


def values_text(values: dict) -> str:
    """``payload_mass = 0, payload_com_z = 0.05``: a verified plant's uncertain parameters in words.

    Parameters
    ----------
    values : dict
        Name → value (a per-body array as a list), as :attr:`VerifiedPlant.values`.

    Returns
    -------
    str
    """
    return ", ".join(f"{k} = {format_value(v) if np.isscalar(v) else [format_value(x) for x in v]}"
                     for k, v in values.items())


def _corners(lo, hi, count):
    """At most ``count`` corners of the box [lo, hi]: all-low, all-high, then the rest in order."""
    k = lo.size
    every = [np.array(c) for c in itertools.product(*[(a, b) for a, b in zip(lo, hi)])]
    unique = []
    for c in every[:1] + every[-1:] + every[1:-1]:
        if not any(np.array_equal(c, u) for u in unique):
            unique.append(c)
    return unique[:count] if k else []


def verification_plants(uncertainty, nominal, *, corners: int = DEFAULT_CORNERS,
                        samples: int = DEFAULT_SAMPLES) -> tuple[list, str | None]:
    """The plants a design is verified on (module docstring): ``(label, δ, index)`` each, and a note.

    Parameters
    ----------
    uncertainty : ParameterUncertainty
    nominal : Plant
    corners, samples : int
        Corners of the box at most, and Monte Carlo draws (each ≥ 0; keyword-only).

    Returns
    -------
    plants : list of (str, ndarray, int)
    note : str or None
        What the set leaves out: corners not run, or no box (normal draws, a user sampler).
    """
    from ..errors import ParameterError

    corners = positive_int(corners, "corners", minimum=0)
    samples = positive_int(samples, "samples", minimum=0)
    note = None
    chosen = []
    if corners:
        try:
            lo, hi = uncertainty.box(nominal)
        except ParameterError as exc:
            note = f"no corners: {exc}"
        else:
            lo, hi = np.ravel(lo), np.ravel(hi)
            total = 2 ** int(np.count_nonzero(hi > lo))
            chosen = _corners(lo, hi, corners)
            if len(chosen) < total:
                note = f"{len(chosen)} of the box's {total} corners run (the all-low and all-high first)"
    plants = [(f"corner {i + 1} of {len(chosen)}", c, i) for i, c in enumerate(chosen)]
    if samples:
        drawn = uncertainty.draw(nominal, samples)
        plants += [(f"sample {i}", row, len(chosen) + i) for i, row in enumerate(drawn)]
    return plants, note


@dataclass(frozen=True)
class BoxAssumptions:
    """The bound's assumptions at the corners of the declared box, along the nominal motion (before any design runs).

    Attributes
    ----------
    mtilde : float
        The largest max_t ‖M̃ₐ‖∞ (M̃ₐ = I − M_a⁻¹M, W 5.3.4) over the corners.
    mtilde_at : dict
        The corner where it is reached (parameter name → value).
    dq : float
        The largest max_t ‖δq‖∞ (W 5.3.5 at q_c = q) over the corners.
    dq_at : dict
    corners : int
        Corners evaluated.
    """

    mtilde: float
    mtilde_at: dict
    dq: float
    dq_at: dict
    corners: int

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


def box_assumptions(problem, uncertainty, run=None, *, corners: int = DEFAULT_CORNERS) -> BoxAssumptions | None:
    """‖M̃ₐ‖∞ and ‖δq‖∞ at the box's corners along the nominal motion (:func:`verification_plants`' corners).

    The nominal motion stands for the controlled one (q_c = q, as Γ's estimate does, W 5.3.10): what a design's
    runs then measure along their own motion differs from it by the tracking error's effect. GSS's bound needs
    ‖M̃ₐ‖∞ ≤ μ < 1 with one gain σβ for every joint (docs/theory/sensing.md): where a corner reaches 1, no
    choice of α0 makes the bound a theorem over the box.

    Parameters
    ----------
    problem : TrackingProblem
    uncertainty : ParameterUncertainty
    run : NominalRun, optional
    corners : int

    Returns
    -------
    BoxAssumptions or None
        None where the declared uncertainty has no box (normal draws, a user sampler) or no corner.
    """
    from ..loop.bounds import nominal_forces
    from ..tracking.assess import uncertainty_along_run

    chosen, _ = verification_plants(uncertainty, problem.nominal, corners=corners, samples=0)
    if not chosen:
        return None
    run = problem.nominal_run() if run is None else run
    n = problem.n
    t, y, force, _ = nominal_forces(problem, run)
    q, qd = y[:, :n], y[:, n:]
    worst = {"mtilde": (-np.inf, None), "dq": (-np.inf, None)}
    for _, dm, index in chosen:
        actual = uncertainty.actual(problem.nominal, dm, index)
        with np.errstate(all="ignore"):
            seen = uncertainty_along_run(problem.nominal, actual, q, qd, q, qd, force, t)
        for key, norms in (("mtilde", seen["Mtilde_norm"]), ("dq", seen["dq_norm"])):
            value = float(np.max(norms))
            if not value <= worst[key][0]:  # NaN (a singular actual mass matrix) is the worst
                worst[key] = (value, _values(uncertainty, problem.nominal, dm))
    return BoxAssumptions(worst["mtilde"][0], worst["mtilde"][1], worst["dq"][0], worst["dq"][1], len(chosen))


def _values(uncertainty, nominal, dm) -> dict:
    values = uncertainty.nominal_values(nominal) + np.ravel(dm)
    names = uncertainty.names
    if len(names) == values.size:
        return {name: float(v) for name, v in zip(names, values)}
    return {names[0]: [float(v) for v in values]}


def _broke(problem, run, record, limits, assumptions: bool = True) -> str | None:
    """Why a run breaks the design (module docstring), or None; ``assumptions=False``: the bound's assumptions are
    not judged (a box where they cannot hold: the design is verified by observation only)."""
    from ..tracking.assess import ASSUMPTIONS, assumption_limits

    if not record.success:
        return f"the run did not reach its end ({record.error})"
    if limits is not None and record.max_abs_tau is not None:
        over = [(j, peak, lim) for j, (peak, lim) in enumerate(zip(record.max_abs_tau, limits)) if peak > lim]
        if over:
            names = list(problem.nominal.coordinates)
            return "torque over the effort limit: " + ", ".join(
                f"{names[j] if j < len(names) else j} demanded {format_value(peak)} > {format_value(lim)}"
                for j, peak, lim in over)
    if assumptions and record.assumptions_held is False:
        bounds = problem.promised_bounds(run)
        lim = assumption_limits(bounds, problem.compensator) or {}
        seen = {"max_norm_dq": record.max_norm_dq, "max_norm_Mtilde": record.max_norm_Mtilde,
                "max_norm_P": record.max_norm_P}
        failed = [f"{ASSUMPTIONS.get(k, k)} failed: {format_value(seen[k])} > {format_value(v)}"
                  for k, v in lim.items() if seen.get(k) is not None and not seen[k] <= v]
        return ("the bound's assumption " + "; ".join(failed) if failed else
                "the bound's assumptions failed along the run (the velocity estimator's, the run says which)")
    if record.held is not True:
        return ("its bound did not hold" if record.held is False else "its bound was not judged") + \
            f" (max ‖e‖∞ {format_value(record.max_abs_e)}, max ‖ė‖∞ {format_value(record.max_abs_edot)})"
    return None


def verify_design(problem, uncertainty, *, corners: int = DEFAULT_CORNERS, samples: int = DEFAULT_SAMPLES,
                  run=None, progress=None, assumptions: bool = True) -> tuple[list, str | None]:
    """Run a design on :func:`verification_plants` until one breaks it (module docstring).

    Parameters
    ----------
    problem : TrackingProblem
        The design (compensator, sensor, effort limits).
    uncertainty : ParameterUncertainty
    corners, samples : int
    run : NominalRun, optional
        ``problem.nominal_run()`` (computed here if not given).
    progress : callable, optional
        ``progress(VerifiedPlant)`` after each plant.
    assumptions : bool
        Judge the bound's assumptions along each run (False where :func:`box_assumptions` shows they cannot hold:
        each run must then still hold the bound it reports and stay inside the effort limits).

    Returns
    -------
    plants : list of VerifiedPlant
        Those run, in order; the last is the one that broke the design, if any.
    note : str or None
        :func:`verification_plants`' note.
    """
    from ..tracking.actuators import effort_limits
    from .loop import evaluate_sample, sample_sensor

    run = problem.nominal_run() if run is None else run
    nominal = problem.nominal
    chosen, note = verification_plants(uncertainty, nominal, corners=corners, samples=samples)
    limits = effort_limits(problem)
    done = []
    for label, dm, index in chosen:
        try:
            actual = uncertainty.actual(nominal, dm, index)
        except Exception as exc:  # recorded as the sample's failure, as a campaign records it
            actual = exc
        record = evaluate_sample(problem, run, actual, index, dm)
        sensor = sample_sensor(problem.sensor, index)
        plant = VerifiedPlant(label, _values(uncertainty, nominal, dm), int(index),
                              None if sensor is None else int(sensor.seed), record,
                              _broke(problem, run, record, limits, assumptions))
        done.append(plant)
        if progress is not None:
            progress(plant)
        if plant.broke is not None:
            break
    return done, note
