"""Exact binomial confidence bounds and the epsilon lower bound they imply.

For an output event ``E`` and two neighbouring datasets, epsilon-DP (or
(epsilon, delta)-DP) requires ``P[M(D1) in E] <= exp(epsilon) P[M(D0) in E] + delta``.
Estimating both probabilities from independent samples and taking a
Clopper-Pearson lower bound on ``p1`` and upper bound on ``p0`` (each at level
``alpha / 2``, so both hold together with probability at least ``1 - alpha`` by a
union bound) gives

    epsilon >= log((p1_lower - delta) / p0_upper)

with confidence ``1 - alpha``, provided the event was fixed before these samples
were drawn. The bounds are exact (beta quantiles), never normal approximations.
"""

from __future__ import annotations

import numpy as np
from scipy import stats

from dpkit.validate import ParameterError, check_in_range

__all__ = ["clopper_pearson_lower", "clopper_pearson_upper", "epsilon_lower_bound"]


def _counts(name: str, k, n) -> tuple[np.ndarray, np.ndarray]:
    k = np.asarray(k)
    n = np.asarray(n)
    if not (np.issubdtype(k.dtype, np.integer) and np.issubdtype(n.dtype, np.integer)):
        raise ParameterError(name, k, "counts and trials must be integers")
    if np.any(n < 1) or np.any(k < 0) or np.any(k > n):
        raise ParameterError(name, k, "need 0 <= successes <= trials and trials >= 1")
    return k.astype(float), n.astype(float)


def clopper_pearson_lower(k, n, alpha: float):
    """One-sided ``1 - alpha`` lower bound on a binomial ``p`` from ``k`` of ``n`` (vectorized)."""
    alpha = check_in_range("alpha", alpha, 0.0, 1.0, low_open=True, high_open=True)
    k, n = _counts("k", k, n)
    with np.errstate(invalid="ignore"):
        lower = stats.beta.ppf(alpha, np.maximum(k, 1.0), n - k + 1.0)
    return np.where(k == 0, 0.0, lower)


def clopper_pearson_upper(k, n, alpha: float):
    """One-sided ``1 - alpha`` upper bound on a binomial ``p`` from ``k`` of ``n`` (vectorized)."""
    alpha = check_in_range("alpha", alpha, 0.0, 1.0, low_open=True, high_open=True)
    k, n = _counts("k", k, n)
    with np.errstate(invalid="ignore"):
        upper = stats.beta.ppf(1.0 - alpha, k + 1.0, np.maximum(n - k, 1.0))
    return np.where(k == n, 1.0, upper)


def epsilon_lower_bound(k1, n1, k0, n0, confidence: float = 0.95, delta: float = 0.0):
    """Lower confidence bound on epsilon from event counts ``k1/n1`` (on D1) and ``k0/n0`` (on D0).

    Guarantee: if the event was chosen independently of these samples, then with
    probability at least ``confidence`` the returned value is at most the true
    privacy loss of the event, ``log((p1 - delta) / p0)``; hence it never exceeds
    the epsilon of a correct (epsilon, delta)-DP mechanism except with probability
    ``1 - confidence``. Returns 0 when the data show no evidence of privacy loss
    (vectorized over arrays of counts).
    """
    confidence = check_in_range("confidence", confidence, 0.0, 1.0, low_open=True, high_open=True)
    delta = check_in_range("delta", delta, 0.0, 1.0, high_open=True)
    alpha = (1.0 - confidence) / 2.0
    p1_low = clopper_pearson_lower(k1, n1, alpha) - delta
    p0_up = clopper_pearson_upper(k0, n0, alpha)
    with np.errstate(divide="ignore", invalid="ignore"):
        eps = np.where(p1_low > 0, np.log(np.maximum(p1_low, 1e-300) / p0_up), 0.0)
    eps = np.maximum(eps, 0.0)
    return float(eps) if np.ndim(eps) == 0 else eps
