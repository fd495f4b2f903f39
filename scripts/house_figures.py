"""Issue #31's structure figures of the checkout this runs in (``PYTHONPATH=$PWD python path/house_figures.py``
from its root). Operational definitions, so that two trees are counted alike:

1. **Import graph of** ``robustrack/tracking/`` by :mod:`ast`: its ``.py`` files besides ``__init__.py``; each
   import of a package module resolved to the module it loads (``from . import x`` → ``tracking.x`` if ``x.py``
   exists). An *edge* is a distinct (importer, imported) pair, *lazy* when all its imports are inside functions;
   a *cycle* is a strongly connected component of more than one module (with and without lazy edges).
2. **Walks** of ``uncertainty.dm=[0.1234,-0.2345,0.3456]`` and the GSS gain Γ′ = 123.456 (``compensator.gss.
   gamma_prime``; older: ``compensator.gamma``) in ``robustrack run triple-pendulum`` (``simulation.t_end=0.5``):
   :func:`sys.setprofile` watches calls of functions in the package's files; a call *carries* the value when its
   arguments (at the call) or locals and return value (at its return) hold its text, a number equal to it or
   derived from it (δm, m + δm; Γ′, β = (Γ′ + β0)/α0; to 1e-12 relative), or a container, array, package object
   or closure holding one within 4 levels (objects read through ``__dict__``/slots). The walk ends at the first
   compiled kernel (numba dispatcher called from Python) whose arguments carry it (the actual plant's ``pa``, the
   law's parameters). Its *functions* are the distinct package functions (comprehensions and lambdas counted as
   the function around them) with a carrying call before that end; *self only* marks those that held it only
   through ``self`` (e.g. ``TrackingProblem.simulate``), which the second count leaves out.
3. **Models written twice**: public classes and functions of ``plants/examples.py``, ``plants/pendulum.py`` (the
   issue's 9 plants, 9 constraints, ``NLinkPendulum``, ``PendulumEnergyConstraint``) whose own ``mass_matrix``,
   ``given_force``, ``matrices``, ``residual``, ``A``, ``b``, ``phi`` or ``psi`` calls numpy (``np.``) beside the
   symbolic form; then other numpy functions there with a sympy namesake (``X``, ``_X_symbolic``/``_X_form``). Not
   counted: numerical twins (names do not tell a hand-written numba twin from a driver of a generated form).
"""

import ast
import io
import re
import subprocess
import sys
from collections import Counter
from collections.abc import Mapping
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from types import FunctionType, MethodType, ModuleType

ROOT = Path.cwd()
sys.path.insert(0, str(ROOT))
PKG = ROOT / "robustrack"


def module_name(path: Path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")


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
    print(f"import graph of robustrack/{sub}/: {len(mods)} modules besides __init__")
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
            todo += [b for a, b in edges if a == here and b not in reach[n] and not reach[n].add(b)]  # add: None
    return sorted({tuple(sorted({n} | {m for m in reach[n] if n in reach[m]})) for n in nodes if n in reach[n]})


def model_twins(files=("plants/examples.py", "plants/pendulum.py")) -> None:
    """Print the models of the seed files written twice and their numpy/sympy namesakes (docstring, 3)."""
    numeric = {"mass_matrix", "given_force", "matrices", "residual", "A", "b", "phi", "psi"}
    twice, uses, twins = {}, {}, []
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
    print(f"models written twice (M, Q or A, b by hand in numpy beside the symbolic form): {len(twice)}"
          + "".join(f"\n    {name}: {', '.join(own)}" for name, own in twice.items()))
    print(f"  other numpy functions with a sympy namesake: {len(twins)}" + "".join(f"; {t}" for t in twins))


def carries(x, want, depth=4, seen=None) -> bool:
    """Whether ``x`` holds one of ``want = (numbers, texts)`` (docstring, 2)."""
    import numpy as np

    (numbers, texts), seen = want, set() if seen is None else seen
    if isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, (bool, np.bool_)):
        return any(abs(float(x) - v) <= 1e-12 * abs(v) for v in numbers)  # the rounding of m + δm, (Γ′ + β0)/α0
    if isinstance(x, str):
        return any(t in x for t in texts)
    if isinstance(x, np.ndarray):  # a number array (a record's fields are plain arrays in both trees)
        return x.dtype.kind in "fi" and 0 < x.size <= 100_000 and bool(np.isclose(x.reshape(-1, 1), numbers,
                                                                                 rtol=1e-12, atol=0.0).any())
    if depth == 0 or id(x) in seen or len(seen) > 5000 or x is None or isinstance(x, (type, ModuleType)):
        return False
    seen.add(id(x))
    if isinstance(x, (Mapping, list, tuple, set, frozenset)):
        items = list(x.values() if isinstance(x, Mapping) else x)[:500]
    elif str(getattr(x, "__module__", None) if isinstance(x, (FunctionType, MethodType)) else type(x).__module__
             ).startswith(("robustrack", "argparse", "types")):  # package functions and objects, parsed arguments
        items = attributes(x)
    else:
        return False
    return any(carries(v, want, depth - 1, seen) for v in items)


def attributes(x) -> list:
    """What a package object or function holds: its ``__dict__`` and slots, read without its ``__getattr__`` (a
    ``robustrack._lazy.LazyModule`` must not load what it stands for), or its ``__self__`` and closure."""
    if isinstance(x, (FunctionType, MethodType)):
        found = [getattr(x, "__self__", None)]
        getters = [lambda c=c: c.cell_contents for c in getattr(x, "__closure__", None) or ()]
    else:
        found = list(vars(x).values()) if "__dict__" in dir(type(x)) else []
        slots = [(c, c.__dict__.get("__slots__", ())) for c in type(x).__mro__]
        getters = [lambda d=c.__dict__[n]: d.__get__(x) for c, names in slots
                   for n in ([names] if isinstance(names, str) else names) if n in c.__dict__]
    for get in getters:
        try:
            found.append(get())
        except (AttributeError, ValueError):  # a slot or a closure cell not assigned yet
            pass
    return found


class Walk:
    """The package functions a value passes through until a compiled kernel receives it (docstring, 2)."""

    def __init__(self, label, numbers, texts):
        self.label, self.want = label, (tuple(numbers), tuple(texts))
        self.order, self.calls, self.kernel = {}, 0, None  # order: (file, function) -> held only through self

    def see(self, frame, extra=()) -> None:
        local = {} if self.kernel else dict(frame.f_locals)
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
              f"the self-only ones; until the kernel {self.kernel or '(none reached)'}"
              + "".join(f"\n    {f}:{q}{'   [self only]' * by_self}" for (f, q), by_self in self.order.items()))


def walks(t_end: float = 0.5) -> None:
    """Print the walks of dm and of the GSS gain (docstring, 2)."""
    import tomllib

    from numba.core import dispatcher
    doc = tomllib.loads((PKG / "scenarios" / "catalog" / "triple-pendulum.toml").read_text(encoding="utf-8"))
    new = isinstance(doc["compensator"].get("gss"), dict)  # the per-compensator tables, or the older flat one
    gss, key = (doc["compensator"]["gss"], "gss.gamma_prime") if new else (doc["compensator"], "gamma")
    dm, gain = (0.1234, -0.2345, 0.3456), 123.456
    beta, m = (gain + gss["beta0"]) / gss["alpha0"], [float(v) for v in doc["plant"]["m"]]
    ws = [Walk("uncertainty.dm", dm + tuple(a + b for a, b in zip(m, dm)), [repr(v) for v in dm]),
          Walk(f"the GSS gain compensator.{key} (beta = {beta:g})", (gain, beta), [repr(gain)])]
    argv = ["run", "triple-pendulum", "--set", f"simulation.t_end={t_end}",
            "--set", f"uncertainty.dm=[{','.join(map(repr, dm))}]", "--set", f"compensator.{key}={gain!r}"]
    call, errors = dispatcher._DispatcherBase.__mro__[-2].__call__, []  # the C dispatcher's own call

    def kernel_call(self, *args, **kw):
        for w in (w for w in ws if w.kernel is None and carries([args, kw], w.want, depth=6)):
            w.kernel = f"{self.py_func.__module__}.{self.py_func.__qualname__}"
        return call(self, *args, **kw)

    def profile(frame, event, arg):
        code = frame.f_code
        if event in ("call", "return") and code.co_filename.startswith(str(PKG)) and code.co_name != "<module>":
            try:
                for w in ws:
                    w.see(frame, (arg,) if event == "return" else ())  # a return value is also a local
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
    print(f"walks: robustrack {' '.join(argv)} -> exit {status}; {len(errors)} errors while watching"
          + "".join(f"\n    {line}" for line in err.getvalue().splitlines()[:5] + sorted(set(errors))[:5]))
    for w in ws:
        w.report()


if __name__ == "__main__":
    rev = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    print(f"house figures of {ROOT} at {rev.stdout.strip()}")
    import_graph()
    model_twins()
    walks()
