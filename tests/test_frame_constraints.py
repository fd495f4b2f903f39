"""A robot compiled and frame constraints in its own words (issue 28 items 1 and 3), used as a user would.

The compiled loop (robustrack's rigid-body kernels over the robot as data) and the numpy reference
(Pinocchio) integrate the same equations with the same tolerances (rtol 1e-8, atol 1e-12) and differ by
the two solvers' step choices: the trajectories agree to about the tolerances times the error growth of
a short run (observed ≤ 1e-8 rad over 0.5 s), so they are compared at 1e-6 — far below any modelling
difference (a wrong term moves q by O(1) over the run). The kernels themselves are checked against
Pinocchio in ``tests/test_rigid_body.py``.
"""

import warnings

import numpy as np
import pytest

pin = pytest.importorskip("pinocchio")

import sympy as sp  # noqa: E402

from robustrack.compiled import CompileNotice  # noqa: E402
from robustrack.compiled.loop import compiled_loop, fallback_reason  # noqa: E402
from robustrack.constraints import FunctionConstraint, Holonomic, Stabilization, stack  # noqa: E402
from robustrack.controllers import GSS  # noqa: E402
from robustrack.errors import ConstraintError  # noqa: E402
from robustrack.plants import FrameConstraint, URDFPlant, example_robot_urdf  # noqa: E402
from robustrack.requirements import JointTrajectory, consistent_initial_state  # noqa: E402
from robustrack.symbolic import KernelForm  # noqa: E402
from robustrack.tracking import CompilationFallback, TrackingProblem  # noqa: E402

HOME = np.array([0.0, -1.2, 1.4, -1.5, -1.57, 0.0])
STAB = Stabilization.second_order(1.0, 10.0)
TOL = 1e-6  # the two solvers' agreement over a short run (module docstring)


@pytest.fixture(scope="module")
def ur5():
    return URDFPlant(example_robot_urdf("ur5"), payload_mass=2.0, payload_com=[0.0, 0.0, 0.05])


def _demo(arm):
    """The catalog's ur5-plane-circle in a script: the tool on the plane through its start, a circle in it, the
    orientation held."""
    R0, p0 = arm.frame_pose(HOME, "tool0")
    t = sp.Symbol("t", real=True)
    plane = FrameConstraint.plane(arm, "tool0", p0, [0, 0, 1], stabilization=STAB)
    circle = FrameConstraint.trajectory(arm, "tool0", [p0[0] - 0.1 + 0.1 * sp.cos(0.8 * t), p0[1] + 0.1 * sp.sin(0.8 * t),
                                                        p0[2]], t, directions=[[1, 0, 0], [0, 1, 0]], stabilization=STAB)
    return stack(plane, circle, FrameConstraint.orientation(arm, "tool0", R0, stabilization=STAB))


def _run(problem, backend):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return problem.replace(backend=backend).simulate()


def test_a_urdf_tracking_run_compiled_is_the_numpy_run(ur5):
    t = sp.Symbol("t", real=True)
    amp, freq = [0.4, 0.3, 0.3, 0.4, 0.3, 0.5], [0.5, 0.7, 0.9, 0.6, 0.8, 1.0]
    ref = JointTrajectory([h + a * (1 - sp.cos(w * t)) for h, a, w in zip(HOME, amp, freq)], names=ur5.coordinates,
                          t=t, stabilization=STAB)
    problem = TrackingProblem(ur5, ref, GSS(K=10.0, gamma_prime=3.0, beta0=10.0, alpha0=0.5, sigma=1.0), HOME,
                              np.zeros(6), (0.0, 0.5), actual=ur5.replace(payload_mass=2.4), n_points=51)
    fast, slow = _run(problem, "auto"), _run(problem, "numpy")
    assert fast.info["solvers"]["controlled"]["backend"] == "compiled"
    assert fast.info["solvers"]["uncompensated"]["backend"] == "compiled"
    assert slow.info["solvers"]["controlled"]["backend"] == "numpy"
    for name in ("q", "qc", "qa"):
        assert np.abs(getattr(fast, name) - getattr(slow, name)).max() < TOL, name


def test_frame_constraints_tracked_compiled_and_on_numpy_with_their_contact_forces(ur5):
    c = _demo(ur5)
    assert isinstance(c.codegen(), KernelForm) and fallback_reason(ur5, ur5, c) is None
    q0, qd0 = consistent_initial_state(c, HOME, np.zeros(6))
    assert np.abs(c.residual(q0, qd0, 0.0)).max() < 1e-12 and np.abs(c.velocity_residual(q0, qd0, 0.0)).max() < 1e-12
    problem = TrackingProblem(ur5, c, GSS(K=10.0, gamma_prime=3.0, beta0=10.0, alpha0=0.5, sigma=1.0), q0, qd0,
                              (0.0, 0.4), actual=ur5.replace(payload_mass=2.4), n_points=41)
    fast, slow = _run(problem, "auto"), _run(problem, "numpy")
    assert fast.info["solvers"]["nominal"]["backend"] == "compiled"
    for name in ("q", "qc", "qa"):
        assert np.abs(getattr(fast, name) - getattr(slow, name)).max() < TOL, name
    assert np.abs(fast.residual_nominal).max() < 1e-9  # the nominal motion keeps the rows (rtol 1e-8 on O(1) m, rad)
    # the contact force beside Qᶜ: 3 columns per frame block, Qᶜ = Aᵀλ rebuilt from them
    assert fast.info["contact"][:3] == ["tool0 plane F_x (N)", "tool0 plane F_y (N)", "tool0 plane F_z (N)"]
    assert fast.contact.shape == (fast.t.size, 9) and np.abs(fast.contact - slow.contact).max() < 1e-4 * np.abs(
        slow.contact).max()
    k = 17
    q, qd, tk = fast.q[k], fast.qd[k], fast.t[k]
    A, _ = c.matrices(q, qd, tk)
    R = ur5.frame_pose(q, "tool0")[0]
    world = [R @ fast.contact[k, 3 * i:3 * i + 3] for i in range(3)]  # each block's force back in the world
    lam = np.concatenate([[world[0] @ [0, 0, 1]], [world[1][0], world[1][1]], world[2]])
    assert np.abs(A.T @ lam - fast.Qc[k]).max() < 1e-9 * np.abs(fast.Qc[k]).max()
    assert set(fast.contact_peaks()) == set(fast.info["contact"])


def test_a_frame_constraint_crosses_to_a_worker_process_after_use(ur5):
    import pickle

    c = _demo(ur5)
    q, qd = HOME + 0.05, np.full(6, 0.2)
    A, b = c.matrices(q, qd, 0.3)  # the numpy path built its Pinocchio data and lambdified targets
    copy = pickle.loads(pickle.dumps(c))
    for got, want in zip(copy.matrices(q, qd, 0.3), (A, b)):
        assert np.array_equal(got, want)
    assert np.array_equal(copy.codegen().values, c.codegen().values)


def test_a_payload_or_link_mass_compiles_nothing_new(ur5):
    c = _demo(ur5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        compiled_loop(ur5, ur5.replace(payload_mass=2.4), c)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        loop = compiled_loop(ur5, ur5.replace(payload_mass=3.1, payload_com=[0.0, 0.02, 0.1], m_forearm_link=2.0), c)
    assert not [w for w in caught if issubclass(w.category, CompileNotice)]
    assert not np.array_equal(loop.model.pa, loop.model.pn)  # the new masses are data


def test_a_joint_the_kernels_do_not_take_keeps_the_numpy_path_and_says_which():
    model = pin.Model()
    hinge = model.addJoint(0, pin.JointModelRZ(), pin.SE3.Identity(), "hinge")
    model.appendBodyToJoint(hinge, pin.Inertia(1.0, np.array([0.1, 0, 0]), np.eye(3) * 0.01), pin.SE3.Identity())
    model.addBodyFrame("link1", hinge, pin.SE3.Identity(), 0)
    screw = model.addJoint(hinge, pin.JointModelHelicalUnaligned(np.array([0, 0, 1.0]), 0.05),
                           pin.SE3(np.eye(3), np.array([0.3, 0, 0])), "screw")
    model.appendBodyToJoint(screw, pin.Inertia(0.5, np.array([0.05, 0, 0]), np.eye(3) * 0.005), pin.SE3.Identity())
    model.addBodyFrame("link2", screw, pin.SE3.Identity(), 0)
    plant = URDFPlant(model)
    assert plant.codegen() is None
    t = sp.Symbol("t", real=True)
    ref = JointTrajectory([0.2 * sp.sin(t), 0.1 * sp.sin(2 * t)], names=plant.coordinates, t=t, stabilization=STAB)
    problem = TrackingProblem(plant, ref, GSS(), np.zeros(2), np.array([0.2, 0.2]), (0.0, 0.05), n_points=5,
                              uncompensated=False)
    with pytest.warns(CompilationFallback, match=r"joint 'screw' \(JointModelHelicalUnaligned\)"):
        assert problem.simulate().success


def test_stacks_of_frame_constraints_compile_as_one_and_mixed_stacks_say_why(ur5):
    from robustrack.compiled import rigid_body as rb

    c = _demo(ur5)
    form = c.codegen()
    joined = c.constraints[0] & c.constraints[1] & c.constraints[2]
    assert form.key == joined.codegen().key and np.array_equal(form.values, joined.codegen().values)
    q, qd, t = HOME + 0.1, np.full(6, 0.3), 0.6
    out, res = np.empty(c.m * 6 + c.m), np.empty(2 * c.m)
    targets = np.array(sp.lambdify(form.targets[1], list(form.targets[0]))(t), dtype=float)
    rb.frame_rows(q, qd, np.array(form.values), targets, out, res)
    A, b = c.matrices(q, qd, t)
    assert np.abs(out[:c.m * 6] - A.ravel()).max() < 1e-12 and np.abs(out[c.m * 6:] - b).max() < 1e-10
    assert np.abs(res[:c.m] - c.residual(q, qd, t)).max() < 1e-12
    mixed = stack(c.constraints[0], JointTrajectory([0.0] * 6, names=ur5.coordinates))
    assert mixed.codegen() is None
    assert "stacks frame constraints" in fallback_reason(ur5, ur5, mixed)


def test_frame_constraints_refuse_what_they_cannot_be(ur5):
    with pytest.raises(ConstraintError, match="no frame 'toool0'"):
        FrameConstraint.point(ur5, "toool0", [0, 0, 0])
    with pytest.raises(ConstraintError, match="`normal` must be a nonzero direction"):
        FrameConstraint.plane(ur5, "tool0", [0, 0, 0], [0, 0, 0])
    with pytest.raises(ConstraintError, match="`rotation` must be a 3 × 3 rotation"):
        FrameConstraint.orientation(ur5, "tool0", np.ones((3, 3)))
    with pytest.raises(ConstraintError, match="second order"):
        FrameConstraint.point(ur5, "tool0", [0, 0, 0], stabilization=Stabilization.first_order(2.0))
    with pytest.raises(ConstraintError, match="time `t` alone"):
        FrameConstraint.trajectory(ur5, "tool0", [sp.Symbol("a"), 0, 0])


def test_a_function_constraint_gets_the_stabilization_and_the_initial_state_help():
    """A pendulum's length held, written as callables, is the Holonomic one: same A, b (stabilized), same start."""
    x, y, L = sp.symbols("x y L", real=True)
    ref = Holonomic(x**2 + y**2 - L**2, [x, y], stabilization=STAB, params={L: 2.0})

    def A(q, qd, t):
        return 2 * q[..., None, :]

    def b(q, qd, t):
        return -2 * np.sum(qd * qd, axis=-1, keepdims=True)

    def phi(q, qd, t):
        return np.sum(q * q, axis=-1, keepdims=True) - 4.0

    def phid(q, qd, t):
        return 2 * np.sum(q * qd, axis=-1, keepdims=True)

    mine = FunctionConstraint(A, b, 2, 1, residual=phi, holonomic=True, velocity_residual=phid, stabilization=STAB)
    q, qd = np.array([[1.1, 1.9], [0.3, -2.2]]), np.array([[0.4, -0.2], [1.0, 0.5]])
    for got, want in zip(mine.matrices(q, qd, 0.0), ref.matrices(q, qd, 0.0)):
        assert np.allclose(got, want, rtol=1e-14, atol=1e-14)
    q0, qd0 = consistent_initial_state(mine, [1.0, 1.5], [0.3, 0.1])
    assert abs(q0 @ q0 - 4.0) < 1e-12 and abs(q0 @ qd0) < 1e-12
    with pytest.raises(ConstraintError, match="`velocity_residual`"):
        FunctionConstraint(A, b, 2, 1, residual=phi, holonomic=True)
    with pytest.raises(ConstraintError, match="`stabilization` needs `holonomic`"):
        FunctionConstraint(A, b, 2, 1, residual=phi, stabilization=STAB)
    with pytest.raises(ConstraintError, match="first order"):
        FunctionConstraint(A, b, 2, 1, residual=phi, holonomic=False, stabilization=STAB)
