"""robustrack's compiled rigid-body kernels and frame constraints against Pinocchio (an independent peer).

Three robots: the UR5 and the Panda of example-robot-data, and a tree written here with a continuous joint,
an unaligned prismatic joint, a branch, rotated joint placements, full inertia tensors, damping and an
armature (set on the Pinocchio model). At random states every kernel — M (CRBA), the bias Q = −nle − D q̇
(RNEA), τ of RNEA with q̈, ∂M/∂q, ∂Q/∂q, ∂Q/∂q̇ (complex step), a frame's placement, Jacobian and J̇q̇ —
and the constrained q̈ and contact forces of held frames against ``pinocchio.constraintDynamics``
(CONTACT_3D / CONTACT_6D) agree to 1e-11 relative: both sides are double-precision evaluations of the
same formulas in different orders, so they differ by rounding amplified by a few dozen operations
(observed ≤ 1.2e-14); Pinocchio's ∂M/∂q is itself a difference of two RNEA derivatives, whose
cancellation costs it a digit or two. 1e-11 leaves a margin of 100× over that and still catches any
wrong term (a wrong sign or a missing product is O(1)).
"""

import warnings

import numpy as np
import pytest

pin = pytest.importorskip("pinocchio")

from robustrack.constraints import Stabilization, stack  # noqa: E402
from robustrack.mechanics import constraint_multipliers, solve_constrained  # noqa: E402
from robustrack.plants import FrameConstraint, URDFPlant, example_robot_urdf  # noqa: E402
from robustrack.plants.robot_data import joint_axes, pack_robot  # noqa: E402

REL = 1e-11

TREE_URDF = """<?xml version="1.0"?>
<robot name="tree">
  <link name="base"/>
  <link name="l1"><inertial><origin xyz="0.02 -0.01 0.1" rpy="0.1 0.2 0.3"/><mass value="2.0"/>
    <inertia ixx="0.03" ixy="0.002" ixz="-0.001" iyy="0.025" iyz="0.003" izz="0.02"/></inertial></link>
  <link name="l2"><inertial><origin xyz="0.1 0.0 0.03" rpy="0 0.4 0"/><mass value="1.2"/>
    <inertia ixx="0.01" ixy="0.001" ixz="0.0" iyy="0.012" iyz="-0.002" izz="0.008"/></inertial></link>
  <link name="l3"><inertial><origin xyz="0.0 0.05 0.15" rpy="0 0 0"/><mass value="0.7"/>
    <inertia ixx="0.004" ixy="0.0" ixz="0.0005" iyy="0.005" iyz="0.0" izz="0.002"/></inertial></link>
  <link name="l4"><inertial><origin xyz="0.0 0.08 0.0" rpy="0.3 0 0"/><mass value="0.5"/>
    <inertia ixx="0.002" ixy="0.0" ixz="0.0" iyy="0.001" iyz="0.0" izz="0.002"/></inertial></link>
  <link name="tip"/>
  <joint name="spin" type="continuous"><parent link="base"/><child link="l1"/>
    <origin xyz="0 0 0.1" rpy="0 0 0.2"/><axis xyz="0 0 1"/><dynamics damping="0.05"/></joint>
  <joint name="slide" type="prismatic"><parent link="l1"/><child link="l2"/>
    <origin xyz="0.05 0.02 0.2" rpy="0.3 -0.2 0.1"/><axis xyz="1 0 1"/><limit lower="-1" upper="1" effort="50" velocity="1"/>
    <dynamics damping="0.2"/></joint>
  <joint name="elbow" type="revolute"><parent link="l2"/><child link="l3"/>
    <origin xyz="0.2 0 0.05" rpy="0 0.5 0"/><axis xyz="0 1 0"/><limit lower="-3" upper="3" effort="20" velocity="3"/></joint>
  <joint name="side" type="revolute"><parent link="l1"/><child link="l4"/>
    <origin xyz="0 0.1 0.1" rpy="0.2 0 0"/><axis xyz="1 0.5 0"/><limit lower="-3" upper="3" effort="20" velocity="3"/></joint>
  <joint name="tool" type="fixed"><parent link="l3"/><child link="tip"/><origin xyz="0.03 0.0 0.25" rpy="0.1 0.2 -0.3"/></joint>
</robot>
"""


def _tree_model(tmp_path_factory):
    path = tmp_path_factory.mktemp("urdf") / "tree.urdf"
    path.write_text(TREE_URDF)
    model = pin.buildModelFromUrdf(str(path))
    model.armature = np.array([0.01, 0.02, 0.0, 0.03])
    return model


@pytest.fixture(scope="module", params=["ur5", "panda", "tree"])
def robot(request, tmp_path_factory):
    """(URDFPlant, frame name) of each robot."""
    if request.param == "ur5":
        return URDFPlant(example_robot_urdf("ur5"), payload_mass=1.5, payload_com=[0.01, 0.0, 0.05]), "tool0"
    if request.param == "panda":
        return URDFPlant(example_robot_urdf("panda_description/urdf/panda.urdf")), "panda_hand_tcp"
    return URDFPlant(_tree_model(tmp_path_factory), payload_frame="tip", payload_mass=0.3), "tip"


def _pin(plant):
    """Pinocchio's model with the plant's inertias (payload included), and a data."""
    model = plant._scratch["model"]
    return model, model.createData()


def _states(n, count=4, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.uniform(-2, 2, size=(3, n)) for _ in range(count)]


def _rel(a, b):
    return float(np.max(np.abs(np.asarray(a) - np.asarray(b))) / max(1.0, float(np.max(np.abs(b)))))


def test_the_tree_has_the_joints_it_is_written_for(tmp_path_factory):
    model = _tree_model(tmp_path_factory)
    kinds = [kind for kind, _ in joint_axes(pin, model)]
    assert kinds == ["continuous", "revolute", "prismatic", "revolute"]  # Pinocchio: spin, side, slide, elbow
    assert model.nq == 5 and model.nv == 4  # the continuous joint is (cos, sin) in Pinocchio
    plant = URDFPlant(model)
    assert plant.n == 4 and plant.codegen() is not None


def test_mass_matrix_bias_and_inverse_dynamics(robot):
    from robustrack.compiled import rigid_body as rb

    plant, _ = robot
    model, data = _pin(plant)
    md = plant.packed
    n = plant.n
    for q, v, a in _states(n):
        qp = plant.robot.to_pinocchio(q)
        M = np.empty((n, n))
        rb.crba(md, q, M)
        Mp = pin.crba(model, data, qp)
        Mp = np.triu(Mp) + np.triu(Mp, 1).T
        assert _rel(M, Mp) < REL
        Q = np.empty(n)
        rb.given_force(md, q, v, Q)
        assert _rel(Q, -pin.nonLinearEffects(model, data, qp, v) - model.damping * v) < REL
        tau = np.empty(n)
        rb.rnea(md, q, v, a, True, tau)
        assert _rel(tau, pin.rnea(model, data, qp, v, a)) < REL
        # and the numpy path of the plant (Pinocchio) says the same
        assert _rel(plant.mass_matrix(q), M) < REL and _rel(plant.given_force(q, v), Q) < REL


def test_derivatives_by_the_complex_step(robot):
    from robustrack.compiled import rigid_body as rb

    plant, _ = robot
    n = plant.n
    for q, v, _ in _states(n, count=2, seed=1):
        D, Gq, Gv = np.empty((n, n, n)), np.empty((n, n)), np.empty((n, n))
        rb.mass_dq(plant.packed, q, D)
        rb.force_derivative(plant.packed, q, v, False, Gq)
        rb.force_derivative(plant.packed, q, v, True, Gv)
        dM, dQq, dQv = plant.derivatives(q, v)  # Pinocchio's RNEA derivatives ([i, j, k] = ∂M_ij/∂q_k)
        assert _rel(D, np.transpose(dM, (2, 0, 1))) < REL
        assert _rel(Gq, dQq) < REL
        assert _rel(Gv, dQv) < REL


def test_frame_placement_jacobian_and_classical_acceleration(robot):
    from robustrack.compiled import rigid_body as rb

    plant, frame = robot
    model, data = _pin(plant)
    n = plant.n
    fid = model.getFrameId(frame)
    f = model.frames[fid]
    lwa = pin.ReferenceFrame.LOCAL_WORLD_ALIGNED
    for q, v, _ in _states(n, seed=2):
        S = np.empty((n, rb.W_SIZE))
        rb.world_motion(plant.packed, q, v, S)
        Rf, pf, J, vf, af = np.empty((3, 3)), np.empty(3), np.empty((6, n)), np.empty(6), np.empty(6)
        rb.frame_point(plant.packed, f.parentJoint - 1, np.array(f.placement.rotation), np.array(f.placement.translation),
                       S, Rf, pf, J, vf, af)
        qp = plant.robot.to_pinocchio(q)
        pin.forwardKinematics(model, data, qp, v, np.zeros(n))
        pin.updateFramePlacements(model, data)
        assert _rel(pf, data.oMf[fid].translation) < REL and _rel(Rf, data.oMf[fid].rotation) < REL
        assert _rel(J, pin.computeFrameJacobian(model, data, qp, fid, lwa)) < REL
        acc = pin.getFrameClassicalAcceleration(model, data, fid, lwa)
        assert _rel(af, np.concatenate([acc.linear, acc.angular])) < REL
        vel = pin.getFrameVelocity(model, data, fid, lwa)
        assert _rel(vf, np.concatenate([vel.linear, vel.angular])) < REL


def _constraint_dynamics(model, data, frame, contact, qp, v):
    """q̈ and the contact force (LOCAL: in the frame) of Pinocchio's constraintDynamics at Pinocchio's configuration."""
    f = model.frames[model.getFrameId(frame)]
    cm = pin.RigidConstraintModel(contact, model, f.parentJoint, f.placement, pin.ReferenceFrame.LOCAL)
    models, datas = pin.StdVec_RigidConstraintModel(), pin.StdVec_RigidConstraintData()
    models.append(cm)
    datas.append(cm.createData())
    pin.initConstraintDynamics(model, data, models, datas)
    prox = pin.ProximalSettings(1e-14, 1e-12, 200)  # (accuracy, μ, iterations): converged to rounding
    ddq = pin.constraintDynamics(model, data, qp, v, -model.damping * v, models, datas, prox)
    return np.array(ddq), np.array(data.lambda_c)


@pytest.mark.parametrize("contact", ["3d", "6d"])
def test_constrained_acceleration_and_contact_force_against_constraint_dynamics(robot, contact):
    """A point held (CONTACT_3D, any velocity: the classical acceleration of the point is the constraint in both)
    and the full pose held (CONTACT_6D, a velocity that keeps the frame at rest, where Pinocchio's spatial and our
    classical accelerations coincide): q̈ from the kernels' M, Q and A, b and from Pinocchio's rows, λ turned into
    the frame's force and moment."""
    from robustrack.compiled import rigid_body as rb

    plant, frame = robot
    model, data = _pin(plant)
    n = plant.n
    if contact == "3d":
        c = FrameConstraint.point(plant, frame, [0.3, 0.1, 0.4])
        kind = pin.ContactType.CONTACT_3D
    else:
        c = FrameConstraint.pose(plant, frame, [0.3, 0.1, 0.4], np.eye(3))
        kind = pin.ContactType.CONTACT_6D
    form = c.codegen()
    for q, v, _ in _states(n, count=3, seed=3):
        if contact == "6d":
            A, _ = c.matrices(q, v)
            null = np.linalg.svd(A)[2][A.shape[0]:]
            v = null.T @ v[:len(null)]
        qp = plant.robot.to_pinocchio(q)
        ddq_pin, lam_pin = _constraint_dynamics(model, data, frame, kind, qp, v)
        M, Q = np.empty((n, n)), np.empty(n)
        rb.crba(plant.packed, q, M)
        rb.given_force(plant.packed, q, v, Q)
        out, res = np.empty(c.m * n + c.m), np.empty(2 * c.m)
        rb.frame_rows(q, v, np.array(form.values), np.zeros(0), out, res)
        A, b = out[:c.m * n].reshape(c.m, n), out[c.m * n:]
        An, bn = c.matrices(q, v)  # the numpy path: Pinocchio's frame kinematics
        assert _rel(A, An) < REL and _rel(b, bn) < REL
        scale = max(1.0, np.abs(np.linalg.solve(M, Q)).max())  # q̈ may vanish (6 rows on 6 joints)
        for MM, QQ, AA, bb in ((M, Q, A, b), (plant.mass_matrix(q), plant.given_force(q, v), An, bn)):
            qdd = solve_constrained(MM, QQ, AA, bb).qdd
            assert np.abs(qdd - ddq_pin).max() / scale < REL
            lam = constraint_multipliers(MM, QQ, AA, bb)
            if np.linalg.matrix_rank(AA) == c.m:
                assert _rel(c.contact(q, v, 0.0, lam), lam_pin) < REL
            else:  # more rows than the robot can hold (6 on the 4-joint tree): λ is not unique, Qᶜ = Aᵀλ is
                assert _rel(AA.T @ lam, MM @ ddq_pin - QQ) < REL


def test_batches_through_the_one_evaluator_are_pinocchios_numbers(robot):
    """A batch of states (a run's output times) through compiled.evaluate — M, Q, the joints' origins, and a frame
    constraint's A, b, φ, φ̇ and rotations (a moving target among them) — against Pinocchio state by state."""
    import sympy as sp

    from robustrack import _evaluator
    from robustrack.compiled import evaluate, rigid_body as rb

    plant, frame = robot
    for name in ("mass", "force"):  # what a compiled loop of a robot loads
        rb.robot_function(name)
    evaluate.load("robot")
    q, v, _ = _states(plant.n, count=1, seed=4)[0]
    qs, vs, ts = np.stack([q, -q, 0.5 * q]), np.stack([v, 2 * v, -v]), np.array([0.0, 0.3, 1.1])
    M, Q = plant.mass_matrix(qs[None]), plant.given_force(qs, vs)  # (1, 3, n, n) and (3, n): batches
    P = plant.positions(qs)
    t = sp.Symbol("t", real=True)
    c = (FrameConstraint.trajectory(plant, frame, [0.3 + 0.1 * sp.cos(t), 0.1, 0.4 + 0.05 * t ** 2], t,
                                    stabilization=Stabilization.second_order(1.0, 10.0))
         & FrameConstraint.orientation(plant, frame, np.eye(3)))
    assert _evaluator.batch(c, "frames", qs, vs, ts) is not None  # the compiled path, not Pinocchio's
    A, b = c.matrices(qs, vs, ts)
    phi, phid = c.residual(qs, vs, ts), c.velocity_residual(qs, vs, ts)
    lam = np.arange(1.0, c.m + 1.0)
    F = c.contact(qs, vs, ts, lam)  # the frames' rotations
    for k in range(3):  # one state: Pinocchio itself
        assert _rel(M[0, k], plant.mass_matrix(qs[k])) < REL and _rel(Q[k], plant.given_force(qs[k], vs[k])) < REL
        assert _rel(P[k], plant.positions(qs[k])) < REL
        Ak, bk = c.matrices(qs[k], vs[k], ts[k])
        assert _rel(A[k], Ak) < REL and _rel(b[k], bk) < REL
        assert _rel(phi[k], c.residual(qs[k], vs[k], ts[k])) < REL
        assert _rel(phid[k], c.velocity_residual(qs[k], vs[k], ts[k])) < REL
        assert _rel(F[k], c.contact(qs[k], vs[k], ts[k], lam)) < REL


def test_the_kernels_never_read_their_output_arrays(robot):
    """Output arrays come from np.empty in the compiled loop: whatever they held (here NaN) must not leak in."""
    from robustrack.compiled import rigid_body as rb

    plant, _ = robot
    n = plant.n
    q, v, a = _states(n, count=1, seed=6)[0]
    outs = {"M": np.empty((n, n)), "Q": np.empty(n), "tau": np.empty(n), "S": np.empty((n, rb.W_SIZE))}
    dirty = {k: np.full_like(x, np.nan) for k, x in outs.items()}
    for arrays in (outs, dirty):
        rb.crba(plant.packed, q, arrays["M"])
        rb.given_force(plant.packed, q, v, arrays["Q"])
        rb.rnea(plant.packed, q, v, a, True, arrays["tau"])
        rb.world_motion(plant.packed, q, v, arrays["S"])
    for k in outs:
        assert np.all(np.isfinite(dirty[k])) and np.array_equal(dirty[k], outs[k]), k
