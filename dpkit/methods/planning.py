"""What a release will spend and hold, from public facts alone (``dpkit synth METHOD --plan``).

:func:`release_plan` takes a method's validated configuration, the public
label set (or none) and the public row rule with the row count the user
DECLARES, and returns the planned ledger (each mechanism's charge, checked
against the budget: an overspend raises
:class:`~dpkit.privacy.ledger.BudgetExceededError` here, before any run
folder exists), the composed guarantee and the number of texts the release
will hold. It reads no data. ``dpkit synth`` runs it before every run, and
``dpkit audit release`` through :func:`dpkit.methods.cli.plan`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Sequence

from dpkit.methods.base import config_dict


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
                "ledger": [{"charge": e["label"], "mechanism": e["mechanism"], "composition": e["composition"],
                            "epsilon": e["contract"].get("epsilon"), "rho": e["rho"]} for e in self.ledger.entries]}

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


def release_plan(method_name: str, config, *, labels: Sequence[str] | None, labelled: bool,
                 rule=None, declared_rows: int | None = None) -> ReleasePlan:
    """The plan of a release of ``method_name`` with ``config`` (see the module docstring).

    ``labels``: the public label set (None when unknown or unlabelled);
    ``labelled``: whether the input has a label column; ``rule``: the public
    :class:`~dpkit.data.selection.RowRule`; ``declared_rows``: the row count
    the user declared (only DP-ST's number of texts depends on it).
    """
    from dpkit.data.selection import RowRule
    from dpkit.methods import METHODS
    from dpkit.methods.budget import ledger_guarantee

    method = METHODS[method_name]
    rule = RowRule() if rule is None else rule
    declared_rows = declared_rows if declared_rows is not None else rule.declared_rows
    n_labels = len(labels) if labels is not None else (0 if not labelled else None)
    if method_name == "dpst":
        if rule.kind == "prefix":
            rows = min(rule.limit, declared_rows) if declared_rows is not None else None
        else:
            rows = declared_rows
        ledger = method.planned_ledger(config, n_labels or (1 if labelled else 0), rows)
        return ReleasePlan(method_name, config, ledger, *ledger_guarantee(ledger), rows,
                           "one output per input row read", rule.to_dict())
    ledger = method.planned_ledger(config, n_labels or 1)
    per_label = config.n_per_class if method_name == "kps" else config.n_batches
    groups = 1 if not labelled else n_labels
    n_texts = None if groups is None else per_label * groups
    what = "n_per_class texts per label" if method_name == "kps" else "one text per batch, n_batches per label"
    return ReleasePlan(method_name, config, ledger, *ledger_guarantee(ledger), n_texts,
                       f"{per_label} x the number of labels: {what}" if labelled else what, rule.to_dict())
