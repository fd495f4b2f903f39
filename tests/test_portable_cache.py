"""``robustrack compile --portable``: machine code for any CPU, loaded where this CPU's own is not cached.

numba keys cached machine code by the CPU it was compiled for, so a cache prepared on one machine (a cluster
image, a shared ``ROBUSTRACK_CACHE_DIR``) is compiled again by a machine with another CPU. Here "another CPU"
is numba's generic CPU against this machine's own (``NUMBA_CPU_NAME`` is read when numba is imported, so
each side is its own process).
"""

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from robustrack.compiled.cache import PORTABLE_CPU

PROBE = textwrap.dedent("""
    import importlib.util, sys
    import numpy as np
    spec = importlib.util.spec_from_file_location("portable_probe", sys.argv[1])
    module = importlib.util.module_from_spec(spec)
    sys.modules["portable_probe"] = module
    spec.loader.exec_module(module)
    value = module.sum_of_squares(np.arange(4.0))
    from numba.core.registry import cpu_target
    magic = cpu_target.target_context.codegen().magic_tuple()
    stats = module.sum_of_squares.stats
    print(repr(value), sum(stats.cache_hits.values()), sum(stats.cache_misses.values()), magic[1], magic[2] == "")
""")

KERNEL = textwrap.dedent("""
    from robustrack.compiled.cache import kernel


    @kernel
    def sum_of_squares(x):
        s = 0.0
        for v in x:
            s += v * v
        return s
""")


def _probe(env, path, portable):
    if portable:
        env = {**env, "NUMBA_CPU_NAME": PORTABLE_CPU[0], "NUMBA_CPU_FEATURES": PORTABLE_CPU[1]}
    else:
        env = {k: v for k, v in env.items() if k not in ("NUMBA_CPU_NAME", "NUMBA_CPU_FEATURES")}
    done = subprocess.run([sys.executable, "-c", PROBE, str(path)], capture_output=True, text=True, env=env,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    value, hits, misses, cpu, featureless = done.stdout.split()
    return float(value), int(hits), int(misses), cpu, featureless == "True"


def test_a_kernel_compiled_for_the_generic_cpu_is_loaded_by_this_cpu(tmp_path, monkeypatch):
    """A kernel compiled only for the generic CPU: a process on this CPU loads it (a cache hit, no compile)
    and gets the same value; the generic side itself compiled it once (a miss) and then loads it too."""
    monkeypatch.setenv("ROBUSTRACK_CACHE_DIR", str(tmp_path))
    from robustrack.compiled.cache import cache_dir

    folder = cache_dir()  # robustrack caches the kernels of files in the package or in this folder
    folder.mkdir(parents=True)
    path = folder / "portable_probe.py"
    path.write_text(KERNEL)
    env = dict(os.environ)

    generic = _probe(env, path, portable=True)
    assert generic[1:] == (0, 1, PORTABLE_CPU[0], True)  # compiled for the generic CPU
    host = _probe(env, path, portable=False)
    assert host[3] != PORTABLE_CPU[0]  # this process compiles for this machine's CPU: another key
    assert host[1:3] == (1, 0)  # loaded, not compiled
    assert host[0] == generic[0] == 14.0
    assert _probe(env, path, portable=True)[1:3] == (1, 0)


@pytest.mark.slow  # the whole once-per-machine compile again, for the generic CPU (~40 s of the suite's 2 cores)
def test_compile_portable_prepares_a_cache_that_this_cpu_runs_without_compiling(tmp_path):
    """``robustrack compile --portable two-ellipses`` on an empty cache, then ``robustrack run two-ellipses``
    on this CPU: numba compiles nothing (its compile events), no compile notice, and the metrics equal a run
    compiled for this CPU (the suite's own cache)."""
    listen = ("from numba.core import event\n"
              "compiled = []\n"
              "class L(event.Listener):\n"
              "    def on_start(self, ev): compiled.append(str(ev.data.get('dispatcher', ev.kind)))\n"
              "    def on_end(self, ev): pass\n"
              "event.register('numba:compile', L())\n"
              "import sys\n"
              "from robustrack.cli import main\n"
              "code = main(sys.argv[1:])\n"
              "print('COMPILED', len(compiled), compiled[:3])\n"
              "sys.exit(code)\n")
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CPU_NAME", "NUMBA_CPU_FEATURES")}
    shared = {**env, "ROBUSTRACK_CACHE_DIR": str(tmp_path / "shared")}
    prepared = subprocess.run([sys.executable, "-m", "robustrack.cli", "compile", "--portable", "two-ellipses"],
                              capture_output=True, text=True, env=shared, timeout=600)
    assert prepared.returncode == 0, prepared.stderr
    assert "portable" in prepared.stdout

    run = subprocess.run([sys.executable, "-c", listen, "run", "two-ellipses", "--json", str(tmp_path / "a.json")],
                         capture_output=True, text=True, env=shared, timeout=600)
    assert run.returncode == 0, run.stderr
    assert "COMPILED 0 " in run.stdout, run.stdout.splitlines()[-1]
    assert "compiling" not in run.stderr

    ref = subprocess.run([sys.executable, "-m", "robustrack.cli", "run", "two-ellipses", "--json",
                          str(tmp_path / "b.json")], capture_output=True, text=True, env=env, timeout=600)
    assert ref.returncode == 0, ref.stderr
    a, b = (json.loads((tmp_path / f"{x}.json").read_text())["metrics"] for x in "ab")
    assert a == b
    assert np.isfinite(a["max_constraint_residual"])


def test_ctrl_c_stops_compile_portable_with_one_line(tmp_path, group_alive):
    """Ctrl-C during ``robustrack compile --portable`` (its child compiles): exit 130, the "interrupted" line
    once (the child's; the parent waits for it), no traceback, no process left."""
    import signal
    import time

    env = {**os.environ, "ROBUSTRACK_CACHE_DIR": str(tmp_path)}
    proc = subprocess.Popen([sys.executable, "-m", "robustrack.cli", "compile", "--portable", "two-ellipses"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    time.sleep(4.0)
    assert proc.poll() is None, "the compile ended before Ctrl-C"
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert err.count("interrupted (Ctrl-C)") == 1 and "Traceback" not in err, err
    assert not group_alive(proc.pid), "a process of the interrupted compile is left"

