"""Exact privacy losses of the two DP-ST variants, computed from their output distributions.

The privacy loss between inputs x and y is
``L(x, y) = max_o |log P[M(x) = o] - log P[M(y) = o]|`` over all outputs o
(infinite when some output is possible under one input only). A mechanism is
epsilon-DP under a neighbouring relation exactly when ``L <= epsilon`` for all
related pairs. Every function here enumerates the outputs exactly -- no sampling.

What the book shows with numbers (``notebooks/dpst_triples.ipynb``):

* one triple, neighbourhood-aware mechanism: ``L <= epsilon`` when x and y have
  the same nearest centroid, ``L = inf`` otherwise (disjoint supports);
* a document under the per-triple split ``epsilon / n``: the released tuple
  has ``n`` entries, so two documents with different triple counts are told
  apart with certainty (``L = inf``); with equal counts and pairwise equal
  neighbourhoods the losses add up to at most ``epsilon``;
* the document-level variant: ``L <= epsilon`` for every pair of documents.
"""

from __future__ import annotations

import numpy as np
from scipy.special import logsumexp

from dpkit.dpst import mechanism
from dpkit.dpst.corpus import TripleCorpus
from dpkit.validate import ParameterError, check_positive


def _max_abs_log_ratio(logp: np.ndarray, logq: np.ndarray) -> float:
    """max over outputs of |log p - log q|, with -inf entries meaning impossible."""
    p_only = np.isfinite(logp) & ~np.isfinite(logq)
    q_only = np.isfinite(logq) & ~np.isfinite(logp)
    if p_only.any() or q_only.any():
        return float("inf")
    both = np.isfinite(logp) & np.isfinite(logq)
    return float(np.max(np.abs(logp[both] - logq[both]))) if both.any() else 0.0


def neighbourhood_output_log_probs(corpus: TripleCorpus, embedding: np.ndarray, epsilon: float) -> np.ndarray:
    """log P(output = public triple j) for all j of the corpus, neighbourhood-aware mechanism."""
    cluster = int(corpus.nearest_centroid(embedding)[0])
    members = corpus.members(cluster)
    out = np.full(len(corpus), -np.inf)
    out[members] = mechanism.log_probabilities(corpus.embeddings[members], embedding, epsilon)
    return out


def triple_loss_neighbourhood(corpus: TripleCorpus, x: np.ndarray, y: np.ndarray, epsilon: float) -> float:
    """Exact privacy loss between two input triples (embeddings) under the paper's mechanism."""
    return _max_abs_log_ratio(neighbourhood_output_log_probs(corpus, x, epsilon),
                              neighbourhood_output_log_probs(corpus, y, epsilon))


def document_loss_neighbourhood(corpus: TripleCorpus, xs: np.ndarray, ys: np.ndarray, epsilon: float) -> float:
    """Exact loss between two documents (their triple embeddings, in order) under the per-triple split.

    The output is the tuple of private triples; its length is the number of
    triples, so different counts give disjoint supports (``inf``). Otherwise
    the slots are independent and the worst output maximises every slot's
    ratio in the same direction: the loss is the larger of the two directed sums.
    """
    epsilon = check_positive("epsilon", epsilon)
    xs, ys = np.atleast_2d(xs), np.atleast_2d(ys)
    if len(xs) != len(ys):
        return float("inf")
    if len(xs) == 0:
        raise ParameterError("xs", xs, "needs at least one triple")
    eps = epsilon / len(xs)
    up = down = 0.0
    for x, y in zip(xs, ys):
        lp = neighbourhood_output_log_probs(corpus, x, eps)
        lq = neighbourhood_output_log_probs(corpus, y, eps)
        if _max_abs_log_ratio(lp, lq) == float("inf"):
            return float("inf")
        both = np.isfinite(lp)
        up += float(np.max(lp[both] - lq[both]))
        down += float(np.max(lq[both] - lp[both]))
    return max(up, down)


def slot_output_log_probs(corpus: TripleCorpus, embedding: np.ndarray, eps_neighbourhood: float,
                          eps_triple: float) -> np.ndarray:
    """log P(output = public triple j) for one slot of the document-level variant (all j)."""
    log_c = mechanism.log_probabilities(corpus.centroids, embedding, eps_neighbourhood)
    utilities = mechanism.clipped_cosine(corpus.embeddings, embedding)
    logits = eps_triple * utilities / (2.0 * mechanism.SENSITIVITY)
    labels = corpus.labels
    norm = np.full(corpus.k, -np.inf)
    for c in range(corpus.k):
        members = corpus.members(c)
        norm[c] = logsumexp(logits[members])
    return log_c[labels] + logits - norm[labels]


def document_loss_document_variant(corpus: TripleCorpus, xs: np.ndarray, ys: np.ndarray, epsilon: float,
                                   slots: int, neighbourhood_share: float = 0.5) -> float:
    """Exact loss between two documents' slot inputs (``slots`` rows each, padding included).

    Note: a public triple can lie in one neighbourhood only, so the output of a
    slot determines its neighbourhood; the slot's output distribution over the
    corpus is therefore the full description.
    """
    epsilon = check_positive("epsilon", epsilon)
    xs, ys = np.atleast_2d(xs), np.atleast_2d(ys)
    if len(xs) != slots or len(ys) != slots:
        raise ParameterError("xs/ys", (len(xs), len(ys)), f"must both have slots={slots} rows (pad first)")
    eps_n, eps_t = mechanism.slot_split(epsilon, slots, neighbourhood_share)
    up = down = 0.0
    for x, y in zip(xs, ys):
        lp = slot_output_log_probs(corpus, x, eps_n, eps_t)
        lq = slot_output_log_probs(corpus, y, eps_n, eps_t)
        up += float(np.max(lp - lq))
        down += float(np.max(lq - lp))
    return max(up, down)


def same_neighbourhood_rate(corpus: TripleCorpus, embeddings: np.ndarray, rng: np.random.Generator,
                            pairs: int = 2000) -> float:
    """Fraction of random pairs of the given (private) triples that share a neighbourhood:
    the share of pairs the neighbourhood-aware guarantee covers at all."""
    labels = corpus.nearest_centroid(embeddings)
    a = rng.integers(0, len(labels), size=pairs)
    b = rng.integers(0, len(labels), size=pairs)
    keep = a != b
    return float(np.mean(labels[a[keep]] == labels[b[keep]]))
