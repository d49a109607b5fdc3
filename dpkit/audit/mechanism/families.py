"""The event families the tester searches on its selection half.

Each search sees only selection samples (``a`` from D0, ``b`` from D1) and
returns its best :class:`Candidate` (an event, a direction and the
Clopper-Pearson bound it reaches *on the samples it was chosen on*, which is
optimistic; only the certification on fresh samples counts). Searches that
rank many outcomes or fit a model split their input in two, choosing on the
first part and scoring on the second, so that what wins is not an artefact of
overfitting:

* ``threshold``: ``statistic > t`` or ``<= t`` for each statistic;
* ``set``: sets of whole outcomes, ranked by their ratio on one part, the
  prefix chosen on the other;
* ``joint``: events over several columns - the number of coordinates equal to
  a frequent value (count events), one column's threshold given another column's
  value (products of per-column sets), equality of two columns, and sets of
  values of column pairs;
* ``learned:<model>``: a scikit-learn classifier of "D1 or D0" fitted on one
  part, its score thresholded on the other (DP-Sniper {cite}`bichsel2021dpsniper`).
  ``logistic`` is logistic regression on per-column one-hot bins, which learns
  any sum of per-coordinate log-likelihood ratios (the optimal test for
  independent coordinates: RAPPOR's bits, parallel Laplace releases);
  ``boosting`` (histogram gradient boosting) and ``mlp`` (a small perceptron)
  learn interactions.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from itertools import combinations

import numpy as np
from scipy import sparse

from dpkit.audit.mechanism.events import FeatureEvent, SetEvent, jsonable
from dpkit.audit.mechanism.stats import epsilon_lower_bound

__all__ = ["Candidate", "threshold_search", "set_family", "joint_family", "learned_family", "LEARNERS"]

LEARNERS = ("logistic", "boosting", "mlp")
MAX_JOINT_STATISTICS = 48
MAX_COLUMN_PAIRS = 15
TRAIN_CAP = 25_000  # rows per dataset a classifier is fitted on
BOOSTING_CAP = 10_000  # the boosted trees, slower, see fewer


@dataclass
class Candidate:
    family: str
    search_bound: float
    event: object
    numerator: str


def threshold_search(a: np.ndarray, b: np.ndarray, confidence: float, delta: float):
    """Best ``(bound, side, threshold, numerator)`` over thresholds of two samples (NaN never inside)."""
    a, b = a[~np.isnan(a)], b[~np.isnan(b)]
    na, nb = len(a), len(b)
    if na == 0 and nb == 0:
        return 0.0, ">", 0.0, "D1"
    pooled = np.sort(np.concatenate([a, b]))
    m = len(pooled)
    tails = np.unique(np.round(np.geomspace(1, max(m // 2, 1), 80)).astype(int))
    idx = np.unique(np.concatenate([tails - 1, m - tails - 1, np.linspace(0, m - 1, 201).astype(int)]))
    thresholds = np.unique(pooled[idx[(idx >= 0) & (idx < m)]])
    above_a = na - np.searchsorted(np.sort(a), thresholds, side="right")
    above_b = nb - np.searchsorted(np.sort(b), thresholds, side="right")
    na_, nb_ = max(na, 1), max(nb, 1)
    options = []
    for side, ka, kb in ((">", above_a, above_b), ("<=", na - above_a, nb - above_b)):
        options.append((epsilon_lower_bound(kb, nb_, np.minimum(ka, na_), na_, confidence, delta), side, "D1"))
        options.append((epsilon_lower_bound(ka, na_, np.minimum(kb, nb_), nb_, confidence, delta), side, "D0"))
    best = max(options, key=lambda o: float(np.max(o[0])))
    j = int(np.argmax(best[0]))
    return float(best[0][j]), best[1], float(thresholds[j]), best[2]


def _halves(x: np.ndarray):
    h = len(x) // 2
    return x[:h], x[h:]


def _codes(parts):
    """Outcome values and one integer code per sample of each part (rows compared as wholes)."""
    pooled = np.concatenate(parts)
    if pooled.ndim == 1:
        values, inverse = np.unique(pooled.astype(str) if pooled.dtype == object else pooled, return_inverse=True)
    else:
        values, inverse = _row_unique(pooled)
    inverse = inverse.reshape(-1)
    bounds = np.cumsum([0] + [len(p) for p in parts])
    return values, [inverse[bounds[i]:bounds[i + 1]] for i in range(len(parts))]


def _row_unique(rows: np.ndarray):
    """``np.unique(rows, axis=0, return_inverse=True)``, fast: per-column codes combined in one integer."""
    key = np.zeros(len(rows), dtype=np.int64)
    radix = 1
    for col in rows.T:
        _, code = np.unique(col, return_inverse=True)
        size = int(code.max()) + 1
        if radix * size >= 2**62:
            return np.unique(rows, axis=0, return_inverse=True)
        key += code.reshape(-1).astype(np.int64) * radix
        radix *= size
    _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    return rows[first], inverse


def set_family(a: np.ndarray, b: np.ndarray, confidence: float, delta: float, columns=None,
               family: str = "set", most_frequent: bool = False) -> Candidate | None:
    """Sets of outcomes: ranked by ratio on the first half of each sample, prefix chosen on the second.

    More distinct outcomes than ``max(64, n / 20)`` (``n``: the first halves
    pooled) are too many to rank by ratio: the family does not apply (None),
    unless ``most_frequent``, which ranks only that many of the most frequent
    outcomes of the first halves (ties by first appearance in the sorted outcomes)
    and leaves the rest out of every event. Either way the event is chosen from
    the selection samples alone.
    """
    a1, a2 = _halves(a)
    b1, b2 = _halves(b)
    values, (ca1, cb1, ca2, cb2) = _codes([a1, b1, a2, b2])
    n_values = len(values)
    count = lambda codes: np.bincount(codes, minlength=n_values)  # noqa: E731
    ra, rb = count(ca1), count(cb1)
    seen = (ra + rb) > 0
    limit = max(64, (len(a1) + len(b1)) // 20)
    if int(seen.sum()) > limit:
        if not most_frequent:
            return None  # too many outcomes to rank: nearly every outcome is seen once
        seen = np.zeros(n_values, dtype=bool)
        seen[np.argsort(-(ra + rb), kind="stable")[:limit]] = True
    sa, sb = count(ca2), count(cb2)
    best = None
    for numerator, cn, cd in (("D1", rb, ra), ("D0", ra, rb)):
        ratio = np.where(seen, (cn + 0.5) / (cd + 0.5), -1.0)
        order = np.argsort(-ratio, kind="stable")[: int(seen.sum())]
        ka, kb = np.cumsum(sa[order]), np.cumsum(sb[order])
        kn, kd, nn, nd = (kb, ka, len(b2), len(a2)) if numerator == "D1" else (ka, kb, len(a2), len(b2))
        bounds = epsilon_lower_bound(kn, nn, kd, nd, confidence, delta)
        j = int(np.argmax(bounds))
        if best is None or bounds[j] > best.search_bound:
            event = SetEvent(tuple(jsonable(v) for v in values[order[: j + 1]]), columns)
            best = Candidate(family, float(bounds[j]), event, numerator)
    return best


def _best_threshold(family, name, fn, A, B, confidence, delta) -> Candidate:
    bound, side, threshold, numerator = threshold_search(fn(A), fn(B), confidence, delta)
    return Candidate(family, bound, FeatureEvent(family, name, fn, side, threshold), numerator)


def _atoms(column: np.ndarray, limit: int, min_share: float = 0.01) -> np.ndarray:
    values, counts = np.unique(column, return_counts=True)
    keep = counts >= max(1, min_share * len(column))
    values, counts = values[keep], counts[keep]
    return values[np.argsort(-counts, kind="stable")][:limit]


def joint_family(A: np.ndarray, B: np.ndarray, confidence: float, delta: float) -> Candidate | None:
    """Count, conditional-threshold, equality and column-pair events over an ``(n, d)`` matrix."""
    d = A.shape[1]
    if d < 2:
        return None
    pooled = np.vstack([A, B])
    stats = []
    frequent = _atoms(pooled.reshape(-1), 8)
    for v in frequent:  # count events
        stats.append((f"count(output == {v:g})", lambda X, v=v: (X == v).sum(axis=1).astype(float)))
    if len(np.unique(pooled[:2000])) > 32:  # continuous coordinates: how many lie above a pooled quantile
        for q in (0.25, 0.5, 0.75):
            t = float(np.quantile(pooled, q))
            stats.append((f"count(output > {t:.4g})", lambda X, t=t: (X > t).sum(axis=1).astype(float)))
        stats.append(("sum(output)", lambda X: X.sum(axis=1)))
    for j in range(d):  # products of per-column sets: column i given column j == v
        for v in _atoms(pooled[:, j], 4, min_share=0.02):
            for i in range(d):
                if i != j and len(np.unique(pooled[:, i][:2000])) > 2:
                    stats.append((f"output[{i}] where output[{j}] == {v:g}",
                                  lambda X, i=i, j=j, v=v: np.where(X[:, j] == v, X[:, i], np.nan)))
    if d <= 8:
        for i, j in combinations(range(d), 2):
            stats.append((f"output[{i}] == output[{j}]", lambda X, i=i, j=j: (X[:, i] == X[:, j]).astype(float)))
    best = None
    for name, fn in stats[:MAX_JOINT_STATISTICS]:
        found = _best_threshold("joint", name, fn, A, B, confidence, delta)
        if best is None or found.search_bound > best.search_bound:
            best = found
    discrete = [j for j in range(d) if len(np.unique(pooled[:, j])) <= 32]
    column_pairs = sorted(combinations(discrete, 2), key=lambda p: (p[1] - p[0], p))  # neighbours first
    for i, j in column_pairs[:MAX_COLUMN_PAIRS]:  # sets of values of a column pair
        found = set_family(A[:, [i, j]], B[:, [i, j]], confidence, delta, columns=(i, j), family="joint")
        if found is not None and (best is None or found.search_bound > best.search_bound):
            best = found
    return best


class _Encoder:
    """Per-column one-hot codes: each value of a column with <= 32 values, else 16 quantile bins."""

    def __init__(self, X: np.ndarray, bins: int = 16):
        self.edges, self.values = [], []
        for col in X.T:
            values = np.unique(col)
            if len(values) <= 32:
                self.values.append(values)
                self.edges.append(None)
            else:
                self.values.append(None)
                self.edges.append(np.unique(np.quantile(col, np.linspace(0, 1, bins + 1)[1:-1])))
        self.widths = [len(v) + 1 if v is not None else len(e) + 1 for v, e in zip(self.values, self.edges)]
        self.offsets = np.concatenate([[0], np.cumsum(self.widths)[:-1]])

    def __call__(self, X: np.ndarray):
        codes = np.empty(X.shape, dtype=np.int64)
        for k, col in enumerate(X.T):
            if self.values[k] is not None:
                pos = np.searchsorted(self.values[k], col)
                pos = np.clip(pos, 0, len(self.values[k]) - 1)
                codes[:, k] = np.where(self.values[k][pos] == col, pos, len(self.values[k]))
            else:
                codes[:, k] = np.searchsorted(self.edges[k], col, side="right")
        cols = (codes + self.offsets).reshape(-1)
        rows = np.repeat(np.arange(len(X)), X.shape[1])
        return sparse.csr_matrix((np.ones(len(cols)), (rows, cols)), shape=(len(X), int(sum(self.widths))))


def _fit(learner: str, A: np.ndarray, B: np.ndarray, seed: int):
    from sklearn import ensemble, linear_model, neural_network, preprocessing

    X = np.vstack([A, B])
    y = np.concatenate([np.zeros(len(A)), np.ones(len(B))])
    if learner == "logistic":
        encode = _Encoder(X)
        model = linear_model.LogisticRegression(C=1.0, max_iter=300).fit(encode(X), y)
        return lambda Z: model.decision_function(encode(Z)), "logistic regression on per-column one-hot bins"
    if learner == "boosting":
        keep = np.r_[0:min(len(A), BOOSTING_CAP), len(A):len(A) + min(len(B), BOOSTING_CAP)]
        model = ensemble.HistGradientBoostingClassifier(max_iter=40, max_leaf_nodes=15, max_bins=64,
                                                        early_stopping=False, random_state=seed).fit(X[keep], y[keep])
        return lambda Z: model.decision_function(Z), "gradient-boosted trees"
    scale = preprocessing.StandardScaler().fit(X)
    model = neural_network.MLPClassifier(hidden_layer_sizes=(32,), max_iter=60, random_state=seed)
    model.fit(scale.transform(X), y)
    return lambda Z: model.predict_proba(scale.transform(Z))[:, 1], "a small MLP (32 hidden units)"


def learned_family(learner: str, A: np.ndarray, B: np.ndarray, confidence: float, delta: float,
                   seed: int = 0) -> Candidate | None:
    """DP-Sniper's learned statistic: fit on the first half, threshold its score on the second."""
    A1, A2 = _halves(A)
    B1, B2 = _halves(B)
    if min(len(A1), len(B1), len(A2), len(B2)) < 10:
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # convergence chatter; the certificate does not depend on it
        score, words = _fit(learner, A1[:TRAIN_CAP], B1[:TRAIN_CAP], seed)
        return _best_threshold(f"learned:{learner}", f"score of {words} (D1 vs D0)", score, A2, B2, confidence,
                               delta)
