"""Measures of a set of synthetic texts against the real texts it should read like.

:func:`measure_texts` gives, for synthetic texts and a real reference set (the
real test texts):

=============================  =======================================================
``assistant_talk``             share of texts in which the model talks as an assistant
                               (:mod:`dpkit.textmetrics.assistant`, a public pattern list)
``short_texts``                share of texts under 3 words
``looping_texts``              share of texts in which a word pair occurs 3 times or more
``duplicate_texts``            share of texts that repeat an earlier text of the set
``distinct_1/2``               distinct unigrams / bigrams over all texts (Li et al. 2016);
                               ``real_distinct_1/2``: the same on as many real texts
``words_mean/median``          words per text; ``real_words_mean/median`` for the real set
``length_ks``                  Kolmogorov-Smirnov statistic between the length distributions
``length_wasserstein``         Wasserstein-1 distance between them, in words
``knn_precision/recall``       k-NN precision and recall in the sentence-embedding space
                               (Kynkäänniemi et al. 2019, k = ``knn_k``)
``auroc_real_vs_synthetic``    cross-validated AUROC of a real-vs-synthetic classifier
                               (0.5: indistinguishable, 1: separable)
=============================  =======================================================

plus ``n_synthetic`` and ``n_real``. Every measure reads released texts and real
evaluation texts only: no privacy is spent. :data:`TEXT_METRICS` names the measures.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from dpkit.textmetrics.assistant import ASSISTANT_PATTERNS, assistant_share, is_assistant_talk
from dpkit.textmetrics.detect import real_vs_synthetic_auroc
from dpkit.textmetrics.knn import DEFAULT_K, knn_precision_recall
from dpkit.textmetrics.surface import distinct_n, duplicate_share, length_report, looping_share, short_share
from dpkit.validate import ParameterError

__all__ = ["ASSISTANT_PATTERNS", "TEXT_METRICS", "assistant_share", "is_assistant_talk", "measure_texts"]

#: The measures of :func:`measure_texts`, in the order reports show them.
TEXT_METRICS = ("assistant_talk", "short_texts", "looping_texts", "duplicate_texts", "distinct_1", "distinct_2", "real_distinct_1", "real_distinct_2",
                "words_mean", "words_median", "real_words_mean", "real_words_median", "length_ks",
                "length_wasserstein", "knn_precision", "knn_recall", "knn_k", "auroc_real_vs_synthetic")


def measure_texts(synthetic: Sequence[str], real: Sequence[str], *, embedder=None, synthetic_features=None,
                  real_features=None, document_type: str | None = None, k: int = DEFAULT_K,
                  seed: int = 0) -> dict:
    """Every measure of :data:`TEXT_METRICS` of ``synthetic`` against ``real`` (module docstring).

    Embeddings: ``synthetic_features`` / ``real_features`` when given (the same
    embedder for both), else computed with ``embedder`` (any object with ``encode(texts)``, such as
    :func:`dpkit.models.embed.load_embedder`'s MiniLM; the package loads no model itself).
    ``document_type``: the instruction's document type, also counted as an echo
    (:func:`~dpkit.textmetrics.assistant.is_assistant_talk`). ``seed``: the
    cross-validation's shuffle. The distinct-n of the real set is computed on
    ``len(synthetic)`` of its texts, evenly spaced through it (distinct-n falls as a
    set grows; even spacing keeps a file sorted by label from giving one label only).
    """
    synthetic, real = [str(t) for t in synthetic], [str(t) for t in real]
    if not synthetic or not real:
        raise ParameterError("texts", f"<{len(synthetic)} synthetic, {len(real)} real>", "must both be non-empty")
    features = []
    for given, texts in ((synthetic_features, synthetic), (real_features, real)):
        if given is None:
            if embedder is None:
                raise ParameterError("embedder", None, "is needed when synthetic_features or real_features is "
                                     "not given (e.g. dpkit.models.embed.load_embedder())")
            given = embedder.encode(texts)
        features.append(np.asarray(given, dtype=np.float64))
    x_synthetic, x_real = features
    same_size = [real[i] for i in np.unique(np.linspace(0, len(real) - 1, min(len(synthetic), len(real)))
                                             .round().astype(int))]
    out = {"assistant_talk": assistant_share(synthetic, document_type), "short_texts": short_share(synthetic),
           "looping_texts": looping_share(synthetic), "duplicate_texts": duplicate_share(synthetic),
           "distinct_1": distinct_n(synthetic, 1), "distinct_2": distinct_n(synthetic, 2),
           "real_distinct_1": distinct_n(same_size, 1), "real_distinct_2": distinct_n(same_size, 2)}
    out.update(length_report(synthetic, real))
    out.update(knn_precision_recall(x_real, x_synthetic, k=k))
    out["auroc_real_vs_synthetic"] = real_vs_synthetic_auroc(x_real, x_synthetic, seed=seed)
    out.update({"n_synthetic": len(synthetic), "n_real": len(real)})
    return out
