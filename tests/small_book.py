"""One small book, built once per test session, for the rendering and the browser tests.

``make book`` executes every notebook (many minutes); the tests build a book of their own
in a temporary folder with the book's own ``_config.yml`` and ``_toc.yml`` entries:

* the introduction, every part page and the first chapter of each part (:func:`mini_toc`):
  what the browser tests open;
* every prose page (``book/*.md`` but the API reference) and the method chapters whose
  statements once broke: what the rendering tests read;
* two chapters executed as the book build executes them: the foundations chapter on
  relations (its outputs include a Markdown table) and a plotting chapter (its figure must
  reach the page although the build runs under ``MPLBACKEND=Agg``). Every other notebook
  is rendered without execution.

One build of all of them costs one Sphinx start instead of three. ``conftest.py`` keeps
the two modules that use it on one test worker, so the build is made once.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
TOC = yaml.safe_load((ROOT / "_toc.yml").read_text())

EXECUTED_TABLE_CHAPTER = "notebooks/dp_foundations_relations"   # its outputs include a Markdown table
FIGURE_CHAPTER = "notebooks/dp_composition"                      # a plotting chapter that runs in seconds
# chapters whose prose held display maths inside a paragraph: rendered, not executed
STATEMENT_CHAPTERS = ["notebooks/kps_dpkde", "notebooks/kps_zero_padding", "notebooks/dp_zcdp_conversion"]
EXECUTED = [EXECUTED_TABLE_CHAPTER, FIGURE_CHAPTER]


def toc_pages(toc: dict) -> list[str]:
    """Every document of ``toc``, root first."""
    pages = [toc["root"]]
    for part in toc["parts"]:
        for chapter in part["chapters"]:
            pages.append(chapter["file"])
            pages.extend(s["file"] for s in chapter.get("sections", []))
    return pages


PROSE_PAGES = [p for p in toc_pages(TOC)[1:] if p.startswith("book/") and not p.startswith("book/api/")]


def _first_chapter(part: dict) -> list[dict]:
    """The part's page and its first chapter (the first two entries, or an entry and its first section)."""
    entry = dict(part["chapters"][0])
    if entry.get("sections"):
        entry["sections"] = entry["sections"][:1]
        return [entry]
    return [dict(c) for c in part["chapters"][:2]]


def mini_toc() -> dict:
    """The introduction, every part page and the first chapter of each part, in the book's own parts."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    toc["parts"] = [dict(part, chapters=_first_chapter(part)) for part in toc["parts"]]
    return toc


def small_toc() -> dict:
    """:func:`mini_toc` and a last part with the other pages the tests read (no page twice)."""
    toc = mini_toc()
    present = set(toc_pages(toc))
    more = [p for p in [*PROSE_PAGES, *EXECUTED, *STATEMENT_CHAPTERS] if p not in present]
    more = list(dict.fromkeys(more))
    toc["parts"].append({"caption": "More pages", "numbered": True, "chapters": [{"file": p} for p in more]})
    return toc


def build(work: Path) -> Path:
    """Build :func:`small_toc` into ``work``, executing only :data:`EXECUTED`; its ``html`` folder."""
    toc = small_toc()
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    config["execute"]["execute_notebooks"] = "cache"
    others = [p for p in toc_pages(toc) if p.startswith("notebooks/") and p not in EXECUTED]
    config["execute"]["exclude_patterns"] = [f"{p}.ipynb" for p in others]
    local = config.get("sphinx", {}).get("local_extensions") or {}
    config["sphinx"]["local_extensions"] = {name: str(ROOT / path) for name, path in local.items()}
    (work / "_config.yml").write_text(yaml.safe_dump(config))
    (work / "_toc.yml").write_text(yaml.safe_dump(toc))
    proc = subprocess.run(
        [sys.executable, "-c", "from jupyter_book.cli.main import main; main()", "build", str(ROOT),
         "--toc", str(work / "_toc.yml"), "--config", str(work / "_config.yml"), "--path-output", str(work)],
        capture_output=True, text=True, timeout=900,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
             "DPKIT_PROGRESS": "0", "MPLBACKEND": "Agg"})
    html = work / "_build" / "html"
    assert proc.returncode == 0 and (html / "index.html").exists(), proc.stdout[-3000:] + proc.stderr[-3000:]
    return html
