"""Canaries for a release audit: records with unique, rare content made from public vocabulary.

Each canary is a short "sentence" of distinct rare English words (wordfreq's
list, ranks 30,000 to 100,000, letters only, at least seven letters); no word
is used by two canaries, so a canary's words found in a release point to that
canary alone. Everything here is public: the word list, the canaries and the
coin flips that decide which canaries enter the input (each one independently
with probability 1/2, the design of Steinke, Nasr and Jagielski 2023).

Default count (``DEFAULT_CANARIES`` = 1000). The bound an audit can reach is
capped by the number of canaries: with the guess plans and the Bonferroni
correction of :mod:`dpkit.audit.release.audit` at 95% confidence, a release that gives
every canary away yields 4.39 with ``m = 1000`` (just above epsilon = 4, the
largest budget the methods' chapters use), 3.04 with ``m = 200`` and 2.36 with
``m = 100``. A leak of a tenth of the records refutes epsilon = 1 with
``m = 1000`` (about 50 canaries copied). The chapter computes these caps and the
canaries a tighter bound needs (:func:`dpkit.audit.release.one_run.canaries_needed`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import wordfreq

from dpkit.audit.release.scorers import words_of
from dpkit.validate import ParameterError, check_int

DEFAULT_CANARIES = 1000
WORDS_PER_CANARY = 6
RARE_RANKS = (30_000, 100_000)


@lru_cache(maxsize=1)
def rare_words() -> tuple[str, ...]:
    """Public rare English words (wordfreq ranks 30k-100k, alphabetic, >= 7 letters), in list order."""
    words = wordfreq.top_n_list("en", RARE_RANKS[1])[RARE_RANKS[0]:]
    return tuple(w for w in words if w.isascii() and w.isalpha() and len(w) >= 7)


@dataclass(frozen=True)
class Canaries:
    """``texts`` (public), their ``labels`` (names from the public label set, or None) and ``words``.

    ``words`` are what the word scorers look for (for echo canaries: the suffix's words only);
    ``prefixes`` is each canary's public in-distribution prefix (echo canaries; None otherwise).
    """

    texts: tuple[str, ...]
    words: tuple[tuple[str, ...], ...]
    labels: tuple[str, ...] | None = None
    prefixes: tuple[str, ...] | None = None

    def __len__(self) -> int:
        return len(self.texts)


def make_canaries(m: int, rng: np.random.Generator, label_set=None,
                  words_per_canary: int = WORDS_PER_CANARY) -> Canaries:
    """``m`` canaries of ``words_per_canary`` distinct rare words each, no word shared between canaries.

    A labelled input gets canaries with labels drawn uniformly from the public ``label_set``.
    """
    m = check_int("canaries", m, minimum=2)
    words_per_canary = check_int("words_per_canary", words_per_canary, minimum=1)
    pool = rare_words()
    need = m * words_per_canary
    if need > len(pool):
        raise ParameterError("canaries", m, f"needs {need} rare words; at most {len(pool) // words_per_canary} "
                             f"canaries of {words_per_canary} words fit the public list")
    chosen = rng.choice(len(pool), size=need, replace=False)
    groups = [tuple(pool[i] for i in chosen[j * words_per_canary:(j + 1) * words_per_canary]) for j in range(m)]
    texts = tuple(" ".join(g).capitalize() + "." for g in groups)
    labels = None
    if label_set is not None:
        names = list(label_set)
        labels = tuple(names[int(k)] for k in rng.integers(0, len(names), size=m))
    return Canaries(texts, tuple(groups), labels)


def canaries_from_texts(texts, label_set=None, rng: np.random.Generator | None = None) -> Canaries:
    """Canaries the caller wrote (public texts); their words are the texts' lower-cased word tokens."""
    texts = tuple(texts)
    if len(texts) < 2 or not all(isinstance(t, str) and t.strip() for t in texts):
        raise ParameterError("canaries", f"<{len(texts)} texts>", "must be at least two non-empty texts")
    labels = None
    if label_set is not None:
        rng = np.random.default_rng() if rng is None else rng
        names = list(label_set)
        labels = tuple(names[int(k)] for k in rng.integers(0, len(names), size=len(texts)))
    return Canaries(texts, tuple(tuple(words_of(t)) for t in texts), labels)


#: Public openings of short customer messages (written for this module; no record of any data set): the
#: in-distribution prefixes of echo canaries when the caller gives none.
PUBLIC_PREFIXES = (
    "My order arrived", "I was charged", "The package was", "Please help me with", "I would like to",
    "The product stopped", "Your support team", "I tried to return", "The delivery was", "My account shows",
    "I never received", "The item looks", "Can you explain", "The refund for", "I ordered a",
    "The courier said", "My payment was", "The box contained", "I am writing about", "The app keeps",
)

SUFFIX_WORDS = 5


def echo_canaries(m: int, rng: np.random.Generator, label_set=None, prefixes=PUBLIC_PREFIXES,
                  suffix_words: int = SUFFIX_WORDS) -> Canaries:
    """Canaries made for text (the design of Meeus et al., "The Canary's Echo", 2025).

    Each canary is a public in-distribution *prefix* (drawn from ``prefixes``: openings that look like the
    records, so that a generator treats the canary like a record) followed by a high-perplexity *suffix* of
    ``suffix_words`` distinct rare words that no other canary uses. Only the suffix is scored (``words``): a
    model fitted on the release gives it a high likelihood only if the generator saw it.
    """
    m = check_int("canaries", m, minimum=2)
    suffix_words = check_int("suffix_words", suffix_words, minimum=1)
    prefixes = tuple(prefixes)
    if not prefixes or not all(isinstance(p, str) and p.strip() for p in prefixes):
        raise ParameterError("prefixes", f"<{len(prefixes)} prefixes>", "must be non-empty public texts")
    pool = rare_words()
    need = m * suffix_words
    if need > len(pool):
        raise ParameterError("canaries", m, f"needs {need} rare words; at most {len(pool) // suffix_words} "
                             f"echo canaries of {suffix_words} suffix words fit the public list")
    chosen = rng.choice(len(pool), size=need, replace=False)
    suffixes = [tuple(pool[i] for i in chosen[j * suffix_words:(j + 1) * suffix_words]) for j in range(m)]
    heads = [prefixes[int(k)] for k in rng.integers(0, len(prefixes), size=m)]
    texts = tuple(f"{head} {' '.join(words)}." for head, words in zip(heads, suffixes))
    labels = None
    if label_set is not None:
        names = list(label_set)
        labels = tuple(names[int(k)] for k in rng.integers(0, len(names), size=m))
    return Canaries(texts, tuple(suffixes), labels, tuple(heads))


REPEATS = 24


def repeated_word_canaries(m: int, rng: np.random.Generator, label_set=None, repeats: int = REPEATS) -> Canaries:
    """Canaries that a language model repeats: one rare word, its own, on ``repeats`` lines.

    Made for generators that continue their records with a language model (private prediction): after a
    record that is one word on line after line, the bundled SmolLM2-135M's most likely next tokens spell that
    word in most cases (13 of 20 rare words checked), though by a small logit gap (about 0 to 2). What this
    assumes: the record's own prompt can sway the released tokens by its raw logits, as when they are averaged
    unclipped, over candidates that contain the word (the full vocabulary: a rare word is never in the public
    row's top-k) and at a sharp ``1 / (s tau)``; clipped to ``[-c, c]`` at a small ``c`` its pull is negligible
    (:mod:`dpkit.audit.release.pp_unclipped` measures both). Each canary is scored by its one word
    (``words``: the ``ngram`` scorer finds it, in any case, or not). The words are distinct rare English words
    of the public list (:func:`rare_words`).
    """
    m = check_int("canaries", m, minimum=2)
    repeats = check_int("repeats", repeats, minimum=1)
    pool = rare_words()
    if m > len(pool):
        raise ParameterError("canaries", m, f"needs {m} rare words; the public list has {len(pool)}")
    words = [pool[i] for i in rng.choice(len(pool), size=m, replace=False)]
    texts = tuple("\n".join([w] * repeats) for w in words)
    labels = None
    if label_set is not None:
        names = list(label_set)
        labels = tuple(names[int(k)] for k in rng.integers(0, len(names), size=m))
    return Canaries(texts, tuple((w,) for w in words), labels)
