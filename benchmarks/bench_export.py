"""The exported C controller's call against the Python controller's, in one run (docs/guide/robot.md, "Export to C").

The problem is the catalog's ``triple-pendulum`` (GSS, the energy constraint; the plant's M, Q and the
constraint's A, b are sympy expressions, so both the numba kernel and the C are generated from them). Each computes
τ(t, q, q̇) = Qᶜ(t) + M(q) u at the same 1000 random states inside the horizon:

- **C, in C**: the example ``main.c``'s timing loop (``rt_torque`` called from C, compiled with -O2, at 100 000
  times spread over the horizon, one state: not the same states as the other rows);
- **C through ctypes**: ``rt_torque`` with argtypes ``c_double, c_void_p × 3`` and the arrays' addresses cached
  (the floor of a ctypes call is ~0.5 µs on these machines);
- **Controller (compiled)**: ``problem.controller()`` — the numba kernel, the default;
- **Controller (numpy)**: ``backend="numpy"``.

Prints the median of REPEAT timings of a call (µs) and the largest difference from the compiled controller
(relative to max|τ|). Needs a C compiler (gcc or cc). Run ``python benchmarks/bench_export.py [REPEAT]`` (default 5).
"""

import ctypes
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPEAT = int(sys.argv[1]) if len(sys.argv) > 1 else 5
CALLS = 1000


def main():
    from robustrack.scenarios import load_scenario

    cc = shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        sys.exit("bench_export: no C compiler (gcc or cc) on PATH")
    pb = load_scenario("triple-pendulum").build()
    run = pb.nominal_run()
    ctrl, slow = pb.controller(run), pb.controller(run, backend="numpy")
    folder = Path(tempfile.mkdtemp(prefix="bench-export-"))
    start = time.perf_counter()
    done = ctrl.export(folder)
    exported = time.perf_counter() - start
    start = time.perf_counter()
    subprocess.run([cc, "-std=c99", "-O2", "-shared", "-fPIC", "-o", str(folder / "librt.so"),
                    str(folder / "robustrack_controller.c"), "-lm"], check=True)
    compiled = time.perf_counter() - start
    subprocess.run([cc, "-std=c99", "-O2", "-o", str(folder / "rt_example"), str(folder / "main.c"),
                    str(folder / "robustrack_controller.c"), "-lm"], check=True)
    size = (folder / "robustrack_controller.c").stat().st_size
    print(f"triple-pendulum: exported in {exported:.2f} s ({size / 1e3:.0f} kB of C, {done.steps} reference steps), "
          f"gcc -O2 in {compiled:.2f} s")

    lib = ctypes.CDLL(str(folder / "librt.so"))
    lib.rt_torque.argtypes = [ctypes.c_double, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
    rng = np.random.default_rng(0)
    n = pb.n
    states = []
    for t in rng.uniform(*pb.t_span, CALLS):
        q, qd, _ = ctrl.reference(t)
        states.append((float(t), q + rng.normal(0, 0.1, n), qd + rng.normal(0, 0.1, n)))
    tau = np.empty(n)
    pointers = [(t, q.ctypes.data, qd.ctypes.data) for t, q, qd in states]
    out = tau.ctypes.data
    rt_torque = lib.rt_torque

    def c_call():
        for t, q, qd in pointers:
            rt_torque(t, q, qd, out)

    def python(c):
        def call():
            for t, q, qd in states:
                c(t, q, qd)
        return call

    worst = 0.0
    for t, q, qd in states:
        rt_torque(t, q.ctypes.data, qd.ctypes.data, out)
        want = ctrl(t, q, qd)
        worst = max(worst, float(np.abs(tau - want).max() / np.abs(want).max()))

    def median(fn, calls=CALLS):
        times = []
        for _ in range(REPEAT):
            start = time.perf_counter()
            fn()
            times.append(time.perf_counter() - start)
        return 1e6 * float(np.median(times)) / calls

    in_c = []
    for _ in range(REPEAT):
        text = subprocess.run([str(folder / "rt_example"), "10", str(100 * CALLS)], check=True, capture_output=True,
                              text=True).stdout
        in_c.append(float(text.split("rt_torque: ")[1].split(" us")[0]))
    rows = [("C, called from C (main.c's loop)", float(np.median(in_c))),
            ("C through ctypes (cached pointers)", median(c_call)),
            ("Controller (compiled, numba)", median(python(ctrl))),
            ("Controller (numpy)", median(python(slow), CALLS) if REPEAT else float("nan"))]
    base = rows[2][1]
    print(f"{'call':<38}{'µs':>9}{'× compiled':>12}")
    for name, us in rows:
        print(f"{name:<38}{us:>9.3f}{us / base:>12.3f}")
    print(f"largest |τ_C − τ_Controller| / max|τ| at {CALLS} states: {worst:.2e}")


if __name__ == "__main__":
    main()
