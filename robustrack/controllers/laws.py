"""The control laws and control functions, each written once for the numpy path and the compiled loop.

Every function here is plain Python in numba's numpy subset (docs/guide/compensators.md, "Your own
compensator"):

- from Python, a compensator's ``__call__`` runs it on numpy arrays — one state, or a batch of states
  (leading axes), real or complex (the complex step of the numpy reference);
- :mod:`robustrack.compiled.laws` compiles the same functions into the tracking loop, one state at a time.

The trick that lets one source serve both: a law indexes the coordinate ``i`` as ``e[..., i]``, which is the
batch's column in numpy and a scalar in numba, and writes ``u[..., i]``. A control function is applied
through :func:`apply_g`, which calls the :class:`~robustrack.controllers.ControlFunction` on the numpy
path (a user's g too) and :func:`g_value` of the built-in g on the compiled path.

A law is a function ``law(params, f, e, ed, z, u, Ue, Ued, Uz, jac)``:

- ``params``: the law's own record (a :class:`typing.NamedTuple` of named fields, :func:`pack`-ed into one
  float vector, read back by name with :func:`unpack`: the layout lives in the record's annotations only);
- ``f``: the control function (a :class:`ControlCode` in the compiled loop);
- ``e``, ``ed``, ``z``: the tracking error e = q_c − q, ė and the law's own states z;
- ``u``: written, the acceleration u(e, ė, z);
- ``Ue``, ``Ued``, ``Uz``: written when ``jac`` is true (the compiled loop's exact Jacobian, one state):
  ∂u/∂e, ∂u/∂ė (n × n), ∂u/∂z (n × n_z).

Adding a compensator is one such function, its record and a :class:`~robustrack.controllers.Compensator`
subclass naming both (``law``, ``law_params``), registered in :data:`~robustrack.controllers.COMPENSATORS`.
"""

from typing import NamedTuple

import numpy as np

__all__ = ["G_SIGN", "G_SATURATION", "G_TANH", "G_POWER", "ControlCode", "Vector", "Matrix", "LawCall",
           "pack", "unpack", "evaluate", "g_value", "g_slope", "apply_g", "apply_g_slope",
           "GSSParams", "GDParams", "GDBarParams", "LinearParams", "NoParams",
           "gss_law", "gd_law", "gdbar_law", "linear_law", "no_law"]

#: Control-function kinds g (W 7.3.1, 7.3.4): sign, saturation, tanh, α_c sign(x)|x|^p.
G_SIGN, G_SATURATION, G_TANH, G_POWER = 0, 1, 2, 3


class ControlCode(NamedTuple):
    """A built-in control function ``f(x) = g(x/ε)`` as the compiled loop takes it (:func:`g_value`)."""

    kind: int
    eps: float
    alpha_c: float
    p: float


class Vector:
    """Field marker of a law record: one value per coordinate (n entries; a scalar is broadcast)."""


class Matrix:
    """Field marker of a law record: an n × 2n matrix (row-major), e.g. K of u = −K [e; ė]."""


class LawCall(NamedTuple):
    """A compensator's law with its values, as :meth:`~robustrack.controllers.Compensator.kernel_law` gives it.

    ``law`` the function, ``params`` its record packed (:func:`pack`), ``f`` the :class:`ControlCode`,
    ``integral`` 1 when the law's states are z = ∫e (dz/dt = e), else 0.
    """

    law: object
    params: np.ndarray
    f: ControlCode
    integral: int


def _size(marker, n: int) -> int:
    return 1 if marker is float else (n if marker is Vector else 2 * n * n)


def pack(record, n: int) -> np.ndarray:
    """The law record ``record`` as one float vector, its fields in order (a :class:`Vector` broadcast to n).

    Parameters
    ----------
    record : NamedTuple
        Fields annotated ``float``, :class:`Vector` or :class:`Matrix`.
    n : int
        Number of coordinates.

    Returns
    -------
    ndarray
        C-contiguous float64, read back by :func:`unpack`.
    """
    parts = []
    for name, marker in type(record).__annotations__.items():
        value = np.asarray(getattr(record, name), dtype=float)
        shape = {1: (), n: (n,)}.get(_size(marker, n)) if marker is not Matrix else (n, 2 * n)
        parts.append(np.broadcast_to(value, shape).reshape(-1))
    return np.ascontiguousarray(np.concatenate(parts) if parts else np.zeros(0))


def unpack(record, flat, n):
    """The record of type ``record`` read from the vector ``flat`` (:func:`pack`) for n coordinates.

    numba compiles its own version (:mod:`robustrack.compiled.laws`) from the same annotations. A record
    already read (the numpy path keeps one per compensator and n) is returned as it is.

    Parameters
    ----------
    record : type
        The record's class (a :class:`typing.NamedTuple`, fields annotated ``float``, :class:`Vector`,
        :class:`Matrix`).
    flat : ndarray or NamedTuple
        The packed vector, or the record itself.
    n : int
        Number of coordinates.

    Returns
    -------
    NamedTuple
    """
    if isinstance(flat, record):
        return flat
    values, at = [], 0
    for marker in record.__annotations__.values():
        size = _size(marker, n)
        chunk = flat[at:at + size]
        values.append(chunk[0] if marker is float else (chunk.reshape(n, 2 * n) if marker is Matrix else chunk))
        at += size
    return record(*values)


def evaluate(law, params, f, e, ed, z):
    """u = law(e, ė, z) on numpy arrays: one state (n,) or a batch (..., n), complex allowed.

    Parameters
    ----------
    law : callable
        A law function (module docstring).
    params : ndarray or NamedTuple
        Its record packed (:func:`pack`), or read back (:func:`unpack`).
    f : ControlFunction or None
        The control function (None for laws without one).
    e, ed : array_like (..., n)
    z : array_like (..., n_z) or None

    Returns
    -------
    ndarray (..., n)
    """
    e, ed = np.asarray(e), np.asarray(ed)
    z = np.zeros(e.shape[:-1] + (0,)) if z is None else np.asarray(z)
    n = e.shape[-1]
    if not (e.ndim == ed.ndim == z.ndim == 1 and ed.shape[0] == n):  # a batch: broadcast its leading axes
        batch = np.broadcast_shapes(e.shape[:-1], ed.shape[:-1], z.shape[:-1])
        e, ed = np.broadcast_to(e, batch + (n,)), np.broadcast_to(ed, batch + (n,))
        z = np.broadcast_to(z, batch + z.shape[-1:])
    u = np.empty(e.shape, dtype=np.result_type(e, ed, z, float))
    law(params, f, e, ed, z, u, None, None, None, False)
    return u


# --------------------------------------------------------------------------- #
# control functions g (docs/theory/compensators.md, W 7.2.13, 7.3.1, 7.3.4)
# --------------------------------------------------------------------------- #
def g_value(kind, x, a, pw):
    """g(x) of the built-in control functions: sign, clip(x, −1, 1), tanh, α_c sign(x)|x|^p (W 7.3.1, 7.3.4).

    Complex-safe (it branches on the real part; x·sign(Re x) is |x|, analytic for the complex step);
    on real input equal to the plain formulas bit for bit. Scalars or arrays.

    Parameters
    ----------
    kind : int
        :data:`G_SIGN`, :data:`G_SATURATION`, :data:`G_TANH` or :data:`G_POWER`.
    x : float, complex or ndarray
        The argument (already divided by ε).
    a, pw : float
        α_c and p of the power functions (unused by the others).
    """
    s = np.sign(np.real(x))
    if kind == G_SIGN:
        return s
    if kind == G_SATURATION:
        return np.minimum(np.maximum(x, -1.0), 1.0)
    if kind == G_TANH:
        return np.tanh(x)
    if pw == 2.0:
        return a * x * (x * s)
    if pw == 3.0:
        return a * x * x * x
    return a * s * (x * s) ** pw


def g_slope(kind, x, a, pw):
    """g′(x) of :func:`g_value` (0 at the kinks of sign and saturation, their one-sided limits from inside).

    Parameters as in :func:`g_value`.
    """
    ax = x * np.sign(np.real(x))
    if kind == G_SIGN:
        return 0.0 * ax
    if kind == G_SATURATION:
        return 1.0 * (np.real(ax) < 1.0)
    if kind == G_TANH:
        th = np.tanh(x)
        return 1.0 - th * th
    if pw == 2.0:
        return 2.0 * a * ax
    if pw == 3.0:
        return 3.0 * a * x * x
    return a * pw * ax ** (pw - 1.0)


def apply_g(f, x):
    """g(x) of the control function f (f(x) = g(x/ε): the caller divides by ε).

    numpy path: ``f`` is a :class:`~robustrack.controllers.ControlFunction` (a user's g too); compiled path:
    a :class:`ControlCode` (:func:`g_value`).

    Parameters
    ----------
    f : ControlFunction or ControlCode
    x : float or ndarray
        The argument of g (x/ε of f's).
    """
    return f.g(x)


def apply_g_slope(f, x):
    """g′(x) of the control function f: the compiled loop's Jacobian (:func:`g_slope` of its :class:`ControlCode`).

    Parameters as in :func:`apply_g`.
    """
    return g_slope(f.kind, x, f.alpha_c, f.p)


def _clear(Ue, Ued, Uz):
    """∂u/∂(e, ė, z) set to zero before a law writes its nonzero entries (one state)."""
    Ue[:, :] = 0.0
    Ued[:, :] = 0.0
    Uz[:, :] = 0.0


# --------------------------------------------------------------------------- #
# the laws
# --------------------------------------------------------------------------- #
class NoParams(NamedTuple):
    """No compensation: no parameters."""


def no_law(params, f, e, ed, z, u, Ue, Ued, Uz, jac):
    """u = 0 (the uncompensated reference inside the controlled loop); its signature is every law's.

    Parameters
    ----------
    params : ndarray or NamedTuple
        The law's record, packed (:func:`pack`; read with :func:`unpack`).
    f : ControlFunction, ControlCode or None
        The control function f(x) = g(x/ε), applied with :func:`apply_g`.
    e, ed : ndarray (..., n)
        The tracking error e = q_c − q and ė (one state when compiled).
    z : ndarray (..., n_z)
        The law's own states.
    u : ndarray (..., n)
        Written: u(e, ė, z).
    Ue, Ued, Uz : ndarray (n, n), (n, n), (n, n_z) or None
        Written when ``jac``: ∂u/∂e, ∂u/∂ė, ∂u/∂z at one state.
    jac : bool
        Whether to write the partial derivatives (the compiled loop's Jacobian).
    """
    for i in range(e.shape[-1]):
        u[..., i] = 0.0
    if jac:
        _clear(Ue, Ued, Uz)


class GSSParams(NamedTuple):
    """GSS (W 7.2.15): ``gain`` = σβ, ``K`` the sliding-surface gains k_i."""

    gain: float
    K: Vector


def gss_law(params, f, e, ed, z, u, Ue, Ued, Uz, jac):
    """GSS: ``s = K e + ė``, ``u = −K ė − σβ f(s)``, f(s) = g(s/ε) (W 7.2.5, 7.2.15).

    See :func:`no_law` for the parameters.
    """
    n = e.shape[-1]
    p = unpack(GSSParams, params, n)
    if jac:
        _clear(Ue, Ued, Uz)
    for i in range(n):
        K = p.K[i]
        x = (K * e[..., i] + ed[..., i]) / f.eps
        u[..., i] = -K * ed[..., i] - p.gain * apply_g(f, x)
        if jac:
            slope = p.gain * apply_g_slope(f, x) / f.eps
            Ue[i, i] = -slope * K
            Ued[i, i] = -K - slope


class GDParams(NamedTuple):
    """GD (W 8.2.26): ``gain`` = σρ, the integral and damping gains ``Ki``, ``Kd``."""

    gain: float
    Ki: float
    Kd: float


def gd_law(params, f, e, ed, z, u, Ue, Ued, Uz, jac):
    """GD: ``u = −(e + K_i z + K_d ė) − σρ f(ė)``, z = ∫e (W 8.2.26, K_p = 1).

    See :func:`no_law` for the parameters.
    """
    n = e.shape[-1]
    p = unpack(GDParams, params, n)
    if jac:
        _clear(Ue, Ued, Uz)
    for i in range(n):
        x = ed[..., i] / f.eps
        u[..., i] = -(e[..., i] + p.Ki * z[..., i] + p.Kd * ed[..., i]) - p.gain * apply_g(f, x)
        if jac:
            Ue[i, i] = -1.0
            Uz[i, i] = -p.Ki
            Ued[i, i] = -p.Kd - p.gain * apply_g_slope(f, x) / f.eps


class GDBarParams(NamedTuple):
    """GD-bar (W 8.3.20): ``sigma`` = σ, the damping gain ``k`` and its exponent ``power`` = 4n − 4."""

    sigma: float
    k: float
    power: float


def gdbar_law(params, f, e, ed, z, u, Ue, Ued, Uz, jac):
    """GD-bar: ``u = −(e + k ‖ė‖∞^{4n−4} ė + σ f(ė))`` (W 8.3.20), infinity norm.

    See :func:`no_law` for the parameters.
    """
    n = e.shape[-1]
    p = unpack(GDBarParams, params, n)
    scale = 1.0
    if p.power != 0.0:
        norm = ed[..., 0] * np.sign(np.real(ed[..., 0]))  # |ė_j|, complex-safe; the largest real part wins
        for j in range(1, n):
            norm = np.maximum(norm, ed[..., j] * np.sign(np.real(ed[..., j])))
        scale = norm ** p.power
    for i in range(n):
        x = ed[..., i] / f.eps
        u[..., i] = -(e[..., i] + p.k * ed[..., i] * scale + p.sigma * apply_g(f, x))
    if jac:
        _clear(Ue, Ued, Uz)
        top, jmax = 0.0, 0
        for j in range(n):
            if abs(ed[j]) > top:
                top, jmax = abs(ed[j]), j
        for i in range(n):
            Ue[i, i] = -1.0
            Ued[i, i] = -p.k * scale - p.sigma * apply_g_slope(f, ed[i] / f.eps) / f.eps
            if p.power != 0.0 and top > 0.0:
                sgn = 1.0 if ed[jmax] > 0 else -1.0
                Ued[i, jmax] -= p.k * ed[i] * p.power * top ** (p.power - 1.0) * sgn


class LinearParams(NamedTuple):
    """A linear law u = −K [e; ė] (computed torque, LQR): ``K``, n × 2n."""

    K: Matrix


def linear_law(params, f, e, ed, z, u, Ue, Ued, Uz, jac):
    """u = −K [e; ė], row by row (computed torque, LQR); f is not used.

    See :func:`no_law` for the parameters.
    """
    n = e.shape[-1]
    p = unpack(LinearParams, params, n)
    for i in range(n):
        s = 0.0  # a number, or the batch's array after the first term
        for j in range(n):
            s = s + p.K[i, j] * e[..., j]
        for j in range(n):
            s = s + p.K[i, n + j] * ed[..., j]
        u[..., i] = -s
    if jac:
        _clear(Ue, Ued, Uz)
        for i in range(n):
            for j in range(n):
                Ue[i, j] = -p.K[i, j]
                Ued[i, j] = -p.K[i, n + j]
