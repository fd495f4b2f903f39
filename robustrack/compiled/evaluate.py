"""The one evaluator of compiled forms for the numpy side: batches of states, and one state's constrained motion.

After a run the numpy side evaluates the plant and the constraint again at every output time (q̈ and Qᶜ by the
fundamental equation, W 2.2.7–2.2.9; the residuals; the contact forces), and Γ's estimate at thousands of
sampled states. Where an object has a compiled form whose functions this process has loaded (a compiled run,
``robustrack compile``), those batches go through its compiled functions here, by one entry point,
:func:`evaluate` (``docs/guide/compiled.md``, "After the run: one evaluator"):

- a robot (:class:`~robustrack.plants.URDFPlant`): ``"mass"`` and ``"force"`` — its C functions
  (:func:`~robustrack.compiled.rigid_body.robot_function`) row by row (:func:`evaluate_rows`) — and
  ``"positions"``, the joints' origins (:func:`joint_origins`);
- a plant from the user's functions (:class:`~robustrack.plants.FunctionPlant`): ``"mass"`` and ``"force"``, its
  compiled wrappers (:mod:`~robustrack.compiled.user`) row by row with each state's parameter row (sampled
  plants too);
- a frame constraint (:class:`~robustrack.plants.FrameConstraint`): ``"frames"`` — A, b, φ, φ̇ and each block's
  frame pose at every state in one call (:func:`frame_batch`, the rows of
  :func:`~robustrack.compiled.rigid_body.frame_rows`).

Generated plants and constraints (a symbolic form's C functions, :mod:`~robustrack.compiled.codegen`) keep their
numpy batches: those are vectorized already (the triple pendulum's M, Q, A and b at 1001 states: 0.2–0.3 ms each
in numpy, 0.04–0.12 ms compiled) and they are the bit-identical numbers of the reference runs. Their C functions
serve :func:`motion`, like every other form's.

:func:`motion` is one state's q̈ and Qᶜ from Python — what :func:`robustrack.plants.constrained_motion` returns —
in one compiled call (:func:`motion_at`): the C functions of the plant's and the constraint's forms (a robot's,
a user's, a generated structure's, a frame constraint's), the fundamental equation
(:func:`robustrack.compiled.motion.motion`, the integrators' own), and the checks of the numpy path (M, Q, A, b
finite, M symmetric and safely positive definite, every row of A q̈ = b met); where one fails it answers None and
the numpy path solves the state and says what is wrong.

The numbers are the numpy side's to rounding: the rigid-body kernels agree with Pinocchio to ≤ 1e-11 relative
(observed ≤ 1.2e-14, ``tests/test_rigid_body.py``), a user's compiled function with the function itself to a few
ulps (``tests/test_user_compiled.py``), and the compiled fundamental equation with
:func:`robustrack.mechanics.solve_constrained` to cond(B)·ε (``tests/test_kernels.py``).

Nothing here compiles a plant's functions: they are used where a compiled loop (or ``robustrack compile``) has
loaded them in this process (:func:`remember`). The evaluator's own kernels compile once per machine: the batch
kernels with the robots' part (:func:`load`), :func:`motion_at` the first time :func:`motion` is asked (the
loop's part "motion-python", said as compiling; ``robustrack compile`` compiles it ahead).
"""

from __future__ import annotations

import sys
import weakref

import numpy as np

from .cache import kernel
from .mechanics import cholesky_solve_into, definite_factor
from .rigid_body import W_O, W_SIZE, frame_rows_posed, world_motion
from .systems import _alive, _call_motion, _data, call
from ..mechanics import ROW_MISFIT_RTOL, ConstrainedMotion
from ..plants.robot_data import N_AT

__all__ = ["evaluate", "motion", "remember", "load", "evaluate_rows", "frame_batch", "joint_origins", "motion_at"]


# --------------------------------------------------------------------------- #
# the kernels
# --------------------------------------------------------------------------- #
@kernel
def evaluate_rows(address, q, qd, t, p, out):
    """Fill ``out[i]`` with the C function at ``address`` (:data:`~robustrack.compiled.systems.PLANT_FUNCTION`) of
    row i of ``q``, ``qd``, ``t`` and of ``p`` (its row i, or its only row: one parameter vector for every state);
    C-contiguous float64."""
    shared = p.shape[0] == 1
    for i in range(q.shape[0]):
        call(address, q[i], qd[i], t[i], p[0] if shared else p[i], out[i])


@kernel
def frame_batch(q, qd, c, targets, out, residuals, poses):
    """Frame constraints' rows at every state (row i of ``q``, ``qd``): A then b into ``out[i]`` (m n + m), φ then φ̇
    into ``residuals[i]`` (2m), each block's pose into ``poses[i]`` (12 per block: rotation row-major, origin);
    ``c`` the packed robot and program, ``targets[i]`` the moving targets' x, ẋ, ẍ at state i's time
    (:func:`~robustrack.compiled.rigid_body.frame_rows`)."""
    for i in range(q.shape[0]):
        frame_rows_posed(q[i], qd[i], c, targets[i], out[i], residuals[i], poses[i])


@kernel
def joint_origins(md, q, out):
    """The joints' origins in the world at every state: ``out[i, 3 j + a]`` (the world motion's origins, the
    joint frames Pinocchio's forward kinematics places)."""
    n = int(md[N_AT])
    S = np.empty((n, W_SIZE))
    still = np.zeros(n)
    for i in range(q.shape[0]):
        world_motion(md, q[i], still, S)
        for j in range(n):
            for a in range(3):
                out[i, 3 * j + a] = S[j, W_O + a]


@kernel
def motion_at(addresses, pn, c, m, q, qd, t, extra, out):
    """One state's constrained motion into ``out`` = [q̈ (n), Qᶜ (n), ‖A q̈ − b‖₂, status].

    ``addresses`` = [M, Q, A b, motion, pinv]: the C functions of the plant's form (parameters ``pn``), of the
    constraint's (parameters ``c``, ``m`` rows; unused at m = 0), the fundamental equation
    (:data:`~robustrack.compiled.motion.MOTION_FUNCTION`) and the pseudo-inverse of two or more rows it calls
    (:func:`~robustrack.compiled.motion.rows_pinv`; 0 for one row or none); ``extra`` is added to Q. Status 0: solved, every check
    of :func:`robustrack.mechanics.solve_constrained` passed; 1: M, Q, A or b not finite, M not symmetric (to
    1e-10 of its size) or not safely positive definite (the augmented system's case), or a row of A q̈ = b missed
    by more than :data:`~robustrack.mechanics.ROW_MISFIT_RTOL` of its scale — the numpy path then decides.
    """
    n = q.shape[0]
    M = np.empty((n, n))
    Q = np.empty(n)
    Ab = np.zeros(m * n + m)
    L = np.empty((n, n))
    Li = np.empty((n, n))
    a = np.empty(n)
    y = np.empty(n)
    qdd = np.empty(n)
    Qc = np.empty(n)
    act = np.zeros((n + 1, 0))
    tau = np.zeros(0)
    work = np.empty(3 * n * n + 4 * n + 2 * m * n + m)  # fundamental_work_size(n, m)
    out[2 * n + 1] = 1.0
    call(addresses[0], q, qd, t, pn, M)
    call(addresses[1], q, qd, t, pn, Q)
    if m > 0:
        call(addresses[2], q, qd, t, c, Ab)
    A = Ab[:m * n].reshape((m, n))
    b = Ab[m * n:]
    scale = 0.0
    for i in range(n):
        Q[i] += extra[i]
        if not np.isfinite(Q[i]):
            return
        for j in range(n):
            if not np.isfinite(M[i, j]):
                return
            scale = max(scale, abs(M[i, j]))
    for i in range(Ab.shape[0]):
        if not np.isfinite(Ab[i]):
            return
    asym = 0.0
    for i in range(n):
        for j in range(n):
            asym = max(asym, abs(M[i, j] - M[j, i]))
    if asym > 1e-10 * max(scale, 2.2250738585072014e-308):
        return
    if not definite_factor(M, L, Li):  # else the augmented system's case (mechanics._cholesky_or_augment)
        return
    ok = _call_motion(addresses[3], _data(M), _data(Q), _data(A), _data(b), _data(act), n, m, 0, _data(qdd), _data(Qc),
                      _data(tau), _data(work), addresses[4]) != 0
    _alive(M)
    _alive(Q)
    _alive(A)
    _alive(b)
    _alive(act)
    _alive(qdd)
    _alive(Qc)
    _alive(tau)
    _alive(work)
    if not ok:
        return
    cholesky_solve_into(L, Q, a, y)  # a = M⁻¹ (Q + extra): the scale of a row's misfit (mechanics.row_misfit)
    size = 0.0
    size_a = 0.0
    for i in range(n):
        size += qdd[i] * qdd[i]
        size_a += a[i] * a[i]
    size = np.sqrt(size) + np.sqrt(size_a)
    total = 0.0
    for r in range(m):
        res = -b[r]
        row = 0.0
        for k in range(n):
            res += A[r, k] * qdd[k]
            row += A[r, k] * A[r, k]
        total += res * res
        if abs(res) > ROW_MISFIT_RTOL * max(np.sqrt(row) * size + abs(b[r]), 2.2250738585072014e-308):
            return
    for i in range(n):
        out[i] = qdd[i]
        out[n + i] = Qc[i]
    out[2 * n] = np.sqrt(total)
    out[2 * n + 1] = 0.0


# --------------------------------------------------------------------------- #
# the compiled functions this process has loaded
# --------------------------------------------------------------------------- #
_BOOK: dict = {}  # (form key, n, slot) → the C function (a generated structure's, a moving target's, a user's)
#: The evaluator's own kernels loaded; the fundamental equation's address and how to load it (:func:`found_motion`).
_READY: dict = {"rows": False, "robot": False, "motion": None, "loader": None, "cached": None}


def remember(form, n: int, slot: str, function) -> None:
    """Keep ``function`` (a numba ``cfunc``), the compiled ``slot`` of ``form`` on n coordinates, for :func:`motion`:
    :func:`robustrack.compiled.loop` calls this for every function it loads.

    Parameters
    ----------
    form : SymbolicForm, KernelForm or FunctionForm
    n : int
    slot : str
        ``"mass"``, ``"force"``, ``"ab"``, …
    function : CFunc
    """
    _BOOK[form.key, n, slot] = function
    _open()


def _function(form, n: int, slot: str):
    """The loaded C function ``slot`` of ``form`` (None: not loaded in this process)."""
    from ..symbolic import KernelForm
    from .rigid_body import _CFUNCS

    if isinstance(form, KernelForm) and form.kernels.get(slot) is not None:
        return _CFUNCS.get(form.kernels[slot])
    if hasattr(form, "functions"):  # a FunctionForm: its structure's own registry (compiled.user)
        return (form.compiled or {}).get(_USER_SLOT.get(slot))
    return _BOOK.get((form.key, n, slot))


_USER_SLOT = {"mass": "M", "force": "Q"}


def load(what: str) -> None:
    """Load (compiling once per machine) the evaluator's batch kernels and open the numpy side's door to it.

    Parameters
    ----------
    what : {"rows", "robot"}
        ``"rows"``: :func:`evaluate_rows` (a user's functions, row by row; :mod:`~robustrack.compiled.user` asks it
        when it loads them); ``"robot"``: that and the robots' :func:`frame_batch` and :func:`joint_origins`
        (:func:`~robustrack.compiled.rigid_body.robot_function` asks it with the robots' part, inside its compile
        notice).
    """
    if not _READY["rows"]:
        two, one = np.zeros((1, 2)), np.zeros(1)
        evaluate_rows.compile(_types((0, two, two, one, two, two)))
        _READY["rows"] = True
    if what == "robot" and not _READY["robot"]:
        two = np.zeros((1, 2))
        frame_batch.compile(_types((two,) * 2 + (np.zeros(2),) + (two,) * 4))
        joint_origins.compile(_types((np.zeros(2), two, two)))
        _READY["robot"] = True
    _open()


def _open() -> None:
    """Register this module with the numpy side (:mod:`robustrack._evaluator`)."""
    from .. import _evaluator

    _evaluator.register(sys.modules[__name__])


def _types(args) -> tuple:
    import numba

    return tuple(numba.typeof(a) for a in args)


# --------------------------------------------------------------------------- #
# batches: the one entry point
# --------------------------------------------------------------------------- #
def evaluate(obj, what: str, q, qd=None, t=0.0):
    """``what`` of ``obj`` at a batch of states through its compiled functions (module docstring).

    Parameters
    ----------
    obj : URDFPlant, FunctionPlant or FrameConstraint
    what : str
        ``"mass"``, ``"force"``, ``"positions"`` (a robot) or ``"frames"`` (a frame constraint).
    q, qd : ndarray (..., n)
        Float arrays of one shape with at least one batch axis (a robot, a frame constraint: as given; a plant
        from functions: already broadcast).
    t : float or ndarray (...)
        Time(s), broadcasting with the batch axes.

    Returns
    -------
    ndarray, tuple or None
        M (..., n, n), Q (..., n), the joints' origins (..., n, 3), or for ``"frames"`` ``(A (..., m, n),
        b (..., m), φ (..., m), φ̇ (..., m), poses (..., blocks, 12))``; None where this cannot answer (the
        functions not loaded here, one state, sampled robot parameters, another dtype or shapes): the caller
        evaluates by itself.
    """
    if not _batch_of(q, qd):
        return None
    from ..plants import FrameConstraint, FunctionPlant, URDFPlant
    if isinstance(obj, URDFPlant):
        return _robot(obj, what, q, qd)
    if isinstance(obj, FrameConstraint):
        return _frames(obj, what, q, qd, t)
    if isinstance(obj, FunctionPlant):
        return _user(obj, what, q, qd, t)
    return None


def _batch_of(q, qd) -> bool:
    """float64 arrays of one shape with a batch axis."""
    return (type(q) is np.ndarray and q.dtype == np.float64 and q.ndim >= 2
            and (qd is None or (type(qd) is np.ndarray and qd.dtype == np.float64 and qd.shape == q.shape)))


def _rows(x, n):
    """``x`` (..., n) as rows (N × n), a writable C array: the one type the kernels are compiled for."""
    x = x.reshape(-1, n)
    return x if x.flags.c_contiguous and x.flags.writeable else np.array(x, order="C")


def _robot(plant, what, q, qd):
    from .rigid_body import _CFUNCS

    n = plant.n
    if not _READY["robot"] or q.shape[-1] != n or not plant._scratch["scalar"]:
        return None
    packed = plant.packed
    if packed is None:
        return None
    batch, flat = q.shape[:-1], _rows(q, n)
    if what == "positions":
        out = np.empty((flat.shape[0], 3 * n))
        joint_origins(packed, flat, out)
        return out.reshape(batch + (n, 3))
    function = _CFUNCS.get(what) if what in ("mass", "force") else None
    if function is None or (what == "force" and qd is None):
        return None
    tail = (n, n) if what == "mass" else (n,)
    out = np.empty((flat.shape[0], n * n if what == "mass" else n))
    evaluate_rows(function.address, flat, flat if qd is None else _rows(qd, n), np.zeros(flat.shape[0]),
                  packed[None, :], out)  # M reads no q̇: q stands in; one robot for every row
    return out.reshape(batch + tail)


def _frames(constraint, what, q, qd, t):
    if what != "frames" or not _READY["robot"] or q.shape[-1] != constraint.n or qd is None:
        return None
    form = constraint.codegen()
    if form is None:
        return None
    n, m, blocks = constraint.n, constraint.m, len(constraint.blocks)
    batch = q.shape[:-1]
    flat_q, flat_v = _rows(q, n), _rows(qd, n)
    rows = flat_q.shape[0]
    t = np.broadcast_to(np.asarray(t, dtype=float), batch).reshape(rows)
    targets = constraint.target_values(t)
    out, res, poses = np.empty((rows, m * n + m)), np.empty((rows, 2 * m)), np.empty((rows, 12 * blocks))
    frame_batch(flat_q, flat_v, _values(form), targets, out, res, poses)
    return (out[:, :m * n].reshape(batch + (m, n)), out[:, m * n:].reshape(batch + (m,)),
            res[:, :m].reshape(batch + (m,)), res[:, m:].reshape(batch + (m,)), poses.reshape(batch + (blocks, 12)))


def _values(form) -> np.ndarray:
    """A form's values as the kernels take them: a writable C array (a KernelForm's are read-only)."""
    return np.array(form.values, dtype=float)


def _user(plant, what, q, qd, t):
    compiled = plant.spec.compiled
    function = None if not compiled or not _READY["rows"] else compiled.get(_USER_SLOT.get(what))
    if function is None:
        return None
    n, batch = plant.n, q.shape[:-1]
    size = int(np.prod(batch))
    spec = plant.spec
    rows = [np.broadcast_to(v, batch + np.shape(v)[np.ndim(v) - spec.core_ndim[k]:]).reshape(size, -1)
            for k, v in plant.values.items()]
    p = np.ascontiguousarray(np.concatenate(rows, axis=1) if rows else np.zeros((size, 1)))
    tail = (n, n) if what == "mass" else (n,)
    out = np.empty((size, n * n if what == "mass" else n))
    flat_q = _rows(q, n)
    evaluate_rows(function.address, flat_q, flat_q if qd is None else _rows(qd, n),
                  np.array(np.broadcast_to(t, batch).reshape(size), dtype=float), p, out)
    return out.reshape(batch + tail)


# --------------------------------------------------------------------------- #
# one state
# --------------------------------------------------------------------------- #
def motion(plant, constraint, q, qd, t, force):
    """q̈ and Qᶜ of ``M q̈ = Q + force + Qᶜ``, ``A q̈ = b`` at one state in one compiled call (:func:`motion_at`).

    Parameters
    ----------
    plant : Plant
    constraint : Constraint or None
    q, qd : ndarray (n,)
        float64 arrays.
    t : float
    force : ndarray (n,) or None

    Returns
    -------
    ConstrainedMotion or None
        As :func:`robustrack.plants.constrained_motion` gives it; None where this cannot answer (the forms'
        functions not loaded in this process, another type of argument, a check of the numpy path not passed).
    """
    n = plant.n
    q, qd = _state(q, n), _state(qd, n)
    extra = _ZEROS[n] if force is None else _state(force, n)
    if q is None or qd is None or extra is None or type(t) not in _TIMES:
        return None  # a batch, or another type: the numpy path (before anything is loaded for it)
    entry = _entry(plant, constraint)
    if entry is None:
        return None
    addresses, pn, c, m, n, _ = entry
    out = np.empty(2 * n + 2)
    motion_at(addresses, pn, c, m, q, qd, float(t), extra, out)
    if out[2 * n + 1] != 0.0:
        return None
    if constraint is None:
        return ConstrainedMotion(qdd=out[:n], Qc=np.zeros(n), residual=np.zeros(()), augmented=_NOT_AUGMENTED)
    return ConstrainedMotion(qdd=out[:n], Qc=out[n:2 * n], residual=out[2 * n], augmented=_NOT_AUGMENTED)


_TIMES = (float, int, np.float64)
_NOT_AUGMENTED = np.zeros((), bool)  # every answer's (read-only: shared)
_NOT_AUGMENTED.setflags(write=False)


class _Zeros(dict):
    def __missing__(self, n):
        self[n] = np.zeros(n)
        return self[n]


_ZEROS = _Zeros()


def _state(x, n):
    """``x`` as :func:`motion_at` takes it (a writable C float64 (n,) array: no other type compiles), or None."""
    if type(x) is not np.ndarray or x.dtype != np.float64 or x.shape != (n,):
        return None
    return x if x.flags.c_contiguous and x.flags.writeable else np.array(x)


_ENTRIES: dict = {}


def _entry(plant, constraint):
    """``(addresses, pn, c, m, n, functions)`` of a plant and a constraint whose forms' functions are loaded, kept
    per pair of objects (both immutable) while they live; None otherwise."""
    key = (id(plant), id(constraint))
    hit = _ENTRIES.get(key)
    if hit is not None and hit[0]() is plant and hit[1]() is constraint:
        return hit[2]
    entry = _make_entry(plant, constraint)
    if entry is not None:
        try:
            refs = (weakref.ref(plant), (lambda: None) if constraint is None else weakref.ref(constraint))
        except TypeError:  # an object without weak references: looked up at every call
            return entry
        if len(_ENTRIES) > 256:
            _ENTRIES.clear()
        _ENTRIES[key] = refs + (entry,)
    return entry


def _make_entry(plant, constraint):
    fp = _form(plant)
    fc = _form(constraint) if constraint is not None else None
    if fp is None or (constraint is not None and fc is None):
        return None
    n = int(plant.n)
    functions = [_function(fp, n, "mass"), _function(fp, n, "force"), _function(fc, n, "ab") if fc is not None else 0]
    if any(f is None for f in functions):
        return None
    address = _motion_address()
    if address is None:
        return None
    m = int(constraint.m) if constraint is not None else 0
    if m >= 2:
        from .motion import rows_pinv

        pinv = rows_pinv().address  # compiled once per machine, the first time two or more rows need it
    else:
        pinv = 0
    addresses = np.array([f.address for f in functions[:2]] + [functions[2].address if fc is not None else 0,
                                                                address, pinv], dtype=np.int64)
    c = _values(fc) if fc is not None else np.zeros(1)
    return addresses, _values(fp), c, m, n, functions


def _form(obj):
    codegen = getattr(obj, "codegen", None)
    return codegen() if callable(codegen) else None


def _motion_address():
    """The address of the fundamental equation's C function, :func:`motion_at` loaded; None until a compiled loop of
    this process has loaded the fundamental equation (:func:`found_motion`)."""
    if _READY["motion"] is None:
        load_motion = _READY["loader"]
        if load_motion is None:
            return None
        function = load_motion()
        _READY["motion"] = (function.address, function)
    return _READY["motion"][0]


def found_motion(loader, cached) -> None:
    """``loader()`` gives the fundamental equation's C function (:mod:`~robustrack.compiled.motion`) with
    :func:`motion_at` loaded — compiled once per machine and said so (:func:`compile_motion`); the loop hands it
    over when it loads the fundamental equation, and :func:`motion` calls it the first time it is asked.
    ``cached()`` says whether this machine's cache holds :func:`motion_at` (loading it compiles nothing)."""
    _READY["loader"] = loader
    _READY["cached"] = cached
    _open()


def motion_compiled() -> bool:
    """Whether :func:`motion` answers without compiling: :func:`motion_at` loaded in this process, or in the
    machine's cache and the fundamental equation loaded (:func:`found_motion`).

    Returns
    -------
    bool
    """
    return _READY["motion"] is not None or (_READY["cached"] is not None and _READY["cached"]())


def compile_motion() -> None:
    """Compile :func:`motion_at` (or load it from the cache) for the one type :func:`motion` passes."""
    one = np.zeros(1)
    motion_at.compile(_types((np.zeros(4, np.int64), one, one, 0, one, one, 0.0, one, one)))
