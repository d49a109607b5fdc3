"""Audits of DP-KPS's two releases: the vocabulary histogram and the DP-KDE sketch.

Both wrap :mod:`dpkit.kps` itself (``release_noisy_histogram``, ``release_dpkde``):
one call per sample, since each call is one release (with the exact discrete Laplace
sampler of the release mode, a few milliseconds each, so the test sizes are small and
the pairs' statistics the Laplace log-likelihood ratio, the most powerful one). The broken variants in
:mod:`dpkit.audit.mechanism.adapters.broken` use the same functions through their ``noise_scale``
hooks.
"""

from __future__ import annotations

import math

import numpy as np

from dpkit.audit.mechanism.registry import AuditCase, AuditSpec, register
from dpkit.audit.mechanism.tester import deviation_size, laplace_llr
from dpkit.kps.kde import kde_sketch, release_dpkde
from dpkit.kps.rff import RandomFourierFeatures
from dpkit.kps.vocabulary import release_noisy_histogram, term_histogram

#: A tiny public vocabulary and a per-document cap S: D1 adds one document with 2S distinct terms.
VOCABULARY_SIZE = 10
S = 3
BASE_DOCUMENTS = [[0, 1], [2], [0, 2]]
LONG_DOCUMENT = [3, 4, 5, 6, 7, 8]

#: DP-KDE: I random Fourier features on R^dim, I <= dim so a worst-case vector exists.
KDE_DIM = 8
KDE_FEATURES = 4
KDE_BANDWIDTH = 1.0
KDE_FEATURE_SEED = 12345  # the features are public: a fixed seed


def repeat(release, n: int) -> np.ndarray:
    """Stack ``n`` independent releases (each ``release()`` call draws fresh noise)."""
    first = np.asarray(release(), dtype=float)
    out = np.empty((n,) + first.shape)
    out[0] = first
    for i in range(1, n):
        out[i] = release()
    return out


def vocabulary_pair() -> tuple[list[list[int]], list[list[int]]]:
    return [list(d) for d in BASE_DOCUMENTS], [list(d) for d in BASE_DOCUMENTS] + [list(LONG_DOCUMENT)]


def vocabulary_mechanism(epsilon: float, noise_scale=None):
    """``(documents, n, rng) -> n noisy histograms`` through ``release_noisy_histogram``."""

    def mechanism(documents, n, rng):
        scale = noise_scale(documents) if callable(noise_scale) else noise_scale
        return repeat(lambda: release_noisy_histogram(documents, VOCABULARY_SIZE, S, epsilon, rng,
                                                      noise_scale=scale)[0], n)

    return mechanism


def vocabulary_case(epsilon: float, noise_scale=None) -> AuditCase:
    d0, d1 = vocabulary_pair()
    a, b = term_histogram(d0, VOCABULARY_SIZE, S), term_histogram(d1, VOCABULARY_SIZE, S)
    _, contract = release_noisy_histogram(d0, VOCABULARY_SIZE, S, epsilon, np.random.default_rng(0))
    return AuditCase(
        mechanism=vocabulary_mechanism(epsilon, noise_scale), d0=d0, d1=d1, claimed_epsilon=epsilon,
        output="continuous", statistics={"laplace_llr": laplace_llr(a, b)}, contract=contract,
        pair_loss=float(np.abs(b - a).sum()) * epsilon / S if noise_scale is None else None,
        describe_pair={"vocabulary_size": VOCABULARY_SIZE, "S": S, "added_document": LONG_DOCUMENT},
        why_worst_case=f"the added document holds {len(LONG_DOCUMENT)} distinct terms, more than S={S}, so "
                       f"after truncation it moves S counts by one each: an L1 change of exactly S, the "
                       "sensitivity; the Laplace log-likelihood ratio over those counts is the most "
                       "powerful statistic")


def kde_features() -> RandomFourierFeatures:
    return RandomFourierFeatures(KDE_DIM, KDE_FEATURES, KDE_BANDWIDTH, np.random.default_rng(KDE_FEATURE_SEED))


def extreme_vector(features: RandomFourierFeatures) -> np.ndarray:
    """A vector whose every feature is at +-sqrt(2): solve ``W x + b = k pi`` (needs I <= dim)."""
    target = np.round(features.offsets / math.pi) * math.pi - features.offsets
    x, *_ = np.linalg.lstsq(features.weights, target, rcond=None)
    return x


def kde_pair(n_base: int = 3) -> tuple[np.ndarray, np.ndarray]:
    features = kde_features()
    base = np.random.default_rng(KDE_FEATURE_SEED + 1).normal(size=(n_base, KDE_DIM))
    base /= np.linalg.norm(base, axis=1, keepdims=True)
    return base, np.vstack([base, extreme_vector(features)])


def kde_mechanism(epsilon: float, noise_scale=None):
    """``(vectors, n, rng) -> n released sketches`` through ``release_dpkde`` (one document per vector)."""
    features = kde_features()

    def mechanism(vectors, n, rng):
        vectors = np.asarray(vectors, dtype=float)
        scale = noise_scale(vectors) if callable(noise_scale) else noise_scale
        return repeat(lambda: release_dpkde(vectors, features, epsilon, rng, noise_scale=scale).sketch, n)

    return mechanism


def kde_case(epsilon: float, noise_scale=None, n_base: int = 3) -> AuditCase:
    features = kde_features()
    d0, d1 = kde_pair(n_base)
    a, b = kde_sketch(d0, features), kde_sketch(d1, features)
    contract = release_dpkde(d0, features, epsilon, np.random.default_rng(0)).contract
    return AuditCase(
        mechanism=kde_mechanism(epsilon, noise_scale), d0=d0.tolist(), d1=d1.tolist(), claimed_epsilon=epsilon,
        output="continuous", contract=contract,
        pair_loss=float(np.abs(b - a).sum()) / contract.sensitivity * epsilon if noise_scale is None else None,
        statistics={"laplace_llr": laplace_llr(a, b), "spread_around_D0": deviation_size(a),
                    "spread_around_D1": deviation_size(b)},
        describe_pair={"features": KDE_FEATURES, "dim": KDE_DIM, "bandwidth": KDE_BANDWIDTH,
                       "feature_seed": KDE_FEATURE_SEED, "sketch_change_L1": float(np.abs(b - a).sum())},
        why_worst_case="the added document's vector solves W x + b = k pi, so every random feature sits at "
                       "its extreme +-sqrt(2): the sketch moves by sqrt(2) I in L1, exactly the sensitivity "
                       "(with I <= dim such a vector exists; it need not be unit-norm, and the bound does "
                       "not assume it)")


register(AuditSpec("kps_vocabulary", "DP-KPS",
                   "noisy vocabulary histogram, first S terms per document (dpkit.kps.release_noisy_histogram)",
                   vocabulary_case, test_samples=2_500, max_samples=10_000))
register(AuditSpec("kps_dpkde", "DP-KPS", "DP-KDE random-Fourier-feature sketch (dpkit.kps.release_dpkde)",
                   kde_case, test_samples=2_500, max_samples=10_000))
