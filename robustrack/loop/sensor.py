"""What the controller measures: position noise, encoder quantization, a velocity estimate and a delay.

A :class:`Sensor` sits between the actual plant and the controller at the sample instants t_k = t0 + k h of the
zero-order hold (``sample_period``; docs/guide/robot.md, docs/theory/sensing.md):

- the measured position q̂ = Δ·round((q + σ_q ν)/Δ) — Gaussian noise of standard deviation σ_q (``q_noise``),
  then an encoder of resolution Δ (``q_resolution``; :meth:`Sensor.encoder` from counts per revolution);
- the velocity, ``velocity`` =

  - ``"exact"``: measured, q̇ + σ_q̇ ν (``qd_noise``);
  - ``"difference"``: the backward difference (q̂_k − q̂_{k−1}) / h;
  - ``"filtered"``: that difference through a first-order low-pass of cutoff f_c (``velocity_cutoff``, Hz),
    v_k = v_{k−1} + α (d_k − v_{k−1}) with α = 1 − exp(−2π f_c h), the exact discretization of
    1/(1 + s/(2π f_c)) under a hold (the "dirty derivative" of PID practice: Åström & Murray,
    *Feedback Systems*, 2nd ed., §11.3 "filtering the derivative");

  at the first sample both estimators take the reference's velocity (the controller's best prior: the loop starts
  on its reference);
- a delay of D whole samples (``delay`` = D h): the control applied on [t_k, t_{k+1}) is the one computed from
  the measurement at t_{k−D} (zero before the first arrives; Qᶜ(t), which needs no measurement, is not delayed).

The random streams are seeded (``seed``); ν are standard normal draws, one row per sample instant. The bound
on what the controller sees wrong (:meth:`Sensor.error_bound`) is what the compensators' bounds are widened by
(:meth:`robustrack.controllers.Compensator.measured_bounds`).
"""

from __future__ import annotations

import dataclasses
import math
import numbers

import numpy as np

from .._validate import finite
from ..errors import ParameterError

__all__ = ["estimate_velocity", "filter_gain", "Sensor", "MeasurementError", "VELOCITY_ESTIMATORS"]

#: The velocity estimators a :class:`Sensor` knows, with the code the compiled loop uses.
VELOCITY_ESTIMATORS = {"exact": 0, "difference": 1, "filtered": 2}


def _per_joint(value, name: str):
    """A float >= 0 or a tuple of them (one per joint): checked, made immutable."""
    arr = finite(value, name)
    if arr.ndim > 1 or np.any(arr < 0):
        raise ParameterError(f"`{name}` must be >= 0, one number or one per joint; got {value!r}.")
    return float(arr) if arr.ndim == 0 else tuple(float(v) for v in arr)


@dataclasses.dataclass(frozen=True)
class MeasurementError:
    """A bound on what the controller sees wrong at a sample (:meth:`Sensor.error_bound`).

    Attributes
    ----------
    e : ndarray (n,)
        sup |q̂ − q| per joint (noise at the confidence, plus half the resolution).
    edot : ndarray (n,)
        sup |v̂ − q̇| per joint (noise, and the estimator's lag for an acceleration bound).
    confidence : float or None
        The probability that every noise draw of the run lies inside the bound (None: no random part; the bound
        is hard).
    covered : bool
        Whether the compensators' widened bounds cover this loop (False with a delay: docs/theory/sensing.md).
    why : str
        How the numbers were made, or why the loop is not covered.
    """

    e: np.ndarray
    edot: np.ndarray
    confidence: float | None
    covered: bool
    why: str


@dataclasses.dataclass(frozen=True)
class Sensor:
    """The measurement model of a sampled loop (module docstring; docs/guide/robot.md).

    Parameters
    ----------
    q_noise : float or sequence of float
        σ of the Gaussian position noise per joint (rad or m); 0: none.
    q_resolution : float or sequence of float
        Encoder resolution per joint (the quantum Δ); 0: none. :meth:`encoder` makes it from counts per
        revolution.
    velocity : {"exact", "difference", "filtered"}
        How q̇ reaches the controller.
    velocity_cutoff : float
        Cutoff of the ``"filtered"`` estimator, Hz (> 0 there; 0 otherwise).
    qd_noise : float or sequence of float
        σ of the noise of a measured velocity (``velocity = "exact"`` only).
    delay : float
        Measurement-to-actuation delay, s: a whole number of sample periods (checked against the loop's).
    seed : int
        Seed of the noise streams.
    confidence : float
        Probability that every noise draw of a run lies inside the error bound (:meth:`error_bound`), in (0, 1).

    Examples
    --------
    >>> Sensor(q_noise=1e-4, velocity="filtered", velocity_cutoff=50.0, delay=1e-3)
    Sensor(q_noise=0.0001, q_resolution=0.0, velocity='filtered', velocity_cutoff=50.0, qd_noise=0.0, delay=0.001, seed=0, confidence=0.999)
    >>> round(Sensor.encoder(2**17).q_resolution, 10)
    4.79369e-05
    """

    q_noise: float | tuple = 0.0
    q_resolution: float | tuple = 0.0
    velocity: str = "exact"
    velocity_cutoff: float = 0.0
    qd_noise: float | tuple = 0.0
    delay: float = 0.0
    seed: int = 0
    confidence: float = 0.999

    def __post_init__(self):
        for name in ("q_noise", "q_resolution", "qd_noise"):
            object.__setattr__(self, name, _per_joint(getattr(self, name), name))
        if not isinstance(self.velocity, str) or self.velocity not in VELOCITY_ESTIMATORS:
            raise ParameterError(f"`velocity` must be one of {list(VELOCITY_ESTIMATORS)}; got {self.velocity!r}.")
        cutoff = float(finite(self.velocity_cutoff, "velocity_cutoff"))
        if self.velocity == "filtered" and not cutoff > 0:
            raise ParameterError("`velocity_cutoff` (Hz) must be > 0 for velocity = \"filtered\"; got "
                                 f"{self.velocity_cutoff!r}.")
        if self.velocity != "filtered" and cutoff != 0:
            raise ParameterError(f"`velocity_cutoff` is the cutoff of velocity = \"filtered\"; with velocity = "
                                 f"{self.velocity!r} leave it 0 (got {self.velocity_cutoff!r}).")
        if self.velocity != "exact" and np.any(np.asarray(self.qd_noise) > 0):
            raise ParameterError(f"`qd_noise` is the noise of a measured velocity (velocity = \"exact\"); with "
                                 f"velocity = {self.velocity!r} the velocity is estimated from q: leave it 0.")
        delay = float(finite(self.delay, "delay"))
        if delay < 0:
            raise ParameterError(f"`delay` must be >= 0 s; got {self.delay!r}.")
        if isinstance(self.seed, bool) or not isinstance(self.seed, numbers.Integral) or self.seed < 0:
            raise ParameterError(f"`seed` must be an integer >= 0; got {self.seed!r}.")
        conf = float(finite(self.confidence, "confidence"))
        if not 0 < conf < 1:
            raise ParameterError(f"`confidence` must be in (0, 1); got {self.confidence!r}.")
        object.__setattr__(self, "velocity_cutoff", cutoff)
        object.__setattr__(self, "delay", delay)
        object.__setattr__(self, "seed", int(self.seed))
        object.__setattr__(self, "confidence", conf)

    @classmethod
    def encoder(cls, counts: int, **others) -> "Sensor":
        """A sensor whose encoders count ``counts`` per revolution: q_resolution = 2π / counts.

        Parameters
        ----------
        counts : int
            Counts per revolution (> 0), e.g. 2**17.
        **others
            The other fields.

        Returns
        -------
        Sensor
        """
        if isinstance(counts, bool) or not isinstance(counts, numbers.Integral) or counts <= 0:
            raise ParameterError(f"`counts` (per revolution) must be an integer > 0; got {counts!r}.")
        return cls(q_resolution=2 * math.pi / int(counts), **others)

    # ------------------------------------------------------------------ #
    def per_joint(self, n: int):
        """(σ_q, Δ, σ_q̇) as arrays of n entries; a per-joint tuple of another length is refused."""
        out = []
        for name in ("q_noise", "q_resolution", "qd_noise"):
            v = np.asarray(getattr(self, name), dtype=float)
            if v.ndim and v.size != n:
                raise ParameterError(f"`sensor.{name}` has {v.size} entries; the plant has {n} joints (give one "
                                     "number, or one per joint).")
            out.append(np.broadcast_to(v, (n,)).astype(float))
        return tuple(out)

    def delay_samples(self, h: float) -> int:
        """The delay in whole sample periods of ``h``; a delay that is not a multiple of h is refused.

        Parameters
        ----------
        h : float
            The sample period (s).

        Returns
        -------
        int
        """
        if not self.delay / h <= 1e7:  # (the hold's own limit on intervals is 1e7)
            raise ParameterError(f"`sensor.delay` = {self.delay:g} s is more than 1e7 sample periods ({h:g} s); a "
                                 "measurement-to-actuation delay is a few samples: take a smaller delay.")
        D = round(self.delay / h)
        if abs(D * h - self.delay) > 1e-9 * max(h, self.delay):
            raise ParameterError(f"`sensor.delay` = {self.delay:g} s is not a whole number of sample periods "
                                 f"({h:g} s): take delay = {max(D, 1) * h:g} s or a sample_period that divides it.")
        return int(D)

    def alpha(self, h: float) -> float:
        """The filtered estimator's gain α = 1 − exp(−2π f_c h) (:func:`filter_gain`; 1 for the others)."""
        return float(filter_gain(self.velocity_cutoff, h)) if self.velocity == "filtered" else 1.0

    @property
    def cutoff(self) -> float | None:
        """The velocity filter's cutoff f_c where the estimator filters (``velocity = "filtered"``), else None."""
        return self.velocity_cutoff if self.velocity == "filtered" else None

    def draws(self, n: int, count: int):
        """The seeded standard normal draws (ν_q, ν_q̇), each ``count`` × n (one row per sample instant)."""
        rng = np.random.default_rng(self.seed)
        return rng.standard_normal((count, n)), rng.standard_normal((count, n))

    @property
    def exact(self) -> bool:
        """True when the controller sees the state exactly, at once (the sensor changes nothing)."""
        return (self.velocity == "exact" and self.delay == 0 and
                not any(np.any(np.asarray(getattr(self, k)) > 0) for k in ("q_noise", "q_resolution", "qd_noise")))

    def to_dict(self) -> dict:
        """The fields, JSON-ready."""
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in dataclasses.asdict(self).items()}

    # ------------------------------------------------------------------ #
    def measure(self, k: int, q, qd, h: float, previous, nu_q, nu_qd, v_start):
        """The measurement at sample k: (q̂, v̂) from the true (q, q̇), on numpy.

        The compiled loop does the same in :func:`robustrack.compiled.hold.sense` (tests compare them).

        Parameters
        ----------
        k : int
            The sample's index (0: the first).
        q, qd : ndarray (n,)
            The true state.
        h : float
            Sample period.
        previous : (ndarray (n,), ndarray (n,)) or None
            (q̂, v̂) of the previous sample (None at k = 0).
        nu_q, nu_qd : ndarray (n,)
            This sample's standard normal draws.
        v_start : ndarray (n,)
            The estimators' velocity at k = 0 (the reference's).

        Returns
        -------
        (ndarray (n,), ndarray (n,))
        """
        sq, res, sqd = self.per_joint(len(q))
        qm = q + sq * nu_q
        qm = np.where(res > 0, np.floor(qm / np.where(res > 0, res, 1.0) + 0.5) * res, qm)
        if self.velocity == "exact":
            return qm, qd + sqd * nu_qd
        if k == 0 or previous is None:
            return qm, np.array(v_start, dtype=float)
        return qm, estimate_velocity(qm, previous[0], previous[1], h, self.cutoff)

    def error_bound(self, h: float, qdd_max, samples: int) -> MeasurementError:
        """sup |q̂ − q| and sup |v̂ − q̇| per joint over a run of ``samples`` sample instants (docs/theory/sensing.md).

        Noise: every draw of the run inside z σ with z the two-sided normal quantile of a union bound over the
        run's ``samples × n`` draws, so that all of them lie inside with probability ``confidence``. Resolution:
        Δ/2. The backward difference: 2 δe / h plus its lag h a/2; the filtered one: 2 α δe / h plus the lag
        (1/2 + (1 − α)/α) h a; a = ``qdd_max``, the acceleration the estimator differentiates through.

        Parameters
        ----------
        h : float
            Sample period.
        qdd_max : ndarray (n,)
            sup |q̈| per joint of the motion (the nominal's; the controlled motion follows it).
        samples : int
            Sample instants of the run.

        Returns
        -------
        MeasurementError
        """
        from scipy.special import ndtri

        a = np.asarray(qdd_max, dtype=float)
        n = a.size
        sq, res, sqd = self.per_joint(n)
        random = bool(np.any(sq > 0) or np.any(sqd > 0))
        z = float(ndtri(1.0 - (1.0 - self.confidence) / (2.0 * max(1, samples) * n))) if random else 0.0
        de = z * sq + 0.5 * res
        alpha = self.alpha(h)
        if self.velocity == "exact":
            ded, how = z * sqd, "measured velocity"
        elif self.velocity == "difference":
            ded, how = 2.0 * de / h + 0.5 * h * a, "backward difference: 2δe/h + h a/2"
        else:
            ded = 2.0 * alpha * de / h + (0.5 + (1.0 - alpha) / alpha) * h * a
            how = f"filtered difference (α = {alpha:.4g}): 2αδe/h + (1/2 + (1 − α)/α) h a"
        why = (f"δe = zσ_q + Δ/2, δė by the {how}" + (f"; z = {z:.3g} (every draw of {samples} samples inside at "
                                                      f"{self.confidence:.4g} confidence)" if random else ""))
        covered = self.delay == 0
        if not covered:
            why = f"a delay of {self.delay:g} s: the proof has the control act on the current measurement; " + why
        return MeasurementError(de, ded, self.confidence if random else None, covered, why)


def filter_gain(cutoff, h):
    """α = 1 − exp(−2π f_c h): the gain of the first-order filter of cutoff f_c over a step h (docs/theory/sensing.md).

    Parameters
    ----------
    cutoff : float
        f_c in Hz.
    h : float
        The step in seconds.

    Returns
    -------
    float
    """
    return 1.0 - np.exp(-2.0 * np.pi * cutoff * h)


def estimate_velocity(q, q_prev, v_prev, dt, cutoff=None):
    """One step of the velocity estimator from measured positions (docs/theory/sensing.md).

    The backward difference d = (q − q_prev)/dt; with a ``cutoff`` f_c, filtered: v = v_prev + α (d − v_prev),
    α = :func:`filter_gain` (f_c, dt). The one source of the estimator: the numpy loop's :meth:`Sensor.measure`,
    :meth:`robustrack.loop.Controller.update` and the exported C's ``rt_update`` (traced) run it; the compiled loop's
    :func:`robustrack.compiled.hold.sense` repeats it in numba (a test holds the two loops bit for bit).

    Parameters
    ----------
    q, q_prev : ndarray (n,)
        This and the previous measured positions.
    v_prev : ndarray (n,)
        The previous estimate.
    dt : float
        The time between them (> 0).
    cutoff : float, optional
        The filter's cutoff in Hz; None: the backward difference.

    Returns
    -------
    ndarray (n,)
    """
    d = (q - q_prev) / dt
    if cutoff is None:
        return d
    return v_prev + filter_gain(cutoff, dt) * (d - v_prev)
