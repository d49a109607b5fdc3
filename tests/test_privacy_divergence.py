"""Exact privacy losses, Rényi divergences, post-processing, group privacy and local estimates.

Each closed form is checked against an independent computation (a sum over a fine grid of
outputs, or an enumeration of every output), and each inequality on random distributions.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpkit.methods.labels import randomized_response
from dpkit.privacy.divergence import (deterministic_kernel, gaussian_renyi, group_guarantee, laplace_renyi,
                                      max_privacy_loss, post_process, privacy_loss, renyi_divergence)
from dpkit.privacy.local import (central_fraction_std, debiased_fraction, discrete_laplace_variance,
                                 keep_probability, local_fraction_std, report_distribution)
from dpkit.validate import ParameterError


@pytest.mark.parametrize("alpha", [1.5, 2.0, 7.0, 25.0])
@pytest.mark.parametrize("shift, scale", [(1.0, 1.0), (2.0, 0.5), (0.3, 3.0)])
def test_laplace_renyi_matches_a_sum_over_a_grid(alpha, shift, scale):
    x = np.linspace(-60 * scale, 60 * scale + shift, 600_001)
    dx = x[1] - x[0]
    log_p, log_q = -np.abs(x) / scale, -np.abs(x - shift) / scale
    terms = alpha * log_p + (1 - alpha) * log_q - math.log(2 * scale)
    numeric = (np.log(np.sum(np.exp(terms)) * dx)) / (alpha - 1)
    assert laplace_renyi(alpha, shift, scale) == pytest.approx(numeric, abs=1e-5)
    # below both the pure level and the zCDP line of an (shift/scale)-DP mechanism
    eps = shift / scale
    assert laplace_renyi(alpha, shift, scale) <= min(eps, eps ** 2 * alpha / 2) + 1e-12


def test_gaussian_renyi_matches_a_sum_over_a_grid():
    alpha, shift, sigma = 3.0, 1.5, 2.0
    x = np.linspace(-40, 40, 400_001)
    dx = x[1] - x[0]
    log_p = -x ** 2 / (2 * sigma ** 2) - math.log(sigma * math.sqrt(2 * math.pi))
    log_q = -(x - shift) ** 2 / (2 * sigma ** 2) - math.log(sigma * math.sqrt(2 * math.pi))
    numeric = np.log(np.sum(np.exp(alpha * log_p + (1 - alpha) * log_q)) * dx) / (alpha - 1)
    assert gaussian_renyi(alpha, shift, sigma) == pytest.approx(numeric, rel=1e-6)


def test_renyi_tends_to_the_max_loss_and_kl_at_the_ends():
    p, q = np.array([0.5, 0.3, 0.2]), np.array([0.2, 0.5, 0.3])
    assert renyi_divergence(p, q, 1e6) == pytest.approx(renyi_divergence(p, q, math.inf), abs=1e-5)
    kl = float(np.sum(p * np.log(p / q)))
    assert renyi_divergence(p, q, 1 + 1e-7) == pytest.approx(kl, abs=1e-5)
    assert renyi_divergence(p, q, math.inf) == pytest.approx(np.max(np.log(p / q)))


def test_disjoint_supports_lose_infinitely():
    p, q = np.array([1.0, 0.0]), np.array([0.0, 1.0])
    assert max_privacy_loss(p, q) == math.inf and renyi_divergence(p, q, 2) == math.inf
    assert np.isposinf(privacy_loss(p, q)[0]) and np.isneginf(privacy_loss(p, q)[1])


def test_post_processing_never_raises_loss_or_divergence():
    rng = np.random.default_rng(0)
    for _ in range(200):
        p, q = rng.dirichlet(np.ones(6)), rng.dirichlet(np.ones(6))
        kernel = rng.dirichlet(np.ones(4) * rng.uniform(0.1, 3), size=6)
        for alpha in (1.5, 4.0, math.inf):
            assert renyi_divergence(post_process(p, kernel), post_process(q, kernel), alpha) \
                <= renyi_divergence(p, q, alpha) + 1e-12
        assert max_privacy_loss(post_process(p, kernel), post_process(q, kernel)) <= max_privacy_loss(p, q) + 1e-12
    merged = deterministic_kernel([0, 0, 1, 1, 2, 2], 3)
    assert post_process(np.full(6, 1 / 6), merged) == pytest.approx(np.full(3, 1 / 3))


def test_randomized_response_reports_lose_exactly_epsilon_per_changed_record():
    for k in range(1, 5):
        bits = np.zeros(5, int)
        flipped = bits.copy()
        flipped[:k] = 1
        loss = max_privacy_loss(report_distribution(bits, 0.7), report_distribution(flipped, 0.7))
        assert loss == pytest.approx(0.7 * k) == group_guarantee(k, epsilon=0.7)["epsilon"]
    assert report_distribution([1, 0, 1], 1.0).sum() == pytest.approx(1.0)


def test_group_guarantee_forms():
    assert group_guarantee(3, epsilon=1.0, delta=1e-6) == {"epsilon": 3.0, "delta": pytest.approx(3 * math.e ** 2 * 1e-6)}
    assert group_guarantee(3, rho=0.5)["rho"] == pytest.approx(gaussian_renyi(2.0, 3, 1.0) / 2.0)


def test_local_estimate_is_unbiased_and_its_spread_matches_the_formula():
    rng = np.random.default_rng(1)
    eps, n, trials = 1.0, 400, 300
    truth = (np.arange(n) < 120).astype(int)
    estimates = [debiased_fraction(np.array([randomized_response(int(b), 2, eps, rng) for b in truth]), eps)
                 for _ in range(trials)]
    sd = local_fraction_std(n, eps)
    assert abs(np.mean(estimates) - 0.3) < 4 * sd / math.sqrt(trials)
    assert abs(np.std(estimates) / sd - 1) < 0.15
    assert keep_probability(math.log(3)) == pytest.approx(0.75)


def test_central_spread_is_the_discrete_laplace_variance():
    from dpkit.privacy.exact import discrete_laplace

    rng = np.random.default_rng(2)
    draws = discrete_laplace(1.5, rng, size=200_000)
    assert draws.var() == pytest.approx(discrete_laplace_variance(1.5), rel=0.03)
    assert central_fraction_std(100, 1 / 1.5) == pytest.approx(math.sqrt(discrete_laplace_variance(1.5)) / 100)


@pytest.mark.parametrize("call", [
    lambda: max_privacy_loss([0.5, 0.6], [0.5, 0.5]),
    lambda: max_privacy_loss([0.5, 0.5], [1.0]),
    lambda: renyi_divergence([0.5, 0.5], [0.5, 0.5], 1.0),
    lambda: post_process([0.5, 0.5], [[1.0, 0.0]]),
    lambda: debiased_fraction([0, 2], 1.0),
    lambda: report_distribution([0, 1, 2], 1.0),
    lambda: group_guarantee(0, epsilon=1.0),
    lambda: laplace_renyi(0.5, 1.0, 1.0),
])
def test_bad_input_names_the_parameter(call):
    with pytest.raises(ParameterError):
        call()
