"""Certified Γ and ‖M̃ₐ‖ over a box of plants (issue 29; docs/theory/certificate.md).

Rigor is checked against independent truths: a one-link pendulum (a user's own Lagrangian plant) whose
δq has a closed form, its supremum along the interpolant computed with 50-digit mpmath; the witness of
the lower bound reproduced by the toolbox's own δq (assess.uncertainty_along_run) along the nominal run;
every sampled plant of a Monte Carlo below the certified upper bound. Small boxes and horizons keep the
suite quick; the full triple-pendulum figures are in benchmarks/bench_certify.py.
"""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("flint")

from robustrack.certification import ParameterBox, certify  # noqa: E402
from robustrack.errors import ParameterError  # noqa: E402
from robustrack.scenarios import load_scenario  # noqa: E402
from robustrack.tracking.problem import TrackingProblem  # noqa: E402


def _pendulum_problem(t_end=1.0):
    """A user's own plant: a one-link pendulum from its energies, L uncertain; no constraint (Qᶜ = 0)."""
    import sympy as sp

    from robustrack.plants.lagrangian import LagrangianPlant

    th, om, m, L, g = sp.symbols("theta omega m L g")
    plant = LagrangianPlant.from_energies([th], m * L**2 * om**2 / 2, -m * g * L * sp.cos(th), qd=[om],
                                          params={m: 1.5, L: 1.0, g: 9.81})
    return TrackingProblem(plant, None, None, [0.0], [2.0], (0.0, t_end), n_points=21)


def test_pendulum_certificate_contains_the_exact_supremum_50_digits():
    """δq = −g sin θ (1/L_a − 1/L) (M = m L², Q = −m g L sin θ; m cancels): its supremum over L_a ∈ [0.9, 1.1] and
    the run is g (1/0.9 − 1) max_t |sin θ_I(t)|, θ_I the DOP853 interpolant; the maximum of |θ_I| per step from the
    roots of its derivative polynomial in 50-digit arithmetic (independent of arb and of the search)."""
    import mpmath as mp

    pb = _pendulum_problem()
    box = ParameterBox.around(pb.nominal, 0.1, "L")
    cert = certify(pb, box, tolerance=1e-3, quantities=["max_norm_dq"], budget_s=120)
    b = cert.bounds["max_norm_dq"]
    run = pb.nominal_run()
    sol = run.solution
    mp.mp.dps = 50
    best = mp.mpf(0)
    for k in range(sol.F.shape[0]):
        # θ_I(x) = y_k + nested DOP853 form in x ∈ [0, 1] (scipy's Dop853DenseOutput), expanded exactly
        p = [mp.mpf(0)]
        for i in range(7):
            p[0] += mp.mpf(float(sol.F[k, 6 - i, 0]))
            up = [mp.mpf(0)] + p
            p = up if i % 2 == 0 else [a - c for a, c in zip(p + [mp.mpf(0)], up)]
        p[0] += mp.mpf(float(sol.y[k, 0]))
        dp = [i * c for i, c in enumerate(p)][1:]
        while len(dp) > 1 and dp[-1] == 0:  # the top coefficients of the position's interpolant can vanish
            dp.pop()
        roots = mp.polyroots(dp[::-1], maxsteps=200, extraprec=200) if len(dp) > 1 else []
        xs = [mp.mpf(0), mp.mpf(1)] + [r.real for r in roots if abs(r.imag) < mp.mpf(10) ** -30 and 0 <= r.real <= 1]
        best = max(best, *(abs(mp.polyval(p[::-1], x)) for x in xs))
    assert best < mp.pi / 2  # so max |sin θ| = sin(max |θ|)
    exact = mp.mpf(9.81) * (1 / mp.mpf(0.9) - 1) * mp.sin(best)  # the box's L is 0.9 exactly as a float: 0.9
    exact = float(exact)
    assert b.lower <= exact <= b.upper
    assert b.finished and b.gap <= 1e-3
    assert b.witness["params"]["L"] == pytest.approx(0.9, abs=1e-15)


def test_witness_is_reproduced_by_the_toolboxs_own_delta_q_along_the_run():
    """The lower bound is attained by a real plant at a real time: the toolbox's δq (assess, numpy) at that plant
    and time along nominal_run() gives it back to rounding (1e-9 relative: double precision on a 3 × 3 solve)."""
    from robustrack.tracking.assess import uncertainty_along_run
    from robustrack.tracking.rhs import nominal_motion

    sc = load_scenario("triple-pendulum", ["simulation.t_end=0.2", "simulation.n_points=21"])
    pb = sc.build()
    box = ParameterBox.around(pb.nominal, 0.1)
    cert = certify(pb, box, tolerance=0.5, quantities=["max_norm_dq"], budget_s=120)
    b = cert.bounds["max_norm_dq"]
    assert 0 < b.lower <= b.upper
    w = b.witness
    actual = pb.nominal.replace(**{k: np.asarray(v) for k, v in w["params"].items()})
    run = pb.nominal_run()
    y = run.solution(np.array([w["t"]]))
    q, qd = y[:, :3], y[:, 3:]
    Qc = nominal_motion(pb.nominal, pb.constraint, q, qd, np.array([w["t"]])).Qc
    dq = uncertainty_along_run(pb.nominal, actual, q, qd, q, qd, Qc, np.array([w["t"]]))["dq_norm"][0]
    assert dq == pytest.approx(b.lower, rel=1e-9)
    assert np.all(box.flat_lower <= actual.m) and np.all(actual.m <= box.flat_upper)


def test_every_sampled_plant_lies_below_the_certified_bound():
    """A Γ Monte Carlo along the same reference (the gamma command's trajectory) never exceeds U, and neither
    does any sample's ‖M̃ₐ‖∞ (numpy, W 5.3.4)."""
    from robustrack.scenarios.gamma import tracked_trajectory
    from robustrack.tracking.assess import uncertainty_along_run
    from robustrack.uncertainty import estimate_gamma, sample_parameters

    sc = load_scenario("triple-pendulum", ["simulation.t_end=0.2", "simulation.n_points=101"])
    pb = sc.build()
    box = ParameterBox.around(pb.nominal, 0.1)
    cert = certify(pb, box, tolerance=0.5, budget_s=120)
    traj = tracked_trajectory(pb)
    draws = sample_parameters(pb.nominal.m, 300, spread=0.1, seed=3)
    est = estimate_gamma(pb.nominal, traj, draws)
    assert est.exact.max() <= cert.bounds["max_norm_dq"].upper
    corners = np.array(np.meshgrid(*zip(box.flat_lower, box.flat_upper))).reshape(3, -1).T
    for m in np.concatenate([draws.values, corners]):
        mt = uncertainty_along_run(pb.nominal, pb.nominal.replace(m=m), traj.q, traj.qd, traj.q, traj.qd, traj.Qc,
                                   traj.t)["Mtilde_norm"]
        assert mt.max() <= cert.bounds["max_norm_Mtilde"].upper
    # the Monte Carlo's largest value is at most the certificate's supremum: the lower bound is not above it
    assert cert.bounds["max_norm_dq"].lower <= cert.bounds["max_norm_dq"].upper


def test_a_spent_budget_returns_valid_bounds_marked_unfinished(monkeypatch):
    from types import SimpleNamespace

    from robustrack.certification import search

    pb = _pendulum_problem()
    box = ParameterBox.around(pb.nominal, 0.1, "L")
    full = certify(pb, box, tolerance=1e-3, quantities=["max_norm_dq"], budget_s=120).bounds["max_norm_dq"]
    # the search's CPU clock advances 1 s at each reading: the budget is spent at its first reading, whatever the
    # machine's speed (a real 0.05-s budget was met by a fast machine, which settled the 1e-6 gap in 11 cells)
    ticks = iter(range(10**6))
    monkeypatch.setattr(search, "time", SimpleNamespace(process_time=lambda: float(next(ticks))))
    cut = certify(pb, box, tolerance=1e-6, quantities=["max_norm_dq"], budget_s=0.5)
    b = cut.bounds["max_norm_dq"]
    assert not b.finished and not cut.finished
    assert b.upper >= full.lower and b.lower <= full.upper  # still an enclosure of the same supremum
    assert "unfinished" in cut.text()


def test_a_plant_without_symbolic_form_is_refused_with_the_reason():
    from robustrack.plants.base import Plant

    plant = Plant.from_functions(lambda q, m: [[m]], lambda q, qd, m, k: -k * q, params={"m": 1.0, "k": 4.0},
                                 names=["x"], kinds=["length"])
    pb = TrackingProblem(plant, None, None, [0.1], [0.0], (0.0, 1.0), n_points=11)
    with pytest.raises(ParameterError, match="no symbolic form"):
        certify(pb, ParameterBox(("m",), (0.9,), (1.1,)))


def test_bad_settings_are_refused_before_any_work():
    pb = _pendulum_problem()
    box = ParameterBox.around(pb.nominal, 0.1, "L")
    for kwargs, word in [({"tolerance": 0}, "tolerance"), ({"budget_s": -1}, "budget_s"),
                         ({"level": "tube"}, "level"), ({"quantities": ["max_norm_x"]}, "quantities")]:
        with pytest.raises(ParameterError, match=word):
            certify(pb, box, **kwargs)
    with pytest.raises(ParameterError, match="no parameter `mass`"):
        ParameterBox.around(pb.nominal, 0.1, "mass")
    with pytest.raises(ParameterError, match="closed level needs a compensator"):
        certify(pb, box, level="closed")


def test_missing_python_flint_says_how_to_install(monkeypatch):
    import builtins

    real = builtins.__import__

    def no_flint(name, *args, **kwargs):
        if name == "flint":
            raise ImportError("no flint")
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_flint)
    with pytest.raises(ParameterError, match=r"robustrack\[certify\]"):
        certify(_pendulum_problem(), ParameterBox(("L",), (0.9,), (1.1,)))


def test_closed_certificate_on_duffing_tracking_and_an_honest_failure():
    """GSS on the Duffing oscillator at ±10 % on m1, m2: with a Γ above the tube's certified supremum every
    condition of the first-exit argument holds; with Γ below it the Γ condition fails, by the amount printed."""
    sc = load_scenario("duffing-tracking", ["simulation.t_end=0.5", "simulation.n_points=51"])
    pb = sc.build()
    box = ParameterBox.around(pb.nominal, 0.1, ("m1", "m2"))
    cert = certify(pb, box, level="closed", gamma=10.0, tolerance=0.05, budget_s=120)
    assert cert.closed, cert.text()
    assert {c.name for c in cert.conditions} >= {"gamma", "Mtilde", "initial", "defect", "continuous"}
    assert cert.tube == pytest.approx((pb.compensator.bounds(10.0).e, pb.compensator.bounds(10.0).edot))
    # design to the certificate: the bound promised with the certified Γ, said with what is proved
    at = pb.compensator.bounds(cert.gamma_certified)
    assert cert.extras["promised_at_certified_gamma"]["e"] == pytest.approx(at.e)
    assert f"with Γ = {cert.gamma_certified:.6g} (the certified bound)" in cert.text()
    low = cert.bounds["max_norm_dq"].lower
    bad = certify(pb, box, level="closed", gamma=0.5 * low, tolerance=0.05, budget_s=120)
    failed = [c for c in bad.conditions if not c.held]
    assert [c.name for c in failed] == ["gamma"] and not bad.closed
    assert "exceeds by" in failed[0].text and "NOT closed" in bad.text()


def test_cli_certify_prints_the_level_and_refuses_a_urdf_plant(tmp_path, capsys):
    from test_bad_input import cli  # in this process: what `robustrack certify` runs, without ~2.5 s of start-up

    code, out, err = cli(capsys, "certify", "duffing-tracking", "--set", "simulation.t_end=0.3", "--set",
                         "simulation.n_points=31", "--tolerance", "0.2", "--json", tmp_path / "c.json")
    assert code == 0, err
    assert "certified over the box along the nominal motion" in out and "sup ‖δq‖∞ ∈" in out
    import json

    doc = json.loads((tmp_path / "c.json").read_text())
    assert doc["bounds"]["max_norm_dq"]["upper"] >= doc["bounds"]["max_norm_dq"]["lower"] > 0
    code, _, err = cli(capsys, "certify", "ur5-payload")
    assert code == 2 and "cannot be certified" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1, err  # one line, as the process prints it


@pytest.fixture(scope="module")
def duffing_certificate(tmp_path_factory):
    """The box certificate of duffing-tracking on a 0.3-s horizon (±10 %), saved: (certificate, path, overrides)."""
    import json

    from robustrack.scenarios.certify import run_certify

    overrides = ["simulation.t_end=0.3", "simulation.n_points=31"]
    cert = run_certify(load_scenario("duffing-tracking", overrides), 0.1, tolerance=0.2, budget_s=60)
    path = tmp_path_factory.mktemp("cert") / "cert.json"
    path.write_text(json.dumps({"scenario": "duffing-tracking", **cert.to_dict()}, default=float))
    return cert, path, overrides


def test_worst_case_starts_from_the_certificates_lower_bound_plant(tmp_path, duffing_certificate):
    """`worst-case --certificate` puts the certificate's witness in the first population and prints the interval."""
    from robustrack.reports.text import format_worst_case
    from robustrack.scenarios.campaign import run_worst_case

    cert, path, overrides = duffing_certificate
    study = run_worst_case("duffing-tracking", 0.1, budget=5, overrides=overrides, certificate=path, workers=1)
    doc = study.to_dict()
    assert doc["certificate"]["gamma_upper"] == cert.gamma_certified
    assert np.allclose(doc["certificate"]["delta"], cert.bounds["max_norm_dq"].witness["delta"])
    assert "certificate (box level): sup ‖δq‖∞ ∈" in format_worst_case(doc)
    with pytest.raises(ParameterError, match="not a certificate"):
        run_worst_case("duffing-tracking", 0.1, budget=5, overrides=overrides, certificate=tmp_path / "no.json")
    # the montecarlo summary shows the certificate beside the sampled fractions
    out = subprocess.run([sys.executable, "-m", "robustrack.cli", "montecarlo", "duffing-tracking", "--samples", "2",
                          "--workers", "1", "--set", overrides[0], "--set", overrides[1], "--certificate", str(path)],
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    assert "certified over the box (box level): sup ‖δq‖∞ ∈" in out.stdout
    assert "holds for every plant in the box" in out.stdout  # Γ = 10 against U ≈ 0.3 on this short horizon


def test_a_stored_campaigns_summary_checks_the_certificate_against_the_campaign_rebuilt(tmp_path, capsys,
                                                                                       duffing_certificate):
    """`montecarlo --store S --summary --certificate C` rebuilds the stored campaign (scenario, overrides, spread)
    and checks the certificate's fingerprint and box as a running campaign does: not the scenario's name only."""
    from robustrack.cli import main

    _, path, overrides = duffing_certificate
    sets = [a for o in overrides for a in ("--set", o)]
    base = ["montecarlo", "duffing-tracking", "--samples", "1", "--workers", "1"]
    assert main([*base, *sets, "--store", str(tmp_path / "same.sqlite")]) == 0
    other = ["--set", "simulation.t_end=0.25", "--set", overrides[1]]  # another horizon, the same scenario name
    assert main([*base, *other, "--store", str(tmp_path / "other.sqlite")]) == 0
    assert main([*base, *sets, "--spread", "0.3", "--store", str(tmp_path / "wide.sqlite")]) == 0  # ±30 % (issue 54)
    capsys.readouterr()
    assert main(["montecarlo", "--store", str(tmp_path / "wide.sqlite"), "--summary", "--certificate",
                 str(path)]) == 2  # the ±10 % certificate does not cover the stored ±30 % campaign
    err = capsys.readouterr().err
    assert "does not contain the study's [1.4, 2.6] (--spread)" in err and "Traceback" not in err, err
    assert main(["montecarlo", "--store", str(tmp_path / "same.sqlite"), "--summary", "--certificate", str(path)]) == 0
    assert "certified over the box (box level): sup ‖δq‖∞ ∈" in capsys.readouterr().out
    assert main(["montecarlo", "--store", str(tmp_path / "other.sqlite"), "--summary", "--certificate",
                 str(path)]) == 2
    err = capsys.readouterr().err
    assert "`--certificate`" in err and "t_span" in err and "Traceback" not in err, err


def test_ball_functions_contain_every_value_50_digits():
    """The compiled ball functions (powers as products, even powers of a ball around 0, rationals, sin, sqrt,
    Abs, the Coulomb friction's tanh(x / v_s) with v_s = 1e-3) contain the 50-digit value at every sampled point of
    their input balls, an even power of a ball around 0 has no negative part, and tanh across a velocity reversal
    stays within [−1, 1] (arb's own tanh of [±500] is NaN, of [±1] [±5.6]); a function arb cannot enclose is refused
    by name."""
    import mpmath as mp
    import sympy as sp
    from flint import arb

    from robustrack.certification.arb import compile_arb

    x, y = sp.symbols("x y")
    exprs = [x**2, x**3, y / x**2, sp.Rational(1, 3) * sp.sin(x) * y**4, sp.sqrt(y) + sp.Abs(x), sp.cos(x - y) ** 2,
             sp.tanh(1000 * x)]
    f = compile_arb([x, y], exprs)
    mp.mp.dps = 50
    rng = np.random.default_rng(0)
    for xm, xr, ym, yr in [(0.0, 0.5, 2.0, 0.1), (0.3, 0.2, 1.0, 0.5), (-1.0, 0.25, 3.0, 1.0)]:
        balls = f(arb(xm, xr), arb(ym, yr))
        for _ in range(50):
            xs, ys = xm + xr * rng.uniform(-1, 1), ym + yr * rng.uniform(-1, 1)
            if xs == 0:
                continue
            exact = [mp.mpf(xs) ** 2, mp.mpf(xs) ** 3, mp.mpf(ys) / mp.mpf(xs) ** 2,
                     mp.sin(mp.mpf(xs)) * mp.mpf(ys) ** 4 / 3, mp.sqrt(mp.mpf(ys)) + abs(mp.mpf(xs)),
                     mp.cos(mp.mpf(xs) - mp.mpf(ys)) ** 2, mp.tanh(1000 * mp.mpf(xs))]
            for ball, value in zip(balls, exact):
                if ball.is_finite():
                    assert float(ball.lower()) <= float(value) <= float(ball.upper()), (ball, value)
        # within [−1, 1] up to the outward rounding of a ball's radius, kept to 30 bits by arb (2⁻³⁰ ≈ 1e-9)
        tanh = balls[-1]
        assert tanh.is_finite() and -1 - 1e-8 <= float(tanh.lower()) and float(tanh.upper()) <= 1 + 1e-8, tanh
    square = f(arb(0.0, 0.5), arb(1.0))[0]
    assert float(square.lower()) >= -1e-8 and float(square.upper()) >= 0.25
    with pytest.raises(ParameterError, match="besselj"):
        compile_arb([x], [sp.besselj(0, x)])


def test_cheap_lower_bounds_and_the_expansion_agree_with_the_interval_search_within_the_tolerance(monkeypatch):
    """Three searches of sup ‖M̃ₐ‖∞ — the expansion in the parameters with the cheap lower bounds (vertex screened in
    floating point, no point in settled cells), the expansion with every vertex in arb in every cell, and the
    interval form of before — each stop at U ≤ (1 + tol) L with L ≤ sup ≤ U, so any two satisfy U_a ≤ (1 + tol) U_b
    and L_a ≥ L_b / (1 + tol); the expansion needs a fraction of the cells. The float screen agrees with the arb
    value at every vertex to double rounding (a 3 × 3 solve: 1e-12 relative)."""
    import robustrack.certification.certificate as C
    import robustrack.certification.model as MM
    import robustrack.certification.search as S
    from robustrack.certification.model import EnclosureModel, Interpolant, state_cell

    pb = load_scenario("triple-pendulum", ["simulation.t_end=0.1", "simulation.n_points=11"]).build()
    box = ParameterBox.around(pb.nominal, 0.1)
    run = pb.nominal_run()
    tol = 0.1
    fast = certify(pb, box, tolerance=tol, run=run, quantities=["max_norm_Mtilde"]).bounds["max_norm_Mtilde"]
    monkeypatch.setattr(C, "SCREEN", False)
    monkeypatch.setattr(S, "SKIP_SETTLED", False)
    plain = certify(pb, box, tolerance=tol, run=run, quantities=["max_norm_Mtilde"]).bounds["max_norm_Mtilde"]
    monkeypatch.setattr(C, "SCREEN", True)
    monkeypatch.setattr(S, "SKIP_SETTLED", True)
    monkeypatch.setattr(MM, "EXPAND", False)
    interval = certify(pb, box, tolerance=tol, run=run, quantities=["max_norm_Mtilde"]).bounds["max_norm_Mtilde"]
    for a in (fast, plain, interval):
        assert a.finished and a.gap <= tol / (1 + tol)
        for b in (fast, plain, interval):
            assert a.lower <= b.upper and a.upper <= (1 + tol) * b.upper and a.lower >= b.lower / (1 + tol)
    assert fast.evaluations < interval.evaluations / 2
    model = EnclosureModel(pb, box)
    ip = Interpolant.of(run.solution)
    lo, hi = box.flat_lower - model.nominal_d, box.flat_upper - model.nominal_d
    corners = np.array(np.meshgrid(*zip(lo, hi))).reshape(3, -1).T
    from flint import arb

    for k in (0, ip.n_steps // 2, ip.n_steps - 1):
        point = state_cell(ip, k, 0.0, 1.0).point
        screen = model.mtilde_screen(point, corners)
        for d, s in zip(corners, screen):
            Mt = model.mtilde_point(point, [arb(float(v)) for v in d])
            exact = max(sum(abs(float(Mt[i, j].mid())) for j in range(3)) for i in range(3))
            assert s == pytest.approx(exact, rel=1e-12)


def test_the_mtilde_expansion_encloses_sampled_plants_times_and_tube_errors_tighter_than_the_interval_form():
    """The expansion of M̃ₐ in the parameters (docs/theory/certificate.md) on cells of a search's size — an eighth of
    a step × a half or the whole ±10 % box, and the same over a tube of errors: numpy's ‖M̃ₐ‖∞ and ‖M_a⁻¹M‖∞ (the
    plant's own mass matrices, np.linalg.solve) at sampled times, plants (vertices too) and errors never exceed its
    bounds; and its bound is below the interval form's on every such cell."""
    import robustrack.certification.certificate as C
    from robustrack.certification.model import EnclosureModel, Interpolant

    pb = load_scenario("triple-pendulum", ["simulation.t_end=0.2", "simulation.n_points=21"]).build()
    box = ParameterBox.around(pb.nominal, 0.1)
    run = pb.nominal_run()
    model = EnclosureModel(pb, box)
    assert model.expandable
    ip = Interpolant.of(run.solution)
    ev = C._Evaluator(model, ip, box, None)
    lo, hi = box.flat_lower - model.nominal_d, box.flat_upper - model.nominal_d
    rng = np.random.default_rng(7)
    tube = (2e-3, 5e-2)
    for k in (0, ip.n_steps // 2, ip.n_steps - 1):
        for x0, half in ((0.0, True), (0.5, False), (0.875, True)):
            cell = ev.light(k, x0, x0 + 0.125)
            a, b = (lo, 0.5 * (lo + hi)) if half else (lo, hi)
            D = ev.balls(a, b)
            Mt = model.mtilde(cell, D)
            interval = C._row_sum(Mt, True)
            expanded = model.mtilde_expansion(cell, D)[0]
            assert expanded < interval
            inverse = model.mtilde_expansion(cell, D, inverse_ratio=True)[0]
            tubed = model.mtilde_expansion(cell, D, tube)[0]
            t0, t1 = ip.t[k], ip.t[k + 1]
            t = t0 + (t1 - t0) * np.concatenate([[x0, x0 + 0.125], rng.uniform(x0, x0 + 0.125, 6)])
            q = run.solution(t)[:, :3]
            ds = np.concatenate([np.array(np.meshgrid(*zip(a, b))).reshape(3, -1).T, rng.uniform(a, b, (6, 3))])
            for d in ds:
                actual = pb.nominal.replace(m=pb.nominal.m + d)
                for qs, bound in ((q, expanded), (q + rng.uniform(-1, 1, q.shape) * tube[0], tubed)):
                    Ma, M = actual.mass_matrix(qs), pb.nominal.mass_matrix(qs)
                    ratio = np.linalg.solve(Ma, M)
                    assert np.abs(np.eye(3) - ratio).sum(axis=-1).max() <= bound
                    if bound is expanded:
                        assert np.abs(ratio).sum(axis=-1).max() <= inverse


def test_the_norm_and_vertex_bounds_contain_every_sampled_member():
    """The floating-point pieces of the expansion: ‖X‖₂ of every symmetric X in a box of matrices is below
    _sym_norm's bound; the row sums of a multilinear function plus its remainder, at sampled points of the box,
    below _vertex_row_sums's."""
    from robustrack.certification.model import _expansion_signs, _sym_norm, _vertex_row_sums

    rng = np.random.default_rng(11)
    Xm = rng.normal(size=(20, 4, 4))
    Xm = 0.5 * (Xm + np.swapaxes(Xm, 1, 2))
    Xr = 0.05 * rng.uniform(size=(20, 4, 4))
    Xr = 0.5 * (Xr + np.swapaxes(Xr, 1, 2))
    bound = _sym_norm(Xm, Xr)
    for _ in range(30):
        E = rng.uniform(-1, 1, Xm.shape) * Xr
        X = Xm + 0.5 * (E + np.swapaxes(E, 1, 2))
        assert np.all(np.linalg.norm(X, 2, axis=(1, 2)) <= bound)
    assert np.all(bound <= np.linalg.norm(Xm, 2, axis=(1, 2)) + 2 * np.abs(Xr).sum(axis=(1, 2)))  # and not loose
    n, k = 3, 2
    m, r = rng.normal(size=(n, n)), np.array([0.3, 0.1, 0.2])
    g, h = rng.normal(size=(k + 1, n, n)), rng.normal(size=(k, n, n))
    rad = 0.01 * rng.uniform(size=(1 + 2 * k, n, n))
    scale = np.concatenate([r, r[0] * r[1:]])[:, None, None]
    coef = np.concatenate([g, h]) * scale
    top = _vertex_row_sums(m, np.zeros((n, n)), coef, rad * scale, _expansion_signs(k), np.zeros((n, n)))
    for _ in range(200):
        z = rng.uniform(-1, 1, 1 + k) * r
        val = m + np.tensordot(z, g, axes=1) + np.tensordot(z[0] * z[1:], h, axes=1)
        val += rng.uniform(-1, 1, (n, n)) * (rad[:1 + k] * np.abs(z)[:, None, None]).sum(0)
        val += rng.uniform(-1, 1, (n, n)) * (rad[1 + k:] * np.abs(z[0] * z[1:])[:, None, None]).sum(0)
        assert np.all(np.abs(val).sum(axis=1) <= top)


def test_the_delta_q_expansion_encloses_sampled_plants_and_times_tighter_than_the_centred_form(monkeypatch):
    """δq expanded in the parameters (docs/theory/certificate.md) on cells of a search's size: the toolbox's own numpy
    ‖δq‖∞ (assess.uncertainty_along_run along nominal_run()) at sampled times and plants (vertices too) never exceeds
    its bound, which is below the centred form's on every such cell."""
    import robustrack.certification.certificate as C
    import robustrack.certification.model as MM
    from robustrack.certification.model import EnclosureModel, Interpolant
    from robustrack.tracking.assess import uncertainty_along_run
    from robustrack.tracking.rhs import nominal_motion

    pb = load_scenario("triple-pendulum", ["simulation.t_end=0.2", "simulation.n_points=21"]).build()
    box = ParameterBox.around(pb.nominal, 0.1)
    run = pb.nominal_run()
    model = EnclosureModel(pb, box)
    assert model.dq_expandable
    ip = Interpolant.of(run.solution)
    ev = C._Evaluator(model, ip, box, None)
    lo, hi = box.flat_lower - model.nominal_d, box.flat_upper - model.nominal_d
    rng = np.random.default_rng(3)
    for k in (0, ip.n_steps // 2, ip.n_steps - 1):
        for x0, half in ((0.0, True), (0.5, False), (0.875, True)):
            cell = ev.cell(k, x0, x0 + 0.125)
            a, b = (lo, 0.5 * (lo + hi)) if half else (lo, hi)
            D = ev.balls(a, b)
            monkeypatch.setattr(MM, "EXPAND", True)
            expanded = max(float(x.abs_upper()) for x in model.dq(cell, D))
            monkeypatch.setattr(MM, "EXPAND", False)
            centred = max(float(x.abs_upper()) for x in model.dq(cell, D))
            assert expanded < centred
            t0, t1 = ip.t[k], ip.t[k + 1]
            t = t0 + (t1 - t0) * np.concatenate([[x0, x0 + 0.125], rng.uniform(x0, x0 + 0.125, 6)])
            y = run.solution(t)
            q, qd = y[:, :3], y[:, 3:]
            Qc = nominal_motion(pb.nominal, pb.constraint, q, qd, t).Qc
            ds = np.concatenate([np.array(np.meshgrid(*zip(a, b))).reshape(3, -1).T, rng.uniform(a, b, (6, 3))])
            for d in ds:
                actual = pb.nominal.replace(m=pb.nominal.m + d)
                got = uncertainty_along_run(pb.nominal, actual, q, qd, q, qd, Qc, t)["dq_norm"]
                assert got.max() <= expanded
