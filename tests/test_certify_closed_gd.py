"""The closed certificate for GD and GD-bar (issue 29; docs/theory/certificate.md, "GD and GD-bar").

They promise a box on ė only (‖ė‖∞ ≤ r); on the finite horizon e then stays within ‖e(t0)‖∞ + r (t − t0),
which is the tube the suprema are taken over. The truths: the tube's radii from the compensator's own
bound formula; the toolbox's own numpy δq, ‖M̃ₐ‖∞ and ‖M_a⁻¹M‖∞ at sampled plants, times and errors
inside the tube (never above the certified upper bounds); a tracking run of the lower-bound plant
(its ‖ė‖∞ stays in the promised box); and an honest failure (GD with a small ρ0) named with its excess.
A 0.3-s Duffing horizon keeps each test to a few seconds.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("flint")

from robustrack.certification import ParameterBox, certify  # noqa: E402
from robustrack.scenarios import load_scenario  # noqa: E402

SHORT = ["simulation.t_end=0.3", "simulation.n_points=31"]
GAMMA = 10.0


def _problem(kind, *extra):
    return load_scenario("duffing-tracking", SHORT + [f"compensator.type={kind!r}", *extra]).build()


@pytest.mark.parametrize("kind", ["gd", "gdbar"])
def test_closed_level_of_the_damping_compensators_holds_and_contains_sampled_values(kind):
    from robustrack.tracking.assess import uncertainty_along_run
    from robustrack.tracking.rhs import nominal_motion

    pb = _problem(kind)
    box = ParameterBox.around(pb.nominal, 0.1, ("m1", "m2"))
    cert = certify(pb, box, level="closed", gamma=GAMMA, tolerance=0.2, budget_s=60)
    assert cert.closed, cert.text()
    names = [c.name for c in cert.conditions]
    assert names[:3] == ["gamma", "Mtilde", "rho0" if kind == "gd" else "dropped"] and "initial" in names
    # the tube from the compensator's own bound: ‖ė‖∞ ≤ r, ‖e‖∞ ≤ ‖e(0)‖∞ + r t (e(0) = 0 here)
    r = pb.compensator.bounds(GAMMA).edot
    T = pb.t_span[1] - pb.t_span[0]
    assert cert.tube[1] == r and cert.tube[0] == pytest.approx(r * T, rel=1e-14)
    assert cert.extras["tube"]["rate"] == r
    # the dropped / ρ0 term's limit, by hand
    inv = cert.bounds["max_norm_MaInvM"]
    cond = cert.conditions[2]
    if kind == "gd":
        ki = pb.compensator.Ki
        assert cond.limit == pytest.approx(pb.compensator.rho0 / (r * T + ki * r * T * T / 2), rel=1e-12)
    else:
        assert cond.limit == pytest.approx((GAMMA - cert.bounds["max_norm_dq"].upper) / (r * T), rel=1e-12)
    assert cond.value == inv.upper <= cond.limit
    # numpy at sampled plants, times and errors inside the tube: never above the certified upper bounds
    rng = np.random.default_rng(5)
    run = pb.nominal_run()
    t = np.sort(rng.uniform(*pb.t_span, 40))
    y = run.solution(t)
    q, qd = y[:, :2], y[:, 2:]
    Qc = nominal_motion(pb.nominal, pb.constraint, q, qd, t).Qc
    lo, hi = box.flat_lower, box.flat_upper
    for m in rng.uniform(lo, hi, size=(12, 2)):
        actual = pb.nominal.replace(m1=m[0], m2=m[1])
        e = rng.uniform(-1, 1, q.shape) * (r * (t - pb.t_span[0]))[:, None]
        ed = rng.uniform(-1, 1, q.shape) * r
        got = uncertainty_along_run(pb.nominal, actual, q, qd, q + e, qd + ed, Qc, t)
        assert got["dq_norm"].max() <= cert.bounds["max_norm_dq"].upper
        assert got["Mtilde_norm"].max() <= cert.bounds["max_norm_Mtilde"].upper
        ratio = np.linalg.solve(actual.mass_matrix(q + e, t), pb.nominal.mass_matrix(q + e, t))
        assert np.abs(ratio).sum(axis=-1).max() <= inv.upper


def test_the_lower_bound_plant_keeps_the_promised_box_of_gd():
    """A tracking run of the certificate's lower-bound plant: its ‖ė‖∞ stays within r, as the closed
    certificate says for every plant of the box."""
    pb = _problem("gd")
    box = ParameterBox.around(pb.nominal, 0.1, ("m1", "m2"))
    cert = certify(pb, box, level="closed", gamma=GAMMA, tolerance=0.2, budget_s=60)
    assert cert.closed
    d = cert.bounds["max_norm_dq"].witness["delta"]
    sc = load_scenario("duffing-tracking", SHORT + ["compensator.type='gd'",
                                                    f"uncertainty.dm=[{float(d[0])!r}, {float(d[1])!r}]"])
    metrics = sc.build().simulate().metrics
    assert metrics.max_abs_edot <= cert.tube[1]


def test_gd_started_off_the_reference_fails_the_rho0_condition_by_the_amount_it_prints():
    """An initial error ‖e(0)‖∞ = 1 puts ‖e + K_i∫e‖∞ above ρ0 / ‖M_a⁻¹M‖∞ = 1 / 1.11 (the Duffing masses'
    ratio, ±10 %): the ρ0 condition fails at a real plant, by L − ρ0/sup ‖e + K_i∫e‖∞."""
    import dataclasses

    pb = _problem("gd")
    pb = dataclasses.replace(pb, qc0=pb.q0 + np.array([1.0, 0.0]))
    box = ParameterBox.around(pb.nominal, 0.1, ("m1", "m2"))
    cert = certify(pb, box, level="closed", gamma=GAMMA, tolerance=0.5, budget_s=1)
    rho0 = {c.name: c for c in cert.conditions}["rho0"]
    r = pb.compensator.bounds(GAMMA).edot
    w = 1.0 + r * 0.3 + pb.compensator.Ki * (1.0 * 0.3 + r * 0.3 ** 2 / 2)
    assert rho0.limit == pytest.approx(pb.compensator.rho0 / w, rel=1e-12)
    assert not rho0.held and rho0.value == cert.bounds["max_norm_MaInvM"].lower > rho0.limit  # a real plant
    assert f"exceeds by {rho0.value - rho0.limit:.4g}" in rho0.text and "GD's ρ0 condition" in rho0.text
    assert cert.closed is False and "NOT closed" in cert.text()
    assert cert.tube[0] == pytest.approx(1.0 + r * 0.3, rel=1e-14)
