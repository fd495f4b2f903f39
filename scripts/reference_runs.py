"""Hash every trajectory array of the eleven reference runs, to check a change leaves them bit-identical.

The eleven runs (the ones issues 16–19 check against): GSS, GD, GD-bar and SMC on the triple
pendulum, a 1-ms sample-and-hold GSS (0.3 s), the Duffing tracking, the unconstrained (UC)
triple pendulum, the underactuated one, Appell's particle, the Chaplygin skate and the rolling
wheel — each through ``robustrack run NAME --save`` (the CLI, so the whole path is covered).

Usage::

    python scripts/reference_runs.py --out before.json          # on the old commit
    python scripts/reference_runs.py --out after.json --compare before.json

Hashes depend on the machine and the numpy/BLAS build, so compare runs made on one machine.
With ``--compare`` the exit status is 1 when any array differs, and the differing arrays are
listed (keep the runs with ``--keep`` to look at the differences themselves).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

#: name → the ``robustrack run`` arguments after the scenario name.
RUNS = {
    "gss": ["triple-pendulum", "--compensator", "gss"],
    "gd": ["triple-pendulum", "--compensator", "gd"],
    "gdbar": ["triple-pendulum", "--compensator", "gdbar"],
    "smc": ["triple-pendulum", "--compensator", "smc"],
    "hold-1ms": ["triple-pendulum", "--set", "compensator.sample_period=0.001", "--set", "simulation.t_end=0.3"],
    "duffing": ["duffing-tracking"],
    "uc": ["triple-pendulum-unconstrained"],
    "underactuated": ["triple-pendulum-underactuated"],
    "appell": ["appell-particle"],
    "skate": ["chaplygin-skate"],
    "wheel": ["rolling-wheel"],
}


def run_all(folder: Path) -> dict:
    """Run each reference run with ``--save`` into ``folder``; return {run: {array: (sha256, npz path)}}."""
    out = {}
    for name, args in RUNS.items():
        path = folder / f"{name}.npz"
        cmd = [sys.executable, "-m", "robustrack.cli", "run", *args, "--save", str(path)]
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode != 0:
            raise SystemExit(f"{name}: {' '.join(cmd[2:])} failed ({done.returncode}): {done.stderr.strip()}")
        with np.load(path, allow_pickle=False) as z:
            out[name] = {k: hashlib.sha256(np.ascontiguousarray(z[k]).tobytes()).hexdigest() for k in sorted(z.files)}
        print(f"{name}: {len(out[name])} arrays", flush=True)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="JSON file for the hashes")
    ap.add_argument("--compare", help="an earlier --out file to compare with")
    ap.add_argument("--keep", help="folder to keep the .npz runs in (default: a temporary one)")
    a = ap.parse_args(argv)
    if a.keep:
        folder = Path(a.keep)
        folder.mkdir(parents=True, exist_ok=True)
        hashes = run_all(folder)
    else:
        with tempfile.TemporaryDirectory() as tmp:
            hashes = run_all(Path(tmp))
    Path(a.out).write_text(json.dumps(hashes, indent=1, sort_keys=True))
    if not a.compare:
        return 0
    old = json.loads(Path(a.compare).read_text())
    differ = [(run, k) for run in sorted(set(old) | set(hashes))
              for k in sorted(set(old.get(run, {})) | set(hashes.get(run, {})))
              if old.get(run, {}).get(k) != hashes.get(run, {}).get(k)]
    total = sum(len(v) for v in hashes.values())
    if not differ:
        print(f"all {total} arrays of {len(hashes)} runs bit-identical")
        return 0
    print(f"{len(differ)} of {total} arrays differ:")
    for run, k in differ:
        print(f"  {run}.{k}")
    return 1


if __name__ == "__main__":
    raise SystemExit(main())
