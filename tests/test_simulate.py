"""simulate_constrained against an independent formulation."""

import dataclasses

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from robustrack.constraints import FunctionConstraint
from robustrack.errors import ParameterError, SolverError
from robustrack.plants.base import Plant
from robustrack.tracking import simulate_constrained


@dataclasses.dataclass(frozen=True, eq=False)
class PointMass2D(Plant):
    """A unit point mass in the plane under gravity (y up)."""

    g: float = 9.81
    coordinates = ("x", "y")

    def mass_matrix(self, q, t=0.0):
        q = np.asarray(q, dtype=float)
        return np.broadcast_to(np.eye(2), q.shape[:-1] + (2, 2))

    def given_force(self, q, qd, t=0.0):
        q = np.asarray(q, dtype=float)
        F = np.zeros(q.shape)
        F[..., 1] = -self.g
        return F


def rod(L):
    """x² + y² = L², differentiated twice by hand: 2(x ẍ + y ÿ) = −2(ẋ² + ẏ²)."""
    return FunctionConstraint(
        A=lambda q, qd, t: np.stack([q[..., 0], q[..., 1]], axis=-1)[..., None, :],
        b=lambda q, qd, t: -(qd[..., 0] ** 2 + qd[..., 1] ** 2)[..., None],
        residual=lambda q, qd, t: (q[..., 0] ** 2 + q[..., 1] ** 2 - L**2)[..., None],
        n=2, m=1,
    )


def test_cartesian_pendulum_matches_angle_formulation():
    L, g, th0 = 2.0, 9.81, 0.8
    plant = PointMass2D(g=g)
    q0 = [L * np.sin(th0), -L * np.cos(th0)]
    res = simulate_constrained(plant, rod(L), q0, [0.0, 0.0], (0.0, 5.0), n_points=201, rtol=1e-11, atol=1e-12)
    ang = solve_ivp(lambda t, y: [y[1], -g / L * np.sin(y[0])], (0, 5), [th0, 0.0],
                    t_eval=res.t, rtol=1e-12, atol=1e-13, method="DOP853")
    x_ref, y_ref = L * np.sin(ang.y[0]), -L * np.cos(ang.y[0])
    assert np.max(np.abs(res.q[:, 0] - x_ref)) < 1e-7
    assert np.max(np.abs(res.q[:, 1] - y_ref)) < 1e-7
    # tension: Qᶜ = −(m v²/L + m g cos θ) r̂, r̂ = (sin θ, −cos θ)
    th, thd = ang.y
    T = (L * thd**2 + g * np.cos(th))
    np.testing.assert_allclose(res.Qc[:, 0], -T * np.sin(th), atol=1e-6)
    np.testing.assert_allclose(res.Qc[:, 1], T * np.cos(th), atol=1e-6)
    assert res.max_constraint_residual < 1e-7
    assert res.solver.success and res.solver.nfev > 0 and res.solver.method == "DOP853"
    assert res.accel_residual.max() < 1e-9


def test_bad_arguments_are_named():
    plant = PointMass2D()
    with pytest.raises(ParameterError, match="q0"):
        simulate_constrained(plant, rod(1.0), [1.0, 0.0, 0.0], [0, 0], (0, 1))
    with pytest.raises(ParameterError, match="method"):
        simulate_constrained(plant, rod(1.0), [1.0, 0.0], [0, 0], (0, 1), method="Euler")
    with pytest.raises(ParameterError, match="t_span"):
        simulate_constrained(plant, rod(1.0), [1.0, 0.0], [0, 0], (1, 0))


@pytest.mark.parametrize("grid, match", [
    (dict(n_points=1), "n_points"), (dict(n_points=2.5), "n_points"), (dict(n_points=True), "n_points"),
    (dict(t_eval=[0.5]), "at least 2"), (dict(t_eval=[[0.0, 1.0]]), "1-D"),
    (dict(t_eval=[0.0, 0.5, 0.5]), "strictly increasing"), (dict(t_eval=[0.0, 1.5]), "within `t_span`"),
    (dict(t_eval=[0.0, np.nan]), "finite"),
])
def test_output_grid_is_checked(grid, match):
    """One output time would report the initial state as the whole run: refused, as are grids off t_span."""
    with pytest.raises(ParameterError, match=match):
        simulate_constrained(PointMass2D(), rod(1.0), [1.0, 0.0], [0, 0], (0, 1), **grid)
    r = simulate_constrained(PointMass2D(), rod(1.0), [1.0, 0.0], [0, 1.0], (0, 1), t_eval=[0.0, 0.25, 1.0])
    np.testing.assert_array_equal(r.t, [0.0, 0.25, 1.0])


def test_solver_failure_keeps_partial_result():
    plant = PointMass2D()
    blowup = FunctionConstraint(A=lambda q, qd, t: np.ones(q.shape[:-1] + (1, 2)),
                                b=lambda q, qd, t: np.broadcast_to((0.5 - np.asarray(t)) ** -3.0, q.shape[:-1])[..., None],
                                n=2, m=1)
    with pytest.raises(SolverError) as info:
        simulate_constrained(plant, blowup, [0.0, 0.0], [0.0, 0.0], (0.0, 1.0), n_points=101, method="RK45")
    assert info.value.t_reached < 0.5
    assert info.value.partial is not None and info.value.partial.t.size >= 1


def test_the_compiled_dop853_steps_as_scipys_dop853():
    """With a symbolic plant and constraint ``simulate_constrained`` integrates in the kernels' DOP853 (a port
    of scipy's); here it is checked against scipy's own ``solve_ivp(DOP853)`` calling the same compiled
    right-hand side, for the energy-controlled two-link pendulum (W 2.3.5–2.3.7), same tolerances and output
    times — the integrator alone is compared.

    Same algorithm, so the same steps: the evaluation counts are equal but for the 3 evaluations scipy spends
    on the dense output of a first step whose only output time is t0 (the kernel copies y0 there). The states
    differ only in how a step sums its stages (scipy: a BLAS dot product; the kernel: a loop), ~1e-16 relative
    per step. Such a perturbation propagates as the local errors do, which rtol = 1e-10 holds to ~1e-10 per
    step, so the difference is ~1e-6 of the run's own global error (≲ 1e-8 here): ≲ 1e-14, bounded at 1e-12."""
    from robustrack.plants import NLinkPendulum, pendulum_energy_constraint
    from robustrack.compiled import systems as rhs_kernels
    from robustrack.compiled.loop import compiled_loop, no_dense

    plant = NLinkPendulum(m=[1.0, 2.0], L=[1.0, 1.5], g=9.81)
    con = pendulum_energy_constraint(L1=1.0, g=9.81, gain=0.5, n=2, m1=1.0)
    q0, qd0 = np.array([0.5, 0.2]), np.array([0.0, 0.0])
    t_eval = np.linspace(0.0, 2.0, 41)
    r = simulate_constrained(plant, con, q0, qd0, (0.0, 2.0), t_eval=t_eval, rtol=1e-10, atol=1e-12)
    assert r.solver.backend == "compiled" and r.success

    loop = compiled_loop(plant, plant, con, jacobian=False)
    placeholder = no_dense(4)

    def rhs(t, y):
        return rhs_kernels.system_rhs(loop.nominal, t, np.ascontiguousarray(y), placeholder, loop.model)

    ref = solve_ivp(rhs, (0.0, 2.0), np.concatenate([q0, qd0]), method="DOP853", t_eval=t_eval, rtol=1e-10,
                    atol=1e-12)
    assert r.solver.nfev in (ref.nfev, ref.nfev - 3)
    assert np.array_equal(r.t, ref.t)
    assert np.max(np.abs(np.hstack([r.q, r.qd]) - ref.y.T)) < 1e-12


def test_what_follows_from_the_states_is_derived_at_first_access_and_travels_with_a_pickle(monkeypatch):
    """q̈, Qᶜ and the residuals are computed at the first access of any of them, once, and equal the fundamental
    equation at each output point (an independent call per state); a pickled result carries them."""
    import pickle

    from robustrack.plants.motion import constrained_motion
    from robustrack.tracking import constrained

    calls = []
    real = constrained._derive
    monkeypatch.setattr(constrained, "_derive", lambda *a: calls.append(1) or real(*a))
    L = 1.5
    res = simulate_constrained(PointMass2D(), rod(L), [L, 0.0], [0.0, 0.0], (0.0, 0.5), n_points=11)
    assert calls == [] and res.q.shape == (11, 2)  # the run returned without deriving
    q = res.q.copy()
    res.q[:] = 0.0  # a caller's change of the states before reading Qᶜ: the derivation has its own copy
    Qc, qdd = res.Qc, res.qdd
    res.q[:] = q
    assert calls == [1] and res.residual is not None and res.accel_residual.shape == (11,)
    for k in (0, 5, 10):
        one = constrained_motion(PointMass2D(), rod(L), res.q[k], res.qd[k], res.t[k])
        # the batch and the one-state solve of the same 2 × 2 system: equal to rounding (1e-12 relative to |Qᶜ| ~ g)
        assert np.allclose(one.Qc, Qc[k], rtol=0, atol=1e-12) and np.allclose(one.qdd, qdd[k], rtol=0, atol=1e-12)
    assert calls == [1]  # kept
    back = pickle.loads(pickle.dumps(res))
    assert back.derive is None and np.array_equal(back.Qc, Qc) and np.array_equal(back.residual, res.residual)
    assert back.max_constraint_residual == res.max_constraint_residual and calls == [1]
