"""Per-class DP-KPS with a ledger (hash embedder: no model needed)."""


import numpy as np
import pytest

from dpkit.kps.pipeline import KPSConfig, fit_kps
from dpkit.validate import ParameterError
from hash_embedder import HashEmbedder



VOCAB = ["heart", "heart failure", "lung", "tooth", "gum", "enamel", "fracture", "bone", "skin", "rash"]
TEXTS = (["heart failure with lung edema and heart murmur"] * 6 + ["tooth decay of the enamel and gum"] * 6
         + ["bone fracture and skin rash"] * 6 + ["no known terms here"])
LABELS = [0] * 6 + [1] * 6 + [2] * 7
NAMES = ["cardio", "dental", "ortho"]


@pytest.mark.parametrize("method, ensemble", [("independent", "logarithmic"), ("iterative", "logarithmic"),
                                              ("iterative", "linear")])
def test_ledger_records_eps_voc_plus_eps_kde(method, ensemble):
    cfg = KPSConfig(epsilon=6.0, vocabulary_share=1 / 6, S=3, N=8, L=4, method=method, ensemble=ensemble, n_features=64)
    model = fit_kps(TEXTS, LABELS, NAMES, VOCAB, HashEmbedder(), cfg, np.random.default_rng(0))
    assert model.ledger.pure_epsilon() == pytest.approx(6.0) == model.epsilon
    members = 1 if method == "independent" else (4 if ensemble == "linear" else 2)
    assert model.ledger.rho == pytest.approx(0.5 + members * (5.0 / members) ** 2 / 2)
    assert all(e["groups"] == 3 for e in model.ledger.entries[1:])  # per-class parallel composition
    for label in range(3):
        seqs = model.sequences(label, 5, np.random.default_rng(label))
        assert len(seqs) == 5 and all(len(s) == 4 and set(s) <= set(model.vocabulary.terms) for s in seqs)


def test_high_epsilon_sequences_follow_the_class():
    cfg = KPSConfig(epsilon=2e6, vocabulary_share=0.5, S=3, N=10, L=2, n_features=4096, bandwidth=0.5)
    model = fit_kps(TEXTS, LABELS, NAMES, VOCAB, HashEmbedder(), cfg, np.random.default_rng(0))
    dental = [t for s in model.sequences(1, 50, np.random.default_rng(1)) for t in s]
    assert np.mean([t in ("tooth", "gum", "enamel") for t in dental]) > 0.8


def test_bad_corpora():
    cfg = KPSConfig(epsilon=6.0, vocabulary_share=1 / 6, S=2, N=3, L=2, n_features=16)
    rng = np.random.default_rng(0)
    with pytest.raises(ParameterError, match="empty"):
        fit_kps([], [], NAMES, VOCAB, HashEmbedder(), cfg, rng)
    with pytest.raises(ParameterError, match="labels"):
        fit_kps(TEXTS, [5] * len(TEXTS), NAMES, VOCAB, HashEmbedder(), cfg, rng)
    with pytest.raises(ParameterError, match="N"):
        fit_kps(TEXTS, LABELS, NAMES, VOCAB, HashEmbedder(), KPSConfig(epsilon=6.0, N=50), rng)
    with pytest.raises(ParameterError, match="method"):
        KPSConfig(epsilon=6.0, method="beam")
    with pytest.raises(ParameterError, match="epsilon"):
        KPSConfig(epsilon=-1)
    with pytest.raises(ParameterError, match="vocabulary_share"):  # the DP-KDEs need a part of the budget
        KPSConfig(epsilon=6.0, vocabulary_share=1.0)


def _releases(model):
    kdes = [k if hasattr(k, "sketch") else None for k in model.class_kdes.values()]
    sketches = [k.sketch if k is not None else np.concatenate([m.kde.sketch for m in model.class_kdes[i].members])
                for i, k in enumerate(kdes)]
    return model.vocabulary.terms, np.concatenate(sketches)


@pytest.mark.parametrize("method", ["independent", "iterative"])
def test_class_without_documents_gets_the_mechanism_on_zero_documents(method):
    """No abort: an empty class is released exactly like a class whose documents carry no term."""
    cfg = KPSConfig(epsilon=3.0, vocabulary_share=1 / 3, S=3, N=6, L=3, method=method, n_features=32)
    empty = fit_kps(TEXTS[:12], LABELS[:12], NAMES, VOCAB, HashEmbedder(), cfg, np.random.default_rng(5))
    termless = fit_kps(TEXTS[:12] + ["no known terms here"], LABELS[:12] + [2], NAMES, VOCAB, HashEmbedder(),
                       cfg, np.random.default_rng(5))
    terms_a, sketch_a = _releases(empty)
    terms_b, sketch_b = _releases(termless)
    assert terms_a == terms_b and np.array_equal(sketch_a, sketch_b)
    assert empty.ledger.pure_epsilon() == pytest.approx(3.0)
    assert len(empty.sequences(2, 4, np.random.default_rng(0))) == 4
    assert "empty_class" in cfg.public_rules() and "long_document" in cfg.public_rules()


def test_long_document_is_cut_at_the_public_character_cap():
    cfg = KPSConfig(epsilon=3.0, vocabulary_share=1 / 3, S=3, N=6, L=2, n_features=32, max_chars=40)
    filler = "x" * 40
    cut = fit_kps(TEXTS + [filler], LABELS + [0], NAMES, VOCAB, HashEmbedder(), cfg, np.random.default_rng(1))
    long = fit_kps(TEXTS + [filler + " heart tooth gum" * 100_000], LABELS + [0], NAMES, VOCAB, HashEmbedder(), cfg,
                   np.random.default_rng(1))   # 1.6 MB: terms after the cap are never read
    for a, b in zip(_releases(cut), _releases(long)):
        assert np.array_equal(np.asarray(a), np.asarray(b))
    with pytest.raises(ParameterError, match="max_chars"):
        KPSConfig(epsilon=6.0, max_chars=0)


def test_chapter_ledger_adds_the_releases_made_on_the_same_data():
    from dpkit.experiments.kps_corpora import record_release
    from dpkit.privacy import PrivacyLedger

    chapter = PrivacyLedger()
    for eps_kde, method in ((2.0, "independent"), (5.0, "iterative")):
        cfg = KPSConfig(epsilon=1.0 + eps_kde, vocabulary_share=1 / (1.0 + eps_kde), S=3, N=6, L=3, method=method,
                        n_features=32)
        record_release(chapter, fit_kps(TEXTS, LABELS, NAMES, VOCAB, HashEmbedder(), cfg, np.random.default_rng(0)))
    assert chapter.pure_epsilon() == pytest.approx(3.0 + 6.0)


def test_sketches_are_summed_in_float64_before_the_noise():
    cfg = KPSConfig(epsilon=3.0, vocabulary_share=1 / 3, S=3, N=6, L=3, n_features=32)
    model = fit_kps(TEXTS, LABELS, NAMES, VOCAB, HashEmbedder(), cfg, np.random.default_rng(0))
    for kde in model.class_kdes.values():
        assert kde.sketch.dtype == np.float64 and kde.features.weights.dtype == np.float64
