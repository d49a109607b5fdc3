"""The tightness study: its rows, its stored results and what the chapter says about them."""

import json
from pathlib import Path

import pytest

from dpkit.audit.release import tightness

STORED = Path("results/audit-release-tightness")


def test_a_small_study_has_one_row_per_audit_and_analysis():
    rows = tightness.randomized_response_rows(runs=3, epsilons=(2.0,), canaries=(500,))
    assert len(rows) == 3 * 3
    summary = tightness.summarise(rows)
    assert {r["analysis"] for r in summary} == {"steinke", "fdp", "gdp"}
    assert all(0 <= r["ratio_median"] <= 1 and r["runs"] == 3 for r in summary)


def test_stored_study_has_provenance_and_every_cell():
    summary = json.loads((STORED / "summary.json").read_text())
    provenance = json.loads((STORED / "provenance.json").read_text())
    assert provenance["command"].startswith("python -m dpkit.audit.release.tightness") and provenance["commit"]
    cells = {(r["generator"], r["canaries"], r["analysis"]) for r in summary}
    for eps in tightness.EPSILONS:
        for m in tightness.CANARIES:
            for analysis in ("steinke", "fdp", "gdp"):
                assert (f"randomized response eps={eps:g}", m, analysis) in cells


def _cell(generator, m, analysis):
    summary = json.loads((STORED / "summary.json").read_text())
    return next(r for r in summary if (r["generator"], r["canaries"], r["analysis"]) == (generator, m, analysis))


@pytest.mark.parametrize("eps", tightness.EPSILONS)
def test_stored_bounds_never_exceed_the_truth_and_more_canaries_help(eps):
    for analysis in ("steinke", "fdp", "gdp"):
        small, large = (_cell(f"randomized response eps={eps:g}", m, analysis) for m in (1000, 10_000))
        assert small["ratio_median"] <= 1 and large["ratio_median"] <= 1
        assert large["bound_median"] >= small["bound_median"] - 0.05
    assert _cell(f"randomized response eps={eps:g}", 10_000, "steinke")["ratio_median"] > 0.8


def test_stored_text_rows_refute_the_echo_and_never_the_input_independent_generator():
    for design in ("echo canaries", "rare-word canaries"):
        assert _cell(f"echo 3 words of 3%, {design}", 4000, "steinke")["refuted_at_1"] >= 9
        assert _cell(f"input-independent, {design}", 4000, "steinke")["refuted_at_1"] == 0
