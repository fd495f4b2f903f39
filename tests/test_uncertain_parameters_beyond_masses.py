"""Named uncertain parameters beyond masses (issue 42): entries of array parameters (a pendulum's lengths, a URDF
robot's centres of mass), friction coefficients, certificates over a named set, the python kind's [actual] table.

Kept short for CI: horizons of a few tenths of a second and a handful of samples (each test says what its
numbers are), one URDF robot per module.
"""

import numpy as np
import pytest

from robustrack.campaigns import ParameterUncertainty
from robustrack.errors import ParameterError
from robustrack.plants import NLinkPendulum
from robustrack.uncertainty import UncertainParameter
from robustrack.uncertainty import actual_plant, estimate_gamma, parameter_values, uncertainty_acceleration


class _Motion:  # three states of a nominal motion with velocities, Qᶜ = 0 (δq needs no more)
    t = np.array([0.0, 0.5, 1.0])
    q = np.array([[0.1, -1.2, 1.4, -1.5, -1.57, 0.3], [0.2, -1.1, 1.3, -1.4, -1.5, 0.4], [0.3, -1.0, 1.2, -1.3, -1.4, 0.5]])
    qd = np.full((3, 6), 0.2)
    Qc = np.zeros((3, 6))


def _dq_by_hand(nominal, actual, motion):
    """max_t ‖δq‖∞ of one actual plant along the motion (W 5.3.5 at q_c = q), plant by plant."""
    M, Q = nominal.mass_matrix(motion.q, motion.t), nominal.given_force(motion.q, motion.qd, motion.t)
    dq = uncertainty_acceleration(M, Q, motion.Qc, actual.mass_matrix(motion.q, motion.t),
                                  actual.given_force(motion.q, motion.qd, motion.t))
    return float(np.abs(dq).max())


# --------------------------------------------------------------------------- entries of array parameters
def test_an_entry_of_an_array_parameter_is_a_named_number():
    plant = NLinkPendulum(m=(1.0, 2.0, 3.0), L=(1.0, 1.5, 2.0), g=9.81)
    assert plant.parameter_components()["L2"] == ("L", 1)
    assert parameter_values(plant, ("m1", "L3")).tolist() == [1.0, 2.0]
    actual = actual_plant(plant, dm=(0.1, -0.2), parameter=("m1", "L3"))
    assert actual.m.tolist() == [1.1, 2.0, 3.0] and actual.L.tolist() == [1.0, 1.5, 1.8]
    # the Γ Monte Carlo replaces the entries sample by sample in one array operation: the same δq as plant by plant
    motion = type("M", (), {"t": _Motion.t, "q": _Motion.q[:, :3], "qd": _Motion.qd[:, :3], "Qc": np.zeros((3, 3))})
    draws = np.array([[1.1, 1.9], [0.9, 2.1], [1.0, 2.05]])
    est = estimate_gamma(plant, motion, draws, parameter=("m1", "L3"))
    for row, got in zip(draws, est.exact):
        by_hand = _dq_by_hand(plant, actual_plant(plant, params={"m": [row[0], 2.0, 3.0], "L": [1.0, 1.5, row[1]]}),
                              motion)
        assert got == pytest.approx(by_hand, rel=1e-12)
    with pytest.raises(ParameterError, match=r"no parameter `L4`.*entries of its arrays \(m1, m2"):
        parameter_values(plant, ("m1", "L4"))
    with pytest.raises(ParameterError, match=r"`L` is an array .*name its entries \(as L1, L2, L3\)"):
        parameter_values(plant, ("L", "L2"))


# --------------------------------------------------------------------------- a URDF robot's centres of mass
@pytest.fixture(scope="module")
def ur5():
    pytest.importorskip("pinocchio")
    from robustrack.plants.urdf import URDFPlant, example_robot_urdf

    path = example_robot_urdf("ur5")
    return path, URDFPlant(path, payload_mass=2.0, payload_com=(0.0, 0.0, 0.05))


def test_a_sampled_centre_of_mass_moves_m_as_pinocchio_says(ur5):
    import pinocchio as pin

    path, arm = ur5
    unc = ParameterUncertainty(parameters=[
        UncertainParameter("payload_com_z", 0.05, range=(0.0, 0.15)),
        UncertainParameter("com_forearm_link_x", 0.0, range=(-0.05, 0.05), sigma=0.02)], seed=1)
    dm = unc.draw(arm, 3)
    actual = unc.actual(arm, dm[1], 1)
    assert actual.params["payload_com"].tolist() == [0.0, 0.0, 0.05 + dm[1, 0]]
    # Pinocchio's own model of that plant: the forearm's inertia moved to its new centre of mass (its rotational
    # inertia about the centre of mass kept), and the payload a point mass at its centre of mass in tool0
    model = pin.buildModelFromUrdf(path)
    j = model.getJointId("elbow_joint")
    body = model.inertias[j]
    model.inertias[j] = pin.Inertia(body.mass, body.lever + [dm[1, 1], 0.0, 0.0], body.inertia)
    tool = model.frames[model.getFrameId("tool0")]
    model.inertias[tool.parentJoint] = model.inertias[tool.parentJoint] + pin.Inertia(
        2.0, tool.placement.act(np.array([0.0, 0.0, 0.05 + dm[1, 0]])), np.zeros((3, 3)))
    q = _Motion.q[0]
    M = pin.crba(model, model.createData(), q)
    M = np.triu(M) + np.triu(M, 1).T
    assert np.allclose(actual.mass_matrix(q), M, rtol=0, atol=1e-13)
    assert np.abs(arm.mass_matrix(q) - M).max() > 1e-3  # the nominal arm is another plant
    # the Γ Monte Carlo's sampled plants (an (S, 1, 3) payload_com and com_forearm_link per block) are these plants
    est = estimate_gamma(arm, _Motion, unc.nominal_values(arm) + dm, parameter=unc.names)
    for i in range(3):
        assert est.exact[i] == pytest.approx(_dq_by_hand(arm, unc.actual(arm, dm[i], i), _Motion), rel=1e-10)


# --------------------------------------------------------------------------- friction coefficients, named
def test_named_friction_coefficients_are_numbers_of_the_actual_forces():
    from robustrack.uncertainty import ActualForces, JointFriction, StepDisturbance

    forces = ActualForces(JointFriction([2.0, 1.0], 3.0, 0.05), disturbance=StepDisturbance(1.0), coordinates=("a", "b"))
    assert forces.parameters == {"viscous_a": 2.0, "viscous_b": 1.0, "coulomb_a": 3.0, "coulomb_b": 3.0}
    qd = np.array([0.3, -0.2])
    d = forces.at({"viscous_b": 1.5, "coulomb_a": 4.0})
    assert np.allclose(d(np.zeros(2), qd, 1.0), -np.array([2.0, 1.5]) * qd - np.array([4.0, 3.0]) * np.tanh(qd / 0.05) + 1.0,
                       rtol=1e-15)
    # arrays of N samples: coefficients (N, 1, n) that broadcast against (samples, times, coordinates)
    many = forces.at({"viscous_a": np.array([1.0, 3.0])}).terms[0]
    assert many.viscous.shape == (2, 1, 2) and many.viscous[:, 0, 0].tolist() == [1.0, 3.0]
    with pytest.raises(ParameterError, match="not a friction coefficient"):
        forces.at({"viscous_c": 1.0})
    with pytest.raises(ParameterError, match="takes no `spread`"):
        ActualForces(JointFriction(1.0), spread=0.5, coordinates=("a", "b"))


@pytest.fixture(scope="module")
def ur5_friction():
    """ur5-friction over 0.3 s (31 times: the Γ Monte Carlo's δq is evaluated at these), without its copy."""
    pytest.importorskip("pinocchio")
    from robustrack.scenarios import load_scenario

    return load_scenario("ur5-friction", ["simulation.t_end=0.3", "simulation.n_points=31",
                                          "simulation.uncompensated=false"])


def test_gamma_draws_the_friction_coefficients_as_a_campaign_draws_them(ur5_friction):
    """Γ's row i is the δq of the campaign's sample i: the payload's mass and centre of mass and all 12 friction
    coefficients as that sample has them (8 samples: enough to see each row differ and match)."""
    from robustrack.scenarios.campaign import campaign_uncertainty
    from robustrack.scenarios.gamma import run_gamma, tracked_trajectory

    sc = ur5_friction
    g = run_gamma(sc, 8, seed=4)
    unc = campaign_uncertainty(sc, None, 4)
    assert unc.names[:4] == ("payload_mass", "payload_com_x", "payload_com_y", "payload_com_z")
    assert unc.names[4] == "viscous_shoulder_pan_joint" and unc.names[-1] == "coulomb_wrist_3_joint"
    pb = sc.build()
    dm = unc.draw(pb.nominal, 8)
    lo, hi = unc.box(pb.nominal)
    assert np.all((lo <= dm) & (dm <= hi)) and hi[4] == pytest.approx(1.0)  # viscous 2 ± 50 %
    motion = tracked_trajectory(pb)
    for i in (0, 5):
        actual = unc.actual(pb.nominal, dm[i], i)
        viscous = actual.dQ.terms[0].viscous
        assert viscous[0] == pytest.approx(2.0 + dm[i, 4], rel=1e-15)
        assert g.estimate.exact[i] == pytest.approx(_dq_by_hand(pb.nominal, actual, motion), rel=1e-9)
    assert len(set(np.round(g.estimate.exact, 6))) == 8


@pytest.mark.parametrize("tables, word", [
    ("viscous_elbow_joint = { sigma = 0.1 }", r"uncertainty\.parameters\.viscous_elbow_joint`: a friction "
                                              r"coefficient must stay >= 0.*normal"),
    ("coulomb_elbow_joint = { range = [-1.0, 3.0] }", r"coulomb_elbow_joint`: a friction coefficient must stay >= 0"),
    ("viscous_elbow = { percent = 50 }", r"viscous_elbow`.*friction coefficients are named viscous_shoulder_pan_joint"),
])
def test_bad_friction_tables_are_refused_naming_the_key(tmp_path, tables, word):
    pytest.importorskip("pinocchio")
    from robustrack.errors import ScenarioError
    from robustrack.scenarios import load_scenario

    path = tmp_path / "arm.toml"
    path.write_text('[scenario]\nname = "arm"\nkind = "urdf"\n\n[plant]\nrobot = "ur5"\n\n[reference]\n'
                    'home = [0.0, -1.2, 1.4, -1.5, -1.57, 0.0]\namplitude = [0.1, 0.1, 0.1, 0.1, 0.1, 0.1]\n'
                    'frequency = [1.0, 1.0, 1.0, 1.0, 1.0, 1.0]\n\n[actual]\nviscous = 1.0\ncoulomb = 2.0\n\n'
                    f'[uncertainty.parameters]\n{tables}\n')
    with pytest.raises(ScenarioError, match=word):
        load_scenario(str(path)).build()


def test_friction_spread_and_named_coefficients_are_not_both_taken(ur5_friction):
    from robustrack.errors import ScenarioError
    from robustrack.scenarios.campaign import campaign_uncertainty

    with pytest.raises(ScenarioError, match=r"`actual\.friction_spread` = 0\.5 draws every friction coefficient, "
                                            r"but `uncertainty\.parameters\.viscous_shoulder_pan_joint`"):
        campaign_uncertainty(ur5_friction.with_overrides(["actual.friction_spread=0.5"]), None, 0)


# --------------------------------------------------------------------------- the python kind's [actual]; certify
def test_the_python_kinds_actual_table_adds_friction_and_a_disturbance(pendulum_scenario):
    from robustrack.scenarios import load_scenario
    from robustrack.scenarios.campaign import campaign_uncertainty

    sc = load_scenario(pendulum_scenario("[actual]\nviscous = 0.5\ncoulomb = 0.2\ncoulomb_width = 0.1\n"
                                          "[actual.disturbance]\nkind = 'step'\namplitude = 1.0\n\n"
                                          "[uncertainty.parameters.viscous_theta]\nrange = [0.25, 0.75]\n"
                                          "[uncertainty.parameters.L]\npercent = 10\n"))
    pb = sc.build()
    q, qd = np.array([0.3]), np.array([-0.4])
    got = pb.actual.given_force(q, qd, 0.5) - pb.nominal.given_force(q, qd, 0.5)
    assert got == pytest.approx(-0.5 * qd - 0.2 * np.tanh(qd / 0.1) + 1.0, rel=1e-14)
    unc = campaign_uncertainty(sc, None, 2)  # a campaign's sample: its drawn viscous coefficient and length
    dm = unc.draw(pb.nominal, 3)[1]
    actual = unc.actual(pb.nominal, dm, 1)
    assert actual.params["L"] == 1.0 + dm[1] and actual.dQ.terms[0].viscous.tolist() == [0.5 + dm[0]]  # table order


def test_certify_takes_named_parameters_and_friction_coefficients(pendulum_scenario):
    pytest.importorskip("flint")
    from robustrack.scenarios import load_scenario
    from robustrack.scenarios.certify import run_certify

    named = "[uncertainty.parameters.L]\npercent = 10\n"
    sc = load_scenario(pendulum_scenario(named))
    with pytest.raises(ParameterError, match="`spread` does not apply"):
        run_certify(sc, 0.1)
    # the named length's box, certified: δq = −g sin θ (1/L_a − 1/L) is largest at L_a = 0.9
    cert = run_certify(sc, tolerance=0.05, budget_s=30)
    assert cert.box.to_dict() == {"L": [0.9, 1.1]} and cert.bounds["max_norm_dq"].witness["params"]["L"] == 0.9
    # a named friction coefficient of [actual] is a dimension of the search beside the length (issue 42 item 2):
    # with M = m L², Q = −m g L sin θ, the actual Q_a − b θ̇, δq = −g sin θ (1/L_a − 1/L) − b θ̇ / (m L_a²) —
    # the witness's value from this closed form along the nominal run, to double precision's 1e-9 relative
    sc = load_scenario(pendulum_scenario(named + "[uncertainty.parameters.viscous_theta]\nrange = [0.0, 1.0]\n"))
    cert = run_certify(sc, tolerance=0.05, budget_s=30)
    b = cert.bounds["max_norm_dq"]
    assert cert.box.to_dict() == {"L": [0.9, 1.1]} and cert.forces.labels == ["viscous_theta"]
    w = b.witness
    La, visc = w["params"]["L"], w["forces"]["viscous"][0]
    assert La in (0.9, 1.1) and visc in (0.0, 1.0)
    theta, omega = sc.build().nominal_run().solution(np.array([w["t"]]))[0]
    closed = -9.81 * np.sin(theta) * (1 / La - 1.0) - visc * omega / (1.5 * La**2)
    assert abs(closed) == pytest.approx(b.lower, rel=1e-9) and b.lower <= b.upper


def test_the_triple_pendulum_certified_over_a_box_with_a_length_contains_its_monte_carlo():
    """certify takes named parameters, an entry of the pendulum's L among them. One mass (±10 %) and one length
    (±1 %) over 0.2 s of the seed's run, δq only: the ball functions are compiled from sympy for each new set of
    parameters (~3 s here); the six masses and lengths over the 10-s run take 857 s CPU (docs/guide/uncertainty.md).
    A Γ Monte Carlo of 2000 plants drawn from the same set, along the same reference, never exceeds the certified U."""
    pytest.importorskip("flint")
    from robustrack.certification import certify
    from robustrack.scenarios import load_scenario
    from robustrack.scenarios.gamma import tracked_trajectory
    from robustrack.uncertainty import UncertainSet

    pb = load_scenario("triple-pendulum", ["simulation.t_end=0.2", "simulation.n_points=21"]).build()
    named = UncertainSet([UncertainParameter("m2", 2.0, percent=10), UncertainParameter("L3", 2.0, percent=1)])
    cert = certify(pb, named, tolerance=0.1, quantities=["max_norm_dq"], budget_s=60)
    assert cert.box.to_dict() == {"m": [[1.0, 1.8, 3.0], [1.0, 2.2, 3.0]], "L": [[1.0, 1.5, 1.98], [1.0, 1.5, 2.02]]}
    b = cert.bounds["max_norm_dq"]
    assert b.finished and b.lower <= b.upper <= 1.1 * b.lower
    witness = b.witness["params"]
    assert witness["L"][2] in (1.98, 2.02) and witness["m"][1] in (1.8, 2.2)  # δq is largest at a corner here
    est = estimate_gamma(pb.nominal, tracked_trajectory(pb), named.sample(2000, 0), parameter=named.names)
    assert est.exact.max() <= b.upper
    assert est.exact.max() >= 0.9 * b.lower  # the samples come near the certified supremum, not only under it


# --------------------------------------------------------------------------- the built-in tracking kinds' tables
#: The triple pendulum's kind with named parameters: θ1's viscous friction ±50 % and m2 ±10 %, shifted by dm; 0.2 s.
NAMED_PENDULUM = """[scenario]
name = "pendulum-named"
kind = "triple-pendulum-tracking"

[uncertainty]
dm = [0.1, 0.2]

[uncertainty.parameters]
viscous_theta1 = { percent = 50 }
m2 = { percent = 10 }

[actual]
viscous = 0.5
coulomb = 0.3
coulomb_width = 0.05

[simulation]
t_end = 0.2
n_points = 41
"""


def test_the_triple_pendulum_kind_takes_named_parameters_and_dm_shifts_them_as_the_direct_form(tmp_path):
    """Named tables in a built-in tracking kind: dm = (0.1, 0.2) on (viscous_theta1, m2) is the actual plant the
    kind's own form gives with m2 + 0.2 (dm over the masses) and θ1's viscous coefficient 0.5 + 0.1 in [actual] —
    the same run to the bit; a Monte Carlo and Γ draw the two named values (4 samples, 20 draws)."""
    from robustrack.scenarios import load_scenario
    from robustrack.scenarios.campaign import run_montecarlo
    from robustrack.scenarios.gamma import run_gamma
    from robustrack.scenarios.tracking_kinds import run_tracking

    path = tmp_path / "named.toml"
    path.write_text(NAMED_PENDULUM, encoding="utf-8")
    named = load_scenario(str(path))
    direct = load_scenario("triple-pendulum", ["uncertainty.dm=[0.0, 0.2, 0.0]", "actual.viscous=[0.6, 0.5, 0.5]",
                                               "actual.coulomb=0.3", "actual.coulomb_width=0.05",
                                               "simulation.t_end=0.2", "simulation.n_points=41"])
    a, b = run_tracking(named)[0], run_tracking(direct)[0]
    for name in ("qa", "qc", "Qu"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
    assert a.metrics["max_abs_e"] == b.metrics["max_abs_e"]
    campaign = run_montecarlo(named, 4, None, 0, progress=None)
    assert campaign.summary()["completed"] == 4
    assert {len(r.dm) for r in campaign.records} == {2}  # one δ per named value
    gamma = run_gamma(named, 20, None, seed=1).estimate
    assert np.ptp(gamma.exact) > 0


@pytest.mark.parametrize("uncertainty, message", [
    ('dm = [0.1, 0.2]\nparameters = ["m2"]', r"must be tables \[uncertainty.parameters.NAME\].*no list form"),
    ('dm = [0.1, -0.2, 0.3]\n\n[uncertainty.parameters]\nm2 = { percent = 10 }',
     r"must have 1 numbers.*give `dm = \[\]` for the nominal plant"),
    ("dm = [0.1, 0.2]", "must be a list of 3 numbers, one per mass"),
    ('dm = []\n\n[uncertainty.parameters]\nm4 = { percent = 10 }', "m4"),
])
def test_the_triple_pendulum_kinds_uncertainty_is_refused_by_name(tmp_path, uncertainty, message):
    from robustrack.errors import ScenarioError
    from robustrack.scenarios import load_scenario

    path = tmp_path / "bad.toml"
    path.write_text('[scenario]\nname = "bad"\nkind = "triple-pendulum-tracking"\n\n[uncertainty]\n' + uncertainty
                    + "\n", encoding="utf-8")
    with pytest.raises(ScenarioError, match=message):
        load_scenario(str(path))


def test_worst_case_starts_from_a_certificates_lower_bound_plant_of_the_named_set(tmp_path):
    """`worst-case --certificate` with named tables (the kind's triple pendulum above: θ1's viscous coefficient and
    m2): the certificate of the same tables covers the search, which starts at its lower-bound plant — read from
    the certificate's own witness (its m2 and θ1's viscous coefficient) as δ from the named nominals (0.5, 2.0)."""
    pytest.importorskip("flint")
    from robustrack.scenarios import load_scenario
    from robustrack.scenarios.campaign import run_worst_case
    from robustrack.scenarios.certify import run_certify

    path = tmp_path / "named.toml"
    path.write_text(NAMED_PENDULUM, encoding="utf-8")
    cert = run_certify(load_scenario(str(path)), tolerance=0.05, budget_s=30).to_dict()
    w = cert["bounds"]["max_norm_dq"]["witness"]
    expected = [w["forces"]["viscous"][0] - 0.5, w["params"]["m"][1] - 2.0]
    assert max(abs(x) for x in expected) > 0  # the witness is off the nominal plant: the start says something
    study = run_worst_case(str(path), budget=6, workers=1, certificate=cert)
    assert study.doc["start"][-1] == pytest.approx(expected, abs=1e-12)
    assert study.doc["certificate"]["gamma_upper"] == cert["bounds"]["max_norm_dq"]["upper"]
