"""The constrained motion (the fundamental equation, with actuators where there are) as a C function.

:func:`~robustrack.tracking.actuator_kernels.constrained_motion` compiled as a ``numba.cfunc`` of the C
signature :data:`MOTION_FUNCTION`: the systems of :mod:`~robustrack.tracking.rhs_kernels` reach it through
the :class:`~robustrack.tracking.rhs_kernels.Model` record instead of linking its code, so the biggest kernel
(the fundamental equation, Gauss's actuator force, its realizability check) is compiled once, not once per
system that calls it. Importing this module compiles it (or loads it from the cache): only
:mod:`robustrack.tracking.compiled` imports it, inside its compile notice.
"""

from numba import carray, cfunc, types

from .actuator_kernels import constrained_motion

__all__ = ["MOTION_FUNCTION", "motion"]

_F8P = types.CPointer(types.float64)
#: ``motion(M, Q, A, b, act, n, m, k, qdd, Qc, tau)``: pointers to C-contiguous float64 arrays M (n × n), Q (n),
#: A (m × n), b (m), act ((n + 1) × k), and the outputs q̈ (n), Qᶜ (n), τᶜ (k); 1 where the motion exists, else 0.
MOTION_FUNCTION = types.int64(_F8P, _F8P, _F8P, _F8P, _F8P, types.int64, types.int64, types.int64, _F8P, _F8P, _F8P)


@cfunc(MOTION_FUNCTION, cache=True)
def motion(M, Q, A, b, act, n, m, k, qdd, Qc, tau):
    ok = constrained_motion(carray(M, (n, n)), carray(Q, (n,)), carray(A, (m, n)), carray(b, (m,)),
                            carray(act, (n + 1, k)), carray(qdd, (n,)), carray(Qc, (n,)), carray(tau, (k,)))
    return 1 if ok else 0
