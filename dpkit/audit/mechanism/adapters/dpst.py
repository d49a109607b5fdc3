"""Audits of DP-ST: the exponential mechanism inside a neighbourhood, the document-level
variant, the label's randomized response alone and a whole record (text and label together),
and two broken variants (raw text on no triple; neighbourhood chosen from the private text).

Every audit runs :class:`dpkit.dpst.DPST` itself through ``privatize_prepared``:
the deterministic, private preprocessing (triple extraction, embedding) is done
once and the randomized release is drawn ``n`` times by privatizing ``n`` copies
of the prepared document in one call. The public corpus is a small synthetic
:class:`~dpkit.dpst.TripleCorpus` whose geometry is chosen to be worst case
(the guarantee must hold for every public corpus); the book's DP-ST chapters
use the real one.
"""

from __future__ import annotations

import numpy as np

from dpkit.audit.mechanism.pair_loss import discrete_pair_loss
from dpkit.audit.mechanism.registry import AuditCase, AuditSpec, register
from dpkit.dpst import DPST, Prepared, TripleCorpus, sample_in_neighbourhood
from dpkit.dpst.mechanism import log_probabilities
from dpkit.methods.dpst import Config as DPSTConfig
from dpkit.methods.labels import randomized_responses
from dpkit.privacy.randomized_response import log_probabilities as rr_log_probabilities

DIM = 4
CROWD = 24  # candidates of neighbourhood A that sit at e2 (and of B at e3)
DOCUMENT_CROWD = 40  # document variant: crowd inside A, and neighbourhoods whose centroid sits at e2
NO_TRIPLE_TEXTS = ("Hello there!", "Thanks, see you.")  # no subject-verb-object triple in either
LABELS = 2           # the label audits: two labels (randomized response's loss is epsilon for every k)
LABEL_SHARE = DPSTConfig.__dataclass_fields__["label_share"].default  # the record audit: dpkit synth dpst's default
RECORD_CROWD = 24    # the record audit's crowd: 49 texts x 2 labels, few enough outcomes for the set family


def _unit(v) -> np.ndarray:
    v = np.asarray(v, dtype=np.float32)
    return v / np.linalg.norm(v)


def synthetic_corpus() -> TripleCorpus:
    """Two neighbourhoods: A = {A0 at e1, A1..A24 at e2}, B = {B0..B24 at e3}."""
    e = np.eye(DIM, dtype=np.float32)
    texts = ["A0 is alone"] + [f"A{i} is crowded" for i in range(1, CROWD + 1)] + \
            [f"B{i} is far" for i in range(CROWD + 1)]
    embeddings = np.vstack([e[0]] + [e[1]] * CROWD + [e[2]] * (CROWD + 1))
    labels = np.array([0] * (CROWD + 1) + [1] * (CROWD + 1))
    centroids = np.vstack([_unit(embeddings[labels == c].mean(axis=0)) for c in (0, 1)])
    return TripleCorpus(np.array(texts), embeddings, labels, centroids, {"synthetic": "audit"})


def document_corpus(crowd: int = DOCUMENT_CROWD) -> TripleCorpus:
    """Worst case for the document variant: neighbourhood A (centroid e1) = {A0 at e1, A1..A40 at e2},
    and neighbourhoods B1..B40, each one triple at e2 with its centroid at e2.

    A public corpus may have any geometry (the guarantee must hold for all of
    them), including centroids that coincide: here every centroid but A's
    points at e2, so an input at e1 and an input at e2 have opposite utilities on
    all 41 neighbourhoods, and again on all 41 candidates of A.
    """
    e = np.eye(DIM, dtype=np.float32)
    k = crowd
    texts = ["A0 is alone"] + [f"A{i} is crowded" for i in range(1, k + 1)] + [f"B{i} stands apart" for i in
                                                                                range(1, k + 1)]
    embeddings = np.vstack([e[0]] + [e[1]] * k + [e[1]] * k)
    labels = np.array([0] * (k + 1) + list(range(1, k + 1)))
    centroids = np.vstack([e[0]] + [e[1]] * k)
    return TripleCorpus(np.array(texts), embeddings, labels, centroids, {"synthetic": "audit, document variant"})


def document_log_probabilities(dpst: DPST, embedding) -> dict[str, float]:
    """Exact log P(released text) of the one-slot document variant for one triple at ``embedding``."""
    eps_n, eps_t = dpst.slot_epsilons
    corpus = dpst.corpus
    log_n = log_probabilities(corpus.centroids, embedding, eps_n)
    out: dict[str, float] = {}
    for c in range(corpus.k):
        members = corpus.members(c)
        log_t = log_probabilities(corpus.embeddings[members], embedding, eps_t)
        for j, i in enumerate(members):
            out[str(corpus.texts[i])] = float(np.logaddexp(out.get(str(corpus.texts[i]), -np.inf), log_n[c] + log_t[j]))
    return out


def _document(text: str, triple: str | None, embedding) -> dict:
    return {"text": text, "triples": [] if triple is None else [triple],
            "embedding": None if embedding is None else np.asarray(embedding, dtype=np.float32).tolist()}


def dpst_mechanism(dpst: DPST):
    """``(document, n, rng) -> n released texts``: n copies of one prepared document."""

    def mechanism(document, n, rng):
        triples = list(document["triples"])
        emb = (np.tile(np.asarray(document["embedding"], np.float32), (n, 1)) if triples
               else np.zeros((0, dpst.corpus.dim), np.float32))
        prepared = Prepared([document["text"]] * n, [triples] * n, emb)
        return np.array([doc.text for doc in dpst.privatize_prepared(prepared, rng)])

    return mechanism


def triple_case(epsilon: float) -> AuditCase:
    """The exponential mechanism over neighbourhood A alone (vectorized: ``size=n``)."""
    corpus = synthetic_corpus()
    candidates = corpus.embeddings[corpus.members(0)]
    e = np.eye(DIM)
    return AuditCase(
        mechanism=lambda x, n, rng: sample_in_neighbourhood(candidates, np.asarray(x), epsilon, rng, size=n),
        d0=e[0].tolist(), d1=e[1].tolist(), claimed_epsilon=epsilon, output="discrete",
        pair_loss=discrete_pair_loss(log_probabilities(candidates, e[0], epsilon),
                                     log_probabilities(candidates, e[1], epsilon)),
        describe_pair={"candidates": "A0 at e1, 24 at e2", "x": "e1", "y": "e2"},
        why_worst_case="x has utility 1 on A0 and 0 on the other 24 candidates, y the reverse: every utility "
                       "moves by the full sensitivity, in opposite directions for A0 and the rest, so A0's "
                       "probability ratio approaches exp(epsilon) as the crowd grows")


def neighbourhood_case(epsilon: float) -> AuditCase:
    dpst = DPST(synthetic_corpus(), epsilon, variant="neighbourhood")
    e = np.eye(DIM)
    d0 = _document("private document 0", "x relates to A0", e[0])
    d1 = _document("private document 1", "y relates to the crowd", e[1])
    candidates = dpst.corpus.embeddings[dpst.corpus.members(0)]
    return AuditCase(
        mechanism=dpst_mechanism(dpst), d0=d0, d1=d1, claimed_epsilon=epsilon, output="discrete",
        contract=dpst.contract,
        pair_loss=discrete_pair_loss(log_probabilities(candidates, e[0], epsilon),
                                     log_probabilities(candidates, e[1], epsilon)),
        describe_pair={"corpus": "synthetic: A={A0 at e1, 24 at e2}, B={25 at e3}", "x": "e1", "y": "e2"},
        why_worst_case="both one-triple documents fall in neighbourhood A; x has utility 1 on A0 and 0 on the "
                       "other 24 candidates, y the reverse, so every utility moves by the full sensitivity "
                       "in opposite directions and A0's probability ratio approaches exp(epsilon) as the "
                       "crowd grows")


def document_case(epsilon: float, bug: str | None = None) -> AuditCase:
    dpst = DPST(document_corpus(), epsilon, variant="document", slots=1, bug=bug)
    e = np.eye(DIM)
    d0 = _document("private document 0", "x relates to A0", e[0])
    d1 = _document("private document 1", "z relates to the crowd", e[1])
    loss = None
    if bug is None:
        p0, p1 = document_log_probabilities(dpst, e[0]), document_log_probabilities(dpst, e[1])
        loss = discrete_pair_loss(list(p0.values()), [p1[t] for t in p0])
    return AuditCase(
        mechanism=dpst_mechanism(dpst), d0=d0, d1=d1, claimed_epsilon=epsilon, output="discrete",
        contract=dpst.contract, pair_loss=loss,
        describe_pair={"corpus": f"synthetic: A (centroid e1) = {{A0 at e1, {DOCUMENT_CROWD} at e2}}, "
                                 f"{DOCUMENT_CROWD} neighbourhoods at e2", "x": "e1 (nearest A)",
                       "z": "e2 (nearest the crowd)", "slots": 1},
        why_worst_case="x has utility 1 on A's centroid and 0 on the 40 others, z the reverse; inside A, x has "
                       "utility 1 on A0 and 0 on its 40 other triples, z the reverse. Both exponential "
                       "mechanisms (neighbourhood, then triple) lose nearly their whole share on the output A0, "
                       "so the pair's loss is close to the document's epsilon (the old pair, one triple per "
                       "side in two far neighbourhoods, showed 0.38 of it). A neighbourhood taken from the "
                       "private triple makes the supports disjoint: infinite loss")


def no_triple_case(epsilon: float, bug: str | None = None) -> AuditCase:
    dpst = DPST(synthetic_corpus(), epsilon, variant="neighbourhood", bug=bug)
    d0 = _document(NO_TRIPLE_TEXTS[0], None, None)
    d1 = _document(NO_TRIPLE_TEXTS[1], None, None)
    return AuditCase(
        mechanism=dpst_mechanism(dpst), d0=d0, d1=d1, claimed_epsilon=epsilon, output="discrete",
        contract=dpst.contract, describe_pair={"texts": list(NO_TRIPLE_TEXTS)},
        why_worst_case="two different documents in which no triple is found (both have n = 0 triples, so "
                       "they are neighbours under the neighbourhood-aware relation): whatever is released "
                       "for them must not depend on the text")


def label_case(epsilon: float) -> AuditCase:
    """DP-ST's label channel alone: :func:`dpkit.methods.labels.randomized_response` on label 0 vs label 1."""
    return AuditCase(
        mechanism=lambda label, n, rng: randomized_responses(int(label), LABELS, epsilon, rng, n),
        d0=0, d1=1, claimed_epsilon=epsilon, output="discrete",
        pair_loss=discrete_pair_loss(rr_log_probabilities(0, LABELS, epsilon),
                                     rr_log_probabilities(1, LABELS, epsilon)),
        describe_pair={"labels": LABELS, "x": "label 0", "y": "label 1"},
        why_worst_case="two records that differ in their label: the released label keeps the true one with "
                       "probability e^eps/(e^eps+k-1), so the output 'label 0' has ratio exactly e^eps between "
                       "them (randomized response's loss is the same for every pair of labels)")


def record_case(epsilon: float) -> AuditCase:
    """A whole labelled DP-ST record: the document variant's text at ``(1 - LABEL_SHARE) epsilon`` and the
    randomized-response label at ``LABEL_SHARE epsilon``, released together (sequential composition)."""
    eps_text, eps_label = DPSTConfig(epsilon=epsilon, label_share=LABEL_SHARE).budgets(labelled=True)  # the method's split
    dpst = DPST(document_corpus(RECORD_CROWD), eps_text, variant="document", slots=1)
    texts = dpst_mechanism(dpst)
    e = np.eye(DIM)
    d0 = {**_document("private document 0", "x relates to A0", e[0]), "label": 0}
    d1 = {**_document("private document 1", "z relates to the crowd", e[1]), "label": 1}

    def mechanism(record, n, rng):
        text = texts(record, n, rng)
        label = randomized_responses(int(record["label"]), LABELS, eps_label, rng, n)
        return np.array([f"{t} | label {y}" for t, y in zip(text, label)])

    p0, p1 = document_log_probabilities(dpst, e[0]), document_log_probabilities(dpst, e[1])
    q0, q1 = rr_log_probabilities(0, LABELS, eps_label), rr_log_probabilities(1, LABELS, eps_label)
    joint0 = [p0[t] + q0[y] for t in p0 for y in range(LABELS)]
    joint1 = [p1[t] + q1[y] for t in p0 for y in range(LABELS)]
    return AuditCase(
        mechanism=mechanism, d0=d0, d1=d1, claimed_epsilon=epsilon, output="discrete",
        contract=dpst.contract, pair_loss=discrete_pair_loss(joint0, joint1),
        describe_pair={"corpus": f"as dpst_document, with a crowd of {RECORD_CROWD}", "x": "e1 (nearest A), label 0",
                       "z": "e2 (nearest the crowd), label 1", "slots": 1, "label_share": LABEL_SHARE},
        why_worst_case="the dpst_document pair (its text loss is nearly the text's whole share) with labels "
                       "that differ too: the output 'A0 | label 0' adds both losses, so the pair shows nearly "
                       "the record's whole epsilon, text and label together")


def check_no_triples(texts=NO_TRIPLE_TEXTS) -> list[list[str]]:
    """Run the real extractor (spaCy) on the no-triple pair: both lists must be empty."""
    dpst = DPST(synthetic_corpus(), 1.0)
    return dpst.extract(list(texts))


register(AuditSpec("dpst_triple", "DP-ST",
                   "DP-ST exponential mechanism over one neighbourhood (dpkit.dpst.sample_in_neighbourhood)",
                   triple_case, test_samples=20_000))
register(AuditSpec("dpst_neighbourhood", "DP-ST",
                   "DP-ST exponential mechanism inside a neighbourhood (DPST variant='neighbourhood')",
                   neighbourhood_case, test_samples=2_000, max_samples=6_000))
register(AuditSpec("dpst_document", "DP-ST",
                   "DP-ST document-level variant: neighbourhood by EM, then triple by EM (variant='document')",
                   document_case, test_samples=2_000, max_samples=6_000))
register(AuditSpec("dpst_label", "DP-ST",
                   "DP-ST's label: k-ary randomized response, sampled exactly (dpkit.methods.labels)",
                   label_case, test_samples=20_000))
register(AuditSpec("dpst_record", "DP-ST",
                   "DP-ST record: document-level text and randomized-response label released together",
                   record_case, test_samples=6_000, max_samples=12_000))
register(AuditSpec("dpst_no_triple", "DP-ST",
                   "DP-ST on documents without triples: public triples drawn independently of the text",
                   no_triple_case, test_samples=2_000, max_samples=6_000))
register(AuditSpec("dpst_raw_text_fallback", "DP-ST", "DP-ST returning the raw text when no triple is found",
                   lambda eps: no_triple_case(eps, bug="raw_text_fallback"), broken=True,
                   bug="DPST(bug='raw_text_fallback')", correct_twin="dpst_no_triple", test_samples=2_000, max_samples=6_000))
register(AuditSpec("dpst_private_neighbourhood", "DP-ST",
                   "DP-ST document-level variant with the neighbourhood chosen from the private text",
                   lambda eps: document_case(eps, bug="private_neighbourhood"), broken=True,
                   bug="DPST(variant='document', bug='private_neighbourhood')", correct_twin="dpst_document",
                   test_samples=2_000, max_samples=6_000))
