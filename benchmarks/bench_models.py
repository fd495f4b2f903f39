"""The numpy evaluation of the catalog's models: lambdified from their one symbolic source vs hand-written.

Each seed plant, seed constraint, the n-link pendulum and its energy requirement is written once, as
sympy expressions, and its numpy ``mass_matrix``, ``given_force``, ``matrices`` are lambdified from them
(:mod:`robustrack.plants.symbolic_model`). Until commit 710f565 they were also written by hand in numpy;
this benchmark loads those hand-written modules from git (``git show 710f565:…``, executed as modules of
``robustrack.plants``, so no copy of them lives in the package) and times both in one run:

- the cost of one call at one state (what the numpy reference's integrators pay per right-hand side),
- one call on a batch of 1000 states (post-processing, Γ over a trajectory),
- one call on 200 sampled plants × 50 states (Monte Carlo's Γ estimate), for the pendulum,

as the fastest of 7 interleaved ``timeit`` runs, and the ratio generated / hand-written. It also measures the
one-time cost the generated evaluation adds to a fresh process: importing sympy and lambdifying one
structure on first use (a fresh interpreter per row).

    python benchmarks/bench_models.py          (about 20 s; needs git and the repository's history)
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import textwrap
import timeit
from pathlib import Path

import numpy as np

import robustrack.plants as plants
from robustrack.plants import examples

ROOT = Path(__file__).resolve().parents[1]
BASE = "710f565"  # main before the models were written once


def _old_module(name: str):
    """``robustrack/plants/<name>.py`` of BASE, executed as a module of the robustrack.plants package."""
    src = subprocess.run(["git", "-C", str(ROOT), "show", f"{BASE}:robustrack/plants/{name}.py"],
                         capture_output=True, text=True, check=True).stdout
    spec = importlib.util.spec_from_loader(f"robustrack.plants._handwritten_{name}", loader=None)
    module = importlib.util.module_from_spec(spec)
    module.__package__ = "robustrack.plants"
    module.__file__ = str(ROOT / "robustrack" / "plants" / f"{name}.py")  # read by the old key's file hash only
    sys.modules[spec.name] = module
    exec(compile(src, f"{BASE}:robustrack/plants/{name}.py", "exec"), module.__dict__)
    return module


def _pair(old, new, number: int, repeat: int = 7) -> tuple[float, float]:
    """Seconds per call of ``old()`` and ``new()``: the fastest of ``repeat`` runs of ``number`` calls, the two
    interleaved run by run (the machine is shared: the minimum is the cost without the others' load)."""
    t_old, t_new = [], []
    for _ in range(repeat):
        t_old.append(timeit.timeit(old, number=number) / number)
        t_new.append(timeit.timeit(new, number=number) / number)
    return min(t_old), min(t_new)


def _cases(old_examples, old_pendulum):
    """(name, new plant, old plant, new constraint, old constraint)."""
    for name, cls in examples.EXAMPLE_PLANTS.items():
        new, old = cls(), old_examples.EXAMPLE_PLANTS[name]()
        yield name, new, old, examples.EXAMPLE_CONSTRAINTS[name](new), old_examples.EXAMPLE_CONSTRAINTS[name](old)
    new, old = plants.triple_pendulum(), old_pendulum.triple_pendulum()
    yield ("triple-pendulum", new, old, plants.pendulum_energy_constraint(),
           old_pendulum.pendulum_energy_constraint())


def per_call_table():
    old_examples, old_pendulum = _old_module("examples"), _old_module("pendulum")
    rng = np.random.default_rng(0)
    print(f"{'model':24s} {'what':10s} {'hand µs':>9s} {'gen µs':>9s} {'ratio':>6s}")
    ratios = []
    for name, new, old, cnew, cold in _cases(old_examples, old_pendulum):
        n = new.n
        for label, shape in (("one", (n,)), ("1000", (1000, n))):
            q, qd = rng.normal(size=(2,) + shape)
            if name == "quaternion-rigid-body":
                q = q / np.linalg.norm(q, axis=-1, keepdims=True)
            calls = {"M": lambda p: p.mass_matrix(q, 0.3), "Q": lambda p: p.given_force(q, qd, 0.3)}
            for what, call in calls.items():
                call(new)  # first use lambdifies: not timed
                t_old, t_new = _pair(lambda: call(old), lambda: call(new), 200 if label == "one" else 20)
                ratios.append((name, f"{what} {label}", t_new / t_old))
                print(f"{name:24s} {what + ' ' + label:10s} {1e6 * t_old:9.1f} {1e6 * t_new:9.1f} {t_new / t_old:6.2f}")
            cnew.matrices(q, qd, 0.3)
            t_old, t_new = _pair(lambda: cold.matrices(q, qd, 0.3), lambda: cnew.matrices(q, qd, 0.3),
                                 200 if label == "one" else 20)
            ratios.append((name, f"A,b {label}", t_new / t_old))
            print(f"{name:24s} {'A,b ' + label:10s} {1e6 * t_old:9.1f} {1e6 * t_new:9.1f} {t_new / t_old:6.2f}")
    # Monte Carlo's shape: 200 sampled pendulums × 50 states
    m = np.array([1.0, 2.0, 3.0]) * rng.uniform(0.9, 1.1, (200, 1, 3))
    new, old = plants.triple_pendulum().replace(m=m), old_pendulum.triple_pendulum().replace(m=m)
    q, qd = rng.normal(size=(2, 50, 3))
    for what, call in (("M 200x50", lambda p: p.mass_matrix(q)), ("Q 200x50", lambda p: p.given_force(q, qd))):
        call(new)
        t_old, t_new = _pair(lambda: call(old), lambda: call(new), 10)
        ratios.append(("triple-pendulum", what, t_new / t_old))
        print(f"{'triple-pendulum':24s} {what:10s} {1e6 * t_old:9.1f} {1e6 * t_new:9.1f} {t_new / t_old:6.2f}")
    r = np.array([x[2] for x in ratios])
    print(f"ratio generated / hand-written over {r.size} rows: median {np.median(r):.2f}, "
          f"min {r.min():.2f}, max {r.max():.2f} ({ratios[int(np.argmax(r))][:2]})")


FIRST_USE = textwrap.dedent("""
    import sys, time
    import numpy as np
    from robustrack.plants import {factory}
    p = {factory}()
    q = np.zeros(p.n)
    t0 = time.perf_counter(); p.mass_matrix(q); p.given_force(q, q); t1 = time.perf_counter()
    p.mass_matrix(q + 0.1); t2 = time.perf_counter()
    print(f"{{1e3 * (t1 - t0):.0f}} {{1e3 * (t2 - t1):.3f}} {{'sympy' in sys.modules}}")
""")


def first_use_table():
    print("\nfirst use in a fresh process (sympy not yet imported): M and Q of one structure")
    for factory in ("triple_pendulum", "CoupledDuffing", "QuaternionRigidBody"):
        out = subprocess.run([sys.executable, "-c", FIRST_USE.format(factory=factory)], capture_output=True,
                             text=True, check=True).stdout.split()
        print(f"  {factory:22s} first M+Q {out[0]:>5s} ms (sympy import + derivation + lambdify), "
              f"then {out[1]} ms per M")


if __name__ == "__main__":
    per_call_table()
    first_use_table()
