"""Instructions per campaign sample: a load-independent measure of the triple-pendulum campaign's cost.

Wall and CPU seconds on a shared machine move by 10–20 % with the other processes' load; the number of machine
instructions a sample executes does not. This script counts them with valgrind (``cachegrind``, no cache
simulation: the ``Ir`` count alone) for one or more source trees, so two commits can be told apart by a fraction of
a per cent on a loaded machine (what ``git bisect`` of a 1.1× regression needs).

How: for each tree, a child process (``PYTHONPATH`` = the tree) builds the campaign of
``benchmarks/bench_campaigns.py --throughput`` (triple pendulum, GSS, ±10 % on the masses, seed 0), runs a
2-sample :func:`~robustrack.campaigns.monte_carlo` in this process (``workers=1``) to load the kernels, then one
campaign of ``BASE`` samples or of ``SAMPLES`` samples. Both children run under valgrind; their difference of
instructions, divided by ``SAMPLES - BASE``, is the cost of one more sample (samples ``BASE`` … ``SAMPLES - 1``
of seed 0): import, kernel loading, the nominal run and the campaign's fixed costs cancel. The sample's pickling to
a pool worker is not counted (one process, as a pool worker runs its chunk).

Kernels: every child runs with ``NUMBA_CPU_NAME=generic`` (numba keys its cache by the host CPU, and valgrind's
emulated CPU is not the host's: without it every valgrind run would compile again) and with a per-tree
``ROBUSTRACK_CACHE_DIR`` under ``--cache`` (default ``/tmp/robustrack-instructions``), filled by one child run
natively before the counted ones. Counts are for generic x86-64 code, not the host's AVX code: compare trees with
each other, not with ``bench_campaigns.py``'s milliseconds.

Usage::

    python benchmarks/bench_campaign_instructions.py [--samples 5] [--base 1] [TREE ...]

``TREE``: source checkouts (default: this one), e.g. ``git worktree add --detach /tmp/old 10caefc`` and
``/tmp/old``. Prints one line per tree (millions of instructions per sample, and the two totals) and, with
``--json FILE``, writes them. Under valgrind a sample runs ~50× slower than natively (~3 s): 5 samples and the
kernel loading take 2–4 minutes per tree on one core.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

_CHILD = r"""
import sys, warnings
warnings.simplefilter("ignore")
from robustrack.campaigns import ParameterUncertainty, monte_carlo
from robustrack.scenarios.campaign import ScenarioLoop, campaign_settings, resolve_campaign_scenario
n = int(sys.argv[1])
sc = resolve_campaign_scenario("triple-pendulum")
unc = ParameterUncertainty("m", spread=0.1, seed=0)
monte_carlo(ScenarioLoop(sc), unc, 2, settings=campaign_settings(sc), progress=None, workers=1)  # kernels
res = monte_carlo(ScenarioLoop(sc), unc, n, settings=campaign_settings(sc), progress=None, workers=1)
s = res.summary()
print("RESULT", repr(s["max_abs_e"]["max"]), s["held"], s["failed"])
"""


def _env(tree: Path, cache: Path) -> dict:
    key = hashlib.sha256(str(tree.resolve()).encode()).hexdigest()[:12]
    return dict(os.environ, PYTHONPATH=str(tree), NUMBA_CPU_NAME="generic",
                ROBUSTRACK_CACHE_DIR=str(cache / f"{tree.name}-{key}"))


def _child(tree: Path, cache: Path, n: int, valgrind: bool) -> tuple[int | None, str]:
    """Run the child with ``n`` samples; return (instructions or None, its RESULT line)."""
    cmd = [sys.executable, "-c", _CHILD, str(n)]
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "cg.out"
        if valgrind:
            cmd = ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--branch-sim=no",
                   f"--cachegrind-out-file={out}", *cmd]
        done = subprocess.run(cmd, capture_output=True, text=True, env=_env(tree, cache), cwd=tree)
        if done.returncode:
            raise SystemExit(f"{tree}: the child failed ({done.returncode}):\n{done.stderr[-3000:]}")
        result = next((ln for ln in done.stdout.splitlines() if ln.startswith("RESULT")), "")
        if not valgrind:
            return None, result
        summary = re.search(r"^summary:\s+(\d+)", out.read_text(), re.M)
        return int(summary.group(1)), result


def measure(tree: Path, cache: Path, samples: int, base: int) -> dict:
    """Instructions per sample of ``tree`` (module docstring).

    Parameters
    ----------
    tree : Path
        A source checkout (its ``robustrack`` is imported).
    cache : Path
        Parent folder of the per-tree kernel caches.
    samples, base : int
        The two campaigns' sizes (``samples > base``).

    Returns
    -------
    dict
        ``tree``, ``per_sample`` (instructions), ``total_base``, ``total_samples``, ``result_base``,
        ``result_samples`` (the campaigns' max ‖e‖∞, held and failed counts: equal across trees with equal results).
    """
    _child(tree, cache, base, valgrind=False)  # compile (or load) the generic kernels into the tree's cache
    low, r_low = _child(tree, cache, base, valgrind=True)
    high, r_high = _child(tree, cache, samples, valgrind=True)
    return {"tree": str(tree), "per_sample": (high - low) / (samples - base), "total_base": low,
            "total_samples": high, "result_base": r_low, "result_samples": r_high}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("trees", nargs="*", type=Path, default=[Path(__file__).resolve().parents[1]])
    ap.add_argument("--samples", type=int, default=5)
    ap.add_argument("--base", type=int, default=1)
    ap.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "robustrack-instructions")
    ap.add_argument("--json", type=Path)
    a = ap.parse_args(argv)
    if not a.samples > a.base >= 1:
        ap.error("--samples must exceed --base, and --base be at least 1")
    rows = []
    for tree in a.trees:
        row = measure(tree.resolve(), a.cache, a.samples, a.base)
        rows.append(row)
        print(f"{row['tree']:<40} {row['per_sample'] / 1e6:10.2f} M instructions/sample   (totals "
              f"{row['total_base'] / 1e6:.1f} M, {row['total_samples'] / 1e6:.1f} M; {row['result_samples']})",
              flush=True)
    if a.json:
        a.json.write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
