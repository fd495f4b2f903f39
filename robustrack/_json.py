"""JSON conversion shared by results, reports and the CLI."""

from __future__ import annotations

import dataclasses
import math

import numpy as np

_NONFINITE = {"inf": math.inf, "-inf": -math.inf, "nan": math.nan}


def to_jsonable(x, *, nonfinite: str = "null"):
    """Copy ``x`` with numpy values made plain and non-finite floats made JSON-safe.

    ``nonfinite="null"`` writes them as null (for consumers), ``"string"`` as
    ``"inf"``/``"-inf"``/``"nan"`` so :func:`from_jsonable` restores them exactly.
    """
    rec = lambda v: to_jsonable(v, nonfinite=nonfinite)  # noqa: E731
    if isinstance(x, dict):
        return {str(k): rec(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [rec(v) for v in x]
    if isinstance(x, np.ndarray):
        return rec(x.tolist())
    if isinstance(x, np.bool_):
        return bool(x)
    if isinstance(x, (np.integer,)):
        return int(x)
    if isinstance(x, (np.floating, float)):
        x = float(x)
        if math.isfinite(x):
            return x
        return None if nonfinite == "null" else repr(x)
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return rec(dataclasses.asdict(x))
    return x


def from_jsonable(x):
    """Inverse of ``to_jsonable(..., nonfinite="string")`` for the non-finite floats."""
    if isinstance(x, dict):
        return {k: from_jsonable(v) for k, v in x.items()}
    if isinstance(x, list):
        return [from_jsonable(v) for v in x]
    if isinstance(x, str) and x in _NONFINITE:
        return _NONFINITE[x]
    return x


def describe_value(v):
    """A JSON-ready form of a parameter value (arrays as lists, control functions by name, ε and shape).

    Parameters
    ----------
    v : object
        A number, array, mapping, sequence, control function or anything else
        (then its ``repr``).

    Returns
    -------
    object
        Plain Python numbers, strings, lists and dicts.
    """
    if isinstance(v, dict):
        return {str(k): describe_value(x) for k, x in v.items()}
    if isinstance(v, (list, tuple, np.ndarray)):
        return [describe_value(x) for x in np.asarray(v, dtype=object).tolist()] if np.ndim(v) else \
            describe_value(np.asarray(v).item())
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, (int, np.integer)):
        return int(v)
    if isinstance(v, (float, np.floating)):
        v = float(v)
        return v if math.isfinite(v) else repr(v)
    if v is None or isinstance(v, str):
        return v
    if hasattr(v, "g") and hasattr(v, "eps") and hasattr(v, "name"):  # a ControlFunction
        return {"name": v.name, "eps": float(v.eps), "params": describe_value(getattr(v, "params", {}))}
    return repr(v)
