"""``robustrack run NAME --save PATH.npz``: the trajectories for your own plots (scenarios.runner)."""

import numpy as np
import pytest

from robustrack.cli import main
from robustrack.errors import ParameterError
from robustrack.scenarios import runner
from robustrack.scenarios.runner import check_save_path, save_trajectories


def test_chaplygin_skate_trajectories_match_kozlovs_closed_form(tmp_path, capsys):
    """x = sin²(ωt)/(2ω²), y = (ωt − ½ sin 2ωt)/(2ω²), φ = ωt over 10 s, ω = 1 (K): within 1e-7
    (the scenario solves with rtol 1e-10, atol 1e-12)."""
    out = tmp_path / "out.npz"
    assert main(["run", "chaplygin-skate", "--save", str(out)]) == 0
    assert f"wrote {out}" in capsys.readouterr().out
    with np.load(out, allow_pickle=False) as d:
        assert sorted(d.files) == ["names", "q", "qd", "scenario_toml", "t"]
        t, q, names = d["t"], d["q"], d["names"]
    assert names.tolist() == ["x", "y", "phi"]
    assert t[0] == 0.0 and t[-1] == 10.0 and q.shape == (t.size, 3)
    w = 1.0
    closed = np.stack([np.sin(w * t) ** 2 / (2 * w**2), (w * t - 0.5 * np.sin(2 * w * t)) / (2 * w**2), w * t], -1)
    assert np.max(np.abs(q - closed)) < 1e-7


def test_tracking_run_saves_errors_and_forces(tmp_path):
    out = tmp_path / "new" / "folder" / "tp.npz"
    out.parent.mkdir(parents=True)  # a file option never makes folders (test_bad_input: ..._missing_folder_...)
    assert main(["run", "triple-pendulum-underactuated", "--set", "simulation.t_end=0.2", "--save", str(out)]) == 0
    with np.load(out, allow_pickle=False) as d:
        arrays = {k: d[k] for k in d.files}
    assert set(arrays) == {"t", "q", "qd", "qc", "qcd", "e", "edot", "Qc", "Qu", "qa", "qad", "tau", "names",
                           "scenario_toml"}
    from robustrack.scenarios.scenario import scenario_from_toml

    # the run records its scenario with the --set applied: it reads back to the same configuration
    recorded = scenario_from_toml(str(arrays["scenario_toml"]), "tp.npz")
    assert recorded.name == "triple-pendulum-underactuated" and recorded.config["simulation"]["t_end"] == 0.2
    assert arrays["names"].tolist() == ["theta1", "theta2", "theta3"]
    np.testing.assert_array_equal(arrays["e"], arrays["qc"] - arrays["q"])
    np.testing.assert_array_equal(arrays["edot"], arrays["qcd"] - arrays["qd"])
    assert arrays["tau"].shape == (arrays["t"].size, 2)


def test_bad_paths_are_refused_before_the_run(tmp_path, monkeypatch, capsys):
    def never(*a, **k):
        raise AssertionError("the scenario ran")

    monkeypatch.setattr(runner, "run_constrained_scenario", never)
    (tmp_path / "afile").write_text("x")
    (tmp_path / "adir.npz").mkdir()
    for path, why in ((tmp_path / "out.txt", "must end in .npz"), (tmp_path / "out", "no suffix"),
                      (tmp_path / "afile" / "out.npz", "is a file"), (tmp_path / "adir.npz", "is a folder")):
        assert main(["run", "chaplygin-skate", "--save", str(path)]) == 2
        err = capsys.readouterr().err
        assert "`--save`" in err and why in err and "Nothing was run" in err
    with pytest.raises(ParameterError, match="`out` 'x.csv' must end in .npz"):
        check_save_path("x.csv", name="out")


def test_save_is_atomic(tmp_path, monkeypatch):
    """Written beside and renamed into place: a failure leaves the old file whole and no temporary behind."""
    class Run:
        coordinates = ("a",)
        t = np.linspace(0.0, 1.0, 5)
        q = qd = np.zeros((5, 1))

    path = tmp_path / "r.npz"
    save_trajectories(path, Run())
    before = path.read_bytes()
    monkeypatch.setattr(np, "savez", lambda fh, **arrays: (fh.write(b"half"), 1 / 0))
    with pytest.raises(ZeroDivisionError):
        save_trajectories(path, Run())
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.npz"]
    monkeypatch.undo()
    Run.q = np.ones((5, 1))
    save_trajectories(path, Run())
    with np.load(path) as d:
        assert d["q"].sum() == 5.0 and d["names"].tolist() == ["a"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.npz"]
