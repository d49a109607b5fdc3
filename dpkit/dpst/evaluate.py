"""Evaluation of privatized texts: similarity, empirical privacy, utility, relative gain.

Following {cite}`meisenbacher2025dpst` (Section 4.3), with small, CPU-sized
stand-ins for its fine-tuned DeBERTa classifiers: every classifier here is the
project's one classifier (:mod:`dpkit.evaluation`), a logistic regression on the
bundled MiniLM sentence embeddings.

* semantic similarity: cosine between the embeddings of each output and its input;
* empirical privacy: an attacker predicting the protected attribute (the
  outlet of a health-news tweet). *Static*: trained on original texts, tested
  on privatized ones. *Adaptive*: trained and tested on privatized texts. The
  baseline ``EP_o`` is trained and tested on original texts; lower is better;
* utility: a sentiment classifier trained on privatized training texts and
  scored on privatized test texts (the paper's protocol), reported above
  majority-class guessing;
* relative gain ``RG = U_p / U_o - EP_p / EP_o``.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
from sklearn.metrics import f1_score

from dpkit.evaluation import classifier
from dpkit.models.embed import load_embedder
from dpkit.validate import ParameterError, check_int


def _embed(texts: Sequence[str], embedder) -> np.ndarray:
    if embedder is None:
        embedder = load_embedder()
    return embedder.encode(list(texts))


def semantic_similarity(originals: Sequence[str], outputs: Sequence[str], embedder=None) -> np.ndarray:
    """Cosine similarity of each output to its original (array, one per pair)."""
    originals, outputs = list(originals), list(outputs)
    if len(originals) != len(outputs) or not originals:
        raise ParameterError("outputs", f"<{len(outputs)} texts>", f"must pair with the {len(originals)} originals")
    a, b = _embed(originals, embedder), _embed(outputs, embedder)
    return np.sum(a * b, axis=1).astype(float)


def fit_classifier(features: np.ndarray, labels: Sequence[int], seed: int = 0):
    """The project's classifier (:func:`dpkit.evaluation.classifier`) fitted on embeddings."""
    labels = np.asarray(labels)
    if len(np.unique(labels)) < 2:
        raise ParameterError("labels", labels, "need at least two classes")
    return classifier(check_int("seed", seed, minimum=0)).fit(features, labels)


def macro_f1(clf, features: np.ndarray, labels: Sequence[int]) -> float:
    return float(f1_score(np.asarray(labels), clf.predict(features), average="macro"))


def accuracy(clf, features: np.ndarray, labels: Sequence[int]) -> float:
    return float(np.mean(clf.predict(features) == np.asarray(labels)))


def majority_accuracy(train_labels: Sequence[int], test_labels: Sequence[int]) -> float:
    """Accuracy of always predicting the most frequent training label."""
    values, counts = np.unique(np.asarray(train_labels), return_counts=True)
    return float(np.mean(np.asarray(test_labels) == values[np.argmax(counts)]))


def attack_scores(train_orig: np.ndarray, train_priv: np.ndarray, train_labels, test_orig: np.ndarray,
                  test_priv: np.ndarray, test_labels, seed: int = 0) -> dict[str, float]:
    """Macro-F1 of the attacker: ``baseline`` (original/original), ``static``, ``adaptive``.

    Inputs are embedding matrices (rows aligned with the labels).
    """
    original = fit_classifier(train_orig, train_labels, seed)
    adaptive = fit_classifier(train_priv, train_labels, seed)
    return {"baseline": macro_f1(original, test_orig, test_labels),
            "static": macro_f1(original, test_priv, test_labels),
            "adaptive": macro_f1(adaptive, test_priv, test_labels)}


def relative_gain(utility_private: float, utility_original: float, privacy_private: float,
                  privacy_original: float) -> float:
    """``U_p / U_o - EP_p / EP_o`` ({cite}`meisenbacher2025dpst`); positive means privacy gained
    more than utility lost."""
    if utility_original == 0 or privacy_original == 0:
        raise ParameterError("utility_original/privacy_original", (utility_original, privacy_original),
                             "must be non-zero")
    return float(utility_private / utility_original - privacy_private / privacy_original)


def average_words(texts: Sequence[str]) -> float:
    texts = list(texts)
    if not texts:
        raise ParameterError("texts", texts, "must be non-empty")
    return float(np.mean([len(t.split()) for t in texts]))
