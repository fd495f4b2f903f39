"""``[uncertainty] parameters, dm`` of the kinds that describe a user's plant (``python``, ``urdf``).

The plant's parameters are named by the user (``["m1", "m2"]``, ``["payload_mass"]``); ``dm`` shifts
them to give the actual plant, ``actual = nominal.replace(p = p + dm)`` (as a campaign's sample,
:meth:`~robustrack.campaigns.sampling.ParameterUncertainty.actual`). Both are checked when the
scenario is loaded, naming the key the user typed.
"""

from __future__ import annotations

import numpy as np

from ..errors import ParameterError, ScenarioError

__all__ = ["check_parameter_shift", "shifted_plant"]


def _values(plant, names, where) -> np.ndarray:
    from ..uncertainty import parameter_values

    try:
        return np.atleast_1d(np.asarray(parameter_values(plant, tuple(names) if len(names) > 1 else names[0]),
                                        dtype=float))
    except (ParameterError, TypeError, ValueError) as exc:
        raise ScenarioError(f"{where}: {exc}") from None


def check_parameter_shift(unc: dict, plant, where) -> None:
    """Refuse an ``[uncertainty]`` table the plant cannot take (a kind's load-time check).

    Parameters
    ----------
    unc : dict
        The validated ``[uncertainty]`` table: ``parameters`` (names), ``dm`` (numbers).
    plant : Plant
        The nominal plant.
    where : callable
        ``where(section, key)``: how messages name a key (with its line).

    Raises
    ------
    ScenarioError
        ``dm`` without ``parameters``, a parameter the plant lacks, or ``dm`` of the wrong length.
    """
    names, dm = unc["parameters"], unc["dm"]
    if dm and not names:
        raise ScenarioError(f"{where('uncertainty', 'dm')} shifts parameters, but `uncertainty.parameters` is "
                            f"empty; name them (the plant's parameters: {sorted(plant.params)}).")
    if names:
        values = _values(plant, names, where("uncertainty", "parameters"))
        if dm and len(dm) != values.size:
            raise ScenarioError(f"{where('uncertainty', 'dm')} must have {values.size} numbers, one per value of "
                                f"{names} ({values.tolist()}); got {len(dm)}.")


def shifted_plant(plant, unc: dict):
    """The actual plant of an ``[uncertainty]`` table: ``plant`` with ``parameters`` + ``dm`` (None: no ``dm``).

    Parameters
    ----------
    plant : Plant
        The nominal plant.
    unc : dict
        The validated ``[uncertainty]`` table.

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

    names = tuple(unc["parameters"])
    try:
        return ParameterUncertainty(parameter=names).actual(plant, unc["dm"])
    except (ParameterError, TypeError, ValueError) as exc:
        raise ScenarioError(f"`uncertainty.dm` = {unc['dm']} on {list(names)}: {exc}") from None
