"""The constrained system alone, ``M q̈ = Q + Qᶜ`` (W 2.2.7–2.2.9): :func:`simulate_constrained`.

Any scipy method; DOP853 runs compiled where the plant and the constraint have compiled forms
(:func:`~robustrack.tracking.backend.constrained_loop`, the same door as the tracking loop). Docs:
docs/theory/nominal-actual.md.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

import numpy as np

from .._evaluator import motion_compiled
from ..errors import RobustrackError, SolverError
from ..plants.motion import constrained_motion, contact_forces
from .defaults import DEFAULT_ATOL, DEFAULT_RTOL
from .integrate import SolverStats, check_common, output_times, say_limits

__all__ = ["ConstrainedResult", "simulate_constrained"]

# --------------------------------------------------------------------------- #
# the constrained system alone (public)
# --------------------------------------------------------------------------- #
#: What a :class:`ConstrainedResult` derives from its states at the first access of any of them.
DERIVED = ("qdd", "Qc", "residual", "accel_residual", "contact", "contact_labels")


@dataclass(frozen=True)
class ConstrainedResult:
    """Time history of a constrained system ``M q̈ = Q + Qᶜ``.

    The run's states are its solver's; what follows from them — q̈, Qᶜ, the residuals and the contact forces — is
    computed at the first access of any of them (one pass over the output points, kept), so a run whose caller
    reads only q and q̇ does not pay for it (docs/results/performance.md, short constrained robot runs).

    Attributes
    ----------
    t : (T,)
    q, qd, qdd : (T, n)
    Qc : (T, n)
        Constraint force along the motion.
    residual : (T, m)
        Raw constraint values (φ for holonomic rows, ψ for nonholonomic rows);
        ``None`` when the constraint gives no raw residuals.
    accel_residual : (T,)
        ‖A q̈ − b‖₂ (nonzero only for inconsistent constraints).
    solver : SolverStats
    coordinates : tuple of str
    contact : (T, k) or None
        Beside Qᶜ, the contact forces (and moments) of the constraint's frame constraints in their frames
        (:func:`robustrack.plants.motion.contact_forces`); None when it has none.
    contact_labels : tuple of str
        The columns of ``contact``, with units.
    derive : callable
        ``derive() -> dict`` of the names in :data:`DERIVED`, called once at the first access of one of them.
    """

    t: np.ndarray
    q: np.ndarray
    qd: np.ndarray
    solver: SolverStats
    coordinates: tuple = field(default=())
    derive: object = field(default=None, repr=False, compare=False)

    def _derived(self, name: str):
        values = self.__dict__.get("_values")
        if values is None:
            values = self.derive() if self.derive is not None else {}
            object.__setattr__(self, "_values", values)  # frozen: kept once, as a cache
        return values.get(name)

    def __getstate__(self):  # a pickled result (a campaign worker's) carries its values, not the closure
        state = {k: v for k, v in self.__dict__.items() if k != "derive"}
        state["_values"] = {name: self._derived(name) for name in DERIVED}
        return state

    def __setstate__(self, state):
        self.__dict__.update(state, derive=None)

    qdd = property(lambda self: self._derived("qdd"), doc="(T, n) q̈ along the motion.")
    Qc = property(lambda self: self._derived("Qc"), doc="(T, n) Qᶜ along the motion.")
    residual = property(lambda self: self._derived("residual"), doc="(T, m) raw constraint values, or None.")
    accel_residual = property(lambda self: self._derived("accel_residual"), doc="(T,) ‖A q̈ − b‖₂.")
    contact = property(lambda self: self._derived("contact"), doc="(T, k) contact forces, or None.")
    contact_labels = property(lambda self: self._derived("contact_labels") or (), doc="The columns of contact.")

    @property
    def success(self) -> bool:
        return self.solver.success

    @property
    def max_constraint_residual(self) -> float:
        """max over t and rows of |φ| or |ψ| (NaN if the constraint gives none)."""
        if self.residual is None or self.residual.size == 0:
            return float("nan")
        return float(np.max(np.abs(self.residual)))



def simulate_constrained(
    plant,
    constraint,
    q0,
    qd0,
    t_span,
    *,
    t_eval=None,
    n_points: int = 1001,
    method: str = "DOP853",
    rtol: float = DEFAULT_RTOL,
    atol: float = DEFAULT_ATOL,
    nonideal=None,
    raise_on_failure: bool = True,
) -> ConstrainedResult:
    """Integrate the constrained system ``M q̈ = Q + Qᶜ`` (W 2.2.7–2.2.9).

    Parameters
    ----------
    plant : Plant
        Gives ``mass_matrix(q, t)`` and ``given_force(q, qd, t)``.
    constraint : Constraint or None
        Gives ``matrices(q, qd, t) -> (A, b)`` and, optionally, raw residuals; None: the
        unconstrained system ``M q̈ = Q`` (no residuals: ``residual`` is None).
    q0, qd0 : array_like (n,)
        Initial state.
    t_span : (float, float)
        Start and end time ``(t0, t1)``, t1 > t0.
    t_eval : array_like, optional
        Output times; default ``n_points`` evenly spaced over ``t_span``.
    n_points : int
        Number of evenly spaced output times when ``t_eval`` is not given; default 1001.
    method : str
        A scipy ``solve_ivp`` method. Default DOP853 (8th order; the nominal
        constrained systems here are not stiff), which runs inside the compiled kernels
        (scipy's algorithm, ported: no Python call per step) when the plant and the
        constraint have symbolic forms; any other method, or a plant without one, runs
        in scipy's ``solve_ivp``.
    rtol, atol : float
        Default 1e-8 / 1e-12 as in W 7.3.
    nonideal : callable, optional
        ``C(q, qd, t) -> (..., n)``, the non-ideal work vector (W 4.2.6); runs on numpy.
    raise_on_failure : bool
        If the solver fails, raise :class:`SolverError` carrying the partial
        result (default); otherwise return it with ``success = False``.

    Returns
    -------
    ConstrainedResult
        The time history on the output times, with Qᶜ(t), the raw residuals and the
        solver statistics.

    Raises
    ------
    ParameterError
        Initial state of the wrong shape or not finite, ``t_span`` not increasing,
        tolerances not positive, an unknown ``method``, or a constraint on another
        number of coordinates.
    SolverError
        The integrator failed and ``raise_on_failure`` is True.
    """
    from .backend import constrained_loop

    q0, qd0, t0, t1 = check_common(plant, constraint, q0, qd0, t_span, rtol, atol, method)
    t_eval = output_times(t_eval, n_points, t0, t1)
    # one checked evaluation at the start: clear errors before the solver runs — through the compiled entry where
    # that compiles nothing (the same checks; a state it refuses goes to numpy, which says why), else on numpy
    constrained_motion(plant, constraint, q0, qd0, t0, nonideal=nonideal, compiled=motion_compiled())
    loop = constrained_loop(plant, constraint, nonideal)
    t, y, stats = loop.constrained(np.concatenate([q0, qd0]), t0, t1, t_eval, method, rtol, atol)
    return _constrained_result(plant, constraint, nonideal, t, y, stats, raise_on_failure, t0)



def _constrained_result(plant, constraint, nonideal, t, y, stats, raise_on_failure, t0) -> ConstrainedResult:
    """The :class:`ConstrainedResult` of the states ``y`` (T × 2n) at ``t`` (raises if the solver failed and
    ``raise_on_failure``); what follows from the states is derived at its first access (:func:`_derive`)."""
    n = plant.n
    q, qd = y[:, :n], y[:, n:]
    # the derivation reads its own copy of the states: a caller changing q in place before reading Qᶜ changes
    # nothing derived (a copy of 2 × T × n floats, microseconds)
    derive = functools.partial(_derive, plant, constraint, nonideal, t.copy(), q.copy(), qd.copy())
    result = ConstrainedResult(t=t, q=q, qd=qd, solver=stats, coordinates=tuple(plant.coordinates), derive=derive)
    say_limits(plant, t, q, qd, "the motion")
    if not stats.success and raise_on_failure:
        reached = float(t[-1]) if t.size else t0
        raise SolverError(f"{stats.method} failed at t = {reached:.6g}: {stats.message}"
                          + _conditioning(plant, constraint, q, qd, t), t_reached=reached, partial=result)
    return result


def _derive(plant, constraint, nonideal, t, q, qd) -> dict:
    """q̈, Qᶜ, the residuals and the contact forces at the output points (one pass: λ from the same solve as q̈ and
    Qᶜ, one pseudo-inverse per state, for the contact forces)."""
    empty = np.zeros((0, plant.n))
    motion = constrained_motion(plant, constraint, q, qd, t, nonideal=nonideal, check=False, compiled=False,
                                multipliers=constraint is not None) if t.size else None
    try:
        residual = constraint.residual(q, qd, t) if t.size and constraint is not None else None
    except NotImplementedError:
        residual = None
    contact = (contact_forces(plant, constraint, q, qd, t, multipliers=motion.multipliers)
               if t.size and nonideal is None else None)
    return {"qdd": motion.qdd if motion is not None else empty, "Qc": motion.Qc if motion is not None else empty,
            "residual": residual, "accel_residual": motion.residual if motion is not None else np.zeros(0),
            "contact": None if contact is None else contact[1],
            "contact_labels": () if contact is None else tuple(contact[0])}


def _conditioning(plant, constraint, q, qd, t) -> str:
    """After a failed solve: how close the constraint is to a rank boundary at the last output state — the
    smallest singular value of B = A L⁻ᵀ (rows normalized, as :mod:`robustrack.mechanics` judges rank) relative
    to the largest; empty where that cannot be said."""
    if constraint is None or not t.size:
        return ""
    try:
        A, _ = constraint.matrices(q[-1], qd[-1], t[-1])
        L = np.linalg.cholesky(plant.mass_matrix(q[-1], t[-1]))
        B = np.linalg.solve(L, np.asarray(A, dtype=float).T).T
        s = np.linalg.svd(B / np.maximum(np.linalg.norm(B, axis=-1, keepdims=True), np.finfo(float).tiny),
                          compute_uv=False)
    except (np.linalg.LinAlgError, ValueError, RobustrackError):
        return ""
    return (f" At t = {float(t[-1]):.6g} s the constraint's smallest singular value (of A M^-1/2, rows normalized) "
            f"is {float(s[-1] / s[0]):.2g} of its largest (a rank boundary: 0).")
