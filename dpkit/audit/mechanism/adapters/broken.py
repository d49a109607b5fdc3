"""The bug zoo: deliberately broken variants, each next to the correct mechanism it breaks.

Each variant claims the same epsilon as its correct twin and is built from the
real code through its parameters (a noise-scale hook, the ``denominator``
switch), so the audit exercises the paths the methods run. Each comes with the
neighbouring pair that exposes it; the audit must report a lower bound above
the claim for every one of them.

============================  ==================================================
variant                       what is wrong
============================  ==================================================
laplace_half_noise            Laplace noise at half the calibrated scale
kps_vocabulary_half_noise     the vocabulary histogram with noise_scale = S/(2 eps)
kps_dpkde_private_count       DP-KDE noise scale proportional to the private
                              number of documents (the appendix formula with n)
svt_no_query_noise            AboveThreshold with the per-query noise left out
pp_token_actual_batch         logits averaged over the actual batch size
pp_token_private_candidates   the candidates are the batch's own top-2 tokens
                              (a "grammar" that reads the private rows)
dpst_*                        see :mod:`dpkit.audit.mechanism.adapters.dpst`
ii_token_public_row_saw_*     InvisibleInk's DClip against a row that saw a private
ii_token_no_clip              prompt / without the clip (:mod:`dpkit.audit.mechanism.adapters.invisibleink`)
============================  ==================================================
"""

from __future__ import annotations

import numpy as np

from dpkit.audit.mechanism.adapters import kps
from dpkit.audit.mechanism.adapters import privpred as pp
from dpkit.audit.mechanism.registry import AuditCase, AuditSpec, register
from dpkit.audit.mechanism.tester import identity_statistic
from dpkit.kps.kde import appendix_noise_scale
from dpkit.privacy.laplace import Laplace
from dpkit.privacy.sparse_vector import AboveThreshold
from dpkit.privpred.sampling import private_log_weights


def laplace_half_noise(epsilon: float) -> AuditCase:
    calibrated = Laplace(1.0, epsilon=epsilon)
    broken = Laplace(1.0, scale=calibrated.scale / 2)
    return AuditCase(
        mechanism=lambda value, n, rng: broken.release(value, rng, size=n), d0=0.0, d1=1.0,
        claimed_epsilon=epsilon, output="continuous", statistics={"output": identity_statistic},
        contract=calibrated.contract,
        why_worst_case="the query moves by its full sensitivity; with half the scale the loss is 2 epsilon "
                       "on every output beyond both means")


def kps_vocabulary_half_noise(epsilon: float) -> AuditCase:
    case = kps.vocabulary_case(epsilon, noise_scale=kps.S / (2.0 * epsilon))
    case.why_worst_case += " (noise at half the scale S/eps: true epsilon is 2 eps)"
    return case


def kps_dpkde_private_count(epsilon: float) -> AuditCase:
    scale_from_count = lambda vectors: appendix_noise_scale(kps.KDE_FEATURES, epsilon,  # noqa: E731
                                                            n_documents=len(vectors))
    case = kps.kde_case(epsilon, noise_scale=scale_from_count, n_base=1)
    case.why_worst_case = ("D0 holds one document and D1 adds a second, extreme one: the scale computed from "
                           "the private count doubles, the largest relative change any count can make, so the "
                           "spread of the noise alone separates the two (the loss grows without bound in the "
                           "tails)")
    return case


def svt_no_query_noise(epsilon: float) -> AuditCase:
    """AboveThreshold's parameters, its threshold noise, and no noise on the queries."""
    correct = AboveThreshold(0.5, sigma=2.0 / epsilon, sensitivity=1.0)
    broken = AboveThreshold(0.5, sigma=2.0 / epsilon, sensitivity=1.0, query_noise=False)

    def mechanism(queries, n, rng):
        return broken.run(queries, rng, size=n)

    return AuditCase(
        mechanism=mechanism, d0=[1.0, 0.0], d1=[0.0, 1.0], claimed_epsilon=epsilon, output="discrete",
        contract=correct.contract,
        why_worst_case="each query moves by the sensitivity in opposite directions: on D0 the first query is "
                       "above the second, on D1 below. With only the threshold random, halting at the second "
                       "query is impossible on D0 (the first would have halted) and likely on D1")


def pp_token_actual_batch(epsilon: float) -> AuditCase:
    base = pp.base_batch_logits(epsilon, 1, denominator="actual")
    d1 = np.vstack([base, pp.extra_prompt_logits()])
    return AuditCase(
        mechanism=pp.token_mechanism(epsilon, denominator="actual"), d0=base.tolist(), d1=d1.tolist(),
        claimed_epsilon=epsilon, output="discrete",
        describe_pair={"clip": pp.CLIP, "expected_batch_size": pp.EXPECTED_BATCH,
                       "temperature": pp.temperature_for(epsilon), "actual_batch_sizes": [1, 2]},
        why_worst_case="a batch of one prompt against the same batch plus one extreme prompt: dividing by the "
                       "actual size (1, then 2) moves the averaged logits by up to c instead of c/s")


register(AuditSpec("laplace_half_noise", "privacy core", "Laplace mechanism with half the calibrated noise",
                   laplace_half_noise, broken=True, bug="noise scale sensitivity/(2 eps) instead of sensitivity/eps",
                   correct_twin="laplace", test_samples=20_000))
register(AuditSpec("kps_vocabulary_half_noise", "DP-KPS", "vocabulary histogram with half the noise",
                   kps_vocabulary_half_noise, broken=True, bug="noise_scale=S/(2 eps_voc)",
                   correct_twin="kps_vocabulary", test_samples=2_500, max_samples=10_000))
register(AuditSpec("kps_dpkde_private_count", "DP-KPS", "DP-KDE with a noise scale computed from the private count",
                   kps_dpkde_private_count, broken=True,
                   bug="noise_scale = appendix_noise_scale(I, eps, n_documents=len(private data))",
                   correct_twin="kps_dpkde", test_samples=2_500, max_samples=10_000))
register(AuditSpec("svt_no_query_noise", "privacy core", "AboveThreshold without the query noise",
                   svt_no_query_noise, broken=True, bug="queries compared to the noisy threshold without Laplace(2 sigma)",
                   correct_twin="above_threshold", test_samples=20_000))
register(AuditSpec("pp_token_actual_batch", "private prediction",
                   "private token sampler dividing by the actual batch size",
                   pp_token_actual_batch, broken=True, bug="aggregate_logits(..., denominator='actual')",
                   correct_twin="pp_token", test_samples=20_000))


def pp_token_private_candidates(epsilon: float) -> AuditCase:
    tau = pp.temperature_for(epsilon)

    def private_top2(logits):  # the bug: the candidate set is computed from the private rows
        weights = private_log_weights(logits, pp.CLIP, pp.EXPECTED_BATCH, tau)
        return np.sort(np.argsort(weights)[-2:])

    z = np.full(pp.VOCAB, -100.0)
    z[0], z[2], z[pp.TARGET] = 0.0, -1.0, -1.2  # on D0 the target is third, just out of the top 2
    base = np.tile(z, (pp.EXPECTED_BATCH - 1, 1))
    d1 = np.vstack([base, pp.extra_prompt_logits()])
    return AuditCase(
        mechanism=pp.candidates_token_mechanism(epsilon, private_top2), d0=base.tolist(), d1=d1.tolist(),
        claimed_epsilon=epsilon, output="discrete",
        describe_pair={"clip": pp.CLIP, "expected_batch_size": pp.EXPECTED_BATCH, "temperature": tau,
                       "candidates": "top 2 of the private averaged logits"},
        why_worst_case="on D0 the target is the batch's third token, outside the private top 2, so it can "
                       "never be drawn; the added prompt lifts it into the top 2, and it is drawn often")


register(AuditSpec("pp_token_private_candidates", "private prediction",
                   "private token sampler whose candidate set is the batch's own top 2",
                   pp_token_private_candidates, broken=True,
                   bug="allowed = top-2 of the private averaged logits instead of a public set",
                   correct_twin="pp_token_grammar", test_samples=20_000))
