"""Glue for the end-to-end chapter: synthetic corpora from a fitted DP-KPS model, and baselines.

Everything here is post-processing of released objects (sequences, prompts,
generated texts) or uses no private data at all (the "only LLM" baseline).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from dpkit.kps.pipeline import KPSModel
from dpkit.kps.prompts import class_prompt, generate_texts, kps_prompt
from dpkit.privacy.marks import Public
from dpkit.validate import ParameterError, check_int, check_rng


class MemoEmbedder:
    """Wraps an embedder and remembers every text's vector (public texts and released texts only)."""

    def __init__(self, embedder):
        self.embedder = embedder
        self._memo: dict[str, np.ndarray] = {}

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        texts = list(texts)
        missing = list(dict.fromkeys(t for t in texts if t not in self._memo))
        if missing:
            for text, row in zip(missing, self.embedder.encode(missing)):
                self._memo[text] = np.asarray(row)
        if not texts:
            return np.zeros((0, getattr(self.embedder, "dim", 0)), dtype=np.float32)
        return np.stack([self._memo[t] for t in texts])


def keyphrase_corpus(model: KPSModel, n_per_class: int, rng: np.random.Generator
                     ) -> tuple[list[list[str]], np.ndarray]:
    """``n_per_class`` keyphrase sequences per class and their labels (the "no LLM" training set)."""
    check_rng("rng", rng)
    n_per_class = check_int("n_per_class", n_per_class, minimum=1)
    sequences, labels = [], []
    for label in range(len(model.label_names)):
        sequences += model.sequences(label, n_per_class, rng)
        labels += [label] * n_per_class
    return sequences, np.asarray(labels)


def kps_corpus(model: KPSModel, backend, document_type: Public, n_per_class: int, rng: np.random.Generator, *,
               max_new_tokens: int = 48, temperature: float = 0.7, seed: int = 0,
               examples: Sequence[Public] | None = None) -> dict:
    """Synthetic labelled texts: one privatized prompt per sampled sequence, one completion each.

    ``document_type`` and ``examples`` must be :class:`~dpkit.privacy.marks.Public`
    text (the caller's statement that they were never private); plain strings are refused.
    """
    sequences, labels = keyphrase_corpus(model, n_per_class, rng)
    prompts = [kps_prompt(seq, document_type, examples=examples) for seq in sequences]
    texts = generate_texts(backend, prompts, max_new_tokens=max_new_tokens, temperature=temperature, seed=seed)
    return {"texts": texts, "labels": labels, "sequences": sequences, "prompts": prompts}


def only_llm_corpus(backend, document_type: Public, class_descriptions: Sequence[Public], n_per_class: int, *,
                    max_new_tokens: int = 48, temperature: float = 0.7, seed: int = 0) -> dict:
    """The "only LLM" baseline: the class is named in the prompt, no private data is used.

    ``document_type`` and ``class_descriptions`` must be Public text written by the caller.

    Each class prompt is sent ``n_per_class`` times with seeds ``seed, seed+1, ...``,
    so the diversity of the texts comes only from sampling.
    """
    if isinstance(class_descriptions, str) or len(class_descriptions) == 0:
        raise ParameterError("class_descriptions", class_descriptions, "must list one description per class")
    n_per_class = check_int("n_per_class", n_per_class, minimum=1)
    prompts = [class_prompt(document_type, description) for description in class_descriptions]
    texts, labels = [], []
    for k in range(n_per_class):  # one batch per seed: identical prompts never share a batch
        texts += generate_texts(backend, prompts, max_new_tokens=max_new_tokens, temperature=temperature,
                                seed=seed + k)
        labels += list(range(len(prompts)))
    return {"texts": texts, "labels": np.asarray(labels)}


def real_subset(texts: Sequence[str], labels, n_per_class: int, rng: np.random.Generator) -> dict:
    """``n_per_class`` real training documents per class (the non-private reference of equal size)."""
    labels = np.asarray(labels)
    chosen = []
    for label in np.unique(labels):
        idx = np.flatnonzero(labels == label)
        chosen += rng.choice(idx, size=min(n_per_class, len(idx)), replace=False).tolist()
    return {"texts": [texts[i] for i in chosen], "labels": labels[chosen]}


def split_client(texts: Sequence[str], labels, rng: np.random.Generator, fraction: float = 0.5) -> tuple[dict, dict]:
    """Split the held-out data into an unlabeled client set (for CORAL) and a disjoint test set."""
    labels = np.asarray(labels)
    order = rng.permutation(len(labels))
    cut = int(round(fraction * len(labels)))
    client, test = order[:cut], order[cut:]
    return ({"texts": [texts[i] for i in client]},
            {"texts": [texts[i] for i in test], "labels": labels[test]})



def record_release(chapter_ledger, model: KPSModel) -> None:
    """Charge every spend of ``model``'s release again on ``chapter_ledger``.

    A chapter that fits several models on the same private data keeps one
    ledger for all of them: each model's own ledger states that release's
    guarantee, the chapter ledger the guarantee of all releases together.
    """
    chapter_ledger.replay(model.ledger.entries)
