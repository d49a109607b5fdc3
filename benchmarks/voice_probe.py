"""Probe: do a method's texts read like the data? Text measures per data set, method, epsilon and seed.

Runs DP-KPS and/or private prediction through :class:`dpkit.experiments.cells.LocalCells`
(the comparison's own cells: the method's ``synthesize``, the project's classifier,
:func:`dpkit.textmetrics.measure_texts` against the real test texts) with the bundled
model, at small public sizes, and prints one table row per cell and its mean over the
seeds: assistant-talk share, share under 3 words, mean words (real), k-NN precision and
recall, real-vs-synthetic AUROC, balanced accuracy. ``--show N`` prints the first N texts
of each label of each cell (a public rule: the first N, not picked).

``--redraw N`` sets DP-KPS's rounds of the public redraw rule (``Config.redraw``; 0: the
first draw only; default: the library's). Each data set is told only its document type (``DOCUMENT_TYPES``; ``--document-type
NAME=TEXT`` overrides one) and is read with its two largest classes.

Usage (nice it; one heavy job at a time on a shared machine)::

    nice -n 10 .venv/bin/python benchmarks/voice_probe.py --datasets medical --methods kps \\
        --epsilons 8,inf --seeds 0,1,2 --per-class 10 --show 2 [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time

import numpy as np

#: The document type each data set is told (public text; nothing else about the data is).
DOCUMENT_TYPES = {"rotten_tomatoes": "one-sentence movie review", "health_tweets": "health news tweet",
                  "medical": "medical exam question", "commons_speeches": "speech in the UK House of Commons"}
COLUMNS = ("assistant_talk", "short_texts", "words_mean", "knn_precision", "knn_recall", "auroc_real_vs_synthetic",
           "balanced_accuracy")
HEAD = ("talk", "<3w", "words", "kNN-P", "kNN-R", "AUROC", "bal.acc")


def _epsilon(text: str) -> float:
    return math.inf if text.strip().lower() in ("inf", "infinity", "∞") else float(text)


def make_cells(args, document_types: dict):
    """LocalCells reading every data set with two classes and telling it ``document_types[name]``."""
    from dpkit.experiments import cells as cells_module
    from dpkit.experiments.compare import Sizes
    from dpkit.experiments.presets import Preset

    sizes = Sizes(per_class=args.per_class, max_new_tokens=args.max_new_tokens, pp_per_class=args.pp_per_class,
                  pp_max_new_tokens=args.pp_max_new_tokens)
    preset = Preset("voice-probe", tuple(args.datasets), tuple(args.epsilons), tuple(args.seeds), sizes,
                    max_per_class=args.max_per_class, test_fraction=args.test_fraction, n_bootstrap=50,
                    methods=tuple(args.methods))

    class TwoClassCells(cells_module.LocalCells):
        def _dataset(self, name):
            if name not in self._data:
                from dpkit.data import load_dataset
                from dpkit.methods import Records

                data = load_dataset(name, n_classes=2, max_per_class=self.preset.max_per_class, seed=0,
                                    test_fraction=self.preset.test_fraction)
                names = tuple(data.label_names)
                records = Records(tuple(data.train_texts), tuple(int(y) for y in data.train_labels), names)
                test_texts, test_labels = list(data.test_texts), [names[int(y)] for y in data.test_labels]
                x_test = np.asarray(self._models()[1].encode(test_texts), dtype=np.float64)
                self._data[name] = (records, test_texts, test_labels, x_test)
            return self._data[name]

    # the cells tell each data set its document type through this public table
    cells_module.DOCUMENT_TYPES.update(document_types)
    if args.redraw is not None:  # DP-KPS's rounds of the public redraw rule (Config.redraw; 0: the first draw)
        from dataclasses import replace

        made = cells_module.configs

        def configs(*a, **k):
            out = made(*a, **k)
            out["kps"] = replace(out["kps"], redraw=args.redraw)
            return out

        cells_module.configs = configs
    return TwoClassCells(preset)


def row(values: dict) -> str:
    return "  ".join(f"{values.get(c, float('nan')):7.3f}" if c != "words_mean" else
                     f"{values.get(c, float('nan')):7.1f}" for c in COLUMNS)


def main(argv=None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", default="health_tweets,rotten_tomatoes,medical")
    parser.add_argument("--methods", default="kps")
    parser.add_argument("--epsilons", default="8,inf")
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--per-class", type=int, default=10)
    parser.add_argument("--max-new-tokens", type=int, default=48)
    parser.add_argument("--pp-per-class", type=int, default=2)
    parser.add_argument("--pp-max-new-tokens", type=int, default=32)
    parser.add_argument("--max-per-class", type=int, default=600)
    parser.add_argument("--test-fraction", type=float, default=1 / 6)
    parser.add_argument("--document-type", action="append", default=[], metavar="NAME=TEXT")
    parser.add_argument("--show", type=int, default=2, help="first N texts per label of each cell")
    parser.add_argument("--redraw", type=int, default=None,
                        help="DP-KPS: rounds of the public redraw rule (default: the library's; 0: the first draw)")
    parser.add_argument("--json", default=None, help="also write every cell (with its texts) to this file")
    args = parser.parse_args(argv)
    args.datasets = [d.strip() for d in args.datasets.split(",") if d.strip()]
    args.methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    args.epsilons = [_epsilon(e) for e in args.epsilons.split(",")]
    args.seeds = [int(s) for s in args.seeds.split(",")]
    types = dict(DOCUMENT_TYPES)
    for item in args.document_type:
        name, _, text = item.partition("=")
        types[name.strip()] = text.strip()

    cells = make_cells(args, types)
    results, table = [], []
    for dataset in args.datasets:
        for method in args.methods:
            for epsilon in args.epsilons:
                per_seed = []
                for seed in args.seeds:
                    start = time.perf_counter()
                    cell = cells(dataset, method, epsilon, seed)
                    values = {**(cell["text_measures"] or {}),
                              **{k: v["estimate"] if isinstance(v, dict) else v for k, v in cell["metrics"].items()}}
                    per_seed.append(values)
                    texts = cell.get("texts", {"texts": [], "labels": []})
                    results.append({"dataset": dataset, "method": method, "epsilon": str(epsilon), "seed": seed,
                                    "document_type": types.get(dataset), "values": values, "texts": texts,
                                    "seconds": time.perf_counter() - start})
                    print(f"{dataset:16s} {method:4s} eps={epsilon:<4g} seed={seed}  {row(values)}"
                          f"  ({time.perf_counter() - start:.0f} s)", flush=True)
                    if args.show:
                        for label in dict.fromkeys(texts["labels"]):
                            shown = [t for t, y in zip(texts["texts"], texts["labels"]) if y == label][:args.show]
                            for t in shown:
                                print(f"    [{label}] {t!r}", flush=True)
                mean = {c: float(np.mean([v.get(c, np.nan) for v in per_seed])) for c in COLUMNS}
                table.append((dataset, method, epsilon, len(per_seed), mean))
    print("\nmeans over seeds (document types: " + ", ".join(f"{d}={types.get(d)!r}" for d in args.datasets) + ")")
    print(f"{'data set':16s} {'meth':4s} {'eps':>4s} {'n':>2s}  " + "  ".join(f"{h:>7s}" for h in HEAD))
    for dataset, method, epsilon, n, mean in table:
        print(f"{dataset:16s} {method:4s} {epsilon:4g} {n:2d}  {row(mean)}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    return results


if __name__ == "__main__":
    sys.exit(main() and 0)
