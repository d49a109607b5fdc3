"""Sequential and parallel composition, and batch assignment that allows the latter.

Sequential: mechanisms run on the same data add their zCDP costs (and, by
basic composition, their pure epsilons).
Parallel: a mechanism run separately on disjoint batches costs as much as one
run, provided each record's batch is a function of that record alone (adding
or removing a record then changes exactly one batch and leaves the others
untouched) {cite}`amin2024private` (Lemma 2).  Assigning batches by shuffling
or by sorting the whole dataset breaks this: one record can move many others.
"""

from __future__ import annotations

import hashlib
import math
from typing import Callable, Iterable, Sequence

import numpy as np

from dpkit.validate import ParameterError, check_int, check_positive


def sequential_rho(rhos: Iterable[float]) -> float:
    """zCDP cost of running every mechanism on the same data: the (exactly rounded) sum."""
    return float(math.fsum(check_positive(f"rhos[{i}]", r, allow_zero=True) for i, r in enumerate(rhos)))


def parallel_rho(rhos: Iterable[float]) -> float:
    """zCDP cost of mechanisms run on disjoint record-determined batches: the maximum."""
    values = [check_positive(f"rhos[{i}]", r, allow_zero=True) for i, r in enumerate(rhos)]
    return float(max(values)) if values else 0.0


def sequential_epsilon(epsilons: Iterable[float]) -> float:
    """Pure epsilon of running epsilon_i-DP mechanisms on the same data (basic composition): the sum."""
    return float(math.fsum(check_positive(f"epsilons[{i}]", e, allow_zero=True) for i, e in enumerate(epsilons)))


def parallel_epsilon(epsilons: Iterable[float]) -> float:
    """Pure epsilon of mechanisms run on disjoint record-determined batches: the maximum."""
    values = [check_positive(f"epsilons[{i}]", e, allow_zero=True) for i, e in enumerate(epsilons)]
    return float(max(values)) if values else 0.0


def hash_batch(record: str | bytes, n_batches: int, salt: str = "") -> int:
    """Batch index in [0, n_batches) computed from the record alone (BLAKE2b, stable across runs)."""
    n_batches = check_int("n_batches", n_batches, minimum=1)
    if isinstance(record, str):
        record = record.encode("utf-8")
    if not isinstance(record, bytes):
        raise ParameterError("record", record, "must be str or bytes (hash a canonical serialisation)")
    if not isinstance(salt, str):
        raise ParameterError("salt", salt, "must be a string")
    digest = hashlib.blake2b(record, digest_size=8, key=salt.encode("utf-8")[:64]).digest()
    return int.from_bytes(digest, "big") % n_batches


def hash_partition(records: Sequence[str | bytes], n_batches: int, salt: str = "",
                   key: Callable[[str | bytes], str | bytes] | None = None) -> np.ndarray:
    """Batch index of every record, each from ``hash_batch(key(record))`` alone.

    ``key`` may map a record to the part that decides its batch (e.g. its label
    joined with its text); it must look only at that one record.
    """
    n_batches = check_int("n_batches", n_batches, minimum=1)
    if key is not None and not callable(key):
        raise ParameterError("key", key, "must be a callable applied to one record")
    if isinstance(records, (str, bytes)):
        raise ParameterError("records", records, "must be a sequence of records, not a single string")
    return np.array([hash_batch(key(r) if key else r, n_batches, salt) for r in records], dtype=np.int64)
