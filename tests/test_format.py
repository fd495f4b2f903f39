"""The one value formatter and the one Markdown-table builder (robustrack._format).

Truths: Python's own ``format(x, ".4g")`` for the digits, and a GitHub-flavoured Markdown
table read back by splitting its lines on unescaped pipes.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from robustrack._format import DIGITS, format_value, markdown_table, with_unit
from robustrack.errors import ParameterError


@pytest.mark.parametrize("value, unit, text", [
    (None, "rad", "—"),
    (True, None, "yes"),
    (np.bool_(False), "s", "no"),
    (12, "s", "12 s"),
    (np.int64(7), None, "7"),
    (0.000132589, "rad", "0.0001326 rad"),
    (math.inf, "rad", "∞"),
    (-math.inf, None, "−∞"),
    (math.nan, "m", "NaN"),
    ([0.1, -0.2, 0.3], "kg", "[0.1, -0.2, 0.3] kg"),
    (np.array([1.0, 2.0]), "m", "[1, 2] m"),
    ("signed-quadratic", "rad", "signed-quadratic"),
    (0.5, "", "0.5"),
])
def test_values(value, unit, text):
    assert format_value(value, unit) == text


@given(st.floats(allow_nan=False, allow_infinity=False), st.integers(1, 8))
def test_finite_floats_have_the_asked_significant_digits(x, digits):
    assert format_value(x, "N·m", digits=digits) == format(x, f".{digits}g") + " N·m"
    assert format_value(x) == format(x, f".{DIGITS}g")


def test_with_unit():
    assert with_unit("max‖e‖∞", "rad") == "max‖e‖∞ (rad)"
    assert with_unit("α0", "") == "α0" and with_unit("nfev", None) == "nfev"


def _split(line):
    cells = re.split(r"(?<!\\)\|", line.strip())[1:-1]
    return [c.strip().replace("\\|", "|") for c in cells]


def test_markdown_table_reads_back():
    header = ["quantity", "value |x|"]
    rows = [["a", 0.000123456], ["b|c", "two\nlines"], ["d", None]]
    lines = markdown_table(header, rows).splitlines()
    assert len(lines) == 2 + len(rows)
    assert _split(lines[0]) == header and set(lines[1].strip("|").split("|")) == {"---"}
    assert _split(lines[2]) == ["a", "0.0001235"]
    assert _split(lines[3]) == ["b|c", "two lines"]
    assert _split(lines[4]) == ["d", "—"]


def test_markdown_table_refuses_a_ragged_row():
    with pytest.raises(ParameterError, match="2 cells, the header 3"):
        markdown_table(["a", "b", "c"], [[1, 2]])
