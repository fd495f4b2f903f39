"""The constrained motion (the fundamental equation, with actuators where there are) as a C function.

The systems of :mod:`~robustrack.compiled.systems` reach the constrained motion through the address
in the :class:`~robustrack.compiled.systems.Model` record instead of linking its code, so the biggest
kernel is compiled once, not once per system that calls it. It comes in two C functions of the one
signature :data:`MOTION_FUNCTION`, each compiled (or loaded from the cache) the first time a loop needs it:

- ``motion(False)``: without actuators, the fundamental equation alone
  (:func:`~robustrack.compiled.mechanics.fundamental`, W 2.2.7–2.2.9), and ``motion(False, rows=False)`` its
  variant for a constraint of one row or none, which links no pseudo-inverse of two or more rows (LAPACK's
  SVD: ~3 s less of a new machine's first compile; the same arithmetic for m ≤ 1);
- ``motion(True)``: with actuators, :func:`~robustrack.compiled.actuators.constrained_motion`
  (Gauss's actuator force, its realizability check; docs/theory/constraint-models.md) — which for k = 0 is the fundamental
  equation with the same arithmetic, so a loop without actuators gets the same numbers from either.

A machine that never runs actuators never compiles the second (about 5 s of compiling), one that never runs
a constraint of two or more rows never compiles the pseudo-inverse they need. Only
:mod:`robustrack.compiled.loop` calls :func:`motion`, inside its compile notice.
"""

import functools

from numba import carray, types

from .cache import cfunc
from .mechanics import fundamental_into, fundamental_into_row, fundamental_work_size
from .actuators import constrained_motion

__all__ = ["MOTION_FUNCTION", "motion"]

_F8P = types.CPointer(types.float64)
#: ``motion(M, Q, A, b, act, n, m, k, qdd, Qc, tau, work)``: pointers to C-contiguous float64 arrays M (n × n),
#: Q (n), A (m × n), b (m), act ((n + 1) × k), the outputs q̈ (n), Qᶜ (n), τᶜ (k), and scratch of
#: :func:`~robustrack.compiled.mechanics.fundamental_work_size` (n, m) entries (the fundamental equation's, so
#: that it allocates nothing for m ≤ 1); 1 where the motion exists, else 0.
MOTION_FUNCTION = types.int64(_F8P, _F8P, _F8P, _F8P, _F8P, types.int64, types.int64, types.int64, _F8P, _F8P, _F8P,
                              _F8P)


@functools.lru_cache(maxsize=3)
def motion(actuated: bool, rows: bool = True):
    """The constrained motion as a ``numba.cfunc`` of :data:`MOTION_FUNCTION`, compiled on first use.

    Parameters
    ----------
    actuated : bool
        With actuators (k > 0 columns in ``act``): Gauss's actuator force; without, the fundamental
        equation alone (``act`` and ``tau`` untouched).
    rows : bool
        Without actuators: any number of constraint rows; False: one row or none (m ≥ 2 returns 0, "no motion").

    Returns
    -------
    numba.core.ccallback.CFunc
        Its ``address`` goes into the :class:`~robustrack.compiled.systems.Model`.
    """
    # the kernels they call are module globals, not closure cells: numba keys a cached function by its
    # closure's contents, and a dispatcher in a cell pickles differently in every process (a cache miss)
    if actuated:

        @cfunc(MOTION_FUNCTION)
        def motion_actuated(M, Q, A, b, act, n, m, k, qdd, Qc, tau, work):
            ok = constrained_motion(carray(M, (n, n)), carray(Q, (n,)), carray(A, (m, n)), carray(b, (m,)),
                                    carray(act, (n + 1, k)), carray(qdd, (n,)), carray(Qc, (n,)), carray(tau, (k,)))
            return 1 if ok else 0

        return motion_actuated

    if not rows:

        @cfunc(MOTION_FUNCTION)
        def motion_row(M, Q, A, b, act, n, m, k, qdd, Qc, tau, work):
            ok = fundamental_into_row(carray(M, (n, n)), carray(Q, (n,)), carray(A, (m, n)), carray(b, (m,)),
                                      carray(qdd, (n,)), carray(Qc, (n,)), carray(work, (fundamental_work_size(n, m),)))
            return 1 if ok else 0

        return motion_row

    @cfunc(MOTION_FUNCTION)
    def motion_plain(M, Q, A, b, act, n, m, k, qdd, Qc, tau, work):
        ok = fundamental_into(carray(M, (n, n)), carray(Q, (n,)), carray(A, (m, n)), carray(b, (m,)), carray(qdd, (n,)),
                              carray(Qc, (n,)), carray(work, (fundamental_work_size(n, m),)))
        return 1 if ok else 0

    return motion_plain
