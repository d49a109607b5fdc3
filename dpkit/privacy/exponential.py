"""The exponential mechanism, computed in log space.

Given scores u(D, y) whose sensitivity (largest change of any one score
between neighbours) is ``sensitivity``, sampling y with probability
proportional to exp(epsilon u(D, y) / (2 sensitivity)) is epsilon-DP
{cite}`mcsherry2007mechanism` and, more sharply, epsilon-bounded-range, hence
(epsilon^2 / 8)-zCDP {cite}`cesar2021bounding`.

Softmax sampling at temperature tau from logits z is exactly this mechanism
with scores z and epsilon / (2 sensitivity) = 1 / tau, i.e.
epsilon = 2 sensitivity / tau {cite}`amin2024private`.

Release mode samples exactly (:func:`dpkit.privacy.exact.exact_exponential_sample`):
the scores are quantized to a declared grid (default: the power of two just
below sensitivity * 2^-30), so each quantized score moves by at most
sensitivity + grid between neighbours, and that sum is the contract's
sensitivity; then an index is drawn with exactly the probabilities
exp(q_y grid / scale) / sum.  No exponential of a large score is formed.

:func:`gumbel_max_sample` is the textbook Gumbel-max trick (argmax of log
weights plus i.i.d. float Gumbel noise), kept for teaching: numpy's Gumbel
draw lies in [-3.6, 36.7], so a candidate whose log-weight is more than about
40 below the best has probability exactly 0 instead of e^-40, and the
privacy-loss ratio near that edge is far above the claimed one.
"""

from __future__ import annotations

import numpy as np
from scipy.special import logsumexp

from dpkit.validate import ParameterError, check_finite_array, check_int, check_positive, check_rng

from dpkit.privacy._common import check_neighbouring, check_size, check_unit
from dpkit.privacy.contract import PrivacyContract
from dpkit.privacy.exact import default_grid, exact_exponential_sample, quantize

EXPONENTIAL_GRID_RELATIVE = 2.0 ** -30


def exponential_grid(sensitivity: float) -> float:
    """The default public grid for quantized scores: a power of two <= sensitivity * 2^-30."""
    return default_grid(sensitivity, EXPONENTIAL_GRID_RELATIVE)


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
    """Teaching version (float Gumbel-max): indices with probability about softmax(log_weights).

    Not exact: numpy's bounded Gumbel draw gives probability 0 to candidates
    more than ~40 below the best; releases use :func:`exact_exponential_sample`.

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
    """Exponential mechanism over the last axis of a score array (release mode: exact sampling).

    ``monotone=True`` (every score moves in the same direction between
    neighbours, e.g. counts under add/remove) allows weights
    exp(epsilon u / sensitivity) for the same epsilon.  ``grid`` is the public
    quantization step of the scores (default :func:`exponential_grid`); the
    contract's sensitivity is ``sensitivity + grid``.
    """

    def __init__(self, sensitivity: float, epsilon: float, unit: str = "record",
                 neighbouring: str = "add/remove", monotone: bool = False, grid: float | None = None) -> None:
        self.sensitivity = check_positive("sensitivity", sensitivity)
        self.epsilon = check_positive("epsilon", epsilon)
        if not isinstance(monotone, bool):
            raise ParameterError("monotone", monotone, "must be True or False")
        self.monotone = monotone
        self.unit = check_unit(unit)
        self.neighbouring = check_neighbouring(neighbouring)
        self.grid = exponential_grid(self.sensitivity) if grid is None else check_positive("grid", grid)
        self.noise_sensitivity = self.sensitivity + self.grid
        # weights exp(q grid / scale): scale is the temperature on the (quantized) scores
        self.scale = (1.0 if monotone else 2.0) * self.noise_sensitivity / self.epsilon
        self.temperature = self.scale
        self.contract = PrivacyContract(
            mechanism="Exponential", neighbouring=self.neighbouring, unit=self.unit,
            measure="bounded-range", sensitivity=self.noise_sensitivity, epsilon=self.epsilon,
            sensitivity_norm="max over candidates",
            kind="exponential", parameters={"scale": self.scale, "monotone": monotone, "grid": self.grid},
            note=f"scores rounded to the grid {self.grid:.6g} (sensitivity {self.sensitivity:.6g} + grid); "
                 f"samples y with probability proportional to exp(score / {self.scale:.6g})"
                 + (" (monotone scores)" if monotone else ""))

    @classmethod
    def from_temperature(cls, sensitivity: float, temperature: float, grid: float | None = None,
                         **kwargs) -> "Exponential":
        """Softmax sampling at ``temperature`` (of the quantized scores) viewed as the exponential mechanism."""
        sensitivity = check_positive("sensitivity", sensitivity)
        grid = exponential_grid(sensitivity) if grid is None else check_positive("grid", grid)
        return cls(sensitivity, softmax_sampling_epsilon(sensitivity + grid, temperature), grid=grid, **kwargs)

    def quantized(self, scores) -> np.ndarray:
        """The scores the mechanism actually uses: round(score / grid) * grid (-inf kept)."""
        scores = _check_log_weights("scores", scores)
        finite = np.isfinite(scores)
        return np.where(finite, quantize(np.where(finite, scores, 0.0), self.grid) * self.grid, -np.inf)

    def log_probabilities(self, scores) -> np.ndarray:
        """log P(y) along the last axis of the quantized mechanism (log-sum-exp normalised)."""
        logits = self.quantized(scores) / self.scale
        return logits - logsumexp(logits, axis=-1, keepdims=True)

    def sample(self, scores, rng: np.random.Generator, size=None) -> np.ndarray:
        """Indices drawn exactly from the mechanism; shape ``(*size, *scores.shape[:-1])``."""
        scores = _check_log_weights("scores", scores)
        return exact_exponential_sample(scores, self.scale, rng, self.grid, size=size)

    def __repr__(self) -> str:
        return f"Exponential(sensitivity={self.sensitivity!r}, epsilon={self.epsilon!r}, grid={self.grid!r})"


class NoisyTopK:
    """Report the indices of the k largest noisy counts: k exact exponential draws without replacement.

    Adding Gumbel(2 sensitivity k / epsilon) noise and keeping the top k is
    distributed exactly as k rounds of the exponential mechanism with epsilon/k
    each, without replacement {cite}`durfee2019practical`: epsilon-DP in total
    and k (epsilon/k)^2 / 8 = epsilon^2 / (8k) zCDP.  Release mode runs the k
    rounds with the exact sampler on counts quantized to ``grid`` (sensitivity
    + grid, as for :class:`Exponential`).  ``sensitivity`` bounds the change of
    any one count (1 for histograms where each unit adds to one bin).
    """

    def __init__(self, sensitivity: float, epsilon: float, k: int = 1, unit: str = "record",
                 neighbouring: str = "add/remove", grid: float | None = None) -> None:
        self.sensitivity = check_positive("sensitivity", sensitivity)
        self.epsilon = check_positive("epsilon", epsilon)
        self.k = check_int("k", k, minimum=1)
        self.unit = check_unit(unit)
        self.neighbouring = check_neighbouring(neighbouring)
        self.grid = exponential_grid(self.sensitivity) if grid is None else check_positive("grid", grid)
        self.noise_sensitivity = self.sensitivity + self.grid
        self.scale = 2.0 * self.noise_sensitivity * self.k / self.epsilon
        rho = self.epsilon ** 2 / (8.0 * self.k)
        self.contract = PrivacyContract(
            mechanism=f"NoisyTopK(k={self.k})", neighbouring=self.neighbouring, unit=self.unit, measure="zcdp",
            sensitivity=self.noise_sensitivity, rho=rho, epsilon=self.epsilon, sensitivity_norm="max over bins",
            kind="noisy_top_k", parameters={"k": self.k, "gumbel_scale": self.scale, "grid": self.grid},
            note=f"{self.k} exact exponential mechanisms at epsilon/{self.k} without replacement on counts rounded "
                 f"to {self.grid:.6g} (= top-{self.k} of counts + Gumbel(scale={self.scale:.6g}); pure "
                 f"epsilon={self.epsilon:.6g} total)")

    def select(self, counts, rng: np.random.Generator, size=None) -> np.ndarray:
        """Indices of the k selected counts, in selection order: shape ``(*size, *batch, k)``."""
        counts = check_finite_array("counts", counts)
        if counts.ndim == 0 or counts.shape[-1] < self.k:
            raise ParameterError("counts", counts, f"needs at least k={self.k} entries along the last axis")
        rng = check_rng("rng", rng)
        shape = check_size(size)
        scores = np.broadcast_to(counts, shape + counts.shape).astype(np.float64)
        chosen = []
        for _ in range(self.k):
            pick = exact_exponential_sample(scores, self.scale, rng, self.grid)
            chosen.append(pick)
            np.put_along_axis(scores, np.asarray(pick)[..., None], -np.inf, axis=-1)
        return np.stack(chosen, axis=-1)

    def __repr__(self) -> str:
        return f"NoisyTopK(sensitivity={self.sensitivity!r}, epsilon={self.epsilon!r}, k={self.k})"
