"""Robust compensators GSS, GD, GD-bar and the error bounds they promise (docs/theory/compensators.md, W ch. 7–8).

A compensator maps the tracking error ``e = q_c − q``, ``ė`` (and its own
extra states z, if any) to an acceleration u; the simulator applies
``Qᵘ = M u`` with the nominal M (W 5.2.17). The tracking error then obeys
(W 5.3.3–5.3.6, 7.2.2)

    ë = δq + u − M̃_a u,   ‖δq‖∞ ≤ Γ,   μ := ‖M̃_a‖∞ ≤ 1 − α0/σ        (*)

(the last is W's 0 < α0 < σ(1 − ‖M̃_a‖), W 7.2.9, 8.2.18, 8.3.8).

The bounds each compensator promises, and the proofs behind them (W's proofs use
V = ½ xᵀx with a Hölder step that is false for n ≥ 2; we use V = ½ ‖x‖∞², which keeps
W's conclusions), with where and why our numbers differ from the seed's (W 7.2.26–7.2.28,
8.2.16–8.2.45, 8.3.16–8.3.23), are in ``docs/theory/compensator-bounds.md``; each
``bounds()`` below names its equations.

Classical special cases (they chatter; ``discontinuous`` is True): sliding-mode
control (GSS with sign, Corollary 7.1), Leitmann–Corless (GD with sign,
Corollary 8.1), Lyapunov redesign (GD-bar, n = 1, sign, Corollary 8.2). With sign
the bounds are those of continuous time (s → 0 for SMC); a sampled (zero-order
hold) control of period h only keeps the error in a band of order h·|ṡ|.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from typing import Callable, ClassVar

import numpy as np

from .._validate import as_float_array, scalar
from ..errors import ControlFunctionError, ParameterError
from .laws import (GDBarParams, GDParams, GSSParams, LawCall, evaluate, gd_law, gdbar_law, gss_law, pack, unpack)
from .functions import ControlFunction, control_function
from .sampled import LoopErrors, damping_box, gss_box

__all__ = [
    "PromisedBounds",
    "Compensator",
    "GSS",
    "GD",
    "GDBar",
    "SlidingMode",
    "LeitmannCorless",
    "LyapunovRedesign",
    "sliding_mode",
    "leitmann_corless",
    "lyapunov_redesign",
    "COMPENSATORS",
    "make_compensator",
]


@dataclasses.dataclass(frozen=True)
class PromisedBounds:
    """The error bounds a compensator promises (as t → ∞, under its assumptions).

    Attributes
    ----------
    e : float
        Bound on ‖e‖∞ (``inf``: none promised).
    edot : float
        Bound on ‖ė‖∞ (``inf``: none promised).
    region : str
        The set the proof makes attractive.
    formula : str
        How the numbers were computed, with W's equation numbers.
    assumptions : str
        What the numbers assume (Γ, ‖M̃_a‖, small e, ...).
    gamma : float or None
        The uncertainty bound Γ on ‖δq‖∞ the numbers were computed for.
    coverage : str or None
        Under a sensor model (:func:`robustrack.loop.sensed_bounds`): what the theory says of this loop —
        "guaranteed for this loop[ at C confidence]", "not guaranteed: why" or "no bound: why";
        None: the state is measured exactly (the compensator's own bound).
    terms : dict or None
        In a sampled loop (:meth:`Compensator.sampled_bounds`): the parts of the disturbance the box dominates
        (``gamma``, ``coupling``, ``measurement``, ``hold_delay``) and the box's acceleration and force bounds, so a
        report can say which one dominates; None otherwise.
    """

    e: float
    edot: float
    region: str
    formula: str
    assumptions: str
    gamma: float | None = None
    coverage: str | None = None
    terms: dict | None = None

    def to_dict(self) -> dict:
        out = dataclasses.asdict(self)
        for key in ("coverage", "terms"):  # the exact-measurement bound: the record it always was
            if out[key] is None:
                del out[key]
        return out


# --------------------------------------------------------------------------- #
# parameter rules: one validator per rule, the message names the rule
# --------------------------------------------------------------------------- #
def _rule(test: Callable[[float], bool], text: str):
    def check(value, name: str) -> float:
        v = scalar(value, name)
        if not test(v):
            raise ParameterError(f"`{name}` must be {text}; got {value!r}.")
        return v

    return check


_positive = _rule(lambda v: v > 0, "> 0")
_nonnegative = _rule(lambda v: v >= 0, ">= 0")
_unit_open = _rule(lambda v: 0 < v < 1, "in (0, 1) (0 < α0 < σ(1 − ‖M̃_a‖), W 7.2.9)")
_at_least_one = _rule(lambda v: v >= 1, ">= 1")
_sigma = _rule(lambda v: v >= 1, ">= 1 (σ ≥ γ, and γ ≤ 1, W 7.2.10–7.2.11)")


def _gains(value, name: str):
    arr = as_float_array(value, name)
    if arr.ndim > 1:
        raise ParameterError(f"`{name}` must be a scalar or one gain per coordinate (1-D); got shape {arr.shape}.")
    if not np.all(np.isfinite(arr)) or not np.all(arr > 0):
        raise ParameterError(f"`{name}` must be > 0 (every gain, W 7.2.5); got {value!r}.")
    if arr.ndim == 0:
        return float(arr)
    arr = arr.copy()
    arr.setflags(write=False)
    return arr


def _control_fn(value, name: str) -> ControlFunction:
    if not isinstance(value, ControlFunction):
        raise ParameterError(
            f"`{name}` must be a ControlFunction (build one with control_function(...)); got {value!r}."
        )
    return value


#: The control function's parameters, for the laws that take an f: its argument (s or ė) is a rate.
_F_INFO = {
    "eps": ("ε", "{qd}", "scale of f's argument, f(x) = g(x/ε) (W 7.2.13)"),
    "alpha_c": ("α_c", "", "gain of g (W 7.3.1, 7.3.4)"),
    "p": ("p", "", "exponent of g"),
}
_MARGIN = ("α0", "", "margin: the bound assumes ‖M̃_a‖∞ ≤ 1 − α0/σ")

_NEEDS_TEXT = {
    "strictly_increasing": "strictly increasing",
    "unbounded": "unbounded (g(x) → ∞ as x → ∞)",
    "continuous": "continuous",
}


@functools.lru_cache(maxsize=None)
def _seed_f() -> ControlFunction:
    """The seed's g: signed quadratic, α_c = 2, ε = 1e-2 (W 7.3.1, 8.2.43, 8.3.24)."""
    return control_function("signed-quadratic", eps=1e-2, alpha_c=2.0)


@functools.lru_cache(maxsize=None)
def _sign_f() -> ControlFunction:
    return control_function("sign", eps=1.0)


def _sup_level(over: Callable[[float], bool], start: float) -> float:
    """sup{x >= 0 : not over(x)} for a predicate that, once true, stays true as x grows."""
    lo, hi = 0.0, max(start, 1e-300)
    with np.errstate(all="ignore"):
        while not over(hi):
            lo, hi = hi, 2.0 * hi
            if hi > 1e300:
                return math.inf
        for _ in range(400):
            mid = 0.5 * (lo + hi)
            if over(mid):
                hi = mid
            else:
                lo = mid
            if hi - lo <= 1e-15 * hi:
                break
    return lo


def _integral(self, t, e, edot, z):
    """dz/dt = e (z = ∫e): the states the compiled loop knows (``integral_states``)."""
    return e


def _gamma_arg(gamma, default: float) -> float:
    if gamma is None:
        return default
    v = scalar(gamma, "gamma")
    if v < 0:
        raise ParameterError(f"`gamma` (the bound Γ on ‖δq‖∞) must be >= 0; got {gamma!r}.")
    return v


def _g_sup(f: ControlFunction) -> float:
    """sup g of a control function (inf when unbounded; g non-decreasing, so g at 1e300 is its sup)."""
    return math.inf if f.unbounded else float(f.g(np.array(1e300)))


def _sampled(gam: float, mu: float, box, law: str, formula: str, assumptions: str) -> PromisedBounds:
    """The PromisedBounds of a sampled box (:mod:`robustrack.controllers.sampled`), infinite where none passed."""
    base = (f"‖δq‖∞ ≤ Γ = {gam:.6g}; ‖M̃_a‖∞ ≤ μ = {mu:.6g}; {assumptions}; the measurement errors inside "
            "their bounds; the start inside the box")
    if box is None:
        return PromisedBounds(e=math.inf, edot=math.inf, region=f"none: no {law} box passes the sampled loop's "
                              "checks", formula=formula, assumptions=base, gamma=gam)
    terms = {k: float(v) for k, v in {**box.terms, "eddot": box.eddot, "force": box.force}.items()}
    return PromisedBounds(e=box.e, edot=box.edot, region=f"{law} ≤ {box.size:.6g}", formula=formula,
                          assumptions=base, gamma=gam, terms=terms)


# --------------------------------------------------------------------------- #
# the base class: validates and records; subclasses compute
# --------------------------------------------------------------------------- #
class Compensator:
    """Base of the compensators: validation and bookkeeping; subclasses compute u.

    Rules for a subclass (a frozen dataclass):

    - list its parameters with their validators in ``_rules`` (name → check);
      cross-parameter rules go in ``_check_relations``;
    - list the control-function properties its proof needs in ``_needs``;
    - precompute constants in ``_setup`` (``object.__setattr__``);
    - name its control law: ``law``, a function of :mod:`robustrack.controllers.laws` (or the
      user's own, written the same way: once, for the numpy path and the compiled loop), and
      ``law_params(n)``, the law's record of named parameters; ``__call__`` runs it;
    - implement ``bounds(gamma)``;
    - extra ODE states (if any): ``n_states`` and ``state_derivative``. They live
      in the simulator's ODE state, on its clock; the compiled loop knows the states
      z = ∫e (``integral_states = True``);
    - say where the law comes from in ``source`` and what each parameter is in
      ``parameter_info`` (reports print both).
    """

    name: ClassVar[str] = ""
    #: Where the law and its bound come from (a report cites this, not every compensator's).
    source: ClassVar[str] = ""
    #: Where the seed's settings of the law come from ("W §7.3"): a report cites it only for a scenario whose
    #: own source cites that place (a catalog seed scenario), never for a user's own system
    #: (:func:`robustrack.reports.describe.compensator_source`).
    settings_source: ClassVar[str] = ""
    #: Init parameter (and, for laws with an f, ``eps``, ``alpha_c``, ``p`` of the control
    #: function) → (symbol, unit, meaning). A unit is a template in the plant's units,
    #: ``{q}``, ``{qd}``, ``{qdd}`` of e, ė, ë (filled by
    #: :meth:`robustrack.plants.units.CoordinateUnits.fill`); "" is dimensionless.
    parameter_info: ClassVar[dict[str, tuple[str, str, str]]] = {}
    _rules: ClassVar[dict[str, Callable]] = {}
    _needs: ClassVar[tuple[str, ...]] = ()
    #: The control law (:mod:`robustrack.controllers.laws`): ``law(params, f, e, ė, z, u, …)``.
    law: ClassVar[Callable | None] = None
    #: True when the extra states are z = ∫e (dz/dt = e, :meth:`state_derivative`), as GD's.
    integral_states: ClassVar[bool] = False

    def __post_init__(self):
        for pname, check in self._rules.items():
            object.__setattr__(self, pname, check(getattr(self, pname), pname))
        self._check_relations()
        f = getattr(self, "f", None)  # linear laws (the baselines) have no control function
        missing = [flag for flag in self._needs if f is None or not getattr(f, flag)]
        if missing:
            props = " and ".join(_NEEDS_TEXT[m] for m in missing)
            raise ControlFunctionError(
                f"{type(self).__name__} needs a control function g that is {props}; "
                f"{getattr(f, 'name', None)!r} is not. {self._needs_reason}"
            )
        self._setup()
        object.__setattr__(self, "_packed", {})

    _needs_reason: ClassVar[str] = ""

    def _check_relations(self) -> None:
        """Cross-parameter rules (default: none)."""

    def _setup(self) -> None:
        """Precompute constants for ``__call__`` (default: none)."""

    @property
    def discontinuous(self) -> bool:
        """True when g jumps (sign): the control chatters; sample it (zero-order hold)."""
        f = getattr(self, "f", None)
        return f is not None and not f.continuous

    @property
    def params(self) -> dict:
        """The parameters, by name (as given, after validation)."""
        return {fld.name: getattr(self, fld.name) for fld in dataclasses.fields(self) if fld.init}

    def parameter_unit(self, name: str) -> str:
        """The unit template of parameter ``name`` (see ``parameter_info``; "" if not listed).

        Parameters
        ----------
        name : str
            An init parameter, or ``eps``, ``alpha_c``, ``p`` of the control function.

        Returns
        -------
        str
            E.g. ``"{qdd}"`` for Γ′: fill it with the plant's units.
        """
        return self.parameter_info.get(name, ("", "", ""))[1]

    def n_states(self, n: int) -> int:
        """Number of extra ODE states for n coordinates."""
        return 0

    def initial_state(self, n: int) -> np.ndarray:
        """Initial value of the extra states (zeros)."""
        return np.zeros(self.n_states(n))

    def state_derivative(self, t, e, edot, z):
        """dz/dt of the extra states, shape ``(..., n_states)``."""
        e = np.asarray(e)
        return np.zeros(e.shape[:-1] + (0,))

    def law_params(self, n: int):
        """The law's record of named parameters for n coordinates (:mod:`robustrack.controllers.laws`).

        Parameters
        ----------
        n : int
            Number of coordinates.

        Returns
        -------
        NamedTuple
        """
        raise NotImplementedError(f"{type(self).__name__} names no law record (law_params)")

    def _params(self, n: int) -> tuple:
        """:meth:`law_params` packed (:func:`~robustrack.controllers.laws.pack`) and read back by name, once per n."""
        found = self._packed.get(n)
        if found is None:
            record = self.law_params(n)
            flat = pack(record, n)
            found = self._packed[n] = (flat, unpack(type(record), flat, n))
        return found

    def __call__(self, t, e, edot, z=None):
        """u(e, ė, z) of :attr:`law`, shape ``(..., n)``; leading batch axes broadcast, complex allowed."""
        if self.law is None:  # pragma: no cover - abstract
            raise NotImplementedError(f"{type(self).__name__} names no law")
        e = np.asarray(e)
        n = e.shape[-1]
        if z is None and self.n_states(n):
            raise ParameterError(f"{type(self).__name__} needs its state `z` (shape (..., {self.n_states(n)})); "
                                 "got None.")
        return evaluate(type(self).law, self._params(n)[1], getattr(self, "f", None), e, edot, z)

    def bounds(self, gamma=None) -> PromisedBounds:  # pragma: no cover - abstract
        raise NotImplementedError

    def sampled_bounds(self, gamma, loop: LoopErrors) -> PromisedBounds | None:
        """The bounds in a sampled loop: a zero-order hold of period h, D samples of delay, a sensor's errors.

        None (the default): no bound is derived for this compensator in a sampled loop (docs/theory/sensing.md);
        GSS, GD (K_i = 0) and GD-bar (n = 1) give theirs. Infinite e and ė: the derivation exists but no box
        passes its checks (no bound).

        Parameters
        ----------
        gamma : float or None
        loop : LoopErrors
            What the law sees wrong (:meth:`robustrack.loop.Sensor.loop_errors`).

        Returns
        -------
        PromisedBounds or None
        """
        return None

    def kernel_law(self, n: int) -> LawCall | None:
        """This law for the compiled loop (:mod:`robustrack.compiled.laws`), or None.

        Parameters
        ----------
        n : int
            Number of coordinates (per-coordinate gains are broadcast to n).

        Returns
        -------
        LawCall or None
            The law function, its packed record, the control function's code and whether the
            states are ∫e. None where the loop cannot run it (no law; a subclass that computes u
            or ż its own way; a user's control function; states other than ∫e): the loop then
            runs on numpy.
        """
        own = type(self)
        f = getattr(self, "f", None)
        code = None if f is None else f.kernel_code()
        if (own.law is None or own.__call__ is not Compensator.__call__ or (f is not None and code is None)
                or (self.n_states(n) and not (own.integral_states and own.state_derivative is _integral))):
            return None
        return LawCall(own.law, self._params(n)[0], code, int(own.integral_states))


# --------------------------------------------------------------------------- #
# GSS
# --------------------------------------------------------------------------- #
@dataclasses.dataclass(frozen=True, eq=False)
class GSS(Compensator):
    """Generalized sliding-surface compensator (W 7.2.5–7.2.35).

    ``s = K e + ė``, ``u = −K ė − σ β f(s)``, ``β = (Γ′ + β0)/α0`` (W 7.2.15, 7.2.31).

    Parameters
    ----------
    K : float or array_like (n,)
        Surface gains k_i > 0 (W 7.2.5); seed 10.
    gamma_prime : float
        Γ′ >= 0, the design bound on ‖δq‖∞ (Γ′ > Γ, W 7.2.9); seed 100 (±10 %), 800 (±50 %).
    beta0 : float
        β0 > 0 (W 7.2.9; W 7.2.35 suggests β0 = K); seed 10.
    alpha0 : float
        0 < α0 < 1, the margin of ‖M̃_a‖∞ ≤ 1 − α0/σ; seed 0.5.
    sigma : float
        σ >= 1 (W 7.2.10); seed 1.
    f : ControlFunction
        Continuous, or declared discontinuous (sign: sliding mode); seed signed
        quadratic, α_c = 2, ε = 1e-2 (W 7.3.1).

    Notes
    -----
    The bound and its derivation are in the module docstring.

    Examples
    --------
    >>> c = GSS()
    >>> c(0.0, np.zeros(2), np.array([0.01, -0.01])).round(6).tolist()
    [-440.1, 440.1]
    >>> round(c.bounds().e, 7)
    0.0006744
    """

    name: ClassVar[str] = "gss"
    source: ClassVar[str] = "W ch. 7 (law 7.2.5–7.2.15, bound 7.2.26–7.2.28)"
    settings_source: ClassVar[str] = "W §7.3"
    parameter_info: ClassVar[dict] = {
        "K": ("K", "1/s", "sliding-surface gains, s = K e + ė"),
        "gamma_prime": ("Γ′", "{qdd}", "design bound on ‖δq‖∞ in the gain β = (Γ′ + β0)/α0"),
        "beta0": ("β0", "{qdd}", "gain offset in β"),
        "alpha0": _MARGIN,
        "sigma": ("σ", "", "gain factor, σ ≥ γ (W 7.2.10)"),
        **_F_INFO,
    }
    K: float | np.ndarray = 10.0
    gamma_prime: float = 100.0
    beta0: float = 10.0
    alpha0: float = 0.5
    sigma: float = 1.0
    f: ControlFunction = dataclasses.field(default_factory=_seed_f)

    _rules: ClassVar[dict] = {
        "K": _gains,
        "gamma_prime": _nonnegative,
        "beta0": _positive,
        "alpha0": _unit_open,
        "sigma": _sigma,
        "f": _control_fn,
    }

    def _setup(self):
        object.__setattr__(self, "beta", (self.gamma_prime + self.beta0) / self.alpha0)
        object.__setattr__(self, "_gain", self.sigma * self.beta)

    law: ClassVar[Callable] = gss_law

    def law_params(self, n: int) -> GSSParams:
        """σβ and K of u = −K ė − σβ f(K e + ė) (W 7.2.15, :func:`~robustrack.controllers.laws.gss_law`)."""
        return GSSParams(gain=self._gain, K=self.K)

    def _box(self, gam: float, extra: float = 0.0) -> float:
        """L_ε, the least solution of L = 2ε g⁻¹((Γ + extra + μ k_max L)/(Γ′ + β0)) (W 7.2.26); inf if none."""
        k = np.asarray(self.K, dtype=float)
        kmax = float(k.max())
        mu = 1.0 - self.alpha0 / self.sigma
        denom = self.gamma_prime + self.beta0
        eps = self.f.eps
        L = 0.0
        for _ in range(10000):  # least fixed point of an increasing map, from below
            L_new = 2.0 * eps * float(self.f.inverse((gam + extra + mu * kmax * L) / denom))
            if not math.isfinite(L_new) or L_new > 1e300:
                return math.inf
            done = L_new <= L * (1.0 + 1e-14)
            L = L_new
            if done:
                return L
        return math.inf

    def bounds(self, gamma=None) -> PromisedBounds:
        """Box ‖s‖∞ ≤ L_ε/2, then ‖e‖∞ ≲ L_ε/(2 min k), ‖ė‖∞ ≲ L_ε (W 7.2.26–7.2.28).

        Parameters
        ----------
        gamma : float, optional
            The actual bound Γ on ‖δq‖∞ (default Γ′, the design value).
        """
        gam = _gamma_arg(gamma, self.gamma_prime)
        kmin = float(np.asarray(self.K, dtype=float).min())
        mu = 1.0 - self.alpha0 / self.sigma
        L = self._box(gam)
        return PromisedBounds(
            e=L / (2.0 * kmin),
            edot=L,
            region=f"box ‖s‖∞ ≤ L_ε/2 with s = K e + ė, L_ε = {L:.6g}",
            formula=(
                "L_ε = 2ε g⁻¹((Γ + μ k_max L_ε)/(Γ′ + β0)), least solution (W 7.2.26 with "
                "‖M̃_a K ė‖∞ ≤ μ k_max L_ε); ‖e‖∞ ≲ L_ε/(2 min k_i), ‖ė‖∞ ≲ L_ε (W 7.2.28)"
            ),
            assumptions=(
                f"‖δq‖∞ ≤ Γ = {gam:.6g}; ‖M̃_a‖∞ ≤ μ = 1 − α0/σ = {mu:.6g}; "
                "e(0), ė(0) in {|s_i| ≤ L_ε/2, |e_i| ≤ L_ε/(2k_i)} (started outside it, a run is only observed)"
            ),
            gamma=gam,
        )

    def sampled_bounds(self, gamma, loop: LoopErrors) -> PromisedBounds:
        """The sliding box in a sampled loop (:func:`~robustrack.controllers.sampled.gss_box`, docs/theory/sensing.md).

        The least S with ‖s‖∞ ≤ S invariant when the law acts on ŝ measured (D + 1) h ago with the sensor's errors;
        then ‖e‖∞ ≤ S / min k, ‖ė‖∞ ≤ 2S (W 7.2.26–7.2.28 with the argument's error on the wrong side).

        Parameters
        ----------
        gamma : float or None
            Γ (default Γ′).
        loop : LoopErrors

        Returns
        -------
        PromisedBounds
        """
        gam = _gamma_arg(gamma, self.gamma_prime)
        k = np.broadcast_to(np.asarray(self.K, dtype=float), loop.de.shape)
        mu = 1.0 - self.alpha0 / self.sigma
        box = gss_box(k, self.f.g, self.f.eps, _g_sup(self.f), self._gain, mu, gam, loop)
        return _sampled(gam, mu, box, "‖s‖∞", "σβ [g((S − η)/ε) − μ g((S + η)/ε)] > Γ + 2μ k_max S + (1 + μ) max k ν "
                        "at the least S, η and ν the law's argument errors (measurement, and the state's variation "
                        "over (D + 1) h inside the box); ‖e‖∞ ≤ S/min k, ‖ė‖∞ ≤ 2S (docs/theory/sensing.md)",
                        "the feedforward Qᶜ(t) and M(q_c) applied continuously, u held")


# --------------------------------------------------------------------------- #
# GD
# --------------------------------------------------------------------------- #
@dataclasses.dataclass(frozen=True, eq=False)
class GD(Compensator):
    """Bound-based generalized damping compensator (W 8.2.12–8.2.45).

    ``u = −(e + K_i z + K_d ė) − σ ρ f(ė)``, ``ρ = (Γ + ρ0)/α0``, ``z = ∫₀ᵗ e dτ``
    (K_p = 1, W 8.2.26). z is an ODE state of the simulator (``n_states(n) = n``).

    Parameters
    ----------
    Ki : float
        K_i >= 0; if K_i > 0, K_d > K_i is required (nominal loop Hurwitz). Seed 0.
    Kd : float
        K_d >= 0; seed 3.
    gamma : float
        Γ >= 0, the design bound on ‖δq‖∞; seed 100 (±10 %), 800 (±50 %).
    rho0 : float
        ρ0 >= 1 (W 8.2.42); seed 1.
    alpha0 : float
        0 < α0 < 1 (W 8.2.18); seed 0.5.
    sigma : float
        σ >= 1 (W 8.2.19); seed 1.
    f : ControlFunction
        Continuous, or declared discontinuous (sign: Leitmann–Corless).
    alpha_eps : float
        α_ε > 0, only for W's radius ``seed_radius = (ε/α_ε)^{1/2}`` (W 8.2.16); seed 2.

    Examples
    --------
    >>> c = GD()
    >>> c.n_states(3)
    3
    >>> round(c.bounds().edot, 6)
    0.007071
    """

    name: ClassVar[str] = "gd"
    source: ClassVar[str] = "W §8.2 (law 8.2.12–8.2.26, bound 8.2.25)"
    settings_source: ClassVar[str] = "W §8.2.5"
    parameter_info: ClassVar[dict] = {
        "Ki": ("K_i", "1/s³", "integral gain (the gain of e is K_p = 1 1/s²)"),
        "Kd": ("K_d", "1/s", "damping gain"),
        "gamma": ("Γ", "{qdd}", "bound on ‖δq‖∞ in the gain ρ = (Γ + ρ0)/α0"),
        "rho0": ("ρ0", "{qdd}", "gain offset in ρ"),
        "alpha0": _MARGIN,
        "sigma": ("σ", "", "gain factor (W 8.2.19)"),
        "alpha_eps": ("α_ε", "1/s", "W's rate, only for W's radius r_ε = (ε/α_ε)^½ (not used by the law)"),
        **_F_INFO,
    }
    Ki: float = 0.0
    Kd: float = 3.0
    gamma: float = 100.0
    rho0: float = 1.0
    alpha0: float = 0.5
    sigma: float = 1.0
    f: ControlFunction = dataclasses.field(default_factory=_seed_f)
    alpha_eps: float = 2.0

    _rules: ClassVar[dict] = {
        "Ki": _nonnegative,
        "Kd": _nonnegative,
        "gamma": _nonnegative,
        "rho0": _rule(lambda v: v >= 1, ">= 1 (W 8.2.42)"),
        "alpha0": _unit_open,
        "sigma": _sigma,
        "f": _control_fn,
        "alpha_eps": _positive,
    }

    def _check_relations(self):
        if self.Ki > 0 and not self.Kd > self.Ki:
            raise ParameterError(
                f"`Kd` must be > `Ki` when Ki > 0 (the nominal loop s³ + Kd s² + s + Ki is Hurwitz "
                f"only then; otherwise e + Ki∫e grows); got Ki = {self.Ki!r}, Kd = {self.Kd!r}."
            )

    def _setup(self):
        object.__setattr__(self, "rho", (self.gamma + self.rho0) / self.alpha0)
        object.__setattr__(self, "_gain", self.sigma * self.rho)

    law: ClassVar[Callable] = gd_law
    integral_states: ClassVar[bool] = True

    def n_states(self, n: int) -> int:
        return int(n)

    state_derivative = _integral

    def law_params(self, n: int) -> GDParams:
        """σρ, K_i, K_d of u = −(e + K_i z + K_d ė) − σρ f(ė) (W 8.2.26, :func:`~robustrack.controllers.laws.gd_law`)."""
        return GDParams(gain=self._gain, Ki=self.Ki, Kd=self.Kd)

    @property
    def seed_radius(self) -> float:
        """W's r_ε = (ε/α_ε)^{1/2} (W 8.2.16), for comparison only (see the module docstring)."""
        return math.sqrt(self.f.eps / self.alpha_eps)

    def _radius(self, gam: float, extra: float = 0.0) -> float:
        """r with (Γ + ρ0) g(r/ε) + K_d (α0/σ) r = Γ_true + extra + ρ0 (W 8.2.25)."""
        eps, g = self.f.eps, self.f.g
        a, b = self.gamma + self.rho0, self.Kd * self.alpha0 / self.sigma
        level = gam + extra + self.rho0
        if b == 0.0:
            return eps * float(self.f.inverse(level / a))
        return _sup_level(lambda x: b * x > level - a * float(g(x / eps)), eps)

    def sampled_bounds(self, gamma, loop: LoopErrors) -> PromisedBounds | None:
        """The ė box in a sampled loop (:func:`~robustrack.controllers.sampled.damping_box`, docs/theory/sensing.md),
        with P = ‖(I − M̃_a) e‖∞ ≤ ρ0 as in :meth:`bounds`. None with K_i > 0: the integral of a measurement error
        grows with time, and no bound is derived."""
        if self.Ki > 0:
            return None
        gam = _gamma_arg(gamma, self.gamma)
        mu = 1.0 - self.alpha0 / self.sigma
        box = damping_box(self.f.g, self.f.eps, _g_sup(self.f), self._gain, self.Kd, self.rho0, mu, gam, loop)
        return _sampled(gam, mu, box, "‖ė‖∞", "σρ [g((V − ν)/ε) − μ g((V + ν)/ε)] + K_d (1 − μ) V > Γ + ρ0 + (1 + μ)"
                        "(δe + (D + 1) h V + K_d ν) at the least V (docs/theory/sensing.md); no bound on e",
                        "‖(I − M̃_a) e‖∞ ≤ ρ0 (e small, W 8.2.17); the feedforward applied continuously, u held")

    def bounds(self, gamma=None) -> PromisedBounds:
        """Box ‖ė‖∞ ≤ r with (Γ + ρ0) g(r/ε) + K_d (α0/σ) r = Γ_true + ρ0; no bound on e.

        Parameters
        ----------
        gamma : float, optional
            The actual bound on ‖δq‖∞ (default: the design Γ).
        """
        gam = _gamma_arg(gamma, self.gamma)
        r = self._radius(gam)
        return PromisedBounds(
            e=math.inf,
            edot=r,
            region=f"box ‖ė‖∞ ≤ {r:.6g} (no bound on e)",
            formula=(
                "(Γ + ρ0) g(r/ε) + K_d (α0/σ) r = Γ_true + ρ0, r ≈ ε g⁻¹(1) (W 8.2.25; "
                f"W's r_ε = (ε/α_ε)^(1/2) = {self.seed_radius:.4g}, W 8.2.16, is not implied by the proof)"
            ),
            assumptions=(
                f"‖δq‖∞ ≤ {gam:.6g}; ‖M̃_a‖∞ ≤ 1 − α0/σ = {1 - self.alpha0 / self.sigma:.6g}; "
                "‖(I − M̃_a)(e + K_i∫e)‖∞ ≤ ρ0 (e small, W 8.2.17); ‖ė(0)‖∞ ≤ r"
            ),
            gamma=gam,
        )


# --------------------------------------------------------------------------- #
# GD-bar
# --------------------------------------------------------------------------- #
@dataclasses.dataclass(frozen=True, eq=False)
class GDBar(Compensator):
    """Bound-free generalized damping compensator (W 8.3.4–8.3.29).

    ``u = −(e + k ‖ė‖∞^{4n−4} ė + σ f(ė))`` (W 8.3.20), infinity norm; needs no Γ.

    Parameters
    ----------
    k : float
        k > 0; seed 10.
    n : float
        n >= 1 (n = 1 gives the smallest bound, W Remark 8.2); seed 1.
    sigma : float
        σ >= 1 (W 8.3.5); seed 1.
    f : ControlFunction
        Strictly increasing and unbounded (W 8.3.7): not sign, saturation or tanh.
    alpha0 : float
        0 < α0 < 1, only for the reported bound (‖M̃_a‖∞ ≤ 1 − α0/σ, W 8.3.8); seed 0.5.

    Examples
    --------
    >>> c = GDBar()
    >>> c.bounds().edot
    inf
    >>> round(c.bounds(gamma=100.0).edot, 5)
    0.09975
    """

    name: ClassVar[str] = "gdbar"
    source: ClassVar[str] = "W §8.3 (law 8.3.4–8.3.20, bound 8.3.17–8.3.23)"
    settings_source: ClassVar[str] = "W §8.3.4"
    parameter_info: ClassVar[dict] = {
        "k": ("k", "{qdd}/({qd})^(4n−3)", "damping gain of k ‖ė‖∞^(4n−4) ė (1/s for n = 1)"),
        "n": ("n", "", "exponent, n ≥ 1"),
        "sigma": ("σ", "{qdd}", "gain of f(ė) (the gain of e is 1 1/s²)"),
        "alpha0": ("α0", "{qdd}", "margin of the reported bound, ‖M̃_a‖∞ ≤ 1 − α0/σ (not used by the law)"),
        **_F_INFO,
    }
    k: float = 10.0
    n: float = 1.0
    sigma: float = 1.0
    f: ControlFunction = dataclasses.field(default_factory=_seed_f)
    alpha0: float = 0.5

    _rules: ClassVar[dict] = {
        "k": _positive,
        "n": _rule(lambda v: v >= 1, ">= 1 (W 8.3.14)"),
        "sigma": _sigma,
        "f": _control_fn,
        "alpha0": _unit_open,
    }
    _needs: ClassVar[tuple[str, ...]] = ("strictly_increasing", "unbounded")
    _needs_reason: ClassVar[str] = (
        "GD-bar has no Γ in its gain: only a g that grows without bound outweighs an unknown "
        "bounded δq (W 8.3.7). For the classical discontinuous case use lyapunov_redesign()."
    )

    def _setup(self):
        object.__setattr__(self, "_power", 4.0 * self.n - 4.0)

    law: ClassVar[Callable] = gdbar_law

    def law_params(self, n: int) -> GDBarParams:
        """σ, k and 4n − 4 of u = −(e + k ‖ė‖∞^{4n−4} ė + σ f(ė)) (W 8.3.20,
        :func:`~robustrack.controllers.laws.gdbar_law`)."""
        return GDBarParams(sigma=self.sigma, k=self.k, power=self._power)

    def parameter_unit(self, name: str) -> str:
        """As :meth:`Compensator.parameter_unit`; k's unit depends on n (1/s for n = 1)."""
        if name == "k":
            power = 4.0 * self.n - 3.0
            return "1/s" if power == 1.0 else f"{{qdd}}/({{qd}})^{power:g}"
        return super().parameter_unit(name)

    def seed_bound(self, gamma) -> float:
        """W's (8.3.23): ε g⁻¹(Γ (4n−3)/(4n−2)), for comparison only."""
        gam = _gamma_arg(gamma, 0.0)
        return self.f.eps * float(self.f.inverse(gam * (4 * self.n - 3) / (4 * self.n - 2)))

    def _radius(self, gam: float) -> float:
        """r with α0 g(r/ε) + (α0/σ) k r^{4n−3} = Γ (W 8.3.17)."""
        eps, g = self.f.eps, self.f.g
        a, b, m = self.alpha0, self.alpha0 * self.k / self.sigma, 4.0 * self.n - 3.0
        return _sup_level(lambda x: b * x**m > gam - a * float(g(x / eps)), eps)

    def sampled_bounds(self, gamma, loop: LoopErrors) -> PromisedBounds | None:
        """The ė box in a sampled loop for n = 1 (:func:`~robustrack.controllers.sampled.damping_box`,
        docs/theory/sensing.md): u = −(ê + k v̂) − σ f(v̂), with Γ covering ‖δq‖∞ + ‖(I − M̃_a) e‖∞ as :meth:`bounds`
        assumes (so ‖e‖∞ ≤ Γ/(1 − μ) for the law's output). None without Γ or for n > 1 (k ‖ė‖^{4n−4} ė has no
        global Lipschitz constant)."""
        if gamma is None or self.n != 1:
            return None
        gam = _gamma_arg(gamma, 0.0)
        mu = 1.0 - self.alpha0 / self.sigma
        box = damping_box(self.f.g, self.f.eps, _g_sup(self.f), self.sigma, self.k, 0.0, mu, gam, loop,
                          e_max=gam / (1.0 - mu))
        return _sampled(gam, mu, box, "‖ė‖∞", "σ [g((V − ν)/ε) − μ g((V + ν)/ε)] + k (1 − μ) V > Γ + (1 + μ)(δe + "
                        "(D + 1) h V + k ν) at the least V (docs/theory/sensing.md); no bound on e",
                        "‖δq‖∞ + ‖(I − M̃_a) e‖∞ ≤ Γ (measured along every run); the feedforward applied "
                        "continuously, u held")

    def bounds(self, gamma=None) -> PromisedBounds:
        """With Γ: box ‖ė‖∞ ≤ r, α0 g(r/ε) + (α0/σ) k r^{4n−3} = Γ; without Γ: none.

        Parameters
        ----------
        gamma : float, optional
            A bound on ‖δq‖∞, for reporting (the control law does not use it).
        """
        if gamma is None:
            return PromisedBounds(
                e=math.inf,
                edot=math.inf,
                region="none without Γ: the error is uniformly bounded (W Result 8.2)",
                formula="pass gamma=Γ for the bound (W 8.3.18, 8.3.23)",
                assumptions="δq bounded (bound unknown)",
                gamma=None,
            )
        gam = _gamma_arg(gamma, 0.0)
        r = self._radius(gam)
        return PromisedBounds(
            e=math.inf,
            edot=r,
            region=f"box ‖ė‖∞ ≤ {r:.6g} (no bound on e)",
            formula=(
                "α0 g(r/ε) + (α0/σ) k r^(4n−3) = Γ (from W 8.3.17 with the infinity-norm proof; "
                f"W's 8.3.23 gives {self.seed_bound(gam):.4g})"
            ),
            assumptions=(
                f"‖δq‖∞ ≤ Γ = {gam:.6g}; ‖M̃_a‖∞ ≤ 1 − α0/σ = {1 - self.alpha0 / self.sigma:.6g}; "
                "‖δq‖∞ + ‖(I − M̃_a) e‖∞ ≤ Γ at every time (the term W 8.3.16 drops; measured in a run); "
                "‖ė(0)‖∞ ≤ r"
            ),
            gamma=gam,
        )


# --------------------------------------------------------------------------- #
# the classical discontinuous presets
# --------------------------------------------------------------------------- #
@dataclasses.dataclass(frozen=True, eq=False)
class SlidingMode(GSS):
    """Classical sliding-mode control: GSS with g = sign (W Corollary 7.1). Chatters."""

    name: ClassVar[str] = "smc"
    source: ClassVar[str] = "W Corollary 7.1 (GSS with g = sign, W ch. 7)"
    f: ControlFunction = dataclasses.field(default_factory=_sign_f, init=False)


@dataclasses.dataclass(frozen=True, eq=False)
class LeitmannCorless(GD):
    """Leitmann–Corless controller: GD with g = sign (W Corollary 8.1). Chatters."""

    name: ClassVar[str] = "leitmann-corless"
    source: ClassVar[str] = "W Corollary 8.1 (GD with g = sign, W §8.2)"
    f: ControlFunction = dataclasses.field(default_factory=_sign_f, init=False)


@dataclasses.dataclass(frozen=True, eq=False)
class LyapunovRedesign(GDBar):
    """Lyapunov redesign: GD-bar with n = 1 and g = sign (W Corollary 8.2). Chatters."""

    name: ClassVar[str] = "lyapunov-redesign"
    source: ClassVar[str] = "W Corollary 8.2 (GD-bar with n = 1, g = sign, W §8.3)"
    n: float = dataclasses.field(default=1.0, init=False)
    f: ControlFunction = dataclasses.field(default_factory=_sign_f, init=False)
    _needs: ClassVar[tuple[str, ...]] = ()


def sliding_mode(**params) -> SlidingMode:
    """Sliding-mode control (GSS with sign); parameters as :class:`GSS` without ``f``."""
    return make_compensator("smc", **params)


def leitmann_corless(**params) -> LeitmannCorless:
    """Leitmann–Corless (GD with sign); parameters as :class:`GD` without ``f``."""
    return make_compensator("leitmann-corless", **params)


def lyapunov_redesign(**params) -> LyapunovRedesign:
    """Lyapunov redesign (GD-bar, n = 1, sign); parameters as :class:`GDBar` without ``f``, ``n``."""
    return make_compensator("lyapunov-redesign", **params)


#: name -> compensator class
COMPENSATORS: dict[str, type[Compensator]] = {
    "gss": GSS,
    "gd": GD,
    "gdbar": GDBar,
    "smc": SlidingMode,
    "leitmann-corless": LeitmannCorless,
    "lyapunov-redesign": LyapunovRedesign,
}


def make_compensator(name: str | type[Compensator], **params) -> Compensator:
    """Build a compensator from its registry name (or class) and its parameters.

    Parameters
    ----------
    name : str or type
        A key of :data:`COMPENSATORS` (case-insensitive, ``_`` read as ``-``; e.g.
        ``"gss"``, ``"gd"``, ``"gdbar"``, ``"smc"``, ``"leitmann-corless"``,
        ``"lyapunov-redesign"``, and the baselines ``"computed-torque"``, ``"lqr"``
        that :mod:`robustrack.controllers` registers), or a :class:`Compensator`
        subclass itself.
    **params
        The compensator's parameters (the init fields of its class, e.g. ``K``,
        ``gamma_prime`` for :class:`GSS`); those not given take the class defaults.

    Returns
    -------
    Compensator
        An instance of the class, its parameters validated.

    Raises
    ------
    ParameterError
        Unknown name (valid names listed), unknown parameter (valid ones
        listed), or a parameter breaking its rule.

    Examples
    --------
    >>> make_compensator("gdbar", k=5.0).k
    5.0
    """
    if isinstance(name, type) and issubclass(name, Compensator):
        cls = name
    else:
        key = str(name).strip().lower().replace("_", "-")
        if key not in COMPENSATORS:
            raise ParameterError(f"Unknown compensator {name!r}; valid names: {', '.join(COMPENSATORS)}.")
        cls = COMPENSATORS[key]
    valid = [fld.name for fld in dataclasses.fields(cls) if fld.init]
    unknown = sorted(set(params) - set(valid))
    if unknown:
        raise ParameterError(
            f"{cls.__name__} has no parameter(s) {', '.join(map(repr, unknown))}; valid: {', '.join(valid)}."
        )
    return cls(**params)
