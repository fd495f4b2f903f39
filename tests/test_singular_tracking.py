"""Robust tracking with a positive semi-definite mass matrix (robustrack.tracking.singular).

Each step of docs/theory/singular-tracking.md is checked here against an independent truth:
the auxiliary system's invariance in α, G (W Result 4.2), the physical constraints held,
W 4.4.15's closed form, the reduced error equation ε̈ = S δq + (I − M̃_r) û evaluated from the
right-hand side itself, the reduction to W's formulas for M > 0, and a Monte Carlo over the
δm box with the promised bound and its assumptions held in every sample.
"""

import dataclasses

import numpy as np
import pytest
import sympy as sp

from robustrack.constraints import Holonomic, Stabilization
from robustrack.controllers import GSS, control_function
from robustrack.errors import ParameterError, RankConditionError
from robustrack.plants import Plant
from robustrack.plants.examples import (QuaternionRigidBody, TwoMassSprings, quaternion_rigid_body_constraint,
                                        two_mass_springs_constraint)
from robustrack.tracking.singular import (SingularTracking, independent_coordinates, null_basis, physical_motion,
                                          reduced_uncertainty, simulate_singular_tracking, singular_monte_carlo)
from robustrack.tracking import TrackingProblem
from robustrack.tracking.singular import massless_springs_problem

RNG = np.random.default_rng(20260521)


@dataclasses.dataclass(frozen=True, eq=False)
class MasslessNodeChain(Plant):
    """A user's plant built in a script: wall–k1–m1–k2–(massless node)–k3–m3, M = diag(m1, 0, m3)."""

    coordinates = ("x1", "x2", "x3")
    m1: float = 1.0
    m3: float = 2.0
    k1: float = 4.0
    k2: float = 3.0
    k3: float = 5.0

    def mass_matrix(self, q, t=0.0):
        q = np.asarray(q, dtype=float)
        batch = np.broadcast_shapes(q.shape[:-1], np.shape(self.m1), np.shape(self.m3))
        M = np.zeros(batch + (3, 3))
        M[..., 0, 0] = self.m1
        M[..., 2, 2] = self.m3
        return M

    def given_force(self, q, qd, t=0.0):
        x1, x2, x3 = np.moveaxis(np.asarray(q, dtype=float), -1, 0)
        s2, s3 = x2 - x1, x3 - x2  # V = ½ k1 x1² + ½ k2 s2² + ½ k3 s3²
        return np.stack([-self.k1 * x1 + self.k2 * s2, -self.k2 * s2 + self.k3 * s3, -self.k3 * s3], axis=-1)


def chain_problem():
    plant = MasslessNodeChain()
    x1, x2, x3, t = sp.symbols("x1 x2 x3 t")
    # the node's force balance ∂V/∂x2 = 0 (as W 4.4.12), kept by the plant
    node = Holonomic([plant.k2 * (x2 - x1) - plant.k3 * (x3 - x2)], [x1, x2, x3])
    # the requirement: m3 follows 0.2 sin(1.5 t); m1 moves freely
    req = Holonomic([x3 - 0.2 * sp.sin(1.5 * t)], [x1, x2, x3], t, stabilization=Stabilization.second_order(1.0, 5.0))
    w = plant.k2 / (plant.k2 + plant.k3)  # x2 = w x1 + (1 − w) x3 on the node's balance
    q0 = np.array([0.1, w * 0.1, 0.0])
    qd0 = np.array([0.0, (1 - w) * 0.3, 0.3])
    gss = GSS(K=10.0, gamma_prime=10.0, beta0=10.0, alpha0=0.5, f=control_function("signed-quadratic", eps=1e-2,
                                                                                     alpha_c=2.0))
    return plant, node, req, gss, q0, qd0


def _spd(m):
    X = RNG.normal(size=(m, m))
    return X @ X.T + m * np.eye(m)


# ------------------------------------------------------------------ the auxiliary system (W ch. 4)
def _quaternion_states(k):
    u = RNG.normal(size=(k, 4))
    u /= np.linalg.norm(u, axis=-1, keepdims=True)
    ud = RNG.normal(size=(k, 4))
    ud -= np.sum(ud * u, axis=-1, keepdims=True) * u  # on uᵀu̇ = 0
    return u, ud


@pytest.mark.parametrize("alpha", [0.3, 7.0])
def test_physical_motion_does_not_depend_on_alpha_and_G(alpha):
    # W Result 4.2: any nonzero α and any G > 0 give the same q̈; a random force, random states
    body = QuaternionRigidBody()
    unit = quaternion_rigid_body_constraint(body)
    u, ud = _quaternion_states(5)
    F = RNG.normal(size=(5, 4))
    ref = physical_motion(body, unit, u, ud, 0.0, F).qdd
    G = np.stack([_spd(1) for _ in range(5)])
    other = physical_motion(body, unit, u, ud, 0.0, F, alpha=alpha, G=G).qdd
    # both are one 4×4 Cholesky solve of a matrix of condition ~ 10: rounding, ≤ 1e-13 relative
    assert np.allclose(other, ref, rtol=0, atol=1e-13 * np.abs(ref).max())
    A, b = unit.matrices(u, ud)
    assert np.abs((A @ ref[..., None])[..., 0] - b).max() <= 1e-13 * np.abs(ref).max()  # A_p q̈ = b_p


def test_forces_along_the_physical_constraint_normals_do_not_move_the_plant():
    # the reaction absorbs any A_pᵀ μ: so Qᵘ = M Z û and M_AG Z û = (M + A_pᵀ G A_p) Z û act alike
    body = QuaternionRigidBody()
    unit = quaternion_rigid_body_constraint(body)
    u, ud = _quaternion_states(4)
    F = RNG.normal(size=(4, 4))
    A, _ = unit.matrices(u, ud)
    mu = RNG.normal(size=(4, 1))
    a1 = physical_motion(body, unit, u, ud, 0.0, F).qdd
    a2 = physical_motion(body, unit, u, ud, 0.0, F + (np.swapaxes(A, -1, -2) @ mu[..., None])[..., 0]).qdd
    assert np.allclose(a1, a2, rtol=0, atol=1e-12 * np.abs(a1).max())


def test_massless_springs_closed_form():
    # W 4.4.15: on the node's balance m2 moves on k1, k2 in series, m2 ẍ2 = −k1k2/(k1+k2)(x2 − l10 − d)
    plant = TwoMassSprings(m1=0.0, m2=1.7)
    x2 = RNG.uniform(0.5, 2.0, size=6)
    x1 = plant.k2 * (x2 - plant.l10 - plant.d) / (plant.k1 + plant.k2)
    q = np.stack([x1, x2], axis=-1)
    qd = np.zeros_like(q)
    acc = physical_motion(plant, two_mass_springs_constraint(plant), q, qd, 0.0).qdd
    ks = plant.k1 * plant.k2 / (plant.k1 + plant.k2)
    assert np.allclose(acc[:, 1], -ks * (x2 - plant.l10 - plant.d) / plant.m2, rtol=1e-13, atol=1e-14)
    assert np.allclose(acc[:, 0], plant.k2 / (plant.k1 + plant.k2) * acc[:, 1], rtol=1e-13, atol=1e-14)


def test_null_basis_and_independent_coordinates():
    A = np.array([[5.0, -3.0]])
    assert independent_coordinates(A) == (1,)
    Z = null_basis(A, (1,))
    assert np.allclose(A @ Z, 0) and Z[1, 0] == 1.0
    with pytest.raises(RankConditionError, match="independent"):
        null_basis(np.array([[0.0, 1.0]]), (1,))  # x1 is not fixed by this row


# ------------------------------------------------------------------ the error equation
def test_reduced_error_equation_holds_exactly_on_the_quaternion_body():
    # ε̈ = S δq + (I − M̃_r) û with δq from constrained accelerations and M̃_r = I − (ZᵀM_aZ)⁻¹ZᵀMZ:
    # evaluated from the loop's own right-hand side at random states, a nonlinear A_p = uᵀ
    nominal = QuaternionRigidBody(J=(1.0, 2.0, 3.0))
    actual = nominal.replace(J=(1.2, 1.7, 3.4))
    unit = quaternion_rigid_body_constraint(nominal)
    ind = (1, 2, 3)
    u, ud = _quaternion_states(2)
    q, qd, qc, qcd = u[0], ud[0], u[1], ud[1]
    Qc = np.zeros(4)  # no requirement: the loop's Qᶜ is 0 (the identity holds for any Qᶜ added to both sides)
    uh = RNG.normal(size=3)

    class Fixed:  # a "compensator" returning û
        def __call__(self, t, e, edot, z):
            return uh

        def state_derivative(self, t, e, edot, z):
            return np.zeros(0)

    loop = SingularTracking(nominal, actual, unit, None, Fixed(), ind, 1.0, None)
    acc_c = loop.rhs(0.0, np.concatenate([qc, qcd]), np.concatenate([q, qd]))[4:8]
    acc = physical_motion(nominal, unit, q, qd, 0.0, Qc).qdd
    seen = reduced_uncertainty(nominal, actual, unit, ind, q[None], qd[None], qc[None], qcd[None], Qc[None],
                               np.zeros(1))
    Z = null_basis(unit.matrices(qc, qcd)[0], ind)
    Mr = Z.T @ nominal.mass_matrix(qc) @ Z
    Mar = Z.T @ actual.mass_matrix(qc) @ Z
    Mt = np.eye(3) - np.linalg.solve(Mar, Mr)
    lhs = (acc_c - acc)[list(ind)]
    rhs = seen["dq_r"][0] + uh - Mt @ uh
    assert np.allclose(lhs, rhs, rtol=0, atol=1e-12 * np.abs(lhs).max())
    assert np.isclose(seen["Mtilde_norm"][0], np.abs(Mt).sum(axis=1).max(), rtol=1e-14)


def test_reduces_to_w_formulas_when_M_is_positive_definite():
    # no physical constraint, M > 0: Z = I, δq and M̃_r are W (5.3.4)–(5.3.5), as the engine measures them
    from robustrack.plants import triple_pendulum
    from robustrack.tracking.assess import uncertainty_along_run

    nominal = triple_pendulum()
    actual = nominal.replace(m=(1.1, 1.8, 3.3))
    q, qd, qc, qcd = (RNG.normal(size=(7, 3)) for _ in range(4))
    Qc = RNG.normal(size=(7, 3))
    t = np.zeros(7)
    ours = reduced_uncertainty(nominal, actual, None, (0, 1, 2), q, qd, qc, qcd, Qc, t)
    engine = uncertainty_along_run(nominal, actual, q, qd, qc, qcd, Qc, t)
    assert np.allclose(ours["dq_norm"], engine["dq_norm"], rtol=1e-12)
    assert np.allclose(ours["Mtilde_norm"], engine["Mtilde_norm"], rtol=1e-12)


def test_run_matches_simulate_tracking_when_M_is_positive_definite():
    # the same closed loop as the engine's (W 5.2.17) when nothing is singular: the triple pendulum
    # under energy control, 1 s (the agreement is step by step: a longer run checks nothing more; max‖e‖ is
    # reached after its 0.5-s rise). Both integrate at rtol 1e-8 with different BDF codes, so e agrees to
    # the solvers' error relative to the motion (|q| ~ 1 rad: ~1e-7), far below e itself (~5e-5).
    from robustrack.plants import pendulum_energy_constraint, triple_pendulum
    from robustrack.tracking import simulate_tracking

    nominal = triple_pendulum()
    actual = nominal.replace(m=(1.1, 1.8, 3.3))
    req = pendulum_energy_constraint(L1=1.0, g=9.81, gain=0.02, m1=1.0)
    gss = GSS()
    ours = simulate_singular_tracking(TrackingProblem(nominal, req, gss, [1, 0, 0], [0.001, 0, 0], (0, 1),
                                                      actual=actual, n_points=101), None)
    ref = simulate_tracking(nominal, req, gss, [1, 0, 0], [0.001, 0, 0], (0, 1), actual=actual, n_points=101,
                            backend="numpy")
    assert np.abs(ours.e - ref.e).max() <= 1e-6
    assert np.isclose(ours.metrics["max_abs_e"], ref.metrics["max_abs_e"], rtol=1e-2)
    assert ours.metrics["bound_e"] == ref.info["bounds"]["e"]


# ------------------------------------------------------------------ runs and the Monte Carlo
def test_springs_run_keeps_the_physical_constraint_and_the_bound():
    # 2 s: max‖e‖ (at 0.89 s) and max‖δq_r‖ are reached in the first second (4 s gives the same maxima to 1e-5
    # relative); the uncompensated drift is 0.35 m by 2 s, 4500 × max‖e‖. Same 0.01-s output spacing as before.
    p = massless_springs_problem(t_end=2.0)
    r = simulate_singular_tracking(p.tracking_problem(p.nominal.replace(m2=0.7), n_points=201), p.physical)
    m = r.metrics
    # φ_p on the actual plant: a holonomic row kept at acceleration level from a consistent start,
    # drifting only by integration error (rtol 1e-8 on x ~ 1 m)
    assert m["max_physical_residual"] <= 1e-7
    assert m["bounds_held"] and m["bounds_held_full"] and m["assumptions_held"]
    assert m["actual_max_abs_e"] > 100 * m["max_abs_e"]  # without Qᵘ the actual plant drifts away


def test_springs_alpha_G_do_not_change_the_run():
    p = massless_springs_problem(t_end=1.0)  # the invariance holds at each right-hand-side call: 1 s as good as 2
    actual = p.nominal.replace(m2=1.25)
    problem = p.tracking_problem(actual, n_points=51, uncompensated=False)
    a = simulate_singular_tracking(problem, p.physical)
    b = simulate_singular_tracking(problem, p.physical, alpha=5.0, G=np.array([[0.01]]))
    # each rhs call agrees to rounding; the adaptive solver amplifies that to its tolerance: BDF's
    # rtol = 1e-8 (simulate_singular_tracking's default) of the coordinates' size (x up to 1.5 m). (The rounding
    # of M, Q, A, b is not fixed: main's hand-written ones gave 7e-11 here, the same model lambdified 5e-9.)
    assert np.abs(a.e - b.e).max() <= 1e-8 * np.abs(a.qc).max()


@pytest.mark.slow  # duplicates, run by default: the singular Monte Carlo over a mass box with the bound and its
# assumptions held in every sample (corners included) by test_monte_carlo_user_plant_two_masses_box; the springs'
# bound, assumptions and physical constraint on a perturbed m2 by test_springs_run_keeps_the_physical_constraint_and_the_bound
def test_monte_carlo_over_the_mass_box_springs():
    # δm2 uniform in ±30 % of m2 plus the box's ends: bound and assumptions hold in every sample
    p = massless_springs_problem(t_end=6.0)
    dm = np.concatenate([[-0.3, 0.3], RNG.uniform(-0.3, 0.3, size=22)])
    out = singular_monte_carlo(p.tracking_problem(p.nominal, n_points=121), p.physical, {"m2": p.nominal.m2 + dm})
    assert len(out) == dm.size
    assert all(o["bounds_held"] and o["bounds_held_full"] and o["assumptions_held"] for o in out)
    assert max(o["max_norm_dq_r"] for o in out) <= p.compensator.gamma_prime


def test_monte_carlo_user_plant_two_masses_box():
    # a plant built in a script, two uncertain masses (±30 % each, corners included), d = 2 reduced coordinates;
    # the corners and two draws inside (the batch costs ~ its steps, not its samples: 12 samples cost 1.6 runs).
    # Half a period of the reference (π/1.5 ≈ 2.1 s): max‖e‖ in every sample ≤ 0.09 × the bound there, as
    # over 4 s (≈ 0.11 ×), and max‖δq_r‖ ≤ 0.04 Γ′ in both; the single run checks the batch on one grid.
    plant, node, req, gss, q0, qd0 = chain_problem()
    horizon = (0, np.pi / 1.5)
    corners = np.array([[-1, -1], [-1, 1], [1, -1], [1, 1]]) * 0.3
    dm = np.concatenate([corners, RNG.uniform(-0.3, 0.3, size=(2, 2))]) * np.array([plant.m1, plant.m3])
    out = singular_monte_carlo(TrackingProblem(plant, req, gss, q0, qd0, horizon, n_points=43), node,
                               {"m1": plant.m1 + dm[:, 0], "m3": plant.m3 + dm[:, 1]})
    assert all(o["bounds_held"] and o["bounds_held_full"] and o["assumptions_held"] for o in out)
    # one sample again alone: the batched solve is the single run
    one = simulate_singular_tracking(TrackingProblem(plant, req, gss, q0, qd0, horizon, n_points=43,
                                                     uncompensated=False,
                                                     actual=plant.replace(m1=plant.m1 + dm[5, 0],
                                                                          m3=plant.m3 + dm[5, 1])), node)
    assert np.isclose(one.metrics["max_abs_e"], out[5]["max_abs_e"], rtol=1e-3)


def test_the_monte_carlos_earlier_form_still_runs_the_same_with_a_notice():
    """singular_monte_carlo takes the problem as simulate_singular_tracking does; its earlier form (the problem's
    fields listed again, 201 points by default) is the same batched run, to the bit, with one notice naming the
    call to write; the problem's settings the auxiliary system cannot take are refused by name."""
    from robustrack.tracking.problem import OldCallOrder

    p = massless_springs_problem(t_end=0.5)
    samples = {"m2": p.nominal.m2 + np.array([-0.2, 0.1, 0.25])}
    new = singular_monte_carlo(p.tracking_problem(p.nominal, n_points=201, gamma=4.0), p.physical, samples)
    with pytest.warns(OldCallOrder, match=r"singular_monte_carlo\(TrackingProblem\(nominal, requirement") as said:
        old = singular_monte_carlo(p.nominal, p.physical, p.requirement, p.compensator, p.q0, p.qd0, p.t_span,
                                   samples, gamma=4.0)
    assert [w.filename for w in said] == [__file__]  # once, at the call to rewrite
    assert old == new and len(new) == 3
    assert singular_monte_carlo(p.tracking_problem(p.nominal, n_points=201), p.physical, samples, gamma=4.0) == new
    with pytest.raises(ParameterError, match="sample_period"):
        singular_monte_carlo(p.tracking_problem(p.nominal), p.physical, samples, sample_period=0.01)
    with pytest.raises(ParameterError, match="`samples`"):
        singular_monte_carlo(p.tracking_problem(p.nominal), p.physical)


def test_bad_inputs_are_refused_by_name():
    p = massless_springs_problem(t_end=1.0)
    with pytest.raises(ParameterError, match="compensator"):
        simulate_singular_tracking(p.nominal, p.nominal, p.physical, p.requirement,
                                   GSS(f=control_function("sign", eps=1.0)), p.q0, p.qd0, p.t_span)
    with pytest.raises(ParameterError, match="independent"):
        simulate_singular_tracking(p.tracking_problem(p.nominal), p.physical, independent=(0, 0))
    with pytest.raises(RankConditionError):
        # without its physical constraint the massless body's motion is not determined
        simulate_singular_tracking(p.nominal, p.nominal, None, p.requirement, p.compensator, p.q0, p.qd0,
                                   p.t_span, independent=(0, 1))


def test_constrained_compliance_on_the_auxiliary_system_is_independent_of_alpha_G_sympy():
    # the step behind everything: the auxiliary system's response to a force,
    # Ψ = M_AG⁻¹ − M_AG⁻¹A_pᵀ(A_p M_AG⁻¹ A_pᵀ)⁻¹A_p M_AG⁻¹ with M_AG = M + α² A_pᵀ g A_p,
    # equals Z (ZᵀMZ)⁻¹ Zᵀ (no α, no g) for W 4.4.2 with m1 = 0, symbolically
    m2, k1, k2, alpha, g = sp.symbols("m2 k1 k2 alpha g", positive=True)
    M = sp.diag(0, m2)
    Ap = sp.Matrix([[k1 + k2, -k2]])
    Mag = M + alpha**2 * Ap.T * g * Ap
    Mi = Mag.inv()
    Psi = Mi - Mi * Ap.T * (Ap * Mi * Ap.T).inv() * Ap * Mi
    Z = sp.Matrix([k2 / (k1 + k2), 1])
    assert sp.simplify(Psi - Z * (Z.T * M * Z).inv() * Z.T) == sp.zeros(2, 2)
    # and the part driven by b_p, (I − Ψ M) x_p for any particular A_p x_p = b_p, neither
    bp = sp.Symbol("b_p")
    xp = Mi * Ap.T * (Ap * Mi * Ap.T).inv() * sp.Matrix([bp])  # the auxiliary system's own choice
    other = sp.Matrix([bp / (k1 + k2), 0])
    assert sp.simplify((sp.eye(2) - Psi * M) * (xp - other)) == sp.zeros(2, 1)


def test_the_tracking_loop_refuses_a_singular_plant_and_names_the_singular_entry_point():
    """Before: a raw numpy LinAlgError on the numpy path and a compiled BDF that never returned. Now the
    actual plant is refused before the controlled solve (the nominal one takes a singular M, on the augmented
    system), with the way out named."""
    from robustrack.tracking import simulate_tracking

    p = massless_springs_problem(t_end=1.0)
    nominal, actual, physical, requirement, comp, q0, qd0, t_span = p.args(p.nominal.replace(m2=0.7))
    for backend in ("numpy", "auto"):
        with pytest.raises(ParameterError, match=r"actual plant's mass matrix M\(q0\) is not positive definite"
                                                 r".*simulate_singular_tracking"):
            simulate_tracking(nominal, physical, comp, q0, qd0, t_span, actual=actual, backend=backend)


def test_the_earlier_form_still_runs_the_same_with_a_notice():
    """simulate_singular_tracking(nominal, actual, physical, requirement, compensator, q0, qd0, t_span, ...) —
    every field listed again — is the problem's run, to the bit, with one notice naming the call to write."""
    from robustrack.tracking.problem import OldCallOrder

    p = massless_springs_problem(t_end=0.5)
    actual = p.nominal.replace(m2=0.8)
    new = simulate_singular_tracking(p.tracking_problem(actual, n_points=51), p.physical)
    with pytest.warns(OldCallOrder, match=r"simulate_singular_tracking\(TrackingProblem\(nominal, requirement"):
        old = simulate_singular_tracking(*p.args(actual), n_points=51)
    for name in ("t", "q", "qc", "qa", "Qu"):
        np.testing.assert_array_equal(getattr(old, name), getattr(new, name), err_msg=name)
    with pytest.raises(ParameterError, match="sample_period"):
        simulate_singular_tracking(p.tracking_problem(actual), p.physical, sample_period=0.01)
