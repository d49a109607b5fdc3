"""Figures reach the page and teach: the backend chosen for the environment, captions in the sources.

Inside a Jupyter kernel (JupyterLab, papermill, the book build) the backend must be the
inline one, even when ``MPLBACKEND=Agg`` is inherited from the environment; under ``Agg``
``plt.show()`` draws nothing and the page has no figure. Scripts and tests use ``Agg``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from dpkit import runtime


@pytest.mark.parametrize("requested", [None, "", "Agg", "agg"])
def test_a_kernel_gets_the_inline_backend_even_when_agg_is_inherited(requested):
    assert runtime.choose_matplotlib_backend(True, requested) == runtime.INLINE_BACKEND


def test_a_kernel_keeps_an_interactive_backend_the_user_asked_for():
    assert runtime.choose_matplotlib_backend(True, "module://ipympl.backend_nbagg") == "module://ipympl.backend_nbagg"


@pytest.mark.parametrize("requested, expected", [(None, "Agg"), ("", "Agg"), ("Agg", "Agg"), ("pdf", "pdf")])
def test_scripts_and_tests_get_agg_unless_they_ask_otherwise(requested, expected):
    assert runtime.choose_matplotlib_backend(False, requested) == expected


def test_this_test_process_is_not_a_kernel_and_setup_keeps_agg(monkeypatch):
    monkeypatch.setenv("MPLBACKEND", "Agg")
    assert not runtime.in_notebook_kernel()
    assert runtime.set_matplotlib_backend() == "Agg"


# ------------------------------------------------------------------ figures that teach (sources)
ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def _cells(path: Path) -> list[dict]:
    return json.loads(path.read_text())["cells"]


def _source(cell: dict) -> str:
    return "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]


def figure_cells(path: Path) -> list[dict]:
    """The code cells of a notebook that draw a figure (they end it with ``plt.show()``)."""
    return [c for c in _cells(path) if c["cell_type"] == "code" and "plt.show()" in _source(c)]


PLOTTING = [p for p in NOTEBOOKS if "matplotlib" in p.read_text()]


def test_every_notebook_that_imports_matplotlib_draws_a_figure():
    assert len(PLOTTING) >= 18, [p.stem for p in PLOTTING]
    idle = [p.stem for p in PLOTTING if not figure_cells(p)]
    assert not idle, f"import matplotlib but show no figure: {idle}"


@pytest.mark.parametrize("path", PLOTTING, ids=[p.stem for p in PLOTTING])
def test_every_figure_has_a_caption_a_name_and_a_sentence_that_points_at_it(path):
    """A ``mystnb.figure`` caption and name on the cell, and prose that cites it with ``{numref}``."""
    prose = "\n".join(_source(c) for c in _cells(path) if c["cell_type"] == "markdown")
    problems = []
    for cell in figure_cells(path):
        figure = cell["metadata"].get("mystnb", {}).get("figure", {})
        caption, name = figure.get("caption", ""), figure.get("name", "")
        if len(caption.split()) < 6:
            problems.append(f"cell {cell['id']}: no caption (or a caption of a few words)")
        if not re.fullmatch(r"fig-[a-z0-9-]+", name or ""):
            problems.append(f"cell {cell['id']}: no figure name 'fig-...'")
        elif f"{{numref}}`{name}`" not in prose:
            problems.append(f"cell {cell['id']}: no sentence in the prose cites {{numref}}`{name}`")
        source = _source(cell)
        if re.search(r"\b(?:set_)?[xy]label\(", source) is None:
            problems.append(f"cell {cell['id']}: axes without labels")
    assert not problems, problems


def test_figure_names_are_unique_across_the_book():
    names = [c["metadata"]["mystnb"]["figure"]["name"] for p in PLOTTING for c in figure_cells(p)
             if c["metadata"].get("mystnb", {}).get("figure", {}).get("name")]
    assert len(names) == len(set(names)), sorted(n for n in set(names) if names.count(n) > 1)


def _displays_more_than_the_figure(source: str) -> bool:
    """True when a figure cell also displays something: a bare expression as its last statement (a table, a
    number) or a ``display(...)`` call. myst-nb gives every displayed output of a named figure cell the figure's
    target, so the page gets two targets of one name (a ``-W`` build fails: "Duplicate explicit target name")."""
    import ast

    tree = ast.parse("\n".join(line for line in source.splitlines() if not line.lstrip().startswith(("%", "!"))))
    last = tree.body[-1] if tree.body else None
    call = last.value.func if isinstance(last, ast.Expr) and isinstance(last.value, ast.Call) else None
    quiet = call is not None and (getattr(call, "attr", "") == "show" or getattr(call, "id", "") == "print")
    bare = isinstance(last, ast.Expr) and not quiet  # print writes a stream, not a displayed output
    shown = any(isinstance(n, ast.Call) and getattr(n.func, "id", "") == "display" for n in ast.walk(tree))
    return bare or shown


@pytest.mark.parametrize("path", PLOTTING, ids=[p.stem for p in PLOTTING])
def test_a_named_figure_cell_displays_only_its_figure(path):
    offenders = [cell["id"] for cell in figure_cells(path)
                 if cell["metadata"].get("mystnb", {}).get("figure") and _displays_more_than_the_figure(_source(cell))]
    assert not offenders, f"figure cells that also display a table or value (move it to its own cell): {offenders}"
