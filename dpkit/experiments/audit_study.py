"""Tables for the audit chapters: lower bounds as samples grow, the bug-zoo table, and the example run
whose ledger the audit report reads when it is given none.

Each row is one :func:`dpkit.audit.mechanism.registry.audit_row`; this module only arranges them.
"""

from __future__ import annotations

from typing import Iterable, Sequence

import numpy as np
import pandas as pd

from dpkit.audit.mechanism import registry
from dpkit.audit.mechanism.registry import audit_row
from dpkit.data import load_medical_specialties, medical_vocabulary
from dpkit.dpst.hashing import HashEmbedder
from dpkit.kps.pipeline import KPSConfig, fit_kps
from dpkit.models.embed import load_embedder
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


def example_kps_run(seed: int = 0, real_embedder: bool = True, max_per_class: int = 40) -> tuple[dict, dict]:
    """A small real DP-KPS run (medical specialties, 3 classes) for the audit report's default page
    (:mod:`dpkit.audit.report`).

    Returns ``(ledger_dict, params)``. ``real_embedder=False`` uses the hashed
    bag-of-words embedder (public and deterministic) instead of MiniLM, for speed.
    """
    if real_embedder:
        embedder = load_embedder()
    else:
        embedder = HashEmbedder()
    data = load_medical_specialties(n_classes=3, max_per_class=max_per_class, seed=seed)
    config = KPSConfig(epsilon=4.0, vocabulary_share=0.25, S=10, N=100, n_features=256)
    model = fit_kps(data.train_texts, data.train_labels, data.label_names, medical_vocabulary(), embedder,
                    config, np.random.default_rng(seed))
    params = {"method": "DP-KPS (independent keyphrase sampling)", "dataset": data.name,
              "documents": len(data.train_texts), "delta": 1e-5,
              "output": "the private vocabulary (top N terms) and one DP-KDE sketch per class; keyphrase "
                        "sequences, prompts and the LLM's synthetic texts are post-processing of these",
              "tuning": "hyperparameters fixed in advance (paper defaults scaled down); no tuning on private "
                        "data, so none to account for",
              "config": {k: getattr(config, k) for k in ("eps_voc", "eps_kde", "S", "N", "n_features")}}
    return model.ledger.to_dict(), params
