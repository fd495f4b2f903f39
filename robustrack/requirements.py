"""Control requirements as objects: a joint trajectory or a task-space path, and a consistent start.

A requirement is a holonomic constraint (W 5.2.8: the control requirements stacked with the physical
constraints; docs/theory/fundamental-equation.md) that the nominal controller Qᶜ enforces:

:class:`JointTrajectory`
    q(t) = q_d(t), i.e. φ = q − q_d(t) = 0. From sympy expressions in t (a :class:`~robustrack.constraints.Holonomic`,
    compiled), or from callables q_d, q̇_d, q̈_d (A = I, b = q̈_d(t), numpy).
:class:`TaskSpaceTrajectory`
    fk(q) = x_d(t): an end-effector path through forward kinematics, φ = fk(q) − x_d(t) = 0 with A = ∂fk/∂q
    (a :class:`~robustrack.constraints.Holonomic` built by differentiating fk and x_d with sympy; compiled).

Both take an optional :class:`~robustrack.constraints.Stabilization` (second order: φ̈ + 2ξω φ̇ + ω² φ = 0,
docs/theory/stabilization.md), so a start off the path is pulled onto it instead of drifting. Both ARE constraints: pass them
to :class:`~robustrack.tracking.TrackingProblem`, or :func:`~robustrack.constraints.stack` them with
physical constraints.

:func:`consistent_initial_state` projects a guess onto φ(q, t0) = 0 and A q̇ = −∂φ/∂t (ψ = 0 for velocity
rows): Gauss–Newton steps of least norm, q ← q − A⁺ φ, then q̇ ← q̇ − A⁺ φ̇ — the initial state the
unstabilized fundamental equation needs. :func:`task_error` / :func:`max_abs_task_error` measure a
run in task space (m, for a position path).
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from ._lazy import sympy as sp
from ._lambdify import lambdify
from .constraints import Constraint, FunctionConstraint, Holonomic, Stabilization
from .errors import ConstraintError, InitialStateError

__all__ = ["JointTrajectory", "TaskSpaceTrajectory", "consistent_initial_state", "task_error",
           "max_abs_task_error"]


def _coordinate_symbols(names, n_default=None):
    if isinstance(names, int) or names is None:
        if names is None and n_default is None:
            raise ConstraintError("`names` (the plant's coordinate names, e.g. plant.coordinates) is required.")
        return tuple(sp.Symbol(f"q{i + 1}", real=True) for i in range(names or n_default))
    if isinstance(names, str) or not all(isinstance(x, (str, sp.Symbol)) for x in names):
        raise ConstraintError(f"`names` must list the coordinate names (str or sympy Symbols); got {names!r}.")
    return tuple(x if isinstance(x, sp.Symbol) else sp.Symbol(x, real=True) for x in names)


def _time_function(fn, t, name: str, size: int) -> np.ndarray:
    """``fn(t)`` for a scalar or array t → shape t.shape + (size,)."""
    t = np.asarray(t, dtype=float)
    values = [np.asarray(fn(float(ti)), dtype=float).reshape(-1) for ti in t.reshape(-1)]
    bad = [v.shape for v in values if v.shape != (size,)]
    if bad:
        raise ConstraintError(f"`{name}(t)` must return {size} numbers; got shape {bad[0]}.")
    return np.array(values).reshape(t.shape + (size,))


class _Requirement(Constraint):
    """A constraint that delegates to the one it builds (``self.inner``)."""

    inner: Constraint

    def matrices(self, q, qd, t=0.0):
        """A, b of φ̈ = 0 (stabilized if asked), shapes ``(..., m, n)``, ``(..., m)``."""
        return self.inner.matrices(q, qd, t)

    def residual(self, q, qd=None, t=0.0):
        """φ, shape ``(..., m)``."""
        return self.inner.residual(q, qd, t)

    def velocity_residual(self, q, qd, t=0.0):
        """φ̇, shape ``(..., m)``."""
        return self.inner.velocity_residual(q, qd, t)

    @property
    def holonomic_rows(self):
        """All True: a trajectory is a position-level requirement."""
        return np.ones(self.m, dtype=bool)

    def row_units(self, plant) -> tuple:
        """The unit of each row of φ (figures, reports and metrics label the residual with them).

        Parameters
        ----------
        plant : Plant
            The plant the requirement constrains (its ``coordinate_kinds``).

        Returns
        -------
        tuple of str
        """
        raise NotImplementedError

    def codegen(self):
        """The inner constraint's symbolic form (None for callables: the loop runs on numpy)."""
        codegen = getattr(self.inner, "codegen", None)
        return codegen() if callable(codegen) else None


class JointTrajectory(_Requirement):
    """Follow a joint-space reference, q(t) = q_d(t): φ = q − q_d(t) (W 5.2.8 requirements).

    Parameters
    ----------
    q_d : sequence of sympy expressions in ``t``, or callable
        The reference, one entry per coordinate. A callable ``q_d(t) -> (n,)`` needs ``qd_d`` and ``qdd_d``.
    names : sequence of str, optional
        The coordinate names (``plant.coordinates``); default ``q1 … qn``.
    t : sympy Symbol, optional
        The time symbol of sympy ``q_d`` (default ``Symbol("t")``, matched by name).
    qd_d, qdd_d : callable, optional
        ``q̇_d(t)``, ``q̈_d(t)`` for a callable ``q_d`` (keyword-only).
    stabilization : Stabilization, optional
        ``Stabilization.second_order(xi, omega)``: a start off the reference converges to it.

    Examples
    --------
    >>> import sympy as sp
    >>> t = sp.Symbol("t")
    >>> ref = JointTrajectory([sp.sin(t), 0.5], names=["a", "b"])
    >>> ref.residual([0.0, 0.5], None, 0.0).tolist(), ref.desired(0.0)[1].tolist()
    ([0.0, 0.0], [1.0, 0.0])
    """

    def __init__(self, q_d, names=None, t=None, *, qd_d: Callable | None = None, qdd_d: Callable | None = None,
                 stabilization: Stabilization | None = None):
        if callable(q_d) and not isinstance(q_d, sp.Basic):
            if not callable(qd_d) or not callable(qdd_d):
                raise ConstraintError("A callable `q_d` needs its derivatives: give `qd_d` and `qdd_d` (callables of t).")
            n = np.asarray(q_d(0.0), dtype=float).reshape(-1).size
            self.q = _coordinate_symbols(names, n)
            if len(self.q) != n:
                raise ConstraintError(f"`q_d(0)` has {n} entries but `names` lists {len(self.q)}.")
            self._fns = (q_d, qd_d, qdd_d)
            self.inner = self._numeric(stabilization)
        else:
            rows = list(q_d) if not isinstance(q_d, sp.MatrixBase) else list(q_d)
            self.q = _coordinate_symbols(names, len(rows))
            if len(rows) != len(self.q):
                raise ConstraintError(f"`q_d` has {len(rows)} entries but `names` lists {len(self.q)} coordinates.")
            tt = sp.Symbol("t", real=True) if t is None else t
            exprs = [sp.sympify(r) for r in rows]
            tt = _time_by_name(exprs, tt)
            stray = set().union(*(e.free_symbols for e in exprs)) - {tt}
            if stray:
                raise ConstraintError(f"`q_d` must be expressions in the time `{tt}` alone; it also contains "
                                      f"{sorted(map(str, stray))}.")
            self.t = tt
            self.expr_d = sp.Matrix(exprs)
            self._f_desired = lambdify(tt, [list(self.expr_d), list(self.expr_d.diff(tt)),
                                              list(self.expr_d.diff(tt, 2))], modules="numpy")
            self.inner = Holonomic([qi - e for qi, e in zip(self.q, exprs)], list(self.q), tt,
                                   stabilization=stabilization)
        self.n = self.m = len(self.q)
        self.stabilization = stabilization

    def _numeric(self, stabilization):
        n = len(self.q)
        if stabilization is not None and (not isinstance(stabilization, Stabilization) or stabilization.order != 2):
            raise ConstraintError("A joint trajectory is stabilized at second order: Stabilization.second_order(xi, omega).")

        def A(q, qd, t):
            return np.broadcast_to(np.eye(n), np.shape(q)[:-1] + (n, n))

        def b(q, qd, t):
            qd_, vd, ad = self.desired(t)
            out = ad + 0 * q
            if stabilization is not None:
                xi, om = stabilization.xi, stabilization.omega
                out = out - 2 * xi * om * (qd - vd) - om**2 * (q - qd_)
            return out

        return FunctionConstraint(A, b, n, n, residual=lambda q, qd, t: q - self.desired(t)[0])

    residual_symbol = "φ = q − q_d(t)"
    residual_description = "joint reference φ = q − q_d(t)"

    def row_units(self, plant) -> tuple:
        """Each row of φ = q − q_d(t) in its coordinate's unit (rad for an angle, m for a length)."""
        from .plants.units import coordinate_units

        return coordinate_units(plant).per_coordinate("q")

    def desired(self, t):
        """(q_d, q̇_d, q̈_d) at ``t``, each shape ``t.shape + (n,)``.

        Parameters
        ----------
        t : float or array_like

        Returns
        -------
        tuple of ndarray
        """
        n = len(self.q)
        if hasattr(self, "_fns"):
            return tuple(_time_function(f, t, name, n) for f, name in zip(self._fns, ("q_d", "qd_d", "qdd_d")))
        t = np.asarray(t, dtype=float)
        return tuple(np.stack([np.broadcast_to(np.asarray(v, dtype=float), t.shape) for v in vals], axis=-1)
                     for vals in self._f_desired(t))

    def velocity_residual(self, q, qd, t=0.0):
        """φ̇ = q̇ − q̇_d(t)."""
        if hasattr(self, "_fns"):
            return np.asarray(qd, dtype=float) - self.desired(t)[1]
        return self.inner.velocity_residual(q, qd, t)

    def __repr__(self) -> str:
        return f"JointTrajectory(n={self.n}, stabilization={self.stabilization})"


def _time_by_name(exprs, t):
    """The time symbol as it appears in ``exprs``: a Symbol named like ``t`` whatever its assumptions."""
    found = {s for e in exprs for s in e.free_symbols if s.name == t.name}
    if len(found) > 1:
        raise ConstraintError(f"Two different symbols are named `{t.name}` (different assumptions); use one.")
    return found.pop() if found else t


class TaskSpaceTrajectory(_Requirement):
    """Follow a task-space path through forward kinematics, fk(q) = x_d(t) (W 5.2.8 requirements).

    φ = fk(q) − x_d(t) is differentiated twice by sympy (A = ∂fk/∂q): a
    :class:`~robustrack.constraints.Holonomic`, so the tracking loop compiles it.

    Parameters
    ----------
    fk : callable or sequence of sympy expressions
        The forward kinematics of the point that must follow the path: ``fk(q)`` of a tuple of
        sympy Symbols (use ``sympy.sin``, not ``numpy.sin``), or expressions in the Symbols of ``names``.
    x_d : sequence of sympy expressions in ``t``
        The path, one entry per entry of fk (in the same unit: m for a position).
    names : sequence of str
        The coordinate names (``plant.coordinates``).
    t : sympy Symbol, optional
        The time symbol of ``x_d`` (default ``Symbol("t")``, matched by name).
    stabilization : Stabilization, optional
        ``Stabilization.second_order(xi, omega)``.
    unit : str, default "m"
        The unit of fk and x_d (labels of the task-space figure and metric).

    Attributes
    ----------
    fk_expr : sympy.Matrix
        fk(q).

    Examples
    --------
    >>> import sympy as sp
    >>> t = sp.Symbol("t")
    >>> tip = TaskSpaceTrajectory(lambda q: [sp.cos(q[0]), sp.sin(q[0])], [sp.cos(t), sp.sin(t)], names=["th"])
    >>> tip.task_position([0.0]).tolist(), tip.residual([0.3], None, 0.3).round(12).tolist()
    ([1.0, 0.0], [0.0, 0.0])
    """

    def __init__(self, fk, x_d, names, t=None, *, stabilization: Stabilization | None = None, unit: str = "m"):
        self.q = _coordinate_symbols(names)
        self.unit = str(unit)
        if callable(fk) and not isinstance(fk, sp.Basic):
            try:
                fk = fk(self.q)
            except Exception as exc:  # noqa: BLE001 - the user's fk failed on symbols
                raise ConstraintError(f"Calling `fk` with sympy symbols failed ({type(exc).__name__}: {exc}); build it "
                                      "with sympy functions (sympy.sin, not numpy.sin).") from None
        fk = sp.Matrix([sp.sympify(e) for e in (fk if not isinstance(fk, sp.MatrixBase) else list(fk))])
        xd = [sp.sympify(e) for e in x_d]
        if len(xd) != fk.shape[0]:
            raise ConstraintError(f"`x_d` has {len(xd)} entries but `fk` gives {fk.shape[0]}.")
        tt = _time_by_name(xd, sp.Symbol("t", real=True) if t is None else t)
        stray = set().union(*(e.free_symbols for e in xd)) - {tt}
        if stray:
            raise ConstraintError(f"`x_d` must be expressions in the time `{tt}` alone; it also contains "
                                  f"{sorted(map(str, stray))}.")
        by_name = {s.name: s for s in self.q}
        fk = fk.xreplace({s: by_name[s.name] for s in fk.free_symbols if s.name in by_name and s not in self.q})
        extra = fk.free_symbols - set(self.q)
        if extra:
            raise ConstraintError(f"`fk` contains {sorted(map(str, extra))}, which are not the coordinates "
                                  f"{[s.name for s in self.q]}; put parameter values in as numbers.")
        self.t, self.fk_expr, self.x_d_expr = tt, fk, sp.Matrix(xd)
        self.inner = Holonomic([f - x for f, x in zip(fk, xd)], list(self.q), tt, stabilization=stabilization)
        self.n, self.m = len(self.q), fk.shape[0]
        self.stabilization = stabilization
        self._f_fk = lambdify(list(self.q), list(fk), modules="numpy")
        self._f_xd = lambdify(tt, list(self.x_d_expr), modules="numpy")

    def task_position(self, q) -> np.ndarray:
        """fk(q), shape ``(..., k)``.

        Parameters
        ----------
        q : array_like (..., n)

        Returns
        -------
        ndarray
        """
        q = np.asarray(q, dtype=float)
        vals = self._f_fk(*(q[..., i] for i in range(self.n)))
        return np.stack([np.broadcast_to(np.asarray(v, dtype=float), q.shape[:-1]) for v in vals], axis=-1)

    def desired(self, t) -> np.ndarray:
        """x_d(t), shape ``t.shape + (k,)``.

        Parameters
        ----------
        t : float or array_like

        Returns
        -------
        ndarray
        """
        t = np.asarray(t, dtype=float)
        return np.stack([np.broadcast_to(np.asarray(v, dtype=float), t.shape) for v in self._f_xd(t)], axis=-1)

    residual_symbol = "φ = fk(q) − x_d(t)"
    residual_description = "task-space path φ = fk(q) − x_d(t)"

    def row_units(self, plant=None) -> tuple:
        """Each row of φ = fk(q) − x_d(t) in the task's ``unit`` (m for a position)."""
        return (self.unit,) * self.m

    def jacobian(self, q) -> np.ndarray:
        """J = ∂fk/∂q at the states ``q`` (..., n): sympy's derivative of fk, evaluated; shape ``(..., k, n)``."""
        if not hasattr(self, "_f_jac"):
            self._f_jac = lambdify(list(self.q), self.fk_expr.jacobian(list(self.q)).tolist(), modules="numpy")
        q = np.asarray(q, dtype=float)
        rows = self._f_jac(*(q[..., i] for i in range(self.n)))
        return np.stack([np.stack([np.broadcast_to(np.asarray(v, dtype=float), q.shape[:-1]) for v in row], axis=-1)
                         for row in rows], axis=-2)

    def mapped_bound(self, q, bound) -> np.ndarray:
        """A joint-space bound ‖e‖∞ ≤ b mapped to task space along a motion q(t), shape ``q.shape[:-1]``.

        With e = q_c − q, Taylor's theorem per task component i gives
        |fk_i(q + e) − fk_i(q)| ≤ Σ_j |J_ij(q)| b + ½ Σ_jk |∂²fk_i/∂q_j∂q_k (q)| b² + O(b³):
        the ∞-norm over the task's components (the largest row sum of |J|, the induced ∞-norm
        ‖J‖∞, times b), with the second-order term evaluated on the motion. Exact to second
        order in b; the remainder is third order (b ~ 1e-3 rad: ~1e-9 of the first term).

        Parameters
        ----------
        q : array_like (..., n)
            The motion the bound is about (the nominal one: e = q_c − q).
        bound : float
            b, the bound on ‖e‖∞ in the coordinates' units.

        Returns
        -------
        ndarray
            max_i of the right-hand side at each state, in the task's ``unit``.
        """
        if not hasattr(self, "_f_hess"):
            q_sym = list(self.q)
            self._f_hess = lambdify(q_sym, [sp.hessian(f, q_sym).tolist() for f in self.fk_expr], modules="numpy")
        q = np.asarray(q, dtype=float)
        shape = q.shape[:-1]
        J = np.abs(self.jacobian(q)).sum(axis=-1)                       # (..., k) row sums
        H = np.array([[[np.broadcast_to(np.asarray(v, dtype=float), shape) for v in row] for row in Hi]
                      for Hi in self._f_hess(*(q[..., i] for i in range(self.n)))])     # (k, n, n, ...)
        second = np.moveaxis(np.abs(H).sum(axis=(1, 2)), 0, -1)          # (..., k)
        b = float(bound)
        return np.max(J * b + 0.5 * second * b**2, axis=-1)

    def __repr__(self) -> str:
        return f"TaskSpaceTrajectory(fk={list(self.fk_expr)}, x_d={list(self.x_d_expr)})"


def consistent_initial_state(constraint: Constraint, q_guess, qd_guess, t: float = 0.0, *, tol: float = 1e-12,
                             max_iter: int = 50):
    """The state nearest the guess (in least-norm steps) that satisfies the constraint at ``t``.

    Positions: Gauss–Newton on the holonomic rows, q ← q − A_h⁺ φ(q, t), until ‖φ‖∞ ≤ tol.
    Velocities: q̇ ← q̇ − A⁺ r(q̇) with r = (φ̇ for holonomic rows, ψ for velocity rows), whose
    Jacobian in q̇ is A; for holonomic rows that is A q̇ = −∂φ/∂t in one step.

    Parameters
    ----------
    constraint : Constraint
        One whose rows are known (:class:`~robustrack.constraints.Holonomic`, ``Nonholonomic``, a
        requirement of this module, or a ``stack`` of them).
    q_guess, qd_guess : array_like (n,)
    t : float, default 0
    tol : float, default 1e-12
        On ‖φ‖∞ and ‖φ̇‖∞ in the constraint's own units (rounding of an O(1) φ is ~1e-16).
    max_iter : int, default 50

    Returns
    -------
    (ndarray, ndarray)
        q0, q̇0.

    Raises
    ------
    InitialStateError
        The iteration did not reach ``tol`` (a path out of reach, a singular configuration): the
        message gives the residual reached.
    ConstraintError
        The constraint does not say which rows are holonomic (a ``FunctionConstraint``).
    """
    rows = constraint.holonomic_rows
    if rows is None:
        raise ConstraintError(f"consistent_initial_state needs a constraint that knows its rows (Holonomic, "
                              f"Nonholonomic, a requirement or a stack of them); got {type(constraint).__name__}.")
    q = np.array(q_guess, dtype=float).reshape(-1)
    qd = np.array(qd_guess, dtype=float).reshape(-1)
    if q.shape != (constraint.n,) or qd.shape != (constraint.n,):
        raise ConstraintError(f"`q_guess` and `qd_guess` must have {constraint.n} entries; got {q.shape}, {qd.shape}.")
    t = float(t)
    if rows.any():
        q = _gauss_newton(lambda x: constraint.residual(x, qd, t)[rows],
                          lambda x: constraint.matrices(x, qd, t)[0][rows], q, tol, max_iter, "positions (φ = 0)")
    qd = _gauss_newton(lambda v: constraint.velocity_residual(q, v, t), lambda v: constraint.matrices(q, v, t)[0],
                       qd, tol, max_iter, "velocities (φ̇ = 0, ψ = 0)")
    return q, qd


def _gauss_newton(residual, jacobian, x, tol, max_iter, what):
    r = np.asarray(residual(x))
    for _ in range(max_iter):
        if np.max(np.abs(r)) <= tol:
            return x
        step = np.linalg.lstsq(np.asarray(jacobian(x)), r, rcond=None)[0]  # least norm (SVD): A⁺ r
        x = x - step
        r = np.asarray(residual(x))
    if np.max(np.abs(r)) <= tol:
        return x
    raise InitialStateError(f"consistent_initial_state: the {what} did not converge in {max_iter} steps "
                            f"(‖residual‖∞ = {np.max(np.abs(r)):.3g} > tol = {tol:g}); start from a guess nearer "
                            "the constraint, or check that it can be met (a path out of reach, a singular pose).")


def task_error(result, requirement: TaskSpaceTrajectory, *, which: str = "controlled") -> np.ndarray:
    """fk(q(t)) − x_d(t) of a run, shape (T, k) (m for a position path).

    Parameters
    ----------
    result : TrackingResult
    requirement : TaskSpaceTrajectory
    which : {"controlled", "nominal", "uncompensated"}
        The controlled actual system q_c (default), the nominal q, or the uncompensated q_a.

    Returns
    -------
    ndarray (T, k)
    """
    if not isinstance(requirement, TaskSpaceTrajectory):
        raise ConstraintError(f"`requirement` must be a TaskSpaceTrajectory; got {type(requirement).__name__}.")
    field = {"controlled": "qc", "nominal": "q", "uncompensated": "qa"}
    if which not in field:
        raise ConstraintError(f"`which` must be one of {sorted(field)}; got {which!r}.")
    q = getattr(result, field[which])
    if q is None:
        raise ConstraintError(f"This run has no {which} system (uncompensated=False?).")
    return requirement.task_position(q) - requirement.desired(result.t)


def max_abs_task_error(result, requirement: TaskSpaceTrajectory, *, which: str = "controlled") -> float:
    """max over time and components of |fk(q(t)) − x_d(t)| (m for a position path).

    Parameters
    ----------
    result : TrackingResult
    requirement : TaskSpaceTrajectory
    which : {"controlled", "nominal", "uncompensated"}

    Returns
    -------
    float
    """
    return float(np.max(np.abs(task_error(result, requirement, which=which))))
