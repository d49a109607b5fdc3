"""The text measures: exact small cases for k-NN precision/recall, the detector's AUROC, distinct-n,
short texts and the length report, and measure_texts as one report."""

import math

import numpy as np
import pytest

from dpkit.textmetrics import TEXT_METRICS, measure_texts
from dpkit.textmetrics.detect import real_vs_synthetic_auroc
from dpkit.textmetrics.knn import knn_precision_recall, radii
from dpkit.textmetrics.surface import (distinct_n, duplicate_share, length_report, looping_share, pair_repeats,
                                      short_share, tokens)
from dpkit.validate import ParameterError


def cloud(rng, n, centre, dim=8, spread=0.1):
    return np.asarray(centre, dtype=float) + spread * rng.standard_normal((n, dim))


# ---------------------------------------------------------------- k-NN precision and recall
def test_radii_are_distances_to_the_kth_other_point():
    points = np.array([[0.0], [1.0], [3.0], [6.0]])
    assert radii(points, 1).tolist() == [1.0, 1.0, 2.0, 3.0]
    assert radii(points, 2).tolist() == [3.0, 2.0, 3.0, 5.0]
    assert radii(points, 3).tolist() == [6.0, 5.0, 3.0, 6.0]


def test_identical_sets_give_precision_and_recall_one():
    x = cloud(np.random.default_rng(0), 40, np.zeros(8))
    assert knn_precision_recall(x, x.copy()) == {"knn_precision": 1.0, "knn_recall": 1.0, "knn_k": 3}


def test_far_disjoint_clusters_give_zero():
    rng = np.random.default_rng(1)
    got = knn_precision_recall(cloud(rng, 30, np.zeros(8)), cloud(rng, 30, np.full(8, 10.0)))
    assert got["knn_precision"] == 0.0 and got["knn_recall"] == 0.0


def test_exact_small_case_one_dimension():
    # real 0, 1, 2, 10 (k = 1 radii: 1, 1, 1, 8); synthetic 0.5, 20, 21 (radii: 19.5, 1, 1)
    real, synthetic = np.array([[0.0], [1.0], [2.0], [10.0]]), np.array([[0.5], [20.0], [21.0]])
    got = knn_precision_recall(real, synthetic, k=1)
    # precision: 0.5 lies within 1 of 0 and 1; 20 and 21 lie beyond every real ball (10 + 8 = 18) -> 1/3
    # recall: the ball of 0.5 (radius 19.5) covers 0, 1, 2 and 10 -> 4/4
    assert got == {"knn_precision": pytest.approx(1 / 3), "knn_recall": 1.0, "knn_k": 1}


def test_collapsed_synthetic_set_has_precision_without_recall():
    rng = np.random.default_rng(2)
    real = cloud(rng, 200, np.zeros(8), spread=1.0)
    collapsed = cloud(rng, 50, np.zeros(8), spread=0.01)  # one typical text, repeated
    got = knn_precision_recall(real, collapsed)
    assert got["knn_precision"] == 1.0 and got["knn_recall"] < 0.05


def test_small_sets_lower_k_and_bad_shapes_are_refused():
    assert knn_precision_recall(np.zeros((5, 2)), np.ones((2, 2)))["knn_k"] == 1
    assert knn_precision_recall(np.zeros((5, 2)), np.zeros((1, 2))) == {"knn_precision": 1.0, "knn_recall": 1.0,
                                                                        "knn_k": 0}
    with pytest.raises(ParameterError, match="features"):
        knn_precision_recall(np.zeros((5, 2)), np.zeros((5, 3)))
    with pytest.raises(ParameterError, match="k"):
        knn_precision_recall(np.zeros((5, 2)), np.zeros((5, 2)), k=0)


# ---------------------------------------------------------------- real-vs-synthetic AUROC
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_auroc_is_near_half_for_two_samples_of_one_distribution(seed):
    rng = np.random.default_rng(seed)
    auroc = real_vs_synthetic_auroc(cloud(rng, 200, np.zeros(8), spread=1.0), cloud(rng, 200, np.zeros(8),
                                                                                  spread=1.0), seed=seed)
    assert abs(auroc - 0.5) < 0.1


def test_auroc_is_one_for_separable_sets_and_nan_without_folds():
    rng = np.random.default_rng(3)
    assert real_vs_synthetic_auroc(cloud(rng, 60, np.zeros(8)), cloud(rng, 60, np.full(8, 1.0))) == 1.0
    assert math.isnan(real_vs_synthetic_auroc(np.zeros((5, 2)), np.ones((1, 2))))


# ---------------------------------------------------------------- surface measures
def test_distinct_n_counts_ngrams_exactly():
    texts = ["the cat sat", "the cat ran"]
    assert distinct_n(texts, 1) == pytest.approx(4 / 6)  # the, cat, sat, ran of 6 words
    assert distinct_n(texts, 2) == pytest.approx(3 / 4)  # (the cat) twice, (cat sat), (cat ran)
    assert distinct_n(["a"], 2) != distinct_n(["a"], 2)  # no bigram at all: nan
    assert tokens("It's GOOD, isn't it?") == ["it's", "good", "isn't", "it"]


def test_short_share_counts_texts_under_three_words():
    assert short_share(["I can't", "Nytimes", "", "a real tweet here", "three words here"]) == pytest.approx(3 / 5)


def test_looping_and_duplicate_shares_count_exactly():
    loop = "NytimesHealth: NytimesHealth: NytimesHealth: NytimesHealth"   # the pair occurs 3 times
    assert pair_repeats(loop) == 3 and pair_repeats("a b a b") == 2 and pair_repeats("") == 0
    assert looping_share([loop, "a b a b", "A new study of sleep.", "x"]) == 0.25
    assert duplicate_share(["A b", "a  B", "c", "A b "]) == 0.5 and duplicate_share(["x", "y"]) == 0.0
    assert math.isnan(looping_share([])) and math.isnan(duplicate_share([]))


def test_the_duplicate_share_catches_the_fifth_sets_repeated_puzzle():
    """The finding of the fifth held-out set (results/heldout-problems): 16 arithmetic texts of private
    prediction, 12 of them copies of one famous puzzle; the measure reads it as 12 of 32 texts."""
    import json
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "results/heldout-problems/rep-0/pp/release/synthetic.jsonl"
    texts = [json.loads(line)["text"] for line in path.read_text().splitlines()]
    assert len(texts) == 32 and duplicate_share(texts) == 12 / 32
    assert looping_share(texts) == 3 / 32    # "non-toxic, non-toxic, ..." twice, "a limited number" 3 times


def test_length_report_is_zero_for_equal_lengths_and_grows_with_the_gap():
    same = length_report(["a b c", "a b"], ["x y z", "x y"])
    assert same["length_ks"] == 0.0 and same["length_wasserstein"] == 0.0 and same["words_mean"] == 2.5
    apart = length_report(["a"] * 4, ["w " * 11] * 4)
    assert apart["length_ks"] == 1.0 and apart["length_wasserstein"] == 10.0 and apart["real_words_median"] == 11


# ---------------------------------------------------------------- one report
class WordEmbedder:
    """Deterministic stand-in: bag of hashed words, unit norm."""

    def encode(self, texts):
        out = np.zeros((len(texts), 32))
        for i, text in enumerate(texts):
            for word in text.lower().split():
                out[i, sum(map(ord, word)) % 32] += 1
        out[:, -1] += 1e-3
        return out / np.linalg.norm(out, axis=1, keepdims=True)


def test_measure_texts_reports_every_measure():
    real = [f"patients with flu should rest and drink water day {i}" for i in range(20)]
    synthetic = ["Sure! Here is a health news tweet: rest", "I can't"] + real[:8]
    got = measure_texts(synthetic, real, embedder=WordEmbedder(), document_type="health news tweet")
    assert set(TEXT_METRICS) <= set(got) and got["n_synthetic"] == 10 and got["n_real"] == 20
    assert got["assistant_talk"] == pytest.approx(2 / 10) and got["short_texts"] == pytest.approx(1 / 10)
    assert 0.0 <= got["knn_precision"] <= 1.0 and 0.0 <= got["knn_recall"] <= 1.0
    assert 0.0 <= got["auroc_real_vs_synthetic"] <= 1.0
    with pytest.raises(ParameterError, match="texts"):
        measure_texts([], real, embedder=WordEmbedder())
