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


def test_the_invisibleink_token_is_the_private_token_renamed():
    """One InvisibleInk token costs what one private token costs at the same (s, C, tau): its contract is built
    from private_token_contract, grid included (the re-tally's fact 7: invisibleink.py copied the formula, and no
    test tolerance could see the 2^-30 grid term drift)."""
    from dpkit.privacy.invisibleink import invisibleink_token_contract
    from dpkit.privacy.private_prediction import private_token_contract

    for s, c, tau in ((8.0, 2.0, 1.0), (250.0, 10.0, 2.0), (1.0, 0.5, 3.0)):
        ink, token = invisibleink_token_contract(s, c, tau), private_token_contract(s, c, tau)
        assert (ink.epsilon, ink.sensitivity, dict(ink.parameters)) == (token.epsilon, token.sensitivity,
                                                                        dict(token.parameters))
        assert ink.kind == "invisibleink_token" and ink.parameters["grid"] > 0


def test_the_randomized_response_event_is_owned_by_randomized_response():
    """k-ary randomized response's dp_accounting event is built in dpkit.privacy.randomized_response (registered
    with the contract table), from the same keep rule the sampler uses (the re-tally's fact 11)."""
    pytest.importorskip("dp_accounting")
    from dp_accounting import dp_event

    from dpkit.privacy import RandomizedResponse
    from dpkit.privacy.contract import _OWNED_EVENTS
    from dpkit.privacy.randomized_response import randomized_response_dp_event, uniform_share

    assert _OWNED_EVENTS["randomized_response"] is randomized_response_dp_event
    for k, epsilon in ((2, 1.0), (4, 0.5), (7, 12.0)):
        rr = RandomizedResponse(k, epsilon, name="label")
        event = rr.contract.to_dp_event()
        assert event == dp_event.RandomizedResponseDpEvent(uniform_share(k, epsilon), k)
        # "keep, else uniform over k": P(true) = 1 - share + share / k is the sampler's keep probability
        assert 1 - event.noise_parameter + event.noise_parameter / k == pytest.approx(rr.keep, rel=1e-12)


def test_the_presets_that_say_they_run_dpst_as_synth_does_use_its_label_share():
    """The held-out presets state that they run DP-ST "as dpkit synth dpst runs it": its label share (the
    text/label split of epsilon) is the Config default (the re-tally's leftover: a comment nothing checked)."""
    from dpkit.experiments.presets import AS_SYNTH_SMALL
    from dpkit.methods import dpst

    assert AS_SYNTH_SMALL.dpst_label_share == dpst.Config(epsilon=1.0).label_share
    assert AS_SYNTH_SMALL.dpst_variant == dpst.Config(epsilon=1.0).variant


def test_reloading_an_owner_module_keeps_its_event():
    """A notebook's autoreload re-runs a module's registration with a new function object of the same name:
    that is the same owner, not a second one (simulated: reloading the module here would leave two classes
    of one name for the later tests of this worker)."""
    from dpkit.privacy.contract import _OWNED_EVENTS, own_event
    from dpkit.privacy.randomized_response import randomized_response_dp_event as original

    def reloaded(contract, dp_event):
        return original(contract, dp_event)

    reloaded.__module__, reloaded.__qualname__ = original.__module__, original.__qualname__
    try:
        own_event("randomized_response", reloaded)
        assert _OWNED_EVENTS["randomized_response"] is reloaded
    finally:
        own_event("randomized_response", original)
    assert _OWNED_EVENTS["randomized_response"] is original
