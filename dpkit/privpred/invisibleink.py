"""InvisibleInk's private token: DClip and Top-k+ (Vinod, Pillutla, Thakurta 2025, arXiv 2507.02974).

The maths of one private step, in small pure functions (numpy arrays or torch
tensors; the vocabulary is the LAST axis). Their privacy contract has one home,
:mod:`dpkit.privacy.invisibleink`; the decoder (:mod:`dpkit.privpred.decode`)
calls them when ``variant="invisibleink"``.

* :func:`difference_clip`: ``d = clip(z - z_pub, -C, C)``, only the difference
  between a private row's logits and the PUBLIC row's is clipped. The public
  row's logits are a function of the public prompt and the released tokens only
  (never of a private prompt): clipping against a row that saw a private prompt
  would make ``d`` of one prompt depend on another (the audits' broken entry).
* :func:`dclip_aggregate`: ``u = z_pub + (1/s) sum_i d_i``, ``s`` the expected
  batch size (public). One more prompt moves ``u`` by ``d/s``: every component in
  ``[-C/s, C/s]``.
* :func:`topk_plus_candidates`: ``{y : z_pub(y) >= z_pub^(k) - 2C}``, a superset of
  the k largest ``u`` whenever the batch holds at most ``s`` prompts
  (:func:`dpkit.privacy.invisibleink.topk_plus_margin`); public data only, so free.
* :func:`sample_invisibleink_token_from_sum`: the exact exponential-mechanism
  draw from ``softmax(u_q / tau)`` on the candidates (``u_q`` rounded to the
  public grid ``token_grid(s, C)``), the same sampler as the seed paper's variant.
"""

from __future__ import annotations

import numpy as np
import torch
from scipy.special import log_softmax

from dpkit.privacy.exact import exact_exponential_sample
from dpkit.privacy.invisibleink import topk_plus_margin
from dpkit.privacy.private_prediction import check_batch_size, token_grid
from dpkit.validate import ParameterError, check_int, check_positive


def _is_torch(x) -> bool:
    return type(x).__module__.startswith("torch")


def _numpy(x) -> np.ndarray:
    if _is_torch(x):
        return x.detach().double().cpu().numpy()
    return np.asarray(x, dtype=np.float64)


def difference_clip(logits, public_logits, clip: float):
    """DClip: ``clip(z - z_pub, -C, C)`` componentwise (float64), broadcast over leading axes of ``logits``."""
    clip = check_positive("clip", clip)
    if _is_torch(logits):
        return (logits.double() - public_logits.double()).clamp(-clip, clip)
    z, p = _numpy(logits), _numpy(public_logits)
    if z.shape[-1] != p.shape[-1]:
        raise ParameterError("public_logits", p.shape, f"must match the logits' vocabulary ({z.shape[-1]})")
    return np.clip(z - p, -clip, clip)


def dclip_rows(logits: torch.Tensor, public_logits: torch.Tensor, clip: float,
               candidates: torch.Tensor | None = None) -> torch.Tensor:
    """DClip of ``(m, vocab)`` private logits on the ``candidates`` columns (all when None), float64."""
    if candidates is not None:
        logits, public_logits = logits[..., candidates], public_logits[..., candidates]
    return difference_clip(logits, public_logits, clip)


def dclip_aggregate(private_logits, public_logits, clip: float, expected_batch_size: float) -> np.ndarray:
    """``u = z_pub + (1/s) sum_i clip(z_i - z_pub, -C, C)`` over the rows of ``(n, vocab)`` (n may be 0)."""
    s = check_batch_size(expected_batch_size)
    z = _numpy(private_logits)
    p = _numpy(public_logits)
    if z.ndim != 2:
        raise ParameterError("private_logits", z.shape, "must have shape (n_prompts, vocab)")
    return p + difference_clip(z, p, clip).sum(axis=0) / s


def topk_plus_candidates(public_logits, top_k: int | None, clip: float, within=None):
    """Top-k+: sorted ids of the tokens whose PUBLIC logit is at least the k-th largest minus ``2C``.

    ``within``: the tokens allowed at all (a grammar's), None = the whole
    vocabulary; ``top_k`` None: no truncation (``within``, or None for all).
    Torch in, torch out (on the logits' device); numpy otherwise.
    """
    margin = topk_plus_margin(clip)
    if top_k is None:
        return within
    k = check_int("top_k", top_k, minimum=1)
    if _is_torch(public_logits):
        z = public_logits
        ids = torch.arange(z.shape[-1], device=z.device) if within is None else within.to(z.device)
        values = z[ids]
        kth = torch.topk(values, min(k, int(values.shape[0])), sorted=True).values[-1]
        return torch.sort(ids[values >= kth - margin]).values
    z = _numpy(public_logits)
    ids = np.arange(z.shape[-1]) if within is None else np.sort(np.asarray(within, dtype=np.int64))
    values = z[ids]
    kth = np.sort(values)[::-1][min(k, len(values)) - 1]
    return ids[values >= kth - margin]


def invisibleink_scores(diff_sum, public_on_candidates, expected_batch_size: float) -> np.ndarray:
    """The scores ``u = z_pub + D/s`` on the candidates from the rows' summed DClip differences ``D``."""
    return _numpy(public_on_candidates) + _numpy(diff_sum) / float(check_batch_size(expected_batch_size))


def sample_invisibleink_token_from_sum(diff_sum, public_on_candidates, clip: float, expected_batch_size: float,
                                       temperature: float, rng: np.random.Generator, *, candidates=None) -> int:
    """One private token: exact draw from ``softmax(u_q / tau)``, ``u = z_pub + D/s`` on the candidates.

    ``diff_sum`` and ``public_on_candidates`` are float vectors on ``candidates``
    (sorted ids; None = the whole vocabulary). Contract:
    :func:`dpkit.privacy.invisibleink.invisibleink_token_contract`.
    """
    if not isinstance(rng, np.random.Generator):
        raise ParameterError("rng", rng, "must be a numpy.random.Generator")
    temperature = check_positive("temperature", temperature)
    grid = token_grid(expected_batch_size, clip)
    scores = invisibleink_scores(diff_sum, public_on_candidates, expected_batch_size)
    picked = int(exact_exponential_sample(scores, temperature, rng, grid))
    return picked if candidates is None else int(_numpy(candidates).astype(np.int64)[picked])


def invisibleink_log_probabilities(private_logits, public_logits, clip: float, expected_batch_size: float,
                                   temperature: float, top_k: int | None = None) -> np.ndarray:
    """Exact log-probabilities over the vocabulary of one InvisibleInk token (-inf outside Top-k+).

    The distribution :func:`sample_invisibleink_token_from_sum` draws from (the
    scores rounded to the grid): for plots, audits and cross-checks.
    """
    temperature = check_positive("temperature", temperature)
    grid = token_grid(expected_batch_size, clip)
    u = dclip_aggregate(private_logits, public_logits, clip, expected_batch_size)
    weights = np.rint(u / grid) * grid / temperature
    allowed = topk_plus_candidates(_numpy(public_logits), top_k, clip)
    if allowed is not None:
        mask = np.zeros(weights.shape[-1], dtype=bool)
        mask[allowed] = True
        weights = np.where(mask, weights, -np.inf)
    return log_softmax(weights)
