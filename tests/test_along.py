"""The compiled measurements along a run (robustrack.compiled.along) against their numpy oracle.

:func:`~robustrack.compiled.along.measure_along` and :func:`~robustrack.compiled.along.nominal_along` compute,
one state at a time, what :func:`~robustrack.tracking.assess.uncertainty_along_run`, the compensator's
``__call__``, ``M(q_c) u`` and :func:`~robustrack.tracking.rhs.nominal_motion` compute in numpy. Both sides
evaluate the same formulas on the same states, in another order (Cholesky solves instead of LU, loops instead
of numpy's reductions), so they differ by rounding: a few ulps times the conditioning of the mass matrices
(below 1e2 for these plants), i.e. < 1e-13 relative; RTOL = 1e-12 leaves a margin of ten and is far below
anything the solver tolerance (1e-8) could produce, so a wrong formula (a missing Qᶜ, M(q) for M(q_c)) fails.
"""

import numpy as np
import pytest

from robustrack.campaigns import ParameterUncertainty
from robustrack.scenarios.campaign import ScenarioLoop, resolve_campaign_scenario
from robustrack.tracking import simulate
from robustrack.tracking.assess import dropped_term_gain, uncertainty_along_run
from robustrack.tracking.rhs import nominal_motion

RTOL = 1e-12  # module docstring: rounding of the same formulas in another order


def _setup(compensator, t_end="2.0"):
    sc = resolve_campaign_scenario("triple-pendulum", compensator=compensator,
                                   overrides=[f"simulation.t_end={t_end}"])
    loop = ScenarioLoop(sc)()
    run = loop.nominal_run()
    unc = ParameterUncertainty("m", spread=0.1, seed=3)
    actual = unc.actual(loop.nominal, unc.draw(loop.nominal, 1)[0])
    return loop, run, actual, simulate.prepare(run, actual)


def _states(run, loop, rng, rows=40, nz=0):
    """Times on the run, nominal states there, and controlled states near them (errors of a tracked run's size)."""
    n = loop.n
    t = np.sort(rng.uniform(*run.t_span, rows))
    y = run.solution(t)
    x = np.concatenate([y + rng.normal(scale=1e-3, size=y.shape), rng.normal(scale=1e-3, size=(rows, nz))], axis=1)
    return t, y, x


@pytest.mark.parametrize("compensator", ["gss", "gd", "gdbar"])
def test_measurements_along_equal_the_numpy_assessment(compensator):
    """GD-bar's P = ‖(I − M̃_a)e‖∞ (no integral state: the kernel reads no z) beside GD's ‖(I − M̃_a)(e + K_i z)‖∞."""
    from robustrack.compiled.along import ALONG_COLUMNS

    loop, run, actual, setup = _setup(compensator)
    n = loop.n
    comp = loop.compensator
    nz = setup.x0.size - 2 * n
    t, y, x = _states(run, loop, np.random.default_rng(7), nz=nz)
    Qc = nominal_motion(loop.nominal, loop.constraint, y[:, :n], y[:, n:], t).Qc
    Y = setup.loop.nominal_along(run.solution, t)
    np.testing.assert_allclose(Y, np.concatenate([y, Qc], axis=1), rtol=RTOL, atol=RTOL * np.abs(Qc).max())

    Ki = dropped_term_gain(comp)
    out = setup.loop.measure_along(t, x, Y, None, Ki)
    assert out.shape == (t.size, len(ALONG_COLUMNS))
    e, ed = x[:, :n] - y[:, :n], x[:, n:2 * n] - y[:, n:]
    u = comp(t[:, None], e, ed, x[:, 2 * n:])
    Qu = (loop.nominal.mass_matrix(x[:, :n], t) @ u[..., None])[..., 0]
    v = None if Ki is None else e + Ki * x[:, 2 * n:3 * n] if nz else e
    seen = uncertainty_along_run(loop.nominal, actual, y[:, :n], y[:, n:], x[:, :n], x[:, n:2 * n], Qc, t, v=v)
    want = {"e": np.abs(e).max(axis=1), "edot": np.abs(ed).max(axis=1), "Qu": np.abs(Qu).max(axis=1),
            "dq": seen["dq_norm"], "Mtilde": seen["Mtilde_norm"]}
    for k, col in want.items():
        np.testing.assert_allclose(out[:, ALONG_COLUMNS.index(k)], col, rtol=RTOL, err_msg=k)
    if Ki is None:
        assert np.isnan(out[:, ALONG_COLUMNS.index("P")]).all()
    else:
        np.testing.assert_allclose(out[:, ALONG_COLUMNS.index("P")], seen["P_norm"], rtol=RTOL)


def test_a_nonfinite_state_is_never_hidden_by_a_maximum():
    loop, run, actual, setup = _setup("gss")
    t, y, x = _states(run, loop, np.random.default_rng(1), rows=5)
    x[2, 1] = np.nan
    x[3, 4] = np.inf
    out = setup.loop.measure_along(t, x, setup.loop.nominal_along(run.solution, t), None, None)
    assert np.isnan(out[2, [0, 2, 3, 4]]).all()  # NaN in q_c: ‖e‖∞ and every norm that reads q_c
    assert np.isfinite(out[2, 1])  # (ė does not)
    assert not np.isfinite(out[3, 1])  # inf in q̇_c: ‖ė‖∞
    assert np.isfinite(out[[0, 1, 4], :5]).all()


def test_the_nominal_at_the_grid_is_computed_once_per_run_and_is_the_runs():
    loop, run, actual, setup = _setup("gss", t_end="1.0")
    assert "_nominal_on_grid" not in run.__dict__
    first = simulate.track_peaks(run, actual)
    table = run.__dict__["_nominal_on_grid"]
    n = loop.n
    y = run.solution(run.t_eval)
    Qc = nominal_motion(loop.nominal, loop.constraint, y[:, :n], y[:, n:], run.t_eval).Qc
    np.testing.assert_allclose(table, np.concatenate([y, Qc], axis=1), rtol=RTOL, atol=RTOL * np.abs(Qc).max())
    again = simulate.track_peaks(run, actual)
    assert run.__dict__["_nominal_on_grid"] is table  # kept, not recomputed
    assert again == first


def test_the_bdf_steps_carry_the_nominal_their_right_hand_side_used():
    """ControlledSolution.nominal_steps is the nominal side at the accepted steps (what the measurements read
    instead of evaluating the fundamental equation again): the numpy nominal there, to rounding."""
    from robustrack.tracking.integrate import integrate_controlled

    loop, run, actual, setup = _setup("gss", t_end="1.0")
    ctl = integrate_controlled(setup.loop, run.solution, setup.x0, loop.t_span, loop.t_eval)
    N = ctl.nominal_steps
    assert N.shape == (ctl.t_steps.size, 3 * loop.n)
    assert np.isnan(N[0]).all() and np.isfinite(N[1:]).all()  # the start is no step
    n = loop.n
    y = run.solution(ctl.t_steps[1:])
    Qc = nominal_motion(loop.nominal, loop.constraint, y[:, :n], y[:, n:], ctl.t_steps[1:]).Qc
    np.testing.assert_allclose(N[1:], np.concatenate([y, Qc], axis=1), rtol=RTOL, atol=RTOL * np.abs(Qc).max())
