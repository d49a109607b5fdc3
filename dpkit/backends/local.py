"""The local transformers model as a backend (CPU by default, a GPU when present).

Design choice, stated once: **the local backend accepts private text.** Nothing
it is given leaves this process -- the model runs in-process
(:func:`dpkit.models.lm.load_lm`) -- so a non-private baseline, or a method that
feeds private documents to a local model inside a DP mechanism (private
prediction), can use it directly. Pass ``strict=True`` to make it refuse
unmarked text exactly like the API backends, e.g. to rehearse an API run
locally. The response cache never stores the answer to an unmarked prompt (it
may have been private); answers to Public/Privatized prompts are cached.
"""

from __future__ import annotations

from typing import Any

from dpkit.backends.base import Backend, GenerationParams
from dpkit.backends.cache import ResponseCache
from dpkit.backends.guard import require_sendable
from dpkit.privacy.marks import is_sealed
from dpkit.validate import check_int


class LocalBackend(Backend):
    """Batched generation with an in-process Hugging Face causal LM.

    ``model``: ``None`` for the bundled SmolLM2-135M-Instruct, or any Hugging Face
    id / local folder (offline: it must already be on disk). ``device``: ``None``
    picks CUDA when available, else CPU. ``batch_size``: prompts per forward pass.

    Determinism: greedy decoding (``temperature=0``) is deterministic on a given
    machine; sampling uses a private torch generator seeded by ``seed``. Left
    padding can change the last bits of the logits, so the same prompt in a batch
    of a different composition may -- rarely -- decode differently; use
    ``batch_size=1`` when bit-for-bit reproducibility across batchings matters.
    """

    name = "local"
    remote = False

    def __init__(self, model: str | None = None, device: str | None = None, *, batch_size: int = 8,
                 cache: ResponseCache | None = None, strict: bool = False, lm: Any = None):
        from dpkit.models.lm import BUNDLED_LM

        self.batch_size = check_int("batch_size", batch_size, minimum=1)
        self.device_request = device
        self.model_request = model
        self.strict = bool(strict)
        self._lm = lm
        super().__init__(model if model is not None else (lm.name if lm is not None else BUNDLED_LM), cache)

    @property
    def lm(self):
        """The loaded :class:`~dpkit.models.lm.LocalLM` (loaded on first use, cached per process)."""
        if self._lm is None:
            from dpkit.models.lm import load_lm

            self._lm = load_lm(self.model_request, self.device_request)
        return self._lm

    def _admit(self, chat):
        if self.strict:
            return require_sendable(chat, self.name + " (strict)")
        return None

    def _cacheable(self, chat) -> bool:
        return all(is_sealed(m["content"]) for m in chat)

    def _generate(self, chats: list[list[dict]], params: GenerationParams, on_result=None) -> list[str]:
        out: list[str] = []
        for start in range(0, len(chats), self.batch_size):
            texts = self.lm.generate(chats[start:start + self.batch_size],
                                     max_new_tokens=params.max_new_tokens,
                                     temperature=params.temperature, top_p=params.top_p,
                                     seed=params.seed)
            for j, text in enumerate(texts, start):
                if on_result is not None:
                    on_result(j, text)
            out.extend(texts)
        return out

    def _describe_extra(self) -> dict[str, Any]:
        device = str(self._lm.device) if self._lm is not None else (self.device_request or "auto")
        return {"device": device, "batch_size": self.batch_size, "strict": self.strict}
