"""Local against central DP for one fraction: randomized response against a noisy count.

The question: what fraction ``mu`` of ``n`` records has a bit set, at privacy ``epsilon``
per record, with ``n`` public (replace-one)?

* **Local**: each record reports its bit through binary randomized response (kept with
  probability ``p = e^eps / (1 + e^eps)``, flipped otherwise; sampled exactly by
  :func:`dpkit.methods.labels.randomized_response` with ``k = 2``), so the curator never sees
  a true bit. :func:`debiased_fraction` turns the reports into an unbiased estimate; its
  standard deviation is :func:`local_fraction_std`, of order ``1/(sqrt(n) epsilon)`` at small
  ``epsilon``.
* **Central**: a trusted curator counts the bits and adds discrete Laplace noise of scale
  ``1/epsilon`` (sensitivity 1), then divides by the public ``n``:
  :func:`central_fraction_std`, of order ``1/(n epsilon)``.

Both are ``epsilon``-DP for every record; the local estimate's error is about ``sqrt(n)``
times larger, the price of trusting no one.
"""

from __future__ import annotations

import math

import numpy as np

from dpkit.validate import ParameterError, check_int, check_positive


def keep_probability(epsilon: float) -> float:
    """``e^eps / (1 + e^eps)``: binary randomized response keeps the true bit with this probability."""
    epsilon = check_positive("epsilon", epsilon)
    return 1.0 / (1.0 + math.exp(-epsilon))


def debiased_fraction(reports, epsilon: float) -> float:
    """Unbiased estimate of the true fraction of ones from randomized-response reports (0/1):
    ``(mean - (1 - p)) / (2p - 1)``. It may fall outside ``[0, 1]``; clipping it is post-processing."""
    reports = np.asarray(reports)
    if reports.ndim != 1 or reports.size == 0 or not np.isin(reports, (0, 1)).all():
        raise ParameterError("reports", f"array of shape {reports.shape}", "must be a non-empty 1-d array of 0/1")
    p = keep_probability(epsilon)
    return float((reports.mean() - (1.0 - p)) / (2.0 * p - 1.0))


def local_fraction_std(n: int, epsilon: float) -> float:
    """Standard deviation of :func:`debiased_fraction` over ``n`` reports: ``sqrt(p (1-p) / n) / (2p - 1)``.

    Each report is a coin with bias ``p`` or ``1 - p``, of variance ``p (1 - p)`` either way, so
    the error does not depend on the true fraction (for a fixed set of records).
    """
    n = check_int("n", n, minimum=1)
    p = keep_probability(epsilon)
    return math.sqrt(p * (1.0 - p) / n) / (2.0 * p - 1.0)


def discrete_laplace_variance(scale: float) -> float:
    """Variance of the discrete Laplace distribution ``Pr[Z = z] ~ e^{-|z|/scale}`` on the integers:
    ``2 e^{-1/scale} / (1 - e^{-1/scale})^2`` (slightly below the continuous ``2 scale^2``)."""
    r = math.exp(-1.0 / check_positive("scale", scale))
    return 2.0 * r / (1.0 - r) ** 2


def central_fraction_std(n: int, epsilon: float) -> float:
    """Standard deviation of ``(count + Z) / n`` with ``Z`` discrete Laplace of scale ``1/epsilon``."""
    n = check_int("n", n, minimum=1)
    return math.sqrt(discrete_laplace_variance(1.0 / check_positive("epsilon", epsilon))) / n


def report_distribution(bits, epsilon: float) -> np.ndarray:
    """Exact distribution of the reports ``(R(x_1), ..., R(x_n))`` of binary randomized response,
    over all ``2^n`` report vectors in binary order (report vector ``y`` at index ``sum y_i 2^(n-1-i)``).

    Each record is randomized on its own (local DP), so the probability of ``y`` is the product of
    ``p`` over the records it keeps and ``1 - p`` over those it flips. For exact privacy-loss checks
    on small ``n`` (at most 16 records).
    """
    bits = np.asarray(bits)
    if bits.ndim != 1 or not 1 <= bits.size <= 16 or not np.isin(bits, (0, 1)).all():
        raise ParameterError("bits", f"array of shape {bits.shape}", "must be a 1-d array of 1 to 16 values in 0/1")
    p = keep_probability(epsilon)
    reports = (np.arange(2 ** bits.size)[:, None] >> np.arange(bits.size)[::-1]) & 1
    kept = reports == bits[None, :]
    return np.prod(np.where(kept, p, 1.0 - p), axis=1)
