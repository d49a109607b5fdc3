"""``dpkit synth`` at its default sizes on a 1,000-row file: wall time per method, as a user runs it.

Writes ``--rows`` labelled health-news tweets (two outlets, the bundled data, a
fixed seeded draw) to a CSV, then runs, one after the other,

    python -m dpkit synth METHOD --input rows.csv --text-column text \
        --label-column label --epsilon 4 --seed 0 --out <tmp>/METHOD

for each method with nothing else changed (the method's default sizes; the
local model on the default runtime), and prints per method: exit status, wall
time, CPU time of the child, records released, the ratio wall / target and the
machine's load average before and after. The target is 15 minutes per method on
the 2-core CPU. ``--timeout`` stops a method that runs past it (reported as
such, not as a time). Each method runs with a dpkit cache of its own that links
the prepared models and the DP-ST public corpus of ``$DPKIT_CACHE`` (or
``~/.cache/dpkit``) but not its LLM response cache, so no generation is served
from an earlier run. The run is seeded, so it is NOT a DP release: this
measures speed only.

Run: ``python benchmarks/synth_rows.py [--rows 1000] [--methods kps,pp,dpst] [--timeout 1800] [--json out.json]``.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET_S = 15 * 60


def write_rows(path: Path, rows: int, seed: int = 0) -> int:
    """``rows`` tweets of the two largest outlets (about half each) as ``text,label``; returns the count written."""
    from dpkit.data import load_health_tweets

    data = load_health_tweets(n_classes=2, max_per_class=rows, test_fraction=0.2, seed=seed)
    names = data.label_names
    per_label = {0: rows // 2 + rows % 2, 1: rows // 2}
    pairs = []
    for text, label in zip(data.train_texts, data.train_labels):
        if per_label[int(label)] > 0:
            per_label[int(label)] -= 1
            pairs.append((text, label))
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["text", "label"])
        for text, label in pairs:
            writer.writerow([text, names[int(label)]])
    return len(pairs)


def released(folder: Path) -> int | None:
    """Records in the run's release (its JSONL lines), None when there is none."""
    files = sorted((folder / "release").glob("*.jsonl")) if (folder / "release").is_dir() else []
    if not files:
        return None
    return sum(1 for f in files for line in f.read_text().splitlines() if line.strip())


def cache_without_responses(folder: Path) -> Path:
    """A dpkit cache at ``folder`` holding links to every entry of the user's cache but its response cache."""
    from dpkit import runtime

    folder.mkdir(parents=True, exist_ok=True)
    for entry in runtime.cache_dir().iterdir():
        if entry.name != "responses" and not (folder / entry.name).exists():
            (folder / entry.name).symlink_to(entry)
    return folder


def run_method(method: str, csv_path: Path, out: Path, timeout: float) -> dict:
    command = [sys.executable, "-m", "dpkit", "synth", method, "--input", str(csv_path), "--text-column", "text",
               "--label-column", "label", "--epsilon", "4", "--seed", "0", "--out", str(out)]
    load_before = os.getloadavg()[0]
    cpu_before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    try:
        env = {**os.environ, "DPKIT_CACHE": str(cache_without_responses(out.parent / f"cache-{method}"))}
        proc = subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env)
        status, tail = proc.returncode, (proc.stderr or proc.stdout)[-300:]
    except subprocess.TimeoutExpired:
        status, tail = "timeout", f"stopped after {timeout:.0f} s"
    wall = time.perf_counter() - start
    cpu_after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (cpu_after.ru_utime - cpu_before.ru_utime) + (cpu_after.ru_stime - cpu_before.ru_stime)
    return {"method": method, "status": status, "wall_s": round(wall, 1), "cpu_s": round(cpu, 1),
            "released": released(out), "wall_over_target": round(wall / TARGET_S, 3),
            "load_before": round(load_before, 2), "load_after": round(os.getloadavg()[0], 2),
            "tail": tail.strip().splitlines()[-1] if status != 0 and tail.strip() else ""}


def main(argv=None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1000)
    parser.add_argument("--methods", default="kps,pp,dpst")
    parser.add_argument("--timeout", type=float, default=2 * TARGET_S)
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    results = []
    with tempfile.TemporaryDirectory(prefix="dpkit-synth-bench-") as tmp:
        csv_path = Path(tmp) / "rows.csv"
        n = write_rows(csv_path, args.rows)
        print(f"{n} rows of health-news tweets (2 outlets) in {csv_path.name}; target {TARGET_S} s per method")
        print(f"{'method':8} {'status':>8} {'wall s':>8} {'cpu s':>8} {'released':>9} {'wall/target':>12} load")
        for method in [m.strip() for m in args.methods.split(",") if m.strip()]:
            row = run_method(method, csv_path, Path(tmp) / method, args.timeout)
            row["rows"] = n
            results.append(row)
            print(f"{method:8} {str(row['status']):>8} {row['wall_s']:>8.1f} {row['cpu_s']:>8.1f} "
                  f"{str(row['released']):>9} {row['wall_over_target']:>12.3f} "
                  f"{row['load_before']:.1f}->{row['load_after']:.1f} {row['tail']}", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    return results


if __name__ == "__main__":
    main()
