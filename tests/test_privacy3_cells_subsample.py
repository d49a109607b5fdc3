"""privacy-3 N3: a private-prediction cell reads a fixed-size 40% subsample per label; what its epsilon covers
with respect to the training split is now a library function, checked against the review's numbers.

Before: the chapter summed the cells' epsilon as if each covered the split's records.
The review's bound (``cells_subsample.py``): log(1 + p(e^{2 eps} - 1)), p = k/(n_c + 1),
1.268 at epsilon 1 and 7.083 at epsilon 4 for the stored full preset (400 of 1000 per label).
"""

from __future__ import annotations

import math

import pytest

from dpkit.experiments import stored


@pytest.mark.parametrize("epsilon, bound", [(1.0, 1.268), (4.0, 7.083)])
def test_the_stored_full_presets_pp_cells_against_the_split(epsilon, bound):
    assert stored.split_epsilon(epsilon, 400, 1000) == pytest.approx(bound, abs=5e-4)


def test_the_bound_is_the_cells_own_epsilon_doubled_when_everything_is_read_and_shrinks_with_the_share():
    assert stored.split_epsilon(2.0, 1000, 1000) == pytest.approx(math.log1p(1000 / 1001 * math.expm1(4.0)))
    assert stored.split_epsilon(4.0, 100, 1000) < stored.split_epsilon(4.0, 400, 1000) < 8.0
    with pytest.raises(ValueError):
        stored.split_epsilon(1.0, 0, 10)


def test_the_committed_full_cells_read_what_the_bound_assumes():
    folder = stored.default_root() / "full"
    if not any(folder.glob("*__pp__*.json")):
        pytest.skip("no stored full preset")
    for body in stored.load_cells(folder):
        if body["cell"]["method"] == "pp":
            assert stored.records_read(body) < body["metrics"]["n_private_records"]   # a subsample, not the split
