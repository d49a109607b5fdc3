"""The paragraph of ``results/README.md`` on a stored paired run, computed from its cells (so a test can recompute it).

:func:`paired_paragraph` reads the stored cells of a preset with one data set and two
epsilons (``paired-small``) and writes one paragraph: per method the mean balanced
accuracy at both epsilons, the paired same-seed difference with its 95% t interval
(:func:`dpkit.experiments.stored.paired_difference`), and the text measures at the
larger epsilon, beside real data of the same size. Evaluation of seeded teaching
runs on public benchmark data; nothing here is a release.
"""

from __future__ import annotations

import math
from typing import Sequence

from dpkit.experiments import stored

LABELS = {"kps": "DP-KPS", "pp": "private prediction", "dpst": "DP-ST"}


def paired_paragraph(cells: Sequence[dict]) -> str:
    """The paragraph (markdown, one line) for the stored cells of a one-data-set, two-epsilon preset."""
    frame = stored.rows(cells)
    (dataset,) = frame.dataset.unique()
    low, high = sorted(e for e in frame.epsilon.unique() if not math.isinf(e))
    summary = stored.summarize(frame)
    measures = ("assistant_talk", "short_texts", "knn_precision", "knn_recall", "auroc_real_vs_synthetic")
    texts = stored.summarize(frame[frame.assistant_talk.notna()], columns=measures)

    def at(table, method, epsilon):
        return table[(table.method == method) & (table.epsilon == epsilon)].iloc[0]

    real = at(summary, stored.REAL, math.inf)
    prov = stored.provenance(cells)
    minutes = frame[frame.method != stored.REAL].wall_s.sum() / 60
    parts, rising = [], []
    for method, label in LABELS.items():
        pair = stored.paired_difference(frame, dataset, method, low, high)
        a, b = at(summary, method, low).balanced_accuracy, at(summary, method, high).balanced_accuracy
        parts.append(f"{label} {a:.3f} → {b:.3f}, {pair['mean']:+.3f} [{pair['low']:+.3f}, {pair['high']:+.3f}]")
        if pair["rises"]:
            rising.append(label)
    t = {m: at(texts, m, high) for m in LABELS}
    r = at(texts, stored.REAL, math.inf)
    verdict = ("no method's balanced accuracy rises beyond its paired interval: this run shows no "
               "privacy–utility trade-off" if not rising else
               f"only {' and '.join(rising)} rise beyond the paired interval")
    return (f"**The stored paired run** (`{prov['presets'][0]}`: {dataset}, epsilon {low:g} and {high:g}, "
            f"{len(frame.seed.unique())} seeds; commit {', '.join(c[:7] for c in prov['git_commits'])}, "
            f"{minutes:.0f} minutes of release wall time on the shared 2-core machine under load). Balanced "
            f"accuracy at epsilon {low:g} → {high:g} and the paired same-seed difference [95% t]: "
            + "; ".join(parts)
            + f"; real data of the same size {real.balanced_accuracy:.3f} [{real.balanced_accuracy_low:.3f}, "
            f"{real.balanced_accuracy_high:.3f}]. At epsilon {high:g}, assistant talk is "
            + ", ".join(f"{100 * t[m].assistant_talk:.0f}% ({LABELS[m]})" for m in LABELS)
            + "; texts under 3 words " + ", ".join(f"{100 * t[m].short_texts:.0f}%" for m in LABELS)
            + "; k-NN precision " + ", ".join(f"{t[m].knn_precision:.2f}" for m in LABELS)
            + f" (real {r.knn_precision:.2f}); AUROC real-vs-synthetic "
            + ", ".join(f"{t[m].auroc_real_vs_synthetic:.2f}" for m in LABELS)
            + f" (real {r.auroc_real_vs_synthetic:.2f}). So {verdict}.")
