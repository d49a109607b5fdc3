"""Audits of one DP-SGD step: the released noisy sum of clipped per-example gradients, and four broken twins.

The model is a tiny vector model, a linear regression ``y ~ theta . x`` in two dimensions
at ``theta = 0``, whose per-example gradient of the squared loss is ``(theta . x - y) x``:
a record can be given any gradient it likes (``x = u``, ``y = -g`` gives ``g u``), which is
what an adversary's record can do to a language model's adapters too. One step releases

    ( sum over the Poisson batch of clip_C(g_i)  +  N(0, (sigma C)^2 I) ) / B

(``B`` = q N, the public expected batch size: the division is post-processing), with sigma
calibrated by :func:`dpkit.ft.accounting.calibrate_noise_multiplier` so that one step at
sampling rate ``q`` states the claimed epsilon at ``DELTA``. The same function with one
switch is each broken twin:

============================  ==========================================================
variant                       what is wrong
============================  ==========================================================
dpsgd_step_no_clip            per-example gradients summed unclipped
dpsgd_step_clip_after_mean    the batch's mean gradient clipped to C (a plain backward,
                              then ``clip_grad_norm_``), noise of the mean sigma C / B
dpsgd_step_mean_noise         clipped sum, but noise of standard deviation sigma C / B,
                              the mean's, added to the sum
dpsgd_step_shuffled           a fixed-size batch of B records drawn without replacement
                              (one batch of a shuffled epoch), accounted as Poisson q
============================  ==========================================================

The released vector's projection on the canary's direction orders the outputs as the
Gaussian likelihood ratio does, so thresholds of it are the events searched.

The step is written here in vectorised numpy (200,000 steps in a fraction of a second), not
by calling :func:`dpkit.ft.dpsgd.train`, which runs one Opacus step at a time; the tests tie
the two together: on the same tiny model, Opacus's per-sample gradients and clipped sum (the
``GradSampleModule`` and ``DPOptimizer`` that :mod:`dpkit.ft.dpsgd` trains with) equal this
module's, and Opacus's noise on the sum has the standard deviation sigma C drawn here.
"""

from __future__ import annotations

import numpy as np

from dpkit.audit.mechanism.registry import AuditCase, AuditSpec, register
from dpkit.audit.mechanism.tester import projection
from dpkit.ft.accounting import DpSgdMechanism, calibrate_noise_multiplier
from dpkit.validate import check_choice

DELTA = 1e-5
DIMENSION = 2
THETA = np.zeros(DIMENSION)  # the model's parameters at the audited step
CLIP = 1.0  # C
BASE_RECORDS = 16  # N, records of D0
SAMPLE_RATE = 0.25  # q
EXPECTED_BATCH = SAMPLE_RATE * BASE_RECORDS  # B = 4, public
DIRECTION = np.eye(DIMENSION)[0]  # u, the canary's gradient direction
VARIANTS = ("correct", "no_clip", "clip_after_mean", "mean_noise", "shuffled")


def record(gradient: np.ndarray) -> np.ndarray:
    """The record ``(x, y)`` whose squared-loss gradient at ``THETA = 0`` is ``gradient`` (``x = g / norm(g)``, ``y = -norm(g)``)."""
    gradient = np.asarray(gradient, dtype=float)
    norm = float(np.linalg.norm(gradient))
    if norm == 0.0:
        return np.zeros(DIMENSION + 1)
    return np.concatenate([gradient / norm, [-norm]])


def per_example_gradients(records: np.ndarray, theta: np.ndarray = THETA) -> np.ndarray:
    """Gradients of ``0.5 (theta . x - y)^2`` for every record (rows ``x_1 .. x_d, y``)."""
    records = np.asarray(records, dtype=float).reshape(-1, DIMENSION + 1)
    x, y = records[:, :DIMENSION], records[:, DIMENSION]
    return (x @ theta - y)[:, None] * x


def clip_rows(vectors: np.ndarray, clip: float) -> np.ndarray:
    """Each row scaled to L2 norm at most ``clip`` (Opacus's per-sample clipping factor, ``min(1, C / norm(g))``)."""
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors * np.minimum(1.0, clip / np.maximum(norms, 1e-12))


def noise_multiplier_for(epsilon: float) -> float:
    """sigma such that one step at ``SAMPLE_RATE`` states ``epsilon`` at ``DELTA`` (PLD, add/remove)."""
    return calibrate_noise_multiplier(epsilon, DELTA, SAMPLE_RATE, 1)


def step_mechanism(sigma: float, variant: str = "correct"):
    """``(records, n, rng) -> n`` releases of one DP-SGD step (``variant`` selects a broken twin)."""
    check_choice("variant", variant, VARIANTS)
    batch = int(round(EXPECTED_BATCH))

    def mechanism(records, n, rng):
        grads = per_example_gradients(records)
        size = len(grads)
        if variant == "shuffled":  # the first batch of a uniformly random permutation
            order = np.argsort(rng.random((n, size)), axis=1)[:, :batch]
            members = np.zeros((n, size))
            np.put_along_axis(members, order, 1.0, axis=1)
        else:  # Poisson: each record joins independently with probability q
            members = (rng.random((n, size)) < SAMPLE_RATE).astype(float)
        noise = rng.standard_normal((n, DIMENSION))
        if variant == "clip_after_mean":
            return clip_rows(members @ grads / EXPECTED_BATCH, CLIP) + noise * sigma * CLIP / EXPECTED_BATCH
        total = members @ (grads if variant == "no_clip" else clip_rows(grads, CLIP))
        scale = sigma * CLIP / EXPECTED_BATCH if variant == "mean_noise" else sigma * CLIP
        return (total + scale * noise) / EXPECTED_BATCH

    return mechanism


def _case(epsilon: float, variant: str, base_gradient: np.ndarray, canary_gradient: np.ndarray,
          why: str) -> AuditCase:
    sigma = noise_multiplier_for(epsilon)
    claim = DpSgdMechanism(sigma, SAMPLE_RATE, 1, DELTA, clip_norm=CLIP)
    d0 = np.tile(record(base_gradient), (BASE_RECORDS, 1))
    d1 = np.vstack([d0, record(canary_gradient)])
    return AuditCase(
        mechanism=step_mechanism(sigma, variant), d0=d0.tolist(), d1=d1.tolist(), claimed_epsilon=epsilon,
        delta=DELTA, output="continuous", statistics={"projection": projection(DIRECTION)}, contract=claim,
        describe_pair={"base_records": BASE_RECORDS, "base_gradient": list(map(float, base_gradient)),
                       "canary_gradient": list(map(float, canary_gradient)), "clip": CLIP,
                       "sample_rate": SAMPLE_RATE, "expected_batch_size": EXPECTED_BATCH,
                       "noise_multiplier": sigma, "variant": variant},
        why_worst_case=why)


_ZERO = np.zeros(DIMENSION)
_POISSON_WHY = ("D0 holds {n} records whose gradient is zero and D1 adds one whose gradient has norm {g} along u: "
                "the clipped sum moves by exactly C along u with probability q and not at all otherwise, the "
                "Poisson-subsampled Gaussian's worst case under add/remove, and the projection on u orders the "
                "outputs as its likelihood ratio does")


def dpsgd_step(epsilon: float) -> AuditCase:
    return _case(epsilon, "correct", _ZERO, 3.0 * CLIP * DIRECTION,
                 _POISSON_WHY.format(n=BASE_RECORDS, g=3.0 * CLIP))


def dpsgd_step_no_clip(epsilon: float) -> AuditCase:
    return _case(epsilon, "no_clip", _ZERO, 3.0 * CLIP * DIRECTION,
                 _POISSON_WHY.format(n=BASE_RECORDS, g=3.0 * CLIP) + "; unclipped, the sum moves by 3C")


def dpsgd_step_clip_after_mean(epsilon: float) -> AuditCase:
    g = 2.0 * EXPECTED_BATCH * CLIP
    return _case(epsilon, "clip_after_mean", _ZERO, g * DIRECTION,
                 _POISSON_WHY.format(n=BASE_RECORDS, g=g) + "; the canary alone makes the batch mean's norm 2C, "
                 "clipped to C: the clipped mean moves by C, B times the C/B its noise is scaled for")


def dpsgd_step_mean_noise(epsilon: float) -> AuditCase:
    return _case(epsilon, "mean_noise", _ZERO, 3.0 * CLIP * DIRECTION,
                 _POISSON_WHY.format(n=BASE_RECORDS, g=3.0 * CLIP) + "; the noise on the sum is B times too small")


def dpsgd_step_shuffled(epsilon: float) -> AuditCase:
    return _case(epsilon, "shuffled", -3.0 * CLIP * DIRECTION, 3.0 * CLIP * DIRECTION,
                 f"D0 holds {BASE_RECORDS} records whose clipped gradient is -C u and D1 adds one at +C u. A fixed "
                 f"batch of B = {EXPECTED_BATCH:g} always sums to -B C u on D0; on D1 the canary, when drawn, takes "
                 "the place of a -C u record and moves the sum by 2C: the batch size is fixed, so adding a record "
                 "displaces another, which Poisson sampling never does")


FAMILY = "DP fine-tuning"
#: a step costs microseconds, so the audits draw many: the shuffled twin's excess loss lies in the tail
#: (a 2C shift with probability B/(N+1)), where 20,000 draws certify about the claim and 200,000 well above it
_SIZES = {"test_samples": 200_000, "max_samples": 1_000_000}
register(AuditSpec("dpsgd_step", FAMILY,
                   "one DP-SGD step: Poisson batch, per-example clipping, Gaussian noise on the sum "
                   "(sigma from dpkit.ft.accounting)", dpsgd_step, **_SIZES))
register(AuditSpec("dpsgd_step_no_clip", FAMILY, "DP-SGD step without per-example clipping",
                   dpsgd_step_no_clip, broken=True, bug="per-example gradients summed unclipped",
                   correct_twin="dpsgd_step", **_SIZES))
register(AuditSpec("dpsgd_step_clip_after_mean", FAMILY, "DP-SGD step that clips the batch's mean gradient",
                   dpsgd_step_clip_after_mean, broken=True,
                   bug="clip_C(sum g_i / B) + N(0, (sigma C / B)^2): clipping after averaging",
                   correct_twin="dpsgd_step", **_SIZES))
register(AuditSpec("dpsgd_step_mean_noise", FAMILY, "DP-SGD step with the mean's noise added to the sum",
                   dpsgd_step_mean_noise, broken=True, bug="noise standard deviation sigma C / B on the sum",
                   correct_twin="dpsgd_step", **_SIZES))
register(AuditSpec("dpsgd_step_shuffled", FAMILY, "DP-SGD step on a shuffled fixed-size batch, accounted as Poisson",
                   dpsgd_step_shuffled, broken=True,
                   bug="a batch of B records without replacement, claimed as Poisson sampling at q = B/N",
                   correct_twin="dpsgd_step", **_SIZES))
