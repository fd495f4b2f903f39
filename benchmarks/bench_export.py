"""The exported C controller's call against the Python controller's, in one run (docs/guide/robot.md, "Export to C").

Two catalog problems, each exported and compiled here:

- ``triple-pendulum`` (GSS, the energy constraint): M, Q, A, b are sympy expressions, printed as they are;
- ``ur5-plane-circle`` (the UR5 of example-robot-data, GSS, the tool point on a plane tracing a circle, its
  orientation held: 6 frame-constraint rows): M, Q and A, b come from the rigid-body algorithms
  (robustrack.compiled.rigid_body: crba, given_force, frame_rows), traced (robustrack.loop.trace). Needs
  ``robustrack[robots]`` (Pinocchio); skipped without it.

Each computes τ(t, q, q̇) = Qᶜ(t) + M(q) u at the same 1000 random states inside the horizon:

- **C, in C**: the example ``main.c``'s timing loop (``rt_torque`` called from C, compiled with -O2, at 100 000
  times spread over the horizon, one state: not the same states as the other rows);
- **C through ctypes**: ``rt_torque`` with argtypes ``c_double, c_void_p × 3`` and the arrays' addresses cached
  (the floor of a ctypes call is ~0.5 µs on these machines);
- **Controller (compiled)**: ``problem.controller()`` — the numba kernels, the default;
- **Controller (numpy)**: ``backend="numpy"`` (for the UR5: Pinocchio).

Prints the export's time and size (the functions, and the reference table), gcc's time, the median of REPEAT
timings of a call (µs) and the largest difference from the compiled controller (relative to max|τ|). Needs a C
compiler (gcc or cc). Run ``PYTHONPATH=. python benchmarks/bench_export.py [REPEAT]`` from the checkout (default 5).
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


def bench(cc, name):
    """Export, compile and time the catalog scenario ``name`` (module docstring)."""
    from robustrack.scenarios import load_scenario

    pb = load_scenario(name).build()
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
    text = (folder / "robustrack_controller.c").read_text()
    tables = len(text[text.index("static const double rt_T["):text.index("int rt_n(void)")].encode())
    size = len(text.encode())
    print(f"{name} (n = {done.n}, m = {done.m}): exported in {exported:.2f} s ({size / 1e3:.0f} kB of C: "
          f"{(size - tables) / 1e3:.0f} kB of functions, {tables / 1e3:.0f} kB the reference table of {done.steps} "
          f"steps), gcc -O2 in {compiled:.2f} s, controller {'compiled' if ctrl.compiled else 'numpy'}")

    lib = ctypes.CDLL(str(folder / "librt.so"))
    lib.rt_torque.argtypes = [ctypes.c_double, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
    rng = np.random.default_rng(0)
    n = pb.n
    states = []
    for t in rng.uniform(*pb.t_span, CALLS):
        y = run.solution(t)
        states.append((float(t), y[:n] + rng.normal(0, 0.1, n), y[n:] + rng.normal(0, 0.1, n)))
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
    for label, us in rows:
        print(f"{label:<38}{us:>9.3f}{us / base:>12.3f}")
    print(f"largest |τ_C − τ_Controller| / max|τ| at {CALLS} states: {worst:.2e}\n")


def main():
    cc = shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        sys.exit("bench_export: no C compiler (gcc or cc) on PATH")
    bench(cc, "triple-pendulum")
    try:
        import pinocchio  # noqa: F401
    except ImportError:
        print("ur5-plane-circle: skipped (needs pip install 'robustrack[robots]')")
        return
    bench(cc, "ur5-plane-circle")


if __name__ == "__main__":
    main()
