"""The README says what works: its Python example runs and its command lines are valid.

Truths: the README text itself. The Python block is executed (with the horizon
shortened from 10 s to 0.5 s, the only edit) and must print the numbers it
promises; every ``robustrack ...`` line of "The command line" must parse with the
CLI's own parser and name a scenario whose ``--set`` overrides are valid keys.
"""

from __future__ import annotations

import contextlib
import io
import re
import shlex
from pathlib import Path

import pytest

from robustrack.cli import build_parser
from robustrack.scenarios import load_scenario

README = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")


def _python_blocks():
    return re.findall(r"```python\n(.*?)```", README, flags=re.S)


def _command_lines():
    section = README.split("## The command line", 1)[1].split("\n## ", 1)[0]
    lines, current = [], ""
    for raw in section.splitlines():
        if not raw.startswith("    "):  # indented block only
            continue
        text = raw.strip()
        current = f"{current} {text}" if current else text
        if current.endswith("\\"):
            current = current[:-1].rstrip()
            continue
        lines.append(current.split("  #", 1)[0].strip())
        current = ""
    return [line for line in lines if line.startswith("robustrack ")]


def test_readme_has_the_documented_parts():
    assert len(_python_blocks()) == 1
    assert len(_command_lines()) >= 8
    setup = README.split("## Set up", 1)[1].split("\n## ", 1)[0]
    assert "robustrack report triple-pendulum" in setup and "python -m pytest -q" in setup


def test_python_example_runs(tmp_path, monkeypatch):
    (code,) = _python_blocks()
    assert "t_span=(0, 10)" in code
    monkeypatch.chdir(tmp_path)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code.replace("t_span=(0, 10)", "t_span=(0, 0.5)"), "README.md", "exec"), {})
    max_e, bound_e, held = out.getvalue().split()
    assert 0 < float(max_e) < float(bound_e) and held == "True"
    assert (tmp_path / "run.npz").is_file() and (tmp_path / "run.json").is_file()


@pytest.mark.parametrize("line", _command_lines())
def test_command_line_is_valid(line):
    argv = shlex.split(line)[1:]
    args = build_parser().parse_args(argv)
    if hasattr(args, "name"):
        load_scenario(args.name, getattr(args, "set", []))
