"""The held-out table is computed from stored cells: each number is the cells' own mean over seeds."""

from pathlib import Path

import pytest

from dpkit.experiments import stored
from dpkit.experiments.holdout_report import HELD_OUT, holdout_table

ROOT = Path(__file__).resolve().parents[1] / "results" / "compare"


def test_the_table_of_a_stored_run_reads_its_cells():
    cells = stored.load_cells(ROOT / "paired-small")
    table = holdout_table(cells).splitlines()
    frame = stored.rows(cells)
    kps8 = frame[(frame.method == "kps") & (frame.epsilon == 8.0)]
    row = next(line for line in table if "| DP-KPS | 8 |" in line)
    assert f"| {len(kps8)} | {kps8.balanced_accuracy.mean():.3f} [" in row
    assert f"| {kps8.assistant_talk.mean():.2f} |" in row
    assert sum("(tuned on)" in line for line in table) == 8 and not any("(held out)" in line for line in table)


def test_held_out_data_sets_come_first_and_are_marked():
    cells = stored.load_cells(ROOT / "paired-small")
    for body in cells[: len(cells) // 2]:
        body["cell"]["dataset"] = HELD_OUT[0]
    lines = holdout_table(cells).splitlines()[2:]
    assert lines[0].startswith(f"| {HELD_OUT[0]} (held out) |")
    assert lines[-1].startswith("| health_tweets (tuned on) |")


@pytest.mark.skipif(not (ROOT / "holdout").exists(), reason="the holdout preset is not stored")
def test_the_readme_quotes_the_stored_holdout_table():
    table = holdout_table(stored.load_cells(ROOT / "holdout"))
    readme = (ROOT.parents[1] / "README.md").read_text()
    assert table in readme


@pytest.mark.skipif(not (ROOT / "holdout-questions").exists(), reason="the holdout-questions preset is not stored")
def test_the_readme_quotes_the_stored_held_out_questions_table():
    table = holdout_table(stored.load_cells(ROOT / "holdout-questions"))
    assert table.splitlines()[2].startswith("| online_questions (held out) | real data |")
    assert table in (ROOT.parents[1] / "README.md").read_text()


@pytest.mark.skipif(not (ROOT / "holdout-after").exists(), reason="the tuning sets' rerun is not stored")
def test_the_readme_quotes_the_tuning_sets_after_the_last_round():
    table = holdout_table(stored.load_cells(ROOT / "holdout-after"))
    assert table in (ROOT.parents[1] / "README.md").read_text()


@pytest.mark.skipif(not (ROOT / "holdout-situations").exists(), reason="the holdout-situations preset is not stored")
def test_the_readme_quotes_the_held_out_situations():
    table = holdout_table(stored.load_cells(ROOT / "holdout-situations"))
    assert table.splitlines()[2].startswith("| everyday_situations (held out) | real data |")
    assert table in (ROOT.parents[1] / "README.md").read_text()


@pytest.mark.skipif(not (ROOT / "holdout-kps").exists(), reason="DP-KPS's new defaults on the tuning sets are not stored")
def test_the_readme_quotes_dp_kps_new_defaults_on_the_tuning_sets():
    table = holdout_table(stored.load_cells(ROOT / "holdout-kps"))
    assert "| DP-KPS | 8 | 5 |" in table
    assert table in (ROOT.parents[1] / "README.md").read_text()
