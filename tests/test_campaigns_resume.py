"""A campaign killed with SIGKILL at a random moment resumes with 0 samples lost, 0 run twice and
the same summary; Ctrl-C stops it cleanly (exit 130, how to resume, no traceback).

Real subprocesses (``python -m robustrack.cli montecarlo ...``) on a real SQLite store.
"""

import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time

import pytest

from robustrack.campaigns import load_campaign

N = 100  # the kill lands among 1..60 stored samples; Ctrl-C after 5 leaves 95 to stop
ARGS = ["montecarlo", "duffing-tracking", "--samples", str(N), "--spread", "0.15", "--seed", "4",
        "--set", "simulation.t_end=2", "--workers", "2", "--chunk", "1"]


def _command(store, *extra):
    return [sys.executable, "-m", "robustrack.cli", *ARGS, "--store", str(store), *extra]


def _count(store) -> int:
    try:
        db = sqlite3.connect(f"file:{store}?mode=ro", uri=True, timeout=5)
        try:
            return db.execute("SELECT COUNT(*) FROM samples").fetchone()[0]
        finally:
            db.close()
    except sqlite3.Error:
        return 0


def _wait_for(proc, store, at_least, timeout=300.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if _count(store) >= at_least:
            return True
        if proc.poll() is not None:
            return False
        time.sleep(0.005)
    raise AssertionError("the campaign made no progress")


def _rows(store, ran=True):
    """The stored samples that ran (``ran=False``: those stored as not run)."""
    from robustrack.campaigns.loop import NOT_RUN

    db = sqlite3.connect(store)
    try:
        rows = db.execute("SELECT idx, dm, success, max_abs_e, max_abs_edot, max_abs_Qu, held, error, outcome, "
                          f"session FROM samples WHERE outcome {'NOT ' if ran else ''}IN "
                          f"({', '.join('?' * len(NOT_RUN))})", NOT_RUN)
        return {r[0]: r for r in rows}
    finally:
        db.close()


def _summary(doc):
    return {k: v for k, v in doc.items() if k not in ("wall_s", "cpu_s")}


def _children(pid):
    psutil = pytest.importorskip("psutil")
    try:
        return [p.pid for p in psutil.Process(pid).children(recursive=True)]
    except psutil.NoSuchProcess:
        return []


def _alive(pid) -> bool:
    psutil = pytest.importorskip("psutil")
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def test_sigkill_at_a_random_moment_then_resume(tmp_path):
    store = tmp_path / "killed.sqlite"
    threshold = random.SystemRandom().randint(1, N - 40)
    print(f"killing after {threshold} stored samples")
    proc = subprocess.Popen(_command(store), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        assert _wait_for(proc, store, threshold), "the campaign finished before the kill"
        workers = _children(proc.pid)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == -signal.SIGKILL
    end = time.monotonic() + 60  # they die at once (PR_SET_PDEATHSIG); the margin is for a loaded machine's reaping
    while any(_alive(w) for w in workers) and time.monotonic() < end:
        time.sleep(0.05)
    assert not any(_alive(w) for w in workers), "worker processes outlived the killed campaign"

    before = _rows(store)
    kept = len(before)
    assert kept >= threshold and kept < N
    assert {r[-1] for r in before.values()} == {1}

    done = subprocess.run(_command(store, "--json", str(tmp_path / "resumed.json")), capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr
    after = _rows(store)
    assert sorted(after) == list(range(N))                        # 0 lost
    assert {i: r for i, r in after.items() if r[-1] == 1} == before  # finished samples kept as they were
    assert sum(1 for r in after.values() if r[-1] == 2) == N - kept  # 0 run twice: only the rest ran
    sessions = load_campaign(store).sessions
    assert [s["ran"] for s in sessions] == [kept, N - kept]

    whole = subprocess.run([sys.executable, "-m", "robustrack.cli", *ARGS, "--store", str(tmp_path / "whole.sqlite"),
                            "--json", str(tmp_path / "whole.json")], capture_output=True, text=True, timeout=600)
    assert whole.returncode == 0, whole.stderr
    resumed = json.loads((tmp_path / "resumed.json").read_text())
    uninterrupted = json.loads((tmp_path / "whole.json").read_text())
    assert _summary(resumed) == _summary(uninterrupted)
    print(f"killed with {kept} of {N} stored; resumed ran {N - kept}; summaries equal")


def test_ctrl_c_stops_cleanly_and_says_how_to_resume(tmp_path):
    store = tmp_path / "interrupted.sqlite"
    # Ctrl-C's default disposition in the child, even where the suite runs with SIGINT ignored (a background job)
    proc = subprocess.Popen(_command(store), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        assert _wait_for(proc, store, 5), "the campaign finished before Ctrl-C"
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "run the same command again to resume" in err
    kept = len(_rows(store))
    assert kept >= 5
    # the samples Ctrl-C stopped are stored as not run (outcome "interrupted"), not as failed plants
    stopped = _rows(store, ran=False)
    assert len(stopped) == N - kept and {r[-2] for r in stopped.values()} <= {"interrupted"}
    done = subprocess.run(_command(store), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert len(_rows(store)) == N and not _rows(store, ran=False)
    assert f"{N - kept} run now" in done.stdout
    _ = os  # (kept for readers running this file alone)
