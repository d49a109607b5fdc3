"""A public triple bank of the data's kind, written by the model from public words only.

DP-ST releases PUBLIC triples; with the packaged news articles as their source every
release reads as rewritten news, whatever the data. This module gives DP-ST a public
corpus of the data's own kind without reading any record: the model is asked, for each
label of the PUBLIC label set, ``Write a {document type} with Label: {label}.`` (private
prediction's public row of :func:`dpkit.privpred.prompts.document_template`, the prompt of the
label-only reference of :mod:`dpkit.experiments.label_only`; a test keeps the two equal), in the
data's voice (:func:`dpkit.models.voice.document_voice`). The texts then go through the news corpus's own
extraction, deduplication, embedding and clustering (:func:`dpkit.dpst.corpus.load_public_corpus`).

Guarantee: every prompt is built from the public document type and the public label texts
(names, or the data owner's public descriptions) and nothing else; no record is an argument of
any function here. The bank is therefore public: building it costs no privacy budget, and its
triples may be released verbatim. Its randomness is the caller's seed node (round ``i`` samples
with :func:`dpkit.seeds.int_seed` of child ``i``): a reproducible run rebuilds the same bank, a
release (OS entropy) builds its own. A run stores the texts once, before its private part
(:func:`dpkit.methods.dpst.synthesize`: a checkpoint without any ledger entry), so a resumed run
reads the bank it released with back instead of writing another.
"""

from __future__ import annotations

import hashlib
import json
from typing import Sequence

import numpy as np

from dpkit.models.voice import document_voice, strip_echo
from dpkit.privacy.marks import Public
from dpkit.runs.generate import generate_texts
from dpkit.runtime import release_mode
from dpkit.seeds import int_seed
from dpkit.validate import ParameterError, check_int

#: Sampling temperature of the bank's texts: the label-only reference's and DP-KPS's generation temperature.
BANK_TEMPERATURE = 0.7
#: Length of each bank text, in new tokens: the label-only reference's.
BANK_MAX_NEW_TOKENS = 48


def public_label_text(name: str) -> str:
    """How a public prompt names a label (``good_health`` -> ``Good health``), as private prediction's prompts do."""
    return str(name).replace("_", " ").capitalize()


#: The public rows, as data (private prediction's public rows; ``dpkit --help`` loads this module through the
#: method registry, and the private prediction package loads PyTorch, so they are not imported from it).
BANK_PROMPT = "Write a {document_type} with Label: {label}."
UNLABELLED_BANK_PROMPT = "Write a {document_type}."


def _document_type(document_type: str) -> str:
    if not isinstance(document_type, str) or not document_type.strip() or "{" in document_type \
            or "}" in document_type:
        raise ParameterError("document_type", document_type, "must be a non-empty description without braces")
    return " ".join(document_type.split())


def bank_prompts(document_type: str, label_texts: Sequence[str] | None) -> list[Public]:
    """One public prompt per label (``label_texts``: names or public descriptions), or one unlabelled prompt
    (``Write a {document type}.``) when ``label_texts`` is None. Built from these public arguments only."""
    if label_texts is None:
        return [Public(UNLABELLED_BANK_PROMPT.format(document_type=_document_type(document_type)))]
    if isinstance(label_texts, str) or not label_texts or not all(isinstance(t, str) and t.strip()
                                                                   for t in label_texts):
        raise ParameterError("label_texts", label_texts, "must be None or a non-empty list of public label texts")
    doc = _document_type(document_type)
    return [Public(BANK_PROMPT.format(document_type=doc, label=public_label_text(t))) for t in label_texts]


def generated_bank_texts(backend, document_type: str, label_texts: Sequence[str] | None, per_label: int,
                         seed_node: np.random.SeedSequence, *, release: bool = False) -> list[str]:
    """``per_label`` public texts per label (label-major order) written by ``backend`` from :func:`bank_prompts`.

    Round ``i`` asks every prompt once with seed ``int_seed(seed_node, i)`` (one seed per round: the
    same seed for one prompt would give the same text). Each text is cut at the voice's stop
    sequences and loses a leading echo of the instruction; empty texts are dropped. ``release``: a release's
    bank (OS entropy), whose seeds reach no response cache (:func:`dpkit.runtime.release_mode`).
    """
    per_label = check_int("per_label", per_label, minimum=1)
    if not isinstance(seed_node, np.random.SeedSequence):
        raise ParameterError("seed_node", seed_node, "must be a numpy.random.SeedSequence (a node of the run's seeds)")
    prompts = bank_prompts(document_type, label_texts)
    names = [None] if label_texts is None else [public_label_text(t) for t in label_texts]
    doc = _document_type(document_type)
    voice = document_voice(document_type, min_new_tokens=8)
    by_label: list[list[str]] = [[] for _ in prompts]
    for i in range(per_label):
        keyed = {f"public-bank-{i}-{k}": prompt for k, prompt in enumerate(prompts)}
        with release_mode(release):
            texts = generate_texts(None, backend, keyed, batch_size=len(keyed), desc=None,
                                   max_new_tokens=BANK_MAX_NEW_TOKENS, temperature=BANK_TEMPERATURE,
                                   seed=int_seed(seed_node, i), voice=voice)
        for k, key in enumerate(keyed):
            by_label[k].append(strip_echo(str(texts[key]), doc, [names[k]] if names[k] else []).strip())
    return [text for texts in by_label for text in texts if text]


def bank_digest(texts: Sequence[str]) -> str:
    """SHA-256 (first 16 hex digits) of the bank's texts, as the privacy report names them."""
    return hashlib.sha256(json.dumps(list(texts)).encode()).hexdigest()[:16]


def generated_bank_note(document_type: str, label_texts: Sequence[str] | None, per_label: int, texts: Sequence[str],
                        model: str) -> str:
    """The privacy report's statement of what a generated bank was built from (public inputs only)."""
    labels = "no label (unlabelled input)" if label_texts is None else \
        "the public label set " + ", ".join(repr(public_label_text(t)) for t in label_texts)
    return (f"public triple bank: {len(texts)} texts ({per_label} per label) written by {model} from the public "
            f"document type {document_type!r} and {labels} only, at temperature {BANK_TEMPERATURE:g} with seeds "
            f"from the run's seed tree (SHA-256 of the texts {bank_digest(texts)}); no private record was read to "
            "build it, so it costs no budget and its triples are public")
