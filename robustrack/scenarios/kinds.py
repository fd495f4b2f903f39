"""The built-in scenario kinds: the seed examples with their schemas and closed forms.

Each kind's schema lists every key a TOML file may set (the defaults are the
seed's values); ``build(cfg)`` returns a :class:`~robustrack.scenarios.registry.Problem`.
Closed forms (``reference``) come from the seeds; where a seed gives none the
scenario reports conservation laws or force laws instead (``extra_metrics``).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from ..constraints import Nonholonomic, Stabilization
from ..plants import pendulum_energy_constraint
from ..errors import ScenarioError
from ..plants import LagrangianPlant, NLinkPendulum
from ..plants import examples as sp
from ..plants.examples import quaternion_matrix
from .registry import SIMULATION_DEFAULTS, Problem, ScenarioKind, register_kind
from .units import residual_info


def _sim(**overrides) -> dict:
    return {**SIMULATION_DEFAULTS, **overrides}


def plant_defaults(cls) -> dict:
    """A plant class's default parameters as a [plant] schema table (floats, lists of floats)."""
    out = {}
    for f in dataclasses.fields(cls):
        v = f.default
        out[f.name] = [float(x) for x in v] if isinstance(v, (tuple, list, np.ndarray)) else float(v)
    return out


def duffing_start(cfg) -> tuple:
    """(q0, q̇0) of KU ex. 3: x1, x2 and ẋ2 given; ẋ1 from d/dt(x1 − x2) = A ω at t = 0 (KU 35c)."""
    c, ini = cfg["constraint"], cfg["initial"]
    x2d = ini["x2_dot"]
    return np.array(ini["q"], dtype=float), np.array([x2d + c["amplitude"] * c["omega"], x2d])


def _plant(cls, cfg):
    return cls(**{k: (tuple(v) if isinstance(v, list) else v) for k, v in cfg["plant"].items()})


def _t_span(cfg):
    return (0.0, cfg["simulation"]["t_end"])


# ----------------------------------------------------------------- triple pendulum (W 2.3)
def _build_triple_pendulum_energy(cfg):
    plant = NLinkPendulum(m=tuple(cfg["plant"]["m"]), L=tuple(cfg["plant"]["L"]), g=cfg["plant"]["g"])
    m1, L1 = cfg["plant"]["m"][0], cfg["plant"]["L"][0]
    con = pendulum_energy_constraint(L1=L1, g=plant.g, gain=cfg["constraint"]["gain"], n=3, m1=m1)

    def extra(res):
        E1 = 0.5 * m1 * L1**2 * res.qd[:, 0] ** 2 - m1 * plant.g * L1 * np.cos(res.q[:, 0])
        half = res.t >= 0.5 * res.t[-1]
        return {"E1_initial": float(abs(E1[0])), "E1_final": float(abs(E1[-1])),
                "E1_max_second_half": float(np.max(np.abs(E1[half])))}

    # ψ = E1/(m1 L1) = ½ L1 θ̇1² − g cos θ1: a length times a squared rate; a velocity-level row (ψ̇ + αψ = 0)
    residual = residual_info("ψ", "Energy constraint residual ψ = E₁/(m₁L₁) = ½L₁θ̇₁² − g cos θ₁", [("m/s²", 1)])
    return Problem(plant, con, np.array(cfg["initial"]["q"]), np.array(cfg["initial"]["qd"]),
                   _t_span(cfg), extra_metrics=extra, residual=residual,
                   units={"E1_initial": "J", "E1_final": "J", "E1_max_second_half": "J"})


register_kind(ScenarioKind(
    "triple-pendulum-energy",
    {"plant": {"m": [1.0, 2.0, 3.0], "L": [1.0, 1.5, 2.0], "g": 9.81},
     "constraint": {"gain": 0.02},
     "initial": {"q": [1.0, 0.0, 0.0], "qd": [0.001, 0.0, 0.0]},
     "simulation": _sim()},
    _build_triple_pendulum_energy,
    "Triple pendulum driven to E1 = 0 by the stabilized energy constraint (W 2.3.4–2.3.7).",
))


# ------------------------------------------------------------------- Duffing (KU ex. 3)
def _build_duffing(cfg):
    plant = _plant(sp.CoupledDuffing, cfg)
    c = cfg["constraint"]
    con = sp.coupled_duffing_constraint(plant, alpha=c["alpha"], amplitude=c["amplitude"], omega=c["omega"])
    q0, qd0 = duffing_start(cfg)

    def reference_error(res):
        s = c["amplitude"] * np.exp(-c["alpha"] * res.t) * np.sin(c["omega"] * res.t)
        return float(np.max(np.abs(res.q[:, 0] - res.q[:, 1] - s)))

    return Problem(plant, con, q0, qd0, _t_span(cfg),
                   extra_metrics=lambda res: {"max_error_vs_closed_form": reference_error(res)},
                   # φ = x1 − x2 − A e^(−αt) sin ωt, a difference of positions; holonomic (φ̈ = 0)
                   residual=residual_info("φ", "φ = x₁ − x₂ − A e^(−αt) sin ωt", [("m", 2)]))


register_kind(ScenarioKind(
    "duffing",
    {"plant": plant_defaults(sp.CoupledDuffing),
     "constraint": {"alpha": 4.0, "amplitude": 1.0, "omega": 2 * math.pi},
     "initial": {"q": [1.0, 1.0], "x2_dot": 2.0},
     "simulation": _sim(rtol=1e-10)},
    _build_duffing,
    "Coupled Duffing oscillator forced onto x1 − x2 = e^{−αt} sin 2πt (KU ex. 3, eq. 35). "
    "ẋ1(0) follows from the constraint.",
    uncertain=("m1", "m2"),
))


# ------------------------------------------------------- Cartesian pendulum (KU ex. 2)
def _build_cartesian_pendulum(cfg):
    plant = _plant(sp.CartesianPendulum, cfg)
    L, mu = cfg["constraint"]["L"], cfg["constraint"]["mu"]
    con = sp.cartesian_pendulum_constraint(plant, L=L, mu=mu)
    a = cfg["initial"]["a"]
    reference = None
    if mu == 0.0:
        g = plant.g

        def reference(t):
            # the rigid pendulum in its angle (from the downward y axis): θ̈ = −(g/L) sin θ
            from scipy.integrate import solve_ivp

            sol = solve_ivp(lambda _, y: [y[1], -g / L * np.sin(y[0])], (t[0], t[-1]), [0.0, a / L],
                            t_eval=t, rtol=1e-12, atol=1e-12, method="DOP853")
            return np.stack([L * np.sin(sol.y[0]), L * np.cos(sol.y[0])], axis=-1)

    residual = residual_info("φ", "φ = x² + y² − L²(1 − μ sin x²)", [("m²", 2)])  # a squared length, holonomic
    return Problem(plant, con, np.array([0.0, L]), np.array([a, 0.0]), _t_span(cfg), reference=reference,
                   residual=residual)


register_kind(ScenarioKind(
    "cartesian-pendulum",
    {"plant": plant_defaults(sp.CartesianPendulum),
     "constraint": {"L": 20.0, "mu": 0.0},
     "initial": {"a": 20.0},
     "simulation": _sim()},
    _build_cartesian_pendulum,
    "Pendulum in Cartesian coordinates with length constraint x²+y² = L²(1 − μ sin x²) (KU ex. 2). "
    "ICs x = 0, y = L, ẋ = a. For μ = 0 the reference is the angle formulation.",
))


# ------------------------------------------------- nonholonomic particle (KU ex. 1)
def _build_particle(cfg):
    plant = _plant(sp.FreeParticle, cfg)
    con = sp.free_particle_constraint(plant)
    q0 = np.array(cfg["initial"]["q"])
    xd0, zd0 = cfg["initial"]["x_dot"], cfg["initial"]["z_dot"]
    qd0 = np.array([xd0, q0[2] * xd0, zd0])  # ẏ = z ẋ at t = 0

    def reference(t):
        # KU (38) integrated: z̈ = 0, ẋ √(1+z²) = const, ẏ = z ẋ.
        z0, k = q0[2], xd0 * math.sqrt(1 + q0[2] ** 2)
        z = z0 + zd0 * t
        if zd0 == 0.0:
            x = q0[0] + xd0 * t
            y = q0[1] + z0 * xd0 * t
        else:
            x = q0[0] + k * (np.arcsinh(z) - math.asinh(z0)) / zd0
            y = q0[1] + k * (np.sqrt(1 + z**2) - math.sqrt(1 + z0**2)) / zd0
        return np.stack([x, y, z], axis=-1)

    # ψ = ẏ − z ẋ: KU read z as a pure number, so ψ is a velocity
    residual = residual_info("ψ", "ψ = ẏ − z ẋ (z read as a number, as in KU)", [("m/s", 1)])
    return Problem(plant, con, q0, qd0, _t_span(cfg), reference=reference, residual=residual)


register_kind(ScenarioKind(
    "nonholonomic-particle",
    {"plant": plant_defaults(sp.FreeParticle),
     "initial": {"q": [0.0, 0.0, 0.0], "x_dot": 1.0, "z_dot": 0.5},
     "simulation": _sim()},
    _build_particle,
    "Force-free particle under the nonholonomic constraint ẏ = z ẋ (KU ex. 1, eq. 38); ẏ(0) = z ẋ.",
))


# ------------------------------------------------------------ Chaplygin skate (K)
def _build_skate(cfg):
    plant = _plant(sp.ChaplyginSleigh, cfg)
    con = sp.chaplygin_sleigh_constraint(plant)
    w, g = cfg["initial"]["omega"], plant.g

    def reference(t):
        return np.stack([g * np.sin(w * t) ** 2 / (2 * w**2),
                         g * (w * t - 0.5 * np.sin(2 * w * t)) / (2 * w**2), w * t], axis=-1)

    residual = residual_info("ψ", "knife edge ψ = ẋ sin φ − ẏ cos φ (the sideways velocity)", [("m/s", 1)])
    return Problem(plant, con, np.zeros(3), np.array([0.0, 0.0, w]), _t_span(cfg), reference=reference,
                   residual=residual)


register_kind(ScenarioKind(
    "chaplygin-skate",
    {"plant": plant_defaults(sp.ChaplyginSleigh), "initial": {"omega": 1.0},
     "simulation": _sim(rtol=1e-10)},
    _build_skate,
    "Chaplygin skate on an inclined plane, nonholonomic model (K); closed form x, y, φ.",
))


# ---------------------------------------------------------------- rolling wheel (W 4.4.1)
def _build_wheel(cfg):
    plant = _plant(sp.RollingWheel, cfg)
    beta = cfg["constraint"]["beta"]
    con = sp.rolling_wheel_constraint(plant, beta=beta)
    th0, thd0 = cfg["initial"]["theta"], cfg["initial"]["theta_dot"]
    Rs = plant.R * math.sin(beta)
    thdd = plant.m * plant.g * Rs / (plant.m * plant.R**2 + plant.I_c)  # W (4.4.6)

    def reference(t):
        th = th0 + thd0 * t + 0.5 * thdd * t**2
        return np.stack([th, Rs * th], axis=-1)

    def extra(res):
        Qc_ref = np.array([plant.m * plant.g * Rs, -plant.m * plant.g])  # W (4.4.9)
        return {"max_Qc_error_vs_closed_form": float(np.max(np.abs(res.Qc - Qc_ref)))}

    residual = residual_info("φ", "φ = R sin β · θ − y (R in m, θ in rad)", [("m", 2)])
    return Problem(plant, con, np.array([th0, Rs * th0]), np.array([thd0, Rs * thd0]), _t_span(cfg),
                   reference=reference, extra_metrics=extra, residual=residual,
                   units={"max_Qc_error_vs_closed_form": "{Q}"})


register_kind(ScenarioKind(
    "rolling-wheel",
    {"plant": plant_defaults(sp.RollingWheel), "constraint": {"beta": math.pi / 6},
     "initial": {"theta": 0.0, "theta_dot": 0.0}, "simulation": _sim(t_end=2.0)},
    _build_wheel,
    "Wheel rolling down an incline; singular mass matrix, augmented system (W 4.4.1–4.4.9).",
))


# ------------------------------------------------------- quaternion rigid body (W 4.4.4)
def _build_quaternion(cfg):
    plant = _plant(sp.QuaternionRigidBody, cfg)
    con = sp.quaternion_rigid_body_constraint(plant)
    u0 = np.array(cfg["initial"]["u"])
    u0 = u0 / np.linalg.norm(u0)
    w0 = np.array(cfg["initial"]["omega"])
    ud0 = 0.5 * quaternion_matrix(u0).T @ w0  # ω = 2 E u̇, E Eᵀ = I, E u = 0 (W 4.4.21)
    J = np.asarray(plant.J)

    def extra(res):
        E = quaternion_matrix(res.q)
        w = 2 * np.einsum("...ij,...j->...i", E, res.qd)
        energy = 0.5 * np.sum(J * w**2, axis=-1)
        Qc_ref = -2 * energy[:, None] * 2 * res.q  # −2 (ωᵀJω) u  (W 4.4.26)
        return {"max_Qc_error_vs_closed_form": float(np.max(np.abs(res.Qc - Qc_ref))),
                "energy_drift": float(np.max(np.abs(energy - energy[0])))}

    residual = residual_info("φ", "φ = ½(uᵀu − 1) (u a unit quaternion)", [("", 2)])  # dimensionless, holonomic
    return Problem(plant, con, u0, ud0, _t_span(cfg), extra_metrics=extra, residual=residual,
                   units={"max_Qc_error_vs_closed_form": "{Q}", "energy_drift": "J"})


register_kind(ScenarioKind(
    "quaternion-rigid-body",
    {"plant": plant_defaults(sp.QuaternionRigidBody),
     "initial": {"u": [1.0, 0.0, 0.0, 0.0], "omega": [1.0, 0.2, 0.5]},
     "simulation": _sim()},
    _build_quaternion,
    "Torque-free rigid body in unit quaternions; M = 4EᵀJE has rank 3 (W 4.4.20–4.4.26).",
))


# ------------------------------------------------------- two particles on ellipses (W 4.4.5)
def _build_ellipses(cfg):
    plant = _plant(sp.TwoEllipseParticles, cfg)
    c = cfg["constraint"]
    con = sp.two_ellipse_particles_constraint(plant, eps=c["eps"], p=c["p"], c=c["c"])
    eps, p, cc = (np.array(c[k]) for k in ("eps", "p", "c"))
    r0 = p / (1 - eps)  # start at θ = 0: r = ε x + p with x = r
    q0 = np.array([r0[0], 0.0, r0[1], 0.0])
    qd0 = np.array([0.0, cc[0] / r0[0], 0.0, cc[1] / r0[1]])  # x ẏ − y ẋ = c

    def extra(res):
        xy = res.q.reshape(-1, 2, 2)
        r = np.linalg.norm(xy, axis=-1)
        coef = -np.array([plant.m1, plant.m2]) * cc**2 / (p * r**3)  # W (4.4.35)
        Qc_ref = (coef[..., None] * xy).reshape(-1, 4)
        return {"max_Qc_error_vs_closed_form": float(np.max(np.abs(res.Qc - Qc_ref))),
                "max_Qc": float(np.max(np.abs(res.Qc)))}

    # rows φ_i = r_i − ε_i x_i − p_i (lengths, holonomic), ψ_i = x_i ẏ_i − y_i ẋ_i − c_i (twice an areal velocity)
    residual = residual_info("(φ₁, φ₂, ψ₁, ψ₂)", "φᵢ = rᵢ − εᵢxᵢ − pᵢ, ψᵢ = xᵢẏᵢ − yᵢẋᵢ − cᵢ",
                             [("m", 2), ("m", 2), ("m²/s", 1), ("m²/s", 1)])
    return Problem(plant, con, q0, qd0, _t_span(cfg), extra_metrics=extra, residual=residual,
                   units={"max_Qc_error_vs_closed_form": "{Q}", "max_Qc": "{Q}"})


register_kind(ScenarioKind(
    "two-ellipses",
    {"plant": plant_defaults(sp.TwoEllipseParticles),
     "constraint": {"eps": [0.5, 0.3], "p": [1.0, 2.0], "c": [1.0, 2.0]},
     "simulation": _sim()},
    _build_ellipses,
    "Two particles held on confocal ellipses with constant areal velocity; the constraint "
    "forces are inverse-square central forces (W 4.4.27–4.4.35).",
))


# ------------------------------------------------------- two masses and springs (W 4.4.2)
def _build_two_masses(cfg):
    plant = _plant(sp.TwoMassSprings, cfg)
    con = sp.two_mass_springs_constraint(plant)
    k1, k2, m2 = plant.k1, plant.k2, plant.m2
    rest = plant.l10 + plant.d  # x2 where both springs are relaxed
    share = k2 / (k1 + k2)  # x1 = share (x2 − rest): the massless node's force balance (W 4.4.12)
    x2_0, v2_0 = cfg["initial"]["x2"], cfg["initial"]["x2_dot"]
    omega = math.sqrt(k1 * k2 / ((k1 + k2) * m2))  # k1, k2 in series (W 4.4.15)

    def reference(t):
        x2 = rest + (x2_0 - rest) * np.cos(omega * t) + v2_0 / omega * np.sin(omega * t)
        return np.stack([share * (x2 - rest), x2], axis=-1)

    q0 = np.array([share * (x2_0 - rest), x2_0])
    qd0 = np.array([share * v2_0, v2_0])
    # φ = (k1 + k2) x1 − k2 x2 + k2 (l10 + d): the massless node's force balance, a force (= −Q1)
    residual = residual_info("φ", "φ = (k₁ + k₂)x₁ − k₂x₂ + k₂(l₁₀ + d), the net spring force on m₁", [("N", 2)])
    return Problem(plant, con, q0, qd0, _t_span(cfg), reference=reference, residual=residual)


register_kind(ScenarioKind(
    "two-masses-springs",
    {"plant": plant_defaults(sp.TwoMassSprings),
     "initial": {"x2": 1.7, "x2_dot": 0.0},
     "simulation": _sim(rtol=1e-10)},
    _build_two_masses,
    "Wall–k1–m1–k2–m2 with m1 = 0: singular M, the massless node's force balance as a constraint; "
    "m2 moves on k1, k2 in series (W 4.4.10–4.4.15). x1(0), ẋ1(0) follow from the constraint.",
    uncertain=("m2",),
))


# ------------------------------------------------------------ frictional speed reducer (S)
def _build_speed_reducer(cfg):
    plant = _plant(sp.SpeedReducer, cfg)
    r = cfg["constraint"]["r"]
    con = sp.speed_reducer_constraint(plant, r=r)
    x0, xd0, phid0 = cfg["initial"]["x"], cfg["initial"]["x_dot"], cfg["initial"]["phi_dot"]
    a, b = plant.a, plant.b
    omega = math.sqrt(plant.k / plant.m)

    def extra(res):
        # S (2.2), d'Alembert (ideal) reactions: the translation is autonomous, and
        # ½ (a + b x²/r²) φ̇² is conserved, so φ̇ follows x in closed form.
        t = res.t
        x = x0 * np.cos(omega * t) + (xd0 / omega * np.sin(omega * t) if omega > 0 else xd0 * t)
        inertia = a + b * x**2 / r**2
        phid = phid0 * np.sqrt((a + b * x0**2 / r**2) / inertia)
        energy = 0.5 * (a + b * res.q[:, 2] ** 2 / r**2) * res.qd[:, 0] ** 2
        return {"max_x_error_vs_closed_form": float(np.max(np.abs(res.q[:, 2] - x))),
                "max_phi_dot_error_vs_closed_form": float(np.max(np.abs(res.qd[:, 0] - phid))),
                "rotational_energy_drift": float(np.max(np.abs(energy - energy[0])))}

    # ψ = x φ̇ − r ψ̇: a length times an angular rate, a velocity (rad is a pure number)
    residual = residual_info("ψ", "rolling contact ψ = x φ̇ − r ψ̇", [("m/s", 1)])
    return Problem(plant, con, np.array([0.0, 0.0, x0]), np.array([phid0, x0 * phid0 / r, xd0]), _t_span(cfg),
                   extra_metrics=extra, residual=residual,
                   units={"max_x_error_vs_closed_form": "m", "max_phi_dot_error_vs_closed_form": "rad/s",
                          "rotational_energy_drift": "J"})


register_kind(ScenarioKind(
    "speed-reducer",
    {"plant": plant_defaults(sp.SpeedReducer),
     "constraint": {"r": 0.5},
     "initial": {"x": 0.8, "x_dot": -0.3, "phi_dot": 1.7},
     "simulation": _sim(rtol=1e-10)},
    _build_speed_reducer,
    "Frictional speed reducer with the rolling constraint x φ̇ − r ψ̇ = 0 and ideal (d'Alembert) reactions "
    "(S 2.1–2.2): x oscillates on its own, ½(a + b x²/r²) φ̇² is conserved. ψ̇(0) follows from the constraint.",
))


# ------------------------------------------------ Appell's particle (W 3.3.1, velocity-nonlinear)
def _build_appell(cfg):
    import sympy

    x, y, z, xd, yd, zd, m, g = sympy.symbols("x y z x_dot y_dot z_dot m g")
    plant = LagrangianPlant.from_energies(
        [x, y, z], m * (xd**2 + yd**2 + zd**2) / 2, m * g * z, qd=[xd, yd, zd],
        params={m: cfg["plant"]["m"], g: cfg["plant"]["g"]}, kinds=("length",) * 3)
    alpha = cfg["constraint"]["alpha"]
    if alpha < 0:
        raise ScenarioError(f"`constraint.alpha` must be >= 0 (0: no stabilization); got {alpha!r}.")
    con = Nonholonomic(zd**2 - xd**2 - yd**2, [x, y, z], [xd, yd, zd],
                       stabilization=Stabilization.first_order(alpha) if alpha > 0 else None)
    ini = cfg["initial"]
    q0 = np.array(ini["q"], dtype=float)
    vx, vy = ini["x_dot"], ini["y_dot"]
    vz = math.hypot(vx, vy) * (1.0 if ini["rising"] else -1.0)  # ż² = ẋ² + ẏ² at t = 0
    gval, t_end = cfg["plant"]["g"], cfg["simulation"]["t_end"]
    if vz == 0.0 or (vz > 0 and t_end >= 2 * vz / gval):
        raise ScenarioError(
            "Appell's particle reaches ż = 0, where the constraint row A = 2(−ẋ, −ẏ, ż) vanishes and the "
            f"motion is not defined, at t = 2ż(0)/g = {2 * vz / gval if vz else 0.0:.4g} s: start with "
            "`initial.rising = false` (falling), nonzero `initial.x_dot`/`initial.y_dot`, or a shorter "
            "`simulation.t_end`.")

    def reference(t):
        # W (3.3.7) with Q = (0, 0, −m g): z̈ = −g/2 and ẍ/ẋ = ÿ/ẏ = z̈/ż, so ẋ, ẏ ∝ ż.
        zt = q0[2] + vz * t - gval * t**2 / 4
        return np.stack([q0[0] + vx / vz * (zt - q0[2]), q0[1] + vy / vz * (zt - q0[2]), zt], axis=-1)

    residual = residual_info("ψ", "Appell's ψ = ż² − ẋ² − ẏ²", [("m²/s²", 1)])  # a squared speed, velocity-level
    return Problem(plant, con, q0, np.array([vx, vy, vz]), _t_span(cfg), reference=reference, residual=residual)


register_kind(ScenarioKind(
    "appell-particle",
    {"plant": {"m": 1.0, "g": 9.81},
     "constraint": {"alpha": 0.0},
     "initial": {"q": [0.0, 0.0, 0.0], "x_dot": 0.6, "y_dot": 0.8, "rising": False},
     "simulation": _sim(t_end=2.0, rtol=1e-10)},
    _build_appell,
    "Particle under gravity with Appell's constraint ż² = ẋ² + ẏ², nonlinear in the velocities "
    "(W 3.3.1, eqs. 3.3.3–3.3.7); the plant comes from its Lagrangian, the constraint is differentiated "
    "symbolically. ż(0) = ∓√(ẋ² + ẏ²).",
))
