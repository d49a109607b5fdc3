"""The tightness study of the release audit: how close one run gets to the truth, for both analyses.

    .venv/bin/python -m dpkit.audit.release.tightness --out results/audit-release-tightness [--runs 20]

Generators whose privacy is known exactly:

* ``randomized_response`` at ``eps`` in {1, 2, 4, 8} (score level: each canary's
  score is its inclusion bit through eps-randomized response,
  :func:`~dpkit.audit.release.analysis.randomized_response_scores`):
  exactly eps-DP per canary (add/remove of one canary, unit one record), and
  ``mu``-GDP for ``mu = 2 Phi^-1(e^eps / (1 + e^eps))`` and no smaller ``mu``;
* on text, through :func:`~dpkit.audit.release.audit.audit_release`: a generator that echoes
  three words of 3% of its records (not DP for any eps: the truth is infinite) and
  one that ignores its input (0-DP), each with echo canaries and with rare-word canaries.

For 1,000 and 10,000 canaries (4,000 on text), ``runs`` audits each (seeds
``0 .. runs-1`` of a fixed root), the default strategy (Bonferroni) at 95%
confidence. Written to ``OUT/runs.json`` (one row per audit), ``OUT/summary.json``
(medians per generator x canaries x analysis: bound, bound / truth, TPR at 1%
FPR, AUROC, seconds) and ``OUT/provenance.json`` (commit, machine, command).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from dpkit.audit.release import zoo
from dpkit.audit.release.audit import audit_release
from dpkit.audit.release.canaries import echo_canaries, make_canaries
from dpkit.audit.release.analysis import ANALYSES, analyse, randomized_response_scores
from dpkit.audit.release.fdp import gdp_mu_of_randomized_response
from dpkit.audit.release.roc import auroc, tpr_at_fpr
from dpkit.data.tables import label_set, read_table
from dpkit.io import atomic_write_text
from dpkit.methods import Records

EPSILONS = (1.0, 2.0, 4.0, 8.0)
CANARIES = (1000, 10_000)
TEXT_CANARIES = 4000
CONFIDENCE = 0.95


def _truth(analysis: str, eps: float) -> float:
    return gdp_mu_of_randomized_response(eps) if analysis == "gdp" else eps


def randomized_response_rows(runs: int, epsilons=EPSILONS, canaries=CANARIES, seed: int = 48) -> list[dict]:
    rows = []
    for eps in epsilons:
        for m in canaries:
            for run in range(runs):
                rng = np.random.default_rng([seed, int(eps * 1000), m, run])
                included = rng.random(m) < 0.5
                start = time.perf_counter()
                scores = randomized_response_scores(included, eps, rng)
                found = analyse({"rr": scores}, included, rng.random(m), confidence=CONFIDENCE)
                seconds = time.perf_counter() - start
                roc = {"auroc": auroc(scores, included), "tpr_at_fpr_1": tpr_at_fpr(scores, included, 0.01)}
                for analysis in ANALYSES:
                    truth = _truth(analysis, eps)
                    rows.append({"generator": f"randomized response eps={eps:g}", "kind": "score",
                                 "canaries": m, "run": run, "analysis": analysis, "bound": found[analysis].bound,
                                 "truth": truth, "ratio": found[analysis].bound / truth, "seconds": seconds, **roc})
    return rows


def text_rows(runs: int, m: int = TEXT_CANARIES, seed: int = 48) -> list[dict]:
    table = read_table(Path(__file__).resolve().parents[3] / "data" / "own_data_sample.csv", "text", "label")
    records = Records.from_strings(table.texts, table.labels, label_set(table.labels, None), declared=False)
    generators = {"echo 3 words of 3%": (lambda run: zoo.echo_words(0.03, 3, seed=run), math.inf),
                  "input-independent": (lambda run: zoo.input_independent(seed=run), 0.0)}
    designs = {"echo canaries": echo_canaries, "rare-word canaries": make_canaries}
    rows = []
    for name, (factory, truth) in generators.items():
        for design, make in designs.items():
            for run in range(runs):
                canaries = make(m, np.random.default_rng([seed, run, len(design)]))
                result = audit_release(factory(run), records, canaries=canaries, claimed_epsilon=1.0,
                                       confidence=CONFIDENCE, seed=[seed, run], scorers=("suffix_lm", "ngram"))
                for analysis, value in (("steinke", result.epsilon_lower_bound),
                                        ("fdp", result.epsilon_lower_bound_fdp), ("gdp", result.gdp_mu_lower_bound)):
                    ratio = None        # the truth is infinite (echo) or 0 (input-independent): no ratio
                    rows.append({"generator": f"{name}, {design}", "kind": "text", "canaries": m, "run": run,
                                 "analysis": analysis, "bound": value, "truth": None if math.isinf(truth) else truth,
                                 "ratio": ratio, "seconds": result.seconds, "auroc": result.auroc,
                                 "tpr_at_fpr_1": result.tpr_at_fpr_1, "refuted_at_1": result.verdict == "refuted"})
    return rows


def summarise(rows: list[dict]) -> list[dict]:
    groups: dict[tuple, list[dict]] = {}
    for row in rows:
        groups.setdefault((row["generator"], row["canaries"], row["analysis"]), []).append(row)
    out = []
    for (generator, m, analysis), part in groups.items():
        def median(key):
            values = [r[key] for r in part]
            return None if any(v is None for v in values) else float(np.median(values))
        text = part[0]["kind"] == "text"
        out.append({"generator": generator, "canaries": m, "analysis": analysis, "runs": len(part),
                    "bound_median": median("bound"), "bound_min": float(min(r["bound"] for r in part)),
                    "truth": part[0]["truth"], "ratio_median": median("ratio"),
                    "tpr_at_fpr_1_median": median("tpr_at_fpr_1"), "auroc_median": median("auroc"),
                    "seconds_median": median("seconds"),
                    "refuted_at_1": sum(bool(r.get("refuted_at_1")) for r in part) if text else None})
    return out


def _commit() -> str | None:
    try:
        return subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=True,
                              cwd=Path(__file__).resolve().parents[3]).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def run_study(out: Path, runs: int = 20, text_runs: int = 10) -> dict:
    start = time.perf_counter()
    rows = randomized_response_rows(runs) + text_rows(text_runs)
    summary = summarise(rows)
    provenance = {"commit": _commit(), "machine": platform.machine(), "cpu_count": os.cpu_count(),
                  "python": platform.python_version(),
                  "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                  "command": "python -m dpkit.audit.release.tightness " + " ".join(sys.argv[1:]),
                  "runs": runs, "text_runs": text_runs, "confidence": CONFIDENCE, "strategy": "bonferroni",
                  "seconds": round(time.perf_counter() - start, 1)}
    out.mkdir(parents=True, exist_ok=True)
    for name, payload in (("runs", rows), ("summary", summary), ("provenance", provenance)):
        atomic_write_text(out / f"{name}.json", json.dumps(payload, indent=1, sort_keys=True, default=str) + "\n")
    return {"rows": rows, "summary": summary, "provenance": provenance}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="results/audit-release-tightness")
    parser.add_argument("--runs", type=int, default=20, help="audits per randomized-response cell (default 20)")
    parser.add_argument("--text-runs", type=int, default=10, help="audits per text cell (default 10)")
    args = parser.parse_args(argv)
    if args.runs < 1 or args.text_runs < 1:
        print(f"--runs and --text-runs must be at least 1 (got {args.runs}, {args.text_runs})", file=sys.stderr)
        return 2
    study = run_study(Path(args.out), args.runs, args.text_runs)
    for row in study["summary"]:
        print(f"{row['generator']:<45} {row['canaries']:>6} {row['analysis']:<8} bound {row['bound_median']:.3f} "
              f"ratio {row['ratio_median'] if row['ratio_median'] is None else round(row['ratio_median'], 3)} "
              f"TPR@1% {row['tpr_at_fpr_1_median']:.3f} "
              f"AUROC {row['auroc_median']:.3f} {row['seconds_median']:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
