"""The shared argument checks and the results writer."""

import json

import numpy as np
import pytest

from dpkit import runtime
from dpkit.validate import (ParameterError, check_choice, check_finite_array, check_int,
                            check_positive, check_probability, check_rng, check_unit_norm)


@pytest.mark.parametrize("value", [0.0, -1.0, float("nan"), float("inf"), "1", True, None])
def test_check_positive_rejects_and_names_the_parameter(value):
    with pytest.raises(ParameterError) as err:
        check_positive("epsilon", value)
    assert "epsilon=" in str(err.value)


def test_check_positive_allows_zero_only_when_asked():
    assert check_positive("rho", 0, allow_zero=True) == 0.0
    assert check_positive("rho", 2) == 2.0


@pytest.mark.parametrize("value", [0.0, 1.0, -0.1, 1.5])
def test_check_probability_is_open_interval(value):
    with pytest.raises(ParameterError, match="delta"):
        check_probability("delta", value)
    assert check_probability("delta", 1e-6) == 1e-6


def test_check_int():
    assert check_int("batch_size", 4.0, minimum=1) == 4
    with pytest.raises(ParameterError, match="must be >= 1"):
        check_int("batch_size", 0, minimum=1)
    with pytest.raises(ParameterError, match="integer"):
        check_int("batch_size", 2.5)
    with pytest.raises(ParameterError, match="<= 3"):
        check_int("k", 4, maximum=3)


def test_check_choice_lists_what_is_allowed():
    with pytest.raises(ParameterError, match=r"\['local', 'openai'\]"):
        check_choice("backend", "gpt", ["local", "openai"])


def test_array_checks():
    with pytest.raises(ParameterError, match="finite"):
        check_finite_array("x", [1.0, np.nan])
    with pytest.raises(ParameterError, match="2-d"):
        check_finite_array("x", [1.0], ndim=2)
    with pytest.raises(ParameterError, match="unit norm"):
        check_unit_norm("z", np.ones((2, 3)))
    unit = np.eye(3)
    assert check_unit_norm("z", unit).shape == (3, 3)


def test_check_rng_requires_a_generator():
    with pytest.raises(ParameterError, match="Generator"):
        check_rng("rng", 0)
    check_rng("rng", np.random.default_rng(0))


def test_write_results_is_json_and_atomic(tmp_path):
    path = tmp_path / "sub" / "r.json"
    payload = runtime.write_results(path, {"epsilon": np.float64(1.5), "curve": np.arange(3),
                                           "nested": {"delta": 1e-6, "inf": float("inf")}})
    assert json.loads(path.read_text()) == payload
    assert payload["curve"] == [0, 1, 2] and payload["nested"]["inf"] == "inf"
    assert runtime.write_results(None, {"a": 1}) == {"a": 1}
    assert not list(tmp_path.glob("**/*.tmp"))


def test_offline_variables_are_set(monkeypatch):
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    runtime.set_offline()
    import os
    assert os.environ["HF_HUB_OFFLINE"] == "1"
