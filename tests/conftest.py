"""Test configuration: hypothesis runs derandomized (the same examples on every run,
so CI is reproducible); `HYPOTHESIS_PROFILE=explore` searches with fresh random seeds
and more examples."""

import os

import pytest
from hypothesis import settings

settings.register_profile("default", derandomize=True, deadline=None)
settings.register_profile("explore", derandomize=False, deadline=None, max_examples=500)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


@pytest.fixture
def kernels_only_cache(tmp_path):
    """A ``ROBUSTRACK_CACHE_DIR`` holding robustrack's compiled kernels but no plant structure: a machine
    that has run something before meets a new structure (copied from this session's cache, so a test
    does not pay the once-per-machine compile again)."""
    import shutil

    from robustrack.tracking.compiled import cache_dir, compile_kernels

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
    folder = tmp_path / "base_install"
    folder.mkdir()
    (folder / "sitecustomize.py").write_text(
        "import sys\n" + "".join(f"sys.modules[{name!r}] = None\n" for name in NOT_IN_A_BASE_INSTALL),
        encoding="utf-8")
    path = os.pathsep.join(p for p in (str(folder), os.environ.get("PYTHONPATH", "")) if p)
    return dict(os.environ, PYTHONPATH=path, MPLBACKEND="Agg", PYTHONIOENCODING="utf-8")
