"""Keyphrase sequences from released DP-KDEs (all post-processing: no further privacy cost).

* :func:`one_keyphrase` / :func:`independent_sequences`: query the DP-KDE at every
  term of the private vocabulary, clip negative scores at 0, normalize, and draw
  (``L`` i.i.d. draws per sequence for independent sequences).
* :func:`contrast_probabilities`: optionally tilt each class's distribution towards
  the terms where its DP-KDE scores higher than the classes' average (``contrast``
  gamma; 0 is the paper's rule).  It reads only the released DP-KDEs of all classes.
* :func:`iterative_sequences`: build each sequence one keyphrase at a time; step
  ``i`` scores every prefix-plus-candidate with the ensemble member for length
  ``i`` (:mod:`dpkit.kps.ensembles`) and either samples by score (``choice="sample"``)
  or takes the best (``choice="best"``).

Fast step.  The projection of a concatenation is the sum of its blocks'
projections, ``W [p_1; ...; p_{i-1}; w; 0] = sum_k W_k p_k + W_i w``.  With the
prefix part ``c`` kept per sequence and ``H = E W_i^T`` computed once per step,
``cos(c + h_w + b) = cos(c + b) cos(h_w) - sin(c + b) sin(h_w)`` turns the scores of
all candidates of all sequences into two matrix products: ``O(|V| I)`` per sequence
and step, independent of ``d`` and ``L``.  :func:`naive_step_scores` is the
concatenate-and-project reference (``O(|V| I d L)``).
"""

from __future__ import annotations

import numpy as np

from dpkit.kps.ensembles import KDEEnsemble
from dpkit.kps.kde import DPKDE, normalize_scores
from dpkit.kps.rff import FEATURE_BOUND
from dpkit.validate import ParameterError, check_choice, check_int, check_rng, check_unit_norm

CHOICES = ("sample", "best")


def sample_rows(probabilities: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One index per row of a (rows, n) probability matrix (inverse-CDF; zero-probability entries never drawn)."""
    cdf = np.cumsum(probabilities, axis=1)
    u = (1.0 - rng.random(len(probabilities))) * cdf[:, -1]
    return np.minimum((cdf < u[:, None]).sum(axis=1), probabilities.shape[1] - 1)


def one_keyphrase(kde: DPKDE, embeddings, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` keyphrase ids drawn from the normalized DP-KDE scores over the vocabulary embeddings."""
    return independent_sequences(kde, embeddings, n, 1, rng)[:, 0]


def independent_sequences(kde: DPKDE, embeddings, n_sequences: int, L: int, rng: np.random.Generator) -> np.ndarray:
    """``(n_sequences, L)`` ids: i.i.d. draws from the normalized DP-KDE scores (repeats possible)."""
    check_rng("rng", rng)
    embeddings = check_unit_norm("embeddings", embeddings)
    n_sequences = check_int("n_sequences", n_sequences, minimum=1)
    L = check_int("L", L, minimum=1)
    return draw_sequences(normalize_scores(kde.scores(embeddings)), n_sequences, L, rng)


def draw_sequences(probabilities: np.ndarray, n_sequences: int, L: int, rng: np.random.Generator) -> np.ndarray:
    """``(n_sequences, L)`` i.i.d. draws from one probability vector over the vocabulary."""
    check_rng("rng", rng)
    p = np.asarray(probabilities, dtype=float)
    return rng.choice(len(p), size=(check_int("n_sequences", n_sequences, minimum=1), check_int("L", L, minimum=1)),
                      p=p)


def contrast_probabilities(probabilities: np.ndarray, contrast: float) -> np.ndarray:
    """Each class's sampling distribution tilted by its ratio to the classes' mean (post-processing).

    ``probabilities``: ``(n_classes, |V|)``, each row the normalized DP-KDE scores of a class
    (:func:`~dpkit.kps.kde.normalize_scores`).  Returns rows ``q_c(t) ∝ p_c(t) (p_c(t) / pbar(t))^contrast``,
    ``pbar`` the mean over the classes: ``contrast`` 0 returns the rows unchanged (the paper), and
    with one class every ratio is 1.  A term no class scores above 0 keeps probability 0; a row
    that the tilt would leave empty stays as it was.  The rows depend only on the released DP-KDEs.
    """
    P = np.asarray(probabilities, dtype=float)
    if P.ndim != 2 or not np.all(np.isfinite(P)) or P.min() < 0:
        raise ParameterError("probabilities", P, "must be an (n_classes, vocabulary) array of probabilities")
    contrast = float(contrast)
    if not np.isfinite(contrast) or contrast < 0:
        raise ParameterError("contrast", contrast, "must be a number >= 0 (0: sample by the DP-KDE, as the paper)")
    if contrast == 0:
        return P.copy()
    mean = P.mean(axis=0, keepdims=True)
    ratio = np.divide(P, mean, out=np.zeros_like(P), where=mean > 0)
    Q = P * ratio ** contrast
    total = Q.sum(axis=1, keepdims=True)
    return np.where(total > 0, Q / np.where(total > 0, total, 1.0), P)


def naive_step_scores(kde: DPKDE, n_blocks: int, embeddings: np.ndarray, prefix: list[int]) -> np.ndarray:
    """Scores of ``prefix + [w]`` for every ``w``: concatenate, zero-pad to ``n_blocks`` blocks, project."""
    d = embeddings.shape[1]
    step = len(prefix) + 1
    points = np.zeros((len(embeddings), n_blocks * d), dtype=embeddings.dtype)
    if prefix:
        points[:, :len(prefix) * d] = embeddings[prefix].reshape(-1)
    points[:, (step - 1) * d:step * d] = embeddings
    return kde.scores(points)


def _choose(scores: np.ndarray, mask: np.ndarray | None, choice: str, rng: np.random.Generator) -> np.ndarray:
    if choice == "best":
        masked = scores if mask is None else np.where(mask, scores, -np.inf)
        return masked.argmax(axis=1)
    return sample_rows(normalize_scores(scores, mask), rng)


def iterative_sequences(ensemble: KDEEnsemble, embeddings, n_sequences: int, rng: np.random.Generator, *,
                        choice: str = "sample", distinct: bool = True, dtype=np.float32,
                        batch_size: int = 2048) -> np.ndarray:
    """``(n_sequences, L)`` ids built step by step with the fast block-decomposed scores.

    ``distinct``: a keyphrase already in the prefix is not offered again (the
    prompt gets ``L`` different terms); needs ``L <= |V|``.
    """
    check_rng("rng", rng)
    embeddings = check_unit_norm("embeddings", embeddings)
    n_sequences = check_int("n_sequences", n_sequences, minimum=1)
    check_choice("choice", choice, CHOICES)
    batch_size = check_int("batch_size", batch_size, minimum=1)
    L, V = ensemble.L, len(embeddings)
    if distinct and L > V:
        raise ParameterError("distinct", distinct, f"needs L={L} <= vocabulary size {V}")
    if ensemble.members[0].kde.features.dim % embeddings.shape[1]:
        raise ParameterError("embeddings", embeddings, "dimension does not divide the ensemble's feature dimension")
    out = np.zeros((n_sequences, L), dtype=int)
    E = embeddings.astype(dtype)
    projection = np.zeros((n_sequences, ensemble.members[0].kde.n_features), dtype=dtype)
    previous_member, previous_table = None, None
    for step in range(1, L + 1):
        index = ensemble.member_index(step)
        kde = ensemble.members[index].kde
        feats = kde.features
        if index != previous_member:
            weights = feats.weights.astype(dtype)
        d = E.shape[1]
        table = E @ weights[:, (step - 1) * d:step * d].T                   # (|V|, I)
        if index != previous_member:                                        # new member: rebuild prefix part
            projection = np.zeros((n_sequences, feats.n_features), dtype=dtype)
            for block in range(step - 1):
                projection += E[out[:, block]] @ weights[:, block * d:(block + 1) * d].T
        elif step > 1:
            projection += previous_table[out[:, step - 2]]
        cos_h, sin_h = np.cos(table), np.sin(table)
        sketch = kde.sketch.astype(dtype)
        for start in range(0, n_sequences, batch_size):
            rows = slice(start, start + batch_size)
            phase = projection[rows] + feats.offsets.astype(dtype)
            scores = (np.cos(phase) * sketch) @ cos_h.T - (np.sin(phase) * sketch) @ sin_h.T
            scores = scores.astype(float) * (FEATURE_BOUND / feats.n_features)
            mask = None
            if distinct and step > 1:
                mask = np.ones(scores.shape, dtype=bool)
                np.put_along_axis(mask, out[rows, :step - 1], False, axis=1)
            out[rows, step - 1] = _choose(scores, mask, choice, rng)
        previous_member, previous_table = index, table
    return out


def naive_iterative_sequences(ensemble: KDEEnsemble, embeddings, n_sequences: int, rng: np.random.Generator, *,
                              choice: str = "sample", distinct: bool = True) -> np.ndarray:
    """Reference implementation: concatenate-and-project every candidate prefix (slow; for tests and benchmarks)."""
    check_rng("rng", rng)
    embeddings = check_unit_norm("embeddings", embeddings)
    check_choice("choice", choice, CHOICES)
    out = np.zeros((n_sequences, ensemble.L), dtype=int)
    for s in range(n_sequences):
        prefix: list[int] = []
        for step in range(1, ensemble.L + 1):
            member = ensemble.members[ensemble.member_index(step)]
            scores = naive_step_scores(member.kde, member.n_blocks, embeddings, prefix)[None, :]
            mask = None
            if distinct and prefix:
                mask = np.ones(scores.shape, dtype=bool)
                mask[0, prefix] = False
            prefix.append(int(_choose(scores, mask, choice, rng)[0]))
        out[s] = prefix
    return out
