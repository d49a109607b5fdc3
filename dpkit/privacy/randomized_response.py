"""k-ary randomized response (Warner, 1965) over ``k`` public categories, sampled exactly.

Keep the true category with probability ``e^eps / (e^eps + k - 1)``, else report one of
the other ``k - 1`` categories uniformly. For any two true categories ``y, y'`` and any
output ``o`` the probabilities differ by a factor of at most ``e^eps``: pure ``eps``-DP
under replacing the input (any two inputs: a change that moves the true category,
or one that does not). It is the exponential mechanism with utility ``1{o = y}`` whose
normaliser ``e^eps + k - 1`` is the same for every input, which is why the weight is
``e^(eps u)`` here and not the generic ``e^(eps u / 2)``.

Exact sampling: propose ``o`` uniformly from the ``k`` categories (``Generator.integers``,
unbiased); accept the true category always and any other with probability ``exp(-eps)``,
decided by the privacy core's exact :func:`~dpkit.privacy.exact.bernoulli_exp` on the
exact rational value of the float ``eps`` (integer arithmetic only). The accepted
category has probability proportional to ``e^eps`` (true) and ``1`` (each other), so
``P(keep) = e^eps / (e^eps + k - 1)`` exactly, at ANY ``eps``: a change stays possible at
``eps = 40`` or ``400`` (a float test ``rng.random() < p`` keeps with probability 1 from
``eps ~ 37``, an infinite privacy loss). At most ``k`` proposals are needed on average.

Users: a record's label (:mod:`dpkit.methods.labels`) and DP-ST's topic variant, which
reports a document's nearest public neighbourhood (:mod:`dpkit.dpst.topic`).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from dpkit.privacy.contract import PrivacyContract, own_event
from dpkit.privacy.exact import bernoulli_exp
from dpkit.validate import ParameterError, check_int, check_positive, check_rng


def keep_probability(k: int, epsilon: float) -> float:
    """``e^eps / (e^eps + k - 1)``, computed stably (float64; the sampler uses the exact value)."""
    k = check_int("k", k, minimum=1)
    epsilon = check_positive("epsilon", epsilon)
    return 1.0 / (1.0 + (k - 1) * math.exp(-epsilon))


def uniform_share(k: int, epsilon: float) -> float:
    """``k / (e^eps + k - 1)``: the share of answers drawn uniformly over all k categories when k-ary randomized
    response is written as "keep, else uniform" (dp_accounting's noise parameter), computed stably."""
    k = check_int("k", k, minimum=1)
    epsilon = check_positive("epsilon", epsilon)
    return k * math.exp(-epsilon) / (1.0 + (k - 1) * math.exp(-epsilon))


def randomized_response_dp_event(contract: PrivacyContract, dp_event):
    """A k-ary randomized-response contract (``parameters["k"]`` >= 2) as dp_accounting's k-bucket event; None
    otherwise (the measure decides). Registered with :data:`dpkit.privacy.contract.KINDS`' event table."""
    k = contract.parameters.get("k")
    if not (isinstance(k, int) and k >= 2 and contract.epsilon):
        return None
    return dp_event.RandomizedResponseDpEvent(noise_parameter=uniform_share(k, contract.epsilon), num_buckets=k)


own_event("randomized_response", randomized_response_dp_event)


def log_probabilities(category: int, k: int, epsilon: float) -> np.ndarray:
    """Exact ``log P(output = o)`` for ``o = 0..k-1`` when the true category is ``category``."""
    k = check_int("k", k, minimum=1)
    category = check_int("category", category, minimum=0, maximum=k - 1)
    if k == 1:
        return np.zeros(1)
    epsilon = check_positive("epsilon", epsilon)
    log_normaliser = math.log1p((k - 1) * math.exp(-epsilon))  # log((e^eps + k - 1) / e^eps), stable at any eps
    out = np.full(k, -epsilon - log_normaliser)                  # each other category: 1 / (e^eps + k - 1)
    out[category] = -log_normaliser                              # the true one: e^eps / (e^eps + k - 1)
    return out


class RandomizedResponse:
    """k-ary randomized response at ``epsilon`` over ``k`` categories, validated once; :meth:`sample` draws
    one private category (a release builds one, charges it and draws every record's category from it).
    ``name``: what a category is called ("label", "neighbourhood"); ``unit``: what one input belongs to.

    :attr:`contract` is its guarantee: pure ``epsilon``-DP under replace-one of the category (any two
    inputs), sensitivity one category change, ``kind="randomized_response"`` with ``parameters`` ``k`` and
    ``keep``, from which an auditor re-derives ``epsilon = log(keep (k - 1) / (1 - keep))`` and dp_accounting
    gets the exact k-bucket randomized-response event.
    """

    def __init__(self, k: int, epsilon: float, name: str = "category", unit: str = "record"):
        if not isinstance(name, str) or not name:
            raise ParameterError("name", name, "must be a non-empty string naming a category (e.g. 'label')")
        self.name = name
        self.k = check_int("k", k, minimum=1)
        self.epsilon = check_positive("epsilon", epsilon)
        self.unit = unit
        self._loss = Fraction(self.epsilon)  # the exact value of the float: the guarantee is for this epsilon
        self.contract = PrivacyContract(
            mechanism=f"k-ary randomized response over {self.k} {name}s", neighbouring="replace-one", unit=unit,
            measure="pure", sensitivity=1.0, epsilon=self.epsilon, sensitivity_norm=f"{name} changes",
            kind="randomized_response", parameters={"k": self.k, "keep": self.keep},
            note=f"keep the {name} with probability e^eps/(e^eps+k-1), else a uniform other {name}; "
                 "sampled exactly (rejection with an exact Bernoulli(exp(-eps)))")

    @property
    def keep(self) -> float:
        """The probability of reporting the true category."""
        return keep_probability(self.k, self.epsilon)

    def sample(self, category: int, rng: np.random.Generator) -> int:
        """One private category in ``0..k-1``, drawn exactly (see the module docstring)."""
        category = check_int(self.name, category, minimum=0, maximum=self.k - 1)
        check_rng("rng", rng)
        if self.k == 1:
            return category
        while True:
            proposal = int(rng.integers(self.k))
            if proposal == category or bernoulli_exp(self._loss, rng):
                return proposal
