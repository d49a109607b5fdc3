"""DP-ST's rewrite with and without the shared few-shot prefix evaluated once (llama.cpp), in one run.

Every rewrite prompt is the same system instruction and three worked examples (about
220 of its about 240 tokens) followed by the document's privatized triples. With
``share_prefix`` the local model evaluates the common part once, keeps its keys and
values, and copies them to every row (:meth:`dpkit.models.llamacpp.LlamaCppLM.prefixed_context`);
without it every prompt is prefilled in full. Both are timed on the same privatized
documents, alternating (off, on, off, on, ...) so that a changing machine load falls on
both; the ratio of the medians is the speed-up. Also counted: texts that differ between the two
(with the shared prefix a row's logits are those of its prompt alone, bit for bit; prompts packed
together in full can differ from that in the last bits, so a few greedy texts may differ).

The documents are health-news tweets privatized by DP-ST (document variant) against the
cached public corpus; privatization is not timed. Run:
``python benchmarks/dpst_rewrite_prefix.py [--docs 16] [--batch-size 8] [--rounds 2] [--json out.json]``.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from dpkit import runtime


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=16)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=2, help="timed passes of each way, alternating")
    parser.add_argument("--k", type=int, default=50)
    parser.add_argument("--epsilon", type=float, default=8.0)
    parser.add_argument("--max-new-tokens", type=int, default=48)
    parser.add_argument("--document-type", default="health news tweet")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    runtime.setup()

    from dpkit.backends import get_backend
    from dpkit.data import load_health_tweets
    from dpkit.dpst import DPST, load_public_corpus
    from dpkit.dpst.reconstruct import reconstruct

    corpus = load_public_corpus(k=args.k)
    texts = list(load_health_tweets(n_classes=4, max_per_class=args.docs, seed=args.seed,
                                    test_fraction=0.5).test_texts)[: args.docs]
    mechanism = DPST(corpus, args.epsilon, "document", scorer="unigram")
    docs = mechanism.privatize_batch(texts, np.random.default_rng(args.seed))
    backend = get_backend("local", cache=False, runtime="llamacpp", batch_size=args.batch_size)
    lm = backend.generator

    def rewrite(share: bool) -> tuple[float, list[str]]:
        lm.share_prefix = share
        start = time.perf_counter()
        out = reconstruct(docs, backend, max_new_tokens=args.max_new_tokens, document_type=args.document_type)
        return (time.perf_counter() - start) / len(docs), out

    rewrite(True)                                     # warm-up (model loaded, contexts made)
    times: dict[bool, list[float]] = {False: [], True: []}
    outputs: dict[bool, list[str]] = {}
    loads = [os.getloadavg()[0]]
    for _ in range(args.rounds):
        for share in (False, True):
            seconds, outputs[share] = rewrite(share)
            times[share].append(seconds)
            loads.append(os.getloadavg()[0])
    lm.share_prefix = True
    before, after = float(np.median(times[False])), float(np.median(times[True]))
    results = {"documents": len(docs), "batch_size": args.batch_size, "max_new_tokens": args.max_new_tokens,
               "rounds": args.rounds, "per_document_s_full_prefill": times[False],
               "per_document_s_shared_prefix": times[True], "speedup": before / after,
               "same_texts": outputs[False] == outputs[True],
               "texts_that_differ": sum(x != y for x, y in zip(outputs[False], outputs[True])),
               "load_average_1min": loads}
    print(f"{len(docs)} documents, batch {args.batch_size}, at most {args.max_new_tokens} new tokens, "
          f"{args.rounds} alternating rounds")
    print(f"per document, every prompt prefilled in full : median {before:.3f} s  {np.round(times[False], 3)}")
    print(f"per document, shared prefix evaluated once   : median {after:.3f} s  {np.round(times[True], 3)}")
    print(f"speed-up (ratio of medians, same run): {before / after:.2f}x; texts that differ: "
          f"{results['texts_that_differ']} of {len(docs)} (a shared-prefix row is its prompt alone, bit for bit; "
          "prompts prefilled together in full may differ from alone in the last bits of the logits)")
    print(f"1-minute load average during the run: {min(loads):.1f}-{max(loads):.1f} on {os.cpu_count()} cores "
          "(other processes inflate both times; the ratio is what carries over)")
    if args.json:
        runtime.write_results(args.json, results)
    return results


if __name__ == "__main__":
    main()
