"""Exact privacy losses: bounded inside a neighbourhood, unbounded across; the document variant."""

import numpy as np

from dpkit.dpst import guarantee
from dpkit.dpst.hashing import toy_corpus

CORPUS, EMBEDDER = toy_corpus(k=6)


def _by_cluster():
    labels = CORPUS.nearest_centroid(CORPUS.embeddings)
    same = [(i, j) for i in range(len(labels)) for j in range(i + 1, len(labels)) if labels[i] == labels[j]]
    diff = [(i, j) for i in range(len(labels)) for j in range(i + 1, len(labels)) if labels[i] != labels[j]]
    return same, diff


def test_triple_loss_bounded_in_same_neighbourhood_and_infinite_across():
    same, diff = _by_cluster()
    e = CORPUS.embeddings
    for i, j in same[:20]:
        assert guarantee.triple_loss_neighbourhood(CORPUS, e[i], e[j], 2.0) <= 2.0 + 1e-9
    for i, j in diff[:20]:
        assert guarantee.triple_loss_neighbourhood(CORPUS, e[i], e[j], 2.0) == float("inf")


def test_per_triple_split_composes_only_for_equal_counts():
    same, _ = _by_cluster()
    e = CORPUS.embeddings
    (a, b), (c, d) = same[0], same[-1]
    xs, ys = e[[a, c]], e[[b, d]]
    loss = guarantee.document_loss_neighbourhood(CORPUS, xs, ys, 3.0)
    assert 0 < loss <= 3.0 + 1e-9
    assert guarantee.document_loss_neighbourhood(CORPUS, xs, ys[:1], 3.0) == float("inf")


def test_document_variant_is_bounded_for_any_pair():
    rng = np.random.default_rng(0)
    e = CORPUS.embeddings
    for _ in range(5):
        xs, ys = e[rng.integers(0, len(e), 3)], e[rng.integers(0, len(e), 3)]
        loss = guarantee.document_loss_document_variant(CORPUS, xs, ys, 4.0, slots=3)
        assert 0 <= loss <= 4.0 + 1e-9


def test_slot_distribution_sums_to_one():
    lp = guarantee.slot_output_log_probs(CORPUS, CORPUS.embeddings[0], 0.7, 1.3)
    assert abs(np.exp(lp).sum() - 1) < 1e-9


def test_same_neighbourhood_rate_in_unit_interval():
    r = guarantee.same_neighbourhood_rate(CORPUS, CORPUS.embeddings, np.random.default_rng(0), pairs=500)
    assert 0 < r < 1


def test_the_slot_split_has_one_owner(monkeypatch):
    """The document variant's per-slot split is stated once (dpst.mechanism.slot_split): the contract, the
    sampler's budgets and the exact-loss check all move when it moves (the review's fact 5: the exact-loss
    check computed its own copy)."""
    from dpkit.dpst import mechanism
    from dpkit.dpst.privatize import DPST, document_contract

    assert mechanism.slot_split(4.0, 4, 0.25) == (0.25, 0.75)
    e = CORPUS.embeddings
    xs, ys = e[[0, 1]], e[[2, 3]]
    before = guarantee.document_loss_document_variant(CORPUS, xs, ys, 4.0, slots=2, neighbourhood_share=0.5)
    monkeypatch.setattr(mechanism, "slot_split", lambda epsilon, slots, share: (epsilon / slots, 0.0))
    contract = document_contract(4.0, 2, 0.5, CORPUS.k)
    assert (contract.parameters["eps_neighbourhood"], contract.parameters["eps_triple"]) == (2.0, 0.0)
    dpst = DPST(CORPUS, 4.0, variant="document", slots=2, embedder=EMBEDDER)
    assert dpst.slot_epsilons == (2.0, 0.0)
    after = guarantee.document_loss_document_variant(CORPUS, xs, ys, 4.0, slots=2, neighbourhood_share=0.5)
    assert after != before and 0 <= after <= 4.0 + 1e-9
