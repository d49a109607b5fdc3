"""The embedded local models: a small causal LM and a sentence embedder, loaded offline.

Attributes are imported lazily so that ``dpkit.models.packages`` (used by the data
loaders) does not pull in torch.
"""

from importlib import import_module

_LAZY = {
    "Embedder": "dpkit.models.embed",
    "load_embedder": "dpkit.models.embed",
    "LocalLM": "dpkit.models.lm",
    "load_lm": "dpkit.models.lm",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'dpkit.models' has no attribute {name!r}")
