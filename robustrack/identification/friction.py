"""Joint friction coefficients as identified parameters: the friction force is linear in them.

Helper of :mod:`robustrack.identification` (docs/guide/identification.md). The joint friction of
:class:`~robustrack.uncertainty.JointFriction`, a given force of the actual plant,

    δQ_i = −b_i q̇_i − F_c,i tanh(q̇_i / v_s),

is linear in the viscous coefficients b_i and the Coulomb coefficients F_c,i (v_s, the velocity over
which the Coulomb force turns, stays fixed: it enters nonlinearly). So they join the regression of
r(θ) = M q̈ − Q like the masses do, with the closed-form columns

    ∂r/∂b_i = q̇_i e_i,        ∂r/∂F_c,i = tanh(q̇_i / v_s) e_i

(r contains −δQ). They are named as scenarios name them (docs/guide/uncertainty.md):
``viscous_<coordinate>`` and ``coulomb_<coordinate>``. Their nominal values θ₀ and v_s are the
plant's own friction — identify on ``ForcedPlant(nominal, JointFriction(viscous, coulomb, v_s))``
(:class:`~robustrack.plants.ForcedPlant`) to give them — and 0 where the plant has none; a Coulomb
coefficient needs the plant's friction for its v_s.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ..errors import ParameterError

__all__ = ["FRICTION_KINDS", "plant_friction", "friction_names", "friction_values", "friction_columns",
           "with_friction"]

#: The two coefficients of a joint's friction, as prefixes of their names (``viscous_theta1``).
FRICTION_KINDS = ("viscous", "coulomb")


def _parse(plant, name: str):
    """(kind, joint index) of a friction coefficient's name for the plant's coordinates, or None (a parameter of the
    plant's own by that name is the plant's)."""
    from ..uncertainty import friction_coefficient

    return None if name in plant.params else friction_coefficient(name, plant.coordinates)


def friction_names(plant, names) -> tuple[tuple, tuple]:
    """``names`` split into the plant's own parameters and its joints' friction coefficients, each in order.

    Parameters
    ----------
    plant : Plant
        Its coordinates name the joints.
    names : sequence of str

    Returns
    -------
    (tuple of str, tuple of str)
        The plant's parameters; the friction coefficients (``viscous_<coordinate>``, ``coulomb_<coordinate>``).
    """
    friction = tuple(p for p in names if _parse(plant, p) is not None)
    return tuple(p for p in names if p not in friction), friction


def plant_friction(plant):
    """The :class:`~robustrack.uncertainty.JointFriction` among the given forces a plant adds, or None.

    Looked for in every :class:`~robustrack.plants.ForcedPlant` layer and among the terms of a sum of
    disturbances (friction plus a disturbance, as a scenario's actual plant has them).

    Parameters
    ----------
    plant : Plant

    Returns
    -------
    JointFriction or None

    Raises
    ------
    ParameterError
        The plant adds more than one: which one's coefficients a name means is ambiguous.
    """
    from ..plants.forced import forced_terms
    from ..uncertainty import JointFriction

    found = [d for term in forced_terms(plant) for d in getattr(term, "terms", (term,))
             if isinstance(d, JointFriction)]
    if len(found) > 1:
        raise ParameterError(f"{type(plant).__name__} adds {len(found)} JointFriction forces: the friction "
                             "coefficients to identify must name one; add their coefficients into one JointFriction.")
    return found[0] if found else None


def _coefficients(friction, kind: str, n: int) -> np.ndarray:
    """One coefficient per joint (n,) of a friction's ``kind`` (0 without friction)."""
    if friction is None:
        return np.zeros(n)
    value = getattr(friction, kind)
    if value.ndim > 1 or value.size not in (1, n):
        raise ParameterError(f"the plant's friction has `{kind}` of shape {value.shape}: identification needs one "
                             f"number, or one per joint ({n}).")
    return np.broadcast_to(value, (n,)).astype(float)


def friction_values(plant, names) -> np.ndarray:
    """θ₀ of friction coefficients: the plant's own friction's (0 where it has none), shape (P,).

    Parameters
    ----------
    plant : Plant
    names : sequence of str
        Friction coefficients (:func:`friction_names`).

    Returns
    -------
    ndarray (P,)
    """
    friction = plant_friction(plant)
    return np.array([_coefficients(friction, kind, plant.n)[j] for kind, j in (_parse(plant, p) for p in names)])


def friction_columns(plant, names, qd) -> np.ndarray:
    """The regressor columns ∂r/∂θ of friction coefficients at the samples (module docstring).

    Parameters
    ----------
    plant : Plant
        Its friction gives v_s (needed by a Coulomb coefficient).
    names : sequence of str
        Friction coefficients (:func:`friction_names`).
    qd : ndarray (T, n)

    Returns
    -------
    ndarray (T, n, P)

    Raises
    ------
    ParameterError
        A Coulomb coefficient for a plant without friction (no v_s).
    """
    parsed = [_parse(plant, p) for p in names]
    friction = plant_friction(plant)
    if friction is None and any(kind == "coulomb" for kind, _ in parsed):
        raise ParameterError(f"`{next(p for p, (k, _) in zip(names, parsed) if k == 'coulomb')}`: a Coulomb "
                             "coefficient's column tanh(q̇ / v_s) needs v_s, and the plant has no friction to give "
                             "it; identify on ForcedPlant(nominal, JointFriction(smoothing=v_s)) (its coefficients, "
                             "0 by default, are the nominal values).")
    Y = np.zeros(qd.shape + (len(names),))
    for k, (kind, j) in enumerate(parsed):
        Y[..., j, k] = qd[..., j] if kind == "viscous" else np.tanh(qd[..., j] / friction.smoothing)
    return Y


def with_friction(plant, values: dict):
    """The plant with friction coefficients set: its own friction's replaced, or a friction added.

    Parameters
    ----------
    plant : Plant
        The plant the identification was built on.
    values : dict of str to float
        Friction coefficients by name (:func:`friction_names`); the others keep the plant's values.

    Returns
    -------
    Plant
        ``plant`` itself when ``values`` is empty; else the plant whose friction has these coefficients
        (a :class:`~robustrack.plants.ForcedPlant` of a new :class:`~robustrack.uncertainty.JointFriction` where the
        plant had none: only viscous coefficients can be added so, a Coulomb one needs the plant's v_s).
    """
    if not values:
        return plant
    from ..plants.forced import ForcedPlant
    from ..uncertainty import JointFriction, SumDisturbance

    friction = plant_friction(plant)
    coef = {kind: _coefficients(friction, kind, plant.n).copy() for kind in FRICTION_KINDS}
    for name, value in values.items():
        kind, j = _parse(plant, name)
        coef[kind][j] = float(value)
    below = {name: value for name, value in values.items() if value < 0}
    if below:  # a negative estimate: the force would push the motion, which no friction does
        raise ParameterError("the friction coefficients " + ", ".join(f"{k} = {v:.4g}" for k, v in below.items())
                             + " are below 0: a force along the velocity is no friction, so there is no plant with "
                             "them (the model lacks a force that pushes the motion, or the run does not determine "
                             "them; their standard errors say which).")
    if friction is None:
        if np.any(coef["coulomb"]):
            raise ParameterError("a Coulomb coefficient needs the plant's friction for its v_s: give the plant as "
                                 "ForcedPlant(nominal, JointFriction(smoothing=v_s)).")
        return ForcedPlant(plant, JointFriction(coef["viscous"], coef["coulomb"]))
    new = dataclasses.replace(friction, viscous=coef["viscous"], coulomb=coef["coulomb"])

    def swap(p):
        if not isinstance(p, ForcedPlant):
            return p
        terms = getattr(p.dQ, "terms", None)
        if p.dQ is friction:
            return ForcedPlant(p.base, new)
        if terms is not None and any(d is friction for d in terms):
            return ForcedPlant(p.base, SumDisturbance(tuple(new if d is friction else d for d in terms)))
        return ForcedPlant(swap(p.base), p.dQ)

    return swap(plant)
