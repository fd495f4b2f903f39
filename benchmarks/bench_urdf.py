"""A UR5 from its URDF: robustrack's tracking loop against a plain scipy loop calling Pinocchio directly.

The same problem both ways: the UR5 of example-robot-data with a 2 kg payload (nominal) and 2.4 kg (actual),
the joint reference of ``examples/ur5_payload.py`` (stabilized, ω = 10 rad/s), GSS (K = 10, Γ′ = 3, β0 = 10,
α0 = 0.5) over 10 s. robustrack: ``TrackingProblem.simulate()`` — a :class:`~robustrack.plants.URDFPlant` has
no symbolic form, so the loop takes the numpy reference (nominal DOP853 with dense output, controlled BDF with the
Jacobian from the plants' exact derivatives — Pinocchio's RNEA derivatives, ``tracking.rhs.controlled_jacobian`` —
the uncompensated copy with DOP853). Direct: the same three solves written
as one would by hand — ``pinocchio.crba`` / ``nonLinearEffects`` per call, Qᶜ = M b − Q (A = I), u from the same
GSS object, ``scipy.integrate.solve_ivp`` (DOP853, BDF with scipy's own finite-difference Jacobian, DOP853).

Run ``python benchmarks/bench_urdf.py [T_END] [REPEAT]``; both are run once to warm up (imports, loading the
compiled kernels), then REPEAT times each, alternating (default 3); prints the medians, their ratio, and the
largest difference of the controlled trajectories (the two integrators stop at different steps: agreement to
the tolerances).

Measured (2 shared cores, 10 s): robustrack 23.9 s / direct 4.1 s (ratio 5.9) with the forward-difference
Jacobian and the batch machinery of URDFPlant on every call; 14.8 s / 4.3 s (ratio 3.4) after issue 20's speed-up
(exact Jacobian from RNEA derivatives, one state straight to Pinocchio), the loop on numpy. Issue 28: the loop
is compiled (robustrack's rigid-body kernels over the robot as data): see docs/results/performance.md.
"""

import sys
import time
import warnings

import numpy as np
import pinocchio as pin
import sympy as sp
from scipy.integrate import solve_ivp

from robustrack.constraints import Stabilization
from robustrack.controllers import GSS
from robustrack.plants import URDFPlant, example_robot_urdf
from robustrack.requirements import JointTrajectory
from robustrack.tracking import TrackingProblem

T_END = float(sys.argv[1]) if len(sys.argv) > 1 else 10.0
REPEAT = int(sys.argv[2]) if len(sys.argv) > 2 else 3
HOME = np.array([0.0, -1.2, 1.4, -1.5, -1.57, 0.0])
AMP = np.array([0.4, 0.3, 0.3, 0.4, 0.3, 0.5])
FREQ = np.array([0.5, 0.7, 0.9, 0.6, 0.8, 1.0])
XI, OMEGA = 1.0, 10.0
RTOL, ATOL = 1e-8, 1e-12


def robustrack_run(gss):
    nominal = URDFPlant(example_robot_urdf("ur5"), payload_mass=2.0, payload_com=[0, 0, 0.05])
    t = sp.Symbol("t")
    req = JointTrajectory([h + a * (1 - sp.cos(w * t)) for h, a, w in zip(HOME, AMP, FREQ)],
                          names=nominal.coordinates, stabilization=Stabilization.second_order(XI, OMEGA))
    problem = TrackingProblem(nominal, req, gss, HOME, np.zeros(6), (0.0, T_END),
                              actual=nominal.replace(payload_mass=2.4), n_points=1001)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return problem.simulate()


def direct_run(gss):
    path = example_robot_urdf("ur5")

    def model_with(mass):
        model = pin.buildModelFromUrdf(path)
        f = model.frames[model.getFrameId("tool0")]
        model.inertias[f.parentJoint] += pin.Inertia(mass, f.placement.act(np.array([0, 0, 0.05])), np.zeros((3, 3)))
        return model, model.createData()

    (mn, dn), (ma, da) = model_with(2.0), model_with(2.4)

    def MQ(model, data, q, v):
        M = pin.crba(model, data, q)
        M = np.triu(M) + np.triu(M, 1).T
        return M, -pin.nonLinearEffects(model, data, q, v)

    def reference(t):
        return (HOME + AMP * (1 - np.cos(FREQ * t)), AMP * FREQ * np.sin(FREQ * t), AMP * FREQ**2 * np.cos(FREQ * t))

    def qc_force(t, q, v):
        qd_, vd, ad = reference(t)
        b = ad - 2 * XI * OMEGA * (v - vd) - OMEGA**2 * (q - qd_)  # A = I: φ̈ + 2ξω φ̇ + ω² φ = 0
        M, Q = MQ(mn, dn, q, v)
        return M @ b - Q  # Qᶜ = Aᵀ(AM⁻¹Aᵀ)⁺(b − A M⁻¹Q) = M b − Q for A = I

    def nominal_rhs(t, x):
        q, v = x[:6], x[6:]
        M, Q = MQ(mn, dn, q, v)
        return np.concatenate([v, np.linalg.solve(M, Q + qc_force(t, q, v))])

    nom = solve_ivp(nominal_rhs, (0, T_END), np.concatenate([HOME, np.zeros(6)]), method="DOP853", rtol=RTOL,
                    atol=ATOL, dense_output=True)

    def controlled_rhs(t, x):
        y = nom.sol(t)
        q, v, qc, vc = y[:6], y[6:], x[:6], x[6:]
        Qc = qc_force(t, q, v)
        u = gss(t, qc - q, vc - v, np.zeros(0))
        Mn, _ = MQ(mn, dn, qc, vc)
        Ma, Qa = MQ(ma, da, qc, vc)
        return np.concatenate([vc, np.linalg.solve(Ma, Qa + Qc + Mn @ u)])

    ctl = solve_ivp(controlled_rhs, (0, T_END), np.concatenate([HOME, np.zeros(6)]), method="BDF", rtol=RTOL,
                    atol=ATOL, t_eval=np.linspace(0, T_END, 1001))

    def uncompensated_rhs(t, x):
        y = nom.sol(t)
        Ma, Qa = MQ(ma, da, x[:6], x[6:])
        return np.concatenate([x[6:], np.linalg.solve(Ma, Qa + qc_force(t, y[:6], y[6:]))])

    solve_ivp(uncompensated_rhs, (0, T_END), np.concatenate([HOME, np.zeros(6)]), method="DOP853", rtol=RTOL,
              atol=ATOL, t_eval=np.linspace(0, T_END, 1001))
    return ctl


def main():
    gss = GSS(K=10.0, gamma_prime=3.0, beta0=10.0, alpha0=0.5, sigma=1.0)
    res, ctl = robustrack_run(gss), direct_run(gss)  # warm-up: imports, kernels loaded from the cache
    t_rt, t_direct = [], []
    for _ in range(REPEAT):
        start = time.perf_counter()
        res = robustrack_run(gss)
        t_rt.append(time.perf_counter() - start)
        start = time.perf_counter()
        ctl = direct_run(gss)
        t_direct.append(time.perf_counter() - start)
    rt, direct = float(np.median(t_rt)), float(np.median(t_direct))
    diff = np.abs(res.qc - ctl.y[:6].T).max()
    backends = {k: (v or {}).get("backend") for k, v in res.info["solvers"].items()}
    print(f"UR5, {T_END:g} s, payload 2 → 2.4 kg, GSS, medians of {REPEAT}: robustrack {rt:.2f} s ({backends}; "
          f"uncompensated copy {res.info['solvers']['uncompensated']['wall_s']:.2f} s of it), direct scipy + "
          f"Pinocchio {direct:.2f} s, ratio robustrack/direct = {rt / direct:.2f}; max |q_c difference| = {diff:.2e} "
          f"rad; max‖e‖∞ = {res.metrics.max_abs_e:.3g} rad, bounds held: {res.metrics.bounds_held}")


if __name__ == "__main__":
    main()
