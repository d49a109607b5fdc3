"""The data-dependence measures of DP-ST releases (dpkit.dpst.overlap)."""

import numpy as np
import pytest

from dpkit.dpst.hashing import toy_corpus
from dpkit.dpst.overlap import data_free_overlap, positional_agreement, triple_overlap
from dpkit.dpst.privatize import DPST
from dpkit.validate import ParameterError


def test_triple_overlap_counts_occurrences_and_distinct_texts():
    a = [["x", "y"], ["x", "z"]]
    b = [["x", "w"], ["w", "w"]]
    o = triple_overlap(a, b)
    assert o.a_in_b == pytest.approx(2 / 4) and o.b_in_a == pytest.approx(1 / 4)
    assert o.jaccard == pytest.approx(1 / 4) and (o.distinct_a, o.distinct_b) == (3, 2)
    assert (o.triples_a, o.triples_b) == (4, 4)
    assert triple_overlap(a, a).a_in_b == 1.0 and triple_overlap(a, [["q"]]).a_in_b == 0.0
    for bad in ([], "x y", [["x"], 3], [[]]):
        with pytest.raises(ParameterError):
            triple_overlap(bad, b)


def test_positional_agreement_compares_slot_by_slot():
    assert positional_agreement([["x", "y"], ["z", "w"]], [["x", "q"], ["w", "z"]]) == pytest.approx(1 / 4)
    with pytest.raises(ParameterError):
        positional_agreement([["x"]], [["x"], ["y"]])


def test_data_free_limit_matches_releases_at_tiny_epsilon_and_not_at_large():
    corpus, embedder = toy_corpus(k=6)
    sizes = [len(corpus.members(c)) for c in range(corpus.k)]
    free = data_free_overlap(corpus, 400)
    assert 0 < free < 1
    assert data_free_overlap(corpus, 10 ** 9) == pytest.approx(1.0)       # b holds every triple
    # one neighbourhood of one triple: a triple drawn with p = 1/k is in b with 1 - (1 - 1/k)^n
    assert free >= (1 / corpus.k) * (1 - (1 - 1 / (corpus.k * max(sizes))) ** 400)
    with pytest.raises(ParameterError):
        data_free_overlap(corpus, 0)
    texts_a = ["The mayor opened a new bridge.", "The council approved the budget."] * 50
    texts_b = ["Doctors treated the patients.", "The flu spread in schools."] * 50
    scorer = lambda t: np.array([len(x) for x in t], float)          # noqa: E731

    def release(texts, eps, seed):
        return DPST(corpus, eps, "document", slots=2, embedder=embedder, scorer=scorer).privatize_batch(
            texts, np.random.default_rng(seed))

    tiny = triple_overlap(release(texts_a, 1e-6, 1), release(texts_b, 1e-6, 2)).a_in_b
    assert abs(tiny - data_free_overlap(corpus, 200)) < 0.15          # data-free: as the formula says
    sharp_a, sharp_b = release(texts_a, 1e6, 1), release(texts_b, 1e6, 2)
    assert triple_overlap(sharp_a, release(texts_a, 1e6, 3)).a_in_b > triple_overlap(sharp_a, sharp_b).a_in_b
    # the same seed for two data sets: near-uniform draws pick the same candidates
    same = positional_agreement(release(texts_a, 1e-6, 1), release(texts_b, 1e-6, 1))
    assert same > positional_agreement(release(texts_a, 1e-6, 1), release(texts_b, 1e-6, 2)) + 0.3


def test_topic_variant_data_free_limit_uses_its_pool():
    from dpkit.dpst.topic import TopicDPST

    corpus, embedder = toy_corpus(k=4)
    assert data_free_overlap(corpus, 50, pool=1) > data_free_overlap(corpus, 50)  # fewer candidates: more overlap
    with pytest.raises(ParameterError, match="pool"):
        data_free_overlap(corpus, 50, pool=0)
    texts_a = ["The mayor opened a new bridge.", "The council approved the budget."] * 100
    texts_b = ["Doctors treated the patients.", "The flu spread in schools."] * 100

    def release(texts, eps, seed):
        return TopicDPST(corpus, eps, triples=1, pool=3, embedder=embedder).privatize_batch(
            texts, np.random.default_rng(seed))

    tiny = triple_overlap(release(texts_a, 1e-6, 1), release(texts_b, 1e-6, 2)).a_in_b
    assert abs(tiny - data_free_overlap(corpus, 200, pool=3)) < 0.15
