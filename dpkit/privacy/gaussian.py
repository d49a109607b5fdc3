"""The Gaussian mechanism and its two calibrations.

Adding N(0, sigma^2) noise to a function of L2 sensitivity ``sensitivity`` is
(sensitivity^2 / (2 sigma^2))-zCDP {cite}`bun2016concentrated`.  To reach a
target (epsilon, delta):

* classical: sigma = sensitivity sqrt(2 log(1.25/delta)) / epsilon
  {cite}`dwork2014algorithmic` (proved for epsilon < 1);
* analytic: the smallest sigma with
  Phi(D/(2 sigma) - eps sigma/D) - e^eps Phi(-D/(2 sigma) - eps sigma/D) <= delta
  {cite}`balle2018improving` (Theorem 8; exact, valid for every epsilon > 0).

Release mode (:class:`Gaussian`) samples the discrete Gaussian on a declared
grid exactly {cite}`canonne2020discrete`: an integer statistic gets discrete
Gaussian noise as it is; a real statistic of ``dimension`` d coordinates is
rounded to the grid first, which adds at most sqrt(d) * grid to its L2
sensitivity (stated in the contract).  Shifting by an integer vector of L2 norm
at most Delta costs Delta^2 / (2 sigma^2) zCDP for the discrete Gaussian as for
the continuous one (CKS 2020, Theorem 14); that rho is what ledgers compose.
The (epsilon, delta) calibrations above are the continuous Gaussian's.
:class:`TextbookGaussian` adds numpy's float normal sample (teaching only: its
low bits leak the value, as for Laplace {cite}`mironov2012significance`).
"""

from __future__ import annotations

import math

import numpy as np
from scipy.optimize import brentq
from scipy.special import log_ndtr

from dpkit.validate import (ParameterError, check_choice, check_finite_array, check_int, check_positive,
                            check_probability, check_rng)

from dpkit.privacy._common import check_neighbouring, check_size, check_unit
from dpkit.privacy.contract import PrivacyContract
from dpkit.privacy.exact import default_grid, discrete_gaussian, rational_at_least

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
    """Gaussian mechanism (release mode: exact discrete Gaussian) given ``sigma`` or (``epsilon``, ``delta``).

    The contract's measure is zCDP (rho = sensitivity^2 / (2 sigma^2), with the
    sensitivity after rounding); when calibrated to (epsilon, delta) those
    numbers are recorded in the contract too.  ``sensitivity`` is the L2
    sensitivity.  ``dimension=None``: integer statistic on ``grid`` (default 1);
    ``dimension=d``: real statistic rounded to ``grid`` (default: the power of
    two just below sensitivity / sqrt(d) * 2^-20), sensitivity + sqrt(d) grid.
    """

    textbook = False

    def __init__(self, sensitivity: float, sigma: float | None = None, epsilon: float | None = None,
                 delta: float | None = None, calibration: str = "analytic", unit: str = "record",
                 neighbouring: str = "add/remove", grid: float | None = None, dimension: int | None = None) -> None:
        self.sensitivity = check_positive("sensitivity", sensitivity)
        self.calibration = check_choice("calibration", calibration, CALIBRATIONS)
        if self.textbook or dimension is None:
            self.dimension = None
            self.grid = (0.0 if self.textbook else 1.0) if grid is None else check_positive("grid", grid)
            self.noise_sensitivity = self.sensitivity
        else:
            self.dimension = check_int("dimension", dimension, minimum=1)
            self.grid = default_grid(self.sensitivity / math.sqrt(self.dimension)) if grid is None \
                else check_positive("grid", grid)
            self.noise_sensitivity = self.sensitivity + math.sqrt(self.dimension) * self.grid
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
            self.sigma = calibrate(self.noise_sensitivity, self.epsilon, self.delta)
            exact = gaussian_delta(self.sigma, self.noise_sensitivity, self.epsilon)
            if exact > self.delta:
                # the classical formula is proved for epsilon < 1 and fails for large epsilon
                raise ParameterError("epsilon", self.epsilon,
                                     f"the {self.calibration} calibration sigma={self.sigma:.4g} only reaches "
                                     f"delta={exact:.3g} > {self.delta:.3g} here; use calibration='analytic'")
        self.scale = self.sigma
        self.unit = check_unit(unit)
        self.neighbouring = check_neighbouring(neighbouring)
        self.rho = gaussian_rho(self.noise_sensitivity, self.sigma)
        if self.textbook:
            name, noise = "Gaussian (textbook float; teaching only)", "gaussian"
            note = f"float noise N(0, {self.sigma:.6g}^2) added to every coordinate; its low bits leak the input"
        else:
            self._grid_sigma = rational_at_least(self.sigma / self.grid)
            name, noise = "Gaussian", "discrete_gaussian"
            rounding = ("integer statistic, no rounding" if self.dimension is None else
                        f"{self.dimension} coordinates rounded: sensitivity {self.sensitivity:.6g} + "
                        f"sqrt({self.dimension}) x {self.grid:.6g}")
            note = f"discrete Gaussian N_Z(0, {self.sigma:.6g}^2) on the grid {self.grid:.6g} ({rounding})"
        if self.epsilon is not None:
            note += f"; calibrated ({self.calibration}) to epsilon={self.epsilon:.6g}, delta={self.delta:.3g}"
        self.contract = PrivacyContract(
            mechanism=name, neighbouring=self.neighbouring, unit=self.unit, measure="zcdp",
            sensitivity=self.noise_sensitivity, rho=self.rho, epsilon=self.epsilon,
            delta=self.delta or 0.0, sensitivity_norm="L2", note=note, kind="gaussian",
            parameters={"noise": noise, "scale": self.sigma, "calibration": self.calibration,
                        "grid": self.grid, "dimension": self.dimension})

    def release(self, values, rng: np.random.Generator, size=None) -> np.ndarray:
        """``values`` (on or rounded to the grid) plus exact discrete Gaussian noise, as float64;
        ``size`` gives ``(*size, *values.shape)`` releases."""
        values = check_finite_array("values", values)
        rng = check_rng("rng", rng)
        steps = values / self.grid
        if self.dimension is None and not np.all(steps == np.rint(steps)):
            raise ParameterError("values", values, f"are not multiples of grid={self.grid:g}: give dimension= "
                                 "to round a real statistic (adds sqrt(dimension)*grid to the sensitivity)")
        if self.dimension is not None and values.size > self.dimension:
            raise ParameterError("values", values, f"have {values.size} coordinates, more than the declared "
                                 f"dimension={self.dimension}")
        if np.any(np.abs(steps) >= 2.0 ** 52):
            raise ParameterError("values", values, f"are too large for the grid {self.grid:g} (|value/grid| < 2^52)")
        noise = discrete_gaussian(self._grid_sigma, rng, size=check_size(size) + values.shape)
        return (np.rint(steps).astype(np.int64) + noise).astype(np.float64) * self.grid

    def delta_at(self, epsilon: float) -> float:
        """The exact delta of the continuous Gaussian at this noise level at ``epsilon``."""
        return gaussian_delta(self.sigma, self.noise_sensitivity, epsilon)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(sensitivity={self.sensitivity!r}, sigma={self.sigma!r})"


class TextbookGaussian(Gaussian):
    """Teaching version: ``value + numpy's float normal sample``.  NOT for releases (low bits leak)."""

    textbook = True

    def __init__(self, sensitivity: float, sigma: float | None = None, epsilon: float | None = None,
                 delta: float | None = None, calibration: str = "analytic", unit: str = "record",
                 neighbouring: str = "add/remove") -> None:
        super().__init__(sensitivity, sigma, epsilon, delta, calibration, unit, neighbouring)

    def release(self, values, rng: np.random.Generator, size=None) -> np.ndarray:
        """``values`` plus numpy's floating-point N(0, sigma^2) noise."""
        values = check_finite_array("values", values)
        rng = check_rng("rng", rng)
        return values + rng.normal(0.0, self.sigma, size=check_size(size) + values.shape)
