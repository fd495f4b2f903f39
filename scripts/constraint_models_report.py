"""Which motion does a constraint produce? Run issue 12's comparisons and write the page:

    python scripts/constraint_models_report.py [-o docs/results]

Writes constraint-models.md and the figures in constraint-models/ (about a minute; the
first run also compiles the W ch. 3 plants' kernels). Sections: the Chaplygin skate,
nonholonomic vs vakonomic (K); the speed reducer, d'Alembert vs variational (S §2); servo
constraints and realizability (K, Beghin); the friction and added-mass limits (K
Theorems 1–2); W ch. 3's correct vs conflated formulations, and how the toolbox refuses
the conflated model.
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from pathlib import Path

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from robustrack._format import format_value, markdown_table
from robustrack.studies.conflation import check_not_conflated, w_chapter3_examples
from robustrack.studies.constraint_models import VakonomicModel, vakonomic_skate_reduced
from robustrack.errors import RobustrackError
from robustrack.scenarios import load_scenario
from robustrack.scenarios.runner import run_constrained_scenario
from robustrack.tracking import simulate_constrained

FIGDIR = "constraint-models"


def _fig(nrows, ncols, height=3.4, width=10.0):
    fig = Figure(figsize=(width, height * nrows), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(nrows, ncols, squeeze=False)
    return fig, axes


def _save(fig, out, name):
    path = out / FIGDIR / name
    fig.savefig(path, dpi=110)
    return f"{FIGDIR}/{name}"


def _g(x):
    return format_value(x, digits=3)


def _run(name, *overrides):
    return run_constrained_scenario(load_scenario(name, list(overrides)))


# ------------------------------------------------------------------------------ skate
def skate(out):
    nh, s_nh = _run("chaplygin-skate")
    vk, s_vk = _run("chaplygin-skate-vakonomic")
    lam = vk.qd[:, 3]
    fig, ax = _fig(1, 3)
    t3 = nh.t <= vk.t[-1] + 1e-12
    a = ax[0, 0]
    a.plot(nh.t[t3], nh.q[t3, 0], color="tab:blue", label="nonholonomic (run)")
    a.plot(nh.t[t3], np.sin(nh.t[t3]) ** 2 / 2, "k:", label="K's closed form")
    a.plot(vk.t, vk.q[:, 0], color="tab:red", label="vakonomic, λ(0) = 0 (run)")
    ref = vakonomic_skate_reduced(vk.t, m=1.0, inertia=1.0, g=1.0, q0=np.zeros(3), qd0=[0, 0, 1.0], lam0=0.0)[0]
    a.plot(vk.t, ref[:, 0], "k--", lw=0.8, label="reduced equations")
    a.set(xlabel="t [s]", ylabel="x (down the slope)", title="x(t)")
    a.legend(fontsize=7)
    a = ax[0, 1]
    a.plot(nh.q[:, 1], nh.q[:, 0], color="tab:blue", label="nonholonomic, 10 s")
    a.plot(vk.q[:, 1], vk.q[:, 0], color="tab:red", label="vakonomic, 3 s")
    a.invert_yaxis()
    a.set(xlabel="y (across)", ylabel="x (down the slope)", title="path on the plane")
    a.legend(fontsize=7)
    a = ax[0, 2]
    a.plot(vk.t, lam, color="tab:red", label="λ(t)")
    a.plot(vk.t, -vk.t * np.sin(vk.q[:, 2]), "k:", label="−t sin φ (K)")
    a.set(xlabel="t [s]", title="vakonomic multiplier")
    a.legend(fontsize=7)
    fig_path = _save(fig, out, "skate.png")
    m_nh, m_vk = s_nh["metrics"], s_vk["metrics"]
    rows = [["`chaplygin-skate` (NH)", "10", "K's closed form", _g(m_nh["max_error_vs_closed_form"]),
             _g(float(nh.q[-1, 0])), _g(float(np.max(nh.q[:, 0]))), _g(m_nh["max_constraint_residual"])],
            ["`chaplygin-skate-vakonomic`", "3", "reduced equations", _g(m_vk["max_error_vs_closed_form"]),
             _g(m_vk["x_end"]), _g(float(np.max(vk.q[:, 0]))), _g(m_vk["max_constraint_residual"])]]
    table = markdown_table(["scenario", "t_end [s]", "truth", "max error", "x(t_end)", "max x", "max |Φ|"], rows)
    return f"""## 1. The Chaplygin skate: nonholonomic vs vakonomic (K)

`L = ½(ẋ² + ẏ² + φ̇²) + x`, `Φ = ẋ sin φ − ẏ cos φ`, start at rest except φ̇(0) = ω = 1.
The nonholonomic model (`chaplygin-skate`, the fundamental equation) follows K's closed
form; the vakonomic model (`chaplygin-skate-vakonomic`, `[T] = F + λ[Φ] + λ̇ ∂Φ/∂q̇` with
λ a state, λ(0) = 0) follows its reduced equations `φ̈ = t² sin φ cos φ`, `ẋ = t cos² φ`
(derived in `robustrack.studies.constraint_models.vakonomic_skate_reduced`, checked
symbolically in the tests) and slides down the slope; the nonholonomic skate never gets
beyond x = 1/(2ω²) = 0.5. Vakonomic energy drift over 3 s: {_g(m_vk["energy_drift"])}.

{table}

![skate]({fig_path})
"""


# ---------------------------------------------------------------------- speed reducer
def reducer(out):
    da, s_da = _run("speed-reducer")
    va, s_va = _run("speed-reducer-variational")
    fig, ax = _fig(1, 3)
    for res, col, lab in ((da, "tab:blue", "d'Alembert (S 2.2)"), (va, "tab:red", "variational (S 2.6)")):
        ax[0, 0].plot(res.t, res.q[:, 2], color=col, label=lab)
        ax[0, 1].plot(res.t, res.qd[:, 0], color=col, label=lab)
    ax[0, 2].plot(va.t, va.qd[:, 3], color="tab:red", label="λ (= −μ_S)")
    ax[0, 2].plot(va.t, -va.qd[:, 3] * va.qd[:, 0], color="tab:purple", lw=0.8, label="helical force −λφ̇")
    ax[0, 0].set(xlabel="t [s]", title="translation x of rotor B")
    ax[0, 1].set(xlabel="t [s]", title="φ̇ (rotor A)")
    ax[0, 2].set(xlabel="t [s]", title="variational multiplier")
    for a in ax[0]:
        a.legend(fontsize=7)
    fig_path = _save(fig, out, "speed-reducer.png")
    md, mv = s_da["metrics"], s_va["metrics"]
    rows = [["`speed-reducer` (d'Alembert)", _g(md["max_x_error_vs_closed_form"]) + " (x), "
             + _g(md["max_phi_dot_error_vs_closed_form"]) + " (φ̇) vs closed form", _g(md["rotational_energy_drift"])
             + " (½(a + bx²/r²)φ̇²)", "—", _g(md["max_constraint_residual"])],
            ["`speed-reducer-variational`", _g(mv["max_error_vs_closed_form"]) + " vs reduced equations",
             _g(mv["energy_drift"]) + " (T + V)", f"{_g(mv['integral_A_drift'])} / {_g(mv['integral_B_drift'])}",
             _g(mv["max_constraint_residual"])]]
    table = markdown_table(["model", "max error", "energy drift", "drift of S 2.7's A / B", "max |Φ|"], rows)
    return f"""## 2. The frictional speed reducer: d'Alembert vs variational (S §2)

Same rotors, spring and start (a = 1, b = 0.5, m = 2, k = 3, r = 0.4; x(0) = 0.8, ẋ(0) = −0.3,
φ̇(0) = 1.7; variational λ(0) = 0). With d'Alembert reactions the translation x is an autonomous
oscillator (S 2.2c); with the variational (Lusternik) reactions it feels the "helical" force
−λφ̇ and the two motions part: max |x_var − x_dA| = {_g(mv["max_x_difference_vs_dalembert"])} over 10 s.
Both conserve T + V (the variational reaction does no work on admissible motions, S 1.14).
The extracted S (2.4) and (2.6b)–(2.8) carry sign slips (`a − bx²/r²` for `a + bx²/r²`;
`bψ̇ + rμ` with the constraint as printed in 2.2d); the reduced equations used here are
re-derived in `robustrack.studies.constraint_models.variational_speed_reducer_reduced`.

{table}

![speed reducer]({fig_path})
"""


# ------------------------------------------------------------------------------ servo
def servo(out):
    cases = [("default: l = n = e3 (Suslov, principal axis)", []),
             ("l = n = (1,1,1)/√3 (Suslov, generic axis)",
              ["servo.l=[1,1,1]", "servo.n=[1,1,1]", "initial.omega=[1,-0.5,-0.5]"]),
             ("l = e3, n = (0,1,1)/√2 (servo, not ideal; 5 s)", ["servo.n=[0,1,1]", "simulation.t_end=5"])]
    rows, runs = [], []
    for label, ov in cases:
        res, s = _run("suslov-servo", *ov)
        m = s["metrics"]
        rows.append([label, _g(m["max_abs_omega_dot_l"]), _g(m["energy_drift"]), _g(m["max_abs_servo_torque"]),
                     _g(m["min_realizability_margin"])])
        runs.append((label, res))
    try:
        load_scenario("suslov-servo", ["servo.n=[1,0,0]"]).build()
        refusal = "(not refused!)"
    except RobustrackError as exc:
        refusal = f"{type(exc).__name__}: {exc}"
    fig, ax = _fig(1, 2)
    for a, (label, res) in zip(ax[0], runs[1:]):
        for i, c in enumerate(("tab:blue", "tab:orange", "tab:green")):
            a.plot(res.t, res.qd[:, i], color=c, label=f"ω{i + 1}")
        J = np.array([1.0, 2.0, 3.0])
        b = a.twinx()
        b.semilogy(res.t, 0.5 * np.sum(J * res.qd**2, axis=-1), "k--", lw=0.9, label="energy ½ωᵀJω (right, log)")
        b.set_ylim(0.5, 2e3)
        a.set(xlabel="t [s]", ylabel="ω [rad/s]", title=label)
        handles = a.get_legend_handles_labels()[0] + b.get_legend_handles_labels()[0]
        a.legend(handles=handles, fontsize=7, loc="upper left")
    fig_path = _save(fig, out, "servo.png")
    table = markdown_table(["case", "max |ω·l|", "energy drift", "max |torque λ|", "min realizability margin"], rows)
    return f"""## 3. Servo constraints and realizability (K, Beghin)

`suslov-servo`: a rigid body in body-axis angular velocities (J = (1, 2, 3)) with the
constraint ω·l = 0 kept by a torque λn along a given axis n: λ solves `A M⁻¹ N λ = b − A a`,
realizable iff `(J⁻¹n, l) ≠ 0`. With n = l it is Suslov's nonholonomic problem (ideal
reaction, energy conserved; the tests check it equals the fundamental-equation run); with
n ≠ l the constraint still holds but the torque does work (here it pumps energy in). The realizability margin
σ_min(A M⁻¹N)/(‖A‖‖M⁻¹N‖) is checked at every evaluation; where it falls below 1e-9 the run
stops with a `RealizabilityError` giving time and state (tested with an actuator axis that
turns perpendicular to l at t = π/2). With l ⟂ n the scenario is refused when it is built,
before any integration (`robustrack run suslov-servo --set servo.n=[1,0,0]` exits with 2):

> {refusal}

{table}

![servo]({fig_path})
"""


# ----------------------------------------------------------------------------- limits
def limits(out):
    Ns = [1e1, 1e2, 1e3, 1e4]
    fr, am, runs_f, runs_a = [], [], {}, {}
    for N in Ns:
        res, s = _run("skate-friction", f"friction.N={N}")
        fr.append(s["metrics"]["max_error_vs_closed_form"])
        runs_f[N] = res
        res, s = _run("skate-added-mass", f"added_mass.N={N}")
        am.append(s["metrics"]["max_error_vs_closed_form"])
        runs_a[N] = res
    rows = []
    for i, N in enumerate(Ns):
        rf = "—" if i == 0 else f"{fr[i - 1] / fr[i]:.1f}"
        ra = "—" if i == 0 else f"{am[i - 1] / am[i]:.1f}"
        rows.append([f"{N:.0e}", _g(fr[i]), rf, _g(am[i]), ra])
    table = markdown_table(["N", "friction: max error vs nonholonomic (10 s)", "ratio to previous N",
                    "added mass: max error vs vakonomic λ(0)=0 (3 s)", "ratio to previous N"], rows)
    fig, ax = _fig(1, 3)
    a = ax[0, 0]
    a.loglog(Ns, fr, "o-", color="tab:blue", label="friction → nonholonomic")
    a.loglog(Ns, am, "s-", color="tab:red", label="added mass → vakonomic")
    a.loglog(Ns, fr[0] * Ns[0] / np.array(Ns), "k:", lw=0.8, label="∝ 1/N")
    a.set(xlabel="N", ylabel="max_t ‖q_N − q_limit‖∞", title="K Theorems 1–2")
    a.legend(fontsize=7)
    a = ax[0, 1]
    t = runs_f[Ns[-1]].t
    a.plot(t, np.sin(t) ** 2 / 2, "k-", lw=2, label="nonholonomic (closed form)")
    for N, c in zip(Ns[:3], ("tab:cyan", "tab:blue", "navy")):
        a.plot(runs_f[N].t, runs_f[N].q[:, 0], color=c, lw=1, label=f"friction N = {N:.0e}")
    a.set(xlabel="t [s]", ylabel="x", title="friction limit")
    a.legend(fontsize=7)
    a = ax[0, 2]
    t = runs_a[Ns[-1]].t
    ref = vakonomic_skate_reduced(t, m=1.0, inertia=1.0, g=1.0, q0=np.zeros(3), qd0=[0, 0, 1.0], lam0=0.0)[0]
    a.plot(t, ref[:, 0], "k-", lw=2, label="vakonomic, λ(0) = 0")
    for N, c in zip(Ns[:3], ("pink", "tab:red", "darkred")):
        a.plot(runs_a[N].t, runs_a[N].q[:, 0], color=c, lw=1, label=f"added mass N = {N:.0e}")
    a.set(xlabel="t [s]", ylabel="x", title="added-mass limit")
    a.legend(fontsize=7)
    fig_path = _save(fig, out, "limits.png")
    return f"""## 4. Limits that connect the models (K Theorems 1–2)

The free skate (no constraint imposed) with anisotropic viscous friction
`R_N = ½N(ẋ sin φ − ẏ cos φ)²` (`skate-friction`, key `friction.N`) tends to the
nonholonomic skate; with the added mass `½N(ẋ sin φ − ẏ cos φ)²` in T (`skate-added-mass`,
key `added_mass.N`) it tends to the *vakonomic* skate — the one with λ(0) = 0, since the
limit's multiplier is λ = −lim N Φ and the start has Φ = 0. Both errors fall like 1/N.

{table}

![limits]({fig_path})
"""


# ------------------------------------------------------------------------------- W ch. 3
def wch3(out):
    examples = w_chapter3_examples()
    rows, figs = [], []
    for name, ex in examples.items():
        plant, con = ex.correct()
        good = simulate_constrained(plant, con, ex.q0, ex.qd0, (0.0, ex.t_end), n_points=401, rtol=1e-10)
        bad = ex.conflated().simulate(ex.q0, ex.qd0, ex.t_end, n_points=401)
        diff = np.max(np.abs(good.q - bad.q))
        rows.append([f"`{name}`", ex.source, f"{ex.t_end:g}", _g(diff), _g(good.max_constraint_residual),
                     _g(float(np.max(np.abs(bad.residual)))), ex.note])
        fig, ax = _fig(1, 3, height=2.6)
        for i, a in enumerate(ax[0]):
            a.plot(good.t, good.q[:, i], color="tab:blue", label="correct (W 2.2, three steps)")
            a.plot(bad.t, bad.q[:, i], "--", color="tab:red", label="conflated (constraint in L)")
            a.set(xlabel="t [s]", title=plant.coordinates[i])
        ax[0, 0].legend(fontsize=7)
        fig.suptitle(f"{ex.title} ({ex.source})", fontsize=9)
        figs.append(f"![{name}]({_save(fig, out, f'w3-{name}.png')})")
    table = markdown_table(["example", "source", "t_end [s]", "max |q_correct − q_conflated|", "max |constraint|, correct",
                    "max |constraint|, conflated", "what to see"], rows)
    alpha_rows = []
    for alpha in (0.0, 0.25, 0.5, 0.75, 1.0):
        ex = w_chapter3_examples(alpha=alpha)["w-3.3.2"]
        plant, con = ex.correct()
        good = simulate_constrained(plant, con, ex.q0, ex.qd0, (0.0, ex.t_end), n_points=101, rtol=1e-10)
        bad = ex.conflated().simulate(ex.q0, ex.qd0, ex.t_end, n_points=101)
        alpha_rows.append([f"{alpha:g}", _g(float(np.max(np.abs(good.q - bad.q))))])
    alpha_table = markdown_table(["α (W 3.3.21)", "max |q_correct − q_conflated| over 5 s"], alpha_rows)
    # the refusals, as a user meets them
    import sympy as sp

    from robustrack.constraints import Nonholonomic
    from robustrack.plants import LagrangianPlant

    x, y, z, xd, yd, zd = sp.symbols("x y z x_dot y_dot z_dot", real=True)
    appell = Nonholonomic(zd**2 - xd**2 - yd**2, [x, y, z], [xd, yd, zd])
    by_hand = LagrangianPlant.from_energies([x, y, z], xd**2 + yd**2, 9.81 * z, qd=[xd, yd, zd])
    msgs = []
    for what, call in (("a plant built by hand from Appell's T+ = ẋ² + ẏ²",
                        lambda: check_not_conflated(by_hand, appell)),
                       ("the conflated model handed to a model builder",
                        lambda: VakonomicModel(examples["appell-particle"].conflated(), appell))):
        try:
            call()
            msgs.append(f"- {what}: (accepted!)")
        except RobustrackError as exc:
            msgs.append(f"- {what}:\n\n  > {type(exc).__name__}: {exc}")
    refusals = "\n\n".join(msgs)
    return f"""## 5. W ch. 3: the correct and the conflated formulations

For each system the *correct* model is W's three steps (unconstrained plant from T, V; the
constraint apart; the fundamental equation: `simulate_constrained`); the *conflated* one
substitutes the constraint into the Lagrangian first (`robustrack.studies.conflation.conflated_model`)
and then imposes it the same way (W 2.2.10 where M+ is singular). The accelerations of both
are tested against W's closed forms (3.1.14, 3.3.7, 3.3.11–13, 3.3.20, 3.3.25, 3.3.37, 3.3.40
re-derived, 3.3.51). W leaves forces and numbers open; ours are in
`robustrack.studies.conflation.w_chapter3_examples`. Appell's particle under gravity alone gives the
same motion in both models (z̈ = −g/2 either way) — a horizontal push of 1 N separates them.
Only the holonomic example (W 3.3.4) agrees, as W proves.

{table}

W 3.3.2 with a fraction α of ½ẏ² substituted (α = 0 is the correct model):

{alpha_table}

{chr(10).join(figs)}

### How the toolbox keeps the conflated model out

1. **By construction.** A plant is the unconstrained system only: `LagrangianPlant.from_energies`
   takes T, V and forces and has no parameter for constraints; constraints are separate
   objects imposed by the fundamental equation. No code path substitutes a constraint into
   a Lagrangian except the next one.
2. **An explicit opt-in that says what it is.** `conflated_model(...)` returns a
   `ConflatedModel` whose repr ends in "WRONG" and which is *not a Plant*: `simulate_constrained`,
   the tracking loop, the scenarios and the model builders do not accept it (it has its own
   `simulate` to show the error).
3. **A footprint check.** `check_not_conflated(plant, constraint)` (run by `VakonomicModel`
   and `ServoModel`) refuses a plant whose kinetic energy does not weigh a velocity that a
   nonholonomic row involves — what a full substitution leaves behind (W 3.3.1). It cannot
   see a partial substitution or Hamel's (T+ is then a valid Lagrangian of another system),
   which is why 1 and 2 are the guarantee.

{refusals}
"""


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("-o", "--out", default="docs/results")
    args = p.parse_args(argv)
    out = Path(args.out)
    (out / FIGDIR).mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    parts = []
    for section in (skate, reducer, servo, limits, wch3):
        t0 = time.perf_counter()
        parts.append(section(out))
        print(f"{section.__name__}: {time.perf_counter() - t0:.1f} s", flush=True)
    wall = time.perf_counter() - start
    page = (f"# Which motion does a constraint produce?\n\nGenerated by `python scripts/constraint_models_report.py` "
            f"({wall:.0f} s). Seeds: K = Kozlov's slides (003), S = Sławianowski (002), W = Wanichanon ch. 3 (001). "
            "All runs at rtol 1e-10, atol 1e-12 unless the scenario says otherwise; errors are max over time of the "
            "infinity norm over the coordinates.\n\n" + "\n".join(parts))
    (out / "constraint-models.md").write_text(page, encoding="utf-8")
    print(f"wrote {out / 'constraint-models.md'} ({wall:.0f} s)")


if __name__ == "__main__":
    main()
