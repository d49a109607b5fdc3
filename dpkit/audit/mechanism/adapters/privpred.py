"""Audits of private prediction (Amin et al.): the private token sampler and the SVT gate.

Both wrap :mod:`dpkit.privpred` itself: ``sample_private_token`` (clip and
recentre, sum over the batch divided by the *expected* batch size, softmax at
temperature tau, Gumbel-max sampling with ``size=n``) and ``svt_gate`` /
``svt_distance`` (the AboveThreshold test of Eq. 2 with sensitivity 1/s).

Logits are constructed, not produced by a language model: the guarantee must
hold for every logit vector a prompt could produce, so the audit picks the
extreme ones directly (an LM can be made to emit any logits by its prompt, and
searching prompts would only approximate these).
"""

from __future__ import annotations

import math

import numpy as np

from dpkit.audit.mechanism.pair_loss import above_threshold_log_probabilities, discrete_pair_loss
from dpkit.audit.mechanism.registry import AuditCase, AuditSpec, register
from dpkit.privpred.sampling import sample_private_token, token_epsilon, token_log_probabilities
from dpkit.privpred.svt import svt_distance, svt_gate, svt_rho

CLIP = 10.0  # c, as in the paper's experiments
EXPECTED_BATCH = 10  # s
VOCAB = 8
TARGET = 1  # the token the added prompt pushes
SVT_STEPS = 20  # queries before the last one in the SVT pair: the pair's exact loss reaches the claim


def temperature_for(epsilon: float) -> float:
    """tau such that one private token costs ``epsilon``: token_epsilon = 2c/(s tau)."""
    return 2.0 * CLIP / (EXPECTED_BATCH * epsilon)


def extra_prompt_logits() -> np.ndarray:
    """The added prompt: all mass on the target token, every other logit far below (clipped to -c)."""
    z = np.full(VOCAB, -100.0)
    z[TARGET] = 0.0
    return z


def base_batch_logits(epsilon: float, size: int, denominator: str = "expected",
                      target_probability: float | None = None) -> np.ndarray:
    """``size`` identical prompts favouring token 0, with the target's gap tuned so that the
    target has probability about ``target_probability`` on this batch (rare, yet estimable)."""
    tau = temperature_for(epsilon)
    if target_probability is None:
        target_probability = min(0.02, 0.04 * np.exp(-epsilon))
    gaps = np.linspace(0.0, 2 * CLIP, 2001)
    best, best_err = None, np.inf
    for gap in gaps:
        z = np.full(VOCAB, -100.0)
        z[0], z[TARGET] = 0.0, -gap
        batch = np.tile(z, (size, 1))
        p = np.exp(token_log_probabilities(batch, CLIP, EXPECTED_BATCH, tau, denominator)[TARGET])
        err = abs(np.log(p) - np.log(target_probability))
        if err < best_err:
            best, best_err = batch, err
    return best


def token_mechanism(epsilon: float, denominator: str = "expected"):
    tau = temperature_for(epsilon)

    def mechanism(logits, n, rng):
        return sample_private_token(np.asarray(logits, dtype=float), CLIP, EXPECTED_BATCH, tau, rng,
                                    denominator=denominator, size=n)

    return mechanism


def token_case(epsilon: float) -> AuditCase:
    base = base_batch_logits(epsilon, EXPECTED_BATCH - 1)
    d1 = np.vstack([base, extra_prompt_logits()])
    assert abs(token_epsilon(CLIP, EXPECTED_BATCH, temperature_for(epsilon)) - epsilon) < 1e-9
    tau = temperature_for(epsilon)
    log_p = [token_log_probabilities(b, CLIP, EXPECTED_BATCH, tau, "expected") for b in (base, d1)]
    return AuditCase(
        mechanism=token_mechanism(epsilon), d0=base.tolist(), d1=d1.tolist(), claimed_epsilon=epsilon,
        output="discrete", pair_loss=discrete_pair_loss(*log_p),
        describe_pair={"clip": CLIP, "expected_batch_size": EXPECTED_BATCH,
                       "temperature": temperature_for(epsilon), "vocab": VOCAB, "target_token": TARGET},
        why_worst_case="the added prompt's clipped logits are +c on the target token and -c on every other "
                       "token, the corners of the clipping range, so the averaged logits move by c/s in "
                       "opposite directions for the target and the rest; the target is rare on D0, so its "
                       "log-probability gains close to 2c/(s tau) = epsilon")


#: A candidate set fixed before any data is seen, as a record grammar gives one (dpkit.privpred.grammar).
PUBLIC_CANDIDATES = np.array([0, TARGET, 3, 5])


def candidates_token_mechanism(epsilon: float, candidates):
    """The private sampler over ``candidates(logits)``: a public set, or (broken) one read from the batch."""
    tau = temperature_for(epsilon)

    def mechanism(logits, n, rng):
        logits = np.asarray(logits, dtype=float)
        return sample_private_token(logits, CLIP, EXPECTED_BATCH, tau, rng, allowed=candidates(logits), size=n)

    return mechanism


def grammar_token_case(epsilon: float) -> AuditCase:
    """:func:`token_case` with the candidates restricted to a public set: the claim is unchanged."""
    case = token_case(epsilon)
    tau = temperature_for(epsilon)
    log_p = [token_log_probabilities(np.asarray(d), CLIP, EXPECTED_BATCH, tau, "expected",
                                     allowed=PUBLIC_CANDIDATES) for d in (case.d0, case.d1)]
    case.mechanism = candidates_token_mechanism(epsilon, lambda logits: PUBLIC_CANDIDATES)
    case.pair_loss = discrete_pair_loss(*log_p)
    case.describe_pair = {**case.describe_pair, "candidates": PUBLIC_CANDIDATES.tolist()}
    case.why_worst_case += ("; the candidates are a public set that holds the target (a grammar's set "
                            "depends on the schema and released tokens only)")
    return case


def svt_pair() -> tuple[dict, dict, float]:
    """Distances on D0 all equal d; on D1 the first SVT_STEPS are d + 1/s and the last d - 1/s."""
    one_hot = lambda k: np.where(np.arange(3) == k, 50.0, -50.0)  # noqa: E731
    public = np.log(np.array([0.2, 0.4, 0.4]))
    base = np.tile(one_hot(0), (EXPECTED_BATCH // 2, 1))  # five prompts all on token 0
    steps = SVT_STEPS + 1
    d0 = np.tile(base, (steps, 1, 1))
    extras = [one_hot(0)] * SVT_STEPS + [one_hot(1)]
    d1 = np.stack([np.vstack([base, e]) for e in extras])
    publics = np.tile(public, (steps, 1))
    threshold = float(svt_distance(base, public, EXPECTED_BATCH))
    return ({"private": d0, "public": publics}, {"private": d1, "public": publics}, threshold)


def svt_mechanism(epsilon: float, threshold: float):
    sigma = 2.0 / (EXPECTED_BATCH * epsilon)  # 2/(s sigma) = epsilon
    gate = svt_gate(threshold, sigma, EXPECTED_BATCH)

    def mechanism(dataset, n, rng):
        distances = svt_distance(np.asarray(dataset["private"]), np.asarray(dataset["public"]), EXPECTED_BATCH)
        return gate.run(distances, rng, size=n)

    return mechanism, gate


def svt_case(epsilon: float) -> AuditCase:
    d0, d1, threshold = svt_pair()
    mechanism, gate = svt_mechanism(epsilon, threshold)
    # The exact sampler's grid adds a relative 2^-29 or so to the cost; the claim is the gate's own.
    assert math.isclose(gate.epsilon, epsilon, rel_tol=1e-6)
    assert math.isclose(svt_rho(EXPECTED_BATCH, gate.sigma), gate.epsilon ** 2 / 2, rel_tol=1e-9)
    distances = [svt_distance(np.asarray(d["private"]), np.asarray(d["public"]), EXPECTED_BATCH) for d in (d0, d1)]
    log_p = [above_threshold_log_probabilities(q, threshold, gate.sigma) for q in distances]
    return AuditCase(
        mechanism=mechanism, d0=d0, d1=d1, claimed_epsilon=gate.epsilon, output="discrete", contract=gate.contract,
        pair_loss=discrete_pair_loss(*log_p),
        describe_pair={"expected_batch_size": EXPECTED_BATCH, "threshold": threshold,
                       "steps": SVT_STEPS + 1, "sigma": gate.sigma},
        why_worst_case="the added prompt's softmax is one-hot on a token the batch already over-predicts for "
                       "the first steps (distance +1/s) and on one it under-predicts at the last step "
                       "(distance -1/s): the AboveThreshold worst-case pattern, at the sensitivity 1/s")


register(AuditSpec("pp_token", "private prediction",
                   "private token sampler: clip_c, sum / expected batch size, softmax at tau "
                   "(dpkit.privpred.sample_private_token)", token_case, test_samples=20_000))
register(AuditSpec("pp_token_grammar", "private prediction",
                   "private token sampler over a public candidate set, as under a record grammar "
                   "(dpkit.privpred.sample_private_token(allowed=...))", grammar_token_case, test_samples=20_000))
register(AuditSpec("pp_svt", "private prediction",
                   "sparse-vector gate on the private/public distance of Eq. 2 (dpkit.privpred.svt_gate)",
                   svt_case, test_samples=20_000))
