"""privacy-3 N1: a --smoke or --limit run is refused when the kept rows are none (or exceed the smoke bound);
whether a release exists depends on the private row count, and the report now says so exactly.

Before: the report's rows line read "every row of the input" for ``pp --smoke`` and said
nothing of the refusals. The behaviour is kept (nothing is written on a refusal); the
report states the condition and that the stated guarantee does not cover that event.
"""

from __future__ import annotations

import json

import pytest

from dpkit.cli import main
from dpkit.data.selection import RowRule, row_rule
from test_runs_failures import synth


def test_the_rule_states_when_a_release_exists_for_add_remove_methods_only():
    smoke = row_rule(per_record=True, max_rows=200)
    assert "at least one row and at most 200 (the --smoke bound) is kept" in smoke.describe()
    assert "one record can decide it" in smoke.describe() and "does not cover that event" in smoke.describe()
    hashed = row_rule(per_record=True, limit=30, declared_rows=60)
    assert "at least one row is kept" in hashed.describe() and "--smoke" not in hashed.describe()
    assert RowRule.from_dict(hashed.to_dict()) == hashed
    prefix = row_rule(per_record=False, limit=12)
    assert prefix.existence() == "" and "at least one row" not in prefix.describe()   # replace-one: public size


def test_the_privacy_report_of_a_smoke_run_states_the_condition(tmp_path):
    out = tmp_path / "run"
    assert synth(out).returncode == 0              # kps --smoke on the bundled sample (fake backend)
    report = (out / "release" / "privacy_report.md").read_text()
    rows = next(line for line in report.splitlines() if line.startswith("- Rows:"))
    assert "at most 2000 (the --smoke bound)" in rows and "does not cover that event" in rows
    assert json.loads((out / "release" / "config.json").read_text())["rows"]["max_rows"] == 2000


@pytest.mark.parametrize("extra, flag", [([], "--smoke"), (["--sample-fraction", "0.000001"], "--sample-fraction")])
def test_the_refusals_themselves_write_nothing(tmp_path, capsys, extra, flag):
    path = tmp_path / "data.csv"
    path.write_text("text,label\n" + "".join(f"row {i},a\n" for i in range(2001)))
    out = tmp_path / "run"
    args = ["synth", "kps", "--input", str(path), "--text-column", "text", "--label-column", "label",
            "--epsilon", "4", "--seed", "1", "--out", str(out)]
    assert main(args + (["--smoke"] if not extra else extra)) == 2
    assert flag in capsys.readouterr().err and not out.exists()
