"""Which MuJoCo input reproduces robustrack's saturated loop: τ clamped before ``qfrc_applied``, or motor actuators
with ``ctrlrange`` at the effort limits (docs/guide/robot.md, "Effort limits").

ur5-payload at 1 kHz for 1 s, its shoulder-lift limit lowered from 150 to LIMIT N·m so that the motor saturates on
part of the run (the nominal motion asks up to ~46 N·m there); robustrack's own run of the same problem (its
sampled loop: B sat(τᶜ(t) + τᵘ) with u held) against the two MuJoCo loops, which hold the whole τ (clamped by
robustrack before ``qfrc_applied``, or written to ``ctrl`` of a motor actuator per joint, gear 1, whose
``ctrlrange`` MuJoCo clamps). Run: ``python benchmarks/bench_mujoco_saturation.py``.
"""

from __future__ import annotations

import numpy as np

LIMIT = 45.0


def _motor_model(plant, limits):
    """MuJoCo's model of the plant (robustrack.loop.mujoco.mujoco_model) with a motor actuator per joint, gear 1,
    ctrlrange ± its limit."""
    import mujoco

    from robustrack.loop.mujoco import mujoco_model

    _, text = mujoco_model(plant)
    spec = mujoco.MjSpec.from_string(text)
    for name, lim in zip(plant.coordinates, limits):
        act = spec.add_actuator()
        act.name, act.target, act.trntype = f"motor_{name}", name, mujoco.mjtTrn.mjTRN_JOINT
        act.ctrllimited = mujoco.mjtLimited.mjLIMITED_TRUE
        act.ctrlrange = [-lim, lim]
    return spec.compile()


def motor_loop(pb, substeps=10):
    """The loop of robustrack.loop.mujoco.run_mujoco (no sensor), τ written to the motors' ctrl (unclipped)."""
    import mujoco

    model = _motor_model(pb.actual, pb.actuators.tau_max)
    h = pb.sample_period
    model.opt.timestep, model.opt.integrator = h / substeps, mujoco.mjtIntegrator.mjINT_RK4
    data = mujoco.MjData(model)
    ctrl = pb.controller(period=h)
    n, (t0, t1) = pb.n, pb.t_span
    data.qpos[:], data.qvel[:] = pb.q0, pb.qd0
    mujoco.mj_forward(model, data)
    E = []
    for k in range(int(round((t1 - t0) / h)) + 1):
        t = t0 + k * h
        E.append(np.abs(data.qpos - ctrl.run.solution(t)[:n]).max())
        ctrl(t, data.qpos.copy(), data.qvel.copy())
        data.ctrl[:] = ctrl.demand
        for _ in range(substeps):
            mujoco.mj_step(model, data)
    return float(max(E)), np.array(data.actuator_force)


def main(period=1e-3):
    from robustrack.loop.mujoco import run_mujoco
    from robustrack.scenarios import load_scenario

    eye = "[" + ",".join("[" + ",".join("1" if i == j else "0" for j in range(6)) + "]" for i in range(6)) + "]"
    pb = load_scenario("ur5-payload", [f"compensator.sample_period={period}", "simulation.t_end=1.0",
                                       "simulation.uncompensated=false", f"actuators.B={eye}",
                                       f"actuators.tau_max=[150,{LIMIT},150,28,28,28]"]).build()
    r = pb.simulate()
    clamp = run_mujoco(pb)
    motor_e, _ = motor_loop(pb)
    print(f"{1 / period:g} Hz: shoulder_lift limit {LIMIT} N·m; robustrack saturated {100 * r.metrics.saturation_fraction:.3g} % of "
          "the time")
    print(f"max‖e‖∞ robustrack {r.metrics.max_abs_e:.6e} rad")
    print(f"max‖e‖∞ MuJoCo, τ clamped before qfrc_applied {clamp.max_abs_e():.6e} rad "
          f"(difference {abs(clamp.max_abs_e() - r.metrics.max_abs_e):.3e})")
    print(f"max‖e‖∞ MuJoCo, motor actuators with ctrlrange   {motor_e:.6e} rad "
          f"(difference {abs(motor_e - r.metrics.max_abs_e):.3e}; from the clamped loop {abs(motor_e - clamp.max_abs_e()):.3e})")


if __name__ == "__main__":
    for h in (1e-3, 2.5e-4):  # the hold's difference (u held vs the whole τ held) shrinks with the period
        main(h)
