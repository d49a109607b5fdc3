"""A toy fourth method, whole in this one file: noisy label counts, then public prompts that name them.

It is what adding a method to dpkit takes: this module (ending in its ``METHOD``
record) and one line of :data:`dpkit.methods.registry.METHOD_MODULES`
(``tests/test_methods_toy_method.py`` adds it for the test). Nothing else in
dpkit names it, and ``dpkit synth toy`` then plans, runs, resumes and writes its
release like any method.

Privacy: one Laplace histogram of the number of records per label (a record
adds 1 to its own label's count: L1 sensitivity 1 under add/remove; the labels
are disjoint groups, so the counts compose in parallel), pure epsilon-DP at the
whole budget. The prompts hold the public label names and the noisy counts
only, so the texts are post-processing. A toy: it releases nothing useful.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dpkit.methods.base import (PrivacyStatement, Records, Release, check_inputs, checkpoint, config_dict,
                                generate_keyed)
from dpkit.methods.budget import ledger_guarantee, release_ledger
from dpkit.methods.record import Method
from dpkit.privacy import Charge
from dpkit.privacy.laplace import Laplace
from dpkit.seeds import generator, int_seed
from dpkit.validate import ParameterError, check_int, check_positive

NAME = "toy"
STATEMENT = PrivacyStatement(
    neighbouring="add/remove",
    unit="document",
    unit_meaning="one record (a text with its label)",
    measure="pure epsilon-DP (delta = 0)",
    sensitivity="label histogram: a record adds 1 to its own label's count (L1 sensitivity 1); the labels are "
                "disjoint, so the counts compose in parallel",
    output_size="texts_per_label texts for every label of the public label set (a public parameter)",
    labels="each text carries the public label its prompt names",
)


@dataclass(frozen=True)
class Config:
    """Public parameters of a toy release."""

    epsilon: float
    texts_per_label: int = 3
    max_chars: int = 200
    document_type: str = "short text"

    def __post_init__(self):
        check_positive("epsilon", self.epsilon)
        check_int("texts_per_label", self.texts_per_label, minimum=1)
        check_int("max_chars", self.max_chars, minimum=1)
        if not isinstance(self.document_type, str) or not self.document_type.strip():
            raise ParameterError("document_type", self.document_type, "must be a non-empty description")

    def budget(self) -> tuple[float, float]:
        return float(self.epsilon), 0.0

    @classmethod
    def smoke(cls, epsilon: float, **changes) -> "Config":
        return cls(epsilon=epsilon, **{"texts_per_label": 2, **changes})


def _counts_mechanism(config: Config) -> Laplace:
    """The one mechanism, built from public parameters: Laplace on the per-label counts (sensitivity 1)."""
    return Laplace(1.0, epsilon=config.epsilon, unit=STATEMENT.unit, neighbouring=STATEMENT.neighbouring)


def charges(config: Config, n_labels: int, n_records: int | None = None) -> tuple[Charge, ...]:
    """The label counts, parallel over the labels (0: unlabelled input, one group)."""
    return (Charge("toy: label counts", _counts_mechanism(config).contract, groups=max(1, n_labels)),)


def release_size(config: Config, n_labels: int, n_records: int | None = None) -> int:
    return config.texts_per_label * max(1, n_labels)


def synthesize(records: Records, config: Config, run, backend, seed_sequence: np.random.SeedSequence) -> Release:
    """``texts_per_label`` texts per label, each prompted with the label and its noisy count."""
    check_inputs(records, config, Config, seed_sequence)
    label_set = records.label_set if records.labelled else ("all",)
    labels = np.asarray(records.labels if records.labelled else [0] * len(records), dtype=np.int64)
    ledger = release_ledger(run, config)
    declared = charges(config, len(label_set) if records.labelled else 0)

    def private_part():  # the charge is on the ledger (and on disk, in a run) before the read it pays for
        ledger.charge(declared[0])
        counts = np.bincount(labels, minlength=len(label_set))
        noisy = _counts_mechanism(config).release(counts, generator(seed_sequence, 0))
        return {"counts": [int(c) for c in noisy]}

    released = checkpoint(run, "counts", private_part)
    prompts = {f"text-{c}-{i}": f"Write {config.document_type} number {i + 1} of about {max(0, n)} about "
                                f"{label_set[c]}."
               for c, n in enumerate(released["counts"]) for i in range(config.texts_per_label)}
    texts = generate_keyed(run, backend, prompts, batch_size=4, desc="toy: generating", max_new_tokens=16,
                           seed=int_seed(seed_sequence, 1))
    out = []
    for key in prompts:
        record = {"text": texts[key].strip()[:config.max_chars]}
        if records.labelled:
            record["label"] = label_set[int(key.split("-")[1])]
        out.append(record)
    epsilon, delta = ledger_guarantee(ledger)
    return Release(NAME, tuple(out), epsilon, delta, STATEMENT, config_dict(config), ledger=ledger)


METHOD = Method(name=NAME, title="Toy (noisy label counts)", Config=Config, statement=STATEMENT, charges=charges,
                release_size=release_size, size_rule="texts_per_label texts per label", synthesize=synthesize,
                smoke_rows=50, smoke_max_rows=500)
