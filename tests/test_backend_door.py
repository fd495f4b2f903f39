"""One door for the tracking loop's backends (issue 31 item 2): the protocol, where the choice is made, the import
graph of tracking/ and compiled/, and what keys the compiled kernels.

Truths: the two backends have the methods of :class:`robustrack.tracking.backend.Loop` with the same signatures;
the integrators and their callers import no backend-specific module (the choice is made in one module); the
import graph of ``robustrack/tracking`` and ``robustrack/compiled`` (every import, lazy ones included) has no
cycle; the kernels' cache key covers every module of ``compiled/`` but the declared orchestration ones; and the
same problem through the door runs the same on numpy and compiled (to the solvers' tolerance).
"""

import ast
import inspect
import pathlib

import numpy as np
import pytest

from robustrack.compiled.backend import CompiledBackend
from robustrack.tracking.backend import Loop
from robustrack.tracking.numpy_loop import NumpyLoop

PACKAGE = pathlib.Path(__file__).resolve().parents[1] / "robustrack"
METHODS = ("nominal", "constrained", "controlled", "sampled", "uncompensated", "measure")


@pytest.mark.parametrize("method", METHODS)
def test_both_backends_have_the_protocols_methods_with_its_signature(method):
    want = inspect.signature(getattr(Loop, method))
    for backend in (NumpyLoop, CompiledBackend):
        got = inspect.signature(getattr(backend, method))
        assert list(got.parameters) == list(want.parameters), (backend.__name__, method)
        assert [p.kind for p in got.parameters.values()] == [p.kind for p in want.parameters.values()]
    assert NumpyLoop.name == "numpy" and CompiledBackend.name == "compiled"


def _imports(path: pathlib.Path, package: str) -> set:
    """The robustrack modules a file imports (relative imports resolved; inside functions too)."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            out.add(target)
            out.update(f"{target}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
    return {m for m in out if m.startswith("robustrack.")}


BACKEND_MODULES = {f"robustrack.compiled.{m}" for m in ("backend", "bdf", "dop853", "hold", "systems", "stepping")}


@pytest.mark.parametrize("name", ["integrate", "simulate", "problem", "constrained", "singular"])
def test_the_integrators_and_their_callers_import_no_backend(name):
    """The choice is made in tracking/backend.py alone: nothing else of tracking reaches the compiled integrators,
    nor the numpy loop (a caller that did would branch on the backend)."""
    found = _imports(PACKAGE / "tracking" / f"{name}.py", "robustrack.tracking")
    assert not found & (BACKEND_MODULES | {"robustrack.tracking.numpy_loop"}), sorted(found & BACKEND_MODULES)


def test_tracking_and_compiled_import_graph_has_no_cycle():
    mods = {}
    for pkg in ("tracking", "compiled"):
        for p in sorted((PACKAGE / pkg).glob("*.py")):
            if p.name != "__init__.py":
                mods[f"robustrack.{pkg}.{p.stem}"] = p
    edges = {m: {t for t in _imports(p, m.rpartition(".")[0]) if t in mods and t != m} for m, p in mods.items()}
    state = {}

    def visit(m, path):
        state[m] = "open"
        for t in sorted(edges[m]):
            if state.get(t) == "open":
                raise AssertionError("import cycle: " + " -> ".join(path[path.index(t):] + [t]))
            if t not in state:
                visit(t, path + [t])
        state[m] = "done"

    for m in sorted(mods):
        if m not in state:
            visit(m, [m])


def test_the_kernels_cache_key_covers_every_kernel_module():
    """Every module of compiled/ keys the kernels but the declared orchestration ones, which compile no kernel of
    their own (the numpy side's batch evaluator is compiled.evaluate, a kernel module)."""
    from robustrack.compiled.loop import NOT_KERNELS, _KERNEL_MODULES

    here = PACKAGE / "compiled"
    names = {p.name for p in here.glob("*.py")}
    assert set(NOT_KERNELS) <= names
    assert {p.name for p in _KERNEL_MODULES if p.parent == here} == names - set(NOT_KERNELS)
    decorated = set()
    for name in NOT_KERNELS:
        tree = ast.parse((here / name).read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef) and any(getattr(d, "id", getattr(d, "attr", "")) in ("kernel", "cfunc")
                                                         for d in node.decorator_list):
                decorated.add(f"{name}:{node.name}")
    assert decorated == set()


def test_the_door_gives_the_same_run_on_both_backends():
    """One problem, backend "auto" (compiled) and "numpy": the same closed loop through the same door; both solve
    at rtol 1e-8 on |q| ~ 1 rad with their own BDF steps, so e agrees to ~1e-7 (a few tolerances)."""
    from robustrack.controllers import GSS
    from robustrack.plants import pendulum_energy_constraint, triple_pendulum
    from robustrack.tracking import TrackingProblem
    from robustrack.tracking.backend import nominal_loop, prepare

    nominal = triple_pendulum()
    pb = TrackingProblem(nominal, pendulum_energy_constraint(L1=1.0, g=9.81, gain=0.02, m1=1.0), GSS(),
                         [1, 0, 0], [0.001, 0, 0], (0.0, 0.5), actual=nominal.replace(m=(1.1, 1.8, 3.3)),
                         n_points=51)
    assert isinstance(prepare(pb, pb.actual), CompiledBackend)
    assert isinstance(nominal_loop(pb), CompiledBackend)
    assert isinstance(prepare(pb.replace(backend="numpy"), pb.actual), NumpyLoop)
    fast, slow = pb.simulate(), pb.replace(backend="numpy").simulate()
    assert fast.info["solvers"]["controlled"]["backend"] == "compiled"
    assert slow.info["solvers"]["controlled"]["backend"] == "numpy"
    assert np.abs(fast.e - slow.e).max() <= 1e-6
