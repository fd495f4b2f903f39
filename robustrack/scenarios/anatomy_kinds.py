"""Scenario kinds for Sławianowski's speed-holding particle, S (3.5)–(3.6) (issue 21).

A particle of mass m in the plane, in the uniform field V = m g y, under the program
constraint ``F = ½ (ẋ² + ẏ²) − c²/2 = 0`` (S §3: L = (m/2) g_ij q̇ⁱq̇ʲ − V with
g = I; "constraints stabilizing the absolute value of velocity"). Two reactions hold the
speed c:

``speed-holding-particle`` — Appell–Chetaev (d'Alembert), S (3.6)
    ``m q̈ − λ q̇ + ∇V = 0``: the plant with a :class:`~robustrack.constraints.Nonholonomic`
    constraint, the fundamental equation itself (its reaction is along ∂F/∂q̇ = q̇).
``speed-holding-particle-lusternik`` — Lusternik (vakonomic), S (3.5)
    ``(m + μ) q̈ + μ̇ q̇ + ∇V = 0``: :class:`~robustrack.studies.lusternik.LusternikModel`; the
    reaction has the inertial term −μ q̈ beside the frictional −μ̇ q̇.

Closed forms: :func:`~robustrack.studies.lusternik.dalembert_speed_holding` and
:func:`~robustrack.studies.lusternik.lusternik_speed_holding`.

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

__all__: list = []  # the kinds register themselves; the models are in robustrack.studies.lusternik


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
    from ..studies.lusternik import dalembert_speed_holding, speed_holding_model

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
    from ..studies.anatomy import ANATOMY_UNITS, reaction_anatomy
    from ..studies.lusternik import LusternikModel, lusternik_speed_holding, speed_holding_model

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
                **an.metrics(), "energy_change": float(energy[-1] - energy[0]), "mu_end": float(mu[-1, 0])}

    rows = [("m²/s²", 1), ("m", 2), ("m", 2), ("kg", 1)]  # F; the prescribed ẍ, ÿ; ν̈ = μ̇ (μ: a mass, S 3.5a)
    return Problem(model.plant, model.constraint, q0, qd0, (0.0, cfg["simulation"]["t_end"]),
                   reference=lambda t: lusternik_speed_holding(t, m=m, g=g, c=c, theta0=th, mu0=mu0)[0],
                   extra_metrics=extra, units={**_UNITS, **ANATOMY_UNITS, "max_error_vs_closed_form": "m or kg·s"},
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
