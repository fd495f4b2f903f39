"""Certificates over the actual plant's friction and bounded disturbance (issue 42 item 2; docs/theory/certificate.md,
"Friction and disturbance").

Checked against independent truths: a Monte Carlo of the same box (masses, friction coefficients drawn, constant
disturbances at the corners of ‖d‖∞ ≤ D) by the Γ estimator's numpy δq never exceeds the certified upper bound, and
the lower bound's witness (a plant, its friction and a constant disturbance) is reproduced by the toolbox's own δq;
zero forces give the certificate without forces; a disturbance D moves sup ‖δq‖∞ by at least D Σ_j |(M_a⁻¹)_ij| at
the witness and at most D · sup ‖M_a⁻¹‖∞, the latter from the double pendulum's closed-form inverse mass matrix.
Small boxes and horizons (0.2–0.3 s) keep the module at a few seconds; the ball functions of each new structure
(forces or none, which coefficients vary) are compiled from sympy once a process (~1–3 s of it here).
"""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("flint")

from robustrack.certification import ParameterBox, certify  # noqa: E402
from robustrack.errors import ParameterError  # noqa: E402
from robustrack.scenarios import load_scenario  # noqa: E402
from robustrack.uncertainty import ActualForces, JointFriction, StepDisturbance  # noqa: E402

#: The triple pendulum's first 0.2 s (the seed's run), with friction and a disturbance in [actual].
FRICTION = ["simulation.t_end=0.2", "simulation.n_points=101", "actual.viscous=0.5", "actual.coulomb=0.3",
            "actual.coulomb_width=0.05", "actual.friction_spread=0.5", "actual.disturbance.kind=\"step\"",
            "actual.disturbance.amplitude=1.0"]


@pytest.fixture(scope="module")
def friction_certificate():
    """(scenario, certificate) of the triple pendulum over masses ±10 %, b = 0.5 and F_c = 0.3 ±50 % (v_s = 0.05)
    and a step of 1 N·m: `robustrack certify` on a TOML scenario with [actual] friction and disturbance."""
    from robustrack.scenarios.certify import run_certify

    sc = load_scenario("triple-pendulum", FRICTION)
    return sc, run_certify(sc, tolerance=0.05, budget_s=60)


def _delta_q(problem, actual, t):
    """‖δq(t)‖∞ of an actual plant along the nominal run (assess.uncertainty_along_run, numpy)."""
    from robustrack.tracking.assess import uncertainty_along_run
    from robustrack.tracking.rhs import nominal_motion

    y = problem.nominal_run().solution(np.atleast_1d(t))
    n = problem.n
    q, qd = y[:, :n], y[:, n:]
    Qc = (np.zeros_like(q) if problem.constraint is None else
          nominal_motion(problem.nominal, problem.constraint, q, qd, np.atleast_1d(t)).Qc)
    return uncertainty_along_run(problem.nominal, actual, q, qd, q, qd, Qc, np.atleast_1d(t))["dq_norm"]


def _witness_plant(problem, cert, quantity="max_norm_dq"):
    """The plant the lower bound names: its parameters, friction and constant disturbance."""
    from robustrack.plants import ForcedPlant

    w = cert.bounds[quantity].witness
    plant = problem.nominal.replace(**{k: np.asarray(v) for k, v in w["params"].items()})
    f = w["forces"]
    dQ = cert.forces.given_force({k: f[k] for k in ("viscous", "coulomb") if k in f} or None, f["disturbance"],
                                 start=float(problem.t_span[0]))
    return ForcedPlant(plant, dQ), w["t"]


def test_the_certified_interval_contains_a_monte_carlo_of_the_same_box_and_its_witness(friction_certificate):
    """1000 plants drawn as `gamma` draws them (masses ±10 %, each friction coefficient c (1 + 0.5 U(−1, 1))), each
    with a constant disturbance at a random corner of ‖d‖∞ ≤ 1 (a step from t0: it reaches the bound at every time),
    on the 101 output times: no value above the certified U. The witness plant — at a corner of the box, with the
    constant d the certificate names — gives the lower bound back through numpy's δq (1e-9 relative: double
    precision on a 3 × 3 solve)."""
    from robustrack.scenarios.gamma import tracked_trajectory
    from robustrack.uncertainty import estimate_gamma, sample_parameters

    sc, cert = friction_certificate
    pb = sc.build()
    b = cert.bounds["max_norm_dq"]
    fb = cert.forces
    assert b.finished and 0 < b.lower <= b.upper
    assert fb.disturbance == 1.0 and fb.labels == [f"{k}_theta{i}" for k in ("viscous", "coulomb") for i in (1, 2, 3)]
    assert np.allclose(fb.viscous, [[0.25] * 3, [0.75] * 3]) and np.allclose(fb.coulomb, [[0.15] * 3, [0.45] * 3])
    N = 1000
    draws = sample_parameters(pb.nominal.m, N, spread=0.1, seed=3)
    forces = ActualForces(JointFriction(0.5, 0.3, 0.05), spread=0.5)
    signs = np.random.default_rng(4).choice([-1.0, 1.0], (N, 1, 3))
    dQ = forces.batch(N, seed=5) + StepDisturbance(signs)
    traj = tracked_trajectory(pb)
    est = estimate_gamma(pb.nominal, traj, draws, dQ=dQ, chunk=N * traj.t.size)
    assert est.exact.max() <= b.upper
    # the same Monte Carlo without the forces is far below: the certificate's forces are not a rounding error
    assert estimate_gamma(pb.nominal, traj, draws).exact.max() < 0.6 * est.exact.max()
    actual, t = _witness_plant(pb, cert)
    assert _delta_q(pb, actual, t)[0] == pytest.approx(b.lower, rel=1e-9)
    w = b.witness["forces"]
    assert np.all(np.isin(w["viscous"], [0.25, 0.75])) and np.all(np.abs(w["disturbance"]) == 1.0)


@pytest.fixture(scope="module")
def double_pendulum():
    """(problem, box, certificate without forces): a double pendulum, no constraint, masses ±10 %, 0.3 s."""
    from robustrack.plants import NLinkPendulum
    from robustrack.tracking.problem import TrackingProblem

    pb = TrackingProblem(NLinkPendulum(m=(1.0, 2.0), L=(1.0, 1.5)), None, None, [1.0, 0.5], [0.0, 0.0], (0.0, 0.3),
                         n_points=31)
    box = ParameterBox.around(pb.nominal, 0.1)
    return pb, box, certify(pb, box, tolerance=0.02, quantities=["max_norm_dq"], budget_s=60)


def test_zero_friction_and_disturbance_give_the_certificate_without_forces(double_pendulum):
    """b = F_c = 0 and D = 0 on the friction's own path (its terms in δQ, compiled): the same interval as without
    forces, to 1e-12 relative — the terms add exact zeros in arb; only the order of floating-point operations in
    the compiled expressions may differ (rounding ~1e-15) — and the same fingerprint (the same plants)."""
    pb, box, plain = double_pendulum
    zero = certify(pb, box, forces=ActualForces(JointFriction(0.0, 0.0, 0.05), disturbance=StepDisturbance(0.0)),
                   tolerance=0.02, quantities=["max_norm_dq"], budget_s=60)
    a, z = plain.bounds["max_norm_dq"], zero.bounds["max_norm_dq"]
    assert z.upper == pytest.approx(a.upper, rel=1e-12) and z.lower == pytest.approx(a.lower, rel=1e-12)
    assert z.evaluations == a.evaluations and z.witness["params"] == a.witness["params"]
    assert zero.forces.friction and "forces" not in plain.extras
    assert zero.extras["fingerprint"] == plain.extras["fingerprint"]


def test_a_disturbance_moves_the_supremum_by_at_least_its_push_at_the_witness_and_at_most_d_sup_inverse_mass(
        double_pendulum):
    """With D: sup_D ≥ sup_0 + D Σ_j |(M_a⁻¹)_ij| at the witness of sup_0 (d aligned with its largest row i), and
    sup_D ≤ sup_0 + D sup ‖M_a⁻¹‖∞. The last from the closed form: det M = m2 L1² L2² (m1 + m2 sin²θ12) ≥
    m1 m2 L1² L2², and each row of adj M is at most max((m1 + m2) L1², m2 L2²) + m2 L1 L2, masses at the box's
    ends. In certified numbers: U_D ≥ L_0 + D σ and L_D ≤ U_0 + D N̄; and L_D ≥ L_0 / (1 + tol) (sup_D ≥ sup_0,
    and U_D ≤ (1 + tol) L_D once finished)."""
    from robustrack.uncertainty import uncertainty_acceleration

    pb, box, c0 = double_pendulum
    D, L = 0.5, np.array([1.0, 1.5])
    cD = certify(pb, box, forces=StepDisturbance([D, -D]), tolerance=0.02, quantities=["max_norm_dq"], budget_s=60)
    b0, bD = c0.bounds["max_norm_dq"], cD.bounds["max_norm_dq"]
    assert cD.forces.disturbance == D and not cD.forces.friction and b0.finished and bD.finished
    w = b0.witness
    actual = pb.nominal.replace(m=np.asarray(w["params"]["m"]))
    y = pb.nominal_run().solution(np.array([w["t"]]))
    q, qd = y[:, :2], y[:, 2:]
    vec = uncertainty_acceleration(pb.nominal.mass_matrix(q), pb.nominal.given_force(q, qd), np.zeros_like(q),
                                   actual.mass_matrix(q), actual.given_force(q, qd))[0]
    assert np.abs(vec).max() == pytest.approx(b0.lower, rel=1e-9)
    sigma = np.abs(np.linalg.inv(actual.mass_matrix(q)[0])[int(np.argmax(np.abs(vec)))]).sum()
    assert bD.upper >= b0.lower + D * sigma * (1 - 1e-9)
    lo, hi = box.flat_lower, box.flat_upper
    inverse_bound = (max((hi[0] + hi[1]) * L[0] ** 2, hi[1] * L[1] ** 2) + hi[1] * L[0] * L[1]) / (
        lo[0] * lo[1] * L[0] ** 2 * L[1] ** 2)
    assert bD.lower <= b0.upper + D * inverse_bound
    assert bD.lower >= b0.lower / (1 + 0.02)
    actual_d, t = _witness_plant(pb, cD)
    assert _delta_q(pb, actual_d, t)[0] == pytest.approx(bD.lower, rel=1e-9)


def test_named_friction_coefficients_box_the_friction_and_the_witness_sits_at_an_end(double_pendulum):
    """A python-API set with a friction coefficient among the named parameters: the coefficient's range is a
    dimension of the search (not of the plant's box), and δq — linear in it — is largest at one of its ends."""
    from robustrack.uncertainty import UncertainParameter, UncertainSet

    pb = double_pendulum[0]
    forces = ActualForces(JointFriction([0.5, 0.5], [0.2, 0.2], 0.05), coordinates=pb.nominal.coordinates)
    named = UncertainSet([UncertainParameter("m2", 2.0, percent=10),
                          UncertainParameter("viscous_theta2", 0.5, range=(0.0, 1.0))])
    cert = certify(pb, named, forces=forces, tolerance=0.02, quantities=["max_norm_dq"], budget_s=60)
    assert cert.box.names == ("m",) and cert.forces.labels == ["viscous_theta2"]
    w = cert.bounds["max_norm_dq"].witness["forces"]
    assert w["viscous"][1] in (0.0, 1.0) and w["viscous"][0] == 0.5 and w["coulomb"] == [0.2, 0.2]
    actual, t = _witness_plant(pb, cert)
    assert _delta_q(pb, actual, t)[0] == pytest.approx(cert.bounds["max_norm_dq"].lower, rel=1e-9)
    with pytest.raises(ParameterError, match="all friction coefficients"):
        certify(pb, UncertainSet([UncertainParameter("viscous_theta2", 0.5, range=(0.0, 1.0))]), forces=forces)


def test_what_cannot_be_enclosed_is_refused_with_the_reason(tmp_path):
    """A disturbance without a finite bound (a function that declares none; the actual plant's, or given), and a
    URDF robot (no symbolic form), before anything is integrated."""
    from robustrack.plants import ForcedPlant
    from robustrack.scenarios.certify import run_certify
    from robustrack.uncertainty import FunctionDisturbance

    pb = load_scenario("triple-pendulum", ["simulation.t_end=0.2", "simulation.n_points=21"]).build()
    box = ParameterBox.around(pb.nominal, 0.1)
    unbounded = FunctionDisturbance(lambda q, qd, t: 0.1 * np.sin(t) * np.ones_like(q))
    with pytest.raises(ParameterError, match=r"FunctionDisturbance declares no finite bound \(bound = inf\)"):
        certify(pb, box, forces=ActualForces(JointFriction(0.5), disturbance=unbounded))
    with pytest.raises(ParameterError, match="declares no finite bound"):
        certify(pb.replace(actual=ForcedPlant(pb.nominal, unbounded)), box)
    with pytest.raises(ParameterError, match="no symbolic form"):
        run_certify(load_scenario("ur5-friction", ["simulation.t_end=0.1"]))


def test_a_certificate_covers_only_plants_with_its_forces(friction_certificate, tmp_path):
    """With friction, it is refused for the scenario without (and a certificate without, for the scenario with),
    naming the first field that differs; its file edited to drop the forces no longer matches its fingerprint."""
    from robustrack.scenarios.campaign import covering_certificate

    sc, cert = friction_certificate
    bare = load_scenario("triple-pendulum", FRICTION[:2])
    assert covering_certificate(cert, sc, 0.1, ("m",))["gamma_upper"] == cert.gamma_certified
    with pytest.raises(ParameterError, match=r"`forces\.viscous\.lower`: certified \[0\.25, 0\.25, 0\.25\], this study "
                                             r"none"):
        covering_certificate(cert, bare, 0.1, ("m",))
    # a certificate of the same problem without forces (what `certify` writes for the scenario without [actual]:
    # no `forces`, none in the fingerprint), applied to the scenario with them
    plain = json.loads(json.dumps({"scenario": "triple-pendulum", **cert.to_dict()}))
    plain["forces"] = None
    plain["fingerprint"] = {k: v for k, v in plain["fingerprint"].items() if not k.startswith("forces.")}
    assert covering_certificate(plain, bare, 0.1, ("m",))["gamma_upper"] == cert.gamma_certified
    with pytest.raises(ParameterError, match=r"`forces\.viscous\.lower`: certified none"):
        covering_certificate(plain, sc, 0.1, ("m",))
    other = load_scenario("triple-pendulum", FRICTION + ["actual.disturbance.amplitude=2.0"])
    with pytest.raises(ParameterError, match=r"`forces\.disturbance`: certified 1, this study 2"):
        covering_certificate(cert, other, 0.1, ("m",))
    doc = json.loads(json.dumps({"scenario": "triple-pendulum", **cert.to_dict()}))
    doc["forces"] = None
    with pytest.raises(ParameterError, match="disagrees with the forces the file states"):
        covering_certificate(doc, sc, 0.1, ("m",))


def test_the_closed_level_encloses_the_friction_in_the_tube_and_verify_reproduces_the_witnesses():
    """The Duffing oscillator's [actual] friction (v_s = 0.05: its slope F_c / v_s enters the tube's Jacobian) and a
    0.5-N step, GSS at Γ = 10 over 0.5 s: CLOSED, and `certify --verify` re-evaluates each witness (its plant,
    friction, constant disturbance and tube error) by numpy's δq and M̃ₐ to max(rtol, 1e-9) relative, and 16 plants
    of the box with friction and a disturbance corner under the upper bounds."""
    from robustrack.scenarios.certify import run_certify
    from robustrack.scenarios.verify_certificate import verify_certificate

    overrides = ["simulation.t_end=0.5", "actual.viscous=0.3", "actual.coulomb=0.2", "actual.coulomb_width=0.05",
                 "actual.friction_spread=0.5", "actual.disturbance.kind=\"step\"", "actual.disturbance.amplitude=0.5"]
    sc = load_scenario("duffing-tracking", overrides)
    cert = run_certify(sc, level="closed", gamma=10.0, tolerance=0.05, budget_s=60)
    assert cert.closed and cert.forces.disturbance == 0.5 and len(cert.forces.dims) == 4
    b = cert.bounds["max_norm_dq"]
    assert b.witness["error"] is not None and b.lower <= b.upper
    checked = verify_certificate({"scenario": "duffing-tracking", **cert.to_dict()}, "duffing-tracking", overrides)
    assert checked.consistent, checked.text()
