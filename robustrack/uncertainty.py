"""Uncertain plants and the uncertainty bound Γ (W ch. 5, 7.3; docs/theory/nominal-actual.md).

The *nominal* plant ``M q̈ = Q`` is the best estimate; the *actual* plant is
``M_a = M + δM``, ``Q_a = Q + δQ`` (W 5.2.12–5.2.16). Here the actual plant is
built as ``nominal.replace(<parameters>)`` (δM and the mass-dependent part of
δQ) plus an additive given-force perturbation ``δQ(q, q̇, t)``
(:class:`~robustrack.plants.ForcedPlant`, re-exported here).

Along the nominal controlled trajectory (q_c = q, W 5.3.8) the uncertainty in
the acceleration is::

    exact, W (5.3.5):        δq = M_a⁻¹ (Q_a + Qᶜ) − M⁻¹ (Q + Qᶜ)
                                = M_a⁻¹ (δQ − δM q̈)
    first order, W (5.3.10): δq ≈ −M⁻¹ δM M⁻¹ (Q + Qᶜ) + M⁻¹ δQ
                                = M⁻¹ (δQ − δM q̈)
    bound, W (5.3.11):       ‖δq‖ ≲ ‖M⁻¹‖ (‖δM‖ ‖M⁻¹‖ ‖Q + Qᶜ‖ + ‖δQ‖)

with q̈ = M⁻¹ (Q + Qᶜ) the nominal constrained acceleration, δQ = Q_a − Q
(mass-dependent given forces AND the additive perturbation) and ‖·‖ the
infinity norm (induced ∞-norm, max row sum, for matrices), W's convention.
The two right-hand forms are algebraically equal to the left ones; they are the
ones computed (no cancellation between two large accelerations).

Note on the seed: W prints (5.3.10) and Appendix (A-5) with ``(M + δM)⁻¹`` in
place of the two outer ``M⁻¹`` factors; that form is algebraically identical to
the exact (5.3.5) at q_c = q. What is called "first order" here is the Taylor
form of docs/theory/nominal-actual.md (``M⁻¹`` throughout), which differs from the exact value at
O(‖M⁻¹δM‖²).

Γ by Monte Carlo (W 7.3, Figs. 7.1–7.8): for N sampled actual plants take
``max_t ‖δq(t)‖`` per sample, exact and first order, and choose Γ′ above the
distribution (:func:`estimate_gamma`). All samples are evaluated in one array
operation per block of (sample, time) pairs; nothing loops over samples in Python.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import time
import warnings
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from ._validate import as_float_array, check_memory, finite, positive_int
from .errors import MassMatrixError, ParameterError, RobustrackError
from .plants.base import Plant, batch_contract_message
from .plants.forced import ForcedPlant
from .symbolic import SymbolicForm, added_terms

__all__ = [
    "Disturbance",
    "SumDisturbance",
    "StepDisturbance",
    "SinusoidalDisturbance",
    "BandLimitedDisturbance",
    "FunctionDisturbance",
    "JointFriction",
    "friction_coefficient",
    "ActualForces",
    "ForcedPlant",
    "actual_plant",
    "ParameterSamples",
    "sample_parameters",
    "SampleStream",
    "sample_stream",
    "check_sample_count",
    "check_gamma_settings",
    "LargeMonteCarlo",
    "parameter_values",
    "parameter_replacements",
    "parameter_label",
    "SAMPLING_KINDS",
    "uncertainty_acceleration",
    "uncertainty_bound",
    "GammaEstimate",
    "estimate_gamma",
    "DEFAULT_CHUNK",
]

#: Default number of (sample, time) pairs evaluated per array operation in
#: :func:`estimate_gamma`. Each block holds a few arrays of shape
#: (samples, times, n, n): for n = 3 about 1.2 MB each, ~10 MB peak. Blocks that
#: fit in cache were fastest in ``benchmarks/bench_gamma.py`` (2**13–2**14 beat
#: 2**18 by ~1.5×); larger blocks only cut Python overhead.
DEFAULT_CHUNK = 2**14

#: Built-in sampling kinds of :func:`sample_parameters` (``"callable"`` when a
#: user ``sampler`` is given).
SAMPLING_KINDS = ("uniform", "normal")

#: Up to this n the batched SPD solve is unrolled over matrix entries (one numpy
#: operation per entry over the whole batch); larger n uses ``numpy.linalg.solve``.
_UNROLL_MAX = 6


# --------------------------------------------------------------------------- #
# given-force perturbations δQ(q, q̇, t)
# --------------------------------------------------------------------------- #
@dataclass(frozen=True, eq=False)
class Disturbance:
    """A given-force perturbation ``δQ(q, q̇, t) -> (..., n)`` with a known bound.

    Subclasses implement ``__call__(q, qd, t)`` and the attribute or property
    ``bound``: a number with ``‖δQ(q, q̇, t)‖∞ <= bound`` for every argument
    (``math.inf`` if no bound is known). The output broadcasts the batch axes of
    ``q`` and of ``t`` (and of the disturbance's own array parameters, e.g. one
    amplitude per Monte Carlo sample).
    """

    def __call__(self, q, qd, t=0.0) -> np.ndarray:
        raise NotImplementedError

    @property
    def bound(self) -> float:
        """Upper bound of ``‖δQ‖∞`` over all arguments."""
        raise NotImplementedError

    def __add__(self, other):
        if not isinstance(other, Disturbance):
            return NotImplemented
        terms = tuple(getattr(self, "terms", (self,))) + tuple(getattr(other, "terms", (other,)))
        return SumDisturbance(terms)


@dataclass(frozen=True, eq=False)
class SumDisturbance(Disturbance):
    """The sum of given-force perturbations, e.g. ``JointFriction(...) + StepDisturbance(...)`` (``+`` makes one).

    Parameters
    ----------
    terms : sequence of Disturbance
        The summands (at least one); their outputs broadcast together.

    Notes
    -----
    ``bound`` is the sum of the terms' bounds (the triangle inequality of ‖·‖∞; ``inf`` if one is).

    Examples
    --------
    >>> d = StepDisturbance(1.0, start=0.5) + SinusoidalDisturbance(0.5, omega=2.0)
    >>> d.bound
    1.5
    """

    terms: tuple

    def __post_init__(self):
        terms = tuple(self.terms)
        if not terms or not all(isinstance(d, Disturbance) for d in terms):
            raise ParameterError(f"`terms` of SumDisturbance must be one or more Disturbance objects; got {self.terms!r}.")
        object.__setattr__(self, "terms", terms)

    @property
    def bound(self) -> float:
        return float(sum(d.bound for d in self.terms))

    def __call__(self, q, qd, t=0.0) -> np.ndarray:
        out = self.terms[0](q, qd, t)
        for d in self.terms[1:]:
            out = out + d(q, qd, t)
        return out

    def codegen_terms(self, n: int) -> SymbolicForm | None:
        """The sum of the terms' own forms (:meth:`ForcedPlant.codegen <robustrack.plants.ForcedPlant.codegen>`).

        Parameters
        ----------
        n : int
            Number of coordinates of the forced plant.

        Returns
        -------
        SymbolicForm or None
            Key ``sum(<the terms' keys>)``, values the terms' values in order; None when one term has no form
            (a :class:`FunctionDisturbance`, sampled coefficients) or for a subclass that redefines ``__call__``.
        """
        if _redefined(self, SumDisturbance):
            return None
        forms = [getattr(d, "codegen_terms", None) for d in self.terms]
        forms = [None if f is None else f(n) for f in forms]
        if any(f is None for f in forms):
            return None
        return added_terms(forms)


def _frozen(obj, names, positive=False) -> dict:
    """Validate ``obj``'s array attributes ``names`` (finite; ``>= 0`` if ``positive``), store them read-only."""
    arrays = {}
    for name in names:
        arr = finite(getattr(obj, name), name).copy()
        if positive and np.any(arr < 0):
            raise ParameterError(f"`{name}` of {type(obj).__name__} must be >= 0; got {getattr(obj, name)!r}.")
        arr.setflags(write=False)
        object.__setattr__(obj, name, arr)
        arrays[name] = arr
    return arrays


@dataclass(frozen=True, eq=False)
class StepDisturbance(Disturbance):
    """A force switched on at ``start``: ``δQ_i(t) = a_i`` for ``t >= start``, 0 before.

    Parameters
    ----------
    amplitude : float or array_like (..., n)
        a_i (N or N·m per coordinate); a scalar applies to every coordinate.
    start : float, default 0
        The switching time t₀ (s).

    Notes
    -----
    ``bound = max_i |a_i|``, attained for t >= t₀. The right-hand side jumps at t₀: an adaptive
    integrator shrinks its steps there (the error control sees the jump) and goes on; a fixed-step
    one is off by at most one step's worth of the jump.

    Examples
    --------
    >>> d = StepDisturbance([2.0, -1.0], start=1.0)
    >>> d([0.0, 0.0], [0.0, 0.0], t=[0.5, 1.0]).tolist()
    [[0.0, 0.0], [2.0, -1.0]]
    """

    amplitude: np.ndarray
    start: float = 0.0

    def __post_init__(self):
        _frozen(self, ("amplitude",))
        start = as_float_array(self.start, "start")
        if start.ndim != 0 or not np.isfinite(start):
            raise ParameterError(f"`start` of StepDisturbance must be a finite number (s); got {self.start!r}.")
        object.__setattr__(self, "start", float(start))

    @property
    def bound(self) -> float:
        return float(np.max(np.abs(self.amplitude))) if self.amplitude.size else 0.0

    def __call__(self, q, qd, t=0.0) -> np.ndarray:
        q = as_float_array(q, "q", ndim_min=1)
        on = (as_float_array(t, "t") >= self.start)[..., None]
        wave = np.where(on, self.amplitude, 0.0)
        return np.broadcast_to(wave, np.broadcast_shapes(q.shape, wave.shape))

    def codegen_terms(self, n: int) -> SymbolicForm | None:
        """δQ_i = a_i for t >= t₀, else 0, for the code generator (:meth:`ForcedPlant.codegen
        <robustrack.plants.ForcedPlant.codegen>`).

        Parameters
        ----------
        n : int
            Number of coordinates of the forced plant.

        Returns
        -------
        SymbolicForm or None
            Key ``"step"``, values ``(a_1 … a_n, t₀)``; None when the amplitude does not broadcast to exactly (n,)
            (sampled amplitudes carry sample axes) or for a subclass that redefines ``__call__``.
        """
        a = None if _redefined(self, StepDisturbance) else _per_coordinate(n, self.amplitude)
        return None if a is None else SymbolicForm("step", np.concatenate([*a, [self.start]]),
                                                   functools.partial(_step_terms, n))


@dataclass(frozen=True, eq=False)
class SinusoidalDisturbance(Disturbance):
    """Bounded sinusoidal force ``δQ_i(t) = a_i sin(ω_i t + φ_i)``.

    Parameters
    ----------
    amplitude : float or array_like (..., n)
        a_i (N or N·m per coordinate). A scalar applies to every coordinate;
        leading axes (e.g. one amplitude per Monte Carlo sample, shape (N, 1, n))
        broadcast against the batch axes of q.
    omega : float or array_like, broadcasting with ``amplitude``
        Angular frequencies ω_i in rad/s.
    phase : float or array_like, default 0
        Phases φ_i in rad.

    Notes
    -----
    ``bound = max_i |a_i|`` bounds ``‖δQ‖∞`` for all t (and is attained when the
    phases line up).

    Examples
    --------
    >>> d = SinusoidalDisturbance([1.0, 0.5, 0.0], omega=2.0)
    >>> d.bound
    1.0
    >>> d([0.0, 0.0, 0.0], [0.0, 0.0, 0.0], t=np.pi / 4).round(12).tolist()
    [1.0, 0.5, 0.0]
    """

    amplitude: np.ndarray
    omega: np.ndarray
    phase: np.ndarray = 0.0

    def __post_init__(self):
        arrays = {name: finite(getattr(self, name), name) for name in ("amplitude", "omega", "phase")}
        try:
            np.broadcast_shapes(*(a.shape for a in arrays.values()))
        except ValueError:
            raise ParameterError(
                "`amplitude`, `omega` and `phase` of SinusoidalDisturbance must broadcast together; got "
                f"shapes {arrays['amplitude'].shape}, {arrays['omega'].shape}, {arrays['phase'].shape}."
            ) from None
        for name, arr in arrays.items():
            arr = arr.copy()
            arr.setflags(write=False)
            object.__setattr__(self, name, arr)

    @property
    def bound(self) -> float:
        return float(np.max(np.abs(self.amplitude))) if self.amplitude.size else 0.0

    def __call__(self, q, qd, t=0.0) -> np.ndarray:
        q = as_float_array(q, "q", ndim_min=1)
        t = as_float_array(t, "t")[..., None]
        wave = self.amplitude * np.sin(self.omega * t + self.phase)
        return np.broadcast_to(wave, np.broadcast_shapes(q.shape, wave.shape))

    def codegen_terms(self, n: int) -> SymbolicForm | None:
        """δQ_i = a_i sin(ω_i t + φ_i) for the code generator (:meth:`ForcedPlant.codegen`).

        Parameters
        ----------
        n : int
            Number of coordinates of the forced plant.

        Returns
        -------
        SymbolicForm or None
            Key ``"sinusoidal"``, values ``(a_1 … a_n, ω_1 … ω_n, φ_1 … φ_n)``;
            ``build(q, qd, t)`` gives ``(δQ (n × 1), params)`` with new Dummy parameters
            (they cannot clash with the plant's symbols). None when a, ω, φ do not
            broadcast to exactly (n,) (sampled amplitudes carry sample axes), or for a
            subclass that redefines ``__call__`` (its terms would not be these).
        """
        wave = None if _redefined(self, SinusoidalDisturbance) else _per_coordinate(n, self.amplitude, self.omega,
                                                                                        self.phase)
        return None if wave is None else SymbolicForm("sinusoidal", np.concatenate(wave),
                                                      functools.partial(_sinusoidal_terms, n))


@functools.lru_cache(maxsize=64)
def _noise_components(seed: int, components: int, cutoff: float, n: int):
    """``(ω, φ, w)``, each (components, n): coordinate i's from ``default_rng([seed, i])`` (so the first n
    coordinates are the same whatever n), ω uniform in (0, cutoff], φ in [0, 2π), weights in [0.5, 1) summing
    to 1 per coordinate."""
    omega, phase, weight = (np.empty((components, n)) for _ in range(3))
    for i in range(n):
        rng = np.random.default_rng([seed, i])
        omega[:, i] = cutoff * (1.0 - rng.random(components))
        phase[:, i] = 2 * np.pi * rng.random(components)
        w = 0.5 + 0.5 * rng.random(components)
        weight[:, i] = w / w.sum()
    for arr in (omega, phase, weight):
        arr.setflags(write=False)
    return omega, phase, weight


@dataclass(frozen=True, eq=False)
class BandLimitedDisturbance(Disturbance):
    """Seeded band-limited noise: ``δQ_i(t) = a_i Σ_k w_ik sin(ω_ik t + φ_ik)``, every ω_ik ≤ the cutoff.

    A sum of ``components`` sinusoids per coordinate with frequencies drawn uniform in (0, cutoff], phases
    uniform in [0, 2π) and weights in [0.5, 1) normalized to Σ_k w_ik = 1, all from ``seed`` (coordinate i
    from ``default_rng([seed, i])``). It is a fixed, smooth function of t — the same at every call, so
    adaptive integrators can retry steps — and ``|δQ_i(t)| ≤ |a_i|`` for every t exactly (Σ_k w_ik = 1),
    not only on a grid.

    Parameters
    ----------
    amplitude : float or array_like (..., n)
        a_i (N or N·m per coordinate), the bound D of each coordinate; a scalar applies to every coordinate.
    cutoff : float
        The highest frequency (rad/s, > 0).
    seed : int, default 0
        Seed of the frequencies, phases and weights (>= 0).
    components : int, default 16
        Sinusoids per coordinate (>= 1).

    Notes
    -----
    Why a sum of sinusoids and not filtered white noise clipped at D (docs/guide/uncertainty.md): a
    filtered sequence is a function of t only through interpolation of stored samples over a fixed
    horizon, and clipping puts corners into it (no longer band-limited, and the integrator must step
    through kinks). Here the bound holds by construction; the price is that the peak reached over a
    finite horizon is below D (with 16 components about 0.5–0.7 D over 50 s), so a
    test at the bound uses a step or a sinusoid.

    Examples
    --------
    >>> d = BandLimitedDisturbance(2.0, cutoff=5.0, seed=1)
    >>> t = np.linspace(0.0, 20.0, 2001)
    >>> bool(np.max(np.abs(d(np.zeros(3), np.zeros(3), t))) <= d.bound == 2.0)
    True
    """

    amplitude: np.ndarray
    cutoff: float
    seed: int = 0
    components: int = 16

    def __post_init__(self):
        _frozen(self, ("amplitude",))
        cutoff = as_float_array(self.cutoff, "cutoff")
        if cutoff.ndim != 0 or not np.isfinite(cutoff) or cutoff <= 0:
            raise ParameterError(f"`cutoff` of BandLimitedDisturbance must be a number > 0 (rad/s); got "
                                 f"{self.cutoff!r}.")
        object.__setattr__(self, "cutoff", float(cutoff))
        object.__setattr__(self, "seed", positive_int(self.seed, "seed", minimum=0))
        object.__setattr__(self, "components", positive_int(self.components, "components"))

    @property
    def bound(self) -> float:
        return float(np.max(np.abs(self.amplitude))) if self.amplitude.size else 0.0

    def __call__(self, q, qd, t=0.0) -> np.ndarray:
        q = as_float_array(q, "q", ndim_min=1)
        omega, phase, weight = _noise_components(self.seed, self.components, self.cutoff, q.shape[-1])
        t = as_float_array(t, "t")[..., None, None]
        wave = self.amplitude * np.sum(weight * np.sin(omega * t + phase), axis=-2)
        return np.broadcast_to(wave, np.broadcast_shapes(q.shape, wave.shape))

    def codegen_terms(self, n: int) -> SymbolicForm | None:
        """δQ_i = a_i Σ_k w_ik sin(ω_ik t + φ_ik) for the code generator (:meth:`ForcedPlant.codegen
        <robustrack.plants.ForcedPlant.codegen>`).

        Parameters
        ----------
        n : int
            Number of coordinates of the forced plant.

        Returns
        -------
        SymbolicForm or None
            Key ``"band-limited/<components>"``, values ``(a (n), ω, φ, w (components × n each, row-major))``: the
            seed and the cutoff are values, so another seed compiles nothing. None when the amplitude does not
            broadcast to exactly (n,) or for a subclass that redefines ``__call__``.
        """
        a = None if _redefined(self, BandLimitedDisturbance) else _per_coordinate(n, self.amplitude)
        if a is None:
            return None
        omega, phase, weight = _noise_components(self.seed, self.components, self.cutoff, n)
        return SymbolicForm(f"band-limited/{self.components}", np.concatenate([a[0], omega.ravel(), phase.ravel(),
                                                                               weight.ravel()]),
                            functools.partial(_band_limited_terms, n, self.components))


def _sinusoidal_terms(n: int, q, qd, t):
    """``(δQ, (a…, ω…, φ…))`` with ``δQ_i = a_i sin(ω_i t + φ_i)``, a, ω, φ new Dummy symbols."""
    import sympy as sp

    a, w, ph = ([sp.Dummy(f"{name}{i}", real=True) for i in range(n)] for name in ("a", "omega", "phase"))
    return sp.Matrix([a[i] * sp.sin(w[i] * t + ph[i]) for i in range(n)]), (*a, *w, *ph)


def _redefined(obj, cls) -> bool:
    """Whether ``obj``'s class redefines ``cls.__call__`` (then ``cls``'s terms are not its δQ: no form)."""
    return type(obj).__call__ is not cls.__call__


def _per_coordinate(n: int, *arrays):
    """``arrays`` broadcast to (n,) each, or None where they do not broadcast to exactly (n,) (sample axes)."""
    try:
        shape = np.broadcast_shapes(*(np.shape(a) for a in arrays), (n,))
    except ValueError:
        return None
    return None if shape != (n,) else [np.broadcast_to(a, (n,)) for a in arrays]


def _dummies(name: str, count: int, **assumptions) -> list:
    """``count`` new real Dummy symbols ``dQ_<name><i>`` (no plant parameter goes by such a name: the consumers that
    read a form's symbols by name, identification and fingerprints, never mistake one for a plant's)."""
    import sympy as sp

    return [sp.Dummy(f"dQ_{name}{i}", real=True, **assumptions) for i in range(count)]


def _step_terms(n: int, q, qd, t):
    """``(δQ, (a…, t₀))`` with ``δQ_i = a_i`` for ``t >= t₀``, else 0 (as :class:`StepDisturbance` evaluates it)."""
    import sympy as sp

    a, (t0,) = _dummies("a", n), _dummies("t_start", 1)
    return sp.Matrix([sp.Piecewise((a[i], t >= t0), (0, True)) for i in range(n)]), (*a, t0)


def _band_limited_terms(n: int, components: int, q, qd, t):
    """``(δQ, (a…, ω…, φ…, w…))`` with ``δQ_i = a_i Σ_k w_ki sin(ω_ki t + φ_ki)``, ω, φ, w row-major (k, i)."""
    import sympy as sp

    a = _dummies("a", n)
    omega, phase, weight = (_dummies(name, components * n) for name in ("omega", "phase", "w"))
    waves = [a[i] * sp.Add(*(weight[k * n + i] * sp.sin(omega[k * n + i] * t + phase[k * n + i])
                             for k in range(components))) for i in range(n)]
    return sp.Matrix(waves), (*a, *omega, *phase, *weight)


def _friction_terms(n: int, q, qd, t):
    """``(δQ, (b…, F_c…, v_s))`` with ``δQ_i = −b_i q̇_i − F_c,i tanh(q̇_i / v_s)`` (:class:`JointFriction`); its
    derivative in q̇_i, −b_i − F_c,i (1 − tanh²(q̇_i / v_s)) / v_s, is sympy's, exact (the BDF's Jacobian)."""
    import sympy as sp

    b, fc, (vs,) = _dummies("b", n), _dummies("F_c", n), _dummies("v_s", 1, positive=True)
    return sp.Matrix([-b[i] * qd[i] - fc[i] * sp.tanh(qd[i] / vs) for i in range(n)]), (*b, *fc, vs)


@dataclass(frozen=True, eq=False)
class FunctionDisturbance(Disturbance):
    """A user callable ``func(q, qd, t) -> (..., n)`` with a declared bound.

    Parameters
    ----------
    func : callable
        The perturbation δQ(q, q̇, t). Must accept batched ``q``, ``qd`` of shape
        (..., n) and ``t`` broadcasting against their batch axes.
    bound : float
        The user's bound on ``‖δQ‖∞`` (>= 0, ``math.inf`` allowed). It is
        enforced: every call whose output exceeds it raises :class:`ParameterError`
        (a Γ computed from a violated bound would be wrong without warning).

    Examples
    --------
    >>> d = FunctionDisturbance(lambda q, qd, t: -0.1 * np.tanh(qd), bound=0.1)
    >>> float(np.max(np.abs(d([0.0, 0.0], [5.0, -5.0], 0.0)))) <= d.bound
    True
    """

    func: Callable
    bound: float = math.inf

    def __post_init__(self):
        if not callable(self.func):
            raise ParameterError(f"`func` of FunctionDisturbance must be callable; got {self.func!r}.")
        b = as_float_array(self.bound, "bound")
        if b.ndim != 0 or np.isnan(b) or b < 0:
            raise ParameterError(f"`bound` must be a number >= 0 (math.inf allowed); got {self.bound!r}.")
        object.__setattr__(self, "bound", float(b))

    def __call__(self, q, qd, t=0.0) -> np.ndarray:
        out = as_float_array(self.func(q, qd, t), "func(q, qd, t)", ndim_min=1)
        peak = float(np.max(np.abs(out))) if out.size else 0.0
        if not np.isfinite(peak) or peak > self.bound * (1 + 1e-12):
            raise ParameterError(
                f"The disturbance exceeded its declared `bound` {self.bound:g}: ‖δQ‖∞ reached {peak:g}. "
                "Declare a larger bound (it feeds Γ) or fix the function."
            )
        return out


@dataclass(frozen=True, eq=False)
class JointFriction(Disturbance):
    """Joint friction the nominal model leaves out: ``δQ_i = −b_i q̇_i − F_c,i tanh(q̇_i / v_s)``.

    Added to the actual plant's given forces (``actual_plant(nominal, dQ=JointFriction(...))``), it enters δQ,
    so the Γ Monte Carlo (:func:`estimate_gamma`, ``dQ=``) and the closed-loop campaigns see it
    (docs/guide/uncertainty.md).

    Parameters
    ----------
    viscous : float or array_like (..., n), default 0
        b_i >= 0 (N·m·s/rad or N·s/m); leading axes (one value per sample) broadcast against q's batch axes.
    coulomb : float or array_like (..., n), default 0
        F_c,i >= 0 (N·m or N).
    smoothing : float, default 1e-3
        v_s > 0, the velocity over which the Coulomb force turns (tanh: 76 % of F_c at |q̇| = v_s, 99.9 % at
        4 v_s). It replaces the stick-slip jump by a smooth right-hand side the integrators can step through;
        the slope F_c / v_s at q̇ = 0 makes the system stiff for small v_s (steps shrink near velocity reversals;
        a stiff method or a larger v_s helps). Sticking is not modelled: a joint at rest creeps under load.

    Notes
    -----
    ``bound`` is ``max F_c`` when there is no viscous term, else ``inf`` (b q̇ grows with the velocity).

    Examples
    --------
    >>> f = JointFriction(viscous=0.5, coulomb=2.0, smoothing=0.01)
    >>> f([0.0], [1.0]).round(6).tolist()
    [-2.5]
    """

    viscous: np.ndarray = 0.0
    coulomb: np.ndarray = 0.0
    smoothing: float = 1e-3

    def __post_init__(self):
        for name in ("viscous", "coulomb"):
            arr = finite(getattr(self, name), name).copy()
            if np.any(arr < 0):
                raise ParameterError(f"`{name}` of JointFriction must be >= 0 (friction opposes the motion); got "
                                     f"{getattr(self, name)!r}.")
            arr.setflags(write=False)
            object.__setattr__(self, name, arr)
        v = as_float_array(self.smoothing, "smoothing")
        if v.ndim != 0 or not np.isfinite(v) or v <= 0:
            raise ParameterError(f"`smoothing` (v_s) of JointFriction must be a number > 0 (a velocity); got "
                                 f"{self.smoothing!r}.")
        object.__setattr__(self, "smoothing", float(v))

    @property
    def bound(self) -> float:
        if np.any(self.viscous > 0):
            return math.inf
        return float(np.max(self.coulomb)) if self.coulomb.size else 0.0

    def __call__(self, q, qd, t=0.0) -> np.ndarray:
        qd = as_float_array(qd, "qd", ndim_min=1)
        return -self.viscous * qd - self.coulomb * np.tanh(qd / self.smoothing)

    def codegen_terms(self, n: int) -> SymbolicForm | None:
        """δQ_i = −b_i q̇_i − F_c,i tanh(q̇_i / v_s) for the code generator (:meth:`ForcedPlant.codegen
        <robustrack.plants.ForcedPlant.codegen>`).

        Parameters
        ----------
        n : int
            Number of coordinates of the forced plant.

        Returns
        -------
        SymbolicForm or None
            Key ``"friction"``, values ``(b_1 … b_n, F_c,1 … F_c,n, v_s)``: every coefficient a value, so one
            compiled structure serves a campaign's friction samples. None when the coefficients do not broadcast to
            exactly (n,) (sampled coefficients carry sample axes) or for a subclass that redefines ``__call__``.
        """
        coef = None if _redefined(self, JointFriction) else _per_coordinate(n, self.viscous, self.coulomb)
        return None if coef is None else SymbolicForm("friction", np.concatenate([*coef, [self.smoothing]]),
                                                      functools.partial(_friction_terms, n))


def friction_coefficient(name: str, coordinates):
    """Which friction coefficient a name is: ``viscous_<joint>`` or ``coulomb_<joint>`` (the names of
    :attr:`ActualForces.parameters`) → ``(kind, joint index)``; None for any other name.

    Parameters
    ----------
    name : str
    coordinates : sequence of str
        The joints' names.

    Returns
    -------
    (str, int) or None
        ``kind`` is ``"viscous"`` or ``"coulomb"`` (a :class:`JointFriction` field).

    Examples
    --------
    >>> friction_coefficient("coulomb_theta2", ("theta1", "theta2")), friction_coefficient("m2", ("theta1",))
    (('coulomb', 1), None)
    """
    kind, _, joint = name.partition("_")
    coordinates = list(coordinates)
    return (kind, coordinates.index(joint)) if kind in ("viscous", "coulomb") and joint in coordinates else None


@dataclass(frozen=True, eq=False)
class ActualForces:
    """The given forces the actual plant adds: joint friction with uncertain coefficients, and a disturbance.

    One object for a scenario's run (:meth:`given`), a campaign's samples (called as a
    :class:`~robustrack.campaigns.ParameterUncertainty` ``disturbance`` family, one draw per sample) and the
    Γ Monte Carlo (:meth:`batch`, the same draws with a sample axis); docs/guide/uncertainty.md.

    Parameters
    ----------
    friction : JointFriction, optional
        The friction at its given (central) coefficients.
    spread : float, default 0
        Relative half-width in [0, 1] of each friction coefficient: a sample's viscous and Coulomb
        coefficients are ``c (1 + spread U(−1, 1))``, one draw per entry (per joint when the coefficients
        are per joint), viscous first. 0: the friction is known.
    disturbance : Disturbance, optional
        A force that does not depend on the sample (e.g. :class:`StepDisturbance`,
        :class:`BandLimitedDisturbance`), added to every sample's friction.
    coordinates : sequence of str, optional
        The joints' names: each friction coefficient is then a named number, ``viscous_<joint>`` and
        ``coulomb_<joint>`` (:attr:`parameters`), that a set of named uncertain parameters may vary
        (:meth:`at`; a campaign's :class:`~robustrack.campaigns.ParameterUncertainty` draws them with the
        plant's, docs/guide/uncertainty.md). Not with ``spread`` > 0 (the coefficients would be drawn twice).

    Examples
    --------
    >>> forces = ActualForces(JointFriction(viscous=[1.0, 2.0]), spread=0.5, disturbance=StepDisturbance(2.0))
    >>> d = forces.draw(np.random.default_rng(0))
    >>> bool(np.all((0.5 <= d.terms[0].viscous / [1.0, 2.0]) & (d.terms[0].viscous / [1.0, 2.0] <= 1.5)))
    True
    """

    friction: JointFriction | None = None
    spread: float = 0.0
    disturbance: Disturbance | None = None
    coordinates: tuple = ()

    def __post_init__(self):
        if self.friction is not None and not isinstance(self.friction, JointFriction):
            raise ParameterError(f"`friction` of ActualForces must be a JointFriction; got {self.friction!r}.")
        if self.disturbance is not None and not isinstance(self.disturbance, Disturbance):
            raise ParameterError(f"`disturbance` of ActualForces must be a Disturbance; got {self.disturbance!r}.")
        spread = as_float_array(self.spread, "spread")
        if spread.ndim != 0 or not 0 <= spread <= 1:
            raise ParameterError(f"`spread` of ActualForces must be a number in [0, 1] (0.5 = ±50 % of each "
                                 f"friction coefficient); got {self.spread!r}.")
        object.__setattr__(self, "spread", float(spread))
        names = (self.coordinates,) if isinstance(self.coordinates, str) else tuple(self.coordinates)
        if names and not all(isinstance(c, str) and c for c in names):
            raise ParameterError(f"`coordinates` of ActualForces must be the joints' names; got {self.coordinates!r}.")
        object.__setattr__(self, "coordinates", names)
        if names:
            if self.friction is None:
                raise ParameterError("ActualForces names its friction coefficients (`coordinates`) but has no "
                                     "`friction`: give a JointFriction (zero coefficients are allowed).")
            for key in ("viscous", "coulomb"):
                size = getattr(self.friction, key).size
                if getattr(self.friction, key).ndim > 1 or size not in (1, len(names)):
                    raise ParameterError(f"the friction's `{key}` must be one number or one per joint "
                                         f"{list(names)}; got shape {getattr(self.friction, key).shape}.")
            if self.spread:
                raise ParameterError("ActualForces with named friction coefficients (`coordinates`) takes no "
                                     f"`spread` ({self.spread:g}): the named parameters give each coefficient its "
                                     "own range; set spread = 0.")

    @property
    def parameters(self) -> dict:
        """The friction coefficients as named numbers, ``{viscous_<joint>: b, …, coulomb_<joint>: F_c, …}`` (empty
        without ``coordinates``).

        Returns
        -------
        dict of str to float
        """
        if not self.coordinates:
            return {}
        n = len(self.coordinates)
        out = {}
        for key in ("viscous", "coulomb"):
            values = np.broadcast_to(getattr(self.friction, key).reshape(-1), (n,))
            out.update({f"{key}_{c}": float(v) for c, v in zip(self.coordinates, values)})
        return out

    def at(self, values: dict) -> Disturbance | None:
        """δQ with the named friction coefficients at ``values`` (the others as given), plus the disturbance.

        Parameters
        ----------
        values : dict of str to float or array_like (N,)
            Names of :attr:`parameters`; arrays of N samples give coefficients of shape (N, 1, n), to broadcast
            against (samples, times, coordinates) as :func:`estimate_gamma`'s ``dQ`` does.

        Returns
        -------
        Disturbance or None

        Raises
        ------
        ParameterError
            A name that is not one of :attr:`parameters`, or a negative coefficient.
        """
        given = self.parameters
        unknown = [name for name in values if name not in given]
        if unknown:
            raise ParameterError(f"`{unknown[0]}` is not a friction coefficient of the actual plant; they are "
                                 f"{list(given)}.")
        if not values:
            return self.given()
        n = len(self.coordinates)
        samples = {np.shape(v)[0] for v in values.values() if np.ndim(v) == 1}
        if len(samples) > 1 or any(np.ndim(v) > 1 for v in values.values()):
            raise ParameterError("the values of the friction coefficients must be numbers, or arrays (N,) of one "
                                 f"length N; got shapes {[np.shape(v) for v in values.values()]}.")
        shape = (samples.pop(), 1, n) if samples else (n,)
        coef = {}
        for key in ("viscous", "coulomb"):
            arr = np.array(np.broadcast_to(getattr(self.friction, key).reshape(-1), (n,)) * np.ones(shape))
            for j, c in enumerate(self.coordinates):
                name = f"{key}_{c}"
                if name in values:
                    arr[..., j] = np.reshape(np.asarray(values[name], dtype=float), (-1, 1)) if len(shape) == 3 \
                        else float(values[name])
            coef[key] = arr
        f = self.friction
        return self._with(JointFriction(coef["viscous"], coef["coulomb"], f.smoothing))

    @property
    def deterministic(self) -> bool:
        """True when every sample gets the same δQ (no friction spread): a worst-case search may use it."""
        return self.friction is None or self.spread == 0

    def _with(self, friction) -> Disturbance | None:
        if friction is not None and not (np.any(friction.viscous) or np.any(friction.coulomb)):
            friction = None  # zero coefficients (a named coefficient's nominal 0): no force, the plant stays as it is
        terms = [d for d in (friction, self.disturbance) if d is not None]
        return None if not terms else terms[0] if len(terms) == 1 else SumDisturbance(tuple(terms))

    def given(self) -> Disturbance | None:
        """δQ at the given coefficients (the scenario's run; a worst-case search).

        Returns
        -------
        Disturbance or None
            Friction plus disturbance (None: neither).
        """
        return self._with(self.friction)

    def _factors(self, rng) -> tuple[np.ndarray, np.ndarray]:
        f = self.friction
        return (1 + self.spread * rng.uniform(-1, 1, f.viscous.shape),
                1 + self.spread * rng.uniform(-1, 1, f.coulomb.shape))

    def draw(self, rng) -> Disturbance | None:
        """One sample's δQ: friction coefficients drawn from ``rng`` (:class:`numpy.random.Generator`).

        Parameters
        ----------
        rng : numpy.random.Generator

        Returns
        -------
        Disturbance or None
        """
        if self.deterministic:
            return self.given()
        a, b = self._factors(rng)
        f = self.friction
        return self._with(JointFriction(f.viscous * a, f.coulomb * b, f.smoothing))

    def __call__(self, rng, dm=None) -> Disturbance | None:
        """:meth:`draw` (the ``disturbance(rng, dm)`` protocol of a campaign's uncertainty; ``dm`` unused)."""
        return self.draw(rng)

    def batch(self, n: int, seed: int) -> Disturbance | None:
        """δQ of samples 0 … n−1 with a sample axis: sample i's coefficients are :meth:`draw`'s with
        ``default_rng([seed, i])`` (as a campaign draws sample i), shaped (n, 1, k) to broadcast against
        (samples, times, coordinates).

        Parameters
        ----------
        n : int
            Number of samples.
        seed : int
            The campaign's seed.

        Returns
        -------
        Disturbance or None
        """
        if self.deterministic:
            return self.given()
        draws = [self._factors(np.random.default_rng([seed, i])) for i in range(positive_int(n, "n"))]
        f = self.friction

        def stacked(coef, k):
            return (coef * np.stack([d[k] for d in draws])).reshape(n, 1, -1)

        return self._with(JointFriction(stacked(f.viscous, 0), stacked(f.coulomb, 1), f.smoothing))

    def describe(self) -> dict:
        """A JSON-ready description (what a campaign's store records).

        Returns
        -------
        dict
            ``viscous``, ``coulomb``, ``smoothing``, ``spread`` and the disturbance's type and bound.
        """
        f, d = self.friction, self.disturbance
        doc = {"viscous": None if f is None else f.viscous.tolist(), "coulomb": None if f is None else f.coulomb.tolist(),
               "smoothing": None if f is None else f.smoothing, "spread": self.spread,
               "disturbance": None if d is None else {"type": type(d).__name__, "bound": d.bound}}
        if self.coordinates:
            doc["named"] = True  # the coefficients are named parameters (a campaign's set varies them)
        return doc


# --------------------------------------------------------------------------- #
# the actual plant
# --------------------------------------------------------------------------- #
def actual_plant(nominal: Plant, *, dm=None, parameter="m", params: dict | None = None, dQ=None) -> Plant:
    """Nominal + δ → actual: the one place an actual plant is made from its nominal one and the uncertainty.

    ``p + δ`` for the parameter(s) named by ``parameter``, ``params`` replaced as given, then δQ(q, q̇, t)
    added (W 5.3.1: M_a = M + δM, Q_a = Q + δQ; docs/theory/triple-pendulum.md). The scenarios
    (``uncertainty.dm``), the campaigns' samples and the Γ Monte Carlo's user plants all come from here.

    Parameters
    ----------
    nominal : Plant
    dm : array_like, optional
        Additive change δ of the parameter(s) ``parameter`` (W's δm), e.g. ``(0.1, -0.2, 0.3)`` kg: the
        actual masses are ``nominal.m + dm``; one value per value of :func:`parameter_values`.
    parameter : str or sequence of str
        What ``dm`` shifts (default ``"m"``): one parameter (a number, or 1-D per body), or several
        numbers, one δ each, in the order named (as :func:`estimate_gamma` samples them).
    params : dict, optional
        Parameters to replace, e.g. ``{"m": [1.1, 1.8, 3.3]}`` or ``{"g": 9.8}``.
    dQ : callable, optional
        Additive given-force perturbation (a :class:`Disturbance` or ``dQ(q, qd, t)``).

    Returns
    -------
    Plant
        ``nominal.replace(...)``, wrapped in :class:`ForcedPlant` if ``dQ`` is given.

    Raises
    ------
    ParameterError
        ``dm`` and ``params`` both set a parameter, a parameter the plant lacks, or ``dm`` of the wrong
        length.

    Examples
    --------
    >>> from robustrack.plants import triple_pendulum
    >>> actual_plant(triple_pendulum(), dm=(0.1, -0.2, 0.3)).m.tolist()
    [1.1, 1.8, 3.3]
    """
    changes = dict(params or {})
    if dm is not None:
        names = (parameter,) if isinstance(parameter, str) else tuple(parameter)
        owners = {name: _components(nominal, [name]).get(name, (name,))[0] for name in names}
        both = [name for name in names if owners[name] in changes]
        if both:
            raise ParameterError(f"Give either `dm` or `params['{owners[both[0]]}']`, not both.")
        if len(names) == 1 and names[0] not in nominal.params and names[0] not in _components(nominal, names):
            raise ParameterError(
                f"`dm` perturbs the parameter `{names[0]}`, but {type(nominal).__name__} has no `{names[0]}`; "
                f"its parameters are {sorted(nominal.params)}{_component_hint(nominal)}. Use `params=` instead."
            )
        _, k, scalar = _parameter_names(nominal, parameter)
        delta = finite(dm, "dm").reshape(-1)
        if delta.size != k:
            raise ParameterError(f"`dm` must have {k} value(s), one per value of `{', '.join(names)}`; got "
                                 f"{delta.size}.")
        values = parameter_values(nominal, parameter).reshape(-1) + delta
        if len(names) > 1 or names[0] not in nominal.params:
            changes.update(parameter_replacements(nominal, names, [float(v) for v in values]))
        else:
            changes[names[0]] = float(values[0]) if scalar else tuple(values)
    plant = nominal.replace(**changes) if changes else nominal
    return plant if dQ is None else ForcedPlant(plant, dQ)


# --------------------------------------------------------------------------- #
# sampling parameters
# --------------------------------------------------------------------------- #
@dataclass(frozen=True, eq=False)
class ParameterSamples:
    """Sampled parameter values and how they were drawn (for reproducibility).

    Attributes
    ----------
    values : ndarray (N, k)
        The draws, one row per sampled plant (k = 1 for a scalar parameter).
    nominal : ndarray (k,)
        The nominal value the draws perturb.
    kind : str
        ``"uniform"``, ``"normal"`` or ``"callable"``.
    spread : float or ndarray (k,) or None
        Relative spread (``None`` for a user sampler).
    seed : int
        Seed of the ``numpy.random.Generator`` (``default_rng(seed)``) that drew them.
    """

    values: np.ndarray
    nominal: np.ndarray
    kind: str
    spread: float | np.ndarray | None
    seed: int

    def __len__(self) -> int:
        return self.values.shape[0]

    def __array__(self, dtype=None, copy=None):
        return np.asarray(self.values, dtype=dtype)

    @property
    def deltas(self) -> np.ndarray:
        """``values − nominal``, shape (N, k): the sampled δ (e.g. δm)."""
        return self.values - self.nominal


def _check_spread(spread, k: int) -> float | np.ndarray:
    arr = as_float_array(spread, "spread")
    if arr.ndim > 1 or (arr.ndim == 1 and arr.shape[0] != k):
        raise ParameterError(f"`spread` must be a number or have shape ({k},); got shape {arr.shape}.")
    if not np.all(np.isfinite(arr)) or np.any(arr < 0):
        raise ParameterError(f"`spread` must be finite and >= 0 (a relative spread, 0.1 = ±10 %); got {spread!r}.")
    return float(arr) if arr.ndim == 0 else arr


#: Bytes one sample of a Γ Monte Carlo holds per uncertain parameter (its uniform draw, value
#: and δ) and on its own (the exact, first-order and bound maxima and bookkeeping).
_GAMMA_BYTES_PER_PARAMETER, _GAMMA_BYTES_PER_SAMPLE = 24, 32

#: Bytes one sample holds when the draws are streamed (:class:`SampleStream`): its three maxima.
_GAMMA_BYTES_STREAMED = 24

#: Above this estimate a Γ Monte Carlo says how much memory it will hold before it starts (GiB).
LARGE_MONTE_CARLO_GIB = 0.5


class LargeMonteCarlo(UserWarning):
    """A Γ Monte Carlo will hold more than :data:`LARGE_MONTE_CARLO_GIB` GiB (said before it starts)."""


def check_sample_count(n, k: int, name: str = "n", *, notice: bool = True, streamed: bool = False) -> int:
    """Validate a Γ Monte Carlo's number of samples: an integer >= 1 whose draws fit in memory.

    Parameters
    ----------
    n : int
        The number of sampled plants.
    k : int
        Uncertain parameters per sample.
    name : str
        The argument as the user typed it (``"n"``, ``"--samples"``).
    notice : bool
        Above :data:`LARGE_MONTE_CARLO_GIB` GiB, say how much will be held with a
        :class:`LargeMonteCarlo` warning (keyword-only; once per run).
    streamed : bool
        The draws are made block by block (:class:`SampleStream`): only the three
        per-sample maxima are held, 24 bytes a sample, not the draws (keyword-only).

    Returns
    -------
    int

    Raises
    ------
    ParameterError
        Not an integer >= 1, or more than half of the available memory needed (said
        before anything is drawn).
    """
    n = positive_int(n, name, what="number of samples")
    need = n * (_GAMMA_BYTES_STREAMED if streamed else _GAMMA_BYTES_PER_SAMPLE + _GAMMA_BYTES_PER_PARAMETER * k)
    check_memory(need, name, n, advice="Run fewer samples (the quantiles of 10⁴–10⁵ samples are already "
                 "stable), or several seeds one after another.")
    if notice and need > LARGE_MONTE_CARLO_GIB * 2**30:
        held = ("per-sample maxima (exact, first order, bound; the draws are made block by block)" if streamed
                else "draws and maxima")
        warnings.warn(f"`{name}` = {n}: the Γ Monte Carlo will hold about {need / 2**30:.1f} GiB of {held}.",
                      LargeMonteCarlo, stacklevel=3)
    return n


def check_gamma_settings(quantile, margin, names=("quantile", "margin")) -> tuple[float, float]:
    """Validate the quantile and margin of Γ′ = margin × quantile (before any work).

    Parameters
    ----------
    quantile : float
        In (0, 1].
    margin : float
        Finite, >= 1.
    names : (str, str)
        Their names as the user typed them (``("--quantile", "--margin")`` on the CLI).

    Returns
    -------
    (float, float)
    """
    quantile_ = as_float_array(quantile, names[0])
    if quantile_.ndim != 0 or not 0 < quantile_ <= 1:
        raise ParameterError(f"`{names[0]}` must be a number in (0, 1]; got {quantile!r}.")
    margin_ = as_float_array(margin, names[1])
    if margin_.ndim != 0 or not np.isfinite(margin_) or margin_ < 1:
        raise ParameterError(f"`{names[1]}` must be a finite number >= 1 (Γ′ must exceed Γ); got {margin!r}.")
    return float(quantile_), float(margin_)


def sample_parameters(
    nominal_value,
    n: int,
    *,
    spread=None,
    kind: str = "uniform",
    seed: int | None = None,
    sampler: Callable | None = None,
    positive: bool = True,
) -> ParameterSamples:
    """Draw ``n`` values of a plant parameter around its nominal value.

    Parameters
    ----------
    nominal_value : float or array_like (k,)
        The nominal parameter (e.g. ``plant.m``).
    n : int
        Number of samples (>= 1).
    spread : float or array_like (k,)
        Relative spread s >= 0 (0.1 = 10 %):

        * ``kind="uniform"``: ``value = nominal + s |nominal| U(−1, 1)`` (W 7.3's
          "±10 % of each mass");
        * ``kind="normal"``: ``value = nominal + s |nominal| N(0, 1)``.
    kind : {"uniform", "normal"}
        Ignored when ``sampler`` is given.
    seed : int, optional
        Seed of ``numpy.random.default_rng``; ``None`` draws a fresh one from the
        OS. Either way it is recorded in the result so the draws can be repeated.
    sampler : callable, optional
        ``sampler(rng, n) -> (n, k)`` array of parameter VALUES (not deltas).
    positive : bool, default True
        The parameter must stay > 0 (masses). Draws that break this are refused
        with :class:`ParameterError`, never silently resampled (resampling would
        change the distribution to a truncated one). ``kind="uniform"`` with
        ``spread >= 1`` is refused up front.

    Returns
    -------
    ParameterSamples
        ``values`` of shape (n, k) plus nominal, kind, spread, seed.

    Examples
    --------
    >>> s = sample_parameters([1.0, 2.0, 3.0], 4, spread=0.1, seed=0)
    >>> s.values.shape, bool(np.all(np.abs(s.deltas) <= 0.1 * s.nominal))
    ((4, 3), True)
    """
    nominal = _nominal_value(nominal_value, positive)
    k = nominal.shape[0]
    n = check_sample_count(n, k, "n")
    seed = _seed(seed)
    rng = np.random.default_rng(seed)

    if sampler is not None:
        if not callable(sampler):
            raise ParameterError(f"`sampler` must be callable sampler(rng, n) -> (n, k); got {sampler!r}.")
        kind, spread = "callable", None if spread is None else _check_spread(spread, k)
        values = as_float_array(sampler(rng, n), "sampler(rng, n)")
        if values.shape == (n,) and k == 1:
            values = values[:, None]
        if values.shape != (n, k):
            raise ParameterError(f"`sampler(rng, n)` must return shape ({n}, {k}); got {values.shape}.")
        if not np.all(np.isfinite(values)):
            raise ParameterError("`sampler(rng, n)` returned non-finite values.")
    else:
        spread = _builtin_spread(kind, spread, k, positive)
        values = _draw(rng, nominal, spread, kind, n)

    if positive:
        _refuse_nonpositive(values, kind, spread, seed)
    values = np.ascontiguousarray(values, dtype=float)
    values.setflags(write=False)
    nominal.setflags(write=False)
    return ParameterSamples(values=values, nominal=nominal, kind=kind, spread=spread, seed=seed)


def _nominal_value(nominal_value, positive: bool) -> np.ndarray:
    """The nominal value as a fresh (k,) array, checked (finite, at most 1-D, > 0 when ``positive``)."""
    nominal = finite(nominal_value, "nominal_value")
    if nominal.ndim > 1:
        raise ParameterError(f"`nominal_value` must be a number or a 1-D array; got shape {nominal.shape}.")
    nominal = np.atleast_1d(nominal).copy()
    if positive and np.any(nominal <= 0):
        raise ParameterError(f"`nominal_value` must be > 0 (positive=True); got {nominal_value!r}.")
    return nominal


def _seed(seed) -> int:
    """The seed as given (an integer >= 0), or a fresh one from the OS for None."""
    return int(np.random.SeedSequence().entropy) if seed is None else positive_int(seed, "seed", minimum=0)


def _builtin_spread(kind: str, spread, k: int, positive: bool):
    """The checked spread of a built-in sampling kind."""
    if kind not in SAMPLING_KINDS:
        raise ParameterError(f"`kind` must be one of {list(SAMPLING_KINDS)} (or give `sampler`); got {kind!r}.")
    if spread is None:
        raise ParameterError(f"`spread` is required for kind={kind!r} (a relative spread, 0.1 = ±10 %).")
    spread = _check_spread(spread, k)
    if kind == "uniform" and positive and np.any(np.asarray(spread) >= 1):
        raise ParameterError(
            f"kind='uniform' with `spread` >= 1 can make a positive parameter <= 0; got spread {spread!r}. "
            "Use spread < 1."
        )
    return spread


def _draw(rng, nominal, spread, kind: str, n: int) -> np.ndarray:
    """``n`` rows of a built-in kind from ``rng``. Drawing n₁ rows and then n₂ gives the same numbers as
    n₁ + n₂ at once (the generator's stream is consumed value by value, row after row)."""
    unit = rng.uniform(-1.0, 1.0, (n, nominal.shape[0])) if kind == "uniform" else \
        rng.standard_normal((n, nominal.shape[0]))
    return nominal + np.asarray(spread) * np.abs(nominal) * unit


def _refuse_nonpositive(values, kind, spread, seed) -> None:
    bad = values <= 0
    if np.any(bad):
        raise ParameterError(
            f"{int(bad.sum())} of {values.size} sampled values are <= 0 (kind={kind!r}, spread={spread!r}, "
            f"seed={seed}); the parameter must stay positive. Use a smaller spread or kind='uniform' "
            "(draws are refused, not resampled, so the stated distribution is the one used)."
        )


@dataclass(frozen=True, eq=False)
class SampleStream:
    """The draws of :func:`sample_parameters` (built-in kinds), made block by block when used.

    :func:`estimate_gamma` draws one block of samples, evaluates it and keeps only its
    per-sample maxima, so memory does not grow with the draws (8·k bytes a sample). The
    values are bit-identical to ``sample_parameters(nominal, n, spread=..., kind=...,
    seed=...).values``. Made by :func:`sample_stream`.

    Attributes
    ----------
    nominal : ndarray (k,)
    n : int
    kind : str
        ``"uniform"`` or ``"normal"``.
    spread : float or ndarray (k,)
    seed : int
    positive : bool
    """

    nominal: np.ndarray
    n: int
    kind: str
    spread: float | np.ndarray
    seed: int
    positive: bool = True

    def __len__(self) -> int:
        return self.n

    def blocks(self, size: int):
        """Yield the draws in blocks of ``size`` rows (the last may be shorter).

        Parameters
        ----------
        size : int
            Rows per block (>= 1).

        Yields
        ------
        ndarray (rows, k)
        """
        size = positive_int(size, "size")
        rng = np.random.default_rng(self.seed)
        for start in range(0, self.n, size):
            values = np.ascontiguousarray(_draw(rng, self.nominal, self.spread, self.kind,
                                                min(size, self.n - start)), dtype=float)
            if self.positive:
                _refuse_nonpositive(values, self.kind, self.spread, self.seed)
            yield values

    def __array__(self, dtype=None, copy=None):
        """All the draws at once, (n, k) (memory grows with n)."""
        return np.asarray(np.concatenate(list(self.blocks(max(1, min(self.n, 2**16))))), dtype=dtype)


def sample_stream(nominal_value, n: int, *, spread, kind: str = "uniform", seed: int | None = None,
                  positive: bool = True) -> SampleStream:
    """Draws like :func:`sample_parameters`, made block by block when used (a Γ Monte Carlo of any size).

    Parameters
    ----------
    nominal_value : float or array_like (k,)
        The nominal parameter.
    n : int
        Number of samples (>= 1; memory is checked for 24 bytes a sample, the maxima
        :func:`estimate_gamma` keeps).
    spread : float or array_like (k,)
        Relative spread, as in :func:`sample_parameters`.
    kind : {"uniform", "normal"}
        As in :func:`sample_parameters`.
    seed : int, optional
        Seed of ``numpy.random.default_rng``; None draws one from the OS (recorded).
    positive : bool, default True
        Refuse draws <= 0 (checked block by block, before the block is used).

    Returns
    -------
    SampleStream
    """
    nominal = _nominal_value(nominal_value, positive)
    n = check_sample_count(n, nominal.shape[0], "n", streamed=True)
    spread = _builtin_spread(kind, spread, nominal.shape[0], positive)
    nominal.setflags(write=False)
    return SampleStream(nominal=nominal, n=n, kind=kind, spread=spread, seed=_seed(seed), positive=positive)


# --------------------------------------------------------------------------- #
# δq: exact, first order, bound (pure array functions)
# --------------------------------------------------------------------------- #
def _max_last(a):
    """max over the last axis; for short axes an elementwise loop beats numpy's reduce."""
    if a.shape[-1] > _UNROLL_MAX:
        return np.max(a, axis=-1)
    out = a[..., 0].copy()
    for i in range(1, a.shape[-1]):
        np.maximum(out, a[..., i], out=out)
    return out


def _vec_norm(x):
    """‖x‖∞ over the last axis, shape (...)."""
    return _max_last(np.abs(x))


def _mat_norm(X):
    """Induced ∞-norm (max absolute row sum), shape (...)."""
    A = np.abs(X)
    rows = np.sum(A, axis=-1) if A.shape[-1] > _UNROLL_MAX else sum(A[..., j] for j in range(A.shape[-1]))
    return _max_last(rows)


def _not_pd(where: str) -> MassMatrixError:
    return MassMatrixError(
        f"The {where} mass matrix must be positive definite (finite, with a Cholesky factor) to "
        "evaluate δq; Γ needs M⁻¹ (W 5.3.5). For a singular M use the augmented system of W ch. 4."
    )


def _inverse(M, where: str) -> np.ndarray:
    """M⁻¹ for symmetric positive definite M, checked by a Cholesky factorization."""
    try:
        np.linalg.cholesky(M)
        return np.linalg.inv(M)
    except np.linalg.LinAlgError:
        raise _not_pd(where) from None


def _spd_solve(M, r, where: str) -> np.ndarray:
    """Solve ``M x = r`` for symmetric positive definite ``M (..., n, n)``, batched.

    For n <= ``_UNROLL_MAX`` the Cholesky factorization and the two triangular
    solves are unrolled over matrix entries: each step is one numpy operation over
    the whole batch (several times faster than ``numpy.linalg.solve``'s per-matrix
    LAPACK calls for 3 × 3 blocks of a million). Only the lower triangle is read.
    """
    n = M.shape[-1]
    if n > _UNROLL_MAX:
        try:
            np.linalg.cholesky(M)
            return np.linalg.solve(M, r[..., None])[..., 0]
        except np.linalg.LinAlgError:
            raise _not_pd(where) from None
    L = [[None] * n for _ in range(n)]
    for j in range(n):
        d = M[..., j, j] - sum(L[j][k] ** 2 for k in range(j))
        if not np.all(d > 0):
            raise _not_pd(where)
        L[j][j] = np.sqrt(d)
        for i in range(j + 1, n):
            L[i][j] = (M[..., i, j] - sum(L[i][k] * L[j][k] for k in range(j))) / L[j][j]
    y = []
    for i in range(n):
        y.append((r[..., i] - sum(L[i][k] * y[k] for k in range(i))) / L[i][i])
    x = [None] * n
    for i in reversed(range(n)):
        x[i] = (y[i] - sum(L[k][i] * x[k] for k in range(i + 1, n))) / L[i][i]
    return np.stack(np.broadcast_arrays(*x), axis=-1)


def _matvec(X, v):
    return np.einsum("...ij,...j->...i", X, v)


@dataclass(frozen=True)
class _Nominal:
    """Nominal-only terms at a set of states: M, M⁻¹, Q, F = Q + Qᶜ, q̈ = M⁻¹ F."""

    M: np.ndarray
    Minv: np.ndarray
    Q: np.ndarray
    F: np.ndarray
    qdd: np.ndarray

    @classmethod
    def of(cls, M, Q, Qc):
        M = np.asarray(M, dtype=float)
        Q = np.asarray(Q, dtype=float)
        Minv = _inverse(M, "nominal")
        F = Q + np.asarray(Qc, dtype=float)
        return cls(M, Minv, Q, F, _matvec(Minv, F))

    def __getitem__(self, index) -> "_Nominal":
        """The terms at a subset of the states (index on the leading batch axis)."""
        return _Nominal(*(getattr(self, f.name)[index] for f in dataclasses.fields(self)))

    def terms(self, M_a, Q_a):
        """δM, δQ and the common right-hand side r = δQ − δM q̈."""
        dM = M_a - self.M
        dQ = Q_a - self.Q
        return dM, dQ, dQ - _matvec(dM, self.qdd)

    def exact(self, M_a, r):
        """W (5.3.5) at q_c = q: M_a⁻¹ r."""
        return _spd_solve(M_a, r, "actual")

    def first_order(self, r):
        """W (5.3.10) (docs/theory/nominal-actual.md form): M⁻¹ r."""
        return _matvec(self.Minv, r)

    def bound(self, dM, dQ):
        """W (5.3.11): ‖M⁻¹‖ (‖δM‖ ‖M⁻¹‖ ‖Q + Qᶜ‖ + ‖δQ‖)."""
        m_inv = _mat_norm(self.Minv)
        return m_inv * (_mat_norm(dM) * m_inv * _vec_norm(self.F) + _vec_norm(dQ))


def uncertainty_acceleration(M, Q, Qc, M_a, Q_a, *, first_order: bool = False) -> np.ndarray:
    """δq along the nominal trajectory (q_c = q): exact W (5.3.5) or first order W (5.3.10).

    Parameters
    ----------
    M, Q : array_like (..., n, n), (..., n)
        Nominal mass matrix and given forces at the states.
    Qc : array_like (..., n)
        Nominal constraint (control) force Qᶜ at the states.
    M_a, Q_a : array_like (..., n, n), (..., n)
        Actual mass matrix and given forces (incl. any δQ) at the same states;
        may carry extra leading sample axes that broadcast against M's.
    first_order : bool
        False: exact ``M_a⁻¹(Q_a + Qᶜ) − M⁻¹(Q + Qᶜ)``. True: the first-order
        estimate ``−M⁻¹ δM M⁻¹ (Q + Qᶜ) + M⁻¹ δQ``.

    Returns
    -------
    ndarray (..., n)

    Raises
    ------
    MassMatrixError
        If M (or, for the exact form, M_a) is not positive definite.
    """
    nom = _Nominal.of(M, Q, Qc)
    M_a = np.asarray(M_a, dtype=float)
    _, _, r = nom.terms(M_a, np.asarray(Q_a, dtype=float))
    if first_order:
        return nom.first_order(r)
    return nom.exact(np.broadcast_to(M_a, r.shape + r.shape[-1:]), r)


def uncertainty_bound(M, Q, Qc, M_a, Q_a) -> np.ndarray:
    """The bound W (5.3.11) on the first-order δq: ``‖M⁻¹‖ (‖δM‖ ‖M⁻¹‖ ‖Q + Qᶜ‖ + ‖δQ‖)``.

    Infinity norms (induced for matrices). It bounds the first-order estimate
    exactly (triangle inequality) and the exact δq only while ‖M⁻¹δM‖ ≪ 1.
    Parameters as in :func:`uncertainty_acceleration`; only δM = M_a − M and
    δQ = Q_a − Q enter (M_a is not inverted).

    Returns
    -------
    ndarray (...)
        The bound at each state (and sample).

    Raises
    ------
    MassMatrixError
        If M is not positive definite.
    """
    nom = _Nominal.of(M, Q, Qc)
    dM, dQ, _ = nom.terms(np.asarray(M_a, dtype=float), np.asarray(Q_a, dtype=float))
    return nom.bound(dM, dQ)


# --------------------------------------------------------------------------- #
# Γ by Monte Carlo
# --------------------------------------------------------------------------- #
_SUMMARY_KEYS = ("min", "median", "p95", "p99", "max")


def _summary(x: np.ndarray) -> dict:
    p = np.quantile(x, [0.0, 0.5, 0.95, 0.99, 1.0])
    return dict(zip(_SUMMARY_KEYS, (float(v) for v in p)))


@dataclass(frozen=True, eq=False)
class GammaEstimate:
    """Result of :func:`estimate_gamma`: the distribution of ``max_t ‖δq(t)‖∞``.

    Attributes
    ----------
    exact, first_order, analytic : ndarray (N,)
        Per sampled plant, the maximum over the trajectory of ‖δq‖∞ by the exact
        form W (5.3.5), the first-order form W (5.3.10), and of the bound W (5.3.11).
    profile : ndarray (T,)
        ``max`` over samples of the exact ‖δq(t)‖∞ at each time: an empirical Γ(t).
    t : ndarray (T,)
        The trajectory's times.
    samples : ndarray (N, k) or SampleStream
        The parameter values of the sampled plants; for draws made block by block, the
        :class:`SampleStream` itself (``np.asarray`` of it regenerates the values).
    parameter : str or tuple of str
        Name(s) of the sampled plant parameter(s).
    seed : int or None
        Seed of the draws (``None`` when raw arrays were given).
    spread : float or ndarray or None
        Relative spread of the draws (``None`` when unknown).
    quantile, margin : float
        Γ′ = ``margin`` × (``quantile`` quantile of ``exact``).
    gamma_prime : float
        The suggested Γ′ for the compensators (docs/theory/compensators.md: Γ′ > Γ).
    wall_s : float
        Wall time of the Monte Carlo evaluation, seconds.
    """

    exact: np.ndarray
    first_order: np.ndarray
    analytic: np.ndarray
    profile: np.ndarray
    t: np.ndarray
    samples: np.ndarray
    parameter: str | tuple
    seed: int | None
    spread: float | np.ndarray | None
    quantile: float
    margin: float
    gamma_prime: float
    wall_s: float

    @property
    def n_samples(self) -> int:
        return int(self.exact.shape[0])

    def __repr__(self) -> str:
        """A summary (the distribution's quantiles and Γ′) — not every sample."""
        from ._format import format_value

        parameter = self.parameter if isinstance(self.parameter, str) else ", ".join(self.parameter)
        spread = "" if self.spread is None else f", spread ±{format_value(np.max(self.spread))}"
        ex = self.summary()["exact"]
        return (f"GammaEstimate({self.n_samples} samples of {parameter}{spread}, {self.t.size} times: max_t ‖δq‖∞ "
                f"median {format_value(ex['median'])}, p99 {format_value(ex['p99'])}, max {format_value(ex['max'])}; "
                f"Γ′ = {format_value(self.margin)} × its {format_value(self.quantile)} quantile = {format_value(self.gamma_prime)})")

    def summary(self) -> dict:
        """``{"exact": {min, median, p95, p99, max}, "first_order": {...}, "analytic": {...}}``."""
        return {name: _summary(getattr(self, name)) for name in ("exact", "first_order", "analytic")}

    def to_dict(self) -> dict:
        """JSON-ready summary (no per-sample arrays)."""
        spread = self.spread.tolist() if isinstance(self.spread, np.ndarray) else self.spread
        parameter = self.parameter if isinstance(self.parameter, str) else list(self.parameter)
        return {"samples": self.n_samples, "parameter": parameter, "spread": spread, "seed": self.seed,
                "n_times": int(self.t.shape[0]), "quantile": self.quantile, "margin": self.margin,
                "gamma_prime": self.gamma_prime, **self.summary(), "wall_s": self.wall_s}


def _trajectory(trajectory, n: int):
    arrays = {}
    for name in ("t", "q", "qd", "Qc"):
        if not hasattr(trajectory, name):
            raise ParameterError(
                f"`trajectory` must have attributes t, q, qd, Qc (e.g. a ConstrainedResult); it lacks `{name}`."
            )
        arrays[name] = finite(getattr(trajectory, name), f"trajectory.{name}")
    t = arrays["t"]
    if t.ndim != 1 or t.size == 0:
        raise ParameterError(f"`trajectory.t` must have shape (T,) with T >= 1; got {t.shape}.")
    for name in ("q", "qd", "Qc"):
        if arrays[name].shape != (t.size, n):
            raise ParameterError(
                f"`trajectory.{name}` must have shape (T, n) = ({t.size}, {n}); got {arrays[name].shape}."
            )
    return t, arrays["q"], arrays["qd"], arrays["Qc"]


def _parameter_names(nominal: Plant, parameter):
    """``(names, k, scalar)``: the sampled parameter names, the columns k of a sample, scalar-ness.

    One parameter (a number, or 1-D per body) takes all k columns; several parameters
    must each be a number and take one column each, in the order named. An entry of an array
    parameter (:meth:`~robustrack.plants.Plant.parameter_components`: the pendulum's ``L2``, a URDF
    robot's ``payload_com_z``) is a number.
    """
    params = nominal.params
    names = (parameter,) if isinstance(parameter, str) else tuple(parameter)
    if isinstance(parameter, (tuple, list)) and not names:
        return (), 0, False  # no parameter of the plant varies (a given-force perturbation alone)
    if not names or not all(isinstance(name, str) for name in names):
        raise ParameterError(f"`parameter` must be a parameter name or a sequence of names; got {parameter!r}.")
    components = _components(nominal, names)
    missing = [name for name in names if name not in params and name not in components]
    if missing:
        raise ParameterError(f"{type(nominal).__name__} has no parameter `{missing[0]}`; its parameters are "
                             f"{sorted(params)}{_component_hint(nominal)}.")
    if len(names) == 1:
        if names[0] in components:
            return names, 1, True
        value = np.asarray(params[names[0]], dtype=float)
        if value.ndim > 1:
            raise ParameterError(
                f"`{names[0]}` of the nominal plant must be a number or 1-D to be sampled; got shape {value.shape}."
            )
        return names, max(value.size, 1), value.ndim == 0
    arrays = [name for name in names if name in params and np.ndim(params[name]) != 0]
    if arrays:
        raise ParameterError(
            f"parameters sampled together must each be a number; `{arrays[0]}` is an array (sample an array "
            f"parameter on its own, or name its entries{_component_hint(nominal, arrays[0])})."
        )
    return names, len(names), False


def _components(nominal: Plant, names) -> dict:
    """The plant's :meth:`~robustrack.plants.Plant.parameter_components` when a name is not a parameter, else {}."""
    params = nominal.params
    if all(name in params for name in names):
        return {}
    of = getattr(nominal, "parameter_components", None)
    return of() if callable(of) else {}


def _component_hint(nominal: Plant, array: str | None = None) -> str:
    """`` (and entries of its arrays: m1, m2, …)`` for a message, or ""."""
    of = getattr(nominal, "parameter_components", None)
    comps = of() if callable(of) else {}
    names = [c for c, (p, _) in comps.items() if array is None or p == array]
    if not names:
        return ""
    shown = ", ".join(names[:4]) + (", …" if len(names) > 4 else "")
    return f" (as {shown})" if array is not None else f", and the entries of its arrays ({shown})"


def parameter_replacements(nominal: Plant, names, values) -> dict:
    """The ``nominal.replace`` keywords that set each named parameter, or array entry, to its value.

    Parameters
    ----------
    nominal : Plant
    names : sequence of str
        Parameters of the plant or entries of its arrays (:meth:`~robustrack.plants.Plant.parameter_components`).
    values : sequence of float
        One value per name; entries of one array are set together, its other entries kept.

    Returns
    -------
    dict
    """
    params = nominal.params
    components = _components(nominal, names)
    out = {}
    for name, value in zip(names, values):
        if name in params:
            out[name] = value
            continue
        owner, i = components[name]
        if owner not in out:
            out[owner] = np.array(params[owner], dtype=float)
        out[owner][..., i] = value
    return out


def parameter_label(parameter) -> str:
    """A sampled parameter's name, or several names joined by ", " (for titles and tables).

    Parameters
    ----------
    parameter : str or sequence of str
        As in :func:`estimate_gamma` (or a JSON list of names).

    Returns
    -------
    str
    """
    return parameter if isinstance(parameter, str) else ", ".join(parameter)


def parameter_values(nominal: Plant, parameter) -> np.ndarray:
    """The nominal value(s) to sample around, for :func:`sample_parameters`.

    Parameters
    ----------
    nominal : Plant
        The nominal plant.
    parameter : str or sequence of str
        As in :func:`estimate_gamma`.

    Returns
    -------
    ndarray
        ``nominal.params[parameter]`` (a number or 1-D) for one name; the named
        scalars stacked, shape (k,), for several.

    Raises
    ------
    ParameterError
        An unknown name (the plant's parameters are listed), or an array among several names.
    """
    names, _, _ = _parameter_names(nominal, parameter)
    params = nominal.params
    components = _components(nominal, names)

    def value(name):
        if name in params:
            return float(params[name])
        owner, i = components[name]
        return float(np.asarray(params[owner], dtype=float)[..., i])

    if len(names) == 1:
        return np.asarray(params[names[0]], dtype=float) if names[0] in params else np.asarray(value(names[0]))
    return np.array([value(name) for name in names])


def _sample_values(nominal: Plant, samples, parameter):
    """``(names, values (N, k), replace, seed, spread)``; ``replace(block)`` gives the ``nominal.replace``
    keywords of a block of sample rows (:func:`_parameter_names` says which column goes where)."""
    names, k, scalar = _parameter_names(nominal, parameter)
    if isinstance(samples, SampleStream):
        if samples.nominal.shape[0] != k:
            raise ParameterError(f"`samples` draw {samples.nominal.shape[0]} values per sampled plant; "
                                 f"`{', '.join(names)}` needs {k}.")
        return names, samples, _replacer(nominal, names, scalar), samples.seed, samples.spread
    if isinstance(samples, ParameterSamples):
        seed, spread = samples.seed, samples.spread
        values = samples.values
    else:
        seed = spread = None
        values = finite(samples, "samples")
    if values.ndim == 1 and k == 1:
        values = values[:, None]
    if values.ndim != 2 or values.shape[1] != k or values.shape[0] == 0:
        raise ParameterError(
            f"`samples` must have shape (N, {k}) (one row of `{', '.join(names)}` per sampled plant); "
            f"got {values.shape}."
        )

    return names, values, _replacer(nominal, names, scalar), seed, spread


def _replacer(nominal: Plant, names, scalar: bool):
    """``replace(block)``: the ``nominal.replace`` keywords of a block of sample rows."""
    params = nominal.params
    components = _components(nominal, names)

    def replace(block):
        # sample axis first, then the time axis of q: (S, 1) for scalars, (S, 1, k) per body
        if not names:
            return {}
        if not components:
            if len(names) > 1:
                return {name: block[:, i:i + 1] for i, name in enumerate(names)}
            return {names[0]: block[:, :1] if scalar else block[:, None, :]}
        out = {}
        for i, name in enumerate(names):
            if name in params:
                out[name] = block[:, i:i + 1]
                continue
            owner, j = components[name]  # an array's entry: the array per sample, (S, 1, k), its others kept
            if owner not in out:
                base = np.asarray(params[owner], dtype=float)
                out[owner] = np.array(np.broadcast_to(base, (block.shape[0], 1, base.size)))
            out[owner][:, 0, j] = block[:, i]
        return out

    return replace


def _sample_blocks(values, size: int):
    """(first row, block) over the sampled plants: slices of an array, or a stream's draws block by block."""
    blocks = values.blocks(size) if isinstance(values, SampleStream) else (
        values[s0:s0 + size] for s0 in range(0, values.shape[0], size))
    s0 = 0
    for block in blocks:
        yield s0, block
        s0 += block.shape[0]


def estimate_gamma(
    nominal: Plant,
    trajectory,
    samples,
    *,
    parameter: str | Sequence[str] = "m",
    dQ: Callable | None = None,
    quantile: float = 0.99,
    margin: float = 1.2,
    chunk: int = DEFAULT_CHUNK,
    progress: Callable[[float], None] | None = None,
) -> GammaEstimate:
    """Monte Carlo estimate of the uncertainty bound Γ (W 5.3.5, 5.3.10–5.3.11, 7.3).

    For each sampled actual plant ``nominal.replace(**{parameter: sample})`` (plus
    ``dQ``), evaluate δq along the nominal controlled trajectory with the exact form
    (5.3.5, q_c = q) and the first-order form (5.3.10), and the bound (5.3.11);
    keep ``max_t ‖·‖∞`` per sample.

    Parameters
    ----------
    nominal : Plant
        The nominal plant. Its parameter arrays must broadcast over sample axes
        (body index last), as :class:`~robustrack.plants.NLinkPendulum` does.
    trajectory : object with t (T,), q (T, n), qd (T, n), Qc (T, n)
        The nominal controlled motion, e.g. a
        :class:`~robustrack.tracking.ConstrainedResult`.
    samples : ParameterSamples, SampleStream or array_like (N, k)
        Values of ``parameter`` for the N sampled plants (see :func:`sample_parameters`).
        A :class:`SampleStream` (:func:`sample_stream`) is drawn block by block as the
        blocks are evaluated: only the three per-sample maxima (24 bytes a sample) are
        held, whatever N, and the result is bit-identical to the same draws given at once.
    parameter : str or sequence of str, default "m"
        Which plant parameter the samples replace: one name (a number, or 1-D with
        one column per body), or several names of scalar parameters sampled together
        (one column each, in that order; e.g. ``("m1", "m2")``; an entry of an array,
        :meth:`~robustrack.plants.Plant.parameter_components`, is a scalar). ``()`` with samples
        of shape (N, 0): no parameter varies, the N plants differ by their ``dQ`` alone.
    dQ : callable, optional
        Additive given-force perturbation of the actual plants, ``dQ(q, qd, t)``; its
        output must broadcast to (N, T, n) (the same for all samples, or with its
        own sample axis).
    quantile : float in (0, 1], default 0.99
    margin : float >= 1, default 1.2
        Γ′ = margin × (``quantile`` quantile of the exact distribution). A
        user choice: W picks Γ′ above the densities it plots (100 for ±10 %,
        800 for ±50 %).
    chunk : int, default :data:`DEFAULT_CHUNK` (2**14)
        Number of (sample, time) pairs per array operation; memory scales with it
        (about ``chunk × n² × 8`` bytes per array, a handful of arrays at once).
    progress : callable, optional
        Called with the finished fraction (0–1] after each block.

    Returns
    -------
    GammaEstimate

    Raises
    ------
    ParameterError
        Unknown parameter, wrong shapes, bad quantile/margin/chunk.
    MassMatrixError
        A nominal or sampled mass matrix is not positive definite.
    """
    start = time.perf_counter()
    n = nominal.n
    t, q, qd, Qc = _trajectory(trajectory, n)
    names, values, replace, seed, spread = _sample_values(nominal, samples, parameter)
    quantile_, margin_ = check_gamma_settings(quantile, margin)
    positive_int(chunk, "chunk")

    N, T = len(values), t.size
    nominal_terms = _Nominal.of(nominal.mass_matrix(q, t), nominal.given_force(q, qd, t), Qc)
    exact = np.zeros(N)
    first = np.zeros(N)
    analytic = np.zeros(N)
    profile = np.zeros(T)
    s_block = min(N, int(chunk))
    t_block = max(1, int(chunk) // s_block)
    total, done = N * T, 0
    for s0, block in _sample_blocks(values, s_block):
        try:
            actual = nominal.replace(**replace(block))
        except RobustrackError:
            raise
        except Exception as exc:  # e.g. a __post_init__ that tests `if m1 > 0` on an array
            raise ParameterError(batch_contract_message(type(nominal).__name__, f"of {block.shape[0]} sampled "
                                 f"`{parameter_label(names)}`", exc)) from exc
        if dQ is not None:
            actual = ForcedPlant(actual, dQ)
        S = block.shape[0]
        for t0 in range(0, T, t_block):
            sl = slice(t0, t0 + t_block)
            qs, qds, ts = q[sl], qd[sl], t[sl]
            shape = (S, ts.size)
            try:
                M_a = np.broadcast_to(actual.mass_matrix(qs, ts), shape + (n, n))
                Q_a = np.broadcast_to(actual.given_force(qs, qds, ts), shape + (n,))
            except RobustrackError:
                raise
            except Exception as exc:  # the user's plant broke the batch contract: say what to do
                raise ParameterError(batch_contract_message(type(nominal).__name__, f"{shape} (samples of "
                                     f"`{parameter_label(names)}`, times)", exc)) from exc
            part = nominal_terms[sl]
            dM, dQ_tot, r = part.terms(M_a, Q_a)
            e = _vec_norm(part.exact(M_a, r))
            exact[s0:s0 + S] = np.maximum(exact[s0:s0 + S], e.max(axis=1))
            profile[sl] = np.maximum(profile[sl], e.max(axis=0))
            first[s0:s0 + S] = np.maximum(first[s0:s0 + S], _vec_norm(part.first_order(r)).max(axis=1))
            analytic[s0:s0 + S] = np.maximum(analytic[s0:s0 + S], part.bound(dM, dQ_tot).max(axis=1))
            done += S * ts.size
            if progress is not None:
                progress(done / total)

    gamma_prime = float(margin_) * float(np.quantile(exact, float(quantile_)))
    for arr in (exact, first, analytic, profile):
        arr.setflags(write=False)
    return GammaEstimate(
        exact=exact, first_order=first, analytic=analytic, profile=profile, t=t, samples=values,
        parameter=names[0] if len(names) == 1 else names, seed=seed, spread=spread, quantile=float(quantile_),
        margin=float(margin_),
        gamma_prime=gamma_prime, wall_s=time.perf_counter() - start,
    )
