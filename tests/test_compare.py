"""The comparison harness: configs per epsilon, intervals over seeds, the summary table."""

import math

import numpy as np
import pytest

from dpkit.experiments.compare import (NOISE_OFF_EPSILON, Sizes, configs, metric_interval, pp_decoding_key,
                                     summarize, t_interval)
from dpkit.validate import ParameterError


def test_infinity_runs_each_pipeline_at_the_noise_off_epsilon_with_equal_sizes():
    sizes = Sizes(per_class=5)
    finite, off = configs(4.0, sizes, document_type="review"), configs(math.inf, sizes, document_type="review")
    assert {c.epsilon for c in finite.values()} == {4.0}
    assert {c.epsilon for c in off.values()} == {NOISE_OFF_EPSILON}
    assert finite["kps"].n_per_class == finite["pp"].n_batches == 5
    assert finite["pp"].top_k == sizes.pp_top_k and finite["dpst"].reconstruct is False
    assert finite["kps"].bandwidth == sizes.kps_bandwidth and finite["kps"].few_shot == sizes.kps_few_shot


def test_default_private_prediction_affords_a_private_token_at_epsilon_one():
    assert configs(1.0, Sizes(), document_type="review")["pp"].max_private_tokens() >= 1


def test_t_interval_matches_the_student_t_formula():
    mean, low, high = t_interval([0.5, 0.6, 0.7])
    half = 4.302652729911275 * np.std([0.5, 0.6, 0.7], ddof=1) / math.sqrt(3)
    assert mean == pytest.approx(0.6) and low == pytest.approx(0.6 - half) and high == pytest.approx(0.6 + half)
    assert t_interval([0.4]) == (0.4, 0.4, 0.4)
    assert all(math.isnan(v) for v in t_interval([float("nan")]))


def test_score_intervals_stay_inside_zero_and_one_while_wall_times_are_not_clipped():
    # The stored full preset's DP-KPS at epsilon 4 on the health tweets: seeds 0.7075, 0.815 and 0.455 give
    # a t interval of about [0.20, 1.12]; a mean balanced accuracy cannot pass 1.
    spread = [0.7075, 0.815, 0.455]
    assert t_interval(spread)[2] > 1.0
    mean, low, high = metric_interval("balanced_accuracy", spread)
    assert mean == pytest.approx(np.mean(spread)) and high == 1.0 and low == pytest.approx(t_interval(spread)[1])
    assert metric_interval("wall_s", [1.0, 50.0, 99.0]) == t_interval([1.0, 50.0, 99.0])
    rows = [{"method": "kps", "epsilon": 4.0, "seed": s, "balanced_accuracy": v, "macro_f1": v, "wall_s": 1.0}
            for s, v in enumerate(spread)]
    row = summarize(rows).iloc[0]
    assert row.balanced_accuracy_high == 1.0 and row.macro_f1_high == 1.0


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


def test_private_prediction_is_decoded_once_for_every_epsilon_whose_cap_does_not_bind():
    sizes = Sizes()
    keys = {e: pp_decoding_key(configs(e, sizes, document_type="review")["pp"]) for e in (1.0, 4.0, 16.0, math.inf)}
    r = {e: configs(e, sizes, document_type="review")["pp"].max_private_tokens()
         for e in (1.0, 4.0, 16.0, math.inf)}
    assert r[1.0] < sizes.max_new_tokens <= r[4.0] < r[16.0] < r[math.inf]
    assert keys[4.0] == keys[16.0] == keys[math.inf] != keys[1.0]


def test_a_cap_that_does_not_bind_changes_no_token():
    from dpkit.models import load_lm
    from dpkit.privpred.decode import DecodeSettings, decode_batch

    lm = load_lm()

    tokens = []
    for cap in (16, 10_000):
        settings = DecodeSettings(expected_batch_size=4.0, clip=2.0, temperature=2.0, max_private_tokens=cap,
                                  max_new_tokens=16, max_examples=1, top_k=10)
        result = decode_batch(lm, ["A warm, funny film.", "Dull."], "Write a review:", settings,
                              np.random.default_rng(3))
        tokens.append([e.token_ids for e in result.examples])
    assert tokens[0] == tokens[1]


def test_dpst_label_share_gives_a_usable_label_at_epsilon_four():
    from dpkit.methods.labels import keep_probability

    config = configs(4.0, Sizes(), document_type="review")["dpst"]
    _, eps_label = config.budgets(labelled=True)
    assert eps_label == pytest.approx(4.0 * Sizes().dpst_label_share)
    assert keep_probability(2, eps_label) == pytest.approx(math.exp(2.0) / (math.exp(2.0) + 1)) and \
        keep_probability(2, eps_label) > 0.85
