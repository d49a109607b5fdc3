"""Audits of DP-ST's topic variant (:class:`dpkit.dpst.topic.TopicDPST`): the correct mechanism on its
worst-case pair, and the broken ``bug="private_pool"`` twin that reads the released triples from the
private text.

Both run the mechanism itself through ``privatize_prepared``: the private preprocessing (triples and
their embeddings) is given as a prepared document, and ``n`` copies of it are privatized in one call.
The public corpus is a small synthetic :class:`~dpkit.dpst.TripleCorpus` (the guarantee must hold for
every public corpus): neighbourhood A = {A0 at e1, A1 at e2} (centroid between them), B = {B0 at e3},
C = {C0 at e4}.
"""

from __future__ import annotations

import numpy as np

from dpkit.audit.mechanism.pair_loss import discrete_pair_loss
from dpkit.audit.mechanism.registry import AuditCase, AuditSpec, register
from dpkit.dpst import Prepared, TripleCorpus
from dpkit.dpst.topic import TopicDPST
from dpkit.privacy.randomized_response import log_probabilities as rr_log_probabilities

DIM = 4


def topic_corpus() -> TripleCorpus:
    """A = {A0 at e1, A1 at e2}, B = {B0 at e3}, C = {C0 at e4}; A's centroid is (e1 + e2) / sqrt 2."""
    e = np.eye(DIM, dtype=np.float32)
    texts = np.array(["A0 sits at e1", "A1 sits at e2", "B0 sits at e3", "C0 sits at e4"])
    labels = np.array([0, 0, 1, 2])
    centroids = np.vstack([(e[0] + e[1]) / np.sqrt(2), e[2], e[3]]).astype(np.float32)
    return TripleCorpus(texts, e.copy(), labels, centroids, {"synthetic": "audit, topic variant"})


def topic_mechanism(dpst: TopicDPST):
    """``(document, n, rng) -> n released texts``: n copies of one prepared one-triple document."""

    def mechanism(document, n, rng):
        emb = np.tile(np.asarray(document["embedding"], np.float32), (n, 1))
        prepared = Prepared([document["text"]] * n, [[document["triple"]]] * n, emb)
        return np.array([doc.text for doc in dpst.privatize_prepared(prepared, rng)])

    return mechanism


def topic_case(epsilon: float, bug: str | None = None) -> AuditCase:
    dpst = TopicDPST(topic_corpus(), epsilon, triples=1, pool=2, bug=bug)
    e = np.eye(DIM)
    d0 = {"text": "private document 0", "triple": "x relates to A0", "embedding": e[0].tolist()}
    if bug is None:
        d1 = {"text": "private document 1", "triple": "y relates to B0", "embedding": e[2].tolist()}
        # outputs A0, A1 (each half of A's probability), B0, C0
        lp0, lp1 = rr_log_probabilities(0, 3, epsilon), rr_log_probabilities(1, 3, epsilon)
        half = np.log(0.5)
        loss = discrete_pair_loss([lp0[0] + half, lp0[0] + half, lp0[1], lp0[2]],
                                  [lp1[0] + half, lp1[0] + half, lp1[1], lp1[2]])
        pair = {"corpus": "A = {A0 at e1, A1 at e2}, B = {B0 at e3}, C = {C0 at e4}", "x": "e1 (topic A)",
                "y": "e3 (topic B)", "triples": 1, "pool": 2}
        why = ("x's topic is A and y's is B: randomized response puts e^eps/(e^eps+2) on the true topic and "
               "1/(e^eps+2) on each other, so every output of A (and B) has probability ratio exactly e^eps "
               "between them; the triple drawn inside the neighbourhood is public randomness and cancels")
    else:
        d1 = {"text": "private document 1", "triple": "y relates to A1", "embedding": e[1].tolist()}
        loss = None
        pair = {"corpus": "as dpst_topic", "x": "e1 (topic A, nearest A0)", "y": "e2 (topic A, nearest A1)",
                "triples": 1}
        why = ("both documents have topic A, so a correct mechanism gives them the same output distribution; "
               "a pool read from the private text releases A0 for x and A1 for y whenever A is released: "
               "disjoint supports, an infinite loss")
    return AuditCase(mechanism=topic_mechanism(dpst), d0=d0, d1=d1, claimed_epsilon=epsilon, output="discrete",
                     contract=dpst.contract, pair_loss=loss, describe_pair=pair, why_worst_case=why)


register(AuditSpec("dpst_topic", "DP-ST",
                   "DP-ST topic variant: neighbourhood by randomized response, then public triples of it",
                   topic_case, test_samples=4_000, max_samples=12_000))
register(AuditSpec("dpst_topic_private_pool", "DP-ST",
                   "DP-ST topic variant drawing the released triples from the private text",
                   lambda eps: topic_case(eps, bug="private_pool"), broken=True,
                   bug="TopicDPST(bug='private_pool')", correct_twin="dpst_topic",
                   test_samples=4_000, max_samples=12_000))
