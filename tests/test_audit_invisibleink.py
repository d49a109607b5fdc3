"""Audits of InvisibleInk's token (dpkit.audit.mechanism.adapters.invisibleink): the worst-case pair reaches the claim,
the audit's lower bound stays at or under the claim across seeds, and both broken twins are refuted."""

import pytest

from dpkit.audit.mechanism import registry

CORRECT = ["ii_token_dclip", "ii_token_topk_plus"]
BROKEN = ["ii_token_public_row_saw_prompt", "ii_token_no_clip"]


@pytest.mark.parametrize("name", CORRECT)
@pytest.mark.parametrize("epsilon", [0.5, 1.0, 4.0])
def test_the_pair_attains_the_claim(name, epsilon):
    case = registry.get(name).build(epsilon)
    assert 0.95 * epsilon <= case.pair_loss <= case.claimed_epsilon * (1 + 1e-9)
    assert case.claimed_epsilon == pytest.approx(epsilon, rel=1e-8)   # the contract's epsilon: 2(C/s + grid)/tau


@pytest.mark.parametrize("name", CORRECT)
def test_the_bound_is_never_above_the_claim_across_seeds(name):
    for seed in range(4):
        result = registry.run_audit(name, 1.0, samples=20_000, seed=seed)
        assert result.passed and result.lower_bound <= result.claimed_epsilon, str(result)


@pytest.mark.parametrize("name", BROKEN)
def test_the_broken_twins_are_caught(name):
    spec = registry.get(name)
    assert spec.broken and spec.correct_twin in CORRECT
    for seed in range(2):
        result = registry.run_audit(name, 1.0, samples=20_000, seed=seed)
        assert not result.passed and result.lower_bound > 2.0, str(result)
