"""Every command the book shows runs as shown, or is one the tools accept when it cannot run here.

The book's shell commands are read from the ``bash`` blocks of its Markdown pages (``book/*.md``) and of
its chapters' Markdown cells (``notebooks/*.ipynb``). A command that the book writes as ``dpkit ...`` or
``python -m ...`` runs with this interpreter. Each one is run in a fresh folder that holds the
repository's data/ and notebooks/ (a notebook gets ``-p smoke True``), with what the page tells the
reader to bring made small here: ``my_generator.py`` and ``mypackage.generator`` (a generator of one
public sentence per record), ``data.csv`` (the bundled sample) and ``runs/my_run`` (a smoke release).

Three kinds are not run; :data:`NOT_RUN` says why each is left out, and each is still checked the way
``tests/test_readme_commands.py`` checks the docs/ pages (its parser accepts it, the notebook and its
parameters exist, the Makefile has the target, the module is found and its parser takes the flags).
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from test_readme_commands import check_docs_command

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted((ROOT / "book").glob("*.md"))
CHAPTERS = sorted((ROOT / "notebooks").glob("*.ipynb"))
BIN = Path(sys.executable).parent

#: Commands the book shows that a test cannot run, by their start: why not.
NOT_RUN = {
    "make ": "sets up and runs everything (make test is the command that runs this file)",
    "DPKIT_MODEL=": "needs an API key and the network",
    ".venv/bin/python -m dpkit.audit.release.tightness": "the stored study: hours on 2 cores (the chapter re-runs a "
                                                         "slice of it)",
}

#: What the pages tell the reader to bring, made small (file name -> text).
GENERATOR = ("import csv, json, sys\n"
             "rows = list(csv.DictReader(open(sys.argv[1], encoding='utf-8')))\n"
             "with open(sys.argv[2], 'w', encoding='utf-8') as out:\n"
             "    for row in rows:\n"
             "        out.write(json.dumps({'text': 'A short public sentence.'}) + '\\n')\n")
PACKAGE = "def synthesize(records):\n    return [{'text': 'A short public sentence.'} for _ in records]\n"


def _markdown_blocks() -> list[tuple[str, str]]:
    """(page, bash block) for every ``bash`` block of the book's pages and chapters."""
    found = []
    for page in PAGES:
        found += [(page.name, b) for b in re.findall(r"```bash\n(.*?)```", page.read_text(encoding="utf-8"), re.S)]
    for chapter in CHAPTERS:
        for cell in json.loads(chapter.read_text(encoding="utf-8"))["cells"]:
            if cell["cell_type"] == "markdown":
                text = "".join(cell["source"])
                found += [(chapter.name, b) for b in re.findall(r"```bash\n(.*?)```", text, re.S)]
    return found


def as_run_here(line: str) -> str:
    """The book's spelling -> this checkout's: ``dpkit``/``python -m``/``papermill`` through .venv/bin."""
    if line.startswith("dpkit "):
        return ".venv/bin/python -m " + line
    if line.startswith("python "):
        return ".venv/bin/" + line
    if line.startswith("papermill "):
        return ".venv/bin/" + line
    return line


def book_commands() -> list[tuple[str, str]]:
    """(page, command) for every shell command the book shows: continuation lines joined, comments dropped."""
    found = []
    for page, block in _markdown_blocks():
        for line in block.replace("\\\n", " ").splitlines():
            line = " ".join(line.split("#")[0].split())
            if line:
                found.append((page, as_run_here(line)))
    return found


def _not_run(command: str) -> str | None:
    return next((why for start, why in NOT_RUN.items() if command.startswith(start)), None)


def run_here() -> list[tuple[str, str]]:
    return [(page, c) for page, c in book_commands() if _not_run(c) is None]


def test_the_book_shows_commands_and_each_is_run_or_left_out_with_a_reason():
    shown = book_commands()
    assert len(shown) >= 15, shown
    assert len(run_here()) >= 12
    for start in NOT_RUN:  # every exception still names a command the book shows
        assert any(c.startswith(start) for _, c in shown), start


@pytest.mark.parametrize("page,command", [pc for pc in book_commands() if _not_run(pc[1])],
                         ids=lambda value: value[:60] if isinstance(value, str) else value)
def test_a_command_not_run_is_one_the_tools_accept(page, command):
    argv = shlex.split(command)
    while "=" in argv[0] and not argv[0].startswith("."):  # VAR=value prefixes
        argv.pop(0)
    if argv[1:2] == ["-m"] and argv[2].startswith("dpkit."):
        assert importlib.util.find_spec(argv[2]) is not None, command
        done = subprocess.run([sys.executable, "-m", argv[2], *argv[3:], "--help"], cwd=ROOT, capture_output=True,
                              text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)})
        assert done.returncode == 0 and "usage:" in done.stdout, (command, done.stderr[-2000:])
        return
    assert check_docs_command(shlex.join(argv))


def _fresh_folder(tmp_path: Path, command: str) -> None:
    """The repository's data/ and notebooks/, and what the page tells the reader to bring."""
    for name in ("data", "notebooks"):
        (tmp_path / name).symlink_to(ROOT / name)
    (tmp_path / "my_generator.py").write_text(GENERATOR)
    (tmp_path / "mypackage").mkdir()
    (tmp_path / "mypackage" / "__init__.py").write_text("")
    (tmp_path / "mypackage" / "generator.py").write_text(PACKAGE)
    shutil.copy(ROOT / "data" / "own_data_sample.csv", tmp_path / "data.csv")
    if "runs/my_run" in command:  # a finished smoke release to report on
        made = _run(tmp_path, ".venv/bin/python -m dpkit synth kps --input data/own_data_sample.csv --text-column text "
                              "--label-column label --epsilon 4 --smoke --out runs/my_run")
        assert made.returncode == 0, made.stderr[-3000:]


def _run(tmp_path: Path, command: str) -> subprocess.CompletedProcess:
    argv = shlex.split(command)
    assert argv[0].startswith(".venv/bin/"), command
    argv[0] = str(BIN / argv[0].removeprefix(".venv/bin/"))
    if Path(argv[0]).name == "papermill":
        argv += ["-p", "smoke", "True"]  # the smoke sizes
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{tmp_path}", "DPKIT_PROGRESS": "0"}
    return subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=400)


@pytest.mark.slow
@pytest.mark.parametrize("page,command", run_here(), ids=lambda value: value[:60] if isinstance(value, str) else value)
def test_the_book_command_runs_as_shown(tmp_path, page, command):
    _fresh_folder(tmp_path, command)
    done = _run(tmp_path, command)
    assert done.returncode == 0, f"{page}: {command}\n{done.stderr[-3000:]}"
    assert "Traceback" not in done.stderr
    if "--json" in command:
        json.loads(done.stdout)
    if "results_path" in command:
        argv = shlex.split(command)
        assert json.loads((tmp_path / argv[argv.index("results_path") + 1]).read_text())
