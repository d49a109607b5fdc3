"""DP-ST's topic variant (:mod:`dpkit.dpst.topic`): the neighbourhood by exact randomized response,
the triples by public post-processing, its contract re-derived and accounted, and its audits."""

import functools
import math

import numpy as np
import pytest

import dpkit.methods.dpst as method
from dpkit.audit.mechanism import registry
from dpkit.audit.report import recheck_sensitivity
from dpkit.dpst import Prepared
from dpkit.dpst.hashing import toy_corpus
from dpkit.dpst.topic import TopicDPST, topic_contract
from dpkit.methods import Records
from dpkit.privacy import PrivacyLedger
from dpkit.privacy.randomized_response import keep_probability
from dpkit.seeds import root_sequence
from dpkit.validate import ParameterError
from test_dpst_topic import Capture  # a backend that records the chats and writes "A text."

CORPUS, EMBEDDER = toy_corpus(k=4)


def make(epsilon=4.0, **kw):
    return TopicDPST(CORPUS, epsilon, embedder=EMBEDDER, **kw)


def one_triple(embedding, n=1, triple="x did y"):
    emb = np.tile(np.asarray(embedding, np.float32), (n, 1))
    return Prepared(["private"] * n, [[triple]] * n, emb)


def test_contract_is_randomized_response_over_the_public_centroids():
    contract = make(2.5).contract
    assert (contract.kind, contract.measure, contract.neighbouring, contract.epsilon) == ("dpst_topic", "pure",
                                                                                          "replace-one", 2.5)
    assert contract.parameters["k"] == CORPUS.k
    assert contract.parameters["keep"] == pytest.approx(math.exp(2.5) / (math.exp(2.5) + CORPUS.k - 1))
    check = recheck_sensitivity(contract.to_dict())
    assert check.agrees and "2.5" in check.method
    event = contract.to_dp_event()
    assert type(event).__name__ == "RandomizedResponseDpEvent" and event.num_buckets == CORPUS.k


def test_an_overstated_keep_is_caught_by_the_recheck():
    data = topic_contract(1.0, 4, 3, 30).to_dict()
    data["parameters"] = dict(data["parameters"], keep=keep_probability(4, 2.0))
    assert recheck_sensitivity(data).agrees is False


def test_keep_rate_is_exact_and_the_rest_is_uniform():
    m = make(1.0, triples=1, pool=1)
    topic = m.topics(one_triple(CORPUS.embeddings[0]))[0]
    docs = m.privatize_prepared(one_triple(CORPUS.embeddings[0], n=8_000), np.random.default_rng(1))
    released = np.array([CORPUS.labels[int(d.corpus_ids[0])] for d in docs])
    keep = keep_probability(CORPUS.k, 1.0)
    assert abs(np.mean(released == topic) - keep) < 4 * math.sqrt(keep * (1 - keep) / 8_000)
    others = np.bincount(released[released != topic], minlength=CORPUS.k)
    others = np.delete(others, topic)
    assert others.min() > 0.8 * others.mean()


def test_released_triples_come_from_the_public_pool_of_the_released_neighbourhood():
    m = make(50.0, triples=2, pool=3)
    prepared = m.prepare(["The dentist filled the cavity.", "The surgeon closed the wound.", "Hello there!"])
    docs = m.privatize_prepared(prepared, np.random.default_rng(0), trace=True)
    for doc in docs:
        pool = m.pools[doc.trace["neighbourhood"]]
        assert set(doc.corpus_ids) <= set(pool.tolist()) and len(doc.corpus_ids) == min(2, len(pool))
        assert len(set(doc.corpus_ids.tolist())) == len(doc.corpus_ids)
        if doc.trace["topic"] is not None:  # at epsilon 50 the topic is kept (probability 1 - 3e-22)
            assert doc.trace["neighbourhood"] == doc.trace["topic"]
    assert docs[2].trace["topic"] is None  # no triple: the neighbourhood is a uniform draw


def test_the_output_depends_on_the_topic_only():
    """Two documents with the same topic and the same generator release the same triples."""
    m = make(3.0)
    a, b = CORPUS.members(0)[:2]
    assert m.topics(one_triple(CORPUS.embeddings[a]))[0] == m.topics(one_triple(CORPUS.embeddings[b]))[0] == 0
    first = m.privatize_prepared(one_triple(CORPUS.embeddings[a], n=20), np.random.default_rng(7))
    second = m.privatize_prepared(one_triple(CORPUS.embeddings[b], n=20), np.random.default_rng(7))
    assert [d.text for d in first] == [d.text for d in second]


def test_the_ledger_is_charged_once_in_parallel():
    ledger = PrivacyLedger()
    make(2.0).privatize_prepared(one_triple(CORPUS.embeddings[0], n=5), np.random.default_rng(0), ledger=ledger)
    assert len(ledger.entries) == 1 and ledger.pure_epsilon() == pytest.approx(2.0)


@pytest.mark.parametrize("kw, name", [({"triples": 0}, "triples"), ({"triples": 3, "pool": 2}, "pool"),
                                      ({"bug": "nope"}, "bug"), ({"max_triples": 0}, "max_triples")])
def test_bad_parameters_name_themselves(kw, name):
    with pytest.raises(ParameterError, match=name):
        make(**kw)


@pytest.mark.parametrize("epsilon", [0.5, 1.0, 4.0])
def test_audit_pair_reaches_the_claim(epsilon):
    assert registry.get("dpst_topic").build(epsilon).pair_loss == pytest.approx(epsilon, rel=1e-9)


def test_the_broken_twin_reads_the_pool_from_the_private_text():
    case = registry.get("dpst_topic_private_pool").build(1.0)
    out0 = set(case.mechanism(case.d0, 300, np.random.default_rng(0)))
    out1 = set(case.mechanism(case.d1, 300, np.random.default_rng(0)))
    assert "A0 sits at e1" in out0 - out1 and "A1 sits at e2" in out1 - out0


def test_the_method_uses_the_topic_variant_by_default(monkeypatch):
    monkeypatch.setattr(method, "load_public_corpus", lambda **kw: CORPUS)
    monkeypatch.setattr(method, "TopicDPST", functools.partial(TopicDPST, embedder=EMBEDDER))
    config = method.Config(epsilon=8.0, label_share=0.25, document_type="exam question", k=CORPUS.k)
    assert config.variant == "topic"
    records = Records(("The dentist filled the cavity.", "The surgeon closed the wound."), (0, 1),
                      ("Dental", "Surgery"))
    release = method.synthesize(records, config, None, Capture(), root_sequence(3))
    kinds = [e["contract"]["kind"] for e in release.ledger.entries]
    assert kinds == ["dpst_topic", "randomized_response"]
    assert [e["contract"]["epsilon"] for e in release.ledger.entries] == pytest.approx([6.0, 2.0])
    assert [c.contract.kind for c in method.charges(config, 2, 2)] == kinds
    from dpkit.methods.release import method_title

    assert method_title(release) == "DP-ST (private semantic triples, topic variant)"
    with pytest.raises(ParameterError, match="variant"):
        method.Config(epsilon=8.0, variant="paper")
    with pytest.raises(ParameterError, match="topic_pool"):
        method.Config(epsilon=8.0, topic_triples=4, topic_pool=3)


@pytest.mark.parametrize("k", [2, 4, 50, 500])
@pytest.mark.parametrize("epsilon", [0.01, 1.0, 5.6, 40.0])
def test_a_document_without_triples_is_within_e_epsilon_of_every_document(k, epsilon):
    """The uniform draw of a document without triples against randomized response on any topic: the largest
    log-ratio over outputs and both orders is at most epsilon (the theorem of the DP-ST evaluation chapter)."""
    from dpkit.privacy.randomized_response import log_probabilities

    uniform = np.full(k, -math.log(k))
    with_topic = log_probabilities(0, k, epsilon)
    assert np.max(np.abs(with_topic - uniform)) <= epsilon * (1 + 1e-12)
    assert np.max(np.abs(with_topic - log_probabilities(k - 1, k, epsilon))) == pytest.approx(epsilon, rel=1e-9)


def test_a_document_without_triples_draws_its_neighbourhood_uniformly():
    m = make(40.0, triples=1, pool=1)
    empty = Prepared(["private"] * 4_000, [[]] * 4_000, np.zeros((0, CORPUS.dim), np.float32))
    released = [CORPUS.labels[int(d.corpus_ids[0])] for d in m.privatize_prepared(empty, np.random.default_rng(3))]
    counts = np.bincount(released, minlength=CORPUS.k)
    assert counts.min() > 0.85 * 4_000 / CORPUS.k and counts.max() < 1.15 * 4_000 / CORPUS.k


def test_the_cut_and_the_batching_rules_are_the_readers():
    """The topic variant parses through a document-variant reader; its cut at max_chars and its batching rule
    are that reader's statements, not a copy (the re-tally's fact 18: the topic variant hand-copied them)."""
    m = make(max_chars=1234)
    reader = m._reader.public_rules
    assert m.public_rules["long_document"] == reader["long_document"] and "1234" in reader["long_document"]
    assert m.public_rules["batching"] == reader["batching"]
