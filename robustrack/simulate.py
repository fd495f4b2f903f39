"""Integrating constrained and controlled systems (THEORY §1–2, §5; W 2.2, 5.2).

:func:`simulate_constrained` integrates ``M q̈ = Q + Qᶜ`` with Qᶜ from the
fundamental equation at every right-hand-side call, and returns the time
history with Qᶜ(t) and the raw constraint residuals (φ, ψ) evaluated on the
output grid in one batched call.

:func:`simulate_tracking` integrates, in ONE ODE state, the controlled nominal
system, the controlled actual system ``M_a q̈_c = Q_a + Qᶜ(t) + M u`` (W 5.2.17;
Qᶜ(t) from the nominal state, ``Qᵘ = M(q_c) u`` with the nominal mass matrix),
the compensator's own states (∫e for GD) and, optionally, the actual system
under Qᶜ(t) alone. Sampled control (zero-order hold of period h) integrates
each sampling interval separately with u held fixed, the way a digital
controller runs; the continuous states (∫e included) stay on the solver's clock.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np
from scipy.integrate import solve_ivp

from ._validate import finite, positive
from .errors import ParameterError, SolverError
from .loop import batched_jacobian, tracking_rhs
from .mechanics import solve_constrained

__all__ = ["SolverStats", "ConstrainedResult", "simulate_constrained", "simulate_tracking",
           "DEFAULT_RTOL", "DEFAULT_ATOL", "DEFAULT_TRACKING_METHOD"]

#: Tolerances of the dissertation's runs (W 7.3).
DEFAULT_RTOL = 1e-8
DEFAULT_ATOL = 1e-12

_METHODS = ("RK45", "RK23", "DOP853", "Radau", "BDF", "LSODA")
_IMPLICIT = ("Radau", "BDF", "LSODA")

#: Default integrator for the compensated (stiff) loop; see benchmarks/bench_solvers.py.
DEFAULT_TRACKING_METHOD = "LSODA"


@dataclass(frozen=True)
class SolverStats:
    """What the integrator did: settings, effort and outcome."""

    method: str
    rtol: float
    atol: float
    nfev: int
    njev: int
    nlu: int
    success: bool
    message: str
    wall_s: float

    def to_dict(self) -> dict:
        return dict(self.__dict__)


@dataclass(frozen=True)
class ConstrainedResult:
    """Time history of a constrained system ``M q̈ = Q + Qᶜ``.

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
    """

    t: np.ndarray
    q: np.ndarray
    qd: np.ndarray
    qdd: np.ndarray
    Qc: np.ndarray
    residual: np.ndarray | None
    accel_residual: np.ndarray
    solver: SolverStats
    coordinates: tuple = field(default=())

    @property
    def success(self) -> bool:
        return self.solver.success

    @property
    def max_constraint_residual(self) -> float:
        """max over t and rows of |φ| or |ψ| (NaN if the constraint gives none)."""
        if self.residual is None or self.residual.size == 0:
            return float("nan")
        return float(np.max(np.abs(self.residual)))


def _check_method(method: str) -> str:
    if method not in _METHODS:
        raise ParameterError(f"`method` must be one of {list(_METHODS)}; got {method!r}.")
    return method


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
    constraint : Constraint
        Gives ``matrices(q, qd, t) -> (A, b)`` and, optionally, raw residuals.
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
        constrained systems here are not stiff).
    rtol, atol : float
        Default 1e-8 / 1e-12 as in W 7.3.
    nonideal : callable, optional
        ``C(q, qd, t) -> (..., n)``, the non-ideal work vector (W 4.2.6).
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
    q0, qd0, t0, t1 = _check_common(plant, constraint, q0, qd0, t_span, rtol, atol, method)
    n = plant.n
    t_eval = _output_times(t_eval, n_points, t0, t1)

    def accel(q, qd, t):
        M = plant.mass_matrix(q, t)
        Q = plant.given_force(q, qd, t)
        A, b = constraint.matrices(q, qd, t)
        C = None if nonideal is None else nonideal(q, qd, t)
        return solve_constrained(M, Q, A, b, C, check=False), M, Q

    def rhs(t, y):
        q, qd = y[:n], y[n:]
        return np.concatenate([qd, accel(q, qd, t)[0].qdd])

    y0 = np.concatenate([q0, qd0])
    # one checked evaluation at the start: clear errors before the solver runs
    M0 = plant.mass_matrix(q0, t0)
    A0, b0 = constraint.matrices(q0, qd0, t0)
    solve_constrained(M0, plant.given_force(q0, qd0, t0), A0, b0,
                      None if nonideal is None else nonideal(q0, qd0, t0))

    start = time.perf_counter()
    sol = solve_ivp(rhs, (t0, t1), y0, method=method, t_eval=t_eval, rtol=rtol, atol=atol)
    wall = time.perf_counter() - start
    stats = SolverStats(method, float(rtol), float(atol), int(sol.nfev), int(sol.njev), int(sol.nlu),
                        bool(sol.success), str(sol.message), wall)
    t = sol.t
    q, qd = sol.y[:n].T, sol.y[n:].T
    motion, _, _ = accel(q, qd, t) if t.size else (None, None, None)
    try:
        residual = constraint.residual(q, qd, t) if t.size else None
    except NotImplementedError:
        residual = None
    empty = np.zeros((0, n))
    result = ConstrainedResult(
        t=t, q=q, qd=qd,
        qdd=motion.qdd if motion is not None else empty,
        Qc=motion.Qc if motion is not None else empty,
        residual=residual,
        accel_residual=motion.residual if motion is not None else np.zeros(0),
        solver=stats,
        coordinates=tuple(plant.coordinates),
    )
    if not sol.success and raise_on_failure:
        reached = float(t[-1]) if t.size else t0
        raise SolverError(f"{method} failed at t = {reached:.6g}: {sol.message}", t_reached=reached, partial=result)
    return result


def _output_times(t_eval, n_points, t0: float, t1: float) -> np.ndarray:
    """The output grid: ``t_eval`` checked, or ``n_points`` evenly spaced times over [t0, t1].

    At least two increasing times inside ``t_span`` (the metrics are taken on this grid:
    one point would report the initial state as the whole run).
    """
    if t_eval is None:
        if isinstance(n_points, bool) or not isinstance(n_points, (int, np.integer)) or n_points < 2:
            raise ParameterError(f"`n_points` (output times) must be an integer >= 2; got {n_points!r}.")
        return np.linspace(t0, t1, int(n_points))
    t_eval = finite(t_eval, "t_eval")
    if t_eval.ndim != 1 or t_eval.size < 2:
        raise ParameterError(f"`t_eval` must be a 1-D array of at least 2 times; got shape {t_eval.shape}.")
    if np.any(np.diff(t_eval) <= 0):
        raise ParameterError("`t_eval` must be strictly increasing.")
    if t_eval[0] < t0 or t_eval[-1] > t1:
        raise ParameterError(
            f"`t_eval` must lie within `t_span` = ({t0:g}, {t1:g}); got [{t_eval[0]:g}, {t_eval[-1]:g}]."
        )
    return t_eval


def _check_common(plant, constraint, q0, qd0, t_span, rtol, atol, method):
    """Validate what every simulation takes; return (q0, qd0, t0, t1)."""
    q0 = finite(q0, "q0").reshape(-1)
    qd0 = finite(qd0, "qd0").reshape(-1)
    n = plant.n
    if q0.shape != (n,) or qd0.shape != (n,):
        raise ParameterError(
            f"`q0` and `qd0` must have shape ({n},) for {type(plant).__name__}; got {q0.shape}, {qd0.shape}."
        )
    if constraint is not None and constraint.n != n:
        raise ParameterError(f"The constraint acts on {constraint.n} coordinates but the plant has {n}.")
    t0, t1 = (float(x) for x in finite(t_span, "t_span"))
    if not t1 > t0:
        raise ParameterError(f"`t_span` must be increasing; got {t_span!r}.")
    positive(rtol, "rtol")
    positive(atol, "atol")
    _check_method(method)
    return q0, qd0, t0, t1


def simulate_tracking(
    nominal,
    actual,
    constraint,
    compensator,
    q0,
    qd0,
    t_span,
    *,
    qc0=None,
    qcd0=None,
    uncompensated: bool = True,
    sample_period: float | None = None,
    gamma: float | None = None,
    transient: float | None = None,
    t_eval=None,
    n_points: int = 1001,
    method: str = DEFAULT_TRACKING_METHOD,
    rtol: float = DEFAULT_RTOL,
    atol: float = DEFAULT_ATOL,
    raise_on_failure: bool = True,
    progress=None,
    jacobian: str = "batched",
):
    """Integrate nominal, controlled actual and uncompensated actual systems together.

    Parameters
    ----------
    nominal, actual : Plant
        The nominal model (M, Q) and the actual plant (M + δM, Q + δQ), e.g.
        ``nominal.replace(m=...)`` wrapped with a force perturbation.
    constraint : Constraint or None
        The stacked physical constraints and control requirements (W 5.2.8). ``None``
        gives the unconstrained variant (W Remark 7.2, eq. 7.3.7): no Qᶜ, the actual
        system tracks the unconstrained nominal one.
    compensator : Compensator or None
        Gives ``u(t, e, ė, z)``; ``None`` applies no compensation (u = 0).
    q0, qd0 : array_like (n,)
        Initial state of the nominal system.
    t_span : (float, float)
        Start and end time ``(t0, t1)``, t1 > t0.
    qc0, qcd0 : array_like (n,), optional
        Initial state of the actual systems (default: the nominal one, e(0) = 0).
    uncompensated : bool
        Also integrate the actual system under Qᶜ(t) alone (for comparison).
    sample_period : float, optional
        Zero-order-hold period h of the control; ``None`` for continuous control.
        Required for discontinuous control functions (sign), which stall an
        adaptive integrator.
    gamma : float, optional
        Γ used for the promised bounds (default: the compensator's design value).
    transient : float, optional
        Start of the bound check (see :mod:`robustrack.tracking`), measured from t0;
        default :func:`robustrack.tracking.default_transient` (0 when e(0) = ė(0) = 0,
        else 10 % of the horizon).
    t_eval : array_like, optional
        Output times; default ``n_points`` evenly spaced over ``t_span``.
    n_points : int
        Number of evenly spaced output times when ``t_eval`` is not given; default 1001.
    method, rtol, atol :
        Integrator and tolerances (default LSODA, 1e-8, 1e-12).
    raise_on_failure : bool
        If the solver fails, raise :class:`SolverError` carrying the partial
        result (default); otherwise return it with ``success = False``.
    progress : callable, optional
        ``progress(t, t_end)``, called about once per second of wall time while the
        solver runs, and once at the end.
    jacobian : {"batched", "solver"}
        For the implicit methods (LSODA, BDF, Radau): "batched" gives the solver a
        forward-difference Jacobian computed in one batched right-hand-side call
        (:func:`robustrack.loop.batched_jacobian`); "solver" lets it difference the
        right-hand side one column at a time. See benchmarks/bench_solvers.py.

    Returns
    -------
    TrackingResult
        The three systems on the output times, Qᶜ, Qᵘ, residuals, and in ``info`` the
        promised bounds, metrics (:func:`robustrack.tracking.tracking_metrics`) and
        solver statistics.

    Raises
    ------
    ParameterError
        Invalid initial states, ``t_span``, tolerances, ``method``, ``sample_period`` or
        ``jacobian``; mismatched numbers of coordinates; a discontinuous compensator
        without ``sample_period``.
    SolverError
        The integrator failed and ``raise_on_failure`` is True.
    """
    from .tracking import TrackingResult, default_transient, tracking_metrics, uncertainty_along_run

    q0, qd0, t0, t1 = _check_common(nominal, constraint, q0, qd0, t_span, rtol, atol, method)
    n = nominal.n
    qc0 = q0.copy() if qc0 is None else finite(qc0, "qc0").reshape(n)
    qcd0 = qd0.copy() if qcd0 is None else finite(qcd0, "qcd0").reshape(n)
    if compensator is not None and compensator.discontinuous and sample_period is None:
        raise ParameterError(
            f"the compensator {getattr(compensator, 'name', type(compensator).__name__)!r} uses a "
            "discontinuous control function (sign), which stalls an adaptive integrator; pass "
            "`sample_period` (zero-order-hold control, e.g. 1e-3 s)."
        )
    if sample_period is not None:
        positive(sample_period, "sample_period")
    if jacobian not in ("batched", "solver"):
        raise ParameterError(f"`jacobian` must be 'batched' or 'solver'; got {jacobian!r}.")
    z0 = compensator.initial_state(n) if compensator is not None else np.zeros(0)
    t_eval = _output_times(t_eval, n_points, t0, t1)

    rhs, layout = tracking_rhs(nominal, actual, constraint, compensator, uncompensated=uncompensated)
    sl = layout.slices()

    def control(t, y):
        return compensator(t, y[sl["qc"]] - y[sl["q"]], y[sl["qcd"]] - y[sl["qd"]], y[sl["z"]])

    parts = [q0, qd0, qc0, qcd0, z0] + ([qc0, qcd0] if uncompensated else [])
    y0 = np.concatenate(parts)
    rhs(t0, y0)  # fail early with a clear error, before the solver starts
    jac = {"jac": batched_jacobian(rhs)} if jacobian == "batched" and method in _IMPLICIT else {}
    if progress is not None:
        rhs = _reporting(rhs, progress, t1)

    start = time.perf_counter()
    u_times = u_held = None
    if sample_period is None or compensator is None:
        sol = solve_ivp(rhs, (t0, t1), y0, method=method, t_eval=t_eval, rtol=rtol, atol=atol, **jac)
        T, Y = sol.t, sol.y.T
        nfev, njev, nlu, ok, msg = sol.nfev, sol.njev, sol.nlu, sol.success, sol.message
    else:
        T, Y, u_times, u_held, (nfev, njev, nlu, ok, msg) = _integrate_sampled(
            rhs, control, y0, t0, t1, t_eval, float(sample_period), method, rtol, atol, jac)
    wall = time.perf_counter() - start
    stats = SolverStats(method, float(rtol), float(atol), int(nfev), int(njev), int(nlu), bool(ok), str(msg), wall)
    if progress is not None:
        progress(float(T[-1]) if T.size else t0, t1)

    q, qd, qc, qcd, z = (Y[:, sl[k]] for k in ("q", "qd", "qc", "qcd", "z"))
    qa, qad = (Y[:, sl["qa"]], Y[:, sl["qad"]]) if uncompensated else (None, None)
    Qc = _constraint_force_along(nominal, constraint, q, qd, T)
    if compensator is None or T.size == 0:
        Qu = np.zeros_like(Qc)
    elif u_times is None:
        u = compensator(T[:, None], qc - q, qcd - qd, z)
        Qu = (nominal.mass_matrix(qc, T) @ u[..., None])[..., 0]
    else:
        k = np.clip(np.searchsorted(u_times, T, side="right") - 1, 0, len(u_times) - 1)
        Qu = (nominal.mass_matrix(qc, T) @ u_held[k][..., None])[..., 0]
    res_nom = res_con = None
    if constraint is not None and T.size:
        try:
            res_nom = constraint.residual(q, qd, T)
            res_con = constraint.residual(qc, qcd, T)
        except NotImplementedError:
            pass
    bounds = compensator.bounds(gamma) if compensator is not None else None
    if transient is None:
        transient = default_transient(qc0 - q0, qcd0 - qd0, t1 - t0)
    metrics = tracking_metrics(
        T, qc - q, qcd - qd, Qu, Qc, bounds, transient=t0 + float(transient),
        residual_nominal=res_nom, residual_controlled=res_con,
        qa_error=(qa - q) if uncompensated else None,
        Qu_held=None if u_held is None else (nominal.mass_matrix(
            qc[np.clip(np.searchsorted(T, u_times), 0, len(T) - 1)], u_times) @ u_held[..., None])[..., 0],
    ) if T.size else {}
    if T.size:
        seen = uncertainty_along_run(nominal, actual, q, qd, qc, qcd, Qc, T)
        metrics["max_norm_dq"] = float(seen["dq_norm"].max())
        metrics["max_norm_Mtilde"] = float(seen["Mtilde_norm"].max())
        if bounds is not None and bounds.gamma is not None and hasattr(compensator, "alpha0"):
            # the bounds assume ‖δq‖∞ ≤ Γ and ‖M̃_a‖∞ ≤ 1 − α0/σ (W 7.2.9, 8.2.18, 8.3.8)
            metrics["assumptions_held"] = bool(
                metrics["max_norm_dq"] <= bounds.gamma
                and metrics["max_norm_Mtilde"] <= 1.0 - compensator.alpha0 / compensator.sigma)
    bounds_note = None
    if compensator is not None and compensator.discontinuous and sample_period is not None and metrics:
        # a sign law's bounds are continuous-time (s → 0); a zero-order hold of period h keeps the
        # error in a band of order h·|ṡ| instead, which the chattering metric shows.
        metrics["bounds_held"] = None
        bounds_note = ("continuous-time bound of a discontinuous law; not applicable under sampled "
                       f"control (h = {sample_period:g} s)")
    info = {
        "bounds_note": bounds_note,
        "compensator": None if compensator is None else {
            "name": getattr(compensator, "name", type(compensator).__name__),
            "params": {k: (v.name if hasattr(v, "g") else v) for k, v in compensator.params.items()},
            "control_function": None if not hasattr(compensator, "f") else {
                "name": compensator.f.name, "eps": compensator.f.eps},
        },
        "bounds": None if bounds is None else bounds.to_dict(),
        "metrics": metrics,
        "solver": stats.to_dict(),
        "sample_period": sample_period,
        "constrained": constraint is not None,
        "coordinates": list(nominal.coordinates),
    }
    result = TrackingResult(t=T, q=q, qd=qd, qc=qc, qcd=qcd, Qc=Qc, Qu=Qu, z=z, qa=qa, qad=qad,
                            residual_nominal=res_nom, residual_controlled=res_con,
                            u_times=u_times, u_held=u_held, info=info)
    if not ok and raise_on_failure:
        reached = float(T[-1]) if T.size else t0
        raise SolverError(f"{method} failed at t = {reached:.6g}: {msg}", t_reached=reached, partial=result)
    return result


def _reporting(rhs, progress, t_end, every_s: float = 1.0):
    """Wrap ``rhs`` so that ``progress(t, t_end)`` is called at most every ``every_s`` of wall time."""
    last = [time.perf_counter()]

    def wrapped(t, y, *args):
        now = time.perf_counter()
        if now - last[0] >= every_s:
            last[0] = now
            progress(float(t), t_end)
        return rhs(t, y, *args)

    return wrapped


def _constraint_force_along(plant, constraint, q, qd, t):
    """Qᶜ on an output grid, in one batched call (zeros without a constraint)."""
    if constraint is None or t.size == 0:
        return np.zeros(q.shape)
    A, b = constraint.matrices(q, qd, t)
    return solve_constrained(plant.mass_matrix(q, t), plant.given_force(q, qd, t), A, b, check=False).Qc


def _integrate_sampled(rhs, control, y0, t0, t1, t_eval, h, method, rtol, atol, jac):
    """Zero-order hold: u computed at t_k = t0 + k h from the state, held on [t_k, t_k+1)."""
    n_int = int(math.ceil((t1 - t0) / h - 1e-9))
    edges = np.minimum(t0 + h * np.arange(n_int + 1), t1)
    edges[-1] = t1
    ts, ys, u_times, u_held = [], [], [], []
    y = y0
    nfev = njev = nlu = 0
    ok, msg = True, "The solver successfully reached the end of the integration interval."
    j = 0  # next output index
    for k in range(n_int):
        a, b = edges[k], edges[k + 1]
        u = control(a, y)
        u_times.append(a)
        u_held.append(u)
        last = k == n_int - 1
        stop = np.searchsorted(t_eval, b, side="right" if last else "left")
        te = t_eval[j:stop]
        extra = not (te.size and te[-1] == b)  # also ask for b: the next interval starts there
        sol = solve_ivp(rhs, (a, b), y, method=method, t_eval=np.append(te, b) if extra else te,
                        rtol=rtol, atol=atol, args=(u,), **jac)
        nfev, njev, nlu = nfev + sol.nfev, njev + sol.njev, nlu + sol.nlu
        keep = sol.t.size - 1 if extra and sol.success else sol.t.size
        if keep > 0:
            ts.append(sol.t[:keep])
            ys.append(sol.y[:, :keep].T)
        j = stop
        if not sol.success:
            ok, msg = False, sol.message
            break
        y = sol.y[:, -1]
    T = np.concatenate(ts) if ts else np.zeros(0)
    Y = np.concatenate(ys) if ys else np.zeros((0, y0.size))
    return T, Y, np.array(u_times), np.array(u_held), (nfev, njev, nlu, ok, msg)
