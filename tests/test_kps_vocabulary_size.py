"""DP-KPS's public rules for small corpora: noise-aware vocabulary size, shared random features, contrast.

All three are post-processing (of the noisy histogram, or of the released DP-KDEs) or public
randomness: the ledger's charges and contracts must not change, and the released vocabulary must
depend on the data only through the noisy histogram.
"""


import numpy as np
import pytest

import dpkit.kps.vocabulary as vocabulary_module
from dpkit.kps.pipeline import KPSConfig, fit_kps, kps_charges
from dpkit.kps.sequences import contrast_probabilities
from dpkit.kps.vocabulary import noise_threshold, private_vocabulary, select_terms, top_n
from dpkit.validate import ParameterError
from hash_embedder import HashEmbedder



VOCAB = [f"word{i}" for i in range(400)] + ["tooth", "gum", "enamel", "heart", "lung", "murmur"]
TEXTS = ["tooth gum enamel"] * 40 + ["heart lung murmur"] * 40
LABELS = [0] * 40 + [1] * 40


def test_threshold_formula_and_its_expected_noise_terms():
    T = noise_threshold(3, 2.4, 10_000, 10)
    assert T == pytest.approx(3 / 2.4 * np.log(10_000 / 20))
    # a term no document contains passes T with probability m / |V|: about m pure-noise terms pass
    rng = np.random.default_rng(0)
    passing = [(rng.laplace(0.0, 3 / 2.4, 10_000) >= T).sum() for _ in range(400)]
    assert np.mean(passing) == pytest.approx(10, rel=0.1)
    assert noise_threshold(1, 1.0, 10, 5) == 0.0  # m = |V| / 2: every term with noisy count >= 0


def test_threshold_bad_input_names_the_parameter():
    with pytest.raises(ParameterError, match="noise_terms"):
        noise_threshold(3, 1.0, 100, 0)
    with pytest.raises(ParameterError, match="eps_voc"):
        noise_threshold(3, -1.0, 100, 5)
    with pytest.raises(ParameterError, match="min_terms"):
        select_terms(np.arange(5.0), 3, 1.0, min_terms=0)


def test_select_terms_caps_at_N_and_keeps_at_least_min_terms():
    counts = np.array([9.0, 1.0, 7.0, 3.0, 8.0, 0.5])
    assert select_terms(counts, 4).tolist() == top_n(counts, 4).tolist() == [0, 4, 2, 3]
    assert select_terms(counts, 4, threshold=5.0).tolist() == [0, 4, 2]
    assert select_terms(counts, 2, threshold=5.0).tolist() == [0, 4]           # the cap N binds
    assert select_terms(counts, 4, threshold=100.0, min_terms=2).tolist() == [0, 4]  # the floor binds
    assert select_terms(counts, 1, threshold=100.0, min_terms=3).tolist() == [0]     # floor never above N


def test_released_vocabulary_depends_on_the_data_only_through_the_noisy_histogram(monkeypatch):
    """Two different corpora whose noisy histograms coincide release the same vocabulary."""
    fixed = np.random.default_rng(3).laplace(0.0, 1.25, len(VOCAB))
    fixed[[400, 403]] = [40.0, 30.0]
    real = vocabulary_module.release_noisy_histogram

    def same_noisy(term_lists, vocabulary_size, S, eps_voc, rng, **kw):
        _, contract = real(term_lists, vocabulary_size, S, eps_voc, rng, **kw)  # reads the documents as usual
        return fixed.copy(), contract

    monkeypatch.setattr(vocabulary_module, "release_noisy_histogram", same_noisy)
    a = private_vocabulary(TEXTS, VOCAB, 3, 100, 2.4, np.random.default_rng(0), noise_terms=10, min_terms=2)
    b = private_vocabulary(["word1 word2"] * 7, VOCAB, 3, 100, 2.4, np.random.default_rng(9), noise_terms=10,
                           min_terms=2)
    assert a.terms == b.terms
    T = noise_threshold(3, 2.4, len(VOCAB), 10)
    assert a.terms == [VOCAB[i] for i in select_terms(fixed, 100, T, 2)]
    assert len(a.terms) == max(2, int((fixed >= T).sum()))


def test_noise_aware_size_drops_noise_terms_and_keeps_the_data_terms():
    rng = np.random.default_rng(1)
    top = private_vocabulary(TEXTS, VOCAB, 3, 100, 2.4, rng)
    sized = private_vocabulary(TEXTS, VOCAB, 3, 100, 2.4, np.random.default_rng(1), noise_terms=1)
    assert len(top) == 100 and set(sized.terms) >= {"tooth", "gum", "enamel", "heart", "lung", "murmur"}
    assert len(sized) < 12  # about one pure-noise word expected among 400, not 94
    assert sized.contract == top.contract  # same mechanism, same epsilon


def test_config_validates_and_records_the_new_rules():
    with pytest.raises(ParameterError, match="noise_terms"):
        KPSConfig(epsilon=8.0, noise_terms=0)
    with pytest.raises(ParameterError, match="contrast"):
        KPSConfig(epsilon=8.0, contrast=-0.5)
    with pytest.raises(ParameterError, match="contrast"):
        KPSConfig(epsilon=8.0, contrast=float("nan"))
    with pytest.raises(ParameterError, match="shared_features"):
        KPSConfig(epsilon=8.0, shared_features="yes")
    rules = KPSConfig(epsilon=8.0, noise_terms=10, contrast=2).public_rules()
    assert "vocabulary_size" in rules and "10" in rules["vocabulary_size"] and "contrast" in rules
    off = KPSConfig(epsilon=8.0, noise_terms=None, contrast=0).public_rules()
    assert "vocabulary_size" not in off and "contrast" not in off
    assert KPSConfig(epsilon=8.0, noise_terms=None).vocabulary_threshold(10_000) is None


@pytest.mark.parametrize("changes", [dict(noise_terms=None, shared_features=False, contrast=0.0),
                                     dict(noise_terms=1, shared_features=True, contrast=3.0)])
def test_ledger_and_contracts_do_not_change(changes):
    cfg = KPSConfig(epsilon=8.0, S=3, N=50, L=3, n_features=64, **changes)
    model = fit_kps(TEXTS, LABELS, ["dental", "cardio"], VOCAB, HashEmbedder(), cfg, np.random.default_rng(0))
    assert model.ledger.pure_epsilon() == pytest.approx(8.0)
    vocabulary, *kde = [charge.contract for charge in kps_charges(cfg, len(VOCAB), 2)]
    assert model.contracts == {"vocabulary": vocabulary, "kde": kde}
    shared = model.class_kdes[0].features is model.class_kdes[1].features
    assert shared == cfg.shared_features
    for label in (0, 1):
        ids = model.sequence_ids(label, 20, np.random.default_rng(label))
        assert ids.shape == (20, 3) and ids.max() < len(model.vocabulary)


def test_contrast_probabilities():
    P = np.array([[0.5, 0.3, 0.2, 0.0], [0.2, 0.3, 0.5, 0.0]])
    assert np.array_equal(contrast_probabilities(P, 0), P)
    Q = contrast_probabilities(P, 2)
    assert np.allclose(Q.sum(axis=1), 1) and np.all(Q[:, 3] == 0)
    assert Q[0, 0] > P[0, 0] and Q[0, 2] < P[0, 2] and Q[1, 2] > P[1, 2]  # towards each class's own terms
    one = np.array([[0.1, 0.6, 0.3]])
    assert np.allclose(contrast_probabilities(one, 5), one)  # one class: nothing to contrast
    with pytest.raises(ParameterError, match="contrast"):
        contrast_probabilities(P, -1)
    with pytest.raises(ParameterError, match="probabilities"):
        contrast_probabilities(np.array([0.5, 0.5]), 1)


def test_contrast_separates_the_classes_sequences_at_high_epsilon():
    cfg = KPSConfig(epsilon=1e6, S=3, N=50, L=4, n_features=2048, bandwidth=0.5, noise_terms=1, contrast=2,
                    shared_features=True)
    model = fit_kps(TEXTS, LABELS, ["dental", "cardio"], VOCAB, HashEmbedder(), cfg, np.random.default_rng(0))
    dental = [t for s in model.sequences(0, 50, np.random.default_rng(1)) for t in s]
    cardio = [t for s in model.sequences(1, 50, np.random.default_rng(2)) for t in s]
    assert np.mean([t in ("tooth", "gum", "enamel") for t in dental]) > 0.9
    assert np.mean([t in ("heart", "lung", "murmur") for t in cardio]) > 0.9


def test_release_config_records_the_new_rules():
    from dpkit.methods import kps
    from dpkit.methods.base import config_dict

    config = kps.Config(epsilon=8.0)
    recorded = config_dict(config)
    assert {"noise_terms": 10.0, "shared_features": True, "contrast": 2.0, "S": 3, "vocabulary_share": 0.3,
            "n_features": 256, "bandwidth": 0.5}.items() <= recorded.items()
    assert {"vocabulary_size", "contrast"} <= set(config.public_rules())
    with pytest.raises(ParameterError, match="noise_terms"):
        kps.Config(epsilon=8.0, noise_terms=-3)
