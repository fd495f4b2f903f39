"""``[uncertainty] parameters, dm`` of the kinds that describe a user's plant (``python``, ``urdf``).

The plant's uncertain parameters are named by the user, one table each (docs/guide/uncertainty.md)::

    [uncertainty.parameters.payload_mass]
    percent = 50                 # or range = [lo, hi]; nominal = ... (default: the plant's value)
    distribution = "uniform"     # "normal" (sigma), "truncated-normal" (sigma and a range), "cases" (cases = [...])

— an :class:`~robustrack.uncertainty.UncertainSet` the studies draw from (:func:`named_set`). A name is
a number of the plant, an entry of one of its arrays (``payload_com_z``, a pendulum's ``L2``:
:meth:`~robustrack.plants.Plant.parameter_components`) or a friction coefficient of ``[actual]``
(``viscous_<joint>``, ``coulomb_<joint>``: :func:`~robustrack.scenarios.actual_forces.friction_parameters`) — or,
in the older form, as a list ``parameters = ["m1", "m2"]`` (drawn uniform ±``--spread``; read with a
notice naming the tables). ``dm`` shifts them to give the actual plant of a run,
``actual = nominal.replace(p = p + dm)`` (as a campaign's sample,
:meth:`~robustrack.campaigns.sampling.ParameterUncertainty.actual`). All are checked when the
scenario is loaded, naming the key the user typed.
"""

from __future__ import annotations

import numpy as np

from ..errors import ParameterError, ScenarioError

__all__ = ["check_parameter_shift", "shifted_plant", "named_set", "named_tables", "parameters_schema",
           "UNCERTAIN_PARAMETER_KEYS", "scenario_uncertain_set", "has_named_parameters", "DEFAULT_SPREAD"]

#: The keys of an ``[uncertainty.parameters.NAME]`` table: those of
#: :class:`~robustrack.uncertainty.UncertainParameter`, and the kind of value each takes.
UNCERTAIN_PARAMETER_KEYS = {"nominal": "number", "range": "pair", "percent": "number", "distribution": "string",
                            "sigma": "number", "cases": "numbers"}

#: The notice for the older list form (what to write instead).
_OLDER = ("name each parameter in a table [uncertainty.parameters.NAME] with its range (or percent) and "
          "distribution (docs/guide/uncertainty.md); the list is drawn uniform ±spread as before.")


def parameters_schema(names=(), older: bool = True):
    """The schema default of ``uncertainty.parameters``: named tables, or the older list (``names`` its default).

    Parameters
    ----------
    names : sequence of str
        The default list of names (``["payload_mass"]`` for the ``urdf`` kind, none for ``python``).
    older : bool
        Whether the kind reads the older list of names (False: the built-in tracking kinds, which perturb their
        masses without tables; a list is refused).

    Returns
    -------
    NamedTables
    """
    from .config import NamedTables

    return NamedTables(UNCERTAIN_PARAMETER_KEYS, _OLDER if older else None, names)


def named_set(unc: dict, plant, friction: dict | None = None):
    """The :class:`~robustrack.uncertainty.UncertainSet` of ``[uncertainty.parameters.NAME]`` tables.

    Parameters
    ----------
    unc : dict
        The validated ``[uncertainty]`` table.
    plant : Plant
        The nominal plant: a table without ``nominal`` takes the plant's value.
    friction : dict, optional
        The actual plant's friction coefficients by name (:func:`~robustrack.scenarios.actual_forces.friction_parameters`):
        a table of one of them takes its value as nominal; its box must stay >= 0.

    Returns
    -------
    UncertainSet or None
        None for the older list form (or none named).

    Raises
    ------
    ScenarioError
        A name the plant lacks or that is not one number of it, or a table the parameter refuses (the
        message names ``uncertainty.parameters.NAME`` and the fix).
    """
    tables = unc.get("parameters")
    if not isinstance(tables, dict) or not tables:
        return None
    from ..uncertainty import UncertainParameter, UncertainSet

    friction = friction or {}
    params = []
    for name, table in tables.items():
        where = f"`uncertainty.parameters.{name}`"
        value = np.array([friction[name]]) if name in friction else _values(plant, [name], where, friction)
        if value.size != 1:
            raise ScenarioError(f"{where}: `{name}` of the plant holds {value.size} values ({value.tolist()}); a named "
                                "uncertain parameter is one number (name a scalar parameter of the plant).")
        kwargs = {k: tuple(v) if k in ("range", "cases") else v for k, v in table.items()}
        kwargs.setdefault("nominal", float(value[0]))
        try:
            params.append(UncertainParameter(name, **kwargs))
        except ParameterError as exc:
            raise ScenarioError(f"{where}: {exc}") from None
        if name in friction:
            p = params[-1]
            if p.distribution == "normal" or p.box()[0] < 0:
                raise ScenarioError(f"{where}: a friction coefficient must stay >= 0 (friction opposes the motion); "
                                    f"its {'distribution is normal (unbounded)' if p.distribution == 'normal' else f'box starts at {p.box()[0]:g}'}: "
                                    "give a range (or percent) within [0, ∞), with distribution = 'truncated-normal' "
                                    "for a normal.")
    return UncertainSet(params)


def _values(plant, names, where, friction=None) -> np.ndarray:
    from ..uncertainty import parameter_values

    try:
        return np.atleast_1d(np.asarray(parameter_values(plant, tuple(names) if len(names) > 1 else names[0]),
                                        dtype=float))
    except (ParameterError, TypeError, ValueError) as exc:
        hint = (f" The actual plant's friction coefficients are named {list(friction)[0]} … {list(friction)[-1]}."
                if friction else "")
        raise ScenarioError(f"{where}: {exc}{hint}") from None


def check_parameter_shift(unc: dict, plant, where, friction: dict | None = None) -> None:
    """Refuse an ``[uncertainty]`` table the plant cannot take (a kind's load-time check).

    Parameters
    ----------
    unc : dict
        The validated ``[uncertainty]`` table: ``parameters`` (names), ``dm`` (numbers).
    plant : Plant
        The nominal plant.
    where : callable
        ``where(section, key)``: how messages name a key (with its line).
    friction : dict, optional
        The actual plant's friction coefficients by name (named parameters of the tables).

    Raises
    ------
    ScenarioError
        ``dm`` without ``parameters``, a parameter the plant lacks, ``dm`` of the wrong length, or a named
        parameter's table it refuses (:func:`named_set`).
    """
    friction = friction or {}
    names, dm = list(unc["parameters"]), unc["dm"]
    named_set(unc, plant, friction)
    if not isinstance(unc["parameters"], dict):
        friction = {}  # the older list names plant parameters only
    if dm and not names:
        raise ScenarioError(f"{where('uncertainty', 'dm')} shifts parameters, but `uncertainty.parameters` is "
                            f"empty; name them (the plant's parameters: {sorted(plant.params)}).")
    if names:
        # in the tables' order, as dm takes them (shifted_plant; run_forces for the friction's)
        here = where("uncertainty", "parameters")
        values = np.concatenate([[friction[name]] if name in friction else _values(plant, [name], here, friction)
                                 for name in names])
        if dm and len(dm) != values.size:
            raise ScenarioError(f"{where('uncertainty', 'dm')} must have {values.size} numbers, one per value of "
                                f"{names} ({values.tolist()}); got {len(dm)}.")


def shifted_plant(plant, unc: dict, friction: dict | None = None):
    """The actual plant of an ``[uncertainty]`` table: ``plant`` with ``parameters`` + ``dm`` (None: no ``dm``).

    Parameters
    ----------
    plant : Plant
        The nominal plant.
    unc : dict
        The validated ``[uncertainty]`` table.
    friction : dict, optional
        The actual plant's friction coefficients by name: their entries of ``dm`` shift the forces
        (:func:`~robustrack.scenarios.actual_forces.run_forces`), not the plant.

    Returns
    -------
    Plant or None

    Raises
    ------
    ScenarioError
        The plant refuses the shifted values (e.g. a negative mass).
    """
    if not unc["dm"]:
        return None
    from ..campaigns.sampling import ParameterUncertainty

    names, dm = tuple(unc["parameters"]), unc["dm"]
    if friction and isinstance(unc["parameters"], dict):
        keep = [i for i, name in enumerate(names) if name not in friction]
        names, dm = tuple(names[i] for i in keep), [dm[i] for i in keep]
        if not names:
            return None
    try:
        return ParameterUncertainty(parameter=names).actual(plant, dm)
    except (ParameterError, TypeError, ValueError) as exc:
        raise ScenarioError(f"`uncertainty.dm` = {unc['dm']} on {list(names)}: {exc}") from None


#: The relative spread of the older forms (the kind's masses, a list of names) when none is given.
DEFAULT_SPREAD = 0.1


def named_tables(unc: dict) -> bool:
    """Whether an ``[uncertainty]`` table names its parameters in ``[uncertainty.parameters.NAME]`` tables (not the
    older list, nor none).

    Parameters
    ----------
    unc : dict
        The validated ``[uncertainty]`` table.

    Returns
    -------
    bool
    """
    return isinstance(unc.get("parameters"), dict) and bool(unc["parameters"])


def has_named_parameters(sc: Scenario) -> bool:
    """Whether a scenario names its uncertain parameters in ``[uncertainty.parameters.NAME]`` tables (no build).

    Parameters
    ----------
    sc : Scenario

    Returns
    -------
    bool
    """
    return named_tables(sc.config.get("uncertainty") or {})


def scenario_uncertain_set(sc: Scenario, study: str | None = None, nominal=None):
    """The named uncertain parameters of a scenario (``[uncertainty.parameters.NAME]`` tables), or None.

    Parameters
    ----------
    sc : Scenario
    study : str, optional
        A study that does not take named parameters yet (e.g. ``"tune"``): named parameters are refused
        with that said, rather than drawn as the older uniform ±spread.
    nominal : Plant, optional
        The scenario's nominal plant, when already built (else it is built here).

    Returns
    -------
    UncertainSet or None
        None when the scenario has none (the older forms: the kind's masses, a list of names).

    Raises
    ------
    ScenarioError
        A table the plant refuses, or named parameters given to ``study``.
    """
    unc = sc.config.get("uncertainty") or {}
    if not named_tables(unc):
        return None
    if study is not None:
        raise ScenarioError(f"`robustrack {study}` does not take named uncertain parameters "
                            "([uncertainty.parameters.NAME]) yet; montecarlo, worst-case, gamma, certify, tune, "
                            "identify and compare do. Give the parameters as a list with --spread for this study "
                            "(docs/guide/uncertainty.md).")
    from .actual_forces import friction_parameters

    nominal = sc.build().nominal if nominal is None else nominal
    friction = friction_parameters(sc.config, nominal.coordinates)
    named = named_set(unc, nominal, friction)
    _check_physical(nominal, [p for p in named if p.name not in friction and p.distribution != "normal"])
    return named


def _check_physical(nominal, params) -> None:
    """Refuse named parameters whose box reaches a plant the plant refuses (a mass ≤ 0), naming the parameter and
    the corner (a normal parameter has no box: its draws are each checked as they are made) (:func:`robustrack.certification.box.check_physical`), before any study samples or searches it."""
    if not params:
        return
    from ..certification.box import ParameterBox, check_physical

    box = ParameterBox.of_set(nominal, params)
    components = nominal.parameter_components() if callable(getattr(nominal, "parameter_components", None)) else {}
    typed = {(components[p.name] if p.name in components else (p.name, 0)): f"uncertainty.parameters.{p.name}"
             for p in params}
    names = [typed.get((name, i), f"{name}[{i + 1}]") for name, lo in zip(box.names, box.lower)
             for i in range(max(lo.size, 1))]
    try:
        check_physical(nominal, box, where="the box of [uncertainty.parameters]", names=names)
    except ParameterError as exc:
        raise ScenarioError(str(exc)) from None
