"""The task-space part of a report: the tip's path and error in the task's unit, the joint bound mapped there.

A run whose requirement is a :class:`~robustrack.requirements.TaskSpaceTrajectory` (fk(q) =
x_d(t), W 5.2.8) is judged by its user in task space: where the tip went, how far from the
path (in the requirement's ``unit``, m for a position), and what the compensator's promised
joint-space bound ‖e‖∞ ≤ b (W 7.2) means there — mapped through the Jacobian along the
nominal motion (:meth:`~robustrack.requirements.TaskSpaceTrajectory.mapped_bound`: the
induced ∞-norm, max row sum of |J|, times b, plus the second-order term).
"""

from __future__ import annotations

import numpy as np

from .._format import format_value

__all__ = ["task_requirement", "task_space_metrics", "task_space_rows"]


def task_requirement(problem):
    """The problem's task-space requirement, or None (a constraint with ``task_position`` and ``mapped_bound``).

    Parameters
    ----------
    problem : TrackingProblem or None

    Returns
    -------
    TaskSpaceTrajectory or None
    """
    constraint = getattr(problem, "constraint", None)
    if all(hasattr(constraint, a) for a in ("task_position", "desired", "mapped_bound")):
        return constraint
    return None


def task_space_metrics(result, requirement) -> dict:
    """The task-space numbers of a run under its requirement.

    Parameters
    ----------
    result : TrackingResult
        The run (its nominal q, controlled q_c, uncompensated q_a and promised bounds).
    requirement : TaskSpaceTrajectory
        The path it followed.

    Returns
    -------
    dict
        In the requirement's ``unit``: ``unit``; ``max_abs_task_error`` (controlled: max |fk(q_c) − x_d|), ``…_nominal``,
        ``…_uncompensated`` (None without the copy); ``max_abs_task_e`` (max |fk(q_c) − fk(q)|,
        the tracking error e seen at the tip); ``mapped_bound`` (the promised ‖e‖∞ bound mapped
        along the nominal motion, None without a finite bound) and ``max_norm_J`` (max_t ‖J‖∞).
    """
    from ..requirements import max_abs_task_error

    x, xc = requirement.task_position(result.q), requirement.task_position(result.qc)
    bound = (result.info.get("bounds") or {}).get("e")
    finite = bound is not None and np.isfinite(bound)
    return {"unit": requirement.unit,
            "max_abs_task_error": max_abs_task_error(result, requirement),
            "max_abs_task_error_nominal": max_abs_task_error(result, requirement, which="nominal"),
            "max_abs_task_error_uncompensated": None if result.qa is None else
            max_abs_task_error(result, requirement, which="uncompensated"),
            "max_abs_task_e": float(np.max(np.abs(xc - x))),
            "max_norm_J": float(np.max(np.abs(requirement.jacobian(result.q)).sum(axis=-1))),
            "mapped_bound": float(np.max(requirement.mapped_bound(result.q, bound))) if finite else None}


def task_space_rows(metrics: dict, joint_unit: str) -> list:
    """(quantity, value, note) rows of a report's results table for :func:`task_space_metrics`.

    Parameters
    ----------
    metrics : dict
        :func:`task_space_metrics`.
    joint_unit : str
        The unit of ‖e‖∞ (the coordinates').

    Returns
    -------
    list of (str, str, str)
    """
    u = metrics["unit"]
    unc = metrics["max_abs_task_error_uncompensated"]
    bound = metrics["mapped_bound"]
    return [
        ("max tip error ‖fk(q_c) − x_d‖∞", format_value(metrics["max_abs_task_error"], u),
         f"controlled; nominal {format_value(metrics['max_abs_task_error_nominal'], u)}"
         + ("" if unc is None else f", uncompensated {format_value(unc, u)}")),
        ("max ‖fk(q_c) − fk(q)‖∞", format_value(metrics["max_abs_task_e"], u), "the tracking error e seen at the tip"),
        ("joint bound mapped to task space", "— (no finite bound)" if bound is None else format_value(bound, u),
         f"max_t [‖J(q(t))‖∞ b + ½ Σ|∂²fk| b²] along the nominal motion, ‖·‖∞ over the task's components "
         f"(‖J‖∞ = max row sum of |∂fk/∂q|, up to {format_value(metrics['max_norm_J'], f'{u}/{joint_unit}')}); "
         "b = the promised bound on ‖e‖∞; exact to second order in b"),
    ]
