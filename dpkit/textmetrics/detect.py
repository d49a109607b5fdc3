"""How well a classifier tells synthetic texts from real ones: the cross-validated AUROC.

A logistic regression with the settings of the project's classifier
(:func:`dpkit.evaluation.classifier`: C = 1, lbfgs, deterministic) learns real (1) against synthetic (0) from the sentence embeddings, in stratified
``folds``-fold cross-validation (shuffled with ``seed``); each fold's held-out texts
are scored, and the AUROC is the mean over folds of the area under the ROC curve of
those scores. 0.5: the classifier cannot tell the sets apart (the synthetic texts are,
to it, draws from the real distribution); 1.0: it separates them perfectly. Values
below 0.5 are chance fluctuations around 0.5, or exact copies: a synthetic text that
copies a real one puts the same point in both classes, and the held-out copy is
scored by a model that learnt its twin with the other label.
"""

from __future__ import annotations

import numpy as np

from dpkit.validate import ParameterError, check_int

#: The number of cross-validation folds (fewer when a set has fewer texts).
DEFAULT_FOLDS = 5


def real_vs_synthetic_auroc(real: np.ndarray, synthetic: np.ndarray, *, folds: int = DEFAULT_FOLDS,
                            seed: int = 0) -> float:
    """Mean held-out AUROC of real-vs-synthetic logistic regression (nan when a set has fewer than 2 rows)."""
    from sklearn import linear_model, metrics, model_selection

    folds, seed = check_int("folds", folds, minimum=2), check_int("seed", seed, minimum=0)
    real, synthetic = np.asarray(real, dtype=np.float64), np.asarray(synthetic, dtype=np.float64)
    if real.ndim != 2 or synthetic.ndim != 2 or real.shape[1:] != synthetic.shape[1:]:
        raise ParameterError("features", f"<real {real.shape}, synthetic {synthetic.shape}>",
                             "must be two 2-d arrays with the same number of columns")
    n_folds = min(folds, len(real), len(synthetic))
    if n_folds < 2:
        return float("nan")
    x = np.vstack([real, synthetic])
    y = np.r_[np.ones(len(real), dtype=int), np.zeros(len(synthetic), dtype=int)]
    scores = []
    for train, held in model_selection.StratifiedKFold(n_folds, shuffle=True, random_state=seed).split(x, y):
        model = linear_model.LogisticRegression(max_iter=2000, C=1.0, random_state=seed).fit(x[train], y[train])
        scores.append(metrics.roc_auc_score(y[held], model.decision_function(x[held])))
    return float(np.mean(scores))
