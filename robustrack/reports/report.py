"""The tracking report: one run of a tracking scenario as HTML, Markdown + PNGs, and JSON.

:func:`write_report` runs a tracking scenario (:func:`~robustrack.scenarios.tracking_kinds.run_tracking`),
optionally the Γ Monte Carlo (:func:`~robustrack.scenarios.gamma.run_gamma`), draws the
figures W shows for each run (:mod:`robustrack.tracking.figures`) and writes into ``out_dir``:

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
import platform
import time
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import numpy as np

from .._files import check_writable, write_atomic
from .._format import format_value, markdown_table
from .._json import to_jsonable
from ..errors import OutputExistsError, ParameterError
from ..scenarios.units import MASS_UNIT, tracking_units
from ..tracking.assess import sensor_text, terms_text
from .text import bounds_judged, format_metric
from . import captions as C
from . import describe as D
from .task_space import task_requirement, task_space_metrics, task_space_rows
from ..tracking import figures as RF
from ..campaigns import figures as F

__all__ = ["ReportPaths", "ReportFigure", "write_report", "report_figures", "figure_png", "package_versions",
           "PNG_DPI"]

#: Resolution of every PNG (fixed so that the files are byte-stable).
PNG_DPI = 100

#: Packages whose versions the report records (distribution names).
_PACKAGES = ("robustrack", "numpy", "scipy", "matplotlib", "control", "sympy")

#: The files a report writes (figures/NAME.png for NAME in _FIGURE_NAMES).
_REPORT_FILES = ("report.html", "report.md", "summary.json", "scenario.toml")
_FIGURE_NAMES = ("trajectory", "coordinates", "errors", "forces", "power", "residual", "gamma")
#: The figures of the robustness-campaign section (only with a campaign).
_CAMPAIGN_FIGURE_NAMES = ("campaign", "campaign-worst")

@dataclass(frozen=True)
class ReportPaths:
    """The files :func:`write_report` wrote."""

    out_dir: Path
    html: Path
    markdown: Path
    summary: Path
    scenario_toml: Path | None  # None: a run built in a script (no scenario)
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


# --------------------------------------------------------------------------- #
# content
# --------------------------------------------------------------------------- #
def _run_units(result, plant) -> dict:
    """The run's units (``result.info["units"]``, set by a scenario run), else the plant's."""
    from ..scenarios.units import tracking_units

    return result.info.get("units") or tracking_units(plant)


def report_figures(result, plant, *, gamma=None, units=None, residual=None, requirement=None) -> list:
    """The report's figures, in order, as :class:`ReportFigure` (:mod:`robustrack.tracking.figures`, :mod:`robustrack.campaigns.figures`).

    Captions are computed from the run (:mod:`robustrack.reports.captions`): they state
    the numbers the figure shows.

    Parameters
    ----------
    result : TrackingResult
        The tracking run to draw.
    plant : Plant
        The nominal plant, for the XY trajectory (drawn when ``plant.has_positions``) and,
        without ``units``, the units.
    gamma : GammaEstimate, optional
        A Γ Monte Carlo (keyword-only); when given, its density figure is appended, with
        the Γ the run used (``result.info["bounds"]["gamma"]``) marked.
    units : dict, optional
        :func:`robustrack.scenarios.units.tracking_units` (keyword-only); default:
        ``result.info["units"]``, else the plant's.
    residual : ResidualInfo, optional
        What the constraint residual is (keyword-only; ``TrackingProblem.residual``);
        None: the residual is labelled r with the run's residual unit.
    requirement : TaskSpaceTrajectory, optional
        A task-space requirement (keyword-only): its path figure (tip path and error in its unit)
        comes first.

    Returns
    -------
    list of ReportFigure
        task (with ``requirement``), trajectory (only when ``plant.has_positions``), coordinates,
        errors, forces, power, residual and, with ``gamma``, gamma.
    """
    from ..tracking.problem import ResidualInfo

    u = units or _run_units(result, plant)
    res = residual or ResidualInfo("r", u.get("residual"), "Constraint residual")
    out = []
    if requirement is not None:
        out.append(ReportFigure("task", "Task-space path and error", C.task_caption(result, requirement),
                                RF.task_space_figure(result, requirement)))
    if plant.has_positions:  # bodies in a plane (the pendulum); others have no XY picture
        out.append(ReportFigure("trajectory", "Trajectory of the last body", C.trajectory_caption(result, plant),
                                RF.trajectory_figure(result, plant)))
    out += [
        ReportFigure("coordinates", "Coordinates against time", C.coordinates_caption(result, u),
                     RF.coordinates_figure(result, unit=u["q"])),
        ReportFigure("errors", "Tracking errors", C.errors_caption(result, u), RF.errors_figure(result, unit=u["q"])),
        ReportFigure("forces", "Control forces", C.forces_caption(result, u), RF.forces_figure(result, unit=u["Q"])),
        *_effort_figures(result, u),
        ReportFigure("power", "Power and work of the control forces", result.power(plant).caption(),
                     RF.power_figure(result, result.power(plant))),
        ReportFigure("residual", "Constraint residual", C.residual_caption(result, res, u),
                     RF.residual_figure(result, unit=res.unit, symbol=res.symbol, description=res.description)),
    ]
    if gamma is not None:
        role = D.gamma_role((result.info.get("compensator") or {}).get("name"))
        used = (result.info.get("bounds") or {}).get("gamma") if role else None
        symbol = role[0] if role else "Γ"
        run_value = (result.metrics or {}).get("max_norm_dq")
        out.append(ReportFigure(
            "gamma", "Γ Monte Carlo",
            C.gamma_caption(gamma, used=used, role=symbol, run_value=run_value, unit=u["qdd"],
                            run_error=(result.metrics or {}).get("max_abs_e"), error_unit=u["q"]),
            F.gamma_density_figure(gamma, unit=u["qdd"], used=used, used_label=f"{symbol} used by this run",
                                   run_value=run_value)))
    return out


def _effort_figures(result, units) -> list:
    """The effort figure of a run whose motors are one per joint with limits (docs/guide/robot.md, "Effort limits");
    none otherwise."""
    act = result.info.get("actuators") or {}
    limits = np.asarray(act.get("tau_max") or [], dtype=float)
    if not act.get("per_joint") or not np.any(np.isfinite(limits)):
        return []
    return [ReportFigure("effort", "Joint torques and effort limits", C.effort_caption(result, limits, units),
                         RF.effort_figure(result, limits, unit=units["Q"]))]


def _summary_rows(result, gamma_doc, units) -> list:
    """(quantity, value, note) rows of the results table, every number with its unit."""
    m = result.metrics
    b = result.info.get("bounds") or {}
    mu, bu = units["metrics"], units["bounds"]
    v = lambda key: format_value(m.get(key), mu[key])  # noqa: E731
    if not b:
        held = "— (nothing promised)"
    elif m.get("bounds_held") is None:
        held = result.info.get("bounds_note") or "—"
    else:
        held = format_value(m.get("bounds_held"))
        if m.get("start_note"):  # started outside the bound's invariant set: observed, not guaranteed
            held += (f" (observed; not guaranteed: {m['start_note']})" if m.get("bounds_held") else
                     f" (not covered by the bound: {m['start_note']})")
    res_t = lambda r: None if r is None else float(np.abs(r[-1]).max())  # noqa: E731
    ru = mu["max_constraint_residual_nominal"]
    cp = (result.info.get("compensator") or {}).get("params") or {}
    margin = format_value(1 - cp["alpha0"] / cp["sigma"]) if {"alpha0", "sigma"} <= set(cp) else "—"
    judged = bounds_judged(b, m.get("bounds_held"))
    verdict = {**b, "held": m.get("bounds_held")}
    window = (f"transient: {format_metric('transient_s', m.get('transient_s'), units, verdict)}; reaching time: "
              f"{format_metric('reaching_time', m.get('reaching_time'), units, verdict, t0=float(result.t[0]))}"
              if judged or not b else "no bound is judged in this run, so there is no judging window")
    comp_rho0 = getattr(getattr(getattr(result, "problem", None), "compensator", None), "rho0", None)  # GD's ρ0
    sensor = getattr(getattr(result, "problem", None), "sensor", None)
    rows = [
        *([("sensor", sensor_text(sensor.to_dict(), result.problem.sample_period), b.get("coverage") or "")]
          if sensor is not None else []),
        *([("terms of the bound", terms_text(b["terms"]), "docs/theory/sensing.md")] if b.get("terms") else []),
        ("max ‖e‖∞", v("max_abs_e"), "e = q_c − q, whole run"),
        ("RMS ‖e‖∞", v("rms_e"), ""),
        ("max ‖ė‖∞", v("max_abs_edot"), ""),
        ("RMS ‖ė‖∞", v("rms_edot"), ""),
        ("promised bound on ‖e‖∞ / ‖ė‖∞" if judged or not b else "compensator's bound on ‖e‖∞ / ‖ė‖∞",
         "none (no compensator)" if not b else
         f"{format_value(b.get('e'), bu['e'])} / {format_value(b.get('edot'), bu['edot'])}",
         "∞ = no bound promised" if judged or not b else "from its parameters; not promised for this run (next row)"),
        ("bounds held", held, window),
        ("assumptions held", format_value(m.get("assumptions_held")),
         f"max ‖δq‖∞ = {v('max_norm_dq')} vs Γ = {format_value(b.get('gamma'), bu['gamma'])}; "
         f"max ‖M̃ₐ‖∞ = {v('max_norm_Mtilde')} vs 1 − α0/σ = {margin}"
         + (f"; max ‖(I − M̃ₐ)(e + K_i∫e)‖∞ = {v('max_norm_P')} vs ρ0 = {format_value(comp_rho0)}"
            if m.get("max_norm_P") is not None and comp_rho0 is not None else
            f"; max (‖δq‖∞ + ‖(I − M̃ₐ)e‖∞) = {v('max_norm_P')} vs Γ (GD-bar's dropped term, W 8.3.16)"
            if m.get("max_norm_P") is not None else "")),
        ("max ‖Qᶜ‖∞", v("max_abs_Qc"), "nominal controller"),
        ("max ‖Qᵘ‖∞", v("max_abs_Qu"), "compensator"),
        *_force_rows(result, mu["max_abs_Qu"]),
        ("effort ∫‖Qᵘ‖∞ dt", v("effort_Qu"), ""),
        ("chattering Σ‖ΔQᵘ‖₁ per second", v("chattering_Qu"), "total variation"),
        ("max constraint residual, nominal / controlled",
         f"{v('max_constraint_residual_nominal')} / {v('max_constraint_residual_controlled')}",
         f"at the end: {format_value(res_t(result.residual_nominal), ru)} / "
         f"{format_value(res_t(result.residual_controlled), ru)} (the residual figure says why they part)"),
        ("uncompensated actual: max ‖q_a − q‖∞", v("actual_max_abs_e"),
         "the actual plant under the nominal Qᶜ(t) alone, open loop: no feedback corrects its drift"
         + (f"; up to t = {format_value(stop['t'], 's')}, where joint {stop['joint']!r} reaches its limit (the robot "
            "stops there: the motion beyond is not one it can make)"
            if (stop := result.info.get("uncompensated_limit")) else "")),
    ]
    for label, peak in result.contact_peaks().items():  # frame constraints: their contact force beside Qᶜ
        name, unit = label.rsplit(" (", 1)
        rows.append((f"max |{name}|", format_value(peak, unit.rstrip(")")),
                     "contact force (moment) of the frame constraint along the nominal motion, in the frame"))
    s = result.solver
    rows.append(("solver (controlled system)", f"{s.get('method')} rtol={format_value(s.get('rtol'))} "
                 f"atol={format_value(s.get('atol'))}", f"nfev {format_value(s.get('nfev'))}, njev "
                 f"{format_value(s.get('njev'))}, success {format_value(s.get('success'))}"))
    if gamma_doc is not None:
        rows.append(("Γ Monte Carlo: suggested Γ′", format_value(gamma_doc["gamma_prime"], bu["gamma"]),
                     f"{format_value(gamma_doc['margin'])} × p{format_value(100 * gamma_doc['quantile'])} of the "
                     f"exact max_t ‖δq‖∞ (max exact {format_value(gamma_doc['exact']['max'], bu['gamma'])}, max "
                     f"first order {format_value(gamma_doc['first_order']['max'], bu['gamma'])}); this run used "
                     f"Γ = {format_value(b.get('gamma'), bu['gamma'])}"))
    return rows


def _mujoco_rows(mj, units) -> list:
    """The same loop against MuJoCo as the actual plant, beside robustrack's (:mod:`robustrack.loop.mujoco`)."""
    if not mj:
        return []
    u = units["metrics"]["max_abs_e"]
    if not mj["success"]:
        return [("MuJoCo as the actual plant", "failed", mj["message"])]
    limits = "; joint limits reached: " + ", ".join(f"{j} at t = {format_value(t, 's')}" for t, j in mj["limits_hit"]) \
        if mj["limits_hit"] else ""
    return [("MuJoCo as the actual plant: max ‖e‖∞", format_value(mj["max_abs_e"], u),
             f"robustrack's actual plant {format_value(mj['robustrack_max_abs_e'], u)}, difference "
             f"{format_value(mj['difference_max_abs_e'], u)}; bounds held in MuJoCo: {format_value(mj['bounds_held'])} "
             f"({mj['integrator']}, {mj['substeps']} steps a sample, τ held){limits}")]


def _force_rows(result, unit) -> list:
    """The force the loop applies, τ = Qᶜ + Qᵘ (W 5.2.17): its peak and its largest rate of change on the output
    grid (what an actuator must deliver; a sensor's noise shows here first)."""
    if result.Qc is None or result.Qu is None or len(result.t) < 2:
        return []
    tau = np.asarray(result.Qc) + np.asarray(result.Qu)
    rate = np.abs(np.diff(tau, axis=0)).max(axis=1) / np.diff(result.t)
    return [("peak force ‖Qᶜ + Qᵘ‖∞", format_value(float(np.abs(tau).max()), unit), "what the actuators apply"),
            ("its largest rate ‖Δ(Qᶜ + Qᵘ)‖∞/Δt", format_value(float(rate.max()), f"{unit}/s" if unit else None),
             "between output points")]


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
p.verdict { font-size: 1.1rem; background: #f4f8ff; border-left: 4px solid #36c; padding: 0.5rem 0.8rem; }
""".strip()


def _html_table(header, rows, value_col=1):
    e = html.escape
    head = "".join(f"<th>{e(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f'<td{" class=v" if j == value_col else ""}>{e(str(c))}</td>'
                                    for j, c in enumerate(r)) + "</tr>" for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _sections(doc, run_rows, rows, toml_text, command):
    """The report's text sections as (title, kind, content), shared by HTML and Markdown.

    The answer first: the verdict with the key figure (the errors against their bounds), then the results and
    the figures, then what was run (the configuration) and the details that reproduce it.
    """
    solver = doc["solver"]
    solver_rows = [(k, format_value(solver.get(k))) for k in ("method", "rtol", "atol", "nfev", "njev", "nlu",
                                                              "success", "message") if k in solver]
    bounds = doc["bounds"] or {}
    bu = doc["units"]["bounds"]
    judged = bounds_judged(bounds, (doc["metrics"] or {}).get("bounds_held"))
    labels = {"e": "on ‖e‖∞", "edot": "on ‖ė‖∞",
              "gamma": "Γ they are judged at (bound on ‖δq‖∞)" if judged else "Γ they assume (bound on ‖δq‖∞)"}
    bound_rows = [(labels[k], format_value(bounds.get(k), bu.get(k))) for k in labels if k in bounds]
    bound_rows += [(k, bounds[k]) for k in ("region", "formula", "assumptions") if k in bounds]
    if bound_rows:
        bound_rows.append(("units in the texts above", f"e in {doc['units']['q'] or '1'}, ė, s and L_ε in "
                           f"{doc['units']['qd']}, Γ and Γ′ in {doc['units']['qdd']}"))
    if doc["bounds_note"]:
        bound_rows.append(("note", doc["bounds_note"]))
    seed_rows = [(k, format_value(v)) for k, v in doc["seeds"].items()]
    version_rows = list(doc["versions"].items())
    wall_rows = [(k, format_value(v, "s")) for k, v in doc["wall_times_s"].items() if v is not None]
    return [("Verdict", "verdict", doc["verdict"]),
            ("Results", "table", (("quantity", "value", "note"), rows)),
            ("Figures", "figures", None),
            ("What was run", "table", (("item", "value", "note"), run_rows)),
            ("Promised bounds" if judged or not bound_rows else "The compensator's bounds (not promised for this run: "
             "see the note)", "table", (("item", "value"), bound_rows or [("bounds", "none promised")])),
            ("Solver statistics (controlled system)", "table", (("setting", "value"), solver_rows)),
            ("Random seeds", "table", (("draw", "seed"), seed_rows)),
            ("Package versions", "table", (("package", "version"), version_rows)),
            ("Reproduce", "pre", command),
            *([("Full scenario configuration (scenario.toml)", "pre", toml_text)] if toml_text else []),
            ("Wall times (the only numbers that change between runs)", "table", (("what", "time"), wall_rows))]


def _origin(doc, code) -> str:
    """Where the run came from: its scenario and kind (each through ``code``), or a script."""
    sc = doc["scenario"]
    if sc is None:
        return "A plant built in a script."
    return f"Scenario {code(sc['name'])} (kind {code(sc['kind'])})."


#: The report's key figure, shown with the verdict (not again under "Figures"): the errors against their bounds.
_KEY_FIGURE = "errors"


def _html_figure(fig, png) -> str:
    e = html.escape
    data = base64.b64encode(png).decode("ascii")
    return (f'<figure id="{fig.name}"><img src="data:image/png;base64,{data}" alt="{e(fig.title)}"><figcaption>'
            f"<b>{e(fig.title)}.</b> {e(fig.caption)}</figcaption></figure>")


def _markdown_figure(fig) -> list:
    return [f"![{fig.title}](figures/{fig.name}.png)", "", f"**{fig.title}.** {fig.caption}", ""]


def _render_html(doc, sections, figs, pngs) -> str:
    e = html.escape
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
             '<meta name="viewport" content="width=device-width, initial-scale=1">',
             f"<title>{e(doc['title'])}</title><style>{_CSS}</style></head><body>",
             f"<h1>{e(doc['title'])}</h1>",
             f"<p class=sub>{_origin(doc, lambda x: f'<code>{e(x)}</code>')} {e(doc['sources'])}</p>"]
    for title, kind, content in sections:
        parts.append(f"<h2>{e(title)}</h2>")
        if kind == "table":
            parts.append(_html_table(*content))
        elif kind == "pre":
            parts.append(f"<pre>{e(content)}</pre>")
        elif kind == "verdict":
            first, *rest = content
            parts.append(f'<p class="verdict"><b>{e(first)}</b></p>')
            parts += [f"<p>{e(line)}</p>" for line in rest]
            parts += [_html_figure(fig, png) for fig, png in zip(figs, pngs) if fig.name == _KEY_FIGURE]
        else:
            parts += [_html_figure(fig, png) for fig, png in zip(figs, pngs) if fig.name != _KEY_FIGURE]
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def _render_markdown(doc, sections, figs) -> str:
    lines = [f"# {doc['title']}", "",
             f"{_origin(doc, lambda x: f'`{x}`')} {doc['sources']}", ""]
    for title, kind, content in sections:
        lines += [f"## {title}", ""]
        if kind == "table":
            lines += [markdown_table(*content), ""]
        elif kind == "pre":
            lines += ["```" + ("toml" if content.startswith("[scenario]") else ""), content.rstrip("\n"), "```", ""]
        elif kind == "verdict":
            first, *rest = content
            lines += [f"**{first}**", ""] + [line for r in rest for line in (r, "")]
            lines += [line for fig in figs if fig.name == _KEY_FIGURE for line in _markdown_figure(fig)]
        else:
            lines += [line for fig in figs if fig.name != _KEY_FIGURE for line in _markdown_figure(fig)]
    return "\n".join(lines)


# --------------------------------------------------------------------------- #
# the entry point
# --------------------------------------------------------------------------- #
def check_out_dir(out: Path, overwrite: bool) -> None:
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


def _guaranteed_text(doc) -> str:
    """The guaranteed fraction of a campaign summary (bound and its assumptions held), as text."""
    if doc["held_fraction"] is None:
        return "not judged"
    if doc.get("guaranteed") is None:
        return "unknown (assumptions not measured)"
    return f"{doc['guaranteed']} / {doc['judged']} ({format_value(100 * doc['guaranteed_fraction'], digits=3)} %)"


def _campaign_part(campaign, worst_run, units):
    """The campaign section: (summary, rows, figures, wall) — or Nones without a campaign."""
    if campaign is None:
        return None, None, [], None
    from ..campaigns.montecarlo import certificate_lines

    doc = campaign.summary()
    unc = campaign.settings.get("uncertainty") or {}
    uq, uqd = units["q"], units["qd"]
    b = doc.get("bound") or {}
    e, ed = doc["max_abs_e"], doc["max_abs_edot"]
    q = lambda d: " / ".join(format_value(d[k]) for k in ("median", "p95", "p99", "max"))  # noqa: E731
    held = "not judged" if doc["held_fraction"] is None else \
        f"{doc['held']} / {doc['judged']} ({format_value(100 * doc['held_fraction'], digits=3)} %)"
    w = doc["worst"]
    rows = [
        ("samples", f"{doc['completed']} of {doc['samples']} finished, {doc['failed']} failed",
         f"uniform ±{format_value(100 * float(unc.get('spread') or 0))} % on {', '.join(unc.get('parameter') or [])}, "
         f"seed {unc.get('seed')}"),
        ("bounds held (observed)", held, "failed samples count as not held; samples that did not run are not counted"),
        ("guaranteed (held with its assumptions)", _guaranteed_text(doc), "; ".join(
            line.strip() for line in certificate_lines(doc, dq_unit=units.get("qdd"))[2:]) or "—"),
        ("max ‖e‖∞: median / p95 / p99 / max", f"{q(e)} {uq}", f"promised ≤ {format_value(b.get('e'), uq)}"),
        ("max ‖ė‖∞: median / p95 / p99 / max", f"{q(ed)} {uqd}", f"promised ≤ {format_value(b.get('edot'), uqd)}"),
        ("worst sample", "—" if w is None else f"#{w['sample']}: max ‖e‖∞ = {format_value(w['max_abs_e'], uq)}",
         "—" if w is None else "δm = [" + ", ".join(repr(x) for x in w["dm"]) + f"] {MASS_UNIT}"),
    ]
    figs = []
    if len(campaign.max_abs_e()):
        figs.append(ReportFigure(
            "campaign", "Closed-loop Monte Carlo", C.campaign_caption(campaign.max_abs_e(), b.get("e"), uq),
            F.campaign_histogram_figure(campaign.max_abs_e(), bound=b.get("e"), unit=uq,
                                        title=f"Closed-loop Monte Carlo: {doc['completed']} plants, bounds held "
                                              f"{held}")))
    if w is not None and worst_run is not None:
        figs.append(ReportFigure(
            "campaign-worst", f"Worst sampled plant (#{w['sample']})",
            "Tracking errors of the campaign's worst plant (δm in the campaign table); rerun it with "
            "`robustrack run` and --set uncertainty.dm=[…].",
            RF.errors_figure(worst_run, unit=uq)))
    summary = {k: v for k, v in doc.items() if k not in ("wall_s", "cpu_s")}
    summary["store"] = getattr(campaign, "store", None)
    return summary, rows, figs, doc["wall_s"]


def _campaign_box(campaign, problem):
    """The box a campaign sampled (±spread·|value| on its parameters), or None without a campaign."""
    unc = None if campaign is None else campaign.settings.get("uncertainty") or {}
    if not unc or unc.get("spread") is None:
        return None
    from ..certification import ParameterBox

    if np.ndim(unc["spread"]) == 0:
        return ParameterBox.around(problem.nominal, float(unc["spread"]), tuple(unc["parameter"]))
    return None  # a spread per component: not compared (a certificate is made for one relative spread)


def _script_command(problem) -> str:
    return ("# a run built in a script: rerun the script; the settings are in summary.json\n"
            f"# ({type(problem.nominal).__name__}, t_span {problem.t_span}, rtol {problem.rtol:g}, "
            f"atol {problem.atol:g})")


def _certificate_rows(cert, problem, b, units) -> list:
    """The certificate's rows (none without one): the certified interval of sup ‖δq‖∞ and what it says of this
    run's Γ, and the promise the compensator makes at the certified Γ."""
    if cert is None:
        return []
    from ..certification.saved import certified_gamma_text, gamma_verdict

    ug = units["bounds"]["gamma"]
    fmt = lambda v: format_value(v, ug)  # noqa: E731
    box = ", ".join(f"{k} ∈ [{format_value(lo)}, {format_value(hi)}]" for k, (lo, hi) in cert["box"].items())
    rows = [("certified sup ‖δq‖∞ (Γ) over the box", f"[{fmt(cert['gamma_lower'])}, {fmt(cert['gamma_upper'])}]",
             f"{certified_gamma_text(cert, fmt)}; box {box}; t ∈ [{format_value(cert['t_span'][0])}, "
             f"{format_value(cert['t_span'][1])}] s"
             + (f"; {gamma_verdict(cert, b.get('gamma'), fmt)}" if b.get("gamma") is not None else ""))]
    p = cert.get("promise")
    if p:
        rows.append(("promised bound at the certified Γ", f"{format_value(p['e'], units['bounds']['e'])} / "
                     f"{format_value(p['edot'], units['bounds']['edot'])}",
                     f"‖e‖∞ / ‖ė‖∞ with Γ = {fmt(p['gamma'])}: its Γ assumption is certified for every plant in the box "
                     + ("along the nominal motion (the tube: robustrack certify --level closed)"
                        if cert["level"] == "box" else "over the tube")))
    return rows


def _certificate_doc(certificate, problem, box=None, scenario=None):
    """The certificate read back, checked to cover this run (and ``box``), with the promise at its Γ (or None)."""
    if certificate is None:
        return None
    from ..certification.saved import certificate_summary, check_covers

    cert = certificate_summary(certificate, "certificate")
    forces = None
    if scenario is not None and hasattr(scenario, "config"):  # a scenario's friction box (±friction_spread, named)
        from ..scenarios.certify import scenario_force_box

        forces = scenario_force_box(scenario, problem)
    check_covers(cert, problem, box, "certificate", scenario=None if scenario is None else scenario.name, forces=forces)
    comp = problem.compensator
    bounds = None if comp is None else comp.bounds(cert["gamma_upper"])
    if bounds is not None and bounds.gamma is not None:
        cert["promise"] = {"gamma": cert["gamma_upper"], "e": float(bounds.e), "edot": float(bounds.edot)}
    return cert


def write_report(result, out_dir, *, problem=None, scenario=None, gamma=None, campaign=None, campaign_worst=None,
                 command: str | None = None, overwrite: bool = False, title: str | None = None,
                 certificate=None, mujoco=None) -> ReportPaths:
    """Present a tracking run as a report (HTML, Markdown + PNGs, summary.json); runs nothing.

    Parameters
    ----------
    result : TrackingResult
        The run (from :func:`~robustrack.tracking.simulate_tracking`, a
        :class:`~robustrack.tracking.TrackingProblem` or a scenario), of any plant.
    out_dir : str or Path
        Folder to write into; created if missing. A folder that exists and is not
        empty is refused (before anything is written) unless ``overwrite``.
    problem : TrackingProblem, optional
        What was run (default ``result.problem``; a loaded result has none and needs it):
        the plants, the compensator, the residual's description.
    scenario : Scenario, optional
        The scenario the run came from: its title, source, configuration (written as
        ``scenario.toml``) and its δm; None: a run built in a script.
    gamma : GammaStudy, optional
        A Γ Monte Carlo (:func:`~robustrack.scenarios.gamma.run_gamma`): its density figure and Γ′ row.
    campaign : CampaignResult, optional
        A closed-loop Monte Carlo of this loop: a section with the histogram of max ‖e‖∞, the
        promised bound, the held fraction and the quantiles.
    campaign_worst : TrackingResult, optional
        The campaign's worst sample tracked again (its errors figure).
    command : str, optional
        The reproduce section's text (default: the scenario's ``robustrack report`` line, or
        a note that the run was built in a script).
    overwrite : bool, default False
        Write into a non-empty ``out_dir``: the files of a previous report there
        (report.html, report.md, summary.json, scenario.toml, figures/*.png of the
        report's figure names) are replaced or removed; other files are left alone.
    title : str, optional
        Your name for the system (the report's title and its "system" row); default the
        scenario's title, else the plant's class and coordinates.
    mujoco : dict, optional
        The same loop run against MuJoCo as the actual plant (a scenario run's ``summary["mujoco"]``): shown beside
        robustrack's.
    certificate : Certificate, dict, str or Path, optional
        A certificate of this problem (:func:`robustrack.certification.certify`, or the file of
        ``robustrack certify --json``): rows with the certified interval of sup ‖δq‖∞, what it says of
        this run's Γ, and the promise at the certified Γ (``certificate`` in summary.json); refused
        when it certifies another horizon or initial state, or a box that does not contain the
        campaign's.

    Returns
    -------
    ReportPaths
        ``scenario_toml`` is None without a scenario.

    Raises
    ------
    ParameterError
        ``result`` is not a TrackingResult, or no problem is known.
    OutputExistsError
        ``out_dir`` exists and is not empty, and ``overwrite`` is False.
    """
    from ..tracking.results import TrackingResult

    if not isinstance(result, TrackingResult):
        raise ParameterError(f"`result` must be a TrackingResult (a run to present); got {type(result).__name__}. "
                             "To run a scenario and report it, use robustrack.reports.report_scenario or "
                             "`robustrack report NAME`.")
    problem = problem if problem is not None else result.problem
    if problem is None:
        raise ParameterError("the result carries no TrackingProblem (a loaded result): pass `problem=`, the "
                             "problem that produced it.")
    out = Path(out_dir)
    check_out_dir(out, overwrite)
    check_writable(out, "out_dir", folder=True)
    start = time.perf_counter()
    residual_unit = None if problem.residual is None else problem.residual.unit
    units = result.info.get("units") or tracking_units(problem.nominal, residual_unit)
    cert_doc = _certificate_doc(certificate, problem, _campaign_box(campaign, problem), scenario)
    camp_doc, camp_rows, camp_figs, camp_wall = _campaign_part(campaign, campaign_worst, units)
    if camp_rows and cert_doc is not None:  # beside the sampled fractions
        camp_rows[3:3] = _certificate_rows(cert_doc, problem, (camp_doc or {}).get("bound") or {}, units)[:1]
    plant = problem.nominal
    estimate = None if gamma is None else gamma.estimate
    gamma_doc = None if gamma is None else gamma.to_dict()
    requirement = task_requirement(problem)
    figs = report_figures(result, plant, gamma=estimate, units=units, residual=problem.residual,
                          requirement=requirement) + camp_figs
    pngs = [figure_png(fig.figure) for fig in figs]

    _remove_previous_report(out)
    (out / "figures").mkdir(parents=True, exist_ok=True)
    fig_paths = []
    for fig, png in zip(figs, pngs):
        path = out / "figures" / f"{fig.name}.png"
        write_atomic(path, png)
        fig_paths.append(path)
    toml_text = toml_path = None
    if scenario is not None:
        toml_text = scenario.to_toml()
        toml_path = write_atomic(out / "scenario.toml", toml_text)

    info = result.info
    doc = {
        "title": f"Tracking report: {D.system_name(scenario, problem, title)}",
        "scenario": {"name": scenario.name, "kind": scenario.kind, "title": scenario.title,
                     "source": scenario.source, "origin": scenario.origin} if scenario is not None else None,
        "sources": D.sources(scenario, problem, title),
        "compensator": info.get("compensator"),
        "sample_period": info.get("sample_period"),
        "bounds": info.get("bounds"),
        "bounds_note": info.get("bounds_note"),
        "verdict": D.verdict_lines(result, plant, units),
        "metrics": result.metrics,
        "units": units,
        "solver": _without(result.solver, "wall_s"),
        "gamma": _without(gamma_doc, "wall_s", "trajectory_wall_s"),
        "seeds": {"tracking run": "none (deterministic: no random draws)",
                  "Γ Monte Carlo (uniform mass draws)": gamma_doc["seed"] if gamma_doc else "not run",
                  **({"closed-loop Monte Carlo (uniform mass draws)": camp_doc["seed"]} if camp_doc else {})},
        "campaign": camp_doc,
        "certificate": cert_doc,
        "versions": package_versions(),
        "config": None if scenario is None else scenario.config,
        "figures": [{"file": f"figures/{fig.name}.png", "title": fig.title, "caption": fig.caption} for fig in figs],
    }
    rows = _summary_rows(result, gamma_doc, units) + _certificate_rows(cert_doc, problem, info.get("bounds") or {},
                                                                       units) + _mujoco_rows(mujoco, units)
    if mujoco is not None:
        doc["mujoco"] = mujoco
    if requirement is not None:
        doc["task_space"] = task_space_metrics(result, requirement)
        rows[1:1] = task_space_rows(doc["task_space"], units["q"])
    if command is None:
        command = ("# in this report's folder; reproduced/summary.json then equals summary.json except wall_times_s\n"
                   "robustrack report scenario.toml -o reproduced") if scenario is not None else _script_command(problem)
    wall = {"tracking run (solver)": result.solver.get("wall_s"),
            "Γ Monte Carlo": None if gamma_doc is None else gamma_doc.get("wall_s"),
            "Γ nominal trajectory": None if gamma_doc is None else gamma_doc.get("trajectory_wall_s")}
    if camp_doc is not None:
        wall["closed-loop Monte Carlo (all its sessions)"] = camp_wall
    wall["report (figures and files)"] = time.perf_counter() - start
    doc["wall_times_s"] = wall
    sections = _sections(doc, D.run_rows(scenario, problem, result, units, title), rows, toml_text, command)
    if camp_rows:
        sections.insert(2, ("Robustness campaign (closed-loop Monte Carlo)", "table",
                            (("quantity", "value", "note"), camp_rows)))

    html_path, md_path, json_path = out / "report.html", out / "report.md", out / "summary.json"
    write_atomic(html_path, _render_html(doc, sections, figs, pngs))
    write_atomic(md_path, _render_markdown(doc, sections, figs))
    write_atomic(json_path, json.dumps(to_jsonable(doc), indent=2, ensure_ascii=False, allow_nan=False) + "\n")
    return ReportPaths(out, html_path, md_path, json_path, toml_path, tuple(fig_paths))
