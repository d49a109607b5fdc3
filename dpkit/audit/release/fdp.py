"""The f-DP one-run bound (Mahloujifar, Melis and Chaudhuri 2024, arXiv 2410.22235) and Gaussian DP.

Setting: the one of :mod:`dpkit.audit.release.one_run`. ``m`` canaries, each in
the input with probability 1/2; after one run the auditor makes ``k`` guesses
from the output alone and ``c`` of them are right. Steinke, Nasr and Jagielski
bound the number of right guesses by a binomial, which is exact for randomized
response and pays for ``delta`` with the term ``2 m delta``. Mahloujifar et al.
instead use the whole trade-off curve ``f`` of the claim: for one canary, an
event the output shows with probability ``x`` when the canary is in can only be
made only so much rarer when it is out: it keeps at least ``g(x)``, where
``g`` is the inverse of the *blow-up* ``a -> 1 - f(a)``:

* ``(eps, delta)``-DP: ``g(x) = max(0, (x - delta) e^-eps, 1 - delta - e^eps (1 - x))``;
* ``mu``-GDP (the Gaussian trade-off curve ``f(a) = Phi(Phi^-1(1 - a) - mu)``):
  ``g(x) = Phi(Phi^-1(x) - mu)``.

The test (their Algorithm "audit with cap"): suppose ``c`` or more right
guesses had probability at least ``alpha``. Then the mass of right guesses per
canary is at least ``alpha c / m`` and that of wrong ones at least
``alpha (k - c) / m``; going down the count of right guesses ``i = c-1, ..., 0``,
the curve forces more wrong mass (``g`` of the right mass) and, through the
guesses that are spread over the levels, more right mass
(``i / (k - i)`` per unit of wrong mass). The two masses together can never
exceed ``k / m`` (the expected share of canaries guessed); when the forced
masses do, the supposition was false: the claim is rejected at level
``alpha``. The bound is the largest ``eps`` (or ``mu``) rejected.

Where the two analyses differ. Against a pure ``eps``-DP claim both are valid
and the binomial one is exact (randomized response meets it); the f-DP test
loses a little there. Its gain is for claims whose curve is smooth, the
Gaussian mechanism and its compositions (DP-SGD, private prediction's noisy
logits): the ``mu``-GDP claim is one number, and the bound on it is much closer
to the truth than the ``eps`` the binomial analysis certifies at a small
``delta``. The ``eps(delta)`` curve implied by a ``mu`` lower bound
(:func:`gdp_epsilon`) is a bound on the privacy profile *of a mechanism that is
GDP* (it refutes "this is a Gaussian mechanism of that ``eps, delta``"): it is
not a refutation of every ``(eps, delta)``-DP claim, which only the ``(eps,
delta)`` curve gives (:func:`epsilon_lower_bound_fdp`).

Units: ``mu`` and ``eps`` are per canary (one record, add/remove or replace-one
as the audit states); ``k/m`` is a share of canaries.
"""

from __future__ import annotations

import math
from functools import lru_cache

from scipy import optimize, special

from dpkit.validate import ParameterError


def _check(m: int, k: int, c: int, alpha: float) -> None:
    if not (0 <= c <= k <= m and m >= 1):
        raise ParameterError("guesses", (m, k, c), "must satisfy 0 <= correct <= guesses <= canaries, canaries >= 1")
    if not (0 < alpha < 1):
        raise ParameterError("alpha", alpha, "must lie in (0, 1) (alpha = 1 - confidence)")


def inverse_blow_up_dp(eps: float, delta: float = 0.0):
    """``g(x)``: the least out-probability of an event with in-probability ``x`` under ``(eps, delta)``-DP."""
    shrink, grow = math.exp(-eps), math.exp(eps)
    return lambda x: max(0.0, (x - delta) * shrink, 1.0 - delta - grow * (1.0 - x))


def inverse_blow_up_gdp(mu: float):
    """``g(x) = Phi(Phi^-1(x) - mu)``: the same under ``mu``-GDP."""
    ndtr, ndtri = special.ndtr, special.ndtri
    return lambda x: float(ndtr(ndtri(x) - mu)) if 0.0 < x < 1.0 else float(x >= 1.0)


def rejects(m: int, k: int, c: int, alpha: float, g) -> bool:
    """Whether ``c`` right of ``k`` guesses on ``m`` canaries reject, at level ``alpha``, a claim of curve ``g``."""
    right, wrong = alpha * c / m, alpha * (k - c) / m
    for i in range(c - 1, -1, -1):
        forced = g(right)
        if forced <= wrong:          # nothing new is forced, at this level or below it
            break
        right = min(right + i / (k - i) * (forced - wrong), 1.0)
        wrong = forced
    return right + wrong > k / m


def _largest_rejected(test, high: float, tolerance: float) -> float:
    """The largest ``t`` in [0, high] with ``test(t)`` true (``test`` true up to a point, false after), 0 if none."""
    if not test(0.0):
        return 0.0
    low, top = 0.0, 1.0
    while test(top):
        low, top = top, 2 * top
        if top > high:
            return high
    while top - low > tolerance:
        mid = (low + top) / 2
        if test(mid):
            low = mid
        else:
            top = mid
    return low


def epsilon_lower_bound_fdp(m: int, k: int, c: int, alpha: float, delta: float = 0.0, *,
                            tolerance: float = 1e-6, eps_max: float = 100.0) -> float:
    """The largest ``eps`` whose ``(eps, delta)``-DP curve is rejected at level ``alpha`` (0 when none is)."""
    _check(m, k, c, alpha)
    if not (0 <= delta < 1):
        raise ParameterError("delta", delta, "must lie in [0, 1)")
    if k == 0:
        return 0.0
    return _largest_rejected(lambda eps: rejects(m, k, c, alpha, inverse_blow_up_dp(eps, delta)), eps_max, tolerance)


def gdp_mu_lower_bound(m: int, k: int, c: int, alpha: float, *, tolerance: float = 1e-6,
                       mu_max: float = 50.0) -> float:
    """The largest ``mu`` whose ``mu``-GDP curve is rejected at level ``alpha`` (0 when none is)."""
    _check(m, k, c, alpha)
    if k == 0:
        return 0.0
    return _largest_rejected(lambda mu: rejects(m, k, c, alpha, inverse_blow_up_gdp(mu)), mu_max, tolerance)


def gdp_delta(mu: float, eps: float) -> float:
    """``delta(eps)`` of ``mu``-GDP: ``Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2)`` (Dong, Roth and Su 2022)."""
    if mu <= 0:
        return 0.0
    a, b = -eps / mu + mu / 2, -eps / mu - mu / 2
    # e^eps Phi(b) computed in logs: both terms are tiny for large eps
    return max(float(special.ndtr(a) - math.exp(eps + special.log_ndtr(b))), 0.0)


@lru_cache(maxsize=4096)
def gdp_epsilon(mu: float, delta: float) -> float:
    """``eps(delta)`` of ``mu``-GDP: the smallest ``eps >= 0`` with ``delta(eps) <= delta``."""
    if not (0 < delta < 1):
        raise ParameterError("delta", delta, "must lie in (0, 1) for the epsilon of a GDP curve")
    if mu <= 0 or gdp_delta(mu, 0.0) <= delta:
        return 0.0
    high = 1.0
    while gdp_delta(mu, high) > delta:
        high *= 2
    return float(optimize.brentq(lambda e: gdp_delta(mu, e) - delta, 0.0, high, xtol=1e-10))


def gdp_epsilon_curve(mu: float, deltas=(1e-3, 1e-4, 1e-5, 1e-6, 1e-8)) -> list[dict]:
    """The ``(delta, eps)`` pairs the GDP ``mu`` implies (``[{"delta", "epsilon"}, ...]``)."""
    return [{"delta": float(d), "epsilon": gdp_epsilon(float(mu), float(d))} for d in deltas]


def gdp_mu_of_randomized_response(eps: float) -> float:
    """The least ``mu`` whose GDP curve lies below eps-randomized response's: ``2 Phi^-1(e^eps / (1 + e^eps))``.

    Randomized response's curve is two lines meeting at ``(x0, x0)``, ``x0 = 1/(1 + e^eps)``; the Gaussian curve
    through that point is symmetric and convex, so it lies under both lines (they are its chords to (0, 1) and
    (1, 0)), and no smaller ``mu`` passes below the kink. It is the GDP truth of the tightness study.
    """
    return float(2 * special.ndtri(1.0 / (1.0 + math.exp(-eps))))
