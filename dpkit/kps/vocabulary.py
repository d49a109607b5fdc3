"""The private vocabulary: a Laplace histogram over a public vocabulary, then its top N.

Matching
--------
Texts and vocabulary entries are lower-cased and split into word tokens
(``[a-z0-9]+``, apostrophes and hyphens split words).  A vocabulary entry may have
several words; :class:`PhraseMatcher` scans a text left to right and, at each
position, takes the *longest* entry that starts there (so "heart failure" wins
over "heart"), then continues after it; positions where no entry starts are
skipped.  Matches never overlap.

Mechanism
---------
1. From each document keep the first ``S`` matches (``distinct=True``: the first
   ``S`` *different* terms, the default; ``False``: occurrences, repeats allowed).
2. Count them over the whole public vocabulary ``V``.
3. Add Laplace noise of scale ``S / eps_voc`` to every entry, zero counts included.
4. Keep the ``N`` entries with the highest noisy counts.
5. Optional noise-aware size (``noise_terms`` = m, a public number): of those ``N``, keep only
   the entries whose noisy count is at least :func:`noise_threshold` ``T = b ln(|V| / (2 m))``,
   ``b = S / eps_voc``, but always the best ``min_terms``.  A term that no document
   contains passes ``T`` with probability ``exp(-T / b) / 2 = m / |V|``, so at most ``m``
   pure-noise terms are expected in the release, whatever the data.  ``T`` depends on
   public parameters only, and the step reads nothing but the noisy counts.

Neighbouring relation: add/remove one document.  A document contributes at most
``S`` to the counts in total, so adding or removing it moves the histogram by at
most ``S`` in L1 norm: the sensitivity is ``S`` (tested by brute force).  Steps 4
and 5 are post-processing of the noisy histogram, so the vocabulary is ``eps_voc``-DP
either way (the released size ``|vocabulary|`` is a function of the noisy counts too).

Audit hook: :func:`release_noisy_histogram` takes ``noise_scale`` to override
``S / eps_voc`` (e.g. half of it); the returned contract states the epsilon that
scale really buys.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable, Sequence

import numpy as np

from dpkit.privacy.contract import PrivacyContract
from dpkit.privacy.laplace import Laplace
from dpkit.validate import ParameterError, check_int, check_positive, check_rng

_TOKEN = re.compile(r"[a-z0-9]+")


def tokenize(text: str) -> list[str]:
    """Lower-case word tokens (``[a-z0-9]+``)."""
    if not isinstance(text, str):
        raise ParameterError("text", text, "must be a string")
    return _TOKEN.findall(text.lower())


class PhraseMatcher:
    """Greedy longest-match of (multi-word) vocabulary entries in texts; see the module docstring."""

    def __init__(self, vocabulary: Sequence[str]):
        if isinstance(vocabulary, str):
            raise ParameterError("vocabulary", vocabulary, "must be a sequence of terms, not one string")
        terms = list(vocabulary)
        if not terms:
            raise ParameterError("vocabulary", terms, "must contain at least one term")
        self.terms: list[str] = []
        self.index: dict[tuple[str, ...], int] = {}
        for term in terms:
            key = tuple(tokenize(term))
            if not key:
                raise ParameterError("vocabulary", term, "every term must contain a word character")
            if key in self.index:
                continue  # duplicates (after normalization) keep their first position
            self.index[key] = len(self.terms)
            self.terms.append(" ".join(key))
        self.max_words = max(len(k) for k in self.index)

    def __len__(self) -> int:
        return len(self.terms)

    def match(self, text: str) -> list[int]:
        """Indices of the matched terms, in order of appearance (repeats included)."""
        tokens = tokenize(text)
        found, position = [], 0
        while position < len(tokens):
            for width in range(min(self.max_words, len(tokens) - position), 0, -1):
                term = self.index.get(tuple(tokens[position:position + width]))
                if term is not None:
                    found.append(term)
                    position += width
                    break
            else:
                position += 1
        return found

    def first_terms(self, text: str, S: int | None, distinct: bool = True) -> list[int]:
        """The first ``S`` matched terms (``None``: all), distinct ones only if ``distinct``."""
        if S is not None:
            S = check_int("S", S, minimum=1)
        out: list[int] = []
        seen: set[int] = set()
        for term in self.match(text):
            if distinct and term in seen:
                continue
            seen.add(term)
            out.append(term)
            if S is not None and len(out) == S:
                break
        return out


def vocabulary_sensitivity(S: int) -> int:
    """L1 sensitivity of the histogram under add/remove of one document: ``S``."""
    return check_int("S", S, minimum=1)


def term_histogram(term_lists: Iterable[Sequence[int]], vocabulary_size: int, S: int | None = None) -> np.ndarray:
    """Counts over ``range(vocabulary_size)``; each list truncated to its first ``S`` entries if given."""
    vocabulary_size = check_int("vocabulary_size", vocabulary_size, minimum=1)
    counts = np.zeros(vocabulary_size)
    for doc, terms in enumerate(term_lists):
        terms = list(terms)[:S] if S is not None else list(terms)
        for t in terms:
            if not (0 <= int(t) < vocabulary_size):
                raise ParameterError(f"term_lists[{doc}]", t, f"term ids must lie in [0, {vocabulary_size})")
            counts[int(t)] += 1
    return counts


def release_noisy_histogram(term_lists: Iterable[Sequence[int]] | None, vocabulary_size: int, S: int,
                            eps_voc: float, rng: np.random.Generator, *, counts=None,
                            noise_scale: float | None = None, unit: str = "document", built: tuple | None = None
                            ) -> tuple[np.ndarray, PrivacyContract]:
    """Laplace histogram over the whole vocabulary; returns ``(noisy_counts, contract)``.

    Give either per-document ``term_lists`` (each truncated to its first ``S``
    entries here, which is what makes ``S`` the sensitivity) or precomputed
    ``counts`` (the caller promises each document contributed at most ``S``).
    ``noise_scale`` overrides ``S / eps_voc`` (audit variants only). ``built``: the
    ``(mechanism, contract)`` of :func:`histogram_mechanism`, built once by a caller that charged
    the contract (:func:`dpkit.kps.pipeline.kps_charges`); the noise is drawn with that mechanism.
    """
    check_rng("rng", rng)
    S = vocabulary_sensitivity(S)
    eps_voc = check_positive("eps_voc", eps_voc)
    if (term_lists is None) == (counts is None):
        raise ParameterError("counts", counts, "give exactly one of term_lists and counts")
    if counts is None:
        counts = term_histogram(term_lists, vocabulary_size, S)
    else:
        counts = np.asarray(counts, dtype=float)
        if counts.shape != (check_int("vocabulary_size", vocabulary_size, minimum=1),):
            raise ParameterError("counts", counts, f"must have shape ({vocabulary_size},)")
    mechanism, contract = built or histogram_mechanism(S, len(counts), eps_voc, noise_scale=noise_scale, unit=unit)
    noisy = mechanism.release(counts, rng)
    return np.asarray(noisy, dtype=float), contract


def histogram_mechanism(S: int, vocabulary_size: int, eps_voc: float, *, noise_scale: float | None = None,
                        unit: str = "document") -> tuple[Laplace, PrivacyContract]:
    """The histogram's Laplace mechanism and its contract, from public parameters only.

    A caller charges the contract to its ledger before it reads any document;
    :func:`release_noisy_histogram` releases with exactly this mechanism.
    """
    S = vocabulary_sensitivity(S)
    eps_voc = check_positive("eps_voc", eps_voc)
    vocabulary_size = check_int("vocabulary_size", vocabulary_size, minimum=1)
    if noise_scale is None:
        mechanism = Laplace(S, epsilon=eps_voc, unit=unit, neighbouring="add/remove")
    else:
        mechanism = Laplace(S, scale=check_positive("noise_scale", noise_scale), unit=unit,
                            neighbouring="add/remove")
    contract = mechanism.contract.replace(
        mechanism=f"vocabulary histogram (Laplace, first S={S} terms per document)",
        sensitivity_norm="L1", kind="vocabulary_histogram",
        parameters={**mechanism.contract.parameters, "S": int(S), "vocabulary_size": vocabulary_size})
    return mechanism, contract


@dataclass
class PrivateVocabulary:
    """The released vocabulary: ``terms`` (top ``N`` by noisy count, best first) and its contract."""

    terms: list[str]
    noisy_counts: np.ndarray
    contract: PrivacyContract
    S: int

    def __len__(self) -> int:
        return len(self.terms)


def top_n(noisy_counts: np.ndarray, N: int) -> np.ndarray:
    """Indices of the ``N`` largest noisy counts, largest first (ties by index; post-processing)."""
    noisy_counts = np.asarray(noisy_counts, dtype=float)
    N = check_int("N", N, minimum=1)
    if N > len(noisy_counts):
        raise ParameterError("N", N, f"must be <= the public vocabulary size ({len(noisy_counts)})")
    order = np.lexsort((np.arange(len(noisy_counts)), -noisy_counts))
    return order[:N]


def noise_threshold(S: int, eps_voc: float, vocabulary_size: int, noise_terms: float) -> float:
    """Step 5's threshold ``T = (S / eps_voc) ln(vocabulary_size / (2 noise_terms))``, public parameters only.

    A term whose true count is 0 has noisy count ``Laplace(S / eps_voc)``, which is ``>= T``
    with probability ``exp(-T eps_voc / S) / 2 = noise_terms / vocabulary_size``: over the
    public vocabulary at most ``noise_terms`` such terms pass in expectation.
    ``noise_terms >= vocabulary_size / 2`` gives ``T <= 0``.
    """
    S = vocabulary_sensitivity(S)
    eps_voc = check_positive("eps_voc", eps_voc)
    vocabulary_size = check_int("vocabulary_size", vocabulary_size, minimum=1)
    noise_terms = check_positive("noise_terms", noise_terms)
    return float(S / eps_voc * np.log(vocabulary_size / (2.0 * noise_terms)))


def select_terms(noisy_counts: np.ndarray, N: int, threshold: float | None = None, min_terms: int = 1) -> np.ndarray:
    """Steps 4-5 (post-processing of the noisy counts only): the top ``N`` indices, largest first,
    cut to those with noisy count ``>= threshold`` but never fewer than ``min(min_terms, N)``."""
    chosen = top_n(noisy_counts, N)
    if threshold is None:
        return chosen
    min_terms = check_int("min_terms", min_terms, minimum=1)
    passing = int(np.count_nonzero(np.asarray(noisy_counts, dtype=float)[chosen] >= float(threshold)))
    return chosen[:max(passing, min(min_terms, len(chosen)))]


def private_vocabulary(texts: Sequence[str], vocabulary: Sequence[str] | PhraseMatcher, S: int, N: int,
                       eps_voc: float, rng: np.random.Generator, *, distinct: bool = True,
                       noise_terms: float | None = None, min_terms: int = 1,
                       built: tuple | None = None) -> PrivateVocabulary:
    """Steps 1-5 of the module docstring on ``texts`` (the private documents); step 5 only with ``noise_terms``.

    ``built``: the charged ``(mechanism, contract)`` to draw with (:func:`release_noisy_histogram`)."""
    check_rng("rng", rng)
    if isinstance(texts, str):
        raise ParameterError("texts", texts, "must be a sequence of documents, not one string")
    texts = list(texts)
    if not texts:
        raise ParameterError("texts", texts, "must contain at least one document (empty corpus)")
    matcher = vocabulary if isinstance(vocabulary, PhraseMatcher) else PhraseMatcher(vocabulary)
    S = vocabulary_sensitivity(S)
    N = check_int("N", N, minimum=1)
    if N > len(matcher):
        raise ParameterError("N", N, f"must be <= the public vocabulary size ({len(matcher)})")
    threshold = None if noise_terms is None else noise_threshold(S, eps_voc, len(matcher), noise_terms)
    term_lists = (matcher.first_terms(t, S, distinct) for t in texts)  # one document at a time
    noisy, contract = release_noisy_histogram(term_lists, len(matcher), S, eps_voc, rng, built=built)
    chosen = select_terms(noisy, N, threshold, min_terms)
    return PrivateVocabulary([matcher.terms[i] for i in chosen], noisy[chosen], contract, S)


def max_l1_change(term_lists: Sequence[Sequence[int]], vocabulary_size: int, S: int) -> float:
    """Brute force: the largest L1 change of the histogram when one document is removed."""
    full = term_histogram(term_lists, vocabulary_size, S)
    worst = 0.0
    for i in range(len(term_lists)):
        rest = term_histogram([t for j, t in enumerate(term_lists) if j != i], vocabulary_size, S)
        worst = max(worst, float(np.abs(full - rest).sum()))
    return worst
