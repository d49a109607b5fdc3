"""Before and after the voice rules: the same preset made by the code before them and by today's code.

The ``infinity`` preset runs every method on the two data sets of the stored comparison at
epsilon infinity (5 seeds, the holdout preset's sizes) with today's code. The "before" cells are
the same preset made by the last commit before the voice rules (9f2858c, by
``benchmarks/voice_before_after.py``), which did not store texts or text measures: the
benchmark patched it to keep its texts, and measured them with today's
:func:`dpkit.textmetrics.measure_texts`, so both sides are measured by one rule.

:func:`voice_table` writes one markdown row per data set and method: the means over seeds of the
share of assistant talk, of texts under 3 words, k-NN precision and recall and the
real-vs-synthetic AUROC, and the mean balanced accuracy with its 95% Student-t interval, each as
``before → after``. Every cell is a seeded teaching run on public benchmark data; none is a release.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Sequence

from dpkit.experiments import stored
from dpkit.experiments.sealing import integrity_problem

METHODS = {"kps": "DP-KPS", "pp": "private prediction", "dpst": "DP-ST"}
#: the ceiling on assistant talk with the noise off (at most 5% of a method's texts)
ASSISTANT_TALK_CEILING = 0.05


def load_before(folder: Path) -> list[dict]:
    """The "before" cells of ``folder``: each must match its SHA-256 digest and carry text measures."""
    cells = []
    for path in sorted(Path(folder).glob("*.json")):
        body = json.loads(path.read_text())
        problem = integrity_problem(body)
        if problem is not None:
            raise stored.StoredResultError(f"{path.name}: {problem}")
        if body["cell"]["method"] != stored.REAL and not body.get("text_measures"):
            raise stored.StoredResultError(f"{path.name}: has no text measures")
        cells.append(body)
    if not cells:
        raise stored.StoredResultError(f"{Path(folder).name}: holds no stored cell")
    return cells


def _summary(cells: Sequence[dict]):
    frame = stored.rows(cells)
    frame = frame[frame.method.isin(list(METHODS))]
    scores = stored.summarize(frame)
    measures = stored.summarize(frame, columns=stored.ROW_TEXT_MEASURES)
    return scores.merge(measures, on=["dataset", "method", "epsilon", "seeds"])


def _pair(before, after, column: str, digits: int = 2) -> str:
    return f"{before[column]:.{digits}f} → {after[column]:.{digits}f}"


def voice_table(before_cells: Sequence[dict], after_cells: Sequence[dict]) -> str:
    """Markdown: per data set and method, ``before → after`` of the text measures and balanced accuracy."""
    before, after = _summary(before_cells), _summary(after_cells)
    lines = ["| data set | method | seeds | assistant talk | under 3 words | k-NN precision | k-NN recall "
             "| real-vs-synthetic AUROC | balanced accuracy [95% CI] |",
             "|---|---|---|---|---|---|---|---|---|"]
    for _, new in after.sort_values(["dataset", "method"]).iterrows():
        old = before[(before.dataset == new.dataset) & (before.method == new.method)]
        if not len(old):
            continue
        old = old.iloc[0]
        interval = lambda row: (f"{row.balanced_accuracy:.3f} [{row.balanced_accuracy_low:.3f}, "
                                f"{row.balanced_accuracy_high:.3f}]")
        lines.append(f"| {new.dataset} | {METHODS[new.method]} | {old.seeds} → {new.seeds} "
                     f"| {_pair(old, new, 'assistant_talk')} | {_pair(old, new, 'short_texts')} "
                     f"| {_pair(old, new, 'knn_precision')} | {_pair(old, new, 'knn_recall')} "
                     f"| {_pair(old, new, 'auroc_real_vs_synthetic')} | {interval(old)} → {interval(new)} |")
    return "\n".join(lines)


def over_ceiling(after_cells: Sequence[dict], ceiling: float = ASSISTANT_TALK_CEILING) -> list[str]:
    """``"dataset method: share"`` for each method whose mean assistant talk over seeds exceeds ``ceiling``."""
    after = _summary(after_cells)
    return [f"{row.dataset} {row.method}: {row.assistant_talk:.3f}" for _, row in after.iterrows()
            if not math.isnan(row.assistant_talk) and row.assistant_talk > ceiling]
