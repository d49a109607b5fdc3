"""Cached decoding steps for several groups of rows that share weight reads but never an operation.

Private decoding runs the private rows of a batch and the public row as two
GROUPS: every tensor operation sees the rows of one group only, so the public
row's logits are those of a forward pass of the public row alone, bit for bit
(the same operations on the same shapes and inputs), whatever the private rows
hold or how many there are. :func:`advance_groups` only changes the ORDER of
the work: it walks the decoder op by op (q projection of group 1, then of group
2, then the k projection of group 1, ...), so a weight matrix read from memory
for the private rows is still in the processor's cache when the public row
needs it. On a CPU at small batch sizes the linear layers are limited by
reading the weights, and running the public row's pass right after the private
rows', weight by weight, costs much less than a second pass over the model.

:class:`CachedRows` keeps each group's key / value cache in preallocated
buffers (the prompts plus up to 128 new tokens, doubled when full, at most
``max_new_tokens``; no concatenation per step) and the padding mask and
positions preallocated too; ``restart`` returns to the
end of the prompts by resetting a length. The prompts are encoded by the
model's own forward pass (prefill); decoding steps re-use the model's modules
(norms, projections, rotary embedding, attention function) in the order the
model's own forward uses them, so the logits equal the model's cached forward
pass bit for bit (tests compare them). Only Llama-style decoders with the SDPA
attention are supported (:func:`supports`); other models keep the model's own
forward (:class:`dpkit.privpred.decode` falls back to it).
"""

from __future__ import annotations

import sys
from typing import Sequence

import torch

from dpkit import runtime


INITIAL_ROOM = 128   # new-token positions allocated up front; the buffers double when full


def supports(lm) -> bool:
    """Whether :class:`CachedRows` can step ``lm`` (a Llama-style decoder with SDPA attention)."""
    model = getattr(lm, "model", None)
    config = getattr(model, "config", None)
    base = getattr(model, "model", None)
    if config is None or base is None or getattr(config, "model_type", None) != "llama":
        return False
    if getattr(config, "_attn_implementation", None) != "sdpa":
        return False
    return all(hasattr(base, name) for name in ("embed_tokens", "layers", "norm", "rotary_emb")) \
        and hasattr(model, "lm_head")


def _positions(mask: torch.Tensor) -> torch.Tensor:
    pos = mask.long().cumsum(-1) - 1
    return pos.masked_fill(mask == 0, 1)


class CachedRows:
    """One group of left-padded prompts with a preallocated key / value cache for ``max_new_tokens`` more.

    Same interface as the model-forward prefix of :mod:`dpkit.privpred.decode`:
    ``prompt_logits``, ``logits`` (float32, ``(rows, vocab)``), ``restart()``,
    ``passes``; advance with :func:`advance_groups`.
    """

    def __init__(self, lm, ids: torch.Tensor, mask: torch.Tensor, max_new_tokens: int):
        self.lm = lm
        self.ids, self.mask = ids, mask
        self.rows, self.prompt_len = int(ids.shape[0]), int(ids.shape[1])
        self.limit = self.prompt_len + int(max_new_tokens)
        self.capacity = self.prompt_len + min(int(max_new_tokens), INITIAL_ROOM)
        self.passes = 0
        self._prefill()

    @torch.inference_mode()
    def _prefill(self):
        model = self.lm.model
        pos = _positions(self.mask)
        out = model(input_ids=self.ids, attention_mask=self.mask, position_ids=pos, use_cache=True, logits_to_keep=1)
        self.passes += 1
        self.prompt_logits = out.logits[:, -1, :].float()
        keys, values = [], []
        for layer in out.past_key_values.layers:
            k, v = layer.keys, layer.values
            shape = (k.shape[0], k.shape[1], self.capacity, k.shape[3])
            kb = k.new_empty(shape)
            vb = v.new_empty(shape)
            kb[:, :, :self.prompt_len].copy_(k)
            vb[:, :, :self.prompt_len].copy_(v)
            keys.append(kb)
            values.append(vb)
        self.keys, self.values = keys, values
        # the padding mask of every length: prompts' mask, then ones for the generated tokens
        full = torch.ones((self.rows, self.capacity), dtype=torch.bool, device=self.ids.device)
        full[:, :self.prompt_len] = self.mask.bool()
        self.full_mask = full
        self.padded = not bool(self.mask.bool().all())
        self.prompt_pos = pos[:, -1:].clone()
        self.token_ids = torch.empty((self.rows, 1), dtype=self.ids.dtype, device=self.ids.device)
        self.restart()

    def restart(self):
        """Back to the end of the prompts (the cache beyond them is overwritten; no forward pass)."""
        self.length = self.prompt_len
        self.cur_pos = self.prompt_pos
        self.logits = self.prompt_logits

    def _grow(self):
        """Double the room for new tokens (up to ``max_new_tokens``): one copy, rarely."""
        if self.capacity >= self.limit:
            raise RuntimeError(f"cache of {self.limit} positions is full (prompt {self.prompt_len} + max_new_tokens)")
        new = min(self.limit, self.prompt_len + 2 * (self.capacity - self.prompt_len))

        def wider(t):
            out = t.new_empty((*t.shape[:2], new, *t.shape[3:]))
            out[:, :, :self.capacity].copy_(t)
            return out

        self.keys = [wider(k) for k in self.keys]
        self.values = [wider(v) for v in self.values]
        full = torch.ones((self.rows, new), dtype=torch.bool, device=self.full_mask.device)
        full[:, :self.capacity] = self.full_mask
        self.full_mask, self.capacity = full, new

    def _begin_step(self, token: int):
        if self.length >= self.capacity:
            self._grow()
        self.token_ids.fill_(int(token))
        self.cur_pos = self.cur_pos + 1
        self.length += 1
        # the model's own mask for one new token: None without padding, else (rows, 1, 1, length) booleans
        return self.full_mask[:, None, None, :self.length] if self.padded else None


def _attention_parts(model):
    # transformers is imported when a model is stepped, not when dpkit.privpred is (a heavy import that
    # the numpy-only users of this package -- the audits, the CLI's planning -- never need)
    attention_functions = runtime.import_transformers().modeling_utils.ALL_ATTENTION_FUNCTIONS
    attn = model.model.layers[0].self_attn
    rotary = sys.modules[type(attn).__module__].apply_rotary_pos_emb
    attention = attention_functions.get_interface(model.config._attn_implementation, None)
    return rotary, attention


@torch.inference_mode()
def advance_groups(groups: Sequence[CachedRows], token: int) -> None:
    """Append ``token`` to every row of every group and compute each group's next logits (one step).

    The groups go through the decoder together, operation by operation, but no
    operation ever sees rows of two groups: each group's logits equal a cached
    forward pass of that group alone.
    """
    groups = [g for g in groups if g is not None]
    if not groups:
        return
    model = groups[0].lm.model
    base = model.model
    rotary, attention = _attention_parts(model)
    masks = [g._begin_step(token) for g in groups]
    hidden = [base.embed_tokens(g.token_ids) for g in groups]
    cos_sin = [base.rotary_emb(h, position_ids=g.cur_pos) for h, g in zip(hidden, groups)]
    for index, layer in enumerate(base.layers):
        attn = layer.self_attn
        residual = hidden
        x = [layer.input_layernorm(h) for h in hidden]
        shapes = [(*h.shape[:-1], -1, attn.head_dim) for h in x]
        q = [attn.q_proj(h).view(s).transpose(1, 2) for h, s in zip(x, shapes)]
        k = [attn.k_proj(h).view(s).transpose(1, 2) for h, s in zip(x, shapes)]
        v = [attn.v_proj(h).view(s).transpose(1, 2) for h, s in zip(x, shapes)]
        out = []
        for g, qi, ki, vi, (cos, sin), mask, h in zip(groups, q, k, v, cos_sin, masks, x):
            qi, ki = rotary(qi, ki, cos, sin)
            at = g.length - 1
            g.keys[index][:, :, at:at + 1].copy_(ki)
            g.values[index][:, :, at:at + 1].copy_(vi)
            o, _ = attention(attn, qi, g.keys[index][:, :, :g.length], g.values[index][:, :, :g.length], mask,
                             dropout=0.0, scaling=attn.scaling)
            out.append(o.reshape(*h.shape[:-1], -1).contiguous())
        out = [attn.o_proj(o) for o in out]
        hidden = [r + o for r, o in zip(residual, out)]
        residual = hidden
        x = [layer.post_attention_layernorm(h) for h in hidden]
        mlp = layer.mlp
        gate = [mlp.act_fn(mlp.gate_proj(h)) for h in x]
        up = [mlp.up_proj(h) for h in x]
        down = [mlp.down_proj(a * b) for a, b in zip(gate, up)]
        hidden = [r + d for r, d in zip(residual, down)]
    hidden = [base.norm(h) for h in hidden]
    for g, h in zip(groups, hidden):
        g.logits = model.lm_head(h)[:, -1, :].float()
        g.passes += 1
