"""Random Fourier features for the Gaussian kernel (Rahimi and Recht).

For a bandwidth ``sigma`` the kernel is ``k(x, y) = exp(-||x - y||^2 / sigma^2)``.
With ``w ~ N(0, I_dim)`` and ``b ~ Uniform[0, 2 pi)`` the feature

    f(z) = sqrt(2) * cos(sqrt(2) * w^T z / sigma + b)

satisfies ``E[f(x) f(y)] = k(x, y)`` for every pair of points (the expectation is
over ``w`` and ``b``) and ``|f(z)| <= sqrt(2)`` for every ``z``.  That bound is what
the DP-KDE sensitivity in :mod:`dpkit.kps.kde` rests on.

The features are public randomness: they are drawn from ``rng`` without looking
at any data, and releasing them costs no privacy.
"""

from __future__ import annotations

import math

import numpy as np

from dpkit.validate import ParameterError, check_finite_array, check_int, check_positive, check_rng

FEATURE_BOUND = math.sqrt(2.0)
"""``sup_z |f(z)|`` for every feature: the per-coordinate bound used by the sensitivity."""


class RandomFourierFeatures:
    """``n_features`` random features of the Gaussian kernel on ``R^dim``.

    ``weights`` has shape ``(n_features, dim)`` (the ``w`` vectors, already
    multiplied by ``sqrt(2) / bandwidth``) and ``offsets`` shape ``(n_features,)``.
    """

    def __init__(self, dim: int, n_features: int, bandwidth: float, rng: np.random.Generator,
                 dtype=np.float64):
        self.dim = check_int("dim", dim, minimum=1)
        self.n_features = check_int("n_features", n_features, minimum=1)
        self.bandwidth = check_positive("bandwidth", bandwidth)
        check_rng("rng", rng)
        raw = rng.standard_normal((self.n_features, self.dim))
        self.weights = (raw * (math.sqrt(2.0) / self.bandwidth)).astype(dtype)
        self.offsets = rng.uniform(0.0, 2.0 * math.pi, size=self.n_features).astype(dtype)

    def project(self, points) -> np.ndarray:
        """``sqrt(2) w^T z / sigma`` for each row ``z``: shape ``(n, n_features)``."""
        points = self._check_points(points)
        return points @ self.weights.T

    def features(self, points) -> np.ndarray:
        """``f(z)`` for each row ``z``: shape ``(n, n_features)``, entries in ``[-sqrt 2, sqrt 2]``."""
        return FEATURE_BOUND * np.cos(self.project(points) + self.offsets)

    def block(self, start: int, stop: int) -> np.ndarray:
        """The columns ``start:stop`` of the weights: the projection of one block of a concatenation."""
        return self.weights[:, start:stop]

    def _check_points(self, points) -> np.ndarray:
        points = check_finite_array("points", points, ndim=2)
        if points.shape[1] != self.dim:
            raise ParameterError("points", points, f"must have {self.dim} columns (the feature dimension)")
        return points.astype(self.weights.dtype, copy=False)


def gaussian_kernel(x, y, bandwidth: float) -> np.ndarray:
    """The exact kernel matrix ``exp(-||x_i - y_j||^2 / bandwidth^2)``, shape ``(len(x), len(y))``."""
    bandwidth = check_positive("bandwidth", bandwidth)
    x = check_finite_array("x", x, ndim=2)
    y = check_finite_array("y", y, ndim=2)
    if x.shape[1] != y.shape[1]:
        raise ParameterError("y", y, f"must have the same number of columns as x ({x.shape[1]})")
    sq = (x * x).sum(1)[:, None] + (y * y).sum(1)[None, :] - 2.0 * x @ y.T
    return np.exp(-np.maximum(sq, 0.0) / bandwidth ** 2)
