"""Contracts as data: parameters as fields, dp_accounting events, the ledger cross-check."""

import math

import numpy as np
import pytest

pytest.importorskip("dp_accounting")
from dp_accounting import dp_event  # noqa: E402

from dpkit.audit.accounting import crosscheck_ledger, ledger_dp_event  # noqa: E402
from dpkit.privacy import (Gaussian, Laplace, PrivacyContract, PrivacyLedger, TextbookGaussian,  # noqa: E402
                           TextbookLaplace)
from dpkit.privacy.exponential import Exponential  # noqa: E402
from dpkit.privacy.contract import own_event  # noqa: E402
from dpkit.privacy.private_prediction import (private_prediction_contract, private_token_contract,  # noqa: E402
                                              run_dp_event, svt_contract)
from dpkit.validate import ParameterError  # noqa: E402


def test_mechanisms_state_their_parameters():
    lap = Laplace(2.0, epsilon=0.5).contract
    assert lap.kind == "laplace" and lap.parameter("scale") == pytest.approx(4.0)
    assert Gaussian(1.0, epsilon=1.0, delta=1e-5).contract.parameters["noise"] == "discrete_gaussian"
    pp = private_prediction_contract(30, 10, 10, 2, svt_sigma=0.2)
    assert dict(pp.parameters) == {"r": 30, "s": 10.0, "c": 10.0, "tau": 2.0, "svt_sigma": 0.2,
                                   "grid": 2.0 ** -30,       # the exact sampler's public grid, 2^-30 c/s
                                   "svt_grid": 2.0 ** -34}   # AboveThreshold's, at most 2^-30 / s
    with pytest.raises(ParameterError, match="scale"):
        lap.parameter("sigma")
    with pytest.raises(TypeError):
        lap.parameters["scale"] = 1.0  # read-only


def test_round_trip_and_legacy_dicts_load():
    contract = Exponential(1.0, 2.0).contract
    assert PrivacyContract.from_dict(contract.to_dict()) == contract
    legacy = {k: v for k, v in contract.to_dict().items() if k not in ("kind", "parameters")}
    old = PrivacyContract.from_dict(legacy)
    assert old.kind == "" and dict(old.parameters) == {} and old.rho() == contract.rho()


def test_bad_parameters_are_refused():
    with pytest.raises(ParameterError, match="noise"):
        PrivacyContract("x", "add/remove", "record", "pure", 1.0, epsilon=1.0,
                        parameters={"noise": "laplace"})  # no scale
    with pytest.raises(ParameterError, match="parameters"):
        PrivacyContract("x", "add/remove", "record", "pure", 1.0, epsilon=1.0, parameters={"w": [1, 2]})


def test_dp_events():
    # release-mode Laplace is discrete Laplace on the integers: exp(-|k| / 4) with sensitivity 2
    assert Laplace(2.0, epsilon=0.5).contract.to_dp_event() == dp_event.DiscreteLaplaceDpEvent(0.25, 2)
    assert TextbookLaplace(2.0, epsilon=0.5).contract.to_dp_event() == dp_event.LaplaceDpEvent(2.0)
    g = TextbookGaussian(1.0, sigma=3.0).contract.to_dp_event()
    assert g == dp_event.GaussianDpEvent(3.0)
    assert Gaussian(1.0, sigma=3.0).contract.to_dp_event() == dp_event.ZCDpEvent(1.0 / 18.0)
    rr = svt_contract(10, 0.2).to_dp_event()
    assert isinstance(rr, dp_event.RandomizedResponseDpEvent)
    keep = 1 - rr.noise_parameter / 2
    assert math.log(keep / (1 - keep)) == pytest.approx(1.0)  # 2/(s sigma)
    assert Exponential(1.0, 2.0).contract.to_dp_event() == dp_event.ZCDpEvent(0.5)  # eps^2/8
    pp = private_prediction_contract(30, 10, 10, 2, svt_sigma=0.2).to_dp_event()
    assert isinstance(pp, dp_event.SelfComposedDpEvent) and pp.count == 30


def test_private_prediction_event_is_composed_from_its_own_token_contracts():
    """Theorem 1's event has one owner (dpkit.privacy.private_prediction): r copies of the event of one private
    token and one sparse-vector run, each from its contract; its zCDP cost is the contract's rho (the review's
    fact 7: the contract module restated the formula)."""
    run = private_prediction_contract(30, 10, 10, 2, svt_sigma=0.2)
    token, svt = private_token_contract(10, 10, 2), svt_contract(10, 0.2)
    expected = dp_event.SelfComposedDpEvent(dp_event.ComposedDpEvent([token.to_dp_event(), svt.to_dp_event()]), 30)
    assert run.to_dp_event() == expected
    assert 30 * (token.rho() + svt.epsilon ** 2 / 2) == pytest.approx(run.rho(), rel=1e-12)
    no_svt = private_prediction_contract(7, 10, 10, 2)
    assert no_svt.to_dp_event() == dp_event.SelfComposedDpEvent(token.to_dp_event(), 7)
    with pytest.raises(ParameterError, match="already has an owner"):
        own_event("private_prediction", lambda contract, module: None)
    own_event("private_prediction", run_dp_event)  # the owner registering again is harmless
    with pytest.raises(ParameterError, match="event"):
        own_event("measure", run_dp_event)


def _ledger():
    ledger = PrivacyLedger(delta=1e-6)
    ledger.spend(Laplace(1.0, epsilon=0.5).contract, "laplace", 3)
    ledger.spend(Exponential(1.0, 1.0).contract, "exponential", 2)
    ledger.spend(svt_contract(10, 0.2).replace(unit="record"), "svt")
    ledger.spend_parallel(private_prediction_contract(20, 10, 10, 2, 0.2).replace(unit="record"), "pp", 5)
    return ledger


def test_ledger_crosscheck_agrees_with_dp_accounting():
    data = _ledger().to_dict()
    event = ledger_dp_event(data)
    assert isinstance(event, dp_event.ComposedDpEvent) and len(event.events) == 4
    out = crosscheck_ledger(data)
    assert out["consistent"] is True
    assert out["pld_epsilon"] <= out["ledger_epsilon"] <= out["rdp_epsilon"] * 1.01
    assert any("Gaussian-equivalent" in s for s in out["substitutions"])


def test_crosscheck_catches_an_under_stated_ledger():
    """A Laplace release whose contract claims a smaller epsilon than its noise gives fails the check."""
    honest = Laplace(1.0, epsilon=2.0).contract
    lying = honest.replace(epsilon=0.2)  # the noise (scale 0.5) stays in the parameters
    ledger = PrivacyLedger(delta=1e-6)
    ledger.spend(lying, "lying", 50)
    out = crosscheck_ledger(ledger.to_dict())
    assert out["consistent"] is False and out["pld_epsilon"] > out["ledger_epsilon"]
    ledger = PrivacyLedger(delta=1e-6)
    ledger.spend(honest, "honest", 50)
    assert crosscheck_ledger(ledger.to_dict())["consistent"] is True
