"""``dpkit synth --plan`` refuses every size the run refuses, by the same check, before anything is written.

Before (reliability-3 probes 18, 19): ``--plan`` printed a plan for private prediction's
``max_new_tokens=99999999999999999999`` and DP-ST's ``k=1000000000``, which the run then refused
(after its folder existed). Now the plan calls the run's own check
(:func:`dpkit.privpred.pipeline.fitting_public_prompts`, :func:`dpkit.dpst.corpus.check_k`, through
:mod:`dpkit.methods.sizes`), so the two refusals are the same line.
"""

from __future__ import annotations

import pytest

from dpkit.cli import main
from test_runs_faults import SAMPLE

LABELLED = ["--label-column", "label", "--labels", "billing,delivery,product", "--epsilon", "4", "--smoke",
            "--seed", "1"]


def _one_line(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert "Traceback" not in err and len(err.splitlines()) == 1, err
    return err


@pytest.mark.parametrize("method, setting, named, allowed", [
    ("pp", "max_new_tokens=99999999999999999999", "max_new_tokens", "exceeds the model's context of"),
    ("dpst", "k=1000000000", "k", "must be <= the number of public triples"),
])
def test_the_plan_refuses_a_size_the_run_refuses_with_the_same_line_and_writes_nothing(
        tmp_path, capsys, method, setting, named, allowed):
    out = tmp_path / "run"
    assert main(["synth", method, "--plan", *LABELLED, "--set", setting,
                 "--out", str(out)]) == 2
    planned = _one_line(capsys)
    assert planned.startswith(f"dpkit synth: {named}={setting.split('=')[1]} ") and allowed in planned, planned
    assert not out.exists()
    assert main(["synth", method, "--input", SAMPLE, "--text-column", "text", *LABELLED, "--set", setting,
                 "--out", str(out)]) == 2
    assert _one_line(capsys) == planned      # one check, one line
    assert not out.exists()                  # refused before the run folder (and any charge)
