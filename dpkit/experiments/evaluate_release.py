"""``dpkit evaluate``: a released synthetic table scored by the one classifier, beside the real data.

It reports the classifier's scores (:func:`dpkit.evaluation.evaluate`), the measures
of the texts themselves (:func:`dpkit.textmetrics.measure_texts`: assistant talk,
texts under 3 words, distinct-1/2, lengths, k-NN precision/recall and the
real-vs-synthetic AUROC, each against the real test texts) and, with
``--reference label-only``, the same scores of a generator that reads no record
(:func:`dpkit.experiments.label_only.label_only_texts`) with the release's gain over
it. As text or, with ``--json``, as JSON. A classifier can separate two piles of
boilerplate, so the scores alone do not say whether the texts read like the data.

It lives among the experiments because its reference is one of them. It runs on
the client's side, on released synthetic data and real test data: no privacy is spent.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Sequence

from dpkit import runtime
from dpkit import backends
from dpkit.data.tables import read_table
from dpkit.evaluation import embed_texts, evaluate
from dpkit.experiments.compare import t_interval
from dpkit.experiments.label_only import label_only_texts
from dpkit.models.embed import load_embedder
from dpkit.runs import verify_folder
from dpkit.textmetrics import measure_texts
from dpkit.validate import ParameterError, check_int


def _evaluate_command(args: argparse.Namespace) -> int:
    runtime.set_offline()
    def read(flag, path, text_column, label_column):
        try:
            return read_table(path, text_column, label_column)
        except ParameterError as error:  # name the flag the user typed, not the reader's --input
            if error.name == "--input":
                raise ParameterError(flag, error.value, error.allowed) from None
            raise

    try:
        check_int("--seed", args.seed, minimum=0)
        if args.reference is None and args.reference_draws is not None:
            raise ParameterError("--reference-draws", args.reference_draws, "applies only with --reference label-only")
        if args.reference is not None:
            reference_draws(args)
        check_release(args.synthetic)
        synthetic = read("--synthetic", args.synthetic, "text", "label")
        test = read("--test", args.test, args.text_column, args.label_column)
        real = read("--real", args.real, args.text_column, args.label_column) if args.real else None
        check_shared_labels(synthetic.labels, test.labels)
    except ParameterError as error:
        message = str(error)
        if error.value == "text" or error.value == "label":
            message += " (--synthetic takes the synthetic.jsonl of a labelled dpkit synth release)"
        print(f"dpkit evaluate: {message}", file=sys.stderr)
        return 2

    embedder = load_embedder()
    document_type = args.document_type or _release_document_type(args.synthetic)
    x_test = embed_texts(test.texts, embedder)
    x_synthetic = embed_texts(synthetic.texts, embedder)
    result = evaluate(synthetic.texts, synthetic.labels, test.texts, test.labels, embedder=embedder,
                      train_features=x_synthetic, test_features=x_test, seed=args.seed)
    result["n_synthetic"] = result.pop("n_train")
    result["text_measures"] = measure_texts(synthetic.texts, test.texts, synthetic_features=x_synthetic,
                                            real_features=x_test, document_type=document_type, seed=args.seed)
    result["document_type"] = document_type
    if real is not None:
        x_real = embed_texts(real.texts, embedder)
        real_scores = evaluate(real.texts, real.labels, test.texts, test.labels, embedder=embedder,
                               train_features=x_real, test_features=x_test, seed=args.seed)
        real_scores["n_real"] = real_scores.pop("n_train")
        real_scores.pop("n_test")
        real_scores["text_measures"] = measure_texts(real.texts, test.texts, synthetic_features=x_real,
                                                     real_features=x_test, document_type=document_type,
                                                     seed=args.seed)
        result["real"] = real_scores
    if args.reference is not None:
        try:
            result["reference"] = label_only_reference(args, synthetic, test, x_test, embedder, result)
        except ParameterError as error:
            print(f"dpkit evaluate: {error}", file=sys.stderr)
            return 2
    print(json.dumps(result, indent=2, sort_keys=True) if args.json else format_report(result))
    return 0


#: Draws of the label-only reference when ``--reference-draws`` is not given.
REFERENCE_DRAWS = 3


def reference_draws(args: argparse.Namespace) -> int:
    """``--reference-draws`` (default :data:`REFERENCE_DRAWS`), an integer >= 1."""
    given = getattr(args, "reference_draws", None)
    return check_int("--reference-draws", REFERENCE_DRAWS if given is None else given, minimum=1)


def label_only_reference(args: argparse.Namespace, synthetic, test, x_test, embedder, result: dict) -> dict:
    """``--reference label-only``: the release's label set and per-label sizes written by the bundled model from
    the document type and each label (its public description where the release's config.json records one) alone
    (:func:`dpkit.experiments.label_only.label_only_texts`), in ``--reference-draws`` draws, each scored as the
    release is. The gain is the release's balanced accuracy minus each draw's, with a Student-t interval over the
    draws: it covers the reference's variation, not the release's own (one release)."""
    draws = reference_draws(args)
    config = _release_config(args.synthetic)
    counts = Counter(str(y) for y in synthetic.labels)
    names = [str(n) for n in (config.get("labels") or sorted(counts)) if str(n) in counts]
    descriptions = config.get("label_descriptions") or {}
    label_texts = [descriptions.get(n, n) for n in names]
    per_class = max(counts[n] for n in names)
    if any(counts[n] != per_class for n in names):
        raise ParameterError("--reference", args.reference, f"needs the same number of texts under every label (the "
                             f"release has {dict(counts)}), as dpkit synth releases have")
    document_type = result.get("document_type") or (config.get("method_config") or {}).get("document_type") \
        or "short text"
    max_new_tokens = int((config.get("method_config") or {}).get("max_new_tokens") or 48)
    backend = backends.get_backend("local", None)
    scores = []
    for draw in range(draws):
        texts, index = label_only_texts(backend, document_type, label_texts, per_class, seed=draw,
                                        max_new_tokens=max_new_tokens)
        kept = [(t, names[k]) for t, k in zip(texts, index) if t.strip()]
        scored = evaluate([t for t, _ in kept] or ["(nothing)"], [y for _, y in kept] or [names[0]], test.texts,
                          test.labels, embedder=embedder, test_features=x_test, seed=args.seed)
        scores.append(float(scored["balanced_accuracy"]["estimate"]))
    mean, low, high = t_interval(scores, bounds=(0.0, 1.0))
    release = float(result["balanced_accuracy"]["estimate"])
    gain, gain_low, gain_high = t_interval([release - s for s in scores])
    return {"name": "label_only", "document_type": document_type, "label_texts": dict(zip(names, label_texts)),
            "per_class": per_class, "draws": scores,
            "balanced_accuracy": {"estimate": mean, "low": low, "high": high},
            "gain": {"estimate": gain, "low": gain_low, "high": gain_high}}


def _release_config(synthetic_path: str) -> dict:
    """The ``config.json`` beside a release's synthetic.jsonl ({} when there is none)."""
    try:
        value = json.loads(Path(synthetic_path).with_name("config.json").read_text())
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def check_release(synthetic_path: str) -> None:
    """A ``synthetic.jsonl`` in the ``release/`` of a ``dpkit synth`` run folder (``private/`` beside it) is
    scored only if the run folder verifies (:func:`dpkit.runs.verify_folder`: its checksums and seal), so an
    edited release is not scored as the release. A release copied out of its run folder cannot be checked."""
    release = Path(synthetic_path).resolve().parent
    private = release.parent / "private"
    if release.name != "release" or not (private / "manifest.json").is_file():
        return
    try:
        verify_folder(private)
    except ParameterError as error:
        raise ParameterError("--synthetic", synthetic_path, f"is the release of a run folder that does not verify "
                                                            f"({error}): an edited release is not scored") from None


def check_shared_labels(synthetic_labels: Sequence | None, test_labels: Sequence | None) -> None:
    """Refuse synthetic and test labels that share no value: every prediction would be wrong, and the score
    (0.0) would read as a useless release instead of a label-name mismatch."""
    if synthetic_labels is None or test_labels is None:
        return
    ours, theirs = {str(y) for y in synthetic_labels}, {str(y) for y in test_labels}
    if not ours & theirs:
        shown = ", ".join(repr(y) for y in sorted(ours)[:3]) + (", ..." if len(ours) > 3 else "")
        raise ParameterError("--synthetic", f"<{len(ours)} labels: {shown}>",
                             f"shares no label with --test ({len(theirs)} labels): every prediction would be "
                             "wrong; name the labels alike (the release's labels are the --labels of dpkit synth)")


def _release_document_type(synthetic_path: str) -> str | None:
    """The ``document_type`` in the ``config.json`` beside a release's synthetic.jsonl, if it records one."""
    config = Path(synthetic_path).with_name("config.json")
    try:
        value = json.loads(config.read_text()).get("document_type")
    except (OSError, ValueError, AttributeError):
        return None
    return value if isinstance(value, str) and value.strip() else None


#: Rows of the text report: (label, key of the text measures, format).
_MEASURE_ROWS = (
    ("assistant talk (public pattern list)", "assistant_talk", "{:.1%}"),
    ("texts under 3 words", "short_texts", "{:.1%}"),
    ("looping texts (a word pair 3+ times)", "looping_texts", "{:.1%}"),
    ("texts repeating an earlier text", "duplicate_texts", "{:.1%}"),
    ("distinct-1", "distinct_1", "{:.3f}"),
    ("distinct-2", "distinct_2", "{:.3f}"),
    ("words per text, mean", "words_mean", "{:.1f}"),
    ("words per text, median", "words_median", "{:.1f}"),
    ("length vs test, KS statistic", "length_ks", "{:.3f}"),
    ("length vs test, Wasserstein (words)", "length_wasserstein", "{:.2f}"),
    ("k-NN precision vs test texts", "knn_precision", "{:.3f}"),
    ("k-NN recall vs test texts", "knn_recall", "{:.3f}"),
    ("AUROC real-vs-synthetic (0.5: alike)", "auroc_real_vs_synthetic", "{:.3f}"),
)


def format_report(result: dict) -> str:
    """The human-readable report of ``dpkit evaluate`` (the same numbers as ``--json``)."""
    def interval(metric):
        return "{estimate:.3f} [{low:.3f}, {high:.3f}]".format(**metric)

    real = result.get("real")
    lines = [f"synthetic texts: {result['n_synthetic']}, real test texts: {result['n_test']}"
             + (f", real training texts (--real): {real['n_real']}" if real else ""),
             "", "classifier (logistic regression on MiniLM embeddings), scored on the real test texts, 95% "
             "bootstrap intervals:", f"  {'':<40} {'trained on synthetic':<24}" + ("trained on real" if real else "")]
    for name, key in (("balanced accuracy", "balanced_accuracy"), ("macro-F1", "macro_f1"), ("accuracy", "accuracy")):
        lines.append(f"  {name:<40} {interval(result[key]):<24}" + (interval(real[key]) if real else ""))
    lines.append(f"  {'majority class (balanced accuracy)':<40} {result['majority_baseline']:.3f}")
    measures, reference = result["text_measures"], (real or {}).get("text_measures")
    lines += ["", f"text measures against the real test texts (k-NN k = {measures['knn_k']}"
              + (f"; document type: {result['document_type']}" if result.get("document_type") else "") + "):",
              f"  {'':<40} {'synthetic':<24}" + ("real (--real)" if reference else "")]
    for name, key, fmt in _MEASURE_ROWS:
        value = fmt.format(measures[key])
        lines.append(f"  {name:<40} {value:<24}" + (fmt.format(reference[key]) if reference else ""))
    lines.append(f"  {'test texts: distinct-1 / distinct-2':<40} "
                 f"{measures['real_distinct_1']:.3f} / {measures['real_distinct_2']:.3f}")
    lines.append(f"  {'test texts: words per text, mean':<40} {measures['real_words_mean']:.1f}")
    ref = result.get("reference")
    if ref:
        lines += ["", f"reference that reads no record (label-only: the bundled model told the document type "
                      f"'{ref['document_type']}' and the label, {ref['per_class']} texts per label, "
                      f"{len(ref['draws'])} draws):",
                  f"  {'balanced accuracy (mean, t interval)':<40} {interval(ref['balanced_accuracy'])}",
                  f"  {'gain of the release over it':<40} {ref['gain']['estimate']:+.3f} [{ref['gain']['low']:+.3f}, "
                  f"{ref['gain']['high']:+.3f}]" + ("  (above 0)" if ref["gain"]["low"] > 0 else
                                                    "  (not above 0: the label alone explains the score)")]
    return "\n".join(lines)


#: What ``dpkit evaluate`` prints, as its --help states it (docs/evaluate.md says the same at length).
OUTPUT_FORMATS = (
    "output: without --json, a text report for reading (its layout may change between versions); with --json, "
    "one JSON object, the stable format for scripts: accuracy, balanced_accuracy and macro_f1 (each "
    "{estimate, low, high}, 95% bootstrap), majority_baseline, majority_accuracy, n_synthetic, n_test, "
    "document_type, text_measures (assistant_talk, short_texts, looping_texts, duplicate_texts, distinct_1, "
    "distinct_2, knn_precision, knn_recall, auroc_real_vs_synthetic, ...), and with --real the same under "
    "\"real\" (n_real in place of n_synthetic and n_test). New keys may be added; these keep their names and meaning.")


def register(subparsers) -> None:
    p = subparsers.add_parser("evaluate", help="train the project's classifier on synthetic texts, score on real "
                              "test texts, and measure the texts against them (text report or --json)",
                              epilog=OUTPUT_FORMATS)
    p.add_argument("--synthetic", required=True, help="synthetic.jsonl of a labelled release (inside its dpkit "
                   "synth run folder, the folder is verified first: an edited release is refused)")
    p.add_argument("--test", required=True, help="real test data: CSV, TSV or JSON Lines")
    p.add_argument("--text-column", required=True, help="text column of --test (and --real)")
    p.add_argument("--label-column", required=True, help="label column of --test (and --real)")
    p.add_argument("--real", default=None, help="real training data: the same classifier trained on it, for "
                   "reference")
    p.add_argument("--seed", type=int, default=0, help="seed of the bootstrap intervals and of the "
                   "real-vs-synthetic cross-validation (default 0)")
    p.add_argument("--document-type", default=None, help="the document type the release was asked for (counted "
                   "as an instruction echo when a text names it); default: the release's config.json, if it "
                   "records one")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of the text report (the "
                   "stable format, for scripts)")
    p.add_argument("--reference", choices=("label-only",), default=None, help="also score a reference that reads "
                   "no record: the bundled model told only the document type and each label (its description "
                   "when the release's config.json has one), with the release's label set and texts per label, "
                   "scored as the release; reports its balanced accuracy and the release's gain over it (JSON key "
                   "\"reference\"). Generates the release's size once per draw on the local model (minutes)")
    p.add_argument("--reference-draws", type=int, default=None, help="with --reference: independent draws of the "
                   f"reference (seeds 0, 1, ...), for the t interval of its score and of the gain (default "
                   f"{REFERENCE_DRAWS}); refused without --reference")
    p.set_defaults(func=_evaluate_command)
