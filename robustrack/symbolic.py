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

__all__ = ["SymbolicForm", "KernelForm", "expression_key"]


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


@dataclass(frozen=True)
class KernelForm:
    """A plant's or a constraint's functions as robustrack's prebuilt compiled kernels over data (no sympy).

    The second kind of form the compiled loop takes (:mod:`robustrack.compiled.loop`): a robot's M, Q and
    their derivatives by the rigid-body algorithms of :mod:`robustrack.compiled.rigid_body`, compiled once per
    machine, and frame constraints' A, b. The robot is data (``values``: :mod:`robustrack.plants.robot_data`),
    so a new payload or link mass compiles nothing.

    Attributes
    ----------
    key : str
        The structure: forms with the same key run the same functions (e.g. ``"robot"``).
    values : ndarray (P,)
        The data the functions read (their parameter vector ``p``).
    kernels : dict
        Slot (``"mass"``, ``"force"``, ``"mass_dq"``, ``"force_dq"``, ``"force_dqd"`` or ``"ab"``) → the name of a
        prebuilt function (:data:`robustrack.compiled.rigid_body.ROBOT_FUNCTIONS`); a slot mapped to None is a
        function generated for this structure from ``targets``.
    targets : tuple
        ``(expressions, t)``: sympy expressions in the time symbol t of the moving targets (9 per target:
        x, ẋ, ẍ), from which ``ab`` is generated once per structure; ``()`` when nothing moves.
    combine : callable, optional
        ``combine(forms)``: one form of several stacked constraints' forms (None: they cannot be stacked).
    """

    key: str
    values: np.ndarray
    kernels: dict
    targets: tuple = ()
    combine: Callable | None = None

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
