"""Sentence embeddings from all-MiniLM-L6-v2 (384-d, unit norm), loaded from its package."""

from __future__ import annotations

from functools import lru_cache
from typing import Sequence

import numpy as np

from dpkit import runtime
from dpkit.models.packages import minilm_dir
from dpkit.validate import ParameterError, check_int

BUNDLED_EMBEDDER = "all-MiniLM-L6-v2"


class Embedder:
    """Maps texts to unit-norm float32 vectors. Deterministic: no randomness involved."""

    def __init__(self, model, name: str):
        self.model = model
        self.name = name
        self.dim = int(model.get_embedding_dimension()
                       if hasattr(model, "get_embedding_dimension")
                       else model.get_sentence_embedding_dimension())

    def encode(self, texts: Sequence[str], batch_size: int = 64, progress: bool = False) -> np.ndarray:
        """Embed ``texts``; returns an array of shape ``(len(texts), dim)`` with unit-norm rows."""
        if isinstance(texts, str):
            raise ParameterError("texts", texts, "must be a sequence of strings, not one string")
        batch_size = check_int("batch_size", batch_size, minimum=1)
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        vectors = self.model.encode(texts, batch_size=batch_size, convert_to_numpy=True,
                                    normalize_embeddings=True, show_progress_bar=progress)
        return np.asarray(vectors, dtype=np.float32)


@lru_cache(maxsize=4)
def load_embedder(model: str | None = None, device: str | None = None) -> Embedder:
    """Load the bundled MiniLM (default) or any sentence-transformers id/path given as ``model``."""
    runtime.set_offline()
    from sentence_transformers import SentenceTransformer

    if device is None:
        import torch
        device = "cuda" if torch.cuda.is_available() else "cpu"
    path = str(minilm_dir()) if model is None else model
    st = SentenceTransformer(path, device=device)
    return Embedder(st, BUNDLED_EMBEDDER if model is None else model)
