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


class _Counting:
    """A local Backend whose answers depend on the seed, with a real response cache."""

    @staticmethod
    def make(cache_dir):
        from dpkit.backends.base import Backend

        class Seeded(Backend):
            name = "seeded"
            remote = False

            def _generate(self, chats, params):
                return [f"answer {params.seed if params.temperature else 'greedy'} {len(str(c))}" for c in chats]

        return Seeded("m", cache=ResponseCache(cache_dir))


def _cache_text(cache_dir) -> str:
    return "".join(p.read_text() for p in cache_dir.rglob("*.json"))


def test_release_mode_writes_no_seed_to_the_cache(tmp_path):
    """Reliability-2: release mode wrote the LLM's sampling seed into ~/.cache/dpkit/responses."""
    from dpkit.backends.cache import release_mode

    backend = _Counting.make(tmp_path / "c")
    with release_mode():
        backend.generate_batch(["p1", "p2"], temperature=0.7, seed=123456789)
    assert len(backend.cache) == 0 and "123456789" not in _cache_text(tmp_path / "c")
    with release_mode():
        backend.generate_batch(["p1"], temperature=0.0, seed=987654321)          # greedy: the seed is irrelevant
    assert len(backend.cache) == 1 and "987654321" not in _cache_text(tmp_path / "c")
    assert '"seed"' not in _cache_text(tmp_path / "c")
    backend.generate_batch(["p1"], temperature=0.7, seed=555)                     # reproducible mode: kept
    assert len(backend.cache) == 2 and '"seed": 555' in _cache_text(tmp_path / "c")


def test_a_release_mode_run_leaves_no_seed_in_the_cache(tmp_path):
    """The generation loop of a run without a seed (release mode) caches nothing seeded."""
    from dpkit.runs import Run, generate_records

    backend = _Counting.make(tmp_path / "c")
    generate_records(Run(tmp_path / "release", params={}, seed=None), backend, {"a": "p1", "b": "p2"},
                     temperature=0.7, seed=424242)
    assert len(backend.cache) == 0 and "424242" not in _cache_text(tmp_path / "c")
    generate_records(Run(tmp_path / "seeded", params={}, seed=3), backend, {"a": "p1"}, temperature=0.7, seed=77)
    assert len(backend.cache) == 1
