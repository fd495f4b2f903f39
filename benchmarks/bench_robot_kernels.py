"""One constrained acceleration of the UR5 with its tool point held: robustrack's kernels against Pinocchio.

The same computation both ways — the UR5 of example-robot-data (2 kg payload), its ``tool0`` origin held at a
point (3 rows: the frame's Jacobian and J̇q̇), q̈ and the constraint force at a random state:

- Pinocchio: ``pinocchio.constraintDynamics`` (a ``RigidConstraintModel`` CONTACT_3D at tool0, LOCAL, its
  proximal solver at accuracy 1e-12), one call from Python — Pinocchio's binding included (a C++ caller would
  not pay it: about 1 µs of it is Python's);
- robustrack, per call from Python: the compiled nominal system's right-hand side (M by CRBA, Q by RNEA, A, b
  of the frame constraint, the fundamental equation; :func:`robustrack.compiled.systems.system_rhs`) through
  numba's dispatch from Python;
- robustrack, per evaluation inside the compiled integrator: the same system called from compiled code (a
  numba loop over the first-class function the integrators take: what every DOP853 stage costs), and, as
  the integrator itself sees it, a 2-s constrained simulation's solver wall time divided by its evaluations.

Also the kernels apart (in compiled loops): CRBA, RNEA (Q), the frame rows, against ``pinocchio.crba`` and
``nonLinearEffects`` from Python. Medians of 7 repetitions, all in one run; ratios against Pinocchio's call.

Also the numpy path's batches: M and Q of a :class:`~robustrack.plants.URDFPlant` over 5000 states at once against
Pinocchio's ``crba`` and ``nonLinearEffects`` state by state from Python (with the numbers compared).

Run ``python benchmarks/bench_robot_kernels.py``.
"""

import time
import warnings

import numba
import numpy as np
import pinocchio as pin

from robustrack.compiled import rigid_body as rb
from robustrack.compiled import systems as kernels
from robustrack.compiled.loop import compiled_loop, no_dense
from robustrack.plants import FrameConstraint, URDFPlant, example_robot_urdf
from robustrack.requirements import consistent_initial_state
from robustrack.tracking import simulate_constrained

REPEAT, CALLS, BATCH = 7, 2000, 5000


def median_us(fn, calls=CALLS):
    """Median over REPEAT repetitions of the time per call (µs) of ``fn()`` doing ``calls`` calls."""
    times = []
    for _ in range(REPEAT):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) / calls * 1e6)
    return float(np.median(times))


@numba.njit
def _loop_system(f, t, y, nom, md, dy, calls):
    for _ in range(calls):
        f(t, y, nom, md, dy)


@numba.njit
def _loop_crba(md, q, M, calls):
    for _ in range(calls):
        rb.crba(md, q, M)


@numba.njit
def _loop_force(md, q, v, Q, calls):
    for _ in range(calls):
        rb.given_force(md, q, v, Q)


@numba.njit
def _loop_rows(q, v, c, x, out, res, calls):
    for _ in range(calls):
        rb.frame_rows(q, v, c, x, out, res)


def main():
    arm = URDFPlant(example_robot_urdf("ur5"), payload_mass=2.0, payload_com=[0.0, 0.0, 0.05])
    home = np.array([0.0, -1.2, 1.4, -1.5, -1.57, 0.0])
    held = FrameConstraint.point(arm, "tool0", arm.frame_pose(home, "tool0")[1])
    q, v = consistent_initial_state(held, home, np.random.default_rng(0).normal(size=6))
    n = arm.n

    model = arm._scratch["model"]
    data = model.createData()
    f = model.frames[model.getFrameId("tool0")]
    cm = pin.RigidConstraintModel(pin.ContactType.CONTACT_3D, model, f.parentJoint, f.placement, pin.ReferenceFrame.LOCAL)
    models, datas = pin.StdVec_RigidConstraintModel(), pin.StdVec_RigidConstraintData()
    models.append(cm)
    datas.append(cm.createData())
    pin.initConstraintDynamics(model, data, models, datas)
    prox = pin.ProximalSettings(1e-12, 1e-12, 10)
    tau = -model.damping * v

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        loop = compiled_loop(arm, arm, held, jacobian=False)
    y, dy, nom = np.concatenate([q, v]), np.empty(2 * n), no_dense(2 * n)
    kernels.system_rhs(loop.nominal, 0.0, y, nom, loop.model)
    ddq = pin.constraintDynamics(model, data, q, v, tau, models, datas, prox)
    agree = np.abs(kernels.system_rhs(loop.nominal, 0.0, y, nom, loop.model)[n:] - ddq).max()

    def pinocchio_calls():
        for _ in range(CALLS):
            pin.constraintDynamics(model, data, q, v, tau, models, datas, prox)

    def python_calls():
        for _ in range(CALLS):
            kernels.system_rhs(loop.nominal, 0.0, y, nom, loop.model)

    _loop_system(loop.nominal, 0.0, y, nom, loop.model, dy, 1)
    form = held.codegen()
    c, out, res = np.array(form.values), np.empty(3 * n + 3), np.empty(6)
    M, Q = np.empty((n, n)), np.empty(n)
    _loop_crba(arm.packed, q, M, 1)
    _loop_force(arm.packed, q, v, Q, 1)
    _loop_rows(q, v, c, np.zeros(0), out, res, 1)

    t_pin = median_us(pinocchio_calls)
    t_py = median_us(python_calls)
    t_in = median_us(lambda: _loop_system(loop.nominal, 0.0, y, nom, loop.model, dy, CALLS))
    t_crba = median_us(lambda: _loop_crba(arm.packed, q, M, CALLS))
    t_force = median_us(lambda: _loop_force(arm.packed, q, v, Q, CALLS))
    t_rows = median_us(lambda: _loop_rows(q, v, c, np.zeros(0), out, res, CALLS))
    t_pcrba = median_us(lambda: [pin.crba(model, data, q) for _ in range(CALLS)])
    t_pnle = median_us(lambda: [pin.nonLinearEffects(model, data, q, v) for _ in range(CALLS)])
    sims = []
    for _ in range(3):
        r = simulate_constrained(arm, held, q, v, (0.0, 2.0), n_points=21)
        sims.append(r.solver.wall_s / r.solver.nfev * 1e6)
    t_sim = float(np.median(sims))

    print(f"UR5, tool0 held at a point (3 rows), |q̈ difference| = {agree:.1e} rad/s²; medians of {REPEAT} × {CALLS} calls:")
    print(f"  pinocchio.constraintDynamics from Python            {t_pin:8.2f} µs   1.00")
    print(f"  robustrack, per call from Python (system_rhs)       {t_py:8.2f} µs   {t_py / t_pin:.2f}×")
    print(f"  robustrack, per evaluation in compiled code         {t_in:8.2f} µs   {t_in / t_pin:.2f}×")
    print(f"  robustrack, compiled DOP853 wall / nfev (2-s run)   {t_sim:8.2f} µs   {t_sim / t_pin:.2f}×")
    print(f"  kernels apart: CRBA {t_crba:.2f} µs (pinocchio.crba from Python {t_pcrba:.2f} µs), Q by RNEA "
          f"{t_force:.2f} µs (nonLinearEffects {t_pnle:.2f} µs), frame rows {t_rows:.2f} µs")

    # batches: what the numpy path asks of a URDFPlant (M and Q over many states at once, the robot's C functions
    # row by row through compiled.evaluate.evaluate_rows) against Pinocchio called state by state from Python
    rng = np.random.default_rng(1)
    qs, vs = rng.uniform(-np.pi, np.pi, (BATCH, n)), rng.normal(size=(BATCH, n))
    Mb, Qb = arm.mass_matrix(qs, 0.0), arm.given_force(qs, vs, 0.0)
    Mp = np.array([pin.crba(model, data, qs[i]) for i in range(BATCH)])
    Mp = np.triu(Mp) + np.swapaxes(np.triu(Mp, 1), -1, -2)  # crba fills the upper triangle
    Qp = np.array([-pin.nonLinearEffects(model, data, qs[i], vs[i]) - model.damping * vs[i] for i in range(BATCH)])
    batch_rel = max(np.abs(Mb - Mp).max() / np.abs(Mp).max(), np.abs(Qb - Qp).max() / np.abs(Qp).max())
    t_batch = median_us(lambda: (arm.mass_matrix(qs, 0.0), arm.given_force(qs, vs, 0.0)), BATCH)
    t_pbatch = median_us(lambda: [(pin.crba(model, data, qs[i]), pin.nonLinearEffects(model, data, qs[i], vs[i]))
                                  for i in range(BATCH)], BATCH)
    print(f"  batches of {BATCH} states, M and Q (largest relative difference {batch_rel:.1e}): URDFPlant "
          f"{t_batch:.2f} µs a state, Pinocchio state by state from Python {t_pbatch:.2f} µs "
          f"({t_batch / t_pbatch:.2f}×)")


if __name__ == "__main__":
    main()
