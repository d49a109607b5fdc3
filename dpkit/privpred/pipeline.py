"""Private prediction end to end: prompts -> hash batches -> private decoding -> synthetic data.

:func:`generate_synthetic` is Algorithm 1 of {cite}`amin2024private` on a list
of sensitive records:

1. budget first: from the target ``(epsilon, delta)`` and ``(s, c, tau, sigma)``
   the privacy core's :func:`~dpkit.privacy.max_private_tokens` (Theorem 1)
   gives the cap ``r`` of private tokens per batch; too small a target for even
   one private token is an error. The run's guarantee is the one at ``r``, and
   it is entered in a :class:`~dpkit.privacy.PrivacyLedger` (parallel
   composition over the batches) before any private prompt is decoded;
2. every record is cut to ``max_record_tokens`` tokens (a declared public cap),
   becomes a private prompt (:mod:`dpkit.privpred.prompts`) and is hashed into
   a batch of the PUBLIC layout (:mod:`dpkit.privpred.batching`): ``n_batches``
   per label of the public label set;
3. EVERY batch index of the layout is decoded, empty batches included, with its
   label's public prompt (:func:`dpkit.privpred.decode.decode_batch`) on a LOCAL
   model only. ``max_batches`` keeps batch numbers ``0 .. max_batches-1`` of
   every label: fixed indices, never "the first non-empty ones".

Release rule: what comes back (and what ``run=`` writes) is the released tokens
and counts that are functions of them, nothing else about the private records
-- no batch sizes. Nothing private-data-dependent can abort a started release:
records are cut to the token cap, an empty record becomes ``EMPTY_RECORD``,
prompts longer than the context keep their last tokens.

Privacy contract (checked by the ledger, printed by ``result.contract``):
neighbouring = add/remove one sensitive record (its prompt); unit = prompt;
measure = zCDP at the cap ``r`` by Theorem 1 as :func:`~dpkit.privacy.private_prediction_rho`
states it (with the grids of exact sampling), reported as
``(epsilon, delta)`` at the cap; sensitivity ``c/s`` of the averaged clipped
logits and ``1/s`` of the sparse-vector distance, also from 0 to 1 prompts (an
empty batch averages to zero). Labels are treated as public (the batch of a
record may depend on its label, which is part of the record), as are the label
set and the number of batches.

Randomness, two modes:

* release mode (``seed=None``, the default): the root
  ``numpy.random.SeedSequence()`` takes fresh entropy from the operating
  system; nothing that could regenerate the noise is kept or written;
* reproducible mode (an integer ``seed``, or a caller's ``SeedSequence``): the
  same seed gives the same tokens. For teaching and tests: anyone who knows the
  seed can regenerate the noise, so this is NOT a differentially private release.

Batch ``b`` of label ``l`` draws from its own seed node, the sealed node
``(l + 1, b)`` of the root (:func:`dpkit.seeds.batch_sequence`: a one-way hash of
the root and the index, never ``seed + k``), so a batch's noise depends on its
index alone: a resumed run, another worker or another executor redraws the
same noise for the same batch. Only that node travels with the batch's job; the
root stays in the driver.

Crash safety: with ``run=`` a :class:`dpkit.runs.Run`, each batch's tokens are
written as soon as the batch is done and a resumed run skips finished batches;
an interrupted batch is decoded again from its own node (in reproducible mode
the same tokens; in release mode fresh noise, and only one output of the batch
is ever written).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Sequence

import numpy as np

from dpkit.privacy import (Charge, PrivacyLedger, max_private_tokens, private_prediction_contract,
                           private_prediction_guarantee, zcdp_to_epsilon)
from dpkit.privacy.invisibleink import (check_variant, invisibleink_contract, invisibleink_guarantee,
                                        invisibleink_max_private_tokens)
from dpkit.privpred.batching import assign_batches, batch_layout, batch_name
from dpkit.privpred.decode import DecodeSettings
from dpkit.privpred.grammar import JsonGrammar
from dpkit.models.lm import LocalLM, load_lm
from dpkit.privpred.executors import check_executor
from dpkit.privpred.llamacpp_engine import LlamaCppPrivateLM, is_local_backend, load_private_llamacpp, runtime_name
from dpkit.privpred.jobs import BatchJob
from dpkit.privpred.prompts import PromptTemplate
from dpkit.runs import digest, progress
from dpkit.seeds import batch_rng, batch_sequence, root_sequence  # noqa: F401 (batch_rng: one batch's generator)
from dpkit.validate import ParameterError, check_epsilon_cap, check_int, check_probability


class RemoteBackendError(ParameterError):
    """Private prediction was pointed at a model that is not in this process."""


def resolve_local_lm(model=None, runtime: str | None = None):
    """The local model to decode private prompts with: PyTorch's LocalLM or llama.cpp's engine.

    Accepts ``None`` (the bundled model, on ``runtime``: ``"auto"`` / ``"llamacpp"`` /
    ``"torch"``, None = ``DPKIT_RUNTIME`` or auto, i.e. llama.cpp on a CPU where it is
    installed), a :class:`~dpkit.models.lm.LocalLM` (PyTorch), a
    :class:`~dpkit.privpred.llamacpp_engine.LlamaCppPrivateLM`, the local backend (its
    own runtime) or its name ``"local"``. :func:`~dpkit.privpred.llamacpp_engine.runtime_name`
    says which runtime this picks. API backends are refused: private prompts must not
    leave the process, and those APIs return no full logit vectors anyway.
    """
    if model is None or model == "local":
        if runtime_name(None, runtime) == "llamacpp":
            return load_private_llamacpp()
        return load_lm()
    if isinstance(model, (LocalLM, LlamaCppPrivateLM)):
        return model
    if is_local_backend(model):
        if runtime_name(model) == "llamacpp":
            return load_private_llamacpp(getattr(model, "model_request", None))
        return model.lm
    if hasattr(model, "model") and hasattr(model, "tokenizer") and hasattr(model, "encode"):
        return model  # a LocalLM-like object (tests)
    raise RemoteBackendError("model", model, "private prediction decodes PRIVATE prompts and needs full logits: "
                             "use a local model (None, 'local', a LocalLM or the local backend); API backends "
                             "refuse private prompts and expose no full logits")


_DECODING = {f.name: f.default for f in fields(DecodeSettings)}  # the decoding defaults, stated once there


@dataclass(frozen=True)
class PrivatePredictionConfig:
    """Target guarantee and sampling parameters of a run (validated on construction).

    The one home of private prediction's public parameters and their defaults:
    ``dpkit synth pp``'s configuration (:class:`dpkit.methods.pp.Config`) is this
    class plus the release layout. The cap ``r`` is computed once per instance.
    """

    epsilon: float
    delta: float
    expected_batch_size: float = 8.0
    clip: float = 2.0
    temperature: float = 1.0
    # the decoding parameters take their defaults from DecodeSettings (one set of defaults)
    public_temperature: float = _DECODING["public_temperature"]
    svt_threshold: float | None = _DECODING["svt_threshold"]
    svt_sigma: float | None = _DECODING["svt_sigma"]
    top_k: int | None = _DECODING["top_k"]
    max_new_tokens: int = _DECODING["max_new_tokens"]
    max_examples_per_batch: int | None = _DECODING["max_examples"]
    max_steps_per_batch: int | None = _DECODING["max_steps"]
    hash_key: str = ""
    max_record_tokens: int = 256
    grammar: JsonGrammar | None = _DECODING["grammar"]  # public: every example a valid record (privpred.grammar)
    private_cache_rows: int = _DECODING["private_cache_rows"]  # public memory bounds (privpred.private_rows): rows
    private_chunk_rows: int = _DECODING["private_chunk_rows"]  # with a cache, rows recomputed at once; no output change
    variant: str = _DECODING["variant"]  # "amin" (the seed paper) or "invisibleink" (DClip + Top-k+, clip = C)
    stop: tuple[str, ...] = _DECODING["stop"]  # the voice's public text rules (dpkit.models.voice), the same for
    banned: tuple[str, ...] = _DECODING["banned"]  # every row: stop sequences, banned openings, no end before
    min_new_tokens: int = _DECODING["min_new_tokens"]  # min_new_tokens, and at the cap r the text finished from
    finish_public: bool = _DECODING["finish_public"]  # the public row alone (post-processing)
    no_repeat_ngram: int = _DECODING["no_repeat_ngram"]  # no n-gram twice in a text, by the released tokens

    def __post_init__(self):
        check_variant(self.variant)
        object.__setattr__(self, "stop", tuple(self.stop))
        object.__setattr__(self, "banned", tuple(self.banned))
        check_epsilon_cap("epsilon", self.epsilon)
        check_probability("delta", self.delta)
        check_int("max_record_tokens", self.max_record_tokens, minimum=1)
        self.settings()  # validates everything else
        if self.max_private_tokens() < 1:
            r1 = self._accounting()[1](1, self.expected_batch_size, self.clip, self.temperature,
                                       self.svt_sigma).rho()
            raise ParameterError("epsilon", self.epsilon,
                                 f"is too small for even one private token at delta={self.delta:g}: one token "
                                 f"costs epsilon={zcdp_to_epsilon(r1, self.delta):.4g} with s="
                                 f"{self.expected_batch_size:g}, c={self.clip:g}, tau={self.temperature:g}"
                                 + (f", sigma={self.svt_sigma:g}" if self.svt_sigma else "")
                                 + " (raise s or tau, or lower c)")

    def _accounting(self):
        """(cap, contract, guarantee) functions of this variant's one home in :mod:`dpkit.privacy`."""
        if self.variant == "invisibleink":
            return invisibleink_max_private_tokens, invisibleink_contract, invisibleink_guarantee
        return max_private_tokens, private_prediction_contract, private_prediction_guarantee

    def max_private_tokens(self) -> int:
        """The cap ``r`` from Theorem 1 (tight zCDP -> (epsilon, delta) conversion), computed once."""
        if "_r" not in self.__dict__:   # frozen: the fields cannot change, so neither can r
            object.__setattr__(self, "_r", self._accounting()[0](
                self.epsilon, self.delta, self.expected_batch_size, self.clip, self.temperature,
                self.svt_sigma if self.svt_threshold is not None else None))
        return self.__dict__["_r"]

    def settings(self, r: int | None = None) -> DecodeSettings:
        return DecodeSettings(
            expected_batch_size=self.expected_batch_size, clip=self.clip, temperature=self.temperature,
            max_private_tokens=r if r is not None else 1, public_temperature=self.public_temperature,
            svt_threshold=self.svt_threshold, svt_sigma=self.svt_sigma, top_k=self.top_k,
            max_new_tokens=self.max_new_tokens, max_examples=self.max_examples_per_batch,
            max_steps=self.max_steps_per_batch, grammar=self.grammar, private_cache_rows=self.private_cache_rows,
            private_chunk_rows=self.private_chunk_rows, variant=self.variant, stop=self.stop, banned=self.banned,
            min_new_tokens=self.min_new_tokens, finish_public=self.finish_public,
            no_repeat_ngram=self.no_repeat_ngram)

    def contract(self):
        """Theorem 1's contract at the cap ``r`` (not at the tokens a run happens to use)."""
        return self._accounting()[1](self.max_private_tokens(), self.expected_batch_size, self.clip,
                                     self.temperature, self.svt_sigma if self.svt_threshold is not None
                                           else None)

    def guarantee(self) -> dict:
        """rho, and epsilon at ``delta`` by both conversions of Theorem 1, at the cap (one home:
        :func:`dpkit.privacy.private_prediction.private_prediction_guarantee`)."""
        guarantee = self._accounting()[2](
            self.max_private_tokens(), self.delta, self.expected_batch_size, self.clip, self.temperature,
            self.svt_sigma if self.svt_threshold is not None else None)
        return {**guarantee, "target_epsilon": self.epsilon}

    def to_dict(self) -> dict:
        return asdict(self)


def pp_charge(config: PrivatePredictionConfig, n_batches: int, n_labels: int | None) -> Charge:
    """Private prediction's one charge, declared from public parameters: Theorem 1's contract at the
    cap ``r``, once per batch, parallel over the ``n_batches`` x labels public batches (disjoint: a
    record's batch is a hash of the record alone). :func:`generate_synthetic` charges it before it
    reads a record; ``dpkit synth pp --plan`` charges the same."""
    return Charge(f"private prediction, r={config.max_private_tokens()} per batch", config.contract(),
                  groups=n_batches * (n_labels or 1))


#: public bounds on memory that never change a release: a run may be resumed with other values
MEMORY_FIELDS = ("private_cache_rows", "private_chunk_rows")

EMPTY_RECORD = "(empty)"  # public stand-in for an empty record (a prompt is never empty)


@dataclass
class SyntheticExample:
    text: str
    label: int | None
    batch_id: str
    complete: bool
    private_tokens: int
    tokens: int


@dataclass
class SyntheticResult:
    """Synthetic texts, per-batch released counts, the ledger and the guarantee at the cap.

    ``reproducible``: True when the noise came from an integer seed (NOT a
    differentially private release: the seed regenerates the noise), False in
    release mode, None for a caller's ``SeedSequence`` (the caller's mode applies).
    """

    examples: list[SyntheticExample]
    batches: list[dict]
    ledger: PrivacyLedger
    guarantee: dict
    config: PrivatePredictionConfig
    contract: object = None
    stats: dict = field(default_factory=dict)
    reproducible: bool | None = False

    def texts(self, complete_only: bool = True) -> list[str]:
        return [e.text for e in self.examples if e.text and (e.complete or not complete_only)]

    def labels(self, complete_only: bool = True) -> list[int | None]:
        return [e.label for e in self.examples if e.text and (e.complete or not complete_only)]

    @property
    def randomness_note(self) -> str:
        if self.reproducible is None:
            return "noise from the caller's SeedSequence root: the caller's randomness mode applies"
        if self.reproducible:
            return ("reproducible mode: the noise can be regenerated from the seed; this is NOT a "
                    "differentially private release")
        return "release mode: fresh noise from the operating system's entropy, not stored"


def root_seed(seed) -> tuple[np.random.SeedSequence, bool | None]:
    """``(root, reproducible)``: fresh OS entropy for ``None`` (:func:`dpkit.seeds.root_sequence`; False), the
    root of an int seed (True), or the caller's ``SeedSequence`` as it is (None: the caller knows its mode)."""
    if isinstance(seed, np.random.SeedSequence):
        return seed, None  # the caller's root: its mode (release or reproducible) is the caller's
    return root_sequence(seed), seed is not None


def cap_record(lm, text: str, max_tokens: int) -> str:
    """The public input rule: the first ``max_tokens`` tokens of ``text``; ``EMPTY_RECORD`` for an empty one."""
    if not isinstance(text, str) or not text.strip():
        return EMPTY_RECORD
    ids = lm.tokenizer(text, add_special_tokens=False)["input_ids"]
    if len(ids) <= max_tokens:
        return text
    return lm.tokenizer.decode(ids[:max_tokens], skip_special_tokens=True).strip() or EMPTY_RECORD


def _check_fits(lm, template: PromptTemplate, config: PrivatePredictionConfig, public_prompts) -> None:
    """Public check before anything is spent: prompts at the record cap fit the context with max_new_tokens."""
    room = lm.context_length - config.max_new_tokens
    for prompt in public_prompts:
        length = len(lm.tokenizer(prompt, add_special_tokens=False)["input_ids"])
        if length > room:
            raise ParameterError("max_new_tokens", config.max_new_tokens,
                                 f"the public prompt ({length} tokens) plus max_new_tokens exceeds the model's "
                                 f"context of {lm.context_length} tokens")
    frame = len(lm.tokenizer(template.render(lm, template.private_message("x", "x" if "{label}" in template.user
                                                                             else None)),
                             add_special_tokens=False)["input_ids"])
    if frame + config.max_record_tokens > room:
        raise ParameterError("max_record_tokens", config.max_record_tokens,
                             f"a prompt at the record cap (~{frame + config.max_record_tokens} tokens) plus "
                             f"max_new_tokens={config.max_new_tokens} exceeds the model's context of "
                             f"{lm.context_length} tokens: lower max_record_tokens or max_new_tokens")


def fitting_public_prompts(lm, template: PromptTemplate, config: PrivatePredictionConfig,
                           label_names: Sequence[str] | None) -> dict:
    """Each label's public prompt rendered for ``lm`` (key: the label's index; None for unlabelled input),
    checked to fit the model's context with ``max_new_tokens`` and a record at the cap (ParameterError
    naming the parameter). The one context check: ``dpkit synth --plan`` makes it
    (:mod:`dpkit.methods.sizes`) as a run does, before anything is charged or written."""
    labels = [None] if label_names is None else range(len(label_names))
    prompts = {label: template.render(lm, template.public_message(_label_name(label_names, label)))
               for label in labels}
    _check_fits(lm, template, config, prompts.values())
    return prompts


def _label_name(label_names: Sequence[str] | None, label) -> str | None:
    """How a public prompt names label index ``label`` (None: no label)."""
    return None if label is None else str(label_names[int(label)]).replace("_", " ").capitalize()


def _check_partition_inputs(records, labels, n_labels) -> None:
    """What :func:`~dpkit.privpred.batching.assign_batches` refuses, checked before the charge (no value shown)."""
    for i, text in enumerate(records):
        if not isinstance(text, str):
            raise ParameterError(f"records[{i}]", f"<{type(text).__name__}>", "must be a string")
    if labels is None:
        return
    if len(labels) != len(records):
        raise ParameterError("labels", f"<{len(labels)} labels>", f"must have one label per text ({len(records)})")
    if any(not 0 <= int(x) < n_labels for x in labels):
        raise ParameterError("labels", "<a label outside the public label set>",
                             f"must lie in the public label set 0..{n_labels - 1}")


def generate_synthetic(records: Sequence[str], template: PromptTemplate, config: PrivatePredictionConfig, *,
                       labels: Sequence[int] | None = None, label_names: Sequence[str] | None = None,
                       n_batches: int, model=None, seed: int | np.random.SeedSequence | None = None, run=None,
                       max_batches: int | None = None, ledger: PrivacyLedger | None = None,
                       executor=None) -> SyntheticResult:
    """Algorithm 1 over ``records`` (see the module docstring).

    ``n_batches``: batches per label, a PUBLIC number (e.g.
    :func:`~dpkit.privpred.batching.n_batches_for` of a declared public bound on
    the number of records); every batch index is decoded, empty ones included.
    ``label_names``: the PUBLIC label set (``labels`` index it). ``seed``: None
    = release mode (fresh OS entropy); an int or a ``SeedSequence`` =
    reproducible mode (not a DP release). ``max_batches``: decode batch numbers
    ``0 .. max_batches-1`` of each label (a smaller release; the guarantee is
    unchanged). ``ledger``: an existing ledger to spend on (one is created with
    the target as its budget otherwise). ``executor``: who decodes the batches
    (:mod:`dpkit.privpred.executors`; None = this process); it changes neither the
    output nor the guarantee.
    """
    if not isinstance(config, PrivatePredictionConfig):
        raise ParameterError("config", config, "must be a PrivatePredictionConfig")
    if not isinstance(template, PromptTemplate):
        raise ParameterError("template", template, "must be a PromptTemplate")
    if isinstance(records, str) or len(records) == 0:
        raise ParameterError("records", records, "must be a non-empty sequence of texts")
    root, reproducible = root_seed(seed)
    n_batches = check_int("n_batches", n_batches, minimum=1)
    if labels is not None and label_names is None:
        raise ParameterError("label_names", label_names, "is needed with labels (the public prompts name the label)")
    if max_batches is not None:
        max_batches = check_int("max_batches", max_batches, minimum=1)
    executor = check_executor(executor)
    lm = resolve_local_lm(model)
    r = config.max_private_tokens()
    settings = config.settings(r)
    contract = config.contract()
    n_labels = None if labels is None else len(label_names)

    def name_of(label):
        return _label_name(label_names, label)

    _check_partition_inputs(records, labels, n_labels)  # types and label range: bad input costs nothing
    layout = [batch_name(label, b) for label, b in batch_layout(n_batches, n_labels)  # public
              if max_batches is None or b < max_batches]
    if run is not None:  # a resume under another configuration or other records is refused, by name
        run.bind("private_prediction",
                 {**{k: v for k, v in config.to_dict().items() if k not in MEMORY_FIELDS},  # output-neutral
                  "max_private_tokens": r, "n_batches": n_batches,
                  "max_batches": max_batches, "label_names": list(label_names or []), "template": repr(template),
                  "runtime": runtime_name(lm)},  # one runtime per run: a resume on another is refused, by name
                 input_digest=digest({"records": list(records),
                                      "labels": None if labels is None else np.asarray(labels).tolist()}))
    done = run.records() if run is not None else {}
    public_prompts = {}
    if any(batch_id not in done for batch_id in layout):  # a fully resumed run needs no model
        public_prompts = fitting_public_prompts(lm, template, config, None if n_labels is None else label_names)
    if ledger is None:  # a library call outside a release: the configuration's budget, on a ledger of its own
        ledger = PrivacyLedger(budget_epsilon=config.epsilon, delta=config.delta)
    ledger.charge(pp_charge(config, n_batches, n_labels))
    # spend before read: the partition hashes the records, so it comes after the charge
    batches = assign_batches(records, n_batches, labels, key=config.hash_key, n_labels=n_labels)
    if max_batches is not None:
        batches = [b for b in batches if b.number < max_batches]
    pending = [batch for batch in batches if batch.batch_id not in done]

    def jobs():  # rendered lazily: only the jobs a worker is about to take are held in memory
        for batch in pending:
            label_name = name_of(batch.label)
            yield BatchJob(batch.batch_id, batch.label, batch.number,
                           tuple(template.render(lm, template.private_message(
                               cap_record(lm, records[i], config.max_record_tokens), label_name))
                                 for i in batch.indices),
                           public_prompts[batch.label], batch_sequence(root, batch.label, batch.number))

    done = dict(done)
    decoded = progress(executor.decode(lm, jobs(), settings), total=len(batches), initial=len(batches) - len(pending),
                       desc="pp: decoding batches")
    for job, record in decoded:  # any order; the driver alone writes
        if run is not None:
            run.append(job.batch_id, record)
        done[job.batch_id] = record
    out_examples, out_batches = [], []
    for batch in batches:  # the release follows the public layout, whichever worker finished first
        record = done[batch.batch_id]
        out_batches.append({k: v for k, v in record.items() if k != "examples"})
        for ex in record["examples"]:
            out_examples.append(SyntheticExample(template.finish(ex["text"], name_of(batch.label)), batch.label, batch.batch_id,
                                                 bool(ex["complete"]), int(sum(ex["private"])),
                                                 len(ex["token_ids"])))
    if run is not None:
        run.update(ledger=ledger.to_dict(), guarantee=config.guarantee())
    priv = sum(b["private_tokens"] for b in out_batches)
    pub = sum(b["public_tokens"] for b in out_batches)
    forced = sum(b.get("forced_tokens", 0) for b in out_batches)
    stats = {"batches": len(out_batches), "examples": len(out_examples),
             "complete_examples": sum(e.complete for e in out_examples),
             "private_tokens": priv, "public_tokens": pub, "forced_tokens": forced,
             "private_fraction": priv / max(1, priv + pub + forced)}
    return SyntheticResult(out_examples, out_batches, ledger, config.guarantee(), config, contract, stats,
                           reproducible)
