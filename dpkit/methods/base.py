"""The one shape of the three methods: records in, a release out, with its guarantee stated as data.

Every method module (:mod:`~dpkit.methods.kps`, :mod:`~dpkit.methods.pp`,
:mod:`~dpkit.methods.dpst`) provides

* a frozen dataclass ``Config`` of PUBLIC parameters, validated on construction
  (:class:`~dpkit.validate.ParameterError` names the parameter, the value and what
  is allowed), with a ``smoke()`` preset of tiny sizes;
* ``STATEMENT``, a :class:`PrivacyStatement`: the neighbouring relation and unit
  of privacy (the values its contracts carry), what they mean, the privacy
  measure, why the sensitivities hold, and the public rule that fixes the
  number of synthetic records;
* ``charges(config, n_labels, n_records=None)``: the method's privacy charges,
  declared once from public parameters (:class:`~dpkit.privacy.ledger.Charge`:
  mechanism, relation, unit, sensitivity, spend, composition). ``--plan``
  charges them to a planned ledger, ``synthesize`` to the run's ledger (each
  before the reads it pays for), and the report reads the ledger;
* what the CLI asks of it by name: ``BACKENDS`` (the backends it may run on),
  ``EXECUTORS`` (who may decode private batches; empty: none),
  ``TAKES_DELTA`` (whether ``--delta`` applies), ``SMOKE_ROWS``/``SMOKE_MAX_ROWS``
  (the smoke preset's row bounds), ``release_size(config, n_labels, n_records)``
  (the number of texts, or None when unknown) and ``SIZE_RULE`` (that rule in words);
* ``synthesize(records, config, run, backend, seed_sequence) -> Release``.

``run`` is a :class:`dpkit.runs.Run` (checkpoints, ledger state; resumable) or
None for an in-memory run. ``seed_sequence`` is the root of all the run's
randomness (:mod:`dpkit.seeds`): ``SeedSequence()`` in release mode, ``SeedSequence(seed)``
in reproducible mode.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any, Sequence

import numpy as np

from dpkit.runs.generate import generate_texts
from dpkit.validate import ParameterError, private_shape


@dataclass(frozen=True)
class Records:
    """The private input: texts, labels as indices into ``label_set`` (or None), and the public label set.

    ``label_set_declared`` records whether the label set came from the user
    (``--labels``) or was read from the input and is *treated as* public.
    ``label_descriptions`` (public, one per name of ``label_set``, or None): what each
    label means in the data owner's words (``--labels`` as a JSON object); every
    method's prompts use :attr:`prompt_labels`, the description in place of the name.
    """

    texts: tuple[str, ...]
    labels: tuple[int, ...] | None = None
    label_set: tuple[str, ...] | None = None
    label_set_declared: bool = True
    label_descriptions: tuple[str, ...] | None = None

    def __post_init__(self):
        if isinstance(self.texts, str):
            raise ParameterError("texts", private_shape(self.texts), "must be a sequence of texts, not one string")
        texts = tuple(self.texts)
        if not texts:
            raise ParameterError("texts", "<no records>", "must contain at least one record")
        bad = [i for i, t in enumerate(texts) if not isinstance(t, str)]
        if bad:
            raise ParameterError("texts", f"<{len(bad)} non-strings, the first at index {bad[0]}>",
                                 "must all be strings (an empty string for a missing text)")
        object.__setattr__(self, "texts", texts)
        if (self.labels is None) != (self.label_set is None):
            raise ParameterError("labels", private_shape(self.labels) if self.labels is not None else None,
                                 "labels and label_set go together (both or neither)")
        if self.labels is not None:
            labels = tuple(int(y) for y in self.labels)
            names = tuple(str(n) for n in self.label_set)
            if len(labels) != len(texts):
                raise ParameterError("labels", f"<{len(labels)} labels>", f"must be one per text ({len(texts)})")
            if not names or len(set(names)) != len(names):
                raise ParameterError("label_set", names, "must be distinct names, at least one")
            if labels and (min(labels) < 0 or max(labels) >= len(names)):
                raise ParameterError("labels", "<out of range>", f"must be indices into label_set (0..{len(names) - 1})")
            object.__setattr__(self, "labels", labels)
            object.__setattr__(self, "label_set", names)
        if self.label_descriptions is not None:
            descriptions = tuple(self.label_descriptions)
            if self.label_set is None or len(descriptions) != len(self.label_set):
                raise ParameterError("label_descriptions", descriptions, "must give one description per name of "
                                     "label_set (and needs labelled records)")
            if not all(isinstance(d, str) and d.strip() for d in descriptions):
                raise ParameterError("label_descriptions", descriptions, "must be non-empty strings")
            object.__setattr__(self, "label_descriptions", descriptions)

    @classmethod
    def from_strings(cls, texts: Sequence[str], labels: Sequence[str] | None, label_set: Sequence[str] | None,
                     declared: bool = True, descriptions: dict[str, str] | None = None) -> "Records":
        """Records from label *names* (each must be in ``label_set``); ``descriptions``: name -> public
        description (``--labels`` as a JSON object), or None."""
        if labels is None:
            return cls(tuple(texts))
        index = {name: k for k, name in enumerate(label_set)}
        outside = [i for i, y in enumerate(labels) if y not in index]
        if outside:  # positions and a count only: the labels of the input are private
            raise ParameterError("labels", f"<{len(outside)} labels outside the set, the first at index {outside[0]}>",
                                 f"must belong to the label set {list(label_set)}")
        described = tuple(descriptions[name] for name in label_set) if descriptions else None
        return cls(tuple(texts), tuple(index[y] for y in labels), tuple(label_set), declared, described)

    @property
    def labelled(self) -> bool:
        return self.labels is not None

    @property
    def prompt_labels(self) -> tuple[str, ...] | None:
        """What a prompt says for each label of ``label_set``: its public description when the data owner gave
        one (``--labels '{"ham": "a personal message between friends", ...}'``), else its name; None when the
        records are unlabelled. Every method builds its prompts from this (the released records still carry
        the names)."""
        if self.label_set is None:
            return None
        return self.label_descriptions if self.label_descriptions is not None else self.label_set

    def __len__(self) -> int:
        return len(self.texts)

    def capped(self, max_chars: int) -> "Records":
        """Each text cut at ``max_chars`` characters (a public rule of every method)."""
        return Records(tuple(t[:max_chars] for t in self.texts), self.labels, self.label_set,
                       self.label_set_declared, self.label_descriptions)


@dataclass(frozen=True)
class PrivacyStatement:
    """What a method guarantees, as data the report prints and a test can check.

    ``neighbouring`` and ``unit`` are the values every one of the method's charges
    carries (``"add/remove"`` or ``"replace-one"``; the contracts' unit), checked
    equal by the tests; ``unit_meaning`` says what one unit is in the user's
    terms; ``sensitivity`` says why the charges' sensitivities hold.
    """

    neighbouring: str
    unit: str
    unit_meaning: str
    measure: str
    sensitivity: str
    output_size: str
    labels: str

    def to_dict(self) -> dict[str, str]:
        return asdict(self)

    @property
    def per_record(self) -> bool:
        """True under add/remove (rows are selected by a per-record rule), False under replace-one."""
        return self.neighbouring == "add/remove"


@dataclass(frozen=True)
class Release:
    """What a method publishes: synthetic records and the guarantee at the configured budget.

    ``records`` are dicts with ``text`` (and ``label``, a name from the public
    label set, when the input is labelled). ``epsilon``/``delta`` are the
    guarantee at the configured caps, never a number computed from what a run
    happened to use. ``ledger`` (private state) is what was charged.
    ``public_rules`` names each data-independent rule that decides what happens
    to unusual private input (caps, fallbacks); ``config.json`` states them.
    """

    method: str
    records: tuple[dict, ...]
    epsilon: float
    delta: float
    statement: PrivacyStatement
    config: dict
    reproducible: bool | None = None
    ledger: Any = field(default=None, repr=False, compare=False)
    notes: tuple[str, ...] = ()
    public_rules: dict = field(default_factory=dict)

    def texts(self) -> list[str]:
        return [r["text"] for r in self.records]

    def labels(self) -> list[str | None]:
        return [r.get("label") for r in self.records]


def config_dict(config) -> dict:
    """The public configuration as a JSON-ready dict (dataclass fields in order)."""
    out = {}
    for f in fields(config):
        value = getattr(config, f.name)
        out[f.name] = list(value) if isinstance(value, tuple) else value
    return out


def check_inputs(records, config, config_type, seed_sequence) -> None:
    """The common argument checks of every ``synthesize``."""
    if not isinstance(records, Records):
        raise ParameterError("records", private_shape(records), "must be a dpkit.methods.Records")
    if not isinstance(config, config_type):
        raise ParameterError("config", config, f"must be a {config_type.__module__}.{config_type.__name__}")
    if not isinstance(seed_sequence, np.random.SeedSequence):
        raise ParameterError("seed_sequence", seed_sequence, "must be a numpy.random.SeedSequence "
                             "(SeedSequence() for a release, SeedSequence(seed) to reproduce)")


def checkpoint(run, name: str, compute):
    """``run.privatized_seeds(name, compute)`` (computed once per run, its ledger spend saved with it),
    or ``compute()`` when there is no run folder."""
    return compute() if run is None else run.privatized_seeds(name, compute)


def generate_keyed(run, backend, prompts: dict, *, batch_size: int, desc: str, **generation) -> dict[str, str]:
    """One completion per prompt (a mapping key -> prompt), each appended to ``run`` as it is done.

    On resume only the missing keys are generated. Returns key -> text. The loop
    is :func:`dpkit.runs.generate_records`, the one every method shares.
    """
    return generate_texts(run, backend, prompts, batch_size=batch_size, desc=desc, **generation)
