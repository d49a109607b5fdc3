"""privacy-4 N9: the private-prediction report of an InvisibleInk release described the seed paper's mechanism.

Before: a ``variant=invisibleink`` release's ``privacy_report.md`` was titled "Private prediction (private
batched decoding)", its measure said "(Theorem 1 of Amin et al.)" and its sensitivity line "clipped logits
averaged over the expected batch size s: c/s per token" (the numbers and ledger line were right). Now the
title names the variant (as DP-ST's does) and the statement is InvisibleInk's: DClip around the public
logits, C/s per token, Top-k+ candidates from the public logits.
"""

from __future__ import annotations

import pytest

from dpkit.methods import pp
from dpkit.methods.base import Release, config_dict
from dpkit.methods.release import privacy_report


def _report(variant: str) -> str:
    config = pp.Config.smoke(4.0, variant=variant)
    release = Release(pp.NAME, ({"text": "a text", "label": "billing"},), 3.54229, 1e-6, pp.statement_for(config),
                      config_dict(config), reproducible=True)
    return privacy_report(release, {"method": "pp", "method_config": config_dict(config)})


def test_n9_an_invisibleink_report_names_its_variant_and_its_own_mechanism():
    report = _report("invisibleink")
    title = "# Privacy report: Private prediction (private batched decoding, InvisibleInk variant)"
    assert title in report.splitlines()
    assert "Amin et al." not in report and "c/s per token" not in report
    assert "InvisibleInk, Vinod et al." in report
    assert "clipped to [-C, C] (DClip)" in report and "C/s per token" in report and "Top-k+" in report


def test_the_seed_papers_variant_keeps_its_statement_and_title():
    report = _report("amin")
    assert "# Privacy report: Private prediction (private batched decoding)" in report.splitlines()
    assert "Theorem 1 of Amin et al." in report and "c/s per token" in report and "InvisibleInk" not in report


@pytest.mark.parametrize("field", ["neighbouring", "unit", "unit_meaning", "output_size", "labels"])
def test_the_variants_share_relation_unit_and_output(field):
    assert getattr(pp.INVISIBLEINK_STATEMENT, field) == getattr(pp.STATEMENT, field)
