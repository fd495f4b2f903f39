"""The report's own files: written atomically (one writer, ``_files.write_atomic``), the folder
checked before the run, and its integer arguments checked by the one ``positive_int``."""

from __future__ import annotations

import os

import pytest

from robustrack import _files
from robustrack.errors import ParameterError
from robustrack.reports import report_scenario, write_report

SET = ["simulation.t_end=0.2", "simulation.n_points=51"]


def _no_run(*args, **kwargs):
    raise AssertionError("an unwritable report folder must be refused before anything runs")


def test_unwritable_folder_is_refused_before_the_run(tmp_path, monkeypatch):
    (tmp_path / "file").write_text("x", encoding="utf-8")
    monkeypatch.setattr("robustrack.scenarios.tracking_kinds.run_tracking", _no_run)
    with pytest.raises(ParameterError, match=r"`out_dir`.*is a file"):
        report_scenario("triple-pendulum", tmp_path / "file" / "sub", overrides=SET)
    if os.geteuid() != 0:  # root writes anywhere: the permission probe cannot fail for it
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o500)
        with pytest.raises(ParameterError, match="cannot be written"):
            report_scenario("triple-pendulum", locked / "rep", overrides=SET)


@pytest.mark.parametrize("key, bad", [("gamma_samples", -1), ("gamma_samples", 2.0), ("montecarlo", True),
                                      ("montecarlo", -2)])
def test_integer_arguments_use_the_one_validator(tmp_path, key, bad):
    # positive_int's own wording: "`name` must be an integer >= 0 (...); got ..."
    with pytest.raises(ParameterError, match=rf"`{key}` must be an integer >= 0 .*got {bad!r}"):
        report_scenario("triple-pendulum", tmp_path / "r", overrides=SET, **{key: bad})


def test_an_interrupted_write_leaves_no_half_file(tmp_path, monkeypatch):
    """Ctrl-C while report.md is being written: no report.md at all and no temporary file left,
    while the files written before it are complete."""
    real = _files.os.fsync
    seen = []

    def fsync(fd):
        name = os.readlink(f"/proc/self/fd/{fd}") if os.path.exists(f"/proc/self/fd/{fd}") else ""
        seen.append(os.path.basename(name))
        if ".report.md." in name:
            raise KeyboardInterrupt
        return real(fd)

    monkeypatch.setattr(_files.os, "fsync", fsync)
    out = tmp_path / "rep"
    with pytest.raises(KeyboardInterrupt):
        report_scenario("triple-pendulum", out, overrides=SET)
    assert any(".report.html." in s for s in seen) and any(".report.md." in s for s in seen)
    names = sorted(p.name for p in out.iterdir())
    assert "report.md" not in names and "summary.json" not in names
    assert not [n for n in names if n.endswith(".tmp")], names
    html = (out / "report.html").read_text(encoding="utf-8")
    assert html.rstrip().endswith("</html>")  # the file written before is whole
    assert sorted(p.name for p in (out / "figures").iterdir()) and not [
        p for p in (out / "figures").iterdir() if p.name.endswith(".tmp")]


def _interrupt(*args, **kwargs):
    raise KeyboardInterrupt


@pytest.mark.parametrize("existing", [False, True])
def test_ctrl_c_during_the_run_leaves_no_empty_folder_it_made(tmp_path, monkeypatch, existing):
    """Issue 43: Ctrl-C while the scenario runs (before anything is written). A folder (and parents) this run made
    is removed again; a folder that was there before is kept, and so is every file in it."""
    monkeypatch.setattr("robustrack.scenarios.tracking_kinds.run_tracking", _interrupt)
    out = tmp_path / "new" / "rep"
    if existing:
        out.mkdir(parents=True)
    with pytest.raises(KeyboardInterrupt):
        report_scenario("triple-pendulum", out, overrides=SET)
    assert out.is_dir() == existing and (tmp_path / "new").is_dir() == existing
    assert tmp_path.is_dir()


def test_ctrl_c_never_removes_a_folder_holding_a_users_file(tmp_path, monkeypatch):
    """``--overwrite`` into the user's folder (a file of theirs inside), interrupted: everything stays."""
    monkeypatch.setattr("robustrack.scenarios.tracking_kinds.run_tracking", _interrupt)
    out = tmp_path / "rep"
    out.mkdir()
    (out / "notes.txt").write_text("mine", encoding="utf-8")
    with pytest.raises(KeyboardInterrupt):
        report_scenario("triple-pendulum", out, overrides=SET, overwrite=True)
    assert (out / "notes.txt").read_text(encoding="utf-8") == "mine"
