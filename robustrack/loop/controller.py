"""The designed controller as an object a robot's loop calls: τ(t, q, q̇) = Qᶜ(t) + M(q) u(t, e, ė, z).

:meth:`robustrack.tracking.TrackingProblem.controller` makes a :class:`Controller` from a problem: its nominal
run (computed once: the reference q(t), q̇(t) and, through the fundamental equation, Qᶜ(t), W 5.2.9–5.2.11), the
compensator (W ch. 7–8) and the nominal model it uses (Qᵘ = M u with the nominal M at the measured q, W 5.2.17).
Docs: docs/guide/robot.md.

- ``ctrl(t, q, qd)`` — the force for a measured full state (the compensator's own states, GD's ∫e, from the
  controller's, or given);
- ``ctrl.update(t, q)`` — a loop that measures positions only: the velocity estimated by the sensor model's
  estimator (backward or filtered difference; :class:`~robustrack.loop.Sensor`), its state kept between calls,
  GD's ∫e summed over the calls;
- ``ctrl.reset()``, ``ctrl.horizon``, ``ctrl.reference(t)``;
- ``ctrl.export(folder)`` — the controller as standalone C (:mod:`robustrack.loop.export`).

One boundary (docs/guide/robot.md, "One boundary"): every call checks the shapes of q, q̇ and z (z's length always:
the compiled path reads n_z entries) and their finiteness (``check=False`` skips the finiteness where the caller
has checked), and refuses with the exported C's status code (:data:`STATUS`, ``error.status``); a refused
``update`` leaves the estimator's state untouched, as ``rt_update`` does. A NaN force is never returned.

Outside the horizon it refuses (:class:`~robustrack.errors.HorizonError`) or, with ``beyond="hold"``, holds the
reference of the horizon's end (:attr:`Controller.holding` after such a call). With the problem's effort limits
(:func:`~robustrack.tracking.actuators.effort_limits`: a URDF robot's, by default) each τ is clipped to them as a
motor driver does (:attr:`Controller.saturated` after a clipped call). Where every part has a compiled form the call runs on the kernels
(:mod:`robustrack.compiled.controller`: the same arithmetic as the simulation's right-hand side); otherwise on
numpy (the reference, :func:`robustrack.tracking.rhs.nominal_motion` and the compensator's ``__call__``).
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from ..errors import ControllerError, HorizonError, ParameterError
from .sensor import estimate_velocity

__all__ = ["Controller", "MAX_TABLE", "STATUS"]

#: The status codes the controller's refusals carry (``error.status``), the exported C's return values
#: (``rt_torque``, ``rt_update``; docs/guide/robot.md, "One boundary"): 0 the force, 1 t outside the horizon (or NaN),
#: 2 a measurement (q, q̇, z) not finite or of the wrong shape, or a force that is not finite, 3 the nominal state
#: leaves a side of a branch the export followed (C only), 4 an update whose t is not after the previous one's.
STATUS = {"ok": 0, "horizon": 1, "not finite": 2, "branch": 3, "not after": 4}


def _kernel():
    """:func:`robustrack.compiled.controller.controller_torque` (imported on the first compiled call: numba)."""
    global _KERNEL
    if _KERNEL is None:
        from ..compiled.controller import controller_torque

        _KERNEL = controller_torque
    return _KERNEL


_KERNEL = None

_BEYOND = ("refuse", "hold")

#: The most sample instants a compiled controller tabulates (each row 2 + 3n floats: 160 MB at n = 6 would be
#: 10⁶ rows; this keeps it under ~40 MB).
MAX_TABLE = 250_000


class Controller:
    """τ(t, q, q̇) of a designed tracking loop (module docstring; docs/guide/robot.md).

    Parameters
    ----------
    problem : TrackingProblem
        The design: nominal plant, constraint, compensator; actuators only as one motor per joint (B = I), whose
        effort limits clip τ (:func:`~robustrack.tracking.actuators.effort_limits`; :attr:`saturated` after a call).
    run : NominalRun, optional
        Its nominal run (made here if not given).
    sensor : Sensor, optional
        The estimator :meth:`update` uses (default: the problem's, else a backward difference).
    beyond : {"refuse", "hold"}
        Outside the horizon: refuse, or hold the reference at the horizon's end (keyword-only).
    backend : {"auto", "numpy"}, optional
        Default: the problem's. "auto" runs on the compiled kernels where the parts have them.
    period : float, optional
        The loop's sample period h (keyword-only; default the problem's ``sample_period``, else none; 0: none).
        The compiled controller computes the reference and Qᶜ at the instants t0 + k h once, when it is made
        (at most :data:`MAX_TABLE` of them); a call at one of those t reads them — the same floats, without the
        fundamental equation's cost (docs/guide/robot.md). Any other t is computed when called.

    Examples
    --------
    >>> from robustrack.plants import NLinkPendulum
    >>> from robustrack.controllers import GSS
    >>> from robustrack.tracking import TrackingProblem
    >>> pb = TrackingProblem(NLinkPendulum(m=(1.0,), L=(1.0,)), None, GSS(), [0.5], [0.0], (0.0, 1.0),
    ...                      backend="numpy")
    >>> ctrl = pb.controller()
    >>> q, qd, Qc = ctrl.reference(0.0)
    >>> bool(np.allclose(ctrl(0.0, q, qd), Qc))
    True
    """

    def __init__(self, problem, run=None, *, sensor=None, beyond: str = "refuse", backend: str | None = None,
                 period: float | None = None):
        if not getattr(problem, "is_tracking_problem", False):
            raise ParameterError(f"`problem` must be a robustrack.tracking.TrackingProblem; got "
                                 f"{type(problem).__name__}.")
        if problem.actuators is not None and not problem.actuators.per_joint:
            raise ParameterError("Controller: actuators with an input matrix B other than one motor per joint (B = I) "
                                 "are not supported yet (the command is then W⁻¹Bᵀ of the force, saturated); design "
                                 "with B = I, or run the simulation.")
        if beyond not in _BEYOND:
            raise ParameterError(f"`beyond` must be one of {list(_BEYOND)}; got {beyond!r}.")
        backend = problem.backend if backend is None else backend
        if backend not in ("auto", "numpy"):
            raise ParameterError(f"`backend` must be 'auto' or 'numpy'; got {backend!r}.")
        self.problem = problem
        self.run = problem.nominal_run() if run is None else run
        _check_sensor(sensor)
        self.sensor = sensor if sensor is not None else problem.sensor
        if self.sensor is None:
            from .sensor import Sensor

            self.sensor = Sensor(velocity="difference")
        self.beyond = beyond
        self.n = problem.n
        from ..tracking.actuators import effort_limits

        #: The effort limits each τ is clipped to (:func:`~robustrack.tracking.actuators.effort_limits`; None: none).
        self.limits = effort_limits(problem)
        #: The last call's status: whether a joint's τ was clipped to its limit, whether t was held at the horizon;
        #: ``demand`` its τ before clipping (what a delayed loop holds the compensator's part of).
        self.saturated, self.holding, self.demand = False, False, None
        comp = problem.compensator
        self.nz = 0 if comp is None else comp.n_states(self.n)
        period = problem.sample_period if period is None else period
        if period is not None and (isinstance(period, bool) or not isinstance(period, numbers.Real)
                                   or not np.isfinite(period) or period < 0):
            raise ParameterError(f"`period` must be a number of seconds >= 0 (0: none); got {period!r}.")
        self.period = float(period) if period else None
        self._state = self._compiled() if backend == "auto" else None
        self._t0, self._t1 = (float(v) for v in problem.t_span)
        self.reset()

    def __repr__(self) -> str:
        comp = self.problem.compensator
        name = "none" if comp is None else getattr(comp, "name", type(comp).__name__)
        t0, t1 = self.horizon
        return (f"Controller(n={self.n}, compensator={name}, horizon=({t0:g}, {t1:g}) s, "
                f"{'compiled' if self._state is not None else 'numpy'})")

    # ------------------------------------------------------------------ #
    def _compiled(self):
        """The kernels' :class:`~robustrack.compiled.controller.ControllerState`, or None where a part has no
        compiled form (the numpy path then)."""
        from ..compiled.loop import compiled_loop, fallback_reason, kernel_law

        pb = self.problem
        if fallback_reason(pb.nominal, pb.nominal, pb.constraint) is not None:
            return None
        law = kernel_law(pb.compensator, self.n)
        if law is None:
            return None
        from ..compiled.controller import controller_state

        loop = compiled_loop(pb.nominal, pb.nominal, pb.constraint, jacobian=False)
        t0, t1 = pb.t_span
        grid = None
        if self.period:
            count = int(np.floor((t1 - t0) / self.period + 1e-9)) + 1
            grid = (float(t0), self.period, min(count, MAX_TABLE))
        return controller_state(self.run.solution.dense, loop.model, law, self.n, self.nz, grid)

    @property
    def compiled(self) -> bool:
        """Whether calls run on the compiled kernels."""
        return self._state is not None

    @property
    def horizon(self) -> tuple[float, float]:
        """(t0, t1) of the design: the reference exists there."""
        return self.problem.t_span

    def reset(self) -> None:
        """Forget the estimator's and the compensator's states (the next :meth:`update` is a first sample)."""
        comp = self.problem.compensator
        self.z = np.zeros(self.nz) if comp is None else np.array(comp.initial_state(self.n), dtype=float)
        self._seen = None  # (t, q̂, v̂) of the last update
        self._tau = np.empty(self.n)
        self._u = np.empty(self.n)

    def _time(self, t) -> float:
        t = float(t)
        t0, t1 = self._t0, self._t1
        self.holding = False
        if t0 <= t <= t1:
            return t
        if t != t:
            raise _status(HorizonError("Controller: t is NaN."), "horizon")
        if self.beyond == "hold":
            self.holding = True
            return t1 if t > t1 else t0
        raise _status(HorizonError(f"Controller: t = {t:.6g} s is outside the design horizon [{t0:g}, {t1:g}] s: "
                                   "the reference does not exist there (make the controller with beyond=\"hold\" "
                                   "to hold the reference of the horizon's end, or design a longer horizon)."),
                      "horizon")

    def _check_call(self, t, q, qd, z, check: bool = True):
        """The boundary of a call (docs/guide/robot.md, "One boundary"): (t, q, q̇, z) as floats and contiguous
        float arrays of the shapes (n,), (n,), (n_z,), or a refusal carrying its :data:`STATUS`.

        Shapes, and z's length, are checked always (the compiled path reads n_z entries of z: a shorter array would
        be read past its end); ``check=False`` skips only the finiteness of q, q̇ and z (the caller has checked).
        The order is the C's: t first (status 1), then the measurement (status 2).
        """
        t = _number(t, "t")
        if not self._t0 <= t <= self._t1:
            t = self._time(t)
        q, qd = self._vector(q, "q"), self._vector(qd, "qd")
        z = self.z if z is None else self._vector(z, "z", self.nz)
        if check and not _finite(q, qd, z):  # one test of the three; the first not finite named
            name, a = next((n, a) for n, a in (("q", q), ("qd", qd), ("z", z)) if not np.isfinite(a).all())
            raise _status(ControllerError(f"Controller: `{name}` is not finite ({a.tolist()}): a measurement the "
                                          "controller cannot use is refused (status 2, as the C's rt_torque)."),
                          "not finite")
        return t, q, qd, z

    def _vector(self, x, name: str, size: int | None = None) -> np.ndarray:
        """``x`` as a contiguous float array of shape (size,) (default n), or the refusal naming it (status 2)."""
        size = self.n if size is None else size
        try:
            a = np.ascontiguousarray(x, dtype=float)
        except (TypeError, ValueError):
            raise _status(ControllerError(f"Controller: `{name}` must be {size} numbers; got {x!r}."),
                          "not finite") from None
        if a.shape != (size,):
            what = "the compensator's states (n_z = rt_nz())" if name == "z" else "one per coordinate"
            raise _status(ControllerError(f"Controller: `{name}` must have shape ({size},), {what}; got shape "
                                          f"{a.shape}."), "not finite")
        return a

    def reference(self, t):
        """The nominal q, q̇ and Qᶜ at t (W 5.2.9–5.2.11): what the controller tracks and feeds forward.

        Parameters
        ----------
        t : float

        Returns
        -------
        q, qd, Qc : ndarray (n,)
        """
        from ..tracking.rhs import nominal_motion

        t = self._time(t)
        y = self.run.solution(t)
        n = self.n
        return y[:n], y[n:], np.asarray(nominal_motion(self.problem.nominal, self.problem.constraint, y[:n], y[n:],
                                                       t).Qc, dtype=float)

    def __call__(self, t, q, qd, z=None, *, check: bool = True) -> np.ndarray:
        """τ = Qᶜ(t) + M(q) u(t, e, ė, z) for the measured state (q, q̇) at t.

        Parameters
        ----------
        t : float
            Inside :attr:`horizon` (or held there, ``beyond="hold"``).
        q, qd : array_like (n,)
        z : array_like (n_z,), optional
            The compensator's states (GD's ∫e); default the controller's (:meth:`update` sums them).
        check : bool
            Keyword-only. False skips the finiteness of q, q̇, z where the caller has checked it (shapes and z's
            length are checked always; a force that is not finite is refused always).

        Returns
        -------
        ndarray (n,)
            The generalized force (a new array).

        Raises
        ------
        HorizonError
            t outside the horizon (``beyond="refuse"``), or NaN: ``error.status`` 1 (:data:`STATUS`).
        ControllerError
            q, q̇ or z of the wrong shape or not finite, or a force that is not finite: ``error.status`` 2, as the
            C's ``rt_torque`` returns.
        """
        self.holding = False
        t, q, qd, z = self._check_call(t, q, qd, z, check)
        if self._state is not None:
            tau = np.empty(self.n)
            ok = _kernel()(self._state, t, q, qd, z, tau, self._u)
        else:
            tau = self._numpy(t, q, qd, z)
            ok = True
        return self._saturate(_checked_force(tau, ok, t))

    def saturate(self, tau):
        """τ clipped to ± :attr:`limits` (a copy; τ itself without limits), as the motor driver does."""
        return tau if self.limits is None else self.problem.actuators.saturate(tau)

    def _saturate(self, tau):
        """τ clipped to ± the effort limits, as a motor driver does (:attr:`saturated` says whether it was); the
        simulation's ``B sat(τᶜ + τᵘ)`` with B = I (:meth:`robustrack.tracking.actuators.Actuators.saturate`)."""
        self.demand = tau
        if self.limits is None:
            self.saturated = False
            return tau
        clipped = self.problem.actuators.saturate(tau)
        self.saturated = bool(np.any(clipped != tau))
        return clipped

    def _numpy(self, t, q, qd, z):
        qn, qdn, Qc = self.reference(t)
        comp = self.problem.compensator
        if comp is None:
            self._u[:] = 0.0
            return Qc
        u = np.asarray(comp(t, q - qn, qd - qdn, z), dtype=float)
        self._u[:] = u
        return Qc + np.asarray(self.problem.nominal.mass_matrix(q, t), dtype=float) @ u

    def export(self, folder, *, beyond: str | None = None):
        """Write this controller as standalone C99 (a source, its header, a CMakeLists.txt and an example ``main.c``).

        Generated from the sources the Python paths run — the sympy expressions, the rigid-body algorithms of a
        URDF robot and its frame constraints, your functions of a plant from functions, the law functions — traced
        and printed by sympy's C printer (:mod:`robustrack.loop.export`; docs/guide/robot.md, "Export to C"). The C
        takes the full measured state (``rt_torque``): the sensor model's estimator is not exported.

        Parameters
        ----------
        folder : str or Path
            Made if missing; the four files are replaced there.
        beyond : {"refuse", "hold"}, optional
            Past the horizon the C returns 1, or holds the reference of its end with ``RT_HOLDING`` in its status
            (keyword-only); default this controller's. The C clips τ to :attr:`limits` (``RT_SATURATED``).

        Returns
        -------
        CExport
            The files written, n, m, n_z, the tabulated steps and the horizon.

        Raises
        ------
        ExportError
            A part without a form for code generation, your functions doing what the tracer cannot follow (a
            branch on the measured state, or one the nominal run crosses; math, scipy, np.linalg), a compensator or
            control function of your own.
        RankConditionError
            The constraint's A loses row rank along the nominal run.
        """
        from .export import export_controller

        return export_controller(self, folder, beyond=beyond)

    def update(self, t, q) -> np.ndarray:
        """τ for a loop that measures positions only: q̇ estimated by the sensor model's estimator.

        The first call after :meth:`reset` takes the reference's velocity; later calls difference against the
        previous one (backward difference, or filtered for ``velocity = "filtered"``; a sensor whose velocity is
        "exact" measures it, which a positions-only loop cannot: the backward difference then), at each call's own t
        (any rate; the filter's gain is set for the time since the last call).
        GD's ∫e is summed over the calls (rectangle rule on the measured e).

        Parameters
        ----------
        t : float
            Strictly after the previous call's.
        q : array_like (n,)
            The measured positions.

        Returns
        -------
        ndarray (n,)

        Raises
        ------
        HorizonError, ControllerError
            As :meth:`__call__`, and ``status`` 4 where t is not after the previous call's; a refused call leaves
            the estimator's and the compensator's states untouched (the C's ``rt_update``).
        """
        t = _number(t, "t")
        t_used = self._time(t)
        q = self._vector(q, "q")
        z = self.z
        if self._seen is None:
            v = self.run.solution(t_used)[self.n:]
        else:
            t_prev, q_prev, v_prev = self._seen
            dt = t - t_prev
            if not dt > 0:
                raise _status(ControllerError(f"Controller.update: t = {t:.6g} s is not after the previous call's "
                                              f"{t_prev:.6g} s (status 4, as the C's rt_update)."), "not after")
            v = estimate_velocity(q, q_prev, v_prev, dt, self.sensor.cutoff)
            if self.nz:
                y = self.run.solution(t_prev if t_prev <= self.horizon[1] else self.horizon[1])
                z = self.z + dt * (q_prev - y[:self.n])
        tau = self(t, q, v, z)  # a refusal here leaves the estimator's state as it was (the C's rt_update)
        self.z = z
        self._seen = (t, q.copy(), np.array(v, dtype=float))
        return tau


def _status(error, name: str):
    """``error`` with its :data:`STATUS` code attached (``error.status``)."""
    error.status = STATUS[name]
    return error


def _finite(*arrays) -> bool:
    """Whether every entry of the arrays is finite: one dot product each (a NaN or an infinity makes it so; a finite
    array whose squares overflow is checked entry by entry)."""
    total = 0.0
    for a in arrays:
        total += float(a.dot(a))
    return math.isfinite(total) or all(np.isfinite(a).all() for a in arrays)


def _number(t, name: str) -> float:
    """``t`` as a float, or a :class:`ControllerError` naming it (a string or None is not a time)."""
    if isinstance(t, float):
        return float(t)
    try:
        if isinstance(t, (str, bytes)) or np.ndim(t) != 0:
            raise TypeError
        return float(t)
    except (TypeError, ValueError):
        raise _status(ControllerError(f"Controller: `{name}` must be a number (seconds); got {t!r}."),
                      "horizon") from None


def _checked_force(tau, ok: bool, t: float) -> np.ndarray:
    """τ if the nominal motion is defined at t and τ is finite, else the refusal the C returns as status 2."""
    if not ok:
        raise _status(ControllerError(f"Controller: the nominal motion is not defined at t = {t:.6g} s (status 2)."),
                      "not finite")
    if not _finite(tau):
        raise _status(ControllerError(f"Controller: the force at t = {t:.6g} s is not finite ({tau.tolist()}) "
                                      "(status 2, as the C's rt_torque)."), "not finite")
    return tau


def _check_sensor(sensor) -> None:
    """A controller's ``sensor``: a :class:`~robustrack.loop.Sensor` or None (a name is not one)."""
    from .sensor import Sensor

    if sensor is not None and not isinstance(sensor, Sensor):
        raise ParameterError(f"Controller: `sensor` must be a robustrack.loop.Sensor (e.g. Sensor(velocity="
                             f"\"filtered\", velocity_cutoff=50.0)) or None; got {sensor!r}.")
