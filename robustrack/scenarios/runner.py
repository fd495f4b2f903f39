"""Running a constrained-simulation scenario and summarising it."""

from __future__ import annotations

import warnings

import numpy as np

from ..errors import ScenarioError
from .scenario import KINDS, Scenario

__all__ = ["run_constrained_scenario", "run_scenario"]


def run_constrained_scenario(scenario: Scenario):
    """Simulate ``scenario`` and return ``(result, summary)``.

    ``summary`` is the JSON document of ``robustrack run``: ``scenario``,
    ``metrics`` (``max_constraint_residual``, ``max_error_vs_closed_form`` or
    ``None`` where the seed gives no closed form, plus scenario extras) and
    ``solver`` (method, rtol, atol, nfev, success, wall_s, ...).

    Parameters
    ----------
    scenario : Scenario
        A constrained-simulation scenario (a kind without a compensator); its
        ``[simulation]`` table gives ``n_points``, ``method``, ``rtol`` and ``atol``.

    Returns
    -------
    result : ConstrainedResult
        The simulation (:func:`robustrack.tracking.simulate_constrained`).
    summary : dict
        JSON-ready: ``scenario``, ``kind``, ``title``, ``source``, ``metrics``,
        ``solver`` and ``config``. ``metrics`` holds ``max_constraint_residual``,
        ``final_constraint_residual``, ``max_error_vs_closed_form``,
        ``max_accel_residual`` and the scenario's extras.

    Raises
    ------
    ScenarioError
        ``scenario`` is a tracking scenario (use :func:`run_scenario`).
    """
    if KINDS[scenario.kind].tracking:
        raise ScenarioError(f"scenario {scenario.name!r} is a tracking scenario; use run_scenario().")
    problem = scenario.build()
    sim = scenario.config["simulation"]
    from ..tracking import simulate_constrained
    from ..tracking.assess import LeastSquaresMotion, least_squares_note

    result = simulate_constrained(
        problem.plant, problem.constraint, problem.q0, problem.qd0, problem.t_span,
        n_points=sim["n_points"], method=sim["method"], rtol=sim["rtol"], atol=sim["atol"],
        nonideal=problem.nonideal,
    )
    final = None
    if result.residual is not None and result.residual.size:
        final = float(np.max(np.abs(result.residual[-1])))
    metrics = {"max_constraint_residual": result.max_constraint_residual,
               "final_constraint_residual": final,
               "max_error_vs_closed_form": None}
    if problem.reference is not None:
        metrics["max_error_vs_closed_form"] = float(np.max(np.abs(result.q - problem.reference(result.t))))
    if problem.extra_metrics is not None:
        metrics.update(problem.extra_metrics(result))
    metrics["max_accel_residual"] = float(np.max(result.accel_residual)) if result.t.size else None
    note = least_squares_note(problem.plant, problem.constraint, result.q, result.qd, result.t,
                              nonideal=problem.nonideal)
    if note:
        warnings.warn(f"{scenario.name}: {note}", LeastSquaresMotion, stacklevel=2)
    summary = {"scenario": scenario.name, "kind": scenario.kind, "title": scenario.title,
               "source": scenario.source, "metrics": metrics, "solver": result.solver.to_dict(),
               "config": scenario.config}
    return result, summary


def run_scenario(scenario: Scenario, *, compensator=None, f=None, progress=None) -> dict:
    """Run any catalog scenario and return its JSON summary (see ``robustrack run``).

    ``compensator`` and ``f`` (tracking scenarios only) override
    ``compensator.type`` and ``compensator.f``; ``progress(t, t_end)`` is called
    about once a second during a tracking simulation.

    Parameters
    ----------
    scenario : Scenario
        A loaded scenario (:func:`load_scenario`), of any kind.
    compensator : str, optional
        A compensator name (keyword-only), set as ``compensator.type``; tracking
        scenarios only. None or empty: as configured.
    f : str, optional
        A control function name (keyword-only), set as ``compensator.f``; tracking
        scenarios only. None or empty: as configured.
    progress : callable, optional
        ``progress(t, t_end)`` (keyword-only), passed to the tracking simulation;
        ignored by constrained simulations.

    Returns
    -------
    dict
        The JSON summary: for a tracking scenario the one of
        :func:`robustrack.scenarios.tracking_kinds.run_tracking`, else the one of
        :func:`run_constrained_scenario`.

    Raises
    ------
    ScenarioError
        ``compensator`` or ``f`` given for a scenario without a compensator, or an
        override that does not validate.
    """
    if KINDS[scenario.kind].tracking:
        from .tracking_kinds import run_tracking

        overrides = ([f"compensator.type={compensator!r}"] if compensator else []) + (
            [f"compensator.f={f!r}"] if f else [])
        return run_tracking(scenario.with_overrides(overrides) if overrides else scenario, progress=progress)[1]
    if compensator is not None or f is not None:
        raise ScenarioError(
            f"scenario {scenario.name!r} is a constrained simulation without a compensator; "
            "--compensator and --f apply to tracking scenarios."
        )
    return run_constrained_scenario(scenario)[1]
