"""The documentation site builds without a warning, links and images resolve, and a real browser renders it.

The site is built once (``docs_site`` in conftest.py: ``sphinx -W`` on a copy of ``docs/``). Truths are independent
of the site's own code: the ``__all__`` lists imported here, the files on disk, an HTML parser, and headless
Chromium counting the images it decoded and the text it laid out.
"""

from __future__ import annotations

import html
import importlib
import pkgutil
import re
import subprocess
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

import robustrack
from browser import chromium, headless
from test_examples import CASES

pytestmark = pytest.mark.xdist_group("docs-site")

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def site(docs_site):
    assert docs_site.returncode == 0, "the site did not build cleanly (sphinx -W):\n" + docs_site.log[-6000:]
    return docs_site.html


def _pages(html_dir: Path) -> list[Path]:
    return sorted(p for p in html_dir.rglob("*.html") if "_static" not in p.parts and "_sources" not in p.parts)


class _Refs(HTMLParser):
    """Every link, image and stylesheet reference of a page, and every id it defines."""

    def __init__(self):
        super().__init__()
        self.refs, self.ids = [], set()

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if a.get("id"):
            self.ids.add(a["id"])
        if tag == "a" and a.get("name"):
            self.ids.add(a["name"])
        for key in ("href", "src"):
            if a.get(key) is not None and tag in ("a", "img", "link", "script", "source", "iframe"):
                self.refs.append((tag, a[key]))


def _parse(page: Path) -> _Refs:
    parser = _Refs()
    parser.feed(page.read_text(encoding="utf-8"))
    return parser


# --------------------------------------------------------------------------- the build
def test_site_builds_without_warnings(site, docs_site):
    assert "WARNING" not in docs_site.log and "ERROR" not in docs_site.log, docs_site.log[-6000:]
    for page in ("index", "getting-started", "guide/index", "theory/index", "references", "api/index",
                 "gallery/index", "results/index", "changelog"):
        assert (site / f"{page}.html").is_file(), page


def _public_modules():
    """robustrack, its subpackages, and its public top-level modules (what the API reference promises)."""
    names = ["robustrack"]
    for info in pkgutil.iter_modules(robustrack.__path__):
        if info.name.startswith("_") or info.name == "cli" or info.name.endswith("_kernels"):
            continue
        module = importlib.import_module(f"robustrack.{info.name}")
        if info.ispkg:
            assert getattr(module, "__all__", None), f"subpackage robustrack.{info.name} has no __all__"
        if getattr(module, "__all__", None):
            names.append(f"robustrack.{info.name}")
    return names


def test_every_public_name_has_an_api_page(site):
    modules = _public_modules()
    assert {"robustrack.tracking", "robustrack.plants", "robustrack.controllers"} <= set(modules)
    missing, empty = [], []
    for name in modules:
        module = importlib.import_module(name)
        assert (site / "api" / f"{name}.html").is_file(), name
        for item in module.__all__:
            page = site / "api" / "generated" / f"{name}.{item}.html"
            if not page.is_file():
                missing.append(f"{name}.{item}")
                continue
            text = page.read_text(encoding="utf-8")
            # an object description rendered from the docstring, or the link to where a re-export is documented
            if 'class="py ' not in text and "re-exported here" not in text:
                empty.append(f"{name}.{item}")
    assert not missing, f"public names without an API page: {missing}"
    assert not empty, f"API pages without a description: {empty}"


def test_internal_links_and_images_resolve(site):
    pages = _pages(site)
    assert len(pages) > 100
    parsed = {p: _parse(p) for p in pages}
    broken = []
    for page, refs in parsed.items():
        for tag, ref in refs.refs:
            parts = urlsplit(ref)
            if parts.scheme or ref.startswith(("mailto:", "javascript:", "//")) or not (parts.path or parts.fragment):
                continue
            target = (page.parent / unquote(parts.path)).resolve() if parts.path else page
            if target.is_dir():
                target = target / "index.html"
            if not target.is_file():
                broken.append(f"{page.relative_to(site)}: <{tag}> {ref}")
            elif parts.fragment and target.suffix == ".html" and target in parsed:
                if unquote(parts.fragment) not in parsed[target].ids:
                    broken.append(f"{page.relative_to(site)}: <{tag}> {ref} (no such anchor)")
    assert not broken, "\n".join(broken[:40])


def test_docstrings_point_to_pages_that_exist():
    """Docstrings cite the site's pages (``docs/theory/x.md``), never notes outside the repository."""
    cited, stale = set(), []
    for path in (ROOT / "robustrack").rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        assert not re.search(r"THEORY\.md|DESIGN\.md|THEORY §", text), path
        for m in re.finditer(r"docs/((?:theory|results|guide)/[\w.-]+?\.md)", text):
            cited.add(m.group(1))
            if not (ROOT / "docs" / m.group(1)).is_file():
                stale.append(f"{path.relative_to(ROOT)}: docs/{m.group(1)}")
    assert not stale, stale
    assert cited, "no docstring cites a theory page"


def test_the_gallery_shows_every_example_with_its_figures(site):
    for script in sorted((ROOT / "examples").glob("*.py")):
        page = site / "gallery" / f"{script.stem}.html"
        assert page.is_file(), script.name
        text = page.read_text(encoding="utf-8")
        figures = re.findall(rf'<img [^>]*src="([^"]*/sphx_glr_{script.stem}_\d+\.png)"', text)
        assert figures, f"{script.name}: no figure on its gallery page"
        for src in figures:
            assert (page.parent / src).stat().st_size > 1000, src
        assert "sphx-glr-script-out" in text, f"{script.name}: no printed output"


# --------------------------------------------------------------------------- a real browser
_PROBE = """<!doctype html><html><head><title>probe</title></head><body>{frames}
<script>window.addEventListener('load', function () {{
  var rows = [];
  document.querySelectorAll('iframe').forEach(function (f) {{
    var d = f.contentDocument, imgs = Array.prototype.slice.call(d.images);
    var ok = imgs.filter(function (i) {{ return i.complete && i.naturalWidth > 0; }}).length;
    var main = d.querySelector('main') || d.body;
    rows.push([f.getAttribute('src'), ok, imgs.length, main.innerText.trim().length,
               main.getBoundingClientRect().height].join('|'));
  }});
  var pre = document.createElement('pre'); pre.id = 'probe'; pre.textContent = rows.join('\\n');
  document.body.appendChild(pre);
}});</script></body></html>"""


def _render(browser, site: Path, pages: list[Path], tmp_path: Path, tag: str) -> dict:
    """Open ``pages`` in headless Chromium (iframes of one probe page); per page (images decoded, images,
    characters of text, height of the main area in px)."""
    frames = "\n".join(f'<iframe src="{p.relative_to(site).as_posix()}" width="1280" height="900"></iframe>'
                       for p in pages)
    probe = site / f"_probe_{tag}.html"
    probe.write_text(_PROBE.format(frames=frames), encoding="utf-8")
    try:
        dom = subprocess.run(headless(browser, tmp_path / f"profile-{tag}", "--allow-file-access-from-files",
                                      "--dump-dom", probe.as_uri()),
                             check=True, capture_output=True, text=True, timeout=300).stdout
    finally:
        probe.unlink()
    block = re.search(r'<pre id="probe">(.*?)</pre>', dom, re.S)
    assert block, dom[-2000:]
    rows = {}
    for line in html.unescape(block.group(1)).splitlines():
        src, ok, n, chars, height = line.split("|")
        rows[src] = (int(ok), int(n), int(chars), float(height))
    return rows


def _api_kind(page: Path) -> str:
    """What a generated API page describes: the Sphinx object type of its first description, or a re-export."""
    text = page.read_text(encoding="utf-8")
    if "re-exported here" in text:
        return "re-export"
    found = re.search(r'class="py (\w+)"', text)
    return found.group(1) if found else "other"


def _api_sample(api: list[Path]) -> list[Path]:
    """The first and the last page of each kind among the generated API pages (sorted)."""
    kinds: dict[str, list[Path]] = {}
    for page in api:
        kinds.setdefault(_api_kind(page), []).append(page)
    assert {"class", "function", "re-export"} <= set(kinds), sorted(kinds)
    return sorted({p for group in kinds.values() for p in (group[0], group[-1])})


def test_pages_render_in_headless_chromium(site, tmp_path):
    browser = chromium()
    if browser is None:
        pytest.skip("chromium not installed: no headless browser to open the site (apt-get install chromium)")
    pages = [p for p in _pages(site) if p.name not in ("genindex.html", "search.html")]
    # every hand-written and gallery page, and the first and last generated API page of each kind (class, function,
    # data, exception, re-export: one template each; the ~300 pages' links and images are checked for every page by
    # test_internal_links_and_images_resolve). The browser costs ~0.3 s a page whatever it shows: all ~300 cost
    # ~90 s, every 8th (38 pages) ~12 s, these ~10 ~3 s.
    api = [p for p in pages if "generated" in p.parts]
    pages = [p for p in pages if "generated" not in p.parts] + _api_sample(api)
    rows = {}
    for i in range(0, len(pages), 60):
        rows.update(_render(browser, site, pages[i:i + 60], tmp_path, str(i)))
    assert len(rows) == len(pages)
    blank = [src for src, (ok, n, chars, height) in rows.items() if chars < 20 or height < 50]
    undecoded = [f"{src}: {ok} of {n} images" for src, (ok, n, chars, height) in rows.items() if ok != n]
    assert not blank, f"pages without rendered text: {blank[:20]}"
    assert not undecoded, undecoded[:20]
    # the gallery's figures are there and decode in the browser
    for script in (ROOT / "examples").glob("*.py"):
        ok, n, _, _ = rows[f"gallery/{script.stem}.html"]
        assert ok >= 1 and ok == n, script.name


def test_the_browser_check_catches_a_broken_image(site, tmp_path):
    """The control: a page with an image that does not decode is reported as such."""
    browser = chromium()
    if browser is None:
        pytest.skip("chromium not installed: no headless browser to open the site (apt-get install chromium)")
    bad = site / "_broken_control.html"
    bad.write_text('<html><body><main><p>control page with enough text to count as rendered</p>'
                   '<img src="data:image/png;base64,AAAA"><img src="_static/missing.png"></main></body></html>',
                   encoding="utf-8")
    try:
        rows = _render(browser, site, [site / "index.html", bad], tmp_path, "control")
    finally:
        bad.unlink()
    assert rows["_broken_control.html"][:2] == (0, 2)
    assert rows["index.html"][2] > 100


# the examples ran inside this build (the gallery): what each wrote and printed, by tests/test_examples.py's table
@pytest.mark.parametrize("script", sorted(CASES))
def test_example_runs(script, docs_site):
    assert docs_site.returncode == 0, docs_site.log[-5000:]
    files, texts = CASES[script]
    folder = docs_site.examples_out / Path(script).stem
    for name in files:
        assert (folder / name).is_file() and (folder / name).stat().st_size > 0, name
    printed = html.unescape((docs_site.html / "gallery" / f"{Path(script).stem}.html").read_text(encoding="utf-8"))
    for text in texts:
        assert text in printed, (text, printed[-3000:])
    assert docs_site.written_into_examples == []  # nothing written beside the scripts
