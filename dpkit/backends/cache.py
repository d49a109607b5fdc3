"""An on-disk response cache: the same request never costs twice.

The key is the SHA-256 of a canonical JSON of (backend, model, chat messages,
generation parameters), so any change in any of them is a different entry.
Entries are one small JSON file each (``<root>/<2 hex>/<64 hex>.json``), written
atomically (temporary file + rename), so a crash never leaves a half-written
entry and several processes may share one cache. An entry holds the response
text and the backend/model/parameters -- never the prompt, never an API key.

Seeds: in release mode (:func:`release_mode`, set by a run without a seed) no
seed is written: a greedy request (``temperature == 0``, which the seed does not
change) is cached without it, and a sampled request is not cached at all, so
nothing under the cache -- not even a key, a hash from which a 32-bit seed could
be searched -- can regenerate a release's randomness. In reproducible mode the
seed is part of the key and the entry.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any, Mapping, Sequence

from dpkit.io import atomic_write_text, dumps
from dpkit.runtime import in_release_mode, release_mode  # noqa: F401 (release_mode: the block a run opens)
from dpkit.validate import ParameterError


def cacheable_params(params: Mapping[str, Any]) -> dict[str, Any] | None:
    """The generation parameters a cache key and entry may hold, or None when the request must not be cached.

    Outside release mode: all of them (the seed included). In release mode: a
    greedy request (``temperature`` 0) without its seed, which does not change
    the answer; a sampled one is not cached (None).
    """
    params = dict(params)
    if not in_release_mode():
        return params
    if not params.get("temperature"):
        params.pop("seed", None)
        return params
    return None


def cache_key(backend: str, model: str, messages: Sequence[Mapping[str, Any]],
              params: Mapping[str, Any]) -> str:
    """Hex SHA-256 of the canonical request description."""
    payload = {
        "v": 1,
        "backend": backend,
        "model": model,
        "messages": [{"role": m["role"], "content": str(m["content"])} for m in messages],
        "params": dict(params),
    }
    blob = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class ResponseCache:
    """Responses stored under ``root``; :meth:`get` returns ``None`` on a miss."""

    def __init__(self, root: str | os.PathLike):
        if not isinstance(root, (str, os.PathLike)) or not os.fspath(root):
            raise ParameterError("root", root, "must be a folder path")
        self.root = Path(root)
        if self.root.exists() and not self.root.is_dir():
            raise ParameterError("root", str(self.root), "is a file; the cache needs a folder")
        self.root.mkdir(parents=True, exist_ok=True)
        self.hits = 0
        self.misses = 0

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> str | None:
        path = self._path(key)
        try:
            entry = json.loads(path.read_text(encoding="utf-8"))
        except (FileNotFoundError, json.JSONDecodeError, UnicodeDecodeError):
            self.misses += 1
            return None
        if not isinstance(entry, dict) or not isinstance(entry.get("text"), str) or not entry["text"]:
            self.misses += 1
            return None
        self.hits += 1
        return entry["text"]

    def put(self, key: str, text: str, meta: Mapping[str, Any] | None = None) -> None:
        if not isinstance(text, str) or not text:
            raise ParameterError("text", type(text).__name__, "must be a non-empty answer (empty answers are not cached)")
        entry = {"text": str(text), **(dict(meta) if meta else {})}
        atomic_write_text(self._path(key), dumps(entry))

    def __len__(self) -> int:
        return sum(1 for _ in self.root.glob("??/*.json"))

    def __repr__(self) -> str:
        return f"ResponseCache({str(self.root)!r})"
