"""Benchmark: the block-decomposed iterative step against concatenate-and-project.

Prints the per-sequence time of both implementations at |V| = 1000, L = 10,
d = 384, I = 4096 (logarithmic ensemble), their ratio, and the wall time of
1,000 iterative sequences with the fast step.  Embeddings are random unit
vectors and the "documents" random keyphrase lists: timing does not depend on
the data.  Usage: ``python benchmarks/kps_iterative.py [--naive-sequences 1]``.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vocabulary", type=int, default=1000)
    parser.add_argument("--length", type=int, default=10)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--features", type=int, default=4096)
    parser.add_argument("--sequences", type=int, default=1000)
    parser.add_argument("--naive-sequences", type=int, default=1)
    parser.add_argument("--ensemble", default="logarithmic", choices=["linear", "logarithmic"])
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    from dpkit import runtime
    from dpkit.kps.ensembles import build_ensemble
    from dpkit.kps.sequences import iterative_sequences, naive_iterative_sequences

    runtime.setup()
    rng = np.random.default_rng(args.seed)
    E = rng.standard_normal((args.vocabulary, args.dim)).astype(np.float32)
    E /= np.linalg.norm(E, axis=1, keepdims=True)
    docs = [rng.choice(args.vocabulary, size=args.length, replace=False).tolist() for _ in range(200)]
    start = time.perf_counter()
    ensemble = build_ensemble(docs, E, args.length, 10.0, rng, ensemble=args.ensemble,
                              n_features=args.features)
    build = time.perf_counter() - start

    start = time.perf_counter()
    iterative_sequences(ensemble, E, args.sequences, np.random.default_rng(1))
    fast_total = time.perf_counter() - start
    fast_per_sequence = fast_total / args.sequences

    start = time.perf_counter()
    naive_iterative_sequences(ensemble, E, args.naive_sequences, np.random.default_rng(1))
    naive_per_sequence = (time.perf_counter() - start) / args.naive_sequences

    result = dict(vocabulary=args.vocabulary, L=args.length, d=args.dim, I=args.features,
                  ensemble=args.ensemble, threads=os.environ.get("DPKIT_THREADS", "default"),
                  build_seconds=build, fast_seconds_total=fast_total, n_sequences=args.sequences,
                  fast_seconds_per_sequence=fast_per_sequence, naive_seconds_per_sequence=naive_per_sequence,
                  speedup=naive_per_sequence / fast_per_sequence)
    print(f"|V|={args.vocabulary} L={args.length} d={args.dim} I={args.features} ({args.ensemble} ensemble)")
    print(f"ensemble build: {build:.2f} s")
    print(f"fast   : {args.sequences} sequences in {fast_total:.2f} s ({fast_per_sequence * 1e3:.2f} ms/sequence)")
    print(f"naive  : {naive_per_sequence:.2f} s/sequence (concatenate and project, {args.naive_sequences} sequence(s))")
    print(f"ratio naive/fast per sequence: {result['speedup']:.0f}x")
    return result


if __name__ == "__main__":
    main()
