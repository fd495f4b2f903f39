"""Identifying δm from tracking data (issue 21, part 3; W ch. 10): write the results page.

    python scripts/identification_report.py [-o docs/results]

Writes identification.md and identification/{noise,zscores,renominalized}.png (about half a
minute once the kernels are compiled): W §7.3 case 1 identified from its noise-free run (both
regressors, both sources of q̈), the estimate under measurement noise σ over 40 seeds, the
re-nominalized run, joint friction identified with the masses and with a URDF robot's payload, and the
excitation warning on a plant built in the script.
"""

from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path

import numpy as np
import sympy as sp
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from robustrack.identification import (PoorExcitation, applied_force, differentiated_accelerations, identify,
                                       identify_motion, simulated_accelerations)
from robustrack.scenarios.identification import renominalize, track_with_nominal
from robustrack.plants import LagrangianPlant
from robustrack.scenarios import load_scenario
from robustrack.scenarios.tracking_kinds import run_tracking

from identification_log_study import HEADER as LOG_HEADER, log_study  # noqa: E402  (beside this script)

FIGDIR = "identification"
MASSES = ["m1", "m2", "m3"]
SIGMAS = (1e-6, 1e-5, 1e-4, 1e-3, 1e-2)
SEEDS = 100


def _table(header, rows) -> str:
    return "\n".join(["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
                     + ["| " + " | ".join(str(c) for c in r) + " |" for r in rows])


def _figure(size):
    fig = Figure(figsize=size, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def noise_free(result, pb, dm):
    """Rows: each regressor × each source of q̈ on the saved grid (and a 10× finer grid for differences)."""
    rows = []
    simulated = simulated_accelerations(result, pb.actual)
    for label, acc in (("simulated (closed-loop right-hand side)", simulated), ("central differences of q̇", "differences")):
        for method in ("sympy", "perturbation"):
            start = time.perf_counter()
            ident = identify(result, pb.nominal, MASSES, accelerations=acc, method=method)
            wall = time.perf_counter() - start
            rel = np.abs(ident.delta - dm) / np.abs(dm)
            rows.append([label, method, ", ".join(f"{v:.10g}" for v in ident.delta),
                         ", ".join(f"{v:.2g}" for v in ident.std_error), ", ".join(f"{v:.2g}" for v in rel),
                         f"{ident.condition:.3g}", f"{wall * 1e3:.0f} ms"])
    return rows, simulated


def noise_study(result, pb, qdd, dm):
    """RMS error, mean standard error and coverage over SEEDS seeds per σ (noise on q, q̇, q̈)."""
    F = applied_force(result)
    out = {}
    for sigma in SIGMAS:
        errors, ses = [], []
        for seed in range(SEEDS):
            draws = np.random.default_rng(seed).standard_normal((3,) + result.qc.shape)
            ident = identify_motion(pb.nominal, MASSES, result.t, result.qc + sigma * draws[0],
                                    result.qcd + sigma * draws[1], qdd + sigma * draws[2], F)
            errors.append(ident.delta - dm)
            ses.append(ident.std_error)
        errors, ses = np.array(errors), np.array(ses)
        z = errors / ses
        out[sigma] = {"rms": np.sqrt(np.mean(errors**2, axis=0)), "se": ses.mean(axis=0),
                      "in2": np.mean(np.abs(z) < 2, axis=0), "in3": np.mean(np.abs(z) < 3, axis=0),
                      "mean_z": z.mean(axis=0), "z": z}
    return out


#: The triple pendulum with joint friction in its actual plant, θ1's viscous and θ2's Coulomb coefficient and m2
#: named uncertain parameters, each shifted by `dm` (the guide's example, docs/guide/identification.md).
FRICTION_SETS = ["uncertainty.parameters={viscous_theta1={percent=50}, coulomb_theta2={percent=50}, m2={percent=10}}",
                 "uncertainty.dm=[0.3, 0.2, 0.1]", "actual.viscous=0.5", "actual.coulomb=0.3",
                 "actual.coulomb_width=0.05"]
#: ur5-friction with δs on the payload mass and every joint's friction coefficient (in the tables' order).
UR5_DM = "uncertainty.dm=[0.4,0,0,0.01,0.3,-0.4,0.2,0.1,-0.2,0.5,1.0,-1.0,0.5,0.3,-0.2,0.1]"


def friction_study(folder: Path) -> dict:
    """Friction identified with the masses (and a URDF payload), against holding it at its nominal values."""
    from robustrack.scenarios.identification import identify_saved_run
    from robustrack.scenarios.runner import run_scenario

    out = {}
    for label, sc in (("pendulum", load_scenario("triple-pendulum", FRICTION_SETS)),
                      ("ur5", load_scenario("ur5-friction", [UR5_DM, "simulation.uncompensated=false"]))):
        run = folder / f"{label}.npz"
        run_scenario(sc, save=run)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            held = "m2" if label == "pendulum" else "payload"
            out[label] = {"with": identify_saved_run(run, sc, compare_actual=True, renominalize_run=True),
                          "held": identify_saved_run(run, sc, held, compare_actual=True, renominalize_run=True)}
    return out


def sampled_study(folder: Path) -> dict:
    """ur5-payload-sensed (1 kHz loop through noisy encoders, a filtered velocity, a 1-ms delay) saved at its control
    rate: the payload with the held Qᵘ (the integral form's left rule) and from central differences."""
    from robustrack.scenarios.identification import identify_saved_run
    from robustrack.scenarios.runner import run_scenario

    sc = load_scenario("ur5-payload-sensed", ["simulation.n_points=5001", "simulation.uncompensated=false"])
    run = folder / "sensed.npz"
    run_scenario(sc, save=run)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return {acc: identify_saved_run(run, sc, compare_actual=True, accelerations=acc)
                for acc in ("none", "differences")}


def _friction_rows(doc) -> list:
    ident, truth = doc["identification"], doc["truth"]
    return [[p, f"{ident['nominal'][i]:.4g}", f"{ident['estimate'][i]:.5g} ± {ident['std_error'][i]:.2g}",
             f"{truth['values'][i]:.4g}", f"{truth['error_in_std_errors'][i]:+.2f}"]
            for i, p in enumerate(ident["parameters"])]


def carts_warning() -> str:
    """The warning for a plant built in a script whose second cart never moves."""
    x1, x2, v1, v2, m1, m2, k = sp.symbols("x1 x2 v1 v2 m1 m2 k")
    plant = LagrangianPlant.from_energies([x1, x2], (m1 * v1**2 + m2 * v2**2) / 2, k * (x1**2 + x2**2) / 2,
                                          qd=[v1, v2], params={m1: 1.0, m2: 2.0, k: 4.0}, kinds=["length"] * 2)
    t = np.linspace(0, 2, 201)
    q, qd, qdd = np.c_[np.sin(2 * t), 0 * t], np.c_[2 * np.cos(2 * t), 0 * t], np.c_[-4 * np.sin(2 * t), 0 * t]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        identify_motion(plant, ["m1", "m2"], t, q, qd, qdd, np.c_[1.3 * qdd[:, 0] + 4 * q[:, 0], 0 * t])
    return "; ".join(str(w.message) for w in caught if issubclass(w.category, PoorExcitation))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-o", "--out", default="docs/results", help="folder of the page (default docs/results)")
    out = Path(parser.parse_args(argv).out)
    (out / FIGDIR).mkdir(parents=True, exist_ok=True)

    scenario = load_scenario("triple-pendulum")
    pb = scenario.build()
    result, _ = run_tracking(scenario)
    dm = pb.actual.m - pb.nominal.m
    rows, qdd = noise_free(result, pb, dm)
    fine, _ = run_tracking(load_scenario("triple-pendulum", ["simulation.n_points=10001"]))
    ident_fine = identify(fine, pb.nominal, MASSES, accelerations="differences")
    rel_fine = np.abs(ident_fine.delta - dm) / np.abs(dm)
    rows.append(["central differences of q̇, Δt = 1 ms (`--set simulation.n_points=10001`)", "sympy",
                 ", ".join(f"{v:.6g}" for v in ident_fine.delta), ", ".join(f"{v:.2g}" for v in ident_fine.std_error),
                 ", ".join(f"{v:.2g}" for v in rel_fine), f"{ident_fine.condition:.3g}", "—"])
    gap = np.abs(qdd - differentiated_accelerations(result.t, result.qcd))[1:-1]

    study = noise_study(result, pb, qdd, dm)
    log_clean, log_rows = log_study(result, pb, SEEDS)
    log_rel = np.abs(log_clean.delta - dm) / np.abs(dm)
    ident = identify(result, pb.nominal, MASSES, accelerations=qdd)
    ren = renominalize(scenario, ident)
    runs = {label: track_with_nominal(scenario, nom)
            for label, nom in (("nominal m = (1, 2, 3) kg", pb.nominal), ("nominal := identified", ident.plant(pb.nominal)))}
    warning = carts_warning()
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        friction = friction_study(Path(tmp))
        sampled = sampled_study(Path(tmp))
    sampled_rows = [[{"none": "integral form, Qᵘ held between samples (the default)",
                      "differences": "central differences of q̇ (`--accelerations differences`)"}[acc],
                     f"{d['payload']['mass']:.6g} ± {d['payload']['mass_std_error']:.2g}",
                     ", ".join(f"{v:.3g}" for v in d["payload"]["com"]),
                     f"{d['identification']['windows'][0]} of {d['identification']['windows'][1]}"
                     if d["identification"]["windows"] else "—"]
                    for acc, d in sampled.items()]
    pf, uf = friction["pendulum"], friction["ur5"]
    m2_held = pf["held"]["truth"]["relative_error_of_delta"][0]
    fr_header = ["parameter", "nominal", "estimate ± SE", "actual", "error / SE"]
    pay = {k: uf[k]["payload"] for k in ("with", "held")}
    ur5_rows = [[f"payload identified with the {len(uf['with']['identification']['parameters']) - 10} friction "
                 "coefficients" if k == "with" else "friction held at its nominal values (`--parameters payload`)",
                 f"{pay[k]['mass']:.4g} ± {pay[k]['mass_std_error']:.2g}",
                 ", ".join(f"{v:.3g}" for v in pay[k]["com"]) + " ± " + ", ".join(f"{v:.2g}" for v in pay[k]["com_std_error"]),
                 f"{uf[k]['identification']['rms_residual']:.3g}",
                 f"{uf[k]['renominalized']['before']['max_abs_e']:.3g} → {uf[k]['renominalized']['after']['max_abs_e']:.3g}"]
                for k in ("with", "held")]
    pr = {k: pf[k]["renominalized"] for k in ("with", "held")}
    ur5_z = float(np.max(np.abs(uf["with"]["truth"]["error_in_std_errors"][10:])))
    by_compensator = []
    for comp in ("gss", "gd", "gdbar", "smc", "none"):
        r = renominalize(load_scenario("triple-pendulum", [f"compensator.type='{comp}'"]), ident)
        by_compensator.append([comp, f"{r['before']['max_abs_e']:.3g} → {r['after']['max_abs_e']:.3g}",
                               f"{r['drop_e']:.3g}", f"{r['before']['max_abs_Qu']:.3g} → {r['after']['max_abs_Qu']:.3g}",
                               f"{r['drop_Qu']:.3g}" if comp != "none" else "—"])

    # figures
    fig = _figure((10, 4))
    ax1, ax2 = fig.subplots(1, 2)
    s = np.array(SIGMAS)
    for i, p in enumerate(MASSES):
        line, = ax1.loglog(s, [study[x]["rms"][i] for x in SIGMAS], "o-", label=f"{p}: RMS error over {SEEDS} seeds")
        ax1.loglog(s, [study[x]["se"][i] for x in SIGMAS], "--", color=line.get_color(), label=f"{p}: mean standard error")
    ax1.set_xlabel("noise σ on q, q̇, q̈ (rad, rad/s, rad/s²)")
    ax1.set_ylabel("kg")
    ax1.set_title("estimate error ∝ σ, tracked by its standard error")
    ax1.legend(fontsize=7)
    ax1.grid(True, which="both", alpha=0.3)
    for i, p in enumerate(MASSES):
        ax2.semilogx(s, [study[x]["in2"][i] for x in SIGMAS], "o-", label=f"{p}: inside 2 SE")
    ax2.axhline(0.954, color="k", ls=":", label="Gaussian: 95.4 %")
    ax2.set_ylim(0.5, 1.02)
    ax2.set_xlabel("noise σ")
    ax2.set_ylabel(f"fraction of {SEEDS} seeds")
    ax2.set_title("coverage of ±2 standard errors")
    ax2.legend(fontsize=7)
    ax2.grid(True, alpha=0.3)
    fig.savefig(out / FIGDIR / "noise.png", dpi=110)

    fig = _figure((6, 4))
    ax = fig.subplots()
    z = study[1e-4]["z"].ravel()
    ax.hist(z, bins=np.linspace(-4, 4, 25), density=True, alpha=0.6, label=f"(θ̂ − θ)/SE, σ = 1e-4, {z.size} values")
    x = np.linspace(-4, 4, 200)
    ax.plot(x, np.exp(-x**2 / 2) / np.sqrt(2 * np.pi), "k", label="N(0, 1)")
    ax.set_xlabel("error in standard errors")
    ax.set_ylabel("density")
    ax.legend(fontsize=8)
    fig.savefig(out / FIGDIR / "zscores.png", dpi=110)

    fig = _figure((10, 4))
    ax1, ax2 = fig.subplots(1, 2)
    for label, r in runs.items():
        ax1.semilogy(r.t, np.max(np.abs(r.e), axis=1) + 1e-16, label=label)
        ax2.semilogy(r.t, np.max(np.abs(r.Qu), axis=1) + 1e-16, label=label)
    ax1.set_ylabel("‖e‖∞ (rad)")
    ax2.set_ylabel("‖Qᵘ‖∞ (N·m)")
    for ax in (ax1, ax2):
        ax.set_xlabel("t (s)")
        ax.legend(fontsize=8)
        ax.grid(True, alpha=0.3)
    fig.suptitle("W §7.3 case 1, GSS: the same actual plant tracked with the original and the identified nominal")
    fig.savefig(out / FIGDIR / "renominalized.png", dpi=110)

    header = ["q̈ from", "regressor", "δm estimate (kg)", "standard errors (kg)", "relative error of δm",
              "condition", "identify()"]
    noise_rows = [[f"{x:g}"] + [", ".join(f"{v:.2g}" for v in study[x][k]) for k in ("rms", "se")]
                  + [", ".join(f"{v:.0%}" for v in study[x][k]) for k in ("in2", "in3")]
                  + [", ".join(f"{v:+.2f}" for v in study[x]["mean_z"])] for x in SIGMAS]
    rms = {x: study[x]["rms"] for x in SIGMAS}
    slopes = np.polyfit(np.log10(SIGMAS[:4]), np.log10([rms[x] for x in SIGMAS[:4]]), 1)[0]
    b, a = ren["before"], ren["after"]
    ren_rows = [["max ‖e‖∞ (rad)", f"{b['max_abs_e']:.4g}", f"{a['max_abs_e']:.4g}", f"{ren['drop_e']:.3g}×"],
                ["max ‖ė‖∞ (rad/s)", f"{b['max_abs_edot']:.4g}", f"{a['max_abs_edot']:.4g}",
                 f"{b['max_abs_edot'] / a['max_abs_edot']:.3g}×"],
                ["max ‖Qᵘ‖∞ (N·m)", f"{b['max_abs_Qu']:.4g}", f"{a['max_abs_Qu']:.4g}", f"{ren['drop_Qu']:.3g}×"],
                ["max ‖Qᶜ‖∞ (N·m)", f"{b['max_abs_Qc']:.4g}", f"{a['max_abs_Qc']:.4g}", "—"],
                ["promised bound held", str(b["bounds_held"]), str(a["bounds_held"]), "—"]]
    cmd = "robustrack run triple-pendulum --save run.npz && robustrack identify run.npz --scenario triple-pendulum --renominalize"
    page = f"""# Identifying δm from tracking data

Issue 21, part 3 (W ch. 10: "turn an uncertain system into a certain one"); made by
`python scripts/identification_report.py`. Module: `robustrack.identification`
(`identify`, `identify_motion`, `regressor`, `simulated_accelerations`), the saved-run and
re-nominalizing layer `robustrack.scenarios.identification`, and on the command line

    {cmd}

**The method.** The controlled actual system obeys M_a(q_c) q̈_c − Q_a(q_c, q̇_c) = Qᶜ + Qᵘ
(W 5.2.17). M and Q of the triple pendulum (W 2.3.2–2.3.3) are sums of tail masses
μ_ij = Σ_(k ≥ max(i,j)) m_k times functions of q, q̇, so r(θ) = M q̈ − Q is *linear* in the
masses: r(θ) = r(θ₀) + Y(q, q̇, q̈)(θ − θ₀), Y_k = ∂r/∂m_k. Each of the run's {result.t.size}
samples gives 3 equations Y δm = Qᶜ + Qᵘ − r(θ₀); least squares on the {3 * result.t.size} of
them gives δm̂. Y comes from sympy where the plant has a symbolic form (`plant.codegen()`: the
pendulum, any `LagrangianPlant`), else from central differences in θ, which are exact to
rounding for a plant linear in θ (there is no truncation term; the second difference is
checked to vanish, so a parameter the plant is not linear in — a link length — is refused).
Standard errors are the cluster-robust (sandwich) ones, clustered on the time samples: noise
on q, q̇, q̈ enters a sample's three equations through M(q) and ∂r/∂q, correlated and of a size
that changes along the run, which the textbook s²(YᵀY)⁻¹ would ignore. The regressor's
columns are scaled by the nominal values; its condition number above a limit (default 1e6) is
a `PoorExcitation` warning naming the parameters the motion does not excite.

## W §7.3 case 1 from the noise-free run

`robustrack run triple-pendulum` (energy constraint, GSS with W's settings, 10 s, BDF rtol
1e-8, 1001 output points), actual masses m + δm, δm = ({", ".join(f"{v:g}" for v in dm)}) kg.

{_table(header, rows)}

**Which q̈.** The saved run holds q_c, q̇_c, Qᶜ, Qᵘ on its output grid, not q̈_c. *Simulated*:
the closed-loop right-hand side at the stored states, q̈_c = M_a⁻¹(Q_a + Qᶜ + Qᵘ) — the
acceleration the integrator's right-hand side gives there, i.e. the simulation's accelerometer.
With it the equation of motion holds at every sample to rounding, whether the sample is a
solver step or a dense-output point, so the estimate is exact to rounding times the condition
number (the issue's target ≤ 1e-6; measured above). The actual plant enters only there.
*Central differences* of the stored q̇_c need nothing but the data, but on the 10 ms grid
they miss the fast parts of the motion: the gap to the simulated q̈ has median
{np.median(gap):.2g} rad/s² and maximum {gap.max():.2g} rad/s² (q̈ up to {np.abs(qdd).max():.0f}
rad/s²); it falls like Δt² (tested), but near t ≈ 1.74 s q̈ changes within milliseconds (the
stabilized energy constraint), and δm — a tenth of m, and m1 seen in θ1's equation only — is
not recovered to better than a few per cent even at Δt = 1 ms. Differentiating the dense
output would carry the integrator's local error (rtol 1e-8 on states of order 1, divided by
the step) in the same way. The standard errors of the differenced rows are those of a model
error, not of noise: they do not bound the error (m3 is off by several of them).

## Measurement noise

Gaussian noise σ added to q, q̇ and q̈ (rad, rad/s, rad/s²) at every sample of the same run,
{SEEDS} seeds per σ, the same draws scaled by σ:

{_table(["σ", "RMS error m1, m2, m3 (kg)", "mean standard error (kg)", "inside 2 SE", "inside 3 SE", "mean error / SE"], noise_rows)}

The error grows like σ (log-log slope over σ ≤ 1e-3: {", ".join(f"{v:.3f}" for v in slopes)}),
and so does the standard error, which tracks it: ~{int(round(100 * np.mean([study[x]['in2'].mean() for x in SIGMAS[:3]])))} % of the seeds fall inside
2 standard errors (Gaussian: 95.4 %) and all but a few inside 3. At σ = 1e-2 the regressor
itself is noisy (q̈ noise in Y): the errors-in-variables bias, O(σ²), shows as a mean error of
about half a standard error. (The RMS error is 1.0–1.1× the mean standard error; the
estimator is unbiased to first order in σ, so the mean error in standard errors is sampling
noise of ±0.1 over 100 seeds, the same for every σ ≤ 1e-3 because the draws are.) The test (`tests/test_identification.py`) checks σ = 1e-4 against
10σ over 40 seeds: RMS error and standard errors ×10 within 5 %, ≥ 34 of 40 seeds inside
2 SE and ≥ 38 inside 3 SE (if the standard errors are right, the count inside 2 SE is
Binomial(40, 0.954), and fewer than 34 has probability below 1 %).

![error and standard error against σ; coverage](identification/noise.png)

![the errors in standard errors at σ = 1e-4 against N(0, 1)](identification/zscores.png)

## From a log: q, q̇ and the force, no q̈

What a robot's log holds is q, q̇ (noisy) and the applied force at the log rate. The integral
form (`robustrack.identification.integral`, the default of `identify` and of `robustrack
identify`) needs no q̈: over windows of 11 samples (5 panels of two intervals) the equation of
motion integrates to [M q̇] − ∫ q̇·dM − ∫ Q dt = ∫ F dt, still linear in the masses; the integrals
use quadratic interpolation of the samples (Simpson's rule, and its Stieltjes counterpart for
∫ q̇·dM — M is never differentiated). Where the force changes within a log interval (the violent
late motion of this run: Qᶜ jumps by 2000 N·m between 10-ms samples) no rule integrates it; each
equation is integrated twice (quadratic and trapezoidal rule), and equations whose two results
differ by more than `resolution` = 1e-3 of the parameters' force are left out; used here:
{log_clean.windows[0]} of the {log_clean.windows[1]} window equations. The estimate never reads the actual plant.

Noise-free, the same 1001-sample run: δm = {", ".join(f"{v:.6g}" for v in log_clean.delta)} kg,
relative error {", ".join(f"{v:.2g}" for v in log_rel)} (central differences of q̇ above: 115 %,
8 %, 32 %).

Standard errors: windows share no sample, so sample-wise independent noise is independent
between windows; inside a window the rows are correlated (the endpoint terms M q̇ carry the
velocity noise). The sandwich is clustered on the windows, with the CR3 leverage correction
(ρ_g → (I − H_gg)⁻¹ ρ_g, the cluster jackknife): a few windows carry most of m1's information,
and the plain sandwich was measured 1.1–1.3× too small. Gaussian noise σ on q (rad) and q̇
(rad/s) at every sample, {SEEDS} seeds per σ:

{_table(LOG_HEADER, log_rows)}

At σ = 1e-3 (and 3e-3) every mass lies inside 2 standard errors in 93 % or more of the seeds.
At σ ≤ 3e-4 m3's coverage drops (73 % at 1e-4): the standard error shrinks with σ while the
quadrature error of the used windows does not (noise-free bias 1e-3 of δm3); the standard errors
describe the noise, not the discretization. m1 (in θ1's equation only, against forces of
thousands of N·m) is the least determined: its standard error is a third of δm1 at σ = 1e-3.

## Re-nominalizing: nominal := identified

The same scenario rerun with the identified plant as nominal (`Identification.plant(nominal)`
= `nominal.replace(m1=…, m2=…, m3=…)`), against the same actual plant, energy requirement and
GSS compensator:

{_table(["", "nominal m = (1, 2, 3) kg", "nominal := identified", "drop"], ren_rows)}

With the nominal equal to the actual plant to ~1e-12, δq is rounding; what is left of e is the
integrator's (rtol 1e-8), and the compensator has almost nothing to do. Qᶜ changes too: the
requirement is the same, but the nominal motion that meets it is now the actual plant's own, a
different trajectory with a different force.

![‖e‖∞ and ‖Qᵘ‖∞ along the two runs](identification/renominalized.png)

What it buys depends on what limited the error. The same identified plant under the other
compensators (`robustrack identify run.npz --scenario triple-pendulum --compensator C
--renominalize`, 10 s each):

{_table(["compensator", "max ‖e‖∞ (rad)", "before / after", "max ‖Qᵘ‖∞ (N·m)", "before / after"], by_compensator)}

The continuous laws (GSS, GD, GD-bar) gain 500× or more in e and 1e5× or more in Qᵘ. Without
a compensator re-nominalizing does not make e small: the energy-controlled triple pendulum is
chaotic, and a mass difference of ~1e-12 plus the two integrators' local errors (rtol 1e-8)
grow to radians in 10 s — identification shrinks the compensator's job, it does not replace
the compensator. The sign law sampled at 1 ms (`smc`) gains nothing: its error is the
chattering band of the zero-order hold, not the uncertainty it was reacting to.

## Joint friction

The actual plant's joint friction δQ_i = −b_i q̇_i − F_c,i tanh(q̇_i / v_s) is linear in b_i and F_c,i, so they are
identified with the masses: closed-form columns q̇_i e_i and tanh(q̇_i / v_s) e_i (`robustrack.identification.friction`),
named `viscous_<joint>`, `coulomb_<joint>`. The triple pendulum with friction in its actual plant (`[actual]` viscous
0.5, Coulomb 0.3 N·m, v_s = 0.05 rad/s) and θ1's viscous, θ2's Coulomb coefficient and m2 named uncertain parameters,
shifted by 0.3, 0.2 and 0.1; `robustrack identify RUN.npz --compare-actual --renominalize`, the integral form:

{_table(fr_header, _friction_rows(pf["with"]))}

Held at its nominal values instead (`--parameters m2`, as `identify` did before it took friction), the friction's
change is absorbed by m2: δm2 is {m2_held:.0%} off and the equation residual is
{pf["held"]["identification"]["rms_residual"] / pf["with"]["identification"]["rms_residual"]:.0f} times larger.
Re-nominalized with the identified friction in the nominal model, max ‖e‖∞ {pr["with"]["before"]["max_abs_e"]:.3g} →
{pr["with"]["after"]["max_abs_e"]:.3g} rad and max ‖Qᵘ‖∞ {pr["with"]["before"]["max_abs_Qu"]:.3g} →
{pr["with"]["after"]["max_abs_Qu"]:.3g} N·m (with m2 alone: {pr["held"]["after"]["max_abs_e"]:.3g} rad,
{pr["held"]["after"]["max_abs_Qu"]:.3g} N·m).

A URDF robot: `ur5-friction` (payload 2 kg nominal, 2.4 kg actual, centre of mass (0, 0, 0.06) m; every joint's
viscous and Coulomb coefficient named ±50 % and shifted; a band-limited 2 N·m disturbance no model has), 5 s:

{_table(["", "payload mass (kg)", "centre of mass (m)", "RMS residual (N·m·s)", "re-nominalized max ‖e‖∞ (rad)"], ur5_rows)}

Holding the friction puts the payload mass {abs(pay["held"]["mass"] - 2.4) / pay["held"]["mass_std_error"]:.0f}
standard errors off; identifying the friction recovers the mass to {abs(pay["with"]["mass"] - 2.4) / 2.4:.1%} and the
centre of mass within two standard errors. The friction coefficients themselves are determined loosely here: their
errors reach {ur5_z:.1f} standard errors. The disturbance is an unmodelled force of the friction's size and
band-limited (10 rad/s), so it is correlated across the windows that the clustered standard errors take as
independent, and 5 s of one smooth reference excite the wrists little (`poorly excited` names the weakest). Identify
friction from a run that moves each joint both ways at several speeds.

## A sampled compensator's run

A compensator run at a fixed rate holds its force from one sample to the next; logged at that rate (every hold
edge a sample), the held Qᵘ integrates exactly by the left rectangle rule, while Qᶜ stays a smooth force
(`identify(..., held=True)`; `robustrack identify` chooses it from the scenario's `compensator.sample_period`).
`ur5-payload-sensed` (1 kHz, noisy encoders, a filtered velocity, a 1-ms delay) saved at 1 kHz, its true states
(actual payload 2.4 kg at (0, 0, 0.05) m):

{_table(["q̈ / the force", "payload mass (kg)", "centre of mass (m)", "window equations used"], sampled_rows)}

The left rule is exact for a constant held force; Qᵘ = M(q) u changes within a hold as M(q) moves (u is held),
an O(h² Ṁ u) error per interval the rule does not see. Saved every 10 ms instead (the scenario's default), the held force is a staircase the samples
miss: the integral form is refused, naming the `n_points` of the control rate, and differences still work.

## When the motion does not excite a parameter

Two uncoupled carts on springs, built in the script with `LagrangianPlant.from_energies`,
identified from a motion in which cart 2 never moves:

> {warning}

The estimate of m1 is unaffected (exact here), m2 stays at its nominal value with an infinite
standard error, and `Identification.poorly_excited` names it. A barely moving cart
(amplitude 1e-9 m) gives a finite but huge condition number, warned above the limit
(`condition_limit`, `--condition-limit`).

## Limits

- Only parameters M and Q are linear in (masses, inertias, joint friction coefficients) are identified; the others
  keep their nominal values and are assumed known (the pendulum's lengths and g here; the Coulomb friction's v_s).
- A saved `.npz` records the scenario it was made with (`scenario_toml`), so `robustrack identify
  RUN.npz` needs no `--scenario`; a run saved without one takes `--scenario` and the same `--set`,
  and a run whose coordinates, start or horizon differ is refused.
- Noise on the applied force is not modelled separately (it enters the equations additively
  and is covered by the same sandwich standard errors); errors-in-variables bias is not
  corrected (total least squares or instruments would be needed for large σ).
"""
    (out / "identification.md").write_text(page, encoding="utf-8")
    print(f"wrote {out / 'identification.md'} and {out / FIGDIR}/*.png; "
          f"re-nominalized: e {ren['drop_e']:.3g}×, Qᵘ {ren['drop_Qu']:.3g}× smaller")


if __name__ == "__main__":
    main()
