"""Compensators GSS, GD, GD-bar: control laws, Lyapunov decrease outside the promised boxes, bounds.

The error dynamics are W (5.3.3)–(5.3.6): ë = δq + u − M̃_a u with ‖δq‖∞ ≤ Γ and
‖M̃_a‖∞ ≤ μ = 1 − α0/σ. For a state outside the promised box the test takes the
WORST admissible δq and M̃_a for that state (δq = Γ sign(x); the one nonzero row
i* of M̃_a pushes x_{i*} outward with |u_j|max) and random admissible ones, and
checks that V = ½‖x‖∞² decreases (x = s for GSS, x = ė for GD, GD-bar). The
same worst case just INSIDE the box makes V grow: the bounds are not loose.
"""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from robustrack.controllers import (
    COMPENSATORS,
    GD,
    GSS,
    GDBar,
    LeitmannCorless,
    LyapunovRedesign,
    SlidingMode,
    control_function,
    leitmann_corless,
    lyapunov_redesign,
    make_compensator,
    sliding_mode,
)
from robustrack.errors import ParameterError

N = 3
QUAD = control_function("signed-quadratic", eps=1e-2, alpha_c=2.0)
CUBIC = control_function("cubic", eps=1e-2, alpha_c=2.0)


def g_by_hand(name, x, alpha_c=2.0, p=None):
    if name == "signed-quadratic":
        return alpha_c * x * abs(x)
    if name == "cubic":
        return alpha_c * x**3
    if name == "tanh":
        return math.tanh(x)
    if name == "sign":
        return (x > 0) - (x < 0)
    if name == "signed-power":
        return alpha_c * math.copysign(abs(x) ** p, x)
    raise AssertionError(name)


# --------------------------------------------------------------------------- #
# the control laws against a coordinate-by-coordinate hand computation
# --------------------------------------------------------------------------- #
arrays = st.lists(st.floats(-0.2, 0.2), min_size=N, max_size=N)


@settings(max_examples=40, deadline=None)
@given(e=arrays, ed=arrays, z=arrays, fname=st.sampled_from(["signed-quadratic", "cubic", "tanh"]),
       K=st.floats(0.5, 20.0), gp=st.floats(0.0, 900.0), b0=st.floats(0.1, 30.0), a0=st.floats(0.05, 0.95),
       sigma=st.floats(1.0, 3.0), eps=st.floats(1e-3, 1.0))
def test_control_laws_match_hand_computation(e, ed, z, fname, K, gp, b0, a0, sigma, eps):
    kw = {"alpha_c": 2.0} if fname != "tanh" else {}
    f = control_function(fname, eps=eps, **kw)
    Kvec = [K, 2 * K, 0.5 * K]
    gss = GSS(K=Kvec, gamma_prime=gp, beta0=b0, alpha0=a0, sigma=sigma, f=f)
    gd = GD(Ki=0.3, Kd=1.7, gamma=gp, rho0=1.5, alpha0=a0, sigma=sigma, f=f)
    gdbar = GDBar(k=K, n=1.5, sigma=sigma, f=f) if fname != "tanh" else None
    beta, rho = (gp + b0) / a0, (gp + 1.5) / a0
    inf_norm = max(abs(v) for v in ed)
    for i in range(N):
        s_i = Kvec[i] * e[i] + ed[i]
        u_gss = -Kvec[i] * ed[i] - sigma * beta * g_by_hand(fname, s_i / eps)
        u_gd = -(e[i] + 0.3 * z[i] + 1.7 * ed[i]) - sigma * rho * g_by_hand(fname, ed[i] / eps)
        assert gss(0.0, np.array(e), np.array(ed))[i] == pytest.approx(u_gss, rel=1e-12, abs=1e-12)
        assert gd(0.0, np.array(e), np.array(ed), np.array(z))[i] == pytest.approx(u_gd, rel=1e-12, abs=1e-12)
        if gdbar is not None:
            u_bar = -(e[i] + K * inf_norm**2.0 * ed[i] + sigma * g_by_hand(fname, ed[i] / eps))
            assert gdbar(0.0, np.array(e), np.array(ed))[i] == pytest.approx(u_bar, rel=1e-12, abs=1e-12)


def test_presets_use_sign():
    e, ed, z = np.array([0.1, -0.2, 0.0]), np.array([-0.3, 0.0, 0.2]), np.array([1.0, 2.0, 3.0])
    smc, lc, lr = sliding_mode(K=2.0), leitmann_corless(Kd=1.0), lyapunov_redesign(k=4.0)
    np.testing.assert_allclose(smc(0, e, ed), -2.0 * ed - (110 / 0.5) * np.sign(2.0 * e + ed))
    np.testing.assert_allclose(lc(0, e, ed, z), -(e + ed) - (101 / 0.5) * np.sign(ed))
    np.testing.assert_allclose(lr(0, e, ed), -(e + 4.0 * ed + np.sign(ed)))
    assert lr.n == 1.0
    assert [type(c) for c in (smc, lc, lr)] == [SlidingMode, LeitmannCorless, LyapunovRedesign]


# --------------------------------------------------------------------------- #
# batch shapes and states
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize("comp", [GSS(K=[1.0, 2.0, 3.0]), GD(Ki=0.5, Kd=1.0), GDBar(n=2.0, f=CUBIC), sliding_mode()])
def test_batch_axes(comp):
    rng = np.random.default_rng(1)
    e, ed, z = (rng.normal(scale=0.05, size=(4, 5, N)) for _ in range(3))
    zs = z if comp.n_states(N) else np.zeros((4, 5, 0))
    u = comp(0.0, e, ed, zs)
    assert u.shape == (4, 5, N)
    for idx in np.ndindex(4, 5):
        np.testing.assert_allclose(u[idx], comp(0.0, e[idx], ed[idx], zs[idx]), rtol=1e-14)
    dz = comp.state_derivative(0.0, e, ed, zs)
    assert dz.shape == (4, 5, comp.n_states(N))
    assert comp.initial_state(N).shape == (comp.n_states(N),)


def test_gd_carries_the_integral_of_e():
    gd = GD()
    e = np.array([0.1, -0.2, 0.3])
    assert gd.n_states(3) == 3 and GSS().n_states(3) == 0 and GDBar().n_states(3) == 0
    np.testing.assert_array_equal(gd.state_derivative(0.0, e, 0 * e, 0 * e), e)
    with pytest.raises(ParameterError, match="needs its state `z`"):
        gd(0.0, e, e)


# --------------------------------------------------------------------------- #
# Lyapunov decrease outside the promised box
# --------------------------------------------------------------------------- #
def worst_case_accel(u, x, gamma, mu):
    """ë for the worst admissible δq, M̃_a against growth of |x_{i*}|, batched over rows."""
    sx = np.sign(x)
    dq = gamma * sx
    istar = np.argmax(np.abs(x), axis=-1)
    j = np.argmax(np.abs(u), axis=-1)
    rows = np.arange(len(x))
    Mt_u = np.zeros_like(u)  # only row i* is nonzero: μ sign e_jᵀ with the sign pushing outward
    Mt_u[rows, istar] = -mu * sx[rows, istar] * np.abs(u[rows, j])
    return dq + u - Mt_u


def random_accel(rng, u, gamma, mu):
    B, n = u.shape
    dq = gamma * rng.uniform(-1, 1, size=(B, n))
    Mt = rng.normal(size=(B, n, n))
    Mt *= (mu * rng.uniform(0, 1, size=(B, 1, 1))) / np.abs(Mt).sum(-1).max(-1)[:, None, None]
    return dq + u - np.einsum("bij,bj->bi", Mt, u)


def dV(x, xdot):
    """D⁺ ½‖x‖∞² = x_{i*} ẋ_{i*} at the largest component."""
    i = np.argmax(np.abs(x), axis=-1)
    rows = np.arange(len(x))
    return x[rows, i] * xdot[rows, i]


def directions(rng, B, n, norm):
    """B random vectors with ‖·‖∞ = norm (per row)."""
    v = rng.uniform(-1, 1, size=(B, n))
    return v / np.abs(v).max(-1, keepdims=True) * np.reshape(norm, (-1, 1))


continuous_g = st.sampled_from(["signed-quadratic", "cubic", "tanh", "saturation", "signed-power"])


def make_g(name, eps, p):
    kw = {"alpha_c": 2.0} if name in ("signed-quadratic", "cubic") else {}
    if name == "signed-power":
        kw = {"alpha_c": 2.0, "p": p}
    return control_function(name, eps=eps, **kw)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), gname=continuous_g, p=st.floats(0.3, 3.0), eps=st.floats(1e-3, 0.5),
       K=st.floats(0.5, 20.0), gp=st.floats(1.0, 900.0), b0=st.floats(0.1, 30.0), a0=st.floats(0.05, 0.95),
       sigma=st.floats(1.0, 3.0), frac=st.one_of(st.just(0.0), st.floats(1e-6, 1.0)))
def test_gss_lyapunov_decrease_outside_box(seed, gname, p, eps, K, gp, b0, a0, sigma, frac):
    rng = np.random.default_rng(seed)
    Kvec = K * rng.uniform(0.5, 2.0, size=N)
    comp = GSS(K=Kvec, gamma_prime=gp, beta0=b0, alpha0=a0, sigma=sigma, f=make_g(gname, eps, p))
    gamma, mu = frac * gp, 1 - a0 / sigma
    b = comp.bounds(gamma=gamma)
    L = b.edot
    if not math.isfinite(L):  # bounded g below the threshold: no box promised
        assert comp.f.inverse(gamma / (gp + b0)) == math.inf or gname in ("tanh", "saturation")
        return
    B = 400
    outside = 0.5 * L if L > 0 else 1e-3 * comp.f.eps  # L = 0 (Γ = 0): any s ≠ 0 is outside
    s = directions(rng, B, N, outside * (1 + 10 ** rng.uniform(-6, 3, size=B)))
    ed = directions(rng, B, N, L * rng.uniform(0, 1, size=B))
    e = (s - ed) / Kvec
    u = comp(0.0, e, ed)
    for acc in (worst_case_accel(u, s, gamma, mu), random_accel(rng, u, gamma, mu)):
        sdot = Kvec * ed + acc
        assert np.all(dV(s, sdot) < 0)
    assert b.e == pytest.approx(L / (2 * Kvec.min()))


def test_gss_box_is_tight():
    comp = GSS()  # seed settings, g signed quadratic
    L, gamma, mu = comp.bounds().edot, 100.0, 0.5
    for scale, sign in ((0.999, +1), (1.001, -1)):
        s = np.array([[0.5 * L * scale, 0.1 * L, -0.2 * L]])
        ed = np.array([[L, 0.0, 0.0]])  # aligned with s_1, at the size the fixed point assumes
        u = comp(0.0, (s - ed) / 10.0, ed)
        sdot = 10.0 * ed + worst_case_accel(u, s, gamma, mu)
        assert np.sign(dV(s, sdot)[0]) == sign


def test_seed_quadratic_lyapunov_function_can_grow_outside_the_box():
    """W's V = ½ sᵀs with ‖·‖∞ Cauchy–Schwarz (7.2.20–7.2.21) fails for n ≥ 2: a state just
    outside the box where ½ sᵀs grows while ½‖s‖∞² decreases (why we use the latter)."""
    comp = GSS()
    L, gamma, mu = comp.bounds().edot, 100.0, 0.5
    s = np.array([0.5 * L * 1.01, 0.25 * L, 0.25 * L])
    e, ed = s / 10.0, np.zeros(3)
    u = comp(0.0, e, ed)
    Mt = np.zeros((3, 3))
    Mt[:, 0] = -mu * np.sign(u[0])  # every row pushes outward with the largest |u_j|: ‖M̃_a‖∞ = μ
    sdot = gamma * np.sign(s) + u - Mt @ u
    assert s @ sdot > 0
    assert s[0] * sdot[0] < 0


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), gname=continuous_g, p=st.floats(0.3, 3.0), eps=st.floats(1e-3, 0.5),
       Ki=st.floats(0.0, 2.0), dKd=st.floats(0.01, 3.0), gam=st.floats(0.0, 900.0), rho0=st.floats(1.0, 20.0),
       a0=st.floats(0.05, 0.95), sigma=st.floats(1.0, 3.0), frac=st.one_of(st.just(0.0), st.floats(1e-6, 1.0)))
def test_gd_lyapunov_decrease_outside_box(seed, gname, p, eps, Ki, dKd, gam, rho0, a0, sigma, frac):
    rng = np.random.default_rng(seed)
    comp = GD(Ki=Ki, Kd=Ki + dKd, gamma=gam, rho0=rho0, alpha0=a0, sigma=sigma, f=make_g(gname, eps, p))
    gamma_true, mu = frac * gam, 1 - a0 / sigma
    r = comp.bounds(gamma=gamma_true).edot
    assert comp.bounds().e == math.inf
    if not math.isfinite(r):
        return
    B = 400
    ed = directions(rng, B, N, r * (1 + 10 ** rng.uniform(-6, 3, size=B)))
    # e, z with ‖(I − M̃_a)(e + K_i z)‖∞ ≤ (1 + μ)‖e + K_i z‖∞ ≤ ρ0 (the assumption)
    pi_part = directions(rng, B, N, rho0 / (1 + mu) * rng.uniform(0, 1, size=B))
    half, istar = np.arange(B // 2), np.argmax(np.abs(ed[: B // 2]), axis=-1)
    pi_part[half, istar] = -np.sign(ed[half, istar]) * rho0 / (1 + mu)  # P at its limit, pushing outward
    z = rng.normal(size=(B, N))
    e = pi_part - Ki * z
    u = comp(0.0, e, ed, z)
    for acc in (worst_case_accel(u, ed, gamma_true, mu), random_accel(rng, u, gamma_true, mu)):
        assert np.all(dV(ed, acc) < 0)


def test_gd_box_is_tight():
    comp = GD(Kd=3.0)
    r, mu = comp.bounds().edot, 0.5
    for scale, sign in ((0.999, +1), (1.001, -1)):
        ed = np.array([[r * scale, 0.3 * r, -0.5 * r]])
        e = np.array([[-comp.rho0 / (1 - mu), 0.0, 0.0]])  # P = ρ0, pushing outward
        u = comp(0.0, e, ed, np.zeros((1, 3)))
        acc = worst_case_accel(u, ed, 100.0, mu)
        assert np.sign(dV(ed, acc)[0]) == sign


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), gname=st.sampled_from(["signed-quadratic", "cubic", "signed-power"]),
       p=st.floats(0.3, 3.0), eps=st.floats(1e-3, 0.5), k=st.floats(0.1, 50.0), n=st.floats(1.0, 2.5),
       gam=st.floats(0.0, 900.0), a0=st.floats(0.05, 0.95), sigma=st.floats(1.0, 3.0))
def test_gdbar_lyapunov_decrease_outside_box(seed, gname, p, eps, k, n, gam, a0, sigma):
    rng = np.random.default_rng(seed)
    comp = GDBar(k=k, n=n, sigma=sigma, alpha0=a0, f=make_g(gname, eps, p))
    mu = 1 - a0 / sigma
    B = 400
    e = directions(rng, B, N, 0.01 * rng.uniform(0, 1, size=B))
    P = (1 + mu) * 0.01  # ≥ ‖(I − M̃_a) e‖∞: the position error as extra disturbance
    r = comp.bounds(gamma=gam + P).edot
    ed = directions(rng, B, N, r * (1 + 10 ** rng.uniform(-6, 2, size=B)))
    u = comp(0.0, e, ed)
    for acc in (worst_case_accel(u, ed, gam, mu), random_accel(rng, u, gam, mu)):
        assert np.all(dV(ed, acc) < 0)


def test_gdbar_box_is_tight():
    comp = GDBar()
    r, mu = comp.bounds(gamma=100.0).edot, 0.5
    for scale, sign in ((0.999, +1), (1.001, -1)):
        ed = np.array([[r * scale, 0.3 * r, -0.5 * r]])
        u = comp(0.0, np.zeros((1, 3)), ed)
        assert np.sign(dV(ed, worst_case_accel(u, ed, 100.0, mu))[0]) == sign


@pytest.mark.parametrize("law, removed", [
    ("gss", "gamma"), ("gss", "mu"), ("gss", "start"),
    ("gd", "gamma"), ("gd", "mu"), ("gd", "P"),
    ("gdbar", "gamma"), ("gdbar", "mu"), ("gdbar", "P"),
])
def test_each_box_breaks_without_its_assumption(law, removed):
    """docs/theory/compensator-bounds.md: each box decreases V just outside it under its assumptions (the
    *_box_is_tight tests) and V grows there once one assumption is removed — ‖δq‖∞ = 2Γ, ‖M̃ₐ‖∞ = 0.9 > 1 − α0/σ,
    GSS's state outside its invariant set (|e_1| ≈ 9 L_ε/(2k) > L_ε/(2k): ‖ė‖∞ = 5 L_ε, so ‖M̃ₐKė‖∞ > μ k L_ε), GD's
    P = 2ρ0, GD-bar's
    dropped P = ‖(I − M̃ₐ)e‖∞ = 1 % of Γ. Each state lies 0.1 % outside its box; the worst-case acceleration is
    worst_case_accel's (δq and M̃ₐ pushing |x_{i*}| outward)."""
    gamma = 2 * 100.0 if removed == "gamma" else 100.0
    mu = 0.9 if removed == "mu" else 0.5
    if law == "gss":
        comp = GSS()
        L = comp.bounds().edot
        s = np.array([[0.5 * L * 1.001, 0.1 * L, -0.2 * L]])
        ed = np.array([[5 * L if removed == "start" else L, 0.0, 0.0]])
        e = (s - ed) / 10.0
        x, xdot = s, 10.0 * ed + worst_case_accel(comp(0.0, e, ed), s, gamma, mu)
        if removed != "start":  # the state itself lies in the invariant set: |e_i| ≤ L/(2k_i)
            assert np.all(np.abs(e) <= L / 20 * (1 + 1e-12))
    else:
        comp = GD(Kd=3.0) if law == "gd" else GDBar()
        r = comp.bounds(gamma=100.0).edot
        x = np.array([[r * 1.001, 0.3 * r, -0.5 * r]])
        if law == "gd":  # P = ‖(I − M̃ₐ)e‖∞ = ρ0 (at its limit) or 2ρ0, pushing outward
            e = np.array([[-(2.0 if removed == "P" else 1.0) * comp.rho0 / (1 - mu), 0.0, 0.0]])
            u = comp(0.0, e, x, np.zeros((1, 3)))
        else:  # GD-bar's box assumes P = 0 against Γ
            e = np.array([[-0.01 * 100.0 / (1 - mu) if removed == "P" else 0.0, 0.0, 0.0]])
            u = comp(0.0, e, x)
        xdot = worst_case_accel(u, x, gamma, mu)
    assert dV(x, xdot)[0] > 0


# --------------------------------------------------------------------------- #
# the numbers, against closed forms, and against W
# --------------------------------------------------------------------------- #
def test_gss_seed_bounds_closed_form():
    # quadratic g: (Γ′+β0) α_c (L/2ε)² = Γ + μ k L, the positive root
    eps, ac, gp, b0, k, mu = 1e-2, 2.0, 100.0, 10.0, 10.0, 0.5
    a = (gp + b0) * ac / (4 * eps**2)
    L = (mu * k + math.sqrt((mu * k) ** 2 + 4 * a * gp)) / (2 * a)
    b = GSS().bounds()
    assert b.edot == pytest.approx(L, rel=1e-12) and b.e == pytest.approx(L / (2 * k), rel=1e-12)
    assert b.edot == pytest.approx(1.349e-2, rel=1e-3) and b.gamma == 100.0
    # cubic g, Γ′ = 800: the real root of (Γ′+β0) α_c (L/2ε)³ − μ k L − Γ = 0
    roots = np.roots([(800 + b0) * ac / (2 * eps) ** 3, 0.0, -mu * k, -800.0])
    L3 = max(r.real for r in roots if abs(r.imag) < 1e-9)
    assert GSS(gamma_prime=800, f=CUBIC).bounds().edot == pytest.approx(L3, rel=1e-12)


def test_gss_w_numbers_need_a_much_smaller_gamma():
    """W's 2e-4 / 4e-3 (quadratic) follow from (7.2.26) with Γ ≈ 8.8, not with Γ′ = 100."""
    b = GSS().bounds(gamma=8.8)
    assert b.e == pytest.approx(2e-4, rel=2e-3) and b.edot == pytest.approx(4e-3, rel=2e-3)
    assert GSS().bounds().e > 3 * 2e-4


def test_sliding_mode_reaches_the_surface():
    b = sliding_mode().bounds()
    assert b.e == 0.0 and b.edot == 0.0
    assert sliding_mode().bounds(gamma=200.0).edot == math.inf  # Γ ≥ Γ′ + β0: nothing promised


def test_an_infinite_bound_is_said_as_the_settings_not_as_a_baseline():
    """A bounded law whose bound is infinite with its settings (sliding mode at Γ ≥ Γ′ + β0) promises nothing, and
    the verdict says why in its terms; only a baseline's bounds (no Γ) are called a baseline's."""
    from robustrack.controllers.baselines import ComputedTorque
    from robustrack.tracking.assess import bounds_verdict

    run = {"bounds_held": None}
    infinite = bounds_verdict(run, sliding_mode().bounds(gamma=200.0).to_dict())
    assert infinite.startswith("nothing promised: the compensator's bound is infinite with these settings and Γ = 200")
    assert "baseline" not in infinite
    assert bounds_verdict(run, ComputedTorque().bounds().to_dict()).endswith("promises no bound (a baseline)")


def test_gd_seed_bounds_closed_form():
    eps, ac, a0 = 1e-2, 2.0, 0.5
    # (Γ+ρ0) α_c (r/ε)² + K_d α0 r = Γ + ρ0
    a, b, c = 101.0 * ac / eps**2, 3.0 * a0, -101.0
    r = (-b + math.sqrt(b * b - 4 * a * c)) / (2 * a)
    assert GD().bounds().edot == pytest.approx(r, rel=1e-12)
    assert GD(Kd=0.0).bounds().edot == pytest.approx(eps / math.sqrt(ac), rel=1e-14)  # ε g⁻¹(1)
    assert GD().seed_radius == pytest.approx(0.0707, rel=1e-3)  # W's r_ε = 0.07 (8.2.16)
    assert leitmann_corless().bounds().edot == 0.0


def test_gdbar_seed_bounds_closed_form_and_w_formula():
    eps, ac, a0, k = 1e-2, 2.0, 0.5, 10.0
    # α0 α_c (r/ε)² + α0 k r = Γ
    a, b = a0 * ac / eps**2, a0 * k
    r = (-b + math.sqrt(b * b + 4 * a * 100.0)) / (2 * a)
    assert GDBar().bounds(gamma=100.0).edot == pytest.approx(r, rel=1e-12)
    assert r == pytest.approx(9.975e-2, rel=1e-3)
    roots = np.roots([a0 * ac / eps**3, 0.0, a0 * k, -800.0])
    r3 = max(x.real for x in roots if abs(x.imag) < 1e-9)
    assert GDBar(f=CUBIC).bounds(gamma=800.0).edot == pytest.approx(r3, rel=1e-12)
    # W (8.3.23) as W evaluates it: 5e-2 (Γ = 100, quadratic) and 5.8e-2 (Γ = 800, cubic)
    assert GDBar().seed_bound(100.0) == pytest.approx(5e-2, rel=1e-12)
    assert GDBar(f=CUBIC).seed_bound(800.0) == pytest.approx(5.8e-2, rel=1e-2)
    none = GDBar().bounds()
    assert none.e == math.inf and none.edot == math.inf and none.gamma is None


def test_bounds_records_are_complete():
    for comp in (GSS(), GD(), GDBar()):
        b = comp.bounds(gamma=50.0)
        assert b.gamma == 50.0 and "W " in b.formula and b.region and b.assumptions
        assert set(b.to_dict()) == {"e", "edot", "region", "formula", "assumptions", "gamma"}
    with pytest.raises(ParameterError, match="gamma"):
        GSS().bounds(gamma=-1.0)


# --------------------------------------------------------------------------- #
# validation, registry, presets
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize(
    "cls, kwargs, match",
    [
        (GSS, {"K": 0.0}, r"`K` must be > 0"),
        (GSS, {"K": [1.0, -1.0, 2.0]}, r"`K` must be > 0"),
        (GSS, {"K": [[1.0]]}, r"`K` must be a scalar or one gain per coordinate"),
        (GSS, {"gamma_prime": -1.0}, r"`gamma_prime` must be >= 0"),
        (GSS, {"beta0": 0.0}, r"`beta0` must be > 0"),
        (GSS, {"alpha0": 1.0}, r"`alpha0` must be in \(0, 1\)"),
        (GSS, {"alpha0": 0.0}, r"`alpha0` must be in \(0, 1\)"),
        (GSS, {"sigma": 0.5}, r"`sigma` must be >= 1"),
        (GSS, {"f": np.tanh}, r"`f` must be a ControlFunction"),
        (GSS, {"K": float("nan")}, r"`K` must be > 0"),
        (GD, {"Ki": -0.1}, r"`Ki` must be >= 0"),
        (GD, {"Kd": -1.0}, r"`Kd` must be >= 0"),
        (GD, {"Ki": 2.0, "Kd": 1.0}, r"`Kd` must be > `Ki` when Ki > 0"),
        (GD, {"rho0": 0.5}, r"`rho0` must be >= 1"),
        (GD, {"gamma": -5.0}, r"`gamma` must be >= 0"),
        (GD, {"alpha_eps": 0.0}, r"`alpha_eps` must be > 0"),
        (GDBar, {"k": 0.0}, r"`k` must be > 0"),
        (GDBar, {"n": 0.5}, r"`n` must be >= 1"),
        (GDBar, {"sigma": 0.0}, r"`sigma` must be >= 1"),
        (GDBar, {"alpha0": 1.5}, r"`alpha0` must be in \(0, 1\)"),
    ],
)
def test_parameter_rules(cls, kwargs, match):
    with pytest.raises(ParameterError, match=match):
        cls(**kwargs)


def test_seed_parameters_are_accepted():
    """W's own GD run (K_d = 3 > α_ε = 2) passes: that rule of W 8.2.14 is not enforced."""
    GD(Ki=0.0, Kd=3.0, gamma=100.0, rho0=1.0, alpha0=0.5, sigma=1.0, f=QUAD, alpha_eps=2.0)
    GSS(K=10.0, gamma_prime=800.0, beta0=10.0, alpha0=0.5, sigma=1.0, f=CUBIC)
    GDBar(k=10.0, n=1, sigma=1.0, f=QUAD)


def test_registry_and_factory():
    assert set(COMPENSATORS) == {"gss", "gd", "gdbar", "smc", "leitmann-corless", "lyapunov-redesign",
                                 "computed-torque", "lqr"}
    for name, cls in COMPENSATORS.items():
        comp = make_compensator(name)
        assert type(comp) is cls and comp.name == name
    assert make_compensator(GD, Kd=2.0).Kd == 2.0
    with pytest.raises(ParameterError, match=r"Unknown compensator 'pid'; valid names: gss, gd, gdbar"):
        make_compensator("pid")
    with pytest.raises(ParameterError, match=r"GSS has no parameter\(s\) 'Kd'; valid: K, gamma_prime"):
        make_compensator("gss", Kd=1.0)
    with pytest.raises(ParameterError, match=r"has no parameter\(s\) 'f'"):
        sliding_mode(f=QUAD)
    with pytest.raises(ParameterError, match=r"has no parameter\(s\) 'n'"):
        lyapunov_redesign(n=2)


def test_discontinuity_flags_and_params():
    assert not GSS().discontinuous and not GD().discontinuous and not GDBar().discontinuous
    assert sliding_mode().discontinuous and leitmann_corless().discontinuous and lyapunov_redesign().discontinuous
    assert GSS(K=[1, 2, 3]).params["K"].tolist() == [1.0, 2.0, 3.0]
    assert set(GD().params) == {"Ki", "Kd", "gamma", "rho0", "alpha0", "sigma", "f", "alpha_eps"}
    with pytest.raises(AttributeError):
        GSS().K = 3.0  # frozen
