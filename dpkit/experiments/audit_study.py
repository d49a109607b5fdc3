"""Tables for the audit chapter: lower bounds as samples grow, and the bug-zoo table.

Each row is one :func:`dpkit.audit.mechanism.registry.audit_row`; this module only arranges them.
"""

from __future__ import annotations

from typing import Iterable, Sequence

import pandas as pd

from dpkit.audit.mechanism import registry
from dpkit.audit.mechanism.registry import audit_row
from dpkit.validate import ParameterError


def samples_curve(names: Iterable[str], grid: Sequence[int], epsilon: float | None = None, seed: int = 0,
                  confidence: float = 0.95) -> pd.DataFrame:
    """Lower bound against the number of samples for each mechanism (grid points above a
    mechanism's ``max_samples`` are skipped; each point uses its own seed offset)."""
    if not grid:
        raise ParameterError("grid", grid, "must list at least one sample count")
    rows = []
    for name in names:
        spec = registry.get(name)
        for i, n in enumerate(sorted(set(int(g) for g in grid))):
            if n > spec.max_samples:
                continue
            rows.append(audit_row(name, n, epsilon, seed + i, confidence))
    return pd.DataFrame(rows)


def zoo_table(samples: int = 20_000, epsilon: float | None = None, seed: int = 0,
              confidence: float = 0.95) -> pd.DataFrame:
    """Each broken variant next to its correct twin: claim, both lower bounds, caught or not."""
    rows = []
    for spec in registry.specs(broken=True):
        broken = audit_row(spec.name, samples, epsilon, seed, confidence)
        twin = audit_row(spec.correct_twin, samples, epsilon, seed, confidence)
        rows.append({"variant": spec.name, "bug": spec.bug, "correct twin": spec.correct_twin,
                     "claimed epsilon": broken["claimed_epsilon"], "samples": broken["samples"],
                     "lower bound (broken)": broken["lower_bound"], "lower bound (correct)": twin["lower_bound"],
                     "caught": not broken["passed"], "twin passes": twin["passed"]})
    return pd.DataFrame(rows)
