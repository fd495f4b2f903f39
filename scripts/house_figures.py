"""Structure figures of the checkout this runs in (issue #31, "What must be shown"): run from a checkout's root,
``PYTHONPATH=$PWD python path/to/house_figures.py``; it measures the ``robustrack`` found there, so one script
measures a tree before and after a restructuring (the older tree need not contain it).

The figures are operational definitions — what this script counts, stated here so that two trees are counted
the same way — not a theory of software structure.

1. **Import graph of** ``robustrack/tracking/``, read with :mod:`ast` from the files (no import runs). A module is
   a ``.py`` file besides ``__init__.py``. Every ``import``/``from … import`` naming a ``robustrack`` module is
   resolved to the module it loads (``from . import x`` → ``tracking.x`` when ``x.py`` exists, else the package);
   an *edge* is a distinct (importer, imported) pair. Edges are *top* (module level, also inside a module-level
   ``if``/``try``), *lazy* (inside a function: only run when it is called) or *typing* (under
   ``if TYPE_CHECKING``, never run); an edge imported both ways counts as top. A *cycle* is a strongly connected
   component of more than one module of the run-time (top + lazy) graph among the package's modules.
2. **Walks** of two values of ``robustrack run triple-pendulum --set simulation.t_end=0.5``, from the text typed
   to the compiled kernel: ``uncertainty.dm=[0.1234,-0.2345,0.3456]`` and the GSS gain Γ′ = 123.456
   (``compensator.gss.gamma_prime``; ``compensator.gamma`` where the catalog's file has the older flat table).
   :func:`sys.setprofile` watches the calls of the functions defined in the package's files; a call *carries* the
   value when its arguments (at the call, closures included) or its locals and return value (at its return) hold
   a string containing its text, a number equal to it or derived from it (dm: the δm and the actual masses m + δm;
   the gain: Γ′ and β = (Γ′ + β0)/α0, to 1e-12 relative), or a container, array or package-defined object
   holding one within 4 levels (objects read through ``__dict__``/slots only). The walk ends at the first call of
   a compiled kernel (a numba dispatcher, called from Python) whose arguments carry the value: for dm the actual
   plant's ``pa`` in the model record, for the gain the law's parameters. Its *functions* are the distinct
   package functions (a comprehension or lambda counted as the function around it) with a carrying call before
   that end; *self only* marks those that held the value only through ``self`` (a method of an object that holds
   it, e.g. ``TrackingProblem.simulate``), which the second count leaves out.

Not measured here: the count of ideas with two hand-written homes (name heuristics over ``ast`` could not tell a
hand-written twin from a generic class that dispatches to a generated form; it stays a reading of the code).
"""

import ast
import io
import re
import sys
from collections.abc import Mapping
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from functools import partial
from types import FunctionType, MethodType, ModuleType

ROOT = Path.cwd()
sys.path.insert(0, str(ROOT))
PKG = ROOT / "robustrack"


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def resolve(name: str) -> str | None:
    """The package module ``name`` loads (``a.b`` → ``a.b`` if a module, else its package), or None."""
    while name.startswith("robustrack"):
        path = ROOT.joinpath(*name.split("."))
        if path.with_suffix(".py").exists() or (path / "__init__.py").exists():
            return name
        name = name.rpartition(".")[0]
    return None


def imports(path: Path):
    """(imported module, kind) of every package import in the file at ``path``; kind top, lazy or typing."""
    me, found = module_name(path), []
    package = me if path.name == "__init__.py" else me.rpartition(".")[0]

    def visit(node, kind):
        for child in ast.iter_child_nodes(node):
            k = kind
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                k = "lazy" if kind == "top" else kind
            elif isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                k = "typing"
            if isinstance(child, ast.Import):
                found.extend((resolve(a.name), k) for a in child.names)
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    up = package.split(".")[: len(package.split(".")) - child.level + 1]
                    base = ".".join(up + ([base] if base else []))
                for a in child.names:
                    found.append((resolve(f"{base}.{a.name}") or resolve(base), k))
            visit(child, k)

    visit(ast.parse(path.read_text(encoding="utf-8")), "top")
    return [(m, k) for m, k in found if m and m != me]


def import_graph(sub: str = "tracking") -> None:
    files = sorted(p for p in (PKG / sub).glob("*.py") if p.name != "__init__.py")
    mods = {module_name(p): p for p in files}
    rank = {"top": 0, "lazy": 1, "typing": 2}
    edges = {}
    for m, p in mods.items():
        for target, kind in imports(p):
            key = (m, target)
            edges[key] = min(edges.get(key, kind), kind, key=rank.get)
    inner = {e: k for e, k in edges.items() if e[1] in mods}
    out = {e: k for e, k in edges.items() if e[1] not in mods}
    short = lambda m: m.removeprefix("robustrack.")  # noqa: E731
    lines = sum(len(p.read_text(encoding="utf-8").splitlines()) for p in files)
    print(f"import graph of robustrack/{sub}/: {len(mods)} modules besides __init__ ({lines} lines)")
    for label, group in (("between its modules", inner), ("to the rest of robustrack (and its own __init__)", out)):
        by = {k: sum(1 for v in group.values() if v == k) for k in rank}
        print(f"  import edges {label}: {len(group)} ({by['top']} top, {by['lazy']} lazy, {by['typing']} typing)")
    where = {}
    for (_, t), _k in out.items():
        top = ".".join(t.split(".")[:2])
        where[top] = where.get(top, 0) + 1
    print("    to: " + ", ".join(f"{short(t)} {n}" for t, n in sorted(where.items(), key=lambda x: (-x[1], x[0]))))
    run = {e for e, k in inner.items() if k != "typing"}
    for label, es in (("run-time (top + lazy)", run), ("top only", {e for e, k in inner.items() if k == "top"})):
        cycles = strong_components(mods, es)
        print(f"  cycles, {label}: {len(cycles)}" + "".join(f"\n    {' <-> '.join(short(m) for m in c)}"
                                                       for c in cycles))
    for (a, b), k in sorted(inner.items()):
        print(f"    {short(a)} -> {short(b)} [{k}]")


def strong_components(nodes, edges):
    """The strongly connected components of more than one node (each sorted), from each node's reach."""
    reach = {n: set() for n in nodes}
    for n in nodes:
        todo = [n]
        while todo:
            here = todo.pop()
            for b in [b for a, b in edges if a == here and b not in reach[n]]:
                reach[n].add(b)
                todo.append(b)
    return sorted({tuple(sorted({n} | {m for m in reach[n] if n in reach[m]})) for n in nodes if n in reach[n]})


def carries(x, want, depth=4, seen=None) -> bool:
    """Whether ``x`` holds one of ``want = (numbers, texts)`` (see the module's docstring, 2)."""
    import numpy as np

    numbers, texts = want
    seen = set() if seen is None else seen
    if x is None or isinstance(x, (bool, np.bool_)):
        return False
    if isinstance(x, (int, float, np.integer, np.floating)):
        return any(abs(float(x) - v) <= 1e-12 * abs(v) for v in numbers)  # rounding of m + δm, (Γ′ + β0)/α0
    if isinstance(x, str):
        return any(t in x for t in texts)
    if isinstance(x, np.ndarray):
        if x.dtype.names:
            return any(carries(x[n], want, depth, seen) for n in x.dtype.names)
        if x.dtype.kind in "fi" and 0 < x.size <= 100_000:
            return bool(np.isclose(x.reshape(-1, 1), numbers, rtol=1e-12, atol=0.0).any())
        return x.dtype.kind == "O" and x.size <= 200 and any(carries(v, want, depth, seen) for v in x.flat)
    if depth == 0 or id(x) in seen or len(seen) > 5000 or isinstance(x, (type, ModuleType)):
        return False
    seen.add(id(x))
    if isinstance(x, Mapping):
        items = list(x.values())[:500]
    elif isinstance(x, (list, tuple, set, frozenset)):
        items = list(x)[:500]
    elif isinstance(x, (FunctionType, MethodType)) and str(x.__module__).startswith("robustrack"):
        items = closure(x)
    elif isinstance(x, partial):
        items = [x.func, *x.args, *x.keywords.values()]
    elif type(x).__module__.startswith(("robustrack", "argparse", "types")):
        items = own_attributes(x)  # read without __getattr__: a lazy object must not load what it stands for
    else:
        return False
    return any(carries(v, want, depth - 1, seen) for v in items)


def own_attributes(x) -> list:
    """The values in ``x``'s ``__dict__`` and slots, read without calling its ``__getattr__``."""
    items = list(vars(x).values()) if hasattr(type(x), "__dict__") and "__dict__" in dir(type(x)) else []
    for c in type(x).__mro__:
        for name in c.__dict__.get("__slots__", ()) if not isinstance(c.__dict__.get("__slots__"), str) else ():
            try:
                items.append(c.__dict__[name].__get__(x, type(x)))
            except (AttributeError, KeyError):  # an unset slot (or a name the class renamed)
                pass
    return items


def closure(f) -> list:
    """The values in a function's closure (an empty cell — a variable not assigned yet — left out)."""
    items = [getattr(f, "__self__", None)]
    for cell in getattr(f, "__closure__", None) or ():
        try:
            items.append(cell.cell_contents)
        except ValueError:
            pass
    return items


class Walk:
    """The package functions a value passes through until a compiled kernel receives it (docstring, 2)."""

    def __init__(self, label, numbers, texts):
        self.label, self.want = label, (tuple(numbers), tuple(texts))
        self.order, self.calls, self.kernel = {}, 0, None  # order: (file, function) -> only through self

    def see(self, frame, extra=()):
        if self.kernel:
            return
        local = dict(frame.f_locals)
        held = local.pop("self", None)
        if carries(local, self.want) or any(carries(x, self.want) for x in extra):
            by_self = False
        elif carries(held, self.want):
            by_self = True
        else:
            return
        code = frame.f_code
        name = re.sub(r"(\.<locals>\.<(genexpr|listcomp|setcomp|dictcomp|lambda)>)+$", "",
                      getattr(code, "co_qualname", code.co_name))  # a comprehension or lambda is its function's
        key = (str(Path(code.co_filename).relative_to(ROOT)), name)
        self.order[key] = self.order.get(key, True) and by_self
        self.calls += 1

    def report(self):
        files = {f for f, _ in self.order}
        own = [k for k, by_self in self.order.items() if not by_self]
        print(f"walk of {self.label}: {len(self.order)} functions in {len(files)} files ({self.calls} carrying "
              f"calls), {len(own)} of them in {len({f for f, _ in own})} files with the value in an argument or "
              f"local besides self; until the kernel {self.kernel or '(none reached)'}")
        for (f, q), by_self in self.order.items():
            print(f"    {f}:{q}{'   [self only]' if by_self else ''}")


def walks(t_end: float = 0.5) -> None:
    import tomllib

    from numba.core import dispatcher

    catalog = PKG / "scenarios" / "catalog" / "triple-pendulum.toml"
    doc = tomllib.loads(catalog.read_text(encoding="utf-8"))
    new = isinstance(doc["compensator"].get("gss"), dict)  # the tables of 0.2, or 0.1's flat [compensator]
    gss, key = (doc["compensator"]["gss"], "compensator.gss.gamma_prime") if new else (doc["compensator"],
                                                                                      "compensator.gamma")
    dm, gain = (0.1234, -0.2345, 0.3456), 123.456
    beta = (gain + gss["beta0"]) / gss["alpha0"]
    m = [float(v) for v in doc["plant"]["m"]]
    ws = [Walk("uncertainty.dm", dm + tuple(a + b for a, b in zip(m, dm)), [repr(v) for v in dm]),
          Walk(f"the GSS gain {key} (beta = {beta:g})", (gain, beta), [repr(gain)])]
    argv = ["run", "triple-pendulum", "--set", f"simulation.t_end={t_end}",
            "--set", f"uncertainty.dm=[{','.join(map(repr, dm))}]", "--set", f"{key}={gain!r}"]
    base, prefix, errors = dispatcher._DispatcherBase.__mro__[-2].__call__, str(PKG), []

    def kernel_call(self, *args, **kw):
        for w in ws:
            if w.kernel is None and any(carries(a, w.want) for a in (*args, *kw.values())):
                w.kernel = f"{self.py_func.__module__}.{self.py_func.__qualname__}"
        return base(self, *args, **kw)

    def profile(frame, event, arg):
        code = frame.f_code
        if event in ("call", "return") and code.co_filename.startswith(prefix) and code.co_name != "<module>":
            try:
                for w in ws:
                    w.see(frame, (arg,) if event == "return" else ())
            except Exception as exc:  # noqa: BLE001 - counted and said, never raised into the run
                errors.append(f"{type(exc).__name__} while reading {code.co_qualname}")

    from robustrack.cli import main

    dispatcher.Dispatcher.__call__ = kernel_call
    out, err = io.StringIO(), io.StringIO()
    sys.setprofile(profile)
    try:
        with redirect_stdout(out), redirect_stderr(err):
            status = main(argv)
    finally:
        sys.setprofile(None)
        del dispatcher.Dispatcher.__call__
    print(f"walks: robustrack {' '.join(argv)} -> exit {status}; "
          f"{len(err.getvalue().splitlines())} stderr lines, {len(errors)} errors while watching")
    for line in err.getvalue().splitlines()[:5] + sorted(set(errors))[:5]:
        print(f"    {line}")
    for w in ws:
        w.report()


if __name__ == "__main__":
    import subprocess

    rev = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    print(f"house figures of {ROOT} at {rev.stdout.strip() or '?'}")
    import_graph()
    walks()
