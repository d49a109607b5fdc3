"""Clopper-Pearson bounds and the epsilon lower bound they imply."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from dpkit.audit.mechanism.stats import clopper_pearson_lower, clopper_pearson_upper, epsilon_lower_bound
from dpkit.validate import ParameterError


@pytest.mark.parametrize("k,n", [(0, 10), (3, 10), (10, 10), (17, 1000), (500, 1000)])
def test_matches_scipy_exact_interval(k, n):
    # a one-sided bound at level alpha is an endpoint of the two-sided interval at 1 - 2 alpha
    ci = stats.binomtest(k, n).proportion_ci(confidence_level=0.9, method="exact")
    assert clopper_pearson_lower(k, n, 0.05) == pytest.approx(ci.low, abs=1e-12)
    assert clopper_pearson_upper(k, n, 0.05) == pytest.approx(ci.high, abs=1e-12)


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 5000), frac=st.floats(0, 1), alpha=st.floats(0.001, 0.4))
def test_bounds_bracket_the_frequency(n, frac, alpha):
    k = int(round(frac * n))
    low, up = clopper_pearson_lower(k, n, alpha), clopper_pearson_upper(k, n, alpha)
    assert 0.0 <= low <= k / n <= up <= 1.0


def test_coverage_of_lower_bound():
    # the one-sided lower bound covers p at least 1 - alpha of the time
    rng = np.random.default_rng(0)
    p, n = 0.03, 400
    k = rng.binomial(n, p, size=4000)
    covered = np.mean(clopper_pearson_lower(k, n, 0.05) <= p)
    assert covered >= 0.95


def test_epsilon_lower_bound_values():
    assert epsilon_lower_bound(500, 1000, 500, 1000) == 0.0  # no evidence
    assert epsilon_lower_bound(0, 1000, 10, 1000) == 0.0
    eps = epsilon_lower_bound(800, 1000, 100, 1000, confidence=0.95)
    assert 0 < eps < math.log(8)
    # more confidence, smaller bound; delta lowers it too
    assert epsilon_lower_bound(800, 1000, 100, 1000, confidence=0.99) < eps
    assert epsilon_lower_bound(800, 1000, 100, 1000, delta=0.05) < eps
    # vectorized
    out = epsilon_lower_bound(np.array([800, 100]), 1000, np.array([100, 100]), 1000)
    assert out.shape == (2,) and out[1] == 0.0 and out[0] == pytest.approx(eps)


def test_errors_name_the_parameter():
    with pytest.raises(ParameterError, match="confidence"):
        epsilon_lower_bound(1, 10, 1, 10, confidence=1.0)
    with pytest.raises(ParameterError, match="delta"):
        epsilon_lower_bound(1, 10, 1, 10, delta=-0.1)
    with pytest.raises(ParameterError, match="k="):
        epsilon_lower_bound(11, 10, 1, 10)
    with pytest.raises(ParameterError, match="integers"):
        clopper_pearson_lower(1.5, 10, 0.05)
    with pytest.raises(ParameterError, match="alpha"):
        clopper_pearson_upper(1, 10, 0.0)


@settings(max_examples=60, deadline=None)
@given(n=st.integers(10, 3000), a=st.floats(0, 1), b=st.floats(0, 1), step=st.integers(1, 5))
def test_bound_grows_with_evidence(n, a, b, step):
    """More hits on the numerator side, or fewer on the denominator side, never lower the bound."""
    k1, k0 = int(a * n), int(b * n)
    base = epsilon_lower_bound(k1, n, k0, n)
    assert epsilon_lower_bound(min(n, k1 + step), n, k0, n) >= base - 1e-12
    assert epsilon_lower_bound(k1, n, max(0, k0 - step), n) >= base - 1e-12
    if k0 > 0 and k1 > 0:  # a lower confidence bound never exceeds the point estimate
        assert base <= max(0.0, math.log(k1 / k0)) + 1e-12
