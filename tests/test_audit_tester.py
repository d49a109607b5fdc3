"""The tester on small reference mechanisms whose true epsilon is known exactly."""

import numpy as np
import pytest

from dpkit.audit.mechanism import SetEvent, ThresholdEvent, audit, check_event, laplace_llr
from dpkit.validate import ParameterError


def laplace(scale):
    return lambda value, n, rng: value + rng.laplace(0.0, scale, size=n)


def randomized_response(epsilon):
    keep = np.exp(epsilon) / (1 + np.exp(epsilon))
    return lambda bit, n, rng: np.where(rng.random(n) < keep, bit, 1 - bit)


def test_correct_laplace_is_tight_and_passes():
    result = audit(laplace(1.0), 0.0, 1.0, samples=100_000, rng=np.random.default_rng(0), claimed_epsilon=1.0)
    assert result.passed and 0.9 < result.lower_bound <= 1.0
    assert isinstance(result.event, ThresholdEvent)


def test_half_noise_is_caught():
    result = audit(laplace(0.5), 0.0, 1.0, samples=20_000, rng=np.random.default_rng(0), claimed_epsilon=1.0)
    assert not result.passed and result.lower_bound > 1.5


def test_discrete_randomized_response():
    result = audit(randomized_response(1.0), 0, 1, samples=20_000, rng=np.random.default_rng(1),
                   claimed_epsilon=1.0)
    assert isinstance(result.event, SetEvent) and result.passed and result.lower_bound > 0.8


def test_bound_exceeds_truth_rarely():
    """Validity: over many independent audits of an exactly 1-DP mechanism, the 90% bound
    exceeds 1 in at most about 10% of them (the selection half never biases the certificate)."""
    rng = np.random.default_rng(2)
    mech = randomized_response(1.0)
    over = sum(audit(mech, 0, 1, samples=2_000, rng=rng, confidence=0.9).lower_bound > 1.0 for _ in range(150))
    assert over <= 25  # Binomial(150, 0.1) has mean 15; P(> 25) < 0.01


def test_witness_reruns_on_fresh_samples():
    mech = laplace(0.5)
    result = audit(mech, 0.0, 1.0, samples=20_000, rng=np.random.default_rng(3), claimed_epsilon=1.0,
                   witness={"mechanism": "half-noise"})
    assert result.witness["mechanism"] == "half-noise" and result.witness["event"]["kind"] == "threshold"
    again = check_event(mech, 0.0, 1.0, result.event, result.numerator, samples=20_000,
                        rng=np.random.default_rng(99), statistics={"output": lambda y: y})
    assert again > 1.0
    data = result.to_dict()
    assert set(data) >= {"claimed_epsilon", "lower_bound", "confidence", "passed", "witness"}


def test_multivariate_laplace_llr_statistic():
    a, b = np.zeros(3), np.ones(3)
    mech = lambda v, n, rng: np.asarray(v) + rng.laplace(0.0, 3.0, size=(n, 3))  # noqa: E731
    result = audit(mech, a, b, samples=20_000, rng=np.random.default_rng(4), claimed_epsilon=1.0,
                   statistics={"llr": laplace_llr(a, b)})
    assert result.passed and result.lower_bound > 0.6


def test_row_outputs_as_discrete_sets():
    def mech(bit, n, rng):
        return np.stack([randomized_response(1.0)(bit, n, rng), randomized_response(1.0)(bit, n, rng)], axis=1)

    result = audit(mech, 0, 1, samples=20_000, rng=np.random.default_rng(5), claimed_epsilon=2.0,
                   output="discrete")
    assert result.passed and result.lower_bound > 1.5  # two independent 1-DP answers: 2-DP, tight
    assert all(len(o) == 2 for o in result.event.outcomes)


def test_argument_errors():
    rng = np.random.default_rng(0)
    with pytest.raises(ParameterError, match="samples"):
        audit(laplace(1.0), 0.0, 1.0, samples=5, rng=rng)
    with pytest.raises(ParameterError, match="rng"):
        audit(laplace(1.0), 0.0, 1.0, samples=100, rng=0)
    with pytest.raises(ParameterError, match="output"):
        audit(laplace(1.0), 0.0, 1.0, samples=100, rng=rng, output="mixed")
    with pytest.raises(ParameterError, match="mechanism"):
        audit(lambda d, n, r: np.zeros(n - 1), 0.0, 1.0, samples=100, rng=rng)
    with pytest.raises(ParameterError, match="mechanism"):
        audit("laplace", 0.0, 1.0, samples=100, rng=rng)
    with pytest.raises(ParameterError, match="claimed_epsilon"):
        audit(laplace(1.0), 0.0, 1.0, samples=100, rng=rng, claimed_epsilon=-1)
    with pytest.raises(ParameterError, match="statistics"):
        audit(lambda d, n, r: np.zeros((n, 100)), 0.0, 1.0, samples=100, rng=rng, output="continuous")


def test_string_outcomes_are_never_truncated():
    event = SetEvent(("a much longer outcome",))
    assert not event.contains(np.array(["a much", "a much longer outcome"], dtype="<U6"))[0]
    assert event.contains(np.array(["x", "a much longer outcome"]))[1]
