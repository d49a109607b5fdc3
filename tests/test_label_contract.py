"""The label mechanism's contract is data: kind, parameters, exact dp_accounting event, audit re-check."""

import math

import pytest

from dpkit.audit.report import recheck_sensitivity
from dpkit.methods.labels import keep_probability, label_contract
from dpkit.privacy import PrivacyContract, PrivacyLedger


def test_label_contract_states_kind_and_parameters():
    c = label_contract(4, 1.5, "document")
    assert c.kind == "randomized_response"
    assert c.parameter("k") == 4
    assert c.parameter("keep") == pytest.approx(keep_probability(4, 1.5))
    assert PrivacyContract.from_dict(c.to_dict()) == c


def test_audit_rederives_the_label_contract():
    check = recheck_sensitivity(label_contract(3, 2.0, "document").to_dict())
    assert check.agrees is True
    # a contract claiming a smaller epsilon than its keep probability gives is caught
    data = label_contract(3, 2.0, "document").to_dict()
    data["epsilon"] = 1.0
    assert recheck_sensitivity(data).agrees is False


def test_label_contract_dp_event_is_exact_k_bucket_randomized_response():
    dp_event = pytest.importorskip("dp_accounting").dp_event
    event = label_contract(5, 1.0, "document").to_dp_event()
    assert isinstance(event, dp_event.RandomizedResponseDpEvent) and event.num_buckets == 5
    p = event.noise_parameter
    keep, other = 1 - p + p / 5, p / 5
    assert keep == pytest.approx(keep_probability(5, 1.0))
    assert math.log(keep / other) == pytest.approx(1.0)


def test_crosscheck_of_a_ledger_with_label_entries_is_consistent():
    pytest.importorskip("dp_accounting")
    from dpkit.audit.accounting import crosscheck_ledger

    ledger = PrivacyLedger()
    ledger.spend_parallel(label_contract(4, 1.0, "document"), "labels", groups=10)
    out = crosscheck_ledger(ledger.to_dict(), delta=1e-6)
    assert out["consistent"] is True
    assert out["pld_epsilon"] <= out["ledger_epsilon"] * (1 + 2e-2)


def test_rdp_substitute_reads_epsilon_of_k_bucket_event():
    pytest.importorskip("dp_accounting")
    from dpkit.audit.accounting import _rdp_substitute

    event = _rdp_substitute(label_contract(6, 0.7, "document").to_dp_event(), set())
    assert event.rho == pytest.approx(0.7 ** 2 / 2)
