"""Backoff with seeded jitter, the retry loop, and the response cache."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpkit.backends import BackendError, ResponseCache, RetryPolicy, cache_key
from dpkit.backends.retry import call_with_retries
from dpkit.validate import ParameterError


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 12), st.floats(0.01, 5), st.floats(0.01, 100), st.integers(0, 2**32 - 1))
def test_delay_lies_in_the_jitter_window(attempt, base, cap, seed):
    policy = RetryPolicy(base_delay=base, max_delay=cap)
    wait = policy.delay(attempt, np.random.default_rng(seed))
    window = min(cap, base * 2 ** attempt)
    assert window / 2 <= wait <= window


def test_delays_grow_are_seeded_and_honour_retry_after():
    policy = RetryPolicy(base_delay=1.0, max_delay=30.0)
    first = [policy.delay(k, np.random.default_rng(7)) for k in range(5)]
    again = [policy.delay(k, np.random.default_rng(7)) for k in range(5)]
    assert first == again
    assert all(b > a for a, b in zip(first[:4], first[1:4]))  # windows [1,2],[2,4],[4,8]... are disjoint
    assert policy.delay(0, np.random.default_rng(0), retry_after=12.0) == 12.0
    assert policy.delay(0, np.random.default_rng(0), retry_after=100.0) == 30.0
    with pytest.raises(ParameterError, match="max_retries"):
        RetryPolicy(max_retries=-1)


def test_retry_loop_retries_transient_errors_only():
    calls, waits = [], []

    def flaky():
        calls.append(1)
        if len(calls) < 3:
            raise TimeoutError("transient")
        return "ok"

    classify = lambda exc: (isinstance(exc, TimeoutError), None)  # noqa: E731
    out = call_with_retries(flaky, policy=RetryPolicy(max_retries=5, base_delay=0.5), rng=np.random.default_rng(0),
                            classify=classify, sleep=waits.append)
    assert out == "ok" and len(calls) == 3 and len(waits) == 2

    def broken():
        raise ValueError("bad request")

    with pytest.raises(BackendError, match="non-retryable error: ValueError"):
        call_with_retries(broken, policy=RetryPolicy(), rng=np.random.default_rng(0), classify=classify,
                          sleep=waits.append)

    def always():
        raise TimeoutError

    with pytest.raises(BackendError, match="after 3 attempts"):
        call_with_retries(always, policy=RetryPolicy(max_retries=2), rng=np.random.default_rng(0),
                          classify=classify, sleep=lambda s: None)


def test_cache_key_depends_on_every_component():
    base = dict(backend="openai", model="m", messages=[{"role": "user", "content": "p"}],
                params={"temperature": 0.0, "seed": 0})
    key = cache_key(**base)
    assert key == cache_key(**base) and len(key) == 64
    variants = [dict(base, backend="anthropic"), dict(base, model="m2"),
                dict(base, messages=[{"role": "user", "content": "q"}]),
                dict(base, messages=[{"role": "system", "content": "p"}]),
                dict(base, params={"temperature": 0.0, "seed": 1})]
    assert len({cache_key(**v) for v in variants} | {key}) == 6


def test_cache_roundtrip_and_counts(tmp_path):
    cache = ResponseCache(tmp_path)
    assert cache.get("ab" * 32) is None and cache.misses == 1
    cache.put("ab" * 32, "réponse", {"model": "m"})
    assert ResponseCache(tmp_path).get("ab" * 32) == "réponse"
    assert len(cache) == 1 and not list(tmp_path.rglob(".tmp-*"))
