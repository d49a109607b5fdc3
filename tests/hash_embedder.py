"""A stand-in for MiniLM in unit tests: deterministic unit vectors from a hash of each text."""

from __future__ import annotations

import hashlib

import numpy as np


class HashEmbedder:
    """Deterministic 16-d unit vectors from a SHA-256 of each text (stands in for MiniLM in unit tests)."""

    def encode(self, texts):
        rows = []
        for t in texts:
            seed = int.from_bytes(hashlib.sha256(t.encode()).digest()[:8], "little")
            v = np.random.default_rng(seed).standard_normal(16)
            rows.append(v / np.linalg.norm(v))
        return np.array(rows)
