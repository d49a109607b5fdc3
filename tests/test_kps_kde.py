"""DP-KDE: random Fourier features, sensitivity (brute force), noise, post-processing, bad input."""

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from dpkit.kps.kde import (appendix_noise_scale, document_weights, dpkde_sensitivity, exact_scores,
                           expected_score_noise_std, kde_sketch, normalize_scores, release_dpkde)
from dpkit.kps.rff import RandomFourierFeatures, gaussian_kernel
from dpkit.validate import ParameterError


def unit(rng, n, d):
    x = rng.standard_normal((n, d))
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def test_features_are_unbiased_for_the_kernel_and_bounded():
    rng = np.random.default_rng(0)
    x, y = unit(rng, 3, 5), unit(rng, 4, 5)
    for bandwidth in (0.7, 1.0, 2.0):
        f = RandomFourierFeatures(5, 200_000, bandwidth, np.random.default_rng(1))
        estimate = f.features(x) @ f.features(y).T / f.n_features
        assert np.abs(estimate - gaussian_kernel(x, y, bandwidth)).max() < 0.02
        assert np.abs(f.features(x)).max() <= math.sqrt(2) + 1e-12


def test_weights_bound_each_document():
    w, W = document_weights([0, 0, 0, 1, 2, 2])
    assert W == 1.0 and np.allclose(w, [1 / 3] * 3 + [1.0] + [0.5] * 2)
    w, W = document_weights([0, 0, 0, 1], "cap", max_per_document=2)
    assert W == 2.0 and w.tolist() == [1, 1, 0, 1]


@settings(max_examples=25, deadline=None)
@given(sizes=st.lists(st.integers(1, 30), min_size=1, max_size=6), seed=st.integers(0, 1000),
       mode=st.sampled_from(["mean", "cap"]))
def test_sketch_sensitivity_by_brute_force(sizes, seed, mode):
    """Removing any document (however many keyphrases it has) moves the sketch by <= sqrt(2) I W in L1."""
    rng = np.random.default_rng(seed)
    f = RandomFourierFeatures(4, 64, 1.0, rng)
    ids = np.repeat(np.arange(len(sizes)), sizes)
    vectors = unit(rng, len(ids), 4)
    kw = dict(max_per_document=3) if mode == "cap" else {}
    weights, W = document_weights(ids, mode, **kw)
    full = kde_sketch(vectors, f, weights)
    bound = dpkde_sensitivity(64, W)
    for doc in range(len(sizes)):
        keep = ids != doc
        w_rest, _ = document_weights(ids[keep], mode, **kw)
        rest = kde_sketch(vectors[keep], f, w_rest) if keep.any() else np.zeros(64)
        change = full - rest
        assert np.abs(change).sum() <= bound + 1e-9
        assert np.abs(change).max() <= math.sqrt(2) * W + 1e-9


def test_noise_scale_and_contract():
    rng = np.random.default_rng(0)
    f = RandomFourierFeatures(3, 100, 1.0, rng)
    kde = release_dpkde(unit(rng, 10, 3), f, 2.0, rng)
    assert kde.noise_scale == pytest.approx(math.sqrt(2) * 100 / 2.0)
    c = kde.contract
    assert (c.neighbouring, c.unit, c.measure, c.epsilon) == ("add/remove", "document", "pure", 2.0)
    assert c.sensitivity == pytest.approx(math.sqrt(2) * 100)
    half = release_dpkde(unit(rng, 10, 3), f, 2.0, rng, noise_scale=kde.noise_scale / 2)
    assert half.contract.epsilon == pytest.approx(4.0)  # an override states what it really buys
    capped = release_dpkde(unit(rng, 10, 3), f, 2.0, rng, document_ids=[0] * 10, per_document="cap",
                           max_per_document=4)
    assert capped.contract.sensitivity == pytest.approx(4 * math.sqrt(2) * 100)


def test_large_epsilon_scores_match_exact_kde():
    rng = np.random.default_rng(1)
    data, queries = unit(rng, 50, 6), unit(rng, 8, 6)
    f = RandomFourierFeatures(6, 50_000, 1.0, np.random.default_rng(2))
    kde = release_dpkde(data, f, 1e9, np.random.default_rng(3))
    exact = exact_scores(data, queries, 1.0)
    assert np.abs(kde.scores(queries) - exact).max() < 0.05 * len(data)
    assert np.allclose(kde.density(queries, 50), kde.scores(queries) / 50)


def test_score_noise_std_matches_formula():
    rng = np.random.default_rng(0)
    f = RandomFourierFeatures(4, 256, 1.0, rng)
    data, q = unit(rng, 5, 4), unit(rng, 1, 4)
    scores = np.array([release_dpkde(data, f, 1.0, np.random.default_rng(s)).scores(q)[0] for s in range(2000)])
    expected = expected_score_noise_std(dpkde_sensitivity(256) / 1.0, 256)
    assert np.std(scores) == pytest.approx(expected * np.sqrt(np.mean(f.features(q) ** 2)), rel=0.08)


def test_appendix_scale_numbers():
    assert appendix_noise_scale(4096, 5.0) == pytest.approx(2 * math.sqrt(2) * 4096 / 5)
    assert appendix_noise_scale(10, 1.0, n_documents=7) == pytest.approx(7 * 2 * math.sqrt(2) * 10)


def test_normalize_scores_post_processing():
    p = normalize_scores(np.array([[-1.0, 1.0, 3.0], [-1.0, -2.0, -3.0]]))
    assert np.allclose(p, [[0, 0.25, 0.75], [1 / 3] * 3])
    p = normalize_scores(np.array([[1.0, 1.0, 2.0]]), mask=np.array([[True, True, False]]))
    assert np.allclose(p, [[0.5, 0.5, 0.0]])


def test_bad_input():
    rng = np.random.default_rng(0)
    f = RandomFourierFeatures(3, 8, 1.0, rng)
    with pytest.raises(ParameterError, match="empty"):
        release_dpkde(np.zeros((0, 3)), f, 1.0, rng)
    with pytest.raises(ParameterError, match="epsilon"):
        release_dpkde(unit(rng, 2, 3), f, 0.0, rng)
    with pytest.raises(ParameterError, match="finite"):
        release_dpkde(np.full((2, 3), np.nan), f, 1.0, rng)
    with pytest.raises(ParameterError, match="columns"):
        release_dpkde(unit(rng, 2, 4), f, 1.0, rng)
    with pytest.raises(ParameterError, match="bandwidth"):
        RandomFourierFeatures(3, 8, 0.0, rng)
    with pytest.raises(ParameterError, match="rng"):
        RandomFourierFeatures(3, 8, 1.0, 0)
    with pytest.raises(ParameterError, match="max_per_document"):
        document_weights([0, 1], "cap")


def test_count_scaled_noise_has_unbounded_privacy_loss():
    from scipy.stats import laplace

    from dpkit.kps.kde import appendix_noise_scale, count_scaled_log_ratio

    I, eps, n = 1024, 5.0, 960
    b0, b1 = appendix_noise_scale(I, eps, n), appendix_noise_scale(I, eps, n + 1)
    for magnitude in (0.0, 1e6, 1e8):
        independent = I * (laplace.logpdf(magnitude, scale=b1) - laplace.logpdf(magnitude, scale=b0))
        assert count_scaled_log_ratio(I, eps, n, magnitude) == pytest.approx(independent, rel=1e-9, abs=1e-9)
    assert count_scaled_log_ratio(I, eps, n, 1e8) > 100 > 1 > count_scaled_log_ratio(I, eps, n, 1e6)
