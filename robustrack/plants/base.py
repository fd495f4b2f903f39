"""The plant contract: immutable parameters + mass matrix + given forces.

A plant describes the *unconstrained* system (W 2.2 step 1; docs/theory/fundamental-equation.md)

    M(q, t) q̈ = Q(q, q̇, t),

with q the generalized coordinates. Constraints are separate objects
(:mod:`robustrack.constraints`); never substitute them into the kinetic energy
(Hamel's paradox, W ch. 3).

Rules every plant follows
-------------------------
* Parameters are fields of a frozen dataclass, validated in ``__post_init__``;
  ``plant.replace(m1=1.1)`` returns a perturbed copy (the actual system).
* ``mass_matrix(q, t)`` returns shape ``(..., n, n)`` and ``given_force(q, qd, t)``
  shape ``(..., n)`` for ``q``, ``qd`` of shape ``(..., n)``: any leading batch axes.
* ``t`` is a scalar or an array that broadcasts with the batch shape ``q.shape[:-1]``.
* Parameters may be numpy arrays whose leading axes broadcast against the batch
  axes of ``q`` (per-body vectors such as link masses carry their body index as
  the LAST axis). This is how Monte Carlo evaluates thousands of sampled plants
  in one array operation.
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar

import numpy as np

from ..errors import ParameterError

__all__ = ["Plant", "batch_contract_message", "first_limit"]


def batch_contract_message(what: str, batch, exc: BaseException) -> str:
    """The message for a plant that does not keep the batch contract (the class docstring of :class:`Plant`).

    Parameters
    ----------
    what : str
        The plant or function that failed (e.g. ``"MyArm"``).
    batch : tuple or str
        The batch shape (or a description of the batched arguments) it was called with.
    exc : BaseException
        What it raised.

    Returns
    -------
    str
    """
    return (f"{what} does not accept a batch {batch} of states and sampled parameters ({type(exc).__name__}: "
            f"{exc}). Plants are called with q of shape (..., n) and parameter arrays with leading sample axes "
            "(robustrack.plants.Plant, 'The batch contract'): write M and Q with numpy broadcasting, or build "
            "the plant with Plant.from_functions(M, Q, params=..., names=...), which loops over the batch for you.")


@dataclasses.dataclass(frozen=True, eq=False)
class Plant:
    """Base class of all plants. Subclasses are frozen dataclasses.

    Your own system without subclassing: :meth:`from_functions` (Python functions of M and
    Q), :meth:`robustrack.plants.LagrangianPlant.from_energies` (T and V in sympy; compiled),
    :class:`robustrack.plants.URDFPlant` (a robot's URDF through Pinocchio).

    Notes
    -----
    **The batch contract.** Every method taking ``q`` (and ``qd``, ``t``) accepts leading batch axes:
    ``mass_matrix(q (..., n)) -> (..., n, n)``, ``given_force -> (..., n)``. Parameters
    may be numpy arrays with leading *sample* axes that broadcast against those batch
    axes: ``plant.replace(m1=np.array([[1.0], [1.1]]))`` is two plants at once, and
    ``mass_matrix(q (T, n))`` then returns (2, T, n, n). A per-body vector parameter
    keeps its body index as the LAST axis ((S, 1, k) for S samples of k masses).
    :func:`~robustrack.uncertainty.estimate_gamma` and the campaigns' Γ evaluate
    thousands of sampled plants this way in one array operation. A plant that cannot
    (``if m1 > 0``, ``math.sin``, a dict keyed by a parameter) is refused with a
    :class:`~robustrack.errors.ParameterError` saying what to do;
    :meth:`from_functions` keeps the contract for functions written for one state.

    Subclasses set the class attribute ``coordinates`` (names of q, in order) —
    or override the ``coordinates`` property when n depends on parameters — and
    ``coordinate_kinds`` (``"angle"``, ``"length"``, ``"dimensionless"`` per
    coordinate; it gives the units, :func:`robustrack.plants.units.coordinate_units`),
    and implement :meth:`mass_matrix` and :meth:`given_force`.
    """

    coordinates: ClassVar[tuple[str, ...]] = ()

    @property
    def coordinate_kinds(self) -> tuple:
        """What each coordinate is (``"angle"``, ``"length"``, ``"dimensionless"``); None: unknown.

        The base class knows nothing: every entry is None (units ``[q]``, ``[Q]``).
        """
        return (None,) * self.n

    @property
    def n(self) -> int:
        """Number of generalized coordinates."""
        return len(self.coordinates)

    def mass_matrix(self, q, t=0.0) -> np.ndarray:
        """M(q, t), shape ``(..., n, n)``, symmetric positive (semi-)definite."""
        raise NotImplementedError

    def given_force(self, q, qd, t=0.0) -> np.ndarray:
        """Q(q, q̇, t), shape ``(..., n)``: all given (impressed + inertial) forces."""
        raise NotImplementedError

    @classmethod
    def from_functions(cls, M, Q, *, params=None, names=None, kinds=None, vectorized: bool = False, dM_dq=None,
                       dQ_dq=None, dQ_dqd=None) -> "Plant":
        """A plant from your own Python functions of M(q, t) and Q(q, q̇, t) (W 2.2 step 1).

        Parameters
        ----------
        M : callable
            ``M(q, **params)`` → (n, n), symmetric positive definite; it also receives
            ``t=`` when its signature names ``t``.
        Q : callable
            ``Q(q, qd, **params)`` → (n,): every given force (gravity, Coriolis and
            centrifugal terms, damping, ...), ``t=`` as for ``M``.
        params : dict of str to float or array, optional
            The parameters, passed to the functions by keyword; ``replace(name=...)``
            changes them (the actual plant), and they are what Monte Carlo samples.
        names : sequence of str
            The coordinate names, in order (n of them). Required: without it a
            :class:`~robustrack.errors.ParameterError` says so.
        kinds : sequence of str, optional
            ``"angle"``, ``"length"`` or ``"dimensionless"`` per coordinate: the units of
            every number and plot axis (:mod:`robustrack.plants.units`). Default unknown.
        vectorized : bool, default False
            False: the functions see one state and plain numbers, robustrack loops over
            batches (always correct). True: they take q (..., n) and parameter arrays
            and broadcast (the batch contract above; faster); refused with a message if not.
        dM_dq, dQ_dq, dQ_dqd : callable, optional
            Exact derivatives, ``dM_dq(q, **params)`` → (n, n, n) with ``[i, j, k] =
            ∂M_ij/∂q_k``, ``dQ_dq(q, qd, **params)`` and ``dQ_dqd(q, qd, **params)`` → (n, n)
            with ``[i, k] = ∂Q_i/∂x_k``, returned by ``derivatives()`` (else central differences).

        Returns
        -------
        FunctionPlant
            Compiled into the tracking loop when numba compiles M and Q (written for one state in numba's
            numpy subset; once per structure, cached by the functions' content; derivatives not given are
            compiled central differences): :mod:`robustrack.compiled.user`. Otherwise the loop runs on the
            numpy reference with a one-line notice naming the function and numba's reason.
        """
        from .functions import from_functions

        return from_functions(M, Q, params=params, names=names, kinds=kinds, vectorized=vectorized,
                              dM_dq=dM_dq, dQ_dq=dQ_dq, dQ_dqd=dQ_dqd)

    def replace(self, **params) -> "Plant":
        """A copy with some parameters changed (validated again), e.g. the actual plant."""
        names = {f.name for f in dataclasses.fields(self)}
        unknown = sorted(set(params) - names)
        if unknown:
            raise ParameterError(
                f"{type(self).__name__} has no parameter(s) {unknown}; "
                f"its parameters are {sorted(names)}."
            )
        return dataclasses.replace(self, **params)

    @property
    def params(self) -> dict:
        """The parameters as a dict (name → value)."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}

    def positions(self, q) -> np.ndarray:
        """Cartesian positions of the bodies, shape ``(..., n_bodies, 2 or 3)``, for plots.

        Plants without a natural picture raise ``NotImplementedError`` (see :attr:`has_positions`).
        """
        raise NotImplementedError(f"{type(self).__name__} does not define body positions.")

    def motion_notes(self, t, q, qd) -> list:
        """Limits the plant declares that a motion breaks (say, a URDF's joint velocity limits): one sentence each.

        The runs say them with a :class:`~robustrack.errors.LimitNotice`. The base class declares none.

        Parameters
        ----------
        t : ndarray (T,)
        q, qd : ndarray (T, n)

        Returns
        -------
        list of str
        """
        return []

    @property
    def position_limits(self):
        """(lo, hi) per coordinate where the plant stops (a URDF's joint limits), ±inf without one; None: the plant
        declares none (the base class)."""
        return None

    @property
    def has_positions(self) -> bool:
        """Whether this plant defines :meth:`positions` (the report's XY trajectory needs them)."""
        return type(self).positions is not Plant.positions

    def changed_parameters(self, other) -> tuple:
        """The names of the parameters whose values ``other`` (a plant of the same type) changes.

        Parameters
        ----------
        other : Plant
            E.g. the actual plant of a run whose nominal plant is ``self``.

        Returns
        -------
        tuple of str
            In the order of :attr:`params`; empty when ``other`` is another type of plant or the same values.
        """
        if type(other) is not type(self):
            return ()
        theirs = other.params
        same = lambda a, b: np.array_equal(np.asarray(a, dtype=object), np.asarray(b, dtype=object))  # noqa: E731
        return tuple(k for k, v in self.params.items() if k in theirs and not same(v, theirs[k]))

    def unconstrained_acceleration(self, q, qd, t=0.0) -> np.ndarray:
        """a = M⁻¹ Q (W 2.2.2); requires a positive definite M."""
        M = self.mass_matrix(q, t)
        Q = self.given_force(q, qd, t)
        return np.linalg.solve(M, Q[..., None])[..., 0]


def first_limit(t, q, limits):
    """Where a motion first leaves a plant's position limits (:attr:`Plant.position_limits`).

    Parameters
    ----------
    t : ndarray (T,)
    q : ndarray (T, n)
    limits : (ndarray (n,), ndarray (n,)) or None

    Returns
    -------
    (float, int) or None
        The time and the coordinate's index of the first sample outside; None when inside throughout (or no limits).
    """
    if limits is None or len(t) == 0:
        return None
    lo, hi = limits
    with np.errstate(invalid="ignore"):
        out = (np.asarray(q) < lo) | (np.asarray(q) > hi)
    rows = np.flatnonzero(out.any(axis=1))
    if not rows.size:
        return None
    k = int(rows[0])
    return float(t[k]), int(np.flatnonzero(out[k])[0])
