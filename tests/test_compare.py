"""The comparison harness: configs per epsilon, intervals over seeds, the summary table."""

import math

import numpy as np
import pytest

from dpkit.compare import NOISE_OFF_EPSILON, Sizes, configs, summarize, t_interval
from dpkit.validate import ParameterError


def test_infinity_runs_each_pipeline_at_the_noise_off_epsilon_with_equal_sizes():
    sizes = Sizes(per_class=5)
    finite, off = configs(4.0, sizes, document_type="review"), configs(math.inf, sizes, document_type="review")
    assert {c.epsilon for c in finite.values()} == {4.0}
    assert {c.epsilon for c in off.values()} == {NOISE_OFF_EPSILON}
    assert finite["kps"].n_per_class == finite["pp"].n_batches == 5
    assert finite["pp"].top_k == sizes.pp_top_k and finite["dpst"].reconstruct is False


def test_default_private_prediction_affords_a_private_token_at_epsilon_one():
    assert configs(1.0, Sizes(), document_type="review")["pp"].pp_config().max_private_tokens() >= 1


def test_t_interval_matches_the_student_t_formula():
    mean, low, high = t_interval([0.5, 0.6, 0.7])
    half = 4.302652729911275 * np.std([0.5, 0.6, 0.7], ddof=1) / math.sqrt(3)
    assert mean == pytest.approx(0.6) and low == pytest.approx(0.6 - half) and high == pytest.approx(0.6 + half)
    assert t_interval([0.4]) == (0.4, 0.4, 0.4)
    assert all(math.isnan(v) for v in t_interval([float("nan")]))


def test_summary_has_one_row_per_method_and_epsilon():
    rows = [{"method": m, "epsilon": e, "seed": s, "balanced_accuracy": 0.5 + 0.1 * s, "macro_f1": 0.4, "wall_s": 1.0}
            for m in ("kps", "pp") for e in (4.0, math.inf) for s in range(3)]
    table = summarize(rows)
    assert len(table) == 4 and set(table.seeds) == {3}
    row = table[(table.method == "kps") & (table.epsilon == 4.0)].iloc[0]
    assert row.balanced_accuracy == pytest.approx(0.6) and row.balanced_accuracy_low < 0.6 < row.balanced_accuracy_high


def test_bad_sizes_are_refused():
    with pytest.raises(ParameterError, match="per_class"):
        Sizes(per_class=0)
