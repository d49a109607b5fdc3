"""Surface measures of a set of texts: short texts, distinct n-grams, and lengths against real texts.

* :func:`short_share`: the share of texts with fewer than ``min_words`` (3) words,
  words being whitespace-separated tokens. "I can't" and "Nytimes" are short; a
  data set of tweets or review snippets practically never is.
* :func:`distinct_n`: distinct-n (Li et al., 2016), the number of distinct word
  n-grams divided by the number of n-grams over all texts (lower-cased word tokens).
  1.0: no n-gram repeats; near 0: the same few words over and over. It falls as a set
  grows, so compare sets of the same size (:func:`length_report` leaves that to the
  caller; :func:`dpkit.textmetrics.measure_texts` compares equal numbers of texts).
* :func:`looping_share`: the share of texts in which one pair of consecutive words
  occurs :data:`MAX_PAIR_REPEATS` (3) times or more -- the loop a sharp decoder falls
  into ("NytimesHealth: NytimesHealth: NytimesHealth: ..."), not a document.
* :func:`duplicate_share`: the share of texts that repeat an earlier text of the same set
  (case and spacing ignored): 1 minus distinct texts over texts. A set that repeats one
  famous text reads as one text, whatever its size.
* :func:`length_report`: words per text of the synthetic and the real texts (mean,
  median), the two-sample Kolmogorov-Smirnov statistic (the largest gap between the
  two empirical distribution functions, 0 = same, 1 = disjoint) and the Wasserstein-1
  distance (the mean number of words each text's length must move to match, in words).
"""

from __future__ import annotations

import re
from typing import Sequence

import numpy as np
from scipy import stats

from dpkit.validate import ParameterError, check_int

_WORD = re.compile(r"\w+(?:['’]\w+)*")


def word_counts(texts: Sequence[str]) -> np.ndarray:
    """Whitespace-separated words per text."""
    return np.array([len(str(t).split()) for t in texts], dtype=float)


def short_share(texts: Sequence[str], min_words: int = 3) -> float:
    """Share of ``texts`` with fewer than ``min_words`` words (an empty text counts as short); nan for none."""
    min_words = check_int("min_words", min_words, minimum=1)
    counts = word_counts(texts)
    return float((counts < min_words).mean()) if len(counts) else float("nan")


def tokens(text: str) -> list[str]:
    """Lower-cased word tokens (letters, digits, inner apostrophes) of ``text``."""
    return _WORD.findall(str(text).lower())


def distinct_n(texts: Sequence[str], n: int) -> float:
    """Distinct word n-grams / all word n-grams over ``texts`` (n-grams do not cross texts); nan without any."""
    n = check_int("n", n, minimum=1)
    grams = [tuple(words[i:i + n]) for words in map(tokens, texts) for i in range(len(words) - n + 1)]
    return len(set(grams)) / len(grams) if grams else float("nan")


#: A word pair that occurs this often in one text is a loop of the decoder, not a document.
MAX_PAIR_REPEATS = 3

_LOOP_WORD = re.compile(r"[\w'-]+")


def pair_repeats(text: str) -> int:
    """How often the most frequent pair of consecutive words occurs in ``text`` (case-folded)."""
    words = [w.lower() for w in _LOOP_WORD.findall(str(text))]
    counts: dict = {}
    for pair in zip(words, words[1:]):
        counts[pair] = counts.get(pair, 0) + 1
    return max(counts.values(), default=0)


def looping_share(texts: Sequence[str]) -> float:
    """Share of ``texts`` in which a pair of consecutive words occurs :data:`MAX_PAIR_REPEATS` times or more;
    nan for none."""
    return float(np.mean([pair_repeats(t) >= MAX_PAIR_REPEATS for t in texts])) if len(texts) else float("nan")


def duplicate_share(texts: Sequence[str]) -> float:
    """Share of ``texts`` equal to an earlier one (lower-cased, spacing collapsed); nan for none."""
    keys = [" ".join(str(t).lower().split()) for t in texts]
    return 1.0 - len(set(keys)) / len(keys) if keys else float("nan")


def length_report(synthetic: Sequence[str], real: Sequence[str]) -> dict:
    """Words per text of both sets, and how far apart the two length distributions are (module docstring)."""
    a, b = word_counts(synthetic), word_counts(real)
    if not len(a) or not len(b):
        raise ParameterError("texts", f"<{len(a)} synthetic, {len(b)} real>", "must both be non-empty")
    return {"words_mean": float(a.mean()), "words_median": float(np.median(a)),
            "real_words_mean": float(b.mean()), "real_words_median": float(np.median(b)),
            "length_ks": float(stats.ks_2samp(a, b).statistic),
            "length_wasserstein": float(stats.wasserstein_distance(a, b))}
