"""The site's own Sphinx extension: API pages from the ``__all__`` lists, the gallery's figures, links to docs pages.

- :func:`api_modules` / :func:`write_api_pages` — one page per public module (the package, every subpackage,
  every public top-level module), each an ``autosummary`` table of its ``__all__`` with a page per name.
  Nothing is listed by hand: a name added to an ``__all__`` gets its page at the next build.
- :func:`written_figures` — sphinx-gallery's image scraper for the examples: they write their figures as
  PNG files (``ROBUSTRACK_EXAMPLES_OUT/<script>/``) and close them, so the gallery shows the files written.
- :func:`numpydoc_template_once` — numpydoc compiles its docstring template once per build, not per docstring.
- :func:`sidebar_shared_by_siblings` — the theme builds a sidebar once for all child pages of one parent.
- :func:`site_docstring` — a docstring that names a page of the site (``docs/theory/stabilization.md``)
  links to it on the site, and reads as a path in ``help()``; ``|x|`` there is an absolute value.
"""

from __future__ import annotations

import importlib
import inspect
import os
import pkgutil
import posixpath
import re
import shutil
from pathlib import Path

__all__ = ["api_modules", "write_api_pages", "written_figures", "site_docstring", "numpydoc_template_once", "sidebar_shared_by_siblings", "setup"]

HERE = Path(__file__).resolve().parent
DOCS = HERE.parent

#: Top-level modules that are not user API: the command line (documented by its --help and the guide) and
#: the compiled kernels (internal; they live in their own package, documented there when it has an __all__).
PRIVATE = ("robustrack.cli",)


def api_modules() -> list[str]:
    """The modules that get an API page: ``robustrack``, its subpackages and its public top-level modules.

    Public: the name has no leading underscore, is not in :data:`PRIVATE`, does not end in ``_kernels`` and
    the module has a non-empty ``__all__``.
    """
    import robustrack

    names = ["robustrack"]
    for info in sorted(pkgutil.iter_modules(robustrack.__path__), key=lambda i: (not i.ispkg, i.name)):
        full = f"robustrack.{info.name}"
        if info.name.startswith("_") or full in PRIVATE or info.name.endswith("_kernels"):
            continue
        if getattr(importlib.import_module(full), "__all__", None):
            names.append(full)
    return names


def _title(module) -> str:
    doc = (module.__doc__ or "").strip().splitlines()
    return doc[0].rstrip(".") if doc else ""


def write_api_pages(out: Path) -> list[str]:
    """Write ``out/index.rst`` and ``out/<module>.rst`` (autosummary over ``__all__``); returns the modules."""
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    modules = api_modules()
    first_page: dict[int, str] = {}  # a class or function exported by several modules is documented once
    for name in modules:
        module = importlib.import_module(name)
        own, again = [], []
        for item in module.__all__:
            obj = getattr(module, item)
            if (inspect.isclass(obj) or inspect.isfunction(obj)) and id(obj) in first_page:
                again.append(item)
            else:
                own.append(item)
                if inspect.isclass(obj) or inspect.isfunction(obj):
                    first_page[id(obj)] = f"{name}.{item}"
        lines = [f".. _api-{name}:", "", f"``{name}``", "=" * (len(name) + 4), "",
                 f".. automodule:: {name}", "   :no-members:", "   :no-index:", "", f".. currentmodule:: {name}", ""]
        if own:
            lines += [".. autosummary::", "   :toctree: generated", "   :nosignatures:", ""]
            lines += [f"   {item}" for item in own] + [""]
        if again:
            lines += ["Also exported here (documented where they are first listed):", ""]
            (out / "generated").mkdir(exist_ok=True)
            for item in again:
                target = first_page[id(getattr(module, item))]
                lines.append(f"- :py:obj:`{item} <{target}>` — the same object as ``{target}``")
                page = [f"{name}.{item}", "=" * len(f"{name}.{item}"), "",
                        f"``{name}.{item}`` is :py:obj:`{target}`, re-exported here; its documentation is on that page."]
                (out / "generated" / f"{name}.{item}.rst").write_text("\n".join(page) + "\n", encoding="utf-8")
            lines += ["", ".. toctree::", "   :hidden:", ""] + [f"   generated/{name}.{item}" for item in again] + [""]
        (out / f"{name}.rst").write_text("\n".join(lines) + "\n", encoding="utf-8")
    index = ["API reference", "=============", "",
             "Every public name of the package, generated from the ``__all__`` lists of ``robustrack``, its",
             "subpackages and its public modules: a page per function, class and constant, from its docstring.",
             "The equation numbers refer to the sources (:doc:`../references`); the derivations are in",
             ":doc:`../theory/index`.", "", ".. list-table::", "   :header-rows: 1", "", "   * - module",
             "     - what it holds"]
    for name in modules:
        index += [f"   * - :ref:`{name} <api-{name}>`", f"     - {_title(importlib.import_module(name)) or '—'}"]
    index += ["", ".. toctree::", "   :hidden:", ""] + [f"   {name}" for name in modules]
    (out / "index.rst").write_text("\n".join(index) + "\n", encoding="utf-8")
    return modules


# --------------------------------------------------------------------------- the gallery's figures
_SEEN: dict[str, float] = {}


def examples_out() -> Path:
    """Where the examples write (``ROBUSTRACK_EXAMPLES_OUT``, set by :func:`_prepare_gallery`)."""
    return Path(os.environ["ROBUSTRACK_EXAMPLES_OUT"])


def written_figures(block, block_vars, gallery_conf, **kwargs):
    """sphinx-gallery image scraper: the PNGs the example wrote into its output folder since the last block."""
    from sphinx_gallery.scrapers import figure_rst

    folder = examples_out() / Path(block_vars["src_file"]).stem
    new = []
    for png in sorted(folder.glob("*.png")):
        mtime = png.stat().st_mtime
        if _SEEN.get(str(png)) != mtime:
            _SEEN[str(png)] = mtime
            new.append(png)
    paths = []
    for png, target in zip(new, block_vars["image_path_iterator"]):
        shutil.copyfile(png, target)
        paths.append(target)
    return figure_rst(paths, gallery_conf["src_dir"], fig_titles=", ".join(p.stem.replace("_", " ") for p in new))


# --------------------------------------------------------------------------- docstrings on the site
_DOCS_PATH = re.compile(r"(?<![`\w/])docs/((?:theory|results|guide)/[\w.-]+?)\.md(#[\w-]+)?(?![\w/])")
_CODE = re.compile(r"``.+?``|:[\w:]+:`[^`]*`|`[^`]*`_?")


def _outside_code(line: str, fix) -> str:
    """``fix`` applied to the parts of ``line`` outside inline literals and roles."""
    out, pos = [], 0
    for m in _CODE.finditer(line):
        out += [fix(line[pos:m.start()]), m.group(0)]
        pos = m.end()
    return "".join(out + [fix(line[pos:])])


def _prose(text: str) -> str:
    text = text.replace("|", "\\|").replace("/*", "/\\*")  # |x| is a norm, figures/*.png a glob
    return _DOCS_PATH.sub(lambda m: f":doc:`docs/{m.group(1)}.md </{m.group(1)}>`", text)


def site_docstring(app, what, name, obj, options, lines):
    """A docstring as the site shows it: ``|x|`` is a norm (escaped), ``docs/theory/x.md`` a link to that page.

    Docstrings are written for ``help()`` first; literal blocks (after ``::``) and doctests are left as they are.
    """
    literal_indent = None
    for i, line in enumerate(lines):
        stripped = line.strip()
        indent = len(line) - len(line.lstrip())
        if literal_indent is not None:
            if not stripped or indent > literal_indent:
                continue
            literal_indent = None
        if stripped.startswith(">>>") or stripped.startswith("..."):
            continue
        lines[i] = _outside_code(line, _prose)
        if stripped.endswith("::"):
            literal_indent = indent


# --------------------------------------------------------------------------- numpydoc's template, compiled once
def numpydoc_template_once() -> None:
    """Make numpydoc compile its docstring template once per builder instead of once per docstring.

    ``numpydoc.docscrape_sphinx.get_doc_object`` builds a new Jinja environment and compiles
    ``numpydoc_docstring.rst`` at every call (twice per documented object: its docstring and its signature),
    a third of the API pages' rendering time. The template it compiles depends only on the builder, so the
    first one compiled for a builder is kept and handed to numpydoc's own ``get_doc_object`` of
    ``numpydoc.docscrape`` with numpydoc's Sphinx classes: the same objects, the same text, the same pages.
    """
    from numpydoc import docscrape, docscrape_sphinx, numpydoc

    compile_template = docscrape_sphinx.get_doc_object  # numpydoc's: compiles the template, then documents
    # numpydoc's internals as they were when this was written (1.11); another numpydoc is left as it is
    expected = {compile_template: ["obj", "what", "doc", "config", "builder"],
                docscrape.get_doc_object: ["obj", "what", "doc", "config", "class_doc", "func_doc", "obj_doc"]}
    if any(list(inspect.signature(f).parameters)[:len(names)] != names for f, names in expected.items()):
        return
    kept: dict[int, tuple] = {}  # id(builder) -> (builder, template); the builder is kept alive with its key

    def get_doc_object(obj, what=None, doc=None, config=None, builder=None):
        config = {} if config is None else config
        if id(builder) not in kept:
            probe: dict = {}
            compile_template(get_doc_object, config=probe, builder=builder)
            if "template" not in probe:  # numpydoc no longer hands its template back: its own way, always
                numpydoc.get_doc_object = compile_template
                return compile_template(obj, what=what, doc=doc, config=config, builder=builder)
            kept[id(builder)] = (builder, probe["template"])
        config["template"] = kept[id(builder)][1]
        return docscrape.get_doc_object(obj, what=what, doc=doc, config=config,
                                        class_doc=docscrape_sphinx.SphinxClassDoc,
                                        func_doc=docscrape_sphinx.SphinxFunctionDoc,
                                        obj_doc=docscrape_sphinx.SphinxObjDoc)

    numpydoc.get_doc_object = get_doc_object


# --------------------------------------------------------------------------- the sidebar, shared by sibling pages
def sidebar_shared_by_siblings(app) -> None:
    """Let pydata-sphinx-theme reuse one page's sidebar for its sibling pages under ``collapse_navigation``.

    The theme builds every page's sidebar from the whole toctree (resolve, render, BeautifulSoup), a third of
    the site's build time with ~300 API pages. It already reuses a sidebar between pages where the sidebar has the
    same structure, moving the "current page" markers (``_patch_cached_sidebar``), but only when
    ``collapse_navigation`` is off. With it on (this site), the collapsed tree of a page that has no child pages
    is its parent's branch opened down to that parent: the same tree for every child page of one parent in one
    folder (an API page and its siblings), whose markers the theme moves the same way. So such pages get a key
    naming the parent; every other page keeps the theme's own key (None: built fresh). Without the theme's
    private functions (another version of the theme) nothing changes.
    """
    try:
        from pydata_sphinx_theme import toctree as pst
    except ImportError:
        return
    theme_key = getattr(pst, "_sidebar_cache_key", None)
    if theme_key is None or not hasattr(pst, "_patch_cached_sidebar"):
        return
    if list(inspect.signature(theme_key).parameters) != ["kind", "startdepth", "ancestorname", "page_uri",
                                                         "show_nav_level", "kwargs"]:
        return  # the key of another version of the theme: its own way
    parents: dict[str, list[str]] = {}  # docname -> the documents whose toctrees include it (after the read)

    def parents_of(docname: str) -> list[str]:
        if not parents:
            for parent, children in app.env.toctree_includes.items():
                for child in children:
                    parents.setdefault(child, []).append(parent)
        return parents.get(docname, [])

    def key(kind, startdepth, ancestorname, page_uri, show_nav_level, kwargs):
        if not kwargs.get("collapse", True):
            return theme_key(kind, startdepth, ancestorname, page_uri, show_nav_level, kwargs)
        suffix = app.builder.link_suffix
        if kind != "sidebar" or ancestorname is None or not page_uri.endswith(suffix):
            return None
        docname = page_uri[:-len(suffix)]
        if app.env.toctree_includes.get(docname) or len(parents_of(docname)) != 1:
            return None  # a page with child pages opens its own branch; one included twice has two places
        return ("collapsed", ancestorname, parents_of(docname)[0], posixpath.dirname(page_uri), show_nav_level,
                tuple(sorted(kwargs.items())))

    pst._sidebar_cache_key = key


def _prepare(app, config):
    os.environ.setdefault("ROBUSTRACK_EXAMPLES_OUT", str(Path(app.outdir).parent / "examples-out"))
    os.environ.setdefault("ROBUSTRACK_EXAMPLES_FAST", "1")
    os.environ.setdefault("MPLBACKEND", "Agg")
    write_api_pages(Path(app.srcdir) / "api")


def setup(app):
    numpydoc_template_once()
    sidebar_shared_by_siblings(app)
    app.connect("config-inited", _prepare)  # before the sources are listed: the API pages must be among them
    app.connect("autodoc-process-docstring", site_docstring, priority=600)  # after numpydoc
    return {"parallel_read_safe": True, "parallel_write_safe": True}
