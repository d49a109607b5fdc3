"""The DP-SGD step passes its audit and each broken twin is refuted; the audited step is Opacus's.

The audited step (``dpkit.audit.mechanism.adapters.dpsgd``) is vectorised numpy so that
200,000 steps take a fraction of a second; two checks tie it to the code that trains: its
per-example gradients and clipped sum equal those of Opacus's ``GradSampleModule`` and
``DPOptimizer`` (the pieces ``dpkit.ft.dpsgd`` trains with) on the same tiny model, and
Opacus's noise has the standard deviation sigma C the audit draws.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

from dpkit.audit.mechanism import registry
from dpkit.audit.mechanism.adapters import dpsgd
from dpkit.ft.accounting import dpsgd_epsilon

TWINS = ("dpsgd_step_no_clip", "dpsgd_step_clip_after_mean", "dpsgd_step_mean_noise", "dpsgd_step_shuffled")


def _true_epsilon(name: str, epsilon: float) -> float:
    """The exact (epsilon, delta) of each twin on its pair, as a subsampled Gaussian with a larger shift."""
    sigma, q, b, n = dpsgd.noise_multiplier_for(epsilon), dpsgd.SAMPLE_RATE, dpsgd.EXPECTED_BATCH, dpsgd.BASE_RECORDS
    effective = {"dpsgd_step": (sigma, q), "dpsgd_step_no_clip": (sigma / 3.0, q),  # the sum moves by 3C
                 "dpsgd_step_clip_after_mean": (sigma / b, q),  # the mean moves by C, its noise is sigma C / B
                 "dpsgd_step_mean_noise": (sigma / b, q),  # the sum moves by C, its noise is sigma C / B
                 "dpsgd_step_shuffled": (sigma / 2.0, b / (n + 1))}  # a 2C shift with probability B / (N + 1)
    s, p = effective[name]
    return dpsgd_epsilon(s, p, 1, dpsgd.DELTA)


@pytest.mark.parametrize("epsilon, seed", [(1.0, 0), (0.5, 1), (2.0, 2)])
def test_the_correct_step_passes(epsilon, seed):
    result = registry.run_audit("dpsgd_step", epsilon, samples=registry.get("dpsgd_step").test_samples, seed=seed)
    assert result.passed, str(result)
    assert result.lower_bound > 0.25 * epsilon  # the pair is close to the worst case: the audit gets near
    assert result.witness["contract"]["epsilon"] <= epsilon
    assert result.witness["contract"]["neighbouring"] == "add/remove"


@pytest.mark.parametrize("name", TWINS)
def test_each_broken_twin_is_refuted(name):
    spec = registry.get(name)
    assert spec.broken and spec.correct_twin == "dpsgd_step" and spec.family == "DP fine-tuning"
    result = registry.run_audit(name, 1.0, samples=spec.test_samples, seed=0)
    assert not result.passed and result.lower_bound > 1.25, str(result)
    # the audit is sound: it never certifies more than the twin's exact epsilon on its pair
    assert result.lower_bound <= _true_epsilon(name, 1.0)


def test_the_pair_is_the_worst_case_for_the_correct_step():
    """On its pair the correct step's exact epsilon is the claim (the pair realises the accountant's worst case)."""
    assert _true_epsilon("dpsgd_step", 1.0) == pytest.approx(dpsgd_epsilon(dpsgd.noise_multiplier_for(1.0),
                                                                           dpsgd.SAMPLE_RATE, 1, dpsgd.DELTA))
    for name in TWINS:
        assert _true_epsilon(name, 1.0) > 2.0


def _opacus_step(records: np.ndarray, noise_multiplier: float, seed: int = 0):
    from opacus import GradSampleModule
    from opacus.optimizers import DPOptimizer

    x = torch.tensor(records[:, :dpsgd.DIMENSION], dtype=torch.float64)
    y = torch.tensor(records[:, dpsgd.DIMENSION], dtype=torch.float64)
    model = torch.nn.Linear(x.shape[1], 1, bias=False).double()
    with torch.no_grad():
        model.weight.copy_(torch.tensor(dpsgd.THETA.reshape(1, -1)))
    generator = torch.Generator().manual_seed(seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        module = GradSampleModule(model, loss_reduction="sum")
        optimizer = DPOptimizer(torch.optim.SGD(model.parameters(), lr=0.0), noise_multiplier=noise_multiplier,
                                max_grad_norm=dpsgd.CLIP, expected_batch_size=None, loss_reduction="sum",
                                generator=generator)
        loss = 0.5 * ((module(x).squeeze(1) - y) ** 2).sum()
        loss.backward()  # (torch notes that no input requires a gradient: only the weight's are wanted)
    per_example = model.weight.grad_sample.detach().reshape(len(records), -1).numpy().copy()
    optimizer.pre_step()
    released = model.weight.grad.detach().reshape(-1).numpy().copy()
    module._close()
    return per_example, released


def test_per_example_gradients_and_the_clipped_sum_are_opacus_s():
    rng = np.random.default_rng(0)
    gradients = rng.normal(size=(12, dpsgd.DIMENSION)) * rng.choice([0.1, 0.7, 3.0, 20.0], size=(12, 1))
    records = np.array([dpsgd.record(g) for g in gradients])
    ours = dpsgd.per_example_gradients(records)
    assert ours == pytest.approx(gradients, rel=1e-12, abs=1e-12)
    per_example, clipped_sum = _opacus_step(records, noise_multiplier=0.0)
    assert per_example == pytest.approx(ours, rel=1e-9)
    assert clipped_sum == pytest.approx(dpsgd.clip_rows(ours, dpsgd.CLIP).sum(axis=0), rel=1e-5)
    assert np.linalg.norm(clipped_sum) < np.abs(gradients).sum()  # clipping did something on this batch


def test_opacus_noise_on_the_sum_has_standard_deviation_sigma_c():
    """What the mean_noise twin gets wrong: Opacus adds sigma C to the sum (then ft divides by B)."""
    from opacus.optimizers import DPOptimizer

    weight = torch.nn.Parameter(torch.zeros(40_000, dtype=torch.float64))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        optimizer = DPOptimizer(torch.optim.SGD([weight], lr=0.0), noise_multiplier=1.7, max_grad_norm=dpsgd.CLIP,
                                expected_batch_size=None, loss_reduction="sum",
                                generator=torch.Generator().manual_seed(3))
    weight.grad_sample = torch.zeros((1, 40_000), dtype=torch.float64)
    optimizer.pre_step()
    assert float(weight.grad.std()) == pytest.approx(1.7 * dpsgd.CLIP, rel=0.02)


def test_the_shuffled_twin_draws_fixed_size_batches_and_the_correct_step_poisson_ones():
    records = np.array([dpsgd.record(np.eye(dpsgd.DIMENSION)[0]) for _ in range(dpsgd.BASE_RECORDS)])
    tiny = 1e-9  # almost no noise: the release is the clipped sum over B
    shuffled = dpsgd.step_mechanism(tiny, "shuffled")(records, 2_000, np.random.default_rng(0))
    poisson = dpsgd.step_mechanism(tiny, "correct")(records, 2_000, np.random.default_rng(0))
    sizes_shuffled = np.round(shuffled[:, 0] * dpsgd.EXPECTED_BATCH)
    sizes_poisson = np.round(poisson[:, 0] * dpsgd.EXPECTED_BATCH)
    assert set(sizes_shuffled) == {dpsgd.EXPECTED_BATCH}
    assert sizes_poisson.mean() == pytest.approx(dpsgd.EXPECTED_BATCH, rel=0.05) and sizes_poisson.std() > 1.0


def test_an_unknown_variant_is_refused():
    from dpkit.validate import ParameterError

    with pytest.raises(ParameterError, match="variant"):
        dpsgd.step_mechanism(1.0, "clip_twice")


def test_the_audit_report_audits_one_step_of_a_fine_tuning_run():
    """An ft run's ledger (kind dpsgd) plans the DP-SGD step audit at one step's epsilon of the run's sigma and
    q, and the audit of the correct step passes there."""
    from dpkit.audit.report import audit_plan, run_audits
    from dpkit.ft.accounting import DpSgdMechanism, dpsgd_epsilon

    mechanism = DpSgdMechanism.for_target(8.0, 1e-6, 0.25, 12, 1.0)
    contract = mechanism.contract().to_dict()
    ((name, epsilon),) = audit_plan(contract)
    assert name == "dpsgd_step"
    assert epsilon == pytest.approx(dpsgd_epsilon(mechanism.noise_multiplier, 0.25, 1, 1e-5))
    assert 0 < epsilon < 8.0
    (row,) = run_audits({"entries": [{"label": "ft: DP-SGD training (12 steps)", "contract": contract}]},
                        samples=20_000)
    assert row["ledger entry"].startswith("ft:") and row["mechanism"] == "dpsgd_step" and not row["broken"]
    assert row["passed"] and row["lower_bound"] <= row["claimed_epsilon"]
