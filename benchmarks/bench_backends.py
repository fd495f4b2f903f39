"""Which compiler for the tracking loop? numba vs CasADi vs sympy's lambdify, side by side.

The same controlled right-hand side of the triple pendulum (W 5.2.17: M_a(q_c) q̈_c =
Q_a + Qᶜ + M(q_c) u, GSS with the signed-quadratic f, W 7.2.15) and its exact Jacobian,
built from the same sympy expressions (``NLinkPendulum.codegen``), four ways:

- numba: the kernels robustrack ships (:mod:`robustrack.compiled.loop`), loaded from cache;
- CasADi SX: the expression graph (``casadi.solve`` for M_a⁻¹, ``casadi.jacobian`` for the
  Jacobian by AD), evaluated by CasADi's virtual machine through a ``casadi.Function`` call;
- CasADi + C: the same Function code-generated to C and compiled with the system's C
  compiler (``gcc``), loaded with ``casadi.external``;
- sympy lambdify (cse, numpy module): no compiler.

Printed per backend: build time (expressions to callable, first call included), cost of one
call of the right-hand side and of the Jacobian from Python (what scipy's integrators pay
thousands of times), and the largest difference from numba. The nominal state and Qᶜ are
inputs here (fixed), so only the controlled system's arithmetic is compared. The Jacobians
differ by ~1e-10 of their largest entry: M_a⁻¹(∂F − ∂M_a q̈) cancels entries of ~1e5 (GSS's
β g′/ε), so the order of operations shows at that level (numba's order is the numpy
reference's, which it matches to 1e-12 in tests/test_compiled.py).

    python benchmarks/bench_backends.py     (needs `pip install casadi` and gcc for the C row)
"""

import os
import shutil
import tempfile
import time
import timeit

import numpy as np
import sympy as sp

from robustrack.controllers import GSS
from robustrack.plants import pendulum_energy_constraint, triple_pendulum
from robustrack.compiled import systems as rk
from robustrack.compiled.loop import compiled_loop, kernel_law
from robustrack.compiled.backend import CompiledBackend
from robustrack.tracking.integrate import integrate_nominal

NOMINAL = triple_pendulum()
ACTUAL = NOMINAL.replace(m=(1.1, 1.8, 3.3))
ENERGY = pendulum_energy_constraint(L1=1.0, g=9.81, gain=0.02, n=3, m1=1.0)
COMP = GSS()
N = 3


def symbolic_controlled():
    """x = (q_c, q̇_c); inputs q, q̇, Qᶜ: the controlled system in sympy (M_a solved numerically later)."""
    qc = sp.symbols("qc0:3", real=True)
    qcd = sp.symbols("qcd0:3", real=True)
    q = sp.symbols("q0:3", real=True)
    qd = sp.symbols("qd0:3", real=True)
    Qc = sp.symbols("Qc0:3", real=True)
    t = sp.Symbol("t")
    fn, fa = NOMINAL.codegen(), ACTUAL.codegen()
    Mn, _, Pn = fn.build(qc, qcd, t)
    Ma, Qa, Pa = fa.build(qc, qcd, t)
    Mn = Mn.xreplace(dict(zip(Pn, fn.values)))
    Ma = Ma.xreplace(dict(zip(Pa, fa.values)))
    Qa = Qa.xreplace(dict(zip(Pa, fa.values)))
    e = [qc[i] - q[i] for i in range(N)]
    ed = [qcd[i] - qd[i] for i in range(N)]
    gain, eps, K = COMP._gain, COMP.f.eps, COMP.K
    u = sp.Matrix([-K * ed[i] - gain * 2.0 * ((K * e[i] + ed[i]) / eps) * sp.Abs((K * e[i] + ed[i]) / eps)
                   for i in range(N)])
    F = Qa + sp.Matrix(Qc) + Mn * u
    return (qc, qcd, q, qd, Qc), Ma, F


def build_casadi(codegen_c: bool):
    import casadi as ca

    (qc, qcd, q, qd, Qc), Ma, F = symbolic_controlled()
    x = ca.SX.sym("x", 6)
    p = ca.SX.sym("p", 9)  # q, q̇, Qᶜ
    mods = [{"Abs": ca.fabs, "sin": ca.sin, "cos": ca.cos}, "math"]
    args = [*qc, *qcd, *q, *qd, *Qc]
    vals = [x[i] for i in range(6)] + [p[i] for i in range(9)]
    Ma_f = sp.lambdify(args, Ma.tolist(), modules=mods)
    F_f = sp.lambdify(args, list(F), modules=mods)
    M_list = Ma_f(*vals)
    Ma_sx = ca.vertcat(*[ca.horzcat(*row) for row in M_list])
    F_sx = ca.vertcat(*F_f(*vals))
    acc = ca.solve(Ma_sx, F_sx)
    dx = ca.vertcat(x[3:], acc)
    rhs = ca.Function("rt_rhs", [x, p], [dx])
    jac = ca.Function("rt_jac", [x, p], [ca.jacobian(dx, x)])
    if not codegen_c:
        return rhs, jac
    if shutil.which("gcc") is None:
        return None
    folder = tempfile.mkdtemp()
    cwd = os.getcwd()
    os.chdir(folder)
    try:
        gen = ca.CodeGenerator("rt_casadi.c")
        gen.add(rhs)
        gen.add(jac)
        gen.generate()
        os.system("gcc -O2 -fPIC -shared rt_casadi.c -o rt_casadi.so")
        return ca.external("rt_rhs", os.path.join(folder, "rt_casadi.so")), ca.external("rt_jac", os.path.join(
            folder, "rt_casadi.so"))
    finally:
        os.chdir(cwd)


def build_lambdify():
    (qc, qcd, q, qd, Qc), Ma, F = symbolic_controlled()
    x = sp.Matrix([*qc, *qcd])
    acc_free = sp.Matrix(sp.symbols("a0:3"))
    args = [*qc, *qcd, *q, *qd, *Qc]
    Ma_f = sp.lambdify(args, Ma, modules="numpy", cse=True)
    F_f = sp.lambdify(args, F, modules="numpy", cse=True)
    dM = [sp.lambdify(args, Ma.diff(s), modules="numpy", cse=True) for s in qc]
    dF = sp.lambdify(args, F.jacobian(x), modules="numpy", cse=True)
    del acc_free

    def rhs(xv, pv):
        a = list(xv) + list(pv)
        return np.concatenate([xv[3:], np.linalg.solve(Ma_f(*a), F_f(*a)[:, 0])])

    def jac(xv, pv):
        a = list(xv) + list(pv)
        M = Ma_f(*a)
        acc = np.linalg.solve(M, F_f(*a)[:, 0])
        R = dF(*a)
        for k in range(3):
            R[:, k] -= dM[k](*a) @ acc
        J = np.zeros((6, 6))
        J[:3, 3:] = np.eye(3)
        J[3:] = np.linalg.solve(M, R)
        return J

    return rhs, jac


def main():
    loop = compiled_loop(NOMINAL, ACTUAL, ENERGY)
    nom = integrate_nominal(CompiledBackend(loop), np.array([1.0, 0, 0]), np.array([0.001, 0, 0]), (0.0, 0.1))
    t = 0.05
    from robustrack.tracking.rhs import nominal_motion

    y = nom(t)
    Qc = nominal_motion(NOMINAL, ENERGY, y[:3], y[3:], t).Qc
    x = np.concatenate([y[:3] + 1e-3, y[3:] - 1e-2])
    p = np.concatenate([y, Qc])
    law = kernel_law(COMP, 3)
    args = (nom.dense, loop.model, law, np.zeros(3), False)
    ref_rhs = rk.controlled_rhs(loop.controlled, t, x, *args)
    ref_jac = rk.controlled_jac(loop.controlled, t, x, *args)
    rows = [("numba (robustrack kernels; includes Qᶜ(t) from the dense nominal)", 0.0,
             lambda: rk.controlled_rhs(loop.controlled, t, x, *args), lambda: rk.controlled_jac(loop.controlled, t, x, *args),
             ref_rhs, ref_jac)]
    for label, builder in (("CasADi SX (virtual machine)", lambda: build_casadi(False)),
                           ("CasADi, C code compiled by gcc", lambda: build_casadi(True)),
                           ("sympy lambdify (cse, numpy)", build_lambdify)):
        try:
            start = time.perf_counter()
            built = builder()
            if built is None:
                print(f"{label}: skipped (no C compiler)")
                continue
            f, J = built
            out_f = np.asarray(f(x, p), dtype=float).reshape(-1)
            out_J = np.asarray(J(x, p), dtype=float).reshape(6, 6)
            rows.append((label, time.perf_counter() - start, lambda f=f: f(x, p), lambda J=J: J(x, p), out_f, out_J))
        except ImportError as exc:
            print(f"{label}: skipped ({exc})")
    print("| backend | build s | rhs µs/call | Jacobian µs/call | rhs vs numba | Jacobian vs numba |")
    print("|---|---:|---:|---:|---:|---:|")
    for label, build, f, J, out_f, out_J in rows:
        n = 2000
        us_f = timeit.timeit(f, number=n) / n * 1e6
        us_J = timeit.timeit(J, number=n) / n * 1e6
        df = np.max(np.abs(out_f - ref_rhs)) / np.max(np.abs(ref_rhs))
        dJ = np.max(np.abs(out_J - ref_jac[:6, :6])) / np.max(np.abs(ref_jac))
        print(f"| {label} | {build:.2f} | {us_f:.1f} | {us_J:.1f} | {df:.1e} | {dJ:.1e} |")


if __name__ == "__main__":
    main()
