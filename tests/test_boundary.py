"""One boundary for the controller, in Python and in C (issue 54; docs/guide/robot.md, "One boundary").

The Python :class:`~robustrack.loop.Controller` and its exported C answer the same bad calls with the same status
(:data:`robustrack.loop.controller.STATUS`: the C's return value, the Python refusal's ``error.status``), a refused
``update`` leaves the estimator's state as it was in both, and a compensator state of the wrong length is refused
before the compiled path could read past its end. The C is compiled with the system's compiler as in
``tests/test_export.py`` (whose helpers this file uses).
"""

from __future__ import annotations

import ctypes

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_export import TOL, _arm, _shared, needs_cc

from robustrack.errors import ControllerError, HorizonError, ParameterError, RobustrackError
from robustrack.loop import Sensor, margins
from robustrack.loop.controller import STATUS
from robustrack.scenarios import load_scenario

NAN, INF = float("nan"), float("inf")


@pytest.fixture(scope="module")
def arm():
    """The GD arm of tests/test_export.py (n = 2, n_z = 2, numpy path), its controller over [0, 0.5] s."""
    return _arm().replace(t_span=(0.0, 0.5)).controller()


@pytest.fixture(scope="module")
def arm_c(arm, tmp_path_factory):
    """The arm's exported C as a shared library, rt_update's argument types set."""
    folder = tmp_path_factory.mktemp("arm")
    arm.export(folder)
    lib = _shared(folder, opt="-O0")  # the statuses, not the speed: the quickest compile
    ptr = ctypes.c_void_p
    lib.rt_update.argtypes, lib.rt_estimator_reset.argtypes = [ptr, ctypes.c_double, ptr, ptr], [ptr]
    lib.rt_estimator_size.restype = ctypes.c_size_t
    return lib


def _python(call):
    """(status, τ or None) of a Python call: 0 and its τ, or the refusal's status."""
    try:
        return STATUS["ok"], call()
    except (ControllerError, HorizonError) as exc:
        return exc.status, None


def _c_torque(lib, n, t, q, qd, z=None):
    """(status, τ) of rt_torque / rt_torque_z."""
    tau = np.full(n, 7.0)
    q, qd = (np.ascontiguousarray(v, dtype=float) for v in (q, qd))
    if z is None:
        rc = lib.rt_torque(t, q.ctypes.data, qd.ctypes.data, tau.ctypes.data)
    else:
        z = np.ascontiguousarray(z, dtype=float)
        rc = lib.rt_torque_z(t, q.ctypes.data, qd.ctypes.data, z.ctypes.data, tau.ctypes.data)
    return rc, tau


def _bad_calls(ctrl):
    """The corpus: (name, t, q, q̇, z) of calls a C caller can make, good and bad."""
    q, qd, _ = ctrl.reference(0.2)
    t0, t1 = ctrl.horizon
    z = np.full(ctrl.nz, 0.01)

    def first(x, v):  # x with its first entry v
        return np.concatenate([[v], x[1:]])

    return [("good", 0.2, q, qd, None), ("good with z", 0.2, q, qd, z), ("the horizon's end", t1, q, qd, None),
            ("before t0", t0 - 1e-9, q, qd, None), ("after t1", t1 + 1e-9, q, qd, None),
            ("t NaN", NAN, q, qd, None), ("t inf", INF, q, qd, None), ("t NaN, q NaN", NAN, q + NAN, qd, None),
            ("q NaN", 0.2, first(q, NAN), qd, None), ("q inf", 0.2, first(q, -INF), qd, None),
            ("qd NaN", 0.2, q, first(qd, NAN), None), ("qd inf", 0.2, q, first(qd, INF), None),
            ("z NaN", 0.2, q, qd, first(z, NAN)), ("z inf", 0.2, q, qd, z + INF),
            ("q huge", 0.2, first(q, 1e300), qd, None), ("qd huge", 0.2, q, qd + 1e300, None)]


@needs_cc
def test_python_and_c_give_the_same_status_on_the_same_bad_calls(arm, arm_c):
    seen = {}
    for name, t, q, qd, z in _bad_calls(arm):
        arm.reset()
        want, tau_py = _python(lambda: arm(t, q, qd, z))
        got, tau_c = _c_torque(arm_c, arm.n, t, q, qd, z if z is not None else arm.z)
        assert got == want, (name, got, want)
        if want == 0:  # the same force, to the export's rounding (tests/test_export.py)
            assert np.abs(tau_c - tau_py).max() <= TOL * np.abs(tau_py).max(), name
        seen[name] = want
    # the corpus reaches every status a torque call has: 0, 1 and 2 (3 is the C's own branch check: test_export)
    assert {seen["good"], seen["before t0"], seen["q NaN"], seen["z inf"], seen["qd huge"]} == {0, 1, 2}


@needs_cc
def test_a_refused_update_leaves_the_estimator_untouched_in_python_and_in_c(arm, arm_c):
    """A sequence of updates with bad ones among them: the same statuses, and after each refusal the next good
    update gives the same force in both (the state kept, z summed over the accepted calls only)."""
    state = ctypes.create_string_buffer(arm_c.rt_estimator_size())
    arm_c.rt_estimator_reset(state)
    arm.reset()
    rng = np.random.default_rng(54)
    t1 = arm.horizon[1]
    plan = []
    for k in range(60):
        t = 0.005 * k
        q = arm.run.solution(t)[:arm.n] + rng.normal(0, 1e-3, arm.n)
        plan.append((t, q))
        if k % 7 == 3:
            plan += [(t, q), (t + 0.001, q + NAN), (t + 0.001, q * INF), (t - 1.0, q), (t1 + 1.0, q)]
    statuses, tau = [], np.empty(arm.n)
    for t, q in plan:
        z_before, seen_before = arm.z.copy(), arm._seen
        want, tau_py = _python(lambda: arm.update(t, q))
        got = arm_c.rt_update(state, t, np.ascontiguousarray(q).ctypes.data, tau.ctypes.data)
        assert got == want, (t, got, want)
        if want:
            assert arm._seen is seen_before and np.array_equal(arm.z, z_before)  # nothing changed
        else:
            assert np.abs(tau - tau_py).max() <= TOL * np.abs(tau_py).max(), t
        statuses.append(want)
    assert set(statuses) == {0, 1, 2, 4}


def test_a_wrong_length_z_is_refused_on_the_compiled_path_and_on_numpy():
    """The compiled path reads n_z entries of z: a shorter (or longer) z is refused before the kernel is called."""
    pb = load_scenario("triple-pendulum", ["simulation.t_end=0.2"]).build()
    for ctrl in (pb.controller(), pb.controller(backend="numpy")):  # (the arm's tests cover n_z > 0 on numpy)
        q, qd, _ = ctrl.reference(0.1)
        for z in (np.zeros(ctrl.nz + 3), np.zeros((1, ctrl.nz)), [[]]):
            with pytest.raises(ControllerError, match=r"`z` must have shape \(0,\)") as err:
                ctrl(0.1, q, qd, z)
            assert err.value.status == 2
        assert np.isfinite(ctrl(0.1, q, qd, np.zeros(ctrl.nz))).all()
    assert pb.controller().compiled


def test_the_skip_flag_skips_finiteness_only(arm):
    q, qd, _ = arm.reference(0.1)
    with pytest.raises(ControllerError, match="`z` must have shape"):
        arm(0.1, q, qd, np.zeros(1), check=False)  # the length is checked always
    with pytest.raises(ControllerError, match="not finite") as err:  # a NaN τ is never returned
        arm(0.1, q + NAN, qd, check=False)
    assert err.value.status == 2
    assert np.array_equal(arm(0.1, q, qd, check=False), arm(0.1, q, qd))


@pytest.mark.parametrize("make, said", [
    (lambda pb: pb.controller(period="1e-3"), "`period` must be a number of seconds >= 0"),
    (lambda pb: pb.controller(sensor="filtered"), "`sensor` must be a robustrack.loop.Sensor"),
    (lambda pb: Sensor(velocity=["exact"]), "`velocity` must be one of ['exact', 'difference', 'filtered']"),
    (lambda pb: margins("triple-pendulum"), "load_scenario('triple-pendulum').build()"),
    (lambda pb: pb.controller()("0.1", [0.0] * 3, [0.0] * 3), "`t` must be a number (seconds)"),
    (lambda pb: pb.controller()(0.1, ["a", "b", "c"], [0.0] * 3), "`q` must be 3 numbers"),
    (lambda pb: pb.controller()(0.1, [0.0] * 2, [0.0] * 3), "`q` must have shape (3,)"),
])
def test_the_constructors_and_calls_refuse_what_they_cannot_use(make, said):
    pb = load_scenario("triple-pendulum", ["simulation.t_end=0.2"]).build()
    with pytest.raises(ParameterError) as err:
        make(pb)
    assert said in str(err.value)


finite = st.floats(-1e3, 1e3, allow_nan=False)
entry = st.one_of(finite, finite, finite, st.sampled_from([NAN, INF, -INF, 1e300, -1e300]))


@needs_cc
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(t=st.one_of(st.floats(-0.1, 0.6), st.sampled_from([NAN, INF, 0.0, 0.5])),
       q=st.lists(entry, min_size=2, max_size=2), qd=st.lists(entry, min_size=2, max_size=2),
       z=st.one_of(st.none(), st.lists(entry, min_size=2, max_size=2)))
def test_property_python_and_c_agree_and_never_return_a_nan(arm, arm_c, t, q, qd, z):
    """Any call: a finite τ of shape (n,) or a refusal with a status, the C's status the same."""
    want, tau = _python(lambda: arm(t, q, qd, z))
    if want == 0:
        assert tau.shape == (arm.n,) and np.isfinite(tau).all()
    got, _ = _c_torque(arm_c, arm.n, t, q, qd, arm.z if z is None else z)
    assert got == want


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(q=st.one_of(st.lists(entry, min_size=0, max_size=3), st.just("q"), st.just(None)),
       t=st.one_of(st.floats(allow_nan=True), st.just("t"), st.just(None)))
def test_property_update_refuses_or_answers_and_a_refusal_changes_nothing(arm, q, t):
    arm.reset()
    arm.update(0.0, arm.run.solution(0.0)[:arm.n])
    before = (arm.z.copy(), arm._seen)
    try:
        tau = arm.update(t, q)
    except RobustrackError as exc:
        assert isinstance(exc, (ControllerError, HorizonError)) and exc.status in (1, 2, 4)
        assert arm._seen is before[1] and np.array_equal(arm.z, before[0])
    else:
        assert tau.shape == (arm.n,) and np.isfinite(tau).all()
