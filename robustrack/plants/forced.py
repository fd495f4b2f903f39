"""A plant plus an additive given-force perturbation: the actual system's δQ (W 5.2.12–5.2.16).

:class:`ForcedPlant` wraps any plant; the perturbation is a callable ``δQ(q, q̇, t)``
(the disturbances of :mod:`robustrack.uncertainty`, or the user's own). For the compiled
loop a perturbation may offer its symbolic terms through ``codegen_terms(n)``
(:meth:`ForcedPlant.codegen`); this module knows no disturbance class.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Callable

import numpy as np

from .._validate import as_float_array
from ..errors import ParameterError
from ..symbolic import ForcedForm, SymbolicForm, added_terms
from .base import Plant

__all__ = ["ForcedPlant", "forced_terms"]


@dataclass(frozen=True, eq=False)
class ForcedPlant(Plant):
    """A plant plus an additive given-force perturbation: ``M q̈ = Q + δQ(q, q̇, t)``.

    The actual system of W 5.2.12–5.2.16 is ``ForcedPlant(nominal.replace(...), dQ)``:
    the parameter change gives δM and the mass-dependent part of δQ, ``dQ`` the rest.

    Parameters
    ----------
    base : Plant
        The plant whose mass matrix and given forces are used.
    dQ : callable
        ``dQ(q, qd, t) -> (..., n)``, e.g. a :class:`~robustrack.uncertainty.Disturbance`;
        a plain callable is accepted (its ``bound`` is then unknown, ``math.inf``).

    Notes
    -----
    ``replace(**params)`` changes the base plant's parameters and keeps ``dQ``
    (``replace(dQ=...)`` swaps the perturbation). ``params`` are the base plant's.
    Other attributes (``kinetic_energy``, ``m``, ...) are read from the base plant.

    Examples
    --------
    >>> from robustrack.plants import triple_pendulum
    >>> from robustrack.uncertainty import SinusoidalDisturbance
    >>> p = ForcedPlant(triple_pendulum(), SinusoidalDisturbance(0.5, omega=1.0))
    >>> p.replace(m=[1.1, 2.0, 3.0]).dQ is p.dQ
    True
    """

    base: Plant
    dQ: Callable

    def __post_init__(self):
        if not isinstance(self.base, Plant):
            raise ParameterError(f"`base` of ForcedPlant must be a Plant; got {type(self.base).__name__}.")
        if not callable(self.dQ):
            raise ParameterError(f"`dQ` of ForcedPlant must be callable dQ(q, qd, t); got {self.dQ!r}.")

    @property
    def coordinates(self) -> tuple[str, ...]:
        return tuple(self.base.coordinates)

    @property
    def coordinate_kinds(self) -> tuple:
        """The base plant's (δQ changes no coordinate)."""
        return tuple(self.base.coordinate_kinds)

    @property
    def bound(self) -> float:
        """The perturbation's bound on ``‖δQ‖∞`` (``math.inf`` if it declares none)."""
        return float(getattr(self.dQ, "bound", math.inf))

    def mass_matrix(self, q, t=0.0) -> np.ndarray:
        """M(q, t) of the base plant."""
        return self.base.mass_matrix(q, t)

    def given_force(self, q, qd, t=0.0) -> np.ndarray:
        """Q(q, q̇, t) + δQ(q, q̇, t), shape (..., n)."""
        Q = self.base.given_force(q, qd, t)
        dQ = as_float_array(self.dQ(q, qd, t), "dQ(q, qd, t)", ndim_min=1)
        if dQ.shape[-1] != Q.shape[-1]:
            raise ParameterError(
                f"`dQ(q, qd, t)` must have {Q.shape[-1]} components on its last axis "
                f"{self.coordinates}; got shape {dQ.shape}."
            )
        return Q + dQ

    def replace(self, **params) -> "ForcedPlant":
        """A copy with base-plant parameters changed (δQ kept; ``dQ=`` replaces it)."""
        dQ = params.pop("dQ", self.dQ)
        base = self.base.replace(**params) if params else self.base
        return ForcedPlant(base, dQ)

    @property
    def params(self) -> dict:
        """The base plant's parameters."""
        return self.base.params

    def parameter_components(self) -> dict:
        """The base plant's (:meth:`Plant.parameter_components <robustrack.plants.Plant.parameter_components>`)."""
        return self.base.parameter_components()

    def positions(self, q) -> np.ndarray:
        return self.base.positions(q)

    def codegen(self) -> SymbolicForm | ForcedForm | None:
        """The base plant's form with ``Q + δQ``, for the compiled tracking loop (docs/guide/uncertainty.md).

        Defined here rather than read from the base plant through ``__getattr__``: the
        base plant's own form would silently leave δQ out of the compiled loop.

        The perturbation gives its own terms (a protocol, so plants need not know the
        disturbance classes): ``dQ.codegen_terms(n)`` returns a :class:`SymbolicForm`
        whose ``build(q, qd, t)`` gives ``(δQ (n × 1), params)``, or None when δQ has no
        closed form. Its parameter symbols must be ``sympy.Dummy``: a plain Symbol named
        like one of the base plant's (``k1``) would be the same symbol. The disturbances of
        :mod:`robustrack.uncertainty` offer theirs (not :class:`~robustrack.uncertainty.FunctionDisturbance`).

        Returns
        -------
        SymbolicForm, ForcedForm or None
            For a symbolic base plant, its M and ``Q + δQ`` (δQ's parameters appended to the
            base plant's): one sympy form, which certification and identification read too. For
            a robot's or a plant from functions' form, a :class:`~robustrack.symbolic.ForcedForm`:
            that form and δQ's terms side by side, added by the compiled systems. None when the
            base plant has no form or δQ offers no terms: a
            :class:`~robustrack.uncertainty.FunctionDisturbance` or a plain callable has no
            closed form, and sampled coefficients carry sample axes.
        """
        codegen = getattr(self.base, "codegen", None)
        base = codegen() if callable(codegen) else None
        force = self._terms() if base is not None else None
        if force is None:
            return None
        if isinstance(base, ForcedForm):  # a forced plant forced again: one δQ, the sum
            return ForcedForm(base.base, added_terms((base.force, force)))
        if not isinstance(base, SymbolicForm):  # a robot's kernels, a user's functions: δQ's functions beside them
            return ForcedForm(base, force)
        return SymbolicForm(f"ForcedPlant/{base.key}/{force.key}", np.concatenate([base.values, force.values]),
                            functools.partial(_forced_form, base.build, force.build))

    def _terms(self):
        """δQ's own form (``dQ.codegen_terms(n)``), or None."""
        terms = getattr(self.dQ, "codegen_terms", None)
        return terms(self.n) if callable(terms) else None

    @property
    def no_form_reason(self) -> str:
        """Why the compiled loop cannot take this plant (the tracking loop's one-line notice): its δQ, or its base."""
        if self._terms() is None:
            parts = getattr(self.dQ, "terms", (self.dQ,))
            lacking = [d for d in parts if not callable(getattr(d, "codegen_terms", None)) or d.codegen_terms(self.n)
                       is None] or [self.dQ]
            return (f"adds a given force δQ ({', '.join(type(d).__name__ for d in lacking)}) that has no compiled "
                    "form (a Python function, or coefficients with a sample axis)")
        return getattr(self.base, "no_form_reason", None) or "has no symbolic form"

    def __getattr__(self, name):
        # only reached for attributes ForcedPlant itself lacks
        if name.startswith("_") or name in ("base", "dQ"):
            raise AttributeError(name)
        return getattr(self.base, name)


def _forced_form(build, force_build, q, qd, t):
    """The base form's ``(M, Q + δQ, params)``, δQ's parameters appended to the base plant's."""
    import sympy as sp

    M, Q, params = build(q, qd, t)
    dQ, force_params = force_build(q, qd, t)
    return M, sp.Matrix(Q) + dQ, (*params, *force_params)


def forced_terms(plant) -> list:
    """The given-force perturbations δQ a plant adds, outermost first: one per :class:`ForcedPlant` layer wrapped
    around its base (a plant forced again is two layers); ``[]`` for a plant that adds none (or None).

    Parameters
    ----------
    plant : Plant or None

    Returns
    -------
    list of callable
    """
    terms = []
    while plant is not None and hasattr(plant, "dQ") and hasattr(plant, "base"):
        terms.append(plant.dQ)
        plant = plant.base
    return terms
