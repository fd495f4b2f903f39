"""What the controller measures: position noise, encoder quantization, a velocity estimate and a delay.

A :class:`Sensor` sits between the actual plant and the controller at the sample instants t_k = t0 + k h of the
zero-order hold (``sample_period``; docs/guide/robot.md, docs/theory/sensing.md):

- the measured position q̂ = Δ·round((q + σ_q ν)/Δ) — Gaussian noise of standard deviation σ_q (``q_noise``),
  then an encoder of resolution Δ (``q_resolution``; :meth:`Sensor.encoder` from counts per revolution) that
  rounds to the nearest count or, ``quantization = "truncate"``, counts whole quanta (Δ·floor: an error up to Δ);
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
on what the controller sees wrong (:meth:`Sensor.error_bound`) is what the compensators' sampled boxes take
(:meth:`robustrack.controllers.Compensator.sampled_bounds`).
"""

from __future__ import annotations

import dataclasses
import math
import numbers

import numpy as np

from .._validate import finite
from ..controllers.sampled import LoopErrors
from ..errors import ParameterError

__all__ = ["estimate_velocity", "filter_gain", "Sensor", "MeasurementError", "VELOCITY_ESTIMATORS", "QUANTIZATION"]

#: The velocity estimators a :class:`Sensor` knows, with the code the compiled loop uses.
VELOCITY_ESTIMATORS = {"exact": 0, "difference": 1, "filtered": 2}

#: How an encoder turns a position into counts: the offset added before the floor, and its largest error in quanta.
QUANTIZATION = {"round": (0.5, 0.5), "truncate": (0.0, 1.0)}


def _per_joint(value, name: str):
    """A float >= 0 or a tuple of them (one per joint): checked, made immutable."""
    arr = finite(value, name)
    if arr.ndim > 1 or np.any(arr < 0):
        raise ParameterError(f"`{name}` must be >= 0, one number or one per joint; got {value!r}.")
    return float(arr) if arr.ndim == 0 else tuple(float(v) for v in arr)


@dataclasses.dataclass(frozen=True)
class MeasurementError:
    """A bound on what the controller sees wrong in a sampled loop (:meth:`Sensor.error_bound`).

    Attributes
    ----------
    loop : LoopErrors
        Per joint: the position error δe, the velocity error's parts (noise, the estimator's lag coefficient, its
        start), the delay in samples, the period; what the compensators' sampled boxes take.
    confidence : float or None
        The probability that every noise draw of the run, of every noisy stream, lies inside the bound (None: no
        random part; the bound is hard).
    z : float
        The normal quantile every draw lies inside (0 without noise).
    why : str
        How the numbers were made.
    """

    loop: LoopErrors
    confidence: float | None
    z: float
    why: str

    @property
    def e(self) -> np.ndarray:
        """sup |q̂_i − q_i|."""
        return self.loop.de


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
    quantization : {"round", "truncate"}
        How the encoder counts: to the nearest count (error ≤ Δ/2) or whole counts (error < Δ).

    Examples
    --------
    >>> Sensor(q_noise=1e-4, velocity="filtered", velocity_cutoff=50.0, delay=1e-3)
    Sensor(q_noise=0.0001, q_resolution=0.0, velocity='filtered', velocity_cutoff=50.0, qd_noise=0.0, delay=0.001, seed=0, confidence=0.999, quantization='round')
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
    quantization: str = "round"

    def __post_init__(self):
        for name in ("q_noise", "q_resolution", "qd_noise"):
            object.__setattr__(self, name, _per_joint(getattr(self, name), name))
        if not isinstance(self.quantization, str) or self.quantization not in QUANTIZATION:
            raise ParameterError(f"`quantization` must be one of {list(QUANTIZATION)} (how the encoder counts); got "
                                 f"{self.quantization!r}.")
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

    @property
    def encoder_offset(self) -> float:
        """What the encoder adds before the floor: 0.5 rounds to the nearest count, 0 truncates."""
        return QUANTIZATION[self.quantization][0]

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
        qm = np.where(res > 0, np.floor(qm / np.where(res > 0, res, 1.0) + self.encoder_offset) * res, qm)
        if self.velocity == "exact":
            return qm, qd + sqd * nu_qd
        if k == 0 or previous is None:
            return qm, np.array(v_start, dtype=float)
        return qm, estimate_velocity(qm, previous[0], previous[1], h, self.cutoff)

    def error_bound(self, h: float, qdd_max, samples: int, e0=None, edot0=None) -> MeasurementError:
        """What the controller sees wrong at the sample instants of a run (docs/theory/sensing.md, "The measurement
        error").

        Noise: every draw of the run, of every noisy stream (q and q̇), inside z σ with z the two-sided normal quantile
        of a union bound over all of them, so that they all lie inside *jointly* with probability ``confidence``.
        Resolution: Δ/2 rounding, Δ truncating. The backward difference: 2 δe / h plus its lag h A/2; the filtered
        one: 2 α δe / h plus the lag (1/2 + (1 − α)/α) h A — A the controlled motion's sup |q̈|, ``qdd_max`` + the
        box's Ë (:class:`~robustrack.controllers.sampled.LoopErrors` adds it). The estimators start at the
        reference's velocity: |ė(0)| is their first error (the difference's first sample only; the filter's forgotten
        geometrically, so added).

        Parameters
        ----------
        h : float
            Sample period.
        qdd_max : ndarray (n,)
            sup |q̈| per joint of the nominal motion.
        samples : int
            Sample instants of the run.
        e0, edot0 : ndarray (n,), optional
            The start's tracking error (default 0).

        Returns
        -------
        MeasurementError
        """
        from scipy.special import ndtri

        a = np.asarray(qdd_max, dtype=float)
        n = a.size
        z0 = np.zeros(n)
        e0 = z0 if e0 is None else np.abs(np.asarray(e0, dtype=float))
        edot0 = z0 if edot0 is None else np.abs(np.asarray(edot0, dtype=float))
        sq, res, sqd = self.per_joint(n)
        streams = int(np.any(sq > 0)) + int(self.velocity == "exact" and np.any(sqd > 0))
        draws = max(1, samples) * n * streams
        z = float(ndtri(1.0 - (1.0 - self.confidence) / (2.0 * draws))) if streams else 0.0
        de = z * sq + QUANTIZATION[self.quantization][1] * res
        alpha = self.alpha(h)
        if self.velocity == "exact":
            noise, lag, start, how = z * sqd, 0.0, z0, "measured velocity"
        elif self.velocity == "difference":
            noise, lag, start, how = 2.0 * de / h, 0.5, edot0, "backward difference: 2δe/h + h A/2"
        else:
            noise, lag, start = 2.0 * alpha * de / h, 0.5 + (1.0 - alpha) / alpha, edot0
            how = f"filtered difference (α = {alpha:.4g}): 2αδe/h + (1/2 + (1 − α)/α) h A"
        loop = LoopErrors(float(h), self.delay_samples(h), de, noise, lag, start, self.velocity == "filtered", a, e0,
                          edot0)
        why = (f"δe = zσ_q + {'Δ/2' if self.quantization == 'round' else 'Δ'}, δė by the {how}"
               + (f"; z = {z:.3g} (all {draws} draws of {samples} samples inside jointly at {self.confidence:.4g} "
                  "confidence)" if streams else ""))
        return MeasurementError(loop, self.confidence if streams else None, z, why)


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
