"""What each held-out set of data/HOLDOUT.md gives away without any private record, beside real data.

For every held-out set (the full split ``benchmarks/heldout_rows.py`` scores on: ``load_dataset(name,
seed=0)``, two labels) this records, on the real test split:

* the **keyword rule** of :data:`dpkit.experiments.label_only.KEYWORD_RULES` (one line per set);
* **zero-shot**: each test text gets the nearer of the label names, and of "a {document type} about
  {label}", in the MiniLM space (no training text);
* the **label-only generator** (:func:`dpkit.experiments.label_only.label_only_texts`): ``--per-class``
  texts per label (default 16, private prediction's release size) from private prediction's public
  prompt alone, in ``--draws`` independent draws (seeds 0, 1, ...), each scored exactly as a release
  (:func:`dpkit.evaluation.evaluate`), with the mean and a Student-t interval over the draws;
* **real data**: all real training rows, and 8 real rows per label (mean and minimum over 10 draws).

Nothing here reads a private record except the real-data rows (the yardstick). Writes
``OUT/summary.json`` (one row per set, with the sizes, the rule's text and the document type),
``OUT/label_only/<set>__draw-<d>.jsonl`` (every label-only text) and ``OUT/provenance.json``
(one entry per invocation: commit, machine, model, runtime, command, sets, times). ``summary.json`` is
written after every set; a rerun with ``--sets`` recomputes those sets and keeps the others (nothing
here is a release).

Run: ``python benchmarks/heldout_baselines.py --out results/heldout-baselines [--sets a,b] [--draws 3]
[--per-class 16] [--smoke]`` (about 8 minutes on the 2-core machine for the seven sets).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

#: The held-out sets of data/HOLDOUT.md, in the order they were chosen.
HELDOUT_SETS = ("medical", "commons_speeches", "online_questions", "everyday_situations", "everyday_problems",
                "general_questions", "short_passages", "question_collections")
REAL_PER_LABEL = 8
REAL_DRAWS = 10


def _ba(result: dict) -> dict:
    b = result["balanced_accuracy"]
    return {"estimate": round(float(b["estimate"]), 4), "low": round(float(b["low"]), 4),
            "high": round(float(b["high"]), 4)}


def measure_set(name: str, backend, embedder, *, draws: int, per_class: int, out: Path, n_bootstrap: int,
                smoke: bool) -> dict:
    from dpkit.data import load_dataset
    from dpkit.evaluation import evaluate, score
    from dpkit.experiments.cells import DOCUMENT_TYPES, N_CLASSES
    from dpkit.experiments.compare import t_interval
    from dpkit.experiments.label_only import KEYWORD_RULES, label_only_texts, label_text, zero_shot

    data = load_dataset(name, n_classes=N_CLASSES.get(name, 2), seed=0,
                        **({"max_per_class": 60} if smoke else {}))
    names = tuple(data.label_names)
    document_type = DOCUMENT_TYPES[name]
    test_texts = list(data.test_texts)
    truth = [names[int(y)] for y in data.test_labels]
    train_texts = list(data.train_texts)
    train_labels = [names[int(y)] for y in data.train_labels]
    x_test = np.asarray(embedder.encode(test_texts), dtype=np.float64)
    x_train = np.asarray(embedder.encode(train_texts), dtype=np.float64)
    row = {"set": name, "document_type": document_type, "labels": list(names), "n_train": len(train_texts),
           "n_test": len(test_texts)}

    rule = KEYWORD_RULES[name]
    row["keyword_rule"] = {**_ba(score(truth, rule.predict(test_texts), n_bootstrap=n_bootstrap)),
                           "rule": f"/{rule.pattern}/ -> {rule.if_match}, else {rule.otherwise}",
                           "source": rule.source}
    for key, anchors in (("zero_shot_label", [label_text(n) for n in names]),
                         ("zero_shot_document", [f"a {document_type} about {label_text(n)}" for n in names])):
        predicted = [names[i] for i in zero_shot(x_test, anchors, embedder)]
        row[key] = {**_ba(score(truth, predicted, n_bootstrap=n_bootstrap)), "anchors": anchors}

    row["real_all_rows"] = _ba(evaluate(train_texts, train_labels, test_texts, truth, train_features=x_train,
                                        test_features=x_test, n_bootstrap=n_bootstrap))
    rng = np.random.default_rng(0)
    small = []
    for _ in range(REAL_DRAWS):
        chosen = [int(i) for k in names for i in rng.choice([j for j, y in enumerate(train_labels) if y == k],
                                                            REAL_PER_LABEL, replace=False)]
        small.append(evaluate([train_texts[i] for i in chosen], [train_labels[i] for i in chosen], test_texts, truth,
                              train_features=x_train[chosen], test_features=x_test,
                              n_bootstrap=0)["balanced_accuracy"]["estimate"])
    row["real_8_per_label"] = {"mean": round(float(np.mean(small)), 4), "min": round(float(np.min(small)), 4),
                               "draws": REAL_DRAWS}

    scores, started = [], time.perf_counter()
    folder = out / "label_only"
    folder.mkdir(parents=True, exist_ok=True)
    for d in range(draws):
        texts, index = label_only_texts(backend, document_type, names, per_class, seed=d)
        labels = [names[k] for k in index]
        kept = [(t, y) for t, y in zip(texts, labels) if t.strip()]
        result = evaluate([t for t, _ in kept] or ["(nothing)"], [y for _, y in kept] or [names[0]], test_texts,
                          truth, embedder=embedder, test_features=x_test, n_bootstrap=n_bootstrap, seed=d)
        scores.append(float(result["balanced_accuracy"]["estimate"]))
        with (folder / f"{name}__draw-{d}.jsonl").open("w", encoding="utf-8") as handle:
            for t, y in zip(texts, labels):
                handle.write(json.dumps({"label": y, "text": t}, ensure_ascii=False, sort_keys=True) + "\n")
    mean, low, high = t_interval(scores, bounds=(0.0, 1.0))
    row["label_only"] = {"mean": round(mean, 4), "low": round(low, 4), "high": round(high, 4),
                         "draws": [round(s, 4) for s in scores], "per_class": per_class,
                         "wall_s": round(time.perf_counter() - started, 1)}
    return row


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--sets", default=",".join(HELDOUT_SETS))
    parser.add_argument("--draws", type=int, default=3)
    parser.add_argument("--per-class", type=int, default=16)
    parser.add_argument("--n-bootstrap", type=int, default=1000)
    parser.add_argument("--smoke", action="store_true", help="60 rows per label, 1 draw of 2 texts: seconds")
    args = parser.parse_args(argv)
    from dpkit import runtime
    from dpkit.backends import get_backend
    from dpkit.experiments.provenance import git_commit, machine
    from dpkit.models.embed import load_embedder

    sets = [s.strip() for s in args.sets.split(",") if s.strip()]
    unknown = [s for s in sets if s not in HELDOUT_SETS]
    if unknown:
        print(f"heldout_baselines: --sets={args.sets!r} is invalid: {unknown} are not held-out sets of "
              f"data/HOLDOUT.md ({', '.join(HELDOUT_SETS)})", file=sys.stderr)
        return 2
    draws, per_class = (1, 2) if args.smoke else (args.draws, args.per_class)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    runtime.set_offline()
    runtime.setup()
    backend, embedder = get_backend("local", None), load_embedder()
    created, start = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"), time.perf_counter()
    summary_path = out / "summary.json"  # written after every set: a stopped run keeps what it measured
    stored = json.loads(summary_path.read_text())["sets"] if summary_path.exists() and not args.smoke else []
    rows = [r for r in stored if r["set"] not in sets]
    for name in sets:
        t0 = time.perf_counter()
        rows.append(measure_set(name, backend, embedder, draws=draws, per_class=per_class, out=out,
                                n_bootstrap=args.n_bootstrap, smoke=args.smoke))
        r = rows[-1]
        print(f"{name}: rule {r['keyword_rule']['estimate']:.3f}  zero-shot {r['zero_shot_label']['estimate']:.3f}"
              f"/{r['zero_shot_document']['estimate']:.3f}  label-only {r['label_only']['mean']:.3f} "
              f"{r['label_only']['draws']}  real 8/label {r['real_8_per_label']['mean']:.3f}  real all "
              f"{r['real_all_rows']['estimate']:.3f}  ({time.perf_counter() - t0:.0f} s)", flush=True)
        rows.sort(key=lambda r: HELDOUT_SETS.index(r["set"]))
        summary_path.write_text(json.dumps({"sets": rows}, indent=1, sort_keys=True) + "\n")
    provenance_path = out / "provenance.json"
    earlier = json.loads(provenance_path.read_text()) if provenance_path.exists() and not args.smoke else {}
    runs = [r for r in earlier.get("runs", []) if not set(r.get("sets", [])) <= set(sets)]
    provenance = {"created": created, "sets": sets, "wall_s": round(time.perf_counter() - start, 1), "git_commit": git_commit(),
                  "machine": machine(), "model": backend.model, "runtime": getattr(backend, "runtime", None),
                  "command": " ".join(["python", "benchmarks/heldout_baselines.py", *(argv or sys.argv[1:])]),
                  "smoke": bool(args.smoke), "draws": draws, "per_class": per_class,
                  "note": "references that read no private record (keyword rule, zero-shot, label-only generator), "
                          "beside real data; no release, no privacy spent"}
    provenance_path.write_text(json.dumps({"runs": runs + [provenance]}, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
