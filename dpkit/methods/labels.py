"""k-ary randomized response for a record's label: the privacy core's exact sampler
(:mod:`dpkit.privacy.randomized_response`, Warner 1965) with the label's contract.

Keep the true label with probability ``e^eps / (e^eps + k - 1)``, else report one of
the other ``k - 1`` labels uniformly: pure ``eps``-DP under replacing the label (local
DP, one record at a time), sampled exactly at any ``eps`` (see the core module).
"""

from __future__ import annotations

import numpy as np

from dpkit.privacy.randomized_response import RandomizedResponse, keep_probability
from dpkit.validate import check_int, check_positive

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
    """The contract of :func:`randomized_response` (pure, replace-one, per record).

    ``kind="randomized_response"`` with ``parameters`` ``k`` and ``keep`` (the
    probability of keeping the true label), from which an auditor re-derives
    ``epsilon = log(keep (k - 1) / (1 - keep))`` and dp_accounting gets the
    exact k-bucket randomized-response event.
    """
    from dpkit.privacy import PrivacyContract

    k = check_int("k", k, minimum=1)
    epsilon = check_positive("epsilon", epsilon)
    return PrivacyContract(mechanism=f"k-ary randomized response over {k} labels",
                           neighbouring="replace-one", unit=unit, measure="pure", sensitivity=1.0,
                           epsilon=epsilon, sensitivity_norm="label changes", kind="randomized_response",
                           parameters={"k": k, "keep": keep_probability(k, epsilon)},
                           note="keep the label with probability e^eps/(e^eps+k-1), else a uniform other label; "
                                "sampled exactly (rejection with an exact Bernoulli(exp(-eps)))")
