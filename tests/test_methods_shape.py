"""The three methods share one shape: validated public configs, a smoke preset, a stated guarantee."""

import inspect

import numpy as np
import pytest

from dpkit.methods import METHODS, Records
from dpkit.methods.labels import keep_probability, randomized_response
from dpkit.seeds import child, generator, root_sequence
from dpkit.validate import ParameterError


@pytest.mark.parametrize("name", sorted(METHODS))
def test_one_entry_point_and_a_stated_guarantee(name):
    method = METHODS[name]
    params = inspect.signature(method.synthesize).parameters.values()
    shared = [p.name for p in params if p.kind is not inspect.Parameter.KEYWORD_ONLY]
    assert shared == ["records", "config", "run", "backend", "seed_sequence"]
    # a method may take more, keyword-only and optional (private prediction's executor), never required
    assert all(p.default is not inspect.Parameter.empty for p in params if p.kind is inspect.Parameter.KEYWORD_ONLY)
    statement = method.STATEMENT.to_dict()
    assert set(statement) == {"neighbouring", "unit", "measure", "sensitivity", "output_size", "labels"}
    assert all(isinstance(v, str) and v for v in statement.values())
    smoke = method.Config.smoke(4.0)
    assert smoke.epsilon == 4.0 and smoke != method.Config(epsilon=4.0)
    with pytest.raises(Exception):
        smoke.epsilon = 1.0  # frozen


@pytest.mark.parametrize("name,changes,param", [
    ("kps", {"epsilon": 0}, "epsilon"), ("kps", {"n_per_class": 0}, "n_per_class"),
    ("kps", {"vocabulary": "klingon"}, "vocabulary"), ("kps", {"vocabulary_share": 1.0}, "vocabulary_share"),
    ("pp", {"delta": 0}, "delta"), ("pp", {"n_batches": 0}, "n_batches"), ("pp", {"epsilon": 1e-6}, "epsilon"),
    ("dpst", {"slots": 0}, "slots"), ("dpst", {"label_share": 0}, "label_share"), ("dpst", {"epsilon": -1}, "epsilon"),
])
def test_configs_name_the_bad_parameter(name, changes, param):
    with pytest.raises(ParameterError) as info:
        METHODS[name].Config(**{"epsilon": 4.0, **changes})
    assert info.value.name == param


def test_records_validate_and_cap():
    records = Records.from_strings(["a long text", ""], ["x", "y"], ("x", "y"))
    assert records.labels == (0, 1) and records.capped(4).texts == ("a lo", "")
    with pytest.raises(ParameterError):
        Records(())
    with pytest.raises(ParameterError):
        Records.from_strings(["a"], ["z"], ("x",))


def test_pp_refuses_api_backends_before_running():
    with pytest.raises(ParameterError, match="local model"):
        METHODS["pp"].check_backend("openai")


def test_seed_tree_is_spawn_by_index():
    root = root_sequence(5)
    assert np.array_equal(generator(root, 2, 1).random(3), np.random.default_rng(
        np.random.SeedSequence(5).spawn(3)[2].spawn(2)[1]).random(3))
    assert child(root, 0).spawn_key == (0,)
    fresh = root_sequence(None)
    assert fresh.entropy != root_sequence(None).entropy  # release mode: fresh OS entropy


def test_randomized_response_frequencies():
    rng = np.random.default_rng(0)
    k, eps = 3, 1.0
    draws = np.array([randomized_response(1, k, eps, rng) for _ in range(20_000)])
    p = keep_probability(k, eps)
    assert abs(np.mean(draws == 1) - p) < 0.015
    assert abs(np.mean(draws == 0) - (1 - p) / 2) < 0.015
    assert p / ((1 - p) / (k - 1)) == pytest.approx(np.exp(eps))  # the likelihood ratio is exactly e^eps


def test_kps_statement_names_the_norm_its_laplace_noise_is_calibrated_in():
    from dpkit.kps.kde import release_dpkde  # noqa: F401  (the mechanism the statement describes)
    from dpkit.methods import kps
    from dpkit.privacy import Laplace

    norm = Laplace(1.0, epsilon=1.0, unit="record", neighbouring="add/remove").contract.sensitivity_norm
    sentence = kps.STATEMENT.sensitivity
    assert norm == "L1" and "L1 sensitivity sqrt(2) I" in sentence and "L2" not in sentence
