"""Integrating constrained systems (THEORY §1–2, W 2.2).

:func:`simulate_constrained` integrates ``M q̈ = Q + Qᶜ`` with Qᶜ from the
fundamental equation at every right-hand-side call, and returns the time
history with Qᶜ(t) and the raw constraint residuals (φ, ψ) evaluated on the
output grid in one batched call.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
from scipy.integrate import solve_ivp

from ._validate import finite, positive
from .errors import ParameterError, SolverError
from .mechanics import solve_constrained

__all__ = ["SolverStats", "ConstrainedResult", "simulate_constrained", "DEFAULT_RTOL", "DEFAULT_ATOL"]

#: Tolerances of the dissertation's runs (W 7.3).
DEFAULT_RTOL = 1e-8
DEFAULT_ATOL = 1e-12

_METHODS = ("RK45", "RK23", "DOP853", "Radau", "BDF", "LSODA")


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
    t_eval : array_like, optional
        Output times; default ``n_points`` evenly spaced over ``t_span``.
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
    """
    q0 = finite(q0, "q0").reshape(-1)
    qd0 = finite(qd0, "qd0").reshape(-1)
    n = plant.n
    if q0.shape != (n,) or qd0.shape != (n,):
        raise ParameterError(
            f"`q0` and `qd0` must have shape ({n},) for {type(plant).__name__}; got {q0.shape}, {qd0.shape}."
        )
    if constraint.n != n:
        raise ParameterError(f"The constraint acts on {constraint.n} coordinates but the plant has {n}.")
    t0, t1 = (float(x) for x in finite(t_span, "t_span"))
    if not t1 > t0:
        raise ParameterError(f"`t_span` must be increasing; got {t_span!r}.")
    positive(rtol, "rtol")
    positive(atol, "atol")
    _check_method(method)
    if t_eval is None:
        t_eval = np.linspace(t0, t1, int(n_points))
    t_eval = finite(t_eval, "t_eval")

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
