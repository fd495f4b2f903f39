"""The integral (momentum) form of the identification regression: parameters from q, q̇ and F, no q̈.

Helper of :mod:`robustrack.identification` (W ch. 10). A robot's log holds positions,
velocities and the applied forces at its log rate, not accelerations; differencing q̇ on a
10-ms grid misses the fast parts of a motion (``docs/results/identification.md``). Integrated
over a window [t_a, t_b], the equation of motion M(q, t) q̈ − Q(q, q̇, t) = F (W 5.2.17) needs
no q̈ at all, because M q̈ = d(M q̇)/dt − Ṁ q̇:

    [M q̇]_{t_a}^{t_b} − ∫ q̇ · dM − ∫ Q dt = ∫ F dt,                                  (I)

where ∫ q̇ · dM = ∫ Ṁ q̇ dt is a Stieltjes integral of the sampled M(q(t), t) along the path —
the derivative of M is never formed from the data. Everything in (I) is linear in θ where M and
Q are (masses, inertias, a payload's inertial parameters), so each window gives n linear
equations A_w δθ = b_w; the columns come from the same regressor as the differential form
(:func:`robustrack.identification.regressor`, sympy or parameter perturbation): with q̈ := 0
it gives −∂Q/∂θ, with q̈ := e_j the j-th column of ∂M/∂θ.

Quadrature
----------
Windows are cut into panels of three samples (two intervals, of any lengths). On a panel the
samples of M, q̇, Q and F are interpolated by quadratics ℓ_a (a = 0, 1, 2), and (I) is
integrated *exactly* for those interpolants: ∫ F dt ≈ Σ_a w_a F_a, w_a = ∫ ℓ_a dt (Simpson's
rule on an even grid), and ∫ q̇ · dM ≈ Σ_ab W_ab M_a q̇_b, W_ab = ∫ ℓ'_a ℓ_b dt (Gauss–Legendre
with three nodes, exact for these cubic integrands). The error is O(h⁴) per window where the
log resolves the motion.

Where the log does not resolve it
---------------------------------
Where the force or the motion changes within a log interval, no rule integrates it from the
samples. Each window's equations are therefore integrated twice, with the rule above and with
the trapezoidal rule (∫ q̇ · dM by the midpoint sums Σ ΔM q̇̄); their difference estimates the
error of the cruder one, O(h²). An equation (a window's coordinate) whose differences, summed
in absolute value over the window's panels, exceed ``resolution`` times the force the parameters
make in that coordinate (Σ_k |A_k θ₀,k|, RMS over the log) is not resolved by the log and left
out; the estimate is computed, the equations re-judged at it, and computed again.
The result says how many window equations were used.

A force held by a sampled controller
------------------------------------
A compensator run at a fixed rate holds its force from one sample to the next (zero-order hold): the applied force
is a staircase, which no interpolation of its samples integrates. Logged at the control rate (every hold edge a
sample), the held part is constant on each log interval, and its integral is the left rectangle rule
Σ h_k F_k — exact for the staircase, up to what changes within the hold (Qᵘ = M(q) u with u held: O(h² Ṁ u)
per interval). ``held`` gives that part of the force; it is integrated so in both rules alike, so it never
enters the resolution test.

Windows and standard errors
---------------------------
Consecutive windows share no sample (one log interval is skipped between them), so noise that
is independent from sample to sample is independent from window to window, while within a
window the rows are correlated (every row of a window sums the same samples, and the
endpoint terms M q̇ carry the velocity noise undamped). The standard errors are therefore the
cluster-robust ones of :func:`~robustrack.identification.identify_motion` clustered on the
windows — valid for any correlation inside a window.
"""

from __future__ import annotations

import numpy as np

from .._validate import as_float_array
from ..errors import ParameterError

__all__ = ["identify_log", "integral_equations", "panel_weights", "IntegralEquations", "DEFAULT_WINDOW", "DEFAULT_RESOLUTION"]

#: Panels (of two log intervals each) per window: 5 panels = 10 intervals, 0.1 s at 100 Hz.
DEFAULT_WINDOW = 5
#: A window is resolved when its two quadratures agree to this fraction of the size of its terms.
DEFAULT_RESOLUTION = 1e-3


def panel_weights(h1, h2):
    """Weights of the quadratic-interpolation rule on panels of samples (t0, t0 + h1, t0 + h1 + h2).

    Parameters
    ----------
    h1, h2 : array_like (K,)
        The two interval lengths of each panel (> 0).

    Returns
    -------
    w : ndarray (K, 3)
        ∫ ℓ_a dt over the panel (Simpson's h/3 (1, 4, 1) for h1 = h2 = h).
    W : ndarray (K, 3, 3)
        ∫ ℓ'_a ℓ_b dt: ∫ v · dM ≈ Σ_ab W_ab M_a v_b, exact for quadratic M and v.
    """
    h1 = np.asarray(h1, dtype=float)[:, None]
    h2 = np.asarray(h2, dtype=float)[:, None]
    nodes = np.stack([np.zeros_like(h1[:, 0]), h1[:, 0], (h1 + h2)[:, 0]], axis=-1)  # (K, 3)
    x, gw = np.polynomial.legendre.leggauss(3)
    span = nodes[:, 2:3]
    tau = 0.5 * span * (x + 1)                     # (K, 3 Gauss nodes)
    gw = 0.5 * span * gw
    ell = np.empty(tau.shape + (3,))
    dell = np.empty(tau.shape + (3,))
    for a in range(3):
        others = [b for b in range(3) if b != a]
        n0, n1 = nodes[:, others[0]][:, None], nodes[:, others[1]][:, None]
        denom = (nodes[:, a][:, None] - n0) * (nodes[:, a][:, None] - n1)
        ell[..., a] = (tau - n0) * (tau - n1) / denom
        dell[..., a] = ((tau - n0) + (tau - n1)) / denom
    w = np.einsum("kg,kga->ka", gw, ell)
    W = np.einsum("kg,kga,kgb->kab", gw, dell, ell)
    return w, W


def _trapezoid_weights(h1, h2):
    """The trapezoidal counterpart of :func:`panel_weights` on the same panels (midpoint Stieltjes sums)."""
    h1 = np.asarray(h1, dtype=float)
    h2 = np.asarray(h2, dtype=float)
    w = np.stack([h1 / 2, (h1 + h2) / 2, h2 / 2], axis=-1)
    W = np.zeros(h1.shape + (3, 3))
    W[:, :2, :2] = [[-0.5, -0.5], [0.5, 0.5]]          # (M1 − M0)(v0 + v1)/2
    W[:, 1:, 1:] += [[-0.5, -0.5], [0.5, 0.5]]         # (M2 − M1)(v1 + v2)/2
    return w, W


class IntegralEquations:
    """The windows' equations A δθ = b of (I) (module docstring), with what judging them needs.

    Attributes
    ----------
    A : ndarray (G, n, P)
    b : ndarray (G, n)
        At θ₀: ∫F − ([M₀ q̇] − ∫ q̇·dM₀ − ∫ Q₀) by the quadratic rule.
    dA, db : ndarray (G, k, n, P), (G, k, n)
        Quadratic minus trapezoidal rule, per panel of each window.
    size : ndarray (1, n)
        The force the parameters make in each coordinate: RMS over the windows of Σ_k |A_k θ₀,k| (a friction
        coefficient with θ₀,k = 0 at the size of the largest, as the least squares scales it).
    nominal : ndarray (P,)
    method : str
        The regressor (``"sympy"`` or ``"perturbation"``).
    window_samples : int
        Samples per window (2 × panels + 1).
    """

    __slots__ = ("A", "b", "dA", "db", "size", "nominal", "method", "window_samples")

    def __init__(self, A, b, dA, db, size, nominal, method, window_samples):
        self.A, self.b, self.dA, self.db = A, b, dA, db
        self.size, self.nominal, self.method, self.window_samples = size, nominal, method, window_samples

    def gap(self, delta) -> np.ndarray:
        """Σ over a window's panels of |quadratic − trapezoidal| of the residual at θ₀ + δ, relative to the
        parameters' force (G, n)."""
        with np.errstate(divide="ignore", invalid="ignore"):  # an equation the parameters make no force in: inf
            return np.nan_to_num(np.sum(np.abs(self.db - self.dA @ delta), axis=1) / self.size, nan=np.inf)

    def resolved(self, delta, resolution: float) -> np.ndarray:
        """Equations (G, n) whose two quadratures agree at θ₀ + δ to ``resolution`` of the parameters' force."""
        return self.gap(delta) <= resolution


def integral_equations(plant, names, t, q, qd, force, *, window: int = DEFAULT_WINDOW,
                       method: str = "auto", held=None) -> IntegralEquations:
    """The equations (I) of every window of a log (module docstring).

    Parameters
    ----------
    plant : Plant
        The structure and θ₀ (the nominal plant).
    names : tuple of str
        The parameters θ.
    t : array_like (T,)
        Increasing sample times (any spacing).
    q, qd, force : array_like (T, n)
        Positions, velocities and the applied generalized force.
    window : int
        Panels of two intervals per window (keyword-only).
    method : {"auto", "sympy", "perturbation"}
        The regressor (keyword-only; :func:`robustrack.identification.regressor`).
    held : array_like (T, n), optional
        A part of the applied force held from each sample to the next (a sampled compensator's, logged at its
        rate), added to ``force`` and integrated by the left rectangle rule (keyword-only; module docstring).

    Returns
    -------
    IntegralEquations

    Raises
    ------
    ParameterError
        ``window`` not a positive integer, non-increasing times, or a log shorter than one window.
    """
    from .regression import regressor

    if isinstance(window, bool) or not isinstance(window, (int, np.integer)) or window < 1:
        raise ParameterError(f"`window` must be a positive integer (panels of two log intervals); got {window!r}.")
    t = as_float_array(t, "t")
    q, qd, force = (as_float_array(a, name, ndim_min=2) for a, name in ((q, "q"), (qd, "qd"), (force, "force")))
    if t.ndim != 1 or np.any(np.diff(t) <= 0):
        raise ParameterError(f"`t` must be increasing sample times (T,); got shape {t.shape}.")
    T, n = q.shape
    span = 2 * window + 1
    if not (t.size == T and qd.shape == q.shape == force.shape):
        raise ParameterError(f"`t`, `q`, `qd` and `force` must be (T,), (T, n) with one T and n; got {t.shape}, "
                             f"{q.shape}, {qd.shape}, {force.shape}.")
    held = np.zeros_like(force) if held is None else as_float_array(held, "held", ndim_min=2)
    if held.shape != force.shape:
        raise ParameterError(f"`held` must have the shape of `force` {force.shape}; got {held.shape}.")
    G = T // span
    if G < 1:
        raise ParameterError(f"a log of {T} samples is shorter than one window of {span} samples (`window` = "
                             f"{window} panels of two intervals); give a longer log or a smaller `window`.")
    # M₀, ∂M/∂θ from the regressor with q̈ := e_j; Q₀, ∂Q/∂θ with q̈ := 0 (linear in q̈)
    zero = np.zeros_like(q)
    base = regressor(plant, names, q, qd, zero, t, method=method)
    Q0, dQ = -base.r0, -base.Y
    M0 = np.empty((T, n, n))
    dM = np.empty((T, n, n, len(names)))
    for j in range(n):
        unit = zero.copy()
        unit[:, j] = 1.0
        reg = regressor(plant, names, q, qd, unit, t, method=method)  # `auto` chooses as it did for `base`
        M0[:, :, j] = reg.r0 + Q0
        dM[:, :, j] = reg.Y + dQ
    starts = np.arange(G) * span
    panel = (starts[:, None] + 2 * np.arange(window)[None, :]).ravel()           # (G·k,) first sample of each panel
    idx = panel[:, None] + np.arange(3)                                           # (G·k, 3)
    h1, h2 = t[idx[:, 1]] - t[idx[:, 0]], t[idx[:, 2]] - t[idx[:, 1]]
    ends = (starts, starts + 2 * window)

    mom0, mom = (np.einsum("tij...,tj->ti...", Mx, qd) for Mx in (M0, dM))

    left = h1[:, None] * held[idx[:, 0]] + h2[:, None] * held[idx[:, 1]]  # the held force's staircase, exactly

    def panels(w, W):
        """Per panel: −∫ q̇·dM − ∫ Q for ∂/∂θ (K, n, P) and at θ₀ minus ∫ F (K, n) — the (I) terms besides [M q̇]; the
        held force by the left rule whatever the weights."""
        def integral(Mx, Qx):
            return -(np.einsum("kab,kaij...,kbj->ki...", W, Mx[idx], qd[idx]) + np.einsum("ka,ka...->k...", w, Qx[idx]))
        return integral(dM, dQ), np.einsum("ka,kai->ki", w, force[idx]) + left - integral(M0, Q0)

    (A_p, b_p), (A_t, b_t) = panels(*panel_weights(h1, h2)), panels(*_trapezoid_weights(h1, h2))
    A = mom[ends[1]] - mom[ends[0]] + A_p.reshape((G, window) + A_p.shape[1:]).sum(axis=1)
    b = b_p.reshape(G, window, n).sum(axis=1) - (mom0[ends[1]] - mom0[ends[0]])
    # the force the parameters make in each coordinate, RMS over the log: Σ_k |A_k θ₀,k|. A friction coefficient with
    # θ₀,k = 0 (the model has no friction: its size is unknown, not zero) counts at the largest one's size, as the
    # least squares scales it (_column_scale): else a joint where only friction acts (the UR5's last wrist, the
    # payload on its axis) would have no size and none of its equations would ever be resolved. A plant
    # parameter's zero (a payload's centre on an axis) is the model's value and stays.
    from .friction import friction_names
    from .regression import _column_scale

    unknown = np.isin(names, friction_names(plant, names)[1]) & (base.nominal == 0)
    scale = np.abs(base.nominal)
    if np.any(unknown):
        norms = np.linalg.norm(A.reshape(-1, A.shape[-1]), axis=0)
        scale = np.where(unknown, _column_scale(np.where(unknown, 0.0, base.nominal), norms), scale)
    size = np.sqrt(np.mean((np.abs(A) @ scale) ** 2, axis=0, keepdims=True))
    dA = (A_p - A_t).reshape((G, window) + A_p.shape[1:])
    db = (b_p - b_t).reshape(G, window, n)
    return IntegralEquations(A, b, dA, db, size, base.nominal, base.method, span)


def identify_log(plant, parameters, t, q, qd, force, *, window: int = DEFAULT_WINDOW,
                 resolution: float = DEFAULT_RESOLUTION, method: str = "auto", condition_limit: float | None = None,
                 held=None):
    """Least-squares θ̂ from a log of q, q̇ and the applied force — no q̈ (the integral form, module docstring).

    Parameters
    ----------
    plant, parameters
        The nominal plant (structure and θ₀) and the names to identify, as
        :func:`~robustrack.identification.identify_motion` takes them.
    t : array_like (T,)
        Increasing sample times (a log rate, any spacing).
    q, qd : array_like (T, n)
        Measured positions and velocities (noise allowed: see the standard errors).
    force : array_like (T, n)
        The applied generalized force (for a tracking run Qᶜ + Qᵘ).
    window : int
        Panels of two log intervals per window (keyword-only; default 5: windows of 11 samples).
    resolution : float
        A window is used when its quadratic and trapezoidal integrals agree to this fraction of
        the size of its terms (keyword-only; module docstring).
    method : {"auto", "sympy", "perturbation"}
        The regressor (keyword-only).
    condition_limit : float, optional
        Warn above this condition number (keyword-only; default
        :data:`~robustrack.identification.DEFAULT_CONDITION_LIMIT`).
    held : array_like (T, n), optional
        A part of the applied force held from each sample to the next (a sampled compensator's force logged at
        its rate), beside ``force`` (keyword-only; :func:`integral_equations`).

    Returns
    -------
    Identification
        ``form == "integral"``, ``windows`` = (used, total); the standard errors are clustered on windows.

    Raises
    ------
    ParameterError
        Bad arguments, or no window of the log resolved at ``resolution`` (the message says how
        close the best came).
    """
    from .regression import DEFAULT_CONDITION_LIMIT, _least_squares, _parameter_names

    condition_limit = DEFAULT_CONDITION_LIMIT if condition_limit is None else condition_limit
    if not (np.isfinite(condition_limit) and condition_limit > 1):
        raise ParameterError(f"`condition_limit` must be a finite number > 1; got {condition_limit!r}.")
    if isinstance(resolution, bool) or not (isinstance(resolution, (int, float)) and 0 < resolution < 1):
        raise ParameterError(f"`resolution` must be a number in (0, 1) (a relative quadrature gap); got {resolution!r}.")
    names = _parameter_names(parameters)
    eqs = integral_equations(plant, names, t, q, qd, force, window=window, method=method, held=held)
    if not (np.all(np.isfinite(eqs.A)) and np.all(np.isfinite(eqs.b))):
        raise ParameterError("the log holds non-finite values (q, q̇ or the force): nothing to identify from.")
    P = len(names)
    norms = np.linalg.norm(eqs.A.reshape(-1, P), axis=0)
    if not np.any(norms > 0):  # before the resolution test, whose measure (the parameters' force) is then zero
        from .regression import refuse_unexcited

        refuse_unexcited(names, norms, "integral")
    delta = np.zeros(P)
    for final in (False, False, True):  # judge the equations at θ₀, estimate, judge again at the estimate, …
        use = eqs.resolved(delta, resolution)
        if not np.any(use):
            raise ParameterError(f"no equation of the log is resolved at `resolution` = {resolution:g}: the quadratic "
                                 f"and trapezoidal integrals differ by at least {np.min(eqs.gap(delta)):.3g} of the "
                                 "parameters' force; log faster, or loosen `resolution`.")
        A, b = eqs.A * use[..., None], eqs.b * use  # unused equations: zero rows (no weight, no residual)
        if final:
            break
        delta = np.linalg.lstsq(A.reshape(-1, P), b.ravel(), rcond=None)[0]
    return _least_squares(A, b, eqs.nominal, names, condition_limit, samples=len(np.asarray(t)),
                          method=eqs.method, data="none (integral form)" if held is None else
                          "none (integral form; a force held between samples)", form="integral",
                          windows=(int(np.sum(use)), use.size))
