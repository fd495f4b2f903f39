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
    """Every disturbance kind on n coordinates: the friction stiff-ish (v_s = 0.05 rad/s: slope F_c / v_s up to 8×
    the viscous one), the step switched on inside the horizon, the noise at the bound D = 1."""
    friction = JointFriction(viscous=np.linspace(0.5, 0.2, n), coulomb=np.linspace(0.4, 0.1, n), smoothing=0.05)
    step = StepDisturbance(np.linspace(1.0, -0.5, n), start=0.1)
    noise = BandLimitedDisturbance(1.0, cutoff=10.0, seed=2)
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

    Both integrate the controlled loop with BDF at rtol 1e-8, atol 1e-12 (the defaults, W 7.3) — the compiled kernels'
    and scipy's, which choose their own steps — and the nominal with DOP853. Each is within a few hundred local
    tolerances of the true solution over the short horizons here (|q| ≲ 2 rad: a few 1e-6 at most), so 1e-6 on q_c
    and on the uncompensated q_a (observed ~1e-9); the nominal q, the same DOP853 on both sides, to 1e-9.
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
            # the same operations in another order (the noise's sum over 16 components): rounding of sums of O(1)
            assert np.allclose(np.ravel(f(x, v, s, form.values)), d(x, v, s), rtol=1e-13, atol=1e-14), kind
