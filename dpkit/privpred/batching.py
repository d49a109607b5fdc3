"""Hash batching: assign each sensitive prompt to a batch by a hash of the prompt alone.

Assumption 1 of {cite}`amin2024private` asks that a prompt's batch depend only
on the prompt itself, never on the other prompts; then adding or removing one
prompt changes exactly one batch, and the batches compose in parallel (the
whole dataset costs what one batch costs). We use the privacy core's
:func:`~dpkit.privacy.hash_batch` (keyed BLAKE2b, stable across processes):

* without labels: batch ``= H(key, text) mod n_batches``;
* with labels: the label picks a group (one group per label, so a batch holds
  one label, as in the paper's experiments) and ``H(key, text) mod
  n_batches_per_label`` picks the batch inside it.

The batch LAYOUT is public: ``n_batches`` (per label) and the label set are
parameters, fixed from public information (e.g. a declared public bound on the
number of records over the expected batch size ``s``; :func:`n_batches_for`
does that arithmetic), never from the private data. :func:`assign_batches`
returns every batch of the layout, EMPTY ONES INCLUDED: Lemma 2 (parallel
composition) needs the mechanism applied to each of the batches, and which
batches are empty is private. Actual batch sizes vary around ``s``; the
guarantee does not depend on them, because the decoder divides by ``s`` and
never by the actual size (an empty batch is decoded like any other).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from dpkit.privacy import hash_batch
from dpkit.privacy.private_prediction import check_batch_size
from dpkit.validate import ParameterError, check_int


@dataclass(frozen=True)
class Batch:
    """One batch: its id, its (public) label or None, its number within the label, its prompts."""

    batch_id: str
    label: int | None
    number: int
    indices: tuple[int, ...] = field(default_factory=tuple)

    def __len__(self) -> int:
        return len(self.indices)


def n_batches_for(public_size: int, expected_batch_size: float) -> int:
    """``max(1, round(public_size / s))``: the batch count for a PUBLIC size estimate."""
    public_size = check_int("public_size", public_size, minimum=1)
    s = check_batch_size(expected_batch_size, "expected_batch_size")
    return max(1, round(public_size / s))


def batch_index(text: str, n_batches: int, key: str = "") -> int:
    """The batch of one prompt: ``H(key, text) mod n_batches``."""
    if not isinstance(text, str):
        raise ParameterError("text", text, "must be a string")
    return hash_batch(text, n_batches, salt=key)


def batch_layout(n_batches: int, n_labels: int | None = None) -> list[tuple[int | None, int]]:
    """The PUBLIC layout: every ``(label, batch number)``, in order (label ``None`` without labels)."""
    n_batches = check_int("n_batches", n_batches, minimum=1)
    if n_labels is None:
        return [(None, b) for b in range(n_batches)]
    n_labels = check_int("n_labels", n_labels, minimum=1)
    return [(label, b) for label in range(n_labels) for b in range(n_batches)]


def batch_name(label: int | None, number: int) -> str:
    """``b3`` without labels, ``l1-b3`` with label 1."""
    return f"b{number}" if label is None else f"l{label}-b{number}"


def assign_batches(texts: Sequence[str], n_batches: int, labels: Sequence[int] | None = None,
                   key: str = "", n_labels: int | None = None) -> list[Batch]:
    """Partition prompt indices into the batches of the public layout, by hash (per label with ``labels``).

    Returns EVERY batch of :func:`batch_layout` (``n_batches`` per label of the
    public label set ``range(n_labels)``), empty ones included, sorted by
    (label, batch number); every index appears in exactly one batch. ``n_labels``
    is required with ``labels`` (the label set is public; the labels present in
    the data are not).
    """
    if isinstance(texts, str):
        raise ParameterError("texts", texts, "must be a sequence of strings, not one string")
    n_batches = check_int("n_batches", n_batches, minimum=1)
    if labels is not None:
        if len(labels) != len(texts):
            raise ParameterError("labels", f"<{len(labels)} labels>", f"must have one label per text ({len(texts)})")
        if n_labels is None:
            raise ParameterError("n_labels", n_labels, "is needed with labels: the size of the PUBLIC label set")
        n_labels = check_int("n_labels", n_labels, minimum=1)
        bad = [int(x) for x in labels if not 0 <= int(x) < n_labels]
        if bad:
            raise ParameterError("labels", f"<label {bad[0]}>", f"must lie in the public label set 0..{n_labels - 1}")
    else:
        n_labels = None
    groups: dict[tuple, list[int]] = {cell: [] for cell in batch_layout(n_batches, n_labels)}
    for i, text in enumerate(texts):
        label = None if labels is None else int(labels[i])
        groups[(label, batch_index(text, n_batches, key))].append(i)
    return [Batch(batch_name(label, b), label, b, tuple(idx)) for (label, b), idx in groups.items()]
