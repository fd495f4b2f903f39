"""The rigid-body algorithms of a robot, compiled once per machine over its model as data.

One source, in numba's numpy subset, over the packed robot of :mod:`robustrack.plants.robot_data`
(parents, joint types and axes, joint placements, inertias, gravity), so every robot — and every
payload or link mass — runs the same machine code:

- :func:`joint_transforms` — each joint's placement in its parent's frame at q (Rodrigues for a
  revolute joint, a translation along the axis for a prismatic one);
- :func:`crba` — the mass matrix M(q) by the composite rigid body algorithm (Featherstone, *Rigid
  Body Dynamics Algorithms*, §6.2; Pinocchio's ``crba``), plus the armature;
- :func:`rnea` — τ = M q̈ + C(q, q̇) q̇ + g(q) by the recursive Newton–Euler algorithm (§5.3), in
  each body's frame as Pinocchio does; the plant's Q(q, q̇) = −τ(q, q̇, 0) − D q̇ − F sign(q̇)
  (:func:`given_force`; W 2.2 step 1);
- :func:`world_motion` — each joint frame's pose in the world, its angular velocity and the
  velocity of its origin, and their derivatives at q̈ = 0 (classical accelerations);
- :func:`frame_point` — a frame's pose, its Jacobian (6 × n, world-aligned at the frame's origin:
  linear rows first) and J̇q̇ (the classical acceleration of its origin and its angular
  acceleration at q̈ = 0);
- :func:`frame_rows` — the rows A q̈ = b of frame constraints (a point of the frame on a point, a
  plane, a line or a moving target; its orientation held), stabilized φ̈ + 2ξω φ̇ + ω² φ = 0
  (W 2.3.6; ``docs/theory``); :func:`frame_rows_posed` also gives each frame's pose (the numpy side's batches,
  :mod:`robustrack.compiled.evaluate`);
- the derivatives the controlled system's exact Jacobian needs (∂M/∂q_k, ∂Q/∂q, ∂Q/∂q̇) by the
  complex step on the SAME functions compiled for complex128: ``Im f(x + i h e_k) / h`` with
  h = 1e-30, exact to rounding (no difference is taken, so no cancellation); friction, discontinuous,
  contributes nothing, as in the numpy reference.

The plant functions of :data:`~robustrack.compiled.systems.PLANT_FUNCTION` (``mass``, ``force``,
``mass_dq``, ``force_dq``, ``force_dqd``) and the constant-target frame constraint ``frames_ab`` are
C functions built from these (:func:`robot_function`); a frame constraint whose target moves adds a
small generated function of t (:func:`target_source`). The loop loads the numpy side's batch evaluator of robots
and frame constraints with them (:func:`robustrack.compiled.evaluate.load`, in the robots' part).

Tests: ``tests/test_rigid_body.py`` — every kernel against Pinocchio at random states on three robots.
"""

import numpy as np
from numba import carray

from .cache import cfunc, kernel
from ..plants.robot_data import (ARMATURE, AXIS, B_DIRS, B_FPOS, B_FROT, B_JOINT, B_K, B_KIND, B_OMEGA, B_POINT,
                                 B_TIMED, B_TROT, B_XI, BLOCK, DAMPING, FRICTION, GRAVITY_AT, INERTIA, JOINT_SIZE,
                                 JOINTS_AT, LEVER, MASS, N_AT, PARENT, POS, PRISMATIC, PROGRAM_HEADER, ROT, SIZE_AT,
                                 TYPE)

__all__ = ["joint_transforms", "crba", "rnea", "given_force", "world_motion", "frame_point", "frame_rows",
           "frame_rows_posed",
           "W_ROT", "W_O", "W_W", "W_V", "W_WD", "W_AD", "W_SIZE",
           "mass_dq", "force_derivative", "robot_function", "target_source",
           "ROBOT_FUNCTIONS", "COMPLEX_STEP"]

#: The complex step (the derivatives are exact to rounding for any h this small: the error is O(h²)).
COMPLEX_STEP = 1e-30

#: The plant functions a robot provides, and the constant-target frame constraint.
ROBOT_FUNCTIONS = ("mass", "force", "mass_dq", "force_dq", "force_dqd", "frames_ab")


@kernel(inline=True)
def _cross(a0, a1, a2, b0, b1, b2):
    return a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0


@kernel
def joint_transforms(md, q, T):
    """Each joint's placement in its parent joint's frame at q: ``T[i]`` = (R row-major (9), p (3)), dtype of q.

    ``x_parent = R x_joint + p``: the joint placement of the model times the joint's own motion
    (a rotation by q_i about the axis — Rodrigues — or a translation q_i along it).
    """
    n = int(md[N_AT])
    base = int(md[JOINTS_AT])
    for i in range(n):
        r = base + i * JOINT_SIZE
        ax, ay, az = md[r + AXIS], md[r + AXIS + 1], md[r + AXIS + 2]
        P = r + ROT
        if md[r + TYPE] == PRISMATIC:
            for a in range(9):
                T[i, a] = md[P + a]
            for a in range(3):
                T[i, 9 + a] = md[r + POS + a] + (md[P + 3 * a] * ax + md[P + 3 * a + 1] * ay + md[P + 3 * a + 2] * az) * q[i]
        else:
            c = np.cos(q[i])
            s = np.sin(q[i])
            v = 1.0 - c
            j00, j01, j02 = c + v * ax * ax, v * ax * ay - s * az, v * ax * az + s * ay
            j10, j11, j12 = v * ax * ay + s * az, c + v * ay * ay, v * ay * az - s * ax
            j20, j21, j22 = v * ax * az - s * ay, v * ay * az + s * ax, c + v * az * az
            for a in range(3):
                m0, m1, m2 = md[P + 3 * a], md[P + 3 * a + 1], md[P + 3 * a + 2]
                T[i, 3 * a] = m0 * j00 + m1 * j10 + m2 * j20
                T[i, 3 * a + 1] = m0 * j01 + m1 * j11 + m2 * j21
                T[i, 3 * a + 2] = m0 * j02 + m1 * j12 + m2 * j22
                T[i, 9 + a] = md[r + POS + a]


@kernel(inline=True)
def _rot(T, i, x0, x1, x2):
    """R x of joint i's placement (:func:`joint_transforms`)."""
    return (T[i, 0] * x0 + T[i, 1] * x1 + T[i, 2] * x2, T[i, 3] * x0 + T[i, 4] * x1 + T[i, 5] * x2,
            T[i, 6] * x0 + T[i, 7] * x1 + T[i, 8] * x2)


@kernel(inline=True)
def _rot_t(T, i, x0, x1, x2):
    """Rᵀ x of joint i's placement."""
    return (T[i, 0] * x0 + T[i, 3] * x1 + T[i, 6] * x2, T[i, 1] * x0 + T[i, 4] * x1 + T[i, 7] * x2,
            T[i, 2] * x0 + T[i, 5] * x1 + T[i, 8] * x2)


@kernel(inline=True)
def _force_up(T, i, fl0, fl1, fl2, fn0, fn1, fn2):
    """A force (f, n) of joint i's frame in its parent's: f' = R f, n' = R n + p × f'."""
    g0, g1, g2 = _rot(T, i, fl0, fl1, fl2)
    k0, k1, k2 = _cross(T[i, 9], T[i, 10], T[i, 11], g0, g1, g2)
    m0, m1, m2 = _rot(T, i, fn0, fn1, fn2)
    return g0, g1, g2, m0 + k0, m1 + k1, m2 + k2


@kernel
def crba(md, q, M):
    """M(q) by the composite rigid body algorithm (Featherstone §6.2), the armature on its diagonal.

    Composite inertias (m, m c, I about the joint origin) are summed from the leaves to the root in each
    parent's frame; column i of M is Sᵢᵀ of the composite's force Iᶜᵢ Sᵢ carried to every ancestor.
    """
    n = int(md[N_AT])
    base = int(md[JOINTS_AT])
    dt = M.dtype
    T = np.empty((n, 12), dt)
    joint_transforms(md, q, T)
    for i in range(n):  # joints on two branches have no entry below: zero
        for j in range(n):
            M[i, j] = 0.0
    C = np.empty((n, 13), dt)  # composite inertia: m, h = m c (3), I about the origin (9, row-major)
    for i in range(n):
        r = base + i * JOINT_SIZE
        C[i, 0] = md[r + MASS]
        for a in range(3):
            C[i, 1 + a] = md[r + LEVER + a]
        for a in range(9):
            C[i, 4 + a] = md[r + INERTIA + a]
    for i in range(n - 1, -1, -1):
        r = base + i * JOINT_SIZE
        ax, ay, az = md[r + AXIS], md[r + AXIS + 1], md[r + AXIS + 2]
        h0, h1, h2 = C[i, 1], C[i, 2], C[i, 3]
        if md[r + TYPE] == PRISMATIC:  # Iᶜ (a, 0) = (m a, h × a)
            fl0, fl1, fl2 = C[i, 0] * ax, C[i, 0] * ay, C[i, 0] * az
            fn0, fn1, fn2 = _cross(h0, h1, h2, ax, ay, az)
        else:  # Iᶜ (0, a) = (a × h, I a)
            fl0, fl1, fl2 = _cross(ax, ay, az, h0, h1, h2)
            fn0 = C[i, 4] * ax + C[i, 5] * ay + C[i, 6] * az
            fn1 = C[i, 7] * ax + C[i, 8] * ay + C[i, 9] * az
            fn2 = C[i, 10] * ax + C[i, 11] * ay + C[i, 12] * az
        M[i, i] = _project(md, r, fl0, fl1, fl2, fn0, fn1, fn2) + md[r + ARMATURE]
        j = i
        parent = int(md[r + PARENT])
        while parent >= 0:
            fl0, fl1, fl2, fn0, fn1, fn2 = _force_up(T, j, fl0, fl1, fl2, fn0, fn1, fn2)
            j = parent
            rj = base + j * JOINT_SIZE
            M[j, i] = _project(md, rj, fl0, fl1, fl2, fn0, fn1, fn2)
            M[i, j] = M[j, i]
            parent = int(md[rj + PARENT])
        parent = int(md[r + PARENT])
        if parent >= 0:
            _add_inertia(T, i, C, parent)


@kernel(inline=True)
def _project(md, r, fl0, fl1, fl2, fn0, fn1, fn2):
    """Sᵀ f of the joint whose record starts at ``r``."""
    ax, ay, az = md[r + AXIS], md[r + AXIS + 1], md[r + AXIS + 2]
    if md[r + TYPE] == PRISMATIC:
        return ax * fl0 + ay * fl1 + az * fl2
    return ax * fn0 + ay * fn1 + az * fn2


@kernel(inline=True)
def _add_inertia(T, i, C, parent):
    """Add joint i's composite inertia (m, h = m c, I about its origin), carried by its placement (R, p), to its
    parent's: h' = R h + m p and I' = R I Rᵀ − (p h_Rᵀ + h_R pᵀ) + 2 (p·h_R) 1 + m (|p|² 1 − p pᵀ), h_R = R h."""
    m = C[i, 0]
    hr = _rot(T, i, C[i, 1], C[i, 2], C[i, 3])
    p0, p1, p2 = T[i, 9], T[i, 10], T[i, 11]
    p = (p0, p1, p2)
    pp = p0 * p0 + p1 * p1 + p2 * p2
    ph = p0 * hr[0] + p1 * hr[1] + p2 * hr[2]
    for a in range(3):  # the rows of R I, then (R I) Rᵀ
        x0 = T[i, 3 * a] * C[i, 4] + T[i, 3 * a + 1] * C[i, 7] + T[i, 3 * a + 2] * C[i, 10]
        x1 = T[i, 3 * a] * C[i, 5] + T[i, 3 * a + 1] * C[i, 8] + T[i, 3 * a + 2] * C[i, 11]
        x2 = T[i, 3 * a] * C[i, 6] + T[i, 3 * a + 1] * C[i, 9] + T[i, 3 * a + 2] * C[i, 12]
        for b in range(3):
            s = x0 * T[i, 3 * b] + x1 * T[i, 3 * b + 1] + x2 * T[i, 3 * b + 2]
            s -= p[a] * hr[b] + hr[a] * p[b] + m * p[a] * p[b]
            if a == b:
                s += 2.0 * ph + m * pp
            C[parent, 4 + 3 * a + b] += s
        C[parent, 1 + a] += hr[a] + m * p[a]
    C[parent, 0] += m


@kernel
def rnea(md, q, qd, qdd, gravity, tau):
    """τ = M(q) q̈ + C(q, q̇) q̇ + g(q) (recursive Newton–Euler, Featherstone §5.3; the armature included).

    Velocities and accelerations go out from the root in each body's frame (``gravity``: the root
    accelerates at −g, so g(q) is included; False: without it); each body's force
    f = I a + v ×* I v comes back, each joint's τ is its projection on the joint's axis.
    """
    n = int(md[N_AT])
    base = int(md[JOINTS_AT])
    dt = tau.dtype
    T = np.empty((n, 12), dt)
    joint_transforms(md, q, T)
    B = np.empty((n, 18), dt)  # per body: ω, v (velocity of the origin), their spatial accelerations, force f, n
    g = int(md[GRAVITY_AT])
    zero = q[0] - q[0]  # 0 of q's type (tau is unwritten memory: 0 × garbage can be NaN)
    for i in range(n):
        r = base + i * JOINT_SIZE
        parent = int(md[r + PARENT])
        if parent < 0:
            w0 = w1 = w2 = v0 = v1 = v2 = a0 = a1 = a2 = zero
            b0 = b1 = b2 = zero
            if gravity:
                b0, b1, b2 = zero - md[g], zero - md[g + 1], zero - md[g + 2]
        else:
            w0, w1, w2, v0, v1, v2 = B[parent, 0], B[parent, 1], B[parent, 2], B[parent, 3], B[parent, 4], B[parent, 5]
            a0, a1, a2, b0, b1, b2 = B[parent, 6], B[parent, 7], B[parent, 8], B[parent, 9], B[parent, 10], B[parent, 11]
        # into this joint's frame: ω' = Rᵀ ω, v' = Rᵀ (v + ω × p) (and the same for accelerations)
        c0, c1, c2 = _cross(w0, w1, w2, T[i, 9], T[i, 10], T[i, 11])
        d0, d1, d2 = _cross(a0, a1, a2, T[i, 9], T[i, 10], T[i, 11])
        w0, w1, w2 = _rot_t(T, i, w0, w1, w2)
        v0, v1, v2 = _rot_t(T, i, v0 + c0, v1 + c1, v2 + c2)
        a0, a1, a2 = _rot_t(T, i, a0, a1, a2)
        b0, b1, b2 = _rot_t(T, i, b0 + d0, b1 + d1, b2 + d2)
        ax, ay, az = md[r + AXIS], md[r + AXIS + 1], md[r + AXIS + 2]
        s0, s1, s2 = ax * qd[i], ay * qd[i], az * qd[i]
        if md[r + TYPE] == PRISMATIC:  # S q̇ = (a q̇, 0); v × S q̇ = (ω × a q̇, 0)
            e0, e1, e2 = _cross(w0, w1, w2, s0, s1, s2)
            v0, v1, v2 = v0 + s0, v1 + s1, v2 + s2
            b0, b1, b2 = b0 + ax * qdd[i] + e0, b1 + ay * qdd[i] + e1, b2 + az * qdd[i] + e2
        else:  # S q̇ = (0, a q̇); v × S q̇ = (v × a q̇, ω × a q̇)
            w0, w1, w2 = w0 + s0, w1 + s1, w2 + s2
            e0, e1, e2 = _cross(w0, w1, w2, s0, s1, s2)
            f0, f1, f2 = _cross(v0, v1, v2, s0, s1, s2)
            a0, a1, a2 = a0 + ax * qdd[i] + e0, a1 + ay * qdd[i] + e1, a2 + az * qdd[i] + e2
            b0, b1, b2 = b0 + f0, b1 + f1, b2 + f2
        B[i, 0], B[i, 1], B[i, 2], B[i, 3], B[i, 4], B[i, 5] = w0, w1, w2, v0, v1, v2
        B[i, 6], B[i, 7], B[i, 8], B[i, 9], B[i, 10], B[i, 11] = a0, a1, a2, b0, b1, b2
        # f = I a + v ×* (I v), with I (v, ω) = (m v + ω × h, I_O ω + h × v) and v ×* (l, k) = (ω × l, ω × k + v × l)
        m = md[r + MASS]
        h0, h1, h2 = md[r + LEVER], md[r + LEVER + 1], md[r + LEVER + 2]
        i0 = r + INERTIA
        x0, x1, x2 = _cross(w0, w1, w2, h0, h1, h2)
        y0, y1, y2 = _cross(h0, h1, h2, v0, v1, v2)
        pl0, pl1, pl2 = m * v0 + x0, m * v1 + x1, m * v2 + x2
        pn0 = md[i0] * w0 + md[i0 + 1] * w1 + md[i0 + 2] * w2 + y0
        pn1 = md[i0 + 3] * w0 + md[i0 + 4] * w1 + md[i0 + 5] * w2 + y1
        pn2 = md[i0 + 6] * w0 + md[i0 + 7] * w1 + md[i0 + 8] * w2 + y2
        x0, x1, x2 = _cross(a0, a1, a2, h0, h1, h2)
        y0, y1, y2 = _cross(h0, h1, h2, b0, b1, b2)
        k0, k1, k2 = _cross(w0, w1, w2, pl0, pl1, pl2)
        l0, l1, l2 = _cross(w0, w1, w2, pn0, pn1, pn2)
        z0, z1, z2 = _cross(v0, v1, v2, pl0, pl1, pl2)
        B[i, 12] = m * b0 + x0 + k0
        B[i, 13] = m * b1 + x1 + k1
        B[i, 14] = m * b2 + x2 + k2
        B[i, 15] = md[i0] * a0 + md[i0 + 1] * a1 + md[i0 + 2] * a2 + y0 + l0 + z0
        B[i, 16] = md[i0 + 3] * a0 + md[i0 + 4] * a1 + md[i0 + 5] * a2 + y1 + l1 + z1
        B[i, 17] = md[i0 + 6] * a0 + md[i0 + 7] * a1 + md[i0 + 8] * a2 + y2 + l2 + z2
    for i in range(n - 1, -1, -1):
        r = base + i * JOINT_SIZE
        tau[i] = _project(md, r, B[i, 12], B[i, 13], B[i, 14], B[i, 15], B[i, 16], B[i, 17]) + md[r + ARMATURE] * qdd[i]
        parent = int(md[r + PARENT])
        if parent >= 0:
            g0, g1, g2, m0, m1, m2 = _force_up(T, i, B[i, 12], B[i, 13], B[i, 14], B[i, 15], B[i, 16], B[i, 17])
            B[parent, 12] += g0
            B[parent, 13] += g1
            B[parent, 14] += g2
            B[parent, 15] += m0
            B[parent, 16] += m1
            B[parent, 17] += m2


@kernel
def given_force(md, q, qd, Q):
    """Q(q, q̇) = −τ(q, q̇, 0) − D q̇ − F sign(q̇): gravity, Coriolis and centrifugal terms, damping, friction."""
    n = int(md[N_AT])
    base = int(md[JOINTS_AT])
    zero = np.zeros(n, Q.dtype)
    rnea(md, q, qd, zero, True, Q)
    for i in range(n):
        r = base + i * JOINT_SIZE
        Q[i] = -Q[i] - md[r + DAMPING] * qd[i] - md[r + FRICTION] * np.sign(qd[i].real)


#: The columns of :func:`world_motion`'s per-joint row: rotation (9, row-major), origin, angular velocity, the
#: origin's velocity, angular acceleration, the origin's classical acceleration (3 each).
W_ROT, W_O, W_W, W_V, W_WD, W_AD, W_SIZE = 0, 9, 12, 15, 18, 21, 24


@kernel
def world_motion(md, q, qd, S):
    """Each joint frame in the world, one row of ``S`` (n × 24) per joint (:data:`W_ROT` …): rotation, origin,
    angular velocity W, the velocity V of its origin, and at q̈ = 0 the angular acceleration Ẇ and the
    classical acceleration A of its origin.

    With r = oᵢ − o_parent and u the joint's axis in the world: a revolute joint adds u q̇ to W and
    W_parent × (u q̇) to Ẇ; a prismatic one adds u q̇ to V and 2 W_parent × (u q̇) to A (Coriolis);
    both carry V + W × r and A + Ẇ × r + W × (W × r) of the parent.
    """
    n = int(md[N_AT])
    base = int(md[JOINTS_AT])
    T = np.empty((n, 12), S.dtype)
    joint_transforms(md, q, T)
    zero = q[0] - q[0]  # 0 of q's type (S is unwritten memory: 0 × garbage can be NaN)
    for i in range(n):
        rec = base + i * JOINT_SIZE
        parent = int(md[rec + PARENT])
        if parent < 0:
            for a in range(9):
                S[i, W_ROT + a] = T[i, a]
            for a in range(3):
                S[i, W_O + a] = T[i, 9 + a]
            w0 = w1 = w2 = v0 = v1 = v2 = e0 = e1 = e2 = c0 = c1 = c2 = r0 = r1 = r2 = zero
        else:
            for a in range(3):
                for b in range(3):
                    S[i, W_ROT + 3 * a + b] = (S[parent, W_ROT + 3 * a] * T[i, b] + S[parent, W_ROT + 3 * a + 1] * T[i, 3 + b]
                                               + S[parent, W_ROT + 3 * a + 2] * T[i, 6 + b])
                S[i, W_O + a] = (S[parent, W_ROT + 3 * a] * T[i, 9] + S[parent, W_ROT + 3 * a + 1] * T[i, 10]
                                 + S[parent, W_ROT + 3 * a + 2] * T[i, 11] + S[parent, W_O + a])
            w0, w1, w2 = S[parent, W_W], S[parent, W_W + 1], S[parent, W_W + 2]
            v0, v1, v2 = S[parent, W_V], S[parent, W_V + 1], S[parent, W_V + 2]
            e0, e1, e2 = S[parent, W_WD], S[parent, W_WD + 1], S[parent, W_WD + 2]
            c0, c1, c2 = S[parent, W_AD], S[parent, W_AD + 1], S[parent, W_AD + 2]
            r0, r1, r2 = S[i, W_O] - S[parent, W_O], S[i, W_O + 1] - S[parent, W_O + 1], S[i, W_O + 2] - S[parent, W_O + 2]
        x0, x1, x2 = _cross(w0, w1, w2, r0, r1, r2)
        y0, y1, y2 = _cross(e0, e1, e2, r0, r1, r2)
        z0, z1, z2 = _cross(w0, w1, w2, x0, x1, x2)
        ax, ay, az = md[rec + AXIS], md[rec + AXIS + 1], md[rec + AXIS + 2]
        u0 = (S[i, W_ROT] * ax + S[i, W_ROT + 1] * ay + S[i, W_ROT + 2] * az) * qd[i]
        u1 = (S[i, W_ROT + 3] * ax + S[i, W_ROT + 4] * ay + S[i, W_ROT + 5] * az) * qd[i]
        u2 = (S[i, W_ROT + 6] * ax + S[i, W_ROT + 7] * ay + S[i, W_ROT + 8] * az) * qd[i]
        k0, k1, k2 = _cross(w0, w1, w2, u0, u1, u2)
        if md[rec + TYPE] == PRISMATIC:
            v0, v1, v2 = v0 + u0, v1 + u1, v2 + u2
            c0, c1, c2 = c0 + 2.0 * k0, c1 + 2.0 * k1, c2 + 2.0 * k2
        else:
            w0, w1, w2 = w0 + u0, w1 + u1, w2 + u2
            e0, e1, e2 = e0 + k0, e1 + k1, e2 + k2
        S[i, W_W], S[i, W_W + 1], S[i, W_W + 2] = w0, w1, w2
        S[i, W_V], S[i, W_V + 1], S[i, W_V + 2] = v0 + x0, v1 + x1, v2 + x2
        S[i, W_WD], S[i, W_WD + 1], S[i, W_WD + 2] = e0, e1, e2
        S[i, W_AD], S[i, W_AD + 1], S[i, W_AD + 2] = c0 + y0 + z0, c1 + y1 + z1, c2 + y2 + z2


@kernel
def frame_point(md, joint, fR, fp, S, Rf, pf, J, vf, af):
    """A frame fixed in joint ``joint`` (rotation ``fR``, origin ``fp`` in it), from :func:`world_motion`'s ``S``.

    Writes its rotation ``Rf`` and origin ``pf`` in the world, its Jacobian ``J`` (6 × n, world-aligned at the
    frame origin: rows 0–2 the origin's velocity, 3–5 the angular velocity), its velocity ``vf`` (6) and J̇q̇ ``af``
    (6: the classical acceleration of the origin and the angular acceleration at q̈ = 0).
    """
    n = int(md[N_AT])
    base = int(md[JOINTS_AT])
    j = joint
    for a in range(3):
        for b in range(3):
            Rf[a, b] = S[j, W_ROT + 3 * a] * fR[0, b] + S[j, W_ROT + 3 * a + 1] * fR[1, b] + S[j, W_ROT + 3 * a + 2] * fR[2, b]
        pf[a] = (S[j, W_ROT + 3 * a] * fp[0] + S[j, W_ROT + 3 * a + 1] * fp[1] + S[j, W_ROT + 3 * a + 2] * fp[2]
                 + S[j, W_O + a])
    r0, r1, r2 = pf[0] - S[j, W_O], pf[1] - S[j, W_O + 1], pf[2] - S[j, W_O + 2]
    w0, w1, w2 = S[j, W_W], S[j, W_W + 1], S[j, W_W + 2]
    x0, x1, x2 = _cross(w0, w1, w2, r0, r1, r2)
    y0, y1, y2 = _cross(S[j, W_WD], S[j, W_WD + 1], S[j, W_WD + 2], r0, r1, r2)
    z0, z1, z2 = _cross(w0, w1, w2, x0, x1, x2)
    vf[0], vf[1], vf[2] = S[j, W_V] + x0, S[j, W_V + 1] + x1, S[j, W_V + 2] + x2
    af[0], af[1], af[2] = S[j, W_AD] + y0 + z0, S[j, W_AD + 1] + y1 + z1, S[j, W_AD + 2] + y2 + z2
    for a in range(3):
        vf[3 + a] = S[j, W_W + a]
        af[3 + a] = S[j, W_WD + a]
    for a in range(6):
        for k in range(n):
            J[a, k] = 0.0
    k = j
    while k >= 0:
        rec = base + k * JOINT_SIZE
        ax, ay, az = md[rec + AXIS], md[rec + AXIS + 1], md[rec + AXIS + 2]
        u0 = S[k, W_ROT] * ax + S[k, W_ROT + 1] * ay + S[k, W_ROT + 2] * az
        u1 = S[k, W_ROT + 3] * ax + S[k, W_ROT + 4] * ay + S[k, W_ROT + 5] * az
        u2 = S[k, W_ROT + 6] * ax + S[k, W_ROT + 7] * ay + S[k, W_ROT + 8] * az
        if md[rec + TYPE] == PRISMATIC:
            J[0, k], J[1, k], J[2, k] = u0, u1, u2
        else:
            c0, c1, c2 = _cross(u0, u1, u2, pf[0] - S[k, W_O], pf[1] - S[k, W_O + 1], pf[2] - S[k, W_O + 2])
            J[0, k], J[1, k], J[2, k] = c0, c1, c2
            J[3, k], J[4, k], J[5, k] = u0, u1, u2
        k = int(md[rec + PARENT])


@kernel(inline=True)
def _log3(R, e):
    """e = log(R)∨ (rotation vector, rad): angle·axis of R (world)."""
    tr = R[0, 0] + R[1, 1] + R[2, 2]
    c = min(1.0, max(-1.0, 0.5 * (tr - 1.0)))
    angle = np.arccos(c)
    s0, s1, s2 = R[2, 1] - R[1, 2], R[0, 2] - R[2, 0], R[1, 0] - R[0, 1]
    if angle < 1e-6:
        f = 0.5 + angle * angle / 12.0
        e[0], e[1], e[2] = f * s0, f * s1, f * s2
    elif angle > np.pi - 1e-6:  # the axis from the symmetric part (R = 2 u uᵀ − 1)
        k = 0
        for a in range(3):
            if R[a, a] > R[k, k]:
                k = a
        u = np.empty(3)
        for a in range(3):
            u[a] = 0.5 * (R[a, k] + R[k, a])
        u[k] = np.sqrt(max(0.0, 0.5 * (R[k, k] + 1.0)))
        norm = np.sqrt(u[0] ** 2 + u[1] ** 2 + u[2] ** 2)
        for a in range(3):
            e[a] = angle * u[a] / norm
    else:
        f = 0.5 * angle / np.sin(angle)
        e[0], e[1], e[2] = f * s0, f * s1, f * s2


@kernel
def frame_rows(q, qd, c, targets, out, residuals):
    """The rows of frame constraints at (q, q̇): A (m × n) then b (m) into ``out``; φ then φ̇ into ``residuals`` (2m).

    ``c`` is the packed robot followed by the program (module docstring); ``targets`` (9 per moving target:
    x, ẋ, ẍ) the values of the moving targets at t. A position row along the direction d (world) is
    φ = dᵀ (p_f − x): A = dᵀ J_v, b = dᵀ (ẍ − J̇q̇_v) − 2ξω φ̇ − ω² φ; an orientation row r is the r-th component of
    e = log(R_f R*ᵀ): A = J_ω[r], b = −J̇q̇_ω[r] − 2ξω ω_r − ω² e_r (W 2.3.6: φ̈ + 2ξω φ̇ + ω² φ = 0).
    """
    frame_rows_posed(q, qd, c, targets, out, residuals, residuals[:0])


@kernel
def frame_rows_posed(q, qd, c, targets, out, residuals, poses):
    """:func:`frame_rows`, and each block's frame pose into ``poses`` (12 per block: its rotation row-major, then
    its origin, world) unless ``poses`` is empty — the same arithmetic for the rows either way."""
    n = int(c[N_AT])
    size = int(c[SIZE_AT])
    prog = size
    blocks = int(c[prog])
    m = int(c[prog + 1])
    S = np.empty((n, W_SIZE))
    world_motion(c, q, qd, S)
    buf = np.empty(48 + 6 * n)  # one allocation for the small arrays (views below)
    Rf = buf[0:9].reshape((3, 3))
    pf = buf[9:12]
    vf = buf[12:18]
    af = buf[18:24]
    e = buf[24:27]
    fR = buf[27:36].reshape((3, 3))
    fp = buf[36:39]
    T = buf[39:48].reshape((3, 3))
    J = buf[48:].reshape((6, n))
    row = 0
    for blk in range(blocks):
        s = prog + PROGRAM_HEADER + blk * BLOCK
        for a in range(3):
            for b in range(3):
                fR[a, b] = c[s + B_FROT + 3 * a + b]
            fp[a] = c[s + B_FPOS + a]
        frame_point(c, int(c[s + B_JOINT]), fR, fp, S, Rf, pf, J, vf, af)
        if poses.shape[0] > 0:
            for a in range(3):
                for b in range(3):
                    poses[12 * blk + 3 * a + b] = Rf[a, b]
                poses[12 * blk + 9 + a] = pf[a]
        xi, om = c[s + B_XI], c[s + B_OMEGA]
        k = int(c[s + B_K])
        if c[s + B_KIND] == 0.0:
            timed = int(c[s + B_TIMED])
            for r in range(k):
                d0, d1, d2 = c[s + B_DIRS + 3 * r], c[s + B_DIRS + 3 * r + 1], c[s + B_DIRS + 3 * r + 2]
                phi = 0.0
                phid = 0.0
                acc = 0.0
                for a in range(3):
                    d = c[s + B_DIRS + 3 * r + a]
                    if timed >= 0:
                        x, xd, xdd = targets[9 * timed + a], targets[9 * timed + 3 + a], targets[9 * timed + 6 + a]
                    else:
                        x, xd, xdd = c[s + B_POINT + a], 0.0, 0.0
                    phi += d * (pf[a] - x)
                    phid += d * (vf[a] - xd)
                    acc += d * (xdd - af[a])
                for col in range(n):
                    out[row * n + col] = d0 * J[0, col] + d1 * J[1, col] + d2 * J[2, col]
                out[m * n + row] = acc - 2.0 * xi * om * phid - om * om * phi
                residuals[row] = phi
                residuals[m + row] = phid
                row += 1
        else:
            for a in range(3):
                for b in range(3):
                    T[a, b] = (Rf[a, 0] * c[s + B_TROT + 3 * b] + Rf[a, 1] * c[s + B_TROT + 3 * b + 1]
                               + Rf[a, 2] * c[s + B_TROT + 3 * b + 2])
            _log3(T, e)
            for r in range(3):
                for col in range(n):
                    out[row * n + col] = J[3 + r, col]
                out[m * n + row] = -af[3 + r] - 2.0 * xi * om * vf[3 + r] - om * om * e[r]
                residuals[row] = e[r]
                residuals[m + row] = vf[3 + r]
                row += 1


# --------------------------------------------------------------------------- #
# derivatives by the complex step (one source, the scalar type a detail)
# --------------------------------------------------------------------------- #
@kernel
def mass_dq(md, q, out):
    """∂M/∂q_k, k first (n × n × n): ``Im M(q + i h e_k) / h``."""
    n = q.shape[0]
    qc = np.empty(n, np.complex128)
    Mc = np.empty((n, n), np.complex128)
    for k in range(n):
        for i in range(n):
            qc[i] = q[i]
        qc[k] += 1j * COMPLEX_STEP
        crba(md, qc, Mc)
        for i in range(n):
            for j in range(n):
                out[k, i, j] = Mc[i, j].imag / COMPLEX_STEP


@kernel
def force_derivative(md, q, qd, velocity, out):
    """∂Q/∂q (``velocity`` False) or ∂Q/∂q̇ (True), n × n with ``[i, j] = ∂Q_i/∂x_j``: ``Im Q(x + i h e_j) / h``
    (damping included; friction's sign, discontinuous, is not differentiated — as the numpy reference)."""
    n = q.shape[0]
    qc = np.empty(n, np.complex128)
    vc = np.empty(n, np.complex128)
    Qc = np.empty(n, np.complex128)
    for j in range(n):
        for i in range(n):
            qc[i] = q[i]
            vc[i] = qd[i]
        if velocity:
            vc[j] += 1j * COMPLEX_STEP
        else:
            qc[j] += 1j * COMPLEX_STEP
        given_force(md, qc, vc, Qc)
        for i in range(n):
            out[i, j] = Qc[i].imag / COMPLEX_STEP


# --------------------------------------------------------------------------- #
# the C functions of the compiled loop
# --------------------------------------------------------------------------- #
def _mass(q, qd, t, p, out):
    n = int(p[N_AT])
    md = carray(p, (int(p[SIZE_AT]),))
    crba(md, carray(q, (n,)), carray(out, (n, n)))


def _force(q, qd, t, p, out):
    n = int(p[N_AT])
    md = carray(p, (int(p[SIZE_AT]),))
    given_force(md, carray(q, (n,)), carray(qd, (n,)), carray(out, (n,)))


def _mass_dq(q, qd, t, p, out):
    n = int(p[N_AT])
    md = carray(p, (int(p[SIZE_AT]),))
    mass_dq(md, carray(q, (n,)), carray(out, (n, n, n)))


def _force_dq(q, qd, t, p, out):
    n = int(p[N_AT])
    md = carray(p, (int(p[SIZE_AT]),))
    force_derivative(md, carray(q, (n,)), carray(qd, (n,)), False, carray(out, (n, n)))


def _force_dqd(q, qd, t, p, out):
    n = int(p[N_AT])
    md = carray(p, (int(p[SIZE_AT]),))
    force_derivative(md, carray(q, (n,)), carray(qd, (n,)), True, carray(out, (n, n)))


def _frames_ab(q, qd, t, p, out):
    n = int(p[N_AT])
    size = int(p[SIZE_AT])
    m = int(p[size + 1])
    c = carray(p, (size + PROGRAM_HEADER + BLOCK * int(p[size]),))
    frame_rows(carray(q, (n,)), carray(qd, (n,)), c, np.zeros(0), carray(out, (m * n + m,)), np.empty(2 * m))


_PY = {"mass": _mass, "force": _force, "mass_dq": _mass_dq, "force_dq": _force_dq, "force_dqd": _force_dqd,
       "frames_ab": _frames_ab}
_CFUNCS: dict = {}


def robot_function(name: str):
    """The C function ``name`` of :data:`ROBOT_FUNCTIONS` (compiled, or loaded from the cache, on first use).

    Parameters
    ----------
    name : str

    Returns
    -------
    numba CFunc
        With ``.address``; its parameter vector is a packed robot (and, for ``frames_ab``, the program).
    """
    if name not in _CFUNCS:
        from .systems import PLANT_FUNCTION

        _CFUNCS[name] = cfunc(PLANT_FUNCTION)(_PY[name])
    return _CFUNCS[name]


_TARGET_HEADER = ('"""Generated by robustrack.compiled.rigid_body for the moving targets {key}; do not edit."""\n'
                  "import math  # noqa: F401\n\n"
                  "import numpy as np\n"
                  "from numba import carray\n\n"
                  "from robustrack.compiled.cache import cfunc\n"
                  "from robustrack.compiled.rigid_body import frame_rows\n"
                  "from robustrack.compiled.systems import PLANT_FUNCTION\n"
                  "from robustrack.plants.robot_data import BLOCK, N_AT, PROGRAM_HEADER, SIZE_AT\n\n\n"
                  "@cfunc(PLANT_FUNCTION)\n")


def target_source(key: str, exprs, t) -> str:
    """The module of a frame constraint whose targets move: ``ab`` evaluates them at t, then :func:`frame_rows`.

    Parameters
    ----------
    key : str
        The structure's key (a hash of the expressions).
    exprs : sequence of sympy expressions
        9 per moving target (x, ẋ, ẍ), in t alone.
    t : sympy Symbol

    Returns
    -------
    str
        A module with one ``cfunc`` ``ab`` of :data:`~robustrack.compiled.systems.PLANT_FUNCTION`.
    """
    import sympy as sp
    from sympy.printing.pycode import PythonCodePrinter

    from .._generated import END

    exprs = [sp.sympify(e).xreplace({t: sp.Symbol("t")}) for e in exprs]
    replacements, reduced = sp.cse(exprs, symbols=sp.numbered_symbols("x_"), optimizations="basic")
    printer = PythonCodePrinter({"fully_qualified_modules": True, "standard": "python3"})
    body = ["n = int(p[N_AT])", "size = int(p[SIZE_AT])", "m = int(p[size + 1])",
            "c = carray(p, (size + PROGRAM_HEADER + BLOCK * int(p[size]),))", f"x = np.empty({len(exprs)})"]
    body += [f"{sym} = {printer.doprint(e)}" for sym, e in replacements]
    body += [f"x[{i}] = {printer.doprint(e)}" for i, e in enumerate(reduced)]
    body.append("frame_rows(carray(q, (n,)), carray(qd, (n,)), c, x, carray(out, (m * n + m,)), np.empty(2 * m))")
    return (_TARGET_HEADER.format(key=key) + "def ab(q, qd, t, p, out):\n" + "".join(f"    {line}\n" for line in body)
            + END)
