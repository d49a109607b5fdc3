"""Many token sequences in one llama.cpp context, each sequence with its own KV-cache stream.

:class:`SequenceContext` is the small piece of llama.cpp's batch API that dpkit uses
(through ``llama-cpp-python``'s ctypes bindings): every row of a batch is its own
llama.cpp *sequence* -- its own positions (no padding) and, with ``unified=False``,
its own KV-cache stream -- and one ``llama_decode`` call advances any subset of
the rows by any number of tokens. Logits are returned for the tokens that ask for
them, in the order they were given.

What a row's logits depend on: its own tokens only. Attention never crosses
sequences (llama.cpp masks other sequences out), and with ``unified=False`` a
row's keys and values live in a stream of their own, so the cache layout of one
row does not move when others grow or are dropped. The tests check that a row
decodes the same tokens alone and in a batch.

Nothing here leaves the process: llama.cpp runs in-process on the CPU.
"""

from __future__ import annotations

import os
import weakref
from typing import Sequence

import numpy as np

OPEN_CONTEXTS: "weakref.WeakSet[SequenceContext]" = weakref.WeakSet()


class ContextFullError(RuntimeError):
    """A sequence outgrew the tokens reserved for it when the context was built."""


def import_llama_cpp():
    """The ``llama_cpp`` package (llama-cpp-python, an optional install): dpkit's one import of it.

    OpenMP reads its wait policy when the library loads: sleeping (not spinning) workers between steps.
    """
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    try:
        import llama_cpp
    except ImportError as error:  # pragma: no cover - exercised where the package is absent
        raise ImportError("the llama.cpp runtime needs the package 'llama-cpp-python' (installed by "
                          "`make setup`); or choose the PyTorch runtime with DPKIT_RUNTIME=torch") from error
    return llama_cpp


class SequenceContext:
    """A llama.cpp context holding ``n_seq`` sequences of at most ``seq_len`` tokens each.

    ``model``: a ``llama_model_p`` (e.g. ``Llama.model``). ``threads``: CPU threads
    for decoding (changeable later with :meth:`set_threads`). ``n_batch``: tokens
    per ``llama_decode`` call (longer inputs are split; the result is the same).
    """

    def __init__(self, model, n_vocab: int, n_seq: int, seq_len: int, *, threads: int = 1,
                 unified: bool = False, n_batch: int = 512):
        lc = import_llama_cpp()
        self._lc = lc
        self.n_vocab, self.n_seq, self.seq_len, self.unified = int(n_vocab), int(n_seq), int(seq_len), bool(unified)
        params = lc.llama_context_default_params()
        params.n_seq_max = self.n_seq
        params.n_ctx = self.n_seq * self.seq_len          # per sequence: n_ctx / n_seq_max cells when not unified
        params.kv_unified = self.unified
        params.n_batch = params.n_ubatch = int(n_batch)
        params.n_threads = params.n_threads_batch = int(threads)
        params.no_perf = True
        self.ctx = lc.llama_init_from_model(model, params)
        if not self.ctx:
            raise RuntimeError(f"llama.cpp could not create a context for {n_seq} sequences of {seq_len} tokens")
        self.memory = lc.llama_get_memory(self.ctx)
        self.capacity = int(n_batch)
        self.batch = lc.llama_batch_init(self.capacity, 0, 1)
        self.positions = [0] * self.n_seq
        self.threads = int(threads)
        self.prefix: tuple[int, ...] = ()   # tokens held by the last sequence when it stores a shared prefix
        OPEN_CONTEXTS.add(self)

    # ------------------------------------------------------------------ lifetime
    def close(self) -> None:
        """Free the llama.cpp context and batch (idempotent)."""
        if getattr(self, "ctx", None):
            self._lc.llama_batch_free(self.batch)
            self._lc.llama_free(self.ctx)
            self.ctx = None

    def __del__(self):  # pragma: no cover - interpreter shutdown order varies
        try:
            self.close()
        except Exception:
            pass

    def set_threads(self, threads: int) -> None:
        """Threads for the following decodes (the machine's load may have changed)."""
        threads = int(threads)
        if threads != self.threads:
            self._lc.llama_set_n_threads(self.ctx, threads, threads)
            self.threads = threads

    # ------------------------------------------------------------------ memory
    def clear(self) -> None:
        """Forget every sequence."""
        self._lc.llama_memory_clear(self.memory, True)
        self.positions = [0] * self.n_seq
        self.prefix = ()

    def truncate(self, seq: int, length: int) -> None:
        """Keep the first ``length`` tokens of sequence ``seq`` and drop the rest of its cache."""
        self._lc.llama_memory_seq_rm(self.memory, int(seq), int(length), -1)
        self.positions[seq] = int(length)

    def copy(self, source: int, target: int) -> None:
        """Make sequence ``target`` a copy of sequence ``source`` (its tokens' keys, values and positions).

        With separate streams llama.cpp copies the whole stream's buffer at the next decode (the
        target's former content is dropped); in a unified cache the cells are shared. Either way the
        target continues from exactly the keys and values the source computed."""
        if int(source) == int(target):
            return
        self._lc.llama_memory_seq_rm(self.memory, int(target), -1, -1)
        self._lc.llama_memory_seq_cp(self.memory, int(source), int(target), -1, -1)
        self.positions[target] = self.positions[source]

    # ------------------------------------------------------------------ decoding
    def feed(self, items: Sequence[tuple[int, Sequence[int]]]) -> np.ndarray:
        """Append ``tokens`` to sequence ``seq`` for each ``(seq, tokens)``; decode them.

        Returns float32 logits ``(len(items), n_vocab)``: row ``i`` is the next-token
        distribution after the last token of ``items[i]``. Items are packed into
        batches of at most ``n_batch`` tokens; an item longer than that is split.
        """
        out = np.empty((len(items), self.n_vocab), dtype=np.float32)
        pending: list[int] = []          # output rows whose logits the current batch produces, in order
        self.batch.n_tokens = 0
        for row, (seq, tokens) in enumerate(items):
            tokens = [int(t) for t in tokens]
            if not tokens:
                raise ValueError(f"sequence {seq} was given no tokens")
            if self.positions[seq] + len(tokens) > self.seq_len:
                raise ContextFullError(f"sequence {seq} would hold {self.positions[seq] + len(tokens)} tokens; "
                                       f"this context reserves {self.seq_len} per sequence")
            for k, token in enumerate(tokens):
                if self.batch.n_tokens == self.capacity:
                    self._decode(out, pending)
                    pending = []
                last = k == len(tokens) - 1
                self._add(token, self.positions[seq], seq, last)
                self.positions[seq] += 1
                if last:
                    pending.append(row)
        if self.batch.n_tokens:
            self._decode(out, pending)
        return out

    def _add(self, token: int, pos: int, seq: int, logits: bool) -> None:
        b, i = self.batch, self.batch.n_tokens
        b.token[i] = token
        b.pos[i] = pos
        b.n_seq_id[i] = 1
        b.seq_id[i][0] = seq
        b.logits[i] = 1 if logits else 0
        b.n_tokens = i + 1

    def _decode(self, out: np.ndarray, rows: list[int]) -> None:
        rc = self._lc.llama_decode(self.ctx, self.batch)
        self.batch.n_tokens = 0
        if rc == 1:
            raise ContextFullError("llama.cpp found no room in the KV cache for this batch")
        if rc != 0:
            raise RuntimeError(f"llama_decode failed with code {rc}")
        if rows:
            ptr = self._lc.llama_get_logits(self.ctx)
            out[rows] = np.ctypeslib.as_array(ptr, shape=(len(rows), self.n_vocab))
