"""The calibration zoo: the classic benchmark mechanisms of black-box DP testing.

Written from their published descriptions (StatDP {cite}`ding2018detecting`,
DP-Sniper {cite}`bichsel2021dpsniper`, CheckDP {cite}`wang2020checkdp`, the
sparse-vector variants of {cite}`lyu2017understanding`, RAPPOR
{cite}`erlingsson2014rappor`), vectorized: each mechanism is a function
``(queries, n, rng) -> n outputs`` that draws all ``n`` runs at once.
Inputs are vectors of query answers of sensitivity 1 per query (every answer
may move by at most 1 between neighbours, as in StatDP), except where a
:class:`Classic` says otherwise (``scalar`` inputs: one value that moves by 1).

Each :class:`Classic` states the epsilon it *claims* and the epsilon it *has*
(``true_epsilon``; ``inf`` when no finite epsilon holds; for a correct
mechanism the claim itself, an upper bound that a given pair may not reach),
with the reason. The zoo is the tester's calibration: a correct mechanism must
never be flagged (false positives at most ``1 - confidence``), a broken one
should be, and the ratio ``lower bound / true epsilon`` measures power.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np

from dpkit.validate import ParameterError

__all__ = ["Classic", "CLASSICS", "classic", "rappor_epsilon", "QUERIES"]

QUERIES = 10  # default number of queries for vector-input mechanisms
CUTOFF = 1  # c: sparse-vector variants stop after this many "above" answers
THRESHOLD = 1.0  # public threshold T of the sparse-vector variants
ABOVE, BELOW, ABORTED = 1, 0, -1


@dataclass(frozen=True)
class Classic:
    """One benchmark mechanism calibrated for ``epsilon`` (see the module docstring)."""

    name: str
    build: Callable[[float], Callable]  # epsilon -> (queries, n, rng) -> outputs
    true_epsilon: Callable[[float], float]  # claimed epsilon -> true epsilon
    broken: bool
    source: str
    why: str
    scalar: bool = False  # input is one number (d0=0, d1=1) instead of a query vector
    pair: tuple | None = None  # a known worst-case pair (d0, d1); None: search StatDP's patterns
    claim_is_true: bool = False  # the mechanism claims exactly its true epsilon (RAPPOR: fixed parameters)

    def claimed(self, epsilon: float) -> float:
        return self.true_epsilon(epsilon) if self.claim_is_true else float(epsilon)

    def mechanism(self, epsilon: float) -> Callable:
        return self.build(float(epsilon))


def _queries(values, n_queries: int | None = None) -> np.ndarray:
    q = np.asarray(values, dtype=float).reshape(-1)
    if q.size == 0 or not np.all(np.isfinite(q)):
        raise ParameterError("queries", values, "must be a non-empty vector of finite query answers")
    return q


# ----------------------------------------------------------------------------- report noisy max

def _noisy_max(epsilon: float, noise: str, output: str):
    scale = 2.0 / epsilon

    def mechanism(queries, n, rng):
        q = _queries(queries)
        if noise == "laplace":
            noisy = q + rng.laplace(0.0, scale, size=(n, q.size))
        else:
            noisy = q + rng.exponential(scale, size=(n, q.size))
        return np.argmax(noisy, axis=1) if output == "index" else noisy.max(axis=1)

    return mechanism


# ----------------------------------------------------------------------------- sparse vector variants

def _svt(epsilon: float, variant: str):
    """Lyu et al.'s Algorithm 1 (correct, c = CUTOFF) and the broken Algorithms 3-6 (iSVT4, iSVT3, iSVT1, iSVT2)."""
    c = CUTOFF
    if variant == "isvt3":  # Algorithm 4 (Lee and Clifton): eps1 = eps/4, query noise Lap(1/eps2)
        eps1 = epsilon / 4.0
        threshold_scale, query_scale = 1.0 / eps1, 1.0 / (epsilon - eps1)
    else:
        eps1 = eps2 = epsilon / 2.0
        threshold_scale = 1.0 / eps1
        query_scale = {"svt": 2.0 * c / eps2, "isvt4": c / eps2, "isvt1": 0.0, "isvt2": 1.0 / eps2}[variant]
    stops = variant in ("svt", "isvt3", "isvt4")

    def mechanism(queries, n, rng):
        q = _queries(queries)
        rho = rng.laplace(0.0, threshold_scale, size=(n, 1))
        nu = rng.laplace(0.0, query_scale, size=(n, q.size)) if query_scale > 0 else 0.0
        noisy = q + nu
        above = noisy >= THRESHOLD + rho
        if not stops:
            return above.astype(np.int8)
        count = np.cumsum(above, axis=1)
        done_before = np.concatenate([np.zeros((n, 1), dtype=int), count[:, :-1]], axis=1) >= c
        if variant == "isvt4":  # Algorithm 3 releases the noisy value of each "above" answer
            halted = count[:, -1] >= c
            first = np.argmax(above, axis=1)
            value = np.where(halted, np.take_along_axis(noisy, first[:, None], axis=1)[:, 0], 0.0)
            below = np.where(halted, first, q.size)
            return np.stack([below.astype(float), value], axis=1)  # (number of "below" answers, last value)
        return np.where(done_before, ABORTED, above.astype(int)).astype(np.int8)

    return mechanism


# ----------------------------------------------------------------------------- histograms and sums

def _histogram(epsilon: float, scale_is_epsilon: bool):
    scale = epsilon if scale_is_epsilon else 1.0 / epsilon

    def mechanism(queries, n, rng):
        q = _queries(queries)
        return q + rng.laplace(0.0, scale, size=(n, q.size))

    return mechanism


def _partial_sum(epsilon: float):
    """CheckDP's BadPartialSum (our reconstruction): the sum of all m answers plus Lap(1/eps),
    although every answer may move by 1, so the sum moves by up to m."""

    def mechanism(queries, n, rng):
        q = _queries(queries)
        return q.sum() + rng.laplace(0.0, 1.0 / epsilon, size=n)

    return mechanism


def _gap_svt(epsilon: float):
    """CheckDP's BadGapSparseVector (our reconstruction): GapSVT (c = 1) releasing the gap
    between the first query above the noisy threshold and that threshold, with no query noise."""

    def mechanism(queries, n, rng):
        q = _queries(queries)
        noisy_threshold = THRESHOLD + rng.laplace(0.0, 2.0 / epsilon, size=(n, 1))
        above = q >= noisy_threshold
        halted = above.any(axis=1)
        first = np.argmax(above, axis=1)
        gap = np.where(halted, q[first] - noisy_threshold[:, 0], 0.0)
        return np.stack([np.where(halted, first, q.size).astype(float), gap], axis=1)

    return mechanism


# ----------------------------------------------------------------------------- hard-to-see correct ones

def _laplace_parallel(epsilon: float, copies: int = 20):
    """DP-Sniper's LaplaceParallel: ``copies`` independent Laplace releases of one value at eps/copies."""

    def mechanism(value, n, rng):
        v = float(np.asarray(value, dtype=float).reshape(-1)[0])
        return v + rng.laplace(0.0, copies / epsilon, size=(n, copies))

    return mechanism


RAPPOR_BITS, RAPPOR_HASHES = 20, 4
RAPPOR_F, RAPPOR_P, RAPPOR_Q = 0.75, 0.45, 0.55


def _bloom_bits(value: int) -> np.ndarray:
    """The (public, fixed) Bloom-filter positions of ``value``: RAPPOR_HASHES distinct bits."""
    return np.random.default_rng(1_000 + int(value)).choice(RAPPOR_BITS, RAPPOR_HASHES, replace=False)


def rappor_epsilon(d0: int = 0, d1: int = 1) -> float:
    """Exact privacy loss of one RAPPOR report between values ``d0`` and ``d1``.

    After the permanent (f) and instantaneous (p, q) randomized responses, a bit
    is 1 with probability ``a = (1 - f/2) q + (f/2) p`` when set in the Bloom
    filter and ``b = (f/2) q + (1 - f/2) p`` otherwise; bits are independent, so
    the loss is the number of differing filter bits times ``log(a/b)``.
    """
    a = (1 - RAPPOR_F / 2) * RAPPOR_Q + RAPPOR_F / 2 * RAPPOR_P
    b = RAPPOR_F / 2 * RAPPOR_Q + (1 - RAPPOR_F / 2) * RAPPOR_P
    differ = len(set(_bloom_bits(d0).tolist()) ^ set(_bloom_bits(d1).tolist()))
    return differ * math.log(a / b)


def _rappor(_epsilon: float):
    """RAPPOR steps 1-3 (Bloom filter, permanent and instantaneous randomized response), as int8 bits."""

    def mechanism(value, n, rng):
        bloom = np.zeros(RAPPOR_BITS, dtype=bool)
        bloom[_bloom_bits(int(np.asarray(value).reshape(-1)[0]))] = True
        u = rng.random((n, RAPPOR_BITS))
        permanent = np.where(u < RAPPOR_F / 2, True, np.where(u < RAPPOR_F, False, bloom))
        bit_prob = np.where(permanent, RAPPOR_Q, RAPPOR_P)
        return (rng.random((n, RAPPOR_BITS)) < bit_prob).astype(np.int8)

    return mechanism


INF = float("inf")
_same = lambda eps: eps  # noqa: E731

CLASSICS: tuple[Classic, ...] = (
    Classic("noisy_max_laplace", lambda e: _noisy_max(e, "laplace", "index"), _same, False, "StatDP",
            "report noisy max (index) with Laplace(2/eps) noise: eps-DP"),
    Classic("noisy_max_exponential", lambda e: _noisy_max(e, "exponential", "index"), _same, False, "StatDP",
            "report noisy max (index) with exponential(2/eps) noise: eps-DP"),
    Classic("noisy_max_value", lambda e: _noisy_max(e, "laplace", "value"), lambda e: QUERIES * e / 2, True,
            "StatDP", "releases the noisy maximum's value: its density's left tail is that of m Laplace(2/eps) "
            "variables at once, so shifting every answer by 1 costs m eps / 2"),
    Classic("svt", lambda e: _svt(e, "svt"), _same, False, "Lyu et al. Alg. 1",
            "sparse vector with c = 1: threshold Lap(2/eps), queries Lap(4c/eps)"),
    Classic("isvt1", lambda e: _svt(e, "isvt1"), lambda e: INF, True, "Lyu et al. Alg. 5 (StatDP iSVT1)",
            "no noise on the queries and no cutoff: some answer patterns are impossible on one input"),
    Classic("isvt2", lambda e: _svt(e, "isvt2"), lambda e: INF, True, "Lyu et al. Alg. 6 (StatDP iSVT2)",
            "no cutoff: every query is answered, the loss grows with the number of queries"),
    Classic("isvt3", lambda e: _svt(e, "isvt3"), lambda e: (1 + 6 * CUTOFF) / 4 * e, True,
            "Lyu et al. Alg. 4 (StatDP iSVT3)", "query noise Lap(4/(3 eps)) too small for c answers: "
            "(1 + 6c)/4 eps (Lyu et al.'s bound)"),
    Classic("isvt4", lambda e: _svt(e, "isvt4"), lambda e: INF, True, "Lyu et al. Alg. 3 (StatDP iSVT4)",
            "releases the noisy value of the answer above the threshold; output (number of 'below' answers, "
            "last value)"),
    Classic("histogram", lambda e: _histogram(e, False), _same, False, "StatDP",
            "Laplace(1/eps) on each bin, one record moves one bin by 1", pair=([1.0] * 5, [2.0] + [1.0] * 4)),
    Classic("histogram_eps", lambda e: _histogram(e, True), lambda e: 1.0 / e, True, "StatDP",
            "noise Laplace(eps) instead of Laplace(1/eps): 1/eps-DP (broken only for eps < 1)",
            pair=([1.0] * 5, [2.0] + [1.0] * 4)),
    Classic("bad_partial_sum", _partial_sum, lambda e: QUERIES * e, True, "CheckDP BadPartialSum",
            "the sum of m answers gets noise for a change of 1, but moves by up to m"),
    Classic("bad_gap_svt", _gap_svt, lambda e: INF, True, "CheckDP BadGapSparseVector",
            "releases the gap to the noisy threshold without query noise"),
    Classic("laplace_parallel", _laplace_parallel, _same, False, "DP-Sniper LaplaceParallel",
            "20 Laplace releases at eps/20 each: the loss is spread thinly over 20 coordinates", scalar=True,
            pair=(0.0, 1.0)),
    Classic("rappor", _rappor, lambda e: rappor_epsilon(), False, "RAPPOR (DP-Sniper)",
            "20 noisy Bloom-filter bits; the loss is a sum of small per-bit losses (claim = exact loss)",
            scalar=True, pair=(0, 1), claim_is_true=True),
)


def classic(name: str) -> Classic:
    for entry in CLASSICS:
        if entry.name == name:
            return entry
    raise ParameterError("name", name, f"must be one of {[c.name for c in CLASSICS]}")
