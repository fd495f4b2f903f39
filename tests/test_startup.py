"""Start-up: the quick commands import none of the heavy packages (heavy imports where they are used).

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


def test_a_warm_compiled_run_imports_neither_scipy_integrate_nor_sympy():
    """Where the kernels integrate (DOP853 and BDF are compiled), a run loads no scipy.integrate, and a
    structure already generated needs no sympy (issue 18, item 5). The first run may compile; the second
    is the warm one. ``two-ellipses`` is a nominal-only run (``simulate_constrained``), ``duffing-tracking``
    the whole tracking loop (nominal, controlled, uncompensated).

    Nor does it load numba's compiler registries (``robustrack.compiled.cache._KernelCache``: cached kernels
    are loaded with numba's runtime only); ``numba.np.random.generator_methods`` is one module only those
    registries import. A nominal run with one constraint row (``triple-pendulum-energy``) calls no BLAS or
    LAPACK, so it does not import scipy.linalg either."""
    registries = "numba.np.random.generator_methods"
    for name, also in (("two-ellipses", ()), ("duffing-tracking", ()), ("triple-pendulum-energy", ("scipy.linalg",))):
        # a nominal run with one constraint row calls no BLAS or LAPACK: not even scipy.linalg
        argv = ["run", name]
        first = subprocess.run([sys.executable, "-m", "robustrack.cli", *argv], capture_output=True, text=True)
        assert first.returncode == 0, first.stderr
        res = subprocess.run([sys.executable, "-c", PROBE.format(argv=argv, heavy=HEAVY + (registries,) + also)],
                             capture_output=True, text=True)
        line = [ln for ln in res.stdout.splitlines() if ln.startswith("LOADED")]
        assert res.returncode == 0 and line, res.stderr
        loaded = set(line[-1][7:].split(",")) - {""}
        assert loaded <= {"numba"}, f"a warm `robustrack run {name}` imported {sorted(loaded - {'numba'})}"
