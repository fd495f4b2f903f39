"""The one value formatter and the one Markdown-table builder of the package.

Every number a user reads — ``robustrack run`` output, comparison tables, reports,
campaign summaries — is written by :func:`format_value`, and every Markdown table by
:func:`markdown_table`, so the same value looks the same everywhere: 4 significant
digits, ``—`` for a missing value, ``yes``/``no`` for booleans, ``∞`` for an infinite
bound (none promised), ``NaN`` spelled out, and the unit after the number.
"""

from __future__ import annotations

import math
from numbers import Integral, Real

import numpy as np

from .errors import ParameterError

__all__ = ["format_value", "with_unit", "markdown_table", "DIGITS", "typed_float"]

#: Significant digits of every formatted number unless a caller asks otherwise.
DIGITS = 4


def _number(v, digits: int) -> str:
    v = float(v)
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "∞" if v > 0 else "−∞"
    return f"{v:.{digits}g}"


def format_value(value, unit: str | None = None, *, digits: int = DIGITS) -> str:
    """A value as a reader sees it: the number, then its unit.

    Parameters
    ----------
    value : None, bool, int, float, str, or a sequence / 1-D array of numbers
        None → ``"—"``; a bool → ``"yes"``/``"no"``; an int as is; a float with
        ``digits`` significant digits (``∞``, ``−∞``, ``NaN`` for the non-finite); a
        sequence as ``[a, b, c]`` (each entry formatted the same way); a string as is.
    unit : str, optional
        Appended after one space to a number or a sequence of numbers (once, after the
        closing bracket); not to None, booleans, strings or non-finite values. None or
        ``""`` (dimensionless): no unit.
    digits : int, default DIGITS
        Significant digits of floats (keyword-only).

    Returns
    -------
    str

    Examples
    --------
    >>> format_value(0.000132589, "rad")
    '0.0001326 rad'
    >>> format_value([0.1, -0.2, 0.3], "kg")
    '[0.1, -0.2, 0.3] kg'
    >>> format_value(float("inf"), "rad"), format_value(None, "s"), format_value(True)
    ('∞', '—', 'yes')
    """
    if value is None:
        return "—"
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    if isinstance(value, str):
        return value
    if isinstance(value, Integral):
        text, finite = str(int(value)), True
    elif isinstance(value, Real):
        text, finite = _number(value, digits), math.isfinite(float(value))
    elif isinstance(value, (list, tuple, np.ndarray)):
        text = "[" + ", ".join(format_value(v, digits=digits) for v in np.asarray(value, dtype=object).ravel()) + "]"
        finite = True
    else:
        return str(value)
    return f"{text} {unit}" if unit and finite else text


def with_unit(label: str, unit: str | None) -> str:
    """A column header or axis label with its unit in parentheses: ``"max‖e‖∞ (rad)"``.

    Parameters
    ----------
    label : str
        What the quantity is.
    unit : str, optional
        Its unit; None or ``""`` (dimensionless): the label alone.

    Returns
    -------
    str
    """
    return f"{label} ({unit})" if unit else label


def _cell(value) -> str:
    text = value if isinstance(value, str) else format_value(value)
    return text.replace("|", "\\|").replace("\n", " ")


def markdown_table(header, rows) -> str:
    """A GitHub-flavoured Markdown table.

    Parameters
    ----------
    header : sequence
        The column titles.
    rows : iterable of sequences
        One sequence of cells per row, as long as ``header``. Strings are written as
        they are, other values through :func:`format_value` (no unit: put units in
        the header or format the cell first); ``|`` is escaped and newlines become
        spaces.

    Returns
    -------
    str
        Header line, separator line and one line per row, joined by newlines (no
        trailing newline).

    Raises
    ------
    ParameterError
        A row whose length differs from the header's.

    Examples
    --------
    >>> print(markdown_table(["quantity", "value"], [["max ‖e‖∞", format_value(1.3e-4, "rad")]]))
    | quantity | value |
    |---|---|
    | max ‖e‖∞ | 0.00013 rad |
    """
    header = list(header)
    lines = ["| " + " | ".join(_cell(h) for h in header) + " |", "|" + "---|" * len(header)]
    for row in rows:
        row = list(row)
        if len(row) != len(header):
            raise ParameterError(f"a table row has {len(row)} cells, the header {len(header)}: {row!r}.")
        lines.append("| " + " | ".join(_cell(c) for c in row) + " |")
    return "\n".join(lines)


def typed_float(x: float) -> str:
    """``x`` as a person would have typed it: the shortest decimal of at most 6 significant digits within one
    ulp of x (``0.1 * 3 = 0.30000000000000004`` → ``0.3``, a box corner the user set as ±10 %), else
    ``repr(x)``, which reads back exactly (a random draw keeps its 17 digits: one within an ulp of a
    6-digit decimal has probability ~1e-9).

    Parameters
    ----------
    x : float

    Returns
    -------
    str
    """
    import math

    x = float(x)
    if not math.isfinite(x) or x == 0.0:
        return repr(x)
    for digits in range(1, 7):
        text = f"{x:.{digits}g}"
        if abs(float(text) - x) <= math.ulp(x):
            return text if "e" in text or "." in text else text + ".0"
    return repr(x)
