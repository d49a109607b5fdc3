"""API models through their official clients: OpenAI and Anthropic.

Shared behaviour (class :class:`RemoteBackend`):

* the API key and the server come from the clients' standard variables only
  (``OPENAI_API_KEY`` / ``OPENAI_BASE_URL``, ``ANTHROPIC_API_KEY`` /
  ``ANTHROPIC_BASE_URL``; ``base_url=`` overrides the server). There is no
  ``api_key`` argument; the key, request headers and any user name, password or
  query string in the base URL never appear in ``repr``, :meth:`describe`,
  errors, the cache or a run's files;
* retries are the clients' own (``max_retries``): 408/409/429/5xx/529,
  timeouts and connection errors are retried with exponential backoff, their
  jitter drawn from Python's ``random`` (seeded from OS entropy, so processes
  spread out), honouring ``Retry-After`` up to a minute; every request has a
  ``timeout`` (seconds);
* a reply without text (``content: null``, an empty content list, an error
  object in a 200 reply, a body that is not the API's JSON) is an error: it is
  never returned as ``""`` and never cached;
* at most ``concurrency`` requests are in flight at once (per backend object,
  across threads); a batch is sent in parallel up to that limit;
* only sealed Public/Privatized text is accepted (see :mod:`dpkit.backends.guard`).
"""

from __future__ import annotations

import math
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from dpkit.backends.base import Backend, BackendError, GenerationParams
from dpkit.backends.cache import ResponseCache
from dpkit.validate import ParameterError, check_int, check_positive

MAX_TIMEOUT_S = 3600.0
MAX_RETRIES = 20
MAX_CONCURRENCY = 256


def public_url(url: str | None) -> str | None:
    """``url`` without user name, password, query or fragment (what may be written down)."""
    if not url:
        return None
    try:
        parts = urlsplit(str(url))
        host = parts.hostname or ""
        if parts.port is not None:
            host = f"{host}:{parts.port}"
    except ValueError:
        return "<unparseable base URL>"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


def _describe_error(exc: BaseException) -> str:
    status = getattr(exc, "status_code", None)
    return f"{type(exc).__name__}" + (f" (HTTP {status})" if status is not None else "")


def _tokens(value: Any) -> int:
    """A usage count from a reply, or 0 when the server sent something that is not a count."""
    try:
        number = float(value or 0)
    except (TypeError, ValueError):
        return 0
    return int(number) if math.isfinite(number) and 0 <= number < 2 ** 53 else 0


class RemoteBackend(Backend):
    """Common machinery of the API backends (subclasses build the client and one request)."""

    remote = True
    key_variable = ""
    url_variable = ""
    default_model = ""

    def __init__(self, model: str | None = None, *, base_url: str | None = None, timeout: float = 60.0,
                 max_retries: int = 5, concurrency: int = 4, cache: ResponseCache | None = None,
                 **unknown: Any):
        if "api_key" in unknown:
            raise ParameterError("api_key", "<hidden>",
                                 f"keys are read only from the environment variable {self.key_variable}")
        if unknown:
            name = sorted(unknown)[0]
            raise ParameterError(name, "<given>", f"is not an option of the {self.name} backend")
        if model is not None and (not isinstance(model, str) or not model):
            raise ParameterError("model", model, "must be a non-empty model name")
        if base_url is not None and (not isinstance(base_url, str) or not base_url):
            raise ParameterError("base_url", "<given>", "must be a non-empty URL or None")
        if cache is not None and not isinstance(cache, ResponseCache):
            raise ParameterError("cache", type(cache).__name__, "must be a ResponseCache or None")
        self.timeout = check_positive("timeout", timeout)
        if self.timeout > MAX_TIMEOUT_S:
            raise ParameterError("timeout", timeout, f"must be at most {MAX_TIMEOUT_S:g} seconds")
        self.max_retries = check_int("max_retries", max_retries, minimum=0, maximum=MAX_RETRIES)
        self.concurrency = check_int("concurrency", concurrency, minimum=1, maximum=MAX_CONCURRENCY)
        # None: the official client reads <PROVIDER>_BASE_URL itself (or uses the provider's server).
        self._base_url = base_url
        self._slots = threading.BoundedSemaphore(self.concurrency)
        self.attempts = 0
        self.usage = {"input_tokens": 0, "output_tokens": 0}
        super().__init__(model or self.default_model, cache)
        self._client = None
        self._client_lock = threading.Lock()

    @property
    def base_url(self) -> str | None:
        """The server, as may be written down (no credentials, no query)."""
        return public_url(self._base_url or os.environ.get(self.url_variable))

    # ------------------------------------------------------------------ client
    def _api_key(self) -> str:
        key = os.environ.get(self.key_variable)
        if not key:
            raise BackendError(f"the {self.name} backend needs an API key in the environment variable "
                               f"{self.key_variable} (it is never read from code or files)")
        return key

    @property
    def client(self):
        with self._client_lock:
            if self._client is None:
                self._client = self._make_client(self._api_key())
            return self._client

    def _count_attempt(self, request) -> None:
        with self._lock:
            self.attempts += 1

    def _make_client(self, key: str):  # pragma: no cover - abstract
        raise NotImplementedError

    def _request(self, client, chat: list[dict], params: GenerationParams) -> str:  # pragma: no cover
        raise NotImplementedError

    # ---------------------------------------------------------------- requests
    def _one(self, chat: list[dict], params: GenerationParams) -> str:
        client = self.client
        with self._slots:  # at most `concurrency` requests in flight, across all threads
            try:
                return self._request(client, chat, params)
            except BackendError:
                raise
            except Exception as exc:  # noqa: BLE001 - every client error becomes one clear error
                retried = getattr(exc, "status_code", None) is None or exc.status_code in (408, 409, 429) \
                    or exc.status_code >= 500
                how = (f"failed after {self.max_retries + 1} attempts; last error" if retried
                       else "failed with a non-retryable error")
                raise BackendError(f"{self.name} request ({self.model}) {how}: {_describe_error(exc)}") from None

    def _no_text(self, why: str) -> BackendError:
        return BackendError(f"{self.name} request ({self.model}) returned no text ({why}); nothing was cached")

    def _generate(self, chats: list[list[dict]], params: GenerationParams, on_result=None) -> list[str]:
        def one(j: int) -> str:
            text = self._one(chats[j], params)
            if on_result is not None:
                on_result(j, text)
            return text

        if len(chats) == 1 or self.concurrency == 1:
            return [one(j) for j in range(len(chats))]
        with ThreadPoolExecutor(max_workers=min(self.concurrency, len(chats))) as pool:
            return list(pool.map(one, range(len(chats))))

    def _count(self, input_tokens: Any, output_tokens: Any) -> None:
        """Add a response's token usage (what the provider bills) to :attr:`usage`."""
        with self._lock:
            self.usage["input_tokens"] += _tokens(input_tokens)
            self.usage["output_tokens"] += _tokens(output_tokens)

    def _cache_namespace(self) -> str:
        """The name plus the server (without credentials): two servers may serve different
        models under one name, so their answers are never mixed in the cache."""
        return f"{self.name}@{self.base_url or 'default'}"

    def _describe_extra(self) -> dict[str, Any]:
        return {"base_url": self.base_url, "timeout_s": self.timeout, "concurrency": self.concurrency,
                "max_retries": self.max_retries, "attempts": self.attempts,
                "billed_tokens": dict(self.usage)}


class OpenAIBackend(RemoteBackend):
    """OpenAI Chat Completions (``openai.OpenAI``); honours ``temperature``, ``top_p`` and ``seed``.

    Model: ``model=`` (``get_backend`` also reads ``DPKIT_MODEL``), else ``gpt-4o-mini``. The key
    comes from ``OPENAI_API_KEY``; ``base_url`` (or ``OPENAI_BASE_URL``) points the
    client at a compatible server.
    """

    name = "openai"
    key_variable = "OPENAI_API_KEY"
    url_variable = "OPENAI_BASE_URL"
    default_model = "gpt-4o-mini"

    def _make_client(self, key: str):
        import openai

        http = openai.DefaultHttpxClient(event_hooks={"request": [self._count_attempt]})
        return openai.OpenAI(api_key=key, base_url=self._base_url, timeout=self.timeout,
                             max_retries=self.max_retries, http_client=http)

    def _request(self, client, chat, params: GenerationParams) -> str:
        kwargs: dict[str, Any] = dict(model=self.model, messages=chat,
                                      max_completion_tokens=params.max_new_tokens,
                                      temperature=params.temperature, seed=params.seed)
        if params.top_p is not None:
            kwargs["top_p"] = params.top_p
        response = client.chat.completions.create(**kwargs)
        usage = getattr(response, "usage", None)
        if usage is not None:
            self._count(getattr(usage, "prompt_tokens", 0), getattr(usage, "completion_tokens", 0))
        choices = getattr(response, "choices", None)
        if not isinstance(choices, list) or not choices:
            error = (getattr(response, "model_extra", None) or {}).get("error")
            kind = error.get("type") if isinstance(error, dict) else None
            raise self._no_text(f"an error object of type {kind!r}" if error else "no choices")
        message = getattr(choices[0], "message", None)
        content = getattr(message, "content", None)
        if not isinstance(content, str) or not content:
            raise self._no_text("content null" if content is None else "empty content")
        return content


class AnthropicBackend(RemoteBackend):
    """Anthropic Messages (``anthropic.Anthropic``).

    System messages are joined into the ``system`` field. The Messages API of
    this client takes no temperature, top-p or seed, so repeated calls may
    differ; the response cache (whose key still includes those settings) is what
    makes a rerun reproducible. Model: ``model=`` (or ``DPKIT_MODEL``),
    else ``claude-haiku-4-5``; key from ``ANTHROPIC_API_KEY``, server from
    ``base_url`` or ``ANTHROPIC_BASE_URL``.
    """

    name = "anthropic"
    key_variable = "ANTHROPIC_API_KEY"
    url_variable = "ANTHROPIC_BASE_URL"
    default_model = "claude-haiku-4-5"

    def _make_client(self, key: str):
        import anthropic

        http = anthropic.DefaultHttpxClient(event_hooks={"request": [self._count_attempt]})
        return anthropic.Anthropic(api_key=key, base_url=self._base_url, timeout=self.timeout,
                                   max_retries=self.max_retries, http_client=http)

    def _request(self, client, chat, params: GenerationParams) -> str:
        system = "\n\n".join(m["content"] for m in chat if m["role"] == "system")
        messages = [m for m in chat if m["role"] != "system"]
        if not messages:
            raise ParameterError("prompt", "<system only>", "needs at least one user message")
        kwargs: dict[str, Any] = dict(model=self.model, max_tokens=params.max_new_tokens, messages=messages)
        if system:
            kwargs["system"] = system
        response = client.messages.create(**kwargs)
        usage = getattr(response, "usage", None)
        if usage is not None:
            self._count(getattr(usage, "input_tokens", 0), getattr(usage, "output_tokens", 0))
        blocks = getattr(response, "content", None)
        if not isinstance(blocks, list) or not blocks:
            error = (getattr(response, "model_extra", None) or {}).get("error")
            kind = error.get("type") if isinstance(error, dict) else None
            raise self._no_text(f"an error object of type {kind!r}" if error else
                                ("content null" if blocks is None else "an empty content list"))
        texts = [getattr(block, "text", None) for block in blocks]
        if not any(isinstance(t, str) and t for t in texts):
            raise self._no_text("no text block")
        return "".join(t for t in texts if isinstance(t, str))
