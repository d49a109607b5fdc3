"""Speed of private decoding (one forward pass per token over s+1 rows, KV cache).

Prints, on the same model and prompts, for s in {8, 32, 64} in one run:

* tokens/s of private decoding (``decode_batch``, SVT on, so both the private
  and the public path are exercised) against a plain batched ``generate`` of
  the same s + 1 prompts (transformers' sampling loop, KV cache), target ratio
  of times <= 1.3;
* against re-encoding the whole prefix at every step (the approach of earlier
  work), at 64 new tokens: the speed-up. Running 64 full re-encodings takes
  minutes on a shared CPU, so by default the re-encoding time is integrated
  from full forward passes timed at 5 prefix lengths (1, 16, 32, 48, 64 new
  tokens; the cost grows about linearly in the prefix), stated as such in the
  output; ``--reencode-full`` times every step instead (``decode_batch(...,
  use_cache=False)``);
* peak memory after each size: the process's peak resident set size so far
  (CPU; it only grows) and, on a GPU, the CUDA peak allocation of that size.

The private decoder runs the public prompt in its own row (its logits must not
depend on the private prompts), so each step is one forward pass over the s
private rows plus one over the public row; ``generate`` makes one pass over
s + 1 rows. Since the grouped steps of :mod:`dpkit.privpred.stepping` the two
passes walk the decoder together, op by op, never sharing an op;
``--model-forward`` also times the decoder as it was before (the model's own
forward, one pass per group). ``--device cuda`` loads the model in bfloat16 on
the GPU (the grouped steps run there unchanged).

Fairness of the comparison: the same model object, dtype and thread count for
both; ``generate`` samples from the full-vocabulary softmax with its default
dynamic cache (``--generate-cache static`` uses transformers' static cache
instead), and both timings include their prefill.

Where the time goes (CPU, SmolLM2-135M float32, one thread of a loaded 2-core
AMD EPYC, s = 8, prompts of 60-93 tokens; cProfile / torch.profiler and timed
parts): before the grouped steps a step was a private pass over 8 rows (about
250 ms) plus a public pass over 1 row (about 120-135 ms) plus about 6 ms for
the rest (SVT distance in float64 over the 49k vocabulary 2 ms, private token
3-5 ms of which most was clipping the whole vocabulary in float64, top-k
0.3-1 ms); one pass over 9 rows takes about 265 ms. The linear layers were 73 %
of the time (cProfile), attention 5 %, the key / value cache's concatenation 2
%, the rest the model's Python. At batch size 1 the linear layers are limited
by reading the 540 MB of float32 weights, so the public row alone cost half a
private pass: (250 + 130) / 265 puts a floor of about 1.4 under the ratio at
s = 8 for two separate passes. Timed linear layers of the model's shapes: 202
ms for 8 rows then 1 row, 150 ms when interleaved weight by weight, 129 ms for
9 rows at once. The grouped steps interleave the two passes op by op (the
weights read for the private rows are re-used from the cache), write keys and
values into preallocated buffers (no concatenation) and skip the model's
per-step mask building: a step at s = 8 then costs about the same as one pass
over 9 rows. At s = 64 the linear layers are bound by arithmetic (the weights
are re-used over 64 rows anyway), the public row adds about its own arithmetic,
and attention over the cache takes about 15 % of the step; there the SVT
distance (float64 softmax over 64 x 49k logits, 16 ms) and the private token
(6 ms with the candidates-only clipping, 19 ms before) are the non-model costs.
torch.compile, measured at s = 8 on the same machine: compiling the RMS norms
alone made a grouped step slower (217 -> 245-259 ms: guards and calls cost more
than the fused arithmetic saves); compiling the model's whole forward
(``dynamic=True``) cut the two separate passes from 240 to 155 ms but took 400 s
to compile on this CPU, longer than a smoke run, and gives the plain
``generate`` the same gain; it is not used. Left as they are: the SVT distance stays float64 over the whole vocabulary
(its rounding is part of the privacy analysis), and the exact sampler works on
the k candidates only.

Since private rows are decoded one row at a time (each its own group of the
grouped steps, so that a row's logits never depend on the other rows, bit for
bit; :mod:`dpkit.privpred.private_rows`), a step reads each weight once per
row instead of once per batch. Measured on the same busy 2-core machine, one
thread, s = 8: a step of 8 one-row groups plus the public row took about 1.0 s
against 0.54 s for one 8-row group plus the public row. That is the price of
exact row independence; this benchmark caches every row (``private_cache_rows
= s``) so that it times the steps, not the recomputation that bounds memory
(``benchmarks/pp_batch_memory.py`` measures that).

"Tokens" are synthetic-text tokens: one per step for private decoding (all
s + 1 rows advance by the same token) and one per step for ``generate`` too
(each of its rows advances by one), so the ratio compares step times.

Run: ``python benchmarks/pp_decoding.py [--tokens 64] [--sizes 8 32 64] [--device cpu|cuda] [--model-forward]
[--generate-cache dynamic|static] [--json out.json]`` (``DPKIT_THREADS=1`` for one thread).
"""

from __future__ import annotations

import argparse
import resource
import sys
import time

import numpy as np
import torch

from dpkit import runtime
from dpkit.models import load_lm
from dpkit.privpred import DecodeSettings, decode_batch, get_template


def _prompts(lm, s: int, seed: int = 0):
    from dpkit.data import load_rotten_tomatoes

    data = load_rotten_tomatoes(max_per_class=max(40, s), seed=seed)
    t = get_template("sentiment")
    texts = [x for x, y in zip(data.train_texts, data.train_labels) if y == 1][:s]
    return [t.render(lm, t.private_message(x, "Positive")) for x in texts], t.render(lm, t.public_message("Positive"))


def _sync(lm) -> None:
    if lm.device.type == "cuda":
        torch.cuda.synchronize(lm.device)


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def time_private(lm, private, public, tokens: int, use_cache: bool = True, grouped: bool = True) -> tuple[float, int]:
    # SVT on with a mid threshold; r and max_steps = tokens so exactly `tokens` steps run
    st = DecodeSettings(expected_batch_size=len(private), clip=10.0, temperature=2.0, max_private_tokens=tokens,
                        max_new_tokens=tokens, svt_threshold=0.8, svt_sigma=0.2, max_steps=tokens, top_k=1024,
                        private_cache_rows=max(1, len(private)))  # every row cached: speed, not the memory bound
    start = time.perf_counter()
    res = decode_batch(lm, private, public, st, np.random.default_rng(0), use_cache=use_cache, grouped_steps=grouped)
    _sync(lm)
    elapsed = time.perf_counter() - start
    return elapsed, res.private_tokens + res.public_tokens


@torch.inference_mode()
def estimate_reencode(lm, private, public, tokens: int, points=(1, 16, 32, 48, 64)) -> float:
    """Seconds for ``tokens`` re-encoding steps, integrated from forward passes at a few prefix lengths."""
    enc = lm.encode(private + [public])
    ids, mask = enc["input_ids"], enc["attention_mask"]
    points = sorted({min(max(1, p), tokens) for p in points})
    seconds = []
    for k in points:
        extra = torch.full((ids.shape[0], k), 42, dtype=ids.dtype)
        full_ids = torch.cat([ids, extra], 1)
        full_mask = torch.cat([mask, torch.ones_like(extra)], 1)
        pos = (full_mask.cumsum(-1) - 1).masked_fill(full_mask == 0, 1)
        start = time.perf_counter()
        lm.model(input_ids=full_ids, attention_mask=full_mask, position_ids=pos, use_cache=False, logits_to_keep=1)
        seconds.append(time.perf_counter() - start)
    return float(np.sum(np.interp(np.arange(1, tokens + 1), points, seconds)))


@torch.inference_mode()
def time_generate(lm, private, public, tokens: int, cache: str = "dynamic") -> tuple[float, int]:
    enc = lm.encode(private + [public])
    extra = {} if cache == "dynamic" else {"cache_implementation": cache}
    torch.manual_seed(0)
    start = time.perf_counter()
    out = lm.model.generate(**enc, do_sample=True, temperature=2.0, top_k=0, top_p=1.0, max_new_tokens=tokens,
                            min_new_tokens=tokens, pad_token_id=lm.tokenizer.pad_token_id, **extra)
    _sync(lm)
    elapsed = time.perf_counter() - start
    return elapsed, int(out.shape[1] - enc["input_ids"].shape[1])


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--sizes", type=int, nargs="+", default=[8, 32, 64])
    parser.add_argument("--device", default=None, help="cpu or cuda (default: cuda when available); cuda runs bf16")
    parser.add_argument("--reencode-sizes", type=int, nargs="+", default=[8])
    parser.add_argument("--reencode-full", action="store_true")
    parser.add_argument("--model-forward", action="store_true",
                        help="also time decoding with the model's own forward, one pass per group (the decoder "
                             "before grouped steps)")
    parser.add_argument("--generate-cache", choices=["dynamic", "static"], default="dynamic",
                        help="the key / value cache of the plain generate baseline")
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    info = runtime.setup()
    lm = load_lm(device=args.device)
    dtype = str(next(lm.model.parameters()).dtype).removeprefix("torch.")
    results = {"device": str(lm.device), "dtype": dtype, "threads": info["threads"], "model": lm.name,
               "tokens": args.tokens, "generate_cache": args.generate_cache, "sizes": {}}
    print(f"model {lm.name} on {lm.device} ({dtype}), {info['threads']} threads, {args.tokens} new tokens, "
          f"generate with a {args.generate_cache} cache")
    for s in args.sizes:
        private, public = _prompts(lm, s)
        time_private(lm, private[:2], public, 4)  # warm-up
        time_generate(lm, private[:2], public, 4, args.generate_cache)
        if lm.device.type == "cuda":
            torch.cuda.reset_peak_memory_stats()
        t_gen, n_gen = time_generate(lm, private, public, args.tokens, args.generate_cache)
        t_priv, n_priv = time_private(lm, private, public, args.tokens)
        row = {"generate_tokens_per_s": n_gen / t_gen, "private_tokens_per_s": n_priv / t_priv,
               "ratio_private_over_generate_time_per_token": (t_priv / n_priv) / (t_gen / n_gen)}
        if args.model_forward:
            t_mf, n_mf = time_private(lm, private, public, args.tokens, grouped=False)
            row["model_forward_tokens_per_s"] = n_mf / t_mf
            row["ratio_model_forward_over_generate_time_per_token"] = (t_mf / n_mf) / (t_gen / n_gen)
        if s in args.reencode_sizes:
            if args.reencode_full:
                t_re, n_re = time_private(lm, private, public, args.tokens, use_cache=False)
            else:
                t_re, n_re = estimate_reencode(lm, private, public, args.tokens), args.tokens
            row["reencode_method"] = "timed" if args.reencode_full else "integrated from 5 prefix lengths"
            row["reencode_tokens_per_s"] = n_re / t_re
            row["speedup_over_reencoding"] = (t_re / n_re) / (t_priv / n_priv)
        if lm.device.type == "cuda":
            row["peak_cuda_mb"] = torch.cuda.max_memory_allocated() / 2 ** 20
            torch.cuda.reset_peak_memory_stats()
        row["peak_rss_mb"] = _rss_mb()
        results["sizes"][str(s)] = row
        print(f"s={s:3d}: private {row['private_tokens_per_s']:.2f} tok/s, generate {row['generate_tokens_per_s']:.2f}"
              f" tok/s, time ratio {row['ratio_private_over_generate_time_per_token']:.2f}"
              + (f", model-forward decoding {row['model_forward_tokens_per_s']:.2f} tok/s (ratio "
                 f"{row['ratio_model_forward_over_generate_time_per_token']:.2f})" if args.model_forward else "")
              + (f", re-encoding {row['reencode_tokens_per_s']:.2f} tok/s (speed-up {row['speedup_over_reencoding']:.1f}x)"
                 if "speedup_over_reencoding" in row else "")
              + f", peak RSS {row['peak_rss_mb']:.0f} MB"
              + (f", peak CUDA {row['peak_cuda_mb']:.0f} MB" if "peak_cuda_mb" in row else ""))
    if args.json:
        runtime.write_results(args.json, results)
    return results


if __name__ == "__main__":
    main(sys.argv[1:])
