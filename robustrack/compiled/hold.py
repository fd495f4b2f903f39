"""Sampled (zero-order-hold) control, compiled: u computed at each sampling instant and held to the next.

Within a hold interval u is constant and the controlled system (W 5.2.17) is not stiff, so an explicit
method with error control — Dormand–Prince 5(4), the tableau of scipy's RK45 — runs the whole horizon
inside one compiled call. The numpy reference runs scipy's RK45 per interval
(:func:`robustrack.tracking.integrate.integrate_controlled`). Generic in the plant and the law: compiled
once per machine and cached.
"""

import math

import numpy as np
from .cache import kernel

from .systems import controlled_workspace
from .stepping import beyond, nans

__all__ = ["sampled_run"]

# Dormand–Prince 5(4) (scipy's RK45 tableau)
DP_C = np.array([0.0, 1 / 5, 3 / 10, 4 / 5, 8 / 9, 1.0])
DP_A = np.array([
    [0.0, 0.0, 0.0, 0.0, 0.0],
    [1 / 5, 0.0, 0.0, 0.0, 0.0],
    [3 / 40, 9 / 40, 0.0, 0.0, 0.0],
    [44 / 45, -56 / 15, 32 / 9, 0.0, 0.0],
    [19372 / 6561, -25360 / 2187, 64448 / 6561, -212 / 729, 0.0],
    [9017 / 3168, -355 / 33, 46732 / 5247, 49 / 176, -5103 / 18656],
])
DP_B = np.array([35 / 384, 0.0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84])
DP_E = np.array([-71 / 57600, 0.0, 71 / 16695, -71 / 1920, 17253 / 339200, -22 / 525, 1 / 40])


@kernel(inline=True)
def _put(X, k, x):
    """Row k of X = x."""
    for i in range(x.shape[0]):
        X[k, i] = x[i]


@kernel(inline=True)
def _advance(x, step, coef, K, s):
    """A new array ``x + Σ_{r<s} (step coef[r]) K[r]``, added term by term (as scipy's RK45 loop)."""
    out = x.copy()
    for r in range(s):
        c = step * coef[r]
        for i in range(x.shape[0]):
            out[i] += c * K[r, i]
    return out


@kernel
def sampled_run(f, x0, edges, t_out, tol, nom, md, law, limits, h):
    """The controlled system under a zero-order hold: u computed at each edge, held to the next.

    Returns (X_out at t_out, U held per interval, X at every edge, number of right-hand
    sides, index of the interval where it failed or -1, the step size to go on with, status: 0 ok,
    1 not finite or step too small, 3 evaluation limit, 4 state limit). t_out must lie in
    [edges[0], edges[-1]]. ``f``, ``tol``, ``nom``, ``md``, ``law`` as for
    :func:`~robustrack.compiled.bdf.bdf_init`: the system is an argument, so this integrator is compiled
    once, without it. ``limits = (max_nfev, max_abs_state)`` are checked between accepted steps; ``h`` is the
    step size carried from a previous piece of the horizon (0 at the start): the horizon walked in pieces
    steps exactly as in one call.
    """
    rtol, atol = tol
    max_nfev, max_state = limits
    d = x0.shape[0]
    n = nom.yold.shape[1] // 2
    nz = d - 2 * n
    nint = edges.shape[0] - 1
    X_out = nans(t_out.shape[0], d)
    U = nans(nint, n)
    X_edges = nans(nint + 1, d)
    x = x0.copy()
    _put(X_edges, 0, x)
    j = 0
    while j < t_out.shape[0] and t_out[j] <= edges[0]:
        _put(X_out, j, x)
        j += 1
    u = np.empty(n)
    K = np.empty((7, d))
    work = controlled_workspace(n, nz, md.act.shape[1], md.m)
    no_jac = np.empty((0, 0))
    nfev = 0
    for k in range(nint):
        a = edges[k]
        b = edges[k + 1]
        # u of the law at the edge: f leaves it in its workspace (work[1][2]); not counted in nfev
        f(a, x, nom, md, law, u, False, False, work, K[0], no_jac)
        for i in range(n):
            u[i] = work[1][2, i]
            U[k, i] = u[i]
        t = a
        if h <= 0.0 or h > b - a:
            h = b - a
        f(t, x, nom, md, law, u, True, False, work, K[0], no_jac)
        nfev += 1
        while t < b:
            status = beyond(nfev, x, max_nfev, max_state)
            if status != 0:
                return X_out, U, X_edges, nfev, k, h, status
            stop = b
            if j < t_out.shape[0] and t_out[j] < b:
                stop = t_out[j]
            step = min(h, stop - t)
            last = step >= stop - t
            while True:
                for s in range(1, 6):
                    xs = _advance(x, step, DP_A[s], K, s)
                    f(t + DP_C[s] * step, xs, nom, md, law, u, True, False, work, K[s], no_jac)
                xn = _advance(x, step, DP_B, K, 6)
                tn = stop if last else t + step
                f(tn, xn, nom, md, law, u, True, False, work, K[6], no_jac)
                nfev += 6
                err = 0.0
                for i in range(d):
                    e_i = 0.0
                    for r in range(7):
                        e_i += DP_E[r] * K[r, i]
                    sc = atol + rtol * max(abs(x[i]), abs(xn[i]))
                    err += (step * e_i / sc) ** 2
                err = math.sqrt(err / d)
                if not err == err:  # NaN: the motion is not defined here
                    return X_out, U, X_edges, nfev, k, h, 1
                if err <= 1.0:
                    factor = 10.0 if err == 0.0 else min(10.0, 0.9 * err ** -0.2)
                    if not last:
                        h = step * factor
                    else:
                        h = max(h, step * factor) if step < h else step * factor
                    t = tn
                    x = xn
                    _put(K, 0, K[6])
                    break
                step = step * max(0.2, 0.9 * err ** -0.2)
                last = False
                if step < 1e-14 * max(1.0, abs(t)):
                    return X_out, U, X_edges, nfev, k, h, 1
            while j < t_out.shape[0] and t_out[j] <= t:
                _put(X_out, j, x)
                j += 1
        _put(X_edges, k + 1, x)
    return X_out, U, X_edges, nfev, -1, h, 0

