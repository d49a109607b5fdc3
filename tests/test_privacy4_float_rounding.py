"""privacy-4 N10 (INFO): InvisibleInk's ``u = z_pub + D/s`` is formed in float64 before it is rounded to the grid.

Between neighbours the two ``u`` differ by ``d/s`` plus a few units in the last place of ``|u|``; after
rounding their difference can exceed the contract's ``C/s + grid`` by those units only. The finding asked
for the effect to be stated; :mod:`dpkit.privacy.invisibleink` states it, and this test measures it on the
rounding the sampler uses (``round(u / grid) * grid``), with neighbours whose difference saturates ``±C``.
"""

from __future__ import annotations

import numpy as np
import pytest

import dpkit.privacy.invisibleink as invisibleink
from dpkit.privacy.private_prediction import token_grid
from dpkit.privpred.invisibleink import invisibleink_scores


def test_n10_the_float_effect_is_stated():
    doc = " ".join(invisibleink.__doc__.split())
    assert "``u`` is formed in float64 before it is rounded" in doc and "at most 1e-11 of ``epsilon``" in doc


@pytest.mark.parametrize("s, clip", [(8.0, 2.0), (4.0, 2.0), (12.5, 1.7), (64.0, 0.0641), (8.0, 0.25)])
def test_n10_the_rounded_difference_exceeds_the_contract_by_float_units_only(s, clip):
    rng = np.random.default_rng(7)
    grid = token_grid(s, clip)
    worst = 0.0
    for _ in range(200):
        z_pub = rng.normal(0.0, 12.0, size=4096).clip(-40, 40)
        d_sum = rng.uniform(-clip, clip, size=(3, 4096)).sum(axis=0)           # the batch without x
        x = np.where(rng.random(4096) < 0.5, clip, -clip)                       # x saturates the clip
        u = invisibleink_scores(d_sum, z_pub, s)
        u_plus = invisibleink_scores(d_sum + x, z_pub, s)
        moved = np.abs(np.round(u_plus / grid) * grid - np.round(u / grid) * grid)
        worst = max(worst, float(moved.max() - (clip / s + grid)))
    ulp = np.spacing(40.0 + 4 * clip)
    assert worst <= 4 * ulp                                                     # a few ulps of |u|, never more
    assert max(worst, 0.0) / (clip / s) <= 1e-11                               # <= 1e-11 of epsilon
