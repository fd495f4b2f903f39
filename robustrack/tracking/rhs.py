"""Right-hand sides of the tracking loop: the numpy reference (W 5.2.9–5.2.17).

Three systems, integrated one after the other (:mod:`robustrack.tracking.integrate`):

1. the controlled **nominal** system ``M q̈ = Q + Qᶜ`` (W 5.2.9–5.2.11), Qᶜ from the
   fundamental equation — it does not depend on any compensator;
2. the controlled **actual** system ``M_a q̈_c = Q_a + Qᶜ(t) + M(q_c) u`` (W 5.2.17),
   driven by the nominal solution: Qᶜ(t) is computed on the nominal state, u from
   ``e = q_c − q``, ``ė`` and the compensator's own states z (∫e for GD);
3. the **uncompensated** actual system ``M_a q̈_a = Q_a + Qᶜ(t)`` (W 5.2.16).

Everything here is numpy and broadcasts over leading batch axes; it is the reference
the compiled kernels (:mod:`robustrack.compiled.loop`) are tested against, and the
path taken when a plant or compensator has no compiled form. The functions are also
complex-safe in the state (for the built-in plants and compensators), so
:func:`complex_step_jacobian` gives their Jacobian to rounding.
"""

from __future__ import annotations

import numpy as np

from ..plants.motion import constrained_motion, function_source, produced

__all__ = ["nominal_motion", "controlled_rhs", "controlled_jacobian", "has_exact_jacobian", "uncompensated_rhs",
           "complex_step_jacobian", "batched_jacobian", "state_names", "nonfinite_source"]


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


def nominal_motion(plant, constraint, q, qd, t, *, force=None, nonideal=None, actuators=None):
    """q̈ and Qᶜ of ``M q̈ = Q + force + Qᶜ`` under ``constraint`` (W 2.2.7–2.2.9, 5.2.9–5.2.11).

    :func:`robustrack.plants.constrained_motion` (unchecked: the hot path; one state always on numpy — the
    reference loop's own numbers — a batch through the compiled evaluator where loaded), or with
    non-square ``actuators`` the servo-constraint realization of Qᶜ.

    Parameters
    ----------
    plant : Plant
    constraint : Constraint or None
        None: no constraint, Qᶜ = 0 (q̈ = M⁻¹ (Q + force)).
    q, qd : ndarray (..., n)
        States (any leading batch axes).
    t : float or ndarray
        Time(s), broadcasting with the batch axes.
    force : ndarray (..., n), optional
        An extra generalized force added to Q before the constraint reacts (keyword-only).
    nonideal : callable, optional
        ``C(q, qd, t)``, the non-ideal work vector (W 4.2.6; keyword-only).
    actuators : BoundActuators, optional
        The constraint force realized by actuators, ``Qᶜ = B τᶜ`` (keyword-only;
        :mod:`robustrack.tracking.actuators`); raises
        :class:`~robustrack.errors.RealizabilityError` where it is not realizable.

    Returns
    -------
    ConstrainedMotion or tuple
        With a constraint, :class:`~robustrack.mechanics.ConstrainedMotion`
        (``qdd``, ``Qc``, ``residual``, ``augmented``); without, the same fields with
        Qᶜ = 0 and residual 0.
    """
    from ..mechanics import ConstrainedMotion

    if actuators is not None and not actuators.square:  # invertible B: the ideal Qᶜ is B τᶜ (below)
        qdd, Qc = actuators.nominal_acceleration(q, qd, t)
        residual = np.zeros(qdd.shape[:-1])
        if constraint is not None:  # ‖A q̈ − b‖₂: rounding only, the servo force is exact where it exists
            A, b = constraint.matrices(q, qd, t)
            residual = np.linalg.norm((A @ qdd[..., None])[..., 0] - b, axis=-1)
        return ConstrainedMotion(qdd=qdd, Qc=Qc, residual=residual, augmented=np.zeros(qdd.shape[:-1], bool))
    return constrained_motion(plant, constraint, q, qd, t, force=force, nonideal=nonideal, check=False, compiled=False)


def controlled_rhs(nominal, actual, compensator, t, x, q, qd, Qc, *, u_held=None, actuators=None, tau_c=None):
    """d/dt (q_c, q̇_c, z) of the controlled actual system (W 5.2.17).

    Parameters
    ----------
    nominal, actual : Plant
        M(q_c) of the nominal plant gives Qᵘ = M u; the actual plant moves.
    compensator : Compensator or None
        u(t, e, ė, z); None: u = 0.
    t : float
    x : ndarray (..., 2n + n_z)
        (q_c, q̇_c, z), any leading batch axes.
    q, qd, Qc : ndarray (n,)
        The nominal state and constraint force at t.
    u_held : ndarray (n,), optional
        A held control (zero-order hold) instead of the compensator's u (keyword-only).
    actuators : BoundActuators, optional
        Apply ``B sat(τᶜ + τᵘ)`` instead of ``Qᶜ + M u`` (keyword-only;
        :mod:`robustrack.tracking.actuators`).
    tau_c : ndarray (k,), optional
        The nominal command τᶜ(t) (keyword-only; with ``actuators``).

    Returns
    -------
    ndarray, shape of x
    """
    n = q.shape[-1]
    qc, qcd, z = x[..., :n], x[..., n:2 * n], x[..., 2 * n:]
    e, ed = qc - q, qcd - qd
    if u_held is not None:
        u = u_held
    elif compensator is None:
        u = np.zeros(n)
    else:
        u = compensator(t, e, ed, z)
    Qu = (nominal.mass_matrix(qc, t) @ u[..., None])[..., 0]  # Qᵘ = M(q_c) u (W 5.2.17)
    F = actual.given_force(qc, qcd, t) + Qc + Qu
    if actuators is not None:  # B sat(τᶜ + τᵘ); the same force Qᶜ + M u where exact (invertible B, unsaturated)
        applied, tau_raw = actuators.command(qc, t, tau_c, u)
        F = np.where(actuators.exact(tau_raw), F, actual.given_force(qc, qcd, t) + applied)
    acc = np.linalg.solve(actual.mass_matrix(qc, t), F[..., None])[..., 0]
    zdot = compensator.state_derivative(t, e, ed, z) if compensator is not None and z.shape[-1] else z * 0
    return np.concatenate([qcd, acc, zdot], axis=-1)


def nonfinite_source(nominal, actual, compensator, t, x, q, qd) -> str | None:
    """Which function made the controlled right-hand side non-finite at a finite state, or None.

    The actual plant's Q and M, the nominal M (of Qᵘ = M u) and the compensator's u are evaluated again at
    (t, x) and the first that is not finite is named with t, q_c and q̇_c (:func:`~robustrack.plants.motion.produced`).

    Parameters
    ----------
    nominal, actual : Plant
    compensator : Compensator or None
    t : float
    x : ndarray (2n + n_z,)
    q, qd : ndarray (n,)
        The nominal state at t.

    Returns
    -------
    str or None
    """
    from ..errors import ParameterError

    n = q.shape[-1]
    qc, qcd, z = x[:n], x[n:2 * n], x[2 * n:]
    if not np.isfinite(x).all():
        return None
    checks = [(lambda: actual.given_force(qc, qcd, t), function_source(actual, "Q", "given_force"), 1),
              (lambda: actual.mass_matrix(qc, t), function_source(actual, "M", "mass_matrix"), 2),
              (lambda: nominal.mass_matrix(qc, t), function_source(nominal, "M", "mass_matrix"), 2)]
    if compensator is not None:
        checks.append((lambda: compensator(t, qc - q, qcd - qd, z), f"the compensator {type(compensator).__name__}", 1))
    for evaluate, source, tail in checks:
        try:
            produced(evaluate(), source, qc, qcd, t, tail)
        except ParameterError as exc:
            return str(exc)
    return None


def python_source(nominal, actual, t, q, qd) -> str | None:
    """The first of the plants' functions (in Python, not the compiled ones) that raises or is not finite at
    (t, q, q̇), named with the state in one line; None when all are fine there.

    Parameters
    ----------
    nominal, actual : Plant
    t : float
    q, qd : ndarray (n,)

    Returns
    -------
    str or None
    """
    from ..errors import RobustrackError

    # one state (q of shape (n,)): a plant from functions calls the user's Python function, not the compiled one
    checks = [(lambda: actual.given_force(q, qd, t), function_source(actual, "Q", "given_force"), 1),
              (lambda: actual.mass_matrix(q, t), function_source(actual, "M", "mass_matrix"), 2),
              (lambda: nominal.mass_matrix(q, t), function_source(nominal, "M", "mass_matrix"), 2)]
    where = (f"at t = {t:.6g}, q = {np.round(q, 6).tolist()}, q̇ = {np.round(qd, 6).tolist()}")
    for evaluate, source, tail in checks:
        try:
            produced(evaluate(), source, q, qd, t, tail)
        except RobustrackError as exc:
            return str(exc)
        except Exception as exc:  # noqa: BLE001 — the user's function: named, with the state
            return (f"{source} raised {type(exc).__name__}: {exc} {where}; check that function at this state.")
    return None


def has_exact_jacobian(nominal, actual, actuators=None) -> bool:
    """Whether :func:`controlled_jacobian` applies: both plants have exact derivatives, no actuators.

    Parameters
    ----------
    nominal, actual : Plant
        A plant declares ``exact_derivatives = True`` when its ``derivatives()`` (∂M/∂q, ∂Q/∂q,
        ∂Q/∂q̇) are exact (:class:`~robustrack.plants.URDFPlant`, a ``Plant.from_functions`` plant
        given all three).
    actuators : BoundActuators, optional
        With actuators the numpy path keeps differencing the right-hand side.

    Returns
    -------
    bool
    """
    return actuators is None and all(getattr(p, "exact_derivatives", False) for p in (nominal, actual))


def _dynamics_derivatives(plant, q, qd, qdd, t):
    """∂τ/∂q, ∂τ/∂q̇ of τ = M(q) q̈ − Q(q, q̇, t) at a fixed q̈: the plant's own (RNEA) or from ``derivatives()``."""
    own = getattr(plant, "inverse_dynamics_derivatives", None)
    if own is not None:
        return own(q, qd, qdd, t)
    dM, dQ_dq, dQ_dqd = plant.derivatives(q, qd, t)  # dM[..., i, j, k] = ∂M_ij/∂q_k
    return np.einsum("...ijk,...j->...ik", dM, qdd) - dQ_dq, -dQ_dqd


def controlled_jacobian(nominal, actual, compensator, t, x, q, qd, Qc):
    """∂/∂x of :func:`controlled_rhs` (no hold, no actuators) from the plants' exact derivatives (W 5.2.17).

    The numpy mirror of the compiled kernel's Jacobian (:func:`~robustrack.compiled.systems.controlled_eval`):
    with F = Q_a + Qᶜ + M_n u and q̈_c = M_a⁻¹ F,

        ∂q̈_c/∂q_c = M_a⁻¹ (∂Q_a/∂q_c − (∂M_a/∂q_c) q̈_c + (∂M_n/∂q_c) u + M_n ∂u/∂e),
        ∂q̈_c/∂q̇_c = M_a⁻¹ (∂Q_a/∂q̇_c + M_n ∂u/∂ė),   ∂q̈_c/∂z = M_a⁻¹ M_n ∂u/∂z.

    The plant terms come from the plants (``inverse_dynamics_derivatives`` — one RNEA derivative call
    for a URDF plant — or ``derivatives()``), exact; the compensator's ∂u/∂(e, ė, z) and ∂ż/∂(e, ė, z)
    by forward differences of the compensator alone, steps √ε·max(|y_j|, 1) as :func:`batched_jacobian`.

    Parameters
    ----------
    nominal, actual : Plant
        With ``exact_derivatives`` (:func:`has_exact_jacobian`).
    compensator : Compensator or None
    t : float
    x : ndarray (2n + n_z,)
        (q_c, q̇_c, z), one state.
    q, qd, Qc : ndarray (n,)
        The nominal state and constraint force at t.

    Returns
    -------
    ndarray (2n + n_z, 2n + n_z)
    """
    n = q.shape[-1]
    x = np.asarray(x, dtype=float)
    size = x.shape[-1]
    nz = size - 2 * n
    qc, qcd, z = x[:n], x[n:2 * n], x[2 * n:]
    e, ed = qc - q, qcd - qd
    J = np.zeros((size, size))
    J[:n, n:2 * n] = np.eye(n)
    if compensator is None:
        u, U, Z = np.zeros(n), np.zeros((n, size)), np.zeros((nz, size))
    else:
        y = np.concatenate([e, ed, z])
        h = np.sqrt(np.finfo(float).eps) * np.maximum(np.abs(y), 1.0)
        Y = np.vstack([y, y + np.diag(h)])
        E, ED, ZZ = Y[:, :n], Y[:, n:2 * n], Y[:, 2 * n:]
        G = np.asarray(compensator(t, E, ED, ZZ), dtype=float)
        if nz:
            G = np.concatenate([G, np.asarray(compensator.state_derivative(t, E, ED, ZZ), dtype=float)], axis=-1)
        D = ((G[1:] - G[0]) / h[:, None]).T  # ∂(u, ż)/∂(e, ė, z); e = q_c − q and ė = q̇_c − q̇: the same in x
        u, U, Z = G[0, :n], D[:n], D[n:]
    Mn = nominal.mass_matrix(qc, t)
    Ma = actual.mass_matrix(qc, t)
    F = actual.given_force(qc, qcd, t) + Qc + Mn @ u
    acc = np.linalg.solve(Ma, F)
    Tq, Tqd = _dynamics_derivatives(actual, qc, qcd, acc, t)  # ∂(M_a q̈ − Q_a) at q̈ = q̈_c
    R = Mn @ U
    R[:, :n] -= Tq
    R[:, n:2 * n] -= Tqd
    if np.any(u != 0):  # (∂M_n/∂q_c) u = ∂τ_n(q_c, q̇_c, u)/∂q − ∂τ_n(q_c, q̇_c, 0)/∂q
        R[:, :n] += _dynamics_derivatives(nominal, qc, qcd, u, t)[0] - _dynamics_derivatives(nominal, qc, qcd, 0 * u,
                                                                                                t)[0]
    J[n:2 * n] = np.linalg.solve(Ma, R)
    J[2 * n:] = Z
    return J


def uncompensated_rhs(actual, t, x, Qc, *, actuators=None, tau_c=None):
    """d/dt (q_a, q̇_a) of the actual system under Qᶜ(t) alone (W 5.2.16).

    Parameters
    ----------
    actual : Plant
    t : float
    x : ndarray (..., 2n)
        (q_a, q̇_a).
    Qc : ndarray (n,)
        The nominal constraint force at t.
    actuators : BoundActuators, optional
        Apply ``B sat(τᶜ)`` instead of Qᶜ (keyword-only).
    tau_c : ndarray (k,), optional
        The nominal command τᶜ(t) (keyword-only; with ``actuators``).

    Returns
    -------
    ndarray, shape of x
    """
    n = Qc.shape[-1]
    qa, qad = x[..., :n], x[..., n:]
    F = actual.given_force(qa, qad, t) + (Qc if actuators is None else actuators.uncompensated(qa, t, Qc, tau_c))
    acc = np.linalg.solve(actual.mass_matrix(qa, t), F[..., None])[..., 0]
    return np.concatenate([qad, acc], axis=-1)


def complex_step_jacobian(fun, t, x, h: float = 1e-30):
    """∂fun/∂x by the complex step, ``Im fun(x + i h e_j) / h``: exact to rounding.

    Parameters
    ----------
    fun : callable
        ``fun(t, X) -> (k, d)`` for a batch X of k complex states (k, d); must be
        complex-analytic in x where it is differentiated (the numpy reference is).
    t : float
    x : ndarray (d,)
    h : float
        The step (tiny: no subtraction, so no cancellation).

    Returns
    -------
    ndarray (d_out, d)
    """
    x = np.asarray(x, dtype=float)
    X = x + 1j * h * np.eye(x.size)
    return (np.imag(fun(t, X)) / h).T


def batched_jacobian(rhs):
    """Forward-difference Jacobian of a batch-capable ``rhs`` in ONE batched call.

    Used by the numpy path (no exact Jacobian there). Steps ``h_j = √ε · max(|y_j|, 1)``.

    Parameters
    ----------
    rhs : callable
        ``rhs(t, Y, *args) -> dY`` that accepts a batch of states Y of shape (k, size).

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
