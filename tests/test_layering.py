"""The declared layering of the package, enforced on the source: lower layers never import higher ones.

mechanics ← constraints ← plants ← controllers ← tracking ← campaigns ← scenarios ← reports
← cli, and plants never import :mod:`robustrack.interop` (the python-control adapters sit
above tracking). Every ``import`` statement of every module is read with :mod:`ast`,
including the ones inside functions (lazy imports are still dependencies), and resolved
to the robustrack module it names.
"""

from __future__ import annotations

import ast
import functools
import pathlib

import pytest

PACKAGE = pathlib.Path(__file__).resolve().parents[1] / "robustrack"

#: Layer of each top-level part of the package (higher number = higher layer). A module
#: may import its own layer and lower ones. Level 0 holds the shared helpers everyone uses.
LAYERS = {
    "errors": 0, "_validate": 0, "_files": 0, "_format": 0, "_json": 0, "_lazy": 0, "symbolic": 0, "_lambdify": 0,
    "_generated": 0,  # generated modules in the cache folder (the models' numpy text), imported by path
    "_evaluator": 0,  # the numpy side's door to the compiled evaluator (compiled.evaluate registers itself there)
    "mechanics": 1,
    "constraints": 2,
    "requirements": 3,  # joint / task-space trajectories as constraints, a consistent initial state
    "posture": 3,  # a posture task in a requirement's null space: a constraint built on a plant's M and Q
    "plants": 3,
    # plant-level models: uncertain plants and their named parameters
    "uncertainty": 4,
    # the seed studies of constraint-produced motion: the conflated (wrong) models of W ch. 3, the constraint-model
    # builders (Kozlov's limits), the anatomy of a control force (S 1.7) and its power along a run, the Lusternik
    # model for F nonlinear in q̇ (issue 21)
    "studies": 4,
    "controllers": 5,
    # the closed loop and its compiled backend (the kernels, the integrators, the cache): one layer, two
    # packages — tracking calls the backend through its door, the backend reads tracking's defaults
    "tracking": 6, "compiled": 6,
    # the controller in a real loop (issue 39): the Controller of a TrackingProblem, the sensor model and the
    # bounds under it; TrackingProblem reaches it lazily (controller(), the sensed bounds)
    "loop": 6,
    # certified Γ and assumptions over a box of plants (issue 29): on the tracking problem's nominal run;
    # TrackingProblem.certify reaches it lazily, the campaigns and scenarios above use it
    "certification": 6,
    "interop": 7,  # python-control adapters of plants and of the tracking loop
    # least squares on the equations of motion of a tracking run (W ch. 10): plants and run data
    "identification": 7,
    "campaigns": 8,
    "scenarios": 9,
    "reports": 10,
    "cli": 11,
}

#: Upward imports that are deliberate, with the reason. Each must still exist (see
#: test_every_allowed_exception_is_still_needed), so the list cannot go stale.
ALLOWED: set = set()  # none: TrackingResult.plot() draws with tracking.figures, beside the result

#: Layers that must not import python-control at all (plants never import interop/python-control).
NO_PYTHON_CONTROL = ("mechanics", "constraints", "plants")


def _module_name(path: pathlib.Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(source: str, module: str, is_package: bool):
    """(imported module, line) for every import in ``source``, relative ones resolved."""
    package = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module
            # `from . import x` / `from .pkg import mod`: the names may be modules themselves
            for alias in node.names:
                yield f"{target}.{alias.name}", node.lineno


def _part(module: str) -> str | None:
    """The top-level part of robustrack a module belongs to (None: outside robustrack)."""
    parts = module.split(".")
    if parts[0] != "robustrack" or len(parts) < 2:
        return None
    return parts[1]


def _short(module: str, depth: int = 3) -> str:
    return ".".join(module.split(".")[1:depth])


def violations(source: str, module: str, is_package: bool = False) -> list[str]:
    """The imports of ``module`` (its source given) that break the layering."""
    return _violations(module, _imports(source, module, is_package))


def _violations(module: str, imports) -> list[str]:
    """The imports ((target, line) pairs) of ``module`` that break the layering."""
    own = _part(module)
    found = []
    for target, line in imports:
        if own in NO_PYTHON_CONTROL and target.split(".")[0] == "control":
            found.append(f"{module}:{line} imports python-control ({target})")
            continue
        part = _part(target)
        if part is None or own is None or part not in LAYERS:
            continue  # third-party, the package façade, or a name of robustrack/__init__
        if LAYERS[part] > LAYERS[own]:
            src, dst = _short(module), _short(target)
            if not any(src.startswith(a) and dst.startswith(b) for a, b in ALLOWED):
                found.append(f"{module}:{line} imports {target} ({part}, layer {LAYERS[part]}) from {own} "
                             f"(layer {LAYERS[own]})")
    return found


def _sources():
    for path in sorted(PACKAGE.rglob("*.py")):
        yield path, _module_name(path)


@functools.cache
def _package_imports() -> dict:
    """Module → its imports ((target, line) pairs), every module of the package parsed once for the tests here."""
    return {module: tuple(_imports(path.read_text(encoding="utf-8"), module, path.name == "__init__.py"))
            for path, module in _sources()}


def test_every_module_has_a_layer():
    parts = {_part(module) for _, module in _sources()} - {None}
    assert parts <= set(LAYERS), f"modules without a layer: {sorted(parts - set(LAYERS))}; add them to LAYERS"


def test_no_module_imports_a_higher_layer():
    found = []
    for module, imports in _package_imports().items():
        if module == "robustrack":
            continue  # the façade re-exports the public API lazily, from every layer
        found += _violations(module, imports)
    assert not found, "layering violations:\n" + "\n".join(found)


def test_the_allow_list_is_empty():
    """No upward import is excused (issue #19): the result's figures live beside it in tracking."""
    assert ALLOWED == set()


def test_importing_tracking_loads_nothing_from_studies_scenarios_or_reports():
    """A fresh interpreter importing every module of robustrack.tracking (and running a tiny loop and
    its plot) holds no module of the higher layers: the closed loop stands on its own."""
    import subprocess
    import sys

    code = """
import importlib, pkgutil, sys
import robustrack.tracking as T
for m in pkgutil.iter_modules(T.__path__):
    importlib.import_module("robustrack.tracking." + m.name)
from robustrack.plants.examples import FreeParticle
from robustrack.tracking import TrackingProblem
plant = FreeParticle()
r = TrackingProblem(plant, None, None, [0, 0, 0], [1, 0, 0], (0, 0.1), n_points=5, backend="numpy").simulate()
r.plot(kind="errors")
high = sorted(n for n in sys.modules if n.split(".")[:2][-1] in ("campaigns", "scenarios", "reports", "cli", "interop")
              and n.startswith("robustrack."))
print(",".join(high))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "", f"robustrack.tracking imported higher layers: {out.stdout.strip()}"


@pytest.mark.parametrize("source, module, expected", [
    # a lazy import inside a method counts
    ("def to_iosystem(self):\n    from ..interop import plant_iosystem\n", "robustrack.plants.base", "interop"),
    ("import numpy\nfrom ..tracking.rhs import nominal_motion\n", "robustrack.controllers.x", "tracking"),
    ("from robustrack.scenarios import load_scenario\n", "robustrack.mechanics", "scenarios"),
    ("from . import tracking\n", "robustrack.constraints", "tracking"),
    ("def f():\n    import control\n", "robustrack.plants.pendulum", "python-control"),
    ("from ..campaigns import run\n", "robustrack.tracking", "campaigns"),  # a package's __init__
])
def test_the_checker_finds_upward_imports(source, module, expected):
    found = violations(source, module, is_package=module == "robustrack.tracking")
    assert len(found) == 1 and expected in found[0]


@pytest.mark.parametrize("source, module", [
    ("from ..mechanics import solve_constrained\nfrom .base import Plant\n", "robustrack.plants.motion"),
    ("def f():\n    from ..plants.motion import constrained_motion\n", "robustrack.controllers.baselines"),
    ("from .errors import ParameterError\nimport numpy as np\n", "robustrack.constraints"),
    ("import control\n", "robustrack.interop"),
])
def test_the_checker_accepts_downward_imports(source, module):
    assert violations(source, module) == []


def _module_graph() -> dict:
    """Module → the robustrack modules it imports (lazy imports too), an import of a package's name resolved to
    the deepest module that exists; a module importing its own package (its ``__init__``) is not an edge."""
    modules = _package_imports()

    def resolve(name):
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name

    graph = {}
    for module, imports in modules.items():
        targets = {resolve(t) for t, _ in imports if t.startswith("robustrack.")}
        graph[module] = {t for t in targets if t and t != module and not module.startswith(t + ".")}
    return graph


def _circles(graph: dict) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in graph:
        if v not in index:
            visit(v)
    return out


def test_no_import_circle():
    """No two modules import each other, directly or around a loop, lazy imports included (issue #43)."""
    circles = _circles(_module_graph())
    assert not circles, "import circles:\n" + "\n".join(" → ".join(c) for c in circles)


def test_the_circle_finder_finds_a_circle():
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _circles({"a": {"b"}, "b": set()}) == []
