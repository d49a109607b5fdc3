"""``dpkit audit release ft``: DP fine-tuning's whole release audited with canaries in its training data.

The canaries join the records that DP-SGD trains on (the one-run setting of Steinke et al. 2023,
which was designed for DP-SGD); the trained model's texts are scored against them. At smoke sizes
on the bundled model this checks the path and that a correct release is not refuted.
"""

import json

import pytest

from dpkit.cli import main

SAMPLE = "data/own_data_sample.csv"


@pytest.mark.slow
def test_a_smoke_release_of_ft_is_audited_and_not_refuted(tmp_path, capsys):
    out = tmp_path / "audit"
    argv = ["audit", "release", "ft", "--input", SAMPLE, "--text-column", "text", "--label-column", "label",
            "--epsilon", "4", "--delta", "1e-6", "--smoke", "--json", "--canaries", "64", "--scorers", "ngram,chars",
            "--out", str(out)]
    assert main(argv) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["method"] == "ft" and result["canaries"] == 64 and result["verdict"] == "not refuted"
    assert result["neighbouring"] == "add/remove" and result["claimed_epsilon"] == 4.0
    assert (out / "run" / "release" / "synthetic.jsonl").exists()
    texts = [line.split(",")[0] for line in open(SAMPLE, encoding="utf-8").read().splitlines()[1:]]
    assert not any(t and t in json.dumps(result) for t in texts)
