"""Sphinx configuration of robustrack's documentation site.

Build it (from the repository's root; ``pip install -e '.[docs]'`` first)::

    python -m sphinx -W -b html docs docs/_build/html

The API reference is generated from the ``__all__`` lists (``docs/_ext/robustrack_docs.py``), the gallery
executes every script in ``examples/`` (sphinx-gallery; its figures are the PNGs the scripts write), and
the Markdown pages (theory, results, guide) are read by MyST.
"""

import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = Path(os.environ.get("ROBUSTRACK_DOCS_ROOT", HERE.parent))  # the checkout: examples/ and the package
sys.path.insert(0, str(HERE / "_ext"))
sys.path.insert(0, str(ROOT))  # the package of this checkout, also without an editable install

import robustrack  # noqa: E402

project = "robustrack"
author = "the robustrack developers"
copyright = "2026, the robustrack developers"
version = release = robustrack.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "numpydoc",
    "myst_parser",
    "sphinx_gallery.gen_gallery",
    "robustrack_docs",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "_ext", "Thumbs.db", ".DS_Store", "results/*/comparison.md",
                    "gallery/*.md5",
                    "gallery/*.py", "gallery/*.ipynb", "gallery/*.zip", "gallery/*.json"]
templates_path = ["_templates"]

# MyST: Markdown where Markdown already exists (README-style pages, theory, results)
myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3

# API reference: autosummary pages (one per public object), numpydoc docstrings
autosummary_generate = True
autosummary_imported_members = True
autodoc_typehints = "none"
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_validation_checks = set()

# The gallery: every script in examples/, executed at build time
sphinx_gallery_conf = {
    "examples_dirs": str(ROOT / "examples"),
    "gallery_dirs": "gallery",
    "filename_pattern": r".*\.py$",
    "image_scrapers": ("robustrack_docs.written_figures",),
    "reset_modules": ("matplotlib",),
    "download_all_examples": False,
    "remove_config_comments": True,
    "abort_on_example_error": True,
    "min_reported_time": 0,
    "show_memory": False,
    "plot_gallery": "True",
    "write_computation_times": False,
}

html_theme = "pydata_sphinx_theme"
html_title = f"robustrack {release}"
html_theme_options = {
    "navigation_with_keys": False,
    "collapse_navigation": True,  # the sidebar of a page lists its own section only: ~300 API pages
    "show_toc_level": 2,
    "header_links_before_dropdown": 7,
    "footer_start": ["copyright"],
    "footer_end": ["sphinx-version"],
}
html_show_sourcelink = False
html_copy_source = False
