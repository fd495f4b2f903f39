"""The design scripts in examples/ run to the end (fast settings) and write and print what they promise.

In the default tier each runs in this process (:func:`test_example_writes_and_prints_what_it_promises`); in the
slow tier (``tests/tiers.py``) they run again inside the documentation build (the gallery executes every script:
``docs_site`` in conftest.py; what each wrote and printed is checked by ``tests/test_docs_site.py::test_example_runs``
against :data:`CASES`, with cloudpickle and dask made unimportable as on the README's base install, where a campaign
whose loop pickles only with cloudpickle fails). The user guide's "Your own system, start to finish"
(``docs/guide/own-system.md``, from the README before issue 43) steps 2 and 3 run on a base install too, in the
slow tier.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
OWN_SYSTEM = (EXAMPLES.parent / "docs" / "guide" / "own-system.md").read_text(encoding="utf-8")

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
def test_example_writes_and_prints_what_it_promises(script, tmp_path, monkeypatch, capsys):
    """Each script run as ``python examples/NAME.py`` runs it (as ``__main__``, the fast settings, its files under
    ``tmp_path``): the files of :data:`CASES` written and not empty, its texts printed, nothing written beside the
    scripts. In this process, so with the dev install's packages: the run on a base install (cloudpickle and dask
    unimportable) is the site's build, in the slow tier."""
    import runpy

    import matplotlib

    matplotlib.use("Agg")
    monkeypatch.setenv("ROBUSTRACK_EXAMPLES_FAST", "1")
    monkeypatch.setenv("ROBUSTRACK_EXAMPLES_OUT", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(EXAMPLES))  # as `python examples/NAME.py` puts the script's folder first
    before = sorted(p.name for p in EXAMPLES.iterdir())
    runpy.run_path(str(EXAMPLES / script), run_name="__main__")
    printed = capsys.readouterr().out
    files, texts = CASES[script]
    for name in files:
        path = tmp_path / Path(script).stem / name
        assert path.is_file() and path.stat().st_size > 0, name
    for text in texts:
        assert text in printed, (text, printed[-3000:])
    assert sorted(p.name for p in EXAMPLES.iterdir()) == before


def test_the_base_install_environment_lacks_cloudpickle(base_install_env):
    for name in ("cloudpickle", "dask"):  # what [dev] and [dask] bring
        proc = subprocess.run([sys.executable, "-c", f"import {name}"], env=base_install_env, capture_output=True,
                              text=True, timeout=120)
        assert proc.returncode != 0 and "ModuleNotFoundError" in proc.stderr, (name, proc.stderr)


def _guide_step(title: str) -> str:
    """The indented code of one step of the guide's "Your own system, start to finish" (its lines, dedented)."""
    body = OWN_SYSTEM.split(title, 1)[1].split("\n\n", 2)[1]
    lines = body.splitlines()
    assert lines and all(line.startswith("    ") for line in lines), body
    return "\n".join(line[4:] for line in lines) + "\n"


def test_guide_own_system_steps_run_on_a_base_install(tmp_path, base_install_env):
    """Steps 2 and 3 as printed (the arm of step 1 from examples/own_arm_circle.py, whose functions it names);
    the only edits: a 1-s horizon instead of 6.3 s and 3 Monte Carlo samples instead of 40."""
    step2, step3 = _guide_step("**2. The requirement**"), _guide_step("**3. Run, measure, Monte Carlo, report**")
    assert "(0, 6.3)" in step3 and "samples=40" in step3
    step3 = step3.replace("(0, 6.3)", "(0, 1.0)").replace("samples=40", "samples=3")
    prelude = (f"import sys; sys.path.insert(0, {str(EXAMPLES)!r})\n"
               "from own_arm_circle import PARAMS, mass_matrix, given_force, tip\n"
               "from robustrack.plants import Plant\n"
               "arm = Plant.from_functions(mass_matrix, given_force, params=PARAMS, names=['shoulder', 'elbow'],\n"
               "                           kinds=['angle', 'angle'], vectorized=True)\n")
    epilogue = "print('held', result.metrics.bounds_held, campaign.summary()['completed'])\n"
    script = tmp_path / "steps.py"
    script.write_text(prelude + step2 + step3 + epilogue, encoding="utf-8")
    proc = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=base_install_env, capture_output=True,
                          text=True, encoding="utf-8", timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "held True 3" in proc.stdout, proc.stdout[-2000:]
    assert (tmp_path / "arm-report" / "report.html").is_file()
