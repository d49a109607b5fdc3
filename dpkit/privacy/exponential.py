"""The exponential mechanism, computed in log space.

Given scores u(D, y) whose sensitivity (largest change of any one score
between neighbours) is ``sensitivity``, sampling y with probability
proportional to exp(epsilon u(D, y) / (2 sensitivity)) is epsilon-DP
{cite}`mcsherry2007mechanism` and, more sharply, epsilon-bounded-range, hence
(epsilon^2 / 8)-zCDP {cite}`cesar2021bounding`.

Softmax sampling at temperature tau from logits z is exactly this mechanism
with scores z and epsilon / (2 sensitivity) = 1 / tau, i.e.
epsilon = 2 sensitivity / tau {cite}`amin2024private`.

Sampling uses the Gumbel-max trick: argmax_y (log w_y + G_y) with G_y i.i.d.
standard Gumbel is distributed as softmax(log w); no exponentials of large
scores are ever formed.
"""

from __future__ import annotations

import numpy as np
from scipy.special import logsumexp

from dpkit.validate import ParameterError, check_finite_array, check_int, check_positive, check_rng

from dpkit.privacy._common import check_neighbouring, check_size, check_unit
from dpkit.privacy.contract import PrivacyContract


def _check_log_weights(name: str, log_weights) -> np.ndarray:
    try:
        array = np.asarray(log_weights, dtype=float)
    except (TypeError, ValueError):
        raise ParameterError(name, log_weights, "must be an array of real numbers") from None
    if array.ndim == 0 or array.shape[-1] == 0:
        raise ParameterError(name, log_weights, "must have at least one candidate along the last axis")
    if np.isnan(array).any() or np.isposinf(array).any():
        raise ParameterError(name, log_weights, "must not contain NaN or +inf (-inf marks an excluded candidate)")
    if np.isneginf(array).all(axis=-1).any():
        raise ParameterError(name, log_weights, "every row needs at least one finite log-weight")
    return array


def gumbel_max_sample(log_weights, rng: np.random.Generator, size=None) -> np.ndarray:
    """Sample indices with probability softmax(log_weights) along the last axis.

    ``log_weights`` has shape ``(*batch, K)``; the result has shape
    ``(*size, *batch)`` (integers in [0, K)).  -inf marks an excluded candidate.
    """
    log_weights = _check_log_weights("log_weights", log_weights)
    rng = check_rng("rng", rng)
    shape = check_size(size) + log_weights.shape
    return np.argmax(log_weights + rng.gumbel(size=shape), axis=-1)


def softmax_sampling_epsilon(sensitivity: float, temperature: float) -> float:
    """epsilon of softmax sampling at ``temperature`` from scores of the given sensitivity: 2 sensitivity / temperature."""
    sensitivity = check_positive("sensitivity", sensitivity, allow_zero=True)
    temperature = check_positive("temperature", temperature)
    return 2.0 * sensitivity / temperature


class Exponential:
    """Exponential mechanism over the last axis of a score array.

    ``monotone=True`` (every score moves in the same direction between
    neighbours, e.g. counts under add/remove) allows weights
    exp(epsilon u / sensitivity) for the same epsilon.
    """

    def __init__(self, sensitivity: float, epsilon: float, unit: str = "record",
                 neighbouring: str = "add/remove", monotone: bool = False) -> None:
        self.sensitivity = check_positive("sensitivity", sensitivity)
        self.epsilon = check_positive("epsilon", epsilon)
        if not isinstance(monotone, bool):
            raise ParameterError("monotone", monotone, "must be True or False")
        self.monotone = monotone
        self.unit = check_unit(unit)
        self.neighbouring = check_neighbouring(neighbouring)
        # weights exp(u / scale): scale is the temperature on the scores
        self.scale = (1.0 if monotone else 2.0) * self.sensitivity / self.epsilon
        self.temperature = self.scale
        self.contract = PrivacyContract(
            mechanism="Exponential", neighbouring=self.neighbouring, unit=self.unit, measure="bounded-range",
            sensitivity=self.sensitivity, epsilon=self.epsilon, sensitivity_norm="max over candidates",
            kind="exponential", parameters={"scale": self.scale, "monotone": monotone},
            note=f"samples y with probability proportional to exp(score / {self.scale:.6g})"
                 + (" (monotone scores)" if monotone else ""))

    @classmethod
    def from_temperature(cls, sensitivity: float, temperature: float, **kwargs) -> "Exponential":
        """Softmax sampling at ``temperature`` viewed as the exponential mechanism."""
        return cls(sensitivity, softmax_sampling_epsilon(sensitivity, temperature), **kwargs)

    def log_probabilities(self, scores) -> np.ndarray:
        """log P(y) along the last axis (log-sum-exp normalised; never overflows)."""
        scores = _check_log_weights("scores", scores)
        logits = scores / self.scale
        return logits - logsumexp(logits, axis=-1, keepdims=True)

    def sample(self, scores, rng: np.random.Generator, size=None) -> np.ndarray:
        """Indices drawn from the mechanism; shape ``(*size, *scores.shape[:-1])``."""
        scores = _check_log_weights("scores", scores)
        return gumbel_max_sample(scores / self.scale, rng, size=size)

    def __repr__(self) -> str:
        return f"Exponential(sensitivity={self.sensitivity!r}, epsilon={self.epsilon!r})"


class NoisyTopK:
    """Report the indices of the k largest noisy counts (one shot, Gumbel noise).

    Adding Gumbel(2 sensitivity k / epsilon) noise and keeping the top k is
    distributed exactly as k rounds of the exponential mechanism with epsilon/k
    each, without replacement {cite}`durfee2019practical`: epsilon-DP in total
    and k (epsilon/k)^2 / 8 = epsilon^2 / (8k) zCDP.  ``sensitivity`` bounds the
    change of any one count (1 for histograms where each unit adds to one bin).
    """

    def __init__(self, sensitivity: float, epsilon: float, k: int = 1, unit: str = "record",
                 neighbouring: str = "add/remove") -> None:
        self.sensitivity = check_positive("sensitivity", sensitivity)
        self.epsilon = check_positive("epsilon", epsilon)
        self.k = check_int("k", k, minimum=1)
        self.unit = check_unit(unit)
        self.neighbouring = check_neighbouring(neighbouring)
        self.scale = 2.0 * self.sensitivity * self.k / self.epsilon
        rho = self.epsilon ** 2 / (8.0 * self.k)
        self.contract = PrivacyContract(
            mechanism=f"NoisyTopK(k={self.k})", neighbouring=self.neighbouring, unit=self.unit, measure="zcdp",
            sensitivity=self.sensitivity, rho=rho, epsilon=self.epsilon, sensitivity_norm="max over bins",
            kind="noisy_top_k", parameters={"k": self.k, "gumbel_scale": self.scale},
            note=f"top-{self.k} of counts + Gumbel(scale={self.scale:.6g}); = {self.k} exponential mechanisms "
                 f"at epsilon/{self.k} (pure epsilon={self.epsilon:.6g} total)")

    def select(self, counts, rng: np.random.Generator, size=None) -> np.ndarray:
        """Indices of the k largest noisy counts, best first: shape ``(*size, *batch, k)``."""
        counts = check_finite_array("counts", counts)
        if counts.ndim == 0 or counts.shape[-1] < self.k:
            raise ParameterError("counts", counts, f"needs at least k={self.k} entries along the last axis")
        rng = check_rng("rng", rng)
        noisy = counts + rng.gumbel(0.0, self.scale, size=check_size(size) + counts.shape)
        if self.k == 1:
            return np.argmax(noisy, axis=-1)[..., None]
        top = np.argpartition(-noisy, self.k - 1, axis=-1)[..., : self.k]
        order = np.argsort(-np.take_along_axis(noisy, top, axis=-1), axis=-1)
        return np.take_along_axis(top, order, axis=-1)

    def __repr__(self) -> str:
        return f"NoisyTopK(sensitivity={self.sensitivity!r}, epsilon={self.epsilon!r}, k={self.k})"
