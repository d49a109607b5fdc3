"""The Laplace mechanism, sampled exactly: discrete Laplace noise on a declared grid.

Guarantee: if ``f`` has L1 sensitivity Delta under the stated neighbouring
relation, releasing ``f(D)`` plus Laplace noise of scale b per coordinate is
(Delta / b)-DP (pure) {cite}`dwork2006calibrating`.  The same holds for
integer-valued ``f`` and the discrete Laplace distribution on the integers,
P(k) proportional to ``exp(-|k| / b)`` {cite}`canonne2020discrete`, which
:mod:`dpkit.privacy.exact` samples exactly.

Release mode (:class:`Laplace`):

* an integer statistic (a histogram, a count) is released as itself plus
  discrete Laplace noise: no rounding, sensitivity Delta;
* a real statistic of ``dimension`` d coordinates is rounded to the grid
  gamma first (each coordinate moves by at most gamma/2), so neighbours differ
  by at most Delta + d gamma in L1; that sum is the contract's sensitivity and
  the noise is discrete Laplace on the grid, scale b = (Delta + d gamma)/epsilon.

Either way the output is a multiple of the grid whose distribution is exactly
the one in the proof.  :class:`TextbookLaplace` adds numpy's floating-point
Laplace sample instead; ``value + noise`` in doubles then leaks the value
through its lowest bits {cite}`mironov2012significance` (the sensitivity
chapter measures it).  It is for teaching only.
"""

from __future__ import annotations

import numpy as np

from dpkit.validate import ParameterError, check_finite_array, check_int, check_positive, check_rng

from dpkit.privacy._common import check_neighbouring, check_size, check_unit
from dpkit.privacy.contract import PrivacyContract
from dpkit.privacy.exact import default_grid, discrete_laplace, rational_at_least


def _calibrate(sensitivity: float, epsilon, scale) -> tuple[float, float]:
    if (epsilon is None) == (scale is None):
        raise ParameterError("epsilon", epsilon, "give exactly one of epsilon and scale "
                             f"(got epsilon={epsilon!r}, scale={scale!r})")
    if epsilon is not None:
        epsilon = check_positive("epsilon", epsilon)
        return epsilon, sensitivity / epsilon
    scale = check_positive("scale", scale)
    return sensitivity / scale, scale


class Laplace:
    """Laplace mechanism (release mode: exact discrete Laplace), calibrated by ``epsilon`` or ``scale``.

    ``dimension=None``: the statistic is integer-valued on the ``grid``
    (default 1); values off the grid are refused.  ``dimension=d``: a real
    statistic of at most d coordinates, rounded to ``grid`` (default: the power
    of two just below Delta / d * 2^-20); the contract's sensitivity is then
    Delta + d * grid.  ``.epsilon`` and ``.scale`` (value units) describe the
    noise; the sampler uses a rational scale at least ``.scale``.
    """

    def __init__(self, sensitivity: float, epsilon: float | None = None, scale: float | None = None,
                 unit: str = "record", neighbouring: str = "add/remove", grid: float | None = None,
                 dimension: int | None = None) -> None:
        self.sensitivity = check_positive("sensitivity", sensitivity)
        if dimension is None:
            self.dimension = None
            self.grid = 1.0 if grid is None else check_positive("grid", grid)
            self.noise_sensitivity = self.sensitivity
        else:
            self.dimension = check_int("dimension", dimension, minimum=1)
            self.grid = default_grid(self.sensitivity / self.dimension) if grid is None \
                else check_positive("grid", grid)
            self.noise_sensitivity = self.sensitivity + self.dimension * self.grid
        self.epsilon, self.scale = _calibrate(self.noise_sensitivity, epsilon, scale)
        self.unit = check_unit(unit)
        self.neighbouring = check_neighbouring(neighbouring)
        self._grid_scale = rational_at_least(self.scale / self.grid)
        rounding = ("integer statistic, no rounding" if self.dimension is None else
                    f"{self.dimension} coordinates rounded to the grid: sensitivity {self.sensitivity:.6g} "
                    f"+ {self.dimension} x {self.grid:.6g}")
        self.contract = PrivacyContract(
            mechanism="Laplace", neighbouring=self.neighbouring, unit=self.unit, measure="pure",
            sensitivity=self.noise_sensitivity, epsilon=self.epsilon, sensitivity_norm="L1",
            kind="laplace", parameters={"noise": "discrete_laplace", "scale": self.scale, "grid": self.grid,
                                        "dimension": self.dimension},
            note=f"discrete Laplace(scale={self.scale:.6g}) on the grid {self.grid:.6g} ({rounding})")

    def _on_grid(self, values: np.ndarray) -> np.ndarray:
        steps = values / self.grid
        if self.dimension is None:
            if not np.all(steps == np.rint(steps)):
                raise ParameterError("values", values, f"are not multiples of grid={self.grid:g}: give dimension= "
                                     "to round a real statistic (the rounding adds dimension*grid to the sensitivity)")
        elif values.size > self.dimension:
            raise ParameterError("values", values, f"have {values.size} coordinates, more than the declared "
                                 f"dimension={self.dimension} the sensitivity was computed for")
        if np.any(np.abs(steps) >= 2.0 ** 52):
            raise ParameterError("values", values, f"are too large for the grid {self.grid:g} (|value/grid| < 2^52)")
        return np.rint(steps).astype(np.int64)

    def release(self, values, rng: np.random.Generator, size=None) -> np.ndarray:
        """``values`` (on or rounded to the grid) plus exact discrete Laplace noise, as float64.

        ``size`` (int or tuple) asks for that many independent releases: the
        result has shape ``(*size, *values.shape)``.
        """
        values = check_finite_array("values", values)
        rng = check_rng("rng", rng)
        steps = self._on_grid(values)
        noise = discrete_laplace(self._grid_scale, rng, size=check_size(size) + values.shape)
        return (steps + noise).astype(np.float64) * self.grid

    def log_density_ratio(self, output, value, neighbour_value) -> np.ndarray:
        """Privacy loss log p(output | value) - log p(output | neighbour_value), summed over coordinates.

        Exact for outputs on the grid and values on the grid (the discrete
        Laplace's log-probability is ``-|k| / b`` plus a constant).
        """
        output = check_finite_array("output", output)
        value = check_finite_array("value", value)
        neighbour_value = check_finite_array("neighbour_value", neighbour_value)
        loss = (np.abs(output - neighbour_value) - np.abs(output - value)) / self.scale
        return loss.sum(axis=-1) if loss.ndim else loss

    def __repr__(self) -> str:
        return (f"Laplace(sensitivity={self.sensitivity!r}, epsilon={self.epsilon!r}, scale={self.scale!r}, "
                f"grid={self.grid!r}, dimension={self.dimension!r})")


class TextbookLaplace(Laplace):
    """Teaching version: ``value + numpy's float Laplace sample``.  NOT for releases.

    The real-valued proof does not cover floating-point outputs: the low bits
    of ``value + noise`` reveal ``value`` {cite}`mironov2012significance`.
    """

    def __init__(self, sensitivity: float, epsilon: float | None = None, scale: float | None = None,
                 unit: str = "record", neighbouring: str = "add/remove") -> None:
        self.sensitivity = check_positive("sensitivity", sensitivity)
        self.dimension, self.grid, self.noise_sensitivity = None, 0.0, self.sensitivity
        self.epsilon, self.scale = _calibrate(self.sensitivity, epsilon, scale)
        self.unit = check_unit(unit)
        self.neighbouring = check_neighbouring(neighbouring)
        self.contract = PrivacyContract(
            mechanism="Laplace (textbook float; teaching only)", neighbouring=self.neighbouring, unit=self.unit,
            measure="pure", sensitivity=self.sensitivity, epsilon=self.epsilon, sensitivity_norm="L1",
            kind="laplace", parameters={"noise": "laplace", "scale": self.scale},
            note=f"float Laplace(scale={self.scale:.6g}) added to every coordinate; the low bits of the output "
                 "leak the input (Mironov 2012): not a release mechanism")

    def release(self, values, rng: np.random.Generator, size=None) -> np.ndarray:
        """``values`` plus numpy's floating-point Laplace(scale) noise (leaks low bits)."""
        values = check_finite_array("values", values)
        rng = check_rng("rng", rng)
        return values + rng.laplace(0.0, self.scale, size=check_size(size) + values.shape)

    def __repr__(self) -> str:
        return f"TextbookLaplace(sensitivity={self.sensitivity!r}, epsilon={self.epsilon!r}, scale={self.scale!r})"
