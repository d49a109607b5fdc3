"""Measure the floating-point leak of additive noise {cite}`mironov2012significance`.

A release ``f(D) + noise`` computed in doubles can output values that the same
mechanism on a neighbour ``f(D')`` can never output: not every double y is
``fl(f(D') + x)`` for some double x.  Such an output identifies the input, so
the privacy loss there is infinite whatever the noise scale.
:func:`unreachable_fraction` counts them: for outputs of the mechanism at value
0 it reports the share that no x gives as ``fl(shift + x)``.  The textbook float
Laplace and Gaussian samplers leave about 43% of their outputs unreachable from
a neighbour at distance 1; the exact samplers of :mod:`dpkit.privacy.exact`
output multiples of a grid, which every neighbour on the grid reaches.
"""

from __future__ import annotations

import numpy as np

from dpkit.validate import check_finite_array, check_int, check_real


def unreachable_fraction(outputs, shift: float, window: int = 8) -> float:
    """Share of ``outputs`` y for which no double x within ``window`` ulps of ``y - shift`` has
    ``shift + x == y`` in float64 (the review's low-bit test; rounding makes wider windows useless)."""
    y = check_finite_array("outputs", outputs).ravel()
    shift = check_real("shift", shift)
    window = check_int("window", window, minimum=0)
    reached = np.zeros(y.shape, dtype=bool)
    down = up = y - shift
    reached |= (down + shift) == y
    for _ in range(window):
        down, up = np.nextafter(down, -np.inf), np.nextafter(up, np.inf)
        reached |= ((down + shift) == y) | ((up + shift) == y)
    return float(np.mean(~reached)) if y.size else 0.0
