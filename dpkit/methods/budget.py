"""The budget of a release lives in its ledger: given once, checked at every charge, read back for the report.

``dpkit synth`` hands the ledger the configuration's budget once
(:func:`budget_ledger`). Every charge a method makes goes through
:meth:`PrivacyLedger.spend` / :meth:`~PrivacyLedger.spend_parallel`, which
raises :class:`~dpkit.privacy.ledger.BudgetExceededError` *before* recording an
overspend -- so before any synthetic text exists. The epsilon and delta a
:class:`~dpkit.methods.base.Release` states, and every number of its
``privacy_report.md``, are the ledger's composition (:func:`ledger_guarantee`),
never a copy of the configuration.
"""

from __future__ import annotations

import math

from dpkit.privacy.ledger import BudgetExceededError, PrivacyLedger
from dpkit.validate import ParameterError


def budget_ledger(run, epsilon: float, delta: float) -> PrivacyLedger:
    """The ledger a method charges: the run's (given the budget if it has none) or a new budgeted one.

    ``delta = 0`` is a pure budget (basic composition). A run ledger that already
    holds a budget must hold this one: one release, one guarantee.
    """
    ledger = None if run is None else getattr(run, "ledger", None)
    if ledger is None:
        return PrivacyLedger(budget_epsilon=epsilon, delta=delta)
    if ledger.budget_epsilon is None and ledger.budget_rho is None and ledger.delta is None:
        budgeted = PrivacyLedger(budget_epsilon=epsilon, delta=delta)
        for entry in ledger.entries:     # what a resumed run re-entered must fit the budget too
            budgeted._check_budget(entry["rho"], 0.0, 0.0, entry["label"], entry)
            budgeted.entries.append(entry)
        ledger.budget_epsilon, ledger.delta = budgeted.budget_epsilon, budgeted.delta
        return ledger
    if ledger.budget_epsilon is None or not math.isclose(ledger.budget_epsilon, epsilon, rel_tol=1e-12) or \
            ledger.delta != delta:
        raise ParameterError("ledger", f"budget epsilon={ledger.budget_epsilon}, delta={ledger.delta}",
                             f"must be the configuration's budget epsilon={epsilon:g}, delta={delta:g}")
    return ledger


def ledger_guarantee(ledger: PrivacyLedger) -> tuple[float, float]:
    """``(epsilon, delta)`` composed from the ledger's entries; refuses a total over the ledger's budget."""
    epsilon, delta = ledger.guarantee()
    if ledger.budget_epsilon is not None and epsilon > ledger.budget_epsilon * (1 + 1e-12):
        raise BudgetExceededError(f"the ledger's total epsilon={epsilon:.6g} exceeds its budget "
                                  f"{ledger.budget_epsilon:.6g}; nothing is released")
    return float(epsilon), float(delta)


def composition_lines(ledger_dict: dict | None) -> list[str]:
    """The report's table of the ledger's entries (public: mechanisms and their costs per unit)."""
    if not ledger_dict or not ledger_dict.get("entries"):
        return []
    lines = ["| charge | mechanism | composition | epsilon per unit | rho |", "|---|---|---|---|---|"]
    for e in ledger_dict["entries"]:
        eps = e["contract"].get("epsilon")
        how = ("parallel over disjoint groups" if e["composition"] == "parallel"
               else f"sequential x{e['count']}")
        lines.append(f"| {e['label']} | {e['mechanism']} | {how} | {'-' if eps is None else f'{eps:.6g}'} | "
                     f"{e['rho']:.6g} |")
    return lines
