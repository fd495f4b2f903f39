"""The compensators' boxes in the loop a robot runs: a zero-order hold, a delay, and a sensor (docs/theory/sensing.md).

The control applied on [t_k, t_{k+1}) is the law at the measurement of t_{k−D}: positions q̂ = q + δq̂ with
|δq̂_i| ≤ δe_i, a velocity v̂ = q̇ + δv̂ with |δv̂_i| ≤ δė_i(A) (an estimated velocity lags by an amount that grows
with the actual loop's acceleration A), D whole samples late. The error dynamics keep their form (W 5.3.3–5.3.6)

    ë = δq + (I − M̃_a) u_applied,   ‖δq‖∞ ≤ Γ,   ‖M̃_a‖∞ ≤ μ,

and u_applied differs from the law at the current state only through its arguments: by at most η_i on joint i of ŝ
(GSS) or ν_i of v̂ (GD, GD-bar), each a measurement error plus the state's variation over the (D + 1) h since its
measurement. Those variations are bounded by the box the bound itself describes (its ė and ë bounds), so the bound
is a self-consistent fixed point, computed before the run:

1. assume the box (‖s‖∞ ≤ S for GSS; ‖ė‖∞ ≤ V for the damping laws);
2. bound, inside it, the law's largest output U, the loop's acceleration error Ë = Γ + (1 + μ) U (by induction over
   hold intervals: the measurement applied now was taken when the bound already held), and through Ë the velocity
   estimate's lag and the variations over (D + 1) h;
3. check that the box's boundary repels: at the largest component the law's term dominates, with the measurement
   error on the wrong side (g((S − η)/ε) − μ g((S + η)/ε): the largest |f| may sit on another joint);
4. check the start (and the D samples before the first control arrives, when nothing acts) lies inside the box.

No box that passes: **no bound**. The least box found is the bound; each step is checked, not assumed, by
``tests/test_sampled_bounds.py`` at the worst measurement sequence as well as on runs.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

__all__ = ["LoopErrors", "SampledBox", "gss_box", "damping_box"]

#: The boxes scanned for the least one that passes (relative to the scale of the problem, then refined).
_GRID = np.logspace(-12, 12, 73)


@dataclasses.dataclass(frozen=True)
class LoopErrors:
    """What the law sees wrong in a sampled loop, per joint (docs/theory/sensing.md, "The measurement error").

    Attributes
    ----------
    h : float
        The hold's period (s).
    delay : int
        D, whole samples from measurement to actuation.
    de : ndarray (n,)
        sup |q̂_i − q_i| (noise at its quantile, plus the encoder's rounding or truncation).
    noise_edot : ndarray (n,)
        The velocity error's part that does not depend on the motion (measured noise, or differenced positions).
    lag : float
        c of the estimator's lag c h A, A the sup |q̈_c| of the controlled motion (0: a measured velocity).
    start_edot : ndarray (n,)
        |ė_i(0)|: the estimators start from the reference's velocity (0 for a measured velocity).
    start_adds : bool
        How that start error enters: added to the rest (a filter forgets it geometrically) or, for the backward
        difference, at the first sample only (a max).
    accel : ndarray (n,)
        sup |q̈_i| of the nominal motion (q̈_c = q̈ + ë).
    e0, edot0 : ndarray (n,)
        The start's |e_i(0)|, |ė_i(0)|.
    held_force, held_mass, speed : float
        A loop that holds the whole τ = Qᶜ(t_k) + M(q̂) u over a sample, as a motor driver does (0, 0, 0: the
        theorem's loop, u held with Qᶜ(t) + M(q_c) u applied continuously): h sup ‖M⁻¹ Q̇ᶜ‖∞ (Qᶜ's change over a
        sample, as an acceleration), sup Σ_k ‖M⁻¹ ∂M/∂q_k‖∞ (M's relative change per unit of q) and sup ‖q̇‖∞,
        all along the nominal motion (docs/theory/sensing.md, "A loop that holds τ").
    """

    h: float
    delay: int
    de: np.ndarray
    noise_edot: np.ndarray
    lag: float
    start_edot: np.ndarray
    start_adds: bool
    accel: np.ndarray
    e0: np.ndarray
    edot0: np.ndarray
    held_force: float = 0.0
    held_mass: float = 0.0
    speed: float = 0.0

    @property
    def window(self) -> float:
        """(D + 1) h: the longest time from a measurement to the end of the interval it acts on."""
        return (self.delay + 1) * self.h

    def held_torque(self, mu: float, S: float, force: float) -> float:
        """The acceleration a held τ adds to ë beside the theorem's loop, inside the box of ‖ė‖∞ ≤ 2S with the law's
        output at most ``force``: (1 + μ) [held_force + held_mass (max δe + (D + 1) h (speed + 2S)) U]
        (M_a⁻¹ = (I − M̃_a) M⁻¹, so ‖M_a⁻¹ x‖∞ ≤ (1 + μ) ‖M⁻¹ x‖∞; M is evaluated at the measurement q̂, taken up
        to (D + 1) h before)."""
        if not (self.held_force or self.held_mass):
            return 0.0
        reach = float(np.max(self.de)) + self.window * (self.speed + 2.0 * S)
        return (1.0 + mu) * (self.held_force + self.held_mass * reach * force)

    def velocity_error(self, eddot: float) -> np.ndarray:
        """δė_i when the error's acceleration is at most ``eddot``: noise + c h (sup|q̈_i| + Ë), with the start."""
        steady = self.noise_edot + self.lag * self.h * (self.accel + eddot)
        return steady + self.start_edot if self.start_adds else np.maximum(steady, self.start_edot)

    @classmethod
    def exact(cls, h: float, n: int, e0=None, edot0=None) -> "LoopErrors":
        """The hold alone: the state measured exactly at the sample instants, no delay."""
        z = np.zeros(n)
        return cls(float(h), 0, z, z, 0.0, z, True, z, z if e0 is None else np.abs(e0),
                   z if edot0 is None else np.abs(edot0))


@dataclasses.dataclass(frozen=True)
class SampledBox:
    """A box that passed every check (:func:`gss_box`, :func:`damping_box`), with the terms that made it.

    Attributes
    ----------
    size : float
        S (GSS: ‖s‖∞ ≤ S) or V (the damping laws: ‖ė‖∞ ≤ V).
    e : float
        The ‖e‖∞ bound (inf where the law bounds no e).
    edot : float
        The ‖ė‖∞ bound.
    eddot : float
        Ë, the bound of ‖ë‖∞ inside the box.
    force : float
        U, the largest |u_i| the law outputs inside the box.
    terms : dict
        The disturbance's parts at the box (``gamma``, ``measurement``, ``hold_delay``, ``coupling``) and the
        argument errors (``eta`` or ``nu``), for the report.
    """

    size: float
    e: float
    edot: float
    eddot: float
    force: float
    terms: dict


def _eddot(force_at, gamma: float, mu: float, start: float = 0.0, extra=None) -> float:
    """The least Ë with Ë = Γ + X(U) + (1 + μ) U(Ë), U increasing in Ë; inf if the iteration does not settle.

    X (``extra``, increasing in U; default 0) is what a loop that holds τ adds (:meth:`LoopErrors.held_torque`).

    By induction over hold intervals the loop's sup |ë| is at most this least fixed point: on the first D samples
    nothing acts (|ë| ≤ Γ + X(0) ≤ Ë), and a measurement taken while |ë| ≤ Ë gives |ë| ≤ Γ + X(U) + (1 + μ) U(Ë) = Ë
    after it.
    The iteration of an increasing map from any ``start`` at most the least fixed point (a smaller box's, whose U is
    smaller) climbs to it.
    """
    x = max(gamma, start)
    for _ in range(200):
        force = force_at(x)
        new = gamma + (0.0 if extra is None else extra(force)) + (1.0 + mu) * force
        if not math.isfinite(new) or new > 1e300:
            return math.inf
        if new <= x * (1.0 + 1e-12) + 1e-300:
            return max(new, x)
        x = new
    return math.inf


def _least(passes, scale: float):
    """The least box that passes, or None.

    ``passes(x)`` returns (box or None, margin): the margin of the repelling inequality at x (−inf where a
    precondition fails). The grid (× ``scale``) is scanned upward; where no grid point passes, the margin's largest
    value is sought between the neighbours of the best grid point (golden section on log x: a narrow window of boxes
    between the grid's points is found). The least passing point is then refined by bisection toward the last that
    fails. Any box returned passed every check: the search only decides how small it is.
    """
    grid = _GRID * scale
    margins = np.full(grid.size, -np.inf)
    for i, x in enumerate(grid):
        box, margins[i] = _quiet(passes, x)
        if box is not None:
            return _down(passes, grid[i - 1] if i else 0.0, x, box)
    i = int(np.argmax(margins))
    if not np.isfinite(margins[i]):
        return None
    a, b = math.log(grid[max(i - 1, 0)]), math.log(grid[min(i + 1, grid.size - 1)])
    phi = 0.5 * (math.sqrt(5.0) - 1.0)
    c, d = b - phi * (b - a), a + phi * (b - a)
    fc, fd = _quiet(passes, math.exp(c)), _quiet(passes, math.exp(d))
    for _ in range(60):
        for x, found in ((c, fc), (d, fd)):
            if found[0] is not None:
                return _down(passes, grid[max(i - 1, 0)], math.exp(x), found[0])
        if fc[1] >= fd[1]:
            b, d, fd = d, c, fc
            c = b - phi * (b - a)
            fc = _quiet(passes, math.exp(c))
        else:
            a, c, fc = c, d, fd
            d = a + phi * (b - a)
            fd = _quiet(passes, math.exp(d))
    return None


def _quiet(passes, x):
    with np.errstate(over="ignore", invalid="ignore"):
        return passes(x)


def _down(passes, lo: float, hi: float, best):
    """Bisection between ``lo`` (fails) and ``hi`` (passes with ``best``) toward the least passing box."""
    for _ in range(80):
        mid = 0.5 * (lo + hi)
        box, _ = _quiet(passes, mid)
        if box is not None:
            hi, best = mid, box
        else:
            lo = mid
        if hi - lo <= 1e-13 * hi:
            break
    return best


def gss_box(k, g, eps: float, g_sup: float, gain: float, mu: float, gamma: float, loop: LoopErrors):
    """GSS's sampled box: the least S with ‖s‖∞ ≤ S invariant in the loop ``loop`` (docs/theory/sensing.md, "GSS").

    Inside B(S) = {|s_i| ≤ S, |e_i| ≤ S/k_i}: |ė_i| ≤ 2S; the law's |u_i| ≤ k_i (2S + δė_i) + σβ g(Ŝ_i/ε) with
    Ŝ_i = S + k_i δe_i + δė_i; Ë = Γ + (1 + μ) U. The applied v̂ differs from ė(t) by ν_i = δė_i + (D + 1) h Ë,
    the applied ŝ from s(t) by η_i = k_i δe_i + δė_i + (D + 1) h Ṡ_i, with |ṡ_i| ≤ Ṡ_i = min(2 k_i S + Ë,
    Γ + 2 μ k_max S + (1 + μ) max k ν + (1 + μ) σβ g(Ŝ/ε)) (the second from ṡ's own form). At the
    largest |s_i| = S > max η, D⁺‖s‖∞ < 0 when

        σβ [g((S − η)/ε) − μ g((S + η)/ε)] > Γ + 2 μ k_max S + (1 + μ) max_i k_i ν_i.

    Then ‖e_i‖ ≤ S/k_i (ė_i = −k_i e_i + s_i), ‖ė‖∞ ≤ 2S.

    Parameters
    ----------
    k : ndarray (n,)
        Surface gains.
    g : callable
        The control function's g (odd, non-decreasing), applied as g(x/ε).
    eps, g_sup : float
        ε and sup g (inf when g is unbounded).
    gain : float
        σβ.
    mu, gamma : float
        ‖M̃_a‖∞ ≤ μ, ‖δq‖∞ ≤ Γ.
    loop : LoopErrors

    Returns
    -------
    SampledBox or None
        None: no box passes (no bound), or the start lies outside every box that does.
    """
    k = np.asarray(k, dtype=float)
    kmax, w = float(k.max()), loop.window

    def g_at(x):
        return np.minimum(g(np.asarray(x, dtype=float) / eps), g_sup)

    below = [0.0, 0.0]  # (S, Ë) of the largest box seen below: its Ë starts the next, larger one's iteration

    def passes(S):
        def force_at(Edd):
            ded = loop.velocity_error(Edd)
            return float(np.max(k * (2.0 * S + ded) + gain * g_at(S + k * loop.de + ded)))

        def held(force):  # what a loop that holds τ adds to Γ inside B(S)
            return loop.held_torque(mu, S, force)

        Edd = _eddot(force_at, gamma, mu, below[1] if S >= below[0] else 0.0, held)
        if not math.isfinite(Edd):
            return None, -math.inf
        if S >= below[0]:
            below[:] = [S, Edd]
        ded = loop.velocity_error(Edd)
        nu = ded + w * Edd
        gam = gamma + held(force_at(Edd))  # Γ with the held τ's part (Γ itself in the theorem's loop)
        # |ṡ_i| inside the box: k_i |ė_i| + |ë_i|, or from ṡ's own form (the law's −K ė cancels in it)
        sdot = np.minimum(2.0 * k * S + Edd, gam + 2.0 * mu * kmax * S + (1.0 + mu) * float(np.max(k * nu))
                          + (1.0 + mu) * gain * float(np.max(g_at(S + k * loop.de + ded))))
        eta = float(np.max(k * loop.de + ded + w * sdot))
        if not S > eta:
            return None, -math.inf
        push = gain * float(g_at(S - eta) - mu * g_at(S + eta))
        measurement = (1.0 + mu) * float(np.max(k * ded))  # the sensor's part of ν (noise, lag, start)
        disturbance = gam + 2.0 * mu * kmax * S + (1.0 + mu) * float(np.max(k * nu))
        if not push > disturbance:
            return None, push - disturbance
        # the start: nothing acts for D samples (ë = δq, and a held Qᶜ(t_k)'s change), and the box must hold the
        # state all along
        t0 = loop.delay * loop.h
        g0 = gamma + held(0.0)
        e_end = loop.e0 + loop.edot0 * t0 + 0.5 * g0 * t0 ** 2
        s_end = k * e_end + loop.edot0 + g0 * t0
        if not (np.all(s_end < S) and np.all(k * e_end <= S)):
            return None, -math.inf
        terms = {"gamma": gamma, "coupling": 2.0 * mu * kmax * S, "measurement": measurement,
                 "hold_delay": disturbance - gam - 2.0 * mu * kmax * S - measurement, "eta": eta,
                 "nu": float(nu.max()), "dominance": push}
        if gam > gamma:
            terms["held_torque"] = gam - gamma
        return SampledBox(float(S), float(np.max(S / k)), 2.0 * float(S), Edd, force_at(Edd), terms), push - disturbance

    scale = max(eps, float(np.max(loop.de + loop.noise_edot)), 1e-300)
    return _least(passes, scale)


def damping_box(g, eps: float, g_sup: float, gain: float, damping: float, P: float, mu: float, gamma: float,
                loop: LoopErrors, e_max: float | None = None):
    """GD's (K_i = 0) and GD-bar's (n = 1) sampled ė box (docs/theory/sensing.md, "GD and GD-bar").

    u = −(ê + c v̂) − G f(v̂) (GD: c = K_d, G = σρ; GD-bar: c = k, G = σ). Inside ‖ė‖∞ ≤ V with the assumption
    P = ‖(I − M̃_a) e‖∞ ≤ P̄ (so ‖e‖∞ ≤ P̄/(1 − μ)): |u_i| ≤ ‖e‖ + δe + c (V + δė) + G g((V + δė)/ε); the applied
    v̂ differs from ė(t) by ν_i = δė_i + (D + 1) h Ë, ê from e(t) by δe_i + (D + 1) h V. At the largest |ė_i| = V > ν,
    D⁺‖ė‖∞ < 0 when

        G [g((V − ν)/ε) − μ g((V + ν)/ε)] + c (1 − μ) V > Γ + P̄ + (1 + μ) (max δe + (D + 1) h V + c max ν).

    Parameters
    ----------
    g : callable
    eps, g_sup : float
    gain : float
        G.
    damping : float
        c.
    P : float
        P̄, the assumed bound of ‖(I − M̃_a) e‖∞ (checked along every run).
    mu, gamma : float
    loop : LoopErrors
    e_max : float, optional
        A bound of ‖e‖∞ for the law's output (default P̄/(1 − μ)).

    Returns
    -------
    SampledBox or None
    """
    w = loop.window
    if e_max is None:
        e_max = P / (1.0 - mu) if mu < 1.0 else math.inf

    def g_at(x):
        return float(np.minimum(g(np.asarray(x, dtype=float) / eps), g_sup))

    def passes(V):
        def force_at(Edd):
            ded = loop.velocity_error(Edd)
            return float(e_max + np.max(loop.de) + damping * (V + np.max(ded)) + gain * g_at(V + float(np.max(ded))))

        Edd = _eddot(force_at, gamma, mu)
        if not math.isfinite(Edd):
            return None, -math.inf
        ded = loop.velocity_error(Edd)
        nu = float(np.max(ded + w * Edd))
        if not V > nu:
            return None, -math.inf
        push = gain * (g_at(V - nu) - mu * g_at(V + nu)) + damping * (1.0 - mu) * V
        measurement = (1.0 + mu) * float(np.max(loop.de) + damping * np.max(ded))
        disturbance = gamma + P + (1.0 + mu) * (float(np.max(loop.de)) + w * V + damping * nu)
        if not push > disturbance:
            return None, push - disturbance
        t0 = loop.delay * loop.h
        if not np.all(loop.edot0 + gamma * t0 < V):
            return None, -math.inf
        terms = {"gamma": gamma, "coupling": P, "measurement": measurement,
                 "hold_delay": disturbance - gamma - P - measurement, "nu": nu, "dominance": push}
        return SampledBox(float(V), math.inf, float(V), Edd, force_at(Edd), terms), push - disturbance

    scale = max(eps, float(np.max(loop.de + loop.noise_edot)), 1e-300)
    return _least(passes, scale)
