"""Integration: the nominal system, the controlled actual system, the uncompensated copy.

Each system has its own solve and its own step control (W 5.2; docs/theory/nominal-actual.md):

1. :func:`integrate_nominal` — ``M q̈ = Q + Qᶜ`` with DOP853 (the constrained nominal
   systems are not stiff) and its dense output. Nothing of a compensator enters, so
   the nominal trajectory and residual are the same, to the last bit, whatever
   compensator runs afterwards.
2. :func:`integrate_controlled` — ``M_a q̈_c = Q_a + Qᶜ(t) + M(q_c) u``, driven by the
   nominal dense output: continuous control with BDF (the compensated loop is stiff:
   GSS's gain makes ∂u/∂ė ~ 1e4; scipy's BDF algorithm ported into the compiled kernels,
   with a looser Newton tolerance and their exact Jacobian, so the whole horizon is one
   compiled call; other scipy
   methods on request), or sampled control (zero-order hold of period h: u computed at
   t_k = t0 + k h and held) with Dormand–Prince 5(4) inside each hold interval, where u
   is constant and the system is not stiff.
3. :func:`integrate_uncompensated` — ``M_a q̈_a = Q_a + Qᶜ(t)`` (chaotic for the triple
   pendulum) with DOP853 on its own clock, so its fast motion no longer sets the step
   of the controlled loop.

Each step takes a :class:`~robustrack.tracking.backend.Loop` — the one door
:func:`robustrack.tracking.backend.prepare` chooses the compiled kernels
(:class:`robustrack.compiled.backend.CompiledBackend`) or the numpy reference
(:class:`~robustrack.tracking.numpy_loop.NumpyLoop`); nothing here branches on the backend. What both
backends share lives here: the solutions, the validation, the limits of a run (:func:`solve_bounded`,
:func:`hold_budget`) and the scipy driver of continuous control (:func:`solve_continuous`).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np
from .._validate import finite, positive, positive_int
from ..errors import ParameterError
from ..plants.motion import check_batch_contract, check_constraint_fits
from .defaults import DEFAULT_ATOL, DEFAULT_RTOL, DEFAULT_TRACKING_METHOD, METHODS, MIN_ATOL

__all__ = ["SolverStats", "NominalSolution", "ControlledSolution", "integrate_nominal", "integrate_controlled",
           "integrate_uncompensated", "dop853_interpolant", "output_times", "say_limits", "hold_edges", "hold_budget", "solve_bounded",
           "held_failure_advice", "diverging_message",
           "solve_continuous", "solve_scipy", "DEFAULT_RTOL", "DEFAULT_ATOL", "DEFAULT_TRACKING_METHOD", "METHODS"]

#: The scipy methods that take a Jacobian.
IMPLICIT = ("Radau", "BDF", "LSODA")

@dataclass(frozen=True)
class SolverStats:
    """What an integrator did: settings, effort and outcome.

    Attributes
    ----------
    method : str
    rtol, atol : float
        The tolerances used.
    nfev, njev, nlu : int
        Right-hand sides, Jacobians and LU decompositions.
    success : bool
    message : str
    wall_s : float
        Wall time of the solve, s.
    backend : str
        ``"compiled"`` (numba kernels) or ``"numpy"`` (the reference).
    """

    method: str
    rtol: float
    atol: float
    nfev: int
    njev: int
    nlu: int
    success: bool
    message: str
    wall_s: float
    backend: str = "numpy"

    def to_dict(self) -> dict:
        return dict(self.__dict__)



def stats_of(method, rtol, atol, sol, wall, backend) -> SolverStats:
    """The :class:`SolverStats` of a scipy solution ``sol``."""
    return SolverStats(method, float(rtol), float(atol), int(sol.nfev), int(sol.njev), int(sol.nlu),
                       bool(sol.success), str(sol.message), wall, backend)



# --------------------------------------------------------------------------- #
# validation shared by the public entry points
# --------------------------------------------------------------------------- #
def check_method(method: str) -> str:
    """``method`` if it is one of :data:`METHODS`, else a ParameterError listing them."""
    if method not in METHODS:
        raise ParameterError(f"`method` must be one of {list(METHODS)}; got {method!r}.")
    return method


def check_common(plant, constraint, q0, qd0, t_span, rtol, atol, method):
    """Validate what every simulation takes; return ``(q0, qd0, t0, t1)``.

    Parameters
    ----------
    plant : Plant
    constraint : Constraint or None
    q0, qd0 : array_like (n,)
    t_span : (float, float)
    rtol, atol : float
    method : str

    Returns
    -------
    tuple
        q0 and qd0 as float arrays (n,), t0 and t1 as floats.
    """
    q0 = finite(q0, "q0").reshape(-1)
    qd0 = finite(qd0, "qd0").reshape(-1)
    n = plant.n
    if q0.shape != (n,) or qd0.shape != (n,):
        raise ParameterError(
            f"`q0` and `qd0` must have shape ({n},) for {type(plant).__name__}; got {q0.shape}, {qd0.shape}."
        )
    check_constraint_fits(plant, constraint)
    t0, t1 = check_t_span(t_span)
    check_batch_contract(plant, constraint, q0, qd0, t0)  # before any integration, not in its post-processing
    rtol = float(positive(rtol, "rtol"))
    if not MIN_RTOL <= rtol < 1:
        raise ParameterError(f"`rtol` must be in [{MIN_RTOL:.3g}, 1) (scipy raises anything smaller to 100 × machine "
                             f"epsilon, so it would not be the tolerance used); got {rtol!r}.")
    atol = float(positive(atol, "atol"))
    if not atol >= MIN_ATOL:
        raise ParameterError(f"`atol` must be in [{MIN_ATOL:.0e}, ∞) (below it the error of a step is rounding "
                             f"noise that the step control cannot see: the run would crawl or fail); got {atol!r}.")
    check_method(method)
    return q0, qd0, t0, t1


#: The smallest relative tolerance accepted: scipy's floor, 100 × machine epsilon (see :func:`check_common`).
MIN_RTOL = 100 * float(np.finfo(float).eps)

#: The most zero-order-hold intervals of one run (each keeps its held u and state: memory and time).
MAX_HOLD_INTERVALS = 10_000_000


def check_hold_intervals(h: float, duration: float, name: str = "sample_period") -> int:
    """The number of hold intervals of period ``h`` over ``duration``; refuse more than :data:`MAX_HOLD_INTERVALS`.

    Parameters
    ----------
    h : float
        The hold period (> 0).
    duration : float
        The horizon t1 − t0.
    name : str
        The argument or key that set ``h``, for the message.

    Returns
    -------
    int
    """
    count = math.ceil(duration / h - 1e-9)
    if count > MAX_HOLD_INTERVALS:
        raise ParameterError(f"`{name}` = {h:g} s makes {count:.3g} hold intervals over the {duration:g} s horizon; "
                             f"at most {MAX_HOLD_INTERVALS:,} are allowed (memory and time): take a longer period "
                             "or a shorter horizon.")
    return count


def check_t_span(t_span) -> tuple[float, float]:
    """``(t0, t1)`` from ``t_span``: two finite numbers, increasing.

    Parameters
    ----------
    t_span : array_like (2,)

    Returns
    -------
    (float, float)
    """
    span = finite(t_span, "t_span")
    if span.shape != (2,) or not span[1] > span[0]:
        raise ParameterError(f"`t_span` must be two increasing times (t0, t1); got {t_span!r}.")
    return float(span[0]), float(span[1])


def output_times(t_eval, n_points, t0: float, t1: float) -> np.ndarray:
    """The output grid: ``t_eval`` checked, or ``n_points`` evenly spaced times over [t0, t1].

    Parameters
    ----------
    t_eval : array_like or None
        Output times (1-D, strictly increasing, at least 2, inside [t0, t1]).
    n_points : int
        Number of evenly spaced times when ``t_eval`` is None (>= 2).
    t0, t1 : float
        The horizon.

    Returns
    -------
    ndarray (T,)
    """
    if t_eval is None:
        return np.linspace(t0, t1, positive_int(n_points, "n_points", minimum=2, what="output times"))
    t_eval = finite(t_eval, "t_eval")
    if t_eval.ndim != 1 or t_eval.size < 2:
        raise ParameterError(f"`t_eval` must be a 1-D array of at least 2 times; got shape {t_eval.shape}.")
    if np.any(np.diff(t_eval) <= 0):
        raise ParameterError("`t_eval` must be strictly increasing.")
    if t_eval[0] < t0 or t_eval[-1] > t1:
        raise ParameterError(
            f"`t_eval` must lie within `t_span` = ({t0:g}, {t1:g}); got [{t_eval[0]:g}, {t_eval[-1]:g}]."
        )
    return np.ascontiguousarray(t_eval)


# --------------------------------------------------------------------------- #
# 1. the nominal system
# --------------------------------------------------------------------------- #
@dataclass(frozen=True)
class NominalSolution:
    """The nominal system's solution: accepted steps and the DOP853 dense output.

    Attributes
    ----------
    t : ndarray (N + 1,)
        Accepted step times (the interpolant breakpoints).
    y : ndarray (N + 1, 2n)
        States (q, q̇) at those times.
    F : ndarray (N, 7, 2n)
        DOP853 interpolant coefficients per step (scipy's ``Dop853DenseOutput.F``).
    stats : SolverStats
    """

    t: np.ndarray
    y: np.ndarray
    F: np.ndarray
    stats: SolverStats

    @property
    def h(self) -> np.ndarray:
        """Step lengths (N,)."""
        return np.diff(self.t)

    def __call__(self, t) -> np.ndarray:
        """(q, q̇) at times t (scalar or (T,)) → (2n,) or (T, 2n): DOP853's 7th-order interpolant."""
        t = np.asarray(t, dtype=float)
        k = np.clip(np.searchsorted(self.t, t, side="right") - 1, 0, self.F.shape[0] - 1)
        x = ((t - self.t[k]) / (self.t[k + 1] - self.t[k]))[..., None]  # self.h[k], without differencing all steps
        return dop853_interpolant(self.F[k], self.y[k], x)

    @property
    def dense(self):
        """The solution as the compiled kernels read it (:class:`~robustrack.compiled.systems.Dense`)."""
        from ..compiled.loop import dense

        return dense(self)


def dop853_interpolant(F, y0, x):
    """DOP853's 7th-order dense output on one step: Horner's scheme in x and 1 − x (scipy's ``Dop853DenseOutput``).

    The one home of the evaluation: :meth:`NominalSolution.__call__` runs it on arrays, and the C export
    (:mod:`robustrack.loop.export`, docs/guide/robot.md) traces it with sympy symbols into its C.

    Parameters
    ----------
    F : array_like (..., 7, k)
        The step's interpolant coefficients (:attr:`NominalSolution.F` rows).
    y0 : array_like (..., k)
        The state at the step's start.
    x : array_like (..., 1) or scalar
        The fraction of the step, (t − t_k) / (t_{k+1} − t_k).

    Returns
    -------
    ndarray (..., k)
    """
    nf = F.shape[-2]
    y = np.zeros(np.shape(y0))
    for i in range(nf):
        y = (y + F[..., nf - 1 - i, :]) * (x if i % 2 == 0 else 1.0 - x)
    return y + y0


def hold_budget(nom: NominalSolution, a: float, b: float, intervals: int) -> float:
    """The right-hand sides a sampled run may spend on ``[a, b]`` (``intervals`` hold intervals) before it is
    stopped as diverging.

    Criterion: the controlled system tracks the nominal motion, so its time scale is the nominal's; a hold
    period too long for the loop (u held from a stale state) instead spins the actual system up ever faster
    (with a triple pendulum: until the step falls below 1e-14 s or the 20-million evaluation limit ends it,
    ~10 s of CPU per sample). The budget is what RK45 would spend (6 evaluations per step) with steps
    :data:`~robustrack.tracking.defaults.HOLD_STEP_RATIO` (1000) times shorter than the nominal run's mean step
    ``(t_end − t0) / steps``, plus a floor (:data:`~robustrack.tracking.defaults.HOLD_MIN_EVALUATIONS`) for
    nominal runs that barely move. RK45 at the nominal's tolerances needs ~4–10 times DOP853's steps, so a
    tracking loop stays ~100 times below the budget; a run that exceeds it is moving on a time scale three
    orders of magnitude faster than the motion it should follow, and is ended within that stretch, with a
    named failure and the partial run, instead of at the evaluation limit.

    Parameters
    ----------
    nom : NominalSolution
    a, b : float
        The stretch of the horizon (s).
    intervals : int
        The hold intervals in it.

    Returns
    -------
    float
    """
    from .defaults import HOLD_MIN_EVALUATIONS, HOLD_STEP_RATIO

    steps = max(1, nom.t.size - 1)
    mean_step = (float(nom.t[-1]) - float(nom.t[0])) / steps
    floor, per_interval = HOLD_MIN_EVALUATIONS
    rate = 6.0 * HOLD_STEP_RATIO / mean_step if mean_step > 0 else math.inf
    return floor + per_interval * intervals + rate * (b - a)


def diverging_message(a: float, b: float, used: int, nom: NominalSolution, h: float, sensing: bool = False) -> str:
    """Why a sampled run was stopped as diverging in the hold intervals [a, b] (:func:`hold_budget`).

    Parameters
    ----------
    a, b : float
        The stretch (s).
    used : int
        Right-hand sides spent there.
    nom : NominalSolution
    h : float
        The hold period.
    sensing : bool
        The loop measures through a sensor (:func:`held_failure_advice`).

    Returns
    -------
    str
    """
    from .defaults import HOLD_STEP_RATIO

    mean_step = (float(nom.t[-1]) - float(nom.t[0])) / max(1, nom.t.size - 1)
    # no time of its own: the run's message says where it stopped ("failed at t = ..."), one time per message
    return (f"diverging ({used:,} right-hand sides in a stretch of {b - a:.3g} s of hold intervals, more than steps {HOLD_STEP_RATIO}× shorter than the nominal run's mean step of "
            f"{mean_step:.3g} s would take: the controlled motion left the time scale of the motion it tracks); "
            + held_failure_advice(h, sensing))


def held_failure_advice(h: float, sensing) -> str:
    """The cause and the way out of a sampled run that failed.

    Parameters
    ----------
    h : float
        The hold period.
    sensing : object
        Truthy when the loop measures through a sensor: then the measurement error the gain amplifies is the
        cause; else the hold period.

    Returns
    -------
    str
    """
    if sensing:
        return (f"the loop diverged under its sensor model (hold period {h:g} s): the compensator's gain amplifies "
                "the measurement error (noise, quantization, estimated velocity, delay) beyond what the loop "
                "survives — a larger ε, a filtered velocity or a smaller gain tolerates more (robustrack margins, "
                "docs/guide/robot.md)")
    return f"the loop does not survive the hold period {h:g} s (take a shorter sample_period)"


def limit_reason(status: int) -> str | None:
    """What the integrators' status 3, 4 or 5 means (:func:`~robustrack.compiled.stepping.beyond`,
    :func:`~robustrack.compiled.stepping.stalled`); None otherwise."""
    from .defaults import MAX_EVALUATIONS, STALL_STEPS, STALL_WINDOWS, STATE_LIMIT

    if status == 3:
        return (f"evaluation limit: {MAX_EVALUATIONS:,} right-hand sides used before the end (the motion diverges, "
                "or the tolerances ask for more than double precision gives)")
    if status == 4:
        return (f"state limit: a state component exceeded {STATE_LIMIT:.0e} × its initial scale (the motion "
                "diverges)")
    if status == 5:
        return (f"step-size collapse: at the pace of its last {STALL_WINDOWS * STALL_STEPS} steps the run would need "
                f"more than the {MAX_EVALUATIONS:,} right-hand sides it may use to reach the end (the motion is not "
                "smooth here: typically a constraint at a rank boundary, a singular configuration, where q̈ jumps)")
    return None


# --------------------------------------------------------------------------- #
# 2. the controlled actual system
# --------------------------------------------------------------------------- #
@dataclass(frozen=True)
class ControlledSolution:
    """The controlled actual system: on the output grid and at every accepted step.

    Attributes
    ----------
    t, x : ndarray (T,), (T, 2n + n_z)
        On the output grid.
    t_steps, x_steps : ndarray (S,), (S, 2n + n_z)
        At every accepted step (continuous control) or every hold instant (sampled).
    u_times, u_held : ndarray (K,), (K, n) or None
        The sampling instants and the held u (sampled control only).
    stats : SolverStats
    nominal_steps : ndarray (S, 3n) or None
        The nominal side [q, q̇, Qᶜ] at ``t_steps`` as the compiled BDF evaluated it (NaN rows where it did not,
        the start); None: not kept.
    """

    t: np.ndarray
    x: np.ndarray
    t_steps: np.ndarray
    x_steps: np.ndarray
    stats: SolverStats
    u_times: np.ndarray | None = field(default=None)
    u_held: np.ndarray | None = field(default=None)
    nominal_steps: np.ndarray | None = field(default=None)


def reporting(fun, progress, t_end, every_s: float = 1.0):
    """Wrap ``fun`` so that ``progress(t, t_end)`` is called at most every ``every_s`` of wall time."""
    last = [time.perf_counter()]

    def wrapped(t, y, *args):
        now = time.perf_counter()
        if now - last[0] >= every_s:
            last[0] = now
            progress(float(t), t_end)
        return fun(t, y, *args)

    return wrapped




def hold_edges(t_span, h: float) -> np.ndarray:
    """The hold instants t_k = t0 + k h and the end t1 (the last interval may be shorter).

    Parameters
    ----------
    t_span : (float, float)
    h : float
        The hold period.

    Returns
    -------
    ndarray (K + 1,)
    """
    t0, t1 = t_span
    n_int = int(math.ceil((t1 - t0) / h - 1e-9))
    edges = np.minimum(t0 + h * np.arange(n_int + 1), t1)
    edges[-1] = t1
    return edges



def solve_continuous(fun, jac, x0, t_span, t_eval, method, rtol, atol, progress, backend,
                     culprit=None) -> ControlledSolution:
    """Continuous control in scipy's ``solve_ivp`` within :func:`solve_bounded`'s limits, with dense output.

    What both backends run for a method that is not compiled (the compiled BDF is
    :class:`robustrack.compiled.backend.CompiledBackend`'s own).

    Parameters
    ----------
    fun : callable
        ``fun(t, x)``, the controlled system's right-hand side.
    jac : callable or None
        Its Jacobian (implicit methods).
    x0 : array_like (2n + n_z,)
    t_span : (float, float)
    t_eval : ndarray (T,)
    method : str
    rtol, atol : float
    progress : callable or None
        ``progress(t, t_end)`` about once a second.
    backend : str
        For :class:`SolverStats`.
    culprit : callable, optional
        ``culprit() -> str or None``: which function made the right-hand side non-finite (said on failure).

    Returns
    -------
    ControlledSolution
    """
    t0, t1 = t_span
    jac = {} if jac is None else {"jac": jac}
    if progress is not None:
        fun = reporting(fun, progress, t1)
    start = time.perf_counter()
    reached = [t0]

    def tracked(t, x):
        reached[0] = t
        return fun(t, x)

    try:
        sol = solve_bounded(tracked, (t0, t1), np.asarray(x0, dtype=float), method, rtol=rtol, atol=atol,
                            dense_output=True, **jac)
    except ValueError as exc:  # scipy refuses a Jacobian or state with inf/NaN (a user compensator's NaN)
        if "inf" not in str(exc).lower() and "nan" not in str(exc).lower():
            raise
        why = culprit() if culprit is not None else None
        stats = SolverStats(method, float(rtol), float(atol), 0, 0, 0, False,
                            f"the controlled system's right-hand side became non-finite near t = {reached[0]:.6g}"
                            + (f": {why}" if why else ""), time.perf_counter() - start, backend)
        x0 = np.asarray(x0, dtype=float)
        return ControlledSolution(t_eval[:1], x0[None], np.array([t0]), x0[None], stats)
    wall = time.perf_counter() - start
    stats = stats_of(method, rtol, atol, sol, wall, backend)
    grid = t_eval[t_eval <= sol.t[-1]] if sol.sol is not None else t_eval[:0]
    x = sol.sol(grid).T if grid.size else np.zeros((0, x0.size))
    return ControlledSolution(grid, x, sol.t, sol.y.T, stats)


def solve_scipy(rhs, t0, t1, y0, method, t_eval, rtol, atol, backend):
    """A system ``ẏ = rhs(t, y)`` in scipy's ``solve_ivp`` on ``t_eval``, within :func:`solve_bounded`'s limits.

    Parameters
    ----------
    rhs : callable
    t0, t1 : float
    y0 : ndarray
    method : str
    t_eval : ndarray (T,)
    rtol, atol : float
    backend : str
        For :class:`SolverStats`.

    Returns
    -------
    t, y : ndarray
        The output times reached and the states there.
    stats : SolverStats
    """
    start = time.perf_counter()
    sol = solve_bounded(rhs, (t0, t1), y0, method, t_eval=t_eval, rtol=rtol, atol=atol)
    stats = stats_of(method, rtol, atol, sol, time.perf_counter() - start, backend)
    return sol.t, sol.y.T, stats

def _bounded(rhs, y0, t_span=None):
    """``rhs`` counting its evaluations, and a terminal event that fires when they reach, or a state component
    leaves, :func:`~robustrack.compiled.loop.limits`, or the step size collapses over ``t_span``
    (:data:`~robustrack.tracking.defaults.STALL_STEPS`, as :func:`~robustrack.compiled.stepping.stalled`); scipy
    evaluates events between steps, never changing them: a run within the limits is the same to the bit.
    ``status()`` gives 3, 4 or 5 as the kernels do."""
    from ..compiled.loop import limits
    from .defaults import STALL_STEPS, STALL_WINDOWS

    max_nfev, max_state = limits(y0)
    t1 = t_span[1] if t_span is not None else None
    count, last, mark, stop = [0], [-np.inf], [None], [0]
    window = [None, 0, 0, 0]  # t and nfev at its start, steps in it, windows in a row beyond the limit

    def counted(t, y):
        count[0] += 1
        return rhs(t, y)

    def stalled(t) -> bool:  # as the kernels' stepping.stalled, once per step
        if window[0] is None:
            window[0], window[1] = t, count[0]
            return False
        window[2] += 1
        if window[2] < STALL_STEPS:
            return False
        dt = t - window[0]
        need = count[0] + (count[0] - window[1]) * (t1 - t) / dt if dt > 0 else np.inf
        window[3] = window[3] + 1 if need > max_nfev else 0
        window[0], window[1], window[2] = t, count[0], 0
        return window[3] >= STALL_WINDOWS

    def within(t, y):
        # continuous in t, as scipy's root finding needs: at the step that used the last evaluation (or ended a
        # collapsing window), the term turns into (mark − t) with the mark halfway into that step
        if not stop[0] and t1 is not None and t > last[0] and stalled(t):  # a new step (one call each, and t0)
            stop[0] = 5
        if not stop[0] and count[0] >= max_nfev:
            stop[0] = 3
        if not stop[0]:
            last[0] = t
            over = np.inf
        else:
            if mark[0] is None:
                mark[0] = 0.5 * (last[0] + t) if np.isfinite(last[0]) else t
            over = mark[0] - t
        return min(over, max_state - float(np.max(np.abs(y))))

    within.terminal = True
    return counted, within, lambda: stop[0] or 4


def solve_bounded(fun, t_span, y0, method, **options):
    """scipy's ``solve_ivp`` within :func:`_bounded`'s limits: a run beyond them ends as a failure (not scipy's
    "termination event" success) whose message names the limit and the time it was met.

    Parameters
    ----------
    fun : callable
        ``fun(t, y)``.
    t_span : (float, float)
    y0 : ndarray
    method : str
        A scipy method.
    **options
        As ``scipy.integrate.solve_ivp`` (``rtol``, ``atol``, ``t_eval``, ``dense_output``, ``jac``).

    Returns
    -------
    OdeResult
    """
    from scipy.integrate import solve_ivp

    counted, within, status = _bounded(fun, y0, t_span)
    sol = solve_ivp(counted, t_span, y0, method=method, events=within, **options)
    if sol.status == 1:
        sol.success, sol.message = False, f"{method} stopped at t = {sol.t_events[0][0]:.6g}: {limit_reason(status())}."
    return sol




# --------------------------------------------------------------------------- #
# the three systems, on a Loop
# --------------------------------------------------------------------------- #
def integrate_nominal(loop, q0, qd0, t_span, *, rtol=DEFAULT_RTOL, atol=DEFAULT_ATOL) -> NominalSolution:
    """Integrate ``M q̈ = Q + Qᶜ`` with DOP853 and keep its dense output (W 5.2.9–5.2.11).

    Parameters
    ----------
    loop : Loop
        :func:`~robustrack.tracking.backend.prepare`'s (its nominal plant, constraint and actuators).
    q0, qd0 : ndarray (n,)
        Validated initial state.
    t_span : (float, float)
    rtol, atol : float
        Tolerances (keyword-only).

    Returns
    -------
    NominalSolution
        Possibly partial (``stats.success`` False) if the solver failed.
    """
    return loop.nominal(np.concatenate([q0, qd0]), float(t_span[0]), float(t_span[1]), rtol, atol)


def integrate_controlled(loop, nom: NominalSolution, x0, t_span, t_eval, *, sample_period=None,
                         method=DEFAULT_TRACKING_METHOD, rtol=DEFAULT_RTOL, atol=DEFAULT_ATOL,
                         progress=None, sensor=None) -> ControlledSolution:
    """Integrate the controlled actual system driven by the nominal solution (W 5.2.17).

    Parameters
    ----------
    loop : Loop
        :func:`~robustrack.tracking.backend.prepare`'s (plants, constraint, compensator, actuators).
    nom : NominalSolution
        From :func:`integrate_nominal`.
    x0 : ndarray (2n + n_z,)
        (q_c, q̇_c, z) at t0.
    t_span : (float, float)
    t_eval : ndarray (T,)
        Output grid.
    sample_period : float, optional
        Zero-order-hold period h (keyword-only); None: continuous control. A loop without a
        compensator (u = 0) is continuous whatever h.
    method, rtol, atol
        Integrator of continuous control and tolerances (keyword-only); sampled control
        uses Dormand–Prince 5(4) ("RK45") with the same tolerances.
    progress : callable, optional
        ``progress(t, t_end)`` about once a second (keyword-only).
    sensor : Sensor, optional
        What the law sees at the sample instants (:class:`robustrack.loop.Sensor`; keyword-only, sampled control
        only); None: the state itself.

    Returns
    -------
    ControlledSolution
    """
    if sample_period is not None and loop.compensator is not None:
        more = {} if sensor is None else {"sensor": sensor}
        return loop.sampled(nom, x0, t_span, t_eval, sample_period=float(sample_period), rtol=rtol, atol=atol,
                            progress=progress, **more)
    return loop.controlled(nom, x0, t_span, t_eval, method=method, rtol=rtol, atol=atol, progress=progress)


def integrate_uncompensated(loop, nom: NominalSolution, x0, t_span, t_eval, *, rtol=DEFAULT_RTOL,
                            atol=DEFAULT_ATOL):
    """Integrate ``M_a q̈_a = Q_a + Qᶜ(t)`` apart, with DOP853 (W 5.2.16).

    Parameters
    ----------
    loop : Loop
        :func:`~robustrack.tracking.backend.prepare`'s.
    nom : NominalSolution
    x0 : ndarray (2n,)
        (q_a, q̇_a) at t0.
    t_span : (float, float)
    t_eval : ndarray (T,)
    rtol, atol : float
        Keyword-only.

    Returns
    -------
    t_grid, x_grid, t_steps, x_steps : ndarray
        On the output grid and at every accepted step.
    stats : SolverStats
    """
    return loop.uncompensated(nom, x0, t_span, t_eval, rtol=rtol, atol=atol)


def say_limits(plant, t, q, qd, what: str) -> None:
    """One :class:`~robustrack.errors.LimitNotice` naming the limits a motion breaks (:meth:`Plant.motion_notes
    <robustrack.plants.Plant.motion_notes>`: a URDF's joint velocity limits); nothing when it breaks none.

    Parameters
    ----------
    plant : Plant
    t : ndarray (T,)
    q, qd : ndarray (T, n)
    what : str
        The motion, for the message ("the controlled system").
    """
    notes = plant.motion_notes(t, q, qd)
    if notes:
        import warnings

        from ..errors import LimitNotice

        warnings.warn(f"{what} breaks {type(plant).__name__}'s limits: {'; '.join(notes)}.", LimitNotice,
                      stacklevel=3)
