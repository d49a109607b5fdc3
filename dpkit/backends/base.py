"""The generation interface shared by the local model and the API models.

``backend.generate(prompt, ...) -> str`` and ``backend.generate_batch(prompts, ...)
-> list[str]``; a prompt is a string or a list of chat messages
(``{"role": "system"|"user"|"assistant", "content": text}``).

Every request goes through the same steps, in this order:

1. arguments are validated (:mod:`dpkit.validate`);
2. the privatized-text guard (:mod:`dpkit.backends.guard`): remote backends
   refuse any content that is not ``Public`` or ``Privatized`` -- all prompts of
   a batch are checked before the first one is sent;
3. the response cache is consulted (key: backend, model, messages, parameters);
4. only the misses are generated, then stored in the cache.

A backend also keeps a tally of the provenance of the privatized text it was
given (:meth:`Backend.describe`), so a run manifest can state what reached a model.
"""

from __future__ import annotations

import inspect
import json
import threading
from abc import ABC, abstractmethod
from dataclasses import asdict, dataclass
from typing import Any, Sequence

from dpkit.backends.cache import ResponseCache, cache_key, cacheable_params
from dpkit.backends.guard import PromptLike, normalize_messages, plain, require_sendable
from dpkit.models.voice import Voice, cut_at_stop, with_voice
from dpkit.privacy.marks import Privatized, Public, is_sealed
from dpkit.validate import ParameterError, check_int, check_positive


class BackendError(RuntimeError):
    """A generation request failed for good (non-retryable error, retries exhausted, or no text)."""


@dataclass(frozen=True)
class GenerationParams:
    """Decoding settings; all of them are part of the cache key."""

    max_new_tokens: int = 64
    temperature: float = 0.0
    top_p: float | None = None
    seed: int = 0
    stop: tuple[str, ...] = ()       # from a Voice (dpkit.models.voice); empty ones stay out of cache keys
    banned: tuple[str, ...] = ()
    min_new_tokens: int = 0

    def key_params(self) -> dict:
        """The parameters as a cache key holds them: the voice's fields only when they are set
        (so a request without a voice keeps the key it always had)."""
        out = asdict(self)
        for name in ("stop", "banned", "min_new_tokens"):
            if not out[name]:
                out.pop(name)
            elif isinstance(out[name], tuple):
                out[name] = list(out[name])
        return out

    def voice_kwargs(self) -> dict:
        """``stop``, ``banned``, ``min_new_tokens`` for a local generator, only those that are set."""
        return {k: v for k, v in (("stop", self.stop), ("banned", self.banned),
                                  ("min_new_tokens", self.min_new_tokens)) if v}

    @classmethod
    def checked(cls, max_new_tokens: int = 64, temperature: float = 0.0,
                top_p: float | None = None, seed: int = 0, voice=None) -> "GenerationParams":
        max_new_tokens = check_int("max_new_tokens", max_new_tokens, minimum=1)
        temperature = check_positive("temperature", temperature, allow_zero=True)
        if top_p is not None:
            top_p = check_positive("top_p", top_p)
            if top_p > 1:
                raise ParameterError("top_p", top_p, "must lie in (0, 1]")
        seed = check_int("seed", seed, minimum=0)
        if voice is None:
            return cls(max_new_tokens, temperature, top_p, seed)
        return cls(max_new_tokens, temperature, top_p, seed, voice.stop, voice.banned, voice.min_new_tokens)


class Backend(ABC):
    """A text generator. Subclasses implement :meth:`_generate` on plain chat messages."""

    #: short name used by :func:`dpkit.backends.get_backend` and in cache keys
    name: str = "backend"
    #: True when text leaves this process (then only Public/Privatized text is accepted)
    remote: bool = True

    def __init__(self, model: str, cache: ResponseCache | None = None):
        self.model = model
        self.cache = cache
        self.requests = 0          # prompts actually generated (cache misses)
        self._lock = threading.Lock()
        self._sent: dict[str, dict] = {}
        self._public_only = 0
        self._unmarked = 0

    # ----------------------------------------------------------------- public
    def generate(self, prompt: PromptLike, *, max_new_tokens: int = 64, temperature: float = 0.0,
                 top_p: float | None = None, seed: int = 0, system: str | None = None, voice=None) -> str:
        """One completion for ``prompt`` (see :meth:`generate_batch`)."""
        if not isinstance(prompt, str) and not isinstance(prompt, Sequence):
            raise ParameterError("prompt", prompt, "must be a string or a list of chat messages")
        return self.generate_batch([prompt], max_new_tokens=max_new_tokens, temperature=temperature,
                                   top_p=top_p, seed=seed, system=system, voice=voice)[0]

    def generate_batch(self, prompts: Sequence[PromptLike], *, max_new_tokens: int = 64,
                       temperature: float = 0.0, top_p: float | None = None, seed: int = 0,
                       system: str | None = None, voice=None) -> list[str]:
        """One completion per prompt, in order.

        ``temperature=0`` asks for greedy decoding; ``seed`` fixes sampling where
        the backend supports it. A remote backend raises
        :class:`~dpkit.backends.guard.PrivateTextError` before sending anything if
        any content (or ``system``) is not Public/Privatized text.

        ``voice``: a :class:`~dpkit.models.voice.Voice` (public rules for writing a
        document): its system message and prefilled assistant turn become part of each
        chat (so of its cache key and of what the guard checks), every text is cut at
        its first stop sequence, and the local backend also applies its banned openings
        and minimum length to the logits. An API backend cannot reach the logits: it
        gets the chat, and the stop sequences cut its answer.
        """
        if isinstance(prompts, str) or not isinstance(prompts, Sequence) or len(prompts) == 0:
            raise ParameterError("prompts", prompts, "must be a non-empty list of prompts (use generate() for one)")
        if voice is not None and not isinstance(voice, Voice):
            raise ParameterError("voice", voice, "must be a dpkit.models.voice.Voice or None")
        params = GenerationParams.checked(max_new_tokens, temperature, top_p, seed, voice)
        chats = [with_voice(normalize_messages(p, system), voice) for p in prompts]
        provenance = [self._admit(chat) for chat in chats]
        out: list[str | None] = [None] * len(chats)
        keys: list[str | None] = [None] * len(chats)
        cache_params = cacheable_params(params.key_params())   # no seed in release mode (dpkit.backends.cache)
        if self.cache is not None and cache_params is not None:
            for i, chat in enumerate(chats):
                if self._cacheable(chat):
                    keys[i] = cache_key(self._cache_namespace(), self.model, chat, cache_params)
                    out[i] = self.cache.get(keys[i])
        missing = [i for i, text in enumerate(out) if text is None]
        if missing:
            def store(j: int, text: str) -> None:
                # Called as each answer arrives: a batch that fails half-way keeps (and
                # never pays again for) the answers it already received.
                i = missing[j]
                if params.stop and isinstance(text, str):
                    text = cut_at_stop(text, params.stop)[0].strip()
                with self._lock:
                    if out[i] is not None:
                        return
                    out[i] = text
                    self.requests += 1
                if keys[i] is not None and isinstance(text, str) and text:   # an empty answer is not cached
                    self.cache.put(keys[i], text, {"backend": self.name, "model": self.model,
                                                   "params": cache_params})

            batch = [plain(chats[i]) for i in missing]
            if self._streams:
                texts = self._generate(batch, params, on_result=store)
            else:
                texts = self._generate(batch, params)
            if len(texts) != len(missing):
                raise RuntimeError(f"{self.name} returned {len(texts)} texts for {len(missing)} prompts")
            for j, text in enumerate(texts):
                store(j, text)
        for chat, prov in zip(chats, provenance):
            self._tally(chat, prov)
        return [str(t) for t in out]

    def describe(self) -> dict[str, Any]:
        """What a manifest should record: backend, model, and the provenance of what it was given."""
        with self._lock:
            privatized = [dict(v) for v in self._sent.values()]
            public_only, unmarked = self._public_only, self._unmarked
        return {
            "backend": self.name,
            "model": self.model,
            "remote": self.remote,
            "requests_generated": self.requests,
            "cache": None if self.cache is None else str(self.cache.root),
            "prompts_with_privatized_text": privatized,
            "prompts_public_only": public_only,
            "prompts_unmarked": unmarked,
            **self._describe_extra(),
        }

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.model!r})"

    # ------------------------------------------------------------ to override
    @abstractmethod
    def _generate(self, chats: list[list[dict]], params: GenerationParams) -> list[str]:
        """Generate one text per chat (plain-string messages), in order.

        An implementation may accept ``on_result=None`` and call ``on_result(j, text)``
        as soon as the answer to ``chats[j]`` exists (it is then cached at once).
        """

    @property
    def _streams(self) -> bool:
        return "on_result" in inspect.signature(self._generate).parameters

    def _cache_namespace(self) -> str:
        """What separates this backend's cached answers from another's (the backend's name)."""
        return self.name

    def _describe_extra(self) -> dict[str, Any]:
        return {}

    def _admit(self, chat: list[dict]) -> list[dict] | None:
        """Apply the guard: remote backends require marked text everywhere."""
        if self.remote:
            return require_sendable(chat, self.name)
        return None

    def _cacheable(self, chat: list[dict]) -> bool:
        return True

    # ---------------------------------------------------------------- helpers
    def _tally(self, chat: list[dict], provenance: list[dict] | None) -> None:
        contents = [m["content"] for m in chat]
        with self._lock:
            if any(is_sealed(c) and isinstance(c, Privatized) for c in contents):
                for p in (provenance if provenance is not None else
                          [q for c in contents if isinstance(c, Privatized) for q in c.provenance]):
                    key = json.dumps(p, sort_keys=True, default=str)
                    entry = self._sent.setdefault(key, {**p, "prompts": 0})
                    entry["prompts"] += 1
            elif all(is_sealed(c) and isinstance(c, Public) for c in contents):
                self._public_only += 1
            else:
                self._unmarked += 1
