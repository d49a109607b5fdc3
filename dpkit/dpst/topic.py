"""DP-ST's topic variant: one public neighbourhood per document by randomized response.

The document variant (:mod:`dpkit.dpst.privatize`) spends its budget on exponential
mechanisms with utility ``clip(cos, 0, 1)``: at epsilon 8 over 4 slots each draw is
nearly uniform (the best of 50 neighbourhoods is at most ``e^(eps_n / 2) = 1.6`` times
likelier than the worst), and the released triples carry almost nothing of the text
(the book's DP-ST release chapter gives the numbers). This variant asks the text one
coarse question instead, and answers it well:

1. extract the document's subject-verb-object triples and embed them, exactly as the
   other variants do (the first ``max_triples`` after deduplication);
2. the document's *topic*: the public neighbourhood whose centroid is nearest (cosine)
   to the normalised mean of those embeddings -- private, deterministic;
3. release a neighbourhood ``c`` by k-ary randomized response over the ``k`` public
   centroids (:class:`~dpkit.privacy.randomized_response.RandomizedResponse`): the topic
   with probability ``e^eps / (e^eps + k - 1)``, else one of the other ``k - 1`` uniformly;
4. release ``triples`` public triples drawn uniformly without replacement from the
   ``pool`` members of ``c`` nearest its centroid (fewer if ``c`` is smaller).

Guarantee: pure ``epsilon``-DP per document under replace-one of the document, for any
two documents (local DP). Step 3 is the only step that reads the private triples and is
``epsilon``-DP for any change of its input (the normaliser ``e^eps + k - 1`` does not
depend on the input, so the weight is ``e^(eps u)`` with utility ``u = 1{c = topic}``
of sensitivity 1); step 4 is post-processing of ``c`` with public triples and public
randomness. A document with no triple releases a neighbourhood drawn uniformly: that
distribution is the average of randomized response over all topics, so it is within
``e^eps`` of every document's output too. Nothing else is released: the number of
released triples is ``min(triples, |pool of c|)``, a function of ``c``.

Audit hook: ``bug="private_pool"`` draws the released triples from the members of the
released neighbourhood nearest the document's private mean embedding, not from its
public pool, while still claiming this contract: a leak past the randomized response,
wrong on purpose so that the audit zoo shows it is caught.

At epsilon 8 and ``k = 50`` the topic survives with probability 0.98 (0.95 at ``k = 100``);
at epsilon 1, 0.05 (against 0.02 for a uniform draw). Text loses what the neighbourhood
does not carry: the released triples are public news triples of the same topic, not the
document's own.
"""

from __future__ import annotations

from functools import cached_property
from typing import Any, Sequence

import numpy as np

from dpkit.dpst.corpus import TripleCorpus
from dpkit.dpst.privatize import DPST, Prepared, PrivateDocument
from dpkit.privacy import Charge, PrivacyContract, PrivacyLedger
from dpkit.privacy.marks import release_texts
from dpkit.privacy.randomized_response import RandomizedResponse
from dpkit.validate import ParameterError, check_choice, check_int, check_positive, check_rng

BUGS = (None, "private_pool")


def topic_contract(epsilon: float, centroids: int, triples: int, pool: int) -> PrivacyContract:
    """The contract of one document privatized by the topic variant, from public parameters only.

    ``kind="dpst_topic"`` with ``parameters`` ``k`` (the public centroids) and ``keep`` (the probability
    of releasing the true topic): an auditor re-derives epsilon from them as for any k-ary randomized
    response, and dp_accounting gets the exact k-bucket randomized-response event.
    """
    return _contract(topic_mechanism(epsilon, centroids), triples, pool)


def topic_mechanism(epsilon: float, centroids: int) -> RandomizedResponse:
    """The randomized response that releases a document's topic (one of ``centroids`` neighbourhoods)."""
    centroids = check_int("centroids", centroids, minimum=1)
    return RandomizedResponse(centroids, epsilon, name="neighbourhood", unit="document (any two documents)")


def _contract(topic: RandomizedResponse, triples: int, pool: int) -> PrivacyContract:
    """The topic variant's contract: ``topic``'s own, with the public triples drawn after it."""
    centroids = topic.k
    return topic.contract.replace(
        mechanism=f"DP-ST topic variant (randomized response over {centroids} public neighbourhoods)",
        sensitivity_norm="the topic (nearest public centroid) changes", kind="dpst_topic",
        parameters={**topic.contract.parameters, "triples": triples, "pool": pool},
        note=f"topic = nearest of {centroids} public centroids to the mean of the document's triple "
             f"embeddings, released by k-ary randomized response (exact sampler); then {triples} public "
             f"triples drawn uniformly from the {pool} of that neighbourhood nearest its centroid "
             "(post-processing); a document without triples draws its neighbourhood uniformly")


class TopicDPST:
    """Privatize documents into public triples of a privately chosen neighbourhood (module docstring).

    The same interface as :class:`~dpkit.dpst.privatize.DPST`: :meth:`prepare` (extraction and
    embedding, private and deterministic), :meth:`privatize_prepared` (the mechanism), ``contract``
    and ``public_rules``. Extraction is :class:`DPST`'s own (the same parser, cut, deduplication and
    per-document calls), so the two variants read a document identically.
    """

    variant = "topic"

    def __init__(self, corpus: TripleCorpus, epsilon: float, *, triples: int = 3, pool: int = 30,
                 max_triples: int = 16, dedup: bool = True, threshold: float = 0.4, num_perm: int = 128,
                 scorer=None, embedder=None, max_chars: int = 20_000, bug: str | None = None):
        if not isinstance(corpus, TripleCorpus):
            raise ParameterError("corpus", corpus, "must be a TripleCorpus (see load_public_corpus)")
        self.corpus = corpus
        self.epsilon = check_positive("epsilon", epsilon)
        self.triples = check_int("triples", triples, minimum=1)
        self.pool = check_int("pool", pool, minimum=self.triples)
        self.max_triples = check_int("max_triples", max_triples, minimum=1)
        self.max_chars = max_chars
        self.bug = check_choice("bug", bug, BUGS)
        # extraction only: DPST's document variant with max_triples slots keeps the first max_triples triples
        self._reader = DPST(corpus, self.epsilon, "document", slots=self.max_triples, dedup=dedup,
                            threshold=threshold, num_perm=num_perm, scorer=scorer, embedder=embedder,
                            max_chars=max_chars)
        self._topic = topic_mechanism(self.epsilon, corpus.k)  # draws the topic; its contract is charged

    @cached_property
    def contract(self) -> PrivacyContract:
        """The guarantee of one privatized document, at the configured epsilon (built once)."""
        return _contract(self._topic, self.triples, self.pool)

    @property
    def public_rules(self) -> dict[str, str]:
        """The data-independent rules that decide what happens to unusual private documents (the cut and the
        batching are the reader's: it parses, deduplicates and embeds each document)."""
        reader = self._reader.public_rules
        return {
            "long_document": reader["long_document"],
            "triples_kept": f"the mean embedding of the first {self.max_triples} triples of a document "
                            "(after deduplication) decides its topic",
            "document_without_triples": "its neighbourhood is drawn uniformly from the public centroids",
            "small_neighbourhood": f"a neighbourhood with fewer than {self.triples} triples releases all of them",
            "batching": reader["batching"],
        }

    @cached_property
    def pools(self) -> tuple[np.ndarray, ...]:
        """Per neighbourhood: the indices of its ``pool`` triples nearest its centroid (public)."""
        out = []
        for c in range(self.corpus.k):
            members = self.corpus.members(c)
            cos = self.corpus.embeddings[members] @ self.corpus.centroids[c]
            out.append(members[np.argsort(-cos, kind="stable")][:self.pool])
        return tuple(out)

    def prepare(self, texts: Sequence[str]) -> Prepared:
        """Extract, deduplicate, cap and embed the triples of ``texts`` (deterministic, private)."""
        return self._reader.prepare(texts)

    def topics(self, prepared: Prepared) -> list[int | None]:
        """Each document's topic (nearest public centroid to its mean triple embedding); None without
        triples. PRIVATE: for the mechanism and for teaching, never released."""
        return [topic for topic, _ in self._topics(prepared)]

    def _topics(self, prepared: Prepared) -> list[tuple[int | None, np.ndarray | None]]:
        out, start = [], 0
        for triples in prepared.triples:
            emb = prepared.embeddings[start:start + len(triples)]
            start += len(triples)
            if not len(triples):
                out.append((None, None))
                continue
            mean = np.asarray(emb, dtype=np.float64).mean(axis=0)
            norm = np.linalg.norm(mean)
            mean = mean / norm if norm > 0 else np.asarray(emb[0], dtype=np.float64)  # opposite triples cancel
            out.append((int(self.corpus.nearest_centroid(mean[None, :])[0]), mean))
        return out

    def _pool(self, neighbourhood: int, mean: np.ndarray | None) -> np.ndarray:
        if self.bug == "private_pool" and mean is not None:  # WRONG on purpose: the pool read from the private text
            members = self.corpus.members(neighbourhood)
            return members[np.argsort(-(self.corpus.embeddings[members] @ mean), kind="stable")][:self.triples]
        return self.pools[neighbourhood]

    def privatize_batch(self, texts: Sequence[str], rng: np.random.Generator, trace: bool = False, *,
                        ledger: PrivacyLedger | None = None) -> list[PrivateDocument]:
        """:meth:`prepare` then :meth:`privatize_prepared`."""
        return self.privatize_prepared(self.prepare(texts), check_rng("rng", rng), trace=trace, ledger=ledger)

    def privatize_prepared(self, prepared: Prepared, rng: np.random.Generator, trace: bool = False, *,
                           ledger: PrivacyLedger | None = None, charge: Charge | None = None) -> list[PrivateDocument]:
        """Run the mechanism on prepared documents; randomness only from ``rng`` (one child per document).

        Charges ``ledger`` (a new one when ``None``) with one parallel entry over the documents, or uses
        ``charge``, a Charge of this very mechanism already recorded; every released triple carries it.
        """
        if not isinstance(prepared, Prepared):
            raise ParameterError("prepared", prepared, "must come from TopicDPST.prepare")
        rng = check_rng("rng", rng)
        if ledger is not None and not hasattr(ledger, "spend_parallel"):
            raise ParameterError("ledger", type(ledger).__name__, "must be a PrivacyLedger or None")
        if len(prepared) == 0:
            return []
        if charge is None:
            charge = (ledger or PrivacyLedger()).charge(Charge("dpst: privatize documents (topic)", mechanism=self,
                                                               groups=len(prepared)))
        elif not isinstance(charge, Charge) or charge.mechanism is not self:
            raise ParameterError("charge", type(charge).__name__,
                                 "must be the Charge of this mechanism (Charge(label, mechanism=it, groups=n)), "
                                 "recorded on the ledger")
        drawn = []
        for (topic, mean), triples, child in zip(self._topics(prepared), prepared.triples, rng.spawn(len(prepared))):
            released = int(child.integers(self.corpus.k)) if topic is None else self._topic.sample(topic, child)
            pool = self._pool(released, mean)
            ids = child.choice(pool, size=min(self.triples, len(pool)), replace=False)
            info: dict[str, Any] = ({"extracted": list(triples), "topic": topic, "neighbourhood": released}
                                    if trace else {})
            drawn.append((ids, info))
        # every document's triples are marked by one call: the provenance (the same charge) is built once
        texts = iter(release_texts([str(self.corpus.texts[j]) for ids, _ in drawn for j in ids], charge,
                                   source="dpkit.dpst"))
        return [PrivateDocument(tuple(next(texts) for _ in ids), np.asarray(ids, dtype=np.int64), self.contract,
                                trace=info) for ids, info in drawn]
