"""The price of calling a plant structure's functions through a pointer, measured.

The integrators are compiled once per machine because a structure's own functions (M, Q, their
derivatives, A, b) reach them as numba first-class functions (``cfunc`` pointers in the ``Model`` record)
instead of being compiled into them. This times, in one run, the same work both ways:

- *direct*: an ``@njit`` loop that calls the generated mass matrix of the triple pendulum compiled as a
  plain ``@njit`` function (numba compiles it into the loop and may inline it);
- *pointer*: the same loop calling the same generated source compiled as a ``cfunc``, by its address
  (what the kernels do);

and the whole kernel evaluation the integrators call millions of times (the controlled system of the
triple pendulum at one state, with its Jacobian), to put the difference in proportion.

Run ``python benchmarks/bench_indirect.py``.
"""

import time

import numba
import numpy as np

from robustrack.controllers import GSS
from robustrack.plants import pendulum_energy_constraint, triple_pendulum
from robustrack.compiled import systems as rk
from robustrack.compiled.loop import compiled_loop, kernel_law
from robustrack.compiled.backend import CompiledBackend
from robustrack.tracking.integrate import integrate_nominal

CALLS = 2_000_000


def generated_as_njit(form, n):
    """The generated M(q) function of ``form`` compiled as a plain ``@njit`` function (the same source)."""
    from robustrack.compiled.codegen import function_source

    source = function_source(form, n, "mass").replace("@cfunc(PLANT_FUNCTION, cache=True)", "@numba.njit")
    space = {"numba": numba}
    exec(compile(source, "<generated mass>", "exec"), space)
    return space["mass"]


def make_loop_direct(mass):
    @numba.njit
    def loop_direct(q, p, out, calls):
        s = 0.0
        for k in range(calls):
            q[0] = 1e-7 * k
            mass(q, q, 0.0, p, out)
            s += out[0]
        return s

    return loop_direct


@numba.njit(cache=False)
def loop_pointer(f, q, p, out, calls):
    s = 0.0
    for k in range(calls):
        q[0] = 1e-7 * k
        rk.call(f, q, q, 0.0, p, out)
        s += out[0]
    return s


def best(fn, repeat=5):
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main():
    nominal = triple_pendulum()
    actual = nominal.replace(m=(1.1, 1.8, 3.3))
    energy = pendulum_energy_constraint(L1=1.0, g=9.81, gain=0.02, n=3, m1=1.0)
    loop = compiled_loop(nominal, actual, energy)
    q, out = np.array([0.3, -0.2, 0.5]), np.empty(9)
    p = np.array(nominal.codegen().values)
    loop_direct = make_loop_direct(generated_as_njit(nominal.codegen(), 3))
    loop_direct(q, p, out, 10)
    loop_pointer(loop.model.nom_mass, q, p, out, 10)
    direct = best(lambda: loop_direct(q, p, out, CALLS))
    pointer = best(lambda: loop_pointer(loop.model.nom_mass, q, p, out, CALLS))
    print(f"M(q) of the triple pendulum, {CALLS:,} calls in a compiled loop:")
    print(f"  direct (the same source as njit) {1e9 * direct / CALLS:6.1f} ns per call")
    print(f"  by address (the cfunc)           {1e9 * pointer / CALLS:6.1f} ns per call "
          f"({1e9 * (pointer - direct) / CALLS:+.1f} ns)")

    nom = integrate_nominal(CompiledBackend(loop), [1.0, 0.0, 0.0], [0.001, 0.0, 0.0], (0.0, 0.2))
    x = np.concatenate([nom(0.1)[:3] + 1e-3, nom(0.1)[3:]])
    args = (nom.dense, loop.model, kernel_law(GSS(), 3), np.zeros(3), False)
    evals = 20_000
    rhs = best(lambda: [rk.controlled_rhs(loop.controlled, 0.1, x, *args) for _ in range(evals)], 3)
    jac = best(lambda: [rk.controlled_jac(loop.controlled, 0.1, x, *args) for _ in range(evals)], 3)
    print("the controlled system of the triple pendulum at one state (each calls M, Q … 3–8 times):")
    print(f"  right-hand side from Python     {1e6 * rhs / evals:7.2f} µs")
    print(f"  exact Jacobian from Python      {1e6 * jac / evals:7.2f} µs")


if __name__ == "__main__":
    main()
