"""The compiled tracking loop against the numpy reference, and what the fast path promises.

Right-hand sides: the kernels (generated from sympy, numba) and the numpy reference are two
implementations of the same double-precision arithmetic, differing by rounding: ≤ 1e-12
relative (norm-wise). Jacobians: the kernels' are exact (sympy derivatives assembled as
M_a⁻¹(∂F − ∂M_a q̈)); the reference is the complex step of the numpy right-hand side, exact to
rounding as well (no subtraction), so the same 1e-12 applies.
"""

import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

from robustrack.constraints import FunctionConstraint
from robustrack.plants import pendulum_energy_constraint
from robustrack.controllers import (GD, GSS, LQR, ComputedTorque, GDBar, control_function, leitmann_corless,
                                    lyapunov_redesign, sliding_mode)
from robustrack.plants import triple_pendulum
from robustrack.tracking import CompilationFallback, simulate_tracking
from robustrack.compiled import systems as rk
from robustrack.compiled.loop import compiled_loop, kernel_law, no_dense
from robustrack.compiled.backend import CompiledBackend
from robustrack.tracking.integrate import integrate_nominal
from robustrack.tracking.rhs import complex_step_jacobian, controlled_rhs, nominal_motion, uncompensated_rhs

NOMINAL = triple_pendulum()
ACTUAL = NOMINAL.replace(m=(1.1, 1.8, 3.3))
ENERGY = pendulum_energy_constraint(L1=1.0, g=9.81, gain=0.02, n=3, m1=1.0)
Q0, QD0 = np.array([1.0, 0.0, 0.0]), np.array([0.001, 0.0, 0.0])


def _functions():
    yield control_function("sign", eps=1e-2)
    yield control_function("saturation", eps=1e-2)
    yield control_function("tanh", eps=1e-2)
    yield control_function("signed-quadratic", eps=1e-2, alpha_c=2.0)
    yield control_function("cubic", eps=1e-2, alpha_c=2.0)
    yield control_function("signed-power", eps=1e-2, alpha_c=2.0, p=1.5)


def _compensators():
    yield None
    for f in _functions():
        yield GSS(f=f)
        yield GD(Ki=0.5, Kd=3.0, f=f)
        if f.strictly_increasing and f.unbounded:
            yield GDBar(f=f)
            yield GDBar(n=2.0, f=f)
    yield GSS(K=[5.0, 10.0, 20.0])
    yield sliding_mode()
    yield leitmann_corless()
    yield lyapunov_redesign()
    yield ComputedTorque(Kp=[100.0, 50.0, 80.0], Kd=20.0)
    yield LQR()


COMPENSATORS = list(_compensators())


def _label(c):
    if c is None:
        return "none"
    f = getattr(c, "f", None)
    return f"{type(c).__name__}-{f.name if f is not None else ''}-{getattr(c, 'n', '')}"


def _rel(a, b) -> float:
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-300))


@pytest.fixture(scope="module", params=[ENERGY, None], ids=["energy-constraint", "unconstrained"])
def setting(request):
    constraint = request.param
    loop = compiled_loop(NOMINAL, ACTUAL, constraint)
    assert loop is not None
    nom = integrate_nominal(CompiledBackend(loop), Q0, QD0, (0.0, 0.2))
    return constraint, loop, nom


@pytest.mark.parametrize("comp", COMPENSATORS, ids=[_label(c) for c in COMPENSATORS])
def test_compiled_rhs_and_jacobian_equal_the_numpy_reference(setting, comp):
    constraint, loop, nom = setting
    n = 3
    law = kernel_law(comp, n)
    nz = comp.n_states(n) if comp is not None else 0
    rng = np.random.default_rng(7)
    for _ in range(6):
        t = float(rng.uniform(0.0, 0.2))
        y = nom(t)
        q, qd = y[:n], y[n:]
        x = np.concatenate([q + rng.normal(0, 2e-3, n), qd + rng.normal(0, 2e-2, n), rng.normal(0, 1e-3, nz)])
        Qc = nominal_motion(NOMINAL, constraint, q, qd, t).Qc
        args = (nom.dense, loop.model, law, np.zeros(n), False)
        ref = controlled_rhs(NOMINAL, ACTUAL, comp, t, x, q, qd, Qc)
        assert _rel(rk.controlled_rhs(loop.controlled, t, x, *args), ref) <= 1e-12
        J_ref = complex_step_jacobian(lambda tt, X: controlled_rhs(NOMINAL, ACTUAL, comp, tt, X, q, qd, Qc), t, x)
        assert _rel(rk.controlled_jac(loop.controlled, t, x, *args), J_ref) <= 1e-12
        # held control (zero-order hold): u fixed, only the plant varies
        u = rng.normal(0, 1.0, n)
        held = args[:-2] + (u, True)
        ref_h = controlled_rhs(NOMINAL, ACTUAL, comp, t, x, q, qd, Qc, u_held=u)
        assert _rel(rk.controlled_rhs(loop.controlled, t, x, *held), ref_h) <= 1e-12


def test_compiled_nominal_and_uncompensated_rhs_equal_the_numpy_reference(setting):
    constraint, loop, nom = setting
    rng = np.random.default_rng(3)
    for _ in range(20):
        t = float(rng.uniform(0.0, 0.2))
        y = np.concatenate([rng.uniform(-3, 3, 3), rng.normal(0, 2, 3)])
        mot = nominal_motion(NOMINAL, constraint, y[:3], y[3:], t)
        assert _rel(rk.system_rhs(loop.nominal, t, y, no_dense(2 * loop.n), loop.model), np.concatenate([y[3:], mot.qdd])) <= 1e-12
        yn = nom(t)
        Qc = nominal_motion(NOMINAL, constraint, yn[:3], yn[3:], t).Qc
        args = (nom.dense, loop.model)
        assert _rel(rk.system_rhs(loop.uncompensated, t, y, *args), uncompensated_rhs(ACTUAL, t, y, Qc)) <= 1e-12


def test_dense_output_of_the_nominal_solution_matches_scipy(setting):
    _, _, nom = setting
    from scipy.integrate import solve_ivp

    t = np.linspace(0.0, 0.2, 37)
    ref = solve_ivp(lambda tt, y: np.concatenate([y[3:], nominal_motion(NOMINAL, setting[0], y[:3], y[3:], tt).qdd]),
                    (0.0, 0.2), np.concatenate([Q0, QD0]), method="DOP853", rtol=1e-8, atol=1e-12,
                    dense_output=True)
    # same method and tolerances, right-hand sides equal to rounding: the interpolants agree far
    # below the tolerance (1e-8 relative)
    assert np.max(np.abs(nom(t) - ref.sol(t).T)) < 1e-9


def test_nominal_run_does_not_depend_on_the_compensator():
    """The nominal system is integrated first, alone: same trajectory and residual to the last bit."""
    def run(c, h=None):
        return simulate_tracking(NOMINAL, ENERGY, c, Q0, QD0, (0.0, 1.0), actual=ACTUAL, n_points=51, uncompensated=False,
                                 sample_period=h)

    runs = [run(c) for c in (None, GSS(), GD(), GDBar())] + [run(sliding_mode(), 1e-3)]
    for r in runs[1:]:
        np.testing.assert_array_equal(r.q, runs[0].q)
        np.testing.assert_array_equal(r.residual_nominal, runs[0].residual_nominal)
        assert r.metrics["max_constraint_residual_nominal"] == runs[0].metrics["max_constraint_residual_nominal"]


def test_compiled_and_numpy_runs_agree_to_the_tolerance():
    """Same equations, different arithmetic order: whole runs agree to the solver tolerance."""
    a = simulate_tracking(NOMINAL, ENERGY, GSS(), Q0, QD0, (0.0, 1.0), actual=ACTUAL, n_points=101)
    b = simulate_tracking(NOMINAL, ENERGY, GSS(), Q0, QD0, (0.0, 1.0), actual=ACTUAL, n_points=101, backend="numpy")
    assert a.solver["backend"] == "compiled" and b.solver["backend"] == "numpy"
    # e ~ 1e-4 is a difference of states ~1 integrated to rtol 1e-8: it agrees to ~1e-7 of |q|
    assert np.max(np.abs(a.e - b.e)) < 1e-7
    assert abs(a.metrics["max_abs_e"] - b.metrics["max_abs_e"]) < 1e-3 * b.metrics["max_abs_e"]


def test_a_plant_without_symbolic_form_falls_back_with_one_notice():
    constraint = FunctionConstraint(lambda q, qd, t: ENERGY.matrices(q, qd, t)[0],
                                    lambda q, qd, t: ENERGY.matrices(q, qd, t)[1], n=3, m=1)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        r = simulate_tracking(NOMINAL, constraint, GSS(), Q0, QD0, (0.0, 0.2), actual=ACTUAL, n_points=11,
                              uncompensated=False)
    notices = [w for w in caught if issubclass(w.category, CompilationFallback)]
    assert len(notices) == 1 and "FunctionConstraint" in str(notices[0].message)
    assert "\n" not in str(notices[0].message)
    assert r.solver["backend"] == "numpy" and r.success


def test_the_cache_is_reused_and_safe_for_two_processes_starting_at_once(tmp_path, kernels_only_cache):
    """Two processes, a cache without the structure (the kernels are there: compiling them once per
    machine is the same numba cache mechanism): both generate or load, neither sees a half-written
    module; a third run loads from the cache without generating or compiling anything (no generated
    function, no CompileNotice). A nominal constrained run of a one-link pendulum."""
    script = textwrap.dedent("""
        import sys, warnings
        import robustrack.compiled.codegen as cg
        import robustrack.compiled.loop as tc
        from robustrack.plants import NLinkPendulum, pendulum_energy_constraint
        from robustrack.tracking import simulate_constrained
        if sys.argv[1] == "cached":
            def refuse(*a, **k):
                raise SystemExit("regenerated a cached module")
            cg.function_source = refuse
            warnings.simplefilter("error", tc.CompileNotice)  # nothing compiles: no notice
        nom = NLinkPendulum(m=[1.0], L=[1.0], g=9.81)
        con = pendulum_energy_constraint(L1=1.0, g=9.81, gain=0.5, n=1, m1=1.0)
        r = simulate_constrained(nom, con, [0.5], [0.0], (0.0, 1.0), n_points=11)
        assert r.solver.backend == "compiled", r.solver
        print(repr(float(r.q[-1, 0])))
    """)
    path = tmp_path / "run.py"
    path.write_text(script)
    env = {**__import__("os").environ, "ROBUSTRACK_CACHE_DIR": str(kernels_only_cache)}
    procs = [subprocess.Popen([sys.executable, str(path), "fresh"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, env=env) for _ in range(2)]
    outs = [p.communicate(timeout=600) for p in procs]
    assert all(p.returncode == 0 for p in procs), outs
    third = subprocess.run([sys.executable, str(path), "cached"], capture_output=True, text=True, env=env, timeout=600)
    assert third.returncode == 0, third.stderr
    assert outs[0][0] == outs[1][0] == third.stdout
    assert not list(kernels_only_cache.rglob("*.tmp"))


@pytest.mark.parametrize("method", ["LSODA", "Radau"])
def test_scipy_methods_on_the_compiled_kernels_agree_with_the_compiled_bdf(method):
    """BDF runs inside the kernels; LSODA and Radau call them from scipy. Same loop, rtol 1e-8:
    e (~5e-5, a difference of states ~1) agrees to ~1e-8 absolute, i.e. ~1e-3 of its size."""
    ref = simulate_tracking(NOMINAL, ENERGY, GSS(), Q0, QD0, (0.0, 1.0), actual=ACTUAL, n_points=101, uncompensated=False)
    other = simulate_tracking(NOMINAL, ENERGY, GSS(), Q0, QD0, (0.0, 1.0), actual=ACTUAL, n_points=101,
                              uncompensated=False, method=method)
    assert ref.solver["method"] == "BDF" and other.solver["method"] == method
    assert other.solver["backend"] == "compiled" and other.success
    assert np.max(np.abs(ref.e - other.e)) < 5e-8


def test_sampled_control_compiled_and_numpy_agree():
    """Zero-order hold: the kernels' Dormand–Prince and scipy's RK45 per hold interval, same law
    (GSS, continuous f, so no switching sensitivity), h = 1 ms (GSS's gain β ≈ 220 needs a short
    hold: at 10 ms the sampled loop is unstable): e agrees to the solvers' error (~1e-8 of |q|)."""
    runs = [simulate_tracking(NOMINAL, ENERGY, GSS(), Q0, QD0, (0.0, 0.05), actual=ACTUAL, n_points=11, sample_period=1e-3,
                              uncompensated=False, backend=b) for b in ("auto", "numpy")]
    assert [r.solver["backend"] for r in runs] == ["compiled", "numpy"]
    np.testing.assert_array_equal(runs[0].t, runs[1].t)
    assert runs[0].u_held.shape == runs[1].u_held.shape == (50, 3)
    assert runs[0].metrics["max_abs_e"] > 1e-6  # there is an error to compare
    assert np.max(np.abs(runs[0].e - runs[1].e)) < 5e-8
