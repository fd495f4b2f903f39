"""Small shared validators (one home for argument checking).

Messages name the argument in backticks, state the rule, and say what was received.
"""

from __future__ import annotations

import numbers

import numpy as np

from .errors import ParameterError


def as_float_array(x, name: str, *, ndim_min: int = 0) -> np.ndarray:
    """Return ``x`` as a float ndarray; refuse non-numeric input and too few dimensions.

    A complex array passes through as complex: the numpy reference of the tracking loop
    is differentiated by the complex step (:func:`robustrack.tracking.rhs.complex_step_jacobian`).
    """
    try:
        arr = np.asarray(x, dtype=complex if np.iscomplexobj(x) else float)
    except (TypeError, ValueError) as exc:
        raise ParameterError(f"`{name}` must be numeric; got {x!r} ({exc}).") from None
    if arr.ndim < ndim_min:
        raise ParameterError(
            f"`{name}` must have at least {ndim_min} dimension(s); got shape {arr.shape}."
        )
    return arr


def finite(x, name: str) -> np.ndarray:
    """Return ``x`` as a float array after checking every entry is finite."""
    arr = as_float_array(x, name)
    if not np.all(np.isfinite(arr)):
        raise ParameterError(f"All components of `{name}` must be finite; got {x!r}.")
    return arr


def positive(x, name: str, *, allow_zero: bool = False) -> np.ndarray | float:
    """Check ``x > 0`` (or ``>= 0``) componentwise; return it unchanged in kind."""
    arr = finite(x, name)
    bad = arr < 0 if allow_zero else arr <= 0
    if np.any(bad):
        rule = ">= 0" if allow_zero else "> 0"
        raise ParameterError(f"`{name}` must be {rule}; got {x!r}.")
    return float(arr) if arr.ndim == 0 else arr


def scalar(x, name: str) -> float:
    """Return ``x`` as a finite Python float."""
    if isinstance(x, bool) or not isinstance(x, (numbers.Real, np.floating, np.integer)):
        arr = finite(x, name)
        if arr.ndim != 0:
            raise ParameterError(f"`{name}` must be a scalar; got shape {arr.shape}.")
        return float(arr)
    val = float(x)
    if not np.isfinite(val):
        raise ParameterError(f"`{name}` must be finite; got {x!r}.")
    return val
