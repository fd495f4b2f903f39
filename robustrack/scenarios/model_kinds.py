"""Scenario kinds for the models of a constraint (issue 12): vakonomic, servo, friction and added-mass limits.

Each kind builds a :class:`~robustrack.scenarios.registry.Problem` from the models of
:mod:`robustrack.studies.constraint_models`, so ``robustrack run`` treats them like every other
constrained simulation. The nonholonomic skate is the ``chaplygin-skate`` scenario of the
``chaplygin-skate`` kind (:mod:`robustrack.scenarios.kinds`); the d'Alembert speed
reducer is ``speed-reducer``.

``chaplygin-skate-vakonomic`` (K, "Example. The vakonomic skate")
    The skate's vakonomic model; reference:
    :func:`~robustrack.studies.constraint_models.vakonomic_skate_reduced`.
``speed-reducer-variational`` (S 2.6–2.8)
    The speed reducer's variational (Lusternik) model; reference:
    :func:`~robustrack.studies.constraint_models.variational_speed_reducer_reduced`.
``suslov-servo`` (K, "Servo constraints", Beghin; Suslov's problem)
    A rigid body whose constraint ω·l = 0 is kept by a torque along n
    (:class:`~robustrack.studies.constraint_models.ServoModel`); refused at build when
    (l, J⁻¹n) = 0.
``skate-friction`` (K Theorem 1)
    The free skate with anisotropic friction R_N = ½N(a·q̇)²; reference: the
    nonholonomic closed form (the limit N → ∞).
``skate-added-mass`` (K Theorem 2)
    The free skate with the added mass ½N(a·q̇)²; reference: the vakonomic reduced
    equations with λ(0) = 0 (the limit N → ∞).

Heavy imports (sympy, scipy) happen inside the functions: ``robustrack list`` only
registers the kinds.
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import RealizabilityError, ScenarioError
from .registry import SIMULATION_DEFAULTS, Problem, ScenarioKind, register_kind
from .units import residual_info

# The vakonomic models' rows: Φ (a velocity, differentiated once) and μ̇ − λ (0 by construction; λ in N·s:
# λ̇ ∂Φ/∂q̇ is a generalized force, and ∂Φ/∂ẋ = sin φ is a number for the skate, ∂Φ/∂φ̇ = x a length for
# the reducer, whose force there is a torque); μ = ∫λ dt is then in N·s².
_VAKONOMIC_ROWS = [("m/s", 1), ("N·s", 1)]

__all__: list = []  # the kinds register themselves; the models are in robustrack.studies.constraint_models


def _sim(**overrides) -> dict:
    return {**SIMULATION_DEFAULTS, **overrides}


def _t_span(cfg):
    return (0.0, cfg["simulation"]["t_end"])


# ------------------------------------------------------------------------- the skate (K)
def _skate_cfg(cfg):
    from ..plants.examples import ChaplyginSleigh

    p = cfg["plant"]
    return ChaplyginSleigh(m=p["m"], inertia=p["inertia"], g=p["g"]), p["m"], p["inertia"], p["g"]


def _build_skate_vakonomic(cfg):
    from ..studies.anatomy import ANATOMY_UNITS, reaction_anatomy
    from ..studies.constraint_models import VakonomicModel, nonholonomic_skate, skate_model, vakonomic_skate_reduced

    plant, m, inertia, g = _skate_cfg(cfg)
    _, _, phi_c = skate_model(m, inertia, g)
    model = VakonomicModel(plant, phi_c)
    w, lam0 = cfg["initial"]["omega"], cfg["initial"]["lambda"]
    q0, qd0 = np.zeros(3), np.array([0.0, 0.0, w])
    q0e, qd0e = model.initial_state(q0, qd0, lam0)

    def reference(t):
        return vakonomic_skate_reduced(t, m=m, inertia=inertia, g=g, q0=q0, qd0=qd0, lam0=lam0)[0]

    def extra(res):
        q, qd, lam = model.split(res.q, res.qd)
        energy = 0.5 * m * (qd[:, 0] ** 2 + qd[:, 1] ** 2) + 0.5 * inertia * qd[:, 2] ** 2 - m * g * q[:, 0]
        an = reaction_anatomy(model, res)  # the reaction split into the terms of S (1.7), their powers and works
        out = {"x_end": float(q[-1, 0]), "lambda_end": float(lam[-1, 0]),
               "energy_drift": float(np.max(np.abs(energy - energy[0]))), **an.metrics(),
               # d(T + V)/dt = q̇ᵀR: the energy gained is the reaction's work (trapezoidal, O(h²))
               "energy_balance_error": float(np.max(np.abs(energy - energy[0] - an.works["total"])))}
        if m == 1.0 and inertia == 1.0 and w != 0.0:  # K's closed form holds for m = I = 1
            out["x_end_nonholonomic"] = float(nonholonomic_skate(res.t[-1:], w, g)[0, 0])
        return out

    residual = residual_info("(Φ, μ̇ − λ)", "knife edge Φ = ẋ sin φ − ẏ cos φ, and μ̇ − λ (0 by construction)",
                             _VAKONOMIC_ROWS)
    return Problem(model.plant, model.constraint, q0e, qd0e, _t_span(cfg), reference=reference, extra_metrics=extra,
                   residual=residual, units={"max_error_vs_closed_form": "m or rad or N·s²", "x_end": "m",
                                             "lambda_end": "N·s", "energy_drift": "J", "x_end_nonholonomic": "m",
                                             **ANATOMY_UNITS, "energy_balance_error": "J"})


def _skate_plant_schema():
    return {"m": 1.0, "inertia": 1.0, "g": 1.0}


register_kind(ScenarioKind(
    "chaplygin-skate-vakonomic",
    {"plant": _skate_plant_schema(), "initial": {"omega": 1.0, "lambda": 0.0},
     "simulation": _sim(t_end=3.0, rtol=1e-10, n_points=301)},
    _build_skate_vakonomic,
    "Chaplygin skate on an inclined plane, vakonomic model [T] = F + λ[Φ] + λ̇ ∂Φ/∂q̇ (K); λ is a state "
    "(extra coordinate μ, μ̇ = λ); reference: the reduced equations integrated independently.",
))


# ------------------------------------------------------------------ the speed reducer (S)
def _build_speed_reducer_variational(cfg):
    from ..studies.constraint_models import VakonomicModel, speed_reducer_model, variational_speed_reducer_reduced
    from ..plants.examples import SpeedReducer

    p, r, ini = cfg["plant"], cfg["constraint"]["r"], cfg["initial"]
    plant = SpeedReducer(a=p["a"], b=p["b"], m=p["m"], k=p["k"])
    if not r > 0:
        raise ScenarioError(f"`constraint.r` (radius of rotor B) must be > 0; got {r!r}.")
    model = VakonomicModel(plant, speed_reducer_model(r))
    x0, xd0, phid0, lam0 = ini["x"], ini["x_dot"], ini["phi_dot"], ini["lambda"]
    q0e, qd0e = model.initial_state([0.0, 0.0, x0], [phid0, x0 * phid0 / r, xd0], lam0)
    a, b, m, k = (plant.a, plant.b, plant.m, plant.k)
    omega = math.sqrt(k / m)

    def reference(t):
        return variational_speed_reducer_reduced(t, a=a, b=b, m=m, k=k, r=r, x0=x0, xd0=xd0, phid0=phid0,
                                                 lam0=lam0)[0]

    def extra(res):
        q, qd, lam = model.split(res.q, res.qd)
        lam = lam[:, 0]
        energy = 0.5 * (a * qd[:, 0] ** 2 + b * qd[:, 1] ** 2 + m * qd[:, 2] ** 2 + k * q[:, 2] ** 2)
        A = a * qd[:, 0] - lam * q[:, 2]  # S (2.7a), μ_S = −λ
        B = b * qd[:, 1] + lam * r  # S (2.7b)
        x_dalembert = x0 * np.cos(omega * res.t) + xd0 / omega * np.sin(omega * res.t)  # S (2.2c)
        return {"energy_drift": float(np.max(np.abs(energy - energy[0]))),
                "integral_A_drift": float(np.max(np.abs(A - A[0]))),
                "integral_B_drift": float(np.max(np.abs(B - B[0]))),
                "max_x_difference_vs_dalembert": float(np.max(np.abs(q[:, 2] - x_dalembert)))}

    residual = residual_info("(Φ, μ̇ − λ)", "rolling contact Φ = x φ̇ − r ψ̇, and μ̇ − λ (0 by construction)",
                             _VAKONOMIC_ROWS)
    return Problem(model.plant, model.constraint, q0e, qd0e, _t_span(cfg), reference=reference, extra_metrics=extra,
                   residual=residual, units={"max_error_vs_closed_form": "rad or m or N·s²", "energy_drift": "J",
                                             # A = aφ̇ − λx, B = bψ̇ + λr: angular momenta
                                             "integral_A_drift": "N·m·s", "integral_B_drift": "N·m·s",
                                             "max_x_difference_vs_dalembert": "m"})


register_kind(ScenarioKind(
    "speed-reducer-variational",
    {"plant": {"a": 1.0, "b": 0.5, "m": 1.0, "k": 1.0},
     "constraint": {"r": 0.5},
     "initial": {"x": 0.8, "x_dot": -0.3, "phi_dot": 1.7, "lambda": 0.0},
     "simulation": _sim(rtol=1e-10)},
    _build_speed_reducer_variational,
    "Frictional speed reducer with the rolling constraint x φ̇ − r ψ̇ = 0 and variational (Lusternik, vakonomic) "
    "reactions (S 2.6–2.8): the translation feels the helical force −λφ̇. Reference: the reduced equations.",
    uncertain=("m",),
))


# ----------------------------------------------------------- servo: Suslov (K, Beghin)
def _unit3(v, key):
    v = np.asarray(v, dtype=float)
    norm = float(np.linalg.norm(v))
    if not norm > 0 or not np.isfinite(norm):
        raise ScenarioError(f"`{key}` must be a nonzero finite 3-vector (body axes); got {v.tolist()}.")
    return v / norm


def _build_suslov_servo(cfg):
    import sympy as sp

    from ..plants.servo import DEFAULT_REALIZABILITY_RCOND, ServoModel, realizability_margin
    from ..constraints import Nonholonomic
    from ..plants.rigid_body import EulerRigidBody

    plant = EulerRigidBody(J=tuple(cfg["plant"]["J"]))
    J = np.asarray(plant.J)
    l = _unit3(cfg["servo"]["l"], "servo.l")
    n = _unit3(cfg["servo"]["n"], "servo.n")
    margin = float(realizability_margin(np.diag(J), l[None, :], n))
    if margin < DEFAULT_REALIZABILITY_RCOND:
        raise RealizabilityError(
            f"suslov-servo: the constraint ω·l = 0 cannot be realized by a torque along n (`servo.l` = "
            f"{cfg['servo']['l']}, `servo.n` = {cfg['servo']['n']}): (J⁻¹n, l) = {float(l @ (n / J)):.3g}, "
            f"realizability margin {margin:.3g} < {DEFAULT_REALIZABILITY_RCOND:g} (Beghin's condition "
            "(A⁻¹N, ∂Φ/∂q̇) ≠ 0, K). With l, n and J constant this holds in every state, so the run is refused "
            "before it starts. Choose `servo.n` with (J⁻¹n, l) ≠ 0 — n = l is Suslov's nonholonomic problem.",
            margin=margin)
    w = sp.symbols("omega1:4", real=True)
    pi = sp.symbols("pi1:4", real=True)
    con = Nonholonomic(sum(float(li) * wi for li, wi in zip(l, w)), list(pi), list(w))
    servo = ServoModel(plant, con, n)
    w0 = np.asarray(cfg["initial"]["omega"], dtype=float)
    if abs(float(w0 @ l)) > 1e-12 * max(1.0, float(np.linalg.norm(w0))):
        raise ScenarioError(
            f"`initial.omega` = {w0.tolist()} violates the constraint ω·l = 0 (ω·l = {float(w0 @ l):.3g} with l = "
            f"{l.tolist()}); the servo keeps ω·l constant, so start on it, e.g. initial.omega = "
            f"{np.round(w0 - (w0 @ l) * l, 12).tolist()} (ω0 with its l-component removed).")
    reference = None
    principal = np.isclose(np.abs(l), 1.0)
    if np.allclose(l, n) and principal.any():
        def reference(t):  # ω·e_i = 0 along a principal axis: (Jω)×ω ∥ e_i, so ω stays ω0 (Euler)
            return t[:, None] * w0[None, :]

    def extra(res):
        wt = res.qd
        energy = plant.energy(wt)
        s = servo.evaluate(res.q, res.qd, res.t)
        return {"max_abs_omega_dot_l": float(np.max(np.abs(wt @ l))),
                "energy_drift": float(np.max(np.abs(energy - energy[0]))),
                "max_abs_servo_torque": float(np.max(np.abs(s.lam))),
                "min_realizability_margin": float(np.min(s.margin))}

    # ψ = ω·l with l a unit vector: an angular rate; the servo torque acts along the unit vector n
    residual = residual_info("ψ", "servo constraint ψ = ω·l", [("rad/s", 1)])
    return Problem(plant, con, np.zeros(3), w0, _t_span(cfg), reference=reference, extra_metrics=extra,
                   nonideal=servo.force, residual=residual,
                   units={"max_abs_omega_dot_l": "rad/s", "energy_drift": "J", "max_abs_servo_torque": "N·m",
                          "min_realizability_margin": ""})


register_kind(ScenarioKind(
    "suslov-servo",
    {"plant": {"J": [1.0, 2.0, 3.0]},
     "servo": {"l": [0.0, 0.0, 1.0], "n": [0.0, 0.0, 1.0]},
     "initial": {"omega": [1.0, 0.5, 0.0]},
     "simulation": _sim(rtol=1e-10)},
    _build_suslov_servo,
    "Rigid body in angular velocities (Euler) with the servo constraint ω·l = 0 kept by a torque along n "
    "(Beghin, in K); realizable iff (J⁻¹n, l) ≠ 0, checked before the run and along it. l = n: Suslov's problem.",
    uncertain=("J",),
))


# --------------------------------------------------- friction and added-mass limits (K)
def _build_penalty(cfg, which):
    from ..studies.constraint_models import NoConstraint, nonholonomic_skate, skate_penalty_plant, vakonomic_skate_reduced

    p = cfg["plant"]
    m, inertia, g = p["m"], p["inertia"], p["g"]
    N = cfg[which]["N"]
    if not (math.isfinite(N) and N > 0):
        raise ScenarioError(f"`{which}.N` must be a finite number > 0; got {N!r}.")
    plant = skate_penalty_plant(which, m, inertia, g).replace(N=N)  # plants are immutable: the cache is safe
    w = cfg["initial"]["omega"]
    q0, qd0 = np.zeros(3), np.array([0.0, 0.0, w])

    if which == "friction":
        def reference(t):  # Theorem 1: the limit is the nonholonomic motion (K's closed form, m = I = 1)
            return nonholonomic_skate(t, w, g)
        if not (m == 1.0 and inertia == 1.0 and w != 0.0):
            reference = None
    else:
        def reference(t):  # Theorem 2: the limit is the vakonomic motion with λ(0) = −lim N Φ(0) = 0
            return vakonomic_skate_reduced(t, m=m, inertia=inertia, g=g, q0=q0, qd0=qd0, lam0=0.0)[0][:, :3]

    def extra(res):
        slip = res.qd[:, 0] * np.sin(res.q[:, 2]) - res.qd[:, 1] * np.cos(res.q[:, 2])
        return {"max_abs_slip": float(np.max(np.abs(slip))), "x_end": float(res.q[-1, 0])}

    # no constraint rows (the penalty replaces them): no residual; the slip is the knife edge's ẋ sin φ − ẏ cos φ
    return Problem(plant, NoConstraint(3), q0, qd0, _t_span(cfg), reference=reference, extra_metrics=extra,
                   units={"max_abs_slip": "m/s", "x_end": "m"})


register_kind(ScenarioKind(
    "skate-friction",
    {"plant": _skate_plant_schema(), "friction": {"N": 100.0}, "initial": {"omega": 1.0},
     "simulation": _sim(method="LSODA", rtol=1e-10)},
    lambda cfg: _build_penalty(cfg, "friction"),
    "The free Chaplygin skate with anisotropic viscous friction R_N = ½N(ẋ sin φ − ẏ cos φ)² (K Theorem 1): "
    "tends to the nonholonomic skate as N → ∞ (error ~ 1/N); reference: K's closed form.",
))

register_kind(ScenarioKind(
    "skate-added-mass",
    {"plant": _skate_plant_schema(), "added_mass": {"N": 100.0}, "initial": {"omega": 1.0},
     "simulation": _sim(t_end=3.0, rtol=1e-10, n_points=301)},
    lambda cfg: _build_penalty(cfg, "added_mass"),
    "The free Chaplygin skate with an added mass ½N(ẋ sin φ − ẏ cos φ)² in T (K Theorem 2): tends to the "
    "vakonomic skate with λ(0) = 0 as N → ∞ (error ~ 1/N); reference: its reduced equations.",
))
