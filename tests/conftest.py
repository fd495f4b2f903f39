"""Test configuration: hypothesis runs derandomized (the same examples on every run,
so CI is reproducible); `HYPOTHESIS_PROFILE=explore` searches with fresh random seeds
and more examples."""

import os

import pytest
from hypothesis import settings

settings.register_profile("default", derandomize=True, deadline=None)
settings.register_profile("explore", derandomize=False, deadline=None, max_examples=500)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


def pytest_configure(config):
    """xdist hands out whole files (``--dist loadfile``) in the order collected, not re-sorted by their number of
    tests (its default, which put the few long tests of a small file last): the order of
    :func:`pytest_collection_modifyitems`, longest first."""
    if hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects by marker
def pytest_collection_modifyitems(config, items):
    """The slow tier of ``tests/tiers.py`` marked ``slow``; a key of it whose file was collected but defines no such
    test is an error (a renamed test would otherwise leave the tier without a word). The heaviest files go first
    (``tiers.HEAVY_FIRST``), in the order xdist hands them out (:func:`pytest_configure`)."""
    from tiers import HEAVY_FIRST, SLOW

    modules = {}
    for item in items:
        path, _, name = item.nodeid.partition("::")
        key = f"{path.rsplit('/', 1)[-1]}::{name}"
        if getattr(item, "module", None) is not None:
            modules[key.split("::", 1)[0]] = item.module
        if key in SLOW or key.split("[", 1)[0] in SLOW:
            item.add_marker(pytest.mark.slow)
    heavy = {name: rank for rank, name in enumerate(HEAVY_FIRST)}
    items.sort(key=lambda item: heavy.get(item.nodeid.partition("::")[0].rsplit("/", 1)[-1], len(heavy)))  # stable
    stale = sorted(k for k in SLOW if k.split("::", 1)[0] in modules
                   and not hasattr(modules[k.split("::", 1)[0]], k.split("::", 1)[1].split("[", 1)[0]))
    if stale:
        raise pytest.UsageError("tests/tiers.py names tests that do not exist (renamed or removed?): "
                                + ", ".join(stale))


def pytest_terminal_summary(terminalreporter, config):
    """Say, at the end of a default-tier run (``-m 'not slow'``, the default), that the slow tier was left out and how
    to run it (with its count where this process collected: xdist's workers deselect on their own)."""
    if config.getoption("markexpr", "").replace('"', "'").strip() != "not slow" or hasattr(config, "workerinput"):
        return
    left = len(terminalreporter.stats.get("deselected", []))
    terminalreporter.write_line(f"the slow tier was left out{f' ({left} tests)' if left else ''}: "
                                "`python -m pytest -q -n 2 -m slow` runs it (tests/tiers.py says what is in it, why)")


def pytest_sessionstart(session):
    """The once-per-machine compile done before any test runs, in the controller (before xdist starts its
    workers) and in two processes at once: the package's kernels (``compile_kernels``, which itself compiles
    the controlled parts in a helper process) and the robots' (``compile_robot_kernels``). Otherwise the
    first compiled test of each worker compiles the same kernels at the same time (both cores, twice the
    work) and the robot kernels are compiled inside some test. Tests of the compile itself use caches of
    their own (``kernels_only_cache``, ``tmp_path``). A failure here is said and left to the tests, which
    compile what they need and fail with the reason."""
    if hasattr(session.config, "workerinput") or session.config.option.collectonly:
        return
    import subprocess
    import sys
    import warnings

    code = "from robustrack.compiled.loop import {0}; {0}()"
    procs = [subprocess.Popen([sys.executable, "-c", code.format(name)], stdin=subprocess.DEVNULL,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
             for name in ("compile_kernels", "compile_robot_kernels")]
    for proc in procs:
        _, err = proc.communicate()
        if proc.returncode != 0:
            warnings.warn(f"preparing the kernel cache before the tests failed ({proc.returncode}): {err[-2000:]}")


@pytest.fixture
def kernels_only_cache(tmp_path):
    """A ``ROBUSTRACK_CACHE_DIR`` holding robustrack's compiled kernels but no plant structure: a machine
    that has run something before meets a new structure (copied from this session's cache, so a test
    does not pay the once-per-machine compile again)."""
    import shutil

    from robustrack.compiled.loop import cache_dir, compile_kernels

    compile_kernels()  # every part of the kernels is in this session's cache
    root = tmp_path / "cache"
    shutil.copytree(cache_dir().parent, root, ignore=shutil.ignore_patterns("rtk_*"))
    return root


@pytest.fixture
def group_alive():
    """``group_alive(pgid, within=60)``: whether any process of a process group is still running after
    waiting up to ``within`` seconds for the group to end (signal 0 sends nothing): no process of an
    interrupted command may be left behind. It returns as soon as the group is gone, so the wait costs
    nothing on a quiet machine and a loaded one cannot fail it by being slow to reap an exiting process."""
    import time

    def exists(pgid: int) -> bool:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return False
        return True

    def alive(pgid: int, within: float = 60.0) -> bool:
        deadline = time.monotonic() + within
        while exists(pgid) and time.monotonic() < deadline:
            time.sleep(0.05)
        return exists(pgid)

    return alive


#: What a base install (``pip install -e .``, no extras) lacks that a dev install has: the packages of the
#: ``[dev]`` and ``[dask]`` extras a campaign could lean on (cloudpickle arrives with dask).
NOT_IN_A_BASE_INSTALL = ("cloudpickle", "dask", "distributed")


@pytest.fixture
def base_install_env(tmp_path):
    """Environment variables for a subprocess that runs as on a base install: a ``sitecustomize`` first on
    ``PYTHONPATH`` makes the packages of :data:`NOT_IN_A_BASE_INSTALL` unimportable (``import cloudpickle``
    raises ImportError, as where it was never installed), in that process and in the ones it starts."""
    path = os.pathsep.join(p for p in (str(base_install_folder(tmp_path)), os.environ.get("PYTHONPATH", "")) if p)
    return dict(os.environ, PYTHONPATH=path, MPLBACKEND="Agg", PYTHONIOENCODING="utf-8")


def base_install_folder(parent):
    """``parent/base_install`` holding the ``sitecustomize.py`` that makes :data:`NOT_IN_A_BASE_INSTALL`
    unimportable (first on ``PYTHONPATH``: in that process and in the ones it starts)."""
    folder = parent / "base_install"
    folder.mkdir(exist_ok=True)
    (folder / "sitecustomize.py").write_text(
        "import sys\n" + "".join(f"sys.modules[{name!r}] = None\n" for name in NOT_IN_A_BASE_INSTALL),
        encoding="utf-8")
    return folder


@pytest.fixture(scope="session")
def docs_site(tmp_path_factory):
    """The documentation site built once (``sphinx -W``: a warning fails it) from a copy of ``docs/``, with the
    gallery executing every script of ``examples/`` (short settings; their files go to ``examples_out``) as on a
    base install (:data:`NOT_IN_A_BASE_INSTALL` unimportable: a campaign whose loop pickles only with
    cloudpickle fails the build as it fails for a new user).

    Returns a namespace: ``returncode``, ``log`` (Sphinx's output), ``html`` (the built site), ``examples_out``,
    ``written_into_examples`` (files the build left in ``examples/``: none is allowed).
    Tests that use it carry ``pytest.mark.xdist_group("docs-site")``; the build is done once per test run
    (a lock in the run's shared base folder), whichever worker asks first.
    """
    import fcntl
    import json
    import shutil
    import subprocess
    import sys
    from pathlib import Path
    from types import SimpleNamespace

    root = Path(__file__).resolve().parents[1]
    # one build per test run, whichever worker asks first: the run's base folder (shared by the xdist workers)
    # holds the site and a lock; a second worker waits for the first's build and reads it (the xdist_group
    # marks keep the site's tests on one worker; this holds even where the scheduler splits them)
    shared = tmp_path_factory.getbasetemp()
    shared = shared.parent if os.environ.get("PYTEST_XDIST_WORKER") else shared
    work = shared / "docs-site"
    with open(shared / "docs-site.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        done = work / "result.json"
        if done.exists():
            saved = json.loads(done.read_text(encoding="utf-8"))
            return SimpleNamespace(html=work / "html", examples_out=work / "examples-out", **saved)
        work.mkdir(exist_ok=True)
        src = work / "src"
        shutil.copytree(root / "docs", src / "docs", ignore=shutil.ignore_patterns("_build", "api", "gallery",
                                                                                "sg_execution_times.rst"))
        shutil.copy(root / "CHANGELOG.md", src / "CHANGELOG.md")
        out = SimpleNamespace(html=work / "html", examples_out=work / "examples-out")
        env = dict(os.environ, ROBUSTRACK_DOCS_ROOT=str(root), ROBUSTRACK_EXAMPLES_OUT=str(out.examples_out),
                   ROBUSTRACK_EXAMPLES_FAST="1", MPLBACKEND="Agg", PYTHONIOENCODING="utf-8",
                   PYTHONPATH=os.pathsep.join([str(base_install_folder(work)), str(root),
                                                   *filter(None, [os.environ.get("PYTHONPATH")])]))
        before = sorted(p.name for p in (root / "examples").iterdir())
        proc = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html", str(src / "docs"),
                               str(out.html), "-d", str(work / "doctrees")], cwd=work, env=env, capture_output=True,
                              text=True, encoding="utf-8", timeout=1200)
        out.returncode, out.log = proc.returncode, proc.stdout + proc.stderr
        out.written_into_examples = sorted(set(p.name for p in (root / "examples").iterdir()) - set(before))
        done.write_text(json.dumps({"returncode": out.returncode, "log": out.log,
                                    "written_into_examples": out.written_into_examples}), encoding="utf-8")
        return out


#: A python-kind scenario's factory: a user's own symbolic plant, a one-link pendulum from its energies (m, L, g),
#: over 0.3 s (31 output points); the tests of named uncertain parameters share it (one structure compiled).
PENDULUM = '''
import sympy as sp
from robustrack.controllers import GSS
from robustrack.plants.lagrangian import LagrangianPlant
from robustrack.tracking.problem import TrackingProblem


def problem():
    th, om, m, L, g = sp.symbols("theta omega m L g")
    plant = LagrangianPlant.from_energies([th], m * L**2 * om**2 / 2, -m * g * L * sp.cos(th), qd=[om],
                                          params={m: 1.5, L: 1.0, g: 9.81})
    return TrackingProblem(plant, None, GSS(K=5.0, gamma_prime=10.0), [0.0], [2.0], (0.0, 0.3), n_points=31)
'''


@pytest.fixture(scope="session")
def pendulum_scenario(tmp_path_factory):
    """``make(rest)``: a path to a python-kind scenario of :data:`PENDULUM` with ``rest`` (TOML) appended; one
    factory file for the session, so its plant is built once."""
    import itertools

    folder = tmp_path_factory.mktemp("pendulum")
    (folder / "pendulum.py").write_text(PENDULUM)
    count = itertools.count()

    def make(rest: str) -> str:
        path = folder / f"pendulum{next(count)}.toml"
        path.write_text('[scenario]\nname = "pendulum"\nkind = "python"\n\n[problem]\nfactory = "pendulum.py:problem"'
                        '\n\n' + rest)
        return str(path)

    return make
