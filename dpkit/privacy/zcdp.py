"""Zero-concentrated DP: costs of pure mechanisms and conversions to (epsilon, delta).

A mechanism is rho-zCDP when the Renyi divergence of order alpha between its
outputs on neighbours is at most rho * alpha for every alpha > 1
{cite}`bun2016concentrated`.  zCDP composes by adding rho.

Conversions to approximate DP (all guarantee: a rho-zCDP mechanism is
(epsilon, delta)-DP with the returned numbers):

* tight: Canonne, Kamath & Steinke (2020), Proposition 12 / Corollary 13,
  the infimum over Renyi orders alpha of
  ``delta(alpha) = exp((alpha-1)(alpha rho - eps)) / (alpha-1) * (1-1/alpha)^alpha``
  and, solved for eps at fixed delta,
  ``eps(alpha) = alpha rho + (log(1/delta) + (alpha-1) log(1-1/alpha) - log alpha)/(alpha-1)``;
* simple: Bun & Steinke (2016), Proposition 1.3,
  ``eps = rho + 2 sqrt(rho log(1/delta))``.

The infimum is computed in the variable ``t = log(alpha - 1)``, where both
objectives are finite and smooth for all t: a dense grid finds the basin, a
bounded Brent search refines it.  At rho = 0 the mechanism is perfectly
private (eps = 0, delta = 0) and that is returned exactly.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.optimize import brentq, minimize_scalar

from dpkit.validate import ParameterError, check_positive, check_probability

# log(alpha - 1) grid: alpha from 1 + e^-30 to 1 + e^60 covers rho from ~1e-40 to ~1e20.
_T_GRID = np.linspace(-30.0, 60.0, 1801)


def pure_to_zcdp(epsilon: float) -> float:
    """An epsilon-DP mechanism is (epsilon^2 / 2)-zCDP (Bun & Steinke 2016, Prop. 1.4)."""
    epsilon = check_positive("epsilon", epsilon, allow_zero=True)
    return 0.5 * epsilon * epsilon


def bounded_range_to_zcdp(epsilon: float) -> float:
    """An epsilon-bounded-range mechanism (e.g. the exponential mechanism with
    weights exp(epsilon * u / (2 sensitivity))) is (epsilon^2 / 8)-zCDP
    (Cesar & Rogers 2021)."""
    epsilon = check_positive("epsilon", epsilon, allow_zero=True)
    return 0.125 * epsilon * epsilon


def compose(*rhos: float) -> float:
    """Sequential composition: running rho_1-, ..., rho_k-zCDP mechanisms is (sum rho_i)-zCDP."""
    return float(sum(check_positive(f"rhos[{i}]", r, allow_zero=True) for i, r in enumerate(rhos)))


def _log_terms(t: np.ndarray):
    """For alpha = 1 + e^t: (alpha - 1, log alpha, log(1 - 1/alpha))."""
    am1 = np.exp(t)
    log_alpha = np.logaddexp(0.0, t)
    return am1, log_alpha, t - log_alpha


def _epsilon_objective(t, rho: float, log_inv_delta: float):
    am1, log_alpha, log_frac = _log_terms(np.asarray(t, dtype=float))
    # eps(alpha) = alpha rho + (L + (alpha-1) log(1-1/alpha) - log alpha) / (alpha-1)
    return (1.0 + am1) * rho + log_frac + (log_inv_delta - log_alpha) * np.exp(-np.asarray(t, dtype=float))


def _log_delta_objective(t, rho: float, epsilon: float):
    am1, log_alpha, log_frac = _log_terms(np.asarray(t, dtype=float))
    # log delta(alpha) = (alpha-1)(alpha rho - eps) - log(alpha-1) + alpha log(1-1/alpha)
    return am1 * ((1.0 + am1) * rho - epsilon) - np.asarray(t, dtype=float) + (1.0 + am1) * log_frac


def _minimise(objective) -> tuple[float, float]:
    """Minimum over the t grid, refined by bounded Brent around the best grid point."""
    with np.errstate(over="ignore", invalid="ignore"):
        values = objective(_T_GRID)
    values = np.where(np.isfinite(values), values, np.inf)
    i = int(np.argmin(values))
    lo = _T_GRID[max(i - 1, 0)]
    hi = _T_GRID[min(i + 1, len(_T_GRID) - 1)]
    best_t, best = float(_T_GRID[i]), float(values[i])
    if hi > lo:
        res = minimize_scalar(lambda x: float(objective(x)), bounds=(lo, hi), method="bounded",
                              options={"xatol": 1e-12})
        if res.fun < best:
            best_t, best = float(res.x), float(res.fun)
    return best, best_t


def zcdp_to_epsilon(rho: float, delta: float) -> float:
    """Smallest epsilon such that rho-zCDP implies (epsilon, delta)-DP by the tight
    conversion of Canonne, Kamath & Steinke (2020); never above the Bun-Steinke value."""
    rho = check_positive("rho", rho, allow_zero=True)
    delta = check_probability("delta", delta)
    if rho == 0.0:
        return 0.0
    value, _ = _minimise(lambda t: _epsilon_objective(t, rho, -math.log(delta)))
    return float(min(max(value, 0.0), zcdp_to_epsilon_bun_steinke(rho, delta)))


def optimal_order(rho: float, delta: float) -> float:
    """The Renyi order alpha attaining the tight epsilon (for plots and comparisons)."""
    rho = check_positive("rho", rho)
    delta = check_probability("delta", delta)
    _, t = _minimise(lambda t: _epsilon_objective(t, rho, -math.log(delta)))
    return 1.0 + math.exp(t)


def zcdp_to_epsilon_bun_steinke(rho: float, delta: float) -> float:
    """rho-zCDP implies (rho + 2 sqrt(rho log(1/delta)), delta)-DP (Bun & Steinke 2016)."""
    rho = check_positive("rho", rho, allow_zero=True)
    delta = check_probability("delta", delta)
    return rho + 2.0 * math.sqrt(rho * -math.log(delta))


def zcdp_to_delta(rho: float, epsilon: float) -> float:
    """Smallest delta such that rho-zCDP implies (epsilon, delta)-DP (tight, CKS 2020)."""
    rho = check_positive("rho", rho, allow_zero=True)
    epsilon = check_positive("epsilon", epsilon, allow_zero=True)
    if rho == 0.0:
        return 0.0
    value, _ = _minimise(lambda t: _log_delta_objective(t, rho, epsilon))
    if not value < 0.0:   # log delta >= 0 (or not finite for huge rho): no guarantee below delta = 1
        return 1.0
    return float(math.exp(value))


def epsilon_to_zcdp(epsilon: float, delta: float) -> float:
    """Largest rho such that rho-zCDP implies (epsilon, delta)-DP by the tight conversion.

    Returned value satisfies ``zcdp_to_epsilon(rho, delta) <= epsilon``.
    """
    epsilon = check_positive("epsilon", epsilon)
    delta = check_probability("delta", delta)
    log_inv_delta = -math.log(delta)
    # The Bun-Steinke conversion is looser, so its inverse is a lower bracket.
    lo = (math.sqrt(log_inv_delta + epsilon) - math.sqrt(log_inv_delta)) ** 2
    if zcdp_to_epsilon(lo, delta) > epsilon:  # only from rounding; step down
        lo *= 1 - 1e-9
    hi = max(lo, 1e-300) * 2.0
    while zcdp_to_epsilon(hi, delta) <= epsilon:
        lo, hi = hi, hi * 2.0
        if hi > 1e30:
            raise ParameterError("epsilon", epsilon, "is too large to invert")
    f = lambda log_r: zcdp_to_epsilon(math.exp(log_r), delta) - epsilon  # noqa: E731
    log_r = brentq(f, math.log(lo), math.log(hi), xtol=1e-14, rtol=1e-14, maxiter=300)
    rho = math.exp(log_r)
    while zcdp_to_epsilon(rho, delta) > epsilon:
        rho *= 1 - 1e-12
    return rho
