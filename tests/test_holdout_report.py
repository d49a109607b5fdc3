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


# each stored preset's table is quoted in results/README.md; the check pins what the table must show
README_TABLES = [
    ("holdout", None),
    ("holdout-questions", lambda t: t.splitlines()[2].startswith("| online_questions (held out) | real data |")),
    ("holdout-after", None),
    ("holdout-situations", lambda t: t.splitlines()[2].startswith("| everyday_situations (held out) | real data |")),
    ("holdout-kps", lambda t: "| DP-KPS | 8 | 5 |" in t),
    ("holdout-problems", lambda t: t.splitlines()[2].startswith("| everyday_problems (held out) | real data |")),
    ("holdout-situations-topic", lambda t: "| DP-ST | 8 | 5 |" in t and "DP-KPS" not in t),
    ("holdout-topic", lambda t: "| DP-ST | 8 | 5 |" in t and "DP-KPS" not in t),
    ("infinity-topic", lambda t: "| DP-ST | ∞ | 5 |" in t and "DP-KPS" not in t),
    ("holdout-general", lambda t: t.splitlines()[2].startswith("| general_questions (held out) | real data |")),
    ("holdout-passages", lambda t: t.splitlines()[2].startswith("| short_passages (held out) | real data |")),
]


@pytest.mark.parametrize("preset,shows", README_TABLES, ids=[preset for preset, _ in README_TABLES])
def test_the_readme_quotes_each_stored_holdout_table(preset, shows):
    if not (ROOT / preset).exists():
        pytest.skip(f"the {preset} preset is not stored")
    table = holdout_table(stored.load_cells(ROOT / preset))
    if shows is not None:
        assert shows(table), table.splitlines()[:3]
    assert table in (ROOT.parent / "README.md").read_text()
