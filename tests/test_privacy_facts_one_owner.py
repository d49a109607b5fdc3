"""Privacy facts stated once (issue 49, the review's table of 18 facts): the "s >= 1" rule of private
prediction, the report's privacy measure (from the charged contracts) and the public cut at max_chars
(printed once in a release's report)."""

import re
from pathlib import Path

import pytest

from dpkit.methods import kps
from dpkit.methods.base import Release
from dpkit.methods.budget import open_ledger
from dpkit.methods.release import privacy_report
from dpkit.privpred.batching import n_batches_for
from dpkit.privpred.clipping import aggregate_logits, aggregate_sensitivity
from dpkit.privpred.svt import mean_softmax
from dpkit.validate import ParameterError

ROOT = Path(__file__).resolve().parents[1]


def test_s_at_least_one_is_checked_in_one_place():
    copies = [str(p.relative_to(ROOT)) for p in (ROOT / "dpkit").rglob("*.py")
              if re.search(r"if s < (1|MIN_BATCH_SIZE):\s*raise ParameterError", p.read_text(encoding="utf-8"))]
    assert copies == ["dpkit/privacy/private_prediction.py"]
    for call in (lambda: n_batches_for(10, 0.5), lambda: mean_softmax([[0.0, 1.0]], 0.5),
                 lambda: aggregate_logits([[0.0, 1.0]], 0.5), lambda: aggregate_sensitivity(1.0, 0.5)):
        with pytest.raises(ParameterError, match="expected_batch_size.*>= 1"):
            call()


def _kps_report() -> str:
    config = kps.Config(epsilon=4.0)
    ledger = open_ledger(config)
    for charge in kps.charges(config, 2, 10):
        ledger.charge(charge)
    release = Release("kps", ({"text": "x", "label": "a"},), 4.0, 0.0, kps.STATEMENT,
                      {"max_chars": config.max_chars}, ledger=ledger, public_rules=config.public_rules())
    return privacy_report(release, {"label_column": "label"})


def test_the_report_states_the_measure_the_contracts_carry():
    row = next(line for line in _kps_report().splitlines() if line.startswith("| privacy measure |"))
    assert "each charge: pure epsilon-DP;" in row  # from the contracts; the statement explains the release


def test_the_report_states_the_cut_at_max_chars_once():
    report = _kps_report()
    assert len(re.findall(r"cut (at|to)", report)) == 1
    assert "before matching" in report  # as DP-KPS states where it cuts


def test_every_method_states_its_cut_under_the_key_the_report_prints_once():
    """The report prints the cut from ``long_document`` once; a method that named it otherwise (pp and ft keyed
    it ``long_record``) had the cut printed twice, the generic line and its own (privacy review, fact 18)."""
    from dpkit.methods import ft, pp

    rules = {"kps": kps.Config(epsilon=4.0).public_rules(), "pp": pp.public_rules(pp.Config(epsilon=4.0)),
             "ft": ft.Config(epsilon=8.0).public_rules()}
    for name, rule in rules.items():
        assert "long_document" in rule, name
        assert sum("cut" in text for text in rule.values()) == 1, (name, rule)
