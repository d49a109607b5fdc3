"""Retries with exponential backoff and seeded jitter.

The delay before retry ``k`` (``k = 0, 1, ...``) is drawn uniformly from
``[cap/2, cap]`` with ``cap = min(max_delay, base_delay * 2**k)`` ("equal
jitter": the wait keeps growing, and concurrent clients spread out). A server's
``Retry-After`` raises the wait to at least that many seconds (still capped by
``max_delay``). The jitter comes from a ``numpy.random.Generator`` that the
caller passes in, so a test with a fixed seed sees fixed delays.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Callable, TypeVar

import numpy as np

from dpkit.validate import check_int, check_positive, check_rng

T = TypeVar("T")


class BackendError(RuntimeError):
    """A generation request failed for good (non-retryable error, or retries exhausted)."""


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how patiently to retry transient failures (429, 5xx, timeouts)."""

    max_retries: int = 5
    base_delay: float = 1.0
    max_delay: float = 60.0

    def __post_init__(self):
        check_int("max_retries", self.max_retries, minimum=0)
        check_positive("base_delay", self.base_delay, allow_zero=True)
        check_positive("max_delay", self.max_delay, allow_zero=True)

    def delay(self, attempt: int, rng: np.random.Generator, retry_after: float | None = None) -> float:
        """Seconds to wait before retry number ``attempt`` (0-based)."""
        attempt = check_int("attempt", attempt, minimum=0)
        check_rng("rng", rng)
        cap = min(self.max_delay, self.base_delay * (2.0 ** attempt))
        wait = float(rng.uniform(cap / 2.0, cap)) if cap > 0 else 0.0
        if retry_after is not None and retry_after > wait:
            wait = min(float(retry_after), self.max_delay)
        return wait


def call_with_retries(fn: Callable[[], T], *, policy: RetryPolicy, rng: np.random.Generator,
                      classify: Callable[[BaseException], tuple[bool, float | None]],
                      sleep: Callable[[float], None] = time.sleep,
                      rng_lock: threading.Lock | None = None, what: str = "request") -> T:
    """Call ``fn`` until it succeeds, retrying what ``classify`` calls transient.

    ``classify(exc)`` returns ``(retryable, retry_after_seconds_or_None)``. After
    ``policy.max_retries`` retries the last error is raised inside a
    :class:`BackendError` that names the error type (never the request content).
    """
    attempt = 0
    while True:
        try:
            return fn()
        except Exception as exc:  # noqa: BLE001 - classified below
            retryable, retry_after = classify(exc)
            if not retryable:
                raise BackendError(f"{what} failed with a non-retryable error: {_describe(exc)}") from exc
            if attempt >= policy.max_retries:
                raise BackendError(f"{what} failed after {attempt + 1} attempts; last error: "
                                   f"{_describe(exc)}") from exc
            if rng_lock is not None:
                with rng_lock:
                    wait = policy.delay(attempt, rng, retry_after)
            else:
                wait = policy.delay(attempt, rng, retry_after)
            sleep(wait)
            attempt += 1


def _describe(exc: BaseException) -> str:
    status = getattr(exc, "status_code", None)
    return f"{type(exc).__name__}" + (f" (HTTP {status})" if status is not None else "")
