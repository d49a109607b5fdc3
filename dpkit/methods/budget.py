"""The budget of a release: one ledger per run, opened once from the configuration, checked at every charge.

:func:`open_ledger` is the one place a release's budget is handed to a ledger:
``dpkit synth`` opens it once and gives it to the run folder
(:class:`~dpkit.runs.Run`), ``--plan`` opens one for its dry run, and a method
called without a run opens its own (:func:`release_ledger`). A method charges
its declared :class:`~dpkit.privacy.ledger.Charge` list through
:meth:`PrivacyLedger.charge <dpkit.privacy.ledger.PrivacyLedger.charge>`, which
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


#: The delta of a release whose guarantee has one (private prediction, DP fine-tuning) when ``--delta`` is not
#: given: one in a million, far below one over any record count a release declares. Those methods' configurations
#: default to it; ``dpkit synth --help`` and ``dpkit audit release --help`` point to "the configuration's default".
DEFAULT_DELTA = 1e-6


def open_ledger(config) -> PrivacyLedger:
    """A new ledger holding the configuration's budget (``config.budget()``: epsilon, and delta, 0 = pure)."""
    epsilon, delta = config.budget()
    return PrivacyLedger(budget_epsilon=epsilon, delta=delta)


def release_ledger(run, config) -> PrivacyLedger:
    """The ledger a method charges: the run's, which must hold the configuration's budget, or (no run) a new one.

    Nothing is repaired here: a run opened without the release's ledger is refused by name.
    """
    if run is None:
        return open_ledger(config)
    ledger = getattr(run, "ledger", None)
    epsilon, delta = config.budget()
    if ledger is None or ledger.budget_epsilon is None or ledger.delta != delta or \
            not math.isclose(ledger.budget_epsilon, epsilon, rel_tol=1e-12):
        held = "none" if ledger is None else f"budget epsilon={ledger.budget_epsilon}, delta={ledger.delta}"
        raise ParameterError("run.ledger", held, f"must be the release's ledger, opened with the configuration's "
                             f"budget epsilon={epsilon:g}, delta={delta:g}: Run(..., ledger=open_ledger(config))")
    return ledger


def ledger_guarantee(ledger: PrivacyLedger) -> tuple[float, float]:
    """``(epsilon, delta)`` composed from the ledger's entries; refuses a total over the ledger's budget."""
    epsilon, delta = ledger.guarantee()
    if ledger.budget_epsilon is not None and epsilon > ledger.budget_epsilon * (1 + 1e-12):
        raise BudgetExceededError(f"the ledger's total epsilon={epsilon:.6g} exceeds its budget "
                                  f"{ledger.budget_epsilon:.6g}; nothing is released")
    return float(epsilon), float(delta)


def composition_lines(ledger: PrivacyLedger | None) -> list[str]:
    """The report's table of the ledger's entries (public: mechanisms and their costs per unit)."""
    if ledger is None or not ledger.entries:
        return []
    lines = ["| charge | mechanism | composition | epsilon per unit | rho |", "|---|---|---|---|---|"]
    for e in ledger.entries:
        eps = e.contract.epsilon
        how = "parallel over disjoint groups" if e.parallel else f"sequential x{e.count}"
        lines.append(f"| {e.label} | {e.contract.mechanism} | {how} | {'-' if eps is None else f'{eps:.6g}'} | "
                     f"{e.rho:.6g} |")
    return lines
