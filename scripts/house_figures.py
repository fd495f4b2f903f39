"""Issue #31's structure figures of the checkout this runs in: run from a checkout's root as
``PYTHONPATH=$PWD python path/to/house_figures.py``; it measures the ``robustrack`` found there, so one script
counts a tree before and after a restructuring (the older tree need not contain it). The figures are operational
definitions — what this script counts, so that two trees are counted alike — not a theory of structure.

1. **Import graph of** ``robustrack/tracking/``, read with :mod:`ast` (no import runs). A module is a ``.py`` file
   besides ``__init__.py``; each import of a ``robustrack`` module is resolved to the module it loads
   (``from . import x`` → ``tracking.x`` where ``x.py`` exists, else the package). An *edge* is a distinct
   (importer, imported) pair, *top* (module level, also in a module-level ``if``/``try``; neither tree has
   ``TYPE_CHECKING`` imports) or *lazy* (only inside functions). A *cycle* is a strongly connected component of
   more than one of the package's modules.
2. **Walks** of two values of ``robustrack run triple-pendulum --set simulation.t_end=0.5`` from the text typed
   to the compiled kernel: ``uncertainty.dm=[0.1234,-0.2345,0.3456]`` and the GSS gain Γ′ = 123.456
   (``compensator.gss.gamma_prime``; ``compensator.gamma`` where the catalog's file has the older flat table).
   :func:`sys.setprofile` watches calls of functions defined in the package's files; a call *carries* the value
   when its arguments (at the call, closures included) or its locals and return value (at its return) hold a
   string containing its text, a number equal to it or derived from it (dm: the δm and the actual masses
   m + δm; the gain: Γ′ and β = (Γ′ + β0)/α0; to 1e-12 relative), or a container, array or package-defined
   object holding one within 4 levels (read through ``__dict__``/slots only). The walk ends at the first call of
   a compiled kernel (a numba dispatcher, called from Python) whose arguments carry the value: for dm the actual
   plant's ``pa`` in the model record, for the gain the law's parameters. Its *functions* are the distinct
   package functions (a comprehension or lambda counted as the function around it) with a carrying call before
   that end; *self only* marks those that held it only through ``self`` (a method of an object that holds it,
   e.g. ``TrackingProblem.simulate``), which the second count leaves out.

3. **Models written twice**: the public classes and functions of the seed files (``plants/examples.py``,
   ``plants/pendulum.py``: the issue's 9 plants, 9 constraints, ``NLinkPendulum``, ``PendulumEnergyConstraint``)
   with a ``mass_matrix``, ``given_force``, ``matrices``, ``residual``, ``A``, ``b``, ``phi`` or ``psi`` of their
   own (a method or a nested function) whose body calls numpy (``np.``): M, Q or A, b written by hand beside the
   model's symbolic form. Beside them, the files' numpy functions with a sympy namesake (``X`` and
   ``_X_symbolic``/``_X_form``). The numerical twins (numpy beside numba) are not counted: names do not tell a
   hand-written twin from a generic driver of a generated form; they stay a reading of the code.
"""

import ast
import io
import re
import sys
from collections import Counter
from collections.abc import Mapping
from contextlib import redirect_stderr, redirect_stdout
from functools import partial
from pathlib import Path
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


def imports(path: Path) -> list:
    """(imported package module, lazy) of every import in the file at ``path``."""
    me, found = module_name(path), []
    package = me.split(".") if path.name == "__init__.py" else me.split(".")[:-1]

    def visit(node, lazy):
        for child in ast.iter_child_nodes(node):
            inner = lazy or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            if isinstance(child, ast.Import):
                found.extend((resolve(a.name), inner) for a in child.names)
            elif isinstance(child, ast.ImportFrom):
                base = ".".join(package[: len(package) - child.level + 1] + [child.module or ""]).strip(".") \
                    if child.level else child.module
                found.extend((resolve(f"{base}.{a.name}") or resolve(base), inner) for a in child.names)
            visit(child, inner)

    visit(ast.parse(path.read_text(encoding="utf-8")), False)
    return [(m, lazy) for m, lazy in found if m and m != me]


def import_graph(sub: str = "tracking") -> None:
    """Print the import graph of ``robustrack/<sub>/`` (docstring, 1)."""
    files = sorted(p for p in (PKG / sub).glob("*.py") if p.name != "__init__.py")
    mods, edges, short = {module_name(p) for p in files}, {}, lambda m: m.removeprefix("robustrack.")
    for p in files:
        for target, lazy in imports(p):  # an edge is lazy when every import of it is
            edges[module_name(p), target] = edges.get((module_name(p), target), True) and lazy
    inner = {e: lazy for e, lazy in edges.items() if e[1] in mods}
    out = {e: lazy for e, lazy in edges.items() if e[1] not in mods}
    lines = sum(len(p.read_text(encoding="utf-8").splitlines()) for p in files)
    print(f"import graph of robustrack/{sub}/: {len(mods)} modules besides __init__ ({lines} lines)")
    for label, group in (("between its modules", inner), ("to the rest of robustrack (and its own __init__)", out)):
        print(f"  import edges {label}: {len(group)} ({sum(group.values())} of them lazy only)")
    where = Counter(short(t).split(".")[0] for _, t in out)
    print("    to: " + ", ".join(f"{t} {n}" for t, n in sorted(where.items(), key=lambda x: (-x[1], x[0]))))
    for label, es in (("top + lazy", set(inner)), ("top only", {e for e, lazy in inner.items() if not lazy})):
        cycles = strong_components(mods, es)
        print(f"  cycles ({label}): {len(cycles)}" + "".join(f"; {' <-> '.join(map(short, c))}" for c in cycles))
    for (a, b), lazy in sorted(inner.items()):
        print(f"    {short(a)} -> {short(b)}{' [lazy]' if lazy else ''}")


def strong_components(nodes, edges) -> list:
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


def model_twins(files=("plants/examples.py", "plants/pendulum.py")) -> None:
    """Print the models of the seed files written twice and their numpy/sympy namesakes (docstring, 3)."""
    numeric, twice, uses, twins = {"mass_matrix", "given_force", "matrices", "residual", "A", "b", "phi", "psi"}, {}, {}, []
    for rel in files:
        tree = ast.parse((PKG / rel).read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef):  # what its body (docstring left out) calls: numpy or sympy
                body = ast.unparse([b for b in node.body if not isinstance(getattr(b, "value", None), ast.Constant)])
                uses[node] = "np" if re.search(r"\bnp\.", body) else "sp" if re.search(r"\bs(ympy|p)\.", body) else ""
        for top in tree.body:
            if isinstance(top, (ast.ClassDef, ast.FunctionDef)) and not top.name.startswith("_"):
                own = sorted({n.name for n in ast.walk(top) if n in uses and n.name in numeric and uses[n] == "np"})
                twice.update({f"{rel}:{top.name}": own} if own else {})
        stem = lambda name: re.sub(r"^_+|_(symbolic|form)$", "", name)  # noqa: E731
        twins += sorted(f"{rel}:{n.name} / {m.name}" for n in tree.body if uses.get(n) == "np" for m in tree.body
                        if uses.get(m) == "sp" and stem(n.name) == stem(m.name) and f"{rel}:{n.name}" not in twice)
    print(f"models written twice (M, Q or A, b by hand in numpy beside the symbolic form): {len(twice)}")
    for name, own in twice.items():
        print(f"    {name}: {', '.join(own)}")
    print(f"  other numpy functions with a sympy namesake: {len(twins)}" + "".join(f"; {t}" for t in twins))


def carries(x, want, depth=4, seen=None) -> bool:
    """Whether ``x`` holds one of ``want = (numbers, texts)`` (docstring, 2)."""
    import numpy as np

    (numbers, texts), seen = want, set() if seen is None else seen
    if isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, (bool, np.bool_)):
        return any(abs(float(x) - v) <= 1e-12 * abs(v) for v in numbers)  # the rounding of m + δm, (Γ′ + β0)/α0
    if isinstance(x, str):
        return any(t in x for t in texts)
    if isinstance(x, np.ndarray):
        if x.dtype.names:
            return any(carries(x[n], want, depth, seen) for n in x.dtype.names)
        if x.dtype.kind in "fi" and 0 < x.size <= 100_000:
            return bool(np.isclose(x.reshape(-1, 1), numbers, rtol=1e-12, atol=0.0).any())
        return x.dtype.kind == "O" and x.size <= 200 and any(carries(v, want, depth, seen) for v in x.flat)
    if depth == 0 or id(x) in seen or len(seen) > 5000 or x is None or isinstance(x, (type, ModuleType)):
        return False
    seen.add(id(x))
    if isinstance(x, (Mapping, list, tuple, set, frozenset)):
        items = list(x.values() if isinstance(x, Mapping) else x)[:500]
    elif isinstance(x, (FunctionType, MethodType)) and str(x.__module__).startswith("robustrack"):
        items = [getattr(x, "__self__", None), *cells(x)]
    elif isinstance(x, partial):
        items = [x.func, *x.args, *x.keywords.values()]
    elif type(x).__module__.startswith(("robustrack", "argparse", "types")):
        items = own_attributes(x)
    else:
        return False
    return any(carries(v, want, depth - 1, seen) for v in items)


def own_attributes(x) -> list:
    """The values in ``x``'s ``__dict__`` and slots, read without its ``__getattr__`` (a lazy object must not load
    what it stands for: ``robustrack._lazy.LazyModule``)."""
    items = list(vars(x).values()) if "__dict__" in dir(type(x)) else []
    for c in type(x).__mro__:
        for name in (lambda s: [s] if isinstance(s, str) else s)(c.__dict__.get("__slots__", ())):
            try:
                items.append(c.__dict__[name].__get__(x))
            except (AttributeError, KeyError):  # a slot not assigned
                pass
    return items


def cells(f) -> list:
    """The values in a function's closure (an empty cell, a variable not assigned yet, left out)."""
    items = []
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
        self.order, self.calls, self.kernel = {}, 0, None  # order: (file, function) -> held only through self

    def see(self, frame, extra=()) -> None:
        local = dict(frame.f_locals)
        held = local.pop("self", None)
        by_self = not (carries(local, self.want) or any(carries(x, self.want) for x in extra))
        if self.kernel or (by_self and not carries(held, self.want)):
            return
        code = frame.f_code  # a comprehension or lambda is counted as the function around it
        name = re.sub(r"(\.<locals>\.<(genexpr|listcomp|setcomp|dictcomp|lambda)>)+$", "", code.co_qualname)
        key = (str(Path(code.co_filename).relative_to(ROOT)), name)
        self.order[key], self.calls = self.order.get(key, True) and by_self, self.calls + 1

    def report(self) -> None:
        own = [k for k, by_self in self.order.items() if not by_self]
        print(f"walk of {self.label}: {len(self.order)} functions in {len({f for f, _ in self.order})} files "
              f"({self.calls} carrying calls); {len(own)} functions in {len({f for f, _ in own})} files without "
              f"the self-only ones; until the kernel {self.kernel or '(none reached)'}")
        for (f, q), by_self in self.order.items():
            print(f"    {f}:{q}{'   [self only]' if by_self else ''}")


def walks(t_end: float = 0.5) -> None:
    """Print the walks of dm and of the GSS gain (docstring, 2)."""
    import tomllib

    from numba.core import dispatcher

    doc = tomllib.loads((PKG / "scenarios" / "catalog" / "triple-pendulum.toml").read_text(encoding="utf-8"))
    if isinstance(doc["compensator"].get("gss"), dict):  # the per-compensator tables, or the older flat one
        gss, key = doc["compensator"]["gss"], "compensator.gss.gamma_prime"
    else:
        gss, key = doc["compensator"], "compensator.gamma"
    dm, gain = (0.1234, -0.2345, 0.3456), 123.456
    beta, m = (gain + gss["beta0"]) / gss["alpha0"], [float(v) for v in doc["plant"]["m"]]
    ws = [Walk("uncertainty.dm", dm + tuple(a + b for a, b in zip(m, dm)), [repr(v) for v in dm]),
          Walk(f"the GSS gain {key} (beta = {beta:g})", (gain, beta), [repr(gain)])]
    argv = ["run", "triple-pendulum", "--set", f"simulation.t_end={t_end}",
            "--set", f"uncertainty.dm=[{','.join(map(repr, dm))}]", "--set", f"{key}={gain!r}"]
    call, errors = dispatcher._DispatcherBase.__mro__[-2].__call__, []  # the C dispatcher's own call

    def kernel_call(self, *args, **kw):
        for w in ws:
            if w.kernel is None and any(carries(a, w.want) for a in (*args, *kw.values())):
                w.kernel = f"{self.py_func.__module__}.{self.py_func.__qualname__}"
        return call(self, *args, **kw)

    def profile(frame, event, arg):
        code = frame.f_code
        if event in ("call", "return") and code.co_filename.startswith(str(PKG)) and code.co_name != "<module>":
            try:
                for w in ws:
                    w.see(frame, (arg,) if event == "return" else ())
            except Exception as exc:  # noqa: BLE001 - counted and said, never raised into the run
                errors.append(f"{type(exc).__name__} while reading {code.co_qualname}")

    from robustrack.cli import main

    dispatcher.Dispatcher.__call__, err = kernel_call, io.StringIO()
    sys.setprofile(profile)
    try:
        with redirect_stdout(io.StringIO()), redirect_stderr(err):
            status = main(argv)
    finally:
        sys.setprofile(None)
        del dispatcher.Dispatcher.__call__
    print(f"walks: robustrack {' '.join(argv)} -> exit {status}; {len(errors)} errors while watching")
    for line in err.getvalue().splitlines()[:5] + sorted(set(errors))[:5]:
        print(f"    {line}")
    for w in ws:
        w.report()


if __name__ == "__main__":
    import subprocess

    rev = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    print(f"house figures of {ROOT} at {rev.stdout.strip() or '?'}")
    import_graph()
    model_twins()
    walks()
