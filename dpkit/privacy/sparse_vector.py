"""AboveThreshold (the sparse vector technique), sampled exactly on a grid.

Noisy threshold theta + Laplace(sigma); each query value q_i is compared as
q_i + Laplace(2 sigma) >= noisy threshold; the mechanism halts at the first
query above.  For queries of sensitivity ``sensitivity`` (chosen adaptively),
releasing the index of the first query above is (2 sensitivity / sigma)-DP
{cite}`dwork2009complexity`, hence 2 sensitivity^2 / sigma^2 zCDP; with
sensitivity 1/s this is Lemma 5 of {cite}`amin2024private` (rho = 2/(s sigma)^2).
One run (up to and including its first "above", or to the end of the queries) costs
epsilon once; the "below" answers inside it are free.

Release mode works on a public grid (:func:`svt_grid`): the threshold and every
query are rounded to it, and the noise is exact discrete Laplace on it
{cite}`canonne2020discrete`, so every comparison is between integers.  Rounding
moves a query by at most grid/2, so neighbours' rounded queries differ by at most
sensitivity + grid, and the proof's shifts are by whole grid steps; the contract
states epsilon = 2 (sensitivity + grid) / sigma.  Float Laplace noise, whose
support is bounded, would decide some comparisons with probability exactly 0 or 1.
"""

from __future__ import annotations

import numpy as np

from dpkit.validate import ParameterError, check_finite_array, check_positive, check_real, check_rng

from dpkit.privacy._common import check_neighbouring, check_size, check_unit
from dpkit.privacy.contract import PrivacyContract
from dpkit.privacy.exact import default_grid, discrete_laplace, quantize, rational_at_least


def svt_grid(sensitivity: float, sigma: float) -> float:
    """The public grid of release-mode AboveThreshold: about 2^-30 of the sensitivity (and never so fine
    that sigma exceeds 2^45 grid steps)."""
    sensitivity = check_positive("sensitivity", sensitivity)
    sigma = check_positive("sigma", sigma)
    return max(default_grid(sensitivity, 2.0 ** -30), default_grid(sigma, 2.0 ** -45))


class AboveThreshold:
    """Sparse vector: threshold noise Laplace(sigma), query noise Laplace(2 sigma), exact on ``grid``."""

    def __init__(self, threshold: float, sigma: float, sensitivity: float = 1.0, unit: str = "record",
                 neighbouring: str = "add/remove", query_noise: bool = True, grid: float | None = None) -> None:
        if not isinstance(query_noise, bool):
            raise ParameterError("query_noise", query_noise, "must be True or False")
        # query_noise=False exists only for the audit's bug zoo: without the Laplace(2 sigma)
        # on each query the mechanism is NOT private, whatever its contract says.
        self.query_noise = query_noise
        self.threshold = check_real("threshold", threshold)
        self.sigma = check_positive("sigma", sigma)
        self.sensitivity = check_positive("sensitivity", sensitivity)
        self.unit = check_unit(unit)
        self.neighbouring = check_neighbouring(neighbouring)
        self.grid = svt_grid(self.sensitivity, self.sigma) if grid is None else check_positive("grid", grid)
        self.scale = self.sigma
        self.epsilon = 2.0 * (self.sensitivity + self.grid) / self.sigma
        self._threshold_steps = int(quantize(self.threshold, self.grid))
        self._threshold_scale = rational_at_least(self.sigma / self.grid)
        self._query_scale = rational_at_least(2.0 * self.sigma / self.grid)
        self.contract = PrivacyContract(
            mechanism="AboveThreshold", neighbouring=self.neighbouring, unit=self.unit, measure="pure",
            sensitivity=self.sensitivity + self.grid, epsilon=self.epsilon, sensitivity_norm="per query",
            kind="above_threshold", parameters={"sigma": self.sigma, "threshold": self.threshold, "grid": self.grid},
            note=f"threshold + Laplace({self.sigma:.6g}), queries + Laplace({2 * self.sigma:.6g}), exact discrete "
                 f"noise on the grid {self.grid:.3g} (sensitivity + grid); paid once per run, which ends at the "
                 "first query above")

    def _query_noise(self, rng: np.random.Generator, shape) -> np.ndarray:
        if not self.query_noise:
            return np.zeros(shape, dtype=np.int64)
        return discrete_laplace(self._query_scale, rng, size=shape)

    def run(self, query_values, rng: np.random.Generator, size=None) -> np.ndarray:
        """Index of the first query whose noisy value reaches the noisy threshold, -1 if none.

        ``query_values`` has shape ``(*batch, m)`` (non-adaptive queries, for
        tests and audits); result shape ``(*size, *batch)``.
        """
        values = check_finite_array("query_values", query_values)
        if values.ndim == 0:
            raise ParameterError("query_values", query_values, "needs the queries along the last axis")
        rng = check_rng("rng", rng)
        shape = check_size(size) + values.shape
        noisy_threshold = self._threshold_steps + discrete_laplace(self._threshold_scale, rng,
                                                                   size=shape[:-1] + (1,))
        above = quantize(values, self.grid) + self._query_noise(rng, shape) >= noisy_threshold
        first = np.argmax(above, axis=-1)
        return np.where(above.any(axis=-1), first, -1)

    def session(self, rng: np.random.Generator) -> "SparseVectorSession":
        """A streaming run for adaptive queries (draws the noisy threshold now)."""
        return SparseVectorSession(self, check_rng("rng", rng))

    def __repr__(self) -> str:
        return f"AboveThreshold(threshold={self.threshold!r}, sigma={self.sigma!r}, sensitivity={self.sensitivity!r})"


class SparseVectorSession:
    """One AboveThreshold run: ``test(value)`` until it returns True, then it is spent."""

    def __init__(self, mechanism: AboveThreshold, rng: np.random.Generator) -> None:
        self.mechanism, self._rng = mechanism, rng
        self._noisy_steps = mechanism._threshold_steps + int(discrete_laplace(mechanism._threshold_scale, rng))
        self.noisy_threshold = self._noisy_steps * mechanism.grid
        self.halted = False
        self.queries = 0

    def test(self, value: float) -> bool:
        """True when round(value) + Laplace(2 sigma) >= the noisy threshold, on the grid (halts the session)."""
        if self.halted:
            raise ParameterError("session", "halted", "this AboveThreshold run already answered 'above'; "
                                 "start a new session (and pay for it)")
        value = check_real("value", value)
        self.queries += 1
        noisy = int(quantize(value, self.mechanism.grid)) + int(self.mechanism._query_noise(self._rng, ()))
        if noisy >= self._noisy_steps:
            self.halted = True
        return self.halted
