"""zCDP conversions: identities, edge cases, inverse, tightness against Bun-Steinke."""

import math

import numpy as np
import pytest

from dpkit.privacy.zcdp import (bounded_range_to_zcdp, compose, epsilon_to_zcdp, optimal_order, pure_to_zcdp,
                                zcdp_to_delta, zcdp_to_epsilon, zcdp_to_epsilon_bun_steinke)
from dpkit.validate import ParameterError


def test_pure_and_bounded_range_costs():
    assert pure_to_zcdp(2.0) == 2.0
    assert bounded_range_to_zcdp(2.0) == 0.5
    assert compose(0.1, 0.2, 0.3) == pytest.approx(0.6)


def test_bun_steinke_formula():
    assert zcdp_to_epsilon_bun_steinke(1.0, math.exp(-4)) == pytest.approx(1 + 2 * 2)


def _brute_force_epsilon(rho, delta):
    alphas = 1 + np.logspace(-6, 9, 400_001)
    eps = alphas * rho + (math.log(1 / delta) + (alphas - 1) * np.log1p(-1 / alphas) - np.log(alphas)) / (alphas - 1)
    return max(float(eps.min()), 0.0)


@pytest.mark.parametrize("rho", [1e-8, 1e-4, 0.001, 0.1, 1.0, 10.0, 1e3])
@pytest.mark.parametrize("delta", [1e-12, 1e-6, 0.01])
def test_tight_epsilon_matches_brute_force_and_beats_bun_steinke(rho, delta):
    eps = zcdp_to_epsilon(rho, delta)
    brute = _brute_force_epsilon(rho, delta)
    assert eps <= brute + 1e-9 * max(1.0, brute)
    assert eps >= brute - 1e-6 * max(1.0, brute)
    assert eps <= zcdp_to_epsilon_bun_steinke(rho, delta)


def test_delta_and_epsilon_are_inverse():
    for rho in [1e-3, 0.1, 1.0, 30.0]:
        for delta in [1e-10, 1e-6, 1e-2]:
            eps = zcdp_to_epsilon(rho, delta)
            if eps > 0:
                assert zcdp_to_delta(rho, eps) == pytest.approx(delta, rel=1e-6)


def test_edges():
    assert zcdp_to_epsilon(0.0, 1e-6) == 0.0
    assert zcdp_to_delta(0.0, 0.0) == 0.0
    assert 0 < zcdp_to_delta(1.0, 0.0) <= 1.0
    # tiny rho: (0, delta) already holds; the conversion never goes negative
    assert zcdp_to_epsilon(1e-14, 1e-6) == 0.0
    assert zcdp_to_delta(1e-14, 0.0) < 1e-6
    # huge rho: finite and just below Bun-Steinke
    big = zcdp_to_epsilon(1e8, 1e-6)
    assert math.isfinite(big) and 1e8 < big <= zcdp_to_epsilon_bun_steinke(1e8, 1e-6)
    assert 1 < optimal_order(0.1, 1e-6) < 100


def test_inverse_is_largest_rho():
    for eps in [0.01, 0.5, 1.0, 4.0, 50.0]:
        for delta in [1e-9, 1e-6]:
            rho = epsilon_to_zcdp(eps, delta)
            assert zcdp_to_epsilon(rho, delta) <= eps
            assert zcdp_to_epsilon(rho * (1 + 1e-8), delta) > eps - 1e-12 * eps


@pytest.mark.parametrize("call, name", [
    (lambda: zcdp_to_epsilon(-1.0, 1e-6), "rho"),
    (lambda: zcdp_to_epsilon(1.0, 0.0), "delta"),
    (lambda: zcdp_to_epsilon(1.0, 1.0), "delta"),
    (lambda: zcdp_to_epsilon(math.inf, 1e-6), "rho"),
    (lambda: zcdp_to_delta(1.0, -0.5), "epsilon"),
    (lambda: epsilon_to_zcdp(0.0, 1e-6), "epsilon"),
    (lambda: epsilon_to_zcdp(1.0, 2.0), "delta"),
    (lambda: pure_to_zcdp("1"), "epsilon"),
    (lambda: zcdp_to_epsilon_bun_steinke(1.0, -1e-6), "delta"),
])
def test_bad_arguments(call, name):
    with pytest.raises(ParameterError) as info:
        call()
    assert info.value.name == name


@pytest.mark.parametrize("rho", [1e10, 1e49, 1e50, 1e100, 1e300])
def test_zcdp_to_delta_saturates_at_one_for_huge_rho(rho):
    # the review: rho >= 1e50 raised OverflowError (math.exp of a huge log delta); the reference gives 1
    assert zcdp_to_delta(rho, 1.0) == 1.0
    assert zcdp_to_delta(rho, 1e6) == 1.0
