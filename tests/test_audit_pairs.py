"""Adapters audit worst-case pairs: each states its pair's exact loss, and the report lists it."""

import numpy as np
import pytest

from dpkit.audit.mechanism import registry
from dpkit.audit.mechanism.adapters.core import SVT_QUERIES
from dpkit.audit.mechanism.adapters.privpred import SVT_STEPS
from dpkit.audit.mechanism.pair_loss import above_threshold_log_probabilities, discrete_pair_loss
from dpkit.privacy import AboveThreshold


@pytest.mark.parametrize("name", ["dpst_document", "above_threshold", "pp_svt", "dpst_triple", "dpst_neighbourhood",
                                  "pp_token", "exponential", "laplace", "kps_vocabulary", "kps_dpkde"])
@pytest.mark.parametrize("epsilon", [0.5, 1.0])
def test_pair_loss_reaches_the_claim(name, epsilon):
    case = registry.get(name).build(epsilon)
    assert case.pair_loss is not None and 0.95 * epsilon <= case.pair_loss <= epsilon * (1 + 1e-6)


@pytest.mark.parametrize("name", ["dpst_document", "above_threshold", "pp_svt"])
def test_issue_pairs_hold_at_large_epsilon(name):
    case = registry.get(name).build(4.0)
    assert 0.95 * 4.0 <= case.pair_loss <= 4.0 * (1 + 1e-6)


def test_svt_pairs_have_at_least_20_queries():
    assert SVT_QUERIES >= 20 and SVT_STEPS >= 20
    assert len(registry.get("above_threshold").build(1.0).d0) >= 21


def test_above_threshold_distribution_matches_sampling():
    queries = [0.0, 1.0, -1.0, 0.5]
    mech = AboveThreshold(0.0, sigma=2.0, sensitivity=1.0)
    draws = mech.run(queries, np.random.default_rng(0), size=200_000)
    empirical = np.array([(draws == k).mean() for k in range(len(queries))] + [(draws == -1).mean()])
    exact = np.exp(above_threshold_log_probabilities(queries, 0.0, 2.0))
    assert np.allclose(empirical, exact, atol=4e-3)  # 200k draws: standard error <= 1.2e-3


def test_discrete_pair_loss_sees_disjoint_supports():
    assert discrete_pair_loss([np.log(0.5), np.log(0.5), -np.inf], np.log([0.5, 0.25, 0.25])) == float("inf")
    assert discrete_pair_loss(np.log([0.5, 0.5]), np.log([0.25, 0.75])) == pytest.approx(np.log(2))


def test_audit_rows_report_pair_loss():
    from dpkit.audit.mechanism.registry import audit_row

    row = audit_row("dpst_document", 400, epsilon=1.0)
    assert row["pair loss / claim"] >= 0.95
