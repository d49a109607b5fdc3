"""The tester's event families, encoding, input search, sample-size estimate and calibration zoo."""

import warnings

import numpy as np
import pytest

from dpkit.audit.mechanism import FeatureEvent, audit, check_event
from dpkit.audit.mechanism.calibration import audit_classic, false_positive_rate
from dpkit.audit.mechanism.classic import CLASSICS, classic, rappor_epsilon
from dpkit.audit.mechanism.pairs import audit_pairs, statdp_patterns
from dpkit.audit.mechanism.power import expected_bound, max_certifiable_epsilon, samples_needed
from dpkit.validate import ParameterError


def test_nan_outputs_are_an_error_never_a_pass():
    only_nan = lambda d, n, rng: np.full(n, np.nan)  # noqa: E731
    with pytest.raises(ParameterError, match="NaN"):
        audit(only_nan, 0, 1, samples=200, rng=np.random.default_rng(0), claimed_epsilon=1.0)
    some_nan = lambda d, n, rng: np.where(rng.random(n) < 0.01, np.nan, d + rng.laplace(size=n))  # noqa: E731
    with pytest.raises(ParameterError, match="non-finite"):
        audit(some_nan, 0.0, 1.0, samples=2_000, rng=np.random.default_rng(0))
    rows_of_nan = lambda d, n, rng: np.full((n, 3), np.inf)  # noqa: E731
    with pytest.raises(ParameterError):
        audit(rows_of_nan, 0, 1, samples=200, rng=np.random.default_rng(0))


def test_encoding_does_not_depend_on_dtype():
    bits = classic("rappor").mechanism(1.0)
    as_float = lambda d, n, rng: bits(d, n, rng).astype(np.float64)  # noqa: E731
    runs = [audit(m, 0, 1, samples=10_000, rng=np.random.default_rng(7)) for m in (bits, as_float)]
    assert runs[0].lower_bound == runs[1].lower_bound > 0.0


def test_learned_statistic_sees_rappor_and_never_overshoots():
    result = audit(classic("rappor").mechanism(1.0), 0, 1, samples=40_000, rng=np.random.default_rng(1),
                   claimed_epsilon=rappor_epsilon())
    assert result.passed and result.lower_bound > 0.05
    assert result.family.startswith("learned") or result.family == "joint"
    assert isinstance(result.event, FeatureEvent)
    again = check_event(classic("rappor").mechanism(1.0), 0, 1, result.event, result.numerator, samples=20_000,
                        rng=np.random.default_rng(2))
    assert 0.0 <= again <= rappor_epsilon()


def test_joint_events_catch_isvt4():
    """(number of 'below' answers, value released): each column alone shows little."""
    entry = classic("isvt4")
    d0, d1 = statdp_patterns(10)["half_half"]
    result = audit(entry.mechanism(1.0), d0, d1, samples=30_000, rng=np.random.default_rng(3), claimed_epsilon=1.0)
    assert not result.passed and result.family != "threshold"
    names = {f["family"] for f in result.families}
    assert names <= {"threshold", "joint", "learned:logistic", "learned:boosting"}


def test_input_search_corrects_for_the_pairs_it_certifies():
    mech = classic("bad_partial_sum").mechanism(0.5)
    result, search = audit_pairs(mech, statdp_patterns(10), samples=10_000, rng=np.random.default_rng(4),
                                 search_samples=1_000, top=2, claimed_epsilon=0.5)
    assert set(search) == set(statdp_patterns(10)) and result.witness["pair"] in search
    assert result.certified_confidence <= 1 - 0.05 / 2  # Bonferroni over the two certified pairs
    assert not result.passed and result.lower_bound > 3.0  # true epsilon 5


def test_sample_size_estimate_and_warning():
    n_small, n_large = samples_needed(1.0, 1.5), samples_needed(1.0, 1.1)
    assert n_small < n_large  # a larger violation needs fewer samples
    grid = [p for p in np.geomspace(1e-6, 0.5, 60) if np.exp(1.5) * p <= 1]
    assert max(expected_bound(n_small, 1.5, p) for p in grid) > 1.0
    assert samples_needed(1.0, 0.5) is None  # no violation to find
    assert max_certifiable_epsilon(100) < 5.0
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = audit(lambda d, n, rng: d + rng.laplace(size=n), 0.0, 1.0, samples=100,
                       rng=np.random.default_rng(0), claimed_epsilon=8.0)
    assert result.warnings and any("cannot certify" in str(w.message) for w in caught)


def test_zoo_states_truth_and_source():
    assert {c.name for c in CLASSICS} >= {"noisy_max_value", "isvt1", "isvt2", "isvt3", "isvt4", "histogram_eps",
                                          "bad_partial_sum", "bad_gap_svt", "rappor", "laplace_parallel"}
    for entry in CLASSICS:
        assert entry.source and entry.why
        assert entry.true_epsilon(0.5) >= entry.claimed(0.5) - 1e-12
        out = entry.mechanism(0.5)(entry.pair[0] if entry.pair else [1.0] * 10, 50, np.random.default_rng(0))
        assert len(out) == 50


@pytest.mark.parametrize("name", ["noisy_max_value", "isvt1", "isvt2", "bad_partial_sum", "bad_gap_svt",
                                  "histogram_eps"])
def test_zoo_broken_mechanisms_are_caught(name):
    result = audit_classic(name, 0.5, samples=20_000, seed=5, search_samples=2_000)
    assert not result.passed, (name, result.lower_bound)


def test_false_positive_rate_stays_at_nominal():
    """Correct mechanisms, many seeds, 90% confidence: at most ~10% of bounds above the truth."""
    out = false_positive_rate(names=("histogram", "laplace_parallel", "rappor"), runs=10, samples=1_000,
                              confidence=0.9, seed=11)
    assert out["audits"] == 30 and out["rate"] <= 0.2  # Binomial(30, 0.1): P(rate > 0.2) < 0.06


def test_published_numbers_are_marked_where_absent():
    from dpkit.audit.mechanism.calibration import PUBLISHED, published_table

    table = published_table().set_index("mechanism")
    assert table.loc["bad_partial_sum", "DP-Sniper bound / true"] == "not published"
    assert table.loc["laplace_parallel", "DP-Sniper bound / true"].startswith("0.035 (35%)")
    assert set(PUBLISHED) <= {c.name for c in CLASSICS}
