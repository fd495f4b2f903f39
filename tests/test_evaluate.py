"""One state's constrained motion from Python through the compiled entry (compiled.evaluate.motion).

Once a compiled loop has loaded a plant's and a constraint's functions, :func:`robustrack.plants.constrained_motion`
solves one state in one compiled call. Its numbers are the numpy path's to rounding: the plant's functions are the
same formulas compiled (generated structures: the same expressions; robots: robustrack's kernels against
Pinocchio, ≤ 1e-11 relative, ``tests/test_rigid_body.py``) and the fundamental equation the compiled twin of
``mechanics.solve_constrained`` (the same B⁺ — by a QR where that keeps every row for certain, else by an SVD —
differing by cond(B)·ε), so they are compared at 1e-11 relative — far below any wrong term (O(1)). What the entry's checks refuse (rows it cannot meet, a non-finite M)
goes to the numpy path, which says so as before. The batch side of the evaluator is checked in
``tests/test_rigid_body.py`` (robots, frame constraints) and ``tests/test_user_compiled.py`` (user plants).
"""

import warnings

import numpy as np
import pytest

from robustrack import _evaluator
from robustrack.compiled.loop import compiled_loop
from robustrack.constraints import Stabilization
from robustrack.errors import ConstraintNotice
from robustrack.plants import constrained_motion, pendulum_energy_constraint, triple_pendulum
from robustrack.tracking.rhs import nominal_motion

REL = 1e-11


def _rel(a, b) -> float:
    return float(np.max(np.abs(np.asarray(a) - np.asarray(b))) / max(1.0, float(np.max(np.abs(b)))))


def _same_motion(plant, constraint, q, v, t, force=None):
    """The compiled entry answers, and with the numpy path's numbers to rounding."""
    assert _evaluator.motion(plant, constraint, q, v, t, force) is not None
    fast = constrained_motion(plant, constraint, q, v, t, force=force)
    slow = constrained_motion(plant, constraint, q, v, t, force=force, compiled=False)
    assert _rel(fast.qdd, slow.qdd) < REL and _rel(fast.Qc, slow.Qc) < REL
    assert fast.qdd.shape == slow.qdd.shape and np.shape(fast.residual) == np.shape(slow.residual)
    assert not fast.augmented and fast.residual < 1e-9
    return fast, slow


def test_one_state_of_a_generated_structure_and_of_a_robot_through_the_compiled_entry():
    plant = triple_pendulum()
    c = pendulum_energy_constraint(L1=1.0, g=9.81, gain=0.02, m1=1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        compiled_loop(plant, plant, c, jacobian=False)
    q, v = np.array([0.3, -0.2, 0.5]), np.array([0.1, 0.4, -0.3])
    _same_motion(plant, c, q, v, 0.7, force=np.array([0.5, -1.0, 0.2]))
    _same_motion(plant, None, q, v, 0.7)  # unconstrained: M q̈ = Q
    # the numpy tracking loop, the reference, stays numpy: its one state is the numpy path's own numbers
    ref = nominal_motion(plant, c, q, v, 0.7)
    assert np.array_equal(ref.qdd, constrained_motion(plant, c, q, v, 0.7, compiled=False).qdd)

    pin = pytest.importorskip("pinocchio")  # noqa: F841
    from robustrack.plants import FrameConstraint, URDFPlant, example_robot_urdf

    arm = URDFPlant(example_robot_urdf("ur5"), payload_mass=2.0, payload_com=[0.0, 0.0, 0.05])
    home = np.array([0.0, -1.2, 1.4, -1.5, -1.57, 0.0])
    held = FrameConstraint.point(arm, "tool0", arm.frame_pose(home, "tool0")[1])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        compiled_loop(arm, arm, held, jacobian=False)
    v6 = np.random.default_rng(0).normal(size=6)
    _same_motion(arm, held, home, v6, 0.0)

    # rows it cannot meet (the tool held at two points at once, both stabilized): the numpy path says so
    stab = Stabilization.second_order(1.0, 10.0)
    p0 = arm.frame_pose(home, "tool0")[1]
    torn = (FrameConstraint.point(arm, "tool0", p0, stabilization=stab)
            & FrameConstraint.point(arm, "tool0", p0 + 0.1, stabilization=stab))
    with pytest.warns(ConstraintNotice, match="cannot be met"):
        constrained_motion(arm, torn, home, v6, 0.0)
    # a state where M is not finite: the numpy path's error, as before
    bad = home.copy()
    bad[0] = np.nan
    with pytest.raises(Exception) as fast:
        constrained_motion(arm, held, bad, v6, 0.0)
    with pytest.raises(Exception) as slow:
        constrained_motion(arm, held, bad, v6, 0.0, compiled=False)
    assert type(fast.value) is type(slow.value) and str(fast.value) == str(slow.value)


def test_a_runs_start_check_takes_the_compiled_entry_only_where_that_compiles_nothing(monkeypatch):
    """simulate_constrained checks its first state before integrating: through the compiled entry where its kernel
    is loaded or cached (the same checks, microseconds), on numpy where using it would compile it (3–4 s of CPU
    that no run spends by itself)."""
    from robustrack.compiled import evaluate, loop
    from robustrack.tracking import simulate_constrained

    plant = triple_pendulum()
    c = pendulum_energy_constraint(L1=1.0, g=9.81, gain=0.02, m1=1.0)
    q, v = np.array([0.3, -0.2, 0.5]), np.array([0.1, 0.4, -0.3])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        compiled_loop(plant, plant, c, jacobian=False)
    calls = []
    kernel = evaluate.motion_at
    monkeypatch.setattr(evaluate, "motion_at", lambda *args: calls.append(1) or kernel(*args))
    simulate_constrained(plant, c, q, v, (0.0, 0.01), n_points=3)
    assert calls == [1]  # the session compiled every part: the start check went through the entry
    monkeypatch.setitem(evaluate._READY, "motion", None)  # a process that has not loaded it, on a machine without it
    monkeypatch.setattr(loop, "_part_ready", lambda part: False)
    monkeypatch.setattr(evaluate, "compile_motion", lambda: pytest.fail("a run compiled the one-state motion"))
    evaluate._ENTRIES.clear()
    run = simulate_constrained(plant, c, q, v, (0.0, 0.01), n_points=3)
    assert calls == [1] and run.success  # numpy checked it; nothing compiled


class _Counted:
    """A kernel whose calls are counted (its other attributes, ``compile`` among them, are the kernel's)."""

    def __init__(self, kernel):
        self.kernel, self.calls = kernel, []

    def __call__(self, *args):
        self.calls.append(1)
        return self.kernel(*args)

    def __getattr__(self, name):
        return getattr(self.kernel, name)


def test_the_first_one_state_call_loads_the_compiled_forms_without_a_run_first(monkeypatch):
    """A script that calls constrained_motion without running anything compiled first (issue 55 item 1): the first
    call of a pair loads the plant's and the constraint's compiled forms (from this session's cache: the structure
    is the first test's) and answers through the compiled entry, with the numpy path's numbers to rounding (REL:
    the same formulas compiled, the fundamental equation's twin within cond(B)·ε); ``compiled=False`` never touches
    it; a batch loads nothing for itself."""
    from robustrack.compiled import evaluate, loop

    plant = triple_pendulum()
    c = pendulum_energy_constraint(L1=1.0, g=9.81, gain=0.02, m1=1.0)
    q, v = np.array([0.3, -0.2, 0.5]), np.array([0.1, 0.4, -0.3])
    # a process that has loaded nothing: no structure's functions, no entries, no pair asked before
    monkeypatch.setattr(evaluate, "_BOOK", {})
    monkeypatch.setattr(evaluate, "_ENTRIES", {})
    monkeypatch.setattr(loop, "_TRIED", _evaluator.Pairs())
    counted = _Counted(evaluate.motion_at)
    calls = counted.calls
    monkeypatch.setattr(evaluate, "motion_at", counted)
    batch = constrained_motion(plant, c, np.stack([q, q]), np.stack([v, v]), 0.7)  # a batch: numpy, nothing loaded
    assert calls == [] and evaluate._BOOK == {}
    slow = constrained_motion(plant, c, q, v, 0.7, compiled=False)
    assert calls == [] and evaluate._BOOK == {}  # compiled=False: the numpy path, nothing loaded
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a compile notice where this machine's cache lacks a part
        fast = constrained_motion(plant, c, q, v, 0.7)
    assert calls == [1] and evaluate._BOOK  # the first call: the forms loaded, solved in one compiled call
    assert _rel(fast.qdd, slow.qdd) < REL and _rel(fast.Qc, slow.Qc) < REL
    np.testing.assert_array_equal(batch.qdd[0], slow.qdd)
    again = constrained_motion(plant, c, q, v, 0.7)
    assert calls == [1, 1] and np.array_equal(again.qdd, fast.qdd)
    assert np.array_equal(constrained_motion(plant, c, q, v, 0.7, compiled=False).qdd, slow.qdd)
    assert calls == [1, 1]


def test_a_pair_without_compiled_forms_stays_on_numpy_and_is_asked_once(monkeypatch):
    """A plant whose parameters carry sample axes has no compiled form: the one-state call goes to numpy without
    loading or compiling anything, every time."""
    from robustrack.compiled import loop

    asked = []
    monkeypatch.setattr(loop, "motion_forms", lambda *args: asked.append(1) or pytest.fail("asked to load"))
    plant = triple_pendulum().replace(m1=np.array([1.0, 1.1]))
    assert plant.codegen() is None
    q, v = np.array([0.3, -0.2, 0.5]), np.array([0.1, 0.4, -0.3])
    mot = constrained_motion(plant, None, q, v, 0.0)
    assert mot.qdd.shape == (2, 3) and asked == []


def test_a_robots_first_batch_loads_its_kernels_from_the_cache(monkeypatch):
    """A robot's batch in a process that has run nothing compiled (issue 55 item 1): its first batch loads the robots'
    batch kernels from this machine's cache (the session compiled them) and answers through them, equal to
    Pinocchio state by state within the kernels' 1e-11 relative (tests/test_rigid_body.py); one state stays on
    Pinocchio."""
    pytest.importorskip("pinocchio")
    import robustrack.compiled
    from robustrack.compiled import evaluate, loop
    from robustrack.plants import URDFPlant, example_robot_urdf

    if not loop._part_ready("robot"):
        pytest.skip("the session's cache lacks the robots' kernels (conftest's compile failed: said there)")
    arm = URDFPlant(example_robot_urdf("ur5"))
    qs = np.random.default_rng(1).uniform(-2.0, 2.0, size=(5, 6))
    monkeypatch.setattr(robustrack.compiled, "_BATCH_ASKED", [])
    monkeypatch.setitem(evaluate._READY, "robot", False)  # nothing loaded: the numpy side answers until asked
    one = arm.mass_matrix(qs[0])
    assert robustrack.compiled._BATCH_ASKED == [] and not evaluate._READY["robot"]  # one state: nothing asked
    M = arm.mass_matrix(qs)
    assert evaluate._READY["robot"] and robustrack.compiled._BATCH_ASKED == [True]
    each = np.stack([arm.mass_matrix(q) for q in qs])
    assert _rel(M, each) < REL and _rel(M[0], one) < REL


def test_an_unwritable_kernel_cache_leaves_the_one_state_call_on_numpy(tmp_path, monkeypatch):
    """Where the kernel cache cannot be written the first call cannot load or compile anything: the state is solved
    on numpy (the same answer; a compiled run says what is wrong with the folder), not refused."""
    from robustrack.compiled import evaluate, loop

    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("ROBUSTRACK_CACHE_DIR", str(blocker / "cache"))
    monkeypatch.setattr(evaluate, "_BOOK", {})
    monkeypatch.setattr(evaluate, "_ENTRIES", {})
    monkeypatch.setattr(loop, "_TRIED", _evaluator.Pairs())
    plant = triple_pendulum()
    q, v = np.array([0.3, -0.2, 0.5]), np.array([0.1, 0.4, -0.3])
    mot = constrained_motion(plant, None, q, v, 0.7)
    assert evaluate._BOOK == {}
    np.testing.assert_array_equal(mot.qdd, constrained_motion(plant, None, q, v, 0.7, compiled=False).qdd)


def test_pairs_keep_a_value_while_both_objects_live():
    """The first-use book (robustrack._evaluator.Pairs): by identity, only while both objects live; objects without
    weak references are not kept."""
    import gc

    class Obj:
        pass

    book = _evaluator.Pairs(size=2)
    a, b = Obj(), Obj()
    assert book.get(a, b) is None
    book.put(a, b, 1)
    book.put(a, None, 2)
    assert book.get(a, b) == 1 and book.get(a, None) == 2 and book.get(b, a) is None
    key = (id(a), id(b))
    del b
    gc.collect()
    assert book._book[key][1]() is None  # the constraint is gone: its entry can no longer match
    book.put(1.5, None, 3)  # a float has no weak references: not kept
    assert book.get(1.5, None) is None
    for _ in range(3):
        book.put(Obj(), None, 4)  # past its size the book starts again (forgotten, never wrong)
    assert len(book._book) <= 3
