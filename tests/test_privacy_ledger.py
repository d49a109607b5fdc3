"""The ledger: composition, budget refusal, consistency checks, JSON audit trail."""

import json

import pytest

from dpkit.privacy import (BudgetExceededError, Exponential, Gaussian, Laplace, PrivacyContract, PrivacyLedger,
                           hash_batch, hash_partition, parallel_rho, sequential_rho, zcdp_to_epsilon)
from dpkit.validate import ParameterError


def test_sequential_and_parallel_costs():
    lap = Laplace(1.0, epsilon=0.2, unit="document").contract
    exp = Exponential(1.0, 0.4, unit="document").contract
    ledger = PrivacyLedger()
    ledger.spend(lap, "histogram")
    ledger.spend(exp, "selection", count=5)
    ledger.spend_parallel(exp, "per-batch selection", groups=[0, 3, 3, 7])
    assert ledger.rho == pytest.approx(0.02 + 5 * 0.02 + 0.02)
    assert ledger.entries[-1]["groups"] == 3
    assert ledger.epsilon(1e-6) == pytest.approx(zcdp_to_epsilon(ledger.rho, 1e-6))
    assert sequential_rho([0.1, 0.2]) == pytest.approx(0.3) and parallel_rho([0.1, 0.2]) == 0.2


def test_budget_refuses_before_recording():
    contract = Laplace(1.0, epsilon=1.0, unit="document").contract  # rho 0.5
    ledger = PrivacyLedger(budget_rho=1.0)
    ledger.spend(contract, "a", count=2)  # exactly at budget
    with pytest.raises(BudgetExceededError, match="budget rho=1"):
        ledger.spend(contract, "b")
    assert len(ledger.entries) == 1 and ledger.remaining_rho() == pytest.approx(0.0)
    eps_ledger = PrivacyLedger(budget_epsilon=1.0, delta=1e-6)
    assert eps_ledger.would_exceed(contract) is True
    small = Laplace(1.0, epsilon=0.05, unit="document").contract
    eps_ledger.spend(small, "ok")
    with pytest.raises(BudgetExceededError, match="epsilon"):
        eps_ledger.spend(small, "too many", count=1000)


def test_approx_entries_compose_basically():
    approx = PrivacyContract("old Gaussian", "add/remove", "document", "approx", 1.0, epsilon=0.5, delta=1e-7)
    ledger = PrivacyLedger()
    ledger.spend(approx, "a", count=2)
    ledger.spend(Laplace(1.0, epsilon=0.1, unit="document").contract, "b")
    assert ledger.epsilon(1e-6) == pytest.approx(1.0 + zcdp_to_epsilon(0.005, 1e-6 - 2e-7))
    with pytest.raises(ParameterError, match="delta"):
        ledger.epsilon(1e-7)


def test_mixed_units_or_relations_refused():
    ledger = PrivacyLedger()
    ledger.spend(Laplace(1.0, epsilon=0.1, unit="document").contract, "a")
    with pytest.raises(ParameterError, match="unit"):
        ledger.spend(Laplace(1.0, epsilon=0.1, unit="sentence").contract, "b")
    with pytest.raises(ParameterError, match="neighbouring"):
        ledger.spend(Laplace(1.0, epsilon=0.1, unit="document", neighbouring="replace-one").contract, "c")


def test_save_load_round_trip_and_tamper_detection(tmp_path):
    ledger = PrivacyLedger(budget_rho=2.0, delta=1e-6)
    ledger.spend(Gaussian(1.0, sigma=2.0, unit="prompt").contract, "noisy mean", count=3)
    ledger.spend_parallel(Exponential(0.1, 0.5, unit="prompt").contract, "tokens", groups=10)
    path = ledger.save(tmp_path / "ledger.json")
    again = PrivacyLedger.load(path)
    assert again.rho == pytest.approx(ledger.rho) and again.table() == ledger.table()
    data = json.loads(path.read_text())
    assert data["epsilon"] == pytest.approx(ledger.epsilon())
    data["entries"][0]["rho"] = 0.0001
    path.write_text(json.dumps(data))
    with pytest.raises(ParameterError, match="does not match"):
        PrivacyLedger.load(path)
    with pytest.raises(ParameterError, match="path"):
        PrivacyLedger.load(tmp_path / "missing.json")


def test_table_lists_entries_and_totals():
    ledger = PrivacyLedger(delta=1e-6)
    ledger.spend(Laplace(1.0, epsilon=0.3, unit="document").contract, "vocabulary histogram")
    text = ledger.table()
    assert "vocabulary histogram" in text and "total rho = 0.045" in text and "delta = 1e-06" in text


@pytest.mark.parametrize("call, name", [
    (lambda: PrivacyLedger(budget_rho=-1), "budget_rho"),
    (lambda: PrivacyLedger(budget_epsilon=1.0), "delta"),
    (lambda: PrivacyLedger().spend("contract", "x"), "contract"),
    (lambda: PrivacyLedger().spend(Laplace(1, epsilon=1).contract, ""), "label"),
    (lambda: PrivacyLedger().spend(Laplace(1, epsilon=1).contract, "x", count=-1), "count"),
    (lambda: PrivacyLedger().spend_parallel(Laplace(1, epsilon=1).contract, "x", groups=0), "groups"),
    (lambda: PrivacyLedger().epsilon(), "delta"),
    (lambda: PrivacyLedger().would_exceed(None), "contract"),
    (lambda: PrivacyLedger().would_exceed(Laplace(1, epsilon=1).contract, count=-2), "count"),
])
def test_bad_arguments(call, name):
    with pytest.raises(ParameterError) as info:
        call()
    assert info.value.name == name


def test_hash_batches_depend_only_on_the_record():
    records = [f"record {i}" for i in range(200)]
    batches = hash_partition(records, 7, salt="run-1")
    # removing a record leaves every other record's batch unchanged
    np_without = hash_partition(records[:50] + records[51:], 7, salt="run-1")
    assert list(np_without) == list(batches[:50]) + list(batches[51:])
    assert set(batches) == set(range(7))
    assert hash_batch("record 3", 7, salt="run-1") == batches[3]
    assert (hash_partition(records, 7, salt="run-2") != batches).any()
    with pytest.raises(ParameterError, match="n_batches"):
        hash_batch("x", 0)
    with pytest.raises(ParameterError, match="record"):
        hash_batch(3, 2)


def test_parallel_groups_and_partition_keys():
    contract = Laplace(1.0, epsilon=0.5, unit="document").contract
    with pytest.raises(ParameterError, match="groups"):
        PrivacyLedger().spend_parallel(contract, "x", groups="abc")
    ledger = PrivacyLedger()
    ledger.spend_parallel(contract, "numpy batches", groups=hash_partition(["a", "b", "c", "d"], 2))
    assert ledger.rho == pytest.approx(0.125)
    labelled = [("cardiology", "note 1"), ("cardiology", "note 2"), ("neurology", "note 3")]
    by_label = hash_partition(labelled, 5, key=lambda r: r[0])
    assert by_label[0] == by_label[1]
    with pytest.raises(ParameterError, match="records"):
        hash_partition("one string", 3)
    with pytest.raises(ParameterError, match="key"):
        hash_partition(["a"], 3, key="label")


def test_pure_epsilon_is_basic_composition_through_the_composition_module():
    from dpkit.privacy import NoisyTopK
    from dpkit.privacy.composition import sequential_epsilon, sequential_rho

    ledger = PrivacyLedger()
    ledger.spend(Laplace(1.0, epsilon=0.3, unit="document").contract, "histogram", count=2)
    ledger.spend_parallel(Exponential(1.0, 0.5, unit="document").contract, "per-class pick", groups=7)
    ledger.spend(NoisyTopK(1.0, 0.4, k=2, unit="document").contract, "top-2")   # zCDP contract, pure epsilon 0.4
    assert ledger.pure_epsilon() == sequential_epsilon([0.3, 0.3, 0.5, 0.4]) == pytest.approx(1.5)
    assert ledger.rho == sequential_rho(e["rho"] for e in ledger.entries)
    assert ledger.entries[1]["rho"] == Exponential(1.0, 0.5).contract.rho()   # parallel: one batch's cost
    ledger.spend(Gaussian(1.0, epsilon=1.0, delta=1e-6, unit="document").contract, "gaussian")
    with pytest.raises(ParameterError, match="gaussian"):
        ledger.pure_epsilon()
    assert PrivacyLedger().pure_epsilon() == 0.0


def test_a_pure_budget_composes_basically_and_refuses_before_recording():
    """delta = 0: the budget is pure epsilon (basic composition; parallel entries count once)."""
    lap = Laplace(1.0, epsilon=1.5, unit="document").contract
    ledger = PrivacyLedger(budget_epsilon=4.0, delta=0)
    ledger.spend(lap, "a", count=2)
    ledger.spend_parallel(Laplace(1.0, epsilon=1.0, unit="document").contract, "b", groups=5)
    assert ledger.guarantee() == (pytest.approx(4.0), 0.0) and ledger.pure
    with pytest.raises(BudgetExceededError, match="epsilon=4.5"):
        ledger.spend(Laplace(1.0, epsilon=0.5, unit="document").contract, "c")
    assert [e["label"] for e in ledger.entries] == ["a", "b"]
    assert ledger.would_exceed(lap) and not PrivacyLedger(budget_epsilon=4.0, delta=0).would_exceed(lap)
    gaussian = Gaussian(1.0, sigma=5 ** 0.5, unit="document").contract  # no pure epsilon: a pure budget cannot hold it
    with pytest.raises(BudgetExceededError, match="no pure epsilon"):
        PrivacyLedger(budget_epsilon=10.0, delta=0).spend(gaussian, "g")
    again = PrivacyLedger.from_dict(json.loads(json.dumps(ledger.to_dict())))
    assert again.pure and again.guarantee() == ledger.guarantee() and again.budget_epsilon == 4.0


def test_the_guarantee_at_delta_is_the_tight_conversion():
    ledger = PrivacyLedger(budget_epsilon=3.0, delta=1e-6)
    ledger.spend(Gaussian(1.0, sigma=10 ** 0.5, unit="document").contract, "g", count=2)  # rho 0.05 each
    assert ledger.guarantee() == (pytest.approx(zcdp_to_epsilon(0.1, 1e-6)), 1e-6)
    with pytest.raises(ParameterError, match="delta"):
        PrivacyLedger().guarantee()


def test_on_record_sees_each_entry_before_spend_returns():
    seen = []
    ledger = PrivacyLedger(budget_epsilon=1.0, delta=0, on_record=lambda led: seen.append(len(led.entries)))
    ledger.spend(Laplace(1.0, epsilon=0.5, unit="document").contract, "a")
    ledger.spend_parallel(Laplace(1.0, epsilon=0.5, unit="document").contract, "b", groups=3)
    with pytest.raises(BudgetExceededError):
        ledger.spend(Laplace(1.0, epsilon=0.5, unit="document").contract, "c")
    assert seen == [1, 2]  # an overspend is refused before it is recorded, so the hook never sees it
    with pytest.raises(ParameterError, match="on_record"):
        PrivacyLedger(on_record="not callable")
