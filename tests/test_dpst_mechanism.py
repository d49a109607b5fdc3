"""The exponential mechanism inside a neighbourhood, the neighbourhood choice, the corpus."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from dpkit.dpst import mechanism
from dpkit.dpst.corpus import TripleBank, TripleCorpus, cluster_bank
from dpkit.dpst.hashing import HashEmbedder, toy_corpus
from dpkit.dpst.index import BruteForceIndex
from dpkit.validate import ParameterError


def _unit_rows(rng, n, d):
    x = rng.normal(size=(n, d))
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def test_utility_is_clipped_cosine():
    cands = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0], [0.6, 0.8]])
    u = mechanism.clipped_cosine(cands, np.array([1.0, 0.0]))
    np.testing.assert_allclose(u, [1.0, 0.0, 0.0, 0.6], atol=1e-6)


def test_log_probabilities_are_exactly_exp_eps_u_over_2():
    rng = np.random.default_rng(0)
    cands, x = _unit_rows(rng, 7, 5), _unit_rows(rng, 1, 5)[0]
    eps = 1.7
    u = np.clip(cands @ x, 0, 1)
    expected = eps * u / 2 - np.log(np.sum(np.exp(eps * u / 2)))
    np.testing.assert_allclose(mechanism.log_probabilities(cands, x, eps), expected, atol=1e-6)


def test_sampling_matches_probabilities():
    rng = np.random.default_rng(1)
    cands, x = _unit_rows(rng, 5, 4), _unit_rows(rng, 1, 4)[0]
    draws = mechanism.sample_in_neighbourhood(cands, x, 6.0, np.random.default_rng(2), size=40000)
    freq = np.bincount(draws, minlength=5) / 40000
    probs = np.exp(mechanism.log_probabilities(cands, x, 6.0))
    assert np.max(np.abs(freq - probs)) < 0.01  # ~4 standard errors at n=40000


def test_vectorized_shapes_and_determinism():
    rng = np.random.default_rng(3)
    cands, xs = _unit_rows(rng, 9, 4), _unit_rows(rng, 3, 4)
    a = mechanism.sample_in_neighbourhood(cands, xs, 1.0, np.random.default_rng(5), size=(10,))
    b = mechanism.sample_in_neighbourhood(cands, xs, 1.0, np.random.default_rng(5), size=(10,))
    assert a.shape == (10, 3) and np.array_equal(a, b)
    assert mechanism.sample_neighbourhood(cands, xs[0], 1.0, np.random.default_rng(0)).shape == ()


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10_000), st.floats(0.01, 20.0))
def test_any_two_inputs_within_exp_eps_for_fixed_candidates(seed, eps):
    rng = np.random.default_rng(seed)
    cands, xy = _unit_rows(rng, 6, 3), _unit_rows(rng, 2, 3)
    diff = mechanism.log_probabilities(cands, xy[0], eps) - mechanism.log_probabilities(cands, xy[1], eps)
    assert np.max(np.abs(diff)) <= eps + 1e-9


@pytest.mark.parametrize("eps", [0.0, -1.0, float("nan"), float("inf")])
def test_epsilon_must_be_positive(eps):
    with pytest.raises(ParameterError, match="epsilon"):
        mechanism.sample_in_neighbourhood(np.eye(2), np.array([1.0, 0.0]), eps, np.random.default_rng(0))


def test_bad_embeddings_and_rng():
    with pytest.raises(ParameterError, match="rng"):
        mechanism.sample_in_neighbourhood(np.eye(2), np.array([1.0, 0.0]), 1.0, None)
    with pytest.raises(ParameterError, match="input_embedding"):
        mechanism.clipped_cosine(np.eye(2), np.ones(3))
    with pytest.raises(ParameterError, match="candidate_embeddings"):
        mechanism.clipped_cosine(np.zeros((0, 2)), np.ones(2))
    with pytest.raises(ParameterError, match="input_embedding"):
        mechanism.clipped_cosine(np.eye(2), np.zeros(2))


def test_nearest_neighbourhood_is_argmax_cosine():
    rng = np.random.default_rng(4)
    cents, xs = _unit_rows(rng, 8, 5), _unit_rows(rng, 20, 5)
    np.testing.assert_array_equal(mechanism.nearest_neighbourhood(cents, xs), np.argmax(xs @ cents.T, axis=1))
    _, ids = BruteForceIndex(cents).search(xs, 3)
    assert np.array_equal(ids[:, 0], np.argmax(xs @ cents.T, axis=1))


def test_corpus_clusters_partition_and_roundtrip(tmp_path):
    corpus, _ = toy_corpus(k=6)
    members = np.concatenate([corpus.members(c) for c in range(corpus.k)])
    assert sorted(members.tolist()) == list(range(len(corpus)))
    assert corpus.sizes().min() >= 1
    path = corpus.save(tmp_path / "c.npz")
    again = TripleCorpus.load(path)
    assert np.array_equal(again.labels, corpus.labels) and list(again.texts) == list(corpus.texts)
    np.testing.assert_array_equal(again.centroids, corpus.centroids)


def test_k_larger_than_corpus_is_an_error():
    with pytest.raises(ParameterError, match="k=41"):
        toy_corpus(k=41)


def test_empty_clusters_are_dropped():
    emb = HashEmbedder(8).encode(["same words"] * 10 + ["other"] * 2)
    bank = TripleBank(np.array(["t"] * 12), emb)
    corpus = cluster_bank(bank, 5)
    assert corpus.k <= 2 and corpus.sizes().min() >= 1 and corpus.meta["k_requested"] == 5


def test_faiss_index_agrees_with_brute_force():
    pytest.importorskip("faiss")
    from dpkit.dpst.index import FaissIndex, VectorIndex

    rng = np.random.default_rng(6)
    cents, xs = _unit_rows(rng, 30, 8), _unit_rows(rng, 50, 8)
    index = FaissIndex(cents)
    assert isinstance(index, VectorIndex) and len(index) == 30
    _, ids = index.search(xs, 2)
    np.testing.assert_array_equal(ids, BruteForceIndex(cents).search(xs, 2)[1])
    corpus, _ = toy_corpus(k=6)
    plugged = TripleCorpus(corpus.texts, corpus.embeddings, corpus.labels, corpus.centroids, index_factory=FaissIndex)
    np.testing.assert_array_equal(plugged.nearest_centroid(corpus.embeddings),
                                  corpus.nearest_centroid(corpus.embeddings))


def test_utilities_are_computed_in_float64():
    from dpkit.dpst.mechanism import clipped_cosine

    rng = np.random.default_rng(0)
    candidates = rng.standard_normal((50, 384)).astype(np.float32)
    x = rng.standard_normal(384).astype(np.float32)
    c64 = candidates.astype(np.float64) / np.linalg.norm(candidates.astype(np.float64), axis=1, keepdims=True)
    x64 = x.astype(np.float64) / np.linalg.norm(x.astype(np.float64))
    got = clipped_cosine(candidates, x)
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, np.clip(c64 @ x64, 0.0, 1.0), rtol=0, atol=1e-15)  # float32 is off by ~1e-8
