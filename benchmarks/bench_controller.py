"""The designed controller called from Python: ``Controller`` against the 8-line assembly a user writes today.

The problem is the catalog's ``ur5-payload`` (the UR5 of example-robot-data through robustrack's compiled
rigid-body kernels, a joint reference with 6 constraint rows, GSS). Both compute τ(t, q, q̇) = Qᶜ(t) + M(q) u:

- **assembly** (the baseline, as a user writes it from public pieces): the nominal state from the run's dense
  output, Qᶜ from ``robustrack.tracking.rhs.nominal_motion``, u from the compensator's call, M from the plant;
- **Controller**: ``problem.controller(period=1e-3)`` — one call into the compiled kernels; at the loop's
  instants t = k h the reference and Qᶜ were computed once when it was made (the fundamental equation's 6-row
  pseudo-inverse, ~7 µs of a call at any other t);
- **Controller (kernel only)**: the kernel called with preallocated arrays (what a loop that keeps its arrays
  pays: the floor of the Python call).

Each is timed on 1000 calls at the instants of a 1 kHz loop (t = k h), and on 1000 calls at random times off that
grid (the nominal side computed at each call), REPEAT times; prints the medians of a call (µs), the ratio to the assembly, and the
largest difference of the forces (relative).

Run ``python benchmarks/bench_controller.py [REPEAT]`` (default 5).
"""

import sys
import time
import warnings

import numpy as np

REPEAT = int(sys.argv[1]) if len(sys.argv) > 1 else 5
CALLS = 1000


def main():
    from robustrack.compiled.controller import controller_torque
    from robustrack.scenarios import load_scenario
    from robustrack.tracking.rhs import nominal_motion

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pb = load_scenario("ur5-payload").build()
        run = pb.nominal_run()
        ctrl = pb.controller(run)
    n = pb.n
    rng = np.random.default_rng(0)
    h = 1e-3  # a 1 kHz loop: the controller tabulates the reference at its instants (period=h)
    ctrl = pb.controller(run, period=h)
    grid = np.arange(CALLS) * h  # the loop's instants t = k h, 1000 of them
    anywhere = np.sort(rng.uniform(*pb.t_span, CALLS))  # times off the grid: the nominal side computed each call
    def states_at(ts):
        return [(t, *(v + rng.normal(0, 1e-4, n) for v in run.solution(t).reshape(2, n))) for t in ts]

    loops = {"a 1 kHz loop (t = k h)": states_at(grid), "any t (off the grid)": states_at(anywhere)}

    def assembly(t, q, qd):  # the 8 lines: nominal state, Qᶜ, u, M u
        y = run.solution(t)
        qn, qdn = y[:n], y[n:]
        Qc = nominal_motion(pb.nominal, pb.constraint, qn, qdn, t).Qc
        u = pb.compensator(t, q - qn, qd - qdn)
        return Qc + pb.nominal.mass_matrix(q, t) @ u

    tau, u, z = np.empty(n), np.empty(n), ctrl.z

    def kernel(t, q, qd):
        controller_torque(ctrl._state, t, q, qd, z, tau, u)
        return tau

    ways = {"assembly": assembly, "Controller": ctrl, "Controller (kernel only)": kernel}
    print(f"UR5 (ur5-payload), {CALLS} calls, median of {REPEAT}")
    for where, states in loops.items():
        for f in ways.values():  # warm up
            f(*states[0])
        times = {k: [] for k in ways}
        for _ in range(REPEAT):
            for name, f in ways.items():
                start = time.perf_counter()
                for t, q, qd in states:
                    f(t, q, qd)
                times[name].append((time.perf_counter() - start) / CALLS * 1e6)
        base = np.median(times["assembly"])
        diff = max(np.abs(ctrl(*s) - assembly(*s)).max() / np.abs(assembly(*s)).max() for s in states[::50])
        print(f" {where}:")
        for name, ts_ in times.items():
            med = np.median(ts_)
            print(f"  {name:<26} {med:8.2f} µs a call   {med / base:6.3f}× the assembly")
        print(f"  largest difference of τ (relative): {diff:.2e}")


if __name__ == "__main__":
    main()
