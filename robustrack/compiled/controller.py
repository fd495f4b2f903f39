"""The controller's force τ(t, q, q̇) = Qᶜ(t) + M(q) u(t, e, ė, z) on the kernels, one state or a batch.

:class:`~robustrack.loop.Controller` holds a :class:`ControllerState` (a numba structure reference: the nominal
dense output, the structure's :class:`~robustrack.compiled.systems.Model`, the compensator's
:class:`~robustrack.compiled.laws.Law` and a workspace) and calls :func:`controller_torque` with it. One
argument that numba types by its class (not field by field) keeps a call from Python at a few microseconds
(docs/guide/robot.md, the benchmark ``benchmarks/bench_controller.py``).

The arithmetic is the controlled system's (:func:`~robustrack.compiled.systems.controlled_eval` without
actuators): the nominal side through the same one-entry cache (:func:`~robustrack.compiled.systems.nominal_cached`),
u of the same law, Qᵘ = M(q) u with the nominal M at the measured q (W 5.2.17) — so the controller reproduces the
simulation's Qᶜ + Qᵘ to rounding.
"""

import numpy as np
from numba import types
from numba.experimental import structref

from .cache import kernel
from .systems import call, controlled_workspace, nominal_cached

__all__ = ["ControllerState", "controller_state", "controller_torque", "controller_batch"]


@structref.register
class ControllerStateType(types.StructRef):
    """numba's type of :class:`ControllerState`."""

    def preprocess_fields(self, fields):
        return tuple((name, types.unliteral(typ)) for name, typ in fields)


class ControllerState(structref.StructRefProxy):
    """What :func:`controller_torque` reads: ``nom`` (Dense), ``md`` (Model), ``law`` (Law), ``work``
    (:func:`~robustrack.compiled.systems.controlled_workspace`)."""


structref.define_proxy(ControllerState, ControllerStateType, ["nom", "md", "law", "work", "grid", "table"])


@kernel
def _workspace(n, nz, m):
    return controlled_workspace(n, nz, 0, m)


@kernel
def _tabulate(nom, md, times, table):
    """The nominal side at ``times`` into the rows of ``table``, each in the format of the nominal cache
    ([t, ok, q, q̇, Qᶜ, τᶜ]: :func:`~robustrack.compiled.systems.nominal_cached`'s own evaluation, so a row is
    the same floats the controller computes at that t)."""
    n = nom.yold.shape[1] // 2
    scratch = controlled_workspace(n, 0, 0, md.m)[6]
    for j in range(times.shape[0]):
        row = table[j]
        row[0] = np.nan
        nominal_cached(times[j], nom, md, row, scratch)


def controller_state(nom, md, law, n: int, nz: int, grid=None) -> ControllerState:
    """The :class:`ControllerState` of a nominal run, a structure's model and a law.

    Parameters
    ----------
    nom : Dense
        The nominal solution (:func:`~robustrack.compiled.loop.dense`).
    md : Model
        :func:`~robustrack.compiled.loop.compiled_loop`'s model (the nominal plant as the actual one).
    law : Law
        :func:`~robustrack.compiled.loop.kernel_law`'s.
    n, nz : int
        Coordinates and the law's states.
    grid : (float, float, int), optional
        (t0, h, K): the loop's sample instants t0 + k h, k < K, at which the nominal side (the reference and the
        fundamental equation's Qᶜ) is computed now, once; a call at one of them reads it (the same floats).

    Returns
    -------
    ControllerState
    """
    from .cache import first_class_functions

    t0, h, K = grid if grid is not None else (0.0, 1.0, 0)
    table = np.empty((K, 2 + 3 * n))
    if K:
        times = t0 + h * np.arange(K)
        _tabulate(nom, md, times, table)
        table[:, 0] = times
    with first_class_functions():
        return ControllerState(nom, md, law, _workspace(n, nz, md.m), np.array([t0, h]), table)


@kernel(inline=True)
def _torque(c, t, q, qd, z, tau, u):
    """τ = Qᶜ(t) + M(q) u into ``tau`` and u into ``u``; False where the nominal motion is not defined at t."""
    n = q.shape[0]
    nw, wv, wm, wz, _, _, scratch = c.work
    k = int(round((t - c.grid[0]) / c.grid[1]))
    if 0 <= k < c.table.shape[0] and c.table[k, 0] == t:  # a sample instant of the loop: computed once
        nw = c.table[k]
        ok = nw[1] != 0.0
    else:
        ok = nominal_cached(t, c.nom, c.md, nw, scratch)
    e = wv[0]
    ed = wv[1]
    for i in range(n):
        e[i] = q[i] - nw[2 + i]
        ed[i] = qd[i] - nw[2 + n + i]
    c.law.u(c.law.params, c.law.f, e, ed, z, u, wm[0], wm[1], wz, False)
    Mn = wm[2]
    call(c.md.nom_mass, q, qd, t, c.md.pn, Mn)
    for i in range(n):
        s = 0.0
        for k in range(n):
            s += Mn[i, k] * u[k]
        tau[i] = nw[2 + 2 * n + i] + s
    return ok


@kernel
def controller_torque(c, t, q, qd, z, tau, u):
    """τ(t, q, q̇) of the controller ``c`` (:class:`ControllerState`) into ``tau`` (and u into ``u``).

    Returns
    -------
    bool
        False where the nominal motion is not defined at t (τ is then not finite).
    """
    return _torque(c, t, q, qd, z, tau, u)


@kernel
def controller_batch(c, t, q, qd, z, tau, u):
    """:func:`controller_torque` at T states: ``t`` (T,), ``q``, ``qd`` (T, n), ``z`` (T, n_z) into ``tau``, ``u``
    (T, n); returns how many states had a defined nominal motion."""
    good = 0
    for j in range(t.shape[0]):
        if _torque(c, t[j], q[j], qd[j], z[j], tau[j], u[j]):
            good += 1
    return good
