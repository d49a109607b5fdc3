"""The :class:`Dataset` record and the seeded, class-stratified split every loader uses.

Guarantees of :func:`split_dataset` (and so of every loader):

* deterministic: the same records, caps and ``seed`` give the same split, in the same order;
* stratified: each class is split on its own, so every kept class has at least one
  training and one test example and the test share of each class is
  ``round(test_fraction * n_class)`` (clamped to ``[1, n_class - 1]``);
* disjoint: no text occurs in both the training and the test part (texts are deduplicated
  before splitting);
* nested caps: for a fixed ``seed``, raising ``max_per_class`` only adds examples (each class
  is shuffled once by a generator seeded with ``(seed, class)``; a cap keeps a prefix).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Iterable, Sequence

import numpy as np

from ..validate import ParameterError, check_in_range, check_int

_SPACE = re.compile(r"\s+")


@dataclass(frozen=True)
class Dataset:
    """A labelled text classification data set with a fixed train/test split.

    ``train_texts``/``test_texts`` are tuples of str; ``train_labels``/``test_labels`` are
    read-only int64 arrays of indices into ``label_names``.
    """

    name: str
    train_texts: tuple[str, ...]
    train_labels: np.ndarray
    test_texts: tuple[str, ...]
    test_labels: np.ndarray
    label_names: tuple[str, ...]

    def __post_init__(self) -> None:
        for part in ("train", "test"):
            texts = getattr(self, f"{part}_texts")
            labels = np.array(getattr(self, f"{part}_labels"), dtype=np.int64)
            labels.setflags(write=False)
            object.__setattr__(self, f"{part}_texts", tuple(texts))
            object.__setattr__(self, f"{part}_labels", labels)
            if labels.ndim != 1 or len(labels) != len(texts):
                raise ParameterError(f"{part}_labels", labels, "must be a 1-d sequence as long "
                                     f"as {part}_texts ({len(texts)})")
            if len(labels) and (labels.min() < 0 or labels.max() >= len(self.label_names)):
                raise ParameterError(f"{part}_labels", labels, "must be indices into "
                                     f"label_names (0..{len(self.label_names) - 1})")
        object.__setattr__(self, "label_names", tuple(self.label_names))

    @property
    def n_classes(self) -> int:
        return len(self.label_names)

    def class_counts(self, part: str = "train") -> dict[str, int]:
        """Examples per class name in ``part`` ("train", "test" or "all"), in label order."""
        if part not in ("train", "test", "all"):
            raise ParameterError("part", part, "must be one of ['train', 'test', 'all']")
        labels = {"train": self.train_labels, "test": self.test_labels,
                  "all": np.concatenate([self.train_labels, self.test_labels])}[part]
        counts = np.bincount(labels, minlength=self.n_classes)
        return {name: int(c) for name, c in zip(self.label_names, counts)}

    def texts_of(self, label: int | str, part: str = "train") -> list[str]:
        """The texts of one class (by index or name) in ``part`` ("train" or "test")."""
        if part not in ("train", "test"):
            raise ParameterError("part", part, "must be one of ['train', 'test']")
        if isinstance(label, str):
            if label not in self.label_names:
                raise ParameterError("label", label, f"must be one of {list(self.label_names)}")
            label = self.label_names.index(label)
        label = check_int("label", label, minimum=0, maximum=self.n_classes - 1)
        texts, labels = getattr(self, f"{part}_texts"), getattr(self, f"{part}_labels")
        return [t for t, y in zip(texts, labels) if y == label]

    def describe(self) -> str:
        """A small table: per class, the train and test counts."""
        train, test = self.class_counts("train"), self.class_counts("test")
        width = max([len(n) for n in self.label_names] + [5])
        rows = [f"{self.name}: {len(self.train_texts)} train, {len(self.test_texts)} test, "
                f"{self.n_classes} classes",
                f"  {'class':<{width}}  {'train':>6}  {'test':>6}"]
        rows += [f"  {n:<{width}}  {train[n]:>6}  {test[n]:>6}" for n in self.label_names]
        return "\n".join(rows)

    def __repr__(self) -> str:
        return (f"Dataset(name={self.name!r}, train={len(self.train_texts)}, "
                f"test={len(self.test_texts)}, label_names={self.label_names!r})")


def clean_text(text: str) -> str:
    """Strip and collapse every run of whitespace (newlines included) to one space."""
    return _SPACE.sub(" ", str(text)).strip()


def clean_records(records: Iterable[tuple[str, object]]) -> list[tuple[str, object]]:
    """Cleaned ``(text, label)`` pairs, empty texts dropped, first occurrence of a text kept."""
    seen: set[str] = set()
    out = []
    for text, label in records:
        text = clean_text(text)
        if text and text not in seen:
            seen.add(text)
            out.append((text, label))
    return out


def check_split_args(test_fraction, seed, max_per_class, max_documents) -> tuple:
    """Validate the arguments shared by every loader; return them normalised."""
    test_fraction = check_in_range("test_fraction", test_fraction, 0.0, 1.0,
                                   low_open=True, high_open=True)
    seed = check_int("seed", seed, minimum=0)
    if max_per_class is not None:
        max_per_class = check_int("max_per_class", max_per_class, minimum=2)
    if max_documents is not None:
        max_documents = check_int("max_documents", max_documents, minimum=2)
    return test_fraction, seed, max_per_class, max_documents


def class_counts(records) -> dict[str, int]:
    """Records per class name of ``(text, class name)`` pairs, largest class first (ties by name)."""
    counts = Counter(label for _, label in records)
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def largest_classes(counts: Counter, n_classes: int | None, *, available_note: str = "") -> list:
    """The ``n_classes`` labels with most examples (ties by name), in that order."""
    ranked = sorted(counts, key=lambda k: (-counts[k], str(k)))
    if n_classes is None:
        return ranked
    n_classes = check_int("n_classes", n_classes, minimum=1)
    if n_classes > len(ranked):
        raise ParameterError("n_classes", n_classes,
                             f"must be between 1 and {len(ranked)}, the number of classes "
                             f"available{available_note}")
    return ranked[:n_classes]


def _allocate(sizes: Sequence[int], total: int) -> list[int]:
    """Split ``total`` across classes in proportion to ``sizes`` (largest remainder), each >= 2."""
    sizes = np.asarray(sizes, dtype=float)
    quotas = total * sizes / sizes.sum()
    alloc = np.floor(quotas).astype(int)
    order = np.argsort(-(quotas - alloc), kind="stable")
    alloc[order[: total - alloc.sum()]] += 1
    alloc = np.minimum(np.maximum(alloc, 2), sizes.astype(int))
    # Fix any overshoot created by the minimum of two by trimming the largest classes.
    while alloc.sum() > total and (alloc > 2).any():
        alloc[int(np.argmax(alloc))] -= 1
    return alloc.tolist()


def split_dataset(name: str, texts: Sequence[str], labels: Sequence[int],
                  label_names: Sequence[str], *, test_fraction: float, seed: int,
                  max_per_class: int | None = None,
                  max_documents: int | None = None) -> Dataset:
    """Seeded class-stratified split of cleaned, deduplicated records (see module docstring).

    ``max_per_class`` caps each class (train + test) first; ``max_documents`` then caps the
    total, allocated to classes in proportion to their sizes (each class keeps at least two).
    """
    labels = np.asarray(labels, dtype=np.int64)
    n_classes = len(label_names)
    if max_documents is not None and max_documents < 2 * n_classes:
        raise ParameterError("max_documents", max_documents,
                             f"must be >= {2 * n_classes} (two per class for {n_classes} classes)"
                             " or None")
    members = []
    for k in range(n_classes):
        idx = np.flatnonzero(labels == k)
        if len(idx) < 2:
            raise ParameterError("label_names", label_names[k],
                                 f"class has {len(idx)} example(s); each class needs at least 2")
        perm = np.random.default_rng([seed, k]).permutation(len(idx))
        idx = idx[perm]
        members.append(idx if max_per_class is None else idx[:max_per_class])
    if max_documents is not None and sum(map(len, members)) > max_documents:
        keep = _allocate([len(m) for m in members], max_documents)
        members = [m[:n] for m, n in zip(members, keep)]
    train_idx, test_idx = [], []
    for idx in members:
        n_test = min(max(int(round(test_fraction * len(idx))), 1), len(idx) - 1)
        test_idx.append(idx[:n_test])
        train_idx.append(idx[n_test:])
    mix = np.random.default_rng([seed, n_classes, 7919])
    train_idx = mix.permutation(np.concatenate(train_idx))
    test_idx = mix.permutation(np.concatenate(test_idx))
    return Dataset(name=name,
                   train_texts=tuple(texts[i] for i in train_idx), train_labels=labels[train_idx],
                   test_texts=tuple(texts[i] for i in test_idx), test_labels=labels[test_idx],
                   label_names=tuple(label_names))


def split_largest_named_classes(name: str, records: Sequence[tuple[str, str]], n_classes: int | None, *,
                                available_note: str, test_fraction: float, seed: int,
                                max_per_class: int | None, max_documents: int | None) -> Dataset:
    """Keep the ``n_classes`` largest classes of ``(text, class name)`` records and split them.

    Labels are ordered by class size, largest first; the split is seeded and stratified.
    """
    names = largest_classes(Counter(label for _, label in records), n_classes, available_note=available_note)
    index = {label: k for k, label in enumerate(names)}
    kept = [(t, index[y]) for t, y in records if y in index]
    return split_dataset(name, [t for t, _ in kept], [y for _, y in kept], names,
                         test_fraction=test_fraction, seed=seed,
                         max_per_class=max_per_class, max_documents=max_documents)
