"""The references that read no record: the label-only generator, zero-shot, keyword rules, and gains over them.

Fake backends record what the model is sent (the document type and the label only, never a record);
the stored measurement of every held-out set (``results/heldout-baselines``, made by
``benchmarks/heldout_baselines.py``) is checked against the independent review's numbers
(``findings/results-4.md`` §3.2) where both measured the same thing.
"""

from __future__ import annotations

import csv
import json
import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dpkit.backends.base import Backend
from dpkit.experiments.compare import t_interval
from dpkit.experiments.label_only import (KEYWORD_RULES, REFERENCE, gain_over_reference, gains_over_label_only,
                                          label_only_prompts, label_only_texts)
from dpkit.privacy.marks import Public
from dpkit.validate import ParameterError

ROOT = Path(__file__).resolve().parents[1]
STORED = ROOT / "results" / "heldout-baselines"


class _Echo(Backend):
    """Writes a text that names its label's word, so a classifier can learn the labels from the prompt alone."""

    name = "echo"
    remote = False

    def __init__(self):
        super().__init__("echo-model")
        self.chats, self.seeds = [], []

    def _generate(self, chats, params):
        self.chats += chats
        self.seeds.append(params.seed)
        out = []
        for chat in chats:
            user = next(str(m["content"]) for m in chat if m["role"] == "user")
            label = re.search(r"Label: (.*)\.$", user).group(1)
            out.append(f"Some words about {label.lower()} number {params.seed}")
        return out

    def describe(self):
        return {"backend": "echo", "model": "echo-model"}


def test_the_label_only_generator_is_told_the_document_type_and_label_only():
    backend = _Echo()
    texts, labels = label_only_texts(backend, "short passage", ["news", "policy"], 3, seed=2)
    assert labels == [0, 0, 0, 1, 1, 1] and len(texts) == 6
    users = [str(m["content"]) for chat in backend.chats for m in chat if m["role"] == "user"]
    assert set(users) == {"Write a short passage with Label: News.", "Write a short passage with Label: Policy."}
    assert backend.seeds == [2000, 2001, 2002]  # one seed per text index: the same prompt gives different texts
    assert texts[0] != texts[1] and "news" in texts[0] and "policy" in texts[3]
    assert all(isinstance(p, Public) for p in label_only_prompts("short passage", ["news"]))


def test_the_label_only_generator_takes_a_description_in_place_of_the_name():
    backend = _Echo()
    label_only_texts(backend, "SMS text message", ["a personal message between friends", "an advertisement"], 1)
    users = {str(m["content"]) for chat in backend.chats for m in chat if m["role"] == "user"}
    assert "Write a SMS text message with Label: A personal message between friends." in users


def test_bad_sizes_are_refused():
    with pytest.raises(ParameterError, match="per_class"):
        label_only_texts(_Echo(), "short text", ["a"], 0)
    with pytest.raises(ParameterError, match="label_texts"):
        label_only_texts(_Echo(), "short text", [], 1)


def test_the_gain_is_paired_by_seed():
    method = {0: 0.80, 1: 0.70, 2: 0.90, 5: 0.1}
    reference = {0: 0.60, 1: 0.65, 2: 0.62}
    out = gain_over_reference(method, reference)
    mean, low, high = t_interval([0.20, 0.05, 0.28])
    assert out["seeds"] == 3 and out["gain"] == pytest.approx(mean) and (out["low"], out["high"]) == \
        pytest.approx((low, high))
    with pytest.raises(ParameterError, match="share a seed"):
        gain_over_reference({0: 0.5}, {1: 0.5})


def test_gains_over_label_only_per_data_set_method_and_epsilon():
    rows = [("a", m, e, s, v) for m, e, vs in (("kps", 8.0, (0.9, 0.8, 0.85)), ("pp", 8.0, (0.6, 0.55, 0.5)),
                                              (REFERENCE, math.inf, (0.6, 0.62, 0.58)),
                                              ("real", math.inf, (0.95, 0.95, 0.96)))
            for s, v in enumerate(vs)]
    frame = pd.DataFrame(rows, columns=["dataset", "method", "epsilon", "seed", "balanced_accuracy"])
    gains = gains_over_label_only(frame).set_index("method")
    assert sorted(gains.index) == ["kps", "pp"]
    assert gains.loc["kps", "gain"] == pytest.approx(0.25) and gains.loc["kps", "above_zero"]
    assert not gains.loc["pp", "above_zero"]


def test_label_only_cells_are_one_per_data_set_and_seed():
    from dpkit.experiments.presets import LABEL_ONLY, REAL, get_preset, parse_methods
    from dataclasses import replace

    assert parse_methods("kps,label_only") == ("kps", LABEL_ONLY)
    preset = replace(get_preset("smoke"), methods=("kps", LABEL_ONLY), epsilons=(1.0, 8.0), seeds=(0, 1))
    cells = list(preset.cells())
    assert [c for c in cells if c[1] == LABEL_ONLY] == [(d, LABEL_ONLY, math.inf, s) for s in (0, 1)
                                                        for d in preset.datasets]
    assert sum(c[1] == "kps" for c in cells) == 2 * 2 * len(preset.datasets)
    assert sum(c[1] == REAL for c in cells) == 2 * len(preset.datasets)


def test_a_label_only_cell_reads_no_record_and_is_scored_as_a_release(monkeypatch):
    import dpkit.backends
    from dataclasses import replace

    from dpkit.experiments.cells import LocalCells
    from dpkit.experiments.presets import LABEL_ONLY, get_preset

    backend = _Echo()
    monkeypatch.setattr(dpkit.backends, "get_backend", lambda *a, **k: backend)
    cells = LocalCells(replace(get_preset("smoke"), methods=(LABEL_ONLY,)))
    out = cells("rotten_tomatoes", LABEL_ONLY, math.inf, 0)
    records = cells._dataset("rotten_tomatoes")[0]
    sent = " ".join(str(m["content"]) for chat in backend.chats for m in chat)
    assert not any(t in sent for t in records.texts if len(t) > 20)
    assert out["release"]["n_records_read"] == 0 and out["release"]["reads_no_record"]
    assert out["release"]["n_texts"] == cells.preset.sizes.per_class * len(records.label_set)
    assert 0.0 <= out["metrics"]["balanced_accuracy"]["estimate"] <= 1.0 and out["texts"]["texts"]


def test_evaluate_reference_label_only_reports_the_gain(tmp_path, monkeypatch, capsys):
    import dpkit.backends
    from dpkit.cli import main

    backend = _Echo()
    monkeypatch.setattr(dpkit.backends, "get_backend", lambda *a, **k: backend)
    synthetic = tmp_path / "synthetic.jsonl"
    rows = [{"label": y, "text": f"a text about {y} number {i}"} for y in ("ham", "spam") for i in range(4)]
    synthetic.write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "config.json").write_text(json.dumps({"labels": ["ham", "spam"], "label_descriptions": {
        "ham": "a personal message", "spam": "an advertisement"}, "method_config": {"document_type": "SMS"}}))
    test = tmp_path / "test.csv"
    with test.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["text", "label"])
        for i in range(6):
            writer.writerow([f"hey are we still on for dinner {i}", "ham"])
            writer.writerow([f"win a free phone now, call {i}", "spam"])
    code = main(["evaluate", "--synthetic", str(synthetic), "--test", str(test), "--text-column", "text",
                 "--label-column", "label", "--json", "--reference", "label-only", "--reference-draws", "2"])
    assert code == 0
    result = json.loads(capsys.readouterr().out)
    ref = result["reference"]
    assert ref["per_class"] == 4 and len(ref["draws"]) == 2 and ref["document_type"] == "SMS"
    assert ref["label_texts"] == {"ham": "a personal message", "spam": "an advertisement"}
    users = {str(m["content"]) for chat in backend.chats for m in chat if m["role"] == "user"}
    assert users == {"Write a SMS with Label: A personal message.", "Write a SMS with Label: An advertisement."}
    release = result["balanced_accuracy"]["estimate"]
    assert ref["gain"]["estimate"] == pytest.approx(release - np.mean(ref["draws"]))
    assert ref["balanced_accuracy"]["estimate"] == pytest.approx(np.mean(ref["draws"]))
    # --reference-draws alone, or 0 draws: refused by name before anything is read (the bad-input sweep, 29 Nov)
    base = ["evaluate", "--synthetic", str(synthetic), "--test", str(test), "--text-column", "text",
            "--label-column", "label", "--json"]
    for extra in (["--reference-draws", "0"], ["--reference-draws", "2"], ["--reference", "label-only",
                                                                           "--reference-draws", "0"]):
        assert main(base + extra) == 2
        assert "--reference-draws" in capsys.readouterr().err


def test_every_held_out_set_has_a_keyword_rule():
    holdout = (ROOT / "data" / "HOLDOUT.md").read_text()
    sets = ("medical", "commons_speeches", "online_questions", "everyday_situations", "everyday_problems",
            "general_questions", "short_passages", "question_collections")
    assert set(KEYWORD_RULES) == set(sets) and all(f"`{s}`" in holdout for s in sets)
    assert KEYWORD_RULES["general_questions"].predict(["Where is food likely to stay dry?", "is blood type o a donor"]) \
        == ["everyday", "encyclopedic"]


# ------------------------------------------------------------------ the stored measurement of every held-out set
#: The review's numbers (findings/results-4.md §3.2) for what both measured the same way.
REVIEW_RULE = {"commons_speeches": 0.466, "everyday_problems": 0.907, "general_questions": 0.994,
               "short_passages": 0.914}
REVIEW_ZERO_SHOT = {"short_passages": (0.665, 0.614), "general_questions": (0.535, 0.606),
                    "everyday_problems": (0.945, 0.834), "everyday_situations": (0.659, 0.606),
                    "online_questions": (0.996, 0.988), "commons_speeches": (0.535, 0.531)}
REVIEW_REAL_8 = {"short_passages": 0.974, "general_questions": 0.914, "everyday_problems": 0.973,
                 "everyday_situations": 0.969, "online_questions": 0.989, "commons_speeches": 0.512}


def _summary() -> dict:
    return json.loads((STORED / "summary.json").read_text())


def test_every_held_out_set_is_measured_with_provenance():
    rows = {r["set"]: r for r in _summary()["sets"]}
    assert set(rows) == set(KEYWORD_RULES)
    runs = json.loads((STORED / "provenance.json").read_text())["runs"]
    assert {s for run in runs for s in run["sets"]} == set(rows)
    assert all(run["git_commit"] and run["model"] and not run["smoke"] for run in runs)
    for name, row in rows.items():
        lo = row["label_only"]
        assert len(lo["draws"]) == 3 and lo["per_class"] == 16
        assert lo["mean"] == pytest.approx(float(np.mean(lo["draws"])), abs=1e-4)
        for d in range(3):  # every text is stored: 16 per label per draw
            lines = (STORED / "label_only" / f"{name}__draw-{d}.jsonl").read_text().splitlines()
            assert len(lines) == 16 * len(row["labels"])


def test_the_stored_references_agree_with_the_review_where_both_measured_the_same():
    rows = {r["set"]: r for r in _summary()["sets"]}
    for name, value in REVIEW_RULE.items():
        assert rows[name]["keyword_rule"]["estimate"] == pytest.approx(value, abs=0.001), name
    for name, (label, document) in REVIEW_ZERO_SHOT.items():
        assert rows[name]["zero_shot_label"]["estimate"] == pytest.approx(label, abs=0.001), name
        assert rows[name]["zero_shot_document"]["estimate"] == pytest.approx(document, abs=0.001), name
    for name, value in REVIEW_REAL_8.items():  # 10 draws of 8 per label each: the draws differ
        assert rows[name]["real_8_per_label"]["mean"] == pytest.approx(value, abs=0.01), name


def test_holdout_md_gives_the_stored_references_and_no_overreaching_claim():
    from dpkit.experiments.label_only import baselines_table, gains_table, release_gains

    text = (ROOT / "data" / "HOLDOUT.md").read_text()
    summary = _summary()
    assert baselines_table(summary) in text
    gains = release_gains(ROOT / "results", summary)
    assert {g["set"] for g in gains} == {"online_questions", "everyday_situations", "everyday_problems",
                                         "general_questions", "short_passages", "question_collections"}
    assert gains_table(gains) in text
    for claim in ("Every method met the accuracy target", "says whether its texts carry the topic"):
        assert claim not in " ".join(text.split())


def test_no_stored_result_claims_more_than_its_gain_over_the_label_only_generator():
    """The review's overreaching phrasings are gone from the results page and the comparison chapter: a score
    that only the label names explain is not "well above" a target, and a target met below a keyword rule
    is not met "with room to spare"."""
    pages = [(ROOT / "results" / "README.md").read_text(), (ROOT / "README.md").read_text(),
             (ROOT / "notebooks" / "compare_methods.ipynb").read_text(), (ROOT / "data" / "HOLDOUT.md").read_text()]
    for text in pages:
        flat = " ".join(text.replace("\\n", " ").split())
        for claim in ("room to spare", "well above the 0.65", "Every method met the accuracy target"):
            assert claim not in flat, claim


def test_a_release_is_measured_against_the_label_only_reference_nearest_its_size():
    from dpkit.experiments.label_only import matching_reference

    default = {"per_class": 16, "draws": [0.5, 0.6, 0.7], "mean": 0.6}
    more_draws = {"per_class": 16, "draws": [0.5] * 10, "mean": 0.5}
    large = {"per_class": 100, "draws": [0.8] * 5, "mean": 0.8}
    assert matching_reference(default, [more_draws, large], 16) is more_draws   # same size: the most draws
    assert matching_reference(default, [more_draws, large], 100) is large
    assert matching_reference(default, [more_draws, large], 500) is large       # the nearest size
    assert matching_reference(default, [more_draws, large], None) is default    # size unknown: the default
    assert matching_reference(default, [], 500) is default


def test_the_stored_gains_use_the_reference_of_each_release_size():
    from dpkit.experiments.label_only import release_gains

    gains = release_gains(ROOT / "results", _summary())
    sizes = {(g["set"], g["method"]): (g["per_class"], g["label_only_size"][0]) for g in gains}
    assert sizes[("question_collections", "pp")] == (16, 16)
    for (name, method), (released, reference) in sizes.items():
        if name != "question_collections":
            assert reference == 16, (name, method)   # only the eighth set has references of other sizes
