"""Private prediction decoding on llama.cpp (dpkit.privpred.llamacpp_engine), with the real bundled model.

The invariants of the PyTorch path, on the llama.cpp logits:
* the public row's logits do not depend on the private rows (bit for bit: none, some, other ones);
* each private row's logits are a function of its own prompt and the released tokens (the other prompts
  replaced or removed, the row cached or recomputed: bit for bit);
* replay: restart and the same released tokens, and decode_batch re-run with the same seed, give the same tokens;
* the ledger's charge does not depend on the runtime;
* the token ids are the PyTorch path's (the same tokenizer; llama.cpp's own tokenizer agrees).
Skipped (with the reason) only where llama-cpp-python is not importable.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from dpkit.models import llamacpp
from dpkit.privpred import DecodeSettings, decode_batch, get_template

pytestmark = pytest.mark.skipif(not llamacpp.available(),
                                reason="llama-cpp-python is not installed (make setup installs it)")

REVIEWS = ["A warm, funny film.", "I loved it.", "Dull.", "Great acting, a weak and very long plot " * 3]
OTHERS = ["The soundtrack alone is worth the ticket.", "Too loud."]
RELEASED = [504, 2102, 314, 253, 1345, 30]


@pytest.fixture(scope="module")
def lm():
    from dpkit.privpred.llamacpp_engine import load_private_llamacpp

    return load_private_llamacpp()


def _prompts(lm, reviews):
    t = get_template("sentiment")
    return [t.render(lm, t.private_message(x, "Positive")) for x in reviews]


def _public(lm):
    t = get_template("sentiment")
    return t.render(lm, t.public_message("Positive"))


def _rows(lm, texts, **kw):
    from dpkit.privpred.llamacpp_engine import LlamaCppPrivateRows

    options = dict(keep_last=None, max_new_tokens=8, cache_rows=16, chunk_rows=8)
    options.update(kw)
    return LlamaCppPrivateRows(lm, texts, **options)


def _row_traces(rows, tokens):
    """Every distinct row's logits at the prompt and after each released token: (rows, steps, vocab)."""
    out = [[logits.clone() for logits, _ in rows._row_logits()]]
    for token in tokens:
        for group in rows.step(token):
            group.advance(token)
        out.append([logits.clone() for logits, _ in rows._row_logits()])
    return torch.stack([torch.cat(step) for step in out], dim=1)


def test_token_ids_and_end_token_are_the_pytorch_paths(lm):
    texts = _prompts(lm, REVIEWS + ["naïve café — 日本語 😀, 3.14 $1,000"]) + [_public(lm)]
    for text in texts:
        assert lm.tokenizer(text, add_special_tokens=False)["input_ids"] == lm.llm.tokenize(text)
    assert lm.eos_token_ids == [lm.tokenizer.eos_token_id]
    assert lm.context_length == lm.llm.context_length and lm.vocab_size == len(lm.tokenizer)


def test_public_logits_do_not_depend_on_the_private_rows(lm):
    public_ids = lm.tokenizer([_public(lm)], add_special_tokens=False)["input_ids"]

    def trace(private):
        rows = _rows(lm, private) if private else None
        public = lm.group(public_ids, 8)
        out = [public.logits.clone()]
        for token in RELEASED:
            groups = (rows.step(token) if rows is not None else []) + [public]
            for group in groups:
                group.advance(token)
            out.append(public.logits.clone())
        return torch.cat(out)

    alone = trace([])
    for private in (_prompts(lm, REVIEWS), _prompts(lm, OTHERS), _prompts(lm, REVIEWS[:1])):
        assert torch.equal(trace(private), alone)
    # and through decode_batch: the public logits the sampler sees first
    st = DecodeSettings(expected_batch_size=2, clip=5.0, temperature=1.0, max_private_tokens=1, max_new_tokens=4)
    seen = []
    for private in ([], _prompts(lm, REVIEWS[:2]), _prompts(lm, OTHERS)):
        decode_batch(lm, private, _public(lm), st, np.random.default_rng(0),
                     on_step=lambda step, z: seen.append(z.clone()) if step == 0 else None)
    assert torch.equal(seen[0], alone[0]) and all(torch.equal(z, seen[0]) for z in seen)
    assert torch.equal(lm.next_token_logits([_public(lm)])[0], alone[0])


def test_a_private_rows_logits_depend_only_on_its_own_prompt_and_the_released_tokens(lm):
    a, rest = _prompts(lm, REVIEWS[:1])[0], _prompts(lm, REVIEWS[1:] + OTHERS)
    alone = _row_traces(_rows(lm, [a]), RELEASED)[0]
    beside = _row_traces(_rows(lm, [rest[2], a] + rest[:2]), RELEASED)[1]           # other prompts around it
    replaced = _row_traces(_rows(lm, [rest[3], a, rest[4]]), RELEASED)[1]            # the others replaced
    recomputed = _row_traces(_rows(lm, rest[:3] + [a], cache_rows=1, chunk_rows=2), RELEASED)[3]
    many = [f"{x} ({i})" for i, x in enumerate(REVIEWS[1:] * 4)]                      # > 512 prompt tokens in all
    crowded = _row_traces(_rows(lm, _prompts(lm, many[:7]) + [a] + _prompts(lm, many[7:])), RELEASED)[7]
    for other in (beside, replaced, recomputed, crowded):
        assert torch.equal(other, alone)
    assert not torch.equal(_row_traces(_rows(lm, rest[:1]), RELEASED)[0], alone)    # the logits read the prompt


def test_identical_prompts_are_decoded_once_and_counted(lm):
    a, b = _prompts(lm, REVIEWS[:2])
    rows = _rows(lm, [a, b, a])
    assert len(rows) == 3 and [count for _, count in rows.prompts] == [2, 1]
    stats = rows.statistics(2.0, None, lm.vocab_size, softmax=True)
    single = _rows(lm, [a]).statistics(2.0, None, lm.vocab_size, softmax=True)
    other = _rows(lm, [b]).statistics(2.0, None, lm.vocab_size, softmax=True)
    assert torch.equal(stats.clipped_sum, single.clipped_sum * 2 + other.clipped_sum)


def test_restart_replays_and_a_batch_rerun_gives_the_same_tokens(lm):
    rows = _rows(lm, _prompts(lm, REVIEWS))
    first = _row_traces(rows, RELEASED)
    rows.restart()
    assert torch.equal(_row_traces(rows, RELEASED), first)
    # the decodes on bare prompts (no chat template: ~10 tokens, not ~60): the run with one cached row
    # re-encodes the other rows from their start at every step, and the comparison does not depend on the prompts
    private, public = [f"Review: {x}\nSentiment: Positive\nText:" for x in REVIEWS], "Sentiment: Positive\nText:"
    st = DecodeSettings(expected_batch_size=4, clip=10.0, temperature=2.0, max_private_tokens=6,
                        max_new_tokens=4, top_k=50, svt_threshold=0.5, svt_sigma=0.2)
    a = decode_batch(lm, private, public, st, np.random.default_rng(7)).to_record()
    assert decode_batch(lm, private, public, st, np.random.default_rng(7)).to_record() == a
    assert len(a["examples"]) >= 2                                                   # restarts happened
    assert a["public_tokens"] > 0                                                    # and SVT's free tokens
    chunked = DecodeSettings(**{**st.to_dict(), "private_cache_rows": 1, "private_chunk_rows": 2})
    assert decode_batch(lm, private, public, chunked, np.random.default_rng(7)).to_record() == a


def test_the_runtime_is_chosen_and_named(lm, monkeypatch):
    from dpkit.backends.local import LocalBackend
    from dpkit.privpred import LlamaCppPrivateLM, resolve_local_lm, runtime_name

    monkeypatch.setenv("DPKIT_RUNTIME", "llamacpp")
    assert runtime_name() == "llamacpp" and isinstance(resolve_local_lm(None), LlamaCppPrivateLM)
    assert runtime_name(LocalBackend(runtime="llamacpp")) == "llamacpp"
    assert isinstance(resolve_local_lm(LocalBackend(runtime="llamacpp")), LlamaCppPrivateLM)
    assert runtime_name(lm) == "llamacpp" and resolve_local_lm(lm) is lm
    monkeypatch.setenv("DPKIT_RUNTIME", "torch")
    assert runtime_name() == "torch" and runtime_name("local") == "torch"
    assert runtime_name(LocalBackend(runtime="torch")) == "torch"
    monkeypatch.setenv("DPKIT_RUNTIME", "auto")
    assert runtime_name(None, "torch") == "torch"


@pytest.mark.slow
def test_the_ledger_and_guarantee_do_not_depend_on_the_runtime(lm):
    from dpkit.models import load_lm
    from dpkit.privpred import PrivatePredictionConfig, generate_synthetic

    config = PrivatePredictionConfig(epsilon=8.0, delta=1e-5, expected_batch_size=4.0, temperature=2.0, max_new_tokens=4,
                                     max_examples_per_batch=1)
    records = ["A warm, funny film.", "Dull.", "I loved it.", "Too loud."]
    results = [generate_synthetic(records, get_template("sentiment"), config, labels=[1, 0, 1, 0],
                                  label_names=["negative", "positive"], n_batches=2, model=model, seed=3,
                                  max_batches=1)
               for model in (lm, load_lm())]
    ledgers = [r.ledger.to_dict() for r in results]
    assert ledgers[0] == ledgers[1] and results[0].guarantee == results[1].guarantee
    assert [b["batch_id"] for b in results[0].batches] == [b["batch_id"] for b in results[1].batches]
