"""Requirements as objects (robustrack.requirements) against independent truths, and stack() on the compiled path."""

import numpy as np
import pytest
import sympy as sp

from robustrack.constraints import Holonomic, Nonholonomic, Stabilization, stack
from robustrack.errors import InitialStateError
from robustrack.plants import Plant
from robustrack.requirements import (JointTrajectory, TaskSpaceTrajectory, consistent_initial_state,
                                     max_abs_task_error, task_error)

L1, L2 = 0.5, 0.4
t = sp.Symbol("t")
CIRCLE = [0.45 + 0.15 * sp.cos(t), 0.25 + 0.15 * sp.sin(t)]


def fk(q):
    return [L1 * sp.cos(q[0]) + L2 * sp.cos(q[0] + q[1]), L1 * sp.sin(q[0]) + L2 * sp.sin(q[0] + q[1])]


def tip_by_hand(q):
    """The tip of the arm, written again with numpy (not through the requirement's sympy fk)."""
    return np.stack([L1 * np.cos(q[:, 0]) + L2 * np.cos(q[:, 0] + q[:, 1]),
                     L1 * np.sin(q[:, 0]) + L2 * np.sin(q[:, 0] + q[:, 1])], axis=1)


def test_consistent_initial_state_meets_phi_and_phi_dot():
    req = TaskSpaceTrajectory(fk, CIRCLE, names=["a", "b"])
    for t0 in (0.0, 1.3):
        q0, qd0 = consistent_initial_state(req, [0.2, 1.5], [0.0, 0.0], t0)
        xd = np.array([0.45 + 0.15 * np.cos(t0), 0.25 + 0.15 * np.sin(t0)])
        vd = np.array([-0.15 * np.sin(t0), 0.15 * np.cos(t0)])
        assert np.abs(tip_by_hand(q0[None])[0] - xd).max() <= 1e-12  # φ = 0 to the tolerance
        J = np.array([[-L1 * np.sin(q0[0]) - L2 * np.sin(q0.sum()), -L2 * np.sin(q0.sum())],
                      [L1 * np.cos(q0[0]) + L2 * np.cos(q0.sum()), L2 * np.cos(q0.sum())]])
        assert np.abs(J @ qd0 - vd).max() <= 1e-12  # φ̇ = J q̇ − ẋ_d = 0
    with pytest.raises(InitialStateError, match="did not converge"):  # a circle out of the arm's reach
        consistent_initial_state(TaskSpaceTrajectory(fk, [2.0 + 0 * t, 0 * t], names=["a", "b"]), [0.1, 0.1], [0, 0])


def test_joint_trajectory_from_sympy_and_from_callables_agree():
    sym = JointTrajectory([sp.sin(t), 0.5 * sp.cos(2 * t)], names=["a", "b"],
                          stabilization=Stabilization.second_order(1.0, 4.0))
    fun = JointTrajectory(lambda s: [np.sin(s), 0.5 * np.cos(2 * s)], names=["a", "b"],
                          qd_d=lambda s: [np.cos(s), -np.sin(2 * s)], qdd_d=lambda s: [-np.sin(s), -2 * np.cos(2 * s)],
                          stabilization=Stabilization.second_order(1.0, 4.0))
    q, qd = np.array([0.1, 0.2]), np.array([0.3, -0.4])
    for a, b in zip(sym.matrices(q, qd, 0.7), fun.matrices(q, qd, 0.7)):
        assert np.abs(a - b).max() < 1e-14
    assert np.abs(sym.residual(q, qd, 0.7) - fun.residual(q, qd, 0.7)).max() < 1e-15
    q0, qd0 = consistent_initial_state(fun, [0, 0], [0, 0], 0.7)
    assert np.allclose(q0, [np.sin(0.7), 0.5 * np.cos(1.4)], atol=1e-15) and np.allclose(qd0, [np.cos(0.7), -np.sin(1.4)])
    assert sym.codegen() is not None and fun.codegen() is None  # sympy compiles, callables run on numpy


def test_tip_error_of_a_run_equals_the_hand_computed_one():
    from robustrack.controllers import GSS
    from robustrack.tracking import TrackingProblem

    def M(q, m2):
        c2 = np.cos(q[1])
        return [[0.1 + m2 * (L1**2 + 0.04 + 2 * L1 * 0.2 * c2), 0.01 + m2 * (0.04 + L1 * 0.2 * c2)],
                [0.01 + m2 * (0.04 + L1 * 0.2 * c2), 0.01 + m2 * 0.04]]

    def Q(q, qd, m2):
        h = m2 * L1 * 0.2 * np.sin(q[1])
        return [h * qd[1] * (2 * qd[0] + qd[1]) - 3 * np.cos(q[0]), -h * qd[0] ** 2 - np.cos(q[0] + q[1])]

    plant = Plant.from_functions(M, Q, params={"m2": 0.8}, names=["a", "b"], kinds=["angle", "angle"])
    req = TaskSpaceTrajectory(fk, CIRCLE, names=plant.coordinates, stabilization=Stabilization.second_order(1, 10))
    q0, qd0 = consistent_initial_state(req, [0.2, 1.5], [0, 0])
    res = TrackingProblem(plant, req, GSS(K=10.0, gamma_prime=20.0, beta0=10.0), q0, qd0, (0, 0.3),
                          actual=plant.replace(m2=0.96), n_points=31).simulate()
    xd = np.stack([0.45 + 0.15 * np.cos(res.t), 0.25 + 0.15 * np.sin(res.t)], axis=1)
    by_hand = np.abs(tip_by_hand(res.qc) - xd).max()
    assert abs(max_abs_task_error(res, req) - by_hand) <= 1e-15 and by_hand > 0
    assert np.abs(task_error(res, req, which="nominal")).max() < 1e-8  # the nominal run meets the path
    fig = res.plot(kind="task")
    assert fig.axes[1].get_ylabel().endswith("(m)")
    assert "(rad)" in res.plot(kind="coordinates").axes[0].get_ylabel()  # units from the plant's kinds


def test_stack_keeps_the_compiled_form_and_separates_same_named_parameters():
    from robustrack.compiled.codegen import CONSTRAINT_FUNCTIONS  # noqa: F401  (the generator exists

    x, y, xd, yd, L = sp.symbols("x y xd yd L")
    c1 = Holonomic(x**2 + y**2 - L**2, [x, y], params={L: 2.0})
    c2 = Nonholonomic(xd - y * L, [x, y], [xd, yd], params={L: 3.0})
    s = stack(c1, c2)
    form = s.codegen()
    assert form is not None and form.values.tolist() == [2.0, 3.0]
    q, qd = sp.symbols("q0 q1", real=True), sp.symbols("u0 u1", real=True)
    A, b, params = form.build(q, qd, sp.Symbol("t"))
    assert len(set(params)) == 2 and A.shape == (2, 2)
    f = sp.lambdify([*q, *qd, *params], [list(A), list(b)])
    A_num, b_num = s.matrices([1.0, 0.5], [0.2, -0.1])
    got = f(1.0, 0.5, 0.2, -0.1, 2.0, 3.0)
    assert np.allclose(np.ravel(got[0]), A_num.ravel(), atol=1e-15) and np.allclose(got[1], b_num, atol=1e-15)
    assert stack(c1, JointTrajectory(lambda s: [s, s], names=["x", "y"], qd_d=lambda s: [1, 1],
                                     qdd_d=lambda s: [0, 0])).codegen() is None


def test_sympy_mechanics_kinds_pydy_system_and_dynamicsymbols_by_name():
    from sympy.physics.mechanics import LagrangesMethod, dynamicsymbols

    from robustrack.errors import ConstraintError
    from robustrack.plants import LagrangianPlant

    th = dynamicsymbols("theta")
    m, g, L = sp.symbols("m g L")
    lag = m * L**2 * th.diff() ** 2 / 2 + m * g * L * sp.cos(th)
    lm = LagrangesMethod(lag, [th])
    pydy_like = type("System", (), {"eom_method": lm})()  # what pydy.system.System holds
    plant = LagrangianPlant.from_sympy_mechanics(pydy_like, {m: 1.0, g: 9.81, L: 2.0}, kinds=["angle"])
    assert plant.coordinate_kinds == ("angle",) and plant.coordinates == ("theta",)
    # a requirement in the plant's dynamicsymbols and a plain Symbol("t") (no t= needed)
    req = Holonomic(th - 0.1 * sp.sin(sp.Symbol("t")), [th])
    assert req.q[0].name == "theta" and str(req.t) == "t"
    assert abs(req.residual([0.1 * np.sin(0.5)], None, 0.5)[0]) < 1e-16
    with pytest.raises(ConstraintError, match="thet"):  # a misspelt coordinate is named, never guessed
        Holonomic(sp.Symbol("thet") - 1, [th])


def test_requirements_and_symbolic_constraints_pickle_with_the_standard_library():
    """A campaign sends its loop to worker processes with :mod:`pickle` (no cloudpickle on a base install):
    a requirement, a Holonomic constraint and a Lagrangian plant come back computing the same numbers."""
    import pickle

    from robustrack.plants import LagrangianPlant

    a, b = sp.symbols("a b", real=True)
    stab = Stabilization.second_order(1.0, 10.0)
    objects = [TaskSpaceTrajectory(fk, CIRCLE, names=["a", "b"], stabilization=stab),
               JointTrajectory([sp.sin(t), 0.5], names=["a", "b"], stabilization=stab),
               Holonomic([a**2 + b**2 - 1], [a, b], stabilization=stab)]
    q, qd = np.array([[0.3, 1.2], [-0.4, 0.9]]), np.array([[0.1, -0.2], [0.5, 0.3]])
    for obj in objects:
        copy = pickle.loads(pickle.dumps(obj))
        for x, y in zip(obj.matrices(q, qd, 0.7), copy.matrices(q, qd, 0.7)):
            np.testing.assert_array_equal(x, y)  # the same expressions lambdified again: the same floats
        np.testing.assert_array_equal(obj.velocity_residual(q, qd, 0.7), copy.velocity_residual(q, qd, 0.7))
    task = pickle.loads(pickle.dumps(objects[0]))
    np.testing.assert_array_equal(task.task_position(q), tip_by_hand(q))
    m, g = sp.symbols("m g", positive=True)
    x, v = sp.symbols("x v")
    plant = LagrangianPlant.from_energies([x], m * v**2 / 2, m * g * x, params={m: 2.0, g: 9.81}, qd=[v])
    copy = pickle.loads(pickle.dumps(plant))
    np.testing.assert_array_equal(copy.given_force([[0.3]], [[0.1]]), [[-2.0 * 9.81]])  # Q = −m g
    np.testing.assert_array_equal(copy.mass_matrix([[0.3]]), [[[2.0]]])
