"""Privacy loss and Rényi divergence between two output distributions, computed exactly.

A mechanism with finitely many outputs is a probability vector per dataset; its whole
privacy story between two neighbours ``D`` and ``D'`` is the pair ``(p, q)``:

* the *privacy loss* at an output ``y`` is ``log p(y)/q(y)`` (``inf`` where only ``p`` can
  produce ``y``); the mechanism is ``epsilon``-DP on that pair iff the loss lies in
  ``[-epsilon, epsilon]`` wherever either distribution puts mass (:func:`max_privacy_loss`);
* the *Rényi divergence* of order ``alpha > 1`` is
  ``log(sum p^alpha q^(1-alpha)) / (alpha - 1)`` (:func:`renyi_divergence`); ``rho``-zCDP
  asks for at most ``rho * alpha`` at every order (Bun and Steinke, Def. 1.1);
* *post-processing* by a Markov kernel ``K`` (row ``y`` = the distribution of ``f(y)``,
  ``f`` not reading the data) maps ``p`` to ``p @ K`` and can only shrink both quantities
  (:func:`post_process`).

Closed forms for the two continuous mechanisms of the book, for checking against these
exact sums: :func:`laplace_renyi` (Mironov, "Rényi differential privacy", Table II) and
:func:`gaussian_renyi` (``alpha * shift^2 / (2 sigma^2)``), and :func:`group_guarantee`,
what a guarantee for neighbours gives for datasets ``k`` records apart.
"""

from __future__ import annotations

import math

import numpy as np

from dpkit.validate import ParameterError, check_int, check_positive


def _distribution(name: str, value) -> np.ndarray:
    p = np.asarray(value, dtype=float)
    if p.ndim != 1 or p.size == 0 or not np.all(np.isfinite(p)) or np.any(p < 0):
        raise ParameterError(name, value, "must be a non-empty 1-d array of non-negative probabilities")
    if abs(p.sum() - 1.0) > 1e-9:
        raise ParameterError(name, value, f"must sum to 1 (sums to {p.sum():.12g})")
    return p


def _pair(p, q) -> tuple[np.ndarray, np.ndarray]:
    p, q = _distribution("p", p), _distribution("q", q)
    if p.shape != q.shape:
        raise ParameterError("q", q, f"must have the same number of outputs as p ({p.size})")
    return p, q


def privacy_loss(p, q) -> np.ndarray:
    """``log p(y)/q(y)`` for every output: ``+inf`` where only ``p`` has mass, ``-inf`` where only ``q``
    has, ``nan`` where neither has (such outputs never occur)."""
    p, q = _pair(p, q)
    with np.errstate(divide="ignore", invalid="ignore"):
        loss = np.log(p) - np.log(q)
    loss[(p == 0) & (q == 0)] = np.nan
    return loss


def max_privacy_loss(p, q) -> float:
    """The smallest ``epsilon`` for which the pair satisfies ``epsilon``-DP in both directions (``inf`` if none)."""
    loss = privacy_loss(p, q)
    return float(np.nanmax(np.abs(loss)))


def renyi_divergence(p, q, alpha: float) -> float:
    """``D_alpha(p || q)`` in nats for ``alpha > 1`` (``alpha = inf``: the max divergence ``max log p/q``)."""
    p, q = _pair(p, q)
    alpha = float(alpha)
    if not alpha > 1:
        raise ParameterError("alpha", alpha, "must be greater than 1")
    support = p > 0
    if np.any(q[support] == 0):
        return math.inf
    ps, qs = p[support], q[support]
    if math.isinf(alpha):
        return float(np.max(np.log(ps) - np.log(qs)))
    # log sum p^a q^(1-a), in log space so that large orders do not overflow
    terms = alpha * np.log(ps) + (1.0 - alpha) * np.log(qs)
    top = terms.max()
    return float((top + math.log(np.exp(terms - top).sum())) / (alpha - 1.0))


def post_process(p, kernel) -> np.ndarray:
    """The output distribution of ``f(M(D))`` for a randomized map ``f`` given as a row-stochastic matrix.

    ``kernel[y, z]`` is the probability that ``f`` turns output ``y`` into ``z``; it must not
    depend on the data (that is what makes ``f`` post-processing). A deterministic ``f`` is a
    kernel with one 1 per row.
    """
    p = _distribution("p", p)
    k = np.asarray(kernel, dtype=float)
    if k.ndim != 2 or k.shape[0] != p.size or np.any(k < 0) or not np.allclose(k.sum(axis=1), 1.0, atol=1e-9):
        raise ParameterError("kernel", f"array of shape {k.shape}",
                             f"must be a row-stochastic matrix with {p.size} rows (one per output of p)")
    return p @ k


def deterministic_kernel(outputs, n_values: int) -> np.ndarray:
    """The kernel of a deterministic map: row ``y`` puts mass 1 on ``outputs[y]`` (in ``0..n_values-1``)."""
    n_values = check_int("n_values", n_values, minimum=1)
    outputs = np.asarray(outputs)
    if outputs.ndim != 1 or np.any(outputs < 0) or np.any(outputs >= n_values):
        raise ParameterError("outputs", outputs, f"must be a 1-d array of integers in 0..{n_values - 1}")
    kernel = np.zeros((outputs.size, n_values))
    kernel[np.arange(outputs.size), outputs.astype(int)] = 1.0
    return kernel


def laplace_renyi(alpha: float, shift: float, scale: float) -> float:
    """``D_alpha(Laplace(0, b) || Laplace(shift, b))`` for ``alpha > 1``: with ``t = |shift|/b``,
    ``log(alpha/(2 alpha - 1) e^{(alpha-1) t} + (alpha-1)/(2 alpha - 1) e^{-alpha t}) / (alpha - 1)``."""
    alpha = float(alpha)
    if not alpha > 1 or math.isinf(alpha):
        raise ParameterError("alpha", alpha, "must be a finite order greater than 1")
    t = abs(float(shift)) / check_positive("scale", scale)
    a = math.log(alpha / (2 * alpha - 1)) + (alpha - 1) * t
    b = math.log((alpha - 1) / (2 * alpha - 1)) - alpha * t
    top = max(a, b)
    return (top + math.log(math.exp(a - top) + math.exp(b - top))) / (alpha - 1)


def gaussian_renyi(alpha: float, shift: float, sigma: float) -> float:
    """``D_alpha(N(0, sigma^2) || N(shift, sigma^2)) = alpha shift^2 / (2 sigma^2)``: linear in ``alpha``,
    which is why the Gaussian mechanism is exactly ``shift^2/(2 sigma^2)``-zCDP."""
    alpha = float(alpha)
    if not alpha > 1 or math.isinf(alpha):
        raise ParameterError("alpha", alpha, "must be a finite order greater than 1")
    return alpha * float(shift) ** 2 / (2 * check_positive("sigma", sigma) ** 2)


def group_guarantee(k: int, epsilon: float | None = None, delta: float = 0.0,
                    rho: float | None = None) -> dict[str, float]:
    """What a guarantee between neighbours gives between datasets ``k`` records apart.

    Pure ``epsilon``-DP gives ``k epsilon``; ``(epsilon, delta)`` gives
    ``(k epsilon, k e^{(k-1) epsilon} delta)`` (Dwork and Roth, Thm 2.2 and its approximate form);
    ``rho``-zCDP gives ``k^2 rho`` (Bun and Steinke, Prop. 1.9).
    """
    k = check_int("k", k, minimum=1)
    out: dict[str, float] = {}
    if epsilon is not None:
        epsilon = check_positive("epsilon", epsilon, allow_zero=True)
        delta = check_positive("delta", delta, allow_zero=True)
        out["epsilon"] = k * epsilon
        out["delta"] = k * math.exp((k - 1) * epsilon) * delta
    if rho is not None:
        out["rho"] = k * k * check_positive("rho", rho, allow_zero=True)
    if not out:
        raise ParameterError("epsilon", None, "give epsilon (with an optional delta) or rho")
    return out
