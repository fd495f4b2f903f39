"""The certificate of a scenario (``robustrack certify NAME``; docs/theory/certificate.md).

Builds the scenario's tracking problem, boxes ±spread around its uncertain parameters (the
kind's masses by default, as ``gamma`` and ``montecarlo`` sample them) — or, for a scenario that names
its uncertain parameters (``[uncertainty.parameters.NAME]``), their box, as ``worst-case`` searches it —
and calls :func:`robustrack.certification.certify`. What the certificate cannot enclose is refused with
the reason: a plant without a symbolic form (URDF through Pinocchio, plants from functions), and the actual
plant's friction and disturbance (``[actual]``: their δQ is not in the plant's symbolic form).
"""

from __future__ import annotations

import dataclasses
from typing import Callable, Sequence

from ..errors import ParameterError, ScenarioError
from .scenario import Scenario, load_scenario

__all__ = ["run_certify"]


def run_certify(scenario: Scenario | str, spread: float | None = None, *, parameter: str | Sequence[str] | None = None,
                tolerance: float = 0.05, level: str = "box", gamma: float | None = None, budget_s: float = 600.0,
                progress: Callable | None = None):
    """Certify a tracking scenario over ±``spread`` on its uncertain parameters.

    Parameters
    ----------
    scenario : Scenario or str
        A tracking scenario (its kind builds a TrackingProblem) or a catalog name.
    spread : float, optional
        Relative half-width of the box (default 0.1 = ±10 % on each uncertain parameter). Refused, as is
        ``parameter``, for a scenario with named uncertain parameters: the box is theirs.
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
        What :func:`~robustrack.certification.certify` refuses (no symbolic form, ...), the actual plant's
        friction and disturbance (``[actual]``), a named friction coefficient, ``spread`` or ``parameter`` with
        named parameters.
    """
    from ..certification import ParameterBox, certify
    from ..certification.model import check_certifiable
    from ..tracking.problem import TrackingProblem
    from .actual_forces import friction_parameters, scenario_forces
    from .parameter_shift import DEFAULT_SPREAD, has_named_parameters, scenario_uncertain_set

    if isinstance(scenario, str):
        scenario = load_scenario(scenario)
    named = has_named_parameters(scenario)
    if named and (spread is not None or parameter is not None):
        raise ParameterError(f"`{'spread' if spread is not None else 'parameter'}` does not apply: scenario "
                             f"{scenario.name!r} names its uncertain parameters ([uncertainty.parameters.NAME]), and "
                             "the certificate's box is theirs; leave it out, or change the tables.")
    if parameter is None and not named:
        parameter = scenario.spec.uncertain_parameters(scenario.config)
    problem = scenario.build()
    if not isinstance(problem, TrackingProblem):
        raise ScenarioError(f"scenario {scenario.name!r} (kind {scenario.kind!r}) is not a tracking scenario: a "
                            "certificate bounds δq of a tracking problem's nominal motion.")
    try:
        check_certifiable(problem)  # before the box is built or anything integrated
        if scenario_forces(scenario.config) is not None:
            raise ParameterError(
                "its actual plant has friction or a disturbance ([actual]: `actual.viscous`, `coulomb`, "
                "`disturbance`), a given force δQ outside the plant's symbolic form that the certificate does not "
                "enclose; certify without them (--set actual.viscous=0 --set actual.coulomb=0 --set "
                "actual.disturbance.kind=none), and estimate Γ with them by sampling (robustrack gamma).")
        if named:
            unc = scenario_uncertain_set(scenario, nominal=problem.nominal)
            friction = [n for n in unc.names if n in friction_parameters(scenario.config, problem.nominal.coordinates)]
            if friction:
                raise ParameterError(
                    f"`uncertainty.parameters.{friction[0]}` is a friction coefficient of the actual plant's forces, "
                    "not a symbol of the plant's form: the certificate cannot enclose it; estimate Γ over it by "
                    "sampling (robustrack gamma), or certify the plant's own parameters alone.")
            box = ParameterBox.of_set(problem.nominal, unc)
        else:
            box = ParameterBox.around(problem.nominal, DEFAULT_SPREAD if spread is None else spread, parameter)
    except ParameterError as exc:
        raise ParameterError(f"scenario {scenario.name!r}: {exc}") from None
    cert = certify(problem, box, tolerance=tolerance, level=level, gamma=gamma, budget_s=budget_s,
                   progress=progress)
    # the scenario it certifies, for the studies that take it back (certification/saved.py checks it)
    fingerprint = {**cert.extras["fingerprint"], "scenario": scenario.name}
    return dataclasses.replace(cert, extras={**cert.extras, "scenario": scenario.name, "fingerprint": fingerprint})
