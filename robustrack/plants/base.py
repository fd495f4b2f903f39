"""The plant contract: immutable parameters + mass matrix + given forces.

A plant describes the *unconstrained* system (THEORY §1, W 2.2 step 1)

    M(q, t) q̈ = Q(q, q̇, t),

with q the generalized coordinates. Constraints are separate objects
(:mod:`robustrack.constraints`); never substitute them into the kinetic energy
(Hamel's paradox, W ch. 3).

Rules every plant follows
-------------------------
* Parameters are fields of a frozen dataclass, validated in ``__post_init__``;
  ``plant.replace(m1=1.1)`` returns a perturbed copy (the actual system).
* ``mass_matrix(q, t)`` returns shape ``(..., n, n)`` and ``given_force(q, qd, t)``
  shape ``(..., n)`` for ``q``, ``qd`` of shape ``(..., n)``: any leading batch axes.
* ``t`` is a scalar or an array that broadcasts with the batch shape ``q.shape[:-1]``.
* Parameters may be numpy arrays whose leading axes broadcast against the batch
  axes of ``q`` (per-body vectors such as link masses carry their body index as
  the LAST axis). This is how Monte Carlo evaluates thousands of sampled plants
  in one array operation.
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar

import numpy as np

from ..errors import ParameterError

__all__ = ["Plant"]


@dataclasses.dataclass(frozen=True, eq=False)
class Plant:
    """Base class of all plants. Subclasses are frozen dataclasses.

    Subclasses set the class attribute ``coordinates`` (names of q, in order) —
    or override the ``coordinates`` property when n depends on parameters — and
    ``coordinate_kinds`` (``"angle"``, ``"length"``, ``"dimensionless"`` per
    coordinate; it gives the units, :func:`robustrack.plants.units.coordinate_units`),
    and implement :meth:`mass_matrix` and :meth:`given_force`.
    """

    coordinates: ClassVar[tuple[str, ...]] = ()

    @property
    def coordinate_kinds(self) -> tuple:
        """What each coordinate is (``"angle"``, ``"length"``, ``"dimensionless"``); None: unknown.

        The base class knows nothing: every entry is None (units ``[q]``, ``[Q]``).
        """
        return (None,) * self.n

    @property
    def n(self) -> int:
        """Number of generalized coordinates."""
        return len(self.coordinates)

    def mass_matrix(self, q, t=0.0) -> np.ndarray:
        """M(q, t), shape ``(..., n, n)``, symmetric positive (semi-)definite."""
        raise NotImplementedError

    def given_force(self, q, qd, t=0.0) -> np.ndarray:
        """Q(q, q̇, t), shape ``(..., n)``: all given (impressed + inertial) forces."""
        raise NotImplementedError

    def replace(self, **params) -> "Plant":
        """A copy with some parameters changed (validated again), e.g. the actual plant."""
        names = {f.name for f in dataclasses.fields(self)}
        unknown = sorted(set(params) - names)
        if unknown:
            raise ParameterError(
                f"{type(self).__name__} has no parameter(s) {unknown}; "
                f"its parameters are {sorted(names)}."
            )
        return dataclasses.replace(self, **params)

    @property
    def params(self) -> dict:
        """The parameters as a dict (name → value)."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}

    def positions(self, q) -> np.ndarray:
        """Cartesian positions of the bodies, shape ``(..., n_bodies, 2 or 3)``, for plots.

        Plants without a natural picture raise ``NotImplementedError`` (see :attr:`has_positions`).
        """
        raise NotImplementedError(f"{type(self).__name__} does not define body positions.")

    @property
    def has_positions(self) -> bool:
        """Whether this plant defines :meth:`positions` (the report's XY trajectory needs them)."""
        return type(self).positions is not Plant.positions

    def unconstrained_acceleration(self, q, qd, t=0.0) -> np.ndarray:
        """a = M⁻¹ Q (W 2.2.2); requires a positive definite M."""
        M = self.mass_matrix(q, t)
        Q = self.given_force(q, qd, t)
        return np.linalg.solve(M, Q[..., None])[..., 0]
