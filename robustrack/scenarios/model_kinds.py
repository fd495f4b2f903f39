"""Scenario kinds for the models of a constraint (issue 12): vakonomic, servo, friction and added-mass limits.

Each kind builds a :class:`~robustrack.scenarios.registry.Problem` from the models of
:mod:`robustrack.constraint_models`, so ``robustrack run`` treats them like every other
constrained simulation. The nonholonomic skate is the ``chaplygin-skate`` scenario of the
``chaplygin-skate`` kind (:mod:`robustrack.scenarios.kinds`); the d'Alembert speed
reducer is ``speed-reducer``.

``chaplygin-skate-vakonomic`` (K, "Example. The vakonomic skate")
    The skate's vakonomic model; reference: :func:`vakonomic_skate_reduced`.
``speed-reducer-variational`` (S 2.6–2.8)
    The speed reducer's variational (Lusternik) model; reference:
    :func:`variational_speed_reducer_reduced`.
``suslov-servo`` (K, "Servo constraints", Beghin; Suslov's problem)
    A rigid body whose constraint ω·l = 0 is kept by a torque along n
    (:class:`~robustrack.constraint_models.ServoModel`); refused at build when
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

import dataclasses
import functools
import math

import numpy as np

from ..errors import RealizabilityError, ScenarioError
from .registry import SIMULATION_DEFAULTS, Problem, ScenarioKind, register_kind
from .units import residual_info

# The vakonomic models' rows: Φ (a velocity, differentiated once) and μ̇ − λ (0 by construction; λ in N·s:
# λ̇ ∂Φ/∂q̇ is a generalized force, and ∂Φ/∂ẋ = sin φ is a number for the skate, ∂Φ/∂φ̇ = x a length for
# the reducer, whose force there is a torque); μ = ∫λ dt is then in N·s².
_VAKONOMIC_ROWS = [("m/s", 1), ("N·s", 1)]

__all__ = ["vakonomic_skate_reduced", "variational_speed_reducer_reduced", "skate_model",
           "speed_reducer_model"]

#: Tolerances of the independent reduced-equation integrations: tighter than any
#: scenario's (rtol 1e-10), so their own error is negligible next to the run's.
_REDUCED_RTOL, _REDUCED_ATOL = 1e-12, 1e-13


def _sim(**overrides) -> dict:
    return {**SIMULATION_DEFAULTS, **overrides}


def _t_span(cfg):
    return (0.0, cfg["simulation"]["t_end"])


# ------------------------------------------------------------------------- the skate (K)
def skate_model(m=1.0, inertia=1.0, g=1.0):
    """The Chaplygin skate on an inclined plane in sympy: ``(T, V, Φ)`` (K, "Example: the Chaplygin skate").

    ``T = ½ m (ẋ² + ẏ²) + ½ I φ̇²``, ``V = −m g x`` (x down the slope; K takes
    m = I = g = 1), and the knife edge ``Φ = ẋ sin φ − ẏ cos φ`` as a
    :class:`~robustrack.constraints.Nonholonomic` on (x, y, φ).

    Parameters
    ----------
    m : float
        Mass (> 0).
    inertia : float
        Moment of inertia about the contact point (> 0).
    g : float
        Gravity along the slope (>= 0).

    Returns
    -------
    T, V : sympy expressions
    constraint : Nonholonomic
    """
    import sympy as sp

    from ..constraints import Nonholonomic

    x, y, phi = sp.symbols("x y phi", real=True)
    xd, yd, phid = sp.symbols("x_dot y_dot phi_dot", real=True)
    T = m * (xd**2 + yd**2) / 2 + inertia * phid**2 / 2
    V = -m * g * x
    return T, V, Nonholonomic(xd * sp.sin(phi) - yd * sp.cos(phi), [x, y, phi], [xd, yd, phid])


def _skate_nonholonomic(t, omega, g):
    """K's closed form of the nonholonomic skate (zero start except φ̇(0) = ω; m = I = 1)."""
    return np.stack([g * np.sin(omega * t) ** 2 / (2 * omega**2),
                     g * (omega * t - 0.5 * np.sin(2 * omega * t)) / (2 * omega**2), omega * t], axis=-1)


def vakonomic_skate_reduced(t, *, m, inertia, g, q0, qd0, lam0):
    """The vakonomic skate by its reduced equations, integrated independently (K; derived here).

    Derivation. With ``T = ½m(ẋ² + ẏ²) + ½Iφ̇²``, ``F = (mg, 0, 0)`` and
    ``Φ = ẋ sin φ − ẏ cos φ``: ``∂Φ/∂q̇ = (sin φ, −cos φ, 0)`` and
    ``[Φ] = d/dt ∂Φ/∂q̇ − ∂Φ/∂q = (φ̇ cos φ, φ̇ sin φ, −(ẋ cos φ + ẏ sin φ))``. The vakonomic
    equations ``[T] = F + λ[Φ] + λ̇ ∂Φ/∂q̇`` read

        m ẍ = m g + λ φ̇ cos φ + λ̇ sin φ  = m g + d/dt(λ sin φ)
        m ÿ =       λ φ̇ sin φ − λ̇ cos φ  =     − d/dt(λ cos φ)
        I φ̈ = −λ (ẋ cos φ + ẏ sin φ),

    so ``p := m ẋ − λ sin φ = m g t + c1`` and ``s := m ẏ + λ cos φ = c2`` with
    ``c1 = m ẋ0 − λ0 sin φ0``, ``c2 = m ẏ0 + λ0 cos φ0``. Then Φ = 0 gives
    ``λ = s cos φ − p sin φ``, hence ``m ẋ = p + λ sin φ``, ``m ẏ = s − λ cos φ``,
    ``m (ẋ cos φ + ẏ sin φ) = p cos φ + s sin φ`` and

        I φ̈ = (p sin φ − s cos φ)(p cos φ + s sin φ) / m .

    For K's start (zero except φ̇(0) = ω) and λ(0) = 0 with m = I = g = 1: c1 = c2 = 0,
    ``φ̈ = t² sin φ cos φ``, ``ẋ = t cos² φ ≥ 0`` — the skate slides down — and
    ``ẏ = t sin φ cos φ``: K's equations ("Let φ = 0 and ẏ + λ cos φ = 0 for t = 0").
    Integrated here for (φ, φ̇, x, y, μ) with μ̇ = λ, by scipy DOP853 at rtol 1e-12.

    Parameters
    ----------
    t : array_like (T,)
        Output times, increasing, starting at 0.
    m, inertia, g : float
        Mass, moment of inertia, gravity along the slope (keyword-only).
    q0, qd0 : array_like (3,)
        Start (x, y, φ), (ẋ, ẏ, φ̇), on the constraint (keyword-only).
    lam0 : float
        λ(0) (keyword-only).

    Returns
    -------
    q : ndarray (T, 4)
        Columns x, y, φ, μ = ∫λ dt (the vakonomic model's extended coordinates).
    lam : ndarray (T,)
        λ(t).
    """
    from scipy.integrate import solve_ivp

    t = np.asarray(t, dtype=float)
    x0, y0, phi0 = (float(v) for v in q0)
    xd0, yd0, _ = (float(v) for v in qd0)
    c1 = m * xd0 - lam0 * math.sin(phi0)
    c2 = m * yd0 + lam0 * math.cos(phi0)

    def lam_of(tt, phi):
        return c2 * np.cos(phi) - (m * g * tt + c1) * np.sin(phi)

    def rhs(tt, s):
        phi, w = s[0], s[1]
        p = m * g * tt + c1
        lam = lam_of(tt, phi)
        return [w, (p * math.sin(phi) - c2 * math.cos(phi)) * (p * math.cos(phi) + c2 * math.sin(phi)) / (m * inertia),
                (p + lam * math.sin(phi)) / m, (c2 - lam * math.cos(phi)) / m, lam]

    sol = solve_ivp(rhs, (float(t[0]), float(t[-1])), [phi0, float(qd0[2]), x0, y0, 0.0], t_eval=t,
                    method="DOP853", rtol=_REDUCED_RTOL, atol=_REDUCED_ATOL)
    phi, _, x, y, mu = sol.y
    return np.stack([x, y, phi, mu], axis=-1), lam_of(sol.t, phi)


def _skate_cfg(cfg):
    from ..plants.examples import ChaplyginSleigh

    p = cfg["plant"]
    return ChaplyginSleigh(m=p["m"], inertia=p["inertia"], g=p["g"]), p["m"], p["inertia"], p["g"]


def _build_skate_vakonomic(cfg):
    from ..constraint_models import VakonomicModel

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
        out = {"x_end": float(q[-1, 0]), "lambda_end": float(lam[-1, 0]),
               "energy_drift": float(np.max(np.abs(energy - energy[0])))}
        if m == 1.0 and inertia == 1.0 and w != 0.0:  # K's closed form holds for m = I = 1
            out["x_end_nonholonomic"] = float(_skate_nonholonomic(res.t[-1:], w, g)[0, 0])
        return out

    residual = residual_info("(Φ, μ̇ − λ)", "knife edge Φ = ẋ sin φ − ẏ cos φ, and μ̇ − λ (0 by construction)",
                             _VAKONOMIC_ROWS)
    return Problem(model.plant, model.constraint, q0e, qd0e, _t_span(cfg), reference=reference, extra_metrics=extra,
                   residual=residual, units={"max_error_vs_closed_form": "m or rad or N·s²", "x_end": "m",
                                             "lambda_end": "N·s", "energy_drift": "J", "x_end_nonholonomic": "m"})


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
def speed_reducer_model(r):
    """The speed reducer's rolling constraint ``Φ = x φ̇ − r ψ̇`` in sympy (S 2.2d), on (φ, ψ, x).

    Parameters
    ----------
    r : float
        Radius of rotor B (> 0).

    Returns
    -------
    Nonholonomic
    """
    import sympy as sp

    from ..constraints import Nonholonomic

    phi, psi, x = sp.symbols("phi psi x", real=True)
    phid, psid, xd = sp.symbols("phi_dot psi_dot x_dot", real=True)
    return Nonholonomic(x * phid - r * psid, [phi, psi, x], [phid, psid, xd])


def variational_speed_reducer_reduced(t, *, a, b, m, k, r, x0, xd0, phid0, lam0):
    """The speed reducer's variational (Lusternik) motion by its reduced equations (S 2.6–2.8, re-derived).

    Derivation. ``L = aφ̇²/2 + bψ̇²/2 + mẋ²/2 − kx²/2`` (S 2.1, V = kx²/2) and
    ``Φ = x φ̇ − r ψ̇`` (S 2.2d): ``∂Φ/∂q̇ = (x, −r, 0)``, ``[Φ] = (ẋ, 0, −φ̇)``. The
    vakonomic equations ``[T] = F + λ[Φ] + λ̇ ∂Φ/∂q̇`` are

        a φ̈ = λ ẋ + λ̇ x = d/dt(λ x),   b ψ̈ = −λ̇ r,   m ẍ = −k x − λ φ̇,

    S (2.6) with S's multiplier μ_S = −λ. Integrating the first two (S 2.7):
    ``a φ̇ − λ x = A``, ``b ψ̇ + λ r = B`` (constants from the start). With ψ̇ = x φ̇ / r:

        φ̇ = (A + B x / r) / (a + b x² / r²),   λ = (B − (b/r) x φ̇) / r,
        m ẍ + k x + λ φ̇ = 0,                    ψ̇ = x φ̇ / r,

    S (2.8) — note that the extraction of S (2.4), (2.6b)–(2.8) carries sign slips
    (``a − b x²/r²`` for ``a + b x²/r²``; ``bψ̇ + rμ`` with the constraint as printed in
    2.2d); the form here follows from (2.1), (2.2d) and the variational principle and is
    checked against the integrals A, B and the energy. The translation is driven by
    the "helical" force −λφ̇ (S), which the d'Alembert model (S 2.2c: m ẍ = −V') lacks.
    Integrated for (x, ẋ, φ, ψ, μ), μ̇ = λ, by scipy DOP853 at rtol 1e-12.

    Parameters
    ----------
    t : array_like (T,)
        Output times, increasing, starting at 0 (φ(0) = ψ(0) = 0).
    a, b, m, k, r : float
        Rotor inertias, mass and spring of rotor B, radius of B (keyword-only).
    x0, xd0, phid0 : float
        Start: x, ẋ, φ̇ (ψ̇(0) = x0 φ̇0 / r from the constraint) (keyword-only).
    lam0 : float
        λ(0) (keyword-only).

    Returns
    -------
    q : ndarray (T, 4)
        Columns φ, ψ, x, μ = ∫λ dt.
    lam : ndarray (T,)
        λ(t).
    """
    from scipy.integrate import solve_ivp

    t = np.asarray(t, dtype=float)
    A = a * phid0 - lam0 * x0
    B = b * x0 * phid0 / r + lam0 * r

    def phid_lam(x):
        phid = (A + B * x / r) / (a + b * x**2 / r**2)
        return phid, (B - b / r * x * phid) / r

    def rhs(_, s):
        x, xd = s[0], s[1]
        phid, lam = phid_lam(x)
        return [xd, (-k * x - lam * phid) / m, phid, x * phid / r, lam]

    sol = solve_ivp(rhs, (float(t[0]), float(t[-1])), [x0, xd0, 0.0, 0.0, 0.0], t_eval=t, method="DOP853",
                    rtol=_REDUCED_RTOL, atol=_REDUCED_ATOL)
    x, _, phi, psi, mu = sol.y
    return np.stack([phi, psi, x, mu], axis=-1), phid_lam(x)[1]


def _build_speed_reducer_variational(cfg):
    from ..constraint_models import VakonomicModel
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

    from ..constraint_models import DEFAULT_REALIZABILITY_RCOND, ServoModel, realizability_margin
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
@functools.lru_cache(maxsize=8)
def _penalty_plant(which, m, inertia, g):
    """The skate's friction or added-mass plant at N = 1, derived once per (which, m, I, g)."""
    from ..constraint_models import added_mass_plant, anisotropic_friction_plant

    T, V, phi_c = skate_model(m, inertia, g)
    build = anisotropic_friction_plant if which == "friction" else added_mass_plant
    return dataclasses.replace(build(T, V, phi_c, 1.0), kinds=("length", "length", "angle"))  # x, y, φ


def _build_penalty(cfg, which):
    from ..constraint_models import NoConstraint

    p = cfg["plant"]
    m, inertia, g = p["m"], p["inertia"], p["g"]
    N = cfg[which]["N"]
    if not (math.isfinite(N) and N > 0):
        raise ScenarioError(f"`{which}.N` must be a finite number > 0; got {N!r}.")
    plant = _penalty_plant(which, m, inertia, g).replace(N=N)  # plants are immutable: the cache is safe
    w = cfg["initial"]["omega"]
    q0, qd0 = np.zeros(3), np.array([0.0, 0.0, w])

    if which == "friction":
        def reference(t):  # Theorem 1: the limit is the nonholonomic motion (K's closed form, m = I = 1)
            return _skate_nonholonomic(t, w, g)
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
