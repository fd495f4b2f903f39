"""A short constrained robot simulation and one constrained state from Python: robustrack against Pinocchio by hand.

The UR5 of example-robot-data (2 kg payload) with its ``tool0`` origin held at its start point
(``FrameConstraint.point``, 3 rows, no stabilization), from a consistent state with a random velocity:

- the 2-s simulation: robustrack's ``simulate_constrained`` (compiled DOP853; the post-processing at the 1001
  output times — q̈, Qᶜ, ‖A q̈ − b‖, the residuals φ, the contact force in the tool frame — runs at the first access of
  one of them, so it is timed apart: the run, and the run with Qᶜ read) against a hand-written
  ``scipy.integrate.solve_ivp`` DOP853 loop on ``pinocchio.constraintDynamics`` (CONTACT_3D at tool0, its proximal
  solver at 1e-12), the same tolerances (rtol 1e-8, atol 1e-12) and output times, which returns the states only.
  Also robustrack with the compiled evaluator's door closed (``robustrack._evaluator``): the post-processing then
  evaluates the frame constraint and the robot through Pinocchio state by state, as before issue 43;
- one state: ``robustrack.plants.constrained_motion`` from Python (the compiled entry,
  ``robustrack.compiled.evaluate.motion``; and with ``compiled=False``, the numpy path: Pinocchio and
  ``mechanics.solve_constrained``) against one ``pinocchio.constraintDynamics`` call from Python;
- one state in a fresh process that simulates nothing first (issue 55 item 1): a script that builds the arm and the
  constraint and calls ``constrained_motion`` in a loop — its first call loads the compiled forms from the kernel
  cache (or compiles them once, said), timed apart; then the calls from the second on against
  ``pinocchio.constraintDynamics`` in that same process (goal ≤ 10×).

CPU time (``time.process_time``), medians of REPEAT repetitions, the candidates alternating within one run (on a
shared machine the ratios are what carries over). Run ``python benchmarks/bench_constrained_robot.py [REPEAT]``
(default 7) from the repository root with this checkout first on ``PYTHONPATH``; it says which robustrack it
imported. Results: docs/results/performance.md, "Short constrained robot runs (issue 43 item 4)".
"""

import json
import subprocess
import sys
import time
import types
import warnings

import numpy as np
import pinocchio as pin
from scipy.integrate import solve_ivp

import robustrack
from robustrack import _evaluator
from robustrack.plants import FrameConstraint, URDFPlant, constrained_motion, example_robot_urdf
from robustrack.requirements import consistent_initial_state
from robustrack.tracking import simulate_constrained
from robustrack.tracking.backend import constrained_loop

REPEAT = int(sys.argv[1]) if len(sys.argv) > 1 else 7
CALLS = 2000
T_END, N_POINTS, RTOL, ATOL = 2.0, 1001, 1e-8, 1e-12
HOME = np.array([0.0, -1.2, 1.4, -1.5, -1.57, 0.0])


def cpu(fn):
    start = time.process_time()
    fn()
    return time.process_time() - start


def setup():
    """The UR5 with its payload, tool0 held at its start point, a consistent state with a random velocity."""
    arm = URDFPlant(example_robot_urdf("ur5"), payload_mass=2.0, payload_com=[0.0, 0.0, 0.05])
    held = FrameConstraint.point(arm, "tool0", arm.frame_pose(HOME, "tool0")[1])
    q0, v0 = consistent_initial_state(held, HOME, np.random.default_rng(0).normal(size=6))
    return arm, held, q0, v0


def pinocchio_call(arm):
    """``(model, data, models, datas, prox)``: Pinocchio's constrained dynamics of tool0 held (CONTACT_3D)."""
    model = arm._scratch["model"]  # the plant's Pinocchio model (its payload included)
    data = model.createData()
    f = model.frames[model.getFrameId("tool0")]
    cm = pin.RigidConstraintModel(pin.ContactType.CONTACT_3D, model, f.parentJoint, f.placement, pin.ReferenceFrame.LOCAL)
    models, datas = pin.StdVec_RigidConstraintModel(), pin.StdVec_RigidConstraintData()
    models.append(cm)
    datas.append(cm.createData())
    pin.initConstraintDynamics(model, data, models, datas)
    return model, data, models, datas, pin.ProximalSettings(1e-12, 1e-12, 10)


def per_call(fn):
    """CPU µs of one call of ``fn``: the median of REPEAT rounds of CALLS calls."""
    times = []
    for _ in range(REPEAT):
        start = time.process_time()
        for _ in range(CALLS):
            fn()
        times.append((time.process_time() - start) / CALLS * 1e6)
    return float(np.median(times))


def fresh_process():
    """In this process (started fresh by :func:`main`, nothing simulated): the first ``constrained_motion`` call
    (CPU and wall seconds: it loads the compiled forms), then the calls from the second on and Pinocchio's, as JSON."""
    warnings.simplefilter("ignore")  # a compile notice, if this machine's cache lacks the forms (its time is reported)
    arm, held, q, v = setup()
    model, data, models, datas, prox = pinocchio_call(arm)
    tau = -np.asarray(model.damping) * v
    cpu0, wall0 = time.process_time(), time.perf_counter()
    first = constrained_motion(arm, held, q, v, 0.0)
    cpu1, wall1 = time.process_time(), time.perf_counter()
    ddq = pin.constraintDynamics(model, data, q, v, tau, models, datas, prox)
    p = per_call(lambda: pin.constraintDynamics(model, data, q, v, tau, models, datas, prox))
    e = per_call(lambda: constrained_motion(arm, held, q, v, 0.0))
    from robustrack.compiled import evaluate  # (imported by the first call where it went compiled)

    print(json.dumps({"first_cpu": cpu1 - cpu0, "first_wall": wall1 - wall0, "pinocchio": p, "ours": e,
                      "diff": float(np.abs(first.qdd - ddq).max()), "compiled": bool(evaluate._ENTRIES)}))


def main():
    arm, held, q0, v0 = setup()
    model, data, models, datas, prox = pinocchio_call(arm)
    damping = np.asarray(model.damping)
    t_eval = np.linspace(0.0, T_END, N_POINTS)

    def rhs(t, y):
        q, v = y[:6], y[6:]
        return np.concatenate([v, pin.constraintDynamics(model, data, q, v, -damping * v, models, datas, prox)])

    def by_hand():
        return solve_ivp(rhs, (0.0, T_END), np.concatenate([q0, v0]), method="DOP853", rtol=RTOL, atol=ATOL,
                         t_eval=t_eval)

    def ours():  # the run: states and statistics (what follows from them is derived at its first access)
        return simulate_constrained(arm, held, q0, v0, (0.0, T_END), n_points=N_POINTS, rtol=RTOL, atol=ATOL)

    def derived():  # the run, then Qᶜ read: q̈, Qᶜ, the residuals and the contact force at the output times
        run = ours()
        run.Qc
        return run

    def closed():  # the door answers None (a compiled loop opening it again finds it taken), no batch kept
        door = _evaluator._EVALUATOR[0]
        _evaluator._EVALUATOR[0] = types.SimpleNamespace(evaluate=lambda *args: None, motion=lambda *args: None,
                                                        motion_compiled=lambda: False)
        held._last = None
        try:
            return derived()
        finally:
            _evaluator._EVALUATOR[0] = door

    loop = constrained_loop(arm, held)

    def integrate():  # the compiled DOP853 alone, to the output times (what simulate_constrained runs first)
        return loop.constrained(np.concatenate([q0, v0]), 0.0, T_END, t_eval, "DOP853", RTOL, ATOL)

    warnings.simplefilter("ignore")  # the motion leaves the UR5's joint limits (said once per run): not measured
    hand, run = by_hand(), ours()  # warm: imports, the compiled kernels loaded
    integrate()
    closed()
    agree = float(np.abs(hand.y[:6].T - run.q).max())
    t_hand, t_ours, t_derived, t_closed, t_int = [], [], [], [], []
    for _ in range(REPEAT):
        t_hand.append(cpu(by_hand))
        t_ours.append(cpu(ours))
        t_derived.append(cpu(derived))
        t_closed.append(cpu(closed))
        t_int.append(cpu(integrate))
    h, o, d, c, i = (float(np.median(x)) * 1e3 for x in (t_hand, t_ours, t_derived, t_closed, t_int))
    print(f"robustrack from {robustrack.__file__}")
    print(f"UR5, tool0 held at a point, {T_END:g} s, {N_POINTS} output times; nfev hand {hand.nfev}, robustrack "
          f"{run.solver.nfev}; max |q difference| {agree:.1e} rad; CPU medians of {REPEAT}:")
    print(f"  hand-written scipy DOP853 + pinocchio.constraintDynamics   {h:8.2f} ms   1.00")
    print(f"  robustrack simulate_constrained                             {o:8.2f} ms   {o / h:.2f}×"
          f"   (the compiled DOP853 alone {i:.2f} ms)")
    print(f"  robustrack simulate_constrained, then Qᶜ read (all derived) {d:8.2f} ms   {d / h:.2f}×")
    print(f"  the same, the evaluator's door closed (Pinocchio per state) {c:8.2f} ms   {c / h:.2f}×")

    q, v = q0, v0
    tau = -damping * v
    fast = constrained_motion(arm, held, q, v, 0.0)
    slow = constrained_motion(arm, held, q, v, 0.0, compiled=False)
    ddq = pin.constraintDynamics(model, data, q, v, tau, models, datas, prox)
    diff = max(float(np.abs(fast.qdd - ddq).max()), float(np.abs(slow.qdd - ddq).max()))

    p = per_call(lambda: pin.constraintDynamics(model, data, q, v, tau, models, datas, prox))
    e = per_call(lambda: constrained_motion(arm, held, q, v, 0.0))
    n = per_call(lambda: constrained_motion(arm, held, q, v, 0.0, compiled=False))
    print(f"one state (|q̈ − Pinocchio's| ≤ {diff:.1e} rad/s²), CPU medians of {REPEAT} × {CALLS} calls:")
    print(f"  pinocchio.constraintDynamics from Python                   {p:8.2f} µs   1.00")
    print(f"  robustrack constrained_motion (the compiled entry)          {e:8.2f} µs   {e / p:.2f}×")
    print(f"  robustrack constrained_motion(compiled=False), the numpy path {n:6.2f} µs   {n / p:.2f}×")

    runs = [json.loads(subprocess.run([sys.executable, __file__, str(REPEAT), "--fresh"], capture_output=True,
                                      text=True, check=True).stdout.strip().splitlines()[-1]) for _ in range(3)]
    ratios = [r["ours"] / r["pinocchio"] for r in runs]
    print(f"one state in a fresh process that simulates nothing first (3 processes, each CPU medians of {REPEAT} × "
          f"{CALLS} calls from the second call on; |q̈ − Pinocchio's| ≤ {max(r['diff'] for r in runs):.1e}):")
    for r, ratio in zip(runs, ratios):
        print(f"  first call {r['first_cpu']:6.2f} s CPU ({r['first_wall']:.2f} s wall; compiled entry: "
              f"{'yes' if r['compiled'] else 'NO'}); then pinocchio {r['pinocchio']:6.2f} µs, robustrack "
              f"{r['ours']:6.2f} µs   {ratio:.2f}×")
    print(f"  median ratio against pinocchio.constraintDynamics in the same process: {np.median(ratios):.2f}× "
          "(goal ≤ 10×)")


if __name__ == "__main__":
    if "--fresh" in sys.argv:
        fresh_process()
    else:
        main()
