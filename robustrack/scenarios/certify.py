"""The certificate of a scenario (``robustrack certify NAME``; docs/theory/certificate.md).

Builds the scenario's tracking problem, boxes ±spread around its uncertain parameters (the
kind's masses by default, as ``gamma`` and ``montecarlo`` sample them) — or, for a scenario that names
its uncertain parameters (``[uncertainty.parameters.NAME]``), their box, as ``worst-case`` searches it —
and calls :func:`robustrack.certification.certify` with the actual plant's friction and disturbance
(``[actual]``: :func:`scenario_force_box`, the coefficients known, ±``friction_spread`` or named parameters, the
disturbance by its bound). What the certificate cannot enclose is refused with the reason: a plant without a
symbolic form (URDF through Pinocchio, plants from functions).
"""

from __future__ import annotations

import dataclasses
from typing import Callable, Sequence

from ..errors import ParameterError, ScenarioError
from .scenario import Scenario, load_scenario

__all__ = ["run_certify", "scenario_force_box"]


def scenario_force_box(scenario: Scenario, problem):
    """The friction and disturbance of a scenario's actual plants, as a certificate covers them (or None).

    ``[actual]``'s coefficients (each ``c (1 ± friction_spread)``, as ``montecarlo`` and ``gamma`` draw them, or a
    named parameter's range), the disturbance's bound (:class:`~robustrack.certification.forces.ForceBox`). What
    ``certify`` encloses and what a study's ``--certificate`` is checked against (the fingerprint).

    Parameters
    ----------
    scenario : Scenario
    problem : TrackingProblem
        Its built problem (another kind's: None).

    Returns
    -------
    ForceBox or None

    Raises
    ------
    ParameterError
        Forces the certificate cannot enclose, or an actual plant whose δQ is more than ``[actual]``'s (a python
        factory's own ForcedPlant beneath them).
    """
    from ..certification.forces import ForceBox, problem_forces
    from ..plants.forced import forced_terms
    from .actual_forces import scenario_forces
    from .parameter_shift import has_named_parameters, scenario_uncertain_set

    if not hasattr(problem, "nominal"):
        return None  # not a tracking problem: nothing a certificate covers (check_covers refuses it by its name)
    named = scenario_uncertain_set(scenario, nominal=problem.nominal) if has_named_parameters(scenario) else None
    coordinates = problem.nominal.coordinates
    forces = scenario_forces(scenario.config, coordinates if named is not None else None)
    if forces is None:
        return problem_forces(problem)  # a python factory's own actual plant may carry some
    if len(forced_terms(problem.actual)) > 1:
        raise ParameterError("the actual plant has a given force δQ of its own (the factory's) beneath [actual]'s "
                             "friction and disturbance: certify one of the two (leave [actual] out, or the factory's "
                             "actual plant without its δQ).")
    friction = [p for p in (named or ()) if p.name in forces.parameters]
    return ForceBox.of(forces, coordinates, friction or None)


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
        What :func:`~robustrack.certification.certify` refuses (no symbolic form, a disturbance without a bound,
        ...), ``spread`` or ``parameter`` with named parameters.
    """
    from ..certification import ParameterBox, certify
    from ..certification.model import check_certifiable
    from ..tracking.problem import TrackingProblem
    from .actual_forces import friction_parameters
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
        forces = scenario_force_box(scenario, problem)  # [actual]'s friction (its box) and disturbance (its bound)
        if named:
            unc = scenario_uncertain_set(scenario, nominal=problem.nominal)
            friction = friction_parameters(scenario.config, problem.nominal.coordinates)
            own = [p for p in unc if p.name not in friction]  # the friction coefficients' ranges are in `forces`
            if not own:
                raise ParameterError(
                    f"every named parameter ({', '.join(unc.names)}) is a friction coefficient: the box needs one of "
                    "the plant's too; a known one is a zero range ([uncertainty.parameters.NAME] percent = 0).")
            box = ParameterBox.of_set(problem.nominal, own)
        else:
            box = ParameterBox.around(problem.nominal, DEFAULT_SPREAD if spread is None else spread, parameter)
    except ParameterError as exc:
        raise ParameterError(f"scenario {scenario.name!r}: {exc}") from None
    cert = certify(problem, box, forces=forces, tolerance=tolerance, level=level, gamma=gamma, budget_s=budget_s,
                   progress=progress)
    # the scenario it certifies, for the studies that take it back (certification/saved.py checks it)
    fingerprint = {**cert.extras["fingerprint"], "scenario": scenario.name}
    return dataclasses.replace(cert, extras={**cert.extras, "scenario": scenario.name, "fingerprint": fingerprint})
