"""The controller exported as C (robustrack.loop.export; docs/guide/robot.md, "Export to C").

The truth the C is held to is the Python controller itself (robustrack.loop.Controller): the exported source is
compiled with the system's compiler and called through ctypes at random states inside the horizon.

Tolerance: both sides evaluate the same formulas in double precision, in a different order (sympy's cse and
canonical ordering, a Cholesky form of the fundamental equation against the Python path's general form, pow() for
squares): each of the ~10² operations behind a τ component rounds at 1.1e-16, so ~1e-14 of the force's size is
expected; 1e-12 of max|τ| leaves a margin of ~100 and still fails on any wrong term (a wrong sign, parameter or
index changes τ at the 1e-3 level or more).
"""

from __future__ import annotations

import ctypes
import shutil
import subprocess
import sys

import numpy as np
import pytest
import sympy as sp

from robustrack.constraints import Holonomic
from robustrack.controllers import GD, GDBar, GSS, control_function
from robustrack.errors import ExportError, RankConditionError
from robustrack.loop.export import FILES
from robustrack.plants import LagrangianPlant, Plant
from robustrack.scenarios import load_scenario
from robustrack.tracking import TrackingProblem

CC = shutil.which("gcc") or shutil.which("cc")
CXX = shutil.which("g++") or shutil.which("c++")
needs_cc = pytest.mark.skipif(CC is None, reason="no C compiler (gcc or cc) on PATH: the exported C cannot be "
                                                 "compiled here (install gcc)")
WARNINGS = ["-Wall", "-Wextra", "-pedantic", "-Werror"]
TOL = 1e-12  # relative to max|τ| (module docstring)


def _shared(folder, opt="-O2"):
    """The exported source compiled as a shared library, loaded with ctypes (pointer arguments as c_void_p)."""
    lib_path = folder / "librt.so"
    subprocess.run([CC, "-std=c99", opt, *WARNINGS, "-shared", "-fPIC", "-o", str(lib_path),
                    str(folder / "robustrack_controller.c"), "-lm"], check=True, capture_output=True, text=True)
    lib = ctypes.CDLL(str(lib_path))
    ptr = ctypes.c_void_p
    lib.rt_torque.argtypes = [ctypes.c_double, ptr, ptr, ptr]
    lib.rt_torque_z.argtypes = [ctypes.c_double, ptr, ptr, ptr, ptr]
    lib.rt_reference.argtypes = [ctypes.c_double, ptr, ptr]
    lib.rt_horizon.restype = lib.rt_t0.restype = ctypes.c_double
    return lib


def _worst(ctrl, lib, count, seed, spread=0.1, with_z=False):
    """The largest |τ_C − τ_Python| / max|τ_Python| at ``count`` random states inside the horizon."""
    rng = np.random.default_rng(seed)
    n, nz = ctrl.n, ctrl.nz
    worst = 0.0
    tau = np.empty(n)
    for t in rng.uniform(*ctrl.horizon, count):
        y = ctrl.run.solution(t)  # the nominal state (ctrl.reference also computes Qᶜ: not needed here)
        q, qd = y[:n] + rng.normal(0, spread, n), y[n:] + rng.normal(0, spread, n)
        if with_z:
            z = rng.normal(0, spread, nz)
            rc = lib.rt_torque_z(t, q.ctypes.data, qd.ctypes.data, z.ctypes.data, tau.ctypes.data)
            want = ctrl(t, q, qd, z)
        else:
            rc = lib.rt_torque(t, q.ctypes.data, qd.ctypes.data, tau.ctypes.data)
            want = ctrl(t, q, qd)
        assert rc & 15 == 0, t  # RT_ERROR_MASK: a robot's τ may also be clipped to its effort limits (RT_SATURATED)
        worst = max(worst, float(np.abs(tau - want).max() / np.abs(want).max()))
    return worst


# --------------------------------------------------------------------------- #
# the triple pendulum (GSS, the catalog's design)
# --------------------------------------------------------------------------- #
@pytest.fixture(scope="module")
def pendulum(tmp_path_factory):
    pb = load_scenario("triple-pendulum").build()
    ctrl = pb.controller()
    folder = tmp_path_factory.mktemp("pendulum")
    done = ctrl.export(folder)
    return ctrl, folder, done


def test_export_writes_the_four_files(pendulum):
    ctrl, folder, done = pendulum
    assert [p.name for p in done.files] == list(FILES)
    assert (done.n, done.m, done.nz) == (3, 1, 0)
    assert done.steps == ctrl.run.solution.F.shape[0]
    source = (folder / "robustrack_controller.c").read_text()
    assert "malloc" not in source and "#include <math.h>" in source
    header = (folder / "robustrack_controller.h").read_text()
    for decl in ("int rt_n(void);", "double rt_horizon(void);",
                 "int rt_torque(double t, const double *q, const double *qd, double *tau);"):
        assert decl in header


@needs_cc
def test_triple_pendulum_gss_equals_the_python_controller(pendulum):
    ctrl, folder, _ = pendulum
    lib = _shared(folder)
    assert lib.rt_n() == 3 and lib.rt_horizon() == ctrl.horizon[1] and lib.rt_t0() == ctrl.horizon[0]
    assert _worst(ctrl, lib, 1000, seed=0) <= TOL


@needs_cc
def test_the_reference_is_the_nominal_runs(pendulum):
    ctrl, folder, _ = pendulum
    lib = _shared(folder)
    q, qd = np.empty(3), np.empty(3)
    for t in np.linspace(*ctrl.horizon, 101):  # the step ends included: the search's edge cases
        assert lib.rt_reference(t, q.ctypes.data, qd.ctypes.data) == 0
        want = ctrl.run.solution(t)
        assert np.abs(np.concatenate([q, qd]) - want).max() <= 1e-14 * np.abs(want).max()


@needs_cc
def test_outside_the_horizon_is_refused(pendulum):
    ctrl, folder, _ = pendulum
    lib = _shared(folder)
    q, qd, _ = ctrl.reference(0.0)
    tau = np.full(3, 7.0)
    t0, t1 = ctrl.horizon
    for t in (t0 - 1e-9, t1 + 1e-9, t1 + 1.0, float("nan")):
        assert lib.rt_torque(t, q.ctypes.data, qd.ctypes.data, tau.ctypes.data) == 1
    assert (tau == 7.0).all()  # nothing written
    assert lib.rt_torque(t1, q.ctypes.data, qd.ctypes.data, tau.ctypes.data) == 0


@needs_cc
def test_the_example_loop_builds_and_runs(pendulum, tmp_path):
    _, folder, _ = pendulum
    exe = tmp_path / "rt_example"
    subprocess.run([CC, "-std=c99", "-O2", *WARNINGS, "-o", str(exe), str(folder / "main.c"),
                    str(folder / "robustrack_controller.c"), "-lm"], check=True, capture_output=True, text=True)
    out = subprocess.run([str(exe), "100", "1000"], check=True, capture_output=True, text=True).stdout
    assert out.count("t = ") == 11 and "us per call" in out


@pytest.mark.skipif(CXX is None, reason="no C++ compiler (g++ or c++) on PATH")
def test_it_compiles_as_cpp(pendulum, tmp_path):
    _, folder, _ = pendulum
    exe = tmp_path / "rt_example_cpp"
    subprocess.run([CXX, "-x", "c++", "-std=c++11", "-O1", *WARNINGS, "-o", str(exe), str(folder / "main.c"),
                    str(folder / "robustrack_controller.c")], check=True, capture_output=True, text=True)
    out = subprocess.run([str(exe), "10", "10"], check=True, capture_output=True, text=True).stdout
    assert "us per call" in out


@pytest.mark.skipif(CC is None or shutil.which("cmake") is None, reason="no cmake or no C compiler on PATH")
def test_the_cmake_project_builds(pendulum, tmp_path):
    _, folder, _ = pendulum
    build = tmp_path / "build"
    subprocess.run(["cmake", "-S", str(folder), "-B", str(build)], check=True, capture_output=True)
    subprocess.run(["cmake", "--build", str(build)], check=True, capture_output=True)
    subprocess.run([str(build / "rt_example"), "10", "10"], check=True, capture_output=True)


@needs_cc
@pytest.mark.parametrize("comp", [
    GDBar(k=10.0, n=2.0, f=control_function("signed-power", eps=0.1, alpha_c=1.0, p=1.5)),
    GSS(f=control_function("saturation", eps=0.05))], ids=["gdbar-signed-power", "gss-saturation"])
def test_other_laws_and_control_functions(comp, tmp_path):
    # GD-bar traces its ‖ė‖∞^(4n−4) (np.maximum → fmax) and |x|^p; saturation traces np.minimum/np.maximum.
    pb = load_scenario("triple-pendulum", ["simulation.t_end=2"]).build().replace(compensator=comp)
    ctrl = pb.controller()
    ctrl.export(tmp_path)
    assert _worst(ctrl, _shared(tmp_path), 200, seed=1) <= TOL


# --------------------------------------------------------------------------- #
# a user's own plant and constraint (GD with its integral states)
# --------------------------------------------------------------------------- #
def _arm(constraint_rows=None):
    """A planar two-link arm from its energies, its tip's angle made to follow a sine (a holonomic, time-varying
    constraint); on numpy (this structure compiles nothing)."""
    q1, q2, v1, v2, t = sp.symbols("q1 q2 v1 v2 t")
    m1, m2, l1, l2, g = sp.symbols("m1 m2 l1 l2 g")
    T = (m1 * l1**2 * v1**2 / 8 + m2 * (l1**2 * v1**2 + l2**2 * (v1 + v2)**2 / 4
                                         + l1 * l2 * v1 * (v1 + v2) * sp.cos(q2)) / 2 + m2 * l2**2 * (v1 + v2)**2 / 24)
    V = g * (m1 * l1 / 2 * sp.sin(q1) + m2 * (l1 * sp.sin(q1) + l2 / 2 * sp.sin(q1 + q2)))
    plant = LagrangianPlant.from_energies([q1, q2], T, V, qd=[v1, v2],
                                          params={m1: 1.5, m2: 0.8, l1: 0.7, l2: 0.5, g: 9.81})
    row = q1 + q2 - sp.Rational(3, 10) * sp.sin(2 * t) - sp.Rational(1, 2)
    con = Holonomic(constraint_rows(row) if constraint_rows else [row], [q1, q2], t)
    comp = GD(Ki=2.0, Kd=3.0, f=control_function("tanh", eps=0.05))
    return TrackingProblem(plant, con, comp, [0.2, 0.3], [0.4, 0.2], (0.0, 2.0), backend="numpy")


@needs_cc
def test_a_users_lagrangian_plant_with_a_constraint(tmp_path):
    pb = _arm()
    ctrl = pb.controller()
    done = ctrl.export(tmp_path)
    assert (done.n, done.m, done.nz) == (2, 1, 2)
    lib = _shared(tmp_path)
    assert lib.rt_nz() == 2
    assert _worst(ctrl, lib, 1000, seed=2, with_z=True) <= TOL
    assert _worst(ctrl, lib, 100, seed=3) <= TOL  # rt_torque: z = 0, the controller's own after reset()


def _updates(ctrl, lib, h, count, seed, noise):
    """The largest |τ_C − τ_Python| / max|τ_Python| over ``count`` calls of rt_update and Controller.update at the
    rate 1/h on noisy measured positions (one caller-owned estimator, allocated by its size as ctypes users do)."""
    ptr = ctypes.c_void_p
    lib.rt_update.argtypes, lib.rt_estimator_reset.argtypes = [ptr, ctypes.c_double, ptr, ptr], [ptr]
    lib.rt_estimator_size.restype = ctypes.c_size_t
    state = ctypes.create_string_buffer(lib.rt_estimator_size())
    lib.rt_estimator_reset(state)
    ctrl.reset()
    rng, tau, worst = np.random.default_rng(seed), np.empty(ctrl.n), 0.0
    t0 = ctrl.horizon[0]
    for k in range(count):
        t = t0 + k * h
        q = ctrl.run.solution(t)[:ctrl.n] + rng.normal(0, noise, ctrl.n)
        assert lib.rt_update(state, t, q.ctypes.data, tau.ctypes.data) == 0, t
        want = ctrl.update(t, q)
        worst = max(worst, float(np.abs(tau - want).max() / np.abs(want).max()))
    assert lib.rt_update(state, t, q.ctypes.data, tau.ctypes.data) == 4  # not after the previous call: refused
    return worst


@needs_cc
def test_the_estimator_of_a_positions_only_loop_equals_controller_update(tmp_path):
    """rt_update (the sensor model's filtered difference, traced from robustrack.loop.sensor.estimate_velocity)
    against Controller.update at 1 kHz on noisy positions; the GD arm with its integral states sums z as update does
    (backward difference: no sensor)."""
    pb = load_scenario("triple-pendulum", ["simulation.t_end=0.4", "compensator.sample_period=1e-3",
                                           "sensor.velocity=filtered", "sensor.velocity_cutoff=25"]).build()
    ctrl = pb.controller()
    ctrl.export(tmp_path / "pendulum")
    assert "filtered difference, cutoff 25 Hz" in (tmp_path / "pendulum" / "robustrack_controller.c").read_text()
    assert _updates(ctrl, _shared(tmp_path / "pendulum"), 1e-3, 400, seed=4, noise=1e-4) <= TOL
    arm = _arm().replace(t_span=(0.0, 0.5)).controller()
    arm.export(tmp_path / "arm")
    assert _updates(arm, _shared(tmp_path / "arm"), 2e-3, 250, seed=5, noise=1e-4) <= TOL


def test_a_wrong_term_would_be_seen(pendulum, tmp_path):
    # The tolerance can fail: the same export with one parameter changed by 1e-6 (relative) misses it.
    ctrl, folder, _ = pendulum
    if CC is None:
        pytest.skip("no C compiler on PATH")
    source = (folder / "robustrack_controller.c").read_text()
    start = source.index("{", source.index("static const double rt_plant_p[")) + 1
    end = source.index(",", start)
    value = float(source[start:end])
    for name in FILES:
        (tmp_path / name).write_text((folder / name).read_text())
    (tmp_path / "robustrack_controller.c").write_text(source[:start] + repr(value * (1 + 1e-6)) + source[end:])
    assert _worst(ctrl, _shared(tmp_path), 50, seed=4) > 100 * TOL


# --------------------------------------------------------------------------- #
# a plant from functions (the functions traced: robustrack.loop.trace)
# --------------------------------------------------------------------------- #
def _gravity(q, m1, m2, l1, l2, g):
    """The arm's gravity torques (a helper of the module: the tracer rebuilds it too)."""
    c1, c12 = np.cos(q[0]), np.cos(q[0] + q[1])
    return g * np.array([m1 * l1 / 2 * c1 + m2 * (l1 * c1 + l2 / 2 * c12), m2 * l2 / 2 * c12])


def _arm_mass(q, m1, m2, l1, l2):
    M = np.zeros((2, 2))  # a float array written item by item, as users write them
    b = m2 * l1 * l2 / 2 * np.cos(q[1])
    M[0, 0] = m1 * l1**2 / 4 + m2 * (l1**2 + l2**2 / 3) + 2 * b
    M[0, 1] = M[1, 0] = m2 * l2**2 / 3 + b
    M[1, 1] = m2 * l2**2 / 3
    return M


def _arm_force(q, qd, t, m1, m2, l1, l2, g, c, fc):
    h = m2 * l1 * l2 / 2 * np.sin(q[1])
    coriolis = np.array([h * (2 * qd[0] * qd[1] + qd[1] ** 2), -h * qd[0] ** 2])
    push = np.array([0.2 * np.sin(3.0 * t), 0.0])
    return coriolis - _gravity(q, m1, m2, l1, l2, g) - c * qd - fc * np.tanh(qd / 0.05) + push


def _function_arm():
    """The planar arm of :func:`_arm` as Python functions (Plant.from_functions), its tip angle on a sine."""
    plant = Plant.from_functions(_arm_mass, _arm_force, names=["q1", "q2"],
                                 params={"m1": 1.5, "m2": 0.8, "l1": 0.7, "l2": 0.5, "g": 9.81, "c": 0.1, "fc": 0.2})
    q1, q2, t = sp.symbols("q1 q2 t")
    con = Holonomic([q1 + q2 - sp.Rational(3, 10) * sp.sin(2 * t) - sp.Rational(1, 2)], [q1, q2], t)
    return TrackingProblem(plant, con, GSS(K=5.0), [0.2, 0.3], [0.4, 0.2], (0.0, 1.0), backend="numpy")


@needs_cc
def test_a_plant_from_functions_equals_the_python_controller(tmp_path):
    ctrl = _function_arm().controller()
    done = ctrl.export(tmp_path)
    assert (done.n, done.m, done.nz) == (2, 1, 0)
    assert "tanh(" in (tmp_path / "robustrack_controller.c").read_text()
    assert _worst(ctrl, _shared(tmp_path, "-O1"), 1000, seed=5) <= TOL


def _spring(M, Q):
    plant = Plant.from_functions(M, Q, params={"m": 2.0, "k": 8.0}, names=["x"])
    return TrackingProblem(plant, None, GSS(), [0.1], [0.0], (0.0, 1.0), backend="numpy")  # x = 0.1 cos 2t


@needs_cc
def test_a_branch_the_nominal_motion_stays_on_is_followed_and_checked(tmp_path):
    # Q is evaluated at the nominal state only: a branch on it that goes one way at every step of the run is kept,
    # and the C checks it at every call: rt_torque returns 3 where the state between two steps takes the other side
    # (here t within 1e-6 s of 0.5, between the run's steps).
    def stiff(q, qd, t, m, k):
        return -(k if q[0] > -1.0 and abs(t - 0.5) > 1e-6 else 2 * k) * q

    ctrl = _spring(lambda q, m: [[m]], stiff).controller()
    assert not (np.abs(ctrl.run.solution.t - 0.5) <= 1e-6).any()
    ctrl.export(tmp_path)
    source = (tmp_path / "robustrack_controller.c").read_text()
    assert source.count("return 3; /* the branch traced at test_export.py line") == 2
    lib = _shared(tmp_path, "-O1")
    assert _worst(ctrl, lib, 200, seed=6) <= TOL
    q, qd, tau = np.array([0.05]), np.array([0.0]), np.full(1, 7.0)
    assert lib.rt_torque(0.5, q.ctypes.data, qd.ctypes.data, tau.ctypes.data) == 3 and tau[0] == 7.0
    assert lib.rt_torque(0.5 + 1e-5, q.ctypes.data, qd.ctypes.data, tau.ctypes.data) == 0


def _sin_of_math(q, qd, m, k):
    import math

    return [-k * math.sin(q[0])]


@pytest.mark.parametrize("M, Q, said", [
    (lambda q, m: [[m * (2.0 if q[0] > 0 else 1.0)]], lambda q, qd, m, k: -k * q,
     r"your function `.*<lambda>` \(the M given to Plant.from_functions\) branches on a value known only at run "
     r"time \(a comparison at test_export.py line \d+"),
    (lambda q, m: [[m]], _sin_of_math,
     r"your function `_sin_of_math` \(the Q given to Plant.from_functions\) does something the C export cannot "
     r"trace — TypeError: .*math\.\*"),
    (lambda q, m: [[m]], lambda q, qd, m, k: [-k * q[0] * (1.0 if q[0] > 0.05 else 0.5)],
     r"takes both sides of a branch on the state along the nominal run .* the other at t = 0\.5"),
], ids=["M-branches-on-q", "Q-calls-math", "Q-branch-crossed-by-the-run"])
def test_what_the_tracer_cannot_follow_in_your_functions_is_refused(M, Q, said, tmp_path):
    with pytest.raises(ExportError, match=said):
        _spring(M, Q).controller().export(tmp_path)
    assert not (tmp_path / "robustrack_controller.c").exists()


# --------------------------------------------------------------------------- #
# a URDF robot with frame constraints: the rigid-body algorithms traced
# --------------------------------------------------------------------------- #
@pytest.fixture(scope="module")
def ur5_frames(tmp_path_factory):
    """The catalog's ur5-plane-circle (the tool point on a plane tracing a circle, its orientation held), 0.3 s, on
    numpy (Pinocchio: the controller the C is held to)."""
    pytest.importorskip("pinocchio")
    pb = load_scenario("ur5-plane-circle", ["simulation.t_end=0.3"]).build().replace(backend="numpy")
    ctrl = pb.controller()
    folder = tmp_path_factory.mktemp("ur5")
    return ctrl, folder, ctrl.export(folder)


@needs_cc
def test_the_ur5_with_frame_constraints_equals_the_python_controller(ur5_frames):
    ctrl, folder, done = ur5_frames
    assert (done.n, done.m, done.nz) == (6, 6, 0)  # plane 1 + circle 2 + orientation 3 rows
    source = (folder / "robustrack_controller.c").read_text()
    # the orientation error's small-angle branch (rigid_body._log3), which the nominal motion never leaves
    assert "/* the branch traced at rigid_body.py line" in source and "(_log3) */" in source
    assert "cos(" in source and "acos(" in source and "malloc" not in source
    lib = _shared(folder, "-O1")
    assert lib.rt_n() == 6 and lib.rt_horizon() == ctrl.horizon[1]
    assert _worst(ctrl, lib, 1000, seed=7) <= TOL


# --------------------------------------------------------------------------- #
# effort limits and a controller that keeps running (docs/guide/robot.md, "Effort limits")
# --------------------------------------------------------------------------- #
RT_ERROR_MASK, RT_SATURATED, RT_HOLDING = 15, 16, 32


def _states(ctrl, count, seed, spread, past=0.0):
    """``count`` random (t, q, q̇) about the nominal run, t inside the horizon or up to ``past`` s beyond its end."""
    rng = np.random.default_rng(seed)
    t0, t1 = ctrl.horizon
    n = ctrl.n
    for t in rng.uniform(t0, t1 + past, count):
        y = ctrl.run.solution(min(t, t1))
        yield float(t), y[:n] + rng.normal(0, spread, n), y[n:] + rng.normal(0, spread, n)


@needs_cc
def test_the_c_saturates_at_the_effort_limits_and_holds_past_the_horizon(tmp_path):
    """200 states, half past the horizon: the C exported with beyond = "hold" and the pendulum's joints limited
    gives the Python controller's clipped τ to 1e-12 (TOL, module docstring; a clipped component is the limit
    itself on both sides, bit for bit), and its status bits say what Controller.saturated / .holding say."""
    from robustrack.tracking import Actuators

    pb = load_scenario("triple-pendulum", ["simulation.t_end=1.0"]).build()
    free = pb.controller(beyond="hold")
    states = list(_states(free, 200, seed=3, spread=0.02, past=1.0))
    # limits at the 60th percentile of each joint's unclipped |τ| over these states: about 40 % of them clip
    limits = np.percentile(np.abs([free(t, q, qd) for t, q, qd in states]), 60, axis=0)
    ctrl = pb.replace(actuators=Actuators(np.eye(3), limits)).controller(beyond="hold")
    done = ctrl.export(tmp_path)
    assert done.beyond == "hold" and np.allclose(done.limits, limits)
    lib = _shared(tmp_path)
    lib.rt_effort_limit.restype = ctypes.c_double
    assert [lib.rt_effort_limit(i) for i in range(3)] == limits.tolist()
    tau = np.empty(3)
    saturated = held = 0
    worst = 0.0
    for t, q, qd in states:
        rc = lib.rt_torque(t, q.ctypes.data, qd.ctypes.data, tau.ctypes.data)
        want = ctrl(t, q, qd)
        assert rc & RT_ERROR_MASK == 0, (t, rc)
        assert bool(rc & RT_SATURATED) == ctrl.saturated and bool(rc & RT_HOLDING) == ctrl.holding == (t > 1.0)
        assert np.all(np.abs(tau) <= limits)
        clipped = np.abs(want) == limits
        assert np.array_equal(tau[clipped], want[clipped])
        worst = max(worst, float(np.abs(tau - want).max() / np.abs(want).max()))
        saturated, held = saturated + ctrl.saturated, held + ctrl.holding
    assert worst <= TOL
    assert 40 <= saturated <= 190 and 60 <= held <= 140  # both branches of both bits were exercised
    # a wrong limit would be seen: the unclipped τ differs from the clipped one by far more than TOL
    assert max(np.abs(free(t, q, qd) - ctrl(t, q, qd)).max() for t, q, qd in states) > 1e3 * TOL * limits.max()
    # refused past the horizon when exported without hold (NaN refused either way)
    assert lib.rt_torque(float("nan"), q.ctypes.data, qd.ctypes.data, tau.ctypes.data) == 1
    ctrl.export(tmp_path / "refuse", beyond="refuse")  # another folder: dlopen keeps a loaded path's library
    lib = _shared(tmp_path / "refuse", "-O1")
    assert lib.rt_torque(1.5, q.ctypes.data, qd.ctypes.data, tau.ctypes.data) == 1


def test_the_command_line_export_holds_past_the_horizon(tmp_path, capsys):
    from robustrack.cli import main

    out = tmp_path / "c"
    assert main(["export", "triple-pendulum", "--set", "simulation.t_end=0.5", "--beyond", "hold", "-o",
                 str(out)]) == 0
    assert "holds the reference of its end" in capsys.readouterr().out
    assert "#define RT_HOLD 1" in (out / "robustrack_controller.c").read_text()


# --------------------------------------------------------------------------- #
# refusals
# --------------------------------------------------------------------------- #
def test_rank_deficient_constraint_is_refused(tmp_path):
    pb = _arm(lambda row: [row, 2 * row])  # dependent rows: Qᶜ needs the pseudo-inverse
    with pytest.raises(RankConditionError, match="loses row rank .* pseudo-inverse"):
        pb.controller().export(tmp_path)
    assert not (tmp_path / "robustrack_controller.c").exists()


def test_a_users_control_function_is_refused(tmp_path):
    g = control_function(lambda x: x / (1 + abs(x)), eps=0.1, name="soft")
    pb = load_scenario("triple-pendulum", ["simulation.t_end=0.5"]).build().replace(compensator=GSS(f=g))
    with pytest.raises(ExportError, match="no law the C export can trace"):
        pb.controller().export(tmp_path)


def test_the_command_line_export(tmp_path, capsys):
    from robustrack.cli import build_command, main

    out = tmp_path / "c out"  # a folder with a space: the printed build command quotes it (issue 54)
    assert main(["export", "triple-pendulum", "--set", "simulation.t_end=0.5", "-o", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == sorted(FILES)
    printed = capsys.readouterr().out
    assert "robustrack_controller.c" in printed and f"build and run the example: {build_command(out)}" in printed


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-n", "0"]))
