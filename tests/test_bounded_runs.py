"""Issue 23 item 3: every run ends in bounded time and says why, keeping what it reached.

The limits (:mod:`robustrack.tracking.defaults`: ``MAX_EVALUATIONS``, ``STATE_LIMIT``) are checked between
accepted steps, so a run inside them steps exactly as before (the 11 reference runs are bit-identical,
``/work/hashruns.sh``) — and the limits are lowered here so that a real diverging loop reaches them in a
second instead of half a minute. Truth: the evaluation counts the integrators report (``stats.nfev``) and
the times they reached; a run stopped at a limit must have used at most the limit plus one step's worth
(DOP853: 16 evaluations, RK45: 6 per attempt; BDF: one Newton solve, ≤ 4 + a Jacobian).
"""

import math

import numpy as np
import pytest

from robustrack.errors import SolverError
from robustrack.tracking import defaults


@pytest.fixture(scope="module")
def pendulum():
    from robustrack.scenarios import load_scenario

    return load_scenario("triple-pendulum", ["simulation.t_end=3"]).build()


@pytest.fixture(scope="module")
def duffing():
    from robustrack.scenarios import load_scenario

    return load_scenario("duffing-tracking", ["simulation.t_end=0.5"]).build()


def _track(pb, t_end, **kw):
    from robustrack.tracking import simulate_tracking

    return simulate_tracking(pb.nominal, pb.actual, pb.constraint, pb.compensator, pb.q0, pb.qd0, (0.0, t_end), **kw)


def test_a_hold_period_the_loop_cannot_survive_ends_named_with_the_partial_run(pendulum, monkeypatch):
    """Triple pendulum, u held 1 s: before issue 23 no answer within 120 s. Now the evaluation limit ends it
    inside the second hold interval (the first one, u from the exact initial error, is survived)."""
    monkeypatch.setattr(defaults, "MAX_EVALUATIONS", 300_000)
    monkeypatch.setattr(defaults, "HOLD_STEP_RATIO", math.inf)  # the evaluation limit alone (the time scale: below)
    with pytest.raises(SolverError, match="does not survive the hold period 1 s") as info:
        _track(pendulum, 3.0, sample_period=1.0)
    assert "evaluation limit" in str(info.value)  # ended by the bound on work, not by a wall clock
    partial = info.value.partial
    assert partial is not None and not partial.success
    assert partial.info["solvers"]["controlled"]["nfev"] <= 300_000 + 6 * 64  # the limit, plus the attempts of one step
    # reached: the last output time (grid step 3 s / 1000) at or before the failing interval's start, 1 s
    assert 1.0 - 3e-3 <= info.value.t_reached <= 1.0 and partial.t[-1] == info.value.t_reached
    assert np.all(np.isfinite(partial.e))  # what was reached is kept, finite


@pytest.mark.parametrize("backend", ["compiled", "numpy"])
def test_a_diverging_hold_is_stopped_on_its_time_scale_in_seconds_not_at_the_evaluation_limit(pendulum, backend):
    """Item 3 of issue 32: the triple pendulum with u held 0.5 s (the issue's campaign: 27 s of CPU per sample,
    each ending at 20 million evaluations or a 1e-14 step). Now the hold intervals from 0.5 s, whose motion
    runs on a time scale 1000 times shorter than the nominal's, end the run as diverging: the evaluations used
    are those of the stretches before it plus that stretch's budget (:func:`hold_budget`), and the partial run
    is kept. (Its CPU time: ``benchmarks/bench_divergence.py``.)"""
    from robustrack.tracking.integrate import hold_budget

    kw = {} if backend == "compiled" else {"backend": "numpy"}
    with pytest.raises(SolverError, match=r"RK45 stopped in the hold intervals from t = 0.5 s to 1 s: diverging "
                                          r"\(.*does not survive the hold period 0.5 s") as info:
        _track(pendulum, 2.0, sample_period=0.5, **kw)
    partial = info.value.partial
    used = partial.info["solvers"]["controlled"]["nfev"]
    run = pendulum.replace(t_span=(0.0, 2.0), t_eval=None, n_points=201).nominal_run()
    # the first interval (u from the exact initial error) is survived; the second spends its budget, plus at
    # most one step's attempts (6 each) past it
    budget = hold_budget(run.solution, 0.5, 1.0, 1)
    assert budget < used <= budget + 6 * 64 + hold_budget(run.solution, 0.0, 0.5, 1), (used, budget)
    assert used < defaults.MAX_EVALUATIONS / 50
    assert partial is not None and 0.5 - 2e-2 <= info.value.t_reached <= 0.5 and np.all(np.isfinite(partial.e))


@pytest.mark.parametrize("scenario, sets, h, backend", [
    ("triple-pendulum", ["simulation.t_end=0.3", "compensator.sample_period=0.001"], 1e-3, "compiled"),  # reference run
    ("triple-pendulum", ["simulation.t_end=1", "compensator.type=smc"], 1e-3, "compiled"),  # a sign law, held 1 ms
    ("duffing-tracking", ["simulation.t_end=1", "compensator.sample_period=0.0001"], 1e-4, "compiled"),
    ("duffing-tracking", ["simulation.t_end=0.1", "compensator.sample_period=0.0001"], 1e-4, "numpy"),
])
def test_sampled_runs_that_track_are_never_stopped_and_unchanged(scenario, sets, h, backend, monkeypatch):
    """The other side of the criterion: sampled runs that track (the reference runs' 1-ms hold, a held sign law)
    finish as they did without it — bit-identical: the budget is an evaluation limit checked between steps —
    using under a tenth of their budget. (Longer holds of these loops diverge, and are stopped: with the
    criterion off, the triple pendulum held 10 ms ran into the 20-million evaluation limit at 0.04 s.)"""
    from robustrack.scenarios import load_scenario
    from robustrack.tracking.integrate import hold_budget

    pb = load_scenario(scenario, sets).build()
    pb = pb if backend == "compiled" else pb.replace(backend="numpy")
    run = pb.nominal_run()
    with_criterion = pb.track(run)
    monkeypatch.setattr(defaults, "HOLD_STEP_RATIO", math.inf)
    without = pb.track(run)
    assert with_criterion.success and with_criterion.metrics.max_abs_e < 0.1
    for name in ("t", "qc", "qcd", "e"):
        np.testing.assert_array_equal(getattr(with_criterion, name), getattr(without, name))
    intervals = round((pb.t_span[1] - pb.t_span[0]) / h)
    used = with_criterion.info["solvers"]["controlled"]["nfev"]
    assert used < 0.1 * hold_budget(run.solution, pb.t_span[0], pb.t_span[1], intervals), used


def test_the_nominal_dop853_stops_at_the_evaluation_limit(duffing, monkeypatch):
    monkeypatch.setattr(defaults, "MAX_EVALUATIONS", 20)  # the 0.5-s nominal run needs ~100
    with pytest.raises(SolverError, match="nominal system: DOP853 failed at t = .*evaluation limit: 20 "):
        _track(duffing, 0.5)


def test_the_controlled_bdf_stops_at_the_evaluation_limit_and_keeps_the_partial_run(duffing, monkeypatch):
    full = _track(duffing, 0.5)
    used = {k: full.info["solvers"][k]["nfev"] for k in ("nominal", "controlled", "uncompensated")}
    limit = used["controlled"] // 2  # each integration has its own budget: only the controlled loop needs more
    assert full.success and used["nominal"] < limit and used["uncompensated"] < limit, used
    monkeypatch.setattr(defaults, "MAX_EVALUATIONS", limit)
    with pytest.raises(SolverError, match="BDF stopped at t = .*evaluation limit") as info:
        _track(duffing, 0.5)
    partial = info.value.partial
    assert 0.0 < info.value.t_reached < 0.5 and partial.t[-1] <= info.value.t_reached
    n = len(partial.t)
    # the kept part is the full run's, to the bit: the limit does not change a step
    assert np.array_equal(partial.e, full.e[:n])


def test_a_state_beyond_the_limit_ends_the_run(duffing, monkeypatch):
    """STATE_LIMIT × max(1, |x0|) lowered to 1e-3: the first step already leaves it (status 4)."""
    monkeypatch.setattr(defaults, "STATE_LIMIT", 1e-3)
    with pytest.raises(SolverError, match="state limit"):
        _track(duffing, 0.5)


def test_progress_moves_during_sample_and_hold_solves(pendulum):
    """The held loop is walked in 20 pieces: progress(t, t_end) is called between them, t increasing."""
    seen = []
    result = _track(pendulum, 0.3, sample_period=0.001, progress=lambda t, t_end: seen.append(t))
    assert result.success
    assert len(seen) >= 20 and seen == sorted(seen) and seen[-1] == pytest.approx(0.3)


def test_the_held_run_in_pieces_equals_one_call(pendulum):
    """The pieces carry the step size and the evaluation count: the same steps as one compiled call."""
    from robustrack.tracking import integrate

    a = _track(pendulum, 0.2, sample_period=0.001)
    original = integrate._sampled_compiled.__defaults__
    try:
        integrate._sampled_compiled.__defaults__ = (1,)  # one piece: the whole horizon in one call
        b = _track(pendulum, 0.2, sample_period=0.001)
    finally:
        integrate._sampled_compiled.__defaults__ = original
    assert np.array_equal(a.e, b.e) and np.array_equal(a.Qu, b.Qu)
    assert a.info["solvers"]["controlled"]["nfev"] == b.info["solvers"]["controlled"]["nfev"]


@pytest.mark.parametrize("method", ["DOP853", "RK45"])
def test_simulate_constrained_stops_at_the_evaluation_limit_keeping_what_it_reached(monkeypatch, method):
    """The public constrained integrator ends at the limit too — DOP853 in the kernels (checked between steps),
    another method in scipy's solve_ivp (a terminal event between steps). Neither changes a step: the run
    up to the limit is bit-identical to the full one."""
    from robustrack.plants import NLinkPendulum
    from robustrack.tracking import simulate_constrained

    plant = NLinkPendulum(m=[1.0, 2.0], L=[1.0, 1.5], g=9.81)
    args = (plant, None, [1.0, 0.5], [0.0, 0.0], (0.0, 2.0))
    full = simulate_constrained(*args, n_points=201, method=method)
    assert full.solver.backend == "compiled" and full.success
    monkeypatch.setattr(defaults, "MAX_EVALUATIONS", full.solver.nfev // 3)
    with pytest.raises(SolverError, match=f"{method} stopped at t = .*evaluation limit") as info:
        simulate_constrained(*args, n_points=201, method=method)
    partial = info.value.partial
    # the step in which the count passes the limit completes (12 evaluations per DOP853 attempt, a rejected
    # one or two included) and its dense output (3 more: an output time, or scipy's event root finding)
    assert 0.0 < partial.t[-1] < 2.0 and partial.solver.nfev <= full.solver.nfev // 3 + 3 * 12 + 3
    n = partial.t.size
    assert np.array_equal(partial.q, full.q[:n])  # the steps before the limit are the full run's
