"""Accounting at the cap, bad input, and (slow) real decoding with the KV cache on the bundled model."""

import numpy as np
import torch
import pytest

from dpkit.privacy import BudgetExceededError, PrivacyLedger, max_private_tokens, private_prediction_rho, zcdp_to_epsilon
from dpkit.privpred import (DecodeSettings, PrivatePredictionConfig, RemoteBackendError, decode_batch,
                            generate_synthetic, get_template, resolve_local_lm)
from dpkit.validate import ParameterError


def test_cap_comes_from_the_privacy_core_and_the_guarantee_is_at_the_cap():
    cfg = PrivatePredictionConfig(epsilon=3, delta=1e-4, expected_batch_size=32, clip=5, temperature=2)
    r = cfg.max_private_tokens()
    assert r == max_private_tokens(3, 1e-4, 32, 5, 2) and r > 10
    g = cfg.guarantee()
    assert g["rho"] == pytest.approx(private_prediction_rho(r, 32, 5, 2))
    assert g["rho"] == pytest.approx(r * 0.5 * (5 / (32 * 2)) ** 2)
    assert g["epsilon"] <= 3 and zcdp_to_epsilon(private_prediction_rho(r + 1, 32, 5, 2), 1e-4) > 3
    assert g["epsilon_bun_steinke"] >= g["epsilon"]
    svt = PrivatePredictionConfig(epsilon=3, delta=1e-4, expected_batch_size=32, clip=5, temperature=2,
                                  svt_threshold=0.5, svt_sigma=0.5)
    assert svt.max_private_tokens() < r  # the sparse-vector runs cost budget too
    assert svt.contract().rho() == pytest.approx(private_prediction_rho(svt.max_private_tokens(), 32, 5, 2, 0.5))


def test_ledger_records_the_cap_and_refuses_more():
    cfg = PrivatePredictionConfig(epsilon=1, delta=1e-5, expected_batch_size=64, clip=5, temperature=2)
    ledger = PrivacyLedger(budget_epsilon=1, delta=1e-5)
    ledger.spend_parallel(cfg.contract(), "run", 10)
    assert ledger.rho == pytest.approx(cfg.contract().rho())
    assert ledger.epsilon(1e-5) <= 1
    with pytest.raises(BudgetExceededError):
        ledger.spend_parallel(cfg.contract(), "second run", 10)


@pytest.mark.parametrize("kw, name", [
    (dict(expected_batch_size=0.5), "expected_batch_size"),
    (dict(clip=0.0), "clip"),
    (dict(clip=-1.0), "clip"),
    (dict(temperature=0.0), "temperature"),
    (dict(svt_threshold=float("nan"), svt_sigma=0.1), "svt_threshold"),
    (dict(svt_threshold=0.5, svt_sigma=0.0), "svt_sigma"),
    (dict(svt_threshold=0.5), "svt_sigma"),
    (dict(epsilon=0.01), "epsilon"),
    (dict(delta=0.0), "delta"),
    (dict(top_k=0), "top_k"),
])
def test_bad_configuration(kw, name):
    base = dict(epsilon=3, delta=1e-4, expected_batch_size=32, clip=5, temperature=2)
    base.update(kw)
    with pytest.raises(ParameterError) as err:
        PrivatePredictionConfig(**base)
    assert err.value.name == name


def test_epsilon_too_small_message_says_what_one_token_costs():
    with pytest.raises(ParameterError, match="too small for even one private token"):
        PrivatePredictionConfig(epsilon=0.05, delta=1e-5, expected_batch_size=8, clip=10, temperature=1)


def test_api_backends_are_refused():
    from dpkit.backends import get_backend

    remote = get_backend("openai", model="gpt-4o-mini")
    with pytest.raises(RemoteBackendError):
        resolve_local_lm(remote)
    with pytest.raises(RemoteBackendError):
        resolve_local_lm("anthropic")


# ------------------------------------------------------------- real model
@pytest.fixture(scope="module")
def lm():
    from dpkit.models import load_lm

    return load_lm()


def _prompts(lm, n):
    t = get_template("sentiment")
    reviews = ["A warm, funny film.", "Great acting.", "I loved it.", "Charming and smart.", "A joy."][:n]
    return [t.render(lm, t.private_message(x, "Positive")) for x in reviews], t.render(lm, t.public_message("Positive"))


@pytest.mark.slow
def test_kv_cache_decoding_matches_reencoding_and_uses_one_pass_per_token(lm):
    # bare prompts (no chat template: ~8 tokens each, not ~60): without the cache every step re-encodes every
    # row from its start, and the comparison of the two paths does not depend on the prompts' length
    reviews = ["A warm, funny film.", "Great acting.", "I loved it."]
    private, public = [f"Review: {x}\nSentiment: Positive\nText:" for x in reviews], "Sentiment: Positive\nText:"
    st = DecodeSettings(expected_batch_size=3, clip=5, temperature=1.0, max_private_tokens=12, max_new_tokens=6)
    a = decode_batch(lm, private, public, st, np.random.default_rng(3))
    b = decode_batch(lm, private, public, st, np.random.default_rng(3), use_cache=False)
    assert [e.token_ids for e in a.examples] == [e.token_ids for e in b.examples]
    steps = a.private_tokens + a.public_tokens
    assert a.private_tokens == 12 and a.stopped_by == "private-token cap r"
    # one prefill, then one pass per token except after the last token and after each finished example,
    # for the private rows and (separately) for the public row
    finished = sum(1 for e in a.examples[:-1])
    assert a.forward_passes == 2 * (1 + steps - 1 - finished)
    again = decode_batch(lm, private, public, st, np.random.default_rng(3))
    assert [e.token_ids for e in again.examples] == [e.token_ids for e in a.examples]


@pytest.mark.slow
def test_svt_emits_free_public_tokens_and_top_k_restricts(lm):
    private, public = _prompts(lm, 2)
    # a threshold far above any distance (<= 2) with little noise: nearly every token is public
    st = DecodeSettings(expected_batch_size=2, clip=5, temperature=1.0, max_private_tokens=2, max_new_tokens=8,
                        svt_threshold=50.0, svt_sigma=0.5, top_k=1, max_steps=8)
    res = decode_batch(lm, private, public, st, np.random.default_rng(0))
    assert res.public_tokens >= 6 and res.private_tokens <= 2
    # top_k=1: the candidate set is the public argmax alone, so the text no longer depends on the private prompts
    st1 = DecodeSettings(expected_batch_size=2, clip=5, temperature=1.0, max_private_tokens=6, max_new_tokens=6)
    k1 = DecodeSettings(expected_batch_size=2, clip=5, temperature=1.0, max_private_tokens=6, max_new_tokens=6, top_k=1)
    other, _ = _prompts(lm, 5)
    a = decode_batch(lm, private, public, k1, np.random.default_rng(0))
    b = decode_batch(lm, other[2:], public, k1, np.random.default_rng(1))
    assert [e.token_ids for e in a.examples] == [e.token_ids for e in b.examples]
    free = decode_batch(lm, other[2:], public, st1, np.random.default_rng(1))
    assert free.examples[0].token_ids != a.examples[0].token_ids


@pytest.mark.slow
def test_decode_bad_input_and_public_rules(lm):
    private, public = _prompts(lm, 2)
    st = DecodeSettings(expected_batch_size=2, clip=5, temperature=1.0, max_private_tokens=2, max_new_tokens=4)
    # a PUBLIC prompt that does not fit is an error (public data only)
    with pytest.raises(ParameterError, match="PUBLIC prompt"):
        decode_batch(lm, private, "word " * 9000, st, np.random.default_rng(0))
    with pytest.raises(ParameterError):
        decode_batch(lm, private, public, st, 0)
    # a private prompt longer than the room left by max_new_tokens never aborts: it keeps its last tokens
    tight = DecodeSettings(expected_batch_size=2, clip=5, temperature=1.0, max_private_tokens=2,
                           max_new_tokens=lm.context_length - 12)
    res = decode_batch(lm, ["word " * 40], "Text:", tight, np.random.default_rng(0))
    assert res.private_tokens == 2
    # an empty batch is decoded like any other
    empty = decode_batch(lm, [], public, st, np.random.default_rng(0))
    assert empty.private_tokens == 2 and empty.examples


@pytest.mark.slow
def test_public_logits_do_not_depend_on_the_batch(lm):
    """The public row runs alone: its logits are bit-identical whatever the private prompts are."""
    private, public = _prompts(lm, 5)
    long = get_template("sentiment").render(lm, get_template("sentiment").private_message(
        "A long, winding, occasionally brilliant and often exasperating film " * 6, "Positive"))
    # top_k=1: every token is the public argmax, so all runs continue the same text
    st = DecodeSettings(expected_batch_size=2, clip=5, temperature=1.0, max_private_tokens=4, max_new_tokens=4,
                        top_k=1)
    traces = []
    for batch in ([], private[:1], private[:1] + [long], private):
        seen = []
        decode_batch(lm, batch, public, st, np.random.default_rng(0), on_step=lambda i, z: seen.append(z.clone()))
        traces.append(seen)
    assert len(traces[0]) == 4
    for other in traces[1:]:
        assert len(other) == len(traces[0])
        assert all(torch.equal(a, b) for a, b in zip(traces[0], other))


@pytest.mark.slow
def test_pipeline_end_to_end_resumes_without_redecoding(lm, tmp_path):
    from dpkit.runs import Run

    records = ["A warm, funny film.", "Dull and long.", "Great acting.", "A mess.", "I loved it.", "Boring."]
    labels = [1, 0, 1, 0, 1, 0]
    cfg = PrivatePredictionConfig(epsilon=10, delta=1e-3, expected_batch_size=3, clip=2, temperature=1.5,
                                  max_new_tokens=5, max_examples_per_batch=1, top_k=20)
    run = Run(tmp_path / "run", params=cfg.to_dict(), seed=0)
    res = generate_synthetic(records, get_template("sentiment"), cfg, labels=labels,
                             label_names=["negative", "positive"], n_batches=1, model=lm, run=run)
    assert res.stats["batches"] == 2 and len(res.examples) == 2
    assert res.ledger.epsilon(1e-3) <= 10 and res.guarantee["epsilon"] <= 10
    assert {e.label for e in res.examples} == {0, 1}
    again = generate_synthetic(records, get_template("sentiment"), cfg, labels=labels,
                               label_names=["negative", "positive"], n_batches=1, model=object.__new__(type(lm)),
                               run=Run(tmp_path / "run", params=cfg.to_dict(), seed=0))
    assert [e.text for e in again.examples] == [e.text for e in res.examples]
    from dpkit.privpred.llamacpp_engine import LlamaCppPrivateLM
    from dpkit.runs import RunMismatchError
    with pytest.raises(RunMismatchError, match="private_prediction.runtime: 'torch' -> 'llamacpp'"):
        generate_synthetic(records, get_template("sentiment"), cfg, labels=labels,  # one runtime per run
                           label_names=["negative", "positive"], n_batches=1, model=object.__new__(LlamaCppPrivateLM),
                           run=Run(tmp_path / "run", params=cfg.to_dict(), seed=0))
    untied = {"task": "demo"}                       # params that do not mention the configuration
    generate_synthetic(records, get_template("sentiment"), cfg, labels=labels, label_names=["negative", "positive"],
                       n_batches=1, model=lm, run=Run(tmp_path / "untied", params=untied, seed=0), max_batches=1)
    lower = PrivatePredictionConfig(epsilon=3, delta=1e-3, expected_batch_size=3, clip=2, temperature=1.5,
                                    max_new_tokens=5, max_examples_per_batch=1, top_k=20)
    with pytest.raises(RunMismatchError, match="private_prediction.epsilon: 10 -> 3"):
        generate_synthetic(records, get_template("sentiment"), lower, labels=labels,
                           label_names=["negative", "positive"], n_batches=1, model=lm,
                           run=Run(tmp_path / "untied", params=untied, seed=0), max_batches=1)
    with pytest.raises(RunMismatchError, match="private_prediction.input"):
        generate_synthetic([r + " !" for r in records], get_template("sentiment"), cfg, labels=labels,
                           label_names=["negative", "positive"], n_batches=1, model=lm,
                           run=Run(tmp_path / "untied", params=untied, seed=0), max_batches=1)
