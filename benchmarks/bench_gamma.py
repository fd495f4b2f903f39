"""The Γ Monte Carlo of W 7.3 (Figs. 7.1–7.8), timed against a per-sample loop.

Simulates the nominal triple pendulum under the energy constraint (scenario
"triple-pendulum-energy", W's 10 s horizon, 1001 output times), then for N = 1014
and 10 028 samples at ±10 % and ±50 % of each mass times
:func:`robustrack.uncertainty.estimate_gamma` (one array operation per block of
(sample, time) pairs) and prints the quantiles of max_t ‖δq‖∞ (exact W 5.3.5,
first order W 5.3.10, bound W 5.3.11).

Baselines, measured in the same run on a subset of samples and extrapolated
linearly to N (their per-sample cost does not depend on N):

* ``loop/sample``: a Python loop over samples, each vectorized over time with
  numpy.linalg (the obvious implementation);
* ``loop/sample×time``: a Python loop over samples and times (one 3 × 3 solve at
  a time, as a direct transcription of W's formulas would do).

The baselines' results on their subset are checked against the batched ones.

    python benchmarks/bench_gamma.py [--t-end 10] [--seed 0] [--subset 40]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from robustrack.scenarios import load_scenario
from robustrack.tracking import simulate_constrained
from robustrack.uncertainty import estimate_gamma, sample_parameters

SIZES = (1014, 10028)
SPREADS = (0.1, 0.5)
KEYS = ("min", "median", "p95", "p99", "max")


def loop_per_sample(nominal, traj, values):
    """max_t ‖δq‖∞ (exact, first order): Python loop over samples, numpy over time."""
    M, Q = nominal.mass_matrix(traj.q), nominal.given_force(traj.q, traj.qd)
    F = Q + traj.Qc
    out = np.zeros((len(values), 2))
    for s, value in enumerate(values):
        actual = nominal.replace(m=value)
        M_a, Q_a = actual.mass_matrix(traj.q), actual.given_force(traj.q, traj.qd)
        exact = np.linalg.solve(M_a, (Q_a + traj.Qc)[..., None]) - np.linalg.solve(M, F[..., None])
        Minv = np.linalg.inv(M)
        first = -Minv @ (M_a - M) @ Minv @ F[..., None] + Minv @ (Q_a - Q)[..., None]
        out[s] = np.abs(exact).max(), np.abs(first).max()
    return out


def loop_per_sample_and_time(nominal, traj, values):
    """Same, with a Python loop over samples AND times."""
    out = np.zeros((len(values), 2))
    for s, value in enumerate(values):
        actual = nominal.replace(m=value)
        for q, qd, Qc in zip(traj.q, traj.qd, traj.Qc):
            M, Q = nominal.mass_matrix(q), nominal.given_force(q, qd)
            M_a, Q_a = actual.mass_matrix(q), actual.given_force(q, qd)
            exact = np.linalg.solve(M_a, Q_a + Qc) - np.linalg.solve(M, Q + Qc)
            Minv = np.linalg.inv(M)
            first = -Minv @ (M_a - M) @ Minv @ (Q + Qc) + Minv @ (Q_a - Q)
            out[s] = np.maximum(out[s], (np.abs(exact).max(), np.abs(first).max()))
    return out


def timed(fn, *args):
    start = time.perf_counter()
    result = fn(*args)
    return result, time.perf_counter() - start


def main(t_end=10.0, seed=0, subset=40):
    scenario = load_scenario("triple-pendulum-energy", [f"simulation.t_end={t_end}"])
    problem = scenario.build()
    sim = scenario.config["simulation"]
    traj, traj_wall = timed(
        lambda: simulate_constrained(problem.plant, problem.constraint, problem.q0, problem.qd0, problem.t_span,
                                     n_points=sim["n_points"], method=sim["method"], rtol=sim["rtol"],
                                     atol=sim["atol"]))
    nominal = problem.plant
    T = traj.t.size
    print(f"triple-pendulum-energy: horizon {t_end} s, {T} times, nominal trajectory {traj_wall:.2f} s")

    # baselines: cost per sample, from a subset
    draws = sample_parameters(nominal.m, subset, spread=0.1, seed=seed)
    ref, wall_loop = timed(loop_per_sample, nominal, traj, draws.values)
    few = max(2, subset // 20)
    ref2, wall_loop2 = timed(loop_per_sample_and_time, nominal, traj, draws.values[:few])
    est = estimate_gamma(nominal, traj, draws)
    assert np.allclose(ref[:, 0], est.exact, rtol=1e-8) and np.allclose(ref[:, 1], est.first_order, rtol=1e-8)
    assert np.allclose(ref2[:, 0], est.exact[:few], rtol=1e-8)
    per_sample = {"loop/sample": wall_loop / subset, "loop/sample×time": wall_loop2 / few}
    print(f"baselines (checked equal to the batched result): loop/sample {1e3 * per_sample['loop/sample']:.1f} ms "
          f"per sample ({subset} samples), loop/sample×time {1e3 * per_sample['loop/sample×time']:.0f} ms per "
          f"sample ({few} samples)")

    print(f"\n{'N':>6} {'spread':>6} {'batched_s':>9} {'loop/sample_s':>13} {'ratio':>6} "
          f"{'loop/s×t_s':>10} {'ratio':>6}")
    results = []
    for spread in SPREADS:
        for N in SIZES:
            draws = sample_parameters(nominal.m, N, spread=spread, seed=seed)
            est = estimate_gamma(nominal, traj, draws)
            base1, base2 = per_sample["loop/sample"] * N, per_sample["loop/sample×time"] * N
            print(f"{N:>6} {spread:>6.0%} {est.wall_s:>9.2f} {base1:>13.1f} {base1 / est.wall_s:>6.1f} "
                  f"{base2:>10.0f} {base2 / est.wall_s:>6.0f}")
            results.append((N, spread, est))

    print(f"\nquantiles of max_t ‖δq(t)‖∞ (rad/s²), seed {seed}; Γ′ = 1.2 × p99(exact)")
    print(f"{'N':>6} {'spread':>6} {'form':<12}" + "".join(f"{k:>10}" for k in KEYS) + f"{'Γ′':>10}")
    for N, spread, est in results:
        summary = est.summary()
        for form in ("exact", "first_order", "analytic"):
            extra = f"{est.gamma_prime:>10.1f}" if form == "exact" else ""
            print(f"{N:>6} {spread:>6.0%} {form:<12}" + "".join(f"{summary[form][k]:>10.1f}" for k in KEYS) + extra)
        rel = (est.first_order - est.exact) / est.exact
        print(f"{'':>6} {'':>6} {'(fo−ex)/ex':<12} per sample: median {np.median(rel):+.3f}, "
              f"p1 {np.quantile(rel, 0.01):+.3f}, p99 {np.quantile(rel, 0.99):+.3f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--t-end", type=float, default=10.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--subset", type=int, default=40)
    args = parser.parse_args()
    main(args.t_end, args.seed, args.subset)
