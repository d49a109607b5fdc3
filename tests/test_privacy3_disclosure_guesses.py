"""privacy-3 N2: the disclosure test counts a number of guesses the one-run theorem covers.

Theorem 3.1 (Steinke, Nasr, Jagielski 2023) bounds at most ``r`` guesses with
``r`` fixed in advance. At delta = 0 the realized number of matches is still a
valid ``r``; at delta > 0 no argument covers it, so the test now counts every
record (``r = m``, fixed in advance). Before: the realized matches at any delta.
"""

from __future__ import annotations

import pytest

import dpkit.audit.release.disclosure as disclosure
from dpkit.audit.release.zoo import copy_fraction
from test_audit_release import _distinct_records


@pytest.mark.parametrize("delta, counts_every_record", [(0.0, False), (1e-6, True)])
def test_the_number_of_guesses_is_fixed_in_advance_when_delta_is_positive(monkeypatch, delta, counts_every_record):
    seen = []
    real = disclosure.epsilon_lower_bound

    def spy(m, r, v, alpha, claimed_delta):
        seen.append((m, r, v, claimed_delta))
        return real(m, r, v, alpha, claimed_delta)

    monkeypatch.setattr(disclosure, "epsilon_lower_bound", spy)
    records = _distinct_records()
    result = disclosure.disclosure_test(copy_fraction(0.1, seed=2), records, claimed_epsilon=1.0,
                                        claimed_delta=delta, seed=4)
    (m, r, v, claimed_delta), = seen
    matches = result.train_matches + result.holdout_matches
    assert m == len(records) and v == result.train_matches and claimed_delta == delta
    assert r == (len(records) if counts_every_record else matches)
    assert matches < len(records)          # the two rules differ here
    assert result.epsilon_lower_bound == real(m, r, v, 0.05, delta)
