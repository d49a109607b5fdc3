"""One token of Algorithm 1: the exponential mechanism over clipped, averaged logits.

:func:`sample_private_token` draws ``x ~ softmax(zbar / tau)`` with
``zbar = (1/s) * sum_i clip_c(z_i)`` (Eq. 1 and line 13 of Algorithm 1 in
{cite}`amin2024private`), using the privacy core's Gumbel-max sampler so the
draw happens in log space and is reproducible from the ``numpy`` Generator.

Contract of one private token (Lemma 4 of the paper): neighbouring = add/remove
one sensitive prompt of the batch; unit = one prompt; sensitivity of ``zbar``
= ``c/s`` (sup norm); the draw is the exponential mechanism with
epsilon = ``2c/(s tau)`` in the bounded-range sense, hence pure
``2c/(s tau)``-DP and ``(c/(s tau))^2 / 2``-zCDP.

Restricting the candidates to ``allowed`` tokens (e.g. the public prompt's
top-k) keeps this guarantee as long as the set is chosen without looking at the
private prompts: the mechanism is then an exponential mechanism over a smaller,
public output range, and its utility still has sensitivity ``c/s``.

Vectorized: ``logits`` may be ``(n_prompts, vocab)`` or ``(..., n_prompts, vocab)``
and ``size`` draws independent samples (as the privacy core's sampler does).
"""

from __future__ import annotations

import numpy as np
from scipy.special import log_softmax

from dpkit.privacy.private_prediction import private_token_contract
from dpkit.privpred.clipping import Denominator, aggregate_logits, clip_and_recenter, restrict_to
from dpkit.validate import ParameterError, check_positive


def _gumbel_max_sample(log_weights, rng, size=None):
    from dpkit.privacy import gumbel_max_sample

    return gumbel_max_sample(log_weights, rng, size=size)


def _check_rng(rng) -> np.random.Generator:
    if not isinstance(rng, np.random.Generator):
        raise ParameterError("rng", rng, "must be a numpy.random.Generator (randomness is passed in)")
    return rng


def _aggregate(logits, clip: float, expected_batch_size: float, temperature: float, denominator: Denominator):
    """``clip -> sum / s -> / tau`` in float64 (torch stays on its device); an empty batch gives zeros."""
    temperature = check_positive("temperature", temperature)
    if type(logits).__module__.startswith("torch"):
        logits = logits.double()
    return aggregate_logits(clip_and_recenter(logits, clip), expected_batch_size, denominator) / temperature


def _to_numpy(x) -> np.ndarray:
    if type(x).__module__.startswith("torch"):
        return x.detach().double().cpu().numpy()
    return np.asarray(x, dtype=np.float64)


def _candidates(allowed, device=None):
    """``allowed`` (boolean mask or index array, numpy or torch) as sorted int64 indices."""
    if type(allowed).__module__.startswith("torch"):
        import torch

        idx = allowed.nonzero().flatten() if allowed.dtype == torch.bool else allowed.long()
        return idx.to(device) if device is not None else idx
    arr = np.asarray(allowed)
    idx = np.flatnonzero(arr) if arr.dtype == bool else arr.astype(np.int64)
    if device is not None:
        import torch

        return torch.as_tensor(idx, device=device)
    return idx


def _draw(weights, rng: np.random.Generator, allowed, size):
    """One exponential-mechanism draw over ``allowed`` (all tokens when None): token id(s)."""
    if allowed is None:
        return _gumbel_max_sample(_to_numpy(weights), rng, size=size)
    torch_in = type(weights).__module__.startswith("torch")
    idx = _candidates(allowed, weights.device if torch_in else None)
    if len(idx) == 0:
        raise ParameterError("allowed", allowed, "must allow at least one token")
    picked = _gumbel_max_sample(_to_numpy(weights[..., idx]), rng, size=size)
    return _to_numpy(idx).astype(np.int64)[picked]


def private_log_weights(logits, clip: float, expected_batch_size: float, temperature: float,
                        allowed=None, denominator: Denominator = "expected") -> np.ndarray:
    """``clip -> aggregate -> / tau`` in float64 (optionally restricted, -inf outside ``allowed``)."""
    weights = _to_numpy(_aggregate(logits, clip, expected_batch_size, temperature, denominator))
    if allowed is not None:
        weights = restrict_to(weights, _to_numpy(_candidates(allowed)).astype(np.int64))
    return weights


def sample_private_token(logits, clip: float, expected_batch_size: float, temperature: float,
                         rng: np.random.Generator, *, allowed=None, denominator: Denominator = "expected",
                         size=None):
    """Draw token id(s) from ``softmax(zbar / tau)``; see the module docstring for the guarantee.

    ``logits`` ``(n, vocab)`` with ``n >= 0`` (an empty batch draws uniformly from the candidates).
    """
    _check_rng(rng)
    weights = _aggregate(logits, clip, expected_batch_size, temperature, denominator)
    return _draw(weights, rng, allowed, size)


def sample_public_token(public_logits, temperature: float, rng: np.random.Generator, *, allowed=None,
                        size=None):
    """Draw from ``softmax(z_public / tau_public)``: touches no private data, costs nothing."""
    _check_rng(rng)
    temperature = check_positive("temperature", temperature)
    z = public_logits
    z = z.double() if type(z).__module__.startswith("torch") else np.asarray(z, dtype=np.float64)
    return _draw(z / temperature, rng, allowed, size)


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
