"""Keyphrase sequences: ensembles, zero padding (Theorem B.2), fast step == naive step, bad input."""

import math

import numpy as np
import pytest

from dpkit.kps.ensembles import build_ensemble, member_bandwidth, member_lengths, sequence_windows
from dpkit.kps.kde import release_dpkde
from dpkit.kps.rff import RandomFourierFeatures, gaussian_kernel
from dpkit.kps.sequences import (independent_sequences, iterative_sequences, naive_iterative_sequences,
                                 naive_step_scores, one_keyphrase)
from dpkit.validate import ParameterError


def unit(rng, n, d):
    x = rng.standard_normal((n, d))
    return x / np.linalg.norm(x, axis=1, keepdims=True)


@pytest.fixture(scope="module")
def corpus():
    rng = np.random.default_rng(0)
    E = unit(rng, 25, 6)
    docs = [rng.choice(25, size=rng.integers(2, 9), replace=False).tolist() for _ in range(40)]
    return E, docs


def test_member_lengths():
    assert member_lengths(10, "logarithmic") == [2, 4, 8, 10]
    assert member_lengths(8, "logarithmic") == [2, 4, 8]
    assert member_lengths(1, "logarithmic") == [1]
    assert member_lengths(2, "logarithmic") == [2]
    assert member_lengths(4, "linear") == [1, 2, 3, 4]
    for L in range(2, 40):
        assert len(member_lengths(L, "logarithmic")) == math.ceil(math.log2(L))
    with pytest.raises(ParameterError):
        member_lengths(0, "linear")
    with pytest.raises(ParameterError):
        member_lengths(3, "quadratic")
    assert member_bandwidth(4, "linear") == pytest.approx(2.0)
    assert member_bandwidth(8, "logarithmic") == pytest.approx(2.0)


def test_windows():
    rows, owners = sequence_windows([[1, 2, 3], [4], [5, 6]], 2, "all")
    assert rows.tolist() == [[1, 2], [2, 3], [5, 6]] and owners.tolist() == [0, 0, 2]
    rows, owners = sequence_windows([[1, 2, 3], [4]], 2, "first")
    assert rows.tolist() == [[1, 2]] and owners.tolist() == [0]


def test_zero_padding_theorem_exactly():
    """Theorem B.2: the padded kernel is exp(-u (D - l)) times the prefix kernel (u: block norm^2 / sigma^2)."""
    rng = np.random.default_rng(1)
    d, D, sigma = 5, 6, 1.7
    data = unit(rng, 30 * D, d).reshape(30, D * d)
    for ell in range(1, D + 1):
        y = unit(rng, ell, d).reshape(1, ell * d)
        padded = np.hstack([y, np.zeros((1, (D - ell) * d))])
        lhs = gaussian_kernel(padded, data, sigma)
        rhs = gaussian_kernel(y, data[:, :ell * d], sigma) * math.exp(-(D - ell) / sigma ** 2)
        assert np.allclose(lhs, rhs)


def test_prefix_correction_recovers_prefix_kde(corpus):
    E, docs = corpus
    ens = build_ensemble(docs, E, 4, 1e9, np.random.default_rng(2), ensemble="logarithmic", n_features=40_000)
    member = ens.members[ens.member_index(3)]            # 4 blocks, query of 3 blocks
    rows, owners = sequence_windows(docs, 4)
    from dpkit.kps.kde import document_weights
    weights, _ = document_weights(owners)
    prefix = [0, 1]
    padded_scores = naive_step_scores(member.kde, 4, E, prefix) * ens.prefix_correction(3)
    queries = np.hstack([np.repeat(E[prefix].reshape(1, -1), len(E), 0), E])
    windows = E[rows[:, :3]].reshape(len(rows), -1)
    exact = gaussian_kernel(queries, windows, member.kde.features.bandwidth) @ weights
    assert np.abs(padded_scores - exact).max() < 0.05 * weights.sum()


@pytest.mark.parametrize("ensemble", ["linear", "logarithmic"])
def test_fast_step_equals_naive(corpus, ensemble):
    E, docs = corpus
    ens = build_ensemble(docs, E, 6, 50.0, np.random.default_rng(3), ensemble=ensemble, n_features=128)
    fast = iterative_sequences(ens, E, 6, np.random.default_rng(4), choice="best", dtype=np.float64)
    naive = naive_iterative_sequences(ens, E, 6, np.random.default_rng(4), choice="best")
    assert np.array_equal(fast, naive)
    assert len(ens.members) == (6 if ensemble == "linear" else 3)
    assert sum(c.epsilon for c in ens.contracts) == pytest.approx(50.0)


def test_iterative_sampling_is_reproducible_and_distinct(corpus):
    E, docs = corpus
    ens = build_ensemble(docs, E, 8, 5.0, np.random.default_rng(5), n_features=64)
    a = iterative_sequences(ens, E, 50, np.random.default_rng(6))
    b = iterative_sequences(ens, E, 50, np.random.default_rng(6))
    assert np.array_equal(a, b) and a.shape == (50, 8)
    assert all(len(set(row)) == 8 for row in a.tolist())
    with pytest.raises(ParameterError, match="distinct"):
        iterative_sequences(build_ensemble([[0, 1]], E[:3], 4, 1.0, np.random.default_rng(0), n_features=8),
                            E[:3], 2, np.random.default_rng(0))


def test_independent_and_one_keyphrase(corpus):
    E, docs = corpus
    f = RandomFourierFeatures(6, 512, 1.0, np.random.default_rng(0))
    kde = release_dpkde(E[[i for d in docs for i in d]], f, 1e6, np.random.default_rng(1))
    s = independent_sequences(kde, E, 30, 5, np.random.default_rng(2))
    assert s.shape == (30, 5) and s.min() >= 0 and s.max() < 25
    assert np.array_equal(one_keyphrase(kde, E, 7, np.random.default_rng(2)),
                          one_keyphrase(kde, E, 7, np.random.default_rng(2)))


def test_bad_embeddings_and_arguments(corpus):
    E, docs = corpus
    with pytest.raises(ParameterError, match="unit norm"):
        build_ensemble(docs, E * 2, 3, 1.0, np.random.default_rng(0))
    bad = E.copy()
    bad[0, 0] = np.nan
    with pytest.raises(ParameterError, match="finite"):
        build_ensemble(docs, bad, 3, 1.0, np.random.default_rng(0))
    with pytest.raises(ParameterError, match="eps_kde"):
        build_ensemble(docs, E, 3, 0.0, np.random.default_rng(0))
    with pytest.raises(ParameterError, match="L"):
        build_ensemble(docs, E, 0, 1.0, np.random.default_rng(0))
    none = build_ensemble([], E, 3, 1.0, np.random.default_rng(4), n_features=8)      # zero documents:
    termless = build_ensemble([[]], E, 3, 1.0, np.random.default_rng(4), n_features=8)  # the same mechanism
    for a, b in zip(none.members, termless.members):
        assert np.array_equal(a.kde.sketch, b.kde.sketch)
    ens = build_ensemble(docs, E, 3, 1.0, np.random.default_rng(0), n_features=8)
    with pytest.raises(ParameterError, match="choice"):
        iterative_sequences(ens, E, 2, np.random.default_rng(0), choice="greedy")
    with pytest.raises(ParameterError, match="unit norm"):
        iterative_sequences(ens, E * 3, 2, np.random.default_rng(0))
