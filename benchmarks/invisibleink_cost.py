"""Cost per released token of private decoding, InvisibleInk's variant and the seed paper's, as a multiple of
plain (non-private) generation of one text with the same model and runtime, measured in one run.

For each repetition, interleaved: plain generation of ONE text of ``--tokens`` new tokens (end token masked so
the work is fixed; prefill included), then :func:`dpkit.privpred.decode_batch` on a batch of ``--batch`` private
prompts plus the public one with ``variant="invisibleink"`` (DClip norm calibrated so that ``--tokens`` private
tokens fit ``--epsilon``; Top-k+ on the public top ``--top-k``) and with ``variant="amin"`` (the seed paper's
clip-and-recenter, c = 2, tau = 2 as in the comparison preset, same top-k), each capped at ``--tokens`` decoding
steps. Cost = seconds per released token; the multiple = private / plain, median over repetitions. Every figure
is printed with the 1-minute load average (the machine is shared: read multiples, not absolute times).

The issue's target: the variant at most 8x plain generation. The paper reports < 4-8x on GPUs with batched
private rows; on a CPU the private rows' forward passes are the cost, so the multiple grows with s.

Run: ``python benchmarks/invisibleink_cost.py [--runtime llamacpp|torch] [--batch 8] [--tokens 32] [--reps 2]``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import numpy as np  # noqa: E402

from dpkit.privpred.cost import load_average as load, plain_seconds_per_token  # noqa: E402

RECORDS = ["The delivery was late and the box was damaged.", "Great support, they fixed my issue in minutes.",
           "The product stopped working after a week.", "I love the new design, very easy to use.",
           "Billing charged me twice this month.", "Fast shipping and good packaging.",
           "The app keeps crashing when I log in.", "Friendly staff but the refund took too long."]


def prompts(lm, s: int) -> tuple[list[str], str]:
    private = [lm.chat(f"Here is a customer review: \"{RECORDS[i % len(RECORDS)]}\" (#{i}). Write a similar review.")
               for i in range(s)]
    return private, lm.chat("Write a customer review.")


def private_seconds_per_token(lm, private: list[str], public: str, settings) -> tuple[float, int]:
    from dpkit.privpred import decode_batch

    start = time.perf_counter()
    res = decode_batch(lm, private, public, settings, np.random.default_rng(0))
    released = res.private_tokens + res.public_tokens
    return (time.perf_counter() - start) / max(1, released), released


def settings_for(variant: str, args):
    from dpkit.privacy.invisibleink import calibrated_clip
    from dpkit.privpred import DecodeSettings

    if variant == "invisibleink":
        clip, tau = calibrated_clip(args.epsilon, 1e-6, args.batch, 1.0, args.tokens), 1.0
    else:
        clip, tau = 2.0, 2.0
    return DecodeSettings(expected_batch_size=args.batch, clip=clip, temperature=tau, max_private_tokens=args.tokens,
                          max_new_tokens=args.tokens, max_steps=args.tokens, top_k=args.top_k, variant=variant)


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runtime", choices=("llamacpp", "torch"), default=None,
                        help="default: dpkit's choice (llama.cpp on a CPU where installed)")
    parser.add_argument("--batch", type=int, default=8, help="private prompts per batch, s")
    parser.add_argument("--tokens", type=int, default=32, help="new tokens per text")
    parser.add_argument("--top-k", type=int, default=10)
    parser.add_argument("--epsilon", type=float, default=4.0, help="InvisibleInk's budget (sets C)")
    parser.add_argument("--reps", type=int, default=2)
    parser.add_argument("--json", default=None, help="also write the measurements here")
    args = parser.parse_args(argv)

    from dpkit.privpred import resolve_local_lm, runtime_name

    lm = resolve_local_lm(None, args.runtime)
    private, public = prompts(lm, args.batch)
    print(f"runtime {runtime_name(lm)}, s = {args.batch}, {args.tokens} tokens, top-k {args.top_k}, "
          f"InvisibleInk epsilon {args.epsilon:g}; load {load()} at start", flush=True)
    plain_seconds_per_token(lm, public, 4)   # warm-up: model and contexts
    rows = []
    for rep in range(args.reps):
        row = {"load_before": load()}
        row["plain_s_per_token"] = plain_seconds_per_token(lm, public, args.tokens)
        for variant in ("invisibleink", "amin"):
            sec, released = private_seconds_per_token(lm, private, public, settings_for(variant, args))
            row[f"{variant}_s_per_token"], row[f"{variant}_released"] = sec, released
            row[f"{variant}_multiple"] = sec / row["plain_s_per_token"]
        row["load_after"] = load()
        rows.append(row)
        print(f"rep {rep}: plain {row['plain_s_per_token'] * 1e3:.1f} ms/token; InvisibleInk "
              f"{row['invisibleink_s_per_token'] * 1e3:.1f} ms/token = {row['invisibleink_multiple']:.2f}x "
              f"({row['invisibleink_released']} tokens); seed paper {row['amin_s_per_token'] * 1e3:.1f} ms/token = "
              f"{row['amin_multiple']:.2f}x; load {row['load_before']} -> {row['load_after']}", flush=True)
    summary = {key: statistics.median(r[key] for r in rows)
               for key in ("plain_s_per_token", "invisibleink_multiple", "amin_multiple")}
    print(f"median over {args.reps} repetitions: InvisibleInk {summary['invisibleink_multiple']:.2f}x plain "
          f"generation (target <= 8x: {'met' if summary['invisibleink_multiple'] <= 8 else 'NOT met'}), "
          f"seed paper {summary['amin_multiple']:.2f}x; load average now {load()}")
    out = {"runtime": runtime_name(lm), "args": vars(args), "reps": rows, "summary": summary}
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(out, f, indent=2)
    return out


if __name__ == "__main__":
    main()
