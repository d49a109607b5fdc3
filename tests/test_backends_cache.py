"""The response cache: keys cover every part of a request; entries are written atomically."""

from __future__ import annotations

from dpkit.backends import ResponseCache, cache_key


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
