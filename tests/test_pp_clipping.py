"""Clip-and-recentre (Eq. 1), aggregation by the expected batch size, one private token."""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from dpkit.privpred import (aggregate_logits, clip_and_recenter, clip_fixed, sample_private_token, token_epsilon,
                            token_log_probabilities, token_rho, worst_case_log_ratio)
from dpkit.privacy import private_token_contract
from dpkit.validate import ParameterError

finite = st.floats(-50, 50, allow_nan=False, allow_infinity=False)


@given(arrays(np.float64, st.tuples(st.integers(1, 4), st.integers(2, 30)), elements=finite),
       st.floats(0.1, 20), finite)
def test_clip_range_top_and_shift_invariance(z, c, shift):
    out = clip_and_recenter(z, c)
    assert out.min() >= -c - 1e-12 and out.max() <= c + 1e-12
    np.testing.assert_allclose(out.max(axis=-1), c)
    np.testing.assert_allclose(clip_and_recenter(z + shift, c), out, atol=1e-9)


@given(arrays(np.float64, 20, elements=st.floats(-3, 3)), st.floats(3.01, 10))
def test_softmax_unchanged_when_span_fits(z, c):
    def softmax(x):
        e = np.exp(x - x.max())
        return e / e.sum()
    np.testing.assert_allclose(softmax(clip_and_recenter(z, c)), softmax(z), rtol=1e-9)


def test_clip_exact_values_and_torch_agrees():
    z = np.array([5.0, 1.0, -30.0])
    np.testing.assert_array_equal(clip_and_recenter(z, 2.0), [2.0, -2.0, -2.0])
    np.testing.assert_array_equal(clip_fixed(z, 2.0), [2.0, 1.0, -2.0])
    t = clip_and_recenter(torch.tensor(z), 2.0)
    assert isinstance(t, torch.Tensor)
    np.testing.assert_array_equal(t.numpy(), [2.0, -2.0, -2.0])


def test_aggregate_divides_by_expected_size():
    clipped = np.array([[1.0, -1.0], [1.0, 1.0]])
    np.testing.assert_allclose(aggregate_logits(clipped, 4), [0.5, 0.0])
    np.testing.assert_allclose(aggregate_logits(clipped, 4, denominator="actual"), [1.0, 0.0])


@settings(max_examples=50)
@given(arrays(np.float64, st.tuples(st.integers(1, 6), st.just(12)), elements=finite),
       arrays(np.float64, 12, elements=finite), st.floats(0.5, 10), st.integers(1, 10))
def test_aggregate_sensitivity_is_c_over_s(batch, extra, c, s):
    a = aggregate_logits(clip_and_recenter(batch, c), s)
    b = aggregate_logits(clip_and_recenter(np.vstack([batch, extra]), c), s)
    assert np.max(np.abs(a - b)) <= c / s + 1e-9


def test_token_epsilon_matches_privacy_core_contract():
    assert token_epsilon(10, 8, 2) == pytest.approx(2 * 10 / (8 * 2))
    contract = private_token_contract(8, 10, 2)
    assert contract.epsilon == pytest.approx(token_epsilon(10, 8, 2))
    assert contract.rho() == pytest.approx(token_rho(10, 8, 2))
    assert token_rho(10, 8, 2) == pytest.approx(0.5 * (10 / (8 * 2)) ** 2)


def _adversarial(s, c, vocab=50):
    """s-1 prompts that all favour token 0; the added prompt favours token 1 instead."""
    batch = np.full((s - 1, vocab), -100.0)
    batch[:, 0] = 0.0
    extra = np.full(vocab, -100.0)
    extra[1] = 0.0
    return batch, extra


@pytest.mark.parametrize("s", [16, 64])
def test_expected_denominator_respects_bound_and_actual_doubles_it(s):
    c, tau = 3.0, 1.0
    batch, extra = _adversarial(s, c)
    bound = token_epsilon(c, s, tau)
    honest = worst_case_log_ratio(batch, extra, c, s, tau)
    broken = worst_case_log_ratio(batch, extra, c, s, tau, denominator="actual")
    assert honest <= bound + 1e-9
    assert honest >= 0.9 * bound          # the adversarial pair nearly attains 2c/(s tau)
    assert broken >= 1.8 * bound          # dividing by the actual size ~doubles the loss
    assert broken <= 2 * bound + 1e-9     # sensitivity of the broken mean is at most 2c/s


@settings(max_examples=30)
@given(arrays(np.float64, st.tuples(st.integers(1, 5), st.just(8)), elements=finite),
       arrays(np.float64, 8, elements=finite), st.floats(0.5, 10), st.integers(1, 8), st.floats(0.3, 3))
def test_privacy_loss_of_one_token_never_exceeds_2c_over_s_tau(batch, extra, c, s, tau):
    assert worst_case_log_ratio(batch, extra, c, s, tau) <= token_epsilon(c, s, tau) + 1e-9


def test_sampling_matches_distribution_and_is_reproducible():
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(3, 6)) * 3
    p = np.exp(token_log_probabilities(logits, 4.0, 3, 1.5))
    draws = sample_private_token(logits, 4.0, 3, 1.5, np.random.default_rng(1), size=40000)
    freq = np.bincount(draws, minlength=6) / draws.size
    np.testing.assert_allclose(freq, p, atol=0.01)
    again = sample_private_token(logits, 4.0, 3, 1.5, np.random.default_rng(1), size=40000)
    np.testing.assert_array_equal(draws, again)


def test_sampling_respects_allowed_tokens():
    logits = np.zeros((2, 10))
    draws = sample_private_token(logits, 1.0, 2, 1.0, np.random.default_rng(0), allowed=[3, 7], size=500)
    assert set(np.unique(draws)) == {3, 7}


@pytest.mark.parametrize("call, name", [
    (lambda: clip_and_recenter(np.zeros(3), 0.0), "clip"),
    (lambda: clip_and_recenter(np.zeros(3), -1.0), "clip"),
    (lambda: aggregate_logits(np.zeros((2, 3)), 0.5), "expected_batch_size"),
    (lambda: aggregate_logits(np.zeros((0, 3)), 2, denominator="actual"), "clipped"),
    (lambda: aggregate_logits(np.zeros((2, 3)), 2, denominator="median"), "denominator"),
    (lambda: sample_private_token(np.zeros((2, 3)), 1, 2, 0.0, np.random.default_rng(0)), "temperature"),
    (lambda: sample_private_token(np.zeros((2, 3)), 1, 2, 1.0, 0), "rng"),
    (lambda: clip_and_recenter(np.array([1.0, np.nan]), 1.0), "logits"),
])
def test_bad_input_names_the_parameter(call, name):
    with pytest.raises(ParameterError) as err:
        call()
    assert err.value.name == name
