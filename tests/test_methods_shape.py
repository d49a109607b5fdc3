"""The methods share one shape: one record each, validated public configs, a smoke preset, a stated guarantee."""

import dataclasses
import inspect

import numpy as np
import pytest

import dpkit.methods.pp
from dpkit.methods import METHODS, Method, Records
from dpkit.methods.registry import METHOD_MODULES, method_names
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
    assert set(statement) == {"neighbouring", "unit", "unit_meaning", "measure", "sensitivity", "output_size",
                              "labels"}
    assert all(isinstance(v, str) and v for v in statement.values())
    assert method.STATEMENT.neighbouring in ("add/remove", "replace-one")  # the contracts' value, not prose
    smoke = method.Config.smoke(4.0)
    assert smoke.epsilon == 4.0 and smoke != method.Config(epsilon=4.0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        smoke.epsilon = 1.0  # frozen


@pytest.mark.parametrize("name,changes,param", [
    ("kps", {"epsilon": 0}, "epsilon"), ("kps", {"n_per_class": 0}, "n_per_class"),
    ("kps", {"vocabulary": "klingon"}, "vocabulary"), ("kps", {"vocabulary_share": 1.0}, "vocabulary_share"),
    ("pp", {"delta": 0}, "delta"), ("pp", {"n_batches": 0}, "n_batches"), ("pp", {"epsilon": 1e-6}, "epsilon"),
    ("dpst", {"slots": 0}, "slots"), ("dpst", {"label_share": 0}, "label_share"), ("dpst", {"epsilon": -1}, "epsilon"),
    # 10^9 steps ran the accountant out of memory without naming the parameter (the bad-input sweep, 29 Nov)
    ("ft", {"steps": 0}, "steps"), ("ft", {"steps": 10 ** 9}, "steps"), ("ft", {"sample_rate": 1.5}, "sample_rate"),
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
    import argparse

    from dpkit.methods.request import check_backend

    assert METHODS["pp"].backends == ("local",)
    with pytest.raises(ParameterError, match="local model") as info:
        check_backend(argparse.Namespace(backend="openai", method="pp"), METHODS["pp"])
    assert info.value.name == "--backend"


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


def test_one_configuration_per_method_with_one_set_of_defaults():
    """aesthetics-2 3.2: each method had a second config with other defaults (clip 2.0 vs 10.0, max_new_tokens
    32/48/64, L 6 vs 10). The release configs ARE the library configs now, and DP-ST's take the mechanism's."""
    from dpkit.dpst.corpus import load_public_corpus
    from dpkit.dpst.privatize import DPST
    from dpkit.kps.pipeline import KPSConfig
    from dpkit.privpred import PrivatePredictionConfig

    for config_type, library in ((METHODS["pp"].Config, PrivatePredictionConfig), (METHODS["kps"].Config, KPSConfig)):
        assert issubclass(config_type, library)
        own = {f.name: f.default for f in dataclasses.fields(library)}
        release = {f.name: f.default for f in dataclasses.fields(config_type) if f.init}
        # pp: a release states delta and writes one text per batch; it also turns on the voice's public decoding
        # rules (dpkit.models.voice), which the library config keeps off so that the derivation chapters decode
        # exactly as the seed paper does
        voice = {"stop", "banned", "min_new_tokens", "finish_public", "no_repeat_ngram"}
        shared = set(own) & set(release) - {"delta", "max_examples_per_batch"} - voice
        assert shared and all(own[name] == release[name] for name in shared)
    from dpkit.privpred.decode import DecodeSettings

    decoding = {f.name: f.default for f in dataclasses.fields(DecodeSettings)}  # one set of decoding defaults
    library = {f.name: f.default for f in dataclasses.fields(PrivatePredictionConfig)}
    renamed = {"max_examples": "max_examples_per_batch", "max_steps": "max_steps_per_batch"}
    shared = {name: default for name, default in decoding.items() if default is not dataclasses.MISSING}
    assert shared and all(library[renamed.get(name, name)] == default for name, default in shared.items())
    pp = METHODS["pp"].Config(epsilon=4.0)
    assert pp.settings(1).max_new_tokens == pp.max_new_tokens == 32 and not hasattr(pp, "pp_config")
    kps = METHODS["kps"].Config(epsilon=4.0, vocabulary_share=0.25)
    assert (kps.eps_voc, kps.eps_kde) == (1.0, 3.0) and not hasattr(kps, "kps_config")
    dpst = METHODS["dpst"].Config(epsilon=4.0)
    mechanism = inspect.signature(DPST).parameters
    corpus = inspect.signature(load_public_corpus).parameters
    assert (dpst.slots, dpst.max_triples, dpst.neighbourhood_share, dpst.max_chars) == tuple(
        mechanism[n].default for n in ("slots", "max_triples", "neighbourhood_share", "max_chars"))
    assert (dpst.k, dpst.n_articles) == (corpus["k"].default, corpus["n_articles"].default)


def test_the_token_cap_is_computed_once_per_configuration(monkeypatch):
    import dpkit.privpred.pipeline as pipeline

    calls = []
    real = pipeline.max_private_tokens
    monkeypatch.setattr(pipeline, "max_private_tokens", lambda *a: calls.append(a) or real(*a))
    config = METHODS["pp"].Config(epsilon=4.0)
    config.guarantee(), config.contract(), config.max_private_tokens(), dpkit.methods.pp.public_rules(config)
    assert len(calls) == 1


def test_each_method_module_declares_one_record_and_the_registry_names_it():
    """One record per method (aesthetics-4 6.1): the module's ``METHOD`` carries the names the CLI, the plan and
    the report read, and it is the module's own declarations, not copies."""
    import importlib

    assert METHOD_MODULES and tuple(METHODS) == method_names()
    for name, path in METHOD_MODULES.items():
        module = importlib.import_module(path)
        records = [value for value in vars(module).values() if isinstance(value, Method)]
        assert records == [module.METHOD] and METHODS[name] is module.METHOD and module.METHOD.name == name
        method = module.METHOD
        assert method.statement is module.STATEMENT and method.STATEMENT is module.STATEMENT
        assert method.Config is module.Config and method.synthesize is module.synthesize
        assert method.charges is module.charges and method.release_size is module.release_size
        assert method.smoke_rows >= 1 and (method.smoke_max_rows is None or method.smoke_max_rows >= method.smoke_rows)
        assert method.takes_delta == (method.Config(epsilon=4.0).budget()[1] > 0)  # --delta: the guarantee has one


def test_an_unknown_method_is_refused_by_name():
    from dpkit.methods import get_method

    with pytest.raises(ParameterError) as info:
        get_method("klingon")
    assert info.value.name == "method" and "kps" in info.value.allowed


def test_the_synth_help_names_the_registered_methods_and_plan_prints_each_ones_smoke_bounds(capsys):
    """``dpkit synth --help`` loads no method module (no PyTorch): its choices are the registry's names, its flags'
    help names no method, and ``--plan --smoke`` prints each method's own row bounds, read from its record."""
    from dpkit.cli import build_parser, main

    synth = build_parser()._subparsers._group_actions[0].choices["synth"]
    method_action = next(a for a in synth._actions if a.dest == "method")
    assert tuple(method_action.choices) == method_names()
    flags = " ".join(a.help or "" for a in synth._actions if a.option_strings)
    assert not [name for name in method_names() if f" {name} " in f" {flags} ".replace(",", " ")], flags
    for name, method in METHODS.items():
        assert main(["synth", name, "--plan", "--smoke", "--epsilon", "8", "--rows", "100000"]) == 0
        rows = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("rows: "))
        if method.statement.per_record:  # add/remove: kept with probability smoke_rows / M, at most smoke_max_rows
            assert f'"limit": {method.smoke_rows}' in rows and f'"max_rows": {method.smoke_max_rows}' in rows, rows
        else:  # replace-one: the first smoke_rows rows
            assert '"rule": "prefix"' in rows and f'"limit": {method.smoke_rows}' in rows, rows


@pytest.mark.parametrize("name,variant", [("kps", None), ("pp", None), ("pp", "invisibleink"), ("dpst", "topic"),
                                          ("dpst", "document"), ("ft", None)])
def test_the_statement_states_the_measure_and_grid_of_its_charges(name, variant):
    """The report's "measure" line reads the contracts' table of measure words (one owner: MEASURE_WORDS), for
    every measure the method's charges carry; a charge whose sensitivity includes an exact sampler's grid says
    so in the "sensitivity" line (the review's facts 8 and 12: the prose could drift from the contracts)."""
    from dpkit.methods.budget import DEFAULT_DELTA
    from dpkit.privacy.contract import MEASURE_WORDS

    method = METHODS[name]
    config = method.Config.smoke(4.0)
    if variant is not None:
        config = dataclasses.replace(config, variant=variant)
    statement = method.statement_for(config) if hasattr(method, "statement_for") else method.STATEMENT
    contracts = [charge.contract for charge in method.charges(config, 2, 100)]
    for contract in contracts:
        assert MEASURE_WORDS[contract.measure] in statement.measure, (contract.kind, statement.measure)
        if (contract.parameters.get("grid") or 0) > 0:
            assert "grid" in statement.sensitivity, (contract.kind, statement.sensitivity)
    if "delta" in {f.name for f in dataclasses.fields(method.Config)}:
        assert method.Config(epsilon=4.0).delta == DEFAULT_DELTA  # one default delta (the review's fact 13)
