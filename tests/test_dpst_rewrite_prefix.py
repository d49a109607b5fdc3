"""DP-ST's rewrite evaluates the shared few-shot prefix once: same texts as a full prefill, on the real model."""

import numpy as np
import pytest

from dpkit.backends import get_backend
from dpkit.dpst.hashing import toy_corpus
from dpkit.dpst.privatize import DPST
from dpkit.dpst.reconstruct import reconstruct, reconstruction_messages
from dpkit.models import llamacpp
from dpkit.models.llamacpp import MIN_CALL_TOKENS, shared_prefix_length

pytestmark = pytest.mark.skipif(not llamacpp.available(), reason="llama-cpp-python is not installed")

CORPUS, EMBEDDER = toy_corpus(k=6)
TEXTS = ["The mayor opened a new bridge and the council approved the budget.",
         "Doctors warned that the flu spread quickly in schools this winter.",
         "The team won the final and fans celebrated in the square.",
         "Researchers found that the new drug reduced pain in patients.",
         "Farmers lost money after the storm destroyed their crops."]


def _docs(epsilon=4.0):
    m = DPST(CORPUS, epsilon, "document", slots=2, embedder=EMBEDDER,
             scorer=lambda t: np.array([len(x) for x in t], float))
    return m.privatize_batch(TEXTS, np.random.default_rng(0))


def test_shared_prefix_length_leaves_every_row_a_token_of_its_own():
    assert shared_prefix_length([[1, 2, 3, 4], [1, 2, 3, 5], [1, 2, 9]], own=1) == 2
    assert shared_prefix_length([[1, 2, 3], [1, 2, 3]], own=1) == 2   # identical prompts: the last token is per row
    assert shared_prefix_length([[1, 2, 3]], own=0) == 2
    assert shared_prefix_length([[7], [7, 8]], own=1) == 0
    assert shared_prefix_length([[1, 2], [3, 4]], own=1) == 0
    long = list(range(300))
    assert shared_prefix_length([long, long[:250] + [1] * 40]) == 290 - MIN_CALL_TOKENS   # own part >= 64 tokens
    assert shared_prefix_length([long[:70], long[:70]]) == 70 - MIN_CALL_TOKENS


@pytest.fixture(scope="module")
def backend():
    backend = get_backend("local", cache=False, runtime="llamacpp", batch_size=2)
    assert backend.runtime == "llamacpp"
    return backend


def test_the_few_shot_prefix_is_shared_by_the_rewrite_prompts(backend):
    lm = backend.generator
    ids = [lm.tokenize(lm.chat(reconstruction_messages(d, "news sentence"))) for d in _docs()]
    shared = shared_prefix_length(ids)
    assert shared >= MIN_CALL_TOKENS and shared == min(len(i) for i in ids) - MIN_CALL_TOKENS
    assert shared_prefix_length(ids, own=1) > 0.9 * min(len(i) for i in ids)   # the few-shot part: >90% of a prompt


@pytest.mark.parametrize("temperature", [0.0, 0.8])
def test_cached_prefix_gives_the_texts_of_a_full_prefill(backend, monkeypatch, temperature):
    # 3 documents in batches of 2 (a full batch and a partial one), 8 tokens: each full prefill of the few-shot
    # prompt is most of the cost, and every path below (new store, reuse, cut back, extended) is still taken
    docs = _docs()[:3]
    kwargs = dict(max_new_tokens=8, temperature=temperature, seed=3)
    cached = reconstruct(docs, backend, document_type="news sentence", **kwargs)
    again = reconstruct(docs, backend, document_type="news sentence", **kwargs)     # the store is reused
    other = reconstruct(docs[:2], backend, document_type="health news tweet", **kwargs)  # a different prefix
    back = reconstruct(docs, backend, document_type="news sentence", **kwargs)      # store cut back and extended
    monkeypatch.setattr(backend.generator, "share_prefix", False)                # every prompt in full
    full = reconstruct(docs, backend, document_type="news sentence", **kwargs)
    full_other = reconstruct(docs[:2], backend, document_type="health news tweet", **kwargs)
    assert all(t.strip() for t in cached)
    assert cached == again == back == full
    assert other == full_other


def test_cached_prefix_gives_the_logits_of_each_prompt_alone_in_one_call(backend):
    lm = backend.generator
    ids = [lm.tokenize(lm.chat(reconstruction_messages(d, "news sentence"))) for d in _docs()]
    alone = np.concatenate([lm.context(1, len(p)).feed([(0, p)]) for p in ids])
    shared = shared_prefix_length(ids)
    for prefix in (ids[0][:shared], ids[0][:shared - 5], ids[0][:shared]):   # new store, cut back, extended
        ctx = lm.prefixed_context(len(ids), max(map(len, ids)), prefix)
        cached = np.concatenate([ctx.feed([(r, p[len(prefix):])]) for r, p in enumerate(ids)])
        assert ctx.positions[:len(ids)] == [len(p) for p in ids]
        np.testing.assert_array_equal(cached, alone)
    # the reason for MIN_CALL_TOKENS: a call of fewer tokens changes the logits
    ctx = lm.context(1, len(ids[0]))
    ctx.feed([(0, ids[0][:-10])])
    assert not np.array_equal(ctx.feed([(0, ids[0][-10:])])[0], alone[0])


def test_a_kept_prefix_that_fits_every_row_is_used_without_evaluating_more(backend, monkeypatch):
    lm = backend.generator
    ids = [lm.tokenize(lm.chat(reconstruction_messages(d, "news sentence"))) for d in _docs()]
    kept = shared_prefix_length(ids) - 3
    ctx = lm.prefixed_context(len(ids), max(map(len, ids)) + 4, ids[0][:kept])   # the store: a shorter prefix
    fed = []
    feed = ctx.feed
    monkeypatch.setattr(ctx, "feed", lambda items: fed.append([(s, len(t)) for s, t in items]) or feed(items))
    together = lm.generate_ids(ids, max_new_tokens=4)
    assert lm._context is ctx and ctx.prefix == tuple(ids[0][:kept])              # kept as it was
    assert fed[:len(ids)] == [[(row, len(p) - kept)] for row, p in enumerate(ids)]  # only the rows' own parts
    monkeypatch.undo()
    assert together == [lm.generate_ids([p], max_new_tokens=4)[0] for p in ids]
