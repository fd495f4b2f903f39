"""The actual plant's forces (W 5.2.12–5.2.16; docs/guide/uncertainty.md): disturbances, joint friction, their sum.

The *actual* plant is ``M_a = M + δM``, ``Q_a = Q + δQ``: :func:`actual_plant` builds it as
``nominal.replace(<parameters>)`` (δM and the mass-dependent part of δQ) plus an additive given force δQ(q, q̇, t)
(:class:`~robustrack.plants.ForcedPlant`): a :class:`Disturbance` (step, sinusoid, band-limited noise, a function),
:class:`JointFriction`, or their :class:`ActualForces` — each with the symbolic terms the compiled forms and the
certificates use.
"""

from __future__ import annotations

__all__ = ["Disturbance", "SumDisturbance", "StepDisturbance", "SinusoidalDisturbance", "BandLimitedDisturbance",
           "FunctionDisturbance", "JointFriction", "friction_coefficient", "ActualForces", "actual_plant",
           "ForcedPlant"]

import functools
import math
from dataclasses import dataclass
from typing import Callable

import numpy as np

from .._validate import as_float_array, finite, positive_int
from ..errors import ParameterError
from ..plants.base import Plant
from ..plants.forced import ForcedPlant
from ..symbolic import SymbolicForm, added_terms
from .parameters import _component_hint, _components, _parameter_names, parameter_replacements, parameter_values

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
