"""Running a scenario, summarising it, and saving its trajectories (``robustrack run --save``)."""

from __future__ import annotations

import io
import warnings
from pathlib import Path

import numpy as np

from .._files import check_writable, write_atomic
from ..errors import ParameterError, ScenarioError
from .registry import choice_key
from .scenario import Scenario, chosen_overrides

__all__ = ["run_constrained_scenario", "run_scenario", "check_save_path", "save_trajectories"]


def check_save_path(path, name: str = "--save") -> Path:
    """Refuse a trajectories path no run could be written to, before anything runs.

    Parameters
    ----------
    path : str or Path
        The ``.npz`` file to write.
    name : str
        The argument's name for messages (default ``"--save"``).

    Returns
    -------
    Path

    Raises
    ------
    ParameterError
        A suffix other than ``.npz``; a folder; a read-only file; a folder that does not exist
        (:func:`~robustrack._files.check_parent`) or is not writable.
    """
    p = Path(path)
    if p.suffix != ".npz":
        raise ParameterError(f"`{name}` {str(p)!r} must end in .npz (numpy's archive, read by np.load); got "
                             f"{'suffix ' + repr(p.suffix) if p.suffix else 'no suffix'}. Nothing was run.")
    return check_writable(p, name)


def save_trajectories(path, result, scenario=None, *, mujoco=None) -> Path:
    """Write a run's trajectories to ``PATH.npz`` for your own plots, atomically.

    Arrays (time first): ``t (T,)``, ``q``, ``qd (T, n)`` and ``names (n,)``, the coordinate
    names (strings). A tracking run adds ``qc``, ``qcd`` (the controlled actual system),
    ``e = qc − q``, ``edot``, ``Qc``, ``Qu``; ``qa``, ``qad`` with the uncompensated copy; ``tau
    (T, k)`` with actuators. Here ``q`` is the nominal system. With ``scenario``, ``scenario_toml``
    (a string) holds the complete scenario the run was made with, overrides applied
    (:meth:`Scenario.to_toml`), so ``robustrack identify RUN.npz`` needs no ``--scenario``. With ``mujoco``,
    the MuJoCo loop's log: ``mujoco_t (K + 1,)``, ``mujoco_q``, ``mujoco_qd`` at its samples and ``mujoco_tau (K, n)``,
    the torque held on each interval (``robustrack identify RUN.npz --log mujoco``). Read with
    ``np.load(PATH)`` (no pickles). The file is written to a temporary file beside it and
    renamed into place, so a reader never sees half a file.

    Parameters
    ----------
    path : str or Path
        The ``.npz`` file (checked by :func:`check_save_path`); missing folders are made.
    result : ConstrainedResult or TrackingResult
        The run.
    scenario : Scenario, optional
        The scenario that made it (recorded as ``scenario_toml``).
    mujoco : MujocoRun, optional
        The same loop against MuJoCo (keyword-only; :func:`robustrack.loop.mujoco.run_mujoco`).

    Returns
    -------
    Path
        The file written.
    """
    p = check_save_path(path)
    if hasattr(result, "qc"):  # a TrackingResult
        names = result.info.get("coordinates", [])
        arrays = {"t": result.t, "q": result.q, "qd": result.qd, "qc": result.qc, "qcd": result.qcd,
                  "e": result.e, "edot": result.edot, "Qc": result.Qc, "Qu": result.Qu}
        arrays.update({k: getattr(result, k) for k in ("qa", "qad", "tau") if getattr(result, k) is not None})
    else:
        names = result.coordinates
        arrays = {"t": result.t, "q": result.q, "qd": result.qd}
    arrays["names"] = np.array([str(c) for c in names], dtype=str)
    if scenario is not None:
        arrays["scenario_toml"] = np.array(scenario.to_toml(), dtype=str)
    if mujoco is not None:
        arrays.update(mujoco_t=mujoco.t, mujoco_q=mujoco.q, mujoco_qd=mujoco.qd, mujoco_tau=mujoco.tau)
    buffer = io.BytesIO()
    np.savez(buffer, **{k: np.asarray(v) for k, v in arrays.items()})
    return write_atomic(p, buffer.getvalue())


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
        ``solver``, ``units`` and ``config``. ``metrics`` holds ``max_constraint_residual``,
        ``final_constraint_residual`` (None without constraint rows),
        ``max_error_vs_closed_form``, ``max_accel_residual`` and the scenario's extras,
        plus ``max_constraint_residual_per_row`` when the rows have different units;
        ``units`` (:func:`~robustrack.scenarios.units.constrained_units`) gives each
        metric's unit (``units["metrics"]``) and each residual row's (``residual_rows``).

    Raises
    ------
    ScenarioError
        ``scenario`` is a tracking scenario (use :func:`run_scenario`).
    """
    if scenario.spec.tracking:
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
    final = largest = per_row = None
    if result.residual is not None and result.residual.size:  # no rows (a penalty model): no residual, not NaN
        final = float(np.max(np.abs(result.residual[-1])))
        largest = result.max_constraint_residual
        per_row = np.max(np.abs(result.residual), axis=0).tolist()
    metrics = {"max_constraint_residual": largest}
    rows = problem.residual.rows if problem.residual is not None else ()
    if per_row is not None and len(set(rows)) > 1:  # rows in different units: each row on its own
        metrics["max_constraint_residual_per_row"] = per_row
    metrics.update(final_constraint_residual=final, max_error_vs_closed_form=None)
    if problem.reference is not None:
        metrics["max_error_vs_closed_form"] = float(np.max(np.abs(result.q - problem.reference(result.t))))
    if problem.extra_metrics is not None:
        metrics.update(problem.extra_metrics(result))
    has_rows = getattr(problem.constraint, "m", 1) > 0  # ‖A q̈ − b‖ of no rows is not a measurement
    metrics["max_accel_residual"] = float(np.max(result.accel_residual)) if result.t.size and has_rows else None
    note = least_squares_note(problem.plant, problem.constraint, result.q, result.qd, result.t,
                              nonideal=problem.nonideal)
    if note:
        warnings.warn(f"{scenario.name}: {note}", LeastSquaresMotion, stacklevel=2)
    from .units import constrained_units

    summary = {"scenario": scenario.name, "kind": scenario.kind, "title": scenario.title,
               "source": scenario.source, "metrics": metrics, "solver": result.solver.to_dict(),
               "units": constrained_units(problem.plant, problem.residual, problem.units),
               "config": scenario.config}
    return result, summary


def _already(scenario, item: str) -> bool:
    """Whether a ``compensator.type`` / ``compensator.f`` item is what the scenario already says (no re-validation)."""
    from .config import parse_override

    section, key, value = parse_override(item)
    return choice_key(scenario.config[section].get(key, "")) == choice_key(value)


def run_scenario(scenario: Scenario, *, compensator=None, f=None, progress=None, save=None) -> dict:
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
    save : str or Path, optional
        Also write the trajectories there (keyword-only; :func:`save_trajectories`). The
        path is checked before the run starts (:func:`check_save_path`).

    Returns
    -------
    dict
        The JSON summary: for a tracking scenario the one of
        :func:`robustrack.scenarios.tracking_kinds.run_tracking`, else the one of
        :func:`run_constrained_scenario`; with ``save``, ``saved`` is the file written.

    Raises
    ------
    ScenarioError
        ``compensator`` or ``f`` given for a scenario without a compensator, or an
        override that does not validate.
    ParameterError
        A ``save`` path that cannot be written (before anything runs).
    """
    if save is not None:
        check_save_path(save)
    logs = {}  # the runs beside robustrack's that `save` keeps (MuJoCo's log)
    if scenario.spec.tracking:
        from .tracking_kinds import run_tracking

        chosen = [item for item in chosen_overrides(scenario.spec, scenario.name, compensator, f)
                  if not _already(scenario, item)]
        scenario = scenario.with_overrides(chosen) if chosen else scenario
        result, summary = run_tracking(scenario, progress=progress, logs=logs)
    else:
        chosen_overrides(scenario.spec, scenario.name, compensator, f)  # refused with the reason if given
        result, summary = run_constrained_scenario(scenario)
    if save is not None:
        summary["saved"] = str(save_trajectories(save, result, scenario, mujoco=logs.get("mujoco")))
    return summary
