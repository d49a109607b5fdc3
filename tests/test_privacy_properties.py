"""Property-based checks (hypothesis) of the mechanisms' privacy claims and the accounting's invariants."""

import math

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpkit.privacy import (AboveThreshold, Exponential, Laplace, PrivacyLedger, zcdp_to_delta, zcdp_to_epsilon,
                           zcdp_to_epsilon_bun_steinke)

FAST = settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
finite = st.floats(min_value=-50, max_value=50, allow_nan=False, allow_infinity=False)
positive = st.floats(min_value=0.01, max_value=10.0)


@FAST
@given(sensitivity=positive, epsilon=positive, dim=st.integers(1, 5), data=st.data())
def test_laplace_loss_never_exceeds_epsilon(sensitivity, epsilon, dim, data):
    """Neighbouring values differ by at most `sensitivity` in L1; after rounding to the grid they differ by at
    most the contract's sensitivity, and every output's loss is <= epsilon."""
    value = np.array(data.draw(st.lists(finite, min_size=dim, max_size=dim)))
    direction = np.array(data.draw(st.lists(st.floats(-1, 1), min_size=dim, max_size=dim)))
    norm = np.abs(direction).sum()
    step = direction / norm * sensitivity * data.draw(st.floats(0, 1)) if norm > 0 else np.zeros(dim)
    mech = Laplace(sensitivity, epsilon=epsilon, dimension=dim)
    rounded = np.rint(value / mech.grid) * mech.grid
    rounded_neighbour = np.rint((value + step) / mech.grid) * mech.grid
    assert np.abs(rounded - rounded_neighbour).sum() <= mech.contract.sensitivity * (1 + 1e-12)
    outputs = mech.release(value, np.random.default_rng(data.draw(st.integers(0, 2**32 - 1))), size=200)
    assert np.all(outputs / mech.grid == np.rint(outputs / mech.grid))  # every output lies on the grid
    outputs = np.concatenate([outputs, rounded[None, :], rounded_neighbour[None, :]])
    loss = mech.log_density_ratio(outputs, rounded, rounded_neighbour)
    assert np.all(np.abs(loss) <= epsilon * (1 + 1e-9) + 1e-12)


@FAST
@given(sensitivity=positive, epsilon=positive, k=st.integers(1, 12), monotone=st.booleans(), data=st.data())
def test_exponential_loss_and_range_never_exceed_epsilon(sensitivity, epsilon, k, monotone, data):
    scores = np.array(data.draw(st.lists(finite, min_size=k, max_size=k)))
    shifts = np.array(data.draw(st.lists(st.floats(-1, 1), min_size=k, max_size=k))) * sensitivity
    if monotone:
        shifts = np.abs(shifts)
    mech = Exponential(sensitivity, epsilon, monotone=monotone)
    loss = mech.log_probabilities(scores) - mech.log_probabilities(scores + shifts)
    assert np.max(np.abs(loss)) <= epsilon * (1 + 1e-9) + 1e-12
    assert loss.max() - loss.min() <= epsilon * (1 + 1e-9) + 1e-12


@FAST
@given(rho=st.floats(1e-6, 100.0), factor=st.floats(1.0001, 10.0), delta=st.floats(1e-12, 0.5))
def test_epsilon_monotone_in_rho_and_tighter_than_bun_steinke(rho, factor, delta):
    assert zcdp_to_epsilon(rho, delta) <= zcdp_to_epsilon(rho * factor, delta) + 1e-12
    assert zcdp_to_epsilon(rho, delta) <= zcdp_to_epsilon_bun_steinke(rho, delta) + 1e-12


@FAST
@given(rho=st.floats(1e-6, 100.0), delta=st.floats(1e-12, 0.1), factor=st.floats(1.001, 9.0))
def test_epsilon_decreases_with_delta(rho, delta, factor):
    assert zcdp_to_epsilon(rho, delta * factor) <= zcdp_to_epsilon(rho, delta) + 1e-12


@FAST
@given(rho=st.floats(1e-6, 100.0), eps=st.floats(0.0, 50.0), factor=st.floats(1.01, 4.0))
def test_delta_monotone(rho, eps, factor):
    assert zcdp_to_delta(rho, eps * factor + 1e-3) <= zcdp_to_delta(rho, eps) + 1e-15
    assert zcdp_to_delta(rho, eps) <= zcdp_to_delta(rho * factor, eps) + 1e-15


@FAST
@given(epsilons=st.lists(st.floats(0.001, 2.0), min_size=1, max_size=8), counts=st.data())
def test_composition_adds(epsilons, counts):
    ledger = PrivacyLedger()
    expected = 0.0
    for i, eps in enumerate(epsilons):
        n = counts.draw(st.integers(0, 5))
        contract = Laplace(1.0, epsilon=eps, unit="document").contract
        ledger.spend(contract, f"step {i}", count=n)
        expected += n * eps * eps / 2
    assert math.isclose(ledger.rho, expected, rel_tol=1e-12, abs_tol=1e-15)
    ledger.spend_parallel(Laplace(1.0, epsilon=1.0, unit="document").contract, "parallel", groups=17)
    assert math.isclose(ledger.rho, expected + 0.5, rel_tol=1e-12)


@FAST
@given(sigma=st.floats(0.05, 2.0), shift=st.floats(-1.0, 1.0), seed=st.integers(0, 2**32 - 1))
def test_above_threshold_halt_probabilities_within_claim(sigma, shift, seed):
    """Output distribution of a 3-query AboveThreshold on neighbours (queries shifted by <= 1), estimated
    by simulation: each output's probability ratio is within e^epsilon up to sampling error."""
    mech = AboveThreshold(0.0, sigma)
    base = np.array([-0.5, 0.0, 0.5])
    n = 20_000
    rng = np.random.default_rng(seed)
    a = np.bincount(mech.run(base, rng, size=n) + 1, minlength=4) / n
    b = np.bincount(mech.run(base + shift, rng, size=n) + 1, minlength=4) / n
    slack = 4 * np.sqrt(0.25 / n)  # four standard errors of a frequency
    assert np.all(a <= math.exp(mech.epsilon) * b + slack * (1 + math.exp(mech.epsilon)))
