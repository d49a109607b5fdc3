"""Private prediction with unclipped logits against repeated-word canaries, stored with its provenance.

    .venv/bin/python -m dpkit.audit.release.pp_unclipped --out results/audit-release-pp-unclipped

Both pipelines run at one public configuration, claimed ``epsilon = 1`` at ``delta = 1e-6``: a small clip
(``c = 0.025``), ``s = 1``, ``tau = 0.25`` (so ``c / (s tau) = 0.1``: a cap of 4 private tokens), the full
vocabulary as candidates (``top_k = None``: a rare word is never among the public row's top-k) and many
batches per label (most canaries alone in their batch). The correct pipeline clips every row to
``[-c, c]``; the broken one (:func:`dpkit.audit.release.zoo.pp_unclipped_logits`) averages the raw logits,
so a canary alone in its batch is decoded at ``1 / (s tau) = 4`` times the model's sharpness.
Canaries: :func:`~dpkit.audit.release.canaries.repeated_word_canaries`; scorer ``ngram`` (is the canary's
word in the release). Written: ``OUT/runs.json`` (one row per audit) and ``OUT/provenance.json``.

Measured (2-core shared CPU, about 125 s per audit at the defaults): a canary alone in its batch writes its
word about a third of the time under the broken pipeline, never under the correct one. The one-run bound
needs the top-24 guess plan right in 23 or 24 guesses (bound 1.05 to 1.47 > 1): 96 canaries (about 48
included, 13 to 20 words found) refuted the claim in 1 of 3 seeds; 192 canaries (the default) give about
34 words, a margin of ten. At the pp defaults for ``epsilon = 1`` (``c = 2``, ``s = 16``) the raw logits
divided by ``s tau = 16`` are near uniform over the vocabulary (a canary's word tokens at log-probability
about -10, measured on six words, not run as an audit), and with the default top-50 the word is not a
candidate at all: the broken pipeline's leak shows only where ``1 / (s tau)`` is large and ``c`` small.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from dpkit.audit.release import zoo
from dpkit.audit.release.audit import audit_release
from dpkit.audit.release.canaries import repeated_word_canaries
from dpkit.audit.release.tightness import _commit
from dpkit.data.tables import label_set, read_table
from dpkit.io import atomic_write_text
from dpkit.methods import Records

CONFIG = {"clip": 0.01, "temperature": 0.1, "expected_batch_size": 1.0, "top_k": None}
CLAIM = (1.0, 1e-6)
SAMPLE = Path(__file__).resolve().parents[3] / "tests" / "data" / "own_data_small.csv"


def background(rows: int) -> Records:
    table = read_table(SAMPLE, "text", "label")
    return Records.from_strings(table.texts[:rows], table.labels[:rows], label_set(table.labels, None),
                                declared=False)


def audit_pp(broken: bool, m: int, seed: int, n_batches: int, rows: int = 3) -> dict:
    """One audit of (broken or correct) private prediction with ``m`` repeated-word canaries."""
    records = background(rows)
    changes = dict(CONFIG, n_batches=n_batches)
    make = zoo.pp_unclipped_logits if broken else (lambda eps, **kw: zoo.method("pp", eps, **kw))
    canaries = repeated_word_canaries(m, np.random.default_rng([seed, 7]), records.label_set)
    result = audit_release(make(CLAIM[0], seed=seed, **changes), records, canaries=canaries,
                           claimed_epsilon=CLAIM[0], claimed_delta=CLAIM[1], seed=[seed, 3], scorers=("ngram",))
    scores, included = result.scores["ngram"], result.included
    return {"pipeline": "pp_unclipped_logits" if broken else "pp", "canaries": m, "seed": seed,
            "n_batches": n_batches, "background_records": rows, "claimed_epsilon": CLAIM[0],
            "claimed_delta": CLAIM[1], "bound": result.epsilon_lower_bound, "verdict": result.verdict,
            "guesses": result.guesses, "correct_guesses": result.correct_guesses,
            "tpr_at_fpr_1": result.tpr_at_fpr_1, "auroc": result.auroc, "included": int(included.sum()),
            "words_found_included": int(scores[included].sum()), "words_found_excluded": int(scores[~included].sum()),
            "seconds": result.seconds, "config": changes}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="results/audit-release-pp-unclipped")
    parser.add_argument("--canaries", type=int, default=192)
    parser.add_argument("--n-batches", type=int, default=96, help="batches per label")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    args = parser.parse_args(argv)
    start = time.perf_counter()
    rows = [audit_pp(broken, args.canaries, seed, args.n_batches) for seed in args.seeds for broken in (True, False)]
    for row in rows:
        print(json.dumps({k: v for k, v in row.items() if k != "config"}), flush=True)
    provenance = {"commit": _commit(), "machine": platform.machine(), "cpu_count": os.cpu_count(),
                  "python": platform.python_version(),
                  "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                  "command": "python -m dpkit.audit.release.pp_unclipped " + " ".join(sys.argv[1:]),
                  "seconds": round(time.perf_counter() - start, 1)}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for name, payload in (("runs", rows), ("provenance", provenance)):
        atomic_write_text(out / f"{name}.json", json.dumps(payload, indent=1, sort_keys=True, default=str) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
