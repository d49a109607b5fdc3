"""Discrete outputs with more distinct outcomes than a small sample can rank.

Regression: ``samples_curve(['dpst_record'], [1000, ...])`` raised "none of these
event families applies": the record adapter releases one of 98 strings (49 texts x
2 labels) and the set family refused to rank more than ``max(64, n / 20)``
outcomes, the only family for string outputs.  It now ranks the most frequent
outcomes of the selection samples.
"""

import numpy as np

from dpkit.audit.mechanism import audit
from dpkit.audit.mechanism.families import set_family
from dpkit.experiments.audit_study import samples_curve

CROWD = [f"outcome {i}" for i in range(200)]


def leaky(d, n, rng):
    """'hit' with probability 0.3 (d=0) or 0.05 (d=1), else one of 200 crowd strings."""
    hit = rng.random(n) < (0.3 if d == 0 else 0.05)
    return np.where(hit, "hit", np.array(CROWD)[rng.integers(len(CROWD), size=n)])


def test_set_family_ranks_the_most_frequent_outcomes_only_when_asked():
    rng = np.random.default_rng(0)
    a, b = leaky(0, 1_000, rng), leaky(1, 1_000, rng)
    assert set_family(a, b, 0.95, 0.0) is None  # ~200 outcomes seen, 1,000 samples: too many to rank
    found = set_family(a, b, 0.95, 0.0, most_frequent=True)
    assert found is not None and found.numerator == "D0" and "hit" in found.event.outcomes


def test_a_small_sample_of_many_string_outcomes_still_gives_a_bound():
    result = audit(leaky, 0, 1, samples=2_000, rng=np.random.default_rng(1), claimed_epsilon=1.0)
    assert "hit" in result.event.outcomes
    assert 0.5 < result.lower_bound < np.log(0.3 / 0.05)
    assert not result.passed  # the leak (log 6 = 1.79) is above the claim of 1


def test_the_dpst_record_sweep_runs_at_small_sample_counts():
    curve = samples_curve(["dpst_record"], [400, 1_000], 1.0, seed=0)
    assert list(curve["samples"]) == [400, 1_000]
    assert curve["passed"].all() and (curve["lower_bound"] <= 1.0).all()
