"""Membership scores of canaries, computed from a release's texts alone (higher: more likely included).

* ``ngram`` - the share of a canary's word unigrams and bigrams that occur in
  the release (a keyphrase-overlap score; the canaries' words are rare, so an
  occurrence is evidence that the generator saw the canary);
* ``chars`` - the largest share of a canary's character 5-grams found in one
  release text (catches copies that are respelled, cut or glued to other text);
* ``suffix_lm`` - the log-likelihood of a canary's scored words (an echo canary's
  suffix) under a bigram model fitted on the release texts alone, interpolated
  with a unigram model and add-one smoothing (Meeus et al. 2025 score canaries by
  the likelihood a model of the synthetic data gives them; no access to the
  generator is needed);
* ``embedding`` - the largest cosine similarity between the canary and a release
  text under the bundled MiniLM (:mod:`dpkit.models.embed`): paraphrases without
  the exact words. Optional: loading the model costs seconds.

Every scorer is a deterministic function of (public canaries, release texts).
"""

from __future__ import annotations

import re
from typing import Callable, Sequence

import numpy as np

from dpkit.models.embed import load_embedder
from dpkit.validate import ParameterError

WORD = re.compile(r"[a-z]+")
FAST_SCORERS = ("ngram", "chars")
SCORER_NAMES = ("ngram", "chars", "suffix_lm", "embedding")
DEFAULT_SCORERS = ("ngram", "embedding")


def words_of(text: str) -> list[str]:
    return WORD.findall(text.lower())


def _grams(words: Sequence[str]) -> set:
    return set(words) | {(a, b) for a, b in zip(words, words[1:])}


def ngram_scores(canary_words: Sequence[Sequence[str]], release_texts: Sequence[str]) -> np.ndarray:
    """Share of each canary's unigrams and bigrams present anywhere in the release."""
    present = set()
    for text in release_texts:
        present |= _grams(words_of(text))
    out = np.zeros(len(canary_words))
    for i, words in enumerate(canary_words):
        grams = _grams([w.lower() for w in words])
        out[i] = len(grams & present) / len(grams) if grams else 0.0
    return out


def _char_grams(text: str, n: int = 5) -> set[str]:
    text = " ".join(words_of(text))
    return {text[i:i + n] for i in range(max(len(text) - n + 1, 0))}


def char_scores(canary_texts: Sequence[str], release_texts: Sequence[str], n: int = 5) -> np.ndarray:
    """Largest share of a canary's character ``n``-grams found in a single release text."""
    release = [_char_grams(t, n) for t in release_texts]
    index: dict[str, list[int]] = {}
    for j, grams in enumerate(release):
        for g in grams:
            index.setdefault(g, []).append(j)
    out = np.zeros(len(canary_texts))
    for i, text in enumerate(canary_texts):
        grams = _char_grams(text, n)
        if not grams:
            continue
        hits: dict[int, int] = {}
        for g in grams:
            for j in index.get(g, ()):
                hits[j] = hits.get(j, 0) + 1
        out[i] = max(hits.values(), default=0) / len(grams)
    return out


def suffix_lm_scores(canary_words: Sequence[Sequence[str]], release_texts: Sequence[str],
                     bigram_weight: float = 0.7) -> np.ndarray:
    """Log-likelihood of each canary's words (in order) under a bigram model of the release.

    ``P(w | u) = bigram_weight * c(u, w) / c(u) + (1 - bigram_weight) * (c(w) + 1) / (N + V + 1)``, counts
    ``c`` over the release's lower-cased word tokens (``N`` tokens, ``V`` distinct; a word never seen gets the
    add-one mass). The first scored word is conditioned on nothing (the unigram term alone).
    """
    unigrams: dict[str, int] = {}
    bigrams: dict[tuple[str, str], int] = {}
    total = 0
    for text in release_texts:
        words = words_of(text)
        total += len(words)
        for w in words:
            unigrams[w] = unigrams.get(w, 0) + 1
        for pair in zip(words, words[1:]):
            bigrams[pair] = bigrams.get(pair, 0) + 1
    norm = total + len(unigrams) + 1

    def unigram(w):
        return (unigrams.get(w, 0) + 1) / norm

    out = np.zeros(len(canary_words))
    for i, words in enumerate(canary_words):
        words = [w.lower() for w in words]
        if not words:
            continue
        value = np.log(unigram(words[0]))
        for u, w in zip(words, words[1:]):
            seen = unigrams.get(u, 0)
            p = (bigram_weight * bigrams.get((u, w), 0) / seen if seen else 0.0) + (1 - bigram_weight) * unigram(w)
            value += np.log(p)
        out[i] = value
    return out


def embedding_scores(canary_texts: Sequence[str], release_texts: Sequence[str], embedder=None) -> np.ndarray:
    """Largest cosine similarity of each canary to a release text (bundled MiniLM unless ``embedder``)."""
    if embedder is None:
        embedder = load_embedder()
    texts = sorted({t for t in release_texts if t.strip()})   # each distinct text once
    if not texts:
        return np.zeros(len(canary_texts))
    a = np.asarray(embedder.encode(list(canary_texts)), dtype=np.float64)
    b = np.asarray(embedder.encode(texts), dtype=np.float64)
    return (a @ b.T).max(axis=1)


def scorer(name: str, embedder=None) -> Callable:
    """``score(canaries, release_texts) -> array`` for a scorer name."""
    if name == "ngram":
        return lambda canaries, texts: ngram_scores(canaries.words, texts)
    if name == "chars":
        return lambda canaries, texts: char_scores(canaries.texts, texts)
    if name == "suffix_lm":
        return lambda canaries, texts: suffix_lm_scores(canaries.words, texts)
    if name == "embedding":
        return lambda canaries, texts: embedding_scores(canaries.texts, texts, embedder)
    raise ParameterError("scorers", name, f"must be among {', '.join(repr(n) for n in SCORER_NAMES)}")
