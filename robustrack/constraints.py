"""Constraint objects: A(q, q̇, t) q̈ = b(q, q̇, t) (THEORY §1 step 2, §4).

A constraint gives its acceleration form through :meth:`Constraint.matrices`
and its raw residuals (φ for holonomic, ψ for nonholonomic rows) through
:meth:`Constraint.residual`, for reporting. All arrays carry optional leading
batch axes: ``q, qd: (..., n)`` → ``A: (..., m, n)``, ``b: (..., m)``.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from .errors import ConstraintError

__all__ = ["Constraint", "FunctionConstraint"]


class Constraint:
    """Base class: ``m`` rows on ``n`` coordinates.

    Subclasses implement :meth:`matrices` and, where they can, :meth:`residual`.
    """

    n: int
    m: int

    def matrices(self, q, qd, t=0.0) -> tuple[np.ndarray, np.ndarray]:
        """Return ``(A, b)`` with shapes ``(..., m, n)`` and ``(..., m)``."""
        raise NotImplementedError

    def residual(self, q, qd, t=0.0) -> np.ndarray:
        """Raw constraint values (φ or ψ per row), shape ``(..., m)``; 0 when satisfied."""
        raise NotImplementedError(f"{type(self).__name__} does not define raw residuals.")


class FunctionConstraint(Constraint):
    """A constraint given directly by user callables for A and b.

    Parameters
    ----------
    A, b : callable
        ``A(q, qd, t) -> (..., m, n)``, ``b(q, qd, t) -> (..., m)``.
    n, m : int
        Number of coordinates and of constraint rows.
    residual : callable, optional
        ``residual(q, qd, t) -> (..., m)`` raw values φ/ψ for reporting.
    """

    def __init__(self, A: Callable, b: Callable, n: int, m: int, residual: Callable | None = None):
        if not callable(A) or not callable(b):
            raise ConstraintError("`A` and `b` must be callables (q, qd, t) -> array.")
        if int(n) < 1 or int(m) < 1:
            raise ConstraintError(f"`n` and `m` must be >= 1; got n={n}, m={m}.")
        self._A, self._b, self._res = A, b, residual
        self.n, self.m = int(n), int(m)

    def matrices(self, q, qd, t=0.0):
        q = np.asarray(q, dtype=float)
        batch = q.shape[:-1]
        A = np.broadcast_to(np.asarray(self._A(q, qd, t), dtype=float), batch + (self.m, self.n))
        b = np.broadcast_to(np.asarray(self._b(q, qd, t), dtype=float), batch + (self.m,))
        return A, b

    def residual(self, q, qd, t=0.0):
        if self._res is None:
            return super().residual(q, qd, t)
        q = np.asarray(q, dtype=float)
        return np.broadcast_to(np.asarray(self._res(q, qd, t), dtype=float), q.shape[:-1] + (self.m,))
