"""DP-SGD's stated epsilon, checked against dp-accounting (PLD and RDP) and Opacus (RDP and PRV).

The grid of 20 configurations spans the noise multipliers, sampling rates and step counts a
fine-tuning run uses (epsilon from about 0.14 to 16). Each accountant is called on its own:
dp-accounting's PLD directly on the privacy loss distribution (not through our event), its RDP
accountant, and Opacus's two accountants from their own histories.
"""

from __future__ import annotations

import dataclasses
import math
import warnings

import numpy as np
import pytest

from dpkit.ft.accounting import (PLD_DISCRETIZATION, DpSgdMechanism, calibrate_noise_multiplier, dp_event,
                                 dpsgd_epsilon, shuffled_epsilon)
from dpkit.privacy.gaussian import gaussian_delta
from dpkit.validate import ParameterError

DELTA = 1e-5
SIGMAS = (0.6, 0.8, 1.0, 1.5, 3.0)
SCHEDULES = ((0.004, 1000), (0.016, 250), (0.064, 48), (0.25, 12))  # (q, T): 4, 4, 3 and 3 epochs
GRID = [(sigma, q, steps) for sigma in SIGMAS for q, steps in SCHEDULES]


def _pld_direct(sigma: float, q: float, steps: int, delta: float) -> float:
    from dp_accounting.pld import privacy_loss_distribution as pld

    one_step = pld.from_gaussian_mechanism(standard_deviation=sigma, sampling_prob=q,
                                           value_discretization_interval=PLD_DISCRETIZATION)
    return float(one_step.self_compose(steps).get_epsilon_for_delta(delta))


@pytest.fixture(scope="module")
def grid():
    from opacus.accountants import PRVAccountant, RDPAccountant

    rows = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Opacus warns when its best order is at the end of its list
        for sigma, q, steps in GRID:
            rdp_opacus, prv_opacus = RDPAccountant(), PRVAccountant()
            rdp_opacus.history = [(sigma, q, steps)]
            prv_opacus.history = [(sigma, q, steps)]
            rows.append({"sigma": sigma, "q": q, "steps": steps,
                         "stated": dpsgd_epsilon(sigma, q, steps, DELTA),
                         "pld": _pld_direct(sigma, q, steps, DELTA),
                         "rdp": dpsgd_epsilon(sigma, q, steps, DELTA, accountant="rdp"),
                         "opacus_rdp": rdp_opacus.get_epsilon(DELTA),
                         "opacus_prv": prv_opacus.get_epsilon(DELTA)})
    return rows


def test_the_grid_spans_weak_and_strong_guarantees(grid):
    stated = [r["stated"] for r in grid]
    assert len(grid) == 20 and min(stated) < 0.5 and max(stated) > 12


def test_stated_epsilon_is_dp_accountings_pld_to_one_millionth(grid):
    for row in grid:
        assert row["stated"] == pytest.approx(row["pld"], rel=1e-6), row


def test_rdp_is_never_below_pld(grid):
    """Both bound the same epsilon from above; the PLD is the tighter (up to its discretization)."""
    for row in grid:
        assert row["rdp"] >= row["pld"] - 1e-3, row
        assert row["opacus_rdp"] >= row["pld"] - 1e-3, row
    gaps = [r["rdp"] / r["pld"] for r in grid]
    assert np.median(gaps) > 1.05, gaps  # the reason the stated epsilon is the PLD's


def test_opacus_prv_agrees_with_the_pld_within_its_error(grid):
    """Opacus's PRV accountant returns its upper estimate (eps_error = 0.01 by default)."""
    for row in grid:
        assert abs(row["opacus_prv"] - row["pld"]) <= 0.02 + 1e-3 * row["pld"], row


def test_opacus_and_dp_accounting_rdp_agree_on_the_same_orders():
    """Same orders, same subsampled-Gaussian RDP and the same conversion: the same epsilon."""
    from dp_accounting.rdp import RdpAccountant
    from opacus.accountants import RDPAccountant

    orders = list(range(2, 65))
    for sigma, q, steps in GRID[::3]:
        ours = RdpAccountant(orders=orders).compose(dp_event(sigma, q, steps)).get_epsilon(DELTA)
        theirs = RDPAccountant()
        theirs.history = [(sigma, q, steps)]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert theirs.get_epsilon(DELTA, alphas=orders) == pytest.approx(ours, rel=1e-6)


@pytest.mark.parametrize("epsilon, q, steps", [(8.0, 0.064, 48), (1.0, 0.016, 250)])
def test_calibration_round_trip(epsilon, q, steps):
    sigma = calibrate_noise_multiplier(epsilon, DELTA, q, steps)
    assert dpsgd_epsilon(sigma, q, steps, DELTA) <= epsilon
    assert dpsgd_epsilon(sigma / 1.002, q, steps, DELTA) > epsilon  # within twice the tolerance of the smallest
    from opacus.accountants.utils import get_noise_multiplier

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = get_noise_multiplier(target_epsilon=epsilon, target_delta=DELTA, sample_rate=q, steps=steps,
                                      accountant="prv")
    assert theirs == pytest.approx(sigma, rel=0.02)
    mechanism = DpSgdMechanism.for_target(epsilon, DELTA, q, steps, clip_norm=0.5)
    assert mechanism.noise_multiplier == sigma and mechanism.epsilon <= epsilon
    assert mechanism.noise_std == pytest.approx(0.5 * sigma)


def test_epsilon_grows_with_sampling_rate_and_steps_and_falls_with_noise():
    base = dpsgd_epsilon(1.0, 0.064, 48, DELTA, accountant="rdp")
    assert dpsgd_epsilon(1.2, 0.064, 48, DELTA, accountant="rdp") < base
    assert dpsgd_epsilon(1.0, 0.08, 48, DELTA, accountant="rdp") > base
    assert dpsgd_epsilon(1.0, 0.064, 60, DELTA, accountant="rdp") > base
    assert dpsgd_epsilon(1.0, 0.064, 48, 1e-3, accountant="rdp") < base


def test_shuffled_epsilon_is_the_gaussian_mechanism_over_epochs():
    sigma, epochs = 1.2, 4
    eps = shuffled_epsilon(sigma, epochs, DELTA)
    # exact: the Gaussian mechanism with sensitivity sqrt(E) meets delta at this epsilon
    assert gaussian_delta(sigma, math.sqrt(epochs), eps) == pytest.approx(DELTA, rel=1e-6)
    # the same as dp-accounting's PLD of E unsampled Gaussian steps (q = 1), up to its discretization
    assert dpsgd_epsilon(sigma, 1.0, epochs, DELTA) == pytest.approx(eps, abs=2e-3)
    # replace-one doubles the sensitivity: the same as half the noise under zero-out
    assert shuffled_epsilon(sigma, epochs, DELTA, "replace-one") == pytest.approx(
        shuffled_epsilon(sigma / 2, epochs, DELTA), rel=1e-9)


def test_a_shuffled_loader_does_not_get_the_poisson_number():
    """Same noise, same expected batch and epochs: without amplification the claim is far too low."""
    q, steps, epochs = 0.064, 48, 3  # batches of 64 from 1,000 records: 48 steps are 3 epochs (and 72 records)
    sigma = 0.674  # calibrated for epsilon = 8 under Poisson sampling (test_calibration_round_trip)
    poisson = dpsgd_epsilon(sigma, q, steps, DELTA)
    assert 7.9 < poisson <= 8.0 and shuffled_epsilon(sigma, epochs, DELTA) > 1.5 * 8.0


def test_the_mechanism_states_its_privacy_facts():
    mechanism = DpSgdMechanism(1.0, 0.064, 48, DELTA, clip_norm=2.0)
    data = mechanism.to_dict()
    assert data["neighbouring"] == "add/remove" and data["unit"] == "record" and data["sampling"] == "Poisson"
    assert data["measure"] == "approx" and data["sensitivity"] == 2.0 and data["sensitivity_norm"] == "L2"
    assert data["epsilon"] == dpsgd_epsilon(1.0, 0.064, 48, DELTA) and data["noise_std"] == 2.0
    with pytest.raises(dataclasses.FrozenInstanceError):
        mechanism.steps = 1
    event = mechanism.dp_event()
    assert event.count == 48 and event.event.sampling_probability == 0.064
    assert event.event.event.noise_multiplier == 1.0
    contract = mechanism.contract()
    assert (contract.kind, contract.neighbouring, contract.unit, contract.measure) == ("dpsgd", "add/remove",
                                                                                       "record", "approx")
    assert contract.sensitivity == 2.0 and contract.sensitivity_norm == "L2" and contract.delta == DELTA
    assert contract.epsilon == data["epsilon"] and contract.to_dp_event() == event


@pytest.mark.parametrize("call, name", [
    (lambda: dpsgd_epsilon(0.0, 0.1, 10, DELTA), "noise_multiplier"),
    (lambda: dpsgd_epsilon(1.0, 1.5, 10, DELTA), "sample_rate"),
    (lambda: dpsgd_epsilon(1.0, 0.1, 0, DELTA), "steps"),
    (lambda: dpsgd_epsilon(1.0, 0.1, 10, 1.0), "delta"),
    (lambda: dpsgd_epsilon(1.0, 0.1, 10, DELTA, accountant="gdp"), "accountant"),
    (lambda: calibrate_noise_multiplier(-1.0, DELTA, 0.1, 10), "epsilon"),
    (lambda: shuffled_epsilon(1.0, 2, DELTA, relation="add/remove"), "relation"),
    (lambda: DpSgdMechanism(1.0, 0.1, 10, DELTA, clip_norm=0.0), "clip_norm"),
])
def test_errors_name_the_parameter(call, name):
    with pytest.raises(ParameterError, match=name):
        call()
