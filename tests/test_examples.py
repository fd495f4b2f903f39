"""The design scripts in examples/ run to the end (fast settings) and write what they promise."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

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
def test_example_runs(script, tmp_path):
    env = dict(os.environ, ROBUSTRACK_EXAMPLES_FAST="1", ROBUSTRACK_EXAMPLES_OUT=str(tmp_path / "out"),
               MPLBACKEND="Agg", PYTHONIOENCODING="utf-8")
    proc = subprocess.run([sys.executable, str(EXAMPLES / script)], cwd=tmp_path, env=env, capture_output=True,
                          text=True, encoding="utf-8", timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    files, texts = CASES[script]
    folder = tmp_path / "out" / Path(script).stem
    for name in files:
        assert (folder / name).is_file() and (folder / name).stat().st_size > 0, name
    for text in texts:
        assert text in proc.stdout, (text, proc.stdout[-3000:])
    # nothing written outside the output folder
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
