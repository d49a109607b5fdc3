"""How many samples an audit needs: what a run can certify, before it runs.

With ``n`` certification samples per dataset, an event that holds with
probability ``p0`` on D0 and ``p1 = e^eps p0`` on D1 yields, at expected counts,
the Clopper-Pearson bound ``log(CP_lower(n p1, n) / CP_upper(n p0, n))``.
:func:`samples_needed` finds the smallest ``n`` (per dataset, certification
half only; the tester draws twice as many) for which that bound exceeds the
claim, over a grid of ``p0``: the best case for a violation of that size.
:func:`max_certifiable_epsilon` is the largest bound any event can give with
``n`` samples (all of D1's outputs inside, none of D0's): when the claim is
not below it, the run cannot refute anything and the tester warns.
"""

from __future__ import annotations

import math

import numpy as np

from dpkit.audit.mechanism.stats import epsilon_lower_bound
from dpkit.validate import check_in_range, check_int, check_positive

__all__ = ["expected_bound", "samples_needed", "max_certifiable_epsilon"]


def expected_bound(n: int, epsilon: float, p0: float, confidence: float = 0.95) -> float:
    """The bound certified, at expected counts, by an event with P0 = p0 and P1 = e^eps p0 on n samples."""
    n = check_int("n", n, minimum=1)
    p1 = min(1.0, math.exp(epsilon) * p0)
    k1, k0 = int(round(n * p1)), int(round(n * p0))
    return float(epsilon_lower_bound(k1, n, k0, n, confidence))


def max_certifiable_epsilon(n: int, confidence: float = 0.95) -> float:
    """Largest bound ``n`` certification samples per dataset can give (k1 = n, k0 = 0)."""
    n = check_int("n", n, minimum=1)
    return float(epsilon_lower_bound(n, n, 0, n, confidence))


def samples_needed(claimed_epsilon: float, true_epsilon: float, confidence: float = 0.95,
                   p0_grid=None, max_samples: int = 10**9) -> int | None:
    """Smallest n (certification samples per dataset) whose best event certifies more than the claim.

    ``true_epsilon`` is the size of the violation to detect (> claim). Returns
    None when even ``max_samples`` is not enough. The tester draws ``2 n``
    samples per dataset (half to choose the event), more with several families.
    """
    claimed_epsilon = check_positive("claimed_epsilon", claimed_epsilon, allow_zero=True)
    true_epsilon = check_positive("true_epsilon", true_epsilon)
    confidence = check_in_range("confidence", confidence, 0.0, 1.0, low_open=True, high_open=True)
    if true_epsilon <= claimed_epsilon:
        return None
    if p0_grid is None:
        p0_grid = np.geomspace(1e-6, 0.5, 60)
    p0_grid = [p for p in p0_grid if math.exp(min(true_epsilon, 700)) * p <= 1.0] or [math.exp(-true_epsilon)]

    def ok(n: int) -> bool:
        return any(expected_bound(n, true_epsilon, p, confidence) > claimed_epsilon for p in p0_grid)

    high = 16
    while not ok(high):
        high *= 2
        if high > max_samples:
            return None
    low = high // 2
    while high - low > max(1, low // 100):
        mid = (low + high) // 2
        low, high = (low, mid) if ok(mid) else (mid, high)
    return high
