"""Sampled (zero-order-hold) control, compiled: u computed at each sampling instant and held to the next.

Within a hold interval u is constant and the controlled system (W 5.2.17) is not stiff, so an explicit
method with error control — Dormand–Prince 5(4), the tableau of scipy's RK45 — runs the whole horizon
inside one compiled call. The numpy reference runs scipy's RK45 per interval
(:func:`robustrack.tracking.integrate.integrate_controlled`). Generic in the plant and the law: compiled
once per machine and cached.
"""

import math
from collections import namedtuple

import numpy as np
from .cache import kernel, register_records

from .systems import controlled_workspace
from .stepping import beyond, nans

__all__ = ["sampled_run", "SensorCode", "sense", "sensor_code", "no_sensor"]

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


#: The sensor of a sampled loop as the kernel reads it (:class:`robustrack.loop.Sensor`): ``mode`` −1 none (the
#: state as it is), 0 velocity measured, 1 backward difference, 2 filtered difference; the period ``h``, the filter
#: gain ``alpha``, the delay in samples ``delay``; per joint σ_q ``sq``, resolution ``res``, σ_q̇ ``sqd``; the
#: draws ``nu_q``, ``nu_qd`` (one row per sample instant of the whole run); the encoder's ``offset`` (0.5: rounds to
#: the nearest count, 0: truncates); the estimators' first velocity ``v0``;
#: and the state carried from sample to sample (and from piece to piece of a run): the last q̂ ``prev``, the last
#: v̂ ``vhat`` and the ring of the last ``delay + 1`` computed u's ``ring``.
SensorCode = namedtuple("SensorCode", ["mode", "h", "alpha", "delay", "sq", "res", "sqd", "nu_q", "nu_qd", "offset",
                                       "v0", "prev", "vhat", "ring"])
register_records(SensorCode)


def no_sensor(n: int) -> SensorCode:
    """The :data:`SensorCode` of a loop without a sensor (``mode`` −1: the controller sees the state).

    Parameters
    ----------
    n : int
        Joints.

    Returns
    -------
    SensorCode
    """
    z, z2 = np.zeros(n), np.zeros((1, n))
    return SensorCode(-1, 1.0, 1.0, 0, z, z, z, z2, z2, 0.5, z, z.copy(), z.copy(), z2.copy())


def sensor_code(sensor, n: int, h: float, count: int, v0) -> SensorCode:
    """The :data:`SensorCode` of a :class:`robustrack.loop.Sensor` for a run of sample instants.

    Parameters
    ----------
    sensor : Sensor or None
        None: :func:`no_sensor`.
    n : int
        Joints.
    h : float
        Sample period.
    count : int
        Sample instants of the run (its draws are made here, from the sensor's seed).
    v0 : array_like (n,)
        The estimators' first velocity (the reference's).

    Returns
    -------
    SensorCode
    """
    if sensor is None:
        return no_sensor(n)
    sq, res, sqd = sensor.per_joint(n)
    nu_q, nu_qd = sensor.draws(n, count)
    D = sensor.delay_samples(h)
    c = np.ascontiguousarray
    return SensorCode(int({"exact": 0, "difference": 1, "filtered": 2}[sensor.velocity]), float(h),
                      float(sensor.alpha(h)), int(D), c(sq), c(res), c(sqd), c(nu_q), c(nu_qd),
                      float(sensor.encoder_offset), c(np.asarray(v0, dtype=float)), np.zeros(n), np.zeros(n), np.zeros((D + 1, n)))


@kernel(inline=True)
def sense(k, x, s, xm):
    """The measured state xm = (q̂, v̂, z) at sample k of the true x = (q, q̇, z) through the sensor ``s``
    (:data:`SensorCode`); updates the estimators' state. The numpy reference is
    :meth:`robustrack.loop.Sensor.measure` (the same operations)."""
    n = s.v0.shape[0]
    for i in range(n):
        qm = x[i] + s.sq[i] * s.nu_q[k, i]
        r = s.res[i]
        if r > 0.0:
            qm = math.floor(qm / r + s.offset) * r
        if s.mode == 0:
            v = x[n + i] + s.sqd[i] * s.nu_qd[k, i]
        elif k == 0:
            v = s.v0[i]
        else:
            d = (qm - s.prev[i]) / s.h
            v = d if s.mode == 1 else s.vhat[i] + s.alpha * (d - s.vhat[i])
        s.prev[i] = qm
        s.vhat[i] = v
        xm[i] = qm
        xm[n + i] = v
    for i in range(2 * n, x.shape[0]):
        xm[i] = x[i]


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
def sampled_run(f, x0, edges, t_out, tol, nom, md, law, limits, h, sensor, k0):
    """The controlled system under a zero-order hold: u computed at each edge, held to the next.

    Returns (X_out at t_out, U held per interval, X at every edge, number of right-hand
    sides, index of the interval where it failed or -1, the step size to go on with, status: 0 ok,
    1 not finite or step too small, 3 evaluation limit, 4 state limit). t_out must lie in
    [edges[0], edges[-1]]. ``f``, ``tol``, ``nom``, ``md``, ``law`` as for
    :func:`~robustrack.compiled.bdf.bdf_init`: the system is an argument, so this integrator is compiled
    once, without it. ``limits = (max_nfev, max_abs_state)`` are checked between accepted steps; ``h`` is the
    step size carried from a previous piece of the horizon (0 at the start): the horizon walked in pieces
    steps exactly as in one call. ``sensor`` (:data:`SensorCode`; ``mode`` −1: none) is what the law sees at an
    edge, and ``k0`` the run's index of ``edges[0]`` (its draws and delay ring are the run's).
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
    xm = np.empty(d)
    K = np.empty((7, d))
    work = controlled_workspace(n, nz, md.act.shape[1], md.m)
    no_jac = np.empty((0, 0))
    nfev = 0
    for k in range(nint):
        a = edges[k]
        b = edges[k + 1]
        # u of the law at the edge: f leaves it in its workspace (work[1][2]); not counted in nfev
        if sensor.mode < 0:
            f(a, x, nom, md, law, u, False, False, work, K[0], no_jac)
            for i in range(n):
                u[i] = work[1][2, i]
                U[k, i] = u[i]
        else:  # the law at the measurement; applied after the sensor's delay (0 until the first arrives)
            sense(k0 + k, x, sensor, xm)
            f(a, xm, nom, md, law, u, False, False, work, K[0], no_jac)
            D = sensor.delay
            slot = (k0 + k) % (D + 1)
            for i in range(n):
                sensor.ring[slot, i] = work[1][2, i]
            late = (k0 + k - D) % (D + 1)
            for i in range(n):
                u[i] = sensor.ring[late, i] if k0 + k >= D else 0.0
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

