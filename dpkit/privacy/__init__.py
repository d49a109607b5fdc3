"""The privacy core: mechanisms with their contracts, zCDP accounting and a ledger.

Every mechanism takes a ``numpy.random.Generator`` and carries ``.contract``
(a :class:`PrivacyContract`: neighbouring relation, unit of privacy, measure,
sensitivity, cost).  :mod:`dpkit.privacy.zcdp` converts costs;
:class:`PrivacyLedger` composes them and enforces a budget;
:mod:`dpkit.privacy.private_prediction` is Theorem 1 of Amin et al.
"""

from dpkit.privacy.composition import hash_batch, hash_partition, parallel_rho, sequential_rho
from dpkit.privacy.contract import MEASURES, NEIGHBOURING_RELATIONS, PrivacyContract
from dpkit.privacy.exponential import Exponential, NoisyTopK, gumbel_max_sample, softmax_sampling_epsilon
from dpkit.privacy.gaussian import Gaussian, analytic_sigma, classical_sigma, gaussian_delta, gaussian_rho
from dpkit.privacy.laplace import Laplace
from dpkit.privacy.ledger import BudgetExceededError, PrivacyLedger
from dpkit.privacy.private_prediction import (max_private_tokens, per_token_rho, private_prediction_contract,
                                              private_prediction_rho, private_token_contract, svt_contract)
from dpkit.privacy.sparse_vector import AboveThreshold, SparseVectorSession
from dpkit.privacy.zcdp import (bounded_range_to_zcdp, epsilon_to_zcdp, pure_to_zcdp, zcdp_to_delta,
                                zcdp_to_epsilon, zcdp_to_epsilon_bun_steinke)

__all__ = [
    "AboveThreshold", "BudgetExceededError", "Exponential", "Gaussian", "Laplace", "MEASURES",
    "NEIGHBOURING_RELATIONS", "NoisyTopK", "PrivacyContract", "PrivacyLedger", "SparseVectorSession",
    "analytic_sigma", "bounded_range_to_zcdp", "classical_sigma", "epsilon_to_zcdp", "gaussian_delta",
    "gaussian_rho", "gumbel_max_sample", "hash_batch", "hash_partition", "max_private_tokens",
    "parallel_rho", "per_token_rho", "private_prediction_contract", "private_prediction_rho",
    "private_token_contract", "pure_to_zcdp", "sequential_rho", "softmax_sampling_epsilon", "svt_contract",
    "zcdp_to_delta", "zcdp_to_epsilon", "zcdp_to_epsilon_bun_steinke",
]
