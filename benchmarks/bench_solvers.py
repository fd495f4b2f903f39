"""Which integrator for the compensated (stiff) loop? W §7.3's first run, timed.

Runs the triple pendulum with GSS (signed-quadratic f, δm = (0.1, −0.2, 0.3)) over a
horizon (default 2 s; pass another as argv[1]) with each scipy method — the implicit ones
with their own finite-difference Jacobian ("solver") and with the batched one
("batched": all columns in one vectorized right-hand-side call) — and prints nfev (right-
hand-side calls, a batched Jacobian counting as one), wall time, max|e|, and the ratio of
wall time to LSODA with its own Jacobian, measured in the same run.

    python benchmarks/bench_solvers.py [T_END]
"""

import sys
import time

from robustrack.plants import pendulum_energy_constraint
from robustrack.controllers import GSS
from robustrack.plants import triple_pendulum
from robustrack.tracking import simulate_tracking


VARIANTS = (("LSODA", "solver"), ("LSODA", "batched"), ("BDF", "solver"), ("BDF", "batched"),
            ("Radau", "solver"), ("Radau", "batched"), ("DOP853", "—"), ("RK45", "—"))


def main(t_end=2.0, variants=VARIANTS):
    nominal = triple_pendulum()
    actual = nominal.replace(m=(1.1, 1.8, 3.3))
    con = pendulum_energy_constraint(L1=1.0, g=9.81, gain=0.02, n=3, m1=1.0)
    rows = []
    for method, jac in variants:
        start = time.perf_counter()
        r = simulate_tracking(nominal, actual, con, GSS(), [1, 0, 0], [0.001, 0, 0], (0, t_end),
                              method=method, raise_on_failure=False,
                              jacobian="solver" if jac == "—" else jac)
        wall = time.perf_counter() - start
        rows.append((method, jac, r.solver["nfev"], r.solver["njev"], wall, r.metrics.get("max_abs_e"),
                     r.metrics.get("max_abs_edot"), r.success))
    base = next(w for m, j, _, _, w, *_ in rows if (m, j) == ("LSODA", "solver"))
    print(f"horizon {t_end} s, rtol 1e-8, atol 1e-12; ratio = wall / wall(LSODA, solver's own Jacobian)")
    print(f"{'method':<8} {'jacobian':<8} {'nfev':>8} {'njev':>6} {'wall_s':>8} {'ratio':>6} {'max|e|':>10} "
          f"{'max|edot|':>10} ok")
    for method, jac, nfev, njev, wall, e, ed, ok in rows:
        print(f"{method:<8} {jac:<8} {nfev:>8} {njev:>6} {wall:>8.2f} {wall / base:>6.2f} {e:>10.3e} "
              f"{ed:>10.3e} {ok}")


if __name__ == "__main__":
    main(float(sys.argv[1]) if len(sys.argv) > 1 else 2.0)
