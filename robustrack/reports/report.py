"""The tracking report: one run of a tracking scenario as HTML, Markdown + PNGs, and JSON.

:func:`write_report` runs a tracking scenario (:func:`~robustrack.scenarios.tracking_kinds.run_tracking`),
optionally the Γ Monte Carlo (:func:`~robustrack.scenarios.gamma.run_gamma`), draws the
figures W shows for each run (:mod:`robustrack.reports.figures`) and writes into ``out_dir``:

    report.html      self-contained: PNGs inline as base64 data URIs, CSS inline, no
                     scripts, no external references (opens offline, mails as one file)
    report.md        the same content; images in figures/
    figures/*.png    one PNG per figure
    summary.json     the numbers: metrics (exactly ``TrackingResult.metrics``), promised
                     bounds, solver settings and statistics, Γ summary, seeds, package
                     versions, the full configuration, and — in one place, ``wall_times_s`` —
                     the wall times (the only numbers that differ between two runs)
    scenario.toml    the full configuration as a catalog file: ``robustrack report
                     scenario.toml`` reproduces the report

Determinism: the same call twice gives identical ``summary.json`` apart from
``wall_times_s``, and byte-identical PNGs (fixed dpi, no software/date metadata):
the integration and the Monte Carlo draws (seeded) are deterministic, and no wall
time enters a figure. Non-finite numbers (an infinite bound: none promised) are
written to JSON as ``null``.

Only tracking scenarios are reported; a constrained-simulation scenario (``robustrack
run duffing`` and the like) is refused with a :class:`~robustrack.errors.ScenarioError`:
it has no nominal/actual pair, no errors and no Qᵘ to show.
"""

from __future__ import annotations

import base64
import html
import io
import json
import math
import platform
import time
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import numpy as np

from .._json import to_jsonable
from ..errors import OutputExistsError, ParameterError, ScenarioError
from ..scenarios import KINDS, Scenario, load_scenario
from . import figures as F

__all__ = ["ReportPaths", "ReportFigure", "write_report", "report_figures", "figure_png",
           "scenario_toml", "package_versions", "PNG_DPI"]

#: Resolution of every PNG (fixed so that the files are byte-stable).
PNG_DPI = 100

#: Packages whose versions the report records (distribution names).
_PACKAGES = ("robustrack", "numpy", "scipy", "matplotlib", "control", "sympy")

#: The files a report writes (figures/NAME.png for NAME in _FIGURE_NAMES).
_REPORT_FILES = ("report.html", "report.md", "summary.json", "scenario.toml")
_FIGURE_NAMES = ("trajectory", "coordinates", "errors", "forces", "residual", "gamma")
#: The figures of the robustness-campaign section (only with a campaign).
_CAMPAIGN_FIGURE_NAMES = ("campaign", "campaign-worst")

#: Units by scenario kind: coordinates, generalized forces, constraint residual (its meaning).
_UNITS = {
    "triple-pendulum-tracking": {"q": "rad", "Q": "N·m", "residual": "m/s²", "residual_symbol": "ψ",
                                 "residual_description": "Energy constraint residual ψ = E₁/(m₁L₁)"},
    "duffing-tracking": {"q": "m", "Q": "N", "residual": "m", "residual_symbol": "φ",
                         "residual_description": "Tracking constraint residual φ = x₁ − x₂ − A e^(−αt) sin ωt"},
}
_DEFAULT_UNITS = {"q": "coordinate units", "Q": "force units", "residual": None, "residual_symbol": "r",
                  "residual_description": "Constraint residual"}


@dataclass(frozen=True)
class ReportPaths:
    """The files :func:`write_report` wrote."""

    out_dir: Path
    html: Path
    markdown: Path
    summary: Path
    scenario_toml: Path
    figures: tuple


@dataclass(frozen=True)
class ReportFigure:
    """One figure of the report: file stem, title, caption (what to look for) and the Figure."""

    name: str
    title: str
    caption: str
    figure: object


# --------------------------------------------------------------------------- #
# small pieces
# --------------------------------------------------------------------------- #
def figure_png(fig, dpi: int = PNG_DPI) -> bytes:
    """The PNG bytes of ``fig``: fixed dpi and no ``Software`` metadata, so byte-stable.

    Parameters
    ----------
    fig : matplotlib.figure.Figure
        The figure to render.
    dpi : int, default PNG_DPI
        Resolution (dots per inch); the default, :data:`PNG_DPI` = 100, is what reports use.

    Returns
    -------
    bytes
        The PNG file's contents.
    """
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, metadata={"Software": None})
    return buf.getvalue()


def package_versions() -> dict:
    """Versions of robustrack, its dependencies and Python."""
    out = {}
    for name in _PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = getattr(__import__(name), "__version__", "unknown")
    out["python"] = platform.python_version()
    return out


def _toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    if isinstance(v, (float, np.floating)):
        v = float(v)
        return repr(v) if math.isfinite(v) else ("nan" if math.isnan(v) else ("inf" if v > 0 else "-inf"))
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)
    if isinstance(v, (list, tuple, np.ndarray)):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    raise ParameterError(f"cannot write a configuration value of type {type(v).__name__} as TOML: {v!r}.")


def scenario_toml(scenario: Scenario) -> str:
    """The complete scenario (``[scenario]`` table + every section) as a loadable TOML file.

    Parameters
    ----------
    scenario : Scenario
        Its ``name``, ``kind``, ``title`` and ``source`` go into the ``[scenario]`` table,
        then one table per section of ``scenario.config``.

    Returns
    -------
    str
        The TOML text, ending in a newline.

    Raises
    ------
    ParameterError
        A configuration value that TOML cannot hold (not a bool, number, string or list).
    """
    meta = {"name": scenario.name, "kind": scenario.kind, "title": scenario.title, "source": scenario.source}
    lines = ["[scenario]"] + [f"{k} = {_toml_value(v)}" for k, v in meta.items()]
    for section, table in scenario.config.items():
        lines += ["", f"[{section}]"] + [f"{k} = {_toml_value(v)}" for k, v in table.items()]
    return "\n".join(lines) + "\n"


def _fmt(v, digits: int = 4) -> str:
    if v is None:
        return "—"
    if isinstance(v, (bool, np.bool_)):
        return "yes" if v else "no"
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    if isinstance(v, (float, np.floating)):
        return "∞" if v == math.inf else f"{float(v):.{digits}g}"
    return str(v)


# --------------------------------------------------------------------------- #
# content
# --------------------------------------------------------------------------- #
def report_figures(result, plant, *, gamma=None, units=None) -> list:
    """The report's figures, in order, as :class:`ReportFigure` (see :mod:`robustrack.reports.figures`).

    Parameters
    ----------
    result : TrackingResult
        The tracking run to draw.
    plant : Plant
        The nominal plant, for the XY trajectory (drawn when ``plant.has_positions``).
    gamma : GammaEstimate, optional
        A Γ Monte Carlo (keyword-only); when given, its density figure is appended.
    units : dict, optional
        Overrides of the default units and labels (keyword-only), keys ``"q"``
        (coordinates), ``"Q"`` (generalized forces), ``"residual"`` (constraint residual,
        None: unnamed), ``"residual_symbol"`` and ``"residual_description"``; missing
        keys keep their defaults ("coordinate units", "force units", None, "r",
        "Constraint residual").

    Returns
    -------
    list of ReportFigure
        trajectory (only when ``plant.has_positions``), coordinates, errors, forces, residual
        and, with ``gamma``, gamma.
    """
    u = {**_DEFAULT_UNITS, **(units or {})}
    b = result.info.get("bounds") or {}
    bound_txt = ("the dashed green lines are the bounds the compensator promises (its assumptions in the "
                 "summary): after any grey transient the ∞-norm, i.e. the highest curve, should stay below them"
                 if b else "no compensator: no bound is promised")
    out = []
    if plant.has_positions:  # bodies in a plane (the pendulum); others have no XY picture
        out.append(ReportFigure(
            "trajectory", "Trajectory of the last body",
            "The last body in the XY plane. The controlled actual system (blue) should lie on the nominal "
            "one (black dashed) to the eye; the uncompensated actual system (red, Qᶜ(t) alone) drifts "
            "away (W Figs. 5.1–5.2). Green dot: start; squares: ends. Curves join the "
            "simulation's output times (simulation.n_points): a fast-whirling uncompensated system "
            "looks jagged at that sampling.",
            F.trajectory_figure(result, plant)))
    out += [
        ReportFigure("coordinates", "Coordinates against time",
                     "Each coordinate for the three systems: blue must hide under the black dashed nominal curve; "
                     "red shows how far the plant drifts without the compensator.",
                     F.coordinates_figure(result, unit=u["q"])),
        ReportFigure("errors", "Tracking errors",
                     f"|eᵢ| and |ėᵢ| (e = q_c − q) on log axes; {bound_txt}.",
                     F.errors_figure(result, unit=u["q"])),
        ReportFigure("forces", "Control forces",
                     "‖Qᶜ‖∞ (nominal controller), ‖Qᵘ‖∞ (compensator, Qᵘ = M u) and their sum. W's point: Qᵘ "
                     "stays small next to Qᶜ; spikes or a dense band in Qᵘ mean chattering.",
                     F.forces_figure(result, unit=u["Q"])),
        ReportFigure("residual", "Constraint residual",
                     "The raw constraint value of the nominal and the controlled actual system (log scale). "
                     "A stabilized constraint that starts violated should decay; the two curves should agree.",
                     F.residual_figure(result, unit=u["residual"], symbol=u["residual_symbol"],
                                       description=u["residual_description"])),
    ]
    if gamma is not None:
        out.append(ReportFigure(
            "gamma", "Γ Monte Carlo",
            "Densities of max_t ‖δq(t)‖∞ over the sampled actual plants: exact (W 5.3.5) and first order "
            "(W 5.3.10) should nearly coincide (W Figs. 7.1–7.8); the chosen Γ′ (dashed) should lie above "
            "the bulk of both.",
            F.gamma_density_figure(gamma, unit=f"{u['q']}/s²" if u["q"] != _DEFAULT_UNITS["q"] else "acceleration units")))
    return out


def _summary_rows(result, gamma_doc, units) -> list:
    """(quantity, value, note) rows of the summary table."""
    m = result.metrics
    b = result.info.get("bounds") or {}
    uq, uQ = units["q"], units["Q"]
    if not b:
        held = "— (nothing promised)"
    elif m.get("bounds_held") is None:
        held = result.info.get("bounds_note") or "—"
    else:
        held = _fmt(m.get("bounds_held"))
    res_t = lambda r: None if r is None else float(np.abs(r[-1]).max())  # noqa: E731
    rows = [
        ("max ‖e‖∞", f"{_fmt(m.get('max_abs_e'))} {uq}", "e = q_c − q, whole run"),
        ("RMS ‖e‖∞", f"{_fmt(m.get('rms_e'))} {uq}", ""),
        ("max ‖ė‖∞", f"{_fmt(m.get('max_abs_edot'))} {uq}/s", ""),
        ("RMS ‖ė‖∞", f"{_fmt(m.get('rms_edot'))} {uq}/s", ""),
        ("promised bound on ‖e‖∞ / ‖ė‖∞",
         "none (no compensator)" if not b else f"{_fmt(b.get('e'))} {uq} / {_fmt(b.get('edot'))} {uq}/s",
         "∞ = no bound promised"),
        ("bounds held", held, f"judged from t = {_fmt(m.get('transient_s'))} s; "
         f"reaching time {_fmt(m.get('reaching_time'))} s"),
        ("assumptions held", _fmt(m.get("assumptions_held")),
         f"max ‖δq‖∞ = {_fmt(m.get('max_norm_dq'))} {uq}/s² vs Γ = {_fmt(b.get('gamma'))}; "
         f"max ‖M̃ₐ‖∞ = {_fmt(m.get('max_norm_Mtilde'))}"),
        ("max ‖Qᶜ‖∞", f"{_fmt(m.get('max_abs_Qc'))} {uQ}", "nominal controller"),
        ("max ‖Qᵘ‖∞", f"{_fmt(m.get('max_abs_Qu'))} {uQ}", "compensator"),
        ("effort ∫‖Qᵘ‖∞ dt", f"{_fmt(m.get('effort_Qu'))} {uQ}·s", ""),
        ("chattering Σ‖ΔQᵘ‖₁ per second", f"{_fmt(m.get('chattering_Qu'))} {uQ}/s", "total variation"),
        ("max constraint residual, nominal / controlled",
         f"{_fmt(m.get('max_constraint_residual_nominal'))} / {_fmt(m.get('max_constraint_residual_controlled'))}",
         f"at the end: {_fmt(res_t(result.residual_nominal))} / {_fmt(res_t(result.residual_controlled))}"),
        ("uncompensated actual: max ‖q_a − q‖∞", f"{_fmt(m.get('actual_max_abs_e'))} {uq}", "Qᶜ(t) alone"),
    ]
    s = result.solver
    rows.append(("solver", f"{s.get('method')} rtol={_fmt(s.get('rtol'))} atol={_fmt(s.get('atol'))}",
                 f"nfev {_fmt(s.get('nfev'))}, njev {_fmt(s.get('njev'))}, success {_fmt(s.get('success'))}"))
    if gamma_doc is not None:
        rows.append(("Γ Monte Carlo: chosen Γ′", f"{_fmt(gamma_doc['gamma_prime'])} {uq}/s²",
                     f"{gamma_doc['margin']:g} × p{100 * gamma_doc['quantile']:g} of the exact max_t ‖δq‖∞ "
                     f"(max exact {_fmt(gamma_doc['exact']['max'])}, max first order "
                     f"{_fmt(gamma_doc['first_order']['max'])}); the run used Γ = {_fmt(b.get('gamma'))}"))
    return rows


def _without(d, *keys):
    return None if d is None else {k: v for k, v in d.items() if k not in keys}


# --------------------------------------------------------------------------- #
# rendering
# --------------------------------------------------------------------------- #
_CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; max-width: 60rem;
       margin: 2rem auto; padding: 0 1rem; color: #222; line-height: 1.45; }
h1 { font-size: 1.6rem; margin-bottom: 0.2rem; } h2 { border-bottom: 1px solid #ccc; margin-top: 2rem; }
table { border-collapse: collapse; margin: 0.5rem 0; font-size: 0.92rem; }
th, td { border: 1px solid #ccc; padding: 0.25rem 0.6rem; text-align: left; vertical-align: top; }
th { background: #f2f2f2; } td.v { font-family: ui-monospace, monospace; overflow-wrap: anywhere; }
figure { margin: 1.5rem 0; } figure img { max-width: 100%; height: auto; border: 1px solid #ddd; }
figcaption { font-size: 0.92rem; color: #444; margin-top: 0.3rem; }
pre { background: #f7f7f7; border: 1px solid #ddd; padding: 0.6rem; overflow-x: auto; font-size: 0.85rem; }
.sub { color: #555; margin-top: 0; }
""".strip()


def _html_table(header, rows, value_col=1):
    e = html.escape
    head = "".join(f"<th>{e(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f'<td{" class=v" if j == value_col else ""}>{e(str(c))}</td>'
                                    for j, c in enumerate(r)) + "</tr>" for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _md_table(header, rows):
    cell = lambda c: str(c).replace("|", "\\|").replace("\n", " ")  # noqa: E731
    lines = ["| " + " | ".join(map(cell, header)) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(map(cell, r)) + " |" for r in rows])


def _sections(doc, rows, toml_text, command):
    """The report's text sections as (title, kind, content), shared by HTML and Markdown."""
    solver = doc["solver"]
    solver_rows = [(k, _fmt(solver.get(k))) for k in ("method", "rtol", "atol", "nfev", "njev", "nlu", "success",
                                                      "message") if k in solver]
    solver_rows += [("sample period (zero-order hold)", _fmt(doc["sample_period"]) + " s"
                     if doc["sample_period"] else "continuous control")]
    comp = doc["compensator"]
    comp_rows = [] if comp is None else [(k, _fmt(v)) for k, v in comp["params"].items()]
    bounds = doc["bounds"] or {}
    bound_rows = [(k, _fmt(bounds.get(k))) for k in ("e", "edot", "gamma", "region", "formula", "assumptions")
                  if k in bounds]
    if doc["bounds_note"]:
        bound_rows.append(("note", doc["bounds_note"]))
    seed_rows = [(k, _fmt(v)) for k, v in doc["seeds"].items()]
    version_rows = list(doc["versions"].items())
    wall_rows = [(k, f"{v:.3f} s") for k, v in doc["wall_times_s"].items() if v is not None]
    out = [("Summary", "table", (("quantity", "value", "note"), rows))]
    out.append(("Figures", "figures", None))
    out.append(("Compensator" + ("" if comp is None else f": {comp['name']}"), "table",
                (("parameter", "value"), comp_rows or [("compensator", "none (u = 0)")])))
    out.append(("Promised bounds", "table", (("item", "value"), bound_rows or [("bounds", "none promised")])))
    out.append(("Solver settings and statistics", "table", (("setting", "value"), solver_rows)))
    out.append(("Random seeds", "table", (("draw", "seed"), seed_rows)))
    out.append(("Package versions", "table", (("package", "version"), version_rows)))
    out.append(("Reproduce", "pre", command))
    out.append(("Full scenario configuration (scenario.toml)", "pre", toml_text))
    out.append(("Wall times (the only numbers that change between runs)", "table", (("what", "seconds"), wall_rows)))
    return out


def _render_html(doc, sections, figs, pngs) -> str:
    e = html.escape
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
             '<meta name="viewport" content="width=device-width, initial-scale=1">',
             f"<title>{e(doc['title'])}</title><style>{_CSS}</style></head><body>",
             f"<h1>{e(doc['title'])}</h1>",
             f"<p class=sub>Scenario <code>{e(doc['scenario']['name'])}</code> "
             f"(kind <code>{e(doc['scenario']['kind'])}</code>) — source: {e(doc['scenario']['source'] or '—')}</p>"]
    for title, kind, content in sections:
        parts.append(f"<h2>{e(title)}</h2>")
        if kind == "table":
            parts.append(_html_table(*content))
        elif kind == "pre":
            parts.append(f"<pre>{e(content)}</pre>")
        else:
            for fig, png in zip(figs, pngs):
                data = base64.b64encode(png).decode("ascii")
                parts.append(f'<figure id="{fig.name}"><img src="data:image/png;base64,{data}" '
                             f'alt="{e(fig.title)}"><figcaption><b>{e(fig.title)}.</b> {e(fig.caption)}'
                             "</figcaption></figure>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def _render_markdown(doc, sections, figs) -> str:
    lines = [f"# {doc['title']}", "",
             f"Scenario `{doc['scenario']['name']}` (kind `{doc['scenario']['kind']}`) — source: "
             f"{doc['scenario']['source'] or '—'}", ""]
    for title, kind, content in sections:
        lines += [f"## {title}", ""]
        if kind == "table":
            lines += [_md_table(*content), ""]
        elif kind == "pre":
            lines += ["```" + ("toml" if content.startswith("[scenario]") else ""), content.rstrip("\n"), "```", ""]
        else:
            for fig in figs:
                lines += [f"![{fig.title}](figures/{fig.name}.png)", "", f"**{fig.title}.** {fig.caption}", ""]
    return "\n".join(lines)


# --------------------------------------------------------------------------- #
# the entry point
# --------------------------------------------------------------------------- #
def _resolve(scenario, overrides, compensator, f) -> Scenario:
    if isinstance(scenario, Scenario):
        sc = scenario.with_overrides(list(overrides)) if overrides else scenario
    elif isinstance(scenario, (str, Path)):
        sc = load_scenario(str(scenario), list(overrides) if overrides else None)
    else:
        raise ParameterError(f"`scenario` must be a Scenario, a catalog name or a path to a .toml file; "
                             f"got {type(scenario).__name__}.")
    if not KINDS[sc.kind].tracking:
        raise ScenarioError(
            f"scenario {sc.name!r} (kind {sc.kind!r}) is a constrained simulation, not a tracking scenario; "
            "reports show nominal vs actual systems, errors and Qᵘ, which it does not have. "
            "Use `robustrack run` for it, or a tracking scenario (e.g. triple-pendulum).")
    extra = ([f"compensator.type={compensator!r}"] if compensator else []) + ([f"compensator.f={f!r}"] if f else [])
    return sc.with_overrides(extra) if extra else sc


def _check_out_dir(out: Path, overwrite: bool) -> None:
    """Refuse a non-empty output folder unless asked to overwrite (checked before any run)."""
    if out.exists() and not out.is_dir():
        raise OutputExistsError(f"The report folder `{out}` is a file; choose another folder (-o DIR).")
    if overwrite or not out.exists():
        return
    entries = sorted(p.name for p in out.iterdir())
    if entries:
        shown = ", ".join(entries[:4]) + (", ..." if len(entries) > 4 else "")
        raise OutputExistsError(
            f"The report folder `{out}` exists and is not empty ({len(entries)} entries: {shown}); nothing "
            "was run or written. Choose another folder (-o DIR), or replace the report in it with "
            "--overwrite (overwrite=True)."
        )


def _remove_previous_report(out: Path) -> None:
    """Remove the files an earlier report wrote in ``out`` (so none of them goes stale)."""
    stale = [out / name for name in _REPORT_FILES] + [out / "figures" / f"{n}.png"
                                                      for n in _FIGURE_NAMES + _CAMPAIGN_FIGURE_NAMES]
    for path in stale:
        if path.is_file():
            path.unlink()


def _campaign_part(sc, campaign, montecarlo, montecarlo_spread, seed, units):
    """The campaign section: (summary, rows, figures, wall) — or Nones without a campaign."""
    if campaign is None and not montecarlo:
        return None, None, [], None
    from ..campaigns import ParameterUncertainty, load_campaign
    from ..scenarios.campaign import ScenarioLoop, campaign_settings, run_montecarlo

    if campaign is not None and montecarlo:
        raise ParameterError("give a campaign store (`campaign`, --campaign) or a number of samples to run "
                             "(`montecarlo`, --montecarlo), not both.")
    if campaign is not None:
        result = campaign if hasattr(campaign, "records") else load_campaign(campaign, name="--campaign")
        mine = campaign_settings(sc)
        if {k: result.settings.get(k) for k in mine} != mine:
            raise ParameterError(f"the campaign store {str(getattr(result, 'store', campaign))!r} holds a campaign of "
                                 "other settings than this report's scenario (name, compensator or configuration); "
                                 "report it with the same scenario, --set and --compensator it was run with.")
    else:
        if isinstance(montecarlo, bool) or not isinstance(montecarlo, (int, np.integer)) or montecarlo < 0:
            raise ParameterError(f"`montecarlo` must be an integer ≥ 0; got {montecarlo!r}.")
        result = run_montecarlo(sc, int(montecarlo), montecarlo_spread, seed, progress=None)
    doc = result.summary()
    unc = result.settings.get("uncertainty") or {}
    uq = units["q"]
    b = doc.get("bound") or {}
    e, ed = doc["max_abs_e"], doc["max_abs_edot"]
    q = lambda d: " / ".join(_fmt(d[k]) for k in ("median", "p95", "p99", "max"))  # noqa: E731
    held = "not judged" if doc["held_fraction"] is None else \
        f"{doc['held']} / {doc['judged']} ({100 * doc['held_fraction']:.1f} %)"
    w = doc["worst"]
    rows = [
        ("samples", f"{doc['completed']} of {doc['samples']} finished, {doc['failed']} failed",
         f"uniform ±{100 * float(unc.get('spread') or 0):g} % on {', '.join(unc.get('parameter') or [])}, "
         f"seed {unc.get('seed')}"),
        ("bounds held", held, "failed samples count as not held"),
        ("max ‖e‖∞: median / p95 / p99 / max", f"{q(e)} {uq}", f"promised ≤ {_fmt(b.get('e'))} {uq}"),
        ("max ‖ė‖∞: median / p95 / p99 / max", f"{q(ed)} {uq}/s", f"promised ≤ {_fmt(b.get('edot'))} {uq}/s"),
        ("worst sample", "—" if w is None else f"#{w['sample']}: max ‖e‖∞ = {_fmt(w['max_abs_e'])} {uq}",
         "—" if w is None else "δm = [" + ", ".join(repr(x) for x in w["dm"]) + "]"),
    ]
    figs = []
    if len(result.max_abs_e()):
        figs.append(ReportFigure(
            "campaign", "Closed-loop Monte Carlo",
            "max ‖e‖∞ of every sampled actual plant (the full closed loop, one run each); the dashed green line is "
            "the bound the compensator promises: the whole histogram should lie to its left.",
            F.campaign_histogram_figure(result.max_abs_e(), bound=b.get("e"), unit=uq,
                                        title=f"Closed-loop Monte Carlo: {doc['completed']} plants, bounds held "
                                              f"{held}")))
    if w is not None:
        loop = ScenarioLoop(sc)()
        run = loop.nominal_run()
        actual = ParameterUncertainty(tuple(unc["parameter"]), spread=unc["spread"], seed=unc["seed"]).actual(
            loop.nominal, w["dm"], w["sample"])
        from ..tracking.simulate import track

        worst_run = track(run, actual, loop.compensator, sample_period=loop.sample_period, gamma=loop.gamma,
                          transient=loop.transient, method=loop.method, uncompensated=False)
        figs.append(ReportFigure(
            "campaign-worst", f"Worst sampled plant (#{w['sample']})",
            "Tracking errors of the campaign's worst plant (δm in the campaign table); rerun it with "
            "`robustrack run` and --set uncertainty.dm=[…].",
            F.errors_figure(worst_run, unit=uq)))
    summary = {k: v for k, v in doc.items() if k not in ("wall_s", "cpu_s")}
    summary["store"] = getattr(result, "store", None)
    return summary, rows, figs, doc["wall_s"]


def write_report(scenario, out_dir, *, overrides=None, compensator=None, f=None, gamma_samples: int = 0,
                 gamma_spread: float = 0.1, seed: int = 0, progress=None, overwrite: bool = False,
                 campaign=None, montecarlo: int = 0, montecarlo_spread: float = 0.1) -> ReportPaths:
    """Run a tracking scenario and write its report (HTML, Markdown + PNGs, summary.json).

    Parameters
    ----------
    scenario : Scenario or str or Path
        A scenario, a catalog name, or a path to a ``.toml`` file. Must be a tracking scenario.
    out_dir : str or Path
        Folder to write into; created if missing. A folder that exists and is not
        empty is refused (before anything runs) unless ``overwrite``.
    overrides : list of str, optional
        ``SECTION.KEY=VALUE`` overrides (``--set``).
    compensator, f : str, optional
        Override ``compensator.type`` and ``compensator.f`` (``--compensator``, ``--f``).
    gamma_samples : int, default 0
        When > 0, also run the Γ Monte Carlo with this many sampled actual plants and show
        the densities (W Figs. 7.1–7.8).
    gamma_spread : float, default 0.1
        Relative half-width of the uniform mass draws of the Monte Carlo (0.1 = ±10 %).
    seed : int, default 0
        Seed of the Monte Carlo draws (recorded in the report).
    progress : callable, optional
        ``progress(t, t_end)`` during the tracking simulation (about once a second).
    overwrite : bool, default False
        Write into a non-empty ``out_dir``: the files of a previous report there
        (report.html, report.md, summary.json, scenario.toml, figures/*.png of the
        report's figure names) are replaced or removed; other files are left alone.
    campaign : str, Path or CampaignResult, optional
        A closed-loop Monte Carlo (its store, ``--campaign``) of this scenario, compensator
        and configuration: adds a section with the histogram of max ‖e‖∞ and the promised
        bound, the held fraction, the quantiles and the worst sample's errors (rerun).
    montecarlo : int, default 0
        When > 0, run a closed-loop Monte Carlo of this many samples for that section
        (``--montecarlo N``; not with ``campaign``).
    montecarlo_spread : float, default 0.1
        Its uniform ±spread on the masses (its seed is ``seed``).

    Returns
    -------
    ReportPaths

    Raises
    ------
    ScenarioError
        The scenario is unknown, an override is invalid, or it is not a tracking scenario.
    ParameterError
        ``gamma_samples`` is negative or not an integer.
    OutputExistsError
        ``out_dir`` exists and is not empty, and ``overwrite`` is False.
    """
    from ..scenarios.gamma import run_gamma
    from ..scenarios.tracking_kinds import run_tracking

    if isinstance(gamma_samples, bool) or not isinstance(gamma_samples, (int, np.integer)) or gamma_samples < 0:
        raise ParameterError(f"`gamma_samples` must be an integer ≥ 0; got {gamma_samples!r}.")
    out = Path(out_dir)
    _check_out_dir(out, overwrite)
    start = time.perf_counter()
    sc = _resolve(scenario, overrides, compensator, f)
    units = _UNITS.get(sc.kind, _DEFAULT_UNITS)
    camp_doc, camp_rows, camp_figs, camp_wall = _campaign_part(sc, campaign, montecarlo, montecarlo_spread, seed,
                                                               {**_DEFAULT_UNITS, **units})
    result, _ = run_tracking(sc, progress=progress)
    plant = sc.build().nominal
    estimate = gamma_doc = None
    if gamma_samples > 0:
        estimate, gamma_doc = run_gamma(sc, int(gamma_samples), gamma_spread, seed=seed)
    figs = report_figures(result, plant, gamma=estimate, units=units) + camp_figs
    pngs = [figure_png(fig.figure) for fig in figs]

    _remove_previous_report(out)
    (out / "figures").mkdir(parents=True, exist_ok=True)
    fig_paths = []
    for fig, png in zip(figs, pngs):
        path = out / "figures" / f"{fig.name}.png"
        path.write_bytes(png)
        fig_paths.append(path)
    toml_text = scenario_toml(sc)
    (out / "scenario.toml").write_text(toml_text, encoding="utf-8")

    info = result.info
    doc = {
        "title": f"Tracking report: {sc.title or sc.name}",
        "scenario": {"name": sc.name, "kind": sc.kind, "title": sc.title, "source": sc.source, "origin": sc.origin},
        "compensator": info.get("compensator"),
        "sample_period": info.get("sample_period"),
        "bounds": info.get("bounds"),
        "bounds_note": info.get("bounds_note"),
        "metrics": result.metrics,
        "solver": _without(result.solver, "wall_s"),
        "gamma": _without(gamma_doc, "wall_s", "trajectory_wall_s"),
        "seeds": {"tracking run": "none (deterministic: no random draws)",
                  "Γ Monte Carlo (uniform mass draws)": int(seed) if gamma_samples > 0 else "not run",
                  **({"closed-loop Monte Carlo (uniform mass draws)": camp_doc["seed"]} if camp_doc else {})},
        "campaign": camp_doc,
        "versions": package_versions(),
        "config": sc.config,
        "figures": [{"file": f"figures/{fig.name}.png", "title": fig.title, "caption": fig.caption} for fig in figs],
    }
    rows = _summary_rows(result, gamma_doc, units)
    command = ("# in this report's folder; reproduced/summary.json then equals summary.json except wall_times_s\n"
               "robustrack report scenario.toml -o reproduced" + (
                   f" --gamma-samples {gamma_samples} --gamma-spread {gamma_spread:g} --seed {seed}"
                   if gamma_samples > 0 else ""))
    wall = {"tracking run (solver)": result.solver.get("wall_s"),
            "Γ Monte Carlo": None if gamma_doc is None else gamma_doc.get("wall_s"),
            "Γ nominal trajectory": None if gamma_doc is None else gamma_doc.get("trajectory_wall_s")}
    if camp_doc is not None:
        wall["closed-loop Monte Carlo (all its sessions)"] = camp_wall
    wall["report total (runs + figures)"] = time.perf_counter() - start
    doc["wall_times_s"] = wall
    sections = _sections(doc, rows, toml_text, command)
    if camp_rows:
        sections.insert(1, ("Robustness campaign (closed-loop Monte Carlo)", "table",
                            (("quantity", "value", "note"), camp_rows)))

    html_path, md_path, json_path = out / "report.html", out / "report.md", out / "summary.json"
    html_path.write_text(_render_html(doc, sections, figs, pngs), encoding="utf-8")
    md_path.write_text(_render_markdown(doc, sections, figs), encoding="utf-8")
    json_path.write_text(json.dumps(to_jsonable(doc), indent=2, ensure_ascii=False, allow_nan=False) + "\n",
                         encoding="utf-8")
    return ReportPaths(out, html_path, md_path, json_path, out / "scenario.toml", tuple(fig_paths))
