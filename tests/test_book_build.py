"""A rebuild of the book executes no notebook whose code did not change.

``make book`` executes the notebooks through jupyter-cache (``execute_notebooks: cache``),
which keys each notebook by its code cells (source and cell metadata) and its kernelspec
and keeps the executed copies in ``_build/.jupyter_cache``. The rebuild budget (a rebuild
with no notebook changed within 3 minutes) holds only while the build uses that cache,
keeps it where ``make clean-book`` is the one step that removes it, and no step of
``make book`` clears it or forces every notebook to run again.
"""

from __future__ import annotations

import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def _recipe(target: str) -> str:
    """The shell lines of ``target`` in the Makefile."""
    text = (ROOT / "Makefile").read_text()
    found = re.search(rf"^{re.escape(target)}:[^\n]*\n((?:\t[^\n]*\n)+)", text, re.M)
    assert found, f"the Makefile has no '{target}' target"
    return found.group(1)


def test_the_book_executes_its_notebooks_through_the_cache():
    execute = yaml.safe_load((ROOT / "_config.yml").read_text())["execute"]
    assert execute["execute_notebooks"] == "cache", execute
    # no cache path, or one inside the build folder (the default is _build/.jupyter_cache)
    assert str(execute.get("cache") or "_build").startswith("_build"), execute
    # notebooks run in notebooks/, where their relative data paths point
    assert execute["run_in_temp"] is False, execute


def test_make_book_never_clears_the_cache_or_forces_execution():
    recipe = _recipe("book")
    assert "jupyter-book build" in recipe, recipe
    for forbidden in ("rm ", "clean", "jcache", "--all", "-E", "force"):
        assert forbidden not in recipe, f"the book recipe contains {forbidden!r}: {recipe}"


def test_only_clean_book_removes_the_build():
    assert "rm -rf _build" in _recipe("clean-book")
