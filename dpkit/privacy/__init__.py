"""The privacy core: mechanisms with their contracts, zCDP accounting and a ledger.

Every mechanism takes a ``numpy.random.Generator``, samples exactly
(:mod:`dpkit.privacy.exact`: discrete Laplace and Gaussian on a declared grid,
the exponential mechanism on quantized scores) and carries ``.contract``
(a :class:`PrivacyContract`: neighbouring relation, unit of privacy, measure,
sensitivity, cost).  :mod:`dpkit.privacy.zcdp` converts costs;
:class:`PrivacyLedger` composes them and enforces a budget;
:mod:`dpkit.privacy.private_prediction` is Theorem 1 of Amin et al.
"""

from dpkit.privacy.composition import hash_batch, hash_partition, parallel_rho, sequential_rho
from dpkit.privacy.contract import MEASURES, NEIGHBOURING_RELATIONS, PrivacyContract
from dpkit.privacy.exact import (bernoulli_exp, default_grid, discrete_gaussian, discrete_laplace,
                                 exact_exponential_sample)
from dpkit.privacy.exponential import (Exponential, NoisyTopK, exponential_grid, gumbel_max_sample,
                                       softmax_sampling_epsilon)
from dpkit.privacy.float_leak import unreachable_fraction
from dpkit.privacy.gaussian import (Gaussian, TextbookGaussian, analytic_sigma, classical_sigma, gaussian_delta,
                                    gaussian_rho)
from dpkit.privacy.laplace import Laplace, TextbookLaplace
from dpkit.privacy.ledger import BudgetExceededError, Charge, PrivacyLedger
from dpkit.privacy.private_prediction import (max_private_tokens, per_token_rho, private_prediction_contract,
                                              private_prediction_guarantee, private_prediction_rho,
                                              private_token_contract, svt_contract, token_grid)
from dpkit.privacy.randomized_response import RandomizedResponse, keep_probability
from dpkit.privacy.sparse_vector import AboveThreshold, SparseVectorSession
from dpkit.privacy.zcdp import (bounded_range_to_zcdp, epsilon_to_zcdp, pure_to_zcdp, zcdp_to_delta,
                                zcdp_to_epsilon, zcdp_to_epsilon_bun_steinke)

__all__ = [
    "AboveThreshold", "BudgetExceededError", "Charge", "Exponential", "Gaussian", "Laplace", "MEASURES",
    "NEIGHBOURING_RELATIONS", "NoisyTopK", "PrivacyContract", "PrivacyLedger", "RandomizedResponse",
    "SparseVectorSession", "keep_probability",
    "TextbookGaussian", "TextbookLaplace", "analytic_sigma", "bernoulli_exp", "bounded_range_to_zcdp",
    "classical_sigma", "default_grid", "discrete_gaussian", "discrete_laplace", "epsilon_to_zcdp",
    "exact_exponential_sample", "exponential_grid", "gaussian_delta", "gaussian_rho", "gumbel_max_sample",
    "hash_batch", "hash_partition", "max_private_tokens", "parallel_rho", "per_token_rho",
    "private_prediction_contract", "private_prediction_guarantee", "private_prediction_rho",
    "private_token_contract", "pure_to_zcdp", "sequential_rho", "softmax_sampling_epsilon", "svt_contract",
    "token_grid", "unreachable_fraction", "zcdp_to_delta", "zcdp_to_epsilon", "zcdp_to_epsilon_bun_steinke",
]
