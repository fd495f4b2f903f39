"""Compiled twins of :mod:`robustrack.tracking.rhs`: the nominal, controlled and uncompensated systems.

One state at a time, the same arithmetic as the numpy reference (the oracle, ``tests/test_compiled.py``):

- :func:`nominal_rhs` — ``M q̈ = Q + Qᶜ`` (W 5.2.9–5.2.11), Qᶜ from :func:`~robustrack.compiled.mechanics.fundamental`
  or, with actuators, :func:`~robustrack.compiled.actuators.actuated`;
- :func:`controlled_eval` (:func:`controlled_rhs`, :func:`controlled_jac`) — ``M_a q̈_c = Q_a + Qᶜ(t) + M(q_c) u``
  (W 5.2.17) driven by the nominal solution's dense output, and its exact Jacobian;
- :func:`uncompensated_rhs` — ``M_a q̈_a = Q_a + Qᶜ(t)`` (W 5.2.16).

Generic in the plant: a structure's own functions (M, Q, their derivatives, A and b, generated from
sympy by :mod:`robustrack.compiled.codegen`) arrive in the record :class:`Model` as numba first-class
functions of one C signature (:data:`PLANT_FUNCTION`), so these kernels — and the integrators that call
them — are compiled once per machine, whatever the plant.
"""

import functools
import math
from collections import namedtuple

import numpy as np
from llvmlite import ir
from numba import types
from numba.core.extending import intrinsic

from .cache import cfunc, kernel, register_records
from .laws import Law
from .mechanics import cholesky_solve_columns_into, fundamental_work_size, matrix_view, spd_solve, spd_solve_into
from .actuators import actuator_jac, actuator_parts, command_buffer

__all__ = ["PLANT_FUNCTION", "Model", "Dense", "actual_force", "actual_force_derivatives", "nominal_motion",
           "nominal_motion_into", "nominal_scratch", "nominal_rhs", "dense_eval", "nominal_at", "nominal_at_into", "controlled_workspace", "workspace", "controlled_eval",
           "controlled_eval_plain", "controlled_rhs", "controlled_jac", "uncompensated_rhs", "system_rhs", "unused_slot"]

_F8P = types.CPointer(types.float64)
#: The C signature of every generated function: ``f(q, q̇, t, p, out)`` writes its n × … entries to ``out``
#: (row-major): M (n × n), Q (n), ∂M/∂q_k (n × n × n, k first), ∂Q/∂q and ∂Q/∂q̇ (n × n), or A (m × n) then b (m).
PLANT_FUNCTION = types.void(_F8P, _F8P, types.float64, _F8P, _F8P)


@functools.lru_cache(maxsize=1)
def unused_slot():
    """The function of :data:`PLANT_FUNCTION` in a :class:`Model` slot a loop does not use (no constraint, no
    Jacobian): writes NaN. A ``numba.cfunc`` compiled once per machine with the kernels (it depends on no plant), so
    a structure's first run compiles only its own functions.

    Returns
    -------
    numba.core.ccallback.CFunc
    """

    @cfunc(PLANT_FUNCTION)
    def unused(q, qd, t, p, out):
        out[0] = math.nan

    return unused


#: The plants, the constraint and the actuators as the kernels take them: the addresses of the generated C
#: functions (:data:`PLANT_FUNCTION`) of the nominal plant (``nom_*``), the actual plant (``act_*``) and the
#: constraint (``con_ab``); those of a given force δQ the actual plant adds to its Q (``act_dforce``,
#: ``act_dforce_dq``, ``act_dforce_dqd``: δQ and its exact derivatives, generated from its terms beside a robot's
#: or a user's Q, :class:`~robustrack.symbolic.ForcedForm`; 0 without one: a symbolic plant's δQ is in its Q
#: already), the parameter values ``pn``, ``pa``, ``c``, ``pd`` (δQ's), the constraint rows ``m``,
#: ``act = [B; τ_max]`` ((n + 1) × k; k = 0 without actuators), the address of ``motion``, the
#: constrained motion (:mod:`~robustrack.compiled.motion`), and that of ``pinv``, the pseudo-inverse of two or
#: more constraint rows it calls (:func:`~robustrack.compiled.motion.rows_pinv`; 0 for one row or none). Addresses (int64), not function
#: objects: a record crosses from Python into the kernels at every step of a scipy integrator, and
#: numba unboxes a function object in ~10 µs, an integer in nanoseconds.
Model = namedtuple("Model", ["nom_mass", "nom_force", "nom_mass_dq", "act_mass", "act_force", "act_mass_dq",
                             "act_force_dq", "act_force_dqd", "act_dforce", "act_dforce_dq", "act_dforce_dqd", "con_ab",
                             "pn", "pa", "c", "pd", "m", "act", "motion", "pinv"])

#: The nominal solution as DOP853 left it: step times ``ts``, states ``yold`` at the steps' starts,
#: interpolant coefficients ``F`` and step lengths ``H`` (:attr:`~robustrack.tracking.integrate.NominalSolution.dense`).
Dense = namedtuple("Dense", ["ts", "yold", "F", "H"])


register_records(Model, Dense, Law)


@intrinsic
def _data(typingctx, arr):
    """The data pointer of a C-contiguous float64 array (refused at compile time for any other layout)."""
    if not (isinstance(arr, types.Array) and arr.layout == "C" and arr.dtype == types.float64):
        return None

    def codegen(context, builder, signature, args):
        return context.make_array(arr)(context, builder, args[0]).data

    return _F8P(arr), codegen


@intrinsic
def _alive(typingctx, arr):
    """A use of ``arr`` that compiles to nothing: numba frees an array after its last use, so an array whose
    data pointer (:func:`_data`) is passed to a C function must be used again after the call."""
    if not isinstance(arr, types.Array):
        return None

    def codegen(context, builder, signature, args):
        return context.get_dummy_value()

    return types.none(arr), codegen


@intrinsic
def _call_plant(typingctx, address, q, qd, t, p, out):
    """Call the C function at ``address`` (:data:`PLANT_FUNCTION`) with data pointers."""
    sig = types.void(types.int64, _F8P, _F8P, types.float64, _F8P, _F8P)

    def codegen(context, builder, signature, args):
        fnty = ir.FunctionType(ir.VoidType(), [context.get_value_type(a) for a in signature.args[1:]])
        builder.call(builder.inttoptr(args[0], fnty.as_pointer()), args[1:])
        return context.get_dummy_value()

    return sig, codegen


@intrinsic
def _call_motion(typingctx, address, M, Q, A, b, act, n, m, k, qdd, Qc, tau, work, pinv):
    """Call the C function at ``address`` (:data:`~robustrack.compiled.motion.MOTION_FUNCTION`)."""
    sig = types.int64(types.int64, _F8P, _F8P, _F8P, _F8P, _F8P, types.int64, types.int64, types.int64, _F8P, _F8P,
                      _F8P, _F8P, types.int64)

    def codegen(context, builder, signature, args):
        fnty = ir.FunctionType(ir.IntType(64), [context.get_value_type(a) for a in signature.args[1:]])
        return builder.call(builder.inttoptr(args[0], fnty.as_pointer()), args[1:])

    return sig, codegen


@kernel(refcounts=False)
def call(f, q, qd, t, p, out):
    """``f(q, q̇, t, p, out)`` of the generated function at address ``f`` (:data:`PLANT_FUNCTION`) on arrays.

    Compiled apart (once per layout of ``out``), not written into each caller: LLVM inlines it where it is
    called; numba's inlining of its intrinsics at each of ~20 call sites cost more compile time."""
    _call_plant(f, _data(q), _data(qd), t, _data(p), _data(out))
    _alive(q)
    _alive(qd)
    _alive(p)
    _alive(out)


@kernel(inline=True)
def actual_force(q, qd, t, md, Fa, tmp):
    """Fa = Q_a(q, q̇, t) + δQ(q, q̇, t) of the actual plant (W 5.2.12–5.2.16); ``tmp``: n scratch entries.

    δQ only where the record has one apart (``act_dforce``): added after Q_a, so a plant without it runs the
    arithmetic it always did."""
    call(md.act_force, q, qd, t, md.pa, Fa)
    if md.act_dforce != 0:
        call(md.act_dforce, q, qd, t, md.pd, tmp)
        for i in range(Fa.shape[0]):
            Fa[i] += tmp[i]


@kernel(inline=True)
def actual_force_derivatives(q, qd, t, md, Gq, Gqd, tmp):
    """Gq = ∂(Q_a + δQ)/∂q and Gqd = ∂(Q_a + δQ)/∂q̇ (n × n each); ``tmp``: n × n scratch. δQ's derivatives are
    sympy's, exact (friction's ∂/∂q̇ = −b − F_c sech²(q̇/v_s)/v_s is large for a small v_s: the BDF's Newton
    iterations need it right)."""
    call(md.act_force_dq, q, qd, t, md.pa, Gq)
    call(md.act_force_dqd, q, qd, t, md.pa, Gqd)
    if md.act_dforce != 0:
        n = Gq.shape[0]
        call(md.act_dforce_dq, q, qd, t, md.pd, tmp)
        for i in range(n):
            for k in range(n):
                Gq[i, k] += tmp[i, k]
        call(md.act_dforce_dqd, q, qd, t, md.pd, tmp)
        for i in range(n):
            for k in range(n):
                Gqd[i, k] += tmp[i, k]


@kernel(inline=True)
def nominal_motion(q, qd, t, md, qdd, Qc, tau):
    """The nominal constrained motion at one state: q̈ and Qᶜ (Qᶜ = 0 without a constraint).

    M, Q, A, b from the structure's functions, then the record's ``motion``
    (:func:`~robustrack.compiled.actuators.constrained_motion`, a C function: its code is not linked here).
    """
    n = q.shape[0]
    return nominal_motion_into(q, qd, t, md, qdd, Qc, tau, nominal_scratch(n, md.m))


@kernel(inline=True)
def nominal_scratch(n, m):
    """Scratch arrays of :func:`nominal_motion_into` and :func:`nominal_at_into`: y (2n), q̈ (n), M (n × n),
    Q (n), [A; b] (m n + m), and the constrained motion's (:data:`~robustrack.compiled.motion.MOTION_FUNCTION`)."""
    return (np.empty(2 * n), np.empty(n), np.empty((n, n)), np.empty(n), np.empty(m * n + m),
            np.empty(fundamental_work_size(n, m)))


@kernel(refcounts=False)
def nominal_motion_into(q, qd, t, md, qdd, Qc, tau, scratch):
    """:func:`nominal_motion` with its scratch (:func:`nominal_scratch`) in the caller's workspace: compiled once,
    apart, and called by every system (allocates nothing, counts no references)."""
    n = q.shape[0]
    m = md.m
    act = md.act
    _, _, M, Q, Ab, work = scratch
    call(md.nom_mass, q, qd, t, md.pn, M)
    call(md.nom_force, q, qd, t, md.pn, Q)
    for i in range(Ab.shape[0]):
        Ab[i] = 0.0
    A = matrix_view(Ab, 0, m, n)  # the generated function writes A (m × n) then b (m): views, no copy
    b = Ab[m * n:]
    if m > 0:
        call(md.con_ab, q, qd, t, md.c, Ab)
    ok = _call_motion(md.motion, _data(M), _data(Q), _data(A), _data(b), _data(act), n, m, act.shape[1], _data(qdd),
                      _data(Qc), _data(tau), _data(work), md.pinv) != 0
    _alive(M)
    _alive(Q)
    _alive(A)
    _alive(b)
    _alive(qdd)
    _alive(Qc)
    _alive(tau)
    _alive(work)
    return ok


@kernel
def nominal_rhs(t, y, nom, md, dy):
    """dy = d/dt (q, q̇) of the nominal system: NaN where the motion is not defined.

    A system of DOP853 (:func:`~robustrack.compiled.dop853.dop853_run`): ``nom`` is unused here.
    """
    n = y.shape[0] // 2
    q = y[:n].copy()
    qd = y[n:].copy()
    qdd = np.empty(n)
    Qc = np.empty(n)
    tau = command_buffer(md.act)
    ok = nominal_motion(q, qd, t, md, qdd, Qc, tau)
    for i in range(n):
        dy[i] = qd[i]
        dy[n + i] = qdd[i] if ok else np.nan


@kernel(inline=True)
def dense_eval(t, nom, out):
    """The nominal solution at t from its DOP853 interpolants (scipy's Dop853DenseOutput)."""
    ts, yold, F, H = nom
    nseg = H.shape[0]
    lo, hi = 0, ts.shape[0]  # k = searchsorted(ts, t, side="right") - 1, by bisection
    while lo < hi:
        mid = (lo + hi) // 2
        if t < ts[mid]:
            hi = mid
        else:
            lo = mid + 1
    k = lo - 1
    if k < 0:
        k = 0
    if k > nseg - 1:
        k = nseg - 1
    x = (t - ts[k]) / H[k]
    d = out.shape[0]
    nf = F.shape[1]
    for j in range(d):
        out[j] = 0.0
    for i in range(nf):
        f = F[k, nf - 1 - i]
        factor = x if i % 2 == 0 else 1.0 - x
        for j in range(d):
            out[j] = (out[j] + f[j]) * factor
    for j in range(d):
        out[j] += yold[k, j]


@kernel(inline=True)
def nominal_state(t, nom, md):
    """(ok, q, q̇, Qᶜ, τᶜ) of the nominal solution at t, in fresh arrays (:func:`nominal_at`)."""
    n = nom.yold.shape[1] // 2
    q = np.empty(n)
    qd = np.empty(n)
    Qc = np.empty(n)
    tau_c = command_buffer(md.act)
    ok = nominal_at(t, nom, md, q, qd, Qc, tau_c)
    return ok, q, qd, Qc, tau_c


@kernel(inline=True)
def nominal_at(t, nom, md, q, qd, Qc, tau):
    """Nominal q, q̇ (dense output), Qᶜ and (with actuators) τᶜ at t; False where the motion is not defined."""
    return nominal_at_into(t, nom, md, q, qd, Qc, tau, nominal_scratch(q.shape[0], md.m))


@kernel(refcounts=False)
def nominal_at_into(t, nom, md, q, qd, Qc, tau, scratch):
    """:func:`nominal_at` with its scratch (:func:`nominal_scratch`) in the caller's workspace.

    The nominal side of the controlled and uncompensated systems, the measurements along a run and the
    controller: compiled once, apart, and called — not written into each of them by numba's inlining (compile
    time of a new machine; allocates nothing, counts no references)."""
    n = q.shape[0]
    y = scratch[0]
    dense_eval(t, nom, y)
    for i in range(n):
        q[i] = y[i]
        qd[i] = y[n + i]
    return nominal_motion_into(q, qd, t, md, scratch[1], Qc, tau, scratch)


@kernel(inline=True)
def nominal_cache(n, k):
    """A one-entry cache of the nominal side, [t, ok, q (n), q̇ (n), Qᶜ (n), τᶜ (k)]: empty (t = NaN) at first."""
    nw = np.empty(2 + 3 * n + k)
    nw[0] = np.nan
    return nw


@kernel(inline=True)
def nominal_cached(t, nom, md, nw, scratch):
    """:func:`nominal_at` through the cache ``nw``: the Newton iterations and the Jacobian of a BDF step
    all ask for the same t, so the nominal solution and its fundamental equation are evaluated once.
    ``scratch``: :func:`nominal_scratch`."""
    n = nom.yold.shape[1] // 2
    if nw[0] != t:  # also when nw[0] is NaN (empty)
        ok = nominal_at_into(t, nom, md, nw[2:2 + n], nw[2 + n:2 + 2 * n], nw[2 + 2 * n:2 + 3 * n],
                             nw[2 + 3 * n:], scratch)
        nw[0] = t
        nw[1] = 1.0 if ok else 0.0
    return nw[1] != 0.0


@kernel(inline=True)
def controlled_workspace(n, nz, k, m):
    """Scratch arrays of :func:`controlled_eval` (n coordinates, nz integral states, k actuators, m constraint
    rows): the nominal cache, vectors, n × n matrices, ∂u/∂z, the mass matrices' derivatives, the Jacobian's
    n × (2n + nz) rows, and :func:`nominal_scratch`."""
    return (nominal_cache(n, k), np.empty((5, n)), np.empty((8, n, n)), np.empty((n, nz)), np.empty((2, n, n, n)),
            np.empty((2, n, 2 * n + nz)), nominal_scratch(n, m))


def workspace(n, nz, k, m):
    """:func:`controlled_workspace` made in Python (numpy arrays of the same types and sizes, the nominal cache
    empty): the scratch of a kernel called from Python (:func:`~robustrack.compiled.bdf.bdf_advance`).

    Parameters
    ----------
    n, nz, k, m : int
        Coordinates, the compensator's states, actuators, constraint rows.

    Returns
    -------
    tuple
    """
    nw = np.empty(2 + 3 * n + k)
    nw[0] = np.nan
    scratch = (np.empty(2 * n), np.empty(n), np.empty((n, n)), np.empty(n), np.empty(m * n + m),
               np.empty(fundamental_work_size.py_func(n, m)))
    return (nw, np.empty((5, n)), np.empty((8, n, n)), np.empty((n, nz)), np.empty((2, n, n, n)),
            np.empty((2, n, 2 * n + nz)), scratch)


def _controlled_eval(actuated: bool):
    """:func:`controlled_eval` with actuators (``actuated``) or without: the variant without links no actuator
    code (numba drops the branches on the constant), so a machine that never runs actuators never compiles it.
    The variant without allocates nothing and counts no references (``refcounts=False``)."""

    @kernel(refcounts=actuated)
    def controlled_eval(t, x, nom, md, law, uh, held, jac, work, dx, J):
        """The controlled system at (t, x): writes dx = d/dt (q_c, q̇_c, z) and, if ``jac``, its exact Jacobian J.

        Without actuators (act has no columns) the force is Qᶜ(t) + M(q_c) u (W 5.2.17); with them
        B sat(τᶜ(t) + τᵘ) (:func:`actuator_parts`). ``work`` is a :func:`controlled_workspace`;
        without actuators it allocates nothing: the integrators call it millions of times.
        """
        n = nom.yold.shape[1] // 2
        nz = x.shape[0] - 2 * n
        nw, wv, wm, wz, w3, wr, scratch = work
        act = md.act
        na = act.shape[1]
        ok = nominal_cached(t, nom, md, nw, scratch)
        q = nw[2:2 + n]
        qd = nw[2 + n:2 + 2 * n]
        Qc = nw[2 + 2 * n:2 + 3 * n]
        tau_c = nw[2 + 3 * n:]
        qc = x[:n]
        qcd = x[n:2 * n]
        e = wv[0]
        ed = wv[1]
        u = wv[2]
        Fa = wv[3]
        acc = wv[4]
        Ue = wm[0]
        Ued = wm[1]
        Mn = wm[2]
        Ma = wm[3]
        L = wm[4]
        Uz = wz
        for i in range(n):
            e[i] = qc[i] - q[i]
            ed[i] = qcd[i] - qd[i]
        law.u(law.params, law.f, e, ed, x[2 * n:], u, Ue, Ued, Uz, jac and not held)
        if held:
            for i in range(n):
                u[i] = uh[i]
            Ue[:, :] = 0.0
            Ued[:, :] = 0.0
            Uz[:, :] = 0.0
        call(md.nom_mass, qc, qcd, t, md.pn, Mn)
        call(md.act_mass, qc, qcd, t, md.pa, Ma)
        actual_force(qc, qcd, t, md, Fa, wm[7][0])
        exact = True
        if actuated:
            exact = na == 0
            if na > 0:
                fine, _, _, _, _, tau, free = actuator_parts(Mn, act, tau_c, u)
                ok = ok and fine
                # invertible B, no actuator saturated: B τ = Qᶜ + M u exactly, computed as without B
                exact = na == n
                for a in range(na):
                    exact = exact and free[a] == 1.0
                if not exact:
                    for i in range(n):
                        s = 0.0
                        for a in range(na):
                            s += act[i, a] * tau[a]
                        Fa[i] += s
        if exact:
            for i in range(n):
                s = 0.0
                for k in range(n):
                    s += Mn[i, k] * u[k]
                Fa[i] += Qc[i] + s
        # the forward solution of M_a acc = F goes to e, no longer needed
        ok = ok and spd_solve_into(Ma, Fa, acc, L, e)
        for i in range(n):
            dx[i] = qcd[i]
            dx[n + i] = acc[i] if ok else np.nan
        if law.integral:
            for i in range(nz):
                dx[2 * n + i] = qc[i] - q[i]
        else:
            for i in range(nz):
                dx[2 * n + i] = 0.0
        if not jac:
            return
        J[:, :] = 0.0
        if not ok:
            J[:, :] = np.nan
            return
        Da = w3[0]
        call(md.act_mass_dq, qc, qcd, t, md.pa, Da)
        Dn = w3[1]
        call(md.nom_mass_dq, qc, qcd, t, md.pn, Dn)
        Gq = wm[5]
        Gqd = wm[6]
        actual_force_derivatives(qc, qcd, t, md, Gq, Gqd, wm[7])
        # ∂F/∂x − (∂M_a/∂x) q̈, then M_a⁻¹ of it
        R = wr[0]
        R[:, :] = 0.0
        if exact:
            for i in range(n):
                for k in range(n):
                    s = Gq[i, k]
                    for j in range(n):
                        s += Dn[k, i, j] * u[j] + Mn[i, j] * Ue[j, k] - Da[k, i, j] * acc[j]
                    R[i, k] = s
                    s = Gqd[i, k]
                    for j in range(n):
                        s += Mn[i, j] * Ued[j, k]
                    R[i, n + k] = s
                for k in range(nz):
                    s = 0.0
                    for j in range(n):
                        s += Mn[i, j] * Uz[j, k]
                    R[i, 2 * n + k] = s
        elif actuated:
            for i in range(n):
                for k in range(n):
                    s = Gq[i, k]
                    for j in range(n):
                        s -= Da[k, i, j] * acc[j]
                    R[i, k] = s
                    R[i, n + k] = Gqd[i, k]
            actuator_jac(Mn, Dn, act, tau_c, u, Ue, Ued, Uz, R)
        S = wr[1]
        cholesky_solve_columns_into(L, R, S, S)  # L: M_a's factor, from the solve of acc above
        for i in range(n):
            J[i, n + i] = 1.0
            for k in range(2 * n + nz):
                J[n + i, k] = S[i, k]
        if law.integral:
            for i in range(nz):
                J[2 * n + i, i] = 1.0

    return controlled_eval


#: The controlled system (W 5.2.17) with actuators, B sat(τᶜ(t) + τᵘ): what every loop with actuators runs.
controlled_eval = _controlled_eval(True)
#: The same without actuators (the arithmetic of :data:`controlled_eval` with k = 0, nothing else compiled).
controlled_eval_plain = _controlled_eval(False)


@kernel
def controlled_rhs(f, t, x, nom, md, law, uh, held):
    """d/dt (q_c, q̇_c, z) of the controlled actual system (W 5.2.17); ``f`` is :func:`controlled_eval`."""
    n = nom.yold.shape[1] // 2
    work = controlled_workspace(n, x.shape[0] - 2 * n, md.act.shape[1], md.m)
    dx = np.empty(x.shape[0])
    f(t, x, nom, md, law, uh, held, False, work, dx, np.empty((0, 0)))
    return dx


@kernel
def controlled_jac(f, t, x, nom, md, law, uh, held):
    """The exact Jacobian of :func:`controlled_rhs` with respect to (q_c, q̇_c, z); ``f`` is :func:`controlled_eval`."""
    n = nom.yold.shape[1] // 2
    d = x.shape[0]
    work = controlled_workspace(n, d - 2 * n, md.act.shape[1], md.m)
    J = np.empty((d, d))
    f(t, x, nom, md, law, uh, held, True, work, np.empty(d), J)
    return J


@kernel
def system_rhs(f, t, y, nom, md):
    """dy/dt of the system ``f`` (:func:`nominal_rhs` or :func:`uncompensated_rhs`) in a new array."""
    dy = np.empty(y.shape[0])
    f(t, y, nom, md, dy)
    return dy


@kernel
def uncompensated_rhs(t, x, nom, md, dx):
    """dx = d/dt (q_a, q̇_a) of the actual plant under Qᶜ(t) alone (W 5.2.16); with actuators B sat(τᶜ(t))."""
    n = x.shape[0] // 2
    act = md.act
    na = act.shape[1]
    ok, q, qd, Qc, tau_c = nominal_state(t, nom, md)
    qa = x[:n].copy()
    qad = x[n:].copy()
    Ma = np.empty((n, n))
    call(md.act_mass, qa, qad, t, md.pa, Ma)
    Fa = np.empty(n)
    actual_force(qa, qad, t, md, Fa, np.empty(n))
    exact = na == 0 or na == n  # B invertible: B sat(τᶜ) = Qᶜ where no command saturates
    for a in range(na):
        if abs(tau_c[a]) > act[n, a]:
            exact = False
    if exact:
        for i in range(n):
            Fa[i] += Qc[i]
    else:
        for a in range(na):
            v = min(max(tau_c[a], -act[n, a]), act[n, a])
            for i in range(n):
                Fa[i] += act[i, a] * v
    acc = np.empty(n)
    ok = ok and spd_solve(Ma, Fa, acc)
    for i in range(n):
        dx[i] = qad[i]
        dx[n + i] = acc[i] if ok else np.nan
