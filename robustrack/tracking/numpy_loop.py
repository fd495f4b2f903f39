"""The numpy backend of the tracking loop: the three systems of W 5.2 on the numpy reference, in scipy.

:class:`NumpyLoop` is the :class:`~robustrack.tracking.backend.Loop` of the plants' and the constraint's
numpy methods (:mod:`robustrack.tracking.rhs`) and the compensator's ``__call__``: the oracle the compiled
backend (:class:`robustrack.compiled.backend.CompiledBackend`, the same methods) is tested against, and the
loop of anything without a compiled form (a user's Python callable, a compensator that is not built in, a
callable input matrix, a non-ideal work vector). Docs: docs/theory/nominal-actual.md.
"""

from __future__ import annotations

import time

import numpy as np

from .along import assumption_norms, control_force, controls, solution_points
from .integrate import (IMPLICIT, ControlledSolution, NominalSolution, SolverStats, diverging_message, hold_budget,
                        hold_edges, limit_reason, solve_bounded, solve_continuous, solve_scipy, stats_of)
from .rhs import (batched_jacobian, controlled_jacobian, controlled_rhs, has_exact_jacobian, nominal_motion,
                  nonfinite_source, uncompensated_rhs)

__all__ = ["NumpyLoop"]


class _OverBudget(Exception):
    """A hold interval spent its :func:`~robustrack.tracking.integrate.hold_budget`."""


class NumpyLoop:
    """The tracking loop on the numpy reference (:class:`~robustrack.tracking.backend.Loop`).

    Parameters
    ----------
    nominal, actual : Plant
    constraint : Constraint or None
    compensator : Compensator or None
        Required by :meth:`controlled` and :meth:`sampled` (None: u = 0).
    actuators : BoundActuators, optional
        Qᶜ and Qᵘ realized as ``B sat(τ)`` (:mod:`robustrack.tracking.actuators`).
    nonideal : callable, optional
        ``C(q, q̇, t)``, the non-ideal work vector of the constrained system alone (W 4.2.6;
        :meth:`constrained` only).
    """

    name = "numpy"

    def __init__(self, nominal, actual, constraint, compensator=None, actuators=None, nonideal=None):
        self.nominal_plant, self.actual, self.constraint = nominal, actual, constraint
        self.compensator, self.actuators, self.nonideal = compensator, actuators, nonideal

    def __repr__(self) -> str:
        return f"NumpyLoop({type(self.nominal_plant).__name__}, {type(self.actual).__name__})"

    def _at(self, nom, t):
        """(q, q̇, Qᶜ, τᶜ) of the nominal solution at t: what drives the actual systems (τᶜ None without
        actuators; with them Qᶜ = B τᶜ)."""
        n = self.nominal_plant.n
        y = nom(t)
        if self.actuators is None:
            return y[:n], y[n:], nominal_motion(self.nominal_plant, self.constraint, y[:n], y[n:], t).Qc, None
        Qc, tau_c, _ = self.actuators.nominal(y[:n], y[n:], t)
        return y[:n], y[n:], Qc, tau_c

    def _cached(self, nom):
        """``at(t)`` = :meth:`_at` remembering its last t (the numpy mirror of the kernels' ``nominal_cached``):
        an implicit step evaluates the right-hand side and its Jacobian at one t several times."""
        last = [None, None]

        def at(t):
            if last[0] != t:
                last[1] = self._at(nom, t)
                last[0] = t
            return last[1]

        return at

    # ------------------------------------------------------------------ #
    def nominal(self, y0, t0: float, t1: float, rtol: float, atol: float) -> NominalSolution:
        """``M q̈ = Q + Qᶜ`` (or ``Q + B τᶜ``) with scipy's DOP853 and its dense output (W 5.2.9–5.2.11).

        Parameters
        ----------
        y0 : ndarray (2n,)
        t0, t1 : float
        rtol, atol : float

        Returns
        -------
        NominalSolution
            Possibly partial (``stats.success`` False) if the solver failed.
        """
        plant, constraint, actuators = self.nominal_plant, self.constraint, self.actuators
        n = plant.n
        start = time.perf_counter()

        def rhs(t, y):
            return np.concatenate([y[n:], nominal_motion(plant, constraint, y[:n], y[n:], t,
                                                         actuators=actuators).qdd])

        sol = solve_bounded(rhs, (t0, t1), y0, "DOP853", rtol=rtol, atol=atol, dense_output=True)
        wall = time.perf_counter() - start
        parts = sol.sol.interpolants if sol.sol is not None else []
        F = np.array([p.F for p in parts]) if parts else np.zeros((0, 7, 2 * n))
        t = sol.sol.ts if sol.sol is not None else sol.t
        y = np.array([p.y_old for p in parts] + [sol.y[:, -1]]) if parts else sol.y.T
        return NominalSolution(np.asarray(t, dtype=float), y, F, stats_of("DOP853", rtol, atol, sol, wall, self.name))

    def constrained(self, y0, t0: float, t1: float, t_eval, method: str, rtol: float, atol: float):
        """The constrained system alone on ``t_eval``, with any scipy method (``nonideal`` included).

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
        plant, constraint, nonideal = self.nominal_plant, self.constraint, self.nonideal
        n = plant.n

        def rhs(t, y):
            return np.concatenate([y[n:], nominal_motion(plant, constraint, y[:n], y[n:], t, nonideal=nonideal).qdd])

        return solve_scipy(rhs, t0, t1, y0, method, t_eval, rtol, atol, self.name)

    def controlled(self, nom, x0, t_span, t_eval, *, method: str, rtol: float, atol: float,
                   progress=None) -> ControlledSolution:
        """The controlled actual system under continuous control, in scipy (W 5.2.17).

        The implicit methods take the plants' exact derivatives where they have them
        (:func:`~robustrack.tracking.rhs.has_exact_jacobian`), else a batched difference quotient.

        Parameters
        ----------
        nom : NominalSolution
        x0 : ndarray (2n + n_z,)
        t_span : (float, float)
        t_eval : ndarray (T,)
        method : str
        rtol, atol : float
        progress : callable, optional

        Returns
        -------
        ControlledSolution
        """
        nominal, actual, compensator, actuators = self.nominal_plant, self.actual, self.compensator, self.actuators
        at = self._cached(nom)
        culprit = [None]  # the function that made the right-hand side non-finite, said on failure

        def fun(t, x):
            q, qd, Qc, tau_c = at(t)
            out = controlled_rhs(nominal, actual, compensator, t, x, q, qd, Qc, actuators=actuators, tau_c=tau_c)
            if culprit[0] is None and not np.isfinite(out).all():  # say which function, at which state
                culprit[0] = nonfinite_source(nominal, actual, compensator, t, x, q, qd)
            return out

        jac = None
        if method in IMPLICIT and has_exact_jacobian(nominal, actual, actuators):
            def jac(t, x):  # the plants' exact derivatives (URDF: RNEA derivatives), not 2n + n_z more evaluations
                q, qd, Qc, _ = at(t)
                return controlled_jacobian(nominal, actual, compensator, t, x, q, qd, Qc)
        elif method in IMPLICIT:
            jac = batched_jacobian(fun)
        return solve_continuous(fun, jac, x0, t_span, t_eval, method, rtol, atol, progress, self.name,
                                culprit=lambda: culprit[0])

    def sampled(self, nom, x0, t_span, t_eval, *, sample_period: float, rtol: float, atol: float,
                progress=None, sensor=None) -> ControlledSolution:
        """Zero-order hold: u from the state at t_k = t0 + k h, held on [t_k, t_k+1); scipy's RK45 inside.

        With a ``sensor`` (:class:`robustrack.loop.Sensor`) u is the law's at the measurement
        (:meth:`~robustrack.loop.Sensor.measure`), applied ``delay`` samples later (zero before).

        Parameters
        ----------
        nom : NominalSolution
        x0 : ndarray (2n + n_z,)
        t_span : (float, float)
        t_eval : ndarray (T,)
        sample_period : float
        rtol, atol : float
        progress : callable, optional
        sensor : Sensor, optional

        Returns
        -------
        ControlledSolution
        """
        from scipy.integrate import solve_ivp

        from .integrate import held_failure_advice

        from .integrate import reporting

        nominal, actual, compensator, actuators = self.nominal_plant, self.actual, self.compensator, self.actuators
        edges = hold_edges(t_span, float(sample_period))
        start = time.perf_counter()
        n = nominal.n

        def fun(t, x, u):
            q, qd, Qc, tau_c = self._at(nom, t)
            return controlled_rhs(nominal, actual, compensator, t, x, q, qd, Qc, u_held=u, actuators=actuators,
                                  tau_c=tau_c)

        if progress is not None:
            fun = reporting(fun, progress, float(edges[-1]))
        x = np.asarray(x0, dtype=float)
        from ..compiled.loop import limits

        lim = limits(x)
        ts, xs, steps_t, steps_x, u_times, u_held = [], [], [edges[0]], [x], [], []
        if sensor is not None:
            D = sensor.delay_samples(float(sample_period))
            nu_q, nu_qd = sensor.draws(n, len(edges))
            v_start, seen, computed = nom(edges[0])[n:], None, []
        nfev, ok, msg = 0, True, "The solver successfully reached the end of the integration interval."
        j = 0
        for k in range(len(edges) - 1):
            a, b = edges[k], edges[k + 1]
            y = nom(a)
            if sensor is None:
                u = compensator(a, x[:n] - y[:n], x[n:2 * n] - y[n:], x[2 * n:])
            else:  # the law at the measurement, applied D samples later (nothing before the first arrives)
                seen = sensor.measure(k, x[:n], x[n:2 * n], float(sample_period), seen, nu_q[k], nu_qd[k], v_start)
                computed.append(compensator(a, seen[0] - y[:n], seen[1] - y[n:], x[2 * n:]))
                u = computed[k - D] if k >= D else np.zeros(n)
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
                ok, msg = False, diverging_message(float(a), float(b), spent[0], nom, float(b - a),
                                                   sensing=sensor is not None)
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
                ok, msg = False, (f"RK45 stopped after the hold interval ending at t = {b:.6g} s: "
                                  f"{limit_reason(status)}; {held_failure_advice(float(b - a), sensor)}")
                break
        if ok and j < len(t_eval):
            ts.extend(t_eval[j:])
            xs.extend([x] * (len(t_eval) - j))
        stats = SolverStats("RK45", float(rtol), float(atol), int(nfev), 0, 0, ok, str(msg),
                            time.perf_counter() - start, self.name)
        d = len(x0)
        return ControlledSolution(np.array(ts), np.array(xs).reshape(-1, d), np.array(steps_t),
                                  np.array(steps_x).reshape(-1, d), stats, np.array(u_times),
                                  np.array(u_held).reshape(-1, n))

    def uncompensated(self, nom, x0, t_span, t_eval, *, rtol: float, atol: float):
        """``M_a q̈_a = Q_a + Qᶜ(t)`` (or ``+ B sat(τᶜ)``) with scipy's DOP853, on its own clock (W 5.2.16).

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
        actual, actuators = self.actual, self.actuators
        start = time.perf_counter()

        def fun(t, x):
            _, _, Qc, tau_c = self._at(nom, t)
            return uncompensated_rhs(actual, t, x, Qc, actuators=actuators, tau_c=tau_c)

        sol = solve_bounded(fun, (float(t_span[0]), float(t_span[1])), np.asarray(x0, dtype=float), "DOP853",
                            rtol=rtol, atol=atol, dense_output=True)
        stats = stats_of("DOP853", rtol, atol, sol, time.perf_counter() - start, self.name)
        grid = t_eval[t_eval <= sol.t[-1]]
        return grid, sol.sol(grid).T, sol.t, sol.y.T, stats

    def measure(self, run, ctl):
        """‖e‖∞, ‖ė‖∞, ‖Qᵘ‖∞, ‖δq‖∞, ‖M̃_a‖∞ and GD's P at the points of a controlled solution, in numpy: what
        :func:`~robustrack.tracking.simulate.assemble` measures there, bit for bit (:mod:`~robustrack.tracking.along`).

        Parameters
        ----------
        run : NominalRun
            The nominal run ``ctl`` tracked.
        ctl : ControlledSolution
            Of :meth:`controlled` or :meth:`sampled`.

        Returns
        -------
        t : ndarray (N,)
            The output grid reached merged with every accepted step up to there.
        norms : ndarray (N, 6)
            The columns of :data:`~robustrack.tracking.along.MEASURED_COLUMNS` (P NaN without an integral gain).
        None
            When the solution has no point.
        """
        tf, xf, yf = solution_points(run, ctl)
        if not tf.size:
            return None
        nominal, compensator = self.nominal_plant, self.compensator
        n = nominal.n
        Qu = control_force(nominal, controls(compensator, ctl, tf, xf, yf, n), tf, xf)
        Qc = nominal_motion(nominal, self.constraint, yf[:, :n], yf[:, n:], tf).Qc
        dq, mt, P = assumption_norms(nominal, self.actual, compensator, tf, xf, yf, Qc)
        return tf, np.column_stack([np.abs(xf[:, :n] - yf[:, :n]).max(axis=-1),
                                    np.abs(xf[:, n:2 * n] - yf[:, n:]).max(axis=-1), np.abs(Qu).max(axis=-1), dq, mt,
                                    np.full(tf.size, np.nan) if P is None else P])
