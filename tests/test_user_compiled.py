"""Plant.from_functions on the compiled path (issue 28 item 2): the user's M and Q under numba, their differenced
derivatives against sympy's exact ones, the run against the numpy reference, the cache by content, and a function
numba cannot compile falling back with its reason."""

import ctypes
import subprocess
import sys
import textwrap
import types
import warnings

import numpy as np
import pytest
import sympy as sp

from robustrack.plants import Plant
from robustrack.plants.function_form import function_digest

from test_user_plants import ARM, STATES, function_arm, sympy_arm

_P = ctypes.POINTER(ctypes.c_double)


def _evaluate(cfunc, q, qd, p, size):
    q, qd, p = (np.ascontiguousarray(x, dtype=float) for x in (q, qd, p))
    out = np.zeros(size)
    cfunc.ctypes(q.ctypes.data_as(_P), qd.ctypes.data_as(_P), 0.0, p.ctypes.data_as(_P), out.ctypes.data_as(_P))
    return out


def test_compiled_functions_match_the_numpy_path_and_sympys_exact_derivatives():
    from robustrack.compiled.loop import _function

    fp, lp = function_arm(), sympy_arm()
    ff, lf = fp.codegen(), lp.codegen()
    assert ff is not None and ff.cacheable
    worst = {}
    for x in STATES:
        q, qd = x[:2], x[2:]
        # M and Q: the user's arithmetic compiled, against the same functions called by numpy (rounding only)
        assert np.allclose(_evaluate(_function(ff, 2, "mass"), q, qd, ff.values, 4), fp.mass_matrix(q).ravel(),
                           rtol=1e-14, atol=1e-14)
        assert np.allclose(_evaluate(_function(ff, 2, "force"), q, qd, ff.values, 2), fp.given_force(q, qd),
                           rtol=1e-14, atol=1e-13)
        for name, size in (("mass_dq", 8), ("force_dq", 4), ("force_dqd", 4)):
            differenced = _evaluate(_function(ff, 2, name), q, qd, ff.values, size)
            exact = _evaluate(_function(lf, 2, name), q, qd, lf.values, size)  # sympy's derivative, generated
            scale = max(1.0, np.abs(exact).max())
            worst[name] = max(worst.get(name, 0.0), np.abs(differenced - exact).max() / scale)
    # central differences with h = ∛ε·max(|x|, 1): truncation ~h²|f'''| and rounding ~ε|f|/h, both ~ε^(2/3) ≈ 4e-11
    # times the size of f and its third derivative (entries ≤ ~10 here): 1e-8 leaves two decades of margin
    assert max(worst.values()) < 1e-8, worst


def test_batches_go_through_the_compiled_functions_once_compiled():
    """After the loop compiled M and Q, the numpy side (metrics, Γ) evaluates batches through them — sampled
    parameters included — with the same numbers as the user's functions called state by state."""
    import pickle

    from robustrack.compiled.loop import compiled_loop

    from test_user_plants import arm_M, arm_Q

    fp = function_arm()
    assert not fp.spec.compiled  # nothing compiled yet: the Python loop
    compiled_loop(fp, fp, None)
    assert set(fp.spec.compiled) == {"M", "Q"}
    q, qd = STATES[:, :2], STATES[:, 2:]
    m2 = np.array([[0.7], [0.9]])  # (S, 1) against q (T, n): estimate_gamma's batches
    M, Q = fp.replace(m2=m2).mass_matrix(q), fp.replace(m2=m2).given_force(q, qd)
    assert M.shape == (2, 7, 2, 2) and Q.shape == (2, 7, 2)
    p = {k: ARM[k] for k in ARM if k != "L2"}
    for s, m in enumerate((0.7, 0.9)):
        for i in range(7):
            args = {k: p[k] for k in ("m1", "L1", "lc1", "lc2")}
            truth_M = np.array(arm_M(q[i], m2=m, I1=p["I1"], I2=p["I2"], **args))
            truth_Q = np.array(arm_Q(q[i], qd[i], m2=m, g=p["g"], b=p["b"], **args))
            # the same arithmetic compiled: rounding (LLVM may contract a*b+c into one fused operation)
            assert np.allclose(M[s, i], truth_M, rtol=1e-14, atol=1e-14)
            assert np.allclose(Q[s, i], truth_Q, rtol=1e-14, atol=1e-13)
    copy = pickle.loads(pickle.dumps(fp))  # a campaign's worker: its own process compiles (or loads) again
    assert not copy.spec.compiled and np.allclose(copy.mass_matrix(q), fp.mass_matrix(q), rtol=1e-14, atol=1e-14)


def test_given_derivatives_are_compiled_as_given():
    from robustrack.compiled.loop import _function

    def M(q, k):
        return np.array([[1.0 + q[0] ** 2]])

    def dM(q, k):
        return np.array([[[2.0 * q[0]]]])

    def Q(q, qd, k):
        return np.array([-k * q[0] ** 3 - 0.1 * qd[0] ** 2])

    def dQ_dq(q, qd, k):
        return np.array([[-3.0 * k * q[0] ** 2]])

    plant = Plant.from_functions(M, Q, params={"k": 2.0}, names=["x"], dM_dq=dM, dQ_dq=dQ_dq)
    form = plant.codegen()
    q, qd = np.array([0.7]), np.array([-0.4])
    assert _evaluate(_function(form, 1, "mass_dq"), q, qd, form.values, 1)[0] == 2 * 0.7
    assert _evaluate(_function(form, 1, "force_dq"), q, qd, form.values, 1)[0] == -3 * 2.0 * 0.7**2
    # not given: differenced (the closed form −0.2 q̇ to the differences' accuracy, ~ε^(2/3))
    assert abs(_evaluate(_function(form, 1, "force_dqd"), q, qd, form.values, 1)[0] - 0.2 * 0.4) < 1e-9


def _arm_problem(plant, backend="auto"):
    from robustrack.constraints import Holonomic, Stabilization
    from robustrack.controllers import GSS
    from robustrack.tracking import TrackingProblem

    q1, q2, t = sp.symbols("shoulder elbow t")
    req = Holonomic([q1 - 0.3 * sp.sin(t), q2 - 0.5 + 0.2 * sp.cos(t)], [q1, q2], t,
                    stabilization=Stabilization.second_order(1.0, 5.0))
    return TrackingProblem(plant, req, GSS(K=10.0, gamma_prime=50.0, beta0=10.0), q0=[0.0, 0.7], qd0=[0.3, 0.0],
                           t_span=(0.0, 1.0), actual=plant.replace(m2=0.9), n_points=51, backend=backend)


def test_a_function_plant_runs_compiled_and_agrees_with_the_numpy_reference():
    from robustrack.tracking import CompilationFallback

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compiled = _arm_problem(function_arm()).simulate()
    assert not [w for w in caught if issubclass(w.category, CompilationFallback)]
    reference = _arm_problem(function_arm(), backend="numpy").simulate()
    # two integrators (compiled BDF/DOP853, scipy's) at rtol 1e-8, atol 1e-12 over 1 s of a damped, stabilized arm:
    # each within a few hundred local tolerances of the true solution
    assert np.abs(compiled.qc - reference.qc).max() < 1e-6
    assert np.abs(compiled.q - reference.q).max() < 1e-6
    assert compiled.metrics.bounds_held


def test_a_function_plants_differenced_jacobian_carries_the_compiled_bdf_through_a_tip_circle():
    """The arm as the user's functions (its Jacobian from compiled central differences) and as a LagrangianPlant
    (exact derivatives), its tip on a circle for 6.3 s (``benchmarks/bench_user_plants.py``'s problem): the
    compiled BDF finishes both and they agree. A Newton test that accepted a first iterate on the rate of
    earlier steps collapsed the step size at t = 2.2 s with the differenced Jacobian only. Agreement: the two
    differ only in the Jacobian, which changes the steps, not the solution; each is within a few hundred local
    tolerances (rtol 1e-8 on |q| ~ 1) of the true one, so 1e-6."""
    from robustrack.constraints import Stabilization
    from robustrack.controllers import GSS
    from robustrack.requirements import TaskSpaceTrajectory, consistent_initial_state
    from robustrack.tracking import TrackingProblem

    t = sp.Symbol("t")

    def tip(q):
        sin, cos = (sp.sin, sp.cos) if isinstance(q[0], sp.Basic) else (np.sin, np.cos)
        return [ARM["L1"] * cos(q[0]) + ARM["L2"] * cos(q[0] + q[1]),
                ARM["L1"] * sin(q[0]) + ARM["L2"] * sin(q[0] + q[1])]

    runs = []
    for plant in (function_arm(), sympy_arm()):
        req = TaskSpaceTrajectory(tip, [0.45 + 0.15 * sp.cos(t), 0.25 + 0.15 * sp.sin(t)], names=plant.coordinates,
                                  stabilization=Stabilization.second_order(xi=1.0, omega=10.0))
        q0, qd0 = consistent_initial_state(req, q_guess=[0.2, 1.5], qd_guess=[0.0, 0.0])
        pb = TrackingProblem(plant, req, GSS(K=10.0, gamma_prime=2.0, beta0=10.0, alpha0=0.5, sigma=1.0), q0, qd0,
                             (0.0, 6.3), actual=plant.replace(m2=1.2 * ARM["m2"]), n_points=401)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = pb.simulate(raise_on_failure=False)
        assert result.success and result.solver["backend"] == "compiled", result.solver["message"]
        runs.append(result)
    assert np.abs(runs[0].qc - runs[1].qc).max() < 1e-6


def test_what_numba_cannot_compile_runs_on_numpy_and_says_why():
    from robustrack.tracking import CompilationFallback

    def stiff_M(q, m1, m2, L1, lc1, lc2, I1, I2):  # .tolist(): outside numba's numpy subset
        return np.array(function_arm().spec.functions["M"](q, m1, m2, L1, lc1, lc2, I1, I2)).tolist()

    plant = Plant.from_functions(stiff_M, function_arm().spec.functions["Q"],
                                 params={k: ARM[k] for k in ARM if k != "L2"}, names=["shoulder", "elbow"])
    problem = _arm_problem(plant).replace(t_span=(0.0, 0.1), n_points=11)  # on numpy: what runs is not the point
    for _ in range(2):  # the second time from the kept reason, without compiling again
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            result = problem.simulate()
        notes = [str(w.message) for w in caught if issubclass(w.category, CompilationFallback)]
        assert len(notes) == 1 and "\n" not in notes[0], notes
        assert "`M` (stiff_M) is not compiled by numba" in notes[0], notes[0]
        assert result.success


def test_the_key_is_the_functions_content():
    def make(c):
        def M(q, m):
            return np.array([[m + c]])

        return M

    assert function_digest(make(1.0)) == function_digest(make(1.0))
    assert function_digest(make(1.0)) != function_digest(make(2.0))  # the closure's value is part of the content
    assert function_digest(make(object())) is None  # an object without a content: compiled in memory only
    helper = types.ModuleType("helper")  # a module of the user's own: what its functions compute is content
    helper.__file__ = "/home/user/helper.py"
    exec("def f(x):\n    return 2.0 * x\n", vars(helper))

    def M(q, m):
        return np.array([[m * helper.f(q[0])]])

    before = function_digest(M)
    exec("def f(x):\n    return 3.0 * x\n", vars(helper))
    assert function_digest(M) != before
    fp = function_arm()
    assert fp.codegen().key == fp.replace(m2=3.0).codegen().key  # values are data, not structure
    assert fp.replace(m2=np.array([1.0, 2.0])).codegen() is None  # sampled values: the numpy path


def test_a_later_process_loads_the_compiled_functions_without_compiling(tmp_path, kernels_only_cache):
    (tmp_path / "arm.py").write_text(textwrap.dedent("""
        import warnings
        import numpy as np
        from robustrack.compiled.loop import compiled_loop
        from robustrack.compiled.notice import CompileNotice
        from robustrack.plants import Plant

        G, C = 9.81, 0.1  # several globals: their order must not follow the process's string hashing

        def M(q, m):
            return np.array([[m + C * np.cos(q[0]) ** 2]])

        def Q(q, qd, m):
            return np.array([-G * m * np.sin(q[0]) - C * qd[0]])

        plant = Plant.from_functions(M, Q, params={"m": 1.0}, names=["x"])
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            compiled_loop(plant, plant.replace(m=2.0), None)
        print(sum("plant structure" in str(w.message) for w in caught if issubclass(w.category, CompileNotice)))
    """))
    import os

    env = {**os.environ, "ROBUSTRACK_CACHE_DIR": str(kernels_only_cache)}
    said = [subprocess.run([sys.executable, str(tmp_path / "arm.py")], env=env, capture_output=True, text=True,
                           check=True).stdout.split()[-1] for _ in range(2)]
    assert said == ["1", "0"]


def test_the_batch_contract_is_checked_before_any_integration():
    from robustrack.constraints import FunctionConstraint
    from robustrack.errors import ConstraintError, ParameterError
    from robustrack.tracking import simulate_constrained

    calls = []

    def M(q, m):  # vectorized=True, but written for one state: float() of a batch's column
        calls.append(np.shape(q))
        return np.array([[m, 0.0], [0.0, m * (1.0 + float(np.cos(q[1])) ** 2)]])

    plant = Plant.from_functions(M, lambda q, qd, m: -q, params={"m": 1.0}, names=["x", "y"], vectorized=True)
    with pytest.raises(ParameterError, match=r"does not accept a batch.*pass vectorized=False"):
        simulate_constrained(plant, None, [0.1, 0.2], [0.0, 0.0], (0.0, 2.0))
    assert len(calls) == 1  # refused at the first call, before the integration called it once more

    def A(q, qd, t):  # one state only: q[0] of a batch is a row of states
        return np.array([[1.0, float(q[0])]])

    one_state = FunctionConstraint(A, lambda q, qd, t: np.zeros(1), n=2, m=1)
    with pytest.raises(ConstraintError, match=r"FunctionConstraint does not accept a batch \(4,\)"):
        simulate_constrained(function_arm(), one_state, [0.1, 0.2], [0.0, 0.0], (0.0, 2.0))


def test_a_campaign_never_integrates_the_uncompensated_copy(monkeypatch):
    """The uncompensated copy is a single run's comparison (run, report, compare print it); a campaign reports
    the controlled system's peaks only, so its samples never pay for the copy (issue 28 item 6)."""
    from robustrack.campaigns import ParameterUncertainty, monte_carlo
    from robustrack.tracking import simulate as simulate_module

    def refuse(*args, **kwargs):
        raise AssertionError("a campaign sample integrated the uncompensated copy")

    problem = _arm_problem(function_arm())
    assert problem.uncompensated  # a single run computes it (and reports it) ...
    monkeypatch.setattr(simulate_module, "integrate_uncompensated", refuse)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        camp = monte_carlo(problem, ParameterUncertainty("m2", spread=0.1, seed=1), samples=2, workers=1,
                           progress=None)
    assert camp.summary()["completed"] == 2  # ... a campaign's samples never do
    with pytest.raises(AssertionError, match="uncompensated copy"):
        problem.simulate()  # (the refusal is live: the single run does reach it)


if __name__ == "__main__":  # pragma: no cover
    pytest.main([__file__, "-q"])
