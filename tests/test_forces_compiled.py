"""The actual plant's friction and disturbances on the compiled path (issue 42, "friction in the compiled path").

Each disturbance kind (joint friction, a step, a sinusoid, band-limited noise, their sum) added to each kind of
base form (a symbolic pendulum, a URDF robot, a plant from functions): the compiled run equals the numpy reference
(``backend="numpy"``) to the integrators' tolerance and says no fallback notice; one compiled structure serves a
campaign's samples of the friction coefficients (W 5.2.12–5.2.16: δQ in the actual plant only).
"""

import warnings

import numpy as np
import pytest

from robustrack.plants import ForcedPlant, triple_pendulum
from robustrack.uncertainty import (ActualForces, BandLimitedDisturbance, FunctionDisturbance, JointFriction,
                                    SinusoidalDisturbance, StepDisturbance)


def _kinds(n):
    """Every disturbance kind on n coordinates: the friction stiff-ish (v_s = 0.05 rad/s: the Coulomb slope F_c / v_s
    at q̇ = 0 is 10–16× the viscous b), the step switched on inside every horizon here, the noise at the bound D = 1
    (4 components: a small structure to generate)."""
    friction = JointFriction(viscous=np.linspace(0.5, 0.2, n), coulomb=np.linspace(0.4, 0.1, n), smoothing=0.05)
    step = StepDisturbance(np.linspace(1.0, -0.5, n), start=0.05)
    noise = BandLimitedDisturbance(1.0, cutoff=10.0, seed=2, components=4)
    return {"friction": friction, "step": step, "sinusoid": SinusoidalDisturbance(np.linspace(1.0, 0.2, n), omega=3.0),
            "noise": noise, "sum": friction + noise + step}


def _run(problem, backend):
    from robustrack.tracking import CompilationFallback

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = problem(backend).simulate()
    return result, [str(w.message) for w in caught if issubclass(w.category, CompilationFallback)]


def _agree(problem):
    """The compiled run (no notice) against the numpy reference.

    Both integrate at rtol 1e-8, atol 1e-12 (the defaults, W 7.3): the controlled loop with BDF, the uncompensated
    actual plant and the nominal with DOP853 — the compiled kernels' and scipy's, which choose their own steps. Each
    solution is within a few hundred local tolerances of the true one over the short horizons here (|q| ≲ 2 rad: a
    few 1e-6 at most), so 1e-6 on q_c and q_a (observed 1e-11–3e-9). The nominal q carries no δQ and both sides take
    the same DOP853 steps to rounding: 1e-9 (observed ~1e-11).
    """
    compiled, notices = _run(problem, "auto")
    assert not notices, notices
    assert compiled.solver["backend"] == "compiled"
    reference = _run(problem, "numpy")[0]
    assert np.abs(compiled.q - reference.q).max() < 1e-9
    assert np.abs(compiled.qc - reference.qc).max() < 1e-6
    assert np.abs(compiled.qa - reference.qa).max() < 1e-6
    return compiled, reference


# --------------------------------------------------------------------------- a symbolic plant (SymbolicForm)
def _pendulum_problem(dQ):
    from robustrack.controllers import GSS
    from robustrack.tracking import TrackingProblem

    actual = ForcedPlant(triple_pendulum().replace(m=[1.1, 2.0, 3.0]), dQ)
    return lambda backend: TrackingProblem(triple_pendulum(), None, GSS(K=10.0, gamma_prime=50.0, beta0=10.0),
                                           q0=[0.1, 0.2, 0.3], qd0=[0.0, 0.1, 0.0], t_span=(0.0, 0.3),
                                           actual=actual, n_points=31, backend=backend)


@pytest.mark.parametrize("kind", list(_kinds(3)))
def test_a_symbolic_plant_with_each_force_runs_compiled_as_on_numpy(kind):
    dQ = _kinds(3)[kind]
    form = ForcedPlant(triple_pendulum(), dQ).codegen()
    assert form is not None and form.key.startswith("ForcedPlant/")
    compiled, _ = _agree(_pendulum_problem(dQ))
    # the force matters: without it the uncompensated actual motion (δQ ~1 N·m over 0.3 s) moves by far more than 1e-6
    without = _run(_pendulum_problem(JointFriction()), "auto")[0]
    assert np.abs(compiled.qa - without.qa).max() > 1e-3


def test_forces_without_a_closed_form_still_say_so():
    plant = triple_pendulum()
    user = FunctionDisturbance(lambda q, qd, t: -0.1 * np.tanh(qd), bound=0.1)
    assert ForcedPlant(plant, user).codegen() is None
    assert ForcedPlant(plant, JointFriction(viscous=1.0) + user).codegen() is None
    why = ForcedPlant(plant, JointFriction(viscous=1.0) + user).no_form_reason
    assert "FunctionDisturbance" in why and "JointFriction" not in why
    sampled = JointFriction(viscous=np.ones((4, 1, 3)))  # Γ's batches: one coefficient row per sample
    assert ForcedPlant(plant, sampled).codegen() is None and "sample axis" in ForcedPlant(plant, sampled).no_form_reason


def test_the_terms_are_the_disturbances_own_arithmetic():
    """Each form's δQ (sympy, lambdified) against the disturbance called by numpy at random states."""
    import sympy as sp

    n, rng = 3, np.random.default_rng(4)
    q = sp.symbols(f"q0:{n}", real=True)
    qd = sp.symbols(f"qd0:{n}", real=True)
    t = sp.Symbol("t", real=True)
    for kind, d in _kinds(n).items():
        form = d.codegen_terms(n)
        dQ, params = form.build(q, qd, t)
        assert len(params) == form.values.size and all(isinstance(p, sp.Dummy) for p in params)
        f = sp.lambdify([q, qd, t, params], dQ, modules="numpy")
        for _ in range(5):
            x, v, s = rng.normal(size=n), rng.normal(size=n) * 0.1, rng.uniform(0.0, 0.3)
            # the same operations in another order (the noise's sum over its components): rounding of sums of O(1)
            assert np.allclose(np.ravel(f(x, v, s, form.values)), d(x, v, s), rtol=1e-13, atol=1e-14), kind


def _every_kind(n):
    """Friction, a step, a sinusoid and the noise in one δQ: each kind's generated terms in one run."""
    k = _kinds(n)
    return k["friction"] + k["step"] + k["sinusoid"] + k["noise"]


# A robot's and a user's plant take δQ by one path whatever its kind (δQ's generated functions beside their Q,
# robustrack.symbolic.ForcedForm): one run with every kind in one δQ each; the kinds one by one on the symbolic plant.

# --------------------------------------------------------------------------- a URDF robot (KernelForm)
def _ur5_problem(dQ):
    pytest.importorskip("pinocchio")
    from robustrack.scenarios import load_scenario

    pb = load_scenario("ur5-friction", ["simulation.t_end=0.1", "simulation.n_points=11"]).build()
    actual = ForcedPlant(pb.actual.base, dQ)  # the payload's robot, its δQ replaced
    return lambda backend: pb.replace(actual=actual, backend=backend)


def test_a_robot_with_every_force_runs_compiled_as_on_numpy():
    from robustrack.symbolic import ForcedForm, KernelForm

    dQ = _every_kind(6)
    problem = _ur5_problem(dQ)
    form = problem("auto").actual.codegen()
    assert isinstance(form, ForcedForm) and isinstance(form.base, KernelForm)
    assert form.force.key == "sum(friction,step,sinusoidal,band-limited/4)"
    compiled, _ = _agree(problem)
    without = _run(_ur5_problem(JointFriction()), "auto")[0]
    assert np.abs(compiled.qa - without.qa).max() > 1e-4  # the forces are in the compiled actual plant


# --------------------------------------------------------------------------- a plant from functions (FunctionForm)
def _arm_problem(dQ):
    from test_user_compiled import _arm_problem as arm_problem
    from test_user_plants import function_arm

    arm = function_arm()
    return lambda backend: arm_problem(arm, backend).replace(actual=ForcedPlant(arm.replace(m2=0.9), dQ),
                                                            t_span=(0.0, 0.3), n_points=31)


def test_a_plant_from_functions_with_every_force_runs_compiled_as_on_numpy():
    from robustrack.symbolic import ForcedForm

    problem = _arm_problem(_every_kind(2))
    form = problem("auto").actual.codegen()
    assert isinstance(form, ForcedForm) and hasattr(form.base, "functions")
    compiled, _ = _agree(problem)
    without = _run(_arm_problem(JointFriction()), "auto")[0]
    assert np.abs(compiled.qa - without.qa).max() > 1e-3


# --------------------------------------------------------------------------- the BDF's Jacobian: δQ's exact
@pytest.mark.parametrize("base", ["robot", "functions"])
def test_the_controlled_jacobian_has_the_frictions_exact_derivative(base):
    """J(forced) − J(plain) in the rows of q̈_c and the columns of q̇_c is M_a⁻¹ ∂δQ/∂q̇ = M_a⁻¹ diag(−b − F_c
    sech²(q̇/v_s)/v_s) (M_a depends on q alone), here in numpy from the formula. With v_s = 1e-3 rad/s and q̇ within
    a few v_s the slope reaches F_c/v_s = 1e3 × F_c: central differences with h = ∛ε·max(|q̇|, 1) ≈ 6e-6 would be off
    by ~h² F_c/v_s³ ≈ 4e-2 × F_c (~1e-5 relative to the slope); the generated derivative is sympy's, so the two sides
    agree to the rounding of one M_a solve of entries ~1e3 (1e-10 relative, two decades of margin)."""
    from robustrack.compiled.backend import CompiledBackend
    from robustrack.compiled.loop import compiled_loop, kernel_law
    from robustrack.compiled import systems as rk
    from robustrack.controllers import GSS
    from robustrack.tracking.integrate import integrate_nominal

    problem = (_ur5_problem if base == "robot" else _arm_problem)(JointFriction())("auto")
    plain, n = problem.actual.base, problem.nominal.n
    friction = JointFriction(viscous=np.linspace(0.5, 0.2, n), coulomb=np.linspace(3.0, 1.0, n), smoothing=1e-3)
    forced = ForcedPlant(plain, friction)
    loops = [compiled_loop(problem.nominal, actual, problem.constraint) for actual in (plain, forced)]
    nom = integrate_nominal(CompiledBackend(loops[0]), problem.q0, problem.qd0, (0.0, 0.1))
    law = kernel_law(GSS(K=10.0, gamma_prime=50.0), n)
    rng = np.random.default_rng(5)
    for _ in range(4):
        t = float(rng.uniform(0.0, 0.1))
        y = nom(t)
        x = np.concatenate([y[:n] + rng.normal(0, 1e-2, n), rng.normal(0, 2e-3, n)])  # q̇_c within a few v_s
        J = [rk.controlled_jac(loop.controlled, t, x, nom.dense, loop.model, law, np.zeros(n), False) for loop in loops]
        rhs = [rk.controlled_rhs(loop.controlled, t, x, nom.dense, loop.model, law, np.zeros(n), False)
               for loop in loops]
        Ma = plain.mass_matrix(x[:n], t)
        v = x[n:]
        slope = -friction.viscous - friction.coulomb / friction.smoothing / np.cosh(v / friction.smoothing) ** 2
        truth = np.linalg.solve(Ma, np.diag(slope))
        got = J[1][n:, n:] - J[0][n:, n:]
        assert np.abs(got - truth).max() <= 1e-10 * np.abs(truth).max()
        # and the right-hand side: M_a⁻¹ δQ
        dqdd = np.linalg.solve(Ma, friction(x[:n], v, t))
        assert np.abs((rhs[1] - rhs[0])[n:] - dqdd).max() <= 1e-10 * np.abs(dqdd).max()


# --------------------------------------------------------------------------- a campaign: one structure
def test_a_campaign_over_the_friction_coefficients_compiles_one_structure(monkeypatch):
    """Every sample's friction coefficients are values of one generated structure: the campaign's samples ask the
    loop for the same generated functions (the same keys), never a new one, and run compiled."""
    from robustrack.campaigns import ParameterUncertainty, monte_carlo
    from robustrack.compiled import loop as compiled
    from robustrack.tracking import CompilationFallback
    from robustrack.uncertainty import UncertainParameter, UncertainSet

    nominal = triple_pendulum()
    joints = nominal.coordinates
    forces = ActualForces(JointFriction(viscous=[0.5, 0.3, 0.2], coulomb=[0.4, 0.2, 0.1], smoothing=0.05),
                          disturbance=StepDisturbance(0.5, start=0.05), coordinates=joints)
    named = UncertainSet([UncertainParameter(f"{key}_{j}", value, percent=50)
                          for key in ("viscous", "coulomb") for j, value in zip(joints, forces.friction.viscous
                                                                                 if key == "viscous" else
                                                                                 forces.friction.coulomb)])
    uncertainty = ParameterUncertainty(parameters=named, disturbance=forces, seed=1)
    actual = [uncertainty.actual(nominal, dm, i) for i, dm in enumerate(uncertainty.draw(nominal, 4))]
    forms = [a.codegen() for a in actual]
    assert len({f.key for f in forms}) == 1 and len({f.values.tobytes() for f in forms}) == 4
    asked = []
    load = compiled._load
    monkeypatch.setattr(compiled, "_load", lambda key, *args: asked.append(key) or load(key, *args))

    def keys(actual):
        del asked[:]
        compiled.compiled_loop(nominal, actual, None, measure=True)
        return set(asked)

    per_sample = [keys(a) for a in actual]
    assert all(k == per_sample[0] for k in per_sample)  # one structure's functions, whatever the coefficients
    known = per_sample[0] | keys(nominal)
    del asked[:]
    problem = _pendulum_problem(forces.given())("auto").replace(t_span=(0.0, 0.1), n_points=11)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = monte_carlo(problem, uncertainty, 4, workers=1, progress=None)
    assert not [w for w in caught if issubclass(w.category, CompilationFallback)]
    assert result.summary()["completed"] == 4
    assert asked and set(asked) <= known  # the campaign's samples asked for nothing else
