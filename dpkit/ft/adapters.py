"""The bundled model split for DP fine-tuning: frozen lower layers run once, LoRA adapters on the top layers.

Why the split. DP-SGD needs one gradient per record, and on two CPU cores a
first probe (LoRA r = 8 on q and v of all 30 layers, batches of 64 x 48 tokens,
Opacus's per-sample hooks) held 6.4 GB and had not finished one step in five
minutes. Here the adapters sit on the top ``adapter_layers`` decoder layers only
(LoRA, {cite}`hu2022lora`, through :mod:`peft`), so

* the input of the first adapted layer never changes during training: it is a
  function of the record and the frozen lower layers alone, computed ONCE per
  record (:meth:`AdapterLM.lower_states`) and kept in memory;
* each training step runs only the top layers, the final norm and the (frozen,
  tied) output projection, forward and backward; the backward pass stops at
  the first adapted layer;
* the output projection (576 x 49,152, most of the top's cost) is evaluated in
  bfloat16 (``bf16``, about 2.5x the float32 speed on a CPU with AVX-512 BF16)
  and only at the positions that carry a loss (the text and its end, not the
  public prefix or the padding).

Conditioning: every training sequence is ``prefix(label) + text + <end>``, where
the prefix is public (the document type and the label's name: "SMS text
message, spam:"), and the loss of a record is the mean negative log-likelihood
of its text tokens and the end token given the prefix. Sampling starts from the
same prefix (:meth:`AdapterLM.sample`), with the adapters merged into a copy of
the model (the frozen model is never changed).

Nothing here is private by itself: the module only computes. The DP part (Poisson
sampling, per-record clipping, noise) is :mod:`dpkit.ft.dpsgd`.
"""

from __future__ import annotations

import base64
import copy
import io
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch
from peft import LoraConfig, inject_adapter_in_model

from dpkit.validate import ParameterError, check_int

#: the linear maps of a decoder layer LoRA may adapt (names inside ``LlamaDecoderLayer``)
LORA_MODULES = {"q_proj": "self_attn.q_proj", "k_proj": "self_attn.k_proj", "v_proj": "self_attn.v_proj",
                "o_proj": "self_attn.o_proj", "gate_proj": "mlp.gate_proj", "up_proj": "mlp.up_proj",
                "down_proj": "mlp.down_proj"}


def parse_modules(text: str) -> tuple[str, ...]:
    """``"q_proj,v_proj"`` -> the adapted modules, checked against :data:`LORA_MODULES`."""
    names = tuple(n.strip() for n in str(text).split(",") if n.strip())
    bad = [n for n in names if n not in LORA_MODULES]
    if not names or bad or len(set(names)) != len(names):
        raise ParameterError("lora_modules", text, f"must be distinct comma-separated names from "
                             f"{sorted(LORA_MODULES)}")
    return names


def prefix_text(document_type: str, label: str | None) -> str:
    """The public prefix a text is conditioned on: the document type and, for labelled input, the label."""
    return f"{document_type}, {label}:\n" if label is not None else f"{document_type}:\n"


@dataclass
class Encoded:
    """The training sequences of a set of records, right-padded: ``ids`` (n, L) int64, ``weights`` (n, L - 1)
    float32 (1/m on each of a record's m loss positions, 0 elsewhere), ``lengths`` (n,) int64."""

    ids: torch.Tensor
    weights: torch.Tensor
    lengths: torch.Tensor


def _causal_mask(length: int, dtype=torch.float32) -> torch.Tensor:
    """(1, 1, L, L) additive causal mask. Padding is on the right, so a real token never sees a pad."""
    return torch.full((length, length), float("-inf"), dtype=dtype).triu(1)[None, None]


class TopLayers(torch.nn.Module):
    """The trainable top of the model: copies of the top decoder layers (with LoRA), the final norm, and the
    frozen output projection (a tensor, not a module: Opacus hooks only the adapters).

    ``forward(h, next_ids, weights) -> (batch,)`` per-record losses: ``h`` the lower layers' output at every
    position but the last, ``next_ids`` the next tokens, ``weights`` each position's share of its record's loss.
    """

    def __init__(self, model, n_layers: int, modules: Sequence[str], rank: int, alpha: float, bf16: bool):
        super().__init__()
        base = model.model
        total = len(base.layers)
        self.layers = torch.nn.ModuleList([copy.deepcopy(layer) for layer in base.layers[total - n_layers:]])
        self.norm = copy.deepcopy(base.norm)
        self.rotary = copy.deepcopy(base.rotary_emb)
        head = model.get_output_embeddings().weight.detach()
        self.bf16 = bool(bf16)
        self.register_buffer("head", head.to(torch.bfloat16) if bf16 else head, persistent=False)
        for p in self.parameters():
            p.requires_grad_(False)
        adapted = [f"layers.{i}.{LORA_MODULES[m]}" for i in range(n_layers) for m in modules]
        inject_adapter_in_model(LoraConfig(r=rank, lora_alpha=alpha, target_modules=adapted, lora_dropout=0.0,
                                           bias="none"), self)
        for name, p in self.named_parameters():
            p.requires_grad_("lora_" in name)

    def forward(self, h: torch.Tensor, next_ids: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
        batch, length, _ = h.shape
        position_ids = torch.arange(length, device=h.device).unsqueeze(0).expand(batch, -1)
        embeddings = self.rotary(h, position_ids)
        mask = _causal_mask(length, h.dtype).to(h.device)
        for layer in self.layers:
            h = layer(h, attention_mask=mask, position_ids=position_ids, position_embeddings=embeddings)
        h = self.norm(h)
        rows, cols = torch.nonzero(weights > 0, as_tuple=True)   # loss positions only: text tokens and the end
        chosen = h[rows, cols]
        logits = torch.nn.functional.linear(chosen.to(self.head.dtype), self.head).float()
        nll = torch.nn.functional.cross_entropy(logits, next_ids[rows, cols], reduction="none")
        return torch.zeros(batch, dtype=nll.dtype, device=h.device).index_add(0, rows, nll * weights[rows, cols])

    def adapter_state(self) -> dict[str, torch.Tensor]:
        """The LoRA weights (the only trained parameters), by name."""
        return {name: p.detach().clone() for name, p in self.named_parameters() if "lora_" in name}

    def load_adapter_state(self, state: dict[str, torch.Tensor]) -> None:
        own = dict(self.named_parameters())
        missing = sorted(set(k for k in own if "lora_" in k) - set(state))
        if missing or any(k not in own for k in state):
            raise ParameterError("adapter state", sorted(state)[:3], f"does not fit this model's adapters "
                                 f"(missing {missing[:3]})")
        with torch.no_grad():
            for name, value in state.items():
                own[name].copy_(value)


class AdapterLM:
    """A causal LM (``model``, ``tokenizer``: e.g. :func:`dpkit.models.lm.load_lm`'s) split for DP fine-tuning.

    ``adapter_layers`` top decoder layers carry LoRA adapters of rank ``rank`` on ``modules``; the model
    itself is never changed (the top layers are copies).
    """

    def __init__(self, model, tokenizer, *, adapter_layers: int, modules: Sequence[str] = ("q_proj", "v_proj"),
                 rank: int = 8, alpha: float = 16.0, bf16: bool = True, max_text_tokens: int = 48):
        total = len(model.model.layers)
        check_int("adapter_layers", adapter_layers, minimum=1)
        if adapter_layers > total:
            raise ParameterError("adapter_layers", adapter_layers, f"must be at most the model's {total} layers")
        self.model = model.eval()
        self.tokenizer = tokenizer
        self.n_lower = total - adapter_layers
        self.bf16 = bool(bf16)
        self.max_text_tokens = check_int("max_text_tokens", max_text_tokens, minimum=1)
        self.top = TopLayers(model, adapter_layers, modules, rank, alpha, bf16)
        eos = tokenizer.eos_token_id
        self.eos_id = int(eos if eos is not None else model.config.eos_token_id)
        self.pad_id = int(tokenizer.pad_token_id if tokenizer.pad_token_id is not None else self.eos_id)

    # ------------------------------------------------------------------ tokens
    def _ids(self, text: str) -> list[int]:
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def encode(self, texts: Sequence[str], prefixes: Sequence[str]) -> Encoded:
        """Each record as ``prefix + text (cut at max_text_tokens) + <end>``, right-padded, with loss weights."""
        rows, weights = [], []
        prefix_ids = {p: self._ids(p) for p in set(prefixes)}
        for text, prefix in zip(texts, prefixes):
            head = prefix_ids[prefix]
            body = self._ids(text)[: self.max_text_tokens] + [self.eos_id]
            rows.append(head + body)
            w = np.zeros(len(head) + len(body) - 1, dtype=np.float32)
            w[len(head) - 1:] = 1.0 / len(body)            # predicting each text token and the end
            weights.append(w)
        length = max(len(r) for r in rows)
        ids = torch.full((len(rows), length), self.pad_id, dtype=torch.long)
        wt = torch.zeros((len(rows), length - 1), dtype=torch.float32)
        for i, (r, w) in enumerate(zip(rows, weights)):
            ids[i, :len(r)] = torch.tensor(r)
            wt[i, :len(w)] = torch.from_numpy(w)
        return Encoded(ids, wt, torch.tensor([len(r) for r in rows]))

    # ------------------------------------------------------------ lower layers
    @torch.inference_mode()
    def lower_states(self, encoded: Encoded, batch_size: int = 32) -> torch.Tensor:
        """The input of the first adapted layer at every position but the last, (n, L - 1, hidden) float32.

        Computed once per record: the frozen lower layers do not change during training."""
        base = self.model.model
        ids = encoded.ids[:, :-1]
        out = torch.empty((ids.shape[0], ids.shape[1], self.model.config.hidden_size), dtype=torch.float32)
        for start in range(0, ids.shape[0], batch_size):
            chunk = ids[start:start + batch_size]
            length = int(encoded.lengths[start:start + batch_size].max()) - 1
            chunk = chunk[:, :length]
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=self.bf16 and chunk.device.type == "cpu"):
                h = base.embed_tokens(chunk)
                position_ids = torch.arange(length).unsqueeze(0).expand(chunk.shape[0], -1)
                embeddings = base.rotary_emb(h, position_ids)
                mask = _causal_mask(length, h.dtype)
                for layer in base.layers[: self.n_lower]:
                    h = layer(h, attention_mask=mask, position_ids=position_ids, position_embeddings=embeddings)
            out[start:start + chunk.shape[0], :length] = h.float()
            out[start:start + chunk.shape[0], length:] = 0.0
        return out

    # --------------------------------------------------------------- sampling
    def merged_model(self):
        """A copy of the model with the adapters merged into its top layers' weights (bfloat16 with ``bf16``)."""
        merged = copy.deepcopy(self.model)
        total = len(merged.model.layers)
        with torch.no_grad():
            for i, layer in enumerate(self.top.layers):
                target = merged.model.layers[total - len(self.top.layers) + i]
                for name, module in layer.named_modules():
                    if hasattr(module, "lora_A") and "default" in getattr(module, "lora_A", {}):
                        a = module.lora_A["default"].weight
                        b = module.lora_B["default"].weight
                        scale = module.scaling["default"]
                        target.get_submodule(name).weight += (b @ a) * scale
        if self.bf16:
            merged = merged.to(torch.bfloat16)
        return merged.eval()

    @torch.inference_mode()
    def sample(self, model, prefix: str, n: int, *, seed: int, temperature: float, top_p: float,
               max_new_tokens: int | None = None) -> list[str]:
        """``n`` texts sampled after ``prefix`` from ``model`` (:meth:`merged_model`), in one batch."""
        ids = torch.tensor([self._ids(prefix)] * n, dtype=torch.long)
        kwargs = dict(max_new_tokens=max_new_tokens or self.max_text_tokens, pad_token_id=self.pad_id,
                      eos_token_id=self.eos_id, attention_mask=torch.ones_like(ids))
        if temperature == 0:
            kwargs.update(do_sample=False, temperature=None, top_p=None, top_k=None)
        else:
            kwargs.update(do_sample=True, temperature=temperature, top_p=top_p, top_k=0)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(int(seed))
            out = model.generate(ids, **kwargs)
        return [t.strip() for t in self.tokenizer.batch_decode(out[:, ids.shape[1]:], skip_special_tokens=True)]


def state_to_text(state: dict) -> str:
    """A checkpoint (tensors, numbers) as base64 text for a run's JSON files."""
    buffer = io.BytesIO()
    torch.save(state, buffer)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def state_from_text(text: str) -> dict:
    return torch.load(io.BytesIO(base64.b64decode(text.encode("ascii"))), weights_only=True)


def lower_state_bytes(n_records: int, length: int, hidden: int) -> int:
    """Memory of :meth:`AdapterLM.lower_states` for ``n_records`` sequences of ``length`` tokens."""
    return 4 * n_records * max(0, length - 1) * hidden


__all__ = ["AdapterLM", "Encoded", "LORA_MODULES", "TopLayers", "lower_state_bytes", "parse_modules",
           "prefix_text", "state_from_text", "state_to_text"]
