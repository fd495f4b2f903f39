"""The user's own plants: Plant.from_functions (the batch contract) and URDFPlant (Pinocchio), each against an
independent derivation of the same two-link arm (sympy's Lagrange equations, and Pinocchio called directly)."""

import pickle
import warnings
from pathlib import Path

import numpy as np
import pytest
import sympy as sp

from robustrack.errors import ParameterError
from robustrack.plants import LagrangianPlant, Plant

ARM = dict(m1=1.0, m2=0.8, L1=0.5, L2=0.4, lc1=0.25, lc2=0.2, g=9.81, b=0.05)
ARM["I1"] = ARM["m1"] * ARM["L1"] ** 2 / 12
ARM["I2"] = ARM["m2"] * ARM["L2"] ** 2 / 12
URDF = Path(__file__).parent / "data" / "two_link_arm.urdf"
STATES = np.random.default_rng(3).uniform(-2, 2, size=(7, 4))


def arm_M(q, m1, m2, L1, lc1, lc2, I1, I2):
    """The textbook two-link arm (Spong's), written for one state."""
    c2 = np.cos(q[1])
    m11 = I1 + I2 + m1 * lc1**2 + m2 * (L1**2 + lc2**2 + 2 * L1 * lc2 * c2)
    m12 = I2 + m2 * (lc2**2 + L1 * lc2 * c2)
    return [[m11, m12], [m12, I2 + m2 * lc2**2]]


def arm_Q(q, qd, m1, m2, L1, lc1, lc2, g, b):
    h = m2 * L1 * lc2 * np.sin(q[1])
    g1 = (m1 * lc1 + m2 * L1) * g * np.cos(q[0]) + m2 * lc2 * g * np.cos(q[0] + q[1])
    g2 = m2 * lc2 * g * np.cos(q[0] + q[1])
    return [h * qd[1] * (2 * qd[0] + qd[1]) - g1 - b * qd[0], -h * qd[0] ** 2 - g2 - b * qd[1]]


def function_arm(**kw):
    return Plant.from_functions(arm_M, arm_Q, params={k: ARM[k] for k in ARM if k != "L2"},
                                names=["shoulder", "elbow"], kinds=["angle", "angle"], **kw)


def sympy_arm():
    """The same arm from its energies (an independent derivation: Lagrange's equations by sympy)."""
    t = sp.Symbol("t")
    q1, q2 = (sp.Function(n)(t) for n in ("q1", "q2"))
    s = {k: sp.Symbol(k) for k in ARM}
    u1, u2 = q1.diff(t), q2.diff(t)
    x1, z1 = s["lc1"] * sp.cos(q1), s["lc1"] * sp.sin(q1)
    x2 = s["L1"] * sp.cos(q1) + s["lc2"] * sp.cos(q1 + q2)
    z2 = s["L1"] * sp.sin(q1) + s["lc2"] * sp.sin(q1 + q2)
    v2 = lambda x, z: x.diff(t) ** 2 + z.diff(t) ** 2  # noqa: E731
    T = (s["m1"] * v2(x1, z1) + s["I1"] * u1**2 + s["m2"] * v2(x2, z2) + s["I2"] * (u1 + u2) ** 2) / 2
    V = s["g"] * (s["m1"] * z1 + s["m2"] * z2)
    F = [-s["b"] * u1, -s["b"] * u2]
    return LagrangianPlant.from_energies([q1, q2], T, V, F, params={s[k]: v for k, v in ARM.items() if k != "L2"},
                                         t=t, kinds=["angle", "angle"])


# --------------------------------------------------------------------------- from_functions


def test_function_plant_matches_the_sympy_arm_and_keeps_the_batch_contract():
    fp, lp = function_arm(), sympy_arm()
    q, qd = STATES[:, :2], STATES[:, 2:]
    # two derivations of one arm, both exact: only rounding separates them (entries ~1–10, ε ~ 2e-16)
    assert np.abs(fp.mass_matrix(q) - lp.mass_matrix(q)).max() < 1e-13
    assert np.abs(fp.given_force(q, qd) - lp.given_force(q, qd)).max() < 1e-13
    # sampled parameters as estimate_gamma passes them: (S, 1) against q (T, n) -> (S, T, n, n)
    m2 = np.array([[0.7], [0.8], [0.9]])
    M = fp.replace(m2=m2).mass_matrix(q)
    assert M.shape == (3, 7, 2, 2)
    assert np.abs(M[2] - lp.replace(m2=0.9).mass_matrix(q)).max() < 1e-13
    assert fp.coordinate_kinds == ("angle", "angle") and fp.coordinates == ("shoulder", "elbow")
    assert pickle.loads(pickle.dumps(fp)).params == fp.params


def test_function_plant_derivatives_exact_or_central():
    exact = Plant.from_functions(lambda q, k: [[1.0]], lambda q, qd, k: -k * q**3, params={"k": 2.0}, names=["x"],
                                 dQ_dq=lambda q, qd, k: [[-3 * k * q[0] ** 2]])
    dM, dQq, dQv = exact.derivatives([0.5], [0.0])
    assert dQq[0, 0] == -1.5 and dM.shape == (1, 1, 1) and dQv[0, 0] == 0
    # the arm without derivatives: central differences (error ~ε^(2/3) ≈ 4e-11 relative) against sympy's exact ones
    lp = sympy_arm()
    _, dQq, dQv = function_arm().derivatives(STATES[0, :2], STATES[0, 2:])
    q1, q2 = lp.model.symbols.qs
    u1, u2 = lp.model.symbols.us
    Q = lp.model.Q
    subs = dict(zip((q1, q2, u1, u2), STATES[0]))
    subs.update({p: ARM[p.name] for p in lp.model.parameters})
    J = np.array(Q.jacobian([q1, q2]).subs(subs), dtype=float)
    assert np.abs(dQq - J).max() < 1e-8


def test_a_plant_breaking_the_batch_contract_is_refused_with_what_to_do():
    from robustrack.uncertainty import estimate_gamma

    def M(q, m):
        return [[m if m > 0 else 1.0]]  # `if` on a sampled array: ambiguous truth value inside the user's code

    bad = Plant.from_functions(M, lambda q, qd, m: -q, params={"m": 1.0}, names=["x"], vectorized=True)
    traj = dict(t=np.linspace(0, 1, 5), q=np.zeros((5, 1)), qd=np.zeros((5, 1)), Qc=np.zeros((5, 1)))
    with pytest.raises(ParameterError, match="batch contract.*vectorized=False"):
        estimate_gamma(bad, type("T", (), traj), np.array([[1.0], [1.1]]), parameter="m")
    ok = Plant.from_functions(M, lambda q, qd, m: -q, params={"m": 1.0}, names=["x"])  # looped: fine
    gamma = estimate_gamma(ok, type("T", (), traj), np.array([[1.0], [1.1]]), parameter="m")
    assert gamma.exact.shape == (2,)
    with pytest.raises(ParameterError, match="`M` takes argument.*L3"):
        Plant.from_functions(lambda q, L3: [[L3]], lambda q, qd: -q, params={}, names=["x"])


def test_from_functions_without_names_says_to_give_them():
    """Issue 43: not a bare TypeError (a missing keyword-only argument) but a ParameterError naming `names`."""
    with pytest.raises(ParameterError, match=r"needs `names=`: the coordinate names"):
        Plant.from_functions(arm_M, arm_Q, params={k: ARM[k] for k in ARM if k != "L2"})
    plant = function_arm()  # given, it builds
    assert plant.coordinates == ("shoulder", "elbow")


def test_function_plant_tracks_and_runs_a_monte_carlo_compiled():
    from robustrack.campaigns import ParameterUncertainty, monte_carlo
    from robustrack.constraints import Holonomic, Stabilization
    from robustrack.controllers import GSS
    from robustrack.tracking import CompilationFallback, TrackingProblem

    nominal = function_arm()
    q1, q2, t = sp.symbols("shoulder elbow t")
    req = Holonomic([q1 - 0.3 * sp.sin(t), q2 - 0.5 + 0.2 * sp.cos(t)], [q1, q2], t,
                    stabilization=Stabilization.second_order(1.0, 5.0))
    problem = TrackingProblem(nominal, req, GSS(K=10.0, gamma_prime=50.0, beta0=10.0), q0=[0.0, 0.7], qd0=[0.3, 0.0],
                              t_span=(0.0, 1.0), actual=nominal.replace(m2=0.9), n_points=51)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = problem.simulate()
        camp = monte_carlo(problem, ParameterUncertainty("m2", spread=0.1, seed=1), samples=3, workers=1,
                           progress=None)
    assert not [w for w in caught if issubclass(w.category, CompilationFallback)]  # M, Q in numba's subset
    assert result.success and result.metrics.bounds_held
    assert camp.summary()["completed"] == 3 and camp.summary()["held"] == 3


def _reported_state(message):
    """(t, q, q̇) as the message prints them."""
    import re

    t = float(re.search(r"returned NaN at t = ([-0-9.e+]+)", message).group(1))
    q, qd = (np.array(eval(re.search(pattern, message).group(1))) for pattern in (r"q = (\[[^]]*\])",  # noqa: S307
                                                                                      r"q̇ = (\[[^]]*\])"))
    return t, q, qd


@pytest.mark.parametrize("which", ["nominal", "actual"])
def test_a_nan_from_the_users_q_names_the_function_t_and_the_state(which):
    """Item 6 of issue 32: NaN from the user's Q was reported as "All components of `M` must be finite." (the
    NaN had travelled into the next state). Now the message names the user's function with t, q and q̇ — of a
    state where that function really gives NaN (evaluated again here) — for the nominal plant (a ParameterError
    from the nominal run) and for the actual one (the failed controlled run's message)."""
    from robustrack.constraints import Holonomic, Stabilization
    from robustrack.controllers import GSS
    from robustrack.errors import SolverError
    from robustrack.tracking import TrackingProblem

    def broken_Q(q, qd, m1, m2, L1, lc1, lc2, g, b):  # NaN once the shoulder passes 0.2 rad (for the heavy arm)
        return np.full(2, np.nan) if q[0] > 0.2 and m2 >= (0.8 if which == "nominal" else 0.85) else \
            arm_Q(q, qd, m1, m2, L1, lc1, lc2, g, b)

    nominal = Plant.from_functions(arm_M, broken_Q, params={k: ARM[k] for k in ARM if k != "L2"},
                                   names=["shoulder", "elbow"], kinds=["angle", "angle"])
    q1, q2, t = sp.symbols("shoulder elbow t")
    req = Holonomic([q1 - 0.3 * sp.sin(t), q2 - 0.5], [q1, q2], t, stabilization=Stabilization.second_order(1.0, 5.0))
    problem = TrackingProblem(nominal, req, GSS(K=10.0, gamma_prime=50.0, beta0=10.0), q0=[0.0, 0.5], qd0=[0.3, 0.0],
                              t_span=(0.0, 2.0), actual=nominal.replace(m2=0.9), n_points=51, uncompensated=False)
    error = ParameterError if which == "nominal" else SolverError
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(error, match=r"your function `.*broken_Q` \(the Q given to Plant.from_functions\) "
                                        r"returned NaN at t = ") as info:
            problem.simulate()
    message = str(info.value)
    assert "`M`" not in message
    t_bad, q, qd = _reported_state(message)
    plant = nominal if which == "nominal" else nominal.replace(m2=0.9)
    # the state is printed to 6 decimals: within that rounding it lies where the function gives NaN
    assert 0 < t_bad < 2 and q[0] > 0.2 - 1e-6 and np.isnan(plant.given_force(q + [1e-6, 0], qd, t_bad)).all()


# --------------------------------------------------------------------------- URDF through Pinocchio

pin = pytest.importorskip("pinocchio")


def test_urdf_arm_matches_the_sympy_arm_and_direct_pinocchio():
    from robustrack.plants import URDFPlant

    up, lp = URDFPlant(URDF), sympy_arm()
    q, qd = STATES[:, :2], STATES[:, 2:]
    # same arm, three derivations (CRBA/RNEA, sympy, the textbook form above): rounding only (entries ≤ ~10)
    assert np.abs(up.mass_matrix(q) - lp.mass_matrix(q)).max() < 1e-12
    assert np.abs(up.given_force(q, qd) - lp.given_force(q, qd)).max() < 1e-12
    model = pin.buildModelFromUrdf(str(URDF))
    data = model.createData()
    for qi, vi in zip(q, qd):
        M = pin.crba(model, data, qi)
        M = np.triu(M) + np.triu(M, 1).T
        assert np.abs(up.mass_matrix(qi) - M).max() == 0.0
        tau = pin.rnea(model, data, qi, vi, np.zeros(2))  # inverse dynamics at q̈ = 0 = nle
        assert np.abs(up.given_force(qi, vi) - (-tau - 0.05 * vi)).max() < 1e-14
    assert up.coordinate_kinds == ("angle", "angle") and up.frame == "tool"
    assert np.allclose(up.frame_position([0.0, 0.0]), [0.9, 0.0, 0.0], atol=1e-15)


def test_urdf_parameters_payload_and_exact_derivatives():
    from robustrack.plants import URDFPlant

    up, lp = URDFPlant(URDF), sympy_arm()
    q, qd = STATES[:3, :2], STATES[:3, 2:]
    # link 2 twice as dense: mass and rotational inertia scale together, centre of mass stays
    assert np.abs(up.replace(m_link2=1.6).mass_matrix(q) - lp.replace(m2=1.6, I2=2 * ARM["I2"]).mass_matrix(q)).max() < 1e-12
    # a point payload of 0.5 kg at the tool (0.4 m along link 2) = the sympy arm with that mass added to link 2
    m2, lc2 = ARM["m2"] + 0.5, (ARM["m2"] * ARM["lc2"] + 0.5 * 0.4) / (ARM["m2"] + 0.5)
    I2 = ARM["I2"] + ARM["m2"] * (ARM["lc2"] - lc2) ** 2 + 0.5 * (0.4 - lc2) ** 2  # parallel axes about the new centre
    heavy = lp.replace(m2=m2, lc2=lc2, I2=I2)
    assert np.abs(up.replace(payload_mass=0.5).given_force(q, qd) - heavy.given_force(q, qd)).max() < 1e-12
    sampled = up.replace(payload_mass=np.array([[0.0], [0.5]])).mass_matrix(q)
    assert sampled.shape == (2, 3, 2, 2) and np.abs(sampled[1] - heavy.mass_matrix(q)).max() < 1e-12
    dM, dQq, dQv = up.derivatives(q[0], qd[0])
    h = 1e-6  # central differences: error ~h² · |third derivative| ~ 1e-11
    for k in range(2):
        e = np.eye(2)[k] * h
        assert np.abs(dM[:, :, k] - (up.mass_matrix(q[0] + e) - up.mass_matrix(q[0] - e)) / (2 * h)).max() < 1e-8
        assert np.abs(dQq[:, k] - (up.given_force(q[0] + e, qd[0]) - up.given_force(q[0] - e, qd[0])) / (2 * h)).max() < 1e-7
        assert np.abs(dQv[:, k] - (up.given_force(q[0], qd[0] + e) - up.given_force(q[0], qd[0] - e)) / (2 * h)).max() < 1e-7
    with pytest.raises(ParameterError, match="no parameter.*m_link3"):
        up.replace(m_link3=1.0)
    with pytest.raises(ParameterError, match="no frame"):
        URDFPlant(URDF, payload_frame="gripper")
