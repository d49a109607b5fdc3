"""The decoding state of a group of prompts: the model's own forward, or the grouped cached steps.

:func:`tokenize` left-pads prompts into one tensor; :class:`ModelRows` runs a
group of rows through the model's own forward (with its key / value cache, or
re-encoding the whole prefix at every step when ``use_cache=False``);
:func:`open_rows` picks :class:`~dpkit.privpred.stepping.CachedRows` (grouped,
preallocated cached steps) when the model allows it and ``ModelRows``
otherwise; :func:`advance` steps several groups by one token, the cached ones
together (:func:`~dpkit.privpred.stepping.advance_groups`: shared weight reads,
never a shared operation).

A group of ONE row without padding is what every private row is decoded as
(:mod:`dpkit.privpred.private_rows`): every operation then sees that row alone.
"""

from __future__ import annotations

from typing import Sequence

import torch

from dpkit.privpred.stepping import CachedRows, advance_groups, supports


def positions(mask: torch.Tensor) -> torch.Tensor:
    """Position ids of left-padded rows: 0 at each row's first real token."""
    pos = mask.long().cumsum(-1) - 1
    return pos.masked_fill(mask == 0, 1)


def tokenize(lm, texts: Sequence[str], keep_last: int | None) -> tuple[torch.Tensor, torch.Tensor]:
    """Left-padded ids and mask; with ``keep_last`` every row keeps only its last ``keep_last`` tokens."""
    rows = lm.tokenizer(list(texts), add_special_tokens=False)["input_ids"]
    if keep_last is not None:
        rows = [r[-keep_last:] for r in rows]
    return pad_rows(lm, rows)


def pad_rows(lm, rows: Sequence[Sequence[int]]) -> tuple[torch.Tensor, torch.Tensor]:
    """Token-id lists as one left-padded ``(ids, mask)`` pair on the model's device."""
    width = max(len(r) for r in rows)
    pad = lm.tokenizer.pad_token_id
    ids = torch.tensor([[pad] * (width - len(r)) + list(r) for r in rows], dtype=torch.long)
    mask = torch.tensor([[0] * (width - len(r)) + [1] * len(r) for r in rows], dtype=torch.long)
    return ids.to(lm.device), mask.to(lm.device)


class ModelRows:
    """Encoded prompts and the model's own forward pass for the next token (cached or re-encoding).

    Same interface as :class:`~dpkit.privpred.stepping.CachedRows`:
    ``prompt_logits``, ``logits`` (float32, ``(rows, vocab)``), ``restart()``,
    ``passes``; plus :meth:`advance`.
    """

    def __init__(self, lm, ids: torch.Tensor, mask: torch.Tensor, use_cache: bool):
        self.lm, self.use_cache = lm, use_cache
        self.ids, self.mask = ids, mask
        self.prompt_len = int(self.ids.shape[1])
        self.passes = 0
        self._prefill()

    @torch.inference_mode()
    def _prefill(self):
        out = self.lm.model(input_ids=self.ids, attention_mask=self.mask, position_ids=positions(self.mask),
                            use_cache=self.use_cache, logits_to_keep=1)
        self.passes += 1
        self.prompt_logits = out.logits[:, -1, :].float()
        self.cache = out.past_key_values if self.use_cache else None
        self.restart()

    def restart(self):
        """Back to the end of the prompts (crop the cache; no new forward pass)."""
        if self.cache is not None:
            extra = int(self.cache.get_seq_length()) - self.prompt_len
            if extra > 0:
                self.cache.crop(-extra)
        self.cur_ids, self.cur_mask = self.ids, self.mask
        self.cur_pos = positions(self.mask)[:, -1:]
        self.logits = self.prompt_logits

    @torch.inference_mode()
    def advance(self, token: int):
        rows = self.ids.shape[0]
        new = torch.full((rows, 1), int(token), dtype=self.ids.dtype, device=self.ids.device)
        self.cur_mask = torch.cat([self.cur_mask, torch.ones_like(new)], dim=1)
        self.cur_pos = self.cur_pos + 1
        if self.use_cache:
            out = self.lm.model(input_ids=new, attention_mask=self.cur_mask, position_ids=self.cur_pos,
                                past_key_values=self.cache, use_cache=True)
        else:
            self.cur_ids = torch.cat([self.cur_ids, new], dim=1)
            out = self.lm.model(input_ids=self.cur_ids, attention_mask=self.cur_mask,
                                position_ids=positions(self.cur_mask), use_cache=False, logits_to_keep=1)
        self.passes += 1
        self.logits = out.logits[:, -1, :].float()


def open_rows(lm, ids: torch.Tensor, mask: torch.Tensor, use_cache: bool, grouped: bool, max_new_tokens: int):
    """The decoding state of one group of rows: grouped cached steps when the model allows, else its forward."""
    if use_cache and grouped and supports(lm):
        return CachedRows(lm, ids, mask, max_new_tokens)
    return ModelRows(lm, ids, mask, use_cache)


def advance(groups, token: int) -> None:
    """One step of every group; grouped ones share weight reads (:func:`~dpkit.privpred.stepping.advance_groups`);
    any other group (the model's forward, a llama.cpp group) steps by its own ``advance``."""
    groups = [g for g in groups if g is not None]
    advance_groups([g for g in groups if isinstance(g, CachedRows)], token)
    for g in groups:
        if not isinstance(g, CachedRows):
            g.advance(token)
