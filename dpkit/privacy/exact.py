"""Exact samplers for releases: discrete Laplace, discrete Gaussian, exponential mechanism.

Textbook floating-point noise is not the distribution its proof is about:
``value + rng.laplace(...)`` in doubles leaks the value through the low bits
{cite}`mironov2012significance`, and numpy's Gumbel draw is bounded, so
Gumbel-max gives probability exactly 0 to candidates whose log-weight gap
exceeds about 40.  The samplers here draw only uniform random integers from the
``numpy.random.Generator`` passed in (``Generator.integers`` is unbiased) and
use integer or rational arithmetic, so each output has exactly the stated
distribution:

* :func:`bernoulli_exp`, :func:`discrete_laplace`, :func:`discrete_gaussian`
  are Algorithms 1-3 of {cite}`canonne2020discrete`: ``discrete_laplace(b)``
  has P(k) proportional to ``exp(-|k| / b)`` on the integers, ``discrete_gaussian``
  has P(k) proportional to exp(-k^2 / (2 sigma^2)).  Shifting an integer
  statistic of L1 sensitivity Delta by discrete Laplace(b) is (Delta/b)-DP;
  shifting one of L2 sensitivity Delta by the discrete Gaussian is
  (Delta^2 / (2 sigma^2))-zCDP (their Theorems 4 and 14).
* :func:`exact_exponential_sample` samples index i with probability
  proportional to exp(q_i * grid / scale), q_i = round(score_i / grid): the
  scores are first quantized to a declared grid, so the output distribution
  is a function of the integers q_i alone.  Sampling is by inverse CDF with a
  lazily refined uniform: float64 weights with a rigorous error bound decide
  almost every draw; when the uniform falls inside the error bound, the draw
  is finished with interval arithmetic (mpmath) and more random bits.

Rounding a real statistic to the grid moves each coordinate by at most grid/2,
so neighbours' rounded values differ by at most Delta + d * grid in L1,
Delta + sqrt(d) * grid in L2 and Delta + grid per candidate score; the
mechanisms in :mod:`dpkit.privacy` state that sum as their sensitivity.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from contextlib import contextmanager
from fractions import Fraction

import numpy as np
from mpmath import iv

from dpkit.privacy._common import check_size
from dpkit.validate import ParameterError, check_positive, check_rng

_INT_LIMIT = 2 ** 52     # numerators and denominators of the rational parameters (int64 arithmetic)
_Q_LIMIT = 2 ** 52       # quantized scores are clipped to +-_Q_LIMIT (a 1-Lipschitz map: no cost)
_U_BITS = 53             # bits of the uniform drawn for the float64 decision


# -- grids and rational parameters --------------------------------------------------------------

def default_grid(size: float, relative: float = 2.0 ** -20) -> float:
    """The largest power of two at most ``size * relative``: a fine public grid for rounding.

    A power of two keeps ``grid * k`` exact in float64, so the released value is an
    exact multiple of the grid.
    """
    size = check_positive("size", size)
    relative = check_positive("relative", relative)
    return math.ldexp(1.0, math.floor(math.log2(size * relative)))


def rational_at_least(value: float, limit: int = _INT_LIMIT) -> Fraction:
    """A fraction t/s >= ``value`` with t, s <= ``limit`` (relative excess below ~2/limit).

    Noise scales are rounded up to such fractions, so the noise drawn is never
    smaller than the one the privacy claim was computed for.
    """
    value = check_positive("value", value)
    if value * 2 > limit:
        raise ParameterError("value", value, f"is too large for the exact sampler (must be < {limit // 2})")
    s = 1
    while value * s * 2 <= limit and s * 2 <= limit:
        s *= 2
    exact = Fraction(value)
    t = math.ceil(exact * s)
    return Fraction(t, s)


def quantize(values, grid: float) -> np.ndarray:
    """round(values / grid) as int64, clipped to +-2^52; -inf stays marked by the caller."""
    grid = check_positive("grid", grid)
    array = np.asarray(values, dtype=np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        q = np.rint(array / grid)
    q = np.clip(np.nan_to_num(q, nan=0.0, posinf=_Q_LIMIT, neginf=-_Q_LIMIT), -_Q_LIMIT, _Q_LIMIT)
    return q.astype(np.int64)


# -- uniform integers and Bernoulli(exp(-x)) -------------------------------------------------------

def _uniform_below(n: int, rng: np.random.Generator) -> int:
    """A uniform integer in [0, n) for any Python int n >= 1 (rejection from 62-bit words)."""
    if n <= 2 ** 62:
        return int(rng.integers(n))
    bits = n.bit_length()
    while True:
        x = 0
        for _ in range(-(-bits // 62)):
            x = (x << 62) | int(rng.integers(2 ** 62))
        x >>= (-(-bits // 62)) * 62 - bits
        if x < n:
            return x


def _bernoulli_exp_at_most_one(num: int, den: int, rng: np.random.Generator) -> bool:
    """Bernoulli(exp(-num/den)) for 0 <= num <= den (CKS Algorithm 1, first case)."""
    k = 1
    while _uniform_below(den * k, rng) < num:   # A_k ~ Bernoulli(gamma / k)
        k += 1
    return k % 2 == 1


def bernoulli_exp(x, rng: np.random.Generator) -> bool:
    """One exact draw of Bernoulli(exp(-x)) for a rational x >= 0 (a Fraction, int or float)."""
    x = Fraction(x)
    if x < 0:
        raise ParameterError("x", float(x), "must be >= 0")
    whole, part = divmod(x.numerator, x.denominator)
    for _ in range(whole):
        if not _bernoulli_exp_at_most_one(1, 1, rng):
            return False
    return _bernoulli_exp_at_most_one(part, x.denominator, rng)


def _bernoulli_exp_vec(num: np.ndarray, den: int, rng: np.random.Generator) -> np.ndarray:
    """Vectorised Bernoulli(exp(-num_i/den)) for 0 <= num_i <= den <= 2^52 (1-d int64 arrays).

    den * k stays below 2^63 unless some A_k succeeds 2^11 times in a row
    (probability 1/2048!)."""
    result = np.zeros(num.size, dtype=bool)
    active = np.arange(num.size)
    k = 1   # all active draws are at the same step k: A_k ~ Bernoulli(num / (den k))
    while active.size:
        success = rng.integers(0, den * k, size=active.size) < num[active]
        result[active[~success]] = k % 2 == 1
        active = active[success]
        k += 1
    return result


def _geometric_exp_minus_one(size: int, rng: np.random.Generator) -> np.ndarray:
    """Number of consecutive successes of Bernoulli(exp(-1)) (P(V = v) = (1 - 1/e) e^-v)."""
    count = np.zeros(size, dtype=np.int64)
    active = np.arange(size)
    ones = np.ones(size, dtype=np.int64)
    while active.size:
        success = _bernoulli_exp_vec(ones[active], 1, rng)
        count[active[success]] += 1
        active = active[success]
    return count


# -- discrete Laplace and discrete Gaussian ------------------------------------------------------

def _discrete_laplace_rational(t: int, s: int, n: int, rng: np.random.Generator) -> np.ndarray:
    """n draws with P(k) proportional to exp(-|k| s / t) (CKS Algorithm 2), vectorised."""
    out = np.zeros(n, dtype=np.int64)
    pending = np.arange(n)
    while pending.size:
        m = pending.size
        u = rng.integers(0, t, size=m)
        keep = _bernoulli_exp_vec(u, t, rng)
        v = _geometric_exp_minus_one(m, rng)
        y = (u + t * v) // s
        negative = rng.integers(0, 2, size=m).astype(bool)
        accept = keep & ~(negative & (y == 0))
        out[pending[accept]] = np.where(negative[accept], -y[accept], y[accept])
        pending = pending[~accept]
    return out


def _check_size(size) -> tuple[int, ...]:
    return check_size(size)


def discrete_laplace(scale, rng: np.random.Generator, size=None) -> np.ndarray:
    """Integers with P(k) proportional to ``exp(-|k| / b)``, b = ``scale`` rounded up to a fraction.

    ``scale`` may be a ``fractions.Fraction`` (used exactly when its
    numerator and denominator are below 2^52) or a float (rounded up by
    :func:`rational_at_least`).  Returns int64 of shape ``size``.
    """
    rng = check_rng("rng", rng)
    b = scale if isinstance(scale, Fraction) and scale.numerator < _INT_LIMIT and scale.denominator < _INT_LIMIT \
        else rational_at_least(float(check_positive("scale", float(scale))))
    if b <= 0:
        raise ParameterError("scale", float(b), "must be > 0")
    shape = _check_size(size)
    n = int(np.prod(shape)) if shape else 1
    draws = _discrete_laplace_rational(b.numerator, b.denominator, n, rng)
    return draws.reshape(shape) if shape else draws[0]


def _bernoulli_exp_batch(numerators: np.ndarray, den: int, rng: np.random.Generator) -> np.ndarray:
    """Bernoulli(exp(-n_i/den)) for non-negative Python-int numerators, decided lazily.

    U ~ Uniform[0, 1) is drawn as 53 bits; the draw is 1 iff U < exp(-x).  A
    float64 value of exp(-x) is within 2^-47 of the truth (x rounded with
    relative error below 6 * 2^-53 and exp within 2^-49, and e^-x x <= 1/e), so
    it decides unless U lies within 2^-46 of it; then interval arithmetic and
    more bits of U finish the draw exactly.
    """
    x = np.array([float(n) for n in numerators], dtype=np.float64) / float(den)
    e = np.exp(-x)
    k = rng.integers(0, 2 ** _U_BITS, size=len(numerators), dtype=np.int64)
    u_lo = k.astype(np.float64) * 2.0 ** -_U_BITS
    u_hi = (k + 1).astype(np.float64) * 2.0 ** -_U_BITS
    accept = u_hi <= e - 2.0 ** -46
    reject = u_lo >= e + 2.0 ** -46
    result = accept.copy()
    for j in np.flatnonzero(~accept & ~reject):
        result[j] = _refine_bernoulli(int(numerators[j]), den, int(k[j]), _U_BITS, rng)
    return result


@contextmanager
def _intervals():
    """mpmath's interval arithmetic ``iv``, its precision restored on exit."""
    saved = iv.prec
    try:
        yield iv
    finally:
        iv.prec = saved


def _refine_bernoulli(num: int, den: int, k_bits: int, m_bits: int, rng: np.random.Generator) -> bool:
    """Finish U < exp(-num/den) for U in [k/2^m, (k+1)/2^m) exactly (interval arithmetic)."""
    with _intervals() as iv:
        return _refine_bernoulli_at(iv, num, den, k_bits, m_bits, 128, rng)


def _refine_bernoulli_at(iv, num: int, den: int, k_bits: int, m_bits: int, precision: int,
                         rng: np.random.Generator) -> bool:
    while True:
        iv.prec = precision
        value = iv.exp(-(iv.mpf(num) / iv.mpf(den)))
        scale = iv.mpf(2) ** (-m_bits)
        if (iv.mpf(k_bits + 1) * scale).b <= value.a:
            return True
        if (iv.mpf(k_bits) * scale).a >= value.b:
            return False
        k_bits = (k_bits << 64) | int(rng.integers(0, 2 ** 64, dtype=np.uint64))
        m_bits += 64
        precision += 64


def _discrete_gaussian_rational(sigma2: Fraction, n: int, rng: np.random.Generator) -> np.ndarray:
    """n draws of the discrete Gaussian with variance parameter sigma2 (CKS Algorithm 3), vectorised.

    Candidate Y ~ discrete Laplace(t), t = floor(sigma) + 1, accepted with
    probability exp(-(|Y| - sigma2/t)^2 / (2 sigma2)) = exp(-a^2 / B) with
    a = |Y| t den - num and B = 2 num den t^2 (sigma2 = num/den), exact integers.
    """
    num, den = sigma2.numerator, sigma2.denominator
    t = math.isqrt(num // den) + 1
    big = 2 * num * den * t * t
    out = np.zeros(n, dtype=np.int64)
    pending = np.arange(n)
    while pending.size:
        y = _discrete_laplace_rational(t, 1, pending.size, rng)
        a = [abs(int(v)) * t * den - num for v in y]
        accept = _bernoulli_exp_batch(np.array([v * v for v in a], dtype=object), big, rng)
        out[pending[accept]] = y[accept]
        pending = pending[~accept]
    return out


def discrete_gaussian(sigma, rng: np.random.Generator, size=None) -> np.ndarray:
    """Integers with P(k) proportional to exp(-k^2 / (2 sigma^2)) (CKS Algorithm 3).

    ``sigma`` (a float or Fraction) is rounded up to a fraction first, so sigma^2
    is rational and every step is exact.  Returns int64 of shape ``size``.
    """
    rng = check_rng("rng", rng)
    sig = sigma if isinstance(sigma, Fraction) else rational_at_least(float(check_positive("sigma", float(sigma))))
    shape = _check_size(size)
    n = int(np.prod(shape)) if shape else 1
    draws = _discrete_gaussian_rational(sig * sig, n, rng)
    return draws.reshape(shape) if shape else draws[0]


# -- the exponential mechanism ------------------------------------------------------------------

def _eta(grid: float, scale: float) -> float:
    """fl(grid / scale) rounded down, so the weights' temperature never exceeds the claimed one."""
    eta = grid / scale
    if Fraction(eta) > Fraction(grid) / Fraction(scale):
        eta = float(np.nextafter(eta, 0.0))
    return eta


def _error_bound(n_candidates: int, total: np.ndarray) -> np.ndarray:
    """Rigorous bound on |float cumulative weight - exact cumulative weight| (see the notes below).

    Each weight exp(-eta d) is in (0, 1]; rounding eta*d (relative 2^-53) and
    numpy's exp (assumed within 2^-49 relative, far above its documented
    accuracy) give an absolute error <= 2^-47 per weight; a recursive sum of
    K terms adds at most 1.01 K 2^-53 times the total.
    """
    k = float(n_candidates)
    per_weight = k * 2.0 ** -47
    return per_weight + 1.01 * k * 2.0 ** -53 * (total + per_weight)


def _refine(d: np.ndarray, eta: float, k_bits: int, m_bits: int, rng: np.random.Generator) -> int:
    """Finish one draw exactly: interval arithmetic at growing precision, more uniform bits.

    ``d`` are the non-negative integer gaps q_max - q_i of the allowed candidates
    (in candidate order); the uniform U is known to lie in
    [k_bits / 2^m_bits, (k_bits + 1) / 2^m_bits).  Returns the position in ``d``.
    """
    with _intervals() as iv:
        return _refine_at(iv, d, eta, k_bits, m_bits, rng)


def _refine_at(iv, d: np.ndarray, eta: float, k_bits: int, m_bits: int, rng: np.random.Generator) -> int:
    values, inverse = np.unique(d, return_inverse=True)
    precision = 128
    while True:
        iv.prec = precision
        eta_iv = iv.mpf(eta)
        weight_of = [iv.exp(-eta_iv * int(v)) for v in values]
        lows, highs = [], []
        total = iv.mpf(0)
        for idx in inverse:
            total = total + weight_of[idx]
            lows.append(total.a)
            highs.append(total.b)
        scale = iv.mpf(2) ** (-m_bits)
        target_lo = (iv.mpf(k_bits) * scale * total).a
        target_hi = (iv.mpf(k_bits + 1) * scale * total).b
        # candidate i wins when C_{i-1} <= U W < C_i; decided when both bounds are certain
        i = bisect_right(highs, target_lo)
        if i < len(d) and (i == 0 or highs[i - 1] <= target_lo) and (i == len(d) - 1 or target_hi <= lows[i]):
            return i
        k_bits = (k_bits << 64) | int(rng.integers(0, 2 ** 64, dtype=np.uint64))
        m_bits += 64
        precision += 64


def exact_exponential_sample(scores, scale: float, rng: np.random.Generator, grid: float, size=None,
                             *, _force_refine: bool = False) -> np.ndarray:
    """Indices i drawn with probability proportional to exp(round(score_i / grid) * grid / scale).

    ``scores`` has shape ``(*batch, K)`` (-inf excludes a candidate); the result has
    shape ``(*size, *batch)``.  The distribution depends on the scores only through
    their quantized values, and every draw is exact (no float rounding of weights
    reaches the output).  Privacy: if each score moves by at most ``sensitivity``
    between neighbours, the quantized scores move by at most ``sensitivity + grid``,
    so this is the exponential mechanism at epsilon = 2 (sensitivity + grid) / scale
    (bounded range); ``(sensitivity + grid) / scale`` for monotone scores.
    Cost: one float64 pass over the K weights per row; about one draw in 10^9
    (K = 50,000) takes the slow, exact refinement.
    """
    scale = check_positive("scale", scale)
    grid = check_positive("grid", grid)
    rng = check_rng("rng", rng)
    try:
        array = np.asarray(scores, dtype=np.float64)
    except (TypeError, ValueError):
        raise ParameterError("scores", scores, "must be an array of real numbers") from None
    if array.ndim == 0 or array.shape[-1] == 0:
        raise ParameterError("scores", scores, "must have at least one candidate along the last axis")
    if np.isnan(array).any() or np.isposinf(array).any():
        raise ParameterError("scores", scores, "must not contain NaN or +inf (-inf marks an excluded candidate)")
    excluded = np.isneginf(array)
    any_excluded = bool(excluded.any())
    if any_excluded and excluded.all(axis=-1).any():
        raise ParameterError("scores", scores, "every row needs at least one finite score")
    batch, n_candidates = array.shape[:-1], array.shape[-1]
    rows = array.reshape(-1, n_candidates)
    excluded = excluded.reshape(-1, n_candidates)
    # quantized scores as exact integers held in float64 (|q| <= 2^52); gaps q_max - q in [0, 2^53]
    gaps = rows / grid
    if any_excluded:
        gaps[excluded] = -np.inf
    np.rint(gaps, out=gaps)
    np.clip(gaps, -_Q_LIMIT, _Q_LIMIT, out=gaps)
    np.subtract(gaps.max(axis=-1, keepdims=True), gaps, out=gaps)
    eta = _eta(grid, scale)
    weights = np.multiply(gaps, -eta)
    np.exp(weights, out=weights)
    if any_excluded:
        weights[excluded] = 0.0
    cumulative = np.cumsum(weights, axis=-1)
    total = cumulative[:, -1]
    margin = 3.0 * _error_bound(n_candidates, total) + 16.0 * 2.0 ** -53 * total
    shape = _check_size(size)
    n_draws = int(np.prod(shape)) if shape else 1
    k = rng.integers(0, 2 ** _U_BITS, size=(n_draws, rows.shape[0]), dtype=np.int64)
    u_lo = k.astype(np.float64) * 2.0 ** -_U_BITS
    u_hi = (k + 1).astype(np.float64) * 2.0 ** -_U_BITS
    n_rows = rows.shape[0]
    targets_lo, targets_hi = u_lo * total, u_hi * total            # (n_draws, n_rows)
    mid = 0.5 * (targets_lo + targets_hi)
    if n_rows == 1:
        idx = np.searchsorted(cumulative[0], mid[:, 0], side="right")[:, None]
    else:   # many small rows (batches, NoisyTopK): count the boundaries below each target
        idx = np.stack([np.sum(cumulative <= mid[j][:, None], axis=-1) for j in range(n_draws)]) \
            if n_draws * n_rows * n_candidates > 4_000_000 else \
            np.sum(cumulative[None, :, :] <= mid[:, :, None], axis=-1)
    idx = np.minimum(idx, n_candidates - 1)
    row = np.broadcast_to(np.arange(n_rows), idx.shape)
    below = np.where(idx > 0, cumulative[row, np.maximum(idx - 1, 0)], 0.0)
    safe_low = (idx == 0) | (below + margin[row] <= targets_lo)
    safe_high = (idx == n_candidates - 1) | (targets_hi <= cumulative[row, idx] - margin[row])
    safe = safe_low & safe_high & ~excluded[row, idx] & (not _force_refine)
    out = idx.astype(np.int64)
    for j, r in zip(*np.nonzero(~safe)):
        allowed = np.flatnonzero(~excluded[r])
        out[j, r] = allowed[_refine(gaps[r, allowed].astype(np.int64), eta, int(k[j, r]), _U_BITS, rng)]
    out = out.reshape((n_draws,) + batch)
    return out.reshape(shape + batch) if shape else out[0]
