"""What an unrendered statement looks like in the built HTML, for ``tests/test_book_render.py``.

A page's article is read as a reader sees it, with code (``pre``, ``code``, cell inputs,
highlighted blocks) and typeset maths (the ``math`` spans and blocks MathJax fills in)
taken out. What is left must not show MyST source: a role such as ``{cite}`` or
``{glue:text}`` printed as text, a Markdown table row (a line starting with ``|``) that was
not turned into a table, a ``$`` that did not open or close a formula, a ``\\(`` or ``\\[``
outside a formula, or a LaTeX command such as ``\\varepsilon`` in plain text (a title with
maths, shown where a link repeats it as text).
"""

from __future__ import annotations

import re

RAW_ROLE = re.compile(r"\{(?:cite(?::\w+)?|doc|ref|numref|eq|term|download|prf:ref|glue(?::\w+)?)\}")
TABLE_ROW = re.compile(r"^\s*\|.*\|\s*$", re.M)
DOLLAR = re.compile(r"\$")
MATH_DELIMITER = re.compile(r"\\[()\[\]]")
LATEX_COMMAND = re.compile(r"\\(?:varepsilon|epsilon|delta|rho|sigma|alpha|tau|Delta|frac|mathrm|sqrt|log|ell)\b")

CHECKS = {
    "raw MyST role": RAW_ROLE,
    "unrendered table row": TABLE_ROW,
    "'$' left in text": DOLLAR,
    "maths delimiter outside a formula": MATH_DELIMITER,
    "LaTeX command in text": LATEX_COMMAND,
}

# What is not prose: code, typeset maths, and what the theme adds around the article.
NOT_PROSE = ("pre", "code", "script", "style", "div.highlight", "div.cell_input", "span.math", "div.math",
             "mjx-container", "a.headerlink", "div.output.text_plain", "div.output.stream",
             "div.output.stderr", "em.property")  # em.property: an API signature's type or value, code


def prose_text(html: str) -> str:
    """The article's text with code and maths removed, one line per line break in the HTML text."""
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(html, "html.parser")
    article = soup.select_one("article") or soup.body or soup
    for selector in NOT_PROSE:
        for node in article.select(selector):
            node.decompose()
    return article.get_text()


def render_problems(html: str) -> list[str]:
    """Each kind of unrendered source in a page, with the snippet around its first occurrence."""
    text = prose_text(html)
    found = []
    for kind, pattern in CHECKS.items():
        match = pattern.search(text)
        if match:
            start = max(0, match.start() - 60)
            snippet = " ".join(text[start:match.end() + 60].split())
            found.append(f"{kind}: ...{snippet}...")
    return found
