"""The first run on a new machine, measured: cold and warm commands against a loop written by hand in numpy.

Every figure comes from one run of this script, as CPU seconds of a whole process (user + system of the
child, imports included) and as a ratio to the BASELINE: a plain numpy + ``solve_ivp(LSODA)``
implementation of the 10-s GSS loop of ``robustrack run triple-pendulum`` (nominal energy-controlled
triple pendulum, W §7.3 case 1 δm, GSS with the signed quadratic), written below with nothing of
robustrack's compiled path — what a user would write by hand.

Sequence, on ONE new empty cache (``ROBUSTRACK_CACHE_DIR`` and ``NUMBA_CACHE_DIR`` in a temporary folder):

1. ``robustrack run triple-pendulum`` cold: a machine that has compiled nothing (the kernels once per
   machine, then the structure) — measured once;
2. ``robustrack run duffing-tracking``: a second tracking structure (the kernels are there; its generated
   functions removed before each run);
3. ``robustrack run two-ellipses``: a nominal-only structure (likewise);
4. ``structure-cold`` triple pendulum: an empty cache of generated functions but the kernels compiled,
   i.e. a user's new plant on a machine that has run anything before;
5. each of the three again, warm; the metrics of cold and warm runs must be identical (checked, printed).

Every measurement but the first is repeated (``--runs``, default 3): the median is printed with the range
of CPU (this shared 2-core machine's CPU seconds vary by ±10 % from run to run), and so is the baseline's.
Also the floor of any warm run: ``python -c "import numpy"`` and a script that imports numba and loads one
cached kernel as robustrack loads its own (the fastest of three runs each), against the warm target
(1/8 of the baseline).

Python's bytecode: the children write and reuse it (``PYTHONDONTWRITEBYTECODE`` removed from their environment),
as a user's Python does — robustrack's ``__pycache__`` is written by the first run that imports a module, numpy's
and scipy's came with their install. ``--no-bytecode`` sets ``PYTHONDONTWRITEBYTECODE=1`` and removes robustrack's
``__pycache__`` first, as this project's development machine's environment runs: every process then compiles
robustrack's sources again (a cold ``two-ellipses`` imports 94 of them: ~0.2–0.3 s of CPU), which the baseline, importing
installed packages only, does not. Figures before issue 55's "The multi-row first run" (docs/results/performance.md)
were measured that way.

Run ``python benchmarks/bench_cold.py [--runs N] [--no-bytecode]`` (about two minutes on 2 cores with the default 3).

Last measured for issue 55 item 3 (docs/results/performance.md, "The triple pendulum's first run: what the
pseudo-inverse gave back"), ``--runs 3`` on a quiet 2-core machine: baseline 7.7 s CPU; the new machine's first run
24.6 s CPU = 3.20× (1.86× wall); cold ``two-ellipses`` 0.25×, cold ``duffing-tracking`` 0.26×, a new structure
0.32×, warm runs 0.13–0.16×. The first run against earlier trees, alternately on new caches, is in that section.
"""

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

BASELINE = r'''
import numpy as np
from scipy.integrate import solve_ivp

L, g = np.array([1.0, 1.5, 2.0]), 9.81
m = np.array([1.0, 2.0, 3.0])
ma = m + np.array([0.1, -0.2, 0.3])  # W 7.3 case 1


def plant(q, qd, masses):
    # M, Q of the n-link pendulum, angles from the downward vertical (W 2.3.2-2.3.3)
    tail = np.cumsum(masses[::-1])[::-1]
    mu = tail[np.maximum.outer(np.arange(3), np.arange(3))] * np.outer(L, L)
    d = q[:, None] - q[None, :]
    M = mu * np.cos(d)
    Q = -(mu * np.sin(d) * qd[None, :] ** 2).sum(axis=1) - g * tail * L * np.sin(q)
    return M, Q


def energy_constraint(q, qd):
    # psi = L1 qd1^2 / 2 - g cos q1, psi' + alpha psi = 0, alpha = 0.02 |A|^4 (W 2.3.5-2.3.7)
    a = L[0] * qd[0]
    psi = 0.5 * L[0] * qd[0] ** 2 - g * np.cos(q[0])
    A = np.array([[a, 0.0, 0.0]])
    b = np.array([-g * qd[0] * np.sin(q[0]) - 0.02 * a ** 4 * psi])
    return A, b


def fundamental(M, Q, A, b):
    # q'' of M q'' = Q + Qc, A q'' = b: q'' = a + M^-1/2 (A M^-1/2)^+ (b - A a) (W 2.2.7)
    Lc = np.linalg.cholesky(M)
    a = np.linalg.solve(M, Q)
    Li = np.linalg.inv(Lc)
    B = A @ Li.T
    return a + Li.T @ (np.linalg.pinv(B) @ (b - A @ a))


K, gain, eps, alpha_c = 10.0, 1.0 * (100.0 + 10.0) / 0.5, 1e-2, 2.0  # GSS: beta = (Gamma' + beta0)/alpha0, sigma 1


def rhs(t, y):
    q, qd, qc, qcd = y[0:3], y[3:6], y[6:9], y[9:12]
    M, Q = plant(q, qd, m)
    A, b = energy_constraint(q, qd)
    qdd = fundamental(M, Q, A, b)
    Qc = M @ qdd - Q
    e, ed = qc - q, qcd - qd
    s = (K * e + ed) / eps
    u = -K * ed - gain * alpha_c * s * np.abs(s)  # W 7.2.15 with g = signed quadratic
    Mn, _ = plant(qc, qcd, m)
    Ma, Qa = plant(qc, qcd, ma)
    return np.concatenate([qd, qdd, qcd, np.linalg.solve(Ma, Qa + Qc + Mn @ u)])


q0, qd0 = np.array([1.0, 0.0, 0.0]), np.array([0.001, 0.0, 0.0])
sol = solve_ivp(rhs, (0.0, 10.0), np.concatenate([q0, qd0, q0, qd0]), method="LSODA", rtol=1e-8, atol=1e-12)
e = sol.y[6:9] - sol.y[0:3]
print("LSODA nfev", sol.nfev, "success", sol.success, "max|e|", float(abs(e).max()))
'''


def cpu_of(cmd, env):
    """(CPU s, wall s, stdout) of one child process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    out = subprocess.run(cmd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if out.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{out.stderr}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall, out.stdout, out.stderr


def run(name, env, folder):
    path = os.path.join(folder, f"{name}-{time.monotonic_ns()}.json")
    cpu, wall, _, err = cpu_of([sys.executable, "-m", "robustrack.cli", "run", name, "--json", path], env)
    with open(path) as fh:
        metrics = json.load(fh)["metrics"]
    return cpu, wall, metrics, err


FLOOR = r'''
import numpy as np

from robustrack.compiled.cache import kernel as jit  # numba's njit(cache=True), loaded as robustrack's kernels are


@jit
def kernel(x):
    s = 0.0
    for v in x:
        s += v * v
    return s


kernel(np.ones(3))
'''


def numba_floor(env, folder):
    """(CPU of ``python -c "import numpy"``, CPU of a script that imports numba and loads one cached kernel the
    way robustrack loads its own): what any warm run on numba's cache pays before robustrack does anything
    (the second run of the script)."""
    script = os.path.join(folder, "floor.py")
    with open(script, "w") as fh:
        fh.write(FLOOR)
    numpy_only = min(cpu_of([sys.executable, "-c", "import numpy"], env)[0] for _ in range(3))
    cpu_of([sys.executable, script], env)  # compiles and caches the kernel
    return numpy_only, min(cpu_of([sys.executable, script], env)[0] for _ in range(3))


def _forget_structures(folder):
    """Remove the generated functions of every plant structure and numba's cache of them (the kernels stay
    compiled). numba's cache must go too: it is keyed by the source's content, so a file generated again
    would load the machine code compiled before."""
    for root, _, files in os.walk(os.path.join(folder, "cache")):
        for f in files:
            if f.startswith("rtk_"):
                os.remove(os.path.join(root, f))


def _drop_bytecode():
    """Remove robustrack's ``__pycache__`` folders (``--no-bytecode``): Python reads the bytecode it finds even where
    ``PYTHONDONTWRITEBYTECODE`` keeps it from writing any."""
    import importlib.util

    for top in importlib.util.find_spec("robustrack").submodule_search_locations:
        for root, dirs, _ in os.walk(top):
            if "__pycache__" in dirs:
                shutil.rmtree(os.path.join(root, "__pycache__"), ignore_errors=True)
                dirs.remove("__pycache__")


def _median(rows):
    """(median CPU, median wall, lowest CPU, highest CPU) of (cpu, wall) pairs."""
    cpus, walls = sorted(r[0] for r in rows), sorted(r[1] for r in rows)
    return statistics.median(cpus), statistics.median(walls), cpus[0], cpus[-1]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="runs of every measurement but the new machine's "
                        "(medians are printed, with the range of CPU); default 3")
    parser.add_argument("--no-bytecode", action="store_true", help="run every command with PYTHONDONTWRITEBYTECODE=1 "
                        "(each process compiles robustrack's sources again); default: Python writes and reuses bytecode")
    args = parser.parse_args()
    runs = args.runs
    folder = tempfile.mkdtemp(prefix="bench-cold-")
    env = {**os.environ, "ROBUSTRACK_CACHE_DIR": os.path.join(folder, "cache"),
           "NUMBA_CACHE_DIR": os.path.join(folder, "numba")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    if args.no_bytecode:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        _drop_bytecode()
    print("Python's bytecode:", "not written (PYTHONDONTWRITEBYTECODE=1): every process compiles robustrack's sources"
          if args.no_bytecode else "written and reused, as a user's Python does")
    script = os.path.join(folder, "baseline.py")
    with open(script, "w") as fh:
        fh.write(BASELINE)
    measured = [cpu_of([sys.executable, script], env) for _ in range(runs)]
    base, base_wall, lo, hi = _median([m[:2] for m in measured])
    print(f"baseline (numpy + solve_ivp LSODA, 10-s GSS loop): {base:.1f} s CPU (median of {runs}: {lo:.1f}–{hi:.1f}; "
          f"{base_wall:.1f} s wall); {measured[0][2].strip()}")
    floor = numba_floor(env, folder)
    print(f"floor: python + numpy {floor[0]:.2f} s CPU; + numba and one cached kernel loaded {floor[1]:.2f} s CPU "
          f"(the warm target, 8× faster than the baseline, is {base / 8:.2f} s CPU for the whole command)")
    rows = []
    cold = {}
    # a new machine: once (each run would need a new empty cache and ~25 s of CPU)
    cpu, wall, cold["triple-pendulum"], err = run("triple-pendulum", env, folder)
    rows.append(("cold triple-pendulum (new machine, once)", (cpu, wall, cpu, cpu),
                 [line for line in err.splitlines() if "compil" in line]))
    # a second structure on a machine whose kernels are compiled: its generated functions removed before each run
    for name, what in (("duffing-tracking", "cold duffing-tracking (a second tracking structure)"),
                       ("two-ellipses", "cold two-ellipses (a nominal-only structure)"),
                       ("triple-pendulum", "structure-cold triple-pendulum (kernels compiled)")):
        measured = []
        for _ in range(runs):
            _forget_structures(folder)
            cpu, wall, metrics, err = run(name, env, folder)
            measured.append((cpu, wall))
            cold.setdefault(name, metrics)
        rows.append((what, _median(measured), [line for line in err.splitlines() if "compil" in line]))
    same = {}
    for name in ("triple-pendulum", "duffing-tracking", "two-ellipses"):
        if name != "triple-pendulum":  # its generated functions were removed above: one unmeasured run makes them
            run(name, env, folder)
        measured = []
        for _ in range(runs):
            cpu, wall, metrics, _ = run(name, env, folder)
            measured.append((cpu, wall))
            same[name] = same.get(name, True) and metrics == cold[name]
        rows.append((f"warm {name}", _median(measured), []))
    # both ratios: the first run compiles on two cores (a helper process compiles the controlled system and BDF while
    # this one compiles the nominal side), which shortens its wall time, not its CPU; the baseline runs on one core
    print(f"\n{'command':<56} {'CPU s':>6} {'range':>10} {'wall s':>7} {'× baseline CPU':>15} {'× baseline wall':>16}")
    for what, (cpu, wall, lo, hi), notes in rows:
        print(f"{what:<56} {cpu:6.2f} {f'{lo:.2f}–{hi:.2f}':>10} {wall:7.2f} {cpu / base:15.2f} {wall / base_wall:16.2f}")
        for note in notes:
            print(f"    {note}")
    print("\ncold and warm metrics identical:", same)
    warm_tp = [r for r in rows if r[0] == "warm triple-pendulum"][0][1][0]
    print(f"warm triple-pendulum is {base / warm_tp:.1f}× faster than the baseline")
    shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
