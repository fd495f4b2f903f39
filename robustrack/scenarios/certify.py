"""The certificate of a scenario (``robustrack certify NAME``; docs/theory/certificate.md).

Builds the scenario's tracking problem, boxes ±spread around its uncertain parameters (the
kind's masses by default, as ``gamma`` and ``montecarlo`` sample them) and calls
:func:`robustrack.certification.certify`.
"""

from __future__ import annotations

import dataclasses
from typing import Callable, Sequence

from ..errors import ParameterError, ScenarioError
from .scenario import Scenario, load_scenario

__all__ = ["run_certify"]


def run_certify(scenario: Scenario | str, spread: float = 0.1, *, parameter: str | Sequence[str] | None = None,
                tolerance: float = 0.05, level: str = "box", gamma: float | None = None, budget_s: float = 600.0,
                progress: Callable | None = None):
    """Certify a tracking scenario over ±``spread`` on its uncertain parameters.

    Parameters
    ----------
    scenario : Scenario or str
        A tracking scenario (its kind builds a TrackingProblem) or a catalog name.
    spread : float, default 0.1
        Relative half-width of the box (0.1 = ±10 % on each uncertain parameter).
    parameter : str or sequence of str, optional
        The plant parameters of the box (default: the kind's uncertain ones, e.g. ``m``).
    tolerance, level, gamma, budget_s, progress
        As :func:`robustrack.certification.certify`.

    Returns
    -------
    Certificate
        Its ``extras`` name the scenario (``scenario``), which the studies taking it back compare.

    Raises
    ------
    ScenarioError
        The scenario builds no tracking problem.
    ParameterError
        What :func:`~robustrack.certification.certify` refuses (no symbolic form, ...).
    """
    from ..certification import ParameterBox, certify
    from ..certification.model import check_certifiable
    from ..tracking.problem import TrackingProblem

    if isinstance(scenario, str):
        scenario = load_scenario(scenario)
    if parameter is None:
        parameter = scenario.spec.uncertain_parameters(scenario.config)
    problem = scenario.build()
    if not isinstance(problem, TrackingProblem):
        raise ScenarioError(f"scenario {scenario.name!r} (kind {scenario.kind!r}) is not a tracking scenario: a "
                            "certificate bounds δq of a tracking problem's nominal motion.")
    try:
        check_certifiable(problem)  # before the box is built or anything integrated
        box = ParameterBox.around(problem.nominal, spread, parameter)
    except ParameterError as exc:
        raise ParameterError(f"scenario {scenario.name!r}: {exc}") from None
    cert = certify(problem, box, tolerance=tolerance, level=level, gamma=gamma, budget_s=budget_s,
                   progress=progress)
    # the scenario it certifies, for the studies that take it back (certification/saved.py checks it)
    fingerprint = {**cert.extras["fingerprint"], "scenario": scenario.name}
    return dataclasses.replace(cert, extras={**cert.extras, "scenario": scenario.name, "fingerprint": fingerprint})
