"""W ch. 7–8 reproduction grid on the triple pendulum (the robust-tracking issue's table).

:func:`w_grid` lists the runs: GSS, GD, GD-bar × δm cases 1–2 × f ∈ {signed-quadratic,
cubic}; case 3 (±50 %) with Γ′ = Γ = 800 and cubic f; GSS with Γ′ = 500 (W Remark 7.1);
the unconstrained run (W Remark 7.2); the sign presets (zero-order hold, 1 ms).
Each row is the catalog scenario with ``--set`` overrides, so it can be rerun alone
with ``robustrack run``. :func:`run_row` never raises: a failed row carries its error.
"""

from __future__ import annotations

import time

from .. import _format
from .._format import format_value, with_unit
from .compensator_table import w_gamma_items
from .runner import run_scenario
from .scenario import load_scenario

__all__ = ["CASES", "w_grid", "run_row", "markdown_table"]

CASES = {"case 1": "[0.1, -0.2, 0.3]", "case 2": "[-0.1, 0.05, -0.2]", "case 3 (±50 %)": "[0.5, -0.8, 1.5]"}


def w_grid() -> list[tuple]:
    """Rows ``(scenario, compensator, f, δm case, Γ′/Γ)`` of the reproduction."""
    rows = []
    for comp in ("gss", "gd", "gdbar"):
        for case in ("case 1", "case 2"):
            for f in ("signed-quadratic", "cubic"):
                rows.append(("triple-pendulum", comp, f, case, 100.0))
        rows.append(("triple-pendulum", comp, "cubic", "case 3 (±50 %)", 800.0))
    rows.append(("triple-pendulum", "gss", "signed-quadratic", "case 1", 500.0))  # W Remark 7.1
    rows.append(("triple-pendulum-unconstrained", "gss", "signed-quadratic", "case 1", 100.0))  # Remark 7.2
    for comp in ("smc", "leitmann-corless", "lyapunov-redesign"):
        rows.append(("triple-pendulum", comp, "sign", "case 1", 100.0))
    return rows


def run_row(row, t_end: float = 10.0) -> dict:
    """Run one grid row for ``t_end`` seconds; return its summary (or its error).

    Parameters
    ----------
    row : tuple
        ``(scenario, compensator, f, case, gamma)`` as listed by :func:`w_grid`: ``case``
        a key of :data:`CASES` (sets ``uncertainty.dm``), ``gamma`` sets
        Γ′ = Γ (:func:`~robustrack.scenarios.compensator_table.w_gamma_items`), and ``f`` sets ``compensator.f`` unless it is ``"sign"``
        (the sign presets fix their f).
    t_end : float, default 10.0
        Simulated horizon in seconds (sets ``simulation.t_end``).

    Returns
    -------
    dict
        The :func:`run_scenario` summary plus ``row`` (the row and its ``--set`` items)
        and ``wall_total_s``; for a row whose loading or run raised, only ``row`` and
        ``error`` (the exception's type and message; it is not re-raised).
    """
    scenario, comp, f, case, gamma = row
    sets = [f"uncertainty.dm={CASES[case]}", *w_gamma_items(gamma), f"simulation.t_end={t_end}"]
    if f != "sign":
        sets.append(f"compensator.f={f!r}")
    start = time.perf_counter()
    try:
        doc = run_scenario(load_scenario(scenario, sets), compensator=comp)
        doc["row"] = {"scenario": scenario, "compensator": comp, "f": f, "case": case, "gamma": gamma,
                      "set": sets}
        doc["wall_total_s"] = time.perf_counter() - start
        return doc
    except Exception as exc:  # a failed row is reported, the others still run
        return {"row": {"scenario": scenario, "compensator": comp, "f": f, "case": case, "gamma": gamma,
                        "set": sets}, "error": f"{type(exc).__name__}: {exc}"}


def markdown_table(docs, units: dict | None = None) -> str:
    """The reproduction table in Markdown, one line per run summary, units in the headers.

    Parameters
    ----------
    docs : iterable of dict
        Summaries from :func:`run_row` (failed rows show their error).
    units : dict, optional
        :func:`robustrack.scenarios.units.tracking_units` of the triple pendulum; default:
        those of the catalog's ``triple-pendulum`` (angles: rad, rad/s, rad/s², N·m).

    Returns
    -------
    str
        The Markdown table: header, separator, then one line per summary.
    """
    from .units import MASS_UNIT, scenario_units

    u = units or scenario_units(load_scenario("triple-pendulum"))
    header = ["scenario", "comp.", "f", f"case: δm ({MASS_UNIT})", with_unit("Γ′/Γ", u["qdd"]), with_unit("max‖e‖∞", u["q"]),
              with_unit("max‖ė‖∞", u["qd"]), f"bound e / ė ({u['q']} / {u['qd']})", "held",
              with_unit("max‖Qᵘ‖∞", u["Q"]), with_unit("max‖Qᶜ‖∞", u["Q"]), with_unit("chatter ‖ΔQᵘ‖₁/s", f"{u['Q']}/s"),
              with_unit("uncomp. max‖e‖∞", u["q"]), f"max‖δq‖∞ ({u['qdd']}) / ‖M̃_a‖∞", "assumptions held", "nfev",
              "wall (s)"]
    fmt = lambda x: format_value(x, digits=3)  # noqa: E731
    case = lambda r: f"{r['case']}: {CASES[r['case']]}" if r["case"] in CASES else r["case"]  # noqa: E731
    rows = []
    for d in docs:
        r = d["row"]
        name = "UC" if r["scenario"].endswith("unconstrained") else "C"
        if "error" in d:
            rows.append([name, r["compensator"], r["f"], case(r), fmt(r["gamma"]), f"failed: {d['error']}",
                         *[""] * (len(header) - 6)])
            continue
        m, b = d["metrics"], d["bounds"]
        solves = [v for v in (d.get("solvers") or {"controlled": d["solver"]}).values() if v]
        nfev, wall = sum(v["nfev"] for v in solves), d.get("wall_total_s", sum(v["wall_s"] for v in solves))
        rows.append([name, r["compensator"], r["f"], case(r), fmt(r["gamma"]), fmt(m["max_abs_e"]),
                     fmt(m["max_abs_edot"]), f"{fmt(b['e'])} / {fmt(b['edot'])}", fmt(b["held"]), fmt(m["max_abs_Qu"]),
                     fmt(m["max_abs_Qc"]), fmt(m["chattering_Qu"]), fmt(m.get("actual_max_abs_e")),
                     f"{fmt(m.get('max_norm_dq'))} / {fmt(m.get('max_norm_Mtilde'))}", fmt(b.get("assumptions_held")),
                     nfev, format_value(wall, digits=3)])
    return _format.markdown_table(header, rows)
