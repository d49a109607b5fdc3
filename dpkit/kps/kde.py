"""DP kernel density estimation with random Fourier features (the DP-KDE release).

What is released
----------------
For public random features ``f_1..f_I`` (:class:`~dpkit.kps.rff.RandomFourierFeatures`)
and private vectors grouped into documents, the release is the noisy *sum* sketch

    s_i = sum over documents D of  sum_{x in D} c_D(x) f_i(x)  +  Laplace(scale),   i = 1..I

where the per-document weights ``c_D`` bound each document's influence:

* ``per_document="mean"`` (default): every vector of a document gets weight
  ``1/m_D`` (``m_D`` = its number of vectors), so a document contributes the mean
  of its features however many keyphrases it has;
* ``per_document="cap"``: the first ``max_per_document`` vectors of a document get
  weight 1, later ones are dropped.

Neighbouring relation: add/remove one document (the unit of privacy).
Sensitivity: adding or removing one document changes each ``s_i`` by at most
``sqrt(2) * W`` (``|f_i| <= sqrt(2)``, total weight ``W`` = 1 for "mean", ``max_per_document``
for "cap"), so the L1 sensitivity of the sketch is ``Delta = sqrt(2) * I * W``
and Laplace noise of scale ``Delta / epsilon`` on every coordinate gives pure
``epsilon``-DP.  The dataset size does not enter: the sum is released, never a mean
divided by the (private) number of documents.  A scale computed from a private
count (``Delta / (epsilon * n)`` on the mean) is *not* DP under add/remove, because
the scale itself reveals ``n``.

Queries (post-processing, free): ``scores(y) = (1/I) sum_i s_i f_i(y)`` is an
unbiased estimate of ``sum_D sum_x c_D(x) k(x, y)`` (an un-normalized KDE);
:meth:`DPKDE.density` divides by a count the caller supplies (public, or released
separately); :meth:`DPKDE.probabilities` clips negative scores at 0 and normalizes
over the query points (documented post-processing; all-zero rows become uniform).

Audit hooks
-----------
:func:`release_dpkde` takes ``sensitivity`` and ``noise_scale`` as explicit
arguments.  ``noise_scale`` overrides the calibrated ``Delta / epsilon`` (an audit
builds "half the noise" or "a scale computed from a private count" with it); the
returned contract then states the epsilon that scale really buys
(``sensitivity / noise_scale``), not the one asked for.
:func:`appendix_noise_scale` gives the scale printed in the paper's appendix,
expressed on this sum sketch.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from dpkit.kps.rff import FEATURE_BOUND, RandomFourierFeatures, gaussian_kernel
from dpkit.privacy.contract import PrivacyContract
from dpkit.privacy.laplace import Laplace
from dpkit.validate import (ParameterError, check_choice, check_finite_array, check_int,
                            check_positive, check_rng)

PER_DOCUMENT_MODES = ("mean", "cap")


def document_weights(document_ids: Sequence[int], per_document: str = "mean",
                     max_per_document: int | None = None) -> tuple[np.ndarray, float]:
    """Per-vector weights bounding each document's total weight; returns ``(weights, W)``.

    ``W`` is the largest total weight one document can carry (the factor in the
    sensitivity).  Vectors of one document need not be contiguous; order within a
    document is the order of appearance in ``document_ids``.
    """
    check_choice("per_document", per_document, PER_DOCUMENT_MODES)
    ids = np.asarray(document_ids)
    if ids.ndim != 1:
        raise ParameterError("document_ids", document_ids, "must be a 1-d sequence of document ids")
    weights = np.zeros(len(ids))
    if per_document == "mean":
        if max_per_document is not None:
            raise ParameterError("max_per_document", max_per_document, "is only used with per_document='cap'")
        _, inverse, counts = np.unique(ids, return_inverse=True, return_counts=True)
        weights = 1.0 / counts[inverse] if len(ids) else weights
        return weights.astype(float), 1.0
    if max_per_document is None:
        raise ParameterError("max_per_document", None, "is required with per_document='cap'")
    cap = check_int("max_per_document", max_per_document, minimum=1)
    seen: dict = {}
    for position, doc in enumerate(ids.tolist()):
        seen[doc] = seen.get(doc, 0) + 1
        weights[position] = 1.0 if seen[doc] <= cap else 0.0
    return weights, float(cap)


def dpkde_sensitivity(n_features: int, document_weight: float = 1.0) -> float:
    """L1 sensitivity of the sum sketch under add/remove of one document: ``sqrt(2) * I * W``."""
    n_features = check_int("n_features", n_features, minimum=1)
    document_weight = check_positive("document_weight", document_weight)
    return FEATURE_BOUND * n_features * document_weight


def appendix_noise_scale(n_features: int, epsilon: float, n_documents: int | None = None) -> float:
    """The paper appendix's Laplace scale ``2 sqrt(2) I / epsilon``, applied there to the *mean* sketch.

    With ``n_documents`` given, the same noise is returned as a scale on the *sum*
    sketch used here (multiply by ``n``), so it can be passed as ``noise_scale``.
    """
    n_features = check_int("n_features", n_features, minimum=1)
    epsilon = check_positive("epsilon", epsilon)
    scale = 2.0 * FEATURE_BOUND * n_features / epsilon
    if n_documents is not None:
        scale *= check_int("n_documents", n_documents, minimum=1)
    return scale


def count_scaled_log_ratio(n_features: int, epsilon: float, n_documents: int, magnitude: float) -> float:
    """Log density ratio of the literal appendix release between ``n`` and ``n + 1`` documents.

    The literal release puts Laplace noise of scale ``b(n)`` =
    :func:`appendix_noise_scale` ``(I, epsilon, n)`` on every coordinate of the sum
    sketch, so the scale depends on the private ``n``.  Take neighbouring corpora
    whose sums agree (the added document's features cancel on average; any
    difference only adds ``<= sqrt(2) I / b``) and an output whose noise has size
    ``magnitude`` on every coordinate: the log ratio of the two densities is
    ``log p_{n+1} - log p_n = I (log(b(n)/b(n+1)) + magnitude/b(n) - magnitude/b(n+1))``.  It grows without
    bound in ``magnitude``, so no finite epsilon covers the release.
    """
    n_documents = check_int("n_documents", n_documents, minimum=1)
    magnitude = check_positive("magnitude", magnitude, allow_zero=True)
    b0 = appendix_noise_scale(n_features, epsilon, n_documents)
    b1 = appendix_noise_scale(n_features, epsilon, n_documents + 1)
    return n_features * (math.log(b0 / b1) + magnitude / b0 - magnitude / b1)


def kde_sketch(vectors, features: RandomFourierFeatures, weights=None) -> np.ndarray:
    """Exact (not private) weighted feature sum ``sum_x c(x) f(x)``, shape ``(I,)``."""
    vectors = check_finite_array("vectors", vectors, ndim=2)
    if weights is None:
        weights = np.ones(len(vectors))
    weights = check_finite_array("weights", weights, ndim=1)
    if len(weights) != len(vectors):
        raise ParameterError("weights", weights, f"must have one entry per vector ({len(vectors)})")
    sketch = np.zeros(features.n_features)
    keep = weights != 0
    vectors, weights = vectors[keep], weights[keep]
    for start in range(0, len(weights), 4096):  # bounded memory for large corpora
        sketch += weights[start:start + 4096] @ features.features(vectors[start:start + 4096])
    return sketch


class DPKDE:
    """A released DP-KDE: the noisy sketch plus the public features. All queries are post-processing."""

    def __init__(self, sketch: np.ndarray, features: RandomFourierFeatures, contract: PrivacyContract,
                 noise_scale: float):
        self.sketch = np.asarray(sketch, dtype=float)
        self.features = features
        self.contract = contract
        self.noise_scale = float(noise_scale)

    @property
    def n_features(self) -> int:
        return self.features.n_features

    def scores(self, points) -> np.ndarray:
        """Unbiased estimate of ``sum_x c(x) k(x, y)`` for each query row ``y`` (may be negative)."""
        return self.features.features(points) @ self.sketch / self.n_features

    def scores_from_projection(self, projection: np.ndarray) -> np.ndarray:
        """Scores when ``features.project(points)`` is already known (used by the fast iterative step)."""
        return FEATURE_BOUND * np.cos(projection + self.features.offsets) @ self.sketch / self.n_features

    def density(self, points, n_documents: float) -> np.ndarray:
        """``scores / n_documents``: a KDE estimate, given a count that is public or released separately."""
        n_documents = check_positive("n_documents", n_documents)
        return self.scores(points) / n_documents

    def probabilities(self, points) -> np.ndarray:
        """Scores clipped at 0 and normalized over the query rows (uniform if all are <= 0)."""
        return normalize_scores(self.scores(points))


def normalize_scores(scores: np.ndarray, mask: np.ndarray | None = None) -> np.ndarray:
    """Clip at 0 and normalize along the last axis; rows with no positive score become uniform.

    ``mask`` (same shape, bool) marks allowed entries; disallowed ones get probability 0.
    """
    scores = np.asarray(scores, dtype=float)
    allowed = np.ones(scores.shape, dtype=bool) if mask is None else np.asarray(mask, dtype=bool)
    clipped = np.where(allowed, np.maximum(scores, 0.0), 0.0)
    total = clipped.sum(axis=-1, keepdims=True)
    uniform = allowed / np.maximum(allowed.sum(axis=-1, keepdims=True), 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total > 0, clipped / np.where(total > 0, total, 1.0), uniform)


def release_dpkde(vectors, features: RandomFourierFeatures, epsilon: float, rng: np.random.Generator, *,
                  document_ids: Sequence[int] | None = None, per_document: str = "mean",
                  max_per_document: int | None = None, sensitivity: float | None = None,
                  noise_scale: float | None = None, unit: str = "document") -> DPKDE:
    """Release an epsilon-DP sketch of ``vectors`` (add/remove one document); see the module docstring.

    ``document_ids`` (one per row; default: every row its own document) groups
    rows into documents.  ``sensitivity`` defaults to :func:`dpkde_sensitivity`
    for the chosen per-document rule; ``noise_scale`` defaults to
    ``sensitivity / epsilon`` (override only to build audit variants).
    """
    check_rng("rng", rng)
    epsilon = check_positive("epsilon", epsilon)
    vectors = check_finite_array("vectors", vectors, ndim=2)
    if len(vectors) == 0:
        raise ParameterError("vectors", vectors, "must contain at least one vector (empty corpus)")
    if vectors.shape[1] != features.dim:
        raise ParameterError("vectors", vectors, f"must have {features.dim} columns")
    if document_ids is None:
        document_ids = np.arange(len(vectors))
    if len(document_ids) != len(vectors):
        raise ParameterError("document_ids", document_ids, f"must have one id per vector ({len(vectors)})")
    weights, doc_weight = document_weights(document_ids, per_document, max_per_document)
    exact = kde_sketch(vectors, features, weights)
    return privatize_sketch(exact, features, epsilon, rng, document_weight=doc_weight,
                            sensitivity=sensitivity, noise_scale=noise_scale, unit=unit,
                            label=f"per_document={per_document}")


def privatize_sketch(exact_sketch, features: RandomFourierFeatures, epsilon: float, rng: np.random.Generator, *,
                     document_weight: float = 1.0, sensitivity: float | None = None,
                     noise_scale: float | None = None, unit: str = "document", label: str = "",
                     built: tuple | None = None) -> DPKDE:
    """Add the Laplace noise to an exact sum sketch whose documents carry total weight <= ``document_weight``.

    The caller is responsible for that weight bound (use :func:`document_weights`);
    :func:`release_dpkde` is the entry point that enforces it. ``built``: the ``(mechanism,
    contract)`` of :func:`dpkde_mechanism`, built once by a caller that charged the contract
    (:func:`dpkit.kps.pipeline.kps_charges`); the noise is drawn with that mechanism.
    """
    check_rng("rng", rng)
    epsilon = check_positive("epsilon", epsilon)
    exact = check_finite_array("exact_sketch", exact_sketch, ndim=1)
    if exact.shape != (features.n_features,):
        raise ParameterError("exact_sketch", exact, f"must have shape ({features.n_features},)")
    mechanism, contract = built or dpkde_mechanism(features.n_features, epsilon, document_weight=document_weight,
                                                   sensitivity=sensitivity, noise_scale=noise_scale, unit=unit,
                                                   label=label)
    noisy = mechanism.release(exact, rng)
    return DPKDE(noisy, features, contract, mechanism.scale)


def dpkde_mechanism(n_features: int, epsilon: float, *, document_weight: float = 1.0,
                    sensitivity: float | None = None, noise_scale: float | None = None,
                    unit: str = "document", label: str = "") -> tuple[Laplace, PrivacyContract]:
    """The sketch's Laplace mechanism and its contract, from public parameters only.

    A caller charges the contract to its ledger before it reads any document;
    :func:`privatize_sketch` releases with exactly this mechanism.
    """
    n_features = check_int("n_features", n_features, minimum=1)
    epsilon = check_positive("epsilon", epsilon)
    if sensitivity is None:
        sensitivity = dpkde_sensitivity(n_features, document_weight)
    sensitivity = check_positive("sensitivity", sensitivity)
    if noise_scale is None:
        mechanism = Laplace(sensitivity, epsilon=epsilon, unit=unit, neighbouring="add/remove",
                            dimension=n_features)
    else:
        mechanism = Laplace(sensitivity, scale=check_positive("noise_scale", noise_scale),
                            unit=unit, neighbouring="add/remove", dimension=n_features)
    contract = mechanism.contract.replace(
        mechanism=f"DP-KDE (random Fourier features, I={n_features}{', ' + label if label else ''})",
        kind="dpkde",
        parameters={**mechanism.contract.parameters, "I": n_features, "W": float(document_weight)},
        note=f"sum sketch rounded to the grid {mechanism.grid:.3g} + exact discrete Laplace(scale="
             f"{mechanism.scale:.6g}); sensitivity sqrt(2)*I*W + I*grid, W={document_weight:g} per-document weight bound")
    return mechanism, contract


def exact_scores(vectors, points, bandwidth: float, weights=None) -> np.ndarray:
    """The exact (non-private) weighted kernel sum the DP-KDE estimates, for checks and plots."""
    kernel = gaussian_kernel(points, vectors, bandwidth)
    if weights is None:
        weights = np.ones(kernel.shape[1])
    return kernel @ np.asarray(weights, dtype=float)


def expected_score_noise_std(noise_scale: float, n_features: int) -> float:
    """Standard deviation of the noise term of one score: ``sqrt(2) * scale / sqrt(I)``.

    The noise part of ``(1/I) sum_i Lambda_i f_i(y)`` has variance
    ``(1/I^2) * I * 2 scale^2 * E[f^2] = 2 scale^2 / I`` (``E[f_i(y)^2] = 1``).
    """
    return math.sqrt(2.0) * check_positive("noise_scale", noise_scale) / math.sqrt(
        check_int("n_features", n_features, minimum=1))
