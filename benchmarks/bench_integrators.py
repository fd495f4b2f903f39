"""What a campaign sample's controlled solve costs, by method and by control function, at equal accuracy.

The 10-s triple pendulum of the catalog (GSS, one ±10 % sample of the masses, seed 0), its controlled actual
system (W 5.2.17) on robustrack's compiled right-hand side and exact Jacobian, solved by

- the compiled BDF a campaign runs (``simulate.track``: its own counts) at the scenario's rtol 1e-8;
- scipy's BDF (the compiled one's algorithm but for the Newton iteration's tolerance: 0.03 of the error
  tolerance in the compiled one, √rtol in scipy's: :mod:`robustrack.compiled.bdf`), Radau (order 5) and
  LSODA, each at the tolerances given below, on the same compiled functions;

for each control function f of the GSS law. Accuracy: the relative error of the seed's metrics max‖e‖∞ and
max‖ė‖∞ on the scenario's output grid against Radau at rtol 1e-12 (atol 1e-14). Prints right-hand sides,
Jacobians, LU decompositions, the two errors and the CPU time (the compiled BDF's is a whole ``track``: the
solve and the run's assessment; scipy's pays Python's call per right-hand side).

What it shows (issue 31, item 5): the number of right-hand sides is set by the control function, not by the
method. With the signed-quadratic f (the seed's), s follows the quasi-static s ~ sign(d)·√|d| of the
disturbance d and is near-singular at each of d's zero crossings, and the loop's stiffness ∂u/∂ė ∝ |s|
swings over orders of magnitude within a step; tanh and saturation are linear at 0 and need ~1.9× fewer
right-hand sides and ~6× fewer Jacobians at the same rtol with the compiled BDF (scipy's BDF: ~2.4× and ~7×).
Where the method does matter: the compiled BDF's Newton tolerance (0.03 of the error tolerance) against
scipy's (√rtol); the rows "compiled BDF" and "scipy BDF" compare the two at the same rtol, with their errors.

Run ``python benchmarks/bench_integrators.py [F ...]`` (default: signed-quadratic tanh saturation cubic);
the first run of a machine compiles the kernels.
"""

import sys
import time

import numpy as np
from scipy.integrate import solve_ivp

from robustrack.campaigns import ParameterUncertainty
from robustrack.compiled import systems
from robustrack.scenarios.campaign import ScenarioLoop, resolve_campaign_scenario
from robustrack.tracking import simulate

#: (method, rtol) solved with scipy on the compiled functions; atol 1e-12 as the scenario's
TRIALS = (("BDF", 1e-8), ("Radau", 1e-6), ("Radau", 1e-7), ("LSODA", 1e-8))


def sample(f):
    """The nominal run, one actual plant, x(0), the compiled controlled system's f(t, x) and J(t, x), and the
    counter of f's calls."""
    loop = ScenarioLoop(resolve_campaign_scenario("triple-pendulum", f=f))()
    run = loop.nominal_run()
    unc = ParameterUncertainty("m", spread=0.1, seed=0)
    actual = unc.actual(loop.nominal, unc.draw(loop.nominal, 2)[1])
    setup = simulate.prepare(run, actual)
    L = setup.loop
    args = (run.solution.dense, L.loop.model, L.law, np.zeros(L.loop.n), False)
    system = L.loop.controlled
    count = [0]

    def rhs(t, x):
        count[0] += 1
        return systems.controlled_rhs(system, t, np.ascontiguousarray(x), *args)

    def jac(t, x):
        return systems.controlled_jac(system, t, np.ascontiguousarray(x), *args)

    return run, actual, setup.x0, rhs, jac, count


def seed_metrics(t, x, run):
    """max‖e‖∞ and max‖ė‖∞ of states x (T × 2n) at times t against the nominal solution."""
    y = run.solution(t)
    n = y.shape[1] // 2
    return np.abs(x[:, :n] - y[:, :n]).max(), np.abs(x[:, n:2 * n] - y[:, n:]).max()


def main(functions):
    print(f"{'f':<17}{'method':<16}{'rtol':>7}{'RHS':>8}{'Jac':>7}{'LU':>7}{'err e':>10}"
          f"{'err ė':>10}{'CPU s':>8}")
    for f in functions:
        run, actual, x0, rhs, jac, count = sample(f)
        problem = run.problem
        t_eval = problem.t_eval
        ref = solve_ivp(rhs, problem.t_span, x0, method="Radau", rtol=1e-12, atol=1e-14, jac=jac, t_eval=t_eval)
        truth = seed_metrics(ref.t, ref.y.T, run)

        def row(label, rtol, nfev, njev, nlu, metrics, cpu):
            err = [abs(m / r - 1.0) for m, r in zip(metrics, truth)]
            print(f"{f:<17}{label:<16}{rtol:>7.0e}{nfev:>8d}{njev:>7d}{nlu:>7d}{err[0]:>10.1e}"
                  f"{err[1]:>10.1e}{cpu:>8.2f}", flush=True)

        simulate.track(run, actual, raise_on_failure=False)  # load the kernels
        c = time.process_time()
        res = simulate.track(run, actual, raise_on_failure=False)
        cpu = time.process_time() - c
        st = res.solver
        row("compiled BDF", problem.rtol, st["nfev"], st["njev"], st["nlu"], seed_metrics(res.t, np.hstack(
            [res.qc, res.qcd]), run), cpu)
        for method, rtol in TRIALS:
            count[0] = 0
            c = time.process_time()
            sol = solve_ivp(rhs, problem.t_span, x0, method=method, rtol=rtol, atol=problem.atol,
                            jac=jac, t_eval=t_eval)
            cpu = time.process_time() - c
            row(f"scipy {method}", rtol, count[0], int(sol.njev), int(sol.nlu), seed_metrics(sol.t, sol.y.T, run),
                cpu)


if __name__ == "__main__":
    main(sys.argv[1:] or ["signed-quadratic", "tanh", "saturation", "cubic"])
