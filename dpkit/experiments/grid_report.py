"""The privacy–utility table of a stored epsilon grid, computed from its cells (a test recomputes it).

A grid preset (``epsilon-grid``) runs every method at several epsilons with the same seeds, so
"rises with epsilon" can rest on same-seed differences: seed ``k`` at epsilon 1 and seed ``k`` at
epsilon 8 read the same records and differ only in the mechanisms' calibration.
:func:`trade_off_table` writes one markdown row per data set and method: the mean balanced
accuracy at each epsilon, then the paired difference from the smallest epsilon to each larger one
with its 95% t interval over seeds (:func:`dpkit.experiments.stored.paired_difference`), marked
"rises" when the whole interval lies above 0. :func:`rising` lists those pairs. Every cell is a
seeded teaching run on public benchmark data; nothing here is a release.
"""

from __future__ import annotations

import math
from typing import Sequence

from dpkit.experiments import stored

LABELS = {"kps": "DP-KPS", "pp": "private prediction", "dpst": "DP-ST"}


def _epsilon(value: float) -> str:
    return "∞" if math.isinf(value) else f"{value:g}"


def _grid(cells: Sequence[dict]):
    frame = stored.rows(cells)
    epsilons = sorted(e for e in frame[frame.method != stored.REAL].epsilon.unique())
    if len(epsilons) < 2:
        raise ValueError(f"an epsilon grid needs two epsilons or more; these cells hold {epsilons}")
    return frame, epsilons


def paired_differences(cells: Sequence[dict]) -> list[dict]:
    """Every (data set, method, larger epsilon): the paired difference from the smallest epsilon."""
    frame, epsilons = _grid(cells)
    return [stored.paired_difference(frame, dataset, method, epsilons[0], high)
            for dataset in sorted(frame.dataset.unique()) for method in LABELS for high in epsilons[1:]]


def rising(cells: Sequence[dict]) -> list[tuple[str, str, float]]:
    """``(data set, method, larger epsilon)`` whose paired difference from the smallest epsilon lies above 0."""
    return [(d["dataset"], d["method"], float(d["high_epsilon"])) for d in paired_differences(cells) if d["rises"]]


def trade_off_table(cells: Sequence[dict]) -> str:
    """The markdown table: mean balanced accuracy per epsilon, then paired differences from the smallest."""
    frame, epsilons = _grid(cells)
    summary = stored.summarize(frame)
    low = epsilons[0]
    pairs = {(d["dataset"], d["method"], d["high_epsilon"]): d for d in paired_differences(cells)}
    head = (["data set", "method"] + [f"ε = {_epsilon(e)}" for e in epsilons]
            + [f"{_epsilon(low)} → {_epsilon(e)}, paired [95% t]" for e in epsilons[1:]])
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for dataset in sorted(frame.dataset.unique()):
        for method, label in LABELS.items():
            means = []
            for epsilon in epsilons:
                found = summary[(summary.dataset == dataset) & (summary.method == method)
                                & (summary.epsilon == epsilon)]
                means.append(f"{found.iloc[0].balanced_accuracy:.3f}" if len(found) else "–")
            steps = []
            for epsilon in epsilons[1:]:
                d = pairs[(dataset, method, epsilon)]
                steps.append(f"{d['mean']:+.3f} [{d['low']:+.3f}, {d['high']:+.3f}]"
                             + (" rises" if d["rises"] else " falls" if d["falls"] else ""))
            lines.append(f"| {dataset} | {label} | " + " | ".join(means + steps) + " |")
        real = summary[(summary.dataset == dataset) & (summary.method == stored.REAL)]
        if len(real):
            row = real.iloc[0]
            lines.append(f"| {dataset} | real data, same size | "
                         + " | ".join([""] * (len(epsilons) - 1)
                                      + [f"{row.balanced_accuracy:.3f} [{row.balanced_accuracy_low:.3f}, "
                                         f"{row.balanced_accuracy_high:.3f}]"] + [""] * (len(epsilons) - 1)) + " |")
    return "\n".join(lines)
