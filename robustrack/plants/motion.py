"""A plant under a constraint at one state: q̈ and Qᶜ, and their linearization.

The one place where a :class:`~robustrack.plants.Plant` (M, Q; docs/theory/fundamental-equation.md) meets a
constraint (A, b; docs/theory/fundamental-equation.md) numerically: :func:`constrained_motion` evaluates them at
(q, q̇, t) and applies the fundamental equation
(:func:`robustrack.mechanics.solve_constrained`, W 2.2.7–2.2.9; non-ideal W 4.2.8;
singular M through the augmented system, W ch. 4). The tracking loop's nominal system
(W 5.2.9–5.2.11), the constrained simulation, the python-control adapters and the LQR
baseline all call it, so the equation is written once.

:func:`linearize_motion` differentiates the resulting state equation
``d/dt (q, q̇) = (q̇, q̈(q, q̇, t, Q + u))`` by forward differences, without python-control
(plants sit below :mod:`robustrack.interop`).
"""

from __future__ import annotations

import numpy as np

from .._evaluator import motion as compiled_motion
from .._validate import finite, scalar
from ..errors import ParameterError, RobustrackError
from ..mechanics import ConstrainedMotion, constraint_multipliers, solve_constrained

__all__ = ["constrained_motion", "linearize_motion", "check_constraint_fits", "check_batch_contract", "check_mass_matrix",
           "produced", "function_source", "contact_forces"]


def check_constraint_fits(plant, constraint) -> None:
    """Refuse a constraint on another number of coordinates than the plant's.

    Parameters
    ----------
    plant : Plant
    constraint : Constraint or None
        None always fits.

    Raises
    ------
    ParameterError
        ``constraint.n != plant.n``; the message names both counts and the plant.
    """
    if constraint is not None and constraint.n != plant.n:
        raise ParameterError(
            f"The constraint acts on {constraint.n} coordinates but the plant {type(plant).__name__} has {plant.n}."
        )


def check_batch_contract(plant, constraint, q, qd, t) -> None:
    """Call the plant and the constraint once on a batch of :data:`BATCH` states (and a plant of your vectorized
    functions on as many sampled plants), each row against the same call on that state (plant) alone, before any
    integration.

    Every run evaluates M, Q, A and b on whole batches after integrating (metrics, residuals, Γ): a function
    written for one state would pass the integration and fail at its end (the batch contract,
    :class:`~robustrack.plants.Plant`). Distinct copies of the state ``(q, q̇, t)`` are enough to tell.

    Parameters
    ----------
    plant : Plant
    constraint : Constraint or None
    q, qd : ndarray (n,)
    t : float

    Raises
    ------
    ParameterError
        The plant fails on the batch or returns another shape than (2, n, n) and (2, n): names it and
        what to do.
    ConstraintError
        The same for the constraint's A (2, m, n) and b (2, m).
    """
    from ..errors import ConstraintError
    from .base import batch_contract_message

    n = plant.n
    q, qd = np.asarray(q, dtype=float), np.asarray(qd, dtype=float)
    # BATCH *distinct* states: a function that answers a batch with one state's answer (broadcast) is caught
    k = np.arange(BATCH, dtype=float)[:, None]
    qq, vv = q + 1e-3 * k * (1.0 + np.abs(q)), qd - 1e-3 * k * (1.0 + np.abs(qd))
    checks = []
    if not _own_batches(plant):
        checks.append((plant, ParameterError, lambda x, v: (plant.mass_matrix(x, t), plant.given_force(x, v, t)),
                       ((BATCH, n, n), (BATCH, n)), ("M", "Q")))
    if constraint is not None and not _own_batches(constraint):
        checks.append((constraint, ConstraintError, lambda x, v: constraint.matrices(x, v, t),
                       ((BATCH, constraint.m, n), (BATCH, constraint.m)), ("A", "b")))
    for obj, error, call, wanted, labels in checks:
        what = type(obj).__name__
        try:
            batch = call(qq, vv)
            got = tuple(np.shape(v) for v in batch)
        except RobustrackError:
            raise
        except Exception as exc:
            raise error(batch_contract_message(what, (BATCH,), exc)) from None
        if got != wanted:
            raise error(batch_contract_message(what, (BATCH,), ValueError(f"it returned shapes {got}, not {wanted}")))
        _check_rows(obj, error, call, batch, qq, vv, labels)
    if not _own_batches(plant):
        _check_sampled_rows(plant, q, qd, t)
    check_mass_matrix(plant, q, qd, t, definite=False)


#: The states (and sampled plants) :func:`check_batch_contract` calls a plant with at once: a campaign's chunks
#: hold more, and a function answering a batch with its first row's answer differs at every other row.
BATCH = 4


def _check_sampled_rows(plant, q, qd, t) -> None:
    """A plant of your functions, vectorized, on BATCH sampled plants at one state (the batch a campaign's chunk
    passes: each parameter with a leading sample axis): row i must be plant i's answer alone."""
    from .base import batch_contract_message

    spec = getattr(plant, "spec", None)
    if spec is None or not getattr(spec, "vectorized", False):
        return
    scalars = {k: float(v) for k, v in plant.params.items() if np.ndim(v) == 0 and np.isfinite(v) and v != 0}
    if not scalars:
        return
    scale = 1.0 + 1e-3 * np.arange(BATCH, dtype=float)
    try:
        sampled = plant.replace(**{k: v * scale for k, v in scalars.items()})
        rows = (sampled.mass_matrix(q, t), sampled.given_force(q, qd, t))
    except RobustrackError:
        raise
    except Exception as exc:  # noqa: BLE001 — the contract said with what it raised
        raise ParameterError(batch_contract_message(type(plant).__name__, f"({BATCH},) of sampled plants", exc)) \
            from None
    for i in range(BATCH):
        try:
            alone = plant.replace(**{k: v * scale[i] for k, v in scalars.items()})
            one = (alone.mass_matrix(q, t), alone.given_force(q, qd, t))
        except Exception:  # noqa: BLE001 — a plant the single call cannot take: left to the run
            return
        for label, got, want in zip(("M", "Q"), rows, one):
            got, want = np.asarray(got, dtype=float)[i], np.asarray(want, dtype=float)
            if got.shape == want.shape and not np.allclose(got, want, rtol=1e-9, atol=1e-12 * max(
                    1.0, float(np.max(np.abs(want), initial=0.0)))):
                raise ParameterError(
                    f"your `{label}` (Plant.from_functions, vectorized=True) answers a batch of {BATCH} sampled plants "
                    f"with one plant's answer: row {i} is {np.round(got, 6).tolist()}, plant {i} alone gives "
                    f"{np.round(want, 6).tolist()}. A campaign passes each parameter with a leading sample axis: "
                    "broadcast over it (m[..., None, None] for an (n, n) answer), or pass vectorized=False "
                    "(robustrack then calls your functions once per plant).")


def _own_batches(obj) -> bool:
    """Whether ``obj``'s own class (not a base: a user's subclass is checked) says that every batch it answers is
    the package's code, tested row by row against single states (``_own_batches = True``: a robot and its frame
    constraints, ``tests/test_rigid_body.py``), so :func:`check_batch_contract` has nothing to learn from it."""
    return bool(type(obj).__dict__.get("_own_batches", False))


def _check_rows(obj, error, call, batch, qq, vv, labels) -> None:
    """Row i of the batch's answer must be the answer for state i alone (a vectorized function broadcasting one
    state's answer over the batch is refused). A state the single call cannot take is left to the run."""
    from .base import batch_contract_message

    for i in range(len(qq)):
        try:
            alone = call(qq[i], vv[i])
        except Exception:  # noqa: BLE001 — the run names it, where it happens
            return
        for label, rows, one in zip(labels, batch, alone):
            rows, one = np.asarray(rows, dtype=float), np.asarray(one, dtype=float)
            if one.shape == rows.shape[1:] and np.all(np.isfinite(one)) and np.all(np.isfinite(rows[i])) and \
                    not np.allclose(rows[i], one, rtol=1e-9, atol=1e-12 * max(1.0, float(np.max(np.abs(one), initial=0.0)))):
                raise error(batch_contract_message(type(obj).__name__, (len(qq),), ValueError(
                    f"row {i} of its `{label}` for {len(qq)} different states is not its `{label}` of state {i} alone "
                    f"({np.round(rows[i], 6).tolist()} against {np.round(one, 6).tolist()}): it answers a batch "
                    "with one state's answer")))


def check_mass_matrix(plant, q, qd, t, *, role: str = "", definite: bool = True) -> None:
    """Refuse a mass matrix that is not symmetric or not positive definite at the states given, naming its
    function and the state (docs/guide/own-system.md). The numpy and the compiled loop both rely on it; the
    compiled loop does not check M as it runs, so this is called before either integrates.

    Parameters
    ----------
    plant : Plant
    q, qd : array_like (n,) or (k, n)
        The states (q̇ only for the message).
    t : float or array_like (k,)
    role : str
        ``"nominal"`` or ``"actual"``, for the message (keyword-only).
    definite : bool
        False: a positive semi-definite M passes (a nominal system with a massless body, keyword-only).

    Raises
    ------
    MassMatrixError
        M(q) not symmetric (to 1e-10 of its size) or without a Cholesky factor.
    """
    from ..errors import MassMatrixError

    q = np.atleast_2d(np.asarray(q, dtype=float))
    qd = np.broadcast_to(np.asarray(qd, dtype=float), q.shape)
    t = np.broadcast_to(np.asarray(t, dtype=float), q.shape[:1])
    M = np.asarray(plant.mass_matrix(q, t if np.ndim(t) else float(t)), dtype=float)
    M = np.broadcast_to(M, q.shape[:1] + M.shape[-2:])
    source = function_source(plant, "M", "mass_matrix") + (f" of the {role} plant" if role else "")
    for i in range(len(q)):
        Mi = M[i]
        if not np.all(np.isfinite(Mi)):
            continue  # named where it happens (produced)
        scale = max(float(np.max(np.abs(Mi))), np.finfo(float).tiny)
        asym = float(np.max(np.abs(Mi - Mi.T)))
        where = (f"at t = {float(t[i]):.6g}, q = {np.round(q[i], 6).tolist()}, q̇ = {np.round(qd[i], 6).tolist()}")
        if asym > 1e-10 * scale:
            raise MassMatrixError(f"{source} is not symmetric {where}: M − Mᵀ reaches {asym:.3g} (M up to "
                                  f"{scale:.3g}). A mass matrix is symmetric; fix M (an off-diagonal term "
                                  "written once, or with its indices swapped).")
        try:
            np.linalg.cholesky(Mi)
        except np.linalg.LinAlgError:
            if not definite and float(np.min(np.linalg.eigvalsh(Mi))) >= -1e-9 * scale:
                continue  # positive semi-definite: a nominal system the augmented system solves (W ch. 4)
            raise MassMatrixError(f"{source} is not positive definite {where} (smallest eigenvalue "
                                  f"{float(np.min(np.linalg.eigvalsh(Mi))):.3g}): every motion must have positive "
                                  "kinetic energy; fix M (a mass or inertia ≤ 0, a sign) — for a massless body use "
                                  "robustrack.tracking.singular.simulate_singular_tracking.") from None


def constrained_motion(plant, constraint, q, qd, t=0.0, *, force=None, nonideal=None, M=None, check=True,
                       compiled=True, multipliers=False):
    """q̈ and Qᶜ of ``M q̈ = Q + force + Qᶜ`` with ``A q̈ = b`` (W 2.2.7–2.2.9, 5.2.9–5.2.11).

    Evaluates M(q, t) and Q(q, q̇, t) of the plant and A(q, q̇, t), b(q, q̇, t) of the
    constraint and solves the fundamental equation (Gauss's principle: q̈ minimizes
    ``(q̈ − a)ᵀ M (q̈ − a)`` subject to ``A q̈ = b``, a = M⁻¹ (Q + force)). With a
    non-ideal work vector C the constraint force also does the prescribed work
    ``vᵀ Qᶜ = vᵀ C`` on every v with ``A v = 0`` (W 4.2.6–4.2.8). A singular M goes
    through the augmented system (W ch. 4) as in
    :func:`~robustrack.mechanics.solve_constrained`.

    Parameters
    ----------
    plant : Plant
        Gives ``mass_matrix(q, t)`` and ``given_force(q, qd, t)``.
    constraint : Constraint or None
        Gives ``matrices(q, qd, t) -> (A, b)``. None: no constraint, Qᶜ = 0 and
        q̈ = M⁻¹ (Q + force) (M must then be positive definite).
    q, qd : ndarray (..., n)
        The state; any leading batch axes.
    t : float or ndarray
        Time(s), broadcasting with the batch axes.
    force : ndarray (..., n), optional
        An extra generalized force added to Q before the constraint reacts, e.g. a
        control input (keyword-only).
    nonideal : callable, optional
        ``C(q, qd, t) -> (..., n)``, the non-ideal work vector (W 4.2.6; keyword-only).
    M : ndarray (..., n, n), optional
        The mass matrix at the state when the caller already has it (keyword-only);
        default ``plant.mass_matrix(q, t)``. A model whose mass matrix depends on the
        velocities (the conflated M+ of W 3.3.39) passes it here.
    check : bool
        Validate shapes, finiteness and M's definiteness (keyword-only; default True).
        Hot paths that validated once pass False.
    compiled : bool
        One state (float arrays q, q̇ (n,), a scalar t) of a plant and a constraint with compiled forms (a
        symbolic structure, a robot, a frame constraint, a plant from functions numba compiles) is solved in one
        compiled call (:func:`robustrack.compiled.evaluate.motion`: the same checks; the numbers of the compiled
        loop, equal to this numpy path's to rounding). The first such call of a pair in a process loads their
        compiled functions from the kernel cache, or compiles what it lacks once, said as compiling
        (docs/guide/compiled.md, "After the run: one evaluator") — keyword-only; False: always this numpy path
        (Pinocchio for a robot), loading nothing, as the numpy tracking loop, the reference, asks.
    multipliers : bool
        Also λ of Qᶜ = Aᵀλ (keyword-only; ideal constraints: None with ``nonideal``), from the same solve
        (:func:`robustrack.mechanics.solve_constrained`).

    Returns
    -------
    ConstrainedMotion
        ``qdd``, ``Qc`` (= M q̈ − Q − force), ``residual`` (‖A q̈ − b‖₂; nonzero only where
        ``A q̈ = b`` is inconsistent) and ``augmented`` (where the singular-M form was used).
        Without a constraint: Qᶜ = 0, residual 0, augmented False.

    Examples
    --------
    A pendulum bob in Cartesian coordinates (y down) held on the circle x² + y² = 1 at
    rest at the bottom: the rod carries the weight m g, nothing accelerates.

    >>> import sympy as sp
    >>> from robustrack.constraints import Holonomic
    >>> from robustrack.plants import CartesianPendulum
    >>> x, y = sp.symbols("x y")
    >>> rod = Holonomic(x**2 + y**2 - 1, [x, y])
    >>> mot = constrained_motion(CartesianPendulum(m=1.0, g=9.81), rod, [0.0, 1.0], [0.0, 0.0])
    >>> (mot.qdd + 0.0).round(12).tolist(), (mot.Qc + 0.0).round(12).tolist()
    ([0.0, 0.0], [0.0, -9.81])
    """
    if compiled and M is None and nonideal is None and not multipliers:
        fast = compiled_motion(plant, constraint, q, qd, t, force)  # one state, compiled forms loaded: one call
        if fast is not None:
            return fast
    if M is None:
        M = produced(plant.mass_matrix(q, t), function_source(plant, "M", "mass_matrix"), q, qd, t, 2)
    Q = produced(plant.given_force(q, qd, t), function_source(plant, "Q", "given_force"), q, qd, t, 1)
    if force is not None:
        Q = Q + force
    if constraint is None:
        qdd = np.linalg.solve(M, Q[..., None])[..., 0]
        zero = np.zeros(qdd.shape[:-1])
        return ConstrainedMotion(qdd=qdd, Qc=np.zeros_like(qdd), residual=zero, augmented=zero.astype(bool))
    A, b = constraint.matrices(q, qd, t)
    what = f"the constraint {type(constraint).__name__}"
    A, b = produced(A, f"{what} (its A)", q, qd, t, 2), produced(b, f"{what} (its b)", q, qd, t, 1)
    C = None if nonideal is None else produced(nonideal(q, qd, t), "the non-ideal work vector C", q, qd, t, 1)
    return solve_constrained(M, Q, A, b, C, check=check, multipliers=multipliers)


def function_source(plant, key: str, method: str) -> str:
    """Who computes ``key`` (M or Q) of ``plant``, for messages: the user's own function for a plant built from
    functions, else the plant's method.

    Parameters
    ----------
    plant : Plant
    key : {"M", "Q"}
    method : str
        The plant method computing it (``mass_matrix``, ``given_force``).

    Returns
    -------
    str
    """
    fn = getattr(getattr(plant, "spec", None), "functions", {}).get(key)
    if fn is not None:
        name = getattr(fn, "__qualname__", None) or repr(fn)
        return f"your function `{name}` (the {key} given to Plant.from_functions)"
    return f"`{type(plant).__name__}.{method}` ({key})"


def produced(value, source: str, q, qd, t, tail: int):
    """``value`` as returned by ``source`` at the state (q, q̇, t), refused where it is not finite at a finite state.

    A NaN or inf that a function produces from a finite state would otherwise travel on (into q̈, then into the
    next state) and be reported far from where it came from, as a non-finite M of a later step; here the
    message names the function, t, q and q̇ of the first such state. One ``isfinite`` pass over what was
    computed anyway (the check of the hot paths too).

    Parameters
    ----------
    value : array_like (..., *tail shape)
    source : str
        Who produced it (said in the message).
    q, qd : array_like (..., n)
    t : float or array_like
    tail : int
        The number of trailing core axes of ``value`` (2 for a matrix, 1 for a vector).

    Returns
    -------
    ndarray

    Raises
    ------
    ParameterError
        ``value`` is not finite where q, q̇ and t are.
    """
    value = np.asarray(value)
    if np.isfinite(value).all():
        return value
    q, qd, t = (np.asarray(x, dtype=float) for x in (q, qd, t))
    bad = ~np.isfinite(value).all(axis=tuple(range(-tail, 0)))
    state_ok = np.isfinite(q).all(axis=-1) & np.isfinite(qd).all(axis=-1) & np.isfinite(t)
    mask = np.broadcast_to(bad & state_ok, np.broadcast_shapes(bad.shape, state_ok.shape))
    if not mask.any():  # the state itself is not finite: that is reported where it became so
        return value
    idx = tuple(int(i) for i in np.argwhere(mask)[0]) if mask.ndim else ()
    bad = mask
    pick = lambda x, k: np.broadcast_to(x, bad.shape + x.shape[x.ndim - k:] if k else bad.shape)[idx]  # noqa: E731
    qi, qdi, ti = pick(q, 1), pick(qd, 1), float(pick(t, 0))
    vi = np.broadcast_to(value, bad.shape + value.shape[value.ndim - tail:])[idx]
    kind = "NaN" if np.isnan(vi).any() else "inf"
    raise ParameterError(f"{source} returned {kind} at t = {ti:.6g}, q = {np.round(qi, 6).tolist()}, "
                         f"q̇ = {np.round(qdi, 6).tolist()}{f' (batch element {list(idx)})' if idx else ''}: "
                         f"{np.array2string(vi, precision=4)}. Check that function at this state (a division by "
                         "zero, a square root or logarithm of a negative number, an overflow).")


def linearize_motion(plant, constraint, q, qd, t=0.0, u=None, *, eps=1e-6):
    """Jacobians of ``d/dt (q, q̇) = (q̇, q̈)`` in the state and in an input force, by forward differences.

    q̈ = :func:`constrained_motion` ``(plant, constraint, q, q̇, t, force=u).qdd``
    (W 2.2.7–2.2.9): with a constraint, Qᶜ reacts to the state and to the input u;
    with ``constraint=None`` and ``u = Qᶜ(t)`` it is the error dynamics of a tracking
    loop, where Qᶜ is computed on the nominal state and held (W 5.2.17). Column j is
    ``(f(x + ε e_j) − f(x)) / ε``, the formula python-control's ``linearize`` uses, so
    entries are accurate to about ε times the second derivatives.

    Parameters
    ----------
    plant : Plant
    constraint : Constraint or None
        Linearize the constrained plant or, with None, the unconstrained one.
    q, qd : array_like (n,)
        The operating point.
    t : float
        Time.
    u : array_like (n,), optional
        The input generalized force at the point, added to Q (default 0).
    eps : float
        The finite-difference step, > 0 (keyword-only; default 1e-6).

    Returns
    -------
    A : ndarray (2n, 2n)
        ∂(q̇, q̈)/∂(q, q̇).
    B : ndarray (2n, n)
        ∂(q̇, q̈)/∂u.

    Raises
    ------
    ParameterError
        ``q``, ``qd`` or ``u`` not finite or not of shape (n,), ``eps`` not > 0, or a
        constraint on another number of coordinates.

    Examples
    --------
    >>> from robustrack.plants import NLinkPendulum
    >>> A, B = linearize_motion(NLinkPendulum(m=[1.0], L=[2.0], g=9.81), None, [0.0], [0.0])
    >>> np.round(A, 4).tolist(), np.round(B, 4).tolist()    # θ̈ = −(g/L) θ + u/(m L²)
    ([[0.0, 1.0], [-4.905, 0.0]], [[0.0], [0.25]])
    """
    n = plant.n
    q = finite(q, "q").reshape(-1)
    qd = finite(qd, "qd").reshape(-1)
    if q.shape != (n,) or qd.shape != (n,):
        raise ParameterError(f"`q` and `qd` must have shape ({n},); got {q.shape} and {qd.shape}.")
    u0 = np.zeros(n) if u is None else finite(u, "u").reshape(-1)
    if u0.shape != (n,):
        raise ParameterError(f"`u` (the input force) must have shape ({n},); got {u0.shape}.")
    if not scalar(eps, "eps") > 0:
        raise ParameterError(f"`eps` (the finite-difference step) must be > 0; got {eps!r}.")
    check_constraint_fits(plant, constraint)
    t = scalar(t, "t")
    eps = float(eps)
    x0 = np.concatenate([q, qd])

    def f(x, force):
        return np.concatenate([x[n:], constrained_motion(plant, constraint, x[:n], x[n:], t, force=force,
                                                         check=False).qdd])

    F0 = f(x0, u0)
    A = np.zeros((2 * n, 2 * n))
    B = np.zeros((2 * n, n))
    for i in range(2 * n):
        dx = np.zeros(2 * n)
        dx[i] = eps
        A[:, i] = (f(x0 + dx, u0) - F0) / eps
    for i in range(n):
        du = np.zeros(n)
        du[i] = eps
        B[:, i] = (f(x0, u0 + du) - F0) / eps
    return A, B


def contact_forces(plant, constraint, q, qd, t=0.0, *, multipliers=None):
    """The contact forces of the members of ``constraint`` that report one (frame constraints), beside Qᶜ.

    The multipliers of Qᶜ = Aᵀλ (:func:`robustrack.mechanics.constraint_multipliers`, W 2.2.8) of the
    whole constraint, each member's rows turned into its force or moment in its frame
    (:meth:`robustrack.plants.FrameConstraint.contact`).

    Parameters
    ----------
    plant : Plant
    constraint : Constraint or None
        A constraint, or a :func:`~robustrack.constraints.stack` of them.
    q, qd : ndarray (..., n)
    t : float or ndarray
    multipliers : ndarray (..., m), optional
        λ at these states where the caller has it (:func:`constrained_motion` with ``multipliers=True``; keyword-only).

    Returns
    -------
    (list of str, ndarray (..., k)) or None
        The columns' labels (with units) and values; None when no member reports a contact force.
    """
    if constraint is None:
        return None
    members = getattr(constraint, "constraints", (constraint,))
    slices = getattr(constraint, "slices", (slice(0, constraint.m),))
    reporting = [(c, s) for c, s in zip(members, slices) if callable(getattr(c, "contact", None))]
    if not reporting:
        return None
    q, qd = np.asarray(q, dtype=float), np.asarray(qd, dtype=float)
    lam = multipliers
    if lam is None:
        A, b = constraint.matrices(q, qd, t)
        lam = constraint_multipliers(plant.mass_matrix(q, t), plant.given_force(q, qd, t), A, b)
    labels = [label for c, _ in reporting for label in c.contact_labels]
    return labels, np.concatenate([c.contact(q, qd, t, lam[..., s]) for c, s in reporting], axis=-1)
