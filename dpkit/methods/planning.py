"""What a release will spend and hold, from public facts alone (``dpkit synth METHOD --plan``).

:func:`release_plan` takes a method's validated configuration, the public
label set (or none) and the public row rule with the row count the user
DECLARES, and returns the planned ledger (each mechanism's charge, checked
against the budget: an overspend raises
:class:`~dpkit.privacy.ledger.BudgetExceededError` here, before any run
folder exists), the composed guarantee and the number of texts the release
will hold. The planned ledger is the method's declared charges
(``method.charges``), the list its run charges too. It reads no data.
``dpkit synth`` runs it before every run, and ``dpkit audit release`` through
:func:`dpkit.methods.request.plan`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Sequence

from dpkit.data.selection import RowRule
from dpkit.methods.base import config_dict
from dpkit.methods.budget import ledger_guarantee, open_ledger
from dpkit.methods.registry import get_method
from dpkit.methods.sizes import check_release_sizes
from dpkit.privacy.ledger import PrivacyLedger


@dataclass(frozen=True)
class ReleasePlan:
    """A release's plan: configuration, planned ledger, composed guarantee, number of texts (None: unknown)."""

    method: str
    config: Any
    ledger: Any
    epsilon: float
    delta: float
    n_texts: int | None
    texts_rule: str
    rows: dict

    def to_dict(self) -> dict:
        return {"method": self.method, "method_config": config_dict(self.config), "epsilon": self.epsilon,
                "delta": self.delta, "texts": self.n_texts, "texts_rule": self.texts_rule, "rows": self.rows,
                "ledger": [{"charge": e.label, "mechanism": e.contract.mechanism, "composition": e.composition,
                            "epsilon": e.contract.epsilon, "rho": e.rho} for e in self.ledger.entries]}

    def text(self) -> str:
        """The human-readable plan ``--plan`` prints."""
        delta = "0 (pure)" if self.delta == 0 else f"{self.delta:g}"
        texts = f"{self.n_texts}" if self.n_texts is not None else "unknown"
        return "\n".join([
            f"dpkit synth {self.method}: plan (no data read)", "",
            "configuration:", json.dumps(config_dict(self.config), indent=2, sort_keys=True), "",
            f"rows: {json.dumps(self.rows, sort_keys=True)}", "",
            "planned spend (the privacy ledger, checked against the budget):", self.ledger.table(), "",
            f"guarantee: epsilon = {self.epsilon:.6g}, delta = {delta}",
            f"texts in the release: {texts} ({self.texts_rule})",
        ])


def planned_ledger(method, config, n_labels: int, n_records: int | None = None) -> PrivacyLedger:
    """The ledger a release of ``method`` will hold: its declared charges (``method.charges``) on a ledger
    opened with the configuration's budget -- the same list, in the same order, the run charges.
    Raises BudgetExceededError when they do not fit the budget."""
    ledger = open_ledger(config)
    for charge in method.charges(config, n_labels, n_records):
        ledger.charge(charge)
    return ledger


def release_plan(method_name: str, config, *, labels: Sequence[str] | None, labelled: bool,
                 rule=None, declared_rows: int | None = None, backend=None) -> ReleasePlan:
    """The plan of a release of ``method_name`` with ``config`` (see the module docstring).

    ``labels``: the public label set (None when unknown or unlabelled);
    ``labelled``: whether the input has a label column; ``rule``: the public
    :class:`~dpkit.data.selection.RowRule`; ``declared_rows``: the row count
    the user declared (the number of records a replace-one release reads); ``backend``: the run's
    backend (private prediction's sizes are checked on its local model; None: the bundled one).
    """
    method = get_method(method_name)
    rule = RowRule() if rule is None else rule
    declared_rows = declared_rows if declared_rows is not None else rule.declared_rows
    n_labels = len(labels) if labels is not None else (1 if labelled else 0)
    check_release_sizes(method_name, config, n_labels, labels=labels,  # a size that cannot run: refused
                        backend=backend)                               # before any charge
    rows = None
    if not method.statement.per_record:  # replace-one: the release has one output per row read
        rows = declared_rows if rule.kind != "prefix" or declared_rows is None else min(rule.limit, declared_rows)
    ledger = planned_ledger(method, config, n_labels, rows)
    n_texts = method.release_size(config, n_labels, rows)
    texts_rule = method.size_rule
    if labelled and method.statement.per_record:
        texts_rule = f"{n_texts // max(1, n_labels)} x the number of labels: {texts_rule}"
    return ReleasePlan(method_name, config, ledger, *ledger_guarantee(ledger), n_texts, texts_rule,
                       rule.to_dict())
