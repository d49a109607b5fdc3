"""Mechanisms: calibration, contracts, determinism, distributions (fixed seeds, stated tolerances)."""

import math
import time

import numpy as np
import pytest
from scipy import stats

from dpkit.privacy import (AboveThreshold, Exponential, Gaussian, Laplace, NoisyTopK, analytic_sigma,
                           classical_sigma, gaussian_delta, gumbel_max_sample, softmax_sampling_epsilon)
from dpkit.validate import ParameterError


def rng(seed=0):
    return np.random.default_rng(seed)


def test_laplace_calibration_both_ways():
    a = Laplace(2.0, epsilon=0.5)
    b = Laplace(2.0, scale=4.0)
    assert a.scale == 4.0 and b.epsilon == 0.5
    assert a.contract.epsilon == 0.5 and a.contract.measure == "pure" and a.contract.sensitivity == 2.0
    with pytest.raises(ParameterError, match="epsilon"):
        Laplace(1.0)
    with pytest.raises(ParameterError, match="epsilon"):
        Laplace(1.0, epsilon=1.0, scale=1.0)
    with pytest.raises(ParameterError, match="sensitivity"):
        Laplace(0.0, epsilon=1.0)
    with pytest.raises(ParameterError, match="neighbouring"):
        Laplace(1.0, epsilon=1.0, neighbouring="swap")


def test_laplace_release_is_vectorised_seeded_and_discrete_laplace_distributed():
    mech = Laplace(1.0, epsilon=0.5)
    start = time.perf_counter()
    out = mech.release(np.array([3.0]), rng(1), size=100_000)
    assert time.perf_counter() - start < 2.0
    assert out.shape == (100_000, 1)
    np.testing.assert_array_equal(out, mech.release(np.array([3.0]), rng(1), size=100_000))
    noise = (out[:, 0] - 3.0).astype(int)
    support = np.arange(-15, 16)
    pmf = np.exp(-np.abs(support) / 2.0) * np.tanh(1 / 4.0)     # discrete Laplace(2): (1-e^-1/2)/(1+e^-1/2) e^-|k|/2
    observed = np.array([np.sum(noise == k) for k in support] + [np.sum(np.abs(noise) > 15)])
    expected = np.append(pmf, 1 - pmf.sum()) * noise.size
    assert stats.chisquare(observed, expected).pvalue > 1e-3
    real = Laplace(1.0, epsilon=0.5, dimension=1, grid=0.25).release(np.array([0.3]), rng(2), size=1000)
    assert np.all(real * 4 == np.rint(real * 4)) and real.std() == pytest.approx(2.5 * math.sqrt(2), rel=0.15)  # (1 + 0.25) / 0.5
    with pytest.raises(ParameterError, match="grid"):
        mech.release([0.5], rng())
    with pytest.raises(ParameterError, match="rng"):
        mech.release([1.0], 0)
    with pytest.raises(ParameterError, match="values"):
        mech.release([np.nan], rng())


def test_laplace_privacy_loss_bounded_by_epsilon():
    mech = Laplace(1.0, epsilon=0.7)
    outputs = np.linspace(-20, 20, 2001)[:, None]
    loss = mech.log_density_ratio(outputs, np.array([0.0]), np.array([1.0]))
    assert np.max(np.abs(loss)) == pytest.approx(0.7, rel=1e-12)


def test_appendix_e_gaussian_sigmas():
    # Amin et al., Appendix E: s=250, tau=2, c=10, delta=1e-6; eps = 2c/(s tau), sensitivity 1/s.
    s, tau, c, delta = 250, 2.0, 10.0, 1e-6
    eps = 2 * c / (s * tau)
    assert classical_sigma(1 / s, eps, delta) == pytest.approx(tau * math.sqrt(math.log(1.25 / delta)) / (math.sqrt(2) * c))
    assert round(classical_sigma(1 / s, eps, delta), 2) == 0.53
    assert round(analytic_sigma(1 / s, eps, delta), 2) == 0.34
    # equal zCDP: c^2/(2 s^2 tau^2) = 1/(2 s^2 sigma^2) -> sigma = tau / c
    assert Gaussian(1 / s, sigma=tau / c).rho == pytest.approx(Exponential.from_temperature(c / s, tau).contract.rho())


def test_analytic_sigma_is_exact_and_smaller_than_classical():
    for eps, delta in [(0.1, 1e-5), (1.0, 1e-6), (5.0, 1e-9)]:
        sigma = analytic_sigma(1.0, eps, delta)
        assert gaussian_delta(sigma, 1.0, eps) <= delta
        assert gaussian_delta(sigma * (1 - 1e-6), 1.0, eps) > delta
        if eps < 1:
            assert sigma < classical_sigma(1.0, eps, delta)


def test_gaussian_contract_and_release():
    g = Gaussian(2.0, sigma=4.0)
    assert g.contract.measure == "zcdp" and g.contract.rho() == pytest.approx(0.125)
    g2 = Gaussian(1.0, epsilon=1.0, delta=1e-6, calibration="classical")
    assert g2.contract.epsilon == 1.0 and g2.contract.delta == 1e-6
    out = g.release(np.zeros(3), rng(2), size=(50_000,))
    assert out.shape == (50_000, 3) and abs(out.std() - 4.0) < 0.05
    with pytest.raises(ParameterError, match="calibration"):
        Gaussian(1.0, epsilon=1.0, delta=1e-6, calibration="fast")
    with pytest.raises(ParameterError, match="delta"):
        Gaussian(1.0, epsilon=1.0)
    with pytest.raises(ParameterError, match="sigma"):
        Gaussian(1.0, sigma=1.0, epsilon=1.0, delta=1e-6)


def test_gumbel_max_matches_softmax():
    logits = np.array([2.0, 0.0, -1.0, 1000.0 - 998.5])
    draws = gumbel_max_sample(logits, rng(3), size=200_000)
    freq = np.bincount(draws, minlength=4) / draws.size
    expected = np.exp(logits - logits.max()) / np.exp(logits - logits.max()).sum()
    np.testing.assert_allclose(freq, expected, atol=0.005)
    # huge scores do not overflow
    big = gumbel_max_sample(np.array([1e308, -1e308]), rng(4), size=10)
    assert (big == 0).all()
    # -inf excludes
    assert (gumbel_max_sample(np.array([0.0, -np.inf]), rng(5), size=100) == 0).all()
    with pytest.raises(ParameterError, match="log_weights"):
        gumbel_max_sample(np.array([np.nan, 1.0]), rng())


def test_exponential_is_temperature_sampling():
    scores = np.array([[0.3, -1.2, 2.0], [5.0, 5.0, 4.0]])
    tau = 0.7
    mech = Exponential.from_temperature(0.1, tau)
    assert mech.epsilon == pytest.approx(softmax_sampling_epsilon(0.1 + mech.grid, tau)) == pytest.approx(0.2 / tau)
    assert mech.scale == pytest.approx(tau, rel=1e-15) and mech.contract.sensitivity == 0.1 + mech.grid
    quantized = np.rint(scores / mech.grid) * mech.grid
    assert np.max(np.abs(quantized - scores)) <= mech.grid / 2
    softmax = np.exp(quantized / tau) / np.exp(quantized / tau).sum(axis=-1, keepdims=True)
    np.testing.assert_allclose(np.exp(mech.log_probabilities(scores)), softmax, rtol=1e-12)
    draws = mech.sample(scores, rng(6), size=100_000)
    assert draws.shape == (100_000, 2)
    np.testing.assert_allclose(np.bincount(draws[:, 0], minlength=3) / 1e5, softmax[0], atol=0.006)
    assert mech.contract.measure == "bounded-range"
    assert mech.contract.rho() == pytest.approx(mech.epsilon ** 2 / 8)


def test_exponential_loss_bounded_on_worst_case_neighbours():
    eps = 0.9
    mech = Exponential(1.0, eps)
    scores = rng(7).normal(size=(500, 6))
    shift = rng(8).uniform(-1, 1, size=(500, 6))
    loss = mech.log_probabilities(scores) - mech.log_probabilities(scores + shift)
    assert np.max(np.abs(loss)) <= eps + 1e-12
    assert np.max(loss.max(-1) - loss.min(-1)) <= eps + 1e-12  # bounded range
    mono = Exponential(1.0, eps, monotone=True)
    loss = mono.log_probabilities(scores) - mono.log_probabilities(scores + np.abs(shift))
    assert np.max(np.abs(loss)) <= eps + 1e-12


def test_noisy_top_k():
    counts = np.array([100.0, 0.0, 50.0, 75.0, 1.0])
    mech = NoisyTopK(1.0, 50.0, k=3)
    picks = mech.select(counts, rng(9), size=1000)
    assert picks.shape == (1000, 3)
    assert (picks[:, 0] == 0).mean() > 0.95 and set(np.unique(picks)) <= set(range(5))
    assert all(len(set(row)) == 3 for row in picks[:50])
    assert mech.contract.rho() == pytest.approx(50.0 ** 2 / 24)
    # k=1 is the exponential mechanism: frequencies match its softmax
    one = NoisyTopK(1.0, 2.0, k=1)
    small = np.array([1.0, 0.0, 2.0])
    draws = one.select(small, rng(10), size=100_000)[:, 0]
    expected = np.exp(Exponential(1.0, 2.0).log_probabilities(small))
    np.testing.assert_allclose(np.bincount(draws, minlength=3) / 1e5, expected, atol=0.006)
    with pytest.raises(ParameterError, match="counts"):
        mech.select(np.array([1.0, 2.0]), rng())
    with pytest.raises(ParameterError, match="k"):
        NoisyTopK(1.0, 1.0, k=0)


def test_above_threshold():
    mech = AboveThreshold(threshold=0.5, sigma=0.01, sensitivity=1 / 250)
    assert mech.epsilon == pytest.approx(2 / (250 * 0.01))
    assert mech.contract.rho() == pytest.approx(2 / (250 * 0.01) ** 2)
    idx = mech.run(np.array([0.1, 0.2, 0.9, 0.95]), rng(11), size=1000)
    assert (idx == 2).mean() > 0.99
    never = mech.run(np.array([0.0, 0.0]), rng(12), size=100)
    assert (never == -1).all()
    session = mech.session(rng(13))
    assert not session.test(0.1) and session.test(0.9) and session.halted
    with pytest.raises(ParameterError, match="session"):
        session.test(0.9)
    a = AboveThreshold(0.5, 0.3).run(rng(14).uniform(size=(20, 8)), rng(15), size=3)
    b = AboveThreshold(0.5, 0.3).run(rng(14).uniform(size=(20, 8)), rng(15), size=3)
    np.testing.assert_array_equal(a, b)
    assert a.shape == (3, 20)


def test_classical_calibration_refuses_where_it_is_false():
    # sigma = sqrt(2 log(1.25/delta))/epsilon does not give (epsilon, delta)-DP at epsilon = 10
    assert gaussian_delta(classical_sigma(1.0, 10.0, 1e-6), 1.0, 10.0) > 1e-6
    with pytest.raises(ParameterError, match="analytic"):
        Gaussian(1.0, epsilon=10.0, delta=1e-6, calibration="classical")
    assert Gaussian(1.0, epsilon=10.0, delta=1e-6).delta_at(10.0) <= 1e-6
