"""Small shared validators (one home for argument checking).

Messages name the argument in backticks, state the rule, and say what was received.
"""

from __future__ import annotations

import math
import numbers
import os

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


def positive_int(x, name: str, *, minimum: int = 1, what: str = "", error=ParameterError) -> int:
    """Return ``x`` as a Python int after checking it is an integer ``>= minimum``.

    The one integer-count validator (samples, workers, chunk, budget, links, seeds …).
    Booleans and floats are refused, even integer-valued ones: ``1e3`` in Python code is a
    float by mistake more often than by intent (the CLI's :func:`cli_int` parses ``5e7``).

    Parameters
    ----------
    x : object
        The value received.
    name : str
        The argument's name as the user typed it (``"samples"``, ``"--samples"``).
    minimum : int
        The smallest value allowed (default 1; 0 for seeds, 2 for output grids …).
    what : str
        What the number counts, put in the message (e.g. ``"worker processes"``).
    error : type
        The :mod:`robustrack.errors` class to raise (default ParameterError).

    Returns
    -------
    int
    """
    if isinstance(x, bool) or not isinstance(x, numbers.Integral) or x < minimum:
        note = f" ({what})" if what else ""
        raise error(f"`{name}` must be an integer >= {minimum}{note}; got {x!r}.")
    return int(x)


def cli_int(text: str, name: str, *, minimum: int = 1) -> int:
    """Parse a command-line count: ``"1000"``, ``"10_000"`` or ``"5e7"`` (an integer value), ``>= minimum``.

    Parameters
    ----------
    text : str
        The text typed.
    name : str
        The option (``"--samples"``) for the message.
    minimum : int
        The smallest value allowed.

    Returns
    -------
    int

    Raises
    ------
    ParameterError
        Not a number, not an integer value, or below ``minimum``.
    """
    s = str(text).strip()
    try:
        value = int(s)
    except ValueError:
        try:
            f = float(s)
        except ValueError:
            raise ParameterError(f"`{name}` must be an integer >= {minimum}; got {text!r}.") from None
        if not math.isfinite(f) or not f.is_integer() or abs(f) > 2**62:
            raise ParameterError(f"`{name}` must be an integer >= {minimum}; got {text!r}.") from None
        value = int(f)
    return positive_int(value, name, minimum=minimum)


def broadcast_batch(name_shapes: dict) -> tuple:
    """The common batch shape of arrays whose leading (batch) axes must broadcast.

    Parameters
    ----------
    name_shapes : dict
        Argument name -> its batch shape (the shape without the core axes).

    Returns
    -------
    tuple
        ``np.broadcast_shapes`` of them.

    Raises
    ------
    ParameterError
        The batch shapes do not broadcast (the message lists each argument's).
    """
    try:
        return np.broadcast_shapes(*name_shapes.values())
    except ValueError:
        listing = ", ".join(f"`{k}` {tuple(v)}" for k, v in name_shapes.items())
        raise ParameterError(f"the batch (leading) axes must broadcast against each other; got {listing}.") from None


def available_memory() -> float | None:
    """Bytes of physical memory available now (None where the system does not say)."""
    try:
        return float(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):  # pragma: no cover - not POSIX
        return None


def check_memory(need_bytes: float, name: str, value, *, advice: str, fraction: float = 0.5) -> None:
    """Refuse, before any allocation, work that would need more than ``fraction`` of the free memory.

    Parameters
    ----------
    need_bytes : float
        The estimate of what the work would hold at once.
    name : str
        The argument that sets the size, as the user typed it (``"--samples"``).
    value : object
        Its value, for the message.
    advice : str
        What to do instead (one sentence).
    fraction : float
        The share of the available memory allowed (default one half).

    Raises
    ------
    ParameterError
        ``need_bytes`` exceeds ``fraction`` of the available memory.
    """
    avail = available_memory()
    if avail is not None and need_bytes > fraction * avail:
        raise ParameterError(
            f"`{name}` = {value} would need about {need_bytes / 2**30:.1f} GiB of memory, "
            f"{avail / 2**30:.1f} GiB are available (limit: {fraction:.0%} of that). {advice}"
        )
