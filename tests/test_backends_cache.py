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


def test_answers_of_two_servers_are_never_mixed_in_the_cache(tmp_path, monkeypatch):
    from dpkit.backends import OpenAIBackend

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-key-for-namespace")
    a = OpenAIBackend("m", base_url="http://127.0.0.1:1/v1")
    b = OpenAIBackend("m", base_url="http://user:secret@127.0.0.1:2/v1")
    assert a._cache_namespace() != b._cache_namespace()
    assert "secret" not in b._cache_namespace() and a._cache_namespace().startswith("openai@")
