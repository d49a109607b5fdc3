"""Run the calibration zoo (:mod:`dpkit.audit.classic`): power and false positives of the tester."""

from __future__ import annotations

import time

import numpy as np
import pandas as pd

from dpkit.audit.classic import CLASSICS, QUERIES, classic
from dpkit.audit.pairs import audit_pairs, statdp_patterns
from dpkit.audit.tester import audit
from dpkit.validate import check_int

__all__ = ["audit_classic", "calibration_table", "false_positive_rate", "DPSNIPER_REFERENCE"]

#: DP-Sniper's published reference results (logistic-regression classifier, claimed epsilon 0.1):
#: lower bound and the mechanism's true epsilon at that claim, for the mechanisms we share.
#: Source: the eval_sp2021/reference-results logs of the DP-Sniper repository (Bichsel et al. 2021).
DPSNIPER_REFERENCE = {
    "noisy_max_laplace": (0.0923, 0.1), "noisy_max_exponential": (0.0975, 0.1),
    "noisy_max_value": (0.2478, 0.25), "svt": (0.0858, 0.1), "histogram": (0.0978, 0.1),
    "histogram_eps": (4.602, 10.0), "laplace_parallel": (0.0350, 0.1),
}


def audit_classic(name: str, epsilon: float, samples: int, seed: int = 0, confidence: float = 0.95,
                  search_samples: int | None = None, families="auto"):
    """Audit one zoo mechanism at its claim for ``epsilon``: its fixed pair, or StatDP's patterns searched."""
    entry = classic(name)
    mechanism = entry.mechanism(epsilon)
    rng = np.random.default_rng(seed)
    claim = entry.claimed(epsilon)
    witness = {"mechanism": name, "epsilon": epsilon, "seed": seed}
    if entry.pair is not None:
        return audit(mechanism, *entry.pair, samples=samples, rng=rng, claimed_epsilon=claim,
                     confidence=confidence, families=families, witness=witness)
    result, _ = audit_pairs(mechanism, statdp_patterns(QUERIES), samples=samples, rng=rng,
                            search_samples=search_samples, claimed_epsilon=claim, confidence=confidence,
                            families=families, witness=witness)
    return result


def calibration_table(epsilons=(0.5, 1.0), samples: int = 100_000, seed: int = 0, confidence: float = 0.95,
                      names=None, search_samples: int | None = None) -> pd.DataFrame:
    """Bound and true epsilon for every zoo mechanism at each claimed epsilon."""
    samples = check_int("samples", samples, minimum=100)
    rows = []
    for epsilon in epsilons:
        for entry in CLASSICS:
            if names is not None and entry.name not in names:
                continue
            start = time.perf_counter()
            result = audit_classic(entry.name, epsilon, samples, seed, confidence, search_samples)
            true, claim = entry.true_epsilon(epsilon), entry.claimed(epsilon)
            rows.append({"mechanism": entry.name, "source": entry.source, "claimed epsilon": claim,
                         "true epsilon": true, "broken": true > claim * (1 + 1e-12),
                         "lower bound": result.lower_bound, "bound / true": result.lower_bound / true,
                         "caught": not result.passed, "family": result.family,
                         "pair": result.witness.get("pair", "fixed"), "seconds": time.perf_counter() - start})
    return pd.DataFrame(rows)


def false_positive_rate(names=("laplace_parallel", "rappor", "histogram", "noisy_max_laplace"), runs: int = 20,
                        samples: int = 2_000, epsilon: float = 1.0, confidence: float = 0.9, seed: int = 0) -> dict:
    """Share of audits of correct mechanisms whose bound exceeds the claim (nominal: ``1 - confidence``)."""
    runs = check_int("runs", runs, minimum=1)
    over = total = 0
    for i, name in enumerate(names):
        entry = classic(name)
        for r in range(runs):
            result = audit_classic(name, epsilon, samples, seed=seed + 1000 * i + r, confidence=confidence)
            over += result.lower_bound > entry.true_epsilon(epsilon) * (1 + 1e-12)
            total += 1
    return {"audits": total, "above the truth": over, "rate": over / total, "nominal": 1 - confidence}
