"""DP fine-tuning's reference that reads no record, scored exactly as the releases of ``heldout_rows.py``.

For a folder written by ``benchmarks/heldout_rows.py --methods ft`` (its ``provenance.json`` names the
public label set, document type and epsilon; its ``train.csv`` and ``test.csv`` are the split), each
repeat writes :func:`dpkit.methods.ft.public_path_texts` (the bundled model with the adapters as
initialised: the same prefixes, sampling, redraw rule and ``n_per_class`` as ``dpkit synth ft``'s
defaults, no training step, no record read) to ``OUT/rep-R/ft_public/release/synthetic.jsonl`` and
scores it with the same command as the releases::

    python -m dpkit evaluate --synthetic <...>/synthetic.jsonl --test test.csv --real train.csv \
        --text-column text --label-column label --json

Rows (``method`` ``ft_public``) are appended to ``OUT/results.jsonl`` as they finish; a rerun skips the
repeats already recorded. The texts are seeded by the repeat (they read no private data, so they are
not a release and need no fresh entropy).

Run: ``python benchmarks/ft_public_path.py --split results/heldout-collections-ft
--out results/heldout-collections-ft-public [--repeats 3]``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from dpkit.backends import get_backend
from dpkit.experiments.provenance import git_commit, machine
from dpkit.methods import ft

sys.path.insert(0, str(Path(__file__).resolve().parent))
from heldout_rows import evaluate_command, record_invocation  # noqa: E402  (a sibling script: the same
#                                                                  scoring command and provenance rule)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", type=Path, required=True, help="a heldout_rows.py folder (provenance and CSVs)")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--repeats", type=int, default=1)
    args = parser.parse_args(argv)
    provenance = json.loads((args.split / "provenance.json").read_text())
    labels, document_type = tuple(provenance["labels"]), provenance["document_type"]
    config = ft.Config(epsilon=float(provenance["epsilon"]), document_type=document_type)
    args.out.mkdir(parents=True, exist_ok=True)
    results = args.out / "results.jsonl"
    done = {json.loads(line)["repeat"] for line in results.read_text().splitlines()
            if line.strip()} if results.exists() else set()
    record_invocation(args.out / "provenance.json", {
        "commit": git_commit(), **machine(), "split": str(args.split), "labels": list(labels),
        "document_type": document_type, "n_per_class": config.n_per_class, "repeats": args.repeats,
        "time": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "command": " ".join([Path(sys.argv[0]).name, *(argv if argv is not None else sys.argv[1:])])})
    backend = get_backend("local", None)
    for repeat in range(args.repeats):
        if repeat in done:
            continue
        start = time.perf_counter()
        texts = ft.public_path_texts(labels, config, backend, np.random.SeedSequence(repeat))
        wall = time.perf_counter() - start
        release = args.out / f"rep-{repeat}" / "ft_public" / "release" / "synthetic.jsonl"
        release.parent.mkdir(parents=True, exist_ok=True)
        release.write_text("".join(json.dumps(t) + "\n" for t in texts))
        proc = subprocess.run(evaluate_command(release, args.split / "train.csv", args.split / "test.csv"),
                              capture_output=True, text=True, check=True)
        row = {"method": "ft_public", "repeat": repeat, "status": 0, "wall_s": round(wall, 1),
               "evaluation": json.loads(proc.stdout)}
        with results.open("a") as handle:
            handle.write(json.dumps(row) + "\n")
        ba = row["evaluation"]["balanced_accuracy"]
        print(f"rep {repeat} ft_public wall {wall:.0f} s balanced accuracy {ba['estimate']:.3f} "
              f"[{ba['low']:.3f}, {ba['high']:.3f}]", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
