"""API models through their official clients: OpenAI and Anthropic.

Shared behaviour (class :class:`RemoteBackend`):

* the API key is read from the environment only (``OPENAI_API_KEY`` /
  ``ANTHROPIC_API_KEY``); there is no ``api_key`` argument, and the key never
  appears in ``repr``, :meth:`describe`, errors, the cache or a run's files;
* the clients' own retries are switched off and replaced by
  :func:`~dpkit.backends.retry.call_with_retries`: exponential backoff with
  seeded jitter on 408/409/429/5xx/529, timeouts and connection errors,
  honouring ``Retry-After``; every request has a ``timeout`` (seconds);
* at most ``concurrency`` requests are in flight at once (per backend object, across
  threads); a batch is sent in parallel up to that limit;
* only Public/Privatized text is accepted (see :mod:`dpkit.backends.guard`).
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable

import numpy as np

from dpkit.backends.base import Backend, GenerationParams
from dpkit.backends.cache import ResponseCache
from dpkit.backends.retry import BackendError, RetryPolicy, call_with_retries
from dpkit.validate import ParameterError, check_int, check_positive

RETRYABLE_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504, 529})


def _retry_after(exc: BaseException) -> float | None:
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if headers is None:
        return None
    value = headers.get("retry-after")
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None


class RemoteBackend(Backend):
    """Common machinery of the API backends (subclasses build the client and one request)."""

    remote = True
    key_variable = ""
    default_model = ""

    def __init__(self, model: str | None = None, *, base_url: str | None = None, timeout: float = 60.0,
                 retry: RetryPolicy | None = None, concurrency: int = 4, retry_seed: int = 0,
                 cache: ResponseCache | None = None, sleep: Callable[[float], None] | None = None,
                 **unknown: Any):
        if "api_key" in unknown:
            raise ParameterError("api_key", "<hidden>",
                                 f"keys are read only from the environment variable {self.key_variable}")
        if unknown:
            name = sorted(unknown)[0]
            raise ParameterError(name, "<given>", f"is not an option of the {self.name} backend")
        if model is not None and (not isinstance(model, str) or not model):
            raise ParameterError("model", model, "must be a non-empty model name")
        self.timeout = check_positive("timeout", timeout)
        self.concurrency = check_int("concurrency", concurrency, minimum=1)
        self.retry = retry if retry is not None else RetryPolicy()
        if not isinstance(self.retry, RetryPolicy):
            raise ParameterError("retry", retry, "must be a RetryPolicy or None")
        # The official clients read <PROVIDER>_BASE_URL themselves; reading it here too
        # lets describe() (and so a run's manifest) say which server was used.
        self.base_url = base_url or os.environ.get(self.key_variable.replace("API_KEY", "BASE_URL")) or None
        self._rng = np.random.default_rng(check_int("retry_seed", retry_seed, minimum=0))
        self._rng_lock = threading.Lock()
        self._slots = threading.BoundedSemaphore(self.concurrency)
        self._sleep = sleep
        self.attempts = 0
        self.usage = {"input_tokens": 0, "output_tokens": 0}
        super().__init__(model or self.default_model, cache)
        self._client = None

    # ------------------------------------------------------------------ client
    def _api_key(self) -> str:
        key = os.environ.get(self.key_variable)
        if not key:
            raise BackendError(f"the {self.name} backend needs an API key in the environment variable "
                               f"{self.key_variable} (it is never read from code or files)")
        return key

    @property
    def client(self):
        if self._client is None:
            self._client = self._make_client(self._api_key())
        return self._client

    def _make_client(self, key: str):  # pragma: no cover - abstract
        raise NotImplementedError

    def _request(self, client, chat: list[dict], params: GenerationParams) -> str:  # pragma: no cover
        raise NotImplementedError

    def _transient_types(self) -> tuple[type, ...]:  # pragma: no cover
        raise NotImplementedError

    # ---------------------------------------------------------------- requests
    def _classify(self, exc: BaseException) -> tuple[bool, float | None]:
        status = getattr(exc, "status_code", None)
        if status is not None:
            return status in RETRYABLE_STATUS, _retry_after(exc)
        return isinstance(exc, self._transient_types()), None

    def _one(self, chat: list[dict], params: GenerationParams) -> str:
        client = self.client

        def attempt() -> str:
            with self._lock:
                self.attempts += 1
            with self._slots:  # at most `concurrency` requests in flight, across all threads
                return self._request(client, chat, params)

        kwargs = {} if self._sleep is None else {"sleep": self._sleep}
        return call_with_retries(attempt, policy=self.retry, rng=self._rng, classify=self._classify,
                                 rng_lock=self._rng_lock, what=f"{self.name} request ({self.model})",
                                 **kwargs)

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
            self.usage["input_tokens"] += int(input_tokens or 0)
            self.usage["output_tokens"] += int(output_tokens or 0)

    def _describe_extra(self) -> dict[str, Any]:
        return {"base_url": self.base_url, "timeout_s": self.timeout, "concurrency": self.concurrency,
                "max_retries": self.retry.max_retries, "attempts": self.attempts,
                "billed_tokens": dict(self.usage)}


class OpenAIBackend(RemoteBackend):
    """OpenAI Chat Completions (``openai.OpenAI``); honours ``temperature``, ``top_p`` and ``seed``.

    Model: ``model=`` (``get_backend`` also reads ``DPKIT_MODEL``), else ``gpt-4o-mini``. The key
    comes from ``OPENAI_API_KEY``; ``base_url`` (or ``OPENAI_BASE_URL``) points the
    client at a compatible server.
    """

    name = "openai"
    key_variable = "OPENAI_API_KEY"
    default_model = "gpt-4o-mini"

    def _make_client(self, key: str):
        import openai

        return openai.OpenAI(api_key=key, base_url=self.base_url, timeout=self.timeout, max_retries=0)

    def _transient_types(self):
        import openai

        return (openai.APITimeoutError, openai.APIConnectionError)

    def _request(self, client, chat, params: GenerationParams) -> str:
        kwargs: dict[str, Any] = dict(model=self.model, messages=chat,
                                      max_completion_tokens=params.max_new_tokens,
                                      temperature=params.temperature, seed=params.seed)
        if params.top_p is not None:
            kwargs["top_p"] = params.top_p
        response = client.chat.completions.create(**kwargs)
        usage = getattr(response, "usage", None)
        if usage is not None:
            self._count(usage.prompt_tokens, usage.completion_tokens)
        content = response.choices[0].message.content
        return content if content is not None else ""


class AnthropicBackend(RemoteBackend):
    """Anthropic Messages (``anthropic.Anthropic``).

    System messages are joined into the ``system`` field. The Messages API of
    this client takes no temperature, top-p or seed, so repeated calls may
    differ; the response cache (whose key still includes those settings) is what
    makes a rerun reproducible. Model: ``model=`` (or ``DPKIT_MODEL``),
    else ``claude-haiku-4-5``; key from ``ANTHROPIC_API_KEY``.
    """

    name = "anthropic"
    key_variable = "ANTHROPIC_API_KEY"
    default_model = "claude-haiku-4-5"

    def _make_client(self, key: str):
        import anthropic

        return anthropic.Anthropic(api_key=key, base_url=self.base_url, timeout=self.timeout, max_retries=0)

    def _transient_types(self):
        import anthropic

        return (anthropic.APITimeoutError, anthropic.APIConnectionError)

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
            self._count(usage.input_tokens, usage.output_tokens)
        return "".join(getattr(block, "text", "") for block in response.content)
