"""The release auditor: one-run arithmetic cross-checked, copies caught, data-independent output never refuted."""

from fractions import Fraction

import mpmath
import numpy as np
import pytest

from dpkit.audit.release.disclosure import disclosure_test
from dpkit.audit.release.one_run import canaries_needed, epsilon_lower_bound, p_value, perfect_guess_bound
from dpkit.audit.release.audit import audit_release, guess_plans
from dpkit.audit.release.zoo import copy_fraction
from dpkit.audit.release.roc import auroc, tpr_at_fpr
from dpkit.methods import Records
from dpkit.validate import ParameterError

FAST = ("ngram", "chars")


def independent_p_value(m, r, v, eps, delta):
    """Theorem 3.1 of Steinke, Nasr, Jagielski (2023) by direct summation in 50-digit arithmetic."""
    mpmath.mp.dps = 50
    q = 1 / (1 + mpmath.exp(-mpmath.mpf(eps)))
    pmf = [mpmath.binomial(r, k) * q ** k * (1 - q) ** (r - k) for k in range(r + 1)]
    f = lambda t: mpmath.fsum(pmf[max(int(t), 0):])  # noqa: E731  P[B >= t]
    tail = f(v)
    if delta == 0 or v == 0:
        return float(min(tail, 1))
    worst = max((f(v - i) - tail) / i for i in range(1, m + 1))
    return float(min(tail + 2 * m * mpmath.mpf(delta) * worst, 1))


GRID = [(m, r, v, eps, delta) for m in (10, 100, 1000) for r in sorted({1, m // 10, m // 2, m})
        for v in sorted({0, r // 2, (3 * r) // 4, r}) for eps in (0.0, 0.5, 1.0, 4.0) for delta in (0.0, 1e-5, 1e-3)]


@pytest.mark.parametrize("m,r,v,eps,delta", GRID[::3])
def test_p_value_matches_direct_summation(m, r, v, eps, delta):
    assert p_value(m, r, v, eps, delta) == pytest.approx(independent_p_value(m, r, v, eps, delta), abs=1e-6)


def test_pure_p_value_is_an_exact_binomial_tail():
    # r = 4 guesses, all right, at eps = log 3: q = 3/4, tail = (3/4)^4
    assert p_value(4, 4, 4, float(np.log(3.0))) == pytest.approx(float(Fraction(3, 4) ** 4), abs=1e-12)
    assert p_value(10, 6, 0, 2.0) == 1.0


@pytest.mark.parametrize("m,r,v,delta", [(1000, 64, 64, 0.0), (1000, 512, 400, 0.0), (200, 50, 45, 1e-4),
                                         (1000, 256, 200, 1e-5)])
def test_bound_inverts_the_p_value(m, r, v, delta):
    alpha = 0.05 / 28
    eps = epsilon_lower_bound(m, r, v, alpha, delta)
    assert eps > 0
    assert independent_p_value(m, r, v, eps - 1e-6, delta) <= alpha + 1e-9
    assert independent_p_value(m, r, v, eps + 1e-4, delta) > alpha


def test_bound_is_zero_without_evidence_and_needs_more_with_delta():
    assert epsilon_lower_bound(100, 10, 5, 0.05) == 0.0
    assert epsilon_lower_bound(1000, 500, 450, 0.05, 1e-3) < epsilon_lower_bound(1000, 500, 450, 0.05)
    with pytest.raises(ParameterError, match="correct <= guesses"):
        p_value(10, 5, 6, 1.0)


def test_perfect_guessing_caps_and_canaries_needed():
    tests = 2 * len(guess_plans(1000))
    assert 4.0 < perfect_guess_bound(512, 0.05 / tests) < 4.6
    m = canaries_needed(2.0, accuracy=1.0, share_guessed=0.05, alpha=0.05 / tests)
    assert m is not None and epsilon_lower_bound(m, int(0.05 * m), int(0.05 * m), 0.05 / tests) >= 2.0


def test_roc_summaries():
    scores, members = np.array([0.9, 0.8, 0.1, 0.2]), np.array([True, True, False, False])
    assert auroc(scores, members) == 1.0 and tpr_at_fpr(scores, members, 0.01) == 1.0
    assert auroc(np.zeros(4), members) == 0.5


def _records(n=60, labelled=True):
    texts = [f"My parcel number {i} arrived late and the box was damaged." for i in range(n)]
    if not labelled:
        return Records(tuple(texts))
    return Records(tuple(texts), tuple(i % 2 for i in range(n)), ("billing", "delivery"))


def _data_independent(records):
    rng = np.random.default_rng(len(records))  # reads the input size only, like a public output-size rule
    return [{"text": f"A generic note {int(rng.integers(1000))}.", "label": "billing"} for _ in records.texts]


def test_a_generator_that_copies_a_tenth_of_its_records_is_refuted():
    result = audit_release(copy_fraction(0.1, seed=5), _records(), claimed_epsilon=1.0, seed=11, scorers=FAST)
    assert result.verdict == "refuted" and result.epsilon_lower_bound > 1.0
    assert result.canaries == 1000 and result.correct_guesses == result.guesses
    assert result.auroc > 0.5 and result.to_dict()["verdict"] == "refuted"


@pytest.mark.parametrize("seed", range(10))
@pytest.mark.parametrize("eps", [1.0, 4.0])
def test_output_independent_of_the_data_is_never_refuted(seed, eps):
    result = audit_release(_data_independent, _records(labelled=seed % 2 == 0), canaries=200,
                           claimed_epsilon=eps, seed=seed, scorers=FAST)
    assert result.verdict == "not refuted" and result.epsilon_lower_bound == 0.0


def test_replace_one_keeps_the_input_size():
    sizes = []
    audit_release(lambda r: sizes.append(len(r)) or _data_independent(r), _records(), canaries=50,
                  claimed_epsilon=1.0, seed=1, scorers=FAST, neighbouring="replace-one")
    assert sizes == [110]


def test_bad_arguments_name_the_parameter():
    with pytest.raises(ParameterError, match="claimed_epsilon"):
        audit_release(_data_independent, _records(), claimed_epsilon=-1)
    with pytest.raises(ParameterError, match="scorers"):
        audit_release(_data_independent, _records(), claimed_epsilon=1, scorers=("nope",))
    with pytest.raises(ParameterError, match="synthesize"):
        audit_release(lambda r: [1, 2], _records(), canaries=10, claimed_epsilon=1, scorers=FAST)


def _distinct_records(n=400):
    from dpkit.audit.release.canaries import make_canaries

    return Records(make_canaries(n, np.random.default_rng(99)).texts)


def test_disclosure_test_catches_copies_without_canaries():
    result = disclosure_test(copy_fraction(0.1, seed=2), _distinct_records(), claimed_epsilon=1.0, seed=4)
    assert result.verdict == "refuted" and result.holdout_matches == 0 and result.train_matches >= 15
    assert set(result.to_dict()) >= {"epsilon_lower_bound", "train_matches", "holdout_matches"}


@pytest.mark.parametrize("seed", range(5))
def test_disclosure_test_passes_output_independent_of_the_data(seed):
    result = disclosure_test(_data_independent, _distinct_records(), claimed_epsilon=1.0, seed=seed)
    assert result.verdict == "not refuted" and result.train_matches == result.holdout_matches == 0


class _BagOfWords:
    """A stand-in embedder: hashed bag of words, unit norm."""

    def encode(self, texts):
        out = np.zeros((len(texts), 64))
        for i, text in enumerate(texts):
            for word in text.lower().split():
                out[i, sum(map(ord, word)) % 64] += 1.0
        return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)


def test_embedding_scorer_takes_the_nearest_release_text():
    from dpkit.audit.release.scorers import embedding_scores

    scores = embedding_scores(["alpha beta gamma", "delta epsilon zeta"], ["alpha beta gamma", "other words",
                                                                           "other words"], _BagOfWords())
    assert scores[0] == pytest.approx(1.0) and scores[1] < 0.9
    assert list(embedding_scores(["a b"], ["  "], _BagOfWords())) == [0.0]
