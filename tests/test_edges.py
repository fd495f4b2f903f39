"""Trust at the loop's edges (issue 54): boxes that reach no plant, extreme and damaged input, comparisons that say
what they compare, and the first impression's warts.

Every case asserts the message (one line on the CLI, naming the key or argument typed, never ``robustrack: internal
error``) and that no input file changed. The controller's boundary is in ``tests/test_boundary.py``.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest
from test_bad_input import assert_one_line_error, cli

from robustrack.errors import ParameterError

CATALOG = Path(__file__).resolve().parents[1] / "robustrack" / "scenarios" / "catalog"


def _digest(*paths) -> list:
    return [hashlib.sha256(Path(p).read_bytes()).hexdigest() for p in paths]


def _refused(capsys, argv, inputs, *needles) -> str:
    """Run the CLI; assert one line, no internal error, each needle in it, the inputs unchanged; the line."""
    before = _digest(*inputs)
    code, _, err = cli(capsys, *argv)
    line = assert_one_line_error(code, err)
    assert "internal error" not in line and code != 3, line
    for needle in needles:
        assert needle in line, line
    assert _digest(*inputs) == before
    return line


# --------------------------------------------------------------------------- a box that reaches no plant
def _duffing(folder, extra: str, short: bool = True) -> Path:
    """duffing-tracking with ``extra`` appended (its `dm` emptied for named tables), on a 0.3-s horizon."""
    text = (CATALOG / "duffing-tracking.toml").read_text(encoding="utf-8")
    text = text.replace("dm = [0.2, -0.1]", "dm = []")
    if short:
        text = text.replace("t_end = 10.0", "t_end = 0.3").replace("n_points = 1001", "n_points = 31")
    path = folder / "box.toml"
    path.write_text(text + "\n" + extra, encoding="utf-8")
    return path


NEGATIVE_MASS = """
[uncertainty.parameters.m1]
range = [-0.5, 2.5]

[uncertainty.parameters.m2]
percent = 10
"""


@pytest.mark.parametrize("command", [["certify"], ["worst-case", "--budget", "5"], ["montecarlo", "--samples", "4"],
                                     ["gamma", "--samples", "8"]])
def test_a_box_reaching_a_negative_mass_is_refused_before_any_study(tmp_path, capsys, command, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = _duffing(tmp_path, NEGATIVE_MASS)
    _refused(capsys, [command[0], path, *command[1:]], [path], "`uncertainty.parameters.m1` = -0.5",
             "its range's lower end", "`m1` must be > 0", "narrow the range")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["box.toml"]  # nothing written


def test_a_box_whose_corner_has_an_indefinite_mass_matrix_is_refused_by_certify():
    """A plant of energies has no rule on its parameters: its M along the nominal run is what refuses the corner."""
    pytest.importorskip("flint")
    from test_export import _arm

    from robustrack.certification import ParameterBox, certify

    pb = _arm().replace(t_span=(0.0, 0.2), n_points=11)
    with pytest.raises(ParameterError, match=r"the box \(m1, m2\) reaches a plant .* refuses, at `m2` = -2") as err:
        certify(pb, ParameterBox(("m1", "m2"), (1.4, -2.0), (1.6, 0.9)), budget_s=5)
    assert "not positive definite" in str(err.value)
    from robustrack.certification.box import check_physical

    y = pb.nominal_run().solution(np.linspace(0.0, 0.2, 11))  # the box of positive masses passes, at the same states
    check_physical(pb.nominal, ParameterBox(("m1", "m2"), (1.4, 0.7), (1.6, 0.9)), y[:, :2], y[:, 2:])
