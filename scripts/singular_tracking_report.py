"""Robust tracking with a singular mass matrix (issue 21, part 2): run and write the page:

    python scripts/singular_tracking_report.py [-o docs/results] [--samples 200]

Writes singular-tracking.md and singular-tracking/*.png (a few minutes on the numpy path):

1. what the engine's ``simulate_tracking`` does today with W 4.4.2's springs (m1 = 0), on the
   numpy path (the compiled path is probed in a child process with a time limit);
2. one run of :func:`robustrack.tracking.singular.simulate_singular_tracking` (δm2 = −0.3 kg):
   nominal, controlled and uncompensated x2, the errors against the promised bound, the forces;
3. a Monte Carlo over the δm2 box ±30 % (seeded; the box's ends included): the bound and its
   assumptions in every sample, max ‖ε‖∞ and max ‖δq_r‖∞ against δm2.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from robustrack.tracking.singular import simulate_singular_tracking, singular_monte_carlo
from robustrack.tracking.singular import massless_springs_problem

FIGDIR = "singular-tracking"
SPREAD = 0.3  # ±30 % of m2
DM_RUN = -0.3  # kg, the single run
PROBE_SECONDS = 120

PROBE = """
import json, sys, warnings
from robustrack.constraints import stack
from robustrack.tracking import simulate_tracking
from robustrack.tracking.singular import massless_springs_problem
p = massless_springs_problem(t_end=2.0)
# "tracking": physical constraint and requirement stacked (the requirement has no compiled form);
# "physical": the physical constraint alone (compiled where backend="auto")
constraint = stack(p.physical, p.requirement) if sys.argv[2] == "tracking" else p.physical
out = {}
with warnings.catch_warnings(record=True) as seen:
    warnings.simplefilter("always")
    try:
        r = simulate_tracking(p.nominal, constraint, p.compensator, p.q0, p.qd0, p.t_span,
                              actual=p.nominal.replace(m2=0.7), backend=sys.argv[1])
        out = {"outcome": "ran", "max_abs_e": r.metrics["max_abs_e"], "bounds_held": r.metrics["bounds_held"]}
    except Exception as exc:
        out = {"outcome": "raised", "type": type(exc).__module__ + "." + type(exc).__name__,
               "message": str(exc)[:200]}
out["numpy_fallback"] = any(w.category.__name__ == "CompilationFallback" for w in seen)
print(json.dumps(out))
"""


def probe_today(backend: str, case: str) -> dict:
    """``simulate_tracking`` on the springs in a child process, stopped after PROBE_SECONDS."""
    start = time.perf_counter()
    try:
        done = subprocess.run([sys.executable, "-c", PROBE, backend, case], capture_output=True, text=True,
                              timeout=PROBE_SECONDS)
    except subprocess.TimeoutExpired:
        return {"outcome": "no answer", "seconds": PROBE_SECONDS}
    lines = done.stdout.strip().splitlines()
    out = json.loads(lines[-1]) if lines else {"outcome": "crashed", "stderr": done.stderr[-300:]}
    out["seconds"] = round(time.perf_counter() - start, 1)
    return out


def _g(x):
    return "—" if x is None else f"{x:.3g}"


def _yes(x):
    return {True: "yes", False: "**no**", None: "—"}[x]


def figure_run(r, path):
    fig = Figure(figsize=(10, 7.5))
    FigureCanvasAgg(fig)
    ax = fig.subplots(2, 2)
    t = r.t
    ax[0, 0].plot(t, r.q[:, 1], "k-", lw=2, label="nominal")
    ax[0, 0].plot(t, r.qc[:, 1], "C0--", label="controlled actual")
    ax[0, 0].plot(t, r.qa[:, 1], "C3:", label="actual, Qᶜ only")
    ax[0, 0].set(xlabel="t (s)", ylabel="x2 (m)", title="body 2")
    ax[0, 0].legend(fontsize=8)
    b = r.bounds
    later = t > 0  # e(0) = 0 exactly: off a log axis
    ax[0, 1].semilogy(t[later], np.abs(r.e[later, 1]), "C0", label="|e2| = |ε| (m)")
    ax[0, 1].semilogy(t[later], np.abs(r.e[later, 0]), "C1", label="|e1| (m), massless body")
    ax[0, 1].axhline(b.e, color="C0", ls="--", label=f"bound on ε {b.e:.2g} m")
    ax[0, 1].semilogy(t[later], np.abs(r.edot[later, 1]), "C2", alpha=0.6, label="|ė2| (m/s)")
    ax[0, 1].axhline(b.edot, color="C2", ls="--", label=f"bound on ε̇ {b.edot:.2g} m/s")
    ax[0, 1].set(xlabel="t (s)", title="tracking errors and GSS's bound", ylim=(1e-9, 0.1))
    ax[0, 1].legend(fontsize=7)
    ax[1, 0].plot(t, r.Qc[:, 1], "k", label="Qᶜ2")
    ax[1, 0].plot(t, r.Qu[:, 1], "C0", label="Qᵘ2 = (M Z û)2")
    ax[1, 0].plot(t, r.Qc[:, 0] + r.Qu[:, 0], "C1", label="Qᶜ1 + Qᵘ1 (massless body)")
    ax[1, 0].set(xlabel="t (s)", ylabel="N", title="forces")
    ax[1, 0].legend(fontsize=8)
    ax[1, 1].semilogy(t[later], np.maximum(np.abs(r.residual_physical[later, 0]), 1e-18), "C4")
    ax[1, 1].set(xlabel="t (s)", ylabel="|φ_p| (N)", title="massless body's force balance, actual plant",
                 ylim=(1e-18, 1e-10))
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def figure_mc(out, bound, gamma, path):
    dm = np.array([o["params"]["m2"][0] if isinstance(o["params"]["m2"], list) else o["params"]["m2"]
                   for o in out]) - 1.0
    fig = Figure(figsize=(10, 3.8))
    FigureCanvasAgg(fig)
    ax = fig.subplots(1, 2)
    ax[0].plot(dm, [o["max_abs_eps"] for o in out], "C0.", label="max |ε| = max |e2|")
    ax[0].plot(dm, [o["max_abs_e"] for o in out], "C1x", ms=4, label="max ‖e‖∞")
    ax[0].axhline(bound, color="k", ls="--", label=f"GSS bound {bound:.2g} m")
    ax[0].set(xlabel="δm2 (kg)", ylabel="m", yscale="log", title="errors over the δm2 box")
    ax[0].legend(fontsize=8)
    ax[1].plot(dm, [o["max_norm_dq_r"] for o in out], "C3.", label="max ‖δq_r‖∞ (m/s²)")
    ax[1].plot(dm, [o["max_norm_Mtilde_r"] for o in out], "C2.", label="max ‖M̃_r‖∞")
    ax[1].axhline(gamma, color="C3", ls="--", label=f"Γ′ = {gamma:g}")
    ax[1].axhline(0.5, color="C2", ls=":", label="1 − α0/σ = 0.5")
    ax[1].set(xlabel="δm2 (kg)", title="the bound's assumptions")
    ax[1].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-o", "--out", default="docs/results")
    parser.add_argument("--samples", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    out_dir = Path(args.out)
    (out_dir / FIGDIR).mkdir(parents=True, exist_ok=True)

    today = {f"{case}/{backend}": probe_today(backend, case) for case in ("tracking", "physical")
             for backend in ("numpy", "auto")}

    p = massless_springs_problem()
    start = time.perf_counter()
    run = simulate_singular_tracking(p.tracking_problem(p.nominal.replace(m2=p.nominal.m2 + DM_RUN)), p.physical)
    run_seconds = time.perf_counter() - start
    figure_run(run, out_dir / FIGDIR / "run.png")

    rng = np.random.default_rng(args.seed)
    dm = np.concatenate([[-SPREAD, SPREAD], rng.uniform(-SPREAD, SPREAD, size=args.samples - 2)]) * p.nominal.m2
    start = time.perf_counter()
    mc = singular_monte_carlo(p.tracking_problem(p.nominal, n_points=501), p.physical, {"m2": p.nominal.m2 + dm})
    mc_seconds = time.perf_counter() - start
    bound = run.bounds
    figure_mc(mc, bound.e, p.compensator.gamma_prime, out_dir / FIGDIR / "monte-carlo.png")

    held = sum(bool(o["bounds_held"] and o["bounds_held_full"]) for o in mc)
    assumed = sum(bool(o["assumptions_held"]) for o in mc)
    m = run.metrics
    summary = {
        "today": today,
        "run": {k: v for k, v in m.items()},
        "run_seconds": round(run_seconds, 1),
        "monte_carlo": {"samples": len(mc), "seed": args.seed, "spread": SPREAD, "bounds_held": held,
                        "assumptions_held": assumed, "seconds": round(mc_seconds, 1),
                        "max_abs_eps": max(o["max_abs_eps"] for o in mc),
                        "max_abs_e": max(o["max_abs_e"] for o in mc),
                        "max_norm_dq_r": max(o["max_norm_dq_r"] for o in mc),
                        "max_norm_Mtilde_r": max(o["max_norm_Mtilde_r"] for o in mc)},
        "bound": bound.to_dict(),
    }
    (out_dir / FIGDIR / "summary.json").write_text(json.dumps(summary, indent=1, default=float))
    (out_dir / "singular-tracking.md").write_text(page(summary, p))
    print(f"wrote {out_dir / 'singular-tracking.md'}")


def _today_row(key, r):
    case, backend = key.split("/")
    what = {"tracking": "physical constraint + requirement", "physical": "physical constraint alone"}[case]
    path = "numpy (fallback)" if r.get("numpy_fallback") else ("numpy" if backend == "numpy" else "compiled")
    return f"| {what} | `backend=\"{backend}\"` → {path} | {_outcome(r)} |"


def _outcome(r):
    if r["outcome"] == "raised":
        what = f"raises `{r['type']}`: {r['message']}"
    elif r["outcome"] == "no answer":
        what = f"no answer within {r['seconds']} s (a 2-s horizon; stopped)"
    elif r["outcome"] == "ran":
        what = f"ran: max ‖e‖∞ = {_g(r['max_abs_e'])} m, bounds held {r['bounds_held']}"
    else:
        what = f"crashed: {r.get('stderr', '')}"
    return what


def page(s, p) -> str:
    m, mc, b = s["run"], s["monte_carlo"], s["bound"]
    return f"""# Robust tracking with a singular mass matrix

Issue 21, part 2 (`python scripts/singular_tracking_report.py`; theory:
[`docs/theory/singular-tracking.md`](../theory/singular-tracking.md); code:
`robustrack/tracking/singular.py`, the problem too).
W 4.4.2's springs, wall–k1–(body 1, **m1 = 0**)–k2–m2 with k1 = 2, k2 = 3 N/m, l10 = 1, d = 0.2 m:
`M = diag(0, m2)` is positive semi-definite. The physical constraint is the massless body's force
balance (W 4.4.12), kept by the plant itself; the control requirement makes body 2 follow
`x2 = 1.2 + 0.3 sin(2t)` m (stabilized, ξ = 1, ω = 5 rad/s). Nominal m2 = 1 kg; the actual
m2 is uncertain, ±30 %. GSS with W §7.3's settings (K = 10, β0 = 10, α0 = 0.5, σ = 1, signed
quadratic, α_c = 2, ε = 1e-2) and Γ′ = {p.compensator.gamma_prime:g} m/s², 10 s, rtol 1e-8, atol 1e-12.

## What happens today

The engine's `simulate_tracking` given this plant (δm2 = −0.3 kg, 2 s; the physical constraint
with the requirement stacked on it as W 5.2.8, or alone), each in a child process:

| constraint | path | outcome |
|---|---|---|
{chr(10).join(_today_row(k, r) for k, r in s['today'].items())}

The engine **refuses such a plant cleanly, before the controlled solve**: the nominal system
integrates (the fundamental equation goes through the augmented system, W ch. 4), but the
controlled actual system `M_a q̈_c = Q_a + Qᶜ + M u` (W 5.2.17) solves with M_a itself, so
`simulate_tracking` checks that M_a(q0) is positive definite and raises a `ParameterError` naming
`simulate_singular_tracking` on both paths. No wrong force is returned. Before that check (until
commit e70191d) the numpy path raised a raw `numpy.linalg.LinAlgError` and the compiled BDF of the
controlled system did not come back within {PROBE_SECONDS} s on a 2-s horizon (the kernels' Cholesky
factor of M_a does not exist).

## The fix: the controlled actual system on the auxiliary system

`simulate_singular_tracking(problem, physical, …)` (the requirement is the problem's constraint) keeps the
physical constraints on the actual plant (its reaction is the plant's own; solved on the auxiliary
system `M_a + α² A_pᵀ G A_p`, independent of α and G), applies the nominal Qᶜ(t), and lets the
compensator see the errors of the d independent coordinates, `ε = S e` (here d = 1, ε = e2),
applying `Qᵘ = M Z û` (Z spans null A_p). Then `ε̈ = δq_r + û − M̃_r û` exactly, W's equation
(5.3.3) for the reduced system, and GSS's bound holds for ε (theory page). Here
`M̃_r = δm2/(m2 + δm2)` and the assumption ‖M̃_r‖∞ ≤ 1 − α0/σ = 0.5 holds for δm2 ≥ −m2/3.
The full errors are `e = Z ε` with ‖Z‖∞ = {_g(m["max_norm_Z"])}, so the same bound holds for ‖e‖∞.
Runs on the numpy path (scipy BDF; the compiled kernels take no physical constraint on the actual
plant and were not edited).

### One run (δm2 = {DM_RUN} kg)

| quantity | value |
|---|---|
| max ‖e‖∞ (m) / bound | {_g(m["max_abs_e"])} / {_g(m["bound_e_full"])} |
| max ‖ė‖∞ (m/s) / bound | {_g(m["max_abs_edot"])} / {_g(m["bound_edot_full"])} |
| bound held (ε; full e) | {_yes(m["bounds_held"])}; {_yes(m["bounds_held_full"])} |
| max ‖δq_r‖∞ (m/s²) vs Γ′ | {_g(m["max_norm_dq_r"])} vs {p.compensator.gamma_prime:g} |
| max ‖M̃_r‖∞ vs 1 − α0/σ | {_g(m["max_norm_Mtilde_r"])} vs 0.5 |
| assumptions held | {_yes(m["assumptions_held"])} |
| uncompensated max ‖e‖∞ (m) | {_g(m["actual_max_abs_e"])} |
| max ‖Qᵘ‖∞ / max ‖Qᶜ‖∞ (N) | {_g(m["max_abs_Qu"])} / {_g(m["max_abs_Qc"])} |
| max \\|φ_p\\| on the actual plant (N) | {_g(m.get("max_physical_residual"))} |
| wall time | {s["run_seconds"]} s |

![run](singular-tracking/run.png)

Body 2 follows the nominal motion to {_g(m["max_abs_e"])} m where the uncompensated plant
(Qᶜ(t) alone) is {_g(m["actual_max_abs_e"])} m off; the massless body's error is 0.6 ×
body 2's (x1 = 0.6 (x2 − 1.2) on its force balance), and the force balance holds on the actual
plant to rounding. Qᵘ acts on body 2 only: M Z û has no component on the massless body.

### Monte Carlo over the δm2 box

{mc["samples"]} samples, δm2 uniform in ±{int(SPREAD * 100)} % of m2 (seed {mc["seed"]}) plus the box's two ends,
integrated as one batched solve ({mc["seconds"]} s):

| | value |
|---|---|
| promised bound held (ε and e) | {mc["bounds_held"]} / {mc["samples"]} |
| its assumptions held (‖δq_r‖∞ ≤ Γ′, ‖M̃_r‖∞ ≤ 0.5) | {mc["assumptions_held"]} / {mc["samples"]} |
| largest max ‖ε‖∞, max ‖e‖∞ (m) | {_g(mc["max_abs_eps"])}, {_g(mc["max_abs_e"])} (bound {_g(b["e"])}) |
| largest max ‖δq_r‖∞ (m/s²) | {_g(mc["max_norm_dq_r"])} (Γ′ = {p.compensator.gamma_prime:g}) |
| largest max ‖M̃_r‖∞ | {_g(mc["max_norm_Mtilde_r"])} |

![Monte Carlo](singular-tracking/monte-carlo.png)

Tests (`tests/test_singular_tracking.py`) run the same Monte Carlo on 24 samples and on a user's
3-coordinate plant with a massless node and two uncertain masses (a 2-D box, corners included),
and check every step of the derivation (α/G invariance, A_p q̈ = b_p, W 4.4.15's closed form,
the reduced error equation from the loop's right-hand side, W's formulas and the engine's run
when M > 0, a sympy check of the auxiliary system's compliance).

## What is not done

- The compiled path: the controlled actual system with a physical constraint needs a new kernel;
  the kernels are not edited here, so this runs on numpy (about {s["run_seconds"]} s a 10-s run).
- Not a catalog scenario (`robustrack run`): that needs a scenario kind in `scenarios/`, which the
  lead is refactoring; the problem is a Python function (`massless_springs_problem`).
- GD and GD-bar work through the same reduced equation (any compensator taking (t, ε, ε̇, z) runs),
  but only GSS's bound is checked by a Monte Carlo here.
"""


if __name__ == "__main__":
    main()
