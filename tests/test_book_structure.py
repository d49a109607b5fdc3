"""The book's table of contents covers the library, and its theorem references resolve.

Cheap checks on the sources (no build): every dpkit subpackage has a page in the API
reference part, and every ``{prf:ref}`` names a ``prf:`` block defined somewhere in the book.
"""

from __future__ import annotations

import pkgutil
import re
from pathlib import Path

import dpkit
import nbformat
import yaml

ROOT = Path(__file__).resolve().parents[1]


def _toc_files() -> list[str]:
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = [toc["root"]]
    for part in toc["parts"]:
        for chapter in part["chapters"]:
            files.append(chapter["file"])
            files.extend(s["file"] for s in chapter.get("sections", []))
    return files


def _sources() -> dict[str, str]:
    texts = {}
    for name in _toc_files():
        md, nb = ROOT / f"{name}.md", ROOT / f"{name}.ipynb"
        if md.exists():
            texts[name] = md.read_text()
        elif nb.exists():
            cells = nbformat.read(nb, as_version=4).cells
            texts[name] = "\n".join(c.source for c in cells if c.cell_type == "markdown")
    return texts


def test_every_toc_entry_exists():
    missing = [name for name in _toc_files()
               if not (ROOT / f"{name}.md").exists() and not (ROOT / f"{name}.ipynb").exists()]
    assert not missing, f"_toc.yml lists files that do not exist: {missing}"


def test_every_subpackage_has_an_api_page():
    documented = set(re.findall(r"\{dpkit-modules\}\s+(dpkit(?:\.\w+)?)", "\n".join(_sources().values())))
    packages = {f"dpkit.{m.name}" for m in pkgutil.iter_modules(dpkit.__path__) if m.ispkg}
    assert packages - documented == set(), f"subpackages without an API page: {sorted(packages - documented)}"
    assert "dpkit" in documented, "the top-level modules have no API page"


def test_every_theorem_reference_resolves():
    texts = _sources()
    labels = set(re.findall(r"```\{prf:\w+\}[^\n]*\n:label: ([\w-]+)", "\n".join(texts.values())))
    assert len(labels) >= 15, labels
    refs = {(page, ref) for page, text in texts.items() for ref in re.findall(r"\{prf:ref\}`([\w-]+)`", text)}
    broken = sorted((page, ref) for page, ref in refs if ref not in labels)
    assert not broken, f"prf:ref to undefined labels: {broken}"


def _code_cells(markdown: str) -> list[str]:
    return [m.split("\n", 1)[1] for m in re.findall(r"```\{code-cell\}[^\n]*\n(.*?)```", markdown, re.S)]


def test_errata_numbers_are_computed_and_every_glue_reference_is_defined(monkeypatch):
    """Run the errata page's code cells (its asserts check each discrepancy) and match its glue."""
    import myst_nb

    page = (ROOT / "book" / "errata.md").read_text()
    glued: dict = {}
    monkeypatch.setattr(myst_nb, "glue", lambda name, value, display=True: glued.__setitem__(name, value))
    namespace: dict = {}
    for source in _code_cells(page):
        body = "\n".join(line for line in source.splitlines() if not line.startswith(":tags:"))
        exec(compile(body, "book/errata.md", "exec"), namespace)
    used = set(re.findall(r"\{glue:text\}`(\w+)", page))
    assert used and used <= set(glued), f"glued nowhere: {sorted(used - set(glued))}"
    assert glued["pp_actual_at_s"] > glued["pp_bound"] and glued["gauss_bad_delta"] > 1e-6


NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def test_chapters_end_with_glued_measurements_and_hide_their_plumbing():
    """A "What we measured" section closes the chapter; every number in it is glued by the page."""
    problems = []
    for path in NOTEBOOKS:
        cells = nbformat.read(path, as_version=4).cells
        closing = [i for i, c in enumerate(cells) if c.cell_type == "markdown" and c.source.startswith("## What we measured")]
        if not closing:
            continue  # chapters are converted one by one; see the test below for which must be
        writer = [c for c in cells if c.cell_type == "code" and "write_results" in c.source]
        if any("remove-cell" not in c.metadata.get("tags", []) for c in writer):
            problems.append(f"{path.stem}: the results writer is visible")
        if closing[-1] != len(cells) - 1:
            problems.append(f"{path.stem}: 'What we measured' is not the last cell")
        used = set(re.findall(r"\{glue:text\}`(\w+)", cells[closing[-1]].source))
        code = "\n".join(c.source for c in cells if c.cell_type == "code")
        glued = set(re.findall(r"^\s+(\w+)=", code, re.M)) & used
        if not used or used - glued:
            problems.append(f"{path.stem}: numbers not glued by the page: {sorted(used - glued) or 'none used'}")
    assert not problems, problems


def test_derivation_chapters_have_their_measurements():
    converted = [p.stem for p in NOTEBOOKS
                 if any(c.cell_type == "markdown" and c.source.startswith("## What we measured")
                        for c in nbformat.read(p, as_version=4).cells)]
    assert {p.stem for p in NOTEBOOKS if p.stem.startswith("dp_")} <= set(converted), converted
