"""One source per control law (robustrack.controllers.laws): the numpy path and the compiled loop run it.

What is checked, and against what:

- the compiled law (numba) and the compensator's ``__call__`` (the same function run by Python on numpy)
  give the same floats, bit for bit: they execute the same IEEE operations in the same order (numba
  compiles without fast-math, so LLVM contracts no multiply-add into an FMA and reorders no sum). One
  exception, measured: tanh. numba calls the C library's tanh, numpy its own vectorized tanh, and the two
  differ by one unit in the last place on ~30 % of arguments; so with g = tanh, u agrees to a few ulps of
  its terms (|Δu| ≤ 4 ε (|u| + σβ), σβ |Δg| ≤ σβ ε being the whole difference). The same holds between
  numpy's own array loops and its scalar ones for tanh and for x^p (p = 1.5: numpy's vectorized pow
  differs from the C library's by an ulp on ~5 % of arguments), which a batch meets;
- the law's exact partial derivatives (the compiled loop's Jacobian) against the complex step of the
  numpy ``__call__``, an independent truth exact to rounding: 1e-12 relative, the bound of
  tests/test_compiled.py for two orders of the same double-precision arithmetic;
- a compensator defined only in this file, registered, runs on both paths of a tracking problem: its
  controlled right-hand side and Jacobian agree to 1e-12 (same reason), its u bit for bit, and whole runs
  agree to the integrators' tolerance (the two paths integrate with different BDF codes: scipy's in Python,
  and its port in the kernels, whose step sequences differ, so runs agree to rtol, not to rounding).
"""

import dataclasses
import types
from typing import ClassVar, NamedTuple

import numpy as np
import pytest
from numba.extending import register_jitable

from robustrack.controllers import (COMPENSATORS, GD, GSS, LQR, Compensator, ComputedTorque, GDBar,
                                    PromisedBounds, control_function, make_compensator)
from robustrack.controllers.laws import GSSParams, LinearParams, Matrix, Vector, pack, unpack
from robustrack.compiled import systems as rk
from robustrack.compiled.laws import law_type, law_u
from robustrack.compiled.loop import _KERNEL_MODULES, compiled_loop, kernel_law
from robustrack.plants import pendulum_energy_constraint, triple_pendulum
from robustrack.tracking import simulate_tracking
from robustrack.compiled.backend import CompiledBackend
from robustrack.tracking.integrate import integrate_nominal
from robustrack.tracking.rhs import complex_step_jacobian, controlled_rhs, nominal_motion

RNG = np.random.default_rng(31)


# --------------------------------------------------------------------------- #
# a compensator defined here only: a saturated PD, u = −clip(K_p e + K_d ė, −u_max, u_max)
# --------------------------------------------------------------------------- #
class SaturatedPDParams(NamedTuple):
    Kp: Vector
    Kd: Vector
    u_max: float


@register_jitable
def _clipped(p, i, v, u, Ue, Ued, jac):
    """Coordinate i of the saturated PD from v = K_p,i e_i + K_d,i ė_i: u_i and (``jac``) row i of its partials."""
    u[..., i] = -np.minimum(np.maximum(v, -p.u_max), p.u_max)
    if jac:
        inside = 1.0 if abs(v) < p.u_max else 0.0
        for j in range(Ue.shape[1]):
            Ue[i, j] = 0.0
            Ued[i, j] = 0.0
        Ue[i, i] = -p.Kp[i] * inside
        Ued[i, i] = -p.Kd[i] * inside


def saturated_pd_law(params, f, e, ed, z, u, Ue, Ued, Uz, jac):
    """u_i = −clip(K_p,i e_i + K_d,i ė_i, −u_max, u_max): numba's numpy subset, one source for both paths."""
    n = e.shape[-1]
    p = unpack(SaturatedPDParams, params, n)
    for i in range(n):
        _clipped(p, i, p.Kp[i] * e[..., i] + p.Kd[i] * ed[..., i], u, Ue, Ued, jac)


@dataclasses.dataclass(frozen=True, eq=False)
class SaturatedPD(Compensator):
    """A saturated PD: u = −clip(K_p e + K_d ė, −u_max, u_max) (an acceleration, applied as Qᵘ = M u)."""

    name: ClassVar[str] = "saturated-pd"
    law: ClassVar = saturated_pd_law
    Kp: float = 100.0
    Kd: float = 20.0
    u_max: float = 50.0

    def law_params(self, n):
        return SaturatedPDParams(Kp=self.Kp, Kd=self.Kd, u_max=self.u_max)

    def bounds(self, gamma=None):
        return PromisedBounds(np.inf, np.inf, "none", "a saturated PD (test)", "none")


def allocating_pd_law(params, f, e, ed, z, u, Ue, Ued, Uz, jac):
    """The saturated PD through a temporary array (``v``): a law that allocates when compiled."""
    n = e.shape[-1]
    p = unpack(SaturatedPDParams, params, n)
    v = p.Kp * e + p.Kd * ed
    for i in range(n):
        _clipped(p, i, v[..., i], u, Ue, Ued, jac)


@dataclasses.dataclass(frozen=True, eq=False)
class AllocatingPD(SaturatedPD):
    """:class:`SaturatedPD` by :func:`allocating_pd_law`."""

    name: ClassVar[str] = "allocating-pd"
    law: ClassVar = allocating_pd_law


@pytest.fixture(params=[SaturatedPD, AllocatingPD], ids=["saturated-pd", "allocating-pd"])
def registered(request, monkeypatch):
    """A compensator of this file, registered: one whose law compiles without reference counts, one with."""
    monkeypatch.setitem(COMPENSATORS, request.param.name, request.param)
    return make_compensator(request.param.name, Kp=[80.0, 100.0, 120.0], u_max=2.0)


NOMINAL = triple_pendulum()
ACTUAL = NOMINAL.replace(m=(1.1, 1.8, 3.3))
ENERGY = pendulum_energy_constraint(L1=1.0, g=9.81, gain=0.02, n=3, m1=1.0)
Q0, QD0 = np.array([1.0, 0.0, 0.0]), np.array([0.001, 0.0, 0.0])


def _rel(a, b) -> float:
    return float(np.max(np.abs(np.asarray(a) - np.asarray(b))) / max(np.max(np.abs(b)), 1e-300))


def _builtins():
    params = {"signed-quadratic": {"alpha_c": 2.0}, "cubic": {"alpha_c": 2.0}, "signed-power": {"alpha_c": 2.0, "p": 1.5}}
    for name in ("sign", "saturation", "tanh", "signed-quadratic", "cubic", "signed-power"):
        f = control_function(name, eps=0.05, **params.get(name, {}))
        yield GSS(K=[5.0, 10.0, 20.0], f=f)
        yield GD(Ki=0.5, Kd=3.0, f=f)
        if f.strictly_increasing and f.unbounded:
            yield GDBar(n=2.0, f=f)
            yield GDBar(f=f)
    yield ComputedTorque(Kp=[100.0, 50.0, 80.0], Kd=20.0)
    yield LQR()
    yield LQR(Q=np.diag([100.0, 50.0, 10.0, 1.0, 2.0, 3.0]), R=1e-2, A=np.zeros((6, 6)) + np.eye(6, k=3),
              B=np.vstack([np.zeros((3, 3)), np.eye(3)]))
    yield SaturatedPD(Kp=[80.0, 100.0, 120.0], u_max=2.0)
    # a law that allocates is compiled with reference counts (the package's laws and one that does not: without)
    yield AllocatingPD(Kp=[80.0, 100.0, 120.0], u_max=2.0)


def _id(c):
    return f"{type(c).__name__}-{getattr(getattr(c, 'f', None), 'name', '')}-{getattr(c, 'n', '')}"


def _state(n, nz, scale=1.0):
    return RNG.normal(0, 0.05 * scale, n), RNG.normal(0, 0.3 * scale, n), RNG.normal(0, 0.01, nz)


def test_the_law_records_type_is_known_before_any_law_is_compiled():
    """The kernels taking a law are compiled for law_type() (no law compiled for it): the type numba gives every
    compiled law, a package's or a user's, so no law's first call compiles them again."""
    import numba

    for comp in (GSS(), None):
        assert numba.typeof(kernel_law(comp, 3)) == law_type()


@pytest.mark.parametrize("comp", list(_builtins()), ids=_id)
def test_the_compiled_law_and_the_numpy_call_give_the_same_floats(comp):
    n = 3
    law = kernel_law(comp, n)
    assert law is not None
    nz = comp.n_states(n)
    for k in range(20):
        e, ed, z = _state(n, nz, scale=10.0 ** RNG.uniform(-3, 1))
        u, Ue, Ued, Uz = np.empty(n), np.empty((n, n)), np.empty((n, n)), np.empty((n, nz))
        law_u(law, e, ed, z, u, Ue, Ued, Uz)
        _same(u, comp(0.0, e, ed, z), comp, "tanh")
    # a batch (leading axes broadcast) is the states one by one
    E, ED, Z = RNG.normal(0, 0.05, (4, 5, n)), RNG.normal(0, 0.3, (4, 5, n)), RNG.normal(0, 0.01, (4, 5, nz))
    batch = comp(0.0, E, ED, Z)
    assert batch.shape == (4, 5, n)
    for idx in np.ndindex(4, 5):
        _same(batch[idx], comp(0.0, E[idx], ED[idx], Z[idx]), comp, "tanh", "signed-power")


def _same(u, ref, comp, *libm):
    """Bit for bit, or (g in ``libm``: two implementations of tanh or pow) to 4 ε of u's terms (docstring)."""
    if getattr(getattr(comp, "f", None), "name", "") in libm:
        gain = getattr(comp, "_gain", getattr(comp, "sigma", 1.0))
        assert np.all(np.abs(u - ref) <= 4 * np.finfo(float).eps * (np.abs(ref) + gain))
    else:
        np.testing.assert_array_equal(u, ref)


def _smooth(comp) -> bool:
    """A law differentiable at a random state (sign's jump and a saturated PD's corner are not hit)."""
    return getattr(getattr(comp, "f", None), "name", "") != "sign"


@pytest.mark.parametrize("comp", [c for c in _builtins() if _smooth(c)], ids=_id)
def test_the_laws_partial_derivatives_are_the_complex_step_of_the_numpy_call(comp):
    n = 3
    law = kernel_law(comp, n)
    nz = comp.n_states(n)
    for _ in range(10):
        e, ed, z = _state(n, nz)
        u, Ue, Ued, Uz = np.empty(n), np.empty((n, n)), np.empty((n, n)), np.empty((n, nz))
        law_u(law, e, ed, z, u, Ue, Ued, Uz)
        y = np.concatenate([e, ed, z])
        J = complex_step_jacobian(lambda t, Y: comp(t, Y[:, :n], Y[:, n:2 * n], Y[:, 2 * n:]), 0.0, y)
        assert _rel(np.hstack([Ue, Ued, Uz]), J) <= 1e-12


def test_records_pack_and_unpack_by_name():
    n = 3
    p = unpack(GSSParams, pack(GSSParams(gain=220.0, K=10.0), n), n)
    assert p.gain == 220.0 and p.K.tolist() == [10.0] * n
    K = RNG.normal(size=(n, 2 * n))
    np.testing.assert_array_equal(unpack(LinearParams, pack(LinearParams(K=K), n), n).K, K)
    assert [m for m in SaturatedPDParams.__annotations__.values()] == [Vector, Vector, float]
    assert LinearParams.__annotations__["K"] is Matrix


def test_the_kernel_cache_key_includes_the_laws_source():
    from pathlib import Path

    import robustrack.controllers.laws as laws

    assert Path(laws.__file__).resolve() in {p.resolve() for p in _KERNEL_MODULES}


@pytest.mark.parametrize("refusal", ["TypingError", "NumbaRuntimeError"])
def test_a_users_law_refused_without_reference_counts_is_compiled_with_them(refusal, monkeypatch):
    """numba refuses an allocating law compiled without reference counts in one of two ways, by what the process
    compiled before (a fresh CI run met the second): either way the law is compiled again with them and computes
    the numpy call's floats."""
    from numba.core import errors

    from robustrack.compiled import laws

    real = laws.kernel

    def kernel(fn, refcounts=None, cached=True):
        disp = real(fn, refcounts=refcounts, cached=cached)
        if refcounts is False:  # the first try: refused as numba refuses it
            def refuse(*args, **kwargs):
                raise getattr(errors, refusal)("NRT required but not enabled")

            disp.compile = refuse
        return disp

    # the allocating law as a function object of its own: nothing compiled for it yet in this process
    law = types.FunctionType(allocating_pd_law.__code__, allocating_pd_law.__globals__, "refused_pd_law")

    @dataclasses.dataclass(frozen=True, eq=False)
    class Refused(AllocatingPD):
        name: ClassVar[str] = "refused-pd"

    Refused.law = law  # set after the class: a dataclass field would make it an instance attribute
    monkeypatch.setattr(laws, "kernel", kernel)
    comp = Refused(Kp=[80.0, 100.0, 120.0], u_max=2.0)
    compiled = kernel_law(comp, 3)
    assert law in laws._COMPILED
    monkeypatch.delitem(laws._COMPILED, law)
    e, ed, z = _state(3, 0)
    u, Ue, Ued, Uz = np.empty(3), np.empty((3, 3)), np.empty((3, 3)), np.empty((3, 0))
    law_u(compiled, e, ed, z, u, Ue, Ued, Uz)
    _same(u, comp(0.0, e, ed, z), comp, "tanh")


def untyped_pd_law(params, f, e, ed, z, u, Ue, Ued, Uz, jac):
    """:func:`saturated_pd_law` after a call numba does not type (``object()``): Python runs it, numba cannot."""
    object()
    saturated_pd_law(params, f, e, ed, z, u, Ue, Ued, Uz, jac)


def test_a_users_law_numba_cannot_compile_runs_on_numpy_says_why_and_leaves_the_cache(recwarn):
    """A user's law outside numba's subset is the user's, not a damaged cache: the run goes to numpy with a notice
    naming the law and numba's reason, and the machine's compiled kernels stay where they are (they were once
    removed and compiled again, ~75 s, for every such law)."""
    from robustrack.compiled.cache import numba_dir
    from robustrack.tracking import CompilationFallback

    @dataclasses.dataclass(frozen=True, eq=False)
    class UntypedPD(SaturatedPD):
        name: ClassVar[str] = "untyped-pd"

    UntypedPD.law = untyped_pd_law
    comp = UntypedPD(Kp=[80.0, 100.0, 120.0], u_max=2.0)
    kernels = sorted(p.name for p in numba_dir().iterdir())
    assert kernels  # the session's compile made them
    runs = [simulate_tracking(NOMINAL, ENERGY, comp, Q0, QD0, (0.0, 0.2), actual=ACTUAL, n_points=21,
                              uncompensated=False, backend=b) for b in ("auto", "numpy")]
    notes = [str(w.message) for w in recwarn if issubclass(w.category, CompilationFallback)]
    assert len(notes) == 1 and "numba does not compile the law untyped_pd_law of UntypedPD" in notes[0], notes
    assert "\x1b" not in notes[0] and "\n" not in notes[0]
    assert not [w for w in recwarn if "damaged" in str(w.message)]
    assert sorted(p.name for p in numba_dir().iterdir()) == kernels
    assert [r.solver["backend"] for r in runs] == ["numpy", "numpy"] and all(r.success for r in runs)
    # "auto" keeps its nominal run compiled (another integrator code for the same system at rtol 1e-8): e agrees to
    # ~1e-8 absolute, the bound of the test below
    assert np.max(np.abs(runs[0].e - runs[1].e)) < 5e-8


def test_a_compensator_defined_in_this_file_runs_on_both_paths(registered):
    comp = registered
    assert isinstance(comp, SaturatedPD) and kernel_law(comp, 3) is not None
    loop = compiled_loop(NOMINAL, ACTUAL, ENERGY)
    nom = integrate_nominal(CompiledBackend(loop), Q0, QD0, (0.0, 0.2))
    law = kernel_law(comp, 3)
    n = 3
    for _ in range(6):
        t = float(RNG.uniform(0.0, 0.2))
        y = nom(t)
        q, qd = y[:n], y[n:]
        x = np.concatenate([q + RNG.normal(0, 2e-3, n), qd + RNG.normal(0, 2e-2, n)])
        Qc = nominal_motion(NOMINAL, ENERGY, q, qd, t).Qc
        args = (nom.dense, loop.model, law, np.zeros(n), False)
        ref = controlled_rhs(NOMINAL, ACTUAL, comp, t, x, q, qd, Qc)
        assert _rel(rk.controlled_rhs(loop.controlled, t, x, *args), ref) <= 1e-12
        J_ref = complex_step_jacobian(lambda tt, X: controlled_rhs(NOMINAL, ACTUAL, comp, tt, X, q, qd, Qc), t, x)
        assert _rel(rk.controlled_jac(loop.controlled, t, x, *args), J_ref) <= 1e-12
    runs = [simulate_tracking(NOMINAL, ENERGY, comp, Q0, QD0, (0.0, 1.0), actual=ACTUAL, n_points=101,
                              uncompensated=False,
                              backend=b) for b in ("auto", "numpy")]
    assert [r.solver["backend"] for r in runs] == ["compiled", "numpy"] and all(r.success for r in runs)
    assert runs[0].metrics["max_abs_e"] > 1e-6  # there is an error to compare
    # e (a difference of states ~1) from two BDF codes at rtol 1e-8: ~1e-8 absolute (test_compiled's bound)
    assert np.max(np.abs(runs[0].e - runs[1].e)) < 5e-8


def test_a_subclass_computing_u_its_own_way_or_a_users_g_stays_on_numpy():
    class Tweaked(GSS):
        def __call__(self, t, e, edot, z=None):
            return 2.0 * super().__call__(t, e, edot, z)

    assert kernel_law(Tweaked(), 3) is None
    mine = GSS(f=control_function(lambda x: np.tanh(2.0 * x), eps=0.1, name="mine"))
    assert kernel_law(mine, 3) is None
    e, ed = np.array([0.01, -0.02, 0.0]), np.array([0.1, 0.0, -0.3])
    np.testing.assert_array_equal(mine(0.0, e, ed), -mine.K * ed - mine._gain * np.tanh(2.0 * (mine.K * e + ed) / 0.1))
