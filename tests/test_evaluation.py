"""The project's one classifier and `dpkit evaluate`: metrics agree with scikit-learn, intervals, baselines."""

import json
import re

import numpy as np
import pytest
from sklearn.metrics import accuracy_score, balanced_accuracy_score, f1_score

from dpkit.cli import main
from dpkit.evaluation import evaluate, score
from dpkit.experiments.evaluate_release import format_report
from dpkit.textmetrics import TEXT_METRICS


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
                 "--text-column", "text", "--label-column", "label", "--real", "data/own_data_sample.csv",
                 "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert {"accuracy", "balanced_accuracy", "macro_f1", "majority_baseline", "n_synthetic", "n_test", "real",
            "text_measures"} <= set(out)
    assert out["n_synthetic"] == 3 and out["n_test"] == 60 and out["real"]["n_real"] == 60
    assert out["real"]["accuracy"]["estimate"] > out["majority_baseline"]
    measures, reference = out["text_measures"], out["real"]["text_measures"]
    assert set(TEXT_METRICS) <= set(measures) and measures["n_synthetic"] == 3 and measures["n_real"] == 60
    assert measures["assistant_talk"] == 0.0 and measures["short_texts"] == pytest.approx(1 / 3)  # "charged twice"
    # the real training texts ARE the test texts here: the same set, so k-NN precision = recall = 1
    assert reference["knn_precision"] == 1.0 and reference["knn_recall"] == 1.0 and reference["length_ks"] == 0.0
    assert out["document_type"] is None
    assert main(["evaluate", "--synthetic", str(tmp_path / "none.jsonl"), "--test", "data/own_data_sample.csv",
                 "--text-column", "text", "--label-column", "label"]) == 2
    err = capsys.readouterr().err
    assert "--synthetic=" in err and "does not exist" in err and "--input" not in err
    assert main(["evaluate", "--synthetic", str(synthetic), "--test", str(tmp_path / "none.csv"),
                 "--text-column", "text", "--label-column", "label"]) == 2
    assert "--test=" in capsys.readouterr().err


def test_evaluate_text_report_shows_the_scores_and_the_text_measures(tmp_path, capsys):
    release = tmp_path / "release"
    release.mkdir()
    (release / "config.json").write_text(json.dumps({"document_type": "customer message"}))
    rows = [("Sure! Here is a customer message: my parcel is late", "delivery"), ("I can't", "billing"),
            ("the lamp broke after a day", "product"), ("Customer message about billing", "billing")]
    (release / "synthetic.jsonl").write_text("".join(json.dumps({"text": t, "label": y}) + "\n" for t, y in rows))
    assert main(["evaluate", "--synthetic", str(release / "synthetic.jsonl"), "--test", "data/own_data_sample.csv",
                 "--text-column", "text", "--label-column", "label"]) == 0
    text = capsys.readouterr().out
    assert "balanced accuracy" in text and "document type: customer message" in text
    assert re.search(r"assistant talk \(public pattern list\) +75\.0%", text)  # preamble, refusal, type echo
    assert re.search(r"texts under 3 words +25\.0%", text)
    assert "AUROC real-vs-synthetic" in text and "k-NN precision" in text


def test_format_report_matches_the_json_numbers():
    metric = {"estimate": 0.75, "low": 0.5, "high": 0.9}
    measures = {key: 0.25 for key in TEXT_METRICS}
    measures["knn_k"] = 3
    result = {"n_synthetic": 4, "n_test": 8, "balanced_accuracy": metric, "macro_f1": metric, "accuracy": metric,
              "majority_baseline": 0.5, "text_measures": measures, "document_type": None}
    text = format_report(result)
    assert "0.750 [0.500, 0.900]" in text and "k = 3" in text and "25.0%" in text and "real (--real)" not in text
