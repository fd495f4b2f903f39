"""The fast path, measured: right-hand sides, whole 10-s runs, python-control, start-up.

All ratios are against baselines measured in the same run:

- "joint numpy" is the design before the tracking package (one ODE holding nominal,
  controlled, compensator and uncompensated states; numpy right-hand side; LSODA with a
  batched forward-difference Jacobian; zero-order hold as one solve per hold interval),
  rebuilt here from :func:`robustrack.interop.tracking_rhs` (the same equations);
- "numpy" is the current design on the numpy reference (``backend="numpy"``);
- "python-control" is ``control.input_output_response`` (LSODA) on
  :func:`robustrack.interop.closed_loop_iosystem`, the same loop.

CPU is process time (both cores count). Run ``python benchmarks/bench_tracking.py [T_END]``
(default 10 s, W §7.3 case 1: δm = (0.1, −0.2, 0.3) kg). The first run compiles the kernels;
run it twice and read the second.
"""

import math
import resource
import subprocess
import sys
import time
import timeit

import numpy as np
from scipy.integrate import solve_ivp

from robustrack.controllers import GD, GSS, GDBar, leitmann_corless, lyapunov_redesign, sliding_mode
from robustrack.interop import closed_loop_iosystem, tracking_rhs
from robustrack.plants import pendulum_energy_constraint, triple_pendulum
from robustrack.tracking import simulate_tracking
from robustrack.tracking.assess import tracking_metrics
from robustrack.compiled import systems as rk
from robustrack.compiled.loop import compiled_loop, kernel_law
from robustrack.compiled.backend import CompiledBackend
from robustrack.tracking.integrate import integrate_nominal
from robustrack.tracking.rhs import batched_jacobian, controlled_rhs, nominal_motion

NOMINAL = triple_pendulum()
ACTUAL = NOMINAL.replace(m=(1.1, 1.8, 3.3))
ENERGY = pendulum_energy_constraint(L1=1.0, g=9.81, gain=0.02, n=3, m1=1.0)
Q0, QD0 = np.array([1.0, 0.0, 0.0]), np.array([0.001, 0.0, 0.0])


def cpu(fn):
    start = time.process_time()
    out = fn()
    return out, time.process_time() - start


# --------------------------------------------------------------------------- the baselines
def joint_numpy(comp, t_end, h=None):
    """The former design: one ODE, numpy, LSODA + batched FD Jacobian (per hold interval if h)."""
    rhs, layout = tracking_rhs(NOMINAL, ACTUAL, ENERGY, comp, uncompensated=True)
    s = layout.slices()
    y0 = np.concatenate([Q0, QD0, Q0, QD0, comp.initial_state(3), Q0, QD0])

    def batch(t, Y, u=None):  # one batched call, as the former Jacobian did
        return rhs(t, Y) if u is None else held(t, Y, u)

    def held(t, y, u):  # the joint state with u held: controlled part recomputed with u
        d = rhs(t, y)
        q, qd = y[..., s["q"]], y[..., s["qd"]]
        Qc = nominal_motion(NOMINAL, ENERGY, q, qd, t).Qc
        x = y[..., 2 * 3:4 * 3 + layout.nz]
        d[..., 2 * 3:4 * 3 + layout.nz] = controlled_rhs(NOMINAL, ACTUAL, comp, t, x, q, qd, Qc, u_held=u)
        return d

    jac = batched_jacobian(batch)
    grid = np.linspace(0.0, t_end, 1001)
    if h is None:
        sol = solve_ivp(lambda t, y: rhs(t, y), (0.0, t_end), y0, method="LSODA", rtol=1e-8, atol=1e-12,
                        t_eval=grid, jac=lambda t, y: jac(t, y))
        Y, nfev = sol.y.T, sol.nfev
    else:
        edges = np.minimum(h * np.arange(int(math.ceil(t_end / h - 1e-9)) + 1), t_end)
        y, nfev, rows = y0, 0, [y0]
        for a, b in zip(edges[:-1], edges[1:]):
            u = comp(a, y[s["qc"]] - y[s["q"]], y[s["qcd"]] - y[s["qd"]], y[s["z"]])
            sol = solve_ivp(lambda t, yy: held(t, yy, u), (a, b), y, method="LSODA", rtol=1e-8, atol=1e-12,
                            jac=lambda t, yy: jac(t, yy, u))
            nfev += sol.nfev
            y = sol.y[:, -1]
            rows.append(y)
        Y = np.array(rows)
    e = Y[:, s["qc"]] - Y[:, s["q"]]
    return {"nfev": nfev, "max_abs_e": float(np.abs(e).max())}


def python_control(comp, t_end):
    import control

    sys_ = closed_loop_iosystem(NOMINAL, ACTUAL, ENERGY, comp, uncompensated=True)
    x0 = np.concatenate([Q0, QD0, Q0, QD0, comp.initial_state(3), Q0, QD0])
    resp = control.input_output_response(sys_, timepts=np.linspace(0, t_end, 1001), initial_state=x0,
                                         solve_ivp_method="LSODA", solve_ivp_kwargs={"rtol": 1e-8, "atol": 1e-12})
    return {"nfev": None, "max_abs_e": float(np.abs(resp.outputs[:3]).max())}


def ours(comp, t_end, h=None, backend="auto"):
    r = simulate_tracking(NOMINAL, ENERGY, comp, Q0, QD0, (0.0, t_end), actual=ACTUAL, sample_period=h, backend=backend)
    nfev = sum(v["nfev"] for v in r.info["solvers"].values() if v)
    return {"nfev": nfev, "max_abs_e": r.metrics["max_abs_e"], "max_abs_edot": r.metrics["max_abs_edot"]}


# --------------------------------------------------------------------------- sections
def rhs_section():
    print("## One right-hand side of the controlled system (triple pendulum, GSS)\n")
    comp = GSS()
    loop = compiled_loop(NOMINAL, ACTUAL, ENERGY)
    nom = integrate_nominal(CompiledBackend(loop), Q0, QD0, (0.0, 0.1))
    t = 0.05
    y = nom(t)
    q, qd = y[:3], y[3:]
    Qc = nominal_motion(NOMINAL, ENERGY, q, qd, t).Qc
    x = np.concatenate([q + 1e-3, qd - 1e-2])
    law = kernel_law(comp, 3)
    args = (nom.dense, loop.model, law, np.zeros(3), False)
    X = np.tile(x, (1000, 1))
    cases = {
        "numpy, one state": lambda: controlled_rhs(NOMINAL, ACTUAL, comp, t, x, q, qd, Qc),
        "numpy, per state in a batch of 1000": lambda: controlled_rhs(NOMINAL, ACTUAL, comp, t, X, q, qd, Qc),
        "compiled, one state (incl. Qᶜ(t) from the dense nominal)": lambda: rk.controlled_rhs(loop.controlled, t, x, *args),
        "compiled exact Jacobian": lambda: rk.controlled_jac(loop.controlled, t, x, *args),
        "numpy forward-difference Jacobian (batched)":
            lambda: batched_jacobian(lambda tt, Y: controlled_rhs(NOMINAL, ACTUAL, comp, tt, Y, q, qd, Qc))(t, x),
    }
    base = None
    print("| evaluation | µs per state | ratio to numpy one state |\n|---|---:|---:|")
    for name, fn in cases.items():
        n = 200 if "numpy" in name else 20000
        us = timeit.timeit(fn, number=n) / n * 1e6
        if "batch of 1000" in name:
            us /= 1000
        base = base or us
        print(f"| {name} | {us:.2f} | {base / us:.1f}× |")
    print()


def runs_section(t_end):
    print(f"## Whole runs, {t_end:g} s, W §7.3 case 1 (max over every accepted step)\n")
    print("| compensator | path | CPU s | nfev | max abs e (rad) | max abs ė (rad/s) | speed-up vs joint numpy |")
    print("|---|---|---:|---:|---:|---:|---:|")
    cases = [("GSS", GSS(), None), ("GD", GD(), None), ("GD-bar", GDBar(), None),
             ("sliding mode (h = 1 ms)", sliding_mode(), 1e-3),
             ("Leitmann–Corless (h = 1 ms)", leitmann_corless(), 1e-3),
             ("Lyapunov redesign (h = 1 ms)", lyapunov_redesign(), 1e-3)]
    for label, comp, h in cases:
        ours(comp, min(t_end, 0.1), h)  # load the kernels outside the timing
        rows = [("compiled", *cpu(lambda: ours(comp, t_end, h)))]
        if h is None:
            rows.append(("numpy (same design)", *cpu(lambda: ours(comp, t_end, h, backend="numpy"))))
        rows.append(("joint numpy (before)", *cpu(lambda: joint_numpy(comp, t_end, h))))
        if h is None and label == "GSS":
            rows.append(("python-control input_output_response", *cpu(lambda: python_control(comp, t_end))))
        before = rows[[r[0] for r in rows].index("joint numpy (before)")][2]
        for path, res, sec in rows:
            ed = res.get("max_abs_edot")
            print(f"| {label} | {path} | {sec:.2f} | {res['nfev'] or '—'} | {res['max_abs_e']:.4g} | "
                  f"{'—' if ed is None else f'{ed:.4g}'} | {before / sec:.1f}× |")
    print()


def startup_section():
    print("## Start-up (CPU of the whole process, median of 5)\n")

    def proc_cpu(args):
        times = []
        for _ in range(5):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            subprocess.run(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            times.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
        return sorted(times)[2]

    base = proc_cpu([sys.executable, "-c", "import numpy, scipy.integrate"])
    print("| command | CPU s | ratio to `import numpy, scipy.integrate` |\n|---|---:|---:|")
    print(f"| python -c 'import numpy, scipy.integrate' | {base:.2f} | 1.0 |")
    cli = [sys.executable, "-m", "robustrack.cli"]
    for args in (["--help"], ["list"], ["show", "triple-pendulum"], ["run", "triple-pendulum"]):
        sec = proc_cpu(cli + args)
        print(f"| robustrack {' '.join(args)} | {sec:.2f} | {sec / base:.1f} |")
    print()


if __name__ == "__main__":
    T = float(sys.argv[1]) if len(sys.argv) > 1 else 10.0
    rhs_section()
    runs_section(T)
    startup_section()
