"""Clipping and aggregating logits: the data-dependent half of one private token.

Pure functions on ``numpy`` arrays or ``torch`` tensors (same type in, same type
out), vectorized over any leading axes; the vocabulary is always the LAST axis
and, where prompts are aggregated, the batch of prompts is the second-to-last.

* :func:`clip_and_recenter` is Eq. (1) of Amin et al. {cite}`amin2024private`:
  ``clip_c(z)_i = max(-c, z_i - max_j z_j + c)``. Every output lies in
  ``[-c, c]`` and the top logit maps to exactly ``c``; when ``z`` spans less than
  ``2c`` the output is a constant shift of ``z``, so ``softmax`` is unchanged.
* :func:`clip_fixed` clips to ``[-c, c]`` without recentring (the baseline of the
  paper's Appendix B.1).
* :func:`aggregate_logits` sums clipped rows and divides by the EXPECTED batch
  size ``s`` (a public constant). Adding or removing one prompt then moves every
  component of the aggregate by at most ``c / s`` (sensitivity ``c/s`` in the
  sup-norm, Lemma 3 of the paper). An empty batch aggregates to the zero
  vector, and ``0 -> 1`` prompts moves it by ``clip_c(z)/s``, again at most
  ``c/s``: the same analysis covers it. ``denominator="actual"`` divides by the
  number of rows present instead: a deliberately broken variant kept for audits,
  whose sensitivity is about ``2c/s`` (removing a prompt changes both the sum and
  the divisor), i.e. it doubles the per-token epsilon.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import torch

from dpkit.privacy.private_prediction import check_batch_size
from dpkit.validate import ParameterError, check_int, check_positive

Denominator = Literal["expected", "actual"]


def _is_torch(x) -> bool:
    return type(x).__module__.startswith("torch")


def _as_array(name: str, x):
    """Accept a torch tensor or anything numpy can read; reject empty and non-finite input."""
    if _is_torch(x):
        if x.ndim < 1 or x.shape[-1] == 0:
            raise ParameterError(name, tuple(x.shape), "needs a non-empty last (vocabulary) axis")
        return x
    arr = np.asarray(x, dtype=np.float64)
    if arr.ndim < 1 or arr.shape[-1] == 0:
        raise ParameterError(name, arr, "needs a non-empty last (vocabulary) axis")
    if np.isnan(arr).any():
        raise ParameterError(name, arr, "must not contain NaN")
    return arr


def clip_and_recenter(logits, clip: float):
    """Eq. (1): shift so the largest logit is ``clip``, then floor at ``-clip``.

    Works on the last axis of a numpy array or torch tensor; output in ``[-clip, clip]``.
    """
    clip = check_positive("clip", clip)
    z = _as_array("logits", logits)
    if _is_torch(z):
        top = z.max(dim=-1, keepdim=True).values
        return (z - top + clip).clamp_min(-clip)
    top = np.max(z, axis=-1, keepdims=True)
    return np.maximum(-clip, z - top + clip)


def clip_fixed(logits, clip: float):
    """Clip every logit to ``[-clip, clip]`` without recentring (Appendix B.1's baseline)."""
    clip = check_positive("clip", clip)
    z = _as_array("logits", logits)
    if _is_torch(z):
        return z.clamp(-clip, clip)
    return np.clip(z, -clip, clip)


def _check_denominator(denominator: str) -> str:
    if denominator not in ("expected", "actual"):
        raise ParameterError("denominator", denominator, "must be 'expected' or 'actual'")
    return denominator


def aggregate_logits(clipped, expected_batch_size: float, denominator: Denominator = "expected"):
    """Average clipped logits over the prompt axis (``-2``), dividing by the EXPECTED size.

    ``clipped`` has shape ``(..., n_prompts, vocab)``; the result ``(..., vocab)``.
    ``denominator="actual"`` divides by ``n_prompts`` instead (broken on purpose:
    the guarantee of Theorem 1 no longer holds, see the module docstring).
    """
    s = check_batch_size(expected_batch_size, "expected_batch_size")
    _check_denominator(denominator)
    z = _as_array("clipped", clipped)
    if z.ndim < 2:
        raise ParameterError("clipped", tuple(z.shape), "needs shape (..., n_prompts, vocab)")
    n = z.shape[-2]
    if n == 0 and denominator == "actual":
        raise ParameterError("clipped", tuple(z.shape), "the batch is empty: the 'actual' divisor is undefined")
    # an empty batch (n = 0) aggregates to the zero vector: the mechanism is defined on 0 prompts
    total = z.sum(-2) if _is_torch(z) else z.sum(axis=-2)
    return total / (s if denominator == "expected" else n)


def aggregate_sensitivity(clip: float, expected_batch_size: float) -> float:
    """Sup-norm sensitivity ``c / s`` of :func:`aggregate_logits` under add/remove of one prompt."""
    clip = check_positive("clip", clip)
    s = check_batch_size(expected_batch_size, "expected_batch_size")
    return clip / s


def restrict_to(log_weights, allowed):
    """Set every log-weight outside ``allowed`` (a boolean mask or index array on the last axis) to -inf."""
    z = _as_array("log_weights", log_weights)
    if _is_torch(z):
        mask = torch.zeros(z.shape[-1], dtype=torch.bool, device=z.device)
        mask[torch.as_tensor(allowed, device=z.device)] = True
        if not bool(mask.any()):
            raise ParameterError("allowed", allowed, "must allow at least one token")
        return z.masked_fill(~mask, float("-inf"))
    allowed = np.asarray(allowed)
    mask = np.zeros(z.shape[-1], dtype=bool)
    mask[allowed] = True
    if not mask.any():
        raise ParameterError("allowed", allowed, "must allow at least one token")
    return np.where(mask, z, -np.inf)


def top_k_indices(logits, k: int) -> np.ndarray:
    """Indices of the ``k`` largest entries of a 1-D logit vector (ties broken by index)."""
    k = check_int("k", k, minimum=1)
    z = _as_array("logits", logits)
    z = z.detach().float().cpu().numpy() if _is_torch(z) else z
    if z.ndim != 1:
        raise ParameterError("logits", z, "must be one vector (vocab,)")
    k = min(k, z.shape[0])
    return np.sort(np.argpartition(-z, k - 1)[:k])
