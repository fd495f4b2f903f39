"""Reports that speak task space (issue 32, items 11–12).

Truths: forward kinematics evaluated directly (the Jacobian against central differences of fk, the
mapped bound against fk(q + e) − fk(q) for errors e inside the bound, and its tightness as the
bound shrinks); the plant's coordinate kinds (the units a residual's rows must carry); the
report's own files (summary.json, report.md) for a run built in a script.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import sympy as sp

from robustrack.constraints import Stabilization
from robustrack.controllers import GSS
from robustrack.plants import Plant
from robustrack.reports import write_report
from robustrack.reports.describe import system_name
from robustrack.requirements import JointTrajectory, TaskSpaceTrajectory, consistent_initial_state
from robustrack.tracking import TrackingProblem
from robustrack.tracking.figures import coordinates_figure, errors_figure

L1, L2 = 0.5, 0.4


def _tip(q):
    sin, cos = (sp.sin, sp.cos) if isinstance(q[0], sp.Basic) else (np.sin, np.cos)
    return [L1 * cos(q[0]) + L2 * cos(q[0] + q[1]), L1 * sin(q[0]) + L2 * sin(q[0] + q[1])]


def _arm(kinds=("angle", "angle")):
    """A two-link arm from functions (horizontal plane: no gravity), point masses at the link ends."""
    def M(q, m1, m2):
        c2 = np.cos(q[..., 1])
        a = (m1 + m2) * L1**2 + m2 * L2**2 + 2 * m2 * L1 * L2 * c2
        b = m2 * L2**2 + m2 * L1 * L2 * c2
        d = m2 * L2**2 + 0 * c2
        return np.stack([np.stack([a, b], -1), np.stack([b, d], -1)], -2)

    def Q(q, qd, m1, m2):
        h = m2 * L1 * L2 * np.sin(q[..., 1])
        return np.stack([h * qd[..., 1] * (2 * qd[..., 0] + qd[..., 1]), -h * qd[..., 0] ** 2], -1)

    return Plant.from_functions(M, Q, params={"m1": 1.0, "m2": 0.8}, names=["shoulder", "elbow"], kinds=list(kinds),
                                vectorized=True)


def _circle():
    t = sp.Symbol("t")
    return TaskSpaceTrajectory(_tip, [0.45 + 0.15 * sp.cos(t), 0.25 + 0.15 * sp.sin(t)],
                               names=["shoulder", "elbow"], stabilization=Stabilization.second_order(xi=1.0, omega=10.0))


def test_residual_units_come_from_the_requirement():
    """Task space: the requirement's unit; a joint reference: each coordinate's (rad, m), not "[constraint]"."""
    req = _circle()
    q0, qd0 = consistent_initial_state(req, [0.2, 1.5], [0.0, 0.0])
    gss = GSS(K=10.0, gamma_prime=10.0, beta0=10.0, alpha0=0.5, sigma=1.0)
    problem = TrackingProblem(_arm(), req, gss, q0, qd0, (0.0, 0.2))
    assert problem.residual.unit == "m" and problem.residual.rows == ("m", "m") and problem.residual.accel == "m/s²"
    mm = TaskSpaceTrajectory(_tip, [450 + 0 * sp.Symbol("t"), 250 + 0 * sp.Symbol("t")], names=["a", "b"], unit="mm")
    assert mm.row_units(None) == ("mm", "mm")
    t = sp.Symbol("t")
    joint = JointTrajectory([sp.sin(t), 0.1 * t], names=["shoulder", "slide"])
    problem = TrackingProblem(_arm(("angle", "length")), joint, gss, [0.0, 0.0], [1.0, 0.1], (0.0, 0.2))
    assert problem.residual.rows == ("rad", "m") and problem.residual.unit == "rad or m"


def test_jacobian_and_mapped_bound_against_the_kinematics():
    """J = ∂fk/∂q against central differences; the mapped bound holds for errors inside b and is tight.

    Central differences with h = 1e-6 have error ~h² |fk'''| ≈ 1e-12 plus rounding 1e-16/h ≈ 1e-10.
    Tightness: e = b·sign(J_i) of the row i with the largest row sum moves fk_i by ‖J‖∞ b + O(b²),
    so the ratio to the bound tends to 1 like b (measured 1 − 4e-4 at b = 1e-3).
    """
    req = _circle()
    rng = np.random.default_rng(0)
    q = rng.uniform(-2, 2, size=(50, 2))
    J = req.jacobian(q)
    h = 1e-6
    fd = np.stack([(req.task_position(q + h * e) - req.task_position(q - h * e)) / (2 * h) for e in np.eye(2)], -1)
    assert np.max(np.abs(J - fd)) < 1e-8
    for b in (1e-1, 1e-3):
        bound = req.mapped_bound(q, b)
        for e in rng.uniform(-b, b, size=(20, 1, 2)) * np.r_[1.0, 1.0]:
            moved = np.max(np.abs(req.task_position(q + e) - req.task_position(q)), axis=-1)
            # second-order exact; the third-order remainder is ≤ b³ Σ|fk'''|/6 ≈ 0.2 b³ here
            assert np.all(moved <= bound + 0.2 * b**3)
    b = 1e-3
    i = np.argmax(np.abs(J).sum(-1), axis=-1)
    worst = b * np.sign(J[np.arange(len(q)), i])
    moved = np.abs((req.task_position(q + worst) - req.task_position(q))[np.arange(len(q)), i])
    assert np.all(moved / req.mapped_bound(q, b) > 1 - 5 * b)


@pytest.fixture(scope="module")
def task_run():
    req = _circle()
    q0, qd0 = consistent_initial_state(req, [0.2, 1.5], [0.0, 0.0])
    arm = _arm()
    gss = GSS(K=10.0, gamma_prime=6.0, beta0=10.0, alpha0=0.5, sigma=1.0)
    problem = TrackingProblem(arm, req, gss, q0, qd0, (0.0, 0.5), actual=arm.replace(m2=0.96), n_points=101,
                              gamma=6.0)
    return problem, problem.simulate()


def test_report_of_a_task_space_run_speaks_task_space(task_run, tmp_path):
    """Tip path figure first, tip error and the mapped bound in m, the residual in m, the system by the user's names."""
    problem, result = task_run
    paths = write_report(result, tmp_path / "r", title="Two-link arm: the tip draws a circle", command="python arm.py")
    doc = json.loads(paths.summary.read_text())
    assert doc["title"] == "Tracking report: Two-link arm: the tip draws a circle"
    assert doc["figures"][0]["file"] == "figures/task.png" and (tmp_path / "r" / "figures" / "task.png").is_file()
    ts = doc["task_space"]
    assert ts["unit"] == "m"
    tip = np.max(np.abs(problem.constraint.task_position(result.qc) - problem.constraint.desired(result.t)))
    assert ts["max_abs_task_error"] == pytest.approx(tip, rel=1e-12)
    assert doc["units"]["residual"] == "m" and doc["units"]["metrics"]["max_constraint_residual_controlled"] == "m"
    # the promised bound held, so the tip's e stays inside the bound mapped through J (to second order)
    assert doc["metrics"]["bounds_held"] and ts["max_abs_task_e"] <= ts["mapped_bound"]
    md = paths.markdown.read_text()
    assert "python arm.py" in md  # the caller's reproduce line is kept
    assert "| max tip error ‖fk(q_c) − x_d‖∞ |" in md and "joint bound mapped to task space" in md
    assert "[constraint]" not in md and "plant FunctionPlant (shoulder, elbow)" in md
    # without a title, the system is named by the plant (the title is "Tracking report: " + this name, as above)
    assert system_name(None, problem, None) == "FunctionPlant (shoulder, elbow), built in a script"


def test_figures_label_each_coordinate_in_its_own_unit(task_run):
    """Mixed kinds (a revolute and a prismatic joint): rad on one panel, m on the other, not "rad or m"."""
    problem, result = task_run
    mixed = problem.replace(nominal=_arm(("angle", "length")))
    run = mixed.simulate()
    labels = [ax.get_ylabel() for ax in coordinates_figure(run).axes]
    assert labels == ["shoulder (rad)", "elbow (m)"]
    legend = [t.get_text() for t in errors_figure(run).axes[0].get_legend().get_texts()]
    assert "|e_shoulder| (rad)" in legend and "|e_elbow| (m)" in legend
