"""The design scripts in examples/ run to the end (fast settings) and write and print what they promise.

They run once, inside the documentation build (the gallery executes every script: ``docs_site`` in
conftest.py); these tests read what each wrote (files under ``examples_out/<script>/``) and printed (the
gallery page's captured output).
"""

from __future__ import annotations

import html
from pathlib import Path

import pytest

pytestmark = pytest.mark.xdist_group("docs-site")

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"

# script → (files it must write under OUT/<script stem>/, text its output must contain)
CASES = {
    "triple_pendulum_gss.py": (["tracking_error.png"], ["Γ′ =", "bounds held: True"]),
    "lagrangian_plant_custom.py": (["tracking_error.png"], ["gss: max‖e‖∞", "gdbar: max‖e‖∞"]),
    "own_arm_circle.py": (["task_space.png", "report/report.html"], ["bounds held: True", "tip error: controlled"]),
    "ur5_payload.py": (["joint_errors.png"], ["bounds held: True", "assumptions held: True"]),
    "compare_compensators.py": (["comparison.md", "comparison.csv", "comparison.json", "max_error.png"],
                                ["| gss | signed-quadratic | case 1 |", "failed rows: 0"]),
}


def test_every_example_is_tested():
    assert sorted(p.name for p in EXAMPLES.glob("*.py")) == sorted(CASES)


@pytest.mark.parametrize("script", sorted(CASES))
def test_example_runs(script, docs_site):
    assert docs_site.returncode == 0, docs_site.log[-5000:]
    files, texts = CASES[script]
    folder = docs_site.examples_out / Path(script).stem
    for name in files:
        assert (folder / name).is_file() and (folder / name).stat().st_size > 0, name
    printed = html.unescape((docs_site.html / "gallery" / f"{Path(script).stem}.html").read_text(encoding="utf-8"))
    for text in texts:
        assert text in printed, (text, printed[-3000:])
    assert docs_site.written_into_examples == []  # nothing written beside the scripts
