"""One interface for text generation: the local model, OpenAI or Anthropic.

>>> backend = get_backend()                      # local SmolLM2 (or $DPKIT_BACKEND)
>>> from dpkit.privacy.marks import Public
>>> backend.generate(Public("Name a colour."), max_new_tokens=8)   # doctest: +SKIP

``get_backend(name, model, **opts)`` picks the implementation from ``name`` or
the environment variable ``DPKIT_BACKEND`` (``local`` when unset) and the model
from ``model`` or ``DPKIT_MODEL``. API keys come only from ``OPENAI_API_KEY`` /
``ANTHROPIC_API_KEY``.

Remote backends accept only sealed :class:`~dpkit.privacy.marks.Public` or
:class:`~dpkit.privacy.marks.Privatized` text (see :mod:`dpkit.backends.guard`);
build prompts with :func:`dpkit.privacy.marks.compose_prompt`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from dpkit import runtime
from dpkit.backends.base import Backend, BackendError, GenerationParams
from dpkit.backends.cache import ResponseCache, cache_key
from dpkit.backends.guard import PrivateTextError, require_sendable
from dpkit.backends.local import LocalBackend
from dpkit.backends.remote import AnthropicBackend, OpenAIBackend, RemoteBackend
from dpkit.validate import ParameterError, check_int

BACKENDS: dict[str, type[Backend]] = {
    "local": LocalBackend,
    "openai": OpenAIBackend,
    "anthropic": AnthropicBackend,
}

__all__ = [
    "AnthropicBackend", "Backend", "BackendError", "GenerationParams", "LocalBackend",
    "OpenAIBackend", "PrivateTextError", "RemoteBackend",
    "ResponseCache", "default_cache", "get_backend",
    "require_sendable", "cache_key",
]


def default_cache() -> ResponseCache:
    """The shared response cache under :func:`dpkit.runtime.cache_dir` (``responses/``)."""
    return ResponseCache(runtime.cache_dir() / "responses")


def _resolve_cache(cache: Any) -> ResponseCache | None:
    if cache is True:
        return default_cache()
    if cache is False or cache is None:
        return None
    if isinstance(cache, ResponseCache):
        return cache
    if isinstance(cache, (str, os.PathLike)):
        return ResponseCache(Path(cache))
    raise ParameterError("cache", cache, "must be True (default cache), False/None, a folder or a ResponseCache")


def get_backend(name: str | None = None, model: str | None = None, *, cache: Any = True,
                batch_size: int | None = None, runtime: str | None = None, **opts: Any) -> Backend:
    """Build a backend.

    ``name``: ``"local"``, ``"openai"`` or ``"anthropic"``; ``None`` reads
    ``DPKIT_BACKEND`` (default ``"local"``). ``model``: ``None`` reads
    ``DPKIT_MODEL``, else the backend's default (bundled SmolLM2 locally).
    ``cache``: ``True`` for the shared on-disk response cache, ``False``/``None``
    for none, or a folder / :class:`ResponseCache`. ``batch_size``: prompts per
    forward pass of the local model; API backends send each prompt as its own
    request (up to ``concurrency`` at once), so it is validated and not passed to
    them -- one call works for every backend. Other options go to the class:
    local -- ``device``, ``strict``; remote -- ``base_url``, ``timeout``,
    ``max_retries``, ``concurrency``. ``runtime``: the local model's runtime,
    ``"auto"`` / ``"llamacpp"`` / ``"torch"`` (``None`` reads ``DPKIT_RUNTIME``;
    see :mod:`dpkit.backends.local`); API backends ignore it.
    """
    if name is None:
        name = os.environ.get("DPKIT_BACKEND") or "local"
    if name not in BACKENDS:
        raise ParameterError("name", name, f"must be one of {sorted(BACKENDS)} (or set DPKIT_BACKEND)")
    if model is None:
        model = os.environ.get("DPKIT_MODEL") or None
    if batch_size is not None:
        batch_size = check_int("batch_size", batch_size, minimum=1)
        if name == "local":
            opts["batch_size"] = batch_size
    if name == "local":
        opts["runtime"] = runtime
    return BACKENDS[name](model, cache=_resolve_cache(cache), **opts)
