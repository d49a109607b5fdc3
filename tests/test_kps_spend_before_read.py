"""DP-KPS charges each ledger entry before the first read of the documents it pays for.

The documents are ``Watched`` strings: every access to their characters notes how
many entries the ledger held at that moment.  The vocabulary histogram must not
look at a document before its entry exists, and the class DP-KDEs must not match
keyphrases in a document before their entries exist.
"""

import numpy as np
import pytest

import dpkit.kps.pipeline as pipeline
from dpkit.kps.pipeline import KPSConfig, fit_kps
from dpkit.privacy import PrivacyLedger

VOCAB = ["heart", "failure", "heart failure", "cancer", "blood", "pressure", "pain", "chest", "lung",
         "kidney", "liver", "fever", "cough"]
TEXTS = ["heart failure and chest pain", "blood pressure high", "lung cancer cough fever",
         "kidney liver pain", "fever and cough", "chest pain heart"]
LABELS = [0, 1, 0, 1, 2, 0]


class Embedder:
    def encode(self, terms):
        v = np.array([[ord(c) for c in (t + "........")[:8]] for t in terms], dtype=float)
        return v / np.linalg.norm(v, axis=1, keepdims=True)


class Reads:
    """What the ledger held at each read of a private document, per phase of fit_kps."""

    def __init__(self, ledger):
        self.ledger, self.phase, self.log = ledger, "vocabulary", []

    def note(self):
        self.log.append((self.phase, len(self.ledger.entries)))


def watched(text, reads):
    class Watched(str):
        def _note(self):
            reads.note()

        def lower(self):
            self._note()
            return Watched(str.lower(self))

        def __getitem__(self, key):
            self._note()
            return Watched(str.__getitem__(self, key))

        def __iter__(self):
            self._note()
            return str.__iter__(self)

        def split(self, *args, **kwargs):
            self._note()
            return str.split(self, *args, **kwargs)

    return Watched(text)


@pytest.mark.parametrize("method, ensemble", [("independent", "logarithmic"), ("iterative", "logarithmic"),
                                              ("iterative", "linear")])
def test_each_entry_is_on_the_ledger_before_its_first_private_read(monkeypatch, method, ensemble):
    recorded = []
    ledger = PrivacyLedger(on_record=lambda led: recorded.append(len(led.entries)))
    reads = Reads(ledger)
    real_keyphrases = pipeline.document_keyphrases

    def keyphrases(texts, matcher):  # the DP-KDE's reader: from here on, reads are paid by the KDE entries
        reads.phase = "kde"
        return real_keyphrases(texts, matcher)

    monkeypatch.setattr(pipeline, "document_keyphrases", keyphrases)
    config = KPSConfig(epsilon=6.0, vocabulary_share=1 / 6, N=8, L=4, n_features=32, method=method, ensemble=ensemble)
    texts = [watched(t, reads) for t in TEXTS]
    model = fit_kps(texts, LABELS, ["a", "b", "c"], VOCAB, Embedder(), config, np.random.default_rng(0), ledger)

    n_kde = len(model.contracts["kde"])
    assert recorded == list(range(1, 2 + n_kde))  # every entry went through the on_record hook (disk in a run)
    phases = {phase for phase, _ in reads.log}
    assert phases == {"vocabulary", "kde"}, reads.log
    vocabulary_reads = [n for phase, n in reads.log if phase == "vocabulary"]
    kde_reads = [n for phase, n in reads.log if phase == "kde"]
    assert min(vocabulary_reads) >= 1, "a document was read before the vocabulary's entry was recorded"
    assert min(kde_reads) == 1 + n_kde, "a document was matched before every DP-KDE entry was recorded"
    assert ledger.entries[0].label == "kps: private vocabulary"


def test_the_charged_contracts_are_the_released_ones():
    config = KPSConfig(epsilon=6.0, vocabulary_share=1 / 6, N=8, L=4, n_features=32, method="iterative")
    model = fit_kps(TEXTS, LABELS, ["a", "b", "c"], VOCAB, Embedder(), config, np.random.default_rng(1))
    declared = pipeline.kps_charges(config, len(VOCAB), 3)
    vocabulary, *kde = [charge.contract for charge in declared]
    assert model.vocabulary.contract == vocabulary
    assert [m.kde.contract for m in model.class_kdes[2].members] == kde
    assert [e.contract for e in model.ledger.entries] == [vocabulary, *kde]
    assert list(model.ledger.entries) == list(declared)  # the ledger's entries are the declared charges


def test_a_vocabulary_smaller_than_N_costs_nothing():
    ledger = PrivacyLedger()
    with pytest.raises(Exception, match="N"):
        fit_kps(TEXTS, LABELS, ["a", "b", "c"], VOCAB, Embedder(),
                KPSConfig(epsilon=6.0, vocabulary_share=1 / 6, N=len(VOCAB) + 5), np.random.default_rng(0), ledger)
    assert ledger.entries == []
