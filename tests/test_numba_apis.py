"""numba's private APIs the compiled path uses exist on the installed numba, each named where one is missing.

robustrack.compiled.cache is the one home of these names (:data:`~robustrack.compiled.cache.PRIVATE_APIS`);
pyproject.toml pins numba to the range they were checked on. When a numba upgrade breaks one, this test
says which, instead of a run failing somewhere inside a compile.
"""

import importlib
import pathlib
import re

import pytest

from robustrack.compiled.cache import PRIVATE_APIS

PACKAGE = pathlib.Path(__file__).resolve().parents[1] / "robustrack"


@pytest.mark.parametrize("module, path", PRIVATE_APIS, ids=[f"{m}.{p}" for m, p in PRIVATE_APIS])
def test_each_private_numba_api_exists(module, path):
    obj = importlib.import_module(module)
    for part in path.split("."):
        assert hasattr(obj, part), (f"numba {importlib.import_module('numba').__version__} has no {module}.{path}: "
                                    "robustrack.compiled.cache relies on it (see its PRIVATE_APIS)")
        obj = getattr(obj, part)


def test_no_module_outside_the_cache_module_uses_a_private_numba_name():
    """A private numba name (``numba.core.<x>._name`` or a ``_name`` imported from numba) appears only in
    robustrack/compiled/cache.py."""
    pattern = re.compile(r"from numba[\w.]* import [^\n]*\b_[a-z]\w*|numba\.[\w.]*\._[a-z]\w*")
    found = [f"{path.relative_to(PACKAGE)}: {m.group(0)}" for path in sorted(PACKAGE.rglob("*.py"))
             if path.name != "cache.py" for m in pattern.finditer(path.read_text(encoding="utf-8"))]
    assert not found, found


def test_no_warning_filter_is_set_process_wide_by_the_package():
    """numba's experimental-feature warning is silenced where kernels compile (cache.first_class_functions), not
    process-wide at import."""
    for path in sorted(PACKAGE.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        assert "warnings.filterwarnings(" not in text or path.name == "cache.py", path


def test_a_kernel_without_reference_counts_computes_and_refuses_to_allocate():
    """``kernel(refcounts=False)`` (numba's private ``_nrt`` option, the controlled system's hot path): views and
    arguments work as in any kernel, and an allocation left in it is refused when it compiles, not run."""
    import numpy as np
    from numba.core.errors import TypingError

    from robustrack.compiled.cache import kernel

    def dot_tail(a, b):
        v = a[1:]  # a view: no reference counted, nothing allocated
        s = 0.0
        for i in range(v.shape[0]):
            s += v[i] * b[i]
        return s

    def allocating(a):
        return np.zeros(3).sum() + a[0]

    a, b = np.arange(4.0), np.array([2.0, 3.0, 5.0])
    assert kernel(dot_tail, refcounts=False, cached=False)(a, b) == 1 * 2 + 2 * 3 + 3 * 5
    with pytest.raises(TypingError):
        kernel(allocating, refcounts=False, cached=False)(a)
    # a kernel that allocates, marked refcounts=True, may be called from one without (BDF's change of D)
    counted = kernel(allocating, refcounts=True, cached=False)

    def calls_it(a):
        return counted(a[1:])

    assert kernel(calls_it, refcounts=False, cached=False)(a) == a[1]
