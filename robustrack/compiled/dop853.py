"""scipy's DOP853 (``scipy/integrate/_ivp/rk.py``: same tableau, error norm, step control and 7th-order
dense output), compiled, for the nominal system and the uncompensated copy (W 5.2.9–5.2.11, 5.2.16):
the whole horizon is one compiled call.

Generic in the right-hand side (an argument) and the plant (the structure's functions arrive in the
:class:`~robustrack.compiled.systems.Model`), so it is compiled once per machine and cached. The tableau is vendored (:mod:`~robustrack.compiled.dop853_tableau`).
"""

import math

import numpy as np
from .cache import kernel

from . import dop853_tableau as _dop
from .stepping import axpy, beyond, initial_guess, initial_step, nans, record, stall_window, stalled

__all__ = ["dop853_run"]

DOP_NS = _dop.N_STAGES
DOP_A = _dop.A[:DOP_NS, :DOP_NS].copy()
DOP_B = _dop.B.copy()
DOP_C = _dop.C[:DOP_NS].copy()
DOP_E3 = _dop.E3.copy()
DOP_E5 = _dop.E5.copy()
DOP_D = _dop.D.copy()
DOP_A_EXTRA = _dop.A[DOP_NS + 1:].copy()
DOP_C_EXTRA = _dop.C[DOP_NS + 1:].copy()
DOP_NX = _dop.N_STAGES_EXTENDED


@kernel(inline=True)
def _combine(y, h, K, coef, s):
    """A new array ``y + h Σ_{r<s} coef[r] K[r]`` (the sum taken first, as scipy's ``K[:s].T @ a * h``)."""
    d = y.shape[0]
    out = np.empty(d)
    for i in range(d):
        acc = 0.0
        for r in range(s):
            acc += K[r, i] * coef[r]
        out[i] = y[i] + acc * h
    return out


@kernel
def dop853_run(rhs, y0, t0, t1, t_out, tol, dense, nom, md, limits):
    """scipy's DOP853 from t0 to t1 on the system ``rhs``; returns (step times, step states, interpolants F
    (only if dense), states at t_out, nfev, status 0 ok / 1 step too small / 2 not finite / 3 evaluation
    limit / 4 state limit / 5 step-size collapse (:func:`~robustrack.compiled.stepping.stalled`)).

    ``limits = (max_nfev, max_abs_state)`` (:func:`~robustrack.compiled.loop.limits`): checked between
    accepted steps, so a run within them steps exactly as without them, and a run beyond them ends with
    what it reached.

    ``rhs(t, y, nom, md, dy)`` is :func:`~robustrack.compiled.systems.nominal_rhs` or
    :func:`~robustrack.compiled.systems.uncompensated_rhs`, an argument (a first-class function), so this
    integrator is compiled once, without them; ``tol = (rtol, atol)``; ``nom`` the nominal solution
    (:class:`~robustrack.compiled.systems.Dense`; unused for the nominal system itself), ``md`` the
    :class:`~robustrack.compiled.systems.Model`.
    """
    rtol, atol = tol
    max_nfev, max_state = limits
    d = y0.shape[0]
    cap = 1024
    T = np.empty(cap)
    Y = np.empty((cap, d))
    FF = np.empty((cap if dense else 1, 7, d))
    X_out = nans(t_out.shape[0], d)
    T[0] = t0
    for i in range(d):
        Y[0, i] = y0[i]
    ns = 1
    j = 0
    while j < t_out.shape[0] and t_out[j] <= t0:
        for i in range(d):
            X_out[j, i] = y0[i]
        j += 1
    y = y0.copy()
    t = t0
    f = np.empty(d)
    rhs(t, y, nom, md, f)
    nfev = 1
    h0, scale, d1 = initial_guess(y, f, t1 - t0, rtol, atol)  # scipy's select_initial_step, error order 7
    f1 = np.empty(d)
    rhs(t0 + h0, axpy(y, h0, f), nom, md, f1)
    nfev += 1
    h_abs = initial_step(f, f1, h0, scale, d1, t1 - t0, 7)
    K = np.empty((DOP_NX, d))
    status = 0
    window = stall_window(t0, t1)
    while t < t1:
        status = beyond(nfev, y, max_nfev, max_state)
        if status != 0:
            break
        if ns > 1 and stalled(t, nfev, max_nfev, window):
            status = 5
            break
        min_step = 10.0 * abs(np.nextafter(t, np.inf) - t)
        if h_abs < min_step:
            h_abs = min_step
        rejected = False
        y_new = y
        f_new = f
        h = 0.0
        t_new = t
        while True:
            if h_abs < min_step:
                status = 1
                break
            t_new = t + h_abs
            if t_new > t1:
                t_new = t1
            h = t_new - t
            h_abs = h
            for i in range(d):
                K[0, i] = f[i]
            for s in range(1, DOP_NS):
                rhs(t + DOP_C[s] * h, _combine(y, h, K, DOP_A[s], s), nom, md, K[s])
            nfev += DOP_NS - 1
            y_new = _combine(y, h, K, DOP_B, DOP_NS)
            f_new = np.empty(d)
            rhs(t + h, y_new, nom, md, f_new)
            nfev += 1
            for i in range(d):
                K[DOP_NS, i] = f_new[i]
            e5 = 0.0
            e3 = 0.0
            finite = True
            for i in range(d):
                s5 = 0.0
                s3 = 0.0
                for r in range(DOP_NS + 1):
                    s5 += K[r, i] * DOP_E5[r]
                    s3 += K[r, i] * DOP_E3[r]
                sc = atol + max(abs(y[i]), abs(y_new[i])) * rtol
                e5 += (s5 / sc) ** 2
                e3 += (s3 / sc) ** 2
                if not math.isfinite(y_new[i]) or not math.isfinite(f_new[i]):
                    finite = False
            if not finite:
                status = 2
                break
            if e5 == 0.0 and e3 == 0.0:
                error_norm = 0.0
            else:
                error_norm = abs(h) * e5 / math.sqrt((e5 + 0.01 * e3) * d)
            if error_norm < 1.0:
                if error_norm == 0.0:
                    factor = 10.0
                else:
                    factor = min(10.0, 0.9 * error_norm ** (-1.0 / 8.0))
                if rejected:
                    factor = min(1.0, factor)
                h_abs *= factor
                break
            h_abs *= max(0.2, 0.9 * error_norm ** (-1.0 / 8.0))
            rejected = True
        if status != 0:
            break
        need = dense or (j < t_out.shape[0] and t_out[j] <= t_new)
        if need:
            for s in range(DOP_NS + 1, DOP_NX):
                row = DOP_A_EXTRA[s - DOP_NS - 1]
                rhs(t + DOP_C_EXTRA[s - DOP_NS - 1] * h, _combine(y, h, K, row, s), nom, md, K[s])
            nfev += DOP_NX - DOP_NS - 1
            Fs = np.empty((7, d))
            for i in range(d):
                delta = y_new[i] - y[i]
                Fs[0, i] = delta
                Fs[1, i] = h * f[i] - delta
                Fs[2, i] = 2.0 * delta - h * (f_new[i] + f[i])
                for r in range(4):
                    acc = 0.0
                    for s in range(DOP_NX):
                        acc += K[s, i] * DOP_D[r, s]
                    Fs[3 + r, i] = h * acc
            while j < t_out.shape[0] and t_out[j] <= t_new:
                x = (t_out[j] - t) / h
                for i in range(d):
                    val = 0.0
                    for k in range(7):
                        val = (val + Fs[6 - k, i]) * (x if k % 2 == 0 else 1.0 - x)
                    X_out[j, i] = val + y[i]
                j += 1
            if dense:
                if ns - 1 == FF.shape[0]:
                    F2 = np.empty((2 * FF.shape[0], 7, d))
                    for k in range(ns - 1):
                        for r in range(7):
                            for i in range(d):
                                F2[k, r, i] = FF[k, r, i]
                    FF = F2
                for r in range(7):
                    for i in range(d):
                        FF[ns - 1, r, i] = Fs[r, i]
        T, Y, ns = record(T, Y, ns, t_new, y_new)
        t = t_new
        y = y_new
        f = f_new
    nF = ns - 1 if dense else 0
    return T[:ns].copy(), Y[:ns].copy(), FF[:nF].copy(), X_out, nfev, status

