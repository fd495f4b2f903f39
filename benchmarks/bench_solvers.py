"""Which integrator for the compensated (stiff) loop? W §7.3's first run, timed.

Runs the triple pendulum with GSS (signed-quadratic f, δm = (0.1, −0.2, 0.3)) over a
horizon (default 2 s; pass another as argv[1]) with each scipy method, prints nfev,
wall time, max|e|, and the ratio of wall time to LSODA measured in the same run.

    python benchmarks/bench_solvers.py [T_END]
"""

import sys
import time

from robustrack.constraints import pendulum_energy_constraint
from robustrack.controllers import GSS
from robustrack.plants import triple_pendulum
from robustrack.simulate import simulate_tracking


def main(t_end=2.0, methods=("LSODA", "BDF", "Radau", "DOP853", "RK45")):
    nominal = triple_pendulum()
    actual = nominal.replace(m=(1.1, 1.8, 3.3))
    con = pendulum_energy_constraint(L1=1.0, g=9.81, gain=0.02, n=3, m1=1.0)
    rows = []
    for method in methods:
        start = time.perf_counter()
        r = simulate_tracking(nominal, actual, con, GSS(), [1, 0, 0], [0.001, 0, 0], (0, t_end),
                              method=method, raise_on_failure=False)
        wall = time.perf_counter() - start
        rows.append((method, r.solver["nfev"], r.solver["njev"], wall, r.metrics.get("max_abs_e"),
                     r.metrics.get("max_abs_edot"), r.success))
    base = next(w for m, _, _, w, *_ in rows if m == "LSODA")
    print(f"horizon {t_end} s, rtol 1e-8, atol 1e-12")
    print(f"{'method':<8} {'nfev':>8} {'njev':>6} {'wall_s':>8} {'ratio':>6} {'max|e|':>10} {'max|edot|':>10} ok")
    for method, nfev, njev, wall, e, ed, ok in rows:
        print(f"{method:<8} {nfev:>8} {njev:>6} {wall:>8.2f} {wall / base:>6.2f} {e:>10.3e} {ed:>10.3e} {ok}")


if __name__ == "__main__":
    main(float(sys.argv[1]) if len(sys.argv) > 1 else 2.0)
