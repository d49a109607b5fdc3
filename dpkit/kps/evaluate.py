"""Downstream utility: train a classifier on a (synthetic) corpus, test on the real held-out split.

The scores come from the project's one classifier (:mod:`dpkit.evaluation`:
logistic regression on MiniLM embeddings). For domain adaptation a small MLP on
the same frozen embeddings is kept, trained full-batch with Adam, with optional
Deep CORAL {cite}`sun2016deep`: the loss gains
``coral_weight * ||C_s - C_t||_F^2 / (4 h^2)``, the distance between the
covariances of the hidden activations on the training (synthetic) texts and on an
*unlabeled* client set, which must be disjoint from the test set.  With
``coral_weight=0`` the same model and training run without adaptation, so the two
numbers differ only by the CORAL term.

Everything here runs on the client side, on released synthetic data and the
client's own texts: no privacy is spent.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import torch

from dpkit.evaluation import METRICS, evaluate
from dpkit.kps.vocabulary import PhraseMatcher
from dpkit.validate import ParameterError, check_finite_array, check_int, check_positive


def coral_loss(source, target):
    """Deep CORAL: ``||cov(source) - cov(target)||_F^2 / (4 h^2)`` for (n, h) torch tensors."""
    def cov(x):
        x = x - x.mean(0, keepdim=True)
        return x.T @ x / max(len(x) - 1, 1)

    h = source.shape[1]
    return torch.sum((cov(source) - cov(target)) ** 2) / (4.0 * h * h)


def train_classifier(x_train, y_train, n_classes: int, *, x_unlabeled=None, coral_weight: float = 0.0,
                     hidden: int = 64, epochs: int = 300, lr: float = 1e-2, weight_decay: float = 1e-3,
                     seed: int = 0):
    """Fit the MLP; returns a function mapping embeddings to predicted labels."""
    x_train = check_finite_array("x_train", x_train, ndim=2)
    y_train = np.asarray(y_train)
    if len(x_train) == 0:
        raise ParameterError("x_train", x_train, "must contain at least one example")
    if y_train.shape != (len(x_train),):
        raise ParameterError("y_train", y_train, f"must have one label per row ({len(x_train)})")
    n_classes = check_int("n_classes", n_classes, minimum=2)
    coral_weight = check_positive("coral_weight", coral_weight, allow_zero=True)
    if coral_weight > 0:
        if x_unlabeled is None or len(x_unlabeled) < 2:
            raise ParameterError("x_unlabeled", x_unlabeled, "needs at least 2 unlabeled client texts for CORAL")
        x_unlabeled = check_finite_array("x_unlabeled", x_unlabeled, ndim=2)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # a tiny model: extra threads only add synchronisation cost
    try:
        return _fit(x_train, y_train, n_classes, x_unlabeled, coral_weight, hidden, epochs, lr, weight_decay, seed)
    finally:
        torch.set_num_threads(threads)


def _fit(x_train, y_train, n_classes, x_unlabeled, coral_weight, hidden, epochs, lr, weight_decay, seed):
    gen = torch.Generator().manual_seed(int(seed))
    model = torch.nn.Sequential(torch.nn.Linear(x_train.shape[1], hidden), torch.nn.ReLU(),
                                torch.nn.Linear(hidden, n_classes))
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn(p.shape, generator=gen) * (1.0 / np.sqrt(p.shape[-1])))
    xs = torch.as_tensor(x_train, dtype=torch.float32)
    ys = torch.as_tensor(np.array(y_train), dtype=torch.long)
    xt = None if x_unlabeled is None else torch.as_tensor(x_unlabeled, dtype=torch.float32)
    opt = torch.optim.Adam(model.parameters(), lr=lr, weight_decay=weight_decay)
    for _ in range(check_int("epochs", epochs, minimum=1)):
        opt.zero_grad()
        hidden_s = model[1](model[0](xs))
        loss = torch.nn.functional.cross_entropy(model[2](hidden_s), ys)
        if coral_weight > 0:
            loss = loss + coral_weight * coral_loss(hidden_s, model[1](model[0](xt)))
        loss.backward()
        opt.step()
    model.eval()

    def predict(x):
        with torch.no_grad():
            return model(torch.as_tensor(np.asarray(x), dtype=torch.float32)).argmax(1).numpy()

    return predict


def accuracy(predict, x_test, y_test) -> float:
    """Fraction of correct predictions."""
    y_test = np.asarray(y_test)
    if len(y_test) == 0:
        raise ParameterError("y_test", y_test, "must contain at least one example")
    return float(np.mean(predict(x_test) == y_test))


def evaluate_corpus(train_texts: Sequence[str], train_labels, test_texts: Sequence[str], test_labels,
                    embedder, n_classes: int, *, unlabeled_texts: Sequence[str] | None = None,
                    coral_weight: float = 1.0, seed: int = 0, test_embeddings=None) -> dict:
    """Scores on the real test split of a classifier trained on ``train_texts``.

    ``accuracy``, ``balanced_accuracy``, ``macro_f1`` (and ``intervals``, their 95%
    bootstrap intervals) come from the project's one classifier,
    :func:`dpkit.evaluation.evaluate`. With ``unlabeled_texts`` the small MLP is
    trained twice on the same features, without and with the Deep CORAL term:
    ``accuracy_mlp`` and ``accuracy_coral`` differ only by that term.
    """
    x_train = embedder.encode(list(train_texts))
    x_test = embedder.encode(list(test_texts)) if test_embeddings is None else test_embeddings
    scores = evaluate(train_texts, train_labels, test_texts, test_labels, embedder=embedder, train_features=x_train,
                      test_features=x_test, seed=seed)
    out = {m: scores[m]["estimate"] for m in METRICS}
    out["intervals"] = {m: [scores[m]["low"], scores[m]["high"]] for m in METRICS}
    out["majority_baseline"] = scores["majority_baseline"]
    if unlabeled_texts is not None:
        x_u = embedder.encode(list(unlabeled_texts))
        plain = train_classifier(x_train, train_labels, n_classes, seed=seed)
        out["accuracy_mlp"] = accuracy(plain, x_test, test_labels)
        predict = train_classifier(x_train, train_labels, n_classes, x_unlabeled=x_u,
                                   coral_weight=coral_weight, seed=seed)
        out["accuracy_coral"] = accuracy(predict, x_test, test_labels)
    return out


def keyphrase_documents(texts: Sequence[str], terms: Sequence[str], L: int) -> list[str]:
    """The "no LLM" view of real documents: each text mapped to its first ``L`` private-vocabulary terms."""
    matcher = PhraseMatcher(terms)
    L = check_int("L", L, minimum=1)
    return [", ".join(matcher.terms[i] for i in matcher.first_terms(t, L)) for t in texts]
