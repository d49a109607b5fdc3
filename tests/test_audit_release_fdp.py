"""The f-DP one-run bound and Gaussian DP: cross-checked by a second route, valid on exactly-private generators."""

import math

import mpmath
import numpy as np
import pytest
from scipy import integrate, stats

from dpkit.audit.release import fdp
from dpkit.audit.release.analysis import analyse, bound, randomized_response_scores
from dpkit.audit.release.one_run import epsilon_lower_bound
from dpkit.validate import ParameterError


# ---- a second route: the trade-off curve itself, its blow-up inverted numerically, no early stop, 40 digits ----

def tradeoff_dp(eps, delta):
    """f(a) of (eps, delta)-DP (Kairouz et al.; Dong, Roth and Su, Prop. 2.5)."""
    e = mpmath.e ** eps
    return lambda a: max(mpmath.mpf(0), 1 - delta - e * a, (1 - delta - a) / e)


def tradeoff_gdp(mu):
    """f(a) = Phi(Phi^-1(1 - a) - mu) (in double precision: the 40-digit normal quantile is slow)."""
    return lambda a: mpmath.mpf(float(stats.norm.cdf(stats.norm.ppf(1 - float(a)) - mu))) if 0 < a < 1 else (
        mpmath.mpf(1) if a <= 0 else mpmath.mpf(0))


def least_out_probability(f, x):
    """The smallest a with 1 - f(a) >= x (bisection on the non-decreasing blow-up a -> 1 - f(a))."""
    lo, hi = mpmath.mpf(0), mpmath.mpf(1)
    if 1 - f(lo) >= x:
        return lo
    for _ in range(60):
        mid = (lo + hi) / 2
        if 1 - f(mid) >= x:
            hi = mid
        else:
            lo = mid
    return hi


def rejects_second_route(m, k, c, alpha, f):
    mpmath.mp.dps = 40
    r = [mpmath.mpf(0)] * (c + 1)
    h = [mpmath.mpf(0)] * (c + 1)
    r[c], h[c] = mpmath.mpf(alpha) * c / m, mpmath.mpf(alpha) * (k - c) / m
    for i in range(c - 1, -1, -1):
        h[i] = max(h[i + 1], least_out_probability(f, r[i + 1]))
        r[i] = min(r[i + 1] + mpmath.mpf(i) / (k - i) * (h[i] - h[i + 1]), 1)
    return r[0] + h[0] > mpmath.mpf(k) / m


CASES = [(200, 200, 170, 0.05), (200, 100, 95, 0.05), (500, 64, 60, 0.01), (1000, 1000, 950, 0.05),
         (300, 40, 40, 0.05), (100, 16, 12, 0.05)]


@pytest.mark.parametrize("m,k,c,alpha", [(100, 100, 85, 0.05), (200, 60, 57, 0.05), (500, 64, 60, 0.01),
                                         (300, 40, 40, 0.05), (100, 16, 12, 0.05)])
def test_gdp_bound_agrees_with_the_second_route(m, k, c, alpha):
    mu = fdp.gdp_mu_lower_bound(m, k, c, alpha, tolerance=1e-7)
    if mu == 0:
        assert not rejects_second_route(m, k, c, alpha, tradeoff_gdp(0.01))
        return
    assert rejects_second_route(m, k, c, alpha, tradeoff_gdp(mu * (1 - 1e-3)))
    assert not rejects_second_route(m, k, c, alpha, tradeoff_gdp(mu * (1 + 1e-3) + 1e-6))


@pytest.mark.parametrize("m,k,c,alpha", CASES)
@pytest.mark.parametrize("delta", [0.0, 1e-5])
def test_dp_curve_bound_agrees_with_the_second_route(m, k, c, alpha, delta):
    eps = fdp.epsilon_lower_bound_fdp(m, k, c, alpha, delta, tolerance=1e-7)
    assert eps > 0
    assert rejects_second_route(m, k, c, alpha, tradeoff_dp(eps * (1 - 1e-3), delta))
    assert not rejects_second_route(m, k, c, alpha, tradeoff_dp(eps * (1 + 1e-3), delta))


@pytest.mark.parametrize("m,q", [(1000, 0.9), (1000, 0.95), (5000, 0.8)])
def test_pure_dp_curve_is_close_to_the_binomial_bound_when_every_canary_is_guessed(m, q):
    # randomized response meets the binomial analysis exactly; the f-DP test on the pure-DP curve may only
    # lose a little there (never gain more than the bisection's tolerance)
    c = int(q * m)
    binomial, curve = epsilon_lower_bound(m, m, c, 0.05), fdp.epsilon_lower_bound_fdp(m, m, c, 0.05)
    assert binomial - 0.05 < curve <= binomial + 1e-4


@pytest.mark.parametrize("mu,eps", [(0.5, 0.0), (1.0, 1.0), (2.0, 3.0), (3.0, 8.0)])
def test_gdp_delta_matches_the_integral_of_the_densities(mu, eps):
    # delta(eps) = integral of max(0, p(x) - e^eps q(x)) for N(mu, 1) against N(0, 1)
    gap = lambda x: max(0.0, stats.norm.pdf(x, mu) - math.exp(eps) * stats.norm.pdf(x))  # noqa: E731
    crossing = eps / mu + mu / 2
    value = integrate.quad(gap, crossing, crossing + 40, epsabs=1e-14, limit=200)[0]
    assert fdp.gdp_delta(mu, eps) == pytest.approx(value, rel=1e-6, abs=1e-13)
    if eps > 0:
        assert fdp.gdp_epsilon(mu, fdp.gdp_delta(mu, eps)) == pytest.approx(eps, rel=1e-6)


@pytest.mark.parametrize("eps", [0.5, 1.0, 3.0, 8.0])
def test_randomized_response_is_mu_gdp_exactly_at_the_stated_mu(eps):
    mu = fdp.gdp_mu_of_randomized_response(eps)
    a = np.linspace(1e-6, 1 - 1e-6, 20001)
    rr = np.maximum.reduce([np.zeros_like(a), 1 - math.exp(eps) * a, math.exp(-eps) * (1 - a)])
    gauss = lambda mu_: stats.norm.cdf(stats.norm.ppf(1 - a) - mu_)  # noqa: E731
    assert np.all(gauss(mu) <= rr + 1e-12)                  # mu-GDP holds
    assert np.any(gauss(mu * 0.99) > rr)                      # and no smaller mu does


def test_bad_counts_name_the_parameter():
    with pytest.raises(ParameterError, match="guesses"):
        fdp.gdp_mu_lower_bound(10, 5, 6, 0.05)
    with pytest.raises(ParameterError, match="alpha"):
        fdp.epsilon_lower_bound_fdp(10, 5, 5, 1.5)
    with pytest.raises(ParameterError, match="delta"):
        fdp.gdp_epsilon(1.0, 0.0)


def _gaussian_scores(included, mu, rng):
    """An exactly mu-GDP score per canary: N(mu, 1) when in, N(0, 1) when out."""
    return rng.normal(size=len(included)) + mu * included


def test_gdp_bound_is_valid_on_a_gaussian_mechanism_and_beats_the_binomial_route():
    # 100 runs of an exactly 2-GDP generator, 2,000 canaries: mu is over-stated in at most 5% of them
    mu, runs, over, gdp_eps, snj_eps = 2.0, 100, 0, [], []
    for run in range(runs):
        rng = np.random.default_rng(run)
        included = rng.random(2000) < 0.5
        found = analyse({"gauss": _gaussian_scores(included, mu, rng)}, included, rng.random(2000),
                        claimed_delta=1e-5, analyses=("steinke", "gdp"))
        over += found["gdp"].bound > mu
        gdp_eps.append(fdp.gdp_epsilon(found["gdp"].bound, 1e-5))
        snj_eps.append(found["steinke"].bound)
    assert over <= 0.05 * runs
    # on a Gaussian mechanism the Gaussian curve gives the larger epsilon at delta = 1e-5 (truth: 9.998)
    assert np.median(gdp_eps) > np.median(snj_eps) and np.median(gdp_eps) < fdp.gdp_epsilon(mu, 1e-5)


def test_gdp_bound_on_randomized_response_is_valid_but_far_below_its_mu():
    # randomized response at eps = 3 is 3.34-GDP and no less; one run refutes much smaller mu only
    truth = fdp.gdp_mu_of_randomized_response(3.0)
    rng = np.random.default_rng(7)
    included = rng.random(1000) < 0.5
    found = analyse({"rr": randomized_response_scores(included, 3.0, rng)}, included, rng.random(1000))
    assert 0 < found["gdp"].bound < 0.5 * truth
    assert bound("gdp", 1000, 1000, 0, 0.05) == 0.0
