"""Compiled twins of the control laws and control functions (W 7.2.15, 8.2.26, 8.3.20; W 7.3.1, 7.3.4).

:func:`law_u` computes u(e, ė, z) and its partial derivatives for the built-in laws, one state at a
time; a law arrives as the record :class:`Law` that the compensator packs itself
(:meth:`~robustrack.controllers.Compensator.kernel_law`). The numpy ``__call__`` of each
compensator and control function is the oracle (``tests/test_kernels.py``) and the fallback.
Compiled once per machine and cached.
"""

import math
from .cache import kernel

from ..controllers.codes import Law, G_SATURATION, G_SIGN, G_TANH, LAW_GD, LAW_GSS, LAW_LINEAR, LAW_NONE

__all__ = ["Law", "g_value", "g_slope", "law_u"]



@kernel(inline=True)
def g_value(kind, x, a, pw):
    """g(x) of the built-in control functions (robustrack.controllers.functions)."""
    if kind == G_SIGN:
        return 1.0 if x > 0 else (-1.0 if x < 0 else 0.0)
    if kind == G_SATURATION:
        return min(max(x, -1.0), 1.0)
    if kind == G_TANH:
        return math.tanh(x)
    if pw == 2.0:
        return a * x * abs(x)
    if pw == 3.0:
        return a * x * x * x
    sgn = 1.0 if x > 0 else (-1.0 if x < 0 else 0.0)
    return a * sgn * abs(x) ** pw


@kernel(inline=True)
def g_slope(kind, x, a, pw):
    """g′(x) (0 at the kinks of sign and saturation, as their one-sided limits from inside)."""
    if kind == G_SIGN:
        return 0.0
    if kind == G_SATURATION:
        return 1.0 if abs(x) < 1.0 else 0.0
    if kind == G_TANH:
        th = math.tanh(x)
        return 1.0 - th * th
    if pw == 2.0:
        return 2.0 * a * abs(x)
    if pw == 3.0:
        return 3.0 * a * x * x
    return a * pw * abs(x) ** (pw - 1.0)


@kernel(inline=True)
def law_u(law, e, ed, z, u, Ue, Ued, Uz):
    """u(e, ė, z) and its partial derivatives (n × n, n × n, n × nz) of the law ``law`` (:class:`~robustrack.controllers.codes.Law`)."""
    kind, gk, cp = law.kind, law.g, law.params
    n = e.shape[0]
    for i in range(n):
        u[i] = 0.0
        for j in range(n):
            Ue[i, j] = 0.0
            Ued[i, j] = 0.0
        for j in range(Uz.shape[1]):
            Uz[i, j] = 0.0
    if kind == LAW_NONE:
        return
    if kind == LAW_LINEAR:
        for i in range(n):
            s = 0.0
            for j in range(n):
                s += cp[i * 2 * n + j] * e[j]
            for j in range(n):
                s += cp[i * 2 * n + n + j] * ed[j]
            u[i] = -s
            for j in range(n):
                Ue[i, j] = -cp[i * 2 * n + j]
                Ued[i, j] = -cp[i * 2 * n + n + j]
        return
    gain, eps, a, pw = cp[0], cp[1], cp[2], cp[3]
    if kind == LAW_GSS:
        for i in range(n):
            K = cp[4 + i]
            x = (K * e[i] + ed[i]) / eps
            u[i] = -K * ed[i] - gain * g_value(gk, x, a, pw)
            slope = gain * g_slope(gk, x, a, pw) / eps
            Ue[i, i] = -slope * K
            Ued[i, i] = -K - slope
        return
    if kind == LAW_GD:
        Ki, Kd = cp[4], cp[5]
        for i in range(n):
            x = ed[i] / eps
            u[i] = -(e[i] + Ki * z[i] + Kd * ed[i]) - gain * g_value(gk, x, a, pw)
            Ue[i, i] = -1.0
            Uz[i, i] = -Ki
            Ued[i, i] = -Kd - gain * g_slope(gk, x, a, pw) / eps
        return
    # GD-bar: u = −(e + k ‖ė‖∞^P ė + σ g(ė/ε))
    k, P = cp[4], cp[5]
    norm = 0.0
    jmax = 0
    for j in range(n):
        if abs(ed[j]) > norm:
            norm = abs(ed[j])
            jmax = j
    scale = norm ** P if P != 0.0 else 1.0
    for i in range(n):
        x = ed[i] / eps
        u[i] = -(e[i] + k * ed[i] * scale + gain * g_value(gk, x, a, pw))
        Ue[i, i] = -1.0
        Ued[i, i] = -k * scale - gain * g_slope(gk, x, a, pw) / eps
        if P != 0.0 and norm > 0.0:
            sgn = 1.0 if ed[jmax] > 0 else -1.0
            Ued[i, jmax] -= k * ed[i] * P * norm ** (P - 1.0) * sgn
