"""Run the calibration zoo (:mod:`dpkit.audit.mechanism.classic`): power and false positives of the tester."""

from __future__ import annotations

import time

import numpy as np
import pandas as pd

from dpkit.audit.mechanism.classic import CLASSICS, QUERIES, classic
from dpkit.audit.mechanism.pairs import audit_pairs, statdp_patterns
from dpkit.audit.mechanism.tester import audit
from dpkit.validate import check_int

__all__ = ["audit_classic", "calibration_table", "false_positive_rate", "PUBLISHED", "published_table"]

#: Published reference results at a claimed epsilon of 0.1, from the DP-Sniper repository's
#: eval_sp2021/reference-results logs (Bichsel et al. 2021): DP-Sniper with logistic regression
#: ("dd_search_reg") and StatDP run by the same authors ("statdp_1"), each a 95% lower bound.
#: name -> (DP-Sniper bound, StatDP bound, true epsilon of their variant at claim 0.1, what differs)
PUBLISHED = {
    "noisy_max_laplace": (0.0923, 0.0920, 0.1, "5 queries"),
    "noisy_max_exponential": (0.0975, 0.0996, 0.1, "5 queries"),
    "noisy_max_value": (0.2478, 0.1991, 0.25, "5 queries (true m eps/2)"),
    "histogram": (0.0978, 0.0828, 0.1, "5 bins"),
    "histogram_eps": (4.602, 9.717, 10.0, "5 bins"),
    "svt": (0.0858, 0.0298, 0.1, "c = 2, 10 queries"),
    "isvt1": (1.761, 14.31, float("inf"), "Lyu Alg. 5, c = 2"),
    "isvt2": (0.272, 0.322, float("inf"), "Lyu Alg. 6, c = 2"),
    "isvt3": (0.1687, 0.1709, 0.325, "Lyu Alg. 4, c = 2: true (1 + 6c)/4 eps"),
    "isvt4": (0.1716, 0.0231, float("inf"), "Lyu Alg. 3, c = 2, output: all answers"),
    "laplace_parallel": (0.0350, 0.0126, 0.1, "same"),
    "rappor": (0.293, 0.2416, 0.300, "mmh3 Bloom bits: 6 differ by our count, true 0.30"),
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


def published_table() -> pd.DataFrame:
    """The published bounds of :data:`PUBLISHED` with their ratio to the true epsilon ("not published": absent)."""
    rows = []
    for entry in CLASSICS:
        if entry.name not in PUBLISHED:
            rows.append({"mechanism": entry.name, "DP-Sniper bound / true": "not published",
                         "StatDP bound / true": "not published", "their variant": ""})
            continue
        dps, sdp, true, note = PUBLISHED[entry.name]
        ratio = (lambda b: f"{b:.3g} ({b / true:.0%})" if np.isfinite(true) else f"{b:.3g} (true: inf)")
        rows.append({"mechanism": entry.name, "DP-Sniper bound / true": ratio(dps),
                     "StatDP bound / true": ratio(sdp), "their variant": f"claim 0.1, {note}"})
    return pd.DataFrame(rows)
