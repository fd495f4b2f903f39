"""Closed-loop campaigns, measured: the 1000-sample triple-pendulum Monte Carlo and what it costs per sample.

In one run of this script (the same machine, the same load):

1. one ``robustrack run triple-pendulum`` — in this process (``run_tracking``: nominal,
   controlled and uncompensated solves, metrics) and as a command (a new process:
   start-up, kernel loading, the run);
2. the campaign: N samples (default 1000) of the 10-s triple pendulum, GSS, uniform ±10 %
   on the masses, seed 0, on a local pool of all cores — wall time, per-sample wall time
   and the ratios to (1);
3. W's case-3 settings: ±50 % with Γ′ = 800 (``--set compensator.gss.gamma_prime=800 --set uncertainty.gamma=800``), N samples;
4. variants on a subset (default 200): one process vs the pool; samples per task
   (chunk) 1, 8, 32; a Dask LocalCluster with as many workers;
5. worst-case search with the subset's budget, unseeded and seeded from the subset's
   Monte Carlo worst, against that worst.

Run ``python benchmarks/bench_campaigns.py [N] [SUBSET]`` (the first run of a machine compiles
the kernels: run it twice and read the second).

``python benchmarks/bench_campaigns.py --throughput [N] [REPEAT]`` measures only the campaign target of
issue 31 (a warm N-sample ±10 % GSS Monte Carlo of the triple pendulum on a pool of 2 workers: wall, CPU per
sample of the samples and of all processes, and one process's CPU per sample of 20 samples), REPEAT times
(default 3) for medians, interleaved with the same measurements of ``ROBUSTRACK_BASELINE``'s tree when it is
set — each in a new process, so each tree runs its own code and kernels. With ``ROBUSTRACK_BASELINE=/path/to/an/older/checkout``
it also measures one sample's CPU with that tree's code, in the same run, as the baseline. Prints a table and writes
``bench_campaigns.json`` in the current folder.
"""

import json
import os
import statistics
import subprocess
import sys
import time

from robustrack.campaigns import ParameterUncertainty, monte_carlo, worst_case
from robustrack.scenarios import load_scenario
from robustrack.scenarios.campaign import ScenarioLoop, campaign_settings, resolve_campaign_scenario
from robustrack.scenarios.tracking_kinds import run_tracking

_ARGS = [a for a in sys.argv[1:] if a != "--throughput"]
N = int(_ARGS[0]) if _ARGS else 1000
SUBSET = int(_ARGS[1]) if len(_ARGS) > 1 else 200
CORES = os.cpu_count() or 1


def single_runs(repeat=3):
    sc = load_scenario("triple-pendulum")
    run_tracking(sc)  # load the kernels
    walls, cpus = [], []
    for _ in range(repeat):
        t, c = time.perf_counter(), time.process_time()
        run_tracking(sc)
        walls.append(time.perf_counter() - t)
        cpus.append(time.process_time() - c)
    cli = []
    for _ in range(repeat):
        t = time.perf_counter()
        subprocess.run([sys.executable, "-m", "robustrack.cli", "run", "triple-pendulum"], check=True,
                       capture_output=True)
        cli.append(time.perf_counter() - t)
    return statistics.median(walls), statistics.median(cli), statistics.median(cpus)


_PER_SAMPLE = r"""
import json, sys, time
from robustrack.campaigns import ParameterUncertainty
from robustrack.scenarios.campaign import ScenarioLoop, resolve_campaign_scenario
from robustrack.tracking import simulate
loop = ScenarioLoop(resolve_campaign_scenario("triple-pendulum"))()
run = loop.nominal_run()
unc = ParameterUncertainty("m", spread=0.1, seed=0)
d = unc.draw(loop.nominal, 21)
plants = [unc.actual(loop.nominal, d[i]) for i in range(21)]
def full(p):  # what a campaign sample cost before track_peaks: track() with the whole assessment
    return simulate.track(run, p, raise_on_failure=False).metrics.max_abs_e
def peaks(p):
    return simulate.track_peaks(run, p).max_abs_e
out = {}
for name, f in (("full", full), ("peaks", peaks)):
    if name == "peaks" and not hasattr(simulate, "track_peaks"):
        continue
    f(plants[0])
    c = time.process_time()
    out[name] = [f(p) for p in plants[1:]]
    out[name + "_cpu_s"] = (time.process_time() - c) / 20
print(json.dumps(out))
"""


def per_sample(tree=None):
    """CPU per sample of one process tracking 20 plants, with the tree's code (default: this checkout).

    ``full``: :func:`~robustrack.tracking.simulate.track` with its whole assessment (a campaign's sample
    before :func:`~robustrack.tracking.simulate.track_peaks`); ``peaks``: what a campaign runs now.
    """
    env = dict(os.environ)
    if tree:
        env["PYTHONPATH"] = str(tree)
    res = subprocess.run([sys.executable, "-c", _PER_SAMPLE], check=True, capture_output=True, text=True, env=env,
                         cwd=tree or None)
    return json.loads(res.stdout.strip().splitlines()[-1])


def campaign(n, spread=0.1, sets=(), **kw):
    sc = resolve_campaign_scenario("triple-pendulum", overrides=list(sets))
    unc = ParameterUncertainty("m", spread=spread, seed=0)
    t = time.perf_counter()
    res = monte_carlo(ScenarioLoop(sc), unc, n, settings=campaign_settings(sc), progress="lines", **kw)
    return res, time.perf_counter() - t


def describe(label, res, wall):
    s = res.summary()
    e = s["max_abs_e"]
    return {"label": label, "samples": s["samples"], "wall_s": wall, "per_sample_ms": 1e3 * wall / s["samples"],
            "cpu_s": s["cpu_s"], "held_fraction": s["held_fraction"], "failed": s["failed"],
            "max_abs_e": e, "max_abs_edot": s["max_abs_edot"], "worst": s["worst"], "bound": s["bound"],
            "executor": res.executor}


def main():
    out = {"cores": CORES, "N": N, "subset": SUBSET}
    run_s, cli_s, run_cpu = single_runs()
    out["single_run_s"], out["single_cli_s"], out["single_run_cpu_s"] = run_s, cli_s, run_cpu
    print(f"one run (in process): {run_s:.3f} s wall, {run_cpu:.3f} s CPU    one `robustrack run` (new process): "
          f"{cli_s:.3f} s wall")
    with open("/proc/loadavg") as fh:
        out["loadavg_before"] = fh.read().split()[:3]
    trees = [("this checkout", None)]
    if os.environ.get("ROBUSTRACK_BASELINE"):
        trees.append((f"baseline {os.environ['ROBUSTRACK_BASELINE']}", os.environ["ROBUSTRACK_BASELINE"]))
    print("\none sample in one process, CPU (20 plants of ±10 %; first of 21 loads the kernels):")
    out["per_sample"] = {}
    for label, tree in trees:
        per_sample(tree)  # a first process may compile the kernels of that tree
        ps = out["per_sample"][label] = per_sample(tree)
        for name in ("full", "peaks"):
            if name + "_cpu_s" in ps:
                print(f"  {label:<40} {name:<6} {1e3 * ps[name + '_cpu_s']:8.1f} ms  "
                      f"÷ run CPU {ps[name + '_cpu_s'] / run_cpu:.3f}")

    rows = []
    res, wall = campaign(N, workers=CORES)
    rows.append(describe(f"±10 % GSS, {N} samples, pool of {CORES}", res, wall))
    res50, wall50 = campaign(N, spread=0.5, sets=["compensator.gss.gamma_prime=800", "uncertainty.gamma=800"], workers=CORES)
    rows.append(describe(f"±50 % GSS Γ′=800, {N} samples, pool of {CORES}", res50, wall50))
    for label, kw in ((f"one process, {SUBSET}", {"workers": 1}),
                      (f"pool of {CORES}, chunk 1, {SUBSET}", {"workers": CORES, "chunk": 1}),
                      (f"pool of {CORES}, chunk 8, {SUBSET}", {"workers": CORES, "chunk": 8}),
                      (f"pool of {CORES}, chunk 32, {SUBSET}", {"workers": CORES, "chunk": 32})):
        r, w = campaign(SUBSET, **kw)
        rows.append(describe(label, r, w))
    try:
        from distributed import LocalCluster

        with LocalCluster(n_workers=CORES, threads_per_worker=1, dashboard_address=None, silence_logs=40) as cl:
            r, w = campaign(SUBSET, scheduler=cl.scheduler_address)
            rows.append(describe(f"Dask LocalCluster, {CORES} workers, {SUBSET}", r, w))
    except ImportError:
        print("dask.distributed not installed: no Dask row")
    out["campaigns"] = rows

    print("\n÷ run, ÷ cli: wall per sample over one run's wall (in process, new process); "
          "CPU/sample ÷ run: CPU per sample over one run's CPU (what an idle machine's ratio would be)")
    print(f"{'campaign':<52}{'wall s':>9}{'ms/sample':>11}{'÷ run':>8}{'÷ cli':>8}{'CPU ms':>8}{'÷ run':>7}"
          f"{'held':>7}{'median e':>11}{'p95 e':>10}{'p99 e':>10}{'max e':>10}{'failed':>7}")
    for r in rows:
        ps = r["wall_s"] / r["samples"]
        pc = r["cpu_s"] / r["samples"]
        e = r["max_abs_e"]
        print(f"{r['label']:<52}{r['wall_s']:>9.1f}{1e3 * ps:>11.1f}{ps / run_s:>8.3f}{ps / cli_s:>8.3f}"
              f"{1e3 * pc:>8.1f}{pc / run_cpu:>7.3f}"
              f"{r['held_fraction']:>7.3f}{e['median']:>11.3g}{e['p95']:>10.3g}{e['p99']:>10.3g}{e['max']:>10.3g}"
              f"{r['failed']:>7}")
    for r in rows[:2]:
        print(f"  {r['label']}: worst sample {r['worst']['sample']}, δm = {r['worst']['dm']}, max ‖e‖∞ = "
              f"{r['worst']['max_abs_e']:.6g}; promised ‖e‖∞ ≤ {r['bound']['e']:.3g}; "
              f"max ‖ė‖∞ p99 {r['max_abs_edot']['p99']:.3g}")

    # worst case with the subset's budget
    sc = resolve_campaign_scenario("triple-pendulum")
    unc = ParameterUncertainty("m", spread=0.1, seed=0)
    mc_worst = rows[2]["worst"]
    wc = []
    for label, start in (("unseeded", []), ("seeded from the Monte Carlo worst", [mc_worst["dm"]])):
        t = time.perf_counter()
        r = worst_case(ScenarioLoop(sc), unc, budget=SUBSET, start=start, workers=CORES)
        wc.append({"label": label, "evaluations": r.evaluations, "wall_s": time.perf_counter() - t,
                   "dm": list(r.worst.dm), "max_abs_e": r.worst.max_abs_e, "held": r.worst.held})
    out["worst_case"] = {"montecarlo_worst": mc_worst, "searches": wc}
    print(f"\nworst case, budget {SUBSET} (Monte Carlo of {SUBSET}: max ‖e‖∞ {mc_worst['max_abs_e']:.6g}):")
    for w in wc:
        print(f"  {w['label']:<36} {w['evaluations']} evaluations, {w['wall_s']:.1f} s: max ‖e‖∞ "
              f"{w['max_abs_e']:.6g} ({w['max_abs_e'] / mc_worst['max_abs_e']:.4f} × MC), δm = {w['dm']}")
    with open("/proc/loadavg") as fh:
        out["loadavg_after"] = fh.read().split()[:3]
    print(f"load average before / after: {out['loadavg_before']} / {out['loadavg_after']} (other processes on "
          "the machine slow the pool down)")
    with open("bench_campaigns.json", "w") as fh:
        json.dump(out, fh, indent=2)
    print("\nwrote bench_campaigns.json")


_THROUGHPUT = r"""
import json, resource, sys, time
from robustrack.campaigns import ParameterUncertainty, monte_carlo
from robustrack.scenarios.campaign import ScenarioLoop, campaign_settings, resolve_campaign_scenario
n = int(sys.argv[1])
sc = resolve_campaign_scenario("triple-pendulum")
unc = ParameterUncertainty("m", spread=0.1, seed=0)
monte_carlo(ScenarioLoop(sc), unc, 4, settings=campaign_settings(sc), progress=None, workers=2)  # warm: kernels
before = resource.getrusage(resource.RUSAGE_CHILDREN), resource.getrusage(resource.RUSAGE_SELF)
t = time.perf_counter()
res = monte_carlo(ScenarioLoop(sc), unc, n, settings=campaign_settings(sc), progress=None, workers=2)
wall = time.perf_counter() - t
after = resource.getrusage(resource.RUSAGE_CHILDREN), resource.getrusage(resource.RUSAGE_SELF)
cpu_all = sum(a.ru_utime + a.ru_stime - b.ru_utime - b.ru_stime for a, b in zip(after, before))
s = res.summary()
print(json.dumps({"wall_s": wall, "sample_cpu_ms": 1e3 * s["cpu_s"] / n, "all_cpu_ms": 1e3 * cpu_all / n,
                  "max_abs_e": s["max_abs_e"]["max"], "held": s["held_fraction"], "failed": s["failed"]}))
"""


def throughput(n, repeat):
    """The campaign target of issue 31 (module docstring), this checkout and ``ROBUSTRACK_BASELINE``."""
    trees = [("this checkout", None)]
    if os.environ.get("ROBUSTRACK_BASELINE"):
        trees.append(("baseline", os.environ["ROBUSTRACK_BASELINE"]))
    with open("/proc/loadavg") as fh:
        load = [fh.read().split()[:3]]
    rows = {label: [] for label, _ in trees}
    for _ in range(repeat):
        for label, tree in trees:  # interleaved: both trees see the same load
            env = dict(os.environ, **({"PYTHONPATH": str(tree)} if tree else {}))
            done = subprocess.run([sys.executable, "-c", _THROUGHPUT, str(n)], check=True, capture_output=True,
                                  text=True, env=env, cwd=tree or None)
            row = json.loads(done.stdout.strip().splitlines()[-1])
            row.update(per_sample(tree))
            rows[label].append(row)
    with open("/proc/loadavg") as fh:
        load.append(fh.read().split()[:3])
    print(f"{n}-sample ±10 % GSS Monte Carlo of triple-pendulum, pool of 2; medians of {repeat}; load average "
          f"before / after {load[0]} / {load[1]}")
    print(f"{'tree':<16}{'wall s':>9}{'CPU ms/sample':>15}{'all CPU ms/sample':>19}{'one process ms':>16}"
          f"{'max e':>12}")
    out = {"N": n, "repeat": repeat, "load": load, "runs": rows}
    for label, rs in rows.items():
        med = {k: statistics.median(r[k] for r in rs) for k in ("wall_s", "sample_cpu_ms", "all_cpu_ms", "peaks_cpu_s")}
        out[label] = med
        print(f"{label:<16}{med['wall_s']:>9.2f}{med['sample_cpu_ms']:>15.1f}{med['all_cpu_ms']:>19.1f}"
              f"{1e3 * med['peaks_cpu_s']:>16.1f}{rs[0]['max_abs_e']:>12.6g}")
    with open("bench_throughput.json", "w") as fh:
        json.dump(out, fh, indent=2)
    print("wrote bench_throughput.json")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--throughput"]:
        throughput(int(sys.argv[2]) if len(sys.argv) > 2 else 1000, int(sys.argv[3]) if len(sys.argv) > 3 else 3)
    else:
        main()
