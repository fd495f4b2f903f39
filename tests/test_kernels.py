"""The kernels as modules of their own, each against its numpy twin, and what the compiled path promises.

Tolerances: a kernel and its numpy twin are two implementations of the same double-precision
arithmetic in a different order, so they agree to rounding: 1e-12 relative (a few hundred ulps on the
well-conditioned problems drawn here, whose condition numbers stay below ~1e3).
"""

import ctypes
import os
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

from robustrack import mechanics
from robustrack.compiled import mechanics as mk
from robustrack.controllers import GD, GSS, LQR, ComputedTorque, GDBar, control_function
from robustrack.compiled.laws import law_u
from robustrack.compiled import actuators as ak
from robustrack.compiled.loop import CompileNotice, compiled_loop, kernel_law

RNG = np.random.default_rng(11)


def _rel(a, b) -> float:
    return float(np.max(np.abs(np.asarray(a) - np.asarray(b))) / max(np.max(np.abs(b)), 1e-300))


def test_the_vendored_dop853_tableau_is_scipys():
    from scipy.integrate._ivp import dop853_coefficients as scipy_table

    from robustrack.compiled import dop853_tableau as ours

    for name in ("A", "B", "C", "E3", "E5", "D", "N_STAGES", "N_STAGES_EXTENDED", "INTERPOLATOR_POWER"):
        assert np.array_equal(getattr(ours, name), getattr(scipy_table, name)), name


@pytest.mark.parametrize("singular", [False, True], ids=["M positive definite", "M singular (augmented)"])
def test_fundamental_kernel_equals_mechanics(singular):
    """q̈ and Qᶜ of the kernel against robustrack.mechanics.solve_constrained (W 2.2.7–2.2.9, 4.3.8);
    the singular case is the augmented system (rank [M; A] = n), where the kernel also switches path."""
    n, m = 4, 2
    for _ in range(5):
        G = RNG.normal(size=(n, n))
        M = G @ G.T + n * np.eye(n)
        if singular:
            V = np.linalg.qr(RNG.normal(size=(n, n)))[0]
            M = V @ np.diag([3.0, 2.0, 0.0, 0.0]) @ V.T
        A, b, Q = RNG.normal(size=(m, n)), RNG.normal(size=m), RNG.normal(size=n)
        qdd, Qc = np.empty(n), np.empty(n)
        assert mk.fundamental(M, Q, A, b, qdd, Qc)
        ref = mechanics.solve_constrained(M, Q, A, b)
        assert _rel(qdd, ref.qdd) <= 1e-12 and _rel(Qc, ref.Qc) <= 1e-12
        assert _rel(A @ qdd, b) <= 1e-12  # the invariant itself: A q̈ = b


def test_matrix_view_is_numbas_reshape_of_the_slice_without_a_copy():
    """The scratch's matrices (the fundamental equation's, the constraint's A): ``matrix_view`` is the reshape it
    replaced — the same numbers, C order, the same memory (a write through it lands in the vector), empty rows too."""
    from numba import njit

    @njit
    def both(w, start, rows, cols):
        view = mk.matrix_view(w, start, rows, cols)
        if rows:
            view[rows - 1, cols - 1] = -1.0  # through the view, into w
        return view, w[start:start + rows * cols].reshape((rows, cols))

    for start, rows, cols in ((0, 3, 3), (5, 2, 4), (7, 4, 1), (2, 0, 3)):
        w = np.arange(30.0)
        view, reshaped = both(w, start, rows, cols)
        assert view.shape == (rows, cols) and view.flags.c_contiguous
        np.testing.assert_array_equal(view, reshaped)
        if rows:
            assert np.shares_memory(view, w) and w[start + rows * cols - 1] == -1.0


def test_the_full_rank_pseudo_inverse_is_numpys_where_it_answers_and_refuses_otherwise():
    """Two or more rows take Householder's QR (``full_rank_pinv``) where ``‖R‖_F ‖R⁻¹‖_F`` (≥ κ₂(B), ≤ m κ₂(B))
    shows that the SVD's cut-off keeps every row. Truth: numpy's SVD pseudo-inverse. Both are backward stable, so
    they agree to a small multiple of ε κ₂(B) relative (measured ≤ 1.3e-15 κ on these draws; 50 ε κ asserted);
    rows scaled over 10⁻⁴…10⁴ give κ up to ~1e9, so the QR answers for most draws and refuses only above
    κ ≈ 5e11 / m."""
    answered = 0
    for _ in range(300):
        m = int(RNG.integers(2, 7))
        n = int(RNG.integers(m, 9))
        B = RNG.normal(size=(m, n)) * 10.0 ** RNG.uniform(-4, 4, size=(m, 1))
        Bp = np.empty((n, m))
        kappa = np.linalg.cond(B)
        if mk.full_rank_pinv(B, Bp):
            answered += 1
            assert _rel(Bp, np.linalg.pinv(B, rcond=mechanics.DEFAULT_RCOND)) <= 50 * np.finfo(float).eps * kappa
        else:
            assert kappa * 6 >= 0.5 / mechanics.DEFAULT_RCOND
    assert answered > 250
    B = RNG.normal(size=(3, 6))
    B[2] = B[0] - 2.0 * B[1]  # dependent rows: the SVD drops one, so the QR must not answer
    tall, zero_row, steep = RNG.normal(size=(4, 3)), B.copy(), RNG.normal(size=(2, 5))
    zero_row[1] = 0.0
    steep[1] = steep[0] + 1e-13 * steep[1]  # κ ~ 1e13: beyond the cut-off
    for rows in (B, tall, zero_row, steep):
        assert not mk.full_rank_pinv(rows, np.empty(rows.shape[::-1]))
    # and the scale-free pseudo-inverse of such rows is still the SVD's (numpy's twin, robustrack.mechanics)
    for rows in (B, zero_row, steep):
        svd = np.linalg.pinv(rows, rcond=mechanics.DEFAULT_RCOND)
        assert _rel(mk.scale_free_pinv(rows), mechanics._scale_free(rows, svd, mechanics.DEFAULT_RCOND)) <= 1e-12


def test_columns_solved_together_are_each_columns_own_solve():
    """One Cholesky factor, several right-hand sides at once (the controlled system's Jacobian, the measurements
    along a run): each column the same floats as its own solve (same operations in the same order: bit for bit,
    also in place), and M X = B to rounding (1e-12 relative, the module's tolerance; cond(M) < ~1e2 here)."""
    for n, k in ((1, 1), (2, 3), (3, 4), (6, 9)):
        A = RNG.normal(size=(n, n))
        M = A @ A.T + n * np.eye(n)
        B = RNG.normal(size=(n, k))
        L = np.empty((n, n))
        assert mk.cholesky(M, L)
        one = np.empty((n, k))
        for j in range(k):
            col = np.empty(n)
            mk.cholesky_solve_into(L, np.ascontiguousarray(B[:, j]), col, np.empty(n))
            one[:, j] = col
        together = np.empty((n, k))
        mk.cholesky_solve_columns_into(L, B, together, np.empty((n, k)))
        in_place = B.copy()
        mk.cholesky_solve_columns_into(L, in_place, in_place, in_place)
        via_M = np.empty((n, k))
        assert mk.spd_solve_columns_into(M, B, via_M, np.empty((n, n)))
        for X in (together, in_place, via_M):
            np.testing.assert_array_equal(X, one)
        assert _rel(M @ one, B) <= 1e-12 and _rel(one, np.linalg.solve(M, B)) <= 1e-12
    assert not mk.spd_solve_columns_into(-np.eye(2), np.ones((2, 2)), np.empty((2, 2)), np.empty((2, 2)))


def test_constrained_motion_kernel_with_actuators_equals_the_servo_force():
    """k < n actuators: Qᶜ = B τᶜ, Gauss's choice (docs/theory/constraint-models.md), against constraint_models.servo_force."""
    from robustrack.plants.servo import servo_force

    n, m, k = 3, 1, 2
    G = RNG.normal(size=(n, n))
    M = G @ G.T + n * np.eye(n)
    A, b, Q = RNG.normal(size=(m, n)), RNG.normal(size=m), RNG.normal(size=n)
    B = RNG.normal(size=(n, k))
    act = np.ascontiguousarray(np.vstack([B, np.full((1, k), np.inf)]))
    qdd, Qc, tau = np.empty(n), np.empty(n), np.empty(k)
    assert ak.constrained_motion(M, Q, A, b, act, qdd, Qc, tau)
    ref = servo_force(M, Q, A, b, B)
    assert _rel(tau, ref.lam) <= 1e-12 and _rel(Qc, ref.force) <= 1e-12
    assert _rel(A @ qdd, b) <= 1e-12


def _laws():
    params = {"signed-quadratic": {"alpha_c": 2.0}, "cubic": {"alpha_c": 2.0}, "signed-power": {"alpha_c": 2.0, "p": 1.5}}
    for name in ("sign", "saturation", "tanh", "signed-quadratic", "cubic", "signed-power"):
        f = control_function(name, eps=0.05, **params.get(name, {}))
        yield GSS(f=f)
        yield GD(Ki=0.5, Kd=3.0, f=f)
        if f.strictly_increasing and f.unbounded:
            yield GDBar(n=2.0, f=f)
    yield ComputedTorque(Kp=[100.0, 50.0, 80.0], Kd=20.0)
    yield LQR()


@pytest.mark.parametrize("comp", list(_laws()), ids=lambda c: f"{type(c).__name__}-{getattr(getattr(c, 'f', None), 'name', '')}")
def test_law_kernel_equals_the_compensator(comp):
    """u of the law's kernel (packed by the compensator itself) against the compensator's numpy __call__."""
    n = 3
    law = kernel_law(comp, n)
    assert law is not None
    nz = comp.n_states(n)
    for _ in range(5):
        e, ed, z = RNG.normal(0, 0.05, n), RNG.normal(0, 0.3, n), RNG.normal(0, 0.01, nz)
        u, Ue, Ued, Uz = np.empty(n), np.empty((n, n)), np.empty((n, n)), np.empty((n, nz))
        law_u(law, e, ed, z, u, Ue, Ued, Uz)
        assert _rel(u, comp(0.0, e, ed, z)) <= 1e-12


def test_a_users_subclass_computing_u_its_own_way_has_no_kernel():
    class Tweaked(GSS):
        def __call__(self, t, e, edot, z=None):
            return 2.0 * super().__call__(t, e, edot, z)

    assert kernel_law(Tweaked(), 3) is None
    assert kernel_law(GSS(f=control_function(lambda x: np.tanh(2.0 * x), eps=0.1, name="mine")), 3) is None


def _user_plant():
    """A plant built in a script (not in the catalog): a cart with a pendulum and a damper, from energies."""
    import sympy as sp

    from robustrack.plants import LagrangianPlant

    x, th, xd, thd = sp.symbols("x theta xd thetad")
    mc, mp, ell, c = sp.symbols("m_c m_p ell c")
    T = sp.Rational(1, 2) * (mc + mp) * xd**2 + mp * ell * xd * thd * sp.cos(th) + sp.Rational(1, 2) * mp * ell**2 * thd**2
    V = -mp * 9.81 * ell * sp.cos(th)
    return LagrangianPlant.from_energies([x, th], T, V, forces=[-c * xd, 0], qd=[xd, thd],
                                         params={mc: 1.3, mp: 0.4, ell: 0.7, c: 0.2})


def _call(f, out_size, q, qd, t, p):
    """The generated C function at address ``f`` called from Python (ctypes), as the kernels call it."""
    out = np.zeros(out_size)
    q, qd, p = (np.ascontiguousarray(a, dtype=float) for a in (q, qd, p))
    ptr = ctypes.POINTER(ctypes.c_double)
    fn = ctypes.CFUNCTYPE(None, ptr, ptr, ctypes.c_double, ptr, ptr)(f)  # the C function at address f
    fn(q.ctypes.data_as(ptr), qd.ctypes.data_as(ptr), float(t), p.ctypes.data_as(ptr), out.ctypes.data_as(ptr))
    return out


def test_a_users_plant_compiles_to_functions_equal_to_its_numpy_form():
    """M, Q and their derivatives generated for a plant built in a script, against its numpy M, Q and
    central differences of them (h = 1e-6: truncation ~1e-12, rounding ~1e-10 of |M| → 1e-7 relative)."""
    plant = _user_plant()
    loop = compiled_loop(plant, plant, None)
    md, n, p = loop.model, 2, np.array(plant.codegen().values)
    q, qd, t = np.array([0.3, -0.8]), np.array([0.5, 1.1]), 0.0
    assert _rel(_call(md.nom_mass, 4, q, qd, t, p).reshape(2, 2), plant.mass_matrix(q, t)) <= 1e-12
    assert _rel(_call(md.nom_force, 2, q, qd, t, p), plant.given_force(q, qd, t)) <= 1e-12
    h = 1e-6
    dM = np.array([(plant.mass_matrix(q + h * e, t) - plant.mass_matrix(q - h * e, t)) / (2 * h) for e in np.eye(n)])
    dQ = np.array([(plant.given_force(q + h * e, qd, t) - plant.given_force(q - h * e, qd, t)) / (2 * h)
                   for e in np.eye(n)]).T
    dQd = np.array([(plant.given_force(q, qd + h * e, t) - plant.given_force(q, qd - h * e, t)) / (2 * h)
                    for e in np.eye(n)]).T
    assert _rel(_call(md.act_mass_dq, 8, q, qd, t, p).reshape(2, 2, 2), dM) <= 1e-7
    assert _rel(_call(md.act_force_dq, 4, q, qd, t, p).reshape(2, 2), dQ) <= 1e-7
    assert _rel(_call(md.act_force_dqd, 4, q, qd, t, p).reshape(2, 2), dQd) <= 1e-7


def test_a_new_structure_compiles_once_with_one_notice(tmp_path, monkeypatch):
    """A structure this machine has not seen (an empty cache of generated functions; the kernels are
    compiled in this process): one CompileNotice naming it, once per structure, the cache folder and the
    seconds; the kernels are not compiled again; another plant of the same structure says nothing."""
    import sympy as sp

    from robustrack.plants import LagrangianPlant

    from robustrack.plants import NLinkPendulum

    one = NLinkPendulum(m=[1.0], L=[1.0], g=9.81)
    compiled_loop(one, one, None)  # the kernels, compiled (or loaded) in this process
    monkeypatch.setenv("ROBUSTRACK_CACHE_DIR", str(tmp_path))
    x, xd, k = sp.symbols("x xd k")
    plant = LagrangianPlant.from_energies([x], sp.Rational(1, 2) * xd**2, k * x**2 / 2 + x**4 / 7, qd=[xd],
                                          params={k: 2.0})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compiled_loop(plant, plant, None)
        compiled_loop(plant, plant.replace(k=3.0), None)  # another plant of the same structure
    notices = [str(w.message) for w in caught if issubclass(w.category, CompileNotice)]
    assert len(notices) == 1, notices
    assert "plant structure" in notices[0] and "once per structure" in notices[0]
    assert "robustrack's kernels" not in notices[0] and str(tmp_path) in notices[0] and " s;" in notices[0]


def test_entry_points_refuse_other_types_instead_of_recompiling():
    """After the loop is prepared, the integrators are compiled for the records' exact types and closed:
    a call with other types is an error (a silent recompile would cost a minute). So is a part compiled at its
    first use (scipy's systems, as the backend compiles them before calling them)."""
    from robustrack.plants import NLinkPendulum
    from robustrack.compiled import systems as rk
    from robustrack.compiled.dop853 import dop853_run
    from robustrack.compiled.loop import compile_later, limits, no_dense, tolerances

    one = NLinkPendulum(m=[1.0], L=[1.0], g=9.81)
    loop = compiled_loop(one, one, None)
    y = np.array([0.3, 0.0])
    args = (0.0, 1.0, np.zeros(1), tolerances(1e-8, 1e-12), True, no_dense(2), loop.model, limits(y))
    assert dop853_run(loop.nominal, y, *args)[-1] == 0
    with pytest.raises(TypeError):
        dop853_run(loop.nominal, y.astype(np.float32), *args)
    compile_later(loop, "scipy")
    assert np.all(np.isfinite(rk.system_rhs(loop.nominal, 0.0, y, no_dense(2), loop.model)))
    with pytest.raises(TypeError):
        rk.system_rhs(loop.nominal, 0.0, y.astype(np.float32), no_dense(2), loop.model)


def test_robustrack_compile_prepares_a_machine(kernels_only_cache):
    """`robustrack compile NAME` on a cache holding the kernels but not the scenario's structures: it says
    what it compiles; a run afterwards compiles nothing (no compile line on stderr)."""
    env = {**os.environ, "ROBUSTRACK_CACHE_DIR": str(kernels_only_cache)}
    cmd = [sys.executable, "-m", "robustrack.cli"]
    first = subprocess.run(cmd + ["compile", "appell-particle"], capture_output=True, text=True, env=env, timeout=600)
    assert first.returncode == 0, first.stderr
    assert "compiling the plant structure" in first.stderr and "ready" in first.stdout
    run = subprocess.run(cmd + ["run", "appell-particle"], capture_output=True, text=True, env=env, timeout=600)
    assert run.returncode == 0, run.stderr
    assert "compil" not in run.stderr


def test_the_kernels_are_modules_not_text():
    """No source file of the package is read as text and compiled: the kernels import as modules."""
    script = textwrap.dedent("""
        import importlib, pathlib
        root = pathlib.Path(importlib.import_module("robustrack").__file__).parent
        for path in sorted((root / "compiled").glob("*.py")):  # every module of the compiled path
            importlib.import_module("robustrack.compiled." + path.stem)
        assert not list(root.rglob("_template*.py"))
        print("ok")
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


def _cli(env, *argv):
    return subprocess.run([sys.executable, "-m", "robustrack.cli", *argv], capture_output=True, text=True, env=env,
                          timeout=600)


def test_a_damaged_generated_file_is_generated_again(kernels_only_cache):
    """A cached file cut short or overwritten costs a recompile and a notice, never a failed run."""
    env = {**os.environ, "ROBUSTRACK_CACHE_DIR": str(kernels_only_cache)}
    first = _cli(env, "run", "appell-particle", "--json", str(kernels_only_cache / "a.json"))
    assert first.returncode == 0, first.stderr
    files = sorted(kernels_only_cache.glob("kernels-*/rtk_*.py"))  # the compiled path's (not models/: numpy's)
    assert files
    files[0].write_text("garbage\n")
    text = files[1].read_text()
    files[1].write_text(text[: len(text) // 2])
    again = _cli(env, "run", "appell-particle", "--json", str(kernels_only_cache / "b.json"))
    assert again.returncode == 0, again.stderr
    assert again.stderr.count("was damaged") == 2 and "Traceback" not in again.stderr
    assert (kernels_only_cache / "a.json").read_text().split('"solver"')[0] == \
        (kernels_only_cache / "b.json").read_text().split('"solver"')[0]  # the same metrics


def test_damaged_compiled_kernels_are_compiled_again(kernels_only_cache):
    """numba's cache of the package's kernels overwritten with garbage: removed, said, compiled again.

    The repair leaves a machine with no kernels, so it also shows that the kernels compile in parts, each the
    first time a loop needs it: a nominal run (appell-particle) compiles the fundamental equation and DOP853 —
    not the controlled system, BDF, the sample-and-hold integrator or the actuators' kernels (their stamps)."""
    env = {**os.environ, "ROBUSTRACK_CACHE_DIR": str(kernels_only_cache)}
    for f in (kernels_only_cache).rglob("*.nb[ic]"):
        f.write_bytes(b"garbage")
    out = _cli(env, "run", "appell-particle")
    assert out.returncode == 0, out.stderr
    assert "were damaged" in out.stderr and "compiling them again" in out.stderr and "Traceback" not in out.stderr
    from robustrack.compiled.loop import _kernels_digest

    prefix = f"kernels-{_kernels_digest()}-"  # the stamps of these kernels (not of another version's)
    stamps = sorted(p.name[len(prefix):-len(".ready")] for p in kernels_only_cache.rglob(f"{prefix}*.ready"))
    assert stamps == ["motion", "nominal"]
    again = _cli(env, "run", "appell-particle")
    assert again.returncode == 0 and "damaged" not in again.stderr and "compiling" not in again.stderr


def test_an_edit_of_any_kernel_module_keys_new_machine_code_for_every_kernel(tmp_path, monkeypatch):
    """numba keys a kernel's cached code by its own file, not its callees' files: a faster pseudo-inverse in
    compiled/mechanics.py left motion.py's C function loading its old machine code (the SVD inlined). The numba
    cache folder is therefore keyed by the content of every kernel module (``numba_dir``): an edit of one moves
    every kernel — in any file — to a new folder."""
    import shutil

    from robustrack.compiled import cache

    assert mk.fundamental._cache._cache_path.startswith(str(cache.numba_dir()))
    copies = []
    for i, module in enumerate(cache.KERNEL_MODULES):
        copies.append(tmp_path / f"{i}-{module.name}")
        shutil.copyfile(module, copies[-1])
    monkeypatch.setattr(cache, "KERNEL_MODULES", tuple(copies))
    cache.kernels_digest.cache_clear()
    try:
        before = cache.numba_dir()
        edited = next(c for c in copies if c.name.endswith("-mechanics.py"))
        edited.write_text(edited.read_text() + "# a callee changed\n")
        cache.kernels_digest.cache_clear()
        assert cache.numba_dir() != before and cache.numba_dir().parent == before.parent
    finally:
        monkeypatch.undo()
        cache.kernels_digest.cache_clear()
    assert mk.fundamental._cache._cache_path.startswith(str(cache.numba_dir()))


def test_a_cache_folder_that_cannot_be_written_is_an_error_naming_the_variable(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    env = {**os.environ, "ROBUSTRACK_CACHE_DIR": str(blocker / "cache")}
    out = _cli(env, "run", "appell-particle")
    assert out.returncode == 2, out.stderr
    assert "ROBUSTRACK_CACHE_DIR" in out.stderr and "kernel cache" in out.stderr and "Traceback" not in out.stderr


def test_a_cache_folder_that_cannot_be_written_is_one_line_naming_the_variable_in_process(tmp_path, monkeypatch,
                                                                                             capsys):
    """The in-process twin of the CLI process above (slow tier): the run's first compiled step refuses the folder
    with exit 2, one line naming the variable that chose it; nothing compiled."""
    from robustrack.cli import main

    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("ROBUSTRACK_CACHE_DIR", str(blocker / "cache"))
    code = main(["run", "appell-particle"])
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert code == 2 and len(lines) == 1 and "Traceback" not in err, err
    assert "ROBUSTRACK_CACHE_DIR" in lines[0] and "kernel cache" in lines[0]


def test_a_warm_run_compiles_nothing():
    """The second process to run a loop loads every kernel from the cache: numba compiles nothing (a kernel
    whose cache key changes from process to process — e.g. a dispatcher held in a closure cell, which pickles
    differently each time — would compile again on every run, silently: no notice, ~1 s)."""
    code = ("from numba.core import event\n"
            "compiled = []\n"
            "class L(event.Listener):\n"
            "    def on_start(self, ev): compiled.append(str(ev.data.get('dispatcher', ev.kind)))\n"
            "    def on_end(self, ev): pass\n"
            "event.register('numba:compile', L())\n"
            "from robustrack.plants import pendulum_energy_constraint, triple_pendulum\n"
            "from robustrack.controllers import GSS\n"
            "from robustrack.tracking import simulate_tracking\n"
            "p = triple_pendulum()\n"
            "r = simulate_tracking(p, pendulum_energy_constraint(L1=1.0, g=9.81, gain=0.02, m1=1.0), GSS(), "
            "[1, 0, 0], [0.001, 0, 0], (0, 0.5), actual=p.replace(m=(1.1, 1.8, 3.3)))\n"
            "assert r.solver['backend'] == 'compiled', r.solver\n"
            "print(len(compiled)); print(compiled[:5])\n")
    runs = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
            for _ in range(2)]
    assert all(r.returncode == 0 for r in runs), runs[-1].stderr
    count, names = runs[1].stdout.splitlines()[-2:]
    assert count == "0", names


def test_the_dense_nominal_in_the_kernels_equals_the_numpy_interpolant():
    """``rhs_kernels.dense_eval`` (a bisection for the step) against ``NominalSolution.__call__`` (numpy's
    searchsorted): exactly equal at every step time (the right-hand step's start, as searchsorted's
    side='right'), inside steps and beyond both ends (the first and the last interpolant)."""
    from robustrack.plants import NLinkPendulum, pendulum_energy_constraint
    from robustrack.compiled import systems as rhs_kernels
    from robustrack.compiled.backend import CompiledBackend
    from robustrack.tracking.integrate import integrate_nominal

    plant = NLinkPendulum(m=[1.0, 2.0], L=[1.0, 1.5], g=9.81)
    con = pendulum_energy_constraint(L1=1.0, g=9.81, gain=0.5, n=2, m1=1.0)
    loop = compiled_loop(plant, plant, con, jacobian=False)
    nom = integrate_nominal(CompiledBackend(loop), np.array([0.5, 0.2]), np.zeros(2), (0.0, 1.0), rtol=1e-8,
                            atol=1e-12)
    ts = nom.t
    mids = 0.5 * (ts[:-1] + ts[1:])
    times = np.concatenate([ts, mids, [ts[0] - 0.1, ts[-1] + 0.1, np.nextafter(ts[3], -np.inf)]])
    out = np.empty(4)
    for t in times:
        rhs_kernels.dense_eval(float(t), nom.dense, out)
        assert np.array_equal(out, nom(t)), t


def _drop_a_ctrl_c() -> None:
    """Raise a KeyboardInterrupt where Python cannot propagate it (``__del__``): Python drops it as unraisable."""
    import gc

    class Interrupts:
        def __del__(self):
            raise KeyboardInterrupt

    Interrupts()
    gc.collect()


def test_a_ctrl_c_python_drops_while_compiling_still_stops_the_compile(capsys):
    """A KeyboardInterrupt raised where Python cannot propagate it (a weak-reference callback or ``__del__``,
    which numba's compiler runs by the thousand) is printed as "Exception ignored" and dropped: the compile
    went on to its end. Inside ``compiling`` it is kept, not printed, and raised at the next kernel or at the
    end of the block; outside, Python's own handling is untouched."""
    from robustrack.compiled.notice import compile_reporter, compiling

    with compile_reporter(lambda what, where: None, lambda what, seconds: None):
        with pytest.raises(KeyboardInterrupt):
            with compiling([], ["a part"], "here"):
                _drop_a_ctrl_c()
        assert "Exception ignored" not in capsys.readouterr().err
        with compiling([], ["a part"], "here"):  # the dropped interrupt was raised once, not kept for later
            pass


def test_a_compile_a_dropped_ctrl_c_broke_ends_as_the_ctrl_c():
    """A Ctrl-C dropped inside LLVM's callback leaves numba without the object code, and numba's cache then fails
    to save it (RuntimeError "no compiled object yet for <Library 'ab'>", seen once in a cold-compile Ctrl-C test:
    the CLI said "internal error", exit 3). Inside ``compiling`` the error that follows a dropped Ctrl-C is the
    Ctrl-C; without one it is what it is."""
    from robustrack.compiled.notice import compile_reporter, compiling

    with compile_reporter(lambda what, where: None, lambda what, seconds: None):
        with pytest.raises(KeyboardInterrupt):
            with compiling([], ["a part"], "here"):
                _drop_a_ctrl_c()
                raise RuntimeError("no compiled object yet for <Library 'ab'>")
        with pytest.raises(RuntimeError, match="no compiled object yet"):
            with compiling([], ["a part"], "here"):
                raise RuntimeError("no compiled object yet for <Library 'ab'>")


# 4 s lands in the kernels' compile on most machines (the phase whose teardown once printed llvmlite's error
# and once ended by SIGSEGV); 2 s (importing, generating) and 6 s (compiling or integrating) run with -m slow:
# each delay is a cold compile of its own (~6 s of both cores)
@pytest.mark.parametrize("delay", [pytest.param(2.0, marks=pytest.mark.slow), 4.0,
                                   pytest.param(6.0, marks=pytest.mark.slow)])
def test_ctrl_c_during_a_cold_compile_exits_130_with_one_line(tmp_path, group_alive, delay):
    """``robustrack run`` on an empty cache, Ctrl-C after ``delay`` s (importing, generating, compiling the
    kernels with the helper process, or integrating on a fast machine): exit 130, the one-line "interrupted"
    message, no traceback (nor an "Exception ignored" one), and no process of the run left behind.

    Nothing here depends on the machine's speed: the horizon (1000 s) keeps the run going past every delay
    however fast the compile, and a slow machine is only interrupted in an earlier phase. The exit status was
    once −2 (death by SIGINT after the message) when the Ctrl-C landed inside one of the ``exec`` calls that
    numba and sympy generate code with: ``test_ctrl_c_inside_an_exec_still_exits_130`` makes that deterministic.
    """
    import signal
    import time

    env = {**os.environ, "ROBUSTRACK_CACHE_DIR": str(tmp_path / "cache")}
    # -X faulthandler: a crash (once a SIGSEGV in the compile's teardown, comment above) prints where, into `err`
    proc = subprocess.Popen([sys.executable, "-X", "faulthandler", "-m", "robustrack.cli", "run", "duffing-tracking",
                             "--set", "simulation.t_end=1000"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    time.sleep(delay)
    assert proc.poll() is None, "the run ended before Ctrl-C"
    os.killpg(proc.pid, signal.SIGINT)  # the terminal's Ctrl-C: the whole process group
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "interrupted (Ctrl-C)" in err and "Traceback" not in err and "Exception ignored" not in err, err
    assert not group_alive(proc.pid), "a process of the interrupted run is left"


def test_after_ctrl_c_the_exit_handlers_run_and_the_output_is_flushed(tmp_path):
    """The CLI leaves a handled Ctrl-C by ``os._exit(130)`` (the interpreter's teardown, which finalized numba's
    objects cut mid-compile, is skipped), but not before the exit handlers ran and stdout was flushed: a user's
    factory prints without flushing (stdout is a pipe: block-buffered) and registers an exit handler, then Ctrl-C."""
    marker = tmp_path / "handler-ran"
    (tmp_path / "arm.py").write_text(
        "import atexit\n"
        f"atexit.register(lambda: open({str(marker)!r}, 'w').write('yes'))\n"
        "def problem():\n    print('said before the interrupt')\n    raise KeyboardInterrupt\n", encoding="utf-8")
    toml = tmp_path / "arm.toml"
    toml.write_text('[scenario]\nname = "arm"\nkind = "python"\n\n[problem]\nfactory = "arm.py:problem"\n',
                    encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "robustrack.cli", "run", str(toml)], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 130, proc.stderr
    assert "said before the interrupt" in proc.stdout
    assert marker.read_text() == "yes"


@pytest.mark.parametrize("entry", ["-m", "console script"])
def test_ctrl_c_inside_an_exec_still_exits_130(tmp_path, entry):
    """The cause of the −2 above, made deterministic: a KeyboardInterrupt that passes through an ``exec`` of a
    source string (as numba's and sympy's generated code does while compiling) sets CPython's "unhandled
    KeyboardInterrupt" record even though the CLI handles it, and the interpreter then killed itself with SIGINT
    after printing the one line. Here the user's factory of a ``kind = "python"`` scenario raises it that way."""
    (tmp_path / "arm.py").write_text("def problem():\n    exec('raise KeyboardInterrupt')\n", encoding="utf-8")
    toml = tmp_path / "arm.toml"
    toml.write_text('[scenario]\nname = "arm"\nkind = "python"\n\n[problem]\nfactory = "arm.py:problem"\n',
                    encoding="utf-8")
    argv = ([sys.executable, "-m", "robustrack.cli", "run", str(toml)] if entry == "-m" else  # the console script:
            [sys.executable, "-c", f"import sys; sys.argv[1:] = ['run', {str(toml)!r}]; from robustrack.cli import "
             "entry; entry()"])
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 130, (proc.returncode, proc.stderr)
    assert proc.stderr.strip().splitlines() == ["robustrack: interrupted (Ctrl-C); files already written are "
                                                "complete and kept."], proc.stderr



def test_kernels_cached_by_another_version_are_said_so_and_compiled_again(tmp_path, monkeypatch):
    """An upgrade: numba's cache of a kernel whose file did not change keeps its argument types by module, and a
    module of the old version is gone (``robustrack.controllers.codes`` after the laws were written once). The
    load fails with that ImportError: the notice says "another version", not "damaged", and the load runs again."""
    import warnings

    from robustrack.compiled import loop

    monkeypatch.setenv("ROBUSTRACK_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(loop, "_HELPER_PART_OFF", [])
    calls = []

    def load():
        calls.append(1)
        if len(calls) == 1:
            raise ModuleNotFoundError("No module named 'robustrack.controllers.codes'")
        return "loaded"

    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        assert loop._repairing(load) == "loaded"
    text = [str(w.message) for w in seen if issubclass(w.category, loop.CompileNotice)]
    assert len(calls) == 2 and len(text) == 1
    assert "compiled by another version of robustrack" in text[0] and "damaged" not in text[0]
    assert "robustrack.controllers.codes" in text[0] and "compiling them again" in text[0]


def test_a_first_tracking_runs_helper_compiles_the_rows_pseudo_inverse_after_its_own_parts(monkeypatch):
    """Issue 55 item 3: the pseudo-inverse of two or more rows joins a machine's first tracking run — compiled by its
    helper process after the controlled system and BDF, while this process compiles the nominal side, the law and
    the uncompensated system — so the first run of a structure with several rows later loads it instead of
    compiling it. Only there: a loop that needs it has it already, actuators have their own, a nominal run starts
    no helper, a machine that has it compiles nothing more; the helper compiles it after its own parts."""
    from robustrack.compiled import loop, motion

    ready = set()
    monkeypatch.setattr(loop, "_part_ready", lambda part: part in ready)
    assert loop._spare_parts(False, True, False, False) == ["motion-rows"]  # new machine, a tracking run
    assert loop._spare_parts(False, False, False, False) == []  # a nominal run: no helper
    assert loop._spare_parts(False, True, False, True) == []  # rows: the loop needs it (motion-rows among its parts)
    assert loop._spare_parts(True, True, False, False) == []  # actuators: their own pseudo-inverse
    ready.update(("controlled", "uncompensated"))
    assert loop._spare_parts(False, True, False, False) == []  # the helper's parts cached: no helper
    ready.difference_update(("controlled", "uncompensated"))
    ready.add("motion-rows")
    assert loop._spare_parts(False, True, False, False) == []  # cached already
    compiled = []
    monkeypatch.setattr(motion, "rows_pinv", lambda: compiled.append("motion-rows"))
    loop._compile_spare(["motion", "nominal"])
    assert compiled == []
    loop._compile_spare(["motion", "nominal", "motion-rows"])
    assert compiled == ["motion-rows"]
    compiled.clear()  # the helper: its own parts first, then the spare one
    monkeypatch.setattr(loop, "_plan", lambda model, parts: {"controlled": None})
    monkeypatch.setattr(loop, "_compile_part", lambda plan, part, side="all": compiled.append((part, side)))
    loop._helper(["controlled", "motion-rows"])
    assert compiled == [("controlled", "helper"), "motion-rows"]
    # this process, after a helper that compiled both: nothing of the spare part (it needs none); after a helper that
    # failed: the spare part compiled here
    monkeypatch.setattr(loop, "_plan", lambda model, parts: {p: ([], []) for p in parts})
    monkeypatch.setattr(loop, "_part_stamp", lambda part: loop.Path(os.devnull))

    class Helper:
        parts = ("controlled", "motion-rows")
        returncode = None

        def __init__(self, code):
            self.code = code

        def wait(self):
            self.returncode = self.code

        def poll(self):
            return self.returncode

    for code, expected in ((0, []), (1, ["motion-rows"])):
        compiled.clear()
        monkeypatch.setattr(loop, "_SYSTEMS_DONE", set())
        loop._compile_kernels(None, ["motion", "nominal", "controlled", "motion-rows"], Helper(code))
        assert [c for c in compiled if c == "motion-rows"] == expected, code


def test_the_rows_pseudo_inverse_compiled_once_is_loaded_by_the_next_process():
    """The C function of two or more rows is cached: a helper's compile serves every later process. (Written with
    ``scale_free_pinv`` as a closure variable, numba compiled it again in every process — the main process of the
    first run recompiled what its helper had just compiled.) This process compiles it or loads it, so the cache has
    it; a new process must load it (numba's cache hit), and give the same bits as the kernel it inlines."""
    import subprocess

    from robustrack.compiled.motion import rows_pinv

    rows_pinv()
    code = ("import ctypes, numpy as np\n"
            "from robustrack.compiled.motion import rows_pinv\n"
            "from robustrack.compiled.mechanics import scale_free_pinv\n"
            "f = rows_pinv(); P = ctypes.POINTER(ctypes.c_double)\n"
            "same = []\n"
            "for B in (np.arange(1.0, 13.0).reshape(3, 4) ** 1.5, np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0]])):\n"
            "    m, n = B.shape; Bp = np.zeros((n, m))\n"
            "    f.ctypes(B.ctypes.data_as(P), m, n, Bp.ctypes.data_as(P))\n"
            "    same.append(bool(np.array_equal(Bp, scale_free_pinv(B))))\n"
            "print(f.cache_hits, same)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split(None, 1) == ["1", "[True, True]\n"], out.stdout  # full rank (QR) and rank 1 (the SVD)


def test_without_a_helper_a_first_tracking_run_leaves_the_rows_pseudo_inverse_to_a_run_that_needs_it(monkeypatch):
    """Where no helper process can start (no ``sys.executable``, a repair in progress), the spare part is not compiled
    by this process (it would lengthen the first run by its whole compile) and the compile notice does not name it;
    its stamp is not written, so a later run still knows the cache lacks it."""
    import warnings

    from robustrack.compiled import loop, motion
    from robustrack.plants import pendulum_energy_constraint, triple_pendulum

    monkeypatch.setattr(loop, "_part_ready", lambda part: part not in ("controlled", "motion-rows"))
    monkeypatch.setattr(loop, "_helper_for", lambda parts: None)
    stamped = []
    monkeypatch.setattr(loop, "_part_stamp", lambda part: stamped.append(part) or loop.Path(os.devnull))
    built = []
    monkeypatch.setattr(motion, "rows_pinv", lambda: built.append(1))
    plant = triple_pendulum()
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        assert loop.compiled_loop(plant, plant, pendulum_energy_constraint(L1=1.0, g=9.81, gain=0.02, n=3, m1=1.0))
    notices = [str(w.message) for w in seen if issubclass(w.category, loop.CompileNotice)]
    assert built == [] and "motion-rows" not in stamped
    assert notices and not any("pseudo-inverse" in text for text in notices), notices
