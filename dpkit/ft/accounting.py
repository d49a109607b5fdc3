"""The privacy of DP-SGD: what T noisy steps on Poisson-sampled batches guarantee, and the noise for a target.

One DP-SGD step {cite}`abadi2016deep` releases the sum of the batch's per-example gradients,
each clipped to L2 norm ``C``, plus Gaussian noise of standard deviation ``sigma * C`` on
every coordinate. Under add/remove of one training record the clipped sum moves by at most
``C`` (the record's own clipped gradient), so one step over the whole data set would be the
Gaussian mechanism with noise multiplier ``sigma``. With *Poisson* sampling, every record joins
each step's batch independently with probability ``q``, the step is the Poisson-subsampled
Gaussian mechanism, and T steps compose adaptively (the model each step starts from is
public post-processing of the earlier releases).

The stated epsilon is dp-accounting's privacy loss distribution (PLD) accountant
{cite}`koskela2020computing` for ``SelfComposed(PoissonSampled(Gaussian(sigma), q), T)``
under add/remove, at its default discretization of the privacy loss (1e-4) with pessimistic
rounding, so the number is an upper bound on the true epsilon, not an estimate. Why PLD and
not RDP {cite}`mironov2017renyi,mironov2019renyi`: the PLD composes the exact loss
distribution and converts to (epsilon, delta) without slack, where RDP bounds each order and
loses in the conversion: for the same noise RDP states an epsilon 10-20% larger around
epsilon = 8 and up to twice as large below epsilon = 1 (the chapter measures it on a grid),
which would cost the method that much noise for nothing. RDP is kept as an independent check (it must never be
below PLD beyond the discretization) and as what Opacus's ``rdp`` accountant computes
{cite}`yousefpour2021opacus`. The price of PLD is time: an evaluation takes about a second on
two CPU cores; calibration solves on a coarser PLD first and confirms on the stated one
in two evaluations.

A *shuffled* loader that cuts each epoch's permutation into fixed-size batches is not Poisson
sampling, and the Poisson number does not hold for it {cite}`chua2024private`.
:func:`shuffled_epsilon` states what such a loader does get without any amplification: each
record sits in exactly one batch per epoch, the batches of an epoch are disjoint, so an epoch
is one Gaussian mechanism for that record, and E epochs compose to the Gaussian mechanism with
sensitivity ``Delta sqrt(E)`` and noise ``sigma C``, whose exact epsilon is Balle and Wang's
{cite}`balle2018improving`. Fixed-size batches need a relation that keeps the data set's size:
``"zero-out"`` (one record replaced by one that contributes a zero gradient, Delta = C; under
Poisson sampling it gives the same epsilon as add/remove, so the two numbers compare) or
``"replace-one"`` (Delta = 2C).
"""

from __future__ import annotations

import contextlib
import functools
import logging
import math
from dataclasses import asdict, dataclass

import dp_accounting
from dp_accounting import pld, rdp
from scipy.optimize import brentq

from dpkit.privacy.contract import PrivacyContract
from dpkit.privacy.gaussian import gaussian_delta
from dpkit.validate import ParameterError, check_choice, check_in_range, check_int, check_positive, check_probability

__all__ = ["ACCOUNTANTS", "PLD_DISCRETIZATION", "SHUFFLE_RELATIONS", "DpSgdMechanism", "dp_event",
           "dpsgd_epsilon", "calibrate_noise_multiplier", "shuffled_epsilon"]

#: "pld" states the guarantee; "rdp" is the cross-check (and Opacus's classic accountant)
ACCOUNTANTS = ("pld", "rdp")
#: dp-accounting's default discretization of the privacy loss for its PLD accountant
PLD_DISCRETIZATION = 1e-4
#: neighbouring relations under which a shuffled fixed-size-batch loader is accounted
SHUFFLE_RELATIONS = {"zero-out": 1.0, "replace-one": 2.0}


def _check_step_parameters(noise_multiplier, sample_rate, steps) -> tuple[float, float, int]:
    noise_multiplier = check_positive("noise_multiplier", noise_multiplier)
    sample_rate = check_in_range("sample_rate", sample_rate, 0.0, 1.0, low_open=True)
    steps = check_int("steps", steps, minimum=1)
    return noise_multiplier, sample_rate, steps


def dp_event(noise_multiplier: float, sample_rate: float, steps: int):
    """dp-accounting's event for ``steps`` Poisson-subsampled Gaussian steps (what the accountants compose)."""
    noise_multiplier, sample_rate, steps = _check_step_parameters(noise_multiplier, sample_rate, steps)
    step = dp_accounting.PoissonSampledDpEvent(sample_rate, dp_accounting.GaussianDpEvent(noise_multiplier))
    return dp_accounting.SelfComposedDpEvent(step, steps)


@contextlib.contextmanager
def _quiet_absl():
    """dp-accounting's RDP code logs through absl when a fractional order fails to converge.

    It then drops that order, which is sound (the remaining orders still bound epsilon);
    the message is not for the reader, so it is kept out of logs and notebook pages.
    """
    logger = logging.getLogger("absl")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


@functools.lru_cache(maxsize=4096)
def _epsilon(noise_multiplier: float, sample_rate: float, steps: int, delta: float, accountant: str,
             discretization: float = PLD_DISCRETIZATION) -> float:
    event = dp_event(noise_multiplier, sample_rate, steps)
    if accountant == "pld":
        engine = pld.PLDAccountant(value_discretization_interval=discretization)
    else:
        engine = rdp.RdpAccountant()
    with _quiet_absl():
        return float(engine.compose(event).get_epsilon(delta))


def dpsgd_epsilon(noise_multiplier: float, sample_rate: float, steps: int, delta: float,
                  accountant: str = "pld") -> float:
    """The stated epsilon of ``steps`` DP-SGD steps, add/remove of one record, at ``delta``.

    ``noise_multiplier`` is sigma (the noise's standard deviation over the clipping norm),
    ``sample_rate`` the Poisson sampling probability q. ``accountant="pld"`` (the default) is
    the guarantee DP-SGD states; ``"rdp"`` is dp-accounting's RDP accountant over its default
    orders, an independent upper bound that is never below the PLD's beyond its discretization.
    """
    noise_multiplier, sample_rate, steps = _check_step_parameters(noise_multiplier, sample_rate, steps)
    delta = check_probability("delta", delta)
    check_choice("accountant", accountant, ACCOUNTANTS)
    return _epsilon(noise_multiplier, sample_rate, steps, delta, accountant)


def calibrate_noise_multiplier(epsilon: float, delta: float, sample_rate: float, steps: int,
                               accountant: str = "pld", tolerance: float = 1e-3) -> float:
    """The smallest sigma (to a relative ``tolerance``) whose stated epsilon is at most ``epsilon``.

    A bracket by doubling, then Brent's method on log sigma (for the PLD, on a PLD
    discretized 100 times more coarsely, shifted by its offset from the stated one, and
    confirmed on the stated PLD). The returned sigma is checked, so
    ``dpsgd_epsilon(sigma, sample_rate, steps, delta, accountant) <= epsilon`` holds for the
    value returned, and sigma / (1 + tolerance) no longer meets the target (up to the
    accountant's own monotonicity).
    """
    epsilon = check_positive("epsilon", epsilon)
    delta = check_probability("delta", delta)
    _check_step_parameters(1.0, sample_rate, steps)
    check_choice("accountant", accountant, ACCOUNTANTS)
    tolerance = check_in_range("tolerance", tolerance, 0.0, 0.1, low_open=True)

    def stated(sigma: float) -> float:
        return dpsgd_epsilon(sigma, sample_rate, steps, delta, accountant)

    if accountant == "pld":
        # solve on a PLD 100 times coarser (50 times faster, epsilon within about 1e-3 of the stated one), shifted
        # by the coarse-to-stated offset measured at the last guess; confirm the bracket on the stated PLD
        where = (epsilon, delta, sample_rate, steps)
        offset, guess = 0.0, 1.0
        for _ in range(3):
            guess = _smallest_sigma(
                lambda s: _epsilon(s, sample_rate, steps, delta, "pld", 100 * PLD_DISCRETIZATION) + offset,
                epsilon, guess, 2.0, tolerance / 4, where)
            high = guess * (1.0 + tolerance / 2)
            if stated(high) <= epsilon < stated(high / (1.0 + tolerance)):
                return high
            offset = stated(guess) - _epsilon(guess, sample_rate, steps, delta, "pld", 100 * PLD_DISCRETIZATION)
        return _smallest_sigma(stated, epsilon, guess, 1.01, tolerance, where)
    return _smallest_sigma(stated, epsilon, 1.0, 2.0, tolerance, (epsilon, delta, sample_rate, steps))


def _smallest_sigma(epsilon_of, epsilon: float, start: float, factor: float, tolerance: float, where) -> float:
    """A bracket by steps of ``factor`` from ``start``, then Brent's method on log sigma; the result is checked."""
    def gap(log_sigma: float) -> float:
        return epsilon_of(math.exp(log_sigma)) - epsilon

    high = start
    while gap(math.log(high)) > 0:
        high *= factor
        if high > 1e6:
            target, delta, sample_rate, steps = where
            raise ParameterError("epsilon", target, f"is out of reach with q={sample_rate}, T={steps}, "
                                 f"delta={delta}: no noise multiplier up to 1e6 meets it")
    low = high / factor
    while gap(math.log(low)) <= 0:
        high, low = low, low / factor
        if low < 1e-3:
            return high
    # epsilon is smooth and decreasing in log sigma: Brent's method needs a handful of evaluations
    root = brentq(gap, math.log(low), math.log(high), xtol=tolerance / 4)
    sigma = min(high, math.exp(root + tolerance / 4))
    while gap(math.log(sigma)) > 0:
        sigma = min(high, sigma * (1.0 + tolerance / 4))
    return sigma


def shuffled_epsilon(noise_multiplier: float, epochs: int, delta: float, relation: str = "zero-out") -> float:
    """Epsilon of DP-SGD on shuffled fixed-size batches, with no amplification claimed.

    Each record is in exactly one batch per epoch and an epoch's batches are disjoint, so
    for one record an epoch is the Gaussian mechanism with sensitivity Delta (``relation``:
    ``"zero-out"`` Delta = C, ``"replace-one"`` Delta = 2C) and noise ``sigma C``; ``epochs``
    of them compose exactly to one Gaussian mechanism of sensitivity ``Delta sqrt(epochs)``.
    Returns the smallest epsilon whose exact delta (Balle and Wang's formula) is at most
    ``delta``. This is an upper bound for any shuffling; it ignores the amplification that
    shuffling may give, which no accountant states tightly.
    """
    noise_multiplier = check_positive("noise_multiplier", noise_multiplier)
    epochs = check_int("epochs", epochs, minimum=1)
    delta = check_probability("delta", delta)
    check_choice("relation", relation, list(SHUFFLE_RELATIONS))
    sensitivity = SHUFFLE_RELATIONS[relation] * math.sqrt(epochs)
    if gaussian_delta(noise_multiplier, sensitivity, 0.0) <= delta:
        return 0.0
    high = 1.0
    while gaussian_delta(noise_multiplier, sensitivity, high) > delta:
        high *= 2.0
    return float(brentq(lambda e: gaussian_delta(noise_multiplier, sensitivity, e) - delta, 0.0, high,
                        xtol=1e-12, rtol=1e-12))


@dataclass(frozen=True)
class DpSgdMechanism:
    """The guarantee of one DP-SGD training run, stated as data.

    Privacy facts: neighbouring relation add/remove of one record; unit one training record
    (one text with its label); measure approximate (epsilon, delta)-DP, accounted by the PLD
    (or RDP) of the Poisson-subsampled Gaussian mechanism composed over ``steps``;
    sensitivity ``clip_norm`` in L2 (the clipped per-example gradient sum under add/remove);
    noise standard deviation ``noise_multiplier * clip_norm`` on every coordinate of the sum.
    The model, and every text sampled from it afterwards, is post-processing: ``epsilon``
    does not depend on how many texts are generated.
    """

    noise_multiplier: float
    sample_rate: float
    steps: int
    delta: float
    clip_norm: float = 1.0
    accountant: str = "pld"
    neighbouring: str = "add/remove"
    unit: str = "record"
    sampling: str = "Poisson"

    def __post_init__(self) -> None:
        _check_step_parameters(self.noise_multiplier, self.sample_rate, self.steps)
        check_probability("delta", self.delta)
        check_positive("clip_norm", self.clip_norm)
        check_choice("accountant", self.accountant, ACCOUNTANTS)
        check_choice("neighbouring", self.neighbouring, ["add/remove"])
        check_choice("sampling", self.sampling, ["Poisson"])

    @classmethod
    def for_target(cls, epsilon: float, delta: float, sample_rate: float, steps: int, clip_norm: float = 1.0,
                   accountant: str = "pld") -> "DpSgdMechanism":
        """Budget first: the mechanism whose noise is calibrated so that its stated epsilon <= ``epsilon``."""
        sigma = calibrate_noise_multiplier(epsilon, delta, sample_rate, steps, accountant)
        return cls(sigma, sample_rate, steps, delta, clip_norm=clip_norm, accountant=accountant)

    @property
    def epsilon(self) -> float:
        """The stated epsilon at ``delta`` (by ``accountant``)."""
        return dpsgd_epsilon(self.noise_multiplier, self.sample_rate, self.steps, self.delta, self.accountant)

    @property
    def noise_std(self) -> float:
        """Standard deviation of the Gaussian noise added to the clipped gradient sum."""
        return self.noise_multiplier * self.clip_norm

    def dp_event(self):
        """The dp-accounting event the accountant composes."""
        return dp_event(self.noise_multiplier, self.sample_rate, self.steps)

    def contract(self) -> PrivacyContract:
        """The run's guarantee as the privacy core's contract (measure ``approx``)."""
        return PrivacyContract(
            "DP-SGD (Poisson-subsampled Gaussian, composed over steps)", "add/remove", self.unit, "approx",
            self.clip_norm, epsilon=self.epsilon, delta=self.delta, sensitivity_norm="L2", kind="dpsgd",
            parameters={"noise_multiplier": self.noise_multiplier, "sample_rate": self.sample_rate,
                        "steps": self.steps, "clip_norm": self.clip_norm, "accountant": self.accountant,
                        "sampling": self.sampling},
            note=f"{self.accountant.upper()} accountant of dp-accounting; the clipped per-example gradient sum "
                 f"moves by at most C={self.clip_norm:g} (L2) when one record is added or removed")

    def to_dict(self) -> dict:
        data = asdict(self)
        data.update(epsilon=self.epsilon, noise_std=self.noise_std, measure="approx",
                    sensitivity=self.clip_norm, sensitivity_norm="L2")
        return data
