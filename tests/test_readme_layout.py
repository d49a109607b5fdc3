"""The README is read in five minutes: at most 250 lines, its sections in a fixed order, and every
path and link it (or a docs/ page) shows exists.

A newcomer looks for three things: how to install and run it, how to run it on their own data, and
where things are. All three start within the first 100 lines. Results, timings and long how-to
material live in results/README.md and docs/*.md; the README points to them.
"""

import re
from pathlib import Path

from dpkit.methods import METHOD_NAMES

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
MAX_LINES = 250
#: the README's sections, in this order (title of each ``## `` heading)
SECTIONS = ["Who it is for", "The two commands", "Your own data", "Where things are", "Going further"]
#: what "Going further" must give a pointer to: (topic named in the paragraph's bold opening, page it links)
FURTHER = [("GPU", "docs/gpu.md"), ("API models", "docs/api-models.md"), ("Ray", "docs/ray.md"),
           ("larger local model", "docs/qwen.md"), ("make results", "results/README.md"),
           ("Auditing", "docs/auditing.md")]
PAGES = [README, ROOT / "results" / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def lines() -> list[str]:
    return README.read_text(encoding="utf-8").splitlines()


def headings() -> dict[str, int]:
    """``## `` heading -> its 1-based line number."""
    return {line[3:].strip(): k for k, line in enumerate(lines(), 1) if line.startswith("## ")}


def section(title: str) -> str:
    text = README.read_text(encoding="utf-8")
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start:end if end >= 0 else len(text)]


def test_the_readme_has_at_most_250_lines():
    assert len(lines()) <= MAX_LINES, f"README.md has {len(lines())} lines; move detail to docs/ or results/README.md"


def test_the_sections_come_in_order():
    assert list(headings()) == SECTIONS


def test_install_own_data_and_layout_start_within_the_first_100_lines():
    found = headings()
    for title in ("The two commands", "Your own data", "Where things are"):
        assert found[title] <= 100, (title, found[title])


def test_the_two_commands_are_make_book_and_make_test_and_ci_runs_make_test():
    block = re.search(r"```bash\n(.*?)```", section("The two commands"), re.S).group(1)
    assert [line.split("#")[0].strip() for line in block.splitlines()] == ["make book", "make test"]
    assert "this is what .ci/run calls" in block
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert ci[-1].strip() == "make test"
    makefile = (ROOT / "Makefile").read_text()
    for target in ("book", "test", "results", "model-qwen"):
        assert re.search(rf"^{re.escape(target)}:", makefile, re.M), target


def test_own_data_lists_every_registered_method_once():
    listed = re.findall(r"^- `([a-z_]+)`, ", section("Your own data"), re.M)
    assert len(listed) == len(set(listed)) and set(METHOD_NAMES) <= set(listed)
    for name in listed:  # a method being added is listed once its module exists
        assert (ROOT / "dpkit" / "methods" / f"{name}.py").exists(), name


def test_going_further_points_each_topic_to_its_page():
    text = section("Going further")
    paragraphs = [p for p in text.split("\n\n") if p.startswith("**")]
    for topic, page in FURTHER:
        paragraph = next((p for p in paragraphs if topic in p.split("**")[1]), None)
        assert paragraph is not None, f"no paragraph on {topic}"
        assert f"]({page})" in paragraph, (topic, page)


def test_every_room_of_dpkit_is_on_the_map_and_every_mapped_path_exists():
    table = section("Where things are").split("The rooms of `dpkit/`")[1]
    mapped = {name.rstrip("/") for row in table.splitlines() if row.startswith("| `")
              for name in re.findall(r"`([a-z_]+(?:\.py|/))`", row.split("|")[1])}
    rooms = {p.name for p in (ROOT / "dpkit").iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    modules = {p.name for p in (ROOT / "dpkit").glob("*.py") if not p.name.startswith("__")}
    expected = rooms | {m.removesuffix(".py") for m in modules}
    assert {m.removesuffix(".py") for m in mapped} == expected
    top = section("Where things are").split("The rooms of `dpkit/`")[0]
    for path in re.findall(r"^\| `([^`]+)` \|", top, re.M):
        assert (ROOT / path).exists(), path


def room_rows() -> list[set[str]]:
    """The rows of the README's room map, top to bottom, each as a set of room names (``validate``, ``audit``)."""
    table = section("Where things are").split("The rooms of `dpkit/`")[1]
    return [{name.removesuffix(".py").rstrip("/") for name in re.findall(r"`([a-z_]+(?:\.py|/))`", row.split("|")[1])}
            for row in table.splitlines() if row.startswith("| `")]


def test_each_room_imports_only_rooms_listed_above_it():
    from test_import_graph import import_graph

    def room(module: str) -> str | None:
        parts = module.split(".")
        return parts[1] if len(parts) > 1 and parts[1] != "__main__" else None

    row_of = {name: k for k, row in enumerate(room_rows()) for name in row}
    wrong = sorted({f"{room(a)} imports {room(b)}" for a, targets in import_graph().items() for b in targets
                    if room(a) and room(b) and room(a) != room(b) and row_of[room(b)] >= row_of[room(a)]})
    assert wrong == [], "the room map's order is not the import order (move a row, or the import): " + \
        "; ".join(wrong)


def test_every_relative_link_of_the_readme_and_the_docs_resolves():
    for page in PAGES:
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", page.read_text(encoding="utf-8")):
            if re.match(r"[a-z]+://", target):
                continue
            assert (page.parent / target).exists(), f"{page.relative_to(ROOT)} links to a missing {target}"


def test_every_backquoted_repository_path_in_the_readme_exists():
    """A path in backquotes that names a file or folder of this repository (not a run's output) exists."""
    text = README.read_text(encoding="utf-8")
    prefixes = ("book/", "notebooks/", "data/", "docs/", "results/", "tests/", "benchmarks/", "dpkit/", ".ci/")
    for path in re.findall(r"`([A-Za-z0-9_./-]+)`", text):
        if path.startswith(prefixes) and "*" not in path:
            assert (ROOT / path).exists(), path
