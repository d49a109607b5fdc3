"""Near-duplicate triples removed with MinHash LSH; ties broken by LM perplexity.

Triples extracted from one sentence often overlap ("the company bought
Instagram", "company bought Instagram and WhatsApp"). As in DP-ST
{cite}`meisenbacher2025dpst`, every triple's word set is MinHashed
(``num_perm`` permutations, ``datasketch``); triples whose estimated Jaccard
similarity to an earlier group leader reaches ``threshold`` join that leader's
group (leader clustering, so groups never grow by chaining), and each group keeps the triple the local LM finds most
fluent (lowest perplexity). The paper used a threshold of 0.4 and 128
permutations, which are our defaults.

Deterministic: the MinHash permutations come from ``seed`` and perplexity has
no randomness, so the same triples always give the same survivors.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Callable, Sequence, TypeVar

import numpy as np
from wordfreq import tokenize, word_frequency

from dpkit.validate import ParameterError, check_in_range, check_int

T = TypeVar("T")
Scorer = Callable[[Sequence[str]], np.ndarray]


def _shingles(text: str) -> set[bytes]:
    words = {w.encode("utf8") for w in text.lower().split()}
    return words or {b""}


def _datasketch():
    """The ``datasketch`` module (MinHash LSH), imported here on first use."""
    import datasketch

    return datasketch


@lru_cache(maxsize=16)
def _lsh_params(threshold: float, num_perm: int) -> tuple[int, int]:
    """(bands, rows) datasketch picks for this threshold (computed once; it integrates numerically)."""
    lsh = _datasketch().MinHashLSH(threshold=threshold, num_perm=num_perm)
    return lsh.b, lsh.r


def near_duplicate_groups(texts: Sequence[str], threshold: float = 0.4, num_perm: int = 128,
                          seed: int = 1) -> list[list[int]]:
    """Indices of ``texts`` grouped by MinHash LSH (groups in order of first member)."""
    datasketch = _datasketch()
    threshold = check_in_range("threshold", threshold, 0.0, 1.0, low_open=True, high_open=True)
    num_perm = check_int("num_perm", num_perm, minimum=2)
    seed = check_int("seed", seed, minimum=0)
    n = len(texts)
    if n == 0:
        return []
    hashes = datasketch.MinHash.bulk([_shingles(t) for t in texts], num_perm=num_perm, seed=seed)
    lsh = datasketch.MinHashLSH(threshold=threshold, num_perm=num_perm, params=_lsh_params(threshold, num_perm))
    groups: dict[int, list[int]] = {}
    for i, h in enumerate(hashes):
        leaders = lsh.query(h)
        if leaders:  # join the earliest similar leader (groups are stars, never chains)
            groups[min(int(j) for j in leaders)].append(i)
        else:
            groups[i] = [i]
            lsh.insert(i, h)
    return [groups[k] for k in sorted(groups)]


def lm_perplexity(texts: Sequence[str], lm=None, batch_size: int = 32) -> np.ndarray:
    """Perplexity of each text under the local causal LM (no chat template), float64 array
    (:func:`dpkit.models.lm.perplexity`: PyTorch, imported on the first call)."""
    from dpkit.models.lm import perplexity

    return perplexity(texts, lm, batch_size)


def unigram_perplexity(texts: Sequence[str], floor: float = 1e-8) -> np.ndarray:
    """Perplexity under an English unigram model (``wordfreq`` frequencies, floored at ``floor``).

    A cheap stand-in for :func:`lm_perplexity` when thousands of triples must be
    scored on a CPU (the public corpus build); it ranks common phrasing over rare
    tokens but ignores word order.
    """
    if isinstance(texts, str):
        raise ParameterError("texts", texts, "must be a sequence of strings, not one string")
    out = []
    for text in texts:
        words = tokenize(text, "en") or [""]
        logp = [np.log(max(word_frequency(w, "en"), floor)) for w in words]
        out.append(float(np.exp(-np.mean(logp))))
    return np.asarray(out)


SCORERS = {"lm": lm_perplexity, "unigram": unigram_perplexity}


def resolve_scorer(scorer) -> Scorer:
    """``"lm"`` (local causal LM), ``"unigram"`` (wordfreq) or a callable texts -> scores."""
    if callable(scorer):
        return scorer
    if scorer is None:
        return lm_perplexity
    if scorer in SCORERS:
        return SCORERS[scorer]
    raise ParameterError("scorer", scorer, f"must be one of {sorted(SCORERS)} or a callable texts -> scores")


def deduplicate(items: Sequence[T], texts: Sequence[str] | None = None, threshold: float = 0.4,
                num_perm: int = 128, scorer: Scorer | None = None, seed: int = 1) -> list[T]:
    """Keep one item per near-duplicate group: the one with the lowest ``scorer`` value.

    ``texts`` default to ``str(item)`` (or ``item.text`` for triples). ``scorer``
    maps texts to scores (lower is better): ``"lm"`` (default, the local LM's
    perplexity), ``"unigram"`` or a callable; it is computed only for groups
    with more than one member. Survivors
    keep their original order.
    """
    items = list(items)
    if texts is None:
        texts = [getattr(x, "text", x) for x in items]
    texts = list(texts)
    if len(texts) != len(items):
        raise ParameterError("texts", f"<{len(texts)} texts>", f"must match the {len(items)} items")
    groups = near_duplicate_groups(texts, threshold=threshold, num_perm=num_perm, seed=seed)
    contested = sorted({i for g in groups if len(g) > 1 for i in g})
    scores = np.zeros(len(items))
    if contested:
        scorer = resolve_scorer(scorer)
        got = np.asarray(scorer([texts[i] for i in contested]), dtype=float)
        if got.shape != (len(contested),) or not np.all(np.isfinite(got)):
            raise ParameterError("scorer", scorer, "must return one finite score per text")
        scores[contested] = got
    keep = sorted(min(g, key=lambda i: (scores[i], i)) for g in groups)
    return [items[i] for i in keep]


def deduplicate_many(documents: Sequence[Sequence[str]], threshold: float = 0.4, num_perm: int = 128,
                     scorer: Scorer | str | None = None, seed: int = 1,
                     independent: bool = False) -> list[list[str]]:
    """:func:`deduplicate` applied to each document's texts separately.

    By default the tie-breaking scores of all documents are computed in one
    batched call (one LM pass instead of one per document); a batched LM's
    scores move in the last bits with the other texts of the batch (padding).
    ``independent=True`` scores each document's ties in a call of their own, so
    what survives in one document never depends on another document: the rule
    for private text, where each document is privatized on its own.
    """
    documents = [list(d) for d in documents]
    groups = [near_duplicate_groups(d, threshold=threshold, num_perm=num_perm, seed=seed) if d else []
              for d in documents]
    contested = [(i, j) for i, doc_groups in enumerate(groups) for g in doc_groups if len(g) > 1 for j in g]
    calls = ([[(i, j) for i, j in contested if i == doc] for doc in sorted({i for i, _ in contested})]
             if independent else [contested] if contested else [])
    scores: dict[tuple[int, int], float] = {}
    for call in calls:
        got = np.asarray(resolve_scorer(scorer)([documents[i][j] for i, j in call]), dtype=float)
        if got.shape != (len(call),) or not np.all(np.isfinite(got)):
            raise ParameterError("scorer", scorer, "must return one finite score per text")
        scores.update(zip(call, got.tolist()))
    out = []
    for i, doc_groups in enumerate(groups):
        keep = sorted(min(g, key=lambda j: (scores.get((i, j), 0.0), j)) for g in doc_groups)
        out.append([documents[i][j] for j in keep])
    return out
