"""The public API stays documented (numpydoc), like python-control's docstrings_test.py.

Which objects are checked
-------------------------
Every module of the package (``robustrack`` itself plus everything that
``pkgutil.walk_packages(robustrack.__path__, "robustrack.")`` finds) is imported. For
every name in a module's ``__all__`` whose object is a function or a class *defined in
that module* (``obj.__module__ == module.__name__``; re-exports are checked where they
are defined), the rules below apply. Modules without ``__all__`` export nothing and are
not checked; methods (``__init__`` included) are not checked, only module-level
functions and classes.

The rules
---------
1. Functions and classes have a docstring (``inspect.getdoc`` is not empty).
2. For a function, every parameter of ``inspect.signature`` is documented, except
   ``self``, ``cls`` and names starting with ``_``; ``*args`` / ``**kwargs`` count by
   their bare name (``params`` for ``**params``). A parameter is documented when its
   name is one of the names of an entry of the docstring's ``Parameters`` section.
   That section starts at a line ``Parameters`` underlined by dashes and ends at the
   next underlined header (or the end); an entry is a line of the section at its
   smallest indentation, of the form ``name : type`` or ``name1, name2 : type`` (or a
   bare ``name``); leading ``*`` are stripped, so ``**params : ...`` documents
   ``params``. A name merely mentioned in another entry's description does not count.
3. Delegation: a docstring may instead hand its parameters to another documented
   callable with one of exactly these phrases (case-insensitive, the role one of
   ``func``, ``class``, ``meth``, and an optional ``~`` or ``.`` before the target)::

       See :func:`target` for (the) parameters
       Parameters as (in) :class:`target`

   The target is resolved in the function's module first (``target`` may be dotted,
   ``Class.method``), else as an absolute dotted import path (``robustrack.x.y``).
   Every *named* parameter that the function's own ``Parameters`` section does not
   document must then be an entry of the ``Parameters`` section of the target's
   docstring (for a class: the class docstring); a variadic one (``*args``,
   ``**params``) is covered by the delegation itself (its keywords *are* the target's
   parameters), provided that section has at least one entry. A delegation whose
   target does not resolve, or has no ``Parameters`` entries, is reported as a failure.
"""

import importlib
import inspect
import pkgutil
import re

import pytest

import robustrack

# --------------------------------------------------------------------------- checker

_HEADER_UNDERLINE = re.compile(r"^\s*-{3,}\s*$")
_DELEGATION = re.compile(
    r"(?:see\s+:(?:func|class|meth):`[~.]?(?P<see>[\w.]+)`\s+for\s+(?:the\s+)?parameters"
    r"|parameters\s+as\s+(?:in\s+)?:(?:func|class|meth):`[~.]?(?P<as>[\w.]+)`)",
    re.IGNORECASE,
)


def _section(doc, title):
    """The lines of numpydoc section `title` of docstring `doc` ([] when absent)."""
    lines = doc.splitlines()
    out = None
    i = 0
    while i < len(lines):
        is_header = i + 1 < len(lines) and _HEADER_UNDERLINE.match(lines[i + 1]) and lines[i].strip()
        if is_header:
            if out is not None:
                break
            if lines[i].strip() == title:
                out = []
            i += 2
            continue
        if out is not None:
            out.append(lines[i])
        i += 1
    return out or []


def documented_parameters(doc):
    """The parameter names that the `Parameters` section of `doc` has entries for."""
    body = [line for line in _section(doc or "", "Parameters") if line.strip()]
    if not body:
        return set()
    indent = min(len(line) - len(line.lstrip()) for line in body)
    names = set()
    for line in body:
        if len(line) - len(line.lstrip()) != indent:
            continue
        head = line.split(" : ", 1)[0] if " : " in line else line.rstrip(":")
        for name in head.split(","):
            name = name.strip().lstrip("*")
            if name.isidentifier():
                names.add(name)
    return names


def required_parameters(func):
    """The parameter names of `func` that its docstring must document."""
    return [
        name for name in inspect.signature(func).parameters
        if name not in ("self", "cls") and not name.startswith("_")
    ]


def _variadic_parameters(func):
    """The names of the ``*args`` / ``**kwargs`` parameters of `func`."""
    kinds = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
    return {p.name for p in inspect.signature(func).parameters.values() if p.kind in kinds}


def _resolve(target, module):
    """Object named `target` in `module`, or by absolute dotted path; None if absent."""
    obj = module
    for part in target.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            break
    if obj is not None:
        return obj
    parts = target.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for part in parts[cut:]:
            obj = getattr(obj, part, None)
            if obj is None:
                return None
        return obj
    return None


def check_function(func, module=None):
    """Problems with the docstring of `func`, as a list of messages ([] when complete).

    `module` is where delegation targets are looked up (default: the module of `func`).
    """
    if module is None:
        module = inspect.getmodule(func)
    doc = inspect.getdoc(func)
    if not doc:
        return ["has no docstring"]
    missing = [name for name in required_parameters(func) if name not in documented_parameters(doc)]
    if not missing:
        return []
    match = _DELEGATION.search(" ".join(doc.split()))
    if match:
        target = match.group("see") or match.group("as")
        obj = _resolve(target, module)
        if obj is None:
            return [f"delegates its parameters to `{target}`, which does not resolve"]
        delegated = documented_parameters(inspect.getdoc(obj))
        if not delegated:
            return [f"delegates its parameters to `{target}`, which has no Parameters entries"]
        variadic = _variadic_parameters(func)
        missing = [name for name in missing if name not in delegated and name not in variadic]
        if missing:
            return [f"delegates to `{target}`, whose Parameters section lacks {missing}"]
        return []
    return [f"Parameters section lacks {missing}"]


# --------------------------------------------------------------------------- collection

def _modules():
    mods = [robustrack]
    for info in pkgutil.walk_packages(robustrack.__path__, "robustrack."):
        mods.append(importlib.import_module(info.name))
    return mods


def _public_objects():
    functions, classes = [], []
    for module in _modules():
        for name in getattr(module, "__all__", ()):
            obj = getattr(module, name)
            if getattr(obj, "__module__", None) != module.__name__:
                continue
            if inspect.isclass(obj):
                classes.append(pytest.param(module, obj, id=f"{module.__name__}.{name}"))
            elif inspect.isfunction(obj):
                functions.append(pytest.param(module, obj, id=f"{module.__name__}.{name}"))
    return functions, classes


FUNCTIONS, CLASSES = _public_objects()


@pytest.mark.parametrize("module, func", FUNCTIONS)
def test_function_docstring_complete(module, func):
    problems = check_function(func, module)
    assert not problems, f"{module.__name__}.{func.__name__}: " + "; ".join(problems)


@pytest.mark.parametrize("module, cls", CLASSES)
def test_class_has_docstring(module, cls):
    assert inspect.getdoc(cls), f"{module.__name__}.{cls.__name__} has no docstring"


def test_collection_is_not_empty():
    # guards against the parametrization silently collecting nothing
    assert len(FUNCTIONS) > 50
    assert len(CLASSES) > 20


# --------------------------------------------------------------------------- self-test

def _documented(x, y=1, *args, _private=None, **params):
    """Dummy.

    Parameters
    ----------
    x, y : float
        Numbers; `z` is mentioned here but is no entry.
    *args : float
        More numbers.
    **params
        Options.

    Returns
    -------
    z : float
        Not a parameter entry.
    """


def _undocumented(x, z, **params):
    """Dummy with an incomplete Parameters section.

    Parameters
    ----------
    x : float
        A number; `z` is mentioned here but is no entry.

    Returns
    -------
    z : float
        Not a parameter entry.
    """


def _delegating(x, y=1, *args, **params):
    """Dummy that hands its parameters on.

    See :func:`_documented` for
    the parameters.
    """


def _delegating_badly(x, w):
    """Dummy that hands its parameters to a target that lacks `w`.

    Parameters as :func:`_documented`.
    """


def _delegating_variadic(**params):
    """Dummy whose keywords are those of a target; parameters as :func:`_documented`."""


def _delegating_to_undocumented(x):
    """See :func:`_no_docstring` for parameters."""


def _delegating_nowhere(x):
    """See :func:`no_such_function` for parameters."""


def _no_docstring(x):
    pass


def test_checker_reports_problems():
    here = inspect.getmodule(test_checker_reports_problems)
    assert check_function(_documented, here) == []
    assert check_function(_delegating, here) == []
    assert check_function(_undocumented, here) == ["Parameters section lacks ['z', 'params']"]
    assert "lacks ['w']" in check_function(_delegating_badly, here)[0]
    assert check_function(_delegating_variadic, here) == []
    assert "no Parameters entries" in check_function(_delegating_to_undocumented, here)[0]
    assert "does not resolve" in check_function(_delegating_nowhere, here)[0]
    assert check_function(_no_docstring, here) == ["has no docstring"]
    assert documented_parameters(inspect.getdoc(_documented)) == {"x", "y", "args", "params"}
