"""The certificate of issue 29 on W's triple pendulum (±10 % on each mass, 10 s), timed against Monte Carlo.

In one run, on the scenario "triple-pendulum" (GSS, the energy constraint, W 7.3):

1. ``certify`` at the box level: sup ‖δq‖∞ over the box × [0, 10 s] along ``nominal_run()``
   (CPU seconds, cells, the witness), then sup ‖M̃ₐ‖∞ (after the Monte Carlo parts);
2. the witness plant's own tracking run, and the toolbox's δq at the witness time along it;
3. the Γ Monte Carlo along the same reference: 1000 samples (timed, median of ``--repeats``) and
   10 000 samples (every value must lie below the certified upper bound);
4. the closed level at Γ = ``--gamma-closed`` (default 180: the conditions should hold) and at
   Γ = 100 (W's choice: the Γ condition fails, by how much is printed);
5. the ratios certificate / Monte Carlo CPU time.

    python benchmarks/bench_certify.py [--tolerance 0.05] [--repeats 3] [--skip-closed]
    python benchmarks/bench_certify.py --mtilde-horizon 1 [--repeats 3]

``--mtilde-horizon T`` times only the sup ‖M̃ₐ‖∞ search over ±10 % × [0, T] with and without the
cheaper lower bounds (the vertex chosen in floating point and evaluated alone in arb; no point in a
cell already within the tolerance), alternated in one run, and checks both give the same interval.

``--complete`` (issue 43 item 5) runs the two commands a user compares, each in its own process, and
reads their CPU (the process and the pool workers it waited for, ``RUSAGE_CHILDREN``):

    robustrack certify triple-pendulum --spread 0.1          (the complete certificate: δq and M̃ₐ)
    robustrack montecarlo triple-pendulum                    (a 1000-sample closed-loop campaign)

with ``--baseline`` also the certificate without the expansions in the parameters (``model.EXPAND =
False``: the centred form of δq and the interval form of ‖M̃ₐ‖, as before issue 43), alternated
``--repeats`` times (medians), and prints each one's CPU, the certificate's parts (sup ‖δq‖∞, sup ‖M̃ₐ‖∞
as it reports them) and the ratios.

    python benchmarks/bench_certify.py --complete [--baseline] [--repeats 1]
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from robustrack.certification import ParameterBox, certify
from robustrack.scenarios import load_scenario
from robustrack.scenarios.gamma import tracked_trajectory
from robustrack.tracking.assess import uncertainty_along_run
from robustrack.tracking.rhs import nominal_motion
from robustrack.uncertainty import estimate_gamma, sample_parameters


def timed(fn):
    c0, w0 = time.process_time(), time.perf_counter()
    out = fn()
    return out, time.process_time() - c0, time.perf_counter() - w0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tolerance", type=float, default=0.05)
    ap.add_argument("--repeats", type=int, default=3, help="repeats of the Monte Carlo timing (median)")
    ap.add_argument("--budget", type=float, default=600.0)
    ap.add_argument("--gamma-closed", type=float, default=180.0)
    ap.add_argument("--skip-closed", action="store_true")
    ap.add_argument("--mtilde-horizon", type=float, help="only the ‖M̃ₐ‖ search over [0, T]: fast lower bounds "
                    "against the plain ones, in one run")
    ap.add_argument("--complete", action="store_true", help="the complete certificate's command against a 1000-sample "
                    "montecarlo command, each in its own process (CPU of the process and its workers)")
    ap.add_argument("--baseline", action="store_true", help="with --complete: also the certificate without the "
                    "expansions in the parameters (before issue 43)")
    args = ap.parse_args()
    if args.complete:
        return complete(args.repeats, args.baseline)
    if args.mtilde_horizon:
        return mtilde_lower_bounds(args.mtilde_horizon, args.tolerance, args.repeats)

    pb = load_scenario("triple-pendulum").build()
    run, cpu, wall = timed(pb.nominal_run)
    print(f"nominal run: {run.solution.t.size - 1} DOP853 steps, {cpu:.2f} s CPU")
    box = ParameterBox.around(pb.nominal, 0.1)

    cert, cpu_box, wall_box = timed(lambda: certify(pb, box, tolerance=args.tolerance, run=run,
                                                     budget_s=args.budget, quantities=["max_norm_dq"]))
    print(cert.text(), flush=True)
    dq = cert.bounds["max_norm_dq"]
    print(f"box level, ‖δq‖: {cpu_box:.1f} s CPU in all ({wall_box:.1f} s wall), the search {dq.cpu_s:.1f} s",
          flush=True)

    # the witness plant's own run, and δq at the witness time along the reference
    w = dq.witness
    actual = pb.nominal.replace(m=np.asarray(w["params"]["m"]))
    t = np.array([w["t"]])
    y = run.solution(t)
    q, qd = y[:, :3], y[:, 3:]
    Qc = nominal_motion(pb.nominal, pb.constraint, q, qd, t).Qc
    again = uncertainty_along_run(pb.nominal, actual, q, qd, q, qd, Qc, t)["dq_norm"][0]
    res, cpu_run, _ = timed(lambda: pb.replace(t_eval=np.sort(np.append(pb.t_eval, w["t"]))).track(
        pb.nominal_run(), actual))
    print(f"witness m = {actual.m.tolist()}, t = {w['t']:.6g} s: δq along the reference {again:.6f} "
          f"(certified lower bound {dq.lower:.6f}); its tracking run: max ‖e‖∞ {res.metrics['max_abs_e']:.3g}, "
          f"bounds held {res.metrics.get('bounds_held')} ({cpu_run:.1f} s CPU)")

    traj = tracked_trajectory(pb, run)
    times = []
    for r in range(args.repeats):
        draws = sample_parameters(pb.nominal.m, 1000, spread=0.1, seed=r)
        _, cpu_mc, _ = timed(lambda: estimate_gamma(pb.nominal, traj, draws))
        times.append(cpu_mc)
    mc1000 = statistics.median(times)
    est = estimate_gamma(pb.nominal, traj, sample_parameters(pb.nominal.m, 10000, spread=0.1, seed=0))
    s = est.summary()["exact"]
    print(f"Γ Monte Carlo along nominal_run(), 10 000 samples: median {s['median']:.1f}, p95 {s['p95']:.1f}, "
          f"max {s['max']:.2f} (≤ certified U {dq.upper:.2f}: {s['max'] <= dq.upper}); 1000 samples: "
          f"{mc1000:.3f} s CPU (median of {args.repeats})", flush=True)
    print(f"ratio: certificate of ‖δq‖ / 1000-sample Γ Monte Carlo = {dq.cpu_s / mc1000:.0f}×")
    res_cpu = [timed(lambda: pb.track(run, pb.nominal.replace(m=pb.nominal.m * (1 + 0.05 * (-1) ** i))))[1]
               for i in range(args.repeats)]
    per_run = statistics.median(res_cpu)
    print(f"closed-loop run per sampled plant: {per_run:.2f} s CPU (median of {args.repeats}); a 1000-sample "
          f"closed-loop montecarlo ≈ {1000 * per_run:.0f} s CPU; certificate / that = {dq.cpu_s / (1000 * per_run):.2f}",
          flush=True)

    mt, cpu_mt, _ = timed(lambda: certify(pb, box, tolerance=args.tolerance, run=run, budget_s=args.budget,
                                          quantities=["max_norm_Mtilde"]))
    print(mt.text().splitlines()[3], f"({cpu_mt:.1f} s CPU in all)", flush=True)
    if args.skip_closed:
        return
    for gamma in (args.gamma_closed, 100.0):
        closed, cpu_c, wall_c = timed(lambda: certify(pb, box, level="closed", gamma=gamma, tolerance=args.tolerance,
                                                       run=run, budget_s=args.budget))
        print(f"--- closed level, Γ = {gamma:g}: {cpu_c:.1f} s CPU ({wall_c:.1f} s wall)")
        print(closed.text())


ROOT = Path(__file__).resolve().parent.parent

#: The commands compared (a CLI run each, as a user types them; the tree's own robustrack).
COMMANDS = {
    "certificate": ["-m", "robustrack.cli", "certify", "triple-pendulum", "--spread", "0.1"],
    "certificate, without the expansions (before)": [
        "-c", "import sys; import robustrack.certification.model as M; M.EXPAND = False; "
              "from robustrack.cli import main; sys.exit(main(sys.argv[1:]))",
        "certify", "triple-pendulum", "--spread", "0.1"],
    "montecarlo, 1000 samples": ["-m", "robustrack.cli", "montecarlo", "triple-pendulum", "--samples", "1000"],
}


def children_cpu(cmd):
    """(CPU seconds of a child process and the processes it waited for, wall seconds, its stdout)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    w0 = time.perf_counter()
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    out = subprocess.run([sys.executable, *cmd], cwd=ROOT, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - w0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if out.returncode not in (0, 1):
        raise SystemExit(f"{cmd} failed:\n{out.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall, out.stdout


def complete(repeats, baseline):
    """The complete certificate's command and a 1000-sample campaign's, alternated (issue 43 item 5)."""
    names = ["certificate"] + (["certificate, without the expansions (before)"] if baseline else []) + \
        ["montecarlo, 1000 samples"]
    cpu = {k: [] for k in names}
    parts = {k: [] for k in names}
    for r in range(repeats):
        for name in names:
            c, w, text = children_cpu(COMMANDS[name])
            cpu[name].append(c)
            found = dict(re.findall(r"(sup ‖[^∈]+‖∞) ∈ \[[^]]+\] \([^;]+; (?:\d+ cells), ([\d.]+) s CPU", text))
            cells = re.findall(r"(sup ‖[^∈]+‖∞) ∈ (\[[^]]+\]) \([^;]+; (\d+) cells", text)
            parts[name].append(found)
            print(f"[{r + 1}/{repeats}] {name}: {c:.1f} s CPU ({w:.1f} s wall)"
                  + "".join(f"; {q} ∈ {iv}, {n} cells, {found.get(q, '?')} s CPU" for q, iv, n in cells), flush=True)
    med = {k: statistics.median(v) for k, v in cpu.items()}
    mc = med["montecarlo, 1000 samples"]
    print(f"load average at the end: {os.getloadavg()[0]:.1f} (2 cores shared: CPU seconds, not wall)")
    for name in names:
        extra = ""
        if parts[name] and parts[name][0]:
            extra = " — " + ", ".join(f"{q} {statistics.median(float(p[q]) for p in parts[name]):.1f} s"
                                      for q in parts[name][0])
        print(f"{name}: {med[name]:.1f} s CPU (median of {repeats}){extra}; / montecarlo = {med[name] / mc:.2f}")


def mtilde_lower_bounds(horizon, tolerance, repeats):
    """sup ‖M̃ₐ‖∞ over ±10 % × [0, horizon]: the lower bounds screened in floating point and skipped in settled
    cells (SCREEN, SKIP_SETTLED) against every vertex in arb in every cell, alternated (median CPU of each)."""
    import robustrack.certification.certificate as C
    import robustrack.certification.search as S

    pb = load_scenario("triple-pendulum", [f"simulation.t_end={horizon}"]).build()
    run = pb.nominal_run()
    box = ParameterBox.around(pb.nominal, 0.1)
    certify(pb, ParameterBox.around(pb.nominal, 0.01), tolerance=0.5, run=run, budget_s=10,
            quantities=["max_norm_Mtilde"])  # compile the ball functions outside the timings
    cpu, seen = {True: [], False: []}, {}
    for _ in range(repeats):
        for fast in (False, True):
            C.SCREEN = S.SKIP_SETTLED = fast
            b = certify(pb, box, tolerance=tolerance, run=run, budget_s=600,
                        quantities=["max_norm_Mtilde"]).bounds["max_norm_Mtilde"]
            cpu[fast].append(b.cpu_s)
            seen[fast] = (b.lower, b.upper, b.evaluations)
    C.SCREEN = S.SKIP_SETTLED = True
    plain, fast = statistics.median(cpu[False]), statistics.median(cpu[True])
    print(f"sup ‖M̃ₐ‖∞ over ±10 % × [0, {horizon:g} s]: plain lower bounds {seen[False]} in {plain:.2f} s CPU, fast "
          f"{seen[True]} in {fast:.2f} s CPU (medians of {repeats}); ratio {plain / fast:.2f}×; same interval: "
          f"{seen[True][:2] == seen[False][:2]}")


if __name__ == "__main__":
    main()
