"""Audits of InvisibleInk's private token (DClip and Top-k+), with two broken twins for the zoo.

The mechanism is :mod:`dpkit.privpred.invisibleink` itself: ``u = z_pub + (1/s)
sum_i clip(z_i - z_pub, -C, C)`` rounded to the public grid, an exact
exponential-mechanism draw at temperature tau on the candidates (the whole
vocabulary for the DClip step, the Top-k+ set for the Top-k+ step). A dataset
is ``{"private": (n, vocab) logits, "public": (vocab,) logits}``; the public
row is the same on both sides of a pair (it never sees a private prompt).

Worst-case pair: D0 is ``s - 1`` prompts whose differences from the public
row keep the target token rare; D1 adds a prompt whose difference is ``+C``
on the target and ``-C`` on every other token (the corners of DClip's range),
so ``u`` moves by ``+C/s`` on the target and ``-C/s`` elsewhere and the target's
log-probability gains close to ``2C/(s tau)`` = the claimed epsilon.

Broken twins (registered ``broken=True``, caught by the audit):

* ``ii_token_public_row_saw_prompt``: the "public" row is a row whose prompt
  holds the batch's last private record (its logits are that record's), so the
  reference of DClip moves with the data, by far more than ``C/s``;
* ``ii_token_no_clip``: the difference is not clipped at all.
"""

from __future__ import annotations

import numpy as np

from dpkit.audit.mechanism.pair_loss import discrete_pair_loss
from dpkit.audit.mechanism.registry import AuditCase, AuditSpec, register
from dpkit.privacy.exact import exact_exponential_sample
from dpkit.privacy.invisibleink import invisibleink_token_contract
from dpkit.privacy.private_prediction import token_grid
from dpkit.privpred.invisibleink import (dclip_aggregate, invisibleink_log_probabilities,
                                         topk_plus_candidates)

CLIP = 1.0            # DClip's C
EXPECTED_BATCH = 8    # s
VOCAB = 10
TARGET = 1
TOP_K = 3
#: the public row's logits: tokens 0, 2, 3 are the public top 3; the target (1) is 0.6 below the third,
#: inside the Top-k+ band 2C = 2 (so Top-k+ holds it, the public top-3 does not); the rest far below
PUBLIC = np.array([2.0, 1.2, 1.9, 1.8, -6.0, -7.0, -8.0, -9.0, -9.5, -10.0])


def temperature_for(epsilon: float) -> float:
    """tau such that one token costs ``epsilon``: 2 C/(s tau) = epsilon (the grid adds ~2^-30 relative)."""
    return 2.0 * CLIP / (EXPECTED_BATCH * epsilon)


def extra_prompt_logits(public: np.ndarray = PUBLIC) -> np.ndarray:
    """The added prompt: far above the public row on the target, far below on every other token."""
    z = public - 50.0
    z[TARGET] = public[TARGET] + 50.0
    return z


def base_batch(epsilon: float, top_k: int | None) -> np.ndarray:
    """``s - 1`` identical prompts, ``g`` above the public row on the target and ``g`` below it elsewhere
    (``|g| <= C``), ``g`` tuned so that the target has probability about ``min(0.02, 0.04 e^-eps)`` on D0
    (rare, yet estimable)."""
    tau = temperature_for(epsilon)
    goal = np.log(min(0.02, 0.04 * np.exp(-epsilon)))
    best, best_err = None, np.inf
    for gap in np.linspace(-CLIP, CLIP, 801):
        z = PUBLIC - gap
        z[TARGET] = PUBLIC[TARGET] + gap
        batch = np.tile(z, (EXPECTED_BATCH - 1, 1))
        lp = invisibleink_log_probabilities(batch, PUBLIC, CLIP, EXPECTED_BATCH, tau, top_k)[TARGET]
        if abs(lp - goal) < best_err:
            best, best_err = batch, abs(lp - goal)
    return best


def _reference_public(dataset) -> np.ndarray:
    return np.asarray(dataset["public"], dtype=float)


def _reference_last_private(dataset) -> np.ndarray:
    """The bug: the row DClip is taken against has seen a private prompt (the batch's last one)."""
    return np.asarray(dataset["private"], dtype=float)[-1]


def token_mechanism(epsilon: float, top_k: int | None, reference=_reference_public, clip: float = CLIP):
    """``(dataset, n, rng) -> n tokens`` drawn by the real code; ``reference`` picks the row DClip is
    taken against and the Top-k+ set is read from (the public row when correct)."""
    tau = temperature_for(epsilon)
    grid = token_grid(EXPECTED_BATCH, CLIP)

    def mechanism(dataset, n, rng):
        public = reference(dataset)
        scores = dclip_aggregate(np.asarray(dataset["private"], dtype=float), public, clip, EXPECTED_BATCH)
        allowed = topk_plus_candidates(public, top_k, CLIP)
        if allowed is not None:
            scores = np.where(np.isin(np.arange(VOCAB), allowed), scores, -np.inf)
        return exact_exponential_sample(scores, tau, rng, grid, size=n)

    return mechanism


def _case(epsilon: float, top_k: int | None) -> AuditCase:
    tau = temperature_for(epsilon)
    base = base_batch(epsilon, top_k)
    d0 = {"private": base, "public": PUBLIC}
    d1 = {"private": np.vstack([base, extra_prompt_logits()]), "public": PUBLIC}
    log_p = [invisibleink_log_probabilities(d["private"], PUBLIC, CLIP, EXPECTED_BATCH, tau, top_k) for d in (d0, d1)]
    contract = invisibleink_token_contract(EXPECTED_BATCH, CLIP, tau)
    return AuditCase(
        mechanism=token_mechanism(epsilon, top_k), d0=d0, d1=d1, claimed_epsilon=contract.epsilon,
        output="discrete", contract=contract, pair_loss=discrete_pair_loss(*log_p),
        describe_pair={"clip": CLIP, "expected_batch_size": EXPECTED_BATCH, "temperature": tau, "vocab": VOCAB,
                       "target_token": TARGET, "top_k": top_k,
                       "candidates": None if top_k is None else
                       topk_plus_candidates(PUBLIC, top_k, CLIP).tolist()},
        why_worst_case="the added prompt's DClip difference is +C on the target and -C on every other token, "
                       "the corners of the clipping range, so u moves by C/s in opposite directions for the "
                       "target and the rest; the target is rare on D0, so its log-probability gains close to "
                       "2C/(s tau) = epsilon" + ("" if top_k is None else
                                                 "; the target lies in Top-k+'s band below the public top-k, "
                                                 "a set read from the public row only"))


def dclip_case(epsilon: float) -> AuditCase:
    """One DClip step over the whole vocabulary."""
    return _case(epsilon, None)


def topk_plus_case(epsilon: float) -> AuditCase:
    """One DClip step on the Top-k+ candidates (k = 3; the target only in the 2C band)."""
    return _case(epsilon, TOP_K)


def public_row_saw_prompt_case(epsilon: float) -> AuditCase:
    """Broken: DClip and Top-k+ against a row that saw the batch's last private prompt."""
    case = _case(epsilon, TOP_K)
    case.mechanism = token_mechanism(epsilon, TOP_K, reference=_reference_last_private)
    case.pair_loss = None
    case.why_worst_case = ("the reference row is the added prompt itself on D1: u is centred on the extreme "
                           "prompt's logits (target 50 above the rest), so the target is drawn almost always "
                           "on D1 and rarely on D0")
    return case


def no_clip_case(epsilon: float) -> AuditCase:
    """Broken: the difference from the public row is not clipped (C = +inf in effect)."""
    case = _case(epsilon, None)
    case.mechanism = token_mechanism(epsilon, None, clip=1e6)
    case.pair_loss = None
    case.why_worst_case = ("the added prompt's difference (+50 on the target, -50 elsewhere) enters u "
                           "unclipped, moving it by 50/s instead of C/s")
    return case


register(AuditSpec("ii_token_dclip", "private prediction",
                   "InvisibleInk token: public logits + DClip'd differences / s, exponential mechanism at tau "
                   "(dpkit.privpred.invisibleink)", dclip_case, test_samples=20_000))
register(AuditSpec("ii_token_topk_plus", "private prediction",
                   "InvisibleInk token on the Top-k+ candidates (public top-k widened by 2C)",
                   topk_plus_case, test_samples=20_000))
register(AuditSpec("ii_token_public_row_saw_prompt", "private prediction",
                   "InvisibleInk token whose 'public' row saw a private prompt", public_row_saw_prompt_case,
                   broken=True, bug="DClip reference and Top-k+ set from a row whose prompt holds a private record",
                   correct_twin="ii_token_topk_plus", test_samples=20_000))
register(AuditSpec("ii_token_no_clip", "private prediction", "InvisibleInk token without the difference clip",
                   no_clip_case, broken=True, bug="clip(z_i - z_pub) left out (C effectively infinite)",
                   correct_twin="ii_token_dclip", test_samples=20_000))
