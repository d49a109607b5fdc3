"""Private prediction end to end: prompts -> hash batches -> private decoding -> synthetic data.

:func:`generate_synthetic` is Algorithm 1 of {cite}`amin2024private` on a list
of sensitive records:

1. budget first: from the target ``(epsilon, delta)`` and ``(s, c, tau, sigma)``
   the privacy core's :func:`~dpkit.privacy.max_private_tokens` (Theorem 1)
   gives the cap ``r`` of private tokens per batch; too small a target for even
   one private token is an error. The run's guarantee is the one at ``r``, and
   it is entered in a :class:`~dpkit.privacy.PrivacyLedger` (parallel
   composition over the batches) before any private prompt is decoded;
2. every record becomes a private prompt (:mod:`dpkit.privpred.prompts`) and is
   hashed into a batch (:mod:`dpkit.privpred.batching`), one label per batch;
3. each batch is decoded with its label's public prompt
   (:func:`dpkit.privpred.decode.decode_batch`) on a LOCAL model only.

Privacy contract (checked by the ledger, printed by ``result.contract``):
neighbouring = add/remove one sensitive record (its prompt); unit = prompt;
measure = zCDP ``rho = r ((c/(s tau))^2/2 + 2/(s sigma)^2)``, reported as
``(epsilon, delta)`` at the cap; sensitivity ``c/s`` of the averaged clipped
logits and ``1/s`` of the sparse-vector distance. Labels are treated as public
(the batch of a record may depend on its label, which is part of the record),
as is the number of batches.

Crash safety: with ``run=`` a :class:`dpkit.runs.Run`, each batch's tokens are
written as soon as the batch is done and a resumed run skips finished batches.
A batch interrupted mid-way is decoded again from its own seed (derived from
``seed`` and the batch id), which reproduces exactly the same tokens: the same
release, so no budget is spent twice.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Sequence

import numpy as np

from dpkit.privacy import (PrivacyLedger, max_private_tokens, private_prediction_contract,
                           private_prediction_guarantee, zcdp_to_epsilon)
from dpkit.privpred.batching import Batch, assign_batches
from dpkit.privpred.decode import DecodeSettings, decode_batch
from dpkit.privpred.prompts import PromptTemplate
from dpkit.validate import ParameterError, check_int, check_positive, check_probability


class RemoteBackendError(ParameterError):
    """Private prediction was pointed at a model that is not in this process."""


def resolve_local_lm(model=None):
    """The :class:`~dpkit.models.lm.LocalLM` to decode private prompts with.

    Accepts ``None`` (the bundled model), a LocalLM, the local backend (or its
    name ``"local"``). API backends are refused: private prompts must not leave
    the process, and those APIs return no full logit vectors anyway.
    """
    from dpkit.models.lm import LocalLM, load_lm

    if model is None or model == "local":
        return load_lm()
    if isinstance(model, LocalLM):
        return model
    if getattr(model, "remote", None) is False and hasattr(model, "lm"):
        return model.lm
    if hasattr(model, "model") and hasattr(model, "tokenizer") and hasattr(model, "encode"):
        return model  # a LocalLM-like object (tests)
    raise RemoteBackendError("model", model, "private prediction decodes PRIVATE prompts and needs full logits: "
                             "use a local model (None, 'local', a LocalLM or the local backend); API backends "
                             "refuse private prompts and expose no full logits")


@dataclass(frozen=True)
class PrivatePredictionConfig:
    """Target guarantee and sampling parameters of a run (validated on construction)."""

    epsilon: float
    delta: float
    expected_batch_size: float = 8
    clip: float = 10.0
    temperature: float = 2.0
    public_temperature: float = 1.5
    svt_threshold: float | None = None
    svt_sigma: float | None = None
    top_k: int | None = None
    max_new_tokens: int = 48
    max_examples_per_batch: int | None = None
    max_steps_per_batch: int | None = None
    hash_key: str = ""

    def __post_init__(self):
        check_positive("epsilon", self.epsilon)
        check_probability("delta", self.delta)
        self.settings()  # validates everything else
        if self.max_private_tokens() < 1:
            r1 = private_prediction_contract(1, self.expected_batch_size, self.clip, self.temperature,
                                             self.svt_sigma).rho()
            raise ParameterError("epsilon", self.epsilon,
                                 f"is too small for even one private token at delta={self.delta:g}: one token "
                                 f"costs epsilon={zcdp_to_epsilon(r1, self.delta):.4g} with s="
                                 f"{self.expected_batch_size:g}, c={self.clip:g}, tau={self.temperature:g}"
                                 + (f", sigma={self.svt_sigma:g}" if self.svt_sigma else "")
                                 + " (raise s or tau, or lower c)")

    def max_private_tokens(self) -> int:
        """The cap ``r`` from Theorem 1 (tight zCDP -> (epsilon, delta) conversion)."""
        return max_private_tokens(self.epsilon, self.delta, self.expected_batch_size, self.clip, self.temperature,
                                  self.svt_sigma if self.svt_threshold is not None else None)

    def settings(self, r: int | None = None) -> DecodeSettings:
        return DecodeSettings(
            expected_batch_size=self.expected_batch_size, clip=self.clip, temperature=self.temperature,
            max_private_tokens=r if r is not None else 1, public_temperature=self.public_temperature,
            svt_threshold=self.svt_threshold, svt_sigma=self.svt_sigma, top_k=self.top_k,
            max_new_tokens=self.max_new_tokens, max_examples=self.max_examples_per_batch,
            max_steps=self.max_steps_per_batch)

    def contract(self):
        """Theorem 1's contract at the cap ``r`` (not at the tokens a run happens to use)."""
        return private_prediction_contract(self.max_private_tokens(), self.expected_batch_size, self.clip,
                                           self.temperature, self.svt_sigma if self.svt_threshold is not None
                                           else None)

    def guarantee(self) -> dict:
        """rho, and epsilon at ``delta`` by both conversions of Theorem 1, at the cap (one home:
        :func:`dpkit.privacy.private_prediction.private_prediction_guarantee`)."""
        guarantee = private_prediction_guarantee(
            self.max_private_tokens(), self.delta, self.expected_batch_size, self.clip, self.temperature,
            self.svt_sigma if self.svt_threshold is not None else None)
        return {**guarantee, "target_epsilon": self.epsilon}

    def to_dict(self) -> dict:
        return asdict(self)


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
    """Synthetic texts, per-batch counts, the ledger and the guarantee at the cap."""

    examples: list[SyntheticExample]
    batches: list[dict]
    ledger: PrivacyLedger
    guarantee: dict
    config: PrivatePredictionConfig
    contract: object = None
    stats: dict = field(default_factory=dict)

    def texts(self, complete_only: bool = True) -> list[str]:
        return [e.text for e in self.examples if e.text and (e.complete or not complete_only)]

    def labels(self, complete_only: bool = True) -> list[int | None]:
        return [e.label for e in self.examples if e.text and (e.complete or not complete_only)]


def _batch_rng(seed: int | np.random.SeedSequence, batch: Batch) -> np.random.Generator:
    """Batch ``b`` of label ``c`` draws from node ``(c + 1, b)`` of ``seed`` (a SeedSequence, see
    :mod:`dpkit.seeds`), or of ``SeedSequence(seed)`` for an integer seed."""
    from dpkit.seeds import generator, root_sequence

    label = -1 if batch.label is None else int(batch.label)
    root = seed if isinstance(seed, np.random.SeedSequence) else root_sequence(seed)
    return generator(root, label + 1, int(batch.number))


def generate_synthetic(records: Sequence[str], template: PromptTemplate, config: PrivatePredictionConfig, *,
                       labels: Sequence[int] | None = None, label_names: Sequence[str] | None = None,
                       n_batches: int, model=None, seed: int | np.random.SeedSequence = 0, run=None, max_batches: int | None = None,
                       ledger: PrivacyLedger | None = None) -> SyntheticResult:
    """Algorithm 1 over ``records`` (see the module docstring).

    ``n_batches``: batches per label, a PUBLIC number (e.g.
    :func:`~dpkit.privpred.batching.n_batches_for` of a public size).
    ``seed``: an integer (reproducible) or the run's root ``numpy.random.SeedSequence``
    (``SeedSequence()`` for a release with fresh noise). ``max_batches``: decode only the first ``max_batches`` batches of each label
    (a smaller release; the guarantee is unchanged). ``ledger``: an existing ledger to spend on (one is
    created with the target as its budget otherwise).
    """
    if not isinstance(config, PrivatePredictionConfig):
        raise ParameterError("config", config, "must be a PrivatePredictionConfig")
    if not isinstance(template, PromptTemplate):
        raise ParameterError("template", template, "must be a PromptTemplate")
    if isinstance(records, str) or len(records) == 0:
        raise ParameterError("records", records, "must be a non-empty sequence of texts")
    if not isinstance(seed, np.random.SeedSequence):
        seed = check_int("seed", seed, minimum=0)
    n_batches = check_int("n_batches", n_batches, minimum=1)
    if labels is not None and label_names is None:
        raise ParameterError("label_names", label_names, "is needed with labels (the public prompts name the label)")
    lm = resolve_local_lm(model)
    r = config.max_private_tokens()
    settings = config.settings(r)
    contract = config.contract()
    if ledger is None:
        ledger = PrivacyLedger(budget_epsilon=config.epsilon, delta=config.delta)
    ledger.spend_parallel(contract, f"private prediction, r={r} per batch", n_batches * (len(label_names or [1])))

    def name_of(label):
        return None if label is None else str(label_names[int(label)]).replace("_", " ").capitalize()

    batches = assign_batches(records, n_batches, labels, key=config.hash_key)
    if max_batches is not None:
        max_batches = check_int("max_batches", max_batches, minimum=1)
        kept: dict = {}
        batches = [b for b in batches if kept.setdefault(b.label, []).append(b) or len(kept[b.label]) <= max_batches]
    public_cache: dict = {}
    if run is not None:  # a resume under another configuration or other records is refused, by name
        from dpkit.runs import digest

        run.bind("private_prediction",
                 {**config.to_dict(), "max_private_tokens": r, "n_batches": n_batches,
                  "max_batches": max_batches, "label_names": list(label_names or []), "template": repr(template)},
                 input_digest=digest({"records": list(records),
                                      "labels": None if labels is None else np.asarray(labels).tolist()}))
    done = run.records() if run is not None else {}
    out_examples, out_batches = [], []
    for batch in batches:
        if batch.batch_id in done:
            record = done[batch.batch_id]
        else:
            label_name = name_of(batch.label)
            if batch.label not in public_cache:
                public_cache[batch.label] = template.render(lm, template.public_message(label_name))
            private = [template.render(lm, template.private_message(records[i], label_name)) for i in batch.indices]
            res = decode_batch(lm, private, public_cache[batch.label], settings, _batch_rng(seed, batch))
            record = res.to_record()
            record.update(batch_id=batch.batch_id, label=batch.label)
            if run is not None:
                run.append(batch.batch_id, record)
        out_batches.append({k: v for k, v in record.items() if k != "examples"})
        for ex in record["examples"]:
            out_examples.append(SyntheticExample(template.finish(ex["text"]), batch.label, batch.batch_id,
                                                 bool(ex["complete"]), int(sum(ex["private"])),
                                                 len(ex["token_ids"])))
    if run is not None:
        run.update(ledger=ledger.to_dict(), guarantee=config.guarantee())
    priv = sum(b["private_tokens"] for b in out_batches)
    pub = sum(b["public_tokens"] for b in out_batches)
    stats = {"batches": len(out_batches), "examples": len(out_examples),
             "complete_examples": sum(e.complete for e in out_examples),
             "private_tokens": priv, "public_tokens": pub,
             "private_fraction": priv / max(1, priv + pub),
             "mean_batch_size": float(np.mean([b["batch_size"] for b in out_batches])) if out_batches else 0.0}
    return SyntheticResult(out_examples, out_batches, ledger, config.guarantee(), config, contract, stats)
