"""Private prediction's logits on llama.cpp: groups of rows that share one released continuation.

Private prediction (:mod:`dpkit.privpred`) decodes ONE continuation for a batch
of prompts: at every step it needs the next-token logits of each of the ``s``
private prompts followed by the tokens released so far, and of the public prompt
followed by the same tokens; its own sampler (clipping, noise, SVT) then picks
the token and every row is advanced by it. It keeps the private rows and the
public row in two GROUPS. :class:`LlamaCppGroup` is one group on llama.cpp, with
the interface of the PyTorch groups of :mod:`dpkit.privpred.decode`
(``prompt_logits``, ``logits``, ``advance(token)``, ``restart()``, ``passes``).

How rows are kept apart (what the tests check):

* each group has a llama.cpp context of its own, and in it every prompt is its
  own sequence (own positions, no padding) with its own KV-cache stream
  (``kv_unified=False``); attention never crosses sequences;
* every prompt is prefilled by llama.cpp calls of its own (a long one split at
  multiples of the batch size, a function of its own length), and each step
  then decodes one token of every row in one call: a row's operations never
  depend on the other rows' lengths or number (measured: a row's logits agree
  bit for bit alone and beside 1 to 32 other rows; note that prefilling a prompt
  together with released tokens does NOT always agree with stepping them);
* so the public group's logits are those of a run of the public prompt alone, bit
  for bit, whatever the private rows hold or whether there are any;
* each private row's logits are a function of its own prompt and the released
  tokens: replacing the other private prompts (same number of rows) leaves them
  unchanged, bit for bit;
* :meth:`LlamaCppGroup.restart` drops the generated tokens from every sequence and
  returns the cached logits at the end of the prompts (no new prefill): replaying
  the same released tokens gives the same logits.

A private group holds private data in memory (its prompts' KV caches) and
releases nothing: the sampler that consumes its logits is the mechanism charged
to the privacy ledger. Everything runs in this process.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import torch

from dpkit.models.llamacpp import LlamaCppLM, choose_threads
from dpkit.models.llamacpp_batch import SequenceContext
from dpkit.validate import ParameterError, check_int


class LlamaCppGroup:
    """Rows that advance together by the same released tokens, on llama.cpp.

    ``ids``: token ids of each row's prompt (already truncated to fit: the caller's
    public rule); ``max_new_tokens``: room reserved after the longest prompt.
    ``logits`` / ``prompt_logits`` are float32 ``(rows, vocab)`` torch tensors
    (``torch=False``: numpy arrays) sharing memory with ``logits_array``.
    """

    def __init__(self, lm: LlamaCppLM, ids: Sequence[Sequence[int]], max_new_tokens: int, *,
                 threads: int | None = None, torch: bool = True):
        max_new_tokens = check_int("max_new_tokens", max_new_tokens, minimum=1)
        if isinstance(ids, (str, bytes)) or len(ids) == 0 or any(len(r) == 0 for r in ids):
            raise ParameterError("ids", f"<{len(ids)} prompts>", "must be a non-empty list of non-empty token id lists")
        rows = [[int(t) for t in r] for r in ids]
        longest = max(len(r) for r in rows) + max_new_tokens
        if longest > lm.context_length:
            raise ParameterError("max_new_tokens", max_new_tokens,
                                 f"a prompt plus max_new_tokens exceeds the model's context of "
                                 f"{lm.context_length} tokens (truncate the prompts first)")
        self.lm, self.rows, self._torch = lm, len(rows), bool(torch)
        seq_len = min(lm.context_length, -(-longest // 256) * 256)
        self.context = SequenceContext(lm.llama.model, lm.vocab_size, self.rows, seq_len,
                                       threads=threads or choose_threads(), unified=False)
        self.prompt_lengths = [len(r) for r in rows]
        self.passes = 1
        # each prompt in llama.cpp calls of its own (split, if long, at multiples of n_batch of its own
        # length): how its prefill is cut into batches never depends on the other rows
        self.prompt_logits_array = np.concatenate([self.context.feed([(row, ids)]) for row, ids in enumerate(rows)])
        self.restart()

    def _wrap(self, array: np.ndarray):
        if not self._torch:
            return array
        return torch.from_numpy(array)

    @property
    def logits(self):
        """Next-token logits of every row after the released tokens."""
        return self._wrap(self.logits_array)

    @property
    def prompt_logits(self):
        """Next-token logits of every row at the end of its prompt."""
        return self._wrap(self.prompt_logits_array)

    def advance(self, token: int) -> None:
        """Append the released ``token`` to every row and compute the next logits."""
        token = int(token)
        self.logits_array = self.context.feed([(row, [token]) for row in range(self.rows)])
        self.passes += 1
        self.released += 1

    def restart(self) -> None:
        """Back to the end of the prompts (generated tokens dropped; cached prompt logits, no new prefill)."""
        for row, length in enumerate(self.prompt_lengths):
            self.context.truncate(row, length)
        self.logits_array = self.prompt_logits_array.copy()
        self.released = 0

    def set_threads(self, threads: int | None = None) -> None:
        """Re-read the thread policy (or force ``threads``) for the following steps."""
        self.context.set_threads(threads or choose_threads())

    def close(self) -> None:
        """Free the llama.cpp context (a private group's KV caches hold its prompts)."""
        self.context.close()
