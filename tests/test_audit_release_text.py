"""Canaries made for text (public prefix, rare suffix) and a scorer fitted on the release alone."""

import numpy as np
import pytest

from dpkit.audit.release import zoo
from dpkit.audit.release.audit import audit_release
from dpkit.audit.release.canaries import PUBLIC_PREFIXES, echo_canaries
from dpkit.audit.release.scorers import suffix_lm_scores
from dpkit.data.tables import label_set, read_table
from dpkit.methods import Records
from dpkit.validate import ParameterError

M = 4000   # about 60 of the ~2,000 included canaries are echoed: enough for a bound above 1 (see the chapter)


def _records():
    table = read_table("data/own_data_sample.csv", "text", "label")
    return Records.from_strings(table.texts, table.labels, label_set(table.labels, None), declared=False)


def test_echo_canaries_have_a_public_prefix_and_a_unique_rare_suffix():
    canaries = echo_canaries(50, np.random.default_rng(0), ("a", "b"), suffix_words=4)
    assert all(text.startswith(prefix + " ") for text, prefix in zip(canaries.texts, canaries.prefixes))
    assert set(canaries.prefixes) <= set(PUBLIC_PREFIXES) and set(canaries.labels) <= {"a", "b"}
    words = [w for suffix in canaries.words for w in suffix]
    assert len(words) == 200 == len(set(words))
    with pytest.raises(ParameterError, match="canaries"):
        echo_canaries(100_000, np.random.default_rng(0))


def test_suffix_likelihood_rises_with_what_the_release_repeats():
    canaries = [("alpha", "beta", "gamma"), ("delta", "omega", "kappa")]
    scores = suffix_lm_scores(canaries, ["we saw alpha beta gamma here", "nothing else"])
    only_one = suffix_lm_scores(canaries, ["we saw alpha here", "nothing else"])
    assert scores[0] > only_one[0] > scores[1] == pytest.approx(only_one[1], rel=0.2)


def test_a_generator_echoing_three_words_of_3_percent_of_its_records_is_refuted():
    records = _records()
    refuted = 0
    for run in range(10):
        result = audit_release(zoo.echo_words(0.03, 3, seed=run), records,
                               canaries=echo_canaries(M, np.random.default_rng(100 + run)),
                               claimed_epsilon=1.0, seed=run, scorers=("suffix_lm", "ngram"))
        refuted += result.verdict == "refuted"
    assert refuted >= 9


@pytest.mark.parametrize("seed", range(10))
def test_an_input_independent_generator_is_never_refuted(seed):
    result = audit_release(zoo.input_independent(seed=seed), _records(),
                           canaries=echo_canaries(1000, np.random.default_rng(seed)), claimed_epsilon=0.1,
                           seed=seed, scorers=("suffix_lm", "ngram"), strategy=("bonferroni", "split")[seed % 2])
    assert result.verdict == "not refuted" and result.epsilon_lower_bound == 0.0
    assert result.gdp_mu_lower_bound == 0.0


def test_repeated_canaries_enter_the_input_that_many_times():
    sizes = []
    result = audit_release(lambda r: sizes.append(len(r)) or zoo.input_independent()(r), _records(),
                           canaries=echo_canaries(40, np.random.default_rng(1)), claimed_epsilon=1.0, seed=3,
                           scorers=("suffix_lm",), repetitions=3)
    assert sizes == [60 + 3 * result.canaries_included] and result.repetitions == 3
