"""The compiled backend of the tracking loop: the three systems of W 5.2 integrated on the kernels.

:class:`CompiledBackend` is the :class:`~robustrack.tracking.backend.Loop` of a
:class:`~robustrack.compiled.loop.CompiledLoop` (the kernels' record of a nominal plant, an actual plant, a
constraint and actuators) and a compensator's :class:`~robustrack.compiled.laws.Law`; its sibling on the
numpy reference is :class:`~robustrack.tracking.numpy_loop.NumpyLoop`, with the same methods and the same
results (docs/theory/nominal-actual.md):

- :meth:`~CompiledBackend.nominal` — ``M q̈ = Q + Qᶜ`` with scipy's DOP853 ported into the kernels
  (:mod:`~robustrack.compiled.dop853`), with its dense output (W 5.2.9–5.2.11);
- :meth:`~CompiledBackend.controlled` — the controlled actual system under continuous control (W 5.2.17):
  scipy's BDF ported into the kernels with a looser Newton tolerance (:mod:`~robustrack.compiled.bdf`) and
  the exact Jacobian, the whole horizon compiled; any other scipy method on the compiled right-hand side and
  Jacobian;
- :meth:`~CompiledBackend.sampled` — zero-order hold (:mod:`~robustrack.compiled.hold`);
- :meth:`~CompiledBackend.uncompensated` — ``M_a q̈_a = Q_a + Qᶜ(t)`` with the compiled DOP853 (W 5.2.16);
- :meth:`~CompiledBackend.constrained` — the constrained system alone (:func:`robustrack.tracking.simulate_constrained`).

Ctrl-C is held while a kernel runs (:func:`compiled_calls`) and raised between kernel calls.
"""

from __future__ import annotations

import contextlib
import signal
import threading
import time

import numpy as np

from ..tracking.integrate import (IMPLICIT, ControlledSolution, NominalSolution, SolverStats, diverging_message,
                                  held_failure_advice, hold_budget, hold_edges, limit_reason, solve_continuous,
                                  solve_scipy)
from .loop import limits, no_dense, tolerances

__all__ = ["CompiledBackend", "compiled_calls"]


@contextlib.contextmanager
def compiled_calls():
    """Hold Ctrl-C while compiled kernels run; raise it as KeyboardInterrupt where it is safe.

    A KeyboardInterrupt raised while numba boxes a kernel's result can crash the interpreter
    (segmentation fault; numba issue 2324). Inside this block SIGINT only records itself; the
    block yields a ``check()`` that raises KeyboardInterrupt when one was recorded (call it
    between kernel calls, e.g. in a Python right-hand side before it calls the kernel), and
    the block raises it on exit. Off the main thread, or under a handler of someone else's,
    nothing changes.

    Yields
    ------
    callable
        ``check()``.
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


def _dop_message(status, T) -> str:
    if status == 0:
        return "The solver successfully reached the end of the integration interval."
    why = limit_reason(status) or ("the step fell below the spacing of floats" if status == 1 else
                                   "the state or its derivative is not finite")
    return f"DOP853 stopped at t = {float(T[-1]):.6g}: {why}."


def _dop853(system, y0, t0, t1, t_out, rtol, atol, dense, nom, model):
    """:func:`~robustrack.compiled.dop853.dop853_run` within :func:`~robustrack.compiled.loop.limits`:
    ``(T, Y, F, X_out, stats)`` — the step times and states, the interpolants (if ``dense``), the states at
    ``t_out`` and its :class:`SolverStats`. A step size that rounds to 0 (ZeroDivisionError in the kernel) is
    status 1 at t0 (nothing kept but y0)."""
    from .dop853 import dop853_run

    start = time.perf_counter()
    with compiled_calls():
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


#: A compiled BDF's piece of the horizon that takes less wall time than this (s) is followed by one twice as long
#: (:meth:`CompiledBackend._bdf`): Ctrl-C and ``progress`` are honoured at least about every 2 × this.
_PIECE_S = 0.05


def _nominal_on_grid(run, loop) -> np.ndarray:
    """The nominal side [q, q̇, Qᶜ] at the run's output grid (``loop.nominal_along``), the same for every actual
    plant: computed at the first sample and kept with the run (every later sample of a campaign in this process
    reads it). ``loop``: any sample's compiled loop (the nominal side reads only the nominal plant and the
    constraint)."""
    return run.kept("_nominal_on_grid", lambda: loop.nominal_along(run.solution, run.t_eval))


class CompiledBackend:
    """The tracking loop on the compiled kernels (:class:`~robustrack.tracking.backend.Loop`).

    Parameters
    ----------
    loop : CompiledLoop
        :func:`~robustrack.compiled.loop.compiled_loop` of the nominal and actual plants, the constraint and
        the actuators (the actuators are taken from its model).
    law : Law, optional
        :func:`~robustrack.compiled.loop.kernel_law` of the compensator (required by :meth:`controlled`
        and :meth:`sampled`).
    compensator : Compensator, optional
        The compensator ``law`` was made from (None: u = 0).
    """

    name = "compiled"

    def __init__(self, loop, law=None, compensator=None):
        self.loop = loop
        self.law = law
        self.compensator = compensator

    def __repr__(self) -> str:
        return f"CompiledBackend(n={self.loop.n})"

    # ------------------------------------------------------------------ #
    def nominal(self, y0, t0: float, t1: float, rtol: float, atol: float) -> NominalSolution:
        """``M q̈ = Q + Qᶜ`` with the compiled DOP853 and its dense output (W 5.2.9–5.2.11).

        Parameters
        ----------
        y0 : ndarray (2n,)
        t0, t1 : float
        rtol, atol : float

        Returns
        -------
        NominalSolution
        """
        T, Y, F, _, stats = _dop853(self.loop.nominal, y0, t0, t1, np.zeros(0), rtol, atol, True,
                                    no_dense(y0.size), self.loop.model)
        return NominalSolution(T, Y, F, stats)

    def constrained(self, y0, t0: float, t1: float, t_eval, method: str, rtol: float, atol: float):
        """The constrained system alone on ``t_eval``: DOP853 compiled, any other method in scipy on the kernel.

        Parameters
        ----------
        y0 : ndarray (2n,)
        t0, t1 : float
        t_eval : ndarray (T,)
        method : str
        rtol, atol : float

        Returns
        -------
        t, y : ndarray
            The output times reached and the states there.
        stats : SolverStats
        """
        loop = self.loop
        placeholder = no_dense(y0.size)
        if method == "DOP853":  # scipy's DOP853, compiled: no scipy.integrate, no Python per step
            T, _, _, grid, stats = _dop853(loop.nominal, y0, t0, t1, t_eval, rtol, atol, False, placeholder,
                                           loop.model)
            keep = t_eval <= T[-1]
            return t_eval[keep], grid[keep], stats
        from . import systems as kernels
        from .loop import compile_later

        compile_later(loop, "scipy")
        model, system = loop.model, loop.nominal
        with compiled_calls() as check:
            def rhs(t, y):
                check()
                return kernels.system_rhs(system, t, np.ascontiguousarray(y), placeholder, model)

            return solve_scipy(rhs, t0, t1, y0, method, t_eval, rtol, atol, self.name)

    def controlled(self, nom, x0, t_span, t_eval, *, method: str, rtol: float, atol: float,
                   progress=None) -> ControlledSolution:
        """The controlled actual system under continuous control (W 5.2.17).

        BDF runs compiled (:meth:`_bdf`); any other method in scipy on the compiled right-hand side (and, for
        the implicit ones, the exact Jacobian).

        Parameters
        ----------
        nom : NominalSolution
        x0 : ndarray (2n + n_z,)
        t_span : (float, float)
        t_eval : ndarray (T,)
        method : str
        rtol, atol : float
        progress : callable, optional
            ``progress(t, t_end)`` about once a second.

        Returns
        -------
        ControlledSolution
        """
        loop, law = self.loop, self.law
        if method == "BDF":
            with compiled_calls() as check:
                return self._bdf(nom, x0, t_span, t_eval, rtol, atol, progress, check)
        from . import systems as kernels
        from .loop import compile_later

        compile_later(loop, "scipy")
        args = (nom.dense, loop.model, law, np.zeros(loop.n), False)
        system = loop.controlled
        with compiled_calls() as check:
            def fun(t, x):
                check()
                return kernels.controlled_rhs(system, t, np.ascontiguousarray(x), *args)  # scipy may pass a view

            def jacobian(t, x):
                check()
                return kernels.controlled_jac(system, t, np.ascontiguousarray(x), *args)

            return solve_continuous(fun, jacobian if method in IMPLICIT else None, x0, t_span, t_eval, method,
                                    rtol, atol, progress, self.name)

    def _bdf(self, nom, x0, t_span, t_eval, rtol, atol, progress, check):
        """scipy's BDF ported into the kernels (``bdf_init``, ``bdf_advance``): compiled steps.

        The horizon is walked in pieces, reporting ``progress`` and honouring Ctrl-C (``check``) between them — the
        steps are the same as in one call (never clipped at a piece): the first a 20th of the horizon, each next
        one twice as long while a piece takes less than :data:`_PIECE_S` (a campaign's short solve is a few calls,
        not 20, each of which costs a call of numba's dispatcher).
        """
        from .bdf import bdf_advance, bdf_init, bdf_scratch

        loop = self.loop
        args = (nom.dense, loop.model, self.law)
        tol = tolerances(rtol, atol)
        lim = limits(x0)
        t0, t1 = float(t_span[0]), float(t_span[1])
        start = time.perf_counter()
        try:
            state = bdf_init(loop.controlled, np.array(x0, dtype=float), t0, t1, tol, *args)
        except (ZeroDivisionError, FloatingPointError, OverflowError):
            from ..errors import SolverError

            raise SolverError(f"BDF could not start at t = {t0:.6g}: the controlled system's right-hand side there "
                              "overflows (no first step can be chosen) — a force of the actual plant (friction, "
                              "disturbance, a parameter) far beyond the plant's scale?", t0) from None
        info = state.info
        X = np.full((t_eval.size, len(x0)), np.nan)
        X[t_eval <= t0] = x0
        steps_t, steps_x = [np.array([t0])], [np.asarray(x0, dtype=float)[None]]
        steps_nominal = [np.full((1, 3 * loop.n), np.nan)]  # the start: not evaluated by a step
        piece = (t1 - t0) / 20
        scratch = bdf_scratch(loop.model, len(x0), loop.n)
        status = 0
        while info[0] < t1 and status == 0:
            check()
            began = time.perf_counter()
            try:
                _, TS, XS, NS, status = bdf_advance(loop.controlled, state, t1, min(info[0] + piece, t1), t_eval, tol,
                                                    *args, lim, scratch, X)
            except ZeroDivisionError:  # the compiled step size reached 0: a loop too stiff for float64
                status = 2
                break
            if time.perf_counter() - began < _PIECE_S:
                piece *= 2
            steps_t.append(TS)
            steps_x.append(XS)
            steps_nominal.append(NS)
            if progress is not None:
                progress(float(info[0]), t1)
        ok = status == 0
        reached = float(info[0])
        msg = ("The solver successfully reached the end of the integration interval." if ok else
               f"BDF stopped at t = {reached:.6g}: {limit_reason(status)}." if limit_reason(status) else
               f"Required step size is less than spacing between numbers (at t = {reached:.6g})" +
               (": the step size fell to 0 (the controlled loop is too stiff for float64: gains, Γ or 1/ε too large)."
                if status == 2 else "."))
        keep = t_eval <= reached
        stats = SolverStats("BDF", float(rtol), float(atol), int(info[4]), int(info[5]), int(info[6]), ok, msg,
                            time.perf_counter() - start, "compiled")
        return ControlledSolution(t_eval[keep], X[keep], np.concatenate(steps_t), np.concatenate(steps_x), stats,
                                  nominal_steps=np.concatenate(steps_nominal))

    def nominal_along(self, nom, t) -> np.ndarray:
        """The nominal side [q, q̇, Qᶜ] at the times ``t`` (:func:`~robustrack.compiled.along.nominal_along`).

        Parameters
        ----------
        nom : NominalSolution
        t : ndarray (T,)

        Returns
        -------
        ndarray (T, 3n)
        """
        from .along import nominal_along
        from .loop import compile_later

        compile_later(self.loop, "along")
        return nominal_along(np.ascontiguousarray(t, dtype=float), nom.dense, self.loop.model)

    def measure_along(self, t, x, nominal, u, Ki) -> np.ndarray:
        """‖e‖∞, ‖ė‖∞, ‖Qᵘ‖∞, ‖δq‖∞, ‖M̃_a‖∞ and GD's P at the points (t, x) of a controlled solution
        (:func:`~robustrack.compiled.along.measure_along`).

        Parameters
        ----------
        t : ndarray (N,)
        x : ndarray (N, 2n + n_z)
        nominal : ndarray (N, 3n)
            The nominal side there (:meth:`nominal_along`).
        u : ndarray (N, n) or None
            The held u of sampled control; None: the law's.
        Ki : float or None
            GD's integral gain (None: P is not measured).

        Returns
        -------
        ndarray (N, 6)
        """
        from .along import measure_along
        from .loop import compile_later

        compile_later(self.loop, "along")
        c = np.ascontiguousarray
        u = np.zeros((0, self.loop.n)) if u is None else c(u, dtype=float)
        return measure_along(c(t, dtype=float), c(x, dtype=float), c(nominal, dtype=float), u, self.loop.model,
                             self.law, np.nan if Ki is None else float(Ki))

    def measure(self, run, ctl):
        """(t, norms) at every point of the controlled solution, measured on compiled kernels (:meth:`measure_along`:
        columns ‖e‖∞, ‖ė‖∞, ‖Qᵘ‖∞, ‖δq‖∞, ‖M̃_a‖∞, GD's P); None when the solve produced nothing.

        The points are those of :func:`~robustrack.tracking.along.solution_points` (the output grid reached and
        every accepted step up to there; a step on a grid time counted twice, which no maximum notices). The
        nominal side at the grid is the run's (:func:`_nominal_on_grid`, once per nominal run); at the steps it is
        what the compiled BDF's right-hand side evaluated there (``ControlledSolution.nominal_steps``), else
        evaluated here.

        Parameters
        ----------
        run : NominalRun
            The nominal run ``ctl`` tracked.
        ctl : ControlledSolution

        Returns
        -------
        (ndarray (N,), ndarray (N, 6)) or None
        """
        from ..tracking.along import controls
        from ..tracking.assess import dropped_term_gain

        if not ctl.t.size:
            return None
        pb = run.problem
        n = pb.n
        nom = run.solution
        reached = ctl.t[-1]
        inside = ctl.t_steps <= reached
        ts, xs = ctl.t_steps[inside], ctl.x_steps[inside]
        tg, xg = ctl.t, ctl.x
        Ki = dropped_term_gain(pb.compensator)  # GD's K_i, GD-bar's 0 (P = ‖(I − M̃_a)e‖∞)
        held = ctl.u_times is not None and pb.compensator is not None

        def u_at(t, x):  # the held u of sampled control (else: the law, in the kernel)
            return controls(pb.compensator, ctl, t, x, None, n) if held else None

        ys = None if ctl.nominal_steps is None else ctl.nominal_steps[inside]
        if ys is None:
            ys = self.nominal_along(nom, ts)
        else:  # what the integrator evaluated at its steps; the rest (the start) here
            missing = np.isnan(ys[:, 0])
            ys[missing] = self.nominal_along(nom, ts[missing])
        grid = self.measure_along(tg, xg, _nominal_on_grid(run, self)[: tg.size], u_at(tg, xg), Ki)
        steps = self.measure_along(ts, xs, ys, u_at(ts, xs), Ki)
        return np.concatenate([tg, ts]), np.concatenate([grid, steps])

    def sampled(self, nom, x0, t_span, t_eval, *, sample_period: float, rtol: float, atol: float,
                progress=None, sensor=None) -> ControlledSolution:
        """Zero-order hold: u from the state at each edge t_k, held on [t_k, t_k+1); Dormand–Prince 5(4) inside.

        Parameters
        ----------
        nom : NominalSolution
        x0 : ndarray (2n + n_z,)
        t_span : (float, float)
        t_eval : ndarray (T,)
        sample_period : float
            The hold period h (the hold instants: :func:`~robustrack.tracking.integrate.hold_edges`).
        rtol, atol : float
        progress : callable, optional
        sensor : Sensor, optional
            What the law sees at each edge (:class:`robustrack.loop.Sensor`); None: the state.

        Returns
        -------
        ControlledSolution
        """
        from .hold import sensor_code

        h = float(sample_period)
        edges = hold_edges(t_span, h)
        t1 = t_span[1]
        n_int = edges.size - 1
        start = time.perf_counter()
        code = sensor_code(sensor, self.loop.n, h, n_int + 1, nom(edges[0])[self.loop.n:])
        with compiled_calls() as check:
            X, U, XE, nfev, fail, status = self._held(nom, np.array(x0, dtype=float), edges, t_eval, rtol, atol,
                                                      progress, check, code)
        ok = fail < 0
        reached = t1 if ok else float(edges[fail])
        msg = ("The solver successfully reached the end of the integration interval." if ok else
               status if isinstance(status, str) else
               "the controlled system's motion is not defined in that hold interval (or the step fell below 1e-14)"
               if limit_reason(status) is None else
               f"stopped in that hold interval: {limit_reason(status)}; "
               f"{held_failure_advice(h, sensor)}")
        keep_int = n_int if ok else fail
        T, X = t_eval[t_eval <= reached], X[: int(np.sum(t_eval <= reached))]
        stats = SolverStats("RK45", float(rtol), float(atol), int(nfev), 0, 0, ok, msg,
                            time.perf_counter() - start, "compiled")
        return ControlledSolution(T, X, edges[: keep_int + 1], XE[: keep_int + 1], stats,
                                  edges[:keep_int], U[:keep_int])

    def _held(self, nom, x0, edges, t_eval, rtol, atol, progress, check, code, pieces: int = 20):
        """:func:`~robustrack.compiled.hold.sampled_run` over the hold intervals in ``pieces`` calls, reporting
        ``progress`` and honouring Ctrl-C (``check``) between them; the step size and the evaluation count carry
        over, so the steps are those of one call. Each call may spend at most :func:`hold_budget` of its stretch
        (the evaluation limit the kernel checks between steps): a call that reaches it while the run's own limit
        is not reached stops the run as diverging (status: the message). Returns (X at t_eval, U, X at the edges,
        nfev, failed interval or -1, status)."""
        from .hold import sampled_run

        loop, law = self.loop, self.law
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
                                                             loop.model, law, (allowed, max_state), h, code, k0)
            nfev += used
            if fail >= 0 and status == 3 and allowed < max_nfev - (nfev - used):  # the stretch's budget, not the run's
                status = diverging_message(float(edges[k0]), float(edges[k1]), used, nom,
                                           float(edges[1] - edges[0]), sensing=code.mode >= 0)
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

    def uncompensated(self, nom, x0, t_span, t_eval, *, rtol: float, atol: float):
        """``M_a q̈_a = Q_a + Qᶜ(t)`` with the compiled DOP853, on its own clock (W 5.2.16).

        Parameters
        ----------
        nom : NominalSolution
        x0 : ndarray (2n,)
        t_span : (float, float)
        t_eval : ndarray (T,)
        rtol, atol : float

        Returns
        -------
        t_grid, x_grid, t_steps, x_steps : ndarray
            On the output grid and at every accepted step.
        stats : SolverStats
        """
        T, X, _, grid, stats = _dop853(self.loop.uncompensated, np.array(x0, dtype=float), float(t_span[0]),
                                       float(t_span[1]), t_eval, rtol, atol, False, nom.dense, self.loop.model)
        keep = t_eval <= T[-1]
        return t_eval[keep], grid[keep], T, X, stats

