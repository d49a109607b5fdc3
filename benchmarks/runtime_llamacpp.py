"""Tokens per second of the llama.cpp runtime against today's PyTorch path, measured in one run.

Prints, for the bundled SmolLM2-135M-Instruct (llama.cpp: the shipped Q4_1 GGUF;
PyTorch: the float32 model de-quantized from it), interleaved repetition by
repetition so that both see the same machine load:

* generation, batch 1 and batch 8: ``--tokens`` greedy tokens per row (end tokens
  suppressed, so both do the same work), prefill included; the ratio llama.cpp /
  PyTorch per repetition, then the median;
* private decoding at s in ``--sizes``: ``--pp-tokens`` released tokens of
  :func:`dpkit.privpred.decode_batch` (s private rows plus the public row, dpkit's
  exact private sampler choosing every token, SVT off: every token private, every
  private row cached) on each runtime: PyTorch's ``LocalLM`` and llama.cpp's
  ``LlamaCppPrivateLM`` (:mod:`dpkit.privpred.llamacpp_engine`), prefill included;
  the ratio llama.cpp / PyTorch, and llama.cpp's time per released token over its
  plain generation per token, of the same s + 1 prompts and of batch 1 (target <= 1.3);
* ``--load-test``: llama.cpp batch-1 generation and private decoding at s = 8, with
  dpkit's thread policy and with one thread, first as the machine is, then with
  ``--spinners`` (default 2) busy-loop processes added for a few seconds: the slow-down
  under load (target <= about 2x). The spinners are this script's own children and
  are stopped by their process ids.

The 1-minute load average is printed with every measurement: on a shared machine
every number depends on it. Threads: ``--threads`` for both runtimes (default:
PyTorch as dpkit sets it, ``dpkit.runtime.set_threads``; llama.cpp by its
load-aware policy, :func:`dpkit.models.llamacpp.choose_threads`).

Run: ``python benchmarks/runtime_llamacpp.py [--reps 3] [--tokens 64] [--sizes 8 32] [--threads N]
[--load-test] [--json out.json]``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from contextlib import contextmanager

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import numpy as np  # noqa: E402

SUBJECTS = ["a movie", "a restaurant", "a phone", "a novel", "a video game", "a hotel", "a concert", "a laptop"]
RECORDS = [
    "The soup was cold and the waiter forgot our bread twice.", "Battery lasts two days, camera is mediocre.",
    "I cried at the ending; the lead actor was superb.", "Checkout took forty minutes and the room smelled of smoke.",
    "Great riffs, terrible sound mix in the second half.", "The plot drags but the dialogue is sharp and funny.",
    "Keyboard feels cheap, screen is bright and crisp.", "Levels repeat too often, though the music is lovely.",
]


def load() -> float:
    return round(os.getloadavg()[0], 2)


def review_prompts(n: int) -> list[str]:
    return [f"Write a one-sentence review of {SUBJECTS[i % len(SUBJECTS)]}." for i in range(n)]


def private_prompts(s: int) -> tuple[list[str], str]:
    private = [f"Here is a customer review: \"{RECORDS[i % len(RECORDS)]}\" (#{i}). Write a similar review."
               for i in range(s)]
    return private, "Write a customer review."


# ----------------------------------------------------------------- generation
def torch_generate(lm, texts: list[str], tokens: int) -> float:
    import torch

    batch = lm.encode(texts)
    start = time.perf_counter()
    with torch.inference_mode():
        lm.model.generate(**batch, max_new_tokens=tokens, min_new_tokens=tokens, do_sample=False, temperature=None,
                          top_p=None, top_k=None, pad_token_id=lm.tokenizer.pad_token_id)
    return time.perf_counter() - start


@contextmanager
def llama_threads(threads: int | None):
    """``DPKIT_THREADS`` set to ``threads`` for the block (None: dpkit's policy, choose_threads)."""
    saved = os.environ.get("DPKIT_THREADS")
    if threads:
        os.environ["DPKIT_THREADS"] = str(threads)
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop("DPKIT_THREADS", None)
        else:
            os.environ["DPKIT_THREADS"] = saved


def llama_generate(llm, texts: list[str], tokens: int, threads: int | None) -> float:
    ids = [llm.tokenize(t) for t in texts]
    with llama_threads(threads):
        start = time.perf_counter()
        out = llm.generate_ids(ids, max_new_tokens=tokens, stop_at_end=False)
        elapsed = time.perf_counter() - start
    assert all(len(o) == tokens for o in out)
    return elapsed


# ----------------------------------------------------------------- private decoding
SETTINGS = dict(clip=10.0, temperature=2.0)


def private_settings(s: int, tokens: int):
    from dpkit.privpred import DecodeSettings

    # every private row cached (each runtime's fastest setting); SVT off: every token private
    return DecodeSettings(expected_batch_size=s, max_private_tokens=tokens, max_new_tokens=tokens, max_steps=tokens,
                          private_cache_rows=max(64, s), **SETTINGS)


def private_step(model, private: list[str], public: str, tokens: int, threads: int | None = None) -> float:
    """Seconds per released token of ``dpkit.privpred.decode_batch`` on ``model`` (PyTorch's LocalLM or
    llama.cpp's LlamaCppPrivateLM), prefill and context set-up included."""
    from dpkit.privpred import decode_batch

    with llama_threads(threads):
        start = time.perf_counter()
        res = decode_batch(model, private, public, private_settings(len(private), tokens), np.random.default_rng(0))
        elapsed = time.perf_counter() - start
    return elapsed / max(1, res.private_tokens + res.public_tokens)


# ----------------------------------------------------------------- runs
def median(xs):
    return statistics.median(xs) if xs else float("nan")


def compare(args, lm, llm, plm) -> dict:
    rows: dict[str, list] = {}
    for rep in range(args.reps):
        for batch in (1, 8):
            texts = [llm.chat(p) for p in review_prompts(batch)]
            pair = {}
            order = ("torch", "llama") if rep % 2 == 0 else ("llama", "torch")
            for name in order:
                before = load()
                t = torch_generate(lm, texts, args.tokens) if name == "torch" else \
                    llama_generate(llm, texts, args.tokens, args.threads)
                pair[name] = batch * args.tokens / t
                print(f"rep {rep} b{batch} {name:5s} {pair[name]:7.1f} tok/s  load {before}", flush=True)
            rows.setdefault(f"b{batch}", []).append(pair)
        for s in args.sizes:
            private, public = private_prompts(s)
            pt, pl = [llm.chat(p) for p in private], llm.chat(public)
            before = load()
            step_torch = private_step(lm, pt, pl, args.pp_tokens)
            step_llama = private_step(plm, pt, pl, args.pp_tokens, args.threads)
            plain = llama_generate(llm, pt + [pl], args.pp_tokens, args.threads) / args.pp_tokens
            single = llama_generate(llm, [pl], args.pp_tokens, args.threads) / args.pp_tokens
            print(f"rep {rep} s={s} private step torch {1000 * step_torch:6.0f} ms, llama {1000 * step_llama:6.0f} ms, "
                  f"llama plain (s+1 rows) {1000 * plain:6.0f} ms, llama plain batch 1 {1000 * single:5.0f} ms/token  "
                  f"load {before}", flush=True)
            rows.setdefault(f"s{s}", []).append({"torch": 1 / step_torch, "llama": 1 / step_llama,
                                                 "llama_plain": 1 / plain, "llama_single": 1 / single})
    summary = {}
    print("\nmedian over repetitions (tokens/s; private decoding: released tokens/s):")
    for key, reps in rows.items():
        ratio = median([r["llama"] / r["torch"] for r in reps])
        line = {"torch": median([r["torch"] for r in reps]), "llama": median([r["llama"] for r in reps]),
                "llama_over_torch": ratio}
        text = f"  {key:4s} torch {line['torch']:7.1f}  llama.cpp {line['llama']:7.1f}  ratio {ratio:5.2f}x"
        if "llama_plain" in reps[0]:
            line["private_over_plain_time"] = median([r["llama_plain"] / r["llama"] for r in reps])
            line["private_over_single_time"] = median([r["llama_single"] / r["llama"] for r in reps])
            text += (f"  llama private/plain step time {line['private_over_plain_time']:4.2f} (same s+1 rows), "
                     f"{line['private_over_single_time']:4.2f} (vs batch-1 token)")
        print(text)
        summary[key] = line
    return {"reps": rows, "summary": summary}


def spin(n: int) -> list[subprocess.Popen]:
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]


def load_test(args, llm, plm) -> dict:
    """Batch-1 generation and private decoding at s = 8 (decode_batch on llama.cpp), as the machine is and with
    ``args.spinners`` busy-loop processes added, for dpkit's thread policy and for one thread."""
    from dpkit.models.llamacpp import choose_threads

    texts = [llm.chat(review_prompts(1)[0])]
    private, public = private_prompts(8)
    pt, pl = [llm.chat(p) for p in private], llm.chat(public)
    result = {}
    policies = {"policy": None, "1 thread": 1}
    for phase in ("as is", "busy"):
        children = spin(args.spinners) if phase == "busy" else []
        try:
            if children:
                time.sleep(args.settle)
            for name, threads in policies.items():
                with llama_threads(threads):
                    used = choose_threads()
                b1 = 16 / llama_generate(llm, texts, 16, threads)
                step = private_step(plm, pt, pl, 8, threads)
                result[f"{phase} {name}"] = {"threads": used, "b1_tok_s": b1, "pp_step_ms": 1000 * step,
                                             "load": load()}
                print(f"{phase:5s} {name:8s} ({used} threads): b1 {b1:6.1f} tok/s, private step s=8 "
                      f"{1000 * step:6.0f} ms, load {load()}", flush=True)
        finally:
            for child in children:
                child.kill()
                child.wait()
    for name in policies:
        calm, busy = result[f"as is {name}"], result[f"busy {name}"]
        print(f"  {name}: slow-down with {args.spinners} busy processes  b1 "
              f"{calm['b1_tok_s'] / busy['b1_tok_s']:4.2f}x, private step {busy['pp_step_ms'] / calm['pp_step_ms']:4.2f}x")
    return result


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--tokens", type=int, default=64, help="new tokens per generation row")
    p.add_argument("--pp-tokens", type=int, default=24, help="private decoding steps per measurement")
    p.add_argument("--sizes", type=int, nargs="*", default=[8, 32])
    p.add_argument("--threads", type=int, default=None, help="threads for both runtimes (default: dpkit's policy)")
    p.add_argument("--load-test", action="store_true")
    p.add_argument("--only-load-test", action="store_true")
    p.add_argument("--spinners", type=int, default=2, help="busy-loop processes of the load test")
    p.add_argument("--settle", type=float, default=3.0, help="seconds the spinners run before measuring")
    p.add_argument("--json", default=None)
    args = p.parse_args(argv)

    from dpkit import runtime
    from dpkit.models.llamacpp import choose_threads, load_llamacpp
    from dpkit.privpred.llamacpp_engine import load_private_llamacpp

    runtime.set_offline()
    out = {"load_at_start": os.getloadavg(), "cores": os.cpu_count(), "omp_wait_policy": os.environ["OMP_WAIT_POLICY"]}
    llm = load_llamacpp()
    plm = load_private_llamacpp()
    if not args.only_load_test:
        from dpkit.models.lm import load_lm

        torch_threads = runtime.set_threads(args.threads)
        lm = load_lm(device="cpu")
        out["threads"] = {"torch": torch_threads, "llama": args.threads or f"policy (now {choose_threads()})"}
        print(f"threads: torch {torch_threads}, llama.cpp {out['threads']['llama']}; load {load()}")
        llama_generate(llm, [llm.chat("Hi.")], 4, args.threads)      # warm-up both
        torch_generate(lm, [llm.chat("Hi.")], 4)
        out["compare"] = compare(args, lm, llm, plm)
    if args.load_test or args.only_load_test:
        out["load_test"] = load_test(args, llm, plm)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(out, fh, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
