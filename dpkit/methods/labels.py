"""k-ary randomized response for a record's label: the privacy core's exact sampler
(:mod:`dpkit.privacy.randomized_response`, Warner 1965) with the label's contract.

Keep the true label with probability ``e^eps / (e^eps + k - 1)``, else report one of
the other ``k - 1`` labels uniformly: pure ``eps``-DP under replacing the label (local
DP, one record at a time), sampled exactly at any ``eps`` (see the core module).
"""

from __future__ import annotations

import numpy as np

from dpkit.privacy.randomized_response import RandomizedResponse, keep_probability
from dpkit.validate import check_int

__all__ = ["RandomizedResponse", "keep_probability", "label_contract", "randomized_response",
           "randomized_responses"]


def randomized_response(label: int, k: int, epsilon: float, rng: np.random.Generator) -> int:
    """One private label in ``0..k-1``, drawn exactly: :meth:`RandomizedResponse.sample`."""
    return RandomizedResponse(k, epsilon, name="label").sample(label, rng)


def randomized_responses(label: int, k: int, epsilon: float, rng: np.random.Generator, size: int) -> np.ndarray:
    """``size`` independent draws of :func:`randomized_response` (an audit's sample), as int64."""
    size = check_int("size", size, minimum=0)
    mechanism = RandomizedResponse(k, epsilon, name="label")
    return np.array([mechanism.sample(label, rng) for _ in range(size)], dtype=np.int64)


def label_contract(k: int, epsilon: float, unit: str):
    """The contract of :func:`randomized_response` (pure, replace-one, per record): the core's
    :attr:`RandomizedResponse.contract <dpkit.privacy.randomized_response.RandomizedResponse>` over labels."""
    return RandomizedResponse(k, epsilon, name="label", unit=unit).contract
