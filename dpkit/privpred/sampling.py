"""One token of Algorithm 1: the exponential mechanism over clipped, averaged logits, sampled exactly.

:func:`sample_private_token` draws ``x`` with probability proportional to
``exp(zbar_q / tau)``, ``zbar = (1/s) * sum_i clip_c(z_i)`` (Eq. 1 and line 13
of Algorithm 1 in {cite}`amin2024private`) computed in float64 and
``zbar_q`` its rounding to the public grid ``token_grid(s, c)``. The draw is the
privacy core's :func:`~dpkit.privacy.exact.exact_exponential_sample`: the
output distribution is a function of the rounded integers alone and every draw
is exact (no bounded Gumbel, no float rounding of the weights reaches the
output).

Contract of one private token (Lemma 4 of the paper), from its one home
:func:`dpkit.privacy.private_prediction.private_token_contract`: neighbouring =
add/remove one sensitive prompt of the batch, also from 0 to 1 prompts (an empty
batch has ``zbar = 0``: a uniform draw over the candidates); unit = one
prompt; sensitivity of ``zbar_q`` = ``c/s + grid`` (sup norm); bounded range
epsilon ``2 (c/s + grid) / tau``, hence zCDP ``((c/s + grid)/tau)^2 / 2``.

Restricting the candidates to ``allowed`` tokens (e.g. the public prompt's
top-k) keeps this guarantee as long as the set is chosen without looking at the
private prompts: the mechanism is then an exponential mechanism over a smaller,
public output range. The candidates are gathered on the model's device before
any float64 work: the clip needs the row maxima over the whole vocabulary (one
float32 reduction, exact), after which clipping, summing and rounding only touch
the ``k`` candidate columns, and only ``k`` numbers travel to the host per token.
The values are the same, bit for bit, as clipping the whole vocabulary first.

Vectorized: ``logits`` may be ``(n_prompts, vocab)`` or ``(..., n_prompts, vocab)``
and ``size`` draws independent samples.
"""

from __future__ import annotations

import numpy as np
import torch
from scipy.special import log_softmax

from dpkit.privacy.exact import exact_exponential_sample
from dpkit.privacy.private_prediction import private_token_contract, token_grid
from dpkit.privpred.clipping import Denominator, aggregate_logits, clip_and_recenter, restrict_to
from dpkit.validate import ParameterError, check_positive


PUBLIC_GRID = 2.0 ** -30  # grid of the free public tokens (public logits: any fine grid will do)


def _check_rng(rng) -> np.random.Generator:
    if not isinstance(rng, np.random.Generator):
        raise ParameterError("rng", rng, "must be a numpy.random.Generator (randomness is passed in)")
    return rng


def _zbar(logits, clip: float, expected_batch_size: float, denominator: Denominator):
    """``clip -> sum / s`` in float64 (torch stays on its device); an empty batch gives zeros."""
    if type(logits).__module__.startswith("torch"):
        logits = logits.double()
    return aggregate_logits(clip_and_recenter(logits, clip), expected_batch_size, denominator)


def _zbar_candidates(logits, clip: float, expected_batch_size: float, denominator: Denominator, idx):
    """``_zbar`` on the candidate columns ``idx`` of torch ``logits`` only (same values as the full vector's).

    ``clip_c(z)_i = max(-c, z_i - max_j z_j + c)`` is elementwise once the row
    maximum over the WHOLE vocabulary is known; a float32 maximum is exact, so
    the float64 results equal those of clipping the whole vocabulary in float64.
    """
    clip = check_positive("clip", clip)
    top = logits.max(dim=-1, keepdim=True).values.double() if logits.shape[-2] else None
    picked = logits[..., idx].double()
    clipped = (picked - top + clip).clamp_min(-clip) if top is not None else picked
    return aggregate_logits(clipped, expected_batch_size, denominator)


def _to_numpy(x) -> np.ndarray:
    if type(x).__module__.startswith("torch"):
        return x.detach().double().cpu().numpy()
    return np.asarray(x, dtype=np.float64)


def _candidates(allowed, device=None):
    """``allowed`` (boolean mask or index array, numpy or torch) as sorted int64 indices."""
    if type(allowed).__module__.startswith("torch"):
        idx = allowed.nonzero().flatten() if allowed.dtype == torch.bool else allowed.long()
        return idx.to(device) if device is not None else idx
    arr = np.asarray(allowed)
    idx = np.flatnonzero(arr) if arr.dtype == bool else arr.astype(np.int64)
    if device is not None:
        return torch.as_tensor(idx, device=device)
    return idx


def _draw(scores, scale: float, grid: float, rng: np.random.Generator, allowed, size):
    """One exact exponential-mechanism draw over ``allowed`` (all tokens when None): token id(s)."""
    if allowed is None:
        return exact_exponential_sample(_to_numpy(scores), scale, rng, grid, size=size)
    torch_in = type(scores).__module__.startswith("torch")
    idx = _candidates(allowed, scores.device if torch_in else None)
    if len(idx) == 0:
        raise ParameterError("allowed", allowed, "must allow at least one token")
    picked = exact_exponential_sample(_to_numpy(scores[..., idx]), scale, rng, grid, size=size)
    return _to_numpy(idx).astype(np.int64)[picked]


def private_log_weights(logits, clip: float, expected_batch_size: float, temperature: float,
                        allowed=None, denominator: Denominator = "expected") -> np.ndarray:
    """The log-weights a private token is drawn from: ``zbar`` rounded to ``token_grid(s, c)``, over ``tau``.

    Float64; ``-inf`` outside ``allowed`` when given.
    """
    temperature = check_positive("temperature", temperature)
    grid = token_grid(expected_batch_size, clip)
    zbar = _to_numpy(_zbar(logits, clip, expected_batch_size, denominator))
    weights = np.rint(zbar / grid) * grid / temperature
    if allowed is not None:
        weights = restrict_to(weights, _to_numpy(_candidates(allowed)).astype(np.int64))
    return weights


def sample_private_token(logits, clip: float, expected_batch_size: float, temperature: float,
                         rng: np.random.Generator, *, allowed=None, denominator: Denominator = "expected",
                         size=None):
    """Draw token id(s) exactly from ``softmax(zbar_q / tau)``; see the module docstring for the guarantee.

    ``logits`` ``(n, vocab)`` with ``n >= 0`` (an empty batch draws uniformly from the candidates).
    """
    _check_rng(rng)
    temperature = check_positive("temperature", temperature)
    grid = token_grid(expected_batch_size, clip)
    if allowed is not None and type(logits).__module__.startswith("torch") and logits.ndim >= 2:
        idx = _candidates(allowed, logits.device)
        if len(idx) == 0:
            raise ParameterError("allowed", allowed, "must allow at least one token")
        zbar = _zbar_candidates(logits, clip, expected_batch_size, denominator, idx)
        picked = exact_exponential_sample(_to_numpy(zbar), temperature, rng, grid, size=size)
        return _to_numpy(idx).astype(np.int64)[picked]
    zbar = _zbar(logits, clip, expected_batch_size, denominator)
    return _draw(zbar, temperature, grid, rng, allowed, size)


def sample_private_token_from_sum(clipped_sum, clip: float, expected_batch_size: float, temperature: float,
                                  rng: np.random.Generator, *, candidates=None) -> int:
    """One private token from the private rows' clipped logits already summed (float64, on ``candidates``).

    The same mechanism as :func:`sample_private_token`: ``zbar = clipped_sum / s``
    rounded to ``token_grid(s, c)``, drawn exactly from ``softmax(zbar_q / tau)``
    over ``candidates`` (sorted token ids; None = the whole vocabulary). The sum
    is accumulated row by row by :class:`dpkit.privpred.private_rows.PrivateRows`
    (zeros for an empty batch: a uniform draw).
    """
    _check_rng(rng)
    temperature = check_positive("temperature", temperature)
    grid = token_grid(expected_batch_size, clip)
    zbar = _to_numpy(clipped_sum) / float(expected_batch_size)
    picked = int(exact_exponential_sample(zbar, temperature, rng, grid))
    return picked if candidates is None else int(_to_numpy(candidates).astype(np.int64)[picked])


def sample_public_token(public_logits, temperature: float, rng: np.random.Generator, *, allowed=None,
                        size=None):
    """Draw from ``softmax(z_public / tau_public)`` (exact sampler, grid ``PUBLIC_GRID``): no private data, no cost."""
    _check_rng(rng)
    temperature = check_positive("temperature", temperature)
    z = public_logits
    z = z.double() if type(z).__module__.startswith("torch") else np.asarray(z, dtype=np.float64)
    return _draw(z, temperature, PUBLIC_GRID, rng, allowed, size)


def token_epsilon(clip: float, expected_batch_size: float, temperature: float) -> float:
    """Pure-DP (and bounded-range) epsilon ``2(c/s + grid)/tau`` of one private token, read from its one
    home, :func:`dpkit.privacy.private_prediction.private_token_contract`."""
    return private_token_contract(expected_batch_size, clip, temperature).epsilon


def token_rho(clip: float, expected_batch_size: float, temperature: float) -> float:
    """zCDP cost of one private token (Lemma 4), from :func:`~dpkit.privacy.private_prediction.private_token_contract`."""
    return private_token_contract(expected_batch_size, clip, temperature).rho()


def token_log_probabilities(logits, clip: float, expected_batch_size: float, temperature: float,
                            denominator: Denominator = "expected", allowed=None) -> np.ndarray:
    """Exact log-probabilities of the private-token distribution (for plots and audits)."""
    w = private_log_weights(logits, clip, expected_batch_size, temperature, allowed, denominator)
    return log_softmax(np.asarray(w, dtype=np.float64), axis=-1)


def worst_case_log_ratio(batch_logits, extra_logits, clip: float, expected_batch_size: float,
                         temperature: float, denominator: Denominator = "expected") -> float:
    """Largest ``|log P(x | batch + extra) - log P(x | batch)|`` over tokens x.

    ``batch_logits`` ``(n, vocab)`` and the neighbouring batch with one more
    prompt whose logits are ``extra_logits`` ``(vocab,)``: the privacy loss of
    one token actually realised by these logits. With ``denominator="expected"``
    it never exceeds :func:`token_epsilon`.
    """
    batch = np.asarray(batch_logits, dtype=np.float64)
    extra = np.asarray(extra_logits, dtype=np.float64)
    if batch.ndim != 2 or extra.shape != batch.shape[-1:]:
        raise ParameterError("extra_logits", extra, "must be one vector matching batch_logits (n, vocab)")
    a = token_log_probabilities(batch, clip, expected_batch_size, temperature, denominator)
    b = token_log_probabilities(np.vstack([batch, extra]), clip, expected_batch_size, temperature, denominator)
    return float(np.max(np.abs(a - b)))
