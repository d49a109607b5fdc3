"""Sparse-vector distance and gate; hash batching; prompts as data."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from dpkit.privpred import (assign_batches, batch_index, check_svt_parameters, get_template, json_template,
                            mean_softmax, n_batches_for, svt_distance, svt_gate, svt_rho)
from dpkit.validate import ParameterError

finite = st.floats(-30, 30, allow_nan=False, allow_infinity=False)


def _softmax(z):
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def test_distance_is_eq2():
    rng = np.random.default_rng(0)
    z, pub = rng.normal(size=(3, 7)), rng.normal(size=7)
    expected = np.abs(_softmax(z).sum(0) / 5 - _softmax(pub)).sum()
    assert svt_distance(z, pub, 5) == pytest.approx(expected)
    assert svt_distance(np.tile(pub, (4, 1)), pub, 4) == pytest.approx(0.0, abs=1e-12)


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])  # slow only on a loaded machine
@given(arrays(np.float64, st.tuples(st.integers(1, 5), st.just(9)), elements=finite),
       arrays(np.float64, 9, elements=finite), arrays(np.float64, 9, elements=finite), st.integers(1, 10))
def test_distance_sensitivity_is_one_over_s(batch, extra, pub, s):
    d1 = svt_distance(batch, pub, s)
    d2 = svt_distance(np.vstack([batch, extra]), pub, s)
    assert abs(d1 - d2) <= 1.0 / s + 1e-9


def test_distance_vectorized_over_leading_axes():
    rng = np.random.default_rng(1)
    z, pub = rng.normal(size=(6, 3, 5)), rng.normal(size=(6, 5))
    d = svt_distance(z, pub, 3)
    assert d.shape == (6,)
    assert d[2] == pytest.approx(svt_distance(z[2], pub[2], 3))
    np.testing.assert_allclose(mean_softmax(z, 3).sum(-1), 1.0)


def test_gate_is_the_privacy_core_above_threshold_at_sensitivity_one_over_s():
    gate = svt_gate(0.5, 0.2, 8)
    assert gate.sensitivity == pytest.approx(1 / 8)
    assert gate.contract.rho() == pytest.approx(svt_rho(8, 0.2))
    assert svt_rho(8, 0.2) == pytest.approx(2 / (8 * 0.2) ** 2)
    rng = np.random.default_rng(0)
    # far below the threshold: almost always public; far above: private at the first query
    assert (gate.run(np.full((2000, 1), -5.0), rng) == -1).mean() > 0.99
    assert (gate.run(np.full((2000, 1), 5.0), rng) == 0).mean() > 0.99


@pytest.mark.parametrize("theta, sigma, name", [(float("nan"), 0.1, "svt_threshold"), ("a", 0.1, "svt_threshold"),
                                                (0.5, None, "svt_sigma"), (0.5, 0.0, "svt_sigma"),
                                                (0.5, -1.0, "svt_sigma")])
def test_bad_svt_parameters(theta, sigma, name):
    with pytest.raises(ParameterError) as err:
        check_svt_parameters(theta, sigma)
    assert err.value.name == name


def test_svt_off():
    assert check_svt_parameters(None, None) == (None, None)
    assert check_svt_parameters(float("-inf"), None) == (None, None)


# ------------------------------------------------------------------ batching
texts = [f"prompt number {i}" for i in range(200)]


def test_batches_partition_and_depend_on_the_prompt_alone():
    batches = assign_batches(texts, 10)
    seen = sorted(i for b in batches for i in b.indices)
    assert seen == list(range(200))
    where = {texts[i]: b.batch_id for b in batches for i in b.indices}
    # adding a prompt (and removing others) never moves anyone else
    other = assign_batches(texts[50:] + ["a brand new prompt"], 10)
    for b in other:
        for i in b.indices:
            t = (texts[50:] + ["a brand new prompt"])[i]
            if t in where:
                assert where[t] == b.batch_id
    assert batch_index("x", 10, key="k1") == batch_index("x", 10, key="k1")
    sizes = [len(b) for b in batches]
    assert 10 <= np.mean(sizes) <= 30 and max(sizes) != min(sizes)  # sizes vary around s=20


def test_label_batches_hold_one_label():
    labels = [i % 3 for i in range(200)]
    for b in assign_batches(texts, 4, labels, n_labels=3):
        assert {labels[i] for i in b.indices} == {b.label}


def test_the_layout_is_public_and_empty_batches_are_returned():
    # two prompts, 5 batches per label, a public label set of 3 labels (label 2 has no record)
    batches = assign_batches(texts[:2], 5, [0, 0], n_labels=3)
    assert [(b.label, b.number) for b in batches] == [(l, k) for l in range(3) for k in range(5)]
    assert sum(len(b) for b in batches) == 2 and sum(len(b) == 0 for b in batches) >= 13
    assert [b.batch_id for b in assign_batches([], 3)] == ["b0", "b1", "b2"]
    with pytest.raises(ParameterError, match="n_labels"):
        assign_batches(texts[:2], 5, [0, 0])
    with pytest.raises(ParameterError, match="public label set"):
        assign_batches(texts[:2], 5, [0, 3], n_labels=3)


def test_batching_bad_input():
    with pytest.raises(ParameterError):
        assign_batches(texts, 0)
    with pytest.raises(ParameterError):
        assign_batches("one string", 2)
    with pytest.raises(ParameterError):
        assign_batches(texts, 2, labels=[0], n_labels=1)
    with pytest.raises(ParameterError):
        n_batches_for(100, 0.5)
    assert n_batches_for(100, 8) == 12


# ------------------------------------------------------------------- prompts
def test_prompts_have_the_appendix_f2_shape():
    t = get_template("rotten_tomatoes")
    msg = t.private_message("A fine film.", "Positive")
    assert msg == "Here are texts with Sentiment: Positive.\n\nText: A fine film.\n\nPlease give me another one."
    pub = t.public_message("Positive")
    assert "A fine film" not in pub and "<text of Sentiment: Positive>" in pub
    assert t.answer_prefix == "Text:"
    j = json_template('{"a": "str"}')
    assert '{"a": "str"}' in j.public_message() and j.finish('"a": 1}') == '{"a": 1}'
    assert '"x": 1' in j.private_message('{"x": 1}')
    with pytest.raises(ParameterError):
        t.private_message("", "Positive")
    with pytest.raises(ParameterError):
        t.private_message("text", None)
    with pytest.raises(ParameterError):
        get_template("nope")
