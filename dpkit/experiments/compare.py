"""The three methods side by side at equal epsilon: one grid, one classifier, intervals over seeds.

:func:`run_grid` runs, for one data set and its fixed split, every method of
:data:`dpkit.methods.METHODS` at every epsilon of a grid and for several seeds,
and scores every synthetic set with the project's one classifier
(:func:`dpkit.evaluation.evaluate`) on the same real test texts. Next to them:
real training texts of the same size and the majority class. :func:`summarize`
turns the per-seed rows into means with 95% Student-t intervals over the seeds.

Sizes are public and equal across methods: each releases ``per_class`` texts per
label (DP-KPS ``n_per_class``; private prediction ``n_batches`` batches per
label, one text each; DP-ST privatizes ``per_class`` records per label, one
output each).

epsilon = infinity is the *non-private run of each pipeline*: the same code at
:data:`NOISE_OFF_EPSILON`, where every noise scale (DP-KDE, exponential
mechanisms, randomized response) is negligible and private prediction's token
cap never binds. It is a ceiling, not a release.

Everything here is evaluation: it reads private training texts (to build the
releases and the real-data reference) and real test texts, and it reports
counts such as private prediction's fraction of private tokens. None of it is a
release; the releases themselves are what :mod:`dpkit.methods` returns.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, replace
from typing import Sequence

import numpy as np

from dpkit.methods import Records, dpst, kps, pp
from dpkit.seeds import generator, root_sequence
from dpkit.validate import ParameterError, check_int

#: The epsilon at which a pipeline runs for the "epsilon = infinity" (noise off) column.
NOISE_OFF_EPSILON = 1e6
#: The methods the comparison runs, by their name in :data:`dpkit.methods.METHODS`.
METHOD_NAMES = ("kps", "pp", "dpst")


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
    dpst_reconstruct: bool = False   # False: release the privatized triples joined as text
    dpst_label_share: float = 0.5    # part of DP-ST's per-record epsilon for its randomized-response label
    pp_per_class: int = 0            # private prediction's texts per label; 0: per_class (a preset may afford fewer)
    pp_max_new_tokens: int = 0       # private prediction's tokens per text; 0: max_new_tokens

    def __post_init__(self):
        check_int("per_class", self.per_class, minimum=1)
        check_int("max_new_tokens", self.max_new_tokens, minimum=1)
        check_int("pp_per_class", self.pp_per_class, minimum=0)
        check_int("pp_max_new_tokens", self.pp_max_new_tokens, minimum=0)

    @classmethod
    def smoke(cls) -> "Sizes":
        return cls(per_class=1, kps_N=60, kps_features=128, pp_batch_size=4.0, max_new_tokens=4, dpst_k=8)


def configs(epsilon: float, sizes: Sizes, *, document_type: str, vocabulary: str = "english",
            smoke: bool = False) -> dict:
    """Each method's public Config at ``epsilon`` (``math.inf`` -> :data:`NOISE_OFF_EPSILON`)."""
    eps = NOISE_OFF_EPSILON if math.isinf(epsilon) else float(epsilon)
    out = {
        "kps": kps.Config(epsilon=eps, n_per_class=sizes.per_class, vocabulary=vocabulary, N=sizes.kps_N,
                          L=sizes.kps_L, n_features=sizes.kps_features, bandwidth=sizes.kps_bandwidth,
                          few_shot=sizes.kps_few_shot, temperature=sizes.kps_temperature, document_type=document_type,
                          max_new_tokens=sizes.max_new_tokens),
        "pp": pp.Config(epsilon=eps, n_batches=sizes.pp_per_class or sizes.per_class,
                        expected_batch_size=sizes.pp_batch_size, clip=sizes.pp_clip,
                        temperature=sizes.pp_temperature, top_k=sizes.pp_top_k,
                        max_new_tokens=sizes.pp_max_new_tokens or sizes.max_new_tokens),
        "dpst": dpst.Config(epsilon=eps, k=sizes.dpst_k, reconstruct=sizes.dpst_reconstruct,
                            label_share=sizes.dpst_label_share, max_new_tokens=sizes.max_new_tokens),
    }
    if smoke:
        out["dpst"] = replace(out["dpst"], n_articles=12)
    return out


def per_class_subset(labels: Sequence[int], per_class: int, rng: np.random.Generator) -> list[int]:
    labels = np.asarray(labels)
    chosen = []
    for label in np.unique(labels):
        idx = np.flatnonzero(labels == label)
        chosen += sorted(rng.choice(idx, size=min(per_class, len(idx)), replace=False).tolist())
    return chosen


def _pp_release(records: Records, config, seed_sequence) -> tuple[list[str], list[str], float]:
    """Private prediction as :func:`dpkit.methods.pp.synthesize` runs it, keeping the run's
    private-token fraction (an evaluation statistic, never part of a release).

    The chapter keeps this path rather than calling ``synthesize``: ``synthesize``
    returns no private-token fraction, and :func:`run_grid` decodes once for every
    epsilon whose cap does not bind (:func:`pp_decoding_key`), which keeps the
    chapter's runtime. ``dpkit experiment compare`` (:mod:`dpkit.experiments.cells`)
    calls ``synthesize`` itself, one release per cell.
    """
    from dpkit.privpred import generate_synthetic, resolve_local_lm

    records = records.capped(config.max_chars)
    texts = [t if t.strip() else pp.EMPTY_TEXT for t in records.texts]
    result = generate_synthetic(texts, pp.template_for(config, True), config.pp_config(), labels=records.labels,
                                label_names=records.label_set, n_batches=config.n_batches,
                                model=resolve_local_lm(None), seed=seed_sequence)
    names = [records.label_set[int(e.label)] for e in result.examples]
    return [e.text.strip() for e in result.examples], names, float(result.stats["private_fraction"])


def pp_decoding_key(config) -> tuple:
    """What a private-prediction run's tokens depend on, besides the records and the seed.

    The settings of :class:`~dpkit.privpred.DecodeSettings` with the token cap
    ``r`` replaced by ``min(r, step limit)``: a batch takes at most its step
    limit of tokens, so a cap above it never stops a batch, and every epsilon
    whose cap does not bind decodes the same tokens from the same seed. (The
    release's guarantee still differs; the grid only reuses the evaluation.)
    """
    pcfg = config.pp_config()
    settings = pcfg.settings(pcfg.max_private_tokens())
    cap = min(settings.max_private_tokens, settings.step_limit)
    return (replace(settings, max_private_tokens=cap), config.n_batches, config.template, config.hash_key,
            config.max_chars, pcfg.max_record_tokens)


def run_grid(data, epsilons: Sequence[float], seeds: Sequence[int], sizes: Sizes, *, backend, embedder,
             document_type: str, vocabulary: str = "english", methods: Sequence[str] = METHOD_NAMES,
             smoke: bool = False, n_bootstrap: int = 200, progress=print) -> list[dict]:
    """Per-seed rows: ``method``, ``epsilon``, ``seed``, metrics, ``wall_s`` and method extras.

    ``data``: a :class:`dpkit.data.Dataset` (its split is used as is). Extras:
    ``private_fraction`` (private prediction), ``similarity``, ``attack_original``
    and ``attack_private`` (DP-ST: cosine of each output to its record, and the
    accuracy of an attacker trained on the real test texts to recover the label,
    on the records and on their outputs).
    """
    from dpkit.evaluation import evaluate, train

    for name in methods:
        if name not in METHOD_NAMES:
            raise ParameterError("methods", name, f"must be among {METHOD_NAMES}")
    seeds = [check_int("seed", s, minimum=0) for s in seeds]
    names = tuple(data.label_names)
    train_texts, train_labels = list(data.train_texts), [int(y) for y in data.train_labels]
    test_texts, test_labels = list(data.test_texts), [names[int(y)] for y in data.test_labels]
    x_test = np.asarray(embedder.encode(test_texts), dtype=np.float64)
    attacker = train(test_texts, test_labels, features=x_test)
    records = Records(tuple(train_texts), tuple(train_labels), names)

    def score(texts, labels, seed):
        return evaluate(texts, labels, test_texts, test_labels, embedder=embedder, test_features=x_test,
                        n_bootstrap=n_bootstrap, seed=seed)

    rows = []

    def add(method, epsilon, seed, result, wall, **extra):
        row = {"method": method, "epsilon": float(epsilon), "seed": seed, "wall_s": wall,
               "n_train": result["n_train"], "majority_baseline": result["majority_baseline"]}
        for metric in ("balanced_accuracy", "macro_f1", "accuracy"):
            row[metric] = result[metric]["estimate"]
        row.update(extra)
        rows.append(row)

    for seed in seeds:
        rng = generator(root_sequence(seed), 9)  # the real-data subset: its own node of the seed
        subset = per_class_subset(train_labels, sizes.per_class, rng)
        real = score([train_texts[i] for i in subset], [names[train_labels[i]] for i in subset], seed)
        add("real, same size", math.inf, seed, real, 0.0)
        add("majority class", math.inf, seed, {**real, "balanced_accuracy": {"estimate": real["majority_baseline"]},
                                                 "macro_f1": {"estimate": float("nan")},
                                                 "accuracy": {"estimate": real["majority_accuracy"]}}, 0.0)
        decoded = {}  # private prediction at every epsilon whose token cap does not bind: decoded once
        for epsilon in epsilons:
            cfg = configs(epsilon, sizes, document_type=document_type, vocabulary=vocabulary, smoke=smoke)
            root = root_sequence(seed)
            for name in methods:
                start = time.perf_counter()
                extra = {}
                if name == "pp":
                    key = pp_decoding_key(cfg["pp"])
                    if key not in decoded:
                        decoded[key] = (*_pp_release(records, cfg["pp"], root), time.perf_counter() - start)
                    texts, labels, extra["private_fraction"], first_wall = decoded[key]
                    start = time.perf_counter() - first_wall  # the wall time of the decoding, reused or not
                elif name == "kps":
                    release = kps.synthesize(records, cfg["kps"], None, backend, root)
                    texts, labels = release.texts(), release.labels()
                else:
                    sub = Records(tuple(train_texts[i] for i in subset), tuple(train_labels[i] for i in subset), names)
                    release = dpst.synthesize(sub, cfg["dpst"], None, backend, root)
                    texts, labels = release.texts(), release.labels()
                    originals = np.asarray(embedder.encode(list(sub.texts)), dtype=np.float64)
                    outputs = np.asarray(embedder.encode(texts), dtype=np.float64)
                    truth = np.array([names[y] for y in sub.labels], dtype=object)
                    extra = {"similarity": float(np.mean(np.sum(originals * outputs, axis=1))),
                             "attack_original": float(np.mean(attacker(originals) == truth)),
                             "attack_private": float(np.mean(attacker(outputs) == truth))}
                wall = time.perf_counter() - start
                kept = [(t, y) for t, y in zip(texts, labels) if t.strip()]
                result = score([t for t, _ in kept] or ["(nothing)"], [y for _, y in kept] or [names[0]], seed)
                add(name, epsilon, seed, result, wall, **extra)
                progress(f"seed {seed} epsilon {epsilon:g} {name}: balanced accuracy "
                         f"{rows[-1]['balanced_accuracy']:.3f} ({len(kept)} texts, {wall:.0f} s)")
    return rows


def t_interval(values: Sequence[float], confidence: float = 0.95) -> tuple[float, float, float]:
    """(mean, low, high): Student-t interval of the mean over seeds (a single value: no width)."""
    from scipy import stats

    x = np.asarray([v for v in values if not np.isnan(v)], dtype=float)
    if len(x) == 0:
        return float("nan"), float("nan"), float("nan")
    mean = float(x.mean())
    if len(x) < 2:
        return mean, mean, mean
    half = float(stats.t.ppf(0.5 + confidence / 2, len(x) - 1) * x.std(ddof=1) / math.sqrt(len(x)))
    return mean, mean - half, mean + half


def summarize(rows: Sequence[dict], columns: Sequence[str] = ("balanced_accuracy", "macro_f1", "wall_s",
                                                                "private_fraction", "similarity",
                                                                "attack_private", "attack_original")):
    """One row per (method, epsilon): ``<column>``, ``<column>_low``, ``<column>_high`` over seeds."""
    import pandas as pd

    frame = pd.DataFrame(list(rows))
    out = []
    for (method, epsilon), part in frame.groupby(["method", "epsilon"], sort=False):
        row = {"method": method, "epsilon": epsilon, "seeds": len(part)}
        for column in columns:
            if column in part:
                row[column], row[column + "_low"], row[column + "_high"] = t_interval(part[column].tolist())
        out.append(row)
    return pd.DataFrame(out)


def relative_gain(utility_private: float, utility_original: float, attack_private: float,
                  attack_original: float) -> float:
    """DP-ST's ``RG = U_p / U_o - EP_p / EP_o`` (:func:`dpkit.dpst.evaluate.relative_gain`)."""
    from dpkit.dpst.evaluate import relative_gain as rg

    return rg(utility_private, utility_original, attack_private, attack_original)
