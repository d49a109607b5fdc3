"""Every method on 1,000 rows of a named data set, as a user runs it, then scored: the issue's targets.

For ``--dataset`` (default ``online_questions``, the held-out set of ``data/HOLDOUT.md``) this
writes ``--rows`` training rows (balanced over the two labels) and the data set's real test
split as CSV files, then for each repeat and method runs

    python -m dpkit synth METHOD --input train.csv --text-column text --label-column label \
        --epsilon 8 --document-type "<the data set's document type>" --out <out>/rep-R/METHOD

with nothing else set (unless ``--set KEY=VALUE`` passes a configuration field to every run): the
method's default sizes, the local model on the default runtime, and
no ``--seed``, so every run is a DP release with noise from fresh OS entropy (each repeat is an
independent release, not a seeded replay). Each run is followed by

    python -m dpkit evaluate --synthetic <run>/release/synthetic.jsonl --test test.csv \
        --real train.csv --text-column text --label-column label --json

and the row of results (exit status, wall time, peak memory, load average before and after, texts released,
balanced accuracy with its bootstrap interval, the real reference, assistant talk, short texts,
k-NN precision/recall, real-vs-synthetic AUROC) is appended to ``<out>/results.jsonl`` at once.
A rerun with the same ``--out`` skips the runs already recorded (it never re-spends a release).
The summary gives per method the mean over repeats with a t interval. The target is 15 minutes
per method on the 2-core machine and 0.65 balanced accuracy.

Run: ``python benchmarks/heldout_rows.py --out DIR [--dataset NAME] [--rows 1000] [--repeats 1]
[--methods kps,pp,dpst] [--epsilon 8] [--timeout 1800] [--smoke] [--set KEY=VALUE ...]``.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

TARGET_S = 15 * 60
TARGET_BA = 0.65


def write_split(dataset: str, rows: int, folder: Path) -> tuple[Path, Path, dict]:
    """``train.csv`` (``rows`` rows, as balanced over the labels as the data allow) and ``test.csv``."""
    from dpkit.data import load_dataset
    from dpkit.experiments.cells import N_CLASSES

    data = load_dataset(dataset, n_classes=N_CLASSES.get(dataset, 2), seed=0)
    names = data.label_names
    by_label = {k: [t for t, y in zip(data.train_texts, data.train_labels) if int(y) == k] for k in range(len(names))}
    share = {k: rows // len(names) + (1 if k < rows % len(names) else 0) for k in by_label}
    train = [(t, names[k]) for k in by_label for t in by_label[k][:share[k]]]
    test = [(t, names[int(y)]) for t, y in zip(data.test_texts, data.test_labels)]
    paths = (folder / "train.csv", folder / "test.csv")
    for path, pairs in zip(paths, (train, test)):
        with path.open("w", newline="") as handle:
            writer = csv.writer(handle)
            writer.writerow(["text", "label"])
            writer.writerows(pairs)
    return paths[0], paths[1], {"train_rows": len(train), "test_rows": len(test), "labels": list(names)}


#: GNU time prints the child's peak resident memory (kB) on stderr after this tag.
PEAK_TAG = "dpkit-peak-rss-kb="


def run(command: list[str], timeout: float, peak: dict | None = None) -> tuple[object, str, float]:
    """Run ``command``; (exit status, stdout or the error's tail, wall seconds). With ``peak`` (and GNU time at
    /usr/bin/time) the child's peak resident memory in MB is stored in ``peak["peak_rss_mb"]``."""
    timed = peak is not None and os.path.exists("/usr/bin/time")
    if timed:
        command = ["/usr/bin/time", "-f", PEAK_TAG + "%M", *command]
    start = time.perf_counter()
    try:
        proc = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return "timeout", f"stopped after {timeout:.0f} s", time.perf_counter() - start
    wall = time.perf_counter() - start
    stderr = proc.stderr
    if timed and PEAK_TAG in stderr:
        stderr, _, kb = stderr.rpartition(PEAK_TAG)
        peak["peak_rss_mb"] = round(int(kb.split()[0]) / 1024, 1)
    return proc.returncode, proc.stdout if proc.returncode == 0 else (stderr or proc.stdout)[-400:], wall


def record_invocation(provenance_path: Path, invocation: dict) -> None:
    """Write ``invocation`` as the folder's provenance; a later call that adds runs keeps the first one's
    provenance and appends its own under ``"later"`` (unless it is the same invocation)."""
    if provenance_path.exists():
        provenance = json.loads(provenance_path.read_text())
        if {k: v for k, v in provenance.items() if k != "later"} != invocation:
            provenance["later"] = provenance.get("later", []) + [invocation]
    else:
        provenance = invocation
    provenance_path.write_text(json.dumps(provenance, indent=1))


def evaluate_command(release: Path, train: Path, test: Path) -> list[str]:
    """``dpkit evaluate`` of a release against the real split (``--json``: the stable format)."""
    return [sys.executable, "-m", "dpkit", "evaluate", "--synthetic", str(release), "--test", str(test),
            "--real", str(train), "--text-column", "text", "--label-column", "label", "--json"]


def one(method: str, repeat: int, args, train: Path, test: Path, document_type: str) -> dict:
    out = args.out / f"rep-{repeat}" / method
    synth = [sys.executable, "-m", "dpkit", "synth", method, "--input", str(train), "--text-column", "text",
             "--label-column", "label", "--epsilon", f"{args.epsilon:g}", "--document-type", document_type,
             "--out", str(out)] + (["--smoke"] if args.smoke else []) + [
                 flag for setting in args.set for flag in ("--set", setting)]
    load_before = os.getloadavg()[0]
    peak: dict = {}
    status, text, wall = run(synth, args.timeout, peak)
    row = {"method": method, "repeat": repeat, "status": status, "wall_s": round(wall, 1),
           "load_before": round(load_before, 2), "load_after": round(os.getloadavg()[0], 2), **peak}
    release = out / "release" / "synthetic.jsonl"
    if status != 0 or not release.exists():
        row["error"] = text.strip().splitlines()[-1] if text.strip() else ""
        return row
    status, text, _ = run(evaluate_command(release, train, test), args.timeout)
    if status != 0:
        row["error"] = f"evaluate: {text.strip()[-200:]}"
        return row
    row["evaluation"] = json.loads(text)
    config = json.loads((out / "release" / "config.json").read_text())
    row["epsilon"], row["delta"] = config.get("epsilon"), config.get("delta")
    row["randomness"] = config.get("randomness")
    return row


def t_interval(values: list[float]) -> tuple[float, float, float]:
    from scipy import stats

    mean = sum(values) / len(values)
    if len(values) < 2:
        return mean, math.nan, math.nan
    sd = (sum((v - mean) ** 2 for v in values) / (len(values) - 1)) ** 0.5
    half = stats.t.ppf(0.975, len(values) - 1) * sd / len(values) ** 0.5
    return mean, mean - half, mean + half


def summarize(rows: list[dict]) -> dict:
    summary = {}
    for method in sorted({r["method"] for r in rows}):
        done = [r for r in rows if r["method"] == method and "evaluation" in r]
        if not done:
            continue
        ba = [r["evaluation"]["balanced_accuracy"]["estimate"] for r in done]
        mean, low, high = t_interval(ba)
        bounds = [None if math.isnan(v) else round(v, 3) for v in (mean, low, high)]  # one run: no t interval
        summary[method] = {"runs": len(done), "balanced_accuracy": bounds,
                           "wall_s": [r["wall_s"] for r in done],
                           "within_15_min": all(r["wall_s"] <= TARGET_S for r in done)}
    return summary


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--dataset", default="online_questions")
    parser.add_argument("--rows", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--methods", default="kps,pp,dpst")
    parser.add_argument("--epsilon", type=float, default=8.0)
    parser.add_argument("--timeout", type=float, default=2 * TARGET_S)
    parser.add_argument("--smoke", action="store_true", help="the methods' smoke sizes (plumbing only)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="passed on to every dpkit synth run (a configuration field; repeatable), e.g. to "
                             "measure a default before it changed: --set no_repeat_ngram=0")
    args = parser.parse_args(argv)
    from dpkit.experiments.cells import DOCUMENT_TYPES

    args.out.mkdir(parents=True, exist_ok=True)
    document_type = DOCUMENT_TYPES.get(args.dataset, "short text")
    train, test, sizes = write_split(args.dataset, args.rows, args.out)
    results_path = args.out / "results.jsonl"
    rows = [json.loads(line) for line in results_path.read_text().splitlines()] if results_path.exists() else []
    done = {(r["method"], r["repeat"]) for r in rows if "evaluation" in r}
    invocation = {
        "commit": subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip(),
        "machine": platform.node(), "cpu_count": os.cpu_count(), "python": platform.python_version(),
        "dataset": args.dataset, "document_type": document_type, "epsilon": args.epsilon, **sizes,
        "methods": args.methods, "repeats": args.repeats, "smoke": args.smoke, "set": args.set}
    record_invocation(args.out / "provenance.json", invocation)
    print(f"{args.dataset}: {sizes['train_rows']} training rows, {sizes['test_rows']} test rows; "
          f"document type {document_type!r}; epsilon {args.epsilon:g}", flush=True)
    for repeat in range(args.repeats):
        for method in [m.strip() for m in args.methods.split(",") if m.strip()]:
            if (method, repeat) in done:
                continue
            row = one(method, repeat, args, train, test, document_type)
            rows = [r for r in rows if (r["method"], r["repeat"]) != (method, repeat)] + [row]
            with results_path.open("a") as handle:
                handle.write(json.dumps(row) + "\n")
            ev = row.get("evaluation", {})
            ba = ev.get("balanced_accuracy", {}).get("estimate")
            tm = ev.get("text_measures", {})
            print(f"rep {repeat} {method:5} status {row['status']} wall {row['wall_s']:.0f} s "
                  f"load {row['load_before']:.1f}->{row['load_after']:.1f} texts {ev.get('n_synthetic')} "
                  f"balanced accuracy {ba if ba is None else round(ba, 3)} (real {ev.get('real', {}).get('balanced_accuracy', {}).get('estimate')}) "
                  f"assistant talk {tm.get('assistant_talk')} short {tm.get('short_texts')} "
                  f"looping {tm.get('looping_texts')} duplicates {tm.get('duplicate_texts')} "
                  f"k-NN P/R {tm.get('knn_precision')}/{tm.get('knn_recall')} AUROC {tm.get('auroc_real_vs_synthetic')} "
                  f"{row.get('error', '')}", flush=True)
    summary = summarize(rows)
    (args.out / "summary.json").write_text(json.dumps(summary, indent=1))
    print(json.dumps(summary, indent=1))
    return summary


if __name__ == "__main__":
    main()
