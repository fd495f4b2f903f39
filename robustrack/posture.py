"""A posture task in the null space of a requirement: a redundant robot's free directions held (docs/guide/robot.md,
"Redundant robots").

A requirement ``A q̈ = b`` of rank r < n leaves n − r directions free; the fundamental equation moves them by Gauss's
principle, the least acceleration in M's metric away from the unconstrained a = M⁻¹Q, and nothing holds them
(:mod:`robustrack.tracking.redundancy`). The standard answer is a second, lower-priority task in the null space of the
first (Nakamura, Hanafusa & Yoshikawa 1987; Siciliano & Slotine 1991): here a joint-centering and damping
acceleration

    q̈_p = −K_p (q − q_c) − K_d q̇

(q_c: the middle of each joint's range, or a posture you give), which replaces a in Gauss's function. The nominal
motion is then the one of Peters, Mistry, Udwadia, Nakanishi & Schaal, "A unifying framework for robot control with
redundant DOFs", Autonomous Robots 24 (2008) 1–12 (their eq. 11 with the metric M):

    q̈ = q̈_d + M^{-1/2} (A M^{-1/2})⁺ (b − A q̈_d),   q̈_d = a + q̈_p,

the acceleration closest to q̈_d in M's metric among those that keep ``A q̈ = b`` exactly: the requirement first,
the posture in what it leaves free.

How the fundamental equation carries it
    That q̈ is the unique solution of ``A q̈ = b`` and ``Zᵀ M (q̈ − q̈_d) = 0`` with the columns of Z a basis of the
    null space of A (the minimizer's M(q̈ − q̈_d) lies in the range of Aᵀ, i.e. has no component along null A; which
    basis does not matter). With A of full row rank m < n, Z is its n − m last right singular vectors, and
    :class:`PostureTask` is a constraint of n rows, ``[A; Zᵀ M] q̈ = [b; Zᵀ (Q + M q̈_p)]``, of rank n: the
    fundamental equation (any of robustrack's paths) returns that q̈, and its Qᶜ = M q̈ − Q is the whole control
    force — requirement and posture — that the tracking loop feeds forward to the actual plant. The requirement's
    rows come first and keep their residuals; the posture rows have no position residual (0).

It needs the nominal plant (M and Q); it runs on numpy (a notice says so), and the C export refuses it (no form for
code generation).
"""

from __future__ import annotations

import numpy as np

from ._validate import finite
from .constraints import Constraint
from .errors import ParameterError

__all__ = ["PostureTask"]


class PostureTask(Constraint):
    """A requirement with a joint-centering and damping posture task in its null space (module docstring).

    Parameters
    ----------
    requirement : Constraint
        The task (a robot's frame constraints, a path): met exactly.
    plant : Plant
        The nominal plant (its M and Q enter the posture rows).
    kp, kd : float or array_like (n,)
        K_p (1/s²) and K_d (1/s) of q̈_p = −K_p (q − q_c) − K_d q̇, ≥ 0 (keyword-only); default 10 and 2√10
        (critically damped).
    center : array_like (n,), optional
        q_c; default the middle of each joint's range (:attr:`~robustrack.plants.Plant.position_limits`; 0 where a
        joint has none), the classic joint-centering posture.

    Examples
    --------
    A 3-link pendulum's energy held, the two free directions pulled to the hanging posture:

    >>> from robustrack.plants import NLinkPendulum, pendulum_energy_constraint
    >>> plant = NLinkPendulum(m=(1.0, 1.0, 1.0), L=(1.0, 1.0, 1.0))
    >>> task = PostureTask(pendulum_energy_constraint(1.0, m1=1.0), plant, center=[0.0, 0.0, 0.0])
    >>> task.m, task.n
    (3, 3)
    """

    def __init__(self, requirement, plant, *, kp=10.0, kd=2 * np.sqrt(10.0), center=None):
        if not isinstance(requirement, Constraint):
            raise ParameterError(f"`requirement` must be a robustrack Constraint; got {type(requirement).__name__}.")
        n = requirement.n
        if plant.n != n:
            raise ParameterError(f"`plant` has {plant.n} coordinates; the requirement has {n}.")
        if requirement.m >= n:
            raise ParameterError(f"the requirement has {requirement.m} rows on {n} coordinates: it leaves no direction "
                                 "free for a posture task.")
        self.requirement, self.plant = requirement, plant
        self.n, self.m = n, n
        self.kp, self.kd = (self._gain(v, name) for v, name in ((kp, "kp"), (kd, "kd")))
        if center is None:
            limits = plant.position_limits
            lo, hi = (np.full(n, -np.inf), np.full(n, np.inf)) if limits is None else limits
            center = np.where(np.isfinite(lo) & np.isfinite(hi), 0.5 * (np.asarray(lo) + np.asarray(hi)), 0.0)
        center = finite(center, "center").reshape(-1)
        if center.shape != (n,):
            raise ParameterError(f"`center` must have {n} numbers (one per coordinate); got {center.size}.")
        self.center = center

    def _gain(self, value, name):
        gain = finite(value, name)
        if gain.ndim > 1 or gain.size not in (1, self.n) or np.any(gain < 0):
            raise ParameterError(f"`{name}` must be one number or {self.n} numbers, each >= 0; got {value!r}.")
        return gain.reshape(-1) if gain.size == self.n else float(gain.reshape(-1)[0])

    def posture_acceleration(self, q, qd):
        """q̈_p = −K_p (q − q_c) − K_d q̇ (..., n)."""
        return -self.kp * (np.asarray(q, dtype=float) - self.center) - self.kd * np.asarray(qd, dtype=float)

    def matrices(self, q, qd, t=0.0):
        """``[A; Zᵀ M]`` (..., n, n) and ``[b; Zᵀ (Q + M q̈_p)]`` (..., n) (module docstring)."""
        q, qd = np.asarray(q, dtype=float), np.asarray(qd, dtype=float)
        A, b = self.requirement.matrices(q, qd, t)
        M = np.asarray(self.plant.mass_matrix(q, t), dtype=float)
        Q = np.asarray(self.plant.given_force(q, qd, t), dtype=float)
        batch = np.broadcast_shapes(A.shape[:-2], M.shape[:-2])
        A = np.broadcast_to(A, batch + A.shape[-2:])
        Zt = np.linalg.svd(A, full_matrices=True)[2][..., self.requirement.m:, :]  # null A's basis, as rows
        target = Q + (M @ self.posture_acceleration(q, qd)[..., None])[..., 0]
        rows = np.concatenate([A, Zt @ M], axis=-2)
        rhs = np.concatenate([np.broadcast_to(b, batch + b.shape[-1:]), (Zt @ target[..., None])[..., 0]], axis=-1)
        return rows, rhs

    def _padded(self, r):
        r = np.asarray(r, dtype=float)
        return np.concatenate([r, np.zeros(r.shape[:-1] + (self.n - self.requirement.m,))], axis=-1)

    def residual(self, q, qd=None, t=0.0):
        """The requirement's residuals, then 0 for each posture row (an acceleration target, no position residual)."""
        return self._padded(self.requirement.residual(q, qd, t))

    def velocity_residual(self, q, qd, t=0.0):
        """The requirement's velocity rows, then 0 for each posture row."""
        return self._padded(self.requirement.velocity_residual(q, qd, t))

    @property
    def holonomic_rows(self):
        """The requirement's, then False for each posture row (None when the requirement does not say)."""
        rows = self.requirement.holonomic_rows
        return None if rows is None else np.concatenate([np.asarray(rows, dtype=bool),
                                                         np.zeros(self.n - self.requirement.m, bool)])
