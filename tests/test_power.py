"""Power, work and workless share of Qᶜ and Qᵘ (issue 21 part 1; robustrack.plants.power).

Truths: the actual system's energy balance E_a(t) − E_a(0) = W_c + W_u (the only
non-conservative forces on q_c are Qᶜ and Qᵘ, W 5.2.17), with the trapezoidal error
shrinking like h²; S (3.8): a gyroscopic force S q̇ (S = −Sᵀ) is wholly workless and a
force along M q̇ wholly working; the mass-matrix split does not depend on the coordinates.
"""

import io
from contextlib import redirect_stdout

import numpy as np
import pytest
import sympy as sp

from robustrack.cli import _print_run
from robustrack.constraints import Holonomic
from robustrack.controllers import control_function, make_compensator
from robustrack.errors import ParameterError
from robustrack.plants.lagrangian import LagrangianPlant
from robustrack.tracking import simulate_tracking
from robustrack.plants.power import control_power, force_power


@pytest.fixture(scope="module")
def pendulum_runs():
    """A user's own plant in a script: a Cartesian pendulum, actual mass 1.3 for a nominal 1."""
    x, y, xd, yd, m, g, L = sp.symbols("x y x_dot y_dot m g L")
    plant = LagrangianPlant.from_energies([x, y], m * (xd**2 + yd**2) / 2, m * g * y, qd=[xd, yd],
                                          params={m: 1.0, g: 9.81})
    con = Holonomic(x**2 + y**2 - L**2, [x, y], params={L: 1.0})
    actual = plant.replace(m=1.3)
    comp = make_compensator("gdbar", f=control_function("cubic", 0.01, alpha_c=2.0))
    runs = {N: simulate_tracking(plant, con, comp, [1.0, 0.0], [0.0, 1.0], (0.0, 2.0), actual=actual, n_points=N,
                                 rtol=1e-10, atol=1e-12) for N in (201, 401)}  # compiled: ~7× cheaper than numpy
    return plant, runs


def _energy_gap(res, cp):
    E = 0.5 * 1.3 * (res.qcd**2).sum(-1) + 1.3 * 9.81 * res.qc[:, 1]
    return np.max(np.abs(E - E[0] - cp.Qc.work - cp.Qu.work)), np.max(np.abs(E - E[0]))


def test_work_of_qc_and_qu_is_the_actual_systems_energy_change(pendulum_runs):
    plant, runs = pendulum_runs
    gaps = [_energy_gap(res, res.power(plant)) for res in runs.values()]
    # trapezoidal work on the output grid: error O(h²), so halving h divides it by ~4 (the
    # solver's own error, rtol 1e-10, is far below); 3 leaves room for the non-smooth start
    assert gaps[0][0] / gaps[1][0] >= 3.0
    assert gaps[1][0] <= 1e-2 * gaps[1][1]


def test_metric_changes_the_split_not_the_power(pendulum_runs):
    plant, runs = pendulum_runs
    res = runs[401]
    e, m = control_power(res), control_power(res, plant)
    assert (e.metric, m.metric) == ("I", "M")
    assert np.array_equal(e.Qu.power, m.Qu.power)
    # an ideal holonomic Qᶜ is normal to the circle: almost workless on q_c (which tracks it closely)
    assert m.Qc.run_workless_share > 0.99


def test_gyroscopic_force_is_workless_and_a_force_along_mqd_works():
    rng = np.random.default_rng(3)
    T, n = 40, 3
    t = np.linspace(0.0, 1.0, T)
    qd = rng.normal(size=(T, n))
    B = rng.normal(size=(n, n))
    M = B @ B.T + n * np.eye(n)
    S = rng.normal(size=(T, n, n))
    S = S - np.swapaxes(S, 1, 2)
    gyro = force_power(t, np.einsum("tij,tj->ti", S, qd), qd, M)
    # q̇ᵀSq̇ = 0: rounding only (~1e-15 of |q̇|²‖S‖)
    assert np.max(np.abs(gyro.power)) <= 1e-13 * np.max(np.abs(S)) * np.max((qd**2).sum(-1))
    assert np.allclose(gyro.workless_share, 1.0, rtol=0, atol=1e-12)
    along = force_power(t, qd @ M, qd, M)  # F = M q̇ (M symmetric)
    assert np.allclose(along.workless_share, 0.0, rtol=0, atol=1e-12)
    assert abs(along.run_workless_share) <= 1e-12


def test_mass_matrix_split_does_not_depend_on_the_coordinates():
    """q = P q': q̇' = P⁻¹q̇, F' = PᵀF, M' = PᵀMP — the power and the M-split are the same."""
    rng = np.random.default_rng(4)
    T, n = 30, 3
    t = np.linspace(0.0, 2.0, T)
    qd, F = rng.normal(size=(T, n)), rng.normal(size=(T, n))
    B, P = rng.normal(size=(n, n)), rng.normal(size=(n, n)) + 3 * np.eye(n)
    M = B @ B.T + np.eye(n)
    a = force_power(t, F, qd, M)
    b = force_power(t, F @ P, np.linalg.solve(P, qd.T).T, P.T @ M @ P)
    assert np.allclose(a.power, b.power, rtol=1e-12, atol=1e-12 * np.max(np.abs(a.power)))
    assert np.allclose(a.workless_share, b.workless_share, rtol=0, atol=1e-10)


def test_bad_inputs_are_named():
    with pytest.raises(ParameterError, match="`force` and `qd`"):
        force_power(np.arange(3.0), np.zeros((3, 2)), np.zeros((3, 3)))
    with pytest.raises(ParameterError, match="TrackingResult"):
        control_power(object())


def test_cli_prints_the_work_of_both_forces():
    pw = {"work": 1.5, "abs_work": 2.0, "max_abs_power": 3.0, "workless_share": 0.25}
    summary = {"metrics": {}, "power": {"metric": "M", "Qc": pw, "Qu": {**pw, "workless_share": float("nan")}},
               "solver": None, "solvers": {}}
    buf = io.StringIO()
    with redirect_stdout(buf):
        _print_run(summary)
    out = buf.getvalue()
    assert "work of Qᶜ on q_c" in out and "work of Qᵘ on q_c" in out
    assert "1.5 J (2 J)" in out and "workless share 25 %" in out and "3 W" in out
