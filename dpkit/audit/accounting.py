"""Cross-check a saved ledger with dp_accounting's RDP and PLD accountants.

Every ledger entry's contract becomes a ``DpEvent``
(:meth:`dpkit.privacy.contract.PrivacyContract.to_dp_event`):
``count`` sequential runs are a ``SelfComposedDpEvent``, one run on disjoint
batches is one event (parallel composition), and the entries compose. Where an
accountant does not support an event, a substitute with the *same zCDP cost the
ledger charges* stands in, and the result says so:

* RDP: pure epsilon-DP (randomized response) -> ``ZCDpEvent(eps^2/2)`` and
  discrete Laplace -> ``ZCDpEvent`` of its epsilon; Laplace, Gaussian and
  ``ZCDpEvent`` are exact.
* PLD: ``ZCDpEvent(rho)`` -> the Gaussian with the same Renyi curve
  (noise multiplier ``1/sqrt(2 rho)``), the "Gaussian-equivalent" of
  {cite}`amin2024private` (Appendix E); randomized response, Laplace, Gaussian
  and discrete Laplace are exact.

Every substitute satisfies the zCDP cost the ledger charges for that entry, so
a correct ledger (tight zCDP conversion) can never be *below* the PLD number:
``ledger_epsilon >= pld_epsilon`` up to PLD discretisation is the check. The
RDP accountant on its default order grid is reported beside it (it may be
above the ledger: its default grid of orders is coarse at large orders).
"""

from __future__ import annotations

import math
from typing import Any, Mapping

from dp_accounting import dp_event, rdp
from dp_accounting.pld import privacy_loss_distribution as pld

from dpkit.privacy import PrivacyLedger
from dpkit.privacy.ledger import Charge
from dpkit.validate import ParameterError, check_probability

__all__ = ["ledger_dp_event", "crosscheck_ledger"]

#: relative slack for the PLD's pessimistic discretisation
PLD_TOLERANCE = 2e-2


def ledger_dp_event(ledger_data: Mapping[str, Any]):
    """The whole ledger as one dp_accounting ``ComposedDpEvent``."""
    events = (Charge.from_dict(entry).dp_event() for entry in ledger_data.get("entries", []))
    return dp_event.ComposedDpEvent([event for event in events if event is not None])


def _rdp_substitute(event, notes: set):
    if isinstance(event, dp_event.RandomizedResponseDpEvent):
        p, k = event.noise_parameter, event.num_buckets
        eps = math.log((1 - p + p / k) / (p / k))  # keep w.p. 1 - p + p/k, each other bucket p/k
        notes.add("pure epsilon-DP entries as zCDP eps^2/2 (RDP has no randomized-response event)")
        return dp_event.ZCDpEvent(eps ** 2 / 2)
    if isinstance(event, dp_event.DiscreteLaplaceDpEvent):
        eps = event.noise_parameter * event.sensitivity
        notes.add("discrete Laplace entries as zCDP eps^2/2")
        return dp_event.ZCDpEvent(eps ** 2 / 2)
    return _map_children(event, lambda e: _rdp_substitute(e, notes))


def _map_children(event, fn):
    if isinstance(event, dp_event.ComposedDpEvent):
        return dp_event.ComposedDpEvent([fn(e) for e in event.events])
    if isinstance(event, dp_event.SelfComposedDpEvent):
        return dp_event.SelfComposedDpEvent(fn(event.event), event.count)
    return event


def _pld(event, notes: set, discretization: float):
    """A PrivacyLossDistribution for ``event`` (None for a no-op)."""
    if isinstance(event, dp_event.NoOpDpEvent):
        return None
    if isinstance(event, dp_event.ComposedDpEvent):
        out = None
        for part in event.events:
            one = _pld(part, notes, discretization)
            out = one if out is None else (out if one is None else out.compose(one))
        return out
    if isinstance(event, dp_event.SelfComposedDpEvent):
        one = _pld(event.event, notes, discretization)
        return None if one is None else one.self_compose(event.count)
    if isinstance(event, dp_event.LaplaceDpEvent):
        return pld.from_laplace_mechanism(event.noise_multiplier, value_discretization_interval=discretization)
    if isinstance(event, dp_event.GaussianDpEvent):
        return pld.from_gaussian_mechanism(event.noise_multiplier, value_discretization_interval=discretization)
    if isinstance(event, dp_event.DiscreteLaplaceDpEvent):
        return pld.from_discrete_laplace_mechanism(event.noise_parameter, event.sensitivity,
                                                   value_discretization_interval=discretization)
    if isinstance(event, dp_event.RandomizedResponseDpEvent):
        return pld.from_randomized_response(event.noise_parameter, event.num_buckets,
                                            value_discretization_interval=discretization)
    if isinstance(event, dp_event.ZCDpEvent):
        notes.add("zCDP entries as their Gaussian-equivalent (noise multiplier 1/sqrt(2 rho))")
        return pld.from_gaussian_mechanism(1.0 / math.sqrt(2.0 * event.rho),
                                           value_discretization_interval=discretization)
    raise ParameterError("ledger", type(event).__name__, "has an entry dp_accounting cannot account for")


def crosscheck_ledger(ledger_data: Mapping[str, Any], delta: float | None = None,
                      discretization: float = 1e-4) -> dict:
    """The ledger's epsilon at ``delta`` beside dp_accounting's RDP and PLD numbers.

    Returns a dict with ``ledger_epsilon``, ``rdp_epsilon``, ``pld_epsilon``,
    ``substitutions`` (what stood in for unsupported events), ``consistent``
    (the ledger is not below the PLD number, within :data:`PLD_TOLERANCE`) and
    ``approx_entries`` (approximate-DP entries, which neither accountant takes:
    when present the check is skipped and says so).
    """
    ledger = PrivacyLedger.from_dict(dict(ledger_data))
    delta = ledger.delta if delta is None else delta
    if delta is None:
        raise ParameterError("delta", None, "give delta (the ledger was saved without one)")
    delta = check_probability("delta", delta)
    out: dict[str, Any] = {"delta": delta, "ledger_epsilon": ledger.epsilon(delta), "rdp_epsilon": None,
                           "pld_epsilon": None, "substitutions": [], "consistent": None,
                           "approx_entries": [e.label for e in ledger.entries if e.contract.measure == "approx"]}
    if out["approx_entries"] or not ledger.entries:
        return out
    event = ledger_dp_event(ledger.to_dict())
    notes: set = set()
    accountant = rdp.RdpAccountant()
    accountant.compose(_rdp_substitute(event, notes))
    out["rdp_epsilon"] = float(accountant.get_epsilon(delta))
    distribution = _pld(event, notes, discretization)
    out["pld_epsilon"] = 0.0 if distribution is None else float(distribution.get_epsilon_for_delta(delta))
    out["substitutions"] = sorted(notes)
    out["consistent"] = bool(out["ledger_epsilon"] >= out["pld_epsilon"] * (1 - PLD_TOLERANCE) - 1e-9)
    return out
