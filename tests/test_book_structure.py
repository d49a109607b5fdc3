"""The book's table of contents covers the library, and its theorem references resolve.

Cheap checks on the sources (no build): every dpkit subpackage has a page in the API
reference part, and every ``{prf:ref}`` names a ``prf:`` block defined somewhere in the book.
"""

from __future__ import annotations

import json
import pkgutil
import re
from pathlib import Path

import dpkit
import nbformat
import yaml
from small_book import toc_pages

ROOT = Path(__file__).resolve().parents[1]


def _toc_files() -> list[str]:
    return toc_pages(yaml.safe_load((ROOT / "_toc.yml").read_text()))


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


def _visible(cell) -> bool:
    return "remove-cell" not in cell.metadata.get("tags", [])


def test_chapters_end_with_glued_measurements_and_hide_their_plumbing():
    """Every chapter closes with prose whose numbers are glued from its executed cells.

    The last visible cell is a markdown section with ``{glue:text}`` references (our
    chapters call it "What we measured"); the results-JSON writer is removed from the page;
    where the names are glued literally, each reference must be glued by the page.
    """
    problems = []
    for path in NOTEBOOKS:
        cells = nbformat.read(path, as_version=4).cells
        writer = [c for c in cells if c.cell_type == "code" and "write_results" in c.source]
        if any(_visible(c) for c in writer):
            problems.append(f"{path.stem}: the results writer is visible")
        last = [c for c in cells if _visible(c)][-1]
        used = set(re.findall(r"\{glue:text\}`(\w+)", last.source)) if last.cell_type == "markdown" else set()
        if not used:
            problems.append(f"{path.stem}: the last visible cell is not prose with glued numbers")
            continue
        code = "\n".join(c.source for c in cells if c.cell_type == "code")
        if 'glue(f"' in code:
            continue  # names built at run time: checked when the book builds (-W)
        glued = set(re.findall(r"^\s+(\w+)=", code, re.M)) | set(re.findall(r"glue\(\s*[\"'](\w+)[\"']", code))
        if used - glued:
            problems.append(f"{path.stem}: numbers not glued by the page: {sorted(used - glued)}")
    assert NOTEBOOKS and not problems, problems


def test_bibliography_keys_are_unique_and_every_citation_resolves():
    bib = (ROOT / "book" / "references.bib").read_text()
    keys = re.findall(r"^@\w+\{([^,\s]+),", bib, re.M)
    assert len(keys) == len(set(keys)), sorted(k for k in set(keys) if keys.count(k) > 1)
    texts = list(_sources().values()) + [p.read_text() for p in (ROOT / "dpkit").rglob("*.py")]
    cited = {k.strip() for t in texts for group in re.findall(r"\{cite(?::\w+)?\}`([^`]+)`", t)
             for k in group.split(",")}
    assert cited and cited <= set(keys), f"cited but not in references.bib: {sorted(cited - set(keys))}"


def test_every_notebook_cell_has_an_id():
    """nbformat 4.5 cells carry ids; a missing one is a warning today and an error in future nbformat."""
    for path in NOTEBOOKS:
        raw = json.loads(path.read_text())  # nbformat's reader would add the missing ids itself
        missing = [i for i, cell in enumerate(raw["cells"]) if "id" not in cell]
        assert not missing, f"{path.name}: cells {missing} have no id"


def test_module_docstring_tables_are_well_formed():
    """The API pages render module docstrings; a malformed table fails the -W book build late."""
    import importlib
    import io

    import docutils.core

    tables = 0
    for info in pkgutil.walk_packages(dpkit.__path__, "dpkit."):
        if info.name.endswith("__main__"):
            continue
        try:
            doc = importlib.import_module(info.name).__doc__ or ""
        except ImportError:  # optional extras (e.g. ray) are checked where they are installed
            continue
        if not re.search(r"^\s*={3,} +={3,}", doc, flags=re.M):
            continue
        tables += 1
        plain = re.sub(r"[:{][a-z:]+[:}]`", "`", doc)  # Sphinx and MyST roles are unknown to docutils
        errors = io.StringIO()
        docutils.core.publish_doctree(plain, settings_overrides={"report_level": 3, "warning_stream": errors})
        assert not errors.getvalue(), f"{info.name}: {errors.getvalue()}"
    assert tables >= 1


def _h1(name: str) -> str:
    md, nb = ROOT / f"{name}.md", ROOT / f"{name}.ipynb"
    text = md.read_text() if md.exists() else "\n".join(
        c.source for c in nbformat.read(nb, as_version=4).cells if c.cell_type == "markdown")
    return next(line[2:].strip() for line in text.splitlines() if line.startswith("# "))


def test_chapters_carry_their_titles_and_numbers():
    """No sidebar entry reads "Overview"; every part but the API reference is numbered."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    titled = [c.get("title") for p in toc["parts"] for c in p["chapters"] if c.get("title")]
    assert "Overview" not in titled and all(_h1(name) != "Overview" for name in _toc_files())
    unnumbered = [p["caption"] for p in toc["parts"] if not p.get("numbered") and p["caption"] != "API reference"]
    assert not unnumbered, f"parts without chapter numbers: {unnumbered}"


def test_the_landing_page_lists_every_chapter_under_a_line_per_part():
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    intro = (ROOT / f"{toc['root']}.md").read_text()
    linked = {(ROOT / "book" / target).resolve() for target in re.findall(r"\{doc\}`(?:[^`<>]*<)?([^`<>]+)>?`", intro)}
    chapters = [c["file"] for p in toc["parts"] if p["caption"] != "API reference" for c in p["chapters"]]
    missing = [name for name in chapters if (ROOT / name).resolve() not in linked]
    assert not missing, f"chapters the landing page does not list: {missing}"
    for part in toc["parts"]:
        line = re.search(rf"\*\*{re.escape(part['caption'])}\*\* — (.+)", intro)
        assert line and len(line.group(1).split()) >= 5, f"no line on the landing page says what {part['caption']!r} teaches"


def test_a_confidence_interval_is_not_continuous_integration():
    from book_voice import builder_talk

    assert builder_talk("balanced accuracy [95% CI]") == []
    assert [hit.split(":")[0] for hit in builder_talk("green on CI")] == ["continuous integration"]


def test_pages_speak_to_readers_not_to_the_builders():
    """No chapter, part page or docstring mentions issues, project targets, to-dos or how the book is made."""
    import importlib

    from book_voice import EVERYWHERE, builder_talk

    found = {}
    for path in NOTEBOOKS:
        text = "\n".join(c["source"] if isinstance(c["source"], str) else "".join(c["source"])
                         for c in json.loads(path.read_text())["cells"])
        found[path.name] = builder_talk(text)
    for path in sorted((ROOT / "book").rglob("*.md")):
        found[path.relative_to(ROOT).as_posix()] = builder_talk(path.read_text())
    for info in pkgutil.walk_packages(dpkit.__path__, "dpkit."):
        if info.name.endswith("__main__"):
            continue
        try:
            module = importlib.import_module(info.name)
        except ImportError:  # optional extras (e.g. ray)
            continue
        docs = [module.__doc__ or ""] + [getattr(obj, "__doc__", None) or "" for obj in vars(module).values()
                                         if getattr(obj, "__module__", None) == info.name]
        source = Path(module.__file__).read_text() if module.__file__ else ""
        docs += [line.strip()[2:] for line in source.splitlines() if line.strip().startswith("#:")]  # autodoc comments
        found[info.name] = builder_talk("\n".join(d for d in docs if isinstance(d, str)), EVERYWHERE)
    found = {k: v for k, v in found.items() if v}
    assert not found, found


def _documented_docstrings():
    """(where, docstring) for what the API pages render: each dpkit module's docstring and its public members'
    (functions, classes, their public methods and properties), as autodoc's ``:members:`` picks them."""
    import importlib
    import inspect

    for info in pkgutil.walk_packages(dpkit.__path__, "dpkit."):
        if info.name.endswith("__main__") or "._" in info.name:
            continue
        try:
            module = importlib.import_module(info.name)
        except ImportError:  # optional extras (e.g. ray) are checked where they are installed
            continue
        yield info.name, module.__doc__ or ""
        for name, member in vars(module).items():
            if name.startswith("_") or getattr(member, "__module__", None) != info.name:
                continue
            if inspect.isfunction(member) or inspect.isclass(member):
                yield f"{info.name}.{name}", inspect.getdoc(member) or ""
            if inspect.isclass(member):
                for attr, value in vars(member).items():
                    if not attr.startswith("_") and (inspect.isfunction(value) or isinstance(value, property)):
                        yield f"{info.name}.{name}.{attr}", inspect.getdoc(value) or ""


def test_api_docstrings_parse_without_warnings():
    """Every docstring the API pages render is valid reStructuredText: a ``|g|`` (a substitution) or a block
    that ends without a blank line fails the -W book build late, after every notebook has run."""
    import io

    import docutils.core

    problems = []
    for where, doc in _documented_docstrings():
        if not doc:
            continue
        # Sphinx and MyST roles are unknown to docutils (not a literal's "``{input}``")
        plain = re.sub(r"(?<!`)(?:\{[a-z-]+\}|:[a-z]+:(?:[a-z]+:)?)`(?!`)", "`", doc)
        errors = io.StringIO()
        docutils.core.publish_doctree(plain, settings_overrides={"report_level": 2, "warning_stream": errors,
                                                                 "halt_level": 5})
        if errors.getvalue():
            problems.append(f"{where}: {errors.getvalue().strip().splitlines()[0]}")
    assert not problems, "\n".join(problems)
