"""Peak memory and wall time of a private-prediction release against the private size of one hash batch.

Duplicates hash into the same batch, so a batch's size is private and unbounded.
Decoding used to run all of a batch's prompts as one padded forward pass (about
31 MB more per 256-token record: privacy-2 finding F2), so enough duplicates
could exhaust memory and abort a started release. Now every private row is
decoded on its own (:mod:`dpkit.privpred.private_rows`): identical prompts once,
at most ``private_cache_rows`` distinct prompts with a key / value cache and the
others recomputed ``private_chunk_rows`` at a time; memory is bounded by those
public numbers. Target: a batch of 400 identical records releases with a peak
resident memory within 300 MB of a batch of 1.

Each size runs in its own subprocess (peak RSS only grows within a process)
with one torch thread: ``generate_synthetic`` on the bundled model, one batch
(``n_batches=1``, one label), records of 250 words cut to the pipeline's
``max_record_tokens`` (256), smoke-size decoding (``max_new_tokens`` 6, at most
two examples). ``--distinct`` makes every record different (record ``i``
starts with its number), which defeats the de-duplication: memory is then bound
by the cache and chunk sizes, and time grows with the rows recomputed per step.

Measured (2026-11-25, the shared 2-core CPU box under other jobs, nice 10, one thread, SmolLM2-135M
float32): 1 record, peak RSS 1020 MB (492 MB after loading the model), release 5.8 s; 400 identical
records, peak RSS 1020 MB, 7.0 s: target met (0 MB above). Before (privacy-2 F2, decode_batch alone,
256-token records): 0.96 GB at 1 record, 1.97 GB at 32, 128 unfinished after 400 s. ``--distinct``
with 16 cached rows and chunks of 8 (the default then): 1 record 1023 MB, 9.1 s; 64 distinct records
1403 MB (380 MB above, the cache and chunk bound: about 13 MB per 276-position row cache), 2022 s at
about a fifth of one core -- the 48 rows beyond the cache are recomputed at every step.
Lower ``private_cache_rows`` / ``private_chunk_rows`` lower that bound; neither changes the output.
The default is now 64 cached rows (about 0.85 GB of caches at most): with 16, a book chapter whose
hash batches held more than 16 distinct prompts (expected size 16) recomputed the overflow at every
step and took more than 15 minutes instead of about 2.

Run: ``python benchmarks/pp_batch_memory.py [--sizes 1 400] [--distinct] [--json out.json]``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time

TARGET_MB = 300.0


def child(n: int, distinct: bool) -> dict:
    from dpkit import runtime

    runtime.setup(1)
    from dpkit.models import load_lm
    from dpkit.privpred import PrivatePredictionConfig, generate_synthetic, get_template

    lm = load_lm()
    loaded_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    body = "word " * 250
    records = [f"{i} {body}" if distinct else body for i in range(n)]
    config = PrivatePredictionConfig(epsilon=4.0, delta=1e-6, expected_batch_size=8, clip=2.0, temperature=1.0,
                                     top_k=20, max_new_tokens=6, max_examples_per_batch=2)
    start = time.perf_counter()
    result = generate_synthetic(records, get_template("sentiment"), config, labels=[0] * n,
                                label_names=["positive"], n_batches=1, model=lm, seed=0)
    seconds = time.perf_counter() - start
    return {"n": n, "distinct": distinct, "seconds": round(seconds, 2),
            "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
            "rss_after_model_load_mb": round(loaded_mb, 1), "examples": len(result.examples),
            "private_tokens": result.stats["private_tokens"],
            "private_cache_rows": config.settings().private_cache_rows,
            "private_chunk_rows": config.settings().private_chunk_rows}


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1, 400])
    parser.add_argument("--distinct", action="store_true", help="distinct records (no de-duplication)")
    parser.add_argument("--json", default=None)
    parser.add_argument("--child", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child is not None:
        print(json.dumps(child(args.child, args.distinct)))
        return {}
    env = {**os.environ, "OMP_NUM_THREADS": "1", "DPKIT_THREADS": "1", "MKL_NUM_THREADS": "1",
           "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    rows = []
    for n in args.sizes:
        out = subprocess.run([sys.executable, __file__, "--child", str(n)] + (["--distinct"] if args.distinct else []),
                             capture_output=True, text=True, env=env)
        if out.returncode != 0:
            raise SystemExit(f"size {n} failed:\n{out.stderr[-2000:]}")
        row = json.loads(out.stdout.strip().splitlines()[-1])
        rows.append(row)
        print(f"n={n:4d} ({'distinct' if args.distinct else 'identical'} records): peak RSS {row['peak_rss_mb']:.0f} MB"
              f" (after model load {row['rss_after_model_load_mb']:.0f} MB), release {row['seconds']:.1f} s, "
              f"{row['examples']} examples, {row['private_tokens']} private tokens")
    base = rows[0]["peak_rss_mb"]
    growth = max(r["peak_rss_mb"] for r in rows) - base
    verdict = growth <= TARGET_MB
    print(f"largest peak above n={rows[0]['n']}: {growth:.0f} MB (target <= {TARGET_MB:.0f} MB): "
          f"{'met' if verdict else 'NOT met'}")
    results = {"rows": rows, "growth_mb": round(growth, 1), "target_mb": TARGET_MB, "met": verdict}
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)
    return results


if __name__ == "__main__":
    main(sys.argv[1:])
