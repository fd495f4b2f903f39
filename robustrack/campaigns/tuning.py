"""Tuning to a target bound: the gentlest compensator whose *promised* bound meets a target.

What is optimized, and why
--------------------------
The constraint is the bound the compensator *promises* (``compensator.bounds(Γ)``, the
Lyapunov box of :mod:`robustrack.controllers.compensators`) — not a measured error:
a promise holds for every plant with ‖δq‖∞ ≤ Γ, a measurement only for the plants
simulated (the verifying Monte Carlo measures those).

The cost is the control law's *gain at the edge of its promised box*,
``κ = |∂u/∂ė|`` at e = 0, ė = the promised ‖ė‖∞ bound (:func:`control_effort`; in 1/s).
Why not the measured force? Once the error is in its box, the compensator's force is
fixed by the uncertainty it cancels (‖Qᵘ‖ ≈ ‖M δq‖, about the same for every tuning that
keeps the promise); what tuning changes is how steeply u rises with the error to hold
it in a smaller box: κ is the stiffness of the error dynamics (the step size an
integrator or a sampled implementation needs: the zero-order-hold band is of order h·κ),
the amplification of velocity-measurement noise, and the peak force for a given
disturbance. Shrinking a promised box always raises κ; tuning finds the parameters that
raise it least.

Parameters chosen: the compensator's gain (GSS: K, GD: K_d, GD-bar: k) and ε; the
uncertainty bound Γ′ (GSS) or Γ (GD) is set to the Γ given — the least value for which
the promise is valid (Γ′ ≥ Γ, W 7.2.9); a larger one only multiplies the switching gain
(for a power-law g, κ depends on the box size alone, so raising Γ′ and ε together buys
nothing). The other parameters (β0, α0, σ, g and its shape) are kept.

Method: for a gain G, the promised bound decreases with ε, so the largest ε meeting the
target is found by bisection (log scale); κ(G) at that ε is minimized over log G by a
grid and a bounded Brent refinement. Deterministic, about a second.
"""

from __future__ import annotations

import copy
import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from ..errors import ParameterError

__all__ = ["tune_compensator", "TuneResult", "control_effort", "TUNABLE"]

#: name → (gain parameter, its search range, the parameter set to Γ or None)
TUNABLE = {
    "gss": ("K", (1e-2, 1e7), "gamma_prime"),
    "gd": ("Kd", (1e-3, 1e7), "gamma"),
    "gdbar": ("k", (1e-3, 1e7), None),
}
_EPS_RANGE = (1e-12, 1e3)


def control_effort(compensator, gamma=None) -> float:
    """The law's gain |∂u/∂ė| at the edge of its promised box (e = 0, ė = the ‖ė‖∞ bound), in 1/s.

    Parameters
    ----------
    compensator : Compensator
        GSS, GD, GD-bar (or any with ``__call__`` and ``bounds``).
    gamma : float, optional
        Γ for the bound (default: the compensator's design value).

    Returns
    -------
    float
        ``inf`` when no finite ‖ė‖∞ bound is promised (e.g. GD-bar without Γ).
    """
    r = compensator.bounds(gamma).edot
    if not math.isfinite(r) or r <= 0:
        return math.inf
    K = np.asarray(getattr(compensator, "K", 1.0), dtype=float)
    n = K.size if K.ndim else 1
    z = np.zeros(n)
    h = 1e-6
    up = compensator(0.0, np.zeros(n), np.full(n, r * (1 + h)), z)
    down = compensator(0.0, np.zeros(n), np.full(n, r * (1 - h)), z)
    return float(np.max(np.abs(up - down)) / (2 * h * r))


@dataclass(frozen=True)
class TuneResult:
    """A tuned compensator and what it promises.

    Attributes
    ----------
    compensator : Compensator
        The tuned one (validated).
    params : dict
        The parameters chosen (name → value), e.g. ``{"K": …, "eps": …, "gamma_prime": …}``.
    bounds : PromisedBounds
        What it promises at ``gamma``.
    effort : float
        Its :func:`control_effort` κ.
    before_bounds : PromisedBounds
    before_effort : float
        The same for the compensator given.
    target_e, target_edot : float or None
    gamma : float
    note : str
        What was optimized and why (the module docstring in one paragraph).
    """

    compensator: object
    params: dict
    bounds: object
    effort: float
    before_bounds: object
    before_effort: float
    target_e: float | None
    target_edot: float | None
    gamma: float
    note: str

    def to_dict(self) -> dict:
        """JSON-ready: ``compensator``, ``params``, ``bounds``, ``effort``, ``before``, ``targets``, ``gamma``,
        ``note``.

        Returns
        -------
        dict
        """
        return {"compensator": self.compensator.name, "params": dict(self.params),
                "bounds": {"e": self.bounds.e, "edot": self.bounds.edot},
                "effort": self.effort,
                "before": {"bounds": {"e": self.before_bounds.e, "edot": self.before_bounds.edot},
                           "effort": self.before_effort},
                "targets": {"e": self.target_e, "edot": self.target_edot}, "gamma": self.gamma,
                "note": self.note}


NOTE = ("minimized: the law's gain |∂u/∂ė| at the edge of its promised box (stiffness, noise amplification, "
        "sampled-control band), subject to the promised bound ≤ target at Γ; chosen: the gain and ε, with Γ′ "
        "(or Γ) = Γ, the least valid value. The steady force is fixed by the uncertainty and barely depends on "
        "the tuning, so it is measured by the verifying Monte Carlo, not optimized.")


def _target(value, name):
    if value is None:
        return None
    v = float(value)
    if not math.isfinite(v) or v <= 0:
        raise ParameterError(f"`{name}` must be a number > 0; got {value!r}.")
    return v


def tune_compensator(compensator, *, gamma, target_e=None, target_edot=None) -> TuneResult:
    """Choose the gain, ε and Γ′ so the promised bound meets the target with the least gain (module docstring).

    Parameters
    ----------
    compensator : GSS, GD or GDBar
        The starting compensator (its other parameters and control function are kept).
    gamma : float
        Γ, the bound on ‖δq‖∞ of the uncertainty set (e.g. a Γ Monte Carlo's Γ′).
    target_e, target_edot : float, optional
        Targets on the promised ‖e‖∞ and ‖ė‖∞ bounds (at least one).

    Returns
    -------
    TuneResult

    Raises
    ------
    ParameterError
        No target; a compensator that cannot be tuned (a sign law, a baseline, a target on
        ‖e‖∞ for GD or GD-bar, which promise none); a target no parameter in range reaches.
    """
    name = getattr(compensator, "name", type(compensator).__name__)
    te, ted = _target(target_e, "target_e"), _target(target_edot, "target_edot")
    if te is None and ted is None:
        raise ParameterError("give a target: `target_e` (promised ‖e‖∞) and/or `target_edot` (promised ‖ė‖∞).")
    if name not in TUNABLE:
        raise ParameterError(f"compensator {name!r} cannot be tuned; tunable: {sorted(TUNABLE)} (a sign law's gain "
                             "is unbounded and its ε plays no role: tune its continuous version).")
    gain_name, (g_lo, g_hi), gamma_name = TUNABLE[name]
    gam = float(gamma)
    if not math.isfinite(gam) or gam < 0:
        raise ParameterError(f"`gamma` must be a finite number >= 0; got {gamma!r}.")
    if te is not None and not math.isfinite(compensator.bounds(gam).e):
        raise ParameterError(f"{name} promises no bound on ‖e‖∞ (only on ‖ė‖∞); give a target on ‖ė‖∞ "
                             "(target_edot, --target-edot).")
    if getattr(compensator, "discontinuous", False):
        raise ParameterError(f"compensator {name!r} uses a discontinuous g (sign): nothing to tune.")
    f0 = compensator.f
    lo_gain = g_lo
    if name == "gd" and compensator.Ki > 0:
        lo_gain = max(g_lo, 1.001 * compensator.Ki)
    fixed = {gamma_name: gam} if gamma_name else {}
    base = dataclasses.replace(compensator, **fixed)
    if gain_name == "K":
        base = dataclasses.replace(base, K=float(np.max(np.asarray(compensator.K, dtype=float))))

    def build(gain, eps):
        f = copy.copy(f0)
        object.__setattr__(f, "eps", float(eps))  # ε does not change g's checked properties
        c = copy.copy(base)
        object.__setattr__(c, gain_name, float(gain))
        object.__setattr__(c, "f", f)
        c._setup()
        return c

    def ratio(c):
        b = c.bounds(gam)
        r = 0.0
        if te is not None:
            r = max(r, b.e / te)
        if ted is not None:
            r = max(r, b.edot / ted)
        return r if math.isfinite(r) else math.inf

    def best_eps(gain):
        lo, hi = math.log(_EPS_RANGE[0]), math.log(_EPS_RANGE[1])
        if ratio(build(gain, math.exp(lo))) > 1:
            return None
        if ratio(build(gain, math.exp(hi))) <= 1:
            return math.exp(hi)
        for _ in range(80):
            mid = 0.5 * (lo + hi)
            if ratio(build(gain, math.exp(mid))) <= 1:
                lo = mid
            else:
                hi = mid
            if hi - lo < 1e-10:
                break
        return math.exp(lo)

    def cost(log_gain):
        gain = math.exp(log_gain)
        eps = best_eps(gain)
        if eps is None:
            return math.inf, None
        return control_effort(build(gain, eps), gam), eps

    grid = np.linspace(math.log(lo_gain), math.log(g_hi), 61)
    costs = [cost(x)[0] for x in grid]
    i = int(np.argmin(costs))
    if not math.isfinite(costs[i]):
        raise ParameterError(f"no {gain_name} in [{lo_gain:g}, {g_hi:g}] and ε in [{_EPS_RANGE[0]:g}, "
                             f"{_EPS_RANGE[1]:g}] makes {name} promise the target at Γ = {gam:g}.")
    from scipy.optimize import minimize_scalar

    a, b = grid[max(i - 1, 0)], grid[min(i + 1, grid.size - 1)]
    best_x = grid[i]
    if b > a:
        res = minimize_scalar(lambda x: cost(x)[0], bounds=(a, b), method="bounded", options={"xatol": 1e-6})
        if res.success and res.fun <= costs[i]:
            best_x = float(res.x)
    gain = math.exp(best_x)
    eps = cost(best_x)[1]
    f = dataclasses.replace(f0, eps=eps)
    params = {gain_name: gain, "eps": eps, **fixed}
    tuned = dataclasses.replace(base, **{gain_name: gain, "f": f})
    return TuneResult(tuned, params, tuned.bounds(gam), control_effort(tuned, gam), compensator.bounds(gam),
                      control_effort(compensator, gam), te, ted, gam, NOTE)
