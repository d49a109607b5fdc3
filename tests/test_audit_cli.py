"""``python -m dpkit audit list|run``."""

import json

from dpkit.cli import main


def test_list_json(capsys):
    assert main(["audit", "list", "--json"]) == 0
    items = json.loads(capsys.readouterr().out)
    names = {i["name"]: i["broken"] for i in items}
    assert names["laplace"] is False and names["svt_no_query_noise"] is True


def test_run_json_broken_exits_zero(capsys):
    assert main(["audit", "run", "laplace_half_noise", "--epsilon", "1", "--samples", "4000", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert {"claimed_epsilon", "lower_bound", "confidence", "passed", "witness"} <= set(out)
    assert out["passed"] is False and out["witness"]["seed"] == 0 and out["witness"]["mechanism"] == "laplace_half_noise"


def test_run_text(capsys):
    assert main(["audit", "run", "laplace", "--epsilon", "2", "--samples", "2000", "--seed", "3"]) == 0
    assert "PASS" in capsys.readouterr().out


def test_bad_arguments_exit_2(capsys):
    assert main(["audit", "run", "nope", "--epsilon", "1"]) == 2
    assert "name='nope'" in capsys.readouterr().err
    assert main(["audit", "run", "laplace", "--epsilon", "0"]) == 2
    assert main(["audit", "run", "laplace", "--epsilon", "1", "--samples", "3"]) == 2
    import pytest

    with pytest.raises(SystemExit) as exit_info:
        main(["audit", "run", "laplace"])
    assert exit_info.value.code == 2


def test_samples_estimate(capsys):
    assert main(["audit", "samples", "--claim", "1", "--violation", "1.5", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["certification_samples_per_dataset"] > 10 and out["samples_to_draw_per_dataset"] == \
        2 * out["certification_samples_per_dataset"]
    assert main(["audit", "samples", "--claim", "1", "--violation", "0.5"]) == 2
    assert "violation" in capsys.readouterr().err


def test_run_text_states_pair_loss(capsys):
    assert main(["audit", "run", "laplace", "--epsilon", "1", "--samples", "2000"]) == 0
    assert "exact privacy loss of this pair: 1 (100.0% of the claim)" in capsys.readouterr().out
