"""All mechanisms in one namespace (each lives in its own module)."""

from dpkit.privacy.exact import discrete_gaussian, discrete_laplace, exact_exponential_sample
from dpkit.privacy.exponential import Exponential, NoisyTopK, gumbel_max_sample, softmax_sampling_epsilon
from dpkit.privacy.gaussian import (Gaussian, TextbookGaussian, analytic_sigma, classical_sigma, gaussian_delta,
                                    gaussian_rho)
from dpkit.privacy.laplace import Laplace, TextbookLaplace
from dpkit.privacy.sparse_vector import AboveThreshold, SparseVectorSession

__all__ = ["AboveThreshold", "Exponential", "Gaussian", "Laplace", "NoisyTopK", "SparseVectorSession",
           "TextbookGaussian", "TextbookLaplace", "analytic_sigma", "classical_sigma", "discrete_gaussian",
           "discrete_laplace", "exact_exponential_sample", "gaussian_delta", "gaussian_rho", "gumbel_max_sample",
           "softmax_sampling_epsilon"]
