"""Decoding one batch of Algorithm 1 with the KV cache.

:func:`decode_batch` runs every private prompt of one batch in ITS OWN row
(:mod:`dpkit.privpred.private_rows`), and the public prompt in its own row
too, each with its own forward pass, attention and positions: a private row's
logits are a function of its own prompt and the released tokens only, and the
public logits (which pick the top-k candidates, drive the sparse-vector test
and give the free public tokens) of the public prompt and the released tokens
only, bit for bit, whatever else is in the batch. Memory is bounded by public
parameters (``private_cache_rows`` rows keep a cache, the others are
recomputed ``private_chunk_rows`` at a time), whatever the batch's private size.
The prompts are encoded once (prefill); afterwards each generated token costs
one step of every cached row, reusing the key / value caches -- the prefix is
never re-encoded. On supported models the rows walk the
decoder together, operation by operation, without ever sharing an operation
(:mod:`dpkit.privpred.stepping`): the weights read for one row are
re-used from the processor's cache for the next, and the logits are
those of separate passes, bit for bit. The sampled token is appended to every row,
so all rows continue the same synthetic text. When an example ends (``<eos>``
or ``max_new_tokens``) and the batch still has private-token budget, the caches
are cropped back to the prompts and the next example starts from the cached
prefill logits (no new prefill).

An EMPTY batch (``n = 0``) is decoded like any other: the averaged clipped
logits are the zero vector (a private token is uniform over the candidates) and
the sparse-vector distance is exactly 1. Adding one prompt to it moves the
average by at most ``c/s`` and the distance by at most ``1/s``: the per-record
analysis of Theorem 1 covers ``0 -> 1`` prompts.

At each step (see :mod:`dpkit.privpred.sampling` and :mod:`dpkit.privpred.svt`):

0. optional grammar (:mod:`dpkit.privpred.grammar`): the candidates are the
   tokens that keep a JSON record valid, a function of the public schema and the
   released tokens; a step with ONE candidate emits it, *forced*, without
   reading the private rows, without an SVT query and without randomness;
1. optional candidate set: the public row's top-``k`` tokens (public data only),
   within the grammar's candidates when there is a grammar;
2. with SVT on, an AboveThreshold query on ``d(Z, z_pub)``; below the noisy
   threshold a public token is drawn from ``softmax(z_pub / tau_public)``;
3. otherwise a private token from ``softmax(zbar / tau)``, ``zbar`` the clipped
   logits (float64) summed and divided by the EXPECTED batch size ``s``; the
   private token counter ``t`` grows and a new AboveThreshold run starts.

Decoding of the batch stops when ``t`` reaches the cap ``r`` (the guarantee is
computed from ``r``, never from the tokens actually used), when
``max_examples`` examples are done, or after ``max_steps`` tokens; the last
example may then be incomplete (``complete=False``). With a grammar no example
is cut: one that reaches the cap ``r`` is finished with public tokens only (the
public row's prediction within the grammar, no private row read, no SVT
query), and no example is started that its longest form would not fit into the
remaining ``max_steps``. All of these stopping rules depend on the released
tokens and public constants only.

The voice's text rules (``stop``, ``banned``, ``min_new_tokens``, ``no_repeat_ngram``;
:class:`dpkit.models.voice.DecodingRules`) remove candidates before the top-k is
taken -- the token completing a banned assistant opening, before the public
minimum length the end tokens and tokens holding a stop sequence, and every token
that would repeat an n-gram the text already holds -- and end an
example at a stop sequence. They read the released tokens only, so every row
(public and private) sees the same restriction; the draw is then the
exponential mechanism over a public candidate set. ``finish_public``: an example
that reaches the cap ``r`` without a grammar is finished from the public row
alone (no private row read, no SVT query), as with a grammar, instead of cut.

Public input rule: a private prompt longer than the model's context minus
``max_new_tokens`` keeps its LAST tokens (the answer prefix); a long private
prompt never aborts a release. (The pipeline first cuts every record to a
declared token cap.) Only a public prompt that does not fit is an error.

Randomness: one ``numpy.random.Generator`` per batch; the model itself is
deterministic, so the same seed and prompts give the same tokens.
``use_cache=False`` re-encodes the whole prefix at every step (the approach of
earlier work, kept only as a benchmark baseline): same tokens, more compute.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Callable, Sequence

import numpy as np
import torch

from dpkit.models.voice import DecodingRules, check_no_repeat_ngram
from dpkit.privacy.invisibleink import DEFAULT_VARIANT, check_variant
from dpkit.privacy.private_prediction import check_batch_size
from dpkit.privpred.grammar import JsonGrammar, compile_grammar
from dpkit.privpred.invisibleink import sample_invisibleink_token_from_sum, topk_plus_candidates
from dpkit.privpred.llamacpp_engine import LlamaCppPrivateRows, is_llamacpp
from dpkit.privpred.private_rows import PrivateRows
from dpkit.privpred.rows import advance, open_rows, tokenize
from dpkit.privpred.sampling import sample_private_token_from_sum, sample_public_token
from dpkit.privpred.svt import check_svt_parameters, svt_gate, svt_step_from_sum
from dpkit.validate import ParameterError, check_int, check_positive


@dataclass(frozen=True)
class DecodeSettings:
    """Public parameters of Algorithm 1 for one batch (validated on construction).

    ``expected_batch_size`` s, ``clip`` c, ``temperature`` tau,
    ``public_temperature`` tau_public, ``svt_threshold`` theta and ``svt_sigma``
    sigma (theta ``None`` = SVT off: every token is private), ``top_k`` (None =
    full vocabulary), ``max_private_tokens`` r (the cap the guarantee is computed
    from), ``max_new_tokens`` per example, ``max_examples`` per batch (None = no
    limit), ``max_steps`` tokens per batch (None = ``r * max_new_tokens``... i.e.
    a generous bound, only relevant with SVT on), ``grammar``: a public
    :class:`~dpkit.privpred.grammar.JsonGrammar` every example follows (None = free text);
    ``private_cache_rows``: distinct private prompts that keep a key / value cache
    between steps, ``private_chunk_rows``: private rows recomputed at once (the
    others): public bounds on memory, which never change the output
    (:mod:`dpkit.privpred.private_rows`); ``variant``: ``"amin"`` (the seed paper's
    Eq. 1 clip-and-recenter on the public top-k) or ``"invisibleink"`` (DClip against
    the public row's logits and Top-k+ candidates, :mod:`dpkit.privpred.invisibleink`;
    ``clip`` is then DClip's norm C).

    The defaults here are private prediction's one set of decoding defaults:
    :class:`~dpkit.privpred.pipeline.PrivatePredictionConfig` (and so ``dpkit synth
    pp``) reads its own from these fields, and builds its settings with :meth:`settings
    <dpkit.privpred.pipeline.PrivatePredictionConfig.settings>`.
    """

    expected_batch_size: float
    clip: float
    temperature: float
    max_private_tokens: int
    public_temperature: float = 1.5
    svt_threshold: float | None = None
    svt_sigma: float | None = None
    top_k: int | None = 50
    max_new_tokens: int = 32
    max_examples: int | None = None
    max_steps: int | None = None
    grammar: JsonGrammar | None = None
    private_cache_rows: int = 64
    private_chunk_rows: int = 8
    variant: str = DEFAULT_VARIANT
    stop: tuple[str, ...] = ()        # the voice's public text rules (dpkit.models.voice.DecodingRules):
    banned: tuple[str, ...] = ()      # stop sequences, banned openings, no end before min_new_tokens,
    min_new_tokens: int = 0           # and, at the cap r, the text finished from the public row alone
    #                                   (above max_new_tokens: no text ends early; each runs to max_new_tokens)
    finish_public: bool = False
    no_repeat_ngram: int = 0          # no n-gram twice in a text (0: no rule), by the released tokens alone

    def __post_init__(self):
        check_batch_size(self.expected_batch_size, "expected_batch_size")
        check_positive("clip", self.clip)
        check_positive("temperature", self.temperature)
        check_positive("public_temperature", self.public_temperature)
        check_int("max_private_tokens", self.max_private_tokens, minimum=1)
        check_int("max_new_tokens", self.max_new_tokens, minimum=1)
        threshold, sigma = check_svt_parameters(self.svt_threshold, self.svt_sigma)
        object.__setattr__(self, "svt_threshold", threshold)
        object.__setattr__(self, "svt_sigma", sigma)
        if self.top_k is not None:
            check_int("top_k", self.top_k, minimum=1)
        if self.max_examples is not None:
            check_int("max_examples", self.max_examples, minimum=1)
        if self.max_steps is not None:
            check_int("max_steps", self.max_steps, minimum=1)
        check_int("private_cache_rows", self.private_cache_rows, minimum=1)
        check_int("private_chunk_rows", self.private_chunk_rows, minimum=1)
        check_variant(self.variant)
        object.__setattr__(self, "stop", tuple(self.stop))
        object.__setattr__(self, "banned", tuple(self.banned))
        check_int("min_new_tokens", self.min_new_tokens, minimum=0)
        check_no_repeat_ngram(self.no_repeat_ngram)
        if not isinstance(self.finish_public, bool):
            raise ParameterError("finish_public", self.finish_public, "must be True or False")
        if self.grammar is not None and not isinstance(self.grammar, JsonGrammar):
            raise ParameterError("grammar", self.grammar, "must be a JsonGrammar or None")

    @property
    def svt(self) -> bool:
        return self.svt_threshold is not None

    @property
    def step_limit(self) -> int:
        if self.max_steps is not None:
            return int(self.max_steps)
        per_example = self.max_new_tokens
        examples = self.max_examples if self.max_examples is not None else self.max_private_tokens
        return int(per_example * (examples if self.svt else min(examples, self.max_private_tokens)))

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class Example:
    """One synthetic text: token ids, which were private, and whether it ended with <eos>."""

    text: str
    token_ids: list[int]
    private: list[bool]
    complete: bool

    @property
    def private_fraction(self) -> float:
        return float(np.mean(self.private)) if self.private else 0.0


@dataclass
class BatchResult:
    """What one batch released, with counts of its released tokens (the guarantee uses the cap r).

    Holds nothing about the batch's private prompts beyond the released tokens:
    no batch size. ``forward_passes`` is kept for tests and benchmarks and is
    NOT part of :meth:`to_record` (an empty batch runs no private pass).
    """

    examples: list[Example] = field(default_factory=list)
    private_tokens: int = 0
    public_tokens: int = 0
    forced_tokens: int = 0
    forward_passes: int = 0
    stopped_by: str = ""

    def to_record(self) -> dict:
        """The releasable part: the examples and counts that are functions of the released tokens."""
        return {"examples": [asdict(e) for e in self.examples], "private_tokens": self.private_tokens,
                "public_tokens": self.public_tokens, "forced_tokens": self.forced_tokens,
                "stopped_by": self.stopped_by}


def _public_top_k(public_z: torch.Tensor, k: int | None, within: torch.Tensor | None = None):
    """The public row's top-``k`` token ids, sorted, among ``within`` (None: the whole vocabulary).

    ``k`` None: all of ``within`` (None = no restriction). Public data only.
    """
    if within is not None:
        within = within.to(public_z.device)
        if k is None:
            return within
        k = min(int(k), int(within.shape[0]))
        return torch.sort(within[torch.topk(public_z[within], k, sorted=False).indices]).values
    if k is None:
        return None
    k = min(int(k), int(public_z.shape[-1]))
    return torch.sort(torch.topk(public_z, k, sorted=False).indices).values


def _without(public_z: torch.Tensor, blocked) -> torch.Tensor:
    """The public logits with the ``blocked`` token ids at minus infinity (for picking candidates)."""
    if not blocked:
        return public_z
    out = public_z.clone()
    out[torch.as_tensor(sorted(blocked), device=public_z.device)] = -float("inf")
    return out


_STOP_TOKENS: dict = {}


def _text_rules(lm, settings: DecodeSettings, vocab: int):
    """The voice's :class:`~dpkit.models.voice.DecodingRules` on ``lm``'s tokenizer (None when unset)."""
    if not (settings.stop or settings.banned or settings.min_new_tokens or settings.no_repeat_ngram):
        return None
    tok = lm.tokenizer
    rules = DecodingRules(lambda t: tok(t, add_special_tokens=False)["input_ids"],
                          lambda ids: tok.decode(list(ids), skip_special_tokens=True), vocab, lm.eos_token_ids,
                          stop=settings.stop, banned=settings.banned, min_new_tokens=settings.min_new_tokens,
                          no_repeat_ngram=settings.no_repeat_ngram)
    if settings.stop and settings.min_new_tokens:   # the vocabulary scan once per model and stop list
        key = (id(lm), settings.stop)
        if key not in _STOP_TOKENS:
            _STOP_TOKENS[key] = rules.stop_tokens()
        rules._stop_tokens = _STOP_TOKENS[key]
    return rules


def decode_batch(lm, private_texts: Sequence[str], public_text: str, settings: DecodeSettings,
                 rng: np.random.Generator, *, use_cache: bool = True, grouped_steps: bool = True,
                 on_example: Callable[[Example], None] | None = None,
                 on_step: Callable[[int, torch.Tensor], None] | None = None,
                 public_only: bool = False) -> BatchResult:
    """Run Algorithm 1's inner loops on one batch; ``private_texts`` and ``public_text`` are rendered prompts.

    ``lm`` is a :class:`~dpkit.models.lm.LocalLM` (PyTorch) or a
    :class:`~dpkit.privpred.llamacpp_engine.LlamaCppPrivateLM` (llama.cpp's logits,
    the same token ids, rules and sampler; its rows always keep their cache, so
    ``use_cache`` and ``grouped_steps`` apply to PyTorch only); private prompts
    never leave the process. ``private_texts`` may be empty (an empty hash batch is decoded
    like any other). Private prompts too long for the context are left-truncated
    (a public rule); a public prompt that does not fit with ``max_new_tokens``
    raises :class:`ParameterError` (public data only, checked before decoding).
    ``on_step(step, public_logits)`` sees the public row's logits before each token.
    ``grouped_steps`` (default) steps the private rows and the public row together
    through :func:`~dpkit.privpred.stepping.advance_groups` when the model is
    supported (same logits, bit for bit, as two forward passes; faster); False
    keeps the model's own forward, one pass per group. ``public_only``: every
    token from the public row (the epsilon = 0 baseline: no private prompts, no
    SVT); decoding ends by ``max_examples`` or ``max_steps``, one of which is needed.
    """
    if not isinstance(settings, DecodeSettings):
        raise ParameterError("settings", settings, "must be a DecodeSettings")
    if not isinstance(rng, np.random.Generator):
        raise ParameterError("rng", rng, "must be a numpy.random.Generator")
    if isinstance(private_texts, str) or not all(isinstance(t, str) for t in private_texts):
        raise ParameterError("private_texts", private_texts, "must be a sequence of rendered prompts (may be empty)")
    if not isinstance(public_text, str) or not public_text:
        raise ParameterError("public_text", public_text, "must be a non-empty rendered prompt")
    if public_only and (len(private_texts) or (settings.max_examples is None and settings.max_steps is None)):
        raise ParameterError("public_only", public_only, "needs no private prompts and settings with max_examples "
                                                         "or max_steps (nothing else ends a public-only decoding)")
    room = lm.context_length - settings.max_new_tokens
    public_len = len(lm.tokenizer(public_text, add_special_tokens=False)["input_ids"])
    if public_len > room:
        raise ParameterError("max_new_tokens", settings.max_new_tokens,
                             f"the PUBLIC prompt of {public_len} tokens plus max_new_tokens exceeds the model's "
                             f"context of {lm.context_length} tokens")
    grammar = compile_grammar(settings.grammar, lm) if settings.grammar is not None else None
    if grammar is not None and grammar.longest_record() > settings.max_new_tokens:
        raise ParameterError("max_new_tokens", settings.max_new_tokens,
                             f"must be at least {grammar.longest_record()}: the grammar's longest record under "
                             f"its caps (lower max_string_tokens or max_digits, or raise max_new_tokens)")
    if is_llamacpp(lm):  # llama.cpp logits, same ids and rules (dpkit.privpred.llamacpp_engine); always cached
        public = lm.group(lm.tokenizer([public_text], add_special_tokens=False)["input_ids"], settings.max_new_tokens)
        private = LlamaCppPrivateRows(lm, list(private_texts), keep_last=room, max_new_tokens=settings.max_new_tokens,
                                      cache_rows=settings.private_cache_rows, chunk_rows=settings.private_chunk_rows)
    else:
        public = open_rows(lm, *tokenize(lm, [public_text], None), use_cache, grouped_steps, settings.max_new_tokens)
        private = PrivateRows(lm, list(private_texts), keep_last=room, max_new_tokens=settings.max_new_tokens,
                              cache_rows=settings.private_cache_rows, chunk_rows=settings.private_chunk_rows,
                              use_cache=use_cache, grouped=grouped_steps)
    try:
        return _decode(lm, public, private, settings, rng, grammar, public_only, on_example, on_step)
    finally:
        for rows in (public, private):
            getattr(rows, "close", lambda: None)()  # llama.cpp contexts are freed now, not at garbage collection


def _decode(lm, public, private, settings: DecodeSettings, rng: np.random.Generator, grammar, public_only: bool,
            on_example, on_step) -> BatchResult:
    """The token loop of :func:`decode_batch` over opened public and private rows."""
    eos = set(lm.eos_token_ids)
    s, c, tau = settings.expected_batch_size, settings.clip, settings.temperature
    gate = svt_gate(settings.svt_threshold, settings.svt_sigma, s) if settings.svt else None
    session = gate.session(rng) if gate is not None else None
    vocab = int(public.prompt_logits.shape[-1])
    invisible_ink = settings.variant == "invisibleink"
    rules = _text_rules(lm, settings, vocab) if grammar is None else None

    result = BatchResult()
    tokens: list[int] = []
    private_flags: list[bool] = []
    steps = 0
    where = grammar.start() if grammar is not None else None
    # with a grammar, once the cap r is reached: public tokens until the record ends
    public_only = bool(public_only)
    step_limit = settings.step_limit if not public_only else (
        settings.max_steps or settings.max_new_tokens * settings.max_examples)

    def finish(complete: bool):
        nonlocal where
        text = lm.tokenizer.decode(tokens, skip_special_tokens=True)
        ex = Example((rules.cut(text) if rules is not None else text).strip(), list(tokens),
                     list(private_flags), complete)
        result.examples.append(ex)
        if on_example is not None:
            on_example(ex)
        tokens.clear()
        private_flags.clear()
        where = grammar.start() if grammar is not None else None

    while True:
        public_z = public.logits[0]
        if on_step is not None:
            on_step(steps, public_z)
        forced, within = where.step() if where is not None else (None, None)
        is_private = forced is None and not public_only
        if forced is None:
            # the voice's rules remove candidates by the released tokens alone (same for every row)
            blocked = rules.blocked(tokens) if rules is not None else None
            pick_z = _without(public_z, blocked)
            if invisible_ink and not public_only:  # Top-k+: the public top-k widened by 2c (public data only)
                allowed = topk_plus_candidates(pick_z, settings.top_k, c, within)
            else:
                allowed = _public_top_k(pick_z, settings.top_k, within)
            if allowed is None and blocked:
                allowed = torch.tensor(sorted(set(range(vocab)) - blocked), device=public_z.device)
            if not public_only:  # the private rows are read: their sums at this step, one row at a time
                stats = private.statistics(c, allowed, vocab, softmax=session is not None, device=public_z.device,
                                           reference=public_z if invisible_ink else None)
            if session is not None and not public_only:
                is_private, _ = svt_step_from_sum(stats.softmax_sum, public_z, s, session)
        if forced is not None:
            token = forced
            result.forced_tokens += 1
        elif is_private and invisible_ink:  # u = z_pub + (sum of DClip differences) / s on the candidates
            public_on = public_z if allowed is None else public_z[allowed.to(public_z.device)]
            token = sample_invisibleink_token_from_sum(stats.clipped_sum, public_on, c, s, tau, rng,
                                                       candidates=allowed)
            result.private_tokens += 1
            if session is not None:
                session = gate.session(rng)
        elif is_private:
            token = sample_private_token_from_sum(stats.clipped_sum, c, s, tau, rng, candidates=allowed)
            result.private_tokens += 1
            if session is not None:
                session = gate.session(rng)  # fresh threshold noise after each private token
        else:
            token = int(sample_public_token(public_z, settings.public_temperature, rng, allowed=allowed))
            result.public_tokens += 1
        steps += 1
        ended = token in eos
        if not ended:
            if where is not None:
                where.advance(token)
            tokens.append(token)
            private_flags.append(is_private)
            ended = rules is not None and rules.ended(tokens)   # a stop sequence: the text is complete
        if ended or len(tokens) >= settings.max_new_tokens:
            finish(complete=ended)
            if result.private_tokens >= settings.max_private_tokens:
                result.stopped_by = "private-token cap r"
                break
            if settings.max_examples is not None and len(result.examples) >= settings.max_examples:
                result.stopped_by = "max_examples"
                break
            if steps >= step_limit or (grammar is not None
                                                and steps + grammar.longest_record() > step_limit):
                result.stopped_by = "max_steps"  # with a grammar: no record is started that could not end
                break
            public.restart()
            private.restart()
            continue
        if result.private_tokens >= settings.max_private_tokens and not public_only:
            if grammar is None and not settings.finish_public:
                finish(complete=False)
                result.stopped_by = "private-token cap r"
                break
            public_only = True  # the record is finished from the public prompt alone, for free
        if steps >= step_limit:
            finish(complete=False)
            result.stopped_by = "max_steps"
            break
        advance(([] if public_only else private.step(token)) + [public], token)
    result.forward_passes = public.passes + private.passes
    return result
