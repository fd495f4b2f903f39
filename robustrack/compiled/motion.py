"""The constrained motion (the fundamental equation, with actuators where there are) as a C function.

The systems of :mod:`~robustrack.compiled.systems` reach the constrained motion through the address
in the :class:`~robustrack.compiled.systems.Model` record instead of linking its code, so the biggest
kernel is compiled once, not once per system that calls it. It comes in two C functions of the one
signature :data:`MOTION_FUNCTION`, each compiled (or loaded from the cache) the first time a loop needs it:

- ``motion(False)``: without actuators, the fundamental equation alone
  (:func:`~robustrack.compiled.mechanics.fundamental`, W 2.2.7–2.2.9), its pseudo-inverse of two or more
  constraint rows a C function of its own (:func:`rows_pinv`, its address the last argument; 0 for one row
  or none): compiled where a loop has such a constraint, and by the helper process of a machine's first tracking
  run (LAPACK's SVD and the scale-free pseudo-inverse, ~3 s of compiling: so that the first run of a structure
  with several rows compiles only its own functions); the same arithmetic as one function;
- ``motion(True)``: with actuators, :func:`~robustrack.compiled.actuators.constrained_motion`
  (Gauss's actuator force, its realizability check; docs/theory/constraint-models.md) — which for k = 0 is the fundamental
  equation with the same arithmetic, so a loop without actuators gets the same numbers from either.

A machine that never runs actuators never compiles the second (about 5 s of compiling). Only
:mod:`robustrack.compiled.loop` calls :func:`motion` and :func:`rows_pinv`, inside its compile notice.
"""

import functools

from numba import carray, types

from .cache import cfunc, kernel
from .mechanics import PINV_FUNCTION, fundamental_into_row, fundamental_work_size, scale_free_pinv
from .actuators import constrained_motion

__all__ = ["MOTION_FUNCTION", "motion", "rows_pinv"]

_F8P = types.CPointer(types.float64)
#: ``motion(M, Q, A, b, act, n, m, k, qdd, Qc, tau, work, pinv)``: pointers to C-contiguous float64 arrays M (n × n),
#: Q (n), A (m × n), b (m), act ((n + 1) × k), the outputs q̈ (n), Qᶜ (n), τᶜ (k), and scratch of
#: :func:`~robustrack.compiled.mechanics.fundamental_work_size` (n, m) entries (the fundamental equation's, so
#: that it allocates nothing for m ≤ 1); ``pinv`` the address of :func:`rows_pinv` (0 for m ≤ 1); 1 where the
#: motion exists, else 0.
MOTION_FUNCTION = types.int64(_F8P, _F8P, _F8P, _F8P, _F8P, types.int64, types.int64, types.int64, _F8P, _F8P, _F8P,
                              _F8P, types.int64)


@functools.lru_cache(maxsize=2)
def motion(actuated: bool):
    """The constrained motion as a ``numba.cfunc`` of :data:`MOTION_FUNCTION`, compiled on first use.

    Parameters
    ----------
    actuated : bool
        With actuators (k > 0 columns in ``act``): Gauss's actuator force; without, the fundamental
        equation alone (``act`` and ``tau`` untouched).

    Returns
    -------
    numba.core.ccallback.CFunc
        Its ``address`` goes into the :class:`~robustrack.compiled.systems.Model`.
    """
    # the kernels they call are module globals, not closure cells: numba keys a cached function by its
    # closure's contents, and a dispatcher in a cell pickles differently in every process (a cache miss)
    if actuated:

        @cfunc(MOTION_FUNCTION)
        def motion_actuated(M, Q, A, b, act, n, m, k, qdd, Qc, tau, work, pinv):
            ok = constrained_motion(carray(M, (n, n)), carray(Q, (n,)), carray(A, (m, n)), carray(b, (m,)),
                                    carray(act, (n + 1, k)), carray(qdd, (n,)), carray(Qc, (n,)), carray(tau, (k,)))
            return 1 if ok else 0

        return motion_actuated

    @cfunc(MOTION_FUNCTION)
    def motion_plain(M, Q, A, b, act, n, m, k, qdd, Qc, tau, work, pinv):
        ok = fundamental_into_row(carray(M, (n, n)), carray(Q, (n,)), carray(A, (m, n)), carray(b, (m,)),
                                  carray(qdd, (n,)), carray(Qc, (n,)), carray(work, (fundamental_work_size(n, m),)), pinv)
        return 1 if ok else 0

    return motion_plain


#: :func:`~robustrack.compiled.mechanics.scale_free_pinv` that numba writes into :func:`rows_pinv`'s C function (not a
#: kernel compiled apart and linked): LLVM optimizes its code once, not once for the kernel and again for the
#: function — a process compiling it runs 15.5 G instructions instead of 17.4 G (callgrind); the same arithmetic,
#: the same bits. A global, not a closure, so that numba caches the C function.
_scale_free_pinv_inline = kernel(inline=True)(scale_free_pinv.py_func)


@functools.lru_cache(maxsize=1)
def rows_pinv():
    """:func:`~robustrack.compiled.mechanics.scale_free_pinv` of two or more constraint rows as a ``numba.cfunc``
    of :data:`~robustrack.compiled.mechanics.PINV_FUNCTION`, compiled on first use: what ``motion(False)``
    calls for m ≥ 2 (its address in the :class:`~robustrack.compiled.systems.Model`).

    Returns
    -------
    numba.core.ccallback.CFunc
    """

    @cfunc(PINV_FUNCTION)
    def pinv_rows(B, m, n, Bp):
        P = _scale_free_pinv_inline(carray(B, (m, n)))
        out = carray(Bp, (n, m))
        for i in range(n):
            for j in range(m):
                out[i, j] = P[i, j]

    return pinv_rows
