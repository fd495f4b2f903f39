"""The README is a landing page that says what works, and the manual it points to says what works too.

Truths: the README's and the site's Markdown text itself, and the files on disk. The README stays short (≤ 150
lines) with the two set-up commands (CI runs exactly its test command: ``.ci/run``), every link it gives
resolves to a file of the repository, and the sections of the old README-manual are pages of the site
(``docs/``), reachable from a toctree. Each Python block (the README's, and the Python API page's fuller one) is
executed with the horizon shortened from 10 s to 0.5 s, the only edit, and must print the numbers it promises;
every ``robustrack ...`` line of the command-line page's first block must parse with the CLI's own parser and
name a scenario whose ``--set`` overrides are valid keys.
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

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
DOCS = ROOT / "docs"
PYTHON_API = DOCS / "guide" / "python-api.md"
COMMAND_LINE = DOCS / "guide" / "command-line.md"


def _python_blocks(text: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", text, flags=re.S)


def _command_lines():
    """The ``robustrack ...`` lines of the command-line page's first indented block (continuations joined)."""
    body = COMMAND_LINE.read_text(encoding="utf-8").split("\n## ", 1)[0]
    lines, current = [], ""
    for raw in body.splitlines():
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


def test_readme_is_a_landing_page_with_the_two_commands():
    assert len(README.splitlines()) <= 150
    setup = README.split("## Set up", 1)[1].split("\n## ", 1)[0]
    commands = [line.strip() for line in setup.splitlines() if line.startswith("    ")]
    assert commands == ["python -m pip install -e . && robustrack report triple-pendulum",
                        "python -m pip install -e '.[dev]' && python -m pytest -q -n 2"]
    # CI runs exactly the README's test command
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").strip().splitlines()
    assert ci[-1] == commands[1].split(" && ", 1)[1]
    for part in ("## How to cite", "## Licence"):
        assert part in README
    assert len(_python_blocks(README)) == 1
    assert len(re.findall(r"!\[[^\]]+\]\(([^)]+\.png)\)", README)) == 1  # one figure


def test_readme_links_resolve():
    targets = re.findall(r"\]\(([^)#]+)\)", README)
    assert len(targets) >= 15
    for target in targets:
        assert (ROOT / target).is_file(), target


def _toctree_pages() -> set[Path]:
    """Every page named by a toctree of the site's Markdown pages."""
    pages = set()
    for page in DOCS.rglob("*.md"):
        if "_build" in page.parts:
            continue
        for tree in re.findall(r"```\{toctree\}\n(.*?)```", page.read_text(encoding="utf-8"), flags=re.S):
            for entry in tree.splitlines():
                if entry.strip() and not entry.startswith(":"):
                    pages.add((page.parent / f"{entry.strip()}.md").resolve())
    return pages


# The sections of the README-manual (up to issue 43) and the page of the site each moved to: a phrase of
# each section must be on its page, and the page in a toctree.
MOVED = {
    "How long, measured from a fresh clone": "getting-started.md",
    "Run the test suite (CI installs": "getting-started.md",
    "python -m sphinx -W -b html docs docs/_build/html": "getting-started.md",
    "Five scenarios are tracking problems": "guide/command-line.md",
    "once per machine, in parts, each when a run first needs it": "guide/compiled.md",
    "Frame constraints instead of the joint reference": "guide/command-line.md",
    "Output folders are never overwritten silently": "guide/command-line.md",
    "Bad input is refused before any time is spent": "guide/command-line.md",
    "runs the full closed loop once per sampled plant": "guide/uncertainty.md",
    "Certified bounds for every plant in the box": "guide/uncertainty.md",
    "| `robustrack.mechanics` |": "guide/python-api.md",
    "**3. Run, measure, Monte Carlo, report**": "guide/own-system.md",
    "Which motion does a constraint produce?": "guide/constraint-models.md",
    "The anatomy of a control force": "guide/constraint-models.md",
    "Tracking with actuators": "guide/actuators.md",
    "Identifying δm from tracking data": "guide/identification.md",
    "Tracking with a singular mass matrix": "guide/singular.md",
    "What the numbers mean (and where they differ from the seed)": "theory/index.md",
}


@pytest.mark.parametrize("phrase, page", sorted(MOVED.items()))
def test_the_manual_moved_to_the_site(phrase, page):
    path = DOCS / page
    assert phrase in path.read_text(encoding="utf-8"), (phrase, page)
    assert path.resolve() in _toctree_pages(), page


@pytest.mark.parametrize("source", [ROOT / "README.md", PYTHON_API], ids=["README", "python-api"])
def test_python_example_runs(source, tmp_path, monkeypatch):
    (code,) = _python_blocks(source.read_text(encoding="utf-8"))
    assert "t_span=(0, 10)" in code
    monkeypatch.chdir(tmp_path)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code.replace("t_span=(0, 10)", "t_span=(0, 0.5)"), source.name, "exec"), {})
    max_e, bound_e, held = out.getvalue().split()
    assert 0 < float(max_e) < float(bound_e) and held == "True"
    assert (tmp_path / "run.npz").is_file() and (tmp_path / "run.json").is_file()


def test_the_command_line_page_lists_the_commands():
    assert len(_command_lines()) >= 8


@pytest.mark.parametrize("line", _command_lines())
def test_command_line_is_valid(line):
    argv = shlex.split(line)[1:]
    args = build_parser().parse_args(argv)
    if getattr(args, "name", None) is not None:  # (certify --verify FILE names no scenario)
        load_scenario(args.name, getattr(args, "set", []))


def test_the_docs_extra_installs_what_the_site_build_needs():
    """``pip install -e '.[docs]'`` then the site's sphinx command: the extra holds Sphinx's extensions and theme
    (named in docs/conf.py) and, because the gallery executes examples/ur5_payload.py (a URDF robot through
    Pinocchio), the robots extra."""
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    names = {re.split(r"[<>=!\[; ]", spec, 1)[0].lower() for spec in extras["docs"]}
    conf = (DOCS / "conf.py").read_text(encoding="utf-8")
    needed = {"sphinx"}
    needed |= {ext.split(".", 1)[0].replace("_", "-") for ext in re.findall(r'^\s+"([a-z_.]+)",$', conf, flags=re.M)
               if not ext.startswith(("sphinx.", "robustrack"))}
    needed |= {re.search(r'html_theme = "([a-z_]+)"', conf).group(1).replace("_", "-")}
    if any("URDFPlant" in p.read_text(encoding="utf-8") for p in (ROOT / "examples").glob("*.py")):
        needed |= {re.split(r"[<>=!\[; ]", spec, 1)[0].lower() for spec in extras["robots"]}
    assert needed <= names, needed - names
