"""The compiled tracking loop: the package's kernels, compiled once per machine, and a structure's own functions.

What is compiled, and when
--------------------------
- **Once per machine** (cached in :func:`cache_dir`): the kernels, ordinary modules beside the numpy code
  they mirror — :mod:`robustrack.compiled.mechanics` (linear algebra, the fundamental equation),
  :mod:`robustrack.compiled.laws` (the control laws and functions of :mod:`robustrack.controllers.laws`, one
  source for both paths, each law compiled on its own and called by the loop as a first-class function, so
  a user's law compiles only itself),
  :mod:`~robustrack.compiled.actuators`, :mod:`~robustrack.compiled.systems` (the three
  systems) and the integrators :mod:`~robustrack.compiled.dop853`, :mod:`~robustrack.compiled.bdf`,
  :mod:`~robustrack.compiled.hold`. They are generic in the plant, so no plant recompiles them. They
  compile in parts (:data:`PARTS`), each the first time a loop needs it: a nominal run compiles the
  fundamental equation and DOP853 only, a tracking run adds the controlled and uncompensated systems
  and BDF (a helper process compiles those meanwhile), a sampled law the sample-and-hold integrator,
  actuators their own variants of the motion and the controlled system, a constraint of two or more
  rows the fundamental equation with their pseudo-inverse (which the helper of a machine's first tracking run also
  compiles, after its own parts: :func:`_compile_spare`), a campaign the measurements along its
  samples, scipy's integrators the systems they call (:func:`compile_later`) — a machine that never
  uses a part never compiles it. Kernels that many others call (the nominal side, a generated function's
  call) are compiled apart, once, and called; only small plumbing is written into its callers by numba.
- **Once per plant structure**: the small functions :mod:`~robustrack.compiled.codegen` generates from a
  plant's or a constraint's symbolic form (M, Q, their derivatives, A and b) — about a second for a
  structure, sympy included. They are C functions (``numba.cfunc``) that reach the kernels by address in
  the record :class:`~robustrack.compiled.systems.Model`; parameter values are runtime arguments, so
  one structure serves the nominal plant and every perturbed actual plant.
- **Robots** (:class:`~robustrack.plants.URDFPlant`, :class:`~robustrack.plants.FrameConstraint`): their form is a
  :class:`~robustrack.symbolic.KernelForm` — the functions are the prebuilt C functions of
  :mod:`~robustrack.compiled.rigid_body` (the parts "robot" and "robot-derivatives", once per machine) and the
  robot is their parameter data, so a payload or a link mass compiles nothing; a frame constraint whose
  target moves adds one small generated function of t per structure.
- The cache folder (:func:`check_cache_dir`) must be writable; a damaged cached file or compiled kernel
  is generated or compiled again, with a notice.

:func:`compiled_loop` compiles what is missing before anything runs and says so (:class:`CompileNotice`:
what, once per machine, where, how long); ``robustrack compile`` does it ahead of time
(:func:`compile_kernels`). Cached files are written to a temporary name and renamed into place, so two
processes starting at once never read a half-written file.

When nothing is compiled
------------------------
A plant or constraint without a symbolic form (a user's Python callable), a compensator or control
function that is not built in, a callable input matrix B(q, t), or numba missing: the loop runs on the
numpy reference (:mod:`robustrack.tracking.rhs`) and :func:`fallback_reason` says why in one line.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import sys
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .._evaluator import Pairs
from .cache import KERNEL_MODULES as _KERNEL_MODULES, NOT_KERNELS, first_class, first_class_functions, numba_dir
from .cache import kernels_digest as _kernels_digest
from .notice import CompileNotice, check_interrupted, compile_reporter, compiling
from . import store as _store
from .store import check_cache_dir, digest as _digest, load as _load, path as _path

__all__ = ["CompiledLoop", "CompileNotice", "compiled_loop", "compile_kernels", "fallback_reason", "cache_dir",
           "check_cache_dir",
           "kernel_law", "dense", "no_dense", "tolerances", "limits", "compile_reporter"]



def cache_dir() -> Path:
    """Where every compiled kernel is kept (:func:`robustrack.compiled.cache.cache_dir`).

    Returns
    -------
    pathlib.Path
    """
    from .cache import cache_dir as where

    return where()


# --------------------------------------------------------------------------- #
# what the kernels take
# --------------------------------------------------------------------------- #
def kernel_law(compensator, n: int):
    """The compensator's :class:`~robustrack.compiled.laws.Law` for the kernels; None if it has none.

    Parameters
    ----------
    compensator : Compensator or None
        None is "no compensation" (u = 0).
    n : int
        Number of coordinates.

    Returns
    -------
    Law or None
        None for a law the kernels do not know (:meth:`~robustrack.controllers.Compensator.kernel_law`).
    """
    from .laws import compiled_law

    call = None if compensator is None else compensator.kernel_law(n)
    if compensator is not None and call is None:
        return None
    return compiled_law(call, _compile_law)


def _compile_law(load, law, ours: bool) -> None:
    """``load()`` (a law's compile) with this machine's cache around it: a package law's first compile is said
    and stamped (cached once per machine), and a damaged cache repaired (:func:`_repairing`). A user's law is
    compiled in memory, outside the cache: what numba makes of it says nothing of the cache, which stays."""
    if not ours:
        return load()

    def announced():
        stamp = _part_stamp(f"law-{law.__name__}")
        if stamp.exists():
            return load()
        with compiling([], [f"the control law {law.__name__}"], cache_dir()):
            load()
        stamp.parent.mkdir(parents=True, exist_ok=True)
        stamp.touch()

    _repairing(announced)


def dense(nominal_solution):
    """The nominal solution as the kernels read it.

    Parameters
    ----------
    nominal_solution : NominalSolution
        From :func:`~robustrack.tracking.integrate.integrate_nominal`.

    Returns
    -------
    Dense
        :class:`~robustrack.compiled.systems.Dense`, C-contiguous float64 arrays.
    """
    from .systems import Dense

    sol = nominal_solution
    return Dense(*(np.ascontiguousarray(a, dtype=float) for a in (sol.t, sol.y[:-1], sol.F, sol.h)))


def no_dense(d: int):
    """A placeholder :class:`~robustrack.compiled.systems.Dense` for a kernel that reads no nominal solution.

    Parameters
    ----------
    d : int
        The state size 2n.

    Returns
    -------
    Dense
    """
    from .systems import Dense

    return Dense(np.zeros(2), np.zeros((1, d)), np.zeros((1, 7, d)), np.ones(1))


def tolerances(rtol, atol) -> tuple[float, float]:
    """``(rtol, atol)`` as the kernels take them.

    Parameters
    ----------
    rtol, atol : float

    Returns
    -------
    tuple of float
    """
    return float(rtol), float(atol)


def limits(x0, max_nfev=None) -> tuple[float, float]:
    """``(max_nfev, max_abs_state)`` as the integrators take them (:mod:`~robustrack.tracking.defaults`).

    Parameters
    ----------
    x0 : array_like
        The initial state: the state limit is :data:`~robustrack.tracking.defaults.STATE_LIMIT` times
        ``max(1, max |x0|)``.
    max_nfev : float, optional
        The evaluation limit (default :data:`~robustrack.tracking.defaults.MAX_EVALUATIONS`).

    Returns
    -------
    tuple of float
    """
    from ..tracking.defaults import MAX_EVALUATIONS, STATE_LIMIT

    scale = max(1.0, float(np.max(np.abs(x0)))) if np.size(x0) else 1.0
    return float(MAX_EVALUATIONS if max_nfev is None else max_nfev), STATE_LIMIT * scale


@dataclass(frozen=True)
class CompiledLoop:
    """The kernels' view of one (nominal, actual, constraint, actuators) loop.

    Attributes
    ----------
    model : Model
        :class:`~robustrack.compiled.systems.Model`: the structure's generated functions, the parameter
        values of both plants and the constraint, its rows and the actuators ``[B; τ_max]``.
    nominal, uncompensated, controlled : first-class functions
        The systems the integrators take as arguments: :func:`~robustrack.compiled.systems.nominal_rhs`,
        :func:`~robustrack.compiled.systems.uncompensated_rhs` and
        :func:`~robustrack.compiled.systems.controlled_eval` (:func:`~robustrack.compiled.cache.first_class`).
    """

    model: tuple
    nominal: object
    uncompensated: object
    controlled: object

    @property
    def n(self) -> int:
        return self.model.act.shape[0] - 1


def fallback_reason(nominal, actual, constraint, actuators=None) -> str | None:
    """Why the loop of these objects cannot be compiled (None if it can).

    Parameters
    ----------
    nominal, actual : Plant
    constraint : Constraint or None
    actuators : Actuators, optional
        A callable input matrix B(q, t) has no compiled form.

    Returns
    -------
    str or None
        One line naming the object without a symbolic form, or numba missing.
    """
    for what, obj in (("nominal plant", nominal), ("actual plant", actual), ("constraint", constraint)):
        form = _form(obj) if obj is not None else None
        if obj is not None and form is None:
            why = getattr(obj, "no_form_reason", None) or "has no symbolic form"
            return f"the {what} {type(obj).__name__} {why}"
        if _forced(form) and what != "actual plant":
            return (f"the {what} {type(obj).__name__} adds a given force δQ to a robot or a plant from functions: "
                    "compiled in the actual plant only (the nominal model is the controller's)")
        form = form.base if _forced(form) else form
        why = _user_failure(form) if _user(form) else None
        if why is not None:
            return f"the {what} {type(obj).__name__}'s {why}"
    if actuators is not None and actuators.B is None:
        return "the actuators' input matrix B(q, t) is a Python callable"
    try:
        import numba  # noqa: F401
    except ImportError:  # pragma: no cover - numba is a dependency
        return "numba is not installed"
    return None


def _form(obj):
    codegen = getattr(obj, "codegen", None)
    return codegen() if callable(codegen) else None


def _forced(form) -> bool:
    """Whether ``form`` is a :class:`~robustrack.symbolic.ForcedForm` (a robot's or a user's form plus δQ's terms)."""
    from ..symbolic import ForcedForm

    return isinstance(form, ForcedForm)


def _apart(form):
    """``(base form, δQ's terms or None)`` of the actual plant's form: a
    :class:`~robustrack.symbolic.ForcedForm`'s two parts (the Model's ``act_*`` and ``act_dforce*`` slots)."""
    return (form.base, form.terms) if _forced(form) else (form, None)


def _user(form) -> bool:
    """Whether ``form`` is a plant from the user's functions (:mod:`~robustrack.compiled.user`), not a symbolic form."""
    return form is not None and hasattr(form, "functions")


def _user_failure(form) -> str | None:
    """Why numba cannot compile a user's M or Q (or a derivative given); compiles them now, said as a structure."""
    from .user import failure

    names = ["mass", "force"] + [s for s, f in (("mass_dq", "dM_dq"), ("force_dq", "dQ_dq"), ("force_dqd", "dQ_dqd"))
                                 if f in form.functions]
    check_cache_dir()
    with compiling(_missing(form.n, [(form, name) for name in names]), [], cache_dir()):
        return failure(form, names)


def compiled_loop(nominal, actual, constraint, actuators=None, *, jacobian: bool = True, hold: bool = False,
                  ahead: bool = False, measure: bool = False) -> CompiledLoop | None:
    """The kernels' record of these plants and constraint; compiles what this machine has not yet.

    The package's kernels are compiled in parts (:data:`PARTS`), each the first time a loop on this
    machine needs it: a nominal run needs the fundamental equation and DOP853, a tracking run also the
    controlled and uncompensated systems and BDF, a sampled one the sample-and-hold integrator, and
    only a loop with actuators their kernels.

    Parameters
    ----------
    nominal, actual : Plant
        The nominal model and the actual plant (same coordinates).
    constraint : Constraint or None
        The stacked constraint of the nominal controller (None: unconstrained).
    actuators : Actuators, optional
        Constant input matrix and limits (run-time values; none: unactuated).
    jacobian : bool
        Also the controlled and uncompensated systems, and the derivatives the controlled system's
        Jacobian needs (keyword-only; False for a nominal run, which needs M, Q, A and b only).
    hold : bool
        Also the sample-and-hold integrator (keyword-only; with ``jacobian``).
    ahead : bool
        A tracking run follows this nominal one (keyword-only): where its parts are not compiled yet, a
        helper process starts compiling them now, while this process compiles the nominal side.
    measure : bool
        Also the measurements along a run (keyword-only; with ``jacobian``): what a campaign's samples keep
        (:func:`~robustrack.tracking.simulate.track_peaks`), compiled before its pool starts. A single run
        does not measure along its solution; :meth:`~robustrack.compiled.backend.CompiledBackend.measure`
        compiles them at its first call where they are not (:func:`compile_later`).

    Returns
    -------
    CompiledLoop or None
        None when :func:`fallback_reason` gives a reason; without ``jacobian`` its ``uncompensated`` and
        ``controlled`` are None.
    """
    if fallback_reason(nominal, actual, constraint, actuators) is not None:
        return None
    check_cache_dir()
    n = nominal.n
    fn, (fa, fd) = _form(nominal), _apart(_form(actual))
    fc = _form(constraint) if constraint is not None else None
    wanted = [(fn, "mass"), (fn, "force"), (fa, "mass"), (fa, "force"), (fc, "ab"), (fd, "force")]
    if jacobian:
        wanted += [(fn, "mass_dq"), (fa, "mass_dq"), (fa, "force_dq"), (fa, "force_dqd"), (fd, "force_dq"),
                   (fd, "force_dqd")]
    actuated = actuators is not None
    rows = constraint is not None and int(constraint.m) > 1
    spare = _spare_parts(actuated, jacobian, hold, rows)
    parts = _robot_parts(wanted) + _needed(actuated, jacobian, hold, rows, measure) + spare
    missing = [p for p in parts if not _part_ready(p)]
    later = ([p for p in _needed(actuated, True, hold, rows) if p in _HELPER_PARTS and not _part_ready(p)]
             + _spare_parts(actuated, True, hold, rows) if ahead else [])
    helper = _helper_for([p for p in missing if p in _HELPER_PARTS or p in spare] or later)  # overlaps all below
    if helper is None or not set(spare) <= set(helper.parts):  # none to compile it: left to a run that needs it
        parts, missing = [p for p in parts if p not in spare], [p for p in missing if p not in spare]
    with compiling(_missing(n, wanted), [PARTS[p] for p in missing], cache_dir()):
        try:
            f = {(id(form), name): _function(form, n, name) for form, name in wanted if form is not None}

            def load():  # the unused slots' function is one of the kernels: a damaged cache of it is repaired too
                model = _model(n, f, fn, fa, fd, fc, constraint, actuators)
                return model, _motion(actuated, rows), _compile_kernels(model, parts, helper)

            model, (motion, pinv), systems = _repairing(load, helper)
        finally:
            if not later:
                _stop(helper)  # (it has finished unless something failed)
    if jacobian or actuated or model.m > 1:
        _import_blas()
    controlled = "controlled-actuated" if actuated else "controlled"
    return CompiledLoop(model._replace(motion=motion.address, pinv=pinv), systems["nominal"],
                        systems.get("uncompensated"), systems.get(controlled))


def _import_blas() -> None:
    """Import the BLAS and LAPACK the kernels call (scipy's, through numba) now, not at their first call inside
    a timed integration: BDF's order changes multiply matrices, the fundamental equation with two or more rows
    and the actuators take pseudo-inverses, and the first call imports scipy.linalg (~0.16 s), which the
    solver's ``wall_s`` would count as integration. A nominal run with one row or none needs neither."""
    try:
        import scipy.linalg.cython_blas  # noqa: F401
        import scipy.linalg.cython_lapack  # noqa: F401
    except ImportError:  # pragma: no cover - scipy is a dependency (numba itself needs it for linear algebra)
        pass


def _model(n, f, fn, fa, fd, fc, constraint, actuators):
    """The :class:`~robustrack.compiled.systems.Model` of these forms (``f``: their functions generated or loaded, by
    (id(form), name); ``fd``: the actual plant's δQ apart, or None); the address of the constrained motion is filled
    in afterwards."""
    from .systems import Model, unused_slot

    nan = unused_slot()  # compiled once per machine, with the kernels
    get = lambda form, name: f.get((id(form), name), nan).address  # noqa: E731
    force = lambda name: 0 if fd is None else get(fd, name)  # noqa: E731 - 0: no δQ apart (the kernels skip it)
    m = int(constraint.m) if constraint is not None else 0
    c = fc.values if fc is not None else np.zeros(1)
    pd = fd.values if fd is not None else np.zeros(1)
    act = np.zeros((n + 1, 0)) if actuators is None else actuators.packed(n)
    return Model(get(fn, "mass"), get(fn, "force"), get(fn, "mass_dq"), get(fa, "mass"), get(fa, "force"),
                 get(fa, "mass_dq"), get(fa, "force_dq"), get(fa, "force_dqd"), force("force"), force("force_dq"),
                 force("force_dqd"), get(fc, "ab"), *(np.array(v, dtype=float) for v in (fn.values, fa.values, c, pd)),
                 m, np.ascontiguousarray(act, dtype=float), 0, 0)


def _repairing(load, helper=None):
    """``load()``; where numba's cache of the package's kernels is damaged (unreadable index or code) or was written
    by another version of the package (it names a module this one does not have), that cache is removed, said,
    and ``load()`` compiles again — once (without the ``helper`` process)."""
    from ..errors import RobustrackError

    try:
        return load()
    except (KeyboardInterrupt, RobustrackError):
        _stop(helper)
        raise
    except Exception as exc:
        _stop(helper)
        import shutil

        # numba's cache keeps the types of a kernel's arguments by module: one that names a module of the package
        # that is gone was written by another version of robustrack (an upgrade), not damaged
        other = isinstance(exc, ImportError) and "robustrack" in str(exc)
        why = "were compiled by another version of robustrack" if other else "were damaged"
        warnings.warn(f"the compiled kernels in {cache_dir()} {why} ({type(exc).__name__}: {exc}); "
                      "compiling them again.", CompileNotice, stacklevel=3)
        shutil.rmtree(numba_dir(), ignore_errors=True)
        _STAMPED.clear()
        for part in PARTS:
            _part_stamp(part).unlink(missing_ok=True)
        for stamp in cache_dir().glob(f"kernels-{_kernels_digest()}-law-*.ready"):  # the laws' (compiled.laws)
            stamp.unlink(missing_ok=True)
        _HELPER_PART_OFF.append(True)
        return load()


# --------------------------------------------------------------------------- #
# the package's kernels: compiled once per machine
# --------------------------------------------------------------------------- #
#: The package's kernels in the parts a loop may need, each compiled (or loaded from the cache) the first time a
#: loop on this machine needs it, and what the compile notice calls it.
PARTS = {
    "robot": "the rigid-body algorithms of robots (CRBA, RNEA, frame kinematics, their batches)",
    "robot-derivatives": "the robots' derivatives (complex step of CRBA and RNEA)",
    "motion": "the fundamental equation",
    "motion-rows": "the pseudo-inverse of two or more constraint rows",
    "motion-actuated": "the fundamental equation with actuators",
    "nominal": "the nominal system and DOP853",
    "uncompensated": "the uncompensated system",
    "controlled": "the controlled system and BDF",
    "controlled-actuated": "the controlled system with actuators and BDF",
    "hold": "the sample-and-hold integrator",
    "motion-python": "the constrained motion of one state from Python",  # compiled.evaluate.motion, on first use
    "along": "the measurements along a run (campaigns)",
    "scipy": "the systems for scipy's integrators",
}

#: The parts a helper process compiles while this one compiles the others: a new machine compiles on two
#: cores in about half the wall time (the CPU is the same).
_HELPER_PARTS = ("controlled", "controlled-actuated", "hold")


def _robot_parts(wanted) -> list:
    """The robot parts of :data:`PARTS` the prebuilt functions of ``wanted`` (forms, slots) come from."""
    from ..symbolic import KernelForm

    slots = {name for form, name in wanted if isinstance(form, KernelForm) and form.kernels.get(name)}
    return ((["robot"] if slots & {"mass", "force", "ab"} else [])
            + (["robot-derivatives"] if slots & {"mass_dq", "force_dq", "force_dqd"} else []))


def _needed(actuated: bool, jacobian: bool, hold: bool, rows: bool = False, measure: bool = False) -> list:
    """The :data:`PARTS` a loop needs (``rows``: a constraint of two or more rows; ``measure``: campaigns')."""
    parts = ["motion-actuated"] if actuated else ["motion", "motion-rows"] if rows else ["motion"]
    parts.append("nominal")
    if jacobian:
        parts += ["uncompensated", "controlled-actuated" if actuated else "controlled"]
        if hold:
            parts.append("hold")
        if measure:
            parts.append("along")
    return parts


def _plan(model, parts) -> dict:
    """Each part's systems (first-class functions: ``(name, kernel, args)``) and the entry points called from
    Python (``(kernel, args)``), with arguments of exactly the types the integrators pass (the law record's type
    is made without compiling a law, :func:`~robustrack.compiled.laws.law_type`)."""
    from numba import types

    from . import along, bdf, dop853, hold, systems as rk
    from .laws import law_type

    n = model.act.shape[0] - 1
    d = 2 * n
    x, t_out, tol = np.zeros(d), np.zeros(1), tolerances(1e-8, 1e-12)
    lim = limits(x)
    nom = no_dense(d)
    law = law_type()
    # of the types systems.controlled_workspace makes (only the types matter here)
    work = (np.zeros(2 + 3 * n), np.zeros((7, n)), np.zeros((7, n, n)), np.zeros((n, 0)), np.zeros((2, n, n, n)),
            np.zeros((2, n, d)), (np.zeros(d), np.zeros(n), np.zeros((n, n)), np.zeros(n), np.zeros(0), np.zeros(0)))
    state = bdf.BdfState(np.zeros((8, d)), np.zeros((d, d)), np.zeros(8), np.zeros((d, d)), np.zeros(d, np.int64))
    plain = (0.0, x, nom, model, x)
    eval_args = (0.0, x, nom, model, law, x[:n], False, False, work, x, np.zeros((d, d)))
    system = types.FunctionType(types.void(*_types(plain)))
    controlled = types.FunctionType(types.void(*_types(eval_args)))
    # bdf_steps as bdf.bdf_advance calls it (the scratch of systems.workspace)
    steps = (controlled, *state, 0.0, 0.0, t_out, tol, nom, model, law, lim, np.zeros((1, d)), np.zeros(1),
             np.zeros((1, d + 3 * n)), np.zeros(3), np.zeros((9, d)), np.zeros((d, d)), np.zeros(n), work,
             np.zeros((0, 0)))
    bdf_side = [(bdf.bdf_init, (controlled, x, 0.0, 0.0, tol, nom, model, law)), (bdf.bdf_steps, steps)]
    return {
        "nominal": ([("nominal", rk.nominal_rhs, plain)],
                    [(dop853.dop853_run, (system, x, 0.0, 0.0, t_out, tol, True, nom, model, lim))]),
        "scipy": ([], [(rk.system_rhs, (system, 0.0, x, nom, model)),
                       (rk.controlled_rhs, (controlled, 0.0, x, nom, model, law, x[:n], False)),
                       (rk.controlled_jac, (controlled, 0.0, x, nom, model, law, x[:n], False))]),
        "along": ([], [(along.nominal_along, (t_out, nom, model)),
                       (along.measure_along, (t_out, np.zeros((1, d)), np.zeros((1, 3 * n)), np.zeros((0, n)), model,
                                              law, 0.0))]),
        "uncompensated": ([("uncompensated", rk.uncompensated_rhs, plain)], []),
        "controlled": ([("controlled", rk.controlled_eval_plain, eval_args)], bdf_side),
        "controlled-actuated": ([("controlled-actuated", rk.controlled_eval, eval_args)], bdf_side),
        "hold": ([], [(hold.sampled_run, (controlled, x, t_out, t_out, tol, nom, model, law, lim, 0.0,
                                          hold.no_sensor(n), 0))]),
    }


def _types(args) -> tuple:
    """numba's types of ``args`` (a numba type stays as it is)."""
    import numba

    return tuple(a if isinstance(a, numba.types.Type) else numba.typeof(a) for a in args)


def _compile_part(plan, part, side: str = "all") -> None:
    """Compile (or load from the cache) one part's systems and entry points: ``side`` "all", or "helper" (what a
    helper process compiles: all but :func:`_main_side` entries) or "main" (those entries alone)."""
    systems, entries = plan[part]
    with first_class_functions():
        for _, kernel, args in systems if side != "main" else ():
            kernel.compile(_types(args))
            check_interrupted()
        for kernel, args in entries:
            if side != "all" and (side == "main") != _main_side(kernel):
                continue
            if kernel not in _ENTRIES_DONE:  # shared by two parts: compiled (and closed) once
                kernel.compile(_types(args))
                check_interrupted()


def _main_side(kernel) -> bool:
    """Whether this process compiles an entry point of a helper's part itself, while the helper compiles the rest:
    BDF's start (``bdf_init``, ~3.5 s of the helper's ~23 s CPU: the controlled system ~8.6 s, ``bdf_steps``
    ~11 s, measured on a new machine), so that the two processes end together — this one's nominal side, law and
    uncompensated system take ~20 s. It needs the controlled system's type only, not its code. (Where the helper
    also compiles a spare part, :func:`_compile_spare`, it ends last: 1.4–2.9 s after this process's last compile
    in two first runs of ``robustrack run triple-pendulum`` on a quiet 2-core machine.)"""
    from . import bdf

    return kernel is bdf.bdf_init


def _compile_kernels(model, parts, helper=None) -> dict:
    """Compile (or load from the cache) the systems and entry points of ``parts`` for the records' types, running
    none; return every system compiled in this process so far, by part.

    The integrators take the systems as first-class functions, so each is compiled without them; afterwards
    the entry points accept nothing else (a call with other types is an error, never a silent recompile).
    """
    todo = [p for p in parts if p in _PLANNED and p not in _SYSTEMS_DONE]
    if todo:
        plan = _plan(model, todo)
        if _HELPER_PART_OFF:  # a repair compiles everything here
            helper = None
        helped = [p for p in todo if helper is not None and p in helper.parts]
        try:
            for part in todo:  # this process: what the helper does not compile
                if part not in helped:
                    _compile_part(plan, part)
            for part in helped:  # and the helper's parts' entries it leaves to this process
                _compile_part(plan, part, "main")
            if helped:
                helper.wait()
            for part in helped:  # loaded from the cache the helper wrote (compiled here if it failed)
                _compile_part(plan, part)
        finally:
            if helped:
                _stop(helper)
        spared = helped and helper.returncode == 0  # its spare parts are in the cache: this process needs none
        _compile_spare([p for p in parts if not (spared and p in helper.parts)])  # compiled here if no helper did
        for part in todo:
            systems, entries = plan[part]
            for kernel, _ in entries:
                kernel.disable_compile()
                _ENTRIES_DONE.add(kernel)
            for name, kernel, args in systems:
                _SYSTEMS[name] = first_class(kernel, _types(args))
            _SYSTEMS_DONE.add(part)
    _SYSTEMS_DONE.update(parts)  # the constrained motion too (compiled before, by _motion)
    for part in parts:
        stamp = _part_stamp(part)
        if stamp not in _STAMPED:  # once per process and cache folder, not at every run
            stamp.touch()
            _STAMPED.add(stamp)
    return dict(_SYSTEMS)


def _spare_parts(actuated: bool, jacobian: bool, hold: bool, rows: bool) -> list:
    """The parts a loop does not need that its helper process compiles after its own (:func:`_compile_spare`): the
    pseudo-inverse of two or more rows, where a helper has a part of this loop to compile and the machine's cache
    lacks it — a machine's first tracking run."""
    if rows or actuated or _part_ready("motion-rows"):
        return []
    helped = [p for p in _needed(actuated, jacobian, hold) if p in _HELPER_PARTS and not _part_ready(p)]
    return ["motion-rows"] if helped else []


def _compile_spare(parts) -> None:
    """Compile (or load from the cache) the pseudo-inverse of two or more constraint rows
    (:func:`~robustrack.compiled.motion.rows_pinv`) where ``parts`` ask it without a loop that needs it
    (:func:`_spare_parts`): a machine's first tracking run has its helper process compile it after the controlled
    system and BDF, in parallel with this process's nominal side, law and uncompensated system, so that a later
    first run of a structure with two or more rows loads it (issue 55 item 3: it compiled at that run's own first
    use, ~3 s of CPU). The first run pays its CPU, and wall time only where the helper ends last."""
    if "motion-rows" in parts:
        from .motion import rows_pinv

        rows_pinv()
        check_interrupted()


_PLANNED = ("nominal", "uncompensated", "controlled", "controlled-actuated", "hold", "along", "scipy")
_SYSTEMS: dict = {}
_SYSTEMS_DONE: set = set()
_ENTRIES_DONE: set = set()
_STAMPED: set = set()  # the part stamps this process wrote (:func:`_part_stamp`)
_HELPER_PART_OFF: list = []
_AHEAD: list = []  # a helper started ahead of the tracking run it compiles for


def compile_later(loop, part: str) -> None:
    """Compile (or load from the cache) a part of the package's kernels that only some uses of a compiled loop need,
    at the first such use: ``"along"`` (the measurements along a run, :meth:`CompiledBackend.measure
    <robustrack.compiled.backend.CompiledBackend.measure>`) or ``"scipy"`` (the systems for scipy's
    integrators: any method but the compiled DOP853 and BDF). Said as any compile is; nothing to do once done in
    this process.

    Parameters
    ----------
    loop : CompiledLoop
    part : str
        ``"along"`` or ``"scipy"``.
    """
    if part in _SYSTEMS_DONE:
        return
    check_cache_dir()
    with compiling([], [] if _part_ready(part) else [PARTS[part]], cache_dir()):
        _repairing(lambda: _compile_kernels(loop.model, [part]))


def _stop(helper) -> None:
    if helper is not None and helper.poll() is None:
        helper.kill()
        helper.wait()


def _helper_for(parts):
    """A process compiling ``parts`` (of :data:`_HELPER_PARTS`) into the same cache, or the one already doing it
    (started ahead); None where there is nothing to do or no process can be started."""
    import atexit
    import subprocess

    for running in list(_AHEAD):
        if running.poll() is not None and running.returncode != 0:
            _AHEAD.remove(running)
        elif set(parts) <= set(running.parts):
            return running
    if not parts or not sys.executable or _HELPER_PART_OFF:
        return None
    try:
        helper = subprocess.Popen([sys.executable, "-c", "from robustrack.compiled.loop import _helper; "
                                   f"_helper({list(parts)!r})"],
                                  stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    except OSError:
        return None
    helper.parts = tuple(parts)
    _AHEAD.append(helper)
    if len(_AHEAD) == 1:
        atexit.register(lambda: [_stop(h) for h in _AHEAD])  # never a compile left running behind a process
    return helper


def _helper(parts) -> None:
    """Compile ``parts`` for the records' types (any structure's: the types are the same)."""
    from .systems import Model

    model = Model(*(0,) * 12, np.zeros(1), np.zeros(1), np.zeros(1), np.zeros(1), 0, np.zeros((2, 0)), 0, 0)
    plan = _plan(model, parts)
    for part in parts:
        if part in plan:
            _compile_part(plan, part, "helper")
    _compile_spare(parts)


def _part_stamp(part: str) -> Path:
    """A file that says this machine's cache holds a part of the package's kernels as they are now."""
    return _stamp_in(cache_dir(), _kernels_digest(), part)


@functools.lru_cache(maxsize=256)
def _stamp_in(folder: Path, digest: str, part: str) -> Path:
    """:func:`_part_stamp` in the cache folder ``folder`` for the kernels ``digest`` (built once per process)."""
    return folder / f"kernels-{digest}-{part}.ready"


def _part_ready(part: str) -> bool:
    return part in _SYSTEMS_DONE or _part_stamp(part).exists()


def compile_kernels(loops=()) -> float:
    """Compile the package's kernels and the structures of ``loops`` now, not at their first run.

    Parameters
    ----------
    loops : iterable of tuple
        ``(nominal, actual, constraint, actuators, jacobian[, hold])`` as :func:`compiled_loop` takes them (a
        tracking loop with the measurements along a run, as a campaign needs them); with none, every part of
        the package's kernels (:data:`PARTS` but the robots': with and without actuators, the sample-and-hold
        integrator, two or more constraint rows, scipy's systems, the one-state motion from Python), on a one-link
        pendulum (the kernels do not depend on the plant).

    Returns
    -------
    float
        Seconds it took (nothing compiled: the time to load from the cache).
    """
    start = time.perf_counter()
    loops = list(loops)
    every = not loops
    if every:
        from ..plants import NLinkPendulum
        from ..tracking.actuators import Actuators

        one = NLinkPendulum(m=[1.0], L=[1.0], g=9.81)
        loops = [(one, one, None, None, True, True), (one, one, None, Actuators([[1.0]]), True, True)]
    for nominal, actual, constraint, actuators, jacobian, *hold in loops:
        loop = compiled_loop(nominal, actual, constraint, actuators, jacobian=jacobian, hold=bool(hold and hold[0]),
                             measure=jacobian)
    if every:
        compile_later(loop, "scipy")
        with compiling([], [] if _part_ready("motion-rows") else [PARTS["motion-rows"]], cache_dir()):
            _repairing(lambda: _motion(False, True))
        _part_stamp("motion-rows").touch()
    from .laws import BUILT_IN, law_function

    for law in BUILT_IN:
        law_function(law, _compile_law)
    if every:
        _motion_python()  # one state's constrained motion from Python (compiled.evaluate)
    return time.perf_counter() - start


def compile_robot_kernels() -> float:
    """Compile the rigid-body algorithms of robots (:data:`PARTS` "robot" and "robot-derivatives") now, not at
    the first URDF robot's run; they do not depend on the robot (a robot is data to them).

    They share nothing with the other parts, so a machine being prepared can compile them in a second process
    while :func:`compile_kernels` compiles the rest.

    Returns
    -------
    float
        Seconds it took (nothing compiled: the time to load from the cache).
    """
    from . import evaluate, rigid_body

    start = time.perf_counter()
    check_cache_dir()
    missing = [p for p in ("robot", "robot-derivatives") if not _part_ready(p)]
    with compiling([], [PARTS[p] for p in missing], cache_dir()):
        for name in rigid_body.ROBOT_FUNCTIONS:
            rigid_body.robot_function(name)
        evaluate.load("robot")
    for part in ("robot", "robot-derivatives"):
        _part_stamp(part).touch()
    return time.perf_counter() - start


# --------------------------------------------------------------------------- #
# a structure's generated functions
# --------------------------------------------------------------------------- #
def _missing(n: int, wanted) -> list[str]:
    """The keys of the forms with a function not yet generated on this machine, each said once per process
    (a tracking run compiles a structure's derivatives after its nominal run: one structure, one line)."""
    keys = {form.key for form, name in wanted
            if form is not None and (key := _generated_key(form, n, name)) is not None and key not in _store.LOADED
            and not _path(key).exists()}  # (loaded in this process: generated; no file to look for)
    new = sorted(keys - _ANNOUNCED)
    _ANNOUNCED.update(keys)
    return new


_ANNOUNCED: set = set()


def _function(form, n: int, name: str):
    """The compiled function ``name`` of ``form`` (a numba ``cfunc``), from the cache or made now: generated from a
    :class:`~robustrack.symbolic.SymbolicForm`, or a :class:`~robustrack.symbolic.KernelForm`'s prebuilt kernel
    (:mod:`~robustrack.compiled.rigid_body`, once per machine) or its moving targets' function (once per structure)."""
    from . import codegen, evaluate, rigid_body

    if _user(form):
        from .user import user_function

        function = user_function(form, name)
    elif _kernel_form(form):
        kernel = form.kernels[name]
        if kernel is not None:
            function = rigid_body.robot_function(kernel)
            evaluate.load("robot")  # the numpy side's batches of robots and frame constraints (the robots' part)
        else:
            exprs, t = form.targets
            function = _load(_generated_key(form, n, name), lambda: rigid_body.target_source(form.key, exprs, t)).ab
    else:
        function = getattr(_load(_function_key(form, n, name), lambda: codegen.function_source(form, n, name)), name)
    check_interrupted()
    evaluate.remember(form, n, name, function)  # the numpy side's one-state motion takes it from there
    return function


def _generated_key(form, n: int, name: str) -> str | None:
    """The cache key of the generated module of ``form``'s function ``name``; None for a prebuilt kernel."""
    if not _kernel_form(form):
        return _function_key(form, n, name)
    if form.kernels.get(name) is not None:
        return None
    return hashlib.sha256((_kernels_digest() + repr((form.key, name))).encode()).hexdigest()[:20]


def _kernel_form(form) -> bool:
    """Whether ``form`` is a :class:`~robustrack.symbolic.KernelForm` (robustrack's prebuilt robot kernels)."""
    from ..symbolic import KernelForm

    return isinstance(form, KernelForm)


def _motion(actuated: bool, rows: bool):
    """The package's constrained motion as a C function (:mod:`~robustrack.compiled.motion`) and the address of the
    pseudo-inverse of two or more constraint ``rows`` it calls (0 where there are fewer, or actuators: theirs is
    their own)."""
    from . import evaluate
    from .motion import motion, rows_pinv

    function = motion(actuated)
    pinv = rows_pinv().address if rows and not actuated else 0
    check_interrupted()
    # the numpy side's one-state motion loads through it, when first asked
    evaluate.found_motion(_motion_python, lambda: _part_ready("motion-python"))
    return function, pinv


def _motion_python():
    """The fundamental equation's C function, with :func:`robustrack.compiled.evaluate.motion_at` loaded: the part
    "motion-python", compiled once per machine (said) the first time the numpy side solves one state through it."""
    from . import evaluate

    part = "motion-python"
    with compiling([], [] if _part_ready(part) else [PARTS[part]], cache_dir()):
        evaluate.compile_motion()
    _part_stamp(part).touch()
    _SYSTEMS_DONE.add(part)
    return _motion(False, False)[0]  # the pseudo-inverse of two or more rows: evaluate asks it where m >= 2




def _function_key(form, n: int, name: str) -> str:
    from . import codegen

    if _user(form):
        from .user import function_key

        return function_key(form, name)
    src = "+".join(_digest_of(build) for build in _builders(form.build))
    return _generated_digest(repr((form.key, src, n, name)))


@functools.lru_cache(maxsize=4096)
def _generated_digest(text: str) -> str:
    """The key of a structure's generated file whose inputs ``text`` names (:func:`_function_key`), hashed once per
    process (every campaign sample's loop asks for each of its functions)."""
    from . import codegen

    return _digest(codegen.__file__, text)


def _builders(build):
    """The functions a form's ``build`` runs: itself, or for a ``functools.partial`` its function and the builds among
    its arguments (a forced plant's base and δQ terms, a sum's terms), each in turn — so a composed form's
    generated file is keyed by every part's source."""
    yield getattr(build, "func", build)
    for arg in getattr(build, "args", ()) if isinstance(build, functools.partial) else ():
        for part in arg if isinstance(arg, tuple) else (arg,):
            if callable(part):
                yield from _builders(part)


def _digest_of(build) -> str:
    try:
        return _source_digest(build)
    except TypeError:  # an unhashable callable
        return _source_digest.__wrapped__(build)


@functools.lru_cache(maxsize=None)
def _source_digest(build) -> str:
    """The hash of a build function's source, read once per process (every tracked sample asks for it)."""
    try:
        source = inspect.getsource(build)
    except (OSError, TypeError):
        source = repr(build)
    return hashlib.sha256(source.encode()).hexdigest()[:12]


# --------------------------------------------------------------------------- #
# the numpy side's first use of a compiled form (robustrack._evaluator)
# --------------------------------------------------------------------------- #
def motion_first_use(plant, constraint, q, qd, t, force):
    """One state's constrained motion (:func:`robustrack.compiled.evaluate.motion`) at the first call for a plant and
    a constraint whose compiled forms this process has not loaded: they are loaded from the kernel cache, or compiled
    once and said so (:func:`motion_forms`), then the state is solved through them. Asked once per pair of objects
    (:func:`robustrack.plants.constrained_motion` with ``compiled=True``, its default); later calls go to the
    evaluator directly.

    Parameters
    ----------
    plant, constraint, q, qd, t, force
        As :func:`robustrack.compiled.evaluate.motion` takes them.

    Returns
    -------
    ConstrainedMotion or None
        None where the pair has no compiled forms (the numpy path answers), the call is not one float64 state
        (nothing loaded for it), or the evaluator's checks refuse the state.
    """
    from . import evaluate

    n = getattr(plant, "n", None)
    if (not isinstance(n, int) or evaluate._state(q, n) is None or evaluate._state(qd, n) is None
            or type(t) not in evaluate._TIMES):
        return None  # a batch or another type: the numpy path, nothing loaded for it
    if _TRIED.get(plant, constraint, False):
        return None  # asked before: the evaluator had its answer (None: the numpy path decides)
    loaded = motion_forms(plant, constraint)
    _TRIED.put(plant, constraint, True)
    return evaluate.motion(plant, constraint, q, qd, t, force) if loaded else None


_TRIED = Pairs()  # the pairs whose compiled forms were asked for


def motion_forms(plant, constraint) -> bool:
    """Load the compiled functions one state's motion of ``plant`` under ``constraint`` needs — the plant's M and Q,
    the constraint's A and b, the fundamental equation (with the pseudo-inverse of two or more rows) and
    :func:`~robustrack.compiled.evaluate.motion_at` — from the kernel cache, compiling what it lacks once (one
    :class:`CompileNotice`: what, once per machine or structure, where, how long).

    Parameters
    ----------
    plant : Plant
    constraint : Constraint or None

    Returns
    -------
    bool
        False where there is nothing to compile: an object without a compiled form (a Python callable, sampled
        parameters), a given force δQ added to a robot or a user's plant (compiled in a loop's actual plant only),
        a user's function numba cannot compile, numba missing.
    """
    fp = _form(plant)
    fc = _form(constraint) if constraint is not None else None
    if fp is None or (constraint is not None and fc is None) or _forced(fp) or _forced(fc):
        return False
    try:
        import numba  # noqa: F401
    except ImportError:  # pragma: no cover - numba is a dependency
        return False
    from ..errors import KernelCacheError

    try:
        check_cache_dir()
    except KernelCacheError:  # no cache to load from or keep a compile in: this state on numpy (a run says why)
        return False
    n = int(plant.n)
    if _user(fp):
        from .user import failure

        with compiling(_missing(n, [(fp, "mass"), (fp, "force")]), [], cache_dir()):
            if failure(fp, ["mass", "force"]) is not None:
                return False
    from . import evaluate

    wanted = [(fp, "mass"), (fp, "force")] + ([(fc, "ab")] if fc is not None else [])
    rows = constraint is not None and int(constraint.m) > 1
    parts = _robot_parts(wanted) + ["motion"] + (["motion-rows"] if rows else []) + ["motion-python"]
    missing = [p for p in parts if not _part_ready(p)]

    with compiling(_missing(n, wanted), [PARTS[p] for p in missing], cache_dir()):
        for form, name in wanted:
            _function(form, n, name)
        _repairing(lambda: (_motion(False, rows), evaluate.compile_motion()))
    for part in parts:
        stamp = _part_stamp(part)
        if stamp not in _STAMPED:
            stamp.touch()
            _STAMPED.add(stamp)
    _SYSTEMS_DONE.update(parts)
    return True


def batch_first_use(obj, q) -> bool:
    """Whether the batch functions of ``obj`` are loaded now: at the first batch of a robot or a frame constraint in
    this process, the robots' batch kernels (:func:`robustrack.compiled.evaluate.load`) are loaded where this
    machine's cache holds them (the part "robot") — compiling nothing: a batch on numpy (Pinocchio state by state)
    costs milliseconds, the robots' kernels tens of seconds to compile. Asked once per process
    (``robustrack.compiled._FirstUse``).

    Parameters
    ----------
    obj : object
        What :func:`robustrack._evaluator.batch` was asked about.
    q : ndarray
        Its states (a batch: two or more axes).

    Returns
    -------
    bool
    """
    from ..plants import FrameConstraint, URDFPlant

    if not isinstance(obj, (URDFPlant, FrameConstraint)) or getattr(q, "ndim", 0) < 2:
        return False
    try:
        import numba  # noqa: F401
    except ImportError:  # pragma: no cover - numba is a dependency
        return False
    if not _part_ready("robot"):
        return False
    from . import evaluate, rigid_body

    for name in ("mass", "force"):
        rigid_body.robot_function(name)
    evaluate.load("robot")
    return True
