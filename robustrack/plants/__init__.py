"""Plants: M(q, t) q̈ = Q(q, q̇, t) of unconstrained systems, and their registry.

``PLANTS`` maps a name to a plant class or factory; :func:`get_plant` builds one
by name (or from a class/factory) with keyword parameters, like scipy's
``solve_ivp`` accepts a method name or class. ``LagrangianPlant`` is not in the
registry: it needs a symbolic description, not just numbers.
"""

from __future__ import annotations

from typing import Callable

from ..errors import ParameterError
from .base import FunctionPlant, Plant
from .forced import ForcedPlant
from .urdf import URDFPlant, example_robot_urdf
from .frames import FrameConstraint
from .lagrangian import LagrangianPlant
from .motion import check_constraint_fits, constrained_motion, linearize_motion
from .pendulum import NLinkPendulum, PendulumEnergyConstraint, pendulum_energy_constraint, triple_pendulum
from .units import CoordinateUnits, coordinate_units

from .examples import *  # noqa: F401, F403  (the example plant classes
from .examples import EXAMPLE_PLANTS
from .examples import __all__ as _EXAMPLE_NAMES

__all__ = [
    "Plant",
    "ForcedPlant",
    "FunctionPlant",
    "URDFPlant",
    "example_robot_urdf",
    "FrameConstraint",
    "NLinkPendulum",
    "triple_pendulum",
    "PendulumEnergyConstraint",
    "pendulum_energy_constraint",
    "LagrangianPlant",
    "PLANTS",
    "EXAMPLE_PLANTS",
    "get_plant",
    "CoordinateUnits",
    "coordinate_units",
    "constrained_motion",
    "linearize_motion",
    "check_constraint_fits",
    *(name for name in _EXAMPLE_NAMES if name != "EXAMPLE_PLANTS"),
]

PLANTS: dict[str, Callable[..., Plant]] = {
    "n-link-pendulum": NLinkPendulum,
    "triple-pendulum": triple_pendulum,
    **EXAMPLE_PLANTS,
}


def get_plant(name, **params) -> Plant:
    """Build a plant from a registry name (or a plant class / factory) and parameters.

    Parameters
    ----------
    name : str or callable
        A key of :data:`PLANTS` (e.g. ``"triple-pendulum"``), or a plant class
        or factory called as ``name(**params)``.
    **params
        Parameters of that plant (validated by the plant itself).

    Returns
    -------
    Plant

    Raises
    ------
    ParameterError
        If ``name`` is not a known plant; the message lists the known names.

    Examples
    --------
    >>> get_plant("triple-pendulum", m3=3.3).m.tolist()
    [1.0, 2.0, 3.3]
    >>> get_plant("n-link-pendulum", m=[1.0], L=[2.0]).n
    1
    """
    if isinstance(name, str):
        try:
            factory = PLANTS[name]
        except KeyError:
            raise ParameterError(
                f"Unknown plant `{name}`; the known plants are {sorted(PLANTS)}."
            ) from None
    elif callable(name):
        factory = name
    else:
        raise ParameterError(
            f"`name` must be a plant name {sorted(PLANTS)} or a plant class/factory; got {name!r}."
        )
    return factory(**params)
