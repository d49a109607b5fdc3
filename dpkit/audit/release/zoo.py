"""Whole-pipeline generators for release audits: the three methods as black boxes, and broken variants.

Every entry is a ``synthesize(records) -> [{"text", "label"}, ...]`` callable
that :func:`dpkit.audit.release.audit.audit_release` can audit. The broken variants
claim the epsilon they are built for and leak; the audit must refute them.

============================  =====================================================
variant                       what is wrong
============================  =====================================================
copy_fraction                 a generator that copies 10% of its input records
kps_raw_vocabulary            DP-KPS whose vocabulary is the input's own words,
                              ranked by raw counts (no noise, no public list)
dpst_raw_fallback             DP-ST that releases a document's raw text when no
                              triple is found in it
pp_prompts_in_release         private prediction whose texts keep their batch's
                              private prompts (a decoded sequence sliced from its
                              start instead of after the prompt)
pp_unclipped_logits           private prediction averaging its rows' logits
                              unclipped (refuted with repeated-word canaries
                              at a small clip; see audit.release.pp_unclipped)
============================  =====================================================

:class:`EchoBackend` returns each prompt as its completion. The LLM step of
DP-KPS and DP-ST is post-processing, so the guarantee holds for any backend;
echoing the prompt is the most revealing post-processing there is, and the
cheapest: the audits of the private parts use it (``backend=None`` picks it).
"""

from __future__ import annotations

from collections import Counter
from contextlib import contextmanager
from dataclasses import replace

import numpy as np

import dpkit.kps.pipeline as pipeline
from dpkit.backends.base import Backend
from dpkit.dpst.privatize import DPST
from dpkit.kps import vocabulary as vocab
from dpkit.methods.registry import get_method  # a method module loads on first use (PyTorch)
from dpkit.validate import ParameterError


class EchoBackend(Backend):
    """A local backend whose completion is the prompt's last user message (no model, no randomness).

    The voice's frame (a system message, the assistant's turn opened with a quotation mark) is
    skipped, so that the completion is the prompt the method wrote.
    """

    name, remote = "echo", False

    def __init__(self):
        super().__init__("echo")

    def _generate(self, chats, params):
        return [str(next(m for m in reversed(chat) if m["role"] == "user")["content"]) for chat in chats]


def _records_out(records, texts_and_labels) -> list[dict]:
    out = []
    for text, label in texts_and_labels:
        record = {"text": text}
        if records.labelled:
            record["label"] = records.label_set[int(label)]
        out.append(record)
    return out


def copy_fraction(fraction: float = 0.1, seed=None):
    """A generator that returns one record per input record: a copy for ``fraction`` of them, filler otherwise."""
    def synthesize(records):
        rng = np.random.default_rng(seed)
        n = len(records)
        copied = set(rng.choice(n, size=int(round(fraction * n)), replace=False).tolist())
        labels = records.labels if records.labelled else [0] * n
        return _records_out(records, [(records.texts[i] if i in copied else "A short note about an order.",
                                       labels[i]) for i in range(n)])
    synthesize.__name__ = f"copy_{fraction:g}"
    return synthesize


def method(name: str, epsilon: float, *, smoke: bool = True, backend=None, seed=None, **changes):
    """dpkit method ``name`` (a name of :mod:`dpkit.methods.registry`) as a black box; ``backend=None``:
    :class:`EchoBackend` for a method that may run on an API backend (its model sees only privatized or public
    text), else the method's own local model (private prediction)."""
    module = get_method(name)
    config = _config(module, epsilon, smoke, changes)
    if backend is None and set(module.backends) - {"local"}:
        backend = EchoBackend()

    def synthesize(records):
        sequence = np.random.SeedSequence(seed)
        return list(module.synthesize(records, config, None, backend, sequence).records)
    synthesize.__name__ = name
    return synthesize


def _config(module, epsilon: float, smoke: bool, changes: dict):
    """The method's (smoke) configuration at ``epsilon`` with ``changes``; validated as a whole, so a
    smoke preset whose own defaults do not fit ``epsilon`` (pp at epsilon 1) takes the changes that do."""
    if not smoke:
        return module.Config(epsilon=epsilon, **changes)
    try:
        return module.Config.smoke(epsilon, **changes)
    except ParameterError:
        return replace(module.Config.smoke(8.0), epsilon=epsilon, **changes)


def _raw_vocabulary(texts, vocabulary, S, N, eps_voc, rng, **options):
    """The bug: the input's own words ranked by their raw document counts, no noise."""
    contract = vocab.private_vocabulary(texts, vocabulary, S, min(N, len(vocabulary)), eps_voc, rng).contract
    counts = Counter(w for t in texts for w in set(vocab.tokenize(t)) if w.isalpha() and len(w) > 3)
    ranked = sorted(counts, key=lambda w: (-counts[w], w))[:N]
    return vocab.PrivateVocabulary(ranked, np.asarray([counts[w] for w in ranked], float), contract, S)


@contextmanager
def _patched_vocabulary():
    real = pipeline.private_vocabulary
    pipeline.private_vocabulary = _raw_vocabulary
    try:
        yield
    finally:
        pipeline.private_vocabulary = real


def kps_raw_vocabulary(epsilon: float, *, backend=None, seed=None, **changes):
    """DP-KPS with a vocabulary of raw counts of the input's own words (claims ``epsilon``)."""
    changes = {"N": 4000, "n_per_class": 40, **changes}
    inner = method("kps", epsilon, backend=backend, seed=seed, **changes)

    def synthesize(records):
        with _patched_vocabulary():
            return inner(records)
    synthesize.__name__ = "kps_raw_vocabulary"
    return synthesize


@contextmanager
def _capturing_prepare(store: list):
    """Record what DP-ST's (deterministic) triple extraction found, so the variant extracts only once."""
    real = DPST.prepare

    def prepare(self, texts):
        prepared = real(self, texts)
        store.append(prepared)
        return prepared

    DPST.prepare = prepare
    try:
        yield
    finally:
        DPST.prepare = real


def dpst_raw_fallback(epsilon: float, *, backend=None, seed=None, **changes):
    """DP-ST that releases the raw text of a document in which no triple is found (claims ``epsilon``)."""
    changes = {"reconstruct": False, **changes}
    inner = method("dpst", epsilon, backend=backend, seed=seed, **changes)

    def synthesize(records):
        store = []
        with _capturing_prepare(store):
            out = inner(records)
        empty = [not triples for triples in store[-1].triples]
        return [replace_text(r, records.texts[i]) if empty[i] else r for i, r in enumerate(out)]
    synthesize.__name__ = "dpst_raw_fallback"
    return synthesize


def pp_prompts_in_release(epsilon: float, *, seed=None, **changes):
    """Private prediction whose released text keeps the batch's private prompts (claims ``epsilon``).

    The bug of slicing a decoded sequence from its start instead of after the
    prompt: each batch's text comes out with the batch's private records in
    front. The variant runs one batch per label (``n_batches = 1``, the smoke
    preset's), so a record's batch is its label's.
    """
    changes = {"n_batches": 1, **changes}
    inner = method("pp", epsilon, seed=seed, **changes)

    def synthesize(records):
        out = inner(records)
        labels = records.labels if records.labelled else [0] * len(records)
        by_label = {}
        for text, label in zip(records.texts, labels):
            by_label.setdefault(records.label_set[label] if records.labelled else None, []).append(text)
        return [replace_text(r, "\n".join(by_label.get(r.get("label"), []) + [r["text"]])) for r in out]
    synthesize.__name__ = "pp_prompts_in_release"
    return synthesize


UNCLIPPED = 1e3   # a clip no logit gap of a language model reaches: clip-and-recentre is then a shift


@contextmanager
def _unclipped(config_class):
    """The bug: every batch decoded with its rows' logits unclipped (the claim keeps the config's clip)."""
    real = config_class.settings      # inherited: pp's Config does not define its own

    def settings(self, r=None):
        return replace(real(self, r), clip=UNCLIPPED)

    config_class.settings = settings
    try:
        yield
    finally:
        del config_class.settings


def pp_unclipped_logits(epsilon: float, *, seed=None, **changes):
    """Private prediction whose rows' next-token logits are averaged unclipped (claims ``epsilon``).

    The accounting is the configuration's (clip ``c``); the decoding averages the raw logits over the
    expected batch size, so one prompt moves the average by its own logit range, not ``c / s``.
    """
    inner = method("pp", epsilon, seed=seed, **changes)
    config_class = get_method("pp").Config

    def synthesize(records):
        with _unclipped(config_class):
            return inner(records)
    synthesize.__name__ = "pp_unclipped_logits"
    return synthesize


def replace_text(record: dict, text: str) -> dict:
    return dict(record, text=text)


PUBLIC_FILLER = ("Thanks for the quick reply about my order.", "The delivery came on time and all was well.",
                 "I have a question about my last invoice.", "The product works as described.",
                 "Please update the address on my account.", "I would like to change my payment method.")


def echo_words(share: float = 0.03, words: int = 3, seed=None):
    """A generator that echoes ``words`` consecutive words of a ``share`` of its records (a subtle leak).

    One output per input record: a public filler sentence; for each record picked (each independently with
    probability ``share``) the sentence ends with a run of ``words`` consecutive words of that record, from a
    random position. It claims whatever it is audited at and is not DP for any epsilon.
    """
    def synthesize(records):
        rng = np.random.default_rng(seed)
        labels = records.labels if records.labelled else [0] * len(records)
        out = []
        for text, label in zip(records.texts, labels):
            filler = PUBLIC_FILLER[int(rng.integers(len(PUBLIC_FILLER)))]
            if rng.random() < share:
                tokens = text.rstrip(".").split()
                start = int(rng.integers(0, max(len(tokens) - words, 0) + 1))
                filler = filler.rstrip(".") + " " + " ".join(tokens[start:start + words]) + "."
            out.append((filler, label))
        return _records_out(records, out)
    synthesize.__name__ = f"echo_{words}_words_{share:g}"
    return synthesize


def input_independent(n: int = 200, seed: int = 0):
    """A generator whose output ignores its input: ``n`` public filler sentences (0-DP, never refutable)."""
    def synthesize(records):
        rng = np.random.default_rng(seed)
        label = records.label_set[0] if records.labelled else None
        return [{"text": PUBLIC_FILLER[int(rng.integers(len(PUBLIC_FILLER)))], **({"label": label} if label else {})}
                for _ in range(n)]
    synthesize.__name__ = "input_independent"
    return synthesize


VARIANTS = {"copy_fraction": copy_fraction, "kps_raw_vocabulary": kps_raw_vocabulary,
            "dpst_raw_fallback": dpst_raw_fallback, "pp_prompts_in_release": pp_prompts_in_release,
            "pp_unclipped_logits": pp_unclipped_logits}
