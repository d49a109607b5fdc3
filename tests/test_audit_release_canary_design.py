"""The stored canary-design study (results/audit-release-canary-design): it parses, every bound recomputes from
its stored counts, and no correct method is refuted at its claim. Reads JSON only (no generation).

The study (``python -m dpkit.audit.release.canary_design``) audits DP-KPS, private prediction and DP-ST through
``dpkit audit release`` with rare-word canaries, echo canaries and echo canaries inserted 4 times each.
"""

import json
from pathlib import Path

import pytest

from dpkit.audit.release.analysis import ANALYSES, bound

ROOT = Path(__file__).resolve().parents[1]
STUDY = ROOT / "results" / "audit-release-canary-design"
#: the study's methods and designs (dpkit.audit.release.canary_design, not imported here: it loads the methods)
METHODS = ("kps", "pp", "dpst")
DESIGNS = (("rare-words", "rare-words", 1), ("echo", "echo", 1), ("echo x4", "echo", 4))


def row_key(row: dict) -> str:
    return f"{row['method']}|{row['design']}|{row['canaries']}|{row['claimed_epsilon']:g}"


@pytest.fixture(scope="module")
def rows():
    return json.loads((STUDY / "runs.json").read_text(encoding="utf-8"))


def test_the_study_parses_and_covers_every_cell_once(rows):
    provenance = json.loads((STUDY / "provenance.json").read_text(encoding="utf-8"))
    assert provenance["invocations"] and all(s["commit"] for s in provenance["invocations"])
    keys = [row_key(r) for r in rows]
    assert len(keys) == len(set(keys))
    assert {(r["method"], r["design"]) for r in rows} == {(m, d[0]) for m in METHODS for d in DESIGNS}
    repetitions = {name: n for name, _, n in DESIGNS}
    for r in rows:
        assert r["repetitions"] == repetitions[r["design"]]
        assert r["included_records"] == r["canaries_included"] * r["repetitions"]
        assert 0 < r["canaries_included"] < r["canaries"] and r["release_texts"] == r["release_records"] > 0
        assert r["neighbouring"] == ("replace-one" if r["method"] == "dpst" else "add/remove")
        assert isinstance(r["audit_seed"], int) and r["wall_seconds"] > 0


def test_every_stored_bound_recomputes_from_its_counts(rows):
    for r in rows:
        stored = {"steinke": r["epsilon_lower_bound"], "fdp": r["epsilon_lower_bound_fdp"],
                  "gdp": r["gdp_mu_lower_bound"]}
        for analysis in ANALYSES:
            a = r["analyses"][analysis]
            assert a["bound"] == stored[analysis]
            again = bound(analysis, a["canaries"], a["guesses"], a["correct_guesses"], a["level"],
                          r["claimed_delta"], r["repetitions"])
            assert abs(again - a["bound"]) < 1e-4, (row_key(r), analysis, again, a["bound"])


def test_no_correct_method_is_refuted_at_its_claim(rows):
    for r in rows:
        assert r["verdict"] == "not refuted" and r["epsilon_lower_bound"] <= r["claimed_epsilon"], row_key(r)
        assert r["epsilon_lower_bound_fdp"] <= r["claimed_epsilon"], row_key(r)
