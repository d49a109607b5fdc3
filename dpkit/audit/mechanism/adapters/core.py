"""Audits of the privacy core's mechanisms (:mod:`dpkit.privacy`), each on a worst-case pair.

Every mechanism here is the library's own class, called with ``size=n`` so that
``n`` releases cost one vectorized call.
"""

from __future__ import annotations

import numpy as np

from dpkit.audit.mechanism.pair_loss import above_threshold_log_probabilities, discrete_pair_loss
from dpkit.audit.mechanism.registry import AuditCase, AuditSpec, register
from dpkit.audit.mechanism.tester import identity_statistic
from dpkit.privacy.exponential import Exponential
from dpkit.privacy.gaussian import Gaussian
from dpkit.privacy.laplace import Laplace
from dpkit.privacy.sparse_vector import AboveThreshold

#: AboveThreshold pair: D0 answers 0 to m+1 queries; D1 answers +1 to the first m and -1 to the last.
SVT_QUERIES = 20  # enough raised queries for the pair's exact loss to reach the claim (> 0.9999 eps)
SVT_THRESHOLD = 0.0


def laplace_case(epsilon: float) -> AuditCase:
    mechanism = Laplace(1.0, epsilon=epsilon)
    return AuditCase(
        mechanism=lambda value, n, rng: mechanism.release(value, rng, size=n),
        d0=0.0, d1=1.0, claimed_epsilon=epsilon, output="continuous",
        statistics={"output": identity_statistic}, contract=mechanism.contract, pair_loss=epsilon,
        why_worst_case="the query moves by exactly its sensitivity (1); for Laplace noise the privacy loss "
                       "equals epsilon on every output beyond both means, so no pair does better")


def gaussian_case(epsilon: float, delta: float = 1e-5) -> AuditCase:
    mechanism = Gaussian(1.0, epsilon=epsilon, delta=delta)
    return AuditCase(
        mechanism=lambda value, n, rng: mechanism.release(value, rng, size=n),
        d0=0.0, d1=1.0, claimed_epsilon=epsilon, delta=delta, output="continuous",
        statistics={"output": identity_statistic}, contract=mechanism.contract,
        why_worst_case="the query moves by exactly its L2 sensitivity (1); Gaussian privacy loss depends "
                       "only on that distance, and thresholds of the output are the likelihood-ratio events")


def exponential_scores(epsilon: float, candidates: int = 4, target_probability: float | None = None):
    """Scores for the exponential-mechanism pair: candidate 0 rare on D0, boosted on D1."""
    scale = 2.0 / epsilon  # the mechanism's own temperature for sensitivity 1
    if target_probability is None:
        target_probability = min(0.02, 0.04 * np.exp(-epsilon))
    others = scale * np.log((1.0 / target_probability - 1.0) / (candidates - 1))
    d0 = np.array([0.0] + [others] * (candidates - 1))
    d1 = d0 + np.array([1.0] + [-1.0] * (candidates - 1))
    return d0, d1


def exponential_case(epsilon: float) -> AuditCase:
    mechanism = Exponential(1.0, epsilon)
    d0, d1 = exponential_scores(epsilon)
    return AuditCase(
        mechanism=lambda scores, n, rng: mechanism.sample(scores, rng, size=n),
        d0=d0.tolist(), d1=d1.tolist(), claimed_epsilon=epsilon, output="discrete",
        contract=mechanism.contract,
        pair_loss=discrete_pair_loss(mechanism.log_probabilities(d0), mechanism.log_probabilities(d1)),
        why_worst_case="every score moves by the full sensitivity, the target up and all others down, so "
                       "the target's log-probability gains epsilon/2 twice (its own score and the "
                       "normaliser); the target is rare on D0 so the normaliser shift is nearly complete")


def above_threshold_pair(m: int = SVT_QUERIES) -> tuple[list[float], list[float]]:
    return [0.0] * (m + 1), [1.0] * m + [-1.0]


def above_threshold_case(epsilon: float) -> AuditCase:
    mechanism = AboveThreshold(SVT_THRESHOLD, sigma=2.0 / epsilon, sensitivity=1.0)
    d0, d1 = above_threshold_pair()
    return AuditCase(
        mechanism=lambda queries, n, rng: mechanism.run(queries, rng, size=n),
        d0=d0, d1=d1, claimed_epsilon=epsilon, output="discrete", contract=mechanism.contract,
        pair_loss=discrete_pair_loss(above_threshold_log_probabilities(d0, SVT_THRESHOLD, mechanism.sigma),
                                     above_threshold_log_probabilities(d1, SVT_THRESHOLD, mechanism.sigma)),
        why_worst_case=f"on D1 the first {SVT_QUERIES} queries are higher by the sensitivity and the last is "
                       "lower, so halting at the last query needs the threshold noise to clear the raised "
                       "queries (cost epsilon/2) and the last query's noise to clear a lowered value "
                       "(cost up to epsilon/2): the pattern behind the AboveThreshold proof's two terms")


register(AuditSpec("laplace", "privacy core", "Laplace mechanism, sensitivity 1 (dpkit.privacy.Laplace)",
                   laplace_case, test_samples=20_000))
register(AuditSpec("gaussian", "privacy core",
                   "Gaussian mechanism calibrated to (epsilon, 1e-5) (dpkit.privacy.Gaussian, analytic)",
                   gaussian_case, test_samples=20_000))
register(AuditSpec("exponential", "privacy core",
                   "exponential mechanism / softmax sampling (dpkit.privacy.Exponential, exact sampling)",
                   exponential_case, test_samples=20_000))
register(AuditSpec("above_threshold", "privacy core",
                   "AboveThreshold sparse vector (dpkit.privacy.AboveThreshold): index of the first query above",
                   above_threshold_case, test_samples=20_000))
