"""Per-class DP-KPS: one shared private vocabulary, one DP-KDE family per class, a ledger.

Privacy accounting (add/remove one document, pure DP):

* the vocabulary histogram reads every document once: ``eps_voc``;
* each class's DP-KDE (independent method) or ensemble (iterative method) reads only
  that class's documents.  A document's class is a function of the document
  alone, so the per-class releases act on disjoint parts of the data and compose
  in parallel: the whole family costs ``eps_kde``, not ``n_classes * eps_kde``;
* inside one class's ensemble the members read the same documents and compose
  sequentially (``eps_kde`` split evenly, :mod:`dpkit.kps.ensembles`).

Total: ``eps_voc + eps_kde``, recorded in a :class:`~dpkit.privacy.PrivacyLedger`
(one ``spend`` for the vocabulary, one ``spend_parallel`` per KDE (member) over
the classes), each entry charged before the first read of the documents it pays
for (:func:`fit_kps`).  Everything after the releases -- sequences, prompts, the LLM's
texts -- is post-processing.

Public rules (no private data can abort a release once it has started; see
:meth:`KPSConfig.public_rules`, which ``config.json`` states):

* every document is cut to its first ``max_chars`` characters before matching;
* documents with no in-vocabulary term add nothing to the histogram or to any KDE;
* a class with no documents, or none of whose documents contains a private
  vocabulary term, gets the same mechanism run on zero documents: the sketch of
  an empty set (all zeros) plus the Laplace noise, i.e. a pure-noise DP-KDE.
  Nothing about the class's size changes what is computed or released.

Bad input, checked before anything is released: an empty corpus and labels
outside ``label_names`` raise ParameterError.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Iterator, Sequence

import numpy as np

from dpkit.kps.ensembles import ENSEMBLES, KDEEnsemble, build_ensemble, ensemble_mechanisms
from dpkit.kps.kde import DPKDE, dpkde_mechanism, kde_sketch, privatize_sketch
from dpkit.kps.rff import RandomFourierFeatures
from dpkit.kps.kde import normalize_scores
from dpkit.kps.sequences import (CHOICES, contrast_probabilities, draw_sequences, independent_sequences,
                                 iterative_sequences)
from dpkit.kps.vocabulary import (PhraseMatcher, PrivateVocabulary, histogram_mechanism, noise_threshold,
                                  private_vocabulary)
from dpkit.privacy import Charge, PrivacyLedger
from dpkit.privacy.marks import release_texts
from dpkit.validate import (ParameterError, check_choice, check_in_range, check_int, check_positive, check_rng,
                            check_unit_norm)

METHODS = ("independent", "iterative")


@dataclass(frozen=True)
class KPSConfig:
    """Parameters of one DP-KPS run (defaults follow the paper where it states them).

    The budget is stated once: ``epsilon``, the total pure-DP budget (required), of
    which ``vocabulary_share`` pays for the private vocabulary (:attr:`eps_voc`) and
    the rest for the per-class DP-KDEs (:attr:`eps_kde`). A configuration that
    extends this one (a release's, :class:`dpkit.methods.kps.Config`) adds fields only.

    Small corpora (measured 27 Nov 2026; epsilon 8, 1,000 training texts of each of three bundled data sets, 500
    per label, 2 labels, seeds 0-2). With the paper's settings (S 10,
    vocabulary_share 0.2, top N 1000, I 2048, bandwidth 1.0) the label is lost before the LLM sees anything:

    * vocabulary: Laplace scale ``S / eps_voc`` = 6.25, so only 12-18% of the 1,000 released terms occur in
      3 or more training documents;
    * DP-KDE: with bandwidth 1 each class's sampling distribution is flat (perplexity 987 of 1,000 terms; total
      variation between the two classes 0.08); the exact class-difference signal (std 3.3 over the vocabulary)
      is buried in noise plus random-feature error (std 18.7, correlation 0.25);
    * so a classifier trained on 100 sampled keyphrase sequences per label is at chance on the real test
      texts: 0.49 / 0.48 / 0.54 balanced accuracy (health tweets / Rotten Tomatoes / medical), although the real
      documents mapped to the same vocabulary reach 0.79 on health tweets.

    The defaults therefore add three public rules, none of which changes a charge or a contract (tested):
    ``S`` 3 and ``vocabulary_share`` 0.3 (scale 1.25); a noise-aware vocabulary size (``noise_terms`` 10: only
    terms whose noisy count clears ``1.25 ln(10000 / 20)`` = 7.8, at most 10 pure-noise terms expected, capped at
    ``N``, at least ``L``; post-processing of the noisy histogram); ``bandwidth`` 0.5 with ``n_features`` 256
    (score noise std ``2 sqrt(I) / eps_kde``: 5.7 instead of 14.1) drawn once for all classes
    (``shared_features``: public randomness, so the random-feature errors of the classes cancel in their
    difference: 17.3 -> 7.4); and ``contrast`` 2 (each class samples from its DP-KDE distribution tilted by
    its ratio to the classes' mean; post-processing of the released DP-KDEs; the class is still never named in
    a prompt). Keyphrase-sequence classifier, old -> new defaults (mean of 3 seeds): health tweets 0.49 ->
    0.80, Rotten Tomatoes 0.48 -> 0.56, medical 0.54 -> 0.72; 79-85% of the 56-69 released terms are real
    words of the data. Share 0.2 or 0.5, contrast 4 and I 1024 were each worse on at least one set.
    With the LLM (``dpkit synth kps --epsilon 8`` at the release defaults, 100 texts per label, seed 0, scored by
    ``dpkit evaluate`` on the 250 real test texts), old -> new: balanced accuracy health tweets 0.53 [0.47, 0.60]
    -> 0.69 [0.64, 0.73], medical 0.48 [0.43, 0.52] -> 0.72 [0.67, 0.77], Rotten Tomatoes 0.47 [0.41, 0.53] ->
    0.60 [0.54, 0.66] (its texts split by genre words, not sentiment; real reviews mapped to the same
    keyphrases reach only 0.61, a limit of unigram keyphrases for sentiment); seed 1 of the new defaults: health
    tweets 0.80 [0.75, 0.84], medical 0.75 [0.70, 0.80], Rotten Tomatoes 0.50 [0.46, 0.55] (chance: no reliable
    gain there); k-NN precision 0.56 / 0.42 / 0.57 -> 0.81 /
    0.80 / 0.71; assistant talk and texts under 3 words 0 before and after. The price is diversity: with about 60
    terms (sampling perplexity 25-30 per class) k-NN recall falls 0.65 / 0.32 / 0.48 -> 0.24 / 0.25 / 0.42 and the
    real-vs-synthetic AUROC moves 0.92 / 0.99 / 0.96 -> 0.94 / 0.96 / 0.97. ``noise_terms`` 30 or 100 widens the
    vocabulary (perplexity 44 / 115) at 0.01-0.08 lower keyphrase-stage accuracy: a public knob for that trade.
    The medical vocabulary (``vocabulary="medical"``) measured earlier with the paper's settings was
    as noisy (7% of N 1000 in the data), but its noise terms are medical.
    """

    epsilon: float                 # the total pure-DP budget: eps_voc + eps_kde
    vocabulary_share: float = 0.3  # part of epsilon for the private vocabulary, the rest for the DP-KDEs
    S: int = 3                     # terms per document in the vocabulary histogram (short texts: 3)
    N: int = 1000                  # private vocabulary size (a cap once noise_terms is set)
    L: int = 10                    # keyphrases per sequence
    method: str = "independent"    # or "iterative"
    ensemble: str = "logarithmic"  # iterative only: or "linear"
    choice: str = "sample"         # iterative only: sample by score or take the best
    n_features: int = 256          # random Fourier features I (score noise std 2 sqrt(I) / eps_kde)
    bandwidth: float = 0.5         # sigma_0 for single unit-norm embeddings (1.0 makes the class KDEs flat)
    windows: str = "all"           # iterative only: which length-D windows of a document feed a member
    distinct: bool = True          # iterative only: no repeated keyphrase within a sequence
    max_chars: int = 100_000       # public cap: each document is cut to its first max_chars characters
    noise_terms: float | None = 10.0  # noise-aware vocabulary size: expected pure-noise terms allowed (None: top N)
    shared_features: bool = True   # independent only: one public random-feature draw for every class's DP-KDE
    contrast: float = 2.0          # independent only: tilt towards terms a class scores above the classes' mean

    def __post_init__(self):
        check_positive("epsilon", self.epsilon)
        check_in_range("vocabulary_share", self.vocabulary_share, 0.0, 1.0, low_open=True, high_open=True)
        check_int("S", self.S, minimum=1)
        check_int("N", self.N, minimum=1)
        check_int("L", self.L, minimum=1)
        check_choice("method", self.method, METHODS)
        check_choice("ensemble", self.ensemble, ENSEMBLES)
        check_choice("choice", self.choice, CHOICES)
        check_int("n_features", self.n_features, minimum=1)
        check_positive("bandwidth", self.bandwidth)
        check_int("max_chars", self.max_chars, minimum=1)
        if self.noise_terms is not None:
            check_positive("noise_terms", self.noise_terms)
        if not isinstance(self.shared_features, bool):
            raise ParameterError("shared_features", self.shared_features, "must be True or False")
        check_positive("contrast", self.contrast, allow_zero=True)

    @property
    def eps_voc(self) -> float:
        """The private vocabulary's budget: ``vocabulary_share * epsilon``."""
        return self.epsilon * self.vocabulary_share

    @property
    def eps_kde(self) -> float:
        """The per-class DP-KDEs' budget (parallel over the classes): ``epsilon - eps_voc``."""
        return self.epsilon - self.eps_voc

    def vocabulary_threshold(self, vocabulary_size: int) -> float | None:
        """The noisy-count threshold of the noise-aware vocabulary size (public parameters only; None: off)."""
        if self.noise_terms is None:
            return None
        return noise_threshold(self.S, self.eps_voc, vocabulary_size, self.noise_terms)

    def public_rules(self) -> dict[str, str]:
        """The data-independent rules that decide what happens to unusual private inputs."""
        rules = {}
        if self.noise_terms is not None:
            rules["vocabulary_size"] = (
                f"of the top N={self.N} noisy counts, only terms whose noisy count is at least "
                f"(S / eps_voc) ln(|V| / (2 * {self.noise_terms:g})) are released (at most {self.noise_terms:g} "
                f"pure-noise terms expected), never fewer than L={self.L}; post-processing of the noisy histogram")
        if self.method == "independent" and self.contrast:
            rules["contrast"] = (f"each class samples keyphrases from its DP-KDE's distribution tilted by "
                                 f"(its / the classes' mean)^{self.contrast:g}; post-processing of the released "
                                 "DP-KDEs")
        return rules | {
            "long_document": f"each document is cut to its first {self.max_chars} characters before matching",
            "document_without_terms": "adds nothing to the vocabulary histogram or to any DP-KDE",
            "empty_class": "a class with no documents gets the DP-KDE of zero documents: all-zero sketch "
                           "plus the same Laplace noise (never an error)",
        }


@dataclass
class KPSModel:
    """What DP-KPS released: the vocabulary, its embeddings, per-class DP-KDEs, and the ledger."""

    config: KPSConfig
    vocabulary: PrivateVocabulary
    embeddings: np.ndarray
    label_names: list[str]
    class_kdes: dict[int, DPKDE | KDEEnsemble]
    ledger: PrivacyLedger
    contracts: dict = field(default_factory=dict)
    #: the ledger entries of the vocabulary and KDE releases (the provenance of every keyphrase)
    charges: tuple = ()

    @property
    def epsilon(self) -> float:
        """The pure-DP guarantee at the configured budget: ``eps_voc + eps_kde``."""
        return self.config.epsilon

    def sequence_ids(self, label: int, n: int, rng: np.random.Generator) -> np.ndarray:
        """``(n, L)`` keyphrase ids for class ``label`` (post-processing)."""
        label = check_int("label", label, minimum=0, maximum=len(self.label_names) - 1)
        cfg = self.config
        if cfg.method == "independent" and cfg.contrast:
            return draw_sequences(self.class_probabilities()[label], n, cfg.L, rng)
        if cfg.method == "independent":
            return independent_sequences(self.class_kdes[label], self.embeddings, n, cfg.L, rng)
        return iterative_sequences(self.class_kdes[label], self.embeddings, n, rng, choice=cfg.choice,
                                   distinct=cfg.distinct)

    def class_probabilities(self) -> np.ndarray:
        """``(n_classes, |vocabulary|)``: each class's keyphrase distribution (independent method), the
        normalized DP-KDE scores tilted by ``config.contrast``
        (:func:`~dpkit.kps.sequences.contrast_probabilities`); a function of the released DP-KDEs only."""
        if self.config.method != "independent":
            raise ParameterError("method", self.config.method, "class_probabilities needs method='independent'")
        P = np.stack([normalize_scores(self.class_kdes[c].scores(self.embeddings))
                      for c in range(len(self.label_names))])
        return contrast_probabilities(P, self.config.contrast)

    def marked_terms(self) -> list:
        """The vocabulary terms as :class:`~dpkit.privacy.marks.Privatized` text.

        Their provenance is the vocabulary release and the KDE releases (a
        sequence is post-processing of both), with the ledger entries that charged them.
        """
        cached = self.__dict__.get("_marked_terms")
        if cached is None:
            if not self.charges:
                raise ParameterError("model", "<no ledger entries>",
                                     "must come from fit_kps (which records the releases' ledger entries)")
            cached = release_texts(list(self.vocabulary.terms), self.charges, source="dpkit.kps")
            self.__dict__["_marked_terms"] = cached
        return cached

    def sequences(self, label: int, n: int, rng: np.random.Generator) -> list[list]:
        """``n`` keyphrase sequences for class ``label``: lists of Privatized terms (see :meth:`marked_terms`)."""
        terms = self.marked_terms()
        return [[terms[i] for i in row] for row in self.sequence_ids(label, n, rng)]


def document_keyphrases(texts: Sequence[str], matcher: PhraseMatcher) -> Iterator[list[int]]:
    """Each document's distinct private-vocabulary terms, in order of first appearance; lazy (one document
    is matched when its list is taken), so a caller that aggregates holds one document's terms at a time."""
    return (matcher.first_terms(t, None, distinct=True) for t in texts)


def _check_corpus(texts, labels, label_names) -> tuple[list[str], np.ndarray]:
    if isinstance(texts, str):
        raise ParameterError("texts", texts, "must be a sequence of documents, not one string")
    texts = list(texts)
    if not texts:
        raise ParameterError("texts", texts, "must contain at least one document (empty corpus)")
    labels = np.asarray(labels)
    if labels.shape != (len(texts),):
        raise ParameterError("labels", labels, f"must have one label per document ({len(texts)})")
    if len(label_names) == 0:
        raise ParameterError("label_names", label_names, "must name at least one class")
    if not np.issubdtype(labels.dtype, np.integer) or labels.min() < 0 or labels.max() >= len(label_names):
        raise ParameterError("labels", labels, f"must be integers in [0, {len(label_names)})")
    for i, text in enumerate(texts):
        if not isinstance(text, str):
            raise ParameterError(f"texts[{i}]", text, "must be a string")
    return texts, labels


def kps_charges(config: KPSConfig, vocabulary_size: int, n_classes: int) -> tuple[Charge, ...]:
    """The charges of DP-KPS, declared once from public parameters: the vocabulary histogram
    (one run over all documents), then each DP-KDE (member), parallel over the ``n_classes`` classes.

    Each charge holds the mechanism it pays for, built here once (:func:`histogram_mechanism`,
    :func:`dpkde_mechanism`, :func:`ensemble_mechanisms`): :func:`fit_kps` charges exactly these, each
    before the reads it pays for, and draws with their mechanisms; ``dpkit synth kps --plan`` charges
    the same list to its planned ledger.
    """
    vocabulary = histogram_mechanism(config.S, vocabulary_size, config.eps_voc)
    if config.method == "independent":
        kde = [dpkde_mechanism(config.n_features, config.eps_kde, label=_INDEPENDENT_LABEL)]
    else:
        kde = ensemble_mechanisms(config.L, config.eps_kde, ensemble=config.ensemble, n_features=config.n_features)
    n_classes = check_int("n_classes", n_classes, minimum=1)
    members = [""] if len(kde) == 1 else [f", member {i + 1} of {len(kde)}" for i in range(len(kde))]
    return (Charge("kps: private vocabulary", vocabulary[1], mechanism=vocabulary[0]),
            *(Charge(f"kps: DP-KDE of each class{member}", contract, groups=n_classes, mechanism=mechanism)
              for member, (mechanism, contract) in zip(members, kde)))


def fit_kps(texts: Sequence[str], labels: Sequence[int], label_names: Sequence[str],
            public_vocabulary: Sequence[str] | PhraseMatcher, embedder, config: KPSConfig,
            rng: np.random.Generator, ledger: PrivacyLedger | None = None) -> KPSModel:
    """Run the private part of DP-KPS; spends ``eps_voc + eps_kde`` on ``ledger`` (a new one if None).

    Spend before read: each ledger entry is recorded (and, in a run, written to
    disk by the ledger's ``on_record`` hook) before the first read of the
    documents' contents that it pays for -- the vocabulary charge before any
    document is matched, the DP-KDE charges before the class sketches.  Each
    release draws with the mechanism its charge holds (:func:`kps_charges`,
    from the public configuration), so what is charged is what draws.
    Only the input checks (types, label range) look at the data earlier; they
    release nothing.

    ``embedder`` maps a list of terms to unit-norm rows (``.encode``), e.g.
    :func:`dpkit.models.embed.load_embedder`; it is public.
    """
    check_rng("rng", rng)
    if not isinstance(config, KPSConfig):
        raise ParameterError("config", config, "must be a KPSConfig")
    texts, labels = _check_corpus(texts, labels, list(label_names))
    matcher = public_vocabulary if isinstance(public_vocabulary, PhraseMatcher) else PhraseMatcher(public_vocabulary)
    if config.N > len(matcher):
        raise ParameterError("N", config.N, f"must be <= the public vocabulary size ({len(matcher)})")
    ledger = PrivacyLedger() if ledger is None else ledger
    n_classes = len(label_names)
    vocabulary_charge, *kde_charges = kps_charges(config, len(matcher), n_classes)
    kde_built = [(charge.mechanism, charge.contract) for charge in kde_charges]

    charges = [ledger.charge(vocabulary_charge)]
    texts = [text[:config.max_chars] for text in texts]  # public cap (KPSConfig.public_rules)
    vocab = private_vocabulary(texts, matcher, config.S, config.N, config.eps_voc, rng,
                               noise_terms=config.noise_terms, min_terms=config.L,
                               built=(vocabulary_charge.mechanism, vocabulary_charge.contract))
    embeddings = check_unit_norm("embeddings", np.asarray(embedder.encode(vocab.terms), dtype=np.float64))

    charges += [ledger.charge(charge) for charge in kde_charges]
    keyphrases = document_keyphrases(texts, PhraseMatcher(vocab.terms))
    if config.method == "independent":  # additive over documents: one pass, no per-document lists held
        term_weights = class_term_weights(keyphrases, labels, n_classes, len(vocab.terms))
    else:
        keyphrases = list(keyphrases)
    kdes: dict[int, DPKDE | KDEEnsemble] = {}
    shared = None  # public randomness: one draw of the random features for every class
    if config.method == "independent" and config.shared_features:
        shared = RandomFourierFeatures(embeddings.shape[1], config.n_features, config.bandwidth, rng)
    for label in range(n_classes):
        if config.method == "independent":
            kdes[label] = _single_kde(term_weights[label], embeddings, config, rng, features=shared,
                                      built=kde_built[0])
        else:
            docs = [keyphrases[i] for i in np.flatnonzero(labels == label)]
            kdes[label] = build_ensemble(docs, embeddings, config.L, config.eps_kde, rng,
                                         ensemble=config.ensemble, n_features=config.n_features,
                                         base_bandwidth=config.bandwidth, windows=config.windows, built=kde_built)
    return KPSModel(config, vocab, embeddings, list(label_names), kdes, ledger,
                    {"vocabulary": vocabulary_charge.contract, "kde": [c.contract for c in kde_charges]},
                    tuple(charges))


_INDEPENDENT_LABEL = "independent, per_document=mean"


def class_term_weights(keyphrases: Iterable[list[int]], labels: np.ndarray, n_classes: int,
                       vocabulary_size: int) -> np.ndarray:
    """``(n_classes, vocabulary_size)``: for each class, the summed weight of every private-vocabulary term,
    where a document's distinct terms (``keyphrases``, one list per document) share weight 1, as
    ``document_weights(..., "mean")`` gives them.

    The independent DP-KDE's sketch is linear in these weights (``sum_t w_t f(e_t)``),
    so it is computed from them with memory ``O(classes x N)``, whatever the number of
    documents (one document's terms are held at a time).
    """
    weights = np.zeros((n_classes, vocabulary_size))
    for terms, label in zip(keyphrases, labels.tolist(), strict=True):
        if terms:
            np.add.at(weights[label], terms, 1.0 / len(terms))
    return weights


def _single_kde(term_weights: np.ndarray, embeddings: np.ndarray, config: KPSConfig,
                rng: np.random.Generator, features: RandomFourierFeatures | None = None,
                built: tuple | None = None) -> DPKDE:
    """One DP-KDE over all single keyphrases of a class; each document's keyphrases share weight 1.

    ``term_weights``: the class's summed weight per vocabulary term (:func:`class_term_weights`);
    a document's total weight is 1, which the sensitivity assumes. ``features``: a public draw
    shared with the other classes (``config.shared_features``); data-independent either way.
    ``built``: the charged ``(mechanism, contract)`` to draw with (:func:`kps_charges`).
    """
    if features is None:  # a fresh public draw for this class
        features = RandomFourierFeatures(embeddings.shape[1], config.n_features, config.bandwidth, rng)
    exact = np.zeros(config.n_features)
    if term_weights.any():
        exact = kde_sketch(embeddings, features, term_weights)
    return privatize_sketch(exact, features, config.eps_kde, rng, document_weight=1.0,
                            label=_INDEPENDENT_LABEL, built=built)
