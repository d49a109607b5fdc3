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

``n_batches`` must be fixed from public information (e.g. a public, rounded
dataset size over the expected batch size ``s``): :func:`n_batches_for` does
that arithmetic. Actual batch sizes then vary around ``s``; the guarantee does
not depend on them, because the decoder divides by ``s`` and never by the
actual size.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from dpkit.privacy import hash_batch
from dpkit.validate import ParameterError, check_int, check_positive


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
    s = check_positive("expected_batch_size", expected_batch_size)
    if s < 1:
        raise ParameterError("expected_batch_size", expected_batch_size, "must be >= 1")
    return max(1, round(public_size / s))


def batch_index(text: str, n_batches: int, key: str = "") -> int:
    """The batch of one prompt: ``H(key, text) mod n_batches``."""
    if not isinstance(text, str):
        raise ParameterError("text", text, "must be a string")
    return hash_batch(text, n_batches, salt=key)


def assign_batches(texts: Sequence[str], n_batches: int, labels: Sequence[int] | None = None,
                   key: str = "") -> list[Batch]:
    """Partition prompt indices into disjoint batches by hash (per label when ``labels`` given).

    Returns the non-empty batches, sorted by (label, batch number); every index
    appears in exactly one batch. With labels, ``n_batches`` is per label.
    """
    if isinstance(texts, str):
        raise ParameterError("texts", texts, "must be a sequence of strings, not one string")
    n_batches = check_int("n_batches", n_batches, minimum=1)
    if labels is not None and len(labels) != len(texts):
        raise ParameterError("labels", f"<{len(labels)} labels>", f"must have one label per text ({len(texts)})")
    groups: dict[tuple, list[int]] = {}
    for i, text in enumerate(texts):
        label = None if labels is None else int(labels[i])
        groups.setdefault((label, batch_index(text, n_batches, key)), []).append(i)
    out = []
    for (label, b) in sorted(groups, key=lambda k: (-1 if k[0] is None else k[0], k[1])):
        name = f"b{b}" if label is None else f"l{label}-b{b}"
        out.append(Batch(name, label, b, tuple(groups[(label, b)])))
    return out
