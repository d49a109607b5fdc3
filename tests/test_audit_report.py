"""The audit report: checklist, sensitivity re-checks, audits chosen from a ledger, verdict."""

import numpy as np
import pytest

from dpkit.audit import report
from dpkit.privacy import PrivacyLedger
from dpkit.validate import ParameterError


def _kps_ledger():
    from dpkit.kps.rff import RandomFourierFeatures
    from dpkit.kps.kde import release_dpkde
    from dpkit.kps.vocabulary import release_noisy_histogram

    rng = np.random.default_rng(0)
    ledger = PrivacyLedger(delta=1e-5)
    _, vocab = release_noisy_histogram([[0, 1]], 5, 4, 1.0, rng)
    ledger.spend(vocab, "vocabulary")
    kde = release_dpkde(rng.normal(size=(3, 4)), RandomFourierFeatures(4, 8, 1.0, rng), 2.0, rng)
    ledger.spend_parallel(kde.contract, "kde per class", groups=3)
    return ledger


def test_checklist_has_every_item_and_the_statement():
    rows = dict(report.checklist(_kps_ledger().to_dict(), {"delta": 1e-5}))
    for key in ("1. DP setting", "2a. Data accesses covered", "2b. Final mechanism output", "2c. Unit of privacy",
                "2d. Neighbouring relation", "3a. Type of accounting", "3b. Accounting assumptions",
                "3c. Formal DP statement", "4. Transparency and verifiability"):
        assert key in rows
    assert rows["2c. Unit of privacy"] == "document" and rows["2d. Neighbouring relation"] == "add/remove"
    assert "3-DP (pure)" in rows["3c. Formal DP statement"]  # 1 + 2, the parallel KDE counted once
    assert "kde per class" in rows["3b. Accounting assumptions"]
    assert rows["1. DP setting"].startswith("central")


def test_edited_ledger_is_refused():
    data = _kps_ledger().to_dict()
    data["entries"][0]["rho"] = 0.01
    with pytest.raises(ParameterError, match="stored rho"):
        report.checklist(data)


def test_sensitivity_rechecks_confirm_every_family():
    from dpkit.dpst.mechanism import triple_contract
    from dpkit.privacy.private_prediction import private_prediction_contract, private_token_contract, svt_contract

    contracts = [e["contract"] for e in _kps_ledger().to_dict()["entries"]]
    contracts += [private_token_contract(10, 10, 2).to_dict(), svt_contract(10, 0.2).to_dict(),
                  private_prediction_contract(50, 10, 10, 2, svt_sigma=0.2).to_dict(),
                  triple_contract(1.0).to_dict()]
    for contract in contracts:
        check = report.recheck_sensitivity(contract)
        assert check.agrees is True, check


def test_wrong_stated_sensitivity_is_flagged():
    from dpkit.privacy.private_prediction import private_token_contract

    contract = private_token_contract(10, 10, 2).to_dict()
    contract["sensitivity"] = 0.5  # claims c/(2s)
    assert report.recheck_sensitivity(contract).agrees is False
    contract = _kps_ledger().to_dict()["entries"][0]["contract"]
    contract["sensitivity"] = 2.0  # S is 4
    assert report.recheck_sensitivity(contract).agrees is False
    unknown = dict(contract, mechanism="my own mechanism", kind="my_own")
    assert report.recheck_sensitivity(unknown).agrees is None
    legacy = {k: v for k, v in contract.items() if k not in ("kind", "parameters")}  # saved before the fields
    check = report.recheck_sensitivity(legacy)
    assert check.agrees is None and "states no kind" in check.method


def test_report_reads_parameters_not_notes():
    """Contracts as data: a rewritten note changes nothing, a wrong parameter is caught."""
    contract = _kps_ledger().to_dict()["entries"][1]["contract"]  # DP-KDE
    reworded = dict(contract, note="free text, no numbers here")
    assert report.recheck_sensitivity(reworded).agrees is True
    wrong = dict(contract, parameters=dict(contract["parameters"], I=contract["parameters"]["I"] * 2))
    assert report.recheck_sensitivity(wrong).agrees is False


def test_audits_follow_the_ledger_and_the_verdict():
    data = _kps_ledger().to_dict()
    rows = report.run_audits(data, samples=2_000, seed=0)
    assert {r["mechanism"] for r in rows} == {"kps_vocabulary", "kps_dpkde"}
    assert {r["claimed_epsilon"] for r in rows} == {1.0, 2.0}
    checks = [report.recheck_sensitivity(e["contract"]) for e in data["entries"]]
    ok, text = report.verdict(checks, rows)
    assert ok and text.startswith("NO VIOLATION FOUND")
    ok, text = report.verdict(checks, rows + [{"mechanism": "x", "passed": False}])
    assert not ok and "empirical epsilon above the claim for x" in text


def test_private_prediction_audit_epsilon_is_per_token():
    from dpkit.privacy.private_prediction import private_prediction_contract

    contract = private_prediction_contract(50, 10, 10, 2).to_dict()
    assert report.audit_epsilon(contract) == pytest.approx(1.0)  # 2c/(s tau)
    assert report.audit_names_for(contract) == ("pp_token",)


def test_private_prediction_with_svt_audits_both_parts():
    from dpkit.privacy.private_prediction import private_prediction_contract

    contract = private_prediction_contract(40, 10, 10, 2, svt_sigma=0.4).to_dict()
    assert report.audit_plan(contract) == [("pp_token", pytest.approx(1.0)), ("pp_svt", pytest.approx(0.5))]
    assert report.recheck_sensitivity(contract).agrees is True
    contract["rho"] = contract["rho"] / 2  # a Theorem-1 cost stated too low
    assert report.recheck_sensitivity(contract).agrees is False


def test_ledger_from_a_run_folder(tmp_path):
    from dpkit.runs import Run

    ledger = _kps_ledger()
    Run(tmp_path / "run", params={"delta": 1e-5, "eps": 3}, seed=4, ledger=ledger)
    data, params = report.load_ledger_source(tmp_path / "run")
    assert len(data["entries"]) == 2 and params["eps"] == 3 and "seed 4" in params["code"]
    ledger.save(tmp_path / "ledger.json")
    assert report.load_ledger_source(tmp_path / "ledger.json")[0]["entries"] == data["entries"]
    with pytest.raises(ParameterError, match="ledger_path"):
        report.load_ledger_source(tmp_path / "missing.json")
    # the folder `dpkit synth --out DIR` writes: its run is DIR/private (the book's
    # `-p ledger_path runs/my_run` failed on it: tests/test_book_commands.py)
    Run(tmp_path / "synth" / "private", params={"eps": 5}, seed=1, ledger=ledger)
    (tmp_path / "synth" / "release").mkdir()
    assert report.load_ledger_source(tmp_path / "synth")[1]["eps"] == 5
    with pytest.raises(ParameterError, match="ledger_path"):
        report.load_ledger_source(tmp_path / "synth" / "release")
