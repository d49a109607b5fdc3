"""From canary scores to lower bounds: guesses chosen by a declared strategy, three analyses of them.

Input: for each scorer, one membership score per canary (higher: more likely
included), the canaries' inclusion bits (the auditor's secret) and a public
tie-break. Output: the lower bounds of three analyses, each valid on its own at
the stated confidence:

* ``steinke`` - the binomial one-run bound on ``eps`` at the claimed ``delta``
  (Steinke, Nasr and Jagielski 2023; :mod:`dpkit.audit.release.one_run`); the
  verdict uses it;
* ``fdp`` - the f-DP one-run bound of Mahloujifar et al. on the ``(eps, delta)``
  curve at the claimed ``delta`` (:mod:`dpkit.audit.release.fdp`);
* ``gdp`` - the same test on the Gaussian curve: a lower bound on ``mu``, with the
  ``eps(delta)`` curve that ``mu``-GDP implies.

**Guesses.** A *plan* guesses "included" for the ``k_in`` highest scores and
"excluded" for the ``k_out`` lowest (ties in the public random order) and
abstains on the rest; the number of guesses is fixed before the coins are
looked at (the theorems need it fixed). The plans are the shares ``2^-j`` of the
canaries, ``j = 0, 1, ...`` while at least :data:`MIN_GUESSES` guesses remain,
split half "in" half "out", and the same shares (``j >= 1``) all "in" (a leak
shows in the top scores only). Which plan, and which scorer, is chosen by a
declared strategy, never by looking at the coins and then testing at full level:

* ``bonferroni`` (default) - every (scorer, plan) pair is tested at level
  ``alpha / T`` (``T`` pairs) and the best bound of each analysis is reported: a
  union bound makes the best of them valid at level ``alpha``;
* ``split`` - a public random half of the canaries (the *selection* half) picks,
  for each analysis, the (scorer, share) with the highest bound there; that plan
  alone is applied to the other half at level ``alpha``. Valid because the other
  half's coins are independent of the choice: conditioned on the selection
  half, the run is still a run on the remaining canaries.

**Repetitions.** A canary inserted ``n`` times is one coin for ``n`` records:
an ``eps``-DP (per record) generator is ``n eps``-DP (and ``(n eps, n e^{(n-1) eps}
delta)``) for the group, and ``mu``-GDP becomes ``n mu``-GDP. The bounds below are
per record: the group's test is run at the group's parameters.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

from dpkit.audit.release import fdp
from dpkit.audit.release.one_run import p_value
from dpkit.validate import ParameterError, check_choice, check_int

STRATEGIES = ("bonferroni", "split")
ANALYSES = ("steinke", "fdp", "gdp")
MIN_GUESSES = 8


def plan_shares(m: int) -> list[tuple[float, bool]]:
    """(share of canaries guessed, both ends?) for ``m`` canaries: both ends for shares 1, 1/2, ...;
    top only from 1/2."""
    shares, j = [], 0
    while j == 0 or m * 2.0 ** -j >= MIN_GUESSES:
        shares.append(2.0 ** -j)
        j += 1
    return [(s, True) for s in shares] + [(s, False) for s in shares if s < 1]


def plan_counts(m: int, share: float, both: bool) -> tuple[int, int]:
    """(k_in, k_out) of a share for ``m`` canaries (share 1 both ends: the split moves to a tie boundary,
    see :func:`count_correct`)."""
    r = max(1, int(m * share))
    return (r - r // 2, r // 2) if both else (r, 0)


def guess_plans(m: int) -> list[tuple[int, int]]:
    """The (k_in, k_out) plans for ``m`` canaries (see the module docstring)."""
    return [plan_counts(m, s, b) for s, b in plan_shares(m)]


def _tie_boundary(sorted_scores: np.ndarray, k_out: int) -> int:
    """The end of a block of equal scores nearest to ``k_out`` (``k_out`` itself when it ends no block of ties)."""
    m = len(sorted_scores)
    if k_out <= 0 or k_out >= m or sorted_scores[k_out - 1] != sorted_scores[k_out]:
        return k_out
    value = sorted_scores[k_out]
    low = int(np.searchsorted(sorted_scores, value, side="left"))
    high = int(np.searchsorted(sorted_scores, value, side="right"))
    return low if k_out - low <= high - k_out else high


def count_correct(scores: np.ndarray, included: np.ndarray, tie_break: np.ndarray, share: float, both: bool):
    """(guesses, correct, (k_in, k_out)) of a plan: top ``k_in`` guessed in, bottom ``k_out`` guessed out.

    The number of guesses depends on ``m`` and the plan only. When every canary is guessed (share 1, both
    ends), where "in" stops and "out" starts is a function of the scores (public): the end of the block of
    tied scores nearest the middle, so that tied canaries get the same guess (randomized response's scores
    are two values, and cutting through a block of ties only adds wrong guesses).
    """
    m = len(scores)
    k_in, k_out = plan_counts(m, share, both)
    order = np.lexsort((tie_break, scores))      # ascending score, ties in a public random order
    if both and k_in + k_out == m:
        k_out = _tie_boundary(scores[order], k_out)
        k_in = m - k_out
    top, bottom = order[m - k_in:], order[:k_out]
    return k_in + k_out, int(included[top].sum()) + int((~included[bottom]).sum()), (k_in, k_out)


def _group(eps: float, delta: float, n: int) -> tuple[float, float]:
    return n * eps, min(1.0, n * math.exp((n - 1) * eps) * delta) if delta else 0.0


def _largest(test, high: float, tolerance: float = 1e-6) -> float:
    return fdp._largest_rejected(test, high, tolerance)


def bound(analysis: str, m: int, r: int, v: int, alpha: float, delta: float = 0.0, repetitions: int = 1) -> float:
    """The per-record lower bound of one analysis for ``v`` right of ``r`` guesses on ``m`` canaries at level ``alpha``.

    ``steinke`` and ``fdp``: on ``eps`` at ``delta``; ``gdp``: on ``mu``.
    """
    if r == 0 or v == 0:
        return 0.0
    n = repetitions
    if analysis == "steinke":
        if p_value(m, r, v, 0.0, _group(0.0, delta, n)[1]) > alpha:
            return 0.0
        return _largest(lambda e: p_value(m, r, v, *_group(e, delta, n)) <= alpha, 100.0 / n)
    if analysis == "fdp":
        return _largest(lambda e: fdp.rejects(m, r, v, alpha, fdp.inverse_blow_up_dp(*_group(e, delta, n))), 100.0 / n)
    if analysis == "gdp":
        return fdp.gdp_mu_lower_bound(m, r, v, alpha) / n
    raise ParameterError("analysis", analysis, f"must be one of {ANALYSES}")


@dataclass
class Finding:
    """One analysis's best bound and the guesses behind it."""

    analysis: str
    bound: float            # eps (steinke, fdp) or mu (gdp), per record
    scorer: str
    plan: str
    canaries: int           # canaries the bound is about (half of them under ``split``)
    guesses: int
    correct_guesses: int
    level: float            # the level the bound was tested at (alpha / T, or alpha)

    def to_dict(self) -> dict:
        return asdict(self)


def _plan_name(plan: tuple[int, int]) -> str:
    return f"top {plan[0]} in, bottom {plan[1]} out"


def analyse(scores: dict, included, tie_break, *, claimed_delta: float = 0.0, confidence: float = 0.95,
            strategy: str = "bonferroni", split_rng: np.random.Generator | None = None,
            repetitions: int = 1, analyses=ANALYSES) -> dict:
    """``{analysis: Finding}`` plus ``"tests"`` (how many pairs were tested): see the module docstring.

    ``scores``: ``{scorer: array of m scores}``; ``included``: the m inclusion bits; ``tie_break``: m public
    uniforms; ``split_rng``: the public coins of the ``split`` halves.
    """
    check_choice("strategy", strategy, STRATEGIES)
    repetitions = check_int("repetitions", repetitions, minimum=1)
    included = np.asarray(included, bool)
    tie_break = np.asarray(tie_break, float)
    m = len(included)
    alpha = 1.0 - confidence
    names = list(scores)
    scores = {k: np.asarray(v, float) for k, v in scores.items()}
    if strategy == "bonferroni":
        pairs = [(name, s, b) for name in names for s, b in plan_shares(m)]
        level = alpha / len(pairs)
        counted = {(name, s, b): count_correct(scores[name], included, tie_break, s, b) for name, s, b in pairs}
        out = {}
        for analysis in analyses:
            best = None
            for (name, s, b), (r, v, plan) in counted.items():
                value = bound(analysis, m, r, v, level, claimed_delta, repetitions)
                if best is None or value > best.bound:
                    best = Finding(analysis, value, name, _plan_name(plan), m, r, v, level)
            out[analysis] = best
        out["tests"] = len(pairs)
        return out
    rng = split_rng if split_rng is not None else np.random.default_rng()
    selection = np.zeros(m, bool)
    selection[rng.permutation(m)[: m // 2]] = True
    held = ~selection
    m_sel, m_held = int(selection.sum()), int(held.sum())
    out = {}
    for analysis in analyses:
        choice = None
        for name in names:
            for s, b in plan_shares(m_sel):
                r, v, _ = count_correct(scores[name][selection], included[selection], tie_break[selection], s, b)
                value = bound(analysis, m_sel, r, v, alpha, claimed_delta, repetitions)
                if choice is None or value > choice[0]:
                    choice = (value, name, s, b)
        _, name, s, b = choice
        r, v, plan = count_correct(scores[name][held], included[held], tie_break[held], s, b)
        out[analysis] = Finding(analysis, bound(analysis, m_held, r, v, alpha, claimed_delta, repetitions), name,
                                _plan_name(plan), m_held, r, v, alpha)
    out["tests"] = 1
    return out


def randomized_response_scores(included, epsilon: float, rng: np.random.Generator) -> np.ndarray:
    """Scores of an exactly ``epsilon``-DP generator per canary: each bit through randomized response (1 = in).

    The score of canary ``i`` is its inclusion bit, flipped with probability ``1 / (1 + e^epsilon)``, independently
    of the others: the likelihood ratio of any score is at most ``e^epsilon`` in the bit, and reaches it; the best
    guess is right with probability exactly ``e^epsilon / (1 + e^epsilon)``.
    """
    included = np.asarray(included, bool)
    flip = rng.random(len(included)) < 1.0 / (1.0 + math.exp(epsilon))
    return (included ^ flip).astype(float)
