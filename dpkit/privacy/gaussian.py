"""The Gaussian mechanism and its two calibrations.

Adding N(0, sigma^2) noise to a function of L2 sensitivity ``sensitivity`` is
(sensitivity^2 / (2 sigma^2))-zCDP {cite}`bun2016concentrated`.  To reach a
target (epsilon, delta):

* classical: sigma = sensitivity sqrt(2 log(1.25/delta)) / epsilon
  {cite}`dwork2014algorithmic` (proved for epsilon < 1);
* analytic: the smallest sigma with
  Phi(D/(2 sigma) - eps sigma/D) - e^eps Phi(-D/(2 sigma) - eps sigma/D) <= delta
  {cite}`balle2018improving` (Theorem 8; exact, valid for every epsilon > 0).
"""

from __future__ import annotations

import math

import numpy as np
from scipy.optimize import brentq
from scipy.special import log_ndtr

from dpkit.validate import (ParameterError, check_choice, check_finite_array, check_positive,
                            check_probability, check_rng)

from dpkit.privacy._common import check_neighbouring, check_size, check_unit
from dpkit.privacy.contract import PrivacyContract

CALIBRATIONS = ("analytic", "classical")


def gaussian_delta(sigma: float, sensitivity: float, epsilon: float) -> float:
    """The exact delta of the Gaussian mechanism at ``epsilon`` (Balle & Wang 2018, Thm 8),
    computed in log space so that tiny deltas keep their relative precision."""
    sigma = check_positive("sigma", sigma)
    sensitivity = check_positive("sensitivity", sensitivity)
    epsilon = check_positive("epsilon", epsilon, allow_zero=True)
    a = sensitivity / (2 * sigma) - epsilon * sigma / sensitivity
    b = -sensitivity / (2 * sigma) - epsilon * sigma / sensitivity
    log_pa, log_pb = float(log_ndtr(a)), float(log_ndtr(b))
    gap = epsilon + log_pb - log_pa  # <= 0
    if gap >= 0:
        return 0.0
    return float(math.exp(log_pa) * -math.expm1(gap))


def classical_sigma(sensitivity: float, epsilon: float, delta: float) -> float:
    """sigma = sensitivity * sqrt(2 log(1.25 / delta)) / epsilon (Dwork & Roth, Thm A.1)."""
    sensitivity = check_positive("sensitivity", sensitivity)
    epsilon = check_positive("epsilon", epsilon)
    delta = check_probability("delta", delta)
    return sensitivity * math.sqrt(2.0 * math.log(1.25 / delta)) / epsilon


def analytic_sigma(sensitivity: float, epsilon: float, delta: float) -> float:
    """The smallest sigma meeting (epsilon, delta)-DP exactly (Balle & Wang 2018, Thm 8)."""
    sensitivity = check_positive("sensitivity", sensitivity)
    epsilon = check_positive("epsilon", epsilon)
    delta = check_probability("delta", delta)
    f = lambda log_s: math.log(max(gaussian_delta(math.exp(log_s), sensitivity, epsilon), 1e-320)) - math.log(delta)  # noqa: E731
    lo, hi = math.log(sensitivity) - 10.0, math.log(sensitivity) + 10.0
    while f(lo) < 0:
        lo -= 10.0
    while f(hi) > 0:
        hi += 10.0
    log_s = brentq(f, lo, hi, xtol=1e-13, maxiter=500)
    sigma = math.exp(log_s)
    while gaussian_delta(sigma, sensitivity, epsilon) > delta:
        sigma *= 1 + 1e-12
    return sigma


def gaussian_rho(sensitivity: float, sigma: float) -> float:
    """zCDP cost of Gaussian noise: sensitivity^2 / (2 sigma^2)."""
    sensitivity = check_positive("sensitivity", sensitivity, allow_zero=True)
    sigma = check_positive("sigma", sigma)
    return sensitivity * sensitivity / (2.0 * sigma * sigma)


class Gaussian:
    """Gaussian mechanism given ``sigma``, or calibrated to (``epsilon``, ``delta``).

    The contract's measure is zCDP (rho = sensitivity^2 / (2 sigma^2)); when
    calibrated to (epsilon, delta) those numbers are recorded in the contract
    too.  ``sensitivity`` is the L2 sensitivity.
    """

    def __init__(self, sensitivity: float, sigma: float | None = None, epsilon: float | None = None,
                 delta: float | None = None, calibration: str = "analytic", unit: str = "record",
                 neighbouring: str = "add/remove") -> None:
        self.sensitivity = check_positive("sensitivity", sensitivity)
        self.calibration = check_choice("calibration", calibration, CALIBRATIONS)
        if sigma is not None:
            if epsilon is not None or delta is not None:
                raise ParameterError("sigma", sigma, "give either sigma or (epsilon, delta), not both")
            self.sigma = check_positive("sigma", sigma)
            self.epsilon, self.delta = None, None
        else:
            if epsilon is None or delta is None:
                raise ParameterError("epsilon" if epsilon is None else "delta", None,
                                     "give sigma, or both epsilon and delta")
            self.epsilon = check_positive("epsilon", epsilon)
            self.delta = check_probability("delta", delta)
            calibrate = analytic_sigma if self.calibration == "analytic" else classical_sigma
            self.sigma = calibrate(self.sensitivity, self.epsilon, self.delta)
            exact = gaussian_delta(self.sigma, self.sensitivity, self.epsilon)
            if exact > self.delta:
                # the classical formula is proved for epsilon < 1 and fails for large epsilon
                raise ParameterError("epsilon", self.epsilon,
                                     f"the {self.calibration} calibration sigma={self.sigma:.4g} only reaches "
                                     f"delta={exact:.3g} > {self.delta:.3g} here; use calibration='analytic'")
        self.scale = self.sigma
        self.unit = check_unit(unit)
        self.neighbouring = check_neighbouring(neighbouring)
        self.rho = gaussian_rho(self.sensitivity, self.sigma)
        note = f"noise N(0, {self.sigma:.6g}^2) added to every coordinate"
        if self.epsilon is not None:
            note += f"; calibrated ({self.calibration}) to epsilon={self.epsilon:.6g}, delta={self.delta:.3g}"
        self.contract = PrivacyContract(
            mechanism="Gaussian", neighbouring=self.neighbouring, unit=self.unit, measure="zcdp",
            sensitivity=self.sensitivity, rho=self.rho, epsilon=self.epsilon,
            delta=self.delta or 0.0, sensitivity_norm="L2", note=note, kind="gaussian",
            parameters={"noise": "gaussian", "scale": self.sigma, "calibration": self.calibration})

    def release(self, values, rng: np.random.Generator, size=None) -> np.ndarray:
        """``values`` plus N(0, sigma^2) noise; ``size`` gives ``(*size, *values.shape)`` releases."""
        values = check_finite_array("values", values)
        rng = check_rng("rng", rng)
        return values + rng.normal(0.0, self.sigma, size=check_size(size) + values.shape)

    def delta_at(self, epsilon: float) -> float:
        """The exact delta this noise level gives at ``epsilon``."""
        return gaussian_delta(self.sigma, self.sensitivity, epsilon)

    def __repr__(self) -> str:
        return f"Gaussian(sensitivity={self.sensitivity!r}, sigma={self.sigma!r})"
