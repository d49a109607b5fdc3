"""Private rows one at a time: a row's logits are its own (bit for bit, alone or beside others), memory is
bounded by public parameters, and neither the chunk size nor the cache size changes the released tokens.

Regression of privacy-2 findings F2 (a hash batch's private size decoded in one forward pass: memory grew
~31 MB per record) and F3 (a private row's float32 logits moved ~1e-5 with the other rows of the batch).
"""

import numpy as np
import pytest
import torch

from dpkit.privpred import DecodeSettings, decode_batch, get_template
from dpkit.privpred.private_rows import PrivateRows, clip_rows
from dpkit.privpred.rows import advance
from dpkit.validate import ParameterError


@pytest.fixture(scope="module")
def lm():
    from dpkit.models import load_lm

    return load_lm()


def _prompts(lm):
    t = get_template("sentiment")
    reviews = ["A warm, funny film.", "I loved it.",
               "A long, winding, occasionally brilliant and often exasperating film " * 4, "Dull."]
    return [t.render(lm, t.private_message(x, "Positive")) for x in reviews], t.render(lm, t.public_message("Positive"))


def _rows(lm, texts, **kw):
    options = dict(keep_last=None, max_new_tokens=8, cache_rows=16, chunk_rows=8)
    options.update(kw)
    return PrivateRows(lm, texts, **options)


def _logits_of_every_row(rows: PrivateRows) -> list[torch.Tensor]:
    return [logits.clone() for logits, _ in rows._row_logits()]


def test_clip_rows_on_candidates_equals_clipping_the_whole_vocabulary():
    gen = torch.Generator().manual_seed(0)
    logits = torch.randn(3, 2000, generator=gen) * 5
    idx = torch.sort(torch.randperm(2000, generator=gen)[:50]).values
    assert torch.equal(clip_rows(logits, 2.0, idx), clip_rows(logits, 2.0)[:, idx])
    full = clip_rows(logits, 2.0)
    assert full.dtype == torch.float64 and float(full.max()) == 2.0 and float(full.min()) >= -2.0


@pytest.mark.slow
def test_a_private_rows_logits_are_bit_identical_alone_or_beside_other_rows(lm):
    private, _ = _prompts(lm)
    a, others = private[0], private[1:]   # the others are shorter and longer than row a
    alone = _rows(lm, [a])
    beside = _rows(lm, [others[1], a] + others)  # a is not first; rows of other lengths around it
    recomputed = _rows(lm, others + [a], cache_rows=1, chunk_rows=2)  # a is recomputed at every step
    for token in (1000, 42, 7, 300):  # several cached steps
        for rows in (alone, beside, recomputed):
            advance(rows.step(token), token)
        mine = _logits_of_every_row(alone)[0]
        assert torch.equal(mine, _logits_of_every_row(beside)[1])
        assert torch.equal(mine, _logits_of_every_row(recomputed)[-1])
    for rows in (alone, beside, recomputed):  # and again after a restart (next example)
        rows.restart()
        advance(rows.step(5), 5)
    assert torch.equal(_logits_of_every_row(alone)[0], _logits_of_every_row(beside)[1])
    assert torch.equal(_logits_of_every_row(alone)[0], _logits_of_every_row(recomputed)[-1])


@pytest.mark.slow
def test_identical_prompts_are_decoded_once_and_counted(lm):
    private, _ = _prompts(lm)
    rows = _rows(lm, [private[0]] * 50 + [private[1]])
    assert len(rows) == 51 and len(rows.prompts) == 2 and len(rows.kept) == 2
    one = _rows(lm, [private[0]])
    stats = rows.statistics(2.0, None, int(one.kept[0].logits.shape[-1]), softmax=True)
    single = one.statistics(2.0, None, int(one.kept[0].logits.shape[-1]), softmax=True)
    other = _rows(lm, [private[1]]).statistics(2.0, None, int(one.kept[0].logits.shape[-1]), softmax=True)
    assert torch.equal(stats.clipped_sum, 50 * single.clipped_sum + other.clipped_sum)
    assert torch.allclose(stats.softmax_sum.sum(), torch.tensor(51.0, dtype=torch.float64))


@pytest.mark.slow
def test_memory_is_bounded_by_public_parameters(lm):
    private, _ = _prompts(lm)
    rows = _rows(lm, private * 3, cache_rows=2, chunk_rows=1)
    assert len(rows.kept) == 2   # at most cache_rows keep a cache, whatever the batch's size
    with pytest.raises(ParameterError, match="private_chunk_rows"):
        _rows(lm, private, chunk_rows=0)
    with pytest.raises(ParameterError, match="private_cache_rows"):
        DecodeSettings(expected_batch_size=2, clip=5, temperature=1.0, max_private_tokens=2, private_cache_rows=0)


@pytest.mark.slow
def test_released_tokens_do_not_depend_on_chunk_or_cache_size(lm):
    private, public = _prompts(lm)
    batch = private + private[:2]   # duplicates too
    outputs = []
    for cache_rows, chunk_rows in ((16, 8), (1, 1), (2, 3)):
        st = DecodeSettings(expected_batch_size=4, clip=5, temperature=1.5, max_private_tokens=5, max_new_tokens=4,
                            svt_threshold=0.7, svt_sigma=0.2, top_k=64, max_steps=10,
                            private_cache_rows=cache_rows, private_chunk_rows=chunk_rows)
        res = decode_batch(lm, batch, public, st, np.random.default_rng(11))
        outputs.append(([e.token_ids for e in res.examples], [e.private for e in res.examples]))
    assert outputs[0] == outputs[1] == outputs[2]
    assert any(any(flags) for flags in outputs[0][1])   # private tokens were drawn


@pytest.mark.slow
def test_adding_a_prompt_moves_the_sums_by_its_own_row_only(lm):
    """privacy-2 F3's measure: the change of the clipped-logit sum that is NOT the added row's own
    contribution was 8.3e-7 (3,600 times the contract's grid slack); now it is float64 rounding."""
    private, _ = _prompts(lm)
    a, b, c_long = private[0], private[1], private[2]
    vocab = int(_rows(lm, [a]).kept[0].logits.shape[-1])
    pair = _rows(lm, [a, b]).statistics(2.0, None, vocab, softmax=True)
    three = _rows(lm, [a, b, c_long]).statistics(2.0, None, vocab, softmax=True)
    own = _rows(lm, [c_long]).statistics(2.0, None, vocab, softmax=True)
    spill = (three.clipped_sum - pair.clipped_sum - own.clipped_sum).abs().max().item()
    grid_slack = 2.0 ** -30 * 2.0 / 8
    assert spill < 1e-3 * grid_slack
    assert (three.softmax_sum - pair.softmax_sum - own.softmax_sum).abs().max().item() < 1e-15


@pytest.mark.slow
def test_recomputed_rows_come_chunk_by_chunk(lm, monkeypatch):
    private, _ = _prompts(lm)
    rows = _rows(lm, private + [p + " Again." for p in private], cache_rows=2, chunk_rows=3)
    chunks = []
    original = PrivateRows._recomputed

    def spy(self, chunk):
        chunks.append(len(chunk))
        return original(self, chunk)

    monkeypatch.setattr(PrivateRows, "_recomputed", spy)
    advance(rows.step(42), 42)
    rows.statistics(2.0, torch.arange(10), int(rows.kept[0].logits.shape[-1]), softmax=False)
    assert len(rows.kept) == 2 and chunks == [3, 3]   # 8 distinct prompts: 2 cached, 6 recomputed 3 at a time
