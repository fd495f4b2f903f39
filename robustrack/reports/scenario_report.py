"""``robustrack report NAME``: run a tracking scenario and its studies, then present them.

:func:`report_scenario` is the one place that runs for a report: the scenario
(:func:`~robustrack.scenarios.tracking_kinds.run_tracking`), optionally the Γ Monte Carlo
(:func:`~robustrack.scenarios.gamma.run_gamma`) and a closed-loop campaign (run, or loaded from
its store, and its worst sample tracked again); then :func:`~robustrack.reports.report.write_report`,
which only presents results, writes the files.
"""

from __future__ import annotations

from pathlib import Path

from .._files import check_writable, no_empty_folder_left
from .._validate import positive_int
from ..errors import ParameterError, ScenarioError
from ..scenarios import Scenario
from ..scenarios.scenario import resolve_scenario
from .report import ReportPaths, check_out_dir, write_report

__all__ = ["report_scenario"]


def _resolve(scenario, overrides, compensator, f) -> Scenario:
    if not isinstance(scenario, (Scenario, str, Path)):
        raise ParameterError(f"`scenario` must be a Scenario, a catalog name or a path to a .toml file; "
                             f"got {type(scenario).__name__}.")
    sc = resolve_scenario(scenario, overrides, compensator=compensator, f=f)  # validated once
    if not sc.spec.tracking:
        raise ScenarioError(
            f"scenario {sc.name!r} (kind {sc.kind!r}) is a constrained simulation, not a tracking scenario; "
            "reports show nominal vs actual systems, errors and Qᵘ, which it does not have. "
            "Use `robustrack run` for it, or a tracking scenario (e.g. triple-pendulum).")
    return sc


def _campaign(sc, campaign, montecarlo, montecarlo_spread, seed):
    """(CampaignResult, its worst sample's TrackingResult) — run or loaded — or (None, None)."""
    if campaign is None and not montecarlo:
        return None, None
    from ..campaigns import load_campaign
    from ..scenarios.campaign import ScenarioLoop, campaign_settings, run_montecarlo

    if campaign is not None and montecarlo:
        raise ParameterError("give a campaign store (`campaign`, --campaign) or a number of samples to run "
                             "(`montecarlo`, --montecarlo), not both.")
    if campaign is not None:
        result = campaign if hasattr(campaign, "records") else load_campaign(campaign, name="--campaign")
        mine = campaign_settings(sc)
        if {k: result.settings.get(k) for k in mine} != mine:
            raise ParameterError(f"the campaign store {str(getattr(result, 'store', campaign))!r} holds a campaign of "
                                 "other settings than this report's scenario (name, compensator or configuration); "
                                 "report it with the same scenario, --set and --compensator it was run with.")
    else:
        montecarlo = positive_int(montecarlo, "montecarlo", minimum=0, what="closed-loop samples")
        result = run_montecarlo(sc, montecarlo, montecarlo_spread, seed, progress=None)
    worst = result.worst
    worst_run = None
    if worst is not None:
        unc = result.settings.get("uncertainty") or {}
        loop = ScenarioLoop(sc)()
        from ..scenarios.campaign import campaign_uncertainty

        # the sample's plant: its δ and its δQ, as the campaign made it (its named set or its names, its seed, its forces)
        actual = campaign_uncertainty(sc, unc.get("spread"), unc["seed"]).actual(loop.nominal, worst.dm, worst.index)
        worst_run = loop.track(loop.nominal_run(), actual)
    return result, worst_run


def report_scenario(scenario, out_dir, *, overrides=None, compensator=None, f=None, gamma_samples: int = 0,
                    gamma_spread: float | None = None, seed: int = 0, progress=None, overwrite: bool = False,
                    campaign=None, montecarlo: int = 0, montecarlo_spread: float | None = None,
                    certificate=None, labels=None) -> ReportPaths:
    """Run a tracking scenario (and the studies asked for) and write its report: ``robustrack report``.

    Parameters
    ----------
    scenario : Scenario or str or Path
        A scenario, a catalog name, or a path to a ``.toml`` file. Must be a tracking scenario.
    out_dir : str or Path
        Folder to write into (refused before anything runs if it exists and is not empty,
        unless ``overwrite``).
    overrides : list of str, optional
        ``SECTION.KEY=VALUE`` overrides (``--set``).
    compensator, f : str, optional
        Override ``compensator.type`` and ``compensator.f`` (``--compensator``, ``--f``).
    gamma_samples : int, default 0
        When > 0, also run the Γ Monte Carlo with this many sampled actual plants (W Figs. 7.1–7.8).
    gamma_spread : float, optional
        Relative half-width of its uniform mass draws (0.1 = ±10 %, the default); refused for a scenario with
        named uncertain parameters (each has its own range).
    seed : int, default 0
        Seed of the Monte Carlo draws (recorded in the report).
    progress : callable, optional
        ``progress(t, t_end)`` during the tracking simulation (about once a second).
    overwrite : bool, default False
        As :func:`~robustrack.reports.report.write_report`.
    campaign : str, Path or CampaignResult, optional
        A closed-loop Monte Carlo of this scenario, compensator and configuration (its store,
        ``--campaign``); refused if it was run with other settings.
    montecarlo : int, default 0
        When > 0, run a closed-loop Monte Carlo of this many samples instead (``--montecarlo N``).
    montecarlo_spread : float, optional
        Its uniform ±spread on the masses (its seed is ``seed``; default 0.1, refused with named parameters).
    certificate : Certificate, dict, str or Path, optional
        A certificate of this scenario (``robustrack certify NAME --json FILE``, ``--certificate``):
        its certified Γ beside the run's and the campaign's (:func:`~robustrack.reports.report.write_report`);
        checked before anything runs.
    labels : dict, optional
        How the caller names the arguments in messages (the command line: ``{"certificate": "--certificate"}``);
        by default their Python names.

    Returns
    -------
    ReportPaths

    Raises
    ------
    ScenarioError
        The scenario is unknown, an override is invalid, or it is not a tracking scenario.
    ParameterError
        ``gamma_samples`` or ``montecarlo`` is negative or not an integer; a campaign of other settings.
    OutputExistsError
        ``out_dir`` exists and is not empty, and ``overwrite`` is False.
    """
    from ..scenarios.gamma import run_gamma
    from ..scenarios.tracking_kinds import run_tracking

    gamma_samples = positive_int(gamma_samples, "gamma_samples", minimum=0, what="Γ Monte Carlo samples; 0: none")
    check_out_dir(Path(out_dir), overwrite)
    with no_empty_folder_left(out_dir):  # Ctrl-C or a failure before anything is written: no empty folder left
        check_writable(Path(out_dir), "out_dir", folder=True)
        sc = _resolve(scenario, overrides, compensator, f)
        if certificate is not None:  # read and checked against the scenario before anything runs
            from ..certification.saved import certificate_summary, check_covers
            from ..scenarios.certify import scenario_force_box

            name = (labels or {}).get("certificate", "certificate")
            certificate = certificate_summary(certificate, name)
            problem = sc.build()
            check_covers(certificate, problem, None, name, scenario=sc.name, forces=scenario_force_box(sc, problem))
        camp, worst_run = _campaign(sc, campaign, montecarlo, montecarlo_spread, seed)
        result, summary = run_tracking(sc, progress=progress)
        gamma = run_gamma(sc, int(gamma_samples), gamma_spread, seed=seed) if gamma_samples > 0 else None
        command = ("# in this report's folder; reproduced/summary.json then equals summary.json except wall_times_s\n"
                   "robustrack report scenario.toml -o reproduced" + (
                       f" --gamma-samples {gamma_samples}"
                       + ("" if gamma_spread is None else f" --gamma-spread {gamma_spread:g}") + f" --seed {seed}"
                       if gamma_samples > 0 else ""))
        return write_report(result, out_dir, scenario=sc, gamma=gamma, campaign=camp, campaign_worst=worst_run,
                            command=command, overwrite=overwrite, certificate=certificate,
                            mujoco=summary.get("mujoco"))
