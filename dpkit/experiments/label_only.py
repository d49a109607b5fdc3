"""References that read no private record: what a score means when the label names give the answer away.

A method's balanced accuracy on a held-out set says that its texts carry private signal only if
something that reads no private record scores lower. This module gives three such references,
each a function of public information only (the document type, the label names or descriptions,
the bundled models, and, for the rule, a one-line pattern per data set):

* **label-only generator** (:func:`label_only_texts`): the bundled model prompted with private
  prediction's public row alone, ``Write a {document type} with Label: {label}.``, in the data's
  voice (the system message, the opened answer, stop sequences and banned openings of
  :func:`dpkit.models.voice.document_voice`), ``per_class`` texts per label, one sampling seed per
  text. Its texts are scored exactly as a release (:func:`dpkit.evaluation.evaluate`: MiniLM
  features, logistic regression, the real test split).
* **zero-shot** (:func:`zero_shot`): each test text gets the label whose name (or
  ``a {document type} about {label}``) is nearest in the MiniLM space. No training text at all.
* **keyword rule** (:data:`KEYWORD_RULES`): one line per held-out set, written after reading 8
  training texts of that set and nothing else.

:func:`gain_over_reference` is a method's gain over a reference with a paired Student-t interval
over seeds (:func:`dpkit.experiments.compare.t_interval` of the per-seed differences): a method
"learned from the records" on a set only where that interval lies above 0.

Nothing here is a mechanism and nothing reads a private record: no privacy is spent.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from dpkit.experiments.compare import t_interval
from dpkit.experiments.rows_report import difference_of_means, load_rows, scores
from dpkit.models.voice import document_voice
from dpkit.privacy.marks import Public
from dpkit.validate import ParameterError, check_int

#: The label-only generator's sampling temperature: DP-KPS's generation temperature (the methods' own public decoding;
#: at 1.0 without a top-k the 135M model writes noise and the reference would flatter every method).
LABEL_ONLY_TEMPERATURE = 0.7
#: Its text length: private prediction's default release length.
LABEL_ONLY_MAX_NEW_TOKENS = 48
#: What a reference row is called in experiment cells and tables.
REFERENCE = "label_only"


def label_text(name: str) -> str:
    """How a public prompt names a label: private prediction's own rule (``good_health`` -> ``Good health``)."""
    return str(name).replace("_", " ").capitalize()


def _template(document_type: str):
    """Private prediction's prompt template for ``document_type`` (dpkit.privpred loads PyTorch: imported here)."""
    from dpkit.privpred.prompts import document_template

    return document_template(document_type)


def label_only_prompts(document_type: str, label_texts: Sequence[str]) -> list[Public]:
    """One public prompt per label: private prediction's public row, ``Write a {document type} with Label: X.``
    (``label_texts``: names or the data owner's public descriptions)."""
    template = _template(document_type)
    return [Public(template.public_message(label_text(t))) for t in label_texts]


def label_only_texts(backend, document_type: str, label_texts: Sequence[str], per_class: int, *, seed: int = 0,
                     max_new_tokens: int = LABEL_ONLY_MAX_NEW_TOKENS,
                     temperature: float = LABEL_ONLY_TEMPERATURE) -> tuple[list[str], list[int]]:
    """``per_class`` texts per label from the public prompt alone, and their label indices (label-major order).

    Text ``i`` of every label is sampled with seed ``1000 * seed + i`` (one seed per text: the same
    seed for one prompt would give the same text). Each text is cut at the voice's stop sequences
    and loses a leading echo of the instruction, as private prediction's released texts do.
    """
    per_class = check_int("per_class", per_class, minimum=1)
    if not label_texts:
        raise ParameterError("label_texts", label_texts, "must name at least one label")
    template = _template(document_type)
    voice = document_voice(document_type, min_new_tokens=8)
    prompts = label_only_prompts(document_type, label_texts)
    by_label: list[list[str]] = [[] for _ in label_texts]
    for i in range(per_class):
        outs = backend.generate_batch(prompts, max_new_tokens=max_new_tokens, temperature=temperature,
                                      seed=1000 * int(seed) + i, voice=voice)
        for k, text in enumerate(outs):
            by_label[k].append(template.finish(str(text), label_text(label_texts[k])).strip())
    texts = [t for k in range(len(label_texts)) for t in by_label[k]]
    labels = [k for k in range(len(label_texts)) for _ in range(per_class)]
    return texts, labels


def zero_shot(test_features: np.ndarray, anchors: Sequence[str], embedder) -> np.ndarray:
    """The index of the nearest anchor (cosine in the MiniLM space) for each test text; reads no training text."""
    a = np.asarray(embedder.encode(list(anchors)), dtype=np.float64)
    a /= np.linalg.norm(a, axis=1, keepdims=True)
    x = np.asarray(test_features, dtype=np.float64)
    x = x / np.linalg.norm(x, axis=1, keepdims=True)
    return np.argmax(x @ a.T, axis=1)


@dataclass(frozen=True)
class KeywordRule:
    """One line: a text matching ``pattern`` (case-insensitive) gets ``if_match``, any other ``otherwise``."""

    pattern: str
    if_match: str
    otherwise: str
    source: str  # who wrote it, after reading what

    def predict(self, texts: Sequence[str]) -> list[str]:
        rule = re.compile(self.pattern, re.IGNORECASE)
        return [self.if_match if rule.search(str(t)) else self.otherwise for t in texts]


_REVIEW = "findings/results-4.md §3.2, written after reading 8 training texts"
#: The one-line rule of every held-out set of data/HOLDOUT.md.
KEYWORD_RULES = {
    "medical": KeywordRule(r"\b(?:tooth|teeth|dental|dentin\w*|enamel|caries|pulp\w*|gingiv\w*|molar\w*|incisor\w*|"
                           r"periodont\w*|orthodont\w*|denture\w*|occlus\w*|endodont\w*|root canal|cusp\w*|"
                           r"amalgam|plaque)\b", "Dental", "Surgery",
                           "the label-only reference's authors, written from the label name Dental"),
    "commons_speeches": KeywordRule(r"\b(?:labour|opposition)\b", "Conservative", "Labour", _REVIEW),
    "online_questions": KeywordRule(r"(?-i:^[a-z])|\b(?:drugs?|medications?|medicines?|pills?|tablets?|doses?|dosage|mg|side "
                                    r"effects?|prescri\w*|vaccines?|insulin|antibiotics?|\w+(?:cillin|cycline|"
                                    r"statin|pril|sartan|azole|olol|pam|prazole|mab|dronate|formin))\b",
                                    "medication", "finance", "ours, after reading 8 training texts per label: "
                                    "medication questions start in lower case or name a drug (the review's "
                                    "drug-word rule is not in the repository)"),
    "everyday_situations": KeywordRule(r"^\W*(?:a|an|the|two|three|some|people|several|there|men|women|man|woman|"
                                       r"camera|kids|children|we|they|then)\b", "activity", "social", _REVIEW),
    "everyday_problems": KeywordRule(r"\d", "arithmetic", "practical", _REVIEW),
    "general_questions": KeywordRule(r"\?\s*$", "everyday", "encyclopedic", _REVIEW),
    "short_passages": KeywordRule(r"\b(?:you|your|we|our|us|information|data|personal)\b", "policy", "news", _REVIEW),
    "question_collections": KeywordRule(r"\b(?:you|your|happens?|world|most|all|true|people|U\.S\.?|U\.K\.?)\b",
                                        "truthfulqa", "narrativeqa", "ours, after reading 8 training texts per "
                                        "label: TruthfulQA asks about the world at large and the reader, "
                                        "NarrativeQA about named characters"),
}


def gain_over_reference(method_scores: dict[int, float], reference_scores: dict[int, float],
                        confidence: float = 0.95) -> dict:
    """A method's gain over a reference, paired by seed: ``{"gain", "low", "high", "seeds"}`` (Student t).

    Only seeds present on both sides count; with one seed the interval has no width. The gain "lies
    above 0" -- the method carries signal the reference (which reads no record) does not -- only when
    ``low > 0``.
    """
    seeds = sorted(set(method_scores) & set(reference_scores))
    if not seeds:
        raise ParameterError("reference_scores", sorted(reference_scores), "must share a seed with the method's "
                             f"scores ({sorted(method_scores)})")
    gain, low, high = t_interval([method_scores[s] - reference_scores[s] for s in seeds], confidence)
    return {"gain": gain, "low": low, "high": high, "seeds": len(seeds)}


def gains_over_label_only(frame, metric: str = "balanced_accuracy"):
    """Per data set, method and epsilon of a stored comparison (:func:`dpkit.experiments.stored.rows`), the gain
    of ``metric`` over the label-only cells of the same data set, paired by seed (:func:`gain_over_reference`).
    Rows: ``dataset, method, epsilon, seeds, gain, low, high, above_zero``; empty when no label-only cell is
    stored (run the preset with ``--methods ...,label_only``)."""
    out = []
    reference = frame[frame.method == REFERENCE]
    for (dataset, method, epsilon), part in frame[frame.method != REFERENCE].groupby(
            ["dataset", "method", "epsilon"], sort=True):
        ref = reference[reference.dataset == dataset]
        if ref.empty or method == "real":
            continue
        gain = gain_over_reference(dict(zip(part.seed, part[metric])), dict(zip(ref.seed, ref[metric])))
        out.append({"dataset": dataset, "method": method, "epsilon": epsilon, **gain,
                    "above_zero": bool(gain["low"] > 0)})
    return pd.DataFrame(out, columns=["dataset", "method", "epsilon", "gain", "low", "high", "seeds", "above_zero"])


#: Where ``benchmarks/heldout_baselines.py`` stores its measurement of every held-out set.
BASELINES_FOLDER = "results/heldout-baselines"


def baselines_table(summary: dict) -> str:
    """Markdown: per held-out set, the references that read no record beside real data
    (``summary``: the ``summary.json`` of ``benchmarks/heldout_baselines.py``)."""
    lines = ["| held-out set | keyword rule | zero-shot: label name / document and label | label-only generator "
             "[95% t over draws] | 8 real per label (mean; min of 10) | all real rows |",
             "|---|---|---|---|---|---|"]
    for row in summary["sets"]:
        lo = row["label_only"]
        lines.append(f"| `{row['set']}` | {row['keyword_rule']['estimate']:.3f} | "
                     f"{row['zero_shot_label']['estimate']:.3f} / {row['zero_shot_document']['estimate']:.3f} | "
                     f"{lo['mean']:.3f} [{lo['low']:.3f}, {lo['high']:.3f}] | "
                     f"{row['real_8_per_label']['mean']:.3f} ({row['real_8_per_label']['min']:.3f}) | "
                     f"{row['real_all_rows']['estimate']:.3f} |")
    return "\n".join(lines)


#: The stored 1,000-row releases of ``benchmarks/heldout_rows.py`` per held-out set (``results/<folder>``).
#: A set may have several folders (one per run command); a method's releases are read from the first that has any.
HELDOUT_RELEASES = {"online_questions": ("heldout-questions",), "everyday_situations": ("heldout-situations",),
                    "everyday_problems": ("heldout-problems",), "general_questions": ("heldout-general",),
                    "short_passages": ("heldout-passages",),
                    "question_collections": ("heldout-collections", "heldout-collections-ft")}
METHOD_LABELS = {"kps": "DP-KPS", "pp": "private prediction", "dpst": "DP-ST", "ft": "DP fine-tuning"}


#: Label-only measurements at other sizes (``benchmarks/heldout_baselines.py --per-class N --draws D --out
#: results/<folder>``): a method's gain is taken over the reference that writes as many texts per label as its
#: releases do, or the nearest size stored (:func:`matching_reference`).
SIZED_BASELINES = ("heldout-baselines-collections-16x10", "heldout-baselines-collections-100x5")


def texts_per_label(folder: Path, method: str, labels: int) -> int | None:
    """Texts per label of ``method``'s scored releases in ``folder`` (their size is public: a method's
    configuration), or None when none is stored."""
    sizes = [r["evaluation"]["n_synthetic"] for r in load_rows(folder)
             if r["method"] == method and "evaluation" in r]
    return round(sum(sizes) / len(sizes) / labels) if sizes else None


def sized_references(results_root, names: Sequence[str] = SIZED_BASELINES) -> dict[str, list[dict]]:
    """Per held-out set, the ``label_only`` entries of the stored measurements ``names`` (missing ones skipped)."""
    out: dict[str, list[dict]] = {}
    for name in names:
        path = Path(results_root) / name / "summary.json"
        if path.exists():
            for row in json.loads(path.read_text())["sets"]:
                out.setdefault(row["set"], []).append(row["label_only"])
    return out


def matching_reference(default: dict, others: Sequence[dict], per_class: int | None) -> dict:
    """The stored reference nearest the release's size (texts per label, on a log scale; among equals the one
    with the most draws); ``default`` when the size is unknown. A larger reference trains the classifier on
    more texts, so it is the fairer yardstick for a larger release."""
    if per_class is None:
        return default
    return min((default, *others), key=lambda r: (abs(math.log(r["per_class"] / per_class)), -len(r["draws"])))


def release_gains(results_root, summary: dict, sized: Sequence[str] = SIZED_BASELINES) -> list[dict]:
    """Per held-out set with stored releases and per method: the releases' balanced accuracies, and the gain of
    their mean over the label-only generator's mean with a 95% interval -- Welch's over the releases and the
    label-only draws when a method has two releases or more (:func:`~dpkit.experiments.rows_report.
    difference_of_means`), else Student's over the draws alone (the one release taken as fixed: the
    interval covers the reference's variation, not the release's). The reference is the one of the
    stored one nearest the release's size (:func:`matching_reference`)."""
    out = []
    others = sized_references(results_root, sized)
    for row in summary["sets"]:
        folders = [Path(results_root) / name for name in HELDOUT_RELEASES.get(row["set"], ())
                   if (Path(results_root) / name / "results.jsonl").exists()]
        for method in METHOD_LABELS:
            found = next(((folder, values) for folder in folders if (values := scores(folder, method))), None)
            if found is None:
                continue
            folder, values = found
            per_class = texts_per_label(folder, method, len(row["labels"]))
            reference = matching_reference(row["label_only"], others.get(row["set"], ()), per_class)
            draws = reference["draws"]
            if len(values) >= 2 and len(draws) >= 2:
                d = difference_of_means(values, draws)
                gain, low, high = d["mean"], d["low"], d["high"]
            else:
                gain, low, high = t_interval([float(np.mean(values)) - x for x in draws])
            out.append({"set": row["set"], "method": method, "releases": [round(v, 4) for v in values],
                        "per_class": per_class, "label_only": reference["mean"],
                        "label_only_size": (reference["per_class"], len(draws)),
                        "keyword_rule": row["keyword_rule"]["estimate"],
                        "gain": gain, "low": low, "high": high, "above_zero": bool(low > 0)})
    return out


def gains_table(gains: Sequence[dict]) -> str:
    """Markdown of :func:`release_gains`."""
    lines = ["| held-out set | method | release(s) | keyword rule | label-only (texts per label x draws) "
             "| gain over label-only [95%] |", "|---|---|---|---|---|---|"]
    for g in gains:
        mark = " (above 0)" if g["above_zero"] else ""
        lines.append(f"| `{g['set']}` | {METHOD_LABELS[g['method']]} | {', '.join(f'{v:.3f}' for v in g['releases'])}"
                     f" | {g['keyword_rule']:.3f} | {g['label_only']:.3f} ({g['label_only_size'][0]} x "
                     f"{g['label_only_size'][1]}) | {g['gain']:+.3f} [{g['low']:+.3f}, "
                     f"{g['high']:+.3f}]{mark} |")
    return "\n".join(lines)
