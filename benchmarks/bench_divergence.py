"""What a diverging sample of a campaign costs, with and without the hold-period divergence criterion.

Issue 32 item 3: ``robustrack montecarlo triple-pendulum --samples 4 --set compensator.sample_period=0.5
--set simulation.t_end=2`` took 27 s of CPU per sample, each ending at the 20-million evaluation limit or a
1e-14-s step. :func:`robustrack.tracking.integrate.hold_budget` now ends such a run in the stretch where its
motion leaves the nominal's time scale. This times, in one run, the same sample both ways (the criterion
off: ``HOLD_STEP_RATIO = inf``): CPU seconds of the controlled solve of one diverging sample, median of 3, and
the whole 4-sample campaign of the issue (2 workers) with the criterion, CPU of this process and its workers.

Run ``python benchmarks/bench_divergence.py`` (about 1.5 minutes: the baseline is the slow part).
"""

import math
import resource
import statistics
import subprocess
import sys
import time

from robustrack.errors import SolverError
from robustrack.scenarios import load_scenario
from robustrack.tracking import defaults

SETS = ["compensator.sample_period=0.5", "simulation.t_end=2"]


def one_sample_cpu(problem, run) -> tuple[float, int]:
    """CPU seconds and evaluations of the controlled solve of the diverging sample."""
    start = time.process_time()
    try:
        problem.track(run)
    except SolverError as exc:
        return time.process_time() - start, exc.partial.info["solvers"]["controlled"]["nfev"]
    raise AssertionError("the sample did not diverge")


def main() -> None:
    problem = load_scenario("triple-pendulum", SETS).build()
    run = problem.nominal_run()
    one_sample_cpu(problem, run)  # warm: kernels loaded
    rows = {}
    for label, ratio in (("criterion off (baseline)", math.inf), ("criterion on", defaults.HOLD_STEP_RATIO)):
        saved = defaults.HOLD_STEP_RATIO
        defaults.HOLD_STEP_RATIO = ratio
        try:
            runs = [one_sample_cpu(problem, run) for _ in range(3)]
        finally:
            defaults.HOLD_STEP_RATIO = saved
        rows[label] = (statistics.median(r[0] for r in runs), runs[0][1])
    base = rows["criterion off (baseline)"][0]
    print("one diverging sample (triple pendulum, u held 0.5 s, 2 s), controlled solve, median of 3:")
    for label, (cpu, nfev) in rows.items():
        print(f"  {label:<26} {cpu:7.2f} s CPU  {nfev:>12,} right-hand sides  ({cpu / base:.3f} of the baseline)")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run([sys.executable, "-m", "robustrack.cli", "montecarlo", "triple-pendulum", "--samples", "4",
                           "--workers", "2", *[x for s in SETS for x in ("--set", s)]], capture_output=True, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    failed = sum(line.strip().startswith("failed: sample") for line in done.stdout.splitlines())
    print(f"the issue's 4-sample campaign (2 workers): exit {done.returncode}, {failed} samples failed by name, "
          f"{cpu:.1f} s CPU in all (the command, its workers, imports and kernel loading)")


if __name__ == "__main__":
    main()
