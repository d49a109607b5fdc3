"""Every statement renders: no MyST source left as text on a built page.

A theorem whose display maths sits inside a paragraph, a role inside broken maths, a
Markdown table that the output renderer does not know, or a title whose maths is repeated
as plain link text all reach the page as raw source (``{cite}``, ``| a | b |``, ``$``,
``\\varepsilon``). ``tests/book_render.py`` says what counts; this module checks

* the checker itself, on snippets of each failure and on clean pages (so it can fail);
* the small book of ``tests/small_book.py``, built once per session: every prose page of
  ``_toc.yml`` (``book/*.md`` but the API reference), the foundations chapter on relations
  executed as the book executes it (its outputs include a Markdown table), and the method
  chapters whose statements once broke, rendered without execution;
* every page of the full build in ``_build/html``, when one exists (``make book``).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from book_render import prose_text, render_problems
from small_book import EXECUTED_TABLE_CHAPTER, PROSE_PAGES, STATEMENT_CHAPTERS, toc_pages

ROOT = Path(__file__).resolve().parents[1]
FULL_BUILD = ROOT / "_build" / "html"
TOC = yaml.safe_load((ROOT / "_toc.yml").read_text())


# ------------------------------------------------------------------ the checker
@pytest.mark.parametrize("snippet, kind", [
    ("<p>for $\\delta = 1$ {cite}`canonne2020discrete` and also</p>", "raw MyST role"),
    ("<p>see {doc}`../notebooks/dp_zcdp_conversion`</p>", "raw MyST role"),
    ("<p>{glue:text}`eps:.2f`</p>", "raw MyST role"),
    ("<p>| item | answer |\n| --- | --- |\n| 1. DP setting | central |</p>", "unrendered table row"),
    ("<p>and $<span class='math'>\\(x\\)</span> and more</p>", "'$' left in text"),
    ("<p>whereheweights\\)n\\(does not enter</p>", "maths delimiter outside a formula"),
    ("<p><a href='x.html'>From zCDP to (\\varepsilon, \\delta)</a></p>", "LaTeX command in text"),
])
def test_the_checker_finds_each_kind_of_unrendered_source(snippet, kind):
    html = f"<html><body><article>{snippet}</article></body></html>"
    assert any(p.startswith(kind) for p in render_problems(html)), render_problems(html)


def test_the_checker_ignores_code_and_typeset_maths():
    html = ("<article><p>The release <span class='math notranslate nohighlight'>\\(\\varepsilon\\)</span>"
            " costs <code>{cite}`x` $HOME | a | b |</code></p>"
            "<div class='math notranslate nohighlight'>\\[\\delta = \\frac12\\]</div>"
            "<div class='cell_input'><pre>print('| a | b |', '$')</pre></div>"
            "<div class='highlight'><pre>$ make book</pre></div>"
            "<table><tr><td>a</td><td>b</td></tr></table></article>")
    assert render_problems(html) == [], prose_text(html)


# ------------------------------------------------------------------ the small book, always
def test_small_book_pages_render(small_book):
    pages = [*PROSE_PAGES, EXECUTED_TABLE_CHAPTER, *STATEMENT_CHAPTERS]
    assert len(pages) >= 12, pages
    problems = {}
    for page in pages:
        path = small_book / f"{page}.html"
        assert path.exists(), f"{page} was not built"
        found = render_problems(path.read_text())
        if found:
            problems[page] = found
    assert not problems, problems


def test_the_executed_chapter_shows_its_markdown_table(small_book):
    """A ``text/markdown`` output with a table is rendered as an HTML table (gfm), not as pipes."""
    from bs4 import BeautifulSoup

    soup = BeautifulSoup((small_book / f"{EXECUTED_TABLE_CHAPTER}.html").read_text(), "html.parser")
    tables = [t for out in soup.select("div.cell_output") for t in out.select("table")]
    assert tables, "the relations table is not an HTML table in the chapter's outputs"


# ------------------------------------------------------------------ the full build, when there is one
@pytest.mark.skipif(not (FULL_BUILD / "index.html").exists(),
                    reason="no full build in _build/html (make book builds it); the small book is checked above")
def test_every_page_of_the_full_build_renders():
    pages = toc_pages(TOC)
    problems = {}
    for page in pages:
        path = FULL_BUILD / f"{page}.html"
        if not path.exists():
            problems[page] = ["not built"]
            continue
        found = render_problems(path.read_text())
        if found:
            problems[page] = found
    assert not problems, problems
