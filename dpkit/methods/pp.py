"""Private prediction as a method: hash batches of private prompts, one privately decoded text per batch.

Wraps :func:`dpkit.privpred.pipeline.generate_synthetic` (Algorithm 1 of
{cite}`amin2024private`). The batch layout is public: ``n_batches`` per label
is a parameter, never derived from the input's size, and each batch releases
one text (``max_examples_per_batch = 1``). Private prompts are decoded on the
LOCAL model only; an API backend is refused before anything runs.

Randomness: batch ``b`` of label ``c`` draws from the node ``(c + 1, b)`` of the
run's root (:mod:`dpkit.seeds`), so a resumed batch redraws from its own node.

Public input rules: each text is cut at ``max_chars`` characters; an empty text
is replaced by the placeholder ``EMPTY_TEXT`` (a prompt is never empty).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from dpkit.methods.base import PrivacyStatement, Records, Release, check_inputs, config_dict
from dpkit.methods.budget import DEFAULT_DELTA, ledger_guarantee, release_ledger
from dpkit.methods.record import Method
from dpkit.privacy.contract import MEASURE_WORDS
from dpkit.privacy.exponential import EXPONENTIAL_GRID_RELATIVE
from dpkit.privpred.executors import check_executor, make_executor
from dpkit.privpred.llamacpp_engine import is_local_backend
from dpkit.privpred.pipeline import (MEMORY_FIELDS, PrivatePredictionConfig, fitting_public_prompts,
                                     generate_synthetic, pp_charge, resolve_local_lm)
from dpkit.models.voice import BANNED_OPENINGS, DEFAULT_STOP
from dpkit.privpred.prompts import PromptTemplate, document_template, get_template
from dpkit.validate import ParameterError, check_int

NAME = "pp"
#: configuration fields that bound memory and never change a release: a run may resume with other values
OUTPUT_NEUTRAL = MEMORY_FIELDS
BACKENDS = ("local",)  # private prompts are decoded on the local model only
BACKEND_RULE = ("private prediction decodes the PRIVATE prompts and needs full next-token logits, so it runs on "
                "the local model only (use --backend local); API backends never receive private text")
EXECUTORS = ("local", "ray")  # who decodes the batches (dpkit.privpred.executors)
TAKES_DELTA = True
SMOKE_ROWS = 48  # a batch decodes all its prompts at every step: the smoke preset reads at most this many rows
SMOKE_MAX_ROWS = 200  # --smoke keeps at most this many rows (more is refused): each batch decodes all its rows
SIZE_RULE = "one text per batch, n_batches per label"
EMPTY_TEXT = "(empty)"
STATEMENT = PrivacyStatement(
    neighbouring="add/remove",
    unit="prompt",
    unit_meaning="one private record (a text with its label), which becomes one prompt of one batch",
    measure=f"{MEASURE_WORDS['zcdp']} at the private-token cap r, reported as (epsilon, delta) (Theorem 1 of "
            "Amin et al.)",
    sensitivity="clipped logits averaged over the expected batch size s: c/s per token, plus the public grid the exact sampler rounds the "
                f"logits to ({EXPONENTIAL_GRID_RELATIVE:.3g} c/s or less); the batches are disjoint (a record's batch is a hash of the record alone), so they compose in parallel",
    output_size="one text per batch; n_batches batches per label of the public label set (public parameters)",
    labels="each batch holds one label (a record's label picks its batch group); the label set is public",
)
#: the statement of a release that ran ``variant="invisibleink"`` (:mod:`dpkit.privacy.invisibleink`): the same
#: relation, unit, output and labels; its own measure and sensitivity
INVISIBLEINK_STATEMENT = replace(
    STATEMENT,
    measure=f"{MEASURE_WORDS['zcdp']} at the private-token cap r, reported as (epsilon, delta) (InvisibleInk, "
            "Vinod et al.: "
            "bounded range per token, composed over r tokens)",
    sensitivity="differences from the public row's logits clipped to [-C, C] (DClip) and averaged over the "
                "expected batch size s: C/s per token plus the exact sampler's public grid, over Top-k+ candidates read from the public logits only; "
                "the batches are disjoint (a record's batch is a hash of the record alone), so they compose in "
                "parallel")


def statement_for(config) -> PrivacyStatement:
    """The privacy statement of a release with ``config``: by its ``variant`` (the seed paper's, or InvisibleInk)."""
    return INVISIBLEINK_STATEMENT if getattr(config, "variant", None) == "invisibleink" else STATEMENT


def generic_template(labelled: bool) -> PromptTemplate:
    """The prompt for a user's own texts: names the label (labelled input) or nothing else."""
    return {
        True: PromptTemplate(
            name="labelled-text",
            user="Here are texts with Label: {label}.\n\nText: {example}\n\nPlease give me another one.",
            public_example="<text with Label: {label}>", answer_prefix="Text:"),
        False: PromptTemplate(
            name="text", user="Here is a text.\n\nText: {example}\n\nPlease give me another one.",
            public_example="<text>", answer_prefix="Text:"),
    }[bool(labelled)]


@dataclass(frozen=True)
class Config(PrivatePredictionConfig):
    """Public parameters of a private-prediction release (target ``epsilon`` at ``delta``).

    The decoding parameters, their defaults and their validation live once, in
    :class:`~dpkit.privpred.pipeline.PrivatePredictionConfig` (this class IS one,
    which also computes the cap ``r`` once); a release adds its layout: ``n_batches``
    per label, one text per batch (``max_examples_per_batch`` = 1), the prompt
    ``template`` and the character cap ``max_chars``.
    """

    delta: float = DEFAULT_DELTA
    max_examples_per_batch: int | None = 1  # one text per batch: the release's size is n_batches per label
    n_batches: int = 16                 # batches per label: the number of synthetic texts per label
    template: str = "auto"              # "auto" (by voice and whether the input is labelled) or a privpred template
    max_chars: int = 1000
    document_type: str = "short text"   # public: what the texts are ("health news tweet"), named in the prompt
    voice: bool = True                  # "auto" template in the data's voice (document_template); False: generic
    # the voice's decoding rules (dpkit.models.voice), the same public rule for every row
    stop: tuple[str, ...] = DEFAULT_STOP
    banned: tuple[str, ...] = BANNED_OPENINGS
    min_new_tokens: int = 8
    finish_public: bool = True          # at the cap r the text goes on from the public row (post-processing)
    no_repeat_ngram: int = 3            # no 3-gram twice in a text: the loops of a sharp decoder are cut off

    def __post_init__(self):
        if self.max_examples_per_batch != 1:
            raise ParameterError("max_examples_per_batch", self.max_examples_per_batch,
                                 "must be 1 for a release: one text per batch, so the number of texts is public")
        check_int("n_batches", self.n_batches, minimum=1)
        check_int("max_chars", self.max_chars, minimum=1)
        if not isinstance(self.document_type, str) or not self.document_type.strip():
            raise ParameterError("document_type", self.document_type, "must be a non-empty description")
        if not isinstance(self.voice, bool):
            raise ParameterError("voice", self.voice, "must be True or False")
        if self.template != "auto":
            get_template(self.template)
        super().__post_init__()  # the decoding parameters, and that epsilon affords one private token

    def budget(self) -> tuple[float, float]:
        """The ledger's budget: ``epsilon`` at ``delta`` (zCDP, tight conversion)."""
        return float(self.epsilon), float(self.delta)

    @classmethod
    def smoke(cls, epsilon: float, **changes) -> "Config":
        """Tiny sizes: seconds on a CPU."""
        return cls(epsilon=epsilon, **{"n_batches": 1, "expected_batch_size": 4.0, "max_new_tokens": 6,
                                       "max_chars": 300, **changes})


def template_for(config: Config, labelled: bool):
    if config.template == "auto":
        return document_template(config.document_type, labelled) if config.voice else generic_template(labelled)
    return get_template(config.template)


def charges(config: Config, n_labels: int, n_records: int | None = None) -> tuple:
    """The release's privacy charges, declared once (:func:`dpkit.privpred.pipeline.pp_charge`): Theorem 1's
    contract at the cap r, parallel over the ``n_batches`` x ``n_labels`` public batches (``n_labels`` 0:
    unlabelled input, one group). ``n_records`` does not change them."""
    return (pp_charge(config, config.n_batches, n_labels or None),)


def release_size(config: Config, n_labels: int, n_records: int | None = None) -> int:
    """The number of texts in the release: one per batch, ``n_batches`` per label (public)."""
    return config.n_batches * max(1, n_labels)


def check_sizes(config: Config, n_labels: int, *, labels=None, backend=None) -> None:
    """Refuse, before anything is charged or written, a public prompt of a label plus ``max_new_tokens``, or a
    prompt at the record cap, beyond the local model's context (:func:`~dpkit.privpred.pipeline.
    fitting_public_prompts`, the run's own check, on the model the run loads: ``backend``'s when it is the
    local backend, else the bundled one)."""
    lm = resolve_local_lm(backend if is_local_backend(backend) else None)
    fitting_public_prompts(lm, template_for(config, n_labels > 0), config, labels)


def synthesize(records: Records, config: Config, run, backend, seed_sequence: np.random.SeedSequence, *,
               executor=None) -> Release:
    """A private-prediction release of ``records``: one text per public batch index.

    ``executor``: who decodes the batches -- None (this process), a
    :class:`~dpkit.privpred.executors.LocalExecutor` or a
    :class:`~dpkit.privpred.ray_executor.RayExecutor` (the caller closes it). It
    is not part of ``config``: it changes neither the release nor the guarantee,
    and a run may be resumed with another executor.
    """
    check_inputs(records, config, Config, seed_sequence)
    executor = check_executor(executor)

    lm = resolve_local_lm(backend)  # RemoteBackendError (a ParameterError) for API backends
    records = records.capped(config.max_chars)
    texts = [t if t.strip() else EMPTY_TEXT for t in records.texts]
    ledger = release_ledger(run, config)  # the charge at the cap r (pp_charge) is checked against its budget
    result = generate_synthetic(texts, template_for(config, records.labelled), config,
                                labels=records.labels, label_names=records.prompt_labels, n_batches=config.n_batches,
                                model=lm, seed=seed_sequence, run=run, ledger=ledger, executor=executor)
    out = []
    for example in result.examples:
        record = {"text": example.text.strip()}
        if records.labelled:
            record["label"] = records.label_set[int(example.label)]
        out.append(record)
    epsilon, delta = ledger_guarantee(ledger)
    return Release(NAME, tuple(out), epsilon, delta, statement_for(config),
                   config_dict(config), ledger=ledger,
                   notes=(f"private-token cap r = {config.max_private_tokens()} per batch; "
                          f"rho = {ledger.rho:.6g}",),
                   public_rules=public_rules(config))


def public_rules(config: Config) -> dict[str, str]:
    """The data-independent rules that decide what happens to unusual private records."""
    return {
        "long_document": f"each text is cut at {config.max_chars} characters, then at "
                       f"{config.max_record_tokens} tokens of the local model's tokenizer",
        "empty_record": f"an empty text becomes the placeholder {EMPTY_TEXT!r}",
        "batch_layout": f"{config.n_batches} batches per label of the public label set, each record's batch a "
                        "hash of the record alone; every batch is decoded, empty ones included (the same "
                        "mechanism on zero prompts)",
    }


def variant_title(config: dict) -> str | None:
    """The variant a release's configuration ran, as the report's title names it (none for the seed paper's)."""
    return {"invisibleink": "InvisibleInk variant"}.get(str(config.get("variant")))


METHOD = Method(name=NAME, title="Private prediction (private batched decoding)", Config=Config,
                statement=STATEMENT, charges=charges, release_size=release_size, size_rule=SIZE_RULE,
                synthesize=synthesize, smoke_rows=SMOKE_ROWS, smoke_max_rows=SMOKE_MAX_ROWS, check_sizes=check_sizes,
                backends=BACKENDS, backend_rule=BACKEND_RULE, executors=EXECUTORS, make_executor=make_executor,
                takes_delta=TAKES_DELTA, output_neutral=OUTPUT_NEUTRAL, variant=variant_title)
