"""The local backend on the real bundled model (slow: loads SmolLM2)."""

from __future__ import annotations

import json

import pytest

from dpkit.backends import PrivateTextError, ResponseCache, get_backend
from dpkit.privacy.marks import Public
from dpkit.runs import Run, generate_records

pytestmark = pytest.mark.slow

PROMPTS = {"a": Public("Name a colour."), "b": Public("Say hello."), "c": Public("What is rain?")}


@pytest.fixture(scope="module")
def backend():
    from dpkit import runtime

    runtime.setup()
    return get_backend("local", cache=False, batch_size=4)


def test_greedy_generation_is_deterministic_and_seeded_sampling_repeats(backend):
    first = backend.generate(PROMPTS["a"], max_new_tokens=4)
    assert isinstance(first, str) and first
    assert backend.generate(PROMPTS["a"], max_new_tokens=4) == first
    sampled = backend.generate_batch(list(PROMPTS.values()), max_new_tokens=4, temperature=1.0, seed=3)
    assert backend.generate_batch(list(PROMPTS.values()), max_new_tokens=4, temperature=1.0, seed=3) == sampled
    assert backend.describe()["device"] in ("cpu", "cuda:0", "cuda")


def test_private_text_is_allowed_locally_but_not_in_strict_mode(backend):
    assert backend.generate("a private sentence about a patient", max_new_tokens=3)
    strict = get_backend("local", cache=False, strict=True)
    strict._lm = backend.lm
    with pytest.raises(PrivateTextError):
        strict.generate("a private sentence about a patient", max_new_tokens=3)


def test_cache_serves_a_rerun_without_the_model(backend, tmp_path):
    cached = get_backend("local", cache=ResponseCache(tmp_path), batch_size=4)
    cached._lm = backend.lm
    texts = cached.generate_batch(list(PROMPTS.values()), max_new_tokens=5)
    cached._lm = None                      # a rerun must not need the model at all
    cached.model_request = "/nonexistent/model"
    assert cached.generate_batch(list(PROMPTS.values()), max_new_tokens=5) == texts
    assert cached.requests == 3 and cached.cache.hits == 3


def test_interrupted_local_run_resumes_to_the_uninterrupted_output(backend, tmp_path):
    settings = dict(max_new_tokens=5, seed=0)
    whole = generate_records(Run(tmp_path / "whole", params=settings), backend, PROMPTS, **settings)
    part = Run(tmp_path / "part", params=settings)
    key, prompt = next(iter(part.pending(PROMPTS)))
    part.append(key, {"text": backend.generate(prompt, **settings)})      # then the "crash"
    resumed = generate_records(Run(tmp_path / "part", params=settings), backend, PROMPTS, **settings)
    assert resumed == whole
    lines = (tmp_path / "part" / "records.jsonl").read_text().splitlines()
    assert [json.loads(l)["key"] for l in lines] == ["a", "b", "c"]


def test_generate_command_resumes(tmp_path, capsys):
    from dpkit.cli import main

    prompts = tmp_path / "prompts.txt"
    prompts.write_text("Name a fruit.\n\nSay hi.\n")
    args = ["generate", str(prompts), "--out", str(tmp_path / "run"), "--max-new-tokens", "4", "--no-cache"]
    assert main(args) == 0
    assert capsys.readouterr().out.count("record line") == 2
    assert main(args) == 0
    assert "record line" not in capsys.readouterr().out                   # nothing regenerated
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["status"] == "complete" and manifest["params"]["n_prompts"] == 2
    prompts.write_text("Name a vegetable.\n\nSay hi.\n")                 # same name, same count, edited
    assert main(args) == 2
    assert "prompts_sha256" in capsys.readouterr().err


@pytest.mark.parametrize("extra,needle", [
    (["--max-new-tokens", "0"], "max_new_tokens"), (["--temperature", "nan"], "temperature"),
    (["--temperature", "-1"], "temperature"), (["--batch-size", "0"], "--batch-size"),
    (["--seed", "-1"], "seed"), (["--backend", "nosuch"], "nosuch"),
    (["--model", "/nonexistent/model"], "--model"),
])
def test_generate_command_bad_arguments_exit_2_and_write_nothing(tmp_path, capsys, extra, needle):
    from dpkit.cli import main

    prompts = tmp_path / "prompts.txt"
    prompts.write_text("Name a fruit.\n")
    out = tmp_path / "run"
    assert main(["generate", str(prompts), "--out", str(out), *extra]) == 2
    err = capsys.readouterr().err
    assert needle in err and "Traceback" not in err and not out.exists()


def test_generate_command_bad_files_exit_2(tmp_path, capsys):
    from dpkit.cli import main

    binary = tmp_path / "binary.txt"
    binary.write_bytes(b"\xff\xfe\x00bad")
    blank = tmp_path / "blank.txt"
    blank.write_text("\n \n")
    afile = tmp_path / "afile"
    afile.write_text("x")
    for prompts, out, needle in [(tmp_path / "missing.txt", tmp_path / "r1", "existing text file"),
                                 (binary, tmp_path / "r2", "not UTF-8"), (blank, tmp_path / "r3", "non-blank"),
                                 (blank.with_name("p.txt"), afile, "")]:
        if prompts.name == "p.txt":
            prompts.write_text("Name a fruit.\n")
            needle = "is a file"
        assert main(["generate", str(prompts), "--out", str(out)]) == 2
        assert needle in capsys.readouterr().err
        assert out == afile or not out.exists()
