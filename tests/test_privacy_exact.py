"""Exact samplers: distributions (chi-square, fixed seeds, p > 1e-4), properties (hypothesis), error bounds,
and the float-leak checks of the review run on the release-mode mechanisms."""

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy import stats

from dpkit.privacy import (Exponential, Gaussian, Laplace, NoisyTopK, TextbookGaussian, TextbookLaplace,
                           bernoulli_exp, discrete_gaussian, discrete_laplace, exact_exponential_sample,
                           unreachable_fraction)
from dpkit.privacy.exact import _error_bound, _eta, default_grid, quantize, rational_at_least
from dpkit.validate import ParameterError

FAST = settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
P_MIN = 1e-4   # every distribution test below passes at its fixed seed; a wrong sampler fails by far


def chi_square(draws: np.ndarray, support: np.ndarray, pmf: np.ndarray) -> float:
    """p-value of a chi-square test of integer draws against pmf on support (the rest lumped in one cell)."""
    observed = np.array([np.sum(draws == k) for k in support] + [np.sum(~np.isin(draws, support))])
    expected = np.append(pmf, max(1.0 - pmf.sum(), 0.0)) * draws.size
    keep = expected > 5
    observed = np.append(observed[keep], observed[~keep].sum())
    expected = np.append(expected[keep], expected[~keep].sum())
    if expected[-1] == 0:
        observed, expected = observed[:-1], expected[:-1]
    return float(stats.chisquare(observed, expected * observed.sum() / expected.sum()).pvalue)


@pytest.mark.parametrize("x", [0, Fraction(1, 3), 1, Fraction(5, 2), 4.75])
def test_bernoulli_exp_frequency(x):
    rng = np.random.default_rng(11)
    n = 4000
    hits = sum(bernoulli_exp(x, rng) for _ in range(n))
    p = math.exp(-float(x))
    assert abs(hits - n * p) <= 4.5 * math.sqrt(n * p * (1 - p)) + 1
    with pytest.raises(ParameterError, match="x"):
        bernoulli_exp(-1, rng)


@pytest.mark.parametrize("scale", [0.3, 1.0, 2.0, 1 / 0.7, 25.0])
def test_discrete_laplace_matches_its_pmf(scale):
    draws = discrete_laplace(scale, np.random.default_rng(1), size=60_000)
    assert draws.dtype == np.int64
    b = float(rational_at_least(scale))
    support = np.arange(-int(12 * b) - 3, int(12 * b) + 4)
    pmf = np.tanh(1 / (2 * b)) * np.exp(-np.abs(support) / b)
    assert chi_square(draws, support, pmf) > P_MIN


@pytest.mark.parametrize("sigma", [0.5, 1.5, 3.0, 40.0])
def test_discrete_gaussian_matches_its_pmf(sigma):
    draws = discrete_gaussian(sigma, np.random.default_rng(2), size=40_000)
    s = float(rational_at_least(sigma))
    support = np.arange(-int(8 * s) - 2, int(8 * s) + 3)
    weights = np.exp(-support.astype(float) ** 2 / (2 * s * s))
    assert chi_square(draws, support, weights / weights.sum()) > P_MIN


def test_discrete_gaussian_large_sigma_is_fast_and_right():
    sigma = 2.0 ** 20
    draws = discrete_gaussian(sigma, np.random.default_rng(3), size=20_000)
    assert stats.kstest(draws / sigma, stats.norm.cdf).pvalue > P_MIN


def test_rational_scales_never_shrink_the_noise():
    for value in (1e-6, 0.7, 1 / 3, 4.0, 1234.5678, 3e12):
        r = rational_at_least(value)
        assert r >= Fraction(value) and float(r) <= value * (1 + 1e-9)
    with pytest.raises(ParameterError, match="value"):
        rational_at_least(1e20)


def test_default_grid_is_a_power_of_two_below_the_target():
    g = default_grid(3.0)
    assert math.frexp(g)[0] == 0.5 and g <= 3.0 * 2 ** -20 < 2 * g


def exact_probabilities(scores, scale, grid):
    q = quantize(np.where(np.isfinite(scores), scores, 0.0), grid)
    logits = np.where(np.isfinite(scores), q * _eta(grid, scale), -np.inf)
    w = np.exp(logits - logits.max())
    return w / w.sum()


@pytest.mark.parametrize("refine", [False, True])
def test_exact_exponential_matches_softmax_of_quantized_scores(refine):
    scores = np.array([0.0, 1.0, 2.0, -np.inf, 0.5, -3.0])
    n = 2_000 if refine else 100_000
    draws = exact_exponential_sample(scores, 0.8, np.random.default_rng(4), 2.0 ** -20, size=n,
                                     _force_refine=refine)
    assert draws.shape == (n,) and not np.any(draws == 3)
    p = exact_probabilities(scores, 0.8, 2.0 ** -20)
    assert chi_square(draws, np.arange(6), p) > P_MIN


def test_exact_exponential_batches_and_coarse_grid():
    scores = np.array([[0.0, 0.24, 0.26], [5.0, -5.0, 0.0]])
    draws = exact_exponential_sample(scores, 1.0, np.random.default_rng(5), grid=0.5, size=(30_000,))
    assert draws.shape == (30_000, 2)
    for row in range(2):
        p = exact_probabilities(scores[row], 1.0, 0.5)
        assert chi_square(draws[:, row], np.arange(3), p) > P_MIN
    # 0.24 rounds to 0 and 0.26 to 0.5: the first two candidates are exactly equally likely
    assert exact_probabilities(scores[0], 1.0, 0.5)[0] == exact_probabilities(scores[0], 1.0, 0.5)[1]


@FAST
@given(scores=st.lists(st.floats(-30, 30), min_size=1, max_size=8), seed=st.integers(0, 2 ** 32 - 1),
       jitter=st.floats(-0.49, 0.49))
def test_output_depends_only_on_the_quantized_scores(scores, seed, jitter):
    """Same seed, scores moved within their grid cells -> the same draws (no float rounding reaches the output)."""
    grid = 2.0 ** -4
    scores = np.array(scores)
    centred = np.rint(scores / grid) * grid
    moved = centred + jitter * grid
    a = exact_exponential_sample(scores, 0.7, np.random.default_rng(seed), grid, size=50)
    b = exact_exponential_sample(moved, 0.7, np.random.default_rng(seed), grid, size=50)
    np.testing.assert_array_equal(a, b)


def test_float_error_bound_holds_against_mpmath():
    mp = pytest.importorskip("mpmath")
    mp.mp.prec = 200
    rng = np.random.default_rng(6)
    for k, spread in ((2_000, 5.0), (500, 60.0)):
        gaps = np.rint(rng.exponential(spread, size=k) / 2.0 ** -20)
        gaps[0] = 0.0
        eta = _eta(2.0 ** -20, 1.3)
        weights = np.exp(-eta * gaps)
        cumulative = np.cumsum(weights)
        bound = _error_bound(k, cumulative[-1])
        exact = mp.mpf(0)
        worst = 0.0
        for i, g in enumerate(gaps):
            exact += mp.exp(-mp.mpf(eta) * int(g))
            worst = max(worst, abs(float(mp.mpf(cumulative[i]) - exact)))
        assert worst <= bound


class Scripted(np.random.Generator):
    """A Generator whose integers() always returns the largest value: U as close to 1 as bits allow."""

    def integers(self, low, high=None, size=None, dtype=np.int64, endpoint=False):
        top = (low if high is None else high) - 1
        return np.full(size, top, dtype=dtype) if size is not None else dtype(top) if callable(dtype) else top


def test_no_truncated_tail_unlike_float_gumbel():
    """A candidate 60 nats below the best has probability e^-60 ~ 1e-26: float Gumbel-max gives it exactly 0
    (its noise is bounded by 36.7), the exact sampler reaches it when U is within 1e-26 of 1."""
    scores = np.array([0.0, -60.0])
    top = exact_exponential_sample(scores, 1.0, Scripted(np.random.PCG64(0)), 2.0 ** -20)
    assert top == 1
    assert np.random.default_rng(0).gumbel(size=10 ** 6).max() < 36.8


def test_noisy_top_k_is_peeling():
    counts = np.array([5.0, 4.0, 0.0, 3.0])
    mech = NoisyTopK(1.0, epsilon=2.0, k=2)
    picks = mech.select(counts, np.random.default_rng(7), size=20_000)
    assert picks.shape == (20_000, 2) and np.all(picks[:, 0] != picks[:, 1])
    first = exact_probabilities(counts, mech.scale, mech.grid)
    assert chi_square(picks[:, 0], np.arange(4), first) > P_MIN
    assert mech.contract.sensitivity == 1.0 + mech.grid


def test_exponential_contract_adds_the_grid():
    mech = Exponential(0.5, 1.0)
    assert mech.contract.sensitivity == 0.5 + mech.grid and mech.scale == pytest.approx(2 * (0.5 + mech.grid))
    assert Exponential(0.5, 1.0, grid=0.25).scale == 1.5


def test_gaussian_release_mode_is_discrete_on_the_grid():
    g = Gaussian(1.0, sigma=2.0, dimension=4)
    out = g.release(np.array([0.1, 0.2, 0.3, 0.4]), np.random.default_rng(8), size=5000)
    assert np.all(out / g.grid == np.rint(out / g.grid))
    assert g.contract.sensitivity == pytest.approx(1.0 + 2 * g.grid)
    assert g.contract.rho() == pytest.approx((1.0 + 2 * g.grid) ** 2 / 8)
    assert abs(out.std() - 2.0) < 0.05
    with pytest.raises(ParameterError, match="dimension"):
        g.release(np.zeros(5), np.random.default_rng())


def test_float_leak_reproducer_finds_no_leak_on_release_mode():
    """Review scripts/float_leaks.py: ~43% of textbook outputs are impossible under the neighbour; 0% exact."""
    rng = np.random.default_rng(9)
    for textbook in (TextbookLaplace(1.0, epsilon=1.0), TextbookGaussian(1.0, sigma=1.0)):
        assert unreachable_fraction(textbook.release(np.array(0.0), rng, size=2000), 1.0) > 0.3
    for mech in (Laplace(1.0, epsilon=1.0), Gaussian(1.0, sigma=1.0),
                 Laplace(1.0, epsilon=1.0, dimension=1), Gaussian(1.0, sigma=1.0, dimension=1)):
        outputs = mech.release(np.array(0.0), rng, size=2000)
        assert unreachable_fraction(outputs, 1.0) == 0.0


def test_audit_at_full_float_resolution_passes_on_release_mode_laplace():
    from dpkit.audit.mechanism.tester import audit

    mech = Laplace(1.0, epsilon=1.0)
    result = audit(lambda v, n, r: mech.release(v, r, size=n), 0.0, 1.0, samples=20_000,
                   rng=np.random.default_rng(10), claimed_epsilon=1.0, confidence=0.95, resolution=0.0)
    assert result.passed and result.lower_bound <= 1.0


def test_fast_path_decides_almost_every_draw(monkeypatch):
    import dpkit.privacy.exact as exact

    calls = []
    original = exact._refine
    monkeypatch.setattr(exact, "_refine", lambda *a: calls.append(1) or original(*a))
    scores = np.random.default_rng(12).normal(size=(3, 2000)) * 4
    exact_exponential_sample(scores, 1.0, np.random.default_rng(13), 2.0 ** -20, size=2000)
    assert len(calls) == 0   # probability of any refinement here is below 1e-5


def _dlap_pmf(scale: float, support: np.ndarray) -> np.ndarray:
    return np.tanh(1 / (2 * scale)) * np.exp(-np.abs(support) / scale)


def test_above_threshold_is_exact_on_its_grid():
    from dpkit.privacy import AboveThreshold

    gate = AboveThreshold(threshold=0.3, sigma=1.0, sensitivity=1.0, grid=0.5)   # noise scales 2 and 4 steps
    assert gate.contract.epsilon == 2 * (1.0 + 0.5) / 1.0 and gate.contract.sensitivity == 1.5
    k = np.arange(-400, 401)
    threshold_steps = 1 + k                      # round(0.3 / 0.5) = 1, plus Laplace(2 steps)
    p_threshold = _dlap_pmf(2.0, k)
    for value, steps in ((0.0, 0), (0.74, 1), (2.2, 4)):
        # P(steps + N(4) >= 1 + N(2)) by summing over the threshold noise
        tail = np.array([_dlap_pmf(4.0, k)[k >= t - steps].sum() for t in threshold_steps])
        p_above = float(np.sum(p_threshold * tail))
        hits = (gate.run(np.array([value]), np.random.default_rng(14), size=40_000) == 0).sum()
        assert abs(hits - 40_000 * p_above) <= 4.5 * math.sqrt(40_000 * p_above * (1 - p_above))
    session = gate.session(np.random.default_rng(15))
    assert session.noisy_threshold / 0.5 == round(session.noisy_threshold / 0.5)
    assert AboveThreshold(0.0, 1.0, sensitivity=1 / 16).contract.epsilon == pytest.approx(2 / 16, rel=1e-8)


def test_bernoulli_refinement_is_exact_from_no_bits():
    """The interval-arithmetic path alone (no float decision, U drawn 64 bits at a time) is Bernoulli(e^-x)."""
    from dpkit.privacy.exact import _refine_bernoulli

    rng = np.random.default_rng(16)
    n, p = 3000, math.exp(-1 / 3)
    hits = sum(_refine_bernoulli(1, 3, 0, 0, rng) for _ in range(n))
    assert abs(hits - n * p) <= 4.5 * math.sqrt(n * p * (1 - p))


@FAST
@given(scale=st.floats(0.05, 1e6), seed=st.integers(0, 2 ** 32 - 1), n=st.integers(1, 50))
def test_discrete_samplers_are_integer_shaped_and_seeded(scale, seed, n):
    for sampler in (discrete_laplace, discrete_gaussian):
        a = sampler(scale, np.random.default_rng(seed), size=(n, 2))
        b = sampler(scale, np.random.default_rng(seed), size=(n, 2))
        assert a.dtype == np.int64 and a.shape == (n, 2)
        np.testing.assert_array_equal(a, b)
        assert np.all(np.abs(a) <= 80 * max(scale, 1.0))   # a tail beyond 80 scales has probability < e^-80
