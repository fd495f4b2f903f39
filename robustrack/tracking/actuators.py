"""Actuators of a tracking loop: forces B(q, t) τ with |τ_a| ≤ τ_max,a (docs/theory/constraint-models.md; K, Beghin).

The fundamental equation (W 2.2.9) lets the nominal control force Qᶜ act in every direction
and the compensators add Qᵘ = M u in every direction (W 5.2.17). A machine has k actuators:
its generalized force is ``B τ`` — B the input matrix (n × k, column a the generalized force
of a unit command of actuator a), τ the commands — and each command is bounded.

Nominal force: a servo constraint (K, "Servo constraints", Beghin)
    The requirement ``A q̈ = b`` is kept by ``B τᶜ`` with τᶜ Gauss's choice (docs/theory/fundamental-equation.md):
    it minimizes ``(q̈ − a)ᵀ M (q̈ − a)`` over τ, where ``q̈ = a + M⁻¹Bτ`` and ``A q̈ = b``.
    With ``W = BᵀM⁻¹B``, ``C = A M⁻¹ B``, ``r = b − A a``::

        τᶜ = W⁻¹ Cᵀ (C W⁻¹ Cᵀ)⁺ r

    (:func:`robustrack.studies.constraint_models.servo_force`). For invertible B, ``B τᶜ`` is the
    ideal ``Qᶜ = Aᵀ(AM⁻¹Aᵀ)⁺ r`` (every force is available, so the minimum is the same);
    otherwise the nominal motion is the *servo* motion, which keeps ``A q̈ = b`` but differs
    from the ideal one. τᶜ exists only where C has the rank of A (Beghin's condition; margin
    ≥ ``rcond``, :func:`~robustrack.studies.constraint_models.realizability_margin`) and r is within
    reach: elsewhere the run stops with :class:`~robustrack.errors.RealizabilityError`
    naming the time, the state and why — never a least-squares force.

Compensator: Qᵘ = M u restricted to the range of B
    ``τᵘ = W⁻¹ Bᵀ u`` makes ``M⁻¹Bτᵘ`` the acceleration closest to u in the M norm
    (minimizing ``(M⁻¹Bτ − u)ᵀ M (M⁻¹Bτ − u)`` gives ``BᵀM⁻¹B τ = Bᵀu``); exact,
    ``B τᵘ = M u``, when B is invertible. M is the nominal mass matrix at q_c, as in
    ``Qᵘ = M(q_c) u``.

Saturation
    The command is ``τ = sat(τᶜ(t) + τᵘ)``, each component clipped to ±τ_max,a; the
    uncompensated copy gets ``B sat(τᶜ(t))``.

Invertible B (k = n)
    Every force is available: ``B τᶜ = Qᶜ`` and ``B τᵘ = M u`` exactly. Wherever no command
    saturates, the integrators compute these forces as without actuators (the same bits:
    a run with B = I and no limits is the unactuated run) and the commands as
    ``τᶜ = B⁻¹Qᶜ``; only saturated commands change the force.

What the compensators promise then
    Their bounds (W ch. 7–8) are proved for ``ë = δq + u − M̃_a u``, i.e. with the full
    ``Qᵘ = M u``. With rank B < n (underactuated) the applied force is not M u, so nothing
    is promised (the bounds are not judged); with saturation after the transient, they are
    not judged from the first saturated instant on (:func:`saturation`,
    :func:`promise_note`).
"""

from __future__ import annotations

import math

import numpy as np

from .._format import format_value
from .._validate import as_float_array, finite
from ..plants.servo import DEFAULT_REALIZABILITY_RCOND, ServoModel
from ..errors import ParameterError

__all__ = ["Actuators", "BoundActuators", "compensator_command", "saturation", "promise_note", "effort_limits",
           "effort_exceeded", "effort_note"]


class Actuators:
    """k actuators acting through an input matrix B (n × k) with limits |τ_a| ≤ τ_max,a.

    Parameters
    ----------
    B : array_like (n, k) or (n,), or callable
        The input matrix: constant (column a is the generalized force of a unit command
        of actuator a; independent columns), or ``B(q, t) -> (..., n, k)`` (then the
        tracking loop runs on numpy, with a notice).
    tau_max : float or array_like (k,)
        Actuator limits, > 0 (``inf``: unlimited); one number applies to every actuator.
        Default unlimited.
    inputs : int, optional
        k, required when B is a callable (keyword-only).
    rcond : float
        Smallest realizability margin accepted, in (0, 1) (keyword-only); default
        :data:`~robustrack.plants.servo.DEFAULT_REALIZABILITY_RCOND`.

    Examples
    --------
    Torques on the first two joints of a triple pendulum (angles from the vertical):
    joint torque τ2 acts on link 2 and, reversed, on link 1.

    >>> act = Actuators([[1.0, -1.0], [0.0, 1.0], [0.0, 0.0]], tau_max=200.0)
    >>> act.k, act.rank
    (2, 2)
    """

    def __init__(self, B, tau_max=math.inf, *, inputs=None, rcond=DEFAULT_REALIZABILITY_RCOND):
        if callable(B):
            if isinstance(inputs, bool) or not isinstance(inputs, (int, np.integer)) or inputs < 1:
                raise ParameterError(f"`inputs` (the number k of actuators) must be an integer >= 1 when `B` is a "
                                     f"callable; got {inputs!r}.")
            self._fn, self._B, self.k, self.n = B, None, int(inputs), None
        else:
            Bm = finite(B, "B")
            Bm = Bm[:, None] if Bm.ndim == 1 else Bm
            if Bm.ndim != 2 or 0 in Bm.shape:
                raise ParameterError(f"`B` (input matrix) must have shape (n, k) with n, k >= 1; got {Bm.shape}.")
            rank = int(np.linalg.matrix_rank(Bm))
            if rank < Bm.shape[1]:
                raise ParameterError(
                    f"the columns of `B` (input matrix, {Bm.shape[0]} × {Bm.shape[1]}) must be independent: its rank "
                    f"is {rank} < k = {Bm.shape[1]}, so two actuators push along the same direction and their "
                    f"commands are not determined. Drop or merge the dependent columns; got {Bm.tolist()}.")
            Bm = Bm.copy()
            Bm.setflags(write=False)
            self._fn, self._B, self.n, self.k = None, Bm, Bm.shape[0], Bm.shape[1]
        lim = as_float_array(tau_max, "tau_max")
        if lim.ndim == 0 or lim.size == 1:
            lim = np.full(self.k, float(lim.reshape(-1)[0]))
        if lim.shape != (self.k,) or np.iscomplexobj(lim) or not np.all(lim > 0):
            raise ParameterError(f"`tau_max` (actuator limits) must be one number or {self.k} numbers, each > 0 "
                                 f"(inf: unlimited); got {tau_max!r}.")
        lim.setflags(write=False)
        self.tau_max = lim
        if not (isinstance(rcond, (int, float)) and not isinstance(rcond, bool) and 0 < rcond < 1):
            raise ParameterError(f"`rcond` must be a number in (0, 1); got {rcond!r}.")
        self.rcond = float(rcond)

    @classmethod
    def joint_torques(cls, plant, tau_max=None) -> "Actuators":
        """One actuator per coordinate (B = I), limited by the plant's own ``effort_limit`` (a URDF's
        ``<limit effort>``; inf where it gives none) unless ``tau_max`` is given.

        Parameters
        ----------
        plant : Plant
            A :class:`~robustrack.plants.URDFPlant`, or any plant with ``effort_limit`` (n,).
        tau_max : float or array_like (n,), optional
            Limits instead of the plant's.

        Returns
        -------
        Actuators

        Raises
        ------
        ParameterError
            ``tau_max`` not given and the plant declares no ``effort_limit``.
        """
        if tau_max is None:
            tau_max = getattr(plant, "effort_limit", None)
            if tau_max is None:
                raise ParameterError(f"{type(plant).__name__} declares no effort limits (a URDFPlant does); give "
                                     "`tau_max`.")
        return cls(np.eye(plant.n), tau_max)

    @property
    def B(self):
        """The constant input matrix (n, k), or None when B is a callable."""
        return self._B

    @property
    def rank(self):
        """rank B (= k: independent columns) for a constant B; None for a callable."""
        return None if self._B is None else self.k

    @property
    def per_joint(self) -> bool:
        """Whether B = I: one motor per coordinate, so τ_max are the joints' effort limits (a robot's motor drivers)."""
        return self._B is not None and self._B.shape[0] == self.k and bool(np.array_equal(self._B, np.eye(self.k)))

    @property
    def limited(self) -> bool:
        """Whether any actuator has a finite limit."""
        return bool(np.any(np.isfinite(self.tau_max)))

    def input_matrix(self, q, t=0.0) -> np.ndarray:
        """The input matrix at coordinates q (..., n) and time(s) t.

        Parameters
        ----------
        q, t : array_like
            Where a callable B is evaluated (a constant B ignores them).

        Returns
        -------
        ndarray
            B(q, t), shape ``(..., n, k)``; ``(n, k)`` when constant.
        """
        if self._B is not None:
            return self._B
        Bq = np.asarray(self._fn(q, t))
        if Bq.shape[-1:] != (self.k,) or Bq.ndim < 2:
            raise ParameterError(f"`B(q, t)` must return shape (..., n, {self.k}); got {Bq.shape}.")
        return Bq

    def fully_actuated(self, n: int, q=None, t=0.0) -> bool:
        """Whether B has rank n: every generalized force is available (then Bτᵘ = M u exactly).

        Parameters
        ----------
        n : int
            Number of coordinates of the plant.
        q : array_like (n,), optional
            Where to evaluate a callable B (its rank there).
        t : float
            Time of that evaluation.

        Returns
        -------
        bool
        """
        if self._B is not None:
            return self.k == n
        Bq = self.input_matrix(np.zeros(n) if q is None else q, t)
        return int(np.linalg.matrix_rank(Bq)) == n

    def saturate(self, tau) -> np.ndarray:
        """Each command clipped to ±τ_max (complex-safe: decided on the real part).

        Parameters
        ----------
        tau : array_like (..., k)
            Commands.

        Returns
        -------
        ndarray (..., k)
        """
        tau = np.asarray(tau)
        lim = self.tau_max
        return np.where(np.real(tau) > lim, lim, np.where(np.real(tau) < -lim, -lim, tau))

    def packed(self, n: int):
        """The kernels' ``act`` array ``[B; τ_max]`` ((n + 1) × k); None for a callable B.

        Parameters
        ----------
        n : int
            Number of coordinates (B must have n rows).

        Returns
        -------
        ndarray or None
        """
        if self._B is None:
            return None
        return np.ascontiguousarray(np.vstack([self._B, self.tau_max[None, :]]))

    def check(self, n: int) -> "Actuators":
        """Refuse a B with another number of rows than the plant's coordinates.

        Parameters
        ----------
        n : int
            Number of coordinates of the plant.

        Returns
        -------
        Actuators
            ``self``.
        """
        if self.n is not None and self.n != n:
            raise ParameterError(f"`B` (input matrix) has {self.n} rows but the plant has {n} coordinates.")
        return self

    def to_dict(self) -> dict:
        """``B`` (rows, or "callable"), ``tau_max``, ``k``, ``rcond`` for a result's info."""
        return {"B": None if self._B is None else self._B.tolist(), "callable": self._B is None, "k": self.k,
                "tau_max": self.tau_max.tolist(), "rcond": self.rcond}

    def bind(self, plant, constraint) -> "BoundActuators":
        """These actuators on a plant and its constraint (what the integrators use).

        Parameters
        ----------
        plant : Plant
            The nominal plant (its M gives W and τᵘ).
        constraint : Constraint or None
            The requirement the actuators realize (None: τᶜ = 0).

        Returns
        -------
        BoundActuators
        """
        self.check(plant.n)
        return BoundActuators(self, plant, constraint)


def compensator_command(M, B, u) -> np.ndarray:
    """τᵘ = W⁻¹ Bᵀ u with W = BᵀM⁻¹B: the actuator command closest to Qᵘ = M u (module docstring).

    Parameters
    ----------
    M : array_like (..., n, n)
        The nominal mass matrix at q_c (positive definite).
    B : array_like (..., n, k)
        Input matrix (independent columns).
    u : array_like (..., n)
        The compensator's acceleration u.

    Returns
    -------
    ndarray (..., k)
        B τᵘ = M u when B is invertible.
    """
    B = np.asarray(B)
    Bt = np.swapaxes(B, -1, -2)
    W = Bt @ np.linalg.solve(M, np.broadcast_to(B, np.shape(M)[:-2] + B.shape[-2:]))
    return np.linalg.solve(W, (Bt @ np.asarray(u)[..., None]))[..., 0]


class BoundActuators:
    """:class:`Actuators` on a nominal plant and its constraint (:meth:`Actuators.bind`).

    Parameters
    ----------
    actuators : Actuators
    plant : Plant
        The nominal plant.
    constraint : Constraint or None
        The requirement realized by the actuators.
    """

    def __init__(self, actuators: Actuators, plant, constraint):
        self.actuators, self.plant, self.constraint = actuators, plant, constraint
        #: k = n: B is invertible (independent columns), every force is available
        self.square = actuators.k == plant.n
        self.servo = None if constraint is None else ServoModel(
            plant, constraint, actuators.input_matrix if actuators.B is None else actuators.B,
            rcond=actuators.rcond, directions_name="B")

    def nominal(self, q, qd, t):
        """(Bτᶜ, τᶜ, margin) of the nominal servo force at states (q, q̇, t); raises where not realizable.

        Parameters
        ----------
        q, qd : array_like (..., n)
            Nominal states.
        t : float or array_like
            Time(s).

        Returns
        -------
        force : ndarray (..., n)
        tau_c : ndarray (..., k)
        margin : ndarray (...)
            The realizability margin (1 without a constraint).
        """
        q = np.asarray(q, dtype=float)
        batch = np.broadcast_shapes(q.shape[:-1], np.shape(t))
        if self.servo is None:
            return np.zeros(batch + q.shape[-1:]), np.zeros(batch + (self.actuators.k,)), np.ones(batch)
        if self.square:  # B invertible: the ideal Qᶜ is available, τᶜ = B⁻¹Qᶜ
            from .rhs import nominal_motion

            Qc = nominal_motion(self.plant, self.constraint, q, qd, t).Qc
            B = np.broadcast_to(self.actuators.input_matrix(q, t), batch + (q.shape[-1],) * 2)
            return Qc, np.linalg.solve(B, Qc[..., None])[..., 0], np.ones(batch)
        res = self.servo.solve(q, qd, t)
        return res.force, res.lam, res.margin

    def nominal_acceleration(self, q, qd, t):
        """q̈ and B τᶜ of ``M q̈ = Q + B τᶜ`` (the nominal servo motion); raises where not realizable.

        Parameters
        ----------
        q, qd : array_like (..., n)
        t : float or array_like

        Returns
        -------
        qdd, force : ndarray (..., n)
        """
        force = self.nominal(q, qd, t)[0]
        Q = self.plant.given_force(q, qd, t) + force
        return np.linalg.solve(self.plant.mass_matrix(q, t), Q[..., None])[..., 0], force

    def exact(self, tau):
        """Where B τ is computed as without actuators: invertible B and no command saturated.

        Parameters
        ----------
        tau : array_like (..., k)
            Unclipped commands (decided on the real part).

        Returns
        -------
        ndarray of bool (..., 1)
            Broadcasts against forces (..., n).
        """
        within = np.all(np.abs(np.real(tau)) <= self.actuators.tau_max, axis=-1)[..., None]
        return within & self.square

    def command(self, qc, t, tau_c, u):
        """(force B sat(τᶜ + τᵘ), the unclipped command τᶜ + τᵘ) at controlled states q_c.

        Where :meth:`exact`, that force is ``Qᶜ + M(q_c) u``, which the integrators compute
        as without actuators (module docstring).

        Parameters
        ----------
        qc : array_like (..., n)
            Controlled actual coordinates (M(q_c) of the nominal plant gives τᵘ).
        t : float or array_like
        tau_c : array_like (..., k)
            The nominal command τᶜ(t).
        u : array_like (..., n)
            The compensator's u.

        Returns
        -------
        force : ndarray (..., n)
        tau_raw : ndarray (..., k)
        """
        B = self.actuators.input_matrix(qc, t)
        tau_raw = np.asarray(tau_c) + compensator_command(self.plant.mass_matrix(qc, t), B, u)
        return (np.asarray(B) @ self.actuators.saturate(tau_raw)[..., None])[..., 0], tau_raw

    def uncompensated(self, qa, t, Qc, tau_c):
        """B sat(τᶜ(t)): the force on the uncompensated copy (Qᶜ itself for an invertible B, unsaturated).

        Parameters
        ----------
        qa : array_like (..., n)
        t : float or array_like
        Qc : array_like (..., n)
            The nominal force Qᶜ(t).
        tau_c : array_like (..., k)

        Returns
        -------
        ndarray (..., n)
        """
        B = self.actuators.input_matrix(qa, t)
        force = (np.asarray(B) @ self.actuators.saturate(tau_c)[..., None])[..., 0]
        return np.where(self.exact(tau_c), Qc, force)


def saturation(t, tau_raw, tau_max, transient: float) -> dict:
    """Saturation along a run: time-weighted fraction, first instant, first instant after the transient.

    An instant is saturated when any actuator's unclipped command exceeds its limit. The
    fraction is the trapezoid-rule time average of that indicator over the samples (pass
    every accepted step: intervals between samples count by their ends).

    Parameters
    ----------
    t : array_like (T,)
        Increasing times.
    tau_raw : array_like (T, k)
        Unclipped commands τᶜ + τᵘ.
    tau_max : array_like (k,)
        Limits.
    transient : float
        The time (on the clock of t) from which bounds are checked.

    Returns
    -------
    dict
        ``saturation_fraction`` (in [0, 1]), ``first_saturation_time`` and
        ``first_saturation_after_transient`` (None when never).
    """
    t = np.asarray(t, dtype=float)
    sat = np.any(np.abs(np.asarray(tau_raw)) > np.asarray(tau_max), axis=-1).astype(float)
    duration = float(t[-1] - t[0]) if t.size > 1 else 0.0
    frac = float(np.sum(0.5 * (sat[1:] + sat[:-1]) * np.diff(t)) / duration) if duration > 0 else float(sat.max(
        initial=0.0))
    hit = np.nonzero(sat > 0)[0]
    late = np.nonzero((sat > 0) & (t >= transient))[0]
    return {"saturation_fraction": frac,
            "first_saturation_time": float(t[hit[0]]) if hit.size else None,
            "first_saturation_after_transient": float(t[late[0]]) if late.size else None}


def promise_note(fully_actuated: bool, n: int, k: int, sat: dict, transient: float, e_per_coordinate=None,
                 units=None):
    """Whether the compensator's bound applies to an actuated run, and why not.

    Parameters
    ----------
    fully_actuated : bool
        rank B = n.
    n, k : int
        Coordinates and actuators.
    sat : dict
        :func:`saturation`'s result.
    transient : float
        Start of the bound check (clock time).
    e_per_coordinate : list of float, optional
        Measured max |e| per coordinate, quoted for an underactuated run (which
        coordinates were followed and which not).
    units : sequence of str, optional
        The unit of each coordinate (``CoordinateUnits.per_coordinate("q")``), written
        after each measured value.

    Returns
    -------
    applies : bool
        False: the bound is not judged (``bounds_held`` must be None).
    note : str or None
        Why not (or that saturation stayed within the transient).
    """
    first = sat["first_saturation_after_transient"]
    saturated = (f"the actuators saturate from t = {first:.6g} s (after the transient at t = {transient:.6g} s; "
                 f"saturated {100 * sat['saturation_fraction']:.3g} % of the time)") if first is not None else None
    if not fully_actuated:
        measured = "" if e_per_coordinate is None else (
            "; measured max |e| per coordinate " + ", ".join(
                format_value(v, u, digits=3) for v, u in zip(e_per_coordinate, units or [None] * len(e_per_coordinate))))
        return False, (f"not promised: underactuated (B is {n} × {k}, rank {k} < n = {n}), so Qᵘ = M u is not "
                       "available and the compensator's bound, proved for the full Qᵘ = M u (W 5.2.17), does not "
                       f"apply{'; ' + saturated if saturated else ''}{measured}")
    if saturated:
        return False, (f"not judged from t = {first:.6g} s on: {saturated}, and the compensator's bound assumes an "
                       "unsaturated Qᵘ = M u")
    if sat["first_saturation_time"] is not None:
        return True, (f"actuators saturated during the transient only (from t = {sat['first_saturation_time']:.6g} "
                      f"s; before t = {transient:.6g} s)")
    return True, None


def effort_limits(problem):
    """The per-joint effort limits the runs of a tracking problem saturate at (docs/guide/robot.md, "Effort limits").

    A problem whose actuators are one motor per joint (B = I, :attr:`Actuators.per_joint`) with any finite limit —
    a ``urdf`` scenario's default, the URDF's ``<limit effort>``, or an ``[actuators]`` table with B = I — has them:
    every run of it (robustrack's integration, its sampled loop, :class:`~robustrack.loop.Controller`, the C export,
    the MuJoCo path) clips each joint's τ = Qᶜ + Qᵘ to ±limit, as a motor driver does.

    Parameters
    ----------
    problem : TrackingProblem

    Returns
    -------
    ndarray (n,) or None
        The limits (inf where a joint has none; a copy); None without actuators, with a general B (its limits are
        per actuator, not per joint) or with no finite limit.
    """
    act = getattr(problem, "actuators", None)
    if act is None or not act.per_joint or not act.limited:
        return None
    return np.array(act.tau_max, dtype=float)


def effort_exceeded(t, tau_raw, tau_max, names=None) -> list:
    """The actuators whose demanded command exceeds its limit along a run: which, when first, the peak and when.

    Parameters
    ----------
    t : array_like (T,)
    tau_raw : array_like (T, k)
        The unclipped commands τᶜ + τᵘ (what the law asked for; the motor gives the clipped one).
    tau_max : array_like (k,)
    names : sequence of str, optional
        The actuators' names (a robot's joints); default ``"actuator a"``.

    Returns
    -------
    list of dict
        One per actuator over its limit, in order: ``joint``, ``limit``, ``peak`` (max |τ_raw|), ``t_peak``,
        ``first`` (the first time over), ``fraction`` (share of the samples over).
    """
    t = np.asarray(t, dtype=float)
    tau = np.abs(np.real(np.asarray(tau_raw, dtype=float)))
    lim = np.broadcast_to(np.asarray(tau_max, dtype=float), tau.shape[-1:])
    over = tau > lim
    rows = []
    for a in np.flatnonzero(over.any(axis=0)) if tau.size else ():
        k = int(np.argmax(tau[:, a]))
        rows.append({"joint": names[a] if names is not None else f"actuator {a + 1}", "limit": float(lim[a]),
                     "peak": float(tau[k, a]), "t_peak": float(t[k]), "first": float(t[np.argmax(over[:, a])]),
                     "fraction": float(np.mean(over[:, a]))})
    return rows


def effort_note(rows, unit=None) -> str:
    """One sentence of :func:`effort_exceeded`'s rows: each joint, its peak demand against its limit, and when.

    Parameters
    ----------
    rows : list of dict
    unit : str, optional
        The generalized force's unit (N·m).

    Returns
    -------
    str
    """
    return "; ".join(f"{r['joint']} asked {format_value(r['peak'], unit, digits=4)} at t = {r['t_peak']:.4g} s "
                     f"(limit {format_value(r['limit'], unit, digits=4)}, first over at t = {r['first']:.4g} s, "
                     f"{100 * r['fraction']:.3g} % of the samples)" for r in rows)
