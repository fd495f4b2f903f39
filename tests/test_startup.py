"""Start-up: the quick commands import none of the heavy packages (DESIGN: heavy imports where used).

Behaviour, not timing: `robustrack list`, `show` and `--help` must not pull in scipy.integrate, sympy,
python-control or numba (each costs tenths of a second to seconds at start-up).
"""

import subprocess
import sys

import pytest

HEAVY = ("scipy.integrate", "sympy", "control", "numba", "matplotlib", "pinocchio")

PROBE = """
import sys
from robustrack.cli import main
try:
    code = main({argv!r})
finally:  # --help leaves through SystemExit
    print("LOADED", ",".join(m for m in {heavy!r} if m in sys.modules))
sys.exit(code)
"""


@pytest.mark.parametrize("argv", [["list"], ["show", "triple-pendulum"], ["show", "triple-pendulum-underactuated"],
                                  ["show", "ur5-payload"], ["--help"]])
def test_quick_commands_import_no_heavy_package(argv):
    res = subprocess.run([sys.executable, "-c", PROBE.format(argv=argv, heavy=HEAVY)], capture_output=True, text=True)
    line = [ln for ln in res.stdout.splitlines() if ln.startswith("LOADED")]
    assert res.returncode == 0 and line, res.stderr
    assert line[-1] == "LOADED ", f"{' '.join(argv)} imported {line[-1][7:]}"
