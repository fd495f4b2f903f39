"""scripts/house_figures.py (issue #31's structure figures) on small trees whose figures are known by hand, and its
cycle finder against a transitive closure computed independently (Floyd–Warshall on a boolean matrix)."""

import importlib.util
import itertools
import re
import textwrap
from pathlib import Path

import numpy as np
import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "house_figures.py"


@pytest.fixture
def hf(tmp_path, monkeypatch):
    """The script as a module, measuring the tree under ``tmp_path``."""
    spec = importlib.util.spec_from_file_location("house_figures", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setattr(module, "ROOT", tmp_path)
    monkeypatch.setattr(module, "PKG", tmp_path / "robustrack")
    return module


def write(root: Path, files: dict) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")


def test_import_graph_of_a_known_package(hf, tmp_path, capsys):
    # a -> b, a -> c (top); b -> a (lazy: a cycle only through a function's import); c -> d (absolute import) and
    # d -> c (top: a cycle without lazy edges); c -> robustrack.errors, d -> the package itself (not a module).
    write(tmp_path, {
        "robustrack/__init__.py": "", "robustrack/errors.py": "E = 1\n", "robustrack/tracking/__init__.py": "",
        "robustrack/tracking/a.py": "from . import b\nfrom .c import thing\nimport numpy\n",
        "robustrack/tracking/b.py": "def f():\n    from .a import x\n    return x\n",
        "robustrack/tracking/c.py": "from ..errors import E\nimport robustrack.tracking.d\nthing = E\n",
        "robustrack/tracking/d.py": "from . import c, not_a_module\n",
    })
    hf.import_graph()
    out = capsys.readouterr().out
    assert "4 modules besides __init__" in out
    assert "between its modules: 5 (1 of them lazy only)" in out
    assert "(and its own __init__): 2 (0 of them lazy only)" in out
    assert "cycles (top + lazy): 2; tracking.a <-> tracking.b; tracking.c <-> tracking.d" in out
    assert "cycles (top only): 1; tracking.c <-> tracking.d" in out
    assert "tracking.b -> tracking.a [lazy]" in out and "tracking.a -> tracking.b\n" in out


def test_cycles_against_a_transitive_closure(hf):
    rng = np.random.default_rng(31)
    for _ in range(50):
        n = int(rng.integers(2, 9))
        adj = rng.random((n, n)) < 0.25
        np.fill_diagonal(adj, False)
        reach = adj.copy()
        for k in range(n):  # Floyd–Warshall: i reaches j through k
            reach |= reach[:, [k]] & reach[[k], :]
        together = reach & reach.T
        truth = sorted({tuple(sorted({i} | set(np.flatnonzero(together[i])))) for i in range(n) if together[i].any()})
        edges = {(i, j) for i, j in itertools.product(range(n), repeat=2) if adj[i, j]}
        assert hf.strong_components(range(n), edges) == truth


class Lazy:
    """Like robustrack._lazy.LazyModule: reading an attribute it does not have would load a module."""

    __module__ = "robustrack.fake"  # package objects are opened, others are not

    def __init__(self, value):
        self.value = value

    def __getattr__(self, name):
        raise AssertionError(f"read {name} through __getattr__")


class Slotted:
    __module__ = "robustrack.fake"
    __slots__ = ("values", "unset")

    def __init__(self, values):
        self.values = values


def test_carries_reads_what_objects_hold_without_loading_them(hf):
    want = ((0.1234, 1.1234), ("0.1234",))
    assert hf.carries(Lazy([1.0, 0.1234]), want)
    assert hf.carries(Slotted(np.array([1.0, 1.0 + 0.1234])), want)  # m + δm rounds to 1.1234 within 1e-12
    assert hf.carries({"uncertainty": {"dm": "[0.1234,-0.2345]"}}, want)  # the text typed
    assert not hf.carries(Lazy([0.1234 * (1 + 1e-9)]), want)
    assert not hf.carries(Slotted(np.array([0.1235])), want)
    namespace = {"__name__": "robustrack.fake"}
    exec("def outer(v):\n    def inner():\n        return v\n    return inner\n", namespace)
    assert hf.carries(namespace["outer"](np.array([0.1234])), want)  # a package function's closure
    assert hf.carries([[[[0.1234]]]], want) and not hf.carries([[[[[0.1234]]]]], want)  # within 4 levels


def test_model_twins_of_a_known_file(hf, tmp_path, capsys):
    write(tmp_path, {
        "robustrack/plants/pendulum.py": "",
        "robustrack/plants/examples.py": '''
            import numpy as np

            class ByHand:
                def given_force(self, q, qd, t=0.0):
                    """Q written in numpy: a second home beside the form."""
                    return np.sin(q)

            class FromForm(Generated):
                def positions(self, q):
                    return np.stack([q])

            def by_hand_constraint(plant):
                def A(q, qd, t):
                    return np.eye(1)
                return A

            def form_constraint_of(plant):
                def A(q, qd, t):
                    return plant.generated(q)
                return A

            def rotation(u):
                return np.stack(u)

            def _rotation_symbolic(u):
                import sympy as sp
                return sp.Matrix(u)
            ''',
    })
    hf.model_twins()
    out = capsys.readouterr().out
    assert re.search(r"written twice.*: 2\n", out)
    assert "examples.py:ByHand: given_force" in out and "examples.py:by_hand_constraint: A" in out
    assert "FromForm" not in out and "form_constraint_of" not in out
    assert "sympy namesake: 1; plants/examples.py:rotation / _rotation_symbolic" in out
