"""Typed ledger entries and "charge what you draw".

A ledger's entries are :class:`~dpkit.privacy.Charge` objects (as dp_accounting's events are typed), not
dicts whose "composition" every reader re-interprets; the saved JSON keeps its format, so a ledger written
before the change loads. A charge holds the mechanism that draws: DP-KPS builds each of its mechanisms once,
DP-ST draws only with the mechanism a charge holds, and randomized response states its own contract.
"""

import json
from pathlib import Path

import numpy as np
import pytest

import dpkit.kps.ensembles as ensembles
import dpkit.kps.pipeline as pipeline
from dpkit.dpst.hashing import toy_corpus
from dpkit.dpst.privatize import DPST
from dpkit.kps.pipeline import KPSConfig, fit_kps
from dpkit.methods.labels import label_contract
from dpkit.privacy import Charge, Laplace, PrivacyLedger
from dpkit.privacy.randomized_response import RandomizedResponse
from dpkit.runs.ledger import merged
from dpkit.validate import ParameterError

SAVED = Path(__file__).parent / "data" / "ledger_dict_entries.json"  # written by the ledger of dict entries
VOCAB = ["heart", "failure", "heart failure", "cancer", "blood", "pressure", "pain", "chest", "lung",
         "kidney", "liver", "fever", "cough"]
TEXTS = ["heart failure and chest pain", "blood pressure high", "lung cancer cough fever",
         "kidney liver pain", "fever and cough", "chest pain heart"]
LABELS = [0, 1, 0, 1, 2, 0]


class Embedder:
    def encode(self, terms):
        v = np.array([[ord(c) for c in (t + "........")[:8]] for t in terms], dtype=float)
        return v / np.linalg.norm(v, axis=1, keepdims=True)


def test_entries_are_the_recorded_charges():
    ledger = PrivacyLedger()
    laplace = Laplace(1.0, epsilon=0.5, unit="document")
    declared = Charge("counts", mechanism=laplace, groups=4)
    assert ledger.charge(declared) is declared and ledger.entries == [declared]
    assert declared.contract is laplace.contract and declared.parallel and declared.runs == 1
    entry = ledger.spend(laplace.contract, "again", count=3)
    assert isinstance(entry, Charge) and entry.composition == "sequential" and entry.runs == 3
    assert entry.rho == pytest.approx(3 * 0.5 ** 2 / 2) and ledger.pure_epsilon() == pytest.approx(2.0)


def test_a_ledger_saved_with_dict_entries_loads_and_saves_the_same_json():
    saved = json.loads(SAVED.read_text())
    ledger = PrivacyLedger.from_dict(saved)
    assert all(isinstance(e, Charge) for e in ledger.entries)
    assert [e.composition for e in ledger.entries] == [e["composition"] for e in saved["entries"]]
    again = ledger.to_dict()
    # every entry is written as it was read; the last one's contract was saved before contracts had kinds
    assert again["entries"][:-1] == saved["entries"][:-1]
    assert again["epsilon"] == pytest.approx(saved["epsilon"], rel=1e-12)
    legacy = again["entries"][-1]
    assert legacy["contract"]["kind"] == "" and {k: legacy[k] for k in ("count", "groups", "rho")} == \
        {k: saved["entries"][-1][k] for k in ("count", "groups", "rho")}


def test_an_edited_saved_entry_is_refused_naming_it():
    saved = json.loads(SAVED.read_text())
    saved["entries"][1]["rho"] /= 2
    with pytest.raises(ParameterError, match="DP-KDE of each class, member 1"):
        PrivacyLedger.from_dict(saved)
    saved = json.loads(SAVED.read_text())
    saved["entries"][0]["composition"] = "both"
    with pytest.raises(ParameterError, match="composition"):
        PrivacyLedger.from_dict(saved)


def test_a_charge_states_one_composition_and_a_contract():
    contract = Laplace(1.0, epsilon=1.0, unit="document").contract
    with pytest.raises(ParameterError, match="count"):
        Charge("x", contract, groups=3, count=2)
    with pytest.raises(ParameterError, match="mechanism"):
        Charge("x", mechanism=object())
    with pytest.raises(ParameterError, match="label"):
        Charge("", contract)


def test_reading_an_entry_as_a_dict_still_works_and_warns():
    entry = PrivacyLedger().spend(Laplace(1.0, epsilon=1.0, unit="document").contract, "old reader")
    with pytest.warns(DeprecationWarning, match="typed"):
        assert entry["contract"]["epsilon"] == 1.0


def test_resume_merges_typed_entries_as_the_saved_ones():
    saved = json.loads(SAVED.read_text())
    current = PrivacyLedger.from_dict(saved).to_dict()
    assert merged(saved, current) is current
    shorter = dict(current, entries=current["entries"][:2])
    assert merged(saved, shorter) is saved


def test_kps_builds_each_mechanism_once_and_draws_with_it(monkeypatch):
    built = []
    for module, name in ((pipeline, "histogram_mechanism"), (pipeline, "dpkde_mechanism"),
                         (ensembles, "dpkde_mechanism")):
        original = getattr(module, name)

        def counting(*args, _original=original, _name=name, **kwargs):
            built.append(_name)
            return _original(*args, **kwargs)

        monkeypatch.setattr(module, name, counting)
    for method in ("independent", "iterative"):
        built.clear()
        config = KPSConfig(epsilon=6.0, vocabulary_share=1 / 6, N=8, L=4, n_features=32, method=method)
        model = fit_kps(TEXTS, LABELS, ["a", "b", "c"], VOCAB, Embedder(), config, np.random.default_rng(1))
        assert len(built) == len(model.charges) == len(model.ledger.entries)  # 3 classes, one build per charge
        assert model.vocabulary.contract is model.charges[0].contract
        kdes = ([model.class_kdes[c].contract for c in range(3)] if method == "independent" else
                [m.kde.contract for c in range(3) for m in model.class_kdes[c].members])
        charged = {id(charge.contract) for charge in model.charges[1:]}
        assert {id(contract) for contract in kdes} == charged  # the very objects charged, not equal copies


def test_dpst_draws_only_with_the_mechanism_a_charge_holds():
    corpus, embedder = toy_corpus(k=6)
    mechanism = DPST(corpus, 4.0, "document", embedder=embedder)
    twin = DPST(corpus, 4.0, "document", embedder=embedder)  # the same contract, another object
    prepared = mechanism.prepare(["The mayor opened a new bridge."])
    ledger = PrivacyLedger()
    charge = ledger.charge(Charge("dpst", mechanism=mechanism, groups=1))
    out = mechanism.privatize_prepared(prepared, np.random.default_rng(0), charge=charge)
    assert out[0].triples[0].provenance[0]["ledger_entry"] == charge.to_dict()
    with pytest.raises(ParameterError, match="charge"):
        twin.privatize_prepared(prepared, np.random.default_rng(0), charge=charge)
    assert mechanism.slot_epsilons == (mechanism.contract.parameters["eps_neighbourhood"],
                                       mechanism.contract.parameters["eps_triple"])


def test_randomized_response_carries_its_contract():
    rr = RandomizedResponse(4, 1.5, name="label", unit="record")
    assert rr.contract == label_contract(4, 1.5, "record")
    assert rr.contract.parameters["keep"] == pytest.approx(rr.keep)
    assert rr.contract.epsilon == 1.5 and rr.contract.neighbouring == "replace-one"
    charge = Charge("label", mechanism=rr, groups=10)
    assert charge.contract is rr.contract and charge.mechanism.sample(2, np.random.default_rng(0)) in range(4)
