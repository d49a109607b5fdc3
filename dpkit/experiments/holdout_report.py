"""The table of the ``holdout`` preset in ``results/README.md``, computed from its stored cells (a test recomputes it).

Every method's text measures and balanced accuracy over 5 seeds, on the data the prompts were
tuned on and on data nobody tuned on (``data/HOLDOUT.md``). :func:`holdout_table` writes one markdown table: one row per data set and method (real data of
the same size and the majority class included), the mean balanced accuracy with its 95%
Student-t interval over seeds, and the means over seeds of the share of assistant talk, the
share of texts under 3 words, k-NN precision and recall and the real-vs-synthetic AUROC.
Every cell is a seeded teaching run on public benchmark data; nothing here is a release.
"""

from __future__ import annotations

import math
from typing import Sequence

from dpkit.experiments import stored

#: Data sets nobody tuned prompts or defaults on (data/HOLDOUT.md).
HELD_OUT = ("commons_speeches", "online_questions", "everyday_situations", "everyday_problems", "general_questions",
            "short_passages")
LABELS = {stored.REAL: "real data", "majority class": "majority class", "kps": "DP-KPS",
          "pp": "private prediction", "dpst": "DP-ST"}
MEASURES = ("assistant_talk", "short_texts", "knn_precision", "knn_recall", "auroc_real_vs_synthetic")


def _number(value: float, digits: int = 2) -> str:
    return "–" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.{digits}f}"


def holdout_table(cells: Sequence[dict]) -> str:
    """The markdown table of the stored ``holdout`` cells (held-out data sets first)."""
    frame = stored.rows(cells)
    scores = stored.summarize(frame)
    measures = stored.summarize(frame[frame.assistant_talk.notna()], columns=MEASURES)
    datasets = sorted(frame.dataset.unique(), key=lambda name: (name not in HELD_OUT, name))
    lines = ["| data set | method | ε | seeds | balanced accuracy [95% CI] | assistant talk | under 3 words "
             "| k-NN precision / recall | real-vs-synthetic AUROC |",
             "|---|---|---|---|---|---|---|---|---|"]
    for dataset in datasets:
        name = f"{dataset} (held out)" if dataset in HELD_OUT else f"{dataset} (tuned on)"
        for method, label in LABELS.items():
            for _, row in scores[(scores.dataset == dataset) & (scores.method == method)].iterrows():
                found = measures[(measures.dataset == dataset) & (measures.method == method)
                                 & (measures.epsilon == row.epsilon)]
                text = found.iloc[0] if len(found) else None
                get = (lambda column: text[column] if text is not None else math.nan)
                epsilon = "∞" if math.isinf(row.epsilon) else f"{row.epsilon:g}"
                lines.append(
                    f"| {name} | {label} | {epsilon} | {row.seeds} | {row.balanced_accuracy:.3f} "
                    f"[{row.balanced_accuracy_low:.3f}, {row.balanced_accuracy_high:.3f}] "
                    f"| {_number(get('assistant_talk'))} | {_number(get('short_texts'))} "
                    f"| {_number(get('knn_precision'))} / {_number(get('knn_recall'))} "
                    f"| {_number(get('auroc_real_vs_synthetic'))} |")
    return "\n".join(lines)
