"""The figures W shows for each tracking run (W §7.3, Figs. 7.9–7.20; docs/theory/triple-pendulum.md), beside the result.

As python-control keeps ``timeplot.py`` beside ``timeresp.py``: :meth:`TrackingResult.plot`
needs nothing above :mod:`robustrack.tracking`.

One function per figure; each takes a :class:`~robustrack.tracking.TrackingResult`
(and, for the XY trajectory, the nominal plant's ``positions``) and returns a
:class:`matplotlib.figure.Figure` built with the object API on the Agg canvas:
no pyplot state, no display, nothing leaks between calls.

- :func:`trajectory_figure` — the last body in the XY plane: nominal,
  controlled actual and uncompensated actual systems, start and end marked.
- :func:`coordinates_figure` — each coordinate against time for the three systems.
- :func:`errors_figure` — |eᵢ| and |ėᵢ| against time on log axes, the promised
  bound (``result.info["bounds"]``) drawn as a horizontal line over a shaded band.
- :func:`forces_figure` — ‖Qᶜ‖∞, ‖Qᵘ‖∞ and ‖Qᶜ + Qᵘ‖∞ against time.
- :func:`power_figure` — power q̇_cᵀF and work of Qᶜ and Qᵘ, and the share of each that
  does no work (:mod:`robustrack.plants.power`; S 3.8).
- :func:`residual_figure` — |constraint residual| against time (log axis), and the
  gap between the controlled and the nominal residual.

Norms over coordinates are infinity norms (W's convention), and the axis labels say so.
Units come from ``result.info["units"]`` (set by a scenario run from the plant's
coordinate kinds, :func:`robustrack.scenarios.units.tracking_units`) unless given;
without them the labels say ``[q]``, ``[Q]`` (unknown). Artists that tests (and readers
of the code) need to find carry a ``gid``: ``"bound-e"``, ``"bound-edot"`` (the bound
lines), ``"residual-gap"``.
"""

from __future__ import annotations

import math
import textwrap

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from .._format import format_value
from ..errors import ParameterError
from ..plants.units import COORDINATE_KINDS

__all__ = [
    "SYSTEM_STYLES",
    "coordinate_label",
    "trajectory_figure",
    "coordinates_figure",
    "errors_figure",
    "forces_figure",
    "power_figure",
    "residual_figure",
    "new_figure",
    "axis_unit",
    "coordinate_axis_units",
    "finite_bound",
]

#: Line styles of the three systems, the same in every figure.
SYSTEM_STYLES = {
    "nominal": {"color": "black", "linestyle": "--", "linewidth": 1.6, "label": "nominal (q)", "zorder": 3},
    "controlled": {"color": "tab:blue", "linestyle": "-", "linewidth": 1.4, "label": "controlled actual (q_c)",
                   "zorder": 2},
    "uncompensated": {"color": "tab:red", "linestyle": "-", "linewidth": 1.0, "alpha": 0.8,
                      "label": "uncompensated actual (q_a, Qᶜ only)", "zorder": 1},
}
_COORD_COLORS = ("tab:blue", "tab:orange", "tab:green", "tab:purple", "tab:brown", "tab:pink")
_FIGSIZE = (8.0, 4.5)
_GREEK = {"theta": "θ", "phi": "φ", "psi": "ψ", "alpha": "α", "beta": "β"}


def new_figure(nrows: int = 1, ncols: int = 1, *, height: float | None = None, sharex: bool = True):
    """A figure of the house style on its own Agg canvas (no pyplot state) and its axes as a flat list.

    Parameters
    ----------
    nrows, ncols : int
        The grid of axes.
    height : float, optional
        Figure height in inches (default 4.5; the width is 8).
    sharex : bool
        Share the x axis between the axes.

    Returns
    -------
    (Figure, list of Axes)
    """
    fig = Figure(figsize=(_FIGSIZE[0], height or _FIGSIZE[1]), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(nrows, ncols, sharex=sharex, squeeze=False)
    return fig, axes[:, 0] if ncols == 1 else axes


def coordinate_label(name: str) -> str:
    """``"theta2"`` → ``"θ2"``; other names unchanged.

    Parameters
    ----------
    name : str
        A coordinate name; a leading ``theta``, ``phi``, ``psi``, ``alpha`` or ``beta``
        becomes the Greek letter (the rest of the name is kept).

    Returns
    -------
    str
        The label for axes and legends.
    """
    for word, letter in _GREEK.items():
        if name.startswith(word):
            return letter + name[len(word):]
    return name


def axis_unit(result, which: str, given: str | None = None) -> str:
    """``given``, else the run's unit of ``which`` (``"q"``, ``"qd"``, ``"qdd"``, ``"Q"``), else ``[q]``-style.

    Parameters
    ----------
    result : TrackingResult or None
        Its ``info["units"]`` (set by a scenario run), if any.
    which : str
        ``"q"``, ``"qd"``, ``"qdd"`` or ``"Q"``.
    given : str, optional
        A unit the caller states (wins).

    Returns
    -------
    str
    """
    if given is not None:
        return given
    units = result.info.get("units") if result is not None else None
    if units and which in units:
        return units[which]
    plant = _plant(result)
    if plant is not None:  # a run built in a script: the plant's coordinate_kinds give the units
        from ..plants.units import coordinate_units

        return getattr(coordinate_units(plant), which)
    return dict(zip(("q", "qd", "qdd", "Q"), COORDINATE_KINDS[None]))[which]


def coordinate_axis_units(result, which: str, given: str | None = None) -> list:
    """One unit per coordinate of ``which`` (``"q"``, ``"qd"``, …): each coordinate's own, from its kind.

    ``given`` (a single unit) wins when it is not a mix (``"rad or m"``); otherwise each coordinate's
    unit comes from the run's ``info["units"]["coordinates"]["kinds"]`` or the plant's
    ``coordinate_kinds``, so a 9-joint arm with fingers labels its revolute joints rad and its
    prismatic ones m.

    Parameters
    ----------
    result : TrackingResult
    which : str
        ``"q"``, ``"qd"``, ``"qdd"`` or ``"Q"``.
    given : str, optional

    Returns
    -------
    list of str
    """
    n = result.q.shape[1]
    common = axis_unit(result, which, given)
    if given is not None and " or " not in given:
        return [given] * n
    kinds = ((result.info.get("units") or {}).get("coordinates") or {}).get("kinds")
    plant = _plant(result)
    if kinds is None and plant is not None:
        kinds = plant.coordinate_kinds
    if kinds is None or len(kinds) != n:
        return [common] * n
    col = ("q", "qd", "qdd", "Q").index(which)
    return [COORDINATE_KINDS[k if k in COORDINATE_KINDS else None][col] for k in kinds]


def _plant(result):
    """The nominal plant of the run's problem (None for a loaded result or a run without one)."""
    problem = getattr(result, "problem", None) if result is not None else None
    return getattr(problem, "nominal", None)


def _names(result) -> list[str]:
    plant = _plant(result)
    names = result.info.get("coordinates") or (plant.coordinates if plant is not None else None) or [
        f"q{i + 1}" for i in range(result.q.shape[1])]
    return [coordinate_label(str(c)) for c in names]


def _positive(x):
    """Values for a log axis: zeros (e(0) = 0) become NaN so the line starts where it is defined."""
    x = np.asarray(x, dtype=float)
    return np.where(x > 0, x, np.nan)


def finite_bound(bounds, key):
    """The promised bound ``bounds[key]`` as a float, or None when nothing finite is promised.

    Parameters
    ----------
    bounds : dict or None
        ``result.info["bounds"]`` (or any mapping with ``key``).
    key : str
        ``"e"`` or ``"edot"``.

    Returns
    -------
    float or None
    """
    if not bounds:
        return None
    value = bounds.get(key)
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def _mark_transient(ax, result):
    transient = (result.metrics or {}).get("transient_s") or 0.0
    if transient > 0:
        ax.axvspan(result.t[0], result.t[0] + transient, color="0.9", zorder=0,
                   label=f"transient (first {format_value(transient, 's')}, not judged)")


def trajectory_figure(result, plant, *, body: int = -1):
    """The path of one body (default: the last) in the XY plane for the three systems.

    Parameters
    ----------
    result : TrackingResult
    plant : Plant
        The nominal plant; its ``positions(q) -> (..., bodies, 2)`` maps coordinates to
        body positions (the same kinematics serve all three systems: δ changes masses).
    body : int, default -1
        Index of the body to draw.

    Returns
    -------
    matplotlib.figure.Figure
        One axes, equal aspect, metres; circles mark the start, squares the end.
    """
    if not getattr(plant, "has_positions", False):
        raise ParameterError(f"`plant` must define positions(q) for the XY trajectory; {type(plant).__name__} "
                             "does not.")
    fig, (ax,) = new_figure(height=6.0)
    systems = [("nominal", result.q), ("controlled", result.qc)]
    if result.qa is not None:
        systems.append(("uncompensated", result.qa))
    for key, q in systems:
        xy = np.asarray(plant.positions(q))[:, body, :]
        style = SYSTEM_STYLES[key]
        ax.plot(xy[:, 0], xy[:, 1], **style)
        ax.plot(xy[-1, 0], xy[-1, 1], marker="s", markersize=7, color=style["color"], linestyle="none",
                markerfacecolor="none" if key == "nominal" else style["color"], zorder=4)
    start = np.asarray(plant.positions(result.q[0]))[body]
    ax.plot(start[0], start[1], marker="o", markersize=9, color="green", linestyle="none",
            label=f"start (t = {format_value(result.t[0], 's')})", zorder=5)
    ax.plot([], [], marker="s", color="0.3", linestyle="none", label=f"end (t = {format_value(result.t[-1], 's')})")
    ax.set_aspect("equal", adjustable="datalim")
    ax.set_xlabel("x (m)")
    ax.set_ylabel("y (m, up)")
    n_bodies = np.asarray(plant.positions(result.q[0])).shape[0]
    which = "last body" if body in (-1, n_bodies - 1) else f"body {body % n_bodies + 1}"
    ax.set_title(f"Trajectory of the {which} (body {body % n_bodies + 1} of {n_bodies}) in the XY plane")
    ax.grid(True, alpha=0.3)
    fig.legend(*ax.get_legend_handles_labels(), loc="outside lower center", ncols=3, fontsize="small")
    return fig


def task_space_figure(result, requirement):
    """A task-space path (:class:`~robustrack.requirements.TaskSpaceTrajectory`): where the point went, and its error.

    Parameters
    ----------
    result : TrackingResult
    requirement : TaskSpaceTrajectory
        Its ``task_position(q)`` (fk) maps each system's q to the task space, ``desired(t)`` is x_d(t);
        its ``unit`` (default m) labels the axes.

    Returns
    -------
    matplotlib.figure.Figure
        Left: the path in the plane of the first two task coordinates (x_d dashed, the three systems);
        right: ‖fk(q(t)) − x_d(t)‖∞ against time (log scale), with the promised bound on ‖e‖∞ mapped to
        task space along the nominal motion (``requirement.mapped_bound``, dashed green) when the run has one.
    """
    unit = getattr(requirement, "unit", "m")
    fig, axes = new_figure(1, 2, height=4.5, sharex=False)
    path, err = axes[0]
    xd = np.asarray(requirement.desired(result.t))
    path.plot(xd[:, 0], xd[:, 1] if xd.shape[1] > 1 else result.t, color="k", linestyle="--", linewidth=1.0,
              label="required x_d(t)")
    systems = [("nominal", result.q), ("controlled", result.qc)]
    if result.qa is not None:
        systems.append(("uncompensated", result.qa))
    for key, q in systems:
        x = np.asarray(requirement.task_position(q))
        style = SYSTEM_STYLES[key]
        path.plot(x[:, 0], x[:, 1] if x.shape[1] > 1 else result.t, **style)
        err.semilogy(result.t, _positive(np.abs(x - xd).max(axis=1)), **{k: v for k, v in style.items()
                                                                          if k != "label"})
    bound = finite_bound(result.info.get("bounds"), "e")
    if bound is not None and bound > 0 and hasattr(requirement, "mapped_bound"):
        err.semilogy(result.t, requirement.mapped_bound(result.q, bound), color="tab:green", linestyle="--",
                     linewidth=1.4, gid="bound-task", label="joint bound on ‖e‖∞ mapped through J")
        err.legend(loc="lower right", fontsize="x-small")
    path.set_xlabel(f"x₁ ({unit})")
    path.set_ylabel(f"x₂ ({unit})" if xd.shape[1] > 1 else "t (s)")
    if xd.shape[1] > 1:
        path.set_aspect("equal", adjustable="datalim")
    path.set_title("Task-space path")
    err.set_xlabel("t (s)")
    err.set_ylabel(f"‖fk(q) − x_d‖∞ ({unit})")
    err.set_title("Task-space error")
    for ax in (path, err):
        ax.grid(True, alpha=0.3)
    fig.legend(*path.get_legend_handles_labels(), loc="outside lower center", ncols=2, fontsize="small")
    return fig


def coordinates_figure(result, *, unit: str | None = None):
    """Each coordinate against time: nominal, controlled actual, uncompensated actual.

    One panel per coordinate (shared time axis). ``unit`` labels the coordinates.

    Parameters
    ----------
    result : TrackingResult
        The run: ``t``, ``q``, ``qc`` and, when present, ``qa`` are drawn; the panel
        labels come from ``result.info["coordinates"]`` (default ``q1``, ``q2``, …).
    unit : str, optional
        Unit of the coordinates, for the axis labels (keyword-only); default: the run's
        (``result.info["units"]["q"]``), else ``[q]``.

    Returns
    -------
    matplotlib.figure.Figure
        n axes, one per coordinate, sharing the time axis.
    """
    units = coordinate_axis_units(result, "q", unit)
    names = _names(result)
    n = len(names)
    fig, axes = new_figure(n, height=max(4.5, 2.2 * n))
    systems = [("nominal", result.q), ("controlled", result.qc)]
    if result.qa is not None:
        systems.append(("uncompensated", result.qa))
    for i, ax in enumerate(axes):
        for key, q in systems:
            ax.plot(result.t, q[:, i], **SYSTEM_STYLES[key])
        ax.set_ylabel(f"{names[i]} ({units[i] or '1'})")
        ax.grid(True, alpha=0.3)
    axes[-1].set_xlabel("time t (s)")
    fig.legend(*axes[0].get_legend_handles_labels(), loc="outside lower center", ncols=3, fontsize="small")
    axes[0].set_title("Coordinates against time: nominal, controlled actual"
                      + (", uncompensated actual" if result.qa is not None else ""))
    return fig


def _error_panel(ax, t, values, names, bound, what, unit, gid, decades=5.0, judged=True, units=None):
    mixed = units is not None and len(set(units)) > 1  # each curve says its own unit when they differ
    for i, name in enumerate(names):
        ax.plot(t, _positive(np.abs(values[:, i])), color=_COORD_COLORS[i % len(_COORD_COLORS)],
                linewidth=1.0, label=f"|{what}{name[-1] if name[-1].isdigit() else '_' + name}|"
                + (f" ({units[i] or '1'})" if mixed else ""))
    if bound is not None and bound > 0 and not judged:  # the compensator's bound, not promised for this run
        ax.axhline(bound, color="tab:green", linestyle="--", linewidth=1.6, gid=gid,
                   label=f"compensator's bound {format_value(bound, unit, digits=3)} (not promised here)")
        title = f"{what}: compensator's bound ‖{what}‖∞ ≤ {format_value(bound, unit, digits=3)}, not promised here"
    elif bound is not None and bound > 0:
        ax.axhspan(0.0, bound, color="tab:green", alpha=0.08, zorder=0)
        ax.axhline(bound, color="tab:green", linestyle="--", linewidth=1.6, gid=gid,
                   label=f"promised bound {format_value(bound, unit, digits=3)}")
        title = f"{what}: promised ‖{what}‖∞ ≤ {format_value(bound, unit, digits=3)} (shaded)"
    elif bound == 0:
        ax.plot([], [], color="none", label="promised bound 0 (ideal sliding): not drawable on a log axis")
        title = f"{what}: promised ‖{what}‖∞ → 0 (continuous-time ideal sliding)"
    else:
        ax.plot([], [], color="none", label="no bound promised")
        title = f"{what}: no bound promised"
    ax.set_yscale("log")
    # show at most `decades` decades below the top: zero crossings and e(0) = 0 dip without limit
    peak = np.nanmax(np.abs(values)) if np.any(values) else 1.0
    top = max(peak, bound or 0.0)
    positive = np.abs(values)[np.abs(values) > 0]
    low = max(positive.min() if positive.size else top * 10**-decades, top * 10**-decades)
    ax.set_ylim(low / 2, top * 3)
    ax.set_ylabel(f"|{what}ᵢ| ({unit})")
    ax.set_title(title, fontsize="medium")
    ax.grid(True, which="both", alpha=0.25)
    ax.legend(loc="lower right", fontsize="x-small", ncols=2)


def errors_figure(result, *, unit: str | None = None):
    """Tracking errors |eᵢ| and |ėᵢ| (e = q_c − q, W 7.2.1–7.2.2) on log axes, with the promised bounds.

    The bounds come from ``result.info["bounds"]`` (``e``, ``edot``): each is drawn as a
    dashed horizontal line (``gid`` ``"bound-e"`` / ``"bound-edot"``) over a shaded band
    from 0 to the bound; a missing or infinite bound is said in the title and legend.
    The transient excluded from the check, if any, is shaded grey.

    Parameters
    ----------
    result : TrackingResult
        The run: ``e``, ``edot`` against ``t``; ``info["bounds"]`` (the promised bounds),
        ``info["bounds_note"]`` (shown under the title, if any), ``info["coordinates"]``
        (labels) and ``metrics["transient_s"]`` (the grey band) are used when present.
    unit : str, optional
        Unit of e (keyword-only); ė is labelled ``<unit>/s``. Default: the run's units
        (``result.info["units"]``), else ``[q]``.

    Returns
    -------
    matplotlib.figure.Figure
        Two axes (|eᵢ| above, |ėᵢ| below), logarithmic, sharing the time axis.
    """
    unit_e = axis_unit(result, "q", unit)
    unit_ed = f"{unit}/s" if unit is not None else axis_unit(result, "qd")
    names = _names(result)
    bounds = result.info.get("bounds")
    fig, (ax_e, ax_ed) = new_figure(2, height=6.5)
    judged = (result.metrics or {}).get("bounds_held") is not None
    _error_panel(ax_e, result.t, result.e, names, finite_bound(bounds, "e"), "e", unit_e, "bound-e", judged=judged,
                 units=coordinate_axis_units(result, "q", unit))
    _error_panel(ax_ed, result.t, result.edot, names, finite_bound(bounds, "edot"), "ė", unit_ed, "bound-edot",
                 judged=judged, units=coordinate_axis_units(result, "qd", None if unit is None else unit_ed))
    for ax in (ax_e, ax_ed):
        _mark_transient(ax, result)
    ax_ed.set_xlabel("time t (s)")
    note = result.info.get("bounds_note")
    title = "Tracking errors of the controlled actual system (log scale)"
    fig.suptitle(title + ("\n" + textwrap.fill(f"note: {note}", 90) if note else ""))
    return fig


def forces_figure(result, *, unit: str | None = None):
    """‖Qᶜ‖∞, ‖Qᵘ‖∞ and ‖Qᶜ + Qᵘ‖∞ against time (W Figs. 7.11, 7.15, 7.19).

    Qᶜ is the nominal controller's force (computed on the nominal trajectory), Qᵘ = M u the
    compensator's. ``unit`` is that of the generalized forces (N·m for angle coordinates).

    Parameters
    ----------
    result : TrackingResult
        The run: ``Qc`` and ``Qu`` against ``t``.
    unit : str, optional
        Unit of the generalized forces, for the axis label (keyword-only); default: the
        run's (``result.info["units"]["Q"]``: N·m for angles, N for lengths), else ``[Q]``.

    Returns
    -------
    matplotlib.figure.Figure
        One axes with the three norms.
    """
    unit = axis_unit(result, "Q", unit)
    fig, (ax,) = new_figure()
    norm = lambda x: np.abs(x).max(axis=-1)  # noqa: E731
    ax.plot(result.t, norm(result.Qc), color="tab:gray", linewidth=1.4, label="‖Qᶜ‖∞ (nominal control)")
    ax.plot(result.t, norm(result.Qu), color="tab:orange", linewidth=1.2, label="‖Qᵘ‖∞ (compensator)")
    ax.plot(result.t, norm(result.Qc + result.Qu), color="tab:blue", linestyle="--", linewidth=1.0,
            label="‖Qᶜ + Qᵘ‖∞ (total control)")
    ax.set_xlabel("time t (s)")
    ax.set_ylabel(f"infinity norm over coordinates ({unit})")
    ax.set_title("Control forces: nominal controller Qᶜ and compensator Qᵘ = M u")
    ax.grid(True, alpha=0.3)
    ax.legend(loc="best", fontsize="small")
    return fig


def effort_figure(result, limits, *, unit: str | None = None):
    """Each joint's applied τ = Qᶜ + Qᵘ against time with its effort limits ±τ_max (docs/guide/robot.md, "Effort
    limits"): where a trace runs along a limit line the motor saturated.

    Parameters
    ----------
    result : TrackingResult
        The run: ``Qc`` and ``Qu`` (the applied force: clipped where saturated) against ``t``.
    limits : array_like (n,)
        :func:`~robustrack.tracking.actuators.effort_limits` of the run's problem (inf: no line).
    unit : str, optional
        Unit of the generalized forces (keyword-only).

    Returns
    -------
    matplotlib.figure.Figure
        One axes per joint.
    """
    unit = axis_unit(result, "Q", unit)
    tau = np.asarray(result.Qc) + np.asarray(result.Qu)
    names = _names(result)
    n = tau.shape[1]
    fig, axes = new_figure(n, 1, height=max(4.5, 1.15 * n))
    for i, ax in enumerate(axes):
        ax.plot(result.t, tau[:, i], color=_COORD_COLORS[i % len(_COORD_COLORS)], linewidth=1.2,
                label="τ = Qᶜ + Qᵘ" if i == 0 else None)
        lim = float(np.asarray(limits, dtype=float)[i])
        if np.isfinite(lim):
            for sign in (1.0, -1.0):
                ax.axhline(sign * lim, color="tab:red", linestyle="--", linewidth=1.0,
                           label="effort limit ±τ_max" if i == 0 and sign > 0 else None)
        ax.text(0.01, 0.8, coordinate_label(names[i]), transform=ax.transAxes, fontsize="small")
        ax.set_ylabel(unit, fontsize="small")
        ax.grid(True, alpha=0.3)
    axes[-1].set_xlabel("time t (s)")
    axes[0].set_title("Joint torques and their effort limits (the motors clip at the dashed lines)")
    axes[0].legend(loc="upper right", fontsize="x-small")
    return fig


def power_figure(result, power=None):
    """Power and work of Qᶜ and Qᵘ on the controlled actual system, and their workless share (S 3.8).

    Parameters
    ----------
    result : TrackingResult
        The run.
    power : ControlPower, optional
        :func:`robustrack.plants.power.control_power` of the run; default: with the
        Euclidean metric (``result.power()``).

    Returns
    -------
    matplotlib.figure.Figure
        Three axes: power q̇_cᵀF (W), work ∫P dt (J), instantaneous workless share (%).
    """
    pw = power if power is not None else result.power()
    fig, axes = new_figure(3, height=7.5)
    styles = (("Qc", "Qᶜ (nominal control)", "tab:gray", 1.4), ("Qu", "Qᵘ (compensator)", "tab:orange", 1.0))
    for key, label, color, width in styles:
        fp = getattr(pw, key)
        axes[0].plot(pw.t, fp.power, color=color, linewidth=width, label=label)
        axes[1].plot(pw.t, fp.work, color=color, linewidth=width, label=label)
        axes[2].plot(pw.t, 100 * fp.workless_share, color=color, linewidth=width, label=label)
    axes[0].set_ylabel("power q̇_cᵀF (W)")
    axes[1].set_ylabel("work ∫P dt (J)")
    axes[2].set_ylabel("workless share (%)")
    axes[2].set_ylim(-2, 102)
    axes[2].set_xlabel("time t (s)")
    axes[0].set_title(f"Power and work of Qᶜ and Qᵘ on q_c ({'mass-matrix' if pw.metric == 'M' else 'Euclidean'} "
                      "split of the workless part)")
    for ax in axes:
        ax.grid(True, alpha=0.3)
        ax.legend(loc="best", fontsize="small")
    return fig


def residual_figure(result, *, unit: str | None = None, symbol: str = "r",
                    description: str = "Constraint residual"):
    """|constraint residual| (raw φ or ψ, ∞-norm over rows) against time.

    Nominal and controlled actual systems, and (dotted, ``gid`` ``"residual-gap"``) their
    gap |r_c − r|: the controlled system is steered onto the nominal *trajectory*, not onto
    the constraint, so its residual is the nominal one plus the imprint of the tracking
    error, r(q_c, q̇_c) − r(q, q̇) ≈ ∂r/∂q·e + ∂r/∂q̇·ė; once the nominal residual has
    decayed below that imprint the controlled one stays at its level. ``symbol`` names
    the residual in the axis label (e.g. ``"ψ"``), ``description`` titles the figure.
    The axis is logarithmic when the residual spans more than 1.5 decades, linear
    otherwise. Returns a figure saying "no constraint" when the run had none (W Remark
    7.2's unconstrained variant).

    Parameters
    ----------
    result : TrackingResult
        The run: ``residual_nominal`` and, when present, ``residual_controlled``
        against ``t`` (``residual_nominal`` None: the "no constraint" figure).
    unit : str, optional
        Unit of the residual, for the axis label (keyword-only); default: the run's
        (``result.info["units"]["residual"]``), else "constraint units".
    symbol : str, default "r"
        Symbol of the residual in the axis label (keyword-only), e.g. ``"ψ"``.
    description : str, default "Constraint residual"
        Start of the figure title (keyword-only).

    Returns
    -------
    matplotlib.figure.Figure
        One axes.
    """
    fig, (ax,) = new_figure()
    unit = unit or (result.info.get("units") or {}).get("residual")
    unit_txt = f" ({unit})" if unit else " (constraint units)"
    rows = "" if result.residual_nominal is None or result.residual_nominal.shape[-1] == 1 else ", ∞-norm over rows"
    ax.set_xlabel("time t (s)")
    symbol = symbol.partition(" = ")[0]  # "φ = q − q_d(t)" names φ: the caption says what it is
    ax.set_ylabel(f"|{symbol}|{rows}{unit_txt}")
    if result.residual_nominal is None:
        ax.text(0.5, 0.5, "no constraint in this run (unconstrained nominal system)", transform=ax.transAxes,
                ha="center", va="center")
        ax.set_xlim(result.t[0], result.t[-1])
        ax.set_title(f"{description}: none")
        return fig
    values = []
    for key, res in (("nominal", result.residual_nominal), ("controlled", result.residual_controlled)):
        if res is None:
            continue
        values.append(np.abs(res).max(axis=-1))
        ax.plot(result.t, _positive(values[-1]), **SYSTEM_STYLES[key])
    if result.residual_controlled is not None:
        gap = np.abs(result.residual_controlled - result.residual_nominal).max(axis=-1)
        ax.plot(result.t, _positive(gap), color="tab:purple", linestyle=":", linewidth=1.4, gid="residual-gap",
                label=f"gap |{symbol}_c − {symbol}|: imprint of the tracking error ≈ ∂{symbol}/∂q·e + ∂{symbol}/∂q̇·ė",
                zorder=4)
    positive = np.concatenate(values)
    positive = positive[positive > 0]
    log = positive.size > 0 and positive.max() > 10**1.5 * positive.min()
    if log:
        ax.set_yscale("log")
    ax.set_title(f"{description} against time" + (" (log scale)" if log else ""))
    ax.grid(True, which="both", alpha=0.25)
    ax.legend(loc="best", fontsize="small")
    return fig
