"""The privacy-utility table of a stored epsilon grid, and the copy of it in results/README.md."""

import math
from pathlib import Path

import pytest

from dpkit.experiments import grid_report, paired_report, stored

ROOT = Path(__file__).resolve().parents[1]
COMPARE = ROOT / "results" / "compare"


def test_the_table_agrees_with_the_paired_paragraph_on_the_stored_paired_run():
    cells = stored.load_cells(COMPARE / "paired-small")
    table = grid_report.trade_off_table(cells).splitlines()
    paragraph = paired_report.paired_paragraph(cells)
    assert table[0] == "| data set | method | ε = 1 | ε = 8 | 1 → 8, paired [95% t] |"
    for line in table[2:5]:
        _, method, low, high, step = [c.strip() for c in line.strip("|").split("|")]
        assert f"{method} {low} → {high}, {step}" in paragraph, (line, paragraph)
    assert table[5].startswith("| health_tweets | real data, same size |  | 0.809 [")
    assert grid_report.rising(cells) == []  # the paragraph's verdict: no method rises


def test_a_difference_whose_interval_lies_above_zero_is_marked_rises():
    cells = stored.load_cells(COMPARE / "paired-small")
    frame = stored.rows(cells)
    # the same cells with every epsilon-8 DP-KPS score raised by 0.3: each seed's difference grows by 0.3
    raised = []
    for body in cells:
        dataset, method, epsilon, seed = stored.cell_key(body)
        if method == "kps" and epsilon == 8.0:
            body = {**body, "metrics": {**body["metrics"], "balanced_accuracy": {
                **body["metrics"]["balanced_accuracy"],
                "estimate": body["metrics"]["balanced_accuracy"]["estimate"] + 0.3}}}
        raised.append(body)
    before = stored.paired_difference(frame, "health_tweets", "kps", 1.0, 8.0)
    assert grid_report.rising(raised) == [("health_tweets", "kps", 8.0)]
    line = next(l for l in grid_report.trade_off_table(raised).splitlines() if "| DP-KPS |" in l)
    assert line.endswith(" rises |")
    mean, low, high = (float(x) for x in line.split("|")[-2].replace("[", "").replace("]", "").replace(",", "")
                       .split()[:3])
    assert (mean, low, high) == pytest.approx((before["mean"] + 0.3, before["low"] + 0.3, before["high"] + 0.3),
                                              abs=6e-4)


def test_one_epsilon_is_not_a_grid():
    cells = stored.load_cells(COMPARE / "holdout-general")
    with pytest.raises(ValueError, match="two epsilons"):
        grid_report.trade_off_table(cells)


def test_the_readme_quotes_the_stored_grid():
    folder = COMPARE / "epsilon-grid"
    if not folder.exists():
        pytest.skip("the epsilon-grid preset is not stored")
    cells = stored.load_cells(folder)
    assert {stored.cell_key(c)[2] for c in cells} == {1.0, 4.0, 8.0, math.inf}
    assert len({stored.cell_key(c)[3] for c in cells}) == 5
    readme = (ROOT / "results" / "README.md").read_text()
    assert grid_report.trade_off_table(cells) in readme
