"""Speed of DP-ST: privatization per document, and end to end with the local LM.

Prints, on health-news tweets (one document at a time, after a warm-up):

* privatization per document (extraction with spaCy, near-duplicate removal,
  MiniLM embedding of the triples, nearest centroid, exponential mechanism),
  median and 90th percentile, for both tie-breaking scorers of the dedup step
  (``lm``: the local LM's perplexity, the default; ``unigram``: wordfreq), and
  for both variants; target: under 50 ms per document on the 2-core CPU;
* end to end (privatization + reconstruction by the local LM with the Table 3
  prompt at a fixed ``--max-new-tokens``), per document; target: under 5 s.

The public corpus is loaded from the cache (built on first use, not timed).
Run: ``python benchmarks/dpst_speed.py [--docs 40] [--e2e-docs 3] [--k 50] [--json out.json]``.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from dpkit import runtime


def _timed(fn, items):
    """Wall-clock and process CPU seconds per item (CPU time is what a busy shared machine
    distorts least; with one thread it approximates the wall time on an idle core)."""
    wall, cpu = [], []
    for item in items:
        start, start_cpu = time.perf_counter(), time.process_time()
        fn(item)
        wall.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    return np.asarray(wall), np.asarray(cpu)


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=40)
    parser.add_argument("--e2e-docs", type=int, default=3)
    parser.add_argument("--k", type=int, default=50)
    parser.add_argument("--epsilon", type=float, default=10.0)
    parser.add_argument("--max-new-tokens", type=int, default=48)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    runtime.setup()

    from dpkit.data import load_health_tweets
    from dpkit.dpst import DPST, load_public_corpus, load_parser
    from dpkit.dpst.reconstruct import reconstruct
    from dpkit.models.embed import load_embedder
    from dpkit.models.lm import load_lm
    from dpkit.backends import get_backend

    corpus = load_public_corpus(k=args.k)
    texts = list(load_health_tweets(n_classes=4, max_per_class=args.docs, seed=args.seed, test_fraction=0.5).test_texts)[: args.docs]
    load_parser(), load_embedder(), load_lm()
    rng = np.random.default_rng(args.seed)
    results = {"documents": len(texts), "k": corpus.k, "public_triples": len(corpus),
               "threads": int(os.environ.get("DPKIT_THREADS", runtime.default_threads())),
               "epsilon": args.epsilon}
    print(f"corpus: {len(corpus)} public triples, k={corpus.k}; {len(texts)} tweets, "
          f"mean {np.mean([len(t.split()) for t in texts]):.1f} words")
    for variant in ("neighbourhood", "document"):
        for scorer in ("lm", "unigram"):
            dpst = DPST(corpus, args.epsilon, variant, scorer=scorer)
            dpst.privatize(texts[0], rng)  # warm-up
            t, c = _timed(lambda x: dpst.privatize(x, rng), texts)
            key = f"privatize_{variant}_{scorer}"
            results[key + "_median_ms"] = float(np.median(t) * 1e3)
            results[key + "_p90_ms"] = float(np.quantile(t, 0.9) * 1e3)
            results[key + "_cpu_median_ms"] = float(np.median(c) * 1e3)
            print(f"privatization per document [{variant:13s}, dedup ties by {scorer:7s}]: "
                  f"median {np.median(t)*1e3:7.1f} ms, p90 {np.quantile(t, 0.9)*1e3:7.1f} ms wall; "
                  f"median {np.median(c)*1e3:7.1f} ms CPU  (target < 50 ms)")
    backend = get_backend("local", cache=False)
    dpst = DPST(corpus, args.epsilon, "neighbourhood")
    reconstruct([dpst.privatize(texts[0], rng)], backend, max_new_tokens=args.max_new_tokens)  # warm-up
    t, c = _timed(lambda x: reconstruct([dpst.privatize(x, rng)], backend, max_new_tokens=args.max_new_tokens),
                  texts[: args.e2e_docs])
    results["end_to_end_median_s"] = float(np.median(t))
    results["end_to_end_max_s"] = float(np.max(t))
    results["end_to_end_cpu_median_s"] = float(np.median(c))
    results["max_new_tokens"] = args.max_new_tokens
    results["load_average_1min"] = os.getloadavg()[0]
    print(f"end to end with the local LM ({args.max_new_tokens} new tokens max): median {np.median(t):.2f} s, "
          f"max {np.max(t):.2f} s wall; median {np.median(c):.2f} s CPU per document  (target < 5 s)")
    print(f"load average while measuring: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores "
          "(other processes inflate wall times)")
    if args.json:
        runtime.write_results(args.json, results)
    return results


if __name__ == "__main__":
    main()
