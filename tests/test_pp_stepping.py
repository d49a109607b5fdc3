"""Grouped cached steps: the same logits, bit for bit, as the model's own forward; candidates-only clipping."""

import numpy as np
import pytest
import torch

from dpkit.privpred import DecodeSettings, decode_batch, get_template
from dpkit.privpred.sampling import _zbar, _zbar_candidates, sample_private_token


@pytest.mark.parametrize("rows", [0, 1, 5])
def test_clipping_the_candidates_only_gives_the_full_vocabulary_values(rows):
    gen = torch.Generator().manual_seed(rows)
    logits = torch.randn(rows, 3000, generator=gen) * 6
    idx = torch.sort(torch.randperm(3000, generator=gen)[:200]).values
    for denominator in (("expected", "actual") if rows else ("expected",)):
        full = _zbar(logits, 2.5, 4, denominator)[idx]
        part = _zbar_candidates(logits, 2.5, 4, denominator, idx)
        assert part.dtype == torch.float64 and torch.equal(full, part)
    # and the sampler draws the same tokens from the same seed as over the candidates of the full vector
    a = sample_private_token(logits, 2.5, 4, 0.7, np.random.default_rng(1), allowed=idx, size=20)
    from dpkit.privpred.sampling import _draw
    from dpkit.privacy.private_prediction import token_grid

    b = _draw(_zbar(logits, 2.5, 4, "expected"), 0.7, token_grid(4, 2.5), np.random.default_rng(1), idx, 20)
    assert np.array_equal(a, b)


# ------------------------------------------------------------- real model
@pytest.fixture(scope="module")
def lm():
    from dpkit.models import load_lm

    return load_lm()


def _prompts(lm, n):
    t = get_template("sentiment")
    reviews = ["A warm, funny film.", "Great acting, a story that stays with you for days.", "I loved it.",
               "Charming and smart.", "A joy."][:n]
    return [t.render(lm, t.private_message(x, "Positive")) for x in reviews], t.render(lm, t.public_message("Positive"))


@pytest.mark.slow
def test_grouped_steps_equal_the_models_forward_bit_for_bit(lm, monkeypatch):
    from dpkit.privpred import stepping
    from dpkit.privpred.rows import ModelRows, tokenize
    from dpkit.privpred.stepping import CachedRows, advance_groups, supports

    assert supports(lm)
    monkeypatch.setattr(stepping, "INITIAL_ROOM", 1)   # the buffers grow twice on the way
    private, public = _prompts(lm, 3)   # prompts of different lengths: the private rows are padded
    ref_pub, ref_pri = ModelRows(lm, *tokenize(lm, [public], None), True), ModelRows(lm, *tokenize(lm, private, None), True)
    pub = CachedRows(lm, *tokenize(lm, [public], None), max_new_tokens=4)
    pri = CachedRows(lm, *tokenize(lm, private, None), max_new_tokens=4)
    alone = CachedRows(lm, *tokenize(lm, [public], None), max_new_tokens=4)
    assert pri.padded and not pub.padded
    for restart in (False, True):
        if restart:
            for p in (ref_pub, ref_pri, pub, pri, alone):
                p.restart()
        for token in (42, 1000, 7):
            ref_pub.advance(token)
            ref_pri.advance(token)
            advance_groups([pri, pub], token)
            advance_groups([alone], token)
            assert torch.equal(pub.logits, ref_pub.logits) and torch.equal(pri.logits, ref_pri.logits)
            assert torch.equal(alone.logits, pub.logits)   # the public row never depends on the private rows
    assert pub.capacity == pub.prompt_len + 4
    advance_groups([pub], 5)
    with pytest.raises(RuntimeError, match="full"):
        advance_groups([pub], 5)


@pytest.mark.slow
def test_grouped_decoding_releases_the_same_tokens_as_the_models_forward(lm):
    private, public = _prompts(lm, 4)
    st = DecodeSettings(expected_batch_size=4, clip=5, temperature=1.5, max_private_tokens=6, max_new_tokens=5,
                        svt_threshold=0.7, svt_sigma=0.2, top_k=64, max_steps=14)
    a = decode_batch(lm, private, public, st, np.random.default_rng(11))
    b = decode_batch(lm, private, public, st, np.random.default_rng(11), grouped_steps=False)
    assert [e.token_ids for e in a.examples] == [e.token_ids for e in b.examples]
    assert [e.private for e in a.examples] == [e.private for e in b.examples]
    assert a.forward_passes == b.forward_passes and a.public_tokens > 0
