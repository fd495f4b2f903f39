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

import functools
import hashlib
from dataclasses import dataclass
from typing import Callable

import numpy as np

__all__ = ["SymbolicForm", "KernelForm", "ForcedForm", "added_terms", "expression_key"]


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


@dataclass(frozen=True)
class ForcedForm:
    """A plant's compiled form that is not symbolic, plus a given force's symbolic terms: the actual plant
    ``M q̈ = Q + δQ`` of a robot or a plant from functions with friction or a disturbance (W 5.2.12–5.2.16).

    The third way δQ reaches the compiled loop (:meth:`robustrack.plants.ForcedPlant.codegen`): a symbolic plant's
    δQ is added to its sympy Q (one :class:`SymbolicForm`), but a robot's Q is a prebuilt kernel and a user's Q the
    user's compiled function, so here the two stay apart — the base form's functions and δQ's generated ones
    (``force``, ``force_dq``, ``force_dqd`` of :attr:`terms`, exact sympy derivatives) — and the controlled and
    uncompensated systems add them (:mod:`robustrack.compiled.systems`, docs/guide/uncertainty.md). Only an actual
    plant may have one: the controller uses the nominal model.

    Attributes
    ----------
    base : KernelForm or FunctionForm
        The base plant's form.
    force : SymbolicForm
        δQ's terms: ``build(q, qd, t) -> (δQ (n × 1), params)`` (a disturbance's ``codegen_terms(n)``).
    """

    base: object
    force: SymbolicForm

    @property
    def key(self) -> str:
        """``ForcedPlant/<base key>/<δQ key>``."""
        return f"ForcedPlant/{self.base.key}/{self.force.key}"

    @property
    def values(self) -> np.ndarray:
        """The base form's values, then δQ's."""
        return np.concatenate([self.base.values, self.force.values])

    @property
    def terms(self) -> SymbolicForm:
        """δQ as a plant form without mass (M = 0, Q = δQ), whose ``force``, ``force_dq`` and ``force_dqd`` the code
        generator writes (:mod:`robustrack.compiled.codegen`)."""
        return SymbolicForm(f"dQ/{self.force.key}", self.force.values, functools.partial(_force_only, self.force.build))


def _force_only(build, q, qd, t):
    """``(0 (n × n), δQ, params)`` of a given force's ``build``."""
    import sympy as sp

    dQ, params = build(q, qd, t)
    return sp.zeros(len(q), len(q)), sp.Matrix(dQ), params


def added_terms(forms) -> SymbolicForm:
    """The sum of given forces' terms (each ``build(q, qd, t) -> (δQ, params)``), their parameters in order.

    Parameters
    ----------
    forms : sequence of SymbolicForm
        One or more forces' terms (e.g. a :class:`~robustrack.uncertainty.SumDisturbance`'s).

    Returns
    -------
    SymbolicForm
        Key ``sum(<keys>)``, values the forms' values in order.
    """
    forms = tuple(forms)
    return SymbolicForm(f"sum({','.join(f.key for f in forms)})", np.concatenate([f.values for f in forms]),
                        functools.partial(_sum_terms, tuple(f.build for f in forms)))


def _sum_terms(builds, q, qd, t):
    """``(Σ δQ, params)`` of the terms' builds, their parameters in order."""
    total, params = None, ()
    for build in builds:
        dQ, own = build(q, qd, t)
        total, params = dQ if total is None else total + dQ, (*params, *own)
    return total, params


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


def state_symbols(n: int):
    """Real symbols q0…, qd0… (n each) and t: what every form's ``build`` is called with.

    Named Symbols, not Dummies: sympy orders the factors of a product by their sort keys, and a Dummy's
    key holds a per-process counter, so Dummies would print the same expression in an order (hence a
    rounding) that depends on what the process made before; names order it the same in every process.

    Parameters
    ----------
    n : int
        Number of coordinates.

    Returns
    -------
    tuple
        ``(q, qd, t)``: two tuples of n symbols and the time symbol.
    """
    import sympy as sp

    return tuple(sp.symbols(f"q0:{n}", real=True)), tuple(sp.symbols(f"qd0:{n}", real=True)), sp.Symbol("t", real=True)


#: (key, n) → ((q, q̇, t), what ``build`` returned): the structures built in this process (:func:`built`).
_BUILT: dict = {}


def built(key: str, build: Callable, n: int):
    """A structure's expressions, ``build(q, q̇, t)`` on :func:`state_symbols`, built once per process.

    A new structure's first run writes its functions twice from them, the numpy evaluation
    (:mod:`robustrack.plants.symbolic_model`) and the compiled loop's (:mod:`robustrack.compiled.codegen`);
    both take them from here (a seed constraint's build differentiates its rows and factors b: ~0.1 s). The
    key names the structure (forms with one key have the same expressions), as for the generated files.

    Parameters
    ----------
    key : str
        The structure's key (:attr:`SymbolicForm.key`).
    build : callable
        ``build(q, qd, t)``, called on the first request of ``(key, n)`` only.
    n : int
        Number of coordinates.

    Returns
    -------
    tuple
        ``((q, qd, t), build(q, qd, t))``.
    """
    got = _BUILT.get((key, n))
    if got is None:
        state = state_symbols(n)
        got = _BUILT[key, n] = (state, build(*state))
    return got
