"""Public vocabularies: common English words (``wordfreq``) and medical phrases (ICD-10-CM).

Both are public data: building or using them spends no privacy budget. Orders are
deterministic (by frequency, ties alphabetical), so ``vocab[:k]`` is a stable prefix.
"""

from __future__ import annotations

import html
import re
from collections import Counter
from functools import lru_cache

import wordfreq

from ..models.packages import MissingPackageError, package_dir
from ..validate import ParameterError, check_int

_WORD = re.compile(r"^[a-z]+$")
_PHRASE_WORD = re.compile(r"^[a-z][a-z'-]*[a-z]$")
_ROMAN = re.compile(r"^[ivx]+[a-c]?$")
#: Where a description is cut into candidate phrases: punctuation and connective words.
_BREAKS = re.compile(
    r"[,;:()\[\]/]|\b(?:and|or|of|with|without|due to|in|into|by|for|from|to|on|at|as|"
    r"following|after|before|during|than|other than|not elsewhere classified|"
    r"not otherwise specified|except|involving|affecting|complicating|use|via|through)\b")
#: Words that carry coding bookkeeping, not medicine; stripped from a phrase's ends.
_FILLER = frozenset("""
a an the other others unspecified specified unsp nos nec site sites part parts type
left right bilateral unilateral initial subsequent encounter encounters sequela
routine healing delayed nonunion malunion closed open displaced nondisplaced
multiple single certain elsewhere classified classifiable stated without with
disorder disorders condition conditions disease diseases while specific characterized
injured involved level region type degree
""".split())


# --------------------------------------------------------------------------- English
@lru_cache(maxsize=8)
def _english(n: int, min_length: int, remove_stop_words: bool) -> tuple[str, ...]:
    stop = _stop_words() if remove_stop_words else frozenset()
    size = max(2 * n, 5000)
    while True:
        ranked = wordfreq.top_n_list("en", size)
        words = [w for w in ranked
                 if _WORD.match(w) and len(w) >= min_length and w not in stop]
        if len(words) >= n or len(ranked) < size:
            return tuple(words[:n])
        size *= 2


def _stop_words() -> frozenset[str]:
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    return frozenset(ENGLISH_STOP_WORDS)


def english_vocabulary(n: int = 10_000, *, min_length: int = 2,
                       remove_stop_words: bool = False) -> list[str]:
    """The ``n`` most frequent English words (``wordfreq``), most frequent first.

    Only lower-case alphabetic words (a-z, no digits, apostrophes or hyphens) of at least
    ``min_length`` letters; ``remove_stop_words`` drops scikit-learn's 318 English stop
    words. Raises :class:`ParameterError` if fewer than ``n`` such words exist.
    """
    n = check_int("n", n, minimum=1)
    min_length = check_int("min_length", min_length, minimum=1)
    if not isinstance(remove_stop_words, bool):
        raise ParameterError("remove_stop_words", remove_stop_words, "must be True or False")

    words = _english(n, min_length, remove_stop_words)
    if len(words) < n:
        raise ParameterError("n", n, f"must be <= {len(words)}, the number of words that "
                                     f"pass the filters")
    return list(words)


# --------------------------------------------------------------------------- medical
def _phrases(description: str, max_words: int) -> set[str]:
    """Candidate phrases of one ICD-10-CM description (see :func:`medical_vocabulary`)."""
    out = set()
    for fragment in _BREAKS.split(description.lower()):
        words = fragment.split()
        while words and words[0] in _FILLER:
            words.pop(0)
        while words and words[-1] in _FILLER:
            words.pop()
        if not 1 <= len(words) <= max_words:
            continue
        if all(_PHRASE_WORD.match(w) and not _ROMAN.match(w) for w in words) \
                and len(" ".join(words)) >= 3:
            out.add(" ".join(words))
    return out


def _icd_tabular_file():
    folder = package_dir("simple_icd_10_cm", "simple-icd-10-cm") / "data"
    files = sorted(folder.glob("*tabular*.xml"))
    if not files:
        raise MissingPackageError(f"simple-icd-10-cm is installed but {folder} has no tabular "
                                  "XML; reinstall it: pip install simple-icd-10-cm==1.5.0")
    return files[-1]


_DIAG = re.compile(r"<diag[^>]*>\s*<name>([^<]+)</name>\s*<desc>([^<]*)</desc>")


@lru_cache(maxsize=1)
def _icd_categories() -> tuple[tuple[str, ...], ...]:
    """Per 3-character ICD-10-CM category: its description and those of all its subcodes.

    Read with one regular expression over the tabular XML (every ``<diag>`` opens with its
    ``<name>`` and ``<desc>``); ten times faster than building the element tree.
    """
    groups: dict[str, list[str]] = {}
    for code, description in _DIAG.findall(_icd_tabular_file().read_text(encoding="utf-8")):
        groups.setdefault(code[:3], []).append(html.unescape(description))
    return tuple(tuple(descriptions) for descriptions in groups.values())


@lru_cache(maxsize=8)
def _medical(max_words: int, min_count: int) -> tuple[str, ...]:
    counts: Counter = Counter()
    for descriptions in _icd_categories():
        found: set[str] = set()
        for description in descriptions:
            found |= _phrases(description, max_words)
        counts.update(found)
    kept = [p for p, c in counts.items() if c >= min_count]
    return tuple(sorted(kept, key=lambda p: (-counts[p], p)))


def medical_vocabulary(n: int | None = None, *, max_words: int = 3,
                       min_count: int = 1) -> list[str]:
    """Medical terms and short phrases derived from the ICD-10-CM code descriptions.

    Method: take the description of every ICD-10-CM category and subcategory
    (``simple-icd-10-cm``; 7-character injury extensions excluded), lower-case it and cut it
    at punctuation and at connective words ("and", "of", "with", "due to", ...); strip
    coding filler ("unspecified", "other", "left", "initial encounter", ...) from both ends
    of each piece; keep pieces of 1..``max_words`` alphabetic words. A phrase's count is the
    number of descriptions it comes from; phrases seen at least ``min_count`` times are
    ranked by count (ties alphabetical) and the first ``n`` returned (None: all).
    """
    max_words = check_int("max_words", max_words, minimum=1, maximum=6)
    min_count = check_int("min_count", min_count, minimum=1)
    phrases = _medical(max_words, min_count)
    if n is None:
        return list(phrases)
    n = check_int("n", n, minimum=1)
    if n > len(phrases):
        raise ParameterError("n", n, f"must be <= {len(phrases)}, the number of phrases with "
                                     f"max_words={max_words}, min_count={min_count} (or None)")
    return list(phrases[:n])
