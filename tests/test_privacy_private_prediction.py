"""Theorem 1 of the private-prediction paper and its inverse."""

import pytest

from dpkit.privacy import (max_private_tokens, per_token_rho, private_prediction_contract,
                           private_prediction_guarantee, private_prediction_rho, private_token_contract, svt_contract,
                           token_grid, zcdp_to_epsilon, zcdp_to_epsilon_bun_steinke)
from dpkit.privacy.sparse_vector import svt_grid
from dpkit.validate import ParameterError


def test_theorem_1_formula():
    r, s, c, tau, sigma = 37, 250, 10.0, 2.0, 0.3
    g = token_grid(s, c)   # the exact sampler's grid on the averaged logits: a power of two <= 2^-30 c/s
    assert g <= 2 ** -30 * c / s < 2 * g
    h = svt_grid(1 / s, sigma)   # AboveThreshold's grid on the distances
    assert h <= 2 ** -30 / s < 2 * h
    expected = r * (0.5 * ((c / s + g) / tau) ** 2 + 2 * ((1 / s + h) / sigma) ** 2)
    assert private_prediction_rho(r, s, c, tau, svt_sigma=sigma) == pytest.approx(expected, rel=1e-14)
    assert private_prediction_rho(r, s, c, tau) == pytest.approx(r * 0.5 * ((c / s + g) / tau) ** 2, rel=1e-14)
    # the grid costs a relative 2^-29 of rho at most: the paper's numbers are unchanged to 9 digits
    assert private_prediction_rho(r, s, c, tau) == pytest.approx(r * 0.5 * (c / (s * tau)) ** 2, rel=2e-9)
    assert private_prediction_rho(0, s, c, tau) == 0.0


def test_constituent_contracts():
    tok = private_token_contract(250, 10, 2)
    assert tok.measure == "bounded-range" and tok.epsilon == pytest.approx(2 * 10 / (250 * 2))
    assert tok.sensitivity == pytest.approx(10 / 250) and tok.unit == "prompt"
    svt = svt_contract(250, 0.2)
    assert svt.epsilon == pytest.approx(2 / (250 * 0.2)) and svt.rho() == pytest.approx(2 / (250 * 0.2) ** 2)
    run = private_prediction_contract(10, 250, 10, 2, 0.2)
    assert run.rho() == pytest.approx(10 * per_token_rho(250, 10, 2, 0.2))


@pytest.mark.parametrize("eps, sigma", [(1.0, None), (1.0, 0.2), (3.0, 0.1), (10.0, None), (0.05, None)])
def test_max_tokens_is_the_largest_that_fits(eps, sigma):
    r = max_private_tokens(eps, 1e-6, 250, 10, 2, svt_sigma=sigma)
    assert zcdp_to_epsilon(private_prediction_rho(r, 250, 10, 2, sigma), 1e-6) <= eps or r == 0
    assert zcdp_to_epsilon(private_prediction_rho(r + 1, 250, 10, 2, sigma), 1e-6) > eps


@pytest.mark.parametrize("call, name", [
    (lambda: private_prediction_rho(-1, 250, 10, 2), "tokens"),
    (lambda: private_prediction_rho(1.5, 250, 10, 2), "tokens"),
    (lambda: private_prediction_rho(1, 0, 10, 2), "batch_size"),
    (lambda: private_prediction_rho(1, 0.5, 10, 2), "batch_size"),   # s >= 1, as the decoder requires
    (lambda: private_prediction_rho(1, 250, -10, 2), "clip"),
    (lambda: private_prediction_rho(1, 250, 10, 0), "temperature"),
    (lambda: private_prediction_rho(1, 250, 10, 2, svt_sigma=0), "svt_sigma"),
    (lambda: max_private_tokens(0, 1e-6, 250, 10, 2), "epsilon"),
    (lambda: max_private_tokens(1, 0, 250, 10, 2), "delta"),
])
def test_bad_arguments(call, name):
    with pytest.raises(ParameterError) as info:
        call()
    assert info.value.name == name


def test_one_guarantee_for_the_pipeline_and_the_cli():
    from dpkit.privpred.pipeline import PrivatePredictionConfig
    from dpkit.privpred.sampling import token_epsilon, token_rho
    from dpkit.privpred.svt import svt_rho

    g = private_prediction_guarantee(40, 1e-5, 16, 2.0, 1.0, 0.5)
    assert g["rho"] == private_prediction_rho(40, 16, 2.0, 1.0, 0.5)
    assert g["epsilon"] == zcdp_to_epsilon(g["rho"], 1e-5)
    assert g["epsilon_bun_steinke"] == zcdp_to_epsilon_bun_steinke(g["rho"], 1e-5)
    # the decoder-side helpers read the same contracts (one home per accounting fact)
    assert token_epsilon(2.0, 16, 1.0) == private_token_contract(16, 2.0, 1.0).epsilon
    assert token_rho(2.0, 16, 1.0) == private_token_contract(16, 2.0, 1.0).rho()
    assert svt_rho(16, 0.5) == svt_contract(16, 0.5).rho()
    config = PrivatePredictionConfig(epsilon=3.0, delta=1e-5, expected_batch_size=16, clip=2.0, temperature=1.0)
    r = config.max_private_tokens()
    assert config.guarantee() == {**private_prediction_guarantee(r, 1e-5, 16, 2.0, 1.0), "target_epsilon": 3.0}
