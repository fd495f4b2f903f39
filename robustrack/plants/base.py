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

Your own system from functions
------------------------------
A plant from the user's own Python functions M(q, t, **params), Q(q, q̇, t, **params).

:meth:`Plant.from_functions <robustrack.plants.Plant.from_functions>` builds a
:class:`FunctionPlant`: no subclassing, no hand-written broadcasting. The functions take the
coordinates and the parameters by keyword (``def M(q, m1, m2, L1, L2)``; a function whose
signature names ``t`` also gets the time) and return M (n × n) and Q (n,) — the
unconstrained system M(q, t) q̈ = Q(q, q̇, t) of W 2.2 step 1.

The batch contract (:class:`~robustrack.plants.Plant`)
-----------------------------------------------------
robustrack calls plants on batches: ``q`` of shape (..., n) and parameter values with
leading sample axes (``estimate_gamma`` passes a scalar parameter as an (S, 1) array
against q of shape (T, n); per-body vectors as (S, 1, k)). With ``vectorized=False`` (the
default) the functions see ONE state and plain numbers, and this module loops over the
broadcast batch (correct for any function; a Python call per state). With
``vectorized=True`` the functions receive the whole batch and must broadcast; a function
that fails or returns the wrong shape on a batch is refused with a
:class:`~robustrack.errors.ParameterError` saying so, never a raw error from inside it.

The compiled loop
-----------------
:meth:`FunctionPlant.codegen` hands the functions to the compiled loop (:mod:`robustrack.compiled.user`):
numba compiles them for one state (q a 1-D array, parameters numbers or vectors), once per structure and
cached by the functions' content, so a plant written in numba's numpy subset runs at the speed of a
generated one (``benchmarks/bench_user_plants.py``). A function numba cannot compile keeps the numpy
reference, and the one-line notice names it with numba's reason. Either way the batch contract is checked
before a run integrates anything (:func:`~robustrack.plants.motion.check_batch_contract`). Once compiled, M and Q
of a batch of states (a run's post-processing, Γ's sampled plants) go through the compiled functions
(:mod:`robustrack.compiled.evaluate`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import inspect
import types
from typing import Any, Callable, ClassVar, Mapping

import numpy as np

from .._evaluator import batch as batch_evaluation
from .._validate import as_float_array, finite
from ..errors import ParameterError, RobustrackError

__all__ = ["Plant", "FunctionPlant", "batch_contract_message", "first_limit"]


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

    def parameter_components(self) -> dict:
        """The single numbers inside the plant's 1-D array parameters, by name: ``{name: (parameter, index)}``.

        A named uncertain parameter is one number (docs/guide/uncertainty.md); an array parameter's entries are
        named ``<parameter><i>``, 1-based as W numbers the bodies (the pendulum's ``m`` gives ``m1, m2, m3``, as
        its symbolic form names them), unless the plant has a parameter of that name. A plant may name them
        otherwise (a URDF robot's ``payload_com_x``, :class:`~robustrack.plants.URDFPlant`).

        Returns
        -------
        dict of str to (str, int)
        """
        params = self.params
        out = {}
        for name, value in params.items():
            try:
                arr = np.asarray(value, dtype=float)
            except (TypeError, ValueError):
                continue
            if arr.ndim == 1:
                out.update({f"{name}{i + 1}": (name, i) for i in range(arr.size) if f"{name}{i + 1}" not in params})
        return out

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

def _arguments(key: str, fn, n_states: int, params) -> tuple:
    """The parameter names ``fn`` takes by keyword (all for ``**kwargs``) and whether it takes ``t``."""
    try:
        sig = inspect.signature(fn).parameters
    except (TypeError, ValueError):  # no signature (a builtin or C function): give it everything
        return tuple(params), False
    listed = list(sig.values())
    if any(p.kind is p.VAR_KEYWORD for p in listed):
        return tuple(params), "t" in sig
    named = [p.name for p in listed[n_states:] if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    unknown = [a for a in named if a not in params and a != "t" and sig[a].default is inspect.Parameter.empty]
    if unknown:
        raise ParameterError(f"`{key}` takes argument(s) {unknown}, which are not in `params` {sorted(params)}; "
                             "give their values in `params` (the functions take parameters by keyword).")
    return tuple(a for a in named if a in params), "t" in named


@dataclasses.dataclass(frozen=True, eq=False)
class _Spec:
    """What :meth:`FunctionPlant.replace` keeps: the functions, names, kinds, parameter ranks."""

    functions: Mapping[str, Callable]  # "M", "Q", and optionally "dM_dq", "dQ_dq", "dQ_dqd"
    names: tuple
    kinds: tuple
    core_ndim: Mapping[str, int]  # a parameter's own rank (1 for a per-body vector): axes before it are batch
    vectorized: bool
    takes: Mapping[str, tuple]  # function → (parameter names it takes, whether it takes t)
    compiled: Any = dataclasses.field(default=None)  # CompiledFunctions: batch evaluators the compiled loop left


#: The compiled evaluator's slot of each function it takes (:mod:`robustrack.compiled.evaluate`).
_SLOTS = {"M": "mass", "Q": "force"}

#: The output shape of each function, as a function of n.
_TAILS = {"M": lambda n: (n, n), "Q": lambda n: (n,), "dM_dq": lambda n: (n, n, n),
          "dQ_dq": lambda n: (n, n), "dQ_dqd": lambda n: (n, n)}


@dataclasses.dataclass(frozen=True, eq=False)
class FunctionPlant(Plant):
    """A plant whose M and Q are the user's Python functions (build with :meth:`Plant.from_functions`).

    Parameters
    ----------
    spec : _Spec
        The functions and their description (shared by every :meth:`replace` copy).
    values : mapping of str to float or array
        The parameter values (arrays may carry leading sample axes, the batch contract).

    Examples
    --------
    >>> import numpy as np
    >>> spring = Plant.from_functions(lambda q, m: [[m]], lambda q, qd, m, k: -k * q,
    ...                               params={"m": 2.0, "k": 8.0}, names=["x"], kinds=["length"])
    >>> spring.unconstrained_acceleration([0.5], [0.0]).tolist()
    [-2.0]
    >>> spring.replace(m=np.array([1.0, 4.0])).unconstrained_acceleration([0.5], [0.0]).tolist()
    [[-4.0], [-1.0]]
    """

    spec: _Spec
    values: Mapping[str, Any]

    def __post_init__(self):
        clean = {}
        for name, value in dict(self.values).items():
            if name not in self.spec.core_ndim:
                raise ParameterError(f"FunctionPlant has no parameter `{name}`; its parameters are "
                                     f"{sorted(self.spec.core_ndim)}.")
            arr = finite(as_float_array(value, f"params[{name!r}]"), f"params[{name!r}]")
            if arr.ndim < self.spec.core_ndim[name]:
                raise ParameterError(f"`{name}` must have at least {self.spec.core_ndim[name]} axis (as given to "
                                     f"from_functions); got shape {arr.shape}.")
            if arr.ndim:
                arr = arr.copy()
                arr.setflags(write=False)
            clean[name] = float(arr) if arr.ndim == 0 else arr
        object.__setattr__(self, "values", types.MappingProxyType(clean))

    def __reduce__(self):  # the values' read-only view does not pickle; campaigns send plants to workers
        return (FunctionPlant, (self.spec, dict(self.values)))

    # -- the plant contract -------------------------------------------------

    @property
    def coordinates(self) -> tuple[str, ...]:
        """The coordinate names given to :meth:`Plant.from_functions`."""
        return self.spec.names

    @property
    def coordinate_kinds(self) -> tuple:
        """The kinds given to :meth:`Plant.from_functions` (None: unknown)."""
        return self.spec.kinds

    @property
    def params(self) -> dict:
        """The parameter values (name → value)."""
        return dict(self.values)

    def replace(self, **params) -> "FunctionPlant":
        """A copy with some parameter values changed (arrays with leading sample axes allowed)."""
        unknown = sorted(set(params) - set(self.spec.core_ndim))
        if unknown:
            raise ParameterError(f"FunctionPlant has no parameter(s) {unknown}; its parameters are "
                                 f"{sorted(self.spec.core_ndim)}.")
        return FunctionPlant(self.spec, {**self.values, **params})

    def mass_matrix(self, q, t=0.0) -> np.ndarray:
        """M(q, t) from the user's ``M``, shape (..., n, n)."""
        return self._call("M", (q,), t)

    def given_force(self, q, qd, t=0.0) -> np.ndarray:
        """Q(q, q̇, t) from the user's ``Q``, shape (..., n)."""
        return self._call("Q", (q, qd), t)

    def derivatives(self, q, qd, t=0.0) -> tuple:
        """∂M/∂q (..., n, n, n; last axis k in ∂M_ij/∂q_k), ∂Q/∂q and ∂Q/∂q̇ (..., n, n; [i, k] = ∂Q_i/∂x_k).

        From the functions given to :meth:`Plant.from_functions`, else central differences of M and Q
        (step ∛ε·max(|x|, 1): truncation and rounding error both ~ε^(2/3) ≈ 4e-11 relative).

        Parameters
        ----------
        q, qd : array_like (..., n)
        t : float or array_like

        Returns
        -------
        (ndarray, ndarray, ndarray)
        """
        fns = self.spec.functions
        q, qd = as_float_array(q, "q", ndim_min=1), as_float_array(qd, "qd", ndim_min=1)
        dM = self._call("dM_dq", (q,), t) if "dM_dq" in fns else _central(lambda x: self._call("M", (x,), t), q, 2)
        dQ_dq = (self._call("dQ_dq", (q, qd), t) if "dQ_dq" in fns
                 else _central(lambda x: self._call("Q", (x, qd), t), q, 1))
        dQ_dqd = (self._call("dQ_dqd", (q, qd), t) if "dQ_dqd" in fns
                  else _central(lambda x: self._call("Q", (q, x), t), qd, 1))
        return dM, dQ_dq, dQ_dqd

    @property
    def exact_derivatives(self) -> bool:
        """True when ``dM_dq``, ``dQ_dq`` and ``dQ_dqd`` were all given: the numpy tracking loop then builds
        the controlled system's Jacobian from :meth:`derivatives` (else it differences the right-hand side)."""
        return all(name in self.spec.functions for name in ("dM_dq", "dQ_dq", "dQ_dqd"))

    def codegen(self):
        """The functions for the compiled loop (:class:`~robustrack.plants.function_form.FunctionForm`).

        The loop compiles ``M``, ``Q`` and the derivatives given with numba (once per structure, cached by the
        functions' content; :mod:`robustrack.compiled.user`) and runs on numpy with a notice saying why where
        numba cannot. None (numpy, :attr:`no_form_reason`) when a parameter value has sample axes or two or
        more axes of its own.
        """
        if self._no_form() is not None:
            return None
        from .function_form import FunctionForm

        spec = self.spec
        layout, offset, flat = [], 0, []
        for name, value in self.values.items():
            arr = np.asarray(value, dtype=float)
            layout.append((name, offset, arr.shape))
            offset += arr.size
            flat.append(arr.reshape(-1))
        digest, cacheable = _structure(spec, tuple(layout))
        return FunctionForm(f"FunctionPlant({', '.join(spec.names)})/{digest}", np.concatenate(flat or [np.zeros(0)]),
                            spec.functions, spec.takes, tuple(layout), len(spec.names), cacheable, spec.compiled)

    def _no_form(self) -> str | None:
        for name, value in self.values.items():
            if np.ndim(value) != self.spec.core_ndim[name]:
                return f"has parameter values with sample axes (`{name}`: shape {np.shape(value)})"
            if self.spec.core_ndim[name] > 1:
                return f"has a parameter `{name}` with {self.spec.core_ndim[name]} axes (the compiled loop takes numbers and vectors)"
        return None

    @property
    def no_form_reason(self) -> str:
        """Said by the tracking loop's one-line notice when it runs on numpy without trying to compile."""
        return self._no_form() or "has no compiled form"

    # -- evaluation ---------------------------------------------------------

    def _call(self, name: str, states, t):
        spec, n = self.spec, self.n
        fn = spec.functions[name]
        tail = _TAILS[name](n)
        arrays = []
        for label, x in zip(("q", "qd"), states):
            arr = as_float_array(x, label, ndim_min=1)
            if arr.shape[-1] != n:
                raise ParameterError(f"`{label}` must have {n} entries {self.coordinates} on its last axis; "
                                     f"got shape {arr.shape}.")
            arrays.append(arr)
        t = as_float_array(t, "t")
        shapes = [a.shape[:-1] for a in arrays] + [t.shape] + [
            np.shape(v)[:np.ndim(v) - spec.core_ndim[k]] for k, v in self.values.items()]
        try:
            batch = np.broadcast_shapes(*shapes)
        except ValueError:
            raise ParameterError(f"The batch axes of q, qd, t and the parameter arrays must broadcast together; "
                                 f"got {shapes}.") from None
        wanted, takes_t = spec.takes[name]
        extra = {"t": t} if takes_t else {}
        if spec.vectorized or batch == ():
            try:
                val = np.asarray(fn(*arrays, **extra, **{k: self.values[k] for k in wanted}))
                return np.broadcast_to(val, batch + tail) if batch else val.reshape(tail)
            except RobustrackError:
                raise
            except Exception as exc:  # the user's function on a batch: say what the contract is
                if batch == ():
                    label = getattr(fn, "__qualname__", None) or repr(fn)
                    state = (f"t = {float(np.real(t)):.6g}, q = {np.round(np.real(arrays[0]), 6).tolist()}"
                             + (f", q̇ = {np.round(np.real(arrays[1]), 6).tolist()}" if len(arrays) > 1 else ""))
                    raise ParameterError(f"your function `{label}` (the {name} given to Plant.from_functions) "
                                         f"raised {type(exc).__name__}: {exc} at {state}; check that function "
                                         "at this state.") from exc
                raise ParameterError(batch_contract_message(f"`{name}` (vectorized=True)", batch, exc)
                                     + " Or pass vectorized=False to Plant.from_functions: robustrack then "
                                       "calls it once per state.") from exc
        if spec.compiled and name in _SLOTS and not any(np.iscomplexobj(x) for x in (*arrays, t, *self.values.values())):
            fast = batch_evaluation(self, _SLOTS[name], np.broadcast_to(arrays[0], batch + (n,)),
                                    np.broadcast_to(arrays[-1], batch + (n,)), t)  # the compiled functions, if loaded
            if fast is not None:
                return fast
        arrays = [np.broadcast_to(a, batch + (n,)) for a in arrays]
        t_b = np.broadcast_to(t, batch)
        values = {k: np.broadcast_to(v, batch + np.shape(v)[np.ndim(v) - spec.core_ndim[k]:])
                  for k, v in self.values.items() if k in wanted}
        first = None
        for idx in np.ndindex(*batch):
            kw = {k: (float(v[idx]) if spec.core_ndim[k] == 0 else v[idx]) for k, v in values.items()}
            if takes_t:
                kw["t"] = float(t_b[idx]) if not np.iscomplexobj(t_b) else t_b[idx]
            val = np.asarray(fn(*(a[idx] for a in arrays), **kw))
            if first is None:
                first = np.empty(batch + tail, dtype=complex if np.iscomplexobj(val) else float)
            if val.size != int(np.prod(tail)):
                raise ParameterError(f"`{name}` of the FunctionPlant must return shape {tail}; got {val.shape}.")
            first[idx] = val.reshape(tail)
        return first


_STRUCTURES: dict = {}


def _structure(spec: _Spec, layout: tuple) -> tuple[str, bool]:
    """``(digest, cacheable)`` of the functions' content and the parameter layout (computed once per spec)."""
    key = (id(spec), layout)
    if key not in _STRUCTURES:
        from .function_form import function_digest

        digests = {name: function_digest(fn) for name, fn in spec.functions.items()}
        cacheable = all(d is not None for d in digests.values())
        text = repr((sorted(digests.items()) if cacheable else [id(spec)], sorted(spec.takes.items()),
                     [(name, shape) for name, _, shape in layout], len(spec.names)))
        _STRUCTURES[key] = (hashlib.sha256(text.encode()).hexdigest()[:16], cacheable, spec)  # spec: keeps id alive
    return _STRUCTURES[key][:2]


def _central(fn, x, tail_ndim: int):
    """∂fn/∂x by central differences (x: (..., n)); the differentiated coordinate is the last axis."""
    h = np.cbrt(np.finfo(float).eps) * np.maximum(np.abs(x), 1.0)
    cols = []
    for k in range(x.shape[-1]):
        step = np.zeros_like(x)
        step[..., k] = h[..., k]
        hk = h[..., k].reshape(h.shape[:-1] + (1,) * tail_ndim)
        cols.append((fn(x + step) - fn(x - step)) / (2 * hk))
    return np.stack(cols, axis=-1)


def from_functions(M, Q, *, params=None, names=None, kinds=None, vectorized: bool = False, dM_dq=None, dQ_dq=None,
                   dQ_dqd=None) -> FunctionPlant:
    """A plant from Python functions of M and Q (see :meth:`Plant.from_functions`)."""
    functions = {"M": M, "Q": Q, "dM_dq": dM_dq, "dQ_dq": dQ_dq, "dQ_dqd": dQ_dqd}
    for key, fn in functions.items():
        if fn is not None and not callable(fn):
            raise ParameterError(f"`{key}` must be a callable; got {fn!r}.")
    if not callable(M) or not callable(Q):
        raise ParameterError("`M` and `Q` are required: callables M(q, **params) and Q(q, qd, **params).")
    functions = {k: f for k, f in functions.items() if f is not None}
    if names is None:  # required: a keyword with no default would be a bare TypeError naming nothing to do
        raise ParameterError("Plant.from_functions needs `names=`: the coordinate names, one per coordinate, in "
                             "the order of q (e.g. names=['shoulder', 'elbow']); every number, figure and report "
                             "row is labelled with them.")
    if isinstance(names, str) or not names or not all(isinstance(s, str) for s in names):
        raise ParameterError(f"`names` must list the coordinate names (strings), one per coordinate; got {names!r}.")
    names = tuple(names)
    if len(set(names)) != len(names):
        raise ParameterError(f"`names` must be distinct; got {names}.")
    from .units import COORDINATE_KINDS

    kinds = (None,) * len(names) if kinds is None else tuple(kinds)
    if len(kinds) != len(names) or any(k not in COORDINATE_KINDS for k in kinds):
        raise ParameterError(f"`kinds` must give one of {[k for k in COORDINATE_KINDS if k]} (or None: unknown) "
                             f"for each coordinate {names}; got {kinds!r}.")
    if params is not None and not isinstance(params, Mapping):
        raise ParameterError(f"`params` must be a dict {{name: value}}; got {params!r}.")
    params = dict(params or {})
    bad = [k for k in params if not isinstance(k, str) or not k.isidentifier() or k in ("q", "qd", "t")]
    if bad:
        raise ParameterError(f"`params` keys must be identifiers other than q, qd, t (they are passed by keyword); "
                             f"got {bad}.")
    core = {k: int(np.ndim(v)) for k, v in params.items()}
    from .function_form import CompiledFunctions

    spec = _Spec(functions, names, kinds, core, bool(vectorized),
                 {k: _arguments(k, f, 1 if k in ("M", "dM_dq") else 2, params) for k, f in functions.items()},
                 CompiledFunctions())
    plant = FunctionPlant(spec, params)
    return plant
