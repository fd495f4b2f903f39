"""Closed-loop campaigns: Monte Carlo, store, determinism, bad input, worst case, tuning, CLI.

The scenario is duffing-tracking (2 coordinates) over 0.5 s: a sample takes a few
milliseconds once the kernels are loaded, so the campaigns here are real but small.
The kill/resume and Ctrl-C tests run real subprocesses; the Dask test a real
LocalCluster (tests/test_campaigns_dask.py).
"""

import json
import os
import sqlite3
import stat

import numpy as np
import pytest

from robustrack.campaigns import (CampaignStore, ParameterUncertainty, load_campaign, monte_carlo, summarize,
                                  tune_compensator, worst_case)
from robustrack.campaigns.montecarlo import check_samples
from robustrack.cli import main
from robustrack.errors import ParameterError
from robustrack.scenarios.campaign import ScenarioLoop, resolve_campaign_scenario, run_montecarlo
from robustrack.uncertainty import sample_parameters

SHORT = ["simulation.t_end=0.5"]


def _summary(result):
    doc = result.summary() if hasattr(result, "summary") else dict(result)
    return {k: v for k, v in doc.items() if k not in ("wall_s", "cpu_s")}


@pytest.fixture(scope="module")
def duffing():
    sc = resolve_campaign_scenario("duffing-tracking", overrides=SHORT)
    return sc, ScenarioLoop(sc)


def test_draws_are_the_gamma_draws_and_depend_on_seed_and_index_only(duffing):
    sc, factory = duffing
    loop = factory()
    unc = ParameterUncertainty(("m1", "m2"), spread=0.1, seed=7)
    d10, d3 = unc.draw(loop.nominal, 10), unc.draw(loop.nominal, 3)
    nominal = np.array([loop.nominal.m1, loop.nominal.m2])
    assert np.array_equal(d10[:3], d3)  # a prefix: sample i's δ does not depend on N
    assert np.array_equal(d10, sample_parameters(nominal, 10, spread=0.1, seed=7).values - nominal)
    assert np.all(np.abs(d10) <= 0.1 * nominal)
    actual = unc.actual(loop.nominal, d10[4], 4)
    assert (actual.m1, actual.m2) == (loop.nominal.m1 + d10[4, 0], loop.nominal.m2 + d10[4, 1])


def test_store_is_sqlite_wal_one_row_per_sample_and_resume_runs_nothing(duffing, tmp_path):
    path = tmp_path / "c.sqlite"
    first = run_montecarlo("duffing-tracking", 6, 0.1, 1, overrides=SHORT, store=path, workers=1, progress=None)
    assert first.complete and first.ran == 6
    with open(path, "rb") as fh:
        assert fh.read(16) == b"SQLite format 3\x00"
    db = sqlite3.connect(path)
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert db.execute("SELECT COUNT(*), COUNT(DISTINCT idx) FROM samples").fetchone() == (6, 6)
    db.close()
    again = run_montecarlo("duffing-tracking", 6, 0.1, 1, overrides=SHORT, store=path, workers=1, progress=None)
    assert again.ran == 0 and _summary(again) == _summary(first)
    loaded = load_campaign(path)
    assert [r.results() for r in loaded.records] == [r.results() for r in first.records]
    assert _summary(loaded) == _summary(first)
    doc = first.summary()
    for key in ("scenario", "compensator", "samples", "completed", "failed", "spread", "seed", "held_fraction",
                "max_abs_e", "max_abs_edot", "worst", "wall_s", "cpu_s"):
        assert key in doc
    assert set(doc["max_abs_e"]) == {"median", "p95", "p99", "max"} == set(doc["max_abs_edot"])
    assert set(doc["worst"]) >= {"sample", "dm", "max_abs_e"}
    assert doc["scenario"] == "duffing-tracking" and doc["compensator"] == "gss" and doc["held_fraction"] == 1.0


def test_same_results_whatever_the_workers_and_chunks(duffing):
    sc, factory = duffing
    unc = ParameterUncertainty(("m1", "m2"), spread=0.2, seed=3)
    one = monte_carlo(factory, unc, 8, workers=1, progress=None)
    two = monte_carlo(factory, unc, 8, workers=2, chunk=1, progress=None)
    three = monte_carlo(factory, unc, 8, workers=2, chunk=3, progress=None)
    assert [r.results() for r in one.records] == [r.results() for r in two.records] == \
        [r.results() for r in three.records]
    assert _summary(one) == _summary(two) == _summary(three)


def _fail_heavy(rng, dm):
    if dm[0] > 0:
        raise RuntimeError("refused on purpose")
    return None


def test_failed_samples_are_recorded_counted_and_named(duffing):
    sc, factory = duffing
    unc = ParameterUncertainty(("m1", "m2"), spread=0.1, seed=2, disturbance=_fail_heavy)
    result = monte_carlo(factory, unc, 6, workers=1, progress=None)
    doc = result.summary()
    bad = [r for r in result.records if r.dm[0] > 0]
    assert bad and doc["completed"] == 6 and doc["failed"] == len(bad)
    assert {f["sample"] for f in doc["failures"]} == {r.index for r in bad}
    assert all("refused on purpose" in f["error"] for f in doc["failures"])
    assert doc["failure_kinds"] == {"RuntimeError": len(bad)}
    assert doc["held_fraction"] == pytest.approx((6 - len(bad)) / 6)


def test_summary_quantiles_and_worst():
    from robustrack.campaigns import SampleRecord

    recs = [SampleRecord(i, (0.01 * i,), True, float(v), 2.0 * v, 1.0, v < 4, None) for i, v in
            enumerate([3.0, 1.0, 5.0, 5.0, 2.0])]
    doc = summarize(recs, 5)
    assert doc["max_abs_e"] == {"median": 3.0, "p95": 5.0, "p99": 5.0, "max": 5.0}
    assert doc["worst"]["sample"] == 2  # the lowest index on a tie
    assert doc["held"] == 3 and doc["held_fraction"] == pytest.approx(0.6)


# ------------------------------------------------------------------------- bad input
@pytest.mark.parametrize("argv, flag", [
    (["--samples", "0"], "--samples"),
    (["--samples", "-3"], "--samples"),
    (["--samples", "99999999999"], "--samples"),
    (["--spread", "1"], "--spread"),
    (["--spread", "-0.1"], "--spread"),
    (["--spread", "nan"], "--spread"),
    (["--workers", "0"], "--workers"),
    (["--scheduler", "127.0.0.1:8786"], "--scheduler"),
    (["--scheduler", "tcp://127.0.0.1:1"], "--scheduler"),
    (["--seed", "-1"], "--seed"),
])
def test_bad_input_is_refused_before_any_work_naming_the_flag(argv, flag, capsys, tmp_path):
    store = tmp_path / "s.sqlite"
    code = main(["montecarlo", "duffing-tracking", "--store", str(store), *argv])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("robustrack: error:") and f"`{flag}`" in err
    assert "Traceback" not in err
    assert not store.exists() or store.stat().st_size == 0  # nothing was run


def test_bad_stores_are_refused(capsys, tmp_path):
    text = tmp_path / "notes.sqlite"
    text.write_text("not a database\n")
    assert main(["montecarlo", "duffing-tracking", "--store", str(text)]) == 2
    assert "is not an SQLite file" in capsys.readouterr().err

    other = tmp_path / "other.sqlite"
    db = sqlite3.connect(other)
    db.execute("CREATE TABLE t (x)")
    db.commit()
    db.close()
    assert main(["montecarlo", "duffing-tracking", "--store", str(other)]) == 2
    assert "not a robustrack campaign store" in capsys.readouterr().err

    ro = tmp_path / "ro.sqlite"
    assert main(["montecarlo", "duffing-tracking", "--samples", "2", "--workers", "1", "--store", str(ro),
                 *sum((["--set", s] for s in SHORT), [])]) == 0
    capsys.readouterr()
    os.chmod(ro, stat.S_IRUSR | stat.S_IRGRP)
    try:
        assert main(["montecarlo", "duffing-tracking", "--samples", "2", "--store", str(ro)]) == 2
        assert "read-only" in capsys.readouterr().err
        assert main(["montecarlo", "--store", str(ro), "--summary"]) == 0  # reading is fine
        assert "completed 2 / 2" in capsys.readouterr().out
    finally:
        os.chmod(ro, stat.S_IRUSR | stat.S_IWUSR)

    assert main(["montecarlo", "duffing-tracking", "--store", str(tmp_path)]) == 2
    assert "is a folder" in capsys.readouterr().err
    assert main(["montecarlo", "--summary"]) == 2
    assert "--store" in capsys.readouterr().err


def test_a_store_of_other_settings_is_refused_with_the_difference(capsys, tmp_path):
    store = str(tmp_path / "c.sqlite")
    base = ["montecarlo", "duffing-tracking", "--samples", "3", "--workers", "1", "--store", store, "--set", SHORT[0]]
    assert main(base) == 0
    capsys.readouterr()
    for extra, what in ((["--seed", "5"], "uncertainty.seed"), (["--spread", "0.2"], "uncertainty.spread"),
                        (["--compensator", "gd"], "compensator"), (["--set", "simulation.t_end=0.4"], "t_end")):
        assert main(base + extra) == 2
        err = capsys.readouterr().err
        assert "other settings" in err and what in err and "nothing was run" in err
    assert main(["montecarlo", "duffing-tracking", "--samples", "4", "--workers", "1", "--store", store,
                 "--set", SHORT[0]]) == 2
    assert "samples" in capsys.readouterr().err
    assert len(load_campaign(store).records) == 3


def test_check_samples_refuses_what_memory_cannot_hold():
    with pytest.raises(ParameterError, match="too many"):
        check_samples(10**12)
    assert check_samples(1000) == 1000


# ------------------------------------------------------------------------- worst case, tuning
def test_worst_case_beats_the_monte_carlo_worst_and_run_reproduces_it(capsys, tmp_path):
    store = str(tmp_path / "c.sqlite")
    sets = ["--set", SHORT[0]]
    assert main(["montecarlo", "duffing-tracking", "--samples", "10", "--spread", "0.2", "--workers", "2",
                 "--store", store, "--json", str(tmp_path / "mc.json"), *sets]) == 0
    mc = json.loads((tmp_path / "mc.json").read_text())
    assert main(["worst-case", "duffing-tracking", "--spread", "0.2", "--store", store, "--workers", "2",
                 "--json", str(tmp_path / "wc.json"), *sets]) == 0
    wc = json.loads((tmp_path / "wc.json").read_text())
    assert set(wc) >= {"scenario", "compensator", "spread", "worst", "evaluations", "wall_s"}
    assert set(wc["worst"]) >= {"dm", "max_abs_e", "held"}
    assert wc["evaluations"] <= 10  # the Monte Carlo's budget
    assert wc["worst"]["max_abs_e"] >= mc["worst"]["max_abs_e"]
    dm = "[" + ", ".join(repr(x) for x in wc["worst"]["dm"]) + "]"
    assert main(["run", "duffing-tracking", *sets, "--set", f"uncertainty.dm={dm}", "--json",
                 str(tmp_path / "run.json")]) == 0
    run = json.loads((tmp_path / "run.json").read_text())
    assert run["metrics"]["max_abs_e"] == pytest.approx(wc["worst"]["max_abs_e"], rel=1e-12)
    capsys.readouterr()


def test_worst_case_api_is_deterministic_and_within_budget(duffing):
    sc, factory = duffing
    unc = ParameterUncertainty(("m1", "m2"), spread=0.2, seed=0)
    a = worst_case(factory, unc, budget=12, workers=1)
    b = worst_case(factory, unc, budget=12, workers=2)
    assert a.evaluations <= 12 and a.worst.results()[1:] == b.worst.results()[1:]
    lo, hi = unc.box(factory().nominal)
    assert np.all(np.asarray(a.worst.dm) >= lo) and np.all(np.asarray(a.worst.dm) <= hi)


def test_tune_meets_the_target_promise_with_less_gain_than_needed(capsys, tmp_path):
    from robustrack.controllers import GSS, GD

    tuned = tune_compensator(GSS(gamma_prime=10.0), gamma=10.0, target_e=1e-4)
    assert tuned.bounds.e <= 1e-4 * (1 + 1e-9) and tuned.params["gamma_prime"] == 10.0
    with pytest.raises(ParameterError, match="no bound on"):
        tune_compensator(GD(), gamma=10.0, target_e=1e-4)
    assert main(["tune", "duffing-tracking", "--compensator", "gss", "--target-e", "1e-4", "--spread", "0.1",
                 "--gamma", "10", "--samples", "4", "--workers", "1", "--set", SHORT[0], "--json",
                 str(tmp_path / "t.json")]) == 0
    doc = json.loads((tmp_path / "t.json").read_text())
    assert doc["tuned"]["bounds"]["e"] <= 1e-4 * (1 + 1e-9)
    assert doc["verification"]["completed"] == 4 and "note" in doc
    assert any(s.startswith("compensator.gss.K=") for s in doc["tuned"]["set"])
    capsys.readouterr()


def test_store_settings_differences_are_named(tmp_path):
    path = tmp_path / "s.sqlite"
    with CampaignStore.open(path, {"a": 1, "b": {"c": 2}}):
        pass
    with pytest.raises(ParameterError, match=r"b\.c: 2 there, 3 here"):
        CampaignStore.open(path, {"a": 1, "b": {"c": 3}})


def _crash_worker(rng, dm):
    if dm[0] > 0.2:  # kills the worker process running this sample (never the campaign's: workers=2)
        os._exit(3)
    return None


def test_a_sample_that_kills_its_worker_is_recorded_and_the_others_finish(duffing):
    # 6 samples in two chunks of 3, each chunk with one culprit (samples 0 and 3) and two others that finish
    # when run alone: every worker death (a new pool each, the cost of this test) is a case the test checks
    sc, factory = duffing
    unc = ParameterUncertainty(("m1", "m2"), spread=0.2, seed=9, disturbance=_crash_worker)
    deltas = unc.draw(factory().nominal, 6)
    culprits = {i for i in range(6) if deltas[i, 0] > 0.2}
    assert all(len(culprits & {k, k + 1, k + 2}) == 1 for k in (0, 3)), culprits
    result = monte_carlo(factory, unc, 6, workers=2, chunk=3, progress=None)
    doc = result.summary()
    assert doc["completed"] == 6
    assert {f["sample"] for f in doc["failures"]} == culprits
    assert all("WorkerDied" in f["error"] for f in doc["failures"])
    clean = monte_carlo(factory, ParameterUncertainty(("m1", "m2"), spread=0.2, seed=9), 6, workers=1, progress=None)
    assert [r.results() for r in result.records if r.index not in culprits] == \
        [r.results() for r in clean.records if r.index not in culprits]


@pytest.mark.parametrize("sets", [[], ["compensator.type='gd'"], ["compensator.type='smc'", "compensator.sample_period=0.01"]])
def test_a_sample_keeps_the_metrics_of_a_full_run(sets):
    """track_peaks (what a campaign sample runs) gives the peaks, the assumptions and the verdicts of track()'s
    whole assessment: the same solve and the same points (every accepted step and the grid), measured on
    compiled kernels (robustrack.compiled.along) instead of numpy — the nominal at the grid kept with the run
    after the first sample, at the steps the one the BDF evaluated. The same formulas in another order: equal
    to rounding (a few ulps times cond(M) ~ 1e2, tests/test_along.py), so rtol 1e-12; the verdicts exactly."""
    from robustrack.tracking.simulate import track, track_peaks

    sc = resolve_campaign_scenario("duffing-tracking", overrides=SHORT + sets)
    loop = ScenarioLoop(sc)()
    run = loop.nominal_run()
    unc = ParameterUncertainty(("m1", "m2"), spread=0.3, seed=5)
    for dm in unc.draw(loop.nominal, 3):
        actual = unc.actual(loop.nominal, dm)
        full = track(run, actual).metrics
        peaks = track_peaks(run, actual)
        assert peaks.success
        for k in ("max_abs_e", "max_abs_edot", "max_abs_Qu", "max_norm_dq", "max_norm_Mtilde", "max_norm_P"):
            want, got = getattr(full, k), getattr(peaks, k)
            assert (got is None) == (want is None), k
            if want is not None:
                assert got == pytest.approx(want, rel=1e-12, abs=0.0), k
        assert (peaks.bounds_held, peaks.assumptions_held) == (full.bounds_held, full.assumptions_held)


@pytest.mark.parametrize("sets", [[], ["compensator.type='gd'"], ["compensator.type='smc'", "compensator.sample_period=0.01"]])
def test_a_sample_on_numpy_keeps_the_metrics_of_a_full_run_bit_for_bit(sets):
    """On the numpy loop, track_peaks measures through the loop's ``measure`` (the one home of a sample's
    measurement on each backend, robustrack.tracking.backend.Loop) with the functions assemble uses on the same
    points (robustrack.tracking.along): the peaks, the assumptions (GD's P too) and the verdicts of track()'s
    whole assessment, exactly — the row norms' maxima are the maxima themselves, no rounding in between."""
    from robustrack.tracking.numpy_loop import NumpyLoop
    from robustrack.tracking.simulate import prepare, track, track_peaks

    sc = resolve_campaign_scenario("duffing-tracking", overrides=SHORT + sets)
    run = ScenarioLoop(sc)().nominal_run().problem.replace(backend="numpy").nominal_run()
    unc = ParameterUncertainty(("m1", "m2"), spread=0.3, seed=5)
    for dm in unc.draw(run.nominal, 2):
        actual = unc.actual(run.nominal, dm)
        assert isinstance(prepare(run, actual).loop, NumpyLoop)
        full = track(run, actual).metrics
        peaks = track_peaks(run, actual)
        assert peaks.success
        for k in ("max_abs_e", "max_abs_edot", "max_abs_Qu", "max_norm_dq", "max_norm_Mtilde", "max_norm_P"):
            assert getattr(peaks, k) == getattr(full, k), k
        assert (peaks.bounds_held, peaks.assumptions_held) == (full.bounds_held, full.assumptions_held)
