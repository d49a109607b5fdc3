"""ROC summaries of membership scores: AUROC and the true-positive rate at a fixed false-positive rate.

Descriptive numbers (no confidence statement): the lower bound of
:mod:`dpkit.audit.release.one_run` is the test; these say how separable members and
non-members are. Ties count half (AUROC as the Mann-Whitney statistic).
"""

from __future__ import annotations

import numpy as np
from scipy import stats


def auroc(scores, members) -> float:
    """P[score of a member > score of a non-member] + half the ties; nan without both classes."""
    scores, members = np.asarray(scores, float), np.asarray(members, bool)
    n1, n0 = int(members.sum()), int((~members).sum())
    if n1 == 0 or n0 == 0:
        return float("nan")
    ranks = stats.rankdata(scores)
    return float((ranks[members].sum() - n1 * (n1 + 1) / 2) / (n1 * n0))


def roc_curve(scores, members) -> tuple[np.ndarray, np.ndarray]:
    """(false-positive rates, true-positive rates) over every threshold, from (0, 0) to (1, 1)."""
    scores, members = np.asarray(scores, float), np.asarray(members, bool)
    thresholds = np.unique(scores)[::-1]
    n1, n0 = max(int(members.sum()), 1), max(int((~members).sum()), 1)
    fpr = [0.0] + [float(((scores >= t) & ~members).sum() / n0) for t in thresholds]
    tpr = [0.0] + [float(((scores >= t) & members).sum() / n1) for t in thresholds]
    return np.asarray(fpr), np.asarray(tpr)


def tpr_at_fpr(scores, members, fpr_target: float) -> float:
    """The largest TPR of a threshold rule whose FPR is at most ``fpr_target``."""
    fpr, tpr = roc_curve(scores, members)
    ok = fpr <= fpr_target + 1e-12
    return float(tpr[ok].max()) if ok.any() else 0.0
