"""End to end, private text reaches an API only through a mechanism (loopback server on 127.0.0.1).

Every private record carries a unique canary string. DP-KPS and DP-ST run at their
smoke defaults through ``dpkit synth --backend openai|anthropic``, with both official
clients pointed at the loopback server by the SDKs' own variables (``OPENAI_BASE_URL``,
``ANTHROPIC_BASE_URL``, ...). Every request body is searched: no canary may arrive.
Private prediction with an API backend is refused (exit 2, with the reason). The
README's API example runs against the same server.
"""

from __future__ import annotations

import csv
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from loopback_api import LoopbackAPI

from dpkit.cli import main

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def canary_data(tmp_path_factory):
    rows = list(csv.DictReader(open(ROOT / "data" / "own_data_sample.csv", encoding="utf-8")))
    folder = tmp_path_factory.mktemp("canary")
    canaries = [f"CANARY{i:03d}Z{os.urandom(5).hex()}" for i in range(len(rows))]
    path = folder / "records.csv"
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["text", "label"])
        for row, canary in zip(rows, canaries):
            writer.writerow([f"{row['text']} Case {canary} was filed by {canary}.", row["label"]])
    return path, canaries


@pytest.fixture
def loopback(monkeypatch):
    with LoopbackAPI() as api:
        for name, value in api.environment().items():
            monkeypatch.setenv(name, value)
        yield api


def _synth(method, backend, data, out):
    return main(["synth", method, "--input", str(data), "--text-column", "text", "--label-column", "label",
                 "--epsilon", "4", "--out", str(out), "--backend", backend, "--smoke"])


@pytest.mark.slow
@pytest.mark.parametrize("method", ["kps", "dpst"])
@pytest.mark.parametrize("backend", ["openai", "anthropic"])
def test_no_canary_reaches_the_api(method, backend, canary_data, loopback, tmp_path):
    data, canaries = canary_data
    assert _synth(method, backend, data, tmp_path / "run") == 0
    assert len(loopback.bodies) > 0                         # the method did talk to the API
    assert loopback.search(canaries) == []                  # and no private record went with it
    released = "".join(p.read_text() for p in (tmp_path / "run" / "release").iterdir())
    assert loopback.search(canaries) == [] and not any(c in released for c in canaries)
    manifest = (tmp_path / "run" / "private" / "manifest.json").read_text()
    assert "sk-loopback-key" not in manifest and "prompts_with_privatized_text" in manifest


@pytest.mark.parametrize("backend", ["openai", "anthropic"])
def test_private_prediction_with_an_api_backend_is_refused(backend, canary_data, loopback, tmp_path, capsys):
    data, _ = canary_data
    assert _synth("pp", backend, data, tmp_path / "run") == 2
    err = capsys.readouterr().err
    assert "--backend" in err and "local" in err and "Traceback" not in err
    assert loopback.bodies == [] and not (tmp_path / "run").exists()


def _readme_command() -> str:
    lines = [line for line in (ROOT / "README.md").read_text().splitlines()
             if "papermill notebooks/kps_end_to_end.ipynb" in line and "-p backend openai" in line]
    assert len(lines) == 1, "the README's API example moved"
    return lines[0].split("#")[0].strip()


@pytest.mark.slow
def test_readme_api_example_runs_against_the_loopback_server(loopback, tmp_path):
    argv = shlex.split(_readme_command())
    assert argv[0].endswith("papermill") and argv[-2:] == ["backend", "openai"]
    notebook = ROOT / argv[1]
    argv = [sys.executable, "-m", "papermill", str(notebook), str(tmp_path / "out.ipynb"), *argv[3:],
            "-p", "smoke", "True", "-p", "results_path", str(tmp_path / "results.json")]   # the smoke sizes
    env = dict(os.environ, DPKIT_PROGRESS="0", PYTHONPATH=str(ROOT))
    done = subprocess.run(argv, cwd=notebook.parent, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert len(loopback.bodies) > 0 and (tmp_path / "results.json").exists()
    assert_only_privatized_prompts(loopback)


def assert_only_privatized_prompts(api) -> None:
    """Every request is a DP-KPS prompt: public template text around keyphrases that are terms of a PUBLIC
    vocabulary (chosen by the private vocabulary's DP release), or a class prompt naming a public label."""
    import json
    import re

    from dpkit.data import english_vocabulary, medical_vocabulary
    from dpkit.kps.vocabulary import PhraseMatcher

    public_terms = (set(PhraseMatcher(english_vocabulary(10_000, remove_stop_words=True)).terms)
                    | set(PhraseMatcher(medical_vocabulary()).terms))
    shapes = (r"Write one (?:new )?(.+?) that uses all of these terms: (?P<terms>.+)\. Reply with the \1 only\.",
              r"Write one (.+?) about [^.]+\. Reply with the \1 only\.",
              r"Write one (?:new )?(?:[^\n]+?) about (?P<terms>[^\n]+)\.")
    messages = [m for body in api.bodies for m in json.loads(body)["messages"]]
    # the voice's public frame (dpkit.models.voice): a system message naming the document type, and the
    # assistant's turn opened with "Here is the <document type>:" and a quotation mark; nothing else may stand
    # beside the DP-KPS prompt
    frame = [m for m in messages if m["role"] in ("system", "assistant")]
    assert all(re.fullmatch(r"You write [^\n]+s\.", m["content"]) for m in frame if m["role"] == "system"), frame
    assert all(re.fullmatch(r'(?:Here is the [^\n]+:\n\n)?"', m["content"]) for m in frame
               if m["role"] == "assistant"), frame
    contents = [m["content"] for m in messages if m["role"] == "user"]
    assert contents, "no prompt reached the API"
    for content in contents:
        match = next((m for m in (re.fullmatch(shape, content, flags=re.S) for shape in shapes) if m), None)
        assert match is not None, "a request that is not a DP-KPS prompt reached the API"
        terms = match.groupdict().get("terms")
        assert terms is None or set(terms.split(", ")) <= public_terms, "a keyphrase outside the public vocabulary"
