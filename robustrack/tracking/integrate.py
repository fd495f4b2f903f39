"""Integration: the nominal system, the controlled actual system, the uncompensated copy.

Each system has its own solve and its own step control (W 5.2; docs/theory/nominal-actual.md):

1. :func:`integrate_nominal` — ``M q̈ = Q + Qᶜ`` with DOP853 (the constrained nominal
   systems are not stiff) and its dense output. Nothing of a compensator enters, so
   the nominal trajectory and residual are the same, to the last bit, whatever
   compensator runs afterwards.
2. :func:`integrate_controlled` — ``M_a q̈_c = Q_a + Qᶜ(t) + M(q_c) u``, driven by the
   nominal dense output: continuous control with BDF (the compensated loop is stiff:
   GSS's gain makes ∂u/∂ė ~ 1e4; scipy's BDF algorithm ported into the compiled kernels,
   with their exact Jacobian, so the whole horizon is one compiled call; other scipy
   methods on request), or sampled control (zero-order hold of period h: u computed at
   t_k = t0 + k h and held) with Dormand–Prince 5(4) inside each hold interval, where u
   is constant and the system is not stiff.
3. :func:`integrate_uncompensated` — ``M_a q̈_a = Q_a + Qᶜ(t)`` (chaotic for the triple
   pendulum) with DOP853 on its own clock, so its fast motion no longer sets the step
   of the controlled loop.

:func:`simulate_constrained` is step 1 as a public function (any scipy method).
Each step runs compiled kernels when :func:`robustrack.compiled.loop.compiled_loop`
gives them, else the numpy reference of :mod:`robustrack.tracking.rhs`.
"""

from __future__ import annotations

import contextlib
import math
import signal
import threading
import time
from dataclasses import dataclass, field

import numpy as np
from .._validate import finite, positive, positive_int
from ..errors import RobustrackError, ParameterError, SolverError
from ..plants.motion import check_batch_contract, check_constraint_fits, constrained_motion, contact_forces
from .defaults import DEFAULT_ATOL, DEFAULT_RTOL, DEFAULT_TRACKING_METHOD, METHODS, MIN_ATOL
from .rhs import (batched_jacobian, controlled_jacobian, controlled_rhs, has_exact_jacobian, nominal_motion,
                  nonfinite_source, uncompensated_rhs)

__all__ = ["SolverStats", "ConstrainedResult", "NominalSolution", "ControlledSolution",
           "simulate_constrained", "integrate_nominal", "integrate_controlled", "integrate_uncompensated",
           "output_times", "say_limits", "DEFAULT_RTOL", "DEFAULT_ATOL", "DEFAULT_TRACKING_METHOD", "METHODS"]

_IMPLICIT = ("Radau", "BDF", "LSODA")


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


@contextlib.contextmanager
def _compiled_calls():
    """Hold Ctrl-C while compiled kernels run; raise it as KeyboardInterrupt where it is safe.

    A KeyboardInterrupt raised while numba boxes a kernel's result can crash the interpreter
    (segmentation fault; numba issue 2324). Inside this block SIGINT only records itself; the
    block yields a ``check()`` that raises KeyboardInterrupt when one was recorded (call it
    between kernel calls, e.g. in a Python right-hand side before it calls the kernel), and
    the block raises it on exit. Off the main thread, or under a handler of someone else's,
    nothing changes.
    """
    hits = []

    def check():
        if hits:
            raise KeyboardInterrupt

    if threading.current_thread() is not threading.main_thread() or \
            signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        yield check
        return
    signal.signal(signal.SIGINT, lambda signum, frame: hits.append(signum))
    try:
        yield check
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    check()


def _stats(method, rtol, atol, sol, wall, backend) -> SolverStats:
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
        y = np.zeros(t.shape + (self.y.shape[1],))
        nf = self.F.shape[1]
        for i in range(nf):
            y = (y + self.F[k, nf - 1 - i]) * (x if i % 2 == 0 else 1.0 - x)
        return y + self.y[k]

    @property
    def dense(self):
        """The solution as the compiled kernels read it (:class:`~robustrack.compiled.systems.Dense`)."""
        from ..compiled.loop import dense

        return dense(self)


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


def _diverging(a: float, b: float, used: int, nom: NominalSolution, h: float) -> str:
    from .defaults import HOLD_STEP_RATIO

    mean_step = (float(nom.t[-1]) - float(nom.t[0])) / max(1, nom.t.size - 1)
    return (f"RK45 stopped in the hold intervals from t = {a:.6g} s to {b:.6g} s: diverging ({used:,} right-hand "
            f"sides there, more than steps {HOLD_STEP_RATIO}× shorter than the nominal run's mean step of "
            f"{mean_step:.3g} s would take: the controlled motion left the time scale of the motion it tracks); "
            f"the loop does not survive the hold period {h:g} s (take a shorter sample_period)")


def _limit_reason(status: int) -> str | None:
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


def _dop_message(status, T) -> str:
    if status == 0:
        return "The solver successfully reached the end of the integration interval."
    why = _limit_reason(status) or ("the step fell below the spacing of floats" if status == 1 else
                                    "the state or its derivative is not finite")
    return f"DOP853 stopped at t = {float(T[-1]):.6g}: {why}."


def _dop853(system, y0, t0, t1, t_out, rtol, atol, dense, nom, model):
    """:func:`~robustrack.compiled.dop853.dop853_run` within :func:`~robustrack.compiled.loop.limits`:
    ``(T, Y, F, X_out, stats)`` — the step times and states, the interpolants (if ``dense``), the states at
    ``t_out`` and its :class:`SolverStats`. A step size that rounds to 0 (ZeroDivisionError in the kernel) is
    status 1 at t0 (nothing kept but y0)."""
    from ..compiled.loop import limits, tolerances
    from ..compiled.dop853 import dop853_run

    start = time.perf_counter()
    with _compiled_calls():
        try:
            T, Y, F, X_out, nfev, status = dop853_run(system, y0, t0, t1, t_out, tolerances(rtol, atol), dense, nom,
                                                      model, limits(y0))
        except ZeroDivisionError:
            d = y0.shape[0]
            X_out = np.full((t_out.shape[0], d), np.nan)
            X_out[t_out <= t0] = y0
            T, Y, F, nfev, status = np.array([t0]), y0[None].copy(), np.zeros((0, 7, d)), 0, 1
    stats = SolverStats("DOP853", float(rtol), float(atol), int(nfev), 0, 0, status == 0, _dop_message(status, T),
                        time.perf_counter() - start, "compiled")
    return T, Y, F, X_out, stats


def integrate_nominal(plant, constraint, q0, qd0, t_span, *, rtol=DEFAULT_RTOL, atol=DEFAULT_ATOL,
                      loop=None, actuators=None) -> NominalSolution:
    """Integrate ``M q̈ = Q + Qᶜ`` with DOP853 and keep its dense output (W 5.2.9–5.2.11).

    Parameters
    ----------
    plant : Plant
        The nominal plant.
    constraint : Constraint or None
        Its constraint (None: ``M q̈ = Q``).
    q0, qd0 : ndarray (n,)
        Validated initial state.
    t_span : (float, float)
    rtol, atol : float
        Tolerances (keyword-only).
    loop : CompiledLoop, optional
        Compiled kernels (keyword-only); None: the numpy reference.
    actuators : BoundActuators, optional
        The constraint force realized by actuators, ``M q̈ = Q + B τᶜ`` (keyword-only;
        :mod:`robustrack.tracking.actuators`); the compiled kernels take them from ``loop``.

    Returns
    -------
    NominalSolution
        Possibly partial (``stats.success`` False) if the solver failed.
    """
    n = plant.n
    y0 = np.concatenate([q0, qd0])
    start = time.perf_counter()
    if loop is not None:
        from ..compiled.loop import no_dense

        T, Y, F, _, stats = _dop853(loop.nominal, y0, float(t_span[0]), float(t_span[1]), np.zeros(0), rtol, atol,
                                    True, no_dense(2 * n), loop.model)
        return NominalSolution(T, Y, F, stats)

    def rhs(t, y):
        return np.concatenate([y[n:], nominal_motion(plant, constraint, y[:n], y[n:], t, actuators=actuators).qdd])

    sol = _solve_bounded(rhs, (float(t_span[0]), float(t_span[1])), y0, "DOP853", rtol=rtol, atol=atol,
                         dense_output=True)
    wall = time.perf_counter() - start
    parts = sol.sol.interpolants if sol.sol is not None else []
    F = np.array([p.F for p in parts]) if parts else np.zeros((0, 7, 2 * n))
    t = sol.sol.ts if sol.sol is not None else sol.t
    y = np.array([p.y_old for p in parts] + [sol.y[:, -1]]) if parts else sol.y.T
    return NominalSolution(np.asarray(t, dtype=float), y, F,
                           _stats("DOP853", rtol, atol, sol, wall, "compiled" if loop else "numpy"))


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


def _nominal_at(nominal, constraint, nom, t, actuators=None):
    """(q, q̇, Qᶜ, τᶜ) of the nominal solution at t (numpy path): what drives the actual systems.

    τᶜ is None without actuators; with them Qᶜ = B τᶜ.
    """
    n = nominal.n
    y = nom(t)
    if actuators is None:
        return y[:n], y[n:], nominal_motion(nominal, constraint, y[:n], y[n:], t).Qc, None
    Qc, tau_c, _ = actuators.nominal(y[:n], y[n:], t)
    return y[:n], y[n:], Qc, tau_c


def _nominal_cached(nominal, constraint, nom, actuators=None):
    """``at(t)`` = :func:`_nominal_at` remembering its last t (the numpy mirror of the kernels' ``nominal_cached``):
    an implicit step evaluates the right-hand side and its Jacobian at one t several times."""
    last = [None, None]

    def at(t):
        if last[0] != t:
            last[1] = _nominal_at(nominal, constraint, nom, t, actuators)
            last[0] = t
        return last[1]

    return at


def _reporting(fun, progress, t_end, every_s: float = 1.0):
    """Wrap ``fun`` so that ``progress(t, t_end)`` is called at most every ``every_s`` of wall time."""
    last = [time.perf_counter()]

    def wrapped(t, y, *args):
        now = time.perf_counter()
        if now - last[0] >= every_s:
            last[0] = now
            progress(float(t), t_end)
        return fun(t, y, *args)

    return wrapped


def integrate_controlled(nominal, actual, constraint, compensator, nom: NominalSolution, x0, t_span, t_eval, *,
                         sample_period=None, method=DEFAULT_TRACKING_METHOD, rtol=DEFAULT_RTOL,
                         atol=DEFAULT_ATOL, loop=None, law=None, progress=None,
                         actuators=None) -> ControlledSolution:
    """Integrate the controlled actual system driven by the nominal solution (W 5.2.17).

    Parameters
    ----------
    nominal, actual : Plant
    constraint : Constraint or None
    compensator : Compensator or None
    nom : NominalSolution
        From :func:`integrate_nominal`.
    x0 : ndarray (2n + n_z,)
        (q_c, q̇_c, z) at t0.
    t_span : (float, float)
    t_eval : ndarray (T,)
        Output grid.
    sample_period : float, optional
        Zero-order-hold period h (keyword-only); None: continuous control.
    method, rtol, atol
        Integrator of continuous control and tolerances (keyword-only); sampled control
        uses Dormand–Prince 5(4) ("RK45") with the same tolerances.
    loop : CompiledLoop, optional
        Compiled kernels (keyword-only); None: numpy.
    law : Law, optional
        :func:`~robustrack.compiled.loop.kernel_law` of the compensator
        (keyword-only; required with ``loop``).
    progress : callable, optional
        ``progress(t, t_end)`` about once a second (keyword-only).
    actuators : BoundActuators, optional
        Apply ``B sat(τᶜ + τᵘ)`` instead of ``Qᶜ + M u`` (keyword-only; the compiled
        kernels take them from ``loop``).

    Returns
    -------
    ControlledSolution
    """
    t0, t1 = t_span
    if sample_period is not None and compensator is not None:
        return _integrate_sampled(nominal, actual, constraint, compensator, nom, x0, t_span, t_eval,
                                  float(sample_period), rtol, atol, loop, law, progress, actuators)
    n = nominal.n
    if loop is not None and method == "BDF":
        with _compiled_calls() as check:
            return _integrate_bdf_compiled(nom, x0, t_span, t_eval, rtol, atol, loop, law, progress, check)
    guard = contextlib.ExitStack()
    culprit = [None]  # the function that made the right-hand side non-finite (numpy path), said on failure
    if loop is not None:
        from ..compiled import systems as kernels

        args = (nom.dense, loop.model, law, np.zeros(n), False)
        check = guard.enter_context(_compiled_calls())
        system = loop.controlled

        def fun(t, x):
            check()
            return kernels.controlled_rhs(system, t, np.ascontiguousarray(x), *args)  # scipy may pass a view

        def jacobian(t, x):
            check()
            return kernels.controlled_jac(system, t, np.ascontiguousarray(x), *args)

        jac = {"jac": jacobian} if method in _IMPLICIT else {}
    else:
        at = _nominal_cached(nominal, constraint, nom, actuators)

        def fun(t, x):
            q, qd, Qc, tau_c = at(t)
            out = controlled_rhs(nominal, actual, compensator, t, x, q, qd, Qc, actuators=actuators, tau_c=tau_c)
            if culprit[0] is None and not np.isfinite(out).all():  # say which function, at which state
                culprit[0] = nonfinite_source(nominal, actual, compensator, t, x, q, qd)
            return out

        if method in _IMPLICIT and has_exact_jacobian(nominal, actual, actuators):
            def exact(t, x):  # the plants' exact derivatives (URDF: RNEA derivatives), not 2n + n_z more evaluations
                q, qd, Qc, _ = at(t)
                return controlled_jacobian(nominal, actual, compensator, t, x, q, qd, Qc)

            jac = {"jac": exact}
        else:
            jac = {"jac": batched_jacobian(fun)} if method in _IMPLICIT else {}
    if progress is not None:
        fun = _reporting(fun, progress, t1)
    start = time.perf_counter()
    reached = [t0]

    def tracked(t, x):
        reached[0] = t
        return fun(t, x)

    with guard:
        try:
            sol = _solve_bounded(tracked, (t0, t1), np.asarray(x0, dtype=float), method, rtol=rtol, atol=atol,
                                 dense_output=True, **jac)
        except ValueError as exc:  # scipy refuses a Jacobian or state with inf/NaN (a user compensator's NaN)
            if "inf" not in str(exc).lower() and "nan" not in str(exc).lower():
                raise
            stats = SolverStats(method, float(rtol), float(atol), 0, 0, 0, False,
                                f"the controlled system's right-hand side became non-finite near t = {reached[0]:.6g}"
                                + (f": {culprit[0]}" if culprit[0] else ""),
                                time.perf_counter() - start, "compiled" if loop else "numpy")
            x0 = np.asarray(x0, dtype=float)
            return ControlledSolution(t_eval[:1], x0[None], np.array([t0]), x0[None], stats)
    wall = time.perf_counter() - start
    stats = _stats(method, rtol, atol, sol, wall, "compiled" if loop else "numpy")
    grid = t_eval[t_eval <= sol.t[-1]] if sol.sol is not None else t_eval[:0]
    x = sol.sol(grid).T if grid.size else np.zeros((0, x0.size))
    return ControlledSolution(grid, x, sol.t, sol.y.T, stats)


def _integrate_bdf_compiled(nom, x0, t_span, t_eval, rtol, atol, loop, law, progress, check):
    """scipy's BDF ported into the kernels (``bdf_init``, ``bdf_advance``): compiled steps.

    The horizon is walked in 20 pieces, reporting ``progress`` and honouring Ctrl-C (``check``)
    between them — the steps are the same as in one call (never clipped at a piece).
    """
    from ..compiled.bdf import bdf_advance, bdf_init
    from ..compiled.loop import limits, tolerances

    args = (nom.dense, loop.model, law)
    tol = tolerances(rtol, atol)
    lim = limits(x0)
    t0, t1 = float(t_span[0]), float(t_span[1])
    start = time.perf_counter()
    state = bdf_init(loop.controlled, np.array(x0, dtype=float), t0, t1, tol, *args)
    info = state.info
    X = np.full((t_eval.size, len(x0)), np.nan)
    X[t_eval <= t0] = x0
    steps_t, steps_x = [np.array([t0])], [np.asarray(x0, dtype=float)[None]]
    steps_nominal = [np.full((1, 3 * loop.n), np.nan)]  # the start: not evaluated by a step
    piece = (t1 - t0) / 20
    status = 0
    while info[0] < t1 and status == 0:
        check()
        try:
            Xp, TS, XS, NS, status = bdf_advance(loop.controlled, state, t1, min(info[0] + piece, t1), t_eval, tol, *args,
                                             lim)
        except ZeroDivisionError:  # the compiled step size reached 0: a loop too stiff for float64
            status = 2
            break
        got = ~np.isnan(Xp[:, 0])
        X[got] = Xp[got]
        steps_t.append(TS)
        steps_x.append(XS)
        steps_nominal.append(NS)
        if progress is not None:
            progress(float(info[0]), t1)
    ok = status == 0
    reached = float(info[0])
    msg = ("The solver successfully reached the end of the integration interval." if ok else
           f"BDF stopped at t = {reached:.6g}: {_limit_reason(status)}." if _limit_reason(status) else
           f"Required step size is less than spacing between numbers (at t = {reached:.6g})" +
           (": the step size fell to 0 (the controlled loop is too stiff for float64: gains, Γ or 1/ε too large)."
            if status == 2 else "."))
    keep = t_eval <= reached
    stats = SolverStats("BDF", float(rtol), float(atol), int(info[4]), int(info[5]), int(info[6]), ok, msg,
                        time.perf_counter() - start, "compiled")
    return ControlledSolution(t_eval[keep], X[keep], np.concatenate(steps_t), np.concatenate(steps_x), stats,
                              nominal_steps=np.concatenate(steps_nominal))


def _integrate_sampled(nominal, actual, constraint, compensator, nom, x0, t_span, t_eval, h, rtol, atol, loop,
                       law, progress, actuators):
    """Zero-order hold: u from the state at t_k = t0 + k h, held on [t_k, t_k+1)."""
    t0, t1 = t_span
    n_int = int(math.ceil((t1 - t0) / h - 1e-9))
    edges = np.minimum(t0 + h * np.arange(n_int + 1), t1)
    edges[-1] = t1
    start = time.perf_counter()
    if loop is not None:
        with _compiled_calls() as check:
            X, U, XE, nfev, fail, status = _sampled_compiled(loop, law, nom, np.array(x0, dtype=float), edges, t_eval,
                                                             rtol, atol, progress, check)
        ok = fail < 0
        reached = t1 if ok else float(edges[fail])
        msg = ("The solver successfully reached the end of the integration interval." if ok else
               status if isinstance(status, str) else
               f"the controlled system's motion is not defined (or the step fell below 1e-14) at t ≈ {reached:.6g}"
               if _limit_reason(status) is None else
               f"RK45 stopped in the hold interval from t = {reached:.6g} s: {_limit_reason(status)}; the loop does "
               f"not survive the hold period {h:g} s (take a shorter sample_period)")
        keep_int = n_int if ok else fail
        T, X = t_eval[t_eval <= reached], X[: int(np.sum(t_eval <= reached))]
        stats = SolverStats("RK45", float(rtol), float(atol), int(nfev), 0, 0, ok, msg,
                            time.perf_counter() - start, "compiled")
        return ControlledSolution(T, X, edges[: keep_int + 1], XE[: keep_int + 1], stats,
                                  edges[:keep_int], U[:keep_int])
    return _integrate_sampled_numpy(nominal, actual, constraint, compensator, nom, x0, edges, t_eval, rtol, atol,
                                    progress, start, actuators)


def _sampled_compiled(loop, law, nom, x0, edges, t_eval, rtol, atol, progress, check, pieces: int = 20):
    """:func:`~robustrack.compiled.hold.sampled_run` over the hold intervals in ``pieces`` calls, reporting
    ``progress`` and honouring Ctrl-C (``check``) between them; the step size and the evaluation count carry
    over, so the steps are those of one call. Each call may spend at most :func:`hold_budget` of its stretch
    (the evaluation limit the kernel checks between steps): a call that reaches it while the run's own limit
    is not reached stops the run as diverging (status: the message). Returns (X at t_eval, U, X at the edges,
    nfev, failed interval or -1, status)."""
    from ..compiled.loop import limits, tolerances
    from ..compiled.hold import sampled_run

    tol = tolerances(rtol, atol)
    max_nfev, max_state = limits(x0)
    n_int = edges.size - 1
    d = x0.size
    X = np.full((t_eval.size, d), np.nan)
    U = np.full((n_int, loop.n), np.nan)
    XE = np.full((n_int + 1, d), np.nan)
    XE[0] = x0
    x, h, nfev, k0 = x0, 0.0, 0, 0
    step = max(1, -(-n_int // pieces))
    while k0 < n_int:
        check()
        k1 = min(k0 + step, n_int)
        inside = (t_eval >= edges[k0]) & (t_eval <= edges[k1])
        budget = hold_budget(nom, float(edges[k0]), float(edges[k1]), k1 - k0)
        allowed = min(max_nfev - nfev, budget)
        Xp, Up, XEp, used, fail, h, status = sampled_run(loop.controlled, x, edges[k0:k1 + 1],
                                                         np.ascontiguousarray(t_eval[inside]), tol, nom.dense,
                                                         loop.model, law, (allowed, max_state), h)
        nfev += used
        if fail >= 0 and status == 3 and allowed < max_nfev - (nfev - used):  # the stretch's budget, not the run's
            status = _diverging(float(edges[k0]), float(edges[k1]), used, nom, float(edges[1] - edges[0]))
        got = ~np.isnan(Xp[:, 0])
        X[np.flatnonzero(inside)[got]] = Xp[got]
        U[k0:k1] = Up
        XE[k0 + 1:k1 + 1] = XEp[1:]
        if fail >= 0:
            return X, U, XE, nfev, k0 + fail, status
        x = XEp[-1].copy()
        if progress is not None:
            progress(float(edges[k1]), float(edges[-1]))
        k0 = k1
    return X, U, XE, nfev, -1, 0


class _OverBudget(Exception):
    """A hold interval of the numpy path spent its :func:`hold_budget`."""


def _integrate_sampled_numpy(nominal, actual, constraint, compensator, nom, x0, edges, t_eval, rtol, atol,
                             progress, start, actuators):
    from scipy.integrate import solve_ivp

    n = nominal.n

    def fun(t, x, u):
        q, qd, Qc, tau_c = _nominal_at(nominal, constraint, nom, t, actuators)
        return controlled_rhs(nominal, actual, compensator, t, x, q, qd, Qc, u_held=u, actuators=actuators,
                              tau_c=tau_c)

    if progress is not None:
        fun = _reporting(fun, progress, float(edges[-1]))
    x = np.asarray(x0, dtype=float)
    from ..compiled.loop import limits

    lim = limits(x)
    ts, xs, steps_t, steps_x, u_times, u_held = [], [], [edges[0]], [x], [], []
    nfev, ok, msg = 0, True, "The solver successfully reached the end of the integration interval."
    j = 0
    for k in range(len(edges) - 1):
        a, b = edges[k], edges[k + 1]
        y = nom(a)
        u = compensator(a, x[:n] - y[:n], x[n:2 * n] - y[n:], x[2 * n:])
        u_times.append(a)
        u_held.append(u)
        stop = np.searchsorted(t_eval, b, side="left")  # output times inside [a, b); b's is the next start
        if j == 0:
            while j < len(t_eval) and t_eval[j] <= a:
                ts.append(t_eval[j])
                xs.append(x)
                j += 1
        te = t_eval[j:stop]
        spent, budget = [0], hold_budget(nom, float(a), float(b), 1)

        def counted(t, x, u):  # the interval's budget (hold_budget), as the compiled integrator has it
            spent[0] += 1
            if spent[0] > budget:
                raise _OverBudget
            return fun(t, x, u)

        try:
            sol = solve_ivp(counted, (a, b), x, method="RK45", t_eval=np.append(te, b), rtol=rtol, atol=atol,
                            args=(u,))
        except _OverBudget:
            nfev += spent[0]
            ok, msg = False, _diverging(float(a), float(b), spent[0], nom, float(b - a))
            break
        nfev += sol.nfev
        if not sol.success:
            ok, msg = False, sol.message
            break
        ts.extend(sol.t[:-1])
        xs.extend(sol.y[:, :-1].T)
        j = stop
        x = sol.y[:, -1]
        steps_t.append(b)
        steps_x.append(x)
        status = 3 if nfev >= lim[0] else 0 if np.all(np.abs(x) <= lim[1]) else 4
        if status:
            ok, msg = False, (f"RK45 stopped after the hold interval ending at t = {b:.6g} s: {_limit_reason(status)}; "
                              "the loop does not survive the hold period (take a shorter sample_period)")
            break
    if ok and j < len(t_eval):
        ts.extend(t_eval[j:])
        xs.extend([x] * (len(t_eval) - j))
    stats = SolverStats("RK45", float(rtol), float(atol), int(nfev), 0, 0, ok, str(msg),
                        time.perf_counter() - start, "numpy")
    d = len(x0)
    return ControlledSolution(np.array(ts), np.array(xs).reshape(-1, d), np.array(steps_t),
                              np.array(steps_x).reshape(-1, d), stats, np.array(u_times),
                              np.array(u_held).reshape(-1, n))


# --------------------------------------------------------------------------- #
# 3. the uncompensated copy
# --------------------------------------------------------------------------- #
def integrate_uncompensated(nominal, actual, constraint, nom: NominalSolution, x0, t_span, t_eval, *,
                            rtol=DEFAULT_RTOL, atol=DEFAULT_ATOL, loop=None, actuators=None):
    """Integrate ``M_a q̈_a = Q_a + Qᶜ(t)`` apart, with DOP853 (W 5.2.16).

    Parameters
    ----------
    nominal, actual : Plant
    constraint : Constraint or None
    nom : NominalSolution
    x0 : ndarray (2n,)
        (q_a, q̇_a) at t0.
    t_span : (float, float)
    t_eval : ndarray (T,)
    rtol, atol : float
        Keyword-only.
    loop : CompiledLoop, optional
        Keyword-only; None: numpy.
    actuators : BoundActuators, optional
        Apply ``B sat(τᶜ)`` instead of Qᶜ (keyword-only; the kernels take them from ``loop``).

    Returns
    -------
    t_grid, x_grid, t_steps, x_steps : ndarray
        On the output grid and at every accepted step.
    stats : SolverStats
    """
    start = time.perf_counter()
    if loop is not None:
        T, X, _, grid, stats = _dop853(loop.uncompensated, np.array(x0, dtype=float), float(t_span[0]),
                                       float(t_span[1]), t_eval, rtol, atol, False, nom.dense, loop.model)
        keep = t_eval <= T[-1]
        return t_eval[keep], grid[keep], T, X, stats

    def fun(t, x):
        _, _, Qc, tau_c = _nominal_at(nominal, constraint, nom, t, actuators)
        return uncompensated_rhs(actual, t, x, Qc, actuators=actuators, tau_c=tau_c)

    sol = _solve_bounded(fun, (float(t_span[0]), float(t_span[1])), np.asarray(x0, dtype=float), "DOP853", rtol=rtol,
                         atol=atol, dense_output=True)
    stats = _stats("DOP853", rtol, atol, sol, time.perf_counter() - start, "compiled" if loop else "numpy")
    grid = t_eval[t_eval <= sol.t[-1]]
    return grid, sol.sol(grid).T, sol.t, sol.y.T, stats


# --------------------------------------------------------------------------- #
# the constrained system alone (public)
# --------------------------------------------------------------------------- #
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
    coordinates : tuple of str
    contact : (T, k) or None
        Beside Qᶜ, the contact forces (and moments) of the constraint's frame constraints in their frames
        (:func:`robustrack.plants.motion.contact_forces`); None when it has none.
    contact_labels : tuple of str
        The columns of ``contact``, with units.
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
    contact: np.ndarray | None = None
    contact_labels: tuple = field(default=())

    @property
    def success(self) -> bool:
        return self.solver.success

    @property
    def max_constraint_residual(self) -> float:
        """max over t and rows of |φ| or |ψ| (NaN if the constraint gives none)."""
        if self.residual is None or self.residual.size == 0:
            return float("nan")
        return float(np.max(np.abs(self.residual)))


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


def _solve_bounded(fun, t_span, y0, method, **options):
    """scipy's ``solve_ivp`` within :func:`_bounded`'s limits: a run beyond them ends as a failure (not scipy's
    "termination event" success) whose message names the limit and the time it was met."""
    from scipy.integrate import solve_ivp

    counted, within, status = _bounded(fun, y0, t_span)
    sol = solve_ivp(counted, t_span, y0, method=method, events=within, **options)
    if sol.status == 1:
        sol.success, sol.message = False, f"{method} stopped at t = {sol.t_events[0][0]:.6g}: {_limit_reason(status())}."
    return sol


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
    from ..compiled.loop import compiled_loop

    q0, qd0, t0, t1 = check_common(plant, constraint, q0, qd0, t_span, rtol, atol, method)
    n = plant.n
    t_eval = output_times(t_eval, n_points, t0, t1)
    # one checked evaluation at the start: clear errors before the solver runs
    constrained_motion(plant, constraint, q0, qd0, t0, nonideal=nonideal)
    loop = compiled_loop(plant, plant, constraint, jacobian=False) if nonideal is None else None
    y0 = np.concatenate([q0, qd0])
    if loop is not None and method == "DOP853":  # scipy's DOP853, compiled: no scipy.integrate, no Python per step
        from ..compiled.loop import no_dense

        T, _, _, grid, stats = _dop853(loop.nominal, y0, t0, t1, t_eval, rtol, atol, False, no_dense(2 * n),
                                       loop.model)
        keep = t_eval <= T[-1]
        return _constrained_result(plant, constraint, nonideal, t_eval[keep], grid[keep], stats, raise_on_failure,
                                   t0)
    guard = contextlib.ExitStack()
    if loop is not None:
        from ..compiled import systems as kernels
        from ..compiled.loop import no_dense

        model, placeholder, system = loop.model, no_dense(2 * n), loop.nominal
        check = guard.enter_context(_compiled_calls())

        def rhs(t, y):
            check()
            return kernels.system_rhs(system, t, np.ascontiguousarray(y), placeholder, model)
    else:
        def rhs(t, y):
            return np.concatenate([y[n:], nominal_motion(plant, constraint, y[:n], y[n:], t, nonideal=nonideal).qdd])

    start = time.perf_counter()
    with guard:
        sol = _solve_bounded(rhs, (t0, t1), y0, method, t_eval=t_eval, rtol=rtol, atol=atol)
    stats = _stats(method, rtol, atol, sol, time.perf_counter() - start, "compiled" if loop else "numpy")
    return _constrained_result(plant, constraint, nonideal, sol.t, sol.y.T, stats, raise_on_failure, t0)


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


def _constrained_result(plant, constraint, nonideal, t, y, stats, raise_on_failure, t0) -> ConstrainedResult:
    """The :class:`ConstrainedResult` of the states ``y`` (T × 2n) at ``t`` (raises if the solver failed and
    ``raise_on_failure``)."""
    n = plant.n
    q, qd = y[:, :n], y[:, n:]
    empty = np.zeros((0, n))
    motion = nominal_motion(plant, constraint, q, qd, t, nonideal=nonideal) if t.size else None
    try:
        residual = constraint.residual(q, qd, t) if t.size and constraint is not None else None
    except NotImplementedError:
        residual = None
    contact = contact_forces(plant, constraint, q, qd, t) if t.size and nonideal is None else None
    result = ConstrainedResult(
        t=t, q=q, qd=qd,
        qdd=motion.qdd if motion is not None else empty,
        Qc=motion.Qc if motion is not None else empty,
        residual=residual,
        accel_residual=motion.residual if motion is not None else np.zeros(0),
        solver=stats,
        coordinates=tuple(plant.coordinates),
        contact=None if contact is None else contact[1],
        contact_labels=() if contact is None else tuple(contact[0]),
    )
    say_limits(plant, t, q, qd, "the motion")
    if not stats.success and raise_on_failure:
        reached = float(t[-1]) if t.size else t0
        raise SolverError(f"{stats.method} failed at t = {reached:.6g}: {stats.message}"
                          + _conditioning(plant, constraint, q, qd, t), t_reached=reached, partial=result)
    return result


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
