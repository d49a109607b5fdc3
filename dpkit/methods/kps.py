"""DP-KPS as a method: private keyphrase sequences per class, then one LLM text per sequence.

Wraps :func:`dpkit.kps.pipeline.fit_kps` (the private part) and the DP-KPS
prompts; everything after the keyphrase sequences is post-processing. The
keyphrase sequences are checkpointed (with the ledger entries they cost) before
any model sees them, so a resumed run never draws them again.

Few-shot from privatized seeds (``few_shot > 0``): the first ``few_shot``
texts of each label are written from their keyphrases alone; every later text
of the label is prompted with those earlier *synthetic* texts as examples.
Privacy: an example is the model's completion of a prompt that holds only
DP-KPS's privatized keyphrases and public text, sampled with a public seed, so
it is post-processing of the release (no record is read, nothing is charged);
it carries the prompt's provenance (:func:`dpkit.kps.prompts.synthetic_example`),
so the guard of an API backend still sees a privatized prompt.

Randomness (children of the run's root, :mod:`dpkit.seeds`): ``0`` the
vocabulary and DP-KDE noise, ``(1, c)`` class ``c``'s sequence sampling,
``2`` the LLM's sampling seed (``3`` for the few-shot round), ``(4, r)`` the
redraw round ``r``'s sampling seed.

Redraw (``redraw`` rounds, default 2): a text that fails the voice's public rule
(:func:`dpkit.models.voice.redraw_reason`: empty, under 3 words, assistant talk, a
decoding loop, its keyphrases read back) is drawn again from its own prompt
(:func:`dpkit.kps.prompts.redraw_failed`). The rule reads only released texts and
the privatized keyphrases, so it is post-processing: nothing is charged.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dpkit.data import english_vocabulary, medical_vocabulary
from dpkit.kps.pipeline import KPSConfig, fit_kps, kps_charges
from dpkit.kps.prompts import kps_prompt, redraw_failed, synthetic_example
from dpkit.kps.vocabulary import PhraseMatcher
from dpkit.methods.base import (PrivacyStatement, Records, Release, check_inputs, checkpoint, config_dict,
                                generate_keyed)
from dpkit.methods.budget import ledger_guarantee, release_ledger
from dpkit.methods.record import Method
from dpkit.models.embed import load_embedder
from dpkit.models.voice import document_voice
from dpkit.privacy.marks import Public
from dpkit.seeds import generator, int_seed
from dpkit.validate import ParameterError, check_choice, check_fits_memory, check_int, check_positive
from dpkit.privacy.contract import MEASURE_WORDS

NAME = "kps"
VOCABULARIES = ("english", "medical")
BACKENDS = ("local", "openai", "anthropic")  # the model sees only privatized keyphrases and public text
EXECUTORS = ()  # nothing private is decoded in batches
TAKES_DELTA = False
SMOKE_ROWS = 200  # the smoke preset's keep-fraction numerator once --rows M is declared
SMOKE_MAX_ROWS = 2000  # --smoke keeps at most this many rows (more is refused)
SIZE_RULE = "n_per_class texts per label"
EMBEDDING_WIDTH = 384  # all-MiniLM-L6-v2, the sentence embedder of dpkit.models.embed (public)
FLOAT_BYTES = 8
STATEMENT = PrivacyStatement(
    neighbouring="add/remove",
    unit="document",
    unit_meaning="one record (a text with its label)",
    measure=f"{MEASURE_WORDS['pure']} (delta = 0)",
    sensitivity="vocabulary histogram: each record adds at most S distinct terms (count sensitivity 1 per "
                "term, S in total); DP-KDE sketch: a record's weight sums to 1 and each of the I random Fourier "
                "features lies in [-sqrt(2), sqrt(2)] (L1 sensitivity sqrt(2) I, plus I times the rounding grid, "
                "for the Laplace noise); classes are disjoint, so per-class sketches compose in parallel",
    output_size="n_per_class texts for every label of the public label set (a public parameter)",
    labels="each synthetic text carries the label whose DP-KDE produced its keyphrases",
)


@dataclass(frozen=True)
class Config(KPSConfig):
    """Public parameters of a DP-KPS release.

    The budget (``epsilon``, split by ``vocabulary_share`` into ``eps_voc`` and
    ``eps_kde``) and the algorithm's parameters (S, N, L, the KDE ``method``,
    ``n_features``, ``bandwidth``, ``max_chars``, ...), their defaults and their
    validation live once, in :class:`~dpkit.kps.pipeline.KPSConfig` (this class IS
    one); a release adds fields only: its size, the public vocabulary and the
    generation settings.
    """

    n_per_class: int = 100
    vocabulary: str = "english"        # public vocabulary: 10k frequent English words, or medical terms
    document_type: str = "short text"
    voice: bool = True                 # the data's voice (dpkit.models.voice.document_voice); False: the bare prompt
    max_new_tokens: int = 48
    temperature: float = 0.7
    batch_size: int = 8
    few_shot: int = 0                  # earlier synthetic texts of the label shown as examples (post-processing)
    example_chars: int = 200           # each example cut to its first example_chars characters
    redraw: int = 2                    # rounds of the public redraw rule (0: off); post-processing

    def __post_init__(self):
        super().__post_init__()  # epsilon, vocabulary_share, S, N, L, method, n_features, bandwidth, max_chars, ...
        check_int("few_shot", self.few_shot, minimum=0)
        check_int("example_chars", self.example_chars, minimum=1)
        check_int("n_per_class", self.n_per_class, minimum=1)
        check_int("redraw", self.redraw, minimum=0)
        check_choice("vocabulary", self.vocabulary, VOCABULARIES)
        check_int("max_new_tokens", self.max_new_tokens, minimum=1)
        check_positive("temperature", self.temperature, allow_zero=True)
        check_int("batch_size", self.batch_size, minimum=1)
        if not isinstance(self.document_type, str) or not self.document_type.strip():
            raise ParameterError("document_type", self.document_type, "must be a non-empty description")
        if not isinstance(self.voice, bool):
            raise ParameterError("voice", self.voice, "must be True or False")

    def public_rules(self) -> dict[str, str]:
        """:meth:`KPSConfig.public_rules` and the redraw rule (post-processing of the release)."""
        rules = dict(super().public_rules())
        if self.voice and self.redraw:
            rules["failed_text"] = (f"a text that is empty, under 3 words, assistant talk, a decoding loop or its "
                                    f"keyphrases read back is drawn again from its own prompt, at most {self.redraw} "
                                    "times; the rule reads only released texts and keyphrases (no budget)")
        return rules

    def budget(self) -> tuple[float, float]:
        """The ledger's budget: pure ``epsilon`` (delta 0)."""
        return float(self.epsilon), 0.0

    @classmethod
    def smoke(cls, epsilon: float, **changes) -> "Config":
        """Tiny sizes: seconds on a CPU."""
        return cls(epsilon=epsilon, **{"n_per_class": 2, "N": 60, "L": 4, "n_features": 128, "max_new_tokens": 8,
                                       **changes})  # built (and validated) once


def charges(config: Config, n_labels: int, n_records: int | None = None) -> tuple:
    """The release's privacy charges, declared once (:func:`dpkit.kps.pipeline.kps_charges`, which
    :func:`~dpkit.kps.pipeline.fit_kps` charges): the vocabulary histogram, then each DP-KDE parallel over
    the classes (``n_labels``; 0 = unlabelled input, one class). ``n_records`` does not change them."""
    return kps_charges(config, len(_public_vocabulary(config.vocabulary)), max(1, n_labels))


def release_size(config: Config, n_labels: int, n_records: int | None = None) -> int:
    """The number of texts in the release: ``n_per_class`` per label (public)."""
    return config.n_per_class * max(1, n_labels)


def check_sizes(config: Config, n_labels: int, *, labels=None, backend=None) -> None:
    """Refuse, before anything is charged or written, ``N`` above the public vocabulary's size, and arrays
    that grow with ``n_features`` (random Fourier features over the embedding width and the vocabulary) or
    with ``n_per_class`` (every label's keyphrase sequences) beyond the available memory."""
    n_labels = max(1, n_labels)
    vocabulary = len(_public_vocabulary(config.vocabulary))
    if config.N > vocabulary:
        raise ParameterError("N", config.N, f"must be <= the public vocabulary size ({vocabulary}); checked "
                             "before anything is charged or written")
    check_fits_memory("n_features", config.n_features,
                      FLOAT_BYTES * config.n_features * (EMBEDDING_WIDTH + config.N + n_labels),
                      "the random Fourier features of the embeddings and the per-class sketches")
    check_fits_memory("n_per_class", config.n_per_class, FLOAT_BYTES * config.n_per_class * n_labels * config.L,
                      f"the keyphrase sequences of {n_labels} label(s)")


def _public_vocabulary(name: str) -> PhraseMatcher:
    words = english_vocabulary(10_000, remove_stop_words=True) if name == "english" else medical_vocabulary()
    return PhraseMatcher(words)


def _generate(sequences, config: Config, run, backend, seed_sequence, descriptions=None) -> dict[str, tuple]:
    """key ``text-c-i`` -> (prompt, completion), in the order of the sequences.

    Round 1: the first ``few_shot`` sequences of each label (all of them when
    ``few_shot`` is 0), from their keyphrases alone. Round 2: the rest, each with
    its label's round-1 texts as examples (see the module docstring). ``descriptions``: each label's
    public description (``Records.label_descriptions``), named in its prompts; None: no class is named.
    """
    document_type = Public(config.document_type)  # public configuration
    described = [Public(d) for d in descriptions] if descriptions else [None] * len(sequences)  # public
    keys = {(c, i): f"text-{c}-{i}" for c, seqs in enumerate(sequences) for i in range(len(seqs))}
    first = {k for k in keys if config.few_shot == 0 or k[1] < config.few_shot}
    # the voice is public configuration: system message, opened answer, stop sequences, banned openings
    generation = dict(max_new_tokens=config.max_new_tokens, temperature=config.temperature,
                      voice=document_voice(config.document_type) if config.voice else None)
    # the keyphrases are the Privatized terms DP-KPS released
    prompts = {keys[k]: kps_prompt(list(sequences[k[0]][k[1]]), document_type, description=described[k[0]])
               for k in keys if k in first}
    done = generate_keyed(run, backend, prompts, batch_size=config.batch_size, desc="kps: generating",
                          seed=int_seed(seed_sequence, 2), **generation)
    examples = {c: [synthetic_example(prompts[keys[k]], done[keys[k]], config.example_chars)
                    for k in sorted(first) if k[0] == c and done[keys[k]].strip()] for c in range(len(sequences))}
    later = {keys[k]: kps_prompt(list(sequences[k[0]][k[1]]), document_type, examples=examples[k[0]] or None,
                                 description=described[k[0]])
             for k in keys if k not in first}
    if later:
        done.update(generate_keyed(run, backend, later, batch_size=config.batch_size, desc="kps: few-shot",
                                   seed=int_seed(seed_sequence, 3), **generation))
    prompts.update(later)
    if config.voice and config.redraw:
        terms = {keys[k]: list(sequences[k[0]][k[1]]) for k in keys}

        def again(failed_keys, round_):
            fresh = generate_keyed(run, backend, {f"{k}-redraw-{round_}": prompts[k] for k in failed_keys},
                                   batch_size=config.batch_size, desc="kps: redraw",
                                   seed=int_seed(seed_sequence, 4, round_), **generation)
            return {k: fresh[f"{k}-redraw-{round_}"] for k in failed_keys}

        done, _ = redraw_failed({key: done[key] for key in prompts}, terms, again,
                                document_type=config.document_type, rounds=config.redraw)
    return {keys[k]: (prompts[keys[k]], done[keys[k]]) for k in keys}


def synthesize(records: Records, config: Config, run, backend, seed_sequence: np.random.SeedSequence) -> Release:
    """A DP-KPS release of ``records``: ``n_per_class`` texts per label, epsilon-DP (pure)."""
    check_inputs(records, config, Config, seed_sequence)
    records = records.capped(config.max_chars)
    label_set = records.label_set if records.labelled else ("all",)
    labels = np.asarray(records.labels if records.labelled else [0] * len(records), dtype=np.int64)
    ledger = release_ledger(run, config)  # fit_kps charges kps_charges(...) on it, each checked against the budget

    def private_part():
        model = fit_kps(records.texts, labels, label_set, _public_vocabulary(config.vocabulary), load_embedder(),
                        config, generator(seed_sequence, 0), ledger)
        sequences = [model.sequences(c, config.n_per_class, generator(seed_sequence, 1, c))
                     for c in range(len(label_set))]
        return {"sequences": sequences, "contract": model.contracts["kde"][0].to_dict()}

    released = checkpoint(run, "keyphrases", private_part)
    prompts = _generate(released["sequences"], config, run, backend, seed_sequence,
                        records.label_descriptions if records.labelled else None)
    texts = {key: text for key, (_, text) in prompts.items()}
    owners = {key: int(key.split("-")[1]) for key in prompts}
    out = []
    for key in prompts:
        record = {"text": texts[key].strip()}
        if records.labelled:
            record["label"] = label_set[owners[key]]
        out.append(record)
    epsilon, delta = ledger_guarantee(ledger)
    return Release(NAME, tuple(out), epsilon, delta, STATEMENT, config_dict(config), ledger=ledger,
                   public_rules=config.public_rules())


METHOD = Method(name=NAME, title="DP-KPS (private keyphrase seeds)", Config=Config, statement=STATEMENT,
                charges=charges, release_size=release_size, size_rule=SIZE_RULE, synthesize=synthesize,
                smoke_rows=SMOKE_ROWS, smoke_max_rows=SMOKE_MAX_ROWS, check_sizes=check_sizes, backends=BACKENDS,
                executors=EXECUTORS, takes_delta=TAKES_DELTA)
