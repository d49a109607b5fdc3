"""The one-run audit bound (Steinke, Nasr and Jagielski 2023, Theorem 3.1 / Algorithm 2).

Setting. ``m`` canaries are each included in the input independently with
probability 1/2 (the inclusion bits ``S`` in {-1, +1}^m). After one run, the
auditor looks at the output only and makes ``r`` guesses (``T_i`` in {-1, +1})
and abstains on the other ``m - r``; ``v`` of the guesses are correct.

Theorem (pure DP). If the run is epsilon-DP (add/remove one canary), the number
of correct guesses is stochastically dominated by ``Binomial(r, q)`` with
``q = e^eps / (1 + e^eps)``: the p-value of ``v`` is the binomial tail
``f(v) = P[Binomial(r, q) >= v]``.

Theorem ((eps, delta) form). If the run is (eps, delta)-DP,

    P[correct >= v] <= f(v) + 2 m delta * max_{1 <= i <= v} (f(v - i) - f(v)) / i.

``epsilon_lower_bound`` inverts this: the smallest eps whose p-value is still
at most ``alpha = 1 - confidence`` is not certified; the bound is the largest eps
the observed guesses reject at level ``alpha`` (the p-value grows with eps).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

from dpkit.validate import ParameterError


def _check(m: int, r: int, v: int, eps: float, delta: float) -> None:
    if not (0 <= v <= r <= m):
        raise ParameterError("guesses", (m, r, v), "must satisfy 0 <= correct <= guesses <= canaries")
    if not (eps >= 0 and math.isfinite(eps)):
        raise ParameterError("epsilon", eps, "must be a finite number >= 0")
    if not (0 <= delta <= 1):
        raise ParameterError("delta", delta, "must lie in [0, 1]")


def guess_accuracy(eps: float) -> float:
    """``q = e^eps / (1 + e^eps)``: the best accuracy of one guess against an eps-DP run (randomized response)."""
    return 1.0 / (1.0 + math.exp(-eps))


def p_value(m: int, r: int, v: int, eps: float, delta: float = 0.0) -> float:
    """P[at least ``v`` of ``r`` guesses correct] under the null "the run is (eps, delta)-DP" (an upper bound)."""
    _check(m, r, v, eps, delta)
    q = guess_accuracy(eps)
    tail = float(stats.binom.sf(v - 1, r, q))           # f(v) = P[Binomial(r, q) >= v]
    if delta == 0 or v == 0:
        return min(tail, 1.0)
    pmf = stats.binom.pmf(np.arange(v - 1, -1, -1), r, q)   # P[B = v-1], P[B = v-2], ..., P[B = 0]
    between = np.cumsum(pmf)                            # f(v - i) - f(v) = P[v - i <= B < v], i = 1..v
    ratio = float(np.max(between / np.arange(1, v + 1)))
    return min(tail + 2.0 * m * delta * ratio, 1.0)


def epsilon_lower_bound(m: int, r: int, v: int, alpha: float, delta: float = 0.0, *,
                        tolerance: float = 1e-9, eps_max: float = 100.0) -> float:
    """The largest eps rejected at level ``alpha`` by ``v`` correct of ``r`` guesses (0 when none is).

    Bisection on the p-value, which grows with eps; accurate to ``tolerance``.
    """
    if not (0 < alpha < 1):
        raise ParameterError("alpha", alpha, "must lie in (0, 1) (alpha = 1 - confidence)")
    _check(m, r, v, 0.0, delta)
    if r == 0 or p_value(m, r, v, 0.0, delta) > alpha:
        return 0.0
    low, high = 0.0, 1.0
    while p_value(m, r, v, high, delta) <= alpha:
        low, high = high, 2 * high
        if high > eps_max:
            return eps_max
    while high - low > tolerance:
        mid = (low + high) / 2
        if p_value(m, r, v, mid, delta) <= alpha:
            low = mid
        else:
            high = mid
    return low


def perfect_guess_bound(m: int, alpha: float, delta: float = 0.0) -> float:
    """The largest bound ``m`` canaries can give: every one of ``m`` guesses correct."""
    return epsilon_lower_bound(m, m, m, alpha, delta)


def canaries_needed(target_epsilon: float, accuracy: float, share_guessed: float, alpha: float,
                    delta: float = 0.0, limit: int = 10 ** 7) -> int | None:
    """Canaries for a bound of at least ``target_epsilon`` when a share of them is guessed at ``accuracy``.

    The auditor guesses ``share_guessed * m`` canaries and gets ``accuracy`` of
    them right (rounded down); returns the smallest ``m`` (a power-of-two
    search, then bisection) or None above ``limit``.
    """
    if not (0 < accuracy <= 1 and 0 < share_guessed <= 1):
        raise ParameterError("accuracy", (accuracy, share_guessed), "accuracy and share must lie in (0, 1]")

    def bound(m: int) -> float:
        r = max(1, int(share_guessed * m))
        return epsilon_lower_bound(m, r, int(accuracy * r), alpha, delta)

    high = 1
    while bound(high) < target_epsilon:
        high *= 2
        if high > limit:
            return None
    low = high // 2
    while high - low > 1:
        mid = (low + high) // 2
        if bound(mid) >= target_epsilon:
            high = mid
        else:
            low = mid
    return high
