"""The README's API commands, parsed from README.md and run as written against the loopback server.

The block under "Going further" (API models) sets the environment with an
``export`` line and runs ``dpkit generate ... --public``. Here the export line's variables
are used as given (the key ``...`` becomes the loopback's key, and ``OPENAI_BASE_URL``, the
README's variable for a compatible server, points at 127.0.0.1), the generate line runs
unchanged, and the server's log must hold exactly the declared-public prompts. Without
``--public`` the same command is refused before anything is written or sent. (The block's
papermill line runs in tests/test_guard_end_to_end.py with the smoke sizes.)
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
from loopback_api import LoopbackAPI

ROOT = Path(__file__).resolve().parents[1]
PROMPTS = ["Write a haiku about autumn leaves.", "Name three prime numbers."]


def api_block() -> list[str]:
    """The commands of the README's bash block that switches to an API model (comments dropped)."""
    blocks = re.findall(r"```bash\n(.*?)```", (ROOT / "README.md").read_text(encoding="utf-8"), flags=re.S)
    block = [b for b in blocks if "-p backend openai" in b]
    assert len(block) == 1, "the README's API block moved"
    return [line.split("#")[0].strip() for line in block[0].splitlines() if line.split("#")[0].strip()]


def readme_environment(api) -> dict[str, str]:
    export = next(line for line in api_block() if line.startswith("export "))
    variables = dict(item.split("=", 1) for item in shlex.split(export)[1:])
    assert variables["DPKIT_BACKEND"] == "openai" and variables["OPENAI_API_KEY"] == "..."
    variables["OPENAI_API_KEY"] = api.environment()["OPENAI_API_KEY"]
    return {**os.environ, **variables, "OPENAI_BASE_URL": api.environment()["OPENAI_BASE_URL"],
            "NO_PROXY": "127.0.0.1,localhost", "PYTHONPATH": str(ROOT), "DPKIT_PROGRESS": "0"}


def run_line(line: str, cwd: Path, env: dict) -> subprocess.CompletedProcess:
    argv = shlex.split(line)
    assert argv[0] == ".venv/bin/python", line
    argv[0] = sys.executable
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def user_messages(api) -> list[str]:
    return [m["content"] for body in api.bodies for m in json.loads(body)["messages"]]


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # a fresh response cache: every prompt is sent
    (tmp_path / "prompts.txt").write_text("\n".join(PROMPTS) + "\n", encoding="utf-8")
    return tmp_path


def test_the_readme_generate_command_sends_exactly_the_public_prompts(workdir):
    line = next(c for c in api_block() if "dpkit generate" in c)
    assert line == ".venv/bin/python -m dpkit generate prompts.txt --out runs/api --public"
    with LoopbackAPI() as api:
        done = run_line(line, workdir, readme_environment(api))
        assert done.returncode == 0, done.stderr[-2000:]
        assert sorted(user_messages(api)) == sorted(PROMPTS)  # what reached the server, and nothing else
    records = (workdir / "runs" / "api" / "records.jsonl").read_text().splitlines()
    assert len(records) == len(PROMPTS)
    manifest = (workdir / "runs" / "api" / "manifest.json").read_text()
    assert "sk-loopback" not in manifest and "127.0.0.1" in manifest  # the key is never written


def test_without_public_the_command_is_refused_before_anything_is_sent_or_written(workdir):
    line = next(c for c in api_block() if "dpkit generate" in c).replace(" --public", "")
    with LoopbackAPI() as api:
        done = run_line(line, workdir, readme_environment(api))
        assert api.bodies == []
    assert done.returncode == 2 and "--public" in done.stderr and "Traceback" not in done.stderr
    assert not (workdir / "runs").exists()
