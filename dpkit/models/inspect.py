"""Look inside the local models: next-token distributions and measured throughput."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch

from dpkit.models.embed import Embedder
from dpkit.models.lm import LocalLM
from dpkit.validate import check_int, check_positive


def next_token_distribution(lm: LocalLM, prompt: str, *, temperature: float = 1.0,
                            top: int = 10) -> list[tuple[str, float]]:
    """The ``top`` most likely next tokens after a chat-rendered ``prompt`` at ``temperature``.

    Returns ``(token text, probability)`` pairs; probabilities are those of the full
    softmax over the vocabulary, so they need not sum to one.
    """
    temperature = check_positive("temperature", temperature)
    top = check_int("top", top, minimum=1, maximum=lm.vocab_size)
    logits = lm.next_token_logits([lm.chat(prompt)])[0]
    probs = torch.softmax(logits / temperature, dim=-1)
    values, ids = torch.topk(probs, top)
    return [(lm.tokenizer.decode([int(i)]), float(v)) for v, i in zip(values, ids)]


def entropy_bits(lm: LocalLM, prompt: str, temperature: float = 1.0) -> float:
    """Shannon entropy (bits) of the next-token distribution after ``prompt``."""
    temperature = check_positive("temperature", temperature)
    logits = lm.next_token_logits([lm.chat(prompt)])[0] / temperature
    logp = torch.log_softmax(logits, dim=-1)
    return float(-(logp.exp() * logp).sum() / np.log(2))


@dataclass(frozen=True)
class Throughput:
    """One timing: ``items`` produced in ``seconds`` (``rate`` = items per second)."""

    what: str
    items: int
    seconds: float

    @property
    def rate(self) -> float:
        return self.items / self.seconds if self.seconds > 0 else float("inf")


def generation_throughput(lm: LocalLM, prompts: Sequence[str], *, max_new_tokens: int,
                          seed: int = 0) -> Throughput:
    """New tokens per second of greedy batched generation of ``prompts`` (one warm-up call first)."""
    max_new_tokens = check_int("max_new_tokens", max_new_tokens, minimum=1)
    lm.generate(prompts[:1], max_new_tokens=2, seed=seed)  # warm-up
    start = time.perf_counter()
    texts = lm.generate(prompts, max_new_tokens=max_new_tokens, seed=seed)
    seconds = time.perf_counter() - start
    tokens = sum(len(lm.tokenizer(t, add_special_tokens=False)["input_ids"]) for t in texts)
    return Throughput(f"generate, batch {len(prompts)}", tokens, seconds)


def logits_throughput(lm: LocalLM, prompts: Sequence[str], repeats: int = 3) -> Throughput:
    """Prompts per second for one batched forward pass returning next-token logits."""
    repeats = check_int("repeats", repeats, minimum=1)
    texts = [lm.chat(p) for p in prompts]
    lm.next_token_logits(texts[:1])
    start = time.perf_counter()
    for _ in range(repeats):
        lm.next_token_logits(texts)
    return Throughput(f"next-token logits, batch {len(prompts)}", repeats * len(prompts),
                      time.perf_counter() - start)


def embedding_throughput(embedder: Embedder, texts: Sequence[str]) -> Throughput:
    """Sentences per second for the embedder (one warm-up call first)."""
    embedder.encode(list(texts[:2]))
    start = time.perf_counter()
    embedder.encode(list(texts))
    return Throughput("sentence embeddings", len(texts), time.perf_counter() - start)
