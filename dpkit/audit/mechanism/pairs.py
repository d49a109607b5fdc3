"""Neighbouring input pairs to search: StatDP's patterns for vectors of query answers.

For a vector of ``m`` query answers of sensitivity 1 each, {cite}`ding2018detecting`
proposes a short list of patterns that expose the classic bugs: one answer
above or below, one above and the rest below, half above and half below, all
above or all below, and the "x shape". Each is a pair ``(d0, d1)`` whose
answers differ by at most ``step`` in every coordinate.
"""

from __future__ import annotations

import numpy as np

from dpkit.audit.mechanism.tester import audit
from dpkit.validate import ParameterError, check_int, check_positive

__all__ = ["statdp_patterns"]


def statdp_patterns(m: int, base: float = 1.0, step: float = 1.0) -> dict[str, tuple[list, list]]:
    """StatDP's input patterns for ``m`` answers around ``base``: name -> (d0, d1)."""
    m = check_int("m", m, minimum=1)
    step = check_positive("step", step)
    ones = np.full(m, float(base))
    up, down = ones + step, ones - step
    half = m // 2
    first = lambda v, rest: np.concatenate([[v], np.full(m - 1, rest)])  # noqa: E731
    pairs = {
        "one_below": (ones, first(base - step, base)),
        "one_above": (ones, first(base + step, base)),
        "one_above_rest_below": (ones, first(base + step, base - step)),
        "one_below_rest_above": (ones, first(base - step, base + step)),
        "half_half": (ones, np.concatenate([up[:half], down[half:]])),
        "all_above": (ones, up),
        "all_below": (ones, down),
        "x_shape": (np.concatenate([ones[:half], down[half:]]), np.concatenate([down[:half], ones[half:]])),
    }
    return {name: (a.tolist(), b.tolist()) for name, (a, b) in pairs.items()}


def audit_pairs(mechanism, pairs: dict, *, samples: int, rng, search_samples: int | None = None, top: int = 1,
                **audit_kwargs):
    """Search ``pairs`` on a small budget, then audit the best ``top`` on fresh samples.

    Each pair is audited with ``search_samples`` (default ``samples // 5``,
    at least 1,000) per dataset; the ``top`` pairs with the largest search bounds
    are audited again with ``samples`` fresh draws and the Bonferroni factor
    ``top`` (times the families inside each audit), so the best of them is a
    valid bound at the stated confidence. Returns ``(result, search)`` where
    ``search`` maps each pair's name to its search bound.
    """
    if not pairs:
        raise ParameterError("pairs", pairs, "must name at least one (d0, d1) pair")
    top = check_int("top", top, minimum=1)
    samples = check_int("samples", samples, minimum=20)
    search_samples = max(1_000, samples // 5) if search_samples is None else check_int("search_samples",
                                                                                          search_samples, minimum=20)
    quiet = dict(audit_kwargs, claimed_epsilon=None)
    if quiet.get("families", "auto") == "auto":  # the search skips the slowest learner
        quiet["families"] = "search"
    search = {}
    for name, (d0, d1) in pairs.items():
        search[name] = audit(mechanism, d0, d1, samples=search_samples, rng=rng, **quiet).lower_bound
    ranked = sorted(search, key=lambda k: -search[k])[:top]
    witness = dict(audit_kwargs.pop("witness", None) or {})
    best = None
    for name in ranked:
        d0, d1 = pairs[name]
        result = audit(mechanism, d0, d1, samples=samples, rng=rng, correction=top,
                       witness={**witness, "pair": name, "pair_search": search}, **audit_kwargs)
        if best is None or result.lower_bound > best.lower_bound:
            best = result
    return best, search
