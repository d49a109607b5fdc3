"""Every command of the README runs as shown; every command of the docs/ pages is one the tools accept.

The README's shell commands are read from its ``bash`` blocks. Each one is run here, at smoke sizes
(a notebook gets ``-p smoke True``), in a fresh folder that holds the repository's data/ and
notebooks/, or is named below as run by another test file that runs it exactly as written:

* the "Your own data" block: ``tests/test_readme_own_data.py`` (every method end to end);
* the API block: ``tests/test_readme_api.py`` (``dpkit generate``) and
  ``tests/test_guard_end_to_end.py`` (the papermill line), against a loopback server;
* ``make book`` and ``make test`` are not run from a test: they set up and run everything
  (``make test`` is the command that runs this file).

The docs/ pages show commands that need a cluster, an API key, hours or a GPU. Those are checked
without running them: a ``dpkit`` line must parse with dpkit's own argument parser, a papermill
line must name an existing notebook and only parameters of its ``parameters`` cell, a
``python benchmarks/...`` line an existing script, a ``make`` line a Makefile target.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import test_readme_api
import test_readme_own_data

from dpkit.methods import METHOD_NAMES

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = sorted((ROOT / "docs").glob("*.md"))
BIN = Path(sys.executable).parent


def commands(page: Path) -> list[str]:
    """The shell commands of a page's ``bash`` blocks: continuation lines joined, comments dropped."""
    found = []
    for block in re.findall(r"```bash\n(.*?)```", page.read_text(encoding="utf-8"), re.S):
        for line in block.replace("\\\n", " ").splitlines():
            line = " ".join(line.split("#")[0].split())  # as tests/test_readme_api.py reads its block
            if line:
                found.append(line)
    return found


def covered_elsewhere() -> dict[str, str]:
    """README command -> the test file that runs it as written."""
    own = {c: "tests/test_readme_own_data.py" for c in test_readme_own_data.readme_commands()}
    api = {c: "tests/test_readme_api.py and tests/test_guard_end_to_end.py" for c in test_readme_api.api_block()}
    return {**own, **api}


def run_here() -> list[str]:
    return [c for c in commands(README) if c not in covered_elsewhere() and not c.startswith("make ")]


def test_every_readme_command_is_run_here_or_by_a_named_test():
    shown = commands(README)
    assert len(shown) >= 10
    elsewhere = covered_elsewhere()
    for command in shown:
        assert command in elsewhere or command.startswith("make ") or command in run_here(), command
    # the other files run what they claim: each of their commands is one the README shows
    assert set(elsewhere) <= set(shown)
    # the own-data test picks each line by a word; every line of the block is picked by one
    words = [f"dpkit synth {m} " for m in METHOD_NAMES] + ["dpkit evaluate ", "papermill "]
    assert {test_readme_own_data.command(w) for w in words} == set(test_readme_own_data.readme_commands())
    assert [c for c in shown if c.startswith("make ")] == ["make book", "make test"]


def in_fresh_folder(tmp_path: Path, command: str) -> subprocess.CompletedProcess:
    for name in ("data", "notebooks"):
        (tmp_path / name).symlink_to(ROOT / name)
    argv = shlex.split(command)
    assert argv[0].startswith(".venv/bin/"), command
    argv[0] = str(BIN / argv[0].removeprefix(".venv/bin/"))
    if Path(argv[0]).name == "papermill":
        argv += ["-p", "smoke", "True"]  # the smoke sizes
    env = {**os.environ, "PYTHONPATH": str(ROOT), "DPKIT_PROGRESS": "0"}
    return subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.slow
@pytest.mark.parametrize("command", run_here())
def test_the_readme_command_runs_as_shown(tmp_path, command):
    done = in_fresh_folder(tmp_path, command)
    assert done.returncode == 0, f"{command}\n{done.stderr[-3000:]}"
    assert "Traceback" not in done.stderr
    if "--json" in command:
        json.loads(done.stdout)
    if "papermill" in command and "results_path" in command:
        out = shlex.split(command)[shlex.split(command).index("results_path") + 1]
        assert json.loads((tmp_path / out).read_text())  # the notebook wrote its key numbers
    if "--plan" in command:
        assert "no data read" in done.stdout and "guarantee:" in done.stdout


# --------------------------------------------------------------------------------------- docs/
def docs_commands() -> list[tuple[str, str]]:
    return [(page.name, c) for page in DOCS for c in commands(page)]


def notebook_parameters(path: Path) -> set[str]:
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    cell = next(c for c in cells if "parameters" in c.get("metadata", {}).get("tags", []))
    return set(re.findall(r"^([A-Za-z_]\w*)\s*(?::[^=]*)?=", "".join(cell["source"]), re.M))


def check_docs_command(command: str) -> str:
    """Check one docs/ command without running it; returns what was checked."""
    argv = shlex.split(command)
    if argv[0] == "export" or argv[0].endswith("/pip") or argv[:2] == ["python3", "-m"] \
            or argv[0].endswith("/jupyter"):
        return "not a dpkit command (environment, install or a Jupyter conversion)"
    if argv[0] == "make":
        assert re.search(rf"^{re.escape(argv[1])}:", (ROOT / "Makefile").read_text(), re.M), command
        return "a Makefile target"
    if argv[0].endswith("python") and argv[1:3] == ["-m", "dpkit"]:
        from dpkit.cli import build_parser

        try:
            build_parser().parse_args(argv[3:])
        except SystemExit as exit:  # argparse's way to refuse
            pytest.fail(f"dpkit refuses the documented command (exit {exit.code}): {command}")
        return "parsed by dpkit's argument parser"
    if argv[0].endswith("python") and argv[1].startswith("benchmarks/"):
        assert (ROOT / argv[1]).exists(), command
        return "an existing benchmark script"
    if argv[0].endswith("papermill"):
        notebook = ROOT / argv[1]
        assert notebook.exists(), command
        given = {argv[k + 1] for k, a in enumerate(argv) if a == "-p"}
        assert given <= notebook_parameters(notebook), (command, given - notebook_parameters(notebook))
        return "an existing notebook and its parameters"
    pytest.fail(f"a docs/ command of an unknown kind: {command}")


@pytest.mark.parametrize("page,command", docs_commands())
def test_every_docs_command_is_one_the_tools_accept(page, command):
    assert check_docs_command(command)


def test_the_docs_checker_refuses_a_wrong_flag_and_a_wrong_parameter():
    with pytest.raises(pytest.fail.Exception, match="refuses"):
        check_docs_command(".venv/bin/python -m dpkit synth kps --epsilon 4 --no-such-flag")
    with pytest.raises(AssertionError):
        check_docs_command(".venv/bin/papermill notebooks/kps_end_to_end.ipynb o.ipynb -p no_such_parameter 1")
