"""Estimating the actual plant's parameters from a run or a log (W ch. 10): the differential or the integral form.

:func:`identify` is the entry point: with q̈ (given, simulated or differenced) it solves the least squares on
W 5.2.17 of :mod:`robustrack.identification.regression` (:func:`~robustrack.identification.regression.identify_motion`),
without it the integral form over windows of the log (:mod:`robustrack.identification.integral`). Docs:
docs/guide/identification.md.
"""

from __future__ import annotations

from .._validate import as_float_array
from ..errors import ParameterError
from .integral import DEFAULT_RESOLUTION, DEFAULT_WINDOW, identify_log
from .regression import (DEFAULT_CONDITION_LIMIT, Identification, _array, _run_arrays, differentiated_accelerations,
                         identify_motion)

__all__ = ["identify"]


def identify(run, plant, parameters, *, accelerations=None, method: str = "auto",
             condition_limit: float = DEFAULT_CONDITION_LIMIT, window: int | None = None,
             resolution: float | None = None, held: bool = False) -> Identification:
    """Estimate the actual plant's parameters from a tracking run or a log (W ch. 10): least squares on W 5.2.17.

    Parameters
    ----------
    run : TrackingResult or mapping
        The run: ``t``, ``qc``, ``qcd`` (the controlled actual system) and ``Qc``, ``Qu`` (the
        force applied to it); ``np.load`` of ``robustrack run NAME --save RUN.npz`` serves, and so
        does a robot's log in a mapping with those names.
    plant : Plant
        The nominal plant: the structure and θ₀ (the estimate is θ₀ + δθ̂).
    parameters : sequence of str or str
        What to identify, e.g. ``["m1", "m2", "m3"]``.
    accelerations : None, "differences" or array_like (T, n)
        None (default): no q̈ — the integral form over windows of the log
        (:func:`robustrack.identification.integral.identify_log`: q, q̇ and the force only). An
        array: q̈_c at the run's samples (measured, or :func:`simulated_accelerations`), the
        differential form. ``"differences"``: central differences of the stored q̇_c
        (:func:`differentiated_accelerations`), the differential form.
    method, condition_limit
        As :func:`identify_motion`.
    window, resolution : optional
        The integral form's windows and resolution test (defaults
        :data:`~robustrack.identification.integral.DEFAULT_WINDOW`,
        :data:`~robustrack.identification.integral.DEFAULT_RESOLUTION`); not with ``accelerations``.
    held : bool
        The run's ``Qu`` is a sampled compensator's force, held from each sample to the next (a run logged at its
        control rate): the integral form integrates it as the staircase it is
        (:mod:`robustrack.identification.integral`, "A force held by a sampled controller"), ``Qc`` as a smooth
        force. Not with ``accelerations`` (the differential form reads the force at the samples only).

    Returns
    -------
    Identification
        ``form`` and ``data`` say which data were used.

    Examples
    --------
    >>> import numpy as np
    >>> from robustrack.plants import NLinkPendulum
    >>> nominal = NLinkPendulum(m=[1.0, 2.0], L=[1.0, 0.5])
    >>> actual = nominal.replace(m=[1.2, 1.9])
    >>> t = np.linspace(0, 1, 50); q = np.c_[np.sin(t), np.cos(2 * t)]; qd = np.c_[np.cos(t), -2 * np.sin(2 * t)]
    >>> run = {"t": t, "qc": q, "qcd": qd, "Qc": np.zeros_like(q), "Qu": np.zeros_like(q)}
    >>> qdd = np.c_[-np.sin(t), -4 * np.cos(2 * t)]
    >>> run["Qu"] = (actual.mass_matrix(q) @ qdd[..., None])[..., 0] - actual.given_force(q, qd)
    >>> np.round(identify(run, nominal, "m1,m2", accelerations=qdd).delta, 12).tolist()
    [0.2, -0.1]
    >>> np.round(identify(run, nominal, "m1,m2").delta, 4).tolist()   # no q̈: the integral form
    [0.2, -0.1]
    """
    t, q, qd, F = _run_arrays(run)
    if accelerations is None:
        held_part = _array(run, "Qu") if held else None  # Qᶜ then the smooth force, as the run stored it
        return identify_log(plant, parameters, t, q, qd, F if held_part is None else _array(run, "Qc"),
                            window=DEFAULT_WINDOW if window is None else window,
                            resolution=DEFAULT_RESOLUTION if resolution is None else resolution, method=method,
                            condition_limit=condition_limit, held=held_part)
    given = [f"`{k}`" for k, v in (("window", window), ("resolution", resolution), ("held", held or None))
             if v is not None]
    if given:
        raise ParameterError(f"{' and '.join(given)} {'belongs' if len(given) == 1 else 'belong'} to the integral form "
                             f"(accelerations=None); drop {'it' if len(given) == 1 else 'them'}, or drop "
                             "`accelerations`.")
    if isinstance(accelerations, str):
        if accelerations != "differences":
            raise ParameterError(f"`accelerations` must be None (the integral form), 'differences' or an array "
                                 f"(T, n); got {accelerations!r}.")
        qdd, label = differentiated_accelerations(t, qd), "central differences of the stored q̇_c"
    else:
        qdd, label = as_float_array(accelerations, "accelerations", ndim_min=2), "given"
    return identify_motion(plant, parameters, t, q, qd, qdd, F, method=method, condition_limit=condition_limit,
                           accelerations=label)
