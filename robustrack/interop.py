"""python-control interoperation: plants and tracking loops as ``control.NonlinearIOSystem``.

Three adapters, so that ``control.input_output_response``, ``control.interconnect``,
``linearize`` and python-control's plotting work on robustrack's systems:

:func:`plant_iosystem`
    The plant ``M(q,t) q̈ = Q(q,q̇,t) + Qᵘ`` (docs/theory/fundamental-equation.md) with the generalized force
    Qᵘ as input; with a constraint, the constrained plant ``M q̈ = Q + Qᵘ + Qᶜ``
    where Qᶜ is the fundamental equation's force for the given force ``Q + Qᵘ``
    (W 2.2.7–2.2.9): the constraint reacts to the input, so input components that
    would violate ``A q̈ = b`` are cancelled.
:func:`closed_loop_iosystem`
    Nominal controlled plant + compensator + controlled actual plant (+ the actual
    plant under Qᶜ alone), W 5.2.9–5.2.17, in the state layout of
    :func:`robustrack.tracking.simulate_tracking`: ``[q, q̇ | q_c, q̇_c | z | q_a, q̇_a]``.
    Its right-hand side is :func:`tracking_rhs`, which depends on numpy only.
:func:`linearize_about`
    The linearization of :func:`plant_iosystem` at a point of the nominal trajectory
    (:func:`robustrack.plants.linearize_motion`) as a ``control.StateSpace``.

Signal names: states ``theta1, …, theta1_dot, …`` (from ``plant.coordinates``);
plant inputs ``Q_u1 … Q_un``; closed-loop states suffixed ``_c`` (controlled actual)
and ``_a`` (uncompensated actual), compensator states ``z1 …``; closed-loop outputs
``e_theta1 …, edot_theta1 …`` followed by every state.
"""

from __future__ import annotations

import dataclasses

import control
import numpy as np

from .errors import ParameterError
from .plants.motion import check_constraint_fits, constrained_motion, linearize_motion
from .tracking.rhs import controlled_rhs, nominal_motion, state_names, uncompensated_rhs

__all__ = [
    "TrackingLayout",
    "tracking_rhs",
    "plant_iosystem",
    "closed_loop_iosystem",
    "linearize_about",
]


# --------------------------------------------------------------------------- #
# the plant
# --------------------------------------------------------------------------- #
@dataclasses.dataclass(frozen=True)
class TrackingLayout:
    """Where each part lives in the one-ODE state ``[q, q̇ | q_c, q̇_c | z | q_a, q̇_a]``.

    python-control integrates a system as one ODE, so :func:`closed_loop_iosystem`
    stacks the three systems that :func:`robustrack.tracking.simulate_tracking`
    integrates one after the other.

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
    """The three systems of W 5.2.9–5.2.17 as ONE right-hand side (for python-control).

    Built from the pieces of :mod:`robustrack.tracking.rhs`: the nominal motion,
    the controlled actual system driven by it, and optionally the uncompensated copy.

    Parameters
    ----------
    nominal, actual : Plant
    constraint : Constraint or None
    compensator : Compensator or None
    uncompensated : bool
        Include the actual system under Qᶜ alone (keyword-only).

    Returns
    -------
    rhs : callable
        ``rhs(t, y, force=None) -> dy`` for one state y (layout.size,) or a batch
        (k, layout.size); ``force`` (n,) is an exogenous generalized force on the actual plant(s).
    layout : TrackingLayout
    """
    n = nominal.n
    if actual.n != n:
        raise ParameterError(f"The actual plant has {actual.n} coordinates; the nominal has {n}.")
    check_constraint_fits(nominal, constraint)
    nz = compensator.n_states(n) if compensator is not None else 0
    layout = TrackingLayout(n, nz, bool(uncompensated))
    s = layout.slices()

    def rhs(t, y, force=None):
        q, qd = y[..., s["q"]], y[..., s["qd"]]
        mot = nominal_motion(nominal, constraint, q, qd, t)
        push = mot.Qc if force is None else mot.Qc + force
        x = y[..., 2 * n:4 * n + nz]
        parts = [qd, mot.qdd, controlled_rhs(nominal, actual, compensator, t, x, q, qd, push)]
        if uncompensated:
            parts.append(uncompensated_rhs(actual, t, y[..., 4 * n + nz:], push))
        return np.concatenate(parts, axis=-1)

    return rhs, layout


def plant_iosystem(plant, *, constraint=None, name: str | None = None) -> control.NonlinearIOSystem:
    """The plant as a python-control nonlinear I/O system.

    State ``x = (q, q̇)``, input the generalized force ``Qᵘ`` (n), output ``(q, q̇)``:

        d/dt q = q̇,   M(q,t) q̈ = Q(q,q̇,t) + Qᵘ (+ Qᶜ)

    Parameters
    ----------
    plant : Plant
        Gives ``mass_matrix``, ``given_force``, ``coordinates``.
    constraint : Constraint, optional
        With a constraint, Qᶜ is the fundamental equation's force for the given force
        ``Q + Qᵘ`` (W 2.2.7–2.2.9): the input is added to Q before the constraint
        reacts, so ``A q̈ = b`` holds whatever the input.
    name : str, optional
        System name (default: the plant's class name).

    Returns
    -------
    control.NonlinearIOSystem
        States ``theta1 … thetan, theta1_dot …``; inputs ``Q_u1 … Q_un``; outputs
        named as the states. The update function also accepts a batch of states as
        columns, ``x`` of shape ``(2n, K)`` with ``u`` of shape ``(n, K)`` or ``(n,)``.

    Examples
    --------
    >>> from robustrack.plants import NLinkPendulum
    >>> sys = plant_iosystem(NLinkPendulum(m=[1.0], L=[1.0], g=9.81))
    >>> sys.state_labels, sys.input_labels
    (['theta1', 'theta1_dot'], ['Q_u1'])
    >>> sys.dynamics(0.0, [0.0, 0.0], [2.0]).tolist()   # q̈ = Qᵘ/(m L²)
    [0.0, 2.0]
    """
    check_constraint_fits(plant, constraint)
    n = plant.n

    def update(t, x, u, params):
        x = np.asarray(x, dtype=float)
        u = np.asarray(u, dtype=float)
        q, qd = np.moveaxis(x[:n], 0, -1), np.moveaxis(x[n:], 0, -1)
        force = np.moveaxis(u, 0, -1) if u.ndim > 1 else u
        qdd = constrained_motion(plant, constraint, q, qd, t, force=force, check=False).qdd
        return np.concatenate([x[n:], np.moveaxis(qdd, -1, 0)], axis=0)

    def output(t, x, u, params):
        return np.asarray(x, dtype=float)

    states = state_names(plant.coordinates)
    return control.nlsys(
        update, output, states=states, inputs=[f"Q_u{i + 1}" for i in range(n)], outputs=list(states),
        name=name or type(plant).__name__,
    )


def linearize_about(plant, constraint, q, qd, t: float = 0.0, u=None, *, eps: float = 1e-6,
                    name: str | None = None) -> control.StateSpace:
    """Linearization of :func:`plant_iosystem` at ``(q, q̇, t)`` and input force u.

    The Jacobians are :func:`robustrack.plants.linearize_motion`'s (forward differences
    with step ``eps``, python-control's formula), so entries are accurate to about ``eps``
    times the second derivatives.

    Parameters
    ----------
    plant : Plant
    constraint : Constraint or None
        Linearize the constrained plant (Qᶜ reacting to the state and the input) or,
        with ``None``, the unconstrained one.
    q, qd : array_like (n,)
        The operating point, e.g. a sample of the nominal trajectory.
    t : float
    u : array_like (n,), optional
        The input generalized force at the point (default 0). For the error dynamics
        of a tracking loop use ``constraint=None, u=Qᶜ(t)``: there Qᶜ(t) is computed
        on the nominal state and applied to the actual plant as a held force (W 5.2.17).
    eps : float
        Finite-difference step (> 0).
    name : str, optional

    Returns
    -------
    control.StateSpace
        ``A`` (2n, 2n), ``B`` (2n, n), ``C = I``, ``D = 0``, signal names copied.

    Examples
    --------
    >>> from robustrack.plants import NLinkPendulum
    >>> lin = linearize_about(NLinkPendulum(m=[1.0], L=[2.0], g=9.81), None, [0.0], [0.0])
    >>> np.round(lin.A, 4).tolist()    # θ̈ = −(g/L) θ
    [[0.0, 1.0], [-4.905, 0.0]]
    """
    A, B = linearize_motion(plant, constraint, q, qd, t, u, eps=eps)
    sys = plant_iosystem(plant, constraint=constraint, name=name)
    n = plant.n
    defaults = control.config.defaults
    linear_name = (defaults["iosys.linearized_system_name_prefix"] + sys.name
                   + defaults["iosys.linearized_system_name_suffix"])
    return control.ss(A, B, np.eye(2 * n), np.zeros((2 * n, n)), name=linear_name, states=sys.state_labels,
                      inputs=sys.input_labels, outputs=sys.output_labels)



def closed_loop_iosystem(nominal, actual, constraint, compensator, *, uncompensated: bool = False,
                         disturbance: bool = False, name: str | None = None) -> control.NonlinearIOSystem:
    """The tracking loop (nominal controller + compensator + actual plant) as a python-control system.

    Same equations and state layout as :func:`robustrack.tracking.simulate_tracking`
    (continuous control): ``[q, q̇ | q_c, q̇_c | z | q_a, q̇_a]``; see :func:`tracking_rhs`.

    Parameters
    ----------
    nominal, actual : Plant
    constraint : Constraint or None
    compensator : Compensator or None
        A continuous compensator (a discontinuous one, g = sign, stalls the adaptive
        integrator: use ``simulate_tracking(..., sample_period=h)``).
    uncompensated : bool
        Include the actual system under Qᶜ alone (states ``…_a``).
    disturbance : bool
        Give the system inputs ``d_theta1 …``: an exogenous generalized force on the
        actual plant (both actual copies). Default: no inputs.
    name : str, optional

    Returns
    -------
    control.NonlinearIOSystem
        Outputs ``e_<coordinate>`` (n), ``edot_<coordinate>`` (n), then every state.
        Initial state: ``np.concatenate([q0, qd0, qc0, qcd0, compensator.initial_state(n)]
        (+ [qc0, qcd0] when uncompensated))``.

    Examples
    --------
    >>> from robustrack.plants import triple_pendulum
    >>> sys = closed_loop_iosystem(triple_pendulum(), triple_pendulum(), None, None)
    >>> sys.nstates, sys.ninputs, sys.output_labels[:2]
    (12, 0, ['e_theta1', 'e_theta2'])
    """
    if compensator is not None and compensator.discontinuous:
        raise ParameterError(
            f"`compensator` {getattr(compensator, 'name', type(compensator).__name__)!r} uses a "
            "discontinuous control function (sign), which stalls an adaptive integrator; use "
            "simulate_tracking(..., sample_period=h) (zero-order hold) instead."
        )
    rhs, layout = tracking_rhs(nominal, actual, constraint, compensator, uncompensated=uncompensated)
    n = layout.n
    s = layout.slices()
    coords = list(nominal.coordinates)

    def update(t, x, u, params):
        return rhs(t, np.asarray(x, dtype=float), force=np.asarray(u, dtype=float) if disturbance else None)

    def output(t, x, u, params):
        x = np.asarray(x, dtype=float)
        return np.concatenate([x[s["qc"]] - x[s["q"]], x[s["qcd"]] - x[s["qd"]], x])

    states = layout.state_names(coords)
    return control.nlsys(
        update, output, states=states,
        inputs=[f"d_{c}" for c in coords] if disturbance else 0,
        outputs=[f"e_{c}" for c in coords] + [f"edot_{c}" for c in coords] + states,
        name=name or "tracking_loop",
    )
