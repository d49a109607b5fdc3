"""The private prompts of one batch, decoded ONE ROW AT A TIME with memory bounded by public parameters.

What Algorithm 1 reads from the private prompts at a step is two sums over
them: the clipped logits ``sum_i clip_c(z_i)`` (on the candidate tokens) for a
private token, and ``sum_i softmax(z_i)`` for the sparse-vector distance. Both
are sums, so they can be accumulated row by row; :meth:`PrivateRows.statistics`
does that and never holds more than one row's logits at a time.

Row independence: every private row is its own group of one row, without
padding (:func:`dpkit.privpred.rows.open_rows`): its prefill is a forward
pass of its prompt alone and every cached step an operation on that row alone
(:func:`~dpkit.privpred.stepping.advance_groups` steps several one-row groups
together, sharing weight reads, never an operation). A row's logits are
therefore a function of its own prompt and the released tokens only, bit for
bit the same alone or beside any other rows (batched matrix products round
differently for different numbers of rows, and left padding changes the
attention's shapes; neither happens here). The float statistics then move by
exactly one row's clipped logits when a prompt is added, as the contract's
sensitivity ``c/s + grid`` assumes.

Memory does not depend on the private data: identical prompts are decoded once
(their logits are identical, bit for bit) and counted with their multiplicity;
at most ``cache_rows`` distinct prompts (a PUBLIC number) keep a key / value
cache between steps; every other distinct prompt is RECOMPUTED at each step
that reads the private rows, ``chunk_rows`` rows at a time (a PUBLIC number),
by the same operations as a cached row -- a prefill of the prompt, then one
cached step per released token -- so a recomputed row's logits are bit for bit
those of a cached one. Peak memory is thus bounded by ``cache_rows + chunk_rows``
rows' caches, whatever the batch's private size; only the time grows with it
(which only the operator sees). With ``use_cache=False`` (a benchmark baseline)
no row keeps anything: each step re-encodes each row's prompt and tokens.

Summation order: the sums run over the distinct prompts in order of first
appearance, each added with its multiplicity (``total + count * row``) in
float64; the chunk size changes nothing, bit for bit.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, Sequence

import torch

from dpkit.privpred.invisibleink import dclip_rows
from dpkit.privpred.rows import ModelRows, advance, open_rows
from dpkit.validate import check_int


@dataclass
class Statistics:
    """The private rows' sums at one step (float64): clipped logits on ``candidates``, and softmaxes."""

    clipped_sum: torch.Tensor
    softmax_sum: torch.Tensor | None
    candidates: torch.Tensor | None


def clip_rows(logits: torch.Tensor, clip: float, candidates: torch.Tensor | None = None) -> torch.Tensor:
    """Eq. (1) in float64 on the ``candidates`` columns of ``(m, vocab)`` logits (all columns when None).

    ``clip_c(z)_i = max(-c, z_i - max_j z_j + c)`` with the row maximum over the
    WHOLE vocabulary (a float32 maximum, exact): the same values as clipping the
    whole vocabulary first.
    """
    top = logits.max(dim=-1, keepdim=True).values.double()
    picked = (logits if candidates is None else logits[..., candidates]).double()
    return (picked - top + clip).clamp_min(-clip)


def distinct_prompts(lm, texts: Sequence[str], keep_last: int | None) -> list[tuple[tuple[int, ...], int]]:
    """``(token ids, multiplicity)`` of each distinct prompt, first appearance first (the public truncation
    rule applied: each keeps its last ``keep_last`` tokens)."""
    counts: dict[tuple[int, ...], int] = {}
    if len(texts):
        for row in lm.tokenizer(list(texts), add_special_tokens=False)["input_ids"]:
            key = tuple(row[-keep_last:] if keep_last is not None else row)
            counts[key] = counts.get(key, 0) + 1
    return list(counts.items())


class PrivateRows:
    """The private side of one batch (see the module docstring).

    ``keep_last``: left-truncate every prompt to its last ``keep_last`` tokens
    (a public rule). ``cache_rows`` / ``chunk_rows``: public bounds on the rows
    with a cache between steps and on the rows recomputed at once.
    Interface for :func:`dpkit.privpred.decode.decode_batch`: :meth:`step`
    (record a released token; returns the cached rows to step with the public
    row), :meth:`restart`, :meth:`statistics`, ``passes``.
    """

    def __init__(self, lm, texts: Sequence[str], *, keep_last: int | None, max_new_tokens: int,
                 cache_rows: int, chunk_rows: int, use_cache: bool = True, grouped: bool = True):
        self.lm, self.use_cache, self.grouped = lm, bool(use_cache), bool(grouped)
        self.max_new_tokens = int(max_new_tokens)
        self.cache_rows = check_int("private_cache_rows", cache_rows, minimum=1)
        self.chunk_rows = check_int("private_chunk_rows", chunk_rows, minimum=1)
        self.prompts = distinct_prompts(lm, texts, keep_last)
        self.kept = [self._open(ids) for ids, _ in self.prompts[:self.cache_rows]] if self.use_cache else []
        self.stepped = self.kept  # what advances with the public row by each released token (restartable states)
        self.tokens: list[int] = []  # the released tokens of the current example
        self.passes = 1 if self.prompts else 0

    def __len__(self) -> int:
        """The number of private prompts (with multiplicity)."""
        return sum(count for _, count in self.prompts)

    def _open(self, ids: Sequence[int]):
        row = torch.tensor([list(ids)], dtype=torch.long, device=self.lm.device)
        return open_rows(self.lm, row, torch.ones_like(row), self.use_cache, self.grouped, self.max_new_tokens)

    def step(self, token: int) -> list:
        """Record the released ``token``; the cached rows' states, to be stepped with the public row."""
        if not self.prompts:
            return []
        self.tokens.append(int(token))
        self.passes += 1
        return list(self.stepped)

    def restart(self) -> None:
        """Back to the end of the prompts for the next example (no forward pass)."""
        self.tokens.clear()
        for state in self.stepped:
            state.restart()

    @torch.inference_mode()
    def _recomputed(self, chunk: Sequence[tuple[tuple[int, ...], int]]) -> list[torch.Tensor]:
        """The current logits of the rows in ``chunk``, recomputed as a cached row reaches them."""
        if not self.use_cache:
            out = []
            for ids, _ in chunk:  # the model's own re-encoding pass, as ModelRows(use_cache=False) makes it
                state = ModelRows(self.lm, torch.tensor([list(ids) + self.tokens], dtype=torch.long,
                                                        device=self.lm.device),
                                  torch.ones((1, len(ids) + len(self.tokens)), dtype=torch.long,
                                             device=self.lm.device), use_cache=False)
                out.append(state.logits)
            return out
        states = [self._open(ids) for ids, _ in chunk]
        for token in self.tokens:
            advance(states, token)
        return [state.logits for state in states]

    def _row_logits(self) -> Iterator[tuple[torch.Tensor, int]]:
        """``(logits (1, vocab), multiplicity)`` of every distinct prompt, in order, at most a chunk at a time."""
        for state, (_, count) in zip(self.kept, self.prompts):
            yield state.logits, count
        rest = self.prompts[len(self.kept):]
        for start in range(0, len(rest), self.chunk_rows):
            chunk = rest[start:start + self.chunk_rows]
            for logits, (_, count) in zip(self._recomputed(chunk), chunk):
                yield logits, count

    @torch.inference_mode()
    def statistics(self, clip: float, candidates: torch.Tensor | None, vocab: int, softmax: bool,
                   device=None, reference: torch.Tensor | None = None) -> Statistics:
        """The sums of the private rows at this step (float64): see the module docstring.

        ``candidates``: sorted token ids the clipped sum is taken on (None: the whole vocabulary);
        ``softmax``: also sum the rows' softmaxes (for the sparse-vector distance);
        ``reference``: the PUBLIC row's logits ``(vocab,)``: the sum is then of InvisibleInk's
        DClip differences ``clip(z_i - z_pub, -c, c)`` (:mod:`dpkit.privpred.invisibleink`)
        instead of Eq. (1)'s clipped logits.
        """
        width = vocab if candidates is None else int(candidates.shape[0])
        device = device if device is not None else self.lm.device
        clipped = torch.zeros(width, dtype=torch.float64, device=device)
        soft = torch.zeros(vocab, dtype=torch.float64, device=device) if softmax else None
        for logits, count in self._row_logits():
            row = clip_rows(logits, clip, candidates) if reference is None else \
                dclip_rows(logits, reference.to(logits.device), clip, candidates)
            clipped.add_(row[0].to(device), alpha=count)
            if soft is not None:
                soft.add_(logits.double().softmax(-1)[0], alpha=count)
        return Statistics(clipped, soft, candidates)
