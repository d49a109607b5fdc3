"""The project's one classifier and `dpkit evaluate`: metrics agree with scikit-learn, intervals, baselines."""

import json

import numpy as np
import pytest
from sklearn.metrics import accuracy_score, balanced_accuracy_score, f1_score

from dpkit.cli import main
from dpkit.evaluation import evaluate, score


class WordEmbedder:
    """Deterministic stand-in: bag of hashed words, unit norm."""

    def encode(self, texts):
        out = np.zeros((len(texts), 64))
        for i, text in enumerate(texts):
            for word in text.lower().split():
                out[i, sum(map(ord, word)) % 64] += 1
        return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-9)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_scores_match_scikit_learn(seed):
    rng = np.random.default_rng(seed)
    truth = rng.choice(["a", "b", "c"], size=80).tolist()
    predicted = rng.choice(["a", "b", "c", "d"], size=80).tolist()
    got = score(truth, predicted, n_bootstrap=200, seed=seed)
    present = sorted(set(truth))
    assert got["accuracy"]["estimate"] == pytest.approx(accuracy_score(truth, predicted))
    assert got["balanced_accuracy"]["estimate"] == pytest.approx(
        np.mean([np.mean(np.array(predicted)[np.array(truth) == c] == c) for c in present]))
    assert got["macro_f1"]["estimate"] == pytest.approx(f1_score(truth, predicted, labels=present, average="macro",
                                                                 zero_division=0))
    for metric in got.values():
        assert metric["low"] <= metric["estimate"] <= metric["high"]
    assert score(truth, predicted, n_bootstrap=200, seed=seed) == got  # the interval is reproducible


def test_balanced_accuracy_without_unseen_predictions_matches_sklearn():
    truth, predicted = ["a", "a", "a", "b"], ["a", "b", "a", "b"]
    assert score(truth, predicted, n_bootstrap=0)["balanced_accuracy"]["estimate"] == pytest.approx(
        balanced_accuracy_score(truth, predicted))


def test_evaluate_learns_a_separable_task_and_reports_the_majority_baseline():
    train = ["red apple", "green apple", "ripe apple", "blue car", "fast car", "old car", "new car"]
    labels = ["fruit"] * 3 + ["vehicle"] * 4
    out = evaluate(train, labels, ["sweet apple", "red car"], ["fruit", "vehicle"], embedder=WordEmbedder())
    assert out["accuracy"]["estimate"] == 1.0
    assert out["majority_baseline"] == 0.5 and out["majority_accuracy"] == 0.5
    assert out["n_train"] == 7 and out["n_test"] == 2


def test_one_class_training_set_gives_the_constant_predictor():
    out = evaluate(["x", "y"], ["a", "a"], ["z", "w"], ["a", "b"], embedder=WordEmbedder(), n_bootstrap=0)
    assert out["accuracy"]["estimate"] == 0.5 and out["balanced_accuracy"]["estimate"] == 0.5


def test_evaluate_command(tmp_path, capsys):
    synthetic = tmp_path / "synthetic.jsonl"
    synthetic.write_text("".join(json.dumps({"text": t, "label": y}) + "\n" for t, y in
                                 [("my parcel is late", "delivery"), ("charged twice", "billing"),
                                  ("the lamp broke", "product")]))
    assert main(["evaluate", "--synthetic", str(synthetic), "--test", "data/own_data_sample.csv",
                 "--text-column", "text", "--label-column", "label", "--real", "data/own_data_sample.csv"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert {"accuracy", "balanced_accuracy", "macro_f1", "majority_baseline", "n_synthetic", "n_test", "real"} <= set(out)
    assert out["n_synthetic"] == 3 and out["n_test"] == 60 and out["real"]["n_real"] == 60
    assert out["real"]["accuracy"]["estimate"] > out["majority_baseline"]
    assert main(["evaluate", "--synthetic", str(tmp_path / "none.jsonl"), "--test", "data/own_data_sample.csv",
                 "--text-column", "text", "--label-column", "label"]) == 2
    err = capsys.readouterr().err
    assert "--synthetic=" in err and "does not exist" in err and "--input" not in err
    assert main(["evaluate", "--synthetic", str(synthetic), "--test", str(tmp_path / "none.csv"),
                 "--text-column", "text", "--label-column", "label"]) == 2
    assert "--test=" in capsys.readouterr().err
