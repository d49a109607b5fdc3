"""Private prediction's logits on llama.cpp: the fast CPU runtime behind :func:`~dpkit.privpred.decode.decode_batch`.

:class:`LlamaCppPrivateLM` is the local model for private prediction when the
runtime is llama.cpp (:func:`runtime_name`; ``auto`` picks it on a CPU where
``llama-cpp-python`` is installed, ``DPKIT_RUNTIME=torch`` or a PyTorch
:class:`~dpkit.models.lm.LocalLM` keeps PyTorch). Only the next-token LOGITS
come from llama.cpp (the model's 8-bit GGUF copy, :mod:`dpkit.models.llamacpp`);
everything that decides what is released is unchanged: dpkit's own sampler
(clipping, the exponential mechanism, the sparse-vector test, the public
top-k) chooses every token from those logits, and the ledger's charge is a
function of the public configuration only, whatever the runtime.

Token ids: the Hugging Face tokenizer of the same model (the one the PyTorch
path uses; for the bundled model read once from the GGUF and kept in the dpkit
cache), so the chat rendering, the record cap (``max_record_tokens``), the
left truncation (``keep_last``), the end token and the decoded text follow the
PyTorch path's rules exactly. The ids are the GGUF's own vocabulary (the tests
check that llama.cpp's tokenizer gives the same ids).

What is private, what is released, what stays apart (tested in
``tests/test_pp_llamacpp.py`` with the bundled model):

* the PUBLIC row (public prompt + released tokens) has a llama.cpp context of
  its own; its logits are those of a run of the public prompt alone, bit for
  bit, with any private rows, none, or other ones;
* every PRIVATE prompt is its own llama.cpp sequence (own positions, no padding,
  its own KV stream: ``kv_unified=False``), prefilled by llama.cpp calls of its
  own (:class:`~dpkit.models.llamacpp_rows.LlamaCppGroup`); its logits are a function of its
  own prompt and the released tokens, bit for bit whatever the other rows are or
  how many there are (measured: a row alone and in batches of 2 to 33 rows
  agree bit for bit, and so do one and two threads);
* the private rows' logits never leave :meth:`LlamaCppPrivateRows.statistics`,
  which returns only their float64 sums (the clipped logits on the candidates,
  and the softmaxes for the sparse-vector test), as the PyTorch rows do;
* replay: the same released tokens after :meth:`LlamaCppPrivateRows.restart`, or
  a whole ``decode_batch`` re-run with the same seed, give the same tokens.

Memory bound (public): identical prompts are decoded once and counted with
their multiplicity; the first ``private_cache_rows`` distinct prompts keep a KV
cache, in contexts of at most :data:`MAX_SEQUENCES` sequences each; every
other distinct prompt is recomputed at each step that reads the private rows,
``private_chunk_rows`` at a time in one reused context, by the operations of a
cached row (its prompt alone, then one step per released token: bit for bit the
logits of a cached row; feeding prompt and tokens at once is faster but does not
always round the same, so it is not done). KV
memory is therefore at most ``(private_cache_rows + private_chunk_rows + 1) x
context_length`` token positions (each sequence reserves its longest prompt
plus ``max_new_tokens``, rounded up to 256), whatever the batch's private size;
only the time grows with it.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Iterator, Sequence

import numpy as np
import torch

from dpkit import runtime
from dpkit.backends.local import resolve_runtime
from dpkit.io import atomic_folder
from dpkit.models.llamacpp import choose_threads, load_llamacpp
from dpkit.models.llamacpp_batch import SequenceContext
from dpkit.models.llamacpp_rows import LlamaCppGroup
from dpkit.models.lm import LocalLM, _bundled_cache
from dpkit.models.packages import smollm2_gguf
from dpkit.privpred.private_rows import PrivateRows, distinct_prompts
from dpkit.validate import check_int

RUNTIME = "llamacpp"
MAX_SEQUENCES = 256   # llama.cpp's limit on sequences per context


class LlamaCppPrivateLM:
    """The local model for private prediction on llama.cpp: llama.cpp logits, the Hugging Face tokenizer's ids.

    ``llm``: a :class:`~dpkit.models.llamacpp.LlamaCppLM`; ``tokenizer``: the
    model's Hugging Face tokenizer. Offers what :mod:`dpkit.privpred` reads of a
    model (``tokenizer``, ``chat``, ``context_length``, ``eos_token_ids``,
    ``vocab_size``, ``name``, ``device``), :meth:`group`, and the
    :class:`~dpkit.models.lm.LocalLM` conveniences ``next_token_logits`` and ``generate``.
    """

    runtime = RUNTIME

    def __init__(self, llm, tokenizer, spec: str | None = None):
        self.llm, self.tokenizer = llm, tokenizer
        self.spec = spec                      # what a Ray worker loads it by (None: the bundled model)
        self.name = llm.name
        self.device = torch.device("cpu")
        tokenizer.padding_side = "left"
        if tokenizer.pad_token_id is None:
            tokenizer.pad_token = tokenizer.eos_token
        eos = int(llm.llama.token_eos())
        self._eos = [eos] if eos >= 0 else [int(tokenizer.eos_token_id)]

    chat = LocalLM.chat                    # the PyTorch path's rendering: the same tokenizer's chat template

    @property
    def context_length(self) -> int:
        return self.llm.context_length

    @property
    def vocab_size(self) -> int:
        return self.llm.vocab_size

    @property
    def eos_token_ids(self) -> list[int]:
        """The end-of-text token that ends an example (the GGUF's EOS, as the PyTorch path's generation config)."""
        return list(self._eos)

    def next_token_logits(self, texts: Sequence[str]) -> torch.Tensor:
        """Logits of the next token after each rendered text: float32 ``(len(texts), vocab)``, each text alone."""
        group = self.group(self.tokenizer(list(texts), add_special_tokens=False)["input_ids"], 1)
        try:
            return group.logits.clone()
        finally:
            group.close()

    def generate(self, prompts, **options) -> list[str]:
        """Plain (non-private) generation on llama.cpp: :meth:`dpkit.models.llamacpp.LlamaCppLM.generate`."""
        return self.llm.generate(prompts, **options)

    def group(self, ids: Sequence[Sequence[int]], max_new_tokens: int):
        """A :class:`~dpkit.models.llamacpp_rows.LlamaCppGroup` of prompts (own context; one sequence per prompt)."""
        return LlamaCppGroup(self.llm, ids, max_new_tokens)


class LlamaCppPrivateRows(PrivateRows):
    """The private side of one batch on llama.cpp (see the module docstring): same interface as
    :class:`~dpkit.privpred.private_rows.PrivateRows` (:meth:`step`, :meth:`restart`, ``statistics``,
    ``passes``), the same distinct prompts with multiplicity and the same summation order."""

    def __init__(self, lm: LlamaCppPrivateLM, texts: Sequence[str], *, keep_last: int | None,
                 max_new_tokens: int, cache_rows: int, chunk_rows: int):
        self.lm, self.use_cache, self.grouped = lm, True, True
        self.max_new_tokens = check_int("max_new_tokens", max_new_tokens, minimum=1)
        self.cache_rows = check_int("private_cache_rows", cache_rows, minimum=1)
        self.chunk_rows = min(MAX_SEQUENCES, check_int("private_chunk_rows", chunk_rows, minimum=1))
        self.prompts = distinct_prompts(lm, texts, keep_last)
        kept = [list(ids) for ids, _ in self.prompts[:self.cache_rows]]
        self.groups = [lm.group(kept[i:i + MAX_SEQUENCES], self.max_new_tokens)
                       for i in range(0, len(kept), MAX_SEQUENCES)]
        self.kept = kept
        self.stepped = self.groups  # step() and restart() of PrivateRows advance these
        self._chunk_context = None
        self.tokens: list[int] = []
        self.passes = 1 if self.prompts else 0

    def _context(self):
        if self._chunk_context is None:
            llm = self.lm.llm
            longest = max(len(ids) for ids, _ in self.prompts[len(self.kept):]) + self.max_new_tokens
            seq_len = min(llm.context_length, -(-longest // 256) * 256)
            self._chunk_context = SequenceContext(llm.llama.model, llm.vocab_size, self.chunk_rows, seq_len,
                                                  threads=choose_threads(), unified=False)
        return self._chunk_context

    def _row_logits(self) -> Iterator[tuple[torch.Tensor, int]]:
        """``(logits (1, vocab), multiplicity)`` of every distinct prompt, in order, at most a chunk at a time."""
        counts = iter(count for _, count in self.prompts)
        for group in self.groups:
            logits = torch.from_numpy(group.logits_array)
            for row in range(group.rows):
                yield logits[row:row + 1], next(counts)
        rest = self.prompts[len(self.kept):]
        for start in range(0, len(rest), self.chunk_rows):
            chunk = rest[start:start + self.chunk_rows]
            context = self._context()
            context.clear()
            # the operations of a cached row: the prompt alone, then one step per released token
            logits = np.concatenate([context.feed([(j, list(ids))]) for j, (ids, _) in enumerate(chunk)])
            for token in self.tokens:
                logits = context.feed([(j, [token]) for j in range(len(chunk))])
            for j, (_, count) in enumerate(chunk):
                yield torch.from_numpy(logits[j:j + 1]), count

    def close(self) -> None:
        """Free the llama.cpp contexts (they hold the private prompts' KV caches)."""
        for group in self.groups:
            group.close()
        if self._chunk_context is not None:
            self._chunk_context.close()
            self._chunk_context = None


def is_llamacpp(lm) -> bool:
    """Whether ``lm`` decodes private prediction on llama.cpp."""
    return isinstance(lm, LlamaCppPrivateLM)


def _bundled_tokenizer():
    """The bundled model's Hugging Face tokenizer: from the PyTorch copy when made, else read from the GGUF once
    and kept in the dpkit cache (no model weights are converted)."""
    runtime.set_offline()
    for folder in (_bundled_cache(), runtime.cache_dir() / "smollm2-135m-instruct-tokenizer"):
        if (folder / "tokenizer.json").exists() or (folder / "tokenizer_config.json").exists():
            return saved_tokenizer(folder)
    tokenizer = gguf_tokenizer(smollm2_gguf())
    try:
        with atomic_folder(folder, replace=True) as staging:
            tokenizer.save_pretrained(staging)
    except OSError:  # pragma: no cover - a read-only cache: read from the GGUF next time too
        pass
    return tokenizer


def gguf_tokenizer(gguf: Path):
    """The Hugging Face tokenizer stored in the GGUF file ``gguf`` (read by transformers; no weights converted)."""
    return runtime.import_transformers().AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)


def saved_tokenizer(folder: Path):
    """The tokenizer saved in ``folder``, of the class its ``tokenizer_config.json`` names.

    The same object :class:`transformers.AutoTokenizer` returns for the folder (same class, same
    files, so the same token ids and chat template; ``tests/test_pp_tokenizer_load.py``), without
    AutoTokenizer's model-configuration lookup, which costs about 2 CPU-seconds in every process
    that decodes privately. A folder that names no class transformers exports goes through
    AutoTokenizer.
    """
    transformers = runtime.import_transformers()
    config = Path(folder) / "tokenizer_config.json"
    name = json.loads(config.read_text()).get("tokenizer_class") if config.exists() else None
    cls = getattr(transformers, name, None) if isinstance(name, str) else None
    return (cls or transformers.AutoTokenizer).from_pretrained(folder)


@lru_cache(maxsize=2)
def load_private_llamacpp(model: str | None = None) -> LlamaCppPrivateLM:
    """The bundled SmolLM2 (``None``) or a ``.gguf`` file for private prediction on llama.cpp; cached per process."""
    llm = load_llamacpp(model)
    if model is None:
        tokenizer = _bundled_tokenizer()
    else:
        tokenizer = gguf_tokenizer(Path(model).expanduser())
    return LlamaCppPrivateLM(llm, tokenizer, None if model is None else str(Path(model).expanduser().resolve()))


def is_local_backend(model) -> bool:
    """Whether ``model`` is an in-process backend with an ``lm`` (the local backend), asked without loading it.

    ``hasattr(backend, "lm")`` would run the property, which loads the PyTorch model: wasted
    memory for the bundled model on llama.cpp, and an error for a GGUF file such as
    ``--model qwen2.5-coder-1.5b``, which PyTorch cannot read as a model folder.
    """
    if getattr(model, "remote", None) is not False:
        return False
    return hasattr(type(model), "lm") or "lm" in getattr(model, "__dict__", {})


def runtime_name(model=None, runtime: str | None = None) -> str:
    """``"llamacpp"`` or ``"torch"``: the runtime private prediction decodes ``model`` with.

    ``model`` as :func:`~dpkit.privpred.pipeline.resolve_local_lm` takes it (None / ``"local"``: the bundled
    model under ``runtime`` or ``DPKIT_RUNTIME``, default ``auto``; a local backend: its runtime; a loaded model:
    its own). For provenance: ``runtime.private_prediction`` of a result.
    """
    if is_llamacpp(model):
        return RUNTIME
    if model is None or model == "local":
        return resolve_runtime(runtime)
    if is_local_backend(model):
        return RUNTIME if getattr(model, "runtime", "torch") == RUNTIME else "torch"
    return "torch"
