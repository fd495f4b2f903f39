"""A structure's own functions as the code generator writes them (robustrack.compiled.codegen), and what its
first run does once, not per structure (docs/results/performance.md, "The multi-row first run")."""

import ctypes
import math

import numpy as np
import sympy as sp
from numba import njit

from robustrack.compiled import codegen
from robustrack.compiled.loop import compiled_loop
from robustrack.compiled.systems import unused_slot
from robustrack.plants import NLinkPendulum, symbolic_model
from robustrack.symbolic import SymbolicForm, built, state_symbols

_POWERS = range(2, codegen._PRODUCT_POWERS + 1)


def _printed(expr) -> str:
    return codegen._printer()({"fully_qualified_modules": True, "standard": "python3"}).doprint(expr)


def test_integer_powers_print_as_numbas_own_power_bit_for_bit():
    """The truth is numba's ``**`` of a float by an integer, compiled as the generated functions were before: the
    printed products must give its bits for every k written as products, on bases over many magnitudes and signs
    (a product chain in another order, e.g. ((x·x)·x)·x·x for k = 5, rounds differently on some of them). A
    compound base checks the parentheses."""
    x, y = sp.symbols("x y", real=True)
    exprs = [x**k for k in _POWERS] + [(x - y) ** k for k in (2, 5)]
    assert not any("**" in _printed(e) for e in exprs)
    lines = [f"        a[j, {i}] = {sp.pycode(e)}\n        b[j, {i}] = {_printed(e)}" for i, e in enumerate(exprs)]
    scope = {}
    exec("def both(xs, ys, a, b):\n    for j in range(len(xs)):\n        x, y = xs[j], ys[j]\n"  # noqa: S102
         + "\n".join(lines), scope)
    both = njit(scope["both"])
    rng = np.random.default_rng(5)
    bases = np.concatenate([rng.uniform(-2.0, 2.0, 400), rng.standard_normal(200) * 10.0 ** rng.integers(-40, 40, 200),
                            [0.0, -0.0, 1.0, -1.0, 1e-300, 1e300, math.inf, -math.inf, math.nan]])
    a, b = np.empty((len(bases), len(exprs))), np.empty((len(bases), len(exprs)))
    both(bases, np.roll(bases, 7), a, b)
    np.testing.assert_array_equal(a.view(np.int64), b.view(np.int64))
    with np.errstate(over="ignore", invalid="ignore"):
        chain = (((bases * bases) * bases) * bases) * bases  # x⁵ multiplied in another order
    naive = np.count_nonzero(np.isfinite(a[:, 3]) & (a[:, 3] != chain))
    assert naive > 0  # the comparison can fail: another order of the products differs on these bases


def test_products_follow_square_and_multiply():
    """x⁵ = x · (x²)², x⁶ = x² · (x²)², x⁸ = ((x²)²)² (numba.cpython.numbers.int_power_impl's order)."""
    assert codegen._products("x", 5) == "(x*((x*x)*(x*x)))"
    assert codegen._products("x", 6) == "((x*x)*((x*x)*(x*x)))"
    assert codegen._products("x", 8) == "(((x*x)*(x*x))*((x*x)*(x*x)))"
    x = sp.Symbol("x", real=True)
    assert "**" in _printed(x ** (codegen._PRODUCT_POWERS + 1)) and "**" in _printed(x**-2)


def test_a_structure_is_built_once_for_both_generators(tmp_path, monkeypatch):
    """The numpy evaluation's text and the compiled functions' of a new structure come from one build (a seed
    constraint's build differentiates and factors); each text is the one its generator writes from a build of its
    own (the memo emptied: built again)."""
    from robustrack import symbolic

    monkeypatch.setenv("ROBUSTRACK_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(symbolic, "_BUILT", {})
    monkeypatch.setattr(codegen, "_BUILT", {})
    calls = []

    def build(q, qd, t):
        calls.append(1)
        a, b = sp.symbols("a b", real=True)
        return sp.Matrix([[a + b * q[0] ** 2]]), sp.Matrix([-a * sp.sin(q[0]) * qd[0] ** 3]), (a, b)

    key, form = f"test-built-once/{tmp_path.name}", SymbolicForm(f"test-built-once/{tmp_path.name}", [1.0, 2.0], build)
    mass, force = symbolic_model._plant_functions(key, build, 1)
    source = codegen.function_source(form, 1, "force")
    assert calls == [1] and built(key, build, 1)[0] == state_symbols(1)
    (text,) = [f.read_text() for f in (tmp_path / "models").glob("*.py")]
    assert np.isclose(mass(0.5, 0.0, 1.0, 2.0)[0], 1.5) and np.isclose(force(0.5, 2.0, 0.0, 1.0, 2.0)[0],
                                                                       -8.0 * math.sin(0.5))
    monkeypatch.setattr(symbolic, "_BUILT", {})
    monkeypatch.setattr(codegen, "_BUILT", {})
    assert codegen.function_source(form, 1, "force") == source and calls == [1, 1]
    (tmp_path / "models").rename(tmp_path / "kept")
    monkeypatch.setattr(symbolic_model, "_FUNCTIONS", {})
    symbolic_model._plant_functions(key, build, 1)
    assert calls == [1, 1] and [f.read_text() for f in (tmp_path / "models").glob("*.py")] == [text]


def test_the_unused_slots_are_one_function_of_the_kernels_writing_nan():
    """A nominal run without a constraint uses neither A, b nor the derivatives: those slots hold the kernels'
    NaN function (compiled once per machine), not a generated file of the structure."""
    unused = unused_slot()
    out, zeros = np.zeros(3), np.zeros(3)
    pointer = ctypes.POINTER(ctypes.c_double)
    unused.ctypes(*(a.ctypes.data_as(pointer) for a in (zeros, zeros)), 0.0,
                  *(a.ctypes.data_as(pointer) for a in (zeros, out)))
    assert math.isnan(out[0]) and out[1] == 0.0
    one = NLinkPendulum(m=[1.0], L=[1.0], g=9.81)
    model = compiled_loop(one, one, None, jacobian=False).model
    assert model.con_ab == model.nom_mass_dq == model.act_force_dq == unused.address
    assert model.nom_mass not in (0, unused.address)
