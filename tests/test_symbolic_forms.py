"""Symbolic forms (``codegen()``) of the catalog's plants and constraints.

The compiled tracking loop is generated from sympy expressions of M, Q and A, b
(:mod:`robustrack.symbolic`). For the seed plants and the pendulum the numpy evaluation is
lambdified from the same expressions (one source, :mod:`robustrack.plants.symbolic_model`;
their independent truth, the seeds' closed forms, is in tests/test_model_sources.py); here
the form is compared with the numpy evaluation at random states (the evaluation machinery:
parameter order, batch assembly), and the compiled nominal right-hand side is compared with
the numpy reference
(:func:`robustrack.tracking.rhs.nominal_motion`) for every catalog scenario of the
seed kinds, which includes the singular mass matrices (augmented system, W 4.3.8) of
the rolling wheel, the two masses with m1 = 0 and the quaternion rigid body.

Tolerance: 1e-12 relative (the largest deviation over the entries, divided by the
largest entry of the numpy value). Both sides are double-precision evaluations of the
same closed form written in two ways, so they differ by rounding only: a few ulps
(~1e-16) of the largest intermediate term, times the small growth of the
well-conditioned linear algebra in the fundamental equation. A wrong term, sign or
factor shows up at O(1).
"""

import dataclasses

import numpy as np
import pytest
import sympy as sp

from robustrack.constraints import FunctionConstraint
from robustrack.errors import ConstraintError
from robustrack.plants import LagrangianPlant, examples
from robustrack.scenarios import KINDS, list_scenarios, load_scenario
from robustrack.symbolic import SymbolicForm
from robustrack.compiled import systems as rk
from robustrack.compiled.loop import compiled_loop, fallback_reason, no_dense
from robustrack.tracking.rhs import nominal_motion
from robustrack.plants import ForcedPlant
from robustrack.uncertainty import FunctionDisturbance, SinusoidalDisturbance

RTOL = 1e-12  # see the module docstring
N_STATES = 24

# The catalog scenarios of the seed kinds (kinds.py, tracking_kinds.py): seed plants, the
# pendulum, Appell's Lagrangian particle. Kinds defined elsewhere bring plants of their own.
SEED_KIND_MODULES = ("robustrack.scenarios.kinds", "robustrack.scenarios.tracking_kinds")
CATALOG = sorted(s.name for s in list_scenarios() if KINDS[s.kind].build.__module__ in SEED_KIND_MODULES)
# Terms the catalog's values zero out: KU's second Cartesian pendulum (μ = −0.1) and a
# body torque on the quaternion rigid body.
VARIANTS = [(name, ()) for name in CATALOG] + [
    ("cartesian-pendulum", ("constraint.mu=-0.1", "initial.a=1.0")),
    ("quaternion-rigid-body", ("plant.torque=[0.3,-0.2,0.5]",)),
]


def _cases(variants):
    return [pytest.param(name, ov, id=":".join([name, *ov])) for name, ov in variants]


def _problem(name, overrides=()):
    """(plant, constraint, t_span, q0, qd0) of a catalog scenario (the nominal plant of a tracking one)."""
    pb = load_scenario(name, list(overrides) or None).build()
    plant = pb.plant if hasattr(pb, "plant") else pb.nominal
    return plant, pb.constraint, pb.t_span, np.asarray(pb.q0, float), np.asarray(pb.qd0, float)


def _states(q0, qd0, t_span, seed):
    """N_STATES random (q, q̇, t): q, q̇ spread around the initial state, t in the horizon."""
    rng = np.random.default_rng(seed)
    k, n = N_STATES, q0.size
    q = q0 + rng.uniform(-1.0, 1.0, (k, n)) * (1.0 + np.abs(q0))
    qd = qd0 + rng.uniform(-1.0, 1.0, (k, n)) * (1.0 + np.abs(qd0))
    t = rng.uniform(*t_span, k)
    return q, qd, t


def _evaluate(form: SymbolicForm, n: int):
    """The form's two matrices as a numpy function of (q, q̇, t) at its parameter values."""
    q = sp.symbols(f"q0:{n}", real=True)
    qd = sp.symbols(f"qd0:{n}", real=True)
    t = sp.Symbol("t", real=True)
    X, Y, params = form.build(q, qd, t)
    assert len(params) == form.values.size
    f = sp.lambdify([q, qd, t, params], [sp.Matrix(X), sp.Matrix(Y)], modules="numpy", dummify=True)
    return lambda qi, qdi, ti: [np.asarray(v, dtype=float) for v in f(qi, qdi, ti, form.values)]


def _relative(a, ref) -> float:
    """max |a − ref| / max |ref| (exact agreement required where ref is all zero)."""
    a, ref = np.asarray(a, float), np.asarray(ref, float)
    assert a.shape == ref.shape
    scale = np.max(np.abs(ref)) if ref.size else 0.0
    if scale == 0.0:
        return 0.0 if not np.any(a) else np.inf
    return float(np.max(np.abs(a - ref)) / scale)


@pytest.mark.parametrize("name, overrides", _cases(VARIANTS))
def test_plant_form_matches_mass_matrix_and_given_force(name, overrides):
    plant, _, t_span, q0, qd0 = _problem(name, overrides)
    form = plant.codegen()
    assert form is not None
    f = _evaluate(form, plant.n)
    worst = 0.0
    for q, qd, t in zip(*_states(q0, qd0, t_span, 1)):
        M, Q = f(q, qd, t)
        worst = max(worst, _relative(M, plant.mass_matrix(q, t)),
                    _relative(Q[:, 0], plant.given_force(q, qd, t)))
    assert worst <= RTOL


@pytest.mark.parametrize("name, overrides", _cases(v for v in VARIANTS if _problem(*v)[1] is not None))
def test_constraint_form_matches_matrices(name, overrides):
    plant, con, t_span, q0, qd0 = _problem(name, overrides)
    form = con.codegen()
    assert form is not None
    f = _evaluate(form, plant.n)
    worst = 0.0
    for q, qd, t in zip(*_states(q0, qd0, t_span, 2)):
        A, b = f(q, qd, t)
        A_ref, b_ref = con.matrices(q, qd, t)
        worst = max(worst, _relative(A, A_ref), _relative(b[:, 0], b_ref))
    assert worst <= RTOL


@pytest.mark.parametrize("name, overrides", _cases(VARIANTS))
def test_compiled_nominal_rhs_matches_numpy(name, overrides):
    plant, con, t_span, q0, qd0 = _problem(name, overrides)
    loop = compiled_loop(plant, plant, con)
    assert loop is not None, fallback_reason(plant, plant, con)
    n = plant.n
    worst = 0.0
    for q, qd, t in zip(*_states(q0, qd0, t_span, 3)):
        dy = rk.system_rhs(loop.nominal, t, np.concatenate([q, qd]), no_dense(2 * loop.n), loop.model)
        assert np.array_equal(dy[:n], qd)
        worst = max(worst, _relative(dy[n:], nominal_motion(plant, con, q, qd, t).qdd))
    assert worst <= RTOL


# --------------------------------------------------------------------------- keys and values
def _perturbed(plant):
    """The same plant class with every parameter value changed."""
    if isinstance(plant, LagrangianPlant):
        return plant.replace(**{k: 1.5 * v + 0.25 for k, v in plant.params.items()})
    return plant.replace(**{f.name: 1.5 * np.asarray(getattr(plant, f.name)) + 0.25
                            for f in dataclasses.fields(plant)})


def _one_scenario_per_plant_class():
    first = {}
    for name in CATALOG:
        first.setdefault(type(_problem(name)[0]), name)
    return sorted(first.values())


@pytest.mark.parametrize("name", _one_scenario_per_plant_class())
def test_same_structure_shares_the_key_not_the_values(name):
    plant = _problem(name)[0]
    a, b = plant.codegen(), _perturbed(plant).codegen()
    assert a.key == b.key
    assert a.values.shape == b.values.shape and not np.any(a.values == b.values)


# other constraint parameters than the catalog's, and the plant-supplied ones perturbed
OTHER_CONSTRAINT_KW = {"cartesian-pendulum": {"L": 10.0, "mu": -0.1}, "coupled-duffing": {"alpha": 0.4},
                       "rolling-wheel": {"beta": 0.3}, "two-ellipse-particles": {"eps": (0.2, 0.1)},
                       "speed-reducer": {"r": 0.3}}


@pytest.mark.parametrize("name", sorted(examples.EXAMPLE_CONSTRAINTS))
def test_seed_constraints_share_the_key_not_the_values(name):
    build = examples.EXAMPLE_CONSTRAINTS[name]
    plant = examples.EXAMPLE_PLANTS[name]()
    a = build(plant).codegen()
    b = build(_perturbed(plant), **OTHER_CONSTRAINT_KW.get(name, {})).codegen()
    assert a.key == b.key and a.key.startswith(f"examples.{build.__name__}/")
    assert a.values.shape == b.values.shape
    assert a.values.size == 0 or not np.array_equal(a.values, b.values)


def test_lagrangian_key_is_the_expressions_not_the_object():
    x, v, m, k = sp.symbols("x v m k")

    def spring(**values):
        return LagrangianPlant.from_energies([x], m * v**2 / 2, k * x**2 / 2, qd=[v], params=values)

    a, b = spring(m=1.0, k=2.0).codegen(), spring(m=3.0, k=5.0).codegen()  # two derivations
    assert a.key == b.key and a.values.tolist() == [2.0, 1.0] and b.values.tolist() == [5.0, 3.0]
    stiffer = LagrangianPlant.from_energies([x], m * v**2 / 2, k * x**4 / 4, qd=[v], params={m: 1.0, k: 2.0})
    assert stiffer.codegen().key != a.key


def test_sampled_parameters_have_no_form():
    two = np.array([1.0, 1.1])
    assert examples.CoupledDuffing(m1=2.0 * two).codegen() is None
    assert examples.QuaternionRigidBody(J=np.ones((2, 3))).codegen() is None
    wheel = examples.RollingWheel(R=0.5 * two)
    assert wheel.codegen() is None and examples.rolling_wheel_constraint(wheel).codegen() is None
    springs = examples.TwoMassSprings(k1=2.0 * two)
    assert examples.two_mass_springs_constraint(springs).codegen() is None
    x, v, m = sp.symbols("x v m")
    assert LagrangianPlant.from_energies([x], m * v**2 / 2, 0, qd=[v], params={m: two}).codegen() is None


def test_function_constraint_takes_only_a_symbolic_form():
    A, b = (lambda q, qd, t: np.ones(q.shape[:-1] + (1, 1))), (lambda q, qd, t: np.zeros(q.shape[:-1] + (1,)))
    assert FunctionConstraint(A, b, n=1, m=1).codegen() is None
    with pytest.raises(ConstraintError, match="SymbolicForm"):
        FunctionConstraint(A, b, n=1, m=1, codegen=lambda q, qd, t: None)


# --------------------------------------------------------------------------- forced plants
def test_forced_plant_adds_a_sinusoidal_force_and_nothing_else():
    plant, con, t_span, q0, qd0 = _problem("duffing")
    forced = ForcedPlant(plant, SinusoidalDisturbance([0.7, -0.3], omega=[2.0, 5.0], phase=[0.1, 0.0]))
    form = forced.codegen()
    assert form.key == f"ForcedPlant/{plant.codegen().key}/sinusoidal"
    f = _evaluate(form, 2)
    loop = compiled_loop(forced, forced, con)
    worst = 0.0
    for q, qd, t in zip(*_states(q0, qd0, t_span, 4)):
        M, Q = f(q, qd, t)
        dy = rk.system_rhs(loop.nominal, t, np.concatenate([q, qd]), no_dense(2 * loop.n), loop.model)
        worst = max(worst, _relative(M, forced.mass_matrix(q, t)), _relative(Q[:, 0], forced.given_force(q, qd, t)),
                    _relative(dy[2:], nominal_motion(forced, con, q, qd, t).qdd))
    assert worst <= RTOL


def test_forced_plant_without_closed_form_is_not_compiled():
    # ForcedPlant reads missing attributes from its base plant; codegen must not be one of
    # them, or the compiled loop would run the base plant and drop δQ.
    plant = _problem("duffing")[0]
    forced = ForcedPlant(plant, FunctionDisturbance(lambda q, qd, t: 0.1 * np.tanh(qd), bound=0.1))
    assert forced.codegen() is None
    assert "ForcedPlant adds a given force δQ" in fallback_reason(forced, forced, None)  # and says it has no compiled form
    sampled = ForcedPlant(plant, SinusoidalDisturbance(np.ones((5, 1, 2)), omega=1.0))
    assert sampled.codegen() is None


class _Spring:
    """A user perturbation δQ = −k ∘ q that offers its own symbolic terms (the protocol)."""

    def __init__(self, k):
        self.k = np.asarray(k, dtype=float)

    def __call__(self, q, qd, t=0.0):
        return -self.k * np.asarray(q, dtype=float)

    def codegen_terms(self, n):
        def build(q, qd, t):
            k = [sp.Dummy(f"k{i}", real=True) for i in range(n)]  # Dummies: no clash with the plant's k1, k2
            return sp.Matrix([-k[i] * q[i] for i in range(n)]), k

        return SymbolicForm("spring", self.k, build)


def test_forced_plant_takes_any_disturbance_that_offers_its_terms():
    """ForcedPlant asks δQ for its terms (no disturbance class is special): M and Q + δQ of the
    form agree with the numpy plant; the key names δQ's form."""
    plant, con, t_span, q0, qd0 = _problem("duffing")
    forced = ForcedPlant(plant, _Spring([3.0, 0.5]))
    form = forced.codegen()
    assert form.key == f"ForcedPlant/{plant.codegen().key}/spring"
    f = _evaluate(form, 2)
    worst = 0.0
    for q, qd, t in zip(*_states(q0, qd0, t_span, 5)):
        M, Q = f(q, qd, t)
        worst = max(worst, _relative(M, forced.mass_matrix(q, t)), _relative(Q[:, 0], forced.given_force(q, qd, t)))
    assert worst <= RTOL


def test_a_sinusoid_subclass_with_its_own_call_offers_no_terms():
    """Inherited terms would describe the parent's force, not the subclass's: refused."""

    class Doubled(SinusoidalDisturbance):
        def __call__(self, q, qd, t=0.0):
            return 2 * super().__call__(q, qd, t)

    plant = _problem("duffing")[0]
    assert Doubled([0.7, -0.3], omega=2.0).codegen_terms(2) is None
    assert ForcedPlant(plant, Doubled([0.7, -0.3], omega=2.0)).codegen() is None
    assert SinusoidalDisturbance([0.7, -0.3], omega=2.0).codegen_terms(3) is None  # 2 amplitudes, 3 coordinates
