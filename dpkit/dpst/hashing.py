"""A tiny deterministic embedder (hashed bag of words) for unit tests and quick checks.

Texts sharing words get positive cosine; no model is loaded. It has the same
``encode(texts) -> (n, dim) float32 unit rows`` interface as
:class:`dpkit.models.embed.Embedder`, so the whole DP-ST pipeline can be
exercised in milliseconds. The book's numbers use MiniLM, never this.
"""

from __future__ import annotations

import hashlib
from typing import Sequence

import numpy as np

from dpkit.dpst.corpus import TripleBank, cluster_bank
from dpkit.validate import ParameterError, check_int


class HashEmbedder:
    name = "hashed-bag-of-words"

    def __init__(self, dim: int = 32):
        self.dim = check_int("dim", dim, minimum=2)

    def _vector(self, text: str) -> np.ndarray:
        v = np.zeros(self.dim, np.float32)
        for word in text.lower().split():
            h = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=8).digest(), "little")
            v[h % self.dim] += 1.0 if (h >> 32) & 1 else 0.5
        v[-1] += 0.1  # never the zero vector
        return v / np.linalg.norm(v)

    def encode(self, texts: Sequence[str], **_) -> np.ndarray:
        if isinstance(texts, str):
            raise ParameterError("texts", texts, "must be a sequence of strings, not one string")
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dim), np.float32)
        return np.stack([self._vector(t) for t in texts])


TOY_TRIPLES = (
    "the council approved the budget", "the council rejected the plan", "the mayor opened the bridge",
    "the mayor praised the volunteers", "voters elected a new senator", "the senator proposed a tax cut",
    "the court blocked the law", "the judge dismissed the case", "police arrested two suspects",
    "the company reported record profits", "the firm hired new engineers", "investors bought the shares",
    "the bank raised interest rates", "prices rose in march", "the market fell sharply",
    "the team won the match", "the striker scored two goals", "fans filled the stadium",
    "the coach praised the defence", "the club signed a goalkeeper", "the doctor treated the patients",
    "the hospital opened a new ward", "researchers found a new vaccine", "the study linked sugar to obesity",
    "nurses demanded higher pay", "the storm flooded the valley", "rain delayed the harvest",
    "farmers planted new crops", "the heat wave killed cattle", "scientists measured the ice",
    "the band released an album", "the singer cancelled the tour", "critics loved the film",
    "the museum displayed old paintings", "students protested the fees", "the school hired teachers",
    "the airline cancelled flights", "the train reached the city", "drivers blocked the road",
    "engineers repaired the bridge",
)


def toy_corpus(k: int = 6, seed: int = 0, dim: int = 32):
    """A 40-triple public corpus (our own sentences) embedded with :class:`HashEmbedder`."""
    embedder = HashEmbedder(dim)
    bank = TripleBank(np.asarray(TOY_TRIPLES), embedder.encode(TOY_TRIPLES), {"source": "toy"})
    return cluster_bank(bank, k, seed=seed), embedder
