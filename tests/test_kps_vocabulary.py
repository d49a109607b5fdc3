"""DP-KPS private vocabulary: matching, histogram, sensitivity (brute force), noise, bad input."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from dpkit.kps.vocabulary import (PhraseMatcher, max_l1_change, private_vocabulary, release_noisy_histogram,
                                  term_histogram, top_n, vocabulary_sensitivity)
from dpkit.validate import ParameterError


def test_longest_match_wins_and_matches_do_not_overlap():
    m = PhraseMatcher(["heart", "heart failure", "failure", "Acute heart failure"])
    found = [m.terms[i] for i in m.match("Acute heart failure, then heart-failure again; heart.")]
    assert found == ["acute heart failure", "heart failure", "heart"]


def test_first_terms_distinct_and_occurrences():
    m = PhraseMatcher(["a", "b", "c"])
    assert [m.terms[i] for i in m.first_terms("a a b a c", 2)] == ["a", "b"]
    assert [m.terms[i] for i in m.first_terms("a a b a c", 2, distinct=False)] == ["a", "a"]
    assert m.first_terms("nothing here", 3) == []


lists = st.lists(st.lists(st.integers(0, 5), max_size=15), min_size=1, max_size=6)


@settings(max_examples=60, deadline=None)
@given(term_lists=lists, S=st.integers(1, 6))
def test_sensitivity_is_S_by_brute_force(term_lists, S):
    """Removing any one document moves the truncated histogram by at most S in L1."""
    change = max_l1_change(term_lists, 6, S)
    assert change <= vocabulary_sensitivity(S)
    if any(len(t) >= S for t in term_lists):
        assert change == S  # the bound is attained


def test_sensitivity_brute_force_on_texts_with_phrases():
    m = PhraseMatcher(["heart failure", "heart", "lung", "x ray", "ray"])
    texts = ["heart failure and lung, x ray of the lung", "heart heart heart", "", "ray lung heart failure"]
    for S in (1, 2, 3):
        lists_ = [m.first_terms(t, S) for t in texts]
        assert max_l1_change(lists_, len(m), S) <= S


def test_noise_on_every_entry_and_scale():
    rng = np.random.default_rng(0)
    noisy, contract = release_noisy_histogram(None, 20000, 4, 2.0, rng, counts=np.zeros(20000))
    # zero counts are noised too: exact discrete Laplace(b = 2) is 0 with probability tanh(1 / (2b))
    assert np.mean(noisy == 0) == pytest.approx(np.tanh(0.25), abs=0.01)
    assert np.std(noisy) == pytest.approx(np.sqrt(2) * 4 / 2.0, rel=0.05)
    assert contract.epsilon == 2.0 and contract.sensitivity == 4 and contract.neighbouring == "add/remove"
    assert contract.unit == "document" and contract.measure == "pure"


def test_noise_scale_override_states_its_true_epsilon():
    _, contract = release_noisy_histogram([[0, 1]], 3, 2, 1.0, np.random.default_rng(0), noise_scale=1.0)
    assert contract.epsilon == pytest.approx(2.0)


def test_same_seed_same_vocabulary():
    vocab = ["alpha", "beta", "gamma", "delta"]
    texts = ["alpha beta", "beta gamma", "gamma delta alpha"]
    a = private_vocabulary(texts, vocab, 2, 2, 1.0, np.random.default_rng(3))
    b = private_vocabulary(texts, vocab, 2, 2, 1.0, np.random.default_rng(3))
    assert a.terms == b.terms and np.array_equal(a.noisy_counts, b.noisy_counts)


def test_large_epsilon_recovers_the_most_frequent_terms():
    vocab = ["alpha", "beta", "gamma", "delta"]
    texts = ["alpha beta"] * 30 + ["gamma"] * 5
    v = private_vocabulary(texts, vocab, 2, 2, 1000.0, np.random.default_rng(0))
    assert sorted(v.terms) == ["alpha", "beta"]


def test_histogram_truncates_to_S():
    assert term_histogram([[0, 1, 2, 0]], 3, S=2).tolist() == [1, 1, 0]


@pytest.mark.parametrize("kwargs, name", [
    (dict(texts=[]), "texts"),
    (dict(N=5), "N"),
    (dict(eps_voc=0.0), "eps_voc"),
    (dict(eps_voc=-1.0), "eps_voc"),
    (dict(S=0), "S"),
    (dict(texts="one string"), "texts"),
])
def test_bad_input(kwargs, name):
    args = dict(texts=["a b"], vocabulary=["a", "b"], S=1, N=1, eps_voc=1.0, rng=np.random.default_rng(0))
    args.update(kwargs)
    with pytest.raises(ParameterError) as err:
        private_vocabulary(**args)
    assert err.value.name == name


def test_documents_without_vocabulary_terms_are_allowed():
    v = private_vocabulary(["zzz", "qqq"], ["a", "b"], 1, 2, 1.0, np.random.default_rng(0))
    assert len(v) == 2


def test_top_n_and_bad_vocabulary():
    assert top_n(np.array([1.0, 3.0, 2.0]), 2).tolist() == [1, 2]
    with pytest.raises(ParameterError):
        top_n(np.array([1.0]), 2)
    with pytest.raises(ParameterError):
        PhraseMatcher([])
    with pytest.raises(ParameterError):
        PhraseMatcher(["!!"])
    with pytest.raises(ParameterError):
        release_noisy_histogram([[0]], 1, 1, 1.0, np.random.default_rng(0), counts=np.zeros(1))
    with pytest.raises(ParameterError):
        release_noisy_histogram([[0]], 1, 1, 1.0, rng=0)
