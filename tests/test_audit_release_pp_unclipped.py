"""Repeated-word canaries, and private prediction with unclipped logits refuted by them at its claim.

The two model-backed audits take about 125 s each on a shared 2-core CPU and carry ``@pytest.mark.slow``:
no small size is reliable. With 96 canaries (48 batches per label) the broken pipeline found 13 to 20
words and was refuted in 1 of 3 seeds (the top-24 guess plan needs 23 right); with 192 canaries (96 batches
per label, the size below) it found 34, 43 and 40 words in seeds 0, 1, 2, none of an excluded canary, and was
refuted in 3 of 3 (bounds 1.42, 1.79, 1.42 > 1); correct pp found no word and was never refuted
(results/audit-release-pp-unclipped: every seed measured is stored there).
"""

import numpy as np
import pytest

from dpkit.audit.release.canaries import repeated_word_canaries
from dpkit.audit.release.scorers import ngram_scores
from dpkit.validate import ParameterError


def test_repeated_word_canaries_are_one_distinct_rare_word_each():
    canaries = repeated_word_canaries(40, np.random.default_rng(0), ("a", "b"), repeats=5)
    words = [w for (w,) in canaries.words]
    assert len(set(words)) == 40
    assert all(text.split("\n") == [w] * 5 for text, w in zip(canaries.texts, words))
    assert set(canaries.labels) <= {"a", "b"}
    # the scorer sees a canary's word wherever it is, in any case, and no other canary's
    scores = ngram_scores(canaries.words, [f"so {words[3].capitalize()}, and then", words[7] + "s"])
    assert scores.tolist() == [1.0 if i == 3 else 0.0 for i in range(40)]
    with pytest.raises(ParameterError, match="repeats"):
        repeated_word_canaries(4, np.random.default_rng(0), repeats=0)


@pytest.mark.slow
def test_unclipped_private_prediction_is_refuted_at_its_claim():
    from dpkit.audit.release.pp_unclipped import audit_pp

    row = audit_pp(broken=True, m=192, seed=0, n_batches=96)
    assert row["words_found_excluded"] == 0 and row["words_found_included"] >= 24, row
    assert row["verdict"] == "refuted", row


@pytest.mark.slow
def test_correct_private_prediction_writes_no_canary_word_and_is_not_refuted():
    """The control, at a quarter of the size (for the suite's time): the same configuration with clipping
    writes no canary's word at all (the broken pipeline writes about a third of the included ones), so the
    attack has nothing to count. The 192-canary control, 3 seeds, is stored in results/audit-release-pp-unclipped."""
    from dpkit.audit.release.pp_unclipped import audit_pp

    row = audit_pp(broken=False, m=48, seed=0, n_batches=24)
    assert row["words_found_included"] == 0 and row["words_found_excluded"] == 0, row
    assert row["verdict"] == "not refuted", row
