"""The three methods side by side at equal epsilon: public sizes, each method's configuration, intervals.

:class:`Sizes` are the public sizes and decoding choices of a comparison, the
same for every method, epsilon and seed (each method releases ``per_class``
texts per label: DP-KPS ``n_per_class``; private prediction ``n_batches``
batches per label, one text each, or ``pp_per_class`` where a preset affords
it fewer; DP-ST privatizes ``per_class`` records per label, one output each).
:func:`configs` turns them into each method's public Config at an epsilon;
:func:`summarize` and :func:`t_interval` give means over seeds with 95%
Student-t intervals. ``dpkit experiment compare``
(:mod:`dpkit.experiments.cli`) runs the comparison through each method's
own ``synthesize``.

epsilon = infinity is the *non-private run of each pipeline*: the same code at
:data:`NOISE_OFF_EPSILON`, where every noise scale (DP-KDE, exponential
mechanisms, randomized response) is negligible and private prediction's token
cap never binds. It is a ceiling, not a release.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Sequence

import numpy as np
import pandas as pd
from scipy import stats

from dpkit import methods  # the method modules load PyTorch on first use, not on import (dpkit --help)
from dpkit.privacy.invisibleink import calibrated_clip
from dpkit.validate import MAX_EPSILON, check_choice, check_int

#: The epsilon at which a pipeline runs for the "epsilon = infinity" (noise off) column.
NOISE_OFF_EPSILON = MAX_EPSILON  # the largest budget a Config accepts; cells stored before the cap ran at 1e6
#                                (their release records it as config_epsilon)
#: The methods the comparison runs, by their name in :data:`dpkit.methods.METHODS`.
METHOD_NAMES = ("kps", "pp", "dpst")
#: Extra rows a comparison may ask for (``--methods``): a name -> the dpkit method that runs it.
#: ``pp_ink``: private prediction's InvisibleInk variant (DClip + Top-k+, :mod:`dpkit.privpred.invisibleink`).
#: ``ft``: DP fine-tuning (:mod:`dpkit.methods.ft`), the reference family of private prediction's paper: an
#: extra row, not one of :data:`METHOD_NAMES`, so the presets stored before it keep their cells.
VARIANT_ROWS = {"pp_ink": "pp", "ft": "ft"}


def method_of(row: str) -> str:
    """The dpkit method (:data:`dpkit.methods.METHODS`) that runs a comparison row."""
    return VARIANT_ROWS.get(row, row)


@dataclass(frozen=True)
class Sizes:
    """Public sizes and decoding choices of the comparison (the same for every epsilon and seed)."""

    per_class: int = 4               # synthetic texts per label, for every method
    kps_L: int = 6                   # keyphrases per DP-KPS prompt
    kps_N: int = 500                 # DP-KPS private vocabulary size
    kps_features: int = 512
    kps_bandwidth: float = 0.5       # DP-KDE bandwidth: 1.0 makes the class KDEs nearly flat over the vocabulary
    kps_few_shot: int = 0            # DP-KPS: earlier synthetic texts of the label shown as examples
    kps_temperature: float = 0.7
    pp_batch_size: float = 8.0       # private prediction: expected batch size s
    pp_top_k: int = 10               # tokens of the public prediction a private token may be
    pp_clip: float = 2.0             # c and tau: one token costs rho = (c / (s tau))^2 / 2, so that
    pp_temperature: float = 2.0      # epsilon = 1 (delta 1e-6) still affords a few private tokens
    max_new_tokens: int = 16
    dpst_k: int = 50
    # False: DP-ST's triples joined as text, as the stored presets were made; True: its LLM rewrite (the release
    # `dpkit synth dpst` makes). The default stays False because a preset's sizes are part of each stored cell
    # (a preset whose sizes change reads its stored cells as stale): a preset turns the rewrite on when it is
    # made again (the holdout preset does). Cost of the rewrite, ESTIMATE: about 0.6 s per text on the idle
    # 2-core CPU (1.25 s measured at load 1.3 before the shared prompt prefix was evaluated once, over the 2.2x
    # that benchmarks/dpst_rewrite_prefix.py measured at load 6-7).
    dpst_reconstruct: bool = False
    dpst_label_share: float = 0.5    # part of DP-ST's per-record epsilon for its randomized-response label
    # DP-ST's mechanism: "document" (the slot variant, which made every cell stored before the topic variant) or
    # "topic" (dpkit.dpst.topic, the default of `dpkit synth dpst`). A later field: a cell's stored sizes name it
    # only when it is not "document" (results.LATER_SIZES), so the cells stored before it stay current.
    dpst_variant: str = "document"
    # private prediction's no-repeat rule (dpkit.models.voice.repeated_ngram_next): 0, as every cell stored before
    # it was made; `dpkit synth pp` defaults to 3. A later field, like dpst_variant (results.LATER_SIZES).
    pp_no_repeat_ngram: int = 0
    pp_per_class: int = 0            # private prediction's texts per label; 0: per_class (a preset may afford fewer)
    pp_max_new_tokens: int = 0       # private prediction's tokens per text; 0: max_new_tokens

    def __post_init__(self):
        check_int("per_class", self.per_class, minimum=1)
        check_int("max_new_tokens", self.max_new_tokens, minimum=1)
        check_int("pp_per_class", self.pp_per_class, minimum=0)
        check_int("pp_max_new_tokens", self.pp_max_new_tokens, minimum=0)
        check_choice("dpst_variant", self.dpst_variant, methods.dpst.VARIANTS)

    @classmethod
    def smoke(cls) -> "Sizes":
        return cls(per_class=1, kps_N=60, kps_features=128, pp_batch_size=4.0, max_new_tokens=4, dpst_k=8)


def configs(epsilon: float, sizes: Sizes, *, document_type: str, vocabulary: str = "english",
            smoke: bool = False) -> dict:
    """Each method's public Config at ``epsilon`` (``math.inf`` -> :data:`NOISE_OFF_EPSILON`)."""
    eps = NOISE_OFF_EPSILON if math.isinf(epsilon) else float(epsilon)
    out = {
        "kps": methods.kps.Config(epsilon=eps, n_per_class=sizes.per_class, vocabulary=vocabulary, N=sizes.kps_N,
                          L=sizes.kps_L, n_features=sizes.kps_features, bandwidth=sizes.kps_bandwidth,
                          few_shot=sizes.kps_few_shot, temperature=sizes.kps_temperature, document_type=document_type,
                          max_new_tokens=sizes.max_new_tokens),
        "pp": methods.pp.Config(epsilon=eps, n_batches=sizes.pp_per_class or sizes.per_class,
                        expected_batch_size=sizes.pp_batch_size, clip=sizes.pp_clip,
                        temperature=sizes.pp_temperature, top_k=sizes.pp_top_k,
                        max_new_tokens=sizes.pp_max_new_tokens or sizes.max_new_tokens, document_type=document_type,
                        no_repeat_ngram=sizes.pp_no_repeat_ngram),
        "dpst": methods.dpst.Config(epsilon=eps, k=sizes.dpst_k, reconstruct=sizes.dpst_reconstruct,
                            variant=sizes.dpst_variant,
                            label_share=sizes.dpst_label_share, max_new_tokens=sizes.max_new_tokens,
                            document_type=document_type),
    }
    # DP fine-tuning reads every record of the split (Poisson-sampled steps) and writes per_class texts per label;
    # its training schedule is its own defaults (the smoke preset's in a smoke run)
    out["ft"] = (methods.ft.Config.smoke(eps, n_per_class=sizes.per_class, document_type=document_type) if smoke
                 else methods.ft.Config(epsilon=eps, n_per_class=sizes.per_class, document_type=document_type))
    if smoke:
        out["dpst"] = replace(out["dpst"], n_articles=12)
    out["pp_ink"] = invisibleink_config(out["pp"])
    return out


def invisibleink_config(config: "pp.Config", temperature: float = 1.0) -> "pp.Config":
    """The ``pp_ink`` row: the pp row's sizes with the InvisibleInk variant, at tau = 1 and the paper's
    calibrated DClip norm C (the largest at which every batch's ``max_new_tokens`` tokens fit epsilon)."""
    clip = calibrated_clip(config.epsilon, config.delta, config.expected_batch_size, temperature,
                           config.max_new_tokens)
    return replace(config, variant="invisibleink", clip=clip, temperature=temperature)


def per_class_subset(labels: Sequence[int], per_class: int, rng: np.random.Generator) -> list[int]:
    labels = np.asarray(labels)
    chosen = []
    for label in np.unique(labels):
        idx = np.flatnonzero(labels == label)
        chosen += sorted(rng.choice(idx, size=min(per_class, len(idx)), replace=False).tolist())
    return chosen


def pp_decoding_key(config) -> tuple:
    """What a private-prediction run's tokens depend on, besides the records and the seed.

    The settings of :class:`~dpkit.privpred.DecodeSettings` with the token cap
    ``r`` replaced by ``min(r, step limit)``: a batch takes at most its step
    limit of tokens, so a cap above it never stops a batch, and every epsilon
    whose cap does not bind decodes the same tokens from the same seed. (The
    release's guarantee still differs; the grid only reuses the evaluation.)
    """
    settings = config.settings(config.max_private_tokens())
    cap = min(settings.max_private_tokens, settings.step_limit)
    return (replace(settings, max_private_tokens=cap), config.n_batches, config.template, config.hash_key,
            config.max_chars, config.max_record_tokens)


#: Metrics that live in [0, 1]: their intervals are clipped to that range.
UNIT_INTERVAL_METRICS = frozenset({"balanced_accuracy", "macro_f1", "accuracy", "private_fraction", "similarity",
                                   "attack_private", "attack_original",
                                   # shares and scores of dpkit.textmetrics
                                   "assistant_talk", "short_texts", "distinct_1", "distinct_2", "knn_precision",
                                   "knn_recall", "auroc_real_vs_synthetic"})


def t_interval(values: Sequence[float], confidence: float = 0.95,
               bounds: tuple[float, float] | None = None) -> tuple[float, float, float]:
    """(mean, low, high): Student-t interval of the mean over seeds (a single value: no width).

    With ``bounds`` the interval is clipped to that range: with 3 seeds a spread-out
    score's t interval can pass 1 (or 0), which no mean of scores can reach.
    """
    x = np.asarray([v for v in values if not np.isnan(v)], dtype=float)
    if len(x) == 0:
        return float("nan"), float("nan"), float("nan")
    mean = float(x.mean())
    if len(x) < 2:
        return mean, mean, mean
    half = float(stats.t.ppf(0.5 + confidence / 2, len(x) - 1) * x.std(ddof=1) / math.sqrt(len(x)))
    low, high = mean - half, mean + half
    if bounds is not None:
        low, high = max(low, bounds[0]), min(high, bounds[1])
    return mean, low, high


def metric_interval(column: str, values: Sequence[float]) -> tuple[float, float, float]:
    """:func:`t_interval` of one metric column, clipped to [0, 1] for :data:`UNIT_INTERVAL_METRICS`."""
    return t_interval(values, bounds=(0.0, 1.0) if column in UNIT_INTERVAL_METRICS else None)


def summarize(rows: Sequence[dict], columns: Sequence[str] = ("balanced_accuracy", "macro_f1", "wall_s",
                                                                "private_fraction", "similarity",
                                                                "attack_private", "attack_original")):
    """One row per (method, epsilon): ``<column>``, ``<column>_low``, ``<column>_high`` over seeds."""
    frame = pd.DataFrame(list(rows))
    out = []
    for (method, epsilon), part in frame.groupby(["method", "epsilon"], sort=False):
        row = {"method": method, "epsilon": epsilon, "seeds": len(part)}
        for column in columns:
            if column in part:
                interval = metric_interval(column, part[column].tolist())
                row[column], row[column + "_low"], row[column + "_high"] = interval
        out.append(row)
    return pd.DataFrame(out)
