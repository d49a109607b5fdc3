"""Every correct mechanism passes its audit and every bug-zoo variant fails, at fixed seeds."""

import numpy as np
import pytest

from dpkit.audit.mechanism import registry

CORRECT = [s.name for s in registry.specs(broken=False)]
BROKEN = [s.name for s in registry.specs(broken=True)]


def test_every_adapter_module_loads():
    assert registry.unavailable() == {}


def test_zoo_covers_the_required_bugs():
    required = {"kps_vocabulary_half_noise", "laplace_half_noise", "pp_token_actual_batch", "svt_no_query_noise",
                "kps_dpkde_private_count", "dpst_raw_text_fallback", "dpst_private_neighbourhood"}
    assert required <= set(BROKEN)
    for name in BROKEN:
        assert registry.get(name).correct_twin in CORRECT


@pytest.mark.parametrize("name", CORRECT)
def test_correct_mechanism_passes(name):
    spec = registry.get(name)
    result = registry.run_audit(name, spec.default_epsilon, samples=spec.test_samples, seed=0)
    assert result.passed, str(result)
    assert result.witness["why_worst_case"]


@pytest.mark.parametrize("name", BROKEN)
def test_broken_variant_fails(name):
    spec = registry.get(name)
    result = registry.run_audit(name, spec.default_epsilon, samples=spec.test_samples, seed=0)
    assert not result.passed, str(result)
    assert result.lower_bound > spec.default_epsilon


def test_same_seed_same_result():
    a = registry.run_audit("exponential", 1.0, samples=2_000, seed=7)
    b = registry.run_audit("exponential", 1.0, samples=2_000, seed=7)
    assert a.to_dict() == b.to_dict()


def test_other_epsilon_is_built_for_that_claim():
    result = registry.run_audit("laplace_half_noise", 0.5, samples=20_000, seed=1)
    assert result.claimed_epsilon == 0.5 and result.lower_bound > 0.8


def test_worst_case_constructions_are_extreme():
    from dpkit.audit.mechanism.adapters import kps

    d0, d1 = kps.kde_pair()
    from dpkit.kps.kde import dpkde_sensitivity, kde_sketch

    change = np.abs(kde_sketch(np.asarray(d1), kps.kde_features()) - kde_sketch(np.asarray(d0), kps.kde_features()))
    assert change.sum() == pytest.approx(dpkde_sensitivity(kps.KDE_FEATURES), rel=1e-9)
    from dpkit.kps.vocabulary import max_l1_change

    _, docs = kps.vocabulary_pair()
    assert max_l1_change(docs, kps.VOCABULARY_SIZE, kps.S) == kps.S


def test_unknown_name_is_a_parameter_error():
    from dpkit.validate import ParameterError

    with pytest.raises(ParameterError, match="name"):
        registry.get("no_such_mechanism")
    with pytest.raises(ParameterError, match="epsilon"):
        registry.run_audit("laplace", -1.0)


@pytest.mark.slow
def test_no_triple_pair_really_has_no_triples():
    """The DP-ST no-triple audits assume the real extractor finds nothing in either text."""
    from dpkit.audit.mechanism.adapters.dpst import check_no_triples

    assert check_no_triples() == [[], []]
