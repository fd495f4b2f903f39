"""scipy's BDF (``scipy/integrate/_ivp/bdf.py``: variable order 1–5, quasi-constant step size, NDF error
constants, Newton with the Jacobian reused until it fails to converge), compiled, for the controlled actual
system (W 5.2.17) with the exact Jacobian of :func:`~robustrack.compiled.systems.controlled_eval`.

One change from scipy: the Newton iteration's tolerance is :data:`BDF_NEWTON_TOL` = 0.03 of the error
tolerance at every rtol (scipy: min(0.03, √rtol), 1e-4 at the scenarios' rtol 1e-8, four orders below the
local error a step is accepted with); its test is scipy's (two iterations at least, the rate from this
solve's own corrections). On a sample of the seed's campaign this takes 27 % fewer right-hand sides,
61 % fewer Jacobians and 42 % fewer LU decompositions, with errors of max‖e‖ and max‖ė‖ of the same size
(``benchmarks/bench_integrators.py``; eight runs against Radau at rtol 1e-12 in docs/results/performance.md).
CVODE's test, which also accepts a first iterate on the rate carried from earlier steps, saves ~3 % more and
collapsed the step size of a plant whose Jacobian is differenced (``tests/test_user_compiled.py``).

The compensated loop is stiff (GSS's gain makes ∂u/∂ė ~ 1e4), so it needs an implicit method; the horizon
is walked in pieces (:func:`bdf_advance`) that step exactly as one call. Generic in the plant and the law
(records of :mod:`~robustrack.compiled.systems` and :mod:`~robustrack.compiled.laws`): compiled once
per machine and cached.
"""

import math
from collections import namedtuple

import numpy as np
from .cache import kernel

from .mechanics import lu_factor, lu_solve
from .systems import controlled_workspace
from .stepping import axpy, beyond, initial_guess, initial_step, rms_scaled, stall_window, stalled

__all__ = ["BdfState", "bdf_init", "bdf_advance", "bdf_scratch", "bdf_steps"]

BDF_MAX_ORDER = 5
BDF_NEWTON_MAXITER = 4
#: The Newton iteration's tolerance, in units of the error tolerance (the module docstring).
BDF_NEWTON_TOL = 0.03
BDF_KAPPA = np.array([0.0, -0.1850, -1 / 9, -0.0823, -0.0415, 0.0])
BDF_GAMMA = np.array([0.0, 1.0, 1.5, 11 / 6, 25 / 12, 137 / 60])
BDF_ALPHA = (1.0 - BDF_KAPPA) * BDF_GAMMA
BDF_ERROR_CONST = BDF_KAPPA * BDF_GAMMA + 1.0 / np.arange(1, BDF_MAX_ORDER + 2)

#: What the steps carry between calls: the difference array D, the Jacobian J, info = [t, h_abs, order,
#: n_equal_steps, nfev, njev, nlu, have_lu, then the step-size collapse's window (5 entries,
#: :func:`~robustrack.compiled.stepping.stall_window`)] (floats), and LU, piv of I − c J, which the steps reuse.
BdfState = namedtuple("BdfState", ["D", "J", "info", "LU", "piv"])


@kernel
def bdf_compute_R(order, factor):
    M = np.zeros((order + 1, order + 1))
    for j in range(order + 1):
        M[0, j] = 1.0
    for i in range(1, order + 1):
        for j in range(1, order + 1):
            M[i, j] = (i - 1 - factor * j) / i
    for i in range(1, order + 1):
        for j in range(order + 1):
            M[i, j] *= M[i - 1, j]
    return M


@kernel(refcounts=True)  # it allocates, called from bdf_steps, which does not
def bdf_change_D(D, order, factor):
    R = bdf_compute_R(order, factor)
    U = bdf_compute_R(order, 1.0)
    RU = R @ U
    k = order + 1
    new = RU.T @ D[:k]
    for i in range(k):
        for c in range(D.shape[1]):
            D[i, c] = new[i, c]


@kernel
def bdf_init(f, x0, t0, t1, tol, nom, md, law):
    """Start scipy's BDF on the controlled system at (t0, x0): the :class:`BdfState` for :func:`bdf_advance`.

    ``f`` is :func:`~robustrack.compiled.systems.controlled_eval`, an argument (a first-class function), so
    this integrator is compiled once, without it; ``tol = (rtol, atol)``; ``nom``, ``md``, ``law``: the nominal solution
    (:class:`~robustrack.compiled.systems.Dense`), the :class:`~robustrack.compiled.systems.Model` and
    the :class:`~robustrack.compiled.laws.Law`.
    """
    rtol, atol = tol
    d = x0.shape[0]
    uh = np.zeros(nom.yold.shape[1] // 2)
    y = x0.copy()
    # f itself, one workspace (what it reads of it, it writes first): controlled_rhs and controlled_jac, the
    # wrappers scipy's integrators call, are not compiled for BDF
    n = nom.yold.shape[1] // 2
    work = controlled_workspace(n, d - 2 * n, md.act.shape[1], md.m)
    no_jac = np.empty((0, 0))
    fy = np.empty(d)
    f(t0, y, nom, md, law, uh, False, False, work, fy, no_jac)
    h0, scale, d1 = initial_guess(y, fy, t1 - t0, rtol, atol)  # scipy's select_initial_step, error order 1
    f1 = np.empty(d)
    f(t0 + h0, axpy(y, h0, fy), nom, md, law, uh, False, False, work, f1, no_jac)
    h_abs = initial_step(fy, f1, h0, scale, d1, t1 - t0, 1)
    J = np.empty((d, d))
    f(t0, y, nom, md, law, uh, False, True, work, np.empty(d), J)
    D = np.zeros((BDF_MAX_ORDER + 3, d))
    for i in range(d):
        D[0, i] = y[i]
        D[1, i] = fy[i] * h_abs
    info = np.empty(13)
    head = np.array([t0, h_abs, 1.0, 0.0, 2.0, 1.0, 0.0, 0.0])
    window = stall_window(t0, t1)
    for i in range(8):
        info[i] = head[i]
    for i in range(5):
        info[8 + i] = window[i]
    return BdfState(D, J, info, np.empty((d, d)), np.zeros(d, dtype=np.int64))


def bdf_scratch(md, d: int, n: int, rows: int = 1024) -> tuple:
    """The arrays :func:`bdf_advance` lends :func:`bdf_steps`, made once per integration: a batch of ``rows``
    steps (times; states and the nominal side there), the vectors (9 × d), I − c J (d × d), the held u (n),
    :func:`~robustrack.compiled.systems.workspace` and an empty Jacobian. Reused from piece to piece: what the
    steps read of them they write first (the nominal cache holds values of t alone), so the steps are those of
    fresh arrays.

    Parameters
    ----------
    md : Model
        The compiled system's record (its actuators' and constraint rows' sizes).
    d : int
        The controlled system's dimension (2n + n_z).
    n : int
        Coordinates.
    rows : int
        Steps per batch.

    Returns
    -------
    tuple
    """
    from .systems import workspace

    return (np.empty(rows), np.empty((rows, d + 3 * n)), np.empty((9, d)), np.empty((d, d)), np.zeros(n),
            workspace(n, d - 2 * n, md.act.shape[1], md.m), np.empty((0, 0)))


def bdf_advance(f, state, t1, t_stop, t_out, tol, nom, md, law, limits, scratch=None, X_out=None):
    """scipy's BDF on the system ``f`` (as :func:`bdf_init`) from ``state`` (:class:`BdfState`, updated in place)
    until t >= t_stop (or t1).

    Steps are never clipped at t_stop, so advancing in pieces gives the same steps as one
    call. Returns (X_out at t_out (NaN where not reached), step times, step states, the nominal side
    [q, q̇, Qᶜ] at the steps (what the right-hand side's nominal cache held there: the measurements along
    the run read it, :func:`~robustrack.compiled.along.measure_along`), status):
    status 0 while stepping succeeds, 1 when the step fell below its minimum, 3 at the evaluation limit,
    4 at the state limit, 5 at a step-size collapse (:func:`~robustrack.compiled.stepping.stalled`) (``limits = (max_nfev, max_abs_state)``, checked between accepted steps: a run
    within them steps exactly as without them).

    Parameters
    ----------
    f, state, t1, t_stop, t_out, tol, nom, md, law, limits
        The system, the integrator's state, the horizon's end, where to stop, the output times, the tolerances,
        the nominal side, the compiled system's record, the law and the limits, as :func:`bdf_init` and
        :func:`bdf_steps` take them.
    scratch : tuple, optional
        :func:`bdf_scratch`'s arrays (made here if not given).
    X_out : ndarray (len(t_out), d), optional
        Where the states at the output times go (only the rows of the times passed are written): the caller's
        whole-horizon array, so that pieces fill one array; default a new one of NaN.

    Returns
    -------
    tuple
        As described above.

    The steps themselves are the kernel :func:`bdf_steps` (no allocation, no reference counted), in batches
    (``scratch``: :func:`bdf_scratch`, made here if not given); this plain Python function keeps the growing
    record. It is not compiled: a compiled driver links (and LLVM optimizes and generates again) the whole of
    :func:`bdf_steps` into its own machine code — ~5 s of a new machine's first run, for a loop of a call or
    two per piece.
    """
    D, J, info, LU, piv = state
    d = D.shape[1]
    n = nom.yold.shape[1] // 2
    batch_T, batch_X, vectors, A, uh, work, no_jac = bdf_scratch(md, d, n) if scratch is None else scratch
    if X_out is None:
        X_out = np.full((t_out.shape[0], d), np.nan)
    at = np.zeros(3)  # [index of the next output time, status, 1 once a step was taken in this call]
    T_steps, X_steps = [], []
    while True:
        got = bdf_steps(f, D, J, info, LU, piv, t1, t_stop, t_out, tol, nom, md, law, limits, X_out, batch_T, batch_X,
                        at, vectors, A, uh, work, no_jac)
        T_steps.append(batch_T[:got].copy())
        X_steps.append(batch_X[:got].copy())
        if got < batch_T.shape[0] or at[1] != 0.0:
            break
    T_steps = T_steps[0] if len(T_steps) == 1 else np.concatenate(T_steps)
    X_steps = X_steps[0] if len(X_steps) == 1 else np.concatenate(X_steps)
    return X_out, T_steps, X_steps[:, :d].copy(), X_steps[:, d:].copy(), int(at[1])


@kernel(refcounts=False)
def bdf_steps(f, D, J, info, LU, piv, t1, t_stop, t_out, tol, nom, md, law, limits, X_out, batch_T, batch_X, at,
              vectors, A, uh, work, no_jac):
    """At most ``batch_T.shape[0]`` steps of :func:`bdf_advance`, into the batch (batch_T, batch_X); returns
    their number, fewer when t reached t_stop or t1 or the status (``at[1]``) is not 0.

    Carries its state between calls in D, J, info, LU, piv (as :func:`bdf_advance`) and ``at``; takes every
    array it uses from the caller (``vectors``: 9 × d, ``A``: d × d, ``uh``: n, ``work``:
    :func:`~robustrack.compiled.systems.controlled_workspace`); only :func:`bdf_change_D` (scipy's ``change_D``
    with the BLAS's products, when the step size changes) allocates.
    """
    rtol, atol = tol
    max_nfev, max_state = limits
    d = D.shape[1]
    n = nom.yold.shape[1] // 2
    nfev = int(info[4])
    njev = int(info[5])
    nlu = int(info[6])
    newton_tol = max(10.0 * 2.220446049250313e-16 / rtol, BDF_NEWTON_TOL)
    y, y_new, dy, fk, res, y_predict, psi, scale, dsum = (vectors[0], vectors[1], vectors[2], vectors[3],
                                                           vectors[4], vectors[5], vectors[6], vectors[7], vectors[8])
    ns = 0
    j = int(at[0])
    t = info[0]
    h_abs = info[1]
    order = int(info[2])
    n_equal_steps = int(info[3])
    for i in range(d):
        y[i] = D[0, i]
    while j < t_out.shape[0] and t_out[j] <= t:
        j += 1
    have_lu = info[7] != 0.0
    status = 0
    window = info[8:13]  # a view: the window carries over to the next call
    stepped = at[2] != 0.0
    while t < t1 and t < t_stop and ns < batch_T.shape[0]:
        status = beyond(nfev, y, max_nfev, max_state)
        if status != 0:
            break
        if stepped and stalled(t, nfev, max_nfev, window):
            status = 5
            break
        stepped = True
        min_step = 10.0 * abs(np.nextafter(t, np.inf) - t)
        if h_abs < min_step:
            bdf_change_D(D, order, min_step / h_abs)
            h_abs = min_step
            n_equal_steps = 0
        current_jac = False
        accepted = False
        for i in range(d):
            y_new[i] = y[i]
            dsum[i] = 0.0
        n_iter = 0
        error_norm = 0.0
        t_new = t
        while not accepted:
            if h_abs < min_step:
                status = 1
                break
            t_new = t + h_abs
            if t_new > t1:
                t_new = t1
                bdf_change_D(D, order, (t_new - t) / h_abs)
                n_equal_steps = 0
                have_lu = False
            h = t_new - t
            h_abs = h
            for i in range(d):
                v = 0.0
                for k in range(order + 1):
                    v += D[k, i]
                y_predict[i] = v
                scale[i] = atol + rtol * abs(v)
                v = 0.0
                for k in range(1, order + 1):
                    v += D[k, i] * BDF_GAMMA[k]
                psi[i] = v / BDF_ALPHA[order]
            converged = False
            cc = h / BDF_ALPHA[order]
            while not converged:
                if not have_lu:
                    for a in range(d):
                        for b in range(d):
                            A[a, b] = (1.0 if a == b else 0.0) - cc * J[a, b]
                    nlu += 1
                    if not lu_factor(A, LU, piv):
                        break
                    have_lu = True
                # Newton iterations (scipy's solve_bdf_system)
                for i in range(d):
                    y_new[i] = y_predict[i]
                    dsum[i] = 0.0
                dy_norm_old = -1.0
                converged = False
                n_iter = 0
                for k in range(BDF_NEWTON_MAXITER):
                    n_iter = k + 1
                    f(t_new, y_new, nom, md, law, uh, False, False, work, fk, no_jac)
                    nfev += 1
                    finite = True
                    for i in range(d):
                        if not math.isfinite(fk[i]):
                            finite = False
                    if not finite:
                        break
                    for i in range(d):
                        res[i] = cc * fk[i] - psi[i] - dsum[i]
                    lu_solve(LU, piv, res, dy)
                    dy_norm = rms_scaled(1.0, dy, scale)
                    rate = -1.0
                    if dy_norm_old >= 0.0:
                        rate = dy_norm / dy_norm_old
                    if rate >= 0.0 and (rate >= 1.0 or rate ** (BDF_NEWTON_MAXITER - k) / (1.0 - rate) * dy_norm
                                        > newton_tol):
                        break
                    for i in range(d):
                        y_new[i] += dy[i]
                        dsum[i] += dy[i]
                    if dy_norm == 0.0 or (rate >= 0.0 and rate / (1.0 - rate) * dy_norm < newton_tol):
                        converged = True
                        break
                    dy_norm_old = dy_norm
                if not converged:
                    if current_jac:
                        break
                    f(t_new, y_predict, nom, md, law, uh, False, True, work, dy, J)
                    njev += 1
                    have_lu = False
                    current_jac = True
            if not converged:
                h_abs *= 0.5
                bdf_change_D(D, order, 0.5)
                n_equal_steps = 0
                have_lu = False
                continue
            safety = 0.9 * (2 * BDF_NEWTON_MAXITER + 1) / (2 * BDF_NEWTON_MAXITER + n_iter)
            for i in range(d):
                scale[i] = atol + rtol * abs(y_new[i])
            error_norm = rms_scaled(BDF_ERROR_CONST[order], dsum, scale)
            if error_norm > 1.0:
                factor = max(0.2, safety * error_norm ** (-1.0 / (order + 1)))
                h_abs *= factor
                bdf_change_D(D, order, factor)
                n_equal_steps = 0
            else:
                accepted = True
        if status != 0:
            break
        n_equal_steps += 1
        t = t_new
        for i in range(d):
            y[i] = y_new[i]
        for i in range(d):
            D[order + 2, i] = dsum[i] - D[order + 1, i]
            D[order + 1, i] = dsum[i]
            for k in range(order, -1, -1):
                D[k, i] += D[k + 1, i]
        if n_equal_steps >= order + 1:
            error_m_norm = np.inf
            if order > 1:
                error_m_norm = rms_scaled(BDF_ERROR_CONST[order - 1], D[order], scale)
            error_p_norm = np.inf
            if order < BDF_MAX_ORDER:
                error_p_norm = rms_scaled(BDF_ERROR_CONST[order + 1], D[order + 2], scale)
            best = -1
            best_factor = -1.0
            norms = (error_m_norm, error_norm, error_p_norm)
            for i in range(3):
                fac = np.inf if norms[i] == 0.0 else norms[i] ** (-1.0 / (order + i))
                if fac > best_factor:
                    best_factor = fac
                    best = i
            order += best - 1
            factor = min(10.0, safety * best_factor)
            h_abs *= factor
            bdf_change_D(D, order, factor)
            n_equal_steps = 0
            have_lu = False
        # record the step and the output times it passed (scipy's BdfDenseOutput)
        nw = work[0]
        if nw[0] != t:  # (never: the step's last Newton iteration evaluated f at t, and with it the nominal side)
            f(t, y, nom, md, law, uh, False, False, work, fk, no_jac)
        batch_T[ns] = t
        for i in range(d):
            batch_X[ns, i] = y[i]
        for i in range(3 * n):
            batch_X[ns, d + i] = nw[2 + i]
        ns += 1
        while j < t_out.shape[0] and t_out[j] <= t:
            if t_out[j] == t:
                for i in range(d):
                    X_out[j, i] = y[i]
            else:
                hh = h_abs
                for i in range(d):
                    X_out[j, i] = D[0, i]
                p = 1.0
                for k in range(order):
                    p *= (t_out[j] - (t - hh * k)) / (hh * (1 + k))
                    for i in range(d):
                        X_out[j, i] += D[k + 1, i] * p
            j += 1
    info[0] = t
    info[1] = h_abs
    info[2] = order
    info[3] = n_equal_steps
    info[4] = nfev
    info[5] = njev
    info[6] = nlu
    info[7] = 1.0 if have_lu else 0.0
    at[0] = j
    at[1] = status
    at[2] = 1.0 if stepped else 0.0
    return ns
