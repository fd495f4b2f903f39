"""simulate_tracking and TrackingResult against independent truths (docs/theory/nominal-actual.md, docs/theory/compensators.md, W 5.2–5.3).

Truths: identical nominal and actual plants must track exactly; the controlled and
uncompensated systems coincide when u = 0; the error dynamics ë = δq + u − M̃_a u
(W 5.3.3–5.3.6) recomputed from the plants; ∫e by the trapezoid rule; zero-order hold
holds u constant; the seed runs stay inside the bounds their compensators promise.
"""

import json

import numpy as np
import pytest

from robustrack.cli import main
from robustrack.plants import pendulum_energy_constraint
from robustrack.controllers import GD, GSS, GDBar, control_function, sliding_mode
from robustrack.errors import ParameterError
from robustrack.plants import triple_pendulum
from robustrack.scenarios import load_scenario, run_scenario
from robustrack.tracking import simulate_tracking
from robustrack.tracking import TrackingResult

Q0, QD0 = [1.0, 0.0, 0.0], [0.001, 0.0, 0.0]
NOMINAL = triple_pendulum()
ACTUAL = NOMINAL.replace(m=(1.1, 1.8, 3.3))  # W 7.3 case 1
CONSTRAINT = pendulum_energy_constraint(L1=1.0, g=9.81, gain=0.02, n=3, m1=1.0)


@pytest.fixture(scope="module")
def gss_run():
    return simulate_tracking(NOMINAL, CONSTRAINT, GSS(), Q0, QD0, (0.0, 2.0), actual=ACTUAL, n_points=2001)


def test_identical_plants_track_to_the_integration_error():
    """With M_a = M the controlled system is the nominal one: e is only the integration error.

    The nominal and the controlled systems are separate solves, each accurate to about rtol
    relative (|θ| ≤ 1.2 rad over 1 s), so |e| ≲ 10·rtol; tightening rtol 100× must shrink e
    by at least 30× (the error is the solvers', not the model's).
    """
    runs = [simulate_tracking(NOMINAL, CONSTRAINT, GSS(), Q0, QD0, (0.0, 1.0), actual=NOMINAL, n_points=101,
                              rtol=rtol, atol=1e-13) for rtol in (1e-8, 1e-10)]
    for r, rtol in zip(runs, (1e-8, 1e-10)):
        assert r.metrics["max_abs_e"] < 10 * rtol
        assert r.metrics["actual_max_abs_e"] < 10 * rtol
        assert r.metrics["max_abs_Qu"] < 1e6 * rtol  # u ~ β f(s) with s ~ e: β·2α_c·(K e/ε)² ≪ 1
    assert runs[1].metrics["max_abs_e"] < runs[0].metrics["max_abs_e"] / 30


def test_without_compensator_controlled_equals_uncompensated():
    r = simulate_tracking(NOMINAL, CONSTRAINT, None, Q0, QD0, (0.0, 1.0), actual=ACTUAL, n_points=101)
    np.testing.assert_array_equal(r.qc, r.qa)
    assert r.metrics["max_abs_e"] == r.metrics["actual_max_abs_e"] > 1e-3
    assert np.all(r.Qu == 0)


def test_error_dynamics_follow_W_5_3_3():
    """ë (4th-order central differences of ė) = δq + u − M̃_a u, δq from (5.3.5), M̃_a from (5.3.4).

    Tight tolerances: differencing the solver's interpolant amplifies its error by 1/dt.
    """
    r = simulate_tracking(NOMINAL, CONSTRAINT, GSS(), Q0, QD0, (0.0, 0.5), actual=ACTUAL, n_points=2001,
                          uncompensated=False, rtol=1e-11, atol=1e-13)
    dt = r.t[1] - r.t[0]
    edd = (-r.edot[4:] + 8 * r.edot[3:-1] - 8 * r.edot[1:-3] + r.edot[:-4]) / (12 * dt)
    k = slice(2, -2)
    q, qd, qc, qcd, Qc = r.q[k], r.qd[k], r.qc[k], r.qcd[k], r.Qc[k]
    M, Ma = NOMINAL.mass_matrix(qc), ACTUAL.mass_matrix(qc)
    a_a = np.linalg.solve(Ma, ACTUAL.given_force(qc, qcd)[..., None])[..., 0]
    a = np.linalg.solve(NOMINAL.mass_matrix(q), NOMINAL.given_force(q, qd)[..., None])[..., 0]
    dq = a_a - a + np.einsum("tij,tj->ti", np.linalg.inv(Ma) - np.linalg.inv(NOMINAL.mass_matrix(q)), Qc)
    u = np.linalg.solve(M, r.Qu[k][..., None])[..., 0]
    Mt = np.eye(3) - np.linalg.inv(np.eye(3) + np.linalg.solve(M, Ma - M))
    rhs = dq + u - np.einsum("tij,tj->ti", Mt, u)
    scale = np.abs(edd).max()
    assert np.max(np.abs(edd - rhs)) < 5e-4 * scale
    # a wrong sign convention (e = q − q_c) or Qᵘ = M_a u would break this by O(1)
    assert np.max(np.abs(edd + rhs)) > 0.1 * scale


def test_gss_seed_run_is_inside_its_bounds(gss_run):
    m, b = gss_run.metrics, gss_run.info["bounds"]
    assert m["bounds_held"] and m["reaching_time"] == 0.0
    assert m["max_abs_e"] < b["e"] and m["max_abs_edot"] < b["edot"]
    assert m["max_abs_e"] < 1e-2 * m["actual_max_abs_e"]  # compensation matters
    assert m["max_abs_Qu"] < m["max_abs_Qc"]  # W: Qᵘ small next to Qᶜ
    assert gss_run.residual_controlled.shape == (gss_run.t.size, 1)


def test_gd_integral_state_is_integral_of_e():
    comp = GD(Ki=1.0, Kd=3.0)
    r = simulate_tracking(NOMINAL, CONSTRAINT, comp, Q0, QD0, (0.0, 1.0), actual=ACTUAL, n_points=2001,
                          uncompensated=False)
    trap = np.concatenate([np.zeros((1, 3)), np.cumsum(0.5 * (r.e[1:] + r.e[:-1]) * np.diff(r.t)[:, None], 0)])
    np.testing.assert_allclose(r.z, trap, atol=1e-6 * np.abs(r.z).max() + 1e-12)
    assert r.qa is None and r.metrics["actual_max_abs_e"] is None


def test_gdbar_runs_and_reports_bound_only_with_gamma():
    r = simulate_tracking(NOMINAL, CONSTRAINT, GDBar(), Q0, QD0, (0.0, 1.0), actual=ACTUAL, n_points=201, gamma=100.0)
    assert r.info["bounds"]["edot"] == pytest.approx(GDBar().bounds(100.0).edot)
    assert r.metrics["max_abs_edot"] < r.info["bounds"]["edot"]


def test_sign_preset_needs_sampling_and_chatters():
    smc = sliding_mode()
    with pytest.raises(ParameterError, match="sample_period"):
        simulate_tracking(NOMINAL, CONSTRAINT, smc, Q0, QD0, (0.0, 0.1), actual=ACTUAL)
    h = 1e-3
    r = simulate_tracking(NOMINAL, CONSTRAINT, smc, Q0, QD0, (0.0, 0.2), actual=ACTUAL, sample_period=h,
                          n_points=201)
    assert r.success and r.t[-1] == pytest.approx(0.2)
    assert r.u_times.size == 200 and np.allclose(np.diff(r.u_times), h)
    # u is held between samples: on the output grid Qᵘ = M(q_c) u_k with the sample's u
    k = np.searchsorted(r.u_times, r.t, side="right") - 1
    np.testing.assert_allclose(r.Qu, np.einsum("tij,tj->ti", NOMINAL.mass_matrix(r.qc), r.u_held[np.clip(k, 0, 199)]))
    smooth = simulate_tracking(NOMINAL, CONSTRAINT, GSS(), Q0, QD0, (0.0, 0.2), actual=ACTUAL, n_points=201,
                               uncompensated=False)
    assert r.metrics["chattering_Qu"] > 20 * smooth.metrics["chattering_Qu"]
    # it still tracks, within the discrete sliding band |s| ≲ σβh (ė ≲ σβh, e ≲ σβh/K)
    assert r.metrics["max_abs_e"] < smc.sigma * smc.beta * h / 10.0


def test_sampled_continuous_control_converges_to_continuous():
    f = control_function("cubic", eps=1e-2, alpha_c=2.0)
    cont = simulate_tracking(NOMINAL, CONSTRAINT, GSS(f=f), Q0, QD0, (0.0, 0.2), actual=ACTUAL, n_points=21,
                             uncompensated=False)
    fine = simulate_tracking(NOMINAL, CONSTRAINT, GSS(f=f), Q0, QD0, (0.0, 0.2), actual=ACTUAL, n_points=21,
                             uncompensated=False, sample_period=5e-4)
    assert np.max(np.abs(fine.e - cont.e)) < 0.05 * np.max(np.abs(cont.e))


def test_unconstrained_variant_has_no_constraint_force():
    r = simulate_tracking(NOMINAL, None, GSS(), [0.2, 0.5, 0.2], [0.5, 1.0, 2.0], (0.0, 1.0), actual=ACTUAL,
                          n_points=101)
    assert np.all(r.Qc == 0) and r.residual_nominal is None
    assert r.metrics["max_abs_e"] < r.info["bounds"]["e"]
    assert r.metrics["max_abs_e"] < 1e-2 * r.metrics["actual_max_abs_e"]


def test_save_load_is_lossless(tmp_path, gss_run):
    gss_run.save(tmp_path / "run")
    back = TrackingResult.load(tmp_path / "run.npz")
    for name in ("t", "q", "qd", "qc", "qcd", "qa", "qad", "Qc", "Qu", "z", "residual_nominal"):
        np.testing.assert_array_equal(getattr(back, name), getattr(gss_run, name))
    assert back.info == json.loads(json.dumps(back.info))  # plain JSON types
    assert back.metrics == gss_run.metrics
    assert back.info["bounds"]["e"] == gss_run.info["bounds"]["e"]
    with pytest.raises(ParameterError, match="no saved tracking result"):
        TrackingResult.load(tmp_path / "missing")


def test_transient_definition():
    r = simulate_tracking(NOMINAL, CONSTRAINT, GSS(), Q0, QD0, (0.0, 1.0), actual=ACTUAL, n_points=101,
                          qc0=[1.01, 0.0, 0.0], uncompensated=False)
    assert r.metrics["transient_s"] == pytest.approx(0.1)  # e(0) ≠ 0: 10 % of the horizon
    assert r.metrics["max_abs_e"] == pytest.approx(0.01)


def test_scenario_and_cli_json_keys(tmp_path):
    out = tmp_path / "tp.json"
    assert main(["run", "triple-pendulum", "--compensator", "gd", "--f", "cubic",
                 "--set", "simulation.t_end=0.5", "--set", "uncertainty.dm=[-0.1,0.05,-0.2]",
                 "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert doc["scenario"] == "triple-pendulum" and doc["compensator"] == "gd"
    assert doc["control_function"] == "cubic"
    for key in ("max_abs_e", "max_abs_edot", "rms_e", "max_abs_Qu", "max_abs_Qc",
                "max_constraint_residual_nominal", "max_constraint_residual_controlled", "actual_max_abs_e"):
        assert isinstance(doc["metrics"][key], float), key
    assert set(doc["bounds"]) >= {"e", "edot", "held"}
    assert set(doc["solver"]) >= {"method", "rtol", "atol", "nfev", "success", "wall_s"}
    assert doc["config"]["uncertainty"]["dm"] == [-0.1, 0.05, -0.2]


def test_scenario_rejects_bad_compensator_settings():
    from robustrack.errors import ScenarioError

    with pytest.raises(ScenarioError, match="compensator.type"):
        run_scenario(load_scenario("triple-pendulum", ["simulation.t_end=0.1"]), compensator="pid")
    with pytest.raises(ScenarioError, match="`compensator.gss.alpha0`"):
        run_scenario(load_scenario("triple-pendulum", ["simulation.t_end=0.1", "compensator.gss.alpha0=1.5"]))
    with pytest.raises(ScenarioError, match="mass ≤ 0"):
        run_scenario(load_scenario("triple-pendulum", ["uncertainty.dm=[-1.0,0,0]"]))


def test_progress_reports_solver_time(monkeypatch):
    import robustrack.tracking.integrate as sim

    calls = []
    clock = iter(range(0, 10**6))  # every rhs call looks one second later
    monkeypatch.setattr(sim.time, "perf_counter", lambda: float(next(clock)))
    simulate_tracking(NOMINAL, CONSTRAINT, GSS(), Q0, QD0, (0.0, 0.2), actual=ACTUAL, n_points=11,
                      uncompensated=False, progress=lambda t, t_end: calls.append((t, t_end)))
    assert len(calls) > 2 and calls[-1] == (0.2, 0.2)
    assert all(0.0 <= t <= 0.2 for t, _ in calls)


def test_progress_does_not_change_the_steps():
    """With progress, the compiled BDF walks the horizon in pieces, never clipping a step: same run."""
    quiet, loud = (simulate_tracking(NOMINAL, CONSTRAINT, GSS(), Q0, QD0, (0.0, 1.0), actual=ACTUAL, n_points=11,
                                     uncompensated=False, progress=p) for p in (None, lambda t, t_end: None))
    assert loud.solver["backend"] == "compiled" and loud.solver["nfev"] == quiet.solver["nfev"]
    np.testing.assert_array_equal(loud.qc, quiet.qc)


def test_the_compiled_bdf_pieces_double_while_short_and_step_as_twenty(monkeypatch):
    """The compiled BDF's pieces double while each takes less than ``_PIECE_S`` (a campaign sample's few calls of
    numba's dispatcher, not 20): the same steps, states and counts as twenty fixed pieces; progress still moves."""
    from robustrack.compiled import backend

    runs, calls = [], []
    for limit in (0.0, float("inf")):  # never doubling (20 pieces), always doubling (1, 2, 4, 8, 16 twentieths)
        monkeypatch.setattr(backend, "_PIECE_S", limit)
        seen = []
        runs.append(simulate_tracking(NOMINAL, CONSTRAINT, GSS(), Q0, QD0, (0.0, 1.0), actual=ACTUAL, n_points=11,
                                      uncompensated=False, progress=lambda t, t_end: seen.append(t)))
        calls.append(seen)
    assert len(calls[1]) < len(calls[0]) and len(calls[0]) >= 19  # (a step may cross two boundaries)
    assert all(a <= b for a, b in zip(calls[1], calls[1][1:]))
    assert runs[0].solver["nfev"] == runs[1].solver["nfev"] and runs[0].solver["backend"] == "compiled"
    _same_run(runs[0], runs[1])


# ----------------------------------------------------------------------------------------- #
# simulate_tracking takes TrackingProblem's fields in its order (issue 31 item 4)
# ----------------------------------------------------------------------------------------- #
def _same_run(a, b):
    """Two runs of one problem: every trajectory array equal to the bit (the same calls in the same order)."""
    for name in ("t", "q", "qc", "qcd", "qa", "Qc", "Qu"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)


def test_simulate_tracking_takes_the_fields_of_trackingproblem_in_its_order():
    """The free function and the problem are one description: the same positional order, the same run."""
    from robustrack.tracking import TrackingProblem
    from robustrack.tracking.problem import FIELD_ORDER
    import dataclasses

    fields = [f.name for f in dataclasses.fields(TrackingProblem) if not f.kw_only]
    assert list(FIELD_ORDER) == fields
    args = (NOMINAL, CONSTRAINT, GSS(), Q0, QD0, (0.0, 0.2))
    problem = TrackingProblem(*args, actual=ACTUAL, n_points=21, backend="numpy")
    new = simulate_tracking(*args, actual=ACTUAL, n_points=21, backend="numpy")
    _same_run(new, problem.simulate())
    _same_run(simulate_tracking(problem), new)  # a problem itself
    other = NOMINAL.replace(m=(1.0, 2.2, 3.0))
    _same_run(simulate_tracking(problem, actual=other), problem.replace(actual=other).simulate())


def test_the_old_order_still_runs_with_a_notice_naming_the_new_call():
    """simulate_tracking(nominal, actual, constraint, ...) — the actual plant second — is recognised (a plant
    where the constraint goes), runs the same problem and says what to write instead."""
    from robustrack.tracking.problem import OldCallOrder

    assert issubclass(OldCallOrder, FutureWarning)  # shown by default, to the users of the old order
    new = simulate_tracking(NOMINAL, CONSTRAINT, GSS(), Q0, QD0, (0.0, 0.2), actual=ACTUAL, n_points=21,
                            backend="numpy")
    with pytest.warns(OldCallOrder, match=r"simulate_tracking\(nominal, constraint, compensator, q0, qd0, "
                                           r"t_span, actual=\.\.\."):
        old = simulate_tracking(NOMINAL, ACTUAL, CONSTRAINT, GSS(), Q0, QD0, (0.0, 0.2), n_points=21,
                                backend="numpy")
    _same_run(old, new)
    with pytest.warns(OldCallOrder, match="old order"):  # the README's old form: four by position
        mixed = simulate_tracking(NOMINAL, ACTUAL, CONSTRAINT, GSS(), q0=Q0, qd0=QD0, t_span=(0.0, 0.2),
                                  n_points=21, backend="numpy")
    _same_run(mixed, new)


@pytest.mark.parametrize("call, match", [
    (lambda: simulate_tracking(NOMINAL, CONSTRAINT, None, Q0, QD0, (0, 1), q0=Q0), "`q0` both by position"),
    (lambda: simulate_tracking(NOMINAL, CONSTRAINT, None, Q0), "needs `qd0`, `t_span`"),
    (lambda: simulate_tracking(NOMINAL, CONSTRAINT, None, Q0, QD0, (0, 1), ACTUAL), "at most 6 positional"),
    (lambda: simulate_tracking(NOMINAL, CONSTRAINT, None, Q0, QD0, (0, 1), actaul=ACTUAL), "unknown keyword"),
])
def test_simulate_tracking_refuses_a_field_twice_missing_or_unknown(call, match):
    with pytest.raises(ParameterError, match=match):
        call()


# ----------------------------------------------------------------------------------------- #
# results frozen all the way (issue 31 item 4)
# ----------------------------------------------------------------------------------------- #
@pytest.fixture(scope="module")
def short_run():
    return simulate_tracking(NOMINAL, CONSTRAINT, GSS(), Q0, QD0, (0.0, 0.2), actual=ACTUAL, n_points=21,
                             backend="numpy")


def test_a_result_cannot_be_written_into(short_run):
    """The typed record is read-only all the way down; ``info`` is a copy; a scenario's additions make a new result."""
    import dataclasses
    from robustrack.tracking.results import TrackingMetrics

    r = short_run
    assert isinstance(r.metrics, TrackingMetrics) and r.metrics is r.metrics  # parsed once, not per access
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.run_info = None
    with pytest.raises(TypeError):
        r.run_info.solvers["controlled"]["nfev"] = 0  # nested mappings are read-only too
    with pytest.raises(TypeError):
        r.run_info.bounds["e"] = 0.0
    copy = r.info
    copy["scenario"] = {"name": "x"}
    copy["solvers"]["controlled"]["nfev"] = -1
    assert "scenario" not in r.info and r.info["solvers"]["controlled"]["nfev"] > 0
    tagged = r.with_info(scenario={"name": "x"}, units={"q": "rad"})
    assert tagged.run_info.scenario["name"] == "x" and tagged.info["units"] == {"q": "rad"}
    assert r.run_info.scenario is None and tagged.t is r.t and tagged.metrics == r.metrics
    import pickle

    again = pickle.loads(pickle.dumps(tagged))  # a campaign worker sends results back
    assert again.info == tagged.info and again.run_info == tagged.run_info
    with pytest.raises(TypeError):
        again.run_info.units["q"] = "m"


def test_saved_runs_round_trip_and_old_files_load(short_run, tmp_path):
    """save → load keeps every array and the metadata; a file saved before the typed record (info as a plain
    JSON object, metrics only the names the run had) loads to the same metrics; an unknown name is refused."""
    import json as _json

    r = short_run.with_info(units={"q": "rad"})
    npz, js = r.save(tmp_path / "run")
    back = TrackingResult.load(npz)
    for name in ("t", "q", "qc", "Qu", "z"):
        np.testing.assert_array_equal(getattr(back, name), getattr(r, name))
    assert back.metrics == r.metrics and back.info == r.info and back.success
    old = _json.loads(js.read_text())
    old["metrics"] = {k: v for k, v in old["metrics"].items() if v is not None}  # what older versions wrote
    del old["units"]
    js.write_text(_json.dumps(old))
    assert TrackingResult.load(npz).metrics == r.metrics
    old["seeds"] = [1]
    js.write_text(_json.dumps(old))
    with pytest.raises(ParameterError, match=r"unknown name\(s\) \['seeds'\]"):
        TrackingResult.load(npz)


def test_replace_makes_an_automatic_output_grid_again_and_keeps_a_given_one():
    """A grid that was not given follows the copy's ``t_span`` and ``n_points`` (it was kept from the original:
    ``n_points`` was ignored without a word and a shorter ``t_span`` was refused for a ``t_eval`` nobody typed);
    a given ``t_eval`` is kept, and refused by a horizon that does not hold it."""
    from robustrack.tracking import TrackingProblem

    auto = TrackingProblem(NOMINAL, CONSTRAINT, GSS(), Q0, QD0, (0.0, 2.0), actual=ACTUAL, n_points=21)
    assert np.array_equal(auto.replace(n_points=11).t_eval, np.linspace(0.0, 2.0, 11))
    assert np.array_equal(auto.replace(t_span=(0.0, 1.0)).t_eval, np.linspace(0.0, 1.0, 21))
    assert np.array_equal(auto.replace(rtol=1e-9).t_eval, auto.t_eval)
    grid = np.array([0.0, 0.5, 1.5])
    given = auto.replace(t_eval=grid)
    assert np.array_equal(given.replace(n_points=11, rtol=1e-9).t_eval, grid)
    assert np.array_equal(given.replace(t_span=(0.0, 1.5)).t_eval, grid)
    with pytest.raises(ParameterError, match="t_eval"):
        given.replace(t_span=(0.0, 1.0))
