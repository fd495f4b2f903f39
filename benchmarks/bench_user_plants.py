"""A two-link arm written as the user's own functions: compiled, against the same arm as a LagrangianPlant.

The same problem three ways (issue 28 item 2): the arm of ``examples/own_arm_circle.py`` (forearm 20 %
heavier in the actual plant), its tip on a circle (``TaskSpaceTrajectory``, stabilized ω = 10 rad/s), GSS
(K = 10, Γ′ = 2, β0 = 10, α0 = 0.5), 6.3 s, n_points = 401:

- ``functions``: ``Plant.from_functions`` with M and Q written for one state in numba's numpy subset — the
  compiled loop wraps them with numba (derivatives by compiled central differences);
- ``lagrangian``: ``LagrangianPlant.from_energies`` of the same arm (sympy derives and generates M, Q and
  the exact derivatives);
- ``numpy``: the functions plant on the numpy reference (``backend="numpy"``: what every function plant ran
  on before).

Each is run once to compile (the per-structure compile of the functions is timed and printed: a new
process with a cold structure cache), then ``REPEATS`` times warm; printed are the medians, the ratios
against ``lagrangian`` measured in the same run, and the largest difference of the controlled trajectories
(the same problem: agreement to the tolerances).

Then a closed-loop ``monte_carlo`` over the forearm mass (±20 %, ``SAMPLES`` samples, one worker): the CPU of
one sample (``SampleRecord.cpu_s``, median), compiled against the numpy reference. A campaign sample integrates
the controlled system only (``TrackingProblem.peaks``: the uncompensated copy is a single run's comparison,
never a sample's cost).

Run ``python benchmarks/bench_user_plants.py [REPEATS] [SAMPLES]``.
"""

import statistics
import sys
import time
import warnings

import numpy as np
import sympy as sp

from robustrack.compiled.loop import compiled_loop
from robustrack.constraints import Stabilization
from robustrack.controllers import GSS
from robustrack.plants import LagrangianPlant, Plant
from robustrack.requirements import TaskSpaceTrajectory, consistent_initial_state
from robustrack.tracking import TrackingProblem

REPEATS = int(sys.argv[1]) if len(sys.argv) > 1 else 3
SAMPLES = int(sys.argv[2]) if len(sys.argv) > 2 else 9
T_END = 6.3
PARAMS = dict(m1=1.0, m2=0.8, L1=0.5, lc1=0.25, lc2=0.2, I1=1.0 * 0.5**2 / 12, I2=0.8 * 0.4**2 / 12, g=9.81, b=0.05)
L2 = 0.4


def mass_matrix(q, m1, m2, L1, lc1, lc2, I1, I2):
    c2 = np.cos(q[1])
    m11 = I1 + I2 + m1 * lc1**2 + m2 * (L1**2 + lc2**2 + 2 * L1 * lc2 * c2)
    m12 = I2 + m2 * (lc2**2 + L1 * lc2 * c2)
    return np.array([[m11, m12], [m12, I2 + m2 * lc2**2]])


def given_force(q, qd, m1, m2, L1, lc1, lc2, g, b):
    h = m2 * L1 * lc2 * np.sin(q[1])
    g2 = m2 * lc2 * g * np.cos(q[0] + q[1])
    g1 = (m1 * lc1 + m2 * L1) * g * np.cos(q[0]) + g2
    return np.array([h * qd[1] * (2 * qd[0] + qd[1]) - g1 - b * qd[0], -h * qd[0] ** 2 - g2 - b * qd[1]])


def functions_plant():
    return Plant.from_functions(mass_matrix, given_force, params=PARAMS, names=["shoulder", "elbow"],
                                kinds=["angle", "angle"])


def lagrangian_plant():
    q1, q2, u1, u2 = sp.symbols("q1 q2 u1 u2")
    m1, m2, L1, lc1, lc2, I1, I2, g, b = sp.symbols("m1 m2 L1 lc1 lc2 I1 I2 g b", positive=True)
    T = (I1 + m1 * lc1**2) * u1**2 / 2 + I2 * (u1 + u2) ** 2 / 2 + m2 * (
        L1**2 * u1**2 + lc2**2 * (u1 + u2) ** 2 + 2 * L1 * lc2 * u1 * (u1 + u2) * sp.cos(q2)) / 2
    V = (m1 * lc1 + m2 * L1) * g * sp.sin(q1) + m2 * lc2 * g * sp.sin(q1 + q2)
    return LagrangianPlant.from_energies([q1, q2], T, V, forces=[-b * u1, -b * u2],
                                         params={m1: 1.0, m2: 0.8, L1: 0.5, lc1: 0.25, lc2: 0.2,
                                                 I1: PARAMS["I1"], I2: PARAMS["I2"], g: 9.81, b: 0.05},
                                         qd=[u1, u2], kinds=["angle", "angle"])


def tip(q):
    sin, cos = (sp.sin, sp.cos) if isinstance(q[0], sp.Basic) else (np.sin, np.cos)
    return [PARAMS["L1"] * cos(q[0]) + L2 * cos(q[0] + q[1]), PARAMS["L1"] * sin(q[0]) + L2 * sin(q[0] + q[1])]


def problem(plant, backend="auto"):
    t = sp.Symbol("t")
    req = TaskSpaceTrajectory(tip, [0.45 + 0.15 * sp.cos(t), 0.25 + 0.15 * sp.sin(t)], names=plant.coordinates,
                              stabilization=Stabilization.second_order(xi=1.0, omega=10.0))
    q0, qd0 = consistent_initial_state(req, q_guess=[0.2, 1.5], qd_guess=[0.0, 0.0])
    gss = GSS(K=10.0, gamma_prime=2.0, beta0=10.0, alpha0=0.5, sigma=1.0)
    return TrackingProblem(plant, req, gss, q0, qd0, (0.0, T_END), actual=plant.replace(m2=1.2 * PARAMS["m2"]),
                           n_points=401, backend=backend)


def timed(make, repeats):
    pb = make()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        first = pb.simulate()
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            pb.simulate()
            times.append(time.perf_counter() - start)
    return statistics.median(times), first


def structure_compile_seconds(salt: float) -> float:
    """The per-structure compile of the functions (M, Q and the three differenced derivatives; kernels cached):
    a closure capturing ``salt`` is a structure no cache holds yet (the key is the functions' content)."""

    def M(q, m1, m2, L1, lc1, lc2, I1, I2):
        return mass_matrix(q, m1, m2, L1, lc1, lc2, I1, I2) + 0.0 * salt

    plant = Plant.from_functions(M, given_force, params=PARAMS, names=["shoulder", "elbow"], kinds=["angle", "angle"])
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        compiled_loop(plant, plant, None)
        compiled_loop(plant, plant, None, jacobian=True)
    return time.perf_counter() - start


def sample_cpu(backend: str) -> float:
    """The median CPU of one Monte Carlo sample (the controlled system and its peaks)."""
    from robustrack.campaigns import ParameterUncertainty, monte_carlo

    pb = problem(functions_plant(), backend=backend)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        camp = monte_carlo(pb, ParameterUncertainty("m2", spread=0.2, seed=1), samples=SAMPLES, workers=1,
                           progress=None)
    return statistics.median(r.cpu_s for r in camp.records)


def main():
    salt = time.time()
    compile_s = statistics.median(structure_compile_seconds(salt + i) for i in range(3))
    lag, r_lag = timed(lambda: problem(lagrangian_plant()), REPEATS)
    fun, r_fun = timed(lambda: problem(functions_plant()), REPEATS)
    num, r_num = timed(lambda: problem(functions_plant(), backend="numpy"), max(1, REPEATS // 3))
    diff = max(np.max(np.abs(r.qc - r_lag.qc)) for r in (r_fun, r_num))
    print(f"2-link arm, {T_END} s, GSS: median of {REPEATS} warm runs")
    print(f"  LagrangianPlant (generated)        {lag:7.3f} s   1.00")
    print(f"  from_functions, compiled (numba)   {fun:7.3f} s   {fun / lag:5.2f}")
    print(f"  from_functions, numpy reference    {num:7.3f} s   {num / lag:5.2f}")
    print(f"  largest |qc difference| between the three: {diff:.2e} rad")
    cpu_c, cpu_n = sample_cpu("auto"), sample_cpu("numpy")
    print(f"  monte_carlo sample (controlled system only), median CPU of {SAMPLES}: compiled {1e3 * cpu_c:.0f} ms, "
          f"numpy {1e3 * cpu_n:.0f} ms ({cpu_n / cpu_c:.0f}x)")
    print(f"  compiling a new structure of functions (M, Q, 3 differenced derivatives): {compile_s:.2f} s "
          "(median of 3)")


if __name__ == "__main__":
    main()
