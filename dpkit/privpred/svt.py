"""The sparse-vector step of Algorithm 1: is the public prompt's prediction good enough?

Distance (Eq. 2 of {cite}`amin2024private`)::

    d(Z, z_pub) = || (1/s) * sum_i softmax(z_i) - softmax(z_pub) ||_1

with ``s`` the EXPECTED batch size. Adding or removing one prompt moves the
average by ``softmax(z)/s``, whose L1 norm is ``1/s``, so ``d`` has sensitivity
``1/s`` (Lemma 3). An empty batch has average ``0`` and ``d = 1`` exactly; one
prompt more moves it by at most ``1/s`` as well. The test is the AboveThreshold mechanism
{cite}`dwork2009complexity` of the privacy core: a noisy threshold
``theta + Laplace(sigma)`` drawn when the gate opens and after every private
token, and fresh ``Laplace(2 sigma)`` noise on every query. A query below the
threshold emits a PUBLIC token, drawn from ``softmax(z_pub / tau_public)``, at
no extra cost; the first query at or above it ends the AboveThreshold instance
and a private token is drawn. One instance costs ``2/(s sigma)`` pure DP,
i.e. ``2/(s sigma)^2`` zCDP (Lemma 5), whatever the number of public tokens.

Pure, vectorized functions: :func:`mean_softmax`, :func:`svt_distance`,
:func:`svt_gate` (the privacy core's AboveThreshold with sensitivity ``1/s``;
its ``.run`` answers many non-adaptive query sequences at once, its
``.session(rng)`` streams adaptive ones) and :func:`svt_step` (one query).
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import softmax

from dpkit.privacy.private_prediction import check_batch_size, svt_contract
from dpkit.privacy.sparse_vector import AboveThreshold
from dpkit.privpred.clipping import Denominator, _as_array, _check_denominator, _is_torch
from dpkit.validate import ParameterError, check_positive, check_real


def _softmax(z):
    if _is_torch(z):
        return z.double().softmax(-1)
    return softmax(np.asarray(z, dtype=np.float64), axis=-1)


def mean_softmax(logits, expected_batch_size: float, denominator: Denominator = "expected"):
    """``(1/s) * sum_i softmax(z_i)`` over the prompt axis ``-2`` (``denominator='actual'``: divide by n)."""
    s = check_batch_size(expected_batch_size, "expected_batch_size")
    _check_denominator(denominator)
    z = _as_array("logits", logits)
    if z.ndim < 2:
        raise ParameterError("logits", tuple(z.shape), "needs shape (..., n_prompts, vocab)")
    if z.shape[-2] == 0 and denominator == "actual":
        raise ParameterError("logits", tuple(z.shape), "the batch is empty: the 'actual' divisor is undefined")
    p = _softmax(z)
    total = p.sum(-2) if _is_torch(p) else p.sum(axis=-2)
    return total / (s if denominator == "expected" else z.shape[-2])


def svt_distance(private_logits, public_logits, expected_batch_size: float,
                 denominator: Denominator = "expected") -> np.ndarray | float:
    """Eq. (2): L1 distance between the averaged private softmax and the public softmax.

    ``private_logits`` ``(..., n, vocab)``, ``public_logits`` ``(..., vocab)``;
    returns ``(...)`` (a float for a single batch). Sensitivity ``1/s``.
    """
    avg = mean_softmax(private_logits, expected_batch_size, denominator)
    pub = _softmax(_as_array("public_logits", public_logits))
    if _is_torch(avg):
        d = (avg - pub.to(avg.dtype)).abs().sum(-1).cpu().numpy()
    else:
        d = np.abs(avg - np.asarray(pub)).sum(axis=-1)
    return float(d) if np.ndim(d) == 0 else d


def check_svt_parameters(threshold, sigma):
    """``threshold`` finite real (None or -inf = SVT off) and ``sigma > 0`` when on."""
    if threshold is None or (isinstance(threshold, float) and threshold == -math.inf):
        return None, None
    threshold = check_real("svt_threshold", threshold)
    if sigma is None:
        raise ParameterError("svt_sigma", sigma, "must be > 0 when svt_threshold is set")
    sigma = check_positive("svt_sigma", sigma)
    return threshold, sigma


def svt_rho(expected_batch_size: float, sigma: float) -> float:
    """zCDP cost ``2/(s sigma)^2`` of one AboveThreshold instance (Lemma 5), read from its one home,
    :func:`dpkit.privacy.private_prediction.svt_contract`."""
    return svt_contract(expected_batch_size, sigma).rho()


def svt_gate(threshold: float, sigma: float, expected_batch_size: float):
    """The privacy core's :class:`~dpkit.privacy.AboveThreshold` for queries of sensitivity ``1/s``."""
    threshold, sigma = check_svt_parameters(threshold, sigma)
    if threshold is None:
        raise ParameterError("svt_threshold", threshold, "is off; no gate to build")
    s = check_positive("expected_batch_size", expected_batch_size)
    return AboveThreshold(threshold, sigma, sensitivity=1.0 / s, unit="prompt", neighbouring="add/remove")


def svt_step(private_logits, public_logits, expected_batch_size: float, session) -> tuple[bool, float]:
    """One query of a running AboveThreshold ``session``: ``(private?, distance)``.

    ``True`` means the noisy distance reached the noisy threshold: draw a private
    token and open a new session (fresh threshold noise). ``False``: emit a
    public token for free.
    """
    d = svt_distance(private_logits, public_logits, expected_batch_size)
    return bool(session.test(d)), d


def svt_step_from_sum(softmax_sum, public_logits, expected_batch_size: float, session) -> tuple[bool, float]:
    """:func:`svt_step` from the private rows' softmaxes already summed (float64, ``(vocab,)``).

    ``d = || softmax_sum / s - softmax(z_pub) ||_1``, Eq. (2), with the sum
    accumulated row by row by :class:`dpkit.privpred.private_rows.PrivateRows`
    (zeros for an empty batch: ``d = 1``).
    """
    s = check_positive("expected_batch_size", expected_batch_size)
    avg = softmax_sum / s
    pub = _softmax(_as_array("public_logits", public_logits))
    if _is_torch(avg):
        d = float((avg - pub.to(avg.dtype)).abs().sum(-1))
    else:
        d = float(np.abs(avg - np.asarray(pub)).sum(axis=-1))
    return bool(session.test(d)), d
