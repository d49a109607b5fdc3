"""DP fine-tuning (``dpkit synth ft``): the configuration, the one charge, Poisson sampling, the DP-SGD step,
resume without a second charge, and a release on a tiny randomly initialised Llama (plumbing only)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from dpkit.ft.accounting import DpSgdMechanism, dpsgd_epsilon
from dpkit.ft.adapters import AdapterLM, parse_modules, prefix_text
from dpkit.ft.dpsgd import StepPlan, poisson_batch, train
from dpkit.methods import ft
from dpkit.methods.base import Records
from dpkit.methods.budget import open_ledger
from dpkit.runs import Run
from dpkit.validate import ParameterError

SIGMA = 0.9  # a fixed noise multiplier: the tests do not pay the calibration's bisection


@pytest.fixture(scope="module")
def tiny_lm():
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    from dpkit.models.lm import prepare_bundled_lm

    tokenizer = AutoTokenizer.from_pretrained(prepare_bundled_lm())
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=3,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
                         tie_word_embeddings=True, eos_token_id=tokenizer.eos_token_id,
                         pad_token_id=tokenizer.pad_token_id)

    class TinyLM:
        model = LlamaForCausalLM(config).eval()

    TinyLM.tokenizer = tokenizer
    return TinyLM()


@pytest.fixture
def fixed_noise(monkeypatch):
    """Config.mechanism at a fixed sigma (its epsilon is still dp-accounting's PLD)."""
    monkeypatch.setattr(ft.Config, "mechanism", lambda self: DpSgdMechanism(
        SIGMA, self.sample_rate, self.steps, self.delta, clip_norm=self.clip_norm))


def records() -> Records:
    texts = ["free prize call now", "see you at lunch", "win cash today", "ok thanks"] * 5
    labels = ["spam", "ham", "spam", "ham"] * 5
    return Records.from_strings(texts, labels, ["ham", "spam"])


def smoke(**changes) -> ft.Config:
    return ft.Config.smoke(8.0, document_type="SMS text message", **changes)


# ---------------------------------------------------------------- configuration
@pytest.mark.parametrize("field, value", [("sample_rate", 0.0), ("sample_rate", 1.5), ("steps", 0),
                                          ("clip_norm", -1.0), ("expected_batch_size", 0.0),
                                          ("lora_modules", "q_proj,q_proj"), ("lora_modules", "attention"),
                                          ("adapter_layers", 0), ("top_p", 0.0), ("delta", 1.0)])
def test_a_bad_parameter_is_refused_by_name(field, value):
    with pytest.raises(ParameterError) as error:
        ft.Config(epsilon=8.0, **{field: value})
    assert error.value.name == field


def test_the_method_is_declared_in_the_one_shape():
    assert ft.METHOD.name == "ft" and ft.METHOD.backends == ("local",) and ft.METHOD.takes_delta
    assert ft.STATEMENT.neighbouring == "add/remove" and ft.STATEMENT.unit == "record"
    assert "floating-point" in ft.STATEMENT.sensitivity and "Poisson" in ft.STATEMENT.sensitivity
    with pytest.raises(ParameterError) as error:
        ft.training_lm(object())
    assert error.value.name == "--backend"


# ---------------------------------------------------------------- the charge
def test_one_charge_for_the_whole_training_independent_of_labels_rows_and_texts(fixed_noise):
    small, large = smoke(n_per_class=2), smoke(n_per_class=5000)
    first = ft.charges(small, 2)
    assert len(first) == 1
    contract = first[0].contract
    assert contract.kind == "dpsgd" and contract.measure == "approx" and contract.neighbouring == "add/remove"
    assert contract.sensitivity == small.clip_norm and contract.delta == small.delta
    assert contract.epsilon == pytest.approx(dpsgd_epsilon(SIGMA, small.sample_rate, small.steps, small.delta),
                                             rel=1e-12)
    for config, labels, rows in ((large, 2, None), (small, 7, 10), (large, 0, 10_000)):
        assert [c.contract for c in ft.charges(config, labels, rows)] == [contract]
    assert ft.release_size(large, 2) == 10_000 and ft.release_size(small, 0) == 2


def test_the_plan_ledger_states_the_accountants_epsilon_at_the_budgets_delta(fixed_noise):
    config = ft.Config.smoke(20.0, document_type="SMS text message")
    ledger = open_ledger(config)
    for charge in ft.charges(config, 2):
        ledger.charge(charge)
    epsilon, delta = ledger.guarantee()
    assert delta == config.delta
    assert epsilon == pytest.approx(dpsgd_epsilon(SIGMA, config.sample_rate, config.steps, config.delta))


# ---------------------------------------------------------------- Poisson sampling
def test_poisson_membership_is_per_record_and_unchanged_by_adding_a_record():
    seeds = np.random.SeedSequence(5)
    sizes = [len(poisson_batch(seeds, t, 2000, 0.1)) for t in range(50)]
    assert len(set(sizes)) > 5                          # a random batch size, not a fixed one
    assert abs(np.mean(sizes) - 200) < 3 * math.sqrt(2000 * 0.1 * 0.9 / 50)
    for t in range(5):
        with_one_more = poisson_batch(seeds, t, 2001, 0.1)
        assert list(with_one_more[with_one_more < 2000]) == list(poisson_batch(seeds, t, 2000, 0.1))


# ---------------------------------------------------------------- one DP-SGD step
def _adapter(tiny_lm, bf16=False):
    torch.manual_seed(0)
    return AdapterLM(tiny_lm.model, tiny_lm.tokenizer, adapter_layers=1, modules=parse_modules("q_proj,v_proj"),
                     rank=2, alpha=4.0, bf16=bf16, max_text_tokens=8)


def _manual_clipped_sum(adapter, states, next_ids, weights, clip):
    names = [n for n, p in adapter.top.named_parameters() if p.requires_grad]
    total = {n: torch.zeros_like(p) for n, p in adapter.top.named_parameters() if p.requires_grad}
    for i in range(states.shape[0]):
        adapter.top.zero_grad()
        adapter.top(states[i:i + 1], next_ids[i:i + 1], weights[i:i + 1]).sum().backward()
        grads = {n: p.grad.detach().clone() for n, p in adapter.top.named_parameters() if n in names}
        norm = torch.sqrt(sum((g ** 2).sum() for g in grads.values()))
        for n in names:
            total[n] += grads[n] * min(1.0, clip / (float(norm) + 1e-6))
    adapter.top.zero_grad()
    return total


def test_one_step_is_the_clipped_per_record_sum_over_the_public_batch_size(tiny_lm, monkeypatch):
    adapter = _adapter(tiny_lm)
    with torch.no_grad():   # B starts at zero in LoRA: give it weights so every adapter gradient is non-zero
        for name, p in adapter.top.named_parameters():
            if "lora_B" in name:
                p.normal_(0.0, 0.5)
    data = records()
    encoded = adapter.encode(data.texts[:6], [prefix_text("SMS", "ham")] * 6)
    states = adapter.lower_states(encoded)
    next_ids, weights = encoded.ids[:, 1:], encoded.weights
    clip = 0.05  # small: every record is clipped
    expected = _manual_clipped_sum(adapter, states, next_ids, weights, clip)
    before = adapter.top.adapter_state()
    monkeypatch.setattr("dpkit.ft.dpsgd.torch.optim.Adam", lambda params, lr: torch.optim.SGD(params, lr=lr))
    plan = StepPlan(sample_rate=1.0, steps=1, noise_multiplier=1e-9, clip_norm=clip, expected_batch_size=4.0,
                    learning_rate=1.0, micro_batch=4)   # two micro-batches: 4 + 2 records, one sum
    train(adapter.top, states, next_ids, weights, plan, np.random.SeedSequence(0))
    after = adapter.top.adapter_state()
    for name, value in expected.items():
        torch.testing.assert_close(before[name] - after[name], value / 4.0, rtol=1e-4, atol=1e-7)
    assert sum(float(v.norm()) for v in expected.values()) > 0


def test_an_empty_batch_is_a_step_of_noise_alone(tiny_lm, monkeypatch):
    adapter = _adapter(tiny_lm)
    data = records()
    encoded = adapter.encode(data.texts[:4], [prefix_text("SMS", "ham")] * 4)
    states = adapter.lower_states(encoded)
    monkeypatch.setattr("dpkit.ft.dpsgd.torch.optim.Adam", lambda params, lr: torch.optim.SGD(params, lr=lr))
    monkeypatch.setattr("dpkit.ft.dpsgd.poisson_batch", lambda *a: np.array([], dtype=np.int64))
    before = adapter.top.adapter_state()
    plan = StepPlan(sample_rate=0.5, steps=1, noise_multiplier=2.0, clip_norm=1.0, expected_batch_size=10.0,
                    learning_rate=1.0)
    train(adapter.top, states, encoded.ids[:, 1:], encoded.weights, plan, np.random.SeedSequence(0))
    moved = torch.cat([(before[n] - v).reshape(-1) for n, v in adapter.top.adapter_state().items()])
    assert moved.numel() > 200
    assert float(moved.std()) == pytest.approx(2.0 * 1.0 / 10.0, rel=0.2)   # sigma C / B
    assert abs(float(moved.mean())) < 0.05


# ---------------------------------------------------------------- releases
def test_a_release_on_a_tiny_model_has_its_texts_labels_and_guarantee(tiny_lm, fixed_noise):
    config = smoke(n_per_class=3)
    release = ft.synthesize(records(), config, None, tiny_lm, np.random.SeedSequence(1))
    assert [r["label"] for r in release.records] == ["ham"] * 3 + ["spam"] * 3
    assert all(isinstance(r["text"], str) for r in release.records)
    assert release.epsilon == pytest.approx(dpsgd_epsilon(SIGMA, config.sample_rate, config.steps, config.delta))
    assert release.epsilon <= config.epsilon and release.delta == config.delta
    assert len(release.ledger.entries) == 1
    more = ft.synthesize(records(), smoke(n_per_class=9), None, tiny_lm, np.random.SeedSequence(1))
    assert len(more.records) == 18 and more.epsilon == release.epsilon   # more texts, the same epsilon


class Crash(RuntimeError):
    pass


def test_a_crash_after_the_first_checkpoint_resumes_there_without_a_second_charge(tiny_lm, fixed_noise, tmp_path,
                                                                                 monkeypatch):
    config = ft.Config.smoke(20.0, document_type="SMS text message", steps=4, checkpoint_every=2, n_per_class=2)
    seed = 3
    whole = ft.synthesize(records(), config, None, tiny_lm, np.random.SeedSequence(seed))

    real = ft.checkpoint

    def crashing(run, name, compute):
        value = real(run, name, compute)
        if name == "ft-step-2":
            raise Crash(name)
        return value

    monkeypatch.setattr(ft, "checkpoint", crashing)
    run = Run(tmp_path / "private", params={"m": "ft"}, seed=seed, ledger=open_ledger(config))
    with pytest.raises(Crash):
        ft.synthesize(records(), config, run, tiny_lm, np.random.SeedSequence(seed))
    run.close()
    monkeypatch.setattr(ft, "checkpoint", real)
    steps_run = []
    import dpkit.ft.dpsgd as dpsgd

    drawn = dpsgd.poisson_batch
    monkeypatch.setattr(dpsgd, "poisson_batch", lambda s, t, n, q: steps_run.append(t) or drawn(s, t, n, q))
    run = Run(tmp_path / "private", params={"m": "ft"}, seed=seed, ledger=open_ledger(config))
    assert len(run.ledger.entries) == 1                 # the saved charge, re-entered
    resumed = ft.synthesize(records(), config, run, tiny_lm, np.random.SeedSequence(seed))
    run.close()
    assert steps_run == [2, 3]                          # from the checkpoint on, nothing repeated
    assert len(resumed.ledger.entries) == 1             # no second charge
    assert resumed.epsilon == whole.epsilon
    assert [r["text"] for r in resumed.records] == [r["text"] for r in whole.records]   # a seeded run is one run
    steps_run.clear()
    run = Run(tmp_path / "private", params={"m": "ft"}, seed=seed, ledger=open_ledger(config))
    again = ft.synthesize(records(), config, run, tiny_lm, np.random.SeedSequence(seed))
    run.close()
    assert steps_run == [] and again.records == resumed.records   # a finished run trains and samples nothing


def test_the_public_path_reads_no_record_and_writes_the_releases_sizes_without_training(tiny_lm, monkeypatch):
    """The reference a release is scored against: same model, prefixes, sampling and sizes; no record, no step."""
    import inspect

    assert "records" not in inspect.signature(ft.public_path_texts).parameters
    monkeypatch.setattr(ft, "train", lambda *a, **k: pytest.fail("the public path must not train"))
    config = smoke(n_per_class=3)
    texts = ft.public_path_texts(("ham", "spam"), config, tiny_lm, np.random.SeedSequence(5))
    assert [t["label"] for t in texts] == ["ham"] * 3 + ["spam"] * 3
    again = ft.public_path_texts(("ham", "spam"), config, tiny_lm, np.random.SeedSequence(5))
    assert texts == again                                   # seeded: the same texts
    other = ft.public_path_texts(("ham", "spam"), config, tiny_lm, np.random.SeedSequence(6))
    assert [t["text"] for t in other] != [t["text"] for t in texts]
