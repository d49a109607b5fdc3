"""The table of ``benchmarks/heldout_rows.py``'s stored runs: each method on 1,000 rows, as a user runs it.

Each row of ``results.jsonl`` is one ``dpkit synth`` release (default sizes, no seed: noise from
fresh OS entropy) scored by ``dpkit evaluate`` against the data set's real test split.
:func:`rows_table` gives one markdown line per method: the releases, the wall time of each, the
texts released, the balanced accuracy (one release: its bootstrap interval over test texts;
several: their mean with a Student-t interval over releases), real training data of the same
rows, and the text measures (means over releases). ``tests/test_rows_report.py`` checks that
``results/README.md`` quotes the table the stored runs give.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Sequence

from scipy import stats

from dpkit.experiments.compare import t_interval
from dpkit.textmetrics.surface import pair_repeats

LABELS = {"kps": "DP-KPS", "pp": "private prediction", "dpst": "DP-ST", "ft": "DP fine-tuning",
          "ft_public": "DP fine-tuning's public path (reads no record)"}
TARGET_S = 15 * 60


def load_rows(folder: Path) -> list[dict]:
    """The scored runs stored in ``folder/results.jsonl`` (a later line for the same run replaces an earlier)."""
    found: dict[tuple[str, int], dict] = {}
    for line in (Path(folder) / "results.jsonl").read_text().splitlines():
        if line.strip():
            row = json.loads(line)
            found[(row["method"], row["repeat"])] = row
    return [found[key] for key in sorted(found)]


def _interval(values: Sequence[float], single: dict) -> tuple[float, float, float]:
    if len(values) == 1:
        return values[0], single["low"], single["high"]
    return t_interval(values)  # over releases, unclipped: the table shows the interval as it is


def rows_table(rows: Sequence[dict]) -> str:
    """Markdown: one line per method of the scored runs in ``rows`` (see the module docstring)."""
    lines = ["| method | releases | wall time (s) | texts | balanced accuracy [95%] | real data, same rows "
             "| assistant talk | under 3 words | k-NN precision / recall | real-vs-synthetic AUROC |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for method, label in LABELS.items():
        done = [r for r in rows if r["method"] == method and "evaluation" in r]
        if not done:
            continue
        evaluations = [r["evaluation"] for r in done]
        scores = [e["balanced_accuracy"]["estimate"] for e in evaluations]
        mean, low, high = _interval(scores, evaluations[0]["balanced_accuracy"])
        real = [e["real"]["balanced_accuracy"]["estimate"] for e in evaluations]
        measure = (lambda key: sum(e["text_measures"][key] for e in evaluations) / len(evaluations))
        walls = ", ".join(f"{r['wall_s']:.0f}" for r in done)
        texts = ", ".join(str(e["n_synthetic"]) for e in evaluations)
        lines.append(
            f"| {label} | {len(done)} | {walls} | {texts} | {mean:.3f} [{low:.3f}, {high:.3f}] "
            f"| {sum(real) / len(real):.3f} | {measure('assistant_talk'):.2f} | {measure('short_texts'):.2f} "
            f"| {measure('knn_precision'):.2f} / {measure('knn_recall'):.2f} "
            f"| {measure('auroc_real_vs_synthetic'):.2f} |")
    return "\n".join(lines)


def first_texts(folder: Path, method: str, n: int = 3, repeat: int = 0) -> list[tuple[str, str]]:
    """The first ``n`` texts of each label of one stored release, in release order (a public rule, not picked)."""
    path = Path(folder) / f"rep-{repeat}" / method / "release" / "synthetic.jsonl"
    if not path.exists():
        return []
    records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    out, seen = [], {}
    for record in records:
        label = record.get("label", "")
        if seen.get(label, 0) < n:
            seen[label] = seen.get(label, 0) + 1
            out.append((label, record["text"]))
    return out


def longest_loop(folder: Path, method: str, repeat: int) -> int:
    """The most times one pair of consecutive words occurs in one text of a stored release."""
    path = Path(folder) / f"rep-{repeat}" / method / "release" / "synthetic.jsonl"
    texts = [json.loads(line)["text"] for line in path.read_text().splitlines() if line.strip()]
    return max((pair_repeats(text) for text in texts), default=0)


def before_after_table(pairs: dict[str, tuple[Path, Path]], method: str = "pp", every_release: bool = False) -> str:
    """Markdown: per data set, one line for the stored run of ``method`` before a change and one after it.

    ``pairs`` maps a data set's name to its (before, after) folders of ``benchmarks/heldout_rows.py`` runs
    (the first release of each; ``every_release``: one line per stored release, "before 1", "before 2", ...).
    The columns are the release's wall time, its balanced accuracy with the bootstrap interval over the test texts, the looping and duplicate shares, the longest loop (the most
    times one word pair occurs in one text) and the k-NN precision / recall and AUROC.
    """
    lines = ["| data set | run | wall time (s) | balanced accuracy [95%] | looping texts | repeated texts "
             "| longest loop | k-NN precision / recall | real-vs-synthetic AUROC |",
             "|---|---|---|---|---|---|---|---|---|"]
    for name, folders in pairs.items():
        for when, folder in zip(("before", "after"), folders):
            done = [r for r in load_rows(folder) if r["method"] == method and "evaluation" in r]
            for k, row in enumerate(done if every_release else done[:1], 1):
                lines.append(_release_line(name, f"{when} {k}" if every_release else when, folder, method, row))
    return "\n".join(lines)


def _release_line(name: str, when: str, folder: Path, method: str, row: dict) -> str:
    ev, tm = row["evaluation"], row["evaluation"]["text_measures"]
    ba = ev["balanced_accuracy"]
    return (f"| {name} | {when} | {row['wall_s']:.0f} | {ba['estimate']:.3f} [{ba['low']:.3f}, "
            f"{ba['high']:.3f}] | {tm['looping_texts']:.2f} | {tm['duplicate_texts']:.2f} "
            f"| {longest_loop(folder, method, row['repeat'])} "
            f"| {tm['knn_precision']:.2f} / {tm['knn_recall']:.2f} "
            f"| {tm['auroc_real_vs_synthetic']:.2f} |")


def longest_loops(folder: Path, method: str) -> list[int]:
    """:func:`longest_loop` of every scored release of ``method`` stored in ``folder``, in release order."""
    return [longest_loop(folder, method, r["repeat"]) for r in load_rows(folder)
            if r["method"] == method and "evaluation" in r]


def scores(folder: Path, method: str) -> list[float]:
    """The balanced accuracy of every scored release of ``method`` stored in ``folder``, in release order."""
    return [r["evaluation"]["balanced_accuracy"]["estimate"] for r in load_rows(folder)
            if r["method"] == method and "evaluation" in r]


def difference_of_means(after: Sequence[float], before: Sequence[float], confidence: float = 0.95) -> dict:
    """Mean of ``after`` minus mean of ``before`` with a Welch t interval (independent releases, unequal
    variances); ``rises``/``falls`` when the whole interval lies above/below 0. Needs two values a side."""
    if min(len(after), len(before)) < 2:
        raise ValueError("a difference of means needs at least two releases on each side")
    a, b = [float(x) for x in after], [float(x) for x in before]
    ma, mb = sum(a) / len(a), sum(b) / len(b)
    va = sum((x - ma) ** 2 for x in a) / (len(a) - 1) / len(a)
    vb = sum((x - mb) ** 2 for x in b) / (len(b) - 1) / len(b)
    se = math.sqrt(va + vb)
    dof = (va + vb) ** 2 / ((va ** 2 / (len(a) - 1) if va else 0.0) + (vb ** 2 / (len(b) - 1) if vb else 0.0)) \
        if se else float("inf")
    half = stats.t.ppf(0.5 + confidence / 2, dof) * se if se else 0.0
    low, high = float(ma - mb - half), float(ma - mb + half)
    return {"mean": ma - mb, "low": low, "high": high, "rises": low > 0, "falls": high < 0}
