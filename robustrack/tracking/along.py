"""A controlled solution's points and what is measured at them, on numpy (W 5.2.17, W 5.3.3–5.3.6).

The points of a solution are its output grid merged with every accepted step reached (:func:`solution_points`):
peaks between the points of a coarse grid are missed otherwise. At them: the compensator's u (the held u under
sampled control, :func:`controls`), Qᵘ = M(q_c) u (:func:`control_force`) and what the bounds assume
(:func:`assumption_norms`: ‖δq‖∞, ‖M̃_a‖∞ and GD's ‖(I − M̃_a)(e + K_i z)‖∞). Both the full assessment
(:func:`~robustrack.tracking.simulate.assemble`) and the numpy loop's
:meth:`~robustrack.tracking.numpy_loop.NumpyLoop.measure` (a campaign sample's peaks) take them from here; the
compiled loop measures the same quantities on kernels (:mod:`robustrack.compiled.along`). Docs:
docs/theory/nominal-actual.md.
"""

from __future__ import annotations

import numpy as np

from .assess import dropped_term_gain, uncertainty_along_run

__all__ = ["merge", "solution_points", "controls", "control_force", "assumption_norms", "MEASURED_COLUMNS"]

#: The columns of a loop's :meth:`~robustrack.tracking.backend.Loop.measure`, in order.
MEASURED_COLUMNS = ("e", "edot", "Qu", "dq", "Mtilde", "P")


def merge(t_a, x_a, t_b, x_b):
    """Two sampled trajectories merged in time order (duplicates kept once).

    Parameters
    ----------
    t_a, t_b : ndarray (T_a,), (T_b,)
    x_a, x_b : ndarray (T_a, d), (T_b, d)

    Returns
    -------
    t : ndarray (T,)
    x : ndarray (T, d)
    """
    t = np.concatenate([t_a, t_b])
    x = np.concatenate([x_a, x_b])
    order = np.argsort(t, kind="stable")
    t, x = t[order], x[order]
    keep = np.concatenate([[True], np.diff(t) > 0]) if t.size else np.zeros(0, bool)
    return t[keep], x[keep]


def solution_points(run, ctl):
    """The solution itself: the output grid merged with every accepted step reached (t, x), and the nominal there.

    Parameters
    ----------
    run : NominalRun
    ctl : ControlledSolution

    Returns
    -------
    t : ndarray (T,)
    x : ndarray (T, 2n + n_z)
        The controlled states.
    y : ndarray (T, 2n)
        The nominal states (the run's dense output).
    """
    reached = ctl.t[-1] if ctl.t.size else run.t_span[0]
    inside = ctl.t_steps <= reached
    tf, xf = merge(ctl.t, ctl.x, ctl.t_steps[inside], ctl.x_steps[inside])
    return tf, xf, (run.solution(tf) if tf.size else np.zeros((0, 2 * run.nominal.n)))


def controls(compensator, ctl, t, x, y, n):
    """u at times t, controlled states x and nominal states y (the held u under sampled control).

    Parameters
    ----------
    compensator : Compensator or None
        None: u = 0.
    ctl : ControlledSolution
        Its ``u_times`` / ``u_held`` under sampled control.
    t : ndarray (T,)
    x : ndarray (T, 2n + n_z)
    y : ndarray (T, 2n) or None
        Not read under sampled control.
    n : int

    Returns
    -------
    ndarray (T, n)
    """
    if compensator is None or t.size == 0:
        return np.zeros((t.size, n))
    if ctl.u_times is not None:
        if len(ctl.u_times) == 0:  # the loop failed inside its first hold interval: no u was ever held
            return np.zeros((t.size, n))
        k = np.clip(np.searchsorted(ctl.u_times, t, side="right") - 1, 0, len(ctl.u_times) - 1)
        return ctl.u_held[k]
    return compensator(t[:, None], x[:, :n] - y[:, :n], x[:, n:2 * n] - y[:, n:], x[:, 2 * n:])


def control_force(nominal, u, t, x):
    """Qᵘ = M(q_c) u at times t and controlled states x (W 5.2.17).

    Parameters
    ----------
    nominal : Plant
    u : ndarray (T, n)
    t : ndarray (T,)
    x : ndarray (T, 2n + n_z)

    Returns
    -------
    ndarray (T, n)
    """
    return (nominal.mass_matrix(x[:, :nominal.n], t) @ u[..., None])[..., 0]


def assumption_norms(nominal, actual, compensator, t, x, y, Qc):
    """‖δq‖∞, ‖M̃_a‖∞ and P at the solution points (W 5.3.4–5.3.5, W 8.2.17, 8.3.16): GD's ‖(I − M̃_a)(e + K_i z)‖∞,
    GD-bar's ‖(I − M̃_a)e‖∞ (what is checked of it: :func:`~robustrack.tracking.assess.dropped_term`).

    Parameters
    ----------
    nominal, actual : Plant
    compensator : Compensator or None
        GD and GD-bar have the dropped term P (:func:`~robustrack.tracking.assess.dropped_term_gain`).
    t : ndarray (T,)
    x : ndarray (T, 2n + n_z)
        The controlled states (z = ∫e for GD).
    y : ndarray (T, 2n)
        The nominal states.
    Qc : ndarray (T, n)
        The nominal control force there.

    Returns
    -------
    dq, Mtilde : ndarray (T,)
    P : ndarray (T,) or None
        None for the other compensators.
    """
    n = nominal.n
    Ki = dropped_term_gain(compensator)
    v = None
    if Ki is not None:  # e + K_i z, z = ∫e (GD); e (GD-bar, no z)
        v = x[:, :n] - y[:, :n]
        if Ki:
            v = v + Ki * x[:, 2 * n:3 * n]
    with np.errstate(all="ignore"):
        seen = uncertainty_along_run(nominal, actual, y[:, :n], y[:, n:], x[:, :n], x[:, n:2 * n], Qc, t, v=v)
    return seen["dq_norm"], seen["Mtilde_norm"], seen.get("P_norm")
