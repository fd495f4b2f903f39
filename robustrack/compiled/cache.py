"""Where compiled kernels live, and the decorator that compiles them once per machine.

Every compiled kernel of robustrack — the package's own (linear algebra, the fundamental equation,
actuators, control laws, the integrators) and the small functions generated for a plant structure
(:mod:`robustrack.compiled.codegen`) — is cached in ONE folder, :func:`cache_dir`:
``$ROBUSTRACK_CACHE_DIR``, else ``$XDG_CACHE_HOME/robustrack``, else ``~/.cache/robustrack``, with a
subfolder per Python and numba version. numba's own cache of the package kernels is sent there too
(a cache locator, numba's documented extension point), so deleting that folder — or an empty
``ROBUSTRACK_CACHE_DIR`` — is a machine that has compiled nothing, and ``robustrack compile`` fills it
ahead of time. Where that folder cannot be written, numba's default places are used.

It is also the one home of numba's private APIs robustrack relies on (:data:`PRIVATE_APIS`, checked by
``tests/test_numba_apis.py`` so that a numba upgrade that removes one fails by name): the cache locator and
loader, the dispatcher's typing of constant arguments, the C-function wrapper, the typing of records and
the address of a compiled function's C wrapper.

Importing this module imports numba: only the compiled path does.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import sys
import warnings
from pathlib import Path

import numba
import numpy as np
from numba.core import caching, types
from numba.core.registry import CPUDispatcher

from .._generated import cache_root

__all__ = ["cache_dir", "numba_dir", "kernels_digest", "NOT_KERNELS", "KERNEL_MODULES", "kernel", "cfunc",
           "register_records", "first_class", "first_class_functions", "PRIVATE_APIS"]

#: numba's private names this module uses (module, attribute path): ``tests/test_numba_apis.py`` checks each
#: on the installed numba, so an upgrade that removes or renames one fails naming it (pyproject.toml pins
#: numba to the range these were checked on).
PRIVATE_APIS = (
    ("numba.core.caching", "_SourceFileBackedLocatorMixin"),
    ("numba.core.caching", "_CacheLocator"),
    ("numba.core.caching", "FunctionCache._guard_against_spurious_io_errors"),
    ("numba.core.caching", "FunctionCache._load_overload"),
    ("numba.core.caching", "FunctionCache._index_key"),
    ("numba.core.registry", "CPUDispatcher.get_call_template"),
    ("numba.core.runtime", "rtsys.initialize"),
    ("numba.core.ccallback", "CFunc"),
    ("numba.core.sigutils", "normalize_signature"),
    ("numba.core.typing.typeof", "_typeof_tuple"),
    ("numba.core.types", "WrapperAddressProtocol"),
    ("numba.core.cpu", "CPUTargetOptions._nrt"),
)

#: The robustrack package: its kernels (and the generated files of :func:`cache_dir`) are cached there.
_PACKAGE = Path(__file__).resolve().parents[1]
_HERE = _PACKAGE / "compiled"
#: The modules of this package that only orchestrate, not part of the kernels' cache key: the loop, the door's
#: :mod:`~robustrack.compiled.backend` (runs the integrators, compiles nothing), the notice, the store of
#: generated files, and the generators of a structure's and a user's functions (their files are keyed by the
#: generator's own digest, :func:`robustrack.compiled.store.digest`).
NOT_KERNELS = ("__init__.py", "loop.py", "backend.py", "notice.py", "store.py", "codegen.py", "user.py")
#: The files whose content keys the package's compiled kernels: every module of this package but
#: :data:`NOT_KERNELS`, the control laws and functions compiled into the loop (controllers/laws.py), the solver
#: defaults the kernels read, the robot data layout. A change to any of them compiles the kernels again.
KERNEL_MODULES = tuple(sorted(p for p in _HERE.glob("*.py") if p.name not in NOT_KERNELS)) + (
    _PACKAGE / "controllers" / "laws.py", _PACKAGE / "tracking" / "defaults.py", _PACKAGE / "plants" / "robot_data.py")


@functools.lru_cache(maxsize=1)
def kernels_digest() -> str:
    """The content key of the package's kernels: a hash of :data:`KERNEL_MODULES` (read once per process).

    Returns
    -------
    str
        16 hexadecimal digits.
    """
    return hashlib.sha256(b"".join(p.read_bytes() for p in KERNEL_MODULES)).hexdigest()[:16]


def cache_dir() -> Path:
    """The folder of every compiled kernel (see the module docstring).

    Returns
    -------
    pathlib.Path
        ``$ROBUSTRACK_CACHE_DIR``, else ``$XDG_CACHE_HOME/robustrack``, else ``~/.cache/robustrack``;
        a subfolder per Python and numba version.
    """
    return cache_root() / f"kernels-py{sys.version_info[0]}{sys.version_info[1]}-numba{numba.__version__}"


def numba_dir() -> Path:
    """numba's machine code of the kernels as they are now: ``cache_dir()/numba/<kernels_digest()>``.

    numba keys a function's cached code by its own file (its time stamp and size) and its bytecode, not by the
    files of the kernels it calls: a kernel in an unchanged file that calls one whose file changed (a
    pseudo-inverse made faster in :mod:`~robustrack.compiled.mechanics`, called from
    :mod:`~robustrack.compiled.motion`) loaded its old code, the old callee inlined. One folder per content key
    of the package's kernels (:func:`kernels_digest`) makes any change to them compile everything again.

    Returns
    -------
    pathlib.Path
    """
    return cache_dir() / "numba" / kernels_digest()


class _Locator(caching._SourceFileBackedLocatorMixin, caching._CacheLocator):
    """numba's cache of robustrack's kernels (the package's and the generated ones) in :func:`cache_dir`."""

    def __init__(self, py_func, py_file):
        self._py_file = py_file
        self._lineno = py_func.__code__.co_firstlineno
        self._cache_path = str(numba_dir() / self.get_suitable_cache_subpath(py_file))

    def get_cache_path(self):
        return self._cache_path

    @classmethod
    def from_function(cls, py_func, py_file):
        path = Path(py_file).resolve()
        if not (path.is_relative_to(_PACKAGE) or path.is_relative_to(cache_dir().resolve())):
            return None
        return super().from_function(py_func, py_file)  # None where the folder cannot be written


_IMPL = getattr(caching, "CacheImpl", None) or getattr(caching, "_CacheImpl")  # public from numba 0.61
if _Locator not in _IMPL._locator_classes:
    _IMPL._locator_classes.insert(0, _Locator)


#: numba's codegen description of machine code for any CPU of an architecture (``NUMBA_CPU_NAME=generic``,
#: no CPU features): what ``robustrack compile --portable`` caches.
PORTABLE_CPU = ("generic", "")


class _KernelCache(caching.FunctionCache):
    """numba's cache of one of robustrack's kernels, loading it without numba's target registries, and
    loading portable machine code where this CPU's own is not cached.

    Before loading a cached function numba loads every implementation it could compile with (numba.np,
    numba.cpython, numba.typed, …: ~0.15 s of CPU, once per process); a cached kernel is machine code
    that needs only numba's runtime (NRT), which this initializes instead. Compiling loads the registries
    as usual, and the machine code loaded is the same, so only the start of a warm run changes.

    numba keys cached machine code by the CPU it was compiled for, so a cache prepared on one machine is
    compiled again on a machine with another CPU. Where this CPU's code is missing, the code compiled for
    :data:`PORTABLE_CPU` (``robustrack compile --portable``: a cluster image, a cache folder shared by
    machines with different CPUs) is loaded instead. Where numba's cache lacks the methods this calls,
    numba's own loading is used.
    """

    def load_overload(self, sig, target_context):
        guard = getattr(self, "_guard_against_spurious_io_errors", None)
        load = getattr(self, "_load_overload", None)
        if guard is None or load is None:  # pragma: no cover - another numba
            return super().load_overload(sig, target_context)
        from numba.core.runtime import rtsys

        rtsys.initialize(target_context)
        with guard():
            found = load(sig, target_context)
            if found is None:
                found = self._load_portable(sig, target_context)
            return found

    def _load_portable(self, sig, target_context):
        """The machine code cached for :data:`PORTABLE_CPU` (None where there is none, or where this process
        compiles for it anyway)."""
        if not getattr(self, "_enabled", False):
            return None
        codegen = target_context.codegen()
        host = codegen.magic_tuple()
        key = self._index_key(sig, codegen)
        portable = (host[0],) + PORTABLE_CPU
        if len(key) != 3 or key[1] != host or host == portable:  # pragma: no cover - another numba's key
            return None
        data = self._cache_file.load((key[0], portable, key[2]))
        return None if data is None else self._impl.rebuild(target_context, data)


class _Kernel(CPUDispatcher):
    """numba's dispatcher, except that a call from compiled code with a constant argument (``False``, ``1``)
    compiles the callee once for the argument's type, not once per constant value (numba's default keeps
    literal types, which compiled the controlled system five times over), and that it loads from the cache
    with :class:`_KernelCache`."""

    def get_call_template(self, args, kws):
        return super().get_call_template(tuple(types.unliteral(a) for a in args),
                                         {k: types.unliteral(v) for k, v in kws.items()})

    def enable_caching(self):
        self._cache = _KernelCache(self.py_func)


def cfunc(sig):
    """``numba.cfunc(sig, cache=True)`` loading from the cache with :class:`_KernelCache`: the C functions of
    robustrack (the constrained motion, a plant structure's generated functions).

    Parameters
    ----------
    sig : numba signature

    Returns
    -------
    callable
        A decorator; it compiles the function (or loads it from the cache) at once.
    """
    from numba.core import sigutils
    from numba.core.ccallback import CFunc

    def wrapper(func):
        try:
            res = CFunc(func, sigutils.normalize_signature(sig), locals={}, options={})
        except TypeError:  # pragma: no cover - another numba's CFunc: its own decorator, its own cache
            return numba.cfunc(sig, cache=True)(func)
        res._cache = _KernelCache(func)
        res.compile()
        return res

    return wrapper


def kernel(fn=None, *, inline: bool = False, refcounts: bool | None = None, cached: bool = True):
    """``numba.njit(cache=True)``: compiled on first use, once per machine, cached in :func:`cache_dir`.

    Parameters
    ----------
    fn : function, optional
        The kernel (plain Python over float64 arrays); omitted for ``@kernel(inline=True)``.
    inline : bool
        For small plumbing (keyword-only): numba writes its body into each compiled caller instead of
        compiling it apart, so the deep call chains of the integrators do not make LLVM optimize and
        generate the same callees again at every level (compile time, not run time).
    refcounts : bool or None
        False for a hot kernel that allocates nothing, nor do the kernels it calls (keyword-only): numba then
        counts no references in it (its ``_nrt`` option), where every array view and argument otherwise costs
        two atomic operations — a third of a right-hand side's time. It takes its scratch arrays from the
        caller; numba refuses at compile time any allocation left in it, and the kernels it calls inherit the
        setting. True for a kernel that allocates and is called from such a kernel. None (default): as its
        caller, counted when called from Python.
    cached : bool
        False for a function from outside the package (a user's law): compiled in memory, once per process.

    Returns
    -------
    Dispatcher
        numba's dispatcher (a constant argument from compiled code does not specialize it).
    """
    if fn is None:
        return lambda f: kernel(f, inline=inline, refcounts=refcounts, cached=cached)
    options = {"nopython": True, "inline": "always"} if inline else {"nopython": True}
    if refcounts is not None:
        options["_nrt"] = bool(refcounts)
    disp = _Kernel(py_func=fn, locals={}, targetoptions=options)
    if cached:
        disp.enable_caching()
    return disp


@contextlib.contextmanager
def first_class_functions():
    """While robustrack compiles: numba's "first-class function type feature is experimental" warning silenced.

    The integrators take the systems as first-class functions by design (tests cover them); the warning is
    silenced here, where the kernels are compiled, not process-wide at import.
    """
    from numba.core.errors import NumbaExperimentalFeatureWarning

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="First-class function type feature is experimental",
                                category=NumbaExperimentalFeatureWarning)
        yield


_TYPES: dict = {}


def register_records(*classes) -> None:
    """Type instances of the namedtuple ``classes`` once per field layout, not field by field on every call.

    numba types a namedtuple argument field by field in Python (~100 µs) on every call from Python; the
    records of the compiled path (:class:`~robustrack.compiled.systems.Model`, ``Dense``, ``Law``) cross
    into the kernels at every step of a scipy integrator. Without numba's private ``_typeof_tuple`` they
    are typed the slow way.

    Parameters
    ----------
    *classes : type
        namedtuple classes.
    """
    try:
        from numba.core.extending import typeof_impl
        from numba.core.typing.typeof import _typeof_tuple
    except ImportError:  # pragma: no cover - another numba: typed the slow way
        return

    def record_type(val, c):
        key = (type(val),) + tuple((v.ndim, v.dtype.char, v.flags.c_contiguous, v.flags.writeable)
                                   if isinstance(v, np.ndarray) else type(v) for v in val)
        found = _TYPES.get(key)
        if found is None:
            found = _TYPES[key] = _typeof_tuple(val, c)
        return found

    for cls in classes:
        typeof_impl.register(cls)(record_type)


def _first_class_type():
    """The class of :func:`first_class` (it subclasses numba's wrapper-address protocol), made on first use."""
    from numba.core.extending import typeof_impl
    from numba.core.types import FunctionType, WrapperAddressProtocol, void

    class FirstClass(WrapperAddressProtocol):
        """A compiled kernel as a first-class function argument, with the address of its C wrapper.

        numba would also take the dispatcher itself, but then looks its compiled version up on every call
        from Python (~200 µs: scipy's integrators call the systems thousands of times); this holds the
        address of its C wrapper and its numba type, found once.
        """

        def __init__(self, kernel, arg_types):
            self.kernel = kernel
            self._signature = void(*arg_types)
            self.numba_type = FunctionType(self._signature)
            cres = kernel.get_compile_result(self._signature)
            self._address = cres.library.get_pointer_to_function(cres.fndesc.llvm_cfunc_wrapper_name)

        def __wrapper_address__(self):
            return self._address

        def signature(self):
            return self._signature

        def __repr__(self):
            return f"FirstClass({self.kernel.__name__})"

    typeof_impl.register(FirstClass)(lambda val, c: val.numba_type)
    return FirstClass


_FIRST_CLASS: list = []


def first_class(kernel, arg_types):
    """The compiled ``kernel`` (already compiled for ``arg_types``) as a first-class function argument.

    Parameters
    ----------
    kernel : Dispatcher
        A :func:`kernel` returning nothing.
    arg_types : tuple of numba types

    Returns
    -------
    WrapperAddressProtocol
        Its numba type is ``FunctionType(void(*arg_types))``.
    """
    if not _FIRST_CLASS:
        _FIRST_CLASS.append(_first_class_type())
    return _FIRST_CLASS[0](kernel, arg_types)
