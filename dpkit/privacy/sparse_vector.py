"""AboveThreshold (the sparse vector technique).

Noisy threshold theta + Laplace(sigma); each query value q_i is compared as
q_i + Laplace(2 sigma) >= noisy threshold; the mechanism halts at the first
query above.  For queries of sensitivity ``sensitivity`` (chosen adaptively),
releasing the index of the first query above is (2 sensitivity / sigma)-DP
{cite}`dwork2009complexity`, hence 2 sensitivity^2 / sigma^2 zCDP; with
sensitivity 1/s this is Lemma 5 of {cite}`amin2024private` (rho = 2/(s sigma)^2).
One run (up to and including its first "above", or to the end of the queries) costs
epsilon once; the "below" answers inside it are free.
"""

from __future__ import annotations

import numpy as np

from dpkit.validate import ParameterError, check_finite_array, check_positive, check_real, check_rng

from dpkit.privacy._common import check_neighbouring, check_size, check_unit
from dpkit.privacy.contract import PrivacyContract


class AboveThreshold:
    """Sparse vector: threshold noise Laplace(sigma), query noise Laplace(2 sigma)."""

    def __init__(self, threshold: float, sigma: float, sensitivity: float = 1.0, unit: str = "record",
                 neighbouring: str = "add/remove", query_noise: bool = True) -> None:
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
        self.scale = self.sigma
        self.epsilon = 2.0 * self.sensitivity / self.sigma
        self.contract = PrivacyContract(
            mechanism="AboveThreshold", neighbouring=self.neighbouring, unit=self.unit, measure="pure",
            sensitivity=self.sensitivity, epsilon=self.epsilon, sensitivity_norm="per query",
            kind="above_threshold", parameters={"sigma": self.sigma, "threshold": self.threshold},
            note=f"threshold + Laplace({self.sigma:.6g}), queries + Laplace({2 * self.sigma:.6g}); "
                 "paid once per run, which ends at the first query above")

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
        noisy_threshold = self.threshold + rng.laplace(0.0, self.sigma, size=shape[:-1] + (1,))
        query_noise = rng.laplace(0.0, 2.0 * self.sigma, size=shape) if self.query_noise else 0.0
        above = values + query_noise >= noisy_threshold
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
        self.noisy_threshold = mechanism.threshold + float(rng.laplace(0.0, mechanism.sigma))
        self.halted = False
        self.queries = 0

    def test(self, value: float) -> bool:
        """True when value + Laplace(2 sigma) >= the noisy threshold (halts the session)."""
        if self.halted:
            raise ParameterError("session", "halted", "this AboveThreshold run already answered 'above'; "
                                 "start a new session (and pay for it)")
        value = check_real("value", value)
        self.queries += 1
        noise = float(self._rng.laplace(0.0, 2.0 * self.mechanism.sigma)) if self.mechanism.query_noise else 0.0
        if value + noise >= self.noisy_threshold:
            self.halted = True
        return self.halted
