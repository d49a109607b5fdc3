"""k-ary randomized response (Warner, 1965) for a record's label, as a DP mechanism.

Keep the true label with probability ``e^eps / (e^eps + k - 1)``, else report
one of the other ``k - 1`` labels uniformly. For any two labels ``y, y'`` and
any output ``o`` the probabilities differ by a factor of at most ``e^eps``:
pure ``eps``-DP under replacing the label (local DP, one record at a time).
"""

from __future__ import annotations

import math

import numpy as np

from dpkit.validate import check_int, check_positive, check_rng


def keep_probability(k: int, epsilon: float) -> float:
    """``e^eps / (e^eps + k - 1)``, computed stably."""
    k = check_int("k", k, minimum=1)
    epsilon = check_positive("epsilon", epsilon)
    return 1.0 / (1.0 + (k - 1) * math.exp(-epsilon))


def randomized_response(label: int, k: int, epsilon: float, rng: np.random.Generator) -> int:
    """One private label in ``0..k-1`` (see the module docstring)."""
    label = check_int("label", label, minimum=0, maximum=k - 1)
    check_rng("rng", rng)
    if k == 1 or rng.random() < keep_probability(k, epsilon):
        return label
    other = int(rng.integers(k - 1))
    return other + (other >= label)


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
                           note="keep the label with probability e^eps/(e^eps+k-1), else a uniform other label")
