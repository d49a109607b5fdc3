"""Every number the "stored full run" section of results/README.md states is recomputed from the stored cells.

The page quotes means over seeds with 95% Student-t intervals, ratios to real data, margins over
the majority class, a seed range, and paired same-seed differences. Each is recomputed here from
``results/compare/full`` with the library's own functions and compared, as text, with the page:
an edited number, or a stored cell that changes, fails the test.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

from dpkit.experiments import stored

ROOT = Path(__file__).resolve().parents[1]
HEALTH, ROTTEN = "health_tweets", "rotten_tomatoes"


@pytest.fixture(scope="module")
def full():
    cells = stored.load_cells(ROOT / "results" / "compare" / "full")
    frame = stored.rows(cells)
    return frame, stored.summarize(frame)


@pytest.fixture(scope="module")
def section():
    text = (ROOT / "results" / "README.md").read_text(encoding="utf-8")
    start = text.index("**The stored full run.**")
    return text[start:text.index("\n## ", start)]


def row(summary, dataset, method, epsilon=math.inf):
    part = summary[(summary.dataset == dataset) & (summary.method == method) & (summary.epsilon == epsilon)]
    assert len(part) == 1, (dataset, method, epsilon)
    return part.iloc[0]


def interval(r, metric="balanced_accuracy"):
    return f"{r[metric]:.3f} [{r[metric + '_low']:.3f}, {r[metric + '_high']:.3f}]"


def test_the_table_is_the_stored_means_and_intervals(full, section):
    _, summary = full
    names = {"DP-KPS": "kps", "private prediction": "pp", "DP-ST": "dpst"}
    for label, method in names.items():
        line = next(l for l in section.splitlines() if l.startswith(f"| {label} |"))
        expected = [interval(row(summary, d, method, e)) for d in (HEALTH, ROTTEN) for e in (4.0, math.inf)]
        assert [c.strip() for c in line.strip("|").split("|")[1:]] == expected, label
    line = next(l for l in section.splitlines() if l.startswith("| real data, same size |"))
    assert interval(row(summary, HEALTH, "real")) in line and interval(row(summary, ROTTEN, "real")) in line
    assert {round(float(row(summary, d, "majority class").balanced_accuracy), 3) for d in (HEALTH, ROTTEN)} == {0.5}
    assert "majority class is 0.500 on both data sets" in section
    assert f"means over {int(row(summary, HEALTH, 'kps').seeds)} seeds" in section


def test_the_ratios_margins_and_seed_range(full, section):
    frame, summary = full
    section = " ".join(section.split())  # prose: line breaks are spaces
    real = {d: row(summary, d, "real").balanced_accuracy for d in (HEALTH, ROTTEN)}
    ratio = {(d, m): row(summary, d, m).balanced_accuracy / real[d] for d in (HEALTH, ROTTEN) for m in ("kps", "pp",
                                                                                                        "dpst")}
    assert f"DP-KPS reaches {ratio[HEALTH, 'kps']:.2f}" in section
    assert f"DP-ST {ratio[HEALTH, 'dpst']:.2f} of real data" in section
    assert f"private prediction reaches {ratio[HEALTH, 'pp']:.2f} there ({ratio[ROTTEN, 'pp']:.2f} on Rotten" in section
    margin = {m: row(summary, HEALTH, m, 4.0).balanced_accuracy - 0.5 for m in ("kps", "pp", "dpst")}
    assert f"DP-KPS beats the majority class by {margin['kps']:.3f}" in section
    assert f"prediction by {margin['pp']:.3f} (DP-ST by {margin['dpst']:.3f})" in section
    seeds = frame[(frame.dataset == HEALTH) & (frame.method == "kps") & (frame.epsilon == 4.0)].balanced_accuracy
    assert f"range from {seeds.min():.3f} to {seeds.max():.3f}" in section


def test_the_rise_with_epsilon_by_intervals_and_by_same_seed_pairs(full, section):
    frame, summary = full
    section = " ".join(section.split())  # prose: line breaks are spaces
    assert f"({interval(row(summary, HEALTH, 'dpst', 1.0))} to {interval(row(summary, HEALTH, 'dpst'))})" in section
    means = ", ".join(f"{row(summary, HEALTH, 'kps', e).balanced_accuracy:.3f}" for e in (1.0, 4.0, math.inf))
    assert f"({means})" in section
    rises_by_intervals = [(d, m) for d in (HEALTH, ROTTEN) for m in ("kps", "pp", "dpst")
                          if row(summary, d, m).balanced_accuracy_low > row(summary, d, m, 1.0).balanced_accuracy_high]
    assert rises_by_intervals == [(HEALTH, "dpst")] and "**Missed for 5 of 6" in section
    pairs = {(d, m): stored.paired_difference(frame, d, m, 1.0, math.inf) for d in (HEALTH, ROTTEN)
             for m in ("kps", "pp", "dpst")}
    assert {k for k, p in pairs.items() if p["rises"]} == {(HEALTH, "dpst"), (HEALTH, "kps")}
    assert not any(p["falls"] for p in pairs.values())
    assert all(p["low"] <= 0 <= p["high"] for k, p in pairs.items() if k not in {(HEALTH, "dpst"), (HEALTH, "kps")})
    for method, label in (("dpst", "DP-ST on the health tweets rises by"), ("kps", "DP-KPS by")):
        p = pairs[HEALTH, method]
        assert f"{label} {p['mean']:+.3f} [{p['low']:+.3f}, {p['high']:+.3f}]" in section, method
    assert "the other four paired intervals include 0" in section
    assert re.search(r"a t interval over the 3 differences", section) and len(pairs[HEALTH, "kps"]["seeds"]) == 3


def test_the_paired_run_paragraph_is_recomputed_from_its_stored_cells():
    from dpkit.experiments.paired_report import paired_paragraph

    cells = stored.load_cells(ROOT / "results" / "compare" / "paired-small")
    assert len({stored.cell_key(b)[3] for b in cells}) >= 5  # the preset's 5 seeds, all stored
    readme = " ".join((ROOT / "results" / "README.md").read_text(encoding="utf-8").split())
    assert paired_paragraph(cells) in readme
