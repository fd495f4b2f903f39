"""The catalog models' generated numpy text is kept in the cache folder: later processes need no sympy.

robustrack/plants/symbolic_model.py writes each structure's lambdified text once per machine
(``models/rtk_numpy_<digest>.py`` under ``ROBUSTRACK_CACHE_DIR``, robustrack/_generated.py) and imports it
afterwards. The independent truth for the numbers is sympy's own ``lambdify`` of the same expressions with
the same options (what the models evaluated in memory before the text was kept): the kept text is
lambdify's text, so the two agree bit for bit (``assert_array_equal``, no tolerance) on real, batched and
complex arguments. Then: a second process imports no sympy and computes the same bytes; a damaged file is
generated again; a cache folder that cannot be written costs each process the generation, never a
failure; two processes generating at once both finish with one whole file.
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from robustrack._generated import END
from robustrack.plants import NLinkPendulum, examples as E, pendulum_energy_constraint
from robustrack.plants import symbolic_model as S
from robustrack.symbolic import state_symbols


def _models():
    """Every catalog structure: the 9 seed plants and their constraints, the pendulum and its energy row
    (n = 1 and 3), as (plant, constraint)."""
    out = []
    for name, cls in sorted(E.EXAMPLE_PLANTS.items()):
        plant = cls()
        out.append((plant, E.EXAMPLE_CONSTRAINTS[name](plant)))
    for n in (1, 3):
        out.append((NLinkPendulum(m=np.linspace(1.0, 2.0, n), L=np.linspace(1.0, 0.5, n)),
                    pendulum_energy_constraint(n=n, gain=0.3)))
    return out


def _few_models():
    """Three of :func:`_models` for the tests that start processes (each process generates or imports what it
    evaluates, ~0.4 s a structure; the 22 in every process cost ~5 s each): a nonholonomic seed plant, a
    holonomic one, and the 3-link pendulum with its energy row (the wrapped constraint). What each structure's
    text computes is checked for all 22 in process by
    test_the_kept_text_computes_what_lambdify_computes_bit_for_bit; these tests check what a process does
    with the files, which is the same code for every structure."""
    return [(plant, con) for plant, con in _models()
            if isinstance(plant, (E.ChaplyginSleigh, E.TwoMassSprings))
            or (isinstance(plant, NLinkPendulum) and plant.n == 3)]


def _parts(con):
    """The ``_Part`` objects (key, build, raw, values) of a form constraint (the pendulum's wraps one)."""
    con = getattr(con, "_rows", con)
    return con._A, con._b, con._res


def _fresh(monkeypatch, folder):
    """A process that has evaluated nothing, on a machine whose cache folder is ``folder``."""
    monkeypatch.setenv("ROBUSTRACK_CACHE_DIR", str(folder))
    monkeypatch.setattr(S, "_FUNCTIONS", {})


def _lambdified(args, exprs):
    """The truth: sympy's lambdify, as the models called it before the text was kept."""
    import sympy as sp

    return sp.lambdify(args, list(exprs), modules="numpy", cse=True, printer=S._printer())


def _arguments(rng, count, kind):
    """``count`` arguments: Python floats (one state), arrays (a batch) or complex arrays (the complex step)."""
    if kind == "float":
        return [float(x) for x in rng.uniform(0.3, 1.7, count)]
    x = rng.uniform(0.3, 1.7, (count, 16))
    if kind == "complex":
        x = x + 1j * rng.uniform(-1e-3, 1e-3, x.shape)
    return list(x)


def _same(got, want):
    """Entry lists equal bit for bit (an entry may be a constant where the other is broadcast)."""
    assert len(got) == len(want)
    for g, w in zip(got, want):
        g, w = np.broadcast_arrays(np.asarray(g), np.asarray(w))
        np.testing.assert_array_equal(g, w)


def test_the_kept_text_computes_what_lambdify_computes_bit_for_bit(tmp_path, monkeypatch):
    _fresh(monkeypatch, tmp_path)
    rng = np.random.default_rng(11)
    structures = 0
    for plant, con in _models():
        n = plant.n
        q, qd, t = state_symbols(n)
        key, build, _ = plant._source
        M, Q, params = build(q, qd, t)
        kept_M, kept_Q = S._plant_functions(key, build, n)
        part = _parts(con)[0]
        A, b, cparams = part.build(q, qd, t)
        rows, _ = part.raw(q, qd, t)
        kept = S._constraint_functions(part.key, part.build, part.raw, n)
        cases = [(kept_M, [*q, t, *params], M), (kept_Q, [*q, *qd, t, *params], Q)]
        cases += [(kept[name], [*q, *qd, t, *cparams], exprs) for name, exprs in (("A", A), ("b", b), ("residual", rows))]
        for func, args, exprs in cases:
            truth = _lambdified(args, exprs)
            for kind in ("float", "array", "complex"):
                values = _arguments(rng, len(args), kind)
                _same(func(*values), truth(*values))
        structures += 2
    assert structures == 22 and len(S._FUNCTIONS) == 22
    assert len(list((tmp_path / "models").glob("rtk_numpy_*.py"))) == 22  # one file per structure


SCRIPT = """
import hashlib, sys
import numpy as np
sys.path.insert(0, {tests!r})
from test_model_cache import _few_models as _models
h = hashlib.sha256()
rng = np.random.default_rng(5)
for plant, con in _models():
    q, qd = rng.normal(size=(2, 7, plant.n))
    for out in (plant.mass_matrix(q), plant.given_force(q, qd, 0.3), *con.matrices(q, qd, 0.3), con.residual(q, qd, 0.3),
                plant.mass_matrix(q[0] + 1e-20j), plant.given_force(q[0], qd[0])):
        h.update(np.ascontiguousarray(out).tobytes())
print("sympy" in sys.modules, h.hexdigest())
"""


def _run(folder):
    env = {**os.environ, "ROBUSTRACK_CACHE_DIR": str(folder)}
    return subprocess.Popen([sys.executable, "-c", SCRIPT.format(tests=os.path.dirname(__file__))], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _result(process):
    out, err = process.communicate(timeout=300)
    assert process.returncode == 0 and not err, err
    used_sympy, digest = out.split()
    return used_sympy == "True", digest


def test_a_later_process_imports_no_sympy_and_computes_the_same_bytes(tmp_path):
    first = _result(_run(tmp_path))
    files = sorted((tmp_path / "models").glob("*"))
    again = _result(_run(tmp_path))
    assert first[0] and not again[0]  # the first generated (sympy), the second imported the files
    assert again[1] == first[1]
    assert sorted((tmp_path / "models").glob("*")) == files  # nothing written again, no temporary left


def test_processes_generating_at_once_both_finish_with_whole_files(tmp_path):
    """Two processes on an empty cache write the same files at once (atomic renames): both succeed, with the
    numbers of a process that found the files written; no temporary file is left."""
    both = [_run(tmp_path), _run(tmp_path)]
    results = [_result(p) for p in both]
    warm = _result(_run(tmp_path))
    assert {r[1] for r in results} == {warm[1]} and not warm[0]
    names = [p.name for p in (tmp_path / "models").iterdir()]
    assert len(names) == 2 * len(_few_models()) == 6  # two structures a model: plant, constraint
    assert all(n.startswith("rtk_numpy_") and n.endswith(".py") for n in names)


def test_a_cache_folder_that_cannot_be_written_evaluates_in_memory(tmp_path):
    """``ROBUSTRACK_CACHE_DIR`` below a file: nothing can be written there. The models still evaluate (the
    text generated and executed in memory: the same bytes), silently — no traceback, no warning."""
    good = _result(_run(tmp_path / "good"))
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    blocked = _result(_run(blocker / "cache"))
    assert blocked == (True, good[1])


@pytest.mark.parametrize("damage", ["cut short", "not text", "no functions", "not python", "deleted function"])
def test_a_damaged_file_is_generated_again(tmp_path, monkeypatch, damage):
    _fresh(monkeypatch, tmp_path)
    plant = NLinkPendulum(m=[1.0, 2.0, 3.0], L=[1.0, 1.5, 2.0])
    q, qd = np.random.default_rng(2).normal(size=(2, 5, 3))
    want = plant.given_force(q, qd), plant.mass_matrix(q)
    (file,) = (tmp_path / "models").glob("rtk_numpy_*.py")
    text = file.read_text()
    file.write_bytes({"cut short": text[: len(text) // 2].encode(),
                      "not text": b"\xff\xfe\x00garbage",
                      "no functions": ("x = 1\n" + END).encode(),
                      "not python": ("def M(:\n" + END).encode(),
                      "deleted function": text.replace("def Q(", "def R(").encode()}[damage])
    monkeypatch.setattr(S, "_FUNCTIONS", {})  # a new process
    got = plant.given_force(q, qd), plant.mass_matrix(q)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    assert file.read_text() == text  # generated again, whole


def test_the_file_is_named_by_everything_its_text_depends_on(tmp_path, monkeypatch):
    """Another structure key, size or build function is another file (an edited model never reads stale text);
    the same ones, in another process, the same file (hashes of text, no per-process state)."""
    _fresh(monkeypatch, tmp_path)
    plant = NLinkPendulum(m=[1.0, 2.0], L=[1.0, 1.5])
    key, build, _ = plant._source
    base = S._generated_file(key, "plant", 2, (build,))
    assert base.parent == tmp_path / "models"
    others = {S._generated_file(key + "x", "plant", 2, (build,)), S._generated_file(key, "plant", 3, (build,)),
              S._generated_file(key, "constraint", 2, (build,)), S._generated_file(key, "plant", 2, (E._rayleigh,))}
    assert base not in others and len(others) == 4
    code = ("from robustrack.plants import NLinkPendulum; from robustrack.plants import symbolic_model as S; "
            "key, build, _ = NLinkPendulum(m=[1.0, 2.0], L=[1.0, 1.5])._source; "
            "print(S._generated_file(key, 'plant', 2, (build,)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**os.environ, "ROBUSTRACK_CACHE_DIR": str(tmp_path)})
    assert out.stdout.strip() == str(base), out.stderr


@pytest.mark.parametrize("damage", ["cut short", "not text", "not python"])
def test_the_kernels_store_repairs_through_the_one_loader(tmp_path, monkeypatch, damage):
    """robustrack.compiled.store loads its generated files with robustrack._generated.load (one home for reading,
    atomic writing and regenerating): a damaged kernel file is said once (the store's ``damaged`` hook, which
    also removes numba's machine code of it), generated again whole, and its module is in sys.modules while it
    runs (numba's cache looks it up there)."""
    import warnings

    from robustrack.compiled import store

    monkeypatch.setenv("ROBUSTRACK_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(store, "LOADED", {})
    key = "cleanup" + damage.replace(" ", "")
    text = f"import sys\nSEEN = __name__ in sys.modules\n{END}"
    file = store.path(key)
    file.parent.mkdir(parents=True, exist_ok=True)
    numba_file = file.parent / "numba" / f"{file.stem}.x.nbi"
    numba_file.parent.mkdir(parents=True, exist_ok=True)
    numba_file.write_bytes(b"machine code")
    file.write_bytes({"cut short": text[:20].encode(), "not text": b"\xff\xfe\x00garbage",
                      "not python": ("def M(:\n" + END).encode()}[damage])
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        module = store.load(key, lambda: text)
    assert [str(w.message).count("was damaged") for w in seen] == [1]
    assert seen[0].filename == __file__  # said at the caller of store.load
    assert module.SEEN and sys.modules[module.__name__] is module
    assert file.read_text() == text and not numba_file.exists()
    assert store.load(key, lambda: pytest.fail("generated again")) is module  # once per process
    del sys.modules[module.__name__]
