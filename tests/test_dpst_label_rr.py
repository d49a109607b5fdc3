"""DP-ST's label randomized response is sampled exactly (regression of privacy-2 finding F4, rr_float.py).

The old sampler was ``rng.random() < keep_probability(k, eps)``: a float
comparison whose keep probability is ``ceil(fl(p) 2^53) / 2^53``. From
``eps ~ 37`` (two labels) that is exactly 1: a flipped label is impossible and
the privacy loss is infinite. The sampler now is a rejection sampler with an
exact Bernoulli(exp(-eps)): every output keeps a positive probability at any eps.
"""

import math
from fractions import Fraction

import numpy as np
import pytest

from dpkit.audit.mechanism import registry
from dpkit.methods.labels import keep_probability, randomized_response, randomized_responses


def float_sampler_keep(k: int, eps: float) -> Fraction:
    """P(rng.random() < p) of the old float sampler: rng.random() is m 2^-53 with m uniform (rr_float.py)."""
    return Fraction(math.ceil(Fraction(keep_probability(k, eps)) * 2 ** 53), 2 ** 53)


class Scripted(np.random.Generator):
    """A Generator whose ``integers(n)`` answers from a script (to walk one path of the sampler)."""

    def __init__(self, script):
        super().__init__(np.random.PCG64(0))
        self.script = list(script)
        self.calls = []

    def integers(self, n, *args, **kwargs):
        value = self.script.pop(0)
        self.calls.append(int(n))
        assert 0 <= value < n, (value, n)
        return value


def bernoulli_exp_true(x: Fraction) -> list[int]:
    """The draws that make the exact ``bernoulli_exp(x)`` return True (CKS Algorithm 1 accepts at odd k)."""
    whole, part = divmod(x.numerator, x.denominator)
    script = [0, 0, 2] * whole  # each Bernoulli(exp(-1)): A_1 and A_2 succeed, A_3 fails -> k = 3, odd
    script += [x.denominator - 1]  # Bernoulli(exp(-part/den)): A_1 fails at once -> k = 1, odd
    return script


@pytest.mark.parametrize("k,eps", [(2, 37.0), (2, 38.5), (2, 40.0), (3, 38.5), (3, 40.0), (2, 400.0)])
def test_a_flip_stays_possible_where_the_float_sampler_made_it_impossible(k, eps):
    assert float_sampler_keep(k, eps) == 1  # the finding: the old sampler never flipped here
    other = k - 1
    rng = Scripted([other] + bernoulli_exp_true(Fraction(eps)))
    assert randomized_response(0, k, eps, rng) == other
    assert not rng.script and rng.calls[0] == k  # the proposal is uniform over all k labels


def test_the_float_sampler_was_off_below_the_cliff_too():
    """rr_float.py's table: the old sampler's effective epsilon at k=2, eps=36 was 36.04."""
    keep = float_sampler_keep(2, 36.0)
    assert math.log(keep / (1 - keep)) == pytest.approx(36.0437, abs=1e-3)


def test_keep_frequency_matches_the_exact_probability():
    rng = np.random.default_rng(3)
    draws = randomized_responses(1, 3, 1.0, rng, 20_000)
    p = keep_probability(3, 1.0)
    sd = math.sqrt(p * (1 - p) / draws.size)
    assert abs((draws == 1).mean() - p) < 4 * sd
    others = draws[draws != 1]
    assert set(others.tolist()) == {0, 2} and abs((others == 0).mean() - 0.5) < 4 * math.sqrt(0.25 / others.size)


def test_rare_flips_have_their_exact_rate():
    """At eps = 8 (two labels) a flip has probability 1/(1 + e^8) = 3.4e-4: 100,000 draws see ~34 of them."""
    flips = int((randomized_responses(0, 2, 8.0, np.random.default_rng(5), 100_000) != 0).sum())
    expected = 100_000 / (1 + math.exp(8.0))
    assert abs(flips - expected) < 4 * math.sqrt(expected)


def test_one_label_is_kept_and_bad_input_is_refused():
    from dpkit.validate import ParameterError

    assert randomized_response(0, 1, 1.0, np.random.default_rng(0)) == 0
    with pytest.raises(ParameterError, match="label"):
        randomized_response(3, 3, 1.0, np.random.default_rng(0))
    with pytest.raises(ParameterError, match="epsilon"):
        randomized_response(0, 3, 0.0, np.random.default_rng(0))
    with pytest.raises(ParameterError, match="rng"):
        randomized_response(0, 3, 1.0, 7)


@pytest.mark.parametrize("name", ["dpst_label", "dpst_record"])
@pytest.mark.parametrize("epsilon", [0.5, 1.0, 4.0])
def test_label_and_record_pairs_reach_the_claim(name, epsilon):
    case = registry.get(name).build(epsilon)
    assert 0.95 * epsilon <= case.pair_loss <= epsilon * (1 + 1e-6)


def test_record_audit_composes_text_and_label():
    """The record pair's loss is the text pair's loss plus the label's epsilon (independent draws)."""
    from dpkit.audit.mechanism.adapters.dpst import LABEL_SHARE, RECORD_CROWD, document_corpus, document_log_probabilities
    from dpkit.audit.mechanism.pair_loss import discrete_pair_loss
    from dpkit.dpst import DPST

    dpst = DPST(document_corpus(RECORD_CROWD), 1.0 - LABEL_SHARE, variant="document", slots=1)
    e = np.eye(4)
    p0, p1 = document_log_probabilities(dpst, e[0]), document_log_probabilities(dpst, e[1])
    text_loss = discrete_pair_loss(list(p0.values()), [p1[t] for t in p0])
    assert registry.get("dpst_record").build(1.0).pair_loss == pytest.approx(text_loss + LABEL_SHARE)

