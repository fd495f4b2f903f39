"""The tracking loop's right-hand side (W 5.2.9–5.2.17), shared by the simulator and
the python-control adapter.

One ODE state ``[q, q̇ | q_c, q̇_c | z | q_a, q̇_a]``: the controlled nominal system
(Qᶜ from the fundamental equation), the controlled actual system
``M_a q̈_c = Q_a + Qᶜ(t) + M(q_c) u`` (Qᶜ(t) from the nominal state, Qᵘ = M u with the
nominal mass matrix), the compensator's states z, and optionally the actual system
under Qᶜ(t) alone. numpy only: the hot path of every tracking simulation.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from .errors import ParameterError
from .mechanics import solve_constrained

__all__ = ["TrackingLayout", "tracking_rhs", "state_names", "batched_jacobian"]


def state_names(coordinates, suffix: str = "") -> list[str]:
    """``[c<suffix> …, c<suffix>_dot …]`` for the coordinates c.

    Parameters
    ----------
    coordinates : iterable of str
        The coordinate names c, in order.
    suffix : str
        Appended to every name (before ``_dot``), e.g. ``"_c"``; default none.

    Returns
    -------
    list of str
        2n names: the positions, then the velocities.
    """
    return [f"{c}{suffix}" for c in coordinates] + [f"{c}{suffix}_dot" for c in coordinates]


# --------------------------------------------------------------------------- #
# the tracking loop
# --------------------------------------------------------------------------- #
@dataclasses.dataclass(frozen=True)
class TrackingLayout:
    """Where each part lives in the tracking ODE state ``[q, q̇ | q_c, q̇_c | z | q_a, q̇_a]``.

    Attributes
    ----------
    n : int
        Coordinates.
    nz : int
        Compensator states.
    uncompensated : bool
        Whether the actual system under Qᶜ alone (q_a, q̇_a) is part of the state.
    """

    n: int
    nz: int
    uncompensated: bool

    @property
    def size(self) -> int:
        return 4 * self.n + self.nz + (2 * self.n if self.uncompensated else 0)

    def slices(self) -> dict[str, slice]:
        """``q, qd, qc, qcd, z, qa, qad`` → slice of the state (qa, qad empty without them)."""
        n, nz = self.n, self.nz
        i_a = 4 * n + nz
        end = self.size
        return {"q": slice(0, n), "qd": slice(n, 2 * n), "qc": slice(2 * n, 3 * n),
                "qcd": slice(3 * n, 4 * n), "z": slice(4 * n, i_a),
                "qa": slice(i_a, min(i_a + n, end)), "qad": slice(min(i_a + n, end), end)}

    def state_names(self, coordinates) -> list[str]:
        """Names in order: ``theta1 …, theta1_dot …, theta1_c …, theta1_c_dot …, z1 …, theta1_a …``."""
        names = state_names(coordinates) + state_names(coordinates, "_c")
        names += [f"z{i + 1}" for i in range(self.nz)]
        if self.uncompensated:
            names += state_names(coordinates, "_a")
        return names


def tracking_rhs(nominal, actual, constraint, compensator, *, uncompensated: bool = False):
    """Right-hand side of the tracking loop (W 5.2.9–5.2.17), and its state layout.

    ``M q̈ = Q + Qᶜ`` (nominal, Qᶜ from the fundamental equation), ``M_a q̈_c = Q_a +
    Qᶜ(t) + M(q_c) u + d`` (controlled actual, u from the compensator on ``e = q_c − q``,
    ``ė``, z), ``ż`` from the compensator, and optionally ``M_a q̈_a = Q_a + Qᶜ(t) + d``.

    Parameters
    ----------
    nominal, actual : Plant
    constraint : Constraint or None
        None: no Qᶜ (the unconstrained variant, W Remark 7.2).
    compensator : Compensator or None
        None: u = 0.
    uncompensated : bool
        Include the actual system under Qᶜ alone.

    Returns
    -------
    rhs : callable
        ``rhs(t, y, u_held=None, force=None) -> dy`` for one state y (layout.size,) or a
        batch of states (k, layout.size) (used for the batched finite-difference Jacobian);
        ``u_held`` replaces the compensator's u (zero-order hold); ``force`` (n,) is an
        exogenous generalized force on the actual plant(s).
    layout : TrackingLayout
    """
    n = nominal.n
    if actual.n != n:
        raise ParameterError(f"The actual plant has {actual.n} coordinates; the nominal has {n}.")
    if constraint is not None and constraint.n != n:
        raise ParameterError(f"The constraint acts on {constraint.n} coordinates but the plant has {n}.")
    nz = compensator.n_states(n) if compensator is not None else 0
    layout = TrackingLayout(n, nz, bool(uncompensated))
    s = layout.slices()
    sq, sqd, sqc, sqcd, sz, sqa, sqad = (s[k] for k in ("q", "qd", "qc", "qcd", "z", "qa", "qad"))

    def nominal_motion(q, qd, t, M):
        Q = nominal.given_force(q, qd, t)
        if constraint is None:
            return np.linalg.solve(M, Q[..., None])[..., 0], np.zeros_like(Q)
        A, b = constraint.matrices(q, qd, t)
        mot = solve_constrained(M, Q, A, b, check=False)
        return mot.qdd, mot.Qc

    def rhs(t, y, u_held=None, force=None):
        # y: one state (size,) or a batch of states (k, size); everything below broadcasts
        q, qd, qc, qcd = y[..., sq], y[..., sqd], y[..., sqc], y[..., sqcd]
        dy = np.empty(y.shape)
        dy[..., sq] = qd
        if compensator is None:
            dy[..., sqd], Qc = nominal_motion(q, qd, t, nominal.mass_matrix(q, t))
            push = Qc
        else:
            Mn = nominal.mass_matrix(np.stack([q, qc]), t)  # M(q) and M(q_c) in one call
            dy[..., sqd], Qc = nominal_motion(q, qd, t, Mn[0])
            u = compensator(t, qc - q, qcd - qd, y[..., sz]) if u_held is None else u_held
            push = Qc + (Mn[1] @ u[..., None])[..., 0]  # Qᶜ(t) + Qᵘ, Qᵘ = M(q_c) u (W 5.2.17)
            if nz:
                dy[..., sz] = compensator.state_derivative(t, qc - q, qcd - qd, y[..., sz])
        extra = 0.0 if force is None else force
        if uncompensated:
            X, Xd = np.stack([qc, y[..., sqa]]), np.stack([qcd, y[..., sqad]])
            F = actual.given_force(X, Xd, t) + np.stack([push, Qc]) + extra
            acc = np.linalg.solve(actual.mass_matrix(X, t), F[..., None])[..., 0]
            dy[..., sqc], dy[..., sqcd], dy[..., sqa], dy[..., sqad] = qcd, acc[0], Xd[1], acc[1]
        else:
            dy[..., sqc] = qcd
            F = actual.given_force(qc, qcd, t) + push + extra
            dy[..., sqcd] = np.linalg.solve(actual.mass_matrix(qc, t), F[..., None])[..., 0]
        return dy

    return rhs, layout


def batched_jacobian(rhs):
    """Forward-difference Jacobian of a batch-capable ``rhs`` in ONE batched call.

    Returns ``jac(t, y, *args) -> (size, size)``: the ``size`` perturbed states and the
    unperturbed one are evaluated together (``rhs(t, Y)`` with Y of shape (size + 1, size)),
    so a Jacobian costs about as much as a few right-hand sides instead of ``size`` of them.
    Steps ``h_j = √ε_mach · max(|y_j|, 1)``.

    Parameters
    ----------
    rhs : callable
        ``rhs(t, Y, *args) -> dY`` that accepts a batch of states Y of shape (k, size)
        and returns their derivatives, shape (k, size) (e.g. the ``rhs`` of
        :func:`tracking_rhs`); extra ``args`` are passed through.

    Returns
    -------
    jac : callable
        ``jac(t, y, *args)``, the Jacobian ∂rhs/∂y at the state y (size,), shape (size, size).
    """
    root_eps = np.sqrt(np.finfo(float).eps)

    def jac(t, y, *args):
        h = root_eps * np.maximum(np.abs(y), 1.0)
        Y = np.vstack([y, y + np.diag(h)])
        F = rhs(t, Y, *args)
        return ((F[1:] - F[0]) / h[:, None]).T

    return jac
