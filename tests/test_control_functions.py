"""Control functions f(x) = g(x/ε): built-ins, generalized inverse, the numerical validator."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from robustrack.controllers import GD, GSS, CONTROL_FUNCTIONS, GDBar, control_function
from robustrack.controllers import leitmann_corless, lyapunov_redesign, sliding_mode
from robustrack.errors import ControlFunctionError, ParameterError

# name -> (kwargs, g written out by hand, continuous, strictly increasing, unbounded)
BUILTINS = {
    "sign": ({}, np.sign, False, False, False),
    "saturation": ({}, lambda x: np.minimum(1.0, np.maximum(-1.0, x)), True, False, False),
    "tanh": ({}, np.tanh, True, True, False),
    "signed-quadratic": ({"alpha_c": 2.0}, lambda x: 2.0 * x * np.abs(x), True, True, True),
    "cubic": ({"alpha_c": 2.0}, lambda x: 2.0 * x**3, True, True, True),
    "signed-power": (
        {"alpha_c": 1.5, "p": 0.5}, lambda x: 1.5 * np.sign(x) * np.sqrt(np.abs(x)), True, True, True
    ),
}


def test_registry_is_the_documented_set():
    assert set(CONTROL_FUNCTIONS) == set(BUILTINS)


@pytest.mark.parametrize("name", sorted(BUILTINS))
def test_builtin_values_flags_and_shapes(name):
    kwargs, g, continuous, strictly, unbounded = BUILTINS[name]
    eps = 0.03
    f = control_function(name, eps=eps, **kwargs)
    assert (f.continuous, f.strictly_increasing, f.unbounded) == (continuous, strictly, unbounded)
    rng = np.random.default_rng(0)
    for shape in [(), (5,), (2, 3, 4)]:
        x = rng.normal(scale=0.1, size=shape)
        out = f(x)
        assert np.shape(out) == shape
        np.testing.assert_allclose(out, g(np.asarray(x) / eps), rtol=1e-14, atol=0)
    x = np.sort(rng.normal(scale=3.0, size=2001))
    gx = f.g(x)
    np.testing.assert_array_equal(f.g(-x), -gx)  # odd
    assert np.all(np.diff(gx) >= 0)  # non-decreasing
    assert f.g(0.0) == 0.0


@pytest.mark.parametrize("name", sorted(BUILTINS))
def test_builtin_g_passes_the_user_validator(name):
    """The same g, handed in as an anonymous callable, is accepted with the same flags."""
    kwargs, g, continuous, strictly, unbounded = BUILTINS[name]
    f = control_function(lambda x: g(x), eps=1.0, continuous=None if continuous else False)
    assert (f.continuous, f.strictly_increasing, f.unbounded) == (continuous, strictly, unbounded)


@pytest.mark.parametrize("name", ["tanh", "signed-quadratic", "cubic", "signed-power"])
def test_inverse_inverts_strictly_increasing_builtins(name):
    kwargs, g, *_ = BUILTINS[name]
    f = control_function(name, eps=0.5, **kwargs)
    x = np.linspace(-3.0, 3.0, 61)
    np.testing.assert_allclose(f.inverse(g(x)), x, rtol=1e-9, atol=1e-12)
    y = np.linspace(-0.99, 0.99, 41)
    np.testing.assert_allclose(g(f.inverse(y)), y, rtol=1e-9, atol=1e-12)


def test_closed_form_and_bisection_inverses_agree():
    for name in ["tanh", "signed-quadratic", "cubic", "signed-power", "saturation", "sign"]:
        kwargs, g, continuous, *_ = BUILTINS[name]
        builtin = control_function(name, eps=1.0, **kwargs)
        user = control_function(lambda x: g(x), eps=1.0, continuous=None if continuous else False)
        y = np.array([0.0, 0.2, 0.7, 0.999, 1.0, 1.5, 40.0])
        np.testing.assert_allclose(user.inverse(y), builtin.inverse(y), rtol=1e-12, atol=1e-300)


def test_generalized_inverse_of_bounded_and_flat_functions():
    sign = control_function("sign", eps=1.0)
    assert sign.inverse(0.5) == 0.0 and sign.inverse(1.0) == math.inf and sign.inverse(-2.0) == -math.inf
    sat = control_function("saturation", eps=1.0)
    np.testing.assert_array_equal(sat.inverse([0.25, -0.5, 1.0]), [0.25, -0.5, math.inf])
    assert control_function("tanh", eps=1.0).inverse(1.0) == math.inf


def test_user_inverse_against_polynomial_roots():
    f = control_function(lambda x: x + x**3, eps=1.0)
    for y in [0.1, 2.0, 30.0]:
        root = [r.real for r in np.roots([1, 0, 1, -y]) if abs(r.imag) < 1e-12][0]
        assert f.inverse(y) == pytest.approx(root, rel=1e-12)


@settings(max_examples=30, deadline=None)
@given(p=st.floats(0.2, 4.0), alpha_c=st.floats(0.1, 10.0), y=st.floats(1e-6, 1e6))
def test_signed_power_inverse_roundtrip(p, alpha_c, y):
    f = control_function("signed-power", eps=0.1, alpha_c=alpha_c, p=p)
    assert float(f.g(f.inverse(y))) == pytest.approx(y, rel=1e-9)
    assert float(f.inverse(-y)) == -float(f.inverse(y))


def test_scalar_only_user_function_is_vectorized():
    f = control_function(lambda v: math.atan(v) + v, eps=0.5)
    x = np.array([[0.1, -0.2], [1.0, 3.0]])
    np.testing.assert_allclose(f(x), np.arctan(x / 0.5) + x / 0.5)
    assert f.strictly_increasing and f.unbounded


# --------------------------------------------------------------------------- #
# refusals
# --------------------------------------------------------------------------- #
def test_even_function_refused_naming_property_and_point():
    with pytest.raises(ControlFunctionError, match=r"not odd.*x = "):
        control_function(lambda x: x**2, eps=1.0)


def test_offset_function_refused_as_not_odd():
    with pytest.raises(ControlFunctionError, match="not odd"):
        control_function(lambda x: np.tanh(x) + 0.1, eps=1.0)


def test_decreasing_function_refused_naming_property_and_point():
    with pytest.raises(ControlFunctionError, match=r"not monotonically non-decreasing.*between x = "):
        control_function(lambda x: -x, eps=1.0)
    # odd, increasing near 0, decreasing after x = 1
    with pytest.raises(ControlFunctionError, match=r"decreases between x = -?[0-9.e+-]+ \(g = "):
        control_function(lambda x: x * np.exp(-(x**2) / 2), eps=1.0)


def step_at_five(x):
    x = np.asarray(x, dtype=float)
    return x + np.where(x > 5, 1.0, 0.0) - np.where(x < -5, 1.0, 0.0)


def test_jump_refused_naming_property_and_point():
    with pytest.raises(ControlFunctionError, match=r"not continuous: it jumps by 1 at x ≈ [-]?5\b"):
        control_function(step_at_five, eps=1.0)
    with pytest.raises(ControlFunctionError, match="not continuous"):
        control_function(np.sign, eps=1.0)
    with pytest.raises(ControlFunctionError, match="not continuous"):
        control_function(step_at_five, eps=1.0, continuous=True)


def test_declared_discontinuous_accepted_and_flagged():
    f = control_function(step_at_five, eps=1.0, continuous=False)
    assert not f.continuous and f.strictly_increasing and f.unbounded


def test_steep_but_continuous_functions_are_not_jumps():
    steep = [
        lambda x: np.tanh(1e4 * x),
        lambda x: np.sign(x) * np.abs(x) ** 0.1,
        lambda x: np.arctan(x - 3) + np.arctan(x + 3),  # rounding noise near 0
    ]
    for g in steep:
        assert control_function(g, eps=1.0).continuous


def test_nan_refused():
    with pytest.raises(ControlFunctionError, match="NaN"):
        control_function(lambda x: np.where(np.abs(x) > 2, np.nan, x), eps=1.0)


def test_unknown_name_lists_valid_ones():
    with pytest.raises(ControlFunctionError, match=r"Unknown control function 'quartic'.*cubic.*saturation.*tanh"):
        control_function("quartic", eps=1.0)


@pytest.mark.parametrize(
    "args, kwargs, match",
    [
        (("cubic",), {"eps": 1.0}, "needs `alpha_c`"),
        (("signed-power",), {"eps": 1.0, "alpha_c": 1.0}, "needs `p`"),
        (("signed-power",), {"eps": 1.0, "alpha_c": 1.0, "p": 0.0}, r"`p` of 'signed-power' must be > 0"),
        (("cubic",), {"eps": 1.0, "alpha_c": -2.0}, "must be > 0"),
        (("tanh",), {"eps": 1.0, "alpha_c": 2.0}, "takes no `alpha_c`"),
        (("cubic",), {"eps": 1.0, "alpha_c": 2.0, "p": 3.0}, "takes no `p`"),
        ((np.tanh,), {"eps": 1.0, "alpha_c": 2.0}, "apply to the built-in"),
        (("sign",), {"eps": 1.0, "continuous": False}, "callables only"),
        ((42,), {"eps": 1.0}, "name or a callable"),
    ],
)
def test_parameter_errors(args, kwargs, match):
    with pytest.raises(ControlFunctionError, match=match):
        control_function(*args, **kwargs)


@pytest.mark.parametrize("eps", [0.0, -1e-3, float("nan")])
def test_eps_must_be_positive(eps):
    with pytest.raises(ParameterError, match="eps"):
        control_function("tanh", eps=eps)


# --------------------------------------------------------------------------- #
# what each compensator requires of g
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize("cls", [GSS, GD])
def test_gss_and_gd_refuse_an_undeclared_step_but_take_a_declared_one(cls):
    with pytest.raises(ControlFunctionError, match="not continuous"):
        cls(f=control_function(step_at_five, eps=0.01))
    comp = cls(f=control_function(step_at_five, eps=0.01, continuous=False))
    assert comp.discontinuous


@pytest.mark.parametrize(
    "name, missing", [("saturation", "unbounded"), ("tanh", "unbounded"), ("sign", "strictly increasing")]
)
def test_gdbar_refuses_bounded_or_flat_g(name, missing):
    with pytest.raises(ControlFunctionError, match=rf"GDBar needs .*{missing}.*{name!r} is not"):
        GDBar(f=control_function(name, eps=0.01))


def test_gdbar_accepts_unbounded_strictly_increasing_g():
    cubic = control_function("cubic", eps=0.01, alpha_c=2.0)
    power = control_function("signed-power", eps=0.01, alpha_c=1.0, p=0.7)
    for f in (cubic, power):
        assert not GDBar(f=f).discontinuous


def test_sign_presets_are_allowed_and_flagged():
    for comp in [sliding_mode(), leitmann_corless(), lyapunov_redesign()]:
        assert comp.discontinuous and comp.f.name == "sign"
