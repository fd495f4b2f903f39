"""Scenario kinds for Sławianowski's speed-holding particle, S (3.5)–(3.6) (issue 21).

A particle of mass m in the plane, in the uniform field V = m g y, under the program
constraint ``F = ½ (ẋ² + ẏ²) − c²/2 = 0`` (S §3: L = (m/2) g_ij q̇ⁱq̇ʲ − V with
g = I; "constraints stabilizing the absolute value of velocity"). Two reactions hold the
speed c:

``speed-holding-particle`` — Appell–Chetaev (d'Alembert), S (3.6)
    ``m q̈ − λ q̇ + ∇V = 0``: the plant with a :class:`~robustrack.constraints.Nonholonomic`
    constraint, the fundamental equation itself (its reaction is along ∂F/∂q̇ = q̇).
``speed-holding-particle-lusternik`` — Lusternik (vakonomic), S (3.5)
    ``(m + μ) q̈ + μ̇ q̇ + ∇V = 0``: :class:`~robustrack.lusternik.LusternikModel`; the
    reaction has the inertial term −μ q̈ beside the frictional −μ̇ q̇.

Closed forms (derived here; θ is the heading, q̇ = c (cos θ, sin θ), k = m g):

* (3.6): θ̇ = −(g/c) cos θ, so ``asinh(tan θ) = asinh(tan θ0) − g t / c``,
  ``x − x0 = −(c²/g)(θ − θ0)``, ``y − y0 = (c²/g) ln(cos θ / cos θ0)``, λ = k sin θ / c.
* (3.5): dotting with q̇ (q̇·q̈ = 0 on F = 0) gives ``μ̇ = −k ẏ / c²``; the normal part
  gives ``θ̇ = −k cos θ / (c (m + μ))``. Hence ``d(m + μ)/dθ = (m + μ) tan θ``, so
  ``m + μ = W0 cos θ0 / cos θ`` (W0 = m + μ0) and ``tan θ = tan θ0 − κ t`` with
  ``κ = k / (c W0 cos θ0)``; ``x − x0 = −(c/κ)(asinh tan θ − asinh tan θ0)``,
  ``y − y0 = −(c/κ)(sec θ − sec θ0)``, and ``ν = ∫μ dt`` in closed form.

Energy balance with the frictional term (S 3.5): T = m c²/2 is constant, so
``d(T + V)/dt = q̇ᵀR = −μ̇ c²`` (the inertial term does no work on F = 0):
``E(t) − E(0) = −c² (μ(t) − μ0)``, reported as ``energy_balance_error``.
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import ScenarioError
from .registry import SIMULATION_DEFAULTS, Problem, ScenarioKind, register_kind
from .units import residual_info

__all__ = ["speed_holding_model", "dalembert_speed_holding", "lusternik_speed_holding"]


def speed_holding_model(m, g, c):
    """The speed-holding particle: ``(plant, constraint)`` (S §3, g_ij = δ_ij, V = m g y).

    Parameters
    ----------
    m : float
        Mass (> 0).
    g : float
        Field strength (V = m g y).
    c : float
        The speed held (> 0).

    Returns
    -------
    plant : LagrangianPlant
        On (x, y), from T = m(ẋ² + ẏ²)/2 and V = m g y.
    constraint : Nonholonomic
        ``F = (ẋ² + ẏ²)/2 − c²/2``.
    """
    import sympy as sp

    from ..constraints import Nonholonomic
    from ..plants.lagrangian import LagrangianPlant

    x, y, xd, yd, ms, gs, cs = sp.symbols("x y x_dot y_dot m g c", real=True)
    plant = LagrangianPlant.from_energies([x, y], ms * (xd**2 + yd**2) / 2, ms * gs * y, qd=[xd, yd],
                                          params={ms: m, gs: g}, kinds=("length", "length"))
    return plant, Nonholonomic((xd**2 + yd**2) / 2 - cs**2 / 2, [x, y], [xd, yd], params={cs: c})


def dalembert_speed_holding(t, *, g, c, theta0):
    """Closed form of S (3.6) from the origin: ``(q (T, 2), θ (T,))`` (module docstring).

    Parameters
    ----------
    t : array_like (T,)
    g, c, theta0 : float
        Field, speed, initial heading in (−π/2, π/2) (keyword-only).
    """
    t = np.asarray(t, dtype=float)
    theta = np.arctan(np.sinh(np.arcsinh(math.tan(theta0)) - g * t / c))
    x = -(c**2 / g) * (theta - theta0)
    y = (c**2 / g) * np.log(np.cos(theta) / math.cos(theta0))
    return np.stack([x, y], axis=-1), theta


def lusternik_speed_holding(t, *, m, g, c, theta0, mu0):
    """Closed form of S (3.5) from the origin: ``(q (T, 3) = (x, y, ν = ∫μ dt), μ (T,))`` (module docstring).

    Parameters
    ----------
    t : array_like (T,)
    m, g, c, theta0, mu0 : float
        Mass, field, speed, initial heading in (−π/2, π/2), μ(0) with m + μ0 > 0 (keyword-only).
    """
    t = np.asarray(t, dtype=float)
    W0, cos0, s0 = m + mu0, math.cos(theta0), math.tan(theta0)
    kappa = m * g / (c * W0 * cos0)
    s = s0 - kappa * t  # tan θ
    sec = np.sqrt(1.0 + s**2)
    x = -(c / kappa) * (np.arcsinh(s) - math.asinh(s0))
    y = -(c / kappa) * (sec - math.sqrt(1.0 + s0**2))
    mu = W0 * cos0 * sec - m

    def prim(u):  # ∫ √(1 + u²) du
        return 0.5 * (u * np.sqrt(1.0 + u**2) + np.arcsinh(u))

    nu = W0 * cos0 * (prim(s0) - prim(s)) / kappa - m * t
    return np.stack([x, y, nu], axis=-1), mu


def _parameters(cfg):
    p, c, th = cfg["plant"], cfg["constraint"]["c"], cfg["initial"]["theta"]
    if not (p["m"] > 0 and c > 0 and p["g"] > 0):
        raise ScenarioError(f"`plant.m`, `plant.g` and `constraint.c` must be > 0; got {p['m']!r}, {p['g']!r}, {c!r}.")
    if not abs(th) < math.pi / 2:
        raise ScenarioError(f"`initial.theta` (heading, rad) must lie in (−π/2, π/2), moving in +x; got {th!r}.")
    return p["m"], p["g"], c, th


_UNITS = {"max_speed_error": "m/s", "max_reaction_error_vs_closed_form": "N", "energy_balance_error": "J",
          "anatomy_sum_mismatch": "", "gyroscopic_power_ratio": "", "max_abs_inertial_power": "W",
          "frictional_work": "J", "energy_change": "J", "mu_end": "kg"}


def _build_dalembert(cfg):
    m, g, c, th = _parameters(cfg)
    plant, con = speed_holding_model(m, g, c)
    qd0 = c * np.array([math.cos(th), math.sin(th)])

    def extra(res):
        speed = np.hypot(res.qd[:, 0], res.qd[:, 1])
        lam = m * g * res.qd[:, 1] / c**2  # S (3.6): λ = q̇·∇V / c², reaction λ q̇
        energy = 0.5 * m * speed**2 + m * g * res.q[:, 1]
        return {"max_speed_error": float(np.max(np.abs(speed - c))),
                "max_reaction_error_vs_closed_form": float(np.max(np.abs(res.Qc - lam[:, None] * res.qd))),
                "energy_change": float(energy[-1] - energy[0])}

    return Problem(plant, con, np.zeros(2), qd0, (0.0, cfg["simulation"]["t_end"]),
                   reference=lambda t: dalembert_speed_holding(t, g=g, c=c, theta0=th)[0], extra_metrics=extra,
                   residual=residual_info("F", "speed constraint F = (ẋ² + ẏ² − c²)/2", [("m²/s²", 1)]),
                   units=dict(_UNITS))


def _build_lusternik(cfg):
    from ..anatomy import reaction_anatomy
    from ..lusternik import LusternikModel

    m, g, c, th = _parameters(cfg)
    mu0 = cfg["initial"]["mu"]
    if not m + mu0 > 0:
        raise ScenarioError(f"`initial.mu` must keep m + μ > 0 (the effective mass of S 3.5a); got μ0 = {mu0!r} with "
                            f"m = {m!r}.")
    plant, con = speed_holding_model(m, g, c)
    model = LusternikModel(plant, con)
    q0, qd0 = model.initial_state([0.0, 0.0], c * np.array([math.cos(th), math.sin(th)]), mu0)

    def extra(res):
        q, qd, mu = model.split(res.q, res.qd)
        speed = np.hypot(qd[:, 0], qd[:, 1])
        energy = 0.5 * m * speed**2 + m * g * q[:, 1]
        an = reaction_anatomy(model, res)
        return {"max_speed_error": float(np.max(np.abs(speed - c))),
                "energy_balance_error": float(np.max(np.abs(energy - energy[0] + c**2 * (mu[:, 0] - mu0)))),
                "anatomy_sum_mismatch": an.sum_mismatch, "gyroscopic_power_ratio": an.gyroscopic_power_ratio,
                "max_abs_inertial_power": float(np.max(np.abs(an.powers["inertial"]))),
                "frictional_work": float(an.works["frictional"][-1]), "energy_change": float(energy[-1] - energy[0]),
                "mu_end": float(mu[-1, 0])}

    rows = [("m²/s²", 1), ("m", 2), ("m", 2), ("kg", 1)]  # F; the prescribed ẍ, ÿ; ν̈ = μ̇ (μ: a mass, S 3.5a)
    return Problem(model.plant, model.constraint, q0, qd0, (0.0, cfg["simulation"]["t_end"]),
                   reference=lambda t: lusternik_speed_holding(t, m=m, g=g, c=c, theta0=th, mu0=mu0)[0],
                   extra_metrics=extra, units={**_UNITS, "max_error_vs_closed_form": "m or kg·s"},
                   residual=residual_info("(F, 0, 0, 0)", "speed constraint F = (ẋ² + ẏ² − c²)/2; the prescribed "
                                          "accelerations' rows (0 by construction)", rows))


_SCHEMA = {"plant": {"m": 1.0, "g": 9.81}, "constraint": {"c": 3.0}, "initial": {"theta": 0.3},
           "simulation": {**SIMULATION_DEFAULTS, "t_end": 2.0, "rtol": 1e-10, "n_points": 401}}

register_kind(ScenarioKind(
    "speed-holding-particle", _SCHEMA, _build_dalembert,
    "Particle in the field V = m g y holding its speed c, Appell–Chetaev (d'Alembert) reaction λ q̇ (S 3.6); "
    "reference: the closed form (the heading obeys θ̇ = −(g/c) cos θ).",
))

register_kind(ScenarioKind(
    "speed-holding-particle-lusternik",
    {**_SCHEMA, "initial": {"theta": 0.3, "mu": 0.0}}, _build_lusternik,
    "The same particle with the Lusternik (vakonomic) reaction −μ q̈ − μ̇ q̇ (S 3.5): inertial and frictional "
    "terms; reference: the closed form (tan θ linear in t, m + μ = W0 cos θ0 / cos θ).",
))
