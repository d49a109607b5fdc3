"""The embedded local models: a small causal LM and a sentence embedder, loaded offline."""

from dpkit.models.embed import Embedder, load_embedder
from dpkit.models.lm import LocalLM, load_lm

__all__ = ["Embedder", "LocalLM", "load_embedder", "load_lm"]
