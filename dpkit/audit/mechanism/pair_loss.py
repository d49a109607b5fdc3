"""Exact privacy loss of an adapter's neighbouring pair: how much of the claim the pair can show.

An audit can only certify what its pair exhibits: if ``max_y |log P0(y)/P1(y)|``
is a third of the claim, even a perfect event finds a third. These functions
compute that maximum exactly (or by fine numerical integration) from the
mechanisms' own distributions, so each adapter can state its pair's loss and
the audit report can list it (a pair should show at least 0.95 of the claim).
"""

from __future__ import annotations

import numpy as np
from scipy.special import logsumexp

__all__ = ["discrete_pair_loss", "above_threshold_log_probabilities"]


def discrete_pair_loss(log_p0, log_p1, floor: float = -700.0) -> float:
    """``max |log p0 - log p1|`` over outcomes that either side can produce (log-probabilities)."""
    log_p0, log_p1 = np.asarray(log_p0, dtype=float), np.asarray(log_p1, dtype=float)
    live = (log_p0 > floor) | (log_p1 > floor)
    if np.any(live & ((log_p0 <= floor) | (log_p1 <= floor))):
        return float("inf")
    return float(np.max(np.abs(log_p0[live] - log_p1[live])))


def _log_laplace_cdf(x, scale):
    x = np.asarray(x, dtype=float) / scale
    return np.where(x < 0, np.log(0.5) + x, np.log1p(-0.5 * np.exp(-np.abs(x))))


def _log_laplace_sf(x, scale):
    return _log_laplace_cdf(-np.asarray(x, dtype=float), scale)


def above_threshold_log_probabilities(queries, threshold: float, sigma: float, query_scale: float | None = None,
                                      grid: int = 20_001, width: float = 40.0) -> np.ndarray:
    """log P(AboveThreshold halts at query k), k = 0..m-1, then log P(no halt), by integrating
    over the threshold noise Laplace(sigma) on a grid of ``grid`` points over +-``width`` sigma.

    Query noise is Laplace(``query_scale``) (default ``2 sigma``); a query halts when
    ``q_k + noise >= threshold + rho``.
    """
    q = np.asarray(queries, dtype=float).reshape(-1)
    query_scale = 2.0 * sigma if query_scale is None else query_scale
    r = np.linspace(-width * sigma, width * sigma, grid)
    log_w = -np.abs(r) / sigma - np.log(2 * sigma) + np.log(r[1] - r[0])
    t = threshold + r
    below = _log_laplace_cdf(t[None, :] - q[:, None], query_scale)  # P(q_i + noise < t)
    above = _log_laplace_sf(t[None, :] - q[:, None], query_scale)
    prefix = np.concatenate([np.zeros((1, len(r))), np.cumsum(below, axis=0)], axis=0)
    halts = prefix[:-1] + above
    none = prefix[-1:]
    return logsumexp(np.vstack([halts, none]) + log_w[None, :], axis=1)
