"""``records.jsonl``: one JSON line per finished item, append-only, each line chained to the one before.

A line is ``{"key": ..., "record": ..., "chain": c}`` where
``c_i = SHA-256(c_{i-1} + "\\n" + canonical JSON of {"key", "record"})`` and
``c_0`` is 64 zeros. The manifest keeps the number of records and the chain
value of the last one it saw, so a changed character anywhere, a reordered,
removed or duplicated line, and a file cut below the manifest's count are all
caught (:class:`~dpkit.runs.errors.RunCorruptError` naming the file). A torn
last line *beyond* the manifest's count is what an interrupted append leaves:
it is cut off when the run is reopened (with a warning) and that item is
generated again.
"""

from __future__ import annotations

import hashlib
import json
import os
import warnings
from pathlib import Path
from typing import Any, Mapping

from dpkit.runs.codec import dumps
from dpkit.runs.errors import RunCorruptError
from dpkit.validate import ParameterError

GENESIS = "0" * 64
NAME = "records.jsonl"


def chain_step(previous: str, key: str, record: Any) -> str:
    """The chain value of a line holding ``key`` and the encoded ``record`` after ``previous``."""
    body = dumps({"key": key, "record": record})
    return hashlib.sha256(f"{previous}\n{body}".encode("utf-8", "surrogatepass")).hexdigest()


def read_records(path: Path, manifest: Mapping[str, Any] | None) -> tuple[list[tuple[str, Any]], str, int]:
    """Parse and check ``path``: ``(entries, chain head, bytes of a torn tail)``; reads only.

    ``manifest``: the run's manifest (its ``records`` count and ``records_chain``),
    or None for a new run. Raises RunCorruptError naming the file and the line.
    """
    data = path.read_bytes() if path.exists() else b""
    entries: list[tuple[str, Any]] = []
    seen: set[str] = set()
    chain, good, position = GENESIS, 0, 0
    expected = int((manifest or {}).get("records") or 0)
    expected_chain = (manifest or {}).get("records_chain")
    while position < len(data):
        end = data.find(b"\n", position)
        if end < 0:
            break  # torn last line: no newline was written
        line_number = len(entries) + 1
        try:
            entry = json.loads(data[position:end].decode("utf-8"))
            key, record, stored = entry["key"], entry["record"], entry["chain"]
            if not isinstance(key, str) or set(entry) != {"key", "record", "chain"}:
                raise ValueError
        except (ValueError, KeyError, TypeError, UnicodeDecodeError):
            if end + 1 >= len(data) and len(entries) >= expected:
                break  # a torn last line that happens to end in a newline byte
            raise RunCorruptError(NAME, f"line {line_number}", "is not a valid record line (edited, truncated "
                                  "or damaged); the run cannot be resumed safely") from None
        chain = chain_step(chain, key, record)
        if stored != chain:
            raise RunCorruptError(NAME, f"line {line_number}", "does not match the records' hash chain: a record "
                                  "was edited, removed or reordered; the run cannot be resumed safely")
        if key in seen:
            raise RunCorruptError(NAME, f"line {line_number}", "repeats a key; the file was edited by hand")
        seen.add(key)
        entries.append((key, record))
        if len(entries) == expected and expected_chain is not None and chain != expected_chain:
            raise RunCorruptError(NAME, f"line {line_number}", "does not match the chain value in manifest.json")
        position = good = end + 1
    if len(entries) < expected:
        raise RunCorruptError(NAME, f"{len(entries)} records", f"holds fewer records than the manifest's "
                              f"{expected}: the file was truncated or lines were deleted")
    return entries, chain, len(data) - good


class RecordLog:
    """The append-only, hash-chained record file of a run (see the module docstring)."""

    def __init__(self, path: Path, *, fsync: bool = True):
        self.path = path
        self.fsync = fsync
        self.encoded: dict[str, Any] = {}
        self.head = GENESIS
        self.torn_bytes = 0

    def load(self, manifest: Mapping[str, Any] | None) -> None:
        """Read and check the file; cut a torn tail (an interrupted append) with a warning."""
        if not self.path.exists():
            self.path.touch()
            return
        entries, self.head, self.torn_bytes = read_records(self.path, manifest)
        self.encoded = dict(entries)
        if self.torn_bytes:
            good = self.path.stat().st_size - self.torn_bytes
            warnings.warn(f"{self.path}: cut {self.torn_bytes} bytes of a torn last record "
                          f"(an interrupted write); that item will be generated again", stacklevel=4)
            with open(self.path, "r+b") as handle:
                handle.truncate(good)

    def append(self, key: str, payload: Any) -> None:
        """Write one encoded record durably (flushed, and fsynced unless ``fsync`` is off); each key once."""
        if key in self.encoded:
            raise ParameterError("key", key, "already has a record in this run (records are written once)")
        chain = chain_step(self.head, key, payload)
        line = dumps({"key": key, "record": payload, "chain": chain}) + "\n"
        with open(self.path, "a", encoding="utf-8") as handle:
            size = handle.tell()
            try:
                handle.write(line)
                handle.flush()
                if self.fsync:
                    os.fsync(handle.fileno())
            except OSError:
                # a full disk or a file-size limit: leave no partial line behind, keep what was written
                handle.truncate(size)
                raise
        self.encoded[key] = payload
        self.head = chain
