"""The book as a reader's browser sees it: offline maths, figures, no CDN, no noise, no builder talk.

The small book of ``tests/small_book.py`` (the introduction, every part page and the
first chapter of each part, the prose pages, and one plotting chapter executed as the book
build executes it; built once per session) is opened by headless Chromium from a loopback
server with every host name unresolvable, so MathJax can only come from the build itself.
Where a full build exists (``_build/html``), every page whose notebook plots must show its
figures, none blank.

Chromium is Debian's ``chromium`` package (``make browser`` installs it; ``make test``
runs that first). Where it is absent the browser tests are skipped with that reason.
Screenshots go to ``$DPKIT_SCREENSHOTS`` when set (to look at them), else to a temporary
folder.
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import os
import re
import shutil
import subprocess
import threading
from pathlib import Path

import pytest
from book_noise import MACHINE_PATH, find_noise
from book_voice import CHAPTERS, EVERYWHERE, builder_talk
from small_book import FIGURE_CHAPTER, mini_toc, toc_pages

ROOT = Path(__file__).resolve().parents[1]
FULL_BUILD = ROOT / "_build" / "html"
BROWSER = next((shutil.which(name) for name in ("chromium", "chromium-browser") if shutil.which(name)), None)
needs_browser = pytest.mark.skipif(
    BROWSER is None, reason="Debian's chromium is not installed (make browser: apt-get install -y chromium)")


@contextlib.contextmanager
def _serve(folder: Path):
    """Serve ``folder`` on a loopback port for the duration of the block; yields the base URL."""
    handler = functools.partial(_QuietHandler, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # keep pytest's output clean
        pass


def _chromium(*args: str, timeout: int = 120) -> subprocess.CompletedProcess:
    """Headless Chromium with no network but loopback: every host name fails to resolve."""
    command = [BROWSER, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
               "--disable-extensions", "--hide-scrollbars",
               "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
               "--virtual-time-budget=20000", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout)


def _html_files(html: Path) -> list[Path]:
    return [p for p in html.rglob("*.html") if "_static" not in p.parts]


# ------------------------------------------------------------------ static checks
def test_no_page_loads_anything_from_the_network(small_book):
    remote = re.compile(r"<(?:script|link|img|iframe)\b[^>]*\b(?:src|href)=[\"'](?:https?:)?//", re.I)
    inline = re.compile(r"<script\b[^>]*>(.*?)</script>", re.S | re.I)
    offenders = {}
    for p in _html_files(small_book):
        text = p.read_text()
        found = remote.findall(text)
        found += [m[:80] for m in inline.findall(text) if re.search(r"https?://", m)]
        offenders[p.relative_to(small_book).as_posix()] = found
    offenders = {k: v for k, v in offenders.items() if v}
    assert not offenders, f"pages load remote resources: {offenders}"


def test_mathjax_is_served_from_the_build(small_book):
    page = (small_book / "book" / "part_foundations.html").read_text()
    assert re.search(r"<script[^>]+src=\"\.\./_static/mathjax/tex-mml-chtml\.js", page)
    assert (small_book / "_static" / "mathjax" / "output" / "chtml" / "fonts" / "woff-v2").is_dir()
    assert (small_book / "_static" / "mathjax" / "LICENSE").is_file()


def test_prose_pages_have_no_noise(small_book):
    noisy = {}
    for page in toc_pages(mini_toc()):
        text = (small_book / f"{page}.html").read_text()
        found = [n for n in find_noise(text) if not n.startswith("Python warning")]
        if found:
            noisy[page] = found
    assert not noisy, noisy


@pytest.mark.skipif(not (FULL_BUILD / "index.html").exists(),
                    reason="no full build in _build/html (make book builds it); the smoke-executed "
                           "notebooks are checked for the same noise in test_notebooks.py")
def test_full_build_has_no_noise():
    from bs4 import BeautifulSoup

    noisy = {}
    for path in _html_files(FULL_BUILD):
        soup = BeautifulSoup(path.read_text(), "html.parser")
        outputs = "\n".join(div.get_text() for div in soup.select("div.cell_output"))
        found = find_noise(outputs)
        paths = MACHINE_PATH.search(soup.get_text())
        if paths:
            found.append(f"machine path: {paths.group(0)}")
        if found:
            noisy[path.relative_to(FULL_BUILD).as_posix()] = found
    assert not noisy, noisy


# ------------------------------------------------------------------ figures and voice
PLOTTING_PAGES = sorted(f"notebooks/{p.stem}" for p in (ROOT / "notebooks").glob("*.ipynb")
                        if "plt.show()" in p.read_text())
full_build = pytest.mark.skipif(not (FULL_BUILD / "index.html").exists(),
                                reason="no full build in _build/html (make book builds it)")


def _figures(html: Path, page: str) -> list[tuple[str, float]]:
    """Each figure in ``page``'s article as ``(source, pixel standard deviation)``; inline SVG counts as drawn."""
    import base64
    import io

    from bs4 import BeautifulSoup
    from matplotlib.image import imread

    path = html / f"{page}.html"
    article = BeautifulSoup(path.read_text(), "html.parser").select_one("article") or BeautifulSoup("", "html.parser")
    found = []
    for img in article.select("img"):
        src = img.get("src", "")
        if src.startswith("data:image/png;base64,"):
            data = io.BytesIO(base64.b64decode(src.split(",", 1)[1]))
        else:
            data = (path.parent / src).resolve()
            if not data.exists():
                found.append((src, 0.0))
                continue
        if not str(src).lower().split("?")[0].endswith(".png") and not src.startswith("data:image/png"):
            found.append((src, 1.0))  # another format: its presence is what we can check
            continue
        pixels = imread(data)
        found.append((src, float(pixels[..., :3].std())))
    found += [("inline svg", 1.0) for svg in article.select("div.cell_output svg") if svg.find(["path", "g"])]
    return found


def _figure_problems(html: Path, pages: list[str]) -> dict[str, str]:
    problems = {}
    for page in pages:
        figures = _figures(html, page)
        blank = [src for src, spread in figures if spread <= 0]
        if not figures:
            problems[page] = "no figure on the page"
        elif blank:
            problems[page] = f"blank or missing images: {blank}"
    return problems


def test_a_plotting_chapter_shows_its_figure_even_when_agg_is_inherited(small_book):
    figures = _figures(small_book, FIGURE_CHAPTER)
    assert figures and all(spread > 0 for _, spread in figures), figures
    page = (small_book / f"{FIGURE_CHAPTER}.html").read_text()
    assert re.search(r"<figcaption>.*?caption-number\">Fig\. [\d.]+", page, re.S), "the figure has no numbered caption"


@full_build
def test_every_plotting_page_of_the_full_build_has_figures_and_none_is_blank():
    assert len(PLOTTING_PAGES) >= 18, PLOTTING_PAGES
    problems = _figure_problems(FULL_BUILD, PLOTTING_PAGES)
    counts = {page: len(_figures(FULL_BUILD, page)) for page in PLOTTING_PAGES}
    assert not problems, f"{problems}; figures per page: {counts}"


def _voice_problems(html: Path) -> dict[str, list[str]]:
    from bs4 import BeautifulSoup

    found = {}
    for path in _html_files(html):
        article = BeautifulSoup(path.read_text(), "html.parser").select_one("article")
        if article is None:
            continue
        name = path.relative_to(html).as_posix()
        patterns = EVERYWHERE if name.startswith("book/api/") or "/" not in name else CHAPTERS
        hits = builder_talk(article.get_text(" "), patterns)
        if hits:
            found[name] = hits
    return found


def test_built_pages_speak_to_readers(small_book):
    found = _voice_problems(small_book)
    assert not found, found


@full_build
def test_full_build_speaks_to_readers():
    found = _voice_problems(FULL_BUILD)
    assert not found, found


# ------------------------------------------------------------------ in the browser
@needs_browser
@pytest.mark.parametrize("page", ["book/part_foundations", "notebooks/dp_sensitivity_laplace"])
def test_math_typesets_offline(small_book, page):
    with _serve(small_book) as base:
        proc = _chromium("--dump-dom", f"{base}/{page}.html")
    dom = proc.stdout
    assert "</html>" in dom, proc.stderr[-2000:]
    containers = dom.count("<mjx-container")
    raw = (small_book / f"{page}.html").read_text()
    expected = raw.count('class="math') + raw.count("\\(")
    assert expected > 0, f"{page} has no maths to check"
    assert containers >= expected // 2 and containers > 0, \
        f"{page}: {containers} typeset formulas for about {expected} in the source"
    assert "<mjx-merror" not in dom, f"{page}: MathJax reported a TeX error"


def _screenshot_dir(tmp_path_factory) -> Path:
    target = os.environ.get("DPKIT_SCREENSHOTS")
    if target:
        path = Path(target)
        path.mkdir(parents=True, exist_ok=True)
        return path
    return tmp_path_factory.mktemp("screenshots")


def _one_chapter(entries: list[dict]) -> str:
    """A chapter of a mini-toc part: the first section of its entry, else its last entry."""
    return entries[0]["sections"][0]["file"] if entries[0].get("sections") else entries[-1]["file"]


SCREENSHOT_PAGES = [mini_toc()["root"]] + [_one_chapter(part["chapters"]) for part in mini_toc()["parts"]]


@needs_browser
def test_screenshots_of_the_introduction_and_one_chapter_per_part(small_book, tmp_path_factory):
    from matplotlib.image import imread

    folder = _screenshot_dir(tmp_path_factory)
    book = FULL_BUILD if (FULL_BUILD / "index.html").exists() else small_book
    with _serve(book) as base:
        for page in SCREENSHOT_PAGES:
            png = folder / (page.replace("/", "__") + ".png")
            png.unlink(missing_ok=True)
            proc = _chromium(f"--screenshot={png}", "--window-size=1280,1600", f"{base}/{page}.html")
            assert png.exists(), f"no screenshot of {page}: {proc.stderr[-2000:]}"
            image = imread(png)
            assert image.shape[:2] == (1600, 1280), image.shape
            # A rendered page has text and a sidebar: many distinct grey levels, not a blank canvas.
            grey = (image[..., :3].mean(axis=-1) * 255).round()
            assert len(set(grey.ravel().tolist())) > 20, f"{page}: screenshot looks blank"
            assert grey.std() > 5, f"{page}: screenshot looks blank"


@needs_browser
def test_the_browser_decodes_a_chapter_figure(small_book, tmp_path):
    """Chromium loads the chapter in a same-origin frame and reports each image's natural width."""
    probe = tmp_path / "site"
    probe.mkdir()
    (probe / "book").symlink_to(small_book, target_is_directory=True)
    (probe / "probe.html").write_text(
        "<!doctype html><html><body><pre id='out'>pending</pre>"
        f"<iframe id='page' src='book/{FIGURE_CHAPTER}.html' width='1200' height='900'></iframe>"
        "<script>document.getElementById('page').addEventListener('load', function () {"
        "  var imgs = this.contentDocument.querySelectorAll('article img');"
        "  var widths = Array.prototype.map.call(imgs, function (i) { return i.complete ? i.naturalWidth : -1; });"
        "  document.getElementById('out').textContent = 'widths=' + JSON.stringify(widths);"
        "});</script></body></html>")
    with _serve(probe) as base:
        proc = _chromium("--dump-dom", f"{base}/probe.html")
    found = re.search(r"widths=(\[[^\]]*\])", proc.stdout)
    assert found, proc.stdout[-2000:] + proc.stderr[-2000:]
    widths = [int(w) for w in found.group(1).strip("[]").split(",") if w.strip()]
    assert widths and all(w > 0 for w in widths), f"natural widths of the chapter's images: {widths}"
