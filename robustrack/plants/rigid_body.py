"""A free rigid body in its angular velocities: Euler's equations as a plant (UP; K, Suslov).

The state of a rigid body's rotation that Euler's equations need is the angular
velocity ω in body axes. In the plant contract ``M q̈ = Q`` it is written with
*quasi-coordinates* π whose rates are the angular velocities, π̇ = ω (UP's
first-order form q̇ = H s with s = ω; the π are not coordinates of any
configuration, the rotation matrix is not tracked). With principal moments of
inertia J = (J1, J2, J3):

    M = diag(J1, J2, J3),   Q = (Jω) × ω,   i.e.  J ω̇ = (Jω) × ω + τ,

Euler's equations, with τ the constraint (or control) torque. A constraint on
ω such as Suslov's ω·l = 0 is then a nonholonomic row ``lᵀ π̇ = 0`` on these
quasi-coordinates (K, "Servo constraints"), and every solver of the toolbox
applies unchanged (the fundamental equation holds in quasi-velocities, UP 3.25).
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar

import numpy as np

from .._validate import positive
from ..errors import ParameterError
from .base import Plant

__all__ = ["EulerRigidBody"]


@dataclasses.dataclass(frozen=True, eq=False)
class EulerRigidBody(Plant):
    """Torque-free rigid body in body-axis angular velocities (Euler's equations).

    ``q = π`` (quasi-coordinates, π̇ = ω), ``M = diag(J)``, ``Q = (Jω) × ω``
    (see the module docstring). Its kinetic energy ``½ ωᵀ J ω`` is conserved
    without torques, and under any torque τ with ``τ·ω = 0``.

    Parameters
    ----------
    J : tuple of 3 floats, default (1.0, 2.0, 3.0)
        Principal moments of inertia (> 0), kg m². The defaults are K's example values
        used by the ``suslov-servo`` scenario.
    """

    coordinates: ClassVar[tuple[str, ...]] = ("pi1", "pi2", "pi3")
    coordinate_kinds: ClassVar[tuple[str, ...]] = ("angle",) * 3  # π̇ = ω, rad/s
    J: tuple = (1.0, 2.0, 3.0)

    def __post_init__(self):
        J = positive(self.J, "J")
        if np.ndim(J) != 1 or np.shape(J)[-1] != 3:
            raise ParameterError(f"`J` must hold the 3 principal moments of inertia; got {self.J!r}.")
        object.__setattr__(self, "J", tuple(float(x) for x in J))

    def _state(self, x, name):
        arr = np.asarray(x, dtype=float)
        if arr.ndim < 1 or arr.shape[-1] != 3:
            raise ParameterError(f"`{name}` must have shape (..., 3); got shape {arr.shape}.")
        return arr

    def mass_matrix(self, q, t=0.0):
        """``diag(J)`` broadcast to the batch of ``q``, shape ``(..., 3, 3)``."""
        q = self._state(q, "q")
        return np.broadcast_to(np.diag(self.J), q.shape[:-1] + (3, 3)).copy()

    def given_force(self, q, qd, t=0.0):
        """The gyroscopic torque ``(Jω) × ω`` with ω = q̇, shape ``(..., 3)``."""
        self._state(q, "q")
        w = self._state(qd, "qd")
        return np.cross(np.asarray(self.J) * w, w)

    def energy(self, qd) -> np.ndarray:
        """Kinetic energy ``½ ωᵀ J ω`` with ω = q̇, shape ``(...)``."""
        w = self._state(qd, "qd")
        return 0.5 * np.sum(np.asarray(self.J) * w * w, axis=-1)
