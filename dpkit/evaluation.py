"""The project's one downstream classifier: train on (synthetic) texts, score on real test texts.

Every chapter and ``dpkit evaluate`` use :func:`evaluate`:

* features: the bundled MiniLM sentence embeddings (384-d, unit norm);
* classifier: multinomial logistic regression (scikit-learn, ``C = 1``, lbfgs,
  deterministic); a training set with a single class gives the constant
  predictor of that class;
* metrics on the test set: ``accuracy``, ``balanced_accuracy`` (mean recall
  over the classes present in the test set) and ``macro_f1`` (over the same
  classes), each with a 95% percentile bootstrap interval over test records
  (``n_bootstrap`` resamples from a generator seeded with ``seed``: the
  interval is reproducible, and it reflects test-set sampling only, not the
  randomness of the training data);
* ``majority_baseline``: the balanced accuracy of always predicting the
  training set's most frequent label (``1/K`` when that label occurs in the
  test set's ``K`` classes), with ``majority_accuracy`` beside it.

The ``dpkit evaluate`` command (:mod:`dpkit.experiments.evaluate_release`) reports,
beside these scores, the measures of the texts themselves and, on request, a
reference that reads no record.

It runs on the client's side, on released synthetic data and real test data:
no privacy is spent.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from dpkit.models.embed import load_embedder
from dpkit.validate import ParameterError, check_in_range, check_int

METRICS = ("accuracy", "balanced_accuracy", "macro_f1")


def _scores(truth: np.ndarray, predicted: np.ndarray, n_classes: int, present: np.ndarray) -> np.ndarray:
    """(accuracy, balanced accuracy, macro-F1) from integer labels; classes = ``present`` (test classes)."""
    confusion = np.bincount(truth * n_classes + predicted, minlength=n_classes * n_classes)
    confusion = confusion.reshape(n_classes, n_classes).astype(float)
    correct = np.diag(confusion)
    support, predicted_count = confusion.sum(1), confusion.sum(0)
    accuracy = correct.sum() / max(1.0, confusion.sum())
    in_test = support[present] > 0
    recall = np.divide(correct[present], support[present], out=np.zeros(len(present)), where=support[present] > 0)
    precision = np.divide(correct[present], predicted_count[present], out=np.zeros(len(present)),
                          where=predicted_count[present] > 0)
    f1 = np.divide(2 * precision * recall, precision + recall, out=np.zeros(len(present)),
                   where=(precision + recall) > 0)
    balanced = recall[in_test].mean() if in_test.any() else 0.0
    macro = f1[in_test].mean() if in_test.any() else 0.0
    return np.array([accuracy, balanced, macro])


def score(truth: Sequence, predicted: Sequence, *, n_bootstrap: int = 1000, confidence: float = 0.95,
          seed: int = 0) -> dict:
    """Metrics of predictions against the truth, each ``{"estimate", "low", "high"}`` (bootstrap interval)."""
    truth, predicted = list(truth), list(predicted)
    if not truth or len(truth) != len(predicted):
        raise ParameterError("predicted", f"<{len(predicted)} predictions>",
                             f"must pair with a non-empty truth ({len(truth)} labels)")
    n_bootstrap = check_int("n_bootstrap", n_bootstrap, minimum=0)
    confidence = check_in_range("confidence", confidence, 0.0, 1.0, low_open=True, high_open=True)
    names = sorted(set(map(str, truth)) | set(map(str, predicted)))
    index = {name: i for i, name in enumerate(names)}
    y = np.array([index[str(v)] for v in truth])
    p = np.array([index[str(v)] for v in predicted])
    present = np.unique(y)
    estimate = _scores(y, p, len(names), present)
    rng = np.random.default_rng(check_int("seed", seed, minimum=0))
    draws = np.array([_scores(y[i], p[i], len(names), present)
                      for i in rng.integers(0, len(y), size=(n_bootstrap, len(y)))]) if n_bootstrap else None
    alpha = (1 - confidence) / 2
    out = {}
    for k, name in enumerate(METRICS):
        low, high = (np.quantile(draws[:, k], [alpha, 1 - alpha]) if draws is not None
                     else (estimate[k], estimate[k]))
        out[name] = {"estimate": float(estimate[k]), "low": float(low), "high": float(high)}
    return out


def embed_texts(texts: Sequence[str], embedder) -> np.ndarray:
    if embedder is None:
        embedder = load_embedder()
    return np.asarray(embedder.encode([str(t) for t in texts]), dtype=np.float64)


def classifier(seed: int = 0):
    """The project's classifier, unfitted: multinomial logistic regression, C = 1, lbfgs (deterministic)."""
    from sklearn.linear_model import LogisticRegression

    return LogisticRegression(max_iter=2000, C=1.0, random_state=check_int("seed", seed, minimum=0))


def train(texts: Sequence[str], labels: Sequence, *, embedder=None, features=None):
    """The classifier fitted on ``texts`` (or their ``features``): a function from embeddings to labels (strings)."""
    labels = [str(y) for y in labels]
    if not labels or (features is None and len(texts) != len(labels)):
        raise ParameterError("labels", f"<{len(labels)} labels>", "must be one per training text, at least one")
    x = embed_texts(texts, embedder) if features is None else np.asarray(features, dtype=np.float64)
    classes = sorted(set(labels))
    if len(classes) == 1:
        only = classes[0]
        return lambda feats: np.array([only] * len(feats), dtype=object)
    model = classifier().fit(x, np.array(labels, dtype=object))
    return lambda feats: model.predict(np.asarray(feats, dtype=np.float64))


def evaluate(train_texts: Sequence[str], train_labels: Sequence, test_texts: Sequence[str], test_labels: Sequence,
             *, embedder=None, train_features=None, test_features=None, n_bootstrap: int = 1000,
             seed: int = 0) -> dict:
    """Train on ``train_*``, score on ``test_*`` (see the module docstring). Labels compare as strings.

    ``train_features`` / ``test_features``: embeddings already computed with the same embedder.
    """
    test_labels = [str(y) for y in test_labels]
    if not test_labels:
        raise ParameterError("test_labels", test_labels, "must contain at least one labelled test text")
    predict = train(train_texts, train_labels, embedder=embedder, features=train_features)
    x_test = embed_texts(test_texts, embedder) if test_features is None else test_features
    out = score(test_labels, list(predict(x_test)), n_bootstrap=n_bootstrap, seed=seed)
    values, counts = np.unique([str(y) for y in train_labels], return_counts=True)
    majority = values[int(np.argmax(counts))]
    constant = score(test_labels, [majority] * len(test_labels), n_bootstrap=0)
    out["majority_baseline"] = constant["balanced_accuracy"]["estimate"]
    out["majority_accuracy"] = constant["accuracy"]["estimate"]
    out["n_train"] = len(train_labels)
    out["n_test"] = len(test_labels)
    return out


# ----------------------------------------------------------------------- CLI
