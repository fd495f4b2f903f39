"""Control functions f_i(x) = g(x_i / ε) for the robust compensators (docs/theory/compensators.md, W 7.2.13).

A compensator applies a scalar function g componentwise to a scaled error:
``f(x)_i = g(x_i / ε)``. W asks g to be odd, monotonically increasing and
continuous on (−∞, ∞) (W 7.2.13, 8.2.24); GD-bar also needs g strictly
increasing and unbounded (W 8.3.7). ``sign`` is the classical discontinuous
limit (sliding mode, Leitmann–Corless, Lyapunov redesign).

Built-in g (the registry :data:`CONTROL_FUNCTIONS`):

=====================  ===================================  ==========  ===========  =========
name                   g(x)                                 continuous  strictly ↑   unbounded
=====================  ===================================  ==========  ===========  =========
``sign``               sign(x)                              no          no           no
``saturation``         clip(x, −1, 1)                       yes         no           no
``tanh``               tanh(x)                              yes         yes          no
``signed-quadratic``   α_c x|x|            (W 7.3.1)        yes         yes          yes
``cubic``              α_c x³              (W 7.3.4)        yes         yes          yes
``signed-power``       α_c sign(x)|x|^p, p > 0              yes         yes          yes
=====================  ===================================  ==========  ===========  =========

User callables are accepted after a numerical check on a grid of arguments
|x| ∈ {0} ∪ [1e-6, 1e6] (log-spaced, 2001 points per side):

- odd: ``|g(x) + g(−x)| ≤ 1e-9 (|g(x)| + |g(−x)|)`` and ``g(0) = 0``;
- monotonically non-decreasing between neighbouring grid points;
- continuous: every grid interval is bisected 36 times, following the half
  with the larger increase; a jump is an increase that neither shrinks under
  bisection (it stays above 90 % over the last 8 halvings) nor is negligible
  (above 1e-10 of |g| there and 1e-6 of the increase over the grid interval:
  smaller jumps, e.g. hidden in a steep rise, go unseen). A function with a jump
  is refused unless it is declared discontinuous (``continuous=False``).

Measured (recorded as flags, required only by the compensators that need them):

- strictly increasing: every grid step on |x| ≤ 10 increases g. (Beyond that
  float resolution hides the increase of saturating functions: tanh(x) rounds
  to 1.0 for x > 19.1.)
- unbounded: g keeps growing at large arguments, g(1e12) ≥ 1.1 g(1e6)
  (or overflows to inf). A heuristic: a numerical test cannot prove it.

``inverse`` is the generalized inverse the error bounds need,
``g⁻¹(y) = sign(y) · sup{x ≥ 0 : g(x) ≤ |y|}``: the largest argument at which
g has not yet exceeded |y| (the ordinary inverse for a continuous strictly
increasing g; 0 for ``sign`` below 1; ``inf`` where |y| ≥ sup g).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np

from .._validate import scalar
from ..errors import ControlFunctionError, ParameterError
from .laws import G_POWER, G_SATURATION, G_SIGN, G_TANH, ControlCode, g_value

__all__ = ["ControlFunction", "CONTROL_FUNCTIONS", "G_FORMULAS", "control_function"]

#: name -> g(x) of the built-in control functions (the module docstring's table), for reports.
G_FORMULAS = {
    "sign": "sign(x)",
    "saturation": "clip(x, −1, 1)",
    "tanh": "tanh(x)",
    "signed-quadratic": "α_c x|x|",
    "cubic": "α_c x³",
    "signed-power": "α_c sign(x)|x|^p",
}

# The grid of arguments of g on which user functions are checked.
_GRID = np.concatenate(([0.0], np.logspace(-6.0, 6.0, 2001)))
_BISECTIONS = 36
_TREND = 8  # halvings over which a jump must not shrink
_STRICT_RANGE = 10.0
_UNBOUNDED_AT = (1e6, 1e12)


@dataclasses.dataclass(frozen=True, eq=False)
class ControlFunction:
    """A control function ``f(x) = g(x / ε)`` applied elementwise.

    Build one with :func:`control_function`; constructing it directly runs the
    same checks (a user ``g`` is verified numerically, see the module docstring).

    Parameters
    ----------
    name : str
        What it is (``"signed-quadratic"``, or the user's name).
    g : callable
        The scalar odd function g, applied elementwise to arrays.
    eps : float
        The boundary-layer width ε > 0 (W 7.2.13).
    continuous : bool or None
        ``None``: g must be continuous (checked; a jump is refused).
        ``False``: g is declared discontinuous (sign-like); compensators then
        report ``discontinuous = True`` and the simulator may sample the control.
        ``True``: same as ``None``.
    params : dict, optional
        The parameters of a built-in g (``alpha_c``, ``p``), for records.
    g_inverse : callable, optional
        Closed form of the generalized inverse on y ≥ 0 (built-ins); a user g
        is inverted by bisection.

    Attributes
    ----------
    strictly_increasing, unbounded : bool
        Measured on construction (see the module docstring).
    """

    name: str
    g: Callable
    eps: float
    continuous: bool | None = None
    params: dict = dataclasses.field(default_factory=dict)
    g_inverse: Callable | None = dataclasses.field(default=None, repr=False)
    strictly_increasing: bool = dataclasses.field(init=False)
    unbounded: bool = dataclasses.field(init=False)

    def __post_init__(self):
        eps = scalar(self.eps, "eps")
        if eps <= 0:
            raise ParameterError(f"`eps` (the boundary-layer width ε) must be > 0; got {self.eps!r}.")
        if not callable(self.g):
            raise ControlFunctionError(f"`g` must be callable; got {self.g!r}.")
        if self.continuous not in (None, True, False):
            raise ControlFunctionError(f"`continuous` must be None, True or False; got {self.continuous!r}.")
        g = _vectorized(self.g, self.name)
        report = _check(g, self.name, require_continuous=self.continuous is not False)
        set_ = object.__setattr__
        set_(self, "eps", eps)
        set_(self, "g", g)
        set_(self, "continuous", self.continuous is not False)
        set_(self, "params", dict(self.params))
        set_(self, "strictly_increasing", report["strictly_increasing"])
        set_(self, "unbounded", report["unbounded"])

    def __call__(self, x):
        """``f(x) = g(x / ε)`` elementwise, same shape as ``x``."""
        return self.g(np.asarray(x, dtype=float) / self.eps)

    def inverse(self, y):
        """Generalized inverse ``g⁻¹(y) = sign(y) sup{x ≥ 0 : g(x) ≤ |y|}`` (of g, not of f).

        ``inf`` where |y| reaches sup g (a bounded g never exceeds it). For f,
        ``f⁻¹(y) = eps * inverse(y)``.
        """
        y = np.asarray(y, dtype=float)
        a = np.abs(y)
        x = self.g_inverse(a) if self.g_inverse is not None else _bisect_inverse(self.g, a)
        return np.sign(y) * np.asarray(x, dtype=float)

    def kernel_code(self) -> ControlCode | None:
        """This f as the compiled loop takes it (:class:`~robustrack.controllers.laws.ControlCode`), or None.

        Returns
        -------
        ControlCode or None
            ``(kind, ε, α_c, p)`` of a built-in g; None for a user's g: the loop then runs on numpy.
        """
        if not isinstance(self.g, _Builtin):
            return None
        return ControlCode(self.g.kind, float(self.eps), float(self.g.alpha_c), float(self.g.p))

    def __repr__(self) -> str:
        extra = "".join(f", {k}={v!r}" for k, v in self.params.items())
        flag = "" if self.continuous else ", continuous=False"
        return f"ControlFunction({self.name!r}, eps={self.eps!r}{extra}{flag})"


# --------------------------------------------------------------------------- #
# numerical checks
# --------------------------------------------------------------------------- #
def _vectorized(g: Callable, name: str) -> Callable:
    """Return g if it maps arrays elementwise, else an np.vectorize wrapper."""
    probe = np.array([-2.0, -0.5, 0.0, 0.5, 2.0])
    try:
        with np.errstate(all="ignore"):
            out = np.asarray(g(probe), dtype=float)
        if out.shape == probe.shape:
            scalars = np.array([float(g(float(v))) for v in probe])
            if np.allclose(out, scalars, rtol=1e-12, atol=0.0, equal_nan=True):
                return g
    except Exception:  # a scalar-only user function: fall back to np.vectorize
        pass
    try:
        float(g(0.5))
    except Exception as exc:
        raise ControlFunctionError(f"g {name!r} cannot be evaluated at x = 0.5: {exc}") from None
    return np.vectorize(lambda v: float(g(v)), otypes=[float])


def _eval(g: Callable, x: np.ndarray, name: str) -> np.ndarray:
    with np.errstate(all="ignore"):
        out = np.asarray(g(x), dtype=float)
    bad = np.isnan(out)
    if np.any(bad):
        raise ControlFunctionError(f"g {name!r} is not defined (NaN) at x = {x[bad].flat[0]:.6g}.")
    return out


def _check(g: Callable, name: str, *, require_continuous: bool) -> dict:
    """Check oddness and monotonicity (always), continuity (if required); measure the rest."""
    xp = _GRID
    gp, gm = _eval(g, xp, name), _eval(g, -xp, name)
    scale = np.abs(gp) + np.abs(gm)
    odd_gap = np.abs(gp + gm)
    with np.errstate(invalid="ignore"):
        not_odd = ~(odd_gap <= 1e-9 * scale)
    not_odd[np.isinf(gp) & np.isinf(gm) & (np.sign(gp) == -np.sign(gm))] = False
    if np.any(not_odd):
        i = int(np.argmax(not_odd))
        raise ControlFunctionError(
            f"g {name!r} is not odd: g(x) + g(-x) must be 0, but at x = {xp[i]:.6g} "
            f"g(x) = {gp[i]:.6g} and g(-x) = {gm[i]:.6g} (W 7.2.13 needs an odd g)."
        )
    x = np.concatenate((-xp[:0:-1], xp))
    gx = np.concatenate((gm[:0:-1], gp))
    step = np.diff(gx)
    with np.errstate(invalid="ignore"):
        tol = 1e-12 * (np.abs(gx[:-1]) + np.abs(gx[1:]))
        down = step < -tol
    if np.any(down):
        i = int(np.argmax(down))
        raise ControlFunctionError(
            f"g {name!r} is not monotonically non-decreasing: it decreases between "
            f"x = {x[i]:.6g} (g = {gx[i]:.6g}) and x = {x[i + 1]:.6g} (g = {gx[i + 1]:.6g})."
        )
    if require_continuous:
        jump = _find_jump(g, x, gx, name)
        if jump is not None:
            at, size = jump
            at = 0.0 if abs(at) < 1e-12 else at
            raise ControlFunctionError(
                f"g {name!r} is not continuous: it jumps by {size:.6g} at x ≈ {at:.6g}. "
                "The compensators' error bounds assume a continuous g (W 7.2.13); if the jump is "
                "intended (a sign-like g, which chatters), declare it with continuous=False."
            )
    inside = np.abs(x) <= _STRICT_RANGE
    strictly = bool(np.all(step[inside[:-1] & inside[1:]] > 0))
    g_mid, g_far = _eval(g, np.array(_UNBOUNDED_AT), name)
    unbounded = bool(np.isinf(g_far) or (g_mid > 0 and g_far >= 1.1 * g_mid))
    return {"strictly_increasing": strictly, "unbounded": unbounded}


def _find_jump(g: Callable, x: np.ndarray, gx: np.ndarray, name: str):
    """Bisect every grid interval towards its largest increase; return (x, size) of a jump."""
    lo, hi = x[:-1].copy(), x[1:].copy()
    glo, ghi = gx[:-1].copy(), gx[1:].copy()
    initial = ghi - glo
    history = []
    for _ in range(_BISECTIONS):
        mid = 0.5 * (lo + hi)
        gmid = _eval(g, mid, name)
        left = (gmid - glo) >= (ghi - gmid)
        hi, ghi = np.where(left, mid, hi), np.where(left, gmid, ghi)
        lo, glo = np.where(left, lo, mid), np.where(left, glo, gmid)
        history.append(ghi - glo)
    final, earlier = history[-1], history[-1 - _TREND]
    with np.errstate(invalid="ignore"):
        level = np.maximum(np.abs(glo), np.abs(ghi))
        jump = (final > 1e-10 * level) & (final > 1e-6 * initial) & (final > 0.9 * earlier) & (final > 0)
    if not np.any(jump):
        return None
    i = int(np.argmax(np.where(jump, final, -np.inf)))
    return float(0.5 * (lo[i] + hi[i])), float(final[i])


def _bisect_inverse(g: Callable, y: np.ndarray) -> np.ndarray:
    """sup{x >= 0 : g(x) <= y} by bracketing and bisection, elementwise over y >= 0."""
    y = np.asarray(y, dtype=float)
    flat = y.reshape(-1)
    lo = np.zeros_like(flat)
    hi = np.ones_like(flat)
    with np.errstate(all="ignore"):
        for _ in range(1100):  # double hi until g(hi) > y (or it overflows: inf)
            grow = np.asarray(g(hi), dtype=float) <= flat
            if not np.any(grow & np.isfinite(hi)):
                break
            lo = np.where(grow, hi, lo)
            hi = np.where(grow, hi * 2.0, hi)
        out = np.where(np.isfinite(hi), 0.0, np.inf)
        fin = np.isfinite(hi)
        a, b = lo[fin], hi[fin]
        for _ in range(200):
            mid = 0.5 * (a + b)
            below = np.asarray(g(mid), dtype=float) <= flat[fin]
            a, b = np.where(below, mid, a), np.where(below, b, mid)
            if np.all(b - a <= 4e-16 * b):
                break
        out[fin] = a
    return out.reshape(y.shape)


# --------------------------------------------------------------------------- #
# built-ins and the factory
# --------------------------------------------------------------------------- #
# The built-in g are :func:`robustrack.controllers.laws.g_value` (complex-safe, for the complex-step Jacobian
# of the numpy reference; equal to the plain formulas bit for bit on real input): the formulas the compiled
# loop runs too.
class _Builtin:
    """The built-in g of kind ``kind`` (:data:`~robustrack.controllers.laws.G_SIGN`, …): picklable, no closures."""

    def __init__(self, kind: int, alpha_c: float = 0.0, p: float = 0.0):
        self.kind, self.alpha_c, self.p = kind, alpha_c, p

    def __call__(self, x):
        if getattr(x, "dtype", None) not in (np.float64, np.complex128):  # lists, ints: as float (or complex)
            x = np.asarray(x, dtype=complex if np.iscomplexobj(x) else float)
        return g_value(self.kind, x, self.alpha_c, self.p)

    def inverse(self, y):
        """(y/α_c)^{1/p} of the power functions."""
        return (np.asarray(y, dtype=float) / self.alpha_c) ** (1.0 / self.p)


def _below_one(fn):
    """Inverse of a g with sup g = 1: fn(y) below 1, inf from 1 on."""

    def inv(y):
        y = np.asarray(y, dtype=float)
        out = np.full(y.shape, np.inf)
        below = y < 1.0
        out[below] = fn(y[below])
        return out

    return inv


def _sign_inverse(y):
    return np.where(np.asarray(y, dtype=float) < 1.0, 0.0, np.inf)


def _positive_param(value, name: str, fn: str) -> float:
    if value is None:
        raise ControlFunctionError(f"{fn!r} needs `{name}`; none was given (no silent default).")
    v = scalar(value, name)
    if v <= 0:
        raise ControlFunctionError(f"`{name}` of {fn!r} must be > 0; got {value!r}.")
    return v


def _make_sign(eps, alpha_c, p):
    return ControlFunction("sign", _Builtin(G_SIGN), eps, continuous=False, g_inverse=_sign_inverse)


def _make_saturation(eps, alpha_c, p):
    return ControlFunction("saturation", _Builtin(G_SATURATION), eps, g_inverse=_below_one(lambda y: y))


def _make_tanh(eps, alpha_c, p):
    return ControlFunction("tanh", _Builtin(G_TANH), eps, g_inverse=_below_one(np.arctanh))


def _make_power(name: str, fixed_p: float | None):
    def make(eps, alpha_c, p):
        a = _positive_param(alpha_c, "alpha_c", name)
        if fixed_p is None:
            p_val = _positive_param(p, "p", name)
            params = {"alpha_c": a, "p": p_val}
        else:
            p_val, params = fixed_p, {"alpha_c": a}
        power = _Builtin(G_POWER, a, p_val)
        return ControlFunction(name, power, eps, params=params, g_inverse=power.inverse)

    return make


#: name -> (builder(eps, alpha_c, p), the keyword parameters it takes)
CONTROL_FUNCTIONS: dict[str, tuple[Callable, tuple[str, ...]]] = {
    "sign": (_make_sign, ()),
    "saturation": (_make_saturation, ()),
    "tanh": (_make_tanh, ()),
    "signed-quadratic": (_make_power("signed-quadratic", 2.0), ("alpha_c",)),
    "cubic": (_make_power("cubic", 3.0), ("alpha_c",)),
    "signed-power": (_make_power("signed-power", None), ("alpha_c", "p")),
}


def control_function(
    g: str | Callable,
    eps: float,
    *,
    alpha_c: float | None = None,
    p: float | None = None,
    continuous: bool | None = None,
    name: str | None = None,
) -> ControlFunction:
    """Build the control function ``f(x) = g(x / ε)`` from a name or a callable.

    Parameters
    ----------
    g : str or callable
        A name in :data:`CONTROL_FUNCTIONS` or a scalar function g (checked
        numerically: odd, monotonically non-decreasing, continuous unless
        declared otherwise; see the module docstring).
    eps : float
        ε > 0, the scale of the argument (W 7.2.13).
    alpha_c : float
        α_c > 0 of ``signed-quadratic``, ``cubic``, ``signed-power`` (W 7.3.1, 7.3.4);
        required there, refused elsewhere.
    p : float
        Exponent p > 0 of ``signed-power``; required there, refused elsewhere.
    continuous : bool, optional
        For a callable only: ``False`` declares an intended jump (sign-like g).
    name : str, optional
        Name of a callable (default: its ``__name__``).

    Raises
    ------
    ControlFunctionError
        Unknown name (the valid ones are listed), a missing or inapplicable
        parameter, or a callable that fails a property (the message names the
        property and the argument x of g where it failed).

    Examples
    --------
    >>> f = control_function("signed-quadratic", eps=1e-2, alpha_c=2.0)
    >>> float(f(0.01)), float(f.inverse(2.0))
    (2.0, 1.0)
    >>> control_function("sign", eps=1.0).continuous
    False
    """
    if isinstance(g, str):
        key = g.strip().lower().replace("_", "-")
        if key not in CONTROL_FUNCTIONS:
            raise ControlFunctionError(
                f"Unknown control function {g!r}; valid names: {', '.join(sorted(CONTROL_FUNCTIONS))}, "
                "or pass a callable g."
            )
        builder, takes = CONTROL_FUNCTIONS[key]
        for pname, value in (("alpha_c", alpha_c), ("p", p)):
            if value is not None and pname not in takes:
                raise ControlFunctionError(f"{key!r} takes no `{pname}`; its parameters: {takes or 'none'}.")
        if continuous is not None or name is not None:
            raise ControlFunctionError(f"`continuous` and `name` apply to callables only, not to {key!r}.")
        return builder(eps, alpha_c, p)
    if not callable(g):
        raise ControlFunctionError(f"`g` must be a name or a callable; got {g!r}.")
    if alpha_c is not None or p is not None:
        raise ControlFunctionError("`alpha_c` and `p` apply to the built-in power functions, not to a callable g.")
    label = name if name is not None else getattr(g, "__name__", "user g")
    return ControlFunction(label, g, eps, continuous=continuous)
