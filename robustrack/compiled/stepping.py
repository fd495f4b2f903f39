"""Step-size helpers the compiled integrators share (:mod:`~robustrack.compiled.dop853`,
:mod:`~robustrack.compiled.bdf`): scipy's RMS error norm and initial step, and a growable step record.

scipy's ``select_initial_step`` (``scipy/integrate/_ivp/common.py``) is cut in two
(:func:`initial_guess`, :func:`initial_step`) because the right-hand side between them is the caller's.
Compiled once per machine and cached.
"""

import math

import numpy as np
from .cache import kernel

from ..tracking.defaults import STALL_STEPS, STALL_WINDOWS

__all__ = ["rms_scaled", "axpy", "nans", "initial_guess", "initial_step", "record", "beyond", "stall_window",
           "stalled"]


@kernel(inline=True)
def rms_scaled(c, x, scale):
    """scipy's error norm, √(mean of v²), of ``v = c x / scale`` (elementwise, in that order), without a temporary."""
    s = 0.0
    for i in range(x.shape[0]):
        v = c * x[i] / scale[i]
        s += v * v
    return math.sqrt(s / x.shape[0])


@kernel(inline=True)
def axpy(y, a, x):
    """A new array ``y + a x``."""
    out = np.empty(y.shape[0])
    for i in range(y.shape[0]):
        out[i] = y[i] + a * x[i]
    return out


@kernel(inline=True)
def nans(rows, cols):
    """A rows × cols array of NaN."""
    out = np.empty((rows, cols))
    for i in range(rows):
        for j in range(cols):
            out[i, j] = np.nan
    return out


@kernel(inline=True)
def initial_guess(y, f, length, rtol, atol):
    """First half of scipy's select_initial_step: the trial step h0 and the norms it needs."""
    scale = np.empty(y.shape[0])
    for i in range(y.shape[0]):
        scale[i] = atol + abs(y[i]) * rtol
    d0 = rms_scaled(1.0, y, scale)
    d1 = rms_scaled(1.0, f, scale)
    h0 = 1e-6 if (d0 < 1e-5 or d1 < 1e-5) else 0.01 * d0 / d1
    return min(h0, length), scale, d1


@kernel(inline=True)
def initial_step(f, f1, h0, scale, d1, length, order):
    """Second half of scipy's select_initial_step, from f at y and f1 at y + h0 f (error order ``order``)."""
    s = 0.0
    for i in range(f.shape[0]):
        v = (f1[i] - f[i]) / scale[i]
        s += v * v
    d2 = math.sqrt(s / f.shape[0]) / h0
    if d1 <= 1e-15 and d2 <= 1e-15:
        h1 = max(1e-6, h0 * 1e-3)
    else:
        h1 = (0.01 / max(d1, d2)) ** (1.0 / (order + 1))
    return min(100 * h0, h1, length)


@kernel(inline=True)
def record(T, X, ns, t, x):
    """Append (t, x) to the growable step record (T, X) holding ns rows; returns (T, X, ns + 1)."""
    d = X.shape[1]
    if ns == T.shape[0]:
        T2 = np.empty(2 * ns)
        X2 = np.empty((2 * ns, d))
        for k in range(ns):
            T2[k] = T[k]
            for i in range(d):
                X2[k, i] = X[k, i]
        T = T2
        X = X2
    T[ns] = t
    for i in range(d):
        X[ns, i] = x[i]
    return T, X, ns + 1


@kernel(inline=True)
def beyond(nfev, y, max_nfev, max_state):
    """0 while a run is within its limits; 3 when it has used ``max_nfev`` right-hand sides, 4 when a state
    component exceeds ``max_state`` in magnitude (or is not finite) — the status codes of the integrators."""
    if nfev >= max_nfev:
        return 3
    for i in range(y.shape[0]):
        if not abs(y[i]) <= max_state:
            return 4
    return 0


@kernel(inline=True)
def stall_window(t0, t1):
    """The record :func:`stalled` keeps: [t and nfev at the window's start, accepted steps in it, windows in a
    row projecting beyond the limit, t1]."""
    window = np.empty(5)
    window[0] = t0
    window[1] = 0.0
    window[2] = 0.0
    window[3] = 0.0
    window[4] = t1
    return window


@kernel(inline=True)
def stalled(t, nfev, max_nfev, window):
    """True at a step-size collapse (status 5): :data:`~robustrack.tracking.defaults.STALL_WINDOWS` windows in a
    row of :data:`~robustrack.tracking.defaults.STALL_STEPS` accepted steps (one call per step, at its end ``t``
    after ``nfev`` right-hand sides) each at a pace that would need more than ``max_nfev`` to reach t1."""
    window[2] += 1.0
    if window[2] < STALL_STEPS:
        return False
    dt = t - window[0]
    need = nfev + (nfev - window[1]) * (window[4] - t) / dt if dt > 0.0 else math.inf
    if need > max_nfev:
        window[3] += 1.0
    else:
        window[3] = 0.0
    window[0] = t
    window[1] = nfev
    window[2] = 0.0
    return window[3] >= STALL_WINDOWS
