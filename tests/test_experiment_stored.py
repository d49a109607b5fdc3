"""Stored comparison cells: the loader refuses what does not verify, the summary gives intervals over
seeds, and the slice check of the comparison chapter fails when a stored row does not reproduce.

The cells are written by :class:`~dpkit.experiments.sweep.Sweep` through a
deterministic fake runner (no model, no data): a re-run reproduces every cell
exactly, as a seeded re-run on one machine does.
"""

from __future__ import annotations

import json
import math

import pytest

from dpkit.experiments import presets, sealing, stored
from dpkit.experiments.cell_files import cell_path
from dpkit.experiments.compare import Sizes
from dpkit.experiments.presets import Preset
from dpkit.experiments.stored import StoredResultError
from dpkit.experiments.sweep import Sweep

TINY = Preset("tiny", ("toy",), (1.0, math.inf), (0, 1, 2), Sizes(per_class=2), max_per_class=4,
              test_fraction=0.5, methods=("kps", "dpst"))


def fake_cell(dataset, method, epsilon, seed):
    """Deterministic metrics of a cell: higher at larger epsilon, a little spread over seeds."""
    base = {"real": 0.8, "kps": 0.6, "dpst": 0.55}[method] + (0.1 if math.isinf(epsilon) and method != "real" else 0)
    score = base + 0.01 * seed
    metric = {"estimate": score, "low": score - 0.05, "high": score + 0.05}
    return {"metrics": {"balanced_accuracy": metric, "macro_f1": dict(metric), "accuracy": dict(metric),
                        "majority_baseline": 0.5, "n_train": 4, "n_test": 8, "n_private_records": 8},
            "release": {} if method == "real" else {"epsilon": epsilon, "delta": 0.0, "n_texts": 4},
            "wall_s": 0.0 if method == "real" else 1.5,
            "runtime": {"generation": "fake", "private_prediction": "fake"}, "model": "fake-lm"}


@pytest.fixture
def folder(tmp_path, monkeypatch):
    monkeypatch.setitem(presets.PRESETS, "tiny", TINY)
    out = tmp_path / "tiny"
    Sweep(TINY, out, fake_cell, progress=lambda line: None).run()
    return out


def _rewrite(path, change, *, fix_digest):
    body = json.loads(path.read_text())
    change(body)
    if fix_digest:  # as the writer would: digest and seal (under this user's results key) recomputed
        body["digest"] = sealing.content_digest(body)
        body["seal"] = sealing.seal(body, sealing.results_key())
    path.write_text(json.dumps(body))


def test_the_loader_reads_every_cell_and_the_summary_has_intervals_over_seeds(folder):
    cells = stored.load_cells(folder)
    assert len(cells) == len(list(TINY.cells())) == 3 * (1 + 2 * 2)
    summary = stored.summarize(stored.rows(cells))
    kps_inf = summary[(summary.method == "kps") & (summary.epsilon == math.inf)].iloc[0]
    assert kps_inf.seeds == 3 and kps_inf.balanced_accuracy == pytest.approx(0.71)
    # Student-t over the 3 seeds (0.70, 0.71, 0.72): half-width t(0.975, 2) * 0.01 / sqrt(3)
    assert kps_inf.balanced_accuracy_high - kps_inf.balanced_accuracy == pytest.approx(4.302653 * 0.01 / 3 ** 0.5,
                                                                                       rel=1e-4)
    majority = summary[summary.method == "majority class"].iloc[0]
    assert majority.balanced_accuracy == pytest.approx(0.5)
    prov = stored.provenance(cells)
    assert prov["models"] == ["fake-lm"] and prov["presets"] == ["tiny"]


def test_a_row_edited_by_hand_is_refused_by_the_loader(folder):
    path = cell_path(folder, "toy", "kps", 1.0, 1)
    _rewrite(path, lambda b: b["metrics"]["balanced_accuracy"].update(estimate=0.99), fix_digest=False)
    with pytest.raises(StoredResultError, match=path.name):
        stored.load_cells(folder)


def test_a_cell_without_provenance_or_at_other_sizes_is_refused(folder):
    path = cell_path(folder, "toy", "dpst", 1.0, 0)
    _rewrite(path, lambda b: b["provenance"].pop("git_commit"), fix_digest=True)
    with pytest.raises(StoredResultError, match="provenance"):
        stored.load_cells(folder)
    _rewrite(path, lambda b: (b["provenance"].update(git_commit=None),
                              b["sizes"]["sizes"].update(per_class=3)), fix_digest=True)
    with pytest.raises(StoredResultError, match="sizes"):
        stored.load_cells(folder)


def test_the_slice_reproduces_the_stored_rows(folder, tmp_path):
    chosen = [("toy", "real", math.inf, 1), ("toy", "dpst", 1.0, 1)]
    again = stored.rerun_slice(TINY, chosen, run_cell=fake_cell, out=tmp_path / "slice")
    kept = {stored.cell_key(b): b for b in stored.load_cells(folder)}
    assert set(again) == set(chosen)
    assert all(stored.disagreements(kept[c], again[c]) == [] for c in chosen)
    assert sorted(p.name for p in (tmp_path / "slice").glob("*.json")) == sorted(
        cell_path(tmp_path, *c).name for c in chosen)  # only the slice ran


def test_the_slice_check_fails_when_a_stored_row_does_not_reproduce(folder, tmp_path):
    # a row altered consistently (digest and seal recomputed by the key's holder): the loader cannot tell,
    # the re-run can
    path = cell_path(folder, "toy", "dpst", 1.0, 1)
    _rewrite(path, lambda b: b["metrics"]["balanced_accuracy"].update(estimate=0.75, low=0.70, high=0.80),
             fix_digest=True)
    kept = {stored.cell_key(b): b for b in stored.load_cells(folder)}
    again = stored.rerun_slice(TINY, [("toy", "dpst", 1.0, 1)], run_cell=fake_cell, out=tmp_path / "slice")
    problems = stored.disagreements(kept[("toy", "dpst", 1.0, 1)], again[("toy", "dpst", 1.0, 1)])
    assert len(problems) == 1 and "balanced_accuracy re-ran to 0.560, outside the stored 0.750" in problems[0]


def test_the_largest_preset_with_stored_cells_is_chosen(tmp_path):
    (tmp_path / "smoke").mkdir()
    (tmp_path / "smoke" / "a.json").write_text("{}")
    assert stored.largest_stored_preset(tmp_path) == "smoke"
    (tmp_path / "medium").mkdir()
    assert stored.largest_stored_preset(tmp_path) == "smoke"  # an empty folder does not count
    (tmp_path / "medium" / "b.json").write_text("{}")
    assert stored.largest_stored_preset(tmp_path) == "medium"
    with pytest.raises(StoredResultError, match="no stored comparison cells"):
        stored.largest_stored_preset(tmp_path / "nothing")


def test_the_stored_smoke_cells_of_the_repository_verify():
    cells = stored.load_cells(stored.default_root() / "smoke")
    assert {stored.cell_key(b)[1] for b in cells} == {"real", "kps", "pp", "dpst"}


def test_the_stored_smoke_reference_cell_reproduces_through_the_local_runner(tmp_path):
    # the real-data cell runs the embedder and the classifier, not the LLM: a seeded re-run is exact here
    cells = {stored.cell_key(b): b for b in stored.load_cells(stored.default_root() / "smoke")}
    cell = ("rotten_tomatoes", "real", math.inf, 0)
    again = stored.rerun_slice(presets.PRESETS["smoke"], [cell], out=tmp_path / "slice")
    assert stored.disagreements(cells[cell], again[cell]) == []
    assert again[cell]["metrics"]["balanced_accuracy"] == cells[cell]["metrics"]["balanced_accuracy"]


def test_cells_stored_without_texts_load_and_are_marked(folder):
    frame = stored.rows(stored.load_cells(folder))
    assert not frame["has_texts"].any() and frame["assistant_talk"].isna().all()
    assert stored.first_texts(stored.load_cells(folder)).empty


def with_texts(dataset, method, epsilon, seed):
    out = fake_cell(dataset, method, epsilon, seed)
    out["text_measures"] = {"assistant_talk": 0.1 * seed, "knn_precision": 0.5}
    if method != "real":
        out["texts"] = {"texts": [f"{method} text {i}" for i in range(6)], "labels": ["a", "b"] * 3}
    return out


def test_first_texts_are_the_first_of_each_label_of_each_cell(tmp_path, monkeypatch):
    monkeypatch.setitem(presets.PRESETS, "tiny", TINY)
    Sweep(TINY, tmp_path, with_texts, progress=lambda line: None).run()
    cells = stored.load_cells(tmp_path)
    frame = stored.rows(cells)
    assert frame[frame.method != "real"]["has_texts"].all() and not frame[frame.method == "real"]["has_texts"].any()
    assert frame[frame.seed == 2]["assistant_talk"].tolist() == pytest.approx([0.2] * 5)
    first = stored.first_texts(cells, n=2)
    one = first[(first.method == "kps") & (first.epsilon == 1.0) & (first.seed == 0)]
    assert one["index"].tolist() == [0, 1, 2, 3] and one["label"].tolist() == ["a", "b", "a", "b"]
    assert len(first) == 4 * 2 * 2 * 3  # 4 texts from each of 2 methods x 2 epsilons x 3 seeds


def test_paired_difference_is_the_t_interval_of_same_seed_differences(folder):
    frame = stored.rows(stored.load_cells(folder))
    # fake_cell: kps is 0.60 + 0.01 seed at epsilon 1 and 0.70 + 0.01 seed at infinity: every pair differs by 0.1
    rise = stored.paired_difference(frame, "toy", "kps", 1.0, math.inf)
    assert rise["seeds"] == [0, 1, 2] and rise["differences"] == pytest.approx([0.1] * 3)
    assert rise["mean"] == pytest.approx(0.1) and rise["low"] == pytest.approx(0.1) and rise["rises"]
    fall = stored.paired_difference(frame, "toy", "kps", math.inf, 1.0)
    assert fall["falls"] and not fall["rises"]
    spread = frame.copy()
    spread.loc[(spread.method == "kps") & (spread.epsilon == math.inf) & (spread.seed == 1), "balanced_accuracy"] = 0.3
    noisy = stored.paired_difference(spread, "toy", "kps", 1.0, math.inf)
    # differences 0.1, -0.31, 0.1: mean -0.0367, sd 0.2367, t(0.975, 2) = 4.3027 -> half-width 0.588
    assert noisy["mean"] == pytest.approx(-0.11 / 3) and noisy["high"] - noisy["mean"] == pytest.approx(0.588, abs=1e-3)
    assert not noisy["rises"] and not noisy["falls"]
    one = stored.paired_difference(frame[frame.seed == 0], "toy", "kps", 1.0, math.inf)
    assert one["seeds"] == [0] and not one["rises"]
