"""The epsilon-infinity before/after table is computed from stored cells, and refuses edited ones."""

import json
import shutil
from pathlib import Path

import pytest

from dpkit.experiments import stored
from dpkit.experiments.voice_report import load_before, over_ceiling, voice_table

ROOT = Path(__file__).resolve().parents[1] / "results" / "compare"
BEFORE, AFTER = ROOT.parent / "before-voice" / "infinity", ROOT / "infinity"
pytestmark = pytest.mark.skipif(not (BEFORE.exists() and AFTER.exists()), reason="the infinity runs are not stored")


def test_each_row_is_the_mean_over_seeds_of_both_sides():
    before, after = load_before(BEFORE), stored.load_cells(AFTER)
    table = voice_table(before, after).splitlines()
    assert len(table) == 2 + 6  # two data sets, three methods
    old, new = stored.rows(before), stored.rows(after)
    for method, label in (("kps", "DP-KPS"), ("pp", "private prediction"), ("dpst", "DP-ST")):
        a = old[(old.dataset == "health_tweets") & (old.method == method)]
        b = new[(new.dataset == "health_tweets") & (new.method == method)]
        row = next(line for line in table if line.startswith(f"| health_tweets | {label} |"))
        assert f"| {len(a)} → {len(b)} |" in row
        assert f"| {a.assistant_talk.mean():.2f} → {b.assistant_talk.mean():.2f} |" in row
        assert f"| {a.auroc_real_vs_synthetic.mean():.2f} → {b.auroc_real_vs_synthetic.mean():.2f} |" in row


def test_the_before_cells_come_from_the_commit_before_the_voice_rules():
    for body in load_before(BEFORE):
        assert body["provenance"]["git_commit"] == "9f2858c"
        assert body["provenance"]["text_measures_commit"]


def test_an_edited_before_cell_is_refused(tmp_path):
    folder = tmp_path / "before"
    shutil.copytree(BEFORE, folder)
    path = sorted(folder.glob("*__kps__*.json"))[0]
    body = json.loads(path.read_text())
    body["text_measures"]["assistant_talk"] = 0.0
    path.write_text(json.dumps(body))
    with pytest.raises(stored.StoredResultError, match=path.name):
        load_before(folder)


def test_over_ceiling_names_what_exceeds_it():
    after = stored.load_cells(AFTER)
    assert over_ceiling(after, ceiling=-1.0)  # every method is above a negative ceiling
    frame = stored.rows(after)
    worst = frame[frame.method != stored.REAL].groupby(["dataset", "method"]).assistant_talk.mean().max()
    assert over_ceiling(after, ceiling=worst) == []


def test_the_readme_quotes_the_stored_table():
    table = voice_table(load_before(BEFORE), stored.load_cells(AFTER))
    assert table in (ROOT.parents[1] / "results" / "README.md").read_text()


def test_the_readme_quotes_the_held_out_before_and_after():
    before, after = ROOT.parent / "before-voice" / "holdout-situations", ROOT / "holdout-situations"
    if not (before.exists() and after.exists()):
        pytest.skip("the held-out situations before and after the voice rules are not stored")
    for body in load_before(before):
        assert body["provenance"]["git_commit"] == "9f2858c" and body["cell"]["dataset"] == "everyday_situations"
    table = voice_table(load_before(before), stored.load_cells(after))
    assert len(table.splitlines()) == 2 + 3
    assert table in (ROOT.parents[1] / "results" / "README.md").read_text()
