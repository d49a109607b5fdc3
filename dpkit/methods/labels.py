"""k-ary randomized response (Warner, 1965) for a record's label, as a DP mechanism, sampled exactly.

Keep the true label with probability ``e^eps / (e^eps + k - 1)``, else report
one of the other ``k - 1`` labels uniformly. For any two labels ``y, y'`` and
any output ``o`` the probabilities differ by a factor of at most ``e^eps``:
pure ``eps``-DP under replacing the label (local DP, one record at a time).

Exact sampling: :func:`randomized_response` is the exponential mechanism with
utility ``1{o = y}``, drawn by rejection: propose ``o`` uniformly from the
``k`` labels (``Generator.integers``, unbiased); accept the true label always
and any other label with probability ``exp(-eps)``, decided by the privacy
core's exact :func:`~dpkit.privacy.exact.bernoulli_exp` on the exact rational
value of the float ``eps`` (integer arithmetic only). The accepted label has
probability proportional to ``e^eps`` (true label) and ``1`` (each other), so
``P(keep) = e^eps / (e^eps + k - 1)`` exactly, with no float rounding, at ANY
``eps``: a flip stays possible at ``eps = 40`` or ``400`` (a float test
``rng.random() < p`` keeps the label with probability 1 from ``eps ~ 37``,
an infinite privacy loss). At most ``k`` proposals are needed on average.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from dpkit.privacy.exact import bernoulli_exp
from dpkit.validate import check_int, check_positive, check_rng


def keep_probability(k: int, epsilon: float) -> float:
    """``e^eps / (e^eps + k - 1)``, computed stably (float64; the sampler uses the exact value)."""
    k = check_int("k", k, minimum=1)
    epsilon = check_positive("epsilon", epsilon)
    return 1.0 / (1.0 + (k - 1) * math.exp(-epsilon))


class RandomizedResponse:
    """k-ary randomized response at ``epsilon`` over ``k`` labels, validated once; :meth:`sample` draws
    one private label (a release builds one and draws every record's label from it)."""

    def __init__(self, k: int, epsilon: float):
        self.k = check_int("k", k, minimum=1)
        self.epsilon = check_positive("epsilon", epsilon)
        self._loss = Fraction(self.epsilon)  # the exact value of the float: the guarantee is for this epsilon

    def sample(self, label: int, rng: np.random.Generator) -> int:
        """One private label in ``0..k-1``, drawn exactly (see the module docstring)."""
        label = check_int("label", label, minimum=0, maximum=self.k - 1)
        check_rng("rng", rng)
        if self.k == 1:
            return label
        while True:
            proposal = int(rng.integers(self.k))
            if proposal == label or bernoulli_exp(self._loss, rng):
                return proposal

    def contract(self, unit: str):
        """:func:`label_contract` of this mechanism."""
        return label_contract(self.k, self.epsilon, unit)


def randomized_response(label: int, k: int, epsilon: float, rng: np.random.Generator) -> int:
    """One private label in ``0..k-1``, drawn exactly: :meth:`RandomizedResponse.sample`."""
    return RandomizedResponse(k, epsilon).sample(label, rng)


def randomized_responses(label: int, k: int, epsilon: float, rng: np.random.Generator, size: int) -> np.ndarray:
    """``size`` independent draws of :func:`randomized_response` (an audit's sample), as int64."""
    size = check_int("size", size, minimum=0)
    mechanism = RandomizedResponse(k, epsilon)
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
