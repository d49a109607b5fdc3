"""DP-ST as a method: each document replaced by public triples, then rewritten by an LLM.

Two mechanisms, both pure epsilon-DP for any change of the document (``variant``):

* ``"topic"`` (default): :class:`dpkit.dpst.topic.TopicDPST` -- the public
  neighbourhood nearest the document's triples, released by k-ary randomized
  response, then public triples of that neighbourhood;
* ``"document"``: :class:`dpkit.dpst.privatize.DPST`'s document-level variant (a
  fixed number of triple slots, each chosen by exponential mechanisms over PUBLIC
  triples), the variant of every stored comparison cell made before the topic variant.

The released triples are rewritten by the Table 3-shaped reconstruction of
:mod:`dpkit.dpst.reconstruct`. The label of a labelled record
is released through k-ary randomized response (:mod:`dpkit.methods.labels`)
with ``label_share`` of epsilon, so the record (text and label) is protected.

Each output depends on its own input document only (local DP): the relation is
replace-one, under which the number of documents is public, and the release
has one record per input row (after ``--limit``).

Randomness: document ``i`` draws its triples from node ``(0, i)`` and its label
from node ``(1, i)`` of the run's root; the reconstruction's sampling seed from
node ``2``; a generated public bank (``public_bank="generated"``) its round ``j``
from node ``(3, j)``, stored in the run before its private part. Private triples
(with their ledger entries) are checkpointed before any model sees them.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from dpkit.dpst.corpus import check_k, load_public_bank, load_public_corpus, read_public_texts
from dpkit.dpst.generated_bank import generated_bank_note, generated_bank_texts
from dpkit.dpst.privatize import DPST, MAX_PARSER_CHARS, Prepared, PrivateDocument, document_contract
from dpkit.dpst.topic import TopicDPST, topic_contract
from dpkit.dpst.reconstruct import clean_output, reconstruction_messages, reconstruction_voice
from dpkit.methods.base import (PrivacyStatement, Records, Release, check_inputs, checkpoint, config_dict,
                                generate_keyed)
from dpkit.methods.budget import ledger_guarantee, release_ledger
from dpkit.methods.labels import RandomizedResponse
from dpkit.methods.record import Method
from dpkit.privacy import Charge, PrivacyContract
from dpkit.privacy.marks import Public
from dpkit.runs import file_digest
from dpkit.seeds import child, generator, int_seed
from dpkit.validate import ParameterError, check_choice, check_in_range, check_int, check_positive
from dpkit.privacy.contract import MEASURE_WORDS

NAME = "dpst"
BACKENDS = ("local", "openai", "anthropic")  # the model sees only privatized public triples
EXECUTORS = ()  # nothing private is decoded in batches
TAKES_DELTA = False
SMOKE_ROWS = 12  # one output per record: the smoke preset reads at most this many rows
SMOKE_MAX_ROWS = None  # the smoke preset keeps the first SMOKE_ROWS rows: nothing more to bound
SIZE_RULE = "one output per input row read"
STATEMENT = PrivacyStatement(
    neighbouring="replace-one",
    unit="document (any two documents)",
    unit_meaning="one record (a document with its label); each output depends on its own record only (local "
                 "DP), and the number of records is public",
    measure=f"{MEASURE_WORDS['pure']} per record (delta = 0)",
    sensitivity="by the variant in config.json: topic, k-ary randomized response over the public centroids on the "
                "document's nearest one (sensitivity 1: the topic changes); document, exponential mechanisms with "
                "utility clip(cos, 0, 1) in [0, 1] (sensitivity 1) per triple slot, over public centroids then public "
                "triples; the label by k-ary randomized response",
    output_size="one output per input record (n is public under replace-one)",
    labels="each output's label is the record's label released by k-ary randomized response",
)


_MECHANISM = inspect.signature(DPST).parameters          # the mechanism's defaults are the one set
_TOPIC = inspect.signature(TopicDPST).parameters
VARIANTS = ("topic", "document")
PUBLIC_BANKS = ("news", "generated")  # where the public triples come from (a public_corpus file: the file)
BANK_NODE = 3                          # the seed node of a generated bank
_CORPUS = inspect.signature(load_public_corpus).parameters


@dataclass(frozen=True)
class Config:
    """Public parameters of a DP-ST release; ``epsilon`` is per record (text and label together).

    The mechanism's own parameters take their defaults from :class:`~dpkit.dpst.privatize.DPST`
    and :func:`~dpkit.dpst.corpus.load_public_corpus` (one set of defaults), and are
    validated there when the mechanism is built.
    """

    epsilon: float
    label_share: float = 0.3           # part of epsilon for the label (labelled input only); 0.3 chosen on the
                                       # tuning sets with the topic variant (data/HOLDOUT.md, fifth round)
    variant: str = "topic"             # "topic" (TopicDPST) or "document" (DPST's document-level variant)
    topic_triples: int = _TOPIC["triples"].default  # topic variant: public triples released per document
    topic_pool: int = _TOPIC["pool"].default        # topic variant: drawn from this many nearest the centroid
    slots: int = _MECHANISM["slots"].default
    max_triples: int = _MECHANISM["max_triples"].default
    k: int = _CORPUS["k"].default                    # neighbourhoods of the public triple corpus
    n_articles: int = _CORPUS["n_articles"].default  # public news articles behind the triple corpus
    neighbourhood_share: float = _MECHANISM["neighbourhood_share"].default
    tie_scorer: str = "unigram"
    reconstruct: bool = True           # False: release the triples joined as text
    document_type: str = "short text"  # public: what the rewrite writes ("health news tweet")
    voice: bool = True                 # the rewrite in the data's voice (dpkit.dpst.reconstruct.reconstruction_voice)
    name_label: bool = False           # True: the rewrite is told each record's RELEASED label (after randomized
                                       # response) as its topic; the label set is then public information
    public_corpus: str = ""            # "": the packaged news articles; else a UTF-8 file of YOUR public texts,
                                       # one per line (never private records), as the triple corpus
    public_bank: str = "news"          # "news": the packaged news articles (or the public_corpus file); "generated":
                                       # texts the model writes from document_type and the PUBLIC label set only
    bank_texts_per_label: int = 64     # generated bank: texts per label (public)
    max_new_tokens: int = 48
    temperature: float = 0.0
    batch_size: int = 8
    max_chars: int = _MECHANISM["max_chars"].default

    def __post_init__(self):
        check_positive("epsilon", self.epsilon)
        check_choice("variant", self.variant, VARIANTS)
        check_int("topic_triples", self.topic_triples, minimum=1)
        check_int("topic_pool", self.topic_pool, minimum=self.topic_triples)
        check_in_range("label_share", self.label_share, 0.0, 1.0, low_open=True, high_open=True)
        check_int("slots", self.slots, minimum=1)      # the mechanism's parameters, checked before any run
        check_int("max_triples", self.max_triples, minimum=1)
        check_in_range("neighbourhood_share", self.neighbourhood_share, 0.0, 1.0, low_open=True, high_open=True)
        check_int("max_chars", self.max_chars, minimum=1, maximum=MAX_PARSER_CHARS)
        check_int("k", self.k, minimum=1)
        check_int("n_articles", self.n_articles, minimum=1)
        check_choice("tie_scorer", self.tie_scorer, ("unigram", "lm"))
        check_int("max_new_tokens", self.max_new_tokens, minimum=1)
        check_positive("temperature", self.temperature, allow_zero=True)
        check_int("batch_size", self.batch_size, minimum=1)
        if not isinstance(self.reconstruct, bool):
            raise ParameterError("reconstruct", self.reconstruct, "must be True or False")
        if not isinstance(self.document_type, str) or not self.document_type.strip():
            raise ParameterError("document_type", self.document_type, "must be a non-empty description")
        if not isinstance(self.voice, bool):
            raise ParameterError("voice", self.voice, "must be True or False")
        if not isinstance(self.name_label, bool):
            raise ParameterError("name_label", self.name_label, "must be True or False")
        if not isinstance(self.public_corpus, str):
            raise ParameterError("public_corpus", self.public_corpus, "must be '' (the packaged news articles) or "
                                 "an existing UTF-8 text file of public texts, one per line")
        check_choice("public_bank", self.public_bank, PUBLIC_BANKS)
        if self.public_bank != "news" and self.public_corpus:
            raise ParameterError("public_bank", self.public_bank, "must be 'news' (the default) when public_corpus "
                                 "names a file: the file is then the public bank")
        check_int("bank_texts_per_label", self.bank_texts_per_label, minimum=1)
        if self.public_corpus:  # read once here, so a bad file is refused before any run (exit 2, nothing written)
            read_public_texts(self.public_corpus, "public_corpus")

    def budget(self) -> tuple[float, float]:
        """The ledger's budget: pure ``epsilon`` per record (delta 0)."""
        return float(self.epsilon), 0.0

    def budgets(self, labelled: bool) -> tuple[float, float]:
        """(text epsilon, label epsilon); the label gets nothing when the input is unlabelled."""
        if not labelled:
            return self.epsilon, 0.0
        return self.epsilon * (1 - self.label_share), self.epsilon * self.label_share

    @classmethod
    def smoke(cls, epsilon: float, **changes) -> "Config":
        """Tiny sizes: seconds on a CPU (a small cached public corpus)."""
        return cls(epsilon=epsilon, **{"k": 8, "n_articles": 12, "max_new_tokens": 8, **changes})  # validated once


def charges(config: Config, n_labels: int, n_records: int | None = None, *,
            mechanism=None) -> tuple[Charge, ...]:
    """The release's privacy charges, declared once from public parameters: the triples (the topic variant's
    :func:`~dpkit.dpst.topic.topic_contract` or the document variant's
    :func:`~dpkit.dpst.privatize.document_contract`) and, for labelled input (``n_labels`` > 0), the label's
    randomized response, each parallel over the ``n_records`` records (None: unknown, counted as one).

    Each charge holds the mechanism the run draws with: the label's :class:`RandomizedResponse`, built
    here, and ``mechanism``, the text mechanism (:func:`build_mechanism`, which needs the public corpus;
    ``--plan`` reads no corpus and charges the same contract from the public parameters)."""
    eps_text, eps_label = config.budgets(n_labels > 0)
    groups = max(1, n_records or 1)
    if mechanism is not None:
        text = Charge(f"dpst: {'topic' if config.variant == 'topic' else 'document-level'} triples",
                      mechanism=mechanism, groups=groups)
    elif config.variant == "topic":
        text = Charge("dpst: topic triples", topic_contract(eps_text, config.k, config.topic_triples,
                                                            config.topic_pool), groups=groups)
    else:
        text = Charge("dpst: document-level triples",
                      document_contract(eps_text, config.slots, config.neighbourhood_share, config.k), groups=groups)
    if n_labels <= 0:
        return (text,)
    label = Charge("dpst: label by randomized response",
                   mechanism=RandomizedResponse(n_labels, eps_label, name="label", unit=text.contract.unit),
                   groups=groups)
    return text, label


def release_size(config: Config, n_labels: int, n_records: int | None = None) -> int | None:
    """The number of outputs: one per record read (None while the number of rows is unknown)."""
    return n_records


def check_sizes(config: Config, n_labels: int, *, labels=None, backend=None) -> None:
    """Refuse, before anything is charged or written, ``k`` above the number of public triples
    (:func:`~dpkit.dpst.corpus.check_k` on :func:`~dpkit.dpst.corpus.load_public_bank`, the bank the run
    clusters, cached). A generated bank (``public_bank="generated"``) does not exist before the run writes it:
    its run checks ``k`` once the bank is built, before anything is charged."""
    if config.public_bank == "generated":
        return
    check_k(config.k, len(load_public_bank(n_articles=config.n_articles, texts=own_public_texts(config))))


def variant_title(config: dict) -> str | None:
    """The variant a release's configuration ran, as the report's title names it."""
    return {"topic": "topic variant", "document": "document-level variant"}.get(str(config.get("variant")))


def _split(prepared, i: int, offsets) -> Prepared:
    return Prepared([prepared.texts[i]], [prepared.triples[i]], prepared.embeddings[offsets[i]:offsets[i + 1]])


def public_corpus_note(config: Config) -> tuple[str, ...]:
    """The report's statement of the user's ``public_corpus`` (none for the packaged news articles): which file
    (path and SHA-256) the triples may come from, and that the guarantee rests on it being public."""
    if not config.public_corpus:
        return ()
    return (f"public triple corpus: the file {config.public_corpus} (SHA-256 "
            f"{file_digest(Path(config.public_corpus).expanduser())}), which the data owner declared public; its "
            "triples are released verbatim, so the guarantee does not hold if it contains private records (rows "
            "of the input or text derived from them)",)


def own_public_texts(config: Config) -> list[str] | None:
    """The user's public corpus (``public_corpus``: one text per line), or None for the news articles."""
    if not config.public_corpus:
        return None
    return read_public_texts(config.public_corpus, "public_corpus")


def _model_name(backend) -> str:
    """The backend's model as the report names it (its ``describe()``, else its name)."""
    described = backend.describe() if hasattr(backend, "describe") else {}
    return str(described.get("model") or described.get("name") or getattr(backend, "name", "the model"))


def build_mechanism(config: Config, corpus, eps_text: float):
    """The configured text mechanism over ``corpus`` at ``eps_text``: :class:`TopicDPST` or :class:`DPST`."""
    if config.variant == "topic":
        return TopicDPST(corpus, eps_text, triples=config.topic_triples, pool=config.topic_pool,
                         max_triples=config.max_triples, scorer=config.tie_scorer, max_chars=config.max_chars)
    return DPST(corpus, eps_text, "document", slots=config.slots, max_triples=config.max_triples,
                neighbourhood_share=config.neighbourhood_share, scorer=config.tie_scorer, max_chars=config.max_chars)


def synthesize(records: Records, config: Config, run, backend, seed_sequence: np.random.SeedSequence) -> Release:
    """A DP-ST release of ``records``: one output per record, epsilon-DP per record (pure, replace-one)."""
    check_inputs(records, config, Config, seed_sequence)
    records = records.capped(config.max_chars)
    eps_text = config.budgets(records.labelled)[0]
    if run is not None and config.public_corpus:  # a resume with another corpus under the same path is refused
        run.bind("public_corpus", {"path": config.public_corpus,
                                   "sha256": file_digest(Path(config.public_corpus).expanduser())})
    ledger = release_ledger(run, config)  # every charge below is checked against the budget
    public_texts, bank_notes = own_public_texts(config), ()
    if config.public_bank == "generated":  # from the public document type and label set only: no record is read
        label_texts = records.prompt_labels if records.labelled else None
        public_texts = checkpoint(run, "public_bank", lambda: generated_bank_texts(  # a resume reads it back
            backend, config.document_type, label_texts, config.bank_texts_per_label, child(seed_sequence, BANK_NODE),
            release=run is not None and run.seed is None))
        bank_notes = (generated_bank_note(config.document_type, label_texts, config.bank_texts_per_label,
                                          public_texts, _model_name(backend)),)
    corpus = load_public_corpus(k=config.k, n_articles=config.n_articles, texts=public_texts)
    mechanism = build_mechanism(config, corpus, eps_text)
    declared = charges(config, len(records.label_set) if records.labelled else 0, len(records), mechanism=mechanism)

    def private_part():  # each charge is on the ledger (and on disk, in a run) before the reads it pays for
        charge = ledger.charge(declared[0])  # the charge holds the mechanism that draws
        prepared = mechanism.prepare(list(records.texts))
        offsets = np.concatenate([[0], np.cumsum([len(t) for t in prepared.triples])])
        triples = [mechanism.privatize_prepared(_split(prepared, i, offsets), generator(seed_sequence, 0, i),
                                                charge=charge)[0].triples
                   for i in range(len(records))]
        labels = None
        if records.labelled:
            label_mechanism = ledger.charge(declared[1]).mechanism  # built once in charges(), drawn per record
            labels = [label_mechanism.sample(y, generator(seed_sequence, 1, i)) for i, y in enumerate(records.labels)]
        return {"triples": triples, "labels": labels, "contract": mechanism.contract.to_dict()}

    released = checkpoint(run, "triples", private_part)
    contract = PrivacyContract.from_dict(released["contract"])
    keys = [f"doc-{i}" for i in range(len(records))]
    if config.reconstruct:
        document_type = config.document_type if config.voice else None
        topics = [None] * len(keys)
        if config.name_label and records.labelled:  # post-processing of the released label (a public name)
            topics = [Public(records.prompt_labels[int(y)]) for y in released["labels"]]
        prompts = {key: reconstruction_messages(PrivateDocument(tuple(triples), np.zeros(0, np.int64), contract),
                                                document_type, topic)
                   for key, triples, topic in zip(keys, released["triples"], topics)}
        texts = generate_keyed(run, backend, prompts, batch_size=config.batch_size, desc="dpst: reconstructing",
                               max_new_tokens=config.max_new_tokens, temperature=config.temperature,
                               seed=int_seed(seed_sequence, 2),
                               voice=reconstruction_voice(config.document_type) if config.voice else None)
        outputs = [clean_output(texts[key], fallback=". ".join(str(t) for t in triples))  # all echo: the triples
                   for key, triples in zip(keys, released["triples"])]
    else:
        outputs = [". ".join(str(t) for t in triples) for triples in released["triples"]]
    out = []
    for i, text in enumerate(outputs):
        record = {"text": text}
        if records.labelled:
            record["label"] = records.label_set[int(released["labels"][i])]
        out.append(record)
    epsilon, delta = ledger_guarantee(ledger)
    return Release(NAME, tuple(out), epsilon, delta, STATEMENT, config_dict(config), ledger=ledger,
                   public_rules=mechanism.public_rules,
                   notes=("per record: " + ", ".join(f"{e.label.split(': ', 1)[-1]} epsilon "
                                                     f"{e.contract.epsilon:g}" for e in ledger.entries),
                          *public_corpus_note(config), *bank_notes))


METHOD = Method(name=NAME, title="DP-ST (private semantic triples)", Config=Config, statement=STATEMENT,
                charges=charges, release_size=release_size, size_rule=SIZE_RULE, synthesize=synthesize,
                smoke_rows=SMOKE_ROWS, smoke_max_rows=SMOKE_MAX_ROWS, check_sizes=check_sizes, backends=BACKENDS,
                executors=EXECUTORS, takes_delta=TAKES_DELTA, variant=variant_title)
