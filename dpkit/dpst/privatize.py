"""DP-ST privatization of whole documents, in two variants with honest contracts.

``variant="neighbourhood"`` -- the mechanism of {cite}`meisenbacher2025dpst`:
each extracted triple is sent to its nearest centroid's neighbourhood and
replaced there by the exponential mechanism at ``epsilon / n`` (``n`` = number
of triples of the document). Its contract is *relaxed*: epsilon-DP only between
two documents with the same number of triples whose triples lie, position by
position, in the same neighbourhoods. The neighbourhoods and the triple count
themselves are released without protection (:mod:`dpkit.dpst.guarantee`).

``variant="document"`` -- our variant with a document-level guarantee: a fixed
number ``slots`` of triple slots. The document's first ``slots`` triples fill
them, public triples drawn uniformly from the corpus (independently of the
text) pad the rest. For each slot a neighbourhood is drawn by an exponential
mechanism over the public centroids (``neighbourhood_share`` of the slot's
budget), then a triple inside it (the rest). Every slot is
``epsilon / slots``-DP against *any* change of its input, so the whole output is
epsilon-DP under replace-one of the document (local DP): no relation to satisfy.

Two leaks of the public reference implementation are absent by construction
(``tests/test_dpst_leaks.py``):

* no triple extracted -> the raw text is never returned. ``on_empty="public"``
  (default) releases public triples drawn uniformly from the corpus, which
  carry no information about the text; ``on_empty="error"`` raises
  :class:`NoTriplesError` instead.
* the output never depends on the input's length: the number of released
  triples is ``slots`` (document variant) or the number of extracted triples,
  capped at ``max_triples`` (neighbourhood variant, where the count is part of
  the stated relation), and reconstruction uses a fixed token budget
  (:mod:`dpkit.dpst.reconstruct`).

Non-English text is parsed as English; any triple found is privatized like any
other, and the output still contains public triples only.

Public rules, so that no private document can abort a release or reach into
another document's output (:attr:`DPST.public_rules`, stated in ``config.json``):

* a document is cut to its first ``max_chars`` characters before spaCy sees it
  (spaCy refuses texts over 1,000,000 characters, and one such text would kill
  the whole batch);
* each document is parsed, tie-scored (:func:`~dpkit.dpst.dedup.deduplicate_many`
  with ``independent=True``) and embedded in calls of its own, so its triples and
  their embeddings do not depend, even in the last float bit, on which other
  documents are privatized with it;
* each document draws its noise from its own child generator
  (``rng.spawn``), so in reproducible mode a document's output does not shift
  when another document changes.

Audit hooks: ``bug="raw_text_fallback"`` returns the raw text when no triple is
found; ``bug="private_neighbourhood"`` makes the document variant pick each
slot's neighbourhood as the nearest centroid of the private triple while still
claiming the document-level contract. Both are wrong on purpose and exist so an
audit can show that it catches them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Sequence

import numpy as np

from dpkit.dpst import mechanism
from dpkit.dpst.corpus import TripleCorpus
from dpkit.dpst.dedup import deduplicate_many
from dpkit.dpst.triples import extract_triples_batch
from dpkit.models.embed import load_embedder
from dpkit.privacy import Charge, PrivacyContract, PrivacyLedger
from dpkit.privacy.marks import Privatized, release_texts, require_marked
from dpkit.validate import ParameterError, check_choice, check_in_range, check_int, check_positive, check_rng

VARIANTS = ("neighbourhood", "document")
MAX_PARSER_CHARS = 1_000_000  # spaCy's default nlp.max_length: longer texts raise E088
BUGS = (None, "raw_text_fallback", "private_neighbourhood")


def document_contract(epsilon: float, slots: int, neighbourhood_share: float, centroids: int) -> PrivacyContract:
    """The contract of one document privatized by the document-level variant, from public parameters only.

    Per slot: a neighbourhood by the exponential mechanism over the ``centroids`` public
    centroids at ``epsilon / slots * neighbourhood_share``, then a triple in it at the
    rest of the slot's share; ``slots`` slots compose sequentially to ``epsilon``.
    :attr:`DPST.contract` is this, and ``dpkit synth dpst --plan`` charges it too.
    """
    eps_n, eps_t = mechanism.slot_split(epsilon, slots, neighbourhood_share)
    return PrivacyContract(
        mechanism=f"DP-ST document-level ({slots} slots)", neighbouring="replace-one",
        unit="document (any two documents)", measure="pure", sensitivity=mechanism.SENSITIVITY,
        epsilon=epsilon, sensitivity_norm="max over candidates",
        kind="dpst_document",
        parameters={"slots": slots, "centroids": centroids, "eps_neighbourhood": eps_n,
                    "eps_triple": eps_t, "utility": "clip(cos, 0, 1)"},
        note=f"per slot: neighbourhood by EM over {centroids} public centroids (eps={eps_n:.4g}) "
             f"then triple by EM in it (eps={eps_t:.4g}); {slots} slots, padded with uniform "
             f"public triples; utility clip(cos,0,1)")


@dataclass(frozen=True)
class Prepared:
    """Private intermediate values of :meth:`DPST.prepare`: never released. Immutable (tuples,
    a read-only array), so what is privatized is what was prepared."""

    texts: tuple
    triples: tuple
    embeddings: np.ndarray

    def __post_init__(self):
        object.__setattr__(self, "texts", tuple(self.texts))
        object.__setattr__(self, "triples", tuple(tuple(t) for t in self.triples))
        embeddings = np.array(self.embeddings, copy=True)
        embeddings.setflags(write=False)
        object.__setattr__(self, "embeddings", embeddings)

    def __len__(self) -> int:
        return len(self.texts)


class NoTriplesError(ValueError):
    """The text has no extractable triple and ``on_empty="error"`` was asked for."""


@dataclass(frozen=True)
class PrivateDocument:
    """What DP-ST releases for one document: public triples only. Immutable.

    ``triples`` is a tuple of :class:`~dpkit.privacy.marks.Privatized` texts
    issued by :class:`DPST` (provenance: its contract and the ledger entry of the
    release), so a document cannot be built by hand or extended afterwards and
    still reach an API model. ``trace`` holds private intermediate values
    (extracted triples, their neighbourhoods) only when ``trace=True`` was asked
    -- for the book's examples; it is never part of the release.
    """

    triples: tuple
    corpus_ids: np.ndarray
    contract: PrivacyContract
    raw_text: str | None = None          # set only by the deliberately broken variant
    trace: dict[str, Any] = field(default_factory=dict, repr=False)

    def __post_init__(self):
        if not isinstance(self.triples, tuple):
            raise ParameterError("triples", type(self.triples).__name__, "must be a tuple of Privatized triples")
        for i, triple in enumerate(self.triples):
            require_marked(f"triples[{i}]", triple, (Privatized,))
        ids = np.array(self.corpus_ids, dtype=np.int64, copy=True)
        ids.setflags(write=False)
        object.__setattr__(self, "corpus_ids", ids)

    @property
    def text(self) -> str:
        """The release as one string (the raw text only in the broken ``raw_text_fallback``)."""
        return self.raw_text if self.raw_text is not None else " | ".join(self.triples)


def document_budget(base_epsilon: float, average_words: float) -> float:
    """Per-document epsilon as in {cite}`meisenbacher2025dpst` Table 4: base x whole average words.

    Table 4's numbers are reproduced by truncating the average word count to an
    integer first (Reddit: 141.70 words -> 14.1, 70.5, 141).
    """
    base_epsilon = check_positive("base_epsilon", base_epsilon)
    average_words = check_positive("average_words", average_words)
    return round(base_epsilon * max(1, int(average_words)), 6)


class DPST:
    """Privatize documents into public triples (see the module docstring for the two variants)."""

    def __init__(self, corpus: TripleCorpus, epsilon: float, variant: str = "neighbourhood", *,
                 slots: int = 4, max_triples: int = 16, neighbourhood_share: float = 0.5,
                 dedup: bool = True, threshold: float = 0.4, num_perm: int = 128, scorer=None,
                 embedder=None, on_empty: str = "public", empty_triples: int = 1, max_chars: int = 20_000,
                 bug: str | None = None):
        if not isinstance(corpus, TripleCorpus):
            raise ParameterError("corpus", corpus, "must be a TripleCorpus (see load_public_corpus)")
        self.corpus = corpus
        self.epsilon = check_positive("epsilon", epsilon)
        self.variant = check_choice("variant", variant, VARIANTS)
        self.slots = check_int("slots", slots, minimum=1)
        self.max_triples = check_int("max_triples", max_triples, minimum=1)
        self.neighbourhood_share = check_in_range("neighbourhood_share", neighbourhood_share, 0.0, 1.0,
                                                  low_open=True, high_open=True)
        self.dedup = bool(dedup)
        self.threshold, self.num_perm, self.scorer = threshold, num_perm, scorer
        self.on_empty = check_choice("on_empty", on_empty, ("public", "error"))
        self.empty_triples = check_int("empty_triples", empty_triples, minimum=1)
        self.max_chars = check_int("max_chars", max_chars, minimum=1, maximum=MAX_PARSER_CHARS)
        self.bug = check_choice("bug", bug, BUGS)
        if bug == "private_neighbourhood" and variant != "document":
            raise ParameterError("bug", bug, "'private_neighbourhood' applies to variant='document' only")
        self._embedder = embedder

    # -------------------------------------------------------------- contracts
    @property
    def embedder(self):
        if self._embedder is None:
            self._embedder = load_embedder()
        return self._embedder

    @property
    def slot_epsilons(self) -> tuple[float, float]:
        """(neighbourhood choice, triple choice) epsilon per slot of the document variant, as its contract
        (:func:`document_contract`) states them from :func:`dpkit.dpst.mechanism.slot_split`."""
        p = document_contract(self.epsilon, self.slots, self.neighbourhood_share, self.corpus.k).parameters
        return p["eps_neighbourhood"], p["eps_triple"]

    @cached_property
    def slot_mechanisms(self) -> tuple:
        """The document variant's two exponential mechanisms (neighbourhood, triple), built once per DPST."""
        eps_n, eps_t = self.slot_epsilons
        return mechanism.exponential(eps_n), mechanism.exponential(eps_t)

    @cached_property
    def contract(self) -> PrivacyContract:
        """The guarantee of one privatized document, at the configured epsilon (built once)."""
        if self.variant == "document":
            return document_contract(self.epsilon, self.slots, self.neighbourhood_share, self.corpus.k)
        return PrivacyContract(
            mechanism="DP-ST neighbourhood-aware (per-triple split)", neighbouring="replace-one",
            unit="document, among documents with the same number n of triples lying pairwise in the same "
                 "neighbourhoods", measure="pure", sensitivity=mechanism.SENSITIVITY, epsilon=self.epsilon,
            sensitivity_norm="max over candidates",
            kind="dpst_neighbourhood", parameters={"max_triples": self.max_triples, "utility": "clip(cos, 0, 1)"},
            note="each triple: EM at epsilon/n inside its nearest centroid's neighbourhood. NOT DP across "
                 "neighbourhoods or between documents with different triple counts (loss unbounded); "
                 f"n is capped at {self.max_triples}")

    @property
    def public_rules(self) -> dict[str, str]:
        """The data-independent rules that decide what happens to unusual private documents."""
        empty = (f"{self.slots} public triples fill the slots" if self.variant == "document"
                 else f"{self.empty_triples} public triple(s) drawn uniformly")
        return {
            "long_document": f"each document is cut to its first {self.max_chars} characters before parsing",
            "triples_kept": f"the first {self.slots if self.variant == 'document' else self.max_triples} "
                            "triples of a document (after deduplication)",
            "document_without_triples": (empty if self.on_empty == "public"
                                         else "error (on_empty='error', not for releases)"),
            "batching": "each document is parsed, deduplicated and embedded alone and draws its noise "
                        "from its own child generator",
        }

    # ----------------------------------------------------------- extraction
    def extract(self, texts: Sequence[str]) -> list[list[str]]:
        """Deduplicated triple texts per document (private intermediate values).

        Each document is cut at ``max_chars`` and parsed and tie-scored on its own.
        """
        texts = [text[:self.max_chars] for text in texts]
        found = [[t.text for t in triples] for triples in extract_triples_batch(texts, batch_size=1)]
        if not self.dedup:
            return found
        return deduplicate_many(found, threshold=self.threshold, num_perm=self.num_perm, scorer=self.scorer,
                                independent=True)

    # ---------------------------------------------------------- privatizing
    def privatize(self, text: str, rng: np.random.Generator, trace: bool = False, *,
                  ledger: PrivacyLedger | None = None) -> PrivateDocument:
        """Privatize one document; randomness only from ``rng``."""
        if not isinstance(text, str):
            raise ParameterError("text", text, "must be a string")
        return self.privatize_batch([text], rng, trace=trace, ledger=ledger)[0]

    def privatize_batch(self, texts: Sequence[str], rng: np.random.Generator,
                        trace: bool = False, *, ledger: PrivacyLedger | None = None) -> list[PrivateDocument]:
        """Privatize many documents (triples of all documents embedded in one call).

        The release is charged to ``ledger`` (a new one when ``None``) as one
        parallel entry over the documents: each document's output depends on
        that document alone.
        """
        rng = check_rng("rng", rng)
        return self.privatize_prepared(self.prepare(texts), rng, trace=trace, ledger=ledger)

    def prepare(self, texts: Sequence[str]) -> "Prepared":
        """Extract, deduplicate, cap and embed the triples of ``texts`` (deterministic, private).

        Separate from :meth:`privatize_prepared` so that an evaluation can draw
        many privatizations (epsilons, seeds) from one extraction.
        """
        if isinstance(texts, str):
            raise ParameterError("texts", f"<a string of {len(texts)} characters>",
                                 "must be a sequence of strings, not one string")
        texts = list(texts)
        for i, text in enumerate(texts):
            if not isinstance(text, str):
                raise ParameterError(f"texts[{i}]", text, "must be a string")
        cap = self.slots if self.variant == "document" else self.max_triples
        kept = [t[:cap] for t in self.extract(texts)]
        blocks = [np.asarray(self.embedder.encode(doc)) for doc in kept if doc]  # one call per document
        vectors = np.concatenate(blocks) if blocks else np.zeros((0, self.corpus.dim), np.float32)
        return Prepared(texts, kept, vectors)

    def privatize_prepared(self, prepared: "Prepared", rng: np.random.Generator,
                           trace: bool = False, *, ledger: PrivacyLedger | None = None,
                           charge: Charge | None = None) -> list[PrivateDocument]:
        """Run the mechanism on prepared documents; randomness only from ``rng``.

        Charges ``ledger`` (a new one when ``None``) with one parallel entry over
        the documents; every released triple carries that entry as provenance.
        ``charge``: a Charge of this very mechanism already recorded for this release
        (e.g. one parallel entry over all documents when they are privatized one call
        each); then nothing more is spent.
        """
        if not isinstance(prepared, Prepared):
            raise ParameterError("prepared", prepared, "must come from DPST.prepare")
        rng = check_rng("rng", rng)
        if ledger is None and charge is None:  # a charge already spent needs no ledger
            ledger = PrivacyLedger()
        if ledger is not None and not hasattr(ledger, "spend_parallel"):
            raise ParameterError("ledger", type(ledger).__name__, "must be a PrivacyLedger or None")
        if len(prepared) == 0:
            return []
        if charge is None:
            charge = ledger.charge(Charge("dpst: privatize documents", mechanism=self, groups=len(prepared)))
        elif not isinstance(charge, Charge) or charge.mechanism is not self:
            raise ParameterError("charge", type(charge).__name__,
                                 "must be the Charge of this mechanism (Charge(label, mechanism=it, groups=n)), "
                                 "recorded on the ledger")
        cap = self.slots if self.variant == "document" else self.max_triples
        drawn, start = [], 0
        for text, triples, child in zip(prepared.texts, prepared.triples, rng.spawn(len(prepared))):
            emb = prepared.embeddings[start:start + len(triples)]
            start += len(triples)
            drawn.append(self._one(text, triples[:cap], emb[:cap], child, trace))
        # every released triple is marked in one call: the provenance (the same charge) is built once
        texts = iter(release_texts([str(self.corpus.texts[j]) for d in drawn if not isinstance(d, PrivateDocument)
                                    for j in d[0]], charge, source="dpkit.dpst"))
        return [d if isinstance(d, PrivateDocument) else
                PrivateDocument(tuple(next(texts) for _ in d[0]), d[0], self.contract, trace=d[1]) for d in drawn]

    def _uniform_public(self, count: int, rng: np.random.Generator) -> np.ndarray:
        return rng.integers(0, len(self.corpus), size=count)

    def _one(self, text: str, triples: list[str], emb: np.ndarray, rng: np.random.Generator,
             trace: bool) -> "PrivateDocument | tuple[np.ndarray, dict]":
        """One document's draw: a PrivateDocument (raw-text bug), else the released ids and their trace,
        marked by :meth:`privatize_prepared`."""
        info: dict[str, Any] = {"extracted": list(triples)} if trace else {}
        if not triples and self.variant == "neighbourhood":
            if self.bug == "raw_text_fallback":
                return PrivateDocument((), np.zeros(0, np.int64), self.contract, raw_text=text, trace=info)
            if self.on_empty == "error":
                raise NoTriplesError("the text has no extractable subject-verb-object triple "
                                     "(on_empty='error'); nothing is released")
            ids = self._uniform_public(self.empty_triples, rng)
            return self._release(ids, info)
        if self.variant == "neighbourhood":
            eps = self.epsilon / len(triples)
            clusters = self.corpus.nearest_centroid(emb)
            ids = np.empty(len(triples), np.int64)
            for i, c in enumerate(clusters):
                members = self.corpus.members(int(c))
                ids[i] = members[int(mechanism.sample_in_neighbourhood(self.corpus.embeddings[members], emb[i],
                                                                       eps, rng))]
            if trace:
                info["neighbourhoods"] = clusters.tolist()
                info["epsilon_per_triple"] = eps
            return self._release(ids, info)
        # document variant
        if not triples and self.bug == "raw_text_fallback":
            return PrivateDocument((), np.zeros(0, np.int64), self.contract, raw_text=text, trace=info)
        if not triples and self.on_empty == "error":
            raise NoTriplesError("the text has no extractable subject-verb-object triple "
                                 "(on_empty='error'); nothing is released")
        pad = self._uniform_public(self.slots - len(triples), rng)
        slot_emb = np.concatenate([emb, self.corpus.embeddings[pad]]) if len(pad) else emb
        by_neighbourhood, by_triple = self.slot_mechanisms  # built once per DPST, not per draw
        if self.bug == "private_neighbourhood":
            clusters = self.corpus.nearest_centroid(slot_emb)
        else:
            clusters = np.atleast_1d(mechanism.draw(by_neighbourhood, self.corpus.centroids, slot_emb, rng))
        ids = np.empty(self.slots, np.int64)
        for i, c in enumerate(clusters):
            members = self.corpus.members(int(c))
            ids[i] = members[int(mechanism.draw(by_triple, self.corpus.embeddings[members], slot_emb[i], rng))]
        if trace:
            eps_n, eps_t = self.slot_epsilons
            info.update(padding=[str(self.corpus.texts[j]) for j in pad], neighbourhoods=clusters.tolist(),
                        epsilon_neighbourhood=eps_n, epsilon_triple=eps_t)
        return self._release(ids, info)

    @staticmethod
    def _release(ids: np.ndarray, info: dict) -> tuple[np.ndarray, dict]:
        return np.asarray(ids, dtype=np.int64), info
