"""The control laws of :mod:`robustrack.controllers.laws` compiled into the loop (W 7.2.15, 8.2.26, 8.3.20).

The laws and control functions are written once, in :mod:`robustrack.controllers.laws`; this module only
teaches numba the three helpers whose numpy side differs (:func:`~robustrack.controllers.laws.apply_g`
→ the built-in g of a :class:`~robustrack.controllers.laws.ControlCode`; its slope;
:func:`~robustrack.controllers.laws.unpack` → a record read by name from the packed vector, generated from
the record's annotations) and compiles each law function for one signature (:data:`LAW_TYPES`). A law
reaches the kernels as the record :class:`Law`, its function a first-class function of that signature: the
loop is compiled once, whatever the law — a compensator defined in a user's script compiles only its own
law function (in memory; the package's are cached once per machine).
"""

from collections import namedtuple

import numpy as np
from numba import typeof, types
from numba.extending import overload, register_jitable

from ..controllers import laws as source
from .cache import first_class, first_class_functions, kernel, _PACKAGE
from .notice import numba_reason

__all__ = ["Law", "LAW_TYPES", "BUILT_IN", "law_function", "law_type", "compiled_law", "law_u", "g_value", "g_slope"]

#: The package's laws: compiled once per machine (``robustrack compile`` prepares them).
BUILT_IN = (source.no_law, source.gss_law, source.gd_law, source.gdbar_law, source.linear_law)

#: A law for the kernels: ``u`` the law's function (first-class, :data:`LAW_TYPES`), ``params`` its record
#: packed (:func:`~robustrack.controllers.laws.pack`), ``f`` the control function's
#: :class:`~robustrack.controllers.laws.ControlCode`, ``integral`` 1 when the law's states are z = ∫e.
Law = namedtuple("Law", ["u", "params", "f", "integral"])

_A1 = types.Array(types.float64, 1, "C")
_A2 = types.Array(types.float64, 2, "C")
#: The one signature of every law function: (params, f, e, ė, z, u, ∂u/∂e, ∂u/∂ė, ∂u/∂z, jac).
LAW_TYPES = (types.Array(types.float64, 1, "C"), typeof(source.ControlCode(0, 1.0, 0.0, 0.0)),
             _A1, _A1, _A1, _A1, _A2, _A2, _A2, types.boolean)

g_value = register_jitable(source.g_value)
g_slope = register_jitable(source.g_slope)
register_jitable(source._clear)


@overload(source.apply_g)
def _apply_g(f, x):
    def impl(f, x):
        return source.g_value(f.kind, x, f.alpha_c, f.p)

    return impl


@overload(source.apply_g_slope)
def _apply_g_slope(f, x):
    def impl(f, x):
        return source.g_slope(f.kind, x, f.alpha_c, f.p)

    return impl


@overload(source.unpack)
def _unpack(record, flat, n):
    """numba's :func:`~robustrack.controllers.laws.unpack`: the record's fields as views of ``flat``, by name."""
    cls = record.instance_class
    lines, names, at = [], [], "0"
    for i, marker in enumerate(cls.__annotations__.values()):
        size = {float: "1", source.Vector: "n"}.get(marker, "2 * n * n")
        if marker is float:
            lines.append(f"    v{i} = flat[{at}]")
        elif marker is source.Vector:
            lines.append(f"    v{i} = flat[{at}:{at} + n]")
        else:
            lines.append(f"    v{i} = flat[{at}:{at} + 2 * n * n].reshape((n, 2 * n))")
        names.append(f"v{i}")
        at = f"{at} + {size}"
    text = "def impl(record, flat, n):\n" + "\n".join(lines) + f"\n    return cls({', '.join(names)})\n"
    scope = {"cls": cls}
    exec(text, scope)  # noqa: S102 - generated from the record's own annotations, nothing from outside
    return scope["impl"]


_COMPILED: dict = {}
#: A user's law function numba does not compile → numba's reason (:func:`refusal`).
_REFUSED: dict = {}


def law_type():
    """numba's type of a :class:`Law` (what :func:`compiled_law` returns), made without compiling a law: the
    kernels that take a law are compiled for it before any law is (``tests/test_kernels.py`` checks that it is
    the type of a compiled law).

    Returns
    -------
    numba.core.types.NamedTuple
    """
    return types.NamedTuple((types.FunctionType(types.void(*LAW_TYPES)), _A1, LAW_TYPES[1], types.int64), Law)


def law_function(law, compile_with=None):
    """The law function ``law`` compiled for :data:`LAW_TYPES`, as a first-class function of the kernels.

    The package's laws are cached once per machine (the first compile says so, a
    :class:`~robustrack.compiled.notice.CompileNotice`); a law defined elsewhere (a user's script, a test)
    is compiled in memory, once per process (about a second).

    Parameters
    ----------
    law : callable
        A law function (:mod:`robustrack.controllers.laws`).
    compile_with : callable, optional
        ``compile_with(load, law, ours)`` runs ``load()`` (the compile) with the machine's cache around it: the
        stamp, the notice and the repair of :func:`robustrack.compiled.loop.kernel_law` (``ours``: a package
        law, cached once per machine); none: ``load()`` alone.

    Returns
    -------
    WrapperAddressProtocol or None
        :func:`~robustrack.compiled.cache.first_class` of the compiled law; None for a user's law numba does not
        compile (:func:`refusal` says why).
    """
    found = _COMPILED.get(law)
    if found is None and law not in _REFUSED:
        code = getattr(law, "__code__", None)
        ours = code is not None and _inside(code.co_filename)
        # a law computes u from its arguments in place: without reference counts (a quarter of a right-hand
        # side's time); a user's law that allocates is refused so, and compiled with them
        dispatcher = kernel(law, refcounts=False, cached=ours)

        def load():
            # numba refuses an allocation without reference counts as a TypingError where it meets it typing a
            # callee, and as a NumbaRuntimeError ("NRT required but not enabled") where it meets it lowering the
            # law itself, which depends on what this process compiled before (seen in a fresh CI run): a user's
            # law refused in any way is tried again with them
            from numba.core.errors import NumbaError

            nonlocal dispatcher
            with first_class_functions():
                try:
                    dispatcher.compile(LAW_TYPES)
                except NumbaError:
                    if ours:
                        raise
                    dispatcher = kernel(law, cached=False)
                    try:
                        dispatcher.compile(LAW_TYPES)
                    except NumbaError as exc:  # the user's law is outside what numba compiles: theirs, said
                        _REFUSED[law] = f"{type(exc).__name__}: {numba_reason(exc)}"

        if compile_with is None:
            load()
        else:
            compile_with(load, law, ours)
        if law not in _REFUSED:
            found = _COMPILED[law] = first_class(dispatcher, LAW_TYPES)
    return found


def refusal(law) -> str | None:
    """Why numba does not compile a user's law function (its message, shortened), or None where it does or was
    not asked: the compiled loop then runs on numpy, and its notice says this."""
    return _REFUSED.get(law)


def _inside(filename: str) -> bool:
    from pathlib import Path

    return Path(filename).resolve().is_relative_to(_PACKAGE)


_NO_CODE = source.ControlCode(source.G_SIGN, 1.0, 0.0, 0.0)


def compiled_law(call, compile_with=None):
    """The kernels' :class:`Law` of a :class:`~robustrack.controllers.laws.LawCall` (None: no compensation).

    Parameters
    ----------
    call : LawCall or None
    compile_with : callable, optional
        As :func:`law_function` takes it.

    Returns
    -------
    Law or None
        None where the law is a user's that numba does not compile (:func:`refusal`).
    """
    if call is None:
        call = source.LawCall(source.no_law, np.zeros(0), _NO_CODE, 0)
    f = _NO_CODE if call.f is None else call.f
    code = source.ControlCode(int(f.kind), float(f.eps), float(f.alpha_c), float(f.p))
    function = law_function(call.law, compile_with)
    if function is None:
        return None
    return Law(function, np.ascontiguousarray(call.params, dtype=float), code, int(call.integral))


@kernel(inline=True)
def law_u(law, e, ed, z, u, Ue, Ued, Uz):
    """u(e, ė, z) and its partial derivatives (n × n, n × n, n × n_z) of the law ``law`` (:class:`Law`)."""
    law.u(law.params, law.f, e, ed, z, u, Ue, Ued, Uz, True)
