"""Symbolic forms: what a plant or a constraint tells the code generator.

The compiled tracking loop (:mod:`robustrack.compiled.loop`) is generated from
sympy expressions of M(q, t), Q(q, q̇, t) (docs/theory/fundamental-equation.md) and A(q, q̇, t), b(q, q̇, t)
(docs/theory/fundamental-equation.md). An object that has them returns a :class:`SymbolicForm` from its
``codegen()`` method; ``None`` means "no closed form" and the loop runs on the numpy
reference instead.

A form is cheap to make: ``key`` and ``values`` are plain strings and numbers, and the
sympy work happens in ``build`` only when no compiled module for ``key`` is cached
yet, so a cached run never imports sympy.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Callable

import numpy as np

__all__ = ["SymbolicForm", "expression_key"]


@dataclass(frozen=True)
class SymbolicForm:
    """A plant's (M, Q) or a constraint's (A, b) for code generation.

    Attributes
    ----------
    key : str
        The structure: two forms with the same key have the same expressions up to
        the parameter values (e.g. ``"NLinkPendulum/3"``).
    values : ndarray (P,)
        The parameter values, in the order of the symbols ``build`` returns.
    build : callable
        ``build(q, qd, t) -> (X, Y, params)`` for sympy symbols q, qd (n each) and t:
        ``(M (n × n), Q (n × 1))`` for a plant, ``(A (m × n), b (m × 1))`` for a
        constraint, as sympy Matrices, and ``params``, the P parameter symbols. A
        given-force perturbation's terms (``codegen_terms(n)``, see
        :meth:`robustrack.plants.ForcedPlant.codegen`) build ``(δQ (n × 1), params)``.
    """

    key: str
    values: np.ndarray
    build: Callable

    def __post_init__(self):
        values = np.array(self.values, dtype=float).reshape(-1)
        values.setflags(write=False)
        object.__setattr__(self, "values", values)


def expression_key(*parts) -> str:
    """A short stable key of sympy expressions (their ``srepr``) and plain values.

    Parameters
    ----------
    *parts
        sympy objects (keyed by ``sympy.srepr``) or anything with a stable ``repr``.

    Returns
    -------
    str
        16 hex digits of a SHA-256.
    """
    import sympy as sp

    text = "|".join(sp.srepr(p) if isinstance(p, sp.Basic) else repr(p) for p in parts)
    return hashlib.sha256(text.encode()).hexdigest()[:16]
