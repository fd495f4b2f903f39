"""The site extension's two build-time savings (``docs/_ext/robustrack_docs.py``) change no page.

``numpydoc_template_once`` hands numpydoc a template compiled once instead of one per docstring;
``sidebar_shared_by_siblings`` lets pydata-sphinx-theme reuse a page's collapsed sidebar for its sibling pages.
Truth: the same small site (the API reference's shape: a section, module pages under it, leaf pages under those,
the leaves documented by autodoc and numpydoc; and a leaf of the section itself in the same folder, written after
a module's leaves, whose sidebar has the same entries as theirs but not the same branch open) built by Sphinx with the theme and
numpydoc as they are; the build with both savings must write the same bytes into every page, and must have used
them (counted).
"""

from __future__ import annotations

import functools
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytest.importorskip("sphinx")
pytest.importorskip("numpydoc")
pst = pytest.importorskip("pydata_sphinx_theme.toctree")
if not hasattr(pst, "_sidebar_cache_key"):  # a theme before its sidebar cache: the extension leaves it alone
    pytest.skip("this pydata-sphinx-theme has no sidebar cache to share", allow_module_level=True)

#: leaf pages per module page: public objects with numpydoc docstrings (sections, parameters, returns)
LEAVES = {"tracking": ["robustrack.tracking.simulate_tracking", "robustrack.tracking.TrackingProblem",
                       "robustrack.tracking.TrackingResult"],
          "controllers": ["robustrack.controllers.GSS", "robustrack.controllers.control_function"]}

CONF = """
extensions = ["sphinx.ext.autodoc", "numpydoc"]
html_theme = "pydata_sphinx_theme"
html_theme_options = {"collapse_navigation": True, "navigation_with_keys": False}
autodoc_typehints = "none"
numpydoc_show_class_members = False
numpydoc_validation_checks = set()
"""


def _site(src: Path) -> Path:
    (src / "section").mkdir(parents=True)
    (src / "conf.py").write_text(CONF, encoding="utf-8")
    (src / "index.rst").write_text("Home\n====\n\n.. toctree::\n\n   section/index\n", encoding="utf-8")
    (src / "section" / "index.rst").write_text(
        "Section\n=======\n\n.. toctree::\n\n" + "".join(f"   {m}\n" for m in LEAVES) + "   zz_notes\n",
        encoding="utf-8")
    (src / "section" / "zz_notes.rst").write_text("Notes\n=====\n\nA leaf of the section.\n", encoding="utf-8")
    for module, names in LEAVES.items():
        (src / "section" / f"{module}.rst").write_text(
            f"{module}\n{'=' * len(module)}\n\n.. toctree::\n\n" + "".join(f"   {n}\n" for n in names),
            encoding="utf-8")
        for name in names:
            kind = "autoclass" if name.rsplit(".", 1)[1][0].isupper() else "autofunction"
            (src / "section" / f"{name}.rst").write_text(f"{name}\n{'=' * len(name)}\n\n.. {kind}:: {name}\n",
                                                         encoding="utf-8")
    return src


def _build(src: Path, out: Path, before_build=None) -> dict[str, bytes]:
    from sphinx.application import Sphinx

    app = Sphinx(str(src), str(src), str(out / "html"), str(out / "doctrees"), "html", status=None, warning=None,
                 freshenv=True)
    if before_build is not None:
        before_build(app)  # after the extensions' setup (numpydoc's resets its get_doc_object there)
    app.build()
    assert app.statuscode == 0
    return {p.relative_to(out / "html").as_posix(): p.read_bytes() for p in (out / "html").rglob("*.html")}


def test_both_savings_write_the_pages_the_theme_and_numpydoc_write(tmp_path, monkeypatch):
    from numpydoc import docscrape_sphinx, numpydoc

    src = _site(tmp_path / "src")
    as_they_are = _build(src, tmp_path / "plain")

    monkeypatch.syspath_prepend(str(ROOT / "docs" / "_ext"))
    robustrack_docs = importlib.import_module("robustrack_docs")
    counts = {"compiled": 0, "shared": 0}
    compile_template, patch_cached = docscrape_sphinx.get_doc_object, pst._patch_cached_sidebar

    @functools.wraps(compile_template)  # its signature, which the extension checks
    def counted_compile(*args, **kwargs):
        counts["compiled"] += 1
        return compile_template(*args, **kwargs)

    def counted_patch(*args, **kwargs):
        html = patch_cached(*args, **kwargs)
        counts["shared"] += html is not None
        return html

    monkeypatch.setattr(docscrape_sphinx, "get_doc_object", counted_compile)
    monkeypatch.setattr(pst, "_patch_cached_sidebar", counted_patch)
    monkeypatch.setattr(pst, "_sidebar_cache_key", pst._sidebar_cache_key)  # restored after the test
    monkeypatch.setattr(numpydoc, "get_doc_object", numpydoc.get_doc_object)

    def savings(app):
        robustrack_docs.numpydoc_template_once()
        robustrack_docs.sidebar_shared_by_siblings(app)

    saved = _build(src, tmp_path / "saved", savings)
    assert sorted(saved) == sorted(as_they_are)
    assert [page for page in as_they_are if saved[page] != as_they_are[page]] == []
    # used: the template compiled once per builder (the build's, and the signatures' builder-less one), not per
    # docstring; every leaf after the first of its parent took its sidebar from a sibling
    assert 1 <= counts["compiled"] <= 2
    assert counts["shared"] == sum(len(names) - 1 for names in LEAVES.values())


def test_another_themes_or_numpydocs_internals_are_left_alone(monkeypatch):
    """Where the private functions the savings replace have other parameters (another version), the extension
    changes nothing: the theme's key and numpydoc's function stay what they are."""
    from types import SimpleNamespace

    from numpydoc import docscrape, numpydoc

    monkeypatch.syspath_prepend(str(ROOT / "docs" / "_ext"))
    robustrack_docs = importlib.import_module("robustrack_docs")

    def other_key(kind, startdepth, ancestorname, page_uri, kwargs):  # one parameter fewer
        return None

    def other_doc_object(obj, what=None, config=None):  # numpydoc's, shaped otherwise
        return None

    monkeypatch.setattr(pst, "_sidebar_cache_key", other_key)
    robustrack_docs.sidebar_shared_by_siblings(SimpleNamespace())
    assert pst._sidebar_cache_key is other_key
    monkeypatch.setattr(docscrape, "get_doc_object", other_doc_object)
    before = numpydoc.get_doc_object
    monkeypatch.setattr(numpydoc, "get_doc_object", before)  # restored after the test
    robustrack_docs.numpydoc_template_once()
    assert numpydoc.get_doc_object is before
