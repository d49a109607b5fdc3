"""DP fine-tuning as a method: DP-SGD on LoRA adapters of the local model, conditioned on the label, then sampled.

The reference point the prompting methods are measured against (the "private
fine-tuning" family of {cite}`amin2024private`'s comparison; LoRA as in
{cite}`yu2022differentially`): the model learns the data's voice from the
records instead of being told it, and once trained writes any number of texts
at no further privacy cost ("pay up front").

What runs, in order (:func:`synthesize`):

1. **The charge, once, before any record is read**: the whole training (T
   Poisson-subsampled Gaussian steps, :class:`dpkit.ft.accounting.DpSgdMechanism`
   calibrated to the budget) is charged to the run's ledger and saved with it
   (``seeds/ft-budget.json``); a resumed run re-enters it, never charges it again.
2. **The frozen lower layers**, once per record: the input of the first adapted
   layer (:meth:`dpkit.ft.adapters.AdapterLM.lower_states`), in memory only.
3. **DP-SGD** (:func:`dpkit.ft.dpsgd.train`): public q, T, C, sigma; a
   checkpoint (adapter weights, Adam's state, the step counter) after every
   ``checkpoint_every`` steps -- one epoch, ``round(1/q)`` steps, by default --
   saved in the run folder (``seeds/ft-step-<t>.json``). A crash loses at most
   the steps since the last checkpoint; a resume starts from it, with no
   second charge.
4. **Sampling** (post-processing of the trained adapters): ``n_per_class`` texts
   per label from the label's public prefix, in batches of ``generate_batch``,
   each batch appended to the run as it ends (a resume samples only the missing
   ones); then the public redraw rule (:func:`dpkit.models.voice.redraw_reason`:
   empty, under 3 words, assistant talk, a decoding loop) samples a failed text
   again, at most ``redraw`` times. The number of texts does not change epsilon.

Randomness (children of the run's root, :mod:`dpkit.seeds`): ``(1, t)`` step t's
Poisson batch, ``(2, t)`` step t's noise, ``(3, c, b)`` batch b of label c's
sampling, ``(4, r, c, b)`` the redraw round r. The private input never leaves the
process: the local model only (API backends are refused before anything runs).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch
from transformers import AutoConfig

from dpkit.ft.accounting import DpSgdMechanism
from dpkit.ft.adapters import AdapterLM, parse_modules, prefix_text, state_from_text, state_to_text
from dpkit.ft.dpsgd import StepPlan, train
from dpkit.methods.base import PrivacyStatement, Records, Release, check_inputs, checkpoint, config_dict
from dpkit.methods.budget import DEFAULT_DELTA, ledger_guarantee, release_ledger
from dpkit.methods.record import Method
from dpkit.models.lm import load_lm, prepare_bundled_lm
from dpkit.models.voice import redraw_reason
from dpkit.privacy.ledger import Charge
from dpkit.privpred.llamacpp_engine import is_local_backend
from dpkit.runs.generate import generate_records
from dpkit.seeds import int_seed
from dpkit.validate import ParameterError, check_in_range, check_int, check_positive, check_probability
from dpkit.privacy.contract import MEASURE_WORDS

NAME = "ft"
BACKENDS = ("local",)
BACKEND_RULE = ("DP fine-tuning trains the local model on the PRIVATE records, in this process; use --backend "
                "local (API backends never receive private text)")
TAKES_DELTA = True
SMOKE_ROWS = 48      # the smoke preset's keep-fraction numerator once --rows M is declared
SMOKE_MAX_ROWS = 400  # --smoke keeps at most this many rows
SIZE_RULE = "n_per_class texts per label"
#: fields that change memory or speed only, never a release: a run may resume with other values
OUTPUT_NEUTRAL = ("micro_batch", "generate_batch")
STATEMENT = PrivacyStatement(
    neighbouring="add/remove",
    unit="record",
    unit_meaning="one record (a text with its label), one training example",
    measure=f"{MEASURE_WORDS['approx']}: dp-accounting's PLD accountant of T Poisson-subsampled Gaussian "
            "steps (add/remove), an upper bound",
    sensitivity="each record's gradient of all adapter weights is clipped to L2 norm C before the batch's sum, "
                "so adding or removing one record moves the sum by at most C; every coordinate of the sum gets "
                "Gaussian noise of standard deviation sigma*C (floating-point torch.normal in float32, Opacus's "
                "secure_mode: not an exact sampler); each record joins each step's batch independently with the "
                "public probability q (Poisson sampling, as the accountant assumes); the noisy sum is divided by "
                "the public expected batch size, never the realised one",
    output_size="n_per_class texts for every label of the public label set (a public parameter); the texts are "
                "sampled from the trained model, post-processing: their number does not change epsilon",
    labels="each text is sampled after its label's public prefix (the document type and the label's name)",
)


#: A public cap on DP-SGD steps: 10^5 steps are days of CPU training, and the accountant's calibration of sigma
#: grows with T (81 s and 0.9 GB at 10^6; 10^9 ran out of memory without naming the parameter).
MAX_STEPS = 100_000


@dataclass(frozen=True)
class Config:
    """Public parameters of a DP fine-tuning release (target ``epsilon`` at ``delta``).

    Privacy: ``sample_rate`` q (each record's chance to join a step's batch), ``steps`` T,
    ``clip_norm`` C; the noise multiplier sigma is calibrated to (epsilon, delta) from q and
    T alone. ``expected_batch_size`` only scales the update (set it near q times the number
    of rows you declare); it never reads the data. ``checkpoint_every`` 0: one epoch,
    ``round(1 / q)`` steps.

    ``steps`` 48 and ``learning_rate`` 0.03 were chosen on the tuning sets only
    (``results/ft-tuning``: 0.639 -> 0.951 balanced accuracy on general questions at
    epsilon 8, 0.849 on everyday situations); the held-out sets were not read.
    """

    epsilon: float
    delta: float = DEFAULT_DELTA
    sample_rate: float = 0.25
    steps: int = 48
    clip_norm: float = 1.0
    expected_batch_size: float = 250.0
    learning_rate: float = 0.03
    adapter_layers: int = 4
    lora_rank: int = 8
    lora_alpha: float = 16.0
    lora_modules: str = "q_proj,v_proj"
    max_text_tokens: int = 48
    max_chars: int = 1000
    bf16: bool = True
    micro_batch: int = 32
    checkpoint_every: int = 0
    n_per_class: int = 500
    document_type: str = "short text"
    temperature: float = 1.0
    top_p: float = 0.95
    generate_batch: int = 64
    redraw: int = 2

    def __post_init__(self):
        check_positive("epsilon", self.epsilon)
        check_probability("delta", self.delta)
        check_in_range("sample_rate", self.sample_rate, 0.0, 1.0, low_open=True)
        check_int("steps", self.steps, minimum=1, maximum=MAX_STEPS)
        check_positive("clip_norm", self.clip_norm)
        check_positive("expected_batch_size", self.expected_batch_size)
        check_positive("learning_rate", self.learning_rate)
        check_int("adapter_layers", self.adapter_layers, minimum=1)
        check_int("lora_rank", self.lora_rank, minimum=1)
        check_positive("lora_alpha", self.lora_alpha)
        parse_modules(self.lora_modules)
        check_int("max_text_tokens", self.max_text_tokens, minimum=1)
        check_int("max_chars", self.max_chars, minimum=1)
        if not isinstance(self.bf16, bool):
            raise ParameterError("bf16", self.bf16, "must be True or False")
        check_int("micro_batch", self.micro_batch, minimum=1)
        check_int("checkpoint_every", self.checkpoint_every, minimum=0)
        check_int("n_per_class", self.n_per_class, minimum=1)
        if not isinstance(self.document_type, str) or not self.document_type.strip():
            raise ParameterError("document_type", self.document_type, "must be a non-empty description")
        check_positive("temperature", self.temperature, allow_zero=True)
        check_in_range("top_p", self.top_p, 0.0, 1.0, low_open=True)
        check_int("generate_batch", self.generate_batch, minimum=1)
        check_int("redraw", self.redraw, minimum=0)

    def budget(self) -> tuple[float, float]:
        """The ledger's budget: ``epsilon`` at ``delta``."""
        return float(self.epsilon), float(self.delta)

    def checkpoint_steps(self) -> int:
        """Steps between checkpoints: ``checkpoint_every``, or one epoch (``round(1/q)``, at least 1)."""
        return self.checkpoint_every or max(1, round(1.0 / self.sample_rate))

    def mechanism(self):
        """The DP-SGD mechanism of this configuration, its noise calibrated to (epsilon, delta)."""
        return DpSgdMechanism.for_target(self.epsilon, self.delta, self.sample_rate, self.steps, self.clip_norm)

    def public_rules(self) -> dict[str, str]:
        rules = {
            "long_document": f"each text is cut at {self.max_chars} characters, then at {self.max_text_tokens} "
                           "tokens of the model's tokenizer, and ends with the end token",
            "sampling": f"Poisson: each record joins each of the {self.steps} steps' batches independently with "
                        f"probability {self.sample_rate:g}; an empty batch is a step of noise alone",
            "update": f"the noisy clipped sum divided by the public expected batch size "
                      f"{self.expected_batch_size:g}, then Adam (learning rate {self.learning_rate:g})",
        }
        if self.redraw:
            rules["failed_text"] = (f"a text that is empty, under 3 words, assistant talk or a decoding loop is "
                                    f"sampled again from the trained model, at most {self.redraw} times; the rule "
                                    "reads only the released texts (no budget)")
        return rules

    @classmethod
    def smoke(cls, epsilon: float, **changes) -> "Config":
        """Tiny sizes: seconds on a CPU."""
        return cls(epsilon=epsilon, **{"sample_rate": 0.5, "steps": 2, "expected_batch_size": 4.0,
                                       "adapter_layers": 1, "lora_rank": 2, "max_text_tokens": 8, "n_per_class": 2,
                                       "generate_batch": 4, "micro_batch": 8, "redraw": 0, **changes})


def charges(config: Config, n_labels: int, n_records: int | None = None) -> tuple:
    """The release's one charge: the whole training (T steps), declared from public parameters. Neither the
    number of labels, nor of records, nor of texts changes it."""
    mechanism = config.mechanism()
    return (Charge(f"ft: DP-SGD training ({config.steps} steps)", contract=mechanism.contract(),
                   mechanism=mechanism),)


def release_size(config: Config, n_labels: int, n_records: int | None = None) -> int:
    """The number of texts: ``n_per_class`` per label (public)."""
    return config.n_per_class * max(1, n_labels)


def check_sizes(config: Config, n_labels: int, *, labels=None, backend=None) -> None:
    """Refuse, from public facts, adapters on more layers than the bundled model has (read from its
    configuration, not loaded)."""
    if backend is not None and not _is_local(backend):
        raise ParameterError("--backend", getattr(backend, "name", backend), BACKEND_RULE)
    layers = int(AutoConfig.from_pretrained(prepare_bundled_lm()).num_hidden_layers)
    if config.adapter_layers > layers:
        raise ParameterError("adapter_layers", config.adapter_layers, f"must be at most the bundled model's "
                             f"{layers} layers")


def _is_local(backend) -> bool:
    return backend == "local" or is_local_backend(backend) or _is_lm(backend)


def _is_lm(obj) -> bool:
    """A LocalLM-like object: a torch causal LM (``.model.model.layers``) and its tokenizer."""
    return hasattr(obj, "tokenizer") and hasattr(getattr(getattr(obj, "model", None), "model", None), "layers")


def training_lm(backend):
    """The local PyTorch model trained on the private records: the bundled one, the local backend's model, or a
    LocalLM-like object (a test's tiny model). API backends are refused by name."""
    if backend is None or backend == "local":
        return load_lm()
    if _is_lm(backend):
        return backend
    if _is_local(backend):
        return load_lm(getattr(backend, "model_request", None))
    raise ParameterError("--backend", getattr(backend, "name", type(backend).__name__), BACKEND_RULE)


class _Sampler:
    """The trained model as a backend for :func:`dpkit.runs.generate_records`: each prompt is
    ``(label index, prefix, index of the text)``; a batch holds one label (sampled per label), and is
    sampled from the seed node ``path + (label, index of its first text)``."""

    remote = False

    def __init__(self, adapter, model, config: Config, seed_sequence, path: tuple[int, ...]):
        self.adapter, self.model, self.config, self.seed_sequence, self.path = adapter, model, config, \
            seed_sequence, path

    def generate_batch(self, prompts, **_):
        labels = {(label, prefix) for label, prefix, _ in prompts}
        if len(labels) != 1:
            raise ParameterError("prompts", sorted(c for c, _ in labels), "a sampling batch holds one label")
        (label, prefix), first = labels.pop(), min(i for _, _, i in prompts)
        seed = int_seed(self.seed_sequence, *self.path, label, first)
        return self.adapter.sample(self.model, prefix, len(prompts), seed=seed,
                                   temperature=self.config.temperature, top_p=self.config.top_p)

    def describe(self) -> dict:
        return {"name": "ft-adapters", "model": "the local model with its DP-trained LoRA adapters merged"}


def _sample(adapter, config: Config, run, label_set, prefixes, seed_sequence) -> dict[str, str]:
    """key ``text-c-i`` -> text: ``n_per_class`` per label (label by label, so every batch holds one label and
    a resumed run's batches start where the finished ones ended), then the public redraw rule."""
    model = adapter.merged_model()

    def run_label(path, c: int, keys: list[str], desc: str) -> dict[str, str]:
        prompts = {key: (c, prefixes[c], i) for i, key in enumerate(keys)}
        done = generate_records(run, _Sampler(adapter, model, config, seed_sequence, path), prompts,
                                batch_size=config.generate_batch, desc=desc)
        return {key: done[key]["text"] for key in keys}

    keys = {c: [f"text-{c}-{i}" for i in range(config.n_per_class)] for c in range(len(label_set))}
    texts = {}
    for c, ks in keys.items():
        texts.update(run_label((3,), c, ks, "ft: sampling"))
    for round_ in range(config.redraw):
        failed = {c: [k for k in ks if redraw_reason(texts[k], document_type=config.document_type)]
                  for c, ks in keys.items()}
        if not any(failed.values()):
            break
        for c, ks in failed.items():
            if not ks:
                continue
            fresh = run_label((4, round_), c, [f"{k}-redraw-{round_}" for k in ks], "ft: redraw")
            for k in ks:
                new = fresh[f"{k}-redraw-{round_}"]
                if not redraw_reason(new, document_type=config.document_type):
                    texts[k] = new
    return texts


def _latest_checkpoint(run) -> tuple[int, str] | None:
    if run is None:
        return None
    steps = [int(name.rsplit("-", 1)[1]) for name in (run.manifest.get("seeds") or {})
             if name.startswith("ft-step-")]
    return (max(steps), f"ft-step-{max(steps)}") if steps else None


def synthesize(records: Records, config: Config, run, backend, seed_sequence: np.random.SeedSequence) -> Release:
    """A DP fine-tuning release of ``records``: ``n_per_class`` texts per label, (epsilon, delta)-DP."""
    check_inputs(records, config, Config, seed_sequence)
    lm = training_lm(backend)   # an API backend is refused here, before anything is charged
    ledger = release_ledger(run, config)
    (charge,) = charges(config, len(records.label_set) if records.labelled else 0)

    def spend() -> dict:          # the whole training, charged once, before any record is read
        ledger.charge(charge)
        return charge.mechanism.to_dict()

    stated = checkpoint(run, "ft-budget", spend)
    records = records.capped(config.max_chars)
    label_set = records.label_set if records.labelled else (None,)
    prefixes = [prefix_text(config.document_type, name) for name in label_set]
    adapter = _initial_adapter(lm, config)
    latest = _latest_checkpoint(run)
    start = None
    if latest is not None:
        start = state_from_text(run.privatized_seeds(latest[1], _no_recompute(latest[1]))["state"])
    if start is None or start["step"] < config.steps:
        owners = records.labels if records.labelled else [0] * len(records)
        encoded = adapter.encode(records.texts, [prefixes[c] for c in owners])
        states = adapter.lower_states(encoded, batch_size=config.micro_batch)
        plan = StepPlan(config.sample_rate, config.steps, float(stated["noise_multiplier"]), config.clip_norm,
                        config.expected_batch_size, config.learning_rate, config.micro_batch,
                        config.checkpoint_steps())

        def save(step: int, state: dict) -> None:
            value = {"step": step, "state": state_to_text(state)}
            checkpoint(run, f"ft-step-{step}", lambda: value)

        train(adapter.top, states, encoded.ids[:, 1:], encoded.weights, plan, seed_sequence, start=start,
              on_checkpoint=save)
        del states
    else:
        adapter.top.load_adapter_state(start["adapter"])
    texts = _sample(adapter, config, run, label_set, prefixes, seed_sequence)
    out = []
    for c, name in enumerate(label_set):
        for i in range(config.n_per_class):
            record = {"text": texts[f"text-{c}-{i}"].strip()}
            if records.labelled:
                record["label"] = name
            out.append(record)
    epsilon, delta = ledger_guarantee(ledger)
    return Release(NAME, tuple(out), epsilon, delta, STATEMENT, config_dict(config), ledger=ledger,
                   notes=(f"noise multiplier sigma = {float(stated['noise_multiplier']):.6g} (calibrated to "
                          f"epsilon = {config.epsilon:g} at delta = {config.delta:g} from q and T alone); noise "
                          f"standard deviation sigma*C = {float(stated['noise_std']):.6g} on the clipped sum",
                          "the Gaussian noise is floating-point (torch.normal, float32, Opacus secure_mode: the "
                          "sum of four draws, halved); it is not an exact sampler, and its generator is seeded "
                          "with 64 bits of the run's entropy",),
                   public_rules=config.public_rules())


def _initial_adapter(lm, config: Config) -> AdapterLM:
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)   # the adapters' initial weights: a public, fixed draw (LoRA's B starts at zero)
        return AdapterLM(lm.model, lm.tokenizer, adapter_layers=config.adapter_layers,
                         modules=parse_modules(config.lora_modules), rank=config.lora_rank,
                         alpha=config.lora_alpha, bf16=config.bf16, max_text_tokens=config.max_text_tokens)


def public_path_texts(label_set: Sequence[str], config: Config, backend,
                      seed_sequence: np.random.SeedSequence) -> list[dict]:
    """DP fine-tuning's reference that reads no record: ``n_per_class`` texts per label from the same model,
    prefixes, sampling and redraw rule as a release, with the adapters as initialised (LoRA's B is zero, so
    the merged model is the base model). Its arguments are the public label set and configuration: no record
    reaches it, so a release's gain over these texts is what the DP-SGD steps learned from the data."""
    lm = training_lm(backend)
    adapter = _initial_adapter(lm, config)
    prefixes = [prefix_text(config.document_type, name) for name in label_set]
    texts = _sample(adapter, config, None, tuple(label_set), prefixes, seed_sequence)
    return [{"text": texts[f"text-{c}-{i}"].strip(), "label": name}
            for c, name in enumerate(label_set) for i in range(config.n_per_class)]


def _no_recompute(name: str):
    def refuse():
        raise ParameterError("run", name, "a saved checkpoint was listed but could not be read; use a new folder")
    return refuse


METHOD = Method(name=NAME, title="DP fine-tuning (DP-SGD on LoRA adapters)", Config=Config, statement=STATEMENT,
                charges=charges, release_size=release_size, size_rule=SIZE_RULE, synthesize=synthesize,
                smoke_rows=SMOKE_ROWS, smoke_max_rows=SMOKE_MAX_ROWS, check_sizes=check_sizes, backends=BACKENDS,
                backend_rule=BACKEND_RULE, takes_delta=TAKES_DELTA, output_neutral=OUTPUT_NEUTRAL)

