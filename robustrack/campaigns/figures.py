"""The figures of the studies, beside their results: the Γ Monte Carlo and a closed-loop campaign (W Figs. 7.1–7.8).

- :func:`gamma_density_figure` — the Monte Carlo densities of max_t ‖δq‖∞,
  exact (W 5.3.5) and first order (W 5.3.10), with the Γ a run used and the
  Monte Carlo's suggestion Γ′ marked (W Figs. 7.1–7.8).
- :func:`campaign_histogram_figure` — a closed-loop campaign's histogram of max ‖e‖∞
  over the sampled plants, with the promised bound marked.

The figures of one tracking run are in :mod:`robustrack.tracking.figures` (beside the result);
these share its canvas and conventions. Artists carry a ``gid``: ``"gamma-used"``,
``"gamma-prime"``, ``"dq-run"``, ``"campaign-bound"``.
"""

from __future__ import annotations

import math

import numpy as np

from .._format import format_value
from ..errors import ParameterError
from ..plants.units import COORDINATE_KINDS
from ..tracking.figures import axis_unit, finite_bound, new_figure
from ..uncertainty import parameter_label

__all__ = ["gamma_density_figure", "campaign_histogram_figure"]


def gamma_density_figure(estimate, *, unit: str | None = None, bins: int | None = None, used: float | None = None,
                         used_label: str = "Γ used by the run", run_value: float | None = None):
    """Monte Carlo densities of max_t ‖δq(t)‖∞: exact (W 5.3.5) and first order (W 5.3.10), Γ marked.

    Parameters
    ----------
    estimate : GammaEstimate
        From :func:`robustrack.uncertainty.estimate_gamma` / ``run_gamma``; its
        ``gamma_prime`` (margin × quantile of the exact values) is drawn dashed, black,
        as the Monte Carlo's suggestion (``gid`` ``"gamma-prime"``).
    unit : str, optional
        Unit of δq (an acceleration: rad/s² for angle coordinates, m/s² for lengths);
        default ``[q]/s²``.
    bins : int, optional
        Histogram bins (default: about √N, between 10 and 80), shared by both densities.
    used : float, optional
        The Γ a run actually used (its compensator's design value): a solid green line,
        ``gid`` ``"gamma-used"``, labelled ``used_label = value``.
    used_label : str, default "Γ used by the run"
        Its legend text before the value.
    run_value : float, optional
        max_t ‖δq(t)‖∞ measured along that run (its own δm): a dotted line, ``gid`` ``"dq-run"``.

    Returns
    -------
    matplotlib.figure.Figure
        One axes: the two densities against max_t ‖δq(t)‖∞.
    """
    unit = unit or COORDINATE_KINDS[None][2]
    exact = np.asarray(estimate.exact, dtype=float)
    first = np.asarray(estimate.first_order, dtype=float)
    if exact.size == 0:
        raise ParameterError("`estimate` has no samples; the Γ density needs at least one.")
    nb = bins or int(np.clip(round(math.sqrt(exact.size)), 10, 80))
    gp = float(estimate.gamma_prime)
    lo = min(exact.min(), first.min())
    hi = max(exact.max(), first.max())
    edges = np.linspace(lo, hi if hi > lo else lo + 1.0, nb + 1)
    fig, (ax,) = new_figure()
    ax.hist(exact, bins=edges, density=True, histtype="stepfilled", color="tab:blue", alpha=0.35,
            label="exact (W 5.3.5)")
    ax.hist(first, bins=edges, density=True, histtype="step", color="tab:red", linewidth=1.6,
            label="first order (W 5.3.10)")
    if used is not None:
        ax.axvline(float(used), color="tab:green", linestyle="-", linewidth=2.0, gid="gamma-used",
                   label=f"{used_label} = {format_value(float(used), unit)}")
    if run_value is not None:
        ax.axvline(float(run_value), color="tab:purple", linestyle=":", linewidth=1.8, gid="dq-run",
                   label=f"max ‖δq‖∞ along the run = {format_value(float(run_value), unit)}")
    ax.axvline(gp, color="black", linestyle="--", linewidth=1.6, gid="gamma-prime",
               label=f"Monte Carlo suggestion Γ′ = {format_value(estimate.margin, digits=3)} × "
                     f"p{format_value(100 * estimate.quantile, digits=3)} = {format_value(gp, unit)}")
    spread = estimate.spread
    spread_txt = f"±{format_value(100 * float(spread))} % " if np.ndim(spread) == 0 and spread is not None else ""
    ax.set_title(f"Γ Monte Carlo: {estimate.n_samples} actual plants, uniform {spread_txt}on "
                 f"`{parameter_label(estimate.parameter)}`, seed {estimate.seed}", fontsize="medium")
    ax.set_xlabel(f"max over t of ‖δq(t)‖∞ ({unit})")
    ax.set_ylabel(f"probability density (1/({unit}))")
    ax.grid(True, alpha=0.3)
    # below the axes: inside, it would hide the tail and the marked values
    fig.legend(*ax.get_legend_handles_labels(), loc="outside lower center", ncols=2, fontsize="small")
    return fig


def campaign_histogram_figure(values, *, bound=None, title: str = "", unit: str | None = None,
                              bins: int | None = None):
    """Histogram of max ‖e‖∞ over a campaign's sampled plants, with the promised bound on ‖e‖∞ marked.

    Parameters
    ----------
    values : array_like (N,)
        max ‖e‖∞ of each successful sample (e.g. ``CampaignResult.max_abs_e()``).
    bound : float, optional
        The promised bound on ‖e‖∞ (keyword-only): a dashed line, ``gid`` ``"campaign-bound"``;
        None or infinite: "no bound promised" in the legend.
    title : str
        The axes title (keyword-only).
    unit : str, optional
        Unit of e (keyword-only); default ``[q]`` (unknown).
    bins : int, optional
        Number of bins (default: about √N, between 10 and 60); log-spaced when the values
        span more than two decades.

    Returns
    -------
    matplotlib.figure.Figure
        One axes: counts against max ‖e‖∞.
    """
    unit = axis_unit(None, "q", unit)
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    if v.size == 0:
        raise ParameterError("`values` has no finite sample; the histogram needs at least one.")
    nb = bins or int(np.clip(round(math.sqrt(v.size)), 10, 60))
    lo, hi = float(v.min()), float(v.max())
    b = finite_bound({"e": bound}, "e")
    top = max(hi, b) if b is not None and b < 10 * hi else hi
    log = lo > 0 and top / lo > 100
    edges = np.geomspace(lo, hi, nb + 1) if log and hi > lo else \
        np.linspace(lo, hi if hi > lo else lo * (1 + 1e-9) + 1e-300, nb + 1)
    fig, (ax,) = new_figure()
    ax.hist(v, bins=edges, color="tab:blue", alpha=0.6, label=f"{v.size} sampled plants")
    if log:
        ax.set_xscale("log")
    if top > hi:
        ax.set_xlim(right=top * (1.3 if log else 1.04))
    if b is not None:
        ax.axvline(b, color="tab:green", linestyle="--", linewidth=1.8, gid="campaign-bound",
                   label=f"promised bound on ‖e‖∞ = {format_value(b, unit, digits=3)}"
                         + ("" if b <= top else " (off the axis, right)"))
    else:
        ax.plot([], [], " ", label="no bound promised on ‖e‖∞")
    ax.set_xlabel(f"max over t of ‖e(t)‖∞ ({unit})")
    ax.set_ylabel("samples")
    ax.set_title(title or "Closed-loop Monte Carlo: largest tracking error of each sampled plant", fontsize="medium")
    ax.grid(True, alpha=0.3)
    ax.legend(loc="best", fontsize="small")
    return fig
