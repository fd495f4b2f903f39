"""Certified Γ and ‖M̃ₐ‖ over a box of plants, and the closed certificate (docs/theory/certificate.md).

:func:`certify` encloses, in arb ball arithmetic, the supremum over every actual plant in a
:class:`~robustrack.certification.box.ParameterBox` and every time of the run of

* ‖δq‖∞, the uncertainty Γ bounds (W 5.3.5), along the nominal motion the tracking follows
  (``problem.nominal_run()``'s DOP853 dense output, between its output points too);
* ‖M̃ₐ‖∞ (W 5.3.4), the second assumption of every compensator's bound;
* ‖M_a⁻¹M‖∞ = ‖I − M̃ₐ‖∞, which turns GD's ρ0 condition (W 8.2.17) into a radius on e + K_i∫e;

each as an interval [L, U]: U a rigorous upper bound, L attained by a real plant at a real time
(which a ``run`` of that plant reproduces). At the *closed* level the same suprema are taken over
the tube of the compensator's promised error bound around the nominal motion, and the first-exit
argument's conditions are checked: if they hold, the promised bound holds for every plant in the
box for the whole run.
"""

from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass, field

import numpy as np

from .._validate import as_float_array
from ..errors import ParameterError
from .box import ParameterBox, check_physical
from .fingerprint import problem_fingerprint
from . import model as _model
from .model import EnclosureModel, Interpolant, check_certifiable, state_cell, time_cell
from .search import maximize

__all__ = ["certify", "Certificate", "CertifiedBound", "Condition", "LEVELS", "QUANTITIES", "NOT_ENCLOSED"]

#: What a certificate can prove: along the nominal motion ("box") or in the tube of the promised bound
#: around it with the first-exit argument's conditions ("closed").
LEVELS = ("box", "closed")

#: The certified quantities (keys of :data:`robustrack.tracking.assess.ASSUMPTIONS` where they limit one).
QUANTITIES = {"max_norm_dq": "sup ‖δq‖∞", "max_norm_Mtilde": "sup ‖M̃ₐ‖∞", "max_norm_MaInvM": "sup ‖M_a⁻¹M‖∞"}

#: What no certificate here encloses (printed with every certificate).
NOT_ENCLOSED = (
    "not enclosed: (1) the nominal run's own integration error — δq is certified along the DOP853 dense output the "
    "tracking follows, which on a chaotic plant can be far from the exact nominal solution (the tracking does not "
    "need the exact one, only this reference); its defect against the nominal equations of motion (dq̇/dt − q̈ of the "
    "interpolant) enters the error dynamics beside δq and is estimated at the centres of the cells evaluated, not "
    "bounded; (2) floating-point rounding inside the tracking loop's own evaluation of δq (the certificate is about "
    "the exact values at the interpolated states).")


@dataclass(frozen=True)
class CertifiedBound:
    """A certified supremum: ``lower <= sup <= upper`` over the box × the run (× the tube).

    Attributes
    ----------
    quantity : str
        A key of :data:`QUANTITIES`.
    upper, lower : float
        Rigorous upper bound; the best value found at a real point (rounded down).
    finished : bool
        The gap reached the tolerance; False: the budget ran out (``upper`` is still an upper bound).
    witness : dict
        The point of ``lower``: ``t`` (s), ``params`` ({name: value}), ``error`` ((e, ė) in the tube or None).
    cells, evaluations : int
    cpu_s : float
    unenclosed : int
        Cells where an enclosure failed (a mass matrix that may be singular there) before they were split.
    settled_against : float or None
        At the closed level: the limit the search was settled against (U ≤ limit or L > limit) before the
        gap reached the tolerance (``finished`` then means settled); None otherwise.
    """

    quantity: str
    upper: float
    lower: float
    finished: bool
    witness: dict
    cells: int
    evaluations: int
    cpu_s: float
    unenclosed: int = 0
    settled_against: float | None = None

    @property
    def gap(self) -> float:
        """(U − L)/U (0 when U = L)."""
        return 0.0 if self.upper <= self.lower or self.upper == 0 else (self.upper - self.lower) / self.upper

    def to_dict(self) -> dict:
        return {"quantity": self.quantity, "upper": self.upper, "lower": self.lower, "gap": self.gap,
                "finished": self.finished, "witness": self.witness, "cells": self.cells,
                "evaluations": self.evaluations, "cpu_s": self.cpu_s, "unenclosed": self.unenclosed,
                "settled_against": self.settled_against}


@dataclass(frozen=True)
class Condition:
    """One condition of the first-exit argument: ``value <= limit`` (held) or not, and by how much."""

    name: str
    value: float
    limit: float
    held: bool
    text: str

    def to_dict(self) -> dict:
        return {"name": self.name, "value": self.value, "limit": self.limit, "held": self.held, "text": self.text}


@dataclass(frozen=True)
class Certificate:
    """The result of :func:`certify`.

    Attributes
    ----------
    level : str
        ``"box"`` (along the nominal motion) or ``"closed"`` (in the tube, with the conditions).
    box : ParameterBox
    bounds : dict
        Quantity → :class:`CertifiedBound`.
    tolerance : float
        The relative gap asked for.
    t_span : (float, float)
    tube : (float, float) or None
        (ρ_e, ρ_ė): the tube's radii at the closed level — the promised bounds (GSS), or for GD and
        GD-bar, which bound ė only, ρ_ė = r and ρ_e the radius ‖e(t0)‖∞ + r (t1 − t0) reached at the end
        (the tube grows linearly in time; ``extras["tube"]`` has its parameters).
    gamma : float or None
        The Γ of the promised bound the closed level checks.
    conditions : tuple of Condition
        The first-exit argument's conditions (closed level; empty otherwise).
    defect_estimate : float
        The largest ‖dq̇/dt − q̈‖∞ of the interpolant seen at the cells' centres (an estimate, not a bound).
    wall_s : float
    """

    level: str
    box: ParameterBox
    bounds: dict
    tolerance: float
    t_span: tuple
    tube: tuple | None = None
    gamma: float | None = None
    conditions: tuple = ()
    defect_estimate: float = math.nan
    wall_s: float = 0.0
    compensator: str | None = None
    extras: dict = field(default_factory=dict)

    @property
    def finished(self) -> bool:
        """Every bound reached the tolerance."""
        return all(b.finished for b in self.bounds.values())

    @property
    def closed(self) -> bool | None:
        """The closed certificate holds (every condition held); None below the closed level."""
        if self.level != "closed":
            return None
        return bool(self.conditions) and all(c.held for c in self.conditions)

    @property
    def forces(self):
        """The actual plants' friction and disturbance it covers (a :class:`~robustrack.certification.forces.ForceBox`),
        or None."""
        doc = self.extras.get("forces")
        if doc is None:
            return None
        from .forces import ForceBox

        return ForceBox.from_dict(doc)

    @property
    def gamma_certified(self) -> float:
        """The certified upper bound of sup ‖δq‖∞: a Γ valid for every plant in the box."""
        return self.bounds["max_norm_dq"].upper

    def to_dict(self) -> dict:
        """JSON-ready."""
        return {"level": self.level, "proved": self.proved_text(), "box": self.box.to_dict(),
                "tolerance": self.tolerance, "t_span": list(self.t_span), "finished": self.finished,
                "closed": self.closed, "tube": None if self.tube is None else list(self.tube), "gamma": self.gamma,
                "compensator": self.compensator,
                "bounds": {k: b.to_dict() for k, b in self.bounds.items()},
                "conditions": [c.to_dict() for c in self.conditions], "defect_estimate": self.defect_estimate,
                "not_enclosed": NOT_ENCLOSED, "wall_s": self.wall_s, **self.extras}

    def proved_text(self) -> str:
        """Which level was proved, in one line (what every output says)."""
        if not self.finished:
            state = "unfinished (bounds valid, gap above the tolerance)"
        else:
            state = "finished"
        if self.level == "closed":
            verdict = ("CLOSED: the promised bound holds for every plant in the box over the whole run"
                       if self.closed else "NOT closed: a condition of the first-exit argument fails")
            return f"certified over the box and the tube ({state}); {verdict}"
        return f"certified over the box along the nominal motion ({state})"

    def text(self) -> str:
        """A plain-text summary (what the command prints)."""
        lines = [f"level: {self.proved_text()}",
                 "box: " + ", ".join(f"{lab} ∈ [{lo:.6g}, {hi:.6g}]" for lab, lo, hi in
                                     zip(self.box.labels, self.box.flat_lower, self.box.flat_upper)),
                 f"time: [{self.t_span[0]:g}, {self.t_span[1]:g}] s, covered between output points"]
        if self.forces is not None:
            lines.insert(2, self.forces.text())
        grow = (self.extras.get("tube") or {}).get("rate", 0.0)
        if self.tube is not None and grow:
            t = self.extras["tube"]
            lines.append(f"tube: ‖e‖∞ ≤ ‖e(t0)‖∞ + r (t − t0) = {t['e0']:.4g} + {grow:.4g} (t − t0) (≤ {t['e_end']:.4g} "
                         f"at the end: {self.compensator} bounds ė only, e by integrating it), ‖ė‖∞ ≤ r = "
                         f"{self.tube[1]:.4g} around the nominal motion"
                         + (f"; ‖e + K_i∫e‖∞ ≤ {t['w_end']:.4g}" if "w_end" in t else ""))
        elif self.tube is not None:
            lines.append(f"tube: ‖e‖∞ ≤ {self.tube[0]:.4g}, ‖ė‖∞ ≤ {self.tube[1]:.4g} around the nominal motion")
        for key, b in self.bounds.items():
            w = b.witness
            where = (f"at t = {w.get('t', math.nan):.6g} s, " + ", ".join(
                f"{k} = {np.round(np.asarray(v), 6).tolist()}" for k, v in w.get("params", {}).items()))
            f = w.get("forces") or {}
            where += "".join(f", {k} = {np.round(np.asarray(f[k]), 6).tolist()}" for k in ("viscous", "coulomb")
                             if k in f)
            if f.get("disturbance") is not None:
                where += f", the constant disturbance d = {np.round(np.asarray(f['disturbance']), 6).tolist()}"
            state = ("UNFINISHED" if not b.finished else "finished" if b.settled_against is None else
                     f"settled against {b.settled_against:.4g}, the gap not pursued")
            lines.append(f"{QUANTITIES[key]} ∈ [{b.lower:.6g}, {b.upper:.6g}] (gap {100 * b.gap:.2f} %, {state}; "
                         f"{b.evaluations} cells, {b.cpu_s:.1f} s CPU); lower bound {where}")
        p = self.extras.get("promised_at_certified_gamma")
        if p:
            lines.append(f"with Γ = {p['gamma']:.6g} (the certified bound) {self.compensator} promises ‖e‖∞ ≤ "
                         f"{p['e']:.3g}, ‖ė‖∞ ≤ {p['edot']:.3g}; its Γ assumption is certified for every plant in the "
                         "box" + (" along the nominal motion (the tube: --level closed)" if self.level == "box" else ""))
            loop = p.get("loop")
            if loop:
                mu_c = "not certified" if loop["mu_certified"] is None else f"{loop['mu_certified']:.4g}"
                lines.append(f"  in its sampled loop (hold, delay, sensor; docs/theory/sensing.md): {loop['coverage']}; "
                             f"sup ‖M̃ₐ‖∞ {mu_c} against μ = {loop['mu_assumed']}: the loop's bound is "
                             + ("certified over the box" if loop["certified"] else "NOT certified over the box"))
        for c in self.conditions:
            lines.append(f"  [{'held' if c.held else 'FAILS'}] {c.text}")
        if math.isfinite(self.defect_estimate):
            lines.append(f"interpolant defect ‖dq̇/dt − q̈‖∞ (estimate at cell centres, not a bound): "
                         f"{self.defect_estimate:.3g}")
        lines.append(NOT_ENCLOSED)
        return "\n".join(lines)


def _up(ball) -> float:
    """A float >= every |x| in the ball."""
    return math.nextafter(float(ball.abs_upper()), math.inf)


def _down(ball) -> float:
    """A float <= every |x| in the ball (>= 0)."""
    return max(0.0, math.nextafter(float(ball.abs_lower()), -math.inf))


def _row_sum(Mt, upper: bool) -> float:
    """max_i Σ_j |M_ij| of every matrix in the ball matrix, bounded above (``upper``) or below (>= 0)."""
    n = Mt.nrows()
    best = 0.0
    for i in range(n):
        parts = [Mt[i, j].abs_upper() if upper else Mt[i, j].abs_lower() for j in range(n)]
        s = parts[0]
        for p in parts[1:]:
            s = s + p
        best = max(best, _up(s) if upper else _down(s))
    return best


class _Evaluator:
    """The cell and point functions of the searches of one certificate (time cells cached)."""

    def __init__(self, model: EnclosureModel, ip: Interpolant, box: ParameterBox, tube):
        self.model, self.ip, self.box, self.tube = model, ip, box, tube  # tube: a _Tube or None
        self.arb = model._flint.arb
        self.nominal = model.nominal_d
        self.cache = {}
        self.defect = 0.0

    def light(self, k, x0, x1):
        """A cell with its states only (M̃ₐ needs no q̈), cached apart."""
        key = (k, x0, x1, "state")
        c = self.cache.get(key)
        if c is None:
            c = self.cache[key] = state_cell(self.ip, k, x0, x1)
        return c

    def cell(self, k, x0, x1):
        key = (k, x0, x1)
        c = self.cache.get(key)
        if c is None:
            c = self.cache[key] = time_cell(self.model, self.ip, k, x0, x1)
            if c.point is not None and c.slope is not None:
                self._defect(c)
        return c

    def _defect(self, c):
        """‖dq̇/dt − q̈‖∞ of the interpolant at the cell's centre (an estimate)."""
        n = self.model.n
        arb = self.arb
        k = c.k
        x = arb(0.5 * (c.x0 + c.x1))
        from .model import _horner

        h = arb(self.ip.t[k + 1]) - arb(self.ip.t[k])
        dv = [_horner(self.ip.dcoef[k][n + i], x) / h - c.point.qdd[i] for i in range(n)]
        self.defect = max(self.defect, max(float(d.abs_upper()) for d in dv))

    def _over(self, c):
        """The tube's radii over a cell's times (its largest), or None below the closed level."""
        if self.tube is None:
            return None
        return self.tube.over(math.nextafter(float(c.T.mid()) + float(c.T.rad()), math.inf))

    def balls(self, lo, hi):
        """Balls containing [lo, hi] componentwise: centre the rounded midpoint, radius rounded up past both ends."""
        out = []
        for a, b in zip(lo, hi):
            a, b = float(a), float(b)
            c = 0.5 * (a + b)
            r = 0.0 if a == b else math.nextafter(max(c - a, b - c), math.inf)
            out.append(self.arb(c, r))
        return out

    def params(self, d) -> dict:
        kp = self.model.kp
        return {k: (np.round(v, 15).tolist() if isinstance(v, np.ndarray) else v)
                for k, v in self.box.values(self.nominal[:kp] + np.asarray(d, dtype=float)[:kp]).items()}

    def forces(self, d, disturbance=None) -> dict | None:
        """The witness's forces: the friction's coefficients per joint (its varying ones at ``d``'s last entries) and
        the constant disturbance (None: no forces)."""
        fb = self.model.forces
        if fb is None:
            return None
        return {**fb.coefficients(np.asarray(d, dtype=float)[self.model.kp:]),
                "disturbance": None if disturbance is None else [float(x) for x in disturbance]}

    # -- ‖δq‖∞ ---------------------------------------------------------------------------------
    def dq_cell(self, k, x0, x1, lo, hi, lower=-math.inf):
        c = self.cell(k, x0, x1)
        out = self.model.dq(c, self.balls(lo, hi), self._over(c), enough=lower)
        if out is None:
            return math.inf, -1
        contrib = self.model.last_contrib
        split = -1 if not contrib else int(np.argmax(contrib)) - 1
        upper = max(_up(x) for x in out)
        # a NaN ball (a function arb cannot bound on so wide a ball) encloses nothing: split the cell (NaN would also
        # break the search's heap order)
        return (upper, split) if not math.isnan(upper) and all(not math.isnan(_up(x)) for x in out) else (math.inf, -1)

    def dq_point(self, k, x0, x1, lo, hi, lower=-math.inf):
        c = self.cell(k, x0, x1)
        if c.point is None:
            return -math.inf, None
        sign = self.model.last_sign
        # the vertex the cell's slopes point to and its opposite (δq is nearly linear in the parameters, and
        # the sign of δq decides which one is larger), else the centre
        if sign:
            up = np.asarray(sign) >= 0
            candidates = [np.where(up, hi, lo), np.where(up, lo, hi)]
        else:
            candidates = [0.5 * (lo + hi)]
        best, arg = -math.inf, None
        for d in candidates:
            D = [self.arb(float(v)) for v in d]
            try:
                val = self.model.dq_point(c.point, D)
                E = dist = None
                if self.tube is not None:
                    i = max(range(len(val)), key=lambda j: float(val[j].abs_upper()))
                    E = self.model.worst_error(c.point, D, i, self.tube.inside(c.point.t))
                    val = self.model.dq_point(c.point, D, E)
                if self.model.disturbance:  # the constant d of bound D that pushes the largest |δq_i| furthest
                    dist = self.model.worst_disturbance(c.point, D, E, val)
                    val = self.model.dq_point(c.point, D, E, disturbance=dist)
            except ZeroDivisionError:
                continue
            value = max(_down(x) for x in val)
            if value > best:
                best, arg = value, (d, E, dist)
        if arg is None:
            return -math.inf, None
        d, E, dist = arg
        kp = self.model.kp

        def info():
            out = {"t": c.point.t, "params": self.params(d), "delta": [float(x) for x in d[:kp]],
                   "error": None if E is None else [float(e.mid()) for e in E]}
            if self.model.forces is not None:
                out["forces"] = self.forces(d, dist)
            return out

        return best, info

    # -- ‖M̃ₐ‖∞ and ‖M_a⁻¹M‖∞ -------------------------------------------------------------------
    def _mt(self, k, x0, x1, lo, hi, lower, inverse_ratio: bool):
        c = self.light(k, x0, x1)
        expanded = _model.EXPAND and self.model.expandable
        if expanded:
            out = self.model.mtilde_expansion(c, self.balls(lo, hi), self._over(c), inverse_ratio)
            if out is not None:
                return out
            if x1 - x0 > 2.0 ** -6:
                return math.inf, -1  # the time cell is too wide for the expansion (L⁻¹AL⁻ᵀ far from I): split it first
        Mt = self.model.mtilde(c, self.balls(lo, hi), self._over(c))
        if Mt is None:
            return math.inf, -1
        if inverse_ratio:
            Mt = _identity_minus(Mt)
        contrib = self.model.last_contrib
        split = -1 if not contrib else int(np.argmax(contrib)) - 1
        upper = _row_sum(Mt, True)
        return (upper, split) if not math.isnan(upper) else (math.inf, -1)

    def _mt_point(self, k, x0, x1, lo, hi, lower, inverse_ratio: bool):
        c = self.light(k, x0, x1)
        if c.point is None:
            return -math.inf, None
        best, arg = -math.inf, None
        # M̃ₐ grows with |δ|: its largest row is found at a vertex of the parameter box (all 2^k of them for
        # k <= 4, else the two extreme ones and the centre); the friction's dimensions (after the plant's k) leave
        # M_a alone: at their centre
        k = self.model.kp
        rest = 0.5 * (lo[k:] + hi[k:])
        vertices = ([np.where(np.array([(v >> j) & 1 for j in range(k)], bool), hi[:k], lo[:k]) for v in range(2 ** k)]
                    if k <= 4 else [lo[:k], hi[:k], 0.5 * (lo[:k] + hi[:k])])
        vertices = [np.concatenate([v, rest]) for v in vertices]
        E = None
        if self.tube is not None:  # a corner of the tube, coordinates pushed the same way
            n = self.model.n
            rho_e, rho_ed = self.tube.inside(c.point.t)
            E = [self.arb(rho_e)] * n + [self.arb(rho_ed)] * n
        if SCREEN and len(vertices) > 1:  # screened in floating point: the rigorous value at the best one only
            screen = self.model.mtilde_screen(c.point, np.array(vertices), E, inverse_ratio)
            if np.any(np.isfinite(screen)):
                vertices = [vertices[int(np.nanargmax(screen))]]
        for d in vertices:
            D = [self.arb(float(v)) for v in d]
            try:
                Mt = self.model.mtilde_point(c.point, D, E)
            except ZeroDivisionError:
                continue
            if inverse_ratio:
                Mt = _identity_minus(Mt)
            v = _row_sum(Mt, False)
            if v > best:
                best, arg = v, d
        if arg is None:
            return -math.inf, None
        return best, lambda: {"t": c.point.t, "params": self.params(arg), "delta": [float(x) for x in arg[:k]],
                              "error": None if E is None else [float(e.mid()) for e in E]}


#: Choose the vertex of a cell's ‖M̃ₐ‖∞ lower bound in floating point and evaluate it alone in arb (False:
#: every vertex in arb, for benchmarks/bench_certify.py's baseline; the same vertex wins unless two are
#: within rounding of each other).
SCREEN = True



def _outward(bound, nominal, direction) -> np.ndarray:
    """bound − nominal as floats, moved one step towards ``direction`` where the subtraction was not exact (the
    cells' deltas then cover the box; exact whenever the spread is at most 50 %, by Sterbenz's lemma)."""
    from fractions import Fraction

    out = np.asarray(bound, dtype=float) - np.asarray(nominal, dtype=float)
    for i, (b, v) in enumerate(zip(np.atleast_1d(bound), np.atleast_1d(nominal))):
        if Fraction(float(out[i])) != Fraction(float(b)) - Fraction(float(v)):
            out[i] = math.nextafter(out[i], direction)
    return out


def _identity_minus(Mt):
    n = Mt.nrows()
    from flint import arb_mat

    return arb_mat(n, n, [(1 if i == j else 0) - Mt[i, j] for i in range(n) for j in range(n)])


#: What a certificate reads of its problem (a :class:`~robustrack.tracking.TrackingProblem`'s attributes): asked for
#: by name, so that certification stands on the tracking problem without the problem's module importing it back.
PROBLEM_ATTRIBUTES = ("nominal", "constraint", "compensator", "q0", "qd0", "t_span", "nominal_run")


def _check_settings(problem, box, tolerance, budget_s, level, gamma=None):
    if not all(hasattr(problem, a) for a in PROBLEM_ATTRIBUTES) or not callable(problem.nominal_run):
        raise ParameterError(f"`problem` must be a robustrack.tracking.TrackingProblem; got {type(problem).__name__}.")
    if not isinstance(box, ParameterBox):
        raise ParameterError(f"`box` must be a robustrack.certification.ParameterBox (e.g. ParameterBox.around(plant, 0.1)) "
                             f"or named uncertain parameters (an UncertainSet); got {type(box).__name__}.")
    tol = as_float_array(tolerance, "tolerance")
    if tol.ndim != 0 or not 0 < tol < 1:
        raise ParameterError(f"`tolerance` must be a number in (0, 1) (0.05: the gap (U − L)/U ≤ 5 %); got "
                             f"{tolerance!r}.")
    budget = as_float_array(budget_s, "budget_s")
    if budget.ndim != 0 or not budget > 0:
        raise ParameterError(f"`budget_s` must be a number of CPU seconds > 0; got {budget_s!r}.")
    if level not in LEVELS:
        raise ParameterError(f"`level` must be one of {list(LEVELS)}; got {level!r}.")
    if gamma is not None and level != "closed":
        raise ParameterError(f"`gamma` = {gamma!r} is the Γ of the promised bound the closed level checks; level "
                             f"{level!r} does not use it: give level='closed' too, or leave `gamma` out.")
    return float(tol), float(budget)


#: The most states of the nominal run at which every corner's M is checked positive definite before a search.
PHYSICAL_STATES = 64


def _check_box_physical(problem, box, run) -> None:
    """Every plant of the box a plant (its parameters' rules; M positive definite along the nominal run, at up to
    :data:`PHYSICAL_STATES` of its output states), before any search (:func:`~robustrack.certification.box.check_physical`)."""
    t = np.asarray(run.t_eval, dtype=float)
    t = t[np.unique(np.linspace(0, t.size - 1, min(t.size, PHYSICAL_STATES)).round().astype(int))]
    y = np.atleast_2d(run.solution(t))
    n = problem.n
    check_physical(problem.nominal, box, y[:, :n], y[:, n:], t, where=f"the box ({', '.join(box.labels)})")


def _split_set(problem, box, forces):
    """(ParameterBox, ForceBox or None) of ``certify``'s ``box`` and ``forces``: named uncertain parameters that are
    friction coefficients of ``forces`` (``viscous_<joint>``, ``coulomb_<joint>``) box the friction, the others the
    plant; ``forces`` None: the problem's actual plant's δQ at its given values."""
    from ..uncertainty import UncertainParameter, UncertainSet, uncertain_set
    from .forces import ForceBox, problem_forces

    named = isinstance(box, (UncertainSet, UncertainParameter)) or (
        isinstance(box, (list, tuple)) and box and all(isinstance(p, UncertainParameter) for p in box))
    if (named or forces is not None) and not hasattr(problem, "nominal"):
        raise ParameterError(f"`problem` must be a robustrack.tracking.TrackingProblem; got {type(problem).__name__}.")
    coordinates = tuple(problem.nominal.coordinates) if hasattr(problem, "nominal") else ()
    given = dict(getattr(forces, "parameters", None) or {})
    friction = []
    if named:
        params = list(uncertain_set(box))
        friction = [p for p in params if p.name in given]
        own = [p for p in params if p.name not in given]
        if not own:
            raise ParameterError(
                f"the named parameters {[p.name for p in params]} are all friction coefficients: the box needs a "
                "parameter of the plant too (a known one is a zero range, e.g. UncertainParameter('m1', 1.0, "
                "percent=0) or [uncertainty.parameters.NAME] percent = 0).")
        box = ParameterBox.of_set(problem.nominal, own)
    out = (problem_forces(problem) if hasattr(problem, "actual") else None) if forces is None else \
        ForceBox.of(forces, coordinates, friction or None)
    if out is not None and len(out.coordinates) != len(coordinates):
        raise ParameterError(f"`forces` are for {len(out.coordinates)} coordinates {list(out.coordinates)}; the plant "
                             f"has {len(coordinates)} {list(coordinates)}.")
    if out is not None and not out.friction and out.disturbance == 0:
        out = None  # (a disturbance of bound 0 alone: no force)
    return box, out


def certify(problem, box: ParameterBox, *, forces=None, tolerance: float = 0.05, level: str = "box",
            gamma: float | None = None, budget_s: float = 600.0, quantities=None, run=None,
            progress=None) -> Certificate:
    """Certify sup ‖δq‖∞ (Γ), sup ‖M̃ₐ‖∞ (and for GD sup ‖M_a⁻¹M‖∞) over a box of plants and the whole run.

    Parameters
    ----------
    problem : TrackingProblem
        The tracking problem; its plant and constraint need symbolic forms (``codegen()``).
    box : ParameterBox, UncertainSet or sequence of UncertainParameter
        The actual plants: ``problem.nominal.replace(**values)`` for every value in the box. Named uncertain
        parameters give their box (:meth:`ParameterBox.of_set`: their ranges, the distributions ignored; an entry
        of an array such as the pendulum's ``L2`` is boxed alone); those that are friction coefficients of
        ``forces`` (``viscous_<joint>``, ``coulomb_<joint>``) box the friction instead.
    forces : ActualForces, Disturbance or ForceBox, optional
        The given forces the actual plants add (docs/theory/certificate.md, "Friction and disturbance"): joint
        friction −b q̇ − F_c tanh(q̇/v_s), its coefficients known, or ±``spread`` (an ActualForces' draws), or
        named parameters of ``box``, enclosed as a function of q̇; a disturbance by its bound D (the ball [−D, D]
        on every component of δQ; a disturbance without a finite bound is refused). Default: the problem's actual
        plant's δQ (a :class:`~robustrack.plants.ForcedPlant`'s, at its given values), none if it has none. The
        certificate records them (``extras["forces"]``, the fingerprint).
    tolerance : float, default 0.05
        Stop each search when (U − L)/U <= tolerance.
    level : {"box", "closed"}
        ``"box"``: along the nominal motion (q_c = q). ``"closed"``: over the tube of the compensator's
        promised bound (at ``gamma``) around it, and check the first-exit argument's conditions
        (docs/theory/certificate.md).
    gamma : float, optional
        The Γ of the promised bound at the closed level (default: ``problem.gamma``, else the
        compensator's design value).
    budget_s : float, default 600
        CPU seconds per searched quantity; a search that runs out returns its bounds marked unfinished.
    quantities : sequence of str, optional
        Keys of :data:`QUANTITIES` (default: ``max_norm_dq``, ``max_norm_Mtilde``, and ``max_norm_MaInvM``
        for a compensator with GD's ρ0 condition).
    run : NominalRun, optional
        ``problem.nominal_run()`` if already computed.
    progress : callable, optional
        ``progress(quantity, upper, lower, open_cells)`` about once a second.

    Returns
    -------
    Certificate

    Raises
    ------
    ParameterError
        No symbolic form, python-flint missing, a box not on the plant's parameters, bad settings, a disturbance
        without a finite bound, or the closed level for a compensator that promises no bound on ė (GSS: on e and
        ė). GD and GD-bar close in a tube that grows with time, ‖e‖∞ ≤ ‖e(t0)‖∞ + r (t − t0), with their ρ0 /
        dropped-term conditions (docs/theory/certificate.md).
    """
    start = time.perf_counter()
    box, force_box = _split_set(problem, box, forces)
    tol, budget = _check_settings(problem, box, tolerance, budget_s, level, gamma)
    check_certifiable(problem)
    from ..tracking.assess import integral_gain

    comp = problem.compensator
    tube = None
    bounds_promised = None
    if level == "closed":
        tube, bounds_promised, gamma = _tube(problem, gamma)
    if quantities is None:
        quantities = ["max_norm_dq", "max_norm_Mtilde"]
        if integral_gain(comp) is not None or (tube is not None and tube.kind == "gdbar"):
            quantities.append("max_norm_MaInvM")
    unknown = [q for q in quantities if q not in QUANTITIES]
    if unknown:
        raise ParameterError(f"`quantities` must be among {list(QUANTITIES)}; got {unknown}.")
    if tube is not None:
        quantities = ["max_norm_dq"] + [q for q in quantities if q != "max_norm_dq"]  # its U settles GD-bar's P
        missing = [q for q in tube.needs if q not in quantities]
        if missing:
            raise ParameterError(f"the closed level of {tube.kind} needs `quantities` {missing} too (its conditions "
                                 "are stated with them).")
    if run is None:
        run = problem.nominal_run()
    _check_box_physical(problem, box, run)
    model = EnclosureModel(problem, box, tube=tube is not None, forces=force_box)
    ip = Interpolant.of(run.solution)
    ev = _Evaluator(model, ip, box, tube)
    # the plant's dimensions, then the friction's varying coefficients (their intervals absolute: nominal 0)
    dims = [] if force_box is None else force_box.dims
    lo = _outward(np.concatenate([box.flat_lower, [a for _, _, a, _ in dims]]), model.nominal_d, -math.inf)
    hi = _outward(np.concatenate([box.flat_upper, [b for _, _, _, b in dims]]), model.nominal_d, math.inf)
    ev._width = hi - lo
    cells = [(k, 0.0, 1.0, lo, hi) for k in range(ip.n_steps)]
    from ..tracking.assess import assumption_limits

    limits = (assumption_limits(bounds_promised, comp) or {}) if level == "closed" else {}
    results = {}
    for quantity in quantities:
        if quantity == "max_norm_dq":
            evaluate, point = ev.dq_cell, ev.dq_point
        else:
            inv = quantity == "max_norm_MaInvM"
            evaluate = (lambda *a, inv=inv: ev._mt(*a, inv))
            point = (lambda *a, inv=inv: ev._mt_point(*a, inv))
        report = None if progress is None else (lambda u, l, c, q=quantity: progress(q, u, l, c))
        # at the closed level ‖M̃ₐ‖ (and ‖M_a⁻¹M‖) are searched until their condition is settled, not to the gap
        decide = limits.get(quantity) if level == "closed" and quantity != "max_norm_dq" else None
        if tube is not None and quantity == "max_norm_MaInvM":
            decide = tube.inverse_limit(results.get("max_norm_dq"))
        res = maximize(cells, evaluate, point, tol=tol, budget_s=budget, progress=report, decide=decide)
        settled = decide is not None and (res.upper <= decide or res.lower > decide)
        results[quantity] = CertifiedBound(quantity, res.upper, res.lower, res.finished or settled, res.argmax,
                                           res.cells, res.evaluations, res.cpu_s, res.unenclosed,
                                           settled_against=decide if settled and not res.finished else None)
    conditions = ()
    if level == "closed":
        conditions = _conditions(problem, results, bounds_promised, gamma, tube, ev.defect)
    # the reference's initial state: a saved certificate is checked against the study it is used for with it
    # (certification/saved.py), beside its box and horizon
    extras = {"reference": {"q0": np.asarray(problem.q0, dtype=float).tolist(),
                            "qd0": np.asarray(problem.qd0, dtype=float).tolist()},
              # every field that decides the nominal motion and the plants (certification/fingerprint.py): a study
              # of another g, length, solver tolerance or friction is refused by name
              "fingerprint": problem_fingerprint(problem, forces=force_box)}
    if force_box is not None:
        extras["forces"] = force_box.to_dict()
    if comp is not None and "max_norm_dq" in results:
        promised = _promised_at(problem, results["max_norm_dq"].upper)
        if promised is not None and promised.gamma is not None:
            extras["promised_at_certified_gamma"] = {"gamma": results["max_norm_dq"].upper, "e": float(promised.e),
                                                     "edot": float(promised.edot)}
            if promised.coverage is not None:  # a sampled loop: its bound at the certified Γ, and μ against it
                mt = results.get("max_norm_Mtilde")
                mu = 1.0 - comp.alpha0 / comp.sigma if hasattr(comp, "alpha0") else None
                extras["promised_at_certified_gamma"]["loop"] = {
                    "coverage": promised.coverage, "mu_assumed": mu,
                    "mu_certified": None if mt is None else mt.upper,
                    "certified": bool(promised.coverage.startswith("guaranteed") and mt is not None
                                      and mu is not None and mt.finished and mt.upper <= mu)}
    if tube is not None:
        extras["tube"] = tube.to_dict()
    return Certificate(level, box, results, tol, tuple(problem.t_span),
                       tube=None if tube is None else tube.over(float(problem.t_span[1])), gamma=gamma,
                       conditions=conditions, defect_estimate=ev.defect, wall_s=time.perf_counter() - start,
                       compensator=None if comp is None else getattr(comp, "name", type(comp).__name__),
                       extras=extras)


def _promised_at(problem, gamma):
    """The compensator's bound at the certified Γ: of its sampled loop (hold, delay, sensor: docs/theory/sensing.md)
    where the problem has a ``sample_period``, else the continuous one."""
    if problem.sample_period is None:
        return problem.compensator.bounds(gamma)
    from ..loop.bounds import sensed_bounds

    return sensed_bounds(problem.replace(gamma=gamma), problem.nominal_run())


@dataclass(frozen=True)
class _Tube:
    """The tube of the closed level around the reference: ‖e‖∞ ≤ e0 + rate·(t − t0), ‖ė‖∞ ≤ edot.

    GSS promises both radii (rate 0). GD and GD-bar promise ‖ė‖∞ ≤ r only; on the finite horizon that
    bounds e too, |e_i(t)| ≤ |e_i(t0)| + r (t − t0), and ∫e (from z(t0)) by ‖z0‖∞ + ‖e(t0)‖∞ (t − t0) +
    r (t − t0)²/2 — the radii the first-exit argument of docs/theory/certificate.md uses for them.
    """

    kind: str  # "gss", "gd" or "gdbar"
    t0: float
    t1: float
    e0: float
    rate: float
    edot: float
    Ki: float = 0.0
    z0: float = 0.0
    rho0: float = math.nan
    gamma: float = math.nan

    @property
    def needs(self) -> tuple:
        """The quantities its conditions are stated with."""
        return {"gss": ("max_norm_dq", "max_norm_Mtilde")}.get(
            self.kind, ("max_norm_dq", "max_norm_Mtilde", "max_norm_MaInvM"))

    def over(self, t: float) -> tuple:
        """(ρ_e, ρ_ė) containing the tube at every time <= t (rounded up)."""
        if self.rate == 0.0:
            return (self.e0, self.edot)
        return (math.nextafter(self.e0 + math.nextafter(self.rate * max(t - self.t0, 0.0), math.inf), math.inf),
                self.edot)

    def inside(self, t: float) -> tuple:
        """(ρ_e, ρ_ė) inside the tube at time t (rounded down): where a lower bound's witness may sit."""
        if self.rate == 0.0:
            return (self.e0, self.edot)
        return (max(0.0, math.nextafter(self.e0 + self.rate * max(t - self.t0, 0.0), -math.inf)
                    * (1 - 4 * np.finfo(float).eps)), self.edot)

    @property
    def e_end(self) -> float:
        """The largest ρ_e, at the end of the run."""
        return self.over(self.t1)[0]

    @property
    def w_end(self) -> float:
        """GD: the largest ‖e + K_i∫e‖∞ in the tube, ρ_e(t1) + K_i (‖z0‖∞ + e0 T + r T²/2) (rounded up)."""
        T = self.t1 - self.t0
        integral = self.z0 + self.e0 * T + 0.5 * self.rate * T * T
        return math.nextafter(self.e_end + math.nextafter(self.Ki * integral * (1 + 4 * np.finfo(float).eps),
                                                          math.inf), math.inf)

    def inverse_limit(self, dq):
        """The value of sup ‖M_a⁻¹M‖∞ its condition settles against (None for GSS): GD, ρ0 / w_end; GD-bar,
        (Γ − U of sup ‖δq‖∞) / ρ_e(t1) — the dropped term P = ‖(I − M̃ₐ) e‖∞ must fit in the margin."""
        if self.kind == "gd":
            return self.rho0 / self.w_end if self.w_end > 0 else math.inf
        if self.kind == "gdbar" and dq is not None:
            margin = self.gamma - dq.upper
            return math.inf if self.e_end == 0 and margin >= 0 else max(margin, 0.0) / self.e_end
        return None

    def to_dict(self) -> dict:
        return {"kind": self.kind, "e0": self.e0, "rate": self.rate, "edot": self.edot, "e_end": self.e_end,
                **({"Ki": self.Ki, "z0": self.z0, "rho0": self.rho0, "w_end": self.w_end} if self.kind == "gd" else {})}


def _tube(problem, gamma):
    """(the tube, the promised bounds, Γ) of the closed level; refused when nothing bounds ė (or e for GSS)."""
    from ..controllers.compensators import GD, GSS, GDBar

    comp = problem.compensator
    if comp is None:
        raise ParameterError("the closed level needs a compensator that promises a bound on the error; the problem "
                             "has none.")
    if gamma is None:
        gamma = problem.gamma
    bounds = comp.bounds(gamma)
    name = getattr(comp, "name", type(comp).__name__)
    kind = "gss" if isinstance(comp, GSS) else "gd" if isinstance(comp, GD) else "gdbar" if isinstance(comp, GDBar) \
        else None
    finite_e = bounds is not None and math.isfinite(bounds.e)
    if (kind is None or bounds is None or bounds.gamma is None or not math.isfinite(bounds.edot)
            or (kind == "gss" and not finite_e)):
        raise ParameterError(
            f"the compensator {name!r} promises no bound on ė (or, for GSS, on e) at Γ = {gamma} (‖e‖∞ ≤ "
            f"{getattr(bounds, 'e', None)}, ‖ė‖∞ ≤ {getattr(bounds, 'edot', None)}), so there is no tube to close the "
            "certificate in; use level='box' (its assumptions are then certified along the nominal motion), a "
            "control function g that grows without bound, or GSS, GD, GD-bar with a Γ.")
    t0, t1 = (float(x) for x in problem.t_span)
    if kind == "gss":
        return _Tube("gss", t0, t1, float(bounds.e), 0.0, float(bounds.edot)), bounds, float(bounds.gamma)
    e0, _ = problem.initial_errors()
    z0 = float(np.max(np.abs(comp.initial_state(problem.n)), initial=0.0))
    return (_Tube(kind, t0, t1, float(np.max(np.abs(e0), initial=0.0)), float(bounds.edot), float(bounds.edot),
                  Ki=float(getattr(comp, "Ki", 0.0)), z0=z0, rho0=float(getattr(comp, "rho0", math.nan)),
                  gamma=float(bounds.gamma)),
            bounds, float(bounds.gamma))


def _conditions(problem, results, bounds, gamma, tube, defect):
    """The first-exit argument's conditions (docs/theory/certificate.md), each with its value and limit."""
    from ..tracking.assess import assumption_limits

    comp = problem.compensator
    limits = assumption_limits(bounds, comp) or {}
    out = []
    dq = results["max_norm_dq"]
    out.append(_bound_condition("gamma", dq, float(gamma), "sup ‖δq‖∞", "Γ of the promised bound"))
    if "max_norm_Mtilde" in results and "max_norm_Mtilde" in limits:
        out.append(_bound_condition("Mtilde", results["max_norm_Mtilde"], limits["max_norm_Mtilde"], "sup ‖M̃ₐ‖∞",
                                    "1 − α0/σ"))
    inv = results.get("max_norm_MaInvM")
    if tube.kind == "gd":
        c = _bound_condition("rho0", inv, tube.inverse_limit(dq), "sup ‖M_a⁻¹M‖∞",
                             f"ρ0 / sup ‖e + K_i∫e‖∞ = {tube.rho0:.6g} / {tube.w_end:.4g}")
        out.append(dataclasses.replace(c, text=c.text + " — GD's ρ0 condition (W 8.2.17): P = ‖(I − M̃ₐ)(e + "
                                       "K_i∫e)‖∞ ≤ sup ‖M_a⁻¹M‖∞ · sup ‖e + K_i∫e‖∞ ≤ ρ0"))
    elif tube.kind == "gdbar":
        c = _bound_condition("dropped", inv, tube.inverse_limit(dq), "sup ‖M_a⁻¹M‖∞",
                             f"(Γ − sup ‖δq‖∞) / sup ‖e‖∞ = ({float(gamma):.6g} − {dq.upper:.6g}) / {tube.e_end:.4g}")
        out.append(dataclasses.replace(c, text=c.text + " — the term W 8.3.16 drops, P = ‖(I − M̃ₐ) e‖∞ ≤ "
                                       "sup ‖M_a⁻¹M‖∞ · sup ‖e‖∞, fits in the margin: sup ‖δq‖∞ + P ≤ Γ"))
    e0, ed0 = problem.initial_errors()
    if tube.kind == "gss":
        # per coordinate: |e_i(0)| ≤ L_ε/(2k_i) and |s_i(0)| ≤ L_ε/2 (a max over i against min k admits starts
        # outside the set when the gains differ)
        from ..tracking.assess import start_in_invariant_set

        ok0, why = start_in_invariant_set(comp, bounds, e0, ed0)
        s0 = _gss_s0(comp, bounds, e0, ed0)
        out.append(Condition("initial", float(max(np.max(np.abs(e0)), 0.0)), tube.e0, bool(ok0),
                             "the initial error lies in the invariant set of the bound {|s_i| ≤ L_ε/2, |e_i| ≤ "
                             "L_ε/(2k_i)} (e(0) = qc0 − q0, ė(0)"
                             + (f"; ‖K e(0) + ė(0)‖∞ = {s0[0]:.3g}, L_ε/2 = {s0[1]:.3g}" if s0 else "") + ")"
                             + ("" if ok0 else f": {why}")))
    else:
        v = float(np.max(np.abs(ed0), initial=0.0))
        out.append(Condition("initial", v, tube.edot, v <= tube.edot,
                             f"the initial error lies in the bound's box: ‖ė(0)‖∞ = {v:.3g} ≤ r = {tube.edot:.4g} "
                             f"(e(0) enters the tube's radius ‖e‖∞ ≤ {tube.e0:.3g} + r (t − t0), "
                             f"≤ {tube.e_end:.4g} at the end)"))
    margin = float(gamma) - dq.upper
    if margin >= 0:  # (judged only where Γ itself holds: else the Γ condition already fails)
        out.append(Condition("defect", defect, margin, defect <= margin,
                             f"the reference's defect ‖dq̇/dt − q̈‖∞ ≈ {defect:.3g} (ESTIMATED at the cells' centres, "
                             f"not bounded) fits in the margin Γ − sup ‖δq‖∞ = {margin:.4g}"))
    continuous = problem.sample_period is None
    out.append(Condition("continuous", 0.0 if continuous else float(problem.sample_period), 0.0, continuous,
                         "the control is continuous in time (the argument does not cover a zero-order hold)"
                         if continuous else f"the control is held every {problem.sample_period:g} s: the "
                         "first-exit argument here covers continuous control only"))
    return tuple(out)


def _bound_condition(name, b, limit, what, limit_name) -> Condition:
    """``sup <= limit`` over box × tube: held (U <= limit), failed (L > limit: by at least L − limit, a plant in the
    box exceeds it) or not settled (L <= limit < U: the budget ran out before the search decided)."""
    if b.upper <= limit:
        return Condition(name, b.upper, limit, True, f"{what} over box × tube ≤ {b.upper:.6g} vs {limit_name} = "
                                                     f"{limit:.6g}")
    if b.lower > limit:
        return Condition(name, b.lower, limit, False, f"{what} over box × tube ≥ {b.lower:.6g} > {limit_name} = "
                                                      f"{limit:.6g}: exceeds by {b.lower - limit:.4g} "
                                                      f"({100 * (b.lower / limit - 1):.1f} %) at a plant of the box")
    return Condition(name, b.upper, limit, False, f"{what} over box × tube ∈ [{b.lower:.6g}, {b.upper:.6g}] vs "
                                                  f"{limit_name} = {limit:.6g}: NOT SETTLED (the upper bound exceeds "
                                                  f"by {b.upper - limit:.4g}; a larger --budget may settle it)")


def _gss_s0(comp, bounds, e0, ed0):
    """(‖K e0 + ė0‖∞, L_ε/2) for GSS (its box is in s; ‖ė‖∞ ≤ L_ε), None for the others."""
    K = getattr(comp, "K", None)
    if K is None or not hasattr(comp, "beta0"):
        return None
    k = np.broadcast_to(np.asarray(K, dtype=float), e0.shape)
    return float(np.max(np.abs(k * e0 + ed0))), float(bounds.edot) / 2
