"""``tune`` verifies over the declared uncertainty, and a user's plant declares its Γ (issue 53, item 2).

The plant of the verification tests is the user's own one-link pendulum of conftest (``PENDULUM``: m = 1.5 kg, L = 1
m) with a named mass range: its M = m L² is a number, so ‖M̃ₐ‖∞ = |m/mₐ − 1| in closed form (M̃ₐ = M Mₐ⁻¹ − I), the
independent truth of which corner breaks ‖M̃ₐ‖∞ ≤ 1 − α0/σ = 0.5: mₐ = 0.6 gives 1.5, mₐ = 2.4 gives 0.375.
"""

import itertools
import re
import tomllib
from importlib import resources

import numpy as np
import pytest

from robustrack.errors import ParameterError, ScenarioError

#: a named mass range wide enough that its low end breaks the ‖M̃ₐ‖ assumption; a sampled, sensed loop
SENSED = '''[uncertainty]
gamma = 40.0

[uncertainty.parameters.m]
range = [0.6, 2.4]

[compensator]
type = "gss"
f = "saturation"
eps = 0.001
sample_period = 1e-3

[compensator.gss]
gamma_prime = 40.0

[sensor]
q_noise = 1e-5
velocity = "difference"

[simulation]
t_end = 0.1
'''


def _mtilde(m_actual, m=1.5):
    """‖M̃ₐ‖∞ of the one-link pendulum: |M/Mₐ − 1| (M = m L², the same L)."""
    return abs(m / m_actual - 1.0)


def test_the_verified_plants_are_the_boxs_corners_then_the_campaigns_draws():
    from robustrack.campaigns import ParameterUncertainty
    from robustrack.campaigns.box_verification import verification_plants
    from robustrack.plants.pendulum import triple_pendulum

    plant = triple_pendulum()
    m = np.asarray(plant.m, dtype=float)
    unc = ParameterUncertainty(parameter="m", spread=0.1, seed=3)
    plants, note = verification_plants(unc, plant, corners=8, samples=2)
    # every sign pattern of ±10 % of each mass, once (built here from the spread, not from the box)
    want = {tuple(np.array(s) * 0.1 * m) for s in itertools.product((-1.0, 1.0), repeat=m.size)}
    corners = [tuple(dm) for label, dm, _ in plants if label.startswith("corner")]
    assert note is None and len(corners) == 8 and set(corners) == want
    assert corners[0] == tuple(-0.1 * m) and corners[1] == tuple(0.1 * m)  # all-low, all-high first
    # then the campaign's first draws of that seed, with their own indices (their own sensor noise)
    drawn = [dm for label, dm, _ in plants if label.startswith("sample")]
    assert np.array_equal(np.array(drawn), unc.draw(plant, 2))
    assert [i for *_, i in plants] == list(range(10))
    fewer, note = verification_plants(unc, plant, corners=3, samples=0)
    assert len(fewer) == 3 and note == "3 of the box's 8 corners run (the all-low and all-high first)"
    with pytest.raises(ParameterError, match="`corners`"):
        verification_plants(unc, plant, corners=-1)


def test_a_design_that_holds_on_the_actual_plant_is_rejected_at_the_corner_that_breaks_it(pendulum_scenario):
    from robustrack.campaigns.box_verification import verify_design
    from robustrack.scenarios import load_scenario
    from robustrack.scenarios.campaign import campaign_uncertainty

    sc = load_scenario(pendulum_scenario(SENSED))
    pb = sc.build()
    r = pb.simulate()  # the scenario's actual plant (the nominal one here): the design holds, assumptions too
    assert r.metrics.bounds_held and r.metrics.assumptions_held
    unc = campaign_uncertainty(sc, None, 0)
    plants, note = verify_design(pb, unc, corners=2, samples=1)
    (low,) = plants  # the all-low corner comes first and stops the verification
    assert low.values == {"m": 0.6} and low.label == "corner 1 of 2"
    # its ‖M̃ₐ‖∞ is the closed form (the run measures it along the motion; rounding only)
    assert low.record.max_norm_Mtilde == pytest.approx(_mtilde(0.6), rel=1e-9)
    assert low.broke == "the bound's assumption ‖M̃ₐ‖∞ ≤ 1 − α0/σ failed: 1.5 > 0.5"
    # the high end alone holds (|1.5/2.4 − 1| = 0.375 < 0.5)
    high = load_scenario(pendulum_scenario(SENSED.replace("range = [0.6, 2.4]", "range = [1.5, 2.4]")))
    plants, _ = verify_design(high.build(), campaign_uncertainty(high, None, 0), corners=2, samples=0)
    assert [p.broke for p in plants] == [None, None] and _mtilde(2.4) < 0.5


def _one_candidate(monkeypatch):
    """A search of one candidate (its order is not under test)."""
    from robustrack.campaigns import sensed_design

    monkeypatch.setattr(sensed_design, "EPSILONS", (1e-3,))
    monkeypatch.setattr(sensed_design, "GAIN_STEPS", ((1.0,), (1.0,)))
    monkeypatch.setattr(sensed_design, "CUTOFFS", ())
    return sensed_design


def test_a_box_whose_mtilde_reaches_one_is_said_not_guaranteed_before_any_candidate_runs(pendulum_scenario,
                                                                                          monkeypatch):
    from robustrack.scenarios import load_scenario
    from robustrack.scenarios.campaign import campaign_uncertainty

    sensed_design = _one_candidate(monkeypatch)
    sc = load_scenario(pendulum_scenario(SENSED))
    pb, unc = sc.build(), campaign_uncertainty(sc, None, 0)
    # one run of the actual plant (the nominal one) accepts the candidate, its bound guaranteed
    alone = sensed_design.design_for_sensor(pb, max_runs=1)
    assert alone.held and alone.bounds.coverage.startswith("guaranteed") and alone.no_guarantee is None
    said = []
    design = sensed_design.design_for_sensor(pb, max_runs=1, uncertainty=unc, corners=2, samples=0,
                                             progress=said.append)
    # the corner m = 0.6 reaches |1.5/0.6 − 1| = 1.5 ≥ 1: no α0 makes the bound a theorem over the box (said first)
    assert design.box.mtilde == pytest.approx(_mtilde(0.6), rel=1e-9) and design.box.mtilde_at == {"m": 0.6}
    assert design.no_guarantee.startswith("‖M̃ₐ‖∞ reaches 1.5 at m = 0.6 along the nominal motion")
    assert said[0].startswith("the box's 2 corners along the nominal motion: max ‖M̃ₐ‖∞ 1.5 (m = 0.6)")
    assert "not guaranteed over the box" in said[0]
    # α0 then only scales the gain: searched at the declared 0.5 and OBSERVED_ALPHA0
    assert design.gains.get("alpha0", 0.5) in (0.5, *sensed_design.OBSERVED_ALPHA0)
    assert design.bounds.coverage.startswith("not guaranteed over the declared box")
    # verified by observation: the low corner's run broke the assumption (measured along it) and is not rejected
    low, high = design.verified
    assert low.record.assumptions_held is False and low.broke is None and low.record.held
    mu = 1.0 - design.gains.get("alpha0", 0.5)  # σ = 1
    assert high.record.assumptions_held is (_mtilde(2.4) <= mu) and high.broke is None


def test_alpha0_is_lowered_to_cover_the_boxs_mtilde_below_one(pendulum_scenario, monkeypatch):
    from robustrack.scenarios import load_scenario
    from robustrack.scenarios.campaign import campaign_uncertainty

    sensed_design = _one_candidate(monkeypatch)
    # Γ = 4 (the pendulum's δq is 0: Qᶜ = 0 and its a = −(g/L) sin θ has no m), so that σβ (1 − μ) with μ = 0.75
    # still dominates it in the 1-kHz loop
    sc = load_scenario(pendulum_scenario(SENSED.replace("range = [0.6, 2.4]", "range = [0.9, 2.4]")
                                         .replace("gamma = 40.0", "gamma = 4.0")
                                         .replace("gamma_prime = 40.0", "gamma_prime = 4.0")))
    pb, unc = sc.build(), campaign_uncertainty(sc, None, 0)
    design = sensed_design.design_for_sensor(pb, max_runs=1, uncertainty=unc, corners=2, samples=0)
    m = _mtilde(0.9)  # 2/3 > the declared μ = 1 − α0/σ = 0.5, below 1
    assert design.box.mtilde == pytest.approx(m, rel=1e-9) and design.no_guarantee is None
    # α0 = σ (1 − ROOM)(1 − m): μ = m + ROOM (1 − m), the room the controlled motion may use
    want = 1.0 * (1.0 - sensed_design.ROOM) * (1.0 - m)
    assert design.gains["alpha0"] == pytest.approx(want, rel=1e-9)
    assert f"compensator.gss.alpha0={design.gains['alpha0']!r}" in design.overrides()
    # the verification judged the assumption with the new μ, on both corners
    assert [p.broke for p in design.verified] == [None, None]
    assert all(p.record.assumptions_held for p in design.verified)
    # a declared μ that already covers the box is kept
    kept = load_scenario(pendulum_scenario(SENSED.replace("range = [0.6, 2.4]", "range = [1.2, 2.4]")))
    design = sensed_design.design_for_sensor(kept.build(), max_runs=1, uncertainty=campaign_uncertainty(kept, None, 0),
                                             corners=2, samples=0)
    assert "alpha0" not in design.gains  # 0.375 at m = 2.4, 0.25 at m = 1.2: both ≤ 0.5
    assert design.box.mtilde == pytest.approx(_mtilde(2.4), rel=1e-9) and design.box.mtilde_at == {"m": 2.4}


def test_a_gamma_below_the_corners_dq_is_refused_before_any_candidate_runs(monkeypatch):
    from robustrack.campaigns import ParameterUncertainty
    from robustrack.campaigns.box_verification import box_assumptions
    from robustrack.loop import Sensor
    from robustrack.scenarios import load_scenario
    from robustrack.tracking.rhs import nominal_motion

    sensed_design = _one_candidate(monkeypatch)
    pb = load_scenario("triple-pendulum", ["simulation.t_end=0.5", "simulation.n_points=11"]).build()
    unc = ParameterUncertainty(parameter="m", spread=0.1, seed=0)
    run = pb.nominal_run()
    box = box_assumptions(pb, unc, run, corners=2)
    # δq = M_a⁻¹(Q_a + Qᶜ) − M⁻¹(Q + Qᶜ) at q_c = q (W 5.3.5) and M̃ₐ = I − M_a⁻¹M (W 5.3.4), by hand on the grid the
    # docstring names (the solver's steps and 201 even times), at the two corners ±10 % of every mass
    sol, n = run.solution, pb.n
    t = np.unique(np.concatenate([sol.t, np.linspace(sol.t[0], sol.t[-1], 201)]))
    y = sol(t)
    q, qd = y[:, :n], y[:, n:]
    Qc = nominal_motion(pb.nominal, pb.constraint, q, qd, t).Qc
    dq, mt = [], []
    for sign in (-1.0, 1.0):
        actual = pb.nominal.replace(m=np.asarray(pb.nominal.m) * (1 + sign * 0.1))
        M, Ma = pb.nominal.mass_matrix(q, t), actual.mass_matrix(q, t)
        F, Fa = pb.nominal.given_force(q, qd, t) + Qc, actual.given_force(q, qd, t) + Qc
        d = np.linalg.solve(Ma, Fa[..., None])[..., 0] - np.linalg.solve(M, F[..., None])[..., 0]
        dq.append(np.abs(d).max())
        mt.append(np.abs(np.eye(n) - np.linalg.solve(Ma, M)).sum(axis=-1).max())
    # the same arithmetic in another order: rounding of ~10 operations on O(10²) numbers
    assert box.dq == pytest.approx(max(dq), rel=1e-12) and box.mtilde == pytest.approx(max(mt), rel=1e-12)
    low = pb.replace(gamma=0.5 * box.dq, sample_period=1e-3, sensor=Sensor(q_noise=1e-6, velocity="difference"))
    with pytest.raises(ParameterError, match=r"the declared Γ = .* is below max ‖δq‖∞ = .* at m = .*"
                                             r"`uncertainty.gamma`"):
        sensed_design.design_for_sensor(low, max_runs=1, uncertainty=unc, corners=2, samples=0)


def test_a_plant_whose_demanded_torque_exceeds_its_limit_breaks_the_design():
    from robustrack.campaigns import ParameterUncertainty
    from robustrack.campaigns.box_verification import verify_design
    from robustrack.scenarios import load_scenario

    short = ["simulation.t_end=0.05", "simulation.n_points=11", "simulation.uncompensated=false",
             "compensator.f=tanh", "compensator.eps=0.1"]
    free = load_scenario("triple-pendulum", short).build()
    unc = ParameterUncertainty(parameter="m", spread=0.1, seed=0)
    (first,), _ = verify_design(free, unc, corners=1, samples=0)
    assert first.broke is None or "torque" not in first.broke  # no limits: nothing to exceed
    # one motor per joint; the joint that demanded most at the all-low corner (its run without limits: Qᶜ + Qᵘ)
    # limited to half of that, the others far above
    peak = free.replace(actual=unc.actual(free.nominal, np.ravel(unc.box(free.nominal)[0]))).simulate()
    demand = np.abs(peak.Qc + peak.Qu).max(axis=0)
    j = int(np.argmax(demand))
    limits = [1e9] * 3
    limits[j] = float(0.5 * demand[j])
    limited = load_scenario("triple-pendulum", short + ["actuators.B=[[1,0,0],[0,1,0],[0,0,1]]",
                                                        f"actuators.tau_max={limits!r}"]).build()
    (first,), _ = verify_design(limited, unc, corners=1, samples=0)
    assert first.broke.startswith(f"torque over the effort limit: {limited.nominal.coordinates[j]} demanded ")
    assert first.record.max_abs_tau[j] > limits[j] and first.broke.count("demanded") == 1


# ------------------------------------------------------------------------------------------------ Γ declared
def test_a_user_plant_without_gamma_is_refused_with_the_key_and_the_command(pendulum_scenario, capsys):
    from robustrack._format import format_value
    from robustrack.cli import main
    from robustrack.scenarios import load_scenario
    from robustrack.scenarios.declared_gamma import gamma_unset
    from robustrack.scenarios.gamma import run_gamma
    from robustrack.scenarios.toml_writer import scenario_toml

    text = SENSED.replace("gamma = 40.0\n", "")
    path = pendulum_scenario(text)
    sc = load_scenario(path)
    assert gamma_unset(sc.config)
    # (the commands it gives take the file: the scenario is not in the catalog)
    with pytest.raises(ScenarioError,
                       match=rf"declares no Γ \(`uncertainty.gamma`.*`robustrack gamma {re.escape(path)}`"):
        sc.build()
    assert main(["run", path]) == 2
    err = capsys.readouterr().err
    assert "`uncertainty.gamma`" in err and "Traceback" not in err
    # the command it names computes Γ′ from the declared range; set, the scenario builds and is judged at it
    # (without a constraint Qᶜ = 0 and the pendulum's q̈ = −g/L sin θ does not depend on m: δq = 0 to rounding)
    gamma = run_gamma(path, 20, seed=1).gamma_prime
    assert 0 <= gamma <= 1e-12
    assert main(["gamma", path, "--samples", "20", "--seed", "1"]) == 0  # on the command line, with its unit
    assert f"= {format_value(gamma)} [q]/s²" in capsys.readouterr().out
    assert load_scenario(path, [f"uncertainty.gamma={gamma!r}"]).build().gamma == gamma
    # written out, the undeclared key is left out: the file reads back undeclared (not `nan`, which is refused)
    written = scenario_toml(sc)
    assert "gamma = nan" not in written and "\ngamma = " not in written.split("[uncertainty]")[1].split("[")[0]
    # the factory's own compensator keeps its design value (type = "problem": unchanged)
    assert not gamma_unset(load_scenario(pendulum_scenario("")).config)


def test_a_urdf_robot_without_gamma_is_refused_and_the_catalogs_gammas_are_unchanged():
    from robustrack.scenarios import load_scenario
    from robustrack.scenarios.declared_gamma import gamma_unset

    catalog = resources.files("robustrack.scenarios") / "catalog"
    declared = {}
    for item in catalog.iterdir():
        if item.name.endswith(".toml"):
            data = tomllib.loads(item.read_text(encoding="utf-8"))
            if "gamma" in data.get("uncertainty", {}):
                declared[data["scenario"]["name"]] = float(data["uncertainty"]["gamma"])
    assert {"triple-pendulum", "ur5-payload", "ur5-payload-sensed", "ur5-friction"} <= set(declared)
    for name, value in declared.items():  # the value typed in the file, read by the loader unchanged
        assert load_scenario(name).config["uncertainty"]["gamma"] == value, name
    # the seed's kinds keep the seed's defaults (W's Γ = 100 for the pendulum, our 10 for the Duffing oscillator)
    assert load_scenario("triple-pendulum").spec.schema["uncertainty"]["gamma"] == 100.0
    assert load_scenario("duffing-tracking").spec.schema["uncertainty"]["gamma"] == 10.0
    # a robot scenario that leaves it out is refused before the robot is read
    text = (catalog / "ur5-payload.toml").read_text(encoding="utf-8")
    lines = [line for line in text.splitlines() if not line.startswith("gamma =")]
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "my-arm.toml"
        path.write_text("\n".join(lines).replace('name = "ur5-payload"', 'name = "my-arm"'), encoding="utf-8")
        sc = load_scenario(str(path))
        assert gamma_unset(sc.config)
        with pytest.raises(ScenarioError, match=f"`robustrack gamma {re.escape(str(path))}`"):
            sc.build()


def test_tune_of_ur5_payload_sensed_holds_on_every_verified_plant_of_its_payload_range(tmp_path, capsys):
    # slow tier (tests/tiers.py): the UR5's whole design search, each candidate on 5 plants (~30-90 s)
    pytest.importorskip("pinocchio")
    import json

    from robustrack.cli import main
    from robustrack.scenarios import load_scenario
    from robustrack.scenarios.parameter_shift import DEFAULT_SPREAD
    from robustrack.tracking.actuators import effort_limits

    out = tmp_path / "design.json"
    assert main(["tune", "ur5-payload-sensed", "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "held on every verified plant of the declared uncertainty (5)" in printed
    doc = json.loads(out.read_text(encoding="utf-8"))
    plants = doc["verified"]
    # the box: the older list's uniform ±10 % of the file's 2-kg payload, its two ends first, then 3 draws
    sc = load_scenario("ur5-payload-sensed")
    mass = sc.config["plant"]["payload_mass"]
    ends = [p["values"]["payload_mass"] for p in plants[:2]]
    assert ends == pytest.approx([mass * (1 - DEFAULT_SPREAD), mass * (1 + DEFAULT_SPREAD)], rel=1e-12)
    assert len(plants) == 5 and len({p["sensor_seed"] for p in plants[2:]}) == 3
    limits = effort_limits(sc.build())
    for p in plants:  # each: held, its assumptions held, inside every joint's effort limit
        assert p["held"] and p["assumptions_held"] is True and p["max_abs_e"] <= doc["bounds"]["e"]
        assert np.all(np.array(p["max_abs_tau"]) <= limits)


def test_tune_to_a_target_is_not_proposed_when_a_corner_breaks_it(pendulum_scenario):
    from robustrack.reports.text import format_tune
    from robustrack.scenarios.campaign import run_tune

    # continuous GSS on the wide range; the Monte Carlo's 2 plants (seed 1) both hold their assumptions — the corner
    # alone rejects the gains
    text = SENSED.replace("sample_period = 1e-3", "sample_period = 0.0")
    path = pendulum_scenario(text[:text.index("[sensor]")] + text[text.index("[simulation]"):])
    doc = run_tune(path, target_e=5e-2, compensator="gss", gamma=40.0, samples=2, seed=1, workers=1,
                   progress=None).to_dict()
    assert doc["verification"]["assumptions"]["failed"] == 0
    low = doc["corners"][-1]
    assert [c["values"] for c in doc["corners"]] == [{"m": 0.6}] and low["broke"].endswith(
        "‖M̃ₐ‖∞ ≤ 1 − α0/σ failed: 1.5 > 0.5")
    assert not doc["proposed"]
    assert "corner 1 of 2 (m = 0.6) breaks it: the bound's assumption" in doc["not_proposed_because"]
    assert "corners of the declared box: 0 held; corner 1 of 2 (m = 0.6) broke it" in format_tune(doc)
    assert _mtilde(0.6) == pytest.approx(1.5)


def test_the_panda_catalog_design_is_not_guaranteed_over_its_payload_range_and_says_why():
    pytest.importorskip("pinocchio")
    from robustrack.campaigns.box_verification import box_assumptions
    from robustrack.scenarios import load_scenario
    from robustrack.scenarios.campaign import campaign_uncertainty

    sc = load_scenario("panda-payload-sensed", ["simulation.t_end=0.2", "simulation.n_points=3"])
    pb = sc.build()
    box = box_assumptions(pb, campaign_uncertainty(sc, None, 0), corners=2)
    # the truth at t = 0 (on the grid): I − M_a⁻¹M at the home posture, the 0-kg arm against the 1.5-kg nominal,
    # from two plants built here; the max over the motion is at least that
    q0 = np.asarray(pb.q0, dtype=float)
    light = pb.nominal.replace(payload_mass=0.0)
    at_home = np.abs(np.eye(pb.n) - np.linalg.solve(light.mass_matrix(q0, 0.0), pb.nominal.mass_matrix(q0, 0.0)))
    assert at_home.sum(axis=1).max() > 1.0  # no α0 in (0, 1) covers it: the catalog's header says "not guaranteed"
    assert box.mtilde >= at_home.sum(axis=1).max() * (1 - 1e-12) and box.mtilde_at == {"payload_mass": 0.0}
    assert box.dq <= pb.gamma  # its Γ (`robustrack gamma`: p99 × 1.2) covers the corners
